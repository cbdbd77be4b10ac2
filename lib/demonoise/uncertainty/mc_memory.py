"""The memory a Monte Carlo run will need, estimated before it starts, and refused when the
process cannot have it.

A run of ``N`` replicates in blocks of ``B`` holds, at its peak:

* **stored replicate values** (for the quantiles): ``N x cells x components`` values of 8
  bytes (4 when stored as float32) per indicator whose values are kept;
* **bookkeeping of the blocks**: ``ceil(N / B)`` blocks, each with its random stream (a
  :class:`numpy.random.SeedSequence`), its job and, on a worker pool, its future:
  :data:`BLOCK_BYTES` each (measured with :mod:`tracemalloc`: 440 bytes of seed sequence and
  job, 1 600 of future);
* **working memory of the blocks in flight**: the block memory limit per worker;
* **the noise law** on every worker and here: :data:`LAW_BYTES_PER_POINT` bytes per
  support point (support, probabilities, CDF, alias table; 1.8e7 points at V = 10^12).

:func:`check_memory` compares the sum with :func:`demonoise.runtime.resources.available_memory`
and refuses, in one line naming ``N`` and the regions, a run that does not fit -- instead
of growing until the system kills it (``--mc 1000000000`` grew by 70 MB/s).
"""

from __future__ import annotations

import math

from demonoise.core.errors import ParameterError
from demonoise.runtime.resources import available_memory, format_bytes

__all__ = ["BLOCK_BYTES", "LAW_BYTES_PER_POINT", "estimate_memory", "check_memory"]

#: Bytes held per block of replicates (seed sequence, job, future), rounded up.
BLOCK_BYTES = 2500
#: Bytes per support point of a noise law (int64 support, float64 probabilities and CDF,
#: alias probabilities, values and interleaved pairs), rounded up.
LAW_BYTES_PER_POINT = 56


def estimate_memory(
    *, n: int, block: int, kept: dict, workers: int, working: float, law_points: int
) -> dict[str, float]:
    """Bytes by part (module notes): ``stored``, ``blocks``, ``working``, ``law``.

    ``kept``: ``{indicator: (values per replicate, bytes per value)}`` for the indicators
    whose replicate values are stored (values per replicate: cells x components).
    """
    return {
        "stored": sum(float(n) * v * b for v, b in kept.values()),
        "blocks": math.ceil(n / max(1, block)) * float(BLOCK_BYTES),
        "working": float(workers) * working,
        "law": float(law_points) * LAW_BYTES_PER_POINT * (workers + 1),
    }


def check_memory(parts: dict[str, float], *, n: int, regions: int, available=None) -> None:
    """Refuse a Monte Carlo whose estimated memory exceeds what is available.

    Parameters
    ----------
    parts : dict
        From :func:`estimate_memory`.
    n, regions : int
        Replicates and regions (named in the message).
    available : (float, str), optional
        ``(bytes, which bound)``; default :func:`demonoise.runtime.resources.available_memory`.

    Raises
    ------
    ParameterError
        ``Monte Carlo of N = ... replicates over 12 regions needs about 10.1 GB (...)
        but 2.0 GB is left by the process's address-space limit ...``.
    """
    avail = available_memory() if available is None else available
    need = sum(parts.values())
    if avail is None or need <= avail[0]:
        return
    detail = ", ".join(
        f"{label} {format_bytes(parts[k])}"
        for k, label in (
            ("stored", "stored replicate values"),
            ("blocks", "bookkeeping of the blocks"),
            ("working", "block working memory"),
            ("law", "noise laws"),
        )
        if parts.get(k)
    )
    raise ParameterError(
        f"Monte Carlo of N = {n} replicates over {regions} regions needs about {format_bytes(need)} of memory "
        f"({detail}) but {format_bytes(avail[0])} is {avail[1]}: lower the replicates (--mc; a check needs "
        "10^3 to 10^5) or the regions"
    )
