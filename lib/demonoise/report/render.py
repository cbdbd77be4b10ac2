"""Assemble executed notebooks into one report; render offline HTML and PDF.

A report is a cover (a notebook, or a generated title block), a table of contents and
sections -- one executed notebook each, in order -- rendered with the ``demonoise``
nbconvert template (see ``templates/demonoise/``) into one self-contained HTML file,
then printed to PDF by headless Chromium (:mod:`.chromium`).

What reaches the report
-----------------------
* code input and ``In[]``/``Out[]`` prompts: never (``exclude_input=True`` plus
  ``exclude_input_prompt`` / ``exclude_output_prompt``, which ``exclude_input`` alone
  does not cover);
* cells tagged ``remove`` or ``metrics``: removed (nbconvert's ``TagRemovePreprocessor``);
* metrics payloads (mime type :data:`~.notebook.METRICS_MIME`) in any cell: removed;
* code cells left without output (parameters, imports): dropped;
* a notebook whose execution failed (``metadata.papermill.exception``): refused with a
  :class:`~demonoise.core.errors.ReportError` naming it -- a failed run never becomes a
  valid-looking report.

Structure of the HTML: ``<section class="dn-cover">``, ``<nav class="dn-toc">``, then
one ``<section class="dn-section" id="ANCHOR">`` per notebook, opening with
``<h1 class="dn-section-title">``; print CSS starts each section on a new A4 page and
numbers pages in the bottom margin. The section title is the caller's, else the
notebook's leading level-1 markdown heading, else ``metadata.title``, else the file
name; a leading level-1 heading is always taken out of the body (it *is* the section
heading, and would otherwise appear twice).

Offline rule (tested): no ``src=``, ``href=`` of a ``<link>``, CSS ``url()`` or
``@import`` points to ``http:``, ``https:`` or a protocol-relative ``//`` URL. Plain
hyperlinks (``<a href="https://...">`` in the notebooks' prose) are allowed: they are
references the reader may follow, not resources the page loads.
"""

from __future__ import annotations

import copy
import html as _html
import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.chromium import DEFAULT_BUDGET_MS, ChromiumNotFoundError, print_pdf
from demonoise.report.notebook import METRICS_MIME, VEGA_SPEC_CLASS
from demonoise.report.templates import TEMPLATE_NAME, find_template_dir

__all__ = [
    "DEFAULT_REMOVE_TAGS",
    "Section",
    "RenderResult",
    "load_notebook",
    "read_parameters",
    "read_metrics",
    "assemble",
    "render_html",
    "render_pdf",
    "render_report",
]

#: Cells with any of these tags never reach a rendered report.
DEFAULT_REMOVE_TAGS = frozenset({"remove", "metrics"})

_ANCHOR_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")
_H1_RE = re.compile(r"^\s*#\s+(.+?)\s*#*\s*$")


# =================================================================== reading
def load_notebook(nb: Any):
    """Return ``(NotebookNode, label)`` for a path or an already loaded notebook."""
    import nbformat

    if isinstance(nb, (str, os.PathLike)):
        path = Path(nb)
        try:
            return nbformat.read(path, as_version=4), str(path)
        except FileNotFoundError:
            raise ReportError(f"notebook not found: {path}") from None
        except Exception as e:
            raise ReportError(f"cannot read notebook {path}: {type(e).__name__}: {e}") from None
    if isinstance(nb, Mapping) and "cells" in nb:
        return nb, str(nb.get("metadata", {}).get("title") or "<notebook>")
    raise ParameterError(f"expected a notebook path or NotebookNode, got {type(nb).__name__}")


def read_parameters(nb: Any) -> dict:
    """Parameters papermill injected (``metadata.papermill.parameters``); ``{}`` if none."""
    node, _ = load_notebook(nb)
    return dict(node.get("metadata", {}).get("papermill", {}).get("parameters", {}) or {})


