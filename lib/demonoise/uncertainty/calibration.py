"""Calibration of the noise parameter: the largest variance ``V`` that keeps the noise
admixture of every indicator below chosen thresholds.

The admixture of an indicator ``f`` (docs/design.md, section "Admixture") is

.. math::  A(V) = \\sqrt{1 + \\mathrm{Var}_\\mathrm{noise}(V) / \\mathrm{Var}_\\mathrm{pois}} - 1 ,

and for a threshold ``A*`` (a fraction: 0.1 = 10 %) the calibrated value is
``V* = sup {V : A(V) <= A*}``, per region, sex, indicator and age. Since
``A <= A*`` is the same as ``Var_noise(V) <= ((1 + A*)^2 - 1) Var_pois =: T``, only
the noise variance as a function of ``V`` is needed.

Generic model (closed form)
    Every published cell of the noised tables gets independent noise of variance
    exactly ``V`` (:class:`demonoise.noise.models.GenericNoise`), so
    ``Var_noise(V) = V S`` with the *noise sensitivity* ``S = sum_c (df/dc)^2`` over the
    noised cells, and

    .. math::  V^* = \\frac{(1 + A^*)^2 - 1}{S}\\, \\mathrm{Var}_\\mathrm{pois} .

    Where ``Var_pois = 0`` (no events behind the indicator) any noise exceeds the
    bound: ``V* = 0``; where ``S = 0`` (the indicator does not depend on any noised
    cell) no noise reaches it: ``V* = inf``.

p-table family (numeric)
    The Cell Key Method with the tables ``build_ptable(D, V, js, pstay)`` for fixed
    ``D, js, pstay`` and varying ``V`` (:class:`PTableFamily`). A cell with count ``n``
    gets the noise of row ``min(n, I)``, whose variance ``r_i(V)`` depends on ``V``
    (zero for ``i = 0``: zeros stay zero; below ``V`` where the row's constraints
    cannot reach it), so

    .. math::  \\mathrm{Var}_\\mathrm{noise}(V) = \\sum_i W_i\\, r_i(V),\\qquad
               W_i = \\sum_{c:\\ \\min(n_c, I) = i} (df/dc)^2 .

    The weights ``W`` are computed once per indicator (vectorised over regions x sexes
    x ages); the ``I + 1`` row variances ``r(V)`` are the only thing that depends on
    ``V`` and are the same for every region. They are tabulated on a grid of ``V``
    refined adaptively (each node one table build, cached) until linear interpolation
    between nodes is within ``tol`` of a table actually built at the midpoint of every
    interval. ``Var_noise`` is then piecewise linear in ``V`` for every item at once and
    ``V*`` is its exact root -- the number of tables built does not depend on the
    number of regions. ``A`` is monotone in ``V`` for every region exactly when every
    row variance is (the weights are non-negative); this is checked on the grid
    (:attr:`VarianceCurve.monotone`). If it failed, ``V*`` would still be the largest
    ``V`` of the interpolant meeting the bound, and a warning says so.

    The family spans ``V`` in ``[V_lo, D^2]``: ``V_lo > 0`` when ``js > 0`` makes small
    variances unreachable (found by bisection on feasibility), and for ``V >= D^2`` the
    variance bound is slack in every row (noise within ``-D..D`` has variance at most
    ``D^2``), so the table no longer changes; the tables stop changing already at
    ``V_sat = max_i r_i(D^2)`` (``D (D + 1) / 3``, the uniform law on ``-D..D``, for
    ``js = 0``). If even the largest table of the family keeps ``A <= A*``, then
    ``V* = inf`` (status ``"saturates"``); if the smallest table already exceeds,
    ``V* = nan`` (status ``"infeasible"``).

The admixture uses the noise *variance*; the p-table noise bias of small counts is
reported elsewhere (:mod:`demonoise.analysis.results`), not here.

References
----------
Eurostat (2025). Impact of noise-based disclosure control on demographic indicators
(reference year 2023) -- the generic model and the admixture.
Enderle, T. ptable: Generation of perturbation tables for the cell-key method, R package
1.0.0 (2023) -- the p-table construction reproduced by :func:`demonoise.noise.ptable.build_ptable`.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from itertools import pairwise
from numbers import Real

import numpy as np
import pandas as pd

from demonoise.core.counts import Counts
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.vocabulary import CALIBRATION_THRESHOLDS, INDICATORS
from demonoise.noise.ptable import PTable, build_ptable, check_build_limit, check_deviation_limit
from demonoise.uncertainty.propagation import (
    TABLES,
    Linearised,
    admixture,
    check_noised,
    linearise,
    poisson_cell_variance,
)

__all__ = [
    "THRESHOLDS",
    "THRESHOLD_MAX",
    "CONTEXT_V",
    "STATUSES",
    "CalibrationWarning",
    "PTableFamily",
    "VarianceCurve",
    "check_thresholds",
    "variance_budget",
    "generic_v_max",
    "invert_piecewise_linear",
    "noise_weights",
    "calibrate_linearised",
    "calibrate",
    "calibration_summary",
]

#: Default admixture thresholds (fractions: 0.1 = 10 %, the upper bound of the vocabulary's
#: "small" admixture class).
THRESHOLDS = CALIBRATION_THRESHOLDS
#: Thresholds must lie in (0, THRESHOLD_MAX].
THRESHOLD_MAX = 10.0
#: Variances at which the admixture is reported for context.
CONTEXT_V = (1.0, 5.0)

#: Meaning of the ``status`` column.
STATUSES = {
    "ok": "V_max is the root of A(V) = threshold",
    "no_events": "no Poisson variance (no events behind the indicator): any noise exceeds, V_max = 0",
    "insensitive": "the indicator depends on no noised cell: V_max = inf",
    "saturates": "p-table family: every table of the family keeps A <= threshold, V_max = inf",
    "infeasible": "p-table family: already the smallest table of the family exceeds the threshold, V_max = nan",
    "undefined": "A is not defined: the indicator is not finite, or it has neither Poisson nor noise "
    "variance (e.g. a rate from a zero count under a p-table, whose zeros stay zero): V_max = nan",
}


class CalibrationWarning(UserWarning):
    """The row variances of a p-table family are not monotone in ``V``, or a kink could
    not be resolved to the requested tolerance."""


# --------------------------------------------------------------------------- thresholds
def check_thresholds(thresholds) -> np.ndarray:
    """Validate admixture thresholds: each a number in ``(0, 10]``.

    Parameters
    ----------
    thresholds : float or sequence of float
        Fractions (0.1 = 10 %). Duplicates are dropped, the order is kept.

    Returns
    -------
    ndarray of float

    Raises
    ------
    ParameterError
        Naming the first bad value (not a number, nan, <= 0, > 10) or an empty list.
    """
    if isinstance(thresholds, (str, bytes)):
        raise ParameterError(f"thresholds must be numbers in (0, {THRESHOLD_MAX:g}], got {thresholds!r}")
    vals = [thresholds] if np.ndim(thresholds) == 0 else list(np.asarray(thresholds, dtype=object).ravel())
    if not vals:
        raise ParameterError("no threshold given: pass at least one admixture fraction in (0, 10]")
    out: list[float] = []
    for t in vals:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (Real, np.number)):
            raise ParameterError(
                f"threshold {t!r} is not a number; thresholds are admixture fractions in (0, {THRESHOLD_MAX:g}]"
            )
        x = float(t)
        if not (math.isfinite(x) and 0.0 < x <= THRESHOLD_MAX):
            raise ParameterError(
                f"threshold {t!r} is outside (0, {THRESHOLD_MAX:g}]: thresholds are admixture fractions "
                f"(0.1 = 10 %, 1 = noise sd adds 100 % to the Poisson sd)"
            )
        if x not in out:
            out.append(x)
    return np.array(out)


def variance_budget(var_pois, thresholds) -> np.ndarray:
    """Largest noise variance an indicator may carry: ``T = ((1 + A*)^2 - 1) Var_pois``.

    ``A <= A*``  <=>  ``sqrt(1 + Var_noise / Var_pois) <= 1 + A*``  <=>
    ``Var_noise <= ((1 + A*)^2 - 1) Var_pois``. Shape ``var_pois.shape + (T,)``.
    """
    a = np.asarray(thresholds, dtype=float)
    return np.asarray(var_pois, dtype=float)[..., None] * ((1.0 + a) ** 2 - 1.0)


def generic_v_max(var_pois, sensitivity, thresholds) -> np.ndarray:
    """Closed form of the generic model: ``V* = ((1 + A*)^2 - 1) Var_pois / S``.

    Parameters
    ----------
    var_pois : array_like (...)
        First-order Poisson variance of the indicator.
    sensitivity : array_like (...)
        ``S = sum_c (df/dc)^2`` over the noised cells (``Var_noise = V S``).
    thresholds : array_like (T,)

    Returns
    -------
    ndarray (..., T)
        ``0`` where ``Var_pois = 0 < S``; ``inf`` where ``S = 0 < Var_pois``; ``nan``
        where both are 0 or either is not finite.
    """
    vp = np.asarray(var_pois, dtype=float)[..., None]
    S = np.asarray(sensitivity, dtype=float)[..., None]
    budget = variance_budget(var_pois, thresholds)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(S > 0, budget / np.where(S > 0, S, 1.0), np.inf)
    bad = ~np.isfinite(vp) | ~np.isfinite(S) | ((vp <= 0) & (S <= 0))
    return np.where(bad, np.nan, np.where((vp <= 0) & (S > 0), 0.0, v))


def invert_piecewise_linear(nodes, F, target) -> np.ndarray:
    """Largest ``V`` with ``F(V) <= target`` for piecewise-linear ``F`` through ``(nodes, F)``.

    Parameters
    ----------
    nodes : ndarray (G,)
        Increasing abscissae ``V_0 < ... < V_{G-1}``.
    F : ndarray (..., G)
        Values at the nodes (any leading axes).
    target : ndarray (..., T)
        Bounds (leading axes broadcast with ``F``'s).

    Returns
    -------
    ndarray (..., T)
        With ``g`` the last node where ``F <= target``: ``inf`` if ``g`` is the last
        node (the bound holds on the whole range), ``nan`` if there is none, else the
        linear root in ``[V_g, V_{g+1}]``. Monotone ``F`` gives the root of
        ``F = target``; otherwise the largest ``V`` meeting the bound.
    """
    nodes = np.asarray(nodes, dtype=float)
    F = np.asarray(F, dtype=float)[..., None, :]
    target = np.asarray(target, dtype=float)[..., :, None]
    G = nodes.size
    ok = F <= target  # (..., T, G)
    any_ok = ok.any(-1)
    g = G - 1 - np.argmax(ok[..., ::-1], axis=-1)
    g1 = np.minimum(g + 1, G - 1)
    Fb = np.broadcast_to(F, ok.shape)
    f0 = np.take_along_axis(Fb, g[..., None], -1)[..., 0]
    f1 = np.take_along_axis(Fb, g1[..., None], -1)[..., 0]
    t = target[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip((t - f0) / (f1 - f0), 0.0, 1.0)
    v = nodes[g] + frac * (nodes[g1] - nodes[g])
    v = np.where(g == G - 1, np.inf, v)
    return np.where(any_ok, v, np.nan)


# --------------------------------------------------------------------------- p-tables
_TABLES: OrderedDict[tuple, PTable | ParameterError] = OrderedDict()
_TABLES_MAX = 512
#: Row variances may dip by this much where the variance bound is (nearly) slack: the
#: solver's optimum there is within ~3e-7 of the uniform law (measured for D = 3), and the
#: cumulative probabilities are rounded to 8 decimals.
_MONO_TOL = 1e-6


@dataclass(frozen=True)
class VarianceCurve:
    """Row variances of a p-table family on a grid of ``V``.

    Attributes
    ----------
    nodes : ndarray (G,)
        Increasing ``V`` values; the first is 0 (where every row variance is 0, since
        it is bounded by ``V``) or the smallest feasible ``V`` of the family, the last
        ``D^2`` (beyond which the tables do not change).
    rows : ndarray (G, I + 1)
        Exact variance of every row of the table built at each node.
    monotone : bool
        Every row variance is non-decreasing over the nodes (within 1e-6: the solver's
        precision where the variance bound is nearly slack, and the rounding of the
        cumulative probabilities to 8 decimals).
    v_lo : float
        Smallest ``V`` of the family (0 when every ``V > 0`` is feasible).
    v_sat : float
        ``V`` from which the tables stop changing (largest unconstrained row variance).
    builds : int
        Tables built (or fetched from the cache) to make the curve.
    """

    nodes: np.ndarray
    rows: np.ndarray
    monotone: bool
    v_lo: float
    v_sat: float
    builds: int

    def at(self, V) -> np.ndarray:
        """Row variances at ``V`` by linear interpolation (shape ``(..., I + 1)``)."""
        V = np.asarray(V, dtype=float)
        return np.stack([np.interp(V, self.nodes, self.rows[:, i]) for i in range(self.rows.shape[1])], axis=-1)


@dataclass(frozen=True)
class PTableFamily:
    """The p-tables ``build_ptable(D, V, js, pstay)`` for fixed ``D, js, pstay``, ``V`` varying.

    Parameters
    ----------
    D : int
        Maximum deviation (>= 1).
    js : int
        Perturbed values ``1..js`` are not allowed (>= 0).
    pstay : float, optional
        Preset probability of no change, in (0, 1).

    Raises
    ------
    ParameterError
        Invalid ``D``, ``js`` or ``pstay``.
    """

    D: int
    js: int = 0
    pstay: float | None = None

    def __post_init__(self):
        try:
            D, js = int(self.D), int(self.js)
        except (TypeError, ValueError):
            raise ParameterError(
                f"p-table family: D and js must be integers, got D={self.D!r}, js={self.js!r}"
            ) from None
        if D != self.D or D < 1:
            raise ParameterError(f"p-table family: D (maximum deviation) must be a positive integer, got {self.D!r}")
        if js != self.js or js < 0:
            raise ParameterError(f"p-table family: js must be a non-negative integer, got {self.js!r}")
        check_deviation_limit(D, "p-table family: D (maximum deviation)")
        check_build_limit(D, "p-table family: D (maximum deviation)")
        object.__setattr__(self, "D", D)
        object.__setattr__(self, "js", js)
        if self.pstay is not None:
            p = float(self.pstay)
            if not (0.0 < p < 1.0):
                raise ParameterError(f"p-table family: pstay must lie strictly between 0 and 1, got {self.pstay!r}")
            object.__setattr__(self, "pstay", p)

    @property
    def label(self) -> str:
        return f"ptable D={self.D} js={self.js}" + ("" if self.pstay is None else f" pstay={self.pstay:g}")

    @property
    def I(self) -> int:  # noqa: E743 (the p-table literature's name)
        """Largest row class: ``D`` if ``js = 0``, else ``D + js + 1`` (as :func:`build_ptable`)."""
        return self.D if self.js == 0 else self.D + self.js + 1

    @property
    def v_top(self) -> float:
        """``D^2``: for ``V >= D^2`` the variance bound is slack in every row."""
        return float(self.D * self.D)

    def table(self, V: float) -> PTable:
        """The table at ``V`` (cached); ``ParameterError`` if the family has none there."""
        V = float(V)
        key = (self.D, self.js, self.pstay, V)
        hit = _TABLES.get(key)
        if hit is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # variance below V at small counts is expected here
                    hit = build_ptable(self.D, V, self.js, self.pstay, warn=False)
            except ParameterError as e:
                hit = e
            _TABLES[key] = hit
            if len(_TABLES) > _TABLES_MAX:
                _TABLES.popitem(last=False)
        else:
            _TABLES.move_to_end(key)
        if isinstance(hit, ParameterError):
            raise hit
        return hit

    def feasible(self, V: float) -> bool:
        try:
            self.table(V)
            return True
        except ParameterError:
            return False

    def row_variance(self, V: float) -> np.ndarray:
        """Exact noise variance of every row ``0..I`` of the table at ``V``."""
        if V == 0:
            return np.zeros(self.I + 1)
        return self.table(V).variance()

    def v_lo(self, rtol: float = 1e-6) -> float:
        """Smallest ``V`` with a table; 0 if the table at ``V = 0.01`` exists.

        Feasibility is monotone in ``V`` (a larger ``V`` only relaxes the variance
        constraint), so it is found by bisection to relative precision ``rtol``; the
        value returned is feasible. When the table at 0.01 exists the family is taken
        to start at 0: every row variance is at most ``V``, hence 0 at ``V = 0``, and
        the only tables missing below 0.01 are those below the variance the probability
        floor ``epsilon = 1e-8`` forces (about ``1e-8 sum v^2``, under 1e-6).

        Raises
        ------
        ParameterError
            The family has no table at all (not even at ``V = D^2``), with the reason.
        """
        top = self.v_top
        try:
            self.table(top)
        except ParameterError as e:
            raise ParameterError(
                f"{self.label}: no p-table exists for any V (not even V = D^2 = {top:g}): {e}"
            ) from None
        probe = min(1e-2, top)
        if self.feasible(probe):
            return 0.0
        lo, hi = probe, top
        while hi - lo > rtol * hi:
            mid = 0.5 * (lo + hi)
            if self.feasible(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def curve(self, *, tol: float = 1e-6, extra=(), min_width: float = 1e-6, max_builds: int = 400) -> VarianceCurve:
        """Tabulate the row variances over the family's range of ``V``.

        Initial nodes: ``V_lo`` (or 0), the unconstrained row variances (where each row
        stops following ``V``), ``0.25, 0.5, 1, 2, 3, 5, 10, ...`` below ``D^2``, ``extra``
        and ``D^2``. Every interval is then checked at its midpoint against a table
        built there and split until the linear interpolation of every row is within
        ``tol`` (or the interval is narrower than ``min_width``, with a warning).

        Returns
        -------
        VarianceCurve
        """
        top = self.v_top
        lo = self.v_lo()
        u = self.row_variance(top)
        v_sat = float(u.max())
        cand = {lo, top, *[float(x) for x in u[1:]], *[float(x) for x in extra]}
        cand |= {0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0}
        nodes = sorted(x for x in cand if lo <= x <= top and (x > 0 or lo == 0))
        # drop near-duplicates (kinks that coincide with grid points)
        dedup = [nodes[0]]
        for x in nodes[1:]:
            if x - dedup[-1] > min_width:
                dedup.append(x)
        nodes = dedup
        vals = {x: self.row_variance(x) for x in nodes}
        builds = len(nodes)
        unresolved = []
        stack = list(pairwise(nodes))
        while stack:
            a, b = stack.pop()
            m = 0.5 * (a + b)
            if builds >= max_builds:
                raise ParameterError(f"{self.label}: variance curve not resolved within {max_builds} table builds")
            rm = self.row_variance(m)
            builds += 1
            vals[m] = rm
            err = float(np.max(np.abs(rm - 0.5 * (vals[a] + vals[b]))))
            if err > tol:
                if b - a <= min_width:
                    unresolved.append((a, b, err))
                    continue
                stack += [(a, m), (m, b)]
        xs = np.array(sorted(vals))
        rows = np.array([vals[x] for x in xs])
        monotone = bool(np.all(np.diff(rows, axis=0) >= -_MONO_TOL))
        if not monotone:
            bad = np.argwhere(np.diff(rows, axis=0) < -_MONO_TOL)[0]
            warnings.warn(
                f"{self.label}: the variance of row {bad[1]} decreases between V={xs[bad[0]]:g} and "
                f"V={xs[bad[0] + 1]:g}; "
                "A(V) may not be monotone -- V_max is the largest V of the tabulated curve meeting the bound",
                CalibrationWarning,
                stacklevel=2,
            )
        if unresolved:
            a, b, err = unresolved[0]
            warnings.warn(
                f"{self.label}: row variances not linear to {tol:g} on [{a:.9g}, {b:.9g}] (error {err:.3g}); "
                "a jump in V -- V_max near it is accurate to the interval width only",
                CalibrationWarning,
                stacklevel=2,
            )
        return VarianceCurve(xs, rows, monotone, lo, v_sat, builds)


def _family(family) -> str | PTableFamily:
    """``"generic"``, a :class:`PTableFamily`, or ``("ptable", D[, js[, pstay]])``."""
    if isinstance(family, PTableFamily):
        return family
    if isinstance(family, str):
        if family == "generic":
            return "generic"
        raise ParameterError(f"unknown noise family {family!r}: use 'generic' or ('ptable', D, js, pstay)")
    if isinstance(family, (tuple, list)) and family and family[0] == "ptable" and 2 <= len(family) <= 4:
        return PTableFamily(*family[1:])
    raise ParameterError(f"unknown noise family {family!r}: use 'generic' or ('ptable', D, js, pstay)")


# --------------------------------------------------------------------------- weights
def _cells(lz: Linearised, female_only: bool, noised) -> dict:
    """Published cells of the noised tables, shaped to broadcast against the gradients."""
    cells = lz.cells(female_only)
    out = {m: np.asarray(cells[m]) for m in noised if m in cells}
    return {m: v[:, None] for m, v in out.items()} if female_only else out


def noise_weights(lz: Linearised, block, classes: int | None = None, noised=TABLES) -> np.ndarray:
    """Squared gradients summed over the noised cells.

    ``classes=None``: the noise sensitivity ``S = sum_c (df/dc)^2``, shape (R, S, K).
    ``classes=I``: ``W_i = sum_{c: min(n_c, I) = i} (df/dc)^2`` for ``i = 0..I`` (cells
    grouped by the p-table row their count uses), shape (R, S, K, I + 1); ``S = sum_i W_i``.
    """
    cells = _cells(lz, block.female_only, noised)
    lin = block.lin
    if classes is None:
        return lin.variance({m: np.ones(v.shape) for m, v in cells.items()})
    cls = {m: np.minimum(v, classes) for m, v in cells.items()}
    return np.stack(
        [lin.variance({m: (c == i).astype(float) for m, c in cls.items()}) for i in range(classes + 1)], axis=-1
    )


# --------------------------------------------------------------------------- calibration
def _status(vp, sens, vmax, value):
    """Status of each (item, threshold) from the Poisson variance, sensitivity and result."""
    b = lambda a: np.broadcast_to(a[..., None], vmax.shape)  # noqa: E731
    vp, sens, value = b(vp), b(sens), b(value)
    st = np.full(vmax.shape, "ok", dtype=object)
    st[np.isinf(vmax)] = "saturates"
    st[np.isnan(vmax)] = "infeasible"
    st[(sens <= 0) & (vp > 0)] = "insensitive"
    st[(vp <= 0) & (sens > 0)] = "no_events"
    st[~np.isfinite(value) | ~np.isfinite(vp) | ~np.isfinite(sens) | ((vp <= 0) & (sens <= 0))] = "undefined"
    return st


def calibrate_linearised(
    lz: Linearised,
    thresholds=THRESHOLDS,
    *,
    family="generic",
    noised=TABLES,
    context_V=CONTEXT_V,
    tol: float = 1e-6,
    dataset: str | None = None,
    data_status: str | None = None,
) -> pd.DataFrame:
    """Calibrated ``V`` for every indicator block of a linearised dataset.

    Parameters
    ----------
    lz : Linearised
        From :func:`demonoise.uncertainty.propagation.linearise`.
    thresholds : sequence of float
        Admixture thresholds ``A*`` in ``(0, 10]``.
    family : "generic", PTableFamily or ("ptable", D, js, pstay)
    noised : iterable of str
        Tables that receive noise (default all four).
    context_V : sequence of float
        Variances at which the admixture is reported (columns ``admixture_V<v>``).
    tol : float
        p-tables: tolerance of the tabulated row variances (:meth:`PTableFamily.curve`).

    Returns
    -------
    pandas.DataFrame
        Tidy, one row per region x sex x indicator x age x threshold (see :func:`calibrate`).
    """
    thr = check_thresholds(thresholds)
    fam = _family(family)
    noised = check_noised(noised)
    context_V = tuple(float(v) for v in context_V)
    if not all(math.isfinite(v) and v > 0 for v in context_V):
        raise ParameterError(f"context_V: variances must be finite numbers > 0, got {list(context_V)}")
    c = lz.counts
    if fam == "generic":
        label, curve = "generic", None
    else:
        label = fam.label
        curve = fam.curve(tol=tol, extra=[v for v in context_V])
    frames = []
    for block in lz.blocks.values():
        lin = block.lin
        vp = lin.variance(poisson_cell_variance(lz, block.female_only))
        value = lin.value
        if curve is None:
            sens = noise_weights(lz, block, None, noised)
            vmax = generic_v_max(vp, sens, thr)
            ctx = {v: admixture(vp, v * sens) for v in context_V}
        else:
            W = noise_weights(lz, block, fam.I, noised)
            sens = W[..., 1:].sum(-1)  # zero cells stay zero: no noise
            F = W @ curve.rows.T  # Var_noise at every node, (R, S, K, G)
            vmax = invert_piecewise_linear(curve.nodes, F, variance_budget(vp, thr))
            ctx = {}
            for v in context_V:
                try:
                    ctx[v] = admixture(vp, W @ fam.row_variance(min(float(v), fam.v_top)))
                except ParameterError:  # no table of the family at this V
                    ctx[v] = np.full(vp.shape, np.nan)
        status = _status(vp, sens, vmax, value)
        vmax = np.where(status == "no_events", 0.0, vmax)
        vmax = np.where(status == "insensitive", np.inf, vmax)
        vmax = np.where(status == "undefined", np.nan, vmax)
        R, S, K = value.shape
        T = thr.size
        shape = (R, S, K, T)

        def rep(a, shape=shape):
            return np.broadcast_to(np.asarray(a)[..., None], shape).ravel()

        df = pd.DataFrame(
            {
                "region": np.repeat(np.array(c.codes), S * K * T),
                "region_name": np.repeat(np.array([r.name for r in c.regions], dtype=object), S * K * T),
                "nuts_level": np.repeat(np.array([r.level for r in c.regions]), S * K * T),
                "country": np.repeat(np.array([r.country for r in c.regions], dtype=object), S * K * T),
                "sex": np.tile(np.repeat(np.array(block.sexes), K * T), R),
                "indicator": block.indicator,
                "age": np.tile(np.repeat(block.age_lower, T), R * S),
                "age_group": np.tile(np.repeat(np.array(block.age_labels, dtype=object), T), R * S),
                "value": rep(value),
                "events": rep(np.broadcast_to(block.events, value.shape)),
                "var_pois": rep(vp),
                "threshold": np.tile(thr, R * S * K),
                "V_max": vmax.ravel(),
                "status": status.ravel(),
            }
        )
        for v, a in ctx.items():
            df[f"admixture_V{v:g}"] = rep(a)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    meta = {
        "dataset": dataset or c.name,
        "data_status": data_status or c.provenance.data_status,
        "family": label,
        "granularity": lz.granularity,
    }
    for k, v in reversed(list(meta.items())):
        out.insert(0, k, v)
    out.attrs["family"] = label
    if curve is not None:
        out.attrs.update(
            v_lo=curve.v_lo, v_sat=curve.v_sat, v_top=fam.v_top, monotone=curve.monotone, builds=curve.builds
        )
    return out


def _default_indicators(counts: Counts) -> tuple[str, ...]:
    out = []
    if counts.births is not None:
        out += ["asfr", "tfr"]
    if counts.deaths is not None:
        out += ["asmr", "e"]
    return tuple(i for i in INDICATORS if i in out)


def calibrate(
    counts: Counts,
    thresholds=THRESHOLDS,
    *,
    family="generic",
    granularity: str = "single",
    indicators=None,
    e_ages=(0, 65),
    regions=None,
    noised=TABLES,
    context_V=CONTEXT_V,
    tol: float = 1e-6,
    **layout_kw,
) -> pd.DataFrame:
    """For every region and indicator, the largest ``V`` keeping the noise admixture below thresholds.

    ``V* = sup {V : A(V) <= A*}`` with ``A = sqrt(1 + Var_noise(V) / Var_pois) - 1``:
    closed form ``V* = ((1 + A*)^2 - 1) Var_pois / S`` for the generic model, numeric
    for a p-table family (module notes).

    Parameters
    ----------
    counts : Counts
    thresholds : sequence of float
        Admixture thresholds as fractions, each in ``(0, 10]`` (default 0.1, 0.5, 1.0).
    family : "generic", ("ptable", D, js, pstay) or PTableFamily
    granularity : {"single", "5y", "5y-infant"}
        Publication granularity of the noised cells.
    indicators : iterable of str, optional
        Default: every indicator the dataset supports (deaths: ``asmr``, ``e``;
        births: ``asfr``, ``tfr``).
    e_ages : sequence of int
        Ages ``k`` of ``e_k`` (default 0 and 65).
    regions : sequence of str, optional
        Restrict to these region codes.
    noised : iterable of str
        Tables that receive noise (default deaths, births and both 1 January stocks).
    context_V : sequence of float
        Variances at which the admixture is reported for context (default 1 and 5).
    **layout_kw
        ``open_age, a, a0, fert_min, fert_max`` (:func:`demonoise.uncertainty.propagation.linearise`).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, data_status, family, granularity, region, region_name,
        nuts_level, country, sex, indicator, age, age_group, value, events, var_pois,
        threshold, V_max, status, admixture_V1, admixture_V5``; ``status`` is one of
        :data:`STATUSES`. For a p-table family ``df.attrs`` holds ``v_lo``, ``v_sat``,
        ``v_top``, ``monotone`` and ``builds``.

    Raises
    ------
    ParameterError
        A threshold outside ``(0, 10]`` (named), an unknown family, indicator or
        granularity, a p-table family without tables.
    DataError
        An unknown region code (named).
    """
    check_thresholds(thresholds)
    _family(family)
    if regions is not None:
        regions = [regions] if isinstance(regions, str) else list(regions)
        for code in regions:
            if code not in counts.codes:
                raise DataError("unknown region code", dataset=counts.name, region=code)
        counts = counts.select(regions)
    if indicators is None:
        indicators = _default_indicators(counts)
    lz = linearise(counts, granularity=granularity, indicators=tuple(indicators), e_ages=e_ages, **layout_kw)
    return calibrate_linearised(lz, thresholds, family=family, noised=noised, context_V=context_V, tol=tol)


def calibration_summary(df: pd.DataFrame, indicators=(("e", 0), ("tfr", None))) -> pd.DataFrame:
    """Per indicator and threshold: the smallest ``V_max`` over regions and sexes, where
    it occurs, the median, and how many items no table of a p-table family can meet --
    the lines ``demonoise calibrate`` prints and the overview shows.

    Parameters
    ----------
    df : DataFrame
        From :func:`calibrate`.
    indicators : sequence of (indicator, age or None)
        ``("e", 0)`` is e0; ``None`` takes every age.

    Returns
    -------
    DataFrame
        ``indicator, threshold, items, V_max_min, region, sex, V_max_median,
        infeasible, infeasible_region, infeasible_sex, saturates``: the minimum and
        median are over items with a ``V_max`` (``inf`` included); ``infeasible``
        counts items with status ``"infeasible"`` (``V_max`` nan: already the smallest
        table exceeds the threshold), the first of them named; ``saturates`` counts
        items no table of the family brings to the threshold.
    """
    cols = [
        "indicator",
        "threshold",
        "items",
        "V_max_min",
        "region",
        "sex",
        "V_max_median",
        "infeasible",
        "infeasible_region",
        "infeasible_sex",
        "saturates",
    ]
    rows = []
    for ind, age in indicators:
        sel = df[df.indicator == ind]
        if age is not None:
            sel = sel[sel.age == age]
        for thr, g in sel.groupby("threshold", sort=True):
            name = ind if age is None else f"{ind}{age:g}"
            has = g[g.V_max.notna()]
            inf = g[g.status == "infeasible"]
            row = {
                "indicator": name,
                "threshold": thr,
                "items": len(g),
                "V_max_min": np.nan,
                "region": "",
                "sex": "",
                "V_max_median": np.nan,
                "infeasible": len(inf),
                "infeasible_region": "",
                "infeasible_sex": "",
                "saturates": int((g.status == "saturates").sum()),
            }
            if not has.empty:
                k = has.V_max.idxmin()
                row.update(
                    V_max_min=has.V_max.min(),
                    region=has.at[k, "region"],
                    sex=has.at[k, "sex"],
                    V_max_median=has.V_max.median(),
                )
            if not inf.empty:
                row.update(infeasible_region=inf.iloc[0]["region"], infeasible_sex=inf.iloc[0]["sex"])
            rows.append(row)
    return pd.DataFrame(rows, columns=cols)
