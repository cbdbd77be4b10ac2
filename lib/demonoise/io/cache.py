"""The local cache of Eurostat answers: payload + sidecar per query, a manifest per dataset.

Layout (root: :attr:`FetchOptions.root <demonoise.io.options.FetchOptions.root>`, i.e.
``$DEMONOISE_CACHE`` or ``~/.cache/demonoise`` unless given)::

    <root>/eurostat/<code>/<key>.json.gz     payload as received (gzip kept; .json if sent plain)
    <root>/eurostat/<code>/<key>.tsv.gz      (full-dataset TSV)
    <root>/eurostat/<code>/<key>.meta.json   sidecar
    <root>/datasets/eurostat-<t>[-cc...].json  manifest of a complete fetch
    <root>/datasets/eurostat-<t0>-<t1>[-cc...].json  (of several consecutive years)

``<key>`` names the query (``json_geoLevel-nuts2_time-2023+2024``, ``tsv_full``; see
:func:`demonoise.io.eurostat_api.query_key`). The sidecar records ``url`` (and
``final_url``), ``query``, ``extracted`` (download time, UTC ISO 8601, from the answer's
``Date`` header, else the local clock; ``extracted_from`` says which), ``updated``
(Eurostat's update stamp of the dataset, JSON-stat answers only), ``sha256`` and ``size`` of
the payload as stored, ``demonoise`` (the version that wrote it) and ``schema``.

An entry is written only after its payload has been read by the reader that later loads it
(the ``check`` of :func:`store`); the payload is moved into place atomically
(:func:`os.replace`) and the sidecar written last, so an interrupted or failed download
leaves nothing behind. An entry counts only if its payload has the recorded size and
sha256; a refreshed entry replaces the old one only once complete.

Schemas: ``1`` -- entries and manifests written by demonoise 0.2.0.dev0 and earlier, which
lack the ``schema`` and ``demonoise`` fields; ``2`` -- this version. The layout and every
other field are the same, so schema-1 entries are read as they are (nothing to migrate);
they were checked only for their structure when downloaded, and one that the reader
refuses is reported with the command that downloads it again.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from demonoise.core.atomic import atomic_write_text
from demonoise.core.version import __version__

if TYPE_CHECKING:  # the client imports requests, which the registry's reads of the cache do not need
    from demonoise.io.http import Download

__all__ = [
    "SCHEMA",
    "CacheEntry",
    "lookup",
    "store",
    "manifest_path",
    "write_manifest",
    "read_manifest",
    "cached_datasets",
    "utc_now",
]

#: Schema of the sidecars and manifests this version writes (see the module docstring).
SCHEMA = 2


def utc_now() -> str:
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
        ``updated`` (JSON-stat), ``last_modified``, ``sha256``, ``size``, ``demonoise``,
        ``schema``, ...
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

    @property
    def sidecar(self) -> Path:
        return self.path.parent / f"{self.meta.get('key', '')}.meta.json"

    @property
    def written_by(self) -> str:
        """The demonoise version that wrote the entry (schema-1 entries did not record it)."""
        return self.meta.get("demonoise") or "0.2.0.dev0 or earlier"


def _entry_dir(root: Path, dataset: str) -> Path:
    return root / "eurostat" / dataset


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def lookup(root: Path, dataset: str, key: str, *, verify: bool = True) -> tuple[CacheEntry | None, str | None]:
    """The cached entry, or ``(None, reason)`` if absent (reason None), incomplete or corrupt."""
    d = _entry_dir(root, dataset)
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


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def store(
    root: Path,
    dataset: str,
    key: str,
    *,
    fmt: str,
    describe: dict,
    download: Callable[[Path], Download],
    check: Callable[[CacheEntry], dict],
) -> CacheEntry:
    """Download into a temporary file beside the entry, check it, then move it into place.

    Parameters
    ----------
    root, dataset, key
        Where the entry goes (``<root>/eurostat/<dataset>/<key>.*``).
    fmt : {"json", "tsv"}
        Payload format (the file suffix; gzip is recognised from the bytes).
    describe : dict
        Sidecar fields known before downloading (``endpoint``, ``query``, ``url``).
    download : callable
        ``download(path) -> Download`` writes the payload to ``path``.
    check : callable
        ``check(entry) -> facts`` reads the not yet cached entry with the reader that will
        load it and raises :class:`~demonoise.core.errors.FetchError` if it cannot; its
        facts (``updated``, ``label``, ``values``, ``rows``, ``cube_size``) go into the sidecar.

    Returns
    -------
    CacheEntry
        With ``downloaded=True``.
    """
    d = _entry_dir(root, dataset)
    made = [p for p in (root, root / "eurostat", d) if not p.exists()]
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=d)
    os.close(fd)
    tmp = Path(tmp_name)
    payload: Path | None = None
    try:
        got = download(tmp)
        extracted = _http_date_to_iso(got.http_date)
        meta = {
            "schema": SCHEMA,
            "demonoise": __version__,
            "dataset": dataset,
            "key": key,
            "format": fmt,
            **describe,
            "url": got.url,
            "final_url": got.final_url,
            "file": f"{key}.{fmt}" + (".gz" if _is_gzip(tmp) else ""),
            "size": got.size,
            "sha256": got.sha256,
            "extracted": extracted or utc_now(),
            "extracted_from": "http-date" if extracted else "clock",
            "http_date": got.http_date,
            "last_modified": got.last_modified,
            "content_type": got.content_type,
            "content_encoding": got.content_encoding,
            "attempts": got.attempts,
        }
        facts = check(CacheEntry(dataset, tmp, meta, downloaded=True))
        meta.update(
            updated=facts.get("updated"),
            label=facts.get("label"),
            values=facts.get("values"),
            rows=facts.get("rows"),
            cube_size=facts.get("cube_size"),
        )
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


# ------------------------------------------------------------------------------ manifests
def manifest_path(root: Path, name: str) -> Path:
    return root / "datasets" / f"{name}.json"


def write_manifest(root: Path, name: str, content: dict) -> Path:
    """Write the manifest of dataset ``name`` (atomically), with ``schema``, ``demonoise`` and ``created``."""
    man = {"name": name, "kind": "cached", "schema": SCHEMA, "demonoise": __version__, "created": utc_now()}
    man.update(content)
    path = manifest_path(root, name)
    atomic_write_text(path, json.dumps(man, indent=1, ensure_ascii=False) + "\n")
    return path


def read_manifest(path: Path) -> dict | None:
    """A manifest (any schema), or None if absent or not one."""
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return man if isinstance(man, dict) and "params" in man and "entries" in man else None


def _complete(root: Path, man: dict) -> bool:
    """Every table of the manifest still in the cache with its recorded size, and its sidecar."""
    for info in man["entries"].values():
        p = root / info.get("file", "")
        if not p.is_file() or p.stat().st_size != info.get("size"):
            return False
        if not (root / info.get("sidecar", "")).is_file():
            return False
    return True


def cached_datasets(root: Path) -> list[dict]:
    """Every complete cached fetch: ``name, kind="cached", year`` (the reference year: the
    last of a multi-year fetch), ``years`` (every reference year), ``regions`` (number),
    ``label`` and ``details`` (provenance lines), sorted by name. No network.

    A fetch counts as complete if its manifest exists and every table it used is still
    in the cache with its recorded size.
    """
    out = []
    for path in sorted((root / "datasets").glob("*.json")):
        man = read_manifest(path)
        if man is None or not _complete(root, man):
            continue
        out.append(
            {
                "name": man["name"],
                "kind": "cached",
                "year": int(man["year"]),
                "years": [int(y) for y in man.get("years") or [man["year"]]],
                "regions": len(man["regions"]),
                "label": man.get("label", ""),
                "details": list(man.get("details", [])),
            }
        )
    return out
