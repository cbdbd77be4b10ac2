"""The what-if and teaching notebooks' charts and collapsible solution blocks. Like
:mod:`demonoise.report.content.charts`, every builder draws numbers the library computed (a
results table, :func:`demonoise.analysis.whatif.sensitivity`, :mod:`demonoise.analysis.teaching`).
"""

from __future__ import annotations

import html as _html
import itertools
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from demonoise.analysis.settings import (
    NoiseSetting,
    ordered_settings,
    setting_labels,
)
from demonoise.core.vocabulary import POISSON_COLOUR, SETTING_PALETTE, TOTAL_COLOUR
from demonoise.report.content.charts import ADMIX_REF, POPULATION, nominal, reference_lines
from demonoise.report.content.theme import log_axis, setting_colours

#: Colours of series that are not noise settings (e0, e65, the TFR ...), in turn: none of the settings'.
SERIES_COLOURS = ("#222222", "#8c8c8c", "#c51b7d", "#2c7fb8")


def title(text: str, data_label: str | None = None) -> alt.TitleParams:
    """A chart title with the data label as subtitle (``"Data: "`` and its parts, one a line),
    shown on every chart of real or modelled data; styled by the theme."""
    lines = [p.strip() for p in str(data_label or "").split(";") if p.strip()]
    return alt.TitleParams(text=text, subtitle=[f"Data: {lines[0]}", *lines[1:]] if lines else alt.Undefined)


def colours_of(settings: Sequence[NoiseSetting]) -> dict[str, str]:
    """Each setting's colour by its label, as in a report of these settings (``settings`` in the
    reports' order, :func:`~demonoise.analysis.settings.ordered_settings`)."""
    return setting_colours([s.label for s in settings])


#: Plain names of the colours the charts draw, for the sentences that name them.
_COLOUR_NAMES = {
    POISSON_COLOUR: "blue",
    TOTAL_COLOUR: "black",
    **dict(zip(SETTING_PALETTE, ("orange", "dark red", "purple", "green", "brown", "teal", "grey"), strict=True)),
}


def colour_words(colours: Mapping[str, str]) -> str:
    """``"V = 1 orange, V = 5 dark red"``: every setting with its colour's name."""
    return ", ".join(f"{label} {_COLOUR_NAMES.get(c, c)}" for label, c in colours.items())


def uncertainty_by_setting(df: pd.DataFrame, *, chart_title=None):
    """Relative uncertainty (%) by age, log scale -- Poisson (blue), noise (in its setting's
    colour, :func:`colours_of`), total (black) -- one panel per noise setting (one region, one
    sex, one indicator). Hollow points: fewer than 10 events (first order unreliable)."""
    d0 = df[np.isfinite(df["rel_tot"]) & (df["rel_tot"] > 0)]
    noises = {f"noise, {k}": c for k, c in colours_of(ordered_settings(d0)).items()}
    colours = {"Poisson": POISSON_COLOUR} | noises | {"total": TOTAL_COLOUR}
    d0 = d0.assign(noise=("noise, " + setting_labels(d0)).to_numpy(), setting=setting_labels(d0, detailed=True))
    ids = ["setting", "age", "age_group", "events", "small_count", "noise"]
    d = d0.melt(ids, ["rel_pois", "rel_noise", "rel_tot"], var_name="component", value_name="rel")
    series = d["component"].map({"rel_pois": "Poisson", "rel_tot": "total"}).fillna(d["noise"])  # noise: its setting's
    d = d.assign(series=series, rel=100.0 * d["rel"])[d["rel"] > 0]
    base = alt.Chart(d).encode(
        x=alt.X("age:Q", title="age"),
        y=alt.Y("rel:Q", title="relative uncertainty (%)", scale=alt.Scale(type="log")),
        color=nominal("series", colours, legend={"title": None, "orient": "top"}),
    )
    lines = base.mark_line(strokeWidth=1.3)
    small = base.transform_filter("datum.small_count").mark_point(size=14, filled=False, opacity=0.7)
    order = d0["setting"].drop_duplicates().tolist()
    return (
        alt.layer(lines, small, data=d)
        .properties(width=230, height=150)
        .facet(facet=alt.Facet("setting:N", title=None, sort=order), columns=3)
        .properties(title=chart_title or "")
    )


def sensitivity_chart(sens: pd.DataFrame, *, colours: Mapping[str, str], indicator="e0", sex="F", chart_title=None):
    """Two panels over a scale grid (:func:`demonoise.analysis.whatif.sensitivity`): the relative
    noise sd (%) of one indicator per noise setting, with the Poisson sd (dashed), and
    the admixture (%) with its 10 % and 41 % reference lines; population on a log axis.
    Each setting in its colour: ``colours`` (label -> colour, :func:`colours_of`)."""
    d = sens[(sens["indicator"] == indicator) & (sens["sex"] == sex)]
    d = d.assign(rel_noise_pc=100.0 * d["rel_noise"], rel_pois_pc=100.0 * d["rel_pois"], A=100.0 * d["admixture"])
    x = log_axis(alt.X, "population", POPULATION, d["population"], "~s").scale(type="log", nice=False, padding=12)
    ylog = alt.Scale(type="log", nice=False, padding=10)
    base = alt.Chart(d).encode(x=x, color=nominal("noise", colours, title="noise"))
    sd = base.mark_line(point=True).encode(
        y=alt.Y("rel_noise_pc:Q", title=f"relative sd of {indicator} (%)", scale=ylog)
    )
    pois = (
        alt.Chart(d.drop_duplicates("scale"))
        .mark_line(strokeDash=[5, 3], color=POISSON_COLOUR)
        .encode(x=x, y="rel_pois_pc:Q")
    )
    pois_text = (
        alt.Chart(d.sort_values("scale").head(1))
        .mark_text(align="left", dx=4, dy=-8, fontSize=9, color=POISSON_COLOUR)
        .encode(x=x, y="rel_pois_pc:Q", text=alt.value("Poisson"))
    )
    left = alt.layer(pois, sd, pois_text).properties(width=300, height=220, title="noise sd and Poisson sd")
    adm = base.mark_line(point=True).encode(y=alt.Y("A:Q", title="noise admixture A (%)", scale=ylog))
    right = alt.layer(adm, *reference_lines(ADMIX_REF, "A", 298)).properties(width=300, height=220, title="admixture")
    return alt.hconcat(left, right).properties(title=chart_title or "")


