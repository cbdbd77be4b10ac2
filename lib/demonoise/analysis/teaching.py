r"""The variance of life expectancy, step by step, each step with a numerical twin.

Computation layer (numpy only, no I/O, no plotting): the teaching notebook
(``notebooks/teaching.ipynb``) calls these functions and shows what they return.

The derivation (docs/design.md, sections "The life table" and "First-order propagation";
:func:`demonoise.demography.lifetable.e_derivative`) goes through the life table one column
at a time. For a closed interval ``x`` of width
``n`` (``n = 1`` in the complete table), ``b = 1 - a_x``:

1. ``q_x = n m / (1 + n b m)``                       ->  ``dq_x/dm_x = n / (1 + n b m)^2``
2. ``l_{x+n} = l_x (1 - q_x)``                        ->  ``dl_{x+n}/dm_x = -n l_x / (1 + n b m)^2``
3. ``L_x = n l_x / (1 + n b m)``                      ->  ``dL_x/dm_x = -n^2 b l_x / (1 + n b m)^2``
4. ``T_k = sum_{k<=y<x} L_y + L_x + l_{x+n} e_{x+n}`` ->  ``dT_k/dm_x = dL_x/dm_x + e_{x+n} dl_{x+n}/dm_x``
   (product rule; ``e_{x+n}`` depends on rates above ``x`` only)
5. open interval ``w``: ``L_w = l_w / m_w``            ->  ``dT_k/dm_w = -l_w / m_w^2``
6. ``e_k = T_k / l_k`` and ``l_k`` does not depend on ``m_x`` for ``x >= k``
   ->  ``de_k/dm_x = (dT_k/dm_x) / l_k`` for ``x >= k``, 0 below ``k``;
7. chain rule through ``m = D / E``: ``de/dD_x = (de/dm_x) / E_x``,
   ``de/dE_x = -(de/dm_x) m_x / E_x``, ``E_x = (P_x(t) + P_x(t+1)) / 2``;
8. ``Var(e_k) = sum_x (de_k/dm_x)^2 Var(m_x)``,
   ``Var(m_x) = (Var D_x + m_x^2 Var E_x) / E_x^2``: Poisson ``Var D_x = D_x``,
   ``Var E_x = 0``; noise on ``c_x`` published cells of variance ``V`` each,
   ``Var D_x = c_x V`` and ``Var E_x = c_x V / 2``.

Each closed form here has a finite-difference twin computed from the life table itself
(:func:`demonoise.demography.lifetable.life_table_from_rates`, :func:`demonoise.demography.indicators.life_expectancy`)
by central differences, all perturbations in one vectorised pass (the perturbed
quantity becomes a leading axis).

Change over time (:func:`change_steps`, docs/design.md, section "Change over time and
pooled years"): for ``Delta e = e(t_2) - e(t_1)`` the noise variance over every published
cell ``c`` of the two years is ``sum_c (de(t_2)/dc - de(t_1)/dc)^2 V_c``; the population
on 1 January of ``t_2`` is one cell both years use, so
``Var Delta e = Var e(t_2) + Var e(t_1) - 2 Cov``, ``Cov = sum_{shared c} de(t_2)/dc
de(t_1)/dc V_c``. Its twin: the gradient of the exact change with respect to every cell
of the shared stock by central differences. Pooling (:func:`pooling_gain`): the level and
the smallest detectable change of a ``k``-year window against one year.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from demonoise.core.errors import ParameterError
from demonoise.core.layout import Layout
from demonoise.demography.indicators import life_expectancy
from demonoise.demography.lifetable import LifeTable, e_derivative, life_table_from_rates

__all__ = [
    "STEPS",
    "closed_form_steps",
    "STEPS_TEX",
    "finite_difference_steps",
    "count_gradients_fd",
    "max_relative_error",
    "check_steps",
    "cells_per_group",
    "variance_terms",
    "unknown_cell_variance",
    "change_steps",
    "pooling_gain",
]

#: The derivation steps checked by :func:`check_steps`: (key, what, closed form).
STEPS = (
    ("dq", "d q_x / d m_x", "n / (1 + n b m_x)^2"),
    ("dl", "d l_{x+n} / d m_x", "-n l_x / (1 + n b m_x)^2"),
    ("dL", "d L_x / d m_x", "-n^2 b l_x / (1 + n b m_x)^2;  open: -l_w / m_w^2"),
    ("dT", "d T_0 / d m_x", "dL_x/dm_x + e_{x+n} dl_{x+n}/dm_x;  open: -l_w / m_w^2"),
    ("de", "d e_k / d m_x", "(d T_k / d m_x) / l_k for x >= k, else 0"),
)


#: The same steps typeset (TeX, for ``$...$``): step -> (derivative, closed form), with
#: ``n`` the interval width, ``b_x = 1 - a_x`` and ``\omega`` the open group.
STEPS_TEX = {
    "dq": (r"\partial q_x / \partial m_x", r"\frac{n}{(1 + n b_x m_x)^2}"),
    "dl": (r"\partial l_{x+n} / \partial m_x", r"-\frac{n\, l_x}{(1 + n b_x m_x)^2}"),
    "dL": (
        r"\partial L_x / \partial m_x",
        r"-\frac{n^2 b_x l_x}{(1 + n b_x m_x)^2}; \text{ open group: } -\frac{l_\omega}{m_\omega^2}",
    ),
    "dT": (
        r"\partial T_0 / \partial m_x",
        r"\frac{\partial L_x}{\partial m_x} + e_{x+n} \frac{\partial l_{x+n}}{\partial m_x}; "
        r"\text{ open group: } -\frac{l_\omega}{m_\omega^2}",
    ),
    "de": (
        r"\partial e_k / \partial m_x",
        r"\frac{1}{l_k} \frac{\partial T_k}{\partial m_x} \text{ for } x \ge k, \text{ else } 0",
    ),
}


def closed_form_steps(lt: LifeTable, ages=(0,)) -> dict:
    r"""Closed-form derivatives of every life-table column with respect to its own ``m_x``.

    Parameters
    ----------
    lt : LifeTable
        Any leading axes, life-table ages last (``X`` intervals, the last one open).
    ages : sequence of int
        Interval *indices* ``k`` of ``e_k`` for the last step.

    Returns
    -------
    dict of ndarray
        ``dq``, ``dL``, ``dT`` of shape (..., X); ``dl`` (..., X-1) (the open interval
        has no successor); ``de`` (..., K, X) from :func:`~demonoise.demography.lifetable.e_derivative`.
        ``dq`` of the open interval is 0 (``q_w = 1`` whatever ``m_w``).

    Notes
    -----
    Equations in the module docstring (steps 1-6); with ``d = 1 + n b m``::

        dq_x/dm_x = n / d^2,   dl_{x+n}/dm_x = -n l_x / d^2,   dL_x/dm_x = -n^2 b l_x / d^2
        dT_k/dm_x = dL_x/dm_x + e_{x+n} dl_{x+n}/dm_x = -n l_x (n b + e_{x+n}) / d^2
        dT_k/dm_w = dL_w/dm_w = -l_w / m_w^2

    References: Chiang (1984), ch. 10; Preston, Heuveline & Guillot (2001), section 3.2.
    """
    n = lt.n[:-1]
    b = 1.0 - lt.a[..., :-1]
    mc = lt.m[..., :-1]
    lc = lt.l[..., :-1]
    d2 = (1.0 + n * b * mc) ** 2
    lead = lt.shape[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        dq = np.concatenate([n / d2, np.zeros(lead + (1,))], axis=-1)
        dl = -n * lc / d2
        dL_open = -lt.l[..., -1:] / lt.m[..., -1:] ** 2
        dL = np.concatenate([-(n**2) * b * lc / d2, dL_open], axis=-1)
        dT = np.concatenate([dL[..., :-1] + lt.e[..., 1:] * dl, dL_open], axis=-1)
    de = e_derivative(lt, ages=np.atleast_1d(np.asarray(ages)))
    return {"dq": dq, "dl": dl, "dL": dL, "dT": dT, "de": de}


def _steps_h(m: np.ndarray, rel_step: float, floor: float) -> np.ndarray:
    return rel_step * np.maximum(np.abs(m), floor)


def finite_difference_steps(m, lower, *, ages=(0,), a=0.5, a0=None, rel_step: float = 1e-5, floor: float = 0.1) -> dict:
    r"""Central finite differences of the life-table columns with respect to each ``m_x``.

    Every rate is perturbed by ``+-h_x``, ``h_x = rel_step * max(|m_x|, floor)``, one at
    a time but in one vectorised pass: the perturbed rate becomes an extra axis, so the
    life tables of all ``2 X`` perturbations of all leading cells are built at once
    (:func:`~demonoise.demography.lifetable.life_table_from_rates` without checks). Then
    ``f'(m_x) ~ (f(m_x + h) - f(m_x - h)) / (2 h)``, whose error is ``O(h^2)``.

    Parameters
    ----------
    m : array_like (..., X)
        Death rates on the life-table axis.
    lower : array_like (X,)
        Interval starts (last interval open).
    ages : sequence of int
        Interval indices ``k`` of ``e_k``.
    a, a0 : as in :func:`demonoise.demography.lifetable.life_table`.
    rel_step, floor : float
        Step size rule (a floor keeps the step positive where ``m_x = 0``).

    Returns
    -------
    dict of ndarray
        Same keys and shapes as :func:`closed_form_steps`; ``dT`` is ``dT_0/dm_x``.
    """
    m = np.asarray(m, dtype=float)
    X = m.shape[-1]
    ks = np.atleast_1d(np.asarray(ages))
    h = _steps_h(m, rel_step, floor)  # (..., X)
    eye = np.eye(X)
    bump = h[..., :, None] * eye  # (..., X_perturbed, X)
    a = np.asarray(a, dtype=float)
    if a.ndim:  # per-interval (or per-cell) a: add the perturbation axis
        a = a[..., None, :]
    if a0 is not None and np.ndim(a0):
        a0 = np.asarray(a0, dtype=float)[..., None]
    plus = life_table_from_rates(m[..., None, :] + bump, lower, a=a, a0=a0, check=False)
    minus = life_table_from_rates(m[..., None, :] - bump, lower, a=a, a0=a0, check=False)
    two_h = 2.0 * h
    idx = np.arange(X)

    def own(col):  # d col_x / d m_x: the diagonal of the perturbation axis
        return (getattr(plus, col)[..., idx, idx] - getattr(minus, col)[..., idx, idx]) / two_h

    dl = (plus.l[..., idx[:-1], idx[:-1] + 1] - minus.l[..., idx[:-1], idx[:-1] + 1]) / two_h[..., :-1]
    dT = (plus.T[..., :, 0] - minus.T[..., :, 0]) / two_h
    de = (plus.e[..., :, ks] - minus.e[..., :, ks]) / two_h[..., :, None]  # (..., X, K)
    return {"dq": own("q"), "dl": dl, "dL": own("L"), "dT": dT, "de": np.swapaxes(de, -1, -2)}


def count_gradients_fd(
    layout: Layout, deaths, pop_start, pop_end, ages=(0,), *, a=0.5, a0=None, rel_step: float = 3e-4, floor: float = 1.0
) -> dict:
    r"""Central finite differences of ``e_k`` with respect to every *published* cell.

    The whole chain a statistical office runs -- published cells, ``UNK`` spread, the
    open group summed from its cells, ``E = (P(t) + P(t+1)) / 2``, ``m = D / E``, the life
    table -- is recomputed with each cell perturbed by ``+-h``,
    ``h = rel_step * max(|cell|, mean |cell| of its row, floor)``
    (:func:`demonoise.demography.indicators.life_expectancy`, no checks), vectorised over the
    perturbed cell. The row mean keeps the step useful for empty cells (an ``UNK``
    cell of 0 moves a whole table through the proportional spread).

    Parameters
    ----------
    layout : Layout
    deaths, pop_start, pop_end : array_like (..., A)
        Published cells (``UNK`` last if the axis has it).
    ages : sequence of int
        Interval indices ``k``.

    Returns
    -------
    dict of ndarray (..., K, A)
        Keyed like :attr:`demonoise.demography.indicators.IndicatorLinearisation.grads`: ``deaths``,
        ``pop_start``, ``pop_end``; compare with
        :func:`demonoise.demography.indicators.linearise_e` (closed form + chain rule).
    """
    cells = {
        "deaths": np.asarray(deaths, dtype=float),
        "pop_start": np.asarray(pop_start, dtype=float),
        "pop_end": np.asarray(pop_end, dtype=float),
    }
    ks = np.atleast_1d(np.asarray(ages))
    out = {}
    for name, c in cells.items():
        A = c.shape[-1]
        typical = np.maximum(np.abs(c).mean(axis=-1, keepdims=True), floor)
        h = rel_step * np.maximum(np.abs(c), typical)
        bump = h[..., :, None] * np.eye(A)
        up = _e_with_one_table_moved(layout, cells, name, +bump, ks, a, a0)
        down = _e_with_one_table_moved(layout, cells, name, -bump, ks, a, a0)
        out[name] = np.swapaxes((up - down) / (2.0 * h[..., :, None]), -1, -2)
    return out


def _e_with_one_table_moved(layout, cells: dict, name: str, shift, ks, a, a0) -> np.ndarray:
    """``e_k`` with table ``name`` moved by each row of ``shift`` (..., A, A) in turn,
    the other tables as published; shape (..., A, K)."""
    args = {k: v[..., None, :] + shift if k == name else v[..., None, :] for k, v in cells.items()}
    lt = life_expectancy(layout, args["deaths"], args["pop_start"], args["pop_end"], a=a, a0=a0, check=False)
    return lt.e[..., ks]


def max_relative_error(approx, exact, *, rtol_zero: float = 1e-12) -> float:
    r"""``max |approx - exact| / |exact|`` over the entries where ``exact != 0``.

    Entries where ``exact`` is zero (e.g. ``de_k/dm_x`` below ``k``) are judged on the
    absolute difference relative to the largest ``|exact|``, so that a spurious
    non-zero there is not hidden. Non-finite pairs raise.
    """
    approx, exact = np.broadcast_arrays(np.asarray(approx, dtype=float), np.asarray(exact, dtype=float))
    if not (np.all(np.isfinite(approx)) and np.all(np.isfinite(exact))):
        raise ParameterError("max_relative_error: non-finite derivatives (zero exposure or an empty open group?)")
    scale = np.max(np.abs(exact)) if exact.size else 0.0
    if scale == 0:
        return float(np.max(np.abs(approx), initial=0.0))
    nz = np.abs(exact) > rtol_zero * scale
    rel = np.abs(approx[nz] - exact[nz]) / np.abs(exact[nz])
    zero = np.abs(approx[~nz] - exact[~nz]) / scale
    return float(max(np.max(rel, initial=0.0), np.max(zero, initial=0.0)))


def check_steps(lt: LifeTable, ages=(0,), *, rel_step: float = 1e-5) -> list[dict]:
    """Closed form against finite differences for every step of :data:`STEPS`.

    Parameters
    ----------
    lt : LifeTable
        The table whose rates are differentiated (``lt.m``, ``lt.lower``, ``lt.a``).
    ages : sequence of int
        Interval indices ``k`` of the ``e_k`` step.

    Returns
    -------
    list of dict
        One per step: ``step``, ``derivative``, ``closed_form`` (plain text),
        ``derivative_tex``, ``closed_form_tex`` (:data:`STEPS_TEX`), ``max_rel_error``,
        ``values`` (number of derivatives compared).
    """
    a = lt.a  # per-interval a (a_0 included), broadcast view
    cf = closed_form_steps(lt, ages)
    fd = finite_difference_steps(lt.m, lt.lower, ages=ages, a=np.array(a), a0=None, rel_step=rel_step)
    rows = []
    for key, what, formula in STEPS:
        rows.append(
            {
                "step": key,
                "derivative": what,
                "closed_form": formula,
                "derivative_tex": STEPS_TEX[key][0],
                "closed_form_tex": STEPS_TEX[key][1],
                "max_rel_error": max_relative_error(fd[key], cf[key]),
                "values": int(np.size(cf[key])),
            }
        )
    return rows


def cells_per_group(layout: Layout) -> np.ndarray:
    """Number of published known-age cells in each life-table interval, (X,).

    E.g. 1 for each single age and 16 for 85+ (Y85..Y99, Y_OPEN) in Eurostat's NUTS 2
    layout; 1 for every group when the counts are published in 5-year groups.
    """
    return layout.to_lifetable.sum(axis=0)


def variance_terms(de_dm, D, E, cells, V: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-age terms of ``Var(e_k) = sum_x (de_k/dm_x)^2 Var(m_x)`` (step 8).

    Parameters
    ----------
    de_dm : ndarray (..., K, X)
        Closed-form derivatives (:func:`~demonoise.demography.lifetable.e_derivative`).
    D, E : ndarray (..., X)
        Deaths and exposure of the life-table intervals.
    cells : ndarray (X,)
        Published cells per interval (:func:`cells_per_group`).
    V : float
        Noise variance per published cell.

    Returns
    -------
    (poisson, noise) : two ndarrays (..., K, X)
        ``(de/dm_x)^2 D_x / E_x^2`` and ``(de/dm_x)^2 (c_x V + m_x^2 c_x V / 2) / E_x^2``;
        summed over ``x`` they are the Poisson and noise variances of ``e_k`` (equal to
        the library's :meth:`~demonoise.demography.indicators.IndicatorLinearisation.variance` when no age
        is unknown).
    """
    D = np.asarray(D, dtype=float)[..., None, :]
    E = np.asarray(E, dtype=float)[..., None, :]
    m = D / E
    g2 = np.asarray(de_dm, dtype=float) ** 2
    c = np.asarray(cells, dtype=float)
    pois = g2 * D / E**2
    noise = g2 * (c * V + m**2 * c * V / 2.0) / E**2
    return pois, noise


