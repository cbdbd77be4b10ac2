"""Tables on disk, computed once and read many times: the results store (:func:`results`
of a :class:`ResultsSpec`, under ``<store>/<dataset>/<key>.parquet``), a country's results
and decision tables (:func:`country_tables`, :func:`write_decision`, :func:`read_decision`),
a results table read once per kernel (:func:`read_once`), -- a notebook run by hand,
without a batch -- a country's results computed now (:func:`country_results`), and what a
report section shows, read or computed and checked against its parameters
(:func:`results_for`, :func:`decision_for`).

Every stored table carries a *key*, the sha256 of what it was made from: the spec, the
sources of the computing layers (:func:`~demonoise.runtime.fingerprint.source_fingerprint`
without the presentation layer) and the dataset's content. Files are written atomically.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from demonoise.analysis.decision import DECISION_TABLES
from demonoise.analysis.results import CONFIDENCE, check_confidence
from demonoise.analysis.settings import NoiseSetting
from demonoise.core.errors import ParameterError, ReportError
from demonoise.core.vocabulary import INDICATORS
from demonoise.runtime.fingerprint import digest, source_fingerprint

__all__ = [
    "ResultsSpec",
    "results_path",
    "country_counts",
    "results",
    "country_tables",
    "overview_tables",
    "DECISION_FIELDS",
    "write_decision",
    "read_decision",
    "content_key",
    "read_once",
    "country_results",
    "results_for",
    "decision_for",
]


@dataclass(frozen=True)
class ResultsSpec:
    """What to compute (:func:`demonoise.analysis.compute.compute`'s arguments): a dataset,
    the variances ``V`` of the generic model and ``ptables``, a granularity, the
    ``countries`` (default all), ``mc`` replicates and the ``confidence`` levels whose
    Monte Carlo quantiles are kept."""

    dataset: str
    V: tuple = (1.0, 5.0)
    ptables: tuple = ()
    granularity: str = "single"
    countries: tuple | None = None
    mc: int = 0
    seed: int = 20230101
    zero_floor: bool = False
    indicators: tuple = INDICATORS
    e_ages: tuple | None = None
    confidence: tuple = CONFIDENCE

    def __post_init__(self):
        object.__setattr__(self, "V", tuple(float(v) for v in self.V))
        object.__setattr__(self, "ptables", tuple(str(p) for p in self.ptables))
        object.__setattr__(self, "indicators", tuple(self.indicators))
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        if self.countries is not None:
            object.__setattr__(self, "countries", tuple(sorted(self.countries)))
        if self.e_ages is not None:
            object.__setattr__(self, "e_ages", tuple(int(a) for a in self.e_ages))
        if not self.V and not self.ptables:
            raise ParameterError("a results spec needs at least one V or one p-table")
        if self.mc < 0:
            raise ParameterError(f"Monte Carlo replicates must be >= 0, got {self.mc}")
        if not all(0 < v < float("inf") for v in self.V):
            raise ParameterError(f"V is a variance and must be finite and > 0, got {', '.join(map(str, self.V))}")

    def key(self) -> str:
        from demonoise.io.datasets import fingerprint

        library = source_fingerprint(presentation=False)
        return digest({"spec": dataclasses.asdict(self), "library": library, "data": fingerprint(self.dataset)}, 16)

    def counts(self):
        """The spec's counts: its dataset, restricted to ``countries`` (:func:`country_counts`)."""
        return country_counts(self.dataset, self.countries)


def country_counts(dataset: str, countries: Sequence[str] | None = None):
    """The counts of ``dataset``, restricted to ``countries`` (all of them when ``None``).

    Raises
    ------
    ParameterError
        An unknown dataset or country, naming it (and the countries the dataset has).
    """
    from demonoise.io.datasets import load

    counts = load(dataset)
    if countries is None:
        return counts
    unknown = sorted(set(countries) - set(counts.countries))
    if unknown:
        raise ParameterError(
            f"countr{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} not in dataset {dataset!r} "
            f"(it has {', '.join(counts.countries)})"
        )
    return counts.select([r.code for r in counts.regions if r.country in countries])


def results_path(spec: ResultsSpec, store="output/results") -> Path:
    """Where the table of ``spec`` lives (whether or not it exists yet)."""
    tag = "all" if spec.countries is None else "-".join(spec.countries)
    if len(tag) > 40:
        tag = f"{len(spec.countries)}countries"
    return Path(store) / spec.dataset / f"{tag}-{spec.granularity}-{spec.key()}.parquet"


def results(
    spec: ResultsSpec, store="output/results", *, force: bool = False, progress=None, workers=None, cluster=None
) -> tuple[pd.DataFrame, Path]:
    """The results table of ``spec``: read from the store if up to date, else computed
    (the Monte Carlo on ``workers`` or ``cluster``) and stored atomically, with a JSON
    sidecar. Returns the table and its path."""
    from demonoise.analysis.compute import compute, noise_settings, write_results
    from demonoise.core.atomic import atomic_write_text

    path = results_path(spec, store)
    if path.exists() and not force:
        return pd.read_parquet(path), path
    counts, t0 = spec.counts(), time.perf_counter()
    kw = {f: getattr(spec, f) for f in ("granularity", "indicators", "e_ages", "mc", "seed", "zero_floor")}
    df = compute(
        counts,
        noise_settings(spec.V, ptables=spec.ptables),
        confidence=spec.confidence,
        progress=progress,
        workers=workers,
        cluster=cluster,
        **kw,
    )
    seconds = time.perf_counter() - t0
    write_results(df, path)
    meta = {
        "spec": dataclasses.asdict(spec),
        "key": spec.key(),
        "rows": len(df),
        "regions": len(counts.regions),
        "data_status": counts.provenance.data_status,
        "datasets": list(counts.provenance.datasets),
        "seconds": round(seconds, 3),
    }
    atomic_write_text(path.with_suffix(".json"), json.dumps(meta, indent=1, default=str))
    return df, path


def country_tables(
    spec: ResultsSpec, decision: Mapping, store, *, stored: bool = False, workers=None, cluster=None
) -> tuple[Path, Path] | None:
    """The results table of one country's ``spec`` and its decision tables
    (:func:`~demonoise.analysis.decision.decision_report` with the arguments ``decision``:
    ``settings``, ``thresholds``, ``confidence``, ``recommend``), stored side by side under
    ``store``; their paths. ``stored``: only if both are stored and up to date (else ``None``).
    """
    from demonoise.analysis.decision import decision_report

    path = results_path(spec, store)
    where = path.with_name(f"{path.stem}-decision-{digest({'results': spec.key(), **decision}, 16)}")
    if stored:
        try:
            read_decision(where)
        except ReportError:
            return None
        return (path, where) if path.is_file() else None
    df, path = results(spec, store, workers=workers, cluster=cluster)
    return path, write_decision(decision_report(df, spec.counts(), country=spec.countries[0], **decision), where)


#: The tables of a :class:`~demonoise.analysis.decision.DecisionReport`, by attribute.
DECISION_FIELDS = DECISION_TABLES


def overview_tables(
    spec: ResultsSpec, store, thresholds, calibration, out, *, force: bool = False, workers=None, cluster=None
) -> tuple[dict[str, Path], str]:
    """The Europe overview's tables and the data status of its dataset.

    Its results tables of e0 and e65 (``spec`` with ``e_ages=(0, 65)``: single ages, the
    published layout, with its Monte Carlo; 5-year groups without) come from the results
    store ``store``; its calibration table is ``calibration`` if a path, else written to
    ``out`` (``calibration`` as a frame, or computed for single ages at ``thresholds``).
    Returns ``{"results_single": path, "results_5y": path, "calibration": path}``.
    """
    from demonoise.analysis.compute import write_results
    from demonoise.uncertainty.calibration import calibrate

    paths, status = {}, ""
    for gran, mc in (("single", spec.mc), ("5y", 0)):
        one = dataclasses.replace(spec, granularity=gran, mc=mc, e_ages=(0, 65))
        df, path = results(one, store, force=force, workers=workers, cluster=cluster)
        paths[f"results_{gran}"], status = path.resolve(), status or str(df["data_status"].iloc[0])
    if calibration is None:
        calibration = calibrate(spec.counts(), tuple(map(float, thresholds)), granularity="single", e_ages=(0, 65))
    is_path = isinstance(calibration, (str, os.PathLike))
    paths["calibration"] = (Path(calibration) if is_path else write_results(calibration, out)).resolve()
    return paths, status


def write_decision(rep, directory) -> Path:
    """Store a :class:`~demonoise.analysis.decision.DecisionReport`: one Parquet file per
    table (its ``attrs`` -- CSV name, title, units -- kept) and ``report.json`` (the main
    points, the notes). Written into a temporary directory that replaces ``directory``
    only once complete (:func:`demonoise.core.atomic.atomic_dir`)."""
    from demonoise.core.atomic import atomic_dir

    directory = Path(directory)
    with atomic_dir(directory) as tmp:
        for name in DECISION_FIELDS:
            df = getattr(rep, name)
            if df is not None:
                df.to_parquet(tmp / f"{name}.parquet", index=False)
        meta = {
            "sentences": list(rep.main_points.sentences),
            "numbers": rep.main_points.numbers,
            "notes": list(rep.notes),
            "decision_text": rep.decision_text,
        }
        (tmp / "report.json").write_text(json.dumps(meta, indent=1, default=list), encoding="utf-8")
    return directory


def read_decision(directory):
    """Read back what :func:`write_decision` stored, as a
    :class:`~demonoise.analysis.decision.DecisionReport`.

    Raises
    ------
    ReportError
        The directory or its ``report.json`` is missing.
    """
    from demonoise.analysis.decision import DecisionReport, MainPoints

    directory = Path(directory)
    meta_path = directory / "report.json"
    if not meta_path.is_file():
        raise ReportError(f"decision tables not found: {directory} (no report.json)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    tables = {
        name: pd.read_parquet(directory / f"{name}.parquet") if (directory / f"{name}.parquet").is_file() else None
        for name in DECISION_FIELDS
    }
    return DecisionReport(
        **tables,
        main_points=MainPoints(list(meta["sentences"]), dict(meta["numbers"])),
        notes=list(meta["notes"]),
        decision_text=str(meta.get("decision_text", "")),
    )


def content_key(path) -> str:
    """A digest of what ``path`` holds: a file's bytes, or every file's name and bytes
    under a directory."""
    path = Path(path)
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file():
            h.update(p.relative_to(path).as_posix().encode() if p != path else b"")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:32]


