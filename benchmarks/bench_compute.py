"""Benchmark of the computation core on the largest embedded dataset, and a NUTS 3-sized one.

Prints, for all regions of ``ess-2023`` (292 NUTS 2 regions + 36 countries) x 3 sexes:

* the analytic pass for V in {1, 5}: linearisation of every indicator at every age
  (ASFR, TFR, ASMR, e_x) and the Poisson / noise variances (goal: < 0.5 s);
* the Monte Carlo of e0 and TFR at V = 1, N replicates (default 10 000), all three
  components (noise, Poisson, total), with the reference engine (the numpy path per
  published cell) and the fused engine, measured in this run: the before/after ratio
  (goal >= 3, fused < 50 s on 2 workers), the fused engine cold (numba compiling into an
  empty cache) and warm (compiled code loaded from the cache), on 1 and 2 workers
  (speed-up), peak memory (goal: all processes together < 2 GB), and the largest
  ``|z|`` of each engine against the analytic sd;
* a NUTS 3-sized run: each NUTS 2 region of ``ess-2023`` replaced by 4 copies at scale
  1/4 (1 168 regions), published in 5-year groups as NUTS 3 tables are: the analytic
  pass and a Monte Carlo of N = 1 000 (both engines), wall time and memory.

Every Monte Carlo runs in a fresh child process (its workers are its children). Memory:
the sum over the child and all its descendants of each process's peak RSS (``VmHWM``,
sampled every 0.1 s; shared pages count in every process that maps them). Timings depend on what else
runs on the machine: the load average is printed, and the figures that matter are
ratios measured in the same run.

Usage::

    PYTHONPATH=lib nice .venv/bin/python benchmarks/bench_compute.py [--n 10000] [--repeat 2] [--skip-reference]

The NUTS 3-sized reference run is skipped with ``--skip-reference`` too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIB = str(Path(__file__).resolve().parents[1] / "lib")
GB = 1024.0


def _best(f, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def nuts3_sized(counts):
    """Each NUTS 2 region replaced by 4 copies at scale 1/4 (``scale_counts``), codes suffixed 1..4."""
    import numpy as np

    from demonoise.analysis.whatif import scale_counts
    from demonoise.core.counts import Region

    nuts2 = scale_counts(counts.select(level=2), 0.25)
    regions = tuple(
        Region(f"{r.code}{i}", f"{r.name} ({i}/4)", level=3, country=r.country) for r in nuts2.regions for i in range(4)
    )

    def rep(a):
        return None if a is None else np.repeat(a, 4, axis=0)

    return nuts2.replace(
        name=f"{counts.name}-nuts3-sized",
        regions=regions,
        pop_start=rep(nuts2.pop_start),
        pop_end=rep(nuts2.pop_end),
        deaths=rep(nuts2.deaths),
        births=rep(nuts2.births),
    )


def analytic(counts, noises, granularity="single"):
    from demonoise.uncertainty.propagation import linearise, noise_cell_moments, poisson_cell_variance

    lz = linearise(counts, granularity=granularity)
    out = {}
    for name, block in lz.blocks.items():
        vp = block.lin.variance(poisson_cell_variance(lz, block.female_only))
        for g in noises:
            vn, _ = noise_cell_moments(lz, g, block.female_only)
            out[(name, g.V)] = (vp, block.lin.variance(vn))
    return lz, out


# ------------------------------------------------------------------ memory of a process tree
class PeakMemory:
    """Peak resident memory of this process and of every descendant, read from
    ``/proc/<pid>/status`` (``VmHWM``, the process's own high-water mark) every 0.1 s.

    ``getrusage``'s ``ru_maxrss`` is not used: after fork + exec it carries the parent's
    high-water mark, so a child started by a big process would report the parent's size."""

    def __init__(self):
        import threading

        self.peaks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _hwm(pid: int) -> float | None:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            return None
        return None

    def _tree(self) -> set[int]:
        parent = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        tree, grew = {os.getpid()}, True
        while grew:
            new = {p for p, pp in parent.items() if pp in tree} - tree
            tree |= new
            grew = bool(new)
        return tree

    def sample(self):
        for pid in self._tree():
            m = self._hwm(pid)
            if m is not None:
                self.peaks[pid] = max(self.peaks.get(pid, 0.0), m)

    def _run(self):
        while not self._stop.wait(0.1):
            self.sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.sample()
        self._stop.set()
        self._thread.join()

    @property
    def me(self) -> float:
        return self.peaks.get(os.getpid(), 0.0)

    @property
    def others(self) -> list[float]:
        return sorted((v for p, v in self.peaks.items() if p != os.getpid()), reverse=True)


# ------------------------------------------------------------------ one Monte Carlo (child)
def child(spec: dict) -> dict:
    """One Monte Carlo in this process: wall time, peak memory, largest |z|."""
    from demonoise.analysis.results import results_table
    from demonoise.io.datasets import load
    from demonoise.noise.models import GenericNoise
    from demonoise.uncertainty.montecarlo import monte_carlo
    from demonoise.uncertainty.propagation import linearise

    counts = load(spec["dataset"])
    if spec["nuts3"]:
        counts = nuts3_sized(counts)
    g = GenericNoise(1.0)
    lz = linearise(counts, granularity=spec["granularity"], indicators=("e", "tfr"), e_ages=[0])
    me = resource.getrusage(resource.RUSAGE_SELF)
    spec["cpu0"] = me.ru_utime + me.ru_stime
    with PeakMemory() as mem:
        t = time.perf_counter()
        mc = monte_carlo(
            lz, g, n=spec["n"], seed=1, indicators=("e", "tfr"), workers=spec["workers"], engine=spec["engine"],
            quantiles=(0.025, 0.975),
        )  # fmt: skip
        wall = time.perf_counter() - t
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime - spec.get("cpu0", 0.0)
    self_mb, others = mem.me, mem.others
    res = results_table(lz, [g], mc={0: mc})
    sel = res[res.exposure >= 100_000]
    z = sel[["z_noise", "z_pois", "z_tot"]].abs().max().round(2).to_dict()
    return {
        "wall": wall, "cpu": cpu, "self_mb": self_mb, "others_mb": others, "sum_mb": self_mb + sum(others),
        "block": mc.block, "z": z, "rows": len(sel),
    }  # fmt: skip


def run_child(spec: dict, cache_dir: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = LIB + os.pathsep + env.get("PYTHONPATH", "")
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    cache = " (empty numba cache)" if cache_dir and not os.listdir(cache_dir) else ""
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed ({spec}):\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    what = f"{spec['engine']}, {spec['workers']} worker(s), N = {spec['n']}" + (
        ", NUTS 3-sized" if spec["nuts3"] else ""
    )
    print(
        f"  [run] {what}{cache}: {r['wall']:.1f} s, cpu {r['cpu']:.0f} s, peak RSS sum {r['sum_mb']:.0f} MB", flush=True
    )
    return r


def _mem(r):
    others = " + ".join(f"{m:.0f}" for m in r["others_mb"]) or "none"
    return f"peak RSS: main {r['self_mb']:.0f} MB, other processes {others} MB -> sum {r['sum_mb']:.0f} MB"


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="ess-2023")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--n-nuts3", type=int, default=1_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="pairs of reference and warm fused runs, back to back")
    ap.add_argument("--skip-reference", action="store_true", help="no reference-engine run (no before/after ratio)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    from demonoise.io.datasets import load
    from demonoise.noise.models import GenericNoise
    from demonoise.uncertainty.propagation import linearise

    print(f"load average before: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()})")
    counts = load(args.dataset)
    noises = [GenericNoise(1.0), GenericNoise(5.0)]
    t_an, (lz, out) = _best(lambda: analytic(counts, noises), 3)
    cells = sum(v[0].size for v in out.values()) // len(noises)
    print(f"analytic pass, V in {{1, 5}}: {t_an:.3f} s (best of 3) -- {cells} indicator values x 2 V  [goal < 0.5 s]")
    t_an_mc, _ = _best(lambda: linearise(counts, indicators=("e", "tfr"), e_ages=[0]), 3)

    base = {"dataset": args.dataset, "nuts3": False, "granularity": "single", "n": args.n}
    W = args.workers
    print(f"\nMonte Carlo e0 + TFR, V = 1, N = {args.n}, components noise/poisson/total, {args.dataset}:")
    with tempfile.TemporaryDirectory(prefix="demonoise-numba-") as cache:
        cold = run_child({**base, "engine": "fused", "workers": W}, cache)
        warm, ref = [], []
        for _ in range(args.repeat):  # interleaved, so that both engines see the same load
            if not args.skip_reference:
                ref.append(run_child({**base, "engine": "reference", "workers": W}))
            warm.append(run_child({**base, "engine": "fused", "workers": W}, cache))
        one = run_child({**base, "engine": "fused", "workers": 1}, cache)
        w = min(r["wall"] for r in warm)
        print(
            f"  fused, {W} workers, cold (numba compiling into an empty cache): {cold['wall']:.1f} s "
            f"(cpu {cold['cpu']:.0f} s)"
        )
        print(
            f"  fused, {W} workers, warm (cached): {w:.1f} s  [goal < 50 s]; runs: "
            + ", ".join(f"{r['wall']:.1f} s (cpu {r['cpu']:.0f} s)" for r in warm)
            + f"; block {warm[0]['block']} replicates"
        )
        print(f"    {_mem(max(warm, key=lambda r: r['sum_mb']))}  [goal < 2048 MB]")
        print(f"  fused, 1 worker (in-process), warm: {one['wall']:.1f} s -> speed-up 1 -> {W}: {one['wall'] / w:.2f}")
        print(f"    {_mem(one)}")
        if ref:
            r = min(x["wall"] for x in ref)
            print(
                f"  reference engine, {W} workers: {r:.1f} s; runs: "
                + ", ".join(f"{x['wall']:.1f} s (cpu {x['cpu']:.0f} s)" for x in ref)
            )
            print(f"    {_mem(ref[0])}")
            pairs = ", ".join(f"{x['wall'] / y['wall']:.2f}" for x, y in zip(ref, warm, strict=True))
            print(
                f"  before/after ratio (reference / fused warm, wall, each pair run back to back): {pairs}  [goal >= 3]"
            )
            cpus = ", ".join(f"{x['cpu'] / y['cpu']:.2f}" for x, y in zip(ref, warm, strict=True))
            print(f"  before/after ratio of cpu time (all processes): {cpus}")
            print(f"  before/after ratio (reference / fused cold): {r / cold['wall']:.2f}")
            print(f"  max |z| vs analytic sd, {ref[0]['rows']} rows with exposure >= 100 000: reference {ref[0]['z']}")
        print(f"  max |z| vs analytic sd, {warm[0]['rows']} rows with exposure >= 100 000: fused {warm[0]['z']}")
        print(f"  speed ratio analytic (e0 + TFR linearised, {t_an_mc:.3f} s) : fused MC = 1 : {w / t_an_mc:.0f}")

        n3 = nuts3_sized(counts)
        t_an3, _ = _best(lambda: analytic(n3, noises, "5y"), 3)
        print(
            f"\nNUTS 3-sized: {len(n3.regions)} regions (each NUTS 2 region as 4 copies at scale 1/4), 5-year groups:"
        )
        print(f"  analytic pass, every indicator at every age, V in {{1, 5}}: {t_an3:.3f} s (best of 3)")
        b3 = {"dataset": args.dataset, "nuts3": True, "granularity": "5y", "n": args.n_nuts3, "workers": W}
        f3 = run_child({**b3, "engine": "fused"}, cache)
        print(
            f"  Monte Carlo e0 + TFR, N = {args.n_nuts3}, three components, fused, {W} workers: {f3['wall']:.1f} s "
            f"(cpu {f3['cpu']:.0f} s)"
        )
        print(f"    {_mem(f3)}; max |z| ({f3['rows']} rows with exposure >= 100 000) {f3['z']}")
        if not args.skip_reference:
            r3 = run_child({**b3, "engine": "reference"})
            print(
                f"  the same, reference engine: {r3['wall']:.1f} s (cpu {r3['cpu']:.0f} s) -> ratio "
                f"{r3['wall'] / f3['wall']:.2f}"
            )
            print(f"    {_mem(r3)}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
