"""nbconvert exporters of the reports: offline HTML, and the same HTML paged to PDF by WeasyPrint.

* :class:`DocumentHTMLExporter` (``jupyter nbconvert --to demonoise_html``): nbconvert's
  ``HTMLExporter`` with the ``templates/demonoise`` template, no code, no prompts; formulas
  typeset as SVG (:mod:`.typeset`, found by nbconvert's own Markdown parser); every chart
  and table numbered, with a "Source:" line and a link to its data as CSV
  (:class:`DocumentPreprocessor`; the CSV files go to ``resources["outputs"]``, which
  nbconvert's writer puts next to the output).
* :class:`DocumentPDFExporter` (``jupyter nbconvert --to demonoise_pdf``): that HTML laid
  out by WeasyPrint with the template's print stylesheet (CSS paged media: contents with
  page numbers, running header and footer, bookmarks from the headings). WeasyPrint was
  chosen over a browser because it needs only the system's Pango (no 470 MB Chromium, no
  root), and it writes PDF bookmarks; it is about four times slower than Chromium per page,
  so the batch renders in worker processes (it is pure Python: threads do not help).

Both are registered under the ``nbconvert.exporters`` entry point (``pyproject.toml``), as
nbconvert's own ``webpdf`` is.
"""

from __future__ import annotations

import base64
import html as _html
import io
import logging
import re

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor
from traitlets import Unicode, default

from demonoise.core.collector import fewer_collections
from demonoise.core.errors import ReportError
from demonoise.report.notebook import DATA_MIME, FIGURE_MIME, METRICS_MIME, TABLE_MIME
from demonoise.report.printtables import print_tables
from demonoise.report.templates import TEMPLATE_NAME, find_template_dir, font_css
from demonoise.report.typeset import markdown_to_html, print_formulas, tex_svg

__all__ = [
    "REMOVE_TAGS",
    "DocumentPreprocessor",
    "DocumentHTMLExporter",
    "DocumentPDFExporter",
    "pdf_engine_problem",
    "html_to_pdf",
]

#: Cells with any of these tags never reach a rendered report.
REMOVE_TAGS = frozenset({"remove", "metrics"})


def _source_line(nb) -> str:
    from demonoise.core.version import __version__

    src = (nb.metadata.get("demonoise") or {}).get("source") or ""
    return f"Source: {src + '; ' if src else ''}computed with demonoise {__version__}."


#: A one-letter symbol with a subscript as the notebooks write it in plain text: ``e_x``,
#: ``m_x``, ``e_0``, ``e_{65}`` (not ``demo_r_find3``: the letter must start a word).
_SUBSCRIPT_RE = re.compile(r"(?<![\w.])([A-Za-z])_(\{([A-Za-z0-9+]+)\}|[A-Za-z0-9+]+)(?!\w|\.\w)")


def caption_html(text: str) -> str:
    """A caption's plain text as HTML: escaped, and ``e_x``-style symbols set as an italic
    letter with its subscript (``<i>e</i><sub>x</sub>``), as the formulas of the text
    above them set them."""

    def sub(m: re.Match) -> str:
        return f"<i>{m.group(1)}</i><sub>{m.group(3) or m.group(2)}</sub>"

    return _SUBSCRIPT_RE.sub(sub, _html.escape(text))


