"""One convention in every part of a report: the main points, the indicator chapters'
verdicts, the index and the Europe overview read the same results table and give, for the
same (region, sex, setting), one admixture, one population (1 January) and one class.

Truth: the results table itself -- per region the largest e0 admixture of women, men and
both sexes (the decision table's rule), the counts' population on 1 January, the class of
:data:`demonoise.core.vocabulary.ADMIXTURE_CLASSES` -- and the calibration's smallest V_max
over the three sexes for the recommended V.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from demonoise.analysis import decision as dc
from demonoise.analysis import overview as aov
from demonoise.analysis import verdicts as vd
from demonoise.analysis.compute import compute, noise_settings
from demonoise.core import formats as fm
from demonoise.core.vocabulary import SEX_WORDS, SEXES, admixture_class
from demonoise.io.datasets import load
from demonoise.uncertainty.calibration import calibrate


@pytest.fixture(scope="module")
def finland():
    counts = load("ess-2023").select(country="FI")
    res = compute(counts, noise_settings([1, 5]), e_ages=(0, 65))
    return counts, res, dc.decision_report(res, counts, [{"V": 1}, {"V": 5}])


def _truth(res: pd.DataFrame, V: float) -> pd.DataFrame:
    """Per NUTS 2 region the sex with the largest e0 admixture (ties: F, M, T), by hand."""
    e0 = res[(res.indicator == "e") & (res.age == 0) & (res.V == V) & (res.nuts_level == 2)]
    e0 = e0.assign(_rank=e0["sex"].map({s: i for i, s in enumerate(SEXES)}))
    e0 = e0.sort_values(["region", "admixture", "_rank"], ascending=[True, False, True])
    return e0.drop_duplicates("region").set_index("region")


@pytest.mark.parametrize("V", [1.0, 5.0])
def test_main_points_chapters_and_overview_agree(finland, V):
    counts, res, rep = finland
    truth = _truth(res, V)
    # the smallest region: its figure in every part
    pop = dc.population(counts).set_index("region")["population"]
    region = pop[truth.index].idxmin()
    t = truth.loc[region]
    key = f"V={V:g}"

    dec = rep.decision
    d = dec[(dec.region == region) & (dec.setting == key) & (dec.measure == "e0")].iloc[0]
    verdict = vd.scalar_verdict(res, V, "e", age=0)
    ov = aov.indicator_rows(res, "e0")
    o = ov[(ov.region == region) & (ov.setting_key == key)].iloc[0]
    m = aov.map_values(res, key="e0")
    mv = m[(m.region == region) & (m.setting_key == key)].iloc[0]

    # one figure and one sex
    assert verdict.numbers["smallest"] == region
    for a in (d["admixture"], verdict.numbers["smallest_admixture"], o["admixture"], mv["A"] / 100.0):
        assert a == pytest.approx(t["admixture"], rel=1e-12)
    assert d["sex"] == verdict.numbers["smallest_sex"] == o["sex"] == t["sex"]
    sentence = next(s for s in verdict.sentences if s.startswith("In the smallest region"))
    assert f"({SEX_WORDS[t['sex']]})" in sentence
    # one population: 1 January, both sexes, from the counts
    for p in (d["population"], verdict.numbers["smallest_population"], o["population"], mv["population"]):
        assert p == pytest.approx(float(pop[region]))
    # one class: the decision table's, the map's, and the main points' acceptable regions
    cls = admixture_class(float(t["admixture"]))
    assert d["class"] == cls.key and mv["A_class"] == cls.label
    mp = dc.main_points(dec, headlines=("e0",), threshold=0.1)
    assert (region in mp.numbers["acceptable"][key]) == (cls.key == "small")
    # the chapter's count of regions below 10 % is the count of the rule
    assert verdict.numbers["regions_below_10"] == int((truth["admixture"] < 0.1).sum())
    # and the index's worst region
    idx = vd.index_metrics(res, V)
    assert idx["e0_worst_region"] == truth["admixture"].idxmax()
    assert idx["e0_worst_sex"] == truth.loc[idx["e0_worst_region"], "sex"]


def test_overview_calibration_gives_the_recommended_V(finland):
    counts, _, rep = finland
    # the overview calibrates at the reports' thresholds (10 % and 41.4 %) and takes the worst sex
    cal = calibrate(counts, dc.THRESHOLDS, granularity="single", e_ages=(0, 65))
    table = aov.calibration_table(cal, keys=("e0",), V=(1.0, 5.0))
    assert table["threshold"].tolist() == pytest.approx(list(dc.THRESHOLDS))
    row = table[np.isclose(table.threshold, 0.1)].iloc[0]
    e0 = cal[(cal.indicator == "e") & (cal.age == 0) & (cal.nuts_level == 2) & np.isclose(cal.threshold, 0.1)]
    low = e0.loc[e0["V_max"].idxmin()]
    assert row["V_max_min"] == pytest.approx(low["V_max"]) and row["sex_min"] == low["sex"]
    rec = rep.recommended
    rec = rec[rec.family == "generic"].iloc[0]
    assert rec["region"] == row["region_min"] and rec["sex"] == row["sex_min"]
    assert float(rec["V_recommended"]) == pytest.approx(row["V_max_min"], rel=1e-9)


def test_scatter_and_overview_plot_the_population_on_1_January(finland):
    from demonoise.report.content import charts

    counts, res, _ = finland
    pop = dc.population(counts).set_index("region")["population"]
    spec = charts.uncertainty_vs_population(vd.across_settings(res, "e", age=0)).to_dict()
    data = next(v for v in spec["datasets"].values() if v and "people" in v[0])
    for row in data:
        assert row["people"] == pytest.approx(float(pop[row["region"]]))
    ov = aov.population(res)
    assert ov.set_index(["region", "sex"])["population"].droplevel("sex").groupby(level=0).nunique().max() == 1
    assert ov.drop_duplicates("region").set_index("region")["population"].to_dict() == pytest.approx(
        {r: float(pop[r]) for r in ov["region"].unique()}
    )


def test_one_event_cells_top_out_at_sqrt_1_plus_V(finland):
    # a death rate m from one death at V = 5: A = sqrt(1 + V (1 + m^2 / 2) / D) - 1 (noise on the deaths and
    # on the two stocks whose mean is the exposure), sqrt(6) - 1 = 145 % for the small rates
    _, res, _ = finland
    one = res[(res.indicator == "asmr") & (res.V == 5.0) & (res.events == 1.0)]
    assert len(one)
    m = one["value"].to_numpy(float)
    assert one["admixture"].to_numpy(float) == pytest.approx(np.sqrt(1 + 5 * (1 + m**2 / 2)) - 1, rel=1e-3)
    small = one[one["value"] < 0.01]
    assert small["admixture"].max() == pytest.approx(np.sqrt(6) - 1, abs=1e-3)
    # the chapter's verdict explains it, with the cell's own figure
    v = vd.age_verdict(res, 5.0, "asmr")
    if v.numbers["max_admixture_age"]:
        text = str(v)
        assert "cells resting on one death top out near \u221a(1 + 5) \u2212 1 = 145 %" in text
        assert f"here {fm.fmt_pct(v.numbers['max_admixture'])}" in text
    assert vd.few_event_ceiling({"ptable": "v01"}, 1.0) == ""


def test_whatif_colours_come_from_the_settings_not_their_position():
    import demonoise as dn
    from demonoise.analysis.settings import ordered_settings
    from demonoise.core.vocabulary import POISSON_COLOUR, SETTING_PALETTE, TOTAL_COLOUR
    from demonoise.report.content import explain as ex

    counts = load("be-2023")
    # V's given in falling order: the colours still follow the reports' order (V ascending, then p-tables)
    df = dn.what_if(counts, "BE34", V=[5, 1], ptable="v01", indicators=("e",), e_ages=(0,))
    sel = df[(df.indicator == "e") & (df.sex == "F")]
    spec = ex.uncertainty_by_setting(sel).to_dict()
    scale = spec["spec"]["layer"][0]["encoding"]["color"]["scale"]
    want = {"V = 1": SETTING_PALETTE[0], "V = 5": SETTING_PALETTE[1], "p-table v01": SETTING_PALETTE[2]}
    assert dict(zip(scale["domain"], scale["range"], strict=True)) == {
        "Poisson": POISSON_COLOUR,
        **{f"noise, {k}": c for k, c in want.items()},
        "total": TOTAL_COLOUR,
    }
    data = pd.DataFrame(next(iter(spec["datasets"].values())))
    for k in want:  # every setting's noise is drawn in its own panel
        assert set(data.loc[data.series == f"noise, {k}", "setting"]) == {k}
    assert ex.colours_of(ordered_settings(df)) == want
    assert ex.colour_words(want) == "V = 1 orange, V = 5 dark red, p-table v01 purple"
    sens = dn.sensitivity(counts, "BE34", scales=[0.5, 1], V=[5, 1], ptable="v01")
    chart = ex.sensitivity_chart(sens, colours=ex.colours_of(ordered_settings(df))).to_dict()  # as the notebook
    enc = next(x["encoding"]["color"] for x in chart["hconcat"][0]["layer"] if "color" in x.get("encoding", {}))
    assert dict(zip(enc["scale"]["domain"], enc["scale"]["range"], strict=True)) == want


def test_most_affected_names_the_sex_of_every_setting():
    # a p-table's worst sex may differ from the V's: the wide table then names each setting's sex
    counts = load("ess-2023").select(country="FI")
    res = compute(counts, noise_settings([1], ptables=["v01"]), indicators=("e",), e_ages=(0,))
    w = aov.most_affected(res, 10, key="e0").set_index("region")
    for key, tag in (("V=1", "V1"), ("v01", "ptable_v01")):
        truth = _truth_of(res, key)
        assert w[f"admixture_{tag}"].to_dict() == pytest.approx(truth["admixture"].to_dict())
        if f"sex_{tag}" in w:
            assert w[f"sex_{tag}"].to_dict() == truth["sex"].to_dict()
        else:  # one sex per region for every setting
            assert w["sex"].to_dict() == truth["sex"].to_dict()


def _truth_of(res: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per NUTS 2 region the sex with the largest e0 admixture at one setting (ties: F, M, T)."""
    from demonoise.analysis.settings import setting_column

    e0 = res[(res.indicator == "e") & (res.age == 0) & (res.nuts_level == 2)]
    e0 = e0[setting_column(e0).to_numpy() == key]
    e0 = e0.assign(_rank=e0["sex"].map({s: i for i, s in enumerate(SEXES)}))
    e0 = e0.sort_values(["region", "admixture", "_rank"], ascending=[True, False, True])
    return e0.drop_duplicates("region").set_index("region")


def test_extra_notebook_title_names_the_settings_by_their_labels(tmp_path):
    from demonoise.analysis.settings import NoiseSetting
    from demonoise.report.batch.extras import extra_run

    run = extra_run("whatif", {"V": [1, 5], "ptable": "v01"}, tmp_path)
    labels = [NoiseSetting.generic(1).label, NoiseSetting.generic(5).label, NoiseSetting.of({"ptable": "v01"}).label]
    assert run.title.endswith(f"({', '.join(labels)})") and run.subtitle == f"Parameters: {', '.join(labels)}"


def test_series_that_are_not_settings_do_not_take_the_settings_colours():
    from demonoise.core.vocabulary import SETTING_PALETTE
    from demonoise.report.content import explain as ex

    x = np.arange(3.0)
    spec = ex.derivative_check_chart(x, {"e0": x + 1, "e65": x + 2}, {"e0": x + 1, "e65": x + 2}).to_dict()
    assert not set(spec["layer"][0]["encoding"]["color"]["scale"]["range"]) & set(SETTING_PALETTE)
    assert not set(ex.SERIES_COLOURS) & set(SETTING_PALETTE)
