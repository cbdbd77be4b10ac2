r"""The decision view of a country report: which noise setting -- a variance ``V`` of the
generic model or a real perturbation table -- is acceptable, region by region, and the
numbers a quality report quotes.

Every function here is pure: it takes the tidy results table
(:mod:`demonoise.analysis.results`), the :class:`~demonoise.core.counts.Counts` where
population or a calibration is needed, and returns a :class:`pandas.DataFrame` with a
fixed set of columns in stated units, named for the CSV file written next to the report
(``df.attrs["name"]``; ``df.attrs["units"]`` maps columns to units, and
:func:`column_dictionary` collects them as a table of its own). Nothing is plotted or
written here.

Definitions
-----------
Noise admixture (Eurostat, 2025)
    ``A = sqrt(1 + Var_noise / Var_pois) - 1``, the share by which noise widens the
    Poisson (statistical) uncertainty; a fraction (0.1 = 10 %). Classes
    (:data:`demonoise.core.vocabulary.ADMIXTURE_CLASSES`): below ``A_SMALL = 10 %``;
    ``10 %`` to ``sqrt(2) - 1 = 41.4 %``; ``41.4 %`` or more (noise variance at least the
    Poisson variance). A value exactly on a boundary belongs to the upper class.
Worst sex
    A cell of the decision table is the largest admixture over the sexes F, M and T (each
    a published cell of its own) and names that sex; fertility has women (F) only.
Median admixture of the ASFR / ASMR
    The median over the single ages (or age groups) of the rates, per sex, over the ages
    whose admixture is defined (with events: ``Var_pois > 0``); then the worst sex.
Population
    Population on 1 January of the reference year, sex T, summed over every published
    age cell (``UNK`` included): :func:`population`. The same figure is used by
    :func:`demonoise.uncertainty.comparison.compare_noise`.
``V_max`` (calibration)
    ``sup {V : A(V) <= A*}`` per region, sex and indicator
    (:func:`demonoise.uncertainty.calibration.calibrate`): closed form for the generic
    model, numeric for a p-table family ``build_ptable(D, V, js, pstay)``. Where every
    ``V`` of the range searched keeps ``A <= A*`` the status is ``"beyond"`` and the value
    is shown as ``"> range"``, never as a number.
Recommended ``V``
    The smallest ``V_max`` over the regions and sexes of a country for the recommended
    indicator and threshold; the region and sex where it occurs is the *binding* one.
Error bands
    ``value + shift +- z sd`` with ``z = Phi^{-1}((1 + c) / 2)`` for a level ``c``; the
    shift is the first-order noise bias ``bias_noise`` for the noise and total intervals
    of a p-table setting (0 for the generic model and for Poisson).

References
----------
Eurostat (2025). Impact of noise-based disclosure control on demographic indicators
(reference year 2023) -- the generic model and the admixture.
Chiang, C. L. (1984). *The Life Table and its Applications*. Krieger -- the Poisson
variance of life expectancy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from demonoise.analysis.compute import compute, noise_settings
from demonoise.analysis.results import CONFIDENCE, check_confidence, level_tag, mc_band_columns
from demonoise.analysis.settings import NoiseSetting, settings_in
from demonoise.core.counts import SEXES, Counts
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.vocabulary import (
    A_EQUAL,
    A_SMALL,
    EVENT_WORDS,
    HEADLINES,
    INDICATOR_UNITS,
    SEX_WORDS,
    SMALL_EVENTS,
    admixture_class,
)

__all__ = [
    "MEASURES",
    "Measure",
    "THRESHOLDS",
    "worst_sex",
    "DEFAULT_RECOMMEND",
    "TABLE_NAMES",
    "resolve_settings",
    "one_region",
    "in_report_order",
    "ptable_rows",
    "median_relative_bias",
    "population",
    "decision_table",
    "decision_wide",
    "ptable_family",
    "vmax_table",
    "vmax_wide",
    "check_recommend",
    "recommended_v",
    "error_bands",
    "ptable_comparison",
    "ptable_noise_by_count",
    "small_cell_counts",
    "small_cell_text",
    "MainPoints",
    "main_points",
    "DecisionReport",
    "decision_report",
    "column_dictionary",
    "DECISION_TABLES",
    "OPTION_COLUMNS",
    "decision_options",
    "decision_text",
]

#: Thresholds of the calibration by default: the class boundaries 10 % and sqrt(2) - 1.
THRESHOLDS: tuple[float, float] = (A_SMALL, A_EQUAL)
#: The recommended V by default: e0 at 10 %.
DEFAULT_RECOMMEND: dict = {"indicator": "e0", "threshold": A_SMALL}
#: Share of age cells under 10 events above which a region is flagged as sparse.
SPARSE_SHARE: float = 0.5

#: CSV file stems (without ``.csv``) of the tables, by function.
TABLE_NAMES: dict[str, str] = {
    "population": "population",
    "decision": "decision",
    "decision_wide": "decision_wide",
    "calibration": "calibration",
    "calibration_wide": "calibration_wide",
    "recommended": "recommended_v",
    "error_bands": "error_bands",
    "ptable_comparison": "ptable_comparison",
    "ptable_noise": "ptable_noise_by_count",
    "small_cells": "small_cells",
    "options": "options",
    "columns": "columns",
}

_ADMIXTURE_UNIT = "fraction (0.1 = 10 %): sqrt(1 + Var_noise / Var_pois) - 1"
_V_UNIT = "noise variance on one published count (counts squared)"


# ============================================================================ vocabulary
@dataclass(frozen=True)
class Measure:
    """A column of the decision table: a scalar indicator (``summary="value"``) or the
    median admixture over the ages of an age-specific rate (``summary="median"``)."""

    key: str
    indicator: str
    age: float | None
    summary: str
    title: str
    unit: str


#: The columns of the decision table, in order.
MEASURES: dict[str, Measure] = {
    "e0": Measure("e0", "e", 0.0, "value", HEADLINES["e0"].title, HEADLINES["e0"].unit),
    "e65": Measure("e65", "e", 65.0, "value", HEADLINES["e65"].title, HEADLINES["e65"].unit),
    "tfr": Measure("tfr", "tfr", None, "value", HEADLINES["tfr"].title, HEADLINES["tfr"].unit),
    "asfr": Measure("asfr", "asfr", None, "median", "median admixture over ages of the ASFR", INDICATOR_UNITS["asfr"]),
    "asmr": Measure("asmr", "asmr", None, "median", "median admixture over ages of the ASMR", INDICATOR_UNITS["asmr"]),
}


def _named(df: pd.DataFrame, key: str, title: str, units: Mapping[str, str]) -> pd.DataFrame:
    """Attach the CSV name, a title and the units of the columns (``df.attrs``)."""
    df = df.reset_index(drop=True)
    df.attrs = {"name": TABLE_NAMES[key], "title": title, "units": {c: u for c, u in units.items() if c in df}}
    return df


_COMMON_UNITS = {
    "dataset": "dataset name",
    "data_status": "provenance label: real or modelled data",
    "granularity": "publication granularity of the noised cells",
    "country": "NUTS 0 code",
    "region": "NUTS code",
    "region_name": "region name",
    "nuts_level": "NUTS level (0 = country)",
    "year": "reference year",
    "population": "persons on 1 January of the reference year (sex T, all ages)",
    "setting": "noise setting: V=<variance> (generic model) or the p-table's name",
    "noise_model": "generic | ptable",
    "ptable": "p-table label ('' for the generic model)",
    "V": _V_UNIT + "; nominal for a p-table",
    "sex": "F, M or T",
    "indicator": "asfr | tfr | asmr | e",
    "age": "years (lower bound of the interval; empty for the TFR)",
    "unit": "unit of value",
}


def _fmt_pct(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{100 * x:.1f} %" if abs(x) < 0.1 else f"{100 * x:.0f} %"


def _fmt_thr(t: float) -> str:
    return f"{100 * t:.3g} %"


def _fmt_int(x: float) -> str:
    return f"{int(round(float(x))):,}".replace(",", "\u202f") if np.isfinite(x) else "n/a"


def _fmt_v(v: float) -> str:
    """A variance as shown: 3 significant digits, whole numbers from 1000 on (``0.352``, ``1046``)."""
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ============================================================================ settings
def _match(spec, available: list[NoiseSetting]) -> NoiseSetting:
    """The setting of ``available`` that ``spec`` names (by its key), keeping where a
    p-table came from (its file, its table) for the comparison and the calibration."""
    if isinstance(spec, Mapping):
        desc = "{" + ", ".join(f"{k}: {v}" for k, v in spec.items()) + "}"
    else:
        desc = getattr(spec, "key", None) or repr(spec)
    want = NoiseSetting.of(spec)
    hit = [s for s in available if s.key == want.key]
    if not hit:
        there = ", ".join(s.key for s in available) or "none"
        raise ParameterError(f"noise setting {desc} is not in the results table (settings there: {there})")
    source = want.source if want.source is not None else want.model
    return dataclasses.replace(hit[0], source=source) if source is not None else hit[0]


def resolve_settings(results: pd.DataFrame, settings=None) -> list[NoiseSetting]:
    """The noise settings to show, matched against a results table.

    Parameters
    ----------
    results : DataFrame
        The tidy results table.
    settings : sequence, optional
        Each ``{"V": x}`` (generic model, variance ``x``), ``{"ptable": name}`` (an
        embedded p-table name such as ``"v01"`` or a file), a
        :class:`~demonoise.analysis.settings.NoiseSetting` (:meth:`NoiseSetting.of
        <demonoise.analysis.settings.NoiseSetting.of>`). Default: every setting of
        ``results`` in order of appearance.

    Returns
    -------
    list of NoiseSetting
        In the order given (duplicates dropped).

    Raises
    ------
    ParameterError
        A setting of a wrong form, or one the results table does not hold (naming it and
        the settings it holds).
    """
    available = settings_in(results)
    if settings is None:
        return available
    if isinstance(settings, (Mapping, NoiseSetting)):
        settings = [settings]
    out: list[NoiseSetting] = []
    for spec in settings:
        s = _match(spec, available)
        if s not in out:
            out.append(s)
    if not out:
        raise ParameterError("no noise setting given: pass at least one {V: x} or {ptable: name}")
    return out


def _prepare(results: pd.DataFrame, country: str | None) -> pd.DataFrame:
    """One granularity, optionally one country."""
    if results.empty:
        raise ParameterError("the results table is empty")
    if country is not None:
        results = results[results["country"] == country]
        if results.empty:
            raise DataError("no region of this country in the results table", region=country)
    grans = results["granularity"].unique().tolist()
    if len(grans) > 1:
        raise ParameterError(f"the results table holds several granularities ({', '.join(grans)}): select one first")
    return results


# ============================================================================ population
def population(counts: Counts) -> pd.DataFrame:
    """Population on 1 January of the reference year per region: the figure of every table.

    ``P = sum_a P_a(t)`` over every published age cell ``a`` (``UNK`` included) of sex
    ``T`` (its own published cell, not ``F + M``).

    Returns
    -------
    DataFrame
        ``dataset, data_status, year, country, region, region_name, nuts_level,
        population`` (persons), one row per region of ``counts``.
    """
    pop = counts.population[:, SEXES.index("T")].astype(float)
    df = pd.DataFrame(
        {
            "dataset": counts.name,
            "data_status": counts.provenance.status_label,
            "year": counts.year,
            "country": [r.country for r in counts.regions],
            "region": list(counts.codes),
            "region_name": [r.name for r in counts.regions],
            "nuts_level": [r.level for r in counts.regions],
            "population": pop,
        }
    )
    return _named(df, "population", f"Population on 1 January {counts.year}", _COMMON_UNITS)


def _population_series(pop) -> tuple[pd.Series, float]:
    """Region -> population, and the year (nan if unknown), from Counts, a frame, a series or a mapping."""
    if isinstance(pop, Counts):
        pop = population(pop)
    if isinstance(pop, pd.DataFrame):
        year = float(pop["year"].iloc[0]) if "year" in pop and len(pop) else math.nan
        return pop.set_index("region")["population"].astype(float), year
    if isinstance(pop, pd.Series):
        return pop.astype(float), math.nan
    if isinstance(pop, Mapping):
        return pd.Series(dict(pop), dtype=float), math.nan
    raise ParameterError(f"population must be Counts, population(counts), a Series or a mapping, got {type(pop)!r}")


def _regions(results: pd.DataFrame, pop: pd.Series) -> pd.DataFrame:
    """Regions of ``results`` with their population: each country first, then its regions
    by level and falling population."""
    reg = results.drop_duplicates("region")[["country", "region", "region_name", "nuts_level"]].copy()
    missing = [c for c in reg["region"] if c not in pop.index]
    if missing:
        raise DataError("no population for this region", region=missing[0])
    reg["population"] = reg["region"].map(pop).astype(float)
    order = {c: i for i, c in enumerate(reg["country"].drop_duplicates().tolist())}
    reg["_c"] = reg["country"].map(order)
    reg = reg.sort_values(["_c", "nuts_level", "population"], ascending=[True, True, False], kind="stable")
    return reg.drop(columns="_c").reset_index(drop=True)


def _meta(results: pd.DataFrame) -> dict:
    first = results.iloc[0]
    return {"dataset": first["dataset"], "data_status": first["data_status"], "granularity": first["granularity"]}


# ============================================================================ decision table
def _is_age(series: pd.Series, age: float | None) -> pd.Series:
    if age is None:
        return pd.Series(True, index=series.index)
    return np.isclose(series.astype(float), float(age))


def _per_sex(d: pd.DataFrame, m: Measure) -> pd.DataFrame:
    """One row per region and sex: the measure's admixture (value or median over ages)."""
    sel = d[(d["indicator"] == m.indicator) & _is_age(d["age"], m.age)]
    cols = ["value", "sd_pois", "sd_noise", "bias_noise"]
    if m.summary == "value":
        out = sel[["region", "sex", "admixture", *cols]].copy()
        out["ages"] = np.isfinite(out["admixture"].astype(float)).astype(int)
        return out
    g = sel.groupby(["region", "sex"], sort=False)["admixture"]
    out = pd.DataFrame({"admixture": g.median(), "ages": g.count()}).reset_index()
    for c in cols:
        out[c] = np.nan
    return out


