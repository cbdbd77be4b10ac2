"""The published documents, end to end on a small batch (LU, the three settings of the
showcase): one report per country, its PDF's bookmarks, contents page numbers and cover read
back with pypdf; formulas typeset as SVG (as many as the source notebooks have, no raw $);
nothing external, and in headless Chromium with the network off no request; every figure
and table numbered with a Source line and a CSV that exists; colours from the vocabulary,
one colour per region across the report; fixed decimals and one thousands separator."""

from __future__ import annotations

import base64
import json
import re

import pytest

from demonoise.core.version import __version__
from demonoise.core.vocabulary import POISSON_COLOUR, SETTING_PALETTE
from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import Report, run_reports
from report_helpers import chromium, count_formulas, no_tmp_files, pdf_fonts, pdf_links, scan_html

pytestmark = pytest.mark.slow

PUBLISHER = {"organisation": "Statistics Testland", "contact": "methods@testland.example", "date": "2026-11-30"}


@pytest.fixture(scope="module")
def lu(tmp_path_factory):
    """The batch with no browser reachable: PATH holds only the virtual environment's bin."""
    import os
    import shutil
    import sys

    out = tmp_path_factory.mktemp("lu")
    path = os.environ["PATH"]
    os.environ["PATH"] = os.path.dirname(sys.executable)
    assert shutil.which("chromium") is None
    params = parse_params(
        {
            "datasets": {"ess-2023": ["LU"]},
            "noise": [{"V": 1}, {"V": 5}, {"ptable": "v01"}],
            "mc": 200,
            "publisher": PUBLISHER,
        }
    )
    try:
        rep = run_reports(params, out, log=None, progress=False)
    finally:
        os.environ["PATH"] = path
    assert rep.ok, [o.error for o in rep.outcomes.values()]
    assert all(o.pdf is not None for o in rep.outcomes.values())
    o = rep.outcomes[Report("ess-2023", "LU")]
    return {"out": out, "rep": rep, "o": o, "html": o.html.read_text(encoding="utf-8")}


def test_one_report_per_country_with_its_data(lu):
    out = lu["out"]
    listed = sorted(p.name for p in (out / "reports" / "ess-2023").iterdir())
    assert listed == ["LU-data", "LU-data.zip", "LU.html", "LU.pdf"]
    assert lu["o"].files and all(p.is_file() and p.suffix == ".csv" for p in lu["o"].files)
    assert not no_tmp_files(out)
    # chapter = indicator, subsection = setting; order: main points, evidence, comparison, calibration, method
    html = lu["html"]
    heads = re.findall(r'<h1 class="dn-chapter-title"><span class="dn-section-number">(\d+)</span>([^<]+)</h1>', html)
    assert [t for _, t in heads] == [
        "Main points", "Calibration", "Age-specific fertility rates", "Total fertility rate",
        "Age-specific mortality rates", "Life expectancy", "Generic model and p-table", "Method and data",
    ]  # fmt: skip
    subs = re.findall(r'<h2 class="dn-setting"[^>]*><span class="dn-section-number">([\d.]+)</span>([^<]+)</h2>', html)
    assert [s for s in subs if s[0].startswith("6.")] == [("6.1", "V = 1"), ("6.2", "V = 5"), ("6.3", "p-table v01")]
    # the decision module's tables and sentences stand where the placeholders stood
    assert html.count('class="dn-placeholder"') == 0
    main = html[: html.index("Age-specific fertility rates</h1>")]
    assert "Decision table: how much noise adds" in main and "Largest acceptable V: per region" in main


