r"""Change over time and pooled years under noise: first order, exact in the shared cells.

For two windows of consecutive years (one year each, or ``k`` pooled years each; see
:mod:`demonoise.demography.pooled`) the change of an indicator is
``Delta f = f(w_to) - f(w_from)``. Its first-order noise variance runs over every
published cell ``c`` of either window (docs/design.md, section "Change over time and
pooled years")::

    Var_noise Delta f = sum_c (d f(w_to)/d c - d f(w_from)/d c)^2 V_c
    Var_pois  Delta f = sum_{event cells} (d f(w_to)/d c - d f(w_from)/d c)^2 c
    bias      Delta f = sum_c (d f(w_to)/d c - d f(w_from)/d c) b_c      (p-tables)

A cell both windows use is ONE published cell with ONE noise draw: the population on
1 January of ``t + 1`` is the end stock of year ``t`` and the start stock of year
``t + 1``, so for consecutive years its two gradients meet in one term,
``(g_to - g_from)^2 V = g_to^2 V + g_from^2 V - 2 g_to g_from V`` -- a covariance that
"the sum of the two years' variances" leaves out. Overlapping pooled windows share
events as well; events of different years are independent, and stocks carry no
Poisson term. Cells of one window only enter with their one gradient.

Decision quantities: ``z = Delta f / sd_total`` with and without noise, and the
smallest detectable change at two-sided significance ``alpha`` and power ``1 - beta``,
``MDC = (z_{1 - alpha/2} + z_{1 - beta}) sd_total`` (5 % and 80 %: 2.80 sd), with and
without noise.

The Monte Carlo (:func:`monte_carlo_change`) draws every published cell of the two
windows once (noise and Poisson, common random numbers between the ``noise`` and
``total`` components), recomputes both windows' indicators exactly
(:func:`demonoise.demography.pooled.window_values`) and the change, in seeded blocks
spawned from one :class:`numpy.random.SeedSequence`.

Computation layer: no I/O.

References
----------
Chiang, C. L. (1984). *The Life Table and its Applications*. Krieger, ch. 10.
Office for National Statistics: life expectancy for local areas of the UK (3-year
pooled deaths and populations); Public Health England, Public Health Outcomes
Framework technical guidance (3-year pooled life expectancy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from demonoise.core.counts import Counts, Panel
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.layout import Layout, publish
from demonoise.demography.indicators import INDICATORS, IndicatorLinearisation
from demonoise.demography.pooled import (
    linearise_window_asfr,
    linearise_window_asmr,
    linearise_window_e,
    linearise_window_tfr,
    window_fertility_inputs,
    window_keys,
    window_mortality_inputs,
    window_values,
)
from demonoise.uncertainty.montecarlo import blocks
from demonoise.uncertainty.propagation import TABLES, check_noised

__all__ = [
    "Window",
    "WindowBlock",
    "WindowLinearised",
    "Difference",
    "ChangeLinearised",
    "publish_panel",
    "linearise_window",
    "linearise_change",
    "window_cells",
    "cell_moments",
    "change_moments",
    "level_moments",
    "mdc_factor",
    "monte_carlo_change",
]


@dataclass(frozen=True)
class Window:
    """Consecutive years ``first .. last`` (``first == last``: one year)."""

    first: int
    last: int

    def __post_init__(self):
        if int(self.last) < int(self.first):
            raise ParameterError(f"empty window {self.first}-{self.last}")

    @classmethod
    def ending(cls, last: int, k: int = 1) -> Window:
        """The ``k`` years ending with ``last``."""
        if int(k) < 1:
            raise ParameterError(f"a pooled window needs at least one year, got pool={k}")
        return cls(int(last) - int(k) + 1, int(last))

    @property
    def years(self) -> tuple[int, ...]:
        return tuple(range(int(self.first), int(self.last) + 1))

    @property
    def k(self) -> int:
        return len(self.years)

    @property
    def label(self) -> str:
        return str(self.last) if self.k == 1 else f"{self.first}-{self.last}"


@dataclass(frozen=True)
class WindowBlock:
    """One indicator of one window over regions x sexes x ages, linearised with respect to
    the published cells, keyed ``("deaths", t)``, ``("births", t)``, ``("pop", y)``."""

    indicator: str
    sexes: tuple
    age_lower: np.ndarray
    age_labels: tuple
    lin: IndicatorLinearisation
    events: np.ndarray
    exposure: np.ndarray
    female_only: bool = False


@dataclass(frozen=True)
class WindowLinearised:
    """Every requested indicator of one window of a published panel."""

    panel: Panel  # as published (granularity applied), the whole panel
    layout: Layout
    window: Window
    granularity: str
    blocks: dict = field(default_factory=dict)
    lifetable_kw: dict = field(default_factory=dict)  # a, a0 of the life table


def publish_panel(panel: Panel, granularity: str = "single", **kw) -> Panel:
    """Every year of ``panel`` published at ``granularity`` (:func:`demonoise.core.layout.publish`);
    a stock shared by two years stays one cell (the same re-publication of the same counts)."""
    return Panel.from_counts([publish(panel.year(t), granularity, **kw) for t in panel.years], name=panel.name)


def _fail(msg: str, panel: Panel, window: Window, r: int, s: str | None, age: str) -> DataError:
    return DataError(
        f"{msg} (window {window.label})", dataset=panel.name, region=panel.codes[r], sex=s, age=age, year=window.last
    )


def _mortality_block(kind, pub, lay, win, e_ages, a, a0) -> WindowBlock:
    years, deaths, stocks = win.years, list(pub.deaths), list(pub.stocks)
    if kind == "asmr":
        D, E = window_mortality_inputs(lay, deaths, stocks, grouped=False)
        bad = (E <= 0) & (D > 0)
        if bad.any():
            r, s, x = (int(i) for i in np.argwhere(bad)[0])
            raise _fail("deaths with zero exposure", pub, win, r, pub.sexes[s], lay.ages.labels[x])
        lin = linearise_window_asmr(lay, years, deaths, stocks)
        ax = lay.ages
        return WindowBlock(kind, pub.sexes, np.array(ax.lower, float), ax.labels[: ax.n_known], lin, D, E)
    D, E = window_mortality_inputs(lay, deaths, stocks)
    bad = (E <= 0) & (D > 0)
    if bad.any():
        r, s, x = (int(i) for i in np.argwhere(bad)[0])
        raise _fail("deaths with zero exposure", pub, win, r, pub.sexes[s], lay.lt_labels[x])
    if (D[..., -1] <= 0).any():
        r, s = (int(i) for i in np.argwhere(D[..., -1] <= 0)[0])
        raise _fail(
            "no deaths in the open age group: the life table is undefined", pub, win, r, pub.sexes[s], lay.lt_labels[-1]
        )
    lower = lay.lt_lower
    idx = np.arange(lower.size) if e_ages is None else np.array([_lt_index(lower, k) for k in e_ages])
    lin = linearise_window_e(lay, years, deaths, stocks, ages=idx, a=a, a0=a0)
    Dk = np.flip(np.cumsum(np.flip(D, -1), -1), -1)[..., idx]
    Ek = np.flip(np.cumsum(np.flip(E, -1), -1), -1)[..., idx]
    return WindowBlock("e", pub.sexes, lower[idx], tuple(lay.lt_labels[i] for i in idx), lin, Dk, Ek)


def _lt_index(lower, k) -> int:
    hit = np.nonzero(lower == k)[0]
    if not hit.size:
        raise ParameterError(f"e_{k}: age {k} is not a life-table interval start")
    return int(hit[0])


def _fertility_block(kind, pub, lay, win) -> WindowBlock:
    years, births = win.years, list(pub.births)
    fstocks = [s[:, 0] for s in pub.stocks]
    B, W = window_fertility_inputs(lay, births, fstocks)
    if (W <= 0).any():
        r, x = (int(i) for i in np.argwhere(W <= 0)[0])
        raise _fail(
            "zero female exposure: the fertility rate and the TFR are undefined", pub, win, r, "F", lay.fert_labels[x]
        )
    if kind == "asfr":
        lin = linearise_window_asfr(lay, years, births, fstocks).with_axis(1)
        return WindowBlock(kind, ("F",), lay.fert_lower, lay.fert_labels, lin, B[:, None], W[:, None], True)
    lin = linearise_window_tfr(lay, years, births, fstocks).with_axis(1)
    ev, ex = B.sum(-1)[:, None, None], W.sum(-1)[:, None, None]
    return WindowBlock(kind, ("F",), np.array([np.nan]), ("",), lin, ev, ex, True)


def linearise_window(
    published: Panel,
    window: Window,
    *,
    granularity: str = "single",
    indicators=INDICATORS,
    e_ages=None,
    open_age: int = 85,
    a=0.5,
    a0=None,
    fert_min: int = 15,
    fert_max: int = 49,
) -> WindowLinearised:
    """Linearise the indicators of ``window`` of an already published panel (:func:`publish_panel`).

    Raises
    ------
    ParameterError
        A year of the window not in the panel, an unknown indicator, a table missing.
    DataError
        Deaths with zero person-years, an empty open age group, zero female person-years
        -- naming region, sex, age and the window.
    """
    bad = set(indicators) - set(INDICATORS)
    if bad:
        raise ParameterError(f"unknown indicator(s) {sorted(bad)}; choose from {', '.join(INDICATORS)}")
    pub = published.window(window.first, window.last)
    lay = Layout.of(pub.year(window.first), open_age=open_age, fert_min=fert_min, fert_max=fert_max)
    blocks = {}
    for kind in indicators:
        if kind in ("asmr", "e"):
            if pub.deaths is None:
                raise ParameterError(f"dataset {published.name!r} has no deaths: {kind} not available")
            blocks[kind] = _mortality_block(kind, pub, lay, window, e_ages, a, a0)
        else:
            if pub.births is None:
                raise ParameterError(f"dataset {published.name!r} has no births: {kind} not available")
            blocks[kind] = _fertility_block(kind, pub, lay, window)
    return WindowLinearised(published, lay, window, granularity, blocks, {"a": a, "a0": a0})


# ----------------------------------------------------------------------------- cells
def window_cells(panel: Panel, years: Sequence[int], female_only: bool | None) -> dict:
    """Published cells of the windows' years keyed ``("deaths", t)``, ``("births", t)``,
    ``("pop", y)``, shaped like the gradients' trailing axes: mortality
    (``female_only=False``) the deaths and stocks of every sex, fertility (``True``) the
    births and the female stocks with a sex axis of length 1; ``None``: every table as
    held (births (R, B), stocks and deaths (R, 3, A))."""
    years = sorted({int(t) for t in years})
    out = {}
    for y in sorted({y for t in years for y in (t, t + 1)}):
        s = panel.stock(y)
        out[("pop", y)] = s[:, 0][:, None] if female_only else s
    for t in years:
        i = panel.index(t)
        if panel.deaths is not None and not female_only:
            out[("deaths", t)] = panel.deaths[i]
        if panel.births is not None and female_only is not False:
            out[("births", t)] = panel.births[i][:, None] if female_only else panel.births[i]
    return out


def _noised_kinds(noised) -> set:
    """Which kinds of published cell carry noise: ``deaths``, ``births``, ``pop`` (any
    of the tables ``pop_start``/``pop_end`` noised: a stock is both)."""
    noised = check_noised(noised)
    kinds = {m for m in noised if m in ("deaths", "births")}
    if {"pop_start", "pop_end"} & set(noised):
        kinds.add("pop")
    return kinds


def cell_moments(cells: dict, noise, noised=TABLES) -> tuple[dict, dict, dict]:
    """``(noise variance, noise bias, Poisson variance)`` per keyed published cell.

    Noise sits on the cells of the ``noised`` kinds, each key once (its exact moments
    for the cell's count under a p-table); the Poisson variance ``Var(c) = c`` on event
    cells only."""
    kinds = _noised_kinds(noised)
    var, bias, pois = {}, {}, {}
    for key, c in cells.items():
        if key[0] in kinds:
            var[key] = np.asarray(noise.variance(c), dtype=float)
            bias[key] = np.asarray(noise.bias(c), dtype=float)
        if key[0] in ("deaths", "births"):
            pois[key] = np.asarray(c, dtype=float)
    return var, bias, pois


# ----------------------------------------------------------------------------- the change
class Difference:
    """``f(w_to) - f(w_from)`` linearised over the published cells of both windows.

    A key both linearisations hold is one published cell: its gradient is
    ``g_to - g_from``, materialised and squared in one term; a key of one window only
    keeps its structured variance (:meth:`IndicatorLinearisation.table_variance`).
    """

    def __init__(self, lin_to: IndicatorLinearisation, lin_from: IndicatorLinearisation):
        self.lin_to, self.lin_from = lin_to, lin_from
        self.value = lin_to.value - lin_from.value
        self.shared = tuple(m for m in lin_to.tables if m in set(lin_from.tables))

    def variance(self, cell_variance: dict, *, ignore_shared: bool = False) -> np.ndarray:
        """``sum_c (g_to,c - g_from,c)^2 v_c``; with ``ignore_shared`` the two windows'
        variances added as if independent (what leaving out the covariance gives)."""
        out = np.zeros(self.value.shape)
        for m in dict.fromkeys((*self.lin_to.tables, *self.lin_from.tables)):
            v = cell_variance.get(m)
            if v is None:
                continue
            if m in self.shared and not ignore_shared:
                g = self.lin_to.table_grad(m) - self.lin_from.table_grad(m)
                out = out + np.einsum("...ka,...a->...k", g * g, np.asarray(v, dtype=float))
                continue
            for lin in (self.lin_to, self.lin_from):
                if m in lin.tables:
                    out = out + lin.table_variance(m, v)
        return out

    def covariance(self, cell_variance: dict) -> np.ndarray:
        """``sum_{shared c} g_to,c g_from,c v_c``: the covariance of the two windows' values."""
        out = np.zeros(self.value.shape)
        for m in self.shared:
            v = cell_variance.get(m)
            if v is not None:
                g = self.lin_to.table_grad(m) * self.lin_from.table_grad(m)
                out = out + np.einsum("...ka,...a->...k", g, np.asarray(v, dtype=float))
        return out

    def shift(self, cell_bias: dict) -> np.ndarray:
        """First-order bias of the change, ``sum_c (g_to,c - g_from,c) b_c``."""
        return self.lin_to.shift(cell_bias) - self.lin_from.shift(cell_bias)


@dataclass(frozen=True)
class ChangeLinearised:
    """Both windows linearised and, per indicator, their :class:`Difference`."""

    published: Panel
    w_from: WindowLinearised
    w_to: WindowLinearised
    diffs: dict

    @property
    def years(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.w_from.window.years) | set(self.w_to.window.years)))

    def cells(self, female_only: bool) -> dict:
        return window_cells(self.published, self.years, female_only)


