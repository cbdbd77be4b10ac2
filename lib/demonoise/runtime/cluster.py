"""Where the work that fans out runs: a Dask cluster (``distributed``), local by default.

What fans out -- the Monte Carlo blocks, the notebook executions and the rendering of a
report batch -- is a list of independent tasks, each a picklable function of small
picklable arguments that returns its result (partial sums, an executed notebook's
bytes, a rendered document's bytes); nothing a task does depends on the process or the
machine it runs in. :class:`Cluster` runs such lists:

* ``Cluster("tcp://host:8786")`` -- on an existing Dask cluster (a ``dask scheduler`` and
  its ``dask worker`` processes, or one started by dask-jobqueue on Slurm or by
  dask-kubernetes). On connecting, the client checks that every worker runs the same
  demonoise (version and source fingerprint,
  :func:`demonoise.runtime.fingerprint.source_fingerprint`) and refuses a mismatch in one
  line; an address where no Dask scheduler answers (nothing listening, a silent listener,
  an HTTP server, another protocol) fails within 10 s naming the address and what
  answered (:func:`probe`: :data:`PROBE_TIMEOUT` s and one more for an answer to a line
  of text; then :data:`CONNECT_TIMEOUT` s and one more to connect); a scheduler lost mid-run is
  :class:`ClusterLost`. The cluster is not ours: an interrupted run cancels its own tasks
  (its caller ends what they left on the workers, e.g. the report's kernels, with
  :meth:`Cluster.on_workers`) and leaves the scheduler and workers up.
* ``Cluster(workers=N)`` -- a local cluster, started on the first task only (an analytic
  run starts nothing): the scheduler in this process (:class:`distributed.LocalCluster`
  without workers) and one ``dask worker`` process of ours (:func:`serve_workers`) with
  ``N`` worker processes of one thread, each under its nanny. It ends with this process
  whatever ends it:

  - normal exit, an error, Ctrl-C, SIGTERM, SIGHUP (:mod:`demonoise.runtime.signals`):
    :meth:`Cluster.close` -- after an interrupt the tasks are cancelled and the workers'
    process group killed at once (their results are not wanted), so that stopping takes
    about a second;
  - SIGKILL, which cannot be caught: the workers' process watches its parent (a thread
    checking ``getppid()`` every :data:`WATCH` s) and kills its own process group --
    nannies and worker processes; each Jupyter kernel a worker started exits when its
    parent worker is gone (ipykernel's parent poller: kernels are launched with
    ``JPY_PARENT_PID`` and checked every second).

  The workers' process has a session of its own, so a terminal's Ctrl-C (sent to its
  whole foreground process group) reaches this process only, which cancels and prints
  one line -- no worker dies half-way with a traceback of its own. Their temporary files
  (and their kernels' connection files) live in one directory of ours
  (:func:`scratch_dir`), removed at close; one left by a process that was killed is
  removed by the next run.
* ``workers=1`` without an address: no cluster at all; the callers run their tasks in
  this process, one after the other (same results).

Results do not depend on where tasks run: the Monte Carlo seeds its blocks by
``SeedSequence.spawn`` and sums them in block order; a notebook task's output is the
notebook. A task whose worker is lost is run again on another worker by the scheduler
(up to ``distributed.scheduler.allowed-failures`` times, default 3; then it fails with
``KilledWorker``, which callers report by the task's name).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from demonoise.core.errors import DemonoiseError, ParameterError

__all__ = [
    "Cluster",
    "ClusterError",
    "ClusterLost",
    "check_address",
    "default_workers",
    "probe",
    "scratch_dir",
    "using",
]

#: Seconds to reach a scheduler before giving up (an unreachable address fails within 10 s).
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for the first worker of an external scheduler that has none yet.
WORKER_WAIT = 20.0
#: Seconds allowed to the cancel hooks and to closing the client and a local cluster.
CLOSE_TIMEOUT = 3.0
_SCHEMES = ("tcp", "tls", "ws", "wss")
#: Seconds for the local workers to start.
LOCAL_START = 90.0
#: Tasks of one fan-out in flight per worker (the next is submitted as one completes).
WINDOW_PER_WORKER = 4
#: Seconds between two checks of the local workers' process that its parent is alive.
WATCH = 0.5
_LOGGERS = ("distributed", "tornado", "asyncio", "bokeh")
#: Dask settings of the local workers (their own process; an external cluster keeps its own):
#:
#: * no ``MALLOC_TRIM_THRESHOLD_`` (the nanny sets 65536 by default, to give memory back to
#:   the system sooner): an explicit trim threshold also fixes glibc's mmap threshold at
#:   128 kB, so that every larger array -- most of pandas' and numpy's -- is a fresh mmap
#:   and its pages faulted in again; the compute tasks took 1.5-2 times their time in one
#:   process (LU 3.3 s instead of 1.8 s, France 11-13 s instead of 7), and the kernels and
#:   renderings the workers start inherit the variable. Our tasks are short and their
#:   memory is returned when they end;
#: * no statistical profiler (a stack sample of every thread each 10 ms, for a dashboard
#:   we do not start).
LOCAL_WORKER_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
}
_SILENT = logging.CRITICAL + 1


class ClusterError(DemonoiseError):
    """The cluster cannot be used (unreachable, no workers, workers of another version)."""


class ClusterLost(ClusterError):
    """The scheduler was lost while the run used it (the command exits 1, not 2)."""


def default_workers() -> int:
    """Local worker processes by default: ``min(2, cpu count)``."""
    return min(2, os.cpu_count() or 1)


def check_address(address: str) -> str:
    """A scheduler address as Dask spells it, ``tcp://HOST:PORT`` (``HOST:PORT`` alone
    means tcp); anything else is refused in one line naming the address.

    Raises
    ------
    ParameterError
        Not a string, an unknown scheme, no host, or a port that is not 1..65535.
    """
    text = str(address).strip()
    if not text:
        raise ParameterError(f"scheduler address {address!r} is empty; expected tcp://HOST:PORT")
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    where = f"scheduler address {address!r}"
    if scheme not in _SCHEMES:
        raise ParameterError(f"{where}: unknown scheme {scheme!r}; expected tcp://HOST:PORT")
    host, colon, port = rest.rpartition(":")
    if not colon or not host or "/" in rest:
        raise ParameterError(f"{where}: expected {scheme}://HOST:PORT")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ParameterError(f"{where}: port {port!r} is not a number in 1..65535")
    return f"{scheme}://{host}:{int(port)}"


def _quiet_logs() -> None:
    """Dask's own logging (connection errors while closing, shutdown tracebacks) stays off
    the terminal: what matters is reported by the caller in one line. ``distributed``
    configures its loggers when first imported (``distributed`` at INFO), so it is
    imported first: silenced before that, a worker's closed connection was logged on the
    terminal of an interrupted command whenever it came after the local cluster had
    restored its handlers' levels (about one interrupt in ten)."""
    import distributed  # noqa: F401 -- configures its loggers on import; silenced after

    # and their children that Dask's configuration gives a level of their own
    # (``distributed.client``: a lost scheduler's reconnection traceback)
    known = list(logging.root.manager.loggerDict)
    for name in [*_LOGGERS, *(n for n in known if n.startswith(tuple(f"{p}." for p in _LOGGERS)))]:
        logging.getLogger(name).setLevel(_SILENT)
    # a task carries its input tables as bytes on purpose (a remote worker has no copy of
    # this machine's files): distributed's advice to load them "with Dask directly" does
    # not apply, and its warning would reach the terminal
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)