class DocumentPreprocessor(Preprocessor):
    """Number every chart and table (per chapter: Figure 2.3, Table 2.1), give each a
    caption, a "Source:" line and a link to its data as CSV; drop metrics payloads and
    code cells left without output.

    A chapter starts at a raw cell whose metadata holds ``demonoise.chapter`` (written by
    :func:`demonoise.report.render.assemble`); outside chapters the numbers run 1, 2, ...
    """

    files_dir = Unicode("", help="Folder of the CSV files, relative to the report (default: <name>-data)").tag(
        config=True
    )

    def preprocess(self, nb, resources):
        name = (resources.get("metadata") or {}).get("name") or "report"
        self._dir = self.files_dir or f"{name}-data"
        self._source = _source_line(nb)
        self._chapter, self._count = "", {"figure": 0, "table": 0}
        self._names: set[str] = set()
        resources.setdefault("outputs", {})
        cells = []
        for cell in nb.cells:
            chapter = (cell.get("metadata", {}).get("demonoise") or {}).get("chapter")
            if chapter is not None:
                self._chapter, self._count = str(chapter), {"figure": 0, "table": 0}
            if cell.cell_type == "code":
                outs = [o for o in cell.outputs if METRICS_MIME not in o.get("data", {})]
                for o in outs:
                    self._data_files(o, resources)
                cell.outputs = [self._output(o, resources) for o in outs if DATA_MIME not in o.get("data", {})]
                if not cell.outputs:
                    continue
            cells.append(cell)
        nb.cells = cells
        return nb, resources

    def _number(self, kind: str) -> str:
        self._count[kind] += 1
        n = self._count[kind]
        return f"{self._chapter}.{n}" if self._chapter else str(n)

    def _csv_path(self, stem: str) -> str:
        """``<dir>/<stem>.csv``, made unique within the report."""
        path, k = f"{self._dir}/{stem}.csv", 2
        while path in self._names:
            path, k = f"{self._dir}/{stem}-{k}.csv", k + 1
        self._names.add(path)
        return path

    def _csv_link(self, kind: str, number: str, csv: str | None, resources, name: str = "") -> str:
        if not csv:
            return ""
        path = self._csv_path(_safe_stem(name) or f"{kind}-{number.replace('.', '-')}")
        resources["outputs"][path] = csv.encode("utf-8")
        return f' <a class="dn-csv" href="{_html.escape(path)}">Data (CSV)</a>'

    def _data_files(self, out, resources) -> None:
        """An output of :func:`~demonoise.report.notebook.data_bundle`: its CSV files, by name."""
        files = ((out.get("data") or {}).get(DATA_MIME) or {}).get("files") or {}
        for name, csv in files.items():
            stem = _safe_stem(name)
            if stem and csv:
                resources["outputs"][self._csv_path(stem)] = csv.encode("utf-8")

    def _output(self, out, resources):
        data = out.get("data") or {}
        if FIGURE_MIME in data and "image/svg+xml" in data:
            return self._figure(out, data, resources)
        if TABLE_MIME in data and "text/html" in data:
            return self._table(out, data, resources)
        return out

    def _figure(self, out, data, resources):
        meta = data[FIGURE_MIME]
        number = self._number("figure")
        title = caption_html(meta.get("title") or "")
        sub = meta.get("subtitle") or ""
        sub = f' <span class="dn-subtitle">{caption_html(sub)}</span>' if sub else ""
        svg = data["image/svg+xml"]
        svg = svg if isinstance(svg, str) else "".join(svg)
        src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
        link = self._csv_link("figure", number, meta.get("csv"), resources)
        html = (
            f'<figure class="dn-figure" id="figure-{number.replace(".", "-")}">'
            f'<figcaption><span class="dn-number">Figure {number}.</span> {title}{sub}</figcaption>'
            f'<img class="dn-chart" alt="Figure {number}: {_html.escape(meta.get("title") or "")}" src="{src}">'
            f'<p class="dn-source">{_html.escape(self._source)}{link}</p></figure>'
        )
        return _html_output(out, html)

    def _table(self, out, data, resources):
        meta = data[TABLE_MIME]
        body = data["text/html"]
        body = body if isinstance(body, str) else "".join(body)
        if meta.get("empty"):
            return _html_output(out, body)
        number = self._number("table")
        caption = caption_html(meta.get("caption") or "")
        note = meta.get("note") or ""
        note = f'<p class="dn-table-note">{caption_html(note)}</p>' if note else ""
        link = self._csv_link("table", number, meta.get("csv"), resources, meta.get("name") or "")
        keep = " dn-keep" if meta.get("keep") else ""
        html = (
            f'<div class="dn-table-block{keep}" id="table-{number.replace(".", "-")}">'
            f'<p class="dn-caption"><span class="dn-number">Table {number}.</span> {caption}</p>{body}{note}'
            f'<p class="dn-source">{_html.escape(self._source)}{link}</p></div>'
        )
        return _html_output(out, html)


