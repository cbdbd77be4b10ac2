"""Real Eurostat counts for a reference year or consecutive years: fetch the six tables, read
them, assemble, record.

:func:`fetch_counts` (one year) and :func:`fetch_panel` (several consecutive years) are the
whole of ``demonoise fetch``, one named step per module:

1. :func:`~demonoise.io.eurostat_api.fetch_table` -- each table from the cache, or
   downloaded (:mod:`demonoise.io.http`), read by its reader and only then cached
   (:mod:`demonoise.io.cache`); one query per table for every year asked (population on
   1 January of every year ``t0 .. t1 + 1``, deaths and births ``t0 .. t1``);
2. :func:`~demonoise.io.eurostat_api.read_table` -- the tidy tables of the NUTS levels and
   years needed, each year checked to be there;
3. :func:`~demonoise.io.assemble.assemble_counts` -- the
   :class:`~demonoise.core.counts.Counts` ``eurostat-<t>[-<cc>...]`` of each year, and for
   several years the :class:`~demonoise.core.counts.Panel` ``eurostat-<t0>-<t1>[-<cc>...]``,
   in which the population on 1 January of ``t + 1`` is one cell, the end of ``t`` and the
   start of ``t + 1``;
4. :func:`~demonoise.io.cache.write_manifest` -- what the registry lists
   (``demonoise datasets``) and :func:`load_cached` / :func:`load_cached_panel` rebuild
   without network.

The provenance of every table lists each Eurostat dataset code with the years read from it,
its download time and Eurostat's own update stamp (``updated`` of the JSON-stat answer, also
:attr:`~demonoise.core.counts.TableProvenance.updated`).

Network and cache settings travel as one :class:`~demonoise.io.options.FetchOptions`.
:func:`comparison_tables` fetches Eurostat's own indicators for comparison
(``demo_r_mlifexp`` life expectancy, ``demo_r_find2`` fertility indicators).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from demonoise.core.counts import Counts, Panel, Provenance
from demonoise.core.errors import DataError, FetchError, ParameterError
from demonoise.io import cache
from demonoise.io.assemble import (
    Assembly,
    assemble_counts,
    check_countries,
    check_year,
    check_years,
    table_years,
    years_text,
)
from demonoise.io.cache import CacheEntry
from demonoise.io.eurostat_api import COMPARISON_TABLES, COUNT_TABLES, fetch_table, read_table, statistics_query
from demonoise.io.fetch_errors import fetch_error
from demonoise.io.nuts import nuts_codes
from demonoise.io.options import FetchOptions, cache_root

__all__ = [
    "FetchResult",
    "fetch_counts",
    "fetch_panel",
    "panel_name",
    "eurostat_counts",
    "comparison_tables",
    # the registry's hooks (demonoise.io.datasets)
    "cache_root",
    "cached_datasets",
    "load_cached",
    "load_cached_panel",
]

_NUTS2, _COUNTRY = 2, 0


@dataclass
class FetchResult:
    """What :func:`fetch_counts` did.

    Attributes
    ----------
    counts : Counts
        The counts of the reference year (for several years: the last).
    entries : dict
        Eurostat code -> :class:`~demonoise.io.cache.CacheEntry` used (``downloaded`` tells
        which were fetched).
    skipped, ignored_codes, absent
        See :class:`~demonoise.io.assemble.Assembly`.
    cache : Path
    manifest : Path or None
    panel : Panel or None
        The multi-year dataset (:func:`fetch_panel`); None for one year.
    """

    counts: Counts
    entries: dict[str, CacheEntry]
    skipped: dict[str, list[str]]
    ignored_codes: list[str]
    cache: Path
    manifest: Path | None = None
    absent: list[str] = field(default_factory=list)
    panel: Panel | None = None

    @property
    def years(self) -> tuple[int, ...]:
        """The reference years fetched."""
        return self.panel.years if self.panel is not None else (self.counts.year,)

    @property
    def downloaded(self) -> list[str]:
        return [k for k, e in self.entries.items() if e.downloaded]


# ------------------------------------------------------------------------------ steps
def _fetch_count_tables(years: Sequence[int], options: FetchOptions) -> dict[str, CacheEntry]:
    """The six tables of the counts, one query per table serving every country and year."""
    entries = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        ys = table_years(measure, years)
        for code, level in ((rcode, _NUTS2), (ncode, _COUNTRY)):
            entries[code] = _fetch_years(code, measure, ys, level, options)
    return entries


def _fetch_years(code: str, measure: str, years: list[int], level: int, options: FetchOptions) -> CacheEntry:
    """One table for ``years``; an answer "not found" or "bad request" says which years were asked."""
    try:
        return fetch_table(code, statistics_query(years, [level]), options)
    except FetchError as e:
        if getattr(e, "status", None) not in (400, 404):
            raise
        asked = ("population on 1 January " if measure == "population" else f"{measure} of ") + years_text(years)
        raise fetch_error(
            f"{e}; years asked: {asked} (Eurostat may not publish the last of them yet)",
            dataset=code,
            url=e.url,
            cause=e.cause,
            status=e.status,
        ) from None


def _read_count_tables(years: Sequence[int], entries: dict[str, CacheEntry]) -> dict[str, pd.DataFrame]:
    """Tidy tables: the NUTS 2 tables at NUTS level 2, the country tables at level 0; each
    year needed must have values in each table."""
    tables = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        ys = table_years(measure, years)
        tables[rcode] = read_table(entries[rcode], geo_levels=(_NUTS2,), years=ys)
        tables[ncode] = read_table(entries[ncode], geo_levels=(_COUNTRY,), years=ys)
        for code in (rcode, ncode):
            _check_years_present(tables[code], measure, ys)
            tables[code].attrs["years"] = ys
    return tables


def _of_year(tables: dict[str, pd.DataFrame], year: int) -> dict[str, pd.DataFrame]:
    """The rows of the tables reference year ``year`` uses (its two stocks, its events), with the
    tables' attributes (``years`` still those read: the provenance names them)."""
    out = {}
    for measure, codes in COUNT_TABLES.items():
        ys = table_years(measure, year)
        for code in codes:
            df = tables[code]
            out[code] = df[df["time"].isin(ys).to_numpy()]
            out[code].attrs.update(df.attrs)
    return out


