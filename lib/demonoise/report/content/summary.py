"""Tables, verdicts and flags for the quality reports, computed from the results table.

The report notebooks are thin: they read the results table that the library computed
(:mod:`demonoise.report.batch.store`) and call the functions of this module and the chart
builders of :mod:`demonoise.report.content.charts`. Everything a notebook shows as a number
comes from here, so it can be unit-tested on small hand-made frames.

Conventions
-----------
* ``df`` is a results table (:mod:`demonoise.analysis.results`) for one dataset and one
  country (its country row and its NUTS 2 regions), holding any number of noise
  variances ``V``; every function selects the generic-noise rows of the ``V`` it is
  given.
* Noise admixture ``A = sd_tot / sd_pois - 1 = sqrt(1 + Var_noise / Var_pois) - 1``
  (docs/design.md, "Admixture"): "noise adds ``A`` to the statistical (Poisson) uncertainty".
  The thresholds used in the sentences are ``A = 10 %`` (noise adds a tenth) and
  ``A = sqrt(2) - 1 = 41.4 %`` (noise as large as Poisson).
* First-order results are unreliable where a rate rests on few events: cells with
  ``small_count`` (fewer than 10 events), regions where a large share of the
  single-age cells behind an indicator are small (:func:`sparse_regions`), and cells
  where the Monte Carlo disagrees with the analytic standard deviation beyond
  sampling error (``z_flag``: ``|z| > 5`` with ``z = (sd_MC / sd_analytic - 1)
  sqrt(2N)``). They are flagged, never dropped.

Objects with ``_repr_mimebundle_`` / ``_repr_markdown_`` (:class:`HtmlTable`,
:class:`Verdict`, :class:`StatusBox`) display themselves in a notebook, as HTML and as
Typst (the PDF's) made from the same strings.
"""

from __future__ import annotations

import html as _html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from demonoise.analysis.compute import read_results
from demonoise.analysis.decision import MainPoints
from demonoise.analysis.settings import NoiseSetting, setting_labels
from demonoise.analysis.stored import country_results, read_once
from demonoise.core.errors import ParameterError, ReportError
from demonoise.core.vocabulary import (
    A_EQUAL,
    A_SMALL,
    EVENT_WORDS,
    GRANULARITY_WORDS,
    INDICATOR_PHRASES,
    INDICATOR_UNITS,
    SEX_WORDS,
)
from demonoise.report.content.notebook import record_shown

__all__ = [
    "SPARSE_SHARE",
    "INDICATOR_NAMES",
    "load_results",
    "at",
    "scalar_rows",
    "drop_duplicate_country",
    "region_label",
    "HtmlTable",
    "Verdict",
    "StatusBox",
    "status_box",
    "noise_note",
    "implications_for",
    "provenance_lines",
    "provenance_notes",
    "run_parameters",
    "country_name",
    "regions_overview",
    "scalar_table",
    "sex_table",
    "age_profile_table",
    "sparse_regions",
    "flag_table",
    "mc_summary",
    "scalar_verdict",
    "age_verdict",
    "index_metrics",
    "across_settings",
    "fmt_pct",
    "fmt_num",
    "fmt_int",
    "fmt_fixed",
    "fmt_fixed_column",
    "fmt_percent_column",
]

#: A region is *sparse* for an indicator when more than this share of the single-age
#: cells behind it rest on fewer than 10 events.
SPARSE_SHARE = 0.5

INDICATOR_NAMES = INDICATOR_PHRASES
_UNITS = {"e": INDICATOR_UNITS["e"], "tfr": INDICATOR_UNITS["tfr"]}
_SEX_WORDS = SEX_WORDS
_EVENT_WORDS = EVENT_WORDS


# ============================================================ formatting helpers
def fmt_pct(x: float, digits: int = 2) -> str:
    """A proportion as a percentage with ``digits`` significant digits (``0.0123`` -> ``"1.2 %"``)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    v = 100.0 * float(x)
    if v == 0:
        return "0 %"
    if abs(v) >= 10**digits:
        return f"{v:,.0f} %"
    return f"{float(f'{v:.{digits}g}'):g} %"


def fmt_num(x: float, digits: int = 3) -> str:
    """A number with ``digits`` significant digits, positional (no exponent), thousands
    separated by a narrow space (``0.0000153`` -> ``"0.000015"`` at 2 digits)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    x = float(x)
    if x != 0 and abs(x) >= 10**digits:
        return fmt_int(x)
    if x == 0:
        return "0"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


def fmt_fixed(x: float, decimals: int) -> str:
    """A number with a fixed number of decimals and narrow-space thousands."""
    if x is None or not np.isfinite(x):
        return "\u2014" if x is None or not np.isinf(x) else ("> range" if x > 0 else "\u2014")
    return f"{float(x):,.{int(decimals)}f}".replace(",", "\u202f")


def fmt_fixed_column(values, *, significant: int = 2) -> list[str]:
    """A column of numbers with one number of decimals for all (:func:`~.theme.column_decimals`)."""
    from demonoise.report.content.theme import column_decimals

    vals = list(values)
    k = column_decimals(vals, significant=significant)
    return [fmt_fixed(v, k) for v in vals]


def fmt_percent_column(values, *, significant: int = 2) -> list[str]:
    """Proportions as per cent with one number of decimals for the column."""
    return [
        v if v == "\u2014" else v for v in fmt_fixed_column([100.0 * float(x) for x in values], significant=significant)
    ]


