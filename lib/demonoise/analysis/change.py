"""Is a published change real? The change of every indicator between two years (or two
pooled windows) under noise, as one tidy table -- what ``demonoise change`` writes.

One row per region, sex, indicator, age, noise setting and pooling ``k``: the values of
the two windows (``value_from``, ``value_to``), the ``change``, its noise, Poisson and
total sd (first order, the shared cells' covariance included:
:mod:`demonoise.uncertainty.change`), the admixture
``A = sqrt(1 + Var_noise / Var_pois) - 1``, ``z_total = change / sd_total`` and
``z_poisson = change / sd_poisson`` (what the change would look like without noise), the
smallest detectable change ``mdc_total = (z_{1-alpha/2} + z_{power}) sd_total`` and
``mdc_poisson`` (without noise), the first-order noise bias of the change (p-tables),
and the level of the later window with its own sds (``sd_*_to``, ``admixture_to``) --
what pooling buys. With ``mc > 0`` a Monte Carlo check of the change's sds
(``mc_sd_*`` and ``z_mc_*`` = ``(sd_MC / sd_analytic - 1) sqrt(2N)``) for the
simulated indicators.

Where a value rests on no events (a cell without deaths or births in either window) its
Poisson sd is 0: ``z_poisson`` and ``admixture`` are then undefined and written as NaN,
never as an infinite or zero figure (section "Admixture" of docs/design.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from demonoise.analysis.results import NoiseSetting
from demonoise.core.counts import Counts, Panel
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import INDICATORS
from demonoise.uncertainty.change import (
    change_moments,
    level_moments,
    linearise_change,
    mdc_factor,
    monte_carlo_change,
)
from demonoise.uncertainty.montecarlo import z_score
from demonoise.uncertainty.propagation import admixture

__all__ = ["CHANGE_COLUMNS", "change_table", "setting_label"]

#: The columns every change table starts with (then ``pool``, windows, bias and the level's sds).
CHANGE_COLUMNS = (
    "region",
    "sex",
    "indicator",
    "age",
    "setting",
    "year_from",
    "year_to",
    "value_from",
    "value_to",
    "change",
    "sd_noise",
    "sd_poisson",
    "sd_total",
    "admixture",
    "z_total",
    "z_poisson",
    "mdc_total",
    "mdc_poisson",
)


def setting_label(setting: NoiseSetting) -> str:
    """``"V=1"`` for the generic model, ``"ptable v01"`` for a p-table."""
    if setting.kind == "ptable":
        return setting.ptable if setting.ptable.startswith("ptable") else f"ptable {setting.ptable}"
    return f"V={setting.V:g}"


def _ratio(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def _rows(cl, ind: str, setting: NoiseSetting, factor: float, pool: int, mc) -> pd.DataFrame:
    blk = cl.w_to.blocks[ind]
    m = change_moments(cl, ind, setting.model, setting.noised)
    lv = level_moments(cl.w_to, ind, setting.model, setting.noised)
    sd_n, sd_p = np.sqrt(m["var_noise"]), np.sqrt(m["var_pois"])
    sd_t = np.sqrt(m["var_noise"] + m["var_pois"])
    R, S, K = m["change"].shape
    regions = np.array(cl.published.codes)
    cols = {
        "region": np.repeat(regions, S * K),
        "sex": np.tile(np.repeat(np.array(blk.sexes), K), R),
        "indicator": ind,
        "age": np.tile(blk.age_lower.astype(float), R * S),
        "setting": setting_label(setting),
        "year_from": cl.w_from.window.last,
        "year_to": cl.w_to.window.last,
        "value_from": cl.w_from.blocks[ind].lin.value,
        "value_to": blk.lin.value,
        "change": m["change"],
        "sd_noise": sd_n,
        "sd_poisson": sd_p,
        "sd_total": sd_t,
        "admixture": admixture(m["var_pois"], m["var_noise"]),
        "z_total": _ratio(m["change"], sd_t),
        "z_poisson": _ratio(m["change"], sd_p),
        "mdc_total": factor * sd_t,
        "mdc_poisson": factor * sd_p,
        "pool": pool,
        "window_from": cl.w_from.window.label,
        "window_to": cl.w_to.window.label,
        "bias_noise": m["bias"],
        "sd_noise_to": np.sqrt(lv["var_noise"]),
        "sd_poisson_to": np.sqrt(lv["var_pois"]),
        "sd_total_to": np.sqrt(lv["var_noise"] + lv["var_pois"]),
        "admixture_to": admixture(lv["var_pois"], lv["var_noise"]),
        "events_to": blk.events,
        "noise_model": setting.kind,
        "V": setting.V,
        "ptable": setting.ptable,
    }
    if mc is not None:
        n = mc["n"]
        for comp, an in (("noise", sd_n), ("poisson", sd_p), ("total", sd_t)):
            sd = mc[(ind, "change", comp)]["sd"]
            cols[f"mc_sd_{comp}"] = sd
            cols[f"z_mc_{comp}"] = z_score(sd, an, n)
    return pd.DataFrame({k: (np.asarray(v).ravel() if np.ndim(v) else v) for k, v in cols.items()})


def change_table(
    panel: Panel | Counts,
    settings: Sequence,
    *,
    year_from: int,
    year_to: int,
    pools: Sequence[int] = (1,),
    granularity: str = "single",
    indicators=INDICATORS,
    e_ages=None,
    alpha: float = 0.05,
    power: float = 0.8,
    mc: int = 0,
    mc_indicators=("e", "tfr"),
    seed: int = 20230101,
    **layout_kw,
) -> pd.DataFrame:
    """The change table (module notes) of ``panel`` from ``year_from`` to ``year_to``.

    Parameters
    ----------
    panel : Panel or Counts
        Consecutive years (:func:`demonoise.io.datasets.load_panel`).
    settings : sequence of NoiseSetting or noise models
        (:func:`demonoise.analysis.compute.noise_settings`).
    year_from, year_to : int
        The last years of the two windows.
    pools : sequence of int
        Window lengths ``k``: each gives rows with ``pool = k``, comparing the ``k`` years
        ending with ``year_from`` with the ``k`` years ending with ``year_to``.
    alpha, power : float
        Two-sided significance level and power of the smallest detectable change
        (default 5 % and 80 %: 2.80 sd).
    mc : int
        Monte Carlo replicates for ``mc_indicators`` (0: analytic only).
    """
    factor = mdc_factor(alpha, power)
    settings = [s if isinstance(s, NoiseSetting) else NoiseSetting.of(s) for s in settings]
    if not settings:
        raise ParameterError("no noise given: pass at least one V or one p-table")
    frames = []
    for k in pools:
        cl = linearise_change(
            panel,
            year_from,
            year_to,
            pool=int(k),
            granularity=granularity,
            indicators=indicators,
            e_ages=e_ages,
            **layout_kw,
        )
        for s in settings:
            runs = None
            sim = [i for i in mc_indicators if i in cl.diffs]
            if mc and sim:
                runs = monte_carlo_change(cl, s.model, n=mc, seed=seed, indicators=sim, noised=s.noised)
                runs["n"] = mc
            for ind in cl.diffs:
                frames.append(_rows(cl, ind, s, factor, int(k), runs if ind in sim else None))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "dataset", getattr(panel, "name", ""))
    df.attrs.update(alpha=alpha, power=power, mdc_factor=factor)
    return df
