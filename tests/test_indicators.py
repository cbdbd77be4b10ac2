"""Indicators from published cells and their gradients.

Independent truth: central finite differences of the *exact* indicator pipeline
(UNK spread -> grouping -> rates -> life table) against the analytic gradient with
respect to every published cell, on real Belgian 2021 counts with UNK cells made
non-zero (the published UNK cells are mostly zero), at single-age and 5-year
publication.
"""

import numpy as np
import pytest

from _fixtures_lifetable import belgian_counts, published_e
from demonoise.core.counts import AgeAxis, spread_unknown
from demonoise.core.errors import ParameterError
from demonoise.core.layout import Layout, publish
from demonoise.demography.indicators import (
    asfr,
    asmr,
    life_expectancy,
    linearise_asfr,
    linearise_asmr,
    linearise_e,
    linearise_tfr,
    tfr,
)

BIRTH_AGES = AgeAxis.from_labels(["Y_LT15"] + [f"Y{a}" for a in range(15, 50)] + ["Y_GE50", "UNK"])


@pytest.fixture(scope="module")
def be(data_dir):
    c = belgian_counts(data_dir).select(["BE10", "BE34"])
    deaths, p0, p1 = (np.array(v) for v in (c.deaths, c.pop_start, c.pop_end))
    deaths[..., -1] += [[3, 1, 4], [0, 2, 2]]  # UNK cells
    p0[..., -1] += 50
    p1[..., -1] += [[10, 0, 10], [7, 7, 14]]
    rng = np.random.default_rng(5)
    x = np.arange(15, 50)
    births = np.zeros((2, BIRTH_AGES.size))
    births[:, 1:36] = rng.poisson(400 * np.exp(-(((x - 31) / 6.0) ** 2)), (2, 35))
    births[:, 0], births[:, -2], births[:, -1] = 2, 5, 9
    return c.replace(deaths=deaths, pop_start=p0, pop_end=p1, births=births, birth_ages=BIRTH_AGES)


def _fd_check(f_value, lin, cells: dict, picks: dict, rtol=2e-5):
    """Compare lin.grads[m][..., k, a] with central differences of f_value(cells)."""
    worst = 0.0
    for m, idx in picks.items():
        base = cells[m].astype(float)
        for a in idx:
            h = np.maximum(1e-3, 1e-5 * np.abs(base[..., a]))
            up, dn = dict(cells), dict(cells)
            up[m], dn[m] = base.copy(), base.copy()
            up[m][..., a] += h
            dn[m][..., a] -= h
            fd = (f_value(up) - f_value(dn)) / (2 * h[..., None])
            an = lin.grads[m][..., :, a]
            # relative to the largest gradient of that indicator over all cells of the table
            scale = np.maximum(np.abs(lin.grads[m]).max(axis=-1), 1e-300)
            err = np.abs(fd - an) / scale
            worst = max(worst, float(np.nanmax(err)))
    assert worst < rtol, worst
    return worst


@pytest.mark.parametrize("granularity", ["single", "5y"])
def test_e_gradient_matches_finite_differences(be, granularity):
    c = publish(be, granularity)
    lay = Layout.of(c)
    idx = [0, 1, lay.lt_lower.size - 2, lay.lt_lower.size - 1] if granularity == "5y" else [0, 65, 85]
    lin = linearise_e(lay, c.deaths, c.pop_start, c.pop_end, ages=idx)
    cells = {"deaths": c.deaths, "pop_start": c.pop_start, "pop_end": c.pop_end}

    def f(cl):
        return life_expectancy(lay, cl["deaths"], cl["pop_start"], cl["pop_end"], check=False).e[..., idx]

    A = c.ages.size
    picks = {m: [0, 1, 30, 64, 65, 84 if granularity == "single" else 15, A - 3, A - 2, A - 1] for m in cells}
    picks = {m: sorted(set(i for i in v if i < A)) for m, v in picks.items()}
    _fd_check(f, lin, cells, picks)
    # e_k does not depend on cells below age k (before the UNK spread couples them)
    if granularity == "single":
        g = linearise_e(lay, c.deaths, c.pop_start, c.pop_end, ages=[65]).grads["deaths"]
        unk0 = c.replace(deaths=np.concatenate([c.deaths[..., :-1], 0 * c.deaths[..., -1:]], -1))
        g0 = linearise_e(lay, unk0.deaths, unk0.pop_start, unk0.pop_end, ages=[65]).grads["deaths"]
        assert np.all(g0[..., 0, :65] == 0) and np.all(g0[..., 0, 65:-1] != 0)
        assert np.any(g[..., 0, :65] != 0)  # with UNK deaths, every cell moves e65 slightly


