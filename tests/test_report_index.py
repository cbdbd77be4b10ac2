"""output/index.html: links, statuses, errors, summary columns, offline, atomic."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest

from demonoise.core.errors import ParameterError
from demonoise.report.document.assemble import RenderResult
from demonoise.report.document.index import IndexRow, write_index
from report_helpers import no_tmp_files, scan_html


def _rows(out: Path):
    reports = out / "reports"
    reports.mkdir(parents=True)
    for name in ("BE V1.html", "BE V1.pdf", "FR.html"):
        (reports / name).write_text("x")
    render = RenderResult(
        html=reports / "FR.html",
        pdf=None,
        pdf_error="no PDF: chromium not found at /usr/bin/chromium; install the Debian package chromium",
        html_seconds=0.3,
        pdf_seconds=None,
        html_bytes=1,
    )
    return [
        IndexRow(
            "BE, V = 1",
            "ok",
            reports / "BE V1.html",
            reports / "BE V1.pdf",
            summary={"country": "BE", "V": 1, "e0 noise sd (%)": 0.033456789},
        ),
        IndexRow(
            "FR, V = 5",
            html=render.html,
            pdf=render.pdf,
            pdf_reason=render.pdf_error,
            summary={"country": "FR", "V": 5, "e0 noise sd (%)": float("nan")},
        ),
        IndexRow(
            "DE, V = 5",
            "failed",
            error="ValueError: bad <script>alert(1)</script> & co (cell 3)",
            summary={"country": "DE", "V": 5},
        ),
        IndexRow("IT, V = 1", "skipped", reports / "BE V1.html", summary={"V": 1, "extra": True}),
    ]


def test_index(tmp_path):
    out = tmp_path / "output"
    path = write_index(_rows(out), out / "index.html", title="Quality reports", intro="Two <countries>")
    text = path.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == [] and scan.scripts_with_src == []

    # every link is relative to the index and points to an existing file
    hrefs = [h for tag, h in scan.links if tag == "a"]
    assert hrefs == ["reports/BE%20V1.html", "reports/BE%20V1.pdf", "reports/FR.html", "reports/BE%20V1.html"]
    for h in hrefs:
        assert (out / urllib.parse.unquote(h)).is_file()

    rows = re.findall(r"<tr class=\"dn-row-(\w+)\">(.*?)</tr>", text, re.S)
    assert [s for s, _ in rows] == ["ok", "ok", "failed", "skipped"]
    # missing PDF: the reason instead of a link
    assert "no PDF: chromium not found at /usr/bin/chromium; install the Debian package chromium" in rows[1][1]
    # failed: error shown, HTML-escaped, no links
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co (cell 3)" in rows[2][1] and "<script>" not in text
    assert "href" not in rows[2][1]
    # summary columns in order of first appearance; numbers formatted; missing and NaN as a dash
    header = re.search(r"<thead>(.*?)</thead>", text, re.S).group(1)
    assert re.findall(r"<th>(.*?)</th>", header) == [
        "Report",
        "Status",
        "HTML",
        "PDF",
        "Data",
        "country",
        "V",
        "e0 noise sd (%)",
        "extra",
    ]
    cells0 = re.findall(r"<td[^>]*>(.*?)</td>", rows[0][1], re.S)
    assert cells0[4:] == ["&mdash;", "BE", "1", "0.03346", "\u2014"]
    assert re.findall(r"<td[^>]*>(.*?)</td>", rows[1][1], re.S)[7] == "\u2014"
    assert "4 reports: 2 ok, 1 up to date, 1 failed" in text
    assert "Two &lt;countries&gt;" in text
    assert ".dn-status-failed" in text  # the reports' stylesheet is inlined
    assert no_tmp_files(out) == []


def test_index_validation():
    with pytest.raises(ParameterError, match="status must be one of"):
        IndexRow("x", "done")
