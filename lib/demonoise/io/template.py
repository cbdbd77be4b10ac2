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
  within a measure). Lines starting with ``#`` are comments.

The same validation as :func:`demonoise.io.tidy.counts_from_eurostat` applies; errors
name the file, line, measure, region, sex, age and year.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.atomic import atomic_write_bytes
from demonoise.core.counts import Counts, Provenance, Region, TableProvenance
from demonoise.core.errors import DataError, FormatError, ParameterError
from demonoise.io._text import check_codes as _check_codes
from demonoise.io._text import csv_frame as _csv_frame
from demonoise.io._text import read_text as _read_text
from demonoise.io.nuts import is_nuts_code, nuts_region
from demonoise.io.tidy import counts_from_eurostat

__all__ = ["TEMPLATE_COLUMNS", "OPTIONAL_COLUMNS", "MEASURES", "read_counts_csv", "write_counts_csv"]

TEMPLATE_COLUMNS = ("region", "sex", "age", "year", "measure", "value")
OPTIONAL_COLUMNS = ("name", "status")
MEASURES = ("population", "deaths", "births")
SOURCE = "user-supplied"


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
        earlier of two consecutive population years.
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
        Missing or unknown columns, non-numeric value or year.
    DataError
        Unknown measure or sex, births with a sex other than ``T``, missing cells,
        duplicated cells, missing/negative/non-integer counts, unclear year, mixed
        status within a measure -- naming file, line, measure, region, sex, age, year.
    """
    path = Path(path)
    file = str(path)
    df = _csv_frame(_read_text(path), path, comments=True)
    df.columns = [c.strip() for c in df.columns]
    cols = list(df.columns)
    missing = [c for c in TEMPLATE_COLUMNS if c not in cols]
    unknown = [c for c in cols if c not in TEMPLATE_COLUMNS + OPTIONAL_COLUMNS]
    if missing or unknown or len(set(cols)) != len(cols):
        what = "; ".join(
            x
            for x in (
                f"missing column(s) {missing}" if missing else "",
                f"unknown column(s) {unknown}" if unknown else "",
                "duplicated column names" if len(set(cols)) != len(cols) else "",
            )
            if x
        )
        raise FormatError(
            f"not a counts template: {what}; expected {','.join(TEMPLATE_COLUMNS)} "
            f"plus optional {','.join(OPTIONAL_COLUMNS)}",
            file=file,
            line=1,
        )
    if df.empty:
        raise FormatError("the file has a header but no rows", file=file, line=1)
    for c in cols:
        df[c] = df[c].str.strip()
    # a NUL or zero-width space in a code would make a phantom region (value and year are parsed as numbers)
    _check_codes(df, [c for c in cols if c not in ("value", "year")], file)

    def fail(mask: np.ndarray, msg: str, exc=DataError):
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

    empty_key = (df[["region", "sex", "age", "measure"]] == "").any(axis=1).to_numpy()
    if empty_key.any():
        fail(empty_key, "empty region, sex, age or measure")
    bad = ~df["measure"].isin(MEASURES).to_numpy()
    if bad.any():
        fail(bad, "unknown measure {measure!r} (use " + ", ".join(MEASURES) + ")")
    bad = ~df["sex"].isin(("F", "M", "T")).to_numpy()
    if bad.any():
        fail(bad, "unknown sex {sex!r} (use F, M or T)")
    bad = ((df["measure"] == "births") & (df["sex"] != "T")).to_numpy()
    if bad.any():
        fail(bad, "births must have sex T (all live births by age of mother), got {sex!r}")
    yr = pd.to_numeric(df["year"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(yr) | (yr != np.round(yr))
    if bad.any():
        fail(bad, "year {year!r} is not a whole number", FormatError)
    bad = (yr < 1000) | (yr > 9999)  # checked before the cast to integers
    if bad.any():
        fail(bad, "year {year!r} is not a four-digit year", FormatError)
    missing_val = df["value"].isin(("", ":", "NA", "NaN", "nan")).to_numpy()
    val = pd.to_numeric(df["value"].where(~missing_val, "nan"), errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(val) & ~missing_val
    if bad.any():
        fail(bad, "non-numeric value {value!r}", FormatError)
    years = yr.astype(np.int64)

    # reference year
    if year is None:
        ev = np.isin(df["measure"].to_numpy(), ("deaths", "births"))
        ev_years = sorted(set(years[ev].tolist()))
        pop_years = sorted(set(years[~ev].tolist()))
        if len(ev_years) == 1:
            year = ev_years[0]
        elif not ev_years and len(pop_years) == 2 and pop_years[1] == pop_years[0] + 1:
            year = pop_years[0]
        else:
            raise DataError(
                f"cannot tell the reference year (deaths/births years {ev_years}, population years "
                f"{pop_years}); pass year=",
                file=file,
            )
    year = int(year)

    # provenance status per measure
    present = [m for m in MEASURES if (df["measure"] == m).any()]
    if status is not None and status not in ("real", "modelled"):
        raise ParameterError(f"status must be 'real' or 'modelled', got {status!r}")
    statuses = {}
    for m in present:
        if status is not None:
            statuses[m] = status
            continue
        if "status" in cols:
            s = df.loc[df["measure"] == m, "status"]
            vals = sorted(set(s.unique().tolist()) - {""})
            bad = ~s.isin(("", "real", "modelled")).to_numpy()
            if bad.any():
                sub = df[df["measure"] == m]
                i = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"status must be 'real' or 'modelled', got {s.iloc[i]!r}",
                    file=file,
                    line=int(sub.index[i]),
                    measure=m,
                )
            if len(vals) > 1:
                raise DataError(
                    f"mixed status {vals} within one measure; a table is either real or modelled", file=file, measure=m
                )
            statuses[m] = vals[0] if vals else "real"
        else:
            statuses[m] = "real"
    if "population" not in present:
        raise DataError("no population rows (1 January of t and t+1 are needed)", file=file, measure="population")

    def tidy(measure: str) -> pd.DataFrame | None:
        m = (df["measure"] == measure).to_numpy()
        if not m.any():
            return None
        out = pd.DataFrame(
            {
                "geo": df["region"].to_numpy()[m],
                "sex": df["sex"].to_numpy()[m],
                "age": df["age"].to_numpy()[m],
                "time": years[m],
                "value": val[m],
                "flag": "",
            },
            index=df.index[m],
        )
        out.attrs.update(file=file, format="template", dataset=None, extracted="unknown")
        return out

    # region order and names: first appearance
    codes = list(pd.unique(df["region"].to_numpy()))
    regions = []
    nm = {}
    if "name" in cols:
        for c, n in zip(df["region"], df["name"], strict=True):
            if n and c not in nm:
                nm[c] = n
    for c in codes:
        reg = nuts_region(c) if is_nuts_code(c) else Region(c)
        regions.append(Region(c, nm.get(c, reg.name), reg.level, reg.country))

    prov = Provenance(
        **{m: TableProvenance(statuses[m], (), "unknown", source, f"read from {path.name}") for m in present}
    )
    return counts_from_eurostat(
        tidy("population"),
        tidy("deaths"),
        tidy("births"),
        year=year,
        regions=regions,
        provenance=prov,
        name=name or path.name.split(".")[0],
        check_totals=check_totals,
    )


def write_counts_csv(
    counts: Counts, path: str | Path, *, names: bool = True, status: bool = True, comment: str | None = None
) -> Path:
    """Write :class:`~demonoise.core.counts.Counts` as a counts template CSV (inverse of
    :func:`read_counts_csv`), via :meth:`Counts.to_frame`.

    Columns ``region,sex,age,year,measure,value`` plus ``name`` (region names) and
    ``status`` (each table's provenance status) unless switched off. The open age
    interval is written with its canonical code (``Y_GE100`` for Eurostat's
    ``Y_OPEN``). ``comment`` (several lines allowed) is written first as ``#`` lines.
    Written gzipped if ``path`` ends with ``.gz``.
    """
    path = Path(path)
    df = counts.to_frame()
    df["value"] = df["value"].astype(np.int64)
    if names:
        by_code = {r.code: r.name for r in counts.regions}
        df["name"] = df["region"].map(by_code)
    if status:
        tables = counts.provenance.tables
        df["status"] = df["measure"].map({m: t.status for m, t in tables.items()}).fillna("real")
    text = df.to_csv(index=False, lineterminator="\n")
    if comment:
        text = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()) + text
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        import gzip

        data = gzip.compress(data, mtime=0)
    atomic_write_bytes(path, data)
    return path
