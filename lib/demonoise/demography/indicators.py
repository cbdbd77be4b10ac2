"""Demographic indicators from published cells, and their exact first-order linearisation.

Every function here takes *published* count arrays -- the cells noise is put on,
``UNK`` included, any leading axes (regions x sexes x replicates) -- and returns the
indicator exactly as a statistical office would compute it from those cells:

* ASMR  ``m_x = D_x / E_x``                  on the published known-age intervals;
* e_x   life expectancy from the life table of :mod:`demonoise.demography.lifetable`;
* ASFR  ``f_x = b_x / W_x``                   on the fertility ages (single or 5-year);
* TFR   ``sum_x n_x f_x``                     (``n_x`` = 1 for single ages, 5 for groups).

with ``E_x = (P_x(t) + P_x(t+1)) / 2`` (average population) and ``W_x`` its female
part. The conventions (``UNK`` spread in proportion after noise; births below 15 at
15, 50 and over at 49; the open life-table group) are those of
:mod:`demonoise.core.layout`.

The ``linearise_*`` functions return the value together with its gradient with
respect to *every published cell* (:class:`IndicatorLinearisation`), which is what the
first-order (delta-method) propagation of :mod:`demonoise.uncertainty.propagation` needs:
``Var f = sum_cells (df/dc)^2 Var(c)`` (docs/design.md, section "First-order propagation"). The gradient goes
through the exact chain: published cells -> ``UNK`` spread -> grouping -> rates ->
life table, so ``UNK`` cells, grouped cells and the open age group get exactly the
weight they have in the indicator.
"""

from __future__ import annotations

import numpy as np

from demonoise.core.counts import AgeAxis, spread_unknown
from demonoise.core.layout import Layout
from demonoise.core.vocabulary import INDICATORS
from demonoise.demography.lifetable import e_derivative, life_table

# INDICATORS (the indicator codes of results tables) is defined in the vocabulary.
__all__ = [
    "IndicatorLinearisation",
    "INDICATORS",
    "exposure",
    "lifetable_inputs",
    "life_expectancy",
    "asmr",
    "asfr",
    "tfr",
    "linearise_e",
    "linearise_asmr",
    "linearise_asfr",
    "linearise_tfr",
    "spread_gradient",
    "CellMap",
]


