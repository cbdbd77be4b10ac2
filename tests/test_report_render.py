"""Rendering: assembly, offline HTML (static check and headless Chromium with the
network blocked), MathJax and charts actually rendered, PDF, Chromium missing."""

from __future__ import annotations

import re
import subprocess

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report import chromium as chrome
from demonoise.report.notebook import METRICS_MIME
from demonoise.report.render import Section, assemble, render_html, render_report
from demonoise.report.run import Job, run_jobs
from demonoise.report.templates import ENV_VAR, find_template_dir
from report_helpers import COVER, GOOD, chromium, no_tmp_files, scan_html

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
    assert batch.status == "ok", [str(r.error) for r in batch]
    return {"dir": d, "cover": d / "cover.ipynb", "sections": [d / "be10.ipynb", d / "be34.ipynb"]}


@pytest.fixture(scope="module")
def report(executed, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    res = render_report(
        [executed["sections"][0], Section(executed["sections"][1], title="Second region", anchor="be34")],
        out / "report.html",
        out / "report.pdf",
        title=TITLE,
        cover=executed["cover"],
    )
    return res


# ------------------------------------------------------------------ assembly
@pytest.mark.slow
def test_assembly_structure(executed):
    nb = assemble(executed["sections"], title=TITLE, cover=executed["cover"])
    secs = nb.metadata["demonoise"]["sections"]
    # the notebook's leading "# Fixture indicator" became the section title ...
    assert [s["title"] for s in secs] == ["Fixture indicator", "Fixture indicator"]
    assert [s["anchor"] for s in secs] == ["sec-1-fixture-indicator", "sec-2-fixture-indicator"]
    text = "\n".join(c.source for c in nb.cells)
    assert "# Fixture indicator" not in text  # ... and left the body
    ids = [c["id"] for c in nb.cells]
    assert len(ids) == len(set(ids))
    # no code cell without output, no metrics, no cell tagged remove
    for cell in nb.cells:
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
    with pytest.raises(ParameterError, match="at least one section"):
        assemble([], title="t")


def test_a_failed_notebook_is_refused():
    nb = new_notebook(cells=[new_markdown_cell("# x"), new_code_cell("1/0")])
    nb.cells[1].outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
    nb.metadata["papermill"] = {"exception": True}
    with pytest.raises(ReportError, match=r"failed during execution \(ZeroDivisionError: division by zero"):
        assemble([nb], title="t")


def test_untagged_metrics_never_render(tmp_path):
    cell = new_code_cell("dr.display_metrics(...)")
    cell.outputs = [new_output("display_data", data={METRICS_MIME: {"secret_metric": 1}})]
    html = render_html(assemble([new_notebook(cells=[new_markdown_cell("# s"), cell])], title="t"), tmp_path / "m.html")
    assert "secret_metric" not in html.read_text()


# ------------------------------------------------------------------ static HTML
@pytest.mark.slow
def test_html_is_self_contained(report):
    text = report.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == []
    assert scan.scripts_with_src == []  # every script is inline
    assert "require.min.js" not in text and "cdnjs.cloudflare.com" not in text
    # MathJax is inlined (its config and its code) -- loaded from nowhere else
    assert "window.MathJax" in text and "MathJax.startup" in text and len(text) > 2_000_000


def test_the_offline_checker_catches_external_loads():
    bad = (
        '<html><head><link rel="stylesheet" href="https://cdn.example.org/x.css">'
        '<style>@import "x.css"; body{background:url(//example.org/a.png)}</style>'
        '<script src="http://example.org/a.js"></script></head>'
        '<body><img src="https://example.org/i.png"><a href="https://ec.europa.eu">ok</a></body></html>'
    )
    v = scan_html(bad).violations
    assert len(v) == 5, v  # link href, @import, url(//...), script src, img src; not <a href>


@pytest.mark.slow
def test_html_content(report):
    text = report.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    # 2 sections x 2 charts, inline SVG from vl-convert
    assert len(re.findall(r'<svg [^>]*class="marks"', text)) == 4
    assert "Fixture rate, BE10, V = 1" in text and "Fixture rate, BE34, V = 5" in text
    # no code, no prompts, nothing removed by tag, no metrics
    assert "dr.setup_notebook" not in text and "import altair" not in text
    assert "In&nbsp;[" not in text and "Out[" not in text
    assert not re.search(r'<div class="jp-(Input|Output)Prompt', text)
    assert not re.search(r'class="[^"]*jp-InputArea-editor', text)
    assert "REMOVE-ME-MARKER" not in text and "probe_was_defined" not in text and METRICS_MIME not in text
    # cover, contents, sections; every contents link resolves
    assert 'class="dn-cover"' in text and 'class="dn-toc"' in text
    toc = re.search(r'<nav class="dn-toc".*?</nav>', text, re.S).group(0)
    targets = re.findall(r'href="#([^"]+)"', toc)
    assert targets == ["sec-1-fixture-indicator", "be34"]
    assert set(targets) <= scan.ids
    assert '<h1 class="dn-section-title"><span class="dn-section-number">2</span>Second region</h1>' in text
    # print stylesheet: A4, page breaks, page numbers in the margin, no vega actions
    assert "size: A4" in text and "break-before: page" in text and "counter(pages)" in text
    assert report.html_bytes == report.html.stat().st_size
    assert no_tmp_files(report.html.parent) == []


def test_template_lookup_errors_are_specific(tmp_path, monkeypatch):
    with pytest.raises(ReportError, match=r"argument template_dir: .*missing: conf.json, index.html.j2"):
        find_template_dir(tmp_path)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    base = find_template_dir()  # env var incomplete -> falls through to the repository copy
    assert (base / "demonoise" / "conf.json").is_file()


# ------------------------------------------------------------------ Chromium missing
@pytest.mark.slow
def test_no_chromium_gives_html_and_a_reason(executed, tmp_path):
    res = render_report(
        executed["sections"][:1],
        tmp_path / "r.html",
        tmp_path / "r.pdf",
        title="t",
        chromium="/nonexistent/chromium",
    )
    assert res.html.is_file() and res.pdf is None and not (tmp_path / "r.pdf").exists()
    assert res.pdf_error.startswith(
        "no PDF: chromium not found at /nonexistent/chromium; install the Debian package chromium"
    )
    assert no_tmp_files(tmp_path) == []


# ------------------------------------------------------------------ headless Chromium
@pytest.mark.slow
@chromium
def test_chromium_renders_maths_and_charts_with_no_network_request(report, tmp_path):
    net = tmp_path / "net.json"
    dom = chrome.dump_dom(report.html, net_log=net)
    assert chrome.page_requests(net) == []
    assert 'data-dn-math="done"' in dom  # MathJax finished typesetting
    # 3 maths in the markdown + 1 LaTeX output per section, + V in the cover
    assert dom.count("<mjx-container") == 2 * 4 + 1
    assert "$$" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    assert dom.count('class="marks"') == 4


@chromium
def test_the_network_probe_sees_a_page_request(tmp_path):
    """Control: the net-log check does detect what a page tries to load."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.example.org/x.css"></head>'
        '<body><img src="http://example.org/i.png"></body></html>'
    )
    net = tmp_path / "net.json"
    chrome.dump_dom(page, net_log=net, budget_ms=2000)
    urls = sorted(r["url"] for r in chrome.page_requests(net))
    assert urls == ["http://example.org/i.png", "https://cdn.example.org/x.css"]
    assert all(r["net_error"] is not None and r["net_error"] < 0 for r in chrome.page_requests(net))


@pytest.mark.slow
@chromium
def test_pdf(report):
    assert report.pdf_error is None and report.pdf.is_file()
    assert report.pdf.read_bytes()[:5] == b"%PDF-"
    info = subprocess.run(["pdfinfo", str(report.pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert pages >= 4  # cover, contents, one page or more per section
    assert re.search(r"Page size:\s+59\d\.\d+ x 84\d\.\d+ pts \(A4\)", info)
    text = subprocess.run(["pdftotext", str(report.pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "\\sqrt" not in text and "\\frac" not in text and "$$" not in text  # maths typeset
    assert "Fixture rate, BE34, V = 5" in text and "Age (years)" in text  # chart text
    assert "Contents" in text and re.search(rf"\b2\s*/\s*{pages}\b", text)  # page numbers in the margin


@chromium
def test_printing_waits_for_late_scripts(tmp_path):
    """The virtual-time budget lets scripts that run after the load event finish
    before the page is printed (MathJax typesets after load on slow machines)."""
    page = tmp_path / "late.html"
    page.write_text(
        "<html><body><p>early</p><script>setTimeout(function () {"
        "document.body.insertAdjacentHTML('beforeend', '<p>LATE-MARKER</p>');}, 3000);"
        "</script></body></html>"
    )

    def printed(budget):
        pdf = chrome.print_pdf(page, tmp_path / f"late-{budget}.pdf", budget_ms=budget)
        return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout

    assert "LATE-MARKER" in printed(10_000)
    assert "LATE-MARKER" not in printed(None)  # control: without the budget it is printed too early


@pytest.mark.slow
@chromium
def test_screenshot(report, tmp_path):
    png = chrome.screenshot(report.html, tmp_path / "shot.png", width=1000, height=1400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


# ------------------------------------------------------------------ interactive charts
@pytest.fixture(scope="module")
def interactive_html(tmp_path_factory):
    import altair as alt
    import pandas as pd

    from demonoise.report.notebook import chart_bundle

    df = pd.DataFrame({"age": range(0, 90, 5), "rate": [0.001 * 1.09**a for a in range(0, 90, 5)]})
    cells = [new_markdown_cell("# Interactive")]
    for title in ("first live chart", "second live chart"):
        c = new_code_cell("chart")
        spec = alt.Chart(df).mark_line().encode(x="age", y="rate").properties(title=title).to_dict()
        c.outputs = [new_output("display_data", data=chart_bundle(spec, interactive=True))]
        cells.append(c)
    out = tmp_path_factory.mktemp("interactive") / "live.html"
    return render_html(assemble([new_notebook(cells=cells)], title="live"), out)


def test_interactive_charts_inline_the_vega_bundle(interactive_html):
    text = interactive_html.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == [] and scan.scripts_with_src == []
    assert "window.vegaEmbed" in text and text.count('class="dn-vega-spec"') == 2
    assert len(re.findall(r'<svg [^>]*class="marks"', text)) == 2  # static fallbacks


@chromium
def test_interactive_charts_come_alive_offline(interactive_html, tmp_path):
    net = tmp_path / "net.json"
    dom = chrome.dump_dom(interactive_html, net_log=net)
    assert chrome.page_requests(net) == []
    assert len(re.findall(r'class="[^"]*\bdn-chart-ready\b', dom)) == 2  # vega-embed drew both charts ...
    assert dom.count('class="dn-chart-live') == 2
    assert len(re.findall(r'<svg [^>]*class="marks"', dom)) == 4  # ... next to the static SVGs
    assert not re.search(r"<details[^>]*title=\"Click to view actions\"|class=\"vega-actions", dom)  # no actions menu