def linearise_change(
    panel: Panel | Counts,
    year_from: int,
    year_to: int,
    *,
    pool: int = 1,
    granularity: str = "single",
    indicators=INDICATORS,
    **kw,
) -> ChangeLinearised:
    """Linearise the change from the window of ``pool`` years ending with ``year_from`` to
    the one ending with ``year_to`` (``pool = 1``: year on year).

    ``kw``: ``e_ages``, ``open_age``, ``a``, ``a0``, ``fert_min``, ``fert_max``
    (:func:`linearise_window`).
    """
    if isinstance(panel, Counts):
        panel = Panel.from_counts([panel])
    if int(year_to) <= int(year_from):
        raise ParameterError(f"--to ({year_to}) must be after --from ({year_from})")
    w_from, w_to = Window.ending(year_from, pool), Window.ending(year_to, pool)
    for w in (w_from, w_to):
        for t in w.years:
            panel.index(t)
    fk = {k: kw[k] for k in ("fert_min", "fert_max") if k in kw}
    pub = publish_panel(panel.window(w_from.first, w_to.last), granularity, **fk)
    lz_from = linearise_window(pub, w_from, granularity=granularity, indicators=indicators, **kw)
    lz_to = linearise_window(pub, w_to, granularity=granularity, indicators=indicators, **kw)
    diffs = {i: Difference(lz_to.blocks[i].lin, lz_from.blocks[i].lin) for i in lz_to.blocks}
    return ChangeLinearised(pub, lz_from, lz_to, diffs)


