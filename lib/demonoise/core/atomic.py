"""Atomic file writes: write to a temporary file in the target directory, then
``os.replace`` it over the target.

``os.replace`` is atomic on POSIX when source and target are on the same file system,
which a sibling temporary file guarantees. A reader therefore sees either the old file
or the complete new one, never a half-written file; after a failure or Ctrl-C only the
temporary file can remain, and :func:`atomic_path` removes it.

Permissions: ``tempfile.mkstemp`` creates files with mode ``0600``; the result gets
``0666 & ~umask``, the mode ``open()`` would have given it. The process umask is read
once, when this module is imported (from ``/proc/self/status`` where the kernel
provides it, otherwise by setting and restoring it at that moment), and never changed
afterwards: ``os.umask`` can only be read by setting it, and setting it while other
threads create files (the report batch renders in threads) would give their files
the wrong mode. A program that changes its umask after importing demonoise should set
:data:`UMASK` too.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text", "TMP_MARK", "UMASK"]

#: Every temporary file written here has this in its name (``.<name>.dn-tmp-XXXX``).
TMP_MARK = ".dn-tmp-"


def _process_umask() -> int:
    """The process umask, read without changing it where the kernel allows
    (``Umask:`` in ``/proc/self/status``, Linux >= 4.7); otherwise set and restored once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The umask at import; written files get mode ``0o666 & ~UMASK``.
UMASK: int = _process_umask()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; move it over ``target`` on success.

    The caller writes the complete file to the yielded path (by any means: a library
    call, a subprocess). If the block raises -- including ``KeyboardInterrupt`` -- the
    temporary file is removed and ``target`` is left untouched.

    Parameters
    ----------
    target : path-like
        Final location. Its directory is created if missing.

    Yields
    ------
    pathlib.Path
        Temporary path in the same directory, with the same suffix as ``target``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}{TMP_MARK}", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if not tmp_path.exists():
            raise FileNotFoundError(f"nothing was written to the temporary file for {target}")
        # mkstemp creates files 0600; give the result the mode open() would give it.
        os.chmod(tmp_path, 0o666 & ~UMASK)
        os.replace(tmp_path, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def atomic_write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``target`` atomically (see :func:`atomic_path`)."""
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(target)


def atomic_write_text(target: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``target`` atomically (see :func:`atomic_path`)."""
    return atomic_write_bytes(target, text.encode(encoding))
