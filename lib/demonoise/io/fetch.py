"""Real Eurostat counts for a reference year: fetch the six tables, read them, assemble, record.

:func:`fetch_counts` is the whole of ``demonoise fetch``, one named step per module:

1. :func:`~demonoise.io.eurostat_api.fetch_table` -- each table from the cache, or
   downloaded (:mod:`demonoise.io.http`), read by its reader and only then cached
   (:mod:`demonoise.io.cache`);
2. :func:`~demonoise.io.eurostat_api.read_table` -- the tidy tables of the NUTS levels and
   years needed;
3. :func:`~demonoise.io.assemble.assemble_counts` -- the
   :class:`~demonoise.core.counts.Counts` ``eurostat-<t>[-<cc>...]``;
4. :func:`~demonoise.io.cache.write_manifest` -- what the registry lists
   (``demonoise datasets``) and :func:`load_cached` rebuilds without network.

Network and cache settings travel as one :class:`~demonoise.io.options.FetchOptions`.
:func:`comparison_tables` fetches Eurostat's own indicators for comparison
(``demo_r_mlifexp`` life expectancy, ``demo_r_find2`` fertility indicators).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from demonoise.core.counts import Counts
from demonoise.core.errors import ParameterError
from demonoise.io import cache
from demonoise.io.assemble import Assembly, assemble_counts, check_countries, check_year, table_years
from demonoise.io.cache import CacheEntry
from demonoise.io.eurostat_api import COMPARISON_TABLES, COUNT_TABLES, fetch_table, read_table, statistics_query
from demonoise.io.nuts import nuts_codes
from demonoise.io.options import FetchOptions, cache_root

__all__ = [
    "FetchResult",
    "fetch_counts",
    "eurostat_counts",
    "comparison_tables",
    # the registry's hooks (demonoise.io.datasets)
    "cache_root",
    "cached_datasets",
    "load_cached",
]

_NUTS2, _COUNTRY = 2, 0


@dataclass
class FetchResult:
    """What :func:`fetch_counts` did.

    Attributes
    ----------
    counts : Counts
    entries : dict
        Eurostat code -> :class:`~demonoise.io.cache.CacheEntry` used (``downloaded`` tells
        which were fetched).
    skipped, ignored_codes, absent
        See :class:`~demonoise.io.assemble.Assembly`.
    cache : Path
    manifest : Path or None
    """

    counts: Counts
    entries: dict[str, CacheEntry]
    skipped: dict[str, list[str]]
    ignored_codes: list[str]
    cache: Path
    manifest: Path | None = None
    absent: list[str] = field(default_factory=list)

    @property
    def downloaded(self) -> list[str]:
        return [k for k, e in self.entries.items() if e.downloaded]


# ------------------------------------------------------------------------------ steps
def _fetch_count_tables(year: int, options: FetchOptions) -> dict[str, CacheEntry]:
    """The six tables of the counts, one query per table serving every country."""
    entries = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = table_years(measure, year)
        entries[rcode] = fetch_table(rcode, statistics_query(years, [_NUTS2]), options)
        entries[ncode] = fetch_table(ncode, statistics_query(years, [_COUNTRY]), options)
    return entries


def _read_count_tables(year: int, entries: dict[str, CacheEntry]) -> dict[str, pd.DataFrame]:
    """Tidy tables: the NUTS 2 tables at NUTS level 2, the country tables at level 0."""
    tables = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = table_years(measure, year)
        tables[rcode] = read_table(entries[rcode], geo_levels=(_NUTS2,), years=years)
        tables[ncode] = read_table(entries[ncode], geo_levels=(_COUNTRY,), years=years)
    return tables


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _manifest(built: Assembly, entries: dict[str, CacheEntry], root: Path, params: dict) -> dict:
    """The manifest's content: parameters, regions, label, provenance lines, the entries used."""
    c = built.counts
    n0 = sum(r.level == 0 for r in c.regions)
    extracted = min(e.extracted for e in entries.values())
    details = [
        f"{measure}: {rcode} + {ncode} (Eurostat, real), downloaded {entries[rcode].extracted} / "
        f"{entries[ncode].extracted}, Eurostat update {entries[rcode].updated or 'unknown'} / "
        f"{entries[ncode].updated or 'unknown'}"
        for measure, (rcode, ncode) in COUNT_TABLES.items()
    ]
    if built.skipped:
        details.append("skipped as incomplete: " + ", ".join(built.skipped))
    details.append(f"cache: {root}")
    return {
        "year": c.year,
        "params": params,
        "regions": list(c.codes),
        "skipped": built.skipped,
        "ignored_codes": built.ignored_codes,
        "absent": built.absent,
        "label": f"Eurostat {c.year}: {_plural(n0, 'country', 'countries')} and "
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
            }
            for k, e in entries.items()
        },
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
        each table's provenance lists both datasets, their download times (``extracted``
        is the earlier one) and Eurostat's update stamps.

    Raises
    ------
    FetchError
        A download failed, a table is not cached (offline), or a cached table cannot be
        read (the message gives the ``demonoise fetch ... --refresh`` that replaces it).
    DataError
        A region lacks a table or cells (naming the region and the table), or a cell is
        negative or non-integer.
    ParameterError
        Unknown country code or bad year.
    """
    year, ctry = check_year(year), check_countries(countries)
    options = options if options is not None else FetchOptions()
    entries = _fetch_count_tables(year, options)
    tables = _read_count_tables(year, entries)
    built = assemble_counts(year, ctry, tables, skip_incomplete=skip_incomplete)
    res = FetchResult(built.counts, entries, built.skipped, built.ignored_codes, options.root, absent=built.absent)
    if write_manifest:
        params = {
            "year": year,
            "countries": list(ctry) if ctry else None,
            "skip_incomplete": bool(skip_incomplete),
            "endpoint": options.endpoint,
        }
        res.manifest = cache.write_manifest(options.root, res.counts.name, _manifest(built, entries, res.cache, params))
    return res


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


def load_cached(name: str, cache_dir=None) -> Counts:
    """Rebuild a fetched dataset (``eurostat-2023``, ...) from the cache, without network.

    Raises :class:`ParameterError` for an unknown name (listing the cached ones) and
    :class:`FetchError` if a table has since left the cache or cannot be read.
    """
    root = cache_root(cache_dir)
    man = cache.read_manifest(cache.manifest_path(root, str(name)))
    if man is None:
        have = ", ".join(d["name"] for d in cached_datasets(root)) or "none"
        raise ParameterError(
            f"no cached dataset named {name!r} in {root} (cached: {have}); run `demonoise fetch` first"
        )
    p = man["params"]
    options = FetchOptions(cache_dir=root, offline=True, endpoint=p.get("endpoint", "json"))
    res = fetch_counts(
        p["year"], p.get("countries"), options, skip_incomplete=p.get("skip_incomplete", False), write_manifest=False
    )
    return res.counts
