"""Assemble executed notebooks into one document; render it to offline HTML and PDF.

A document is a cover, a contents list and chapters (:class:`Section`, :class:`Chapter`),
without code, prompts, cells tagged ``remove`` or ``metrics`` and metrics payloads; a notebook
whose execution failed is refused. Raw cells carry their HTML as source, their Typst in
``metadata.demonoise.typst``.
"""

from __future__ import annotations

import copy
import html as _html
import io
import os
import re
import time
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise
from pathlib import Path
from typing import Any

import nbformat
from nbformat import reader
from nbformat.v4 import new_notebook, new_raw_cell, writes

from demonoise.core.atomic import atomic_write_bytes, atomic_write_text
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.content.notebook import METRICS_MIME
from demonoise.report.content.typstsrc import Code, call, colour, markup
from demonoise.report.document.exporters import REMOVE_TAGS, DocumentHTMLExporter, DocumentPDFExporter

_ANCHOR_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")
#: A level-1 heading opening a markdown cell (after blank lines): its title.
_H1_RE = re.compile(r"\A\s*#[ \t]+(.+?)[ \t]*#*[ \t\r]*(?:\n|\Z)")
_HEADING_RE = re.compile(r"^(#{1,5})(\s)", re.M)


# =================================================================== reading
def read_notebook_text(text: str | bytes):
    """``nbformat.reads(text, as_version=4)`` without the schema validation (papermill
    validated the notebooks when it wrote them; validating again took a third of the time)."""
    return nbformat.convert(reader.reads(text), 4)


def write_notebook(nb, path: str | os.PathLike) -> Path:
    """Write ``nb`` to ``path`` atomically, the text of ``nbformat.write`` without its schema validation."""
    return atomic_write_text(path, writes(nb) + "\n")


def load_notebook(nb: Any):
    """``(NotebookNode, label)`` of a path (read by :func:`read_notebook_text`) or a loaded notebook."""
    if isinstance(nb, (str, os.PathLike)):
        path = Path(nb)
        try:
            return read_notebook_text(path.read_text(encoding="utf-8")), str(path)
        except FileNotFoundError:
            raise ReportError(f"notebook not found: {path}") from None
        except Exception as e:
            raise ReportError(f"cannot read notebook {path}: {type(e).__name__}: {e}") from None
    if isinstance(nb, Mapping) and "cells" in nb:
        return nb, str(nb.get("metadata", {}).get("title") or "<notebook>")
    raise ParameterError(f"expected a notebook path or NotebookNode, got {type(nb).__name__}")


def split_sections(nb) -> list:
    """Split an executed notebook where a markdown cell opens with a level-1 heading (the cells
    before the first go with it); the parts share its metadata (papermill's failure flag) and cells."""
    heads = [i for i, c in enumerate(nb.cells) if c["cell_type"] == "markdown" and _H1_RE.match(c["source"])]
    bounds = [0, *heads[1:], len(nb.cells)]
    return [new_notebook(metadata=nb.metadata, cells=nb.cells[a:b]) for a, b in pairwise(bounds)]


def read_metrics(nb: Any) -> dict:
    """Merge the metrics payloads a notebook displayed (:func:`~.notebook.display_metrics`).

    Raises
    ------
    ReportError
        Two payloads give a key different values (naming it).
    """
    node, label = load_notebook(nb)
    merged: dict = {}
    for i, cell in enumerate(node["cells"]):
        for payload in (o["data"][METRICS_MIME] for o in cell.get("outputs", []) if METRICS_MIME in o.get("data", {})):
            for k, v in payload.items():
                if merged.setdefault(k, v) != v:
                    raise ReportError(f"{label}: metric {k!r} given twice with different values (cell {i})")
    return merged


def _body(notebook) -> tuple[list, Any, str]:
    """A notebook's cells that belong in a document (copies), the notebook and its label;
    :class:`ReportError` if it cannot be read or failed during execution."""
    node, label = load_notebook(notebook)
    if node.get("metadata", {}).get("papermill", {}).get("exception"):
        errors = (
            f"{o.get('ename')}: {o.get('evalue')} (cell {i})"
            for i, c in enumerate(node["cells"])
            for o in c.get("outputs", [])
            if o["output_type"] == "error"
        )
        why = next(errors, "execution failed")
        raise ReportError(f"{label}: notebook failed during execution ({why}); it is not rendered")
    cells = [copy.deepcopy(c) for c in node["cells"] if not set(c["metadata"].get("tags", [])) & REMOVE_TAGS]
    for c in (c for c in cells if c["cell_type"] == "code"):
        c["outputs"] = [o for o in c["outputs"] if METRICS_MIME not in o.get("data", {})]
    return [c for c in cells if c["cell_type"] != "code" or c["outputs"]], node, label


