"""Regional verdicts (demonoise.analysis.verdicts) and number formats, on small hand-made results frames.

The frame (tests/_fixtures_results.py) is built with chosen variances, so the expected admixtures follow from
the definition A = sqrt(1 + Var_noise / Var_pois) - 1 (docs/design.md, section "Admixture"), not from
the code under test: Var_noise / Var_pois = 0.21 gives A = 10 % exactly (1.1^2 = 1.21),
3 gives A = 100 %, 0.0201 gives A = 1 %.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from _fixtures_results import frame
from demonoise.analysis import verdicts as vd
from demonoise.core import formats as fm
from demonoise.core.errors import ParameterError


def test_formatting():
    assert fm.fmt_pct(0.0123) == "1.2 %"
    assert fm.fmt_pct(0.1) == "10 %"
    assert fm.fmt_pct(2.3171) == "232 %"
    assert fm.fmt_pct(float("nan")) == "\u2014"
    assert fm.fmt_num(0.0000153, 2) == "0.000015"
    assert fm.fmt_num(82.9241, 4) == "82.92"
    assert fm.fmt_num(12_418_855.0) == "12\u202f418\u202f855"
    assert fm.fmt_int(30123.4) == "30\u202f123"
    assert (
        vd.region_label("FRL0", "Provence-Alpes-Côte d’Azur", width=12) == "FRL0 Provence-Al\u2026"
    )  # 12 characters of name
    assert (
        vd.region_label("BE10", "Région de Bruxelles-Capitale/ Brussels Hoofdstedelijk Gewest")
        == "BE10 Région de Bruxelles-Capitale"
    )
    one = pd.DataFrame({"nuts_level": [0], "region_name": ["Suomi/Finland"], "region": ["FI"], "country": ["FI"]})
    assert vd.country_name(one) == "Suomi / Finland"
    assert (
        vd.country_name(one.assign(nuts_level=2, region="MT00", country="MT", region_name="x")) == "Malta"
    )  # NUTS names


def test_scalar_verdict_counts_regions_and_names_the_smallest():
    v = vd.scalar_verdict(frame(), 1.0, "e", sex="T", age=0)
    text = " ".join(v.sentences)
    # A = 1 %, 2.6 %, 100 %: noise adds less than 10 % in 2 of the 3 NUTS 2 regions
    assert "in 2 of 3 NUTS 2 regions" in text
    assert v.numbers["regions"] == 3 and v.numbers["regions_below_10"] == 2
    # the smallest region: A = sqrt(1 + 3) - 1 = 100 %, sd_noise = sqrt(3 * 0.01), sd_pois = 0.1
    assert "In the smallest region, XX03 Tiny (100\u202f000 people), it adds 100 %" in text
    assert f"noise sd {fm.fmt_num(math.sqrt(0.03), 2)} years against a Poisson sd of 0.1 years" in text
    assert v.numbers["smallest"] == "XX03" and v.numbers["smallest_admixture"] == pytest.approx(1.0)
    # noise at least as large as Poisson (A >= sqrt(2) - 1) only there
    assert "(A >= 41 %) in 1 region: XX03" in text
    assert v.numbers["regions_at_least_41"] == 1
    # the largest, and the country as a whole (A = sqrt(1.0201) - 1 = 1 %)
    assert "In the largest, XX01 Big (2\u202f000\u202f000 people), it adds 1 %" in text
    assert "For Testland as a whole, noise adds 1 %" in text
    assert v.numbers["median_admixture"] == pytest.approx(math.sqrt(1 + 0.21 * 0.25) - 1)
    assert v.markdown().startswith("- At V = 1, noise adds less than 10 %")


def test_scalar_verdict_all_none_and_single_region():
    df = frame()
    df.loc[df.indicator == "e", "admixture"] = 0.05  # every region below 10 %
    assert "in all 3 NUTS 2 regions" in str(vd.scalar_verdict(df, 1.0, "e", sex="T", age=0))
    df.loc[df.indicator == "e", "admixture"] = 0.5
    assert (
        "noise adds 10 % or more to the statistical (Poisson) uncertainty of e0 (both sexes) in all 3 NUTS 2 regions"
        in str(vd.scalar_verdict(df, 1.0, "e", sex="T", age=0))
    )
    one = frame()
    one = one[one.region.isin(["XX", "XX03"])]
    text = str(vd.scalar_verdict(one, 1.0, "e", sex="T", age=0))
    assert (
        "adds 10 % or more to the statistical (Poisson) uncertainty of e0 (both sexes) in the country's only NUTS 2 "
        "region" in text
    )
    # TFR is about women and carries its unit
    t = str(vd.scalar_verdict(frame(), 1.0, "tfr"))
    assert "uncertainty of TFR in all 3 NUTS 2 regions" in t and "children per woman" in t


def test_age_verdict_cells_and_small_counts():
    v = vd.age_verdict(frame(), 1.0, "asmr")
    text = " ".join(v.sentences)
    # 3 regions x 4 ages = 12 cells; ratio 0.21 (A = 10 %, not < 10 %) where >= 10 deaths, 3 (A = 100 %) below
    assert v.numbers["cells"] == 12
    assert v.numbers["cells_below_10"] == 0
    assert v.numbers["small_cells"] == 3
    assert v.numbers["max_admixture"] == pytest.approx(1.0)
    assert v.numbers["max_admixture_region"] == "XX03"
    assert (
        "on 2 deaths (fewer than 10 events" in text
        or "on 1 death (fewer than 10 events" in text
        or "on 5 deaths (fewer than 10 events" in text
    )
    assert "Among cells with at least 10 deaths, the largest admixture is 10 %" in text
    assert "3 cells (25 %) rest on fewer than 10 deaths" in text


def test_mc_summary():
    m = vd.mc_summary(frame(mc=True), 1.0, "e", ages=(0,))
    assert (m["n"], m["cells"], m["beyond"]) == (1000, 12, 3)
    assert m["max_abs_z"] == pytest.approx(7.0)
    assert m["rse"] == pytest.approx(1 / math.sqrt(2000))
    assert (
        "disagrees with the analytic standard deviation beyond sampling error (|z| > 5) in 3 cells of 12" in m["text"]
    )
    none = vd.mc_summary(frame(), 1.0, "e")
    assert none["n"] == 0 and "No Monte Carlo" in none["text"]


def test_index_metrics_worst_region():
    m = vd.index_metrics(frame(), 1.0, "e")
    assert m["regions"] == 3 and m["e0_worst_region"] == "XX03"
    assert m["e0_admixture_worst"] == pytest.approx(1.0)
    # F, M and T tie (same ratio): the rule takes women first, sd_noise = sqrt(3 * 0.02), e0 = 83
    assert m["e0_worst_sex"] == "F"
    assert m["e0_rel_noise_worst"] == pytest.approx(math.sqrt(0.06) / 83.0)
    t = vd.index_metrics(frame(), 1.0, "tfr")
    assert t["tfr_admixture_worst"] == pytest.approx(0.01)
    assert set(m).isdisjoint(t)  # the two payloads merge without conflict
    with pytest.raises(ParameterError):
        vd.index_metrics(frame(), 1.0, "asmr")


def test_other_V_is_not_mixed_in():
    df = pd.concat([frame(), frame().assign(V=5.0, admixture=0.9)], ignore_index=True)
    assert vd.scalar_verdict(df, 1.0, "e", sex="T", age=0).numbers["regions_below_10"] == 2
    assert vd.scalar_verdict(df, 5.0, "e", sex="T", age=0).numbers["regions_below_10"] == 0
    assert set(vd.across_settings(df, "e", age=0).setting) == {"V = 1", "V = 5"}


def test_drop_duplicate_country():
    df = frame()
    assert set(vd.drop_duplicate_country(df).region) == set(df.region)  # several regions: kept
    one = df[df.region.isin(["XX", "XX03"])].copy()
    one.loc[one.region == "XX", "value"] = one.loc[one.region == "XX03", "value"].to_numpy()
    assert set(vd.drop_duplicate_country(one).region) == {"XX03"}  # one region, same values
    one.loc[one.region == "XX", "value"] += 1.0
    assert set(vd.drop_duplicate_country(one).region) == {"XX", "XX03"}  # different values: kept


def test_setting_subsections_say_what_differs():
    """The by-age verdict of a later setting leaves out the cells resting on few events (the
    same cells at every setting); the Monte Carlo check is one sentence when every setting
    agrees, and each setting's sentence when one disagrees (|z| = 7 in XX03)."""
    v = vd.age_verdict(frame(), 1.0, "asmr")
    assert v.numbers["small_cells"] == 3 and "rest on fewer than 10 deaths" in v.sentences[-1]
    first = vd.age_verdict_shown(v, first=True, one_region=False)
    later = vd.age_verdict_shown(v, first=False, one_region=False)
    assert first.sentences == v.sentences and later.sentences == v.sentences[:-1]
    assert vd.age_verdict_shown(v, first=False, one_region=True).sentences == v.sentences[:1]
    mc = frame(mc=True)
    both = pd.concat([mc, mc.assign(V=5.0)], ignore_index=True)
    text = vd.mc_settings(both, [{"V": 1.0}, {"V": 5.0}], "e", ages=(0,))
    assert text.count("- **V = ") == 2 and "disagrees" in text
    calm = both[both["region"] != "XX03"]
    text = vd.mc_settings(calm, [{"V": 1.0}, {"V": 5.0}], "e", ages=(0,))
    assert (
        text.startswith("At every setting the Monte Carlo check (1\u202f000 replicates) agrees") and "|z| = 1.0" in text
    )


