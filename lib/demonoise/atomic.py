"""Atomic file writes: a file appears complete or not at all.

Everything demonoise writes (results tables, caches, reports) goes through
:func:`atomic_path`: the content is written to a temporary file in the target's
directory and moved into place with :func:`os.replace` only when the writer
finished without error. A failure or an interrupt leaves no half-written output.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text"]


@contextlib.contextmanager
def atomic_path(target, suffix: str | None = None):
    """Yield a temporary path next to ``target``; move it onto ``target`` on success.

    Examples
    --------
    >>> with atomic_path("out/results.parquet") as tmp:   # doctest: +SKIP
    ...     df.to_parquet(tmp)
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix if suffix is not None else target.suffix + ".part", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_bytes(target, data: bytes) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return Path(target)


def atomic_write_text(target, text: str, encoding: str = "utf-8") -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(target)
