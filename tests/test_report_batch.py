"""The report batch end to end on a small country (LU on ess-2023, one NUTS 2 region):
every indicator notebook executes, the report renders to offline HTML with its charts
and formulas, headless Chromium with the network disabled requests nothing, the PDF
carries the data label on every page, the index links everything, and a second run
finds everything up to date."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import pandas as pd
import pytest

from demonoise.report import chromium as chrome
from demonoise.report.batch import INDICATORS, parse_params, run_reports
from demonoise.report.render import read_metrics
from report_helpers import CHROMIUM, chromium, no_tmp_files, scan_html

pytestmark = pytest.mark.slow

V = 5.0


@pytest.fixture(scope="module")
def lu(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    params = parse_params(
        {"title": "Test batch", "datasets": {"ess-2023": ["LU"]}, "V": [V], "mc": 200, "seed": 7}, source="test"
    )
    rep = run_reports(params, out, workers=2, progress=False, log=None)
    return {"out": out, "rep": rep, "params": params, "outcome": rep.outcomes[0]}


def test_every_indicator_notebook_runs(lu):
    rep, o, out = lu["rep"], lu["outcome"], lu["out"]
    assert rep.ok, [x.error for x in rep.outcomes]
    assert o.status == "ok" and o.html.is_file()
    build = o.spec.build_dir(out)
    for name in ("cover", *INDICATORS):
        nb = build / f"{name}.ipynb"
        text = nb.read_text(encoding="utf-8")
        assert '"output_type": "error"' not in text, name
        if name != "cover":
            assert text.count("image/svg+xml") >= 3, name  # value/uncertainty/admixture or MC charts
            assert "dn-status-modelled" in text, name  # the data label box
    # the numbers the index shows come from the metrics the notebooks published;
    # check them against the results table itself: A = sqrt(1 + var_noise / var_pois) - 1
    m = o.metrics
    res = pd.read_parquet(next((out / "results" / "ess-2023").glob("LU-*.parquet")))
    e0 = res[(res.region == "LU00") & (res.indicator == "e") & (res.sex == "T") & (res.age == 0) & (res.V == V)].iloc[0]
    assert m["regions"] == 1 and m["e0_worst_region"] == "LU00"
    assert m["e0_admixture_worst"] == pytest.approx(math.sqrt(1 + e0.var_noise / e0.var_pois) - 1, rel=1e-12)
    assert m["e0_sd_noise_worst"] == pytest.approx(math.sqrt(e0.var_noise), rel=1e-12)
    tfr = res[(res.region == "LU00") & (res.indicator == "tfr") & (res.V == V)].iloc[0]
    assert m["tfr_admixture_worst"] == pytest.approx(math.sqrt(1 + tfr.var_noise / tfr.var_pois) - 1, rel=1e-12)
    assert read_metrics(build / "cover.ipynb")["country_name"] == "Luxembourg"
    # the results hold the Monte Carlo asked for
    assert set(res.mc_n.dropna()) == {200}
    assert no_tmp_files(out) == []
    assert (out / "build" / "math-svg.json").is_file() == bool(CHROMIUM)


def test_html_report_is_offline_and_holds_its_charts(lu):
    html = lu["outcome"].html.read_text(encoding="utf-8")
    c = scan_html(html)
    assert c.violations == []
    assert c.scripts_with_src == []
    # the cover, a contents list, and four sections each opening with the data label
    assert html.count('class="dn-section"') == 4
    assert html.count('class="dn-status dn-status-modelled"') == 5
    assert "demonstration data: population real (Eurostat), deaths and births modelled" in html
    # charts: static SVG from vl-convert (14 in the four sections)
    assert len(re.findall(r"<svg[^>]*class=\"marks\"", html)) >= 12
    for title in (
        "Age-specific fertility rates",
        "Total fertility rate",
        "Age-specific mortality rates",
        "Life expectancy",
    ):
        assert f"{title}</h1>" in html
    # formulas: typeset once for the batch and inlined as static SVG (with Chromium), else
    # left to the inlined MathJax; either way nothing is fetched
    if CHROMIUM:
        assert '<html lang="en" data-dn-math="static">' in html and "window.MathJax" not in html
        assert html.count("<mjx-container") > 40
        assert "$$\\mathrm{Var}(e_k)" not in html
    else:
        assert "$$\\mathrm{Var}(e_k)" in html and "window.MathJax" in html
    # verdicts with numbers; no code, no tracebacks
    assert "noise adds" in html and "in the country's only NUTS 2 region" in html
    assert "Traceback" not in html and "dr.setup_notebook" not in html


@chromium
def test_headless_chromium_without_network_loads_nothing_and_typesets(lu, tmp_path):
    net = tmp_path / "net.json"
    dom = chrome.dump_dom(lu["outcome"].html, net_log=net)
    assert chrome.page_requests(net) == []  # no request left the page (none failed, none made)
    assert 'data-dn-math="static"' in dom  # formulas typeset ahead: no script needed
    assert dom.count("<mjx-container") > 40
    text = re.sub(r"<(script|svg|style)\b.*?</\1>", "", dom, flags=re.S)
    assert "\\frac" not in text and "$$" not in text  # no raw LaTeX left in the page


@chromium
def test_pdf_has_the_data_label_on_every_page(lu):
    pdf = lu["outcome"].pdf
    assert pdf is not None and pdf.read_bytes()[:5] == b"%PDF-"
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) not installed")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = [p for p in text.split("\f") if p.strip()]
    assert len(pages) >= 8
    for i, page in enumerate(pages, 1):
        assert "demonstration data" in page, f"page {i} lacks the data label"
    assert "Life expectancy" in text and "Monte Carlo" in text


def test_index(lu):
    out, o = lu["out"], lu["outcome"]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert lu["rep"].index == out / "index.html"
    assert scan_html(index).violations == []
    assert 'href="reports/ess-2023/LU-V5.html"' in index
    if o.pdf is not None:
        assert 'href="reports/ess-2023/LU-V5.pdf"' in index
    else:
        assert "no PDF" in index
    assert "LU, V = 5 (ess-2023)" in index and "LU00" in index
    for col in ("worst region (e0)", "e0 A, worst", "TFR A, worst"):
        assert f"<th>{col}</th>" in index
    assert "1 reports: 1 ok, 0 up to date, 0 failed" in index
    # the index shows figures of modelled data: it carries the label too
    assert "dn-status-modelled" in index
    assert (
        "<strong>ess-2023</strong>: demonstration data: population real (Eurostat), deaths and births modelled" in index
    )


def test_second_run_is_up_to_date(lu):
    out, o = lu["out"], lu["outcome"]
    mtime = o.html.stat().st_mtime_ns
    rep = run_reports(lu["params"], out, workers=1, progress=False, log=None)
    assert rep.ok and [x.status for x in rep.outcomes] == ["skipped"]
    assert o.html.stat().st_mtime_ns == mtime
    assert rep.outcomes[0].metrics == o.metrics  # read back from the executed notebooks
    assert "0 ok, 1 up to date" in (out / "index.html").read_text(encoding="utf-8")