def test_asmr_gradient_and_rate(be):
    lay = Layout.of(be)
    lin = linearise_asmr(lay, be.deaths, be.pop_start, be.pop_end)
    cells = {"deaths": be.deaths, "pop_start": be.pop_start, "pop_end": be.pop_end}
    _fd_check(
        lambda cl: asmr(lay, cl["deaths"], cl["pop_start"], cl["pop_end"]),
        lin,
        cells,
        {m: [0, 40, 90, 100, 101] for m in cells},
    )
    # without UNK the relative variance is Var(D)/D^2 + Var(E)/E^2 (docs/design.md, First-order propagation)
    # (an UNK cell, even a zero one, carries noise that moves every rate: drop it here)
    c0 = be.replace(
        ages=be.ages.without_unknown(),
        deaths=be.deaths[..., :-1],
        pop_start=be.pop_start[..., :-1],
        pop_end=be.pop_end[..., :-1],
    )
    l0 = linearise_asmr(Layout.of(c0), c0.deaths, c0.pop_start, c0.pop_end)
    V = 1.0
    var = l0.variance({m: np.full(c0.deaths.shape, V) for m in cells})
    m = l0.value
    D = c0.deaths.astype(float)
    E = (c0.pop_start + c0.pop_end) / 2.0
    ok = D > 0
    np.testing.assert_allclose(var[ok] / m[ok] ** 2, (V / D**2 + (V / 2) / E**2)[ok], rtol=1e-12)


