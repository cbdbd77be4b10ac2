r"""The fused Monte Carlo engine: a plan built once, then independent blocks of replicates.

:func:`build_plan` turns a linearised dataset and a noise model into a :class:`Plan`
(small arrays: the published cells summed into *draw groups*, the noise laws, the maps to
the indicators' age groups). :func:`run_block` is a pure function
``(plan, block size, SeedSequence child) -> partial sums`` -- what a local worker process
or a task on a cluster runs: a block's result depends on its own seed only, so the sums
over blocks are the same whatever the number of workers or the order they finish in.

What is drawn
-------------
The indicators depend on the published cells only through sums: the life table through
the deaths and the two stocks of each of its age groups (``0..84`` single, ``85+`` summed
from ``85..99, 100+``), the ASFR and TFR through the births and women of each fertility
group (``15`` holds ``<15``, ``49`` holds ``50+``). So each table's known cells are
partitioned into draw groups, the coarsest partition that every requested indicator
resolves (life-table groups for ``e``; single cells for ASMR; fertility groups for the
births and women), and what is drawn per replicate is one number per group:

* **Poisson**: the events of a group, a sum of independent Poisson cells, are one draw
  from Poisson(sum of the observed counts) -- exact. ``T`` deaths are the sum of the
  ``F`` and ``M`` draws when the published ``T`` cells are ``F + M`` (the marginal law of
  every ``T`` cell is unchanged). Each draw is one uniform through an alias table of its
  Poisson law (:func:`demonoise.uncertainty.mc_kernels.poisson_alias_tables`; tails
  below 1e-18 of the mass left out, under the resolution of a uniform): several times
  cheaper than a rejection sampler, and the same law.
* **Generic noise** (count-independent, no zero floor): the noise of a group of ``k``
  cells, a sum of ``k`` independent draws, is one draw from the ``k``-fold convolution of
  the law (:meth:`demonoise.noise.models.GenericNoise.sum_law`) -- exact; e.g. the open
  group 85+ of single-age tables (16 cells) draws once from the 16-fold law. From
  :data:`demonoise.noise.models.ROUNDED_V` on, that draw is a rounded Gaussian of variance
  ``k V`` (:func:`demonoise.noise.models.rounded_gaussian`) and nothing is tabulated; with
  a ``D`` whose ``k``-fold laws would exceed :data:`MAX_LAW_POINTS`, the per-cell path.
* **Unknown ages** (``UNK``): the noisy ``UNK`` cell is drawn on its own (every published
  cell gets noise), and spreading it in proportion multiplies every known cell of the
  row by the same factor ``1 + UNK / S`` (``S`` the known total), so it commutes with the
  grouping as long as the groups cover every known cell (they do: cells no indicator
  uses are kept as a group of their own). Where ``S <= 0`` the spread is uniform, which
  needs only each group's number of cells. What the spread forbids is summing across
  the two stocks: with an ``UNK`` cell the factors of ``P(t)`` and ``P(t+1)`` differ, so
  the exposure ``(P(t) + P(t+1)) / 2`` of a group is not one draw from the 2-fold law;
  both stocks are drawn per group (without ``UNK`` this would be exact, but it is not
  used, for one code path).
* **Count-dependent noise (p-tables) or a zero floor**: the noise of a sum is not a
  function of the group's sum (a p-table's law depends on each cell's count;
  ``max(0, n + e)`` is not additive), so these run the exact per-cell path: every
  published cell gets its own uniform, is perturbed by the model's own
  :meth:`~demonoise.noise.models.NoiseModel.perturb` and floored, and only then summed
  into groups; the Poisson events are drawn per cell (numpy's ``Generator.poisson``)
  and perturbed with the same uniforms (common random numbers, as below).

The ``noise`` and ``total`` components use the same uniforms for the noise (common
random numbers): with generic noise ``total = Poisson + the same noise``. The seed
semantics are those of the reference engine: one :class:`numpy.random.SeedSequence` of
``seed``, spawned into one child per block, each spawned into a noise and a Poisson
stream; the draws differ from the reference engine's (fewer of them), the laws do not.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from demonoise.demography.indicators import exposure
from demonoise.demography.lifetable import closed_interval_constants
from demonoise.uncertainty.propagation import TABLES

__all__ = ["Plan", "build_plan", "run_block", "fused_block_size", "exact_grouping"]

_EVENTS = ("deaths", "births")
_MORTALITY = ("e", "asmr")
_FERTILITY = ("asfr", "tfr")
#: Most replicates per block (the innermost axis of the kernels' arrays).
MAX_BLOCK = 256
#: Most support points of the alias tables of the ``k``-fold laws of the grouped path (about
#: 0.6 s to build and 56 MB); beyond, generic noise with a ``D`` takes the per-cell path.
MAX_LAW_POINTS = 10**6


def exact_grouping(noise, floor_zero: bool) -> bool:
    """Whether the noise of a group of cells can be drawn as one number: count-independent
    noise with a known law (``law()`` and ``sum_law(k)``) and no zero floor."""
    grouped_law = callable(getattr(noise, "sum_law", None))
    return bool(getattr(noise, "count_independent", False)) and grouped_law and not floor_zero


@dataclass
class TablePlan:
    """One published table as the kernels see it.

    Attributes
    ----------
    rows : int
        Region x sex rows (regions for births).
    cells : ndarray (rows, A) int64
        Published cells (``UNK`` last when ``unk``).
    group : ndarray (A,) int64
        Draw column of each cell (``UNK`` -> ``ng``).
    ng : int
        Known draw groups; columns are ``ng + unk``.
    size : ndarray (ng,) float
        Known cells per group.
    orig : ndarray (rows, columns, 1) float
        Group sums of the published cells.
    law : ndarray (columns,) int64
        Index of the noise law (``k``-fold) of each column.
    event_rows : ndarray of int or None
        Rows drawn for the Poisson component (events only): ``F`` and ``M`` when ``T`` is
        their sum (``t_sum``), else all.
    """

    name: str
    rows: int
    cells: np.ndarray
    group: np.ndarray
    ng: int
    unk: bool
    size: np.ndarray
    n_known: int
    orig: np.ndarray
    noised: bool
    law: np.ndarray
    event_rows: np.ndarray | None = None
    t_sum: bool = False

    @property
    def ncols(self) -> int:
        return self.ng + int(self.unk)


@dataclass
class Plan:
    """Everything a block needs (picklable; a few MB for ess-2023)."""

    token: str
    components: np.ndarray  # (3,) bool: noise, poisson, total
    indicators: tuple
    noise: object
    floor_zero: bool
    grouped: bool
    tables: dict
    laws: tuple  # offset, width, prob, value, alias_value of the k-fold laws (grouped path)
    shapes: dict  # indicator -> (R, S, K)
    refs: dict  # indicator -> (rows, K) reference values
    keep: dict  # indicator -> "", "f4" or "f8"
    e: dict = field(default_factory=dict)
    asmr: dict = field(default_factory=dict)
    fert: dict = field(default_factory=dict)
    round_sd: np.ndarray | None = None  # sigma of each k-fold law drawn by rounding a Gaussian (grouped path)

    @property
    def need_noise(self) -> bool:
        return bool(self.components[0] or self.components[2])

    @property
    def need_poisson(self) -> bool:
        return bool(self.components[1] or self.components[2])


# --------------------------------------------------------------------------- plan
def _draw_groups(keys: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Coarsest partition of the cells on which every key is constant, in order of first cell."""
    stacked = np.stack(keys, axis=1)
    _, first, inv = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inv.ravel()], int(first.size)


