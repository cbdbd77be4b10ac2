"""Assemble executed notebooks into one document; render it to offline HTML and PDF.

A document is a cover, a contents list and chapters: one executed notebook
(:class:`Section`), or one indicator with a subsection per noise setting (:class:`Chapter`,
its cells tagged ``chapter`` kept once, from the first setting; the other headings one level
down). No code, no prompts; cells tagged ``remove`` or ``metrics``, metrics payloads and
code cells without output are dropped; a notebook whose execution failed is refused
(:class:`~demonoise.core.errors.ReportError`). The raw cells written here carry their HTML
as source and their Typst twin in ``metadata.demonoise.typst``, for the two exporters.

:func:`render_bytes` is one rendering task (notebook in; HTML, CSV files and PDF out as
bytes); :func:`write_rendered` writes them (the CSV files also zipped beside the HTML).
Nothing is loaded from the network.
"""

from __future__ import annotations

import copy
import html as _html
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_bytes, atomic_write_text
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.content.notebook import METRICS_MIME
from demonoise.report.content.typeset import html_to_typst
from demonoise.report.content.typstsrc import Code, call, colour, markup
from demonoise.report.document.exporters import REMOVE_TAGS

__all__ = [
    "Section",
    "Chapter",
    "RenderResult",
    "load_notebook",
    "read_metrics",
    "raw_cell",
    "split_sections",
    "read_notebook_text",
    "notebook_text",
    "write_notebook",
    "assemble",
    "render_document",
    "render_bytes",
    "write_rendered",
    "data_zip_name",
]

_ANCHOR_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")
#: A level-1 heading opening a markdown cell (after blank lines): its title.
_H1_RE = re.compile(r"\A\s*#[ \t]+(.+?)[ \t]*#*[ \t\r]*(?:\n|\Z)")
_HEADING_RE = re.compile(r"^(#{1,5})(\s)", re.M)


# =================================================================== reading
def read_notebook_text(text: str):
    """``nbformat.reads(text, as_version=4)`` without the schema validation (papermill
    validated the notebooks a batch passes between stages when it made them; validating
    again was a third of the time of reading and writing them)."""
    import nbformat
    from nbformat import reader

    return nbformat.convert(reader.reads(text), 4)


def notebook_text(nb) -> str:
    """``nbformat.writes(nb)`` without the schema validation, ending in a newline as
    ``nbformat.write`` writes it."""
    import nbformat
    from nbformat import reader

    version, _ = reader.get_version(nb)
    text = nbformat.versions[version].writes_json(nb)
    return text if text.endswith("\n") else text + "\n"


def write_notebook(nb, path: str | os.PathLike) -> Path:
    """Write ``nb`` to ``path`` atomically."""
    return atomic_write_text(path, notebook_text(nb))


def load_notebook(nb: Any):
    """Return ``(NotebookNode, label)`` for a path or an already loaded notebook (read as
    ``nbformat.read`` reads it, without the schema validation that only logs:
    read_notebook_text)."""
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
    """Split an executed notebook at its level-1 markdown headings.

    Each part starts with a markdown cell opening with ``# Title`` and becomes one
    report section (its own page, table-of-contents entry and number); cells before
    the first heading (parameters, imports) go with the first part. Every part shares the
    notebook's metadata (papermill's failure flag included) and cells (:func:`assemble`
    copies what it keeps).
    """
    from nbformat.v4 import new_notebook

    parts: list[list] = [[]]
    opened = False  # the leading cells go with the first part: a failure there must stay visible
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown" and cell.get("source", "").lstrip().startswith("# "):
            if opened:
                parts.append([])
            opened = True
        parts[-1].append(cell)
    return [new_notebook(metadata=nb.metadata, cells=cells) for cells in parts]


def read_metrics(nb: Any) -> dict:
    """Merge the metrics payloads a notebook displayed (:func:`~.notebook.display_metrics`).

    Raises
    ------
    ReportError
        A payload is not a JSON object, or two payloads give different values to the
        same key (naming the notebook and the key).
    """
    node, label = load_notebook(nb)
    merged: dict = {}
    for i, cell in enumerate(node.get("cells", [])):
        for out in cell.get("outputs", []) or []:
            payload = (out.get("data") or {}).get(METRICS_MIME)
            if payload is None:
                continue
            if isinstance(payload, str):
                payload = json.loads(payload)
            if not isinstance(payload, Mapping):
                raise ReportError(f"{label}: metrics payload in cell {i} is not a JSON object")
            for k, v in payload.items():
                if k in merged and merged[k] != v:
                    raise ReportError(f"{label}: metric {k!r} given twice with different values (cell {i})")
                merged[k] = v
    return merged


