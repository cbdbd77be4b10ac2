"""``output/index.html``: one offline page listing every report of a batch.

Each row links the HTML report and the PDF (or says why there is no PDF), shows the
status (``ok`` / ``failed`` / ``skipped``) with the error of a failed run, and any
summary columns the caller supplies (e.g. country, V, noise sd of e0). Links are
relative to the index, so the output directory can be moved or zipped as a whole.
Same stylesheet as the reports, inlined; nothing is loaded from the network.
"""

from __future__ import annotations

import html as _html
import math
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.document.templates import TEMPLATE_NAME, find_template_dir

__all__ = ["IndexRow", "write_index", "STATUSES"]

STATUSES = ("ok", "failed", "skipped")

_FALLBACK_CSS = """body{font-family:"DejaVu Sans",Arial,sans-serif;margin:2rem;color:#1d232a}
table{border-collapse:collapse}td,th{padding:.3rem .7rem;border-bottom:1px solid #d5dbe1;text-align:left}
.dn-status-ok{color:#1b6e3a}.dn-status-failed{color:#a61b1b}.dn-error{color:#a61b1b;white-space:pre-wrap}"""


@dataclass(frozen=True)
class IndexRow:
    """One report in the index.

    Parameters
    ----------
    name : str
        Label of the report (e.g. ``"BE, V = 1"``).
    status : {"ok", "failed", "skipped"}
    html, pdf : path-like, optional
        The report files (absolute, or relative to the current directory).
    pdf_reason : str, optional
        Why there is no PDF (shown instead of the link).
    error : str, optional
        Error of a failed run (shown in full, HTML-escaped).
    summary : mapping
        Extra columns, in the caller's order. A value ``{"text": ..., "colour": ...}`` is a
        cell coloured by its class (e.g. an admixture class of the vocabulary).
    files : sequence of path
        The report's CSV files (linked as one "data" cell: their folder and count).
    links : mapping
        Label -> file: CSV files linked by name in the data cell (e.g. the decision table).
    """

    name: str
    status: str = "ok"
    html: Path | None = None
    pdf: Path | None = None
    pdf_reason: str | None = None
    error: str | None = None
    summary: Mapping[str, Any] = field(default_factory=dict)
    files: tuple = ()
    links: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ParameterError(f"index row {self.name!r}: status must be one of {STATUSES}, got {self.status!r}")
        for attr in ("html", "pdf"):
            v = getattr(self, attr)
            if v is not None:
                object.__setattr__(self, attr, Path(v))

    @classmethod
    def from_render(cls, name: str, result, *, summary: Mapping[str, Any] | None = None) -> IndexRow:
        """Row for a :class:`~demonoise.report.document.assemble.RenderResult`."""
        return cls(
            name=name,
            status="ok",
            html=result.html,
            pdf=result.pdf,
            pdf_reason=result.pdf_error,
            summary=dict(summary or {}),
        )


def _fmt(v: Any) -> str:
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "\u2014"
        return format(v, ".4g")
    return str(v)


def _link(target: Path | None, base: Path, text: str) -> str | None:
    if target is None:
        return None
    rel = os.path.relpath(Path(target).resolve(), base.resolve())
    href = urllib.parse.quote(Path(rel).as_posix())
    return f'<a href="{_html.escape(href)}">{_html.escape(text)}</a>'


def _data_cell(r: IndexRow, base: Path) -> str:
    if not r.files or r.status == "failed":
        return "&mdash;"
    folder = Path(r.files[0]).parent
    named = [_link(Path(f), base, label) for label, f in r.links.items()]
    every = _link(folder, base, f"all {len(r.files)} CSV") or ""
    return " &middot; ".join([*(x for x in named if x), every]) or "&mdash;"


def _summary_cell(v: Any) -> str:
    if isinstance(v, Mapping):
        colour = _html.escape(str(v.get("colour") or ""))
        style = f' style="background:{colour}"' if colour else ""
        return f'<td class="dn-num"{style}>{_html.escape(str(v.get("text", "")))}</td>'
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    return f'<td class="{"dn-num" if num else ""}">{_html.escape(_fmt(v))}</td>'


