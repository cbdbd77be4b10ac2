"""Where the nbconvert templates live (``templates/``), found like the notebooks
(:mod:`demonoise.runtime.locate`): ``demonoise/`` (the HTML template, its stylesheet and
``fonts/``, the Typst compiler's only fonts) and ``demonoise_typst/`` (the Typst template).
"""

from __future__ import annotations

import os
from pathlib import Path

from demonoise.runtime.locate import find_dir

TEMPLATE_NAME = "demonoise"
#: The Typst template of the PDF (:class:`~demonoise.report.document.exporters.DocumentTypstExporter`).
TYPST_TEMPLATE_NAME = "demonoise_typst"
#: Files (relative to the base directory) that make a template directory usable.
REQUIRED_FILES = (
    *(f"{TEMPLATE_NAME}/{f}" for f in ("conf.json", "index.html.j2", "static/demonoise.css", "batch_index.html.j2")),
    *(f"{TYPST_TEMPLATE_NAME}/{f}" for f in ("conf.json", "index.typ.j2")),
)


def find_template_dir(template_dir: str | os.PathLike | None = None) -> Path:
    """The base directory of the two nbconvert templates; :class:`ReportError` listing each place tried if none."""
    return find_dir("templates", REQUIRED_FILES, template_dir)
