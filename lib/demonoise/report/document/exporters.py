"""nbconvert exporters of the reports: offline HTML, the PDF's Typst source, and the PDF compiled
from it in this process by the ``typst`` wheel; each numbers charts and tables (:class:`DocumentPreprocessor`).
"""

from __future__ import annotations

import base64
import html as _html
import re
from functools import lru_cache

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Dict, List, Unicode, default

from demonoise.core.errors import ReportError
from demonoise.core.version import __version__
from demonoise.report.content.notebook import DATA_MIME, FIGURE_MIME, METRICS_MIME, TABLE_MIME, TYPST_MIME
from demonoise.report.content.theme import fonts_dir
from demonoise.report.content.typeset import html_to_typst, markdown_to_html, markdown_to_typst, tex_svg, tex_typst
from demonoise.report.content.typstsrc import Code, call, png_svg, string_literal
from demonoise.report.document.templates import TEMPLATE_NAME, TYPST_TEMPLATE_NAME, find_template_dir

#: Cells with any of these tags never reach a rendered report.
REMOVE_TAGS = frozenset({"remove", "metrics"})

#: A one-letter symbol with a subscript as the notebooks write it in plain text: ``e_x``,
#: ``m_x``, ``e_0``, ``e_{65}`` (not ``demo_r_find3``: the letter must start a word).
_SUBSCRIPT_RE = re.compile(r"(?<![\w.])([A-Za-z])_(\{([A-Za-z0-9+]+)\}|[A-Za-z0-9+]+)(?!\w|\.\w)")


def caption_html(text: str) -> str:
    """A caption's plain text as HTML: escaped, ``e_x`` set as the formulas set it (``<i>e</i><sub>x</sub>``)."""
    return _SUBSCRIPT_RE.sub(lambda m: f"<i>{m.group(1)}</i><sub>{m.group(3) or m.group(2)}</sub>", _html.escape(text))


def _caption_typst(text: str) -> Code:
    """The same caption as Typst content (``[#emph[e]#sub[x]]``)."""
    return Code(f"[{html_to_typst(caption_html(text))}]")


#: A reference to a figure or table by its number, in a markdown cell or a text output: ``[[table+1]]``
#: the next table, ``[[figure]]`` the last figure so far, ``[[figure+2]]`` the one after next.
_REF_RE = re.compile(r"\[\[(table|figure)([+-]\d+)?\]\]")


class DocumentPreprocessor(Preprocessor):
    """Number every chart and table (per chapter: Figure 2.3, Table 2.1), give each a caption,
    a "Source:" line and a link to its data as CSV (in ``resources["outputs"]``), as HTML and
    as Typst (:data:`TYPST_MIME`); drop cells tagged :data:`REMOVE_TAGS`, metrics payloads and
    code cells left without output. A chapter starts at a raw cell whose metadata holds
    ``demonoise.chapter`` (:func:`~.assemble.assemble`); outside chapters the numbers run 1, 2, ...
    """

    def preprocess(self, nb, resources):
        self._start(nb, resources)
        cells = [c for c in nb.cells if not REMOVE_TAGS & set(c.metadata.get("tags", ()))]
        for cell in cells:
            chapter = (cell.metadata.get("demonoise") or {}).get("chapter")
            if chapter is not None:
                self._chapter, self._count = str(chapter), {"figure": 0, "table": 0}
            if cell.cell_type == "markdown":
                cell.source = self._refs(cell.source)
            if cell.cell_type != "code":
                continue
            for o in cell.outputs:  # a data bundle's CSV files, by name
                for name, csv in ((o.get("data", {}).get(DATA_MIME) or {}).get("files") or {}).items():
                    self._csv(_safe_stem(name), csv, resources)
            shown = [o for o in cell.outputs if not {METRICS_MIME, DATA_MIME} & set(o.get("data", {}))]
            cell.outputs = [self._output(o, resources) for o in shown]
        nb.cells = [c for c in cells if c.cell_type != "code" or c.outputs]
        return nb, resources

    def _start(self, nb, resources) -> None:
        """The CSV folder (``<name>-data``), "Source:" line and counts; what the templates show."""
        name = (resources.get("metadata") or {}).get("name") or "report"
        src = (nb.metadata.get("demonoise") or {}).get("source") or ""
        self._dir = f"{name}-data"
        self._source = f"Source: {src + '; ' if src else ''}computed with demonoise {__version__}."
        resources["demonoise"] = {"title": nb.metadata.get("title") or name, "version": __version__}
        self._chapter, self._count = "", {"figure": 0, "table": 0}
        resources.setdefault("outputs", {})

    def _refs(self, text: str) -> str:
        """Text with its references (:data:`_REF_RE`) resolved to the numbers they name."""

        def number(m) -> str:
            n = self._count[m.group(1)] + int(m.group(2) or 0)
            return f"{m.group(1).capitalize()} {self._chapter + '.' if self._chapter else ''}{n}"

        return _REF_RE.sub(number, text)

    def _csv(self, stem: str, csv: str | None, resources) -> str | None:
        """``csv`` into ``resources["outputs"]`` as ``<dir>/<stem>.csv`` (made unique): its path, or None."""
        if not (stem and csv):
            return None
        path, k = f"{self._dir}/{stem}.csv", 2
        while path in resources["outputs"]:
            path, k = f"{self._dir}/{stem}-{k}.csv", k + 1
        resources["outputs"][path] = csv.encode("utf-8")
        return path

    def _output(self, out, resources):
        """An output, its references resolved; a chart or a table numbered, as HTML and as Typst."""
        data = out.get("data") or {}
        texts = ("text/markdown", "text/html", TYPST_MIME, "text/plain")  # references resolved in each
        data.update({m: self._refs(data[m]) for m in texts if isinstance(data.get(m), str)})
        kind = "figure" if FIGURE_MIME in data and "image/svg+xml" in data else None
        kind = kind or ("table" if TABLE_MIME in data and "text/html" in data else None)
        meta = data.get(FIGURE_MIME if kind == "figure" else TABLE_MIME) or {}
        if kind is None or meta.get("empty"):  # an empty table: its words ("nothing to show"), unnumbered
            return out
        self._count[kind] += 1
        number = f"{self._chapter}.{self._count[kind]}" if self._chapter else str(self._count[kind])
        ident = f"{kind}-{number.replace('.', '-')}"
        path = self._csv(_safe_stem(meta.get("name")) or ident, meta.get("csv"), resources)
        link = f' <a class="dn-csv" href="{_html.escape(path)}">Data (CSV)</a>' if path else ""
        source = f'<p class="dn-source">{_html.escape(self._source)}{link}</p>'
        html, fields = (_figure if kind == "figure" else _table)(number, ident, meta, data, source)
        name = "dn-figure" if kind == "figure" else "dn-table-block"
        typst = call(name, number=number, **fields, source=self._source, csv=path)
        out["data"] = {"text/html": html, TYPST_MIME: typst}
        return out


