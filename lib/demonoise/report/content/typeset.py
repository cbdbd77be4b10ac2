"""Formulas typeset in Python (TeX -> MathML -> SVG by ziamath, its glyphs drawn as paths:
no ids to collide), Markdown to HTML by nbconvert's parser (mistune with its math plugin),
and HTML to Typst (:func:`html_to_typst`, for Markdown and every HTML without a Typst twin),
each formula the same SVG on the text's baseline in the HTML and the PDF: no browser, no
TeX (why not Typst's own maths: docs/design.md).
"""

from __future__ import annotations

import base64
import html as _html
import re
import warnings
from functools import lru_cache

from bs4 import BeautifulSoup
from bs4.element import PreformattedString
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from demonoise.core.errors import ReportError
from demonoise.report.content.typstsrc import Code, call, markup, png_svg, string_literal

#: Class of every typeset formula (``<svg class="dn-math">``; display maths also ``dn-math-display``).
MATH_CLASS = "dn-math"
#: ziamath's drawing size (px); the SVG is scaled to the text with em units.
_SIZE = 24.0
_DIM = re.compile(r'^<svg ([^>]*?)width="([\d.]+)" height="([\d.]+)"')


@lru_cache(maxsize=4096)
def _typeset(tex: str, display: bool) -> tuple[str, re.Match, float, float, float]:
    """ziamath's SVG of one formula, its header (:data:`_DIM`), width and height in em and its
    baseline offset (em, negative below the baseline)."""
    import ziafont
    import ziamath

    ziafont.config.svg2 = False
    try:
        with warnings.catch_warnings():  # ziamath's own use of a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            m = ziamath.Latex(tex, size=_SIZE, inline=not display)
            svg = m.svg()
            descent = m.getyofst()
    except Exception as e:  # ziamath raises many kinds; one clear line
        raise ReportError(f"formula cannot be typeset: ${tex}$ ({type(e).__name__}: {e})") from None
    match = _DIM.match(svg)  # ziamath writes xmlns, width and height first, in fixed point
    return svg, match, float(match.group(2)) / _SIZE, float(match.group(3)) / _SIZE, descent / _SIZE


def tex_svg(tex: str, display: bool = False) -> str:
    """One formula as an inline ``<svg>`` sized in em (so it follows the font size) and
    aligned on the text's baseline.

    Raises
    ------
    ReportError
        ziamath cannot typeset ``tex`` (the message quotes it).
    """
    svg, match, w, h, descent = _typeset(tex := tex.strip(), display)
    cls = MATH_CLASS + (" dn-math-display" if display else "")
    style = "" if display else f' style="vertical-align:{descent:.3f}em"'
    return (
        f'<svg {match.group(1)}class="{cls}" role="img" aria-label="{_html.escape(tex, quote=True)}" '
        f'width="{w:.3f}em" height="{h:.3f}em"{style}{svg[match.end() :]}'
    )


def tex_typst(tex: str, display: bool = False) -> str:
    """One formula as Typst markup: ziamath's SVG (the picture of :func:`tex_svg`) at its
    size in em, inline on the text's baseline (``#dn-math``), or centred in a block of its
    own (``#dn-math-block``).

    Raises
    ------
    ReportError
        ziamath cannot typeset ``tex``.
    """
    svg, _, _, h, descent = _typeset(tex := tex.strip(), display)
    if display:
        return call("dn-math-block", svg, Code(f"{h:.3f}em"), alt=tex)
    return call("dn-math", svg, Code(f"{h:.3f}em"), Code(f"{-descent:.3f}em"), alt=tex)


class MathRenderer(IPythonRenderer):
    """nbconvert's renderer with block and inline maths written as SVG."""

    def block_math(self, body: str) -> str:
        return f'<div class="dn-math-block">{tex_svg(body, True)}</div>'

    def inline_math(self, body: str) -> str:
        return tex_svg(body, False)

    def latex_environment(self, name: str, body: str) -> str:
        return self.block_math("\\begin{" + name + "}" + body + "\\end{" + name + "}")


def markdown_to_html(source: str, renderer: type = MathRenderer, **renderer_kw) -> str:
    """Markdown (with maths) to HTML, formulas as SVG (``renderer``: a :class:`MathRenderer`)."""
    return MarkdownWithMath(renderer=renderer(escape=False, **renderer_kw)).render(source)


class _PdfRenderer(MathRenderer):
    """The Typst side's renderer: an image as mistune writes it (no attachments; its text shown)."""

    def image(self, text: str, url: str, title=None) -> str:
        return super(IPythonRenderer, self).image(text, url, title)


def markdown_to_typst(source: str) -> str:
    """Markdown (with maths) to Typst markup: its HTML (:class:`MathRenderer`) converted by :func:`html_to_typst`."""
    return html_to_typst(markdown_to_html(source, _PdfRenderer, exclude_anchor_links=True))


