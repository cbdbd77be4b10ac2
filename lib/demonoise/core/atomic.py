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

Output paths (:func:`output_target`, :func:`check_output_file`, :func:`check_output_dir`):

* a **symlink** at the output path is written *through*: its target is replaced
  atomically and the link stays. Whoever made the link chose where the data go (an
  ``output`` link into a shared directory); replacing the link by an ordinary file
  would silently break that arrangement. A dangling link creates its target.
* a **directory, device** (``/dev/full``, ``/dev/null``), FIFO or socket at the
  output path is refused: an atomic write would replace it by an ordinary file.
* the output location is checked **before any work** by creating (and removing) a
  probe file in the directory, or in its nearest existing ancestor when the directory
  does not exist yet (``os.access`` is not enough: it says yes to root on a read-only
  file system).

Each problem is an :class:`~demonoise.core.errors.OutputError` naming the path the user
gave (never the temporary file), so the command line exits 2 with one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from demonoise.core.errors import OutputError

__all__ = [
    "atomic_dir",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "output_target",
    "check_output_file",
    "check_output_dir",
    "TMP_MARK",
    "UMASK",
]

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


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)
#: Errors of a write that say the location cannot take the file (not a bug of the caller).
_WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.ENOENT}
)


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def output_target(target: str | os.PathLike) -> Path:
    """The regular file a write to ``target`` replaces: symlinks followed to their target.

    Raises
    ------
    OutputError
        ``target`` is under ``/dev`` or ``/proc``, or it (or what its symlinks point to)
        is a directory, a device, a FIFO or a socket, or the links loop.
    """
    shown = Path(target)
    top = Path(os.path.abspath(shown)).parts[1:3]
    if top[:1] in (("dev",), ("proc",)) and top != ("dev", "shm"):  # /dev/stdout, /proc/self/fd/1: not files
        raise OutputError(
            f"output {shown} is a device or process file under /{top[0]}: give the path of a file to write"
        )
    real = Path(os.path.realpath(shown))
    via = f" (a symlink to {real})" if shown.is_symlink() else ""
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as e:
        raise OutputError(f"cannot write {shown}{via}: {_reason(e)}") from None
    if stat.S_ISREG(st.st_mode):
        return real
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
    raise OutputError(
        f"output {shown}{via} is {kind}, not a regular file: give the path of a file to write "
        "(an atomic write would replace it by an ordinary file)"
    )


def _probe(directory: Path, shown: Path) -> None:
    """Create and remove a file in ``directory`` or its nearest existing ancestor."""
    d = Path(os.path.abspath(directory))
    while not d.exists() and d != d.parent:
        d = d.parent
    if not d.is_dir():
        raise OutputError(f"cannot write {shown}: {d} is not a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".probe{TMP_MARK}", dir=d)
    except OSError as e:
        raise OutputError(f"cannot write {shown}: directory {d} is not writable ({_reason(e)})") from None
    os.close(fd)
    os.unlink(tmp)


def check_output_file(path: str | os.PathLike) -> Path:
    """Check, before any work, that a file can be written at ``path`` (see the module
    notes: symlinks followed, non-regular files refused, the directory probed).

    Returns
    -------
    pathlib.Path
        ``path`` as given.

    Raises
    ------
    OutputError
        One line naming ``path`` and why it cannot be written.
    """
    shown = Path(path)
    _probe(output_target(shown).parent, shown)
    return shown


def check_output_dir(path: str | os.PathLike) -> Path:
    """Check, before any work, that files can be written in directory ``path`` (created
    on writing when missing).

    Raises
    ------
    OutputError
        ``path`` exists and is not a directory, or neither it nor its nearest existing
        ancestor is writable.
    """
    shown = Path(path)
    if shown.exists() and not shown.is_dir():
        raise OutputError(f"output directory {shown} exists and is not a directory")
    _probe(shown, shown)
    return shown


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; move it over ``target`` on success.

    The caller writes the complete file to the yielded path (by any means: a library
    call, a subprocess). If the block raises -- including ``KeyboardInterrupt`` -- the
    temporary file is removed and ``target`` is left untouched.

    A symlink at ``target`` is written through (its target is replaced); a directory,
    device, FIFO or socket there is refused (:func:`output_target`).

    Parameters
    ----------
    target : path-like
        Final location. Its directory is created if missing.

    Yields
    ------
    pathlib.Path
        Temporary path in the same directory, with the same suffix as ``target``.

    Raises
    ------
    OutputError
        The location cannot take the file (refused path, unwritable directory, full
        disk while writing), naming ``target`` as given.
    """
    shown = Path(target)
    target = output_target(shown)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}{TMP_MARK}", suffix=target.suffix, dir=target.parent)
    except OSError as e:
        raise OutputError(f"cannot write {shown}: {_reason(e)}") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        try:
            yield tmp_path
        except OSError as e:
            if e.errno not in _WRITE_ERRNOS or e.filename not in (None, str(tmp_path)):
                raise
            raise OutputError(f"cannot write {shown}: {_reason(e)}") from None
        if not tmp_path.exists():
            raise FileNotFoundError(f"nothing was written to the temporary file for {shown}")
        try:
            # mkstemp creates files 0600; give the result the mode open() would give it.
            os.chmod(tmp_path, 0o666 & ~UMASK)
            os.replace(tmp_path, target)
        except OSError as e:
            raise OutputError(f"cannot write {shown}: {_reason(e)}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``target``; it replaces ``target`` (a directory
    of files written as one) on success, and is removed if the block raises -- including
    ``KeyboardInterrupt`` -- leaving ``target`` untouched.

    Raises
    ------
    OutputError
        The parent directory cannot take it, naming ``target`` as given.
    """
    import shutil

    shown = Path(target)
    try:
        shown.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{shown.name}{TMP_MARK}", dir=shown.parent))
    except OSError as e:
        raise OutputError(f"cannot write {shown}: {_reason(e)}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~UMASK)  # mkdtemp makes it 0700: the mode mkdir would give
        if shown.is_dir() and not shown.is_symlink():
            shutil.rmtree(shown)
        tmp.rename(shown)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
