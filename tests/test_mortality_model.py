"""Modelled mortality (standard, Brass model, calibration, open-age split, Poisson draw),
checked against independent truth:

* the standard, built from real Belgian deaths and exposure 2015-2019, against
  Eurostat's published national e0 and e65 for 2017 (demo_mlexpec), and against the
  raw (unsmoothed) single-age life table of the same data;
* smoother and Kannisto fit against the parameters / shapes that generated their input;
* calibration against Eurostat's published regional e0 and e65 (demo_r_mlifexp,
  Belgian NUTS 2, 2019), re-computed with the project's life table -- and end to end
  through expected deaths on real 2021 regional exposure with the 85+ population
  split by the model;
* Poisson draws against the analytic Poisson sd of e0 (closed-form derivatives).

``PYTHONPATH=lib:tests .venv/bin/python tests/test_mortality_model.py`` prints the measured figures.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _fixtures_lifetable import BE_NUTS2, published_e
from demonoise.core.errors import DataError, ParameterError
from demonoise.demography.lifetable import e_derivative, life_table, life_table_from_rates, lifetable_lower
from demonoise_build.mortality_model import (
    N_AGES,
    brass_rates,
    brass_survivorship,
    build_standard,
    calibrate_brass,
    collapse_open_age,
    draw_deaths,
    expected_deaths,
    kannisto_fit,
    kannisto_rate,
    model_e,
    rates_from_survivorship,
    split_open_age,
    whittaker_poisson,
)

DATA = Path(__file__).parent / "data" / "eurostat"
AGES = ["Y_LT1"] + [f"Y{i}" for i in range(1, 100)] + ["Y_OPEN"]  # NUTS 2 layout, 101 cells
SEX_FM = ("F", "M")
YEARS = range(2015, 2020)  # pooled years; mid-year 2017


# ----------------------------------------------------------------- tiny fixture readers
def _long_cube(path: Path, years, sexes=SEX_FM, regions=BE_NUTS2) -> np.ndarray:
    """Long CSV (values,freq,unit,sex,age,geo,time) -> array (sex, year, region, age 0..99,100+, UNK)."""
    df = pd.read_csv(path, dtype={"age": str, "sex": str, "geo": str})
    df = df[df["time"].isin(list(years)) & df["geo"].isin(regions) & (df["age"] != "TOTAL")]
    cube = df.pivot_table(index=["sex", "time", "geo"], columns="age", values="values", aggfunc="sum")
    idx = pd.MultiIndex.from_product([sexes, list(years), regions])
    cube = cube.reindex(index=idx, columns=AGES + ["UNK"])
    assert not cube.isna().any().any(), f"missing cells in {path.name}"
    return cube.to_numpy().reshape(len(sexes), len(list(years)), len(regions), len(AGES) + 1)


def _spread_unk(a: np.ndarray) -> np.ndarray:
    known, unk = a[..., :-1], a[..., -1:]
    return known + unk * known / known.sum(axis=-1, keepdims=True)


def belgian_pooled():
    """National (sum of the 11 NUTS 2 regions) deaths and exposure, pooled 2015-2019, (sex F/M, 101)."""
    D = _spread_unk(_long_cube(DATA / "demo_r_magec_BE_2015_2019_FM.csv.gz", YEARS)).sum(axis=(1, 2))
    P = _spread_unk(_long_cube(DATA / "demo_r_d2jan_BE_2015_2020_FM.csv.gz", range(2015, 2021))).sum(axis=2)
    E = ((P[:, :-1] + P[:, 1:]) / 2.0).sum(axis=1)  # sum over t of (P(t) + P(t+1)) / 2
    return D, E


def published_national(year: int = 2017) -> np.ndarray:
    """demo_mlexpec BE e0 and e65 (sex F/M, 2)."""
    df = pd.read_csv(DATA / "demo_mlexpec_BE_sample.tsv.gz", sep="\t", dtype=str)
    keys = df.iloc[:, 0].str.split(",", expand=True)
    col = next(c for c in df.columns[1:] if c.strip() == str(year))
    val = df[col].str.strip().str.split(" ").str[0].astype(float)
    s = pd.Series(val.to_numpy(), index=pd.MultiIndex.from_arrays([keys[2], keys[3]]))
    return np.array([[s[(x, "Y_LT1")], s[(x, "Y65")]] for x in SEX_FM])


def to_85plus(a: np.ndarray) -> np.ndarray:
    """Single ages 0..99, 100+ -> 0..84, 85+ (sum)."""
    return np.concatenate([a[..., :85], a[..., 85:].sum(axis=-1, keepdims=True)], axis=-1)


@pytest.fixture(scope="module")
def pooled():
    return belgian_pooled()


@pytest.fixture(scope="module")
def std(pooled):
    return build_standard(*pooled, note="Belgium 2015-2019")


# ----------------------------------------------------------------- the standard is real
def test_standard_reproduces_published_belgian_e0_e65(pooled, std):
    """Standard rates on Belgium's real pooled exposure, Eurostat's 85+ table, vs demo_mlexpec BE 2017."""
    D, E = pooled
    lt = life_table(to_85plus(std.m * E), to_85plus(E), lifetable_lower(85))
    pub = published_national(2017)
    assert np.all(np.abs(lt.e[:, 0] - pub[:, 0]) < 0.1), (lt.e[:, 0], pub[:, 0])
    assert np.all(np.abs(lt.e[:, 65] - pub[:, 1]) < 0.1), (lt.e[:, 65], pub[:, 1])


def test_standard_matches_the_raw_single_age_table(pooled, std):
    """Smoothing and the Kannisto tail keep the data's own single-age e0 and e65 (to 0.02 y)."""
    D, E = pooled
    raw = life_table(D, E, lifetable_lower(100))
    mine = life_table_from_rates(std.m, lifetable_lower(100))
    assert np.all(np.abs(mine.e[:, 0] - raw.e[:, 0]) < 0.02)
    assert np.all(np.abs(mine.e[:, 65] - raw.e[:, 65]) < 0.02)


