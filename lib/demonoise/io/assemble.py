r"""The dataset ``eurostat-<t>`` from Eurostat's six tidy tables: regions, age axes, completeness.

:func:`assemble_counts` turns the tidy tables (:mod:`demonoise.io.eurostat`) of one
reference year ``t`` into one :class:`~demonoise.core.counts.Counts` through
:func:`~demonoise.io.tidy.counts_from_eurostat`:

=========== ========================== ====================== =====================
measure     NUTS 2 regions             countries (NUTS 0)     years
=========== ========================== ====================== =====================
population  ``demo_r_d2jan``           ``demo_pjan``          1 January ``t``, ``t+1``
deaths      ``demo_r_magec``           ``demo_magec``         ``t``
births      ``demo_r_fagec``           ``demo_fagec``         ``t`` (age of mother)
=========== ========================== ====================== =====================

In order: one category per extra dimension (annual, number, ``TOTAL``); NUTS 2021 codes
only (codes of other NUTS versions are listed, not used); the regions with a population
value on 1 January ``t`` (countries selected locally); the age axes of the NUTS 2 tables
(deaths on the population's axis); the regions lacking a table or cells (an error naming
them, or dropped with :class:`IncompleteRegionWarning`); the counts, with a provenance that
lists both datasets of every measure, their download times and Eurostat's update stamps.
No network, no files: the tables come from :func:`demonoise.io.eurostat_api.read_table`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from demonoise.core.counts import Counts, Provenance, TableProvenance
from demonoise.core.errors import DataError, ParameterError
from demonoise.io.eurostat_api import COUNT_TABLES
from demonoise.io.nuts import nuts_codes
from demonoise.io.tidy import counts_from_eurostat, one_category_per_dimension, published_age_codes

__all__ = [
    "IncompleteRegionWarning",
    "Assembly",
    "assemble_counts",
    "check_countries",
    "check_year",
    "check_years",
    "dataset_name",
    "table_years",
    "years_text",
]


class IncompleteRegionWarning(UserWarning):
    """Regions dropped because a table lacks them or some of their cells (``skip_incomplete``)."""


# ------------------------------------------------------------------------- parameters
def dataset_name(year: int, countries: Sequence[str] | None = None) -> str:
    """``eurostat-<year>`` for every country, ``eurostat-<year>-<cc>-<cc>...`` for a selection."""
    if not countries:
        return f"eurostat-{int(year)}"
    return f"eurostat-{int(year)}-" + "-".join(c.lower() for c in countries)


def check_year(year) -> int:
    """The reference year as an int in 1960..2100 (ParameterError otherwise)."""
    try:
        y = int(year)
    except (TypeError, ValueError):
        raise ParameterError(f"year must be an integer, got {year!r}") from None
    if isinstance(year, bool) or (isinstance(year, float) and year != y):
        raise ParameterError(f"year must be an integer, got {year!r}")
    if not 1960 <= y <= 2100:
        raise ParameterError(f"year {y} is outside 1960..2100")
    return y


def check_countries(countries) -> tuple[str, ...] | None:
    """Upper-case, de-duplicated NUTS 2021 country codes, in the classification's order."""
    if countries is None:
        return None
    if isinstance(countries, str):
        countries = [countries]
    wanted: list[str] = []
    for c in countries:
        for part in str(c).split(","):
            part = part.strip().upper()
            if part and part not in wanted:
                wanted.append(part)
    if not wanted:
        return None
    known = nuts_codes(level=0)
    for c in wanted:
        if c not in known:
            hint = {"GR": " (Eurostat writes Greece as EL)", "GB": " (Eurostat writes the United Kingdom as UK)"}.get(
                c, ""
            )
            raise ParameterError(f"unknown country code {c!r}{hint}; NUTS 2021 countries: {', '.join(known)}")
    return tuple(c for c in known if c in wanted)


def check_years(years) -> tuple[int, ...]:
    """Reference years of a multi-year dataset: each checked (:func:`check_year`), given
    once, and consecutive; sorted. ParameterError naming the years otherwise."""
    if isinstance(years, (int, str)):
        years = [years]
    ys = [check_year(y) for y in years]
    if not ys:
        raise ParameterError("no reference year given")
    twice = sorted({y for y in ys if ys.count(y) > 1})
    if twice:
        raise ParameterError(f"year {', '.join(map(str, twice))} given twice (years {', '.join(map(str, ys))})")
    ys.sort()
    gaps = [y for y in range(ys[0], ys[-1] + 1) if y not in ys]
    if gaps:
        raise ParameterError(
            f"the years of a multi-year dataset must be consecutive: got {', '.join(map(str, ys))} "
            f"(missing {', '.join(map(str, gaps))})"
        )
    return tuple(ys)


