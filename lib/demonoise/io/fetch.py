r"""Real Eurostat tables from the dissemination API, cached with their extraction time.

:func:`eurostat_counts` downloads the tables the data model needs for one reference year
``t`` -- for the NUTS 2 regions and for the countries -- caches them, and builds the
:class:`~demonoise.core.counts.Counts` named ``eurostat-<t>`` (``eurostat-<t>-<cc>...`` for a
selection of countries):

=========== ========================== ====================== =====================
measure     NUTS 2 regions             countries (NUTS 0)     years
=========== ========================== ====================== =====================
population  ``demo_r_d2jan``           ``demo_pjan``          1 January ``t``, ``t+1``
deaths      ``demo_r_magec``           ``demo_magec``         ``t``
births      ``demo_r_fagec``           ``demo_fagec``         ``t`` (age of mother)
=========== ========================== ====================== =====================

:func:`comparison_tables` fetches Eurostat's own indicators for comparison
(``demo_r_mlifexp`` life expectancy, ``demo_r_find2`` fertility indicators).

Endpoints (Eurostat dissemination API, no key; base URL from the argument, else the
environment variable ``DEMONOISE_EUROSTAT_URL``, else :data:`DEFAULT_BASE_URL`):

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
  filtered line by line to the wanted NUTS level and years when read.

Downloads stream to a temporary file in the cache directory (never held twice in
memory), with a timeout on connecting and on every read (a stalled server fails after
``timeout`` seconds), and a few retries with exponential backoff on transient failures
(HTTP 5xx and 429, connection reset, transfer cut short) -- not on 4xx, refused
connections or timeouts. The payload is validated *before* it enters the cache (gzip
integrity, JSON parse, a JSON-stat dataset with values, or a TSV header and rows); the
move into the cache is atomic (:func:`os.replace`), so a failure never leaves a partial
or corrupt entry. Every failure raises :class:`~demonoise.core.errors.FetchError` naming the
dataset code, the URL and the cause (``HTTP 404``, ``truncated or corrupt gzip``,
``invalid JSON``, ``timed out``...).

Cache layout (root: the argument, else ``$DEMONOISE_CACHE``, else ``~/.cache/demonoise``)::

    <root>/eurostat/<code>/<key>.json.gz     payload as received (gzip kept)
    <root>/eurostat/<code>/<key>.meta.json   sidecar: url, query, extracted, updated,
                                             http date, sha256, size, ...
    <root>/datasets/eurostat-<t>[-cc...].json  manifest of a complete fetch

``<key>`` names the query, e.g. ``json_geoLevel-nuts2_time-2023+2024`` or ``tsv_full``.
The sidecar is written last; an entry counts only if its payload has the recorded size
and sha256. ``extracted`` is the download time in UTC (ISO 8601, from the response's
``Date`` header, else the local clock); ``updated`` is the JSON-stat ``updated`` stamp
(Eurostat's last update of the dataset). A cached entry is reused without network;
``refresh=True`` downloads again (the old entry stays until the new one is complete);
``offline=True`` never touches the network and fails clearly when an entry is missing.

References
----------
Eurostat, "API - Detailed guidelines - API Statistics" and "- Asynchronous API"
(filters, ``geoLevel``, the 5 000 000-cell limit and its ``413 EXTRACTION_TOO_BIG``
answer, error bodies ``{"error": [{"status", "id", "label"}]}``); "API - Detailed
guidelines - SDMX 2.1" (``format=TSV&compressed=true``). JSON-stat 2.0 (json-stat.org).
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import gzip
import hashlib
import http.client
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from demonoise.core.atomic import atomic_write_text
from demonoise.core.counts import Counts, Provenance, TableProvenance
from demonoise.core.errors import DataError, FetchError, ParameterError
from demonoise.io.eurostat import _parse_tsv, read_eurostat
from demonoise.io.nuts import nuts_codes
from demonoise.io.tidy import counts_from_eurostat, published_age_codes

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "COUNT_TABLES",
    "COMPARISON_TABLES",
    "IncompleteRegionWarning",
    "CacheEntry",
    "FetchResult",
    "base_url_from_env",
    "cache_root",
    "dataset_name",
    "fetch_table",
    "read_table",
    "fetch_counts",
    "eurostat_counts",
    "comparison_tables",
    "cached_datasets",
    "load_cached",
]

DEFAULT_BASE_URL = "https://ec.europa.eu/eurostat/api/dissemination"
ENV_BASE_URL = "DEMONOISE_EUROSTAT_URL"
ENV_CACHE = "DEMONOISE_CACHE"
#: Seconds allowed for connecting and for each read of the response.
DEFAULT_TIMEOUT = 60.0

#: measure -> (NUTS 2 table, country table)
COUNT_TABLES: dict[str, tuple[str, str]] = {
    "population": ("demo_r_d2jan", "demo_pjan"),
    "deaths": ("demo_r_magec", "demo_magec"),
    "births": ("demo_r_fagec", "demo_fagec"),
}
#: Eurostat's published indicators, fetched for comparison.
COMPARISON_TABLES: tuple[str, ...] = ("demo_r_mlifexp", "demo_r_find2")
ENDPOINTS = ("json", "tsv")

_CHUNK = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_LEVEL_NAMES = {0: "country", 1: "nuts1", 2: "nuts2", 3: "nuts3"}
_RE_NUTS_LIKE = re.compile(r"^[A-Z]{2}[0-9A-Z]{0,3}$")
_MAX_RETRY_AFTER = 60.0


class IncompleteRegionWarning(UserWarning):
    """Regions dropped because a table lacks them or some of their cells (``skip_incomplete``)."""


# ----------------------------------------------------------------------------- settings
def base_url_from_env(base_url: str | None = None) -> str:
    """The API base URL: ``base_url``, else ``$DEMONOISE_EUROSTAT_URL``, else :data:`DEFAULT_BASE_URL`.

    Raises :class:`ParameterError` unless it is an ``http://`` or ``https://`` URL.
    """
    url = (base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ParameterError(f"Eurostat base URL must be an http(s) URL, got {url!r}")
    return url


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache directory: ``cache_dir``, else ``$DEMONOISE_CACHE``, else ``~/.cache/demonoise``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "demonoise"


def dataset_name(year: int, countries: Sequence[str] | None = None) -> str:
    """``eurostat-<year>`` for every country, ``eurostat-<year>-<cc>-<cc>...`` for a selection."""
    if not countries:
        return f"eurostat-{int(year)}"
    return f"eurostat-{int(year)}-" + "-".join(c.lower() for c in countries)


def _check_year(year) -> int:
    try:
        y = int(year)
    except (TypeError, ValueError):
        raise ParameterError(f"year must be an integer, got {year!r}") from None
    if isinstance(year, bool) or (isinstance(year, float) and year != y):
        raise ParameterError(f"year must be an integer, got {year!r}")
    if not 1960 <= y <= 2100:
        raise ParameterError(f"year {y} is outside 1960..2100")
    return y


def _check_countries(countries) -> tuple[str, ...] | None:
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


def _check_endpoint(endpoint: str) -> str:
    if endpoint not in ENDPOINTS:
        raise ParameterError(f"endpoint must be one of {', '.join(ENDPOINTS)}, got {endpoint!r}")
    return endpoint


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _http_date_to_iso(value: str | None) -> str | None:
    if not value:
        return None
    try:
        d = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.UTC)
    return d.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------- errors
def _fetch_error(msg: str, *, dataset: str, url: str | None, cause: str, status: int | None = None) -> FetchError:
    """A one-line :class:`FetchError` with ``dataset``, ``url``, ``cause``, ``status`` attributes."""
    err = FetchError(" ".join(msg.split()))
    err.dataset, err.url, err.cause, err.status = dataset, url, cause, status
    return err


class _Transient(Exception):
    """A failure worth retrying (5xx, 429, connection reset, transfer cut short)."""

    def __init__(self, cause: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(cause)
        self.cause, self.retry_after, self.status = cause, retry_after, status


def _api_message(body: bytes, encoding: str | None) -> str:
    """Eurostat's explanation from an error body (JSON ``error`` label or SOAP ``faultstring``)."""
    if not body:
        return ""
    if encoding == "gzip" or body[:2] == _GZIP_MAGIC:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return ""
    text = body.decode("utf-8", "replace").strip()
    label = ""
    try:
        d = json.loads(text)
        err = d.get("error") if isinstance(d, dict) else None
        if isinstance(err, list) and err:
            err = err[0]
        if isinstance(err, dict):
            label = str(err.get("label") or err.get("message") or "")
    except ValueError:
        m = re.search(r"<faultstring>(.*?)</faultstring>", text, re.S)
        label = m[1] if m else re.sub(r"<[^>]+>", " ", text)
    label = " ".join(label.split())
    return label[:300] + ("..." if len(label) > 300 else "")


