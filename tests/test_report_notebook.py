"""Kernel-side helpers: the offline Altair renderer and metrics payloads (in process)."""

from __future__ import annotations

import json
import math
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

from demonoise.core.errors import ParameterError
from demonoise.report.content.notebook import (
    FIGURE_MIME,
    METRICS_MIME,
    chart_bundle,
    display_metrics,
    drawn_fields,
    setup_notebook,
)


@pytest.fixture(scope="module")
def df():
    return pd.DataFrame({"age": np.arange(0, 90, 5), "rate": 0.001 * 1.09 ** np.arange(0, 90, 5)})


def _clipped(df, title):
    return (
        alt.Chart(df)
        .mark_area(clip=True)
        .encode(x=alt.X("age:Q", scale=alt.Scale(domain=[10, 60])), y="rate:Q")
        .properties(title=title)
    )


def test_bundle_is_static_svg(df):
    b = chart_bundle(alt.Chart(df).mark_line().encode(x="age", y="rate").properties(title="T <1>").to_dict())
    assert set(b) == {"image/svg+xml", "text/plain", FIGURE_MIME}
    svg = b["image/svg+xml"]
    assert svg.startswith("<svg") and 'class="marks"' in svg and "<script" not in svg
    assert b["text/plain"] == "<Chart: T &lt;1&gt;>"
    # the title goes to the numbered caption (not drawn in the SVG); the data to the CSV
    assert b[FIGURE_MIME]["title"] == "T <1>" and "T &lt;1&gt;" not in svg and "T <1>" not in svg
    csv = b[FIGURE_MIME]["csv"].splitlines()
    assert csv[0] == "age,rate" and len(csv) == len(df) + 1
    # the data really are drawn: the line is one path through the 18 points (M + 17 L),
    # with x increasing in equal steps (ages 0, 5, ..., 85)
    # (the line mark's group, which carries only names, is dissolved: the line is the path
    # through the most points)
    d = max(re.findall(r'<path[^>]* d="(M[^"A-Za-z]*(?:L[^"A-Za-z]*)+)"', svg), key=lambda p: p.count("L"))
    xs = [float(p.split(",")[0]) for p in re.split(r"[ML]", d)[1:]]
    assert len(xs) == len(df) == 18
    assert np.allclose(np.diff(xs), xs[1] - xs[0], atol=2e-3) and xs[1] > xs[0]


def test_the_drawing_gets_only_the_fields_the_chart_names_and_draws_the_same(df):
    """vl-convert gets each dataset cut to the fields the spec names elsewhere: the SVG is
    vl-convert's drawing of the whole spec, the figure's CSV keeps every column; a chart
    that may show every field of a datum (a tooltip of the whole datum) is drawn whole."""
    import vl_convert as vlc

    from demonoise.report.content.notebook import _uniquify_svg_ids

    wide = df.assign(region="BE10", region_name="Bruxelles", exposure=1000.0, small_count=False)
    chart = (
        alt.Chart(wide)
        .mark_point()
        .encode(x="age:Q", y="rate:Q", color="region:N")
        .transform_filter("!datum.small_count")
    )
    spec = chart.to_dict()
    drawn = drawn_fields(spec)
    (rows,) = drawn["datasets"].values()
    assert set(rows[0]) == {"age", "rate", "region", "small_count"} and len(rows) == len(wide)
    (whole,) = spec["datasets"].values()
    assert set(whole[0]) == set(wide.columns)  # the spec itself is not touched

    b = chart_bundle(spec)
    config = {"aria": False, **spec["config"]}
    from demonoise.report.content.theme import FONT, FORMAT_LOCALE

    config["font"] = FONT
    reference = vlc.vegalite_to_svg(
        {**spec, "config": config}, vl_version="_".join(alt.SCHEMA_VERSION.split(".")[:2]), format_locale=FORMAT_LOCALE
    )
    assert b["image/svg+xml"] == _uniquify_svg_ids(reference)
    assert b[FIGURE_MIME]["csv"].splitlines()[0] == ",".join(wide.columns)

    everything = alt.Chart(wide).mark_point(tooltip=True).encode(x="age:Q", y="rate:Q").to_dict()
    assert drawn_fields(everything)["datasets"] == everything["datasets"]