def table_years(measure: str, year) -> list[int]:
    """Years a measure's tables are needed for, for reference year ``t`` or consecutive
    years ``t0..t1``: population on 1 January ``t0 .. t1 + 1`` (each stock once), deaths and
    births ``t0 .. t1``."""
    ys = [int(year)] if isinstance(year, int) else sorted(int(y) for y in year)
    return list(range(ys[0], ys[-1] + 2)) if measure == "population" else ys


# -------------------------------------------------------------------------- the stages
def _reduce(df: pd.DataFrame, measure: str, keep_sex: bool) -> pd.DataFrame:
    """One category per extra dimension (annual, number, TOTAL); core columns only."""
    file, ds = df.attrs.get("file"), df.attrs.get("dataset")
    out = one_category_per_dimension(df, file=file, dataset=ds, table=ds, measure=measure)
    if "sex" in out.columns and not keep_sex:
        out = out[out["sex"] == "T"]
    cols = ["geo"] + (["sex"] if keep_sex else []) + ["age", "time", "value", "flag"]
    missing = [c for c in cols if c not in out.columns and c != "flag"]
    if missing:
        raise DataError(f"table lacks column(s) {missing}", file=file, dataset=ds, table=ds, measure=measure)
    if "flag" not in out.columns:
        out = out.assign(flag="")
    res = out[cols].copy()
    res.attrs.update(df.attrs)
    return res


def _nuts2021_frames(tables: Mapping[str, pd.DataFrame], countries) -> tuple[dict, set[str]]:
    """Per measure the (NUTS 2, country) frames reduced to NUTS 2021 codes of ``countries``;
    and the NUTS 2 codes of other NUTS versions (2016, 2024) that were left out."""
    level2, level0 = set(nuts_codes(level=2)), set(nuts_codes(level=0))
    want_cc = set(countries) if countries else None
    frames: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}
    ignored: set[str] = set()
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        keep_sex = measure != "births"
        reg = _reduce(tables[rcode], measure, keep_sex)
        nat = _reduce(tables[ncode], measure, keep_sex)
        for g in pd.unique(reg["geo"].astype(str)):
            if g[:2] in level0 and (want_cc is None or g[:2] in want_cc) and g not in level2 and not g.endswith("Z"):
                ignored.add(g)
        reg = reg[reg["geo"].isin(level2)]
        nat = nat[nat["geo"].isin(level0)]
        if want_cc is not None:
            reg = reg[reg["geo"].str[:2].isin(want_cc)]
            nat = nat[nat["geo"].isin(want_cc)]
        frames[measure] = (reg, nat)
    return frames, ignored


def _candidates(year: int, countries, frames: dict, name: str) -> tuple[list[str], list[str]]:
    """Every NUTS 2021 code with a population value on 1 January ``year``, in the
    classification's order; and the NUTS 2 regions of the countries present without one."""
    level2, level0 = set(nuts_codes(level=2)), set(nuts_codes(level=0))
    pop_r, pop_n = frames["population"]
    has = set(pop_r.loc[(pop_r["time"] == year) & pop_r["value"].notna(), "geo"]) | set(
        pop_n.loc[(pop_n["time"] == year) & pop_n["value"].notna(), "geo"]
    )
    if countries:
        has |= set(countries)  # a requested country must be there; if its table lacks it, say so
        for cc in countries:
            if not any(c[:2] == cc for c in has if c != cc) and cc not in set(pop_n["geo"]):
                raise DataError(
                    f"no population data for this country in {COUNT_TABLES['population'][0]} or "
                    f"{COUNT_TABLES['population'][1]} for {year}",
                    dataset=name,
                    region=cc,
                    year=year,
                )
    candidates = [c for c in nuts_codes() if (c in level0 or c in level2) and c in has]
    if not candidates:
        raise DataError(f"no region has population data for {year}", dataset=name, year=year)
    present = {c[:2] for c in candidates}
    absent = [c for c in nuts_codes(level=2) if c[:2] in present and c not in has]
    return candidates, absent


def _reference_ages(frames: Sequence[pd.DataFrame], regions: Sequence[str], year: int) -> list[str]:
    """Published age codes (aggregates and TOTAL dropped) with a value for some region in ``year``."""
    for df in frames:  # the NUTS 2 table defines the axis; the country table when there is none
        sub = df[df["geo"].isin(regions) & (df["time"] == year) & df["value"].notna()]
        if len(sub):
            kept, _ = published_age_codes(pd.unique(sub["age"].astype(str)))
            return kept
    return []


def _age_axes(frames: dict, candidates: list[str], year: int) -> dict[str, list[str]]:
    """Age codes per measure; deaths on the population's axis (the data model's convention)."""
    ages = {measure: _reference_ages(list(frames[measure]), candidates, year) for measure in COUNT_TABLES}
    ages["deaths"] = ages["population"]
    return ages