def mdc_factor(alpha: float = 0.05, power: float = 0.8) -> float:
    """``z_{1 - alpha/2} + z_{power}``: the smallest detectable change in units of its sd
    (two-sided test at level ``alpha``; 2.8016 for 5 % and 80 %)."""
    if not (0 < alpha < 1) or not (0 < power < 1):
        raise ParameterError(f"alpha and power must lie in (0, 1), got alpha={alpha}, power={power}")
    nd = NormalDist()
    return nd.inv_cdf(1.0 - alpha / 2.0) + nd.inv_cdf(power)


def change_moments(cl: ChangeLinearised, indicator: str, noise, noised=TABLES) -> dict:
    """First-order moments of the change of ``indicator``: ``change``, ``var_noise``,
    ``var_pois``, ``bias`` (first-order noise bias; 0 for unbiased noise) and
    ``cov_noise`` (the covariance of the two windows' values through shared cells)."""
    d = cl.diffs[indicator]
    female = cl.w_to.blocks[indicator].female_only
    var, bias, pois = cell_moments(cl.cells(female), noise, noised)
    return {
        "change": d.value,
        "var_noise": d.variance(var),
        "var_pois": d.variance(pois),
        "bias": d.shift(bias),
        "cov_noise": d.covariance(var),
    }