def _counts_line(items, counts) -> str:
    return f"{len(items)} reports: {counts['ok']} ok, {counts['skipped']} up to date, {counts['failed']} failed."


def _css(template_dir) -> str:
    try:
        base = find_template_dir(template_dir)
    except ReportError:
        return _FALLBACK_CSS
    return (base / TEMPLATE_NAME / "static" / "demonoise.css").read_text(encoding="utf-8")


def write_index(
    rows: Iterable[IndexRow | Mapping[str, Any]],
    path: str | os.PathLike = "output/index.html",
    *,
    title: str = "demonoise quality reports",
    columns: Sequence[str] | None = None,
    intro: str | None = None,
    data_status: Mapping[str, str] | None = None,
    modelled: bool = False,
    template_dir: str | os.PathLike | None = None,
) -> Path:
    """Write the index page (atomically).

    Parameters
    ----------
    rows : iterable of IndexRow or mapping
        Mappings are passed to :class:`IndexRow` (same keys).
    path : path-like
        Where to write ``index.html``; links are made relative to its directory.
    title : str
    columns : sequence of str, optional
        Summary columns to show, in order; default: every summary key, in order of
        first appearance.
    intro : str, optional
        Plain text shown under the title (HTML-escaped).
    data_status : mapping, optional
        Dataset name -> its data-status label (real / modelled), shown in a status box
        above the table.
    modelled : bool
        Some of the data are modelled: the status box is styled as a warning.
    template_dir : path-like, optional
        Where the stylesheet is found (see :func:`~.templates.find_template_dir`);
        without a template a minimal inline style is used.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    base = path.parent
    items = [r if isinstance(r, IndexRow) else IndexRow(**r) for r in rows]
    if columns is None:
        seen: dict[str, None] = {}
        for r in items:
            for k in r.summary:
                seen.setdefault(k, None)
        columns = list(seen)
    esc = _html.escape

    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r in items:
        html_cell = _link(r.html, base, "HTML") if r.html is not None and r.status != "failed" else None
        if r.pdf is not None and r.status != "failed":
            pdf_cell = _link(r.pdf, base, "PDF")
        elif r.pdf_reason:
            pdf_cell = f'<span class="dn-muted">{esc(r.pdf_reason)}</span>'
        else:
            pdf_cell = None
        label = "up to date" if r.status == "skipped" else r.status
        status = f'<span class="dn-status-{r.status}">{esc(label)}</span>'
        if r.error:
            status += f'<div class="dn-error">{esc(r.error)}</div>'
        cells = [
            f"<td>{esc(r.name)}</td>",
            f"<td>{status}</td>",
            f"<td>{html_cell or '&mdash;'}</td>",
            f"<td>{pdf_cell or '&mdash;'}</td>",
        ]
        cells.append(f"<td>{_data_cell(r, base)}</td>")
        for c in columns:
            cells.append(_summary_cell(r.summary.get(c)))
        body.append(f'<tr class="dn-row-{r.status}">' + "".join(cells) + "</tr>")

    counts = {s: sum(r.status == s for r in items) for s in STATUSES}
    status_box = ""
    if data_status:
        lines = "".join(f"<li><strong>{esc(k)}</strong>: {esc(v)}</li>" for k, v in data_status.items())
        status_box = (
            f'<div class="dn-status{" dn-status-modelled" if modelled else ""}"><strong>Data '
            f"status</strong><ul>{lines}</ul></div>"
        )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    from demonoise.core.version import __version__

    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta name="generator" content="demonoise {esc(__version__)}">
<title>{esc(title)}</title>
<style type="text/css">
{_css(template_dir)}
</style>
</head>
<body class="dn-body">
<main class="dn-report">
<h1>{esc(title)}</h1>
{f"<p>{esc(intro)}</p>" if intro else ""}
{status_box}
<p class="dn-muted">{_counts_line(items, counts)} Generated {when}.</p>
<table class="dn-index">
<thead><tr><th>Report</th><th>Status</th><th>HTML</th><th>PDF</th><th>Data</th>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
</table>
<footer class="dn-footer">Produced with demonoise {esc(__version__)}.</footer>
</main>
</body>
</html>
"""
    return atomic_write_text(path, page)
