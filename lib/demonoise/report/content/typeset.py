"""Formulas typeset in Python (TeX -> MathML -> SVG by ziamath) and Markdown to HTML and to
Typst by nbconvert's own Markdown parser (mistune with its math plugin).

The HTML renderer (:class:`MathRenderer`) writes each formula as an inline ``<svg>``, the
Typst renderer (:class:`TypstRenderer`) every token as Typst markup and each formula as the
same SVG on the text's baseline: the same picture in the HTML and the PDF, no browser, no
JavaScript, no TeX (why ziamath and not Typst's own maths: docs/design.md). ziamath draws its
STIX Two Math glyphs as paths (``ziafont.config.svg2 = False``: no ids to collide).
"""

from __future__ import annotations

import html as _html
import re
import warnings
from functools import lru_cache

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from demonoise.core.errors import ReportError
from demonoise.report.content.typstsrc import Code, call, html_to_typst, markup, string_literal

__all__ = [
    "MATH_CLASS",
    "tex_svg",
    "tex_typst",
    "MathRenderer",
    "TypstRenderer",
    "markdown_to_html",
    "markdown_to_typst",
    "count_formulas",
]

#: Class of every typeset formula (``<svg class="dn-math">``; display maths also ``dn-math-display``).
MATH_CLASS = "dn-math"
#: ziamath's drawing size (px); the SVG is scaled to the text with em units.
_SIZE = 24.0
_DIM = re.compile(r'^<svg ([^>]*?)width="([\d.]+)" height="([\d.]+)"')


@lru_cache(maxsize=4096)
def _typeset(tex: str, display: bool) -> tuple[str, float, float, float]:
    """ziamath's SVG of one formula, its width and height in em and its baseline offset
    (em, negative below the baseline)."""
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
    match = _DIM.match(svg)
    if not match:
        raise ReportError(f"formula cannot be typeset: ${tex}$ (unexpected SVG header)")
    return svg, float(match.group(2)) / _SIZE, float(match.group(3)) / _SIZE, descent / _SIZE


@lru_cache(maxsize=4096)
def tex_svg(tex: str, display: bool = False) -> str:
    """One formula as an inline ``<svg>`` sized in em (so it follows the font size) and
    aligned on the text's baseline.

    Raises
    ------
    ReportError
        ziamath cannot typeset ``tex`` (the message quotes it).
    """
    svg, w, h, descent = _typeset(tex.strip(), display)
    match = _DIM.match(svg)
    cls = MATH_CLASS + (" dn-math-display" if display else "")
    style = "" if display else f' style="vertical-align:{descent:.3f}em"'
    label = _html.escape(tex.strip(), quote=True)
    head = (
        f'<svg {match.group(1)}class="{cls}" role="img" aria-label="{label}" width="{w:.3f}em" '
        f'height="{h:.3f}em"{style}'
    )
    return head + svg[match.end() :]


@lru_cache(maxsize=4096)
def tex_typst(tex: str, display: bool = False) -> str:
    """One formula as Typst markup: ziamath's SVG (the picture of :func:`tex_svg`) at its
    size in em, inline on the text's baseline (``#dn-math``), or centred in a block of its
    own (``#dn-math-block``).

    Raises
    ------
    ReportError
        ziamath cannot typeset ``tex``.
    """
    svg, w, h, descent = _typeset(tex.strip(), display)
    if display:
        return call("dn-math-block", svg, Code(f"{h:.3f}em"), alt=tex.strip())
    return call("dn-math", svg, Code(f"{h:.3f}em"), Code(f"{-descent:.3f}em"), alt=tex.strip())


class MathRenderer(IPythonRenderer):
    """nbconvert's renderer with block and inline maths written as SVG."""

    def block_math(self, body: str) -> str:
        return f'<div class="dn-math-block">{tex_svg(body, True)}</div>'

    def inline_math(self, body: str) -> str:
        return tex_svg(body, False)

    def latex_environment(self, name: str, body: str) -> str:
        tex = "\\begin{" + name + "}" + body + "\\end{" + name + "}"
        return f'<div class="dn-math-block">{tex_svg(tex, True)}</div>'


def markdown_to_html(source: str, **renderer_kw) -> str:
    """Markdown (with maths) to HTML, formulas as SVG."""
    return MarkdownWithMath(renderer=MathRenderer(escape=False, **renderer_kw)).render(source)


class TypstRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer writing Typst markup: text escaped (:func:`~.typstsrc.markup`),
    headings kept out of the contents (chapters and settings make it) but bookmarked down
    to level 3, lists, tables (``#dn-table``), code, links, and formulas (:func:`tex_typst`).
    HTML inside the Markdown goes through :func:`~.typstsrc.html_to_typst`."""

    def __init__(self, **kw):
        super().__init__(escape=False, **kw)
        self._head_cells = 0

    # inline
    def text(self, text: str) -> str:
        return markup(text)

    def emphasis(self, text: str) -> str:
        return f"#emph[{text}]"

    def strong(self, text: str) -> str:
        return f"#strong[{text}]"

    def strikethrough(self, text: str) -> str:
        return f"#strike[{text}]"

    def link(self, text: str, url: str, title=None) -> str:
        return f"#link({string_literal(url)})[{text}]"

    def image(self, text: str, url: str, title=None) -> str:
        return markup(text)

    def codespan(self, text: str) -> str:
        return f"#raw({string_literal(text)})"

    def linebreak(self) -> str:
        return "\\\n"

    def softbreak(self) -> str:
        return "\n"

    def inline_html(self, html: str) -> str:
        return html_to_typst(html, tex_typst)

    def inline_math(self, body: str) -> str:
        return tex_typst(body, False)

    # blocks
    def paragraph(self, text: str) -> str:
        return text.strip() + "\n\n"

    def heading(self, text: str, level: int, **attrs) -> str:
        return f"#heading(level: {level}, outlined: false, bookmarked: {'true' if level <= 3 else 'false'})[{text}]\n\n"

    def blank_line(self) -> str:
        return ""

    def thematic_break(self) -> str:
        return "#line(length: 100%, stroke: 0.5pt)\n\n"

    def block_text(self, text: str) -> str:
        return text

    def block_code(self, code: str, info=None) -> str:
        return f"#raw(block: true, {string_literal(code.rstrip())})\n\n"

    def block_quote(self, text: str) -> str:
        return f"#quote(block: true)[{text.strip()}]\n\n"

    def block_html(self, html: str) -> str:
        return html_to_typst(html, tex_typst) + "\n\n"

    def block_error(self, text: str) -> str:
        return text

    def list(self, text: str, ordered: bool, **attrs) -> str:
        start = attrs.get("start")
        fn = f"enum(start: {int(start)}, " if ordered and start not in (None, 1) else ("enum(" if ordered else "list(")
        return f"#{fn}{text})\n\n"

    def list_item(self, text: str, **attrs) -> str:
        return f"[{text.strip()}], "

    def task_list_item(self, text: str, checked: bool = False, **attrs) -> str:
        return f"[{'☑' if checked else '☐'} {text.strip()}], "

    def def_list(self, text: str) -> str:
        return f"#terms({text})\n\n"

    def def_list_head(self, text: str) -> str:
        return f"terms.item([{text.strip()}], "

    def def_list_item(self, text: str) -> str:
        return f"[{text.strip()}]), "

    def block_math(self, body: str) -> str:
        return tex_typst(body, True) + "\n\n"

    def multiline_math(self, text: str) -> str:
        return self.block_math(text)

    def latex_environment(self, name: str, body: str) -> str:
        return tex_typst("\\begin{" + name + "}" + body + "\\end{" + name + "}", True) + "\n\n"

    # tables (mistune's table plugin)
    def table(self, text: str) -> str:
        n, self._head_cells = self._head_cells, 0
        return f"#dn-table(columns: {max(n, 1)}, {text}))\n\n"

    def table_head(self, text: str) -> str:
        return f"heads: (({text}),), rows: ("

    def table_body(self, text: str) -> str:
        return f"{text}"

    def table_row(self, text: str) -> str:
        return f"({text}), "

    def table_cell(self, text: str, align=None, head: bool = False) -> str:
        if head:
            self._head_cells += 1
        a = {"center": "center", "right": "right", "left": "left"}.get(align or "")
        return f"table.cell(align: {a})[{text.strip()}], " if a else f"[{text.strip()}], "


def markdown_to_typst(source: str) -> str:
    """Markdown (with maths) to Typst markup (:class:`TypstRenderer`)."""
    return MarkdownWithMath(renderer=TypstRenderer()).render(source)


class _Counter(IPythonRenderer):
    def __init__(self):
        super().__init__(escape=False)
        self.n = 0

    def block_math(self, body: str) -> str:
        self.n += 1
        return ""

    inline_math = block_math

    def latex_environment(self, name: str, body: str) -> str:
        self.n += 1
        return ""


def count_formulas(markdown: str) -> int:
    """How many formulas nbconvert's Markdown parser finds in ``markdown``."""
    counter = _Counter()
    MarkdownWithMath(renderer=counter).render(markdown)
    return counter.n