def test_standard_rates_increase_from_30_to_open_age(std):
    assert std.m.shape == (2, N_AGES)
    assert np.all(np.diff(std.m[:, 30:], axis=-1) > 0)
    assert np.all(std.m > 0) and np.all(np.diff(std.l, axis=-1) < 0) and np.all(std.l > 0)


def test_smoother_keeps_deaths_and_mean_age_at_death(pooled, std):
    """Third-order penalty: sum D, sum x D, sum x^2 D of ages 1..94 are kept (unpenalised null space)."""
    D, E = pooled
    x = np.arange(1, 95)
    fit = std.m[:, 1:95] * E[:, 1:95]
    for k in range(3):
        np.testing.assert_allclose((fit * x**k).sum(-1), (D[:, 1:95] * x**k).sum(-1), rtol=1e-6)


def test_whittaker_returns_a_quadratic_log_schedule_unchanged():
    x = np.arange(1, 60)
    eta = -9.0 + 0.08 * x + 0.0004 * x**2
    E = np.full(x.shape, 5e4)
    m, lam = whittaker_poisson(E * np.exp(eta), E)
    np.testing.assert_allclose(m, np.exp(eta), rtol=1e-7)
    assert lam > 1e7  # the largest smoothing wins BIC on a noiseless quadratic


def test_kannisto_fit_recovers_generating_parameters():
    ages = np.arange(80, 100)
    true = np.array([[-3.4, 0.156], [-2.9, 0.14]])
    E = np.linspace(8e4, 2e3, ages.size)
    D = E * kannisto_rate(true, ages)
    np.testing.assert_allclose(kannisto_fit(D, E, ages), true, rtol=1e-9, atol=1e-10)


def test_bad_standard_input_raises(pooled):
    D, E = pooled
    with pytest.raises(DataError):
        build_standard(D[:, :100], E[:, :100])
    E0 = E.copy()
    E0[1, 40] = 0.0
    with pytest.raises(DataError, match="zero exposure"):
        build_standard(D, E0)
    with pytest.raises(DataError):
        build_standard(-D, E)


# ----------------------------------------------------------------- Brass model
def test_identity_parameters_return_the_standard(std):
    np.testing.assert_allclose(brass_rates(std, 0.0, 1.0), std.m, rtol=1e-9)
    np.testing.assert_allclose(brass_survivorship(std, 0.0, 1.0), std.l, rtol=1e-12)


