"""Altair chart builders over the tidy results table (:mod:`demonoise.analysis.results`): each
draws what the library computed (the regions' order and labels, the runs of admixture classes:
:mod:`demonoise.analysis.verdicts`). Relative uncertainties and admixtures in per cent, the
latter with reference lines at 10 % (noise adds a tenth to the statistical uncertainty) and
41 % (noise as large as Poisson: ``sqrt(2) - 1``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd

from demonoise.analysis.verdicts import NO_EVENTS, admixture_runs, by_population, panel_rows, row_region_labels
from demonoise.core.vocabulary import A_EQUAL, A_SMALL, ADMIXTURE_CLASSES, NO_DATA_COLOUR, POISSON_COLOUR, TOTAL_COLOUR
from demonoise.report.content.theme import log_axis, region_colours, setting_colours

#: Above this many regions, one line per region is unreadable: charts switch to a
#: heatmap (admixture) or highlight the country and the smallest region (values).
MAX_LINES = 7
#: The population axis of every chart against population.
POPULATION = "population on 1 January (both sexes)"
#: The admixture classes of the heatmaps, in legend order ("no events" last), and their colours.
_CLASSES = {c.label: c.colour for c in ADMIXTURE_CLASSES} | {NO_EVENTS: NO_DATA_COLOUR}
#: The admixture's reference lines (%): noise adds a tenth; noise as large as Poisson.
ADMIX_REF = pd.DataFrame({"A": [100 * A_SMALL, 100 * A_EQUAL], "label": ["noise adds 10 %", "noise = Poisson (41 %)"]})
#: Legends: at the top (the default); of series told apart by colour and line pattern.
_TOP = {"orient": "top"}
_STROKE_LEGEND = {"title": None, "orient": "top", "symbolType": "stroke", "symbolStrokeWidth": 2}
_AGE = alt.X("age:Q", title="age", scale=alt.Scale(zero=False, nice=False))
_OTHERS = "other NUTS 2 regions"
#: The start of the subtitle of a chart that leaves regions out (:func:`~demonoise.analysis.verdicts.panel_rows`).
_CUT = "the country, the largest and the smallest regions"


def nominal(field: str, styles: Mapping, channel=alt.Color, legend: Mapping | None = _TOP, **kw):
    """``channel`` (``alt.Color`` ...) of the nominal ``field``: each value of ``styles`` (in
    legend order) drawn in its style, in a legend of the settings ``legend`` (``None``: none)."""
    scale = alt.Scale(domain=list(styles), range=list(styles.values()))
    return channel(f"{field}:N", scale=scale, legend=None if legend is None else alt.Legend(**legend), **kw)


def _cols(df: pd.DataFrame, *extra: str, **new) -> pd.DataFrame:
    """The figure's CSV columns: those a chart uses (not all forty), ``new`` ones, the region's label."""
    base = ["region", "region_name", "nuts_level", "sex", "age", "age_group", "events", "exposure", "small_count"]
    d = df[[c for c in dict.fromkeys([*base, *extra]) if c in df]].assign(**new)
    d["region_label"] = row_region_labels(d)
    return d


def _facet_layout(n: int) -> tuple[int, int, int]:
    """(columns, panel width, panel height) of ``n`` facets within a report column (~ 820 px)."""
    for most, layout in ((2, (n, 300, 170)), (4, (2, 300, 150)), (9, (3, 200, 110)), (16, (4, 150, 85))):
        if n <= most:
            return layout
    return 6, 100, 62


def _title(text, subtitle: str | None = None):
    """A title with a subtitle (the figure's caption); a caller's ``alt.TitleParams`` kept as given."""
    return text if isinstance(text, alt.TitleParams) else alt.TitleParams(text or "", subtitle=subtitle or "")


def _settings_order(df: pd.DataFrame, settings) -> list[str]:
    return list(settings) if settings else df["setting"].drop_duplicates().tolist()


def _prefixed(prefix: str, order_s: list[str]) -> dict[str, str]:
    """``prefix`` + each setting -> the setting's colour (:func:`~.theme.setting_colours`)."""
    return {f"{prefix}{s}": c for s, c in setting_colours(order_s).items()}


def _faceted(layer, order: list[str], size: tuple[int, int], title, subtitle: str, *, y=None, **header):
    """``layer`` per region (in ``order``), ``size`` each, in :func:`_facet_layout`'s columns; ``y``: y resolution."""
    grid = layer.properties(width=size[0], height=size[1]).facet(
        facet=alt.Facet("region_label:N", title=None, sort=order, header=alt.Header(labelFontSize=10, **header)),
        columns=_facet_layout(len(order))[0],
    )
    return (grid.resolve_scale(y=y) if y else grid).properties(title=_title(title, subtitle))


def reference_lines(ref: pd.DataFrame, y: str, x: int, *, rule: str = "#888", text: str = "#666", dx: int = 0, **mark):
    """Dashed rules at the ``y`` values of ``ref`` (:data:`ADMIX_REF`: the 10 % and 41 % lines),
    each named by its ``label``, ending at ``x`` px (with ``dx``: starting ``dx`` px right of it)."""
    rules = alt.Chart(ref).mark_rule(strokeDash=[4, 3], color=rule, **mark).encode(y=f"{y}:Q")
    names = (
        alt.Chart(ref)
        .mark_text(align="left" if dx else "right", dx=dx, dy=-5, fontSize=9, color=text, **mark)
        .encode(y=f"{y}:Q", x=alt.value(x), text="label:N")
    )
    return rules, names


def value_by_age(df: pd.DataFrame, *, title: str = "", y_title: str = "value", log: bool = False):
    """The indicator itself by age, a line per region; with more than :data:`MAX_LINES` regions
    thin grey lines, only the country (black) and the smallest region (red) coloured and named."""
    d = _cols(df[np.isfinite(df["value"])], "value")
    d = d[d["value"] > 0] if log else d
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False), axis=alt.Axis())
    y = log_axis(alt.Y, "value", y_title, d["value"]) if log else y
    axes = {"x": alt.X("age:Q", title="age"), "y": y}
    chart = alt.Chart(d).properties(width=560, height=240, title=title)
    if d["region"].nunique() <= MAX_LINES:
        legend = {"orient": "bottom", "columns": 2, "labelLimit": 220}
        colour = nominal("region_label", region_colours(by_population(df)), title="region", legend=legend)
        return chart.mark_line(strokeWidth=1.2).encode(color=colour, **axes)
    country = d.loc[d["nuts_level"] == 0, "region_label"].unique().tolist()
    smallest = [o for o in by_population(df) if o not in country][-1]
    roles = {c: f"country: {c}" for c in country} | {smallest: f"smallest: {smallest}"}
    d["role"] = d["region_label"].map(roles).fillna(_OTHERS)
    colours = {r: "#111111" for r in roles.values()} | {roles[smallest]: "#d62728", _OTHERS: "#b8c2cc"}
    colours = {r: c for r, c in colours.items() if r in set(d["role"])}
    d["order"] = d["role"].map({r: i for i, r in enumerate(reversed(colours))})
    colour = nominal("role", colours, title=None, legend={"orient": "top", "labelLimit": 320})
    width_by_role = alt.condition(alt.datum.role == _OTHERS, alt.value(0.8), alt.value(1.8))
    return chart.mark_line().encode(
        detail="region_label:N", color=colour, strokeWidth=width_by_role, order="order:Q", **axes
    )


