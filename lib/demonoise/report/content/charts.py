"""Altair chart builders over the tidy results table (:mod:`demonoise.analysis.results`).

Every builder takes the results table (or a slice of it) and returns an Altair chart;
nothing is computed here that the library has not computed already (the regions' order and
labels, the runs of admixture classes: :mod:`demonoise.analysis.verdicts`). Relative
uncertainties are shown in per cent, admixture in per cent with reference lines at
10 % (noise adds a tenth to the statistical uncertainty) and 41 % (noise as large as
Poisson: ``sqrt(2) - 1``).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from demonoise.analysis.verdicts import NO_EVENTS, admixture_runs, by_population, panel_rows, row_region_labels
from demonoise.core.vocabulary import (
    A_EQUAL,
    A_SMALL,
    ADMIXTURE_CLASSES,
    NO_DATA_COLOUR,
    POISSON_COLOUR,
    TOTAL_COLOUR,
)
from demonoise.report.content.theme import log_axis, region_colours, setting_colours

__all__ = [
    "MAX_LINES",
    "value_by_age",
    "uncertainty_vs_population",
    "uncertainty_by_age_settings",
    "admixture_settings",
    "regional_intervals_settings",
    "mc_check_settings",
    "level_series_settings",
    "ADMIX_REF",
    "admixture_references",
]

#: Above this many regions, one line per region is unreadable: charts switch to a
#: heatmap (admixture) or highlight the country and the smallest region (values).
MAX_LINES = 7
#: The admixture classes of the heatmaps, in legend order ("no events" last), and their colours.
_CLASS_LABELS = [c.label for c in ADMIXTURE_CLASSES] + [NO_EVENTS]
_CLASS_COLOURS = [c.colour for c in ADMIXTURE_CLASSES] + [NO_DATA_COLOUR]
#: Legend entries of the interval charts: the value and its interval from Poisson alone.
VALUE = "value"
POISSON_ALONE = "Poisson alone"
#: The admixture's reference lines (%): noise adds a tenth; noise as large as Poisson.
ADMIX_REF = pd.DataFrame({"A": [100 * A_SMALL, 100 * A_EQUAL], "label": ["noise adds 10 %", "noise = Poisson (41 %)"]})
#: The legend of series told apart by colour and line pattern.
_STROKE_LEGEND = {"title": None, "orient": "top", "symbolType": "stroke", "symbolStrokeWidth": 2}
_AGE = alt.X("age:Q", title="age", scale=alt.Scale(zero=False, nice=False))


def _cols(df: pd.DataFrame, *extra: str, **new) -> pd.DataFrame:
    """Only the columns a chart uses (Altair embeds every column of its data in the spec,
    and the results table has forty), then the ``new`` ones (``DataFrame.assign``) and the
    region's label (the columns of the figure's CSV file, in this order)."""
    base = ["region", "region_name", "nuts_level", "sex", "age", "age_group", "events", "exposure", "small_count"]
    d = df[[c for c in dict.fromkeys([*base, *extra]) if c in df]].assign(**new)
    d["region_label"] = row_region_labels(d)
    return d


def _facet_layout(n: int) -> tuple[int, int, int]:
    """(columns, panel width, panel height) for ``n`` facets: the whole grid stays
    within a report column (~ 820 px) and panels stay readable with 28 regions."""
    for most, layout in ((2, (n, 300, 170)), (4, (2, 300, 150)), (9, (3, 200, 110)), (16, (4, 150, 85))):
        if n <= most:
            return layout
    return 6, 100, 62


def _title(text, subtitle: str | None = None):
    """A title with a subtitle (both styled by the theme); a caller's own ``alt.TitleParams``
    (e.g. with the data label as subtitle) is kept as given."""
    if isinstance(text, (alt.TitleParams, dict)) or not (text or subtitle):
        return text or ""
    return alt.TitleParams(text or "", subtitle=subtitle or "")


def _region_scale(df: pd.DataFrame) -> alt.Scale:
    """Colours of the regions of a report: by rank in the country (same in every chart)."""
    order = by_population(df)
    colours = region_colours(order)
    return alt.Scale(domain=order, range=[colours[o] for o in order])


def _settings_order(df: pd.DataFrame, settings) -> list[str]:
    return list(settings) if settings else df["setting"].drop_duplicates().tolist()


def _series(order_s: list[str], prefix: str, *lead: tuple[str, str]) -> tuple[list[str], list[str]]:
    """Legend entries and colours: ``lead`` (label, colour) pairs, then ``prefix`` + each
    setting in its colour (:func:`~demonoise.report.content.theme.setting_colours`)."""
    colours = setting_colours(order_s)
    pairs = [*lead, *((f"{prefix}{s}", colours[s]) for s in order_s)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _faceted(layer, order: list[str], size: tuple[int, int], title, subtitle: str, *, y=None, **header):
    """``layer`` drawn once per region (``region_label``, in ``order``), ``size`` (width,
    height) each, in the columns of :func:`_facet_layout`; ``y`` the y scales' resolution."""
    grid = layer.properties(width=size[0], height=size[1]).facet(
        facet=alt.Facet("region_label:N", title=None, sort=order, header=alt.Header(labelFontSize=10, **header)),
        columns=_facet_layout(len(order))[0],
    )
    return (grid.resolve_scale(y=y) if y else grid).properties(title=_title(title, subtitle))


