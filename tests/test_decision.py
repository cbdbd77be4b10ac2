"""The decision view (demonoise.analysis.decision) against independent truth: admixture
classes recomputed from the variances of the results table, V_max from calibrate and from
the closed form, the recommended V as a brute-force minimum, error bands from the normal
quantile, Monte Carlo quantiles from `demonoise compute --mc`, cell counts from the counts
themselves."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import demonoise as dn
from demonoise.analysis import decision as dc
from demonoise.analysis.compute import compute, noise_settings, read_table
from demonoise.analysis.ptables import load_ptable, write_ptable
from demonoise.cli import main
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.vocabulary import A_EQUAL, A_SMALL
from demonoise.uncertainty.calibration import calibrate
from demonoise.uncertainty.comparison import compare_noise
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import linearise

SETTINGS = [{"V": 1}, {"V": 5}, {"ptable": "v01"}]
THRESHOLDS = (A_SMALL, A_EQUAL)


@pytest.fixture(scope="module")
def be():
    return dn.load("be-2023")


@pytest.fixture(scope="module")
def be_results(be):
    return compute(be, noise_settings([1, 5], ptables=["v01"]))


@pytest.fixture(scope="module")
def be_report(be, be_results):
    return dc.decision_report(be_results, be, SETTINGS)


@pytest.fixture(scope="module")
def ess():
    return dn.load("ess-2023")


def _class(a: float) -> str:
    """The admixture class, written out here from the two thresholds."""
    if not np.isfinite(a):
        return "undefined"
    return "small" if a < 0.1 else ("notable" if a < math.sqrt(2) - 1 else "large")


def _setting_rows(res, key):
    if key.startswith("V="):
        return res[(res.noise_model == "generic") & np.isclose(res.V, float(key[2:]))]
    return res[(res.noise_model == "ptable") & (res.ptable == f"ptable {key}")]


# ------------------------------------------------------------------ population
def test_population_is_the_1_january_total_of_sex_t(be):
    pop = dc.population(be)
    tidy = be.to_frame()
    want = tidy[(tidy.measure == "population") & (tidy.year == be.year) & (tidy.sex == "T")]
    want = want.groupby("region")["value"].sum()
    assert list(pop.region) == list(be.codes)
    np.testing.assert_array_equal(pop.set_index("region")["population"], want.reindex(pop.region).to_numpy())
    # the p-table comparison states the same figure
    cmp = compare_noise(be, load_ptable("v01"), indicators=("e",), e_ages=(0,))
    np.testing.assert_array_equal(
        cmp.drop_duplicates("region").set_index("region")["population"].reindex(pop.region), pop.population
    )
    assert pop.attrs["name"] == "population" and "1 January" in pop.attrs["units"]["population"]


# ------------------------------------------------------------------ decision table
def test_decision_classes_agree_with_the_variances_of_the_results_table(be, be_results, be_report):
    dec = be_report.decision
    res = be_results
    assert set(dec.region) == set(be.codes)
    assert dec.region.iloc[0] == "BE"  # the country first, then NUTS 2 by falling population
    nuts2 = dec[(dec.setting == "V=1") & (dec.measure == "e0") & (dec.nuts_level == 2)]
    assert nuts2.population.is_monotonic_decreasing
    for key in ("V=1", "V=5", "v01"):
        rows = _setting_rows(res, key)
        for measure, ind, age in (("e0", "e", 0.0), ("e65", "e", 65.0), ("tfr", "tfr", None)):
            sel = rows[rows.indicator == ind]
            if age is not None:
                sel = sel[np.isclose(sel.age, age)]
            a = np.sqrt(1 + sel.var_noise / sel.var_pois) - 1  # recomputed here
            sel = sel.assign(a=a)
            for region, g in sel.groupby("region"):
                got = dec[(dec.setting == key) & (dec.measure == measure) & (dec.region == region)].iloc[0]
                worst = g.loc[g.a.idxmax()]
                assert got.admixture == pytest.approx(worst.a, rel=1e-12)
                assert got.sex == worst.sex
                assert got["class"] == _class(worst.a)
                for s in g.sex:
                    assert got[f"admixture_{s}"] == pytest.approx(g.loc[g.sex == s, "a"].iloc[0], rel=1e-12)
        # medians over ages of the rates, worst sex
        for measure in ("asfr", "asmr"):
            sel = rows[(rows.indicator == measure) & (rows.var_pois > 0)]
            med = (np.sqrt(1 + sel.var_noise / sel.var_pois) - 1).groupby([sel.region, sel.sex]).median()
            for region in be.codes:
                got = dec[(dec.setting == key) & (dec.measure == measure) & (dec.region == region)].iloc[0]
                m = med.loc[region]
                assert got.admixture == pytest.approx(m.max(), rel=1e-12)
                assert got.sex == m.idxmax()
                assert got["class"] == _class(m.max())


def test_decision_wide_is_the_long_table_pivoted(be_report):
    dec, wide = be_report.decision, be_report.decision_wide
    assert list(wide.region) == list(dict.fromkeys(dec.region))
    for _, r in dec.iterrows():
        w = wide[wide.region == r.region].iloc[0]
        assert w[f"{r.measure} {r.setting}"] == pytest.approx(r.admixture, rel=1e-12)
        assert w[f"{r.measure} {r.setting} sex"] == r.sex
        assert w[f"{r.measure} {r.setting} class"] == r["class"]
    assert wide.attrs["name"] == "decision_wide"


# ------------------------------------------------------------------ calibration
def test_vmax_agrees_with_calibrate_and_with_the_closed_form_of_the_results(be, be_results):
    vmax = dc.vmax_table(be, THRESHOLDS)
    ref = calibrate(be, THRESHOLDS, indicators=("tfr", "e"), e_ages=(0,))
    keys = ["region", "sex", "indicator", "age", "threshold"]
    m = vmax.merge(ref, on=keys, suffixes=("", "_cal"), validate="one_to_one")
    assert len(m) == len(vmax) == len(ref)
    np.testing.assert_array_equal(m.V_max, m.V_max_cal)
    assert (m.status == m.status_cal).all()
    # the calibrate columns come first, in calibrate's order
    assert list(vmax.columns[: len(ref.columns)]) == list(ref.columns)
    # closed form from the results table: Var_noise(V) = V S, so V* = ((1 + A*)^2 - 1) Var_pois / Var_noise(1)
    g1 = _setting_rows(be_results, "V=1")
    g1 = g1[((g1.indicator == "e") & np.isclose(g1.age, 0)) | (g1.indicator == "tfr")]
    for r in vmax.itertuples():
        row = g1[(g1.region == r.region) & (g1.sex == r.sex) & (g1.indicator == r.indicator)].iloc[0]
        assert r.V_max == pytest.approx(((1 + r.threshold) ** 2 - 1) * row.var_pois / row.var_noise, rel=1e-10)
        assert r.range_status == "within"
        assert float(r.V_max_shown) == pytest.approx(r.V_max, rel=5e-3 if r.V_max < 1000 else 5e-4)


def test_decision_classes_and_vmax_tell_the_same_story_for_every_region(be, be_report):
    """Class at V is 'small' iff V < V_max(10 %) for the worst sex, 'large' iff V >= V_max(41 %)."""
    dec, wide = be_report.decision, be_report.calibration_wide
    gen = wide[wide.family == "generic"].set_index("region")
    for key, V in (("V=1", 1.0), ("V=5", 5.0)):
        for measure in ("e0", "tfr"):
            d = dec[(dec.setting == key) & (dec.measure == measure)].set_index("region")
            for region in be.codes:
                small_max = gen.loc[region, f"{measure} A<=0.1"]
                equal_max = gen.loc[region, f"{measure} A<=0.414"]
                cls = d.loc[region, "class"]
                assert (cls == "small") == (V < small_max), (key, measure, region)
                assert (cls == "large") == (V >= equal_max), (key, measure, region)


def test_ptable_family_calibration_matches_the_embedded_table(be, be_results, be_report):
    """The family's table built at V = 1 (build_ptable) against Eurostat's v01 file: same admixture."""
    cal = be_report.calibration
    pt = cal[cal.family == "ptable D=3 js=0"]
    assert len(pt) == len(cal[cal.family == "generic"]) > 0
    assert (pt.range_lo == 0).all() and (pt.range_hi == 9).all()
    v01 = _setting_rows(be_results, "v01")
    for r in pt[pt.threshold == A_SMALL].itertuples():
        row = v01[(v01.region == r.region) & (v01.sex == r.sex) & (v01.indicator == r.indicator)]
        if r.indicator == "e":
            row = row[np.isclose(row.age, r.age)]
        a = float(row.admixture.iloc[0])
        assert r.admixture_V1 == pytest.approx(a, rel=2e-3)
        if abs(a - A_SMALL) > 2e-3:
            assert (a < A_SMALL) == (r.V_max > 1.0)


def test_v_max_beyond_the_range_is_shown_as_beyond_never_as_a_number(be):
    vmax = dc.vmax_table(be, [10.0], family="v01", indicators=("tfr",))
    assert (vmax.range_status == "beyond").any()
    beyond = vmax[vmax.range_status == "beyond"]
    assert (beyond.V_max_shown == "> range").all() and np.isinf(beyond.V_max).all()
    gen = dc.vmax_table(be, [A_SMALL], v_max_range=0.5)
    over = gen[gen.V_max > 0.5]
    assert len(over) and (over.range_status == "beyond").all() and (over.V_max_shown == "> range").all()
    within = gen[gen.V_max <= 0.5]
    assert len(within) and (within.range_status == "within").all()


# ------------------------------------------------------------------ recommended V
@pytest.mark.parametrize("indicator,threshold", [("e0", A_SMALL), ("tfr", A_EQUAL), ("e0", A_EQUAL)])
def test_recommended_v_is_the_minimum_over_regions_and_sexes(be_report, indicator, threshold):
    cal = be_report.calibration
    rec = dc.recommended_v(cal, {"indicator": indicator, "threshold": threshold})
    assert set(rec.family) == {"generic", "ptable D=3 js=0"}
    for r in rec.itertuples():
        sel = cal[(cal.family == r.family) & (cal.headline == indicator) & np.isclose(cal.threshold, threshold)]
        assert r.items == len(sel) and sel.V_max.notna().all()
        finite = sel[np.isfinite(sel.V_max)]
        if finite.empty:  # every table of the family keeps the admixture below the threshold
            assert np.isinf(r.V_recommended) and r.range_status == "beyond" and r.V_shown == "> range"
            continue
        k = finite.V_max.idxmin()
        assert r.V_recommended == finite.V_max.min()
        assert (r.region, r.sex) == (finite.at[k, "region"], finite.at[k, "sex"])
        assert r.range_status == "within" and float(r.V_shown) == pytest.approx(r.V_recommended, rel=5e-3)


def test_recommended_v_per_country_for_small_countries(ess):
    counts = ess.select(codes=[c for c in ess.codes if c[:2] in ("FI", "LU", "MT")])
    cal = dc.vmax_table(counts, THRESHOLDS)
    rec = dc.recommended_v(cal)
    assert sorted(rec.country) == ["FI", "LU", "MT"]
    for r in rec.itertuples():
        sel = cal[(cal.country == r.country) & (cal.headline == "e0") & np.isclose(cal.threshold, A_SMALL)]
        assert r.V_recommended == sel.V_max.min()
        binding = sel[sel.V_max == sel.V_max.min()]
        assert r.region in set(binding.region)
        assert r.region == binding.sort_values("nuts_level", ascending=False, kind="stable").region.iloc[0]
    # a country of one NUTS 2 region is bound by that region, not by itself
    assert set(rec[rec.country != "FI"].region) == {"LU00", "MT00"}
    fi = rec[rec.country == "FI"].iloc[0]
    assert fi.region == "FI20"  # Åland, the smallest region, binds Finland


@pytest.mark.parametrize(
    "recommend,needle",
    [
        ({"indicator": "e5", "threshold": 0.1}, "unknown indicator 'e5'"),
        ({"indicator": "e0", "threshold": 0.2}, "threshold 0.2 is not among"),
        ({"indicator": "e0", "threshold": -1}, "outside (0, 10]"),
        ({"indicator": "e0", "limit": 0.1}, "unknown key 'limit'"),
    ],
)
def test_recommend_bad_entries_are_one_line_errors(be_report, recommend, needle):
    with pytest.raises(ParameterError) as e:
        dc.recommended_v(be_report.calibration, recommend)
    assert needle in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------ error bands
def test_noise_half_width_of_e0_for_be34_is_z_times_its_sd(be_results):
    bands = dc.error_bands(be_results, [0.9, 0.95])
    res = be_results
    ref = res[(res.noise_model == "generic") & (res.V == 1) & (res.region == "BE34") & (res.indicator == "e")]
    ref = ref[(ref.age == 0) & (ref.sex == "T")].iloc[0]
    b = bands[(bands.setting == "V=1") & (bands.region == "BE34") & (bands.headline == "e0") & (bands.sex == "T")]
    b95 = b[b.level == 0.95].iloc[0]
    assert b95.half_noise == pytest.approx(norm.ppf(0.975) * ref.sd_noise, rel=1e-12)
    assert b95.half_noise == pytest.approx(1.96 * ref.sd_noise, rel=1e-4)
    assert b95.half_pois == pytest.approx(norm.ppf(0.975) * ref.sd_pois, rel=1e-12)
    assert b95.half_tot == pytest.approx(norm.ppf(0.975) * ref.sd_tot, rel=1e-12)
    assert (b95.lo_noise, b95.hi_noise) == pytest.approx((ref.value - b95.half_noise, ref.value + b95.half_noise))
    b90 = b[b.level == 0.9].iloc[0]
    assert b90.half_noise == pytest.approx(norm.ppf(0.95) * ref.sd_noise, rel=1e-12)
    assert b90.unit == "years" and b90.z == pytest.approx(norm.ppf(0.95))
    # every region, sex and setting of e0, e65 and the TFR is there, once per level
    assert len(bands) == 2 * len(res[((res.indicator == "e") & res.age.isin([0, 65])) | (res.indicator == "tfr")])


def test_ptable_noise_band_is_centred_on_its_first_order_bias(be_results):
    bands = dc.error_bands(be_results, settings=[{"ptable": "v01"}])
    assert (bands.setting == "v01").all()
    assert (bands.bias_noise != 0).any()
    centre = (bands.lo_noise + bands.hi_noise) / 2
    np.testing.assert_allclose(centre, bands.value + bands.bias_noise, rtol=0, atol=1e-12)
    np.testing.assert_allclose((bands.lo_tot + bands.hi_tot) / 2, bands.value + bands.bias_noise, atol=1e-12)
    np.testing.assert_allclose((bands.lo_pois + bands.hi_pois) / 2, bands.value, atol=1e-12)


def test_monte_carlo_quantiles_equal_those_of_compute_mc_with_the_same_seed(be, tmp_path):
    argv = ["compute", "--dataset", "be-2023", "--regions", "BE34", "--V", "1", "--indicators", "e", "tfr"]
    argv += ["--mc", "400", "--seed", "11", "--confidence", "0.9", "0.95", "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 0
    cli = read_table(tmp_path / "r.csv")
    res = compute(
        be.select(["BE34"]), noise_settings([1]), indicators=("e", "tfr"), mc=400, seed=11, confidence=[0.9, 0.95]
    )
    bands = dc.error_bands(res, [0.9, 0.95])
    m = bands.merge(
        cli.assign(headline=np.where(cli.indicator == "tfr", "tfr", "e" + cli.age.map("{:g}".format))),
        on=["region", "sex", "headline"],
        suffixes=("", "_cli"),
    )
    b95, b90 = m[m.level == 0.95], m[m.level == 0.9]
    assert len(b95) == 7 and len(b90) == 7  # e0 and e65 for F, M, T; the TFR
    # the table's 95 % total interval (mc_q_lo/hi), written by the CLI (10 significant digits)
    np.testing.assert_allclose(b95.mc_lo_tot, b95.mc_q_lo, rtol=1e-9)
    np.testing.assert_allclose(b95.mc_hi_tot, b95.mc_q_hi, rtol=1e-9)
    for comp in ("noise", "pois", "tot"):
        np.testing.assert_allclose(b90[f"mc_lo_{comp}"], b90[f"mc_lo_{comp}_90"], rtol=1e-9)
        np.testing.assert_allclose(b90[f"mc_hi_{comp}"], b90[f"mc_hi_{comp}_90"], rtol=1e-9)
    # and the simulation itself, with only the 90 % quantiles asked for (the same indicators: the
    # fused engine draws at the coarsest grouping the requested indicators share, so the draws
    # depend on the indicator set, never on the quantiles asked for or the number of workers)
    lz = linearise(be.select(["BE34"]), indicators=("e", "tfr"))
    mc = monte_carlo(lz, dn.GenericNoise(1.0), n=400, seed=11, indicators=("e", "tfr"), quantiles=(0.05, 0.95))
    st = mc.stats[("e", "noise")]
    e0 = bands[(bands.level == 0.9) & (bands.headline == "e0")].set_index("sex")
    for i, s in enumerate(("F", "M", "T")):
        assert e0.loc[s, "mc_lo_noise"] == st["q_lo"][0, i, 0]
        assert e0.loc[s, "mc_hi_noise"] == st["q_hi"][0, i, 0]
    # the simulated 95 % noise interval of e0 (T) has the analytic width within sampling error
    t = bands[(bands.level == 0.95) & (bands.headline == "e0") & (bands.sex == "T")].iloc[0]
    assert (t.mc_hi_noise - t.mc_lo_noise) / (2 * t.half_noise) == pytest.approx(1, abs=0.15)


def test_error_bands_refuse_a_level_the_monte_carlo_did_not_keep(be):
    res = compute(be.select(["BE34"]), noise_settings([1]), indicators=("e",), mc=50, seed=1, workers=1)
    with pytest.raises(ParameterError, match="confidence 0.8: the Monte Carlo"):
        dc.error_bands(res, [0.8], headlines=("e0",))
    with pytest.raises(ParameterError, match=r"outside \(0, 1\)"):
        dc.error_bands(res, [1.5])


# ------------------------------------------------------------------ p-table end to end
def test_a_ptable_setting_runs_end_to_end(be, be_results, be_report):
    rep = be_report
    tables = rep.tables()
    expect = {
        "population", "decision", "decision_wide", "calibration", "calibration_wide", "recommended_v",
        "error_bands", "ptable_comparison", "ptable_noise_by_count", "small_cells", "options", "columns",
    }  # fmt: skip
    assert set(tables) == expect
    # the decision text is made from the options table, both part of the report
    o = tables["options"].iloc[0]
    assert o["V_shown"] in rep.decision_text and rep.decision_text.startswith("V = 1 keeps")
    for name, df in tables.items():
        assert df.attrs["name"] == name and len(df)
        if name != "columns":
            assert set(df.attrs["units"]) == set(df.columns), name  # every column has its unit
        back = pd.read_csv(pd.io.common.StringIO(df.to_csv(index=False)))
        assert list(back.columns) == list(df.columns)
    assert set(rep.decision.setting) == {"V=1", "V=5", "v01"}
    assert rep.decision.admixture.notna().all()
    # comparison: the two sds are the results table's, and the decomposition of the ratio holds
    cmp = rep.ptable_comparison
    res = be_results
    for setting, col in (("V=1", "sd_generic"), ("v01", "sd_ptable")):
        rows = _setting_rows(res, setting)
        rows = rows[((rows.indicator == "e") & rows.age.isin([0, 65])) | (rows.indicator == "tfr")]
        rows = rows.assign(headline=np.where(rows.indicator == "tfr", "tfr", "e" + rows.age.map("{:g}".format)))
        m = cmp.merge(rows, on=["region", "sex", "headline"], validate="one_to_one")
        assert len(m) == len(cmp)
        np.testing.assert_allclose(m[col], m.sd_noise, rtol=1e-12)
    np.testing.assert_allclose(
        cmp.ratio**2, cmp.large_var_share * cmp.V_last_class / cmp.V + cmp.small_ptable_var_share, rtol=1e-9
    )
    assert ((cmp.zero_var_share >= 0) & (cmp.zero_var_share <= 1)).all()
    be34 = cmp[(cmp.region == "BE34") & (cmp.sex == "T") & (cmp.headline == "e0")].iloc[0]
    assert be34.reason.startswith(f"BE34 (both sexes), e0: p-table noise sd {be34.ratio:.2f} x")
    assert f"{100 * be34.zero_var_share:.0f} % of the generic noise variance" in be34.reason
    # the table's noise by count, from its transition laws
    noise = rep.ptable_noise
    table = load_ptable("v01")
    for r in noise.itertuples():
        tr = table.transition(r.i)
        mean = float((tr.p * tr.v).sum())
        assert r.bias == pytest.approx(mean, abs=1e-12)
        assert r.variance == pytest.approx(float((tr.p * tr.v**2).sum()) - mean**2, abs=1e-12)
    assert list(noise["count"]) == ["0", "1", "2", ">=3"]


def test_a_ptable_from_a_file_is_compared_and_its_missing_family_noted(be, tmp_path):
    path = write_ptable(load_ptable("v01"), tmp_path / "my_table.csv")
    lu = be.select(["BE", "BE34"])
    res = compute(lu, noise_settings([1], ptables=[path]), indicators=("asfr", "tfr", "asmr", "e"))
    rep = dc.decision_report(res, lu, [{"V": 1}, {"ptable": str(path)}])
    assert set(rep.decision.setting) == {"V=1", "my_table.csv"}
    assert set(rep.calibration.family) == {"generic"}
    assert len(rep.notes) == 1 and "my_table.csv" in rep.notes[0] and "not calibrated" in rep.notes[0]
    # the same table as the embedded one: the same comparison
    ref = dc.ptable_comparison(lu, "v01")
    np.testing.assert_allclose(rep.ptable_comparison.sd_ptable, ref.sd_ptable, rtol=1e-6)


def test_main_points_are_made_of_the_numbers_of_the_tables(be_report):
    mp = be_report.main_points
    assert 2 <= len(mp.sentences) <= 3
    rec = be_report.recommended
    gen = rec[rec.family == "generic"].iloc[0]
    assert mp.numbers["recommended_V"] == gen.V_recommended
    assert mp.numbers["binding_region"] == gen.region
    assert f"the recommended V is {gen.V_shown}" in mp.sentences[1]
    assert gen.region in mp.sentences[1]
    # acceptable regions per setting: every headline at or below 10 % for the worst sex
    dec = be_report.decision
    for key, regions in mp.numbers["acceptable"].items():
        d = dec[(dec.setting == key) & dec.measure.isin(["e0", "e65", "tfr"]) & (dec.nuts_level == 2)]
        ok = d.groupby("region").admixture.max() <= A_SMALL
        assert sorted(regions) == sorted(ok[ok].index)
        n_ok = len(regions)
        assert (f"in {n_ok} " in mp.sentences[0]) or (n_ok in (0, 11))
    # what the p-table changes: the ratio range of e0 over NUTS 2 regions
    cmp = be_report.ptable_comparison
    e0 = cmp[(cmp.headline == "e0") & (cmp.nuts_level == 2)]
    assert f"{e0.ratio.min():.2f} to {e0.ratio.max():.2f} times" in mp.sentences[2]


# ------------------------------------------------------------------ cells
def test_small_cell_counts_are_one_definition_with_stated_denominators(ess):
    lu = ess.select(country="LU")
    res = compute(lu, noise_settings([1, 5]))
    cells = dc.small_cell_counts(res)
    assert "share_under_10_of_age_cells" in cells and "share_1_to_9_of_cells_with_events" in cells
    # the deaths of the counts themselves, UNK spread in proportion (written here)
    r = lu.region_index("LU00")
    for i, sex in enumerate(("F", "M", "T")):
        d = lu.deaths[r, i].astype(float)
        known, unk = d[:-1], d[-1]
        spread = known + unk * known / known.sum() if known.sum() else known
        row = cells[(cells.region == "LU00") & (cells.sex == sex) & (cells.indicator == "asmr")].iloc[0]
        assert row.age_cells == known.size == 101
        assert row.age_cells_with_events == int((spread > 0).sum())
        assert row.age_cells_under_10_events == int((spread < 10).sum())
        assert row.age_cells_1_to_9_events == int(((spread > 0) & (spread < 10)).sum())
        assert row.share_under_10_of_age_cells == row.age_cells_under_10_events / row.age_cells
        assert row.text.startswith(
            f"LU00 {dict(F='women', M='men', T='both sexes')[sex]}: {row.age_cells_under_10_events} of 101 age cells"
        )
    # births by age of mother (women only), behind the ASFR and the TFR
    fb = cells[(cells.region == "LU00") & (cells.indicator == "asfr")]
    assert list(fb.sex) == ["F"] and fb.behind.iloc[0] == "ASFR and TFR"
    # the same counts as the results table's own small_count flag, for every setting
    for _, g in res.groupby("V"):
        a = g[g.indicator.isin(["asmr", "asfr"])].groupby(["region", "indicator", "sex"]).small_count.sum()
        got = cells.set_index(["region", "indicator", "sex"]).age_cells_under_10_events
        pd.testing.assert_series_equal(got.sort_index(), a.sort_index().astype(int), check_names=False)


def test_summary_and_flags_read_the_same_row(ess):
    """A sparse row (share under 10 above one half) carries the text both tables print."""
    fi = ess.select(country="FI")
    cells = dc.small_cell_counts(compute(fi, noise_settings([1]), indicators=("asmr", "asfr")))
    sparse = cells[cells.flag_sparse]
    assert "FI20" in set(sparse.region)
    for r in sparse.itertuples():
        assert r.share_under_10_of_age_cells > 0.5
        assert dc.small_cell_text(cells.loc[r.Index]) == r.text
        assert f"{r.age_cells_under_10_events} of {r.age_cells} age cells" in r.text
        assert f"of the {r.age_cells_with_events} cells with {r.events_word}" in r.text


# ------------------------------------------------------------------ settings and bad input
def test_settings_are_matched_against_the_results_table(be_results):
    sets = dc.resolve_settings(be_results, [{"ptable": "v01"}, {"V": 1}, {"V": 1.0}])
    assert [s.key for s in sets] == ["v01", "V=1"]
    assert sets[0].label == "p-table v01" and sets[1].label == "V = 1"
    assert sets[0].phrase == "with p-table v01" and sets[1].slug == "V1"
    with pytest.raises(ParameterError, match=r"\{V: 3\} is not in the results table \(settings there: V=1, V=5, v01\)"):
        dc.resolve_settings(be_results, [{"V": 3}])
    with pytest.raises(ParameterError, match="write"):
        dc.resolve_settings(be_results, [{"sigma": 1}])
    with pytest.raises(ParameterError, match="unknown indicator 'e1'"):
        dc.error_bands(be_results, headlines=("e1",))
    with pytest.raises(DataError, match="no region of this country"):
        dc.decision_table(be_results, {}, country="FR")


def test_results_keep_the_monte_carlo_quantiles_of_every_level(be):
    res = compute(
        be.select(["BE34"]), noise_settings([1]), indicators=("e",), mc=64, seed=2, confidence=[0.8], workers=1
    )
    for lv in ("80", "95"):
        for comp in ("noise", "pois", "tot"):
            assert res[f"mc_lo_{comp}_{lv}"].notna().any() and res[f"mc_hi_{comp}_{lv}"].notna().any()
    np.testing.assert_array_equal(res.mc_q_lo, res.mc_lo_tot_95)
    np.testing.assert_array_equal(res.mc_q_hi, res.mc_hi_tot_95)
    assert (res.mc_lo_noise_80 >= res.mc_lo_noise_95).all() and (res.mc_hi_noise_80 <= res.mc_hi_noise_95).all()


def test_a_decision_table_is_kept_on_one_page_only_when_it_fits(be_report):
    """Belgium's 12 rows print on one page with their heading and legend; a table of more
    regions than a landscape page holds (France: 28 rows) is not kept whole -- kept, it
    would leave its heading and its legend each alone on a page -- but starts under them."""
    from demonoise.report.content import decisions as dv
    from demonoise.report.content.notebook import TABLE_MIME

    short = dv.decision_view(be_report)
    assert len(short.frame) == 12 <= dv.KEEP_ROWS
    assert short._repr_mimebundle_()[TABLE_MIME].get("keep") is True
    wide = be_report.decision_wide
    regions = wide[wide["region"] != "BE"]
    more = pd.concat([wide, *[regions.assign(region=regions["region"] + f"-{i}") for i in range(2)]])
    many = dv.decision_view(dataclasses.replace(be_report, decision_wide=more))
    assert len(many.frame) > dv.KEEP_ROWS
    assert not many._repr_mimebundle_()[TABLE_MIME].get("keep")


def test_calibration_columns_lay_out_each_region_s_largest_v():
    """A headline of one sex (the TFR) gives a column per threshold; one of several sexes a
    block per threshold with a column per sex; a region without a row gets a dash."""
    rows = [("generic", "e0", s, t, r, f"{r}-{s}-{t}") for r in ("A", "B") for s in "FMT" for t in (0.1, 0.4)]
    rows += [("generic", "tfr", "F", t, "A", f"A-tfr-{t}") for t in (0.1, 0.4)]
    cal = pd.DataFrame(rows, columns=["family", "headline", "sex", "threshold", "region", "V_max_shown"])
    got = dc.calibration_columns(cal, ["A", "B"])
    assert [g[:4] for g in got] == [
        ("generic", "e0", None, 0.1),
        ("generic", "e0", None, 0.4),
        ("generic", "tfr", "F", None),
    ]
    assert got[1][4] == {"F": ["A-F-0.4", "B-F-0.4"], "M": ["A-M-0.4", "B-M-0.4"], "T": ["A-T-0.4", "B-T-0.4"]}
    assert got[2][4] == {0.1: ["A-tfr-0.1", "\u2014"], 0.4: ["A-tfr-0.4", "\u2014"]}
