r"""Indicators of a window of consecutive years, from the published cells of every year.

A window is ``k`` consecutive years ``t_1 .. t_k`` (``k = 1``: one year). Its indicators
are those of the summed counts (docs/design.md, section "Change over time and pooled
years"; ONS and PHE publish 3-year pooled life expectancy for small areas this way):

* events ``D_x = sum_t D_x(t)`` (deaths) and ``B_x = sum_t B_x(t)`` (births), each
  year's ``UNK`` spread over its own known cells first;
* person-years ``E_x = sum_t (P_x(t) + P_x(t + 1)) / 2 = sum_y w_y P_x(y)`` over the
  1 January stocks ``y = t_1 .. t_k + 1``, with ``w_y = 1/2`` for the first and the last
  stock and ``w_y = 1`` for a stock inside the window: a stock inside the window is
  the end of one year and the start of the next -- *one* published cell used by two
  years (its ``UNK`` spread over its own known cells);
* then the rates ``m_x = D_x / E_x``, the life table, ``f_x = B_x / W_x`` and
  ``TFR = sum_x n_x f_x`` exactly as for one year
  (:mod:`demonoise.demography.indicators`); for ``k = 1`` these are the single-year
  indicators.

The ``linearise_window_*`` functions return the value and its gradient with respect to
every published cell of the window, in an
:class:`~demonoise.demography.indicators.IndicatorLinearisation` whose tables are keyed
by *published cell*: ``("deaths", t)``, ``("births", t)`` and ``("pop", y)`` (the
population on 1 January of ``y``, scale ``w_y / 1`` of the exposure gradient). A
stock inside the window is one key -- one published cell -- so its two uses are
summed into one gradient, and the first-order variance
``sum_c (df/dc)^2 V_c`` counts its noise once, exactly.

Computation layer: numpy only, no I/O; any leading axes (regions x sexes x replicates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from demonoise.core.counts import spread_unknown
from demonoise.core.layout import Layout
from demonoise.demography.indicators import CellMap, IndicatorLinearisation
from demonoise.demography.lifetable import LifeTable, e_derivative, life_table

__all__ = [
    "stock_weights",
    "window_keys",
    "window_mortality_inputs",
    "window_fertility_inputs",
    "window_life_table",
    "window_values",
    "linearise_window_e",
    "linearise_window_asmr",
    "linearise_window_asfr",
    "linearise_window_tfr",
]


def stock_weights(k: int) -> np.ndarray:
    """Weights ``w_y`` of the ``k + 1`` stocks of a ``k``-year window in its person-years:
    ``1/2, 1, ..., 1, 1/2`` (``k = 1``: ``1/2, 1/2``, the average population)."""
    if k < 1:
        raise ValueError("a window has at least one year")
    w = np.ones(k + 1)
    w[0] = w[-1] = 0.5
    return w


def window_keys(years: Sequence[int]) -> dict[str, list]:
    """The published-cell keys of a window: ``deaths``/``births`` per year, ``pop`` per stock."""
    years = [int(t) for t in years]
    return {
        "deaths": [("deaths", t) for t in years],
        "births": [("births", t) for t in years],
        "pop": [("pop", y) for y in (*years, years[-1] + 1)],
    }


def _check_lengths(events, stocks) -> None:
    if len(stocks) != len(events) + 1:
        raise ValueError(f"a window of {len(events)} years needs {len(events) + 1} stocks, got {len(stocks)}")


def window_mortality_inputs(layout: Layout, deaths: Sequence, stocks: Sequence, *, grouped: bool = True):
    """Summed deaths and person-years of a window, ``(D, E)``.

    ``D = sum_t spread(D(t))`` and ``E = sum_y w_y spread(P(y))`` (:func:`stock_weights`),
    on the life-table groups (``grouped=True``) or on the published known ages.
    """
    _check_lengths(deaths, stocks)
    ax = layout.ages
    group = layout.group_lifetable if grouped else (lambda x: x)
    D = sum(group(spread_unknown(d, ax)) for d in deaths)
    w = stock_weights(len(deaths))
    E = sum(wy * group(spread_unknown(p, ax)) for wy, p in zip(w, stocks, strict=True))
    return D, E


def window_fertility_inputs(layout: Layout, births: Sequence, female_stocks: Sequence):
    """Summed births and female person-years of a window on the fertility groups, ``(B, W)``."""
    _check_lengths(births, female_stocks)
    B = sum(layout.group_births(spread_unknown(b, layout.birth_ages)) for b in births)
    w = stock_weights(len(births))
    W = sum(wy * layout.group_pop_fert(spread_unknown(p, layout.ages)) for wy, p in zip(w, female_stocks, strict=True))
    return B, W


def window_life_table(layout: Layout, deaths, stocks, *, a=0.5, a0=None, check=True) -> LifeTable:
    """The life table of the window's summed deaths and person-years."""
    D, E = window_mortality_inputs(layout, deaths, stocks)
    return life_table(D, E, layout.lt_lower, a=a, a0=a0, check=check)