def _first_of(group: np.ndarray, ng: int, key: np.ndarray) -> np.ndarray:
    """The key of each draw group (constant over its cells)."""
    out = np.full(ng, -1, dtype=np.int64)
    out[group[::-1]] = key[::-1]  # the first cell's key (any: they agree)
    return out


def _table(name, cells2d, axis, keys, noised, grouped, noise) -> tuple[TablePlan, np.ndarray]:
    known_group, ng = _draw_groups(keys)
    unk = bool(axis.unknown)
    group = np.append(known_group, ng) if unk else known_group
    size = np.bincount(known_group, minlength=ng).astype(float)
    ncols = ng + int(unk)
    orig = np.zeros((cells2d.shape[0], ncols))
    np.add.at(orig.T, group, cells2d.T.astype(float))
    law = np.zeros(ncols, dtype=np.int64)
    sizes = np.append(size, 1.0) if unk else size
    if grouped:
        law = sizes.astype(np.int64)  # law index = k for now, compacted below
    t = TablePlan(
        name, cells2d.shape[0], np.ascontiguousarray(cells2d, dtype=np.int64), group.astype(np.int64), ng, unk,
        size, axis.n_known, orig[:, :, None].copy(), noised, law,
    )  # fmt: skip
    return t, known_group


def _sum_sizes(tables: dict) -> list[int]:
    """The numbers of cells ``k`` of the draw groups of ``tables``, sorted."""
    return sorted({int(k) for t in tables.values() for k in t.law})