def worst_sex(per_sex: pd.DataFrame) -> pd.DataFrame:
    """Per region the row of the sex with the largest admixture (ties: F, then M, then T;
    ``sex = ""`` where no sex has a defined admixture), with ``admixture_F/M/T``: the sex
    rule of every verdict (decision table, main points, chapters, overview)."""
    a = per_sex["admixture"].astype(float)
    ps = per_sex.assign(_s=per_sex["sex"].map({s: i for i, s in enumerate(SEXES)}), _a=a.where(np.isfinite(a), -np.inf))
    wide = ps.pivot(index="region", columns="sex", values="admixture")
    ps = ps.sort_values(["region", "_a", "_s"], ascending=[True, False, True], kind="stable")
    out = ps.drop_duplicates("region").copy()
    none = ~np.isfinite(out["_a"])
    out.loc[none, "sex"] = ""
    out.loc[none, "admixture"] = np.nan
    out = out.drop(columns=["_s", "_a"]).reset_index(drop=True)
    for s in SEXES:
        out[f"admixture_{s}"] = out["region"].map(wide[s]) if s in wide else np.nan
    return out


def _class_cols(a: pd.Series) -> tuple[list[str], list[str]]:
    cls = [admixture_class(x) for x in a.astype(float)]
    return (
        [c.key if c else "undefined" for c in cls],
        [c.label if c else "not defined: no events" for c in cls],
    )


DECISION_COLUMNS = [
    "dataset", "data_status", "granularity", "year", "country", "region", "region_name", "nuts_level", "population",
    "setting", "noise_model", "ptable", "V", "measure", "indicator", "age", "sex", "admixture", "class", "class_label",
    "admixture_F", "admixture_M", "admixture_T", "ages", "value", "unit", "sd_pois", "sd_noise", "bias_noise",
]  # fmt: skip


def decision_table(
    results: pd.DataFrame,
    population,
    settings=None,
    *,
    measures: Sequence[str] = tuple(MEASURES),
    country: str | None = None,
) -> pd.DataFrame:
    """The decision table, long form: for every region, noise setting and measure, the
    admixture of the worst sex and its class.

    Parameters
    ----------
    results : DataFrame
        The tidy results table (one granularity) with the rows of ``e`` at ages 0 and
        65, ``tfr``, ``asfr`` and ``asmr`` for the measures asked.
    population : Counts, DataFrame, Series or mapping
        :func:`population` (or the counts it is taken from); region -> persons.
    settings : sequence, optional
        See :func:`resolve_settings` (default: every setting of ``results``).
    measures : sequence of str
        Keys of :data:`MEASURES` (default ``e0, e65, tfr, asfr, asmr``).
    country : str, optional
        Restrict to one country.

    Returns
    -------
    DataFrame
        Columns :data:`DECISION_COLUMNS`; one row per region x setting x measure, the
        country first, then its NUTS 2 regions by falling population. ``sex`` is the
        worst sex (``""`` and ``admixture`` nan, class ``"undefined"``, only where no sex
        has events); ``admixture_F/M/T`` the three sexes (nan for M and T of the
        fertility measures: births are by age of mother only); ``ages`` the number of
        ages the median is over (1 for a scalar); ``value``, ``sd_*``, ``bias_noise``
        of the scalar at the worst sex (nan for the medians), in ``unit``.
    """
    res = _prepare(results, country)
    sets = resolve_settings(res, settings)
    bad = [m for m in measures if m not in MEASURES]
    if bad:
        raise ParameterError(f"unknown measure {bad[0]!r}: choose from {', '.join(MEASURES)}")
    pop, year = _population_series(population)
    regions = _regions(res, pop)
    need = ["setting"] if "setting" in res else []
    need += ["noise_model", "ptable", "V", "region", "sex", "indicator", "age", "admixture", "value", "sd_pois"]
    slim = res.loc[res["indicator"].isin({MEASURES[k].indicator for k in measures}), need + ["sd_noise", "bias_noise"]]
    frames = []
    for s in sets:
        d = slim[s.mask(slim)]
        for key in measures:
            m = MEASURES[key]
            ps = _per_sex(d, m)
            if ps.empty:
                raise ParameterError(f"the results table has no rows for {m.title} ({s.key})")
            w = worst_sex(ps)
            w["setting"], w["noise_model"], w["ptable"], w["V"] = s.key, s.kind, s.ptable, s.V
            w["measure"], w["indicator"] = key, m.indicator
            w["age"] = np.nan if m.age is None else m.age
            w["unit"] = m.unit if m.summary == "value" else ""
            frames.append(regions.merge(w, on="region", how="left"))
    out = pd.concat(frames, ignore_index=True)
    out["class"], out["class_label"] = _class_cols(out["admixture"])
    out["year"] = pd.array([int(year) if np.isfinite(year) else None] * len(out), dtype="Int64")
    for k, v in _meta(res).items():
        out[k] = v
    out["ages"] = out["ages"].fillna(0).astype(int)
    units = {
        **_COMMON_UNITS,
        "measure": "e0 | e65 | tfr | asfr (median over ages) | asmr (median over ages)",
        "sex": "the sex with the largest admixture (F, M or T)",
        "admixture": _ADMIXTURE_UNIT,
        "class": "small (< 10 %) | notable (10 % to sqrt(2) - 1) | large (>= sqrt(2) - 1) | undefined",
        "class_label": "the class in words",
        "admixture_F": _ADMIXTURE_UNIT,
        "admixture_M": _ADMIXTURE_UNIT,
        "admixture_T": _ADMIXTURE_UNIT,
        "ages": "number of ages with a defined admixture",
        "value": "indicator value, in unit",
        "sd_pois": "Poisson sd, in unit",
        "sd_noise": "noise sd, in unit",
        "bias_noise": "first-order noise bias, in unit",
    }
    return _named(out[DECISION_COLUMNS], "decision", "Decision table: noise admixture by region and setting", units)


def decision_wide(decision: pd.DataFrame) -> pd.DataFrame:
    """The decision table as a report shows it: one row per region.

    Columns ``country, region, region_name, nuts_level, population`` and, for every
    setting ``s`` (in order) and measure ``m`` (in order), ``"<m> <s>"`` (admixture,
    fraction), ``"<m> <s> sex"`` (the worst sex) and ``"<m> <s> class"`` (class key of
    :data:`~demonoise.core.vocabulary.ADMIXTURE_CLASSES` or ``"undefined"``), e.g.
    ``"e0 V=1"``, ``"e0 V=1 sex"``, ``"e0 V=1 class"``.
    """
    ids = ["dataset", "data_status", "country", "region", "region_name", "nuts_level", "population"]
    base = decision.drop_duplicates("region")[ids].reset_index(drop=True)
    units = {**_COMMON_UNITS}
    cols = {}
    for s in decision["setting"].drop_duplicates().tolist():
        for m in decision["measure"].drop_duplicates().tolist():
            sel = decision[(decision["setting"] == s) & (decision["measure"] == m)].set_index("region")
            name = f"{m} {s}"
            cols[name] = base["region"].map(sel["admixture"])
            cols[f"{name} sex"] = base["region"].map(sel["sex"])
            cols[f"{name} class"] = base["region"].map(sel["class"])
            units[name] = _ADMIXTURE_UNIT + f" ({MEASURES[m].title}, worst sex)"
            units[f"{name} sex"] = "the worst sex"
            units[f"{name} class"] = "small | notable | large | undefined"
    out = pd.concat([base, pd.DataFrame(cols)], axis=1)
    return _named(out, "decision_wide", "Decision table: noise admixture (worst sex) by region and setting", units)


