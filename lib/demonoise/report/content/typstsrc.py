"""Typst source for the PDF: escaping, values, and the Typst twins of the display objects.

The PDF is typeset by Typst (:class:`~demonoise.report.document.exporters.DocumentPDFExporter`). Every
display object of a report (tables, boxes, the legend, the main points, figure and table
captions, the cover) has a Typst representation beside its HTML one, made from the same
strings: a call of one of the functions the template defines (``dn-table``, ``dn-status``,
``dn-legend``, ...; ``templates/demonoise_typst/index.typ.j2``), with its data written as
Typst values. The template styles them, as the stylesheet styles the HTML's classes.

User text never reaches Typst as code: in markup every ASCII punctuation character is
escaped with a backslash (:func:`markup`), in code it is a string literal (:func:`value`).

This module imports nothing heavy: the kernel imports it to build the mime bundles.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from demonoise.report.content.notebook import TYPST_MIME

__all__ = [
    "TYPST_MIME",
    "Code",
    "markup",
    "string_literal",
    "value",
    "call",
    "colour",
    "table",
    "png_svg",
    "html_to_typst",
]


_PUNCT = frozenset(string.punctuation)
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}$")


class Code(str):
    """Typst code written as it is by :func:`value` (an expression, or ``[markup]`` content)."""


def markup(text: Any) -> str:
    """``text`` as literal Typst markup: every ASCII punctuation character escaped (``\\#``,
    ``\\$``, ``\\*``, ``\\<``, ...), so that nothing in it is code, maths, a label, a
    comment or markup; line breaks become spaces (a paragraph is one line)."""
    s = str(text)
    out = "".join("\\" + c if c in _PUNCT else c for c in s)
    return out.replace("\r", " ").replace("\n", " ")


def string_literal(text: Any) -> str:
    """``text`` as a Typst string literal."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def colour(css: str | None) -> Code:
    """A CSS hex colour as a Typst ``rgb(..)``; anything else (``""``, a name) as ``none``."""
    css = (css or "").strip()
    return Code(f'rgb("{css}")') if _HEX.match(css) else Code("none")


def value(obj: Any) -> str:
    """A Python value as a Typst value: strings as string literals, ``None`` as ``none``,
    sequences as arrays, mappings as dictionaries, :class:`Code` as it is."""
    if isinstance(obj, Code):
        return str(obj)
    if obj is None:
        return "none"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, int):
        return repr(obj)
    if isinstance(obj, float):
        return repr(obj) if math.isfinite(obj) else string_literal(obj)
    if isinstance(obj, str):
        return string_literal(obj)
    if isinstance(obj, Mapping):
        if not obj:
            return "(:)"
        return "(" + ", ".join(f"{k}: {value(v)}" for k, v in obj.items()) + ")"
    if isinstance(obj, Sequence):
        return "(" + "".join(value(v) + ", " for v in obj).rstrip() + ")"
    return string_literal(obj)


def call(name: str, *args: Any, **kw: Any) -> str:
    """``#name(arg, key: value, ...)``: a call of a template function, as markup."""
    parts = [value(a) for a in args] + [f"{k.replace('_', '-')}: {value(v)}" for k, v in kw.items()]
    return f"#{name}({', '.join(parts)})"


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    numeric: Sequence[bool] = (),
    fills: Sequence[Sequence[str]] | None = None,
    flagged: Sequence[bool] = (),
    groups: Sequence[tuple] = (),
) -> str:
    """A table as ``#dn-table(..)``: the column names, the rows of shown strings, which
    columns are numbers (right-aligned), a background colour per cell, flagged rows, and a
    row of column groups above the names (``(label, span, colour)``). The template repeats
    the header rows on every page the table runs over."""
    kw: dict[str, Any] = {
        "head": [str(h) for h in head],
        "rows": [[str(v) for v in r] for r in rows],
        "numeric": [bool(n) for n in numeric] or [False] * len(head),
    }
    if fills is not None:
        kw["fills"] = [[colour(c if isinstance(c, str) else "") for c in r] for r in fills]
    if any(flagged):
        kw["flagged"] = [bool(f) for f in flagged]
    if groups:
        kw["groups"] = [(str(g[0]), int(g[1]), colour(g[2] if len(g) > 2 else "")) for g in groups]
    return call("dn-table", **kw)


# ------------------------------------------------------------------ HTML -> Typst
_BLOCKS = frozenset({"p", "div", "section", "nav", "figure", "details", "main", "header", "footer", "blockquote"})
_SKIP = frozenset({"style", "script", "head", "title", "button"})
_INLINE = {"strong": "strong", "b": "strong", "em": "emph", "i": "emph", "sub": "sub", "sup": "super", "u": "underline"}


_VOID = frozenset({"br", "img", "hr", "meta", "link", "input", "col", "wbr", "source"})
_SVG = re.compile(r"<svg\b.*?</svg>", re.S | re.I)
_ATTR = re.compile(r'\s([A-Za-z:-]+)="([^"]*)"')


def png_svg(b64: str) -> str:
    """A base64 PNG wrapped in an SVG of its size (Typst reads images from bytes, and its
    source has no base64 decoder: the SVG carries the PNG as a data URI)."""
    import base64
    import struct

    head = base64.b64decode(b64[:44])
    w, h = struct.unpack(">II", head[16:24]) if head[12:16] == b"IHDR" else (100, 100)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{w}" '
        f'height="{h}" viewBox="0 0 {w} {h}"><image width="{w}" height="{h}" '
        f'xlink:href="data:image/png;base64,{b64}"/></svg>'
    )


