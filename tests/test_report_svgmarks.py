"""Marks merged into few elements draw the same picture (resvg, an independent renderer)."""

from __future__ import annotations

import io
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

from demonoise.report.notebook import simplify_svg
from demonoise.report.svgmarks import merge_marks

NS = 'xmlns="http://www.w3.org/2000/svg"'


def _pixels(svg: str) -> np.ndarray:
    import vl_convert as vlc
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(vlc.svg_to_png(svg, scale=2.0))).convert("RGB")).astype(int)


def _diff(a: str, b: str) -> np.ndarray:
    pa, pb = _pixels(a), _pixels(b)
    assert pa.shape == pb.shape
    return np.abs(pa - pb).max(axis=2)


def _elements(svg: str) -> int:
    return len(re.findall(r"<[a-zA-Z]", svg))


def test_a_grid_of_cells_in_three_colours_becomes_three_paths():
    colours = ["#d9ead3", "#f6d58e", "#e06c4f"]
    cells = "".join(
        f'<rect x="{10 + 7.3 * i:.4f}" y="{10 + 9 * j}" width="7.3" height="9" fill="{colours[(i * 7 + j) % 3]}"/>'
        for j in range(6)
        for i in range(20)
    )
    svg = f'<svg {NS} width="170" height="80"><g class="mark-rect" role="graphics-symbol">{cells}</g></svg>'
    out = merge_marks(svg)
    assert out.count("<path") == 3 and "<rect" not in out and "<g" not in out
    d = _diff(svg, out)
    # only the anti-aliased seams between cells of different colours may differ (which of
    # two neighbours is painted last), by little
    assert d.max() <= 48 and (d > 0).mean() < 0.05


def test_overlapping_shapes_of_different_paints_keep_their_order():
    svg = (
        f'<svg {NS} width="60" height="40">'
        '<rect x="0" y="0" width="30" height="30" fill="red"/>'
        '<rect x="2" y="2" width="5" height="5" fill="red"/>'
        '<rect x="20" y="10" width="30" height="30" fill="blue"/>'
        '<rect x="5" y="5" width="30" height="20" fill="red"/>'
        "</svg>"
    )
    out = merge_marks(svg)
    # the first two (same paint, neighbours) merge; the last red one stays above the blue
    assert out.count("<path") == 1 and out.count("<rect") == 2
    assert out.index("blue") < out.rindex('fill="red"')
    assert _diff(svg, out).max() == 0


def test_translucent_points_merge_only_where_they_overlap_nothing():
    apart = "".join(f'<circle cx="{10 + 20 * i}" cy="10" r="5" fill="#e6851e" fill-opacity="0.6"/>' for i in range(5))
    close = "".join(f'<circle cx="{10 + 4 * i}" cy="30" r="5" fill="#e6851e" fill-opacity="0.6"/>' for i in range(5))
    svg_apart = f'<svg {NS} width="110" height="40">{apart}</svg>'
    svg_close = f'<svg {NS} width="110" height="40">{close}</svg>'
    merged = merge_marks(svg_apart)
    assert merged.count("<path") == 1 and "<circle" not in merged
    assert merge_marks(svg_close) == svg_close  # overlapping: each stays its own element
    d = _diff(svg_apart, merged)
    assert d.max() <= 8  # four Bezier curves against resvg's exact circle: anti-aliasing only