# ============================================================================ calibration
def ptable_family(ptable):
    """The calibration family of a p-table: ``PTableFamily(D, js, pstay)`` of its
    construction parameters (``V`` varies).

    Raises
    ------
    ParameterError
        The table carries no ``D`` (a file read without its parameters) or several
        ``pstay`` values.
    """
    from demonoise.analysis.ptables import resolve_ptable
    from demonoise.uncertainty.calibration import PTableFamily

    if isinstance(ptable, Mapping) and set(ptable) == {"ptable"}:
        ptable = ptable["ptable"]
    table = resolve_ptable(ptable)
    if table.D is None:
        raise ParameterError(
            f"{table.label}: the table carries no maximum deviation D, so its family cannot be built; "
            "calibrate with family=('ptable', D, js)"
        )
    pstay = table.pstay
    if pstay is not None and not isinstance(pstay, (int, float)):
        vals = set(float(p) for p in pstay)
        if len(vals) > 1:
            raise ParameterError(f"{table.label}: several pstay values {sorted(vals)}: no single family")
        pstay = vals.pop() if vals else None
    return PTableFamily(int(table.D), int(table.js or 0), pstay)


def _family(family):
    """``"generic"`` or a PTableFamily from a family, a tuple, or a p-table."""
    from demonoise.uncertainty.calibration import PTableFamily

    if isinstance(family, PTableFamily) or family == "generic":
        return family
    if isinstance(family, (tuple, list)) and family and family[0] == "ptable":
        return PTableFamily(*family[1:])
    return ptable_family(family)


def _check_headlines(indicators) -> tuple[str, ...]:
    if isinstance(indicators, str):
        indicators = (indicators,)
    out = tuple(dict.fromkeys(indicators))
    bad = [h for h in out if h not in HEADLINES]
    if bad or not out:
        raise ParameterError(f"unknown indicator {bad[0] if bad else None!r}: choose from {', '.join(HEADLINES)}")
    return out


def _headline_of(indicator: str, age) -> str:
    return "tfr" if indicator == "tfr" else f"e{float(age):g}"


_RANGE_SHOWN = {"beyond": "> range", "below": "< range", "undefined": "n/a"}


def vmax_table(
    counts: Counts,
    thresholds=THRESHOLDS,
    *,
    indicators: Sequence[str] = ("e0", "tfr"),
    family="generic",
    granularity: str = "single",
    country: str | None = None,
    v_max_range: float | None = None,
    context_V=(1.0, 5.0),
    **layout_kw,
) -> pd.DataFrame:
    """Per region and sex, the largest ``V`` keeping the admixture of each indicator at or
    below each threshold (:func:`demonoise.uncertainty.calibration.calibrate`).

    Parameters
    ----------
    counts : Counts
    thresholds : sequence of float
        Admixture fractions in ``(0, 10]`` (default 10 % and sqrt(2) - 1).
    indicators : sequence of {"e0", "e65", "tfr"}
    family : "generic", PTableFamily, ("ptable", D, js, pstay), or a p-table
        A p-table (name such as ``"v01"``, file, :class:`~demonoise.noise.ptable.PTable`
        or ``{"ptable": name}``) stands for its family (:func:`ptable_family`).
    granularity : {"single", "5y", "5y-infant"}
    country : str, optional
        Restrict to one country.
    v_max_range : float, optional
        Generic model: the largest ``V`` considered (default: none, the closed form
        holds at every ``V``). A p-table family searches ``[v_lo, D^2]``.
    context_V : sequence of float
        Variances at which the admixture is reported (``admixture_V<v>``).

    Returns
    -------
    DataFrame
        The columns of ``demonoise calibrate`` (``dataset, data_status, family,
        granularity, region, region_name, nuts_level, country, sex, indicator, age,
        age_group, value, events, var_pois, threshold, V_max, status,
        admixture_V<v>...``), then ``headline`` (e0, e65, tfr), ``population``,
        ``range_lo``, ``range_hi`` (the ``V`` range searched), ``range_status`` and
        ``V_max_shown``:

        ``within``
            ``V_max`` is a number in the range (shown with 3 significant digits; 0 where
            no event is behind the indicator: any noise exceeds);
        ``beyond``
            every ``V`` of the range keeps ``A <= threshold`` (``V_max`` inf, or above
            ``v_max_range``): shown ``"> range"``;
        ``below``
            already the smallest table of a p-table family exceeds: ``"< range"``;
        ``undefined``
            the admixture is not defined (no Poisson and no noise variance): ``"n/a"``.
    """
    from demonoise.uncertainty.calibration import calibrate, check_thresholds

    heads = _check_headlines(indicators)
    thr = check_thresholds(thresholds)
    fam = _family(family)
    inds = [i for i in ("tfr", "e") if any(HEADLINES[h].indicator == i for h in heads)]
    e_ages = [int(HEADLINES[h].age) for h in heads if HEADLINES[h].indicator == "e"] or [0]
    if country is not None:
        counts = counts.select(country=country)
    df = calibrate(
        counts,
        thr,
        family=fam,
        granularity=granularity,
        indicators=inds,
        e_ages=e_ages,
        context_V=context_V,
        **layout_kw,
    )
    attrs = dict(df.attrs)
    df["headline"] = [_headline_of(i, a) for i, a in zip(df["indicator"], df["age"], strict=True)]
    df = df[df["headline"].isin(heads)].copy()
    pop = population(counts).set_index("region")["population"]
    df["population"] = df["region"].map(pop)
    if fam == "generic":
        df["range_lo"], df["range_hi"] = 0.0, math.inf if v_max_range is None else float(v_max_range)
    else:
        df["range_lo"], df["range_hi"] = attrs["v_lo"], attrs["v_top"]
    vm = df["V_max"].astype(float)
    status = np.where(vm.isna(), np.where(df["status"] == "infeasible", "below", "undefined"), "within")
    status = np.where(vm > df["range_hi"], "beyond", status)
    df["range_status"] = status
    df["V_max_shown"] = [_RANGE_SHOWN.get(s, _fmt_v(v)) for s, v in zip(status, vm, strict=True)]
    order = {h: i for i, h in enumerate(heads)}
    df["_h"] = df["headline"].map(order)
    df = df.sort_values(["_h", "threshold"], kind="stable").drop(columns="_h")
    units = {
        **_COMMON_UNITS,
        "family": "generic | ptable D=<D> js=<js>: the noise family calibrated",
        "age_group": "Eurostat age label",
        "value": "indicator value (years for e_k, children per woman for the TFR)",
        "events": "deaths at ages >= k (e_k) or births (TFR)",
        "var_pois": "Poisson variance (unit of value, squared)",
        "threshold": "admixture threshold, fraction (0.1 = 10 %)",
        "V_max": _V_UNIT + ": largest V with A <= threshold (inf: every V)",
        "status": "ok | no_events | insensitive | saturates | infeasible | undefined (calibrate's status)",
        "headline": "e0 | e65 | tfr",
        "range_lo": _V_UNIT + ": smallest V searched",
        "range_hi": _V_UNIT + ": largest V searched",
        "range_status": "within | beyond | below | undefined",
        "V_max_shown": "V_max as shown: a number, '> range', '< range' or 'n/a'",
    }
    units.update({c: _ADMIXTURE_UNIT + " at that V" for c in df if c.startswith("admixture_V")})
    out = _named(df, "calibration", "Largest V keeping the admixture at or below each threshold", units)
    out.attrs.update({k: v for k, v in attrs.items() if k != "name"})
    return out


_RANK = {"below": -1, "within": 0, "beyond": 1}


def _binding_order(ok: pd.DataFrame) -> pd.DataFrame:
    """The columns that order candidate rows for the binding one (the defined items of a
    calibration): ``_key`` the V_max (``below`` first, ``beyond`` last), ``_level`` the
    negated NUTS level (the most detailed first), ``_pos`` the row's place."""
    status = ok["range_status"].astype(str).to_numpy()
    key = np.where(
        status == "within",
        ok["V_max"].to_numpy(dtype=float),
        pd.Series(status).map(_RANK).to_numpy(dtype=float) * 1e300,
    )
    return pd.DataFrame(
        {"_key": key, "_level": -ok["nuts_level"].to_numpy(dtype=float), "_pos": np.arange(len(ok))}, index=ok.index
    )


def _binding(g: pd.DataFrame) -> tuple[pd.Series | None, int]:
    """The smallest V_max of a group (``below`` first, then numbers, then ``beyond``);
    undefined items are left out; of equal values the most detailed NUTS level (a country
    with one NUTS 2 region is bound by that region), then the first row. Returns the row
    (``sex`` emptied when every item is beyond the range: no sex binds) and the number of
    items it was taken over."""
    ok = g[g["range_status"] != "undefined"]
    if ok.empty:
        return None, 0
    order = _binding_order(ok)
    first = np.lexsort((order["_pos"], order["_level"], order["_key"]))[0]
    row = ok.iloc[int(first)].copy()
    if row["range_status"] == "beyond":
        row["sex"] = ""
    return row, len(ok)


def _binding_rows(v: pd.DataFrame, by: list[str]) -> dict[tuple, dict]:
    """:func:`_binding` of every group of ``by`` at once (the same order,
    :func:`_binding_order`, in one sort instead of a call per group): group key -> the
    binding row as a dict (``sex`` emptied where beyond)."""
    ok = v[v["range_status"] != "undefined"]
    if ok.empty:
        return {}
    order = _binding_order(ok)
    best = (
        pd.concat([ok, order], axis=1)
        .sort_values([*by, *order.columns], kind="stable")
        .drop_duplicates(by, keep="first")
    )
    out = {}
    for rec in best.drop(columns=list(order.columns)).to_dict("records"):
        if rec["range_status"] == "beyond":
            rec["sex"] = ""
        out[tuple(rec[k] for k in by)] = rec
    return out


