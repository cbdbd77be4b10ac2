"""Build a :class:`~demonoise.core.counts.Counts` from tidy Eurostat tables.

The tidy tables are those of :mod:`demonoise.io.eurostat` (columns ``geo, sex, age,
time, value, flag`` and other dimensions), or any frame with at least ``geo, age,
time, value`` (and ``sex`` for population and deaths).

What :func:`counts_from_eurostat` does, in order:

1. keeps annual data (``freq == "A"``), number units (``unit == "NR"`` when several
   units are present) and the ``TOTAL`` category of any other dimension with several
   categories (e.g. ``ord_brth``);
2. keeps population rows of ``time == year`` (1 January of ``t``) and ``year + 1``
   (1 January of ``t + 1``), deaths and births of ``time == year``;
3. drops age ``TOTAL`` and aggregate age codes that contain other published codes
   (``Y_GE75``, ``Y_GE80`` next to ``Y75-79, Y80-84, Y_GE85`` in demo_r_pjangroup;
   ``Y15-19`` next to ``Y15..Y19``), optionally checking each ``TOTAL`` against the sum
   of the published cells (:func:`total_mismatches`);
4. derives the age axis from the remaining codes with
   :meth:`~demonoise.core.counts.AgeAxis.from_labels` (``Y_OPEN`` becomes the open interval;
   ``UNK`` stays a cell of its own -- indicators spread it later);
5. checks that every region has every age for every sex, and that no cell is
   duplicated, missing (``:``), negative or non-integer, raising
   :class:`~demonoise.core.errors.DataError` that names the file, line, measure, region,
   sex, age and year of the first bad cell.

Births keep their published age-of-mother axis (e.g. demo_r_fagec: ``Y_LT15, Y15 ..
Y49, Y_GE50, UNK``; demo_fordagec extracts: ``Y15 .. Y49, UNK``); sex ``T`` is used
when the table has a sex dimension.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from demonoise.core.counts import SEXES, AgeAxis, Counts, Provenance, Region, TableProvenance, first_bad_count
from demonoise.core.errors import DataError, FormatError, ParameterError
from demonoise.io.nuts import is_nuts_code, nuts_region

__all__ = ["TotalMismatchWarning", "published_age_codes", "total_mismatches", "counts_from_eurostat", "table_to_array"]

_CORE = ("geo", "sex", "age", "time", "value", "flag")
_RE_SINGLE = re.compile(r"^Y(\d+)$")
_RE_RANGE = re.compile(r"^Y(\d+)-(\d+)$")
_RE_LT = re.compile(r"^Y_LT(\d+)$")
_RE_GE = re.compile(r"^Y_GE(\d+)$")


class TotalMismatchWarning(UserWarning):
    """A published ``TOTAL`` differs from the sum of the published age cells."""


# ------------------------------------------------------------------------- age codes
def _interval(label: str) -> tuple[float, float] | None:
    """``[lower, upper)`` of an Eurostat age code; ``None`` for ``UNK``/``TOTAL``/``Y_OPEN``/unknown."""
    if m := _RE_SINGLE.match(label):
        a = int(m[1])
        return a, a + 1
    if m := _RE_RANGE.match(label):
        return int(m[1]), int(m[2]) + 1
    if m := _RE_LT.match(label):
        return 0, int(m[1])
    if m := _RE_GE.match(label):
        return int(m[1]), np.inf
    return None


def published_age_codes(labels: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split age codes into published cells and codes to drop.

    Dropped: ``TOTAL`` and every aggregate, i.e. a code whose interval strictly
    contains the interval of another code in ``labels`` (``Y_GE75`` when ``Y75-79`` is
    present, ``Y_LT20`` when ``Y15-19`` is). ``Y_OPEN`` counts as ``[last closed upper
    bound, inf)``; ``UNK`` is always kept. Order of ``labels`` is preserved.

    Returns
    -------
    kept, dropped : list of str
    """
    labels = [str(x).strip() for x in labels]
    labels = list(dict.fromkeys(labels))
    iv = {lab: _interval(lab) for lab in labels}
    if "Y_OPEN" in iv:
        uppers = [b for b in (v[1] for v in iv.values() if v) if np.isfinite(b)]
        iv["Y_OPEN"] = (max(uppers), np.inf) if uppers else None
    dropped = []
    for lab in labels:
        if lab == "TOTAL":
            dropped.append(lab)
            continue
        a = iv.get(lab)
        if a is None:
            continue
        for other, b in iv.items():
            if other == lab or b is None:
                continue
            if a[0] <= b[0] and b[1] <= a[1] and a != b:
                dropped.append(lab)
                break
    kept = [lab for lab in labels if lab not in dropped]
    return kept, dropped


