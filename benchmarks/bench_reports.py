"""Wall times of the quality-report batch: the showcase and every country.

Run from the repository root::

    PYTHONPATH=lib python benchmarks/bench_reports.py                 # default + ess-2023
    PYTHONPATH=lib python benchmarks/bench_reports.py --only default  # just the showcase
    PYTHONPATH=lib python benchmarks/bench_reports.py --workers 2 --keep /tmp/bench
    PYTHONPATH=lib python benchmarks/bench_reports.py --workers 1 2     # speed-up of 2 local workers

For each params file (``params/default.yaml``, ``params/ess-2023.yaml``) the batch runs
from scratch into a fresh temporary output directory (results computed, notebooks
executed, HTML and PDF rendered), then once more into the same directory (everything
up to date). Printed: wall time of the whole run, of the overview's preparation and of
the countries (their compute -- results tables incl. Monte Carlo, calibration,
comparison --, notebooks and rendering run overlapped on ``workers`` processes of the
local Dask cluster), the work of each kind summed over the tasks, then one line per
report: its notebook, HTML and PDF seconds,
its pages and PDF seconds per page; sizes, and the load average before and after
(other work on the machine inflates every figure). Then the PDF engines side by side on
the same assembled notebooks (``build/<dataset>/<country>/report.ipynb``), in this process:
Typst (the reports' engine: ``demonoise_pdf``) and, where ``weasyprint`` is installed (it is
no dependency of the project: ``pip install weasyprint``, which needs the system's Pango),
WeasyPrint laying out the HTML of ``demonoise_html`` -- the engine the PDFs had before --,
each document's seconds and seconds per page, and the ratio per page. With several ``--workers`` (e.g.
``1 2``) each params file runs once per size, back to back, and the wall-time speed-up
against the first size is printed. JSON goes to
``benchmarks/out/reports.json``.

Setup (the virtual environment, the kernelspec) is excluded, as is Python's start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from demonoise.report.batch.params import load_params
from demonoise.report.batch.stages import run_reports

ROOT = Path(__file__).resolve().parents[1]


def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "max": None}
    return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def bench(name: str, params_file: Path, out: Path, workers: int, pdf: bool | None) -> dict:
    params = load_params(params_file)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rep = run_reports(params, out, workers=workers, pdf=pdf, progress=False, log=None)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    t1 = time.perf_counter()
    again = run_reports(params, out, workers=workers, pdf=pdf, progress=False, log=None)
    wall_again = time.perf_counter() - t1
    o = list(rep.outcomes.values())
    per = [
        {
            "report": r.label,
            "status": x.status,
            "notebooks_s": round(x.notebook_seconds, 2),
            "html_s": round(x.html_seconds, 2),
            "pdf_s": round(x.pdf_seconds, 2) if x.pdf is not None else None,
            "pages": x.pages,
            "pdf_s_per_page": round(x.pdf_seconds / x.pages, 3) if x.pages else None,
            "html_mb": round(x.html.stat().st_size / 1e6, 2) if x.html else None,
            "pdf_mb": round(x.pdf.stat().st_size / 1e6, 2) if x.pdf else None,
        }
        for r, x in rep.outcomes.items()
    ]
    res = {
        "params": str(params_file.relative_to(ROOT)),
        "reports": len(o),
        "failed": len(rep.failed),
        "pdfs": sum(x.pdf is not None for x in o),
        "wall_s": round(wall, 1),
        "stages_s": {k: round(v, 1) for k, v in rep.timings.items()},
        "work_s": {
            "notebooks": round(sum(x.notebook_seconds for x in o), 1),
            "html": round(sum(x.html_seconds for x in o), 1),
            "pdf": round(sum(x.pdf_seconds for x in o), 1),
            "pages": sum(x.pages for x in o),
        },
        "per_report": per,
        "per_report_s": {
            "notebooks": _stats([x.notebook_seconds for x in o]),
            "html": _stats([x.html_seconds for x in o]),
            "pdf": _stats([x.pdf_seconds for x in o if x.pdf is not None]),
        },
        "rerun_wall_s": round(wall_again, 1),
        "rerun_statuses": sorted({x.status for x in again.outcomes.values()}),
        "loadavg_before": [round(v, 2) for v in load0],
        "loadavg_after": [round(v, 2) for v in load1],
        "notes": rep.notes,
    }
    return res


#: The page of the WeasyPrint comparison (the reports' former print stylesheet, in short).
_PRINT_CSS = """@page { size: A4; margin: 20mm 16mm 18mm 16mm;
  @bottom-right { content: counter(page) " / " counter(pages) } }