_ONCE: dict = {}
_ONCE_SIZE = 2


def read_once(path, reader: Callable):
    """``reader(path)``, remembered by the contents of ``path`` (:func:`content_key`) for
    the last few paths.

    The report notebooks of one country run one after the other in a reused kernel
    (module state survives the namespace reset between notebooks); the tables they all
    read are parsed once, although each reads its own copy. A DataFrame is returned as a
    copy, so no notebook can see another's changes.
    """
    key = (content_key(path), reader)
    if key not in _ONCE:
        while len(_ONCE) >= _ONCE_SIZE:
            _ONCE.pop(next(iter(_ONCE)))
        _ONCE[key] = reader(path)
    hit = _ONCE[key]
    return hit.copy() if isinstance(hit, pd.DataFrame) else hit


_COMPUTED: dict = {}


def country_results(
    dataset: str,
    country: str,
    settings: Sequence,
    *,
    granularity: str = "single",
    mc: int = 0,
    seed: int = 20230101,
    confidence: Sequence[float] = CONFIDENCE,
):
    """The results table of one country of ``dataset`` at ``settings`` (any form of
    :meth:`NoiseSetting.of <demonoise.analysis.settings.NoiseSetting.of>`), computed now --
    what a report notebook run by hand shows -- and the country's counts. Remembered for
    the process (a copy of the table is returned).

    Raises
    ------
    ParameterError
        An unknown dataset, country or p-table.
    """
    from demonoise.analysis.compute import compute, noise_settings

    sets = [NoiseSetting.of(s) for s in settings]
    key = (
        dataset,
        country,
        tuple(str(s.as_parameter()) for s in sets),
        granularity,
        int(mc),
        int(seed),
        tuple(confidence),
    )
    if key not in _COMPUTED:
        counts = country_counts(dataset, (country,))
        noise = noise_settings(
            [s.V for s in sets if s.is_generic], ptables=[s.as_parameter()["ptable"] for s in sets if not s.is_generic]
        )
        df = compute(counts, noise, granularity=granularity, mc=int(mc), seed=int(seed), confidence=tuple(confidence))
        _COMPUTED.clear()
        _COMPUTED[key] = (df, counts)
    df, counts = _COMPUTED[key]
    return df.copy(), counts