def html_to_typst(html: str, formula=None) -> str:
    """HTML that has no Typst twin (a pandas table, a Styler, HTML written by a notebook)
    as Typst markup: paragraphs, emphasis, lists, headings (not in the contents), links,
    tables (their header rows repeated), the formulas of :func:`~.typeset.tex_svg` (through
    ``formula(tex, display)``, which returns their markup) and SVG images; scripts and
    styles are dropped, other tags keep their text."""
    import html as _html

    svgs: list[str] = []

    def keep(m: re.Match) -> str:
        svgs.append(m.group(0))
        return f'<dn-svg data-i="{len(svgs) - 1}"></dn-svg>'

    tree = _parse(_SVG.sub(keep, html))
    return _Writer(svgs, formula, _html.unescape).node(tree).strip()


def _parse(html: str) -> list:
    """A list of nodes: text, or ``(tag, attrs, children)``."""
    from html.parser import HTMLParser

    root: list = []
    stack: list = [("", {}, root)]

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            node = (tag, dict(attrs), [])
            stack[-1][2].append(node)
            if tag not in _VOID:
                stack.append(node)

        def handle_endtag(self, tag):
            for k in range(len(stack) - 1, 0, -1):
                if stack[k][0] == tag:
                    del stack[k:]
                    return

        def handle_data(self, data):
            stack[-1][2].append(data)

    p = P(convert_charrefs=True)
    p.feed(html)
    p.close()
    return root


class _Writer:
    def __init__(self, svgs, formula, unescape):
        self.svgs, self.formula, self.unescape = svgs, formula, unescape

    def node(self, nodes) -> str:
        return "".join(self.one(n) for n in nodes)

    def one(self, n) -> str:  # noqa: C901 - one branch per kind of tag
        if isinstance(n, str):
            return markup(re.sub(r"\s+", " ", n))
        tag, attrs, kids = n
        if tag in _SKIP:
            return ""
        if tag == "dn-svg":
            return self.svg(self.svgs[int(attrs["data-i"])])
        if tag in _INLINE:
            return f"#{_INLINE[tag]}[{self.node(kids)}]"
        if tag == "br":
            return "\\\n"
        if tag == "a" and attrs.get("href"):
            return f"#link({string_literal(attrs['href'])})[{self.node(kids)}]"
        if tag in ("code", "kbd", "samp", "tt"):
            return f"#raw({string_literal(self.text(kids))})"
        if tag == "pre":
            return f"\n#raw(block: true, {string_literal(self.text(kids))})\n"
        if re.fullmatch(r"h[1-6]", tag):
            level = int(tag[1])
            return f"\n#heading(level: {level}, outlined: false, bookmarked: false)[{self.node(kids).strip()}]\n"
        if tag in ("ul", "ol"):
            items = [self.node(k[2]).strip() for k in kids if isinstance(k, tuple) and k[0] == "li"]
            fn = "enum" if tag == "ol" else "list"
            return f"\n#{fn}(" + "".join(f"[{i}], " for i in items) + ")\n"
        if tag == "table":
            return "\n" + self.table(kids) + "\n"
        if tag == "img":
            return self.img(attrs)
        if tag == "hr":
            return "\n#line(length: 100%, stroke: 0.5pt)\n"
        if tag in ("dt", "summary"):
            return f"\n#strong[{self.node(kids).strip()}]\n\n"
        if tag in _BLOCKS or tag in ("dd", "li", "dl", "figcaption"):
            return f"\n\n{self.node(kids).strip()}\n\n"
        return self.node(kids)

    def text(self, kids) -> str:
        return "".join(k if isinstance(k, str) else self.text(k[2]) for k in kids)

    def svg(self, svg: str) -> str:
        head = svg[: svg.index(">")]
        attrs = dict(_ATTR.findall(head))
        if "dn-math" in attrs.get("class", "") and self.formula is not None:
            return self.formula(self.unescape(attrs.get("aria-label", "")), "dn-math-display" in attrs["class"])
        return call("dn-svg", svg)

    def img(self, attrs) -> str:
        src = attrs.get("src", "")
        if src.startswith("data:image/svg+xml;base64,"):
            import base64

            return call("dn-svg", base64.b64decode(src.split(",", 1)[1]).decode("utf-8"))
        if src.startswith("data:image/png;base64,"):
            return call("dn-svg", png_svg(src.split(",", 1)[1]))
        return markup(attrs.get("alt", ""))

    def table(self, kids) -> str:
        head_rows, body_rows = [], []
        for part in kids:
            if not isinstance(part, tuple):
                continue
            rows = [part] if part[0] == "tr" else [r for r in part[2] if isinstance(r, tuple) and r[0] == "tr"]
            for r in rows:
                cells = [c for c in r[2] if isinstance(c, tuple) and c[0] in ("th", "td")]
                target = head_rows if part[0] == "thead" else body_rows
                target.append(cells)
        if not head_rows and body_rows and all(c[0] == "th" for c in body_rows[0]):
            head_rows.append(body_rows.pop(0))
        width = max((sum(int(c[1].get("colspan") or 1) for c in r) for r in head_rows + body_rows), default=0)
        if not width:
            return ""
        heads = [[self.cell(c) for c in r] for r in head_rows]
        rows = [[self.cell(c) for c in r] for r in body_rows]
        return call("dn-table", heads=heads, rows=rows, columns=width)

    def cell(self, c) -> Code:
        span = int(c[1].get("colspan") or 1)
        body = f"[{self.node(c[2]).strip()}]"
        return Code(f"table.cell(colspan: {span}){body}" if span > 1 else body)