def fmt_int(x: float) -> str:
    """A rounded count with thin-space thousands (``30123.4`` -> ``"30 123"``)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    return f"{int(round(float(x))):,}".replace(",", "\u202f")


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def region_label(code: str, name: str, width: int = 28) -> str:
    """``"FI20 Åland"``: the code and the first part of the name (before ``/``), shortened."""
    name = (name or "").split("/")[0].strip()
    if len(name) > width:
        name = name[: width - 1].rstrip() + "\u2026"
    return f"{code} {name}".strip()


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


def at(
    df: pd.DataFrame, V, indicator: str | None = None, *, sex: str | None = None, age: float | None = None
) -> pd.DataFrame:
    """Rows of one noise setting ``V`` (a variance of the generic model, ``{"V": v}`` or
    ``{"ptable": name}``), optionally one indicator, sex and age."""
    m = NoiseSetting.of(V).mask(df)
    if indicator is not None:
        m &= df["indicator"] == indicator
    if sex is not None:
        m &= df["sex"] == sex
    if age is not None:
        m &= np.isclose(df["age"].astype(float), float(age))
    return df[m]


def drop_duplicate_country(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the country rows when the country has a single NUTS 2 region with the same
    values (Luxembourg, Malta, ...): charts and tables would show the same line twice."""
    regions = df.loc[df["nuts_level"] == 2, "region"].unique()
    if len(regions) != 1:
        return df
    country = df[df["nuts_level"] == 0]
    if country.empty:
        return df
    key = ["noise_model", "V", "sex", "indicator", "age_group"]
    a = country.set_index(key)["value"]
    b = df[df["region"] == regions[0]].set_index(key)["value"]
    a, b = a.align(b, join="inner")
    if len(a) and np.allclose(a.to_numpy(float), b.to_numpy(float), equal_nan=True, rtol=1e-12):
        return df[df["nuts_level"] != 0]
    return df


def scalar_rows(
    df: pd.DataFrame, V: float, indicator: str, *, sex: str = "T", age: float | None = None
) -> pd.DataFrame:
    """One row per region (country first, then NUTS 2 regions by falling population) for
    an indicator at one age (``e``) or without age (``tfr``). Adds ``label`` and ``population``."""
    if indicator == "tfr":
        sex = "F"
    d = at(df, V, indicator, sex=sex, age=age if indicator != "tfr" else None).copy()
    if d.empty:
        return d.assign(label=pd.Series(dtype=str), population=pd.Series(dtype=float))
    d["label"] = [region_label(c, n) for c, n in zip(d["region"], d["region_name"], strict=False)]
    pop = _population(df)
    d["population"] = d["region"].map(pop).astype(float)
    d = d.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    return d.reset_index(drop=True)


def _population(df: pd.DataFrame) -> pd.Series:
    """Population on 1 January of the reference year per region (the results table's
    ``population``, the figure of the decision table and the index); for a table without
    it, the average population (exposure, both sexes, all ages) from the e0 rows, else
    the sum of the mortality exposures."""
    if "population" in df:
        return df.drop_duplicates("region").set_index("region")["population"].astype(float)
    e0 = df[(df["indicator"] == "e") & (df["sex"] == "T") & np.isclose(df["age"].astype(float), 0.0)]
    if not e0.empty:
        return e0.groupby("region")["exposure"].first()
    m = df[(df["indicator"] == "asmr") & (df["sex"] == "T")]
    if not m.empty:
        first_v = m["V"].iloc[0]
        m = m[m["V"] == first_v]
        return m.groupby("region")["exposure"].sum()
    return pd.Series(dtype=float)


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


def provenance_lines(provenance: Mapping[str, Any] | None) -> list[str]:
    """One line per table: ``"deaths: modelled -- Eurostat demo_r_mlifexp, ...; extracted unknown"``.

    ``provenance`` maps a table name to ``status``, ``datasets``, ``extracted``,
    ``source`` (what :func:`demonoise.report.document.cover.provenance_dict` passes).
    """
    out = []
    for table, p in (provenance or {}).items():
        if not p:
            continue
        codes = ", ".join(p.get("datasets", ()) or ())
        out.append(
            f"{table}: {p.get('status', '?')} \u2014 {p.get('source', 'Eurostat')} {codes}; "
            f"extraction date {p.get('extracted') or 'unknown'}"
        )
    return out


def status_box(
    df_or_label,
    details: Sequence[str] = (),
    *,
    setting=None,
    granularity: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    implications: str = "",
) -> StatusBox:
    """The data-status box of a results table (its ``data_status`` column) or a label.

    A label mentioning "modelled" or "demonstration" is shown as modelled data. With
    ``setting`` a line states the noise; with ``granularity`` how cells are published; with
    ``provenance`` one line per table gives its Eurostat dataset codes and extraction date;
    ``implications`` (what the data can't say) closes the box.
    """
    from demonoise.core.counts import DATA_STATUS_SEP

    if isinstance(df_or_label, pd.DataFrame):
        labels = {str(x).split(DATA_STATUS_SEP)[0] for x in df_or_label["data_status"].unique()}
        label = "; ".join(sorted(labels))
    else:
        label = str(df_or_label).split(DATA_STATUS_SEP)[0]
    lines = list(details)
    g = GRANULARITY_WORDS.get(granularity or "", granularity or "")
    if setting is not None:
        lines.append(NoiseSetting.of(setting).words + (f"; cells published by {g}" if g else ""))
    elif g:
        lines.append(f"Cells published by {g}")
    lines += provenance_lines(provenance)
    if implications:
        lines.append(f"What these data can't say: {implications}")
    low = label.lower()
    return StatusBox(label, "modelled" in low or "demonstration" in low, tuple(lines))


def noise_note(setting, granularity: str | None = None):
    """One line under a setting's heading: the noise of this subsection."""
    from IPython.display import Markdown

    return Markdown(f"*{NoiseSetting.of(setting).words}.*")


