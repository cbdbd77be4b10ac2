"""Text plumbing shared by the readers: gunzip, decode, delimited text with true line numbers."""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.errors import FormatError

__all__ = ["read_bytes", "read_text", "csv_frame"]


def read_bytes(path: Path) -> bytes:
    """File content, gunzipped if it starts with the gzip magic bytes."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise FormatError(f"cannot read file: {e.strerror or e}", file=str(path)) from e
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as e:
            raise FormatError(f"truncated or corrupt gzip file ({type(e).__name__}: {e})", file=str(path)) from e
    return raw


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text (byte {e.start})", file=str(path)) from e


def csv_frame(text: str, path: Path, *, sep: str = ",", comments: bool = False) -> pd.DataFrame:
    """Parse delimited text as strings; the index is the 1-based file line of each row.

    Blank lines (and, with ``comments``, lines starting with ``#``) are skipped but
    counted, so the index stays the true line number.
    """
    lines = text.splitlines()
    keep = [i for i, line in enumerate(lines) if line.strip() and not (comments and line.lstrip().startswith("#"))]
    if not keep:
        raise FormatError("empty file", file=str(path))
    body = "\n".join(lines[i] for i in keep)
    try:
        df = pd.read_csv(
            io.StringIO(body),
            sep=sep,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skipinitialspace=False,
            engine="c",
        )
    except pd.errors.ParserError as e:
        m = re.search(r"line (\d+)", str(e))
        line = keep[int(m[1]) - 1] + 1 if m and int(m[1]) - 1 < len(keep) else None
        raise FormatError(f"malformed delimited text ({e})", file=str(path), line=line) from e
    df.index = pd.Index(np.array(keep[1:], dtype=np.int64) + 1, name="line")
    # pandas pads short rows silently: count the fields of every row
    n = np.fromiter(
        (len(r) for r in csv.reader((lines[i] for i in keep[1:]), delimiter=sep)), dtype=np.int64, count=len(keep) - 1
    )
    short = n < df.shape[1]
    if short.any():
        i = int(np.flatnonzero(short)[0])
        raise FormatError(
            f"expected {df.shape[1]} fields, found {int(n[i])} (truncated line?)",
            file=str(path),
            line=int(df.index[i]),
            key=lines[int(df.index[i]) - 1][:80],
        )
    return df
