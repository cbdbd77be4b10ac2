"""Life table and closed-form derivatives of e_x, checked against independent truth:

* central finite differences of the life table (complete and abridged tables, real data);
* Eurostat's published e0 and e65 (demo_r_mlifexp, Belgian NUTS 2, 2021);
* an independent loop implementation of the life table and of Chiang's method II
  variance (q-based, plus Silcocks et al. 2001's open-interval term).

``PYTHONPATH=lib:tests .venv/bin/python tests/test_lifetable.py`` prints the measured figures.
"""

# ruff: noqa: E741 -- l is the life table's survivorship l_x, as demographers write it
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _fixtures_lifetable import belgian_counts, published_e, to_lifetable_axis
from demonoise.core.errors import DataError, ParameterError
from demonoise.demography.lifetable import (
    EUROSTAT_A0,
    e_derivative,
    life_table,
    life_table_from_rates,
    lifetable_lower,
)

DATA = Path(__file__).parent / "data"
TABLES = {
    "complete": lifetable_lower(85),
    "abridged_0_1_5": lifetable_lower(85, width=5, infant=True),
    "abridged_5y": lifetable_lower(85, width=5),
}


def _be(lower):
    return to_lifetable_axis(belgian_counts(DATA), lower)


@pytest.fixture(scope="module")
def be_counts():
    return belgian_counts(DATA)


# ----------------------------------------------------------------- independent reference
def loop_life_table(D, E, lower, a0):
    """Independent, deliberately plain life table: one (D, E) vector, Python loops."""
    X = len(lower)
    n = [lower[i + 1] - lower[i] for i in range(X - 1)]
    a = [0.5] * (X - 1)
    a[0] = a0
    m = [D[i] / E[i] for i in range(X)]
    q = [n[i] * m[i] / (1 + n[i] * (1 - a[i]) * m[i]) for i in range(X - 1)] + [1.0]
    l = [1.0]
    for i in range(X - 1):
        l.append(l[-1] * (1 - q[i]))
    L = [l[i] * n[i] - (l[i] - l[i + 1]) * n[i] * (1 - a[i]) for i in range(X - 1)] + [l[-1] / m[-1]]
    T = [0.0] * X
    acc = 0.0
    for i in reversed(range(X)):
        acc += L[i]
        T[i] = acc
    e = [T[i] / l[i] for i in range(X)]
    return dict(n=n, a=a, m=m, q=q, l=l, e=e)


def chiang_var_e0(D, E, lower, a0):
    """Chiang's method II (q-based) Var(e_0), plus Silcocks et al. (2001) open-interval term.

    Var(e_0) = sum_{x<w} l_x^2 ((1 - a_x) n_x + e_{x+n})^2 Var(q_x) / l_0^2 + l_w^2 Var(m_w) / m_w^4,
    Var(q_x) = q_x^2 (1 - q_x) / D_x,  Var(m_w) = D_w / E_w^2.
    """
    t = loop_life_table(D, E, lower, a0)
    v = 0.0
    for i in range(len(lower) - 1):
        if D[i] > 0:
            var_q = t["q"][i] ** 2 * (1 - t["q"][i]) / D[i]
            v += t["l"][i] ** 2 * ((1 - t["a"][i]) * t["n"][i] + t["e"][i + 1]) ** 2 * var_q
    w = len(lower) - 1
    v += t["l"][w] ** 2 / t["m"][w] ** 4 * (D[w] / E[w] ** 2)
    return v / t["l"][0] ** 2


