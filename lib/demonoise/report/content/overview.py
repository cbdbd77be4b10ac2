"""The Europe overview's charts and tables (every NUTS 2 region of a dataset, the settings side
by side), drawing what :mod:`demonoise.analysis.overview` computed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from demonoise.analysis.overview import (
    EUROPE_FRAME,
    KEY_TITLES,
    MAP_CLASSES,
    NO_DATA,
    SHORT_NAMES,
    calibration_rows,
    column_setting,
    fit_points,
    in_frame,
    setting_order,
    with_labels,
)
from demonoise.core.formats import fmt_int, fmt_num, fmt_pct
from demonoise.core.vocabulary import ADMIXTURE_CLASSES, NO_DATA_COLOUR, POISSON_COLOUR, admixture_class
from demonoise.report.content.charts import (
    ADMIX_REF,
    POPULATION,
    nominal,
    reference_lines,
    uncertainty_vs_population,
)
from demonoise.report.content.explain import SERIES_COLOURS
from demonoise.report.content.summary import (
    Coloured,
    HtmlTable,
    fmt_fixed_column,
    fmt_percent_column,
    grouped,
    region_labels,
)
from demonoise.report.content.theme import admixture_column, log_axis, setting_colours

_GEO_DATASET = "nuts2_2021"


# ============================================== calibration
_THRESHOLD_COLOURS = ["#08306b", "#2171b5", "#6baed6", "#c6dbef"]


def _threshold_label(t: float) -> str:
    return f"A \u2264 {100 * float(t):g} %"


def calibration_chart(
    cal: pd.DataFrame,
    pop: pd.DataFrame,
    *,
    keys: Sequence[str] = ("e0", "tfr"),
    sex: str | None = None,
    V: Sequence[float] = (1.0, 5.0),
):
    """``V_max`` against population (``pop``: ``region, sex, population``), log-log, a panel per
    indicator, a colour per admixture threshold, the V's of the run as rules."""
    V = [float(v) for v in V]
    ref = pd.DataFrame({"V": V, "label": [f"V = {v:g}" for v in V]})
    rule, text = reference_lines(ref, "V", 2, rule="#444", text="#444", dx=3)
    panels, legend = [], alt.Legend(orient="top")
    for key in keys:
        rows = calibration_rows(cal, key, sex)
        d = rows[np.isfinite(rows["V_max"]) & (rows["V_max"] > 0)].merge(pop, on=["region", "sex"], how="left")
        d = d[["region", "population", "V_max"]].assign(threshold_label=d["threshold"].map(_threshold_label))
        order = [_threshold_label(t) for t in sorted(rows["threshold"].unique())]
        few = len(order) <= len(_THRESHOLD_COLOURS)
        scale = alt.Scale(domain=order, **({"range": _THRESHOLD_COLOURS[: len(order)]} if few else {"scheme": "blues"}))
        x = log_axis(alt.X, "population", POPULATION, d["population"], ",~s")
        y = log_axis(alt.Y, "V_max", "largest V keeping A at or below the threshold", [*d["V_max"], *V])
        colour = alt.Color("threshold_label:N", title="threshold", sort=order, scale=scale, legend=legend)
        pts = alt.Chart(d).mark_point(filled=True, size=16, opacity=0.7).encode(x=x, y=y, color=colour)
        panels.append(alt.layer(pts, rule, text).properties(width=330, height=240, title=KEY_TITLES[key]))
    return alt.hconcat(*panels).resolve_scale(color="shared")


def population_scatter(rows: pd.DataFrame, *, title: str = ""):
    """Two log-log panels over the NUTS 2 regions (``rows``: :func:`indicator_rows`, a row per
    region and setting) against population: the relative uncertainty (the reports'
    :func:`~demonoise.report.content.charts.uncertainty_vs_population`) and the noise
    admixture (%, with the 10 % and 41 % lines), each setting in its colour."""
    rows = with_labels(rows)
    vs = setting_order(rows)
    left = uncertainty_vs_population(rows, settings=vs, width=340, height=300, title="relative uncertainty")
    a = rows[["region", "region_name", "population", "setting", "admixture"]]
    a = a.assign(A=100.0 * a["admixture"], series="noise, " + a["setting"])
    a = a[np.isfinite(a["A"]) & (a["A"] > 0) & (a["population"] > 0)].drop(columns=["admixture", "setting"])
    colours = {"Poisson": POISSON_COLOUR} | {f"noise, {v}": c for v, c in setting_colours(vs).items()}
    x = log_axis(alt.X, "population", POPULATION, rows["population"], ",~s")
    y = log_axis(alt.Y, "A", "noise admixture A (%)", pd.concat([a["A"], ADMIX_REF["A"]]))
    colour = nominal("series", colours, legend=None)
    points = alt.Chart(a).mark_point(size=30, opacity=0.75, filled=True, aria=False).encode(x=x, y=y, color=colour)
    rule, text = reference_lines(ADMIX_REF, "A", 338, rule="#666", text="#555", aria=False)
    right = alt.layer(points, rule, text).properties(width=340, height=300, title="noise admixture")
    return alt.hconcat(left, right).resolve_scale(color="shared").properties(title=title)