def _take_title(cells: list) -> str | None:
    """Pop the level-1 heading that opens the first markdown cell (before any output)."""
    first = next((c for c in cells if c["cell_type"] != "raw"), None)
    m = first is not None and first["cell_type"] == "markdown" and _H1_RE.match(first["source"])
    if not m:
        return None
    first["source"] = "\n".join(first["source"][m.end() :].splitlines()).lstrip("\n")
    if not first["source"].strip():
        cells.remove(first)
    return m.group(1)


# ================================================================== assembly
@dataclass(frozen=True)
class Section:
    """A chapter of one executed notebook, with optional title and anchor; on landscape pages if ``landscape``."""

    notebook: Any
    title: str | None = None
    anchor: str | None = None
    landscape: bool = False


@dataclass(frozen=True)
class Chapter:
    """An indicator chapter: one executed notebook per noise setting, ``(label, colour,
    notebook)`` in the batch's order, each a subsection (its headings one level down); the
    cells tagged ``chapter`` are kept once, from the first setting, under the title."""

    title: str
    anchor: str
    settings: tuple[tuple[str, str, Any], ...]


def raw_cell(html_text: str, typst: str = "", **meta):
    """A raw cell of the document: its HTML as the source, its Typst twin in ``metadata.demonoise``."""
    return new_raw_cell(html_text, metadata={"demonoise": {"html": True, "typst": typst, **meta}})


def _heading(level: int, number: str, title: str, anchor: str, attrs: str) -> tuple[str, str]:
    """A numbered heading as HTML (``attrs``: its attributes) and as Typst (in the contents)."""
    return (
        f'<h{level} {attrs}><span class="dn-section-number">{number}</span>{_html.escape(title)}</h{level}>',
        f'#heading(level: {level})[#dn-num("{number}") {markup(title)}] <{anchor}>',
    )


def _chapter_cells(ch: Section | Chapter, number: int, wide: bool, new_page: bool) -> tuple[list, dict]:
    """A chapter's cells and contents entry: in print on a new page (landscape if wide) or, without
    ``new_page``, after a gap; then a section's cells or a subsection per setting."""
    if isinstance(ch, Section):
        body, node, label = _body(ch.notebook)
        title = ch.title or _take_title(body) or node.get("metadata", {}).get("title") or Path(label).stem
        slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:40] or "section"
        anchor, settings = ch.anchor or f"sec-{number}-{slug}", ()
    else:
        body, title, anchor, settings = [], ch.title, ch.anchor, ch.settings
    entry = {"title": title, "anchor": anchor, "number": str(number), "children": []}
    html, typst = _heading(1, str(number), title, anchor, 'class="dn-chapter-title"')
    page = f"#set page(flipped: {'true' if wide else 'false'})" if new_page else "#v(2em, weak: true)"
    section = f'<section class="dn-chapter{" dn-landscape" if wide else ""}" id="{anchor}">'
    head = [raw_cell(f"{section}\n{html}", f"{page}\n{typst}", chapter=str(number))]
    for j, (label, colour_css, nb) in enumerate(settings, 1):
        cells = _body(nb)[0]
        _take_title(cells)
        if j == 1:
            head += [c for c in cells if "chapter" in c["metadata"].get("tags", [])]
        entry["children"].append(sub := {"title": label, "anchor": f"{anchor}-{j}", "number": f"{number}.{j}"})
        attrs = f'class="dn-setting" id="{sub["anchor"]}" style="--dn-setting: {colour_css}"'
        html, typst = _heading(2, sub["number"], label, sub["anchor"], attrs)
        paint = colour(colour_css) if colour(colour_css) != "none" else Code("dn-accent")
        body.append(raw_cell(html, f"#dn-setting({paint})[{typst}]"))
        for c in (c for c in cells if "chapter" not in c["metadata"].get("tags", [])):
            if c["cell_type"] == "markdown":  # every heading one level down, under the setting's
                c["source"] = _HEADING_RE.sub(r"#\1\2", c["source"])
            body.append(c)
    return [*head, *body, raw_cell("</section>")], entry


