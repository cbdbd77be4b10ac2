"""Quality reports in batch: a params file -> the grid -> results -> notebooks -> reports -> index.

What :func:`run_reports` does, for a :class:`ReportParams` (read from YAML by
:func:`load_params`):

1. **grid** -- :func:`expand`: one :class:`ReportSpec` per (dataset, country, V); each
   report has a cover and one section per indicator (ASFR, TFR, ASMR, life expectancy).
2. **results** -- one :class:`~demonoise.report.store.ResultsSpec` per (dataset, country)
   holding *all* the V's of the params, computed once by the library (Monte Carlo
   included) and stored under ``<output>/results/``; an unchanged spec, library and
   dataset is read back, not recomputed.
3. **notebooks** -- the cover and indicator notebooks (``notebooks/*.ipynb``) are executed
   by papermill (:func:`~demonoise.report.run.run_jobs`: a pool of kernels reused between
   notebooks, failure isolation, atomic outputs, up-to-date skipping) into
   ``<output>/build/<dataset>/<country>-V<V>/``. Notebooks only *read* the results table.
4. **reports** -- per (country, V): cover + sections -> one offline HTML file and a PDF,
   ``<output>/reports/<dataset>/<country>-V<V>.html|.pdf``. The formulas are typeset once
   for the whole batch (:mod:`.mathsvg`: MathJax in headless Chromium) and written into
   every page as static SVG; PDFs are printed by one kept-open headless Chromium per
   rendering thread (:class:`~.chromium.Browser`; the one-shot command line is the
   fallback). A report whose notebooks and template did not change is not rendered
   again. ``workers`` threads render (Chromium runs as separate processes, so printing
   one PDF overlaps with rendering the next HTML).
5. **overview and extras** (optional) -- the Europe overview
   (:func:`~demonoise.report.overview.render_overview`: every NUTS 2 region of a dataset at
   the params' V's, map, 5-year vs single-age publication, calibration) and extra notebooks
   (``teaching``, ``whatif``: :func:`~demonoise.report.extras.render_notebook`).
6. **index** -- ``<output>/index.html``: one row per (country, V) linking both files, with
   the worst region, e0 and TFR noise uncertainty and admixture (read from the metrics the
   notebooks published), the reason when there is no PDF, and the error of a failed run;
   then the overview and the extras.

A failing country or notebook does not stop the batch: its report is marked failed in
the index and :attr:`BatchReport.ok` is false (the CLI then exits with status 1).
Without Chromium the reports are written as HTML only and the index says why.

Params file (YAML)::

    title: demonoise showcase
    datasets:                 # dataset -> list of countries, or "all"
      ess-2023: [FI, FR, LU, MT]
      be-2023: [BE]
    V: [1, 5]                 # noise variances (> 0)
    indicators: [asfr, tfr, asmr, life_expectancy]   # optional, default all four
    granularity: single       # single | 5y | 5y-infant
    noise: generic            # the generic model (integer noise of variance V)
    mc: 2000                  # Monte Carlo replicates for e and TFR (0: none)
    seed: 20230101
    pdf: true
    overview: true            # or {dataset: ess-2023, mc: 0}: the Europe overview (all NUTS 2 regions)
    extras: [teaching]        # extra notebooks: teaching, whatif (or {whatif: {region: BE34, scale: 4}})
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import DemonoiseError, ParameterError, ReportError

__all__ = [
    "INDICATORS",
    "INDICATOR_TITLES",
    "GRANULARITIES",
    "NOISE_MODELS",
    "Selection",
    "ReportParams",
    "ReportSpec",
    "ReportOutcome",
    "BatchReport",
    "load_params",
    "parse_params",
    "expand",
    "find_notebooks_dir",
    "provenance_dict",
    "run_reports",
    "INDEX_COLUMNS",
]

#: Indicator sections, in report order, with their notebook names.
INDICATORS = ("asfr", "tfr", "asmr", "life_expectancy")
INDICATOR_TITLES = {
    "asfr": "Age-specific fertility rates",
    "tfr": "Total fertility rate",
    "asmr": "Age-specific mortality rates",
    "life_expectancy": "Life expectancy",
}
_ALIASES = {"e": "life_expectancy", "ex": "life_expectancy", "e0": "life_expectancy", "le": "life_expectancy"}
GRANULARITIES = ("single", "5y", "5y-infant")
NOISE_MODELS = ("generic",)
_KEYS = {"title", "datasets", "V", "indicators", "granularity", "noise", "mc", "seed", "pdf", "overview", "extras"}

#: Extra notebooks a batch can render next to the reports.
EXTRAS = ("teaching", "whatif")
NOTEBOOKS_ENV = "DEMONOISE_NOTEBOOKS"

#: Summary columns of the index, in order.
INDEX_COLUMNS = (
    "regions",
    "worst region (e0)",
    "e0 noise sd, worst",
    "e0 rel. noise sd, worst",
    "e0 A, worst",
    "e0 A, median",
    "TFR rel. noise sd, worst",
    "TFR A, worst",
)


# ====================================================================== params
@dataclass(frozen=True)
class Selection:
    """Countries of one dataset."""

    dataset: str
    countries: tuple[str, ...]


@dataclass(frozen=True)
class ReportParams:
    """Validated parameters of a report batch (see the module docstring for the YAML).

    Attributes
    ----------
    selections : tuple of Selection
        Datasets and their countries, in the file's order.
    V : tuple of float
        Noise variances of the generic model (each > 0).
    indicators : tuple of str
        Sections, in report order (subset of :data:`INDICATORS`).
    granularity : {"single", "5y", "5y-infant"}
    noise : {"generic"}
    mc : int
        Monte Carlo replicates for e and TFR (0: none).
    seed : int
    title : str
        Title of the index page.
    pdf : bool
        Print PDFs (where Chromium is available).
    source : str
        Where the params came from (for messages; not part of equality).
    """

    selections: tuple[Selection, ...]
    V: tuple[float, ...]
    indicators: tuple[str, ...] = INDICATORS
    granularity: str = "single"
    noise: str = "generic"
    mc: int = 2000
    seed: int = 20230101
    title: str = "demonoise quality reports"
    pdf: bool = True
    source: str = field(default="", compare=False)
    overview: tuple = ()  # ((key, value), ...) of the overview's params; () = no overview
    extras: tuple = ()  # ((name, ((key, value), ...)), ...)

    @property
    def n_reports(self) -> int:
        return sum(len(s.countries) for s in self.selections) * len(self.V)


def _where(source: str) -> str:
    return f"{source}: " if source else ""


def _available_countries(dataset: str) -> tuple[str, ...]:
    """Countries of a dataset without loading embedded counts (their metadata lists them)."""
    from demonoise.io import datasets as reg

    if dataset in reg.embedded_names():
        return tuple(reg.metadata(dataset)["countries"])
    return tuple(reg.load(dataset).countries)  # a cached fetch: unknown names raise ParameterError


def _replicates(value, what: str) -> int:
    """Monte Carlo replicates: 0 (none) or an integer >= 2."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value == 1:
        raise ParameterError(f"{what} must be 0 or an integer >= 2, got {value!r}")
    return value