def implications_for(implications, indicator: str | None = None) -> str:
    """The dataset's ``implications`` text that concerns ``indicator`` (``None``: all of it).

    ``implications`` is a text -- clauses separated by ``"; "``, each about the table it
    names first (``"regional births modelled: ...; deaths modelled (outside Belgium): ..."``)
    -- or a mapping from indicator codes (``asfr``, ``tfr``, ``asmr``, ``e``; or
    ``fertility`` / ``mortality``) to texts. The fertility chapters (``asfr``, ``tfr``) get
    the clauses about births, the mortality chapters (``asmr``, ``e``) those about deaths;
    clauses about neither (e.g. population) concern every chapter.
    """
    if not implications:
        return ""
    family = {"asfr": "fertility", "tfr": "fertility", "asmr": "mortality", "e": "mortality"}
    if isinstance(implications, Mapping):
        if indicator is None:
            return " ".join(str(v) for v in implications.values())
        return " ".join(str(implications[k]) for k in (indicator, family.get(indicator)) if k in implications)
    if indicator is None:
        return str(implications)
    want = {"fertility": "births", "mortality": "deaths"}.get(family.get(indicator, ""), "")
    keep = [c for c in _implication_clauses(str(implications)) if c[0] in (want, "")]
    return "; ".join(text for _, text in keep)


_CLAUSE_START = __import__("re").compile(r";\s+(?=(?:regional\s+)?(?:births|deaths|population)\b)", __import__("re").I)
_TABLE_WORD = __import__("re").compile(r"\b(births|deaths|population)\b", __import__("re").I)


def _implication_clauses(text: str) -> list[tuple[str, str]]:
    """``(table, clause)`` of an implications text: a clause starts where a table is named
    (births, deaths, population) after ``"; "``; its table is the first it names."""
    out = []
    for clause in _CLAUSE_START.split(text):
        m = _TABLE_WORD.search(clause)
        word = m.group(1).lower() if m else ""
        out.append(("" if word == "population" else word, clause.strip()))
    return out


def country_name(df: pd.DataFrame) -> str:
    """The country's name (first part before ``/``), from its level-0 row, else from
    the NUTS names (when :func:`drop_duplicate_country` removed the country row)."""
    c = df[df["nuts_level"] == 0]
    if len(c):
        return _full_name(c["region_name"].iloc[0]) or str(c["region"].iloc[0])
    code = str(df["country"].iloc[0]) if len(df) else ""
    try:
        from demonoise.io.nuts import nuts_region

        return _full_name(nuts_region(code).name) or code
    except Exception:  # an unknown code: show the code
        return code


def _full_name(name) -> str:
    """A country's name in all its languages: ``"Suomi/Finland"`` -> ``"Suomi / Finland"``."""
    return " / ".join(p.strip() for p in str(name or "").split("/") if p.strip())


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


def provenance_notes(provenance: Mapping[str, Any] | None) -> HtmlTable:
    """Per table: status, Eurostat datasets, extraction date and the provenance note
    (how modelled values were made, fallbacks), for the cover."""
    rows = []
    for table, p in (provenance or {}).items():
        if not p:
            continue
        rows.append(
            {
                "table": table,
                "status": p.get("status", ""),
                "Eurostat datasets": ", ".join(p.get("datasets", ()) or ()),
                "extracted": p.get("extracted") or "unknown",
                "note": p.get("note", ""),
            }
        )
    frame = pd.DataFrame(rows, columns=["table", "status", "Eurostat datasets", "extracted", "note"])
    return HtmlTable(
        frame,
        frame,
        caption="Data provenance (Source: Eurostat)",
        note="" if rows else "No provenance details were passed.",
    )


def _flag_text(row) -> str:
    out = []
    if bool(row.get("small_count", False)):
        out.append("< 10 events")
    if bool(row.get("sparse", False)):
        out.append(f"sparse ({fmt_pct(row['small_share'], 2)})")
    if bool(row.get("z_flag", False)):
        out.append("MC |z| > 5")
    return "; ".join(out)


def regions_overview(df: pd.DataFrame, V: float) -> HtmlTable:
    """The cover's table: per region its population, births and deaths, e0 and TFR with
    the noise standard deviation and admixture at ``V`` (sexes combined; TFR: women)."""
    e0 = scalar_rows(df, V, "e", sex="T", age=0)
    tfr = scalar_rows(df, V, "tfr").set_index("region") if not at(df, V, "tfr").empty else None
    rows = []
    for _, r in e0.iterrows():
        t = tfr.loc[r["region"]] if tfr is not None and r["region"] in tfr.index else None
        rows.append(
            {
                "region": r["label"],
                "population": r["population"],
                "deaths": r["events"],
                "births": np.nan if t is None else t["events"],
                "e0": r["value"],
                "e0_sd_noise": r["sd_noise"],
                "e0_A": r["admixture"],
                "tfr": np.nan if t is None else t["value"],
                "tfr_sd_noise": np.nan if t is None else t["sd_noise"],
                "tfr_A": np.nan if t is None else t["admixture"],
            }
        )
    frame = pd.DataFrame(rows)
    shown = pd.DataFrame(
        {
            "region": frame["region"] if len(frame) else [],
            "population": [fmt_int(x) for x in frame.get("population", [])],
            "deaths": [fmt_int(x) for x in frame.get("deaths", [])],
            "births": [fmt_int(x) for x in frame.get("births", [])],
            "e0 (years)": fmt_fixed_column(frame.get("e0", []), significant=4),
            "noise sd e0 (years)": fmt_fixed_column(frame.get("e0_sd_noise", [])),
            "A e0 (%)": fmt_percent_column(frame.get("e0_A", [])),
            "TFR (children per woman)": fmt_fixed_column(frame.get("tfr", []), significant=3),
            "noise sd TFR (per 1 000 women)": fmt_fixed_column(
                1000 * frame.get("tfr_sd_noise", pd.Series(dtype=float))
            ),
            "A TFR (%)": fmt_percent_column(frame.get("tfr_A", [])),
        }
    )
    return HtmlTable(
        frame,
        shown,
        caption=f"Regions {NoiseSetting.of(V).phrase}: population (average of 1 January of the year and the next), "
        "events, life expectancy at birth (both sexes) and TFR with the noise standard deviation "
        "and the noise admixture A.",
    )


