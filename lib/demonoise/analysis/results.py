"""The tidy results table: one row per dataset / noise model / granularity / V / region /
sex / indicator / age.

Columns (all rows)
------------------
dataset, data_status
    Dataset name and its provenance label ("real", or "demonstration data: population
    real (Eurostat), deaths and births modelled, ...").
noise_model, ptable, zero_floor, granularity, V
    The noise: ``generic`` (integer noise of variance ``V`` on every published cell) or
    ``ptable`` (Cell Key Method, ``ptable`` names the table; ``V`` its nominal
    variance); ``zero_floor`` whether the Monte Carlo floored noisy counts at zero (the
    analytic columns never do); the publication granularity.
region, region_name, nuts_level, country, sex, indicator, age, age_group
    ``age`` is the lower bound of the interval (``nan`` for TFR); ``age_group`` its
    Eurostat-style label.
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
    ``z = (sd_MC / sd_analytic - 1) sqrt(2N)``;
z_flag
    ``|z| > z_bound`` (default :data:`~demonoise.core.vocabulary.Z_BOUND`, 5) in any
    component: analytic and Monte Carlo disagree beyond sampling error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from demonoise.core.vocabulary import SMALL_EVENTS, Z_BOUND
from demonoise.uncertainty.montecarlo import MonteCarloResult, z_score
from demonoise.uncertainty.propagation import (
    TABLES,
    Linearised,
    admixture,
    check_noised,
    noise_cell_moments,
    poisson_cell_variance,
)

__all__ = ["NoiseSetting", "results_table", "COLUMNS"]

COLUMNS = [
    "dataset", "data_status", "noise_model", "ptable", "zero_floor", "granularity", "V",
    "region", "region_name", "nuts_level", "country", "sex", "indicator", "age", "age_group",
    "value", "events", "exposure", "var_pois", "var_noise", "var_tot", "sd_pois", "sd_noise", "sd_tot",
    "rel_pois", "rel_noise", "rel_tot", "admixture", "bias_noise", "small_count",
]  # fmt: skip

MC_COLUMNS = [
    "mc_n", "mc_sd_noise", "mc_sd_pois", "mc_sd_tot", "mc_mean_tot", "mc_q_lo", "mc_q_hi", "mc_invalid",
    "z_noise", "z_pois", "z_tot", "z_flag",
]  # fmt: skip


@dataclass(frozen=True)
class NoiseSetting:
    """A noise model with the labels it carries into the results table."""

    model: object
    kind: str = "generic"  # "generic" | "ptable"
    V: float = float("nan")
    ptable: str = ""
    noised: tuple = TABLES

    @classmethod
    def of(cls, model, noised=TABLES) -> NoiseSetting:
        table = getattr(model, "table", None)
        kind = "ptable" if table is not None else "generic"
        V = getattr(model, "nominal_variance", None)
        V = float("nan") if V is None else float(V)
        return cls(model, kind, V, table.label if table is not None else "", check_noised(noised))


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
    df.insert(4, "sex", np.tile(np.repeat(np.array(sexes), K), R))
    df.insert(5, "indicator", block.indicator)
    df.insert(6, "age", np.tile(block.age_lower, R * S))
    df.insert(7, "age_group", np.tile(np.array(block.age_labels, dtype=object), R * S))
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
        s = s if isinstance(s, NoiseSetting) else NoiseSetting.of(s)
        meta = {
            "dataset": dataset or lz.counts.name,
            "data_status": data_status or lz.counts.provenance.status_label,
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
    return df[COLUMNS + MC_COLUMNS]
