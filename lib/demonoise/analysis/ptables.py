"""P-tables by name or file: the application layer resolves them, the noise layer only
ever sees :class:`~demonoise.noise.ptable.PTable` objects.

``resolve_ptable("v01")`` loads one of Eurostat's embedded census test tables;
``resolve_ptable("my_table.csv")`` reads a file in Eurostat's ``pcv;ckey;pvalue`` format or
the R package ptable's transition layout (:mod:`demonoise.io.ptable_files`);
``write_ptable`` writes a table back in either format.

A table is read once per process: an embedded one by name, a file by its path, size and
modification time (a :class:`PTable` is immutable, its arrays read-only, so the same
object serves every caller -- a country's compute task resolves its p-table four times).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from demonoise.core.errors import ParameterError
from demonoise.io import ptable_files as _files
from demonoise.noise.models import PTableNoise
from demonoise.noise.ptable import PTable

__all__ = ["read_ptable", "load_ptable", "write_ptable", "resolve_ptable", "embedded_ptable_names"]


def embedded_ptable_names() -> tuple[str, ...]:
    """Names of the embedded Eurostat census test tables (``v01``, ``v03``, ``v04``)."""
    return tuple(_files.EMBEDDED_PTABLES)


def read_ptable(
    path: str | Path,
    fmt: Literal["eurostat", "transition"] | None = None,
    *,
    D: int | None = None,
    V: float | None = None,
    js: int = 0,
    label: str = "",
) -> PTable:
    """Read a p-table file (Eurostat ``pcv;ckey;pvalue`` or R ptable's transition layout).

    The format is detected from the header unless ``fmt`` is given. Construction
    parameters are not stored in either format; pass them to label the table.
    """
    data = _files.read_ptable_file(path, fmt)
    return PTable.from_data(data, D=D, V=V, js=js, label=label)


def load_ptable(name: str) -> PTable:
    """One of the embedded Eurostat census test tables: ``"v01"``, ``"v03"`` or ``"v04"``."""
    _files.embedded_ptable_path(name)  # an unknown name: its error
    return _embedded(str(name).lower().removeprefix("eurostat_").removeprefix("census_"))


@functools.lru_cache(maxsize=8)
def _embedded(key: str) -> PTable:
    path = _files.embedded_ptable_path(key)
    meta = _files.EMBEDDED_PTABLES[key]
    data = _files.read_eurostat_ptable(path, source=f"Eurostat census test p-table {key} (EUPL)")
    return PTable.from_data(data, D=meta["D"], V=meta["V"], js=meta["js"], label=f"ptable {key}")


def resolve_ptable(ptable) -> PTable:
    """A :class:`PTable` from a table, a :class:`PTableNoise`, an embedded name or a file path."""
    if isinstance(ptable, PTableNoise):
        return ptable.table
    if isinstance(ptable, PTable):
        return ptable
    if isinstance(ptable, (str, Path)):
        if Path(ptable).exists():
            st = Path(ptable).stat()
            return _file_table(str(ptable), str(Path(ptable).resolve()), st.st_mtime_ns, st.st_size)
        if Path(ptable).suffix or "/" in str(ptable):
            names = ", ".join(embedded_ptable_names())
            raise ParameterError(f"p-table file {ptable} does not exist (embedded tables: {names})")
        return load_ptable(str(ptable))
    raise ParameterError(
        f"ptable must be a PTable, a PTableNoise, an embedded name (v01, v03, v04) or a file, got {ptable!r}"
    )


@functools.lru_cache(maxsize=8)
def _file_table(path: str, resolved: str, mtime_ns: int, size: int) -> PTable:
    """A p-table file as named, read again when it is another file or its size or
    modification time changes."""
    return read_ptable(path, label=f"ptable {Path(path).name}")


def write_ptable(
    table: PTable,
    path: str | Path,
    fmt: Literal["transition", "eurostat"] = "transition",
    *,
    K: int | None = None,
    ndigits: int = 8,
) -> Path:
    """Write the table: R ptable layout (``fmt="transition"``) or Eurostat's ``pcv;ckey;pvalue``.

    The Eurostat format needs integer cell keys: a key table is written as is,
    other tables are quantised to ``K`` keys (default 100000) by
    :meth:`PTable.to_key_table`. Gzipped if the path ends in ``.gz``.
    """
    if fmt == "transition":
        return _files.write_transition_ptable(path, table.i, table.v, table.p, ndigits=ndigits)
    if fmt == "eurostat":
        keys = (
            table.key_table
            if (table.key_table is not None and K in (None, table.n_keys))
            else table.to_key_table(100_000 if K is None else K)
        )
        return _files.write_eurostat_ptable(path, keys)
    raise ParameterError(f"unknown p-table format {fmt!r} (use 'transition' or 'eurostat')")