def _check_years_present(df: pd.DataFrame, measure: str, years: list[int]) -> None:
    """A year without a single value in a table: DataError naming the table and the year."""
    have = set(df.loc[df["value"].notna(), "time"].tolist())
    missing = [y for y in years if y not in have]
    if missing:
        what = "population on 1 January" if measure == "population" else measure
        held = years_text(have) if have else "none of them"
        raise DataError(
            f"Eurostat's answer has no {what} for {years_text(missing)} (of the years asked, {years_text(years)}, "
            f"it holds {held}); the last year may not be published yet: ask for earlier years",
            dataset=df.attrs.get("dataset"),
            year=missing[0],
        )


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _manifest(res: FetchResult, params: dict) -> dict:
    """The manifest's content: parameters, years, regions, label, provenance lines, the entries used."""
    c, entries, root = res.counts, res.entries, res.cache
    n0 = sum(r.level == 0 for r in c.regions)
    extracted = min(e.extracted for e in entries.values())
    details = [
        f"{measure}: {rcode} + {ncode} (Eurostat, real) {years_text(table_years(measure, res.years))}, "
        f"downloaded {entries[rcode].extracted} / {entries[ncode].extracted}, "
        f"Eurostat update {entries[rcode].updated or 'unknown'} / {entries[ncode].updated or 'unknown'}"
        for measure, (rcode, ncode) in COUNT_TABLES.items()
    ]
    if res.skipped:
        details.append("skipped as incomplete: " + ", ".join(res.skipped))
    details.append(f"cache: {root}")
    several = len(res.years) > 1
    return {
        "year": c.year,
        **({"years": list(res.years)} if several else {}),
        "params": params,
        "regions": list(c.codes),
        "skipped": res.skipped,
        "ignored_codes": res.ignored_codes,
        "absent": res.absent,
        "label": f"Eurostat {years_text(res.years)}: {_plural(n0, 'country', 'countries')} and "
        f"{_plural(len(c.regions) - n0, 'NUTS 2 region', 'NUTS 2 regions')}, real tables downloaded {extracted[:10]}",
        "details": details,
        "entries": {
            k: {
                "file": str(e.path.relative_to(root)),
                "sidecar": str(e.sidecar.relative_to(root)),
                "sha256": e.meta.get("sha256"),
                "size": e.meta.get("size"),
                "extracted": e.extracted,
                "updated": e.updated,
                "url": e.url,
                "years": table_years(_MEASURE_OF[k], res.years),
            }
            for k, e in entries.items()
        },
    }


