"""Where the nbconvert template lives: ``templates/demonoise/`` at the top of the repository.

Found like the notebooks (:mod:`.locate`): an explicit directory (only that one), then
``$DEMONOISE_TEMPLATES``, the repository checkout, ``<sys.prefix>/share/demonoise/templates``.
Each candidate is a *base directory* that must contain ``demonoise/`` with ``conf.json``,
``index.html.j2`` and the two stylesheets (screen, print).
"""

from __future__ import annotations

import os
from pathlib import Path

from demonoise.report.locate import ENV_VARS, find_dir

__all__ = ["TEMPLATE_NAME", "ENV_VAR", "REQUIRED_FILES", "find_template_dir"]

TEMPLATE_NAME = "demonoise"
ENV_VAR = ENV_VARS["templates"]
#: Files (relative to ``<base>/demonoise``) that make a template directory usable.
REQUIRED_FILES = ("conf.json", "index.html.j2", "static/demonoise.css", "static/print.css")


def find_template_dir(template_dir: str | os.PathLike | None = None) -> Path:
    """The base directory holding the ``demonoise`` nbconvert template (pass it to nbconvert
    as ``extra_template_basedirs`` with ``template_name="demonoise"``).

    Raises
    ------
    ReportError
        No complete template directory; the message lists each place tried.
    """
    return find_dir("templates", tuple(f"{TEMPLATE_NAME}/{f}" for f in REQUIRED_FILES), template_dir)
