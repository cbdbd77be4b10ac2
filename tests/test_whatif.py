"""What-if runs (demonoise.analysis.whatif), the what-if notebook run headless, its rendering, and
the `demonoise notebook` command.

Truths used: the scaling rule written out independently (exact integer arithmetic); the
homogeneity of every indicator in the counts (degree 0), which makes the first-order
Poisson variance scale by exactly 1/s and the noise variance by 1/s^2 for a whole-number
s; Var(m_x)/m_x^2 = 1/D_x for Poisson deaths without unknown ages; docs/design.md's
"5-year cells: noise variance of e0 about 5 times smaller".
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import nbformat
import numpy as np
import pandas as pd
import pytest

from chromium_helpers import dump_dom, page_requests
from demonoise.analysis.ptables import load_ptable
from demonoise.analysis.results import results_table
from demonoise.analysis.whatif import headline, scale_counts, sensitivity, what_if, what_if_change, what_if_settings
from demonoise.cli import _parameter_value, main
from demonoise.core.counts import AgeAxis, Counts, Provenance, TableProvenance
from demonoise.core.errors import DataError, ParameterError
from demonoise.io.datasets import load, load_panel
from demonoise.noise.models import GenericNoise, PTableNoise
from demonoise.report.document.assemble import read_metrics
from demonoise.uncertainty.propagation import linearise
from report_helpers import chromium, scan_html

NOTEBOOKS = __import__("pathlib").Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(scope="module")
def be():
    return load("be-2023")


KEY = ["noise_model", "ptable", "V", "region", "sex", "indicator", "age_group"]


def _merge(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    return a.merge(b, on=KEY, suffixes=("_1", "_s"), validate="one_to_one")


# ------------------------------------------------------------------ the scaling rule
def _tiny(values) -> Counts:
    ax = AgeAxis.single(last=1, open_=True, unknown=True)  # Y_LT1, Y1, Y_GE2, UNK
    arr = np.array(values, dtype=np.int64).reshape(1, 3, 4)
    prov = Provenance(
        TableProvenance("real", ("demo_r_d2jan",)), TableProvenance("real", ("demo_r_magec",)), label="tiny"
    )
    return Counts("tiny", 2023, ("XX01",), ax, arr, arr + 1, prov, deaths=arr)


def test_scale_rule_is_nearest_integer_halves_up():
    values = list(range(12))
    c = _tiny(values)
    for s in (0.25, 0.5, 1.5, 2.5, 3.0):
        got = scale_counts(c, s)
        fs = Fraction(s)
        want = [math.floor(fs * n + Fraction(1, 2)) for n in values]
        assert got.deaths.ravel().tolist() == want
        assert got.pop_start.ravel().tolist() == want
        assert got.pop_end.ravel().tolist() == [math.floor(fs * (n + 1) + Fraction(1, 2)) for n in values]
        assert "scaled by" in got.provenance.status_label and got.provenance.status_label.startswith("tiny")
    # halves go up: 0.25 * 2 = 0.5 -> 1, 0.5 * 1 = 0.5 -> 1, 0.25 * 1 = 0.25 -> 0
    assert scale_counts(c, 0.25).deaths.ravel()[:3].tolist() == [0, 0, 1]
    assert scale_counts(c, 1.0) is c


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x", None])
def test_bad_scale(bad, be):
    with pytest.raises(ParameterError, match="scale"):
        scale_counts(be, bad)


def test_scaled_births_and_unknown_ages(be):
    s = scale_counts(be, 3)
    assert np.array_equal(s.births, 3 * be.births)  # whole number: exact, UNK births included
    assert np.array_equal(s.deaths, 3 * be.deaths) and np.array_equal(s.pop_end, 3 * be.pop_end)


# ------------------------------------------------------------------ what_if
def test_scale_one_reproduces_the_plain_results(be):
    got = what_if(be, "BE34", V=[1, 5], ptable="v01")
    assert (got["scale"] == 1.0).all()
    lz = linearise(be.select(["BE34"]))

    want = results_table(lz, [GenericNoise(1), GenericNoise(5), PTableNoise(load_ptable("v01"))])
    pd.testing.assert_frame_equal(got.drop(columns="scale"), want)


def test_whole_number_scale_gives_the_exact_first_order_relations(be):
    s = 4
    base = what_if(be, "BE34", V=[1, 5])
    big = what_if(be, "BE34", scale=s, V=[1, 5])
    m = _merge(base, big)
    assert len(m) == len(base) > 1000
    ok = m["var_pois_1"] > 0
    np.testing.assert_allclose(m["value_s"], m["value_1"], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(m.loc[ok, "var_pois_s"], m.loc[ok, "var_pois_1"] / s, rtol=1e-9)
    np.testing.assert_allclose(m["var_noise_s"], m["var_noise_1"] / s**2, rtol=1e-9)
    # relative Poisson sd of e0 halves (1/sqrt(4)); relative noise sd falls to a quarter
    e0 = m[(m.indicator == "e") & (m.age_group == "Y_LT1")]
    np.testing.assert_allclose(e0["rel_pois_s"] / e0["rel_pois_1"], 0.5, rtol=1e-9)
    np.testing.assert_allclose(e0["rel_noise_s"] / e0["rel_noise_1"], 0.25, rtol=1e-9)
    # admixture from the ratio divided by s
    r = m.loc[ok, "var_noise_1"] / m.loc[ok, "var_pois_1"]
    np.testing.assert_allclose(m.loc[ok, "admixture_s"], np.sqrt(1 + r / s) - 1, rtol=1e-8, atol=1e-15)


def test_asmr_relative_poisson_variance_is_one_over_scaled_deaths(be):
    # be-2023 has no deaths or population of unknown age, so Var(m_x)/m_x^2 = Var(D_x)/D_x^2 = 1/D'_x
    assert be.deaths[:, :, -1].sum() == 0 and be.pop_start[:, :, -1].sum() == 0
    s = 2.5
    base = what_if(be, "BE34", V=[1], indicators=("asmr",))
    sc = what_if(be, "BE34", scale=s, V=[1], indicators=("asmr",))
    m = _merge(base, sc)
    m = m[m["events_1"] > 0]
    D1 = m["events_1"].to_numpy()
    Ds = np.array([math.floor(Fraction(s) * int(d) + Fraction(1, 2)) for d in D1])
    np.testing.assert_array_equal(m["events_s"], Ds)
    np.testing.assert_allclose(m["rel_pois_s"] ** 2 * Ds, 1.0, rtol=1e-12)
    np.testing.assert_allclose(m["rel_pois_s"] ** 2 / m["rel_pois_1"] ** 2, D1 / Ds, rtol=1e-12)  # ~ 1/s up to rounding
    assert np.all(np.abs(D1 / Ds * s - 1) <= 1 / (2 * Ds) + 1e-12)


def test_non_integer_scale_is_close_to_the_exact_relations(be):
    base = headline(what_if(be, "BE34", V=[1], indicators=("e", "tfr"), e_ages=(0, 65)))
    sc = headline(what_if(be, "BE34", scale=2.5, V=[1], indicators=("e", "tfr"), e_ages=(0, 65)))
    # rounding the scaled counts moves the ratios by at most ~1 % here (infant deaths are small counts)
    np.testing.assert_allclose(sc["rel_pois"] / base["rel_pois"], 1 / np.sqrt(2.5), rtol=0.02)
    np.testing.assert_allclose(sc["rel_noise"] / base["rel_noise"], 1 / 2.5, rtol=0.01)


def test_granularity_and_ptable(be):
    single = headline(what_if(be, "BE34", V=[1], indicators=("e",), e_ages=(0,)))
    five = headline(what_if(be, "BE34", V=[1], granularity="5y", indicators=("e",), e_ages=(0,)))
    ratio = single["sd_noise"] / five["sd_noise"]
    assert ((ratio > 2.0) & (ratio < 2.5)).all(), ratio  # ~ sqrt(5): noise variance ~5 times smaller
    pt = what_if(be, "BE34", V=(), ptable="v01", indicators=("e",), e_ages=(0,))
    assert set(pt["noise_model"]) == {"ptable"} and set(pt["ptable"]) == {"ptable v01"}
    assert set(what_if_settings([], ["v01", "v04"])[i].ptable for i in range(2)) == {"ptable v01", "ptable v04"}
    with pytest.raises(ParameterError, match="no noise"):
        what_if(be, "BE34", V=[])
    with pytest.raises(ParameterError, match="granularity"):
        what_if(be, "BE34", granularity="10y")


def test_errors_name_region_and_scale(be):
    with pytest.raises(DataError, match="unknown region code") as e:
        what_if(be, "XX99")
    assert e.value.region == "XX99"
    with pytest.raises(DataError, match=r"after scaling the counts by 0\.001") as e:
        what_if(be, "BE34", scale=0.001)
    assert e.value.region == "BE34" and e.value.age == "Y_GE85"
    with pytest.raises(ParameterError, match="one region code"):
        what_if(be, ["BE34", "BE10"])


def test_sensitivity_grid(be):
    scales = (1, 2, 4)
    sens = sensitivity(be, "BE34", scales=scales, V=[1, 5])
    assert len(sens) == len(scales) * 2 * (3 + 3 + 1)  # V x (e0, e65 for F/M/T + TFR)
    # population grows with the scale (exactly, for whole numbers)
    e0 = sens[sens.indicator == "e0"]
    pop = e0[(e0.noise == "V = 1") & (e0.sex == "T")].set_index("scale")["population"]
    np.testing.assert_allclose(pop.loc[4] / pop.loc[1], 4.0)
    # relative noise sd ~ 1/s, Poisson ~ 1/sqrt(s) (exact for whole numbers)
    for _, g in sens.groupby(["noise", "sex", "indicator"]):
        g = g.set_index("scale")
        np.testing.assert_allclose(g["rel_noise"] * g.index, g["rel_noise"].loc[1], rtol=1e-9)
        np.testing.assert_allclose(g["rel_pois"] * np.sqrt(g.index), g["rel_pois"].loc[1], rtol=1e-9)
    # the same row as a direct what-if run
    direct = headline(what_if(be, "BE34", scale=2, V=[5], indicators=("e",), e_ages=(0,)))
    row = sens[(sens.scale == 2) & (sens.noise == "V = 5") & (sens.indicator == "e0") & (sens.sex == "F")].iloc[0]
    d = direct[direct.sex == "F"].iloc[0]
    assert row["admixture"] == pytest.approx(d["admixture"], rel=1e-12)
    sub = sensitivity(be, "BE34", scales=(1,), V=[1], sexes=("F",))
    assert set(sub["sex"]) == {"F"}
    with pytest.raises(ParameterError, match="sex"):
        sensitivity(be, "BE34", sexes=("X",))


def test_monte_carlo_agrees(be):
    df = what_if(be, "BE34", V=[5], indicators=("e", "tfr"), e_ages=(0, 65), mc=3000)
    h = headline(df)
    assert {"z_noise", "z_pois", "z_tot"} <= set(h.columns) and len(h) == 7
    z = h[["z_noise", "z_pois", "z_tot"]].abs().to_numpy()
    assert np.all(z < 4), h


# ------------------------------------------------------------------ the notebook
def test_notebooks_are_committed_without_outputs():
    for name in ("whatif", "teaching"):
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.outputs == [] and c.execution_count is None for c in code), name
        assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
        assert sum("metrics" in c.metadata.get("tags", []) for c in code) == 1
        assert nb.metadata["kernelspec"]["name"] == "demonoise"


PARAMS = {"region": "BE34", "scale": 4, "V": [1, 3], "ptable": "v01", "granularity": "5y", "mc": 400, "sex": "M"}
STEM = "whatif-BE34-V1-3-granularity5y-mc400-ptablev01-scale4-sexM"  # a scenario is named after its parameters


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from demonoise.report.batch.extras import extra_run, render_further

    out = tmp_path_factory.mktemp("whatif")
    res = render_further(extra_run("whatif", PARAMS, out), pdf=False)
    return res, out


@pytest.mark.slow
def test_headless_run_reports_the_library_figures(rendered, be):
    res, out = rendered
    nb = out / f"{STEM}.ipynb"
    assert nbformat.read(nb, 4).metadata.papermill.parameters == PARAMS and res.html.name == f"{STEM}.html"
    m = read_metrics(nb)
    assert m["settings"] == ["V = 1", "V = 3", "p-table v01"] and m["scale"] == 4 and m["granularity"] == "5y"
    direct = headline(
        what_if(be, "BE34", scale=4, V=[1, 3], ptable="v01", granularity="5y", indicators=("e",), e_ages=(0,))
    )
    for _, r in direct.iterrows():
        got = m["e0"][f"{r['sex']} {r['noise']}"]
        assert got["sd_noise"] == pytest.approx(r["sd_noise"], rel=1e-12)
        assert got["admixture"] == pytest.approx(r["admixture"], rel=1e-12)
    assert m["mc_max_abs_z"] < 5
    assert res.pdf is None and res.pdf_error is None
    # "the smallest change I can detect at V": the library's figures for the scaled region
    chg = what_if_change(load_panel("be-2015-2023"), "BE34", scale=4, V=[1, 3], ptable="v01", granularity="5y")
    chg = chg[chg.indicator == "e0"]
    assert len(m["change_e0"]) == len(chg) == 9
    for r in chg.itertuples():
        got = m["change_e0"][f"{r.sex} {r.noise}"]
        assert got["mdc_total"] == pytest.approx(r.mdc_total, rel=1e-12)
        assert got["mdc_poisson"] == pytest.approx(r.mdc_poisson, rel=1e-12)


@pytest.mark.slow
def test_rendered_html(rendered):
    res, _ = rendered
    text = res.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == [] and scan.scripts_with_src == []
    assert "MathJax" not in text and len(re.findall(r'<svg [^>]*class="dn-math', text)) >= 5  # maths typeset offline
    assert len(re.findall(r'<img [^>]*class="dn-chart"', text)) >= 6  # e_x, ASMR, ASFR, 2 sensitivity, MC
    assert "Data: population and deaths real (Eurostat)" in text  # the data label on the charts ...
    assert "every count scaled by 4" in text  # ... says the counts were scaled
    assert "pip install -e &#x27;.[interactive]&#x27;" in text or "pip install -e '.[interactive]'" in text
    assert "Interactive controls need ipywidgets" not in text  # the controls cell is tagged remove
    assert "import ipywidgets" not in text and "dr.setup_notebook" not in text  # no code
    assert "Largest |z|" in text
    assert "The smallest change I can detect" in text and "smallest change of e0 BE34 (men) can detect" in text


@pytest.mark.slow
@chromium
def test_rendered_html_in_chromium(rendered, tmp_path):
    res, _ = rendered
    net = tmp_path / "net.json"
    dom = dump_dom(res.html, net_log=net)
    assert page_requests(net) == []
    assert len(re.findall(r'<svg [^>]*class="dn-math', dom)) >= 5
    assert "$$" not in re.sub(r"<(svg|style)\b.*?</\1>", "", dom, flags=re.S)


# ------------------------------------------------------------------ command line
def test_parameter_values():
    assert _parameter_value("4") == 4 and _parameter_value("0.5") == 0.5
    assert _parameter_value("[1, 5]") == [1, 5] and _parameter_value("null") is None
    assert _parameter_value("BE34") == "BE34" and _parameter_value("5y") == "5y"


@pytest.mark.slow
def test_cli_notebook(rendered, tmp_path, capsys):
    assert main(["notebook", "nosuch", "--out", str(tmp_path)]) == 2
    assert "notebook 'nosuch' not found" in capsys.readouterr().err
    assert main(["notebook", "whatif", "-p", "1bad", "x", "--out", str(tmp_path)]) == 2
    # the parameters of the `rendered` fixture, typed on the command line: the executed
    # notebook is up to date (same notebook, parameters, library), so it is only re-rendered
    _, out = rendered
    before = nbformat.read(out / f"{STEM}.ipynb", as_version=4).metadata["demonoise"]["run"]["finished"]
    argv = ["notebook", "whatif", "--out", str(out), "--no-pdf"]
    for k, v in PARAMS.items():
        argv += ["-p", k, json.dumps(v) if not isinstance(v, str) else v]
    assert main(argv) == 0
    assert "whatif: " in capsys.readouterr().out
    assert nbformat.read(out / f"{STEM}.ipynb", as_version=4).metadata["demonoise"]["run"]["finished"] == before
    assert nbformat.read(out / f"{STEM}.ipynb", 4).metadata.papermill.parameters == PARAMS
    assert (out / f"{STEM}.html").is_file() and not (out / f"{STEM}.pdf").exists()
    # a failing run is a typed error naming the cell, not a report
    assert main(["notebook", "whatif", "-p", "region", "XX99", "--out", str(tmp_path / "bad"), "--no-pdf"]) == 2
    err = capsys.readouterr().err
    assert "DataError" in err and "XX99" in err and "cell" in err
    bad = tmp_path / "bad" / "whatif-XX99"
    assert not bad.with_suffix(".html").exists() and (tmp_path / "bad" / "whatif-XX99.failed.ipynb").exists()
    json.loads((tmp_path / "bad" / "whatif-XX99.failed.ipynb").read_text())