def test_brass_logit_relation_and_exact_rate_inversion(std):
    rng = np.random.default_rng(5)
    al, be = rng.uniform(-0.5, 0.6, (4, 2)), rng.uniform(0.7, 1.4, (4, 2))
    l = brass_survivorship(std, al, be)  # noqa: E741
    ls = std.l
    # Brass (1971): 1/2 ln((1-l)/l) = alpha + beta * 1/2 ln((1-l^s)/l^s), ages 1..100
    lhs = 0.5 * np.log((1 - l[..., 1:101]) / l[..., 1:101])
    rhs = al[..., None] + be[..., None] * 0.5 * np.log((1 - ls[:, 1:101]) / ls[:, 1:101])
    np.testing.assert_allclose(lhs, rhs, atol=1e-9)
    # the project's life table of the modelled rates gives back the modelled l at 0..100
    m = brass_rates(std, al, be)
    lt = life_table_from_rates(m, lifetable_lower(100))
    np.testing.assert_allclose(lt.l, l[..., :101], rtol=1e-11)
    # open 100+: l_100 / T_100 with T_100 summed by a plain loop over single ages
    r, s = 2, 1
    T = sum((l[r, s, x] + l[r, s, x + 1]) / 2 for x in range(100, l.shape[-1] - 1))
    q_last = 1 - l[r, s, -1] / l[r, s, -2]
    T += l[r, s, -1] / (q_last / (1 - q_last / 2))
    assert m[r, s, 100] == pytest.approx(l[r, s, 100] / T, rel=1e-12)


def test_rates_from_constant_hazard_survivorship():
    """l_x = exp(-mu x): every closed rate and the open rate equal 2 (1 - r) / (1 + r), r = e^-mu
    (a = 0.5); age 0 follows a_0: m_0 = q / (1 - (1 - a0) q)."""
    mu = np.array([0.02, 0.3])
    l = np.exp(-mu[:, None] * np.arange(131))  # noqa: E741
    r = np.exp(-mu)[:, None]
    m = rates_from_survivorship(l, a0=0.2)
    np.testing.assert_allclose(m[:, 1:], np.broadcast_to(2 * (1 - r) / (1 + r), (2, 100)), rtol=1e-10)
    q0 = 1 - r[:, 0]
    np.testing.assert_allclose(m[:, 0], q0 / (1 - 0.8 * q0), rtol=1e-12)
    with pytest.raises(ParameterError):
        rates_from_survivorship(l, last=130)


def test_collapse_open_age_keeps_e0_to_e85(std):
    m = brass_rates(std, 0.3, 0.9)
    single = life_table_from_rates(m, lifetable_lower(100))
    lt85 = life_table_from_rates(collapse_open_age(m), lifetable_lower(85))
    np.testing.assert_allclose(lt85.e, single.e[..., :86], rtol=1e-12)


# ----------------------------------------------------------------- calibration
def test_calibration_reproduces_belgian_regions_2019(std):
    e0, e65 = published_e(DATA.parent, "Y_LT1", 2019)[:, :2], published_e(DATA.parent, "Y65", 2019)[:, :2]
    al, be = calibrate_brass(std, e0, e65, regions=BE_NUTS2, sexes=SEX_FM)
    e = model_e(std, al, be)
    assert np.max(np.abs(e[..., 0] - e0)) < 0.05 and np.max(np.abs(e[..., 1] - e65)) < 0.05


def test_expected_deaths_on_real_exposure_give_the_targets(std):
    """End to end, the way the dataset is built and read back: real 2021 regional
    population (85+ collapsed, then split by the calibrated model), expected deaths,
    the project's 85+ life table -> published 2019 e0, e65 within 0.05 y."""
    e0, e65 = published_e(DATA.parent, "Y_LT1", 2019)[:, :2], published_e(DATA.parent, "Y65", 2019)[:, :2]
    al, be = calibrate_brass(std, e0, e65, regions=BE_NUTS2, sexes=SEX_FM)
    m = brass_rates(std, al, be)  # (11, 2, 101)
    P = _spread_unk(_long_cube(DATA / "demo_r_d2jan_BE_2021_2022.csv.gz", (2021, 2022))).round()  # (2, 2, 11, 101)
    P = np.moveaxis(P, 2, 0)  # (11, sex, year, 101)
    P85 = P[..., 85:].sum(-1).astype(np.int64)
    split = split_open_age(P85, m[:, :, None, :])
    assert np.array_equal(split.sum(-1), P85)
    P = np.concatenate([P[..., :85], split], axis=-1)
    E = (P[:, :, 0] + P[:, :, 1]) / 2.0
    D = expected_deaths(m, E)
    lt = life_table(to_85plus(D), to_85plus(E), lifetable_lower(85))
    assert np.max(np.abs(lt.e[..., 0] - e0)) < 0.05
    assert np.max(np.abs(lt.e[..., 65] - e65)) < 0.05