class CellMap:
    """How a gradient on ``X`` inner variables reaches the published cells of one table.

    Known published cell ``b`` takes the gradient of inner variable ``grp[b]``
    (``-1``: the cell enters no inner variable directly), multiplied by ``scale``
    (``1/2`` for the stocks behind an average exposure); the unknown-age cell then
    reaches every known cell through the proportional spread (:func:`spread_gradient`).

    Parameters
    ----------
    grp : ndarray of int (A_known,)
    n_inner : int
    cells : ndarray (..., A)
        The published cells (their spread defines the ``UNK`` chain rule).
    axis : AgeAxis
    scale : float
    """

    def __init__(self, grp, n_inner: int, cells, axis: AgeAxis, scale: float = 1.0):
        self.grp = np.asarray(grp, dtype=np.intp)
        self.n_inner = int(n_inner)
        self.cells = np.asarray(cells, dtype=float)
        self.axis = axis
        self.scale = float(scale)
        M = np.zeros((self.grp.size, self.n_inner))
        used = self.grp >= 0
        M[np.nonzero(used)[0], self.grp[used]] = 1.0
        self.M = M  # (A_known, X) 0/1
        self.n_per_inner = M.sum(axis=0)

    def with_axis(self, axis_pos: int) -> CellMap:
        """The same map with a new length-1 axis inserted in the cells' leading axes."""
        return CellMap(self.grp, self.n_inner, np.expand_dims(self.cells, axis_pos), self.axis, self.scale)

    def expand(self, g_inner: np.ndarray) -> np.ndarray:
        """Materialise ``d value / d cell`` (..., K, A) from the inner gradient (..., K, X)."""
        pad = np.concatenate([g_inner, np.zeros(g_inner.shape[:-1] + (1,))], axis=-1)
        idx = np.where(self.grp >= 0, self.grp, self.n_inner)
        return spread_gradient(self.scale * np.take(pad, idx, axis=-1), self.cells, self.axis)

    def quadratic(self, g_inner: np.ndarray, diag: bool, v, shared=None) -> np.ndarray:
        """``sum_c (d value / d c)^2 v_c`` without materialising the cell gradients.

        With ``g_b = c g'_grp(b) - kappa`` for known cells and ``g_UNK = gamma``
        (``c = 1 + u/S``, ``Gamma = sum_b g'_grp(b) x_b``, ``kappa = u Gamma / S^2``,
        ``gamma = Gamma / S``; :func:`spread_gradient`):
        ``sum_b g_b^2 v_b = c^2 sum_x g'_x^2 V_x - 2 c kappa sum_x g'_x V_x + kappa^2 sum_b v_b``
        with ``V_x`` the sum of ``v`` over the cells of inner variable ``x``.
        """
        return self._moments(g_inner, diag, v, square=True, shared=shared)

    def linear(self, g_inner: np.ndarray, diag: bool, b, shared=None) -> np.ndarray:
        """``sum_c (d value / d c) b_c`` without materialising the cell gradients."""
        return self._moments(g_inner, diag, b, square=False, shared=shared)

    def _prepared(self, g_inner, diag, shared=None):
        """Scaled gradient, its square and ``Gamma`` -- independent of the cell weights,
        so computed once per inner gradient and reused by every variance call
        (``shared``: a dict in which maps with the same inner gradient and scale, such as
        the two population stocks, share the scaled gradient and its square)."""
        cache = getattr(self, "_cache", None)
        if cache is not None and cache[0] is g_inner:
            return cache[1:]
        key = (id(g_inner), self.scale)
        if shared is not None and key in shared and shared[key][0] is g_inner:
            g, g2 = shared[key][1:]
        else:
            g = self.scale * g_inner
            g2 = g * g
            if shared is not None:
                shared[key] = (g_inner, g, g2)
        gam = None
        if self.axis.unknown:
            Xx = self.cells[..., :-1] @ self.M
            gam = g * Xx if diag else np.einsum("...kx,...x->...k", g, Xx)
        self._cache = (g_inner, g, g2, gam)
        return self._cache[1:]

    def _moments(self, g_inner, diag, w, square, shared=None):
        g, g2, Gam = self._prepared(g_inner, diag, shared)
        w = np.broadcast_to(np.asarray(w, dtype=float), self.cells.shape)
        unk = self.axis.unknown
        wk = w[..., :-1] if unk else w
        Wx = wk @ self.M  # (..., X)

        def contract(a, x):  # sum over the inner variables
            return a * x if diag else np.einsum("...kx,...x->...k", a, x)

        first = contract(g2 if square else g, Wx)
        if not unk:
            return first
        cells = self.cells
        known, u = cells[..., :-1], cells[..., -1]
        S = known.sum(axis=-1)
        pos = S > 0
        Ss = np.where(pos, S, 1.0)
        c = (1.0 + u / Ss)[..., None]
        kap = (u / Ss**2)[..., None] * Gam
        gam = Gam / Ss[..., None]
        wsum = wk.sum(axis=-1)[..., None]
        wu = w[..., -1][..., None]
        if square:
            second = contract(g, Wx)
            out = c * c * first - 2.0 * c * kap * second + kap * kap * wsum + gam * gam * wu
        else:
            out = c * first - kap * wsum + gam * wu
        if not pos.all():  # uniform spread where no known cell is positive
            mean_g = (g * self.n_per_inner if diag else g @ self.n_per_inner) / self.grp.size
            alt = first + (mean_g * mean_g if square else mean_g) * wu
            out = np.where(pos[..., None], out, alt)
        return out


