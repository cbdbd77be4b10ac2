"""Monte Carlo check of the analytic propagation: seeded, in independent blocks.

Each replicate perturbs the *published* cells and recomputes every indicator
exactly (UNK spread, grouping, life table), with three components:

* ``noise``   -- original counts plus noise on every cell of the noised tables;
* ``poisson`` -- events (deaths, births) redrawn as Poisson(observed count), stocks fixed;
* ``total``   -- the Poisson draw, then noise on it.

``noise`` and ``total`` use the same uniform numbers for the noise (common random
numbers), so that with generic noise ``total - poisson`` is exactly the noise part,
and the admixture estimated by Monte Carlo is not blurred by independent draws.

Replicates are processed in blocks; each block has its own random stream spawned from
one :class:`numpy.random.SeedSequence` of the seed, and the block size follows from a
memory limit and the problem (never from the number of workers), so the result depends
on the seed, ``n``, the block size and the indicators simulated -- not on the number of
worker processes, their scheduling or the quantiles asked for. (The fused engine draws at
the coarsest grouping the requested indicators share, so asking for the TFR beside e_x
changes the population draws e_x sees; the reference engine draws every cell and does not.)
A block is a pure function ``(plan, size, SeedSequence child) -> partial sums``
(:func:`demonoise.uncertainty.mc_blocks.run_block`), summed in block order. Blocks run in
this process or as tasks on a Dask cluster (:mod:`demonoise.runtime.cluster`), local by
default.

Two engines compute the same models and laws with the same seed semantics:

* ``"fused"`` (default, :mod:`demonoise.uncertainty.mc_blocks`): draws one number per
  group of cells where that is exact (a sum of Poisson cells is one Poisson draw; a sum
  of ``k`` cells with generic noise is one draw of the ``k``-fold law), by alias tables,
  and runs the replicate life tables in compiled loops (numba); p-tables and the zero
  floor go through its exact per-cell path;
* ``"reference"``: the original vectorised numpy path, every published cell drawn and
  the indicators recomputed with :mod:`demonoise.demography`; kept to check and time
  the fused engine against.

Agreement with the analytic standard deviation is judged against sampling error:
the relative standard error of an sd estimated from ``N`` replicates is about
``1/sqrt(2N)`` (0.71 % at N = 10 000), hence ``z = (sd_MC / sd_analytic - 1) sqrt(2N)``
(docs/design.md, section "Monte Carlo and the z-score").

A *zero floor* (``max(0, noisy count)``) is an option: it is a different noise model
(closer to the Cell Key Method, which never publishes negative counts), not a
detail of the generic model, and results say which one was used.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from demonoise.core.counts import spread_unknown
from demonoise.core.errors import ParameterError
from demonoise.demography.indicators import exposure
from demonoise.demography.lifetable import e_only
from demonoise.runtime.cluster import default_workers, using
from demonoise.uncertainty.propagation import TABLES, Linearised, check_noised

__all__ = ["COMPONENTS", "ENGINES", "MonteCarloResult", "monte_carlo", "z_score"]

COMPONENTS = ("noise", "poisson", "total")
#: Monte Carlo engines: the fused one (default) and the reference numpy path.
ENGINES = ("fused", "reference")
#: Default working memory of a block of the fused engine (bytes).
FUSED_MEMORY = 1.5e8
_EVENTS = ("deaths", "births")
#: Block seeds spawned at a time (:func:`blocks`).
_SPAWN_CHUNK = 1024


def z_score(sd_mc, sd_analytic, n):
    """``z = (sd_MC / sd_analytic - 1) * sqrt(2 N)``; nan where ``sd_analytic`` is 0."""
    sd_analytic = np.asarray(sd_analytic, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd_analytic > 0, (np.asarray(sd_mc) / sd_analytic - 1.0) * np.sqrt(2.0 * n), np.nan)


@dataclass
class MonteCarloResult:
    """Empirical moments per (indicator, component), each array shaped like the
    indicator block (R, S, K).

    Attributes
    ----------
    n : int
        Replicates requested.
    seed : int
    floor_zero : bool
        Whether noisy counts were floored at zero.
    block : int
        Replicates per random-number block (each block has its own stream).
    stats : dict[(str, str), dict[str, ndarray]]
        ``stats[(indicator, component)]`` has ``mean``, ``sd``, ``n_valid``
        (replicates with a finite value) and, where the values were stored,
        ``q_lo``/``q_hi`` (the first and last of ``quantiles``) and ``quantiles``
        (``{probability: array}`` for every requested quantile).
    quantiles : tuple of float
    engine : str
        ``"fused"`` or ``"reference"`` (:func:`monte_carlo`).
    """

    n: int
    seed: int
    floor_zero: bool
    quantiles: tuple
    stats: dict = field(default_factory=dict)
    block: int = 0
    engine: str = "fused"


def _spread_group(x, axis, grouping):
    """``grouping(spread_unknown(x, axis))`` without forming the spread array:
    the proportional spread multiplies every known cell by ``1 + u/S``, so it
    commutes with summing cells into groups (uniform spread where ``S = 0``)."""
    x = np.asarray(x, dtype=float)
    if not axis.unknown:
        return grouping(x)
    known, u = x[..., :-1], x[..., -1:]
    S = known.sum(axis=-1, keepdims=True)
    g = grouping(known)
    pos = S > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = g * (1.0 + u / np.where(pos, S, 1.0))
    if pos.all():
        return scaled
    sizes = grouping(np.ones(axis.n_known)) / axis.n_known
    return np.where(pos, scaled, g + u * sizes)


def _values(lay, indicator, D, E, B, e_idx, lt_kw):
    """Indicator values from (noisy) deaths/births cells and the spread exposure on
    known ages ``E``; leading replicate axes allowed; shape (..., R, S, K)."""
    if indicator == "e":
        Dl = _spread_group(D, lay.ages, lay.group_lifetable)
        El = lay.group_lifetable(E)
        return e_only(Dl, El, lay.lt_lower, e_idx, **lt_kw)
    if indicator == "asmr":
        Dk = spread_unknown(D, lay.ages)
        with np.errstate(divide="ignore", invalid="ignore"):
            return Dk / E
    b = _spread_group(B, lay.birth_ages, lay.group_births)
    W = lay.group_pop_fert(E[..., 0, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        f = b / W
    if indicator == "asfr":
        return f[..., None, :]
    return (f @ lay.fert_width)[..., None, None]


def _reference_block(sh: dict, size: int, seed_seq):
    """Reference engine: one block of replicates (its own seed) -> partial sums (and stored
    values); ``sh`` is the shared state (counts, layout, noise), sent once to every worker."""
    c, lay, noise, indicators, components = sh["counts"], sh["layout"], sh["noise"], sh["indicators"], sh["components"]
    e_idx, floor_zero, noised, refs, keep, lt_kw = (
        sh["e_idx"],
        sh["floor_zero"],
        sh["noised"],
        sh["refs"],
        sh["keep"],
        sh["lt_kw"],
    )
    base = {"deaths": c.deaths, "births": c.births, "pop_start": c.pop_start, "pop_end": c.pop_end}
    base = {k: v for k, v in base.items() if v is not None}
    s_noise, s_pois = seed_seq.spawn(2)
    g_noise, g_pois = np.random.default_rng(s_noise), np.random.default_rng(s_pois)
    noisy_needed = "noise" in components or "total" in components
    # uniforms for the noise, shared by the 'noise' and 'total' components (CRN)
    u = (
        {m: g_noise.random((size,) + base[m].shape) for m in TABLES if m in base and m in noised}
        if noisy_needed
        else {}
    )
    indep = bool(getattr(noise, "count_independent", False))
    eps = {m: noise.noise_from_uniform(v) for m, v in u.items()} if indep else {}

    def noisy(m, x):
        if m not in u:
            return np.broadcast_to(x, (size,) + base[m].shape)
        y = x + eps[m] if indep else noise.perturb(np.broadcast_to(x, u[m].shape), u[m])
        return np.maximum(y, 0) if floor_zero else y

    pois = {}
    if "poisson" in components or "total" in components:
        for m in _EVENTS:
            if m not in base:
                continue
            if m == "deaths" and sh["t_is_sum"]:
                # T events are the sum of the F and M events: draw F and M only (the
                # marginal law of every cell is unchanged; a third fewer draws)
                fm = g_pois.poisson(np.broadcast_to(base[m][:, :2], (size,) + base[m][:, :2].shape))
                pois[m] = np.concatenate([fm, fm.sum(axis=2, keepdims=True)], axis=2)
            else:
                pois[m] = g_pois.poisson(np.broadcast_to(base[m], (size,) + base[m].shape))
    E_orig = exposure(base["pop_start"], base["pop_end"], lay.ages)  # no replicate axis: broadcasts
    E_noisy = (
        exposure(noisy("pop_start", base["pop_start"]), noisy("pop_end", base["pop_end"]), lay.ages)
        if noisy_needed
        else None
    )

    out = {}
    for comp in components:
        ev = {}
        for m in _EVENTS:
            if m not in base:
                continue
            x = pois[m] if comp in ("poisson", "total") else base[m]
            ev[m] = noisy(m, x) if comp in ("noise", "total") else np.broadcast_to(x, (size,) + base[m].shape)
        E = E_noisy if comp in ("noise", "total") else E_orig
        for ind in indicators:
            vals = _values(lay, ind, ev.get("deaths"), E, ev.get("births"), e_idx, lt_kw)
            vals = np.broadcast_to(vals, (size,) + refs[ind].shape)
            ok = np.isfinite(vals)
            d = np.where(ok, vals - refs[ind], 0.0)
            rec = {"n": ok.sum(0), "s1": d.sum(0), "s2": (d * d).sum(0)}
            if keep[ind]:
                rec["values"] = np.where(ok, vals, np.nan).astype(np.float32 if keep[ind] == "f4" else float)
            out[(ind, comp)] = rec
    return out


def _run_fused(sh: dict, size: int, seed_seq):
    """Fused engine: one block (its own seed) -> partial sums."""
    from demonoise.uncertainty.mc_blocks import run_block

    return run_block(sh["plan"], size, seed_seq)


def _reference_setup(lz, noise, indicators, components, floor_zero, noised, quantiles, n, memory_limit, store_limit):
    """Shared state and block size of the reference engine."""
    c = lz.counts
    e_idx = None
    if "e" in indicators:
        e_idx = np.searchsorted(lz.layout.lt_lower, lz.blocks["e"].age_lower)
    refs = {i: np.nan_to_num(lz.blocks[i].lin.value) for i in indicators}
    # memory per replicate: cells of every table, a few copies per component
    cells = sum(v.size for v in (c.deaths, c.births, c.pop_start, c.pop_end) if v is not None)
    per_rep = cells * 8 * (6 + 4 * len(components))
    block = int(max(1, min(64, n, memory_limit // per_rep)))
    keep = {}
    for i in indicators:
        if not quantiles:
            keep[i] = ""
            continue
        nbytes = n * lz.blocks[i].lin.value.size * len(components) * 8
        keep[i] = "f8" if nbytes <= store_limit else ("f4" if nbytes / 2 <= store_limit else "")
    # deaths of both sexes (T) equal F + M cell by cell (always so in Eurostat's tables
    # barring unknown sex): then the Poisson draw of T is the sum of those of F and M
    t_is_sum = c.deaths is not None and np.array_equal(c.deaths[:, 2], c.deaths[:, 0] + c.deaths[:, 1])
    shared = {
        "counts": c, "layout": lz.layout, "noise": noise, "indicators": tuple(indicators),
        "components": tuple(components), "e_idx": e_idx, "t_is_sum": t_is_sum, "floor_zero": floor_zero,
        "noised": tuple(noised), "refs": refs, "keep": keep, "lt_kw": lz.lifetable_kw,
    }  # fmt: skip
    return shared, block, refs


def monte_carlo(
    lz: Linearised,
    noise,
    *,
    n: int = 10_000,
    seed: int = 0,
    indicators=("e", "tfr"),
    components=COMPONENTS,
    floor_zero: bool = False,
    noised=TABLES,
    quantiles=(0.025, 0.975),
    memory_limit: float | None = None,
    store_limit: float = 1.0e9,
    workers: int | None = None,
    progress=None,
    engine: str = "fused",
    cluster=None,
) -> MonteCarloResult:
    """Monte Carlo replicates of the indicators in ``lz`` under ``noise``.

    Parameters
    ----------
    lz : Linearised
        From :func:`demonoise.uncertainty.propagation.linearise` -- fixes the dataset, the
        publication granularity and the ages of ``e_k`` (same as the analytic pass).
    noise : NoiseModel
        Needs ``perturb(counts, u)``: perturbed counts from uniforms ``u`` in [0, 1).
    n : int
        Replicates (>= 2).
    seed : int
        Root of the :class:`~numpy.random.SeedSequence`.
    indicators : iterable of str
        Indicators to recompute (``"e", "tfr", "asfr", "asmr"``; must be in ``lz``).
    components : iterable of {"noise", "poisson", "total"}
    floor_zero : bool
        Floor noisy counts at zero (a different noise model; see module notes).
    noised : iterable of str
        Tables that receive noise (default: all four).
    quantiles : (float, float) or None
        Quantiles reported where the replicate values fit ``store_limit`` bytes
        (``None``: moments only, nothing stored).
    memory_limit : float, optional
        Bytes of working memory per block (sets the block size; default 1.5e8 for the
        fused engine, 5e8 for the reference engine).
    workers : int, optional
        Without ``cluster``: the size of the local Dask cluster started for this call
        (default: ``min(2, os.cpu_count())``); 1 runs in-process. Its worker processes are
        started fresh ("spawn"), so a *script* that calls this with ``workers > 1`` must
        guard its entry point (``if __name__ == "__main__":``), as with any spawn-based
        pool; notebooks, the CLI and pytest need nothing.
    progress : callable, optional
        Called with the number of replicates done after each block. If it has a
        ``start(n, seconds)`` method, that is called first, before any block runs, with
        the replicates and the estimated seconds of work per replicate in one process
        (:func:`_probe`; ``None`` for a run of a few blocks); it may refuse the run by
        raising.
    engine : {"fused", "reference"}
        ``"fused"`` (default): draws per group of cells where that is exact and runs the
        replicate life tables in compiled loops (:mod:`demonoise.uncertainty.mc_blocks`).
        ``"reference"``: the original vectorised numpy path, per published cell, kept to
        check and time the fused engine against. Same laws and seed semantics; the
        draws, hence the figures, differ within sampling error.
    cluster : demonoise.runtime.cluster.Cluster, optional
        Where the blocks run (a Dask cluster, local or at an address); the blocks are
        tasks, the shared plan is sent once to every worker. Results are identical
        whatever the cluster, its number of workers or the order blocks finish in.

    Returns
    -------
    MonteCarloResult
    """
    if n < 2:
        raise ParameterError(f"Monte Carlo needs at least 2 replicates, got n={n}")
    if engine not in ENGINES:
        raise ParameterError(f"unknown Monte Carlo engine {engine!r}; choose from {', '.join(ENGINES)}")
    bad = set(components) - set(COMPONENTS)
    if bad:
        raise ParameterError(f"unknown Monte Carlo component(s) {sorted(bad)}; choose from {', '.join(COMPONENTS)}")
    missing = [i for i in indicators if i not in lz.blocks]
    if missing:
        raise ParameterError(f"indicator(s) {missing} were not linearised; pass them to linearise() first")
    noised = check_noised(noised)
    if not hasattr(noise, "perturb"):
        raise ParameterError(f"noise model {noise!r} cannot be sampled (no perturb method)")
    indicators, components = tuple(indicators), tuple(components)
    default_memory = 5.0e8 if engine == "reference" else FUSED_MEMORY
    if engine == "reference":
        shared, block, refs = _reference_setup(
            lz, noise, indicators, components, floor_zero, noised, quantiles, n, memory_limit or 5.0e8, store_limit
        )
        task = _reference_block
    else:
        from demonoise.uncertainty.mc_blocks import build_plan, fused_block_size

        plan = build_plan(
            lz, noise, indicators=indicators, components=components, floor_zero=floor_zero, noised=noised,
            quantiles=quantiles, n=n, store_limit=store_limit,
        )  # fmt: skip
        block = fused_block_size(plan, n, memory_limit or FUSED_MEMORY)
        shared, refs = {"plan": plan}, {i: np.nan_to_num(lz.blocks[i].lin.value) for i in indicators}
        task = _run_fused
    workers = workers or default_workers()
    keep = plan.keep if engine == "fused" else shared["keep"]
    _check_memory(lz, noise, n, block, keep, len(components), workers, memory_limit or default_memory)
    start = getattr(progress, "start", None)
    if callable(start):
        start(n, _probe(task, shared, block, n))
    with using(cluster, workers) as where:
        acc = _run_jobs(task, n, block, seed, shared, where, progress)
    res = MonteCarloResult(
        n=n, seed=seed, floor_zero=floor_zero, quantiles=tuple(quantiles or ()), block=block, engine=engine
    )
    for (ind, comp), a in acc.items():
        res.stats[(ind, comp)] = _moments(a, refs[ind], quantiles)
    return res


def _check_memory(lz, noise, n, block, keep, n_components, workers, working) -> None:
    """Refuse, before any block runs, a run whose estimated memory does not fit
    (:mod:`demonoise.uncertainty.mc_memory`)."""
    from demonoise.uncertainty.mc_memory import check_memory, estimate_memory

    kept = {i: (lz.blocks[i].lin.value.size * n_components, 8 if k == "f8" else 4) for i, k in keep.items() if k}
    points = getattr(noise, "table_points", None)  # generic noise: 0 when drawn by rounding
    if points is None:
        law = getattr(noise, "law", None)
        points = int(np.size(law()[0])) if callable(law) else 0
    parts = estimate_memory(n=n, block=block, kept=kept, workers=workers, working=working, law_points=points)
    check_memory(parts, n=n, regions=len(lz.counts.regions))


#: Blocks below which a run is not probed (:func:`_probe`): it takes about as long as the probe.
PROBE_FROM_BLOCKS = 4


def _probe(task, shared, block: int, n: int) -> float | None:
    """Seconds of work per replicate, measured in this process on one block of ``block``
    replicates after a warm-up block of one replicate (compiled kernels loaded, per-process
    tables built), both from their own seeds (the run's blocks and results are untouched).
    ``None`` when the run has fewer than :data:`PROBE_FROM_BLOCKS` blocks."""
    if -(-n // block) < PROBE_FROM_BLOCKS:
        return None
    probe = np.random.SeedSequence(0, spawn_key=(2**32 - 1,)).spawn(2)
    task(shared, 1, probe[0])
    t0 = time.perf_counter()
    task(shared, block, probe[1])
    return (time.perf_counter() - t0) / block


def blocks(n: int, block: int, seed) -> Iterator[tuple[int, np.random.SeedSequence]]:
    """``(size, seed)`` of every block, lazily: ``n // block`` blocks of ``block``
    replicates and one of the rest, seeded by the children of ``SeedSequence(seed)`` in
    order -- spawned a chunk at a time, which gives the same children as spawning them
    all at once (a run of 10^9 replicates never holds millions of seeds)."""
    root = np.random.SeedSequence(seed)
    count = -(-n // block)
    done = 0
    while done < count:
        for child in root.spawn(min(_SPAWN_CHUNK, count - done)):
            yield min(block, n - done * block), child
            done += 1


def _run_jobs(task, n, block, seed, shared, cluster, progress) -> dict:
    """Run the blocks in-process or as tasks on ``cluster`` (a bounded number in flight);
    sum their parts in block order (so the sums do not depend on which worker ran which
    block, or when). Stored replicate values go straight into one array per statistic,
    at the block's offset."""
    acc: dict = {}
    done = 0
    jobs = blocks(n, block, seed)

    def absorb(part, offset):
        for key, rec in part.items():
            a = acc.setdefault(key, {"n": 0, "s1": 0.0, "s2": 0.0, "values": None})
            a["n"] = a["n"] + rec["n"]
            a["s1"] = a["s1"] + rec["s1"]
            a["s2"] = a["s2"] + rec["s2"]
            if "values" in rec:
                v = rec["values"]
                if a["values"] is None:
                    a["values"] = np.empty((n,) + v.shape[1:], dtype=v.dtype)
                a["values"][offset : offset + v.shape[0]] = v

    if not cluster.fan_out_for(-(-n // block)):
        parts = (task(shared, *job) for job in jobs)
    else:
        parts = cluster.run_ordered(task, jobs, shared=shared, label="mc-block")
    try:
        for part in parts:  # in block order: block i holds replicates done .. done + size
            size = min(block, n - done)
            absorb(part, done)
            done += size
            if progress:
                progress(done)
    finally:
        # an error here (a progress callback that raised, an interrupt) closes the tasks
        # now: left to the garbage collector, the generator's clean-up could run during
        # the interpreter's finalisation, where it can no longer start a thread, and hang
        parts.close()
    return acc


def _moments(a: dict, ref: np.ndarray, quantiles) -> dict:
    """Mean, sd, valid count (and quantiles where values were kept) from summed parts."""
    m = np.maximum(a["n"], 1)
    mean_d = a["s1"] / m
    var = np.where(a["n"] > 1, (a["s2"] - a["n"] * mean_d**2) / np.maximum(a["n"] - 1, 1), np.nan)
    st = {"mean": ref + mean_d, "sd": np.sqrt(np.maximum(var, 0.0)), "n_valid": a["n"]}
    if a["values"] is not None:
        vals, a["values"] = a["values"], None
        with np.errstate(invalid="ignore"):
            # np.quantile is vectorised (and partitions the stored values in place);
            # nanquantile falls back to a Python loop per cell
            q = (
                np.quantile(vals, quantiles, axis=0, overwrite_input=True)
                if not np.isnan(vals).any()
                else np.nanquantile(vals, quantiles, axis=0, overwrite_input=True)
            )
        del vals
        st["q_lo"], st["q_hi"] = q[0], q[-1]
        st["quantiles"] = {float(p): q[i] for i, p in enumerate(quantiles)}
    return st