def vmax_wide(vmax: pd.DataFrame) -> pd.DataFrame:
    """The calibration as a report shows it: one row per family and region.

    For every headline ``h`` and threshold ``t``: ``"<h> A<=<t>"`` (the smallest V_max
    over the sexes, nan unless ``within``), ``"... shown"`` (a number, ``"> range"``,
    ``"< range"`` or ``"n/a"``), ``"... sex"`` (the binding sex), ``"... status"``;
    ``t`` printed with 3 significant digits (``A<=0.1``, ``A<=0.414``). The binding row
    of each group is :func:`_binding`'s (the same order, taken in one sort).
    """
    ids = ["dataset", "data_status", "family", "country", "region", "region_name", "nuts_level", "population"]
    units = {**_COMMON_UNITS, "family": "generic | ptable D=<D> js=<js>"}
    by = ["family", "region", "headline", "threshold"]
    best = _binding_rows(vmax, by)
    rows: dict[tuple, dict] = {}  # (family, region) -> its row, in order of appearance
    for rec in vmax.drop_duplicates(by)[[*ids, "headline", "threshold"]].to_dict("records"):
        row = rows.setdefault((rec["family"], rec["region"]), {k: rec[k] for k in ids})
        h, t = rec["headline"], rec["threshold"]
        name = f"{h} A<={t:.3g}"
        b = best.get((rec["family"], rec["region"], h, t))
        within = b is not None and b["range_status"] == "within"
        row[name] = float(b["V_max"]) if within else np.nan
        row[f"{name} shown"] = b["V_max_shown"] if b is not None else "n/a"
        row[f"{name} sex"] = b["sex"] if b is not None else ""
        row[f"{name} status"] = b["range_status"] if b is not None else "undefined"
        units[name] = _V_UNIT + f": largest V with A({h}) <= {t:.3g} for every sex"
        units[f"{name} shown"] = "as shown: a number, '> range', '< range' or 'n/a'"
        units[f"{name} sex"] = "the binding sex"
        units[f"{name} status"] = "within | beyond | below | undefined"
    return _named(
        pd.DataFrame(list(rows.values())), "calibration_wide", "Largest V by region (smallest over sexes)", units
    )


def check_recommend(recommend=None, thresholds=None) -> tuple[str, float]:
    """Validate ``recommend = {"indicator": e0|e65|tfr, "threshold": A*}``.

    ``thresholds`` (optional): the threshold must be one of them (within 1e-9 relative).

    Raises
    ------
    ParameterError
        Unknown key or indicator, a threshold outside ``(0, 10]`` or not among ``thresholds``.
    """
    from demonoise.uncertainty.calibration import check_thresholds

    rec = dict(DEFAULT_RECOMMEND if recommend is None else recommend)
    extra = set(rec) - {"indicator", "threshold"}
    if extra:
        raise ParameterError(f"recommend: unknown key {sorted(extra)[0]!r} (keys: indicator, threshold)")
    ind = rec.get("indicator", DEFAULT_RECOMMEND["indicator"])
    if ind not in HEADLINES:
        raise ParameterError(f"recommend: unknown indicator {ind!r}: choose from {', '.join(HEADLINES)}")
    t = float(check_thresholds([rec.get("threshold", DEFAULT_RECOMMEND["threshold"])])[0])
    if thresholds is not None:
        hit = [float(x) for x in thresholds if math.isclose(float(x), t, rel_tol=1e-9)]
        if not hit:
            raise ParameterError(
                f"recommend: threshold {t:g} is not among the calibrated thresholds "
                f"({', '.join(f'{float(x):g}' for x in thresholds)})"
            )
        t = hit[0]
    return ind, t


RECOMMENDED_COLUMNS = [
    "dataset", "data_status", "country", "family", "indicator", "threshold", "V_recommended", "range_status",
    "V_shown", "range_lo", "range_hi", "region", "region_name", "sex", "population", "items", "items_below",
    "items_undefined",
]  # fmt: skip


def recommended_v(vmax: pd.DataFrame, recommend=None) -> pd.DataFrame:
    """The recommended ``V``: the smallest ``V_max`` over regions and sexes.

    Parameters
    ----------
    vmax : DataFrame
        From :func:`vmax_table` (one or several families and countries).
    recommend : mapping, optional
        ``{"indicator": "e0" | "e65" | "tfr", "threshold": A*}`` (default e0 at 10 %);
        the indicator and threshold must be in ``vmax``.

    Returns
    -------
    DataFrame
        One row per country and family, columns :data:`RECOMMENDED_COLUMNS`:
        ``V_recommended`` (the binding ``V_max``; inf when every ``V`` of the range is
        acceptable, ``range_status`` ``"beyond"``; nan when already the smallest table
        of the family exceeds somewhere, ``"below"``), ``V_shown`` as a report shows
        it, the binding ``region`` and ``sex``, ``items`` (region x sex rows the minimum
        is over), ``items_below`` (rows no table of the family meets) and
        ``items_undefined`` (rows without a defined admixture, left out).
    """
    ind, t = check_recommend(recommend, sorted(vmax["threshold"].unique()))
    sel = vmax[(vmax["headline"] == ind) & np.isclose(vmax["threshold"], t)]
    if sel.empty:
        raise ParameterError(
            f"recommend: the calibration has no rows for {ind} (it holds {', '.join(vmax.headline.unique())})"
        )
    rows = []
    for (cc, fam), g in sel.groupby(["country", "family"], sort=False):
        b, n = _binding(g)
        row = {
            "dataset": g.iloc[0]["dataset"],
            "data_status": g.iloc[0]["data_status"],
            "country": cc,
            "family": fam,
            "indicator": ind,
            "threshold": t,
            "range_lo": g.iloc[0]["range_lo"],
            "range_hi": g.iloc[0]["range_hi"],
            "items": n,
            "items_below": int((g["range_status"] == "below").sum()),
            "items_undefined": int((g["range_status"] == "undefined").sum()),
        }
        if b is None:
            row.update(V_recommended=np.nan, range_status="undefined", V_shown="n/a", region="", region_name="", sex="")
            row["population"] = np.nan
        else:
            st = b["range_status"]
            v = float(b["V_max"]) if st == "within" else (math.inf if st == "beyond" else np.nan)
            row.update(
                V_recommended=v,
                range_status=st,
                V_shown=b["V_max_shown"],
                region=b["region"],
                region_name=b["region_name"],
                sex=b["sex"],
                population=b["population"],
            )
        rows.append(row)
    units = {
        **_COMMON_UNITS,
        "family": "generic | ptable D=<D> js=<js>",
        "indicator": "e0 | e65 | tfr",
        "threshold": "admixture threshold, fraction",
        "V_recommended": _V_UNIT + ": smallest V_max over regions and sexes",
        "range_status": "within | beyond | below | undefined",
        "V_shown": "as shown: a number, '> range', '< range' or 'n/a'",
        "range_lo": _V_UNIT,
        "range_hi": _V_UNIT,
        "region": "the binding region",
        "sex": "the binding sex",
        "population": "persons on 1 January of the binding region",
        "items": "region x sex rows the minimum is over",
        "items_below": "rows no table of the family meets",
        "items_undefined": "rows without a defined admixture (left out)",
    }
    return _named(pd.DataFrame(rows, columns=RECOMMENDED_COLUMNS), "recommended", "Recommended V", units)


# ============================================================================ error bands
_COMP = (("pois", "Poisson"), ("noise", "noise"), ("tot", "total"))

BAND_COLUMNS = [
    "dataset", "data_status", "granularity", "setting", "noise_model", "ptable", "V", "country", "region",
    "region_name", "nuts_level", "sex", "headline", "unit", "value", "level", "z", "sd_pois", "sd_noise", "sd_tot",
    "bias_noise", "half_pois", "half_noise", "half_tot", "lo_pois", "hi_pois", "lo_noise", "hi_noise", "lo_tot",
    "hi_tot",
]  # fmt: skip
BAND_MC_COLUMNS = ["mc_n", "mc_lo_pois", "mc_hi_pois", "mc_lo_noise", "mc_hi_noise", "mc_lo_tot", "mc_hi_tot"]


def error_bands(
    results: pd.DataFrame,
    confidence=CONFIDENCE,
    settings=None,
    *,
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
    country: str | None = None,
) -> pd.DataFrame:
    r"""Error bands a user can quote: intervals of the indicators at each confidence level,
    for Poisson, noise and total, in the indicator's units.

    For a level ``c`` and ``z = \Phi^{-1}((1 + c) / 2)`` (1.96 at 95 %)

    .. math::  [\,f + s - z\,\mathrm{sd},\ f + s + z\,\mathrm{sd}\,]

    with ``sd`` the first-order sd of the component (``sd_pois``, ``sd_noise``,
    ``sd_tot``) and the shift ``s = bias_noise`` (first-order noise bias of a p-table
    setting; 0 for the generic model) for the noise and total intervals, ``s = 0`` for
    Poisson. Where the results carry a Monte Carlo at level ``c``
    (``compute(..., mc=N, confidence=...)``), its quantiles ``(1 -+ c) / 2`` of the
    replicate values under each component are given beside them.

    Parameters
    ----------
    results : DataFrame
        The tidy results table.
    confidence : float or sequence of float
        Levels in (0, 1) (default 0.95).
    settings : sequence, optional
        See :func:`resolve_settings`.
    headlines : sequence of {"e0", "e65", "tfr"}
    country : str, optional

    Returns
    -------
    DataFrame
        One row per setting x region x sex x headline x level, columns
        :data:`BAND_COLUMNS` (+ :data:`BAND_MC_COLUMNS` when ``results`` has a Monte
        Carlo: ``mc_n`` replicates, nan for settings without one). ``half_*`` are the
        half-widths ``z sd``; ``lo_*``, ``hi_*`` the interval ends; all in ``unit``.

    Raises
    ------
    ParameterError
        A level outside (0, 1); a Monte Carlo in ``results`` without the quantiles of a
        requested level (rerun ``compute`` with that ``confidence``).
    """
    from scipy.special import ndtri  # the standard normal quantile, without importing scipy.stats

    levels = check_confidence(confidence)
    heads = _check_headlines(headlines)
    res = _prepare(results, country)
    sets = resolve_settings(res, settings)
    has_mc = "mc_n" in res
    if has_mc:
        for c in levels:
            missing = [col for col in mc_band_columns(c) if col not in res]
            if missing:
                raise ParameterError(
                    f"confidence {c:g}: the Monte Carlo of the results kept no {level_tag(c)} % quantiles "
                    f"({missing[0]} missing); rerun compute with confidence including {c:g}"
                )
    frames = []
    for s in sets:
        d = res[s.mask(res)]
        for h in heads:
            hl = HEADLINES[h]
            sel = d[(d["indicator"] == hl.indicator) & _is_age(d["age"], hl.age)]
            for c in levels:
                z = float(ndtri((1.0 + c) / 2.0))
                f = pd.DataFrame(
                    {
                        "setting": s.key,
                        "noise_model": s.kind,
                        "ptable": s.ptable,
                        "V": s.V,
                        "headline": h,
                        "unit": hl.unit,
                        "level": c,
                        "z": z,
                    },
                    index=sel.index,
                )
                for col in ("country", "region", "region_name", "nuts_level", "sex", "value", "sd_pois", "sd_noise"):
                    f[col] = sel[col]
                f["sd_tot"] = sel["sd_tot"]
                f["bias_noise"] = sel["bias_noise"].astype(float)
                for comp, _ in _COMP:
                    shift = 0.0 if comp == "pois" else f["bias_noise"]
                    half = z * f[f"sd_{comp}"]
                    f[f"half_{comp}"] = half
                    f[f"lo_{comp}"] = f["value"] + shift - half
                    f[f"hi_{comp}"] = f["value"] + shift + half
                if has_mc:
                    t = level_tag(c)
                    f["mc_n"] = sel["mc_n"]
                    for comp, _ in _COMP:
                        f[f"mc_lo_{comp}"] = sel[f"mc_lo_{comp}_{t}"]
                        f[f"mc_hi_{comp}"] = sel[f"mc_hi_{comp}_{t}"]
                frames.append(f)
    out = pd.concat(frames, ignore_index=True)
    for k, v in _meta(res).items():
        out[k] = v
    cols = BAND_COLUMNS + (BAND_MC_COLUMNS if has_mc else [])
    units = {
        **_COMMON_UNITS,
        "headline": "e0 | e65 | tfr",
        "value": "indicator value, in unit",
        "level": "confidence level (0.95 = 95 %)",
        "z": "standard normal quantile (1 + level) / 2",
        "bias_noise": "first-order noise bias, in unit (centre shift of the noise and total intervals)",
        "mc_n": "Monte Carlo replicates",
    }
    for comp, word in _COMP:
        units[f"sd_{comp}"] = f"{word} sd, in unit"
        units[f"half_{comp}"] = f"half-width z * sd_{comp} of the {word} interval, in unit"
        units[f"lo_{comp}"] = f"lower end of the {word} interval, in unit"
        units[f"hi_{comp}"] = f"upper end of the {word} interval, in unit"
        units[f"mc_lo_{comp}"] = f"Monte Carlo (1 - level) / 2 quantile of the value under {word}, in unit"
        units[f"mc_hi_{comp}"] = f"Monte Carlo (1 + level) / 2 quantile of the value under {word}, in unit"
    return _named(out[cols], "error_bands", "Error bands of e0, e65 and the TFR", units)