#: Seconds a scheduler has to send its greeting before the address is refused.
PROBE_TIMEOUT = 3.0


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Refuse, in one line naming ``address``, a ``tcp://`` address where no Dask scheduler
    answers: nothing listening, a listener that stays silent (a Dask server greets first:
    a message of a few frames, its first 8 bytes the frame count, little-endian) even to
    a line of text (an HTTP server answers that), or one that sends something else (a
    banner). Other schemes (encrypted) are left to Dask's own connection.

    Raises
    ------
    ClusterError
        Naming the address and what answered.
    """
    scheme, _, rest = address.partition("://")
    if scheme != "tcp":
        return
    host, _, port = rest.rpartition(":")
    where = f"scheduler {address}"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            head, said = _read_some(sock, timeout), b""
            if not head:  # silent: what does it say to a line of text?
                with contextlib.suppress(OSError):
                    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                said = _read_some(sock, 1.0, 24)
    except OSError as e:
        raise ClusterError(f"{where} is not reachable (no answer within {timeout:g} s): {_first_line(e)}") from None
    if said:
        raise ClusterError(f"{where}: something answers there but is not a Dask scheduler (it sent {said!r})")
    if not head:
        raise ClusterError(f"{where}: something listens there but is not a Dask scheduler (silent for {timeout:g} s)")
    frames = int.from_bytes(head.ljust(8, b"\0"), "little")
    if len(head) < 8 or not 1 <= frames <= 64:
        raise ClusterError(f"{where}: something answers there but is not a Dask scheduler (it sent {head!r})")


def _read_some(sock: socket.socket, timeout: float, n: int = 8) -> bytes:
    """Up to ``n`` bytes received within ``timeout`` s (fewer if the peer stops or closes)."""
    sock.settimeout(timeout)
    head = b""
    with contextlib.suppress(OSError):
        while len(head) < n and (chunk := sock.recv(n - len(head))):
            head += chunk
    return head


def scratch_dir(kind: str) -> Path:
    """A new temporary directory ``demonoise-<kind>-<pid>-<random>`` of this process; first
    the ones of the same kind left by processes that no longer run (killed: SIGKILL leaves
    them) are removed."""
    root = Path(tempfile.gettempdir())
    for old in root.glob(f"demonoise-{kind}-*"):
        pid = old.name.removeprefix(f"demonoise-{kind}-").partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"demonoise-{kind}-{os.getpid()}-", dir=root))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _identity() -> str:
    """What a worker runs (called on every worker by :meth:`Cluster.client`)."""
    from demonoise.runtime.fingerprint import source_fingerprint

    return source_fingerprint()


class Cluster:
    """A Dask cluster to run tasks on: an existing one (``address``) or a local one of
    ``workers`` processes started on first use (module notes).

    Parameters
    ----------
    address : str, optional
        Scheduler address, e.g. ``tcp://10.0.0.5:8786`` (:func:`check_address`).
    workers : int, optional
        Size of the local cluster (default :func:`default_workers`); ignored with an
        address. ``1``: no cluster (:attr:`fans_out` is false).
    """

    def __init__(self, address: str | None = None, *, workers: int | None = None):
        self.address = check_address(address) if address is not None else None
        self.workers = int(workers or default_workers())
        if self.workers < 1:
            raise ParameterError(f"workers must be >= 1, got {workers}")
        #: Identifies this run's tasks on the cluster (what they leave there is ended by it).
        self.run_id = uuid.uuid4().hex[:12]
        self._client = None
        self._local = None
        self._lock = threading.Lock()
        self._interrupted = False
        self._tmp: str | None = None
        self._workers_proc: subprocess.Popen | None = None

    # ------------------------------------------------------------------ state
    @property
    def local(self) -> bool:
        return self.address is None

    @property
    def fans_out(self) -> bool:
        """Whether tasks go to worker processes (else callers run them in this process)."""
        return self.address is not None or self.workers > 1

    @property
    def started(self) -> bool:
        return self._client is not None

    def fan_out_for(self, n: int) -> bool:
        """Whether ``n`` tasks go to the cluster: it fans out, and it is external or started
        already or there is more than one task (a local cluster is not started for one)."""
        return self.fans_out and n > 0 and (n > 1 or self.started or not self.local)

    def describe(self) -> str:
        if self.address:
            return f"Dask cluster at {self.address}"
        return f"local Dask cluster of {self.workers} worker processes" if self.fans_out else "this process"

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            self._interrupted = True
        self.close()

    def __getstate__(self):  # a Cluster stays in its process; tasks get plain arguments
        raise TypeError("a Cluster is not sent to workers")

    # ------------------------------------------------------------------ connecting
    def client(self):
        """The Dask client, connecting (or starting the local cluster) on first call.

        Raises
        ------
        ClusterError
            The scheduler is unreachable, has no workers, or a worker runs another demonoise.
        """
        with self._lock:
            if self._client is None:
                _quiet_logs()
                self._client = self._connect() if self.address else self._start_local()
                try:
                    self._check_workers(self._client)
                except BaseException:
                    self._close_now()
                    raise
            return self._client

    def _connect(self):
        """Probe the address (:func:`probe`), then connect, the whole within
        :data:`CONNECT_TIMEOUT` s more (Dask's own timeout does not bound every way a
        connection can stall)."""
        from distributed import Client

        probe(self.address)
        made: dict[str, Any] = {}

        def connect():
            try:
                made["client"] = Client(self.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
            except BaseException as e:  # noqa: BLE001 - reported below, in this thread
                made["error"] = e

        _bounded(connect, CONNECT_TIMEOUT + 1)
        if "client" not in made:
            why = _first_line(made["error"]) if "error" in made else f"no answer within {CONNECT_TIMEOUT:g} s"
            raise ClusterError(f"scheduler {self.address} is not reachable as a Dask scheduler: {why}") from None
        client = made["client"]
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT)
        except (OSError, TimeoutError):
            client.close(timeout=CLOSE_TIMEOUT)
            raise ClusterError(f"scheduler {self.address} has no workers (waited {WORKER_WAIT:g} s)") from None
        return client

    def _start_local(self):
        """The scheduler in this process; the workers in one ``dask worker`` process of
        ours (:func:`serve_workers`) in its own session, with a watch on this process."""
        import dask
        from distributed import Client, LocalCluster

        # the workers' temporary files (a task's copies of its inputs, a rendering) go
        # under one directory of ours, removed at close even if the workers were killed
        self._tmp = str(scratch_dir("cluster"))
        with dask.config.set({"temporary-directory": self._tmp}):  # the scheduler's scratch space too
            self._local = LocalCluster(
                n_workers=0,
                host="127.0.0.1",
                scheduler_port=0,
                dashboard_address=None,
                # the scheduler's HTTP routes (health, metrics) on a free port, never 8787 (busy if
                # another cluster runs: a warning on the user's terminal), and no dashboard
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                silence_logs=_SILENT,
            )
        atexit.unregister(_spec_close_clusters())  # close() does it, bounded in time
        log = open(Path(self._tmp) / "workers.log", "wb")  # noqa: SIM115 - the child's output, kept for errors
        self._workers_proc = subprocess.Popen(
            [sys.executable, "-m", __name__, self._local.scheduler_address, str(self.workers)],
            env={**os.environ, "TMPDIR": self._tmp},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no terminal signal reaches it: Ctrl-C is this process's to handle
        )
        log.close()
        client = Client(self._local, set_as_default=False)
        try:
            client.wait_for_workers(self.workers, timeout=LOCAL_START)
        except (OSError, TimeoutError):
            tail = (Path(self._tmp) / "workers.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise ClusterError(
                f"the local Dask workers did not start within {LOCAL_START:g} s" + (f": {tail[0]}" if tail else "")
            ) from None
        return client

    def _check_workers(self, client) -> None:
        from demonoise.runtime import fingerprint

        ours = fingerprint.source_fingerprint()
        found = client.run(_identity, on_error="return")
        for addr, theirs in sorted(found.items()):
            if isinstance(theirs, BaseException):
                raise ClusterError(
                    f"worker {addr} of {self.describe()} cannot run demonoise: {_first_line(theirs)}; "
                    f"install {ours} there"
                )
            if theirs != ours:
                raise ClusterError(
                    f"worker {addr} of {self.describe()} runs {theirs}, this client {ours}: "
                    "install the same demonoise on every worker"
                )

    def worker_pids(self) -> dict[str, int]:
        """``{worker address: pid}`` (a started cluster only)."""
        return self.client().run(os.getpid)

    # ------------------------------------------------------------------ tasks
    def window(self) -> int:
        """Most tasks of one :meth:`run_each` in flight at a time: :data:`WINDOW_PER_WORKER`
        per worker (enough that no worker waits for its next task, few enough that a run
        of millions of blocks never lives on the scheduler at once)."""
        n = self.workers if self.local else len(self.client().scheduler_info().get("workers", {})) or 1
        return max(2, WINDOW_PER_WORKER * n)

    def run_each(
        self,
        fn: Callable,
        items: Iterable[tuple],
        *,
        shared: Any = None,
        label: str = "task",
        names: Sequence[str] | None = None,
    ) -> Iterator[tuple[int, Any, BaseException | None]]:
        """Run ``fn(*item)`` -- ``fn(shared, *item)`` when ``shared`` is given, sent once to
        every worker -- for every item on the cluster (``client.submit``); yield ``(index,
        result, error)`` as tasks complete (:class:`distributed.as_completed`; ``error``:
        the exception a task raised, or ``KilledWorker`` when its workers kept dying).
        Items are taken lazily, at most :meth:`window` tasks in flight: the next is
        submitted when one completes (a generator of items is never made a list;
        ``names`` may grow with it, read when its item is taken). Task
        keys are ``<label>-<index>-<name>-<random>``, never reused (a released key may
        still be known to the scheduler, which would keep the old task for the new one).
        Leaving the loop early (a break, an exception, Ctrl-C) cancels the tasks not done.

        Raises
        ------
        ClusterLost
            The scheduler went away while tasks were pending.
        """
        from distributed import as_completed

        client = self.client()
        # scattered as one object under a key of its own: ``scatter`` of a dict sends each
        # value under the dict's key ("plan") -- the same key for every fan-out of the run,
        # so one noise setting's release dropped (or its data replaced) the next one's inputs
        head = () if shared is None else (client.scatter([shared], broadcast=True, hash=False)[0],)
        tag = uuid.uuid4().hex[:12]
        source, window = enumerate(iter(items)), self.window()
        live: dict = {}
        done = as_completed([], loop=client.loop)

        def fill() -> None:
            while len(live) < window and (nxt := next(source, None)) is not None:
                i, item = nxt
                name = names[i] if names is not None and i < len(names) else str(i)
                fut = client.submit(fn, *head, *item, key=f"{label}-{i}-{name}-{tag}", pure=False)
                live[fut.key] = (i, fut)
                done.add(fut)

        try:
            fill()
            while live:
                fut = next(done)
                i, _ = live.pop(fut.key)
                if fut.status == "cancelled":
                    raise self._lost(fut, "cancelled")
                try:
                    err = fut.exception() if fut.status == "error" else None
                    value = None if err is not None else fut.result()
                except OSError:  # its result could not be gathered (distributed's CommClosedError is one)
                    raise self._lost(fut, "not gathered") from None
                fut.release()
                yield i, value, err
                fill()
        except BaseException as e:
            self._interrupted = self._interrupted or isinstance(e, KeyboardInterrupt)
            pending = [f for _, f in live.values() if not f.done()]
            _bounded(lambda: client.cancel(pending, force=True), CLOSE_TIMEOUT)
            raise
        finally:
            for _, f in live.values():
                f.release()

    def _lost(self, fut, what: str) -> ClusterError:
        """Why a task came back cancelled though nobody cancelled it, or finished with a
        result that cannot be gathered: the scheduler is gone."""
        where = self.address or "of the local cluster"
        return ClusterLost(f"lost the Dask scheduler {where} mid-run (task {fut.key} {what})")

    def each(
        self,
        fn: Callable,
        items: Iterable[tuple],
        *,
        shared: Any = None,
        label: str = "task",
        names: Sequence[str] | None = None,
        count: int | None = None,
    ) -> Iterator[tuple[int, Any, BaseException | None]]:
        """:meth:`run_each` where :meth:`fan_out_for` says so for ``count`` items (default
        ``len(items)``), else the same in this process, one item after the other (an
        ``Exception`` is yielded as the item's error). Items are taken lazily either way:
        a generator that prepares each item lets the first tasks run meanwhile."""
        if self.fan_out_for(len(items) if count is None else count):
            yield from self.run_each(fn, items, shared=shared, label=label, names=names)
            return
        head = () if shared is None else (shared,)
        for i, item in enumerate(items):
            try:
                value = fn(*head, *item)
            except Exception as e:
                yield i, None, e
                continue
            yield i, value, None

    def run_ordered(self, fn: Callable, items: Iterable[tuple], *, shared: Any = None, label: str = "task"):
        """:meth:`run_each`, results yielded in item order (buffering the ones that finish
        before an earlier one); the first failing task raises its error."""
        pending: dict[int, Any] = {}
        nxt = 0
        for i, value, err in self.run_each(fn, items, shared=shared, label=label):
            if err is not None:
                raise err
            pending[i] = value
            while nxt in pending:
                yield pending.pop(nxt)
                nxt += 1

    def on_workers(self, fn: Callable, *args: Any) -> None:
        """``fn(*args)`` on every worker of a started cluster, within :data:`CLOSE_TIMEOUT`
        (errors ignored): what a run leaves on the workers is ended by it (the report's
        kept kernels), also after an interrupt."""
        client = self._client
        if client is not None:
            _bounded(lambda: client.run(fn, *args, on_error="ignore"), CLOSE_TIMEOUT)

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Disconnect; a local cluster's workers (and their kernels) end. After an
        interrupt the local workers are killed rather than closed (their results are
        not wanted), so that closing takes a second, not the workers' time to finish."""
        with self._lock:
            self._close_now()

    def _close_now(self) -> None:
        client, local, proc = self._client, self._local, self._workers_proc
        self._client = self._local = self._workers_proc = None
        if client is not None:
            _bounded(lambda: client.close(timeout=CLOSE_TIMEOUT), CLOSE_TIMEOUT)
        if proc is not None:
            _end_group(proc, 0.0 if self._interrupted else CLOSE_TIMEOUT)
        if local is not None:
            _bounded(lambda: local.close(timeout=CLOSE_TIMEOUT), CLOSE_TIMEOUT)
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _end_group(proc: subprocess.Popen, grace: float) -> None:
    """End the local workers' process group: SIGTERM (their nannies close the workers,
    whose plugins end their kernels), then SIGKILL after ``grace`` seconds (at once after
    an interrupt: their results are not wanted)."""
    if grace > 0:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(CLOSE_TIMEOUT)


def _bounded(fn: Callable[[], Any], seconds: float) -> None:
    """``fn()`` in a daemon thread, waited for at most ``seconds``; its errors ignored."""

    def run():
        with contextlib.suppress(BaseException):
            fn()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)


