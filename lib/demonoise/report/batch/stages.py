"""Quality reports in batch: plan -> compute -> execute -> render -> index.

:func:`run_reports` calls the five stages in order over the whole batch; what fans out runs
on the batch's Dask cluster as self-contained tasks (bytes in, bytes out) and is written
here, atomically, as it completes. A failing country or notebook does not stop the batch:
its row says why and :attr:`BatchReport.ok` is false. The batch's kernels end with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import pairwise
from pathlib import Path

from demonoise.analysis.settings import NoiseSetting
from demonoise.core.atomic import atomic_dir, atomic_write_bytes, atomic_write_text, check_output_dir
from demonoise.core.counts import label_is_modelled
from demonoise.core.errors import DemonoiseError, ParameterError, ReportError
from demonoise.io import datasets as reg
from demonoise.report.batch.execute import Job, Options, check_defined, run_jobs, running
from demonoise.report.batch.params import ReportParams
from demonoise.report.content.theme import setting_colours
from demonoise.report.document import assemble as doc
from demonoise.report.document import exporters
from demonoise.report.document.index import IndexRow, write_index
from demonoise.report.document.templates import find_template_dir
from demonoise.runtime.fingerprint import digest, source_fingerprint
from demonoise.runtime.locate import find_dir, find_notebook

__all__ = ["SUMMARY", "CHANGE", "MAX_NOTEBOOKS", "STAGES", "Report", "Run", "BatchReport", "plan", "run_reports"]

#: The summary notebook: main points first; its later level-1 parts close the report.
SUMMARY = "summary"
#: The chapter "Change since the previous year" of a report whose dataset holds two or more years.
CHANGE = "change"
#: The stages of a batch, in order (their seconds are keys of :attr:`BatchReport.timings`).
STAGES = ("plan", "compute", "execute", "render", "index")


def _why(e: BaseException) -> str:
    return str(e) if isinstance(e, DemonoiseError) else f"{type(e).__name__}: {e}"


# ======================================================================== plan
#: Notebook executions a batch runs without ``--yes`` (the overview and each extra count one).
MAX_NOTEBOOKS = 200
#: Seconds of a whole batch per notebook execution and worker, everything included (the
#: full ess-2023 batch: 470 notebooks in 605.9 s on 2 workers with PDFs), for the estimate.
SECONDS_PER_NOTEBOOK = 2.6


@dataclass(frozen=True)
class Report:
    """One country's report."""

    dataset: str
    country: str

    def html(self, output: Path) -> Path:
        return Path(output) / "reports" / self.dataset / f"{self.country}.html"

    def build_dir(self, output: Path) -> Path:
        return Path(output) / "build" / self.dataset / self.country

    @property
    def label(self) -> str:
        return f"{self.country} ({self.dataset})"


@dataclass(frozen=True)
class Run:
    """One notebook execution of a report: the summary, the change chapter, or an indicator at one setting."""

    report: Report
    notebook: str
    setting: NoiseSetting | None = None

    def output(self, output: Path) -> Path:
        tail = f"-{self.setting.slug}" if self.setting is not None else ""
        return self.report.build_dir(output) / f"{self.notebook}{tail}.ipynb"

    @property
    def name(self) -> str:
        tail = f" {self.setting.label}" if self.setting is not None else ""
        return f"{self.report.dataset}/{self.report.country}/{self.notebook}{tail}"


@dataclass
class Plan:
    params: ReportParams
    output: Path
    notebooks: Path
    reports: list[Report]
    runs: list[Run]
    facts: dict  # dataset -> its facts (:func:`_dataset_facts`)
    removed: list[Path]