def test_svg_ids_do_not_collide_between_charts(df):
    a = chart_bundle(_clipped(df, "first").to_dict())["image/svg+xml"]
    b = chart_bundle(_clipped(df, "second").to_dict())["image/svg+xml"]
    ids_a, ids_b = set(re.findall(r'id="([^"]+)"', a)), set(re.findall(r'id="([^"]+)"', b))
    assert ids_a and ids_b and not ids_a & ids_b  # vl-convert alone gives both "clip1"
    for svg, ids in ((a, ids_a), (b, ids_b)):
        refs = set(re.findall(r"url\(#([^)]+)\)", svg))
        assert refs and refs <= ids
    # the prefix is a hash of the SVG: the same SVG always gets the same ids
    from demonoise.report.content.notebook import _uniquify_svg_ids

    raw = '<svg><clipPath id="clip1"><rect/></clipPath><g clip-path="url(#clip1)"/></svg>'
    assert _uniquify_svg_ids(raw) == _uniquify_svg_ids(raw) != raw


def test_setup_notebook_enables_the_renderer(df):
    old = alt.renderers.active
    try:
        setup_notebook()
        assert alt.renderers.active == "demonoise"
        bundle = alt.Chart(df).mark_line().encode(x="age", y="rate")._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert "image/svg+xml" in bundle and not any("vegalite" in k or "javascript" in k for k in bundle)
        # Altair's own 5 000-row guard is lifted to 100 000
        big = pd.DataFrame({"x": np.arange(20_000), "y": np.arange(20_000)})
        assert alt.Chart(big).mark_point().encode(x="x", y="y").to_dict()["datasets"]
    finally:
        alt.renderers.enable(old)
        alt.data_transformers.enable("default")


def test_a_shown_chart_is_validated_only_where_asked(df, monkeypatch):
    """A chart shown in a notebook goes through the enabled renderer (ours, as
    setup_notebook leaves it); its spec is checked against the Vega-Lite schema when
    DEMONOISE_VALIDATE_CHARTS=1 (the test suite), not in a batch."""
    from altair.utils.schemapi import SchemaValidationError

    from demonoise.report.content.notebook import _chart_display

    good = alt.Chart(df).mark_line().encode(x="age", y="rate")
    bad = alt.Chart(df, width="wide").mark_line().encode(x="age", y="rate")  # a width is a number or "container"
    old = alt.renderers.active
    alt.renderers.enable("demonoise")
    try:
        monkeypatch.setenv("DEMONOISE_VALIDATE_CHARTS", "1")
        with pytest.raises(SchemaValidationError):
            _chart_display(bad)
        checked = _chart_display(good)["image/svg+xml"]
        monkeypatch.setenv("DEMONOISE_VALIDATE_CHARTS", "0")
        assert _chart_display(good)["image/svg+xml"] == checked  # the same picture, unchecked
        assert "<svg" in _chart_display(bad)["image/svg+xml"]  # drawn as Vega reads it
    finally:
        alt.renderers.enable(old)


def test_display_metrics_publishes_only_the_custom_mime(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    display_metrics({"e0_sd": np.float64(0.25), "bad": float("nan")})
    assert shown == [({METRICS_MIME: {"e0_sd": 0.25, "bad": None}}, True)]
    with pytest.raises(ParameterError, match="mapping"):
        display_metrics([1, 2])


def test_display_metrics_publishes_plain_json(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj[METRICS_MIME]))
    payload = {
        "a": np.float64(1.5),
        "b": np.int64(3),
        "c": np.array([1.0, np.nan]),
        "d": (1, math.inf),
        "e": np.bool_(True),
        "f": pd.Series([1, 2]),
        "g": None,
    }
    display_metrics(payload)
    display_metrics({"x": {1: np.float32(0.5)}})
    got = shown[0]
    assert got == {"a": 1.5, "b": 3, "c": [1.0, None], "d": [1, None], "e": True, "f": [1, 2], "g": None}
    assert type(got["a"]) is float and type(got["b"]) is int
    json.dumps(got, allow_nan=False)
    assert shown[1] == {"x": {"1": 0.5}}  # JSON's keys are strings
    with pytest.raises(ParameterError, match=r"type object is not JSON-serialisable"):
        display_metrics({"o": object()})
