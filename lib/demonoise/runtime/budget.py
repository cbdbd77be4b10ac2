"""What a run may take -- time and processes -- and how far it has got, told on stderr.

A Monte Carlo is sized before it runs, from the seconds per replicate of a probe, and
refused in one line above :data:`MAX_SECONDS` unless the caller said ``yes`` (never a
prompt: a command runs under CI too); while it runs, a tqdm bar on a terminal, else a line
every :data:`EVERY` seconds. A local cluster gets at most the workers the machine's memory
holds (:func:`local_workers`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable

from demonoise.core.errors import ParameterError

__all__ = [
    "MAX_SECONDS",
    "EVERY",
    "PROBE",
    "WORKER_BYTES",
    "duration",
    "say",
    "check_budget",
    "probe_seconds",
    "MonteCarloProgress",
    "Ticker",
    "processes",
    "local_workers",
]

#: Estimated Monte Carlo wall time run without ``yes`` (30 minutes, as a report batch).
MAX_SECONDS = 1800.0
#: Seconds between two progress lines on a stderr that is not a terminal.
EVERY = 5.0
#: Replicates of a probe (one block of the Monte Carlo engine).
PROBE = 250
#: Memory a local worker process is counted for: Python with demonoise, numpy and numba
#: loaded (about 100 MB; 64 workers peaked at 5.4 GB) and a Monte Carlo block's working
#: memory (:data:`demonoise.uncertainty.montecarlo.FUSED_MEMORY`, 150 MB).
WORKER_BYTES = 2.5e8


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.2 h``, ``41 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def say(prefix: str, text: str) -> None:
    with contextlib.suppress(OSError):  # a closed stderr loses the progress, not the run
        print(f"{prefix}: {text}", file=sys.stderr, flush=True)


def check_budget(estimate: float, size: str, where: str, yes: bool) -> None:
    """Refuse a Monte Carlo of ``size`` estimated above :data:`MAX_SECONDS` unless ``yes``.

    Raises
    ------
    ParameterError
        One line: the size, the estimate (``where``: on how many processes) and ``--yes``.
    """
    if yes or estimate <= MAX_SECONDS:
        return
    raise ParameterError(
        f"the Monte Carlo is large: {size}, estimated {duration(estimate)} {where}, above the limit of "
        f"{duration(MAX_SECONDS)}: pass --yes to run it, or lower --mc (a check needs 10^3 to 10^5)"
    )


def probe_seconds(run: Callable[[int], object], n: int = PROBE) -> float:
    """Seconds per replicate of ``run(mc)``: ``run(n)`` timed against ``run(0)``."""
    t0 = time.perf_counter()
    run(0)
    t1 = time.perf_counter()
    run(n)
    return max(time.perf_counter() - t1 - (t1 - t0), 0.0) / n


class MonteCarloProgress:
    """The Monte Carlo runs of a command (one per noise setting), their budget and progress.

    Before each run :func:`demonoise.uncertainty.montecarlo.monte_carlo` calls :meth:`start`
    with the seconds per replicate of its probe block; the runs left are estimated at
    ``runs left x n x seconds / processes`` and checked (:func:`check_budget`). Then it
    calls the object with the replicates done (``demonoise compute: Monte Carlo 1 of 2
    (generic V=1): 4200 of 10000 replicates, 12 s, about 17 s left``)."""

    def __init__(self, prefix: str, names: list[str], regions: int, processes: int, yes: bool):
        self.prefix, self.names, self.regions = prefix, names, regions
        self.processes, self.yes = max(1, processes), yes
        self.run, self.n, self.t0, self.last, self.bar, self.first = 0, 0, 0.0, 0.0, None, None

    def start(self, n: int, seconds: float | None) -> None:
        self._close_bar()
        self.run, self.n = self.run + 1, n
        left = len(self.names) - self.run + 1
        estimate = None if seconds is None else seconds * n / self.processes
        on = f"on {self.processes} process(es)"
        if estimate is not None:
            size = f"{left} noise setting(s) x {n} replicates over {self.regions} regions"
            check_budget(estimate * left, size, on, self.yes)
        self.t0 = self.last = time.monotonic()
        self.first = None
        about = "" if estimate is None else f", estimated {duration(estimate)} {on}"
        self._line(f"{n} replicates over {self.regions} regions{about}")
        if sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=n, desc="Monte Carlo", unit="rep", file=sys.stderr, leave=False)

    def __call__(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
            if done >= self.n:
                self._close_bar()
            return
        now = time.monotonic()
        if self.first is None:  # the rate is measured from the first block on (a cluster may start first)
            self.first = (now, done)
        if now - self.last < EVERY and done < self.n:
            return
        self.last, (t1, d1), left = now, self.first, ""
        if d1 < done < self.n:
            left = f", about {duration((self.n - done) * (now - t1) / (done - d1))} left"
        self._line(f"{done} of {self.n} replicates, {duration(now - self.t0)}{left}")

    def _line(self, text: str) -> None:
        if self.bar is None:
            say(self.prefix, f"Monte Carlo {self.run} of {len(self.names)} ({self.names[self.run - 1]}): {text}")

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Ticker:
    """Progress of ``n`` replicates: a line every :data:`EVERY` seconds, on a terminal or
    not (``demonoise change: Monte Carlo 4250 of 10000 replicates, 6 s``)."""

    def __init__(self, prefix: str, n: int):
        self.prefix, self.n, self.t0 = prefix, n, time.monotonic()
        self.last = self.t0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= EVERY:
            self.last = now
            say(self.prefix, f"Monte Carlo {done} of {self.n} replicates, {duration(now - self.t0)}")


def processes(cluster) -> int:
    """Processes the Monte Carlo blocks run on: the cluster's workers, or 1."""
    if not cluster.fans_out:
        return 1
    if cluster.address is None:
        return cluster.workers
    return max(1, len(cluster.client().scheduler_info().get("workers", {})))


def local_workers(n: int, prefix: str) -> int:
    """``n`` workers of a local cluster: a warning above the machine's cores (the workers
    share them: slower, not faster), and at most what the available memory holds at
    :data:`WORKER_BYTES` each (said in one line)."""
    from demonoise.runtime.resources import available_memory, format_bytes

    cores = os.cpu_count() or 1
    if n > cores:
        say(
            prefix,
            f"warning: --workers {n} is more than the {cores} cores of this machine: the workers share them, "
            f"which makes the run slower, not faster (use at most {cores})",
        )
    avail = available_memory()
    fit = n if avail is None else max(1, int(avail[0] // WORKER_BYTES))
    if n > fit:
        say(
            prefix,
            f"--workers {n} lowered to {fit}: {format_bytes(avail[0])} of memory is {avail[1]}, and a worker is "
            f"counted for {format_bytes(WORKER_BYTES)}",
        )
    return min(n, fit)