# ------------------------------------------------------------------------ measurements
def fd_max_rel_error(lower, ks_ages=(0, 65)):
    """Max relative error of e_derivative vs central differences of life_table, and the
    largest |FD| where the closed form is exactly 0 (x < k), over all BE regions/sexes."""
    D, E, _ = _be(lower)
    lt = life_table(D, E, lower)
    ks = [lt.index(k) for k in ks_ages]
    an = e_derivative(lt, ks)  # (R, S, K, X)
    X = len(lower)
    m = lt.m
    h = np.where(m > 0, 1e-4 * m, 1e-7)  # relative step; absolute where m_x = 0
    eye = np.eye(X)  # perturb one age at a time, all ages at once on a new leading axis
    dD = (h * E)[None] * eye[:, None, None, :]  # (X, R, S, X)
    ep = life_table(D[None] + dD, E[None], lower, check=False).e[..., ks]
    em = life_table(D[None] - dD, E[None], lower, check=False).e[..., ks]
    hx = np.moveaxis(h, -1, 0)  # (X, R, S)
    fd = np.moveaxis((ep - em) / (2 * hx[..., None]), 0, -1)  # (R, S, K, X)
    upper = np.array(ks)[:, None] <= np.arange(X)[None, :]
    rel = np.abs(fd - an)[..., upper] / np.abs(an)[..., upper]
    assert np.all(an[..., ~upper] == 0.0)
    lower_fd = np.abs(fd[..., ~upper]).max() if (~upper).any() else 0.0
    return float(rel.max()), float(lower_fd), float(np.abs(an).max()), bool((m == 0).any())


def eurostat_diffs(use_jan1=False):
    lower = TABLES["complete"]
    D, E, P0 = _be(lower)
    lt = life_table(D, P0 if use_jan1 else E, lower)
    d0 = np.abs(lt.e[..., 0] - published_e(DATA, "Y_LT1"))
    d65 = np.abs(lt.e[..., lt.index(65)] - published_e(DATA, "Y65"))
    return float(d0.max()), float(d65.max())


def chiang_max_rel_diff():
    lower = TABLES["complete"]
    D, E, _ = _be(lower)
    lt = life_table(D, E, lower)
    g = e_derivative(lt, 0)  # (R, S, X)
    with np.errstate(divide="ignore", invalid="ignore"):
        var_m = np.where(E > 0, D / E**2, 0.0)
    ours = np.sum(g**2 * var_m, axis=-1)
    R, S, _ = D.shape
    ref = np.array(
        [
            [chiang_var_e0(D[r, s].tolist(), E[r, s].tolist(), lower.tolist(), EUROSTAT_A0) for s in range(S)]
            for r in range(R)
        ]
    )
    return float(np.max(np.abs(ours / ref - 1))), ours, ref


# --------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("table", list(TABLES))
def test_derivative_matches_central_differences(table):
    rel, below, scale, has_zero_rate = fd_max_rel_error(TABLES[table])
    assert rel < 1e-5
    # x < k: closed form is exactly 0 (asserted inside); the numerical one is 0 up to rounding
    assert below < 1e-7 * scale
    if table == "complete":
        assert has_zero_rate  # real small-region data contain m_x = 0: the absolute step is exercised


def test_life_table_matches_independent_loop_implementation():
    lower = TABLES["complete"]
    D, E, _ = _be(lower)
    lt = life_table(D, E, lower)
    for r, s in [(0, 0), (5, 1), (9, 2), (10, 0)]:
        ref = loop_life_table(D[r, s].tolist(), E[r, s].tolist(), lower.tolist(), EUROSTAT_A0)
        np.testing.assert_allclose(lt.l[r, s], ref["l"], rtol=1e-12)
        np.testing.assert_allclose(lt.e[r, s], ref["e"], rtol=1e-12)
    np.testing.assert_allclose(lt.L.sum(-1), lt.e[..., 0], rtol=1e-12)
    np.testing.assert_allclose(lt.d.sum(-1), 1.0, rtol=1e-12)  # everybody dies once


def test_reproduces_eurostat_published_e0_e65_belgium_2021():
    d0, d65 = eurostat_diffs()
    assert d0 <= 0.055 and d65 <= 0.055  # published values are rounded to 0.1 y
    j0, j65 = eurostat_diffs(use_jan1=True)
    assert j0 > max(d0, 0.055) and j65 > max(d65, 0.055)  # 1 January population misses


def test_poisson_variance_agrees_with_chiang_method_ii():
    rel, ours, ref = chiang_max_rel_diff()
    assert rel < 1e-3
    assert np.all(ref > 0) and ours.shape == (11, 3)