class IndicatorLinearisation:
    """An indicator and its gradient with respect to the published cells.

    The gradient is held in structured form -- per table an *inner* gradient on the
    indicator's own age groups and a :class:`CellMap` to the published cells -- so
    that variances are computed without forming the (regions x sexes x ages x cells)
    arrays; :attr:`grads` materialises them on demand.

    Attributes
    ----------
    value : ndarray (..., K)
        Indicator values (``K`` ages, or 1 for a scalar indicator such as TFR).
    grads : dict[str, ndarray (..., K, A_m)]
        ``d value / d cell`` for each published table ``m`` it depends on
        (``deaths``, ``births``, ``pop_start``, ``pop_end``). For fertility the
        population gradients are with respect to the *female* cells.
    """

    def __init__(
        self,
        value,
        grads: dict | None = None,
        *,
        inner: dict | None = None,
        maps: dict | None = None,
        diag: dict | None = None,
    ):
        self.value = value
        self._grads = grads
        self.inner = inner or {}
        self.maps = maps or {}
        self.diag = diag or {m: False for m in self.inner}
        self._shared: dict = {}
        if grads is None and not self.inner:
            raise ValueError("an IndicatorLinearisation needs materialised grads or inner gradients with cell maps")

    @property
    def tables(self) -> tuple:
        return tuple(self._grads) if self._grads is not None else tuple(self.inner)

    @property
    def grads(self) -> dict:
        if self._grads is None:
            self._grads = {m: self.maps[m].expand(_diag(g) if self.diag[m] else g) for m, g in self.inner.items()}
        return self._grads

    def with_axis(self, axis_pos: int = 1) -> IndicatorLinearisation:
        """The same linearisation with a length-1 axis inserted (e.g. a sex axis)."""
        value = np.expand_dims(self.value, axis_pos)
        if self._grads is not None and not self.inner:
            return IndicatorLinearisation(value, {m: np.expand_dims(g, axis_pos) for m, g in self._grads.items()})
        return IndicatorLinearisation(
            value,
            inner={m: np.expand_dims(g, axis_pos) for m, g in self.inner.items()},
            maps={m: mp.with_axis(axis_pos) for m, mp in self.maps.items()},
            diag=dict(self.diag),
        )

    def variance(self, cell_variance: dict) -> np.ndarray:
        """First-order variance ``sum_m sum_c (d value / d c)^2 Var(c)``.

        ``cell_variance[m]`` has the shape of the published table (..., A_m) and is
        broadcast over the indicator ages; tables absent from ``cell_variance``
        contribute nothing (e.g. stocks in the Poisson baseline).
        """
        out = np.zeros(self.value.shape)
        for m in self.tables:
            v = cell_variance.get(m)
            if v is not None:
                out = out + self.table_variance(m, v)
        return out

    def shift(self, cell_bias: dict) -> np.ndarray:
        """First-order bias ``sum_m sum_c (d value / d c) E(noise_c)`` (p-table noise)."""
        out = np.zeros(self.value.shape)
        for m in self.tables:
            b = cell_bias.get(m)
            if b is not None:
                out = out + self.table_shift(m, b)
        return out

    def table_variance(self, m, v) -> np.ndarray:
        """``sum_c (d value / d c)^2 v_c`` over the cells ``c`` of table ``m`` alone."""
        if self.inner:
            return self.maps[m].quadratic(self.inner[m], self.diag[m], v, self._shared)
        g = self._grads[m]
        return np.einsum("...ka,...a->...k", g * g, np.asarray(v, dtype=float))

    def table_shift(self, m, b) -> np.ndarray:
        """``sum_c (d value / d c) b_c`` over the cells ``c`` of table ``m`` alone."""
        if self.inner:
            return self.maps[m].linear(self.inner[m], self.diag[m], b, self._shared)
        return np.einsum("...ka,...a->...k", self._grads[m], np.asarray(b, dtype=float))

    def table_grad(self, m) -> np.ndarray:
        """``d value / d c`` for the cells of table ``m`` (..., K, A_m), materialised."""
        if self._grads is not None and m in self._grads:
            return self._grads[m]
        g = self.inner[m]
        return self.maps[m].expand(_diag(g) if self.diag[m] else g)


# ------------------------------------------------------------------ building blocks
def exposure(pop_start, pop_end, axis: AgeAxis) -> np.ndarray:
    """Average population on the known ages, ``(spread(P(t)) + spread(P(t+1))) / 2``."""
    return (spread_unknown(pop_start, axis) + spread_unknown(pop_end, axis)) / 2.0