def _safe_stem(name: str) -> str:
    """A CSV file name stem of letters, digits, ``_`` and ``-`` only (``""`` if none is left)."""
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(name or "")).strip("_")[:60]


def _html_output(out, html: str):
    from nbformat.v4 import new_output

    kind = out.get("output_type", "display_data")
    kind = kind if kind in ("display_data", "execute_result") else "display_data"
    if kind == "execute_result":
        return new_output(kind, data={"text/html": html}, execution_count=out.get("execution_count"))
    return new_output(kind, data={"text/html": html})


class DocumentHTMLExporter(HTMLExporter):
    """Offline HTML of a report (see the module notes). ``jupyter nbconvert --to demonoise_html``."""

    export_from_notebook = "demonoise HTML"

    @default("template_name")
    def _template_name_default(self):
        return TEMPLATE_NAME

    @default("extra_template_basedirs")
    def _basedirs_default(self):
        return [str(find_template_dir())]

    @default("exclude_input")
    def _no_input(self):
        return True

    @default("exclude_input_prompt")
    def _no_in_prompt(self):
        return True

    @default("exclude_output_prompt")
    def _no_out_prompt(self):
        return True

    def __init__(self, config=None, **kw):
        super().__init__(config=config, **kw)
        self.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=set(REMOVE_TAGS), enabled=True), True)
        self.register_preprocessor(DocumentPreprocessor(parent=self), True)

    def from_notebook_node(self, nb, resources=None, **kw):
        from demonoise.core.version import __version__

        resources = dict(resources or {})
        name = (resources.get("metadata") or {}).get("name") or "report"
        dn = {
            "title": nb.metadata.get("title") or name,
            "version": __version__,
            "footer": f"Produced with demonoise {_html.escape(__version__)}.",
            **(resources.get("demonoise") or {}),
        }
        if "vega_js" not in dn and _uses_interactive_charts(nb):
            import vl_convert as vlc

            dn["vega_js"] = vlc.javascript_bundle()
        resources["demonoise"] = dn
        return self._template_html(nb, resources, **kw)

    def _template_html(self, nb, resources, **kw):
        """The template's HTML: what ``HTMLExporter.from_notebook_node`` does (the code
        highlighter and the widget filter registered, the resources set up, the template
        rendered) without its closing pass, which parses the whole page again with
        BeautifulSoup to give an image without ``alt`` a placeholder text and the cells of a
        ``.jp-Notebook`` a ``tabindex``: the report's template has no ``.jp-Notebook``, and an
        image without ``alt`` gets the placeholder here (:func:`_alt_text`). That pass was
        more than half of the HTML's time (Czechia: 1.46 of 2.67 s under cProfile). The steps
        are those of nbconvert 7.17; ``tests/test_report_render.py`` compares the page with
        the one nbconvert's own method writes, so a change there shows in the tests."""
        from nbconvert.exporters.templateexporter import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        self.register_filter(
            "highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        )
        resources = self._init_resources(resources)
        self.register_filter(
            "filter_data_type",
            WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
        )
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return _alt_text(html), resources

    @pass_context
    def markdown2html(self, context, source):
        """nbconvert's Markdown filter with formulas as SVG (:class:`~.typeset.MathRenderer`)."""
        cell = context.get("cell", {})
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        return markdown_to_html(
            source,
            attachments=cell.get("attachments", {}),
            embed_images=self.embed_images,
            path=path,
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=self.exclude_anchor_links,
        )

    def default_filters(self):
        yield from super().default_filters()
        yield ("markdown2html", self.markdown2html)
        yield ("latex2svg", _latex_output)


#: An ``<img`` tag without an ``alt`` attribute.
_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)", re.I)