def _tabulable(noise, tables: dict) -> bool:
    """Whether the ``k``-fold laws of the draw groups can be drawn: by rounding a Gaussian,
    or through alias tables of at most :data:`MAX_LAW_POINTS` points in all (else the
    per-cell path draws each cell, from a law of ``2 D + 1`` points)."""
    if getattr(noise, "rounded", False):
        return True
    return sum(noise.sum_law_points(k) for k in _sum_sizes(tables)) <= MAX_LAW_POINTS


def _round_scales(noise, tables: dict) -> np.ndarray:
    """``sigma`` of the rounded Gaussian of each ``k``-fold law; ``law`` re-indexed into them."""
    ks = _sum_sizes(tables)
    index = {k: i for i, k in enumerate(ks)}
    for t in tables.values():
        t.law = np.array([index[int(k)] for k in t.law], dtype=np.int64)
    return np.array([noise.sum_sd(k) for k in ks])


def _laws(noise, tables: dict) -> tuple:
    """Alias tables of the ``k``-fold laws the tables need; ``law`` re-indexed into them."""
    from demonoise.noise.models import alias_table

    ks = _sum_sizes(tables)
    offset, width, prob, val, alias = [], [], [], [], []
    at = 0
    for k in ks:
        p, v, a = alias_table(*noise.sum_law(k))
        offset.append(at), width.append(p.size), prob.append(p), val.append(v), alias.append(a)
        at += p.size
    index = {k: i for i, k in enumerate(ks)}
    for t in tables.values():
        t.law = np.array([index[int(k)] for k in t.law], dtype=np.int64)
    return (
        np.array(offset, dtype=np.int64),
        np.array(width, dtype=np.int64),
        np.concatenate(prob),
        np.concatenate(val).astype(np.float64),
        np.concatenate(alias).astype(np.float64),
    )


