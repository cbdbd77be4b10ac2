"""The Europe overview's tables: every NUTS 2 region of a dataset, the noise settings side
by side.

* :func:`indicator_rows` -- per region and setting the relative uncertainties and the
  noise admixture of e0, e65, the TFR, and the median over ages of the ASMR and ASFR;
  :func:`summary_table`, :func:`most_affected` over them;
* :func:`granularity_effect`, :func:`granularity_summary` -- what publishing 5-year
  instead of single-age cells does to the noise sd;
* :func:`map_values`, :func:`admixture_class`, :func:`outside_table` -- what the map shows;
  :func:`outside_frame`, :func:`drawn_codes`, :func:`no_data_on_map`, :func:`fit_points` --
  which regions it draws and where;
* :func:`calibration_table` -- the largest V per threshold, from
  :func:`demonoise.uncertainty.calibration.calibrate`;
* :func:`load_inputs` -- what the overview notebook reads.

Definitions (docs/design.md, "Admixture"): relative uncertainty ``delta = sd / value``;
noise admixture ``A = sqrt(1 + Var_noise / Var_pois) - 1`` (10 %: noise adds a tenth to
the statistical uncertainty; ``sqrt(2) - 1 = 41.4 %``: noise as large as Poisson). The
tables keep the NUTS 2 rows (``nuts_level == 2``); their ``setting`` column holds each
row's setting label (``"V = 1"``, ``"p-table v01"``) and ``setting_key`` its key (``"V=1"``,
``"v01"``: :func:`with_labels`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from demonoise.analysis.settings import NoiseSetting, setting_column, settings_in
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import A_EQUAL as _A_EQUAL
from demonoise.core.vocabulary import A_SMALL, ADMIXTURE_CLASSES, SEXES

__all__ = [
    "A_EQUAL",
    "KEYS",
    "KEY_TITLES",
    "SHORT_NAMES",
    "MAP_BREAKS",
    "MAP_CLASSES",
    "NO_DATA",
    "nuts2",
    "with_labels",
    "overview_settings",
    "setting_order",
    "setting_tags",
    "column_setting",
    "v_values",
    "population",
    "age_summary",
    "indicator_rows",
    "summary_table",
    "most_affected",
    "granularity_effect",
    "granularity_summary",
    "map_values",
    "admixture_class",
    "outside_table",
    "EUROPE_FRAME",
    "OUTERMOST",
    "in_frame",
    "outside_frame",
    "drawn_codes",
    "no_data_on_map",
    "fit_points",
    "load_inputs",
    "calibration_rows",
    "calibration_table",
]

#: Noise admixture when noise and Poisson variances are equal: sqrt(2) - 1.
A_EQUAL = _A_EQUAL


#: Indicator keys of the overview: (indicator, age or None, how).
#: ``how``: "row" -- one row per region; "median" -- median over the ages.
KEYS = {
    "e0": ("e", 0.0, "row"),
    "e65": ("e", 65.0, "row"),
    "tfr": ("tfr", None, "row"),
    "asmr": ("asmr", None, "median"),
    "asfr": ("asfr", None, "median"),
}


KEY_TITLES = {
    "e0": "life expectancy at birth (e0)",
    "e65": "life expectancy at 65 (e65)",
    "tfr": "total fertility rate (TFR)",
    "asmr": "age-specific mortality rates (median over ages)",
    "asfr": "age-specific fertility rates (median over ages)",
}


SHORT_NAMES = {
    "e0": "e0",
    "e65": "e65",
    "tfr": "TFR",
    "asmr": "ASMR (median over ages)",
    "asfr": "ASFR (median over ages)",
}


_FEMALE_ONLY = ("tfr", "asfr")


#: Breaks of the admixture map (%): the reports' classes
#: (:data:`~demonoise.core.vocabulary.ADMIXTURE_CLASSES`: below 10 %, 10 % to 41 %, 41 % or more).
MAP_BREAKS = [100.0 * c.lower for c in ADMIXTURE_CLASSES[1:]]


#: Classes of the admixture map (labels): the reports' classes, in their words.
MAP_CLASSES = tuple(c.label for c in ADMIXTURE_CLASSES)


NO_DATA = "no data"


def nuts2(df: pd.DataFrame) -> pd.DataFrame:
    """NUTS 2 rows (``nuts_level == 2``) of every noise setting -- the generic model's V's
    and the p-tables -- with the ``setting`` label every output uses (``"V = 1"``,
    ``"p-table v01"``)."""
    need = {"nuts_level", "noise_model"}
    missing = need - set(df.columns)
    if missing:
        raise ParameterError(f"not a results table: column(s) {', '.join(sorted(missing))} missing")
    return with_labels(df[df["nuts_level"] == 2])


def with_labels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every row's setting by its key (``setting_key``, ``"V=1"``, ``"v01"``)
    and by its label (``setting``, ``"V = 1"``, ``"p-table v01"``), made once from the
    results table's ``setting`` column (:func:`~demonoise.analysis.settings.setting_column`);
    a frame that has its keys, or no noise columns, is returned as it is."""
    if "setting_key" in df or not {"V"} <= set(df):
        return df
    d = df if "noise_model" in df else df.assign(noise_model="generic")
    d = d if "ptable" in d else d.assign(ptable="")
    keys = setting_column(d)
    labels = {s.key: s.label for s in settings_in(d)}
    return df.assign(setting_key=keys.to_numpy(), setting=keys.map(labels).to_numpy())


