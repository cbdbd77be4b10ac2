"""Monte Carlo check of the analytic propagation: seeded, vectorised, chunked.

Each replicate perturbs the *published* cells and recomputes every indicator
exactly (UNK spread, grouping, life table), with three components:

* ``noise``   -- original counts plus noise on every cell of the noised tables;
* ``poisson`` -- events (deaths, births) redrawn as Poisson(observed count), stocks fixed;
* ``total``   -- the Poisson draw, then noise on it.

``noise`` and ``total`` use the same uniform numbers for the noise (common random
numbers), so that with generic noise ``total - poisson`` is exactly the noise part,
and the admixture estimated by Monte Carlo is not blurred by independent draws.
Replicates are processed in chunks whose size keeps memory below a limit; each chunk
has its own random stream spawned from one :class:`numpy.random.SeedSequence`, so the
result depends on the seed and ``n`` only -- not on the chunk size or the number of
worker processes.

Agreement with the analytic standard deviation is judged against sampling error:
the relative standard error of an sd estimated from ``N`` replicates is about
``1/sqrt(2N)`` (0.71 % at N = 10 000), hence ``z = (sd_MC / sd_analytic - 1) sqrt(2N)``
(DESIGN.md section 5).

A *zero floor* (``max(0, noisy count)``) is an option: it is a different noise model
(closer to the Cell Key Method, which never publishes negative counts), not a
detail of the generic model, and results say which one was used.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .errors import ParameterError
from .indicators import asfr, asmr, life_expectancy
from .propagation import TABLES, Linearised

__all__ = ["COMPONENTS", "MonteCarloResult", "monte_carlo", "z_score"]

COMPONENTS = ("noise", "poisson", "total")
_EVENTS = ("deaths", "births")


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
    stats : dict[(str, str), dict[str, ndarray]]
        ``stats[(indicator, component)]`` has ``mean``, ``sd``, ``n_valid``
        (replicates with a finite value) and, where stored, ``q_lo``/``q_hi``.
    quantiles : tuple of float
    """

    n: int
    seed: int
    floor_zero: bool
    quantiles: tuple
    stats: dict = field(default_factory=dict)


def _values(lay, indicator: str, D, P0, P1, B, e_idx):
    """Indicator values for arrays with leading replicate axes; shape (..., R, S, K)."""
    if indicator == "e":
        lt = life_expectancy(lay, D, P0, P1, check=False)
        return lt.e[..., e_idx]
    if indicator == "asmr":
        return asmr(lay, D, P0, P1)
    f = asfr(lay, B, P0[..., 0, :], P1[..., 0, :])
    if indicator == "asfr":
        return f[..., None, :]
    return (f @ lay.fert_width)[..., None, None]