def read_metrics(nb: Any) -> dict:
    """Merge the metrics payloads a notebook displayed with
    :func:`~demonoise.report.notebook.display_metrics`.

    Payloads are read from every output with mime type ``METRICS_MIME`` (tagging the
    cell ``metrics`` hides it from the report; it is not needed to read it), in cell
    order, and merged into one dict.

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
            if isinstance(payload, str):  # some writers store JSON mime data as text
                payload = json.loads(payload)
            if not isinstance(payload, Mapping):
                raise ReportError(f"{label}: metrics payload in cell {i} is not a JSON object")
            for k, v in payload.items():
                if k in merged and merged[k] != v:
                    raise ReportError(f"{label}: metric {k!r} given twice with different values (cell {i})")
                merged[k] = v
    return merged


def _failure(node) -> str | None:
    pm = node.get("metadata", {}).get("papermill", {})
    if not pm.get("exception"):
        return None
    for i, cell in enumerate(node.get("cells", [])):
        for out in cell.get("outputs", []) or []:
            if out.get("output_type") == "error":
                return f"{out.get('ename')}: {out.get('evalue')} (cell {i})"
    return "execution failed"


# ================================================================== assembly
@dataclass(frozen=True)
class Section:
    """One section of a report: an executed notebook, with optional title and anchor."""

    notebook: Any
    title: str | None = None
    anchor: str | None = None


def _raw(html_text: str):
    from nbformat.v4 import new_raw_cell

    return new_raw_cell(html_text, metadata={"demonoise": {"html": True}})


def _clean_cells(node, label: str, remove_tags: frozenset) -> list:
    """Cells that belong in the report: tagged and empty code cells and metrics gone."""
    failure = _failure(node)
    if failure:
        raise ReportError(f"{label}: notebook failed during execution ({failure}); it is not rendered")
    cells = []
    for cell in node.get("cells", []):
        tags = set(cell.get("metadata", {}).get("tags", []) or [])
        if tags & remove_tags:
            continue
        cell = copy.deepcopy(cell)
        if cell.get("cell_type") == "code":
            outs = [o for o in cell.get("outputs", []) if METRICS_MIME not in (o.get("data") or {})]
            if not outs:
                continue
            cell["outputs"] = outs
        cells.append(cell)
    return cells


def _take_title(cells: list) -> str | None:
    """Pop the first level-1 heading of the first markdown cell (if it opens the cell)."""
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            if cell.get("cell_type") == "code":
                return None  # a heading after output is not the section title
            continue
        lines = cell["source"].splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines:
            m = _H1_RE.match(lines[0])
            if m:
                cell["source"] = "\n".join(lines[1:]).lstrip("\n")
                if not cell["source"].strip():
                    cells.remove(cell)
                return m.group(1)
        return None
    return None


def _slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return s[:40] or "section"


def assemble(
    sections: Sequence[Section | Any],
    *,
    title: str,
    cover: Any = None,
    subtitle: str | None = None,
    toc: bool = True,
    remove_tags: Iterable[str] = DEFAULT_REMOVE_TAGS,
):
    """Assemble one notebook from a cover and executed section notebooks.

    Parameters
    ----------
    sections : sequence of Section, path or NotebookNode
        In report order.
    title : str
        Report title (HTML ``<title>``, page footer, generated cover).
    cover : path or NotebookNode, optional
        Executed cover notebook; if omitted, a cover with ``title``, ``subtitle`` and
        the date is generated.
    subtitle : str, optional
        For the generated cover.
    toc : bool
        Include a table of contents (one entry per section).
    remove_tags : iterable of str
        Cell tags that remove a cell (default ``{"remove", "metrics"}``).

    Returns
    -------
    nbformat.NotebookNode
        ``metadata.demonoise.sections`` lists ``{"title", "anchor", "source"}``.

    Raises
    ------
    ReportError
        A notebook cannot be read or failed during execution.
    ParameterError
        No sections, an invalid or duplicate anchor.
    """
    from nbformat.v4 import new_notebook

    if not sections:
        raise ParameterError("a report needs at least one section")
    remove_tags = frozenset(remove_tags)
    secs = [s if isinstance(s, Section) else Section(s) for s in sections]

    body: list = []
    entries: list[dict] = []
    first_meta: dict = {}
    used: set[str] = {"cover", "contents"}
    for i, sec in enumerate(secs, 1):
        node, label = load_notebook(sec.notebook)
        if not first_meta:
            first_meta = dict(node.get("metadata", {}))
        cells = _clean_cells(node, label, remove_tags)
        found = _take_title(cells)  # the leading H1 always becomes the section heading
        stitle = sec.title or found or node.get("metadata", {}).get("title") or Path(label).stem
        anchor = sec.anchor or f"sec-{i}-{_slug(stitle)}"
        if not _ANCHOR_RE.match(anchor):
            raise ParameterError(f"section {i} ({label}): invalid anchor {anchor!r}")
        if anchor in used:
            raise ParameterError(f"section {i} ({label}): duplicate anchor {anchor!r}")
        used.add(anchor)
        entries.append({"title": stitle, "anchor": anchor, "source": label, "number": i})
        body.append(
            _raw(
                f'<section class="dn-section" id="{anchor}">\n'
                f'<h1 class="dn-section-title"><span class="dn-section-number">{i}</span>'
                f"{_html.escape(stitle)}</h1>"
            )
        )
        body.extend(cells)
        body.append(_raw("</section>"))

    if cover is not None:
        cnode, clabel = load_notebook(cover)
        cover_cells = [_raw('<section class="dn-cover" id="cover">')]
        cover_cells += _clean_cells(cnode, clabel, remove_tags)
        cover_cells.append(_raw("</section>"))
    else:
        sub = f'<p class="dn-subtitle">{_html.escape(subtitle)}</p>\n' if subtitle else ""
        cover_cells = [
            _raw(
                f'<section class="dn-cover" id="cover">\n<h1>{_html.escape(title)}</h1>\n{sub}'
                f'<p class="dn-meta">{date.today().isoformat()}</p>\n</section>'
            )
        ]

    toc_cells = []
    if toc:
        items = "\n".join(f'<li><a href="#{e["anchor"]}">{_html.escape(e["title"])}</a></li>' for e in entries)
        toc_cells = [_raw(f'<nav class="dn-toc" id="contents">\n<h2>Contents</h2>\n<ol>\n{items}\n</ol>\n</nav>')]

    meta = {k: v for k, v in first_meta.items() if k in ("kernelspec", "language_info")}
    meta["title"] = title
    meta["demonoise"] = {"sections": entries}
    cells = cover_cells + toc_cells + body
    for n, cell in enumerate(cells):  # unique ids across the merged notebooks
        cell["id"] = f"dn-{n}"
        cell.get("metadata", {}).pop("execution", None)
    nb = new_notebook(metadata=meta)  # (new_notebook(cells=...) would validate the old ids)
    nb.cells = cells
    return nb


# ================================================================== rendering
@dataclass(frozen=True)
class RenderResult:
    """What :func:`render_report` produced. ``pdf`` is ``None`` when no PDF was made,
    and ``pdf_error`` then says why (e.g. Chromium missing)."""

    html: Path
    pdf: Path | None
    pdf_error: str | None
    html_seconds: float
    pdf_seconds: float | None
    html_bytes: int
    sections: tuple[dict, ...] = ()

    @property
    def ok(self) -> bool:
        return self.pdf_error is None


def _css_string(text: str) -> str:
    """A CSS string literal (for ``content:`` in ``@page`` margin boxes)."""
    out = []
    for ch in text.replace("\n", " "):
        if ch in '"\\' or ch in "<>&" or ord(ch) < 32:
            out.append(f"\\{ord(ch):x} ")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _page_css(title: str, note: str | None = None) -> str:
    """Print CSS: the title and page numbers in the bottom margin of every page but the
    first; with ``note`` (e.g. the data-status label of modelled data) also in the top
    margin of every page, the first included."""
    t = _css_string(title)
    top = ""
    if note:
        top = f"  @top-left {{ content: {_css_string(note)}; font: 7.5pt sans-serif; color: #8a5a00; }}\n"
    return (
        "@page {\n"
        + top
        + f"  @bottom-left {{ content: {t}; font: 8pt var(--dn-font, sans-serif); color: #5b6570; }}\n"
        '  @bottom-right { content: counter(page) " / " counter(pages); font: 8pt sans-serif; color: #5b6570; }\n'
        "}\n"
        "@page :first {\n  @bottom-left { content: none; }\n  @bottom-right { content: none; }\n}\n"
    )


def _uses_interactive_charts(nb) -> bool:
    marker = f'class="{VEGA_SPEC_CLASS}"'
    for cell in nb.cells:
        for out in cell.get("outputs", []) or []:
            h = (out.get("data") or {}).get("text/html")
            if h and marker in (h if isinstance(h, str) else "".join(h)):
                return True
    return False


def _exporter_class():
    """nbconvert's ``HTMLExporter`` without its BeautifulSoup pass.

    After templating, ``HTMLExporter.from_notebook_node`` parses the whole page with
    BeautifulSoup only to add ``alt`` text to ``<img>`` elements and ``tabindex`` to cell
    wrappers, then serialises it again. On a report with inline SVG charts (tens of
    thousands of SVG elements) that pass took 13 of 15.7 s (measured on a 27-region
    report). The demonoise template emits charts as inline ``<svg>`` (no ``<img>``) and
    has no focusable input cells, so the pass is skipped; everything else is the
    parent's code path.
    """
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class _HTMLExporter(HTMLExporter):
        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            highlight_code = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
            resources = self._init_resources(resources)
            filter_data_type = WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            )
            self.register_filter("highlight_code", highlight_code)
            self.register_filter("filter_data_type", filter_data_type)
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return _HTMLExporter


def render_html(
    nb: Any,
    output: str | os.PathLike,
    *,
    title: str | None = None,
    footer: str | None = None,
    template_dir: str | os.PathLike | None = None,
    remove_tags: Iterable[str] = DEFAULT_REMOVE_TAGS,
    page_note: str | None = None,
) -> Path:
    """Render a notebook (usually from :func:`assemble`) to one offline HTML file.

    Parameters
    ----------
    nb : path or NotebookNode
    output : path-like
        Written atomically.
    title : str, optional
        Defaults to ``metadata.title``.
    footer : str, optional
        HTML for the page footer; default names the demonoise version.
    template_dir : path-like, optional
        Base directory of the template (see :func:`~.templates.find_template_dir`).
    remove_tags : iterable of str
        Tags removed by ``TagRemovePreprocessor`` (again: ``nb`` may not come from
        :func:`assemble`).
    page_note : str, optional
        Printed in the top margin of every PDF page (e.g. "demonstration data: ...").

    Raises
    ------
    ReportError
        Template not found, or nbconvert failed.
    """
    from nbconvert.preprocessors import TagRemovePreprocessor

    from demonoise.core.version import __version__

    node, label = load_notebook(nb)
    base = find_template_dir(template_dir)
    title = title or node.get("metadata", {}).get("title") or Path(label).stem
    exporter = _exporter_class()(
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(base)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    tags = frozenset(remove_tags)
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=set(tags), enabled=True), enabled=True)
    vega_js = None
    if _uses_interactive_charts(node):
        import vl_convert as vlc

        vega_js = vlc.javascript_bundle()
    dn = {
        "title": title,
        "version": __version__,
        "footer": footer if footer is not None else f"Produced with demonoise {_html.escape(__version__)}.",
        "page_css": _page_css(title, page_note),
        "vega_js": vega_js,
    }
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is not able to be represented.*")
            body, _ = exporter.from_notebook_node(node, resources={"demonoise": dn, "metadata": {"name": title}})
    except ReportError:
        raise
    except Exception as e:
        raise ReportError(f"HTML rendering of {label} failed: {type(e).__name__}: {e}") from e
    return atomic_write_text(output, body)


def render_pdf(
    html: str | os.PathLike,
    pdf: str | os.PathLike,
    *,
    chromium: str | os.PathLike | None = None,
    budget_ms: int = DEFAULT_BUDGET_MS,
    timeout: float = 180.0,
) -> Path:
    """Print an offline HTML report to PDF with headless Chromium (atomic write).

    Raises
    ------
    ChromiumNotFoundError
        Chromium is not installed (the message says how to install it).
    ReportError
        Chromium failed or timed out.
    """
    return print_pdf(html, pdf, chromium=chromium, budget_ms=budget_ms, timeout=timeout)


def render_report(
    sections: Sequence[Section | Any],
    html: str | os.PathLike,
    pdf: str | os.PathLike | None = None,
    *,
    title: str,
    cover: Any = None,
    subtitle: str | None = None,
    toc: bool = True,
    footer: str | None = None,
    template_dir: str | os.PathLike | None = None,
    chromium: str | os.PathLike | None = None,
    remove_tags: Iterable[str] = DEFAULT_REMOVE_TAGS,
    pdf_timeout: float = 180.0,
    page_note: str | None = None,
) -> RenderResult:
    """Assemble, render HTML, then (if ``pdf`` is given) print the PDF.

    A PDF failure -- Chromium missing, crashed or timed out -- does not raise: the HTML
    is kept and ``RenderResult.pdf_error`` says why there is no PDF, e.g. ``"no PDF:
    chromium not found at /usr/bin/chromium; install the Debian package chromium"``.
    Errors that prevent the HTML itself (failed notebook, missing template) raise
    :class:`~demonoise.core.errors.ReportError`. ``page_note`` is printed in the top margin
    of every PDF page (see :func:`render_html`).
    """
    nb = assemble(sections, title=title, cover=cover, subtitle=subtitle, toc=toc, remove_tags=remove_tags)
    t0 = time.perf_counter()
    html_path = render_html(
        nb, html, title=title, footer=footer, template_dir=template_dir, remove_tags=remove_tags, page_note=page_note
    )
    t_html = time.perf_counter() - t0
    pdf_path: Path | None = None
    pdf_error: str | None = None
    t_pdf: float | None = None
    if pdf is not None:
        t1 = time.perf_counter()
        try:
            pdf_path = render_pdf(html_path, pdf, chromium=chromium, timeout=pdf_timeout)
        except ChromiumNotFoundError as e:
            pdf_error = str(e)
        except ReportError as e:
            pdf_error = f"no PDF: {e}"
        t_pdf = time.perf_counter() - t1
    return RenderResult(
        html=html_path,
        pdf=pdf_path,
        pdf_error=pdf_error,
        html_seconds=t_html,
        pdf_seconds=t_pdf,
        html_bytes=html_path.stat().st_size,
        sections=tuple(nb.metadata["demonoise"]["sections"]),
    )
