r"""Eurostat's dissemination API: the queries, one table fetched into the cache, reading it back.

Endpoints (no key; base URL from :class:`~demonoise.io.options.FetchOptions`):

* ``json`` (default): the statistics API,
  ``{base}/statistics/1.0/data/<code>?format=JSON&lang=EN&geoLevel=nuts2&time=2023&time=2024``,
  a JSON-stat 2.0 cube filtered *on the server* to the years needed and to one NUTS level.
  One query per table serves every country: about 0.25 million cells (e.g. demo_r_d2jan:
  103 ages x 3 sexes x ~400 NUTS 2 codes x 2 years), far below the API's limit of 5
  million cells, and gzip-compressed on the wire to about a megabyte. It also carries
  Eurostat's ``updated`` time stamp. Filtering by ``geoLevel`` rather than by lists of
  ``geo`` codes keeps URLs short, cannot fail on a code a table lacks (the API refuses
  unknown codes), and lets one cached answer serve every ``--countries`` selection
  (countries are selected locally).
* ``tsv``: the SDMX 2.1 API's full dataset,
  ``{base}/sdmx/2.1/data/<code>?format=TSV&compressed=true`` -- every year and every
  region (tens of megabytes for the NUTS 2 tables); used automatically when the
  statistics API answers ``413`` (extraction too big), or on request. It is streamed and
  filtered line by line to the wanted NUTS levels and years when read.

:func:`fetch_table` returns a cached answer or downloads one. Before an answer may enter
the cache it is read by :func:`read_table` -- the reader that loads it later -- restricted to
the levels and years of the query, so an answer the reader refuses (a JSON-stat cube whose
sizes disagree with its categories, a bad cell, a truncated gzip) is never cached: it raises
:class:`~demonoise.core.errors.FetchError` naming the dataset, the cause and the URL. A
cached entry that the reader refuses (written by an older version, or damaged) raises a
one-line error with the command that downloads it again.

References
----------
Eurostat, "API - Detailed guidelines - API Statistics" and "- Asynchronous API"
(filters, ``geoLevel``, the 5 000 000-cell limit and its ``413 EXTRACTION_TOO_BIG``
answer, error bodies ``{"error": [{"status", "id", "label"}]}``); "API - Detailed
guidelines - SDMX 2.1" (``format=TSV&compressed=true``). JSON-stat 2.0 (json-stat.org).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import urllib.parse
import warnings
import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from demonoise.core.errors import DataError, FetchError, FormatError
from demonoise.io import cache
from demonoise.io.cache import CacheEntry
from demonoise.io.eurostat import _parse_tsv, read_eurostat
from demonoise.io.fetch_errors import error_label, fetch_error
from demonoise.io.options import FetchOptions

__all__ = [
    "COUNT_TABLES",
    "COMPARISON_TABLES",
    "statistics_query",
    "statistics_url",
    "tsv_url",
    "query_key",
    "fetch_table",
    "read_table",
    "refresh_command",
]

#: measure -> (NUTS 2 table, country table)
COUNT_TABLES: dict[str, tuple[str, str]] = {
    "population": ("demo_r_d2jan", "demo_pjan"),
    "deaths": ("demo_r_magec", "demo_magec"),
    "births": ("demo_r_fagec", "demo_fagec"),
}
_COUNT_CODES = frozenset(c for codes in COUNT_TABLES.values() for c in codes)
#: Eurostat's published indicators, fetched for comparison.
COMPARISON_TABLES: tuple[str, ...] = ("demo_r_mlifexp", "demo_r_find2")

_LEVEL_NAMES = {0: "country", 1: "nuts1", 2: "nuts2", 3: "nuts3"}
_LEVELS = {v: k for k, v in _LEVEL_NAMES.items()}
_RE_NUTS_LIKE = re.compile(r"^[A-Z]{2}[0-9A-Z]{0,3}$")
_TSV_QUERY = [("format", "TSV"), ("compressed", "true")]
#: Most bytes an answer may decode to, by format: a JSON answer is parsed in memory (the
#: API's 5 million cells are about 100 MB of JSON-stat), a TSV is read line by line (a
#: full NUTS 2 dataset, every year, is a few hundred MB).
MAX_BYTES = {"json": 1 << 27, "tsv": 1 << 32}


# ------------------------------------------------------------------------------ queries
def statistics_query(years: Iterable[int], levels: Iterable[int]) -> list[tuple[str, str]]:
    """Statistics API parameters for NUTS ``levels`` (0 countries, 2 NUTS 2) and ``years``."""
    q = [("format", "JSON"), ("lang", "EN")]
    q += [("geoLevel", _LEVEL_NAMES[lv]) for lv in sorted(set(levels))]
    q += [("time", str(y)) for y in sorted(set(years))]
    return q


def statistics_url(base: str, dataset: str, query) -> str:
    return f"{base}/statistics/1.0/data/{dataset}?" + urllib.parse.urlencode(list(query))


def tsv_url(base: str, dataset: str) -> str:
    return f"{base}/sdmx/2.1/data/{dataset}?" + urllib.parse.urlencode(_TSV_QUERY)


def _with_defaults(query: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``format=JSON&lang=EN`` first, unless given."""
    query = [(str(k), str(v)) for k, v in query]
    names = {k.lower() for k, _ in query}
    return [(k, v) for k, v in (("format", "JSON"), ("lang", "EN")) if k not in names] + query


