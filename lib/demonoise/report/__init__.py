"""Presentation layer: report notebooks, batch execution, offline HTML/PDF, index page.

Modules (imported lazily, so that ``import demonoise.report`` in a kernel costs
nothing beyond what :func:`setup_notebook` itself needs):

* :mod:`.content.notebook`  -- kernel side: :func:`setup_notebook` (offline Altair renderer,
  pandas display options), :func:`display_metrics`;
* :mod:`.batch.execute`       -- papermill batch: :class:`Job`, :func:`run_jobs` (pool of kernels
  reused between notebooks, failure isolation, atomic outputs, up-to-date skipping);
* :mod:`.document.assemble`    -- one document from executed notebooks: :func:`assemble` (cover,
  contents, chapters with a subsection per setting), :func:`render_document` (HTML,
  CSV files, PDF), :func:`read_metrics`, :func:`read_parameters`;
* :mod:`.document.exporters`  -- the nbconvert exporters ``demonoise_html``, ``demonoise_typst`` and
  ``demonoise_pdf`` (Typst, in-process), figures and tables numbered;
* :mod:`.content.typeset`   -- formulas as SVG (ziamath), Markdown to HTML and to Typst by
  nbconvert's Markdown parser;
* :mod:`.content.typstsrc`  -- Typst source: escaping, values, the Typst twins of the display objects;
* :mod:`.content.theme`     -- the Altair theme, colours, number formats, log ticks;
* :mod:`.document.cover`     -- the cover (publisher, date, version, data extraction);
* :mod:`.document.index`     -- ``index.html`` over a batch: :func:`write_index`;
* :mod:`.batch.params`    -- the params schema (pydantic) and its YAML loader;
* :mod:`.batch.cache`     -- fingerprints and stamps (what is up to date);
* :mod:`demonoise.runtime.locate`, :mod:`.document.templates` -- where notebooks, template and params are found;
* :mod:`.batch.store`     -- results computed once by the library and read by the notebooks:
  :class:`ResultsSpec`, :func:`results` (the decision tables' files: :mod:`demonoise.analysis.stored`);
* :mod:`.content.charts`    -- Altair chart builders over the results table;
* :mod:`.content.summary`   -- tables and boxes over the results table (the verdicts, flags and
  sentences come from :mod:`demonoise.analysis.verdicts`);
* :mod:`.content.change`    -- the chapter "Change since the previous year" (multi-year datasets):
  verdict and detectable-change tables, sentences, data labels;
* :mod:`.batch.stages`     -- the report batch in stages: plan -> compute -> execute -> render
  -> index (:func:`run_reports`).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "setup_notebook": "content.notebook",
    "display_metrics": "content.notebook",
    "chart_bundle": "content.notebook",
    "METRICS_MIME": "content.notebook",
    "RENDERER_NAME": "content.notebook",
    "Job": "batch.execute",
    "JobResult": "batch.execute",
    "BatchResult": "batch.execute",
    "run_jobs": "batch.execute",
    "Section": "document.assemble",
    "RenderResult": "document.assemble",
    "render_document": "document.assemble",
    "Chapter": "document.assemble",
    "assemble": "document.assemble",
    "read_metrics": "document.assemble",
    "read_parameters": "document.assemble",
    "IndexRow": "document.index",
    "write_index": "document.index",
    "DocumentHTMLExporter": "document.exporters",
    "DocumentPDFExporter": "document.exporters",
    "DocumentTypstExporter": "document.exporters",
    "find_template_dir": "document.templates",
    "ResultsSpec": "batch.store",
    "results": "batch.store",
    "ReportParams": "batch.params",
    "load_params": "batch.params",
    "parse_params": "batch.params",
    "run_reports": "batch.stages",
}
__all__ = list(_WHERE)


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
