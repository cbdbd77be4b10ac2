"""Presentation layer: report notebooks, batch execution, offline HTML/PDF, index page.

Modules (imported lazily, so that ``import demonoise.report`` in a kernel costs
nothing beyond what :func:`setup_notebook` itself needs):

* :mod:`.notebook`  -- kernel side: :func:`setup_notebook` (offline Altair renderer,
  pandas display options), :func:`display_metrics`;
* :mod:`.run`       -- papermill batch: :class:`Job`, :func:`run_jobs` (pool of kernels
  reused between notebooks, failure isolation, atomic outputs, up-to-date skipping);
* :mod:`.render`    -- one report from executed notebooks: :func:`render_report`
  (cover + sections + contents -> offline HTML -> PDF with headless Chromium),
  :func:`read_metrics`, :func:`read_parameters`;
* :mod:`.index`     -- ``index.html`` over a batch: :func:`write_index`;
* :mod:`.chromium`  -- headless Chromium: find it, print to PDF, dump the DOM;
* :mod:`.templates` -- where the nbconvert template is found;
* :mod:`.store`     -- results computed once by the library and read by the notebooks:
  :class:`ResultsSpec`, :func:`results`;
* :mod:`.charts`    -- Altair chart builders over the results table;
* :mod:`.summary`   -- tables, verdict sentences and flags over the results table;
* :mod:`.batch`     -- the report batch: params file -> results -> notebooks -> reports
  -> index (:func:`load_params`, :func:`run_reports`).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    # notebook (kernel side)
    "setup_notebook",
    "display_metrics",
    "chart_bundle",
    "METRICS_MIME",
    "RENDERER_NAME",
    # run
    "Job",
    "JobResult",
    "BatchResult",
    "run_jobs",
    "library_fingerprint",
    # render
    "Section",
    "RenderResult",
    "render_report",
    "render_html",
    "render_pdf",
    "assemble",
    "read_metrics",
    "read_parameters",
    # index
    "IndexRow",
    "write_index",
    # chromium / templates
    "find_chromium",
    "ChromiumNotFoundError",
    "find_template_dir",
    # store
    "ResultsSpec",
    "results",
    # batch
    "ReportParams",
    "load_params",
    "parse_params",
    "run_reports",
]

_WHERE = {
    "setup_notebook": "notebook",
    "display_metrics": "notebook",
    "chart_bundle": "notebook",
    "METRICS_MIME": "notebook",
    "RENDERER_NAME": "notebook",
    "Job": "run",
    "JobResult": "run",
    "BatchResult": "run",
    "run_jobs": "run",
    "library_fingerprint": "run",
    "Section": "render",
    "RenderResult": "render",
    "render_report": "render",
    "render_html": "render",
    "render_pdf": "render",
    "assemble": "render",
    "read_metrics": "render",
    "read_parameters": "render",
    "IndexRow": "index",
    "write_index": "index",
    "find_chromium": "chromium",
    "ChromiumNotFoundError": "chromium",
    "find_template_dir": "templates",
    "ResultsSpec": "store",
    "results": "store",
    "ReportParams": "batch",
    "load_params": "batch",
    "parse_params": "batch",
    "run_reports": "batch",
}


def __getattr__(name: str) -> Any:
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'demonoise.report' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