def test_calibration_random_targets_292_regions_fast(std):
    rng = np.random.default_rng(2023)
    e0 = rng.uniform(70.0, 87.0, (292, 2))
    e65 = 14.0 + (e0 - 70.0) * 0.65 + rng.uniform(-1.5, 1.5, e0.shape)
    t = time.perf_counter()
    al, be = calibrate_brass(std, e0, e65)
    elapsed = time.perf_counter() - t
    e = model_e(std, al, be)
    assert np.max(np.abs(e[..., 0] - e0)) < 0.05 and np.max(np.abs(e[..., 1] - e65)) < 0.05
    assert elapsed < 5.0


@pytest.mark.parametrize("e0,e65", [(70, 14), (87, 25), (70, 16.5), (87, 22.5), (78, 14), (76, 20), (84, 25)])
def test_calibration_extreme_targets(std, e0, e65):
    al, be = calibrate_brass(std, e0, e65)
    e = model_e(std, al, be)
    assert np.max(np.abs(e[..., 0] - e0)) < 0.05 and np.max(np.abs(e[..., 1] - e65)) < 0.05


def test_unreachable_targets_raise_naming_region_and_sex(std):
    e0 = np.array([[80.0, 78.0], [81.0, 87.0]])
    e65 = np.array([[20.0, 18.0], [21.0, 14.0]])  # XX02 M: e0 > 65 + e65 is impossible
    with pytest.raises(ParameterError, match=r"region XX02, sex M"):
        calibrate_brass(std, e0, e65, regions=["XX01", "XX02"], sexes=SEX_FM)
    with pytest.raises(ParameterError, match=r"region XX01, sex F.*beta"):
        calibrate_brass(std, [[86.0, 80.0]], [[60.0, 18.0]], regions=["XX01"], sexes=SEX_FM)
    with pytest.raises(ParameterError):
        calibrate_brass(std, np.nan, 20.0)


# ----------------------------------------------------------------- open age split
def test_split_open_age_sums_exactly_and_decreases(std):
    rng = np.random.default_rng(11)
    m = brass_rates(std, rng.uniform(-0.3, 0.5, (50, 2)), rng.uniform(0.8, 1.3, (50, 2)))
    pop = rng.integers(0, 200_000, (50, 2))
    pop[0, 0] = 0
    pop[1, 1] = 7
    n = split_open_age(pop, m)
    assert n.dtype == np.int64 and n.shape == (50, 2, 16)
    assert np.array_equal(n.sum(-1), pop) and np.all(n >= 0)
    L = life_table_from_rates(m, lifetable_lower(100)).L[..., 85:]
    quota = pop[..., None] * L / L.sum(-1, keepdims=True)
    assert np.all(np.abs(n - quota) < 1)  # largest remainder: within 1 of the quota
    big = pop > 20_000
    assert np.all(np.diff(n[big][:, 5:15], axis=-1) < 0)  # ages 90..99 decrease


def test_split_open_age_bad_input(std):
    with pytest.raises(DataError):
        split_open_age(-1, std.m)
    with pytest.raises(DataError):
        split_open_age(10.5, std.m)


# ----------------------------------------------------------------- Poisson draw
def test_draw_is_reproducible_bit_for_bit(std, pooled):
    lam = expected_deaths(std.m, pooled[1] / 50)
    a = draw_deaths(lam, np.random.default_rng(42))
    b = draw_deaths(lam, np.random.default_rng(42))
    c = draw_deaths(lam, np.random.default_rng(43))
    assert a.dtype == np.int64 and a.shape == lam.shape
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(ParameterError):
        draw_deaths(lam, 42)
    with pytest.raises(DataError):
        draw_deaths(-lam, np.random.default_rng(1))


