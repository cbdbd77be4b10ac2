"""The fused Monte Carlo engine against independent truth.

* its samplers against the laws they claim (alias tables reconstructed exactly, against
  scipy's Poisson pmf and the k-fold convolution's moments; the alias kernel against
  ``GenericNoise.noise_from_uniform`` on the same uniforms, draw for draw);
* its compiled life table and ``UNK`` spreading against the numpy functions of
  ``demonoise.demography`` and ``demonoise.core.counts`` on the same numbers;
* its grouped draws against the per-cell path and the reference engine, z-scored
  (independent draws of the same law: ``z = (sd_a / sd_b - 1) sqrt(N)``);
* its results against the number and order of workers (identical, bit for bit).
"""

import numpy as np
import pytest
from scipy.stats import poisson

from _fixtures_lifetable import belgian_counts
from demonoise.core.counts import AgeAxis, spread_unknown
from demonoise.core.errors import ParameterError
from demonoise.demography.lifetable import closed_interval_constants, e_only, lifetable_lower
from demonoise.noise.models import GenericNoise, alias_table
from demonoise.uncertainty import mc_kernels as K
from demonoise.uncertainty.mc_blocks import exact_grouping
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import linearise


@pytest.fixture(scope="module")
def be(data_dir):
    return belgian_counts(data_dir)


def _law_of_alias(prob, value, alias_value):
    """Exact law drawn by an alias table: column j w.p. 1/n, then value j w.p. prob_j."""
    n = prob.size
    support = np.union1d(value, alias_value)
    p = np.zeros(support.size)
    np.add.at(p, np.searchsorted(support, value), prob / n)
    np.add.at(p, np.searchsorted(support, alias_value), (1.0 - prob) / n)
    return support, p


# ------------------------------------------------------------------ samplers
@pytest.mark.parametrize("lam", [0.0, 0.3, 3.0, 16.0, 250.0, 271_370.0])
def test_poisson_alias_table_holds_the_poisson_law(lam):
    offset, width, lo, prob, alias = K.poisson_alias_tables(np.array([lam]))
    k = np.arange(width[0])
    support, p = _law_of_alias(prob, lo[0] + k, lo[0] + alias.astype(np.int64))
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    truth = poisson.pmf(support, lam) if lam > 0 else (support == 0).astype(float)
    # scipy's pmf itself is off by up to ~1e-9 (relative) at lam ~ 3e5: its sum over this
    # support is 1 - 3.5e-10; the recurrence of the table is exact to ~1e-12
    np.testing.assert_allclose(p, truth, rtol=5e-9 if lam > 1e5 else 1e-10, atol=1e-15)
    outside = poisson.cdf(support[0] - 1, lam) + poisson.sf(support[-1], lam) if lam > 0 else 0.0
    assert outside < 1e-16  # the tails left out are below the resolution of a uniform


@pytest.mark.parametrize("V, k", [(1.0, 1), (1.0, 16), (5.0, 2), (0.25, 5)])
def test_sum_law_is_the_k_fold_convolution(V, k):
    g = GenericNoise(V)
    support, p = g.sum_law(k)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert (p * support).sum() == pytest.approx(0.0, abs=1e-12)
    assert (p * support**2).sum() == pytest.approx(k * g.exact_variance(), rel=1e-12)
    # fourth cumulant adds up too: kappa4 of the sum is k kappa4
    k4 = g.fourth_moment() - 3 * g.exact_variance() ** 2
    assert (p * support.astype(float) ** 4).sum() - 3 * (k * V) ** 2 == pytest.approx(k * k4, rel=1e-9, abs=1e-9)
    s2, p2 = _law_of_alias(*alias_table(support, p))
    np.testing.assert_allclose(p2, p[np.searchsorted(support, s2)], rtol=1e-12, atol=1e-17)


def test_alias_kernel_draws_what_generic_noise_draws_from_the_same_uniforms():
    g = GenericNoise(3.0)
    prob, value, alias_value = alias_table(*g.sum_law(1))
    raw = np.random.default_rng(11).bit_generator.random_raw((7, 5, 300))
    out = np.empty(raw.shape)
    K.alias_in_place(
        raw, out, np.zeros(5, dtype=np.int64), np.array([0]), np.array([prob.size]), prob,
        value.astype(float), alias_value.astype(float),
    )  # fmt: skip
    expected = g.noise_from_uniform(np.random.default_rng(11).random((7, 5, 300)))
    np.testing.assert_array_equal(out, expected)


# ------------------------------------------------------------------ compiled life table and spread
def test_compiled_life_table_equals_e_only():
    rng = np.random.default_rng(3)
    lower = lifetable_lower(85)
    X, B = lower.size, 50
    E = rng.uniform(200, 5000, (B, X))
    D = E * np.exp(-9.5 + 0.09 * lower) * rng.uniform(0.5, 1.5, (B, X))
    D[:3, 10] = E[:3, 10] = 0.0  # the zero-cell rule: m = 0
    nw, nb, na = closed_interval_constants(lower)
    ks = np.array([0, 1, 40, 65, 85])
    kpos = np.full(X, -1)
    kpos[ks] = np.arange(ks.size)
    out = np.empty((ks.size, B))
    K._life_e(
        np.ascontiguousarray(D.T), np.ascontiguousarray(E.T), nw, nb, na, kpos, out, np.empty((X, B)), np.empty((X, B))
    )
    np.testing.assert_allclose(out.T, e_only(D, E, lower, ks), rtol=1e-12)


