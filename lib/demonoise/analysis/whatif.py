r"""What-if runs on one region: scale its population, change the noise or the publication
granularity, and see every indicator's uncertainty move.

The questions analysts ask -- "what if V were 3?", "what if this region had 20 000
people?", "what if the counts were published in 5-year groups?" -- are answered by the
same library calls as the reports (:func:`demonoise.analysis.compute.compute`, which runs
:func:`demonoise.uncertainty.propagation.linearise` and :func:`demonoise.analysis.results.results_table`);
this module only prepares the counts and collects compact tables. The what-if and
teaching notebooks call it and show its tables.

Scaling rule
------------
A region of ``s`` times the size with the *same* rates: every published cell ``n``
(population on 1 January of ``t`` and ``t + 1``, deaths and births, each sex including
the published total ``T``, the unknown-age cells included) becomes

.. math:: n' = \lfloor s\,n + 1/2 \rfloor

(the nearest integer, halves rounded up). Deaths and births scale with the population,
so every rate ``D/E`` or ``b/W`` changes only by the rounding, at most by a relative
``1/(2 s n)`` per cell, and not at all when ``s`` is a whole number.

Consequences of the first-order formulas (docs/design.md, section "First-order propagation"), exact when ``s`` is a
whole number (no rounding), up to the rounding otherwise: every indicator is a function
of ratios of counts, hence homogeneous of degree 0 in the cells; its gradient with
respect to a cell is homogeneous of degree ``-1``. So the Poisson variance
``sum (df/dc)^2 c`` scales by ``1/s`` and the noise variance ``sum (df/dc)^2 V`` by
``1/s^2``: the relative Poisson sd falls as ``1/sqrt(s)``, the relative noise sd as
``1/s``, and ``Var_noise / Var_pois`` as ``1/s`` -- a region four times larger has half
the relative Poisson sd and a quarter of the relative noise sd. For ASMR without ``UNK``
deaths the relative Poisson variance is exactly ``1 / D'_x`` (the scaled deaths).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.analysis.settings import setting_labels
from demonoise.core.counts import Counts, Panel, Provenance
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.vocabulary import HEADLINES, INDICATORS, SEXES
from demonoise.uncertainty.propagation import TABLES

__all__ = [
    "scale_counts",
    "scale_panel",
    "what_if_settings",
    "what_if",
    "what_if_change",
    "sensitivity",
    "headline",
    "HEADLINE",
]

#: The indicators of the compact tables: (label, indicator, age), from the vocabulary's
#: headline indicators (e0, e65, TFR; the TFR's age is nan).
HEADLINE = tuple((h.label, h.indicator, float("nan") if h.age is None else float(h.age)) for h in HEADLINES.values())


# ------------------------------------------------------------------------- scaling
def _check_scale(scale) -> float:
    try:
        s = float(scale)
    except (TypeError, ValueError):
        raise ParameterError(f"scale must be a number > 0, got {scale!r}") from None
    if not (math.isfinite(s) and s > 0):
        raise ParameterError(f"scale must be a finite number > 0, got {scale!r}")
    return s


def _scaled(a: np.ndarray | None, s: float) -> np.ndarray | None:
    if a is None:
        return None
    return np.floor(s * a.astype(np.float64) + 0.5).astype(np.int64)


def scale_counts(counts: Counts, scale: float) -> Counts:
    r"""Every published cell of ``counts`` multiplied by ``scale`` and rounded to an integer.

    Implements :math:`n' = \lfloor s n + 1/2 \rfloor` on population (both 1 January
    stocks), deaths and births, every sex and age (``UNK`` included), so that rates stay
    the same up to rounding (see the module notes). ``scale = 1`` returns ``counts``
    itself. The provenance label says that the counts were scaled.

    Parameters
    ----------
    counts : Counts
    scale : float
        Factor ``s > 0``.

    Returns
    -------
    Counts

    Raises
    ------
    ParameterError
        ``scale`` not a finite number > 0.
    """
    s = _check_scale(scale)
    if s == 1.0:
        return counts
    p = counts.provenance
    label = f"{p.status_label}; what-if: every count scaled by {s:g} (rounded to integers)"
    return counts.replace(
        pop_start=_scaled(counts.pop_start, s),
        pop_end=_scaled(counts.pop_end, s),
        deaths=_scaled(counts.deaths, s),
        births=_scaled(counts.births, s),
        provenance=Provenance(p.population, p.deaths, p.births, label=label, implications=p.implications),
    )


def scale_panel(panel: Panel, scale: float) -> Panel:
    """Every year of ``panel`` scaled by :func:`scale_counts`. A stock two years share is
    the same published counts in both, so it scales to the same integers: the panel
    stays one of shared stocks (checked by :meth:`Panel.from_counts`)."""
    s = _check_scale(scale)
    if s == 1.0:
        return panel
    return Panel.from_counts([scale_counts(panel.year(t), s) for t in panel.years], name=panel.name)


# ------------------------------------------------------------------------- settings
def _as_list(x) -> list:
    if x is None:
        return []
    if isinstance(x, (str, bytes, Path)) or not isinstance(x, Iterable):
        return [x]
    return list(x)


def what_if_settings(
    V: Sequence[float] | float | None = (1,), ptable=None, *, D: int | None = None, noised=TABLES
) -> list:
    """Noise settings of a what-if run: the generic model at each ``V`` and one setting
    per p-table.

    Parameters
    ----------
    V : float or sequence of float
        Variances of the generic noise (``V`` is a variance; ``sqrt(V)`` the sd).
    ptable : str, path, PTable, or a sequence of them, optional
        Embedded table names (``"v01"``, ``"v03"``, ``"v04"``), p-table files, or
        :class:`~demonoise.noise.ptable.PTable` objects (e.g. from
        :func:`~demonoise.noise.ptable.build_ptable`).
    D : int, optional
        Maximum deviation of the generic noise.

    Returns
    -------
    list of NoiseSetting

    Raises
    ------
    ParameterError
        No noise at all, or an invalid ``V``/``D``.
    """
    from demonoise.analysis.compute import noise_settings
    from demonoise.analysis.settings import NoiseSetting
    from demonoise.noise.models import PTableNoise
    from demonoise.noise.ptable import PTable

    Vs = [float(v) for v in _as_list(V)]
    tables = _as_list(ptable)
    objs = [t for t in tables if isinstance(t, PTable)]
    named = [t for t in tables if not isinstance(t, PTable)]
    if not Vs and not tables:
        raise ParameterError("no noise given: pass at least one V or one p-table")
    out = noise_settings(Vs, D=D, ptables=named, noised=noised) if (Vs or named) else []
    out += [NoiseSetting.from_model(PTableNoise(t), noised) for t in objs]
    return out


# ------------------------------------------------------------------------- what-if
def _region_counts(counts: Counts, region: str) -> Counts:
    if not isinstance(region, str):
        raise ParameterError(f"region must be one region code (a string), got {region!r}")
    return counts.select([region])


def what_if(
    counts: Counts,
    region: str,
    *,
    scale: float = 1.0,
    V: Sequence[float] | float | None = (1,),
    ptable=None,
    granularity: str = "single",
    indicators=INDICATORS,
    e_ages=None,
    mc: int = 0,
    seed: int = 20230101,
    zero_floor: bool = False,
    D: int | None = None,
    workers: int | None = 1,
) -> pd.DataFrame:
    """The results table of one region under what-if settings.

    Parameters
    ----------
    counts : Counts
        A dataset (e.g. ``demonoise.io.datasets.load("be-2023")``).
    region : str
        Region code (NUTS 2 or country).
    scale : float
        Population and events multiplied by ``scale`` (integer-rounded,
        :func:`scale_counts`); 1 keeps the published counts.
    V : float or sequence of float
        Generic-noise variances (may be empty if ``ptable`` is given).
    ptable : str, path, PTable or sequence, optional
        Cell Key Method p-tables (:func:`what_if_settings`).
    granularity : {"single", "5y", "5y-infant"}
        Publication granularity of the noised cells (:func:`demonoise.core.layout.publish`).
    indicators : iterable of str
        Subset of ``("asfr", "tfr", "asmr", "e")``.
    e_ages : sequence of int, optional
        Ages of ``e_k`` (default every life-table age).
    mc : int
        Monte Carlo replicates for ``e`` and TFR (0: analytic only).
    seed, zero_floor, D, workers
        As in :func:`demonoise.analysis.compute.compute` and :func:`what_if_settings`;
        ``workers=1`` (default) runs the Monte Carlo in-process, which is faster for
        one region than starting a process pool.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`demonoise.analysis.results.results_table` (one per noise setting /
        sex / indicator / age), plus a column ``scale`` after ``granularity``. With
        ``scale != 1`` the ``data_status`` column says that the counts were scaled.

    Raises
    ------
    DataError
        Unknown region; or the scaled counts cannot make a life table (e.g. no deaths
        left in the open age group) -- the message names the scale, region and sex.
    ParameterError
        Invalid ``scale``, ``V``, p-table, granularity or indicator.
    """
    from demonoise.analysis.compute import compute

    s = _check_scale(scale)
    settings = what_if_settings(V, ptable, D=D)
    sub = scale_counts(_region_counts(counts, region), s)
    try:
        df = compute(
            sub,
            settings,
            granularity=granularity,
            indicators=tuple(indicators),
            e_ages=e_ages,
            mc=int(mc),
            seed=seed,
            zero_floor=zero_floor,
            workers=workers,
        )
    except DataError as e:
        if s == 1.0:
            raise
        raise type(e)(f"{e.reason} (after scaling the counts by {s:g})", **e.location) from None
    df.insert(df.columns.get_loc("granularity") + 1, "scale", s)
    return df


def headline(df: pd.DataFrame, items=HEADLINE) -> pd.DataFrame:
    """Compact view of a results table: e0, e65 and TFR per noise setting and sex.

    Parameters
    ----------
    df : DataFrame
        Rows of :func:`what_if` or :func:`demonoise.analysis.results.results_table`.
    items : sequence of (label, indicator, age)
        Which rows to keep (default :data:`HEADLINE`); absent ones are skipped.

    Returns
    -------
    DataFrame
        Columns ``region, sex, noise, granularity, [scale,] indicator, value,
        exposure, events, sd_pois, sd_noise, rel_pois, rel_noise, admixture`` (and the
        Monte Carlo ``mc_sd_noise, z_noise, z_pois, z_tot`` when present); one row per
        item, setting and sex. Relative uncertainties are fractions (not per cent).
    """
    parts = []
    for label, ind, age in items:
        sel = df[df["indicator"] == ind]
        sel = sel[sel["age"].isna()] if np.isnan(age) else sel[sel["age"] == age]
        if sel.empty:
            continue
        sel = sel.copy()
        sel["item"] = label
        parts.append(sel)
    if not parts:
        return pd.DataFrame()
    d = pd.concat(parts, ignore_index=True)
    d["noise"] = setting_labels(d)
    cols = ["region", "sex", "noise", "granularity"] + (["scale"] if "scale" in d else [])
    cols += ["item", "value", "exposure", "events", "sd_pois", "sd_noise", "rel_pois", "rel_noise", "admixture"]
    cols += [c for c in ("mc_sd_noise", "z_noise", "z_pois", "z_tot") if c in d]
    return d[cols].rename(columns={"item": "indicator"}).reset_index(drop=True)


def sensitivity(
    counts: Counts,
    region: str,
    *,
    scales: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0),
    V: Sequence[float] | float | None = (1, 5),
    ptable=None,
    granularity: str = "single",
    sexes: Sequence[str] = SEXES,
) -> pd.DataFrame:
    """e0, e65 and TFR noise sd and admixture across a grid of scale x noise setting.

    One analytic pass per scale (the noise settings share it). Monte Carlo is not run
    here: use :func:`what_if` with ``mc`` for a chosen point of the grid.

    Parameters
    ----------
    counts : Counts
    region : str
    scales : sequence of float
        Population factors (:func:`scale_counts`).
    V, ptable : as in :func:`what_if`
    granularity : str
    sexes : sequence of str
        Sexes to keep (TFR is for women, labelled ``F``).

    Returns
    -------
    DataFrame
        :func:`headline` rows for every scale, with ``population`` (the scaled region's
        population on 1 January, both sexes: the figure of the reports' tables) and
        ``rel_noise``, ``admixture`` etc.

    Raises
    ------
    DataError
        A scale leaves the life table undefined (named in the message).
    """
    bad = set(sexes) - set(SEXES)
    if bad:
        raise ParameterError(f"unknown sex(es) {sorted(bad)}; choose from {', '.join(SEXES)}")
    ind = tuple(i for i in ("e", "tfr") if i != "tfr" or counts.births is not None)
    frames = []
    for s in scales:
        df = what_if(
            counts, region, scale=s, V=V, ptable=ptable, granularity=granularity, indicators=ind, e_ages=(0, 65)
        )
        h = headline(df)
        pop = float(df["population"].iloc[0])  # on 1 January, both sexes: the reports' figure
        h.insert(h.columns.get_loc("scale") + 1, "population", pop)
        frames.append(h[h["sex"].isin(list(sexes))])
    return pd.concat(frames, ignore_index=True)


def what_if_change(
    panel: Panel,
    region: str,
    *,
    scale: float = 1.0,
    V: Sequence[float] | float | None = (1,),
    ptable=None,
    year_from: int | None = None,
    year_to: int | None = None,
    pool: int = 1,
    granularity: str = "single",
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
    alpha: float = 0.05,
    power: float = 0.8,
) -> pd.DataFrame:
    """ "The smallest change I can detect at V": the change of e0, e65 and the TFR of one
    region between two years (or two pooled windows), its z with and without noise, and
    its smallest detectable change with and without noise, under what-if settings.

    The change table (:func:`demonoise.analysis.change.change_table`) of the region,
    scaled by ``scale`` (:func:`scale_panel`): with a whole-number ``scale`` the Poisson
    sd of the change falls exactly as ``1/sqrt(s)`` and the noise sd as ``1/s`` (the
    module notes' homogeneity, for a change as for a level).

    Parameters
    ----------
    panel : Panel
        Two or more consecutive years (:func:`demonoise.io.datasets.load_panel`).
    region : str
    scale, V, ptable, granularity
        As in :func:`what_if`.
    year_from, year_to : int, optional
        Default: the panel's last two years.
    pool : int
        Years per window (1: year on year).
    headlines : sequence of str
        Keys of :data:`~demonoise.core.vocabulary.HEADLINES`.
    alpha, power : float
        The test and the smallest detectable change (5 % two-sided, 80 %).

    Returns
    -------
    pandas.DataFrame
        One row per headline, sex and setting: ``region, sex, noise, scale, indicator,
        year_from, year_to, pool, value_from, value_to, change, sd_poisson, sd_noise,
        sd_total, z_poisson, z_total, verdict, mdc_poisson, mdc_total, mdc_ratio``.

    Raises
    ------
    ParameterError
        A panel of one year, years not in it, invalid settings.
    DataError
        Unknown region; scaled counts without a life table.
    """
    from demonoise.analysis.change import change_table, change_verdicts

    if isinstance(panel, Counts):
        panel = Panel.from_counts([panel])
    if len(panel.years) < 2:
        raise ParameterError(
            f"dataset {panel.name!r} holds one year ({panel.years[0]}): a change needs two or more years"
        )
    if not isinstance(region, str):
        raise ParameterError(f"region must be one region code (a string), got {region!r}")
    s = _check_scale(scale)
    sub = scale_panel(panel.select([region]), s)
    year_to = int(panel.years[-1] if year_to is None else year_to)
    year_from = int(year_to - pool if year_from is None else year_from)
    hs = [HEADLINES[k] for k in headlines if k in HEADLINES]
    inds = tuple(dict.fromkeys(h.indicator for h in hs if h.indicator != "tfr" or panel.births is not None))
    e_ages = sorted({float(h.age) for h in hs if h.indicator == "e"}) or None
    table = change_table(
        sub,
        what_if_settings(V, ptable),
        year_from=year_from,
        year_to=year_to,
        pools=(int(pool),),
        granularity=granularity,
        indicators=inds,
        e_ages=e_ages,
        alpha=alpha,
        power=power,
    )
    v = change_verdicts(table, headlines=[k for k in headlines if HEADLINES[k].indicator in inds])
    v["noise"] = setting_labels(v)
    v["scale"] = s
    v["mdc_ratio"] = v["mdc_total"] / v["mdc_poisson"].where(v["mdc_poisson"] > 0)
    cols = ["region", "sex", "noise", "scale", "headline", "year_from", "year_to", "pool", "value_from", "value_to"]
    cols += ["change", "sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total", "verdict"]
    cols += ["mdc_poisson", "mdc_total", "mdc_ratio"]
    return v[cols].rename(columns={"headline": "indicator"}).reset_index(drop=True)