def plan(
    params: ReportParams,
    output: str | os.PathLike,
    notebooks_dir=None,
    *,
    yes: bool = True,
    workers: int = 2,
) -> Plan:
    """The reports and their notebook runs, checked before any work: the output directory,
    the batch's size (above :data:`MAX_NOTEBOOKS` notebook executions only with ``yes``),
    every notebook's parameters cell (it defines what the batch injects, :func:`_parameters`)
    and the extras' parameters; removes the files of the old per-V layout (``<CC>-V<v>.html|.pdf``).

    Raises
    ------
    OutputError
        The output directory cannot be written.
    ParameterError
        A batch too large without ``yes``, or an extra given a parameter it does not define.
    ReportError
        A notebook of the reports is missing or breaks the contract.
    """
    output = check_output_dir(Path(output))
    reports = [Report(s.dataset, c) for s in params.selections for c in s.countries]
    facts = {s.dataset: _dataset_facts(s.dataset) for s in params.selections}
    runs = []
    for r in reports:
        runs.append(Run(r, SUMMARY))
        runs += [Run(r, n, s) for n in params.indicators for s in params.settings]
        if facts[r.dataset]["change"]:
            runs.append(Run(r, CHANGE))
    n = len(runs) + len(params.extras) + (params.overview is not None)
    if n > MAX_NOTEBOOKS and not yes:  # one line with its size and a time estimate; never a prompt
        minutes = n * SECONDS_PER_NOTEBOOK / max(1, workers) / 60
        raise ParameterError(
            f"the batch is large: {len(reports)} reports, {n} notebook executions, about {minutes:.0f} minutes "
            f"on {workers} workers (more than {MAX_NOTEBOOKS} notebooks); pass --yes to run it"
        )
    one = {run.notebook: run for run in runs}  # a run of each notebook (their parameters' names are alike)
    notebooks = find_dir("notebooks", tuple(f"{n}.ipynb" for n in one), notebooks_dir)
    old = sorted(p for p in (output / "reports").glob("*/*-V*.*") if p.suffix in (".html", ".pdf"))
    state = Plan(params, output, notebooks, reports, runs, facts, old)
    for n, run in one.items():
        check_defined(notebooks / f"{n}.ipynb", _parameters(run, Computed(Path(), Path()), state))
    for name, opts in params.extras:
        check_defined(find_notebook(name), dict(opts), name)
    for p in old:
        p.unlink(missing_ok=True)
    return state


# ===================================================================== compute
@dataclass
class Computed:
    """Per report: its results and decision tables, or the error."""

    results: Path | None = None
    decision: Path | None = None
    error: str | None = None
    seconds: float = 0.0


def _tables(report: Report, params: ReportParams, store: Path, **kw) -> Computed | None:
    """One country's tables, timed (:func:`~demonoise.analysis.stored.country_tables` with ``kw``)."""
    from demonoise.analysis.stored import ResultsSpec, country_tables

    same = ("V", "ptables", "granularity", "mc", "seed", "confidence")
    spec = ResultsSpec(report.dataset, countries=(report.country,), **{k: getattr(params, k) for k in same})
    decision = {
        "settings": [s.as_parameter() for s in params.settings],
        "thresholds": params.thresholds,
        "confidence": params.confidence,
        "recommend": params.recommend.model_dump(),
    }
    t0 = time.perf_counter()
    paths = country_tables(spec, decision, store, **kw)
    return None if paths is None else Computed(*(p.resolve() for p in paths), None, time.perf_counter() - t0)


def compute_task(report: Report, params: ReportParams) -> dict:
    """One country's tables computed in a scratch store on a worker (its Monte Carlo in that
    process), returned as bytes with their place and timing: no shared disk needed."""
    with tempfile.TemporaryDirectory(prefix="dn-compute-") as tmp:
        root = Path(tmp).resolve()
        done = _tables(report, params, root, workers=1)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        where = {k: getattr(done, k).relative_to(root).as_posix() for k in ("results", "decision")}
        return {"files": files, "seconds": done.seconds, **where}