def _by_age(rows: list[pd.DataFrame], field: str, styles: Mapping[str, str], y_title: str):
    """The ``rows``' positive ``value`` on a log axis (the x axis: age), one colour per ``field`` value."""
    d = pd.concat(rows, ignore_index=True)
    d = d[np.isfinite(d["value"]) & (d["value"] > 0)]
    y = log_axis(alt.Y, "value", y_title, d["value"])
    return alt.Chart(d).encode(y=y, color=nominal(field, styles, title=None))


def derivative_check_chart(
    ages: Sequence[float], closed: Mapping[str, np.ndarray], fd: Mapping[str, np.ndarray], *, chart_title=None
):
    """Closed-form derivatives (lines) and their finite-difference twins (points) by age,
    ``|value|`` on a log axis, a colour per series (``e0``, ``e65``: none of the settings'); no
    difference where the closed form is exactly 0 (x < k: rounding noise only)."""
    fd = {k: np.where(np.asarray(closed[k]) != 0, v, np.nan) if k in closed else v for k, v in fd.items()}
    rows = [
        pd.DataFrame({"age": ages, "series": k, "how": how, "value": np.abs(np.asarray(v, dtype=float))})
        for how, values in (("closed form", closed), ("finite difference", fd))
        for k, v in values.items()
    ]
    names = dict(zip(dict.fromkeys([*closed, *fd]), itertools.cycle(SERIES_COLOURS)))
    base = _by_age(rows, "series", names, "|d e / d m_x|")
    line = (
        base.transform_filter("datum.how == 'closed form'")
        .mark_line(strokeWidth=1.4)
        .encode(x=alt.X("age:Q", title="age x"))
    )
    pts = base.transform_filter("datum.how == 'finite difference'").mark_point(size=18, filled=False).encode(x="age:Q")
    return alt.layer(line, pts).properties(width=520, height=220, title=chart_title or "")


def variance_by_age_chart(ages: Sequence[float], terms: Mapping[str, np.ndarray], *, chart_title=None):
    """Per-age terms of a variance sum (e.g. Poisson, noise at V = 1 and V = 5), log axis:
    Poisson in its colour, the other terms in the settings' colours, in turn."""
    rows = [pd.DataFrame({"age": ages, "component": k, "value": np.asarray(v, dtype=float)}) for k, v in terms.items()]
    others = itertools.cycle(SETTING_PALETTE)  # the noise terms in the order of the settings
    colours = {k: POISSON_COLOUR if k == "Poisson" else next(others) for k in terms}
    chart = _by_age(rows, "component", colours, "contribution to Var(e0) (years^2)")
    return (
        chart.mark_line(point=alt.OverlayMarkDef(size=10), strokeWidth=1.2)
        .encode(x=alt.X("age:Q", title="age x (85 = open group 85+)"))
        .properties(width=520, height=230, title=chart_title or "")
    )


def captioned(styler, caption: str):
    """A pandas ``Styler`` with the caption the report numbers it with (its ``dn_caption``,
    read by the report's table display)."""
    styler.dn_caption = caption
    return styler


#: Style of the solution blocks: collapsed on screen, printed open (a PDF cannot be
#: clicked). ``::details-content`` needs Chromium 131 or later.
_SOLUTION_CSS = (
    "<style>"
    "details.dn-solution{border-left:3px solid #4c78a8;padding:.2em .8em;margin:.6em 0;background:#f6f8fb}"
    "details.dn-solution>summary{cursor:pointer;font-weight:600;color:#2b4f7a}"
    "@media print{details.dn-solution::details-content{content-visibility:visible;display:block}"
    "details.dn-solution>summary{list-style:none}}"
    "</style>"
)


def solution(summary: str, *parts) -> object:
    """A collapsible solution block (``<details>``), for Jupyter and for the HTML report.

    Parameters
    ----------
    summary : str
        The visible line, e.g. ``"Solution 1"``.
    *parts : str or pandas.DataFrame
        Paragraphs: a string is HTML with maths in ``$...$`` (typeset as SVG here, by
        :func:`demonoise.report.content.typeset.markdown_to_html`), a DataFrame an HTML table.

    Returns
    -------
    IPython.display.HTML
    """
    from IPython.display import HTML

    from demonoise.report.content.typeset import markdown_to_html

    body = "".join(
        p.to_html(index=False, border=0, classes="dn-table") if isinstance(p, pd.DataFrame) else markdown_to_html(p)
        for p in parts
    )
    summary = _html.escape(summary)
    return HTML(f'{_SOLUTION_CSS}<details class="dn-solution"><summary>{summary}</summary>{body}</details>')