def _alt_text(html: str) -> str:
    """Every ``<img>`` without ``alt`` given nbconvert's placeholder text (as its
    ``HTMLExporter`` does)."""
    return _IMG_WITHOUT_ALT.sub('<img alt="No description has been provided for this image"', html)


def _uses_interactive_charts(nb) -> bool:
    from demonoise.report.notebook import VEGA_SPEC_CLASS

    marker = f'class="{VEGA_SPEC_CLASS}"'
    for cell in nb.cells:
        for out in cell.get("outputs", []) or []:
            h = (out.get("data") or {}).get("text/html")
            if h and marker in (h if isinstance(h, str) else "".join(h)):
                return True
    return False


def _latex_output(text: str) -> str:
    """A ``text/latex`` output (``$...$`` or ``$$...$$``) as SVG."""
    t = text.strip()
    display = t.startswith("$$") or t.startswith("\\[")
    body = t.strip("$") if t.startswith("$") else t.removeprefix("\\[").removesuffix("\\]")
    return tex_svg(body, display)


# ------------------------------------------------------------------------------ PDF
def pdf_engine_problem() -> str | None:
    """Why no PDF can be made here (WeasyPrint or the system's Pango missing), else ``None``."""
    try:
        import weasyprint  # noqa: F401
    except OSError as e:  # the system library is missing: cffi cannot open it
        first = str(e).splitlines()[0]
        return (
            "no PDF: WeasyPrint cannot load the system library Pango "
            f"({first}); install libpango-1.0-0 libpangoft2-1.0-0 (Debian) and re-run"
        )
    except ImportError as e:
        return f"no PDF: WeasyPrint is not installed ({e}); pip install weasyprint"
    return None


@fewer_collections()
def html_to_pdf(html: str, base_url: str = ".") -> tuple[bytes, int]:
    """Lay out ``html`` with its print stylesheet; returns the PDF and its page count.

    WeasyPrint builds the document's whole tree of boxes and pages before it writes; the
    garbage collector runs less often meanwhile (France's 55 pages: 6.7 s of 29 s spent in
    full collections otherwise; :mod:`demonoise.core.collector`). The formulas are laid
    out as images (:func:`~.typeset.print_formulas`), the text in the template's own
    typeface (:func:`~.templates.font_css`).

    Raises
    ------
    ReportError
        Pango missing (:func:`pdf_engine_problem`) or WeasyPrint failed.
    """
    problem = pdf_engine_problem()
    if problem:
        raise ReportError(problem)
    import weasyprint

    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    from weasyprint.text.fonts import FontConfiguration

    printed = print_tables(print_formulas(html))
    fonts = FontConfiguration()
    css = font_css()
    sheets = [weasyprint.CSS(string=css, font_config=fonts)] if css else []
    try:
        doc = weasyprint.HTML(string=printed, base_url=base_url).render(stylesheets=sheets, font_config=fonts)
        buf = io.BytesIO()
        doc.write_pdf(buf)
    except Exception as e:
        raise ReportError(f"PDF layout failed: {type(e).__name__}: {e}") from e
    return buf.getvalue(), len(doc.pages)


class DocumentPDFExporter(DocumentHTMLExporter):
    """The report HTML paged by WeasyPrint. ``jupyter nbconvert --to demonoise_pdf``."""

    export_from_notebook = "demonoise PDF"
    # as nbconvert's webpdf: the template's mimetype stays text/html, the writer is told
    # the extension through resources["output_extension"]

    def from_notebook_node(self, nb, resources=None, **kw):
        html, resources = super().from_notebook_node(nb, resources, **kw)
        base = (resources.get("metadata") or {}).get("path") or "."
        pdf, pages = html_to_pdf(html, base)
        resources["output_extension"] = ".pdf"
        resources["demonoise_pages"] = pages
        return pdf, resources
