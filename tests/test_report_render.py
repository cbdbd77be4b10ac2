"""Rendering: assembly (chapters, settings as subsections), the nbconvert exporters (HTML,
and the same HTML paged by WeasyPrint), formulas typeset as SVG by nbconvert's own Markdown
parser, numbered figures and tables with their CSV, offline HTML (static check and headless
Chromium with the network off), and HTML only with a one-line reason where Pango is missing."""

from __future__ import annotations

import html as _html
import re
import shutil
import subprocess
import sys

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.exporter import DocumentHTMLExporter, html_to_pdf, pdf_engine_problem
from demonoise.report.notebook import METRICS_MIME
from demonoise.report.render import Chapter, Section, assemble, render_document, render_report
from demonoise.report.run import Job, run_jobs
from demonoise.report.templates import ENV_VAR, find_template_dir
from demonoise.report.typeset import count_formulas, markdown_to_html, print_formulas, tex_svg
from report_helpers import COVER, GOOD, chromium, no_tmp_files, scan_html

TITLE = "Fixture quality report"
needs_pango = pytest.mark.skipif(pdf_engine_problem() is not None, reason=str(pdf_engine_problem()))


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("executed")
    jobs = [
        Job(COVER, d / "cover.ipynb", {"title": TITLE, "country": "BE"}),
        Job(GOOD, d / "be10.ipynb", {"region": "BE10", "V": 1.0}),
        Job(GOOD, d / "be34.ipynb", {"region": "BE34", "V": 5.0}),
    ]
    batch = run_jobs(jobs, workers=1, progress=False)
    assert batch.status == "ok", [str(r.error) for r in batch]
    return {"dir": d, "cover": d / "cover.ipynb", "sections": [d / "be10.ipynb", d / "be34.ipynb"]}


