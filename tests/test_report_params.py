"""Report params: the shipped files, validation with clear errors, the grid; the
committed notebooks are clean (no outputs) and carry their parameters and metrics cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demonoise.core.errors import ParameterError
from demonoise.report.batch import INDICATORS, ReportSpec, expand, load_params, parse_params

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params"
NOTEBOOKS = ROOT / "notebooks"


def test_shipped_params():
    p = load_params(PARAMS / "default.yaml")
    assert [(s.dataset, s.countries) for s in p.selections] == [
        ("ess-2023", ("FI", "FR", "LU", "MT")),
        ("be-2023", ("BE",)),
    ]
    assert p.V == (1.0, 5.0) and p.indicators == INDICATORS and p.granularity == "single" and p.mc >= 500
    grid = expand(p)
    assert len(grid) == p.n_reports == 10
    assert grid[0] == ReportSpec("ess-2023", "FI", 1.0) and grid[-1] == ReportSpec("be-2023", "BE", 5.0)
    assert grid[0].html(Path("out")) == Path("out/reports/ess-2023/FI-V1.html")
    assert grid[-1].pdf(Path("out")) == Path("out/reports/be-2023/BE-V5.pdf")

    every = load_params(PARAMS / "ess-2023.yaml")
    meta = json.loads((ROOT / "lib/demonoise/data/datasets/ess-2023.json").read_text())
    assert every.selections[0].countries == tuple(meta["countries"]) and len(meta["countries"]) == 36
    assert every.n_reports == 72


GOOD = {"datasets": {"ess-2023": ["LU"]}, "V": [1, 5]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"datasets": {"ess-2023": ["XX"]}}, "unknown country XX for dataset 'ess-2023'; it has BE, BG"),
        ({"datasets": {"ess-2023": ["LU", "ZZ", "QQ"]}}, "unknown countries ZZ, QQ"),
        ({"datasets": {"nope-2023": ["LU"]}}, "unknown dataset 'nope-2023'; available: be-2023, ess-2023"),
        ({"datasets": {"eurostat-2023": ["LU"]}}, "demonoise fetch --year YEAR"),
        ({"datasets": {"be-2023": ["LU"]}}, "unknown country LU for dataset 'be-2023'; it has BE"),
        ({"datasets": {"ess-2023": ["LU", "LU"]}}, "LU listed twice"),
        ({"datasets": []}, "'datasets' must map each dataset"),
        ({"V": [0]}, "V is a variance and must be a finite number > 0, got 0"),
        ({"V": [1, -5]}, "got -5"),
        ({"V": ["abc"]}, "V must be numbers, got 'abc'"),
        ({"V": [float("inf")]}, "finite number > 0"),  # YAML .inf
        ({"V": []}, "V is empty"),
        ({"V": [1, 1.0]}, "V lists a value twice"),
        ({"indicators": ["tfr", "gdp"]}, "unknown indicator 'gdp'; choose from asfr, tfr, asmr, life_expectancy"),
        ({"granularity": "weekly"}, "unknown granularity 'weekly'"),
        ({"noise": "ptable"}, "unknown noise model 'ptable'"),
        ({"mc": 1}, "mc (Monte Carlo replicates) must be 0 or an integer >= 2"),
        ({"mc": -3}, "got -3"),
        ({"pdf": "yes"}, "pdf must be true or false"),
        ({"colour": "blue"}, "unknown key(s) colour"),
    ],
)
def test_invalid_params_raise_clear_errors(change, message):
    data = {**GOOD, **change}
    with pytest.raises(ParameterError) as e:
        parse_params(data, source="p.yaml")
    assert message in str(e.value)
    assert str(e.value).startswith("p.yaml: ")


def test_params_defaults_aliases_and_order():
    p = parse_params({"datasets": {"ess-2023": "all"}, "V": 3, "indicators": ["e", "asfr", "TFR"]})
    assert len(p.selections[0].countries) == 36 and p.V == (3.0,)
    assert p.indicators == ("asfr", "tfr", "life_expectancy")  # report order, alias e
    assert (p.mc, p.noise, p.granularity, p.pdf) == (2000, "generic", "single", True)
    with pytest.raises(ParameterError, match="'V' is required"):
        parse_params({"datasets": {"ess-2023": ["LU"]}})


def test_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets:\n  ess-2023: [LU\nV: [1]\n")
    with pytest.raises(ParameterError, match=r"bad.yaml: not valid YAML \(line 3"):
        load_params(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(ParameterError, match="empty"):
        load_params(empty)
    with pytest.raises(ParameterError, match="cannot read params file"):
        load_params(tmp_path / "missing.yaml")
    notmap = tmp_path / "list.yaml"
    notmap.write_text("- 1\n- 2\n")
    with pytest.raises(ParameterError, match="must be a mapping"):
        load_params(notmap)


@pytest.mark.parametrize("name", ["cover", *INDICATORS])
def test_committed_notebooks_are_clean(name):
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c.get("outputs") == [] and c.get("execution_count") is None for c in code), "strip the outputs"
    tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    for p in ("country", "V", "dataset", "results_path", "granularity", "noise", "mc", "data_label"):
        assert f"\n{p} = " in "\n" + src
    # notebooks stay thin: they call the library, they do not compute
    body = "".join("".join(c["source"]) for c in code)
    for forbidden in ("import numpy", "np.", "groupby", "sqrt("):
        assert forbidden not in body.replace("sqrt(V)", ""), forbidden
    metrics = [c for c in code if "metrics" in c["metadata"].get("tags", [])]
    if name in ("cover", "tfr", "life_expectancy"):
        assert len(metrics) == 1 and "display_metrics" in "".join(metrics[0]["source"])


def test_no_stray_notebooks():
    # the report sections, the Europe overview and the two extras (what-if, teaching)
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(
        ["cover", *INDICATORS, "overview", "teaching", "whatif"]
    )


def test_overview_and_extras_params():
    p = load_params(PARAMS / "ess-2023.yaml")
    assert dict(p.overview)["dataset"] == "ess-2023" and dict(p.overview)["mc"] == 0
    assert [name for name, _ in p.extras] == ["teaching"]
    q = parse_params(
        {**GOOD, "overview": {"dataset": "be-2023", "mc": 200}, "extras": {"whatif": {"region": "BE34", "V": [1, 3]}}}
    )
    assert dict(q.overview) == {"dataset": "be-2023", "mc": 200}
    assert q.extras == (("whatif", (("V", (1, 3)), ("region", "BE34"))),)
    assert parse_params(GOOD).overview == () and parse_params(GOOD).extras == ()
    for bad, msg in [
        ({"overview": {"dataset": "nope"}}, "overview: unknown dataset 'nope'"),
        ({"overview": {"colour": 1}}, "overview: unknown key"),
        ({"overview": {"mc": 1}}, "overview: mc must be"),
        ({"overview": "yes"}, "overview must be"),
        ({"overview": {"countries": ["ZZ"]}}, "overview: unknown country ZZ"),
        ({"overview": {"sex": "X"}}, "overview: sex must be T, F or M"),
        ({"extras": ["lecture"]}, "unknown extra notebook 'lecture'"),
        ({"extras": {"whatif": 3}}, "parameters of whatif must be a mapping"),
    ]:
        with pytest.raises(ParameterError, match=msg):
            parse_params({**GOOD, **bad})
