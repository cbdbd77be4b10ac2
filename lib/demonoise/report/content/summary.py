"""Tables and boxes of the quality reports, shown from the results table (:func:`load_results`).
Every number and flag comes from :mod:`demonoise.analysis`; this module chooses columns,
formats the numbers (one number of decimals per column, never e-notation) and writes captions.
Tables (:class:`HtmlTable`) and boxes display themselves as HTML and as Typst of the same strings.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pandas as pd

from demonoise.analysis.settings import NoiseSetting
from demonoise.analysis.stored import results_for
from demonoise.analysis.verdicts import INDICATOR_NAMES, age_profile_rows, age_words, flag_rows, region_label
from demonoise.core.counts import DATA_STATUS_SEP, label_is_modelled
from demonoise.core.errors import ReportError
from demonoise.core.formats import fmt_fixed, fmt_int, fmt_pct
from demonoise.core.vocabulary import EVENT_WORDS, GRANULARITY_WORDS, SEX_WORDS
from demonoise.report.content import typstsrc
from demonoise.report.content.notebook import TABLE_MIME, TYPST_MIME, Shown, record_shown
from demonoise.report.content.theme import column_decimals, setting_colours


def fmt_fixed_column(values, *, significant: int = 2) -> list[str]:
    """A column of numbers with one number of decimals for all (:func:`~.theme.column_decimals`)."""
    vals = list(values)
    k = column_decimals(vals, significant=significant)
    return [fmt_fixed(v, k) for v in vals]


def fmt_percent_column(values, *, significant: int = 2) -> list[str]:
    """Proportions as per cent with one number of decimals for the column."""
    return fmt_fixed_column([100.0 * float(x) for x in values], significant=significant)


# ================================================================= selection
def load_results(path, *, setting, **where) -> pd.DataFrame:
    """The results table a report section shows (:func:`demonoise.analysis.stored.results_for`;
    ``where``: its ``dataset``, ``country``, ``granularity``, ``mc``, ``dedupe``); in a notebook
    it records what the rows hold, for the batch to check (:func:`~.notebook.record_shown`)."""
    df = results_for(path, setting=setting, **where)
    record_shown(df, setting)
    return df


# ===================================================================== tables
_NUMERIC = re.compile(r"^[\s\u2014\u202f+\-\d.,%eE()]*$")


@dataclass
class HtmlTable:
    """A formatted table that displays itself in a notebook (HTML and Typst).

    Attributes
    ----------
    frame, shown : pandas.DataFrame
        The numbers (unformatted), written as the table's CSV; the strings displayed.
    caption, note, empty : str
        The caption, a line under the table (plain text), the text instead of an empty table.
    flagged : sequence of bool
        Rows drawn with the "flagged" style (first-order result unreliable).
    colours : DataFrame, optional
        A background colour per cell of ``shown`` (same shape; ``""`` for none).
    groups : sequence of (label, span, colour)
        A header row: ``label`` over ``span`` columns (``""``: no group), underlined in ``colour``.
    name : str
        The CSV file's name (without ``.csv``); default: the table's number.
    keep : bool
        In print, keep the table on one page where it fits.
    """

    frame: pd.DataFrame
    shown: pd.DataFrame
    caption: str = ""
    flagged: Sequence[bool] = ()
    note: str = ""
    empty: str = "None."
    colours: pd.DataFrame | None = None
    groups: Sequence[tuple] = ()
    name: str = ""
    keep: bool = False

    def _numeric(self) -> list[bool]:
        """Which columns hold formatted numbers (right-aligned): digits, separators, % and dashes."""
        cols = [[str(v) for v in col if str(v) not in ("", "\u2014")] for col in self.shown.to_numpy().T]
        return [bool(c) and all(_NUMERIC.match(v) for v in c) for c in cols]

    def to_html(self) -> str:
        """The table alone (no caption: the report numbers it and prints the caption)."""
        esc = _html.escape
        if self.shown.empty:
            return f'<p class="dn-table-empty">{esc(self.empty)}</p>'
        kind = ["dn-n" if n else "dn-t" for n in self._numeric()]
        fills = [[""] * len(kind)] * len(self.shown) if self.colours is None else self.colours.to_numpy()
        flagged = list(self.flagged) or [False] * len(self.shown)
        rows = "".join(
            ('<tr class="dn-flagged">' if flag else "<tr>")
            + "".join(
                f'<td class="{k}"'
                + (f' style="background:{esc(bg)}"' if isinstance(bg, str) and bg else "")
                + f">{esc(str(v))}</td>"
                for v, k, bg in zip(r, kind, fill, strict=False)
            )
            + "</tr>"
            for r, fill, flag in zip(self.shown.itertuples(index=False), fills, flagged, strict=True)
        )
        head = "".join(f'<th class="{k}">{esc(str(c))}</th>' for c, k in zip(self.shown.columns, kind, strict=False))
        groups = "".join(
            f'<th class="dn-group" colspan="{int(span)}"'
            + (f' style="border-bottom: 2px solid {esc(colour)}"' if colour and label else "")
            + f">{esc(str(label))}</th>"
            for label, span, colour in self.groups
        )
        groups = f'<tr class="dn-groups">{groups}</tr>' if self.groups else ""
        return f'<table class="dn-table"><thead>{groups}<tr>{head}</tr></thead><tbody>{rows}</tbody></table>'

    def to_typst(self) -> str:
        """The same table as Typst (``#dn-table``, :func:`~demonoise.report.content.typstsrc.table`):
        the same shown strings, colours, groups and flagged rows."""
        if self.shown.empty:
            return f"#emph[{typstsrc.markup(self.empty)}]"
        return typstsrc.table(
            [str(c) for c in self.shown.columns],
            self.shown.itertuples(index=False),
            numeric=self._numeric(),
            fills=None if self.colours is None else self.colours.to_numpy().tolist(),
            flagged=list(self.flagged),
            groups=self.groups,
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """Its HTML and Typst, and what the exporter numbers it with: the caption, the note and
        the data (CSV of ``frame``, written as ``<name>.csv`` when it has a name)."""
        csv = "" if len(self.frame) == 0 else self.frame.to_csv(index=False, float_format="%.10g")
        meta = {"caption": self.caption, "note": self.note, "csv": csv, "empty": bool(self.shown.empty)}
        meta |= ({"name": self.name} if self.name else {}) | ({"keep": True} if self.keep else {})
        return {
            "text/html": self.to_html(),
            TABLE_MIME: meta,
            "text/plain": f"<Table: {self.caption}>",
            TYPST_MIME: self.to_typst(),
        }


def status_box(
    df_or_label, details: Sequence[str] = (), *, granularity: str | None = None, implications: str = ""
) -> Shown:
    """The data-status box at the top of every section, of a results table (its ``data_status``)
    or a label ("modelled" or "demonstration" in it: shown as modelled data), then ``details``,
    how cells are published (``granularity``) and what the data can't say (``implications``)."""
    labels = df_or_label["data_status"].unique() if isinstance(df_or_label, pd.DataFrame) else [df_or_label]
    label = "; ".join(sorted({str(x).split(DATA_STATUS_SEP)[0] for x in labels}))
    lines = list(details)
    lines += [f"Cells published by {GRANULARITY_WORDS.get(granularity, granularity)}"] if granularity else []
    lines += [f"What these data can't say: {implications}"] if implications else []
    modelled = label_is_modelled(label)
    items = "".join(f"<li>{_html.escape(d)}</li>" for d in lines)
    html = (
        f'<div class="dn-status {"dn-status-modelled" if modelled else "dn-status-real"}"><strong>Data status:'
        f"</strong> {_html.escape(label)}" + (f"<ul>{items}</ul>" if items else "") + "</div>"
    )
    return Shown(html, typstsrc.call("dn-status-box", label=label, modelled=modelled, details=lines))


def run_parameters(
    df: pd.DataFrame, *, settings: Sequence, dataset: str, granularity: str, seed: int | None = None
) -> HtmlTable:
    """The parameters of the run, as a two-column table (method and data); the Monte Carlo's
    replicates are read from the results (``mc_n``)."""
    n_mc = int(df["mc_n"].dropna().iloc[0]) if "mc_n" in df and df["mc_n"].notna().any() else 0
    mc = f"{fmt_int(n_mc)} replicates for e and the TFR" + (f", seed {seed}" if seed is not None else "")
    sets = enumerate(map(NoiseSetting.of, settings), 1)
    rows = [
        ("dataset", dataset),
        *((f"setting {i}: {s.label}", s.words.removeprefix("Noise: ")) for i, s in sets),
        ("publication granularity", GRANULARITY_WORDS.get(granularity, granularity)),
        ("Monte Carlo", mc if n_mc else "not run"),
        ("small cells", "fewer than 10 events (first order unreliable)"),
        ("disagreement flag", "|z| > 5, z = (sd_MC / sd_analytic - 1) sqrt(2N)"),
    ]
    frame = pd.DataFrame(rows, columns=["parameter", "value"])
    return HtmlTable(frame, frame, caption="Parameters of this report")


def source_of(provenance: Mapping[str, Any]) -> str:
    """``"Eurostat (demo_r_d2jan, demo_r_magec, ...)"``: the Source line of every figure; the
    publisher the tables name when it is not Eurostat (a user's counts file: its ``# source:``
    line, else ``user-supplied``)."""
    codes = sorted({c for p in provenance.values() if p for c in (p.get("datasets") or [])})
    others = sorted(
        {str(p["source"]) for p in provenance.values() if p and p.get("source") not in (None, "", "Eurostat")}
    )
    publisher = "; ".join(others) or "Eurostat"
    return f"{publisher} ({', '.join(codes)})" if codes else publisher


def provenance_notes(provenance: Mapping[str, Any] | None) -> HtmlTable:
    """Per table its status, source datasets and extraction date; under the table the note of
    each (how modelled values were made, fallbacks), a column of the CSV."""
    rows = [
        {
            "table": table,
            "status": p.get("status", ""),
            "datasets": ", ".join(p.get("datasets", ()) or ()),
            "extracted": p.get("extracted") or "unknown",
            "note": p.get("note", ""),
        }
        for table, p in (provenance or {}).items()
        if p
    ]
    frame = pd.DataFrame(rows, columns=["table", "status", "datasets", "extracted", "note"])
    notes = " ".join(f"{r['table'].capitalize()}: {r['note'].rstrip('.')}." for r in rows if r["note"])
    return HtmlTable(
        frame,
        frame.drop(columns=["note"]),
        caption=f"Data provenance (Source: {source_of(provenance or {})}); how each table was made is said under it",
        note=notes if rows else "No provenance details were passed.",
    )


def age_profile_table(df: pd.DataFrame, V, indicator: str) -> HtmlTable:
    """A by-age indicator (ASFR, ASMR) at ``V`` summarised per region
    (:func:`demonoise.analysis.verdicts.age_profile_rows`): the median admixture over the ages
    with events per sex, and for both sexes (ASFR: women) the median relative total uncertainty
    and the largest admixture (at which age), overall and among cells with at least 10 events."""
    frame = age_profile_rows(df, V, indicator)
    if frame.empty:
        return HtmlTable(frame, frame, caption="(no rows)")
    sex, sexes = "F" if indicator == "asfr" else "T", [x for x in "FMT" if f"A_median_{x}" in frame]
    ev = EVENT_WORDS[indicator][1]
    shown = pd.DataFrame({"region": frame["label"], "population": [fmt_int(x) for x in frame["population"]]})
    for x in sexes:
        shown[f"median A, {x} (%)"] = fmt_percent_column(frame[f"A_median_{x}"])
    shown[f"median rel. total, {sex} (%)"] = fmt_percent_column(frame["rel_tot_median"])
    for head, a in ((f"largest A, {sex} (age)", "A_max"), (f"largest A, {sex}, >= 10 {ev}", "A_max_reliable")):
        cells = zip(frame[a], frame[f"{a}_age"], strict=True)
        shown[head] = [f"{fmt_pct(x)} ({g})" if g else "\u2014" for x, g in cells]
    who = "women" if indicator == "asfr" else "women (F), men (M) and both sexes (T)"
    return HtmlTable(
        frame,
        shown,
        caption=f"{INDICATOR_NAMES[indicator].capitalize()} {NoiseSetting.of(V).phrase}, summarised over the ages "
        f"with {ev} per region: the median noise admixture A for {who}; for {SEX_WORDS[sex]} the median relative total "
        f"uncertainty and the largest admixture, overall and among cells with at least 10 {ev}.",
    )


def _same_decimals(col: pd.Series) -> pd.Series:
    """A column of plain numbers with the most decimals of any (``0.48, 2.4`` -> ``0.48, 2.40``)."""
    plain = [re.fullmatch(r"([\d\u202f]+)(?:\.(\d+))?", str(v)) for v in col]
    if not all(plain):
        return col
    d = max(len(m.group(2) or "") for m in plain)
    return pd.Series(
        [m.group(1) + ("." + (m.group(2) or "").ljust(d, "0") if d else "") for m in plain], index=col.index
    )


def across_settings(tables: Sequence[HtmlTable], settings: Sequence) -> HtmlTable:
    """The one-row tables of each setting (a country of one region) as one: a row per setting,
    headed by the setting instead of the region (a column only some settings have is blank for
    the others), with the first table's caption, "for each noise setting" for its setting."""
    sets = [NoiseSetting.of(s) for s in settings]
    rows = [t.shown.head(1).drop(columns=["region"], errors="ignore") for t in tables]
    table = pd.concat([r.assign(setting=s.label) for s, r in zip(sets, rows, strict=True)], ignore_index=True)
    table = table[["setting", *[c for c in table.columns if c != "setting"]]].fillna("\u2014").apply(_same_decimals)
    region = tables[0].shown["region"].iloc[0] if "region" in tables[0].shown and len(tables[0].shown) else ""
    caption = tables[0].caption.replace(f" {sets[0].phrase}", " for each noise setting", 1)
    return HtmlTable(
        pd.concat(
            [t.frame.head(1).assign(setting=s.key) for s, t in zip(sets, tables, strict=True)], ignore_index=True
        ),
        table,
        caption=f"{region}: {caption[0].lower()}{caption[1:]}" if region else caption,
        note=tables[0].note,
    )


class Coloured(NamedTuple):
    """A column's cells each with its background colour (``""`` for none), for :func:`grouped`."""

    texts: Sequence[str]
    colours: Sequence[str]


def grouped(frame: pd.DataFrame, base: Mapping[str, Sequence], blocks: Sequence[tuple], **table) -> HtmlTable:
    """A wide table of ``frame``: the columns of ``base`` (name -> cells: strings or
    :class:`Coloured`), then a column group per block ``(label, colour, columns)`` (names may
    repeat between groups; without blocks no group row); ``table``: the other fields of the
    :class:`HtmlTable`."""
    cols = [*base.items(), *(c for _, _, b in blocks for c in b.items())]
    cells = [(list(v.texts), list(v.colours)) if isinstance(v, Coloured) else (list(v), None) for _, v in cols]
    shown = pd.DataFrame({i: t for i, (t, _) in enumerate(cells)})
    shown.columns = [k for k, _ in cols]
    if any(c is not None for _, c in cells):
        table["colours"] = pd.DataFrame({i: c or [""] * len(shown) for i, (_, c) in enumerate(cells)})
    groups = [("", len(base), ""), *((label, len(b), colour) for label, colour, b in blocks)]
    return HtmlTable(frame, shown, groups=groups if blocks else (), **table)


def setting_blocks(settings: Sequence, columns) -> list[tuple]:
    """A column group of admixtures per setting for :func:`grouped`: headed "<label>: A (%)",
    underlined in the setting's colour, its columns (name -> cells) ``columns(setting)``."""
    sets = [NoiseSetting.of(s) for s in settings]
    palette = setting_colours([s.label for s in sets])
    return [(f"{s.label}: A (%)", palette[s.label], columns(s)) for s in sets]


def region_labels(frame: pd.DataFrame) -> list[str]:
    """``"FI20 Åland"`` per row of ``frame`` (:func:`~demonoise.analysis.verdicts.region_label`)."""
    return [region_label(c, n) for c, n in zip(frame["region"], frame["region_name"], strict=True)]


def by_region(frame: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    """``frame``'s rows indexed by region, one per region, in ``order`` (missing ones NaN)."""
    return frame.drop_duplicates("region").set_index("region").reindex(order)


def settings_table(
    tables: Sequence[HtmlTable], settings: Sequence, *, common: Sequence[str], per: Sequence[str], caption: str
) -> HtmlTable:
    """The tables of each setting (same regions) as one: :func:`across_settings` when each has
    one row, else the columns ``common`` once, then a column group per setting of its columns
    whose name starts with one of ``per``; ``frame`` stacks the tables' frames."""
    if all(len(t.shown) <= 1 for t in tables):
        return across_settings(tables, settings)
    sets = [NoiseSetting.of(s) for s in settings]
    palette = setting_colours([s.label for s in sets])
    first = tables[0].shown.reset_index(drop=True)
    blocks = []
    for s, t in zip(sets, tables, strict=True):
        shown = t.shown.reset_index(drop=True)
        if "region" in shown and list(shown["region"]) != list(first["region"]):
            raise ReportError(f"{s.label}: its table has other regions than the first setting's")
        mine = [c for c in shown.columns if c not in common and any(str(c).startswith(p) for p in per)]
        blocks.append((s.label, palette[s.label], {c: shown[c].fillna("") for c in mine}))
    frame = pd.concat([t.frame.assign(setting=s.key) for s, t in zip(sets, tables, strict=True)], ignore_index=True)
    base = {c: first[c].fillna("") for c in common if c in first}
    return grouped(frame, base, blocks, caption=caption, flagged=tables[0].flagged)


def age_profile_settings(df: pd.DataFrame, settings: Sequence, indicator: str) -> HtmlTable:
    """:func:`age_profile_table` of every setting as one (:func:`settings_table`): per region
    its population, then per setting the median admixture (ASFR: women, ASMR: both sexes) and
    the largest among cells with at least 10 events (at which age)."""
    sex = "F" if indicator == "asfr" else "T"
    ev = EVENT_WORDS[indicator][1]
    return settings_table(
        [age_profile_table(df, s, indicator) for s in settings],
        settings,
        common=("region", "population"),
        per=(f"median A, {sex} (%)", f"largest A, {sex}, >= 10"),
        caption=f"{INDICATOR_NAMES[indicator].capitalize()} for each noise setting (a column group per setting), "
        f"summarised over the ages with {ev} per region: the median noise admixture A for {SEX_WORDS[sex]} and the "
        f"largest admixture among cells with at least 10 {ev} (at which age).",
    )


def flag_table(
    df: pd.DataFrame, V, indicator: str, *, ages: Sequence[float] | None = None, settings: Sequence | None = None
) -> HtmlTable:
    """Where the first-order result is unreliable (:func:`demonoise.analysis.verdicts.flag_rows`):
    sparse regions and cells whose Monte Carlo sd disagrees at ``V`` (with ``settings``: at
    every setting); the first 25 rows shown, the note says how many there are."""
    limit = 25
    frame = flag_rows(df, V, indicator, ages=ages, settings=settings)
    note = f"{len(frame)} flags; the first {limit} are shown." if len(frame) > limit else ""
    shown = frame.head(limit).assign(where=lambda f: [age_words(w, indicator) for w in f["where"]])
    return HtmlTable(
        frame,
        shown,
        caption=f"Flags: {INDICATOR_NAMES[indicator]}"
        + ("" if settings is not None else f" {NoiseSetting.of(V).phrase}"),
        flagged=[True] * len(shown),
        note=note,
        empty=(
            "No region is sparse and no Monte Carlo disagreement was found (cells with fewer than 10 events "
            "are marked in the charts above)."
        ),
    )
