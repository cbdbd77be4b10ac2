"""Graduation of 5-year groups to single ages (demonoise_build.graduation).

Independent truths used here: closed-form polynomial / exponential age patterns
that a method must reproduce exactly; hand-worked largest-remainder apportionments
and a plain-Python reference implementation of Hamilton's method; and real
single-age Eurostat populations (demo_r_d2jan BE NUTS 2, demo_pjan DE ES FR IT PL,
1 January 2023 and 2024) with real births by age of mother (demo_fordagec 2023).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _fixtures_graduation import load_be_d2jan, load_fordagec, load_pjan
from demonoise.core.counts import AgeAxis
from demonoise.core.errors import DataError, ParameterError
from demonoise_build.graduation import (
    DEFAULT_METHOD,
    METHODS,
    graduate,
    group_sums,
    multiplier_matrix,
    to_integers,
    uniform_split,
)

LOWER = np.arange(0, 85, 5)  # 0-4 .. 80-84
SMOOTH = [m for m in METHODS if m != "uniform"]
AGES_5_79 = slice(5, 80)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def be():
    return load_be_d2jan()


@pytest.fixture(scope="module")
def countries():
    return load_pjan()


def test_fixtures_are_consistent(be, countries):
    """The filtered extracts are complete: TOTAL = sum of ages + open + UNK, UNK = 0."""
    for pop, n in ((be, 11), (countries, 5)):
        assert pop.single.shape == (2, n, 3, 100)
        np.testing.assert_array_equal(pop.single.sum(-1) + pop.open_ + pop.unknown, pop.total)
        assert np.all(pop.unknown == 0)
    assert be.codes == ("BE10", "BE21", "BE22", "BE23", "BE24", "BE25", "BE31", "BE32", "BE33", "BE34", "BE35")
    assert countries.codes == ("DE", "ES", "FR", "IT", "PL")


# ------------------------------------------------------------------ closed-form truths
@pytest.mark.parametrize("method", ["sprague", "beers"])
@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_osculatory_multipliers_reproduce_cubics(method, degree):
    """Sprague and Beers (ordinary) are exact for single-age counts that are a
    polynomial of degree <= 3 in age, in every panel (first, middle, last): this
    checks every published multiplier, since a wrong one breaks exactness."""
    a = np.arange(85.0)
    y = 5000 + 300 * ((a - 42) / 20) ** degree
    assert y.min() > 0
    est = graduate(group_sums(y), LOWER, method=method)
    np.testing.assert_allclose(est, y, rtol=0, atol=1e-8)


def test_sprague_is_not_exact_for_quartics():
    """The exactness test above can fail: a quartic is not reproduced."""
    a = np.arange(85.0)
    y = 5000 + 800 * ((a - 42) / 20) ** 4
    assert np.abs(graduate(group_sums(y), LOWER, method="sprague") - y).max() > 1.0


@pytest.mark.parametrize("method", ["sprague", "beers", "uniform"])
def test_multiplier_groups_sum_to_identity(method):
    M = multiplier_matrix(method, 17)
    assert M.shape == (85, 17)
    np.testing.assert_allclose(group_sums(M.T).T, np.eye(17), atol=1e-15)


@pytest.mark.parametrize("curvature", [0.0, 2.0, -1.5])
def test_mono_reproduces_quadratics(curvature):
    """The cumulative of a quadratic single-age pattern is a cubic, which the
    not-a-knot spline interpolates exactly (and Hyman's filter leaves alone when the
    pattern is smooth and positive)."""
    a = np.arange(85.0)
    y = 3000 - 20 * a + curvature * (a - 40) ** 2 / 4 + 200
    assert y.min() > 0
    np.testing.assert_allclose(graduate(group_sums(y), LOWER, method="mono"), y, rtol=1e-10)


def test_pclm_reproduces_exponentials():
    """A log-linear age pattern is in the null space of the PCLM penalty and fits the
    groups exactly, so it is the penalised ML solution for every lambda."""
    a = np.arange(85.0)
    y = 200 * np.exp(0.06 * a)
    for lam in (None, 10.0, 1e4):
        np.testing.assert_allclose(graduate(group_sums(y), LOWER, method="pclm", lam=lam), y, rtol=1e-5)


def test_uniform_split_is_flat():
    N = np.array([[50.0, 10.0, 0.0, 7.0]])
    out = uniform_split(N, [0, 5, 10, 15])
    np.testing.assert_allclose(out, np.repeat(N / 5, 5, axis=-1), rtol=1e-15)


# ------------------------------------------------------------------ totals, signs, shapes
def _random_groups(rng, shape):
    """Mixed scales: national-size, regional-size and tiny counts with zeros."""
    scale = rng.choice([3.0, 40.0, 2_000.0, 150_000.0], size=shape[:-1] + (1,))
    base = np.exp(-((np.arange(shape[-1]) - rng.uniform(0, shape[-1], shape[:-1] + (1,))) ** 2) / 60.0)
    return rng.poisson(scale * (0.2 + base) * rng.uniform(0.5, 1.5, shape)).astype(np.int64)


@pytest.mark.parametrize("method", METHODS)
def test_integer_totals_exact_and_non_negative_random(method):
    rng = np.random.default_rng(20230101)
    N = _random_groups(rng, (7, 3, 17))
    N[0, 0, 5:9] = 0  # empty groups inside a row
    N[1, 2, :] = 0  # an empty row
    out = graduate(N, LOWER, method=method, integer=True)
    assert out.dtype == np.int64 and out.shape == (7, 3, 85)
    np.testing.assert_array_equal(group_sums(out), N)
    assert out.min() >= 0
    floats = graduate(N, LOWER, method=method)
    np.testing.assert_allclose(group_sums(floats), N, rtol=1e-12, atol=1e-9)
    assert floats.min() >= 0
    assert np.abs(out - floats).max() < 1.0 + 1e-9  # rounding moves no age by a whole unit


@pytest.mark.parametrize("method", METHODS)
def test_vectorised_equals_per_row(method, be):
    N = group_sums(be.year(2023)[..., :85])  # (11 regions, 3 sexes, 17)
    whole = graduate(N, LOWER, method=method, integer=True)
    for r in range(N.shape[0]):
        for s in range(3):
            np.testing.assert_array_equal(whole[r, s], graduate(N[r, s], LOWER, method=method, integer=True))


@pytest.mark.parametrize("method", ["sprague", "beers"])
def test_negative_rule_keeps_totals_and_other_groups(method):
    """A steep fall to tiny groups drives the linear multipliers negative; the rule
    zeroes negatives and rescales only inside the affected group."""
    N = np.array([9000.0, 6000, 2500, 600, 40, 3, 1, 0, 2, 50, 400])
    lower = np.arange(0, 55, 5)
    raw = N @ multiplier_matrix(method, N.size).T
    assert raw.min() < 0  # the case really produces negatives
    out = graduate(N, lower, method=method)
    assert out.min() >= 0
    np.testing.assert_allclose(group_sums(out), N, rtol=1e-12, atol=1e-12)
    neg_groups = (raw.reshape(-1, 5) < 0).any(axis=1)
    np.testing.assert_allclose(out.reshape(-1, 5)[~neg_groups], raw.reshape(-1, 5)[~neg_groups])
    g = int(np.flatnonzero(neg_groups & (N > 0))[0])
    pos = np.clip(raw.reshape(-1, 5)[g], 0, None)
    np.testing.assert_allclose(out.reshape(-1, 5)[g], pos * N[g] / pos.sum())


def test_open_group_kept_unchanged():
    N = np.array([[500, 450, 400, 380, 350, 300, 1234], [5, 4, 0, 3, 2, 1, 7]])
    out = graduate(N, np.arange(0, 35, 5), open_last=True, integer=True)
    assert out.shape == (2, 31)
    np.testing.assert_array_equal(out[:, -1], N[:, -1])
    np.testing.assert_array_equal(group_sums(out[:, :-1]), N[:, :-1])
    np.testing.assert_array_equal(out[:, :-1], graduate(N[:, :-1], np.arange(0, 30, 5), integer=True))
    axis = AgeAxis.five_year(open_at=30, unknown=False)
    np.testing.assert_array_equal(graduate(N, axis, open_last=True, integer=True), out)


def test_groups_need_not_start_at_zero():
    a = np.arange(15, 50, dtype=float)
    y = 100 + 3 * a - 0.05 * a**2
    out = graduate(group_sums(y), np.arange(15, 50, 5), method="sprague")
    np.testing.assert_allclose(out, y, atol=1e-9)


# ------------------------------------------------------------------ errors
def test_bad_input_raises_typed_errors():
    with pytest.raises(ParameterError, match="unknown graduation method"):
        graduate([1, 2, 3, 4, 5], LOWER[:5], method="spline")
    with pytest.raises(ParameterError, match="5-year groups"):
        graduate([1, 2, 3], [0, 5, 15])
    with pytest.raises(ParameterError, match="one lower bound per age group"):
        graduate([1, 2, 3], [0, 5])
    with pytest.raises(ParameterError, match="at least 5"):
        graduate([1, 2, 3, 4], [0, 5, 10, 15], method="sprague")
    with pytest.raises(DataError) as e:
        graduate([10, 20, -3, 4, 5], LOWER[:5])
    assert e.value.age == "Y10-14"
    with pytest.raises(DataError) as e:
        graduate([10.0, np.nan, 3, 4, 5], LOWER[:5])
    assert e.value.age == "Y5-9"
    with pytest.raises(DataError) as e:
        graduate([10, 20, 30, 40, 50, -1], LOWER[:6], open_last=True)
    assert e.value.age == "Y_GE25" and "negative count -1" in str(e.value)
    with pytest.raises(DataError, match="non-integer"):
        graduate([10.5, 2, 3, 4, 5], LOWER[:5], integer=True)
    with pytest.raises(ParameterError, match="UNK"):
        graduate(np.ones(18), AgeAxis.five_year(85))
    with pytest.raises(ParameterError, match="lam"):
        graduate(np.ones(5), LOWER[:5], method="pclm", lam=-1)


# ------------------------------------------------------------------ integer rounding
def test_to_integers_hand_worked():
    # quotas 3.4, 3.3, 3.3 -> floors 3, 3, 3, one unit left -> largest remainder (age 0)
    assert to_integers([3.4, 3.3, 3.3], [10]).tolist() == [4, 3, 3]
    # exact tie: 10/3 each -> the lower age wins the remaining unit
    assert to_integers([1.0, 1.0, 1.0], [10]).tolist() == [4, 3, 3]
    # two groups of width 2, values scaled to the totals first: quotas 0.5, 1.5 | 3.5, 3.5
    assert to_integers([1.0, 3.0, 5.0, 5.0], [2, 7]).tolist() == [1, 1, 4, 3]
    # all-zero values with a positive total: uniform quotas 2.5, 2.5 -> 3, 2
    assert to_integers([0.0, 0.0], [5]).tolist() == [3, 2]
    assert to_integers([0.2, 0.8, 0.0], [0]).tolist() == [0, 0, 0]


def _hamilton_reference(values, totals, width):
    """Plain-Python Hamilton apportionment, one group at a time."""
    out = []
    for g, T in enumerate(totals):
        v = [max(x, 0.0) for x in values[g * width : (g + 1) * width]]
        s = sum(v)
        q = [T * (x / s) for x in v] if s > 0 else [T / width] * width
        n = [math.floor(x) for x in q]
        left = int(T) - sum(n)
        for i in sorted(range(width), key=lambda i: (-(q[i] - math.floor(q[i])), i))[:left]:
            n[i] += 1
        out += n
    return out


def test_to_integers_matches_reference_implementation():
    rng = np.random.default_rng(7)
    for _ in range(200):
        G, w = int(rng.integers(1, 6)), int(rng.integers(1, 7))
        v = rng.gamma(0.7, 10.0, G * w) * (rng.random(G * w) > 0.2)
        v = np.where(rng.random(G * w) < 0.3, np.round(v), v)  # exact ties
        T = rng.integers(0, 60, G)
        got = to_integers(v, T, width=w)
        assert got.tolist() == _hamilton_reference(v.tolist(), T.tolist(), w)
        assert group_sums(got, w).tolist() == T.tolist()


def test_to_integers_vectorised_and_errors():
    rng = np.random.default_rng(3)
    v = rng.random((4, 3, 20)) * 50
    T = np.round(group_sums(v)).astype(int)
    whole = to_integers(v, T)
    for i in range(4):
        for j in range(3):
            np.testing.assert_array_equal(whole[i, j], to_integers(v[i, j], T[i, j]))
    with pytest.raises(DataError):
        to_integers([1.0, -2.0], [3])
    with pytest.raises(DataError):
        to_integers([1.0, 2.0], [2.5])
    with pytest.raises(ParameterError):
        to_integers(np.ones(7), [3, 4])


# ------------------------------------------------------------------ real data: accuracy
def _mape(est, real):
    """Mean absolute percentage error over ages 5-79 (last axis = single ages 0..84)."""
    e, r = est[..., AGES_5_79], real[..., AGES_5_79]
    return 100.0 * np.mean(np.abs(e - r) / r, axis=-1)


@pytest.fixture(scope="module")
def mape_real(be, countries):
    """MAPE per series (rows: 11 BE regions x F M T, then 5 countries x F M T)."""
    real = np.concatenate([be.year(2023)[..., :85].reshape(-1, 85), countries.year(2023)[..., :85].reshape(-1, 85)])
    N = group_sums(real)
    return {m: _mape(graduate(N, LOWER, method=m, integer=True), real) for m in METHODS}


@pytest.mark.parametrize("method", SMOOTH)
def test_beats_uniform_split_in_every_region_country_and_sex(method, mape_real):
    """Per series (not pooled): each BE NUTS 2 region and each country, each of F, M, T."""
    ours, unif = mape_real[method], mape_real["uniform"]
    assert ours.shape == (48,)
    worst = int(np.argmax(ours - unif))
    assert np.all(ours < unif), f"series {worst}: {ours[worst]:.3f} % vs uniform {unif[worst]:.3f} %"


def test_default_method_has_lowest_pooled_error(mape_real):
    pooled = {m: v.mean() for m, v in mape_real.items()}
    assert min(pooled, key=pooled.get) == DEFAULT_METHOD, pooled
    assert pooled[DEFAULT_METHOD] < 0.7 * pooled["uniform"]


# ------------------------------------------------------------------ real data: TFR check
def _tfr(births, unknown, W):
    """TFR = sum_{x=15}^{49} b_x / W_x. Births of unknown age of mother are spread
    over 15-49 in proportion; births outside 15-49 (TOTAL - UNK - sum) are left out:
    the extract does not say how many are under 15 and how many 50+."""
    b = births * (1.0 + unknown[:, None] / births.sum(axis=-1, keepdims=True))
    return np.sum(b / W, axis=-1)


@pytest.fixture(scope="module")
def tfr_case(be, countries):
    codes = ("BE",) + countries.codes
    births = load_fordagec(codes)

    def female(method=None):
        W = 0
        for y in (2023, 2024):
            fb, fc = be.year(y)[:, 0, :85], countries.year(y)[:, 0, :85]
            if method is not None:  # BE: graduate every NUTS 2 region, then add them up
                fb = graduate(group_sums(fb), LOWER, method=method, integer=True)
                fc = graduate(group_sums(fc), LOWER, method=method, integer=True)
            W = W + np.vstack([fb.sum(axis=0, keepdims=True), fc])
        return (W / 2.0)[:, 15:50]

    real = _tfr(births.by_age, births.unknown, female())
    return births, real, {m: _tfr(births.by_age, births.unknown, female(m)) for m in METHODS}


def test_tfr_real_exposure_is_plausible(tfr_case):
    births, real, _ = tfr_case
    assert births.codes == ("BE", "DE", "ES", "FR", "IT", "PL")
    assert np.all(births.outside >= 0) and np.all(births.unknown >= 0)
    assert np.all((real > 1.0) & (real < 2.0))


@pytest.mark.parametrize("method", SMOOTH)
def test_tfr_on_graduated_exposure_within_0002(method, tfr_case):
    _, real, grad = tfr_case
    diff = np.abs(grad[method] - real)
    assert np.all(diff < 0.002), dict(zip(("BE", "DE", "ES", "FR", "IT", "PL"), diff.round(5), strict=True))


def test_tfr_uniform_split_is_worse_than_default(tfr_case):
    _, real, grad = tfr_case
    d_default = np.abs(grad[DEFAULT_METHOD] - real)
    d_uniform = np.abs(grad["uniform"] - real)
    assert np.all(d_default < d_uniform)
    assert np.any(d_uniform > 0.002)  # the check is not trivially met: a flat split fails it