def spread_gradient(g: np.ndarray, cells: np.ndarray, axis: AgeAxis) -> np.ndarray:
    """Chain rule through :func:`~demonoise.core.counts.spread_unknown`.

    With ``x'_a = x_a (1 + u / S)``, ``S = sum_b x_b`` over known ages and ``u`` the
    ``UNK`` cell,

    ``dx'_a/dx_b = delta_ab (1 + u/S) - x_a u / S^2``  and  ``dx'_a/du = x_a / S``,

    so a gradient ``g'`` with respect to the spread values becomes
    ``g_b = g'_b (1 + u/S) - (u/S^2) sum_a g'_a x_a`` for known cells and
    ``g_UNK = sum_a g'_a x_a / S``. Where ``S = 0`` the spread is uniform
    (``dx'_a/du = 1/n``).

    Parameters
    ----------
    g : ndarray (..., K, n_known)
        Gradient with respect to the spread (known-age) values.
    cells : ndarray (..., A)
        Published cells (``UNK`` last).
    axis : AgeAxis

    Returns
    -------
    ndarray (..., K, A)
    """
    if not axis.unknown:
        return g
    cells = np.asarray(cells, dtype=float)
    known, u = cells[..., :-1], cells[..., -1]
    S = known.sum(axis=-1)
    pos = S > 0
    Ss = np.where(pos, S, 1.0)
    gx = np.einsum("...ka,...a->...k", g, known)  # sum_a g'_a x_a
    out = np.empty(g.shape[:-1] + (g.shape[-1] + 1,))
    body = out[..., :-1]
    np.multiply(g, (1.0 + u / Ss)[..., None, None], out=body)
    body -= (u / Ss**2)[..., None, None] * gx[..., None]
    out[..., -1] = gx / Ss[..., None]
    if not pos.all():  # uniform spread where no known cell is positive
        bad = ~pos
        out[bad, :, :-1] = g[bad]
        out[bad, :, -1] = g[bad].mean(axis=-1)
    return out


def _diag(v: np.ndarray) -> np.ndarray:
    """Batched diagonal matrix (..., n) -> (..., n, n)."""
    out = np.zeros(v.shape + (v.shape[-1],))
    idx = np.arange(v.shape[-1])
    out[..., idx, idx] = v
    return out


# ------------------------------------------------------------------- mortality
def lifetable_inputs(layout: Layout, deaths, pop_start, pop_end):
    """Deaths and exposure on the life-table age groups from published cells."""
    D = layout.group_lifetable(spread_unknown(deaths, layout.ages))
    E = layout.group_lifetable(exposure(pop_start, pop_end, layout.ages))
    return D, E


def life_expectancy(layout: Layout, deaths, pop_start, pop_end, *, a=0.5, a0=None, check=True):
    """The life table (:class:`~demonoise.demography.lifetable.LifeTable`) from published cells.

    ``lt.e[..., k]`` is life expectancy at the start of life-table interval ``k``
    (``layout.lt_lower[k]``).
    """
    D, E = lifetable_inputs(layout, deaths, pop_start, pop_end)
    return life_table(D, E, layout.lt_lower, a=a, a0=a0, check=check)


def linearise_e(layout: Layout, deaths, pop_start, pop_end, *, ages=None, a=0.5, a0=None) -> IndicatorLinearisation:
    """``e_k`` and its gradient with respect to every published cell.

    ``d e_k / d D_x = (d e_k / d m_x) / E_x`` and ``d e_k / d E_x = -(d e_k / d m_x) m_x / E_x``
    on the life-table groups (closed form of ``d e_k / d m_x`` and its derivation:
    :func:`demonoise.demography.lifetable.e_derivative`), then mapped to the published cells of
    each group, through the ``UNK`` spread, and ``d E / d P(t) = d E / d P(t+1) = 1/2``.

    Parameters
    ----------
    ages : sequence of int, optional
        Indices of life-table intervals ``k`` (default: all).
    """
    lt = life_expectancy(layout, deaths, pop_start, pop_end, a=a, a0=a0, check=True)
    idx = np.arange(lt.e.shape[-1]) if ages is None else np.asarray(ages)
    dm = e_derivative(lt, ages=idx)  # (..., K, X)
    D, E = lifetable_inputs(layout, deaths, pop_start, pop_end)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_e = np.where(E > 0, 1.0 / E, np.nan)
    gD = dm * inv_e[..., None, :]
    gE = -dm * (lt.m * inv_e)[..., None, :]
    # each published known cell takes the gradient of the life-table group it is summed into
    grp, X = layout.lifetable_group_of_cell, layout.lt_lower.size
    maps = {
        "deaths": CellMap(grp, X, deaths, layout.ages),
        "pop_start": CellMap(grp, X, pop_start, layout.ages, 0.5),
        "pop_end": CellMap(grp, X, pop_end, layout.ages, 0.5),
    }
    return IndicatorLinearisation(lt.e[..., idx], inner={"deaths": gD, "pop_start": gE, "pop_end": gE}, maps=maps)