def _store_computed(out: dict, store: Path) -> Computed:
    """Write what :func:`compute_task` returned into ``store``, atomically (the decision directory whole)."""
    decision, inside = store / out["decision"], out["decision"] + "/"
    with atomic_dir(decision) as tmp:
        for rel, data in out["files"].items():
            if rel.startswith(inside):
                (tmp / rel[len(inside) :]).write_bytes(data)
            else:
                atomic_write_bytes(store / rel, data)
    return Computed((store / out["results"]).resolve(), decision.resolve(), None, out["seconds"])


def _by_size(reports: list[Report]) -> list[Report]:
    """The reports, countries with most regions first (so that the largest does not start last)."""
    sizes: Counter = Counter()
    for d in dict.fromkeys(r.dataset for r in reports):
        with contextlib.suppress(DemonoiseError):  # its countries then fail in compute, one by one
            sizes.update((d, x.country) for x in reg.load(d).regions)
    return sorted(reports, key=lambda r: -sizes[r.dataset, r.country])


def compute(state: Plan, cluster, log: Callable[[str], None]) -> dict[Report, Computed]:
    """Every country's results and decision tables: read back where stored and up to date, the
    others computed as tasks on ``cluster``, largest first; a single country (or without worker
    processes) here, its Monte Carlo blocks on the cluster (one task would hold them all)."""
    store = state.output / "results"
    done = {r: _tables(r, state.params, store, stored=True) for r in state.reports}
    todo = [r for r in _by_size(state.reports) if done[r] is None]
    here = len(todo) == 1 or not cluster.fans_out
    task = partial(_tables, store=store, workers=cluster.workers, cluster=cluster) if here else compute_task
    items, names = [(r, state.params) for r in todo], [f"{r.dataset}-{r.country}" for r in todo]
    for i, value, err in cluster.each(task, items, label="compute", names=names, count=0 if here else None):
        try:
            if err is not None:
                raise err
            done[todo[i]] = value if here else _store_computed(value, store)
        except Exception as e:  # this country's report fails; the others go on
            done[todo[i]] = Computed(error=f"results for {todo[i].label} failed: {_why(e)}")
            log(f"demonoise report: {done[todo[i]].error}")
    return done


# ===================================================================== execute
def _dataset_facts(dataset: str) -> dict:
    """Label, reference year, provenance and ``implications`` text of a dataset; ``change``: whether
    it holds two or more years (its reports have the chapter "Change since the previous year")."""
    info = next((d for d in reg.available() if d.name == dataset), None)
    return {
        "label": getattr(info, "label", "") or "",
        "year": getattr(info, "year", None),
        "provenance": reg.provenance_dict(dataset),
        "implications": getattr(info, "implications", "") or "",
        "change": len(reg.years(dataset)) >= 2,
    }


def _parameters(run: Run, done: Computed, state: Plan) -> dict:
    """What the batch injects into ``run``'s notebook (``done``: its report's tables)."""
    params, facts, report = state.params, state.facts[run.report.dataset], run.report
    base = {
        "country": report.country,
        "dataset": report.dataset,
        "settings": [s.as_parameter() for s in params.settings],
        "granularity": params.granularity,
        "confidence": list(params.confidence),
    }
    if run.notebook == CHANGE:  # computes its own tables from the dataset's years (under a second)
        return base
    base.update(
        results_path=str(done.results),
        decision_path=str(done.decision),
        mc=params.mc,
        data_label=facts["label"],
        implications=facts["implications"],
    )
    if run.setting is not None:
        return {**base, "setting": run.setting.as_parameter(), "chapter": run.setting == params.settings[0]}
    return {
        **base,
        "thresholds": list(params.thresholds),
        "recommend": params.recommend.model_dump(),
        "provenance": reg.country_provenance(facts["provenance"], report.dataset, report.country),
        "year": facts["year"],
        "seed": params.seed,
    }