def scalar_table(
    df: pd.DataFrame, V: float, indicator: str, *, sex: str = "T", age: float | None = None, digits: int = 4
) -> HtmlTable:
    """One row per region: value, Poisson / noise / total sd, relative uncertainties,
    admixture, Monte Carlo sd (if run) and flags, for ``e`` at ``age`` or ``tfr``."""
    d = scalar_rows(df, V, indicator, sex=sex, age=age)
    sp = sparse_regions(df, V, indicator)
    key = "F" if indicator == "tfr" else sex
    share = sp[sp["sex"] == key].set_index("region")["small_share"] if len(sp) else pd.Series(dtype=float)
    d["small_share"] = d["region"].map(share).astype(float)
    d["sparse"] = d["small_share"] > SPARSE_SHARE
    if "z_flag" not in d:
        d["z_flag"] = False
    d["flag"] = [_flag_text(r) for _, r in d.iterrows()]
    unit = _UNITS.get(indicator, "")
    scale, sd_unit = (1000.0, "per 1 000 women") if indicator == "tfr" else (1.0, unit)
    shown = pd.DataFrame(
        {
            "region": d["label"],
            "population": [fmt_int(x) for x in d["population"]],
            "events": [fmt_int(x) for x in d["events"]],
            f"{_short(indicator, age)} ({unit})": fmt_fixed_column(d["value"], significant=digits),
            "\u03b4 Poisson (%)": fmt_percent_column(d["rel_pois"]),
            "\u03b4 noise (%)": fmt_percent_column(d["rel_noise"]),
            "\u03b4 total (%)": fmt_percent_column(d["rel_tot"]),
            "A (%)": fmt_percent_column(d["admixture"]),
            f"noise sd ({sd_unit})": fmt_fixed_column(scale * d["sd_noise"]),
        }
    )
    if "mc_sd_tot" in d and d["mc_sd_tot"].notna().any():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = d["mc_sd_tot"].to_numpy(float) / d["sd_tot"].to_numpy(float)
        shown["MC / analytic sd"] = [fmt_fixed(x, 2) for x in ratio]
    shown["flags"] = d["flag"].to_numpy()
    what = _what(indicator, age, sex)
    return HtmlTable(
        d,
        shown,
        caption=f"{what.capitalize()} {NoiseSetting.of(V).phrase}"
        + (f" (value and sd in {unit})" if unit else "")
        + (
            ": relative uncertainties \u03b4 = sd / value (Poisson, noise, total), noise admixture A, noise "
            "standard deviation"
        )
        + (", and the Monte Carlo total sd over the analytic one" if "MC / analytic sd" in shown else "")
        + ". Flags (first order may be unreliable): sparse = more than half of the single-age cells rest on fewer "
        "than 10 events (share given); MC |z| > 5 = the Monte Carlo disagrees beyond sampling error.",
        flagged=(d["flag"] != "").tolist(),
    )


def sex_table(df: pd.DataFrame, V: float, indicator: str = "e", *, age: float = 0) -> HtmlTable:
    """Women and men side by side: value, relative noise uncertainty and admixture per region."""
    parts = {}
    for s in ("F", "M"):
        d = scalar_rows(df, V, indicator, sex=s, age=age)
        parts[s] = d.set_index("region")
    if any(p.empty for p in parts.values()):
        return HtmlTable(pd.DataFrame(), pd.DataFrame(), caption="(no sex-specific rows)")
    order = parts["F"].index.tolist()
    f, m = parts["F"].loc[order], parts["M"].loc[order]
    frame = pd.DataFrame(
        {
            "region": f["label"].to_numpy(),
            "value_F": f["value"].to_numpy(),
            "rel_noise_F": f["rel_noise"].to_numpy(),
            "A_F": f["admixture"].to_numpy(),
            "small_F": f["small_count"].to_numpy(),
            "value_M": m["value"].to_numpy(),
            "rel_noise_M": m["rel_noise"].to_numpy(),
            "A_M": m["admixture"].to_numpy(),
            "small_M": m["small_count"].to_numpy(),
        }
    )
    shown = pd.DataFrame(
        {
            "region": frame["region"],
            f"women ({_UNITS.get(indicator, '')})": fmt_fixed_column(frame["value_F"], significant=4),
            "rel. noise, women (%)": fmt_percent_column(frame["rel_noise_F"]),
            "A, women (%)": fmt_percent_column(frame["A_F"]),
            f"men ({_UNITS.get(indicator, '')})": fmt_fixed_column(frame["value_M"], significant=4),
            "rel. noise, men (%)": fmt_percent_column(frame["rel_noise_M"]),
            "A, men (%)": fmt_percent_column(frame["A_M"]),
        }
    )
    return HtmlTable(
        frame,
        shown,
        caption=f"{_what(indicator, age, 'F').split(',')[0]} of women and men {NoiseSetting.of(V).phrase}: "
        "relative noise uncertainty and noise admixture A.",
        flagged=(frame["small_F"] | frame["small_M"]).tolist(),
    )