def level_moments(wl: WindowLinearised, indicator: str, noise, noised=TABLES) -> dict:
    """First-order moments of one window's indicator: ``value``, ``var_noise``, ``var_pois``, ``bias``."""
    b = wl.blocks[indicator]
    cells = window_cells(wl.panel, wl.window.years, b.female_only)
    var, bias, pois = cell_moments(cells, noise, noised)
    return {
        "value": b.lin.value,
        "var_noise": b.lin.variance(var),
        "var_pois": b.lin.variance(pois),
        "bias": b.lin.shift(bias),
    }


# ----------------------------------------------------------------------------- Monte Carlo
_COMPONENTS = ("noise", "poisson", "total")


def _draw(cells: dict, kinds: set, noise, size: int, g_noise, g_pois, floor_zero: bool):
    """Replicates of every keyed cell per component: ``{component: {key: (size, ...)}}``."""
    indep = bool(getattr(noise, "count_independent", False))
    out = {c: {} for c in _COMPONENTS}
    for key, x in cells.items():
        x = np.asarray(x, dtype=float)
        shape = (size,) + x.shape
        base = np.broadcast_to(x, shape)
        pois = g_pois.poisson(base).astype(float) if key[0] in ("deaths", "births") else base
        if key[0] in kinds:
            u = g_noise.random(shape)
            if indep:
                eps = noise.noise_from_uniform(u)
                noisy, total = base + eps, pois + eps
            else:
                noisy, total = noise.perturb(base, u), noise.perturb(pois, u)
            if floor_zero:
                noisy, total = np.maximum(noisy, 0), np.maximum(total, 0)
        else:
            noisy, total = base, pois
        out["noise"][key], out["poisson"][key], out["total"][key] = noisy, pois, total
    return out


