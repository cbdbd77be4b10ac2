"""The tidy results table: one row per dataset / noise model / granularity / V / region /
sex / indicator / age.

Columns (all rows)
------------------
dataset, data_status
    Dataset name and its provenance label ("real", or "demonstration data: population
    real (Eurostat), deaths and births modelled, ...") followed by what that status means
    for reading the results, if the data say (``Provenance.data_status``: label ``; what it
    means: `` implications).
setting, noise_model, ptable, zero_floor, granularity, V
    The noise setting's key (``"V=1"``, ``"v01"``: :attr:`~demonoise.analysis.settings.NoiseSetting.key`,
    by which every table selects its rows) and the noise: ``generic`` (integer noise of
    variance ``V`` on every published cell) or
    ``ptable`` (Cell Key Method, ``ptable`` names the table; ``V`` its nominal
    variance); ``zero_floor`` whether the Monte Carlo floored noisy counts at zero (the
    analytic columns never do); the publication granularity.
region, region_name, nuts_level, country, population, sex, indicator, age, age_group
    ``population``: the region's population on 1 January of the reference year (both
    sexes, all ages, :attr:`~demonoise.core.counts.Counts.population`), the figure every
    report table shows; ``age`` is the lower bound of the interval (``nan`` for TFR);
    ``age_group`` its Eurostat-style label.
value, events, exposure
    The indicator and the events/exposure behind it (e_k: deaths and exposure at
    ages >= k; TFR: all births and the female exposure 15-49).
var_pois, var_noise, var_tot, sd_*, rel_*
    First-order variances, standard deviations and relative uncertainties
    (``sd / value``).
admixture
    ``sqrt(1 + var_noise / var_pois) - 1``.
bias_noise
    First-order bias of the indicator due to biased noise (p-tables; 0 for generic).
small_count
    ``events < small_events`` (default :data:`~demonoise.core.vocabulary.SMALL_EVENTS`, 10):
    the first-order result is unreliable here.

Columns when a Monte Carlo was run
----------------------------------
mc_n, mc_sd_{noise,pois,tot}, mc_mean_tot, mc_q_lo, mc_q_hi, mc_invalid,
z_{noise,pois,tot}
    ``mc_q_lo``, ``mc_q_hi``: the 2.5 % and 97.5 % quantiles of the indicator's
    replicate values under the ``total`` component (Poisson and noise);
    ``z = (sd_MC / sd_analytic - 1) sqrt(2N)``;
mc_lo_{noise,pois,tot}_<level>, mc_hi_{noise,pois,tot}_<level>
    For every confidence level ``c`` of the run (:func:`mc_quantiles`; ``<level>`` is
    ``100 c`` as in ``95``, :func:`level_tag`): the ``(1 - c) / 2`` and ``(1 + c) / 2``
    quantiles of the replicate values under each component -- the Monte Carlo
    counterpart of the analytic error bands (``nan`` where the replicate values were
    too many to keep);
z_flag
    ``|z| > z_bound`` (default :data:`~demonoise.core.vocabulary.Z_BOUND`, 5) in any
    component: analytic and Monte Carlo disagree beyond sampling error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from demonoise.analysis.settings import NoiseSetting
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import SEXES, SMALL_EVENTS, Z_BOUND
from demonoise.uncertainty.montecarlo import MonteCarloResult, z_score
from demonoise.uncertainty.propagation import (
    Linearised,
    admixture,
    noise_cell_moments,
    poisson_cell_variance,
)

__all__ = [
    "NoiseSetting",
    "results_table",
    "COLUMNS",
    "CONFIDENCE",
    "check_confidence",
    "level_tag",
    "mc_quantiles",
    "mc_band_columns",
]

COLUMNS = [
    "dataset", "data_status", "setting", "noise_model", "ptable", "zero_floor", "granularity", "V",
    "region", "region_name", "nuts_level", "country", "population", "sex", "indicator", "age", "age_group",
    "value", "events", "exposure", "var_pois", "var_noise", "var_tot", "sd_pois", "sd_noise", "sd_tot",
    "rel_pois", "rel_noise", "rel_tot", "admixture", "bias_noise", "small_count",
]  # fmt: skip

MC_COLUMNS = [
    "mc_n", "mc_sd_noise", "mc_sd_pois", "mc_sd_tot", "mc_mean_tot", "mc_q_lo", "mc_q_hi", "mc_invalid",
    "z_noise", "z_pois", "z_tot", "z_flag",
]  # fmt: skip


#: Default confidence level(s) of the error bands and of the Monte Carlo quantiles.
CONFIDENCE: tuple[float, ...] = (0.95,)
#: Monte Carlo components and the suffix of their columns.
_MC_COMPONENTS = (("noise", "noise"), ("poisson", "pois"), ("total", "tot"))


def check_confidence(confidence) -> tuple[float, ...]:
    """Validate confidence levels: each a number strictly between 0 and 1.

    Parameters
    ----------
    confidence : float or sequence of float
        Levels such as 0.95; duplicates are dropped, the order is kept.

    Returns
    -------
    tuple of float

    Raises
    ------
    ParameterError
        Naming the first bad value (not a number, outside (0, 1)) or an empty list.
    """
    if isinstance(confidence, (str, bytes)):
        raise ParameterError(f"confidence must be numbers in (0, 1), got {confidence!r}")
    vals = [confidence] if np.ndim(confidence) == 0 else list(np.asarray(confidence, dtype=object).ravel())
    if not vals:
        raise ParameterError("no confidence level given: pass at least one level in (0, 1), e.g. 0.95")
    out: list[float] = []
    for c in vals:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.number)):
            raise ParameterError(f"confidence {c!r} is not a number; levels lie in (0, 1), e.g. 0.95")
        x = float(c)
        if not (0.0 < x < 1.0):
            raise ParameterError(f"confidence {c!r} is outside (0, 1): levels are probabilities, e.g. 0.95")
        if x not in out:
            out.append(x)
    return tuple(out)


def level_tag(level: float) -> str:
    """The level as it appears in column names: ``100 c`` (``0.95 -> "95"``, ``0.995 -> "99.5"``)."""
    return f"{100.0 * float(level):.10g}"


def _tails(level: float) -> tuple[float, float]:
    """The quantiles ``(1 - c) / 2`` and ``(1 + c) / 2`` of a central interval (rounded to 12 digits)."""
    return round((1.0 - level) / 2.0, 12), round((1.0 + level) / 2.0, 12)


def mc_quantiles(confidence=CONFIDENCE) -> tuple[float, ...]:
    """Quantiles the Monte Carlo must keep for the levels ``confidence``: ``(1 -+ c) / 2``
    for each level, and always 2.5 % and 97.5 % (``mc_q_lo``, ``mc_q_hi``); sorted."""
    qs = {0.025, 0.975}
    for c in check_confidence(confidence):
        qs.update(_tails(c))
    return tuple(sorted(qs))


def _mc_levels(quantiles) -> list[float]:
    """Confidence levels whose two tails are among ``quantiles`` (ascending)."""
    have = {round(float(q), 12) for q in quantiles}
    return sorted(round(1.0 - 2.0 * q, 12) for q in have if q < 0.5 and round(1.0 - q, 12) in have)


def mc_band_columns(level: float) -> list[str]:
    """Columns of the Monte Carlo interval at ``level``: ``mc_lo_noise_95, mc_hi_noise_95, ...``."""
    t = level_tag(level)
    return [f"mc_{side}_{col}_{t}" for _, col in _MC_COMPONENTS for side in ("lo", "hi")]


def _block_frame(
    lz: Linearised, block, setting: NoiseSetting, meta: dict, mc: MonteCarloResult | None, small_events, z_bound
):
    c = lz.counts
    cells_p = poisson_cell_variance(lz, block.female_only)
    var_p = block.lin.variance(cells_p)
    var_n_cells, bias_cells = noise_cell_moments(lz, setting.model, block.female_only, setting.noised)
    var_n = block.lin.variance(var_n_cells)
    bias = block.lin.shift(bias_cells)
    value = block.lin.value
    R, S, K = value.shape
    sexes = block.sexes
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = lambda v: np.sqrt(v) / np.abs(value)  # noqa: E731
        cols = {
            "value": value,
            "events": block.events,
            "exposure": block.exposure,
            "var_pois": var_p,
            "var_noise": var_n,
            "var_tot": var_p + var_n,
            "sd_pois": np.sqrt(var_p),
            "sd_noise": np.sqrt(var_n),
            "sd_tot": np.sqrt(var_p + var_n),
            "rel_pois": rel(var_p),
            "rel_noise": rel(var_n),
            "rel_tot": rel(var_p + var_n),
            "admixture": admixture(var_p, var_n),
            "bias_noise": bias,
        }
    shape = (R, S, K)
    df = pd.DataFrame({k: np.broadcast_to(v, shape).ravel() for k, v in cols.items()})
    reg_idx = np.repeat(np.arange(R), S * K)
    df.insert(0, "region", np.array(c.codes)[reg_idx])
    df.insert(1, "region_name", np.array([r.name for r in c.regions])[reg_idx])
    df.insert(2, "nuts_level", np.array([r.level for r in c.regions])[reg_idx])
    df.insert(3, "country", np.array([r.country for r in c.regions])[reg_idx])
    df.insert(4, "population", c.population[:, SEXES.index("T")][reg_idx])
    df.insert(5, "sex", np.tile(np.repeat(np.array(sexes), K), R))
    df.insert(6, "indicator", block.indicator)
    df.insert(7, "age", np.tile(block.age_lower, R * S))
    df.insert(8, "age_group", np.tile(np.array(block.age_labels, dtype=object), R * S))
    df["small_count"] = df["events"] < small_events
    if mc is not None:
        got = {comp: mc.stats.get((block.indicator, comp)) for comp in ("noise", "poisson", "total")}
        n = mc.n
        df["mc_n"] = n
        for comp, col, ana in (("noise", "noise", var_n), ("poisson", "pois", var_p), ("total", "tot", var_p + var_n)):
            st = got[comp]
            if st is None:
                df[f"mc_sd_{col}"] = np.nan
                df[f"z_{col}"] = np.nan
                continue
            df[f"mc_sd_{col}"] = st["sd"].ravel()
            df[f"z_{col}"] = z_score(st["sd"], np.sqrt(ana), st["n_valid"]).ravel()
        tot = got["total"] or got["noise"] or got["poisson"]
        df["mc_mean_tot"] = tot["mean"].ravel() if tot is not None else np.nan
        df["mc_q_lo"] = tot["q_lo"].ravel() if tot is not None and "q_lo" in tot else np.nan
        df["mc_q_hi"] = tot["q_hi"].ravel() if tot is not None and "q_hi" in tot else np.nan
        df["mc_invalid"] = (n - tot["n_valid"]).ravel() if tot is not None else 0
        for level in _mc_levels(mc.quantiles):
            p_lo, p_hi = _tails(level)
            for comp, col in _MC_COMPONENTS:
                q = (got[comp] or {}).get("quantiles", {})
                q = {round(k, 12): v for k, v in q.items()}
                t = level_tag(level)
                df[f"mc_lo_{col}_{t}"] = q[p_lo].ravel() if p_lo in q else np.nan
                df[f"mc_hi_{col}_{t}"] = q[p_hi].ravel() if p_hi in q else np.nan
        z = df[["z_noise", "z_pois", "z_tot"]].abs()
        df["z_flag"] = (z > z_bound).any(axis=1)
    for k, v in reversed(list(meta.items())):
        df.insert(0, k, v)
    return df


def results_table(
    lz: Linearised,
    settings,
    *,
    dataset: str | None = None,
    data_status: str | None = None,
    mc: dict | None = None,
    zero_floor: bool = False,
    small_events: float = SMALL_EVENTS,
    z_bound: float = Z_BOUND,
) -> pd.DataFrame:
    """Assemble the tidy results table for one linearised dataset.

    Parameters
    ----------
    lz : Linearised
        From :func:`demonoise.uncertainty.propagation.linearise`.
    settings : iterable of NoiseSetting (or noise models)
    mc : dict, optional
        ``{index of setting: MonteCarloResult}`` for the settings that were simulated.
    zero_floor : bool
        Whether those Monte Carlo runs floored noisy counts at zero.
    """
    frames = []
    mc = mc or {}
    for i, s in enumerate(settings):
        s = s if isinstance(s, NoiseSetting) else NoiseSetting.from_model(s)
        meta = {
            "dataset": dataset or lz.counts.name,
            "data_status": data_status or lz.counts.provenance.data_status,
            "setting": s.key,
            "noise_model": s.kind,
            "ptable": s.ptable,
            "zero_floor": bool(zero_floor and i in mc),
            "granularity": lz.granularity,
            "V": s.V,
        }
        for block in lz.blocks.values():
            frames.append(_block_frame(lz, block, s, meta, mc.get(i), small_events, z_bound))
    df = pd.concat(frames, ignore_index=True)
    if "mc_n" not in df:
        return df[COLUMNS]
    for col in MC_COLUMNS:
        if col not in df:
            df[col] = np.nan
    df["z_flag"] = df["z_flag"].fillna(False).astype(bool)
    levels = sorted({lv for r in mc.values() for lv in _mc_levels(r.quantiles)})
    bands = [c for lv in levels for c in mc_band_columns(lv)]
    for col in bands:
        if col not in df:
            df[col] = np.nan
    return df[COLUMNS + MC_COLUMNS + bands]
