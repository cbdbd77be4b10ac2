"""Readers for Eurostat's published formats, each returning one tidy table.

Every reader returns a :class:`pandas.DataFrame` with the columns

``geo, sex, age, time, value, flag`` (those of them the dataset has -- a births table
has no ``sex``), followed by every other dimension of the file (``freq``, ``unit``,
``ord_brth``, ... -- lower-case names), where

* ``time`` is an ``int`` (annual data only),
* ``value`` is a ``float``, ``NaN`` where Eurostat publishes ``:`` or nothing,
* ``flag`` is a ``str``, ``""`` if none: Eurostat's observation status letters
  (``b`` break in series, ``d`` definition differs, ``e`` estimated, ``f`` forecast,
  ``i`` imputed, ``m`` missing/cannot exist, ``n`` not significant, ``p`` provisional,
  ``r`` revised, ``s`` Eurostat estimate, ``u`` low reliability, ``z`` not applicable,
  ``c``/``C`` confidential; the SDMX-CSV ``CONF_STATUS`` is appended to ``OBS_FLAG``).

The index is the 1-based line of the file the value was read from (``index.name ==
"line"``) for the text formats, and the flat cube position (``"position"``) for
JSON-stat, so that later validation can point at the line of a bad cell.

``df.attrs`` carries ``file``, ``format``, ``dataset`` (Eurostat code in lower case,
from the structure when the format names it, else guessed from the file name, else
``None``) and ``extracted`` (JSON-stat ``updated``, SDMX-CSV ``LAST UPDATE``, else
``"unknown"``).

Formats (sniffed by :func:`read_eurostat`; gzip is detected from the magic bytes):

========== ============================================================================
``tsv``    bulk download / dissemination API TSV: ``unit,sex,age,geo\\time`` (older) or
           ``freq,unit,sex,age,geo\\TIME_PERIOD`` (newer), one row per series, values
           such as ``79.2 e``, ``: `` or ``: c``
``sdmx``   SDMX-CSV from the SDMX 2.1 API (``DATAFLOW,LAST UPDATE,freq,...,TIME_PERIOD,
           OBS_VALUE,OBS_FLAG[,CONF_STATUS]``) or from the data browser / SDMX 3.0 API
           (``STRUCTURE,STRUCTURE_ID[,STRUCTURE_NAME],freq[,Time frequency],...``, label
           columns after the code columns)
``json``   JSON-stat 2.0 from the statistics API (``value`` sparse dict or dense list,
           ``status`` dict, list or single string)
``long``   long CSV extracts ``values,freq,unit,sex,age,geo,time`` or
           ``freq,unit,sex,age,geo,values,year`` (no flags; empty value = missing)
========== ============================================================================

References
----------
Eurostat, "API - Detailed guidelines" (SDMX 2.1 / 3.0 data queries, statistics API,
JSON-stat 2.0 responses); Eurostat, "Bulk download guidelines"; Eurostat database
flags (observation and confidentiality status, 2025 code lists).
"""

from __future__ import annotations

import csv
import math
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.errors import FormatError, ParameterError
from demonoise.io._text import check_codes as _check_codes
from demonoise.io._text import csv_frame as _csv_frame
from demonoise.io._text import parse_json as _parse_json_text
from demonoise.io._text import read_text as _read_text

__all__ = [
    "FORMATS",
    "KNOWN_FLAGS",
    "read_eurostat",
    "sniff_format",
    "read_tsv",
    "read_sdmx_csv",
    "read_jsonstat",
    "read_long_csv",
    "jsonstat_to_frame",
]

FORMATS = ("tsv", "sdmx", "json", "long")

#: Flag letters Eurostat uses: observation status before and after the 2025 change of
#: code lists, and confidentiality status (lower case in the old lists, upper case in
#: ``CONF_STATUS``).
KNOWN_FLAGS = frozenset("bcdefimnprsuz") | frozenset("CNP")

