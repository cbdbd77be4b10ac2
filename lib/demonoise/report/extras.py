"""Extra notebooks (what-if, teaching): execute one with parameters and render it like a report.

:func:`render_notebook` runs ``notebooks/<name>.ipynb`` through the report machinery
(:func:`~.run.run_jobs`: named kernel, atomic output, failure isolation, up-to-date
skipping) and renders the executed notebook with :func:`~.render.render_report` into
``<out_dir>/<name>.html`` and ``<out_dir>/<name>.pdf``. The report
batch calls it for the extras listed in its parameters; ``demonoise notebook NAME``
is its command line.

The notebooks are found by :func:`demonoise.report.locate.find_notebook`. A what-if is
named after its parameters (``whatif-BE34-scale4-V1-3.html``), so that a second scenario
does not overwrite the first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from demonoise.core.errors import ReportError
from demonoise.report.contract import check_known
from demonoise.report.locate import find_notebook
from demonoise.report.render import RenderResult, load_notebook, render_report
from demonoise.report.run import DEFAULT_KERNEL, Job, run_jobs

__all__ = ["EXTRAS", "scenario_name", "render_notebook"]

#: Extra notebooks and the title of their report.
EXTRAS = {
    "whatif": "demonoise what-if analysis",
    "teaching": "The variance of life expectancy, step by step",
}


def _value_tag(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "-".join(_value_tag(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def scenario_name(name: str, parameters: Mapping[str, Any]) -> str:
    """File stem of an extra notebook run: its name and parameters, e.g.
    ``whatif-BE34-V1-3-scale4`` (dataset and region first, without their parameter's name)."""
    parts = [name] + [_value_tag(parameters[k]) for k in ("dataset", "region") if k in parameters]
    parts += [f"{k}{_value_tag(v)}" for k, v in sorted(parameters.items()) if k not in ("dataset", "region")]
    return re.sub(r"[^A-Za-z0-9_.-]+", "", "-".join(parts))[:120]


def _subtitle(parameters: Mapping[str, Any]) -> str | None:
    if not parameters:
        return None
    return "Parameters: " + ", ".join(f"{k} = {_value_tag(v).replace('-', ', ')}" for k, v in parameters.items())


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
    cluster=None,
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
        Also write the PDF (WeasyPrint). Without Pango the HTML is kept and
        ``RenderResult.pdf_error`` says why there is no PDF.
    title : str, optional
        Report title (default: :data:`EXTRAS` entry, else the notebook's
        ``metadata.title``, else ``name``).
    notebook_dir : path-like, optional
        Where ``<name>.ipynb`` lives (see the module notes for the default lookup).
    force : bool
        Execute even if ``<name>.ipynb`` in ``out_dir`` is up to date (same notebook,
        parameters and library).
    kernel_name, cell_timeout, cluster
        As in :func:`~.run.run_jobs` (with a cluster, the notebook runs on it when it is
        external or started).

    Returns
    -------
    RenderResult

    Raises
    ------
    ParameterError
        Unknown notebook, a parameter the notebook's tagged ``parameters`` cell does not
        define (naming it and listing the known ones), parameters that are not
        JSON-serialisable.
    ReportError
        The notebook failed (the message names the exception and the cell; the partly
        executed notebook is kept as ``<name>.failed.ipynb``), or HTML rendering failed.
    """
    src = find_notebook(name, notebook_dir)
    params = dict(parameters or {})
    check_known(src, params, name)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = scenario_name(name, params)
    job = Job(src, out_dir / f"{stem}.ipynb", params, name=stem)
    batch = run_jobs(
        [job],
        workers=1,
        force=force,
        kernel_name=kernel_name,
        progress=False,
        cell_timeout=cell_timeout,
        cluster=cluster,
    )
    res = batch[0]
    if not res.ok:
        where = f"; partly executed notebook kept as {res.failed_notebook}" if res.failed_notebook else ""
        raise ReportError(f"notebook {name} failed: {res.error}{where}")
    if title is None:
        node, _ = load_notebook(src)
        title = EXTRAS.get(name) or node.get("metadata", {}).get("title") or name
    return render_report(
        [res.output],
        out_dir / f"{stem}.html",
        out_dir / f"{stem}.pdf" if pdf else None,
        title=title if not params else f"{title} ({_subtitle(params).removeprefix('Parameters: ')})",
        subtitle=_subtitle(params),
        toc=False,
    )
