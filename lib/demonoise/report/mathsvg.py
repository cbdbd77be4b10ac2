"""Formulas typeset once per batch: MathJax in headless Chromium -> static SVG in every report.

A rendered report carries MathJax (2.2 MB, inlined by the template) and typesets its
formulas when it is opened -- and again when Chromium prints it: about 1.7 s of every
PDF (measured on 2 cores). The formulas are the same in every report of a batch (they
are the method notes of the notebooks), so a batch typesets each distinct formula once
and writes it into every report as static SVG, after which the page needs no script:

1. :func:`find_math` lists the formulas of a rendered HTML page the way MathJax finds
   them (``$$...$$`` and ``\\[...\\]`` display, ``$...$`` and ``\\(...\\)`` inline, ``\\$``
   a literal dollar; not inside ``script``, ``style``, ``svg``, ``pre``, ``code``,
   ``textarea``, nor inside formulas already typeset);
2. :class:`MathCache` typesets the formulas it does not know yet in one headless
   Chromium call, with the vendored MathJax and the template's TeX settings (SVG output,
   a local font cache so that each formula is a self-contained ``<svg>``), and keeps
   them in a JSON file keyed by the MathJax build;
3. :func:`inline_math` replaces each formula by its ``<mjx-container>``, puts MathJax's
   SVG stylesheet in the head, drops the MathJax scripts (between the template's
   ``dn-mathjax`` markers) and marks the page ``data-dn-math="static"``.

Anything that cannot be typeset (no Chromium, a MathJax error) leaves the page as it
was -- with MathJax inlined, so it still renders offline.
"""

from __future__ import annotations

import hashlib
import html as _html
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ReportError
from demonoise.report.templates import TEMPLATE_NAME, find_template_dir

__all__ = ["Math", "find_math", "inline_math", "MathCache", "MATHJAX_START", "MATHJAX_END"]

#: Markers around the MathJax scripts in the template (``index.html.j2``).
MATHJAX_START = "<!--dn-mathjax-start-->"
MATHJAX_END = "<!--dn-mathjax-end-->"

_SKIP = re.compile(
    r"<(script|style|svg|pre|code|textarea|mjx-container|math)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.S | re.I
)
_OPEN = re.compile(r"\\\$|\$\$|\$|\\\[|\\\(")
_CLOSE = {"$$": "$$", "$": "$", "\\[": "\\]", "\\(": "\\)"}


@dataclass(frozen=True)
class Math:
    """One formula of a page: its span in the HTML (delimiters included), the TeX
    (HTML entities decoded) and whether it is display maths."""

    start: int
    end: int
    tex: str
    display: bool

    @property
    def key(self) -> str:
        return ("D:" if self.display else "I:") + self.tex


def _end_of(text: str, i: int, close: str) -> int:
    """Index of the closing delimiter of a formula whose TeX starts at ``i`` (braces
    balanced, backslash escapes skipped, as MathJax's FindTeX), or -1."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if depth == 0 and text.startswith(close, i):
                return i
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(close, i):
            return i
        i += 1
    return -1


def _text_segments(page: str):
    """``(offset, text)`` for every run of text outside tags and skipped elements."""
    pos = 0
    for m in _SKIP.finditer(page):
        if m.start() > pos:
            yield pos, page[pos : m.start()]
        pos = m.end()
    if pos < len(page):
        yield pos, page[pos:]


def find_math(page: str) -> list[Math]:
    """The formulas of an HTML page, in order (see the module docstring)."""
    out: list[Math] = []
    for off, text in _text_segments(page):
        if "$" not in text and "\\" not in text:
            continue
        i = 0
        while True:
            m = _OPEN.search(text, i)
            if not m:
                break
            tok = m.group(0)
            if tok == "\\$":  # a literal dollar
                i = m.end()
                continue
            close = _CLOSE[tok]
            j = _end_of(text, m.end(), close)
            if j < 0 or (tok == "$" and j == m.end()):  # unclosed, or "$$" handled above
                i = m.end()
                continue
            tex = _html.unescape(text[m.end() : j]).strip()
            if tex:
                out.append(Math(off + m.start(), off + j + len(close), tex, tok in ("$$", "\\[")))
            i = j + len(close)
    return out


def inline_math(page: str, svgs: dict[str, str], css: str) -> str:
    """``page`` with every formula replaced by its typeset ``<mjx-container>`` (from
    ``svgs``, keyed by :attr:`Math.key`), MathJax's stylesheet added, the MathJax
    scripts removed and ``data-dn-math="static"`` set.

    Raises
    ------
    ReportError
        A formula of the page is missing from ``svgs``, or the page has no MathJax
        markers (not rendered with the demonoise template).
    """
    if MATHJAX_START not in page or MATHJAX_END not in page:
        raise ReportError("page has no dn-mathjax markers: not rendered with the demonoise template")
    items = find_math(page)
    missing = [m.tex for m in items if m.key not in svgs]
    if missing:
        raise ReportError(f"{len(missing)} formula(s) not typeset, e.g. {missing[0]!r}")
    parts = []
    pos = 0
    for m in items:
        parts.append(page[pos : m.start])
        parts.append(svgs[m.key])
        pos = m.end
    parts.append(page[pos:])
    out = "".join(parts)
    # literal dollars written "\$" (MathJax's processEscapes) become "$"
    out = _unescape_dollars(out)
    a, b = out.index(MATHJAX_START), out.index(MATHJAX_END) + len(MATHJAX_END)
    style = f'<style type="text/css" id="MJX-SVG-styles">\n{css}\n</style>'
    out = out[:a] + style + out[b:]
    return re.sub(r"<html\b([^>]*)>", lambda m_: f'<html{m_.group(1)} data-dn-math="static">', out, count=1)


def _unescape_dollars(page: str) -> str:
    if "\\$" not in page:
        return page
    parts = []
    pos = 0
    for off, text in _text_segments(page):
        parts.append(page[pos:off])
        parts.append(text.replace("\\$", "$"))
        pos = off + len(text)
    parts.append(page[pos:])
    return "".join(parts)


# ====================================================================== typesetting
_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<script>
window.MathJax = {{
  tex: {{ inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']],
          processEscapes: true, processEnvironments: true, tags: 'ams' }},
  svg: {{ fontCache: 'local' }},
  options: {{ enableMenu: false }},
  startup: {{ pageReady: function () {{
    return MathJax.startup.defaultPageReady().then(function () {{
      document.documentElement.setAttribute('data-dn-math', 'done'); }}); }} }}
}};
</script>
<script>{js}</script>
</head><body>
{items}
</body></html>
"""
_ITEM_RE = re.compile(r'<div id="dn-f(\d+)">\s*(<mjx-container\b.*?</mjx-container>)\s*</div>', re.S)
_CSS_RE = re.compile(r'<style[^>]*id="MJX-SVG-styles"[^>]*>(.*?)</style>', re.S)