def _contents(entries: list[dict]):
    def item(e):
        kids = "".join(map(item, e.get("children", [])))
        return (
            f'<li><a href="#{e["anchor"]}"><span class="dn-section-number">{e["number"]}</span>'
            f"{_html.escape(e['title'])}</a>{f'<ol>{kids}</ol>' if kids else ''}</li>"
        )

    html = f'<nav class="dn-toc" id="contents">\n<h2>Contents</h2>\n<ol>{"".join(map(item, entries))}</ol>\n</nav>'
    return raw_cell(html, call("dn-contents"))


def _cover_cells(cover, title: str, subtitle: str | None) -> list:
    """The cover: a raw cell, an executed notebook's cells or (``None``) title, subtitle and date."""
    if isinstance(cover, Mapping) and cover.get("cell_type") == "raw":
        return [copy.deepcopy(cover)]
    if cover is not None:
        return [raw_cell('<section class="dn-cover" id="cover">'), *_body(cover)[0], raw_cell("</section>")]
    today, sub = date.today().isoformat(), subtitle or ""
    html = f'<section class="dn-cover" id="cover">\n<h1>{_html.escape(title)}</h1>\n'
    html += f'<p class="dn-subtitle">{_html.escape(sub)}</p>\n' if sub else ""
    typst = f'#v(20mm)\n#block(text(size: 24pt, weight: "bold")[{markup(title)}])\n'
    typst += f"#block(text(size: 14pt, fill: dn-muted)[{markup(sub)}])\n" if sub else ""
    html += f'<p class="dn-meta">{today}</p>\n</section>'
    return [raw_cell(html, typst + f"#block(above: 1.2em, text(fill: dn-muted)[{today}])")]


def assemble(
    chapters: Sequence[Section | Chapter | Any],
    *,
    title: str,
    cover: Any = None,
    subtitle: str | None = None,
    toc: bool = True,
    source: str = "",
    run_on: bool = False,
):
    """One notebook from a cover, a contents list and ``chapters`` (:class:`Section`,
    :class:`Chapter`, path or notebook), its ``metadata.demonoise.sections`` listing them.

    ``cover``: a raw cell (:func:`raw_cell`, e.g. :func:`~.cover.cover_html`) or an executed
    notebook; default: the title, ``subtitle`` and the date. ``source``: the "Source:" of
    every figure and table. ``run_on``: in print, a chapter runs on after the one before
    unless the page orientation changes (default: every chapter opens a page).

    Raises
    ------
    ReportError
        A notebook cannot be read or failed during execution.
    ParameterError
        No chapters, an invalid or duplicate anchor.
    """
    if not chapters:
        raise ParameterError("a document needs at least one chapter")
    body, entries, used, before = [], [], {"cover", "contents"}, None
    for i, ch in enumerate(chapters, 1):
        ch = ch if isinstance(ch, (Section, Chapter)) else Section(ch)
        wide = isinstance(ch, Section) and ch.landscape  # a chapter of the orientation before runs on
        cells, entry = _chapter_cells(ch, i, wide, not run_on or wide != before)
        body, before = body + cells, wide
        entries.append(entry)
    for e in (x for c in entries for x in [c, *c["children"]]):
        if not _ANCHOR_RE.match(e["anchor"]) or e["anchor"] in used:
            why = "duplicate" if e["anchor"] in used else "invalid"
            raise ParameterError(f"{e['number']} {e['title']}: {why} anchor {e['anchor']!r}")
        used.add(e["anchor"])
    cells = _cover_cells(cover, title, subtitle) + ([_contents(entries)] if toc else []) + body
    for n, cell in enumerate(cells):  # unique ids across the merged notebooks
        cell["id"] = f"dn-{n}"
        cell["metadata"].pop("execution", None)
    return new_notebook(metadata={"title": title, "demonoise": {"sections": entries, "source": source}}, cells=cells)


