"""Computed once, read many times: the results tables behind the reports, and the stamps
that say whether a rendered document is up to date.

Report notebooks never compute: the batch asks :func:`results` for the table of a
:class:`ResultsSpec`, computed by :func:`demonoise.analysis.compute.compute` the first time
and read back from ``<store>/<dataset>/<key>.parquet`` afterwards. Every cached artefact
carries a *key*, the sha256 of what it was made from (:func:`digest`): here the spec, the
sources of the computing layers (:func:`source_fingerprint` without the presentation layer)
and the dataset's content. Files are written atomically, with a JSON sidecar.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from demonoise.analysis.compute import compute, noise_settings, write_table
from demonoise.analysis.results import CONFIDENCE, check_confidence
from demonoise.analysis.stored import DECISION_FIELDS, read_decision, write_decision
from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ParameterError
from demonoise.demography.indicators import INDICATORS
from demonoise.runtime.fingerprint import digest, source_fingerprint

__all__ = [
    "ResultsSpec",
    "results",
    "results_path",
    "DECISION_FIELDS",
    "read_decision",
    "write_decision",
    "digest",
    "source_fingerprint",
    "tree_fingerprint",
    "file_digest",
    "read_stamp",
    "write_stamp",
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
    and stored (atomically). Returns the table and its path."""
    from demonoise.io.datasets import load

    path = results_path(spec, store)
    if path.exists() and not force:
        return pd.read_parquet(path), path
    counts = load(spec.dataset)
    if spec.countries is not None:
        unknown = sorted(set(spec.countries) - set(counts.countries))
        if unknown:
            raise ParameterError(
                f"countr{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} not in dataset {spec.dataset!r} "
                f"(it has {', '.join(counts.countries)})"
            )
        counts = counts.select([r.code for r in counts.regions if r.country in spec.countries])
    t0 = time.perf_counter()
    df = compute(
        counts,
        noise_settings(spec.V, ptables=spec.ptables),
        granularity=spec.granularity,
        indicators=spec.indicators,
        e_ages=spec.e_ages,
        mc=spec.mc,
        seed=spec.seed,
        zero_floor=spec.zero_floor,
        confidence=spec.confidence,
        progress=progress,
        workers=workers,
        cluster=cluster,
    )
    seconds = time.perf_counter() - t0
    write_table(df, path)
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


def decision_key(results_key: str, settings, thresholds, confidence, recommend) -> str:
    """Key of the decision tables of one results table: the results key and the report
    parameters they depend on (the library is already part of the results key)."""
    payload = {
        "results": results_key,
        "settings": [dict(s) for s in settings],
        "thresholds": [float(t) for t in thresholds],
        "confidence": [float(c) for c in confidence],
        "recommend": dict(recommend),
    }
    return digest(payload, 16)


def tree_fingerprint(root: Path) -> str:
    """Hash of every file under ``root`` (names and bytes)."""
    root, h = Path(root), hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def file_digest(path: Path, length: int = 16) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:length]


def read_stamp(path: Path) -> dict:
    """The JSON sidecar at ``path`` (``{}`` if missing or unreadable)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def write_stamp(path: Path, stamp: dict) -> Path:
    return atomic_write_text(path, json.dumps(stamp, indent=1, default=str))