def build_plan(lz, noise, *, indicators, components, floor_zero, noised, quantiles, n, store_limit) -> Plan:
    """The :class:`Plan` of a Monte Carlo on ``lz`` (arguments as in
    :func:`demonoise.uncertainty.montecarlo.monte_carlo`, already checked)."""
    c, lay = lz.counts, lz.layout
    R, S = len(c.codes), len(c.sexes)
    grouped = exact_grouping(noise, floor_zero)
    mort = [i for i in indicators if i in _MORTALITY]
    fert = [i for i in indicators if i in _FERTILITY]
    tables = {}
    # keys of the cells of each table: every requested indicator's group of the cell
    pop_keys, death_keys = [], []
    if "e" in mort:
        lt = lay.lifetable_group_of_cell.astype(np.int64)
        pop_keys.append(lt), death_keys.append(lt)
    if "asmr" in mort:
        cell = np.arange(lay.ages.n_known, dtype=np.int64)
        pop_keys.append(cell), death_keys.append(cell)
    if fert:
        M = lay.pop_to_fert
        pop_keys.append(np.where(M.sum(axis=1) > 0, M.argmax(axis=1), -1).astype(np.int64))
    pop_known = {}
    for m in ("pop_start", "pop_end"):
        arr = getattr(c, m)
        tables[m], pop_known[m] = _table(m, arr.reshape(R * S, -1), lay.ages, pop_keys, m in noised, grouped, noise)
    if mort:
        tables["deaths"], death_known = _table(
            "deaths", c.deaths.reshape(R * S, -1), lay.ages, death_keys, "deaths" in noised, grouped, noise
        )
    if fert:
        Mb = lay.births_to_fert
        bkey = np.where(Mb.sum(axis=1) > 0, Mb.argmax(axis=1), -1).astype(np.int64)
        tables["births"], birth_known = _table(
            "births", c.births, lay.birth_ages, [bkey], "births" in noised, grouped, noise
        )
    _event_rows(tables, c, R, S)
    grouped, round_sd, laws = _sampling(noise, tables, grouped)
    comps = np.array([k in components for k in ("noise", "poisson", "total")])
    refs, shapes, keep = _references(lz, indicators, quantiles, n * len(components), store_limit)
    plan = Plan(
        uuid.uuid4().hex, comps, tuple(indicators), noise, bool(floor_zero), grouped, tables, laws, shapes, refs, keep,
        round_sd=round_sd,
    )  # fmt: skip
    p = tables["pop_start"]
    E_known = exposure(c.pop_start, c.pop_end, lay.ages)  # (R, S, known ages), no noise
    if "e" in mort:
        lt = lay.lifetable_group_of_cell.astype(np.int64)
        nw, nb, na = closed_interval_constants(lay.lt_lower, **lz.lifetable_kw)
        e_idx = np.searchsorted(lay.lt_lower, lz.blocks["e"].age_lower)
        kpos = np.full(lay.lt_lower.size, -1, dtype=np.int64)
        kpos[e_idx] = np.arange(e_idx.size)
        d = tables["deaths"]
        plan.e = dict(
            d_map=_first_of(death_known, d.ng, lt), p_map=_first_of(pop_known["pop_start"], p.ng, lt),
            nw=nw, nb=nb, na=na, kpos=kpos, e_orig=_rows2d(lay.group_lifetable(E_known)),
        )  # fmt: skip
    if "asmr" in mort:
        cell = np.arange(lay.ages.n_known, dtype=np.int64)
        d = tables["deaths"]
        plan.asmr = dict(
            d_map=_first_of(death_known, d.ng, cell), p_map=_first_of(pop_known["pop_start"], p.ng, cell),
            p_row=np.arange(R * S, dtype=np.int64), G=int(lay.ages.n_known), width=np.ones(lay.ages.n_known),
            e_orig=_rows2d(E_known),
        )  # fmt: skip
    if fert:
        M = lay.pop_to_fert
        fkey = np.where(M.sum(axis=1) > 0, M.argmax(axis=1), -1).astype(np.int64)
        b = tables["births"]
        plan.fert = dict(
            b_map=_first_of(birth_known, b.ng, bkey), p_map=_first_of(pop_known["pop_start"], p.ng, fkey),
            p_row=np.arange(R, dtype=np.int64) * S, G=int(lay.fert_width.size),
            width=np.asarray(lay.fert_width, dtype=float), e_orig=_rows2d(lay.group_pop_fert(E_known[:, 0])),
        )  # fmt: skip
    return plan


def _event_rows(tables: dict, c, R: int, S: int) -> None:
    """Rows of the events drawn for the Poisson component: deaths of ``F`` and ``M`` only
    when the published ``T`` cells are their sums, births of every region."""
    for m, t in tables.items():
        if m == "deaths":
            t_sum = S == 3 and np.array_equal(c.deaths[:, 2], c.deaths[:, 0] + c.deaths[:, 1])
            rows = np.arange(R * S).reshape(R, S)
            t.event_rows = rows[:, :2].ravel() if t_sum else rows.ravel()
            t.t_sum = bool(t_sum)
        elif m == "births":
            t.event_rows = np.arange(R)


