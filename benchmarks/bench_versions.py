"""Two checkouts of demonoise on the same batch, alternately: what a change bought.

Run from the repository root::

    git worktree add /tmp/reference <commit>     # the code before the change
    python benchmarks/bench_versions.py --reference /tmp/reference [--candidate .] \
        [--params params/default.yaml] [--repeat 2] [--workers 2]

Each round runs ``demonoise report`` from scratch (a new output directory) once with
the reference checkout's ``lib`` first on ``PYTHONPATH`` and once with the candidate's,
in alternating order (reference first in odd rounds, candidate first in even ones), so
that a machine whose speed drifts during the run (a shared host can change by a third
within half an hour) weighs on both alike. Printed: every run's wall time and stage
split as the command reports them, then per version the median and the ratio
candidate / reference of the medians. Both use this interpreter and its packages; each
checkout's Monte Carlo kernels are compiled (numba's cache) before the first round.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = re.compile(r"compute ([\d.]+) s, notebooks ([\d.]+) s, reports ([\d.]+) s")


def _env(checkout: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "lib"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _warm(checkout: Path) -> None:
    cmd = [sys.executable, "-m", "demonoise.cli", "compute", "--dataset", "be-2023", "--V", "1"]
    cmd += [
        "--ptable",
        "v01",
        "--mc",
        "20",
        "--workers",
        "1",
        "--out",
        str(Path(tempfile.gettempdir()) / "dn-warm.parquet"),
    ]
    subprocess.run(cmd, cwd=checkout, env=_env(checkout), check=True, capture_output=True)


def _run(checkout: Path, params: str, workers: int, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "demonoise.cli", "report", "--params", params, "--out-dir", str(out)]
    cmd += ["--workers", str(workers)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=checkout, env=_env(checkout), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{checkout}: demonoise report failed ({p.returncode}):\n{p.stderr[-2000:]}")
    m = STAGES.search(p.stderr + p.stdout)
    stages = dict(zip(("compute", "notebooks", "reports"), map(float, m.groups()), strict=True)) if m else {}
    shutil.rmtree(out, ignore_errors=True)
    return {"wall": wall, **stages}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, type=Path, help="checkout of the code before the change")
    ap.add_argument("--candidate", default=ROOT, type=Path, help="checkout of the changed code (default: this one)")
    ap.add_argument("--params", default="params/default.yaml")
    ap.add_argument("--repeat", type=int, default=2, help="rounds (each runs both versions once)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    versions = {"reference": a.reference.resolve(), "candidate": a.candidate.resolve()}
    for name, path in versions.items():
        if not (path / "lib" / "demonoise").is_dir():
            raise SystemExit(f"--{name} {path}: not a demonoise checkout (no lib/demonoise)")
        _warm(path)
    runs: dict[str, list[dict]] = {k: [] for k in versions}
    tmp = Path(tempfile.mkdtemp(prefix="dn-bench-versions-"))
    try:
        for i in range(a.repeat):
            order = list(versions) if i % 2 == 0 else list(reversed(versions))
            for name in order:
                r = _run(versions[name], a.params, a.workers, tmp / name)
                runs[name].append(r)
                split = ", ".join(f"{k} {r[k]:.1f}" for k in ("compute", "notebooks", "reports") if k in r)
                print(f"round {i + 1} {name:9s} wall {r['wall']:6.1f} s ({split})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| version | wall (median, s) | compute | notebooks | reports |")
    print("|---|---|---|---|---|")
    med = {}
    for name, rs in runs.items():
        med[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        cells = " | ".join(f"{med[name].get(k, float('nan')):.1f}" for k in ("compute", "notebooks", "reports"))
        print(f"| {name} | {med[name]['wall']:.1f} | {cells} |")
    ratio = {k: med["candidate"][k] / med["reference"][k] for k in med["reference"] if med["reference"][k]}
    print(
        "| candidate / reference | "
        + " | ".join(f"{ratio.get(k, float('nan')):.3f}" for k in ("wall", "compute", "notebooks", "reports"))
        + " |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