def _largest(cells: pd.DataFrame) -> pd.DataFrame:
    """Per region (in order of first appearance) the cell of largest admixture: its
    ``admixture`` and ``age_group`` (the first such cell where several share the largest)."""
    top = cells.sort_values("admixture", ascending=False, kind="stable", na_position="last")
    return top.drop_duplicates("region").set_index("region")[["admixture", "age_group"]]


def _age_profile_rows(d: pd.DataFrame, sex: str, sexes: list[str], pop: pd.Series) -> pd.DataFrame:
    """The rows of :func:`age_profile_table` (one per region with cells of ``sex``, in
    order of first appearance): median admixture per sex, median relative total
    uncertainty and the largest admixture (and its age) of ``sex``, overall and among
    cells with at least 10 events."""
    d = d[["region", "region_name", "nuts_level", "sex", "age_group", "admixture", "rel_tot", "small_count"]]
    own = d[d["sex"] == sex]
    regions = pd.unique(own["region"])
    if len(regions) == 0:
        return pd.DataFrame()
    first = d.drop_duplicates("region").set_index("region")
    top = _largest(own)
    big = _largest(own[~own["small_count"].astype(bool)]).reindex(regions)
    frame = pd.DataFrame(
        {
            "region": regions,
            "label": [region_label(r, first.at[r, "region_name"]) for r in regions],
            "nuts_level": first.loc[regions, "nuts_level"].astype(int).to_numpy(),
            "population": pop.reindex(regions).astype(float).to_numpy(),
            "rel_tot_median": own.groupby("region")["rel_tot"].median().reindex(regions).to_numpy(dtype=float),
            "A_max": top.loc[regions, "admixture"].to_numpy(dtype=float),
            "A_max_age": top.loc[regions, "age_group"].astype(str).to_numpy(),
            "A_max_reliable": big["admixture"].to_numpy(dtype=float),
            "A_max_reliable_age": big["age_group"].fillna("").astype(str).to_numpy(),
        }
    )
    for x in sexes:
        med = d[d["sex"] == x].groupby("region")["admixture"].median()
        frame[f"A_median_{x}"] = med.reindex(regions).to_numpy(dtype=float)
    return frame


def age_profile_table(df: pd.DataFrame, V, indicator: str, *, sex: str | None = None) -> HtmlTable:
    """One row per region summarising a by-age indicator (ASFR, ASMR) at ``V``: the
    median admixture over the ages with events for women, men and both sexes (ASFR:
    women), and for ``sex`` (default: both sexes; ASFR: women) the median relative total
    uncertainty and the largest admixture (at which age), overall and among cells with at
    least 10 events. The counts of small cells are in :func:`sparse_regions`' table (they do
    not depend on the setting)."""
    sex = "F" if indicator == "asfr" else (sex or "T")
    d = at(df, V, indicator)
    d = d[np.isfinite(d["value"]) & (d["var_pois"] > 0)]
    sexes = [x for x in ("F", "M", "T") if (d["sex"] == x).any()]
    frame = _age_profile_rows(d, sex, sexes, _population(df))
    if frame.empty:
        return HtmlTable(frame, frame, caption="(no rows)")
    frame = frame.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    frame = frame.reset_index(drop=True)
    ev = _EVENT_WORDS[indicator][1]
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
        f"region: the median noise admixture A for {who}; for {_SEX_WORDS[sex]} the median relative total "
        f"uncertainty and the largest admixture, overall and among cells with at least 10 {ev}.",
    )


def sparse_regions(df: pd.DataFrame, V: float, indicator: str) -> pd.DataFrame:
    """Cells behind ``indicator`` resting on fewer than 10 events, per region and sex, from
    the one definition of every count (:func:`demonoise.analysis.decision.small_cell_counts`):
    ``cells`` every age cell of the rate (deaths by age behind ``e`` and ``asmr``, births
    by age of mother behind ``tfr`` and ``asfr``), ``small`` those with fewer than 10
    events, ``small_share = small / cells``; ``sparse`` where the share exceeds
    :data:`SPARSE_SHARE`; ``text`` the sentence every table prints. The counts do not
    depend on the noise setting ``V``."""
    from demonoise.analysis.decision import small_cell_counts

    base = {"e": "asmr", "asmr": "asmr", "tfr": "asfr", "asfr": "asfr"}[indicator]
    cols = ["region", "sex", "cells", "small", "small_share", "sparse", "text"]
    # a section asks for the same table's counts several times (its verdict, its tables,
    # its flags): counted once per table object (kept alive with its counts, so that its
    # id cannot be reused while it is cached)
    key = (id(df), len(df), base)
    hit = _SPARSE.get(key)
    if hit is not None and hit[0] is df:
        return hit[1].copy()
    if not (df["indicator"] == base).any():
        return pd.DataFrame(columns=cols)
    c = small_cell_counts(df[df["indicator"] == base], sparse_share=SPARSE_SHARE)
    out = pd.DataFrame(
        {
            "region": c["region"].to_numpy(),
            "sex": c["sex"].to_numpy(),
            "cells": c["age_cells"].to_numpy(),
            "small": c["age_cells_under_10_events"].to_numpy(),
            "small_share": c["share_under_10_of_age_cells"].to_numpy(),
            "sparse": c["flag_sparse"].to_numpy(dtype=bool),
            "text": c["text"].to_numpy(),
        }
    )
    while len(_SPARSE) >= 4:
        _SPARSE.pop(next(iter(_SPARSE)))
    _SPARSE[key] = (df, out)
    return out.copy()


_SPARSE: dict = {}