def _missing_cells(df: pd.DataFrame, regions: Sequence[str], ages: Sequence[str], sexes, years) -> dict[str, str]:
    """Per region with an absent or missing cell: a short description of the first one."""
    sub = df[df["geo"].isin(regions) & df["age"].isin(ages) & df["time"].isin(years)]
    if sexes is not None:
        sub = sub[sub["sex"].isin(sexes)]
    sub = sub[sub["value"].notna()]
    expected = len(ages) * (len(sexes) if sexes is not None else 1) * len(years)
    n = sub.groupby("geo").size().reindex(list(regions), fill_value=0)
    out = {}
    for code in n.index[n.to_numpy() < expected]:
        have = sub[sub["geo"] == code]
        if len(have) == 0:
            out[code] = f"no values for {', '.join(map(str, years))}"
            continue
        got = set(zip(*(have[c] for c in (["time"] + (["sex"] if sexes is not None else []) + ["age"])), strict=True))
        y, s, a = next(
            (y, s, a)
            for y in years
            for s in (sexes if sexes is not None else [None])
            for a in ages
            if ((y, s, a) if sexes is not None else (y, a)) not in got
        )
        where = f"{y}" + (f" sex {s}" if s else "") + f" age {a}"
        out[code] = f"{expected - int(n[code])} of {expected} cells missing (first: {where})"
    return out


def _incomplete_regions(year: int, frames: dict, candidates: list[str], ages: dict) -> dict[str, list[str]]:
    """Region -> reasons (``<table>: ...``) for every candidate lacking a table or cells."""
    level2 = set(nuts_codes(level=2))
    reg_c = [c for c in candidates if c in level2]
    nat_c = [c for c in candidates if c not in level2]
    reasons: dict[str, list[str]] = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = table_years(measure, year)
        sexes = ["F", "M", "T"] if measure != "births" else None
        codes_ = ages[measure]
        for df, cands, code in ((frames[measure][0], reg_c, rcode), (frames[measure][1], nat_c, ncode)):
            if not cands:
                continue
            if not codes_:
                for c in cands:
                    reasons.setdefault(c, []).append(f"{code}: no {measure} for {year}")
                continue
            for c, why in _missing_cells(df, cands, codes_, sexes, years).items():
                reasons.setdefault(c, []).append(f"{code}: {why}")
    return {c: reasons[c] for c in candidates if c in reasons}


def _complete_regions(candidates: list[str], skipped: dict, skip_incomplete: bool, name: str, year: int) -> list[str]:
    """The candidates without problems; the problems raise unless ``skip_incomplete``."""
    if skipped:
        items = [f"{c} ({'; '.join(w)})" for c, w in list(skipped.items())[:6]]
        more = f" and {len(skipped) - 6} more" if len(skipped) > 6 else ""
        msg = f"{len(skipped)} region(s) lack a table or some ages: " + "; ".join(items) + more
        if not skip_incomplete:
            first = next(iter(skipped))
            table = skipped[first][0].split(":", 1)[0]
            raise DataError(
                msg + " -- use skip_incomplete (--skip-incomplete) to drop them",
                dataset=name,
                table=table,
                region=first,
                year=year,
            )
        warnings.warn(msg + " -- dropped", IncompleteRegionWarning, stacklevel=4)
    final = [c for c in candidates if c not in skipped]
    if not final:
        raise DataError(f"every region is incomplete for {year}", dataset=name, year=year)
    return final


def years_text(years: Sequence[int]) -> str:
    """``"2023"``, ``"2021-2024"`` (consecutive) or ``"2019, 2021"``."""
    ys = sorted({int(y) for y in years})
    if not ys:
        return "no year"
    if len(ys) > 1 and ys == list(range(ys[0], ys[-1] + 1)):
        return f"{ys[0]}-{ys[-1]}"
    return ", ".join(map(str, ys))


def _table_provenance(measure: str, sources: dict, ages: list[str], skipped: dict) -> TableProvenance:
    """Both datasets of a measure: the years read from each, their download times and
    Eurostat's update stamps (also as :attr:`TableProvenance.updated`)."""
    rcode, ncode = COUNT_TABLES[measure]
    er, en = sources[rcode], sources[ncode]
    when = "1 January " if measure == "population" else ""
    note = [
        f"{code} ({level}, {when}{years_text(e['years'])}): downloaded {e['extracted']}, "
        f"Eurostat update {e['updated'] or 'unknown'}, {e['url']}"
        for code, level, e in ((rcode, "NUTS 2", er), (ncode, "countries", en))
    ]
    if measure == "births":
        note.append(
            f"age-of-mother cells of {rcode}: {', '.join(ages[:2])} .. {', '.join(ages[-2:])}"
            f" (the country table restricted to the same codes)"
        )
    sk = [
        f"{c} ({'; '.join(w for w in skipped[c] if w.startswith((rcode, ncode)))})"
        for c in skipped
        if any(w.startswith((rcode, ncode)) for w in skipped[c])
    ]
    if sk:
        note.append("regions skipped as incomplete: " + ", ".join(sk))
    extracted = min(er["extracted"], en["extracted"])
    updated = tuple((c, e["updated"]) for c, e in ((rcode, er), (ncode, en)) if e["updated"])
    return TableProvenance("real", (rcode, ncode), extracted, "Eurostat", "; ".join(note), updated)


