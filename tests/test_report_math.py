"""Formulas typeset once per batch and inlined as static SVG (report.mathsvg), and the
kept-open headless Chromium that prints a batch's PDFs (report.chromium.Browser)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from demonoise.core.errors import ReportError
from demonoise.report import chromium as chrome
from demonoise.report.mathsvg import MATHJAX_END, MATHJAX_START, MathCache, find_math, inline_math
from report_helpers import chromium, scan_html

PAGE = (
    '<!DOCTYPE html><html lang="en"><head>'
    + MATHJAX_START
    + "<script>window.MathJax = {};</script>"
    + MATHJAX_END
    + "</head><body>"
    "<p>Inline $a_x$ and display $$\\frac{1}{2}$$, a literal \\$5, \\(x\\) and \\[y\\].</p>"
    "<script>var s = '$not maths$';</script>"
    '<svg class="marks"><text>$not maths$</text></svg>'
    "<pre>$not maths$</pre><code>$no$</code>"
    "<p>$x &lt; y$ and ${a$b}$ and an unclosed $ sign</p>"
    "</body></html>"
)


def test_find_math_like_mathjax():
    found = [(m.tex, m.display) for m in find_math(PAGE)]
    assert found == [
        ("a_x", False),
        ("\\frac{1}{2}", True),
        ("x", False),
        ("y", True),
        ("x < y", False),  # entities decoded: MathJax reads the text, not the markup
        ("{a$b}", False),  # a dollar inside braces does not close
    ]
    spans = [PAGE[m.start : m.end] for m in find_math(PAGE)]
    assert spans[0] == "$a_x$" and spans[1] == "$$\\frac{1}{2}$$" and spans[4] == "$x &lt; y$"


def test_inline_math_replaces_formulas_and_drops_mathjax():
    svgs = {m.key: f'<mjx-container n="{i}"></mjx-container>' for i, m in enumerate(find_math(PAGE))}
    out = inline_math(PAGE, svgs, "mjx-container { color: red }")
    assert out.count("<mjx-container") == 6
    assert "window.MathJax" not in out and MATHJAX_START not in out
    assert '<html lang="en" data-dn-math="static">' in out
    assert 'id="MJX-SVG-styles"' in out and "mjx-container { color: red }" in out
    assert "a literal $5" in out  # \$ is a literal dollar, as with MathJax's processEscapes
    assert "var s = '$not maths$'" in out and "<pre>$not maths$</pre>" in out  # untouched
    assert "an unclosed $ sign" in out
    with pytest.raises(ReportError, match="not typeset"):
        inline_math(PAGE, {}, "")
    with pytest.raises(ReportError, match="markers"):
        inline_math("<html><p>$x$</p></html>", svgs, "")


@pytest.mark.slow
@chromium
def test_math_cache_typesets_once_and_pages_render_offline(tmp_path):
    cache = tmp_path / "math.json"
    p1, p2 = tmp_path / "a.html", tmp_path / "b.html"
    p1.write_text(PAGE, encoding="utf-8")
    p2.write_text(PAGE.replace("$a_x$", "$\\sqrt{V}$"), encoding="utf-8")
    c = MathCache(cache)
    assert c.apply(p1) == 6 and c.typeset_calls == 1
    assert c.apply(p1) == 0  # applying twice is harmless: the page is already static
    c2 = MathCache(cache)  # a new batch reads the cache: only the new formula is typeset
    assert c2.apply(p2) == 6 and c2.typeset_calls == 1
    assert len(json.loads(cache.read_text())["svgs"]) == 7
    c3 = MathCache(cache)
    p3 = tmp_path / "c.html"
    p3.write_text(PAGE, encoding="utf-8")
    assert c3.apply(p3) == 6 and c3.typeset_calls == 0
    html = p3.read_text(encoding="utf-8")
    assert html.count("<mjx-container") == 6 and "<svg" in html and "window.MathJax" not in html
    assert scan_html(html).violations == []
    net = tmp_path / "net.json"
    dom = chrome.dump_dom(p3, net_log=net)
    assert chrome.page_requests(net) == []
    assert 'data-dn-math="static"' in dom


@chromium
def test_kept_open_browser_prints_pages_and_cleans_up(tmp_path):
    late = tmp_path / "late.html"
    late.write_text(
        "<html><head><script>window.MathJax = {};"
        "setTimeout(function () { document.body.insertAdjacentHTML('beforeend', '<p>LATE-TEXT</p>');"
        "document.documentElement.setAttribute('data-dn-math', 'done'); }, 400);</script></head>"
        "<body><p>first page</p></body></html>",
        encoding="utf-8",
    )
    plain = tmp_path / "plain.html"
    plain.write_text("<html><body><p>PLAIN-TEXT</p></body></html>", encoding="utf-8")
    with chrome.Browser() as b:
        pid, profile = b.pid, b._profile
        b.print_pdf(late, tmp_path / "late.pdf")
        b.print_pdf(plain, tmp_path / "plain.pdf")
        b.print_pdf(late, tmp_path / "again.pdf")
    for name in ("late", "plain", "again"):
        assert (tmp_path / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert not os.path.exists(profile)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no process left behind
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(tmp_path / "late.pdf"), "-"], capture_output=True, text=True).stdout
        assert "LATE-TEXT" in text  # printed only once the page said it was ready
        assert (
            "PLAIN-TEXT"
            in subprocess.run(["pdftotext", str(tmp_path / "plain.pdf"), "-"], capture_output=True, text=True).stdout
        )
    missing = tmp_path / "missing.html"
    with chrome.Browser() as b, pytest.raises(ReportError):
        b.print_pdf(missing, tmp_path / "x.pdf")


def test_a_killed_browser_gives_a_report_error(tmp_path):
    """A kept-open chromium that dies mid-batch must fail with ReportError (which the
    batch catches to fall back to one-shot printing), not with BrokenPipeError."""
    import signal

    plain = tmp_path / "plain.html"
    plain.write_text("<html><body><p>PLAIN-TEXT</p></body></html>", encoding="utf-8")
    with chrome.Browser() as b:
        os.kill(b.pid, signal.SIGKILL)
        time.sleep(0.5)
        with pytest.raises(ReportError, match="DevTools pipe"):
            b.print_pdf(plain, tmp_path / "x.pdf")
    assert not (tmp_path / "x.pdf").exists()


def test_browser_without_chromium(tmp_path):
    with pytest.raises(chrome.ChromiumNotFoundError, match="chromium not found"):
        chrome.Browser(tmp_path / "no-chromium")