def unknown_cell_variance(de_dm, D, E, P0, P1, V: float = 1.0) -> np.ndarray:
    r"""Noise variance of ``e_k`` that enters through the three ``UNK`` cells (deaths and
    both 1 January stocks).

    ``UNK`` is a published cell of its own, so it receives noise of variance ``V`` even
    when it holds 0; the indicator spreads it over the known ages in proportion
    (:func:`demonoise.core.counts.spread_unknown`): ``dD_x/du_D = D_x / sum_y D_y`` and
    ``dE_x/du_P = P_x / (2 sum_y P_y)`` for each stock. With
    ``de/dD_x = (de/dm_x)/E_x`` and ``de/dE_x = -(de/dm_x) m_x/E_x``::

        Var_UNK(e_k) = V [ (sum_x de/dD_x D_x/S_D)^2
                           + sum_{P in P(t), P(t+1)} (sum_x de/dE_x P_x/(2 S_P))^2 ]

    Parameters
    ----------
    de_dm : ndarray (..., K, X)
    D, E, P0, P1 : ndarray (..., X)
        Deaths, exposure and the two stocks on the life-table intervals (known ages).
    V : float

    Returns
    -------
    ndarray (..., K)
        Added to ``variance_terms(...)[1].sum(-1)`` it gives the library's noise variance
        (:meth:`demonoise.demography.indicators.IndicatorLinearisation.variance`) when the ``UNK`` cells hold 0.
    """
    g = np.asarray(de_dm, dtype=float)
    D, E, P0, P1 = (np.asarray(v, dtype=float)[..., None, :] for v in (D, E, P0, P1))
    gD = g / E
    gE = -g * (D / E) / E
    uD = (gD * D).sum(-1) / D.sum(-1)
    u0 = (gE * P0).sum(-1) / (2.0 * P0.sum(-1))
    u1 = (gE * P1).sum(-1) / (2.0 * P1.sum(-1))
    return V * (uD**2 + u0**2 + u1**2)