def query_key(endpoint: str, query: Sequence[tuple[str, str]]) -> str:
    """The cache key of a query: ``tsv_full``, or ``json_<name>-<values>_...`` (sorted)."""
    if endpoint == "tsv":
        return "tsv_full"
    groups: dict[str, list[str]] = {}
    for k, v in query:
        if k.lower() in ("format", "lang"):
            continue
        groups.setdefault(k, []).append(str(v))
    parts = [f"{k}-{'+'.join(sorted(v))}" for k, v in sorted(groups.items(), key=lambda kv: kv[0].lower())]
    key = "json" + ("_" + "_".join(parts) if parts else "_all")
    key = re.sub(r"[^A-Za-z0-9+._-]", "_", key)
    if len(key) > 150:  # very long queries: keep a readable head and a digest
        key = key[:120] + "_" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return key


def _selection(query: Sequence[tuple[str, str]]) -> tuple[set[int] | None, set[int] | None]:
    """NUTS levels and years a query asks for (None: not restricted)."""
    levels = {_LEVELS[v] for k, v in query if k == "geoLevel" and v in _LEVELS}
    years = {int(v) for k, v in query if k == "time" and str(v).isdigit()}
    return levels or None, years or None


def refresh_command(years: Iterable[int] | None, *, refresh: bool = True, dataset: str | None = None) -> str:
    """The command that downloads a table again: ``--year min(years)``; for a table of the
    counts (``dataset`` in :data:`COUNT_TABLES`) every reference year its query served, so
    that a multi-year fetch's table is named by the same ``--year t0 .. t1`` that made it (a
    population query's last year is the end stock of the last reference year)."""
    ys = sorted({int(y) for y in years}) if years else []
    if dataset in COUNT_TABLES["population"] and len(ys) > 1:
        ys = ys[:-1]
    elif dataset not in _COUNT_CODES:
        ys = ys[:1]
    return f"`demonoise fetch --year {' '.join(map(str, ys)) if ys else 'YEAR'}" + (" --refresh`" if refresh else "`")


# ------------------------------------------------------------------------ one table
def _offline_failure(dataset: str, query, options: FetchOptions, problems: list[str]) -> FetchError:
    base = options.api_url_unchecked
    url = statistics_url(base, dataset, query) if options.endpoint == "json" else tsv_url(base, dataset)
    detail = f" ({'; '.join(problems)})" if problems else ""
    cause = (
        f"not in the cache {options.root}{detail} and offline mode forbids downloading "
        f"(download it with {refresh_command(_selection(query)[1], refresh=False, dataset=dataset)})"
    )
    return fetch_error(f"{dataset}: {cause}; query {url}", dataset=dataset, url=url, cause=cause)