def _window_value(wl: WindowLinearised, indicator: str, x: dict, e_idx):
    """The exact indicator of one window from replicated cells (every table as held)."""
    keys = window_keys(wl.window.years)
    if indicator in ("asfr", "tfr"):
        births = [x[k] for k in keys["births"]]
        fstocks = [x[k][..., 0, :] for k in keys["pop"]]
        return window_values(wl.layout, indicator, births=births, stocks=fstocks)[..., None, :]
    stocks = [x[k] for k in keys["pop"]]
    return window_values(
        wl.layout, indicator, deaths=[x[k] for k in keys["deaths"]], stocks=stocks, e_idx=e_idx, **wl.lifetable_kw
    )


def monte_carlo_change(
    cl: ChangeLinearised,
    noise,
    *,
    n: int = 10_000,
    seed: int = 20230101,
    indicators=("e", "tfr"),
    noised=TABLES,
    block: int = 250,
    floor_zero: bool = False,
    progress=None,
) -> dict:
    """Monte Carlo of the change and of both windows' values: every published cell of the
    two windows drawn once per replicate (a shared stock is one draw), the indicators
    recomputed exactly.

    Returns
    -------
    dict
        ``{(indicator, what, component): {"sd", "mean", "n_valid"}}`` with ``what`` in
        ``change``, ``to``, ``from`` and ``component`` in ``noise``, ``poisson``,
        ``total``; ``mean`` is the mean deviation from the unperturbed value. The
        result depends on ``seed``, ``n`` and ``block`` only: the blocks are seeded by the
        children of ``SeedSequence(seed)``, spawned a chunk at a time
        (:func:`demonoise.uncertainty.montecarlo.blocks`), so a run of 10^9 replicates
        holds no list of millions of seeds. ``progress(done)`` is called after each block.
    """
    kinds = _noised_kinds(noised)
    inds = [i for i in indicators if i in cl.diffs]
    cells = cl.cells(None)
    refs = {}
    for i in inds:
        refs[(i, "to")] = np.nan_to_num(cl.w_to.blocks[i].lin.value)
        refs[(i, "from")] = np.nan_to_num(cl.w_from.blocks[i].lin.value)
        refs[(i, "change")] = refs[(i, "to")] - refs[(i, "from")]
    e_idx = {w: None for w in ("to", "from")}
    if "e" in inds:
        for w, wl in (("to", cl.w_to), ("from", cl.w_from)):
            e_idx[w] = np.searchsorted(wl.layout.lt_lower, wl.blocks["e"].age_lower)
    sums = {}
    done = 0
    for size, ss in blocks(n, block, seed):
        s_noise, s_pois = ss.spawn(2)
        draws = _draw(
            cells, kinds, noise, size, np.random.default_rng(s_noise), np.random.default_rng(s_pois), floor_zero
        )
        for comp, x in draws.items():
            for i in inds:
                vt = _window_value(cl.w_to, i, x, e_idx["to"])
                vf = _window_value(cl.w_from, i, x, e_idx["from"])
                for what, v in (("to", vt), ("from", vf), ("change", vt - vf)):
                    ok = np.isfinite(v)
                    dv = np.where(ok, v - refs[(i, what)], 0.0)
                    acc = sums.setdefault((i, what, comp), [0, 0.0, 0.0])
                    acc[0] = acc[0] + ok.sum(0)
                    acc[1] = acc[1] + dv.sum(0)
                    acc[2] = acc[2] + (dv * dv).sum(0)
        done += size
        if progress is not None:
            progress(done)
    out = {}
    for key, (nv, s1, s2) in sums.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = s1 / nv
            var = (s2 - nv * mean * mean) / (nv - 1)
        out[key] = {"sd": np.sqrt(np.maximum(var, 0.0)), "mean": mean, "n_valid": nv}
    return out