def uncertainty_vs_population(df: pd.DataFrame, *, title: str = "", width: int = 420, height: int = 280, settings=None):
    """Relative uncertainty (%) against population, log-log, a point per region
    and series: Poisson (crosses), each setting's noise (dots in its colour; rings, said in the
    subtitle, where they lie on an earlier series': :func:`coinciding`); the smallest region and
    the largest relative noise named. ``df``: :func:`~demonoise.analysis.verdicts.across_settings`."""
    d = _cols(df, "rel_noise", "rel_pois", "setting", "population", people=df["population"])
    order = _settings_order(d, settings)
    first = d[d["setting"] == order[0]]
    noise = d.assign(rel=100.0 * d["rel_noise"], series="noise, " + d["setting"])
    long = pd.concat([first.assign(rel=100.0 * first["rel_pois"], series="Poisson"), noise], ignore_index=True)
    long = long[np.isfinite(long["rel"]) & (long["rel"] > 0) & (long["people"] > 0)]
    colours = {"Poisson": POISSON_COLOUR} | _prefixed("noise, ", order)
    x = log_axis(alt.X, "people", POPULATION, long["people"], ",~s")
    y = log_axis(alt.Y, "rel", "relative uncertainty (%)", long["rel"])
    # a setting whose dots lie on an earlier one's is drawn as rings around them
    rings = coinciding(long, series="series", value="rel", keys=["region"], order=list(colours), height=height)
    fills = {s: "transparent" if s == "Poisson" or s in rings else c for s, c in colours.items()}
    sizes = alt.Scale(type="ordinal", domain=list(colours), range=[110 if s in rings else 40 for s in colours])
    points = (
        alt.Chart(long)
        .mark_point(opacity=0.85, strokeWidth=1.2)
        .encode(
            x=x,
            y=y,
            color=nominal("series", colours, title=None),
            shape=nominal("series", {s: "cross" if s == "Poisson" else "circle" for s in colours}, alt.Shape, None),
            fill=nominal("series", fills, alt.Fill, None),
            size=alt.Size("series:N", scale=sizes, legend=None),
        )
    )
    smallest, worst = first.nsmallest(1, "people"), noise[np.isfinite(noise["rel"])].nlargest(1, "rel")
    named = long["region"].isin([*smallest["region"], *worst["region"]])
    lab = long[named & (long["series"] == f"noise, {order[-1]}")].drop_duplicates("region")
    labels = (
        alt.Chart(lab)
        .mark_text(align="left", dx=6, dy=-6, fontSize=9, color=TOTAL_COLOUR)
        .encode(x=x, y=y, text="region_label:N")
    )
    note = "; ".join(f"{_bare(b)} (rings) lies on {_bare(a)} in most regions" for b, a in rings.items())
    return alt.layer(points, labels).properties(width=width, height=height, title=_title(title, note or None))


