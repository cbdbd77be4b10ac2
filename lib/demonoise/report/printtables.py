"""Report tables laid out with their column widths given: what the PDF lays out.

WeasyPrint sizes a table of ``table-layout: auto`` by laying out the text of every cell
twice more than it draws it (its narrowest and its widest line, Pango each time): for
Germany's report (28 tables, 9 100 cells) that was an eighth of the PDF's time (cProfile).
:func:`print_tables` does that sizing here instead, from the advance widths of the
template's own typeface (fontTools, which WeasyPrint itself depends on), and hands each
table to WeasyPrint as ``table-layout: fixed`` with a ``<colgroup>``.

The widths follow CSS 2.1's automatic table layout (section 17.5.2.2): a column's widest
content (``max``) and its narrowest (``min``: its longest word, or the whole text where
the text does not wrap); a cell spanning columns widens them equally where its content is
wider than they are together; the table is as wide as its columns' ``max`` when that fits
the page, else each column gets its ``min`` and a share of the rest in proportion to
``max - min``; no narrower than the ``min``'s, even beyond the page (as WeasyPrint's own
layout does). Kerning is ignored (DejaVu Sans kerns few pairs, narrowing a text), and each
column gets :data:`SLACK` more, so a text that fits one line in the automatic layout fits
here too.

Only the tables the report writes itself (``<table class="dn-table">`` of
:meth:`demonoise.report.summary.HtmlTable.to_html`: one text per cell, no markup) are changed;
the HTML report keeps the browser's automatic layout. The sizes below are those of the
print stylesheet (``templates/demonoise/static/print.css`` and ``demonoise.css``); the
test ``tests/test_report_printtables.py`` compares the widths with WeasyPrint's automatic
layout of the same tables, so a change to the stylesheets shows there.
"""

from __future__ import annotations

import html as _html
import re
from functools import lru_cache

from demonoise.core.errors import ReportError
from demonoise.report.templates import FONT_FACES, FONT_FAMILY, fonts_dir

__all__ = ["print_tables", "column_widths", "text_width"]

#: The print stylesheet's root font size (pt) and the report tables' sizes in rem:
#: text 0.78 (0.72 on a landscape page), padding 0.45 left and right.
ROOT_PT = 9.5
FONT_REM = 0.78
FONT_REM_LANDSCAPE = 0.72
PADDING_REM = 0.45
#: Width of the text block (pt): A4 less the page margins of print.css (16 mm and 14 mm).
PAGE_WIDTH_PT = (210 - 2 * 16) * 72 / 25.4
PAGE_WIDTH_LANDSCAPE_PT = (297 - 2 * 14) * 72 / 25.4
#: Added to every column: a fraction of its width, and points.
SLACK = (0.015, 0.75)

_TABLE = re.compile(r'<table class="dn-table">(.*?)</table>', re.S)
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S)
_CELL = re.compile(r"<(td|th)([^>]*)>(.*?)</\1>", re.S)
_SPAN = re.compile(r'colspan="(\d+)"')
_SECTION = re.compile(r'<section class="([^"]*)"')


@lru_cache(maxsize=4)
def _advances(bold: bool) -> dict[str, float]:
    """Advance width of every character of the template's typeface, in em."""
    from fontTools.ttLib import TTFont

    d = fonts_dir()
    if d is None:
        raise ReportError("the template has no fonts/ with its typeface: table widths cannot be measured")
    name = FONT_FACES[(FONT_FAMILY, "normal", 700 if bold else 400)]
    with TTFont(d / name, lazy=True) as font:
        upm = font["head"].unitsPerEm
        metrics = font["hmtx"].metrics
        return {chr(c): metrics[g][0] / upm for c, g in font.getBestCmap().items()}


def text_width(text: str, *, bold: bool = False) -> float:
    """Width of ``text`` in em: the sum of its characters' advances (a character the
    typeface lacks counts as 1 em, more than any it has).

    Raises
    ------
    ReportError
        The template has no typeface (:func:`~demonoise.report.templates.fonts_dir`).
    """
    adv = _advances(bold)
    return sum(adv.get(ch, 1.0) for ch in text)