def further(state: Plan, cluster, log: Callable[[str], None], *, force: bool, workers: int):
    """The Europe overview (its tables computed here, the Monte Carlo on ``cluster``) and the
    extras, each yielded as a :class:`~demonoise.report.batch.extras.FurtherRun` ready to run
    with its index line (or the ``error`` that stopped it), to run and render with the countries'."""
    from demonoise.report.batch.extras import FurtherRun, extra_run, overview_run

    params, todo = state.params, []
    if params.overview is not None:
        ov = {**params.overview.model_dump(), "V": params.V or (1.0,), "ptables": params.ptables}
        run = partial(overview_run, ov, state.output, force=force, workers=workers, cluster=cluster)
        todo.append((f"Europe overview: {ov['dataset']}", "all NUTS 2 regions", run))
    for name, opts in params.extras:
        kw = {k: list(v) if isinstance(v, tuple) else v for k, v in opts}
        todo.append((f"{name} notebook", name, partial(extra_run, name, kw, state.output / "extras")))
    for label, country, prepare in todo:  # the index line: label and country column
        log(f"demonoise report: {label}")
        try:
            yield replace(prepare(), label=label, summary={"country": country})
        except Exception as e:
            yield FurtherRun(label, error=_why(e))


def _jobs(state: Plan, computed: Mapping[Report, Computed]) -> dict:
    """The runs as Jobs where their tables are there; a chapter's later settings without its ``chapter`` cells."""
    return {
        run: Job(
            state.notebooks / f"{run.notebook}.ipynb",
            run.output(state.output),
            _parameters(run, done, state),
            name=run.name,
            files=(str(done.results), str(done.decision)),  # carried as bytes: no shared disk needed
            skip_tags=("chapter",) if run.setting not in (None, state.params.settings[0]) else (),
        )
        for run in state.runs
        if (done := computed[run.report]).error is None
    }


# ====================================================================== render
def assemble_report(report: Report, state: Plan):
    """The document of one country: cover, contents, main points, a chapter per indicator
    (a subsection per setting), then the closing parts of the summary (generic vs p-table,
    calibration, method and data)."""
    from demonoise.report.content.summary import source_of
    from demonoise.report.document.cover import cover_html

    out, facts = state.output, state.facts[report.dataset]
    summary_path = Run(report, SUMMARY).output(out)
    metrics = doc.read_metrics(summary_path)
    parts = [doc.Section(p, landscape=_wide_part(p)) for p in doc.split_sections(doc.load_notebook(summary_path)[0])]
    colours = setting_colours([s.label for s in state.params.settings])
    chapters = [
        doc.Chapter(
            doc.load_notebook(state.notebooks / f"{n}.ipynb")[0].metadata.get("title") or n,  # the chapter's title
            n.replace("_", "-"),
            tuple((s.label, colours[s.label], Run(report, n, s).output(out)) for s in state.params.settings),
        )
        for n in state.params.indicators
    ]
    title = f"{metrics.get('country_name') or report.country} ({report.country}): noise and demographic indicators"
    cover = cover_html(
        title,
        publisher=state.params.publisher,
        data_status=facts["label"],
        provenance=facts["provenance"],
        settings=[s.label for s in state.params.settings],
        dataset=report.dataset,
        index_href="../../index.html",
        data_zip=doc.data_zip_name(report.html(out)),
    )
    change = [doc.Section(Run(report, CHANGE).output(out), anchor="change")] if facts["change"] else []
    wide = [p for p in parts[1:] if p.landscape]  # run on after the main points' landscape pages
    nb = doc.assemble(
        [parts[0], *wide, *chapters, *change, *(p for p in parts[1:] if not p.landscape)],
        title=title,
        cover=cover,
        source=source_of(facts["provenance"]),
        run_on=True,
    )
    return nb, metrics


#: Parts of the summary printed on landscape pages (their tables have a column per setting or family).
LANDSCAPE = ("Main points", "Calibration")


def _wide_part(part) -> bool:
    first = next((c for c in part.cells if c.get("cell_type") == "markdown"), {})
    return first.get("source", "").lstrip().removeprefix("# ").split("\n")[0].strip() in LANDSCAPE