def results_for(
    path,
    *,
    dataset: str,
    country: str,
    setting,
    granularity: str | None = None,
    mc: int = 0,
    dedupe: bool = True,
) -> pd.DataFrame:
    """The results table a report section shows, checked against its parameters.

    Parameters
    ----------
    path : path-like or ``""``/``None``
        Parquet (or CSV) file written by :func:`demonoise.analysis.stored.results` (what
        the batch passes). Empty: the country's table is computed now
        (:func:`country_results`) -- a notebook run by hand.
    dataset, country, setting, granularity
        What the report shows; the table must hold the rows of the noise setting (a
        variance, ``{"V": v}`` or ``{"ptable": name}``) for that dataset, country and
        granularity.
    mc : int
        Monte Carlo replicates, only used when computing.
    dedupe : bool
        Apply :func:`~demonoise.analysis.verdicts.drop_duplicate_country`.

    Returns
    -------
    pandas.DataFrame
        The rows of ``country`` and ``granularity`` (all ``V``'s of the table).

    Raises
    ------
    ReportError
        Missing file, or a table without the requested dataset/country/setting/granularity
        (naming what is missing).
    """
    from demonoise.analysis.compute import read_results
    from demonoise.analysis.settings import setting_labels
    from demonoise.analysis.verdicts import at, drop_duplicate_country
    from demonoise.core.errors import ReportError

    if not path:
        df, _ = country_results(dataset, country, [setting], granularity=granularity or "single", mc=mc)
    elif not Path(path).exists():
        raise ReportError(f"results table not found: {path}")
    else:
        df = read_once(Path(path), read_results)
    problems = []
    if dataset not in set(df["dataset"].unique()):
        problems.append(f"dataset {dataset!r} (has {sorted(set(df['dataset'].unique()))})")
    df = df[df["country"] == country]
    if df.empty:
        problems.append(f"country {country!r}")
    elif granularity is not None and granularity not in set(df["granularity"].unique()):
        problems.append(f"granularity {granularity!r} (has {sorted(set(df['granularity'].unique()))})")
    elif at(df, setting).empty:
        problems.append(f"{NoiseSetting.of(setting).label} (has {sorted(set(setting_labels(df)))})")
    if problems:
        raise ReportError(f"results table {path or 'computed here'} has no rows for " + "; ".join(problems))
    if granularity is not None:
        df = df[df["granularity"] == granularity]
    df = df.reset_index(drop=True)
    return drop_duplicate_country(df) if dedupe else df


def decision_for(
    path,
    *,
    dataset: str,
    country: str,
    settings: Sequence,
    thresholds: Sequence[float] = (0.1, 0.414),
    confidence: Sequence[float] = (0.95,),
    recommend: Mapping | None = None,
    granularity: str = "single",
    mc: int = 0,
    seed: int = 20230101,
):
    """The decision tables of a country: read back from ``path`` (what the batch stored,
    :func:`read_decision`; once per kernel), or -- ``path`` empty, a notebook run by hand --
    computed now from the country's results (:func:`country_results`)."""
    from demonoise.analysis.decision import decision_report

    if path:
        return read_once(path, read_decision)
    df, counts = country_results(
        dataset, country, settings, granularity=granularity, mc=mc, seed=seed, confidence=tuple(confidence)
    )
    return decision_report(
        df, counts, list(settings), thresholds=thresholds, confidence=confidence, recommend=recommend, country=country
    )