def poisson_check(std, pooled, n_regions: int = 1000, seed: int = 7):
    """Share of simulated regions whose drawn-deaths e0 lies within 3 analytic Poisson sd.

    Regions: Belgian female/male age structure scaled to 50 000..2 000 000 people
    (log-uniform), Brass parameters in the range calibrated on real 2019 regions.
    """
    rng = np.random.default_rng(seed)
    E1 = pooled[1] / 5.0  # one year's exposure
    sex = rng.integers(0, 2, n_regions)
    size = np.exp(rng.uniform(np.log(5e4), np.log(2e6), n_regions))
    E = E1[sex] * (size / E1[sex].sum(-1))[:, None]
    al, be = rng.uniform(-0.4, 0.6, n_regions), rng.uniform(0.75, 1.3, n_regions)
    m = brass_rates(std, al[:, None], be[:, None])[np.arange(n_regions), sex]
    lam = expected_deaths(m, E)
    drawn = draw_deaths(lam, rng)
    lower = lifetable_lower(85)
    exp_lt = life_table(to_85plus(lam), to_85plus(E), lower)
    drawn_e0 = life_table(to_85plus(drawn), to_85plus(E), lower).e[:, 0]
    g = e_derivative(exp_lt, 0)  # d e0 / d m_x
    sd = np.sqrt(np.sum(g**2 * to_85plus(lam) / to_85plus(E) ** 2, axis=-1))
    z = (drawn_e0 - exp_lt.e[:, 0]) / sd
    return np.mean(np.abs(z) <= 3.0), z, sd, exp_lt.e[:, 0]


def test_poisson_draws_within_three_analytic_sd(std, pooled):
    share, z, sd, _ = poisson_check(std, pooled)
    assert share >= 0.99
    assert abs(np.std(z) - 1.0) < 0.1  # the analytic sd is the right scale, not just a bound


if __name__ == "__main__":  # measured figures for the report
    pooled_ = belgian_pooled()
    st = build_standard(*pooled_)
    D, E = pooled_
    lt = life_table(to_85plus(st.m * E), to_85plus(E), lifetable_lower(85))
    print("standard (85+ table on real exposure) e0, e65 F/M:", lt.e[:, 0].round(3), lt.e[:, 65].round(3))
    print("published BE 2017 (demo_mlexpec)                 :", published_national(2017).T)
    single = life_table_from_rates(st.m, lifetable_lower(100))
    print("standard single-age table (0..99, 100+) e0, e65  :", single.e[:, 0].round(3), single.e[:, 65].round(3))
    raw = life_table(D, E, lifetable_lower(100))
    print("raw pooled single-age table e0, e65              :", raw.e[:, 0].round(3), raw.e[:, 65].round(3))
    print("smoothing lambda F/M:", st.lam, " Kannisto (c, b):", st.kannisto.round(4).tolist())
    e0, e65 = published_e(DATA.parent, "Y_LT1", 2019)[:, :2], published_e(DATA.parent, "Y65", 2019)[:, :2]
    al, be = calibrate_brass(st, e0, e65)
    e = model_e(st, al, be)
    print(
        "BE NUTS 2 2019 calibration max |error| e0, e65:", np.abs(e[..., 0] - e0).max(), np.abs(e[..., 1] - e65).max()
    )
    rng = np.random.default_rng(2023)
    t0 = rng.uniform(70.0, 87.0, (292, 2))
    t65 = 14.0 + (t0 - 70.0) * 0.65 + rng.uniform(-1.5, 1.5, t0.shape)
    t = time.perf_counter()
    al, be = calibrate_brass(st, t0, t65)
    print(f"292 x 2 random calibrations: {time.perf_counter() - t:.3f} s, beta {be.min():.3f}..{be.max():.3f}")
    share, z, sd, e0s = poisson_check(st, pooled_)
    print(
        f"Poisson check: {share:.1%} of 1000 regions within 3 sd; sd(z) = {np.std(z):.3f}; max |z| = "
        f"{np.abs(z).max():.2f}"
    )