def _run_errors(report: Report, state: Plan, executed: Mapping) -> str | None:
    """Why ``report``'s runs cannot be assembled (a notebook failed, or a section does not show
    the dataset, country and setting its run asked for: :func:`check_shown`), or ``None``."""
    every, errs = [s.label for s in state.params.settings], []
    asked = {"dataset": report.dataset, "country": report.country}
    for run in (r for r in state.runs if r.report == report):
        res, one = executed[run], None if run.setting is None else run.setting.label
        try:
            if not res.ok:
                where = f"; executed notebook kept at {res.failed_notebook}" if res.failed_notebook else ""
                raise DemonoiseError(f"{res.error}{where}")
            check_shown(run.output(state.output), **asked, setting=one, settings=every if one is None else ())
        except DemonoiseError as e:
            errs.append(f"{run.name}: {e}")
    return "\n".join(errs) or None


def check_shown(
    path: str | os.PathLike, *, dataset: str, country: str, setting: str | None = None, settings=()
) -> None:
    """Compare what the executed notebook at ``path`` recorded it shows
    (:func:`~demonoise.report.content.notebook.record_shown`) with what its run asked for:
    exactly ``dataset``, ``country`` and the ``setting`` label (``"V = 1"``, ``"p-table v01"``),
    and rows for each of the ``settings`` labels (the summary's).

    Raises
    ------
    ReportError
        The record is missing or differs, naming the notebook.
    """
    from demonoise.report.content.notebook import SHOWN

    got = doc.read_metrics(path).get(SHOWN)
    if not isinstance(got, Mapping):
        raise ReportError(
            f"{path}: the notebook did not record what it shows (summary.load_results records it); "
            "not rendered, so that no section can show other data than asked"
        )
    asked = {"dataset": [dataset], "country": [country], **({} if setting is None else {"setting": setting})}
    words = lambda v: v if isinstance(v, str) else ", ".join(v or ["none"])  # noqa: E731
    wrong = [f"{k} {words(got.get(k))} instead of {words(v)}" for k, v in asked.items() if got.get(k) != v]
    if absent := [s for s in settings if s not in (got.get("settings") or [])]:
        wrong.append(f"no rows for {', '.join(absent)}")
    if wrong:
        raise ReportError(f"{path} shows {'; '.join(wrong)}: the section is not what the batch asked for")


def _start(r: doc.RenderResult, nb, build: Path, html: Path, pdf: Path | None) -> tuple | None:
    """Write the assembled ``nb`` under ``build``; its render task, or ``None`` (``r`` then up to
    date) when its stamp says the outputs come from the same document, library and template."""
    from demonoise.analysis.stored import content_key

    nb_path, stamp = doc.write_notebook(nb, build / "report.ipynb"), build / "report.json"
    key = digest([content_key(nb_path), source_fingerprint(), content_key(find_template_dir()), pdf is not None])
    old = {}
    with contextlib.suppress(OSError, ValueError):
        old = json.loads(stamp.read_text(encoding="utf-8"))
    if old.get("key") != key or not all(p.is_file() for p in filter(None, (html, pdf))):
        return nb_path, html, pdf, key, stamp
    r.status, r.html, r.pdf, r.pages = "skipped", html, pdf, old.get("pages", 0)
    r.files = tuple(Path(p) for p in old.get("files", []))
    return None


def _document(owner, state: Plan, executed: Mapping, computed: Mapping) -> tuple:
    """The document of ``owner`` (a :class:`Report` or a further notebook) assembled here, its
    outcome so far, its build folder and HTML; raises why it cannot be assembled."""
    out = state.output
    if not isinstance(owner, Report):
        owner.check(executed.get(owner))
        return owner.document(), doc.RenderResult(), out / "build" / "further" / owner.html.stem, owner.html
    if failed := computed[owner].error or _run_errors(owner, state, executed):
        raise ReportError(failed)
    try:
        nb, metrics = assemble_report(owner, state)
    except DemonoiseError as e:
        raise ReportError(f"assembly failed: {e}") from e
    seconds = sum(executed[x].seconds for x in state.runs if x.report == owner)  # read by the benchmarks
    return nb, doc.RenderResult(metrics=metrics, notebook_seconds=seconds), owner.build_dir(out), owner.html(out)


