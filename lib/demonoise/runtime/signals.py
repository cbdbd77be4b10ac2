"""How a run ends when it is told to: Ctrl-C, SIGTERM, SIGHUP -- and a second one.

:func:`interruptible` (the command line wraps every command in it):

* the first SIGINT, SIGTERM or SIGHUP raises :class:`KeyboardInterrupt` in the main
  thread, so that the ordinary clean-up runs: atomic writes remove their temporary files
  (:mod:`demonoise.core.atomic`), running tasks are cancelled and a local cluster and its
  kernels are closed (:mod:`demonoise.runtime.cluster`); :func:`interruptible` writes one
  line and the command exits 130;
* a second one while that clean-up runs ends the process at once (``os._exit(130)``):
  nothing is half-written (the first signal already unwound the writers), and no child
  is left, because every child watches its parent -- the local Dask workers' process
  kills its process group when its parent is gone (:func:`demonoise.runtime.cluster.serve_workers`),
  Jupyter kernels exit when their parent process is gone (ipykernel's parent poller).

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
    """Within the block, the signals of :data:`SIGNALS` raise :class:`Interrupted`; when
    the block ends by an interrupt (Ctrl-C included) ``message`` is written to stderr, one
    line (`` (SIGTERM)`` appended for another signal than SIGINT), and the exception goes
    on. From the first signal on, a further one exits at once with status 130, writing
    the line first if it has not been written yet. Outside the main thread this does
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = {"count": 0, "written": False}

    def write(signum: int) -> None:
        if not state["written"]:
            state["written"] = True
            name = "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"
            with contextlib.suppress(Exception):
                sys.stderr.write(f"{message}{name}\n")
                sys.stderr.flush()

    def handler(signum, frame):
        state["count"] += 1
        if state["count"] > 1:
            write(state["first"])
            os._exit(130)
        state["first"] = signum
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    except KeyboardInterrupt as e:
        state["count"] = max(state["count"], 1)
        state.setdefault("first", getattr(e, "signum", signal.SIGINT))
        write(state["first"])
        raise
    finally:
        if not state["count"]:  # an interrupted process keeps exiting at once on the next signal
            for s, h in previous.items():
                signal.signal(s, h)