def _as_list(value, what: str, where: str) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    raise ParameterError(f"{where}{what} must be a list, got {type(value).__name__}")


def parse_params(data: Mapping[str, Any], *, source: str = "") -> ReportParams:
    """Validate a parsed params mapping into :class:`ReportParams`.

    Raises
    ------
    ParameterError
        Unknown keys, no datasets, unknown dataset or country, a V that is not a finite
        number > 0, unknown indicator, granularity or noise model, negative ``mc`` --
        each message names the file and the offending value.
    """
    from demonoise.io import datasets as reg

    w = _where(source)
    if not isinstance(data, Mapping):
        raise ParameterError(f"{w}the params file must be a mapping of keys to values, got {type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ParameterError(f"{w}unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(sorted(_KEYS))}")

    # datasets and countries
    ds = data.get("datasets")
    if not ds or not isinstance(ds, Mapping):
        raise ParameterError(
            f"{w}'datasets' must map each dataset to its countries, e.g. {{ess-2023: [FI, LU]}} or {{ess-2023: all}}"
        )
    names = [d.name for d in reg.available()]
    selections = []
    for name, countries in ds.items():
        name = str(name)
        if name not in names:
            hint = (
                " -- real Eurostat data: run `demonoise fetch --year YEAR` first"
                if name.startswith("eurostat-")
                else ""
            )
            raise ParameterError(f"{w}unknown dataset {name!r}; available: {', '.join(names) or 'none'}{hint}")
        have = _available_countries(name)
        if countries in ("all", "ALL", None):
            chosen = list(have)
        else:
            chosen = [str(c).strip().upper() for c in _as_list(countries, f"countries of {name}", w)]
            bad = [c for c in chosen if c not in have]
            if bad:
                raise ParameterError(
                    f"{w}unknown countr{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)} for dataset {name!r}; "
                    f"it has {', '.join(have)}"
                )
            dup = sorted({c for c in chosen if chosen.count(c) > 1})
            if dup:
                raise ParameterError(
                    f"{w}countr{'y' if len(dup) == 1 else 'ies'} {', '.join(dup)} listed twice for {name!r}"
                )
        if not chosen:
            raise ParameterError(f"{w}no countries given for dataset {name!r}")
        selections.append(Selection(name, tuple(chosen)))

    # V
    if "V" not in data:
        raise ParameterError(f"{w}'V' is required: the noise variance(s), e.g. V: [1, 5]")
    Vs = []
    for v in _as_list(data["V"], "V", w):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"{w}V must be numbers, got {v!r}") from None
        if isinstance(v, bool) or not math.isfinite(x) or x <= 0:
            raise ParameterError(f"{w}V is a variance and must be a finite number > 0, got {v!r}")
        Vs.append(x)
    if not Vs:
        raise ParameterError(f"{w}V is empty: give at least one noise variance")
    if len(set(Vs)) != len(Vs):
        raise ParameterError(f"{w}V lists a value twice: {Vs}")

    # indicators
    inds = []
    for i in _as_list(data.get("indicators", list(INDICATORS)), "indicators", w):
        key = _ALIASES.get(str(i).strip().lower(), str(i).strip().lower())
        if key not in INDICATORS:
            raise ParameterError(f"{w}unknown indicator {i!r}; choose from {', '.join(INDICATORS)}")
        if key not in inds:
            inds.append(key)
    if not inds:
        raise ParameterError(f"{w}no indicators given")
    inds = [i for i in INDICATORS if i in inds]  # report order

    granularity = str(data.get("granularity", "single"))
    if granularity not in GRANULARITIES:
        raise ParameterError(f"{w}unknown granularity {granularity!r}; choose from {', '.join(GRANULARITIES)}")
    noise = str(data.get("noise", "generic"))
    if noise not in NOISE_MODELS:
        raise ParameterError(f"{w}unknown noise model {noise!r}; the reports support {', '.join(NOISE_MODELS)}")
    mc = _replicates(data.get("mc", 2000), f"{w}mc (Monte Carlo replicates)")
    seed = data.get("seed", 20230101)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"{w}seed must be a non-negative integer, got {seed!r}")
    pdf = data.get("pdf", True)
    if not isinstance(pdf, bool):
        raise ParameterError(f"{w}pdf must be true or false, got {pdf!r}")
    title = str(data.get("title", "demonoise quality reports"))

    # the Europe overview and extra notebooks
    ov = data.get("overview", False)
    if ov is True:
        ov = {}
    if ov is False or ov is None:
        overview: tuple = ()
    elif isinstance(ov, Mapping):
        bad = sorted(set(ov) - {"dataset", "mc", "countries", "sex"})
        if bad:
            raise ParameterError(
                f"{w}overview: unknown key(s) {', '.join(map(str, bad))}; allowed: dataset, mc, countries, sex"
            )
        od = str(ov.get("dataset", "ess-2023"))
        if od not in names:
            raise ParameterError(f"{w}overview: unknown dataset {od!r}; available: {', '.join(names)}")
        omc = _replicates(ov.get("mc", 0), f"{w}overview: mc")
        overview = tuple(
            sorted({**{k: v for k, v in ov.items() if k != "countries"}, "dataset": od, "mc": int(omc)}.items())
        )
        if ov.get("countries") is not None:
            overview += (
                ("countries", tuple(str(c).upper() for c in _as_list(ov["countries"], "overview countries", w))),
            )
            known = _available_countries(od)
            unknown = [c for c in dict(overview)["countries"] if c not in known]
            if unknown:
                raise ParameterError(f"{w}overview: unknown country {', '.join(unknown)} for dataset {od!r}")
        # the overview's own checks (sex, ...) now, not after every report has been rendered
        from demonoise.report.overview import OverviewParams

        try:
            OverviewParams.of({**dict(overview), "V": tuple(Vs)})
        except ParameterError as e:
            raise ParameterError(f"{w}overview: {e}") from None
    else:
        raise ParameterError(f"{w}overview must be true, false or a mapping (dataset, mc, countries, sex), got {ov!r}")
    ex = data.get("extras") or []
    items = list(ex.items()) if isinstance(ex, Mapping) else [(e, {}) for e in _as_list(ex, "extras", w)]
    extras = []
    for name, opts in items:
        name = str(name)
        if name not in EXTRAS:
            raise ParameterError(f"{w}unknown extra notebook {name!r}; choose from {', '.join(EXTRAS)}")
        if opts is None:
            opts = {}
        if not isinstance(opts, Mapping):
            raise ParameterError(f"{w}extras: the parameters of {name} must be a mapping, got {opts!r}")
        extras.append(
            (name, tuple(sorted((str(k), v if not isinstance(v, list) else tuple(v)) for k, v in opts.items())))
        )
    return ReportParams(
        tuple(selections),
        tuple(Vs),
        tuple(inds),
        granularity,
        noise,
        int(mc),
        int(seed),
        title,
        pdf,
        source,
        overview,
        tuple(extras),
    )


