r"""The options behind a recommended ``V``: what an office can do when one small region
binds the whole country.

The recommended ``V`` (:func:`demonoise.analysis.decision.recommended_v`) is the smallest
``V_max`` over a country's regions and sexes, so a single small region can set it. The
numbers an office weighs against that are computed here, each by the library's own
calibration, never estimated from the others:

p-table family
    The largest ``V`` of the p-table family that meets the same threshold everywhere
    (already in the recommended table, one row per family).
5-year age groups
    The same calibration with deaths, births and population published in 5-year groups
    (0-4, ..., 85+; mothers 15-19, ..., 45-49): the recommended ``V`` then, and the factor
    by which the noise sd of the indicator falls in the binding region and sex,
    ``sd_noise(single) / sd_noise(5y)`` at ``V = 1``. Under the generic model the noise
    variance of any indicator is linear in ``V`` (``Var_noise = V * g' g``, the gradient
    over the noised cells), so the factor is the same at every ``V``.
The binding region apart
    The recommended ``V`` over the country's other regions (the country's own row stays:
    its published cells include the region's), with the region and sex that bind then.

References
----------
Eurostat (2025). Impact of noise-based disclosure control on demographic indicators
(reference year 2023) -- the generic model, the admixture and the 5-year alternative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from demonoise.analysis.compute import compute, noise_settings
from demonoise.analysis.decision import check_recommend, recommended_v, vmax_table
from demonoise.core.counts import Counts
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import HEADLINES, SEX_WORDS

__all__ = ["OPTION_COLUMNS", "decision_options", "decision_text"]

OPTION_COLUMNS = [
    "country", "indicator", "threshold", "V_recommended", "V_shown", "region", "region_name", "sex", "population",
    "V_without", "V_without_shown", "region_without", "region_name_without", "sex_without",
    "sd_ratio_5y", "V_recommended_5y", "V_5y_shown",
]  # fmt: skip


def _generic(recommended: pd.DataFrame, country: str) -> pd.Series:
    g = recommended[(recommended["family"] == "generic") & (recommended["country"] == country)]
    if g.empty:
        raise ParameterError(f"recommended V: no row of the generic model for {country}")
    return g.iloc[0]


def _without(calibration: pd.DataFrame, binding: pd.Series, rec: dict) -> dict:
    """The recommended V over the other regions of the country (generic model)."""
    gen = calibration[(calibration["family"] == "generic") & (calibration["country"] == binding["country"])]
    rest = gen[gen["region"] != binding["region"]]
    if rest.empty or binding["range_status"] != "within" or rest["region"].nunique() < 1:
        return {}
    if (rest["nuts_level"] > 0).sum() == 0:  # only the country's own row is left: one region
        return {}
    r = recommended_v(rest, rec).iloc[0]
    return {
        "V_without": float(r["V_recommended"]),
        "V_without_shown": r["V_shown"],
        "region_without": r["region"],
        "region_name_without": r["region_name"],
        "sex_without": r["sex"],
    }


def _noise_sd(counts: Counts, granularity: str, headline: str, region: str, sex: str) -> float:
    """The noise sd of a headline indicator at V = 1 in one region and sex."""
    h = HEADLINES[headline]
    e_ages = [int(h.age)] if h.indicator == "e" else None
    res = compute(counts, noise_settings([1.0]), granularity=granularity, indicators=(h.indicator,), e_ages=e_ages)
    row = res[(res["region"] == region) & (res["sex"] == sex) & (res["indicator"] == h.indicator)]
    if h.indicator == "e":
        row = row[row["age"] == h.age]
    if len(row) != 1:
        raise ParameterError(f"no single {headline} row for {region}, sex {sex}, granularity {granularity}")
    return float(row["sd_noise"].iloc[0])


def _five_year(counts: Counts, binding: pd.Series, rec: dict, threshold: float) -> dict:
    """The recommended V and the fall of the noise sd when the counts are published in 5-year groups."""
    ind = rec["indicator"]
    cal5 = vmax_table(counts, [threshold], indicators=(ind,), family="generic", granularity="5y")
    r5 = recommended_v(cal5, rec).iloc[0]
    out = {"V_recommended_5y": float(r5["V_recommended"]), "V_5y_shown": r5["V_shown"]}
    if binding["range_status"] == "within" and binding["sex"]:
        sub = counts.select(country=binding["country"])
        single = _noise_sd(sub, "single", ind, binding["region"], binding["sex"])
        five = _noise_sd(sub, "5y", ind, binding["region"], binding["sex"])
        out["sd_ratio_5y"] = single / five if five > 0 else math.nan
    return out


def decision_options(
    counts: Counts,
    calibration: pd.DataFrame,
    recommended: pd.DataFrame,
    *,
    recommend=None,
    granularity: str = "single",
) -> pd.DataFrame:
    """The options beside the recommended ``V`` of each country (generic model).

    Parameters
    ----------
    counts : Counts
        The counts the calibration was made from.
    calibration : DataFrame
        :func:`~demonoise.analysis.decision.vmax_table` (the generic family at least).
    recommended : DataFrame
        :func:`~demonoise.analysis.decision.recommended_v` of ``calibration``.
    recommend : mapping, optional
        ``{"indicator": ..., "threshold": ...}`` as given to ``recommended_v``.
    granularity : str
        The granularity of ``calibration``; the 5-year option is computed only from
        single ages (a report already in 5-year groups has it as its main figure).

    Returns
    -------
    DataFrame
        One row per country, columns :data:`OPTION_COLUMNS`: the recommended ``V`` and
        its binding region and sex; ``V_without*`` the recommended ``V`` without that
        region and the region and sex that bind then (nan / empty for a country of one
        region); ``sd_ratio_5y`` the noise sd of the indicator in the binding region and
        sex from single ages over that from 5-year groups, and ``V_recommended_5y`` the
        recommended ``V`` from 5-year groups (nan when ``granularity`` is not single).
    """
    ind, t = check_recommend(recommend, sorted(calibration["threshold"].unique()))
    rec = {"indicator": ind, "threshold": t}
    rows = []
    for cc in recommended["country"].drop_duplicates():
        b = _generic(recommended, cc)
        row = {k: b[k] for k in ("country", "indicator", "threshold", "V_recommended", "V_shown", "region")}
        row.update(region_name=b["region_name"], sex=b["sex"], population=b["population"])
        row.update(_without(calibration, b, rec))
        if granularity == "single":
            row.update(_five_year(counts.select(country=cc), b, rec, t))
        rows.append(row)
    out = pd.DataFrame(rows).reindex(columns=OPTION_COLUMNS)
    out.attrs["name"] = "options"
    return out


def _fmt_v(v: float) -> str:
    return f"{v:.3g}" if np.isfinite(v) else "any V"


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _pct(t: float) -> str:
    return f"{100 * t:.3g} %"


def _regions_failing(decision: pd.DataFrame, setting: str, threshold: float, heads: Sequence[str]) -> pd.DataFrame:
    d = decision[(decision["setting"] == setting) & decision["measure"].isin(heads) & (decision["nuts_level"] > 0)]
    worst = d.groupby(["region", "region_name"], sort=False)["admixture"].max().reset_index()
    return worst[~(worst["admixture"].astype(float) <= threshold)]


def decision_text(
    decision: pd.DataFrame,
    recommended: pd.DataFrame,
    options: pd.DataFrame,
    *,
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
) -> str:
    """A decision text a methodologist can paste into a quality report.

    It names the smallest ``V`` of the generic model in the report and the regions where
    it fails the recommendation's threshold for any of ``headlines`` (worst of women, men
    and both sexes), then the options for those regions: each p-table family's largest
    ``V``, publishing 5-year age groups (the fall of the noise sd and the ``V`` then), and
    treating the binding region apart (the recommended ``V`` without it). Every number is
    a cell of ``decision``, ``recommended`` or ``options``.

    Parameters
    ----------
    decision : DataFrame
        :func:`~demonoise.analysis.decision.decision_table` of one country.
    recommended, options : DataFrame
        :func:`~demonoise.analysis.decision.recommended_v` and :func:`decision_options`.
    headlines : sequence of str
    """
    o = options.iloc[0]
    t = float(o["threshold"])
    gen = decision[decision["noise_model"] == "generic"]
    what = _and([h.replace("tfr", "the TFR") for h in headlines])
    if gen.empty:
        return f"The recommended V for {o['indicator']} at {_pct(t)} is {o['V_shown']}."
    V = float(gen["V"].min())
    setting = gen.loc[gen["V"] == V, "setting"].iloc[0]
    bad = _regions_failing(decision, setting, t, headlines)
    lead = f"V = {V:g} keeps the noise admixture at or below {_pct(t)} of the Poisson uncertainty of {what}"
    if bad.empty:
        return lead + " in every region (worst of women, men and both sexes)."
    names = _and([f"{r.region} ({r.region_name})" for r in bad.itertuples()])
    regions = decision.loc[decision["nuts_level"] > 0, "region"].nunique()
    if len(bad) == regions:  # no region meets it: say so, not "everywhere except" all of them
        text = lead.replace(" keeps ", " does not keep ") + f" in {names} (worst of women, men and both sexes). "
    else:
        text = lead + f" everywhere except {names} (worst of women, men and both sexes). "
    text += f"The recommended V for {o['indicator']} is {o['V_shown']}, set by {o['region']}"
    text += f" ({SEX_WORDS.get(o['sex'], o['sex'])}). For {'that region' if len(bad) == 1 else 'those regions'}: "
    opts = []
    for r in recommended[(recommended["family"] != "generic") & (recommended["country"] == o["country"])].itertuples():
        fam = r.family.removeprefix("ptable ")
        if r.range_status == "within":
            opts.append(f"p-tables built with {fam} meet it up to V = {r.V_shown}")
        elif r.range_status == "beyond":
            opts.append(f"p-tables built with {fam} meet it at every V up to {r.range_hi:g}")
    if np.isfinite(o["sd_ratio_5y"]):
        opts.append(
            f"publishing 5-year age groups lowers the noise sd of {o['indicator']} in {o['region']} "
            f"{o['sd_ratio_5y']:.2g} times (recommended V then {_fmt_v(o['V_recommended_5y'])})"
        )
    if isinstance(o["region_without"], str) and o["region_without"]:
        opts.append(
            f"or treat {o['region']} apart (the recommended V without it: {o['V_without_shown']}, "
            f"set by {o['region_without']})"
        )
    return text + "; ".join(opts) + "."
