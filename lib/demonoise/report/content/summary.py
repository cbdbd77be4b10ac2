"""Tables and boxes of the quality reports, shown from the results table.

The report notebooks are thin: they read the results table that the library computed
(:func:`load_results`) and show it with the tables of this module, the verdicts of
:mod:`demonoise.analysis.verdicts` and the chart builders of
:mod:`demonoise.report.content.charts`. Every number and every flag comes from
:mod:`demonoise.analysis`; this module chooses columns, formats the numbers (one number
of decimals per column, never e-notation) and writes captions.

Objects with ``_repr_mimebundle_`` (:class:`HtmlTable`, :class:`StatusBox`) display
themselves in a notebook, as HTML and as Typst (the PDF's) made from the same strings.
"""

from __future__ import annotations

import html as _html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from demonoise.analysis.compute import read_results
from demonoise.analysis.settings import NoiseSetting, setting_labels
from demonoise.analysis.stored import country_results, read_once
from demonoise.analysis.verdicts import (
    INDICATOR_NAMES,
    age_profile_rows,
    at,
    drop_duplicate_country,
    flag_rows,
    mc_summary,
    region_population,
)
from demonoise.core.errors import ReportError
from demonoise.core.formats import fmt_fixed, fmt_int, fmt_pct
from demonoise.core.vocabulary import (
    EVENT_WORDS,
    GRANULARITY_WORDS,
    SEX_WORDS,
)
from demonoise.report.content.notebook import record_shown

__all__ = [
    "load_results",
    "HtmlTable",
    "StatusBox",
    "status_box",
    "provenance_notes",
    "run_parameters",
    "age_profile_table",
    "flag_table",
    "fmt_fixed_column",
    "fmt_percent_column",
    "grouped",
]


# ============================================================ formatting helpers


def fmt_fixed_column(values, *, significant: int = 2) -> list[str]:
    """A column of numbers with one number of decimals for all (:func:`~.theme.column_decimals`)."""
    from demonoise.report.content.theme import column_decimals

    vals = list(values)
    k = column_decimals(vals, significant=significant)
    return [fmt_fixed(v, k) for v in vals]


def fmt_percent_column(values, *, significant: int = 2) -> list[str]:
    """Proportions as per cent with one number of decimals for the column."""
    return fmt_fixed_column([100.0 * float(x) for x in values], significant=significant)


# ================================================================= selection
def load_results(
    path,
    *,
    dataset: str,
    country: str,
    setting,
    granularity: str | None = None,
    mc: int = 0,
    dedupe: bool = True,
) -> pd.DataFrame:
    """The results table a report section shows, checked against its parameters.

    Parameters
    ----------
    path : path-like or ``""``/``None``
        Parquet (or CSV) file written by :func:`demonoise.report.batch.store.results` (what
        the batch passes). Empty: the library computes the country's table now
        (:func:`demonoise.analysis.stored.country_results`) -- a notebook run by hand.
    dataset, country, setting, granularity
        What the report shows; the table must hold the rows of the noise setting (a
        variance, ``{"V": v}`` or ``{"ptable": name}``) for that dataset, country and
        granularity.
    mc : int
        Monte Carlo replicates, only used when computing.
    dedupe : bool
        Apply :func:`drop_duplicate_country`.

    Returns
    -------
    pandas.DataFrame
        The rows of ``country`` and ``granularity`` (all ``V``'s of the table).

    Raises
    ------
    ReportError
        Missing file, or a table without the requested dataset/country/setting/granularity
        (naming what is missing).

    Notes
    -----
    In a notebook it also displays a metrics output recording what the returned rows hold
    (dataset, country, the setting asked for, every setting present), which the report
    batch checks against the run's parameters before rendering the section
    (:func:`~demonoise.report.content.notebook.record_shown`).
    """
    if not path:
        df, _ = country_results(dataset, country, [setting], granularity=granularity or "single", mc=mc)
    else:
        path = Path(path)
        if not path.exists():
            raise ReportError(f"results table not found: {path}")
        df = read_once(path, read_results)
    problems = []
    if dataset not in set(df["dataset"].unique()):
        problems.append(f"dataset {dataset!r} (has {sorted(set(df['dataset'].unique()))})")
    df = df[df["country"] == country]
    if df.empty:
        problems.append(f"country {country!r}")
    elif granularity is not None and granularity not in set(df["granularity"].unique()):
        problems.append(f"granularity {granularity!r} (has {sorted(set(df['granularity'].unique()))})")
    elif at(df, setting).empty:
        problems.append(f"{NoiseSetting.of(setting).label} (has {sorted(set(setting_labels(df)))})")
    if problems:
        raise ReportError(f"results table {path or 'computed here'} has no rows for " + "; ".join(problems))
    if granularity is not None:
        df = df[df["granularity"] == granularity]
    df = df.reset_index(drop=True)
    df = drop_duplicate_country(df) if dedupe else df
    record_shown(df, setting)
    return df


