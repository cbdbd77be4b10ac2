"""How a run ends when it is told to: Ctrl-C, SIGTERM, SIGHUP -- and a second one.

:func:`interruptible` (the command line wraps every command in it):

* the first SIGINT, SIGTERM or SIGHUP raises :class:`KeyboardInterrupt` in the main
  thread, so that the ordinary clean-up runs: atomic writes remove their temporary files
  (:mod:`demonoise.core.atomic`), running tasks are cancelled and a local cluster and its
  kernels are closed (:mod:`demonoise.core.cluster`); the command then prints one line and
  exits 130;
* a second one while that clean-up runs ends the process at once (``os._exit(130)``):
  nothing is half-written (the first signal already unwound the writers), and no child
  is left, because every child watches its parent -- Dask's worker processes exit when
  their nanny's pipe closes, Jupyter kernels when their parent process is gone.

SIGKILL cannot be caught; it is covered by the same watching of the parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["interruptible", "Interrupted", "SIGNALS"]

#: Signals that interrupt a run.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A run ended by a signal (``signum``): clean-up runs as after Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interruptible(message: str = "interrupted") -> Iterator[None]:
    """Within the block, the signals of :data:`SIGNALS` raise :class:`Interrupted`; a
    second one writes ``message`` (if the first has not been reported yet) and exits 130
    at once. Outside the main thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = {"count": 0}

    def handler(signum, frame):
        state["count"] += 1
        if state["count"] > 1:
            with contextlib.suppress(Exception):
                sys.stderr.write(f"{message}\n")
                sys.stderr.flush()
            os._exit(130)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        if not state["count"]:  # an interrupted process keeps exiting at once on the next signal
            for s, h in previous.items():
                signal.signal(s, h)
