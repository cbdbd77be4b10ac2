"""The report tables' column widths in print (demonoise.report.printtables), checked against
WeasyPrint's own automatic table layout of the same tables with the template's stylesheets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from demonoise.report import printtables as pt
from demonoise.report.exporter import DocumentHTMLExporter, html_to_pdf, pdf_engine_problem
from demonoise.report.summary import HtmlTable
from demonoise.report.templates import font_css

pytestmark = pytest.mark.skipif(pdf_engine_problem() is not None, reason=str(pdf_engine_problem()))

NAMES = ["DE Deutschland", "DEA1 Düsseldorf", "DE80 Mecklenburg-Vorpommern", "FRY5 Mayotte", "FI20 Åland"]


def _table(n_rows: int = 5, long_heads: bool = False, groups: bool = False) -> HtmlTable:
    rng = np.random.default_rng(7)
    people = rng.integers(20_000, 9_000_000, n_rows)
    ages = rng.integers(15, 49, n_rows)
    shown = pd.DataFrame(
        {
            "region": [NAMES[i % len(NAMES)] for i in range(n_rows)],
            "population (1 Jan.)": [f"{int(x):,}".replace(",", "\u202f") for x in people],
            "e0": [f"{x:.2f}" for x in rng.uniform(75, 85, n_rows)],
            "± N": [f"{x:.4f}" for x in rng.uniform(0, 0.2, n_rows)],
            "largest A, F (age)": [f"{x:.0f} % (Y{a})" for x, a in zip(rng.uniform(1, 90, n_rows), ages, strict=True)],
        }
    )  # fmt: skip
    if long_heads:
        for i in range(4):
            shown[f"TFR bias (10⁻⁹ children per woman) {i}"] = [f"{x:.6f}" for x in rng.normal(0, 1e-5, n_rows)]
    g = [("", 2), ("V = 1: A (%)", 2, "#e6851e"), ("p-table v01: bias", shown.shape[1] - 4, "#6a3d9a")]
    g = g if groups else ()
    return HtmlTable(frame=shown, shown=shown, caption="A table.", groups=g)


def _head() -> str:
    nb = new_notebook(cells=[new_code_cell(outputs=[new_output("display_data", data={"text/plain": "x"})])])
    html, _ = DocumentHTMLExporter().from_notebook_node(nb)
    return html[: html.index("<body")]


def _page(tables: list[str], landscape: bool = False) -> str:
    cls = "dn-chapter dn-landscape" if landscape else "dn-chapter"
    body = "".join(f'<div class="dn-table-block">{t}</div>' for t in tables)
    main = f'<main class="dn-report"><section class="{cls}">{body}</section></main>'
    return f'{_head()}<body class="dn-body">{main}</body></html>'


def _weasyprint_widths(html: str) -> list[list[float]]:
    """Column widths (pt) of every table as WeasyPrint lays the page out itself."""
    import weasyprint
    from weasyprint.text.fonts import FontConfiguration

    fonts = FontConfiguration()
    doc = weasyprint.HTML(string=html).render(
        stylesheets=[weasyprint.CSS(string=font_css(), font_config=fonts)], font_config=fonts
    )
    found = []

    def walk(box):
        if type(box).__name__ == "TableBox":
            found.append([w * 0.75 for w in box.column_widths])  # CSS px -> pt
        for child in getattr(box, "children", None) or []:
            walk(child)

    for page in doc.pages:
        walk(page._page_box)
    return found


@pytest.mark.parametrize("landscape", [False, True])
def test_column_widths_are_those_of_weasyprints_automatic_layout_with_a_little_room(landscape):
    tables = [_table().to_html(), _table(groups=True).to_html()]
    theirs = _weasyprint_widths(_page(tables, landscape))
    assert len(theirs) == 2
    for t, w in zip(tables, theirs, strict=True):
        ours = pt.column_widths(t, landscape=landscape)
        assert len(ours) == len(w)
        ratio = np.array(ours) / np.array(w)
        # never narrower (a text that fits one line there fits here), at most SLACK + kerning wider
        assert ratio.min() >= 1.0 and ratio.max() <= 1.07, ratio


def test_a_table_wider_than_the_page_is_fitted_to_the_page():
    t = _table(long_heads=True, groups=True).to_html()
    ours = pt.column_widths(t)
    assert sum(ours) == pytest.approx(pt.PAGE_WIDTH_PT)
    # WeasyPrint's automatic layout of the same table (headings may wrap; numbers do not) fits too
    (theirs,) = _weasyprint_widths(_page([t]))
    assert sum(theirs) <= pt.PAGE_WIDTH_PT + 0.01
    # each column of numbers at least as wide as its widest number (padding too), which never wraps
    shown = _table(long_heads=True).shown
    for j, c in enumerate(shown.columns):
        if c not in ("region", "largest A, F (age)"):
            widest = max(pt.text_width(v) for v in shown[c]) * pt.ROOT_PT * pt.FONT_REM
            assert ours[j] >= widest + 2 * pt.PADDING_REM * pt.ROOT_PT, c


def test_only_the_reports_own_tables_are_fixed_landscape_by_chapter():
    report = _table().to_html()
    pandas_table = pd.DataFrame({"a": [1]}).to_html(classes="dn-table")
    html = (
        f'<section class="dn-chapter dn-landscape">{report}{pandas_table}</section>'
        f'<section class="dn-chapter">{report}</section>'
    )
    out = pt.print_tables(html)
    assert pandas_table in out
    fixed = out.split('<section class="dn-chapter">')
    assert fixed[0].count("table-layout:fixed") == 1 and fixed[1].count("table-layout:fixed") == 1
    land, port = pt.column_widths(report, landscape=True), pt.column_widths(report)
    assert f"width:{land[0]:.2f}pt" in fixed[0] and f"width:{port[0]:.2f}pt" in fixed[1]
    assert land[0] < port[0]  # smaller text on a landscape page


def test_a_long_table_breaks_into_the_same_pages_as_with_the_automatic_layout(monkeypatch):
    import demonoise.report.exporter as exporter

    html = _page([_table(n_rows=150, groups=True).to_html(), _table(n_rows=40).to_html()])
    _, pages = html_to_pdf(html)
    monkeypatch.setattr(exporter, "print_tables", lambda h: h)
    _, pages_auto = html_to_pdf(html)
    assert pages == pages_auto >= 4