def overview_settings(df: pd.DataFrame) -> list[NoiseSetting]:
    """The settings of a table in the order of the batch: the generic model's V's
    ascending, then the p-tables in order of appearance (their colours follow it)."""
    d = with_labels(df)
    if "setting_key" in d:
        sets = [NoiseSetting.of(k) for k in pd.unique(d["setting_key"])]
    else:  # a table of the generic model without its keys
        sets = [NoiseSetting.generic(v) for v in pd.unique(d["V"])]
    generic = sorted((s for s in sets if s.is_generic), key=lambda s: s.V)
    return generic + [s for s in sets if not s.is_generic]


def setting_order(df: pd.DataFrame) -> list[str]:
    """The labels of :func:`overview_settings`."""
    return [s.label for s in overview_settings(df)]


def setting_tags(df: pd.DataFrame) -> dict[str, str]:
    """Column suffix of each setting's label: ``"V = 5"`` -> ``"V5"``, ``"p-table v01"`` ->
    ``"ptable_v01"`` (:attr:`NoiseSetting.tag <demonoise.analysis.settings.NoiseSetting.tag>`)."""
    return {s.label: s.tag for s in overview_settings(df)}


_PER_SETTING = re.compile(r"^(rel_noise|admixture|sex|below)_(?:V([0-9.eE+-]+)|ptable_(.+))$")


def column_setting(col: str) -> tuple[str, NoiseSetting | None]:
    """A wide table's column (:func:`most_affected`, :func:`calibration_table`) split into its
    measure and its setting: ``("admixture", V = 5)`` for ``admixture_V5``, ``("sex", p-table
    v01)`` for ``sex_ptable_v01``; ``(col, None)`` for a column of no one setting."""
    m = _PER_SETTING.match(col)
    if not m:
        return col, None
    return m[1], NoiseSetting.generic(float(m[2])) if m[2] else NoiseSetting.from_ptable(m[3])


def v_values(df: pd.DataFrame) -> list[float]:
    """The V's of a results table's generic rows, ascending."""
    v = df.loc[df["noise_model"] == "generic", "V"] if "noise_model" in df else df["V"]
    return sorted(float(x) for x in pd.unique(v.dropna()))


def _v_tag(v: float) -> str:
    return f"V{float(v):g}"