def total_mismatches(df: pd.DataFrame, *, tolerance: float = 0.0) -> pd.DataFrame:
    """Compare every ``TOTAL`` age row with the sum of the published age cells.

    Groups by every column except ``age``, ``value`` and ``flag``; published cells are
    those kept by :func:`published_age_codes` (``UNK`` included). Groups without a
    ``TOTAL`` row are skipped; missing cells count as absent from the sum.

    Returns
    -------
    pandas.DataFrame
        One row per group where ``|TOTAL - sum| > tolerance``: the group columns,
        ``total``, ``sum_of_cells`` and ``difference`` (``total - sum``). Empty if all agree.
    """
    keys = [c for c in df.columns if c not in ("age", "value", "flag")]
    kept, _ = published_age_codes(pd.unique(df["age"]))
    tot = df[df["age"] == "TOTAL"].groupby(keys, sort=False, observed=True)["value"].sum(min_count=1)
    cells = df[df["age"].isin(kept)].groupby(keys, sort=False, observed=True)["value"].sum(min_count=1)
    both = pd.concat({"total": tot, "sum_of_cells": cells}, axis=1, join="inner")
    both["difference"] = both["total"] - both["sum_of_cells"]
    bad = both[both["difference"].abs() > tolerance]
    return bad.reset_index()


# ------------------------------------------------------------------------ preparing
def _file(df: pd.DataFrame) -> str | None:
    f = df.attrs.get("file")
    return None if f is None else str(f)