def admixture_references(width: int, *, rule: str = "#888", text: str = "#666", **mark):
    """The 10 % and 41 % lines of an admixture axis (``A`` in %), named at the right edge."""
    rules = alt.Chart(ADMIX_REF).mark_rule(strokeDash=[4, 3], color=rule, **mark).encode(y="A:Q")
    names = (
        alt.Chart(ADMIX_REF)
        .mark_text(align="right", dy=-5, fontSize=9, color=text, **mark)
        .encode(y="A:Q", x=alt.value(width - 2), text="label:N")
    )
    return rules, names


def value_by_age(
    df: pd.DataFrame,
    *,
    title: str = "",
    y_title: str = "",
    log: bool = False,
    width: int = 560,
    height: int = 240,
):
    """The indicator itself by age, one line per region.

    With more than :data:`MAX_LINES` regions, every region is a thin grey line and only
    the country (black) and the smallest region (red) are coloured and named, so that
    the chart stays readable with 30 regions.
    """
    d = _cols(df[np.isfinite(df["value"])], "value")
    d = d[d["value"] > 0] if log else d
    y_title = y_title or "value"
    y = (
        log_axis(alt.Y, "value", y_title, d["value"])
        if log
        else alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False), axis=alt.Axis())
    )
    tip = ["region_label:N", "age_group:N", alt.Tooltip("value:Q", format=".4g")]
    axes = {"x": alt.X("age:Q", title="age"), "y": y, "tooltip": tip}
    size = {"width": width, "height": height, "title": title or ""}
    if d["region"].nunique() <= MAX_LINES:
        legend = alt.Legend(orient="bottom", columns=2, labelLimit=220)
        colour = alt.Color("region_label:N", title="region", scale=_region_scale(df), legend=legend)
        return alt.Chart(d).mark_line(strokeWidth=1.2).encode(color=colour, **axes).properties(**size)
    country = d.loc[d["nuts_level"] == 0, "region_label"].unique().tolist() if "nuts_level" in d else []
    regions = [o for o in by_population(df) if o not in country]
    smallest = regions[-1] if regions else None
    d["role"] = "other NUTS 2 regions"
    d.loc[d["region_label"] == smallest, "role"] = f"smallest: {smallest}"
    d.loc[d["region_label"].isin(country), "role"] = "country: " + (country[0] if country else "")
    colours = {"country: " + country[0]: "#111111"} if country else {}  # legend order: country, smallest, others
    colours |= {f"smallest: {smallest}": "#d62728", "other NUTS 2 regions": "#b8c2cc"}
    roles = [r for r in colours if r in set(d["role"])]
    d["order"] = d["role"].map({r: i for i, r in enumerate(reversed(roles))})
    colour = alt.Color(
        "role:N",
        title=None,
        scale=alt.Scale(domain=roles, range=[colours[r] for r in roles]),
        legend=alt.Legend(orient="top", labelLimit=320),
    )
    width_by_role = alt.condition(alt.datum.role == "other NUTS 2 regions", alt.value(0.8), alt.value(1.8))
    return (
        alt.Chart(d)
        .mark_line()
        .encode(detail="region_label:N", color=colour, strokeWidth=width_by_role, order="order:Q", **axes)
        .properties(**size)
    )