def asmr(layout: Layout, deaths, pop_start, pop_end) -> np.ndarray:
    """Age-specific mortality rates ``m_x = D_x / E_x`` on the published known ages.

    Returns nan where ``E_x = 0``.
    """
    D = spread_unknown(deaths, layout.ages)
    E = exposure(pop_start, pop_end, layout.ages)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(E > 0, D / np.where(E > 0, E, 1.0), np.nan)


def linearise_asmr(layout: Layout, deaths, pop_start, pop_end) -> IndicatorLinearisation:
    """ASMR and gradient: ``d m_x / d D_x = 1/E_x``, ``d m_x / d E_x = -m_x / E_x``
    (so ``Var(m_x)/m_x^2 = Var(D_x)/D_x^2 + Var(E_x)/E_x^2`` without ``UNK``)."""
    E = exposure(pop_start, pop_end, layout.ages)
    m = asmr(layout, deaths, pop_start, pop_end)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_e = np.where(E > 0, 1.0 / E, np.nan)
    grp, X = np.arange(layout.ages.n_known), layout.ages.n_known
    maps = {
        "deaths": CellMap(grp, X, deaths, layout.ages),
        "pop_start": CellMap(grp, X, pop_start, layout.ages, 0.5),
        "pop_end": CellMap(grp, X, pop_end, layout.ages, 0.5),
    }
    gE = -m * inv_e
    inner = {"deaths": inv_e, "pop_start": gE, "pop_end": gE}
    return IndicatorLinearisation(m, inner=inner, maps=maps, diag={k: True for k in inner})


# ------------------------------------------------------------------- fertility
def _fert_inputs(layout: Layout, births, popf_start, popf_end):
    b = layout.group_births(spread_unknown(births, layout.birth_ages))
    W = layout.group_pop_fert(exposure(popf_start, popf_end, layout.ages))
    return b, W


def asfr(layout: Layout, births, popf_start, popf_end) -> np.ndarray:
    """Age-specific fertility rates ``f_x = b_x / W_x`` on the fertility intervals.

    ``births`` (..., B) are published births by age of mother; ``popf_*`` (..., A)
    the *female* population cells. Births outside ``fert_min..fert_max`` are counted
    at the nearest fertility age and ``UNK`` births spread in proportion
    (:mod:`demonoise.core.layout`).
    """
    b, W = _fert_inputs(layout, births, popf_start, popf_end)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(W > 0, b / np.where(W > 0, W, 1.0), np.nan)


def tfr(layout: Layout, births, popf_start, popf_end) -> np.ndarray:
    """Total fertility rate ``TFR = sum_x n_x f_x`` (``n_x`` = interval width)."""
    return asfr(layout, births, popf_start, popf_end) @ layout.fert_width


def linearise_asfr(layout: Layout, births, popf_start, popf_end) -> IndicatorLinearisation:
    """ASFR and gradient: ``d f_x / d b_x = 1 / W_x``, ``d f_x / d W_x = -f_x / W_x``."""
    _, W = _fert_inputs(layout, births, popf_start, popf_end)
    f = asfr(layout, births, popf_start, popf_end)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_w = np.where(W > 0, 1.0 / W, np.nan)
    F = f.shape[-1]
    b_grp = layout.births_to_fert.argmax(axis=1)
    pM = layout.pop_to_fert
    p_grp = np.where(pM.sum(axis=1) > 0, pM.argmax(axis=1), -1)
    maps = {
        "births": CellMap(b_grp, F, births, layout.birth_ages),
        "pop_start": CellMap(p_grp, F, popf_start, layout.ages, 0.5),
        "pop_end": CellMap(p_grp, F, popf_end, layout.ages, 0.5),
    }
    gW = -f * inv_w
    inner = {"births": inv_w, "pop_start": gW, "pop_end": gW}
    return IndicatorLinearisation(f, inner=inner, maps=maps, diag={k: True for k in inner})


def linearise_tfr(layout: Layout, births, popf_start, popf_end) -> IndicatorLinearisation:
    """TFR and gradient: the width-weighted sum of the ASFR gradients."""
    lin = linearise_asfr(layout, births, popf_start, popf_end)
    w = layout.fert_width
    value = (lin.value @ w)[..., None]
    inner = {m: (g * w)[..., None, :] for m, g in lin.inner.items()}  # (..., 1, F): one dense row
    return IndicatorLinearisation(value, inner=inner, maps=lin.maps)
