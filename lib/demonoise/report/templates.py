"""Where the nbconvert template lives.

The template is a directory ``templates/demonoise/`` at the top of the repository (the
product layout), not inside the Python package. The installed package finds it, in
this order:

1. an explicit ``template_dir`` argument;
2. the environment variable ``DEMONOISE_TEMPLATES``;
3. ``<repository>/templates``, found from the package location ``<repository>/lib/demonoise``
   (an editable install, ``pip install -e .``, or ``PYTHONPATH=lib``);
4. ``<sys.prefix>/share/demonoise/templates`` (a regular wheel install: pyproject's
   ``[tool.setuptools.data-files]`` copies the template there).

Each candidate is a *base directory* that must contain ``demonoise/`` with
``conf.json``, ``index.html.j2``, the stylesheet and the vendored MathJax; the first
complete one wins. If none is complete, :class:`~demonoise.core.errors.ReportError` lists
every place tried and what was missing there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from demonoise.core.errors import ReportError

__all__ = ["TEMPLATE_NAME", "ENV_VAR", "REQUIRED_FILES", "find_template_dir", "template_candidates"]

TEMPLATE_NAME = "demonoise"
ENV_VAR = "DEMONOISE_TEMPLATES"
#: Files (relative to ``<base>/demonoise``) that make a template directory usable.
REQUIRED_FILES = (
    "conf.json",
    "index.html.j2",
    "static/demonoise.css",
    "static/mathjax/tex-svg-full.js",
)


def template_candidates(template_dir: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    """Candidate base directories, in lookup order, each with where it came from."""
    out: list[tuple[str, Path]] = []
    if template_dir is not None:
        out.append(("argument template_dir", Path(template_dir)))
    env = os.environ.get(ENV_VAR)
    if env:
        out.append((f"${ENV_VAR}", Path(env)))
    package = Path(__file__).resolve().parents[1]  # .../lib/demonoise
    out.append(("repository checkout", package.parents[1] / "templates"))
    out.append(("installed data files", Path(sys.prefix) / "share" / "demonoise" / "templates"))
    return out


def _missing(base: Path) -> list[str]:
    root = base / TEMPLATE_NAME
    return [f for f in REQUIRED_FILES if not (root / f).is_file()]


def find_template_dir(template_dir: str | os.PathLike | None = None) -> Path:
    """Return the base directory holding the ``demonoise`` nbconvert template.

    Pass the result to nbconvert as ``extra_template_basedirs`` together with
    ``template_name="demonoise"`` (``--template-file`` would silently use lab's
    ``index.html.j2``: the lookup is by base name).

    Parameters
    ----------
    template_dir : path-like, optional
        Explicit base directory. If given and incomplete, the error says so and the
        other locations are *not* tried (an explicit choice must not be overridden).

    Raises
    ------
    ReportError
        No complete template directory was found; the message lists each location
        tried and the files missing there.
    """
    tried = []
    for origin, base in template_candidates(template_dir):
        missing = _missing(base)
        if not missing:
            return base.resolve()
        tried.append(f"  {origin}: {base} (missing: {', '.join(missing)})")
        if origin.startswith("argument"):
            break
    raise ReportError(
        "nbconvert template 'demonoise' not found; tried:\n"
        + "\n".join(tried)
        + f"\nSet {ENV_VAR} to the directory that contains 'demonoise/' (the repository's "
        "templates/), or reinstall the package."
    )