def render(state: Plan, computed, executed: Mapping, extra: Sequence, cluster, pdf_reason) -> dict:
    """Every document -- the overview's and extras' first, then each country's -- assembled here
    and rendered as a task on ``cluster`` as soon as it is (the workers render while the next is
    assembled); what comes back is written here, atomically, and stamped (:func:`_start`); returns the outcomes."""
    outcomes: dict = {}
    tasks, names = [], []  # filled as the documents are assembled

    def documents():
        for owner in [*extra, *state.reports]:
            try:
                nb, r, build, html = _document(owner, state, executed, computed)
            except Exception as e:  # one document's failure is recorded; the others go on
                outcomes[owner] = doc.RenderResult(pdf_error=pdf_reason, status="failed", error=_why(e))
                continue
            outcomes[owner], r.pdf_error = r, pdf_reason
            if task := _start(r, nb, build, html, None if pdf_reason else html.with_suffix(".pdf")):
                tasks.append((owner, task))
                names.append(owner.label)
                yield task[0].read_bytes(), html.stem, pdf_reason is None

    count = len(state.reports) + len(extra)
    for i, value, err in cluster.each(doc.render_bytes, documents(), label="render", names=names, count=count):
        owner, (_, html, pdf, key, stamp) = tasks[i]
        r = outcomes[owner]
        try:
            if err is not None:
                raise err
            res = doc.write_rendered(value, html, pdf)
            key = key if res.pdf is not None or pdf_reason is not None else None  # else the next run tries the PDF
            atomic_write_text(stamp, json.dumps({"key": key, "pages": res.pages, "files": list(map(str, res.files))}))
            res.metrics, res.notebook_seconds = r.metrics, r.notebook_seconds
            outcomes[owner] = replace(res, pdf_error=res.pdf_error or pdf_reason)
        except Exception as e:
            r.status, r.error = "failed", f"rendering failed: {_why(e)}"
    return outcomes


# ======================================================================= index
@dataclass
class BatchReport:
    """Result of :func:`run_reports`: the countries' outcomes, the index, the stage timings,
    the notes and the index rows of the overview and the extras (``further``)."""

    outcomes: dict
    index: Path
    timings: dict
    notes: list[str] = field(default_factory=list)
    further: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.status != "failed" for o in [*self.outcomes.values(), *self.further])

    @property
    def failed(self) -> list:
        return [(rep, o) for rep, o in self.outcomes.items() if o.status == "failed"]

    def summary(self) -> str:
        n = {s: sum(o.status == s for o in self.outcomes.values()) for s in ("ok", "skipped", "failed")}
        pdfs = sum(o.pdf is not None for o in self.outcomes.values())
        return (
            f"{len(self.outcomes)} reports: {n['ok']} rendered, {n['skipped']} up to date, {n['failed']} failed; "
            f"{pdfs} PDF{'s' if pdfs != 1 else ''} ({self.timings.get('total', 0):.1f} s)"
        )


#: The CSV files of a report the index links by name (the decision module's tables).
INDEX_CSV = {"decision": "decision", "calibration": "calibration", "error_bands": "error bands"}


def _row(name: str, o: doc.RenderResult, summary, files=()):
    """The index row of a rendered (or failed) document."""
    links = {label: f for stem, label in INDEX_CSV.items() for f in files if f.stem == stem}
    return IndexRow(name, o.status, o.html, o.pdf, o.pdf_error, o.error, summary, files, links)