_MEASURE_OF = {code: m for m, codes in COUNT_TABLES.items() for code in codes}


def _params(years: Sequence[int], ctry, skip_incomplete: bool, options: FetchOptions) -> dict:
    """What :func:`load_cached` needs to rebuild the dataset from the cache."""
    when = {"year": years[0]} if len(years) == 1 else {"years": list(years), "year": years[-1]}
    return when | {
        "countries": list(ctry) if ctry else None,
        "skip_incomplete": bool(skip_incomplete),
        "endpoint": options.endpoint,
    }


# ------------------------------------------------------------------------- the fetch
def fetch_counts(
    year: int,
    countries: Sequence[str] | None = None,
    options: FetchOptions | None = None,
    *,
    skip_incomplete: bool = False,
    write_manifest: bool = True,
) -> FetchResult:
    """Real Eurostat counts for reference year ``year``, with what was fetched and left out.

    Downloads (or reuses from the cache) demo_r_d2jan + demo_pjan (population on 1
    January ``year`` and ``year + 1``), demo_r_magec + demo_magec (deaths) and
    demo_r_fagec + demo_fagec (live births by age of mother), and builds one
    :class:`~demonoise.core.counts.Counts` with every NUTS 2021 country (level 0) and NUTS 2
    region that has population data, in the classification's order.

    Parameters
    ----------
    year : int
        Reference year ``t``.
    countries : sequence of str, optional
        NUTS country codes (``"BE"``, ``"EL"``...); default: all. Selection is local: the
        cached answers hold every country.
    options : FetchOptions, optional
        Cache, endpoint and network settings (default ``FetchOptions()``).
    skip_incomplete : bool
        Drop regions that lack a table or some cells instead of raising (see
        :func:`~demonoise.io.assemble.assemble_counts`).
    write_manifest : bool
        Record the fetch so that the registry lists it and :func:`load_cached` rebuilds it.

    Returns
    -------
    FetchResult
        ``counts`` named ``eurostat-<year>`` (``eurostat-<year>-<cc>...`` for a selection);
        each table's provenance lists both datasets with the years read, their download
        times (``extracted`` is the earlier one) and Eurostat's update stamps
        (``updated``, per dataset code).

    Raises
    ------
    FetchError
        A download failed, a table is not cached (offline), or a cached table cannot be
        read (the message gives the ``demonoise fetch ... --refresh`` that replaces it).
    DataError
        A table has no value for a year needed (naming the table and the year), a region
        lacks a table or cells (naming the region and the table), or a cell is negative or
        non-integer.
    ParameterError
        Unknown country code or bad year.
    """
    year, ctry = check_year(year), check_countries(countries)
    options = options if options is not None else FetchOptions()
    entries = _fetch_count_tables([year], options)
    tables = _read_count_tables([year], entries)
    built = assemble_counts(year, ctry, tables, skip_incomplete=skip_incomplete)
    res = FetchResult(built.counts, entries, built.skipped, built.ignored_codes, options.root, absent=built.absent)
    if write_manifest:
        params = _params([year], ctry, skip_incomplete, options)
        res.manifest = cache.write_manifest(options.root, res.counts.name, _manifest(res, params))
    return res


def panel_name(years: Sequence[int], countries: Sequence[str] | None = None) -> str:
    """``eurostat-<t0>-<t1>`` for every country, ``eurostat-<t0>-<t1>-<cc>...`` for a selection."""
    ys = sorted(int(y) for y in years)
    base = f"eurostat-{ys[0]}-{ys[-1]}"
    return base + "".join(f"-{c.lower()}" for c in countries) if countries else base


