"""Benchmark of the computation core on the largest embedded dataset.

Prints, for all regions of ``ess-2023`` (292 NUTS 2 regions + 36 countries) x 3 sexes x
all indicators:

* the analytic pass for V in {1, 5}: linearisation of every indicator at every age
  (ASFR, TFR, ASMR, e_x) and the Poisson / noise variances (goal: < 0.5 s); the
  assembly of the tidy results table is timed separately;
* a Monte Carlo of N replicates (default 10 000) for e0 and TFR at V = 1, all three
  components (noise, Poisson, total), on 2 worker processes (goal: < 120 s, peak
  memory < 4 GB), then the noise component alone and the total component alone
  (one perturbation model: noise on Poisson-drawn events);
* the speed ratio analytic : Monte Carlo, both measured in this run.

Usage::

    PYTHONPATH=lib:tests .venv/bin/python benchmarks/bench_compute.py [--n 10000] [--workers 2] [--repeat 3]

Timings depend on what else runs on the machine: the script prints the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import time


def _best(f, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="ess-2023")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from demonoise.analysis.results import results_table
    from demonoise.io.datasets import load
    from demonoise.noise.models import GenericNoise
    from demonoise.uncertainty.montecarlo import monte_carlo
    from demonoise.uncertainty.propagation import linearise, noise_cell_moments, poisson_cell_variance

    print(f"load average before: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()})")
    t = time.perf_counter()
    counts = load(args.dataset)
    print(f"load {args.dataset}: {time.perf_counter() - t:.2f} s; {len(counts.regions)} regions x 3 sexes")

    noises = [GenericNoise(1.0), GenericNoise(5.0)]

    def analytic():
        lz = linearise(counts)
        out = {}
        for name, block in lz.blocks.items():
            vp = block.lin.variance(poisson_cell_variance(lz, block.female_only))
            for g in noises:
                vn, _ = noise_cell_moments(lz, g, block.female_only)
                out[(name, g.V)] = (vp, block.lin.variance(vn))
        return lz, out

    t_an, (lz, out) = _best(analytic, args.repeat)
    cells = sum(v[0].size for v in out.values()) // len(noises)
    print(
        f"analytic pass, V in {{1, 5}}: {t_an:.3f} s (best of {args.repeat}) -- {cells} indicator values x 2 V  [goal "
        "< 0.5 s]"
    )
    t_tab, df = _best(lambda: results_table(lz, noises), 1)
    print(f"tidy results table ({len(df)} rows): {t_tab:.3f} s")

    lz_mc = linearise(counts, indicators=("e", "tfr"), e_ages=[0])
    t = time.perf_counter()
    mc = monte_carlo(
        lz_mc, noises[0], n=args.n, seed=1, indicators=("e", "tfr"), workers=args.workers, quantiles=(0.025, 0.975)
    )
    t_mc = time.perf_counter() - t
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    peak = self_mb + args.workers * child_mb
    print(
        f"Monte Carlo e0 + TFR, V = 1, N = {args.n}, components noise/poisson/total, {args.workers} workers: "
        f"{t_mc:.1f} s  [goal < 120 s]; "
        f"block {mc.block} replicates"
    )
    print(
        f"peak memory: main {self_mb:.0f} MB, largest worker {child_mb:.0f} MB, bound on total {peak:.0f} MB  [goal < "
        "4096 MB]"
    )
    t_an_mc, _ = _best(lambda: linearise(counts, indicators=("e", "tfr"), e_ages=[0]), args.repeat)
    print(
        f"speed ratio, same indicators (e0 + TFR): analytic {t_an_mc:.3f} s : Monte Carlo {t_mc:.1f} s = 1 : "
        f"{t_mc / t_an_mc:.0f}"
    )
    t = time.perf_counter()
    monte_carlo(
        lz_mc,
        noises[0],
        n=args.n,
        seed=1,
        indicators=("e", "tfr"),
        components=("noise",),
        workers=args.workers,
        quantiles=None,
    )
    t_noise = time.perf_counter() - t
    print(
        f"Monte Carlo e0 + TFR, noise component only (the check of the noise sd), N = {args.n}: {t_noise:.1f} s  [goal "
        "< 120 s]"
    )
    t = time.perf_counter()
    monte_carlo(
        lz_mc,
        noises[0],
        n=args.n,
        seed=1,
        indicators=("e", "tfr"),
        components=("total",),
        workers=args.workers,
        quantiles=None,
    )
    t_total = time.perf_counter() - t
    print(
        f"Monte Carlo e0 + TFR, total component only (noise and Poisson on the same draws), N = {args.n}: "
        f"{t_total:.1f} s  [goal < 120 s]"
    )
    res = results_table(lz_mc, [noises[0]], mc={0: mc})
    sel = res[(res.exposure >= 100_000)]
    print(
        "max |z| over regions >= 100 000 (e0, TFR):", sel[["z_noise", "z_pois", "z_tot"]].abs().max().round(2).to_dict()
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
