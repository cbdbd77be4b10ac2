"""Formulas typeset in Python: TeX -> MathML (latex2mathml, through ziamath) -> SVG (ziamath).

The formulas of a notebook are found by nbconvert's own Markdown parser (mistune with its
math plugin, :class:`nbconvert.filters.markdown_mistune.MarkdownWithMath`): the renderer
below overrides only how block and inline maths are written -- as an inline ``<svg>``
element instead of ``$...$`` for MathJax. No browser, no JavaScript: the same SVG is in the
HTML; the PDF gets each formula as a PNG image rasterised from that SVG
(:func:`print_formulas`, at :data:`PRINT_PX_PER_EM` pixels per em).

Why ziamath: pure Python, its own STIX Two Math font drawn as paths (the SVG needs no font
on the reader's machine), all formulas of the notebooks typeset (see
``tests/test_report_documents.py``). ``ziafont.config.svg2 = False`` writes each glyph as
a ``<path>`` (no ``<symbol>``/``<use>`` ids that would collide between formulas of one page).

Why images in the PDF: WeasyPrint draws an SVG by parsing every glyph outline each time it
is drawn, in Python; a country report's 87 formulas took 0.85 s of its PDF (LU: about a
sixth of its 5.8 s), drawn as PNG images 0.13 s (a formula used twice is embedded once).
At 100 px per em the images have 758 ppi at the print stylesheet's 9.5 pt (600 ppi up to
12 pt): the same picture as the vector formula at 600 dpi (pdftoppm), and a smaller PDF
(LU 452 kB instead of 616 kB). The HTML keeps the vector SVG.
"""

from __future__ import annotations

import html as _html
import re
import warnings
from functools import lru_cache

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from demonoise.core.errors import ReportError

__all__ = [
    "MATH_CLASS",
    "PRINT_PX_PER_EM",
    "tex_svg",
    "print_formulas",
    "MathRenderer",
    "markdown_to_html",
    "count_formulas",
]

#: Class of every typeset formula (``<svg class="dn-math">``; display maths also ``dn-math-display``).
MATH_CLASS = "dn-math"
#: ziamath's drawing size (px); the SVG is scaled to the text with em units.
_SIZE = 24.0
_DIM = re.compile(r'^<svg ([^>]*?)width="([\d.]+)" height="([\d.]+)"')
#: Pixels per em of a formula in a PDF (758 ppi at 9.5 pt, 600 ppi up to 12 pt).
PRINT_PX_PER_EM = 100
#: A formula as :func:`tex_svg` writes it (no nested ``<svg>``), also as an HTML serialiser
#: may leave it: attribute names in lower case, the SVG namespace moved to a prefix
#: (``<ns0:svg>``, in headings) or to an ancestor.
_FORMULA = re.compile(r'<(\w+:)?svg [^>]*class="dn-math[^"]*"[^>]*>.*?</\1?svg>', re.S)
_ATTR = re.compile(r'\s([A-Za-z:-]+)="([^"]*)"')
_SVG_NS = "http://www.w3.org/2000/svg"


@lru_cache(maxsize=4096)
def tex_svg(tex: str, display: bool = False) -> str:
    """One formula as an inline ``<svg>`` sized in em (so it follows the font size) and
    aligned on the text's baseline.

    Raises
    ------
    ReportError
        ziamath cannot typeset ``tex`` (the message quotes it).
    """
    import ziafont
    import ziamath

    ziafont.config.svg2 = False
    try:
        with warnings.catch_warnings():  # ziamath's own use of a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            m = ziamath.Latex(tex.strip(), size=_SIZE, inline=not display)
            svg = m.svg()
            descent = m.getyofst()
    except Exception as e:  # ziamath raises many kinds; one clear line
        raise ReportError(f"formula cannot be typeset: ${tex.strip()}$ ({type(e).__name__}: {e})") from None
    match = _DIM.match(svg)
    if not match:
        raise ReportError(f"formula cannot be typeset: ${tex.strip()}$ (unexpected SVG header)")
    w, h = float(match.group(2)) / _SIZE, float(match.group(3)) / _SIZE
    cls = MATH_CLASS + (" dn-math-display" if display else "")
    style = "" if display else f' style="vertical-align:{descent / _SIZE:.3f}em"'
    label = _html.escape(tex.strip(), quote=True)
    head = (
        f'<svg {match.group(1)}class="{cls}" role="img" aria-label="{label}" width="{w:.3f}em" '
        f'height="{h:.3f}em"{style}'
    )
    return head + svg[match.end() :]


def print_formulas(html: str) -> str:
    """``html`` with every formula of :func:`tex_svg` replaced by the same formula as a PNG
    ``<img>`` (same class, size in em, vertical alignment; the TeX source as its ``alt``
    text): what the PDF lays out (module notes).

    Raises
    ------
    ReportError
        A formula's SVG cannot be rasterised (its TeX quoted).
    """
    return _FORMULA.sub(lambda m: _formula_img(m.group(0)), html)


@lru_cache(maxsize=4096)
def _formula_img(svg: str) -> str:
    import base64

    import vl_convert as vlc

    prefix = svg[1 : svg.index("svg ")]  # "" or e.g. "ns0:"
    if prefix:
        svg = svg.replace(f"<{prefix}", "<").replace(f"</{prefix}", "</")
    head = svg[: svg.index(">")]
    attrs = dict(_ATTR.findall(head))
    w, h = float(attrs["width"].removesuffix("em")), float(attrs["height"].removesuffix("em"))
    box = attrs.get("viewBox") or attrs.get("viewbox")
    sized = (
        f'<svg xmlns="{_SVG_NS}" width="{w * PRINT_PX_PER_EM:.1f}" height="{h * PRINT_PX_PER_EM:.1f}" '
        f'viewBox="{box}">' + svg[len(head) + 1 :]
    )
    try:
        png = vlc.svg_to_png(sized, scale=1.0)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ReportError(f"formula cannot be rasterised: ${attrs.get('aria-label', '')}$ ({first})") from None
    style = f"width:{w:.3f}em;height:{h:.3f}em;" + attrs.get("style", "")
    return (
        f'<img class="{attrs["class"]}" alt="{attrs.get("aria-label", "")}" style="{style}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
    )


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