# ============================================================================ p-table vs generic
COMPARISON_COLUMNS = [
    "dataset", "data_status", "granularity", "ptable", "V", "I", "country", "region", "region_name", "nuts_level",
    "population", "sex", "headline", "unit", "value", "sd_pois", "sd_generic", "sd_ptable", "ratio", "bias_ptable",
    "rmse_ptable", "V_last_class", "zero_var_share", "small_var_share_nonzero", "small_ptable_var_share",
    "large_var_share", "small_cell_share", "flag", "reason",
]  # fmt: skip


def _counts_words(last: int) -> str:
    """The small non-zero counts of a table whose last class is ``last``: ``"counts 1 to 2"``."""
    return "count 1" if last == 2 else f"counts 1 to {last - 1}"


def _reason(r) -> str:
    """Why the p-table's noise sd differs from the generic one, in words (one row)."""
    who = f"{r.region} ({SEX_WORDS.get(r.sex, r.sex)}), {r.headline}"
    if not np.isfinite(r.ratio):
        return f"{who}: no noise under either model (no noised cell behind the indicator)."
    lead = f"{who}: p-table noise sd {r.ratio:.2f} x the generic one at V = {r.V:g}"
    if r.ratio < 1 - 1e-3:
        lead += f" ({(1 - r.ratio) * 100:.0f} % lower)"
    elif r.ratio > 1 + 1e-3:
        lead += f" ({(r.ratio - 1) * 100:.0f} % higher)"
    parts = []
    # contributions to 1 - ratio^2, each a share of the generic noise variance
    small_gap = r.small_var_share_nonzero - r.small_ptable_var_share
    large_gap = r.large_var_share * (1.0 - r.V_last_class / r.V)
    contrib = {"zero": r.zero_var_share, "small": small_gap, "large": large_gap}
    for k in sorted(contrib, key=lambda k: -abs(contrib[k])):
        if k == "zero" and r.zero_var_share >= 0.005:
            parts.append(
                f"cells with count 0, which the CKM leaves alone, carry {_fmt_pct(r.zero_var_share)} "
                "of the generic noise variance"
            )
        if k == "small" and r.small_var_share_nonzero >= 0.005:
            parts.append(
                f"cells with {_counts_words(int(r.I))} carry {_fmt_pct(r.small_var_share_nonzero)} of it "
                f"under the generic model and {_fmt_pct(r.small_ptable_var_share)} under the p-table "
                "(count-dependent variance)"
            )
        if k == "large" and abs(large_gap) >= 0.005:
            parts.append(
                f"the p-table's variance for counts of {int(r.I)} or more is {r.V_last_class:.3g}, not {r.V:g}"
            )
    if not parts:
        parts.append("every cell behind it has a count the table treats like the generic model")
    bias = f"; first-order bias {r.bias_ptable:+.2g} {r.unit}" if abs(r.bias_ptable) > 0 else ""
    return f"{lead}: {'; '.join(parts)}{bias}."


def ptable_comparison(
    counts: Counts,
    ptable,
    *,
    V: float | None = None,
    granularity: str = "single",
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
    country: str | None = None,
    **layout_kw,
) -> pd.DataFrame:
    r"""Region by region, the noise sd of the generic model at the p-table's nominal ``V``
    against the p-table's own, and why they differ
    (:func:`demonoise.uncertainty.comparison.compare_noise`).

    With ``g_c`` the derivative of the indicator with respect to published cell ``c`` of
    count ``n_c``, ``V_i`` the p-table's variance for count class ``i`` and ``I`` its last
    class (every count ``>= I``):

    .. math::  \mathrm{ratio}^2 = \frac{\sum_c g_c^2 V_{\min(n_c, I)}}{V \sum_c g_c^2}
               = (1 - z - s)\,\frac{V_I}{V} + s_{pt}

    with ``z`` the share of the generic noise variance from zero cells (the table leaves
    them alone), ``s`` the share from cells with ``0 < n_c < I`` and ``s_pt`` the
    p-table variance of those cells over the generic noise variance.

    Parameters
    ----------
    counts : Counts
    ptable : str, path, PTable, PTableNoise or {"ptable": name}
    V : float, optional
        Variance of the generic model (default: the table's nominal ``V``).
    granularity, headlines, country
        As elsewhere in this module.

    Returns
    -------
    DataFrame
        One row per region x sex x headline, columns :data:`COMPARISON_COLUMNS`:
        ``sd_generic``, ``sd_ptable`` (unit of the indicator), ``ratio``
        (``sd_ptable / sd_generic``), ``bias_ptable`` (first-order bias),
        ``V_last_class`` (``V_I``), ``zero_var_share`` (``z``),
        ``small_var_share_nonzero`` (``s``), ``small_ptable_var_share`` (``s_pt``),
        ``large_var_share`` (``1 - z - s``), ``small_cell_share`` (share of the cells
        the indicator depends on with a count below ``I``), ``flag`` (``|ratio - 1| >
        10 %``) and ``reason``: the difference in words.
    """
    from demonoise.analysis.ptables import resolve_ptable
    from demonoise.uncertainty.comparison import compare_noise

    if isinstance(ptable, Mapping) and set(ptable) == {"ptable"}:
        ptable = ptable["ptable"]
    table = resolve_ptable(ptable)
    heads = _check_headlines(headlines)
    inds = [i for i in ("e", "tfr") if any(HEADLINES[h].indicator == i for h in heads)]
    e_ages = [int(HEADLINES[h].age) for h in heads if HEADLINES[h].indicator == "e"] or None
    if country is not None:
        counts = counts.select(country=country)
    df = compare_noise(counts, table, V=V, granularity=granularity, indicators=inds, e_ages=e_ages, **layout_kw)
    df["headline"] = [_headline_of(i, a) for i, a in zip(df["indicator"], df["age"], strict=True)]
    df = df[df["headline"].isin(heads)].copy()
    df["unit"] = df["headline"].map({h: HEADLINES[h].unit for h in HEADLINES})
    df["V_last_class"] = float(table.variance()[-1])
    df["small_var_share_nonzero"] = df["small_var_share"] - df["zero_var_share"]
    df["large_var_share"] = 1.0 - df["small_var_share"]
    df["reason"] = [_reason(r) for r in df.itertuples()]
    order = {h: i for i, h in enumerate(heads)}
    df = df.assign(_h=df["headline"].map(order)).sort_values(["_h"], kind="stable").drop(columns="_h")
    units = {
        **_COMMON_UNITS,
        "ptable": "p-table label",
        "V": _V_UNIT + ": the generic model's (the table's nominal V)",
        "I": "the table's last count class (every count >= I)",
        "headline": "e0 | e65 | tfr",
        "value": "indicator value, in unit",
        "sd_pois": "Poisson sd, in unit",
        "sd_generic": "noise sd under the generic model at V, in unit",
        "sd_ptable": "noise sd under the p-table, in unit",
        "ratio": "sd_ptable / sd_generic",
        "bias_ptable": "first-order noise bias under the p-table, in unit",
        "rmse_ptable": "sqrt(sd_ptable^2 + bias_ptable^2), in unit",
        "V_last_class": "the p-table's noise variance for counts >= I (counts squared)",
        "zero_var_share": "share of the generic noise variance from cells with count 0",
        "small_var_share_nonzero": "share of the generic noise variance from cells with 0 < count < I",
        "small_ptable_var_share": "p-table noise variance of cells with 0 < count < I / generic noise variance",
        "large_var_share": "share of the generic noise variance from cells with count >= I",
        "small_cell_share": "share of the cells the indicator depends on with count < I",
        "flag": "|ratio - 1| > 10 %",
        "reason": "why the two differ, in words",
    }
    return _named(df[COMPARISON_COLUMNS], "ptable_comparison", f"Generic noise against {table.label}", units)