# ===================================================================== tables
_NUMERIC_RE = __import__("re").compile(r"^[\s\u2014\u202f+\-\d.,%eE()]*$")


def _looks_numeric(col: pd.Series) -> bool:
    """A column of formatted numbers (right-aligned): digits, separators, % and dashes."""
    vals = [str(v) for v in col.tolist() if str(v) not in ("", "\u2014")]
    return bool(vals) and all(_NUMERIC_RE.match(v) for v in vals)


@dataclass
class HtmlTable:
    """A formatted table that displays itself as HTML in a notebook.

    Attributes
    ----------
    frame : pandas.DataFrame
        The numbers (unformatted), for tests and further use; written as the table's CSV.
    shown : pandas.DataFrame
        The formatted strings that are displayed.
    caption : str
    flagged : sequence of bool
        Rows drawn with the "flagged" style (first-order result unreliable).
    note : str
        A line under the table (plain text).
    colours : DataFrame, optional
        A background colour per cell of ``shown`` (same shape; ``""`` for none), e.g. the
        admixture class of :data:`demonoise.core.vocabulary.ADMIXTURE_CLASSES`.
    groups : sequence of (label, span, colour)
        A header row above the column names: ``label`` over ``span`` columns (``""`` for
        columns without a group), underlined in ``colour``.
    name : str
        The CSV file's name (without ``.csv``), e.g. ``"decision"``; default: the table's number.
    keep : bool
        In print, keep the table on one page where it fits (it moves to the next page
        rather than break).
    """

    frame: pd.DataFrame
    shown: pd.DataFrame
    caption: str = ""
    flagged: Sequence[bool] = ()
    note: str = ""

    #: Shown instead of an empty table.
    empty: str = "None."
    colours: pd.DataFrame | None = None
    groups: Sequence[tuple] = ()
    name: str = ""
    keep: bool = False

    def _group_row(self) -> str:
        esc = _html.escape
        cells = []
        for label, span, *colour in self.groups:
            style = f' style="border-bottom: 2px solid {esc(colour[0])}"' if colour and colour[0] and label else ""
            cells.append(f'<th class="dn-group" colspan="{int(span)}"{style}>{esc(str(label))}</th>')
        return f'<tr class="dn-groups">{"".join(cells)}</tr>'

    def to_html(self) -> str:
        """The table alone (no caption: the report numbers it and prints the caption)."""
        esc = _html.escape
        if self.shown.empty:
            return f'<p class="dn-table-empty">{esc(self.empty)}</p>'
        flagged = list(self.flagged) or [False] * len(self.shown)
        numeric = [_looks_numeric(self.shown.iloc[:, j]) for j in range(self.shown.shape[1])]
        head = "".join(
            f'<th class="{"dn-n" if num else "dn-t"}">{esc(str(c))}</th>'
            for c, num in zip(self.shown.columns, numeric, strict=False)
        )
        colours = None if self.colours is None else self.colours.to_numpy()
        rows = []
        for i, r in enumerate(self.shown.itertuples(index=False)):
            cls = ' class="dn-flagged"' if flagged[i] else ""
            cells = []
            for j, (v, num) in enumerate(zip(r, numeric, strict=False)):
                bg = colours[i, j] if colours is not None else ""
                style = f' style="background:{esc(str(bg))}"' if isinstance(bg, str) and bg else ""
                cells.append(f'<td class="{"dn-n" if num else "dn-t"}"{style}>{esc(str(v))}</td>')
            rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
        groups = self._group_row() if self.groups else ""
        return f'<table class="dn-table"><thead>{groups}<tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'

    def to_typst(self) -> str:
        """The same table as Typst (``#dn-table``, :func:`~demonoise.report.content.typstsrc.table`):
        the same shown strings, colours, groups and flagged rows."""
        from demonoise.report.content import typstsrc

        if self.shown.empty:
            return f"#emph[{typstsrc.markup(self.empty)}]"
        numeric = [_looks_numeric(self.shown.iloc[:, j]) for j in range(self.shown.shape[1])]
        return typstsrc.table(
            [str(c) for c in self.shown.columns],
            self.shown.itertuples(index=False),
            numeric=numeric,
            fills=None if self.colours is None else self.colours.to_numpy().tolist(),
            flagged=list(self.flagged),
            groups=self.groups,
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from demonoise.report.content.notebook import table_bundle

        return table_bundle(
            self.to_html(),
            caption=self.caption,
            frame=self.frame,
            note=self.note,
            empty=self.shown.empty,
            name=self.name,
            keep=self.keep,
            typst=self.to_typst(),
        )

    def __len__(self) -> int:
        return len(self.frame)


@dataclass
class StatusBox:
    """The data-status box shown at the top of every section: modelled data say so."""

    label: str
    modelled: bool
    details: tuple = ()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from demonoise.report.content import typstsrc

        typst = typstsrc.call("dn-status-box", label=self.label, modelled=self.modelled, details=list(self.details))
        return {"text/html": self._repr_html_(), typstsrc.TYPST_MIME: typst}

    def _repr_html_(self) -> str:
        esc = _html.escape
        kind = "dn-status-modelled" if self.modelled else "dn-status-real"
        head = "Data status"
        items = "".join(f"<li>{esc(d)}</li>" for d in self.details)
        return (
            f'<div class="dn-status {kind}"><strong>{head}:</strong> {esc(self.label)}'
            + (f"<ul>{items}</ul>" if items else "")
            + "</div>"
        )


def status_box(
    df_or_label,
    details: Sequence[str] = (),
    *,
    granularity: str | None = None,
    implications: str = "",
) -> StatusBox:
    """The data-status box of a results table (its ``data_status`` column) or a label.

    A label mentioning "modelled" or "demonstration" is shown as modelled data. With
    ``granularity`` a line says how cells are published; ``implications`` (what the data
    can't say) closes the box.
    """
    from demonoise.core.counts import DATA_STATUS_SEP

    if isinstance(df_or_label, pd.DataFrame):
        labels = {str(x).split(DATA_STATUS_SEP)[0] for x in df_or_label["data_status"].unique()}
        label = "; ".join(sorted(labels))
    else:
        label = str(df_or_label).split(DATA_STATUS_SEP)[0]
    lines = list(details)
    if granularity:
        lines.append(f"Cells published by {GRANULARITY_WORDS.get(granularity, granularity)}")
    if implications:
        lines.append(f"What these data can't say: {implications}")
    low = label.lower()
    return StatusBox(label, "modelled" in low or "demonstration" in low, tuple(lines))


def run_parameters(
    df: pd.DataFrame, *, settings: Sequence, dataset: str, granularity: str, mc: int, seed: int | None = None
) -> HtmlTable:
    """The parameters of the run, as a two-column table (method and data)."""
    n_mc = int(df["mc_n"].dropna().iloc[0]) if "mc_n" in df and df["mc_n"].notna().any() else 0
    rows = [("dataset", dataset)]
    rows += [
        (f"setting {i}: {s.label}", s.words.removeprefix("Noise: "))
        for i, s in enumerate(map(NoiseSetting.of, settings), 1)
    ]
    rows += [
        ("publication granularity", GRANULARITY_WORDS.get(granularity, granularity)),
        (
            "Monte Carlo",
            f"{fmt_int(n_mc)} replicates for e and the TFR" + (f", seed {seed}" if seed is not None else "")
            if n_mc
            else "not run",
        ),
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
    if others:
        return "; ".join(others) + (f" ({', '.join(codes)})" if codes else "")
    return f"Eurostat ({', '.join(codes)})" if codes else "Eurostat"


def provenance_notes(provenance: Mapping[str, Any] | None) -> HtmlTable:
    """Per table: status, source datasets and extraction date, and under the table the
    provenance note of each (how modelled values were made, fallbacks; the CSV has them as
    a column)."""
    rows = []
    for table, p in (provenance or {}).items():
        if not p:
            continue
        rows.append(
            {
                "table": table,
                "status": p.get("status", ""),
                "datasets": ", ".join(p.get("datasets", ()) or ()),
                "extracted": p.get("extracted") or "unknown",
                "note": p.get("note", ""),
            }
        )
    frame = pd.DataFrame(rows, columns=["table", "status", "datasets", "extracted", "note"])
    notes = " ".join(f"{r['table'].capitalize()}: {r['note'].rstrip('.')}." for r in rows if r["note"])
    return HtmlTable(
        frame,
        frame.drop(columns=["note"]),
        caption=f"Data provenance (Source: {source_of(provenance or {})}); how each table was made is said under it",
        note=notes if rows else "No provenance details were passed.",
    )


def age_profile_table(df: pd.DataFrame, V, indicator: str, *, sex: str | None = None) -> HtmlTable:
    """One row per region summarising a by-age indicator (ASFR, ASMR) at ``V``: the
    median admixture over the ages with events for women, men and both sexes (ASFR:
    women), and for ``sex`` (default: both sexes; ASFR: women) the median relative total
    uncertainty and the largest admixture (at which age), overall and among cells with at
    least 10 events (the counts of small cells: :func:`~.decisions.small_cells_view`)."""
    sex = "F" if indicator == "asfr" else (sex or "T")
    d = at(df, V, indicator)
    d = d[np.isfinite(d["value"]) & (d["var_pois"] > 0)]
    sexes = [x for x in ("F", "M", "T") if (d["sex"] == x).any()]
    frame = age_profile_rows(d, sex, sexes, region_population(df))
    if frame.empty:
        return HtmlTable(frame, frame, caption="(no rows)")
    frame = frame.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    frame = frame.reset_index(drop=True)
    ev = EVENT_WORDS[indicator][1]
    shown = pd.DataFrame({"region": frame["label"], "population": [fmt_int(x) for x in frame["population"]]})
    for x in sexes:
        shown[f"median A, {x} (%)"] = fmt_percent_column(frame[f"A_median_{x}"])
    shown[f"median rel. total, {sex} (%)"] = fmt_percent_column(frame["rel_tot_median"])
    shown[f"largest A, {sex} (age)"] = [
        f"{fmt_pct(a)} ({g})" for a, g in zip(frame["A_max"], frame["A_max_age"], strict=False)
    ]
    shown[f"largest A, {sex}, >= 10 {ev}"] = [
        f"{fmt_pct(a)} ({g})" if g else "\u2014"
        for a, g in zip(frame["A_max_reliable"], frame["A_max_reliable_age"], strict=False)
    ]
    who = "women" if indicator == "asfr" else "women (F), men (M) and both sexes (T)"
    return HtmlTable(
        frame,
        shown,
        caption=f"{INDICATOR_NAMES[indicator].capitalize()} {NoiseSetting.of(V).phrase}, summarised over the ages "
        f"with {ev} per "
        f"region: the median noise admixture A for {who}; for {SEX_WORDS[sex]} the median relative total "
        f"uncertainty and the largest admixture, overall and among cells with at least 10 {ev}.",
    )


def single_region(df: pd.DataFrame) -> bool:
    """Whether the results are of a country that is one NUTS 2 region (LU, MT): its tables
    have one row per setting and are shown once across the settings
    (:func:`across_settings`)."""
    return "nuts_level" in df and df.loc[df["nuts_level"] == 2, "region"].nunique() <= 1


def _same_decimals(col: pd.Series) -> pd.Series:
    """A column of numbers formatted one setting at a time, printed with one number of
    decimals (the largest): ``0.48, 2.4`` -> ``0.48, 2.40``; other columns unchanged."""
    import re

    plain = [re.fullmatch(r"([\d\u202f]+)(?:\.(\d+))?", str(v)) for v in col]
    if not all(plain):
        return col
    d = max(len(m.group(2) or "") for m in plain)
    return pd.Series(
        [m.group(1) + ("." + (m.group(2) or "").ljust(d, "0") if d else "") for m in plain], index=col.index
    )


def across_settings(tables: Sequence[HtmlTable], settings: Sequence) -> HtmlTable:
    """One table from the one-row tables of each setting (a country of one region): a row
    per setting, in the batch's order, its first column the setting instead of the region
    (columns only some settings have, e.g. a p-table's bias, are blank for the others). The
    caption is the first table's, its setting phrase replaced by "for each noise setting"."""
    sets = [NoiseSetting.of(s) for s in settings]
    shown, frames = [], []
    for s, t in zip(sets, tables, strict=True):
        shown.append(t.shown.head(1).drop(columns=["region"], errors="ignore").assign(setting=s.label))
        frames.append(t.frame.head(1).assign(setting=s.key))
    table = pd.concat(shown, ignore_index=True).fillna("\u2014")
    table = table[["setting", *[c for c in table.columns if c != "setting"]]]
    table = table.apply(_same_decimals)
    region = tables[0].shown["region"].iloc[0] if "region" in tables[0].shown and len(tables[0].shown) else ""
    caption = tables[0].caption.replace(f" {sets[0].phrase}", " for each noise setting", 1)
    return HtmlTable(
        pd.concat(frames, ignore_index=True),
        table,
        caption=f"{region}: {caption[0].lower()}{caption[1:]}" if region else caption,
        note=tables[0].note,
    )


def grouped(base: Mapping[str, Sequence], blocks: Sequence[tuple]) -> tuple[pd.DataFrame, list[tuple]]:
    """A wide table: the columns of ``base`` (name -> values) under no heading, then a column
    group per block ``(label, colour, columns)`` (names may repeat between groups); returns
    the table and its group row (:attr:`HtmlTable.groups`)."""
    parts = [pd.DataFrame({k: list(v) for k, v in cols.items()}) for cols in [base, *(b[2] for b in blocks)]]
    groups = [("", parts[0].shape[1], ""), *((label, len(cols), colour) for label, colour, cols in blocks)]
    return pd.concat(parts, axis=1), groups


def settings_wide(
    tables: Sequence[HtmlTable], settings: Sequence, *, common: Sequence[str], per: Sequence[str], caption: str
) -> HtmlTable:
    """One table from the tables of each setting (same regions, same order): the columns
    ``common`` to every setting once, from the first table, then a column group per setting
    (headed by its label, underlined in its colour) with its columns whose name starts with
    one of ``per``. ``frame`` stacks the tables' frames with a ``setting`` column."""
    from demonoise.report.content.theme import setting_colours

    sets = [NoiseSetting.of(s) for s in settings]
    palette = setting_colours([s.label for s in sets])
    first = tables[0].shown.reset_index(drop=True)
    blocks = []
    for s, t in zip(sets, tables, strict=True):
        shown = t.shown.reset_index(drop=True)
        if "region" in shown and list(shown["region"]) != list(first["region"]):
            raise ReportError(f"{s.label}: its table has other regions than the first setting's")
        mine = [c for c in shown.columns if c not in common and any(str(c).startswith(p) for p in per)]
        blocks.append((s.label, palette[s.label], {c: shown[c] for c in mine}))
    table, groups = grouped({c: first[c] for c in common if c in first}, blocks)
    table = table.fillna("")
    frame = pd.concat([t.frame.assign(setting=s.key) for s, t in zip(sets, tables, strict=True)], ignore_index=True)
    return HtmlTable(frame, table, caption=caption, flagged=tables[0].flagged, groups=groups)


def settings_table(tables: Sequence[HtmlTable], settings: Sequence, **wide) -> HtmlTable:
    """The tables of each setting as one: a row per setting when each has one row (a
    country of one region, :func:`across_settings`), else a column group per setting
    (:func:`settings_wide`, given ``common``, ``per`` and ``caption``)."""
    if all(len(t.shown) <= 1 for t in tables):
        return across_settings(tables, settings)
    return settings_wide(tables, settings, **wide)


def age_profile_settings(df: pd.DataFrame, settings: Sequence, indicator: str) -> HtmlTable:
    """:func:`age_profile_table` of every setting as one table (:func:`settings_table`): per
    region its population, then per setting the median admixture (women for the ASFR,
    both sexes for the ASMR) and the largest admixture among cells with at least 10 events
    (at which age); every sex and the other measures are in the per-setting tables' CSV."""
    tables = [age_profile_table(df, s, indicator) for s in settings]
    sex = "F" if indicator == "asfr" else "T"
    ev = EVENT_WORDS[indicator][1]
    return settings_table(
        tables,
        settings,
        common=("region", "population"),
        per=(f"median A, {sex} (%)", f"largest A, {sex}, >= 10"),
        caption=f"{INDICATOR_NAMES[indicator].capitalize()} for each noise setting (a column group per setting), "
        f"summarised over the ages with {ev} per region: the median noise admixture A for {SEX_WORDS[sex]} and the "
        f"largest admixture among cells with at least 10 {ev} (at which age).",
    )


def mc_settings(df: pd.DataFrame, settings: Sequence, indicator: str, *, ages: Sequence[float] | None = None):
    """The Monte Carlo check of every setting in one place (Markdown): one sentence when it
    agrees with the analytic standard deviations at every setting, else each setting's
    sentence (:func:`demonoise.analysis.verdicts.mc_summary`)."""
    from IPython.display import Markdown

    sets = [NoiseSetting.of(s) for s in settings]
    checks = [mc_summary(df, s, indicator, ages=ages) for s in sets]
    if all(c["n"] == 0 for c in checks):
        return Markdown(checks[0]["text"])
    if all(c["n"] > 0 and c["beyond"] == 0 for c in checks):
        cells = {c["cells"] for c in checks}
        n = cells.pop() if len(cells) == 1 else 0
        each = "the one cell compared" if n == 1 else f"all {fmt_int(n)} cells compared" if n else "every cell compared"
        zmax = max(c["max_abs_z"] for c in checks)
        return Markdown(
            f"At every setting the Monte Carlo check ({fmt_int(checks[0]['n'])} replicates) agrees with the analytic "
            f"standard deviations within sampling error in {each}: |z| <= 5 everywhere (largest |z| = {zmax:.1f}; "
            f"the relative standard error of a simulated sd is 1/sqrt(2N) = {fmt_pct(checks[0]['rse'])})."
        )
    return Markdown("\n".join(f"- **{s.label}**: {c['text']}" for s, c in zip(sets, checks, strict=True)))


def age_verdict_shown(v, *, first: bool, one_region: bool):
    """A by-age verdict (:func:`demonoise.analysis.verdicts.age_verdict`) as a setting's
    subsection shows it: what differs between the settings. The sentence on the cells
    resting on fewer than 10 events (the same cells at every setting, last) only in the
    first setting's subsection; for a country of one region only the first sentence (the
    largest admixtures are in the table of every setting)."""
    from demonoise.analysis.verdicts import Verdict

    said = list(v.sentences)
    tail = [said.pop()] if v.numbers.get("small_cells", 0) and len(said) > 1 else []
    if one_region:
        said = said[:1]
    return Verdict(said + (tail if first else []), dict(v.numbers))


def age_words(code: str, indicator: str) -> str:
    """An age group's code in words: ``Y_LT1`` -> "under 1", ``Y_GE85`` -> "85 and over",
    ``Y40`` -> "age 40"; for life expectancy the indicator at that age: "e0 (at birth)",
    "e65". Other text is returned as it is."""
    import re

    if code == "Y_LT1":
        return "e0 (at birth)" if indicator == "e" else "under 1"
    m = re.fullmatch(r"Y_GE(\d+)|Y_OPEN|Y(\d+)", str(code))
    if not m:
        return code
    if m.group(2):
        return f"e{m.group(2)}" if indicator == "e" else f"age {m.group(2)}"
    return f"{m.group(1)} and over" if m.group(1) else "the open age group"


#: Sentences of a one-number verdict a setting's subsection leaves out: the largest region
#: (its figures are in the table of every setting) and, after the first setting, the regions
#: resting on few events (the same at every setting).
_SAID_ONCE = ("First-order results may be unreliable",)
_IN_THE_TABLE = ("In the largest, ",)


def scalar_verdict_shown(v, *, first: bool):
    """A one-number verdict (:func:`demonoise.analysis.verdicts.scalar_verdict`) as a
    setting's subsection shows it: what differs between the settings (see
    :data:`_SAID_ONCE`, :data:`_IN_THE_TABLE`)."""
    from demonoise.analysis.verdicts import Verdict

    drop = _IN_THE_TABLE + (() if first else _SAID_ONCE)
    return Verdict([x for x in v.sentences if not x.startswith(drop)], dict(v.numbers))


def flag_table(
    df: pd.DataFrame,
    V,
    indicator: str,
    *,
    ages: Sequence[float] | None = None,
    limit: int = 25,
    settings: Sequence | None = None,
) -> HtmlTable:
    """Where the first-order result is unreliable, for one indicator
    (:func:`demonoise.analysis.verdicts.flag_rows`): sparse regions and cells whose Monte Carlo
    sd disagrees with the analytic one at ``V`` -- or, with ``settings``, at every setting. At
    most ``limit`` rows are shown (the note says how many there are)."""
    every = settings is not None
    frame = flag_rows(df, V, indicator, ages=ages, settings=settings)
    note = f"{len(frame)} flags; the first {limit} are shown." if len(frame) > limit else ""
    shown = frame.head(limit).copy()
    shown["where"] = [age_words(w, indicator) for w in shown["where"]]
    return HtmlTable(
        frame,
        shown,
        caption=f"Flags: {INDICATOR_NAMES[indicator]}" + ("" if every else f" {NoiseSetting.of(V).phrase}"),
        flagged=[True] * min(len(frame), limit),
        note=note,
        empty=(
            "No region is sparse and no Monte Carlo disagreement was found (cells with fewer than 10 events "
            "are marked in the charts above)."
        ),
    )
