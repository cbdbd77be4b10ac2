"""The cover of a report: who publishes it, when, with which tool, on which data.

From the params' ``publisher:`` block (without one: "demonoise demonstration -- not an official
publication"); always the tool version, the data's status and extraction date(s) (a download
date with Eurostat's last update of each table, a template's ``# extracted:`` date, or
"unknown"), the settings compared, links to the index and to the zip of the CSV files.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from demonoise.core.version import __version__
from demonoise.report.content.typstsrc import call
from demonoise.report.document.assemble import raw_cell

UNOFFICIAL = "demonoise demonstration \u2014 not an official publication"
_RE_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]|$)")


def _day(stamp: Any) -> str:
    """The date of an ISO 8601 date or time stamp (``2026-11-20T09:12:00Z`` -> ``2026-11-20``); other text as is."""
    text = str(stamp or "unknown").strip()
    return text[:10] if _RE_ISO.match(text) else text


def extraction_dates(provenance: Mapping[str, Any] | None) -> str:
    """The data's extraction date(s), e.g. ``"2026-11-20"`` or ``"2026-11-20 (deaths); ..."``;
    ``"unknown"`` once when no table's date is known."""
    dates = {t: _day(p.get("extracted")) for t, p in (provenance or {}).items() if p}
    if len(set(dates.values())) > 1:
        return "; ".join(f"{d} ({t})" for t, d in dates.items())
    return next(iter(dates.values()), "unknown")


def update_dates(provenance: Mapping[str, Any] | None) -> str:
    """The publisher's last update of each dataset code read (a fetched dataset's ``updated``), oldest
    first: ``"2025-03-28 (demo_r_d2jan); 2025-09-30 (demo_pjan, demo_magec)"``; ``""`` if none."""
    by_day: dict[str, dict] = {}  # day -> its dataset codes, in order (a dict as an ordered set)
    for p in (provenance or {}).values():
        for code, stamp in dict((p or {}).get("updated") or {}).items():
            by_day.setdefault(_day(stamp), {})[code] = None
    return "; ".join(f"{d} ({', '.join(codes)})" for d, codes in sorted(by_day.items()))


def cover_html(
    title: str,
    *,
    publisher: Any = None,
    data_status: str = "",
    provenance: Mapping[str, Any] | None = None,
    settings: Sequence[str] = (),
    dataset: str = "",
    index_href: str | None = None,
    data_zip: str | None = None,
) -> dict:
    """The cover section of a report: a raw cell of its HTML and Typst (:func:`~.assemble.raw_cell`).

    ``data_zip``: the file name of the zip of the report's CSV files beside it, linked as "Data files"."""
    esc = _html.escape
    org = getattr(publisher, "organisation", None)
    rows = [("Organisation", org), ("Contact", publisher.contact)] if org else []
    rows += [
        ("Date", (org and publisher.date) or date.today().isoformat()),
        ("Tool", f"demonoise {__version__}"),
        ("Data", f"{dataset}: {data_status}" if dataset else data_status),
        ("Data extracted", extraction_dates(provenance)),
        ("Last update by Eurostat", update_dates(provenance)),
        ("Noise settings compared", ", ".join(settings)),
    ]
    shown = [(k, str(v)) for k, v in rows if v]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in shown)
    data = ("Data files", data_zip, "(every table and figure of the report as CSV)") if data_zip else None
    if data:  # the zip's row: its file linked
        dl += f'<dt>{data[0]}</dt><dd><a class="dn-data-zip" href="{esc(data_zip)}">{esc(data_zip)}</a> {data[2]}</dd>'
    head = f'<p class="dn-org{"" if org else " dn-unofficial"}">{esc(org or UNOFFICIAL)}</p>'
    back = index_href and f'<p class="dn-backlink"><a href="{esc(index_href)}">\u2190 All reports (index)</a></p>'
    status = data_status or "data status unknown"
    html = (
        f'<section class="dn-cover" id="cover">{back or ""}'
        f'<p class="dn-data-status-line">{esc(status)}</p>'
        f"{head}<h1>{esc(title)}</h1><dl>{dl}</dl></section>"
    )
    typst = call("dn-cover", org=org or None, unofficial=UNOFFICIAL, title=title, rows=shown, status=status, data=data)
    return raw_cell(html, typst)