def _cells(table: str):
    """Rows of ``(first column, span, text, header, nowrap)`` of a report table."""
    rows = []
    for row in _ROW.findall(table):
        col, cells = 0, []
        for tag, attrs, inner in _CELL.findall(row):
            m = _SPAN.search(attrs)
            span = int(m.group(1)) if m else 1
            text = _html.unescape(inner).strip()
            header = tag == "th"
            cells.append((col, span, text, header, not header and "dn-n" in attrs))
            col += span
        rows.append(cells)
    return rows


def column_widths(table: str, *, landscape: bool = False) -> list[float]:
    """Column widths (pt) of a ``<table class="dn-table">`` as the automatic layout of the
    print stylesheet gives them (module notes).

    Parameters
    ----------
    table : str
        The table's HTML (:meth:`demonoise.report.summary.HtmlTable.to_html`).
    landscape : bool
        On a landscape page: smaller text, a wider page, and no cell of the body wraps.

    Returns
    -------
    list of float
        One width per column, padding included; empty for a table without cells.
    """
    size = ROOT_PT * (FONT_REM_LANDSCAPE if landscape else FONT_REM)
    pad = 2 * PADDING_REM * ROOT_PT
    page = PAGE_WIDTH_LANDSCAPE_PT if landscape else PAGE_WIDTH_PT
    rows = _cells(table)
    ncol = max((c[0] + c[1] for r in rows for c in r), default=0)
    wide, narrow, spans = [pad] * ncol, [pad] * ncol, []
    for row in rows:
        for col, span, text, header, nowrap in row:
            w = text_width(text, bold=header) * size + pad
            if span > 1:
                spans.append((col, span, w))
                continue
            keep = nowrap or (landscape and not header)  # print.css: no body cell wraps on a landscape page
            least = w if keep else max((text_width(x, bold=header) for x in text.split()), default=0.0) * size + pad
            wide[col], narrow[col] = max(wide[col], w), max(narrow[col], least)
    for col, span, w in spans:
        short = w - sum(wide[col : col + span])
        if short > 0:
            for i in range(col, col + span):
                wide[i] += short / span
    frac, pts = SLACK
    wide = [x * (1 + frac) + pts for x in wide]
    narrow = [min(x * (1 + frac) + pts, y) for x, y in zip(narrow, wide, strict=True)]
    if sum(wide) <= page or sum(wide) == sum(narrow):
        return wide
    if sum(narrow) >= page:
        return narrow
    share = (page - sum(narrow)) / (sum(wide) - sum(narrow))
    return [a + (b - a) * share for a, b in zip(narrow, wide, strict=True)]


def _fixed(table: str, landscape: bool) -> str:
    widths = column_widths(table, landscape=landscape)
    if not widths:
        return table
    cols = "".join(f'<col style="width:{w:.2f}pt">' for w in widths)
    style = f"table-layout:fixed;width:{sum(widths):.2f}pt"
    opening = f'<table class="dn-table" style="{style}"><colgroup>{cols}</colgroup>'
    return table.replace('<table class="dn-table">', opening, 1)


def print_tables(html: str) -> str:
    """``html`` with every report table given its column widths (``table-layout: fixed``),
    those of a landscape chapter (``<section class="dn-chapter dn-landscape">``) for its
    landscape page (module notes)."""
    if fonts_dir() is None:  # no typeface of the template: WeasyPrint's own layout
        return html
    starts = [(m.start(), "dn-landscape" in m.group(1).split()) for m in _SECTION.finditer(html)]

    def landscape_at(pos: int) -> bool:
        inside = [land for start, land in starts if start < pos]
        return bool(inside and inside[-1])

    return _TABLE.sub(lambda m: _fixed(m.group(0), landscape_at(m.start())), html)
