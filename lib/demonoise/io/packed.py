r"""The packed (binary) form of a :class:`~demonoise.core.counts.Counts`: fast to load.

A ``.npz`` archive (numpy's zip of ``.npy`` arrays, read without pickle) holding the
count arrays as they are in memory, the age axes' labels, the regions' codes, names,
levels and countries, and a small JSON header (dataset name, reference year, the
sha256 of the CSV the counts were read from, and the digest of the arrays). Loading it
skips the text parsing and the cell-by-cell checks of
:func:`demonoise.io.template.read_counts_csv` -- the counts template CSV stays the
documented exchange format; this is only a faster form of the same counts, derived
from the CSV and checked against it (:mod:`demonoise.io.datasets`).

Integrity
---------
:func:`content_digest` is the sha256 over every array member, in name order, of
``name``, dtype, shape and the raw bytes -- independent of the zip container and of
the zlib that compressed it. :func:`read_packed` recomputes it and compares it with
the header's, so a damaged file is never used (a truncated or altered archive fails
to open or fails the digest). The archive is written deterministically (members in
name order, fixed time stamps, no pickle), so equal counts give equal bytes under the
same numpy and zlib.

I/O layer: numpy, json, zipfile and the data model only.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

from demonoise.core.atomic import atomic_write_bytes
from demonoise.core.counts import AgeAxis, Counts, Panel, Provenance, Region
from demonoise.core.errors import DataError

__all__ = [
    "FORMAT",
    "FORMAT_PANEL",
    "content_digest",
    "pack",
    "write_packed",
    "read_packed",
    "PackedHeader",
    "pack_panel",
    "write_packed_panel",
    "read_packed_panel",
]

#: Format tag stored in the header (bumped if the layout of the members changes).
FORMAT = "demonoise-packed-counts/1"
_HEADER = "header"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _arrays(counts: Counts) -> dict[str, np.ndarray]:
    """The array members of ``counts`` (counts, axes' labels, regions)."""
    return {"pop_start": counts.pop_start, "pop_end": counts.pop_end, **_shared_arrays(counts)}


def _shared_arrays(held: Counts | Panel) -> dict[str, np.ndarray]:
    """The members a single year and a panel pack alike: the age labels, the regions, the
    deaths and the births (with their age labels) where held."""
    out = {
        "ages": np.array(held.ages.labels),
        "region_code": np.array([r.code for r in held.regions]),
        "region_name": np.array([r.name for r in held.regions]),
        "region_level": np.array([r.level for r in held.regions], dtype=np.int64),
        "region_country": np.array([r.country for r in held.regions]),
    }
    if held.deaths is not None:
        out["deaths"] = held.deaths
    if held.births is not None:
        out["births"] = held.births
        out["birth_ages"] = np.array(held.birth_ages.labels)
    return out


def content_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the members in name order: ``name``, dtype, shape, raw bytes (C order)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def pack(counts: Counts, *, source_sha256: str) -> tuple[bytes, str]:
    """The packed bytes of ``counts`` and their :func:`content_digest`.

    ``source_sha256`` is the sha256 of the CSV file the counts were read from (kept in
    the header, so that a packed file can be matched with its CSV).
    """
    arrays = _arrays(counts)
    digest = content_digest(arrays)
    header = {
        "format": FORMAT,
        "name": counts.name,
        "year": int(counts.year),
        "source_sha256": source_sha256,
        "content_sha256": digest,
    }
    return _zip(arrays, header), digest


def _zip(arrays: dict[str, np.ndarray], header: dict) -> bytes:
    """The deterministic zip of the array members and the JSON header."""
    members = {f"{k}.npy": _npy(v) for k, v in arrays.items()}
    members[f"{_HEADER}.npy"] = _npy(np.array([json.dumps(header, sort_keys=True)]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # Unix, whatever the platform (deterministic bytes)
            zf.writestr(info, members[name], compresslevel=6)
    return buf.getvalue()


def write_packed(counts: Counts, path: str | Path, *, source_sha256: str) -> str:
    """Write ``counts`` packed to ``path`` (atomically); returns the content digest."""
    data, digest = pack(counts, source_sha256=source_sha256)
    atomic_write_bytes(Path(path), data)
    return digest


class PackedHeader(dict):
    """The header of a packed file: ``format, name, year, source_sha256, content_sha256``."""


def read_packed(path: str | Path, *, provenance: Provenance, name: str | None = None) -> tuple[Counts, PackedHeader]:
    """Read a packed file: the counts (with ``provenance``: the file does not carry it) and
    the header. ``name`` overrides the dataset name of the header.

    Raises
    ------
    DataError
        The file cannot be opened as a packed archive, lacks a member, has another
        format tag, or its arrays do not match the digest in its header (damaged) --
        naming the file. The :class:`Counts` constructor's checks (shapes, negative
        counts) apply as well.
    """
    arrays, header, file = _open(path, FORMAT)
    regions = _regions(arrays, ("pop_start", "pop_end", "ages"), file)
    counts = Counts(
        name or header["name"],
        int(header["year"]),
        regions,
        AgeAxis.from_labels([str(a) for a in arrays["ages"]]),
        arrays["pop_start"],
        arrays["pop_end"],
        provenance,
        deaths=arrays.get("deaths"),
        births=arrays.get("births"),
        birth_ages=AgeAxis.from_labels([str(a) for a in arrays["birth_ages"]]) if "birth_ages" in arrays else None,
    )
    return counts, header


def _open(path, fmt: str) -> tuple[dict, PackedHeader, str]:
    """The arrays and header of a packed file of format ``fmt``, its digest checked."""
    path = Path(path)
    file = str(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise DataError(f"not a readable packed counts file ({type(e).__name__}: {e})", file=file) from None
    try:
        header = PackedHeader(json.loads(str(arrays.pop(_HEADER).reshape(-1)[0])))
    except (KeyError, ValueError, IndexError):
        raise DataError("packed counts file without a readable header", file=file) from None
    if header.get("format") != fmt:
        raise DataError(f"packed counts file of format {header.get('format')!r}, expected {fmt!r}", file=file)
    if content_digest(arrays) != header.get("content_sha256"):
        raise DataError("packed counts file damaged: its arrays do not match the digest in its header", file=file)
    return arrays, header, file


_REGION_KEYS = ("region_code", "region_name", "region_level", "region_country")


def _regions(arrays: dict, needed: tuple, file: str) -> tuple[Region, ...]:
    """The regions of a packed file, after checking that the ``needed`` members are there."""
    missing = [k for k in (*needed, *_REGION_KEYS) if k not in arrays]
    if missing or ("births" in arrays) != ("birth_ages" in arrays):
        raise DataError(f"packed counts file lacks member(s) {missing or ['births/birth_ages']}", file=file)
    if len({len(arrays[k]) for k in _REGION_KEYS}) != 1:
        raise DataError("packed counts file with region members of different lengths", file=file)
    return tuple(
        Region(str(c), str(n), int(lv), str(cc))
        for c, n, lv, cc in zip(*(arrays[k] for k in _REGION_KEYS), strict=True)
    )


# ----------------------------------------------------------------------------- panels
#: Format tag of a packed panel (several consecutive years, each 1 January stock once).
FORMAT_PANEL = "demonoise-packed-panel/1"


def pack_panel(panel: Panel, *, source_sha256: str) -> tuple[bytes, str]:
    """The packed bytes of a :class:`~demonoise.core.counts.Panel` and their digest: the
    stocks (Y + 1, R, 3, A), deaths (Y, R, 3, A), births (Y, R, B), the years, axes and regions."""
    arrays = {"years": np.array(panel.years, dtype=np.int64), "stocks": panel.stocks, **_shared_arrays(panel)}
    digest = content_digest(arrays)
    header = {
        "format": FORMAT_PANEL,
        "name": panel.name,
        "years": [int(y) for y in panel.years],
        "source_sha256": source_sha256,
        "content_sha256": digest,
    }
    return _zip(arrays, header), digest


def write_packed_panel(panel: Panel, path: str | Path, *, source_sha256: str) -> str:
    """Write a panel packed to ``path`` (atomically); returns the content digest."""
    data, digest = pack_panel(panel, source_sha256=source_sha256)
    atomic_write_bytes(Path(path), data)
    return digest


def read_packed_panel(
    path: str | Path, *, provenance: Provenance, name: str | None = None
) -> tuple[Panel, PackedHeader]:
    """Read a packed panel (checks as :func:`read_packed`; the panel's own checks apply)."""
    arrays, header, file = _open(path, FORMAT_PANEL)
    regions = _regions(arrays, ("years", "stocks", "ages"), file)
    panel = Panel(
        name or header["name"],
        tuple(int(y) for y in arrays["years"]),
        regions,
        AgeAxis.from_labels([str(a) for a in arrays["ages"]]),
        arrays["stocks"],
        provenance,
        deaths=arrays.get("deaths"),
        births=arrays.get("births"),
        birth_ages=AgeAxis.from_labels([str(a) for a in arrays["birth_ages"]]) if "birth_ages" in arrays else None,
    )
    return panel, header
