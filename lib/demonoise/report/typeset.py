"""Formulas typeset in Python: TeX -> MathML (latex2mathml, through ziamath) -> SVG (ziamath).

The formulas of a notebook are found by nbconvert's own Markdown parser (mistune with its
math plugin, :class:`nbconvert.filters.markdown_mistune.MarkdownWithMath`): the renderer
below overrides only how block and inline maths are written -- as an inline ``<svg>``
element instead of ``$...$`` for MathJax. No browser, no JavaScript: the same SVG is in the
HTML and, through WeasyPrint, in the PDF.

Why ziamath: pure Python, its own STIX Two Math font drawn as paths (the SVG needs no font
on the reader's machine), all formulas of the notebooks typeset (see
``tests/test_report_documents.py``). ``ziafont.config.svg2 = False`` writes each glyph as
a ``<path>`` (no ``<symbol>``/``<use>`` ids that would collide between formulas of one page).
"""

from __future__ import annotations

import html as _html
import re
import warnings
from functools import lru_cache

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from demonoise.core.errors import ReportError

__all__ = ["MATH_CLASS", "tex_svg", "MathRenderer", "markdown_to_html", "count_formulas"]

#: Class of every typeset formula (``<svg class="dn-math">``; display maths also ``dn-math-display``).
MATH_CLASS = "dn-math"
#: ziamath's drawing size (px); the SVG is scaled to the text with em units.
_SIZE = 24.0
_DIM = re.compile(r'^<svg ([^>]*?)width="([\d.]+)" height="([\d.]+)"')


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