def _mc_flag_rows(d: pd.DataFrame, label: str | None) -> list[dict]:
    rows = []
    if "z_flag" not in d:
        return rows
    for _, r in d[d["z_flag"].fillna(False).astype(bool)].iterrows():
        zs = ", ".join(f"{c[2:]} {r[c]:+.1f}" for c in ("z_noise", "z_pois", "z_tot") if np.isfinite(r[c]))
        row = {
            "region": region_label(r["region"], r["region_name"]),
            "sex": r["sex"],
            "where": r["age_group"] or "\u2014",
            "why": f"Monte Carlo sd differs from the analytic sd beyond sampling error (z: {zs})",
        }
        if label is not None:
            row = {"setting": label, **row}
        rows.append(row)
    return rows


def flag_table(
    df: pd.DataFrame,
    V,
    indicator: str,
    *,
    ages: Sequence[float] | None = None,
    limit: int = 25,
    settings: Sequence | None = None,
) -> HtmlTable:
    """Where the first-order result is unreliable, for one indicator: sparse regions (more
    than :data:`SPARSE_SHARE` of the age cells rest on fewer than 10 events, stated with the
    counts and denominators of :func:`demonoise.analysis.decision.small_cell_text`; they do
    not depend on the setting) and cells whose Monte Carlo sd disagrees with the analytic
    one (``z_flag``) at ``V`` -- or, with ``settings``, at every setting (a ``setting``
    column). At most ``limit`` rows are shown (the note says how many there are)."""
    every = settings is not None
    rows = []
    sp = sparse_regions(df, V, indicator)
    names = df.drop_duplicates("region").set_index("region")["region_name"]
    for _, r in sp[sp["sparse"]].iterrows():
        row = {
            "region": region_label(r["region"], names.get(r["region"], "")),
            "sex": r["sex"],
            "where": "all ages",
            "why": r["text"].split(": ", 1)[-1],
        }
        rows.append({"setting": "every setting", **row} if every else row)
    for x in settings if every else [V]:
        d = at(df, x, indicator)
        if ages is not None and indicator in ("e",):
            d = d[np.isin(d["age"].astype(float), np.asarray(ages, float))]
        rows += _mc_flag_rows(d, NoiseSetting.of(x).label if every else None)
    cols = (["setting"] if every else []) + ["region", "sex", "where", "why"]
    frame = pd.DataFrame(rows, columns=cols)
    note = f"{len(frame)} flags; the first {limit} are shown." if len(frame) > limit else ""
    return HtmlTable(
        frame,
        frame.head(limit),
        caption=f"Flags: {INDICATOR_NAMES[indicator]}" + ("" if every else f" {NoiseSetting.of(V).phrase}"),
        flagged=[True] * min(len(frame), limit),
        note=note,
        empty=(
            "No region is sparse and no Monte Carlo disagreement was found (cells with fewer than 10 events "
            "are marked in the charts above)."
        ),
    )


# ============================================================ Monte Carlo check
def mc_summary(
    df: pd.DataFrame, V: float, indicator: str, *, ages: Sequence[float] | None = None, z_bound: float = 5.0
) -> dict:
    """Agreement of the Monte Carlo and analytic standard deviations at ``V``.

    Returns a dict with ``n`` (replicates, 0 if no Monte Carlo), ``cells`` compared
    (finite z), ``beyond`` (cells with ``|z| > z_bound`` in any component), ``max_abs_z``
    and ``rse`` (relative standard error of an sd from ``n`` replicates,
    ``1 / sqrt(2 n)``), and ``text``: one sentence.
    """
    d = at(df, V, indicator)
    if ages is not None and indicator == "e":
        d = d[np.isin(d["age"].astype(float), np.asarray(ages, float))]
    if "mc_n" not in d or d["mc_n"].isna().all():
        return {
            "n": 0,
            "cells": 0,
            "beyond": 0,
            "max_abs_z": float("nan"),
            "rse": float("nan"),
            "text": f"No Monte Carlo check was run for {INDICATOR_NAMES[indicator]}.",
        }
    n = int(d["mc_n"].dropna().iloc[0])
    z = d[["z_noise", "z_pois", "z_tot"]].abs()
    finite = np.isfinite(z).any(axis=1)
    cells = int(finite.sum())
    beyond = int((z > z_bound).any(axis=1).sum())
    zmax = float(np.nanmax(z.to_numpy())) if cells else float("nan")
    rse = 1.0 / math.sqrt(2.0 * n)
    if beyond == 0:
        text = (
            f"The Monte Carlo check ({fmt_int(n)} replicates) agrees with the analytic standard deviations "
            f"within sampling error in all {fmt_int(cells)} cells compared: |z| <= {z_bound:g} everywhere "
            f"(largest |z| = {zmax:.1f}; the relative standard error of a simulated sd is 1/sqrt(2N) = {fmt_pct(rse)})."
        )
    else:
        text = (
            f"The Monte Carlo check ({fmt_int(n)} replicates) disagrees with the analytic standard deviation "
            f"beyond sampling error (|z| > {z_bound:g}) in {_plural(beyond, 'cell', 'cells')} of {fmt_int(cells)} "
            f"(largest |z| = {zmax:.1f}); the first-order result is not reliable there (see the flags)."
        )
    return {"n": n, "cells": cells, "beyond": beyond, "max_abs_z": zmax, "rse": rse, "text": text}


# =================================================================== verdicts
@dataclass
class Verdict(MainPoints):
    """Plain-language verdict: sentences with numbers, and the numbers themselves (shown
    as a bullet list, like the report's main points)."""


def _what(indicator: str, age: float | None, sex: str) -> str:
    if indicator == "e":
        a = int(age or 0)
        name = "life expectancy at birth (e0)" if a == 0 else f"life expectancy at {a} (e{a})"
    elif indicator == "tfr":
        return "the total fertility rate (TFR)"
    else:
        name = INDICATOR_NAMES[indicator]
    return f"{name}, {_SEX_WORDS.get(sex, sex)}"