def population(df: pd.DataFrame) -> pd.DataFrame:
    """Population on 1 January of the reference year (both sexes, all ages) of every
    region, one row per region and sex of the table: the results table's ``population``
    column, the figure of the reports' tables and decision table
    (:func:`demonoise.analysis.decision.population`).

    A table without that column (an older one) falls back on the average population:
    the exposure of the ``e`` rows at age 0, else the sum of the ``asmr`` exposures.

    Returns
    -------
    DataFrame
        ``region, sex, population`` (one row per region and sex).
    """
    if "population" in df:
        out = df.drop_duplicates(["region", "sex"])[["region", "sex", "population"]]
        return out.sort_values(["region", "sex"]).reset_index(drop=True).astype({"population": float})
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0)]
    if len(e0):
        out = e0.groupby(["region", "sex"], as_index=False, sort=True)["exposure"].first()
    else:
        a = df[df["indicator"] == "asmr"]
        if not len(a):
            raise ParameterError("the results table has neither e (age 0) nor asmr rows: no population to show")
        first = a.drop_duplicates(["region", "sex", "age"])
        out = first.groupby(["region", "sex"], as_index=False, sort=True)["exposure"].sum()
    return out.rename(columns={"exposure": "population"})


_ROW_COLS = [
    "region",
    "region_name",
    "country",
    "sex",
    "V",
    "setting",
    "setting_key",
    "value",
    "events",
    "rel_pois",
    "rel_noise",
    "rel_tot",
    "admixture",
    "sd_noise",
    "sd_pois",
]


def age_summary(df: pd.DataFrame, indicator: str, *, sex: str = "T", stat: str = "median") -> pd.DataFrame:
    """Summary over ages of an age-specific indicator, per region and V.

    For ``asmr``/``asfr`` rows the median (or ``stat``: any pandas reduction name)
    over the age groups of ``rel_pois``, ``rel_noise``, ``rel_tot`` and ``admixture``;
    an age group without events has an infinite relative uncertainty and admixture
    and counts as such (a median is robust to a few of them). ``events`` is the sum
    over ages; ``value`` is not summarised (``nan``).
    """
    d = df[(df["indicator"] == indicator) & (df["sex"] == sex)]
    d = with_labels(d)
    g = d.groupby(["region", "setting", "setting_key"], sort=True)
    out = g.agg(
        V=("V", "first"),
        region_name=("region_name", "first"),
        country=("country", "first"),
        sex=("sex", "first"),
        events=("events", "sum"),
        ages=("age", "size"),
        rel_pois=("rel_pois", stat),
        rel_noise=("rel_noise", stat),
        rel_tot=("rel_tot", stat),
        admixture=("admixture", stat),
    ).reset_index()
    out["value"] = np.nan
    out["sd_noise"] = np.nan
    out["sd_pois"] = np.nan
    return out


def indicator_rows(df: pd.DataFrame, key: str, *, sex: str | None = None) -> pd.DataFrame:
    """One row per NUTS 2 region and setting for an overview indicator, with its population.

    Parameters
    ----------
    df : DataFrame
        A results table (:mod:`demonoise.analysis.results`); only its NUTS 2 rows are used.
    key : {"e0", "e65", "tfr", "asmr", "asfr"}
        See :data:`KEYS`; ``asmr``/``asfr`` are summarised by :func:`age_summary`.
    sex : {None, "T", "F", "M"}
        ``None`` (default): the sex rule of the reports -- per region and setting the sex
        (women, men, both sexes) with the largest admixture
        (:func:`~demonoise.analysis.decision.worst_sex`), named in ``sex``; else that sex.
        The fertility indicators are always ``F``.

    Returns
    -------
    DataFrame
        ``region, region_name, country, sex, V, setting, value, events, rel_pois,
        rel_noise, rel_tot, admixture, sd_noise, sd_pois, population`` -- ``population``
        is the region's population on 1 January (:func:`population`); one row per
        region and setting (the p-tables beside the V's).
    """
    if key not in KEYS:
        raise ParameterError(f"unknown overview indicator {key!r}; choose from {', '.join(KEYS)}")
    if sex not in (None, "T", "F", "M"):
        raise ParameterError(f"sex must be T, F, M or None (the worst of the three), got {sex!r}")
    d = nuts2(df)
    s = "F" if key in _FEMALE_ONLY else sex
    rows = _one_sex_rows(d, key, s) if s is not None else _worst_sex_rows(d, key)
    pop = population(d[d["setting"] == setting_order(d)[0]] if len(d) else d)
    rows = rows.merge(pop, on=["region", "sex"], how="left")
    order = {x: i for i, x in enumerate(setting_order(d))} if len(d) else {}
    rows = rows.assign(_o=rows["setting"].map(order)).sort_values(["region", "_o"], kind="stable")
    return rows.drop(columns="_o").reset_index(drop=True)


