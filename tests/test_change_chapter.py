"""The tables of the chapter "Change since the previous year" (demonoise.analysis.change:
change_verdicts, detectable_changes, level_series, change_chapter) and the chapter's
notebook run headless.

Truths used: the change table itself (the verdicts and detectable changes are read off
it, re-derived here with the normal quantiles written out); the single-year analysis of
each year (demonoise.uncertainty.propagation.linearise + results_table, a code path that
knows nothing of panels or windows) for every point of the time series; the change
table's later and earlier window for the last two years; docs/design.md's measured BE34
figures (MDC of e0 1.00 -> 1.44 years at V = 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from demonoise.analysis.change import (
    VERDICTS,
    change_chapter,
    change_points,
    change_table,
    change_verdicts,
    data_words,
    detectable_changes,
    detectable_points,
    level_series,
    series_frame,
)
from demonoise.analysis.compute import noise_settings
from demonoise.analysis.results import results_table
from demonoise.core.errors import ParameterError
from demonoise.io.datasets import load, load_panel
from demonoise.uncertainty.propagation import linearise

Z975 = 1.959963984540054  # Phi^-1(0.975)
Z80 = 0.8416212335729143  # Phi^-1(0.80)


@pytest.fixture(scope="module")
def be():
    return load_panel("be-2015-2023")


@pytest.fixture(scope="module")
def settings():
    return noise_settings([1, 5], ptables=["v01"])


@pytest.fixture(scope="module")
def table(be, settings):
    return change_table(be, settings, year_from=2022, year_to=2023, indicators=("e", "tfr"), e_ages=[0, 65])


KEY = ["region", "sex", "setting"]


def test_verdicts_are_read_off_the_change_table(table):
    v = change_verdicts(table)
    assert set(v["headline"]) == {"e0", "e65", "TFR"} and set(v["verdict"]) <= set(VERDICTS)
    assert len(v) == 12 * (3 + 3 + 1) * 3  # regions x (e0, e65 by 3 sexes; TFR women) x settings
    e0 = table[(table.indicator == "e") & (table.age == 0)]
    m = v[v.headline == "e0"].merge(e0, on=KEY, suffixes=("", "_t"), validate="one_to_one")
    for c in ("change", "sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total"):
        np.testing.assert_array_equal(m[c].to_numpy(), m[f"{c}_t"].to_numpy())
    # the flags, from the normal quantile written out
    np.testing.assert_array_equal(v["significant_poisson"], np.abs(v["z_poisson"]) > Z975)
    np.testing.assert_array_equal(v["significant_total"], np.abs(v["z_total"]) > Z975)
    assert v["z_crit"].iloc[0] == pytest.approx(Z975, rel=1e-12)
    # noise only widens: a change not significant without noise never is with it
    assert (np.abs(v["z_total"]) <= np.abs(v["z_poisson"]) + 1e-12).all()
    assert not (v["significant_total"] & ~v["significant_poisson"]).any()
    robust = v["verdict"] == "robust"
    np.testing.assert_array_equal(robust, v["significant_total"])
    np.testing.assert_array_equal(v["verdict"] == "lost", v["significant_poisson"] & ~v["significant_total"])
    # measured (docs/design.md): BE34's +0.54 y is not significant, Brussels' is at every setting
    t = v[(v.headline == "e0") & (v.sex == "T")].set_index(["region", "setting"])
    assert (t.loc["BE34", "verdict"] == "not significant").all() and (t.loc["BE10", "verdict"] == "robust").all()
    # a change significant without noise that V = 5 makes insignificant exists in this country
    assert (t.xs("V=5", level="setting")["verdict"] == "lost").any()


def test_verdicts_at_another_alpha_and_errors(table):
    v10 = change_verdicts(table, alpha=0.10)
    np.testing.assert_array_equal(v10["significant_total"], np.abs(v10["z_total"]) > 1.6448536269514722)
    with pytest.raises(ParameterError, match="alpha"):
        change_verdicts(table, alpha=1.5)
    with pytest.raises(ParameterError, match="unknown headline indicator 'e1'"):
        change_verdicts(table, headlines=("e1",))
    both = pd.concat([table, table.assign(pool=3)])
    with pytest.raises(ParameterError, match="several poolings"):
        change_verdicts(both)


def test_detectable_change_is_the_factor_times_the_sd(table):
    d = detectable_changes(table)
    factor = Z975 + Z80
    np.testing.assert_allclose(d["mdc_total"], factor * d["sd_total"], rtol=1e-12)
    np.testing.assert_allclose(d["mdc_poisson"], factor * d["sd_poisson"], rtol=1e-12)
    ok = d["sd_poisson"] > 0
    np.testing.assert_allclose(
        d.loc[ok, "mdc_ratio"], np.sqrt(1 + (d.loc[ok, "sd_noise"] / d.loc[ok, "sd_poisson"]) ** 2), rtol=1e-12
    )
    np.testing.assert_allclose(d["mdc_added"], d["mdc_total"] - d["mdc_poisson"], rtol=1e-12)
    # docs/design.md: at V = 5 the smallest change of e0 BE34 (T) can detect grows from 1.00 to 1.44 years
    r = d[(d.region == "BE34") & (d.sex == "T") & (d.headline == "e0") & (d.setting == "V=5")].iloc[0]
    assert round(r.mdc_poisson, 2) == 1.00 and round(r.mdc_total, 2) == 1.44


def test_level_series_is_the_single_year_analysis(be, settings):
    s = level_series(be, settings, headlines=("e0", "tfr"))
    assert sorted(s["year"].unique()) == list(range(2015, 2024))
    for year in (2015, 2020, 2023):
        lz = linearise(be.year(year), indicators=("e", "tfr"), e_ages=[0])
        direct = results_table(lz, settings)
        direct = direct[(direct.indicator == "tfr") | (direct.age == 0)]
        direct = direct.assign(headline=np.where(direct.indicator == "tfr", "TFR", "e0"))
        got = s[s.year == year]
        on = ["region", "sex", "headline", "noise_model", "V", "ptable"]
        m = got.merge(direct, on=on, suffixes=("", "_d"), validate="one_to_one")
        assert len(m) == len(got) == 12 * 4 * 3
        np.testing.assert_allclose(m["value"], m["value_d"], rtol=1e-12)
        np.testing.assert_allclose(m["sd_poisson"], m["sd_pois"], rtol=1e-10)
        np.testing.assert_allclose(m["sd_noise"], m["sd_noise_d"], rtol=1e-10)
        np.testing.assert_allclose(m["bias_noise"], m["bias_noise_d"], rtol=1e-9, atol=1e-15)
    # the bands
    np.testing.assert_allclose(s["hi_poisson"] - s["value"], Z975 * s["sd_poisson"], rtol=1e-12)
    np.testing.assert_allclose(s["hi_total"] - s["lo_total"], 2 * Z975 * s["sd_total"], rtol=1e-12)
    np.testing.assert_allclose((s["hi_total"] + s["lo_total"]) / 2, s["value"] + s["bias_noise"], rtol=1e-12)


def test_series_ends_are_the_change_tables_windows(be, settings, table):
    s = level_series(be, settings, years=[2022, 2023])
    t = table[(table.indicator == "tfr") | (table.age == 0)]
    t = t.assign(headline=np.where(t.indicator == "tfr", "TFR", "e0"))
    on = ["region", "sex", "headline", "setting"]
    to = s[s.year == 2023].merge(t, on=on, suffixes=("", "_c"), validate="one_to_one")
    np.testing.assert_allclose(to["value"], to["value_to"], rtol=1e-12)
    np.testing.assert_allclose(to["sd_total"], to["sd_total_to"], rtol=1e-12)
    np.testing.assert_allclose(to["sd_noise"], to["sd_noise_to"], rtol=1e-12)
    fr = s[s.year == 2022].merge(t, on=on, suffixes=("", "_c"), validate="one_to_one")
    np.testing.assert_allclose(fr["value"], fr["value_from"], rtol=1e-12)
    np.testing.assert_allclose(to["value"] - fr["value"], to["change"], rtol=1e-10)


def test_chapter(be, settings, table):
    ch = change_chapter(be, settings, country="BE")
    assert (ch.year_from, ch.year_to) == (2022, 2023)
    assert ch.mdc_factor == pytest.approx(Z975 + Z80, rel=1e-12) and ch.z_crit == pytest.approx(Z975, rel=1e-12)
    assert set(ch.verdicts["region"]) == set(be.codes) and set(ch.verdicts["nuts_level"]) == {0, 2}
    assert "real" in ch.data_status and "modelled" in ch.data_status
    m = ch.verdicts.merge(change_verdicts(table), on=[*KEY, "headline"], suffixes=("", "_t"), validate="one_to_one")
    np.testing.assert_allclose(m["z_total"], m["z_total_t"], rtol=1e-12)
    assert (m["verdict"] == m["verdict_t"]).all()
    assert set(ch.series["headline"]) == {"e0", "TFR"}
    s, rows = series_frame(ch, "TFR", "F"), ch.series[(ch.series["headline"] == "TFR") & (ch.series["sex"] == "F")]
    assert len(s) == len(rows) > 0 and (s.index == rows.index).all()
    assert set(s["setting"]) == {"V = 1", "V = 5", "p-table v01"}
    sub = change_chapter(be.select(["BE34", "BE10"]), settings[:1], year_from=2019, year_to=2020)
    assert set(sub.verdicts["region"]) == {"BE34", "BE10"} and set(sub.verdicts["year_from"]) == {2019}


def test_chapter_sentences_are_read_off_its_tables(be, settings):
    """The sentences count the regions whose change of e0 is significant without noise and
    name, per setting, those whose significance its noise takes away ("lost" in the
    verdicts); the smallest detectable change grows most in the NUTS 2 region of the largest
    ratio and least in that of the smallest."""
    ch = change_chapter(be, settings, country="BE")  # 2022 -> 2023
    v = ch.verdicts[(ch.verdicts["headline"] == "e0") & (ch.verdicts["sex"] == "T")]
    text = change_points(ch, "e0", "T")
    sig = v.drop_duplicates("region")["significant_poisson"].astype(bool).sum()
    assert f"in {sig} of 12 (the country and 11 NUTS 2 regions)" in text
    lost = v[v["verdict"] == "lost"]
    assert len(lost) > 0  # noise takes some significance away
    for r in lost.itertuples():
        assert f"{r.region} (z " in text
    assert text.count("stay significant") + text.count("stays significant") == len(settings)
    d = ch.detectable[(ch.detectable["headline"] == "e0") & (ch.detectable["sex"] == "T")]
    d = d[d["region"].str.len() == 4].sort_values("mdc_ratio")  # the NUTS 2 regions
    said = detectable_points(ch, "e0", "T")
    assert said.count("the most of the regions") == len(settings)
    top = [g.iloc[-1]["region"] for _, g in d.groupby("setting", sort=False)]
    assert all(f"of e0 {r} can detect grows" in said for r in top)


def test_data_words_name_each_table_with_its_status():
    """A headline's data line names the tables it rests on (e: population and deaths; TFR:
    population and births), by status, the modelled ones first, Eurostat for the real ones."""
    from types import SimpleNamespace

    ch = SimpleNamespace(table_status={"population": "real", "deaths": "modelled", "births": "real"})
    assert data_words(ch, "e0") == "Data: deaths modelled; population real (Eurostat)"
    assert data_words(ch, "TFR") == "Data: population and births real (Eurostat)"
    assert data_words(SimpleNamespace(table_status={}), "e65") == "Data: population and deaths ?"


def test_chapter_refuses_one_year(settings):
    with pytest.raises(ParameterError, match="holds one year .* two or more years"):
        change_chapter(load("be-2023"), settings)
    with pytest.raises(ParameterError, match="year 2030 is not in dataset"):
        level_series(load_panel("be-2015-2023"), settings, years=[2030])
    with pytest.raises(ParameterError, match="confidence"):
        level_series(load_panel("be-2015-2023"), settings, confidence=95)


# ------------------------------------------------------------------ the chapter's notebook
NB_PARAMS = {
    "dataset": "be-2015-2023",
    "country": "BE",
    "settings": [{"V": 5.0}],
    "year_from": 2019,
    "year_to": 2020,
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from demonoise.report.batch.extras import extra_run, render_further

    out = tmp_path_factory.mktemp("change")
    res = render_further(extra_run("change", NB_PARAMS, out, title="Change since the previous year"), pdf=True)
    return res, out


def _csv(res, stem: str) -> pd.DataFrame:
    path = next(p for p in res.files if p.name == f"{stem}.csv")
    return pd.read_csv(path)


def test_notebook_is_committed_without_outputs():
    import nbformat

    from demonoise.report.batch.execute import check_defined

    path = __import__("pathlib").Path(__file__).resolve().parents[1] / "notebooks" / "change.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
    assert sum("metrics" in c.metadata.get("tags", []) for c in code) == 1
    check_defined(path, NB_PARAMS)  # raises naming any it does not define
    body = "".join(c.source for c in code)  # thin: it calls the library, it does not compute
    for forbidden in ("import numpy", "np.", "groupby", "sqrt(", ".query(", "pivot"):
        assert forbidden not in body, forbidden


@pytest.mark.slow
def test_notebook_tables_are_the_change_table(rendered, be):
    from demonoise.report.batch.stages import check_shown
    from demonoise.report.document.assemble import read_metrics

    res, out = rendered
    nb = next(out.glob("change-*.ipynb"))
    check_shown(nb, dataset="be-2015-2023", country="BE", settings=["V = 5"])
    m = read_metrics(nb)
    assert (m["year_from"], m["year_to"]) == (2019, 2020) and m["settings"] == ["V = 5"]
    truth = change_table(be, noise_settings([5]), year_from=2019, year_to=2020, indicators=("e", "tfr"), e_ages=[0])
    for stem, ind, sex in (("change-e0-t", "e", "T"), ("change-e0-f", "e", "F"), ("change-tfr-f", "tfr", "F")):
        shown = _csv(res, stem)
        t = truth[(truth.indicator == ind) & (truth.sex == sex) & ((truth.age == 0) | (ind == "tfr"))]
        mm = shown.merge(t, on="region", suffixes=("", "_t"), validate="one_to_one")
        assert len(mm) == 12, stem
        for c in ("change", "sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total"):
            np.testing.assert_allclose(mm[c], mm[f"{c}_t"], rtol=1e-9, err_msg=f"{stem} {c}")
        sig = np.abs(mm["z_total_t"]) > Z975
        lost = (np.abs(mm["z_poisson_t"]) > Z975) & ~sig
        np.testing.assert_array_equal(mm["verdict"] == "robust", sig)
        np.testing.assert_array_equal(mm["verdict"] == "lost", lost)
    d = _csv(res, "detectable-e0-t")
    t = truth[(truth.indicator == "e") & (truth.sex == "T")]
    mm = d.merge(t, on="region", suffixes=("", "_t"), validate="one_to_one")
    np.testing.assert_allclose(mm["mdc_total"], (Z975 + Z80) * mm["sd_total"], rtol=1e-9)
    np.testing.assert_allclose(mm["mdc_poisson"], (Z975 + Z80) * mm["sd_poisson"], rtol=1e-9)
    # the time series drawn: its 2020 point is the change table's later year
    fig = _csv(res, "figure-1-1")
    pts = fig[(fig["kind"] == "value") & (fig["year"] == 2020)]
    mm = pts.merge(t, on="region", validate="one_to_one")
    np.testing.assert_allclose(mm["value"], mm["value_to"], rtol=1e-9)
    assert sorted(fig["year"].unique()) == list(range(2015, 2024))


@pytest.mark.slow
def test_rendered_chapter(rendered):
    import re

    from report_helpers import pdf_text, scan_html

    res, _ = rendered
    html = res.html.read_text(encoding="utf-8")
    scan = scan_html(html)
    assert scan.violations == [] and scan.scripts_with_src == []
    text = re.sub(r"<(svg|style|script)\b.*?</\1>", "", html, flags=re.S)
    text = re.sub(r'src="data:[^"]*"', "", text)
    assert not re.search(r"\d[eE][+-]?\d", text)  # no e-notation anywhere in the words and tables
    assert "Data: population and deaths real (Eurostat)" in text  # e0: real ...
    assert "Data: births modelled" in text  # ... the regional TFR modelled, on the same page
    assert "from 2019 to 2020" in text and "smallest change of e0" in text
    assert len(re.findall(r'<img [^>]*class="dn-chart"', html)) == 2
    assert res.pdf is not None and res.pages >= 3
    pdf = pdf_text(res.pdf)
    assert "Change since the previous year" in pdf and "Table 1.1" in pdf and "Figure 1.2" in pdf
    assert "Source:" in pdf


# ------------------------------------------------------------------ what-if: the smallest change I can detect at V
def test_what_if_change_is_the_change_table_of_the_region(be, table):
    from demonoise.analysis.whatif import what_if_change

    w = what_if_change(be, "BE34", V=[1, 5], ptable="v01")
    assert set(w["indicator"]) == {"e0", "e65", "TFR"} and set(w["noise"]) == {"V = 1", "V = 5", "p-table v01"}
    t = table[(table.region == "BE34") & (table.indicator == "e") & (table.age == 0)]
    t = t.assign(noise=t["setting"].map({"V=1": "V = 1", "V=5": "V = 5", "v01": "p-table v01"}))
    m = w[w.indicator == "e0"].merge(t, on=["sex", "noise"], suffixes=("", "_t"), validate="one_to_one")
    assert len(m) == 9
    for c in ("change", "sd_total", "mdc_total", "mdc_poisson", "z_total"):
        np.testing.assert_allclose(m[c], m[f"{c}_t"], rtol=1e-12)
    r = w[(w.indicator == "e0") & (w.sex == "T") & (w.noise == "V = 5")].iloc[0]
    assert (round(r.mdc_poisson, 2), round(r.mdc_total, 2)) == (1.00, 1.44)


def test_what_if_change_scales_as_the_first_order_formulas_say(be):
    from demonoise.analysis.whatif import what_if_change

    one = what_if_change(be, "BE34", V=[5], year_from=2021, year_to=2022)
    four = what_if_change(be, "BE34", V=[5], scale=4, year_from=2021, year_to=2022)
    m = one.merge(four, on=["sex", "indicator", "noise"], suffixes=("_1", "_4"), validate="one_to_one")
    # whole-number scale: rates unchanged, Poisson variance / 4, noise variance / 16
    np.testing.assert_allclose(m["change_4"], m["change_1"], rtol=1e-12)
    np.testing.assert_allclose(m["sd_poisson_4"], m["sd_poisson_1"] / 2, rtol=1e-10)
    np.testing.assert_allclose(m["sd_noise_4"], m["sd_noise_1"] / 4, rtol=1e-10)
    np.testing.assert_allclose(m["mdc_poisson_4"], m["mdc_poisson_1"] / 2, rtol=1e-10)
    assert (m["mdc_ratio_4"] < m["mdc_ratio_1"]).all()
    with pytest.raises(ParameterError, match="two or more years"):
        what_if_change(load("be-2023"), "BE34", V=[5])
    with pytest.raises(ParameterError, match="scale"):
        what_if_change(be, "BE34", V=[5], scale=-1)


# ------------------------------------------------------------------ teaching: the change's variance term by term
def test_change_steps_and_pooling(be):
    from demonoise.analysis.teaching import change_steps, pooling_gain

    cs = change_steps(be, "BE34", year_from=2022, year_to=2023, V=5)
    assert cs["grad_fd_max_rel_error"] < 1e-5 and cs["grad_cells"] == 3 * 102
    for placement in ("every cell", "stocks only"):
        r = cs[placement]
        np.testing.assert_allclose(r["var_formula"], r["var_change"], rtol=1e-10)
        assert (r["cov"] > 0).all() and (r["var_change"] < r["var_independent"]).all()
    # the change table's noise variance of e0 (V = 5) is the same
    t = change_table(
        be.select(["BE34"]), noise_settings([5]), year_from=2022, year_to=2023, indicators=("e",), e_ages=[0]
    )
    np.testing.assert_allclose(cs["every cell"]["var_change"], t.sort_values("sex")["sd_noise"] ** 2, rtol=1e-10)
    ratio = np.sqrt(cs["stocks only"]["var_independent"] / cs["stocks only"]["var_change"])
    assert (ratio > 1.25).all() and (ratio < 1.45).all()
    with pytest.raises(ParameterError, match="consecutive"):
        change_steps(be, "BE34", year_from=2020, year_to=2023)
    pg = pooling_gain(be, "BE34", year_to=2023, V=(5,)).set_index(["sex", "pool"])
    # docs/design.md: BE34 T e0, MDC 1.44 -> 0.84 at V = 5 with 3 pooled years; level sds fall ~ 1/sqrt(3)
    assert round(pg.loc[("T", 1), "mdc_total"], 2) == 1.44 and round(pg.loc[("T", 3), "mdc_total"], 2) == 0.84
    fall = pg.xs(3, level="pool")["sd_poisson_to"] / pg.xs(1, level="pool")["sd_poisson_to"]
    assert ((fall > 0.5) & (fall < 0.65)).all()


def test_a_sentence_prints_two_values_that_differ_as_different():
    """ "grows from 0.73 to 0.73 years (+0.8 %)" read as no change: the values get the
    decimals it takes to differ (0.7321 -> 0.7348: 0.732 to 0.735), no more; equal values
    keep the headline's decimals."""
    from demonoise.analysis.change import _from_to

    assert _from_to(0.7321, 0.7348, 2) == "0.732 to 0.735"
    assert _from_to(0.7341, 0.7441, 2) == "0.73 to 0.74"
    assert _from_to(1.5, 1.5, 2) == "1.50 to 1.50"
    assert _from_to(2.0, 2.0000001, 3) == "2.000000 to 2.000000"  # at most 6 decimals