def _figure(number: str, ident: str, meta, data, source: str) -> tuple[str, dict]:
    """A numbered chart's HTML and the fields of its Typst (``#dn-figure``)."""
    title, sub, svg = meta.get("title") or "", meta.get("subtitle") or "", data["image/svg+xml"]
    src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    sub_html = f' <span class="dn-subtitle">{caption_html(sub)}</span>' if sub else ""
    html = (
        f'<figure class="dn-figure" id="{ident}">'
        f'<figcaption><span class="dn-number">Figure {number}.</span> {caption_html(title)}{sub_html}</figcaption>'
        f'<img class="dn-chart" alt="Figure {number}: {_html.escape(title)}" src="{src}">{source}</figure>'
    )
    alt = f"Figure {number}: {title}"
    return html, {"title": _caption_typst(title), "subtitle": _caption_typst(sub), "svg": svg, "alt": alt}


def _table(number: str, ident: str, meta, data, source: str) -> tuple[str, dict]:
    """A numbered table's HTML and the fields of its Typst (``#dn-table-block``)."""
    caption, note, keep = meta.get("caption") or "", meta.get("note") or "", bool(meta.get("keep"))
    note_html = f'<p class="dn-table-note">{caption_html(note)}</p>' if note else ""
    html = (
        f'<div class="dn-table-block{" dn-keep" if keep else ""}" id="{ident}">'
        f'<p class="dn-caption"><span class="dn-number">Table {number}.</span> {caption_html(caption)}</p>'
        f"{data['text/html']}{note_html}{source}</div>"
    )
    body = Code(f"[{data[TYPST_MIME] if TYPST_MIME in data else html_to_typst(data['text/html'])}]")  # twin or HTML
    return html, {"caption": _caption_typst(caption), "body": body, "note": _caption_typst(note), "keep": keep}


def _safe_stem(name: str | None) -> str:
    """A CSV file name stem of letters, digits, ``_`` and ``-`` only (``""`` if none is left)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(name or "")).strip("_")[:60]


class _DocumentExporter(TemplateExporter):
    """The project's templates, no code, the :class:`DocumentPreprocessor`."""

    exclude_input = Bool(True).tag(config=True)
    preprocessors = List([DocumentPreprocessor]).tag(config=True)

    @default("extra_template_basedirs")
    def _basedirs_default(self):
        return [str(find_template_dir())]