def _sampling(noise, tables: dict, grouped: bool) -> tuple[bool, np.ndarray | None, tuple]:
    """How the draw groups' noise is drawn: ``(grouped, round_sd, laws)`` -- by rounding a
    Gaussian, through alias tables of the k-fold laws, or per cell (``grouped`` false)."""
    if grouped and not _tabulable(noise, tables):
        grouped = False
        for t in tables.values():
            t.law = np.zeros_like(t.law)
    if grouped and getattr(noise, "rounded", False):
        return True, _round_scales(noise, tables), ()
    return grouped, None, _laws(noise, tables) if grouped else ()


def _references(lz, indicators, quantiles, values_per_cell: int, store_limit: float) -> tuple[dict, dict, dict]:
    """Reference values (rows, K), shapes and the storage of replicate values of each
    indicator: ``"f8"``, ``"f4"`` when only that fits ``store_limit`` bytes, ``""`` none."""
    refs, shapes, keep = {}, {}, {}
    for i in indicators:
        v = np.nan_to_num(lz.blocks[i].lin.value)
        shapes[i] = v.shape
        refs[i] = np.ascontiguousarray(v.reshape(-1, v.shape[-1]), dtype=float)
        nbytes = values_per_cell * v.size * 8
        keep[i] = (
            "" if not quantiles else ("f8" if nbytes <= store_limit else ("f4" if nbytes / 2 <= store_limit else ""))
        )
    return refs, shapes, keep


def _rows2d(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.reshape(-1, a.shape[-1]), dtype=np.float64)