html { font-size: 9.5pt; } section.dn-chapter { break-before: page; } thead { display: table-header-group; }
tr, figure { break-inside: avoid; } h1, h2, h3 { break-after: avoid; }"""


def _weasyprint(html: str, base: Path) -> tuple[float, int] | None:
    """Seconds and pages of WeasyPrint laying out ``html``; ``None`` if it is not installed."""
    try:
        import weasyprint
    except (ImportError, OSError):  # not installed, or the system's Pango missing
        return None
    import logging

    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    doc = weasyprint.HTML(string=html, base_url=str(base)).render(stylesheets=[weasyprint.CSS(string=_PRINT_CSS)])
    doc.write_pdf()
    return time.perf_counter() - t0, len(doc.pages)


def pdf_engines(out: Path, repeat: int = 3) -> dict:
    """Typst against WeasyPrint on the batch's assembled notebooks (see the module notes):
    Typst's seconds are the median of ``repeat`` runs of the exporter (the first run of the
    first document, which starts the compiler and loads the template, is given apart)."""
    import nbformat

    from demonoise.report.document.exporters import DocumentHTMLExporter, DocumentPDFExporter

    rows, first = [], None
    for path in sorted(out.glob("build/*/*/report.ipynb")):
        nb = nbformat.read(path, as_version=4)
        res = {"metadata": {"name": path.parent.name, "path": str(path.parent)}}
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            _, r = DocumentPDFExporter().from_notebook_node(nb, resources=res)
            times.append(time.perf_counter() - t0)
        first = times[0] if first is None else first
        typst_s, pages = statistics.median(times), r["demonoise_pages"]
        row = {"report": f"{path.parent.parent.name}/{path.parent.name}", "pages": pages, "typst_s": round(typst_s, 3)}
        row["typst_s_per_page"] = round(typst_s / pages, 4)
        html, _ = DocumentHTMLExporter().from_notebook_node(nb, resources=res)
        weasy = _weasyprint(html, path.parent)
        if weasy is not None:
            row.update(weasyprint_s=round(weasy[0], 2), weasyprint_pages=weasy[1])
            row["weasyprint_s_per_page"] = round(weasy[0] / weasy[1], 3)
            row["ratio_per_page"] = round(row["weasyprint_s_per_page"] / row["typst_s_per_page"], 1)
        rows.append(row)
    return {"typst_first_run_s": round(first or 0, 2), "documents": rows}


def _print_engines(e: dict) -> None:
    rows = e["documents"]
    print(
        "\nPDF engines on the same assembled notebooks (Typst: median of 3 runs of demonoise_pdf; the first run "
        f"in the process, which starts the compiler, took {e['typst_first_run_s']} s)"
    )
    if not rows:
        print("no assembled notebook found")
        return
    weasy = "weasyprint_s" in rows[0]
    if not weasy:
        print("WeasyPrint not installed here (pip install weasyprint, needs Pango): its columns are skipped")
    head = "| document | Typst pages | Typst (s) | Typst s/page |"
    print(head + (" WeasyPrint pages | WeasyPrint (s) | s/page | ratio per page |" if weasy else ""))
    print("|---|---|---|---|" + ("---|---|---|---|" if weasy else ""))
    for x in rows:
        extra = (
            f" {x['weasyprint_pages']} | {x['weasyprint_s']} | {x['weasyprint_s_per_page']} | {x['ratio_per_page']} |"
            if weasy
            else ""
        )
        print(f"| {x['report']} | {x['pages']} | {x['typst_s']} | {x['typst_s_per_page']} |" + extra)
    t_pages, t_s = sum(x["pages"] for x in rows), sum(x["typst_s"] for x in rows)
    line = f"all: Typst {t_s:.2f} s for {t_pages} pages ({t_s / t_pages:.4f} s/page)"
    if weasy:
        w_pages, w_s = sum(x["weasyprint_pages"] for x in rows), sum(x["weasyprint_s"] for x in rows)
        line += f"; WeasyPrint {w_s:.1f} s for {w_pages} pages ({w_s / w_pages:.3f} s/page)"
        line += f"; Typst {(w_s / w_pages) / (t_s / t_pages):.1f} times faster per page, {w_s / t_s:.1f} per document"
    print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["default", "ess"], help="run one params file only")
    ap.add_argument("--workers", type=int, nargs="+", default=[2], help="local cluster sizes, run back to back")
    ap.add_argument("--no-pdf", action="store_true")
    ap.add_argument("--keep", type=Path, help="write outputs here (kept) instead of a temporary directory")
    args = ap.parse_args()
    files = {"default": ROOT / "params" / "default.yaml", "ess": ROOT / "params" / "ess-2023.yaml"}
    if args.only:
        files = {args.only: files[args.only]}
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "workers": args.workers,
        "runs": {},
    }
    for (name, f), workers in ((nf, w) for nf in files.items() for w in args.workers):
        key = name if len(args.workers) == 1 else f"{name}-w{workers}"
        base = args.keep / key if args.keep else Path(tempfile.mkdtemp(prefix=f"dn-bench-{key}-"))
        if base.exists() and args.keep:
            shutil.rmtree(base)
        try:
            r = bench(name, f, base, workers, False if args.no_pdf else None)
            if not args.no_pdf:
                r["pdf_engines"] = pdf_engines(base)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        results["runs"][key] = r
        s, w = r["stages_s"], r["work_s"]
        print(f"\n## {r['params']}: {r['reports']} reports ({r['failed']} failed, {r['pdfs']} PDFs), workers {workers}")
        print("| wall (s) | |\n|---|---|")
        print(f"| total | {r['wall_s']} |")
        for stage in ("plan", "compute", "execute", "render", "index"):
            print(f"| stage {stage} | {s.get(stage)} |")
        print(f"| second run (all up to date) | {r['rerun_wall_s']} |")
        per_page = f"{w['pdf'] / w['pages']:.2f}" if w["pages"] else "n/a"
        print(
            f"summed work (inside the tasks): compute {s.get('compute_work')} s, notebooks {w['notebooks']} s, "
            f"HTML {w['html']} s, PDF {w['pdf']} s, {w['pages']} pages ({per_page} PDF s/page)"
        )
        print("\n| report | notebooks (s) | HTML (s) | PDF (s) | pages | PDF s/page | HTML MB | PDF MB |")
        print("|---|---|---|---|---|---|---|---|")
        for x in r["per_report"]:
            print(
                f"| {x['report']} | {x['notebooks_s']} | {x['html_s']} | {x['pdf_s']} | {x['pages']} | "
                f"{x['pdf_s_per_page']} | {x['html_mb']} | {x['pdf_mb']} |"
            )
        print(f"load average before {r['loadavg_before']}, after {r['loadavg_after']}")
        for n in r["notes"]:
            print(f"note: {n}")
        if "pdf_engines" in r:
            _print_engines(r["pdf_engines"])
        first = results["runs"].get(f"{name}-w{args.workers[0]}")
        if first is not None and workers != args.workers[0]:
            print(
                f"speed-up, {workers} workers against {args.workers[0]} (same run, back to back): "
                f"{first['wall_s'] / r['wall_s']:.2f} (wall {first['wall_s']} s -> {r['wall_s']} s)"
            )
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "reports.json").write_text(json.dumps(results, indent=1))
    print(f"\nJSON: {out / 'reports.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
