"""Perturbation-table (p-table) files: read, write, and the embedded Eurostat tables.

Two file formats are understood, both as plain text or gzipped (detected from the
content, not the name):

``eurostat``
    Eurostat's census cell-key format ``"pcv";"ckey";"pvalue"`` (2021 census test
    tables). For an original count ``n > 0`` the row class is ``pcv = min(n, max pcv)``;
    the cell key ``ckey`` runs over ``1..K`` (uniformly); ``pvalue`` is the noise added.
    Zero counts are not perturbed and have no rows.

``transition``
    The transition-matrix layout of the R package ptable (``create_cnt_ptable()@pTable``,
    also what ``pt_export`` writes for tau-Argus / SAS): columns
    ``i, j, p, v, p_int_lb, p_int_ub, type`` -- original count ``i`` (the last ``i``
    stands for every larger count), perturbed count ``j``, probability ``p``, noise
    ``v = j - i`` and the cumulative interval ``[p_int_lb, p_int_ub)`` of cell keys
    that select this noise. ``p_int_lb`` and ``type`` are optional (the tau-Argus export
    has ``i;j;p;v;p_int_ub``); ``type`` must be ``all`` (count tables). Separator
    ``,``, ``;`` or blanks, with a header line.

This module is I/O only: it parses and validates files into plain arrays
(:class:`PTableData`) and writes arrays back. The :class:`demonoise.noise.ptable.PTable` type
(computation layer) is built from them, so this layer never imports upwards.

Errors name the file and line (:class:`demonoise.core.errors.FormatError`).
"""

# ruff: noqa: E741 -- I is the p-table's largest count class, as Eurostat and the R package ptable name it
from __future__ import annotations

import gzip
import io
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np

from demonoise.core.counts import MAX_EXACT
from demonoise.core.errors import FormatError, ParameterError

__all__ = [
    "PTableData",
    "EMBEDDED_PTABLES",
    "embedded_ptable_path",
    "sniff_ptable_format",
    "read_ptable_file",
    "read_eurostat_ptable",
    "read_transition_ptable",
    "write_eurostat_ptable",
    "write_transition_ptable",
]

#: Embedded Eurostat census test p-tables (EUPL), in ``demonoise/data/ptables``.
#: ``D`` is the maximum deviation; ``V`` the nominal variance (Eurostat's label for
#: the large-count rows); ``note`` what the rows for small counts do.
EMBEDDED_PTABLES: dict[str, dict] = {
    "v01": dict(
        file="eurostat_census_ptable_v01.csv.gz",
        D=3,
        V=1.0,
        js=0,
        note="variance 1 for every count, unbiased, K = 100000 keys",
    ),
    "v03": dict(
        file="eurostat_census_ptable_v03.csv",
        D=1,
        V=0.5,
        js=0,
        note="variance ~0.5 for n >= 2; biased for n = 1; K = 1000 keys",
    ),
    "v04": dict(
        file="eurostat_census_ptable_v04.csv",
        D=2,
        V=1.0,
        js=0,
        note="variance ~1 for n >= 3; biased for n = 1, 2; K = 1000 keys",
    ),
}


@dataclass(frozen=True, eq=False)
class PTableData:
    """A p-table as parsed from a file: flat arrays, one entry per (i, v).

    Attributes
    ----------
    i, v : ndarray of int64
        Original count class and noise of every entry, sorted by ``i`` then ``v``.
        ``i`` runs over ``0..I`` (row 0 is the identity: zeros stay zero).
    p : ndarray of float64
        Probability of each entry (for the Eurostat format, key frequency / K).
    key_table : ndarray of int64 or None
        Eurostat format only: ``key_table[i, c - 1]`` is the noise for class ``i`` and
        cell key ``c`` (row 0 all zeros), shape ``(I + 1, K)``.
    fmt : {"eurostat", "transition"}
    source : str
        The file path (or ``"embedded:<name>"``).
    """

    i: np.ndarray
    v: np.ndarray
    p: np.ndarray
    fmt: Literal["eurostat", "transition"]
    source: str = ""
    key_table: np.ndarray | None = None
    meta: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- helpers