def _prepare(df: pd.DataFrame, measure: str, need_sex: bool) -> pd.DataFrame:
    """Check columns and reduce the extra dimensions (freq, unit, others) to one category."""
    if not isinstance(df, pd.DataFrame):
        raise ParameterError(f"{measure} must be a pandas DataFrame (a tidy Eurostat table), got {type(df).__name__}")
    file = _file(df)
    need = ["geo", "age", "time", "value"] + (["sex"] if need_sex else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise DataError(f"tidy table lacks column(s) {missing}", file=file, measure=measure)
    return one_category_per_dimension(df, file=file, measure=measure)


def one_category_per_dimension(df: pd.DataFrame, **where) -> pd.DataFrame:
    """The annual rows (``freq`` A) and, in every dimension beyond the core columns, one
    category: the only one, ``NR`` for ``unit``, else ``TOTAL``. ``where`` (file, measure,
    dataset, ...) names the table in the :class:`DataError` raised when there is no annual
    row or a dimension has several categories and no total."""
    out = df
    if "freq" in out.columns:
        out = out[out["freq"] == "A"]
        if out.empty:
            raise DataError("no annual data (freq 'A') in the table", **where)
    for col in [c for c in out.columns if c not in _CORE and c != "freq"]:
        cats = pd.unique(out[col])
        if len(cats) <= 1:
            continue
        pick = "NR" if col == "unit" and "NR" in cats else "TOTAL" if "TOTAL" in cats else None
        if pick is None:
            raise DataError(
                f"dimension '{col}' has several categories ({', '.join(map(str, cats[:6]))}); filter the table to one",
                **where,
            )
        out = out[out[col] == pick]
    return out


def _line(df: pd.DataFrame, pos) -> int | None:
    return int(df.index[pos]) if df.index.name == "line" else None


def table_to_array(
    df: pd.DataFrame,
    *,
    measure: str,
    regions: Sequence[str],
    sexes: Sequence[str] | None,
    ages: AgeAxis,
    year: int,
    file: str | None = None,
) -> np.ndarray:
    """Dense ``int64`` array (regions x sexes x ages, or regions x ages if ``sexes`` is None)
    from the tidy rows of one measure and one year, validating every cell.

    Rows of other regions or of age codes off ``ages`` are ignored (the caller has
    dropped ``TOTAL`` and aggregates). Raises :class:`DataError` naming file, line,
    measure, region, sex, age and year for a duplicated, absent, missing (``NaN``),
    negative or non-integer cell.
    """
    file = file or _file(df)
    df = df[df["time"] == year]
    codes = list(regions)
    shape = [len(codes)] + ([len(sexes)] if sexes is not None else []) + [ages.size]
    lab_index = {lab: i for i, lab in enumerate(ages.labels)}
    if ages.is_open:
        lab_index["Y_OPEN"] = ages.n_known - 1
    gi = pd.Index(codes).get_indexer(df["geo"].astype(str).to_numpy())
    ai = pd.Series(df["age"].astype(str).to_numpy()).map(lab_index).fillna(-1).to_numpy(dtype=np.int64)
    idx = [gi]
    if sexes is not None:
        idx.append(pd.Index(list(sexes)).get_indexer(df["sex"].astype(str).to_numpy()))
    idx.append(ai)
    ok = np.all([i >= 0 for i in idx], axis=0) if len(df) else np.zeros(0, bool)
    rows = np.flatnonzero(ok)
    flat = np.ravel_multi_index([i[rows] for i in idx], shape) if len(rows) else np.zeros(0, np.int64)
    values = df["value"].to_numpy(dtype=float)[rows]

    def where(cell: int) -> dict:
        ix = np.unravel_index(cell, shape)
        loc = {"region": codes[ix[0]], "age": ages.labels[ix[-1]]}
        if sexes is not None:
            loc["sex"] = sexes[ix[1]]
        return loc

    order = np.argsort(flat, kind="stable")
    sf = flat[order]
    dup = np.flatnonzero(sf[1:] == sf[:-1])
    if len(dup):
        cell = int(sf[dup[0]])
        r1, r2 = rows[order[dup[0]]], rows[order[dup[0] + 1]]
        l1, l2 = _line(df, r1), _line(df, r2)
        raise DataError(
            "duplicated cell" + (f" (lines {l1} and {l2})" if l1 else ""),
            file=file,
            line=l2,
            measure=measure,
            year=year,
            **where(cell),
        )
    N = int(np.prod(shape))
    arr = np.full(N, np.nan)
    arr[flat] = values
    src = np.full(N, -1, dtype=np.int64)
    src[flat] = rows
    absent = src < 0
    if absent.any():
        cell = int(np.flatnonzero(absent)[0])
        n_abs = int(absent.sum())
        raise DataError(
            f"no value for this cell ({n_abs} cell(s) absent from the table)",
            file=file,
            measure=measure,
            year=year,
            **where(cell),
        )
    bad = first_bad_count(arr)  # before the cast: inf or 1e30 must not wrap around to a negative int64
    if bad is not None:
        cell, kind, why = bad
        if kind == "missing":
            why = "missing value (':' or empty in the file)"
        exc = FormatError if kind in ("infinite", "inexact") else DataError  # not a count as written
        raise exc(why, file=file, line=_line(df, int(src[cell])), measure=measure, year=year, **where(cell))
    return np.round(arr).astype(np.int64).reshape(shape)


def _axis(df: pd.DataFrame, measure: str) -> tuple[AgeAxis, list[str]]:
    kept, dropped = published_age_codes(pd.unique(df["age"].astype(str)))
    try:
        axis = AgeAxis.from_labels(kept, source=_file(df))
    except DataError as e:
        rows = np.flatnonzero((df["age"].astype(str) == str(e.age)).to_numpy()) if e.age else []
        first = df.iloc[rows[0]] if len(rows) else None
        raise DataError(
            e.reason,
            file=_file(df),
            line=_line(df, rows[0]) if len(rows) else None,
            measure=measure,
            region=None if first is None else first["geo"],
            sex=None if first is None or "sex" not in df.columns else first["sex"],
            age=e.age,
            year=None if first is None else first["time"],
        ) from None
    return axis, [d for d in dropped if d != "TOTAL"]


def _check_totals(df: pd.DataFrame, measure: str, mode: str) -> None:
    if mode == "ignore" or not (df["age"] == "TOTAL").any():
        return
    bad = total_mismatches(df)
    if bad.empty:
        return
    cols = [c for c in ("geo", "sex", "time") if c in bad.columns]
    items = [
        ", ".join(f"{c} {r[c]}" for c in cols) + f": TOTAL {r['total']:g} vs sum {r['sum_of_cells']:g}"
        for _, r in bad.head(8).iterrows()
    ]
    more = f" (and {len(bad) - 8} more)" if len(bad) > 8 else ""
    msg = (
        f"{measure}: TOTAL differs from the sum of the published age cells in {len(bad)} case(s): "
        + "; ".join(items)
        + more
    )
    if mode == "raise":
        first = bad.iloc[0]
        raise DataError(
            msg, file=_file(df), measure=measure, region=first.get("geo"), sex=first.get("sex"), year=first.get("time")
        )
    warnings.warn(msg + (f" [file {_file(df)}]" if _file(df) else ""), TotalMismatchWarning, stacklevel=3)


def _default_provenance(tables: Mapping[str, pd.DataFrame | None], notes: Mapping[str, str]) -> Provenance:
    def one(name):
        df = tables.get(name)
        if df is None:
            return None
        ds = df.attrs.get("dataset")
        file = _file(df)
        note = "; ".join(x for x in (f"read from {file.rsplit('/', 1)[-1]}" if file else "", notes.get(name, "")) if x)
        return TableProvenance("real", (ds,) if ds else (), str(df.attrs.get("extracted", "unknown")), "Eurostat", note)

    return Provenance(population=one("population"), deaths=one("deaths"), births=one("births"))


def _region_objects(
    codes: Sequence[str], given: Mapping[str, Region], names: Mapping[str, str] | None
) -> tuple[Region, ...]:
    out = []
    for c in codes:
        if c in given:
            reg = given[c]
        elif is_nuts_code(c):
            reg = nuts_region(c)
        else:
            reg = Region(c)
        if names and c in names:
            reg = Region(reg.code, str(names[c]), reg.level, reg.country)
        out.append(reg)
    return tuple(out)


# ------------------------------------------------------------------------------ main
def _of_the_years(sources: dict, year: int):
    """Population of 1 January ``year`` and ``year + 1``, deaths and births (sex T) of
    ``year``: the tidy tables prepared and restricted, each present or a DataError."""
    population, deaths, births = sources["population"], sources["deaths"], sources["births"]
    pop = _prepare(population, "population", True)
    dea = None if deaths is None else _prepare(deaths, "deaths", True)
    bir = None if births is None else _prepare(births, "births", False)
    pop = pop[pop["time"].isin([year, year + 1])]
    for t in (year, year + 1):
        if not (pop["time"] == t).any():
            raise DataError(
                f"population on 1 January {t} is not in the table (the exposure needs P({year}) and P({year + 1}))",
                file=_file(population),
                measure="population",
                year=t,
            )
    if dea is not None:
        dea = dea[dea["time"] == year]
        if dea.empty:
            raise DataError(f"no deaths for {year} in the table", file=_file(deaths), measure="deaths", year=year)
    bir = None if bir is None else _births_of(bir, year, _file(births))
    return pop, dea, bir


def _births_of(bir: pd.DataFrame, year: int, file) -> pd.DataFrame:
    """Births of ``year``, all live births (sex T where the table has a sex)."""
    bir = bir[bir["time"] == year]
    if bir.empty:
        raise DataError(f"no births for {year} in the table", file=file, measure="births", year=year)
    if "sex" not in bir.columns:
        return bir
    if not (bir["sex"] == "T").any():
        raise DataError("births table has no sex 'T' (all live births) rows", file=file, measure="births", sex="T")
    return bir[bir["sex"] == "T"]


def _region_codes(pop: pd.DataFrame, year: int, regions) -> tuple[list[str], dict[str, Region]]:
    """The region codes asked for (default: every geo of the population in ``year``), and
    the :class:`Region` objects given among them; a code asked twice is a DataError."""
    given: dict[str, Region] = {}
    if regions is None:
        return list(dict.fromkeys(pop.loc[pop["time"] == year, "geo"].astype(str))), given
    codes = []
    for r in regions:
        if isinstance(r, Region):
            given[r.code] = r
            codes.append(r.code)
        else:
            codes.append(str(r).strip())
    if len(set(codes)) != len(codes):
        dup = next(c for c in codes if codes.count(c) > 1)
        raise DataError("region requested twice", region=dup)
    return codes, given


def _check_regions(codes: list[str], tables: dict, sources: dict, year: int) -> None:
    """Every region in every table, and in the population of both years."""
    for label, df in tables.items():
        if df is None:
            continue
        have = set(pd.unique(df["geo"].astype(str)))
        for c in codes:
            if c not in have:
                hint = ""
                if not is_nuts_code(c):
                    hint = (
                        " (not a NUTS 2021 code either"
                        + ("; Eurostat writes Greece as EL" if c.startswith("GR") else "")
                        + ")"
                    )
                raise DataError(
                    f"unknown region code: not in the {label} table{hint}",
                    file=_file(sources[label]),
                    measure=label,
                    region=c,
                    year=year,
                )
        if label == "population":
            _check_both_years(codes, df, sources["population"], year)


def _check_both_years(codes: list[str], pop: pd.DataFrame, source, year: int) -> None:
    """Population on 1 January of ``year`` and ``year + 1`` for every region."""
    for t in (year, year + 1):
        have_t = set(pd.unique(pop.loc[pop["time"] == t, "geo"].astype(str)))
        for c in codes:
            if c not in have_t:
                raise DataError(
                    f"no population on 1 January {t} for this region (the exposure needs P({year}) and P({year + 1}))",
                    file=_file(source),
                    measure="population",
                    region=c,
                    year=t,
                )


def _age_axes(pop, dea, bir, deaths, check_totals: str):
    """The age axes of population (and deaths: the same) and births, aggregates and TOTAL
    dropped (``TOTAL`` rows checked against the cells first), with the provenance notes."""
    _check_totals(pop, "population", check_totals)
    ages, dropped = _axis(pop, "population")
    notes = {"population": f"aggregate age codes dropped: {', '.join(dropped)}" if dropped else ""}
    if dea is not None:
        _check_totals(dea, "deaths", check_totals)
        d_ages, d_dropped = _axis(dea, "deaths")
        if d_ages != ages:
            raise DataError(
                f"deaths are published on another age axis ({d_ages.labels[0]}..{d_ages.labels[-1]}, "
                f"{d_ages.size} cells) than population ({ages.labels[0]}..{ages.labels[-1]}, {ages.size} cells)",
                file=_file(deaths),
                measure="deaths",
            )
        notes["deaths"] = f"aggregate age codes dropped: {', '.join(d_dropped)}" if d_dropped else ""
    birth_ages = None
    if bir is not None:
        _check_totals(bir, "births", check_totals)
        birth_ages, b_dropped = _axis(bir, "births")
        notes["births"] = f"aggregate age codes dropped: {', '.join(b_dropped)}" if b_dropped else ""
    return ages, birth_ages, notes


def counts_from_eurostat(
    population: pd.DataFrame,
    deaths: pd.DataFrame | None = None,
    births: pd.DataFrame | None = None,
    *,
    year: int,
    regions: Sequence[str | Region] | None = None,
    names: Mapping[str, str] | None = None,
    provenance: Provenance | None = None,
    name: str,
    check_totals: str = "warn",
) -> Counts:
    """Build :class:`~demonoise.core.counts.Counts` for reference year ``t = year``.

    Parameters
    ----------
    population : DataFrame
        Tidy population on 1 January (e.g. demo_r_d2jan, demo_r_pjangroup, demo_pjan)
        with ``time == year`` (``P(t)``) and ``time == year + 1`` (``P(t+1)``).
    deaths : DataFrame, optional
        Tidy deaths (e.g. demo_r_magec) with ``time == year``; same age axis as
        ``population``.
    births : DataFrame, optional
        Tidy live births by age of mother (e.g. demo_r_fagec, demo_fordagec) with
        ``time == year``; its own age axis.
    year : int
        Reference year ``t``.
    regions : sequence of str or Region, optional
        Region codes to keep, in this order. Default: every ``geo`` of the population
        table in year ``t`` (aggregates such as ``EU27_2020`` included -- pass codes
        to avoid them).
    names : mapping, optional
        Region names by code; otherwise NUTS 2021 names where the code is a NUTS code.
    provenance : Provenance, optional
        Default: every table "real" from Eurostat, with the dataset code, extraction
        date and file recorded by the reader, and a note of the dropped age codes.
    name : str
        Dataset name.
    check_totals : {"warn", "raise", "ignore"}
        Compare ``TOTAL`` rows with the sum of the published age cells (``UNK``
        included) and warn (:class:`TotalMismatchWarning`) or raise, naming the cells.

    Returns
    -------
    Counts

    Raises
    ------
    DataError
        Region not in a table, a table without year ``t`` or ``t + 1``, a cell absent,
        duplicated, missing, negative or non-integer, deaths on another age axis than
        population -- naming file, line, measure, region, sex, age and year.
    """
    if check_totals not in ("warn", "raise", "ignore"):
        raise ParameterError(f"check_totals must be 'warn', 'raise' or 'ignore', got {check_totals!r}")
    year = int(year)
    sources = {"population": population, "deaths": deaths, "births": births}
    pop, dea, bir = _of_the_years(sources, year)
    pop_file = _file(population)
    codes, given = _region_codes(pop, year, regions)
    _check_regions(codes, {"population": pop, "deaths": dea, "births": bir}, sources, year)
    sel = lambda d: d[d["geo"].astype(str).isin(codes)]  # noqa: E731
    pop, dea, bir = sel(pop), None if dea is None else sel(dea), None if bir is None else sel(bir)
    ages, birth_ages, notes = _age_axes(pop, dea, bir, deaths, check_totals)
    sexes = list(SEXES)
    for label, df, src in (("population", pop, population), ("deaths", dea, deaths)):
        if df is None:
            continue
        have = set(pd.unique(df["sex"].astype(str)))
        for s in sexes:
            if s not in have:
                raise DataError(f"sex {s} is not in the {label} table", file=_file(src), measure=label, sex=s)

    p0 = table_to_array(pop, measure="population", regions=codes, sexes=sexes, ages=ages, year=year, file=pop_file)
    p1 = table_to_array(pop, measure="population", regions=codes, sexes=sexes, ages=ages, year=year + 1, file=pop_file)
    d = (
        None
        if dea is None
        else table_to_array(dea, measure="deaths", regions=codes, sexes=sexes, ages=ages, year=year, file=_file(deaths))
    )
    b = (
        None
        if bir is None
        else table_to_array(
            bir, measure="births", regions=codes, sexes=None, ages=birth_ages, year=year, file=_file(births)
        )
    )
    if provenance is None:
        provenance = _default_provenance({"population": population, "deaths": deaths, "births": births}, notes)
    return Counts(
        name=name,
        year=year,
        regions=_region_objects(codes, given, names),
        ages=ages,
        pop_start=p0,
        pop_end=p1,
        provenance=provenance,
        deaths=d,
        births=b,
        birth_ages=birth_ages,
    )