def _one_sex_rows(d: pd.DataFrame, key: str, sex: str) -> pd.DataFrame:
    """The rows of :func:`indicator_rows` of one sex (NUTS 2 rows ``d``, labelled)."""
    ind, age, how = KEYS[key]
    if how == "median":
        return age_summary(d, ind, sex=sex)
    sel = (d["indicator"] == ind) & (d["sex"] == sex)
    if age is not None:
        sel &= d["age"] == age
    return d.loc[sel, _ROW_COLS].copy()


def _worst_sex_rows(d: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per region and setting the row of the sex with the largest admixture."""
    from demonoise.analysis.decision import worst_sex

    allr = pd.concat([_one_sex_rows(d, key, x) for x in SEXES], ignore_index=True)
    if allr.empty:
        return allr
    parts = [worst_sex(g).drop(columns=[f"admixture_{x}" for x in SEXES]) for _, g in allr.groupby("setting_key")]
    out = pd.concat(parts, ignore_index=True)
    return out[out["sex"] != ""].reset_index(drop=True)


def summary_table(df: pd.DataFrame, *, keys: Sequence[str] = tuple(KEYS), sex: str | None = None) -> pd.DataFrame:
    """Headline numbers per indicator and V over the NUTS 2 regions.

    Returns
    -------
    DataFrame
        ``indicator, V, regions, rel_noise_median, rel_noise_max, admixture_median,
        admixture_max, over_10, over_41`` -- the last two count regions with
        ``A > 10 %`` and ``A > sqrt(2) - 1`` (noise larger than Poisson). Indicators
        absent from ``df`` are skipped.
    """
    rows = []
    for key in keys:
        r = indicator_rows(df, key, sex=sex)
        for setting in setting_order(r):
            g = r[r["setting"] == setting]
            a = g["admixture"]
            rows.append(
                {
                    "indicator": key,
                    "V": float(g["V"].iloc[0]),
                    "setting": setting,
                    "regions": int(g["region"].nunique()),
                    "rel_noise_median": float(g["rel_noise"].median()),
                    "rel_noise_max": float(g["rel_noise"].max()),
                    "admixture_median": float(a.median()),
                    "admixture_max": float(a.max()),
                    "over_10": int((a > A_SMALL).sum()),
                    "over_41": int((a > A_EQUAL).sum()),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "indicator",
            "V",
            "setting",
            "regions",
            "rel_noise_median",
            "rel_noise_max",
            "admixture_median",
            "admixture_max",
            "over_10",
            "over_41",
        ],
    )


def _wide(rows: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """Rows per region x setting -> one row per region, ``<col>_V<v>`` per V (and
    ``<col>_ptable_<name>`` per p-table), in the settings' order. ``sex``, ``value`` and
    ``rel_pois`` are those of the first setting's row; where a region's worst sex differs
    between settings (a p-table beside the V's), ``sex_<tag>`` names each setting's."""
    base = rows.drop_duplicates("region")[
        ["region", "region_name", "country", "sex", "population", "value", "events", "rel_pois"]
    ]
    out = base.set_index("region")
    per_sex = bool(len(rows)) and rows.groupby("region")["sex"].nunique().max() > 1
    for s in overview_settings(rows):
        g = rows[rows["setting_key"] == s.key].set_index("region")
        for c in (["sex"] if per_sex else []) + list(cols):
            out[f"{c}_{s.tag}"] = g[c]
    return out.reset_index()


def most_affected(
    df: pd.DataFrame, n: int = 20, *, key: str = "e0", sex: str | None = None, by: float | None = None
) -> pd.DataFrame:
    """The ``n`` NUTS 2 regions with the largest noise admixture of an indicator.

    Parameters
    ----------
    df : DataFrame
        Results table.
    n : int
        Rows to keep.
    key, sex
        As in :func:`indicator_rows`.
    by : float, optional
        Rank by the admixture at this V (default: the largest V of the table).

    Returns
    -------
    DataFrame
        ``region, region_name, country, sex, population, value, events, rel_pois``, then
        ``rel_noise_V<v>`` and ``admixture_V<v>`` for every V (ascending), sorted by
        ``admixture_V<by>`` descending (ties: region code).
    """
    if n < 1:
        raise ParameterError(f"n must be >= 1, got {n}")
    rows = indicator_rows(df, key, sex=sex)
    vs = [s.V for s in overview_settings(rows) if s.is_generic]
    if not vs:
        raise ParameterError(f"no rows for {key} (sex {sex}) in the results table")
    by = vs[-1] if by is None else float(by)
    if by not in vs:
        raise ParameterError(f"V = {by:g} not in the results table (it has {', '.join(f'{v:g}' for v in vs)})")
    w = _wide(rows, ["rel_noise", "admixture"])
    col = f"admixture_{NoiseSetting.generic(by).tag}"
    w = w.sort_values([col, "region"], ascending=[False, True], kind="stable", na_position="last")
    return w.head(n).reset_index(drop=True)


def granularity_effect(
    df_single: pd.DataFrame, df_5y: pd.DataFrame, *, keys: Sequence[str] = ("e0", "e65", "tfr"), sex: str = "T"
) -> pd.DataFrame:
    """Noise of an indicator published from single-age cells vs from 5-year cells.

    Per NUTS 2 region, V and indicator: ``ratio = sd_noise(single) / sd_noise(5y)``,
    the factor by which publishing 5-year groups (0-4, ..., 80-84, 85+; births by
    age of mother 15-19, ..., 45-49) instead of single ages divides the noise
    standard deviation (for the generic model it is the same at every V, since
    ``Var_noise`` is proportional to V).

    Returns
    -------
    DataFrame
        ``indicator, region, region_name, country, population, V, sd_noise_single,
        sd_noise_5y, ratio, admixture_single, admixture_5y`` (regions in both tables only).
    """
    frames = []
    for key in keys:
        a = indicator_rows(df_single, key, sex=sex)
        b = indicator_rows(df_5y, key, sex=sex)
        if not len(a) or not len(b):
            continue
        m = a.merge(
            b[["region", "setting_key", "sd_noise", "admixture"]],
            on=["region", "setting_key"],
            suffixes=("_single", "_5y"),
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            m["ratio"] = m["sd_noise_single"] / m["sd_noise_5y"]
        m.insert(0, "indicator", key)
        frames.append(
            m[
                [
                    "indicator",
                    "region",
                    "region_name",
                    "country",
                    "population",
                    "V",
                    "setting",
                    "setting_key",
                    "sd_noise_single",
                    "sd_noise_5y",
                    "ratio",
                    "admixture_single",
                    "admixture_5y",
                ]
            ]
        )
    if not frames:
        raise ParameterError(f"no common rows for {', '.join(keys)} in the two results tables")
    return pd.concat(frames, ignore_index=True)


def granularity_summary(effect: pd.DataFrame) -> pd.DataFrame:
    """Per indicator and V: the noise-sd ratio over regions (median, min, max) and the
    admixture in both publications (median; regions with ``A > sqrt(2) - 1``)."""
    g = effect.groupby(["indicator", "setting"], sort=False)
    out = g.agg(
        V=("V", "first"),
        regions=("region", "nunique"),
        ratio_median=("ratio", "median"),
        ratio_min=("ratio", "min"),
        ratio_max=("ratio", "max"),
        admixture_single_median=("admixture_single", "median"),
        admixture_5y_median=("admixture_5y", "median"),
        over_41_single=("admixture_single", lambda s: int((s > A_EQUAL).sum())),
        over_41_5y=("admixture_5y", lambda s: int((s > A_EQUAL).sum())),
    )
    out = out.reset_index()
    return out[["indicator", "V", *[c for c in out.columns if c not in ("indicator", "V")]]]


def map_values(df: pd.DataFrame, *, key: str = "e0", sex: str | None = None) -> pd.DataFrame:
    """What the map shows: per region and V, the admixture and relative noise sd in %.

    Returns
    -------
    DataFrame
        ``region, region_name, country, V, population, value, A, rel_noise_pct,
        rel_pois_pct`` (``A`` in %).
    """
    r = indicator_rows(df, key, sex=sex)
    out = r[["region", "region_name", "country", "V", "setting", "setting_key", "population", "value"]].copy()
    out["A"] = 100.0 * r["admixture"]
    out["A_class"] = admixture_class(out["A"])
    out["rel_noise_pct"] = 100.0 * r["rel_noise"]
    out["rel_pois_pct"] = 100.0 * r["rel_pois"]
    return out


def admixture_class(A_pct) -> pd.Series:
    """Map class of an admixture in %: the label of the reports' class
    (:func:`demonoise.core.vocabulary.admixture_class`: intervals closed on the left at
    10 % and 41.4 %, ``sqrt(2) - 1``, noise = Poisson); ``nan`` -> ``"no data"``."""
    a = pd.Series(A_pct, dtype=float)
    idx = np.searchsorted(np.asarray(MAP_BREAKS), a.to_numpy(), side="right")
    labels = np.array(MAP_CLASSES, dtype=object)[idx]
    return pd.Series(np.where(a.isna().to_numpy(), NO_DATA, labels), index=a.index, dtype=object)


def outside_table(values: pd.DataFrame, codes: Iterable[str]) -> pd.DataFrame:
    """The map's values for regions not drawn (``codes``, e.g. :func:`outside_frame`):
    one row per region, ``region, region_name, population, value``, then
    ``rel_noise_V<v>`` and ``admixture_V<v>`` (fractions) per V."""
    t = values[values["region"].isin(list(codes))]
    out = t.drop_duplicates("region")[["region", "region_name", "population", "value"]].set_index("region")
    for s in overview_settings(t) if "setting_key" in t else []:
        g = t[t["setting_key"] == s.key].set_index("region")
        out[f"rel_noise_{s.tag}"] = g["rel_noise_pct"] / 100.0
        out[f"admixture_{s.tag}"] = g["A"] / 100.0
    return out.reset_index().sort_values("region").reset_index(drop=True)


#: Map frame: lon_min, lat_min, lon_max, lat_max (the data README's tested view).
EUROPE_FRAME = (-24.0, 34.5, 44.8, 71.2)
#: NUTS 2 regions that fall outside :data:`EUROPE_FRAME` (EU outermost regions); the
#: overview lists them in a table (checked against the geometry in the tests).
OUTERMOST = ("ES70", "FRY1", "FRY2", "FRY3", "FRY4", "FRY5", "PT20", "PT30")


def in_frame(features: list[dict], frame: Sequence[float] = EUROPE_FRAME) -> list[dict]:
    """Features whose bounding box meets ``frame`` (the others are not drawn)."""
    from demonoise.io.geo import feature_bounds

    x0, y0, x1, y1 = frame
    out = []
    for f in features:
        a, b, c, d = feature_bounds(f)
        if not (c < x0 or a > x1 or d < y0 or b > y1):
            out.append(f)
    return out


def outside_frame(
    geojson: dict | None = None, frame: Sequence[float] = EUROPE_FRAME, codes: Iterable[str] | None = None
) -> list[str]:
    """Codes of the regions whose bounding box lies entirely outside ``frame``
    (``lon_min, lat_min, lon_max, lat_max``): not drawn on the map, listed in a table.

    ``codes`` restricts the answer to these regions (e.g. those of a dataset).
    """
    from demonoise.io.geo import nuts2_features

    feats = nuts2_features(geojson=geojson)
    drawn = {f["properties"]["NUTS_ID"] for f in in_frame(feats, frame)}
    want = None if codes is None else set(codes)
    return sorted(
        c for c in (f["properties"]["NUTS_ID"] for f in feats) if c not in drawn and (want is None or c in want)
    )


def drawn_codes(geojson: dict | None = None, frame: Sequence[float] = EUROPE_FRAME) -> list[str]:
    """Codes of the regions the map draws (those not entirely outside ``frame``)."""
    from demonoise.io.geo import nuts2_features

    return sorted(f["properties"]["NUTS_ID"] for f in in_frame(nuts2_features(geojson=geojson), frame))


def no_data_on_map(
    values: pd.DataFrame, geojson: dict | None = None, frame: Sequence[float] = EUROPE_FRAME
) -> dict[str, list[str]]:
    """Regions drawn on the map without a value (grey), by country code."""
    have = set(values["region"])
    out: dict[str, list[str]] = {}
    for code in drawn_codes(geojson, frame):
        if code not in have:
            out.setdefault(code[:2], []).append(code)
    return out


def fit_points(features: list[dict], frame: Sequence[float] = EUROPE_FRAME) -> dict:
    """A MultiPoint for the projection's ``fit``: the westernmost, easternmost,
    southernmost and northernmost vertex of every feature, kept within ``frame``.

    Fitting to the regions themselves (not to the corners of the lon/lat box, which
    lie in the Atlantic and in Russia) lets Europe fill the view.
    """
    from demonoise.io.geo import iter_positions

    x0, y0, x1, y1 = frame
    pts: set[tuple[float, float]] = set()
    for f in features:
        ps = [p for p in iter_positions(f["geometry"]["coordinates"]) if x0 <= p[0] <= x1 and y0 <= p[1] <= y1]
        if not ps:
            continue
        for key in (lambda p: p[0], lambda p: p[1]):
            pts.add(tuple(min(ps, key=key)[:2]))
            pts.add(tuple(max(ps, key=key)[:2]))
    return {
        "type": "Feature",
        "properties": {},
        "geometry": {"type": "MultiPoint", "coordinates": sorted([list(p) for p in pts])},
    }


# The calibration table comes from demonoise.uncertainty.calibration.calibrate(counts, thresholds,
# ...) (columns include region, nuts_level, sex, indicator, age, threshold, V_max,
# status). The two functions below build the overview's calibration section from that
# DataFrame alone (tested on a hand-made frame in tests/test_overview.py).
def calibration_rows(cal: pd.DataFrame, key: str, sex: str | None = None) -> pd.DataFrame:
    """The NUTS 2 rows of a calibration table for one indicator (``e0``, ``e65``, ``tfr``).

    ``sex=None`` (default): per region and threshold the row of the sex with the smallest
    ``V_max`` (the worst of women, men and both sexes; ties: F, M, T), the rule of the
    reports' largest V by region; else the rows of that sex. The TFR is women's.
    """
    need = {"region", "sex", "indicator", "age", "threshold", "V_max"}
    missing = need - set(cal.columns)
    if missing:
        raise ParameterError(f"not a calibration table: column(s) {', '.join(sorted(missing))} missing")
    if key not in KEYS or KEYS[key][2] != "row":
        raise ParameterError(f"calibration overview: indicator must be one of e0, e65, tfr, got {key!r}")
    ind, age, _ = KEYS[key]
    s = "F" if key in _FEMALE_ONLY else sex
    d = cal[(cal["indicator"] == ind) & (cal["sex"].isin(SEXES if s is None else [s]))]
    if "nuts_level" in d:
        d = d[d["nuts_level"] == 2]
    if age is not None:
        d = d[d["age"] == age]
    if s is None and len(d):
        rank = d["sex"].map({x: i for i, x in enumerate(SEXES)})
        vm = d["V_max"].astype(float).fillna(np.inf)
        d = d.assign(_v=vm, _s=rank).sort_values(["region", "threshold", "_v", "_s"], kind="stable")
        d = d.drop_duplicates(["region", "threshold"]).drop(columns=["_v", "_s"])
    return d


def calibration_table(
    cal: pd.DataFrame,
    *,
    keys: Sequence[str] = ("e0", "e65", "tfr"),
    sex: str | None = None,
    V: Sequence[float] = (1.0, 5.0),
) -> pd.DataFrame:
    """Overview of a calibration: per indicator and admixture threshold, over NUTS 2 regions.

    ``V_max`` is the largest noise variance that keeps the admixture of a region at or
    below the threshold (``inf``: no noise reaches the indicator; ``nan``: undefined).

    Returns
    -------
    DataFrame
        ``indicator, threshold, regions, V_max_min, region_min, sex_min, V_max_median``
        (``sex_min`` the sex of the smallest ``V_max``: :func:`calibration_rows`), and
        ``below_V<v>`` for every ``v`` in ``V``: the number of regions with
        ``V_max < v`` (where V = v would exceed the threshold). Medians and minima are
        over the regions with a ``V_max`` (``nan`` left out, ``inf`` kept).
    """
    rows = []
    V = [float(v) for v in V]
    for key in keys:
        d = calibration_rows(cal, key, sex)
        for thr, g in d.groupby("threshold", sort=True):
            has = g[g["V_max"].notna()]
            row: dict[str, Any] = {"indicator": key, "threshold": float(thr), "regions": int(g["region"].nunique())}
            if len(has):
                k = has["V_max"].idxmin()
                row.update(
                    V_max_min=float(has["V_max"].min()),
                    region_min=str(has.at[k, "region"]),
                    sex_min=str(has.at[k, "sex"]),
                    V_max_median=float(has["V_max"].median()),
                )
            else:
                row.update(V_max_min=np.nan, region_min="", sex_min="", V_max_median=np.nan)
            for v in V:
                row[f"below_{_v_tag(v)}"] = int((has["V_max"] < v).sum())
            rows.append(row)
    cols = ["indicator", "threshold", "regions", "V_max_min", "region_min", "sex_min", "V_max_median"] + [
        f"below_{_v_tag(v)}" for v in V
    ]
    return pd.DataFrame(rows, columns=cols)


def load_inputs(
    dataset: str,
    V: Sequence[float],
    results_single: str = "",
    results_5y: str = "",
    calibration: str = "",
    *,
    ptables: Sequence[str] = (),
):
    """What the overview notebook reads: the two results tables (restricted to the
    V's asked for) and the calibration table (``None`` if ``calibration`` is empty).

    An empty results path (an interactive run) is computed here from the whole dataset
    (:func:`demonoise.analysis.compute.compute`, single ages or 5-year groups, e0 and e65).
    """
    from demonoise.analysis.compute import compute, noise_settings, read_results
    from demonoise.io.datasets import load

    V = [float(v) for v in V]
    tables = []
    for path, gran in ((results_single, "single"), (results_5y, "5y")):
        if path:
            df = read_results(path)
        else:
            df = compute(load(dataset), noise_settings(V, ptables=ptables), granularity=gran, e_ages=(0, 65))
        missing = sorted(set(V) - set(v_values(df)))
        if missing:
            raise ParameterError(
                f"results table {path or gran} has no rows for V = {', '.join(f'{v:g}' for v in missing)}"
            )
        kept = df[df["V"].isin(V) | (df["noise_model"] != "generic")]
        # the setting label of every row, worked out once here rather than by each
        # table and chart of the notebook (the whole dataset has a million rows)
        tables.append(with_labels(kept))
    cal = read_results(calibration) if calibration else None
    return tables[0], tables[1], cal