def _read_text(path: str | Path) -> str:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise FormatError(f"cannot read p-table file: {e.strerror or e}", file=str(path)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise FormatError(f"corrupt gzip stream: {e}", file=str(path)) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text: {e}", file=str(path)) from None


def _split_header(line: str) -> tuple[str | None, list[str]]:
    """Delimiter and unquoted lower-case column names of a header line."""
    for sep in (";", ",", "\t"):
        if sep in line:
            return sep, [c.strip().strip('"').strip("'").lower() for c in line.split(sep)]
    return None, [c.strip('"').strip("'").lower() for c in line.split()]


def _lines(text: str) -> list[str]:
    return text.splitlines()


def sniff_ptable_format(path: str | Path) -> Literal["eurostat", "transition"]:
    """Tell the format of a p-table file from its header line.

    Raises
    ------
    FormatError
        If the header is neither ``pcv;ckey;pvalue`` nor contains ``i, j, p, v``.
    """
    text = _read_text(path)
    first = next((ln for ln in _lines(text) if ln.strip()), "")
    _, cols = _split_header(first)
    if {"pcv", "ckey", "pvalue"} <= set(cols):
        return "eurostat"
    if {"i", "j", "p", "v"} <= set(cols):
        return "transition"
    raise FormatError(
        f"unrecognised p-table header {first.strip()!r} (expected pcv;ckey;pvalue or i,j,p,v,...)",
        file=str(path),
        line=1,
    )


def _parse_columns(
    text: str,
    path: str,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    numeric: tuple[str, ...] | None = None,
) -> dict[str, np.ndarray]:
    """Split a delimited text table into named columns (numeric ones as float); check the header.

    A fast path parses clean files with pandas; any irregularity falls back to a
    line-by-line parse that reports the offending line.
    """
    fast = _parse_columns_fast(text, required, optional, numeric)
    if fast is not None:
        return fast
    lines = _lines(text)
    # keep physical line numbers for error messages
    rows = [(n + 1, ln) for n, ln in enumerate(lines) if ln.strip()]
    if not rows:
        raise FormatError("empty p-table file", file=path)
    hline, header = rows[0]
    sep, cols = _split_header(header)
    missing = [c for c in required if c not in cols]
    if missing:
        raise FormatError(f"p-table header lacks column(s) {missing}: {header.strip()!r}", file=path, line=hline)
    if len(set(cols)) != len(cols):
        raise FormatError(f"duplicated column in header {header.strip()!r}", file=path, line=hline)
    body = rows[1:]
    if not body:
        raise FormatError("p-table file has a header but no rows", file=path, line=hline)
    ncol = len(cols)
    fields: list[list[str]] = []
    for lineno, ln in body:
        parts = ln.split(sep) if sep else ln.split()
        if len(parts) != ncol:
            raise FormatError(f"expected {ncol} fields, found {len(parts)}", file=path, line=lineno)
        fields.append([x.strip().strip('"') for x in parts])
    arr = np.array(fields, dtype=object)
    linenos = np.array([n for n, _ in body])
    out: dict[str, np.ndarray] = {"_line": linenos}
    for c in required + optional:
        if c in cols:
            out[c] = arr[:, cols.index(c)]
    for c in required if numeric is None else numeric:
        if c in out:
            out[c] = _numeric_column(out[c], c, path, linenos)
    return out


def _numeric_column(values: np.ndarray, c: str, path: str, linenos: np.ndarray) -> np.ndarray:
    """A text column as float; a non-numeric, missing or infinite value is a
    :class:`FormatError` naming the column and the line."""
    try:
        out = values.astype(np.float64)
    except ValueError:
        for k, s in enumerate(values):
            try:
                float(s)
            except ValueError:
                raise FormatError(f"non-numeric value {s!r} in column {c}", file=path, line=int(linenos[k])) from None
        raise
    bad = ~np.isfinite(out)
    if bad.any():
        k = int(np.argmax(bad))
        raise FormatError(f"missing or infinite value in column {c}", file=path, line=int(linenos[k]))
    return out


def _parse_columns_fast(text: str, required, optional, numeric) -> dict[str, np.ndarray] | None:
    import pandas as pd

    text = text.rstrip("\r\n")
    if re.search(r"\n[ \t\r]*(\n|$)", text) or not text.strip():
        return None  # blank lines: let the slow path keep the physical line numbers
    lines = text.split("\n", 1)
    n_rows = text.count("\n")
    sep, cols = _split_header(lines[0])
    if any(c not in cols for c in required) or len(set(cols)) != len(cols) or n_rows < 1:
        return None
    numeric = required if numeric is None else numeric
    dtypes = {c: (np.float64 if c in numeric else str) for c in cols}
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep if sep else r"\s+",
            header=0,
            names=cols,
            dtype=dtypes,
            quotechar='"',
            engine="c" if sep else "python",
            skipinitialspace=True,
        )
    except (ValueError, TypeError, pd.errors.ParserError):
        return None  # e.g. a non-numeric value: the slow path names its line
    if len(df) != n_rows or df.isna().any().any():
        return None
    out: dict[str, np.ndarray] = {"_line": np.arange(2, len(df) + 2)}
    for c in required + optional:
        if c not in df:
            continue
        if c in numeric:
            arr = df[c].to_numpy(dtype=np.float64)
            if not np.all(np.isfinite(arr)):
                return None
            out[c] = arr
        else:
            out[c] = df[c].str.strip().to_numpy(dtype=object)
    return out