def index(state: Plan, rendered: Mapping[Report, doc.RenderResult], further: list, *, pdf_reason: str | None) -> Path:
    """``<output>/index.html``: one row per country, then the ``further`` rows (overview, extras)."""
    rows = [_row(r.label, o, (o.metrics.get("index") or {}).get("columns") or {}, o.files) for r, o in rendered.items()]
    labels = {d: f["label"] for d, f in state.facts.items() if f["label"]}
    settings = ", ".join(s.label for s in state.params.settings)
    intro = (
        "Quality reports: how noise-based disclosure control (the Cell Key Method: its generic model, integer noise "
        "of variance V on every published count, and real p-tables) degrades ASFR, TFR, ASMR and life expectancy, "
        f"against their Poisson uncertainty; one report per country, the settings {settings} side by side."
    )
    if pdf_reason:
        intro += f" No PDF: {pdf_reason.removeprefix('no PDF: ')}."
    return write_index(
        rows + list(further),
        state.output / "index.html",
        title=state.params.title,
        intro=intro,
        data_status=labels,
        modelled=any(map(label_is_modelled, labels.values())),
    )


# ========================================================================= run
def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_reports(
    params: ReportParams,
    output: str | os.PathLike = "output",
    *,
    force: bool = False,
    workers: int = 2,
    pdf: bool | None = None,
    progress: bool | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    log: Callable[[str], None] | None = _stderr,
    yes: bool = True,
    cluster=None,
) -> BatchReport:
    """Run a report batch and write ``<output>/index.html``.

    Its tasks run on ``cluster``; without one, on the Dask scheduler of ``params.scheduler``
    if set, else on a local cluster of ``workers`` processes. ``yes=False`` refuses a batch
    above :data:`MAX_NOTEBOOKS` notebook executions.

    Raises
    ------
    ParameterError, ReportError
        Only for problems that stop every report (:func:`plan`, invalid workers); a failing
        country or notebook is recorded in its outcome.
    ClusterError
        The cluster cannot be used, or its scheduler was lost mid-run (``ClusterLost``).
    """
    if workers < 1:
        raise ParameterError(f"workers must be >= 1, got {workers}")
    laps = [time.perf_counter()]  # then the end of each stage
    asked = params.pdf if pdf is None else pdf
    pdf_reason = exporters.pdf_engine_problem() if asked else "no PDF: not requested (--no-pdf or pdf: false)"
    log = log or (lambda msg: None)
    with running(cluster, workers, params.scheduler) as cluster:
        state = plan(params, Path(output), notebooks_dir, yes=yes, workers=workers)
        for note in params.notices:
            log(f"demonoise report: note: {note}")
        settings = ", ".join(s.label for s in params.settings)
        log(
            f"demonoise report: {len(state.reports)} reports, {len(state.runs)} notebooks; settings {settings}; "
            f"on {cluster.describe()}"
        )
        laps.append(time.perf_counter())
        computed = compute(state, cluster, log)
        laps.append(time.perf_counter())
        extra = list(further(state, cluster, log, force=force, workers=workers))
        opts = Options()
        jobs = {**{f: f.job for f in extra if f.job is not None}, **_jobs(state, computed)}
        executed = run_jobs(jobs, cluster=cluster, options=opts, force=force, progress=progress)
        laps.append(time.perf_counter())
        outcomes = render(state, computed, executed, extra, cluster, pdf_reason)
        rendered = {r: outcomes[r] for r in state.reports}
        laps.append(time.perf_counter())
        rows = [_row(f.label, outcomes[f], f.summary) for f in extra]
        path = index(state, rendered, rows, pdf_reason=pdf_reason)
        laps.append(time.perf_counter())
    times = {
        **dict(zip(STAGES, (b - a for a, b in pairwise(laps)), strict=True)),
        "total": laps[-1] - laps[0],
        "compute_work": sum(c.seconds for c in computed.values()),
        "notebooks": sum(r.seconds for r in executed.values()),
        "html": sum(o.html_seconds for o in rendered.values()),
        "pdf": sum(o.pdf_seconds for o in rendered.values()),
    }
    removed = [f"removed old-layout file {p}" for p in state.removed]
    return BatchReport(rendered, path, times, [*params.notices, *filter(None, (opts.note, pdf_reason)), *removed], rows)