def _failure(node) -> str | None:
    if not node.get("metadata", {}).get("papermill", {}).get("exception"):
        return None
    for i, cell in enumerate(node.get("cells", [])):
        for out in cell.get("outputs", []) or []:
            if out.get("output_type") == "error":
                return f"{out.get('ename')}: {out.get('evalue')} (cell {i})"
    return "execution failed"


def _body(notebook) -> tuple[list, Any, str]:
    """A notebook's cells that belong in a document (copies; cells tagged :data:`REMOVE_TAGS`,
    metrics payloads and code cells left without output gone), the notebook and its label.

    Raises
    ------
    ReportError
        The notebook cannot be read or failed during execution.
    """
    node, label = load_notebook(notebook)
    failure = _failure(node)
    if failure:
        raise ReportError(f"{label}: notebook failed during execution ({failure}); it is not rendered")
    cells = []
    for cell in node.get("cells", []):
        if set(cell.get("metadata", {}).get("tags", []) or []) & REMOVE_TAGS:
            continue
        cell = copy.deepcopy(cell)
        if cell.get("cell_type") == "code":
            cell["outputs"] = [o for o in cell.get("outputs", []) if METRICS_MIME not in (o.get("data") or {})]
            if not cell["outputs"]:
                continue
        cells.append(cell)
    return cells, node, label


def _take_title(cells: list) -> str | None:
    """Pop the level-1 heading that opens the first markdown cell (before any output)."""
    for cell in cells:
        if cell.get("cell_type") == "code":
            return None
        if cell.get("cell_type") == "markdown":
            m = _H1_RE.match(cell["source"])
            if m:
                cell["source"] = "\n".join(cell["source"][m.end() :].splitlines()).lstrip("\n")
                if not cell["source"].strip():
                    cells.remove(cell)
            return m.group(1) if m else None
    return None


def _tagged(cell, tag: str) -> bool:
    return tag in (cell.get("metadata", {}).get("tags", []) or [])


# ================================================================== assembly
@dataclass(frozen=True)
class Section:
    """A chapter made of one executed notebook, with optional title and anchor;
    ``landscape`` prints it on landscape pages (wide tables)."""

    notebook: Any
    title: str | None = None
    anchor: str | None = None
    landscape: bool = False


@dataclass(frozen=True)
class Chapter:
    """An indicator chapter: one executed notebook per noise setting, in the batch's order.

    ``settings`` are ``(label, colour, notebook)``; ``intro`` is HTML put under the title
    (e.g. what the data can't say about this indicator)."""

    title: str
    anchor: str
    settings: tuple[tuple[str, str, Any], ...]
    intro: str = ""


def raw_cell(html_text: str, typst: str = "", **meta):
    """A raw cell of the document: its HTML as the source, its Typst twin (the PDF's) in
    ``metadata.demonoise.typst``."""
    from nbformat.v4 import new_raw_cell

    return new_raw_cell(html_text, metadata={"demonoise": {"html": True, "typst": typst, **meta}})


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "section"


def _open_chapter(number: int, title: str, anchor: str, landscape: bool = False, new_page: bool = True):
    """A chapter's opening: in the PDF a new page (landscape for wide tables) -- or, with
    ``new_page`` false (the page keeps its orientation), a gap on the page of the chapter
    before -- and a heading of level 1 (in the contents and the bookmarks)."""
    cls = "dn-chapter dn-landscape" if landscape else "dn-chapter"
    page = f"#set page(flipped: {'true' if landscape else 'false'})" if new_page else "#v(2em, weak: true)"
    typst = f'{page}\n#heading(level: 1)[#dn-num("{number}") {markup(title)}] <{anchor}>'
    return raw_cell(
        f'<section class="{cls}" id="{anchor}">\n<h1 class="dn-chapter-title">'
        f'<span class="dn-section-number">{number}</span>{_html.escape(title)}</h1>',
        typst,
        chapter=str(number),
    )


def _check_anchor(anchor: str, label: str, used: set) -> None:
    if not _ANCHOR_RE.match(anchor):
        raise ParameterError(f"{label}: invalid anchor {anchor!r}")
    if anchor in used:
        raise ParameterError(f"{label}: duplicate anchor {anchor!r}")
    used.add(anchor)


