"""Python's cyclic garbage collector, run less often while one large task builds its objects.

CPython collects its youngest generation every 700 net allocations of container objects
and, after ten of those, the next; a *full* collection (generation 2) follows whenever the
objects that survived since the last one exceed a quarter of all long-lived objects. A task
that builds a large graph of objects it keeps to the end keeps meeting that condition, and
every full collection walks the whole heap, the worker's own modules and data included.
Measured with :data:`gc.callbacks` when the PDFs were laid out by WeasyPrint (France's
55-page report: 6.7 s of garbage collection in 29.3 s of layout; with :data:`TASK_THRESHOLDS`
0.8 s). The PDF is now typeset by Typst, outside Python's heap; the compute task
(``report.batch.compute_task``) still runs under these thresholds.

:func:`fewer_collections` sets those thresholds for the duration of one task and restores
the previous ones afterwards; objects left in reference cycles are collected later, at the
next collection under the ordinary thresholds. Reference counting, which frees almost every
object, is not affected. See the :mod:`gc` module's documentation ("set_threshold") and the
CPython developer guide's chapter on the garbage collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TASK_THRESHOLDS", "fewer_collections"]

#: Thresholds during a task: a young collection every 100 000 net allocations (not 700),
#: the middle generation after 50 of those, the full one after 1 000 of the middle's --
#: in effect none during one report.
TASK_THRESHOLDS = (100_000, 50, 1_000)


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] = TASK_THRESHOLDS) -> Iterator[None]:
    """Run the enclosed block with the garbage collector's thresholds raised to ``thresholds``
    (:func:`gc.set_threshold`); the previous thresholds are restored on leaving it, whether
    the block returns or raises. A collector switched off (:func:`gc.disable`) stays off.

    Examples
    --------
    >>> import gc
    >>> before = gc.get_threshold()
    >>> with fewer_collections():
    ...     gc.get_threshold()
    (100000, 50, 1000)
    >>> gc.get_threshold() == before
    True
    """
    previous = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