def _as_int(col: np.ndarray, name: str, path: str, lines: np.ndarray) -> np.ndarray:
    frac = col != np.round(col)
    if frac.any():
        k = int(np.argmax(frac))
        raise FormatError(f"column {name} must hold integers, found {col[k]!r}", file=path, line=int(lines[k]))
    big = np.abs(col) > MAX_EXACT  # checked before the cast, which would wrap around
    if big.any():
        k = int(np.argmax(big))
        raise FormatError(
            f"column {name}: {col[k]:g} is beyond 2^53, the range of exactly held integers",
            file=path,
            line=int(lines[k]),
        )
    return np.round(col).astype(np.int64)


# ----------------------------------------------------------------------------- readers
def read_eurostat_ptable(path: str | Path, *, source: str | None = None) -> PTableData:
    """Read a p-table in Eurostat's census format ``pcv;ckey;pvalue``.

    Checks that ``pcv`` runs over ``1..I`` without gaps, that every ``pcv`` has the
    cell keys ``1..K`` exactly once (the same ``K`` for all), that noises are integers
    and that no perturbed count ``pcv + pvalue`` is negative.

    Returns
    -------
    PTableData
        With ``key_table`` (noise per class and cell key) and the key frequencies as
        probabilities, ``p(i, v) = #{c : key_table[i, c] = v} / K``.
    """
    spath = str(path)
    cols = _parse_columns(_read_text(path), spath, ("pcv", "ckey", "pvalue"))
    lines = cols["_line"]
    pcv = _as_int(cols["pcv"], "pcv", spath, lines)
    ckey = _as_int(cols["ckey"], "ckey", spath, lines)
    pv = _as_int(cols["pvalue"], "pvalue", spath, lines)
    if (pcv < 1).any():
        k = int(np.argmax(pcv < 1))
        raise FormatError(
            f"pcv must be >= 1 (zero counts are not perturbed), found {pcv[k]}", file=spath, line=int(lines[k])
        )
    if (ckey < 1).any():
        k = int(np.argmax(ckey < 1))
        raise FormatError(f"ckey must be >= 1, found {ckey[k]}", file=spath, line=int(lines[k]))
    neg = pcv + pv < 0
    if neg.any():
        k = int(np.argmax(neg))
        raise FormatError(
            f"noise {pv[k]} would make count {pcv[k]} negative",
            file=spath,
            line=int(lines[k]),
            key=f"pcv={pcv[k]}, ckey={ckey[k]}",
        )
    I = int(pcv.max())
    present = np.unique(pcv)
    if len(present) != I:
        gap = sorted(set(range(1, I + 1)) - set(present.tolist()))[0]
        raise FormatError(f"pcv classes must run over 1..{I} without gaps; class {gap} is missing", file=spath)
    K = int(ckey.max())
    # duplicates: same (pcv, ckey) twice
    flat = pcv.astype(np.int64) * (K + 1) + ckey
    order = np.argsort(flat, kind="stable")
    dup = np.flatnonzero(np.diff(flat[order]) == 0)
    if len(dup):
        k = int(order[dup[0] + 1])
        raise FormatError("duplicated (pcv, ckey)", file=spath, line=int(lines[k]), key=f"pcv={pcv[k]}, ckey={ckey[k]}")
    if len(pcv) != I * K:
        # a missing key (no duplicates, so some class has fewer than K keys): found without
        # allocating the (I + 1) x K table, which a stray huge ckey would make enormous
        for r in range(1, I + 1):
            keys = np.sort(ckey[pcv == r])
            if keys.size < K:
                gap = np.flatnonzero(keys != np.arange(1, keys.size + 1))
                c = int(gap[0]) + 1 if gap.size else keys.size + 1
                raise FormatError(
                    f"pcv {r} lacks cell key {c} (every class needs keys 1..{K})", file=spath, key=f"pcv={r}, ckey={c}"
                )
    table = np.empty((I + 1, K), dtype=np.int64)  # every (pcv, ckey) is present exactly once (checked above)
    table[pcv, ckey - 1] = pv
    table[0, :] = 0
    ii, vv, pp = _key_table_to_entries(table)
    return PTableData(i=ii, v=vv, p=pp, fmt="eurostat", source=source or spath, key_table=table, meta={"K": K})


