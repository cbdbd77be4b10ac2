"""The options beside a recommended V (analysis.decision) against independent computations:
the calibration's closed form, a plain minimum over the calibration, the results table."""

import math

import numpy as np
import pytest

from demonoise.analysis import decision as dc
from demonoise.analysis.compute import compute, noise_settings
from demonoise.analysis.decision import decision_options, decision_text
from demonoise.io.datasets import load


@pytest.fixture(scope="module", params=["FI", "LU"])
def country(request):
    counts = load("ess-2023").select(country=request.param)
    res = compute(counts, noise_settings([1, 5], ptables=["v01"]))
    rep = dc.decision_report(res, counts)
    return counts, res, rep, decision_options(counts, rep.calibration, rep.recommended)


def test_five_year_ratio_is_the_calibration_ratio(country):
    # Generic model: V_max = var_pois ((1 + A*)^2 - 1) / s^2 with s the noise sd at V = 1,
    # so V_max(5y) / V_max(single) = var_pois(5y) / var_pois(single) * (s_single / s_5y)^2.
    counts, _, rep, opt = country
    o = opt.iloc[0]
    cal5 = dc.vmax_table(counts, [0.1], indicators=("e0",), granularity="5y")
    key = ["region", "sex"]
    single = rep.calibration[(rep.calibration["family"] == "generic") & (rep.calibration["headline"] == "e0")]
    single = single[np.isclose(single["threshold"], 0.1)].set_index(key).loc[(o["region"], o["sex"])]
    five = cal5.set_index(key).loc[(o["region"], o["sex"])]
    expected = five["V_max"] / single["V_max"] * single["var_pois"] / five["var_pois"]
    assert o["sd_ratio_5y"] ** 2 == pytest.approx(expected, rel=1e-6)
    assert 1.5 < o["sd_ratio_5y"] < 4  # 5-year groups carry fewer noised cells per indicator
    assert o["V_recommended_5y"] == pytest.approx(cal5["V_max"].min(), rel=1e-9)


def test_without_the_binding_region(country):
    counts, _, rep, opt = country
    o = opt.iloc[0]
    cal = rep.calibration
    gen = cal[(cal["family"] == "generic") & (cal["headline"] == "e0") & np.isclose(cal["threshold"], 0.1)]
    assert o["V_recommended"] == pytest.approx(gen["V_max"].min())
    others = gen[gen["region"] != o["region"]]
    if (others["nuts_level"] > 0).any():
        assert o["V_without"] == pytest.approx(others["V_max"].min())
        assert o["V_without"] >= o["V_recommended"]
        assert o["region_without"] == others.loc[others["V_max"].idxmin(), "region"]
    else:  # one NUTS 2 region: nothing to treat apart
        assert math.isnan(o["V_without"])


def test_decision_text_names_the_failing_regions(country):
    _, res, rep, opt = country
    v1 = res[(res["noise_model"] == "generic") & (res["V"] == 1)]
    head = v1[((v1["indicator"] == "e") & v1["age"].isin([0, 65])) | (v1["indicator"] == "tfr")]
    head = head[head["region"].str.len() > 2]  # NUTS 2 regions, not the country
    worst = head.groupby("region")["admixture"].max()
    text = decision_text(rep.decision, rep.recommended, opt)
    listed = text.split("everywhere except")[-1].split("(worst")[0]
    for region, a in worst.items():
        assert (f"{region} (" in listed) == (a > 0.1), region
    assert ("everywhere except" in text) == bool((worst <= 0.1).any())  # never "except" every region
    o = opt.iloc[0]
    assert f"recommended V for e0 is {o['V_shown']}" in text
    assert f"then {o['V_5y_shown']}" in text
    assert (f"without it: {o['V_without_shown']}" in text) == isinstance(o["region_without"], str)
