"""``output/index.html``: one offline page listing every report of a batch (:class:`IndexRow`),
its links relative (the output directory moves as a whole); the template:
``templates/demonoise/batch_index.html.j2``.
"""

from __future__ import annotations

import math
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ParameterError
from demonoise.core.version import __version__
from demonoise.report.document.assemble import data_zip_name
from demonoise.report.document.templates import TEMPLATE_NAME, find_template_dir

STATUSES = ("ok", "failed", "skipped")


@dataclass(frozen=True)
class IndexRow:
    """One report in the index: its label, status (:data:`STATUSES`), HTML and PDF (or why there is
    none), a failed run's error, ``summary`` columns (``{"text": ..., "colour": ...}``: a coloured
    cell), its CSV ``files`` (one data cell) and ``links`` (label -> file, linked in that cell)."""

    name: str
    status: str = "ok"
    html: str | os.PathLike | None = None
    pdf: str | os.PathLike | None = None
    pdf_reason: str | None = None
    error: str | None = None
    summary: Mapping[str, Any] = field(default_factory=dict)
    files: tuple = ()
    links: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ParameterError(f"index row {self.name!r}: status must be one of {STATUSES}, got {self.status!r}")


def _href(target, base: Path) -> str:
    return urllib.parse.quote(Path(os.path.relpath(Path(target).resolve(), base.resolve())).as_posix())


def _cell(v: Any) -> tuple[str, str, bool]:
    """A summary cell: (text, background colour, numeric); no value or a non-finite one is a dash."""
    if isinstance(v, Mapping):
        return str(v.get("text", "")), str(v.get("colour") or ""), True
    if isinstance(v, bool):
        return ("yes" if v else "no"), "", False
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "\u2014", "", v is not None
    return (format(v, ".4g") if isinstance(v, float) else str(v)), "", isinstance(v, (int, float))


def _row(r: IndexRow, base: Path, columns: Sequence[str]) -> dict:
    """What the template shows of one row: links relative to ``base``, cells formatted."""
    data = []
    if r.files:  # written beside its HTML
        zipped = Path(r.html).with_name(data_zip_name(r.html))
        data = [(_href(f, base), label) for label, f in r.links.items()]
        data.append((_href(Path(r.files[0]).parent, base), f"all {len(r.files)} CSV"))
        data += [(_href(zipped, base), "zip")] if zipped.is_file() else []
    return {
        **vars(r),
        "html": _href(r.html, base) if r.html is not None else None,
        "pdf": _href(r.pdf, base) if r.pdf is not None else None,
        "data": data,
        "cells": [_cell(r.summary.get(c)) for c in columns],
    }


def write_index(
    rows: Iterable[IndexRow],
    path: str | os.PathLike = "output/index.html",
    *,
    title: str = "demonoise quality reports",
    intro: str | None = None,
    data_status: Mapping[str, str] | None = None,
    modelled: bool = False,
) -> Path:
    """Write the index page atomically; links are relative to its folder.

    The summary columns: every key of the ``rows``' summaries, in order of first appearance.
    ``intro``: plain text under the title. ``data_status``: dataset -> its data-status label,
    in a box above the table, styled as a warning when ``modelled``."""
    path, rows = Path(path), list(rows)
    columns = list(dict.fromkeys(k for r in rows for k in r.summary))
    here = find_template_dir() / TEMPLATE_NAME
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(here), autoescape=True, keep_trailing_newline=True)
    page = env.get_template("batch_index.html.j2").render(
        title=title,
        intro=intro,
        data_status=data_status or {},
        modelled=modelled,
        columns=columns,
        rows=[_row(r, path.parent, columns) for r in rows],
        counts={s: sum(r.status == s for r in rows) for s in STATUSES},
        when=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )
    return atomic_write_text(path, page)