# ------------------------------------------------------------------------------ HTTP GET
def _opener(url: str):
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host in ("127.0.0.1", "localhost", "::1"):  # never send loopback requests through a proxy
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _get_once(dataset: str, url: str, dest: Path, timeout: float, progress) -> dict:
    """One GET of ``url`` streamed into ``dest``; returns response facts. Raises
    :class:`_Transient` for what a retry may cure and :class:`FetchError` otherwise."""
    from demonoise.core.version import __version__

    req = urllib.request.Request(
        url, headers={"Accept-Encoding": "gzip", "User-Agent": f"demonoise/{__version__} (python urllib)"}
    )
    try:
        resp = _opener(url).open(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        try:
            body = e.read(65536)
        except (OSError, http.client.HTTPException):
            body = b""
        msg = _api_message(body, e.headers.get("Content-Encoding") if e.headers else None)
        cause = f"HTTP {e.code} {e.reason}" + (f" (Eurostat: {msg})" if msg else "")
        if e.code >= 500 or e.code == 429:
            ra = None
            if e.headers and e.headers.get("Retry-After", "").strip().isdigit():
                ra = float(e.headers["Retry-After"].strip())
            raise _Transient(cause, ra, e.code) from None
        raise _fetch_error(
            f"{dataset}: {cause} from {url}", dataset=dataset, url=url, cause=cause, status=e.code
        ) from None
    except urllib.error.URLError as e:
        r = e.reason
        if isinstance(r, TimeoutError):
            cause = f"timed out after {timeout:g} s (no answer from the server)"
            raise _fetch_error(f"{dataset}: {cause} at {url}", dataset=dataset, url=url, cause=cause) from None
        if isinstance(r, (ConnectionResetError, ConnectionAbortedError)):
            raise _Transient(f"connection reset ({r})") from None
        text = getattr(r, "strerror", None) or str(r)
        cause = f"cannot connect ({text})"
        raise _fetch_error(f"{dataset}: {cause} to {url}", dataset=dataset, url=url, cause=cause) from None
    except TimeoutError:
        cause = f"timed out after {timeout:g} s (no answer from the server)"
        raise _fetch_error(f"{dataset}: {cause} at {url}", dataset=dataset, url=url, cause=cause) from None
    except (ConnectionResetError, ConnectionAbortedError, http.client.RemoteDisconnected, BrokenPipeError) as e:
        raise _Transient(f"connection reset ({type(e).__name__})") from None
    except http.client.HTTPException as e:
        raise _Transient(f"bad HTTP response ({type(e).__name__}: {e})") from None

    with resp:
        enc = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        if enc not in ("identity", "gzip", "x-gzip"):
            cause = f"unsupported Content-Encoding {enc!r} (only gzip was accepted)"
            raise _fetch_error(f"{dataset}: {cause} from {url}", dataset=dataset, url=url, cause=cause)
        length = resp.headers.get("Content-Length")
        total = int(length) if length and length.strip().isdigit() else None
        bar = progress(dataset, total) if progress is not None else None
        h = hashlib.sha256()
        n = 0
        try:
            with open(dest, "wb") as f:
                while True:
                    try:
                        chunk = resp.read(_CHUNK)
                    except TimeoutError:
                        cause = f"timed out after {timeout:g} s (the server stalled after {n} bytes)"
                        raise _fetch_error(
                            f"{dataset}: {cause} at {url}", dataset=dataset, url=url, cause=cause
                        ) from None
                    except http.client.IncompleteRead as e:
                        got = n + len(e.partial or b"")
                        raise _Transient(
                            f"transfer cut short after {got} of {total if total is not None else '?'} bytes"
                        ) from None
                    except (ConnectionResetError, ConnectionAbortedError) as e:
                        raise _Transient(f"connection reset after {n} bytes ({type(e).__name__})") from None
                    if not chunk:
                        break
                    f.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        if total is not None and n < total:
            raise _Transient(f"transfer cut short after {n} of {total} bytes")
        hd = resp.headers
        return {
            "status": resp.status,
            "final_url": resp.geturl(),
            "size": n,
            "sha256": h.hexdigest(),
            "content_type": hd.get("Content-Type"),
            "content_encoding": hd.get("Content-Encoding"),
            "http_date": hd.get("Date"),
            "last_modified": hd.get("Last-Modified"),
        }


def _get(dataset: str, url: str, dest: Path, *, timeout: float, retries: int, backoff: float, progress) -> dict:
    """GET with retries and exponential backoff (``backoff * 2**attempt`` s, or ``Retry-After``)."""
    attempt = 0
    while True:
        try:
            return _get_once(dataset, url, dest, timeout, progress)
        except _Transient as e:
            if attempt >= retries:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise _fetch_error(
                    f"{dataset}: {e.cause}{tries} from {url}", dataset=dataset, url=url, cause=e.cause, status=e.status
                ) from None
            delay = e.retry_after if e.retry_after is not None else backoff * (2**attempt)
            time.sleep(min(max(delay, 0.0), _MAX_RETRY_AFTER))
            attempt += 1


# ---------------------------------------------------------------------------- validation
def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _validate(path: Path, fmt: str, dataset: str, url: str) -> dict:
    """Check a downloaded payload before it may enter the cache; returns facts for the sidecar."""

    def fail(cause):
        return _fetch_error(f"{dataset}: {cause} in the response from {url}", dataset=dataset, url=url, cause=cause)

    if path.stat().st_size == 0:
        raise fail("empty body")
    gz = _is_gzip(path)
    try:
        if fmt == "json":
            with gzip.open(path, "rb") if gz else open(path, "rb") as f:
                raw = f.read()
            try:
                d = json.loads(raw)
            except json.JSONDecodeError as e:
                raise fail(f"invalid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
            except UnicodeDecodeError as e:
                raise fail(f"invalid JSON (not UTF-8 text, byte {e.start})") from None
            del raw
            return _check_jsonstat(d, fail)
        with (
            gzip.open(path, "rt", encoding="utf-8-sig", newline="")
            if gz
            else open(path, encoding="utf-8-sig", newline="")
        ) as f:
            header = f.readline()
            first = header.split("\t", 1)[0]
            if "\\" not in first or first.rsplit("\\", 1)[1].strip().lower() not in ("time", "time_period"):
                raise fail(f"not a Eurostat TSV (header {header[:60]!r})")
            rows = sum(1 for line in f if line.strip())
        if rows == 0:
            raise fail("empty dataset (a TSV header without rows)")
        return {"rows": rows}
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise fail(f"truncated or corrupt gzip ({type(e).__name__}: {e})") from None
    except UnicodeDecodeError as e:
        raise fail(f"not UTF-8 text (byte {e.start})") from None


def _check_jsonstat(d: Any, fail) -> dict:
    if isinstance(d, dict) and "error" in d:
        msg = _api_message(json.dumps(d).encode(), None)
        raise fail(f"an error answer instead of data (Eurostat: {msg})")
    if not isinstance(d, dict) or d.get("class") != "dataset":
        keys = ", ".join(list(d)[:6]) if isinstance(d, dict) else type(d).__name__
        raise fail(f"not a JSON-stat 2.0 dataset (top level: {keys})")
    missing = [k for k in ("id", "size", "dimension", "value") if k not in d]
    if missing:
        raise fail(f"not a JSON-stat 2.0 dataset (no {', '.join(missing)})")
    if not isinstance(d["id"], list) or not isinstance(d["size"], list) or len(d["id"]) != len(d["size"]):
        raise fail("not a JSON-stat 2.0 dataset ('id' and 'size' disagree)")
    if not d["value"]:
        raise fail("empty dataset (no values for this query)")
    return {
        "updated": d.get("updated"),
        "label": d.get("label"),
        "values": len(d["value"]),
        "size": dict(zip(d["id"], d["size"], strict=True)),
    }


# ---------------------------------------------------------------------------------- cache
@dataclass(frozen=True)
class CacheEntry:
    """One cached answer: the payload file and its sidecar facts.

    Attributes
    ----------
    dataset : str
        Eurostat code.
    path : Path
        Payload as received (gzip kept).
    meta : dict
        Sidecar: ``url``, ``query``, ``endpoint``, ``format``, ``extracted`` (UTC ISO 8601
        download time), ``extracted_from`` (``"http-date"`` or ``"clock"``), ``http_date``,
        ``updated`` (JSON-stat), ``last_modified``, ``sha256``, ``size``, ...
    downloaded : bool
        True if this call downloaded it, False if it was reused from the cache.
    """

    dataset: str
    path: Path
    meta: dict = field(repr=False)
    downloaded: bool = False

    @property
    def url(self) -> str:
        return self.meta.get("url", "")

    @property
    def extracted(self) -> str:
        return self.meta.get("extracted") or "unknown"

    @property
    def updated(self) -> str | None:
        return self.meta.get("updated")

    @property
    def format(self) -> str:
        return self.meta.get("format", "json")


def _query_key(endpoint: str, query: Sequence[tuple[str, str]]) -> str:
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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _lookup(root: Path, dataset: str, key: str, *, verify: bool = True) -> tuple[CacheEntry | None, str | None]:
    """The cached entry, or ``(None, reason)`` if absent, incomplete or corrupt."""
    d = root / "eurostat" / dataset
    side = d / f"{key}.meta.json"
    if not side.exists():
        return None, None
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        payload = d / meta["file"]
        size, sha = int(meta["size"]), str(meta["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"unreadable sidecar {side}"
    if not payload.exists():
        return None, f"payload {payload} is missing"
    if payload.stat().st_size != size:
        return None, f"payload {payload} has {payload.stat().st_size} bytes, the sidecar says {size}"
    if verify and _sha256(payload) != sha:
        return None, f"payload {payload} does not match its sha256"
    return CacheEntry(dataset, payload, meta, downloaded=False), None


def _store(
    root: Path, dataset: str, key: str, endpoint: str, url: str, query, *, timeout, retries, backoff, progress
) -> CacheEntry:
    """Download into a temporary file next to the entry, validate, then move into place."""
    fmt = "tsv" if endpoint == "tsv" else "json"
    d = root / "eurostat" / dataset
    made = [p for p in (root, root / "eurostat", d) if not p.exists()]
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=d)
    os.close(fd)
    tmp = Path(tmp_name)
    payload: Path | None = None
    try:
        info = _get(dataset, url, tmp, timeout=timeout, retries=retries, backoff=backoff, progress=progress)
        facts = _validate(tmp, fmt, dataset, url)
        gz = _is_gzip(tmp)
        extracted = _http_date_to_iso(info["http_date"])
        meta = {
            "dataset": dataset,
            "key": key,
            "endpoint": "statistics/1.0" if fmt == "json" else "sdmx/2.1",
            "format": fmt,
            "query": [list(q) for q in query],
            "url": url,
            "final_url": info["final_url"],
            "file": f"{key}.{fmt}" + (".gz" if gz else ""),
            "size": info["size"],
            "sha256": info["sha256"],
            "extracted": extracted or _utc_now(),
            "extracted_from": "http-date" if extracted else "clock",
            "http_date": info["http_date"],
            "updated": facts.get("updated"),
            "last_modified": info["last_modified"],
            "content_type": info["content_type"],
            "content_encoding": info["content_encoding"],
            "label": facts.get("label"),
            "values": facts.get("values"),
            "rows": facts.get("rows"),
            "cube_size": facts.get("size"),
        }
        payload = d / meta["file"]
        os.replace(tmp, payload)
        atomic_write_text(d / f"{key}.meta.json", json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        for other in d.glob(f"{key}.*"):  # a previous payload of another encoding
            if other.name not in (meta["file"], f"{key}.meta.json") and not other.name.startswith("."):
                other.unlink(missing_ok=True)
        return CacheEntry(dataset, payload, meta, downloaded=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        if payload is not None and not (d / f"{key}.meta.json").exists():
            payload.unlink(missing_ok=True)
        for p in reversed(made):  # leave no empty directory behind
            try:
                p.rmdir()
            except OSError:
                break
        raise


def _statistics_url(base: str, dataset: str, query) -> str:
    return f"{base}/statistics/1.0/data/{dataset}?" + urllib.parse.urlencode(list(query))


def _tsv_url(base: str, dataset: str) -> str:
    return f"{base}/sdmx/2.1/data/{dataset}?format=TSV&compressed=true"


def _statistics_query(years: Iterable[int], levels: Iterable[int]) -> list[tuple[str, str]]:
    q = [("format", "JSON"), ("lang", "EN")]
    q += [("geoLevel", _LEVEL_NAMES[lv]) for lv in sorted(set(levels))]
    q += [("time", str(y)) for y in sorted(set(years))]
    return q


def fetch_table(
    dataset: str,
    query: Sequence[tuple[str, str]] = (),
    *,
    endpoint: str = "json",
    cache_dir=None,
    base_url: str | None = None,
    refresh: bool = False,
    offline: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = 3,
    backoff: float = 1.0,
    progress: Callable | None = None,
) -> CacheEntry:
    """One Eurostat table, from the cache or downloaded into it.

    Parameters
    ----------
    dataset : str
        Eurostat code, e.g. ``"demo_r_d2jan"``.
    query : sequence of (name, value)
        Statistics API parameters (``format=JSON&lang=EN`` are added if absent), e.g.
        ``[("geoLevel", "nuts2"), ("time", "2023"), ("time", "2024")]``.
    endpoint : {"json", "tsv"}
        ``json``: the statistics API with ``query``; if it answers 413 (extraction too
        big) the full-dataset TSV is fetched instead. ``tsv``: the full-dataset TSV of
        the SDMX 2.1 API (``query`` is not used).
    cache_dir : path, optional
        See :func:`cache_root`.
    base_url : str, optional
        See :func:`base_url_from_env`.
    refresh : bool
        Download even if a cached entry exists (it is replaced only on success).
    offline : bool
        Never use the network; :class:`FetchError` if the entry is not cached.
    timeout : float
        Seconds allowed for connecting and for every read.
    retries : int
        Further attempts after a transient failure (5xx, 429, reset, cut-short transfer).
    backoff : float
        First retry delay in seconds, doubled at each retry.
    progress : callable, optional
        ``progress(label, total_bytes_or_None)`` returning an object with ``update(n)``
        and ``close()`` (a ``tqdm`` bar fits), called once per download.

    Returns
    -------
    CacheEntry

    Raises
    ------
    FetchError
        Naming the dataset, the URL and the cause; nothing is left in the cache.
    """
    _check_endpoint(endpoint)
    if refresh and offline:
        raise ParameterError("refresh and offline exclude each other")
    if timeout is None or not timeout > 0:
        raise ParameterError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if retries < 0:
        raise ParameterError(f"retries must be >= 0, got {retries}")
    root = cache_root(cache_dir)
    query = list(query)
    if endpoint == "json":
        names = {k.lower() for k, _ in query}
        query = (
            ([("format", "JSON")] if "format" not in names else [])
            + ([("lang", "EN")] if "lang" not in names else [])
            + query
        )
    key = _query_key(endpoint, query)
    tsv_key = _query_key("tsv", ())
    keys = [key] + ([tsv_key] if endpoint == "json" else [])  # a TSV fallback may be what the cache holds

    problems = []
    if not refresh:
        for k in keys:
            entry, why = _lookup(root, dataset, k)
            if entry is not None:
                return entry
            if why:
                problems.append(why)
    if offline:
        base = (base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
        url = _statistics_url(base, dataset, query) if endpoint == "json" else _tsv_url(base, dataset)
        detail = f" ({'; '.join(problems)})" if problems else ""
        cause = f"not in the cache {root}{detail} and offline mode forbids downloading"
        raise _fetch_error(f"{dataset}: {cause}; query {url}", dataset=dataset, url=url, cause=cause)

    base = base_url_from_env(base_url)
    kw = dict(timeout=float(timeout), retries=int(retries), backoff=float(backoff), progress=progress)
    if endpoint == "json":
        url = _statistics_url(base, dataset, query)
        try:
            return _store(root, dataset, key, "json", url, query, **kw)
        except FetchError as e:
            if getattr(e, "status", None) != 413:
                raise
            warnings.warn(
                f"{dataset}: the statistics API refused the query as too big ({e.cause}); "
                f"downloading the full dataset as TSV instead",
                RuntimeWarning,
                stacklevel=2,
            )
    return _store(
        root, dataset, tsv_key, "tsv", _tsv_url(base, dataset), [("format", "TSV"), ("compressed", "true")], **kw
    )


# ------------------------------------------------------------------------------ reading
def _geo_level(code: str) -> int | None:
    """NUTS level implied by a code's length (``BE`` 0, ``BE1`` 1, ``BE10`` 2); None for aggregates."""
    return len(code) - 2 if _RE_NUTS_LIKE.match(code) else None


def _read_tsv_filtered(entry: CacheEntry, geo_levels, years) -> pd.DataFrame:
    """Stream the full-dataset TSV, keeping rows of the wanted NUTS levels and the wanted year columns."""
    opener = gzip.open if _is_gzip(entry.path) else open
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
                    f"none of the years {', '.join(map(str, years))} is in the table",
                    file=str(entry.path),
                    dataset=entry.dataset,
                )
            out = ["\t".join(header[i] for i in cols)]
            for line in f:
                parts = line.rstrip("\r\n").split("\t")
                key = parts[0].split(",")
                if len(key) != len(dims):
                    continue  # the reader below reports malformed rows of kept geos; others are not ours
                if geo_levels is not None and _geo_level(key[gi]) not in geo_levels:
                    continue
                out.append("\t".join(parts[i] if i < len(parts) else "" for i in cols))
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise DataError(
            f"cached TSV is corrupt ({type(e).__name__}: {e}); fetch again with refresh",
            file=str(entry.path),
            dataset=entry.dataset,
        ) from None
    return _parse_tsv("\n".join(out) + "\n", entry.path, entry.dataset)


def read_table(
    entry: CacheEntry, *, geo_levels: Iterable[int] | None = None, years: Iterable[int] | None = None
) -> pd.DataFrame:
    """The tidy table of a cached entry (see :mod:`demonoise.io.eurostat`), restricted to
    NUTS levels (``0`` countries, ``2`` NUTS 2; by code length) and years.

    ``df.attrs`` gets ``dataset``, ``extracted`` (download time, UTC), ``updated``
    (Eurostat's stamp, JSON-stat only), ``url`` and ``file`` (the cache file).
    """
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
    df = df[keep]
    df.attrs.update(attrs)
    df.attrs.update(
        dataset=entry.dataset, extracted=entry.extracted, updated=entry.updated, url=entry.url, file=str(entry.path)
    )
    return df


# ------------------------------------------------------------------------- building Counts
def _reduce(df: pd.DataFrame, measure: str, keep_sex: bool) -> pd.DataFrame:
    """One category per extra dimension (annual, number, TOTAL); core columns only."""
    file, ds = df.attrs.get("file"), df.attrs.get("dataset")
    out = df
    if "freq" in out.columns:
        out = out[out["freq"] == "A"]
    for col in [c for c in out.columns if c not in ("geo", "sex", "age", "time", "value", "flag", "freq")]:
        cats = pd.unique(out[col])
        if len(cats) <= 1:
            continue
        pick = "NR" if col == "unit" and "NR" in cats else "TOTAL" if "TOTAL" in cats else None
        if pick is None:
            raise DataError(
                f"dimension '{col}' has several categories ({', '.join(map(str, cats[:6]))})",
                file=file,
                dataset=ds,
                table=ds,
                measure=measure,
            )
        out = out[out[col] == pick]
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


def _reference_ages(frames: Sequence[pd.DataFrame], regions: Sequence[str], year: int) -> list[str]:
    """Published age codes (aggregates and TOTAL dropped) with a value for some region in ``year``."""
    for df in frames:  # the NUTS 2 table defines the axis; the country table when there is none
        sub = df[df["geo"].isin(regions) & (df["time"] == year) & df["value"].notna()]
        if len(sub):
            kept, _ = published_age_codes(pd.unique(sub["age"].astype(str)))
            return kept
    return []


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
        first = None
        for y in years:
            for s in sexes if sexes is not None else [None]:
                for a in ages:
                    k = (y, s, a) if sexes is not None else (y, a)
                    if k not in got:
                        first = (y, s, a)
                        break
                if first:
                    break
            if first:
                break
        y, s, a = first
        where = f"{y}" + (f" sex {s}" if s else "") + f" age {a}"
        out[code] = f"{expected - int(n[code])} of {expected} cells missing (first: {where})"
    return out


@dataclass
class FetchResult:
    """What :func:`fetch_counts` did.

    Attributes
    ----------
    counts : Counts
    entries : dict
        Eurostat code -> :class:`CacheEntry` used (``downloaded`` tells which were fetched).
    skipped : dict
        Region -> reasons, for regions dropped as incomplete (``skip_incomplete``).
    ignored_codes : list of str
        NUTS 2 codes in the tables that are not NUTS 2021 codes (other NUTS versions).
    cache : Path
    manifest : Path or None
    absent : list of str
        NUTS 2021 NUTS 2 regions of the countries present without any population value
        for the year (not published, or published under another NUTS version).
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


def _build(year: int, countries: tuple[str, ...] | None, entries: dict[str, CacheEntry], skip_incomplete: bool):
    """Counts from the cached entries of the six tables."""
    name = dataset_name(year, countries)
    level2 = set(nuts_codes(level=2))
    level0 = set(nuts_codes(level=0))
    want_cc = set(countries) if countries else None
    frames: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}
    ignored: set[str] = set()
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = [year, year + 1] if measure == "population" else [year]
        keep_sex = measure != "births"
        reg = _reduce(read_table(entries[rcode], geo_levels=(2,), years=years), measure, keep_sex)
        nat = _reduce(read_table(entries[ncode], geo_levels=(0,), years=years), measure, keep_sex)
        # NUTS 2 codes of other NUTS versions (2016, 2024) are not NUTS 2021 codes: ignored, and listed
        for g in pd.unique(reg["geo"].astype(str)):
            if g[:2] in level0 and (want_cc is None or g[:2] in want_cc) and g not in level2 and not g.endswith("Z"):
                ignored.add(g)
        reg = reg[reg["geo"].isin(level2)]
        nat = nat[nat["geo"].isin(level0)]
        if want_cc is not None:
            reg = reg[reg["geo"].str[:2].isin(want_cc)]
            nat = nat[nat["geo"].isin(want_cc)]
        frames[measure] = (reg, nat)

    # candidates: every NUTS 2021 code with a population value on 1 January of t
    pop_r, pop_n = frames["population"]
    order = [c for c in nuts_codes() if c in level0 or c in level2]
    has = set(pop_r.loc[(pop_r["time"] == year) & pop_r["value"].notna(), "geo"]) | set(
        pop_n.loc[(pop_n["time"] == year) & pop_n["value"].notna(), "geo"]
    )
    if want_cc is not None:
        has |= want_cc  # a requested country must be there; if its table lacks it, say so
        for cc in countries:
            if not any(c[:2] == cc for c in has if c != cc) and cc not in set(pop_n["geo"]):
                raise DataError(
                    f"no population data for this country in {COUNT_TABLES['population'][0]} or "
                    f"{COUNT_TABLES['population'][1]} for {year}",
                    dataset=name,
                    region=cc,
                    year=year,
                )
    candidates = [c for c in order if c in has]
    if not candidates:
        raise DataError(f"no region has population data for {year}", dataset=name, year=year)
    reg_c = [c for c in candidates if c in level2]
    nat_c = [c for c in candidates if c in level0]
    # NUTS 2021 regions of the countries present that have no population value at all
    present = {c[:2] for c in candidates}
    absent = [c for c in nuts_codes(level=2) if c[:2] in present and c not in has]

    # reference age axes, from the NUTS 2 tables
    ages = {}
    for measure in COUNT_TABLES:
        r, n = frames[measure]
        ages[measure] = _reference_ages([r, n], candidates, year)
    ages["deaths"] = ages["population"]  # the data model puts deaths on the population's age axis
    # completeness, per region and table
    reasons: dict[str, list[str]] = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = [year, year + 1] if measure == "population" else [year]
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
    skipped = {c: reasons[c] for c in candidates if c in reasons}
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
        warnings.warn(msg + " -- dropped", IncompleteRegionWarning, stacklevel=3)
    final = [c for c in candidates if c not in skipped]
    if not final:
        raise DataError(f"every region is incomplete for {year}", dataset=name, year=year)

    tidy = {}
    provs = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        r, n = frames[measure]
        allowed = set(ages[measure]) | {"TOTAL"}
        parts = [df[df["geo"].isin(final) & df["age"].isin(allowed)] for df in (r, n)]
        df = pd.concat(parts, ignore_index=True)
        df.attrs.update(file=" + ".join(str(entries[c].path) for c in (rcode, ncode)), dataset=rcode)
        tidy[measure] = df
        er, en = entries[rcode], entries[ncode]
        note = [
            f"{rcode} (NUTS 2): downloaded {er.extracted}, Eurostat update {er.updated or 'unknown'}, {er.url}",
            f"{ncode} (countries): downloaded {en.extracted}, Eurostat update {en.updated or 'unknown'}, {en.url}",
        ]
        if measure == "births":
            note.append(
                f"age-of-mother cells of {rcode}: {', '.join(ages[measure][:2])} .. {', '.join(ages[measure][-2:])}"
                f" (the country table restricted to the same codes)"
            )
        sk = [
            f"{c} ({'; '.join(w for w in skipped[c] if w.startswith((rcode, ncode)))})"
            for c in skipped
            if any(w.startswith((rcode, ncode)) for w in skipped[c])
        ]
        if sk:
            note.append("regions skipped as incomplete: " + ", ".join(sk))
        provs[measure] = TableProvenance(
            "real", (rcode, ncode), min(er.extracted, en.extracted), "Eurostat", "; ".join(note)
        )
    prov = Provenance(population=provs["population"], deaths=provs["deaths"], births=provs["births"])
    counts = counts_from_eurostat(
        tidy["population"],
        tidy["deaths"],
        tidy["births"],
        year=year,
        regions=final,
        provenance=prov,
        name=name,
        check_totals="warn",
    )
    return counts, skipped, sorted(ignored), absent


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _manifest_path(root: Path, name: str) -> Path:
    return root / "datasets" / f"{name}.json"


def _details(counts: Counts, entries: dict[str, CacheEntry], skipped, root: Path) -> list[str]:
    lines = []
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        er, en = entries[rcode], entries[ncode]
        lines.append(
            f"{measure}: {rcode} + {ncode} (Eurostat, real), downloaded {er.extracted} / {en.extracted}, "
            f"Eurostat update {er.updated or 'unknown'} / {en.updated or 'unknown'}"
        )
    if skipped:
        lines.append("skipped as incomplete: " + ", ".join(skipped))
    lines.append(f"cache: {root}")
    return lines


def _write_manifest(root: Path, res: FetchResult, params: dict) -> Path:
    c = res.counts
    n0 = sum(r.level == 0 for r in c.regions)
    extracted = min(e.extracted for e in res.entries.values())
    man = {
        "name": c.name,
        "kind": "cached",
        "year": c.year,
        "params": params,
        "created": _utc_now(),
        "regions": list(c.codes),
        "skipped": res.skipped,
        "ignored_codes": res.ignored_codes,
        "absent": res.absent,
        "label": f"Eurostat {c.year}: {_plural(n0, 'country', 'countries')} and "
        f"{_plural(len(c.regions) - n0, 'NUTS 2 region', 'NUTS 2 regions')}, real tables downloaded {extracted[:10]}",
        "details": _details(c, res.entries, res.skipped, root),
        "entries": {
            k: {
                "file": str(e.path.relative_to(root)),
                "sidecar": str((e.path.parent / (e.meta.get("key") or "")).relative_to(root)) + ".meta.json",
                "sha256": e.meta.get("sha256"),
                "size": e.meta.get("size"),
                "extracted": e.extracted,
                "updated": e.updated,
                "url": e.url,
            }
            for k, e in res.entries.items()
        },
    }
    path = _manifest_path(root, c.name)
    atomic_write_text(path, json.dumps(man, indent=1, ensure_ascii=False) + "\n")
    return path


def fetch_counts(
    year: int,
    countries: Sequence[str] | None = None,
    *,
    cache_dir=None,
    base_url: str | None = None,
    refresh: bool = False,
    offline: bool = False,
    progress: Callable | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = 3,
    backoff: float = 1.0,
    skip_incomplete: bool = False,
    endpoint: str = "json",
    write_manifest: bool = True,
) -> FetchResult:
    """:func:`eurostat_counts` with the details: cache entries used, skipped regions,
    ignored non-NUTS-2021 codes, cache and manifest paths."""
    year = _check_year(year)
    ctry = _check_countries(countries)
    _check_endpoint(endpoint)
    root = cache_root(cache_dir)
    kw = dict(
        endpoint=endpoint,
        cache_dir=root,
        base_url=base_url,
        refresh=refresh,
        offline=offline,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        progress=progress,
    )
    entries: dict[str, CacheEntry] = {}
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        years = [year, year + 1] if measure == "population" else [year]
        entries[rcode] = fetch_table(rcode, _statistics_query(years, [2]), **kw)
        entries[ncode] = fetch_table(ncode, _statistics_query(years, [0]), **kw)
    counts, skipped, ignored, absent = _build(year, ctry, entries, skip_incomplete)
    res = FetchResult(counts, entries, skipped, ignored, root, absent=absent)
    if write_manifest:
        params = {
            "year": year,
            "countries": list(ctry) if ctry else None,
            "skip_incomplete": bool(skip_incomplete),
            "endpoint": endpoint,
        }
        res.manifest = _write_manifest(root, res, params)
    return res


def eurostat_counts(
    year: int,
    countries: Sequence[str] | None = None,
    *,
    cache_dir=None,
    base_url: str | None = None,
    refresh: bool = False,
    offline: bool = False,
    progress: Callable | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = 3,
    backoff: float = 1.0,
    skip_incomplete: bool = False,
    endpoint: str = "json",
) -> Counts:
    """Real Eurostat counts for reference year ``year``: NUTS 2 regions and countries.

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
    skip_incomplete : bool
        Drop regions that lack a table or some cells (with an
        :class:`IncompleteRegionWarning` listing them, and a note in the provenance)
        instead of raising.
    cache_dir, base_url, refresh, offline, progress, timeout, retries, backoff, endpoint
        See :func:`fetch_table`.

    Returns
    -------
    Counts
        Named ``eurostat-<year>`` (``eurostat-<year>-<cc>...`` for a selection). The
        age axis is the NUTS 2 tables' (``Y_LT1, Y1..Y99, Y_OPEN, UNK``); births keep
        demo_r_fagec's published age-of-mother cells, and the country table is
        restricted to the same codes. Each table's provenance lists both datasets,
        their download times (``extracted`` is the earlier one) and Eurostat's update
        stamps. A manifest is written so that :func:`load_cached` can rebuild the
        counts without network.

    Raises
    ------
    FetchError
        A download failed (or, offline, a table is not cached).
    DataError
        A region lacks a table or cells (naming the region and the table), or a cell
        is negative or non-integer.
    ParameterError
        Unknown country code, bad year, timeout or endpoint.
    """
    return fetch_counts(
        year,
        countries,
        cache_dir=cache_dir,
        base_url=base_url,
        refresh=refresh,
        offline=offline,
        progress=progress,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        skip_incomplete=skip_incomplete,
        endpoint=endpoint,
    ).counts


def comparison_tables(
    year: int,
    countries: Sequence[str] | None = None,
    *,
    cache_dir=None,
    base_url: str | None = None,
    refresh: bool = False,
    offline: bool = False,
    progress: Callable | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = 3,
    backoff: float = 1.0,
    endpoint: str = "json",
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
    year = _check_year(year)
    ctry = _check_countries(countries)
    keep = set(nuts_codes(level=0)) | set(nuts_codes(level=2))
    out = {}
    for code in tables:
        entry = fetch_table(
            code,
            _statistics_query([year], [0, 2]),
            endpoint=endpoint,
            cache_dir=cache_dir,
            base_url=base_url,
            refresh=refresh,
            offline=offline,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            progress=progress,
        )
        df = read_table(entry, geo_levels=(0, 2), years=[year])
        m = df["geo"].isin(keep) & df["value"].notna()
        if ctry:
            m &= df["geo"].str[:2].isin(ctry)
        attrs = dict(df.attrs)
        df = df[m]
        df.attrs.update(attrs)
        out[code] = df
    return out


# ------------------------------------------------------------------------ registry hooks
def _read_manifest(path: Path) -> dict | None:
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return man if isinstance(man, dict) and "params" in man and "entries" in man else None


def cached_datasets(cache_dir=None) -> list[dict]:
    """Every complete cached fetch: ``name, kind="cached", year, regions`` (number),
    ``label`` and ``details`` (provenance lines), sorted by name.

    A fetch counts as complete if its manifest exists and every table it used is still
    in the cache with its recorded size. No network.
    """
    root = cache_root(cache_dir)
    out = []
    for path in sorted((root / "datasets").glob("*.json")):
        man = _read_manifest(path)
        if man is None:
            continue
        ok = True
        for info in man["entries"].values():
            p = root / info.get("file", "")
            if not p.is_file() or p.stat().st_size != info.get("size"):
                ok = False
                break
            if not (root / info.get("sidecar", "")).is_file():
                ok = False
                break
        if ok:
            out.append(
                {
                    "name": man["name"],
                    "kind": "cached",
                    "year": int(man["year"]),
                    "regions": len(man["regions"]),
                    "label": man.get("label", ""),
                    "details": list(man.get("details", [])),
                }
            )
    return out


def load_cached(name: str, cache_dir=None) -> Counts:
    """Rebuild a fetched dataset (``eurostat-2023``, ...) from the cache, without network.

    Raises :class:`ParameterError` for an unknown name (listing the cached ones) and
    :class:`FetchError` if a table has since left the cache.
    """
    root = cache_root(cache_dir)
    man = _read_manifest(_manifest_path(root, str(name)))
    if man is None:
        have = ", ".join(d["name"] for d in cached_datasets(root)) or "none"
        raise ParameterError(
            f"no cached dataset named {name!r} in {root} (cached: {have}); run `demonoise fetch` first"
        )
    p = man["params"]
    return fetch_counts(
        p["year"],
        p.get("countries"),
        cache_dir=root,
        offline=True,
        skip_incomplete=p.get("skip_incomplete", False),
        endpoint=p.get("endpoint", "json"),
        write_manifest=False,
    ).counts
