"""A deliberately broken notebook is isolated and reported; without Pango the batch writes
HTML only and says why; the CLI exits non-zero on a failed batch and 2 on bad params."""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from demonoise.cli import main
from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import Report, run_reports
from demonoise.runtime.locate import ENV_VARS, find_dir

pytestmark = pytest.mark.slow
NOTEBOOKS_ENV = ENV_VARS["notebooks"]


@pytest.fixture(scope="module")
def broken_notebooks(tmp_path_factory):
    """The real notebooks, with a cell in asmr.ipynb that fails under V = 5 only."""
    d = tmp_path_factory.mktemp("notebooks")
    for p in find_dir("notebooks", ("summary.ipynb",)).glob("*.ipynb"):
        shutil.copy(p, d / p.name)
    nb = nbformat.read(d / "asmr.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "summary.load_results" in c.source) + 1
    nb.cells.insert(at, new_code_cell('if setting.get("V") == 5:\n    raise ValueError("deliberate failure at V = 5")'))
    nb.cells[at]["id"] = "deliberate-failure"
    nbformat.write(nb, d / "asmr.ipynb")
    return d


GOOD = {"datasets": {"ess-2023": ["MT", "LU"]}, "indicators": ["asmr"], "mc": 0, "pdf": False}


@pytest.fixture(scope="module")
def batch(broken_notebooks, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    params = parse_params({**GOOD, "noise": [{"V": 1}, {"V": 5}]}, source="test")
    rep = run_reports(params, out, workers=2, progress=False, log=None, notebooks_dir=broken_notebooks)
    return {"out": out, "rep": rep, "params": params}


def test_a_broken_notebook_is_isolated_and_reported(batch):
    rep, out = batch["rep"], batch["out"]
    assert not rep.ok
    mt, lu = rep.outcomes[Report("ess-2023", "MT")], rep.outcomes[Report("ess-2023", "LU")]
    assert mt.status == "failed" and lu.status == "failed"  # one report per country: V = 5 is part of it
    assert "ess-2023/MT/asmr V = 5: ValueError: deliberate failure at V = 5" in mt.error
    assert "asmr V = 1" not in mt.error  # the V = 1 run itself was fine
    assert mt.html is None and not Report("ess-2023", "MT").html(out).exists()
    kept = Report("ess-2023", "MT").build_dir(out) / "asmr-V5.failed.ipynb"
    assert kept.is_file() and f"kept at {kept}" in mt.error
    assert (Report("ess-2023", "MT").build_dir(out) / "asmr-V1.ipynb").is_file()
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "2 reports: 0 ok, 0 up to date, 2 failed" in index
    assert 'class="dn-row-failed"' in index and "deliberate failure at V = 5" in index
    assert "MT.html" not in index


def test_without_the_pdf_engine_the_batch_writes_html_and_says_why(batch, broken_notebooks, monkeypatch):
    import demonoise.report.document.exporters as exporter

    reason = "no PDF: the typst package is not installed (test); pip install typst"
    monkeypatch.setattr(exporter, "pdf_engine_problem", lambda: reason)
    params = parse_params({**GOOD, "noise": [{"V": 1}], "pdf": True}, source="test")
    rep = run_reports(params, batch["out"], workers=1, progress=False, log=None, notebooks_dir=broken_notebooks)
    o = rep.outcomes[Report("ess-2023", "MT")]
    assert rep.ok and o.html.is_file() and o.pdf is None and o.pdf_error == reason
    assert reason in rep.notes
    index = (batch["out"] / "index.html").read_text(encoding="utf-8")
    assert "the typst package is not installed (test)" in index


def test_cli_exit_status(batch, broken_notebooks, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(NOTEBOOKS_ENV, str(broken_notebooks))
    params = tmp_path / "p.yaml"
    params.write_text(json.dumps({**GOOD, "datasets": {"ess-2023": ["MT"]}, "noise": [{"V": 1}, {"V": 5}]}))
    code = main(["report", "--params", str(params), "--output", str(batch["out"]), "--no-pdf", "--workers", "1"])
    cap = capsys.readouterr()
    assert code == 1
    assert "FAILED MT (ess-2023): ess-2023/MT/asmr V = 5: ValueError: deliberate failure at V = 5" in cap.err
    assert f"index: {batch['out'] / 'index.html'}" in cap.out
    assert "1 reports: 0 rendered, 0 up to date, 1 failed; 0 PDFs" in cap.out

    old = tmp_path / "old.yaml"
    old.write_text(json.dumps({**GOOD, "datasets": {"ess-2023": ["LU"]}, "V": [1], "noise": "generic"}))
    monkeypatch.delenv(NOTEBOOKS_ENV)
    assert main(["report", "--params", str(old), "--output", str(tmp_path / "o"), "--no-pdf", "--workers", "1"]) == 0
    cap = capsys.readouterr()
    assert "the old form `V: [1]` with `noise: generic` is read as `noise: [{V: 1}]`" in cap.err + cap.out

    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({"datasets": {"ess-2023": ["XX"]}, "noise": [{"V": 1}]}))
    assert main(["report", "--params", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "unknown country XX for dataset 'ess-2023'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", "--params", str(bad), "--workers", "0"])
