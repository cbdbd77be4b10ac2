"""Timings of the report machinery on the fixture notebooks.

Run from the repository root::

    PYTHONPATH=lib python benchmarks/bench_report_machinery.py [--n 8] [--repeat 3]

Measures, for ``n`` executions of ``tests/notebooks/report_good.ipynb`` (two Altair
charts via vl-convert, a LaTeX output, a table, a metrics payload):

* time per notebook (batch wall time / n) for a fresh kernel per notebook (papermill
  alone, the reference) vs ``run_jobs``' reused kernel per worker, with 1 and 2 workers;
* time to assemble and render one HTML report (cover + 4 sections), the HTML size;
* time to typeset that document as a PDF with Typst (and per page).

Writes a Markdown table to stdout and JSON to ``benchmarks/out/report_machinery.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from demonoise.core.errors import ReportError
from demonoise.report.batch.execute import Job, run_jobs
from demonoise.report.document.assemble import assemble, render_document
from demonoise.report.document.exporters import DocumentPDFExporter

ROOT = Path(__file__).resolve().parents[1]

NB = ROOT / "tests" / "notebooks"


def _jobs(d: Path, n: int) -> list[Job]:
    return [
        Job(NB / "report_good.ipynb", d / f"nb{i}.ipynb", {"region": f"R{i}", "V": float(1 + i % 5)}) for i in range(n)
    ]


def _row(workers: int, kernel: str, n: int, wall: float, seconds: list[float]) -> dict:
    return {
        "workers": workers,
        "kernel": kernel,
        "notebooks": n,
        "wall_s": round(wall, 2),
        "per_notebook_s": round(wall / n, 3),
        "median_job_s": round(statistics.median(seconds), 3),
    }


def bench_runs(out: Path, n: int) -> list[dict]:
    """The reference, a fresh kernel per notebook (papermill's ``execute_notebook`` in this
    process, one after another), against ``run_jobs``' kernel kept per worker (reset
    between notebooks) with 1 and 2 workers."""
    import papermill

    fresh, seconds = _jobs(out / "fresh", n), []
    t0 = time.perf_counter()
    for job in fresh:
        t1 = time.perf_counter()
        job.output.parent.mkdir(parents=True, exist_ok=True)
        papermill.execute_notebook(job.input, job.output, parameters=dict(job.parameters), progress_bar=False)
        seconds.append(time.perf_counter() - t1)
    rows = [_row(1, "fresh (papermill)", n, time.perf_counter() - t0, seconds)]
    for workers in (1, 2):
        jobs = _jobs(out / f"w{workers}-reused", n)
        t0 = time.perf_counter()
        batch = run_jobs(jobs, workers=workers, force=True, progress=False)
        wall = time.perf_counter() - t0
        assert all(r.status == "ok" for r in batch.values()), [str(r.error) for r in batch.values()]
        rows.append(_row(workers, "reused", n, wall, [r.seconds for r in batch.values()]))
    return rows


def bench_render(out: Path, repeat: int) -> dict:
    d = out / "render"
    jobs = [Job(NB / "report_cover.ipynb", d / "cover.ipynb", {"title": "Benchmark report"})] + [
        Job(NB / "report_good.ipynb", d / f"s{i}.ipynb", {"region": f"R{i}", "V": float(i + 1)}) for i in range(4)
    ]
    assert all(r.status == "ok" for r in run_jobs(jobs, workers=2, force=True, progress=False).values())
    sections = [d / f"s{i}.ipynb" for i in range(4)]
    html_times, pdf_times = [], []
    html = d / "report.html"
    for _ in range(repeat):
        t0 = time.perf_counter()
        nb = assemble(sections, title="Benchmark report", cover=d / "cover.ipynb")
        render_document(nb, html)
        html_times.append(time.perf_counter() - t0)
    res = {
        "sections": len(sections),
        "html_s": round(statistics.median(html_times), 3),
        "html_bytes": html.stat().st_size,
    }
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            data, r = DocumentPDFExporter().from_notebook_node(nb, resources={"metadata": {"name": "report"}})
            pdf_times.append(time.perf_counter() - t0)
        pages = r["demonoise_pages"]
        res.update(pdf_s=round(statistics.median(pdf_times), 3), pdf_bytes=len(data), pages=pages)
    except ReportError as e:
        res["pdf_s"] = None
        res["pdf_error"] = str(e)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=8, help="notebooks per mode (default 8)")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the HTML/PDF timings (median)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dn-bench-") as tmp:
        out = Path(tmp)
        runs = bench_runs(out, args.n)
        render = bench_render(out, args.repeat)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "runs": runs,
        "render": render,
    }
    print(f"\n{os.cpu_count()} CPUs, Python {platform.python_version()}\n")
    print("| workers | kernel | notebooks | wall (s) | per notebook (s) | median job (s) |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        print(
            f"| {r['workers']} | {r['kernel']} | {r['notebooks']} | {r['wall_s']} | {r['per_notebook_s']} "
            f"| {r['median_job_s']} |"
        )
    print()
    print(
        f"HTML render (assemble + nbconvert, cover + {render['sections']} sections): {render['html_s']} s, "
        f"{render['html_bytes'] / 1e6:.2f} MB"
    )
    if render.get("pdf_s") is not None:
        print(
            f"PDF (Typst): {render['pdf_s']} s, {render['pages']} pages "
            f"({render['pdf_s'] / render['pages']:.2f} s per page), {render['pdf_bytes'] / 1e3:.0f} kB"
        )
    else:
        print(render["pdf_error"])
    dest = ROOT / "benchmarks" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report_machinery.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
