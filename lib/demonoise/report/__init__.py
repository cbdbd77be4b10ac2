"""Presentation layer: report notebooks, batch execution, offline HTML/PDF, index page.

Modules (imported lazily, so that ``import demonoise.report`` in a kernel costs
nothing beyond what :func:`setup_notebook` itself needs):

* :mod:`.notebook`  -- kernel side: :func:`setup_notebook` (offline Altair renderer,
  pandas display options), :func:`display_metrics`;
* :mod:`.run`       -- papermill batch: :class:`Job`, :func:`run_jobs` (pool of kernels
  reused between notebooks, failure isolation, atomic outputs, up-to-date skipping);
* :mod:`.render`    -- one document from executed notebooks: :func:`assemble` (cover,
  contents, chapters with a subsection per setting), :func:`render_document` (HTML,
  CSV files, PDF), :func:`read_metrics`, :func:`read_parameters`;
* :mod:`.exporter`  -- the nbconvert exporters ``demonoise_html``, ``demonoise_typst`` and
  ``demonoise_pdf`` (Typst, in-process), figures and tables numbered;
* :mod:`.typeset`   -- formulas as SVG (ziamath), Markdown to HTML and to Typst by
  nbconvert's Markdown parser;
* :mod:`.typstsrc`  -- Typst source: escaping, values, the Typst twins of the display objects;
* :mod:`.theme`     -- the Altair theme, colours, number formats, log ticks;
* :mod:`.cover`     -- the cover (publisher, date, version, data extraction);
* :mod:`.index`     -- ``index.html`` over a batch: :func:`write_index`;
* :mod:`.params`    -- the params schema (pydantic) and its YAML loader;
* :mod:`.cache`     -- fingerprints and stamps (what is up to date);
* :mod:`.locate`, :mod:`.templates` -- where notebooks, template and params are found;
* :mod:`.store`     -- results computed once by the library and read by the notebooks:
  :class:`ResultsSpec`, :func:`results`;
* :mod:`.charts`    -- Altair chart builders over the results table;
* :mod:`.summary`   -- tables, verdict sentences and flags over the results table;
* :mod:`.change`    -- the chapter "Change since the previous year" (multi-year datasets):
  verdict and detectable-change tables, sentences, data labels;
* :mod:`.batch`     -- the report batch in stages: plan -> compute -> execute -> render
  -> index (:func:`run_reports`).
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
    # render
    "Section",
    "RenderResult",
    "render_report",
    "render_document",
    "Chapter",
    "assemble",
    "read_metrics",
    "read_parameters",
    # index
    "IndexRow",
    "write_index",
    # templates, exporters
    "DocumentHTMLExporter",
    "DocumentPDFExporter",
    "DocumentTypstExporter",
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
    "Section": "render",
    "RenderResult": "render",
    "render_report": "render",
    "render_document": "render",
    "Chapter": "render",
    "assemble": "render",
    "read_metrics": "render",
    "read_parameters": "render",
    "IndexRow": "index",
    "write_index": "index",
    "DocumentHTMLExporter": "exporter",
    "DocumentPDFExporter": "exporter",
    "DocumentTypstExporter": "exporter",
    "find_template_dir": "templates",
    "ResultsSpec": "store",
    "results": "store",
    "ReportParams": "params",
    "load_params": "params",
    "parse_params": "params",
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
