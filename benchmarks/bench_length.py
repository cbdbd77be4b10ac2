"""The length of the country reports against the publishable length they aim at.

Run from the repository root::

    PYTHONPATH=lib python benchmarks/bench_length.py                       # LU, FR, FI, BE
    PYTHONPATH=lib python benchmarks/bench_length.py --countries LU FR

One batch with the parameters of ``params/default.yaml`` (V = 1, V = 5, p-table v01,
1 000 Monte Carlo replicates), its countries replaced, into a fresh temporary directory;
BE comes from the Belgian counts (``be-2015-2023``), the others from ``ess-2023``.
Printed: the pages of each PDF, the pages of its opening summary part (chapter 1, from the
PDF's bookmarks) and the goal where there is one: LU at most 15 pages, FR at most 35, the
summary part at most 4.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import run_reports

ROOT = Path(__file__).resolve().parents[1]
#: Pages a country's report aims at (default settings).
GOALS = {"LU": 15, "FR": 35}
#: Pages of the summary part (chapter 1) at most.
SUMMARY_GOAL = 4


def summary_pages(pdf: Path) -> int:
    """Pages from the first chapter's start to the second's (the PDF's bookmarks)."""
    from pypdf import PdfReader

    reader = PdfReader(pdf)
    marks = [m for m in reader.outline if not isinstance(m, list)]
    starts = [reader.get_destination_page_number(m) for m in marks[:2]]
    return starts[1] - starts[0] if len(starts) == 2 else len(reader.pages)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--countries", nargs="+", default=["LU", "FR", "FI", "BE"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    datasets: dict[str, list[str]] = {}
    for c in args.countries:
        datasets.setdefault("be-2015-2023" if c == "BE" else "ess-2023", []).append(c)
    import yaml

    raw = yaml.safe_load((ROOT / "params" / "default.yaml").read_text(encoding="utf-8"))
    params = parse_params({**raw, "datasets": datasets, "pdf": True, "overview": False})
    out = Path(tempfile.mkdtemp(prefix="dn-length-"))
    failed = False
    try:
        rep = run_reports(params, out, workers=args.workers, progress=False, log=None)
        print("| country | pages | goal | summary part | goal |")
        print("|---|---|---|---|---|")
        for report, o in sorted(rep.outcomes.items(), key=lambda kv: kv[0].country):
            if o.pdf is None:
                print(f"| {report.country} | no PDF ({o.status}) | | | |")
                failed = True
                continue
            goal = GOALS.get(report.country)
            first = summary_pages(o.pdf)
            met = "" if goal is None else (" (met)" if o.pages <= goal else " (NOT met)")
            print(
                f"| {report.country} | {o.pages} | {goal or ''}{met} | {first} | {SUMMARY_GOAL}"
                f"{' (met)' if first <= SUMMARY_GOAL else ' (NOT met)'} |",
                flush=True,
            )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