def fetch_panel(
    years: Sequence[int],
    countries: Sequence[str] | None = None,
    options: FetchOptions | None = None,
    *,
    skip_incomplete: bool = False,
    write_manifest: bool = True,
) -> FetchResult:
    """Real Eurostat counts of consecutive reference years: a multi-year dataset.

    One query per table serves every year: demo_r_d2jan + demo_pjan for the population on
    1 January of every year ``t0 .. t1 + 1`` (each stock fetched once: the population on
    1 January of ``t + 1`` is the end stock of ``t`` and the start stock of ``t + 1``, one
    published cell), demo_r_magec + demo_magec (deaths) and demo_r_fagec + demo_fagec
    (births by age of mother) of ``t0 .. t1``. Each year is assembled as by
    :func:`fetch_counts`; the years are joined in a :class:`~demonoise.core.counts.Panel`,
    which holds each stock once.

    Parameters
    ----------
    years : sequence of int
        Consecutive reference years, e.g. ``[2021, 2022, 2023]``; one year gives a panel
        of one year.
    countries, options, skip_incomplete
        As :func:`fetch_counts`. With ``skip_incomplete`` a region incomplete (or absent)
        in any year is dropped from every year.
    write_manifest : bool
        Record the fetch (with its years) so that the registry lists it and
        :func:`load_cached_panel` rebuilds it.

    Returns
    -------
    FetchResult
        ``panel`` named ``eurostat-<t0>-<t1>`` (``eurostat-<t0>-<t1>-<cc>...`` for a
        selection); ``counts`` its last year. The provenance of each table lists its two
        dataset codes with the years read from each, download times and Eurostat's update
        stamps (``updated``).

    Raises
    ------
    ParameterError
        Years not consecutive or given twice (naming them), unknown country code.
    FetchError
        As :func:`fetch_counts`; an answer "not found" or "bad request" names the years
        asked.
    DataError
        A table has no value for one of the years (naming the table and the year, e.g.
        a year Eurostat does not publish yet), a region present in some years only
        (naming it and the years), and the errors of :func:`fetch_counts`.
    """
    years, ctry = check_years(years), check_countries(countries)
    options = options if options is not None else FetchOptions()
    name = panel_name(years, ctry)
    entries = _fetch_count_tables(years, options)
    tables = _read_count_tables(years, entries)
    built = {
        t: assemble_counts(t, ctry, _of_year(tables, t), skip_incomplete=skip_incomplete, name=name) for t in years
    }
    panel, skipped = _join_years(built, name, skip_incomplete)
    ignored = sorted({c for b in built.values() for c in b.ignored_codes})
    absent = sorted({c for b in built.values() for c in b.absent})
    res = FetchResult(panel.year(years[-1]), entries, skipped, ignored, options.root, absent=absent, panel=panel)
    if write_manifest:
        res.manifest = cache.write_manifest(
            options.root, name, _manifest(res, _params(years, ctry, skip_incomplete, options))
        )
    return res


def _join_years(built: dict[int, Assembly], name: str, skip_incomplete: bool) -> tuple[Panel, dict[str, list[str]]]:
    """The panel of the years' counts, on the regions every year has, and the regions left out
    (region -> reasons, each prefixed by its year)."""
    years = sorted(built)
    skipped: dict[str, list[str]] = {}
    for t in years:
        for code, why in built[t].skipped.items():
            skipped.setdefault(code, []).extend(f"{t}: {w}" for w in why)
    partial = _partial_regions(built, name, skip_incomplete)
    for code, ys in partial.items():
        skipped.setdefault(code, [f"data for {years_text(ys)} only"])
    keep = [c for c in dict.fromkeys(c for t in years for c in built[t].counts.codes) if c not in partial]
    if not keep:
        raise DataError(f"no region has data in every year {years_text(years)}", dataset=name)
    counts = [built[t].counts.select(keep) for t in years]
    prov = _panel_provenance(counts[-1].provenance, skipped)
    return Panel.from_counts([c.replace(provenance=prov) for c in counts], name=name), skipped


def _partial_regions(built: dict[int, Assembly], name: str, skip_incomplete: bool) -> dict[str, list[int]]:
    """Regions with counts in some of the years only -> those years; a DataError naming the
    first of them and a year it lacks unless ``skip_incomplete``."""
    years = sorted(built)
    order = dict.fromkeys(c for t in years for c in built[t].counts.codes)
    have = {c: [t for t in years if c in built[t].counts.codes] for c in order}
    partial = {c: ys for c, ys in have.items() if len(ys) < len(years)}
    if partial and not skip_incomplete:
        code, ys = next(iter(partial.items()))
        lacking = [t for t in years if t not in ys]
        raise DataError(
            f"{len(partial)} region(s) lack data in some of the years {years_text(years)}: {code} has data for "
            f"{years_text(ys)} only (not {years_text(lacking)}) -- use skip_incomplete (--skip-incomplete) to "
            "drop them",
            dataset=name,
            region=code,
            year=lacking[0],
        )
    return partial


