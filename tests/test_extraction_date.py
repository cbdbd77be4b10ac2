"""The data's extraction date: a fetched dataset records Eurostat's ``updated`` per dataset
code; a counts template carries ``# extracted: YYYY-MM-DD``; the report cover shows what is
known, and "unknown" once for the embedded extracts."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from demonoise.core.errors import FormatError, ParameterError
from demonoise.io.datasets import provenance_dict, provenance_fields
from demonoise.io.fetch import fetch_counts, fetch_panel
from demonoise.io.options import FetchOptions
from demonoise.io.template import read_counts_csv, read_panel_csv, write_counts_csv, write_panel_csv
from demonoise.report.document.cover import cover_html
from test_fetch import FAST, FIX, FakeEurostat, default_routes
from test_fetch_panel import YEARS, panel_routes

TEMPLATE = Path(__file__).parents[1] / "templates" / "counts_template.csv"


def cover_rows(cover) -> dict[str, str]:
    """The cover's ``<dt>name</dt><dd>value</dd>`` pairs (in the HTML of its cell)."""
    return dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", cover.source))


def with_line(tmp_path: Path, line: str, name: str = "c.csv") -> Path:
    """The example template with ``line`` inserted after its comment block."""
    lines = TEMPLATE.read_text(encoding="utf-8").splitlines(keepends=True)
    head = next(i for i, x in enumerate(lines) if not x.startswith("#"))
    out = tmp_path / name
    out.write_text("".join(lines[:head] + [line + "\n"] + lines[head:]), encoding="utf-8")
    return out


# ------------------------------------------------------------------------- the template
def test_extracted_line_is_read_into_every_table():
    c = read_counts_csv(TEMPLATE)
    assert {t.extracted for t in c.provenance.tables.values()} == {"unknown"}


def test_extracted_line_round_trips(tmp_path):
    src = with_line(tmp_path, "# extracted: 2025-03-28")
    c = read_counts_csv(src)
    assert {k: t.extracted for k, t in c.provenance.tables.items()} == dict.fromkeys(
        ("population", "deaths", "births"), "2025-03-28"
    )
    for name in ("a.csv", "a.csv.gz"):
        out = write_counts_csv(c, tmp_path / name, comment="own counts")
        text = gzip.decompress(out.read_bytes()).decode() if name.endswith(".gz") else out.read_text()
        assert text.splitlines()[:3] == [
            "# own counts",
            "# extracted: 2025-03-28",
            "region,sex,age,year,measure,value,name,status",
        ]
        back = read_counts_csv(out)
        assert {t.extracted for t in back.provenance.tables.values()} == {"2025-03-28"}
    again = write_counts_csv(read_counts_csv(tmp_path / "a.csv"), tmp_path / "b.csv", comment="own counts")
    assert again.read_bytes() == (tmp_path / "a.csv").read_bytes()
    # an explicit date overrides; no date known: no line
    c2 = read_counts_csv(write_counts_csv(c, tmp_path / "c.csv", extracted="2024-12-31"))
    assert {t.extracted for t in c2.provenance.tables.values()} == {"2024-12-31"}
    plain = write_counts_csv(read_counts_csv(TEMPLATE), tmp_path / "d.csv")
    assert "extracted" not in plain.read_text().split("region,", 1)[0]


def test_extracted_line_is_case_and_space_tolerant_and_may_say_unknown(tmp_path):
    c = read_counts_csv(with_line(tmp_path, "#Extracted :  2025-01-02 "))
    assert c.provenance.population.extracted == "2025-01-02"
    c = read_counts_csv(with_line(tmp_path, "# extracted: unknown"))
    assert c.provenance.population.extracted == "unknown"


@pytest.mark.parametrize("value", ["2025-13-01", "2025-02-30", "28/03/2025", "2025-3-28", "", "2025-03-28T10:00"])
def test_malformed_extraction_date_is_one_line_naming_file_and_line(tmp_path, value):
    src = with_line(tmp_path, f"# extracted: {value}")
    line = 1 + next(i for i, x in enumerate(src.read_text().splitlines()) if x.startswith("# extracted"))
    with pytest.raises(FormatError) as e:
        read_counts_csv(src)
    msg = str(e.value)
    assert "\n" not in msg and f"extraction date {value!r} is not a date YYYY-MM-DD" in msg
    assert e.value.file == str(src) and e.value.line == line == 6
    assert f"[file {src}, line {line}]" in msg


def test_a_second_extracted_line_is_refused(tmp_path):
    src = with_line(tmp_path, "# extracted: 2025-03-28\n# extracted: 2025-03-29")
    with pytest.raises(FormatError, match=r"a second '# extracted:' line \(the first is line 6\)") as e:
        read_counts_csv(src)
    assert e.value.line == 7