def test_compiled_spread_equals_spread_unknown_then_grouping():
    """Draw groups of 1, 3 and 5 cells plus UNK; rows with a non-positive known total get
    the uniform spread."""
    rng = np.random.default_rng(5)
    axis = AgeAxis.single(8)  # Y_LT1, Y1..Y8, Y_GE9, UNK: 10 known cells
    group = np.array([0, 1, 1, 1, 2, 3, 3, 3, 3, 3])
    B, rows = 40, 4
    cells = rng.integers(-3, 20, (rows, axis.size, B)).astype(float)
    cells[1, :-1, :5] = 0.0  # known total 0
    cells[2, :-1, :5] = -1.0  # known total negative
    ng = 4
    base = np.zeros((rows, ng + 1, 1))
    extra = np.zeros((rows, ng + 1, B))
    np.add.at(extra.transpose(1, 0, 2), np.append(group, ng), cells.transpose(1, 0, 2))
    gsize = np.bincount(group).astype(float)
    gmap = np.array([0, 1, -1, 2])  # group 2 enters no output (as cells outside every indicator group)
    for r in range(rows):
        out = np.zeros((3, B))
        K._spread_into(base, extra, True, r, ng, True, gmap, gsize, axis.n_known, 0.5, out, np.empty(B), np.empty(B))
        spread = spread_unknown(cells[r].T, axis)  # (B, known)
        M = np.zeros((axis.n_known, 3))
        for a, gi in enumerate(group):
            if gmap[gi] >= 0:
                M[a, gmap[gi]] = 1.0
        np.testing.assert_allclose(out.T, 0.5 * spread @ M, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ grouped draws, per-cell path, reference
class _CellwiseNoise(GenericNoise):
    """Generic noise forced through the per-cell path (no sum_law)."""

    sum_law = None


def _z_between(a, b, n):
    """Two independent sd estimates from n replicates each: z = (sd_a / sd_b - 1) sqrt(n)."""
    return (a / b - 1.0) * np.sqrt(n)


@pytest.mark.slow
def test_grouped_draws_match_per_cell_draws_and_reference_engine(be):
    """e0 and e65 of 4 Belgian regions, V = 5: the fused engine's grouped draws (Poisson of
    group sums, 16-fold noise law for 85+), its per-cell path and the reference engine
    give the same sd of every component, within sampling error."""
    lz = linearise(be.select(["BE10", "BE21", "BE34", "BE35"]), indicators=("e",), e_ages=[0, 65])
    g, cw = GenericNoise(5.0), _CellwiseNoise(5.0)
    assert exact_grouping(g, False) and not exact_grouping(cw, False) and not exact_grouping(g, True)
    n = 4000
    kw = dict(n=n, indicators=("e",), quantiles=None, workers=1)
    grouped = monte_carlo(lz, g, seed=1, **kw)
    cells = monte_carlo(lz, cw, seed=2, **kw)
    ref = monte_carlo(lz, g, seed=3, engine="reference", **kw)
    assert ref.engine == "reference" and grouped.engine == "fused"
    for comp in ("noise", "poisson", "total"):
        sd = [r.stats[("e", comp)]["sd"] for r in (grouped, cells, ref)]
        for other in sd[1:]:
            z = _z_between(sd[0], other, n)
            assert np.abs(z).max() < 5, (comp, z.round(2))


def test_engine_is_checked(be):
    lz = linearise(be.select(["BE10"]), indicators=("e",), e_ages=[0])
    with pytest.raises(ParameterError, match="engine"):
        monte_carlo(lz, GenericNoise(1.0), n=10, engine="gpu")


# ------------------------------------------------------------------ seeds and workers
@pytest.mark.parametrize("floor_zero", [False, True])
def test_fused_results_identical_whatever_the_workers(be, floor_zero):
    """Several blocks (a small memory limit), 1 vs 2 worker processes: every statistic,
    quantiles included, is identical; another seed differs."""
    lz = linearise(be.select(["BE10", "BE34"]), indicators=("e", "asmr"), e_ages=[0])
    g = GenericNoise(1.0)
    kw = dict(n=200, indicators=("e", "asmr"), floor_zero=floor_zero, memory_limit=2.0e5)
    a = monte_carlo(lz, g, seed=5, workers=1, **kw)
    b = monte_carlo(lz, g, seed=5, workers=2, **kw)
    assert a.block == b.block and a.block < 100  # several blocks
    assert a.stats.keys() == b.stats.keys() and len(a.stats) == 6
    for key in a.stats:
        for stat in ("mean", "sd", "n_valid", "q_lo", "q_hi"):
            np.testing.assert_array_equal(a.stats[key][stat], b.stats[key][stat], err_msg=f"{key} {stat}")
    c = monte_carlo(lz, g, seed=6, workers=1, **kw)
    assert not np.array_equal(a.stats[("e", "noise")]["sd"], c.stats[("e", "noise")]["sd"])


def test_blocks_are_spawned_lazily_as_if_all_at_once():
    """The lazy block seeds (a chunk at a time) are the children SeedSequence.spawn gives
    all at once, with the same sizes: results do not change with the chunking."""
    import numpy as np

    from demonoise.uncertainty import montecarlo as M

    n, block = 3 * M._SPAWN_CHUNK * 2 + 7, 2
    lazy = list(M.blocks(n, block, 42))
    at_once = np.random.SeedSequence(42).spawn(-(-n // block))
    assert [s for s, _ in lazy] == [block] * (n // block) + [1]
    assert [c.spawn_key for _, c in lazy] == [c.spawn_key for c in at_once]
    pairs = zip(lazy, at_once, strict=True)
    assert all(a.generate_state(2).tolist() == b.generate_state(2).tolist() for (_, a), b in pairs)


# ------------------------------------------------------------------ large V: no tables
def test_rounded_draws_of_the_kernel_path_are_generic_noise_draws_from_the_same_bits():
    """The grouped path's rounded Gaussian draws (V >= ROUNDED_V) equal
    GenericNoise.noise_from_uniform of the uniforms Generator.random makes of the same bits."""
    from demonoise.uncertainty.mc_blocks import _rounded_draws

    g = GenericNoise(1e9)
    raw = np.random.default_rng(11).bit_generator.random_raw((4, 3, 200))
    out = _rounded_draws(raw, np.full(3, g.sum_sd(1)))
    np.testing.assert_array_equal(out, g.noise_from_uniform(np.random.default_rng(11).random((4, 3, 200))))


def test_large_V_groups_draw_sums_of_variance_k_V(be):
    """V = 10^9: the plan has no alias table, one rounded Gaussian per draw group with sd
    sqrt(k V - 1/12); the draws of each column have variance k V (k its cells: 16 for 85+)
    within sampling error."""
    from demonoise.uncertainty import mc_blocks as MB

    lz = linearise(be, indicators=("e",), e_ages=[0])
    V = 1e9
    plan = MB.build_plan(
        lz, GenericNoise(V), indicators=("e",), components=("noise",), floor_zero=False,
        noised=("deaths", "pop_start", "pop_end"), quantiles=None, n=256, store_limit=0,
    )  # fmt: skip
    assert plan.grouped and plan.laws == () and plan.round_sd is not None
    B = 256
    eps, _, _ = MB._draw_grouped(plan, B, np.random.default_rng(1), np.random.default_rng(2))
    d = plan.tables["deaths"]
    k = np.append(d.size, 1.0) if d.unk else d.size
    assert k.max() == 16
    np.testing.assert_allclose(plan.round_sd[d.law], np.sqrt(k * V - 1 / 12))
    x = eps["deaths"].transpose(1, 0, 2).reshape(d.ncols, -1)
    var = (x * x).mean(axis=1)
    z = (var / (k * V) - 1) / np.sqrt(2 / x.shape[1])
    assert np.abs(z).max() < 5, z.round(2)
    r = monte_carlo(lz, GenericNoise(V), n=20, indicators=("e",), components=("noise",), quantiles=None, workers=1)
    assert np.isfinite(r.stats[("e", "noise")]["sd"]).any()


def test_bounded_noise_with_large_sum_tables_takes_the_per_cell_path(be):
    """D = 40 000 (V = 5e8): the 16-fold law would have 1.28e6 points, beyond MAX_LAW_POINTS:
    the plan draws every cell from the 80 001-point law instead."""
    from demonoise.uncertainty import mc_blocks as MB

    g = GenericNoise(5e8, D=40_000)
    assert exact_grouping(g, False) and not g.rounded and g.sum_law_points(16) > MB.MAX_LAW_POINTS
    lz = linearise(be.select(["BE10"]), indicators=("e",), e_ages=[0])
    plan = MB.build_plan(
        lz, g, indicators=("e",), components=("noise",), floor_zero=False,
        noised=("deaths", "pop_start", "pop_end"), quantiles=None, n=4, store_limit=0,
    )  # fmt: skip
    assert not plan.grouped and plan.laws == () and plan.round_sd is None
    small = MB.build_plan(
        lz, GenericNoise(5.0, D=4), indicators=("e",), components=("noise",), floor_zero=False,
        noised=("deaths",), quantiles=None, n=4, store_limit=0,
    )  # fmt: skip
    assert small.grouped and len(small.laws) == 5
    r = monte_carlo(lz, g, n=4, indicators=("e",), components=("noise",), quantiles=None, workers=1)
    assert r.stats[("e", "noise")]["n_valid"].shape == (1, 3, 1)