# ----------------------------------------------------------------------------- change over time
def _exact_change(cl, e_idx: dict, cells: dict) -> np.ndarray:
    """``e(w_to) - e(w_from)`` recomputed exactly from keyed cells (leading axes kept)."""
    from demonoise.demography.pooled import window_keys, window_values

    out = []
    for wl in (cl.w_to, cl.w_from):
        keys = window_keys(wl.window.years)
        out.append(
            window_values(
                wl.layout,
                "e",
                deaths=[cells[k] for k in keys["deaths"]],
                stocks=[cells[k] for k in keys["pop"]],
                e_idx=e_idx[wl.window.last],
                **wl.lifetable_kw,
            )
        )
    return out[0] - out[1]


def change_steps(panel, region: str, *, year_from: int, year_to: int, V: float = 1.0, age: float = 0.0, step=0.2):
    """The noise variance of the change of ``e_age`` of one region from ``year_from`` to the
    next year, term by term, with its numerical twin.

    Parameters
    ----------
    panel : Panel
        Consecutive years (:func:`demonoise.io.datasets.load_panel`).
    region : str
    year_from, year_to : int
        Consecutive years (``year_to = year_from + 1``: they share the stock of 1 January
        ``year_to``).
    V : float
        Generic noise variance on every published cell.
    age : float
        ``k`` of ``e_k``.
    step : float
        Central-difference step on a count (0.2: the change is a difference of two
        values near 80 years, so much smaller steps lose digits to rounding).

    Returns
    -------
    dict
        Per noise placement (``"every cell"``; ``"stocks only"``: noise on the 1 January
        stocks alone, where the shared stock is the whole story), arrays over the sexes
        ``F, M, T``: ``var_from``, ``var_to`` (each year's noise variance), ``cov``
        (through the shared stock), ``var_change`` (the library's), ``var_formula``
        (``var_to + var_from - 2 cov``), ``var_independent`` (``var_to + var_from``); and
        ``grad_fd_max_rel_error``: the gradient of the exact change with respect to every
        cell of the shared stock by central differences against the library's
        ``de(t_2)/dc - de(t_1)/dc``, all three sexes, with ``grad_cells`` compared.

    Raises
    ------
    ParameterError
        Years that are not consecutive, or not in the panel.
    """
    from demonoise.noise.models import GenericNoise
    from demonoise.uncertainty.change import cell_moments, level_moments, linearise_change

    if int(year_to) != int(year_from) + 1:
        raise ParameterError(f"change_steps compares consecutive years, got {year_from} and {year_to}")
    cl = linearise_change(panel.select([region]), year_from, year_to, indicators=("e",), e_ages=[float(age)])
    d = cl.diffs["e"]
    noise = GenericNoise(float(V))
    out = {}
    for name, noised in (("every cell", ("deaths", "pop_start", "pop_end")), ("stocks only", ("pop_start", "pop_end"))):
        var, _, _ = cell_moments(cl.cells(False), noise, noised)
        lv = {w: level_moments(wl, "e", noise, noised)["var_noise"] for w, wl in (("to", cl.w_to), ("from", cl.w_from))}
        cov = d.covariance(var)
        out[name] = {
            "var_from": lv["from"][0, :, 0],
            "var_to": lv["to"][0, :, 0],
            "cov": cov[0, :, 0],
            "var_change": d.variance(var)[0, :, 0],
            "var_formula": (lv["to"] + lv["from"] - 2 * cov)[0, :, 0],
            "var_independent": (lv["to"] + lv["from"])[0, :, 0],
        }
    # the twin: d Delta e / d P(year_to) by central differences, every cell of the shared stock
    key = ("pop", int(year_to))
    base = cl.cells(None)
    x = np.asarray(base[key], dtype=float)[0]  # (3, A)
    n = x.size
    e_idx = {
        wl.window.last: np.searchsorted(wl.layout.lt_lower, wl.blocks["e"].age_lower) for wl in (cl.w_to, cl.w_from)
    }
    moved = []
    for sign in (1.0, -1.0):
        cells = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,) + np.shape(v)).copy() for k, v in base.items()}
        cells[key].reshape(n, n)[np.arange(n), np.arange(n)] += sign * step
        moved.append(_exact_change(cl, e_idx, cells)[:, 0, :, 0])  # (n, 3 sexes)
    fd = (moved[0] - moved[1]) / (2.0 * step)  # d Delta e_s / d cell
    g = (d.lin_to.table_grad(key) - d.lin_from.table_grad(key))[0, :, 0, :]  # (3, A): sex s, cell (s, a)
    exact = np.zeros((n, 3))
    A = x.shape[-1]
    for s in range(3):
        exact[s * A : (s + 1) * A, s] = g[s]
    out["grad_fd_max_rel_error"] = max_relative_error(fd, exact)
    out["grad_cells"] = int(n)
    return out