_FRONT = ("geo", "sex", "age", "time", "value", "flag")
_MISSING = {"", ":", "NA", "NaN", "nan"}
_SDMX_SPECIAL = {
    "STRUCTURE",
    "STRUCTURE_ID",
    "STRUCTURE_NAME",
    "ACTION",
    "DATAFLOW",
    "LAST UPDATE",
    "TIME_PERIOD",
    "OBS_VALUE",
    "OBS_FLAG",
    "CONF_STATUS",
}
_RE_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_RE_STRUCT = re.compile(r"^(?:[A-Za-z0-9_.]+:)?([A-Za-z0-9_]+)(?:\$[A-Za-z0-9_]+)?(?:\([^)]*\))?$")
_FILENAME_STOP = {"sample", "sdmx", "jsonstat", "json", "tsv", "csv", "constructed", "example", "bulk", "api"}


# ----------------------------------------------------------------------------- basics
def sniff_format(path: str | Path) -> str:
    """Guess the format of a Eurostat file from its first bytes.

    Returns one of :data:`FORMATS`; raises :class:`FormatError` if none fits.
    """
    text = _read_text(Path(path))
    return _sniff_text(text, path)


def _sniff_text(text: str, path) -> str:
    head = text.lstrip()[:1]
    if head in ("{", "["):
        return "json"
    first = text.split("\n", 1)[0].rstrip("\r")
    if "\t" in first and "\\" in first.split("\t", 1)[0]:
        return "tsv"
    cols = [c.strip() for c in next(csv.reader([first]), [])]
    if cols and cols[0] in ("DATAFLOW", "STRUCTURE"):
        return "sdmx"
    if "values" in cols or "value" in cols:
        return "long"
    raise FormatError(f"unrecognised Eurostat format; header {first[:80]!r}", file=str(path), line=1)


def _guess_dataset(path: Path) -> str | None:
    """Eurostat code from a file name such as ``demo_r_d2jan_BE10_2023_2024.csv.gz``.

    Takes the leading ``_``-separated lower-case tokens, stopping at the first token
    that is numeric, contains an upper-case letter or is a layout word (``sample``,
    ``sdmx``, ...). Returns ``None`` if nothing is left.
    """
    stem = Path(path).name.split(".")[0]
    out = []
    for tok in stem.split("_"):
        if not tok or tok.isdigit() or tok != tok.lower() or tok in _FILENAME_STOP:
            break
        out.append(tok)
    return "_".join(out) or None


def _key_text(dims: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in dims.items())


def _loc(row: dict) -> dict:
    """DataError location fields (region/sex/age/year) from a row of dimension values."""
    out = {}
    if "geo" in row:
        out["region"] = row["geo"]
    if "sex" in row:
        out["sex"] = row["sex"]
    if "age" in row:
        out["age"] = row["age"]
    if "time" in row:
        out["year"] = row["time"]
    return out


def _parse_values(raw: pd.Series, *, allow_flags: bool):
    """Split Eurostat cells (``"79.2 e"``, ``": c"``, ``"1234"``, ``""``) into value and flag.

    Works on the distinct cell strings only (``pd.factorize``), which makes multi-million
    cell files fast. Returns ``(value float array, flag object array, bad_number mask,
    bad_flag mask)``.
    """
    codes, uniq = pd.factorize(raw.to_numpy(dtype=object), use_na_sentinel=False)
    s = pd.Series(uniq, dtype=object).astype("str").str.strip()
    if allow_flags:
        parts = s.str.partition(" ")
        num = parts[0]
        flag = parts[2].str.strip()
        # ":c" written without the space
        glued = num.str.startswith(":") & (num.str.len() > 1)
        if glued.any():
            flag = flag.where(~glued, num.str[1:] + flag)
            num = num.where(~glued, ":")
    else:
        num, flag = s, pd.Series("", index=s.index, dtype="str")
    missing = num.isin(_MISSING).to_numpy()
    u_val = pd.to_numeric(num.where(~missing, "nan"), errors="coerce").to_numpy(dtype=float)
    u_bad_num = np.isnan(u_val) & ~missing
    u_flag = flag.to_numpy(dtype=object)
    return u_val[codes], u_flag[codes], u_bad_num[codes], _bad_flags(u_flag)[codes]