def test_html_has_no_mathjax_loads_nothing_and_typesets_every_formula(lu):
    html = lu["html"]
    assert "MathJax" not in html and "mathjax" not in html and "<script" not in html
    assert scan_html(html).violations == []
    body = re.sub(r"<(svg|style)\b.*?</\1>", "", html, flags=re.S)
    assert "$" not in re.sub(r"<[^>]+>", "", body)  # no raw formula left in the text
    nb = json.loads((lu["out"] / "build" / "ess-2023" / "LU" / "report.ipynb").read_text(encoding="utf-8"))
    formulas = sum(count_formulas("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert formulas > 40
    assert len(re.findall(r'<svg [^>]*class="dn-math', html)) == formulas


def test_every_figure_and_table_is_numbered_with_a_source_and_its_csv(lu):
    html, base = lu["html"], lu["o"].html.parent
    figures = re.findall(r'<figure class="dn-figure".*?</figure>', html, re.S)
    tables = re.findall(r'<div class="dn-table-block[" ].*?</div>(?=\s*</div>|\s*<)', html, re.S)
    # the chapters share their charts across the settings (each chart draws every setting); a country of
    # one region has no chart of one point per setting (population size, by region, Monte Carlo check)
    assert len(figures) >= 8 and len(tables) > 15
    # no table without a number (a short table's block also carries dn-keep: kept on one page)
    assert len(re.findall(r"<table", html)) == len(re.findall(r'class="dn-table-block[" ]', html))
    for block in figures:
        assert re.search(r'<span class="dn-number">Figure \d+\.\d+\.</span>', block)
        assert "Source: Eurostat (" in block and f"computed with demonoise {__version__}" in block
    numbers = re.findall(r'<span class="dn-number">(Figure|Table) (\d+\.\d+)\.</span>', html)
    assert len(numbers) == len(set(numbers))
    links = re.findall(r'<a class="dn-csv" href="([^"]+)">', html)
    assert len(links) == len(numbers)
    for href in links:
        assert (base / href).is_file(), href


def _specs(lu) -> list[str]:
    """The SVG of every chart of the report."""
    imgs = re.findall(r'<img [^>]*class="dn-chart"[^>]*>', lu["html"])
    srcs = [re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', img).group(1) for img in imgs]
    return [base64.b64decode(s).decode("utf-8") for s in srcs]


def test_charts_use_the_vocabulary_colours(lu):
    from demonoise.analysis.verdicts import across_settings
    from demonoise.report.content import charts
    from demonoise.report.content.summary import load_results

    o = lu["o"]
    res = next(
        p
        for p in sorted((lu["out"] / "results" / "ess-2023").glob("LU-single-*.parquet"))
        if "-calibration" not in p.name and "-comparison-" not in p.name
    )
    df = load_results(res, dataset="ess-2023", country="LU", setting={"V": 5})
    # the noise line of each setting has the setting's colour, Poisson its own
    labels = ["V = 1", "V = 5", "p-table v01"]
    spec = charts.uncertainty_by_age_settings(across_settings(df, "e", nuts_level=None), settings=labels).to_dict()
    scale = spec["spec"]["layer"][0]["encoding"]["color"]["scale"]
    noise = {f"noise, {s}": c for s, c in zip(labels, SETTING_PALETTE, strict=False)}
    assert dict(zip(scale["domain"], scale["range"], strict=True)) == {"Poisson": POISSON_COLOUR, **noise}
    spec = charts.uncertainty_vs_population(
        across_settings(df, "e", age=0), settings=["V = 1", "V = 5", "p-table v01"]
    ).to_dict()
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["range"] == [POISSON_COLOUR, *SETTING_PALETTE[:3]]
    # and in the rendered SVGs: every setting's colour appears, none of the old report-local ones
    svgs = "".join(_specs(lu)).lower()
    for colour in (POISSON_COLOUR, *SETTING_PALETTE[:3]):
        assert colour.lower() in svgs
    for old in ("#e45756", "#f58518", "#b279a2"):
        assert old not in svgs
    assert o.pages > 0


def test_a_region_keeps_one_colour_across_the_report():
    import pandas as pd

    from demonoise.analysis.verdicts import by_population
    from demonoise.report.content.theme import region_colours

    rows = []
    for reg, lvl, expo in (("FI", 0, 5.5e6), ("FI1B", 2, 1.7e6), ("FI19", 2, 1.4e6), ("FI20", 2, 3.0e4)):
        rows.append({"region": reg, "region_name": reg, "nuts_level": lvl, "exposure": expo, "indicator": "asmr"})
    full = pd.DataFrame(rows)
    one = region_colours(by_population(full))
    two = region_colours(by_population(full.iloc[::-1]))  # another chart, rows in another order
    assert one == two and len(set(one.values())) == 4


def test_numeric_columns_have_fixed_decimals_and_one_thousands_separator(lu):
    html = lu["html"]
    for table in re.findall(r"<table.*?</table>", html, re.S):
        rows = [
            re.findall(r'<td class="dn-n">([^<]*)</td>', r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
        ]
        rows = [r for r in rows if r]
        for col in zip(*rows, strict=False):
            vals = [v for v in col if re.fullmatch(r"[\d\u202f]+(\.\d+)?", v)]
            decimals = {len(v.split(".")[1]) if "." in v else 0 for v in vals}
            assert len(decimals) <= 1, col
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(svg|style)\b.*?</\1>", "", html, flags=re.S))
    assert not re.search(r"\d,\d{3}\b", text)  # the thousands separator is the narrow space only
    assert "\u202f" in text


def test_pdf_bookmarks_contents_page_numbers_and_cover(lu):
    from pypdf import PdfReader

    pdf = PdfReader(lu["o"].pdf)
    outline = pdf.outline
    titles = [b.title for b in outline if not isinstance(b, list)]
    assert any("Main points" in t for t in titles) and any("Life expectancy" in t for t in titles)
    assert any(isinstance(b, list) for b in outline)  # the settings nest under their chapter
    cover = pdf.pages[0].extract_text()
    for needle in (PUBLISHER["organisation"], PUBLISHER["contact"], PUBLISHER["date"], f"demonoise {__version__}"):
        assert needle in cover, needle
    assert "Data extracted" in cover and "not an official publication" not in cover
    contents = pdf.pages[0].extract_text()  # under the cover's fields
    assert "Contents" in contents
    # each entry ends in the page its chapter starts on
    starts = {}
    for i, page in enumerate(pdf.pages):
        m = re.search(r"^\s*(\d)\s*(Main points|Life expectancy|Calibration)\b", page.extract_text(), re.M)
        if m and i > 0:
            starts.setdefault(m.group(2), i + 1)
    assert len(starts) == 3
    for title, page in starts.items():
        assert re.search(rf"{title}[\s.]*{page}\b", contents), (title, page)
    # running header (the data status) on every page; footer with title and "n / N" after the cover
    n = len(pdf.pages)
    status = "demonstration data: population real (Eurostat), deaths and births modelled (calibration year 2019)"
    for i, page in enumerate(pdf.pages):
        text = page.extract_text()
        assert status in text, i
        footer = rf"Luxembourg \(LU\): noise and demographic indicators\s*{i + 1} / {n}\b"
        assert i == 0 or re.search(footer, text), i
    # the decision table's chapter (Main points) on landscape pages, the indicators' on portrait
    wide = [float(p.mediabox.width) > float(p.mediabox.height) for p in pdf.pages]
    assert wide[starts["Main points"] - 1] and not wide[starts["Life expectancy"] - 1]
    # fonts embedded, every CSV link relative to the document and to a file that exists
    assert pdf_fonts(lu["o"].pdf) >= {"DejaVuSans", "DejaVuSans-Bold"}
    links = pdf_links(lu["o"].pdf)
    assert len(links) > 20 and all((lu["o"].html.parent / u).is_file() for u in links)
    assert all(u.startswith("LU-data/") for u in links[1:]) and links[0] == "LU-data.zip"  # the cover's first


def test_without_a_publisher_the_cover_says_so(tmp_path):
    from demonoise.report.document.cover import UNOFFICIAL, cover_html

    html = cover_html("T", data_status="real", provenance={"deaths": {"extracted": "2026-11-20"}}).source
    assert UNOFFICIAL in html and "2026-11-20" in html and __version__ in html


@chromium
def test_headless_chromium_with_the_network_off_requests_nothing_and_shows_it_all(lu, tmp_path):
    from chromium_helpers import dump_dom, page_requests

    net = tmp_path / "net.json"
    dom = dump_dom(lu["o"].html, net_log=net)
    assert page_requests(net) == []  # nothing requested, so nothing failed
    maths = len(re.findall(r'<svg [^>]*class="dn-math', lu["html"]))
    assert len(re.findall(r'<svg [^>]*class="dn-math', dom)) == maths > 40
    charts = len(re.findall(r"<img [^>]*class=\"dn-chart\"", lu["html"]))
    assert len(re.findall(r"<img [^>]*class=\"dn-chart\"", dom)) == charts >= 8


def test_index_links_the_new_reports_only(lu):
    index = (lu["out"] / "index.html").read_text(encoding="utf-8")
    assert 'href="reports/ess-2023/LU.html"' in index and 'href="reports/ess-2023/LU.pdf"' in index
    assert "LU-V1" not in index and 'href="reports/ess-2023/LU-data"' in index
    assert "worst A, V = 5" in index and "recommended V (e0, A \u2264 10 %)" in index
    for href in re.findall(r'href="([^"#]+)"', index):
        assert (lu["out"] / href).exists(), href


def test_each_index_row_shows_its_recommended_v_the_smallest_v_max_of_its_csv(lu):
    """The index's recommended V of a country is the smallest V_max over its regions and
    sexes in the calibration CSV next to the report (e0, A <= 10 %, generic family), and
    its row links the decision, calibration and error-band CSV files."""
    import numpy as np
    import pandas as pd

    from demonoise.core.vocabulary import SEX_WORDS

    index = (lu["out"] / "index.html").read_text(encoding="utf-8")
    data = lu["out"] / "reports" / "ess-2023" / "LU-data"
    cal = pd.read_csv(data / "calibration.csv")
    sel = cal[(cal["headline"] == "e0") & (cal["threshold"] == 0.1) & (cal["family"] == "generic")]
    assert set(sel["sex"]) == {"F", "M", "T"} and "LU00" in set(sel["region"])  # a country of one region
    within = sel[sel["range_status"] == "within"]
    rec = pd.read_csv(data / "recommended_v.csv")
    rec = rec[rec["family"] == "generic"].iloc[0]
    assert rec["V_recommended"] == pytest.approx(within["V_max"].min(), rel=1e-12)
    binding = within[np.isclose(within["V_max"], within["V_max"].min(), rtol=1e-12)]
    assert rec["region"] in set(binding["region"]) and rec["sex"] in set(binding["sex"])
    row = next(r for r in re.findall(r'<tr class="dn-row-\w+">(.*?)</tr>', index, re.S) if "LU.html" in r)
    assert f">{rec['V_shown']} ({rec['region']}, {SEX_WORDS[rec['sex']]})<" in row
    for name in ("decision.csv", "calibration.csv", "error_bands.csv"):
        assert f'href="reports/ess-2023/LU-data/{name}"' in row


def test_small_cell_counts_of_the_summary_and_the_flags_tables_agree_on_one_denominator(lu):
    """Every sparse region the chapters' flags tables list (fewer than 10 events in more than
    half of the age cells) is counted there as in the main points' table of cells resting on
    few events: the same numbers out of the same stated denominator (all age cells of that
    region and sex), and every region and sex of the summary's table that is sparse is flagged."""
    import pandas as pd

    data = lu["o"].html.parent / "LU-data"
    tables = {p.name: pd.read_csv(p) for p in sorted(data.glob("table-*.csv"))}
    summary = [t for t in tables.values() if "age_cells_under_10_events" in t]
    flags = [t for t in tables.values() if list(t.columns) == ["setting", "region", "sex", "where", "why"]]
    assert len(summary) == 1 and len(flags) >= 1
    cells = summary[0]
    sparse = pd.concat(flags)
    sparse = sparse[sparse["where"] == "all ages"]
    assert len(sparse) >= 1  # LU00 women: 54 of 101 age cells under 10 deaths
    for r in sparse.itertuples():
        region = r.region.split(" ")[0]
        words = "deaths" if "deaths" in r.why else "births"
        s = cells[(cells.region == region) & (cells.sex == r.sex) & (cells.events_word == words)]
        assert len(s) == 1, (region, r.sex, words)
        s = s.iloc[0]
        assert r.why.startswith(f"{s.age_cells_under_10_events} of {s.age_cells} age cells")
        assert s.text.endswith(r.why) and s.flag_sparse
    flagged = {(r.region.split(" ")[0], r.sex) for r in sparse.itertuples()}
    assert {(r.region, r.sex) for r in cells[cells.flag_sparse].itertuples()} == flagged
    # the summary's caption states that denominator
    main = lu["html"][lu["html"].index("Method and data</h1>") :]  # the table moved there from the main points
    assert "hold fewer than 10 events, of all its age cells, for women (F), men (M) and both sexes (T)" in main


def test_the_text_refers_to_figures_and_tables_that_exist(lu):
    """Prose (outside the captions) names figures and tables by the numbers the report
    gives them, and every number it names belongs to a figure or table of the report."""
    from pypdf import PdfReader

    html = lu["html"]
    assert "[[" not in html  # every reference resolved
    numbered = set(re.findall(r'<span class="dn-number">((?:Figure|Table) \d+\.\d+)\.</span>', html))
    prose = re.sub(r'<(figcaption|p class="dn-caption")[^>]*>.*?</(figcaption|p)>', " ", html, flags=re.S)
    prose = re.sub(r"<(svg|style)\b.*?</\1>", " ", prose, flags=re.S)
    named = set(re.findall(r"\b((?:Figure|Table) \d+\.\d+)(?!\.</span>)", re.sub(r"<[^>]+>", " ", prose)))
    assert len({n for n in named if n.startswith("Table")}) >= 5 and len({n for n in named if n.startswith("Fig")}) >= 5
    assert named <= numbered, named - numbered
    # the PDF says the same: a reference of the summary part and the table it names
    text = " ".join(p.extract_text() for p in PdfReader(lu["o"].pdf).pages[1:3])
    assert "Table 1.1 gives" in text and "Table 1.1. Decision table" in text


def test_a_country_of_one_region_has_no_one_row_table_repeated_per_setting(lu):
    """LU is one NUTS 2 region: its indicator chapters show one table across the settings (a
    row per setting), not a one-row table in every setting's subsection."""
    html = lu["html"]
    for anchor in ("asfr", "tfr", "asmr", "life-expectancy"):
        start = html.index(f'id="{anchor}"')
        end = html.find('<section class="dn-chapter"', start + 1)
        chapter = html[start : end if end > 0 else len(html)]
        heads = []
        for table in re.findall(r"<table.*?</table>", chapter, re.S):
            rows = re.findall(r"<tbody>(.*?)</tbody>", table, re.S)[0].count("<tr")
            head = re.findall(r"<thead>(.*?)</thead>", table, re.S)[0]
            if rows == 1:
                heads.append(head)
        assert len(heads) == len(set(heads)), anchor  # no one-row table repeated
        settings_table = re.findall(r"<table.*?</table>", chapter, re.S)[-1]
        cells = re.findall(r'<td class="dn-t"[^>]*>([^<]*)</td>', settings_table)
        assert [c for c in cells if c in ("V = 1", "V = 5", "p-table v01")] == ["V = 1", "V = 5", "p-table v01"]