def pooling_gain(panel, region: str, *, year_to: int, V=(1.0, 5.0), k: int = 3, alpha=0.05, power=0.8):
    """What pooling ``k`` years buys one region: e0 of the ``k`` years ending with ``year_to``
    against ``year_to`` alone -- the level's Poisson and noise sd, the admixture, and the
    smallest detectable change of the year-on-year change against that of the change from
    the ``k`` years before (:func:`demonoise.analysis.change.change_table`, pools 1 and ``k``).

    Returns
    -------
    pandas.DataFrame
        One row per sex, setting and pooling: ``pool``, ``window_to``, ``sd_poisson_to``,
        ``sd_noise_to``, ``admixture_to``, ``window_from``, ``mdc_poisson``, ``mdc_total``.
    """
    from demonoise.analysis.change import change_table
    from demonoise.analysis.compute import noise_settings

    sub = panel.select([region])
    settings = noise_settings(list(V))
    kw = {"indicators": ("e",), "e_ages": [0], "alpha": alpha, "power": power}
    parts = [
        change_table(sub, settings, year_from=int(year_to) - kk, year_to=int(year_to), pools=(kk,), **kw)
        for kk in (1, int(k))
    ]

    t = pd.concat(parts, ignore_index=True)
    cols = ["region", "sex", "setting", "pool", "window_from", "window_to", "value_to", "sd_poisson_to", "sd_noise_to"]
    cols += ["admixture_to", "mdc_poisson", "mdc_total"]
    return t[cols].reset_index(drop=True)