def uncertainty_vs_population(
    df: pd.DataFrame,
    *,
    title: str = "",
    width: int = 420,
    height: int = 280,
    x_title: str = "population on 1 January (both sexes)",
    settings: list[str] | None = None,
):
    """Relative uncertainty (%) against population, log-log, one point per region and
    series: Poisson (crosses, :data:`~demonoise.core.vocabulary.POISSON_COLOUR`) and the noise
    of every setting (dots, coloured by the setting's position in the batch). The smallest
    region and the one with the largest relative noise are labelled. A setting whose dots lie
    on an earlier series' (:func:`coinciding`) is drawn as larger rings around them, and the
    subtitle says so. ``df``: from
    :func:`demonoise.analysis.verdicts.across_settings` (a ``setting`` column). The x axis
    is the region's population on 1 January (both sexes, the ``population`` column: the
    figure of every table), else the rows' exposure."""
    people = df["population"] if "population" in df else df["exposure"]
    d = _cols(df, "rel_noise", "rel_pois", "setting", "population", people=people)
    order = settings or d["setting"].drop_duplicates().tolist()
    first = d[d["setting"] == order[0]] if (d["setting"] == order[0]).any() else d.drop_duplicates("region")
    noise = d.assign(rel=100.0 * d["rel_noise"], series="noise, " + d["setting"])
    long = pd.concat([first.assign(rel=100.0 * first["rel_pois"], series="Poisson"), noise], ignore_index=True)
    long = long[np.isfinite(long["rel"]) & (long["rel"] > 0) & (long["people"] > 0)]
    domain, rng = _series(order, "noise, ", ("Poisson", POISSON_COLOUR))
    x = log_axis(alt.X, "people", x_title, long["people"], ",~s")
    y = log_axis(alt.Y, "rel", "relative uncertainty (%)", long["rel"])
    # a setting whose dots lie on an earlier one's is drawn as rings around them
    rings = coinciding(long, series="series", value="rel", keys=["region"], order=domain, height=height, log=True)
    fills = [c if s not in rings else "transparent" for s, c in zip(domain, ["transparent"] + rng[1:], strict=True)]
    points = (
        alt.Chart(long)
        .mark_point(opacity=0.85, strokeWidth=1.2)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "series:N", title=None, scale=alt.Scale(domain=domain, range=rng), legend=alt.Legend(orient="top")
            ),
            shape=alt.Shape(
                "series:N", scale=alt.Scale(domain=domain, range=["cross"] + ["circle"] * len(order)), legend=None
            ),
            fill=alt.Fill("series:N", scale=alt.Scale(domain=domain, range=fills), legend=None),
            size=alt.Size(
                "series:N",
                scale=alt.Scale(type="ordinal", domain=domain, range=[110 if s in rings else 40 for s in domain]),
                legend=None,
            ),
            tooltip=[
                "region_label:N",
                "series:N",
                alt.Tooltip("people:Q", title="population", format=",.0f"),
                alt.Tooltip("rel:Q", format=".3g"),
            ],
        )
    )
    worst = noise[np.isfinite(noise["rel"])]
    named = {first.loc[first["people"].idxmin(), "region"]} if len(first) else set()
    if len(worst):
        named.add(worst.loc[worst["rel"].idxmax(), "region"])
    lab = long[long["region"].isin(named) & (long["series"] == f"noise, {order[-1]}")].drop_duplicates("region")
    labels = (
        alt.Chart(lab)
        .mark_text(align="left", dx=6, dy=-6, fontSize=9, color=TOTAL_COLOUR)
        .encode(x=x, y=y, text="region_label:N")
    )
    note = "; ".join(
        f"{b.removeprefix('noise, ')} (rings) lies on {a.removeprefix('noise, ')} in most regions"
        for b, a in rings.items()
    )
    return alt.layer(points, labels).properties(width=width, height=height, title=_title(title or "", note or None))


