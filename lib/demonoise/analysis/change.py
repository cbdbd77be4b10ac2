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

The chapter "Change since the previous year" shows three tables computed here from it
(:func:`change_chapter`): the headline changes (e0, e65, TFR) with their verdicts
(:func:`change_verdicts`: significant without noise? still significant with it, per
setting?), the smallest detectable change per region and setting with and without noise
(:func:`detectable_changes`), and every year's level of e0 and the TFR with its Poisson
and total bands per setting (:func:`level_series`); the chapter's sentences say which
changes noise leaves significant (:func:`change_points`) and how much it widens the
smallest detectable change (:func:`detectable_points`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from demonoise.analysis.settings import NoiseSetting, setting_labels
from demonoise.core.counts import Counts, Panel
from demonoise.core.errors import ParameterError
from demonoise.core.formats import fmt_fixed, fmt_signed
from demonoise.core.vocabulary import HEADLINES, INDICATORS, SEX_WORDS
from demonoise.uncertainty.change import (
    Window,
    change_moments,
    level_moments,
    linearise_change,
    linearise_window,
    mdc_factor,
    monte_carlo_change,
    publish_panel,
)
from demonoise.uncertainty.montecarlo import z_score
from demonoise.uncertainty.propagation import admixture

__all__ = [
    "CHANGE_COLUMNS",
    "VERDICTS",
    "ChangeChapter",
    "change_table",
    "change_verdicts",
    "detectable_changes",
    "level_series",
    "change_chapter",
    "country_chapter",
    "chapter_settings",
    "region_order",
    "chapter_rows",
    "data_words",
    "series_frame",
    "change_points",
    "detectable_points",
]

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
        "setting": setting.key,
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
    progress=None,
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
    progress : callable, optional
        ``progress(done)`` after each Monte Carlo block (replicates done in the run).
    """
    factor = mdc_factor(alpha, power)
    settings = [s if isinstance(s, NoiseSetting) else NoiseSetting.from_model(s) for s in settings]
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
                runs = monte_carlo_change(
                    cl, s.model, n=mc, seed=seed, indicators=sim, noised=s.noised, progress=progress
                )
                runs["n"] = mc
            for ind in cl.diffs:
                frames.append(_rows(cl, ind, s, factor, int(k), runs if ind in sim else None))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "dataset", getattr(panel, "name", ""))
    df.attrs.update(alpha=alpha, power=power, mdc_factor=factor)
    return df


# ----------------------------------------------------------------------------- the chapter's tables
#: Verdict of a published change at significance ``alpha`` (two-sided), by key: its words.
VERDICTS = {
    "robust": "significant, also with noise",
    "lost": "significant without noise only",
    "not significant": "not significant",
    "undefined": "undefined (no events)",
}

#: Columns that say which noise setting a row is about.
_SETTING_COLS = ("setting", "noise_model", "V", "ptable")


def _headline_rows(table: pd.DataFrame, headlines: Sequence[str]) -> pd.DataFrame:
    """The rows of the headline indicators (keys of :data:`~demonoise.core.vocabulary.HEADLINES`)
    with their label in a ``headline`` column, in the order asked."""
    parts = []
    for key in headlines:
        if key not in HEADLINES:
            raise ParameterError(f"unknown headline indicator {key!r}; choose from {', '.join(HEADLINES)}")
        h = HEADLINES[key]
        m = table["indicator"] == h.indicator
        if h.age is not None:
            m &= np.isclose(table["age"].astype(float), h.age)
        parts.append(table[m].assign(headline=h.label))
    return pd.concat(parts, ignore_index=True)


def change_verdicts(
    table: pd.DataFrame, *, headlines: Sequence[str] = ("e0", "e65", "tfr"), alpha: float | None = None
) -> pd.DataFrame:
    """The headline changes of a change table (:func:`change_table`, one year on year or one
    pooling ``k``) with their verdicts at two-sided significance ``alpha``.

    A change is *significant without noise* when ``|z_poisson| > z_{1 - alpha/2}`` (1.96 at
    5 %) and *still significant with noise* when ``|z_total| > z_{1 - alpha/2}``; since
    ``sd_total >= sd_poisson``, a change not significant without noise is not significant
    with it either. Verdict keys (:data:`VERDICTS`): ``robust`` (both), ``lost``
    (without noise only), ``not significant``, ``undefined`` (no events: ``z_poisson``
    NaN).

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`change_table`.
    headlines : sequence of str
        Keys of :data:`~demonoise.core.vocabulary.HEADLINES` (``e0``, ``e65``, ``tfr``).
    alpha : float, optional
        Default: the table's own (``table.attrs["alpha"]``, else 5 %).

    Returns
    -------
    pandas.DataFrame
        One row per region, sex, headline and setting: ``headline``, the change table's
        columns, ``z_crit``, ``significant_poisson``, ``significant_total``, ``verdict``.

    Raises
    ------
    ParameterError
        An unknown headline, ``alpha`` outside (0, 1), a table of several poolings.
    """
    alpha = float(table.attrs.get("alpha", 0.05) if alpha is None else alpha)
    if not 0 < alpha < 1:
        raise ParameterError(f"alpha must lie in (0, 1), got {alpha}")
    if "pool" in table and table["pool"].nunique() > 1:
        raise ParameterError(f"a change table of several poolings {sorted(table['pool'].unique())}: pick one")
    crit = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    d = _headline_rows(table, headlines)
    zp, zt = d["z_poisson"].to_numpy(float), d["z_total"].to_numpy(float)
    d["z_crit"] = crit
    d["significant_poisson"] = np.abs(np.nan_to_num(zp)) > crit
    d["significant_total"] = np.abs(np.nan_to_num(zt)) > crit
    d["verdict"] = np.select(
        [~np.isfinite(zp), d["significant_total"], d["significant_poisson"]],
        ["undefined", "robust", "lost"],
        "not significant",
    )
    d.attrs.update(table.attrs, alpha=alpha, z_crit=crit)
    return d.reset_index(drop=True)


def detectable_changes(table: pd.DataFrame, *, headlines: Sequence[str] = ("e0", "e65", "tfr")) -> pd.DataFrame:
    """The smallest detectable change of each headline per region, sex and setting, with and
    without noise.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`change_table` (its ``mdc_*`` columns hold the factor
        ``z_{1 - alpha/2} + z_{power}``, 2.8016 at 5 % and 80 %, times the sd).
    headlines : sequence of str
        Keys of :data:`~demonoise.core.vocabulary.HEADLINES`.

    Returns
    -------
    pandas.DataFrame
        ``mdc_poisson`` (Poisson alone), ``mdc_total`` (Poisson and the setting's noise),
        ``mdc_ratio = mdc_total / mdc_poisson`` (how much the setting widens it,
        ``sqrt(1 + Var_noise / Var_pois)``; NaN without events) and ``mdc_added`` (the
        difference, in the indicator's units), with the rows' keys and sds.
    """
    d = _headline_rows(table, headlines)
    keep = [
        "region", "sex", "headline", "indicator", "age", *_SETTING_COLS, "year_from", "year_to",
        "pool", "window_from", "window_to", "sd_poisson", "sd_noise", "sd_total", "mdc_poisson", "mdc_total",
    ]  # fmt: skip
    d = d[[c for c in keep if c in d]].copy()
    d["mdc_ratio"] = _ratio(d["mdc_total"], d["mdc_poisson"])
    d["mdc_added"] = d["mdc_total"] - d["mdc_poisson"]
    d.attrs.update(table.attrs)
    return d.reset_index(drop=True)


def level_series(
    panel: Panel | Counts,
    settings: Sequence,
    *,
    headlines: Sequence[str] = ("e0", "tfr"),
    years: Sequence[int] | None = None,
    confidence: float = 0.95,
    granularity: str = "single",
    **layout_kw,
) -> pd.DataFrame:
    """Each year's level of the headline indicators with its Poisson, noise and total sd per
    setting, and the bands ``value +- z sd_poisson`` and ``value + bias +- z sd_total``
    (``z = Phi^-1((1 + confidence) / 2)``; ``bias`` the setting's first-order bias, 0 for the
    generic model) -- the time series the chapter draws.

    Every year is a window of one year of the panel as published (:func:`~demonoise.uncertainty.change.publish_panel`):
    the same values and sds as the single-year analysis of that year.

    Parameters
    ----------
    panel : Panel or Counts
    settings : sequence of NoiseSetting or noise models
    headlines : sequence of str
        Keys of :data:`~demonoise.core.vocabulary.HEADLINES`.
    years : sequence of int, optional
        Default: every year of the panel.
    confidence : float
        Level of the bands, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per region, sex, headline, year and setting: ``region``, ``region_name``,
        ``nuts_level``, ``sex``, ``headline``, ``indicator``, ``age``, ``year``, the setting's
        columns, ``value``, ``sd_poisson``, ``sd_noise``, ``sd_total``, ``bias_noise``,
        ``admixture``, ``events``, ``exposure`` (e0: the person-years of every age; TFR: the
        women's 15-49), ``lo_poisson``, ``hi_poisson``, ``lo_total``,
        ``hi_total``, ``confidence``.

    Raises
    ------
    ParameterError
        A year not in the panel, an unknown headline, no setting, ``confidence`` outside (0, 1).
    """
    if isinstance(panel, Counts):
        panel = Panel.from_counts([panel])
    if not 0 < float(confidence) < 1:
        raise ParameterError(f"confidence must lie in (0, 1), got {confidence}")
    settings = [s if isinstance(s, NoiseSetting) else NoiseSetting.from_model(s) for s in settings]
    if not settings:
        raise ParameterError("no noise given: pass at least one V or one p-table")
    hs = []
    for key in headlines:
        if key not in HEADLINES:
            raise ParameterError(f"unknown headline indicator {key!r}; choose from {', '.join(HEADLINES)}")
        hs.append(HEADLINES[key])
    inds = tuple(dict.fromkeys(h.indicator for h in hs))
    e_ages = sorted({float(h.age) for h in hs if h.indicator == "e"}) or None
    years = list(panel.years if years is None else years)
    for t in years:
        panel.index(t)
    z = NormalDist().inv_cdf(0.5 + float(confidence) / 2.0)
    fk = {k: layout_kw[k] for k in ("fert_min", "fert_max") if k in layout_kw}
    pub = publish_panel(panel, granularity, **fk)
    regions = panel.regions
    frames = []
    for t in years:
        wl = linearise_window(pub, Window(t, t), granularity=granularity, indicators=inds, e_ages=e_ages, **layout_kw)
        for s in settings:
            for h in hs:
                blk = wl.blocks[h.indicator]
                lv = level_moments(wl, h.indicator, s.model, s.noised)
                k = 0 if h.age is None else int(np.nonzero(np.isclose(blk.age_lower, h.age))[0][0])
                R, S = len(regions), len(blk.sexes)
                vp, vn = lv["var_pois"][..., k], lv["var_noise"][..., k]
                value, bias = lv["value"][..., k], np.broadcast_to(lv["bias"], lv["value"].shape)[..., k]
                sd_p, sd_n, sd_t = np.sqrt(vp), np.sqrt(vn), np.sqrt(vp + vn)
                cols = {
                    "region": np.repeat([r.code for r in regions], S),
                    "region_name": np.repeat([r.name for r in regions], S),
                    "nuts_level": np.repeat([r.level for r in regions], S),
                    "sex": np.tile(np.array(blk.sexes), R),
                    "headline": h.label,
                    "indicator": h.indicator,
                    "age": np.nan if h.age is None else float(h.age),
                    "year": int(t),
                    "setting": s.key,
                    "noise_model": s.kind,
                    "V": s.V,
                    "ptable": s.ptable,
                    "value": value,
                    "sd_poisson": sd_p,
                    "sd_noise": sd_n,
                    "sd_total": sd_t,
                    "bias_noise": bias,
                    "admixture": admixture(vp, vn),
                    "events": blk.events[..., k],
                    "exposure": blk.exposure[..., k],
                    "lo_poisson": value - z * sd_p,
                    "hi_poisson": value + z * sd_p,
                    "lo_total": value + bias - z * sd_t,
                    "hi_total": value + bias + z * sd_t,
                    "confidence": float(confidence),
                }
                frames.append(pd.DataFrame({c: (np.asarray(v).ravel() if np.ndim(v) else v) for c, v in cols.items()}))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "dataset", getattr(panel, "name", ""))
    return df


@dataclass(frozen=True)
class ChangeChapter:
    """The tables of the chapter "Change since the previous year" (:func:`change_chapter`).

    Attributes
    ----------
    table : pandas.DataFrame
        The change table (:func:`change_table`) of e0, e65 and the TFR, with ``region_name``,
        ``nuts_level`` and ``country``.
    verdicts : pandas.DataFrame
        :func:`change_verdicts` of ``table``.
    detectable : pandas.DataFrame
        :func:`detectable_changes` of ``table``.
    series : pandas.DataFrame
        :func:`level_series` of e0 and the TFR, every year of the panel.
    year_from, year_to : int
    alpha, power, confidence : float
    mdc_factor, z_crit : float
        ``z_{1 - alpha/2} + z_{power}`` and ``z_{1 - alpha/2}``.
    data_status : str
        The dataset's provenance label (real / modelled).
    table_status : dict
        The status of each table (``population``, ``deaths``, ``births``: ``real`` or
        ``modelled``), so that each indicator says what it rests on.
    implications : str
        What the data can't say (the dataset's provenance), if anything.
    """

    table: pd.DataFrame
    verdicts: pd.DataFrame
    detectable: pd.DataFrame
    series: pd.DataFrame
    year_from: int
    year_to: int
    alpha: float
    power: float
    confidence: float
    mdc_factor: float
    z_crit: float
    data_status: str
    table_status: dict
    implications: str = ""


def change_chapter(
    panel: Panel,
    settings: Sequence,
    *,
    country: str | None = None,
    year_from: int | None = None,
    year_to: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    confidence: float = 0.95,
    granularity: str = "single",
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
    series_headlines: Sequence[str] = ("e0", "tfr"),
) -> ChangeChapter:
    """Everything the chapter "Change since the previous year" shows, for one country.

    Parameters
    ----------
    panel : Panel
        At least two consecutive years (:func:`demonoise.io.datasets.load_panel`).
    settings : sequence of NoiseSetting or noise models
    country : str, optional
        Keep the country's rows and its NUTS 2 regions (:meth:`Panel.select`).
    year_from, year_to : int, optional
        Default: the panel's last two years.
    alpha, power : float
        The test and the smallest detectable change (default 5 % two-sided, 80 %).
    confidence : float
        Level of the time series' bands.

    Raises
    ------
    ParameterError
        A panel of one year, years not in the panel, ``year_to <= year_from``, no setting.
    """
    if isinstance(panel, Counts):
        panel = Panel.from_counts([panel])
    if len(panel.years) < 2:
        raise ParameterError(
            f"dataset {panel.name!r} holds one year ({panel.years[0]}): a change needs two or more years"
        )
    if country is not None:
        panel = panel.select(country=country)
    year_to = int(panel.years[-1] if year_to is None else year_to)
    year_from = int(year_to - 1 if year_from is None else year_from)
    hs = [HEADLINES[k] for k in headlines if k in HEADLINES]
    e_ages = sorted({float(h.age) for h in hs if h.indicator == "e"}) or None
    inds = tuple(dict.fromkeys(h.indicator for h in hs))
    table = change_table(
        panel,
        settings,
        year_from=year_from,
        year_to=year_to,
        indicators=inds,
        e_ages=e_ages,
        alpha=alpha,
        power=power,
        granularity=granularity,
    )
    meta = pd.DataFrame(
        {
            "region": [r.code for r in panel.regions],
            "region_name": [r.name for r in panel.regions],
            "nuts_level": [r.level for r in panel.regions],
            "country": [r.country for r in panel.regions],
        }
    )
    attrs = dict(table.attrs)
    table = table.merge(meta, on="region", how="left", validate="many_to_one")
    table.attrs.update(attrs)
    verdicts = change_verdicts(table, headlines=headlines, alpha=alpha)
    for c in ("region_name", "nuts_level", "country"):
        if c not in verdicts:
            verdicts[c] = verdicts["region"].map(meta.set_index("region")[c])
    series = level_series(panel, settings, headlines=series_headlines, confidence=confidence, granularity=granularity)
    return ChangeChapter(
        table=table,
        verdicts=verdicts,
        detectable=detectable_changes(table, headlines=headlines),
        series=series,
        year_from=year_from,
        year_to=year_to,
        alpha=alpha,
        power=power,
        confidence=confidence,
        mdc_factor=mdc_factor(alpha, power),
        z_crit=NormalDist().inv_cdf(1.0 - alpha / 2.0),
        data_status=panel.provenance.status_label,
        table_status={k: t.status for k, t in panel.provenance.tables.items()},
        implications=panel.provenance.implications or "",
    )


def country_chapter(dataset: str, country: str, settings: Sequence, *, confidence=0.95, **options) -> ChangeChapter:
    """:func:`change_chapter` of ``country`` in the multi-year ``dataset`` at ``settings`` (any
    form of :meth:`NoiseSetting.of`), computed now (under a second for a country of a dozen
    regions); ``confidence``: the level of the time series' bands, or the batch's list of
    levels (its first); ``options``: the years, ``alpha``, ``power``, ``granularity``.

    Raises
    ------
    ParameterError
        A dataset of one year, years not in it, an unknown p-table.
    """
    from demonoise.analysis.compute import noise_settings
    from demonoise.io.datasets import load_panel

    sets = [NoiseSetting.of(s) for s in settings]
    noise = noise_settings(
        [s.V for s in sets if s.is_generic], ptables=[s.as_parameter()["ptable"] for s in sets if not s.is_generic]
    )
    if isinstance(confidence, (list, tuple)):
        confidence = confidence[0] if confidence else 0.95
    return change_chapter(load_panel(dataset), noise, country=country, confidence=confidence, **options)


def chapter_settings(frame: pd.DataFrame, settings=None) -> list[NoiseSetting]:
    """The settings the chapter shows: those given (any form of :meth:`NoiseSetting.of`), else the table's."""
    from demonoise.analysis.settings import settings_in

    return [NoiseSetting.of(s) for s in settings] if settings else settings_in(frame)


def region_order(frame: pd.DataFrame) -> list[str]:
    """Regions: the country first, then the NUTS 2 regions by code."""
    return frame.drop_duplicates("region").sort_values(["nuts_level", "region"])["region"].tolist()


def chapter_rows(ch, table: str, headline: str, sex: str, settings=None, columns: Sequence[str] = ()):
    """The rows of one headline and sex of the chapter's ``table`` (``verdicts``, ``detectable``).

    Returns
    -------
    dict
        Per setting shown (:func:`chapter_settings`) its rows, indexed by region in
        :func:`region_order` of the verdicts (a missing region: NaN).
    pandas.DataFrame
        Per region and setting, the region, sex, headline, setting key and ``columns`` (the CSV).
    """
    t = getattr(ch, table)
    t = t[(t["headline"] == headline) & (t["sex"] == sex)]
    order = region_order(ch.verdicts)
    per = {
        st: t[st.mask(t)].drop_duplicates("region").set_index("region").reindex(order)
        for st in chapter_settings(t, settings)
    }
    fixed = {"sex": sex, "headline": headline}
    rows = [
        {"region": c} | fixed | {"setting": st.key} | g.loc[c, list(columns)].to_dict()
        for c in order
        for st, g in per.items()
    ]
    return per, pd.DataFrame(rows)


#: The tables each family of headlines rests on.
_FAMILY_TABLES = {"e": ("population", "deaths"), "tfr": ("population", "births")}


def data_words(ch: ChangeChapter, headline: str) -> str:
    """``"Data: population and deaths real (Eurostat)"``: the tables a headline rests on,
    grouped by their status (modelled first), for its tables' and charts' captions."""
    groups: dict[str, list[str]] = {}
    for t in _FAMILY_TABLES[HEADLINES[headline.lower()].indicator]:
        groups.setdefault(ch.table_status.get(t, "?"), []).append(t)
    parts = [
        f"{' and '.join(ts)} {s}" + (" (Eurostat)" if s == "real" else "")
        for s, ts in sorted(groups.items(), key=lambda kv: kv[0] != "modelled")
    ]
    return "Data: " + "; ".join(parts)


def series_frame(ch, headline: str = "e0", sex: str = "T") -> pd.DataFrame:
    """The yearly rows of one headline and sex, each with its report setting label (what the
    chapter's yearly charts draw)."""
    s = ch.series[(ch.series["headline"] == headline) & (ch.series["sex"] == sex)]
    return s.assign(setting=setting_labels(s).to_numpy())


def _name(headline: str) -> str:
    """How a sentence names a headline: ``e0``, ``e65``, ``the TFR``."""
    return "the TFR" if headline == "TFR" else headline


def _join(items: list[str]) -> str:
    return "".join(items) if len(items) <= 1 else ", ".join(items[:-1]) + " and " + items[-1]


def change_points(ch: ChangeChapter, headline: str = "e0", sex: str = "T", settings=None) -> str:
    """Markdown: which regions' changes are significant without noise, and which of them
    are still significant with each setting's noise."""
    v = ch.verdicts[(ch.verdicts["headline"] == headline) & (ch.verdicts["sex"] == sex)]
    sets = chapter_settings(v, settings)
    first = v[sets[0].mask(v)].set_index("region")
    order = region_order(v)
    sig = [c for c in order if bool(first.loc[c, "significant_poisson"])]
    n, n2 = len(order), int((v.drop_duplicates("region")["nuts_level"] > 0).sum())
    out = [
        f"The change of {_name(headline)} ({SEX_WORDS[sex]}) from {ch.year_from} to {ch.year_to} is significant "
        f"without noise ({100 * ch.alpha:g} %, two-sided) in {len(sig)} of {n} "
        f"({'the country and ' if n2 < n else ''}{n2} NUTS 2 regions)"
        + (f": {_join(sig)}." if sig and len(sig) < n else ", all of them." if sig else ".")
    ]
    if len(sig) < n:
        out.append(f"Not significant even without noise: {_join([c for c in order if c not in sig])}.")
    for st in sets if sig else ():
        s = v[st.mask(v)].set_index("region")
        lost = [c for c in sig if s.loc[c, "verdict"] == "lost"]
        at = st.phrase[:1].upper() + st.phrase[1:]
        if not lost:
            out.append(f"{at}, every one of them stays significant.")
            continue
        detail = _join(
            [f"{c} (z {fmt_fixed(s.loc[c, 'z_poisson'], 2)} without noise, {fmt_fixed(s.loc[c, 'z_total'], 2)} with it)"
             for c in lost]
        )  # fmt: skip
        out.append(f"{at}, {len(sig) - len(lost)} of them stay significant; noise takes it away from {detail}.")
    return " ".join(out)


#: Decimals of each headline's values and changes in the chapter's tables and sentences.
DECIMALS = {"e0": 2, "e65": 2, "TFR": 3}


def detectable_points(ch: ChangeChapter, headline: str = "e0", sex: str = "T", settings=None) -> str:
    """Markdown: per setting, the region whose smallest detectable change the noise widens
    most and the one it widens least, with the numbers."""
    d = ch.detectable[(ch.detectable["headline"] == headline) & (ch.detectable["sex"] == sex)]
    k = DECIMALS.get(headline, 3)
    unit = HEADLINES[headline.lower()].unit
    level = ch.verdicts.drop_duplicates("region").set_index("region")["nuts_level"]
    out = []
    for st in chapter_settings(d, settings):
        g = d[st.mask(d) & np.isfinite(d["mdc_ratio"])]
        if (g["region"].map(level) > 0).any():
            g = g[g["region"].map(level) > 0]  # the NUTS 2 regions; the country alone otherwise
        g = g.sort_values("mdc_ratio", kind="stable")
        if g.empty:
            continue
        hi, lo = g.iloc[-1], g.iloc[0]
        out.append(
            f"{st.phrase[:1].upper() + st.phrase[1:]} the smallest change of {_name(headline)} {hi['region']} can "
            f"detect grows from {_from_to(hi['mdc_poisson'], hi['mdc_total'], k)} {unit} "
            f"({fmt_signed(100 * (hi['mdc_ratio'] - 1), 1)} %, the most of the regions); "
            f"{lo['region']}'s from {_from_to(lo['mdc_poisson'], lo['mdc_total'], k)} "
            f"({fmt_signed(100 * (lo['mdc_ratio'] - 1), 1)} %, the least)."
        )
    return " ".join(out)


def _from_to(a: float, b: float, k: int) -> str:
    """``"0.734 to 0.740"``: two values with ``k`` decimals, or as many more (up to 6) as
    it takes for them to differ when they do."""
    while k < 6 and a != b and fmt_fixed(a, k) == fmt_fixed(b, k):
        k += 1
    return f"{fmt_fixed(a, k)} to {fmt_fixed(b, k)}"