def load_params(path: str | os.PathLike) -> ReportParams:
    """Read and validate a YAML params file.

    Raises
    ------
    ParameterError
        The file is missing or not valid YAML (with the line), or a value is invalid.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ParameterError(f"cannot read params file {path}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ParameterError(f"{path}: not valid YAML{where}: {getattr(e, 'problem', None) or e}") from None
    if data is None:
        raise ParameterError(f"{path}: the params file is empty")
    return parse_params(data, source=str(path))


# ======================================================================== grid
def _vtag(V: float) -> str:
    return f"V{V:g}"


@dataclass(frozen=True)
class ReportSpec:
    """One quality report: a country of a dataset at one noise variance."""

    dataset: str
    country: str
    V: float

    @property
    def stem(self) -> str:
        return f"{self.country}-{_vtag(self.V)}"

    @property
    def label(self) -> str:
        return f"{self.country}, V = {self.V:g} ({self.dataset})"

    def html(self, output: Path) -> Path:
        return Path(output) / "reports" / self.dataset / f"{self.stem}.html"

    def pdf(self, output: Path) -> Path:
        return Path(output) / "reports" / self.dataset / f"{self.stem}.pdf"

    def build_dir(self, output: Path) -> Path:
        return Path(output) / "build" / self.dataset / self.stem


def expand(params: ReportParams) -> list[ReportSpec]:
    """The grid: one report per (dataset, country, V), in the params' order."""
    return [ReportSpec(s.dataset, c, v) for s in params.selections for c in s.countries for v in params.V]