# ================================================================== rendering
@dataclass
class RenderResult:
    """What rendering a document produced, or why not: ``status`` ok, skipped (up to date) or
    failed (``error`` says why); ``pdf_error`` says why ``pdf`` is ``None`` (e.g. no typst wheel);
    ``metrics`` and ``notebook_seconds``: a batch report's summary metrics and notebook time."""

    html: Path | None = None
    pdf: Path | None = None
    pdf_error: str | None = None
    html_seconds: float = 0.0
    pdf_seconds: float = 0.0
    html_bytes: int = 0
    pages: int = 0
    files: tuple[Path, ...] = ()
    status: str = "ok"
    error: str | None = None
    metrics: dict = field(default_factory=dict)
    notebook_seconds: float = 0.0


def _export(exporter, nb, name: str, what: str) -> tuple[Any, dict, float]:
    """``exporter().from_notebook_node(nb)`` and its seconds; any failure a :class:`ReportError` (``what`` failed)."""
    t0, ex = time.perf_counter(), exporter()
    try:
        out, resources = ex.from_notebook_node(nb, resources={"metadata": {"name": name, "path": ""}})
    except ReportError:
        raise
    except Exception as e:
        raise ReportError(f"{what} of {name}{ex.file_extension} failed: {type(e).__name__}: {e}") from e
    return out, resources, time.perf_counter() - t0


def render_bytes(nb: Any, name: str, pdf: bool = True) -> dict:
    """One rendering task, on any worker (nothing is written): an assembled notebook (path,
    node or ``.ipynb`` bytes) -> the HTML, its CSV files (``{relative path: bytes}``, in
    ``<name>-data/``) and the PDF typeset by Typst, as bytes; a PDF that cannot be made
    does not raise (no ``pdf``; ``pdf_error`` says why)."""
    node = read_notebook_text(nb) if isinstance(nb, bytes) else load_notebook(nb)[0]
    html, resources, seconds = _export(DocumentHTMLExporter, node, name, "HTML rendering")
    out = {"html": html.encode("utf-8"), "files": dict(sorted(resources["outputs"].items())), "html_seconds": seconds}
    if pdf:
        try:
            out["pdf"], res, out["pdf_seconds"] = _export(DocumentPDFExporter, node, name, "PDF typesetting")
            out["pages"] = res["demonoise_pages"]
        except ReportError as e:
            out["pdf_error"] = str(e) if str(e).startswith("no PDF") else f"no PDF: {e}"
    return out


def write_rendered(out: Mapping, html: str | os.PathLike, pdf: str | os.PathLike | None = None) -> RenderResult:
    """Write what :func:`render_bytes` made, atomically: the CSV files and their zip beside
    the HTML (:func:`data_zip_name`; without files a stale zip removed), the HTML, then the
    PDF (a PDF asked for but not made removes a stale one)."""
    html = Path(html)
    files = tuple(atomic_write_bytes(html.parent / rel, data) for rel, data in out["files"].items())
    zipped = html.with_name(data_zip_name(html))
    if files:
        atomic_write_bytes(zipped, _zip(out["files"]))
    else:
        zipped.unlink(missing_ok=True)
    atomic_write_bytes(html, out["html"])
    if pdf is not None and "pdf" not in out:  # not made: no stale PDF stays beside the new HTML
        Path(pdf).unlink(missing_ok=True)
    pdf = atomic_write_bytes(pdf, out["pdf"]) if pdf is not None and "pdf" in out else None
    made = {k: out[k] for k in ("pdf_error", "html_seconds", "pdf_seconds", "pages") if k in out}
    return RenderResult(html, pdf, html_bytes=html.stat().st_size, files=files, **made)


def render_document(nb: Any, html: str | os.PathLike, pdf: str | os.PathLike | None = None) -> RenderResult:
    """Render an assembled notebook to ``html`` (and ``pdf``) here; see :func:`render_bytes`."""
    return write_rendered(render_bytes(nb, Path(html).stem, pdf is not None), html, pdf)


def data_zip_name(html: str | os.PathLike) -> str:
    """The name of the zip of a document's CSV files, beside it: ``LU.html`` -> ``LU-data.zip``."""
    return f"{Path(html).stem}-data.zip"


def _zip(files: Mapping[str, bytes]) -> bytes:
    """Files (path relative to the document -> bytes) in one zip; the same files, the same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()
