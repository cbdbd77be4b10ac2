"""Extra notebooks (what-if, teaching): execute one with parameters and render it like a report.

:func:`render_notebook` runs ``notebooks/<name>.ipynb`` through the report machinery
(:func:`~.run.run_jobs`: named kernel, atomic output, failure isolation, up-to-date
skipping) and renders the executed notebook with :func:`~.render.render_report` into
``<out_dir>/<name>.html`` and ``<out_dir>/<name>.pdf``. The report
batch calls it for the extras listed in its parameters; ``demonoise notebook NAME``
is its command line.

The notebooks are found by :func:`demonoise.runtime.locate.find_notebook`. A what-if is
named after its parameters (``whatif-BE34-scale4-V1-3.html``), so that a second scenario
does not overwrite the first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demonoise.core.errors import ReportError
from demonoise.report.batch.contract import check_known
from demonoise.report.batch.execute import DEFAULT_KERNEL, Job, run_jobs
from demonoise.report.document.assemble import RenderResult, assemble, load_notebook, render_document
from demonoise.runtime.locate import find_notebook

__all__ = [
    "EXTRAS",
    "scenario_name",
    "render_notebook",
    "ExtraRun",
    "extra_run",
    "check_extra_notebook",
    "extra_document",
]

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
        Also write the PDF (typeset by Typst). Without the typst package the HTML is
        kept and ``RenderResult.pdf_error`` says why there is no PDF.
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
    run = extra_run(name, parameters, out_dir, title=title, notebook_dir=notebook_dir)
    batch = run_jobs(
        [run.job],
        workers=1,
        force=force,
        kernel_name=kernel_name,
        progress=False,
        cell_timeout=cell_timeout,
        cluster=cluster,
    )
    check_extra_notebook(run, batch[0])
    return render_document(extra_document(run), run.html, run.pdf if pdf else None)


@dataclass(frozen=True)
class ExtraRun:
    """An extra notebook before it runs: its notebook run, its document's title and
    subtitle, and where the document goes (:func:`extra_run`)."""

    name: str
    job: Job
    title: str
    subtitle: str | None
    html: Path
    pdf: Path


def extra_run(
    name: str,
    parameters: Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike = "output",
    *,
    title: str | None = None,
    notebook_dir: str | os.PathLike | None = None,
) -> ExtraRun:
    """The notebook run of :func:`render_notebook`, not yet executed (a batch runs it with
    its countries' notebooks and renders it with their documents). Raises as
    :func:`render_notebook` does for unknown notebooks and parameters."""
    src = find_notebook(name, notebook_dir)
    params = dict(parameters or {})
    check_known(src, params, name)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = scenario_name(name, params)
    if title is None:
        node, _ = load_notebook(src)
        title = EXTRAS.get(name) or node.get("metadata", {}).get("title") or name
    return ExtraRun(
        name=name,
        job=Job(src, out_dir / f"{stem}.ipynb", params, name=stem),
        title=title if not params else f"{title} ({_subtitle(params).removeprefix('Parameters: ')})",
        subtitle=_subtitle(params),
        html=out_dir / f"{stem}.html",
        pdf=out_dir / f"{stem}.pdf",
    )


def check_extra_notebook(run: ExtraRun, res) -> None:
    """Raise :class:`~demonoise.core.errors.ReportError` when the notebook run (a
    :class:`~demonoise.report.batch.execute.JobResult`) failed, naming the exception, the cell and
    where the partly executed notebook is kept."""
    if not res.ok:
        where = f"; partly executed notebook kept as {res.failed_notebook}" if res.failed_notebook else ""
        raise ReportError(f"notebook {run.name} failed: {res.error}{where}")


def extra_document(run: ExtraRun):
    """The executed notebook as a document (:func:`~demonoise.report.document.assemble.assemble`:
    cover, no contents list)."""
    return assemble([run.job.output], title=run.title, subtitle=run.subtitle, toc=False)