# =================================================================== locations
def find_notebooks_dir(notebooks_dir: str | os.PathLike | None = None) -> Path:
    """The directory of the report notebooks (``cover.ipynb``, ``asfr.ipynb``, ...).

    Order: the argument, ``$DEMONOISE_NOTEBOOKS``, ``<repository>/notebooks`` (a
    checkout or editable install), ``<sys.prefix>/share/demonoise/notebooks`` (a wheel
    install). The first directory holding ``cover.ipynb`` wins.

    Raises
    ------
    ReportError
        None found (listing the places tried).
    """
    cands = []
    if notebooks_dir is not None:
        cands.append(("argument", Path(notebooks_dir)))
    if os.environ.get(NOTEBOOKS_ENV):
        cands.append((f"${NOTEBOOKS_ENV}", Path(os.environ[NOTEBOOKS_ENV])))
    pkg = Path(__file__).resolve().parents[1]
    cands.append(("repository checkout", pkg.parents[1] / "notebooks"))
    cands.append(("installed data files", Path(sys.prefix) / "share" / "demonoise" / "notebooks"))
    tried = []
    for origin, d in cands:
        if (d / "cover.ipynb").is_file():
            return d.resolve()
        tried.append(f"  {origin}: {d}")
        if origin == "argument":
            break
    raise ReportError(
        "report notebooks not found (no cover.ipynb); tried:\n" + "\n".join(tried) + f"\nSet {NOTEBOOKS_ENV}."
    )


def provenance_dict(dataset: str) -> dict:
    """Per table of ``dataset``: status, Eurostat dataset codes, extraction date, source
    and note (JSON-serialisable; passed to the cover notebook). Embedded datasets are
    described from their metadata without loading the counts."""
    from demonoise.io import datasets as reg

    if dataset in reg.embedded_names():
        meta = reg.metadata(dataset)
        out = {}
        for table, p in meta["provenance"].items():
            if p:
                out[table] = {
                    "status": p.get("status", ""),
                    "datasets": list(p.get("datasets", [])),
                    "extracted": p.get("extracted", "unknown"),
                    "source": p.get("source", "Eurostat"),
                    "note": p.get("note", ""),
                }
        return out
    prov = reg.load(dataset).provenance
    return {
        name: {
            "status": t.status,
            "datasets": list(t.datasets),
            "extracted": t.extracted,
            "source": t.source,
            "note": t.note,
        }
        for name, t in prov.tables.items()
    }


def _dataset_label(dataset: str) -> tuple[str, int | None]:
    from demonoise.io import datasets as reg

    for d in reg.available():
        if d.name == dataset:
            return d.label, d.year
    return "", None


