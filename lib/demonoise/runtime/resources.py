"""Memory this process may still use: the smallest of what the machine, its control group
and the process's own address-space limit leave.

Three bounds, each read where Linux publishes it (none needs a library):

* the machine: ``MemAvailable`` of ``/proc/meminfo`` (the kernel's estimate of memory
  available without swapping);
* a container: ``memory.max - memory.current`` of the cgroup v2 the process is in;
* the process: its soft ``RLIMIT_AS`` (:mod:`resource`) minus its current virtual size
  (``VmSize`` of ``/proc/self/status``) -- with such a limit an allocation beyond it fails
  however much memory the machine has.

A bound that cannot be read (another system, no cgroup v2) is left out; with none,
:func:`available_memory` returns ``None`` and callers do not refuse.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["available_memory", "format_bytes"]


def _meminfo_kb(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _machine() -> tuple[float, str] | None:
    kb = _meminfo_kb(Path("/proc/meminfo"), "MemAvailable")
    return None if kb is None else (kb * 1024.0, "available on the machine")


def _cgroup() -> tuple[float, str] | None:
    try:
        rel = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
        d = Path("/sys/fs/cgroup") / rel.strip().lstrip("/")
        limit = (d / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return float(limit) - float((d / "memory.current").read_text()), "left by the container's memory limit"
    except (OSError, ValueError, StopIteration):
        return None


def _address_space() -> tuple[float, str] | None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    kb = _meminfo_kb(Path(f"/proc/{os.getpid()}/status"), "VmSize")
    used = 0.0 if kb is None else kb * 1024.0
    return max(0.0, soft - used), "left by the process's address-space limit (ulimit -v)"


def available_memory() -> tuple[float, str] | None:
    """``(bytes, which bound)`` of the smallest bound above, or ``None`` if none is known."""
    bounds = [b for b in (_machine(), _cgroup(), _address_space()) if b is not None]
    return min(bounds) if bounds else None


def format_bytes(n: float) -> str:
    """``1.2 GB``, ``340 MB``, ``12 kB`` (decimal units)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