# ============================================================ across the settings
# A chapter shows each chart once, every setting of the batch in it. Two settings can give
# the same line (the p-table v01's noise variance is close to 1): the later one is then
# dashed, drawn over the earlier one (its gaps show the line beneath), and the subtitle says so.

#: Two lines coincide when at least :data:`COINCIDE_SHARE` of their common points lie within
#: :data:`RESOLUTION_PX` pixels of each other (a line is 1.1 px wide, anti-aliased).
RESOLUTION_PX = 2.0
COINCIDE_SHARE = 0.5


def coinciding(
    long: pd.DataFrame, *, series: str, value: str, keys: list[str], order: list[str], height: float
) -> dict[str, str]:
    """The series of ``order`` (in drawing order) drawn on an earlier one: ``{later: earlier}``.

    Two series coincide when at least :data:`COINCIDE_SHARE` of their common points (rows of
    ``long``: ``series``, a positive ``value`` and the ``keys`` that place a point, e.g. region and age)
    lie within :data:`RESOLUTION_PX` pixels of each other on a log y axis of ``height`` pixels.
    """
    y = np.log10(long.pivot_table(index=keys, columns=series, values=value, aggfunc="first"))
    v = np.log10(long[value].to_numpy(dtype=float))
    px = height / max(v.max() - v.min(), 1e-12) if len(v) else 0.0  # pixels per decade
    out: dict[str, str] = {}
    for i, later in enumerate(order):
        for earlier in order[:i]:
            both = y.reindex(columns=[earlier, later]).dropna()
            if len(both) and ((both[earlier] - both[later]).abs() * px <= RESOLUTION_PX).mean() >= COINCIDE_SHARE:
                out[later] = earlier
                break
    return out


def _bare(series: str) -> str:
    return series.removeprefix("noise, ")


def _dashed(long: pd.DataFrame, field: str, value: str, colours: dict[str, str], height: float):
    """Colour and line pattern of each series by age, one legend (dashed over an earlier one it lies on), the note."""
    over = coinciding(long, series=field, value=value, keys=["region_label", "age"], order=list(colours), height=height)
    dashes = itertools.cycle([[6, 4], [2, 3], [9, 3, 2, 3]])  # in turn; a series on no earlier one solid
    pattern = {s: next(dashes) if s in over else [1, 0] for s in colours}
    note = "; ".join(f"{_bare(b)} (dashed) lies on {_bare(a)} at most ages" for b, a in over.items())
    dash = nominal(field, pattern, alt.StrokeDash, _STROKE_LEGEND)
    return nominal(field, colours, legend=_STROKE_LEGEND), dash, note