# ------------------------------------------------------------------ HTML -> Typst
_SKIP = frozenset({"style", "script", "head", "title", "button"})
#: Inline tags: a Typst function of their content.
_INLINE = {"strong": "strong", "b": "strong", "em": "emph", "i": "emph", "sub": "sub", "sup": "super"}
_INLINE |= {"u": "underline", "del": "strike", "s": "strike"}
#: Block tags: their content (trimmed) in a paragraph or a function of its own; empty tags as they are.
_BLOCK = dict.fromkeys("p div section nav figure figcaption details main header footer li".split(), "\n\n{}\n\n")
_BLOCK |= {"blockquote": "\n#quote(block: true)[{}]\n", "summary": "\n#strong[{}]\n\n"}
_BLOCK |= {
    f"h{n}": f"\n#heading(level: {n}, outlined: false, bookmarked: {str(n <= 3).lower()})[{{}}]\n" for n in range(1, 7)
}
_BLOCK |= {"br": "\\\n", "hr": "\n#line(length: 100%, stroke: 0.5pt)\n"}
_SVG = re.compile(r"<svg\b.*?</svg>", re.S | re.I)
#: A formula's SVG as :func:`tex_svg` writes it: whether it is displayed, its TeX (escaped).
_MATH = re.compile(rf'<svg [^>]*?class="{MATH_CLASS}( dn-math-display)?" role="img" aria-label="([^"]*)"')
#: An image's SVG from its base64 data, by the media type of its ``data:`` URL (others show their ``alt`` text).
_IMAGES = {"data:image/svg+xml": lambda b64: base64.b64decode(b64).decode("utf-8"), "data:image/png": png_svg}


def _count(attr) -> int:
    """A ``start`` or ``colspan`` attribute: its whole number, 1 where it has none."""
    return int(attr) if str(attr or "").strip().isdigit() else 1


def html_to_typst(html: str) -> str:
    """HTML as Typst markup: paragraphs, emphasis, lists, headings (not in the contents;
    bookmarked down to level 3), quotes, links, code, tables (their header rows repeated),
    the formulas of :func:`tex_svg` (by :func:`tex_typst`) and SVG images; scripts and styles
    are dropped, other tags keep their text. Markdown comes this way (:func:`markdown_to_typst`),
    and HTML that has no Typst twin (a pandas table, a Styler, HTML written by a notebook)."""
    # each SVG kept whole in an attribute (the HTML parser would lower-case its viewBox)
    html = _SVG.sub(lambda m: f'<dn-svg data-svg="{_html.escape(m[0])}"></dn-svg>', html)
    return _nodes(BeautifulSoup(html, "html.parser")).strip()


def _nodes(nodes) -> str:
    return "".join(_one(n) for n in nodes)


def _one(n) -> str:  # noqa: C901 - one branch per kind of tag
    if isinstance(n, str):  # text, or a comment, declaration, ... (dropped)
        return "" if isinstance(n, PreformattedString) else markup(re.sub(r"[ \t\r\n]+", " ", n))
    tag, attrs, kids = n.name, n.attrs, n.contents
    if tag in _SKIP:
        return ""
    if tag == "dn-svg":
        return _svg(attrs["data-svg"])
    if tag in _INLINE:
        return f"#{_INLINE[tag]}[{_nodes(kids)}]"
    if tag == "a" and attrs.get("href"):
        return f"#link({string_literal(attrs['href'])})[{_nodes(kids)}]"
    if tag in ("code", "kbd", "samp", "tt"):
        return f"#raw({string_literal(n.get_text())})"
    if tag == "pre":
        return f"\n#raw(block: true, {string_literal(n.get_text().rstrip())})\n"
    if tag in ("ul", "ol"):
        start = _count(attrs.get("start"))
        fn = "list(" if tag == "ul" else (f"enum(start: {start}, " if start != 1 else "enum(")
        items = "".join(f"[{_nodes(k.contents).strip()}], " for k in n.find_all("li", recursive=False))
        return f"\n#{fn}{items})\n"
    if tag == "dl":
        return f"\n#terms({_terms(n)})\n"
    if tag == "input" and attrs.get("type") == "checkbox":
        return "☑ " if "checked" in attrs else "☐ "
    if tag == "table":
        return "\n" + _table(n) + "\n"
    if tag == "img":
        return _img(attrs)
    if tag in _BLOCK:
        return _BLOCK[tag].format(_nodes(kids).strip())
    return _nodes(kids)


def _terms(dl) -> str:
    """A definition list's items: each term with its definitions."""
    items = []
    for k in dl.find_all(["dt", "dd"], recursive=False):
        if k.name == "dt" or not items:
            items.append([])
        items[-1].append(f"[{_nodes(k.contents).strip()}]")
    return "".join(f"terms.item({', '.join(i)}), " for i in items)


def _svg(svg: str) -> str:
    math = _MATH.match(svg)
    return tex_typst(_html.unescape(math[2]), bool(math[1])) if math else call("dn-svg", svg)


def _img(attrs) -> str:
    kind, _, data = attrs.get("src", "").partition(";base64,")
    return call("dn-svg", _IMAGES[kind](data)) if kind in _IMAGES else markup(attrs.get("alt", ""))


def _table(t) -> str:
    head_rows, body_rows = [], []
    for part in t.find_all(["thead", "tbody", "tfoot", "tr"], recursive=False):
        for r in [part] if part.name == "tr" else part.find_all("tr", recursive=False):
            (head_rows if part.name == "thead" else body_rows).append(r.find_all(["th", "td"], recursive=False))
    if not head_rows and body_rows and all(c.name == "th" for c in body_rows[0]):
        head_rows.append(body_rows.pop(0))
    width = max((sum(_count(c.attrs.get("colspan")) for c in r) for r in head_rows + body_rows), default=0)
    if not width:
        return ""
    heads = [[_cell(c) for c in r] for r in head_rows]
    rows = [[_cell(c) for c in r] for r in body_rows]
    return call("dn-table", heads=heads, rows=rows, columns=width)


def _cell(c) -> Code:
    span = _count(c.attrs.get("colspan"))
    align = re.search(r"text-align:\s*(left|center|right)", c.attrs.get("style") or "")
    opts = ([f"colspan: {span}"] if span > 1 else []) + ([f"align: {align.group(1)}"] if align else [])
    body = f"[{_nodes(c.contents).strip()}]"
    return Code(f"table.cell({', '.join(opts)}){body}" if opts else body)
