"""Noise models: exact variance of the generic law, the cautionary numbers of docs/design.md
(section "Noise models"), sampling.

Sampling checks are judged against sampling error: a mean within 5 standard errors
(``sqrt(V / N)``) of its expectation, a variance within 5 standard errors
(``sqrt((mu4 - V^2) / N)``, with ``mu4`` the law's fourth central moment).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from demonoise.analysis.ptables import load_ptable
from demonoise.core.errors import DataError, ParameterError
from demonoise.noise.models import GenericNoise, NoiseModel, PoissonNoise, PTableNoise, discrete_gaussian, zero_floor
from demonoise.noise.ptable import build_ptable

VS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10]


def _reachable_D(V: float) -> int:
    """Smallest D with D(D+1)/3 > V, plus one (so truncation is active but V reachable)."""
    D = 1
    while D * (D + 1) / 3 <= V:
        D += 1
    return D + 1


def _moments(support, probs):
    k = np.asarray(support, dtype=float)
    p = np.asarray(probs)
    m1 = math.fsum(k * p)
    m2 = math.fsum((k - m1) ** 2 * p)
    m4 = math.fsum((k - m1) ** 4 * p)
    return m1, m2, m4


# ------------------------------------------------------------------ generic law
@pytest.mark.parametrize("V", VS)
@pytest.mark.parametrize("truncated", [False, True])
def test_generic_variance_is_exactly_V(V, truncated):
    D = _reachable_D(V) if truncated else None
    g = GenericNoise(V, D)
    k, p = g.law()
    assert abs(math.fsum(p) - 1) < 1e-14
    m1, m2, _ = _moments(k, p)  # computed here, independently of the model
    assert abs(m1) < 1e-14
    assert abs(m2 - V) < 1e-10
    assert abs(g.exact_variance() - V) < 1e-10
    if D is not None:
        assert k.min() == -D and k.max() == D
    # the law is a discrete Gaussian: log p(k) - log p(0) is proportional to k^2
    ratio = (np.log(p[k != 0]) - np.log(p[k == 0][0])) / k[k != 0] ** 2
    assert np.allclose(ratio, -1 / (2 * g.scale**2), rtol=1e-9)
    assert np.all(g.variance(np.zeros((2, 3), int)) == g.exact_variance())
    assert np.all(g.bias(np.ones(4)) == 0)


def test_design_cautionary_numbers():
    # naive pmf exp(-k^2 / 2V): variance 0.21 at V = 0.25
    k = np.arange(-30, 31)
    w = np.exp(-(k**2) / (2 * 0.25))
    naive = (k**2 * w).sum() / w.sum()
    assert naive == pytest.approx(0.21, abs=0.006)
    assert GenericNoise(0.25).exact_variance() == pytest.approx(0.25, abs=1e-12)
    # rounding N(0, V) adds about 1/12 (Sheppard)
    from scipy.stats import norm

    edges = norm.cdf((k + 0.5) / 1.0) - norm.cdf((k - 0.5) / 1.0)
    assert (k**2 * edges).sum() == pytest.approx(1 + 1 / 12, abs=1e-3)
    # truncating the untruncated V = 5 law at D = 3 gives 2.92
    s = GenericNoise(5).scale
    k3 = np.arange(-3, 4)
    w3 = np.exp(-(k3**2) / (2 * s * s))
    assert (k3**2 * w3).sum() / w3.sum() == pytest.approx(2.92, abs=0.005)


def test_unreachable_D_raises_naming_V_and_D():
    # supremum over the family (s -> inf) is the uniform law's D(D+1)/3
    for D in (1, 2, 3, 5):
        sup = D * (D + 1) / 3
        u = GenericNoise(sup, D)
        k, p = u.law()
        assert np.allclose(p, 1 / (2 * D + 1)) and u.exact_variance() == pytest.approx(sup, rel=1e-14)
        near = GenericNoise(sup * 0.999, D)  # just below: a (very flat) discrete Gaussian
        assert near.exact_variance() == pytest.approx(sup * 0.999, abs=1e-10)
        with pytest.raises(ParameterError, match=rf"V={sup * 1.001:g}.*D={D}"):
            GenericNoise(sup * 1.001, D)
    with pytest.raises(ParameterError, match=r"D\(D\+1\)/3 = 4"):
        GenericNoise(5, D=3)


@pytest.mark.parametrize("V", [0, -1, float("nan"), float("inf"), "x"])
def test_invalid_V_raises(V):
    with pytest.raises(ParameterError, match="V"):
        GenericNoise(V)


@pytest.mark.parametrize("D", [0, -2, 1.5])
def test_invalid_D_raises(D):
    with pytest.raises(ParameterError, match="D"):
        GenericNoise(1, D)


@pytest.mark.parametrize("V,D", [(1, None), (0.25, None), (5, 4), (0.1, 2)])
def test_generic_sampling_moments(V, D):
    g = GenericNoise(V, D)
    N = 1_000_000
    rng = np.random.default_rng(20240501)
    x = g.sample(np.zeros(N, dtype=np.int64), rng)
    assert x.dtype == np.int64
    _, _, mu4 = _moments(*g.law())
    assert abs(x.mean()) < 5 * math.sqrt(V / N)
    assert abs(x.var() - V) < 5 * math.sqrt((mu4 - V**2) / N)
    if D is not None:
        assert np.abs(x).max() <= D


def test_sample_shape_seed_and_counts():
    g = GenericNoise(2)
    c = np.array([[0, 5, 100], [7, 1, 2]])
    a = g.sample(c, np.random.default_rng(7), size=(4, 3))
    b = g.sample(c, np.random.default_rng(7), size=(4, 3))
    assert a.shape == (4, 3, 2, 3) and np.array_equal(a, b)
    assert g.sample(c, np.random.default_rng(7)).shape == (2, 3)
    assert g.sample(c, np.random.default_rng(7), size=5).shape == (5, 2, 3)
    # noise does not depend on the counts: same generator state gives same noise
    n1 = g.sample(c, np.random.default_rng(1), size=10) - c
    n2 = g.sample(c * 3, np.random.default_rng(1), size=10) - 3 * c
    assert np.array_equal(n1, n2)
    with pytest.raises(DataError, match="negative count"):
        g.sample(np.array([1, -2]), np.random.default_rng(0))
    with pytest.raises(DataError, match="not a finite integer"):
        g.sample(np.array([1.5]), np.random.default_rng(0))


def test_zero_floor_is_separate():
    g = GenericNoise(5)
    x = g.sample(np.zeros(10_000, int), np.random.default_rng(3))
    assert (x < 0).any()  # the generic model itself can go negative
    f = zero_floor(x)
    assert (f >= 0).all() and np.array_equal(f[x >= 0], x[x >= 0])


# ------------------------------------------------------------------ Poisson
def test_poisson_baseline():
    m = PoissonNoise()
    c = np.array([0, 3, 50, 1000])
    assert np.array_equal(m.variance(c), c.astype(float)) and np.all(m.bias(c) == 0)
    N = 200_000
    x = m.sample(c, np.random.default_rng(9), size=N)
    assert x.shape == (N, 4) and x.dtype == np.int64
    assert np.all(x[:, 0] == 0)
    for j, lam in enumerate(c[1:], start=1):
        # Poisson: mu4 (central) = lam (1 + 3 lam)
        assert abs(x[:, j].mean() - lam) < 5 * math.sqrt(lam / N)
        assert abs(x[:, j].var() - lam) < 5 * math.sqrt((lam * (1 + 3 * lam) - lam**2) / N)
    assert m.nominal_variance is None and m.name == "poisson"


# ------------------------------------------------------------------ p-table noise
@pytest.mark.parametrize("table", ["v01", "v04", "built"])
def test_ptable_noise_sampling_matches_exact_moments(table):
    t = build_ptable(3, 0.5) if table == "built" else load_ptable(table)
    m = PTableNoise(t)
    counts = np.arange(0, t.I + 3)  # every class, and counts beyond the last class
    N = 200_000
    x = m.sample(counts, np.random.default_rng(42), size=N)
    assert (x >= 0).all() and np.all(x[:, 0] == 0)  # zeros stay zero, never negative
    e = x - counts
    for n in counts:
        tr = t.transition(n)
        mean = float(tr.p @ tr.v)
        var = float(tr.p @ (tr.v - mean) ** 2)
        mu4 = float(tr.p @ (tr.v - mean) ** 4)
        assert m.bias(np.array([n]))[0] == pytest.approx(mean, abs=1e-12)
        assert m.variance(np.array([n]))[0] == pytest.approx(var, abs=1e-12)
        if n == 0:
            continue
        assert abs(e[:, n].mean() - mean) < 5 * math.sqrt(var / N)
        assert abs(e[:, n].var() - var) < 5 * math.sqrt((mu4 - var**2) / N)


def test_ptable_noise_by_name_and_labels():
    m = PTableNoise(load_ptable("v01"))
    assert m.name == "ptable v01" and m.nominal_variance == 1.0
    assert GenericNoise(1).name == "generic V=1"
    assert GenericNoise(3, D=3).name == "generic V=3 D=3"
    for model in (m, GenericNoise(1), PoissonNoise()):
        assert isinstance(model, NoiseModel) and model.describe().startswith(model.name)
    with pytest.raises(ParameterError):
        PTableNoise(42)


def test_discrete_gaussian_tends_to_three_point_law_for_small_V():
    k, p, _ = discrete_gaussian(1e-4)
    assert p[k == 1][0] == pytest.approx(0.5e-4, rel=1e-3)
    assert p[np.abs(k) >= 2].sum() < 1e-15


@pytest.mark.parametrize("V", [0.1, 1.0, 5.0])
def test_alias_sampler_reproduces_the_law_exactly(V):
    """The alias table used for sampling implies exactly the law's probabilities, and one
    uniform always gives the same noise (common random numbers)."""
    g = GenericNoise(V)
    support, probs = g.law()
    n = support.size
    implied = np.zeros(n)
    for j in range(n):
        implied[j] += g._alias_prob[j] / n
        implied[np.searchsorted(support, g._alias_value[j])] += (1 - g._alias_prob[j]) / n
    np.testing.assert_allclose(implied, probs, atol=1e-15)
    u = np.random.default_rng(0).random(1000)
    np.testing.assert_array_equal(g.noise_from_uniform(u), g.noise_from_uniform(u.copy()))
    np.testing.assert_array_equal(g.perturb(np.full(1000, 7), u), 7 + g.noise_from_uniform(u))


# ------------------------------------------------------------------ large V: sums and draws without tables
def _direct_k_fold(p, k):
    out = p
    for _ in range(k - 1):
        out = np.convolve(out, p)
    return out


@pytest.mark.parametrize("V", [100.0, 400.0, 2000.0])
@pytest.mark.parametrize("k", [2, 16])
def test_sum_law_of_a_large_V_is_the_exact_convolution_within_its_bound(V, k):
    """From V = 100 the k-fold law is the discrete Gaussian of variance kV (no convolution);
    against the exact k-fold convolution it differs by round-off only (docstring: 1.1e-17
    per point, 1e-15 in total variation, measured)."""
    g = GenericNoise(V)
    support, p = g.sum_law(k)
    s1, p1 = g.law()
    exact = _direct_k_fold(p1, k)
    at = support - k * s1[0]
    assert at.min() >= 0 and at.max() < exact.size
    mine = np.zeros(exact.size)
    mine[at] = p
    diff = np.abs(mine - exact)
    assert diff.max() < 2e-17 and diff.sum() / 2 < 2e-15
    assert math.fsum(support.astype(float) ** 2 * p) == pytest.approx(k * V, rel=1e-12)
    assert g.sum_law_points(k) == support.size


def test_k_fold_by_fft_matches_the_direct_convolution():
    """A bounded law (D = 130, V = 5000: 261 points) summed 16 times: 4161 points, beyond
    FFT_FROM, computed by FFT."""
    from demonoise.noise.models import FFT_FROM, k_fold

    g = GenericNoise(5000.0, D=130)
    support, p = g.sum_law(16)
    exact = _direct_k_fold(g.law()[1], 16)
    assert exact.size > FFT_FROM and p.size == exact.size and support[0] == -16 * 130
    assert np.abs(p - exact).max() < 1e-16 and p.min() >= 0 and math.fsum(p) == pytest.approx(1.0, abs=1e-14)
    assert math.fsum(support.astype(float) ** 2 * p) == pytest.approx(16 * g.exact_variance(), rel=1e-12)
    np.testing.assert_array_equal(k_fold(np.array([0.25, 0.5, 0.25]), 2), [0.0625, 0.25, 0.375, 0.25, 0.0625])


def _rounded_pmf(k: np.ndarray, V: float) -> np.ndarray:
    """Law of round(sigma Z), sigma^2 = V - 1/12, from the normal distribution function (scipy)."""
    from scipy.stats import norm

    s = math.sqrt(V - 1 / 12)
    hi, lo = (k + 0.5) / s, (k - 0.5) / s
    return np.where(k >= 0, norm.sf(lo) - norm.sf(hi), norm.cdf(hi) - norm.cdf(lo))


@pytest.mark.parametrize("V", [10.0, 100.0, 1000.0, 1e4])
def test_rounded_gaussian_is_within_its_bound_of_the_discrete_gaussian(V):
    """Total variation 4.9e-4 / V^2 (rounded_gaussian's docstring) and variance V."""
    k, p, _ = discrete_gaussian(V)
    r = _rounded_pmf(k, V)
    assert np.abs(r - p).sum() / 2 < 5.0e-4 / V**2
    assert math.fsum(k.astype(float) ** 2 * r) == pytest.approx(V, rel=1e-12)


def test_rounded_gaussian_maps_each_uniform_to_its_integer():
    """The uniforms between the normal distribution function at n - 1/2 and n + 1/2 (in sd
    units) give n: the law drawn is the rounded Gaussian's, monotone in u."""
    from scipy.stats import norm

    from demonoise.noise.models import rounded_gaussian

    V = 1e6
    s = math.sqrt(V - 1 / 12)
    n = np.arange(-5000, 5001, 7)
    lo, hi = norm.cdf((n - 0.5) / s), norm.cdf((n + 0.5) / s)
    np.testing.assert_array_equal(rounded_gaussian((lo + hi) / 2, s), n)
    np.testing.assert_array_equal(rounded_gaussian(lo + 0.01 * (hi - lo), s), n)
    assert rounded_gaussian(0.0, s) < 0 and rounded_gaussian(0.5, s) == 0


@pytest.mark.parametrize("V", [1e6, 1e9, 1e12])
def test_large_V_is_drawn_by_rounding_without_a_table(V):
    """Nothing tabulated at construction, on the wire or to draw; the draws have mean 0 and
    variance V within sampling error; the law is tabulated on request only."""
    import pickle

    g = GenericNoise(V)
    assert g.rounded and g.table_points == 0 and "_support" not in g.__dict__
    assert g.exact_variance() == V and len(pickle.dumps(g)) < 2000
    cut = math.ceil(9 * (math.sqrt(V) + 1))
    assert f"support -{cut}..{cut}" in g.describe()
    N = 1_000_000
    x = g.noise_from_uniform(np.random.default_rng(7).random(N)).astype(float)
    assert abs(x.mean()) < 5 * math.sqrt(V / N)
    assert abs(x.var() / V - 1) < 5 * math.sqrt(2 / N)
    assert "_support" not in g.__dict__ and "_alias_prob" not in g.__dict__
    if V <= 1e9:
        k, p = g.law()
        assert k.size == 2 * cut + 1 and math.fsum(p) == pytest.approx(1, abs=1e-12)


def test_a_D_beyond_the_cut_is_the_law_without_D():
    g, h = GenericNoise(1e6, D=10**9), GenericNoise(1e6)
    assert g.rounded and g.table_points == 0 and g.sum_law_points(16) == h.sum_law_points(16)
    u = np.random.default_rng(3).random(1000)
    np.testing.assert_array_equal(g.noise_from_uniform(u), h.noise_from_uniform(u))


def test_large_bounded_law_is_drawn_from_its_cdf():
    """Beyond ALIAS_MAX_POINTS points (D = 200 000) a binary search of the CDF: each
    uniform gives the smallest support point whose CDF exceeds it."""
    from demonoise.noise.models import ALIAS_MAX_POINTS

    g = GenericNoise(1e10, D=200_000)
    k, p = g.law()
    assert k.size > ALIAS_MAX_POINTS and not g.rounded
    u = np.random.default_rng(5).random(2000)
    x = g.noise_from_uniform(u)
    cdf = np.cumsum(p)
    i = np.searchsorted(k, x)
    assert np.all(cdf[i] > u - 1e-12) and np.all((i == 0) | (cdf[i - 1] <= u + 1e-12))
