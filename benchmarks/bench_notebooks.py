"""Seconds of every notebook run of one or more report batches, side by side.

Run from the repository root, on the output folders of batches of the same params (e.g.
the default batch before and after a change of the kernel handling)::

    python benchmarks/bench_notebooks.py output-before output-after

Reads the seconds each run recorded (``metadata.demonoise.run.seconds`` of the executed
notebooks under ``<output>/build/``: papermill's execution in the worker's kept kernel,
the namespace reset included) and prints one row per notebook, then the count, sum, mean
and median per batch.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def seconds(output: Path) -> dict[str, float]:
    """``{notebook path under build/: seconds}`` of one batch's executed notebooks."""
    out = {}
    for f in sorted((output / "build").rglob("*.ipynb")):
        if f.name == "report.ipynb" or f.name.endswith(".failed.ipynb"):
            continue
        run = json.loads(f.read_text(encoding="utf-8"))["metadata"].get("demonoise", {}).get("run", {})
        if "seconds" in run:
            out[f.relative_to(output / "build").as_posix()] = float(run["seconds"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outputs", nargs="+", type=Path, help="output folders of report batches")
    args = ap.parse_args()
    runs = [seconds(o) for o in args.outputs]
    names = sorted(set().union(*runs))
    print("| notebook | " + " | ".join(str(o) for o in args.outputs) + " |")
    print("|---" * (len(runs) + 1) + "|")
    for n in names:
        print(f"| {n} | " + " | ".join(f"{r[n]:.2f}" if n in r else "" for r in runs) + " |")
    for o, r in zip(args.outputs, runs, strict=True):
        v = list(r.values()) or [0.0]
        print(
            f"{o}: {len(r)} notebooks, sum {sum(v):.1f} s, mean {statistics.mean(v):.3f} s, "
            f"median {statistics.median(v):.3f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