def test_writing_a_malformed_date_is_refused_and_writes_nothing(tmp_path):
    c = read_counts_csv(TEMPLATE)
    with pytest.raises(ParameterError, match=r"extracted: extraction date '2025/03/28' is not a date YYYY-MM-DD"):
        write_counts_csv(c, tmp_path / "x.csv", extracted="2025/03/28")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------- fetch + cover
@pytest.fixture
def eurostat():
    srv = FakeEurostat(panel_routes())
    yield srv
    srv.stop()


def test_fetched_updated_reaches_provenance_and_cover(eurostat, tmp_path, monkeypatch):
    from demonoise.io import datasets

    res = fetch_panel(YEARS, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    served = {}
    for f in (FIX / "statistics").glob("*2021-2022-2023*.json.gz"):
        d = json.loads(gzip.decompress(f.read_bytes()))
        served[d["extension"]["id"].lower()] = d["updated"]
    assert len(served) == 6
    got = {c: u for t in res.panel.provenance.tables.values() for c, u in t.updated}
    assert got == served
    # the cover, through the registry as a report gets it
    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path))
    datasets.clear_cache()
    try:
        prov = provenance_dict("eurostat-2021-2023-be")
    finally:
        datasets.clear_cache()
    assert {c: u for p in prov.values() for c, u in p["updated"].items()} == served
    rows = cover_rows(cover_html("BE", provenance=prov, dataset="eurostat-2021-2023-be", data_status="real"))
    downloaded = res.panel.provenance.population.extracted[:10]
    assert rows["Data extracted"] == downloaded and re.fullmatch(r"\d{4}-\d{2}-\d{2}", downloaded)
    assert rows["Last update by Eurostat"] == (
        "2025-03-07 (demo_r_fagec); 2025-03-14 (demo_r_magec); 2025-03-28 (demo_r_d2jan); "
        "2025-09-30 (demo_pjan); 2025-10-08 (demo_fagec); 2025-10-14 (demo_magec)"
    )
    typst = cover_html("BE", provenance=prov, dataset="x", data_status="real").metadata.demonoise.typst
    assert "Last update by Eurostat" in typst and "2025-03-28 (demo_r_d2jan)" in typst


def test_single_year_fetch_cover_groups_codes_by_date(tmp_path):
    srv = FakeEurostat(default_routes())
    try:
        res = fetch_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=srv.url, **FAST))
    finally:
        srv.stop()
    rows = cover_rows(cover_html("BE", provenance=provenance_fields(res.counts.provenance)))
    assert rows["Last update by Eurostat"] == (
        "2025-10-14 (demo_r_d2jan, demo_pjan, demo_r_magec, demo_magec, demo_r_fagec, demo_fagec)"
    )


def test_template_date_reaches_the_cover(tmp_path):
    c = read_counts_csv(with_line(tmp_path, "# extracted: 2025-06-30"))
    rows = cover_rows(cover_html("T", provenance=provenance_fields(c.provenance)))
    assert rows["Data extracted"] == "2025-06-30" and "Last update by Eurostat" not in rows


def test_multi_year_template_keeps_its_date(tmp_path):
    srv = FakeEurostat(panel_routes())
    try:
        panel = fetch_panel(YEARS, ["BE"], FetchOptions(cache_dir=tmp_path / "c", base_url=srv.url, **FAST)).panel
    finally:
        srv.stop()
    out = write_panel_csv(panel, tmp_path / "p.csv")
    day = panel.provenance.population.extracted[:10]
    assert f"# extracted: {day}" in out.read_text().split("region,", 1)[0]
    back = read_panel_csv(out)
    assert back.years == panel.years and {t.extracted for t in back.provenance.tables.values()} == {day}


def test_embedded_extracts_say_unknown_once():
    for name in ("be-2023", "be-2015-2023"):
        rows = cover_rows(cover_html("BE", provenance=provenance_dict(name), dataset=name, data_status="real"))
        assert rows["Data extracted"] == "unknown" and "Last update by Eurostat" not in rows
        assert len(re.findall(r"unknown", rows["Data extracted"])) == 1


def test_template_copy_without_date_is_unchanged(tmp_path):
    """The example template (no `# extracted:` line) still reads; writing it adds no line."""
    shutil.copy(TEMPLATE, tmp_path / "t.csv")
    c = read_counts_csv(tmp_path / "t.csv")
    text = write_counts_csv(c, tmp_path / "u.csv").read_text()
    assert text.startswith("region,sex,age,year,measure,value,name,status\n")
