"""Pages a report gains per noise setting: the page budget of an extra setting.

Run from the repository root::

    PYTHONPATH=lib python benchmarks/bench_pages.py                    # FR and LU of ess-2023
    PYTHONPATH=lib python benchmarks/bench_pages.py --countries FR DE

For each country the batch runs three times into fresh temporary directories, with one,
two and three of the settings of ``params/default.yaml`` (V = 1; V = 1 and V = 5; V = 1,
V = 5 and p-table v01), HTML and PDF, no Monte Carlo (it does not change the page
count), no overview. Printed: the pages of each PDF, the pages the second setting (a
generic V) and the third (the p-table, which also brings the chapter comparing the
generic model with it) add, and the PDF seconds. The budget the report promises: at
most 12 pages per extra setting for France, the largest country of the showcase.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import run_reports

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = [{"V": 1}, {"V": 5}, {"ptable": "v01"}]
BUDGET = 12


def pages(country: str, n_settings: int, workers: int) -> tuple[int, float]:
    params = parse_params(
        {
            "datasets": {"ess-2023": [country]},
            "noise": SETTINGS[:n_settings],
            "mc": 0,
            "pdf": True,
            "overview": False,
        }
    )
    out = Path(tempfile.mkdtemp(prefix=f"dn-pages-{country}-{n_settings}-"))
    try:
        t = time.perf_counter()
        rep = run_reports(params, out, workers=workers, progress=False, log=None)
        wall = time.perf_counter() - t
        (outcome,) = rep.outcomes.values()
        if outcome.pdf is None:
            raise SystemExit(f"{country} with {n_settings} setting(s): no PDF ({outcome.status})")
        return outcome.pages, wall
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--countries", nargs="+", default=["FR", "LU"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    res = {}
    print("| country | 1 setting | 2 settings | 3 settings | + V = 5 | + p-table v01 |")
    print("|---|---|---|---|---|---|")
    for c in args.countries:
        runs = [pages(c, k, args.workers) for k in (1, 2, 3)]
        p = [r[0] for r in runs]
        res[c] = {"pages": p, "wall_s": [round(r[1], 1) for r in runs]}
        print(f"| {c} | {p[0]} | {p[1]} | {p[2]} | +{p[1] - p[0]} | +{p[2] - p[1]} |", flush=True)
    worst = max(max(v["pages"][1] - v["pages"][0], v["pages"][2] - v["pages"][1]) for v in res.values())
    verdict = "met" if worst <= BUDGET else "NOT met"
    print(f"largest page cost of one extra setting: {worst} pages (budget {BUDGET}): {verdict}")
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "pages.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