def fetch_table(dataset: str, query: Sequence[tuple[str, str]] = (), options: FetchOptions | None = None) -> CacheEntry:
    """One Eurostat table, from the cache or downloaded into it.

    Parameters
    ----------
    dataset : str
        Eurostat code, e.g. ``"demo_r_d2jan"``.
    query : sequence of (name, value)
        Statistics API parameters (``format=JSON&lang=EN`` are added if absent), e.g.
        ``[("geoLevel", "nuts2"), ("time", "2023"), ("time", "2024")]``. With the ``tsv``
        endpoint it is not sent, but its ``geoLevel`` and ``time`` still select what the
        reader checks before the answer is cached.
    options : FetchOptions, optional
        Endpoint, cache, network (default: ``FetchOptions()``). With the ``json`` endpoint
        an answer ``413`` (extraction too big) makes it fetch the full-dataset TSV instead,
        with a :class:`RuntimeWarning`.

    Returns
    -------
    CacheEntry

    Raises
    ------
    FetchError
        Naming the dataset, the cause and the URL; nothing is left in the cache.
    """
    options = options if options is not None else FetchOptions()
    root = options.root
    query = _with_defaults(query) if options.endpoint == "json" else [(str(k), str(v)) for k, v in query]
    json_key, tsv_key = query_key("json", query), query_key("tsv", ())
    keys = [json_key, tsv_key] if options.endpoint == "json" else [tsv_key]  # a TSV fallback may be cached

    problems = []
    if not options.refresh:
        for k in keys:
            entry, why = cache.lookup(root, dataset, k)
            if entry is not None:
                return entry
            if why:
                problems.append(why)
    if options.offline:
        raise _offline_failure(dataset, query, options, problems)

    base = options.api_url
    if options.endpoint == "json":
        try:
            return _download_into_cache(dataset, json_key, "json", statistics_url(base, dataset, query), query, options)
        except FetchError as e:
            if getattr(e, "status", None) != 413:
                raise
            warnings.warn(
                f"{dataset}: the statistics API refused the query as too big ({e.cause}); "
                f"downloading the full dataset as TSV instead",
                RuntimeWarning,
                stacklevel=2,
            )
    return _download_into_cache(dataset, tsv_key, "tsv", tsv_url(base, dataset), query, options)


def _download_into_cache(dataset: str, key: str, fmt: str, url: str, query, options: FetchOptions) -> CacheEntry:
    from demonoise.io.http import download  # requests is imported only to download

    levels, years = _selection(query)
    return cache.store(
        options.root,
        dataset,
        key,
        fmt=fmt,
        describe={
            "endpoint": "statistics/1.0" if fmt == "json" else "sdmx/2.1",
            "query": [list(q) for q in (query if fmt == "json" else _TSV_QUERY)],
        },
        download=lambda path: download(url, path, options, label=dataset, max_bytes=MAX_BYTES[fmt]),
        check=lambda entry: _check_answer(entry, levels, years),
    )


# ------------------------------------------------------------------ checking an answer
def _check_answer(entry: CacheEntry, levels, years) -> dict:
    """Read a downloaded answer with :func:`read_table`'s reader; its facts, or FetchError."""
    dataset, url = entry.dataset, entry.url

    def fail(cause: str) -> FetchError:
        cause = " ".join(cause.split())
        return fetch_error(f"{dataset}: {cause} in the response from {url}", dataset=dataset, url=url, cause=cause)

    if entry.path.stat().st_size == 0:
        raise fail("empty body")
    try:
        df = _read(entry, levels, years)
    except Exception as e:  # whatever the reader refuses may not be cached
        why = _json_diagnosis(entry.path) if entry.format == "json" else None
        raise fail(why or _reason(e)) from None
    if not df["value"].notna().any():
        what = "this query" if entry.format == "json" else _describe_selection(levels, years)
        raise fail(f"empty dataset (no values for {what})")
    facts = {"values": int(df["value"].notna().sum())}
    if entry.format == "json":
        facts.update(
            updated=df.attrs.get("updated"),
            label=df.attrs.get("label") or None,
            cube_size={c: int(df[c].nunique()) for c in df.columns if c not in ("value", "flag")},
        )
    else:
        facts["rows"] = df.attrs.get("tsv_rows")
    return facts


def _describe_selection(levels, years) -> str:
    lv = ", ".join(_LEVEL_NAMES[x] for x in sorted(levels)) if levels else "any NUTS level"
    ys = ", ".join(map(str, sorted(years))) if years else "any year"
    return f"{lv} in {ys}"


def _reason(e: Exception) -> str:
    """A reader's reason without its location (the caller names the file or the URL)."""
    return e.reason if isinstance(e, DataError) else f"{type(e).__name__}: {e}"


def _json_diagnosis(path) -> str | None:
    """Why a JSON answer the reader refused is not data, in the API's terms: invalid JSON,
    an error answer, not a dataset, an empty cube; None if none of these."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        d = json.loads(raw)
    except (OSError, EOFError, zlib.error) as e:
        return f"truncated or corrupt gzip ({type(e).__name__}: {e})"
    except json.JSONDecodeError as e:
        return f"invalid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
    except UnicodeDecodeError as e:
        return f"invalid JSON (not UTF-8 text, byte {e.start})"
    if isinstance(d, dict) and "error" in d:
        return f"an error answer instead of data (Eurostat: {error_label(json.dumps(d).encode())})"
    if not isinstance(d, dict) or d.get("class", "dataset") != "dataset":
        keys = ", ".join(list(d)[:6]) if isinstance(d, dict) else type(d).__name__
        return f"not a JSON-stat 2.0 dataset (top level: {keys})"
    if "value" in d and not d["value"]:
        return "empty dataset (no values for this query)"
    return None


# ---------------------------------------------------------------------------- reading
def _geo_level(code: str) -> int | None:
    """NUTS level implied by a code's length (``BE`` 0, ``BE1`` 1, ``BE10`` 2); None for aggregates."""
    return len(code) - 2 if _RE_NUTS_LIKE.match(code) else None