@pytest.fixture(scope="module")
def report(executed, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    chapter = Chapter(
        "By setting",
        "by-setting",
        (("V = 1", "#e6851e", executed["sections"][0]), ("V = 5", "#b2182b", executed["sections"][1])),
    )
    return render_report(
        [executed["sections"][0], Section(executed["sections"][1], title="Second region", anchor="be34"), chapter],
        out / "report.html",
        out / "report.pdf",
        title=TITLE,
        cover=executed["cover"],
        source="Eurostat (demo_r_d2jan)",
    )


def _maths(html: str) -> int:
    return len(re.findall(r'<svg [^>]*class="dn-math', html))


# ------------------------------------------------------------------ assembly
def test_assembly_structure(executed):
    nb = assemble(executed["sections"], title=TITLE, cover=executed["cover"])
    secs = nb.metadata["demonoise"]["sections"]
    # the notebook's leading "# Fixture indicator" became the chapter title ...
    assert [s["title"] for s in secs] == ["Fixture indicator", "Fixture indicator"]
    assert [s["anchor"] for s in secs] == ["sec-1-fixture-indicator", "sec-2-fixture-indicator"]
    text = "\n".join(c.source for c in nb.cells)
    assert "# Fixture indicator" not in text  # ... and left the body
    ids = [c["id"] for c in nb.cells]
    assert len(ids) == len(set(ids))
    for cell in nb.cells:  # no code cell without output, no metrics, no cell tagged remove
        if cell.cell_type == "code":
            assert cell.outputs
            assert all(METRICS_MIME not in o.get("data", {}) for o in cell.outputs)
            assert not {"remove", "metrics"} & set(cell.metadata.get("tags", []))
    assert "REMOVE-ME-MARKER" not in str(nb)
    with pytest.raises(ParameterError, match="duplicate anchor"):
        assemble(
            [Section(executed["sections"][0], anchor="a"), Section(executed["sections"][1], anchor="a")], title="t"
        )
    with pytest.raises(ParameterError, match="invalid anchor"):
        assemble([Section(executed["sections"][0], anchor="1 bad")], title="t")
    with pytest.raises(ParameterError, match="at least one chapter"):
        assemble([], title="t")


def test_a_chapter_holds_one_subsection_per_setting(executed):
    ch = Chapter(
        "Fixture", "fx", (("V = 1", "#e6851e", executed["sections"][0]), ("V = 5", "#b2182b", executed["sections"][1]))
    )
    nb = assemble([ch], title="t")
    (entry,) = nb.metadata["demonoise"]["sections"]
    assert [(c["number"], c["title"]) for c in entry["children"]] == [("1.1", "V = 1"), ("1.2", "V = 5")]
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert any(s.startswith("### Charts") for s in md)  # headings one level down, under the setting


def test_a_failed_notebook_is_refused():
    nb = new_notebook(cells=[new_markdown_cell("# x"), new_code_cell("1/0")])
    nb.cells[1].outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
    nb.metadata["papermill"] = {"exception": True}
    with pytest.raises(ReportError, match=r"failed during execution \(ZeroDivisionError: division by zero"):
        assemble([nb], title="t")


def test_untagged_metrics_never_render(tmp_path):
    cell = new_code_cell("dr.display_metrics(...)")
    cell.outputs = [new_output("display_data", data={METRICS_MIME: {"secret_metric": 1}})]
    res = render_document(
        assemble([new_notebook(cells=[new_markdown_cell("# s"), cell])], title="t"), tmp_path / "m.html"
    )
    assert "secret_metric" not in res.html.read_text()


# ------------------------------------------------------------------ formulas
def test_formulas_are_found_by_nbconvert_markdown_and_typeset_as_svg():
    md = r"Inline $\sqrt{V}$, escaped \$5, in code `$x$`, and $$\frac{a}{b}$$ then $e_x$."
    assert count_formulas(md) == 3
    html = markdown_to_html(md)
    assert _maths(html) == 3 and html.count("dn-math-display") == 1
    assert "<code>$x$</code>" in html and "$5" in html  # not maths: left alone
    assert "\\sqrt" not in re.sub(r'aria-label="[^"]*"', "", html)
    svg = tex_svg(r"\frac{\partial e_k}{\partial m_x}", True)
    assert svg.startswith("<svg ") and "<path" in svg and "<use" not in svg and " id=" not in svg
    with pytest.raises(ReportError, match=r"formula cannot be typeset: \$\\notacommand"):
        tex_svg(r"\notacommand{", False)


def _ink(pdf: bytes, where, name: str):
    """The page of ``pdf`` at 600 dpi as a boolean array of dark pixels (pdftoppm)."""
    import numpy as np
    from PIL import Image

    (where / f"{name}.pdf").write_bytes(pdf)
    cmd = ["pdftoppm", "-r", "600", "-gray", "-png", "-singlefile", str(where / f"{name}.pdf"), str(where / name)]
    subprocess.run(cmd, check=True)
    return np.asarray(Image.open(where / f"{name}.png").convert("L")) < 128


def _near(x, y) -> float:
    """Share of the dark pixels of ``x`` within one pixel of a dark pixel of ``y``."""
    import numpy as np
    from scipy.ndimage import binary_dilation

    return float((x & binary_dilation(y, np.ones((3, 3), bool))).sum() / x.sum())


@needs_pango
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
def test_formulas_in_the_pdf_are_images_of_the_typeset_svg(tmp_path):
    """In the PDF a formula is a PNG rasterised from its SVG at 100 px per em (758 ppi at
    the print stylesheet's 9.5 pt), its TeX the alt text, a formula used twice embedded
    once; the page at 600 dpi is the page drawn with the vector formulas to a pixel (and
    a page with one formula changed is not)."""
    import weasyprint

    tex = [
        r"f_x = \frac{b_x}{W_x}",
        r"\mathrm{Var}(e_k) = \sum_x \left(\frac{\partial e_k}{\partial m_x}\right)^2 V",
        "e_x",
    ]
    body = "".join(f"<p>Text {tex_svg(t, i == 1)} more.</p>" for i, t in enumerate(tex)) * 2
    html = f"<html><head><style>html {{ font-size: 9.5pt }}</style></head><body>{body}</body></html>"
    printed = print_formulas(html)
    assert _maths(printed) == 0 and printed.count('<img class="dn-math') == 6
    assert all(f'alt="{_html.escape(t, quote=True)}"' in printed for t in tex)
    # as an HTML serialiser may leave a formula (nbconvert's heading anchors do): attributes
    # in lower case, the SVG namespace on an ancestor or as a prefix -- the same image
    svg = tex_svg(tex[0])
    lower = svg.replace("viewBox", "viewbox")
    moved = lower.replace(' xmlns="http://www.w3.org/2000/svg"', "")
    prefixed = moved.replace("<svg ", "<ns0:svg ").replace("</svg>", "</ns0:svg>").replace("<path", "<ns0:path")
    prefixed = prefixed.replace("</path>", "</ns0:path>")
    same = {print_formulas(f"<p>{v}</p>") for v in (svg, lower, moved, prefixed)}
    assert len(same) == 1 and "<img " in same.pop()
    raster, pages = html_to_pdf(html)
    assert pages == 1
    listing = subprocess.run(["pdfimages", "-list", "-"], input=raster, capture_output=True, check=True).stdout
    rows = [r.split() for r in listing.decode().splitlines()[2:] if r.split()[2] == "image"]
    assert len(rows) == 6 and len({r[10] for r in rows}) == 3  # three distinct images, each drawn twice
    assert min(int(r[12]) for r in rows) >= 740 and min(int(r[13]) for r in rows) >= 740  # x-ppi, y-ppi
    a = _ink(raster, tmp_path, "raster")
    b = _ink(weasyprint.HTML(string=html).write_pdf(), tmp_path, "vector")
    assert _near(a, b) > 0.98 and _near(b, a) > 0.98
    other = _ink(weasyprint.HTML(string=html.replace(tex_svg("e_x"), tex_svg("e_y"))).write_pdf(), tmp_path, "other")
    assert _near(a, other) < 0.9


_PAGE = """<html><body class="dn-body"><main class="dn-report"><h1>Title</h1>
<p>Plain, <b>bold</b>, <i>italic</i> and <b><i>both</i></b>: 1 234 567 people; <code>demonoise report</code>.</p>
</main></body></html>"""
_RENDER = """
import sys
from demonoise.report.exporter import html_to_pdf
pdf, _ = html_to_pdf(open(sys.argv[1]).read())
open(sys.argv[2], "wb").write(pdf)
"""


@needs_pango
@pytest.mark.skipif(shutil.which("pdffonts") is None, reason="poppler-utils not installed")
def test_the_pdf_is_set_in_the_templates_own_typeface_on_any_machine(tmp_path):
    """The PDF's text is DejaVu Sans from the template's fonts/ (its four faces), also where
    the machine has no font at all (fontconfig with no font directory) and where it has a
    font that the stylesheet's stack names first (Liberation Sans answers for "Arial" where
    fonts-liberation is installed, as chromium's Debian package does): the same text in the
    same places as with the machine's fonts."""
    import os

    from demonoise.report.templates import FONT_FACES, fonts_dir

    assert fonts_dir() is not None and len(FONT_FACES) == 6
    css = (find_template_dir() / "demonoise" / "static" / "demonoise.css").read_text(encoding="utf-8")
    (tmp_path / "page.html").write_text(_PAGE.replace("<body", f"<head><style>{css}</style></head><body"), "utf-8")
    (tmp_path / "render.py").write_text(_RENDER, encoding="utf-8")
    bare = tmp_path / "fonts.conf"
    bare.write_text(f"<?xml version='1.0'?><fontconfig><cachedir>{tmp_path / 'cache'}</cachedir></fontconfig>")
    pdfs = {}
    for name, env in (("here", {}), ("bare", {"FONTCONFIG_FILE": str(bare)})):
        out = tmp_path / f"{name}.pdf"
        cmd = [sys.executable, str(tmp_path / "render.py"), str(tmp_path / "page.html"), str(out)]
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **env})
        pdfs[name] = out
    for out in pdfs.values():
        fonts = subprocess.run(["pdffonts", str(out)], capture_output=True, text=True, check=True).stdout
        names = {line.split()[0].split("+")[-1] for line in fonts.splitlines()[2:]}
        assert names == {
            "DejaVu-Sans",
            "DejaVu-Sans-Bold",
            "DejaVu-Sans-Italic",
            "DejaVu-Sans-Bold-Italic",
            "DejaVu-Sans-Mono",
        }, names
    text = {n: subprocess.run(["pdftotext", "-layout", str(p), "-"], capture_output=True, text=True).stdout
            for n, p in pdfs.items()}  # fmt: skip
    assert "1 234 567 people" in text["here"] and text["here"] == text["bare"]


