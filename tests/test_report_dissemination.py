"""What a reader gets when the documents of a small batch (LU and FI, the three settings of
the showcase, the Europe overview and the teaching notebook) are copied elsewhere: every
link of every PDF (its annotations, read with pypdf) and of every HTML page finds its file
relative to the document; each report's CSV files are also in one zip beside it, linked
from its cover; every coloured admixture prints a figure of the class its colour shows;
in headless Chromium the wide tables fit the window at 1 280 and 1 920 px."""

from __future__ import annotations

import json
import math
import re
import shutil
import urllib.parse
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from demonoise.core.vocabulary import ADMIXTURE_CLASSES
from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import run_reports
from report_helpers import chromium

pytestmark = pytest.mark.slow

#: The class boundaries in per cent, written out here: noise adds a tenth; noise as large as Poisson.
SMALL, EQUAL = 10.0, 100.0 * (math.sqrt(2.0) - 1.0)


def _class_of(pct: float) -> str:
    return "small" if pct < SMALL else ("notable" if pct < EQUAL else "large")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The batch, rendered, then moved to another directory (links must not point back)."""
    made = tmp_path_factory.mktemp("made")
    params = parse_params(
        {
            "datasets": {"ess-2023": ["LU", "FI"]},
            "noise": [{"V": 1}, {"V": 5}, {"ptable": "v01"}],
            "mc": 0,
            "overview": {"dataset": "ess-2023", "countries": ["LU", "FI"]},
            "extras": ["teaching"],
        }
    )
    rep = run_reports(params, made, log=None, progress=False)
    assert rep.ok, [o.error for o in rep.outcomes.values()] + [f.error for f in rep.further]
    moved = tmp_path_factory.mktemp("moved") / "out"
    shutil.copytree(made, moved)
    shutil.rmtree(made)
    return {"out": moved, "rep": rep}


def _documents(out: Path, suffix: str) -> list[Path]:
    return sorted(p for p in out.rglob(f"*{suffix}") if "build" not in p.parts and "notebooks" not in p.parts)


# ------------------------------------------------------------------------------- links
def _local(target: str, base: Path) -> Path:
    """The file a relative link names (its fragment dropped); fails on an absolute one."""
    assert not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I), target  # no file://, no scheme
    assert not target.startswith("/"), target
    return base / urllib.parse.unquote(target.split("#")[0])


def test_every_link_annotation_of_every_pdf_finds_its_file_beside_the_pdf(batch):
    from pypdf import PdfReader

    pdfs = _documents(batch["out"], ".pdf")
    names = {p.relative_to(batch["out"]).as_posix() for p in pdfs}
    assert names == {"reports/ess-2023/LU.pdf", "reports/ess-2023/FI.pdf", "overview.pdf", "extras/teaching.pdf"}
    for pdf in pdfs:
        files = 0
        for page in PdfReader(pdf).pages:
            for annot in page.get("/Annots") or []:
                a = annot.get_object()
                action = a.get("/A") or {}
                if "/URI" in action:
                    target = _local(str(action["/URI"]), pdf.parent)
                elif action.get("/S") == "/Launch":
                    spec = action["/F"]
                    spec = spec.get_object() if hasattr(spec, "get_object") else spec
                    target = _local(str(spec.get("/F") if hasattr(spec, "get") else spec), pdf.parent)
                else:  # a link within the document
                    assert "/Dest" in a or action.get("/S") == "/GoTo", (pdf.name, a)
                    continue
                assert target.is_file(), (pdf.name, target)
                files += 1
        assert files > 5, pdf.name  # every figure and table links its CSV
    for cc in ("LU", "FI"):
        cover = PdfReader(batch["out"] / "reports" / "ess-2023" / f"{cc}.pdf").pages[0]
        uris = [str((a.get_object().get("/A") or {}).get("/URI")) for a in cover.get("/Annots") or []]
        assert f"{cc}-data.zip" in uris and "Data files" in cover.extract_text()


class _Hrefs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_every_link_of_every_html_page_finds_its_file(batch):
    pages = _documents(batch["out"], ".html")
    assert len(pages) == 5  # two reports, the overview, the teaching notebook, the index
    for page in pages:
        p = _Hrefs()
        p.feed(page.read_text(encoding="utf-8"))
        local = [h for h in p.hrefs if not h.startswith(("#", "https://", "http://", "mailto:"))]
        assert local, page.name
        for href in local:
            assert _local(href, page.parent).exists(), (page.name, href)


def test_each_report_has_a_zip_of_its_csv_files_linked_from_its_cover(batch):
    base = batch["out"] / "reports" / "ess-2023"
    for cc in ("LU", "FI"):
        csv = sorted((base / f"{cc}-data").glob("*.csv"))
        assert len(csv) > 20
        with zipfile.ZipFile(base / f"{cc}-data.zip") as z:
            assert z.namelist() == [f"{cc}-data/{p.name}" for p in csv]
            assert all(z.read(f"{cc}-data/{p.name}") == p.read_bytes() for p in csv)
            assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        html = (base / f"{cc}.html").read_text(encoding="utf-8")
        cover = html[html.index('<section class="dn-cover"') : html.index("</section>")]
        assert f'href="{cc}-data.zip"' in cover
        # and from the batch's index, relative to it
        index = (batch["out"] / "index.html").read_text(encoding="utf-8")
        assert f'href="reports/ess-2023/{cc}-data.zip"' in index


# ---------------------------------------------------------------- class and printed value
_CELL = re.compile(r'<td class="[^"]*" style="background:(#[0-9a-f]{6})">([^<]*)</td>')
_COLOURS = {c.colour: c.key for c in ADMIXTURE_CLASSES}


def _coloured_cells(html: str) -> list[tuple[str, str]]:
    """``(class key, printed text)`` of every cell coloured by an admixture class."""
    return [(_COLOURS[c], t) for c, t in _CELL.findall(html) if c in _COLOURS]


def _printed(text: str) -> tuple[float, int]:
    """The figure a cell prints (``"10.2 F"``, ``"13 % e0 LU00 (F)"``) and its decimals."""
    m = re.match(r"\s*([\d\u202f]+(?:\.(\d+))?)", text)
    return float(m.group(1).replace("\u202f", "")), len(m.group(2) or "")


def test_every_coloured_admixture_prints_a_figure_of_its_class(batch):
    """In every table of every report and in the index: the class a cell's colour shows is
    the class of the figure it prints, and no figure sits on a class boundary."""
    out = batch["out"]
    pages = [*_documents(out / "reports", ".html"), out / "index.html"]
    cells = [c for p in pages for c in _coloured_cells(p.read_text(encoding="utf-8"))]
    assert len(cells) > 100
    for key, text in cells:
        shown, _ = _printed(text)
        assert _class_of(shown) == key, (key, text)
        assert shown != SMALL, text  # "10" would read as either side of the threshold


def _decision_cells(html: str, number: str) -> list[list[tuple[str, str]]]:
    """Rows of the coloured cells of Table ``number``."""
    block = html[html.index(f'id="table-{number.replace(".", "-")}"') :]
    table = block[: block.index("</table>")]
    return [_coloured_cells(r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S) if _CELL.search(r)]


def test_each_decision_table_cell_prints_its_exact_value_rounded_in_its_class(batch):
    """Against the exact admixtures of the table's CSV: each printed figure is the value
    rounded to the figure's decimals, coloured by the value's class; the batch has values
    next to the 10 % boundary (rounded to an integer, 10), so the rule is exercised."""
    base = batch["out"] / "reports" / "ess-2023"
    near = 0
    for cc in ("LU", "FI"):
        html = (base / f"{cc}.html").read_text(encoding="utf-8")
        wide = pd.read_csv(base / f"{cc}-data" / "table-1-1.csv")  # the table as shown
        measure = re.compile(r"^(e0|e65|tfr|asfr|asmr) ")
        cols = [c for c in wide.columns if measure.match(c) and not c.endswith((" sex", " class"))]
        rows = _decision_cells(html, "1.1")
        assert len(rows) == len(wide) and all(len(r) == len(cols) for r in rows)
        for row, (_, exact) in zip(rows, wide[cols].iterrows(), strict=True):
            for (key, text), a in zip(row, exact, strict=True):
                shown, k = _printed(text)
                assert abs(shown - 100 * a) <= 0.5 * 10**-k + 1e-9, (text, a)
                assert key == _class_of(100 * a), (text, a)
                near += round(100 * a) == 10
    assert near >= 1


# ------------------------------------------------------------ wide tables in a browser
_MEASURE = """<script>
window.addEventListener('load', () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; };
  const nav = document.querySelector('nav.dn-toc');
  const side = nav && getComputedStyle(nav).position === 'fixed' ? box(nav)[1] : 0;
  const tables = [...document.querySelectorAll('table')].map((t) => {
    const b = t.closest('.dn-table-block');
    return {id: b ? b.id : '', wide: !!t.closest('.dn-landscape'), table: box(t),
            hidden: b ? b.scrollWidth - b.clientWidth : 0};
  });
  const pre = document.createElement('pre');
  pre.id = 'dn-measure';
  pre.textContent = JSON.stringify({vw: document.documentElement.clientWidth, side: side, tables: tables});
  document.body.appendChild(pre);
});
</script>"""


def _layout(page: Path, width: int, tmp: Path) -> dict:
    """Where a page's tables lie in headless Chromium at ``width`` px (a copy of the page
    with a script that measures them)."""
    from chromium_helpers import run

    copy = tmp / f"{page.stem}-{width}.html"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom = run(copy, ["--dump-dom", f"--window-size={width},1000"]).decode("utf-8", "replace")
    text = re.search(r'<pre id="dn-measure">(.*?)</pre>', dom, re.S).group(1)
    return json.loads(text.replace("&quot;", '"').replace("&amp;", "&"))


@chromium
@pytest.mark.parametrize("width", [1280, 1920])
def test_the_wide_tables_fit_the_window_beside_the_contents(batch, width, tmp_path):
    """Every table lies between the contents sidebar and the window's right edge with
    nothing scrolled out of sight; the decision table of FI (17 columns) is wider than the
    text column and leaves less than a third of the window blank on its right."""
    m = _layout(batch["out"] / "reports" / "ess-2023" / "FI.html", width, tmp_path)
    assert m["vw"] == width and m["side"] > 0  # the contents as a sidebar
    wide = [t for t in m["tables"] if t["wide"]]
    assert len(wide) >= 4
    for t in m["tables"]:
        left, right = t["table"]
        assert left >= m["side"] and right <= m["vw"], (width, t)
        assert t["hidden"] <= 1, (width, t)
    decision = next(t for t in m["tables"] if t["id"] == "table-1-1")
    assert m["vw"] - decision["table"][1] < m["vw"] / 3, (width, decision)