def test_flags_name_ages_in_words():
    assert [vd.age_words(c, i) for c, i in [("Y_LT1", "e"), ("Y_LT1", "asmr"), ("Y65", "e"), ("Y40", "asfr")]] == [
        "e0 (at birth)",
        "under 1",
        "e65",
        "age 40",
    ]
    assert vd.age_words("Y_GE85", "asmr") == "85 and over" and vd.age_words("all ages", "e") == "all ages"


def test_a_later_setting_leaves_out_what_every_setting_shares():
    """The one-number verdict of a later setting leaves out the sparse regions (the same at
    every setting); no subsection repeats the largest region (the table of every setting
    has it). Both sexes: the hand-made frame's sparse cells are those of sex T."""
    v = vd.scalar_verdict(frame(), 1.0, "e", sex="T", age=0)
    sparse = [x for x in v.sentences if "more than half of the single-age cells" in x]
    largest = [x for x in v.sentences if x.startswith("In the largest, ")]
    assert len(sparse) == 1 and len(largest) == 1
    first = vd.scalar_verdict_shown(v, first=True).sentences
    later = vd.scalar_verdict_shown(v, first=False).sentences
    assert sparse[0] in first and sparse[0] not in later and largest[0] not in first
    assert later == [x for x in v.sentences if x not in sparse + largest]


