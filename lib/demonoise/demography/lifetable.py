r"""Period life table (Eurostat's method) and the closed-form derivatives of e_x.

Computation layer: numpy only, no I/O. Every function works on arrays with any
leading axes (regions x sexes x replicates) and the life-table age axis last.

The caller supplies deaths and exposure already on the *life-table* age axis
(published cells aggregated, unknown ages spread in proportion with
:func:`demonoise.core.counts.spread_unknown`). The life-table axis is given by the
interval start ages ``lower``; the last interval is open. Eurostat's NUTS 2 and
country tables use single ages ``0..84`` and ``85+`` (:func:`lifetable_lower`).

Method (Eurostat, "Description of the Eurostat method for the calculation of the
life expectancies at all ages", metadata annex ``demo_mor_esms_an_1``; generalised
to interval widths ``n_x`` as in Chiang 1984 / Preston et al. 2001, ch. 3)::

    m_x     = D_x / E_x
    q_x     = n_x m_x / (1 + n_x (1 - a_x) m_x)          closed intervals
    q_w     = 1                                           open interval w
    l_0     = 1,   l_{x+n} = l_x (1 - q_x)
    L_x     = n_x l_x (1 - (1 - a_x) q_x)  = n_x l_x / (1 + n_x (1 - a_x) m_x)
    L_w     = l_w / m_w
    T_x     = sum_{y >= x} L_y,   e_x = T_x / l_x

``a_x`` is the *fraction of the interval* lived by those dying in it (so
``n_x a_x`` years). With ``n_x = 1`` these are exactly the formulas of Eurostat's
annex (docs/design.md, section "The life table").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from demonoise.core.counts import AgeAxis
from demonoise.core.errors import DataError, ParameterError

__all__ = [
    "EUROSTAT_A0",
    "EUROSTAT_OPEN_AGE",
    "LifeTable",
    "lifetable_lower",
    "life_table",
    "life_table_from_rates",
    "e_derivative",
    "e_only",
    "closed_interval_constants",
]

#: Eurostat's ``a_0`` (fraction of the first year of life lived by infants who die):
#: 0.2 -- "the a_x,t coefficient is equal to 0.5 for all ages x except for age 0,
#: where the coefficient is set to 0.2" (Eurostat, metadata annex demo_mor_esms_an_1).
#: Its effect on e0 against a_0 = 0.5 is about 0.001 y.
EUROSTAT_A0: float = 0.2

#: Eurostat's open age: 85+ "for all countries, sexes and years" (same annex).
EUROSTAT_OPEN_AGE: int = 85


# --------------------------------------------------------------------------- axis
def lifetable_lower(open_age: int = EUROSTAT_OPEN_AGE, *, width: int = 1, infant: bool = False) -> np.ndarray:
    """Start ages of a life-table axis ending in the open interval ``open_age+``.

    Parameters
    ----------
    open_age : int
        Start of the open interval (Eurostat: 85).
    width : int
        1 for the complete table ``0, 1, ..., open_age-1, open_age+``; 5 for an
        abridged table ``0-4, 5-9, ..., open_age+`` (``open_age`` a multiple of 5).
    infant : bool
        Abridged tables only: publish age 0 apart, ``0, 1-4, 5-9, ...``.

    Returns
    -------
    ndarray of int, shape (X,)

    Examples
    --------
    >>> lifetable_lower(10, width=5, infant=True).tolist()
    [0, 1, 5, 10]
    """
    open_age, width = int(open_age), int(width)
    if width < 1 or open_age < width or open_age % width:
        raise ParameterError(f"open_age={open_age} must be a positive multiple of width={width}")
    lo = list(range(0, open_age + 1, width))
    if infant:
        if width == 1:
            raise ParameterError("infant=True only makes sense for an abridged table (width > 1)")
        lo = [0, 1] + lo[1:]
    return np.array(lo, dtype=np.int64)


def _check_lower(lower) -> np.ndarray:
    if isinstance(lower, AgeAxis):
        if lower.unknown or not lower.is_open:
            raise ParameterError("a life-table age axis must be open and have no UNK cell")
        lower = lower.lower
    lo = np.asarray(lower)
    if lo.ndim != 1 or lo.size == 0:
        raise ParameterError(f"lower must be a non-empty 1-D array of start ages, got shape {lo.shape}")
    if lo.dtype.kind == "f":
        if not np.all(np.isfinite(lo)) or np.any(lo != np.round(lo)):
            raise ParameterError(f"life-table start ages must be whole years, got {lo.tolist()}")
    elif lo.dtype.kind not in "iu":
        raise ParameterError(f"life-table start ages must be numbers, got dtype {lo.dtype}")
    lo = lo.astype(np.int64)
    if lo[0] < 0 or np.any(np.diff(lo) <= 0):
        raise ParameterError(f"life-table start ages must be >= 0 and strictly increasing, got {lo.tolist()}")
    return lo


def _labels(lower: np.ndarray) -> tuple[str, ...]:
    upper = [int(u) for u in lower[1:]] + [None]
    return AgeAxis(tuple(int(x) for x in lower), tuple(upper), unknown=False).labels


# --------------------------------------------------------------------------- table
@dataclass(frozen=True, eq=False)
class LifeTable:
    """A period life table, vectorised over leading axes.

    All columns have shape ``(..., X)`` (leading axes as in the input, life-table
    ages last) and are read-only float arrays; ``lower`` and ``n`` have shape ``(X,)``.

    Attributes
    ----------
    lower : ndarray of int, (X,)
        Interval start ages; the last interval is open.
    n : ndarray of float, (X,)
        Interval widths ``n_x``; ``inf`` for the open interval.
    a : ndarray, (..., X)
        Fraction of the interval lived by those dying in it (``a_x``; the open
        interval's entry is not used). Broadcast view, not a copy.
    m, q, l, d, L, T, e : ndarray, (..., X)
        Death rate ``m_x``, probability of dying ``q_x`` (1 in the open interval),
        survivors ``l_x`` (``l_0 = 1``), life-table deaths ``d_x = l_x q_x``,
        person-years ``L_x``, ``T_x = sum_{y>=x} L_y`` and life expectancy
        ``e_x = T_x / l_x``.
    """

    lower: np.ndarray
    n: np.ndarray
    a: np.ndarray
    m: np.ndarray
    q: np.ndarray
    l: np.ndarray  # noqa: E741 -- demographic notation
    d: np.ndarray
    L: np.ndarray
    T: np.ndarray
    e: np.ndarray

    @property
    def labels(self) -> tuple[str, ...]:
        """Eurostat-style labels of the intervals (``Y_LT1, Y1, ..., Y_GE85`` or ``Y_LT5, Y5-9, ...``)."""
        return _labels(self.lower)

    @property
    def open_age(self) -> int:
        """Start of the open interval."""
        return int(self.lower[-1])

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of every column, ``(..., X)``."""
        return self.m.shape

    def index(self, age: int) -> int:
        """Position of the interval that *starts* at ``age`` (e.g. ``lt.e[..., lt.index(65)]``)."""
        hit = np.flatnonzero(self.lower == int(age))
        if hit.size != 1 or int(age) != age:
            raise ParameterError(f"no life-table interval starts at age {age} (start ages: {self.lower.tolist()})")
        return int(hit[0])


def _broadcast_a(a, a0, lower: np.ndarray, lead_shape: tuple[int, ...]) -> np.ndarray:
    X = lower.size
    a_in = np.asarray(a, dtype=float)
    scalar_a = a_in.ndim == 0
    try:
        a_arr = np.broadcast_to(a_in, lead_shape + (X,))
    except ValueError:
        raise ParameterError(
            f"a must be a scalar or broadcast to shape {lead_shape + (X,)}, got shape {a_in.shape}"
        ) from None
    first_is_infant = lower[0] == 0 and X > 1 and lower[1] == 1
    if a0 is None and scalar_a and first_is_infant:
        a0 = EUROSTAT_A0
    if a0 is not None:
        a0_arr = np.asarray(a0, dtype=float)
        try:
            a0_arr = np.broadcast_to(a0_arr, lead_shape)
        except ValueError:
            raise ParameterError(
                f"a0 must be a scalar or broadcast to shape {lead_shape}, got shape {a0_arr.shape}"
            ) from None
        a_arr = a_arr.copy()
        a_arr[..., 0] = a0_arr
    if np.any(~np.isfinite(a_arr)) or np.any((a_arr < 0) | (a_arr > 1)):
        raise ParameterError("a (and a0) must lie in [0, 1]: the fraction of the interval lived by those dying in it")
    return a_arr


def _first_bad(mask: np.ndarray, labels: Sequence[str]) -> dict:
    """Location of the first True cell: ``age`` label and ``key`` = leading index (if any)."""
    idx = tuple(int(i) for i in np.argwhere(mask)[0])
    loc: dict = {"age": labels[idx[-1]]}
    if len(idx) > 1:
        loc["key"] = idx[:-1]
    return loc


def _rates(deaths: np.ndarray, exposure: np.ndarray, labels: Sequence[str], check: bool) -> np.ndarray:
    if check:
        for name, v in (("deaths", deaths), ("exposure", exposure)):
            bad = ~np.isfinite(v)
            if bad.any():
                raise DataError(f"missing or infinite {name}", measure=name, **_first_bad(bad, labels))
            bad = v < 0
            if bad.any():
                raise DataError(f"negative {name} {v[bad][0]!r}", measure=name, **_first_bad(bad, labels))
        bad = (exposure == 0) & (deaths > 0)
        if bad.any():
            raise DataError(
                f"deaths {deaths[bad][0]!r} with zero exposure", measure="exposure", **_first_bad(bad, labels)
            )
        bad = deaths[..., -1] == 0
        if bad.any():
            loc = _first_bad(bad[..., None], labels[-1:])
            raise DataError(
                "empty open age group: no deaths, so m = 0 and L = l / m is infinite",
                measure="deaths",
                **loc,
            )
    both_zero = (exposure == 0) & (deaths == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(both_zero, 0.0, deaths / np.where(both_zero, 1.0, exposure))
    return m


def life_table(deaths, exposure, lower, *, a=0.5, a0=None, check: bool = True) -> LifeTable:
    r"""Eurostat's period life table from deaths and exposure.

    Parameters
    ----------
    deaths, exposure : array_like of float, shape (..., X)
        Deaths ``D_x`` and exposure ``E_x`` (Eurostat: average of the 1 January
        populations of ``t`` and ``t + 1``) on the life-table age axis, any leading
        axes (regions x sexes x replicates); the two arrays broadcast together.
        Unknown ages must already be spread (:func:`demonoise.core.counts.spread_unknown`).
    lower : array_like of int, shape (X,), or AgeAxis
        Interval start ages, strictly increasing; the last interval is open. Widths
        ``n_x = lower[x+1] - lower[x]``. E.g. ``0..84, 85`` (complete table,
        :func:`lifetable_lower`), ``0, 5, ..., 85`` or ``0, 1, 5, 10, ..., 85``
        (abridged).
    a : float or array_like, broadcastable to (..., X)
        ``a_x``: fraction of interval ``x`` lived on average by those who die in it
        (``n_x a_x`` years). Default 0.5 (deaths halfway through the interval).
        The open interval's value is not used.
    a0 : float or array_like (...,), optional
        ``a`` of the first interval. ``None`` (default) follows Eurostat: when the
        first interval is age 0 alone (``[0, 1)``) and ``a`` is a scalar, ``a_0 =``
        :data:`EUROSTAT_A0` ``= 0.2``; otherwise (``a`` given per interval, or a
        first interval ``0-4``) ``a`` is used as given. A number overrides ``a``
        for the first interval whatever its width.
    check : bool
        Validate the input (default). ``False`` is for Monte Carlo replicates, where
        noise can make counts zero or negative: nothing is raised and ``nan``/``inf``
        propagate (``E_x = 0 < D_x`` gives ``m_x = inf`` and ``nan`` from there on;
        ``D_w = 0`` in the open interval gives ``L_w = inf`` and ``e = inf``;
        negative counts give negative rates, computed as such).

    Returns
    -------
    LifeTable

    Raises
    ------
    DataError
        With ``check=True``: missing/infinite or negative deaths or exposure;
        deaths with zero exposure; an empty open age group (``D_w = 0``: ``m_w = 0``
        and ``L_w = l_w / m_w`` would be infinite); ``q_x >= 1`` in a closed
        interval (``m_x >= 1 / (n_x a_x)``: nobody would survive it, or ``l`` would
        turn negative). The error names the interval (``age="Y_GE85"``,
        ``"Y37"``, ``"Y5-9"``), the ``measure``, and, when there are leading axes,
        ``key`` = the leading index of the first offending cell (e.g. ``(region,
        sex)`` positions) so that the caller can add region and sex.
    ParameterError
        Bad ``lower``, ``a`` or ``a0`` (outside ``[0, 1]``). Mismatched shapes of deaths
        and exposure, or a last axis that is not the life-table axis, raise DataError.

    Notes
    -----
    Equations (Eurostat annex demo_mor_esms_an_1, widths ``n_x`` as in Preston,
    Heuveline & Guillot 2001, section 3.2)::

        m_x = D_x / E_x
        q_x = n_x m_x / (1 + n_x (1 - a_x) m_x),    q_w = 1
        l_0 = 1,   l_{x+n} = l_x (1 - q_x)
        L_x = n_x l_x (1 - (1 - a_x) q_x),          L_w = l_w / m_w
        T_x = sum_{y >= x} L_y,                      e_x = T_x / l_x

    *Zero cells.* A closed interval with ``E_x = 0`` and ``D_x = 0`` (nobody
    exposed, nobody died) gets ``m_x = 0``: no observed risk, ``q_x = 0``, all
    survive it, ``L_x = n_x l_x``. The same rule is applied with ``check=False``.
    A closed interval with ``E_x > 0, D_x = 0`` is an ordinary ``m_x = 0``.

    *``a_x`` conventions.* Complete table: ``a_x = 0.5`` (half a year) except
    ``a_0 = 0.2`` (Eurostat). Abridged tables: ``a_x = 0.5`` of the interval for
    every closed interval (``n_x a_x = 2.5`` years for ``5-9``, ..., and 2 years for
    ``1-4``) unless ``a`` says otherwise; for a first interval ``0`` the default
    ``a_0 = 0.2``; for a first interval ``0-4`` the default is 0.5 (pass ``a0``
    for another value; e.g. Coale-Demeny style values are a user choice).

    The open interval must be the last one; its ``q_w = 1`` and
    ``L_w = l_w / m_w`` (constant hazard in the open interval).
    """
    lo = _check_lower(lower)
    D = np.asarray(deaths, dtype=float)
    E = np.asarray(exposure, dtype=float)
    try:
        D, E = np.broadcast_arrays(D, E)
    except ValueError:
        raise DataError(f"deaths {D.shape} and exposure {E.shape} do not have matching shapes") from None
    if D.ndim == 0 or D.shape[-1] != lo.size:
        raise DataError(
            f"deaths/exposure have {D.shape[-1] if D.ndim else 0} ages on the last axis, the life table has {lo.size}"
        )
    m = _rates(D, E, _labels(lo), check)
    return _build(m, lo, a, a0, check)


def life_table_from_rates(m, lower, *, a=0.5, a0=None, check: bool = True) -> LifeTable:
    """Life table from death rates ``m_x`` directly (same method as :func:`life_table`).

    For what-if runs on rates. ``check=True`` rejects non-finite or negative
    rates, ``m_w = 0`` in the open interval and ``q_x >= 1``; the error names
    the interval as in :func:`life_table`.
    """
    lo = _check_lower(lower)
    m = np.asarray(m, dtype=float)
    if m.ndim == 0 or m.shape[-1] != lo.size:
        raise DataError(
            f"rates have {m.shape[-1] if m.ndim else 0} ages on the last axis, the life table has {lo.size}"
        )
    labels = _labels(lo)
    if check:
        bad = ~np.isfinite(m) | (m < 0)
        if bad.any():
            raise DataError(
                f"death rate {m[bad][0]!r} is not a finite non-negative number",
                measure="rate",
                **_first_bad(bad, labels),
            )
        bad = m[..., -1] == 0
        if bad.any():
            raise DataError(
                "empty open age group: m = 0 makes L = l / m infinite",
                measure="rate",
                **_first_bad(bad[..., None], labels[-1:]),
            )
    return _build(m, lo, a, a0, check)


def _build(m: np.ndarray, lo: np.ndarray, a, a0, check: bool) -> LifeTable:
    X = lo.size
    m = np.array(m, dtype=float)  # own copy: the table's columns are frozen, the caller's array is not
    lead = m.shape[:-1]
    a_arr = _broadcast_a(a, a0, lo, lead)
    n = np.append(np.diff(lo).astype(float), np.inf)
    nc = n[:-1]  # closed widths
    labels = _labels(lo)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mc, bc = m[..., :-1], 1.0 - a_arr[..., :-1]
        denom = 1.0 + nc * bc * mc
        qc = nc * mc / denom
        if check and X > 1:
            bad = qc >= 1.0
            if bad.any():
                raise DataError(
                    "q >= 1 in a closed interval: the death rate leaves no survivors (m >= 1 / (n a))",
                    measure="rate",
                    **_first_bad(np.concatenate([bad, np.zeros(lead + (1,), bool)], axis=-1), labels),
                )
        q = np.concatenate([qc, np.ones(lead + (1,))], axis=-1)
        l = np.concatenate([np.ones(lead + (1,)), np.cumprod(1.0 - qc, axis=-1)], axis=-1)  # noqa: E741
        d = l * q
        Lc = nc * l[..., :-1] * (1.0 - bc * qc)
        Lw = l[..., -1:] / m[..., -1:]
        L = np.concatenate([Lc, Lw], axis=-1)
        T = np.flip(np.cumsum(np.flip(L, axis=-1), axis=-1), axis=-1)
        e = T / l
    lo = lo.copy()
    for arr in (m, q, l, d, L, T, e, a_arr, lo, n):
        if arr.flags.writeable:
            arr.setflags(write=False)
    return LifeTable(lower=lo, n=n, a=a_arr, m=m, q=q, l=l, d=d, L=L, T=T, e=e)


# --------------------------------------------------------------------------- derivatives
def e_derivative(lt: LifeTable, ages=None) -> np.ndarray:
    r"""Closed-form derivatives ``d e_k / d m_x`` of life expectancy w.r.t. the death rates.

    Parameters
    ----------
    lt : LifeTable
    ages : int or sequence of int, optional
        *Indices* of the intervals ``k`` whose ``e_k`` is differentiated (use
        ``lt.index(65)`` for age 65). Default: every interval.

    Returns
    -------
    ndarray, shape (..., K, X)
        ``out[..., j, x] = d e_{k_j} / d m_x``; with a scalar ``ages`` the ``K``
        axis is dropped, shape (..., X). Memory is ``prod(...) * K * X`` floats.

    Notes
    -----
    For ``k <= x`` and a closed interval ``x`` (width ``n = n_x``, ``b = 1 - a_x``)::

        d e_k / d m_x = -(l_x / l_k) n_x (n_x b_x + e_{x+n}) / (1 + n_x b_x m_x)^2

    for the open interval ``w``::

        d e_k / d m_w = -(l_w / l_k) / m_w^2

    and exactly 0 for ``x < k`` (``e_k`` does not depend on rates below ``k``).
    With ``n_x = 1`` this is the formula of docs/design.md, section "First-order propagation"; the
    weight ``l_x (n_x b_x + e_{x+n})`` is Chiang's (1984, ch. 10).

    *Derivation.* ``m_x`` (``x >= k``) does not change ``l_k``, so
    ``d e_k = d T_k / l_k``. Write ``T_k = sum_{k<=y<x} L_y + L_x + l_{x+n} e_{x+n}``:
    the first sum and ``e_{x+n}`` (a function of rates above ``x`` only) do not
    depend on ``m_x``. With ``L_x = n l_x / (1 + n b m)`` and, from
    ``q = n m / (1 + n b m)``, ``1 - q = (1 - n a m) / (1 + n b m)``::

        d L_x / d m_x     = -n^2 b l_x / (1 + n b m)^2
        d l_{x+n} / d m_x = l_x d(1 - q)/dm = -n l_x (a + b) / (1 + n b m)^2
                          = -n l_x / (1 + n b m)^2          (a + b = 1)

    so ``d T_k / d m_x = -n l_x (n b + e_{x+n}) / (1 + n b m)^2`` (product rule:
    ``d(l_{x+n} e_{x+n}) = e_{x+n} d l_{x+n}``). For the open interval
    ``L_w = l_w / m_w`` gives ``d T_k / d m_w = -l_w / m_w^2``.

    Derivatives with respect to the counts follow by the chain rule through
    ``m = D / E``: ``d e / d D_x = (d e / d m_x) / E_x`` and
    ``d e / d E_x = -(d e / d m_x) m_x / E_x``.

    Vectorised: one pass over all leading axes, no loop over ages or regions.
    """
    X = lt.lower.size
    n = lt.n
    a = lt.a
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = np.empty(lt.shape)
        if X > 1:
            nc = n[:-1]
            bc = 1.0 - a[..., :-1]
            g[..., :-1] = nc * (nc * bc + lt.e[..., 1:]) / (1.0 + nc * bc * lt.m[..., :-1]) ** 2
        g[..., -1] = 1.0 / lt.m[..., -1] ** 2
        w = -lt.l * g  # d T_k / d m_x for any k <= x, shape (..., X)
        if ages is None:
            ks = np.arange(X)
        else:
            ks = np.asarray(ages)
            if ks.dtype.kind not in "iu" or np.any((ks < 0) | (ks >= X)):
                raise ParameterError(f"ages must be interval indices in 0..{X - 1}, got {np.asarray(ages).tolist()}")
        scalar = ks.ndim == 0
        ks = np.atleast_1d(ks)
        out = w[..., None, :] / lt.l[..., ks][..., :, None]
        out = np.where(np.arange(X)[None, :] >= ks[:, None], out, 0.0)
    return out[..., 0, :] if scalar else out


def closed_interval_constants(lower, *, a=0.5, a0=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n_x``, ``n_x b_x`` and ``n_x a_x`` (``b = 1 - a``) of the closed intervals, (X-1,) each:
    the constants of the recurrences of :func:`e_only` (``a``, ``a0`` as in :func:`life_table`;
    ``a`` a scalar or per interval)."""
    lo = _check_lower(lower)
    a_arr = _broadcast_a(a, a0, lo, ())  # (X,)
    n = np.diff(lo).astype(float)
    return n, n * (1.0 - a_arr[:-1]), n * a_arr[:-1]


def e_only(deaths, exposure, lower, ages, *, a=0.5, a0=None, dtype=np.float64) -> np.ndarray:
    """Life expectancy ``e_k`` at selected interval indices only -- the lean path for
    Monte Carlo replicates.

    Same method and conventions as :func:`life_table` with ``check=False`` (no
    validation; ``nan``/``inf`` propagate), but it forms only what ``e_k`` needs, with
    ``L_x = n_x l_x / (1 + n_x b_x m_x)`` and ``l_{x+n} = l_x (1 - n_x a_x m_x) / (1 + n_x b_x m_x)``
    (``b = 1 - a``), and ``e_k = sum_{y >= k} L_y / l_k``. Equal to
    ``life_table(...).e[..., ages]`` to rounding (tested).

    Parameters
    ----------
    deaths, exposure : array_like (..., X)
    lower : array_like (X,)
    ages : sequence of int
        Interval indices ``k``.
    a, a0 : as in :func:`life_table` (``a`` scalar or per-interval (X,)).

    Returns
    -------
    ndarray (..., K)
    """
    lo = _check_lower(lower)
    a_arr = _broadcast_a(a, a0, lo, ())  # (X,)
    n = np.diff(lo).astype(float)
    D = np.asarray(deaths, dtype=dtype)
    E = np.asarray(exposure, dtype=dtype)
    ks = np.asarray(ages, dtype=np.intp)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = np.divide(D, E, dtype=dtype)
        nan = np.isnan(m)
        if nan.any():  # the zero-cell rule of life_table: D = E = 0 gives m = 0
            m[nan & (D == 0) & (E == 0)] = 0.0
        mc = m[..., :-1]
        nb = (n * (1.0 - a_arr[:-1])).astype(dtype)
        na = (n * a_arr[:-1]).astype(dtype)
        # in place, the replicate arrays being large: t = 1 + n b m, p = (1 - n a m) / t
        t = mc * nb
        t += 1.0
        p = mc * na
        np.subtract(1.0, p, out=p)
        p /= t  # 1 - q_x
        l = np.empty(m.shape, dtype=dtype)  # noqa: E741
        l[..., 0] = 1.0
        np.cumprod(p, axis=-1, out=l[..., 1:])
        L = np.empty(m.shape, dtype=dtype)
        np.multiply(l[..., :-1], n.astype(dtype), out=L[..., :-1])
        L[..., :-1] /= t
        L[..., -1] = l[..., -1] / m[..., -1]
        out = np.empty(m.shape[:-1] + ks.shape, dtype=dtype)
        for j, k in enumerate(ks):  # K partial sums are cheaper than a reversed cumsum when K << X
            out[..., j] = L[..., k:].sum(axis=-1) / l[..., k]
        return out