def _key_table_to_entries(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries (i, v, p) from a key table: p = key frequency / K."""
    K = table.shape[1]
    ii, vv, pp = [], [], []
    for r in range(table.shape[0]):
        vals, cnt = np.unique(table[r], return_counts=True)
        ii.append(np.full(len(vals), r, dtype=np.int64))
        vv.append(vals.astype(np.int64))
        pp.append(cnt / K)
    return np.concatenate(ii), np.concatenate(vv), np.concatenate(pp)


def read_transition_ptable(path: str | Path, *, source: str | None = None, sum_tol: float = 1e-6) -> PTableData:
    """Read a p-table in the transition-matrix layout of the R package ptable.

    Columns ``i, j, p, v`` are required; ``p_int_lb, p_int_ub, type`` optional. Checks:
    integer ``i, j, v`` with ``v = j - i`` and ``j >= 0``; ``0 <= p <= 1``; per ``i`` the
    probabilities sum to 1 within ``sum_tol`` (the package rounds cumulative bounds
    to 8 decimals); no duplicated ``(i, j)``; ``i`` runs over ``0..I`` (a missing row
    ``i = 0`` is taken as the identity); when present, the bounds agree with the
    cumulative sums of ``p`` within ``sum_tol``; ``type`` is ``all``.
    """
    spath = str(path)
    cols = _parse_columns(
        _read_text(path),
        spath,
        ("i", "j", "p", "v"),
        ("p_int_lb", "p_int_ub", "type"),
        numeric=("i", "j", "p", "v", "p_int_lb", "p_int_ub"),
    )
    lines = cols["_line"]
    i = _as_int(cols["i"], "i", spath, lines)
    j = _as_int(cols["j"], "j", spath, lines)
    v = _as_int(cols["v"], "v", spath, lines)
    p = cols["p"]
    if "type" in cols:
        bad = np.array([str(t).lower() != "all" for t in cols["type"]])
        if bad.any():
            k = int(np.argmax(bad))
            raise FormatError(
                f"only count p-tables (type 'all') are supported, found type {cols['type'][k]!r}",
                file=spath,
                line=int(lines[k]),
            )
    for _column, cond, msg in (
        ("i", i < 0, "original count i must be >= 0"),
        ("j", j < 0, "perturbed count j must be >= 0"),
        ("v", v != j - i, "noise v must equal j - i"),
        ("p", (p < 0) | (p > 1), "probability p must lie in [0, 1]"),
    ):
        if cond.any():
            k = int(np.argmax(cond))
            raise FormatError(f"{msg} (i={i[k]}, j={j[k]}, v={v[k]}, p={p[k]})", file=spath, line=int(lines[k]))
    ub = cols.get("p_int_ub")
    lb = cols.get("p_int_lb")
    order = np.lexsort((j, i))
    i, j, v, p, lines = i[order], j[order], v[order], p[order], lines[order]
    ub = None if ub is None else ub[order]
    lb = None if lb is None else lb[order]
    dup = np.flatnonzero((np.diff(i) == 0) & (np.diff(j) == 0))
    if len(dup):
        k = dup[0] + 1
        raise FormatError("duplicated (i, j)", file=spath, line=int(lines[k]), key=f"i={i[k]}, j={j[k]}")
    if i[0] != 0:  # no row for zeros: zeros stay zero
        i, j, v = (np.r_[0, a] for a in (i, j, v))
        p, lines = np.r_[1.0, p], np.r_[0, lines]
        ub = None if ub is None else np.r_[1.0, ub]
        lb = None if lb is None else np.r_[0.0, lb]
    I = int(i.max())
    missing = sorted(set(range(I + 1)) - set(np.unique(i).tolist()))
    if missing:
        raise FormatError(f"original counts must run over 0..{I} without gaps; i = {missing[0]} is missing", file=spath)
    starts = np.flatnonzero(np.r_[True, np.diff(i) != 0])
    ends = np.r_[starts[1:], len(i)]
    sums = np.add.reduceat(p, starts)
    bad = np.abs(sums - 1.0) > sum_tol
    if bad.any():
        r = int(np.argmax(bad))
        raise FormatError(
            f"probabilities for i = {i[starts[r]]} sum to {sums[r]!r}, not 1",
            file=spath,
            line=int(lines[starts[r]]),
            key=f"i={i[starts[r]]}",
        )
    if ub is not None:
        cum = np.concatenate([np.cumsum(p[s:e]) for s, e in zip(starts, ends, strict=True)])
        bad = np.abs(ub - cum) > sum_tol
        if bad.any():
            k = int(np.argmax(bad))
            raise FormatError(
                f"p_int_ub {ub[k]!r} disagrees with the cumulative probability {cum[k]!r}",
                file=spath,
                line=int(lines[k]),
                key=f"i={i[k]}, j={j[k]}",
            )
        if lb is not None:
            bad = np.abs(ub - lb - p) > sum_tol
            if bad.any():
                k = int(np.argmax(bad))
                raise FormatError(
                    "p_int_ub - p_int_lb differs from p", file=spath, line=int(lines[k]), key=f"i={i[k]}, j={j[k]}"
                )
    return PTableData(i=i, v=v, p=p.astype(np.float64), fmt="transition", source=source or spath)


def read_ptable_file(path: str | Path, fmt: Literal["eurostat", "transition"] | None = None) -> PTableData:
    """Read a p-table file in either format (``fmt=None``: detect from the header)."""
    fmt = fmt or sniff_ptable_format(path)
    if fmt == "eurostat":
        return read_eurostat_ptable(path)
    if fmt == "transition":
        return read_transition_ptable(path)
    raise ParameterError(f"unknown p-table format {fmt!r} (use 'eurostat' or 'transition')")


def embedded_ptable_path(name: str) -> Path:
    """Path of an embedded Eurostat test p-table (``"v01"``, ``"v03"``, ``"v04"``)."""
    key = str(name).lower().removeprefix("eurostat_").removeprefix("census_")
    if key not in EMBEDDED_PTABLES:
        raise ParameterError(f"unknown embedded p-table {name!r}; available: {', '.join(EMBEDDED_PTABLES)}")
    ref = resources.files("demonoise").joinpath("data", "ptables", EMBEDDED_PTABLES[key]["file"])
    return Path(str(ref))


# ----------------------------------------------------------------------------- writers
def _write_text(path: Path, text: str) -> None:
    """``text`` as UTF-8 into ``path``, gzipped if it ends in ``.gz`` with neither a file name
    nor a time in the gzip header (a table gives the same bytes whatever the file is called)."""
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def write_eurostat_ptable(path: str | Path, key_table: np.ndarray) -> Path:
    """Write a key table (``(I + 1, K)``, row 0 ignored) as ``"pcv";"ckey";"pvalue"``.

    Gzipped if ``path`` ends in ``.gz``. Returns the path.
    """
    path = Path(path)
    t = np.asarray(key_table)
    if t.ndim != 2 or t.shape[0] < 2:
        raise ParameterError("key_table must be 2-D with at least the rows for counts 0 and 1")
    I, K = t.shape[0] - 1, t.shape[1]
    pcv = np.repeat(np.arange(1, I + 1), K)
    ck = np.tile(np.arange(1, K + 1), I)
    body = "\n".join(f"{a};{b};{c}" for a, b, c in zip(pcv.tolist(), ck.tolist(), t[1:].ravel().tolist(), strict=True))
    _write_text(path, f'"pcv";"ckey";"pvalue"\n{body}\n')
    return path


def write_transition_ptable(path: str | Path, i: np.ndarray, v: np.ndarray, p: np.ndarray, *, ndigits: int = 8) -> Path:
    """Write entries ``(i, v, p)`` in the R ptable layout ``i,j,p,v,p_int_lb,p_int_ub,type``.

    The cumulative bounds are rounded to ``ndigits`` decimals as the package does;
    ``p`` is written with full precision (shortest round-trip repr). Entries must be
    sorted by ``i`` then ``v``. Gzipped if ``path`` ends in ``.gz``.
    """
    path = Path(path)
    i, v, p = (np.asarray(a) for a in (i, v, p))
    starts = np.flatnonzero(np.r_[True, np.diff(i) != 0])
    ends = np.r_[starts[1:], len(i)]
    ub = np.concatenate([np.cumsum(p[s:e]) for s, e in zip(starts, ends, strict=True)])
    lb = ub - p
    ub, lb = np.round(ub, ndigits), np.round(lb, ndigits)
    rows = ["i,j,p,v,p_int_lb,p_int_ub,type"]
    for a, vv, pp, lo, up in zip(i.tolist(), v.tolist(), p.tolist(), lb.tolist(), ub.tolist(), strict=True):
        rows.append(f"{a},{a + vv},{pp!r},{vv},{lo!r},{up!r},all")
    _write_text(path, "\n".join(rows) + "\n")
    return path