def window_values(
    layout: Layout, indicator: str, *, deaths=None, stocks=None, births=None, e_idx=None, a=0.5, a0=None
) -> np.ndarray:
    """The exact indicator of a window from its published cells (no linearisation).

    ``stocks`` are the stocks of every sex (..., 3, A) for mortality; for fertility
    (``asfr``, ``tfr``) the female stocks (..., A) and ``births`` (..., B). Returns
    (..., K) (``K = 1`` for the TFR); used by the Monte Carlo of
    :mod:`demonoise.uncertainty.change` and as an independent check of the gradients.
    """
    if indicator == "e":
        lt = window_life_table(layout, deaths, stocks, a=a, a0=a0, check=False)
        return lt.e if e_idx is None else lt.e[..., e_idx]
    if indicator == "asmr":
        D, E = window_mortality_inputs(layout, deaths, stocks, grouped=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            return D / E
    B, W = window_fertility_inputs(layout, births, stocks)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = B / W
    return f if indicator == "asfr" else (f @ layout.fert_width)[..., None]


def _inverse(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), np.nan)


def _maps(years, events_key, events, stocks, ev_grp, ev_n, ev_axis, pop_grp, pop_axis):
    """Cell maps keyed by published cell: each year's events, each stock with its weight."""
    keys = window_keys(years)
    w = stock_weights(len(years))
    maps = {k: CellMap(ev_grp, ev_n, x, ev_axis) for k, x in zip(keys[events_key], events, strict=True)}
    maps.update({k: CellMap(pop_grp, ev_n, p, pop_axis, wy) for k, p, wy in zip(keys["pop"], stocks, w, strict=True)})
    return keys, maps


def linearise_window_e(
    layout: Layout, years: Sequence[int], deaths: Sequence, stocks: Sequence, *, ages=None, a=0.5, a0=None
) -> IndicatorLinearisation:
    r"""``e_k`` of a window and its gradient with respect to every published cell.

    With ``D``, ``E`` the window's summed deaths and person-years on the life-table
    groups and ``d e_k / d m_x`` the closed form of
    :func:`~demonoise.demography.lifetable.e_derivative` (Chiang 1984, ch. 10):
    ``d e_k / d D_x(t) = (d e_k / d m_x) / E_x`` for the deaths of every year ``t`` of
    the window, and ``d e_k / d P_x(y) = -w_y (d e_k / d m_x) m_x / E_x`` for the stock of
    1 January ``y`` (``w_y``: :func:`stock_weights`), each through its table's ``UNK``
    spread. Keys ``("deaths", t)`` and ``("pop", y)``.
    """
    lt = window_life_table(layout, deaths, stocks, a=a, a0=a0, check=True)
    idx = np.arange(lt.e.shape[-1]) if ages is None else np.asarray(ages)
    dm = e_derivative(lt, ages=idx)
    _, E = window_mortality_inputs(layout, deaths, stocks)
    inv_e = _inverse(E)
    gD = dm * inv_e[..., None, :]
    gE = -dm * (lt.m * inv_e)[..., None, :]
    grp, X = layout.lifetable_group_of_cell, layout.lt_lower.size
    keys, maps = _maps(years, "deaths", deaths, stocks, grp, X, layout.ages, grp, layout.ages)
    inner = {k: gD for k in keys["deaths"]} | {k: gE for k in keys["pop"]}
    return IndicatorLinearisation(lt.e[..., idx], inner=inner, maps=maps)


def linearise_window_asmr(
    layout: Layout, years: Sequence[int], deaths: Sequence, stocks: Sequence
) -> IndicatorLinearisation:
    """ASMR ``m_x = D_x / E_x`` of a window: ``d m_x / d D_x(t) = 1 / E_x``,
    ``d m_x / d P_x(y) = -w_y m_x / E_x``."""
    D, E = window_mortality_inputs(layout, deaths, stocks, grouped=False)
    inv_e = _inverse(E)
    m = D * inv_e
    grp, X = np.arange(layout.ages.n_known), layout.ages.n_known
    keys, maps = _maps(years, "deaths", deaths, stocks, grp, X, layout.ages, grp, layout.ages)
    gE = -m * inv_e
    inner = {k: inv_e for k in keys["deaths"]} | {k: gE for k in keys["pop"]}
    return IndicatorLinearisation(m, inner=inner, maps=maps, diag={k: True for k in inner})


def linearise_window_asfr(
    layout: Layout, years: Sequence[int], births: Sequence, female_stocks: Sequence
) -> IndicatorLinearisation:
    """ASFR ``f_x = B_x / W_x`` of a window: ``d f_x / d B_x(t) = 1 / W_x``,
    ``d f_x / d P^F_x(y) = -w_y f_x / W_x``; keys ``("births", t)`` and ``("pop", y)``
    (the female cells of the stock)."""
    B, W = window_fertility_inputs(layout, births, female_stocks)
    inv_w = _inverse(W)
    f = B * inv_w
    F = f.shape[-1]
    b_grp = layout.births_to_fert.argmax(axis=1)
    pM = layout.pop_to_fert
    p_grp = np.where(pM.sum(axis=1) > 0, pM.argmax(axis=1), -1)
    keys, maps = _maps(years, "births", births, female_stocks, b_grp, F, layout.birth_ages, p_grp, layout.ages)
    gW = -f * inv_w
    inner = {k: inv_w for k in keys["births"]} | {k: gW for k in keys["pop"]}
    return IndicatorLinearisation(f, inner=inner, maps=maps, diag={k: True for k in inner})


def linearise_window_tfr(
    layout: Layout, years: Sequence[int], births: Sequence, female_stocks: Sequence
) -> IndicatorLinearisation:
    """TFR of a window: the width-weighted sum of the window's ASFR gradients."""
    lin = linearise_window_asfr(layout, years, births, female_stocks)
    w = layout.fert_width
    value = (lin.value @ w)[..., None]
    inner = {m: (g * w)[..., None, :] for m, g in lin.inner.items()}
    return IndicatorLinearisation(value, inner=inner, maps=lin.maps)