class DocumentHTMLExporter(_DocumentExporter, HTMLExporter):
    """Offline HTML (``--to demonoise_html``): the ``templates/demonoise`` template, formulas as SVG."""

    export_from_notebook = "demonoise HTML"
    template_name = Unicode(TEMPLATE_NAME).tag(config=True)
    filters = Dict({"latex2svg": lambda text: tex_svg(*_latex_parts(text))}).tag(config=True)  # text/latex as SVG

    @pass_context
    def markdown2html(self, context, source):
        """nbconvert's Markdown filter with formulas as SVG (:class:`~..content.typeset.MathRenderer`)."""
        kw = {k: getattr(self, k) for k in ("embed_images", "anchor_link_text", "exclude_anchor_links")}
        kw["path"] = context.get("resources", {}).get("metadata", {}).get("path", "")
        return markdown_to_html(source, attachments=context.get("cell", {}).get("attachments", {}), **kw)


def _latex_parts(text: str) -> tuple[str, bool]:
    """A ``text/latex`` output (``$...$``, ``$$...$$`` or ``\\[...\\]``): its TeX and whether it is displayed."""
    t = text.strip()
    body = t.strip("$") if t.startswith("$") else t.removeprefix("\\[").removesuffix("\\]")
    return body, t.startswith(("$$", "\\["))


# ------------------------------------------------------------------------------ Typst
def _markdown_typst(source: str, sticky: bool = False) -> str:
    """A markdown cell as Typst; ``sticky``: kept on the page of the chart or table it introduces."""
    body = markdown_to_typst(source)
    if sticky and body and len(source) < 800:
        return f"#block(sticky: true, width: 100%)[\n{body}\n]"
    return body


#: How the Typst exporter writes each representation of an output (a stream as text), by preference.
_TYPST_OF = {
    TYPST_MIME: str,
    "image/svg+xml": lambda v: call("dn-svg", v),
    "image/png": lambda v: call("dn-svg", png_svg(v.replace("\n", ""))),
    "text/markdown": markdown_to_typst,
    "text/latex": lambda v: tex_typst(*_latex_parts(v)),
    "text/html": html_to_typst,
    "text/plain": lambda v: call("dn-text", v),
}


def _output_typst(out) -> str:
    """One output as Typst (its first representation in :data:`_TYPST_OF`)."""
    data = {"text/plain": out["text"]} if out.get("output_type") == "stream" else out.get("data") or {}
    return next((typst(data[m]) for m, typst in _TYPST_OF.items() if m in data), "")


class DocumentTypstExporter(_DocumentExporter):
    """Typst source (``--to demonoise_typst``): ``templates/demonoise_typst``, each output as Typst, charts as SVG."""

    export_from_notebook = "demonoise Typst"
    output_mimetype = TYPST_MIME
    file_extension = Unicode(".typ").tag(config=True)
    template_extension = Unicode(".typ.j2").tag(config=True)
    template_name = Unicode(TYPST_TEMPLATE_NAME).tag(config=True)
    filters = Dict(
        {"markdown2typst": _markdown_typst, "output2typst": _output_typst, "typst_string": string_literal}
    ).tag(config=True)


# ------------------------------------------------------------------------------ PDF
def pdf_engine_problem() -> str | None:
    """Why no PDF can be made here (the ``typst`` wheel missing), else ``None``."""
    try:
        import typst  # noqa: F401
    except ImportError as e:
        return f"no PDF: the typst package is not installed ({e}); pip install typst"
    return None


@lru_cache(maxsize=1)
def _compiler():
    """One Typst compiler per process: the template's fonts only (the same PDF on every machine), else the machine's."""
    import typst

    d = fonts_dir()
    return typst.Compiler() if d is None else typst.Compiler(font_paths=[str(d)], ignore_system_fonts=True)


_PAGES_RE = re.compile(rb"/Type\s*/Pages\s*/Count\s+(\d+)")


def typst_to_pdf(source: str) -> tuple[bytes, int]:
    """Compile Typst ``source`` in this process; returns the PDF and its page count.

    Raises
    ------
    ReportError
        The typst wheel missing (:func:`pdf_engine_problem`), or the source did not compile
        (Typst's message and where).
    """
    if problem := pdf_engine_problem():
        raise ReportError(problem)
    import typst

    try:
        pdf = _compiler().compile(source.encode("utf-8"), format="pdf")
    except typst.TypstError as e:
        where = (getattr(e, "diagnostic", "") or "").strip().splitlines()[:1]
        raise ReportError(f"PDF typesetting failed: {e.message}" + (f" ({where[0]})" if where else "")) from None
    m = _PAGES_RE.search(pdf)
    return pdf, int(m.group(1)) if m else 0


class DocumentPDFExporter(DocumentTypstExporter):
    """That source compiled to PDF in-process (``--to demonoise_pdf``; :func:`typst_to_pdf`, the template's fonts)."""

    export_from_notebook = "demonoise PDF"
    output_mimetype = "application/pdf"
    file_extension = Unicode(".pdf").tag(config=True)

    def from_notebook_node(self, nb, resources=None, **kw):
        source, resources = super().from_notebook_node(nb, resources, **kw)
        pdf, resources["demonoise_pages"] = typst_to_pdf(source)
        return pdf, resources
