"""The one visual language of every output: the ``demonoise`` Altair theme,
the colours of settings (by position in the batch) and regions (by rank in the country),
number formats (the SI thousands separator, a narrow no-break space; fixed decimals per column,
admixtures with enough decimals to stay in their class) and 1-2-5 log-axis ticks.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from demonoise.core.errors import ReportError
from demonoise.core.formats import fmt_fixed
from demonoise.core.vocabulary import SETTING_PALETTE, TOTAL_COLOUR, admixture_decimals

#: Font of every chart (the first one installed is used to measure and to draw text).
FONT = "DejaVu Sans, Verdana, sans-serif"
#: The faces of the PDF's and the charts' typeface (the reports' stylesheets name it) and of its
#: monospaced companion (inline code): (family, style, weight) -> file in ``templates/demonoise/fonts``,
#: where the charts' text is measured and the PDF set.
FONT_FACES = {
    ("DejaVu Sans", "normal", 400): "DejaVuSans.ttf",
    ("DejaVu Sans", "normal", 700): "DejaVuSans-Bold.ttf",
    ("DejaVu Sans", "italic", 400): "DejaVuSans-Oblique.ttf",
    ("DejaVu Sans", "italic", 700): "DejaVuSans-BoldOblique.ttf",
    ("DejaVu Sans Mono", "normal", 400): "DejaVuSansMono.ttf",
    ("DejaVu Sans Mono", "normal", 700): "DejaVuSansMono-Bold.ttf",
}


def fonts_dir() -> Path | None:
    """The template's ``demonoise/fonts`` if it holds every face of :data:`FONT_FACES` (found like
    the templates, :func:`~demonoise.runtime.locate.find_dir`), else ``None``: the charts are then
    measured and the PDF set in the machine's fonts."""
    from demonoise.runtime.locate import find_dir

    with contextlib.suppress(ReportError):
        return find_dir("templates", tuple(f"demonoise/fonts/{f}" for f in FONT_FACES.values())) / "demonoise/fonts"
    return None


#: d3 number locale for vl-convert: "." decimals, the thousands by a narrow no-break space (SI style: 30 123).
FORMAT_LOCALE = {"decimal": ".", "thousands": "\u202f", "grouping": [3], "currency": ["", ""]}
#: Regions of a country, by rank (largest first); the first ones far from the settings'
#: palette and from the Poisson blue.
_REGION_PALETTE: tuple[str, ...] = (
    "#17becf",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#393b79",
    "#7f7f7f",
    "#637939",
    "#ad494a",
    "#3182bd",
    "#9c9ede",
    "#e7969c",
    "#c49c94",
    "#31a354",
    "#756bb1",
    "#de9ed6",
)


#: The Vega-Lite config of the ``demonoise`` Altair theme (registered by
#: :func:`~.notebook.setup_notebook`; the font and ARIA off are set on every drawing:
#: :func:`~.notebook.chart_bundle`). Axis ``labelLimit`` 0: no label cut short unless its chart
#: says so (the region axes do); Vega then measures no label only to decide whether to cut it
#: (a tenth of the time of drawing a report's charts).
CHART_CONFIG = {
    "view": {"stroke": "#d5dbe1"},
    "title": {"anchor": "start", "fontSize": 13, "subtitleColor": "#5b6570", "subtitleFontSize": 10},
    "axis": {
        "labelFontSize": 10,
        "titleFontSize": 11,
        "gridColor": "#e6e9ed",
        "titleFontWeight": "normal",
        "labelLimit": 0,
    },
    "legend": {"labelFontSize": 10, "titleFontSize": 10, "labelLimit": 260},
    "range": {"category": list(SETTING_PALETTE)},
    "mark": {"color": TOTAL_COLOUR},
}


def setting_colours(labels: Sequence[str]) -> dict[str, str]:
    """Colour of each setting label, by its position in the batch's list of settings."""
    return {lab: SETTING_PALETTE[i % len(SETTING_PALETTE)] for i, lab in enumerate(labels)}


def region_colours(labels: Iterable[str]) -> dict[str, str]:
    """Colour of each region label, by rank (pass them in the report's region order)."""
    return {lab: _REGION_PALETTE[i % len(_REGION_PALETTE)] for i, lab in enumerate(labels)}


def _log_ticks(values, *, most: int = 9) -> list[float]:
    """1-2-5 ticks covering ``values`` on a log axis (thinned to 1-10 when too many)."""
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return []
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    for steps in ((1, 2, 5), (1,)):
        ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in steps]
        ticks = [t for t in ticks if v.min() / 1.5 <= t <= v.max() * 1.5]
        if len(ticks) <= most:
            break
    return [float(f"{t:.12g}") for t in ticks] if len(ticks) >= 2 else sorted({float(v.min()), float(v.max())})


def log_axis(channel, field: str, title, values, fmt: str = "~g", *, most: int = 9, **axis):
    """``channel`` (``alt.X``, ``alt.Y``) of ``field``: log scale, :func:`_log_ticks` labelled in ``fmt``."""
    import altair as alt

    ticks = _log_ticks(values, most=most)
    return channel(
        f"{field}:Q", title=title, scale=alt.Scale(type="log"), axis=alt.Axis(format=fmt, values=ticks, **axis)
    )


def column_decimals(values, *, significant: int = 2, most: int = 6) -> int:
    """Decimals of a table column: enough for ``significant`` digits of its median
    magnitude (one number of decimals for the whole column, so the column lines up)."""
    v = np.abs(np.asarray(list(values), dtype=float))
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return 0
    mag = math.floor(math.log10(float(np.median(v))))
    return int(min(most, max(0, significant - 1 - mag)))


def admixture_column(values, *, most: int = 6) -> list[str]:
    """Admixtures (fractions) of a table column in per cent: the column's decimals
    (:func:`column_decimals`, at most ``most``), more where the rounded figure would read as
    another class (:func:`~demonoise.core.vocabulary.admixture_decimals`); "\u2014" if not finite."""
    vals = [float(v) if v is not None else math.nan for v in values]
    k = column_decimals([100.0 * v for v in vals], most=most)
    return [fmt_fixed(100.0 * v, admixture_decimals(v, k)) if math.isfinite(v) else "\u2014" for v in vals]


def admixture_text(A: float) -> str:
    """One admixture in per cent, as :func:`admixture_column` writes it (``0.0977`` -> ``"9.8 %"``,
    not ``"10 %"``: rounding may not carry it into another class; ``0.103`` -> ``"10.3 %"``)."""
    text = admixture_column([A], most=12)[0]
    return text if text == "\u2014" else f"{text} %"