def test_admixture_runs_join_consecutive_ages_of_one_class():
    # one region, ages 0, 1, 5, 10, 15 (steps of 1 then 5): A = 5, 5, 20, -, 50 % under one
    # setting, 50 % everywhere under the other
    ages = [0.0, 1.0, 5.0, 10.0, 15.0]
    d = pd.DataFrame({"region": "XX01", "region_name": "Somewhere/Else", "age": ages * 2})
    d["admixture"] = [0.05, 0.05, 0.2, math.nan, 0.5] + [0.5] * 5
    d["setting"] = ["a"] * 5 + ["b"] * 5
    runs = vd.admixture_runs(d, ["b", "a"])
    assert runs["region_label"].unique().tolist() == ["XX01 Somewhere"]
    assert runs["setting"].tolist() == ["b", "a", "a", "a", "a"]
    assert runs["A_class"].tolist()[1:] == ["below 10 %", "10 % to 41 %", vd.NO_EVENTS, runs["A_class"][0]]
    assert runs["A_class"][0].startswith("41 % or more")
    # each run spans its first age to the end of its last age group (the last one 5 years)
    assert runs[["age", "age_end", "cells"]].to_numpy().tolist() == [
        [0, 20, 5], [0, 5, 2], [5, 10, 1], [10, 15, 1], [15, 20, 1]
    ]  # fmt: skip


def test_regions_by_population_and_the_panels_kept():
    pop = {"XX": 1000, "XX01": 500, "XX02": 50, "XX03": 300, "XX04": 20}
    d = pd.DataFrame({"region": list(pop), "region_name": "", "exposure": list(pop.values())})
    d["nuts_level"] = [0, 2, 2, 2, 2]
    assert vd.by_population(d) == ["XX", "XX01", "XX03", "XX02", "XX04"]
    kept, cut = vd.panel_rows(d, 4)  # the country, the largest region, the two smallest
    assert cut and kept["region"].tolist() == ["XX", "XX01", "XX02", "XX04"]
    kept, cut = vd.panel_rows(d, 5)
    assert not cut and kept is d


def test_headline_band_rows_join_each_region_with_its_first_level_bands():
    """e0 (both sexes) at V = 1 with hand-made bands at two levels: each region's row gets
    the half-widths z sd of the first level, made here from the frame's own sds."""
    df = frame()
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")]
    cols = ["region", "nuts_level", "noise_model", "V", "ptable", "value"]
    bands = pd.concat(
        [
            e0[cols].assign(headline="e0", sex="T", level=lev, z=z, half_pois=z * e0["sd_pois"],
                            half_noise=z * e0["sd_noise"], half_tot=z * e0["sd_tot"], lo_noise=0.0, hi_noise=1.0)
            for lev, z in ((0.99, 2.5758293035489), (0.95, 1.959963984540054))
        ]
    )  # fmt: skip
    rows, b, level = vd.headline_band_rows(df, bands, 1.0, "e0")
    assert level == 0.95 and list(rows["region"]) == list(b.index) == ["XX", "XX01", "XX02", "XX03"]
    assert "data_status" not in rows and "mc_n" not in b
    sd = e0.set_index("region").loc[rows["region"], "sd_pois"].to_numpy()
    assert rows["half_pois"].tolist() == pytest.approx((1.959963984540054 * sd).tolist())
    assert (rows["level"] == 0.95).all() and rows["admixture"].notna().all()
