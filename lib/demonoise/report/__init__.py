"""Presentation layer: report notebooks, batch execution, offline HTML/PDF, index page.

Three subpackages: :mod:`.content` (the kernel side: notebook helpers, tables, charts,
Typst twins, formulas), :mod:`.document` (assembly, the nbconvert exporters, cover, index)
and :mod:`.batch` (params, papermill execution, the further notebooks, the stages of
:func:`~.batch.stages.run_reports`). What every report notebook calls is here too
(``import demonoise.report as dr; dr.setup_notebook()``); importing it is cheap.
"""

from demonoise.report.content.notebook import display_metrics, setup_notebook

__all__ = ["setup_notebook", "display_metrics"]
