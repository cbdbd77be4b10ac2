"""Presentation layer: report notebooks, batch execution, offline HTML/PDF, index page.

Three subpackages, imported lazily so that ``import demonoise.report`` in a kernel costs
nothing beyond what :func:`setup_notebook` needs: :mod:`.content` (the kernel side:
notebook helpers, tables, charts, Typst twins, formulas), :mod:`.document` (assembly,
the nbconvert exporters, cover, index) and :mod:`.batch` (params, papermill execution,
the results store, the stages of :func:`run_reports`). The names below are re-exported.
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