def fused_block_size(plan: Plan, n: int, memory_limit: float) -> int:
    """Replicates per block: working memory of a block below ``memory_limit`` bytes.

    Depends on the problem and ``memory_limit`` only (never on the number of workers), so
    the blocks and their seeds are the same however they are scheduled."""
    per_rep = 0
    for m, t in plan.tables.items():
        width = t.ncols if plan.grouped else t.cells.shape[1] * 4 + t.ncols * 2
        if plan.need_noise and t.noised:
            per_rep += t.rows * width
        if m in _EVENTS and plan.need_poisson:
            per_rep += t.rows * width * 2
    for i in plan.indicators:
        if plan.keep[i]:
            per_rep += int(plan.components.sum()) * plan.refs[i].size
    return int(max(1, min(MAX_BLOCK, n, memory_limit // max(1, 8 * per_rep))))


# --------------------------------------------------------------------------- blocks
_POISSON_TABLES: dict = {}


def _poisson_tables(plan: Plan, t: TablePlan):
    """Alias tables of the Poisson laws of ``t``'s event groups, built once per process and plan."""
    from demonoise.uncertainty import mc_kernels as K

    key = (plan.token, t.name)
    if key not in _POISSON_TABLES:
        for k in [k for k in _POISSON_TABLES if k[0] != plan.token]:
            del _POISSON_TABLES[k]
        lam = np.ascontiguousarray(t.orig[t.event_rows, :, 0]).ravel()
        index = np.arange(lam.size, dtype=np.int64).reshape(t.event_rows.size, t.ncols)
        _POISSON_TABLES[key] = (index,) + K.poisson_alias_tables(lam)
    return _POISSON_TABLES[key]


def _full_events(t: TablePlan, drawn: np.ndarray) -> np.ndarray:
    """Event draws of every row from those of ``t.event_rows`` (``T = F + M`` when ``t_sum``)."""
    if not t.t_sum and t.event_rows.size == t.rows:
        return drawn
    full = np.empty((t.rows,) + drawn.shape[1:])
    full[t.event_rows] = drawn
    full[2::3] = full[0::3] + full[1::3]
    return full


def _draw_grouped(plan: Plan, B: int, g_noise, g_pois):
    """Grouped path: one uniform per (row, draw group, replicate) for the noise (``k``-fold
    law) and one per event group for the Poisson draw (alias tables)."""
    from demonoise.uncertainty import mc_kernels as K

    eps, pois = {}, {}
    if plan.need_noise:
        for m in TABLES:
            t = plan.tables.get(m)
            if t is not None and t.noised:
                raw = g_noise.bit_generator.random_raw((t.rows, t.ncols, B))
                if plan.round_sd is not None:
                    eps[m] = _rounded_draws(raw, plan.round_sd[t.law])
                    continue
                eps[m] = raw.view(np.float64)
                K.alias_in_place(raw, eps[m], t.law, *plan.laws)
    if plan.need_poisson:
        for m in _EVENTS:
            t = plan.tables.get(m)
            if t is not None:
                raw = g_pois.bit_generator.random_raw((t.event_rows.size, t.ncols, B))
                drawn = raw.view(np.float64)
                K.poisson_in_place(raw, drawn, *_poisson_tables(plan, t))
                pois[m] = _full_events(t, drawn)
    return eps, dict(eps), pois


def _rounded_draws(raw: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Raw 64-bit draws (rows, columns, B) -> rounded Gaussian noise of ``sd[column]``
    (:func:`demonoise.noise.models.rounded_gaussian`), as float64; the uniform is the one
    ``Generator.random`` makes of the same bits, ``(raw >> 11) 2^-53``."""
    from demonoise.noise.models import rounded_gaussian

    u = (raw >> np.uint64(11)).astype(np.float64)
    u *= 2.0**-53
    return rounded_gaussian(u, sd[None, :, None]).astype(np.float64)


def _draw_cells(plan: Plan, B: int, g_noise, g_pois):
    """Exact per-cell path (count-dependent noise or a zero floor): every published cell
    is perturbed by the model with its own uniform, floored, then summed into groups."""
    from demonoise.uncertainty import mc_kernels as K

    noise, floor = plan.noise, plan.floor_zero

    def perturb(cells, u):
        y = noise.perturb(cells, u)
        return np.maximum(y, 0) if floor else y

    def grouped(t, x):
        out = np.empty((t.rows, t.ncols, B))
        K.group_sums(np.ascontiguousarray(x, dtype=np.float64), t.group, t.ncols, out)
        return out

    eps_noise, eps_total, pois, uniforms = {}, {}, {}, {}
    if plan.need_noise:
        for m in TABLES:
            t = plan.tables.get(m)
            if t is not None and t.noised:
                u = g_noise.random((t.rows, t.cells.shape[1], B))
                c = np.broadcast_to(t.cells[:, :, None], u.shape)
                eps_noise[m] = grouped(t, perturb(c, u) - c)
                if m not in _EVENTS:
                    eps_total[m] = eps_noise[m]
                else:
                    uniforms[m] = u
    if plan.need_poisson:
        for m in _EVENTS:
            t = plan.tables.get(m)
            if t is None:
                continue
            lam = t.cells[t.event_rows][:, :, None]
            drawn = g_pois.poisson(np.broadcast_to(lam, (lam.shape[0], lam.shape[1], B)))
            pc = _full_events(t, drawn.astype(np.int64)).astype(np.int64)
            pois[m] = grouped(t, pc)
            if plan.components[2] and m in uniforms:
                eps_total[m] = grouped(t, perturb(pc, uniforms[m]) - pc)
    return eps_noise, eps_total, pois


_PLACEHOLDER = np.zeros((1, 1, 1))


def _outputs(plan: Plan, ind: str, B: int):
    rows, K = plan.refs[ind].shape
    keep = bool(plan.keep[ind])
    store = np.empty((3, B, rows, K)) if keep else np.zeros((3, 1, 1, 1))
    return np.zeros((3, rows, K), dtype=np.int64), np.zeros((3, rows, K)), np.zeros((3, rows, K)), store, keep


def _stocks(plan: Plan, eps: dict, B: int):
    """Noise of the two stocks (zeros for a stock without noise, when the other has some)."""
    p0, p1 = plan.tables["pop_start"], plan.tables["pop_end"]
    noisy = plan.need_noise and (p0.noised or p1.noised)
    if not noisy:
        return _PLACEHOLDER, _PLACEHOLDER, False
    z = np.zeros((p0.rows, p0.ncols, B))
    return eps.get("pop_start", z), eps.get("pop_end", z), True


def run_block(plan: Plan, size: int, seed_seq: np.random.SeedSequence) -> dict:
    """One block of ``size`` replicates drawn from ``seed_seq`` -> partial sums.

    Returns ``{(indicator, component): {"n", "s1", "s2"[, "values"]}}`` with the count of
    finite replicates, the sums of deviations from the reference value and of their
    squares (each shaped like the indicator block (R, S, K)), and the replicate values
    (size, R, S, K) where quantiles are kept. A pure function of its arguments.
    """
    from demonoise.uncertainty import mc_kernels as K

    B = int(size)
    s_noise, s_pois = seed_seq.spawn(2)
    g_noise, g_pois = np.random.default_rng(s_noise), np.random.default_rng(s_pois)
    draw = _draw_grouped if plan.grouped else _draw_cells
    eps_noise, eps_total, pois = draw(plan, B, g_noise, g_pois)
    e0, e1, p_noised = _stocks(plan, eps_noise, B)
    p = plan.tables["pop_start"]
    comps = plan.components
    results = {}
    if plan.e:
        d, e = plan.tables["deaths"], plan.e
        n_o, s1, s2, store, keep = _outputs(plan, "e", B)
        K.e_block(
            comps, d.orig, pois.get("deaths", _PLACEHOLDER), eps_noise.get("deaths", _PLACEHOLDER),
            eps_total.get("deaths", _PLACEHOLDER), d.noised and plan.need_noise, d.ng, d.unk, e["d_map"], d.size,
            d.n_known, p.orig, e0, plan.tables["pop_end"].orig, e1, p_noised, p.ng, p.unk, e["p_map"], p.size,
            p.n_known, e["e_orig"], e["nw"], e["nb"], e["na"], e["kpos"], plan.refs["e"], n_o, s1, s2, store, keep,
            0, B,
        )  # fmt: skip
        results["e"] = (n_o, s1, s2, store, keep)
    for name, spec, events, rates, total in (
        ("asmr", plan.asmr, "deaths", "asmr", None),
        ("fert", plan.fert, "births", "asfr", "tfr"),
    ):
        if not spec:
            continue
        t = plan.tables[events]
        rates = rates if rates in plan.indicators else None
        total = total if total in plan.indicators else None
        r_out = _outputs(plan, rates, B) if rates else _outputs_placeholder()
        t_out = _outputs(plan, total, B) if total else _outputs_placeholder()
        K.ratio_block(
            comps, t.orig, pois.get(events, _PLACEHOLDER), eps_noise.get(events, _PLACEHOLDER),
            eps_total.get(events, _PLACEHOLDER), t.noised and plan.need_noise, t.ng, t.unk,
            spec["b_map" if name == "fert" else "d_map"], t.size, t.n_known, p.orig, e0,
            plan.tables["pop_end"].orig, e1, p_noised, spec["p_row"], p.ng, p.unk, spec["p_map"], p.size, p.n_known,
            spec["e_orig"], spec["G"], spec["width"], rates is not None, total is not None,
            plan.refs[rates] if rates else np.zeros((1, 1)), *r_out[:4], r_out[4],
            plan.refs[total] if total else np.zeros((1, 1)), *t_out[:4], t_out[4], 0, B,
        )  # fmt: skip
        if rates:
            results[rates] = r_out
        if total:
            results[total] = t_out
    out = {}
    for ind, (n_o, s1, s2, store, keep) in results.items():
        shape = plan.shapes[ind]
        for ci, comp in enumerate(("noise", "poisson", "total")):
            if not comps[ci]:
                continue
            rec = {"n": n_o[ci].reshape(shape), "s1": s1[ci].reshape(shape), "s2": s2[ci].reshape(shape)}
            if keep:
                vals = store[ci].reshape((B,) + shape)
                rec["values"] = vals.astype(np.float32) if plan.keep[ind] == "f4" else vals.copy()
            out[(ind, comp)] = rec
    return out


def _outputs_placeholder():
    return (
        np.zeros((3, 1, 1), dtype=np.int64),
        np.zeros((3, 1, 1)),
        np.zeros((3, 1, 1)),
        np.zeros((3, 1, 1, 1)),
        False,
    )