def _bad_flags(flags) -> np.ndarray:
    """Mask of flags with a letter outside :data:`KNOWN_FLAGS` (checked on distinct values)."""
    codes, uniq = pd.factorize(np.asarray(flags, dtype=object), use_na_sentinel=False)
    bad = np.array([bool(f) and not set(str(f)) <= KNOWN_FLAGS for f in uniq], dtype=bool)
    return bad[codes] if len(uniq) else np.zeros(len(codes), bool)


def _to_years(t) -> tuple[np.ndarray, np.ndarray]:
    """Integer years from strings (``NaN`` where not a whole number), via the distinct values."""
    codes, uniq = pd.factorize(np.asarray(t, dtype=object), use_na_sentinel=False)
    u = pd.to_numeric(pd.Series(uniq, dtype=object).astype("str").str.strip(), errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(u) & (u == np.round(u))
    return u[codes], ok[codes]


def _finish(
    df: pd.DataFrame,
    dims: list[str],
    *,
    path: Path,
    fmt: str,
    dataset: str | None,
    extracted: str,
    line_label: str = "line",
    check_duplicates: bool = True,
    **attrs,
) -> pd.DataFrame:
    """Check time, duplicates; order columns; set attrs."""
    file = str(path)
    _check_codes(df, [d for d in dims if d != "time"], file)
    # time must be annual
    ti, ok = _to_years(df["time"].to_numpy(dtype=object))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        row = df.iloc[i]
        raise FormatError(
            f"time period {str(row['time']).strip()!r} is not a year (only annual data are supported)",
            file=file,
            line=_line_of(df, i, line_label),
            key=_key_text({d: row[d] for d in dims if d != "time"}),
        )
    df["time"] = ti.astype(np.int64)
    # duplicated keys
    keycols = [d for d in dims if d != "time"] + ["time"]
    dup = df.duplicated(keycols, keep=False).to_numpy() if check_duplicates else np.zeros(len(df), bool)
    if dup.any():
        idx = np.flatnonzero(dup)
        first = df.iloc[idx[0]]
        same = idx[(df.iloc[idx][keycols] == first[keycols]).all(axis=1).to_numpy()]
        lines = [str(_line_of(df, j, line_label)) for j in same[:5]]
        key = {d: first[d] for d in keycols}
        raise FormatError(
            f"duplicated key ({line_label}s {', '.join(lines)})",
            file=file,
            line=_line_of(df, int(same[1]), line_label),
            key=_key_text(key),
            **_loc(key),
        )
    front = [c for c in _FRONT if c in df.columns]
    rest = [c for c in dims if c not in front]
    out = df[front + rest]
    out.attrs.update(file=file, format=fmt, dataset=dataset, extracted=extracted, **attrs)
    return out


def _line_of(df: pd.DataFrame, i: int, line_label: str = "line"):
    return int(df.index[i]) if line_label == "line" else None


def _raise_bad_cells(df: pd.DataFrame, raw: pd.Series, bad_num, bad_flag, dims: list[str], path: Path) -> None:
    for mask, what in ((bad_num, "non-numeric value"), (bad_flag, "unknown flag")):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            row = df.iloc[i]
            key = {d: row[d] for d in dims}
            line = int(df.index[i]) if df.index.name == "line" else None
            raise FormatError(
                f"{what} {str(raw.iloc[i]).strip()!r} (known flags: {''.join(sorted(KNOWN_FLAGS))})"
                if what == "unknown flag"
                else f"{what} {str(raw.iloc[i]).strip()!r}",
                file=str(path),
                line=line,
                key=_key_text(key),
                **_loc(key),
            )


# ------------------------------------------------------------------------------- TSV
def read_tsv(path: str | Path, *, dataset: str | None = None) -> pd.DataFrame:
    """Read a Eurostat bulk / API TSV file (gzipped or not) into a tidy table.

    The first header cell lists the dimensions, the last one written ``geo\\time``
    (older bulk files) or ``geo\\TIME_PERIOD`` (API); the other header cells are the
    years. Each cell is ``<number>[ <flags>]`` or ``:[ <flags>]`` (missing).

    Raises
    ------
    FormatError
        Wrong header, truncated gzip, non-numeric value, unknown flag, duplicated
        series -- naming the file, the line and the key.
    """
    path = Path(path)
    return _parse_tsv(_read_text(path), path, dataset)


def _parse_tsv(text: str, path: Path, dataset: str | None) -> pd.DataFrame:
    lines = text.splitlines()
    if not lines:
        raise FormatError("empty file", file=str(path))
    header = lines[0].split("\t")
    first = header[0].strip()
    if "\\" not in first:
        raise FormatError(
            f"not a Eurostat TSV header: first cell {first!r} has no 'dim\\time' part", file=str(path), line=1
        )
    dims_part, time_name = first.rsplit("\\", 1)
    if time_name.strip().lower() not in ("time", "time_period"):
        raise FormatError(
            f"not a Eurostat TSV header: expected '\\time' or '\\TIME_PERIOD', got {first!r}", file=str(path), line=1
        )
    dims = [d.strip().lower() for d in dims_part.split(",")]
    if len(set(dims)) != len(dims) or not all(_RE_IDENT.match(d) for d in dims):
        raise FormatError(f"bad dimension list in TSV header {first!r}", file=str(path), line=1)
    times = [h.strip() for h in header[1:]]
    if not times:
        raise FormatError("TSV header has no time columns", file=str(path), line=1)
    ncol = len(header)
    keys, cells, line_no = [], [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != ncol:
            raise FormatError(
                f"expected {ncol} tab-separated fields, found {len(parts)} (truncated line?)",
                file=str(path),
                line=i,
                key=parts[0],
            )
        k = parts[0].split(",")
        if len(k) != len(dims):
            raise FormatError(
                f"series key has {len(k)} parts, header names {len(dims)} dimensions",
                file=str(path),
                line=i,
                key=parts[0],
            )
        keys.append(k)
        cells.append(parts[1:])
        line_no.append(i)
    if len(set(times)) != len(times):
        dup_t = next(t for t in times if times.count(t) > 1)
        raise FormatError(
            f"time column {dup_t!r} appears twice in the TSV header", file=str(path), line=1, key=f"time={dup_t}"
        )
    seen: dict[tuple, int] = {}
    for k, ln in zip(keys, line_no, strict=True):
        tk = tuple(k)
        if tk in seen:
            key = dict(zip(dims, k, strict=True))
            raise FormatError(
                f"duplicated key (lines {seen[tk]}, {ln})", file=str(path), line=ln, key=_key_text(key), **_loc(key)
            )
        seen[tk] = ln
    if not keys:
        raise FormatError("TSV file has a header but no data rows", file=str(path), line=1)
    n, T = len(keys), len(times)
    key_arr = np.array(keys, dtype=object).reshape(n, len(dims))
    cell_arr = np.array(cells, dtype=object).reshape(n, T)
    df = pd.DataFrame({d: np.repeat(key_arr[:, j], T) for j, d in enumerate(dims)})
    df["time"] = np.tile(np.array(times, dtype=object), n)
    df.index = pd.Index(np.repeat(np.array(line_no, dtype=np.int64), T), name="line")
    raw = pd.Series(cell_arr.ravel(), index=df.index)
    val, flag, bad_num, bad_flag = _parse_values(raw, allow_flags=True)
    df["value"], df["flag"] = val, flag
    _raise_bad_cells(df, raw, bad_num, bad_flag, dims + ["time"], path)
    return _finish(
        df,
        dims + ["time"],
        path=path,
        fmt="tsv",
        dataset=dataset or _guess_dataset(path),
        extracted="unknown",
        check_duplicates=False,
    )


# -------------------------------------------------------------------------- SDMX-CSV
def _sdmx_dataset(ref: str) -> str | None:
    m = _RE_STRUCT.match(ref.strip())
    return m[1].lower() if m else None


def _sdmx_time(stamp: str) -> str:
    """Eurostat's ``LAST UPDATE`` (``dd/mm/yy HH:MM:SS``) as ISO 8601; other spellings kept."""
    stamp = stamp.strip()
    for fmt in ("%d/%m/%y %H:%M:%S", "%d/%m/%Y %H:%M:%S", "%d/%m/%y", "%d/%m/%Y"):
        try:
            return datetime.strptime(stamp, fmt).isoformat()
        except ValueError:
            pass
    return stamp or "unknown"


def read_sdmx_csv(path: str | Path, *, dataset: str | None = None) -> pd.DataFrame:
    """Read Eurostat SDMX-CSV (plain or with label columns) into a tidy table.

    Dimension columns are the identifier-like column names other than the SDMX ones
    (``DATAFLOW``, ``LAST UPDATE``, ``STRUCTURE*``, ``TIME_PERIOD``, ``OBS_VALUE``,
    ``OBS_FLAG``, ``CONF_STATUS``); label columns (``Time frequency``, ``Age class``,
    ``Time``, ...: names with a space or capitalised words) are dropped.
    ``CONF_STATUS`` letters are appended to the flag.
    """
    path = Path(path)
    return _parse_sdmx(_read_text(path), path, dataset)


def _parse_sdmx(text: str, path: Path, dataset: str | None) -> pd.DataFrame:
    df = _csv_frame(text, path)
    cols = list(df.columns)
    if cols[0] not in ("DATAFLOW", "STRUCTURE"):
        raise FormatError(
            f"not SDMX-CSV: first column is {cols[0]!r}, expected DATAFLOW or STRUCTURE", file=str(path), line=1
        )
    for need in ("TIME_PERIOD", "OBS_VALUE"):
        if need not in cols:
            raise FormatError(f"SDMX-CSV header lacks {need}", file=str(path), line=1)
    dims = []
    for c in cols:
        if c in _SDMX_SPECIAL:
            continue
        is_label = (not _RE_IDENT.match(c)) or (c[0].isupper() and not c.isupper())
        if not is_label:
            dims.append(c)
    if not dims:
        raise FormatError("SDMX-CSV header has no dimension columns", file=str(path), line=1)
    low = [d.lower() for d in dims]
    if len(set(low)) != len(low) or "time" in low:
        raise FormatError(f"SDMX-CSV dimension columns clash: {dims}", file=str(path), line=1)
    if len(df) == 0:
        raise FormatError("SDMX-CSV file has a header but no data", file=str(path), line=1)
    # structure and extraction time
    ref_col = "DATAFLOW" if "DATAFLOW" in cols else "STRUCTURE_ID"
    refs = pd.unique(df[ref_col]) if ref_col in cols else []
    ds = dataset or (_sdmx_dataset(refs[0]) if len(refs) == 1 else None) or _guess_dataset(path)
    extracted = "unknown"
    if "LAST UPDATE" in cols:
        stamps = pd.unique(df["LAST UPDATE"])
        extracted = max((_sdmx_time(s) for s in stamps), default="unknown")
    out = pd.DataFrame({d.lower(): df[d].str.strip().to_numpy() for d in dims}, index=df.index)
    out["time"] = df["TIME_PERIOD"].str.strip().to_numpy()
    raw = df["OBS_VALUE"]
    val, _, bad_num, _ = _parse_values(raw, allow_flags=False)
    flag = df["OBS_FLAG"].str.strip() if "OBS_FLAG" in cols else pd.Series("", index=df.index)
    if "CONF_STATUS" in cols:
        flag = flag + df["CONF_STATUS"].str.strip()
    bad_flag = _bad_flags(flag.to_numpy(dtype=object))
    out["value"], out["flag"] = val, flag.to_numpy(dtype=object)
    dims_l = low + ["time"]
    _raise_bad_cells(out, pd.Series(np.where(bad_flag, flag, raw), index=df.index), bad_num, bad_flag, dims_l, path)
    return _finish(out, dims_l, path=path, fmt="sdmx", dataset=ds, extracted=extracted)


# ------------------------------------------------------------------------- JSON-stat
def read_jsonstat(path: str | Path, *, dataset: str | None = None) -> pd.DataFrame:
    """Read a JSON-stat 2.0 dataset (Eurostat statistics API response) into a tidy table.

    Every cell of the cube becomes a row (absent cells of a sparse ``value`` are
    ``NaN``), so a sparse and a dense response of the same query give the same table.
    The row-major flat position ``sum_k i_k * prod_{j>k} size_j`` (JSON-stat 2.0) maps
    cells to category positions.
    """
    path = Path(path)
    return _parse_json(_read_text(path), path, dataset)


def _parse_json(text: str, path: Path, dataset: str | None) -> pd.DataFrame:
    return jsonstat_to_frame(_parse_json_text(text, path), file=str(path), dataset=dataset)


#: Largest JSON-stat cube read: every cell becomes a row of the tidy table (about 80
#: bytes each), and a sparse ``value`` of a few entries can declare any number of cells.
#: Eurostat's largest demographic cubes (demo_r_d2jan, every region and year) hold about
#: 2 x 10^7 cells.
MAX_JSONSTAT_CELLS = 50_000_000


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else None


def _as_float(v) -> float:
    """A JSON number as float; an integer beyond the float range becomes +-inf (refused later)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _jsonstat_shape(d: dict, file: str) -> tuple[list[str], list[int], int]:
    """``id``, ``size`` and the number of cells of a JSON-stat dataset, checked."""
    for k in ("id", "size", "dimension", "value"):
        if k not in d:
            raise FormatError(f"JSON-stat dataset lacks '{k}'", file=file)
    ids, size = d["id"], d["size"]
    if not isinstance(ids, list) or not all(isinstance(k, str) for k in ids) or len(set(ids)) != len(ids):
        raise FormatError("JSON-stat 'id' must be a list of distinct dimension names", file=file)
    if not isinstance(size, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in size):
        raise FormatError("JSON-stat 'size' must be a list of non-negative integers", file=file)
    if len(ids) != len(size):
        raise FormatError(f"JSON-stat 'id' has {len(ids)} dimensions but 'size' has {len(size)}", file=file)
    if not isinstance(d["dimension"], dict):
        raise FormatError("JSON-stat 'dimension' must be an object", file=file)
    N = math.prod(size)
    if N == 0:
        raise FormatError("JSON-stat dataset has no cells (a dimension of size 0)", file=file)
    if N > MAX_JSONSTAT_CELLS:
        raise FormatError(
            f"JSON-stat cube of {N:.3g} cells ({' x '.join(map(str, size))}) is larger than the "
            f"{MAX_JSONSTAT_CELLS:.0e} cells this reader turns into table rows; filter the query",
            file=file,
        )
    return ids, size, N


def _jsonstat_categories(dimension: dict, k: str, n: int, file: str) -> np.ndarray:
    """The category codes of dimension ``k`` in cube order (its index: a list, or an object
    of positions; a single labelled category without an index), checked against its size."""
    try:
        idx = dimension[k]["category"]["index"]
    except (KeyError, TypeError):
        lab = _get(_get(_get(dimension, k), "category"), "label")
        if not (isinstance(lab, dict) and len(lab) == 1):
            raise FormatError(f"JSON-stat dimension {k!r} has no category index", file=file) from None
        idx = {next(iter(lab)): 0}
    if isinstance(idx, list):
        order = [str(c) for c in idx]
    elif isinstance(idx, dict):
        order = [None] * len(idx)
        for c, p in idx.items():
            if not isinstance(p, int) or not 0 <= p < len(idx) or order[p] is not None:
                raise FormatError(f"JSON-stat dimension {k!r}: bad category index {p!r} for {c!r}", file=file)
            order[p] = str(c)
    else:
        raise FormatError(f"JSON-stat dimension {k!r}: category index must be a list or an object", file=file)
    if len(order) != n:
        raise FormatError(f"JSON-stat dimension {k!r} has {len(order)} categories but size {n}", file=file)
    return np.array(order, dtype=object)


def _jsonstat_cells(obj, name: str, default, N: int, file: str) -> np.ndarray:
    """Dense object array of length N from a list, a sparse dict or a scalar (status)."""
    out = np.full(N, default, dtype=object)
    if obj is None:
        return out
    if isinstance(obj, list):
        if len(obj) != N:
            raise FormatError(f"JSON-stat '{name}' list has {len(obj)} entries, the cube has {N} cells", file=file)
        out[:] = [default if v is None else v for v in obj]
        return out
    if isinstance(obj, dict):
        try:
            pos = np.fromiter((int(p) for p in obj.keys()), dtype=np.int64, count=len(obj))
        except (ValueError, OverflowError):
            raise FormatError(f"JSON-stat '{name}' has a non-integer position", file=file) from None
        if len(pos) and (pos.min() < 0 or pos.max() >= N):
            bad = int(pos[(pos < 0) | (pos >= N)][0])
            raise FormatError(f"JSON-stat '{name}' position {bad} outside the cube of {N} cells", file=file)
        out[pos] = [default if v is None else v for v in obj.values()]
        return out
    if name == "status" and isinstance(obj, str):
        out[:] = obj
        return out
    raise FormatError(f"JSON-stat '{name}' must be a list or an object", file=file)


def jsonstat_to_frame(d: dict, *, file: str = "<json-stat>", dataset: str | None = None) -> pd.DataFrame:
    """Tidy table from a parsed JSON-stat 2.0 dataset (see :func:`read_jsonstat`)."""
    if not isinstance(d, dict) or d.get("class", "dataset") != "dataset":
        raise FormatError("not a JSON-stat 2.0 dataset (class must be 'dataset')", file=file)
    ids, size, N = _jsonstat_shape(d, file)
    codes = [_jsonstat_categories(d["dimension"], k, n, file) for k, n in zip(ids, size, strict=True)]
    low = [k.lower() for k in ids]
    if "time" not in low:
        raise FormatError("JSON-stat dataset has no 'time' dimension", file=file)
    raw_val = _jsonstat_cells(d["value"], "value", None, N, file)
    status = _jsonstat_cells(d.get("status"), "status", "", N, file)
    grid = np.unravel_index(np.arange(N), size) if N else [np.array([], int)] * len(size)
    df = pd.DataFrame({lk: codes[j][grid[j]] for j, lk in enumerate(low)})
    df.index = pd.Index(np.arange(N), name="position")
    isnum = np.array([isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw_val])
    isnone = np.array([v is None for v in raw_val])
    bad_num = ~(isnum | isnone)
    val = np.full(N, np.nan)
    val[isnum] = np.array([_as_float(v) for v in raw_val[isnum]], dtype=float)
    flag = pd.Series([str(s).strip() for s in status], index=df.index, dtype=object)
    flag = flag.where(flag != ":", "")
    bad_flag = _bad_flags(flag.to_numpy(dtype=object))
    df["value"], df["flag"] = val, flag.to_numpy(dtype=object)
    _raise_bad_cells(
        df, pd.Series(np.where(bad_flag, status, raw_val), index=df.index), bad_num, bad_flag, low, Path(file)
    )
    ext = d.get("extension") or {}
    ds = (
        dataset
        or (str(ext["id"]).lower() if isinstance(ext, dict) and ext.get("id") else None)
        or _guess_dataset(Path(file))
    )
    extracted = str(d.get("updated") or "unknown")
    return _finish(
        df,
        low,
        path=Path(file),
        fmt="json",
        dataset=ds,
        extracted=extracted,
        line_label="position",
        label=d.get("label", ""),
    )


# -------------------------------------------------------------------------- long CSV
def read_long_csv(path: str | Path, *, dataset: str | None = None) -> pd.DataFrame:
    """Read a long CSV extract (one value per row) into a tidy table.

    Recognised layouts: ``values,freq,unit,sex,age,geo,time`` and
    ``freq,unit,sex,age,geo,values,year``; more generally any comma-separated table
    with a ``values`` (or ``value``) column, a ``time`` (or ``year``) column, a ``geo``
    column, optional ``flag``/``flags`` and lower-case dimension columns. Empty cells,
    ``:`` and ``NA`` are missing values.
    """
    path = Path(path)
    return _parse_long(_read_text(path), path, dataset)


def _parse_long(text: str, path: Path, dataset: str | None) -> pd.DataFrame:
    df = _csv_frame(text, path)
    cols = [c.strip() for c in df.columns]
    df.columns = cols
    vcol = "values" if "values" in cols else "value" if "value" in cols else None
    tcol = "time" if "time" in cols else "year" if "year" in cols else None
    fcol = "flags" if "flags" in cols else "flag" if "flag" in cols else None
    if vcol is None or tcol is None or "geo" not in cols:
        raise FormatError(
            f"long CSV header needs 'values', 'geo' and 'time' (or 'year') columns, got {cols}", file=str(path), line=1
        )
    dims = [c for c in cols if c not in (vcol, tcol, fcol)]
    bad = [c for c in dims if not re.match(r"^[a-z][a-z0-9_]*$", c)]
    if bad or len(set(cols)) != len(cols):
        raise FormatError(f"unexpected column(s) in long CSV header: {bad or cols}", file=str(path), line=1)
    if len(df) == 0:
        raise FormatError("long CSV file has a header but no data", file=str(path), line=1)
    out = pd.DataFrame({c: df[c].str.strip().to_numpy() for c in dims}, index=df.index)
    out["time"] = df[tcol].str.strip().to_numpy()
    raw = df[vcol]
    val, _, bad_num, _ = _parse_values(raw, allow_flags=False)
    flag = df[fcol].str.strip() if fcol else pd.Series("", index=df.index)
    bad_flag = _bad_flags(flag.to_numpy(dtype=object))
    out["value"], out["flag"] = val, flag.to_numpy(dtype=object)
    _raise_bad_cells(
        out, pd.Series(np.where(bad_flag, flag, raw), index=df.index), bad_num, bad_flag, dims + ["time"], path
    )
    return _finish(
        out, dims + ["time"], path=path, fmt="long", dataset=dataset or _guess_dataset(path), extracted="unknown"
    )


# ---------------------------------------------------------------------------- sniffer
_PARSERS = {"tsv": _parse_tsv, "sdmx": _parse_sdmx, "json": _parse_json, "long": _parse_long}


def read_eurostat(path: str | Path, format: str | None = None, *, dataset: str | None = None) -> pd.DataFrame:
    """Read any supported Eurostat file into a tidy table (see the module docstring).

    Parameters
    ----------
    path : str or Path
        File, gzipped or not.
    format : {"tsv", "sdmx", "json", "long"}, optional
        Skip sniffing and use this reader.
    dataset : str, optional
        Eurostat dataset code to record in ``df.attrs["dataset"]`` (overrides what the
        file says or its name suggests).

    Returns
    -------
    pandas.DataFrame
        ``geo, [sex, age,] time, value, flag`` and the other dimensions.

    Raises
    ------
    FormatError
        Unrecognised or malformed file (see the individual readers).
    """
    path = Path(path)
    if format is not None and format not in _PARSERS:
        raise ParameterError(f"unknown Eurostat format {format!r}; choose one of {', '.join(FORMATS)}")
    text = _read_text(path)
    if format is None:
        format = _sniff_text(text, path)
    return _PARSERS[format](text, path, dataset)
