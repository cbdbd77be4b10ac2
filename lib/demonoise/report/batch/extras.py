"""Further notebooks: the Europe overview and the extras (what-if, teaching), each run and
rendered like a report: prepared as a :class:`FurtherRun` by :func:`extra_run` or
:func:`overview_run`, run by the report batch or alone by :func:`render_further`. A what-if
is named after its parameters (``whatif-BE34-scale4-V1-3.html``): a second keeps the first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demonoise.core.errors import ReportError
from demonoise.io.datasets import name_of, resolve
from demonoise.report.batch.execute import Job, check_defined, run_jobs
from demonoise.report.batch.params import EXTRAS
from demonoise.report.document import assemble as doc
from demonoise.runtime.locate import find_notebook

__all__ = ["FurtherRun", "extra_run", "overview_run", "render_further"]


@dataclass(frozen=True, eq=False)
class FurtherRun:
    """A further notebook before it runs: its run and its document (``html``, the PDF beside
    it): the executed notebook under a cover, or (``sections``) split at its level-1 headings
    into numbered sections with a contents list. A batch gives it its index line (``label``,
    ``summary``); one that could not be prepared has only its ``label`` and ``error``."""

    label: str = ""
    job: Job | None = None
    title: str = ""
    subtitle: str | None = None
    html: Path | None = None
    summary: dict = field(default_factory=dict)
    source: str = ""
    sections: bool = False
    error: str | None = None

    def check(self, res) -> None:
        """Raise :class:`ReportError` when the notebook did not run (``res`` is ``None``: the ``error``) or failed."""
        if res is None:
            raise ReportError(self.error)
        if not res.ok:
            where = f"; partly executed notebook kept as {res.failed_notebook}" if res.failed_notebook else ""
            raise ReportError(f"notebook {self.job.input.stem} failed: {res.error}{where}")

    def document(self):
        """The executed notebook as a document (:func:`~demonoise.report.document.assemble.assemble`)."""
        nb = self.job.output
        parts = [doc.Section(p) for p in doc.split_sections(doc.load_notebook(nb)[0])] if self.sections else [nb]
        return doc.assemble(parts, title=self.title, subtitle=self.subtitle, source=self.source, toc=self.sections)


def _value_tag(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "-".join(_value_tag(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def scenario_name(name: str, parameters: Mapping[str, Any]) -> str:
    """File stem of an extra notebook run: its name and parameters, e.g.
    ``whatif-BE34-V1-3-scale4`` (dataset and region first, without their parameter's name)."""
    first = {**parameters, "dataset": name_of(parameters["dataset"])} if "dataset" in parameters else parameters
    parts = [name] + [_value_tag(first[k]) for k in ("dataset", "region") if k in first]
    parts += [f"{k}{_value_tag(v)}" for k, v in sorted(parameters.items()) if k not in ("dataset", "region")]
    return re.sub(r"[^A-Za-z0-9_.-]+", "", "-".join(parts))[:120]


def _words(k: str, v: Any) -> str:
    """One parameter of a run in words, the noise settings by their labels (``V = 1, V = 5``)."""
    from demonoise.analysis.settings import NoiseSetting, ptable_name

    if k == "V" and v is not None:
        return ", ".join(NoiseSetting.generic(x).label for x in (v if isinstance(v, (list, tuple)) else [v]))
    if k == "ptable" and v:
        return f"p-table {ptable_name(v)}"
    return f"{k} = {_value_tag(v).replace('-', ', ')}"


def extra_run(
    name: str,
    parameters: Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike = "output",
    *,
    title: str | None = None,
) -> FurtherRun:
    """``notebooks/<name>.ipynb`` with ``parameters``, to run into ``out_dir`` (the executed
    notebook, ``<stem>.html`` and ``<stem>.pdf``, :func:`scenario_name`); its document's
    ``title``, by default the notebook's, followed by the parameters.

    Raises
    ------
    ParameterError
        Unknown notebook, or a parameter its cell tagged ``parameters`` does not define
        (naming it and listing the known ones).
    """
    src = find_notebook(name)
    params = {k: resolve(v) if k in ("dataset", "change_dataset") and v else v for k, v in (parameters or {}).items()}
    check_defined(src, params, name)
    stem = scenario_name(name, params)
    title = title or EXTRAS.get(name) or doc.load_notebook(src)[0].get("metadata", {}).get("title") or name
    given = ", ".join(_words(k, v) for k, v in params.items())
    return FurtherRun(
        job=Job(src, Path(out_dir) / f"{stem}.ipynb", params, name=stem),
        title=f"{title} ({given})" if params else title,
        subtitle=f"Parameters: {given}" if params else None,
        html=Path(out_dir) / f"{stem}.html",
    )


def overview_run(
    options: Mapping[str, Any],
    out_dir: str | os.PathLike = "output",
    *,
    store: str | os.PathLike | None = None,
    force: bool = False,
    workers: int | None = None,
    cluster=None,
    calibration=None,
) -> FurtherRun:
    """The Europe overview (``<out_dir>/overview.html``), its tables computed first.

    ``options``: ``dataset`` (default ``ess-2023``), ``V`` (default 1 and 5), ``ptables``,
    ``countries`` (default all), ``sex`` (``worst``, the reports' rule, or ``T``, ``F``,
    ``M``), ``mc`` (of the single-age table, default 0). The results tables come from the
    store (default ``<out_dir>/results``), the Monte Carlo on ``cluster``; the calibration
    table is ``calibration`` if given (a path or a frame), else computed at
    :data:`~demonoise.analysis.decision.THRESHOLDS` (:func:`demonoise.analysis.stored.overview_tables`).

    Raises
    ------
    ParameterError
        Unknown dataset or country, invalid V.
    """
    from demonoise.analysis.decision import THRESHOLDS
    from demonoise.analysis.stored import ResultsSpec, content_key, overview_tables
    from demonoise.core.counts import DATA_STATUS_SEP
    from demonoise.io.datasets import provenance_dict
    from demonoise.report.content.summary import source_of

    o = {"dataset": "ess-2023", "V": (1.0, 5.0), "ptables": (), "countries": None, "sex": "worst", "mc": 0, **options}
    out = Path(out_dir)
    V = tuple(sorted({float(v) for v in o["V"]}))
    spec = ResultsSpec(o["dataset"], V=V, ptables=o["ptables"], countries=o["countries"] or None, mc=o["mc"])
    tables, status = overview_tables(
        spec,
        store or out / "results",
        THRESHOLDS,
        calibration,
        out / "notebooks" / "overview-calibration.parquet",
        force=force,
        workers=workers,
        cluster=cluster,
    )
    label = status.split(DATA_STATUS_SEP)[0]
    parameters = {
        "dataset": o["dataset"],
        "V": list(V),
        "ptables": list(spec.ptables),
        **{k: str(p) for k, p in tables.items()},
        "label": label,
        "sex": o["sex"],
    }
    job = Job(
        find_notebook("overview"),
        out / "notebooks" / "overview.ipynb",
        parameters,
        name="overview",
        data_fingerprint=content_key(tables["calibration"]),  # the calibration file's content is data the run reads
        files=tuple(map(str, tables.values())),
    )
    settings = ", ".join(f"{v:g}" for v in V) + "".join(f"; p-table {Path(x).stem}" for x in o["ptables"])
    scope = "all NUTS 2 regions" if spec.countries is None else "NUTS 2 regions of " + ", ".join(spec.countries)
    return FurtherRun(
        job=job,
        title=f"Europe overview: {o['dataset']}, V = {settings}",
        subtitle=f"{scope}; {label}",
        html=out / "overview.html",
        source=source_of(provenance_dict(o["dataset"])) + "; NUTS 2021 boundaries: Eurostat GISCO",
        sections=True,
    )


def render_further(run: FurtherRun, *, pdf: bool = True, force: bool = False, cluster=None) -> doc.RenderResult:
    """Execute ``run``'s notebook (skipped when up to date, unless ``force``) and render its
    document to HTML (and PDF; else ``RenderResult.pdf_error`` says why).

    Raises
    ------
    ReportError
        The notebook failed (naming the exception, the cell and the kept
        ``<stem>.failed.ipynb``), or HTML rendering failed.
    """
    run.check(run_jobs([run.job], workers=1, force=force, progress=False, cluster=cluster)[0])
    return doc.render_document(run.document(), run.html, run.html.with_suffix(".pdf") if pdf else None)
