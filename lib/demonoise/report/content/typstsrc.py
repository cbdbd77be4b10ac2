"""Typst source for the PDF: beside its HTML, every display object of a report has a call of
a function the template defines (``dn-table``, ``dn-legend``, ...; ``index.typ.j2``) with its
data written as Typst values. User text never reaches Typst as code: in markup every ASCII
punctuation character is escaped (:func:`markup`), in code it is a string literal
(:func:`value`). The kernel imports this module: it imports nothing heavy.
"""

from __future__ import annotations

import base64
import math
import re
import string
import struct
from collections.abc import Mapping, Sequence
from typing import Any

#: Markup: every ASCII punctuation character escaped, a line break a space.
_MARKUP = str.maketrans({c: "\\" + c for c in string.punctuation} | {"\r": " ", "\n": " "})
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}$")


class Code(str):
    """Typst code written as it is by :func:`value` (an expression, or ``[markup]`` content)."""


def markup(text: Any) -> str:
    """``text`` as literal Typst markup: every ASCII punctuation character escaped (``\\#``,
    ``\\$``, ``\\*``, ``\\<``, ...), so that nothing in it is code, maths, a label, a
    comment or markup; line breaks become spaces (a paragraph is one line)."""
    return str(text).translate(_MARKUP)


def string_literal(text: Any) -> str:
    """``text`` as a Typst string literal."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def colour(css: str | None) -> Code:
    """A CSS hex colour as a Typst ``rgb(..)``; anything else (``""``, a name) as ``none``."""
    css = (css or "").strip()
    return Code(f'rgb("{css}")') if _HEX.match(css) else Code("none")


def value(obj: Any) -> str:
    """A Python value as a Typst value: ``None`` as ``none``, sequences as arrays, mappings as
    dictionaries, :class:`Code` as it is, anything else (strings, NaN) as a string literal."""
    if isinstance(obj, Code):
        return str(obj)
    if obj is None or isinstance(obj, bool):
        return str(obj).lower()
    if isinstance(obj, int) or (isinstance(obj, float) and math.isfinite(obj)):
        return repr(obj)
    if isinstance(obj, Mapping):
        return "(" + (", ".join(f"{k}: {value(v)}" for k, v in obj.items()) or ":") + ")"
    if isinstance(obj, Sequence) and not isinstance(obj, str):
        return "(" + "".join(value(v) + ", " for v in obj).rstrip() + ")"
    return string_literal(obj)


def call(name: str, *args: Any, **kw: Any) -> str:
    """``#name(arg, key: value, ...)``: a call of a template function, as markup."""
    parts = [value(a) for a in args] + [f"{k.replace('_', '-')}: {value(v)}" for k, v in kw.items()]
    return f"#{name}({', '.join(parts)})"


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric, fills, flagged, groups) -> str:
    """A table as ``#dn-table(..)``: column names, rows of shown strings, which columns are
    numbers (right-aligned), a background colour per cell (or ``None``), flagged rows and a row
    of column groups ``(label, span, colour)`` above the names (repeated on every page)."""
    kw: dict[str, Any] = {"head": list(head), "rows": [[str(v) for v in r] for r in rows], "numeric": list(numeric)}
    if fills is not None:
        kw["fills"] = [[colour(c if isinstance(c, str) else "") for c in r] for r in fills]
    if any(flagged):
        kw["flagged"] = [bool(f) for f in flagged]
    if groups:
        kw["groups"] = [(str(label), int(span), colour(c)) for label, span, c in groups]
    return call("dn-table", **kw)


def png_svg(b64: str) -> str:
    """A base64 PNG wrapped in an SVG of its size (Typst reads images from bytes, and its
    source has no base64 decoder: the SVG carries the PNG as a data URI)."""
    head = base64.b64decode(b64[:44])
    w, h = struct.unpack(">II", head[16:24]) if head[12:16] == b"IHDR" else (100, 100)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{w}" '
        f'height="{h}" viewBox="0 0 {w} {h}"><image width="{w}" height="{h}" '
        f'xlink:href="data:image/png;base64,{b64}"/></svg>'
    )
