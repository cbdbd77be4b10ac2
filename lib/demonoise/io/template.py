"""A user's own counts as one tidy CSV file (the "counts template").

Layout (documented in ``docs/csv_template.md``; example ``templates/counts_template.csv``)::

    region,sex,age,year,measure,value[,name][,status]
    BE10,F,Y_LT1,2023,population,7262,Région de Bruxelles-Capitale/ Brussels Hoofdstedelijk Gewest,real

* ``measure`` is ``population`` (1 January stocks, rows for year ``t`` **and**
  ``t + 1``), ``deaths`` (year ``t``) or ``births`` (year ``t``, live births by age of
  mother, ``sex = T``);
* ``sex`` is ``F``, ``M`` or ``T`` (``T`` is its own published cell, not ``F + M``);
* ``age`` uses Eurostat codes: single ages ``Y_LT1, Y1, ..., Y99, Y_OPEN`` (or
  ``Y_GE100``) or 5-year groups ``Y_LT5, Y5-9, ..., Y80-84, Y_GE85``; ``UNK`` (age not
  stated) is an optional published cell -- if present it must be present for every
  region and sex of the measure; ``TOTAL`` rows are allowed and checked against the
  sum of the cells;
* ``value`` is a non-negative integer count;
* optional ``name`` (region name) and ``status`` (``real`` or ``modelled``, uniform
  within a measure). Lines starting with ``#`` are comments; one of them may give the
  date the counts were extracted from their source, ``# extracted: YYYY-MM-DD``
  (``unknown`` allowed), recorded as every table's
  :attr:`~demonoise.core.counts.TableProvenance.extracted` and shown on report covers.

The same validation as :func:`demonoise.io.tidy.counts_from_eurostat` applies; errors
name the file, line, measure, region, sex, age and year.

Several years in one file (the multi-year template, :func:`read_panel_csv` and
:func:`write_panel_csv`): the same columns, ``population`` rows for 1 January of every
year from the first reference year to the last plus one -- each stock once, since the
population on 1 January of ``t + 1`` is the end of year ``t`` and the start of ``t + 1``
(one published cell) -- and ``deaths`` and ``births`` rows for every reference year.
:func:`read_counts_csv` reads one year of such a file with ``year=``.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.atomic import atomic_write_bytes
from demonoise.core.counts import Counts, Panel, Provenance, Region, TableProvenance
from demonoise.core.errors import DataError, FormatError, ParameterError
from demonoise.io._text import check_codes as _check_codes
from demonoise.io._text import csv_frame as _csv_frame
from demonoise.io._text import read_text as _read_text
from demonoise.io.nuts import is_nuts_code, nuts_region
from demonoise.io.tidy import counts_from_eurostat

__all__ = [
    "TEMPLATE_COLUMNS",
    "OPTIONAL_COLUMNS",
    "MEASURES",
    "read_counts_csv",
    "read_panel_csv",
    "write_counts_csv",
    "write_panel_csv",
]

TEMPLATE_COLUMNS = ("region", "sex", "age", "year", "measure", "value")
OPTIONAL_COLUMNS = ("name", "status")
MEASURES = ("population", "deaths", "births")
SOURCE = "user-supplied"
#: The comment line that gives the counts' extraction date: ``# extracted: 2025-03-28``.
_RE_EXTRACTED = re.compile(r"^\s*#\s*extracted\s*:(.*)$", re.IGNORECASE)
_RE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def read_counts_csv(
    path: str | Path,
    *,
    name: str | None = None,
    year: int | None = None,
    status: str | None = None,
    source: str = SOURCE,
    check_totals: str = "raise",
) -> Counts:
    """Read a counts template CSV into :class:`~demonoise.core.counts.Counts`.

    Parameters
    ----------
    path : str or Path
        The CSV file (UTF-8, optionally gzipped).
    name : str, optional
        Dataset name; default the file name without extension.
    year : int, optional
        Reference year ``t``. Default: the year of the deaths/births rows, or the
        earlier of two consecutive population years. A file of several years (the
        multi-year template, :func:`read_panel_csv`) needs it.
    status : {"real", "modelled"}, optional
        Provenance status of every table; overrides a ``status`` column. Default
        ``"real"``.
    source : str
        Publisher recorded in the provenance (default ``"user-supplied"``).
    check_totals : {"raise", "warn", "ignore"}
        What to do when a ``TOTAL`` row differs from the sum of its cells.

    Raises
    ------
    FormatError
        Missing or unknown columns, non-numeric value or year, an ``# extracted:`` line
        that is not a date ``YYYY-MM-DD`` or comes twice (naming the file and the line).
    DataError
        Unknown measure or sex, births with a sex other than ``T``, missing cells,
        duplicated cells, missing/negative/non-integer counts, unclear year, mixed
        status within a measure -- naming file, line, measure, region, sex, age, year.
    """
    tpl = _Template.parse(path, status=status, source=source)
    return tpl.counts(tpl.reference_year() if year is None else int(year), name, check_totals)


def read_panel_csv(
    path: str | Path,
    *,
    name: str | None = None,
    years=None,
    status: str | None = None,
    source: str = SOURCE,
    check_totals: str = "raise",
) -> Panel:
    """Read a multi-year counts template CSV into a :class:`~demonoise.core.counts.Panel`.

    The layout is the template's, with the ``year`` column spanning several years:
    ``population`` rows for 1 January of every year from the first reference year to the
    last plus one (each stock once: it is the end of one year and the start of the
    next), ``deaths`` and ``births`` rows for every reference year.

    Parameters
    ----------
    years : sequence of int, optional
        Reference years to read (consecutive); default every year with deaths or
        births rows, or every population year but the last if there are none.
    name, status, source, check_totals
        As :func:`read_counts_csv`.

    Raises
    ------
    DataError
        As :func:`read_counts_csv`, for every year; a year without its stocks names it.
    """
    tpl = _Template.parse(path, status=status, source=source)
    ys = tpl.reference_years() if years is None else sorted(int(y) for y in years)
    counts = [tpl.counts(t, name, check_totals) for t in ys]
    return Panel.from_counts(counts, name=name or tpl.default_name)


class _Template:
    """A parsed, row-checked counts template: the steps of :func:`read_counts_csv`."""

    def __init__(self, df, cols, file, path, val, years, statuses, regions, source, extracted="unknown"):
        self.df, self.cols, self.file, self.path = df, cols, file, path
        self.val, self.years, self.statuses, self.regions, self.source = val, years, statuses, regions, source
        self.extracted = extracted

    @property
    def default_name(self) -> str:
        return self.path.name.split(".")[0]

    @classmethod
    def parse(cls, path, *, status, source) -> _Template:
        path = Path(path)
        file = str(path)
        text = _read_text(path)
        extracted = _extraction_date(text, file)
        df = _csv_frame(text, path, comments=True)
        df.columns = [c.strip() for c in df.columns]
        cols = list(df.columns)
        _check_columns(cols, file)
        if df.empty:
            raise FormatError("the file has a header but no rows", file=file, line=1)
        for c in cols:
            df[c] = df[c].str.strip()
        # a NUL or zero-width space in a code would make a phantom region (value and year are parsed as numbers)
        _check_codes(df, [c for c in cols if c not in ("value", "year")], file)
        years, val = _check_rows(df, file)
        statuses = _statuses(df, cols, status, file)
        if "population" not in statuses:
            raise DataError("no population rows (1 January of t and t+1 are needed)", file=file, measure="population")
        return cls(df, cols, file, path, val, years, statuses, _regions(df, cols), source, extracted)

    def _split_years(self):
        ev = np.isin(self.df["measure"].to_numpy(), ("deaths", "births"))
        return sorted(set(self.years[ev].tolist())), sorted(set(self.years[~ev].tolist()))

    def reference_year(self) -> int:
        """The year of the deaths/births rows, or the earlier of two consecutive population years."""
        ev_years, pop_years = self._split_years()
        if len(ev_years) == 1:
            return int(ev_years[0])
        if not ev_years and len(pop_years) == 2 and pop_years[1] == pop_years[0] + 1:
            return int(pop_years[0])
        raise DataError(
            f"cannot tell the reference year (deaths/births years {ev_years}, population years {pop_years}); "
            "pass year= (or read the file as several years with read_panel_csv)",
            file=self.file,
        )

    def reference_years(self) -> list[int]:
        """Every year with deaths or births rows, else every population year but the last."""
        ev_years, pop_years = self._split_years()
        return [int(y) for y in (ev_years or pop_years[:-1])]

    def _tidy(self, measure: str) -> pd.DataFrame | None:
        df = self.df
        m = (df["measure"] == measure).to_numpy()
        if not m.any():
            return None
        out = pd.DataFrame(
            {
                "geo": df["region"].to_numpy()[m],
                "sex": df["sex"].to_numpy()[m],
                "age": df["age"].to_numpy()[m],
                "time": self.years[m],
                "value": self.val[m],
                "flag": "",
            },
            index=df.index[m],
        )
        out.attrs.update(file=self.file, format="template", dataset=None, extracted="unknown")
        return out

    def counts(self, year: int, name: str | None, check_totals: str) -> Counts:
        """The counts of reference year ``year``."""
        prov = Provenance(
            **{
                m: TableProvenance(st, (), self.extracted, self.source, f"read from {self.path.name}")
                for m, st in self.statuses.items()
            }
        )
        return counts_from_eurostat(
            self._tidy("population"),
            self._tidy("deaths"),
            self._tidy("births"),
            year=int(year),
            regions=self.regions,
            provenance=prov,
            name=name or self.default_name,
            check_totals=check_totals,
        )


def _extraction_date(text: str, file: str) -> str:
    """The date of the template's ``# extracted: YYYY-MM-DD`` comment line, ``"unknown"``
    without one (or with ``# extracted: unknown``).

    Raises
    ------
    FormatError
        The date is not a calendar date written ``YYYY-MM-DD``, or a second such line,
        naming the file and the line.
    """
    found: tuple[int, str] | None = None
    for n, line in enumerate(text.splitlines(), start=1):
        m = _RE_EXTRACTED.match(line)
        if m is None:
            continue
        if found is not None:
            raise FormatError(f"a second '# extracted:' line (the first is line {found[0]})", file=file, line=n)
        found = (n, _checked_date(m[1].strip(), file=file, line=n))
    return found[1] if found else "unknown"


def _checked_date(value: str, **where) -> str:
    """``value`` if it is ``unknown`` or a calendar date ``YYYY-MM-DD``; FormatError naming ``where`` otherwise."""
    if value.lower() == "unknown":
        return "unknown"
    try:
        if _RE_DATE.match(value):
            return _dt.date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    raise FormatError(f"extraction date {value!r} is not a date YYYY-MM-DD (e.g. 2025-03-28)", **where)


def _check_columns(cols: list, file: str) -> None:
    missing = [c for c in TEMPLATE_COLUMNS if c not in cols]
    unknown = [c for c in cols if c not in TEMPLATE_COLUMNS + OPTIONAL_COLUMNS]
    dup = len(set(cols)) != len(cols)
    if not (missing or unknown or dup):
        return
    what = "; ".join(
        x
        for x in (
            f"missing column(s) {missing}" if missing else "",
            f"unknown column(s) {unknown}" if unknown else "",
            "duplicated column names" if dup else "",
        )
        if x
    )
    raise FormatError(
        f"not a counts template: {what}; expected {','.join(TEMPLATE_COLUMNS)} "
        f"plus optional {','.join(OPTIONAL_COLUMNS)}",
        file=file,
        line=1,
    )


def _fail(df, file, mask: np.ndarray, msg: str, exc=DataError):
    """Raise ``exc`` for the first row of ``mask``, naming its line, measure, region, sex, age and year."""
    i = int(np.flatnonzero(mask)[0])
    r = df.iloc[i]
    raise exc(
        msg.format(**r.to_dict()),
        file=file,
        line=int(df.index[i]),
        measure=r["measure"] or None,
        region=r["region"] or None,
        sex=r["sex"] or None,
        age=r["age"] or None,
        year=r["year"] or None,
    )


def _check_rows(df, file) -> tuple[np.ndarray, np.ndarray]:
    """Check every row's codes, year and value; returns the years (int64) and values (float, nan missing)."""
    checks = (
        ((df[["region", "sex", "age", "measure"]] == "").any(axis=1).to_numpy(), "empty region, sex, age or measure"),
        (~df["measure"].isin(MEASURES).to_numpy(), "unknown measure {measure!r} (use " + ", ".join(MEASURES) + ")"),
        (~df["sex"].isin(("F", "M", "T")).to_numpy(), "unknown sex {sex!r} (use F, M or T)"),
        (
            ((df["measure"] == "births") & (df["sex"] != "T")).to_numpy(),
            "births must have sex T (all live births by age of mother), got {sex!r}",
        ),
    )
    for bad, msg in checks:
        if bad.any():
            _fail(df, file, bad, msg)
    yr = pd.to_numeric(df["year"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(yr) | (yr != np.round(yr))
    if bad.any():
        _fail(df, file, bad, "year {year!r} is not a whole number", FormatError)
    bad = (yr < 1000) | (yr > 9999)  # checked before the cast to integers
    if bad.any():
        _fail(df, file, bad, "year {year!r} is not a four-digit year", FormatError)
    missing_val = df["value"].isin(("", ":", "NA", "NaN", "nan")).to_numpy()
    val = pd.to_numeric(df["value"].where(~missing_val, "nan"), errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(val) & ~missing_val
    if bad.any():
        _fail(df, file, bad, "non-numeric value {value!r}", FormatError)
    return yr.astype(np.int64), val


def _statuses(df, cols, status, file) -> dict:
    """Provenance status per measure present: ``status`` if given, else the uniform
    ``status`` column of the measure, else ``"real"``."""
    present = [m for m in MEASURES if (df["measure"] == m).any()]
    if status is not None and status not in ("real", "modelled"):
        raise ParameterError(f"status must be 'real' or 'modelled', got {status!r}")
    if status is not None or "status" not in cols:
        return {m: status or "real" for m in present}
    out = {}
    for m in present:
        s = df.loc[df["measure"] == m, "status"]
        vals = sorted(set(s.unique().tolist()) - {""})
        bad = ~s.isin(("", "real", "modelled")).to_numpy()
        if bad.any():
            sub = df[df["measure"] == m]
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"status must be 'real' or 'modelled', got {s.iloc[i]!r}", file=file, line=int(sub.index[i]), measure=m
            )
        if len(vals) > 1:
            raise DataError(
                f"mixed status {vals} within one measure; a table is either real or modelled", file=file, measure=m
            )
        out[m] = vals[0] if vals else "real"
    return out


def _regions(df, cols) -> list[Region]:
    """Regions in order of first appearance, with the names of a ``name`` column (else NUTS names)."""
    nm: dict = {}
    if "name" in cols:
        for c, n in zip(df["region"], df["name"], strict=True):
            if n and c not in nm:
                nm[c] = n
    regions = []
    for c in pd.unique(df["region"].to_numpy()):
        reg = nuts_region(c) if is_nuts_code(c) else Region(c)
        regions.append(Region(c, nm.get(c, reg.name), reg.level, reg.country))
    return regions


def write_counts_csv(
    counts: Counts,
    path: str | Path,
    *,
    names: bool = True,
    status: bool = True,
    comment: str | None = None,
    extracted: str | None = None,
) -> Path:
    """Write :class:`~demonoise.core.counts.Counts` as a counts template CSV (inverse of
    :func:`read_counts_csv`), via :meth:`Counts.to_frame`.

    Columns ``region,sex,age,year,measure,value`` plus ``name`` (region names) and
    ``status`` (each table's provenance status) unless switched off. The open age
    interval is written with its canonical code (``Y_GE100`` for Eurostat's
    ``Y_OPEN``). ``comment`` (several lines allowed) is written first as ``#`` lines,
    then ``# extracted: YYYY-MM-DD``: ``extracted`` if given, else the earliest
    extraction date of the counts' tables (:attr:`TableProvenance.extracted`; a time
    stamp such as a download time gives its date), no line when none is known.
    Written gzipped if ``path`` ends with ``.gz``.

    Raises
    ------
    ParameterError
        ``extracted`` is not a date ``YYYY-MM-DD`` (or ``"unknown"``).
    """
    return _write_frame(
        counts.to_frame(), counts, path, names=names, status=status, comment=comment, extracted=extracted
    )


def write_panel_csv(
    panel: Panel,
    path: str | Path,
    *,
    names: bool = True,
    status: bool = True,
    comment: str | None = None,
    extracted: str | None = None,
) -> Path:
    """Write a :class:`~demonoise.core.counts.Panel` as a multi-year counts template CSV
    (inverse of :func:`read_panel_csv`): each 1 January stock once (``population`` rows of
    ``years[0] .. years[-1] + 1``), the deaths and births of every year; options as
    :func:`write_counts_csv`."""
    return _write_frame(panel.to_frame(), panel, path, names=names, status=status, comment=comment, extracted=extracted)


def _extraction_line(provenance: Provenance, extracted: str | None) -> str:
    """``"# extracted: YYYY-MM-DD\\n"`` for ``extracted`` or the earliest date of the tables; ``""`` if unknown."""
    if extracted is not None:
        try:
            date = _checked_date(str(extracted).strip())
        except FormatError as e:
            raise ParameterError(f"extracted: {e.reason}") from None
    else:
        known = [t.extracted[:10] for t in provenance.tables.values() if _is_date(t.extracted[:10])]
        date = min(known, default="unknown")
    return "" if date == "unknown" else f"# extracted: {date}\n"


def _is_date(text: str) -> bool:
    try:
        return _checked_date(text) != "unknown"
    except FormatError:
        return False


def _write_frame(
    df: pd.DataFrame, data, path, *, names: bool, status: bool, comment: str | None, extracted: str | None
) -> Path:
    path = Path(path)
    df["value"] = df["value"].astype(np.int64)
    if names:
        by_code = {r.code: r.name for r in data.regions}
        df["name"] = df["region"].map(by_code)
    if status:
        tables = data.provenance.tables
        df["status"] = df["measure"].map({m: t.status for m, t in tables.items()}).fillna("real")
    text = df.to_csv(index=False, lineterminator="\n")
    text = _extraction_line(data.provenance, extracted) + text
    if comment:
        text = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()) + text
    data_bytes = text.encode("utf-8")
    if path.name.endswith(".gz"):
        import gzip

        data_bytes = gzip.compress(data_bytes, mtime=0)
    atomic_write_bytes(path, data_bytes)
    return path