def _panel_provenance(prov: Provenance, skipped: dict[str, list[str]]) -> Provenance:
    """The last year's provenance (the same tables serve every year), with the regions
    dropped in any year named in each table's note."""
    if not skipped:
        return prov
    extra = "regions dropped as incomplete in some year: " + "; ".join(
        f"{c} ({', '.join(w)})" for c, w in skipped.items()
    )
    tables = {m: dataclasses.replace(t, note=f"{t.note}; {extra}") for m, t in prov.tables.items()}
    return dataclasses.replace(prov, **tables)


def eurostat_counts(
    year: int,
    countries: Sequence[str] | None = None,
    options: FetchOptions | None = None,
    *,
    skip_incomplete: bool = False,
) -> Counts:
    """The counts of :func:`fetch_counts` alone."""
    return fetch_counts(year, countries, options, skip_incomplete=skip_incomplete).counts


def comparison_tables(
    year: int,
    countries: Sequence[str] | None = None,
    options: FetchOptions | None = None,
    *,
    tables: Sequence[str] = COMPARISON_TABLES,
) -> dict[str, pd.DataFrame]:
    """Eurostat's published indicators for ``year`` (countries and NUTS 2 regions), cached.

    Returns
    -------
    dict of str to DataFrame
        ``{"demo_r_mlifexp": ..., "demo_r_find2": ...}``: tidy tables (``geo, [sex,
        age,] time, value, flag`` and the other dimensions such as ``unit`` or
        ``indic_de``) restricted to NUTS 2021 countries and NUTS 2 regions (of
        ``countries`` if given), without absent cells; ``attrs`` carry the dataset code,
        download time, Eurostat's update stamp and the URL.
    """
    year, ctry = check_year(year), check_countries(countries)
    options = options if options is not None else FetchOptions()
    keep = set(nuts_codes(level=0)) | set(nuts_codes(level=2))
    out = {}
    for code in tables:
        entry = fetch_table(code, statistics_query([year], [_COUNTRY, _NUTS2]), options)
        df = read_table(entry, geo_levels=(_COUNTRY, _NUTS2), years=[year])
        m = df["geo"].isin(keep) & df["value"].notna()
        if ctry:
            m &= df["geo"].str[:2].isin(ctry)
        attrs = dict(df.attrs)
        df = df[m]
        df.attrs.update(attrs)
        out[code] = df
    return out


# ------------------------------------------------------------------------ registry hooks
def cached_datasets(cache_dir=None) -> list[dict]:
    """Every complete cached fetch (see :func:`demonoise.io.cache.cached_datasets`)."""
    return cache.cached_datasets(cache_root(cache_dir))


def _cached_fetch(name: str, cache_dir=None) -> FetchResult:
    """Rebuild a fetched dataset from the cache, without network (see :func:`load_cached`)."""
    root = cache_root(cache_dir)
    man = cache.read_manifest(cache.manifest_path(root, str(name)))
    if man is None:
        have = ", ".join(d["name"] for d in cached_datasets(root)) or "none"
        raise ParameterError(
            f"no cached dataset named {name!r} in {root} (cached: {have}); run `demonoise fetch` first"
        )
    p = man["params"]
    options = FetchOptions(cache_dir=root, offline=True, endpoint=p.get("endpoint", "json"))
    kw = {"skip_incomplete": p.get("skip_incomplete", False), "write_manifest": False}
    if p.get("years"):
        return fetch_panel(p["years"], p.get("countries"), options, **kw)
    return fetch_counts(p["year"], p.get("countries"), options, **kw)


def load_cached(name: str, cache_dir=None) -> Counts:
    """Rebuild a fetched dataset (``eurostat-2023``, ...) from the cache, without network;
    of a multi-year one (``eurostat-2021-2023``), its reference (last) year.

    Raises :class:`ParameterError` for an unknown name (listing the cached ones) and
    :class:`FetchError` if a table has since left the cache or cannot be read.
    """
    return _cached_fetch(name, cache_dir).counts


def load_cached_panel(name: str, cache_dir=None) -> Panel:
    """A fetched dataset rebuilt from the cache as a :class:`~demonoise.core.counts.Panel`:
    every year of a multi-year fetch (``eurostat-2021-2023``), or the one year of a
    single-year fetch. Errors as :func:`load_cached`."""
    res = _cached_fetch(name, cache_dir)
    return res.panel if res.panel is not None else Panel.from_counts([res.counts])