def _counts(year: int, name: str, frames: dict, final: list[str], ages: dict, skipped: dict, sources: dict) -> Counts:
    tidy, provs = {}, {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        allowed = set(ages[measure]) | {"TOTAL"}
        parts = [df[df["geo"].isin(final) & df["age"].isin(allowed)] for df in frames[measure]]
        df = pd.concat(parts, ignore_index=True)
        df.attrs.update(file=" + ".join(str(sources[c]["file"]) for c in (rcode, ncode)), dataset=rcode)
        tidy[measure] = df
        provs[measure] = _table_provenance(measure, sources, ages[measure], skipped)
    return counts_from_eurostat(
        tidy["population"],
        tidy["deaths"],
        tidy["births"],
        year=year,
        regions=final,
        provenance=Provenance(**provs),
        name=name,
        check_totals="warn",
    )


# ------------------------------------------------------------------------- the assembly
@dataclass
class Assembly:
    """What :func:`assemble_counts` built, and what it left out.

    Attributes
    ----------
    counts : Counts
    skipped : dict
        Region -> reasons, for regions dropped as incomplete (``skip_incomplete``).
    ignored_codes : list of str
        NUTS 2 codes in the tables that are not NUTS 2021 codes (other NUTS versions).
    absent : list of str
        NUTS 2021 NUTS 2 regions of the countries present without any population value
        for the year (not published, or published under another NUTS version).
    """

    counts: Counts
    skipped: dict[str, list[str]]
    ignored_codes: list[str]
    absent: list[str] = field(default_factory=list)


def assemble_counts(
    year: int,
    countries: Sequence[str] | None,
    tables: Mapping[str, pd.DataFrame],
    *,
    skip_incomplete: bool = False,
    name: str | None = None,
) -> Assembly:
    """The counts of reference year ``year`` from the six tidy tables.

    Parameters
    ----------
    year : int
        Reference year ``t``.
    countries : sequence of str or None
        Checked NUTS country codes (:func:`check_countries`); None: every country.
    tables : mapping
        Eurostat code -> tidy table of :data:`~demonoise.io.eurostat_api.COUNT_TABLES`: the
        NUTS 2 tables restricted to NUTS level 2, the country tables to level 0, each to
        :func:`table_years`; ``attrs`` carry ``extracted``, ``updated``, ``url``, ``file``
        and optionally ``years``, the years read from the table (default: those with values).
    skip_incomplete : bool
        Drop regions that lack a table or some cells (with an
        :class:`IncompleteRegionWarning` and a note in the provenance) instead of raising.
    name : str, optional
        Dataset name (default :func:`dataset_name` of ``year`` and ``countries``); the
        tables may then hold more years (those of a multi-year dataset), of which
        ``year``'s are used.

    Returns
    -------
    Assembly
        ``counts`` named ``eurostat-<year>`` (``eurostat-<year>-<cc>...`` for a selection),
        on the NUTS 2 tables' age axis (``Y_LT1, Y1..Y99, Y_OPEN, UNK``); births keep
        demo_r_fagec's published age-of-mother cells, the country table restricted to the
        same codes.

    Raises
    ------
    DataError
        A region lacks a table or cells (naming the region and the table), a requested
        country has no population data, or a cell is negative or non-integer.
    """
    name = name or dataset_name(year, countries)
    sources = {
        code: {k: df.attrs.get(k) for k in ("extracted", "updated", "url", "file")}
        | {"years": df.attrs.get("years") or sorted(set(df.loc[df["value"].notna(), "time"].tolist()))}
        for code, df in tables.items()
    }
    frames, ignored = _nuts2021_frames(tables, countries)
    candidates, absent = _candidates(year, countries, frames, name)
    ages = _age_axes(frames, candidates, year)
    skipped = _incomplete_regions(year, frames, candidates, ages)
    final = _complete_regions(candidates, skipped, skip_incomplete, name, year)
    counts = _counts(year, name, frames, final, ages, skipped, sources)
    return Assembly(counts, skipped, sorted(ignored), absent)
