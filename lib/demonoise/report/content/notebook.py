"""What report notebooks call in the kernel: :func:`setup_notebook` (each chart a static
SVG drawn by vl-convert: no JavaScript, no network), the mime bundles of charts, tables and
data files, and :func:`display_metrics` (the numbers the batch collects). Altair, vl-convert
and pandas are imported lazily, so importing :mod:`demonoise.report` stays cheap.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from demonoise.core.errors import ParameterError

#: Custom mime type of a metrics payload (never rendered into the report).
METRICS_MIME = "application/vnd.demonoise.metrics+json"
#: A chart's caption and data (title, subtitle, CSV), numbered by the exporter.
FIGURE_MIME = "application/vnd.demonoise.figure+json"
#: A table's caption, note and data (CSV), numbered by the exporter.
TABLE_MIME = "application/vnd.demonoise.table+json"
#: CSV files written next to the report, not shown (:func:`data_bundle`).
DATA_MIME = "application/vnd.demonoise.data+json"
#: An output's Typst representation (the PDF's), beside its HTML (:mod:`.typstsrc`).
TYPST_MIME = "text/x-typst"


# ------------------------------------------------------------------ chart bundle
def _uniquify_svg_ids(svg: str) -> str:
    """Every ``id`` of an SVG and its uses prefixed with a hash of the SVG: inline SVGs share
    one id space per page (two charts' ``clip1`` would clip each other), identical ones agree."""
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if not ids:
        return svg
    prefix = "dn" + hashlib.sha1(svg.encode("utf-8")).hexdigest()[:8] + "-"
    alternation = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.sub(r'(\bid="|url\(#|href="#)(' + alternation + r')(?=[")])', lambda m: m[1] + prefix + m[2], svg)


#: A spec that may use a datum's every field (a tooltip of the whole datum; a map, whose
#: features' geometry no encoding names): drawn whole.
_WHOLE_DATUM = re.compile(r'"tooltip":\s*true|"content":\s*"data"|"geoshape"')


def drawn_fields(spec: Mapping[str, Any]) -> dict:
    """``spec`` with each inline dataset cut to the fields named anywhere else in it (even
    inside another string): the same drawing in a tenth less time, where the charts are given
    whole slices of the results table. A spec that can use a datum's every field
    (``tooltip: true``, a map) is returned as it is."""
    rest = json.dumps({k: v for k, v in spec.items() if k != "datasets"}, separators=(",", ":"))
    if not spec.get("datasets") or _WHOLE_DATUM.search(rest):
        return dict(spec)
    sets = spec["datasets"]
    keep = {f for rows in sets.values() for f in {k for r in rows for k in r} if f in rest}
    cut = {n: [{f: v for f, v in r.items() if f in keep} for r in rows] for n, rows in sets.items()}
    return {**spec, "datasets": cut}


def chart_bundle(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A Vega-Lite spec (inline data, as Altair's ``Chart.to_dict()`` gives it) as an offline
    mime bundle: the static SVG, the caption and data the exporter numbers
    (:data:`FIGURE_MIME`), and a ``text/plain`` fallback."""
    from altair.utils.mimebundle import spec_to_mimebundle

    from demonoise.report.content.theme import FONT, FORMAT_LOCALE

    spec = dict(spec)
    caption = _take_title(spec)
    # no ARIA labels (one per mark doubles the SVG and helps no reader of a printed report);
    # one font for measuring (vl-convert) and drawing (the reader)
    spec["config"] = {"aria": False, "font": FONT, **(spec.get("config") or {})}
    _chart_fonts()
    opts = {"mode": "vega-lite", "engine": "vl-convert", "embed_options": {"formatLocale": FORMAT_LOCALE}}
    svg = spec_to_mimebundle(drawn_fields(spec), "svg", **opts)["image/svg+xml"]
    return {
        "image/svg+xml": _uniquify_svg_ids(svg),
        FIGURE_MIME: {**caption, "csv": _spec_csv(spec)},
        "text/plain": f"<Chart{': ' + html.escape(caption['title']) if caption['title'] else ''}>",
    }


def _text(value) -> str:
    return "; ".join(str(v) for v in (value if isinstance(value, (list, tuple)) else [value]) if v)


def _take_title(spec: dict) -> dict:
    """Take the title and subtitle out of ``spec`` for the numbered caption (drawn once, never
    clipped); a title at the bottom is a credit (the map's boundaries) and stays on the image."""
    t = spec.get("title")
    if isinstance(t, Mapping) and t.get("orient") == "bottom":
        return {"title": "", "subtitle": ""}
    spec.pop("title", None)
    t = t if isinstance(t, Mapping) else {"text": t}
    return {"title": _text(t.get("text")), "subtitle": _text(t.get("subtitle"))}


def _spec_csv(spec: Mapping[str, Any]) -> str:
    """The chart's data as CSV: its largest dataset (the marks'; small ones are reference lines)."""
    import pandas as pd

    sets = list((spec.get("datasets") or {}).values())  # Altair moves every inline data there
    return pd.DataFrame.from_records(max(sets, key=len)).to_csv(index=False, float_format="%.10g") if sets else ""


def data_bundle(files: Mapping[str, Any]) -> dict:
    """CSV files written next to the report without being shown (name -> DataFrame): the
    tables behind a chapter, under their own names (``decision.csv``, ...)."""
    csv = {str(k): v.to_csv(index=False, float_format="%.10g") for k, v in files.items()}
    return {DATA_MIME: {"files": csv}, "text/plain": f"<Data: {', '.join(csv)}>"}


class Shown:
    """A display object with its representations given: the HTML and the Typst (the two
    exports'), or any mime ``bundle`` (data files)."""

    def __init__(self, html: str = "", typst: str = "", *, bundle: Mapping[str, Any] | None = None):
        self.bundle = dict(bundle) if bundle is not None else {"text/html": html, TYPST_MIME: typst}

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return dict(self.bundle)


def _chart_display(chart) -> dict:
    """An Altair chart shown by the enabled renderer, validated only when DEMONOISE_VALIDATE_CHARTS=1
    (the test suite; a batch skips the check, a twentieth of a notebook's time)."""
    import altair as alt

    spec = chart.to_dict(validate=os.environ.get("DEMONOISE_VALIDATE_CHARTS") == "1", context={"pre_transform": False})
    return alt.renderers.get()(spec)


def _frame_bundle(obj) -> dict:
    """A DataFrame or Styler shown: its data (CSV) and the caption a Styler carries as
    ``dn_caption`` under :data:`TABLE_MIME`, which the report numbers (the HTML is pandas')."""
    frame = getattr(obj, "data", obj)
    csv = frame.to_csv(index=not isinstance(frame.index, __import__("pandas").RangeIndex), float_format="%.10g")
    caption = str(getattr(obj, "dn_caption", "") or "")
    return {TABLE_MIME: {"caption": caption, "note": "", "csv": csv, "empty": len(frame) == 0}}


# ------------------------------------------------------------------ notebook setup
@lru_cache(maxsize=1)
def _chart_fonts() -> None:
    """vl-convert measures the charts' text in the template's faces (:func:`~.theme.fonts_dir`) if it has them."""
    import vl_convert as vlc

    from demonoise.report.content.theme import fonts_dir

    if (d := fonts_dir()) is not None:
        vlc.register_font_directory(str(d))


def setup_notebook() -> None:
    """Prepare a report notebook (call it near the top): offline charts (our renderer, the
    theme, up to 100 000 rows per chart where Altair stops at 5 000), readable pandas tables,
    and the shell's display formatters of tables and charts. The state it sets outlives a
    reused kernel's namespace reset, harmlessly: every report notebook calls it again.
    """
    import altair as alt
    import pandas as pd
    from IPython import get_ipython
    from pandas.io.formats.style import Styler

    from demonoise.report.content.theme import CHART_CONFIG

    # register() only sets an entry (names() would read every package's entry points: 20 ms)
    alt.renderers.register("demonoise", lambda spec, **_: chart_bundle(spec))
    alt.theme.register("demonoise", enable=True)(lambda: {"config": CHART_CONFIG})  # Altair deep-copies it
    if (ip := get_ipython()) is not None:
        bundles = {pd.DataFrame: _frame_bundle, Styler: _frame_bundle, alt.TopLevelMixin: _chart_display}
        for kind, bundle in bundles.items():
            ip.display_formatter.mimebundle_formatter.for_type(kind, bundle)
    alt.renderers.enable("demonoise")
    alt.data_transformers.enable("default", max_rows=100_000)
    pd.set_option("display.max_rows", 60, "display.max_columns", 30, "display.width", 120, "display.html.border", 0)


# ----------------------------------------------------------------------- metrics
def display_metrics(payload: Mapping[str, Any]) -> None:
    """Publish ``payload`` as a metrics output, read back by
    :func:`demonoise.report.document.assemble.read_metrics`: raw under :data:`METRICS_MIME`
    (no ``text/plain``: JupyterLab and the report show nothing); tag the cell ``metrics``.

    Parameters
    ----------
    payload : mapping of str to JSON-like values
        numpy and pandas objects (their ``tolist()``) and tuples become plain numbers and
        lists, non-finite floats ``null`` (JSON has none).

    Raises
    ------
    ParameterError
        Not a mapping, or a value of another type (naming it).
    """
    from IPython.display import display

    if not isinstance(payload, Mapping):
        raise ParameterError(f"metrics payload must be a mapping, got {type(payload).__name__}")

    def plain(v):
        if callable(getattr(v, "tolist", None)):
            return v.tolist()
        raise ParameterError(f"metrics value of type {type(v).__name__} is not JSON-serialisable")

    display({METRICS_MIME: json.loads(json.dumps(payload, default=plain), parse_constant=lambda _: None)}, raw=True)


# ------------------------------------------------------------------ what a section shows
#: Metrics key under which a report notebook records what its section shows.
SHOWN = "shown"


def record_shown(df, setting) -> None:
    """In a kernel: a metrics output under :data:`SHOWN` saying what the rows of ``df`` hold
    (datasets, countries, every setting present) and which ``setting`` the section is about,
    which the render stage compares with what it asked for
    (:func:`demonoise.report.batch.stages.check_shown`)."""
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from demonoise.analysis.settings import NoiseSetting, setting_labels

    if not InteractiveShell.initialized():
        return
    # the distinct values, not a Python set over every row (an Arrow-backed column boxes each)
    record = {k: sorted(map(str, df[k].unique())) for k in ("dataset", "country")}
    record |= {"setting": NoiseSetting.of(setting).label, "settings": sorted(map(str, pd.unique(setting_labels(df))))}
    display_metrics({SHOWN: record})