def _short(indicator: str, age: float | None) -> str:
    if indicator == "e":
        return f"e{int(age or 0)}"
    return indicator.upper()


def scalar_verdict(df: pd.DataFrame, V: float, indicator: str, *, sex: str = "T", age: float | None = None) -> Verdict:
    """Verdict for one number per region (``e`` at ``age``, or ``tfr``) at ``V``.

    Sentences (with the numbers): in how many NUTS 2 regions noise adds less than 10 %
    to the Poisson uncertainty; the smallest region's admixture with both standard
    deviations; the regions where noise reaches the Poisson uncertainty (``A >= 41 %``);
    the country as a whole; regions flagged as sparse.
    """
    if indicator == "tfr":
        sex = "F"
    d = scalar_rows(df, V, indicator, sex=sex, age=age)
    short = _short(indicator, age)
    unit = _UNITS.get(indicator, "")
    u = f" {unit}" if unit else ""
    reg = d[d["nuts_level"] == 2]
    cty = d[d["nuts_level"] == 0]
    v = Verdict()
    if d.empty:
        v.sentences.append(f"No results for {short} {NoiseSetting.of(V).phrase}.")
        return v
    n = len(reg)
    if n:
        low = int((reg["admixture"] < A_SMALL).sum())
        subject = f"{short} ({_SEX_WORDS[sex]})" if indicator != "tfr" else short
        if n == 1:
            verb = "adds less than 10 %" if low == 1 else "adds 10 % or more"
            where = "in the country's only NUTS 2 region"
        elif low == 0:
            verb = "adds 10 % or more"
            where = f"in all {n} NUTS 2 regions"
        else:
            verb = "adds less than 10 %"
            where = f"in all {n} NUTS 2 regions" if low == n else f"in {low} of {n} NUTS 2 regions"
        v.sentences.append(
            f"{_upper_first(NoiseSetting.of(V).phrase)}, noise {verb} to the statistical (Poisson) uncertainty of "
            f"{subject} {where}."
        )
        small = reg.sort_values("population").iloc[0]
        large = reg.sort_values("population").iloc[-1]
        lead = "In the smallest region" if n > 1 else "In"
        v.sentences.append(
            f"{lead}{',' if n > 1 else ''} {small['label']} ({fmt_int(small['population'])} people), it adds "
            f"{fmt_pct(small['admixture'])}: noise sd {fmt_num(small['sd_noise'], 2)}{u} against a Poisson sd of "
            f"{fmt_num(small['sd_pois'], 2)}{u} (relative total uncertainty {fmt_pct(small['rel_tot'])})."
        )
        if n > 2:
            v.sentences.append(
                f"In the largest, {large['label']} ({fmt_int(large['population'])} people), it adds "
                f"{fmt_pct(large['admixture'])}."
            )
        worst = reg.loc[reg["admixture"].idxmax()]
        if n > 1 and worst["region"] != small["region"]:
            v.sentences.append(
                f"The largest admixture is in {worst['label']} ({fmt_int(worst['population'])} people): "
                f"{fmt_pct(worst['admixture'])} (noise sd {fmt_num(worst['sd_noise'], 2)}{u}, Poisson sd "
                f"{fmt_num(worst['sd_pois'], 2)}{u})."
            )
        big = reg[reg["admixture"] >= A_EQUAL]
        if len(big):
            names = ", ".join(big.sort_values("population")["region"].tolist())
            v.sentences.append(
                "Noise is at least as large as the Poisson uncertainty (A >= 41 %) in "
                f"{_plural(len(big), 'region', 'regions')}: {names}."
            )
        v.numbers.update(
            regions=n,
            regions_below_10=low,
            regions_at_least_41=int(len(big)),
            smallest=str(small["region"]),
            smallest_population=float(small["population"]),
            smallest_admixture=float(small["admixture"]),
            worst=str(reg.loc[reg["admixture"].idxmax(), "region"]),
            worst_admixture=float(reg["admixture"].max()),
            worst_rel_noise=float(reg["rel_noise"].max()),
            worst_sd_noise=float(reg.loc[reg["admixture"].idxmax(), "sd_noise"]),
            median_admixture=float(reg["admixture"].median()),
        )
    if len(cty):
        c = cty.iloc[0]
        v.sentences.append(
            f"For {_full_name(c['region_name'])} as a whole, noise adds {fmt_pct(c['admixture'])} "
            f"(noise sd {fmt_num(c['sd_noise'], 2)}{u}, Poisson sd {fmt_num(c['sd_pois'], 2)}{u})."
        )
        v.numbers.update(country_admixture=float(c["admixture"]), country_sd_noise=float(c["sd_noise"]))
    sp = sparse_regions(df, V, indicator)
    key = "F" if indicator == "tfr" else sex
    sp = sp[(sp["sex"] == key) & sp["sparse"]]
    if len(sp):
        v.sentences.append(
            f"First-order results may be unreliable in {_plural(len(sp), 'region', 'regions')} where more than "
            "half of the "
            f"single-age cells rest on fewer than 10 events: {', '.join(sp['region'])} (flagged; see the Monte "
            "Carlo check)."
        )
    v.numbers["sparse_regions"] = sp["region"].tolist()
    return v


