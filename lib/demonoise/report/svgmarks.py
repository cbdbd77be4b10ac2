"""A chart's marks as few SVG elements as draw the same picture.

Vega writes every mark as an element of its own, each tick and grid line a ``<line>``
with its own ``transform``, every heat-map cell a ``<rect>``, every point a ``<circle>``,
each wrapped in groups that carry only names (``class``, ``role``). A PDF engine that
draws SVG in Python (WeasyPrint) pays for every element: its attributes are parsed, its
style cascaded, its transform multiplied, its graphics state pushed. Germany's 14 charts
hold about 8 100 elements; :func:`merge_marks` draws them with about 2 700.

Three rewrites, each drawing the same pixels:

* a group whose attributes are only names (no transform, paint, clip, opacity) is
  replaced by its children;
* a rectangle or circle of zero size draws nothing and is dropped (SVG 1.1, 9.2: a zero
  width or height "disables rendering");
* a run of sibling rectangles, lines and circles (with at most a translation) that share
  one paint becomes one ``<path>`` of as many sub-paths. A shape joins the latest path of
  its paint only if it overlaps nothing painted in between (and, when translucent,
  nothing in that path either): only then is the order of painting invisible. Shapes
  painting both fill and stroke, dashed strokes, and shapes with a clip, mask, filter,
  marker, ``id``, ``style`` or an ``aria-label`` (a chart drawn with ARIA describes each
  mark; the reports draw theirs without) are left as they are, as is everything inside ``<defs>``,
  ``<clipPath>``, ``<mask>``, ``<pattern>``, ``<marker>``, ``<symbol>``, ``<switch>``,
  ``<foreignObject>`` and ``<text>``; an SVG with a ``<style>`` sheet is left whole
  (its selectors may name classes).
  Overlap is judged on bounding boxes (with twice the stroke width around a stroke),
  found through a grid of 32-unit cells.

A circle becomes four cubic Bezier curves (the usual quarter-circle constant
4/3 (sqrt(2) - 1); radius error below 0.03 %), which WeasyPrint parses faster than
arcs. Coordinates are written to 1/1000 of a user unit.

Reference: W3C, *Scalable Vector Graphics (SVG) 1.1*, sections 8.3 (path data), 9.2-9.5
(basic shapes), 11.3 (fill rule: a union of same-direction sub-paths under ``nonzero``)
and 14.5 (compositing of group opacity).
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

__all__ = ["parse_svg", "merge_marks", "merge_tree"]

#: Attributes that name an element and draw nothing.
_INERT = frozenset({"class", "role", "aria-roledescription", "aria-hidden", "pointer-events"})
#: Geometry attributes of the shapes merged.
_GEOMETRY = {"rect": ("x", "y", "width", "height"), "line": ("x1", "y1", "x2", "y2"), "circle": ("cx", "cy", "r")}
#: A shape with one of these keeps its own element.
_OWN = frozenset(
    {"id", "style", "clip-path", "mask", "filter", "marker-start", "marker-mid", "marker-end", "rx", "ry", "aria-label"}
)
#: Subtrees that are not drawn where they stand (or are drawn as a whole).
_OPAQUE_SUBTREES = frozenset(
    {"defs", "clipPath", "mask", "pattern", "marker", "symbol", "text", "switch", "foreignObject"}
)
_INHERITED = ("fill", "stroke", "fill-opacity", "stroke-opacity", "stroke-dasharray", "stroke-width")
_NO_PAINT = frozenset({"none", "transparent"})
_TRANSLATE = re.compile(r"\s*translate\(\s*([-+\d.eE]+)(?:[\s,]+([-+\d.eE]+))?\s*\)\s*$")
_KAPPA = 4.0 / 3.0 * (math.sqrt(2.0) - 1.0)
#: Overlaps narrower than this (user units) are rounding, not overlap (heat-map cells
#: that end at 14.27721 and start at 14.2772).
_EPS = 0.01


def _tag(el) -> str:
    return el.tag.rsplit("}", 1)[-1]


def _n(v: float) -> str:
    r = round(v, 3)
    return "0" if r == 0 else f"{r:g}"


def _translation(el) -> tuple[float, float] | None:
    t = el.get("transform")
    if t is None:
        return 0.0, 0.0
    m = _TRANSLATE.match(t)
    try:
        return (float(m.group(1)), float(m.group(2) or 0)) if m else None
    except ValueError:  # e.g. "translate(1e)": not a plain number, the shape stays as it is
        return None


class _Shape:
    """One mergeable shape: its paint key, sub-path and bounding box (with its stroke)."""

    __slots__ = ("el", "key", "d", "box", "opaque")

    def __init__(self, el, key, d, box, opaque):
        self.el, self.key, self.d, self.box, self.opaque = el, key, d, box, opaque


def _shape(el, inh: dict) -> _Shape | None:
    """The shape ``el`` as a sub-path, or None if it keeps its own element."""
    tag = _tag(el)
    if tag not in _GEOMETRY or len(el) or (el.text or "").strip() or _OWN & el.attrib.keys():
        return None
    off = _translation(el)
    if off is None:
        return None
    own = {k: v for k, v in el.attrib.items() if k not in _INERT and k != "transform" and k not in _GEOMETRY[tag]}
    if own.get("opacity", "1") != "1":
        return None
    own.pop("opacity", None)
    ctx = {**inh, **{k: v for k, v in own.items() if k in _INHERITED}}
    fills = tag != "line" and ctx["fill"] not in _NO_PAINT
    strokes = ctx["stroke"] not in _NO_PAINT
    if fills and strokes:
        return None
    if strokes and ctx.get("stroke-dasharray", "none") not in ("none", ""):
        return None
    try:
        alpha = float(ctx.get("fill-opacity", 1)) if fills else float(ctx.get("stroke-opacity", 1))
        g = {k: float(el.get(k, 0)) for k in _GEOMETRY[tag]}
        sw = float(str(ctx.get("stroke-width", "1")).removesuffix("px")) if strokes else 0.0
    except ValueError:
        return None
    if tag == "line":
        own["fill"] = "none"
    a, b = off
    m = 2 * sw  # a stroke's reach beyond the geometry, with square caps and miter corners
    if tag == "rect":
        x, y, w, h = g["x"] + a, g["y"] + b, g["width"], g["height"]
        if w < 0 or h < 0:
            return None
        d = "" if w == 0 or h == 0 else f"M{_n(x)},{_n(y)}h{_n(w)}v{_n(h)}h{_n(-w)}Z"
        box = (x - m, y - m, x + w + m, y + h + m)
    elif tag == "line":
        x1, y1, x2, y2 = g["x1"] + a, g["y1"] + b, g["x2"] + a, g["y2"] + b
        d = f"M{_n(x1)},{_n(y1)}L{_n(x2)},{_n(y2)}"
        box = (min(x1, x2) - m, min(y1, y2) - m, max(x1, x2) + m, max(y1, y2) + m)
    else:
        cx, cy, r = g["cx"] + a, g["cy"] + b, g["r"]
        if r < 0:
            return None
        d = "" if r == 0 else _circle(cx, cy, r)
        box = (cx - r - m, cy - r - m, cx + r + m, cy + r + m)
    return _Shape(el, tuple(sorted(own.items())), d, box, alpha >= 1)


def _circle(cx: float, cy: float, r: float) -> str:
    """A circle as four cubic Bezier curves, clockwise from its rightmost point."""
    k = _KAPPA * r
    pts = [(cx + r, cy), (cx, cy + r), (cx - r, cy), (cx, cy - r), (cx + r, cy)]
    ctl = [
        ((cx + r, cy + k), (cx + k, cy + r)),
        ((cx - k, cy + r), (cx - r, cy + k)),
        ((cx - r, cy - k), (cx - k, cy - r)),
        ((cx + k, cy - r), (cx + r, cy - k)),
    ]
    d = f"M{_n(pts[0][0])},{_n(pts[0][1])}"
    for (c1, c2), p in zip(ctl, pts[1:], strict=True):
        d += f"C{_n(c1[0])},{_n(c1[1])} {_n(c2[0])},{_n(c2[1])} {_n(p[0])},{_n(p[1])}"
    return d + "Z"


class _Group:
    """Shapes of one paint drawn as one path, with a grid of their boxes (cells of
    :data:`_CELL` user units) to find the ones a new shape overlaps."""

    __slots__ = ("key", "shapes", "cells")

    def __init__(self, shape: _Shape):
        self.key, self.shapes, self.cells = shape.key, [], {}
        self.add(shape)

    def add(self, shape: _Shape) -> None:
        self.shapes.append(shape)
        for cell in _cells(shape.box):
            self.cells.setdefault(cell, []).append(shape.box)

    def overlaps(self, box) -> bool:
        x0, y0, x1, y1 = box
        for cell in _cells(box):
            for a0, b0, a1, b1 in self.cells.get(cell, ()):
                if a0 + _EPS < x1 and x0 + _EPS < a1 and b0 + _EPS < y1 and y0 + _EPS < b1:
                    return True
        return False


_CELL = 32.0


def _cells(box):
    x0, y0, x1, y1 = (int(math.floor(v / _CELL)) for v in box)
    return [(i, j) for i in range(x0, x1 + 1) for j in range(y0, y1 + 1)]


def _groups(run: list[_Shape]) -> list[list[_Shape]]:
    """The run's shapes in groups drawn as one path each, in drawing order.

    Each shape joins the latest group of its paint if it overlaps no shape drawn in
    between (so moving it down to that group changes no pixel), and, when translucent,
    no shape of that group either; otherwise it starts a group of its own."""
    groups: list[_Group] = []
    for s in run:
        target = None
        for g in reversed(groups):
            same = g.key == s.key
            if g.overlaps(s.box):
                target = g if same and s.opaque else None
                break
            if same:
                target = g
                break
        if target is None:
            groups.append(_Group(s))
        else:
            target.add(s)
    return [g.shapes for g in groups]


def _drawn(group: list[_Shape], ns: str):
    """The elements drawing ``group``: none (nothing to draw), the shape itself, or a path."""
    group = [s for s in group if s.d]
    if not group:
        return None
    if len(group) == 1:
        return group[0].el
    d = "".join(s.d for s in group)
    path = ET.Element(f"{ns}path", dict(group[0].key))
    path.set("d", d)
    return path


def _inert_group(el) -> bool:
    return _tag(el) == "g" and el.attrib.keys() <= _INERT and not (el.text or "").strip()


def _children(el) -> list:
    """The children of ``el`` with inert groups replaced by their own children."""
    out = []
    for c in el:
        if _inert_group(c):
            out.extend(_children(c))
        else:
            out.append(c)
    return out


def merge_tree(root) -> bool:
    """Rewrite the SVG element tree ``root`` in place (module docstring); True if
    anything changed. Never raises on odd values: a shape whose numbers are not plain
    keeps its own element."""
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    if any(_tag(el) == "style" for el in root.iter()):
        return False  # a style sheet may select by class: names are not inert there
    changed = False

    def walk(el, inh: dict) -> None:
        nonlocal changed
        inh = {**inh, **{k: el.get(k) for k in _INHERITED if k in el.attrib}}
        kids = _children(el)
        local = len(kids) != len(el) or any(a is not b for a, b in zip(kids, el, strict=False))
        out: list = []
        run: list[_Shape] = []

        def flush() -> None:
            nonlocal local
            for group in _groups(run):
                drawn = _drawn(group, ns)
                local = local or drawn is not group[0].el
                if drawn is not None:
                    out.append(drawn)
            run.clear()

        for c in kids:
            s = _shape(c, inh)
            if s is None:
                flush()
                if _tag(c) not in _OPAQUE_SUBTREES:
                    walk(c, inh)
                out.append(c)
            else:
                run.append(s)
        flush()
        if local:
            for c in list(el):
                el.remove(c)
            el.extend(out)
            changed = True

    walk(root, {"fill": "black", "stroke": "none"})
    return changed


def parse_svg(svg: str):
    """The element tree of ``svg`` (SVG and XLink written back without prefixes), or None
    if it is not XML."""
    ET.register_namespace("", "http://www.w3.org/2000/svg")
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    try:
        return ET.fromstring(svg)
    except ET.ParseError:
        return None


def merge_marks(svg: str) -> str:
    """``svg`` with its marks merged (module docstring); ``svg`` itself if it is not XML
    or nothing merges."""
    root = parse_svg(svg)
    if root is None or not merge_tree(root):
        return svg
    return ET.tostring(root, encoding="unicode")
