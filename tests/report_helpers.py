"""Helpers shared by tests/test_report_*.py (not a test module)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from chromium_helpers import CHROMIUM

NOTEBOOKS = Path(__file__).parent / "notebooks"
GOOD = NOTEBOOKS / "report_good.ipynb"
BROKEN = NOTEBOOKS / "report_broken.ipynb"
COVER = NOTEBOOKS / "report_cover.ipynb"

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (Debian package chromium)"
)


def chromium(fn):
    """Mark a test as needing headless Chromium (``-m chromium``) and skip it without."""
    return pytest.mark.chromium(needs_chromium(fn))


_REMOTE = re.compile(r"^\s*(https?:|//)", re.I)
_CSS_URL = re.compile(r"url\(\s*['\"]?\s*(https?:|//)", re.I)
_CSS_IMPORT = re.compile(r"@import", re.I)
# Attributes through which a page *loads* something. <a href> is a hyperlink the reader
# may follow, not a load, and is allowed to point anywhere.
_LOADING_ATTRS = {"src", "srcset", "data", "poster", "background", "action", "formaction", "manifest"}


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.violations: list[str] = []
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (tag, href)
        self.scripts_with_src: list[str] = []
        self._in_style = False
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            value = value or ""
            if name == "id":
                self.ids.add(value)
            if name in _LOADING_ATTRS and _REMOTE.match(value):
                self.violations.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "xlink:href"):
                self.links.append((tag, value))
                if tag != "a" and _REMOTE.match(value):
                    self.violations.append(f"<{tag} {name}={value!r}>")
            if name == "style" and (_CSS_URL.search(value) or _CSS_IMPORT.search(value)):
                self.violations.append(f"<{tag} style={value[:80]!r}>")
            if tag == "script" and name == "src":
                self.scripts_with_src.append(value)
        if tag == "style":
            self._in_style = True

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            for m in _CSS_URL.finditer(data):
                self.violations.append(f"CSS url({data[m.start() : m.start() + 60]!r})")
            for m in _CSS_IMPORT.finditer(data):
                self.violations.append(f"CSS {data[m.start() : m.start() + 60]!r}")


def scan_html(text: str) -> _Collector:
    """Parse ``text``; ``.violations`` lists every external load (rule in render.py)."""
    c = _Collector()
    c.feed(text)
    c.close()
    return c


def no_tmp_files(directory: Path) -> list[Path]:
    """Temporary files of demonoise's atomic writes left in ``directory`` (should be none)."""
    return [p for p in Path(directory).rglob("*") if ".dn-tmp-" in p.name]


# ------------------------------------------------------------------ PDFs read back with pypdf
def pdf_text(path, page: int | None = None) -> str:
    """The text of a PDF (one page, or all of them joined by newlines)."""
    from pypdf import PdfReader

    pages = PdfReader(path).pages
    chosen = pages if page is None else [pages[page]]
    return "\n".join(p.extract_text() or "" for p in chosen)


def pdf_links(path) -> list[str]:
    """The URIs of the PDF's link annotations, in page order."""
    from pypdf import PdfReader

    out = []
    for page in PdfReader(path).pages:
        for a in page.get("/Annots") or []:
            action = a.get_object().get("/A") or {}
            if "/URI" in action:
                out.append(str(action["/URI"]))
    return out


def pdf_fonts(path) -> set[str]:
    """The embedded fonts of a PDF, without their subset prefix (``"DejaVuSans-Bold"``);
    fails if one is not embedded."""
    from pypdf import PdfReader

    names = set()
    for page in PdfReader(path).pages:
        for f in ((page.get("/Resources") or {}).get("/Font") or {}).values():
            f = f.get_object()
            desc = f.get("/FontDescriptor") or (f["/DescendantFonts"][0].get_object().get("/FontDescriptor"))
            desc = desc.get_object()
            assert any(k in desc for k in ("/FontFile", "/FontFile2", "/FontFile3")), f["/BaseFont"]
            names.add(str(f["/BaseFont"]).lstrip("/").split("+")[-1])
    return names


def count_formulas(markdown: str) -> int:
    """How many formulas nbconvert's Markdown parser finds in ``markdown`` (the test's own
    count: a renderer that only counts them)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    class Counter(IPythonRenderer):
        n = 0

        def block_math(self, body: str) -> str:
            self.n += 1
            return ""

        inline_math = block_math

        def latex_environment(self, name: str, body: str) -> str:
            return self.block_math(body)

    counter = Counter(escape=False)
    MarkdownWithMath(renderer=counter).render(markdown)
    return counter.n