def ptable_noise_by_count(ptable) -> pd.DataFrame:
    """The p-table's count-dependent noise: bias and variance per original count
    (:meth:`demonoise.noise.ptable.PTable.moments`).

    Returns
    -------
    DataFrame
        ``ptable, count`` (``"0"``, ``"1"``, ..., ``">=I"``), ``i`` (the class),
        ``bias`` (mean noise ``E v``, counts), ``variance`` (counts squared), ``sd``,
        ``p_stay`` (``P(v = 0)``), ``nominal_V``, ``variance_minus_V``, ``V_reached``.
    """
    from demonoise.analysis.ptables import resolve_ptable

    if isinstance(ptable, Mapping) and set(ptable) == {"ptable"}:
        ptable = ptable["ptable"]
    table = resolve_ptable(ptable)
    m = table.moments()
    last = table.I
    out = pd.DataFrame(
        {
            "ptable": table.label,
            "count": [f">={i}" if i == last else str(i) for i in m["i"]],
            "i": m["i"],
            "bias": m["mean"],
            "variance": m["variance"],
            "sd": np.sqrt(m["variance"]),
            "p_stay": m["p_stay"],
            "nominal_V": m["nominal_V"],
            "variance_minus_V": m["variance_minus_V"],
            "V_reached": m["V_reached"],
        }
    )
    units = {
        "ptable": "p-table label",
        "count": "original count of the published cell (the last class stands for every larger count)",
        "i": "count class",
        "bias": "mean noise E v (counts)",
        "variance": "noise variance (counts squared)",
        "sd": "noise sd (counts)",
        "p_stay": "probability that the count is published unchanged",
        "nominal_V": "the table's nominal variance (counts squared)",
        "variance_minus_V": "variance - nominal_V (counts squared)",
        "V_reached": "variance >= nominal V (within 1e-6); empty for count 0, which stays 0",
    }
    return _named(out, "ptable_noise", f"Noise of {table.label} by original count", units)


# ============================================================================ small cells
SMALL_CELL_COLUMNS = [
    "dataset", "data_status", "granularity", "country", "region", "region_name", "nuts_level", "sex", "indicator",
    "behind", "events_word", "age_cells", "age_cells_with_events", "age_cells_under_10_events",
    "age_cells_1_to_9_events", "age_cells_without_events", "share_under_10_of_age_cells",
    "share_1_to_9_of_cells_with_events", "flag_sparse", "text",
]  # fmt: skip

_BEHIND = {"asfr": "ASFR and TFR", "asmr": "ASMR and life expectancy"}


def small_cell_text(row) -> str:
    """The one sentence on small cells of a region and sex (the summary and the flags
    table both print this, so they agree)."""
    many = row["events_word"]
    n, k, z = int(row["age_cells"]), int(row["age_cells_under_10_events"]), int(row["age_cells_without_events"])
    w, k1 = int(row["age_cells_with_events"]), int(row["age_cells_1_to_9_events"])
    share = row["share_under_10_of_age_cells"]
    s2 = row["share_1_to_9_of_cells_with_events"]
    who = f"{row['region']} {SEX_WORDS.get(row['sex'], row['sex'])}"
    text = (
        f"{who}: {k} of {n} age cells ({_fmt_pct(share)}) rest on fewer than 10 {many}"
        + (f" ({z} on none)" if z else "")
        + f"; of the {w} cells with {many}, {k1} ({_fmt_pct(s2)}) have 1 to 9."
    )
    return text


def small_cell_counts(
    results: pd.DataFrame,
    *,
    setting=None,
    small_events: int = SMALL_EVENTS,
    sparse_share: float = SPARSE_SHARE,
    country: str | None = None,
) -> pd.DataFrame:
    """One definition of every count of cells: per region, sex and age-specific rate, how
    many age cells there are, how many have events, how many rest on fewer than 10.

    The cells are the age cells of the rates (``asmr``: deaths by age, behind life
    expectancy too; ``asfr``: births by age of mother, behind the TFR) at the
    publication granularity of ``results``, ``UNK`` spread over the known ages; events
    are the deaths or births of the cell. The counts do not depend on the noise
    setting (the rows of one setting are used).

    Parameters
    ----------
    results : DataFrame
        The tidy results table with ``asmr`` and/or ``asfr`` rows.
    setting : optional
        Which setting's rows to use (default: the first); see :func:`resolve_settings`.
    small_events : int
        Fewer events than this is "small" (default 10, the ``small_count`` of results).
    sparse_share : float
        ``flag_sparse`` where ``share_under_10_of_age_cells`` exceeds this (default 0.5).
    country : str, optional

    Returns
    -------
    DataFrame
        One row per region x sex (F, M and T for deaths; F for births) x rate, columns
        :data:`SMALL_CELL_COLUMNS`: ``age_cells`` (every age cell), ``..._with_events``
        (events > 0), ``..._under_10_events`` (events < 10, zeros included),
        ``..._1_to_9_events``, ``..._without_events``; ``share_under_10_of_age_cells``
        (denominator: every age cell), ``share_1_to_9_of_cells_with_events``
        (denominator: cells with events); ``text`` (:func:`small_cell_text`).
    """
    res = _prepare(results, country)
    s = resolve_settings(res, None if setting is None else [setting])[0]
    d = res[s.mask(res) & res["indicator"].isin(list(_BEHIND))]
    if d.empty:
        raise ParameterError("the results table has no asmr or asfr rows to count cells in")
    ev = d["events"].astype(float)
    d = d.assign(
        _with=ev > 0,
        _small=ev < small_events,
        _mid=(ev > 0) & (ev < small_events),
        _zero=ev <= 0,
    )
    keys = ["country", "region", "region_name", "nuts_level", "indicator", "sex"]
    g = d.groupby(keys, sort=False)
    out = pd.DataFrame(
        {
            "age_cells": g.size(),
            "age_cells_with_events": g["_with"].sum(),
            "age_cells_under_10_events": g["_small"].sum(),
            "age_cells_1_to_9_events": g["_mid"].sum(),
            "age_cells_without_events": g["_zero"].sum(),
        }
    ).reset_index()
    for c in out.columns[len(keys) :]:
        out[c] = out[c].astype(int)
    out["share_under_10_of_age_cells"] = out["age_cells_under_10_events"] / out["age_cells"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["share_1_to_9_of_cells_with_events"] = np.where(
            out["age_cells_with_events"] > 0, out["age_cells_1_to_9_events"] / out["age_cells_with_events"], np.nan
        )
    out["flag_sparse"] = out["share_under_10_of_age_cells"] > sparse_share
    out["behind"] = out["indicator"].map(_BEHIND)
    out["events_word"] = out["indicator"].map(lambda i: EVENT_WORDS[i][1])
    out["text"] = [small_cell_text(r) for _, r in out.iterrows()]
    sex_order = {x: i for i, x in enumerate(SEXES)}
    out["_s"] = out["sex"].map(sex_order)
    out["_i"] = out["indicator"].map({"asmr": 0, "asfr": 1})
    reg_order = {r: i for i, r in enumerate(d["region"].drop_duplicates().tolist())}
    out["_r"] = out["region"].map(reg_order)
    out = out.sort_values(["_i", "_r", "_s"], kind="stable").drop(columns=["_s", "_i", "_r"])
    for k, v in _meta(res).items():
        out[k] = v
    if small_events != SMALL_EVENTS:
        out.attrs["small_events"] = small_events
    units = {
        **_COMMON_UNITS,
        "indicator": "asmr | asfr: the age-specific rate whose cells are counted",
        "behind": "indicators resting on these cells",
        "events_word": "deaths | births",
        "age_cells": "number of age cells of the rate (UNK spread over known ages)",
        "age_cells_with_events": "age cells with at least one event",
        "age_cells_under_10_events": f"age cells with fewer than {small_events} events (zeros included)",
        "age_cells_1_to_9_events": f"age cells with 1 to {small_events - 1} events",
        "age_cells_without_events": "age cells with no event",
        "share_under_10_of_age_cells": "age_cells_under_10_events / age_cells",
        "share_1_to_9_of_cells_with_events": "age_cells_1_to_9_events / age_cells_with_events",
        "flag_sparse": f"share_under_10_of_age_cells > {sparse_share:g}",
        "text": "the sentence reports print",
    }
    return _named(out[SMALL_CELL_COLUMNS], "small_cells", "Cells resting on few events", units)


# ============================================================================ main points
@dataclass
class MainPoints:
    """Sentences in plain words with numbers, and the numbers themselves."""

    sentences: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)

    def markdown(self) -> str:
        return "\n".join(f"- {s}" for s in self.sentences)

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return " ".join(self.sentences)


def _acceptable(decision: pd.DataFrame, threshold: float, heads: Sequence[str]) -> pd.DataFrame:
    """Per setting and region: every headline's admixture (worst sex) at or below ``threshold``."""
    d = decision[decision["measure"].isin(heads)]
    g = d.groupby(["setting", "region"], sort=False)
    out = g.agg(
        ok=("admixture", lambda a: bool((a.astype(float) <= threshold).all())),
        nuts_level=("nuts_level", "first"),
        population=("population", "first"),
        region_name=("region_name", "first"),
    )
    return out.reset_index()


def _region_list(codes: Sequence[str], limit: int = 4) -> str:
    codes = list(codes)
    return _join(codes) if len(codes) <= limit else f"{_join(codes[:limit])} and {len(codes) - limit} more"


def _setting_phrases(decision: pd.DataFrame) -> dict[str, str]:
    return {s.key: s.phrase for s in settings_in(decision)}


def _sentence_acceptable(decision, threshold, heads, numbers) -> str:
    acc = _acceptable(decision, threshold, heads)
    sub = acc[acc["nuts_level"] > 0]
    if sub.empty:
        sub = acc
    n = sub["region"].nunique()
    what = _join([MEASURES[h].key.replace("tfr", "the TFR") for h in heads])
    unit = "NUTS 2 regions" if (acc["nuts_level"] > 0).any() else "regions"
    phrases = _setting_phrases(decision)
    parts = []
    for s, g in sub.groupby("setting", sort=False):
        g = g.sort_values("population")
        good, bad = g[g["ok"]], g[~g["ok"]]
        numbers.setdefault("acceptable", {})[s] = good["region"].tolist()
        of = f"of the {n} {unit}" if not parts else f"of {n}"
        if n == 1:
            continue
        if bad.empty:
            parts.append(f"in all {n} {unit} {phrases[s]}" if not parts else f"in all {n} {phrases[s]}")
        elif good.empty:
            parts.append(f"in none {of} {phrases[s]}")
        elif len(bad) <= len(good):
            parts.append(f"in {len(good)} {of} {phrases[s]} (not in {_region_list(bad['region'])})")
        else:
            parts.append(f"in {len(good)} {of} {phrases[s]} (in {_region_list(good['region'])})")
    if n == 1:
        region = sub["region"].iloc[0]
        ok = [phrases[s] for s, regs in numbers["acceptable"].items() if regs]
        no = [phrases[s] for s, regs in numbers["acceptable"].items() if not regs]
        lead = f"In {region}, noise adds at most {_fmt_thr(threshold)} to the Poisson uncertainty of {what} "
        lead += "(worst of women, men and both sexes) "
        if not ok:
            return lead.replace("adds at most", "adds more than") + "at every setting (" + _join(no) + ")."
        return lead + _join(ok) + (f", but not {_join(no).replace(' and ', ' or ')}" if no else "") + "."
    return (
        f"Noise adds at most {_fmt_thr(threshold)} to the Poisson uncertainty of {what} "
        f"(worst of women, men and both sexes) " + _join(parts) + "."
    )