def test_derivative_selection_and_shapes():
    lower = TABLES["abridged_0_1_5"]
    D, E, _ = _be(lower)
    lt = life_table(D, E, lower)
    full = e_derivative(lt)
    assert full.shape == D.shape + (len(lower),)
    np.testing.assert_array_equal(e_derivative(lt, [0, lt.index(65)]), full[..., [0, lt.index(65)], :])
    np.testing.assert_array_equal(e_derivative(lt, lt.index(65)), full[..., lt.index(65), :])
    # open interval: d e_w / d m_w = -1 / m_w^2 since e_w = 1 / m_w
    np.testing.assert_allclose(full[..., -1, -1], -1 / lt.m[..., -1] ** 2, rtol=1e-14)
    with pytest.raises(ParameterError):
        e_derivative(lt, [len(lower)])


# ----------------------------------------------------------------------- conventions
def test_a0_defaults_follow_eurostat():
    lower = TABLES["complete"]
    m = np.full(86, 0.01)
    m[0], m[-1] = 0.004, 0.15
    lt = life_table_from_rates(m, lower)
    assert lt.a[0] == EUROSTAT_A0 and np.all(lt.a[1:] == 0.5)
    q0 = m[0] / (1 + 0.8 * m[0])
    assert lt.q[0] == pytest.approx(q0, rel=1e-14) and lt.L[0] == pytest.approx(1 - 0.8 * q0, rel=1e-14)
    assert life_table_from_rates(m, lower, a0=0.5).a[0] == 0.5
    # a per-interval array is taken as given; a 0-4 first interval keeps a = 0.5
    assert life_table_from_rates(m, lower, a=np.full(86, 0.3)).a[0] == 0.3
    assert life_table_from_rates(m[:18], lifetable_lower(85, width=5)).a[0] == 0.5


def test_abridged_widths_enter_q_and_L():
    lower = lifetable_lower(10, width=5)  # 0-4, 5-9, 10+
    m = np.array([0.002, 0.001, 0.1])
    lt = life_table_from_rates(m, lower, a=np.array([0.3, 0.5, 0.5]))
    q0 = 5 * 0.002 / (1 + 5 * 0.7 * 0.002)
    q1 = 5 * 0.001 / (1 + 5 * 0.5 * 0.001)
    l1, l2 = 1 - q0, (1 - q0) * (1 - q1)
    e0 = 5 * (1 - 0.7 * q0) + 5 * l1 * (1 - 0.5 * q1) + l2 / 0.1
    assert lt.e[0] == pytest.approx(e0, rel=1e-14)
    assert lt.labels == ("Y_LT5", "Y5-9", "Y_GE10")


def test_zero_exposure_and_zero_deaths_in_closed_interval_means_m_zero():
    lower = TABLES["complete"]
    D, E, _ = _be(lower)
    D, E = D[0, 0].copy(), E[0, 0].copy()
    D[37] = E[37] = 0.0
    lt = life_table(D, E, lower)
    assert lt.m[37] == 0 and lt.q[37] == 0 and lt.L[37] == lt.l[37] and np.isfinite(lt.e).all()
    E2 = E.copy()
    E2[37] = 1000.0  # same m = 0 with positive exposure: identical table
    np.testing.assert_array_equal(life_table(D, E2, lower).e, lt.e)


# ----------------------------------------------------------------------- bad input
def _small():
    lower = TABLES["abridged_5y"]
    D, E, _ = _be(lower)
    return lower, D[:2, :2].copy(), E[:2, :2].copy()


