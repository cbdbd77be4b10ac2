"""Extra notebooks (what-if, teaching): execute one with parameters and render it like a report.

:func:`render_notebook` runs ``notebooks/<name>.ipynb`` through the report machinery
(:func:`~.run.run_jobs`: named kernel, atomic output, failure isolation, up-to-date
skipping) and renders the executed notebook with :func:`~.render.render_report` into
``<out_dir>/<name>.html`` and, with Chromium, ``<out_dir>/<name>.pdf``. The report
batch calls it for the extras listed in its parameters; ``demonoise notebook NAME``
is its command line.

Where the notebooks are found, in order: the ``notebook_dir`` argument; the environment
variable ``DEMONOISE_NOTEBOOKS``; ``<repository>/notebooks`` (a checkout, an editable
install or ``PYTHONPATH=lib``); ``<sys.prefix>/share/demonoise/notebooks`` (a wheel
install: pyproject's ``data-files``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.render import RenderResult, load_notebook, render_report
from demonoise.report.run import DEFAULT_KERNEL, Job, run_jobs

__all__ = ["EXTRAS", "ENV_VAR", "notebook_dirs", "find_notebook", "render_notebook"]

#: Extra notebooks and the title of their report.
EXTRAS = {
    "whatif": "demonoise what-if analysis",
    "teaching": "The variance of life expectancy, step by step",
}
ENV_VAR = "DEMONOISE_NOTEBOOKS"


def notebook_dirs(notebook_dir: str | os.PathLike | None = None) -> list[Path]:
    """Candidate notebook directories, in lookup order."""
    out: list[Path] = []
    if notebook_dir is not None:
        return [Path(notebook_dir)]
    env = os.environ.get(ENV_VAR)
    if env:
        out.append(Path(env))
    package = Path(__file__).resolve().parents[1]  # .../lib/demonoise
    out.append(package.parents[1] / "notebooks")
    out.append(Path(sys.prefix) / "share" / "demonoise" / "notebooks")
    return out


def find_notebook(name: str, notebook_dir: str | os.PathLike | None = None) -> Path:
    """Path of ``<name>.ipynb``.

    Raises
    ------
    ParameterError
        ``name`` is not a plain notebook name, or no candidate directory holds it (the
        message lists the places tried and the notebooks found there).
    """
    if not isinstance(name, str) or not name or Path(name).name != name or name.endswith(".ipynb"):
        raise ParameterError(f"notebook name must be a plain name such as 'whatif' or 'teaching', got {name!r}")
    tried = []
    for d in notebook_dirs(notebook_dir):
        p = d / f"{name}.ipynb"
        if p.is_file():
            return p.resolve()
        found = sorted(q.stem for q in d.glob("*.ipynb")) if d.is_dir() else []
        tried.append(f"{d} ({', '.join(found) if found else 'no notebooks'})")
    raise ParameterError(f"notebook {name!r} not found; looked in: " + "; ".join(tried))


def _subtitle(parameters: Mapping[str, Any]) -> str | None:
    if not parameters:
        return None
    return "Parameters: " + ", ".join(
        f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in parameters.items()
    )


def render_notebook(
    name: str,
    parameters: Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike = "output",
    *,
    pdf: bool = True,
    title: str | None = None,
    notebook_dir: str | os.PathLike | None = None,
    force: bool = False,
    kernel_name: str = DEFAULT_KERNEL,
    cell_timeout: float | None = 600.0,
    chromium: str | os.PathLike | None = None,
) -> RenderResult:
    """Execute ``notebooks/<name>.ipynb`` with ``parameters`` and render it.

    Parameters
    ----------
    name : str
        Notebook name (``"whatif"``, ``"teaching"``; see :data:`EXTRAS`).
    parameters : mapping, optional
        Papermill parameters (JSON-serialisable), injected after the notebook's cell
        tagged ``parameters``.
    out_dir : path-like
        Receives ``<name>.ipynb`` (the executed notebook), ``<name>.html`` and
        ``<name>.pdf``.
    pdf : bool
        Also print a PDF with headless Chromium. Without Chromium the HTML is kept and
        ``RenderResult.pdf_error`` says why there is no PDF.
    title : str, optional
        Report title (default: :data:`EXTRAS` entry, else the notebook's
        ``metadata.title``, else ``name``).
    notebook_dir : path-like, optional
        Where ``<name>.ipynb`` lives (see the module notes for the default lookup).
    force : bool
        Execute even if ``<name>.ipynb`` in ``out_dir`` is up to date (same notebook,
        parameters and library).
    kernel_name, cell_timeout
        As in :func:`~.run.run_jobs`.
    chromium : path-like, optional
        Chromium executable for the PDF.

    Returns
    -------
    RenderResult

    Raises
    ------
    ParameterError
        Unknown notebook, parameters that are not JSON-serialisable.
    ReportError
        The notebook failed (the message names the exception and the cell; the partly
        executed notebook is kept as ``<name>.failed.ipynb``), or HTML rendering failed.
    """
    src = find_notebook(name, notebook_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    params = dict(parameters or {})
    job = Job(src, out_dir / f"{name}.ipynb", params, name=name)
    batch = run_jobs([job], workers=1, force=force, kernel_name=kernel_name, progress=False, cell_timeout=cell_timeout)
    res = batch[0]
    if not res.ok:
        where = f"; partly executed notebook kept as {res.failed_notebook}" if res.failed_notebook else ""
        raise ReportError(f"notebook {name} failed: {res.error}{where}")
    if title is None:
        node, _ = load_notebook(src)
        title = EXTRAS.get(name) or node.get("metadata", {}).get("title") or name
    return render_report(
        [res.output],
        out_dir / f"{name}.html",
        out_dir / f"{name}.pdf" if pdf else None,
        title=title,
        subtitle=_subtitle(params),
        toc=False,
        chromium=chromium,
    )