def _sentence_recommended(recommended: pd.DataFrame, year, numbers) -> str | None:
    if recommended is None or recommended.empty:
        return None
    gen = recommended[recommended["family"] == "generic"]
    other = recommended[recommended["family"] != "generic"]
    first = gen.iloc[0] if len(gen) else recommended.iloc[0]
    ind, thr = first["indicator"], float(first["threshold"])
    when = f"1 January {int(year)}" if np.isfinite(year) else "1 January"
    if first["range_status"] == "undefined":
        return f"No recommended V: the admixture of {ind} is not defined in any region (no events)."
    who = (
        f"{first['region']} ({first['region_name']}, {_fmt_int(first['population'])} people on {when}), "
        f"{SEX_WORDS.get(first['sex'], first['sex'])}"
    )
    fam = "generic model" if first["family"] == "generic" else first["family"]
    numbers.update(
        recommended_V=float(first["V_recommended"]),
        binding_region=str(first["region"]),
        binding_sex=str(first["sex"]),
    )
    if first["range_status"] == "within":
        text = (
            f"The binding region is {who}: the largest V that keeps the admixture of {ind} at or below "
            f"{_fmt_thr(thr)} there is {first['V_shown']}, so the recommended V is {first['V_shown']} "
            f"({fam}; the smallest over all regions and sexes)"
        )
    elif first["range_status"] == "beyond":
        text = f"Every V of the range keeps the admixture of {ind} at or below {_fmt_thr(thr)} in every region ({fam})"
    else:
        text = f"Already the smallest table of the {fam} puts the admixture of {ind} above {_fmt_thr(thr)} in {who}"
    for r in other.itertuples():
        fam = f"p-tables built with {r.family.removeprefix('ptable ')} and varying V"
        if r.range_status == "within":
            text += f"; {fam} meet it up to V = {r.V_shown} (binding: {r.region}, {SEX_WORDS.get(r.sex, r.sex)})"
        elif r.range_status == "beyond":
            text += f"; {fam} meet it at every V up to {r.range_hi:g}"
        elif r.range_status == "below":
            text += f"; none of the {fam} meets it in {r.region} ({SEX_WORDS.get(r.sex, r.sex)})"
    return text + "."


def _sentence_ptable(decision, comparison, heads, numbers) -> str | None:
    if comparison is None or comparison.empty:
        return None
    pieces = []
    for label, cmp in comparison.groupby("ptable", sort=False):
        e0 = cmp[cmp["headline"] == cmp["headline"].iloc[0]]
        sub = e0[e0["nuts_level"] > 0] if (e0["nuts_level"] > 0).any() else e0
        sub = sub[np.isfinite(sub["ratio"])]
        if sub.empty:
            continue
        lo = sub.loc[sub["ratio"].idxmin()]
        name = str(label).removeprefix("ptable ")
        h = lo["headline"].replace("tfr", "the TFR")
        text = (
            f"With p-table {name} instead of generic noise at its nominal V = {lo['V']:g}, the noise sd of {h} is "
            f"{sub['ratio'].min():.2f} to {sub['ratio'].max():.2f} times the generic one, lowest in {lo['region']} "
            f"({SEX_WORDS.get(lo['sex'], lo['sex'])}), where cells with count 0, which the CKM leaves alone, carry "
            f"{_fmt_pct(lo['zero_var_share'])} of the generic noise variance"
        )
        numbers.setdefault("ptable_ratio", {})[name] = (float(sub["ratio"].min()), float(sub["ratio"].max()))
        # class changes against the generic setting of the same V, where the decision table has it
        pt = decision[(decision["noise_model"] == "ptable") & (decision["setting"] == name)]
        gen_key = f"V={float(lo['V']):g}"
        gen = decision[(decision["noise_model"] == "generic") & (decision["setting"] == gen_key)]
        if (decision["nuts_level"] > 0).any():
            pt, gen = pt[pt["nuts_level"] > 0], gen[gen["nuts_level"] > 0]
        if len(pt) and len(gen):
            a = pt[pt["measure"].isin(heads)].set_index(["region", "measure"])["class"]
            b = gen[gen["measure"].isin(heads)].set_index(["region", "measure"])["class"]
            diff = (a != b.reindex(a.index)).groupby(level=0, sort=False).any()
            changed = [r for r, v in diff.items() if v]
            numbers.setdefault("class_changes", {})[name] = changed
            what = _join([h.replace("tfr", "the TFR") for h in heads]).replace(" and ", " or ")
            unit = "NUTS 2 regions" if (decision["nuts_level"] > 0).any() else "regions"
            if changed and len(diff) == 1:
                text += f"; the class of {what} changes against V = {lo['V']:g} in {changed[0]}"
            elif changed:
                text += (
                    f"; the class of {what} changes against V = {lo['V']:g} in {len(changed)} of "
                    f"{len(diff)} {unit} ({_region_list(changed)})"
                )
            elif len(diff) == 1:
                text += f"; the class of {what} is the same as at V = {lo['V']:g}"
            else:
                text += f"; the class of {what} is the same as at V = {lo['V']:g} in all {len(diff)} {unit}"
        pieces.append(text + ".")
    return " ".join(pieces) if pieces else None


def main_points(
    decision: pd.DataFrame,
    recommended: pd.DataFrame | None = None,
    comparison: pd.DataFrame | None = None,
    *,
    threshold: float | None = None,
    headlines: Sequence[str] = ("e0", "e65", "tfr"),
) -> MainPoints:
    """Two or three sentences in plain words, every number taken from the tables.

    1. Which setting is acceptable for which regions: every headline's admixture (worst
       sex) at or below ``threshold`` (default: the recommendation's threshold, else
       10 %).
    2. The binding region and the recommended ``V`` (:func:`recommended_v`), and what a
       p-table family allows.
    3. What the p-table changes (:func:`ptable_comparison`): the range of the ratio of
       noise sds, where it is lowest and the share of zero cells there, and the regions
       whose class changes against the generic model at the table's nominal ``V``.

    Parameters
    ----------
    decision : DataFrame
        :func:`decision_table` (one country).
    recommended : DataFrame, optional
        :func:`recommended_v` for that country.
    comparison : DataFrame, optional
        :func:`ptable_comparison` (one or several p-tables).
    threshold : float, optional
    headlines : sequence of str

    Returns
    -------
    MainPoints
        ``sentences`` and ``numbers`` (``acceptable``: regions per setting;
        ``recommended_V``, ``binding_region``, ``binding_sex``; ``ptable_ratio`` and
        ``class_changes`` per p-table).
    """
    heads = _check_headlines(headlines)
    if threshold is None:
        threshold = float(recommended["threshold"].iloc[0]) if recommended is not None and len(recommended) else A_SMALL
    mp = MainPoints()
    mp.sentences.append(_sentence_acceptable(decision, threshold, heads, mp.numbers))
    year = float(decision["year"].iloc[0]) if "year" in decision and len(decision) else math.nan
    for s in (
        _sentence_recommended(recommended, year, mp.numbers),
        _sentence_ptable(decision, comparison, heads, mp.numbers),
    ):
        if s:
            mp.sentences.append(s)
    return mp


# ============================================================================ options
# The options behind a recommended V: what an office can do when one small region binds the
# whole country. Each number comes from the library's own calibration, never estimated from
# the others: the p-table family's largest V (already in the recommended table); publishing
# 5-year age groups (the recommended V then, and the factor by which the noise sd of the
# indicator falls in the binding region and sex, sd_noise(single) / sd_noise(5y) at V = 1 --
# under the generic model Var_noise = V g'g is linear in V, so the factor holds at every V);
# and the binding region apart (the recommended V over the country's other regions; the
# country's own row stays, its published cells include the region's).
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


def _fmt_v_or_any(v: float) -> str:
    return _fmt_v(v) if np.isfinite(v) else "any V"


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
            f"{o['sd_ratio_5y']:.2g} times (recommended V then {_fmt_v_or_any(o['V_recommended_5y'])})"
        )
    if isinstance(o["region_without"], str) and o["region_without"]:
        opts.append(
            f"or treat {o['region']} apart (the recommended V without it: {o['V_without_shown']}, "
            f"set by {o['region_without']})"
        )
    return text + "; ".join(opts) + "."


# ============================================================================ all together
def _stack(frames: Sequence[pd.DataFrame], key: str) -> pd.DataFrame:
    """Concatenate tables of one kind, keeping the name, the first title and every unit."""
    units: dict = {}
    for f in frames:
        units.update(f.attrs.get("units", {}))
    return _named(pd.concat(frames, ignore_index=True), key, frames[0].attrs.get("title", ""), units)


#: The tables of a :class:`DecisionReport`, by attribute, in the order their CSV files are listed.
DECISION_TABLES = (
    "population",
    "decision",
    "decision_wide",
    "calibration",
    "calibration_wide",
    "recommended",
    "error_bands",
    "ptable_comparison",
    "ptable_noise",
    "small_cells",
    "options",
)


@dataclass
class DecisionReport:
    """Every table of the decision view of one country, and its main points."""

    decision: pd.DataFrame
    decision_wide: pd.DataFrame
    calibration: pd.DataFrame
    calibration_wide: pd.DataFrame
    recommended: pd.DataFrame
    error_bands: pd.DataFrame
    small_cells: pd.DataFrame
    population: pd.DataFrame
    ptable_comparison: pd.DataFrame | None = None
    ptable_noise: pd.DataFrame | None = None
    main_points: MainPoints = field(default_factory=MainPoints)
    notes: list[str] = field(default_factory=list)
    options: pd.DataFrame | None = None
    decision_text: str = ""

    def tables(self) -> dict[str, pd.DataFrame]:
        """CSV name -> table, ready to be written next to the report (``columns`` last)."""
        out = {}
        for key in DECISION_TABLES:
            df = getattr(self, key)
            if df is not None:
                out[df.attrs.get("name", TABLE_NAMES[key])] = df
        out[TABLE_NAMES["columns"]] = column_dictionary(list(out.values()))
        return out