def test_what_is_left_alone():
    kept = (
        '<rect x="0" y="0" width="5" height="5" fill="red" stroke="black"/>'  # fill and stroke
        '<rect x="10" y="0" width="5" height="5" fill="red" stroke="black"/>'
        '<line x1="0" y1="10" x2="9" y2="10" stroke="black" stroke-dasharray="2,2"/>'  # dashes
        '<line x1="0" y1="12" x2="9" y2="12" stroke="black" stroke-dasharray="2,2"/>'
        '<rect id="a" x="0" y="20" width="5" height="5" fill="red"/>'  # named
        '<rect id="b" x="10" y="20" width="5" height="5" fill="red"/>'
        '<rect x="0" y="30" width="5" height="5" fill="red" rx="1"/>'  # rounded
        '<rect x="10" y="30" width="5" height="5" fill="red" rx="1"/>'
        '<rect x="0" y="40" width="5" height="5" fill="red" transform="rotate(3)"/>'  # not a translation
        '<rect x="10" y="40" width="5" height="5" fill="red" transform="rotate(3)"/>'
        '<rect x="20" y="40" width="5" height="5" fill="red" transform="translate(1e)"/>'  # not a number
        '<rect x="30" y="40" width="5" height="5" fill="red" transform="translate(1e)"/>'
        '<g transform="translate(1,1)"><text x="0" y="0">A</text></g>'  # a group that moves
        '<defs><clipPath id="c"><rect width="3" height="3"/><rect x="4" width="3" height="3"/></clipPath></defs>'
    )
    svg = f'<svg {NS} width="40" height="50">{kept}</svg>'
    assert merge_marks(svg) == svg
    styled = (
        f'<svg {NS} width="40" height="20"><style>.a {{ fill: blue }}</style><g class="a">'
        '<rect class="a" x="0" y="0" width="5" height="5" fill="red"/>'
        '<rect x="10" y="0" width="5" height="5" fill="red"/>'
        "</g></svg>"
    )
    assert merge_marks(styled) == styled  # a style sheet may select by class
    assert merge_marks("<svg><rect></svg") == "<svg><rect></svg"  # not XML


def test_names_only_groups_dissolve_and_empty_shapes_go():
    svg = (
        f'<svg {NS} width="40" height="20"><g class="mark-group" role="graphics-object">'
        '<g><rect class="background" x="0" y="0" width="0" height="0"/>'
        '<line transform="translate(3,0)" x2="0" y2="15" stroke="#888"/>'
        '<line transform="translate(9,0)" x2="0" y2="15" stroke="#888"/></g>'
        '<g clip-path="url(#c)"><circle r="0" fill="red"/><circle cx="20" cy="10" r="3" fill="red"/></g>'
        "</g></svg>"
    )
    out = merge_marks(svg)
    assert out.count("<g") == 1 and 'clip-path="url(#c)"' in out  # the clipped group stays
    assert 'd="M3,0L3,15M9,0L9,15"' in out and 'fill="none"' in out and 'width="0"' not in out
    assert 'r="0"' not in out and '<circle cx="20" cy="10" r="3" fill="red"' in out


@pytest.mark.parametrize("kind", ["heatmap", "points"])
def test_a_vega_chart_draws_the_same_picture_with_far_fewer_elements(kind):
    """A Vega heat map of classes and a scatter of opaque points: the chart the reports
    draw, before and after :func:`simplify_svg`."""
    import vl_convert as vlc

    rng = np.random.default_rng(1)
    if kind == "heatmap":
        classes = ["below 10 %", "10-41 %", "above", "no events"]
        cells = [(a, r, classes[rng.integers(4)]) for a in range(50) for r in range(12)]
        grid = pd.DataFrame(cells, columns=["age", "region", "class"])
        chart = alt.Chart(grid).mark_rect().encode(x="age:O", y="region:O", color="class:N")
    else:
        pts = pd.DataFrame({"x": rng.normal(size=300), "y": rng.normal(size=300), "s": rng.integers(3, size=300)})
        chart = alt.Chart(pts).mark_circle(size=30, opacity=1).encode(x="x:Q", y="y:Q", color="s:N")
    spec = chart.to_dict()
    spec["config"] = {"aria": False}  # as the reports draw them (with ARIA each mark keeps its label)
    svg = vlc.vegalite_to_svg(spec)
    out = simplify_svg(svg)
    assert _elements(out) < 0.3 * _elements(svg)
    labelled = vlc.vegalite_to_svg(chart.to_dict())
    assert simplify_svg(labelled).count("aria-label=") == labelled.count("aria-label=")
    d = _diff(svg, out)
    assert (d > 64).mean() < 0.002 and d.mean() < 0.5
