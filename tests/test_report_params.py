"""Report params: the shipped files, the schema's one-line errors (each naming the file and
the key), the old form with its notice, the YAML loader (duplicate keys, not UTF-8); the
committed notebooks are clean (no outputs) and carry their parameters cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demonoise.analysis.settings import NoiseSetting
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import A_EQUAL, A_SMALL
from demonoise.report.batch.params import REPORT_INDICATORS, load_params, parse_params
from demonoise.report.batch.stages import CHANGE, SUMMARY, Report, Run, plan

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params"
NOTEBOOKS = ROOT / "notebooks"
THREE = (NoiseSetting.generic(1.0), NoiseSetting.generic(5.0), NoiseSetting.from_ptable("v01"))


def test_shipped_params(tmp_path):
    p = load_params(PARAMS / "default.yaml")
    assert [(s.dataset, s.countries) for s in p.selections] == [
        ("ess-2023", ("FI", "FR", "LU", "MT")),
        ("be-2015-2023", ("BE",)),
    ]
    assert p.settings == THREE and p.notices == ()
    assert [s.label for s in p.settings] == ["V = 1", "V = 5", "p-table v01"]
    assert p.indicators == REPORT_INDICATORS and p.granularity == "single" and p.mc >= 500
    assert p.thresholds == (0.1, 0.414) and p.confidence == (0.95,) and p.recommend.indicator == "e0"
    assert p.publisher is None
    state = plan(p, tmp_path)
    assert state.reports[0] == Report("ess-2023", "FI") and state.reports[-1] == Report("be-2015-2023", "BE")
    assert state.reports[0].html(Path("out")) == Path("out/reports/ess-2023/FI.html")
    assert state.reports[-1].html(Path("out")) == Path("out/reports/be-2015-2023/BE.html")
    # per report: the summary once, each indicator notebook once per setting; Belgium's
    # dataset holds 2015-2023, so its report also runs the change chapter once
    assert len(state.runs) == 5 * (1 + 4 * 3) + 1
    assert state.runs[-1] == Run(Report("be-2015-2023", "BE"), CHANGE)
    assert state.runs[0] == Run(Report("ess-2023", "FI"), SUMMARY)
    assert state.runs[1].output(Path("o")) == Path("o/build/ess-2023/FI/asfr-V1.ipynb")
    assert state.runs[3].output(Path("o")) == Path("o/build/ess-2023/FI/asfr-ptable-v01.ipynb")

    every = load_params(PARAMS / "ess-2023.yaml")
    meta = json.loads((ROOT / "lib/demonoise/data/datasets/ess-2023.json").read_text())
    assert [s.countries for s in every.selections] == [tuple(meta["countries"])]
    assert every.settings == THREE


def test_plan_removes_the_old_per_V_layout(tmp_path):
    old = tmp_path / "reports" / "ess-2023"
    old.mkdir(parents=True)
    for name in ("LU-V1.html", "LU-V1.pdf", "LU-V5.html", "LU.html"):
        (old / name).write_text("x")
    state = plan(parse_params(GOOD), tmp_path)
    assert sorted(p.name for p in state.removed) == ["LU-V1.html", "LU-V1.pdf", "LU-V5.html"]
    assert sorted(p.name for p in old.iterdir()) == ["LU.html"]


GOOD = {"datasets": {"ess-2023": ["LU"]}, "noise": [{"V": 1}, {"V": 5}, {"ptable": "v01"}]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"datasets": {"ess-2023": ["XX"]}}, "datasets.ess-2023: unknown country XX for dataset 'ess-2023'; it has BE"),
        ({"datasets": {"ess-2023": ["LU", "ZZ", "QQ"]}}, "unknown countries ZZ, QQ"),
        (
            {"datasets": {"nope-2023": ["LU"]}},
            "datasets: unknown dataset 'nope-2023'; available: be-2015-2023, be-2023, ess-2023",
        ),
        ({"datasets": {"eurostat-2023": ["LU"]}}, "demonoise fetch --year YEAR"),
        ({"datasets": {"ess-2023": ["LU", "LU"]}}, "LU listed twice"),
        ({"datasets": []}, "datasets: map each dataset"),
        ({"noise": [{"ptable": "v99"}]}, "noise[0].ptable: unknown p-table 'v99'; embedded: v01, v03, v04"),
        ({"noise": [{"V": 1}, {"V": 0}]}, "noise[1].V: V is a variance and must be a finite number > 0, got 0"),
        ({"noise": [{"V": -5}]}, "got -5"),
        ({"noise": [{"V": "abc"}]}, "noise[0].V: V must be a number, got 'abc'"),
        ({"noise": [{"V": float("inf")}]}, "finite number > 0"),
        ({"noise": [{"V": 1, "ptable": "v01"}]}, "noise[0]: a setting is either {V: <variance>} or {ptable"),
        ({"noise": [{"W": 1}]}, "noise[0].W: unknown key"),
        ({"noise": []}, "noise: give at least one noise setting"),
        ({"noise": [{"V": 1}, {"V": 1.0}]}, "noise: setting V = 1 listed twice"),
        ({"thresholds": [0.1, 0]}, "thresholds: threshold 0 outside (0, 10]"),
        ({"thresholds": [11]}, "thresholds: threshold 11 outside (0, 10]"),
        ({"confidence": [0.95, 1.0]}, "confidence: confidence 1 outside (0, 1)"),
        ({"confidence": [0]}, "confidence: confidence 0 outside (0, 1)"),
        ({"recommend": {"indicator": "gdp"}}, "recommend.indicator: unknown indicator 'gdp'; choose from 'e0', 'e65'"),
        ({"recommend": {"indicator": "e0", "threshold": -1}}, "recommend.threshold: threshold -1 outside (0, 10]"),
        ({"publisher": {"organisation": "Statistics Nowhere"}}, "publisher.contact: required key missing"),
        ({"publisher": {"organisation": "S", "contact": "c", "colour": 1}}, "publisher.colour: unknown key"),
        ({"indicators": ["tfr", "gdp"]}, "indicators: unknown indicator 'gdp'; choose from asfr, tfr, asmr"),
        ({"granularity": "weekly"}, "granularity: unknown granularity 'weekly'"),
        ({"mc": 1}, "mc: Monte Carlo replicates must be 0 or an integer >= 2, got 1"),
        ({"mc": -3}, "got -3"),
        ({"pdf": "yes"}, "pdf: true or false"),
        ({"colour": "blue"}, "colour: unknown key"),
        ({"V": [1], "noise": "ptable"}, "the old form knows only noise: generic"),
    ],
)
def test_each_bad_entry_gives_a_one_line_error_naming_the_key(change, message):
    with pytest.raises(ParameterError) as e:
        parse_params({**GOOD, **change}, source="p.yaml")
    assert message in str(e.value)
    assert str(e.value).startswith("p.yaml: ") and "\n" not in str(e.value)


def test_the_old_form_is_two_generic_settings_with_a_notice():
    p = parse_params({"datasets": {"ess-2023": ["LU"]}, "V": [1, 5], "noise": "generic"}, source="old.yaml")
    assert p.settings == (NoiseSetting.generic(1.0), NoiseSetting.generic(5.0))
    (notice,) = p.notices
    assert "noise: [{V: 1}, {V: 5}]" in notice and "\n" not in notice
    assert parse_params({"datasets": {"ess-2023": ["LU"]}, "V": 3}).settings == (NoiseSetting.generic(3.0),)


def test_defaults_aliases_publisher_and_order():
    p = parse_params({"datasets": {"ess-2023": "all"}, "noise": [{"V": 3}], "indicators": ["e", "asfr", "TFR"]})
    assert len(p.selections[0].countries) == 36 and p.V == (3.0,) and p.ptables == ()
    assert p.indicators == ("asfr", "tfr", "life_expectancy")  # report order, alias e
    assert (p.mc, p.granularity, p.pdf) == (2000, "single", True)
    assert p.thresholds == (A_SMALL, A_EQUAL) and p.recommend.threshold == A_SMALL
    q = parse_params(
        {**GOOD, "publisher": {"organisation": "Statistics X", "contact": "m@x.org", "date": "2026-12-01"}}
    )
    assert (q.publisher.organisation, q.publisher.contact, q.publisher.date) == (
        "Statistics X",
        "m@x.org",
        "2026-12-01",
    )
    assert q.V == (1.0, 5.0) and q.ptables == ("v01",)
    with pytest.raises(ParameterError, match="noise: give at least one"):
        parse_params({"datasets": {"ess-2023": ["LU"]}})


def test_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets:\n  ess-2023: [LU\nnoise: [{V: 1}]\n")
    with pytest.raises(ParameterError, match=r"bad.yaml: not valid YAML \(line 3"):
        load_params(bad)
    twice = tmp_path / "twice.yaml"
    twice.write_text("datasets: {ess-2023: [LU]}\nnoise: [{V: 1}]\nmc: 0\nmc: 200\n")
    with pytest.raises(ParameterError, match=r"twice.yaml: key 'mc' given twice \(lines 3 and 4\)"):
        load_params(twice)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("title: Qualité\ndatasets: {ess-2023: [LU]}\nnoise: [{V: 1}]\n".encode("latin-1"))
    with pytest.raises(ParameterError) as e:
        load_params(latin)
    assert str(e.value).startswith(f"{latin}: not UTF-8") and "\n" not in str(e.value)
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


@pytest.mark.parametrize("name", [SUMMARY, *REPORT_INDICATORS])
def test_committed_notebooks_are_clean(name):
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c.get("outputs") == [] and c.get("execution_count") is None for c in code), "strip the outputs"
    tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    for p in ("country", "settings", "dataset", "results_path", "granularity", "mc", "data_label", "implications"):
        assert f"\n{p} = " in "\n" + src
    if name != SUMMARY:
        assert "\nsetting = " in "\n" + src
    # notebooks stay thin: they call the library, they do not compute
    body = "".join("".join(c["source"]) for c in code)
    for forbidden in ("import numpy", "np.", "groupby", "sqrt("):
        assert forbidden not in body, forbidden
    metrics = [c for c in code if "metrics" in c["metadata"].get("tags", [])]
    assert len(metrics) == (1 if name == SUMMARY else 0)


def test_no_stray_notebooks():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(
        [SUMMARY, *REPORT_INDICATORS, "overview", "teaching", "whatif", "change"]
    )


def test_overview_and_extras_params():
    p = load_params(PARAMS / "ess-2023.yaml")
    assert p.overview.dataset == "ess-2023" and p.overview.mc == 0
    assert [name for name, _ in p.extras] == ["teaching"]
    q = parse_params(
        {**GOOD, "overview": {"dataset": "be-2023", "mc": 200}, "extras": {"whatif": {"region": "BE34", "V": [1, 3]}}}
    )
    assert (q.overview.dataset, q.overview.mc) == ("be-2023", 200)
    assert q.extras == (("whatif", (("V", (1, 3)), ("region", "BE34"))),)
    assert parse_params(GOOD).overview is None and parse_params(GOOD).extras == ()
    for bad, msg in [
        ({"overview": {"colour": 1}}, "overview.colour: unknown key"),
        ({"overview": {"mc": 1}}, "overview.mc"),
        ({"overview": "yes"}, "overview: must be"),
        ({"overview": {"countries": ["ZZ"]}}, "overview.countries: unknown country ZZ"),
        ({"overview": {"sex": "X"}}, "overview.sex"),
        ({"extras": ["lecture"]}, "extras: unknown extra notebook 'lecture'"),
        ({"extras": {"whatif": 3}}, "extras.whatif: its parameters must be a mapping"),
    ]:
        with pytest.raises(ParameterError, match=msg.replace("(", r"\(")):
            parse_params({**GOOD, **bad})


def test_numbers_written_as_yaml_1_1_reads_them(tmp_path):
    """``1e3`` is text to YAML 1.1 (PyYAML): V, mc, seed and the overview's mc accept it as
    the number it is; a fraction for mc, or a word, is still refused naming the key."""
    f = tmp_path / "p.yaml"
    f.write_text(
        "datasets: {ess-2023: [LU]}\nnoise: [{V: 1e3}, {V: 2.5e-1}]\nmc: 1e3\nseed: 1e2\noverview: {mc: 2e2}\n"
    )
    p = load_params(f)
    assert p.V == (1000.0, 0.25) and p.mc == 1000 and p.seed == 100 and p.overview.mc == 200
    for bad, msg in [
        ({"mc": "1.5e0"}, "mc: Monte Carlo replicates must be an integer, got '1.5e0'"),
        ({"mc": "many"}, "mc: Monte Carlo replicates must be an integer, got 'many'"),
        ({"noise": [{"V": "1e300"}]}, "noise[0].V: V = 1e+300 is above the limit 10^12"),
        ({"noise": [{"V": 1e300}]}, "noise[0].V: V = 1e+300 is above the limit 10^12"),
        ({"noise": [{"V": "nan"}]}, "noise[0].V: V is a variance and must be a finite number > 0, got nan"),
    ]:
        with pytest.raises(ParameterError) as e:
            parse_params({**GOOD, **bad}, source="p.yaml")
        assert str(e.value) == f"p.yaml: {msg}" or str(e.value).startswith(f"p.yaml: {msg}"), str(e.value)


def test_a_ptable_file_is_read_with_the_params(tmp_path):
    """A p-table file that cannot be read -- a counts file, a malformed table -- fails when
    the params are validated, naming the key and the file; a valid one passes."""
    counts = ROOT / "templates" / "counts_template.csv"
    bad = tmp_path / "p.csv"
    bad.write_text("i,j,p\n0,0,banana\n")
    for path in (counts, bad):
        with pytest.raises(ParameterError) as e:
            parse_params({**GOOD, "noise": [{"V": 1}, {"ptable": str(path)}]}, source="p.yaml")
        assert str(e.value).startswith(f"p.yaml: noise[1].ptable: the p-table file {path} cannot be read: ")
        assert "\n" not in str(e.value)
    good = ROOT / "tests" / "data" / "ptables"
    table = next(p for p in sorted(good.iterdir()) if p.suffix in (".csv", ".gz"))
    assert parse_params({**GOOD, "noise": [{"ptable": str(table)}]}).ptables == (str(table.resolve()),)


def test_publisher_date_is_an_iso_date():
    pub = {"organisation": "S", "contact": "c"}
    assert parse_params({**GOOD, "publisher": {**pub, "date": "2026-02-28"}}).publisher.date == "2026-02-28"
    for bad in ("not-a-date", "2026-02-30", "31/12/2026"):
        with pytest.raises(ParameterError, match=r"publisher\.date: not a date: give it as YYYY-MM-DD"):
            parse_params({**GOOD, "publisher": {**pub, "date": bad}})


def test_keys_of_the_model_are_not_keys_of_the_file():
    for key in ("source", "notices", "selections", "settings"):
        with pytest.raises(ParameterError, match=rf"^{key}: unknown key$"):
            parse_params({**GOOD, key: "x"})