class MathCache:
    """Typeset formulas, kept in a JSON file and shared by the reports of a batch.

    Parameters
    ----------
    path : path-like
        The cache file (e.g. ``output/build/math-svg.json``); written atomically.
    template_dir : path-like, optional
        Where the template (and its vendored MathJax) is found.
    chromium : path-like, optional
        Chromium executable.

    The cache is keyed by a hash of the MathJax script and the settings: a new
    MathJax build starts a new cache. Thread-safe.
    """

    VERSION = 1

    def __init__(self, path, *, template_dir=None, chromium=None):
        self.path = Path(path)
        self.chromium = chromium
        base = find_template_dir(template_dir) / TEMPLATE_NAME
        self._js_path = base / "static" / "mathjax" / "tex-svg-full.js"
        self._lock = threading.Lock()
        self._js = None
        js_hash = hashlib.sha256(self._js_path.read_bytes()).hexdigest()[:16]
        self.build = f"{self.VERSION}-{js_hash}"
        self.css = ""
        self.svgs: dict[str, str] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("build") == self.build:
                self.css = data.get("css", "")
                self.svgs = dict(data.get("svgs", {}))
        except (OSError, ValueError):
            pass
        self.typeset_calls = 0

    def _typeset(self, items: list[Math]) -> None:
        from demonoise.report.chromium import dump_dom

        js = self._js_path.read_text(encoding="utf-8")
        body = []
        for k, m in enumerate(items):
            tex = _html.escape(m.tex, quote=False)
            body.append(f'<div id="dn-f{k}">' + (f"$${tex}$$" if m.display else f"${tex}$") + "</div>")
        page = _PAGE.format(js=js.replace("</script", "<\\/script"), items="\n".join(body))
        import tempfile

        with tempfile.TemporaryDirectory(prefix="dn-math-") as d:
            src = Path(d) / "math.html"
            src.write_text(page, encoding="utf-8")
            dom = dump_dom(src, chromium=self.chromium, budget_ms=60_000)
        if 'data-dn-math="done"' not in dom:
            raise ReportError("MathJax did not finish typesetting the formulas")
        got = {int(i): c for i, c in _ITEM_RE.findall(dom)}
        css = _CSS_RE.search(dom)
        if css is None or len(got) != len(items):
            raise ReportError(f"MathJax typeset {len(got)} of {len(items)} formulas")
        bad = [items[k].tex for k, c in got.items() if "<mjx-merror" in c or "data-mjx-error" in c]
        if bad:
            raise ReportError(f"MathJax could not typeset {bad[0]!r}")
        for k, c in got.items():
            self.svgs[items[k].key] = c
        self.css = css.group(1).strip()
        self.typeset_calls += 1
        atomic_write_text(self.path, json.dumps({"build": self.build, "css": self.css, "svgs": self.svgs}))

    def apply(self, html_path: str | os.PathLike) -> int:
        """Typeset (if needed) and inline the formulas of a rendered report in place.

        Returns the number of formulas inlined.

        Raises
        ------
        ReportError, ChromiumNotFoundError
            Typesetting failed; the page is left unchanged.
        """
        html_path = Path(html_path)
        page = html_path.read_text(encoding="utf-8")
        if MATHJAX_START not in page and re.search(r'<html\b[^>]*data-dn-math="static"', page):
            return 0  # already done
        items = find_math(page)
        with self._lock:
            todo = {m.key: m for m in items if m.key not in self.svgs}
            if todo:
                self._typeset(list(todo.values()))
            svgs, css = dict(self.svgs), self.css
        atomic_write_text(html_path, inline_math(page, svgs, css))
        return len(items)