def column_dictionary(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """What every column of every table is, in which unit: ``table, column, unit``."""
    rows = []
    for df in tables:
        name = df.attrs.get("name", "")
        units = df.attrs.get("units", {})
        for c in df.columns:
            rows.append({"table": name, "column": c, "unit": units.get(c, "")})
    out = pd.DataFrame(rows, columns=["table", "column", "unit"])
    return _named(out, "columns", "Columns of the tables and their units", {})


def decision_report(
    results: pd.DataFrame,
    counts: Counts,
    settings=None,
    *,
    thresholds=THRESHOLDS,
    confidence=CONFIDENCE,
    recommend=None,
    country: str | None = None,
    v_max_range: float | None = None,
) -> DecisionReport:
    """All tables of the decision view of one country, in one call.

    Parameters
    ----------
    results : DataFrame
        The tidy results table of ``counts`` (``compute(counts, settings, ...)``).
    counts : Counts
        For the population and the calibration.
    settings : sequence, optional
        ``[{"V": 1}, {"V": 5}, {"ptable": "v01"}]`` (default: every setting of ``results``).
    thresholds, confidence, recommend
        As the report parameters: admixture thresholds of the calibration, levels of the
        error bands, ``{"indicator": ..., "threshold": ...}``.
    country : str, optional
        Default: the only country of ``results``.
    v_max_range : float, optional
        Generic model: the largest ``V`` a ``V_max`` is shown for (:func:`vmax_table`).

    Returns
    -------
    DecisionReport
        The generic family is always calibrated; every p-table setting adds its family
        (:func:`ptable_family`) to the calibration and its comparison with the generic
        model at its nominal ``V``. A p-table without construction parameters (a file
        without ``D``) is compared but not calibrated, and ``notes`` says so.
    """
    if country is None:
        cc = results["country"].unique().tolist()
        if len(cc) != 1:
            raise ParameterError(f"the results hold several countries ({', '.join(cc)}): pass country=")
        country = cc[0]
    res = _prepare(results, country)
    gran = res["granularity"].iloc[0]
    sets = resolve_settings(res, settings)
    thr = tuple(float(t) for t in np.atleast_1d(thresholds))
    ind, t = check_recommend(recommend)
    if not any(math.isclose(t, x, rel_tol=1e-9) for x in thr):
        thr = (*thr, t)
    sub = counts.select(country=country)
    pop = population(sub)
    dec = decision_table(res, pop, sets)
    heads = tuple(dict.fromkeys(("e0", "tfr", ind)))
    pt_sets = [s for s in sets if not s.is_generic]
    fams, notes = ["generic"], []
    for s in pt_sets:
        try:
            fams.append(ptable_family(s.table_source))
        except ParameterError as e:  # a table without construction parameters: compared, not calibrated
            notes.append(f"p-table {s.key} is compared with the generic model but not calibrated: {e}")
    vmax = _stack(
        [vmax_table(sub, thr, indicators=heads, family=f, granularity=gran, v_max_range=v_max_range) for f in fams],
        "calibration",
    )
    rec = recommended_v(vmax, {"indicator": ind, "threshold": t})
    bands = error_bands(res, confidence, sets)
    cells = small_cell_counts(res)
    cmp = noise = None
    if pt_sets:
        cmp = _stack([ptable_comparison(sub, s.table_source, granularity=gran) for s in pt_sets], "ptable_comparison")
        noise = _stack([ptable_noise_by_count(s.table_source) for s in pt_sets], "ptable_noise")
    mp = main_points(dec, rec, cmp)
    opts, text = _options(sub, vmax, rec, dec, {"indicator": ind, "threshold": t}, gran)
    return DecisionReport(
        decision=dec,
        decision_wide=decision_wide(dec),
        calibration=vmax,
        calibration_wide=vmax_wide(vmax),
        recommended=rec,
        error_bands=bands,
        small_cells=cells,
        population=pop,
        ptable_comparison=cmp,
        ptable_noise=noise,
        main_points=mp,
        notes=notes,
        options=opts,
        decision_text=text,
    )


_OPTION_UNITS = {
    "indicator": "headline the recommended V is for (e0, e65, tfr)",
    "threshold": "admixture threshold of the recommended V (fraction)",
    "V_recommended": _V_UNIT + "; the recommended V (generic model)",
    "V_shown": "the recommended V as the report prints it",
    "sex": "binding sex: F, M or T",
    "population": "persons on 1 January of the binding region",
    "V_without": _V_UNIT + "; the recommended V without the binding region",
    "V_without_shown": "V_without as the report prints it",
    "region_without": "NUTS code of the region binding without the first one",
    "region_name_without": "name of that region",
    "sex_without": "sex binding without the first region: F, M or T",
    "sd_ratio_5y": "ratio: noise sd of the indicator from single ages / from 5-year groups (binding region and sex)",
    "V_recommended_5y": _V_UNIT + "; the recommended V with counts published in 5-year groups",
    "V_5y_shown": "V_recommended_5y as the report prints it",
}


def _options(counts, vmax, rec, dec, recommend, granularity) -> tuple[pd.DataFrame, str]:
    """The options beside the recommended V (:func:`decision_options`) and the decision text."""

    opts = decision_options(counts, vmax, rec, recommend=recommend, granularity=granularity)
    opts = _named(opts, "options", "Options beside the recommended V", {**_COMMON_UNITS, **_OPTION_UNITS})
    return opts, decision_text(dec, rec, opts)


# ======================================================================= for the views
def one_region(frame: pd.DataFrame) -> pd.DataFrame:
    """Without the country's own rows when the country is a single NUTS 2 region (its
    figures are that region's): LU, MT."""
    if "nuts_level" not in frame or frame.empty:
        return frame
    if frame.loc[frame["nuts_level"] == 2, "region"].nunique() == 1 and (frame["nuts_level"] == 0).any():
        return frame[frame["nuts_level"] != 0].reset_index(drop=True)
    return frame.reset_index(drop=True)


def in_report_order(frame: pd.DataFrame, rep) -> pd.DataFrame:
    """Rows in the order of ``rep``'s decision table (a :class:`DecisionReport`): the country
    first, then its NUTS 2 regions by falling population (the order of every table of the
    report)."""
    order = {r: i for i, r in enumerate(rep.decision["region"].drop_duplicates().tolist())}
    key = frame["region"].map(order).fillna(len(order))
    return frame.assign(_o=key.to_numpy()).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


def ptable_rows(frame: pd.DataFrame, ptable) -> pd.DataFrame:
    """The rows of one p-table (its name or file; ``None``: every p-table's), by the
    table's label (:attr:`NoiseSetting.ptable <demonoise.analysis.settings.NoiseSetting.ptable>`)."""
    return frame if ptable is None else frame[frame["ptable"] == NoiseSetting.from_ptable(ptable).ptable]


def median_relative_bias(results: pd.DataFrame, indicator: str, ptable=None) -> pd.Series | None:
    """Per region, the median over ages of a p-table's first-order bias relative to the
    value of ``indicator`` (``asfr``: women; otherwise both sexes), over the rows of
    ``ptable`` (every p-table's when ``None``); ``None`` without such rows."""
    sex = "F" if indicator == "asfr" else "T"
    d = results[(results["noise_model"] == "ptable") & (results["indicator"] == indicator) & (results["sex"] == sex)]
    d = ptable_rows(d, ptable)
    d = d[np.isfinite(d["value"]) & (d["value"] > 0)]
    if d.empty:
        return None
    return (d["bias_noise"] / d["value"]).groupby(d["region"]).median()


def headline_rows(rep, ptable=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A p-table's comparison with the generic model (``rep.ptable_comparison`` of
    ``ptable``; every p-table's when ``None``) and its rows of e0, e65 (both sexes) and the
    TFR (women), in the report's order (:func:`in_report_order`)."""
    cmp = ptable_rows(rep.ptable_comparison, ptable)
    return cmp, in_report_order(one_region(cmp[cmp["sex"] == np.where(cmp["headline"] == "tfr", "F", "T")]), rep)


def furthest_from_generic(rep, ptable=None) -> pd.DataFrame:
    """Per region (in the decision table's order) the row of :func:`ptable_comparison` whose
    ratio of noise sds is furthest from 1: the headline and sex where a p-table and the
    generic model differ most; rows without a finite ratio left out."""
    cmp = one_region(ptable_rows(rep.ptable_comparison, ptable))
    cmp = cmp[np.isfinite(cmp["ratio"])]
    far = cmp.assign(_d=(cmp["ratio"] - 1).abs()).sort_values("_d", ascending=False, kind="stable")
    order = [r for r in rep.decision["region"].drop_duplicates().tolist() if r in set(cmp["region"])]
    return far.drop_duplicates("region").set_index("region").reindex(order).reset_index().drop(columns=["_d"])


def worst_admixture(rep) -> dict[str, pd.Series | None]:
    """Per setting (by label) the row of the decision table with the largest admixture of e0,
    e65 and the TFR over the NUTS 2 regions (the country's rows when it has none); ``None``
    where no admixture is defined."""
    dec = rep.decision[rep.decision["measure"].isin(["e0", "e65", "tfr"])]
    nuts2 = dec[dec["nuts_level"] == 2] if (dec["nuts_level"] == 2).any() else dec
    out = {}
    for s in settings_in(dec):
        g = nuts2[s.mask(nuts2) & np.isfinite(nuts2["admixture"].astype(float))]
        out[s.label] = None if g.empty else g.loc[g["admixture"].astype(float).idxmax()]
    return out


def headline_bands(bands: pd.DataFrame, headline: str, setting=None, level: float | None = None) -> pd.DataFrame:
    """The rows of :func:`error_bands` a report shows of a headline: both sexes (the TFR:
    women), without the country's own rows where it is one region (:func:`one_region`);
    of one ``setting`` and ``level`` where given."""
    b = bands[(bands["headline"] == headline) & (bands["sex"] == ("F" if HEADLINES[headline].female_only else "T"))]
    if setting is not None:
        b = b[NoiseSetting.of(setting).mask(b)]
    return one_region(b if level is None else b[b["level"] == level])


def calibration_columns(cal: pd.DataFrame, regions: Sequence[str]) -> list[tuple]:
    """The calibration table (the rows of :func:`demonoise.uncertainty.calibration.calibrate`,
    their ``V_max_shown``) as columns over ``regions`` (a dash where a region has none), per
    family and headline: a headline of one sex (the TFR: women) as ``(family, headline, sex,
    None, {threshold: column})``, one of several sexes per threshold as ``(family, headline,
    None, threshold, {sex: column})``."""
    out = []
    for fam, g in cal.groupby("family", sort=False):
        for h, gh in g.groupby("headline", sort=False):
            sexes = [x for x in ("F", "M", "T") if (gh["sex"] == x).any()]
            if len(sexes) == 1:
                m = gh.set_index(["region", "threshold"])["V_max_shown"]
                cols = {t: [m.get((r, t), "\u2014") for r in regions] for t in gh["threshold"].drop_duplicates()}
                out.append((fam, h, sexes[0], None, cols))
                continue
            for t, gg in gh.groupby("threshold", sort=False):
                m = gg.set_index(["region", "sex"])["V_max_shown"]
                out.append((fam, h, None, t, {x: [m.get((r, x), "\u2014") for r in regions] for x in sexes}))
    return out