def _template_fingerprint() -> str:
    from demonoise.report.templates import TEMPLATE_NAME, find_template_dir

    base = find_template_dir() / TEMPLATE_NAME
    h = hashlib.sha256()
    for p in sorted(base.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(base).as_posix().encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


# ===================================================================== outcome
@dataclass
class ReportOutcome:
    """What happened to one report."""

    spec: ReportSpec
    status: str = "ok"  # ok | skipped (up to date) | failed
    html: Path | None = None
    pdf: Path | None = None
    pdf_error: str | None = None
    error: str | None = None
    metrics: dict = field(default_factory=dict)
    html_seconds: float = 0.0
    pdf_seconds: float = 0.0
    notebook_seconds: float = 0.0
    html_bytes: int = 0


@dataclass
class BatchReport:
    """Result of :func:`run_reports`."""

    params: ReportParams
    outcomes: list[ReportOutcome]
    index: Path
    timings: dict
    notes: list[str] = field(default_factory=list)
    further: list = field(default_factory=list)  # index rows of the overview and the extras

    @property
    def ok(self) -> bool:
        return all(o.status != "failed" for o in self.outcomes) and all(r.status != "failed" for r in self.further)

    @property
    def failed(self) -> list[ReportOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> str:
        n = {s: sum(o.status == s for o in self.outcomes) for s in ("ok", "skipped", "failed")}
        pdfs = sum(o.pdf is not None for o in self.outcomes)
        return (
            f"{len(self.outcomes)} reports: {n['ok']} rendered, {n['skipped']} up to date, {n['failed']} failed; "
            f"{pdfs} PDF{'s' if pdfs != 1 else ''} ({self.timings.get('total', 0):.1f} s)"
        )


def _index_summary(spec: ReportSpec, m: Mapping[str, Any]) -> dict:
    from demonoise.report.summary import fmt_num, fmt_pct

    def pct(k):
        v = m.get(k)
        return fmt_pct(v) if isinstance(v, (int, float)) else None

    worst = m.get("e0_worst_region")
    pop = m.get("e0_worst_region_population")
    return {
        "dataset": spec.dataset,
        "country": spec.country,
        "V": f"{spec.V:g}",
        "regions": m.get("regions"),
        "worst region (e0)": f"{worst} ({fmt_num(pop, 3)} people)"
        if worst and isinstance(pop, (int, float))
        else worst,
        "e0 noise sd, worst": f"{fmt_num(m['e0_sd_noise_worst'], 2)} y"
        if isinstance(m.get("e0_sd_noise_worst"), (int, float))
        else None,
        "e0 rel. noise sd, worst": pct("e0_rel_noise_worst"),
        "e0 A, worst": pct("e0_admixture_worst"),
        "e0 A, median": pct("e0_admixture_median"),
        "TFR rel. noise sd, worst": pct("tfr_rel_noise_worst"),
        "TFR A, worst": pct("tfr_admixture_worst"),
    }


# ======================================================================== run
def _say(log, msg: str) -> None:
    if log:
        log(msg)


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
    chromium: str | os.PathLike | None = None,
    log: Callable[[str], None] | None = _stderr,
) -> BatchReport:
    """Run a report batch (see the module docstring) and write ``<output>/index.html``.

    Parameters
    ----------
    params : ReportParams
    output : path-like
        Output directory (``index.html``, ``reports/``, ``build/``, ``results/``).
    force : bool
        Execute every notebook and render every report again, even if up to date.
        (Results tables are keyed by their spec, the library and the data, and are
        recomputed only when one of these changes.)
    workers : int
        Kernels executing notebooks in parallel, processes of the Monte Carlo, and
        threads rendering reports.
    pdf : bool, optional
        Override ``params.pdf`` (``False``: HTML only).
    progress : bool, optional
        Progress bars (default: on a terminal).
    notebooks_dir : path-like, optional
        Where the report notebooks are (default :func:`find_notebooks_dir`).
    chromium : path-like, optional
        Chromium executable (default: found on ``PATH``).
    log : callable, optional
        Receives one line per stage (default: stderr); ``None`` is silent.

    Returns
    -------
    BatchReport
        ``ok`` is false if any report failed.

    Raises
    ------
    ParameterError, ReportError
        Only for problems that stop every report (no notebooks, invalid workers, no
        template); a failing country or notebook is recorded in its outcome instead.
    """
    from tqdm import tqdm

    from demonoise.report.chromium import Browser, ChromiumNotFoundError, find_chromium, print_pdf
    from demonoise.report.index import IndexRow, write_index
    from demonoise.report.mathsvg import MathCache
    from demonoise.report.render import Section, read_metrics, render_report
    from demonoise.report.run import Job, library_fingerprint, output_key, run_jobs
    from demonoise.report.store import ResultsSpec, results

    if workers < 1:
        raise ParameterError(f"workers must be >= 1, got {workers}")
    t_start = time.perf_counter()
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    nbdir = find_notebooks_dir(notebooks_dir)
    names = ["cover", *params.indicators]
    missing = [n for n in names if not (nbdir / f"{n}.ipynb").is_file()]
    if missing:
        raise ReportError(f"report notebooks missing in {nbdir}: {', '.join(n + '.ipynb' for n in missing)}")
    want_pdf = params.pdf if pdf is None else bool(pdf)
    notes: list[str] = []
    pdf_reason: str | None = None
    if not want_pdf:
        pdf_reason = "no PDF: not requested (--no-pdf or pdf: false)"
    else:
        try:
            chromium = find_chromium(chromium)
        except ChromiumNotFoundError as e:
            pdf_reason = str(e)
            notes.append(pdf_reason)
            _say(log, f"demonoise report: {pdf_reason}; writing HTML only")
    specs = expand(params)
    outcomes = {s: ReportOutcome(s) for s in specs}
    timings: dict[str, float] = {}
    show = progress if progress is not None else None

    # ------------------------------------------------------------ 1. results
    t0 = time.perf_counter()
    results_of: dict[tuple[str, str], tuple[Path, str]] = {}
    pairs = [(s.dataset, c) for s in params.selections for c in s.countries]
    _say(
        log,
        f"demonoise report: {len(specs)} reports ({len(pairs)} countries x {len(params.V)} V); results in {output / 'results'}",
    )
    bar = tqdm(pairs, desc="results", unit="country", disable=(not show) if show is not None else None, file=sys.stderr)
    for dataset, country in bar:
        bar.set_postfix_str(f"{dataset} {country}", refresh=True)
        spec = ResultsSpec(
            dataset, V=params.V, granularity=params.granularity, countries=(country,), mc=params.mc, seed=params.seed
        )
        try:
            _, path = results(spec, output / "results", workers=workers)
            results_of[(dataset, country)] = (path.resolve(), spec.key())
        except Exception as e:  # one country's failure is recorded; the others go on
            why = str(e) if isinstance(e, DemonoiseError) else f"{type(e).__name__}: {e}"
            for s in specs:
                if (s.dataset, s.country) == (dataset, country):
                    outcomes[s].status = "failed"
                    outcomes[s].error = f"results for {country} ({dataset}) failed: {why}"
    bar.close()
    timings["compute"] = time.perf_counter() - t0

    # ------------------------------------------------------------ 2. notebooks
    t0 = time.perf_counter()
    prov = {s.dataset: provenance_dict(s.dataset) for s in params.selections}
    labels = {s.dataset: _dataset_label(s.dataset) for s in params.selections}
    jobs: list[Job] = []
    job_of: dict[tuple[ReportSpec, str], int] = {}
    for s in specs:
        if outcomes[s].status == "failed":
            continue
        path, key = results_of[(s.dataset, s.country)]
        label, year = labels[s.dataset]
        base = {
            "country": s.country,
            "V": float(s.V),
            "dataset": s.dataset,
            "results_path": str(path),
            "granularity": params.granularity,
            "noise": params.noise,
            "mc": params.mc,
            "data_label": label,
        }
        for n in names:
            p = dict(base)
            if n == "cover":
                p.update(
                    title="",
                    provenance=prov[s.dataset],
                    sections=[INDICATOR_TITLES[i] for i in params.indicators],
                    seed=params.seed,
                    year=year,
                )
            job_of[(s, n)] = len(jobs)
            jobs.append(
                Job(
                    nbdir / f"{n}.ipynb",
                    s.build_dir(output) / f"{n}.ipynb",
                    p,
                    name=f"{s.dataset}/{s.stem}/{n}",
                    data_fingerprint=key,
                )
            )
    _say(
        log,
        f"demonoise report: executing {len(jobs)} notebooks ({workers} worker{'s' if workers != 1 else ''}, kernels reused)",
    )
    batch = run_jobs(jobs, workers=workers, force=force, progress=show)
    if batch.kernel_note:
        notes.append(batch.kernel_note)
    timings["notebooks"] = time.perf_counter() - t0
    for s in specs:
        o = outcomes[s]
        if o.status == "failed":
            continue
        errs = []
        for n in names:
            r = batch[job_of[(s, n)]]
            o.notebook_seconds += r.seconds
            if r.status == "failed":
                where = f"; executed notebook kept at {r.failed_notebook}" if r.failed_notebook else ""
                errs.append(f"{n}.ipynb: {r.error}{where}")
        if errs:
            o.status = "failed"
            o.error = "\n".join(errs)

    # ------------------------------------------------------------ 3. reports
    t0 = time.perf_counter()
    library = library_fingerprint()
    template = _template_fingerprint()
    todo = [s for s in specs if outcomes[s].status != "failed"]
    bar = tqdm(
        total=len(todo),
        desc="reports",
        unit="report",
        disable=(not show) if show is not None else None,
        file=sys.stderr,
    )
    lock = threading.Lock()
    # formulas: typeset once for the whole batch and inlined as SVG (needs Chromium)
    math_cache = None
    math_failed: list[str] = []
    math_chromium = None
    if pdf_reason is None:
        math_chromium = chromium
    elif not want_pdf:  # HTML only by choice: still typeset the formulas if Chromium is there
        try:
            math_chromium = find_chromium(chromium)
        except ChromiumNotFoundError:
            math_chromium = None
    if todo and math_chromium is not None:
        try:
            math_cache = MathCache(output / "build" / "math-svg.json", chromium=math_chromium)
        except ReportError as e:
            notes.append(f"formulas left to MathJax in the page: {e}")
    # one Chromium per rendering thread, kept open for all its PDFs
    local = threading.local()
    browsers: list = []

    def _print(html_path: Path, pdf_path: Path) -> tuple[Path | None, str | None]:
        try:
            b = getattr(local, "browser", None)
            if b is None:
                b = local.browser = Browser(chromium)
                with lock:
                    browsers.append(b)
            return b.print_pdf(html_path, pdf_path), None
        except DemonoiseError as e:  # a kept-open browser failed: retire it, try the one-shot path
            b = getattr(local, "browser", None)
            if b is not None:
                b.close()
                local.browser = None
            try:
                return print_pdf(html_path, pdf_path, chromium=chromium), None
            except DemonoiseError as e2:
                return None, f"no PDF: {e2} (kept-open browser: {e})"

    def render_one(s: ReportSpec) -> None:
        o = outcomes[s]
        bdir = s.build_dir(output)
        nb_paths = {n: bdir / f"{n}.ipynb" for n in names}
        try:
            metrics: dict = {}
            for n in names:
                for k, v in read_metrics(nb_paths[n]).items():
                    metrics.setdefault(k, v)
            o.metrics = metrics
            html, pdf_path = s.html(output), s.pdf(output)
            key = hashlib.sha256(
                json.dumps(
                    {
                        "notebooks": [output_key(nb_paths[n]) for n in names],
                        "library": library,
                        "template": template,
                        "pdf": pdf_reason is None,
                        "math": math_cache is not None,
                    },
                    sort_keys=True,
                ).encode()
            ).hexdigest()
            stamp = bdir / "report.json"
            old = {}
            if stamp.is_file():
                try:
                    old = json.loads(stamp.read_text(encoding="utf-8"))
                except ValueError:
                    old = {}
            up_to_date = (
                not force
                and old.get("key") == key
                and html.is_file()
                and (pdf_reason is not None or pdf_path.is_file())
            )
            if up_to_date:
                o.status = "skipped"
                o.html = html
                o.pdf = pdf_path if pdf_reason is None else None
                o.pdf_error = pdf_reason
                o.html_bytes = html.stat().st_size
                return
            label, _ = labels[s.dataset]
            title = f"{metrics.get('country_name') or s.country} ({s.country}), V = {s.V:g}: noise and demographic indicators"
            t0 = time.perf_counter()
            res = render_report(
                [
                    Section(nb_paths[n], title=INDICATOR_TITLES[n], anchor=n.replace("_", "-"))
                    for n in params.indicators
                ],
                html,
                None,
                title=title,
                cover=nb_paths["cover"],
                page_note=label,
            )
            if math_cache is not None:
                try:
                    math_cache.apply(res.html)
                except DemonoiseError as e:  # the page keeps its inlined MathJax: still offline
                    with lock:
                        if not math_failed:
                            math_failed.append(str(e))
                            notes.append(f"formulas left to MathJax in the page: {e}")
            o.html, o.html_bytes = res.html, res.html.stat().st_size
            o.html_seconds = time.perf_counter() - t0
            o.pdf, o.pdf_error = None, pdf_reason
            if pdf_reason is None:
                t1 = time.perf_counter()
                o.pdf, o.pdf_error = _print(res.html, pdf_path)
                o.pdf_seconds = time.perf_counter() - t1
                if o.pdf is None:  # Chromium failed on this report: the HTML stands, no stale PDF
                    pdf_path.unlink(missing_ok=True)
            atomic_write_text(
                stamp,
                json.dumps(
                    {
                        "key": key if o.pdf is not None or pdf_reason is not None else None,
                        "html": str(o.html),
                        "pdf": str(o.pdf) if o.pdf else None,
                        "pdf_error": o.pdf_error,
                        "metrics": metrics,
                        "html_seconds": round(o.html_seconds, 3),
                        "pdf_seconds": round(o.pdf_seconds, 3),
                    },
                    indent=1,
                ),
            )
        except Exception as e:  # one report's failure is recorded; the others go on
            o.status = "failed"
            o.error = f"rendering failed: {e if isinstance(e, DemonoiseError) else f'{type(e).__name__}: {e}'}"
        finally:
            with lock:
                bar.update(1)
                bar.set_postfix_str(f"{s.stem}: {o.status}", refresh=False)

    try:
        if workers <= 1 or len(todo) <= 1:
            for s in todo:
                render_one(s)
        else:
            with cf.ThreadPoolExecutor(max_workers=workers) as ex:
                list(ex.map(render_one, todo))
    finally:
        for b in browsers:
            b.close()
    bar.close()
    timings["render"] = time.perf_counter() - t0
    timings["html"] = sum(o.html_seconds for o in outcomes.values())
    timings["pdf"] = sum(o.pdf_seconds for o in outcomes.values())

    # ------------------------------------------------------------ 5. overview, extras
    t0 = time.perf_counter()
    further: list = []
    pdf_ok = want_pdf and pdf_reason is None
    if params.overview:
        from demonoise.report.overview import OverviewParams, render_overview

        opts = dict(params.overview)
        _say(
            log, f"demonoise report: Europe overview of {opts['dataset']} (V = {', '.join(f'{v:g}' for v in params.V)})"
        )
        try:
            ov = render_overview(
                OverviewParams.of({**opts, "V": params.V}),
                output,
                store=output / "results",
                pdf=pdf_ok,
                force=force,
                chromium=chromium if pdf_ok else None,
                workers=workers,
            )
            further.append(
                IndexRow(
                    name=f"Europe overview: {opts['dataset']}",
                    status="ok",
                    html=ov.html,
                    pdf=ov.pdf,
                    pdf_reason=None if ov.pdf is not None else (ov.pdf_error or pdf_reason),
                    summary={
                        "dataset": opts["dataset"],
                        "country": "all NUTS 2 regions",
                        "V": ", ".join(f"{v:g}" for v in params.V),
                    },
                )
            )
        except Exception as e:  # recorded in the index; the batch goes on
            why = str(e) if isinstance(e, DemonoiseError) else f"{type(e).__name__}: {e}"
            further.append(IndexRow(name=f"Europe overview: {opts['dataset']}", status="failed", error=why))
    for name, opts in params.extras:
        from demonoise.report.extras import render_notebook

        _say(log, f"demonoise report: extra notebook {name}")
        try:
            res = render_notebook(
                name,
                {k: list(v) if isinstance(v, tuple) else v for k, v in opts},
                output / "extras",
                pdf=pdf_ok,
                force=force,
                chromium=chromium if pdf_ok else None,
            )
            further.append(
                IndexRow(
                    name=f"{name} notebook",
                    status="ok",
                    html=res.html,
                    pdf=res.pdf,
                    pdf_reason=None if res.pdf is not None else (res.pdf_error or pdf_reason),
                    summary={"country": name},
                )
            )
        except Exception as e:
            why = str(e) if isinstance(e, DemonoiseError) else f"{type(e).__name__}: {e}"
            further.append(IndexRow(name=f"{name} notebook", status="failed", error=why))
    timings["overview_extras"] = time.perf_counter() - t0

    # ------------------------------------------------------------ 6. index
    rows = []
    for s in specs:
        o = outcomes[s]
        rows.append(
            IndexRow(
                name=s.label,
                status=o.status,
                html=o.html,
                pdf=o.pdf,
                pdf_reason=None if o.pdf is not None else (o.pdf_error or pdf_reason),
                error=o.error,
                summary=_index_summary(s, o.metrics),
            )
        )
    intro = (
        "Quality reports: how the generic noise model of the Cell Key Method (integer noise of variance V on "
        "every published count) degrades ASFR, TFR, ASMR and life expectancy, against their Poisson uncertainty. "
        "A = noise admixture (what the noise adds to the statistical uncertainty); worst region = largest A of e0."
    )
    if pdf_reason and want_pdf:
        intro += f" PDF reports are missing because {pdf_reason.removeprefix('no PDF: ')}."
    data_status = {d: lab for d, (lab, _) in labels.items() if lab}
    ov_dataset = dict(params.overview).get("dataset") if params.overview else None
    if ov_dataset and ov_dataset not in data_status:
        lab, _ = _dataset_label(ov_dataset)
        if lab:
            data_status[ov_dataset] = lab
            prov.setdefault(ov_dataset, provenance_dict(ov_dataset))
    index = write_index(
        rows + further,
        output / "index.html",
        title=params.title,
        columns=list(INDEX_COLUMNS),
        intro=intro,
        data_status=data_status,
        modelled=any(t.get("status") == "modelled" for d in prov.values() for t in d.values()),
    )
    timings["total"] = time.perf_counter() - t_start
    if any(r.status == "failed" for r in further):
        notes.append("; ".join(f"{r.name} failed: {r.error}" for r in further if r.status == "failed"))
    return BatchReport(params, [outcomes[s] for s in specs], index, timings, notes, further)