def _read_tsv_filtered(entry: CacheEntry, geo_levels, years) -> pd.DataFrame:
    """Stream the full-dataset TSV, keeping rows of the wanted NUTS levels and the wanted year columns."""
    opener = gzip.open if cache._is_gzip(entry.path) else open
    n_rows = 0
    try:
        with opener(entry.path, "rt", encoding="utf-8-sig", newline="") as f:
            header = f.readline().rstrip("\r\n").split("\t")
            dims = header[0].split("\\")[0].split(",")
            gi = dims.index("geo") if "geo" in dims else len(dims) - 1
            cols = [0] + [
                i for i, t in enumerate(header) if i and (years is None or t.strip() in {str(y) for y in years})
            ]
            if len(cols) == 1:
                raise DataError(
                    f"none of the years {', '.join(map(str, sorted(years)))} is in the table",
                    file=str(entry.path),
                    dataset=entry.dataset,
                )
            out = ["\t".join(header[i] for i in cols)]
            for line in f:
                if not line.strip():
                    continue
                n_rows += 1
                parts = line.rstrip("\r\n").split("\t")
                key = parts[0].split(",")
                if len(key) != len(dims):
                    continue  # the reader below reports malformed rows of kept geos; others are not ours
                if geo_levels is not None and _geo_level(key[gi]) not in geo_levels:
                    continue
                out.append("\t".join(parts[i] if i < len(parts) else "" for i in cols))
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise FormatError(
            f"truncated or corrupt gzip ({type(e).__name__}: {e})", file=str(entry.path), dataset=entry.dataset
        ) from None
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text (byte {e.start})", file=str(entry.path), dataset=entry.dataset) from None
    df = _parse_tsv("\n".join(out) + "\n", entry.path, entry.dataset)
    df.attrs["tsv_rows"] = n_rows
    return df


def _read(entry: CacheEntry, geo_levels=None, years=None) -> pd.DataFrame:
    """The tidy table of an entry, restricted to NUTS levels and years (reader errors pass)."""
    levels = None if geo_levels is None else set(geo_levels)
    yrs = None if years is None else {int(y) for y in years}
    if entry.format == "tsv":
        df = _read_tsv_filtered(entry, levels, yrs)
    else:
        df = read_eurostat(entry.path, format="json", dataset=entry.dataset)
    keep = np.ones(len(df), bool)
    if levels is not None:
        lv = pd.Series(df["geo"].astype(str).map(_geo_level), index=df.index)
        keep &= lv.isin(levels).to_numpy()
    if yrs is not None:
        keep &= df["time"].isin(yrs).to_numpy()
    attrs = dict(df.attrs)
    stamp = attrs.get("extracted") if entry.format == "json" else None  # JSON-stat ``updated``
    df = df[keep]
    df.attrs.update(attrs)
    df.attrs.update(
        dataset=entry.dataset,
        extracted=entry.extracted,
        updated=entry.updated or (stamp if stamp and stamp != "unknown" else None),
        url=entry.url,
        file=str(entry.path),
    )
    return df


def read_table(
    entry: CacheEntry, *, geo_levels: Iterable[int] | None = None, years: Iterable[int] | None = None
) -> pd.DataFrame:
    """The tidy table of a cached entry (see :mod:`demonoise.io.eurostat`), restricted to
    NUTS levels (``0`` countries, ``2`` NUTS 2; by code length) and years.

    ``df.attrs`` gets ``dataset``, ``extracted`` (download time, UTC), ``updated``
    (Eurostat's stamp, JSON-stat only), ``url`` and ``file`` (the cache file).

    Raises
    ------
    FetchError
        The reader refuses the entry: one line naming the dataset, the file, the reader's
        reason and the command that downloads it again (``demonoise fetch --year t --refresh``).
    """
    try:
        return _read(entry, geo_levels, years)
    except Exception as e:  # a cached entry the reader refuses: say how to replace it
        ys = years if years is not None else _selection([tuple(q) for q in entry.meta.get("query", [])])[1]
        cause = f"the cached table {entry.path} cannot be read ({_reason(e)})"
        raise fetch_error(
            f"{entry.dataset}: {cause}; download it again with {refresh_command(ys, dataset=entry.dataset)}",
            dataset=entry.dataset,
            url=entry.url,
            cause=cause,
        ) from None