def age_verdict(df: pd.DataFrame, V: float, indicator: str, *, sex: str | None = None) -> Verdict:
    """Verdict for a by-age indicator (``asfr`` or ``asmr``) at ``V``, over the cells of
    the NUTS 2 regions (the country if it has none): how many cells noise adds less than
    10 % to, the median admixture, the largest admixture overall and among cells with at
    least 10 events, and the cells resting on fewer than 10 events."""
    sex = sex or ("F" if indicator == "asfr" else "T")
    d = at(df, V, indicator, sex=sex)
    d = d[np.isfinite(d["value"]) & (d["var_pois"] > 0)]
    reg = d[d["nuts_level"] == 2]
    if reg.empty:
        reg = d
    v = Verdict()
    if reg.empty:
        v.sentences.append(f"No results for {INDICATOR_NAMES[indicator]} {NoiseSetting.of(V).phrase}.")
        return v
    one, many = _EVENT_WORDS[indicator]
    n_reg = reg["region"].nunique()
    n_age = reg["age_group"].nunique()
    cells = len(reg)
    low = int((reg["admixture"] < A_SMALL).sum())
    v.sentences.append(
        f"{_upper_first(NoiseSetting.of(V).phrase)}, across the {n_age} single-age rates of "
        f"{_plural(n_reg, 'region', 'regions')} "
        f"({fmt_int(cells)} cells with {many}, {_SEX_WORDS[sex]}), noise adds less than 10 % to the Poisson "
        "uncertainty in "
        f"{fmt_int(low)} cells ({fmt_pct(low / cells)}); the median admixture is {fmt_pct(reg['admixture'].median())}."
    )
    i = reg["admixture"].idxmax()
    r = reg.loc[i]
    ev = r["events"]
    v.sentences.append(
        f"It is largest at {r['age_group']} in {region_label(r['region'], r['region_name'])}: A = "
        f"{fmt_pct(r['admixture'])}, "
        f"on {fmt_num(ev, 2)} {one if round(ev) == 1 else many}"
        + (" (fewer than 10 events: the first-order result is unreliable there)." if r["small_count"] else ".")
    )
    big = reg[~reg["small_count"].astype(bool)]
    if len(big) and bool(r["small_count"]):
        j = big["admixture"].idxmax()
        b = big.loc[j]
        v.sentences.append(
            f"Among cells with at least 10 {many}, the largest admixture is {fmt_pct(b['admixture'])} "
            f"({b['age_group']}, {region_label(b['region'], b['region_name'])})."
        )
    small = reg[reg["small_count"].astype(bool)]
    if len(small):
        v.sentences.append(
            f"Of these {fmt_int(cells)} cells with {many}, {fmt_int(len(small))} cells ({fmt_pct(len(small) / cells)}) "
            f"rest on fewer than 10 {many} (1 to 9): their relative total uncertainty has a median of "
            f"{fmt_pct(small['rel_tot'].median())}; the first-order result is unreliable there (open circles in the "
            "charts; the counts of every age cell"
            + (", for women, men and both sexes," if indicator == "asmr" else "")
            + " are in the main points' table of cells resting on few events)."
        )
    v.numbers.update(
        cells=cells,
        cells_below_10=low,
        median_admixture=float(reg["admixture"].median()),
        max_admixture=float(r["admixture"]),
        max_admixture_region=str(r["region"]),
        max_admixture_age=str(r["age_group"]),
        max_admixture_reliable=float(big["admixture"].max()) if len(big) else float("nan"),
        small_cells=int(len(small)),
    )
    return v


# ===================================================================== index
def index_metrics(df: pd.DataFrame, V: float, indicator: str = "e") -> dict:
    """The numbers the index page shows for one (country, V), from one section.

    ``indicator="e"`` (life expectancy section): number of NUTS 2 regions, the worst
    region for e0 (largest admixture, both sexes) with its population, relative noise
    sd, noise sd (years) and admixture, and the median admixture of e0 over regions.
    ``indicator="tfr"``: the largest relative noise sd and admixture of the TFR over
    NUTS 2 regions and where the admixture is largest. Keys are distinct between the
    two, so the payloads of both sections merge.
    """
    out: dict[str, Any] = {}
    if indicator == "e":
        reg = scalar_rows(df, V, "e", sex="T", age=0)
        nuts2 = reg[reg["nuts_level"] == 2]
        out["regions"] = int(len(nuts2))
        if len(nuts2):
            w = nuts2.loc[nuts2["admixture"].idxmax()]
            out.update(
                e0_worst_region=str(w["region"]),
                e0_worst_region_population=float(w["population"]),
                e0_rel_noise_worst=float(w["rel_noise"]),
                e0_sd_noise_worst=float(w["sd_noise"]),
                e0_admixture_worst=float(w["admixture"]),
                e0_admixture_median=float(nuts2["admixture"].median()),
            )
    elif indicator == "tfr":
        t = scalar_rows(df, V, "tfr")
        t2 = t[t["nuts_level"] == 2]
        if len(t2):
            out.update(
                tfr_rel_noise_worst=float(t2["rel_noise"].max()),
                tfr_admixture_worst=float(t2["admixture"].max()),
                tfr_worst_region=str(t2.loc[t2["admixture"].idxmax(), "region"]),
            )
    else:
        raise ParameterError(f"index metrics exist for 'e' and 'tfr', not {indicator!r}")
    return out


def across_settings(
    df: pd.DataFrame, indicator: str, *, sex: str = "T", age: float | None = None, nuts_level: int | None = 2
) -> pd.DataFrame:
    """Rows of one indicator (one sex, one age) for every noise setting of the table, with
    their ``setting`` label: what :func:`demonoise.report.content.charts.uncertainty_vs_population` draws."""
    if indicator in ("tfr", "asfr"):
        sex = "F"
    m = (df["indicator"] == indicator) & (df["sex"] == sex)
    if age is not None:
        m &= np.isclose(df["age"].astype(float), float(age))
    if nuts_level is not None and (df["nuts_level"] == nuts_level).any():
        m &= df["nuts_level"] == nuts_level
    out = df[m].copy()
    out["setting"] = setting_labels(out)
    return out