def _spec_close_clusters():
    from distributed.deploy import spec

    return spec.close_clusters


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@contextlib.contextmanager
def using(cluster: Cluster | None = None, workers: int | None = None) -> Iterator[Cluster]:
    """``cluster`` itself, or -- when none is given -- a local one of ``workers`` processes
    for the duration of the block (started only if a task is run, closed at the end)."""
    if cluster is not None:
        yield cluster
        return
    with Cluster(workers=workers) as own:
        yield own


# ---------------------------------------------------------------------- the local workers
def serve_workers(address: str, n: int) -> None:
    """The local workers' process (``python -m demonoise.runtime.cluster ADDRESS N``, started
    by :class:`Cluster` in its own session): ``dask worker`` with ``N`` worker processes
    of one thread, configured by :data:`LOCAL_WORKER_CONFIG`, and a watchdog thread that
    kills this whole process group -- the nannies and their worker processes -- as soon
    as the parent (the client) is gone, whatever ended it (SIGKILL included); each
    worker's kernel then ends by itself."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(WATCH)
            if os.getppid() != parent:
                os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="demonoise-parent-watch", daemon=True).start()
    import dask
    from distributed.cli.dask_worker import main

    dask.config.set(LOCAL_WORKER_CONFIG)  # the nannies pass it on to their workers

    args = [address, "--nworkers", str(n), "--nthreads", "1", "--no-dashboard", "--name", "demonoise-local"]
    main.main(args=args, prog_name="dask worker", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover - run by Cluster as the local workers' process
    serve_workers(sys.argv[1], int(sys.argv[2]))