def _chunk(args):
    """Worker: one chunk of replicates -> partial sums (and stored values)."""
    c, lay, noise, indicators, components, e_idx, size, seed_seq, floor_zero, noised, refs, keep = args
    base = {"deaths": c.deaths, "births": c.births, "pop_start": c.pop_start, "pop_end": c.pop_end}
    base = {k: v for k, v in base.items() if v is not None}
    s_noise, s_pois = seed_seq.spawn(2)
    g_noise, g_pois = np.random.default_rng(s_noise), np.random.default_rng(s_pois)
    # uniforms for the noise, shared by the 'noise' and 'total' components (CRN)
    u = {m: g_noise.random((size,) + base[m].shape) for m in TABLES if m in base and m in noised}
    pois = {}
    if "poisson" in components or "total" in components:
        pois = {m: g_pois.poisson(np.broadcast_to(base[m], (size,) + base[m].shape)) for m in _EVENTS if m in base}

    def perturb(cells, m):
        out = noise.perturb(np.broadcast_to(cells, u[m].shape), u[m])
        return np.maximum(out, 0) if floor_zero else out

    out = {}
    for comp in components:
        arrs = {}
        for m, v in base.items():
            x = pois.get(m, v) if comp in ("poisson", "total") else v
            if comp in ("noise", "total") and m in u:
                x = perturb(x, m)
            arrs[m] = np.broadcast_to(x, (size,) + v.shape).astype(float)
        for ind in indicators:
            vals = _values(lay, ind, arrs.get("deaths"), arrs["pop_start"], arrs["pop_end"], arrs.get("births"), e_idx)
            ok = np.isfinite(vals)
            d = np.where(ok, vals - refs[ind], 0.0)
            rec = {"n": ok.sum(0), "s1": d.sum(0), "s2": (d * d).sum(0)}
            if keep[ind]:
                rec["values"] = np.where(ok, vals, np.nan).astype(np.float32 if keep[ind] == "f4" else float)
            out[(ind, comp)] = rec
    return out


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
    memory_limit: float = 1.0e9,
    store_limit: float = 1.0e9,
    workers: int | None = None,
    progress=None,
) -> MonteCarloResult:
    """Monte Carlo replicates of the indicators in ``lz`` under ``noise``.

    Parameters
    ----------
    lz : Linearised
        From :func:`demonoise.propagation.linearise` -- fixes the dataset, the
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
    quantiles : (float, float)
        Quantiles reported where the replicate values fit ``store_limit`` bytes.
    memory_limit : float
        Bytes of working memory per chunk (sets the chunk size).
    workers : int, optional
        Worker processes (default: ``min(2, os.cpu_count())``); 1 runs in-process.
    progress : callable, optional
        Called with the number of replicates done after each chunk.

    Returns
    -------
    MonteCarloResult
    """
    if n < 2:
        raise ParameterError(f"Monte Carlo needs at least 2 replicates, got n={n}")
    bad = set(components) - set(COMPONENTS)
    if bad:
        raise ParameterError(f"unknown Monte Carlo component(s) {sorted(bad)}; choose from {', '.join(COMPONENTS)}")
    missing = [i for i in indicators if i not in lz.blocks]
    if missing:
        raise ParameterError(f"indicator(s) {missing} were not linearised; pass them to linearise() first")
    if not hasattr(noise, "perturb"):
        raise ParameterError(f"noise model {noise!r} cannot be sampled (no perturb method)")
    c = lz.counts
    e_idx = None
    if "e" in indicators:
        e_idx = np.searchsorted(lz.layout.lt_lower, lz.blocks["e"].age_lower)
    refs = {i: np.nan_to_num(lz.blocks[i].lin.value) for i in indicators}
    # memory per replicate: cells of every table, a few copies per component
    cells = sum(v.size for v in (c.deaths, c.births, c.pop_start, c.pop_end) if v is not None)
    per_rep = cells * 8 * (6 + 4 * len(components))
    size = int(max(1, min(n, memory_limit // per_rep)))
    keep = {}
    for i in indicators:
        nbytes = n * lz.blocks[i].lin.value.size * len(components) * 8
        keep[i] = "f8" if nbytes <= store_limit else ("f4" if nbytes / 2 <= store_limit else "")
    sizes = [size] * (n // size) + ([n % size] if n % size else [])
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    jobs = [(c, lz.layout, noise, tuple(indicators), tuple(components), e_idx, s, ss, floor_zero, tuple(noised), refs, keep) for s, ss in zip(sizes, seeds)]
    workers = workers or min(2, os.cpu_count() or 1)
    acc: dict = {}
    done = 0

    def absorb(part):
        nonlocal done
        for key, rec in part.items():
            a = acc.setdefault(key, {"n": 0, "s1": 0.0, "s2": 0.0, "values": []})
            a["n"] = a["n"] + rec["n"]
            a["s1"] = a["s1"] + rec["s1"]
            a["s2"] = a["s2"] + rec["s2"]
            if "values" in rec:
                a["values"].append(rec["values"])

    if workers <= 1 or len(jobs) == 1:
        for j in jobs:
            absorb(_chunk(j))
            done += j[6]
            if progress:
                progress(done)
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            for j, part in zip(jobs, ex.map(_chunk, jobs)):
                absorb(part)
                done += j[6]
                if progress:
                    progress(done)

    res = MonteCarloResult(n=n, seed=seed, floor_zero=floor_zero, quantiles=tuple(quantiles))
    for (ind, comp), a in acc.items():
        m = np.maximum(a["n"], 1)
        mean_d = a["s1"] / m
        var = np.where(a["n"] > 1, (a["s2"] - a["n"] * mean_d**2) / np.maximum(a["n"] - 1, 1), np.nan)
        st = {"mean": refs[ind] + mean_d, "sd": np.sqrt(np.maximum(var, 0.0)), "n_valid": a["n"]}
        if a["values"]:
            vals = np.concatenate(a["values"], axis=0)
            with np.errstate(invalid="ignore"):
                q = np.nanquantile(vals, quantiles, axis=0)
            st["q_lo"], st["q_hi"] = q[0], q[-1]
        res.stats[(ind, comp)] = st
    return res