def uncertainty_by_age_settings(df: pd.DataFrame, *, settings=None, title: str = ""):
    """Relative uncertainty (%) by age, a panel per region (at most 9: the country, the largest and
    the smallest): Poisson (blue, open circles where fewer than 10 events) and each setting's noise
    (in its colour; dashed, said in the subtitle, over an earlier series it lies on: :func:`coinciding`).
    ``df``: one indicator and sex (:func:`~demonoise.analysis.verdicts.across_settings`)."""
    order_s = _settings_order(df, settings)
    df, cut = panel_rows(df, 9)
    d = df[np.isfinite(df["rel_tot"]) & (df["rel_tot"] > 0)]
    keep = [c for c in ("region", "region_name", "sex", "age", "age_group", "events", "small_count") if c in d]
    first = d[d["setting"] == order_s[0]]
    pois = first[keep].assign(series="Poisson", rel=100.0 * first["rel_pois"].to_numpy())
    noise = d[keep].assign(series="noise, " + d["setting"], rel=100.0 * d["rel_noise"].to_numpy())
    long = pd.concat([pois, noise], ignore_index=True)
    long = long[np.isfinite(long["rel"]) & (long["rel"] > 0)]
    long["region_label"] = row_region_labels(long)
    order = by_population(df[df["setting"] == order_s[0]])
    _, w, h = _facet_layout(len(order))
    colour, dash, note = _dashed(long, "series", "rel", {"Poisson": POISSON_COLOUR} | _prefixed("noise, ", order_s), h)
    y = log_axis(alt.Y, "rel", None, long["rel"], most=6, gridOpacity=0.6)
    base = alt.Chart(long).encode(x=_AGE, y=y, color=colour)
    lines = base.mark_line(strokeWidth=1.1).encode(strokeDash=dash)
    small = base.transform_filter("datum.small_count && datum.series == 'Poisson'").mark_point(
        size=10, filled=False, opacity=0.7
    )
    what = "relative uncertainty in % (log scale); open circles: fewer than 10 events (first order unreliable)"
    subtitle = "; ".join(filter(None, [cut and _CUT, what, note]))
    return _faceted(alt.layer(lines, small, data=long), order, (w, h), title, subtitle, y="shared", labelLimit=w + 40)


def admixture_settings(df: pd.DataFrame, *, settings=None, title: str = ""):
    """Noise admixture by age: up to :data:`MAX_LINES` regions, a panel per region, a line per setting
    (log scale, the 10 % and 41 % lines, dashed as in :func:`uncertainty_by_age_settings`); with
    more, a heatmap of the classes (rows regions, columns ages) per setting."""
    order_s = _settings_order(df, settings)
    draw = _admixture_lines_settings if df["region"].nunique() <= MAX_LINES else _admixture_heatmaps
    return draw(df, order_s, by_population(df[df["setting"] == order_s[0]]), title)


def _admixture_lines_settings(df: pd.DataFrame, order_s: list[str], order: list[str], title: str):
    d = df[np.isfinite(df["admixture"]) & (df["admixture"] > 0)]
    d = _cols(d, "admixture", "setting", A=lambda d: 100.0 * d["admixture"])
    _, w, h = _facet_layout(len(order))
    y = log_axis(alt.Y, "A", "noise admixture A (%)", pd.concat([d["A"], ADMIX_REF["A"]]), most=6)
    colour, dash, note = _dashed(d, "setting", "A", setting_colours(order_s), h)
    lines = alt.Chart().mark_line(strokeWidth=1.2).encode(x=_AGE, y=y, color=colour, strokeDash=dash)
    ref = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(y=alt.datum(100 * A_SMALL))
    ref2 = alt.Chart().mark_rule(strokeDash=[2, 2], color="#555").encode(y=alt.datum(100 * A_EQUAL))
    refs = "grey dashed lines: A = 10 % (noise adds a tenth) and 41 % (noise as large as Poisson)"
    return _faceted(alt.layer(lines, ref, ref2, data=d), order, (w, h), title, "; ".join(filter(None, [refs, note])))