def admixture_map(
    values: pd.DataFrame, geojson: dict | None = None, *, title: str = "noise admixture A (%)", caption: str = ""
):
    """Choropleth of the admixture (``values["A"]``, %, :func:`~demonoise.analysis.overview.map_values`),
    one panel per setting, in the reports' classes and colours (no value: grey): azimuthal equal-area
    (centre 10 E, 52 N) fitted to the regions within :data:`~demonoise.analysis.overview.EUROPE_FRAME`,
    clipped to the view; the boundaries' credit underneath. ``title``: the legend's; ``caption``: the figure's.
    """
    from demonoise.io.geo import CREDIT, nuts2_features

    feats = in_frame(nuts2_features(geojson=geojson), EUROPE_FRAME)
    # The boundaries (and the fit) are inserted into the finished spec: Altair would
    # otherwise walk and validate every coordinate (~10 s for this file).
    geo = alt.Data(name=_GEO_DATASET)
    legend = {"orient": "bottom", "direction": "horizontal", "titleLimit": 500, "symbolType": "square"}
    legend |= {"symbolSize": 140, "columns": 7, "labelLimit": 120}
    colours = {k: c.colour for k, c in zip(MAP_CLASSES, ADMIXTURE_CLASSES, strict=True)} | {NO_DATA: NO_DATA_COLOUR}
    colour = nominal("A_class", colours, title=title, legend=legend)
    # the regions named in the SVG's ARIA labels (off in the reports, on where a test reads them)
    tip = [
        alt.Tooltip("properties.NUTS_ID:N", title="region"),
        alt.Tooltip("properties.NAME_LATN:N", title="name"),
        alt.Tooltip("A:Q", format=".3g"),
    ]
    values = with_labels(values)
    panels = [
        alt.Chart(geo)
        .mark_geoshape(clip=True, stroke="white", strokeWidth=0.25)
        .transform_lookup(
            lookup="properties.NUTS_ID",
            from_=alt.LookupData(
                values.loc[values["setting"] == v, ["region", "A", "A_class"]], "region", ["A", "A_class"]
            ),
            default=NO_DATA,
        )
        .encode(color=colour, tooltip=tip)
        .project(type="azimuthalEqualArea", rotate=[-10, -52, 0])
        .properties(width=380, height=380, title=v)
        for v in setting_order(values)
    ]
    credit = alt.TitleParams(CREDIT, orient="bottom", anchor="end", fontSize=9, fontWeight="normal", color="#555")
    chart = alt.hconcat(*panels, spacing=10).resolve_scale(color="shared").properties(title=credit)
    spec = alt.vconcat(chart).properties(title=caption).configure_view(stroke=None).to_dict()
    spec.setdefault("datasets", {})[_GEO_DATASET] = feats
    fit = fit_points(feats, EUROPE_FRAME)
    for panel in spec["vconcat"][0]["hconcat"]:
        panel["projection"]["fit"] = fit
    return SpecChart(spec)


class SpecChart:
    """A finished Vega-Lite spec (``to_dict()``) shown by the active Altair renderer: a chart
    whose inline data are too large for Altair's schema validation (the map's boundaries)."""

    def __init__(self, spec: dict):
        self.spec = spec

    def to_dict(self, **_) -> dict:
        return self.spec

    def _repr_mimebundle_(self, include=None, exclude=None):
        return alt.renderers.get()(self.spec)


