"""Text plumbing shared by the readers: gunzip, decode, delimited text with true line numbers."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.counts import control_characters
from demonoise.core.errors import FormatError

__all__ = ["read_bytes", "read_text", "csv_frame", "parse_json", "check_codes"]


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
        why = " ".join(str(e).split())  # pandas ends its message with a newline: one line
        raise FormatError(f"malformed delimited text ({why})", file=str(path), line=line) from e
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


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str | bytes, file) -> object:
    """Parsed JSON, or a one-line :class:`FormatError` naming ``file``.

    Besides malformed or truncated text this refuses what :func:`json.loads` would
    otherwise raise as something else or accept silently: nesting deep enough to
    exhaust the recursion limit (``RecursionError``), integers of more than 4300 digits,
    and the non-standard constants ``NaN`` and ``Infinity``.
    """
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise FormatError(
            f"invalid or truncated JSON ({e.msg}, column {e.colno})", file=str(file), line=e.lineno
        ) from None
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text (byte {e.start})", file=str(file)) from None
    except RecursionError:
        raise FormatError(
            "JSON nested too deeply to read (arrays or objects inside each other)", file=str(file)
        ) from None
    except ValueError as e:  # too many digits, NaN or Infinity
        raise FormatError(f"invalid JSON value ({e})", file=str(file)) from None


def check_codes(df: pd.DataFrame, columns, file) -> None:
    """Refuse control and invisible characters (NUL, tab, zero-width space, ...) in code
    columns: such a code would make a second, phantom region, sex or age that prints
    like the real one. Works on the distinct values of each column; the error names
    the file, the line (the frame's ``line`` index) and the column."""
    for col in columns:
        if col not in df.columns:
            continue
        codes, uniq = pd.factorize(df[col].to_numpy(dtype=object), use_na_sentinel=False)
        bad = [i for i, u in enumerate(uniq) if control_characters(str(u))]
        if not bad:
            continue
        row = int(np.flatnonzero(codes == bad[0])[0])
        value = str(uniq[bad[0]])
        raise FormatError(
            f"control character {control_characters(value)} in {col} code '{value.encode('unicode_escape').decode()}'",
            file=str(file),
            line=int(df.index[row]) if df.index.name == "line" else None,
        )