def _admixture_heatmaps(df: pd.DataFrame, order_s: list[str], order: list[str], title: str):
    runs = admixture_runs(df, order_s)
    row = max(9, min(16, int(380 / max(len(order), 1))))
    y = alt.Y("region_label:N", title=None, sort=order, axis=alt.Axis(labelLimit=200, labelFontSize=9))
    legend = {"orient": "top", "direction": "horizontal", "labelLimit": 260}
    colour = nominal("A_class", _CLASSES, title="noise admixture A", legend=legend)
    size = {"width": max(150, int(620 / max(len(order_s), 1))), "height": row * len(order)}
    rect = alt.Chart(runs).mark_rect().encode(x=_AGE, x2="age_end:Q", y=y, color=colour).properties(**size)
    return rect.facet(
        column=alt.Column("setting:N", title=None, sort=order_s, header=alt.Header(labelFontSize=11)),
    ).properties(title=_title(title, "rows: regions by falling population; columns: the noise settings"))


def regional_intervals_settings(df: pd.DataFrame, *, settings=None, title: str = "", x_title: str = ""):
    """One row per region: the value (black dot), its 95 % interval from Poisson alone (blue)
    and in total under each setting (Poisson and noise together, in the setting's colour),
    ``value + bias +- 1.96 sd``: one bar each, side by side in the region's row, every one
    named in the legend. ``df``: one row per region and setting."""
    order_s = _settings_order(df, settings)
    d = _cols(df, "value", "sd_pois", "sd_tot", "bias_noise", "setting")
    mid, half = d["value"] + d["bias_noise"].fillna(0.0), 1.96 * d["sd_tot"]
    tot = d.assign(series="Poisson and noise, " + d["setting"], lo=mid - half, hi=mid + half)
    first = d[d["setting"] == order_s[0]]
    half = 1.96 * first["sd_pois"]
    pois = first.assign(series="Poisson alone", lo=first["value"] - half, hi=first["value"] + half)
    bars = pd.concat([pois, tot], ignore_index=True)
    order = first.sort_values(["nuts_level", "exposure"], ascending=[True, False])["region_label"].tolist()
    colours = {"Poisson alone": POISSON_COLOUR} | _prefixed("Poisson and noise, ", order_s)
    legend = {"orient": "top", "columns": 2, "labelLimit": 260, "symbolType": "stroke", "symbolStrokeWidth": 3}
    y = alt.Y(
        "region_label:N", title=None, sort=order, axis=alt.Axis(labelLimit=220), scale=alt.Scale(paddingInner=0.2)
    )
    x = alt.X("lo:Q", title=x_title or "value", scale=alt.Scale(zero=False))
    offset = alt.YOffset("series:N", sort=list(colours))
    colour = nominal("series", colours, title="95 % intervals:", legend=legend)
    rules = (
        alt.Chart(bars).mark_rule(strokeWidth=3, opacity=0.85).encode(y=y, yOffset=offset, x=x, x2="hi:Q", color=colour)
    )
    pt = (
        alt.Chart(first.assign(series="value"))
        .mark_point(filled=True, size=18, opacity=1, color=TOTAL_COLOUR)
        .encode(y=y, x="value:Q", shape=nominal("series", {"value": "circle"}, alt.Shape, title=None))
    )
    layers = alt.layer(rules, pt).resolve_scale(shape="independent", color="independent")
    subtitle = "dot: the value; one bar per interval, side by side in the region's row"
    height = max(60, (8 + 5 * len(colours)) * len(order))
    return layers.properties(width=420, height=height, title=_title(title, subtitle))