def granularity_chart(effect: pd.DataFrame, *, title: str = ""):
    """Noise-sd ratio single-age / 5-year publication against population, one colour
    per indicator (:data:`~.explain.SERIES_COLOURS`, none of them a setting's; one V: the ratio
    is the same at every V for the generic model)."""
    effect = with_labels(effect)
    d = effect[(effect["setting"] == setting_order(effect)[0]) & np.isfinite(effect["ratio"]) & (effect["ratio"] > 0)]
    d = d[["indicator", "region", "region_name", "population", "ratio"]].replace({"indicator": SHORT_NAMES})
    order = [SHORT_NAMES.get(k, k) for k in effect["indicator"].drop_duplicates().tolist()]
    x = log_axis(alt.X, "population", POPULATION, d["population"], ",~s")
    y = alt.Y("ratio:Q", title="noise sd, single ages / 5-year groups", scale=alt.Scale(zero=False))
    colour = nominal("indicator", dict(zip(order, itertools.cycle(SERIES_COLOURS))), title=None, sort=order)
    chart = alt.Chart(d).mark_point(size=18, opacity=0.6, filled=True, aria=False).encode(x=x, y=y, color=colour)
    return chart.properties(width=560, height=240, title=title)


# ============================================================ tables
#: Column headers (other columns are named by their own words); a setting's columns
#: (``<column>_<tag>``) go under its label.
_HEADS = {
    "population": "population (1 Jan.)",
    "rel_pois": "Poisson sd (%)",
    "rel_noise": "noise sd (%)",
    "admixture": "A (%)",
    "rel_noise_median": "noise sd, median (%)",
    "rel_noise_max": "noise sd, max (%)",
    "admixture_median": "A, median (%)",
    "admixture_max": "A, max (%)",
    "over_10": "regions with A > 10 %",
    "over_41": "regions with A > 41 %",
    "ratio_median": "sd ratio, median",
    "ratio_min": "sd ratio, min",
    "ratio_max": "sd ratio, max",
    "admixture_single_median": "A single ages, median (%)",
    "admixture_5y_median": "A 5-year groups, median (%)",
    "over_41_single": "A > 41 %, single ages",
    "over_41_5y": "A > 41 %, 5-year groups",
    "threshold": "threshold A (%)",
    "V_max_min": "V_max, min",
    "region_min": "region with the min",
    "V_max_median": "V_max, median",
    "below": "regions with V_max < V",
}


def _cells(col: str, v: np.ndarray, digits: int) -> Coloured:
    """A column's cells in the reports' formats, the admixtures coloured by class; infinite: "\u221e"."""
    if col.startswith("admixture"):
        out = admixture_column(v)
    elif col.startswith("rel_"):
        out = fmt_percent_column(v)
    elif col == "threshold":
        out = [fmt_pct(float(t), 3).removesuffix(" %") for t in v]
    elif col in ("population", "events", "regions") or col.startswith(("over_", "below")):
        out = [fmt_int(x) for x in v]
    elif col == "value" or col.startswith("ratio"):
        out = fmt_fixed_column(v, significant=digits if col == "value" else 3)
    elif col.startswith("V_max"):
        out = [fmt_num(x, 3) for x in v]
    elif col == "V":
        out = [f"{float(x):g}" for x in v]
    else:
        out = [str(SHORT_NAMES.get(x, x)) for x in v]
    out = ["\u221e" if isinstance(x, float) and x == math.inf else s for s, x in zip(out, v, strict=True)]
    fills = [c.colour if c else "" for c in map(admixture_class, v)] if col.startswith("admixture") else [""] * len(v)
    return Coloured(out, fills)


def overview_table(df: pd.DataFrame, caption: str, *, value_name: str = "value", value_digits: int = 4) -> HtmlTable:
    """A table of :mod:`demonoise.analysis.overview` as the reports show theirs
    (:func:`~demonoise.report.content.summary.grouped`): the region's code and name in one
    column, the settings' columns (last in ``df``) under their labels, underlined in their
    colours, the admixtures coloured by class; ``value`` headed ``value_name`` with
    ``value_digits`` significant digits; the CSV holds ``df``."""
    frame = d = df.drop(columns=["setting_key"], errors="ignore")
    if "region_name" in d:
        d = d.assign(region=region_labels(d)).drop(columns="region_name")
    heads, blocks = {**_HEADS, "value": value_name}, {"": {}}
    for col in d.columns:
        base, setting = column_setting(col)
        head = heads.get(base, base.replace("_", " "))
        blocks.setdefault(setting.label if setting else "", {})[head] = _cells(base, d[col].to_numpy(), value_digits)
    first, palette = blocks.pop(""), setting_colours(list(blocks))
    return grouped(frame, first, [(x, palette[x], cols) for x, cols in blocks.items()], caption=caption)