@pytest.mark.parametrize(
    "case, age, measure",
    [
        ("exposure_zero", "Y37", "exposure"),
        ("negative_deaths", "Y5-9", "deaths"),
        ("negative_exposure", "Y_LT5", "exposure"),
        ("empty_open", "Y_GE85", "deaths"),
        ("missing", "Y80-84", "deaths"),
        ("q_ge_1", "Y80-84", "rate"),
    ],
)
def test_bad_input_raises_data_error_naming_the_interval(case, age, measure):
    if case == "exposure_zero":
        lower = TABLES["complete"]
        D, E, _ = _be(lower)
        D, E = D[:2, :2].copy(), E[:2, :2].copy()
        D[1, 0, 37], E[1, 0, 37] = 2.0, 0.0
    else:
        lower, D, E = _small()
        i = {"Y5-9": 1, "Y_LT5": 0, "Y_GE85": -1, "Y80-84": -2}[age]
        if case == "negative_deaths":
            D[1, 0, i] = -1.0
        elif case == "negative_exposure":
            E[1, 0, i] = -5.0
        elif case == "empty_open":
            D[1, 0, i] = 0.0
        elif case == "missing":
            D[1, 0, i] = np.nan
        elif case == "q_ge_1":
            D[1, 0, i] = E[1, 0, i]  # m = 1 >= 1 / (n a) = 0.4 for a 5-year interval
    with pytest.raises(DataError) as err:
        life_table(D, E, lower)
    assert err.value.age == age and err.value.measure == measure
    assert err.value.key == (1, 0)  # leading (region, sex) position, for the caller to name
    assert age in str(err.value)
    # Monte Carlo mode: no error, nan/inf propagate instead
    lt = life_table(D, E, lower, check=False)
    if case in ("exposure_zero", "missing"):
        assert np.isnan(lt.e[1, 0, 0])
    elif case == "empty_open":
        assert np.isposinf(lt.e[1, 0, 0])
    elif case == "q_ge_1":
        assert lt.q[1, 0, -2] > 1 and lt.l[1, 0, -1] < 0  # computed as such: negative survivors
    else:
        assert np.isfinite(lt.e[1, 0]).all()  # negative counts give negative rates, computed
    assert np.isfinite(lt.e[0]).all()  # other tables unaffected


def test_check_false_empty_open_group_gives_inf():
    lower, D, E = _small()
    D[0, 1, -1] = 0.0
    lt = life_table(D, E, lower, check=False)
    assert np.isposinf(lt.e[0, 1]).all() and np.isfinite(lt.e[1]).all()


def test_bad_parameters():
    m = np.full(18, 0.01)
    with pytest.raises(ParameterError):
        life_table_from_rates(m, lifetable_lower(85, width=5)[::-1])
    with pytest.raises(ParameterError):
        life_table_from_rates(m, lifetable_lower(85, width=5), a=1.5)
    with pytest.raises(ParameterError):
        life_table_from_rates(m, lifetable_lower(85, width=5), a0=-0.1)
    with pytest.raises(ParameterError):
        lifetable_lower(84, width=5)
    with pytest.raises(DataError):
        life_table(np.ones(17), np.ones(17), lifetable_lower(85, width=5))


def test_input_arrays_are_not_frozen_or_changed():
    lower, D, E = _small()
    D0 = D.copy()
    lt = life_table(D, E, lower)
    D[0, 0, 0] += 1  # still writeable
    assert not lt.e.flags.writeable and lt.m[0, 0, 0] == D0[0, 0, 0] / E[0, 0, 0]


# ------------------------------------------------------------------------ print figures
if __name__ == "__main__":
    for name, lo in TABLES.items():
        rel, below, scale, _ = fd_max_rel_error(lo)
        print(f"FD vs closed form ({name}, k = 0, 65): max rel error {rel:.2e}; max |FD| at x < k {below:.1e}")
    d0, d65 = eurostat_diffs()
    j0, j65 = eurostat_diffs(use_jan1=True)
    print(
        f"vs Eurostat demo_r_mlifexp BE NUTS 2 2021 (a0 = {EUROSTAT_A0}): max |e0 diff| {d0:.4f} y, max |e65 diff| "
        f"{d65:.4f} y"
    )
    print(f"  with 1 January population instead of the average: max |e0 diff| {j0:.4f} y, max |e65 diff| {j65:.4f} y")
    rel, ours, ref = chiang_max_rel_diff()
    print(
        f"Poisson Var(e0) vs Chiang II + Silcocks: max rel diff {rel:.2e} (sd e0 range "
        f"{np.sqrt(ours).min():.3f}-{np.sqrt(ours).max():.3f} y)"
    )