def mc_check_settings(df: pd.DataFrame, *, settings=None, title: str = ""):
    """Analytic against Monte Carlo sd (noise and total), log-log, every setting in its
    colour (dots: noise, squares: total), y = x dashed; cells beyond sampling error
    (``|z| > 5``) ringed in red. ``None`` when the table holds no Monte Carlo results."""
    if "mc_sd_noise" not in df or df["mc_sd_noise"].isna().all():
        return None
    keys = ["region", "sex", "age_group", "setting"]
    d = pd.concat(
        [
            df[[*keys, f"sd_{c}", f"mc_sd_{c}", f"z_{c}"]]
            .set_axis([*keys, "analytic", "mc", "z"], axis=1)
            .assign(component=label)
            for c, label in (("noise", "noise"), ("tot", "total"))
        ],
        ignore_index=True,
    )
    d = d[np.isfinite(d["analytic"]) & np.isfinite(d["mc"]) & (d["analytic"] > 0) & (d["mc"] > 0)]
    if d.empty:
        return None
    lo, hi = float(min(d["analytic"].min(), d["mc"].min())), float(max(d["analytic"].max(), d["mc"].max()))
    x = log_axis(alt.X, "analytic", "analytic sd (first order)", [lo, hi])
    y = log_axis(alt.Y, "mc", "Monte Carlo sd", [lo, hi])
    shape = nominal("component", {"noise": "circle", "total": "square"}, alt.Shape, {"title": None, "orient": "bottom"})
    colour = nominal("setting", setting_colours(_settings_order(df, settings)), title=None)
    pts = alt.Chart(d).mark_point(filled=True, size=26, opacity=0.8).encode(x=x, y=y, shape=shape, color=colour)
    bad = d[d["z"].abs() > 5]
    ring = alt.Chart(bad).mark_point(size=120, filled=False, color="#c0392b", strokeWidth=1.5).encode(x=x, y=y)
    diag = pd.DataFrame({"analytic": [lo, hi], "mc": [lo, hi]})
    line = alt.Chart(diag).mark_line(color="#999", strokeDash=[3, 3]).encode(x="analytic:Q", y="mc:Q")
    subtitle = "dashed: Monte Carlo = analytic; red rings: |z| > 5 (beyond sampling error)"
    return alt.layer(line, pts, ring).properties(width=300, height=240, title=_title(title, subtitle))


# ============================================================ change over time
def level_series_settings(df: pd.DataFrame, *, settings=None, title: str = "", y_title: str = "", subtitle: str = ""):
    """A headline indicator by year, a panel per region (at most 12: the country, the largest and
    the smallest regions), each its own scale: the value (black dots on a line), its interval from
    Poisson alone (blue) and from Poisson and each setting's noise (a bar each, in its colour);
    ``y_title`` (the unit) in the subtitle. ``df``: :func:`demonoise.analysis.change.level_series`
    of one headline and sex, a ``setting`` label per row."""
    order_s = _settings_order(df, settings)
    df, cut = panel_rows(df, 12)
    level = float(df["confidence"].iloc[0]) if "confidence" in df and len(df) else 0.95
    pct = f"{100 * level:g} %"
    keep = ["region", "region_name", "nuts_level", "year", "value", "exposure", "indicator"]
    first = df[df["setting"] == order_s[0]]
    pois = first[keep].assign(series=f"Poisson, {pct}", lo=first["lo_poisson"], hi=first["hi_poisson"])
    tot = df[keep].assign(series="Poisson and noise, " + df["setting"], lo=df["lo_total"], hi=df["hi_total"])
    vals = first[keep].assign(series="value", lo=first["value"])
    data = pd.concat([pois, tot, vals], ignore_index=True)
    data["region_label"] = row_region_labels(data)
    data["kind"] = np.repeat(["band", "value"], [len(pois) + len(tot), len(vals)])
    colours = {"value": TOTAL_COLOUR, f"Poisson, {pct}": POISSON_COLOUR} | _prefixed("Poisson and noise, ", order_s)
    colour = nominal("series", colours, legend={"title": None, "orient": "top"})
    order = by_population(first)
    _, w, h = _facet_layout(len(order))
    x = alt.X("year:O", title=None, axis=alt.Axis(labelAngle=-90, labelFontSize=9))
    y = alt.Y("lo:Q", title=None, scale=alt.Scale(zero=False))
    band, value = alt.datum.kind == "band", alt.datum.kind == "value"
    base = alt.Chart().encode(x=x, y=y)
    offset = alt.XOffset("series:N", sort=list(colours)[1:])
    rules = base.transform_filter(band).mark_rule(strokeWidth=2).encode(xOffset=offset, y2="hi:Q", color=colour)
    line = base.transform_filter(value).mark_line(color=TOTAL_COLOUR, strokeWidth=0.8)
    dots = base.transform_filter(value).mark_point(filled=True, size=14, opacity=1).encode(color=colour)
    units = (f"{y_title}, " if y_title else "") + "each panel its own scale"
    subtitle = "; ".join(filter(None, [cut and _CUT, subtitle, units]))
    layers = alt.layer(rules, line, dots, data=data)
    return _faceted(layers, order, (max(w, 170), max(h, 110)), title, subtitle, y="independent")
