# demonoise -- the two promised commands:
#   make report   set up and run the main job on the embedded default data
#   make test     set up and pass the tests
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
KERNEL := demonoise

.PHONY: setup test report datasets clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (demonoise)" >/dev/null
	@# compile the Monte Carlo kernels once for this machine (numba's cache), ~10 s, so that
	@# the first report does not pay it in every worker
	$(VENV)/bin/demonoise compute --dataset be-2023 --V 1 --ptable v01 --mc 20 --workers 1 --out $(VENV)/kernels-warm.parquet >/dev/null
	touch $(STAMP)


# The import contracts of the layers, lint and format, then the tests on 2 workers
# (--dist loadfile and the 300 s timeout come from pyproject.toml).
test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -n 2 -q

report: $(STAMP)
	$(VENV)/bin/demonoise report --params params/default.yaml
	@echo "Quality reports: $(abspath output/index.html)"

# Rebuild the embedded datasets from data-raw/ (byte for byte; add ARGS=--check to compare only)
datasets: $(STAMP)
	PYTHONPATH=lib $(PY) -m demonoise_build $(ARGS)

clean:
	rm -rf $(VENV) output/* build *.egg-info
	touch output/.gitkeep
