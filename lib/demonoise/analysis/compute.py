"""Orchestration of one analysis: dataset -> published cells -> analytic pass (+ Monte Carlo)
-> the tidy results table, written atomically.

This is what ``demonoise compute`` runs and what the report notebooks read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.analysis.results import CONFIDENCE, mc_quantiles, results_table
from demonoise.analysis.settings import NoiseSetting
from demonoise.core.atomic import atomic_path
from demonoise.core.counts import Counts
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import INDICATORS
from demonoise.runtime.cluster import using
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import TABLES, linearise

__all__ = ["noise_settings", "compute", "check_table_path", "write_results", "read_results", "summarise"]


def noise_settings(
    V: Sequence[float] = (), *, D: int | None = None, ptables: Sequence = (), noised=TABLES
) -> list[NoiseSetting]:
    """Noise settings for a run: the generic model at each variance ``V`` (optionally
    with maximum deviation ``D``) and one setting per p-table (a path or an embedded
    table name such as ``"v01"``)."""
    from demonoise.analysis.ptables import resolve_ptable
    from demonoise.noise.models import GenericNoise, PTableNoise

    out = [NoiseSetting.from_model(GenericNoise(float(v), D=D), noised) for v in V]
    for p in ptables:
        table = resolve_ptable(p)
        out.append(NoiseSetting.from_model(PTableNoise(table), noised, source=p))
    if not out:
        raise ParameterError("no noise given: pass at least one V or one p-table")
    return out


def compute(
    counts: Counts,
    settings: Sequence[NoiseSetting],
    *,
    granularity: str = "single",
    indicators=INDICATORS,
    e_ages=None,
    mc: int = 0,
    mc_indicators=("e", "tfr"),
    seed: int = 20230101,
    zero_floor: bool = False,
    confidence=CONFIDENCE,
    workers: int | None = None,
    progress=None,
    cluster=None,
    **layout_kw,
) -> pd.DataFrame:
    """Analytic propagation (and, with ``mc > 0``, a Monte Carlo check) for every noise
    setting; returns the tidy results table (:mod:`demonoise.analysis.results`).

    ``confidence`` (levels in (0, 1), default 0.95) sets the Monte Carlo quantiles kept
    (:func:`~demonoise.analysis.results.mc_quantiles`): columns
    ``mc_lo_<component>_<level>`` and ``mc_hi_<component>_<level>``.

    The Monte Carlo blocks run on ``cluster`` (:class:`demonoise.runtime.cluster.Cluster`),
    or, when none is given, on a local cluster of ``workers`` processes started for this
    call (``workers=1``: in this process); the analytic pass always runs here."""
    quantiles = mc_quantiles(confidence)
    lz = linearise(counts, granularity=granularity, indicators=indicators, e_ages=e_ages, **layout_kw)
    runs = {}
    mc_ind = [i for i in mc_indicators if i in lz.blocks]
    if mc and mc_ind:  # nothing to simulate when no Monte Carlo indicator was linearised
        with using(cluster, workers) as where:
            runs = {
                i: _simulate(lz, s, mc, seed, mc_ind, zero_floor, quantiles, where, progress)
                for i, s in enumerate(settings)
            }
    return results_table(lz, settings, mc=runs, zero_floor=zero_floor)


def _simulate(lz, setting, n, seed, indicators, zero_floor, quantiles, cluster, progress):
    return monte_carlo(
        lz,
        setting.model,
        n=n,
        seed=seed,
        indicators=indicators,
        floor_zero=zero_floor,
        noised=setting.noised,
        quantiles=quantiles,
        cluster=cluster,
        progress=progress,
    )


def check_table_path(path) -> Path:
    """The output path of a results table, checked before any work is done: a
    ``.parquet``, ``.csv`` or ``.csv.gz`` name (missing directories are created on writing)."""
    path = Path(path)
    name = path.name.lower()
    if not (name.endswith(".parquet") or name.endswith(".csv") or name.endswith(".csv.gz")):
        raise ParameterError(f"output {path}: use a .parquet, .csv or .csv.gz extension")
    return path


def write_results(df: pd.DataFrame, path) -> Path:
    """Write a results table atomically as Parquet (``.parquet``) or CSV (``.csv``,
    ``.csv.gz``); the format follows the extension."""
    path = check_table_path(path)
    name = path.name.lower()
    with atomic_path(path) as tmp:
        if name.endswith(".parquet"):
            df.to_parquet(tmp, index=False)
        else:
            compression = "gzip" if name.endswith(".gz") else None
            df.to_csv(tmp, index=False, compression=compression, float_format="%.10g")
    return path


def read_results(path) -> pd.DataFrame:
    """Read a results table written by :func:`write_results`."""
    path = Path(path)
    if path.name.lower().endswith(".parquet"):
        return pd.read_parquet(path)
    return pd.read_csv(path)


# The former names, still called by demonoise.report until its rewrite; not public.
write_table = write_results
read_table = read_results


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """One line per (noise setting, indicator): median and max relative noise
    uncertainty and admixture over regions and sexes, for e0 / TFR / all ages."""
    sel = df[(df.indicator.isin(["tfr"])) | ((df.indicator == "e") & (df.age == 0))]
    g = sel.groupby(["noise_model", "ptable", "V", "granularity", "indicator"], dropna=False)
    out = g.agg(
        regions=("region", "nunique"),
        rel_noise_median=("rel_noise", "median"),
        rel_noise_max=("rel_noise", "max"),
        admixture_median=("admixture", "median"),
        admixture_max=("admixture", "max"),
    )
    return out.reset_index().replace({np.nan: None})