@pytest.mark.parametrize("granularity", ["single", "5y"])
def test_fertility_gradients(be, granularity):
    c = publish(be, granularity)
    lay = Layout.of(c)
    f0, f1 = c.pop_start[:, 0], c.pop_end[:, 0]
    cells = {"births": c.births, "pop_start": f0, "pop_end": f1}
    lin = linearise_asfr(lay, c.births, f0, f1)
    B, A = c.birth_ages.size, c.ages.size
    bp = [0, 1, B // 2, B - 2, B - 1]
    pp = [15, 30, 49, A - 1] if granularity == "single" else [3, 5, 9, A - 1]
    picks = {"births": bp, "pop_start": pp, "pop_end": pp}
    _fd_check(lambda cl: asfr(lay, cl["births"], cl["pop_start"], cl["pop_end"]), lin, cells, picks)
    lt = linearise_tfr(lay, c.births, f0, f1)
    _fd_check(lambda cl: tfr(lay, cl["births"], cl["pop_start"], cl["pop_end"])[..., None], lt, cells, picks)


def test_tfr_counts_every_birth_and_groups_agree(be):
    """Births <15 count at 15, >=50 at 49, UNK spread: TFR uses every live birth; the 5-year
    TFR (5 x sum of group rates) equals the single-age TFR when exposure is flat within groups."""
    lay = Layout.of(be)
    b = be.births
    f = asfr(lay, b, be.pop_start[:, 0], be.pop_end[:, 0])
    W = ((spread_unknown(be.pop_start[:, 0], be.ages) + spread_unknown(be.pop_end[:, 0], be.ages)) / 2.0)[:, 15:50]
    # UNK births spread in proportion to known births (incl. the two boundary cells)
    known = b[:, :-1].astype(float)
    spread = known * (1 + b[:, -1:] / known.sum(1, keepdims=True))
    expect_births = spread[:, 1:36].copy()
    expect_births[:, 0] += spread[:, 0]
    expect_births[:, -1] += spread[:, 36]
    np.testing.assert_allclose(f * W, expect_births, rtol=1e-12)
    np.testing.assert_allclose((f * W).sum(1), b.sum(1), rtol=1e-12)
    flat = be.replace(pop_start=np.full(be.pop_start.shape, 1000), pop_end=np.full(be.pop_end.shape, 1000))
    t1 = tfr(Layout.of(flat), flat.births, flat.pop_start[:, 0], flat.pop_end[:, 0])
    g = publish(flat, "5y")
    t5 = tfr(Layout.of(g), g.births, g.pop_start[:, 0], g.pop_end[:, 0])
    np.testing.assert_allclose(t5, t1, rtol=1e-12)


def test_life_expectancy_from_published_cells_matches_eurostat(data_dir):
    c = belgian_counts(data_dir)
    lt = life_expectancy(Layout.of(c), c.deaths, c.pop_start, c.pop_end)
    e0 = published_e(data_dir, "Y_LT1")
    assert np.abs(lt.e[..., 0] - e0).max() < 0.055


def test_layout_errors(be):
    with pytest.raises(ParameterError, match="open age 83"):
        Layout.of(publish(be, "5y"), open_age=83)
    with pytest.raises(ParameterError, match="single ages cannot be recovered"):
        publish(publish(be, "5y"), "single")
    with pytest.raises(ParameterError, match="unknown granularity"):
        publish(be, "10y")


def test_lean_e_path_equals_life_table(be):
    """The Monte Carlo's lean e_k path gives the full life table's e_k, also with
    zero cells, abridged widths and a0."""
    from demonoise.demography.indicators import lifetable_inputs
    from demonoise.demography.lifetable import e_only, life_table

    for gran in ("single", "5y-infant"):
        c = publish(be, gran)
        lay = Layout.of(c)
        D, E = lifetable_inputs(lay, c.deaths, c.pop_start, c.pop_end)
        D, E = D.copy(), E.copy()
        D[0, 0, 3] = 0.0
        D[1, 1, 5] = E[1, 1, 5] = 0.0  # an empty cell: the zero-cell rule m = 0
        lt = life_table(D, E, lay.lt_lower)
        idx = [0, 1, lay.lt_lower.size - 1]
        np.testing.assert_allclose(e_only(D, E, lay.lt_lower, idx), lt.e[..., idx], rtol=1e-13)
        # with a leading replicate axis, as the Monte Carlo calls it
        np.testing.assert_allclose(
            e_only(np.stack([D, D]), np.stack([E, E]), lay.lt_lower, idx)[1], lt.e[..., idx], rtol=1e-13
        )


@pytest.mark.parametrize("granularity", ["single", "5y"])
def test_structured_variance_equals_materialised_gradients(be, granularity):
    """Variances and first-order shifts are computed from the structured gradient (inner
    gradient + cell map) without forming the cell gradients; they must equal the sums
    over the materialised gradients, UNK chain and uniform-spread rows included."""
    from demonoise.uncertainty.propagation import linearise

    c = be
    # a row whose known deaths are all zero but whose UNK cell is not: uniform spread
    d = np.array(c.deaths)
    d[1, 0, :-1] = 0
    d[1, 0, -1] = 4
    d[1, 0, 90] = 1  # keep the open age group non-empty
    d[1, 0, :-1] = 0
    lz_ok = linearise(c.replace(deaths=d), granularity=granularity, indicators=("asmr", "asfr", "tfr"))
    lz = linearise(c, granularity=granularity)
    rng = np.random.default_rng(3)
    for lzz in (lz, lz_ok):
        for name, block in lzz.blocks.items():
            lin = block.lin
            cells = lzz.cells(block.female_only)
            var = {m: rng.random(np.shape(cells[m])) for m in lin.tables}
            bias = {m: rng.normal(size=np.shape(cells[m])) for m in lin.tables}
            if block.female_only:
                var = {m: v[:, None] for m, v in var.items()}
                bias = {m: b[:, None] for m, b in bias.items()}
            fast_v, fast_b = lin.variance(var), lin.shift(bias)
            slow_v = sum(np.einsum("...ka,...a->...k", g * g, var[m]) for m, g in lin.grads.items())
            slow_b = sum(np.einsum("...ka,...a->...k", g, bias[m]) for m, g in lin.grads.items())
            np.testing.assert_allclose(fast_v, slow_v, rtol=1e-10, atol=0, err_msg=name)
            np.testing.assert_allclose(fast_b, slow_b, rtol=1e-9, atol=1e-15 * np.abs(slow_b).max(), err_msg=name)


# ------------------------------------------------------------------ grouping of published cells
@pytest.mark.parametrize(
    "starts,n_cells,first",
    [
        ([0, 1, 2, 3, 4], 9, 0),  # singles then one open group (the NUTS 2 life-table layout)
        ([0, 5, 10, 15], 20, 0),  # 5-year groups: reduceat
        ([0, 1, 5], 12, 2),  # cells outside the groups at both ends
        ([0], 6, 0),  # one group
    ],
)
def test_grouping_equals_the_dense_product(starts, n_cells, first):
    from demonoise.core.layout import Grouping

    last = n_cells - 1  # the last cell (e.g. UNK) belongs to no group
    M = np.zeros((n_cells, len(starts)))
    bounds = list(starts) + [last - first]
    for g in range(len(starts)):
        M[first + bounds[g] : first + bounds[g + 1], g] = 1.0
    x = np.random.default_rng(3).poisson(50.0, size=(4, 2, 3, n_cells)).astype(float)
    got = Grouping(M)(x)
    assert Grouping(M).fast
    np.testing.assert_array_equal(got, x @ M)