def _chapter_cells(ch: Section | Chapter, number: int, used: set, new_page: bool = True) -> tuple[list, dict]:
    """A chapter's cells (its opening, then a section's cells or a subsection per setting)
    and its entry in the contents."""
    if isinstance(ch, Section):
        body, node, label = _body(ch.notebook)
        title = ch.title or _take_title(body) or node.get("metadata", {}).get("title") or Path(label).stem
        anchor, intro, settings = ch.anchor or f"sec-{number}-{_slug(title)}", "", ()
    else:
        body, label, title, anchor, intro, settings = [], ch.title, ch.title, ch.anchor, ch.intro, ch.settings
    _check_anchor(anchor, label, used)
    entry = {"title": title, "anchor": anchor, "number": str(number), "children": []}
    head = [_open_chapter(number, title, anchor, isinstance(ch, Section) and ch.landscape, new_page)]
    if intro:
        head.append(raw_cell(intro, html_to_typst(intro)))
    for j, (label, colour_css, nb) in enumerate(settings, 1):
        cells, _, src = _body(nb)
        _take_title(cells)
        if j == 1:
            head += [c for c in cells if _tagged(c, "chapter")]
        anchor = f"{entry['anchor']}-{j}"
        _check_anchor(anchor, src, used)
        entry["children"].append({"title": label, "anchor": anchor, "number": f"{number}.{j}"})
        paint = colour(colour_css) if colour(colour_css) != "none" else Code("dn-accent")
        typst = f'#dn-setting({paint})[#heading(level: 2)[#dn-num("{number}.{j}") {markup(label)}] <{anchor}>]'
        body.append(
            raw_cell(
                f'<h2 class="dn-setting" id="{anchor}" style="--dn-setting: {colour_css}">'
                f'<span class="dn-section-number">{number}.{j}</span>{_html.escape(label)}</h2>',
                typst,
            )
        )
        for c in cells:  # every heading one level down, under the setting's
            if not _tagged(c, "chapter"):
                body.append(c)
                if c.get("cell_type") == "markdown":
                    c["source"] = _HEADING_RE.sub(r"#\1\2", c["source"])
    return [*head, *body, raw_cell("</section>")], entry


def _contents(entries: list[dict]) -> str:
    def item(e):
        kids = "".join(item(k) for k in e.get("children", []))
        sub = f"<ol>{kids}</ol>" if kids else ""
        return (
            f'<li><a href="#{e["anchor"]}"><span class="dn-section-number">{e["number"]}</span>'
            f"{_html.escape(e['title'])}</a>{sub}</li>"
        )

    return raw_cell(
        f'<nav class="dn-toc" id="contents">\n<h2>Contents</h2>\n<ol>{"".join(item(e) for e in entries)}</ol>\n</nav>',
        call("dn-contents"),
    )


def _default_cover(title: str, subtitle: str | None):
    """A cover of the title, the subtitle and the date: a raw cell (HTML and Typst)."""
    from datetime import date

    today = date.today().isoformat()
    sub = f'<p class="dn-subtitle">{_html.escape(subtitle)}</p>\n' if subtitle else ""
    html = (
        f'<section class="dn-cover" id="cover">\n<h1>{_html.escape(title)}</h1>\n{sub}'
        f'<p class="dn-meta">{today}</p>\n</section>'
    )
    typst = (
        f'#v(20mm)\n#block(text(size: 24pt, weight: "bold")[{markup(title)}])\n'
        + (f"#block(text(size: 14pt, fill: dn-muted)[{markup(subtitle)}])\n" if subtitle else "")
        + f"#block(above: 1.2em, text(fill: dn-muted)[{today}])"
    )
    return raw_cell(html, typst)


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
    notebook; default: the title, ``subtitle`` and the date. ``source``: the "Source:" of every figure and table.
    ``run_on``: in print, a chapter runs on after the one before unless the page orientation
    changes (default: every chapter opens a page).

    Raises
    ------
    ReportError
        A notebook cannot be read or failed during execution.
    ParameterError
        No chapters, an invalid or duplicate anchor.
    """
    from nbformat.v4 import new_notebook

    if not chapters:
        raise ParameterError("a document needs at least one chapter")
    body: list = []
    entries: list[dict] = []
    used: set[str] = {"cover", "contents"}
    before = None  # the orientation of the chapter before: a chapter of the same runs on
    for i, ch in enumerate(chapters, 1):
        ch = ch if isinstance(ch, (Section, Chapter)) else Section(ch)
        wide = isinstance(ch, Section) and ch.landscape
        new_page, before = not run_on or wide != before, wide
        cells, entry = _chapter_cells(ch, i, used, new_page)
        body += cells
        entries.append(entry)
    cover_cells = _cover_cells(cover, title, subtitle)
    cells = cover_cells + ([_contents(entries)] if toc else []) + body
    for n, cell in enumerate(cells):  # unique ids across the merged notebooks
        cell["id"] = f"dn-{n}"
        cell.get("metadata", {}).pop("execution", None)
    return new_notebook(metadata={"title": title, "demonoise": {"sections": entries, "source": source}}, cells=cells)


def _cover_cells(cover, title: str, subtitle: str | None) -> list:
    if cover is None:
        return [_default_cover(title, subtitle)]
    if isinstance(cover, Mapping) and cover.get("cell_type") == "raw":  # a cover cell (:func:`.cover.cover_html`)
        return [copy.deepcopy(cover)]
    return [raw_cell('<section class="dn-cover" id="cover">'), *_body(cover)[0], raw_cell("</section>")]


# ================================================================== rendering
@dataclass
class RenderResult:
    """What rendering a document produced, or why not. ``status``: ok, skipped (up to date)
    or failed (``error`` says why); ``pdf`` is ``None`` when no PDF was made, and
    ``pdf_error`` then says why (e.g. the typst wheel missing). ``metrics`` and
    ``notebook_seconds``: a batch report's summary metrics and notebook time."""

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


