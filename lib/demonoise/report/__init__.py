"""Presentation layer: :mod:`.content` (what notebooks show, in the kernel), :mod:`.document`
(assembly, the exporters to offline HTML and PDF, cover, index) and :mod:`.batch` (params,
execution, the stages). Report notebooks call ``import demonoise.report as dr; dr.setup_notebook()``."""

from demonoise.report.content.notebook import display_metrics, setup_notebook

__all__ = ["setup_notebook", "display_metrics"]
