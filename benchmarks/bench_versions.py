"""Two checkouts of demonoise on the same batch, alternately: what a change bought.

Run from the repository root::

    git worktree add /tmp/reference <commit>     # the code before the change
    python benchmarks/bench_versions.py --reference /tmp/reference [--candidate .] \
        [--params params/default.yaml] [--repeat 2] [--workers 2] \
        [--reference-python /tmp/reference/.venv/bin/python]

Each round runs ``demonoise report`` from scratch (a new output directory) once with
the reference checkout's ``lib`` first on ``PYTHONPATH`` and once with the candidate's,
in alternating order (reference first in odd rounds, candidate first in even ones), so
that a machine whose speed drifts during the run (a shared host can change by a third
within half an hour) weighs on both alike. Printed: every run's wall time, the CPU
time of the command and every process under it (its workers and their kernels: the
work each version does, which the wall time hides where one keeps the cores busier), and
the stage split as the command reports them (the compute, notebooks and reports figures
of the command's summary line, where it prints them: stage walls before the stages
overlapped, summed work since -- two versions on either side of that change share the
names, not the meaning), then per version the median and the ratio candidate / reference of
the medians. Both use this interpreter and its packages unless ``--reference-python`` or
``--candidate-python`` names another (a checkout's own ``.venv``, e.g. one whose PDF
engine was another); each checkout's Monte Carlo kernels are compiled (numba's cache)
before the first round where its command line can.
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
STAGES = {k: re.compile(rf"\b{k} ([\d.]+) s\b") for k in ("compute", "notebooks", "reports")}


def _env(checkout: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "lib"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _warm(checkout: Path, python: str) -> None:
    cmd = [python, "-m", "demonoise.cli", "compute", "--dataset", "be-2023", "--V", "1"]
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
    subprocess.run(cmd, cwd=checkout, env=_env(checkout), check=False, capture_output=True)


def _accepts_yes(checkout: Path, python: str) -> bool:
    """Whether this version's ``report`` wants ``--yes`` for a large batch (older ones lack it)."""
    cmd = [python, "-m", "demonoise.cli", "report", "--help"]
    return "--yes" in subprocess.run(cmd, cwd=checkout, env=_env(checkout), capture_output=True, text=True).stdout


def _run(checkout: Path, python: str, params: str, workers: int, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [python, "-m", "demonoise.cli", "report", "--params", params, "--output", str(out)]
    cmd += ["--workers", str(workers)] + (["--yes"] if _accepts_yes(checkout, python) else [])
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=checkout, env=_env(checkout), stdout=log, stderr=subprocess.STDOUT, text=True)
        cpu = _tree_cpu(proc)
        wall = time.perf_counter() - t0
        log.seek(0)
        said = log.read()
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: demonoise report failed ({proc.returncode}):\n{said[-2000:]}")
    stages = {k: float(m.group(1)) for k, rx in STAGES.items() if (m := rx.search(said))}
    shutil.rmtree(out, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, **stages}


def _tree_cpu(proc: subprocess.Popen, every: float = 0.25) -> float:
    """CPU seconds (user and system) of ``proc`` and every process below it until it ends,
    read every ``every`` seconds (psutil): the Dask workers and their kernels are not all
    waited for by their parents, so getrusage's count of finished children misses them.
    A process that ends between two readings loses at most ``every`` seconds."""
    import psutil

    seen: dict[tuple[int, float], float] = {}
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        for p in tree:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    seen[(p.pid, p.create_time())] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        time.sleep(every)
    return sum(seen.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, type=Path, help="checkout of the code before the change")
    ap.add_argument("--candidate", default=ROOT, type=Path, help="checkout of the changed code (default: this one)")
    ap.add_argument("--params", default="params/default.yaml")
    ap.add_argument("--repeat", type=int, default=2, help="rounds (each runs both versions once)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reference-python", default=sys.executable, help="interpreter of the reference (default: this)")
    ap.add_argument("--candidate-python", default=sys.executable, help="interpreter of the candidate (default: this)")
    a = ap.parse_args(argv)
    versions = {"reference": a.reference.resolve(), "candidate": a.candidate.resolve()}
    python = {"reference": a.reference_python, "candidate": a.candidate_python}
    for name, path in versions.items():
        if not (path / "lib" / "demonoise").is_dir():
            raise SystemExit(f"--{name} {path}: not a demonoise checkout (no lib/demonoise)")
        _warm(path, python[name])
    runs: dict[str, list[dict]] = {k: [] for k in versions}
    tmp = Path(tempfile.mkdtemp(prefix="dn-bench-versions-"))
    try:
        for i in range(a.repeat):
            order = list(versions) if i % 2 == 0 else list(reversed(versions))
            for name in order:
                r = _run(versions[name], python[name], a.params, a.workers, tmp / name)
                runs[name].append(r)
                split = ", ".join(f"{k} {r[k]:.1f}" for k in ("compute", "notebooks", "reports") if k in r)
                print(f"round {i + 1} {name:9s} wall {r['wall']:6.1f} s, cpu {r['cpu']:6.1f} s ({split})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| version | wall (median, s) | cpu | compute | notebooks | reports |")
    print("|---|---|---|---|---|---|")
    med = {}
    for name, rs in runs.items():
        med[name] = {k: statistics.median(r[k] for r in rs if k in r) for k in rs[0]}
        cells = " | ".join(f"{med[name].get(k, float('nan')):.1f}" for k in ("cpu", "compute", "notebooks", "reports"))
        print(f"| {name} | {med[name]['wall']:.1f} | {cells} |")
    ratio = {k: med["candidate"][k] / v for k, v in med["reference"].items() if v and k in med["candidate"]}
    print(
        "| candidate / reference | "
        + " | ".join(f"{ratio.get(k, float('nan')):.3f}" for k in ("wall", "cpu", "compute", "notebooks", "reports"))
        + " |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