# ============================================================ across the settings
# An indicator chapter shows each chart once, with every noise setting of the batch in it
# (coloured by the setting's position, Poisson in its own colour), rather than once per
# setting: the settings meet in one picture, and the report stays short.
#
# Two settings can give the same line (the p-table v01 has a noise variance close to 1, so
# its series lies on the V = 1 series): the later one is then dashed, drawn over the
# earlier one (its gaps show the line beneath), and the subtitle says so.

#: The line pattern of a series that coincides with no earlier one.
SOLID = (1, 0)
#: The line patterns of the series drawn over an earlier one, in turn.
OVERLAY_DASHES = ((6, 4), (2, 3), (9, 3, 2, 3))
#: Two lines coincide when at least :data:`COINCIDE_SHARE` of their common points lie within
#: :data:`RESOLUTION_PX` pixels of each other (a line is 1.1 px wide, anti-aliased).
RESOLUTION_PX = 2.0
COINCIDE_SHARE = 0.5


def _pixels_per_unit(values: np.ndarray, height: float, log: bool) -> float:
    """Pixels per unit of the y axis (per decade on a log axis) spanning ``values``."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)] if log else v[np.isfinite(v)]
    if not len(v):
        return 0.0
    lo, hi = (np.log10(v.min()), np.log10(v.max())) if log else (v.min(), v.max())
    return height / max(hi - lo, 1e-12)


def coinciding(
    long: pd.DataFrame, *, series: str, value: str, keys: list[str], order: list[str], height: float, log: bool
) -> dict[str, str]:
    """The series of ``order`` drawn on an earlier one: ``{later: earlier}``.

    Parameters
    ----------
    long : DataFrame
        One row per point: ``series``, ``value`` and the ``keys`` that place a point (e.g.
        region and age); all panels share one y scale of ``height`` pixels.
    order : list of str
        The series in drawing order.
    log : bool
        Whether the y axis is logarithmic.

    Returns
    -------
    dict
        Two series coincide when at least :data:`COINCIDE_SHARE` of their common points
        lie within :data:`RESOLUTION_PX` pixels of each other on the chart.
    """
    wide = long.pivot_table(index=keys, columns=series, values=value, aggfunc="first")
    y = np.log10(wide.where(wide > 0)) if log else wide
    px = _pixels_per_unit(long[value].to_numpy(), height, log)
    out: dict[str, str] = {}
    for i, later in enumerate(order):
        for earlier in order[:i]:
            if later not in y or earlier not in y:
                continue
            both = y[[earlier, later]].dropna()
            near = (both[earlier] - both[later]).abs() * px <= RESOLUTION_PX
            if len(both) and near.mean() >= COINCIDE_SHARE:
                out[later] = earlier
                break
    return out


def _dashed(field: str, domain: list[str], rng: list[str], over: dict[str, str]):
    """The colour and the line pattern of the series of ``domain`` (solid, or a dash of its
    own over an earlier line), in one legend."""
    k = iter(range(len(domain)))
    dashes = [list(OVERLAY_DASHES[next(k) % len(OVERLAY_DASHES)]) if s in over else list(SOLID) for s in domain]
    legend = alt.Legend(**_STROKE_LEGEND)
    colour = alt.Color(f"{field}:N", scale=alt.Scale(domain=domain, range=rng), legend=legend)
    return colour, alt.StrokeDash(f"{field}:N", scale=alt.Scale(domain=domain, range=dashes), legend=legend)


def _overlay_note(over: dict[str, str], name=lambda s: s) -> str:
    """``"p-table v01 (dashed) lies on V = 1 at most ages"`` for each coinciding series."""
    return "; ".join(f"{name(b)} (dashed) lies on {name(a)} at most ages" for b, a in over.items())


def uncertainty_by_age_settings(df: pd.DataFrame, *, settings=None, title: str = ""):
    """Relative uncertainty (%) by age, one panel per region: Poisson (blue) and the noise
    of every setting (one line each, the setting's colour). ``df``: rows of one indicator
    and one sex for every setting, with a ``setting`` label
    (:func:`demonoise.analysis.verdicts.across_settings` with ``nuts_level=None``). Cells
    with fewer than 10 events are open circles on the Poisson line. With more than
    9 regions, the country, the largest region and the smallest ones are
    drawn (the admixture chart beside it shows every region). A series lying on an earlier
    one (:func:`coinciding`) is dashed over it, in the legend too, and the subtitle says so."""
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
    domain, rng = _series(order_s, "noise, ", ("Poisson", POISSON_COLOUR))
    order = by_population(df[df["setting"] == order_s[0]])
    _, w, h = _facet_layout(len(order))
    over = coinciding(
        long, series="series", value="rel", keys=["region_label", "age"], order=domain, height=h, log=True
    )
    colour, dash = _dashed("series", domain, rng, over)
    y = log_axis(alt.Y, "rel", None, long["rel"], most=6, gridOpacity=0.6)
    base = alt.Chart(long).encode(x=_AGE, y=y, color=colour)
    lines = base.mark_line(strokeWidth=1.1).encode(strokeDash=dash)
    small = base.transform_filter("datum.small_count && datum.series == 'Poisson'").mark_point(
        size=10, filled=False, opacity=0.7
    )
    note = _overlay_note(over, lambda s: s.removeprefix("noise, "))
    subtitle = (
        ("the country, the largest and the smallest regions; " if cut else "")
        + "relative uncertainty in % (log scale); open circles: fewer than 10 events (first order unreliable)"
        + (f"; {note}" if note else "")
    )
    return _faceted(alt.layer(lines, small, data=long), order, (w, h), title, subtitle, y="shared", labelLimit=w + 40)


def admixture_settings(df: pd.DataFrame, *, settings=None, title: str = ""):
    """Noise admixture by age for every setting: with up to :data:`MAX_LINES` regions one panel
    per region and a line per setting (log scale, the 10 % and 41 % reference lines); with
    more, a heatmap of the classes (rows regions, columns ages) side by side for the
    settings. A setting's line lying on an earlier one's (:func:`coinciding`) is dashed over
    it, and the subtitle says so."""
    if df["region"].nunique() <= MAX_LINES:
        return _admixture_lines_settings(df, _settings_order(df, settings), title)
    return _admixture_heatmaps(df, _settings_order(df, settings), title)


def _admixture_lines_settings(df: pd.DataFrame, order_s: list[str], title: str):
    colours = setting_colours(order_s)
    d = df[np.isfinite(df["admixture"]) & (df["admixture"] > 0)]
    d = _cols(d, "admixture", "setting", A=lambda d: 100.0 * d["admixture"])
    order = by_population(df[df["setting"] == order_s[0]])
    _, w, h = _facet_layout(len(order))
    y = log_axis(alt.Y, "A", "noise admixture A (%)", pd.concat([d["A"], ADMIX_REF["A"]]), most=6)
    over = coinciding(d, series="setting", value="A", keys=["region_label", "age"], order=order_s, height=h, log=True)
    colour, dash = _dashed("setting", order_s, [colours[s] for s in order_s], over)
    lines = alt.Chart().mark_line(strokeWidth=1.2).encode(x=_AGE, y=y, color=colour, strokeDash=dash)
    ref = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(y=alt.datum(100 * A_SMALL))
    ref2 = alt.Chart().mark_rule(strokeDash=[2, 2], color="#555").encode(y=alt.datum(100 * A_EQUAL))
    note = _overlay_note(over)
    subtitle = "grey dashed lines: A = 10 % (noise adds a tenth) and 41 % (noise as large as Poisson)" + (
        f"; {note}" if note else ""
    )
    size = (max(w, 200) if len(order) <= 2 else w, h)
    return _faceted(alt.layer(lines, ref, ref2, data=d), order, size, title, subtitle)


def _admixture_heatmaps(df: pd.DataFrame, order_s: list[str], title: str):
    runs = admixture_runs(df, order_s)
    order = by_population(df[df["setting"] == order_s[0]])
    row = max(9, min(16, int(380 / max(len(order), 1))))
    y = alt.Y("region_label:N", title=None, sort=order, axis=alt.Axis(labelLimit=200, labelFontSize=9))
    rect = (
        alt.Chart(runs)
        .mark_rect()
        .encode(
            x=alt.X("age:Q", title="age", scale=alt.Scale(zero=False, nice=False)),
            x2="age_end:Q",
            y=y,
            color=alt.Color(
                "A_class:N",
                title="noise admixture A",
                scale=alt.Scale(domain=_CLASS_LABELS, range=_CLASS_COLOURS),
                legend=alt.Legend(orient="top", direction="horizontal", labelLimit=260),
            ),
        )
        .properties(width=max(150, int(620 / max(len(order_s), 1))), height=row * len(order))
    )
    return rect.facet(
        column=alt.Column("setting:N", title=None, sort=order_s, header=alt.Header(labelFontSize=11)),
    ).properties(title=_title(title, "rows: regions by falling population; columns: the noise settings"))


def regional_intervals_settings(df: pd.DataFrame, *, settings=None, title: str = "", x_title: str = "", width=420):
    """One row per region: the value (black dot), its 95 % interval from Poisson alone (blue)
    and in total under each setting (Poisson and noise together, in the setting's colour),
    ``value + bias +- 1.96 sd``: one bar each, side by side in the region's row, every one
    named in the legend. ``df``: one row per region and setting."""
    order_s = _settings_order(df, settings)
    d = _cols(df, "value", "sd_pois", "sd_tot", "bias_noise", "setting")
    shift = d["bias_noise"].fillna(0.0) if "bias_noise" in d else 0.0
    tot = d.assign(
        series="Poisson and noise, " + d["setting"],
        lo=d["value"] + shift - 1.96 * d["sd_tot"],
        hi=d["value"] + shift + 1.96 * d["sd_tot"],
    )
    first = d[d["setting"] == order_s[0]]
    half = 1.96 * first["sd_pois"]
    pois = first.assign(series=POISSON_ALONE, lo=first["value"] - half, hi=first["value"] + half)
    bars = pd.concat([pois, tot], ignore_index=True)
    order = first.sort_values(["nuts_level", "exposure"], ascending=[True, False])["region_label"].tolist()
    series, rng = _series(order_s, "Poisson and noise, ", (POISSON_ALONE, POISSON_COLOUR))
    colour = alt.Color(
        "series:N",
        title="95 % intervals:",
        scale=alt.Scale(domain=series, range=rng),
        legend=alt.Legend(orient="top", columns=2, labelLimit=260, symbolType="stroke", symbolStrokeWidth=3),
    )
    y = alt.Y(
        "region_label:N", title=None, sort=order, axis=alt.Axis(labelLimit=220), scale=alt.Scale(paddingInner=0.2)
    )
    x = alt.X("lo:Q", title=x_title or "value", scale=alt.Scale(zero=False))
    rules = (
        alt.Chart(bars)
        .mark_rule(strokeWidth=3, opacity=0.85)
        .encode(y=y, yOffset=alt.YOffset("series:N", sort=series), x=x, x2="hi:Q", color=colour)
    )
    dot = alt.Shape(
        "series:N", title=None, scale=alt.Scale(domain=[VALUE], range=["circle"]), legend=alt.Legend(orient="top")
    )
    pt = (
        alt.Chart(first.assign(series=VALUE))
        .mark_point(filled=True, size=18, opacity=1, color=TOTAL_COLOUR)
        .encode(y=y, x="value:Q", shape=dot)
    )
    return (
        alt.layer(rules, pt)
        .resolve_scale(shape="independent", color="independent")
        .properties(
            width=width,
            height=max(60, (8 + 5 * len(series)) * len(order)),
            title=_title(title, "dot: the value; one bar per interval, side by side in the region's row"),
        )
    )


def mc_check_settings(df: pd.DataFrame, *, settings=None, title: str = "", width: int = 300, height: int = 240):
    """Analytic against Monte Carlo sd (noise and total), log-log, every setting in its
    colour (dots: noise, squares: total), y = x dashed; cells beyond sampling error
    (``|z| > 5``) ringed in red. ``None`` when the table holds no Monte Carlo results."""
    if "mc_sd_noise" not in df or df["mc_sd_noise"].isna().all():
        return None
    order_s = _settings_order(df, settings)
    colours = setting_colours(order_s)
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
    pts = (
        alt.Chart(d)
        .mark_point(filled=True, size=26, opacity=0.8)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape(
                "component:N",
                scale=alt.Scale(domain=["noise", "total"], range=["circle", "square"]),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            color=alt.Color(
                "setting:N",
                title=None,
                scale=alt.Scale(domain=order_s, range=[colours[s] for s in order_s]),
                legend=alt.Legend(orient="top"),
            ),
        )
    )
    bad = d[d["z"].abs() > 5]
    ring = alt.Chart(bad).mark_point(size=120, filled=False, color="#c0392b", strokeWidth=1.5).encode(x=x, y=y)
    diag = pd.DataFrame({"analytic": [lo, hi], "mc": [lo, hi]})
    line = alt.Chart(diag).mark_line(color="#999", strokeDash=[3, 3]).encode(x="analytic:Q", y="mc:Q")
    return alt.layer(line, pts, ring).properties(
        width=width,
        height=height,
        title=_title(title, "dashed: Monte Carlo = analytic; red rings: |z| > 5 (beyond sampling error)"),
    )


# ============================================================ change over time
def level_series_settings(df: pd.DataFrame, *, settings=None, title: str = "", y_title: str = "", subtitle: str = ""):
    """A headline indicator by year, one panel per region: the value (black dots joined by a
    line), its interval from Poisson alone (blue) and from Poisson and the noise of each
    setting (one bar per setting, in its colour, beside the blue one) -- every mark named in
    the legend. ``df``: rows of :func:`demonoise.analysis.change.level_series` for one
    headline and one sex, with a report ``setting`` label per row; the bands are the
    library's (``lo_poisson`` ... ``hi_total``); ``y_title`` (the unit) goes to the
    subtitle, the panels having scales of their own. With more than 12
    regions, the country, the largest region and the smallest ones are drawn."""
    order_s = _settings_order(df, settings)
    df, cut = panel_rows(df, 12)
    level = float(df["confidence"].iloc[0]) if "confidence" in df and len(df) else 0.95
    pct = f"{100 * level:g} %"
    keep = ["region", "region_name", "nuts_level", "year", "value", "exposure", "indicator"]
    first = df[df["setting"] == order_s[0]]
    pois = first[keep].assign(series=f"Poisson, {pct}", lo=first["lo_poisson"], hi=first["hi_poisson"])
    tot = df[keep].assign(
        series=[f"Poisson and noise, {s}" for s in df["setting"]], lo=df["lo_total"], hi=df["hi_total"]
    )
    bars = pd.concat([pois, tot], ignore_index=True)
    bars["region_label"] = row_region_labels(bars)
    vals = first[keep].assign(series="value")
    vals["region_label"] = row_region_labels(vals)
    domain, rng = _series(order_s, "Poisson and noise, ", ("value", TOTAL_COLOUR), (f"Poisson, {pct}", POISSON_COLOUR))
    colour = alt.Color(
        "series:N", scale=alt.Scale(domain=domain, range=rng), legend=alt.Legend(title=None, orient="top")
    )
    order = by_population(first)
    _, w, h = _facet_layout(len(order))
    x = alt.X("year:O", title=None, axis=alt.Axis(labelAngle=-90, labelFontSize=9))
    y = alt.Y("lo:Q", title=None, scale=alt.Scale(zero=False))
    data = pd.concat([bars.assign(kind="band"), vals.assign(kind="value", lo=vals["value"])], ignore_index=True)
    band, value = alt.datum.kind == "band", alt.datum.kind == "value"
    rules = (
        alt.Chart()
        .transform_filter(band)
        .mark_rule(strokeWidth=2)
        .encode(x=x, xOffset=alt.XOffset("series:N", sort=domain[1:]), y=y, y2="hi:Q", color=colour)
    )
    line = alt.Chart().transform_filter(value).mark_line(color=TOTAL_COLOUR, strokeWidth=0.8).encode(x=x, y=y)
    dots = (
        alt.Chart().transform_filter(value).mark_point(filled=True, size=14, opacity=1).encode(x=x, y=y, color=colour)
    )
    subtitle = (
        ("the country, the largest and the smallest regions; " if cut else "")
        + (subtitle + "; " if subtitle else "")
        + (f"{y_title}, " if y_title else "")
        + "each panel its own scale"
    )
    layers = alt.layer(rules, line, dots, data=data)
    return _faceted(layers, order, (max(w, 170), max(h, 110)), title, subtitle, y="independent")
