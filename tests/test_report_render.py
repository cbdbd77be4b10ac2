"""Rendering: assembly (chapters, settings as subsections), the nbconvert exporters (HTML;
Typst source; the PDF compiled from it in-process), formulas typeset as SVG by nbconvert's
own Markdown parser (in the HTML and in the PDF), numbered figures and tables with their
CSV, offline HTML (static check and headless Chromium with the network off), HTML only with
a one-line reason where the typst wheel is missing, user text escaped for Typst, long
tables across pages with their header repeated. PDFs are read back with pypdf."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.batch.execute import Job, run_jobs
from demonoise.report.content.notebook import METRICS_MIME, TABLE_MIME, TYPST_MIME
from demonoise.report.content.typeset import html_to_typst, markdown_to_html, markdown_to_typst, tex_svg
from demonoise.report.document.assemble import Chapter, Section, assemble, render_document
from demonoise.report.document.exporters import DocumentHTMLExporter, DocumentTypstExporter, typst_to_pdf
from demonoise.report.document.templates import find_template_dir
from demonoise.runtime.locate import ENV_VARS
from report_helpers import (
    COVER,
    GOOD,
    chromium,
    count_formulas,
    no_tmp_files,
    pdf_fonts,
    pdf_links,
    pdf_text,
    scan_html,
)

TITLE = "Fixture quality report"


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("executed")
    jobs = [
        Job(COVER, d / "cover.ipynb", {"title": TITLE, "country": "BE"}),
        Job(GOOD, d / "be10.ipynb", {"region": "BE10", "V": 1.0}),
        Job(GOOD, d / "be34.ipynb", {"region": "BE34", "V": 5.0}),
    ]
    batch = run_jobs(jobs, workers=1, progress=False)
    assert all(r.status == "ok" for r in batch.values()), [str(r.error) for r in batch.values()]
    return {"dir": d, "cover": d / "cover.ipynb", "sections": [d / "be10.ipynb", d / "be34.ipynb"]}


@pytest.fixture(scope="module")
def report(executed, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    chapter = Chapter(
        "By setting",
        "by-setting",
        (("V = 1", "#e6851e", executed["sections"][0]), ("V = 5", "#b2182b", executed["sections"][1])),
    )
    parts = [executed["sections"][0], Section(executed["sections"][1], title="Second region", anchor="be34"), chapter]
    doc = assemble(parts, title=TITLE, cover=executed["cover"], source="Eurostat (demo_r_d2jan)")
    return render_document(doc, out / "report.html", out / "report.pdf")


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


def test_cells_tagged_remove_or_metrics_reach_neither_the_html_nor_the_typst():
    tagged = [new_markdown_cell(f"zqx {t} words", metadata={"tags": [t]}) for t in ("remove", "metrics")]
    nb = new_notebook(cells=[new_markdown_cell("kept words"), *tagged])
    for exporter in (DocumentHTMLExporter, DocumentTypstExporter):
        body, _ = exporter().from_notebook_node(nb)
        assert "kept words" in body and "zqx" not in body


def test_an_empty_table_shows_its_words_unnumbered_and_the_next_table_is_table_1():
    def table(html: str, empty: bool):
        meta = {"caption": "zqx caption", "csv": "a\n1\n", "empty": empty}
        return new_output("display_data", data={TABLE_MIME: meta, "text/html": html, TYPST_MIME: f"[{html}]"})

    cell = new_code_cell("tables")
    cell.outputs = [table("<p>Nothing to flag.</p>", True), table("<table><tr><td>7</td></tr></table>", False)]
    for exporter in (DocumentHTMLExporter, DocumentTypstExporter):
        body, resources = exporter().from_notebook_node(new_notebook(cells=[cell]))
        assert "Nothing to flag." in body and body.count("zqx caption") == 1
        assert "Table 2" not in body and re.search(r"Table 1\.|number: \"1\"", body)
        assert [p.rsplit("/", 1)[1] for p in resources["outputs"]] == ["table-1.csv"]  # only the numbered one


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


def test_markdown_reaches_typst_through_its_html():
    """A markdown cell's Typst is its HTML converted: an inline HTML pair holds (bold), an
    ordered list keeps its start, a table cell its alignment, an image its alternative text;
    headings stay out of the contents and are bookmarked down to level 3."""
    md = "Some <b>bold</b> text ![a *chart*](attachment:x.png).\n\n3. c\n4. d\n\n| a | b |\n|--:|---|\n| 1 | 2 |\n\n"
    typst = markdown_to_typst(md + "## Two\n\n#### Four")
    assert "Some #strong[bold] text a chart\\." in typst  # the full stop escaped
    assert "#enum(start: 3, [c], [d], )" in typst
    assert "heads: ((table.cell(align: right)[a], [b],),)" in typst
    assert "#heading(level: 2, outlined: false, bookmarked: true)[Two]" in typst
    assert "#heading(level: 4, outlined: false, bookmarked: false)[Four]" in typst


def test_html_with_odd_list_and_span_numbers_still_reaches_typst():
    """HTML a notebook writes by hand: a list ``start`` or a ``colspan`` that is not a whole
    number counts as absent (1), as a browser reads it, instead of stopping the PDF."""
    typst = html_to_typst('<ol start="x"><li>a</li></ol><table><tr><td colspan="two">1</td><td>2</td></tr></table>')
    assert "#enum([a], )" in typst
    assert "rows: (([1], [2],),), columns: 2" in typst


def _pdf_of(markdown: str, tmp_path, name: str = "doc"):
    """A one-chapter document of ``markdown`` rendered to HTML and PDF."""
    nb = new_notebook(cells=[new_markdown_cell("# Chapter"), new_markdown_cell(markdown)])
    res = render_document(assemble([nb], title="T", toc=False), tmp_path / f"{name}.html", tmp_path / f"{name}.pdf")
    assert res.pdf_error is None, res.pdf_error
    return res


def test_formulas_in_the_pdf_are_the_typeset_svgs_in_vector(tmp_path):
    """In the PDF a formula is the SVG of the HTML, drawn as vector paths (no raster
    image); no TeX is left in the text."""
    from pypdf import PdfReader

    md = r"Inline $\sqrt{V}$ and $e_x$, then "
    md += r"$$\mathrm{Var}(e_k) = \sum_x \left(\frac{\partial e_k}{\partial m_x}\right)^2 V$$"
    typst = markdown_to_typst(md)
    assert typst.count("#dn-math(") == 2 and typst.count("#dn-math-block(") == 1
    res = _pdf_of(md, tmp_path)
    text = pdf_text(res.pdf)
    assert "Inline" in text and "\\sqrt" not in text and "\\frac" not in text and "$" not in text
    page = PdfReader(res.pdf).pages[1]
    xobjects = [v.get_object() for v in (page["/Resources"].get("/XObject") or {}).values()]
    assert all(x["/Subtype"] != "/Image" for x in xobjects)  # no raster image
    drawn = page.get_contents().get_data() + b"".join(x.get_data() for x in xobjects)
    assert len(re.findall(rb" c\n", drawn)) > 10  # the glyphs' outlines: Bezier curves


def test_the_pdf_is_set_in_the_templates_own_typeface_on_any_machine(tmp_path):
    """The PDF's text is DejaVu Sans from the template's fonts/ (its faces, and DejaVu Sans
    Mono for code), embedded; the compiler is given no other font, so the document is the
    same on every machine."""
    import typst

    from demonoise.report.content.theme import FONT_FACES, fonts_dir
    from demonoise.report.document.exporters import _compiler

    assert fonts_dir() is not None and len(FONT_FACES) == 6
    fonts = typst.Fonts(include_system_fonts=False, include_embedded_fonts=False, font_paths=[str(fonts_dir())])
    assert set(fonts.families()) == {"DejaVu Sans", "DejaVu Sans Mono"}
    assert _compiler() is _compiler()  # one compiler per process
    res = _pdf_of("Plain, **bold**, *italic* and ***both***: 1 234 567 people; `demonoise report`.", tmp_path)
    assert pdf_fonts(res.pdf) == {
        "DejaVuSans",
        "DejaVuSans-Bold",
        "DejaVuSans-Oblique",
        "DejaVuSans-BoldOblique",
        "DejaVuSansMono",
    }
    assert "1 234 567 people" in pdf_text(res.pdf)


def test_user_text_is_escaped_for_typst(tmp_path):
    """Markdown, captions, table cells and HTML with Typst syntax in them print as written:
    nothing is run as code, maths, a label or a comment."""
    import pandas as pd

    from demonoise.report.content.summary import HtmlTable
    from demonoise.report.document.cover import cover_html

    nasty = '#panic("x") $a$ *b* _c_ <lab> @ref [x] \\ // not a comment /* nor this */ = not a heading ~ `q'
    table = HtmlTable(
        pd.DataFrame({"a": [1]}), pd.DataFrame({nasty: [nasty], "n": ["1 234"]}), caption=nasty, note=nasty
    )
    cell = new_code_cell("t")
    cell.outputs = [
        new_output("display_data", data=table._repr_mimebundle_()),
        new_output("display_data", data={"text/html": f"<p><b>{nasty.replace('<', '&lt;')}</b></p>"}),
        new_output("stream", name="stdout", text=nasty),
    ]
    md = "Words: " + nasty.replace("*", "\\*").replace("_", "\\_").replace("`", "\\`").replace("$", "\\$")
    nb = new_notebook(cells=[new_markdown_cell("# Chapter"), new_markdown_cell(md), cell])
    publisher = type("Publisher", (), {"organisation": nasty, "contact": nasty, "date": "2026-11-30"})()
    cover = cover_html(nasty, publisher=publisher, data_status=nasty, settings=[nasty])
    res = render_document(assemble([nb], title=nasty, cover=cover), tmp_path / "x.html", tmp_path / "x.pdf")
    assert res.pdf_error is None, res.pdf_error
    text = re.sub(r"\s+", " ", pdf_text(res.pdf))
    flat = re.sub(r"\s+", " ", nasty)
    # cover (title, organisation, contact, data, settings), running header and footer, markdown,
    # caption, table head and cell, note, HTML, stream
    assert text.count(flat) >= 14, text.count(flat)


def test_a_long_table_breaks_across_pages_with_its_header_repeated(tmp_path):
    import pandas as pd

    from demonoise.report.content.summary import HtmlTable

    shown = pd.DataFrame({"region": [f"R{i:03d}" for i in range(150)], "value": [f"{i}.5" for i in range(150)]})
    cell = new_code_cell("t")
    table = HtmlTable(shown, shown, caption="Long table", name="long")
    cell.outputs = [new_output("display_data", data=table._repr_mimebundle_())]
    nb = new_notebook(cells=[new_markdown_cell("# Chapter"), cell])
    res = render_document(assemble([nb], title="T", toc=False), tmp_path / "l.html", tmp_path / "l.pdf")
    pages = [pdf_text(res.pdf, i) for i in range(res.pages)]
    body = [i for i, t in enumerate(pages) if "R0" in t or "R1" in t]
    assert len(body) >= 3 and all(re.search(r"region\s+value", pages[i]) for i in body)
    assert "R000" in pages[body[0]] and "R149" in pages[body[-1]]
    # the CSV link of the table is relative to the document and its file exists
    (link,) = pdf_links(res.pdf)
    assert link == "l-data/long.csv" and (tmp_path / link).is_file()


def test_typst_errors_are_one_report_error():
    with pytest.raises(ReportError, match="PDF typesetting failed"):
        typst_to_pdf('#panic("broken")')


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
    assert no_tmp_files(report.html.parent) == []


def test_template_lookup_errors_are_specific(tmp_path, monkeypatch):
    with pytest.raises(ReportError, match=r"given directory .*missing demonoise/conf.json"):
        find_template_dir(tmp_path)
    monkeypatch.setenv(ENV_VARS["templates"], str(tmp_path / "nowhere"))
    base = find_template_dir()  # env var incomplete -> falls through to the repository copy
    assert (base / "demonoise" / "conf.json").is_file()


# ------------------------------------------------------------------ PDF
def test_typst_source(executed):
    """The Typst template: A4, a running header (the data status) and a footer "title n / N",
    the contents with page numbers, chapters on a new page (landscape where flagged), the
    settings under their chapter, numbered figures and tables."""
    nb = assemble(
        [Section(executed["sections"][0], landscape=True), executed["sections"][1]],
        title=TITLE,
        cover=executed["cover"],
    )
    src, _ = DocumentTypstExporter().from_notebook_node(nb, resources={"metadata": {"name": "r"}})
    for rule in (
        'paper: "a4"',
        "dn-status.final()",
        'counter(page).display("1 / 1", both: true)',
        "outline(title: [Contents]",
        "#set page(flipped: true)",
        "#set page(flipped: false)",
        '#dn-figure(number: "1.1"',
        '#dn-table-block(number: "2.1"',
        "<sec-1-fixture-indicator>",
    ):
        assert rule in src, rule


def test_pdf(report):
    from pypdf import PdfReader

    assert report.pdf_error is None and report.pdf.read_bytes()[:5] == b"%PDF-"
    pdf = PdfReader(report.pdf)
    assert len(pdf.pages) == report.pages >= 4
    assert all(round(float(p.mediabox.width)) == 595 and round(float(p.mediabox.height)) == 842 for p in pdf.pages)
    text = pdf_text(report.pdf)
    assert "\\sqrt" not in text and "\\frac" not in text and "$$" not in text  # maths typeset
    assert "Figure 1.1." in text and "Table 3.2." in text and "Contents" in text
    assert re.search(rf"{TITLE}\s*2\s*/\s*{report.pages}\b", pdf_text(report.pdf, 1))
    titles = [b.title for b in pdf.outline if not isinstance(b, list)]
    assert "2 Second region" in titles and "3 By setting" in titles
    assert any(
        isinstance(b, list) and any(k.title == "3.1 V = 1" for k in b if not isinstance(k, list)) for b in pdf.outline
    )
    # the CSV links: relative to the document, to files that exist; the charts are vector
    links = pdf_links(report.pdf)
    assert len(links) == 12 and all(
        not u.startswith(("file:", "/")) and (report.html.parent / u).is_file() for u in links
    )
    assert pdf_fonts(report.pdf) >= {"DejaVuSans", "DejaVuSans-Bold"}
    images = [
        x
        for p in pdf.pages
        for x in (p["/Resources"].get("/XObject") or {}).values()
        if x.get_object()["/Subtype"] == "/Image"
    ]
    assert images == []


def test_landscape_chapters(executed, tmp_path):
    from pypdf import PdfReader

    doc = assemble([executed["sections"][0], Section(executed["sections"][1], landscape=True)], title="t")
    res = render_document(doc, tmp_path / "w.html", tmp_path / "w.pdf")
    pdf = PdfReader(res.pdf)
    wide = [float(p.mediabox.width) > float(p.mediabox.height) for p in pdf.pages]
    start = next(
        i for i in range(2, len(pdf.pages)) if re.search(r"^\s*2\s*Fixture indicator", pdf_text(res.pdf, i), re.M)
    )
    assert not any(wide[:start]) and all(wide[start:])


def test_nbconvert_exporter_entry_point_gives_the_pdf(executed, tmp_path):
    nb = assemble(executed["sections"][:1], title=TITLE)
    import nbformat

    src = tmp_path / "doc.ipynb"
    nbformat.write(nb, src)
    for fmt in ("demonoise_pdf", "demonoise_typst"):
        subprocess.run(
            [sys.executable, "-m", "nbconvert", "--to", fmt, str(src), "--output-dir", str(tmp_path)],
            check=True,
            capture_output=True,
        )
    assert (tmp_path / "doc.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "doc.typ").read_text(encoding="utf-8").count("#dn-figure(") == 2
    assert sorted(p.name for p in (tmp_path / "doc-data").iterdir()) == [
        "figure-1-1.csv",
        "figure-1-2.csv",
        "table-1-1.csv",
    ]
    html, _ = DocumentHTMLExporter().from_notebook_node(nb)
    assert _maths(html) == 4


def test_without_typst_html_only_and_one_line_reason(executed, tmp_path, monkeypatch):
    """The typst wheel missing: the HTML is written, the PDF is not, and one line says why."""

    class NoTypst:
        def find_spec(self, name, path=None, target=None):
            if name == "typst":
                raise ModuleNotFoundError("No module named 'typst'")

    monkeypatch.delitem(sys.modules, "typst", raising=False)
    monkeypatch.setattr(sys, "meta_path", [NoTypst(), *sys.meta_path])
    (tmp_path / "r.pdf").write_bytes(b"%PDF- stale")
    res = render_document(assemble(executed["sections"][:1], title="t"), tmp_path / "r.html", tmp_path / "r.pdf")
    assert res.html.is_file() and res.pdf is None and not (tmp_path / "r.pdf").exists()
    assert res.pdf_error.startswith("no PDF: the typst package is not installed")
    assert "pip install typst" in res.pdf_error and "\n" not in res.pdf_error
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
    e_x"); the HTML and the Typst set the symbol as the formulas do, and leave dataset
    codes alone."""
    from demonoise.report.content.typeset import html_to_typst
    from demonoise.report.document.exporters import caption_html

    assert caption_html("Relative uncertainty of e_x, both sexes") == (
        "Relative uncertainty of <i>e</i><sub>x</sub>, both sexes"
    )
    assert caption_html("e_0 and e_{65}.") == "<i>e</i><sub>0</sub> and <i>e</i><sub>65</sub>."
    assert caption_html("m_{85+} & A < 10 %") == "<i>m</i><sub>85+</sub> &amp; A &lt; 10 %"
    for plain in ("Eurostat demo_r_find3, demo_r_pjangroup", "file x_y.csv", "snake_case"):
        assert caption_html(plain) == plain
    # the Typst is the HTML's, converted
    assert (
        html_to_typst(caption_html("Uncertainty of e_x & A < 10 %"))
        == "Uncertainty of #emph[e]#sub[x] \\& A \\< 10 \\%"
    )