# ------------------------------------------------------------------ HTML
def test_html_is_self_contained(report):
    text = report.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == [] and scan.scripts_with_src == []
    assert "<script" not in text and "MathJax" not in text and "require.min.js" not in text


def test_the_offline_checker_catches_external_loads():
    bad = (
        '<html><head><link rel="stylesheet" href="https://cdn.example.org/x.css">'
        '<style>@import "x.css"; body{background:url(//example.org/a.png)}</style>'
        '<script src="http://example.org/a.js"></script></head>'
        '<body><img src="https://example.org/i.png"><a href="https://ec.europa.eu">ok</a></body></html>'
    )
    v = scan_html(bad).violations
    assert len(v) == 5, v  # link href, @import, url(//...), script src, img src; not <a href>


def test_html_content(report):
    text = report.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    # 4 notebooks x 2 charts, numbered per chapter, each with its Source line and CSV
    figs = re.findall(r'<span class="dn-number">Figure (\d+\.\d+)\.</span>', text)
    assert figs == ["1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "3.3", "3.4"]
    assert text.count("Source: Eurostat (demo_r_d2jan); computed with demonoise") == len(figs) + 4  # + 4 tables
    assert re.findall(r'<span class="dn-number">Table (\d+\.\d+)\.</span>', text) == ["1.1", "2.1", "3.1", "3.2"]
    for href in re.findall(r'<a class="dn-csv" href="([^"]+)"', text):
        assert (report.html.parent / href).is_file()
    assert len(report.files) == 12
    assert "Fixture rate, BE10, V = 1" in text and "Fixture rate, BE34, V = 5" in text
    # formulas: 3 in the markdown + 1 LaTeX output per notebook, + V in the cover
    assert _maths(text) == 4 * 4 + 1
    # no code, no prompts, nothing removed by tag, no metrics
    assert "dr.setup_notebook" not in text and "import altair" not in text
    assert "In&nbsp;[" not in text and "Out[" not in text
    assert "REMOVE-ME-MARKER" not in text and "probe_was_defined" not in text and METRICS_MIME not in text
    # cover, contents, chapters; every contents link resolves
    toc = re.search(r'<nav class="dn-toc".*?</nav>', text, re.S).group(0)
    targets = re.findall(r'href="#([^"]+)"', toc)
    assert targets == ["sec-1-fixture-indicator", "be34", "by-setting", "by-setting-1", "by-setting-2"]
    assert set(targets) <= scan.ids
    # print stylesheet: A4, chapters on a new page, contents with page numbers, running header and footer
    for rule in (
        "size: A4",
        "break-before: page",
        "target-counter(attr(href url), page)",
        "counter(pages)",
        "string(datastatus)",
    ):
        assert rule in text, rule
    assert no_tmp_files(report.html.parent) == []


def test_template_lookup_errors_are_specific(tmp_path, monkeypatch):
    with pytest.raises(ReportError, match=r"given directory .*missing demonoise/conf.json"):
        find_template_dir(tmp_path)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    base = find_template_dir()  # env var incomplete -> falls through to the repository copy
    assert (base / "demonoise" / "conf.json").is_file()


# ------------------------------------------------------------------ PDF
@needs_pango
def test_pdf(report):
    from pypdf import PdfReader

    assert report.pdf_error is None and report.pdf.read_bytes()[:5] == b"%PDF-"
    info = subprocess.run(["pdfinfo", str(report.pdf)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Page size:\s+595\.\d+ x 841\.\d+ pts \(A4\)", info) and "WeasyPrint" in info
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert pages == report.pages >= 4
    text = subprocess.run(["pdftotext", str(report.pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "\\sqrt" not in text and "\\frac" not in text and "$$" not in text  # maths typeset
    assert "Figure 1.1." in text and "Contents" in text and re.search(rf"\b2\s*/\s*{pages}\b", text)
    outline = PdfReader(report.pdf).outline
    assert any(not isinstance(b, list) and "By setting" in b.title for b in outline)


@needs_pango
def test_nbconvert_exporter_entry_point_gives_the_pdf(executed, tmp_path):
    nb = assemble(executed["sections"][:1], title=TITLE)
    import nbformat

    src = tmp_path / "doc.ipynb"
    nbformat.write(nb, src)
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "demonoise_pdf", str(src), "--output-dir", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "doc.pdf").read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in (tmp_path / "doc-data").iterdir()) == [
        "figure-1-1.csv",
        "figure-1-2.csv",
        "table-1-1.csv",
    ]
    html, _ = DocumentHTMLExporter().from_notebook_node(nb)
    assert _maths(html) == 4


def test_without_pango_html_only_and_one_line_reason(executed, tmp_path, monkeypatch):
    """The system library missing: cffi raises OSError when WeasyPrint is imported."""

    class NoPango:
        def find_spec(self, name, path=None, target=None):
            if name == "weasyprint":
                raise OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file")

    monkeypatch.delitem(sys.modules, "weasyprint", raising=False)
    monkeypatch.setattr(sys, "meta_path", [NoPango(), *sys.meta_path])
    (tmp_path / "r.pdf").write_bytes(b"%PDF- stale")
    res = render_report(executed["sections"][:1], tmp_path / "r.html", tmp_path / "r.pdf", title="t")
    assert res.html.is_file() and res.pdf is None and not (tmp_path / "r.pdf").exists()
    assert res.pdf_error.startswith("no PDF: WeasyPrint cannot load the system library Pango")
    assert "libpango-1.0-0 libpangoft2-1.0-0" in res.pdf_error and "\n" not in res.pdf_error
    assert no_tmp_files(tmp_path) == []


# ------------------------------------------------------------------ headless Chromium
@chromium
def test_chromium_shows_formulas_and_charts_with_no_network_request(report, tmp_path):
    from chromium_helpers import dump_dom, page_requests

    net = tmp_path / "net.json"
    dom = dump_dom(report.html, net_log=net)
    assert page_requests(net) == []
    assert _maths(dom) == 4 * 4 + 1 and len(re.findall(r"<img [^>]*class=\"dn-chart\"", dom)) == 8


@chromium
def test_the_network_probe_sees_a_page_request(tmp_path):
    """Control: the net-log check does detect what a page tries to load."""
    from chromium_helpers import dump_dom, page_requests

    page = tmp_path / "bad.html"
    page.write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.example.org/x.css"></head>'
        '<body><img src="http://example.org/i.png"></body></html>'
    )
    net = tmp_path / "net.json"
    dump_dom(page, net_log=net)
    urls = sorted(r["url"] for r in page_requests(net))
    assert urls == ["http://example.org/i.png", "https://cdn.example.org/x.css"]
    assert all(r["net_error"] is not None and r["net_error"] < 0 for r in page_requests(net))


@chromium
def test_screenshot(report, tmp_path):
    from chromium_helpers import screenshot

    png = screenshot(report.html, tmp_path / "shot.png", width=1000, height=1400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_captions_set_subscripted_symbols_as_the_text_does():
    """Figure and table captions are plain text in the notebooks ("Relative uncertainty of
    e_x"); the HTML sets the symbol as the formulas do, and leaves dataset codes alone."""
    from demonoise.report.exporter import caption_html

    assert caption_html("Relative uncertainty of e_x, both sexes") == (
        "Relative uncertainty of <i>e</i><sub>x</sub>, both sexes"
    )
    assert caption_html("e_0 and e_{65}.") == "<i>e</i><sub>0</sub> and <i>e</i><sub>65</sub>."
    assert caption_html("m_{85+} & A < 10 %") == "<i>m</i><sub>85+</sub> &amp; A &lt; 10 %"
    for plain in ("Eurostat demo_r_find3, demo_r_pjangroup", "file x_y.csv", "snake_case"):
        assert caption_html(plain) == plain


def test_the_html_is_nbconverts_without_its_second_parse(executed):
    """The exporter leaves out nbconvert's closing BeautifulSoup pass (more than half of the
    HTML's time): the page is the one nbconvert's own HTMLExporter writes, once that pass's
    serialisation is applied to ours, and an image without ``alt`` gets nbconvert's text."""
    import nbformat
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from demonoise.report.exporter import DocumentHTMLExporter, _alt_text

    class Nbconverts(DocumentHTMLExporter):
        def _template_html(self, nb, resources, **kw):
            return HTMLExporter.from_notebook_node(self, nb, resources, **kw)

    nb = nbformat.read(executed["sections"][0], as_version=4)
    ours, _ = DocumentHTMLExporter().from_notebook_node(nb)
    theirs, _ = Nbconverts().from_notebook_node(nb)
    assert "<img" in ours and ours != theirs
    assert str(BeautifulSoup(ours, features="html.parser")) == theirs
    assert _alt_text('<p><img src="a.png"><IMG alt="x" src="b.png"><img\nsrc="c.png"></p>') == (
        '<p><img alt="No description has been provided for this image" src="a.png"><IMG alt="x" src="b.png">'
        '<img alt="No description has been provided for this image"\nsrc="c.png"></p>'
    )