def _export(exporter, nb, name: str, what: str) -> tuple[Any, dict]:
    """``exporter().from_notebook_node(nb)``; any failure a :class:`ReportError` naming ``what``."""
    try:
        return exporter().from_notebook_node(nb, resources={"metadata": {"name": name, "path": ""}})
    except ReportError:
        raise
    except Exception as e:
        raise ReportError(f"{what} failed: {type(e).__name__}: {e}") from e


def render_bytes(nb: Any, name: str, pdf: bool = True) -> dict:
    """One rendering task, on any worker (nothing is written): an assembled notebook (path,
    node or ``.ipynb`` bytes) -> the HTML, its CSV files (``{relative path: bytes}``, in
    ``<name>-data/``) and the PDF typeset by Typst from the same notebook, as bytes.

    A PDF that cannot be made (the typst wheel missing, typesetting failed) does not raise:
    ``pdf`` is ``None`` and ``pdf_error`` says why.
    """
    from demonoise.report.document.exporters import DocumentHTMLExporter, DocumentPDFExporter

    node = read_notebook_text(nb.decode("utf-8")) if isinstance(nb, bytes) else load_notebook(nb)[0]
    t0 = time.perf_counter()
    html, resources = _export(DocumentHTMLExporter, node, name, f"HTML rendering of {name}.html")
    out = {"html": html.encode("utf-8"), "files": dict(sorted((resources.get("outputs") or {}).items()))}
    out.update(pdf=None, pdf_error=None, pages=0, html_seconds=time.perf_counter() - t0, pdf_seconds=None)
    if pdf:
        t1 = time.perf_counter()
        try:
            out["pdf"], resources = _export(DocumentPDFExporter, node, name, f"PDF typesetting of {name}.pdf")
            out["pages"] = resources.get("demonoise_pages", 0)
        except ReportError as e:
            out["pdf_error"] = str(e) if str(e).startswith("no PDF") else f"no PDF: {e}"
        out["pdf_seconds"] = time.perf_counter() - t1
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
    pdf_path = None
    if pdf is not None and out["pdf"] is not None:
        pdf_path = atomic_write_bytes(Path(pdf), out["pdf"])
    elif pdf is not None:
        Path(pdf).unlink(missing_ok=True)
    return RenderResult(
        html,
        pdf_path,
        out["pdf_error"],
        out["html_seconds"],
        out["pdf_seconds"] or 0.0,
        html.stat().st_size,
        out["pages"],
        files,
    )


def render_document(nb: Any, html: str | os.PathLike, pdf: str | os.PathLike | None = None) -> RenderResult:
    """Render an assembled notebook to ``html`` (and ``pdf``) here: :func:`render_bytes`
    then :func:`write_rendered`."""
    return write_rendered(render_bytes(nb, Path(html).stem, pdf is not None), html, pdf)


def data_zip_name(html: str | os.PathLike) -> str:
    """The name of the zip of a document's CSV files, beside it: ``LU.html`` -> ``LU-data.zip``."""
    return f"{Path(html).stem}-data.zip"


def _zip(files: Mapping[str, bytes]) -> bytes:
    """Files (path relative to the document -> bytes) in one zip: in name order, deflated,
    one fixed time stamp (the zip of the same files is the same bytes)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()
