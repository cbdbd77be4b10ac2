"""Execute report notebooks with papermill: a batch of jobs, a pool of kernels.

A :class:`Job` is (input notebook, parameters, output path). :func:`run_jobs` runs a
list of jobs and returns one :class:`JobResult` per job, in job order:

* **where** -- each notebook is a self-contained :class:`Task` (notebook and the files it
  reads as bytes in, executed notebook out) run on a Dask cluster
  (:mod:`demonoise.runtime.cluster`): one given by the caller (``cluster=``, e.g. at a
  scheduler's address), or a local one of ``workers`` processes (default 2) started for
  the batch; ``workers=1`` or a single notebook runs in the calling process. Processes,
  not threads: papermill changes the working directory, which is not thread-safe.
* **kernel reuse** -- each worker keeps one kernel alive and runs its notebooks in it
  (:class:`demonoise.report.worker.KernelPlugin` ends it when the worker closes);
  between two notebooks the namespace is reset (``get_ipython().reset(new_session=True)``)
  through a *separate* kernel client carrying its own session id (a client sharing
  papermill's ZMQ identity never gets the reply). Kernel start, shutdown and library
  imports dominate a notebook run; reuse removes most of it (see
  ``benchmarks/bench_report_machinery.py``). If a reset fails, or the kernel died or
  timed out, the worker starts a fresh kernel for the next job. Module-level state
  (imported modules, an enabled Altair renderer, pandas options) deliberately
  survives a reset; notebooks must not rely on module state set by *another* notebook.
* **named kernel** -- the kernelspec ``demonoise`` (``python -m ipykernel install
  --sys-prefix --name demonoise``; ``make setup`` does it). If it is missing, the
  runner warns once and runs the current interpreter (``sys.executable``) as kernel.
* **failure isolation** -- a failing notebook does not stop the batch. Its result has
  ``status="failed"`` and a :class:`JobError` (exception name, message, cell index and
  source); the partially executed notebook is kept as ``<output>.failed.ipynb`` and any
  older ``<output>`` is removed, so no valid-looking report remains for that job.
* **atomic outputs** -- papermill writes into a temporary file next to the output,
  which replaces the output only once the run succeeded (``os.replace``). After an
  error or Ctrl-C no half-written output remains.
* **up-to-date skipping** -- the output notebook records a run key
  (``metadata.demonoise.run.key``): a hash of the input notebook's bytes, the
  parameters, the library fingerprint (:func:`demonoise.report.cache.source_fingerprint`:
  version and a hash of the package sources) and a caller-supplied data fingerprint. A job whose output
  carries the same key is skipped (``status="skipped"``) unless ``force=True``.

* **interrupts** -- Ctrl-C (or SIGTERM, :mod:`demonoise.runtime.signals`) cancels the tasks
  not done and ends the kernels running this batch's notebooks (:func:`cancel_run_kernels`,
  on every worker); a local cluster then closes, an external one stays up. A kernel
  whose worker dies (even by SIGKILL) exits by itself (ipykernel's parent poller).

Parameters must be JSON-serialisable (papermill stores them in the notebook metadata).
Programs that call :func:`run_jobs` with ``workers > 1`` must guard their entry point
with ``if __name__ == "__main__":`` (worker processes are *spawned*).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_text
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.cache import digest, source_fingerprint
from demonoise.runtime.cluster import Flow, using

__all__ = [
    "DEFAULT_KERNEL",
    "Task",
    "TaskResult",
    "execute_task",
    "Job",
    "JobError",
    "JobResult",
    "BatchResult",
    "run_jobs",
    "Notebooks",
    "check_outputs",
    "job_key",
    "output_key",
    "failed_path",
]

DEFAULT_KERNEL = "demonoise"
_FALLBACK_KERNEL = "demonoise-current-interpreter"
_ENGINE = "demonoise"


# =========================================================================== jobs
@dataclass(frozen=True)
class Job:
    """One notebook execution.

    Parameters
    ----------
    input : path-like
        Source notebook (with a cell tagged ``parameters``).
    output : path-like
        Executed notebook to write (``.ipynb``).
    parameters : mapping
        Injected by papermill after the ``parameters`` cell. JSON-serialisable.
    name : str, optional
        Label for progress and results; defaults to the output file name.
    cwd : path-like, optional
        Working directory of the kernel while the notebook runs; defaults to the
        input notebook's directory.
    data_fingerprint : str
        Identifies the data this job reads (added to the batch-level fingerprint in
        the run key), e.g. a hash of the input files or an extraction timestamp.
    files : tuple of path-like
        Files the notebook reads, named by their paths in ``parameters`` (e.g. the
        results table of ``results_path``): the task carries their bytes, and the
        notebook reads a copy where it runs (a worker of a cluster need not share this
        machine's disk).
    skip_tags : str or tuple of str
        Cells carrying any of these tags are left out: not executed, not in the executed
        notebook (e.g. ``("chapter",)`` for the runs of an indicator notebook after the
        first setting's, whose chapter-only cells would each cost a kernel round trip of
        about 8 ms to do nothing, and which the document leaves out anyway).
    """

    input: Path
    output: Path
    parameters: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    cwd: Path | None = None
    data_fingerprint: str = ""
    files: tuple = ()
    skip_tags: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "input", Path(self.input))
        object.__setattr__(self, "output", Path(self.output))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd))
        object.__setattr__(self, "files", tuple(str(f) for f in self.files))
        tags = (self.skip_tags,) if isinstance(self.skip_tags, str) else self.skip_tags
        object.__setattr__(self, "skip_tags", tuple(str(t) for t in tags))
        if not isinstance(self.parameters, Mapping):
            raise ParameterError(
                f"job {self.label}: parameters must be a mapping, got {type(self.parameters).__name__}"
            )
        for k, v in self.parameters.items():
            if not isinstance(k, str) or not k.isidentifier():
                raise ParameterError(f"job {self.label}: parameter name {k!r} is not a Python identifier")
            try:
                json.dumps(v, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ParameterError(f"job {self.label}: parameter {k}={v!r} is not JSON-serialisable ({e})") from None
        if self.output.suffix != ".ipynb":
            raise ParameterError(f"job {self.label}: output must be an .ipynb file, got {self.output}")
        if self.output.resolve() == self.input.resolve():
            raise ParameterError(f"job {self.label}: output would overwrite the input notebook {self.input}")

    @property
    def label(self) -> str:
        return self.name or self.output.name

    @property
    def workdir(self) -> Path:
        return (self.cwd or self.input.parent).resolve()


@dataclass(frozen=True)
class JobError:
    """Why a job failed.

    ``cell_index`` counts the cells of the *executed* notebook (papermill's injected
    parameters cell included); ``execution_count`` is the ``In [n]`` number.
    """

    ename: str
    evalue: str
    cell_index: int | None = None
    execution_count: int | None = None
    cell_source: str | None = None
    traceback: str = ""

    def __str__(self) -> str:
        where = ""
        if self.cell_index is not None:
            where = f" (cell {self.cell_index}"
            if self.execution_count is not None:
                where += f", In [{self.execution_count}]"
            where += ")"
        return f"{self.ename}: {self.evalue}{where}"


@dataclass(frozen=True)
class JobResult:
    """Outcome of one job. ``status`` is ``"ok"``, ``"failed"`` or ``"skipped"``
    (output already up to date)."""

    job: Job
    status: str
    seconds: float = 0.0
    error: JobError | None = None
    failed_notebook: Path | None = None
    kernel: str = ""
    kernel_reused: bool = False
    key: str = ""
    worker_pid: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "skipped")

    @property
    def output(self) -> Path:
        return self.job.output


@dataclass(frozen=True)
class BatchResult(Sequence[JobResult]):
    """Results of :func:`run_jobs`, in job order; ``status`` is ``"ok"`` or ``"failed"``."""

    results: tuple[JobResult, ...]
    seconds: float = 0.0
    kernel_note: str | None = None

    def __getitem__(self, i):  # type: ignore[override]
        return self.results[i]

    def __len__(self) -> int:
        return len(self.results)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def status(self) -> str:
        return "ok" if self.ok else "failed"

    @property
    def failed(self) -> list[JobResult]:
        return [r for r in self.results if r.status == "failed"]

    def summary(self) -> str:
        n = {s: sum(r.status == s for r in self.results) for s in ("ok", "skipped", "failed")}
        return f"{len(self)} jobs: {n['ok']} ok, {n['skipped']} up to date, {n['failed']} failed ({self.seconds:.1f} s)"


# ================================================================ keys
def job_key(job: Job, *, library: str, data_fingerprint: str = "") -> str:
    """Run key of ``job``: sha256 over input bytes, parameters, library and data fingerprints."""
    try:
        nb_bytes = job.input.read_bytes()
    except OSError as e:
        raise ReportError(f"job {job.label}: cannot read input notebook {job.input}: {e}") from None
    payload = {
        "input_sha256": hashlib.sha256(nb_bytes).hexdigest(),
        "parameters": job.parameters,
        "library": library,
        "data": [data_fingerprint, job.data_fingerprint],
    }
    if job.skip_tags:
        payload["skip_tags"] = sorted(job.skip_tags)
    return digest(payload)


def output_key(path: Path) -> str | None:
    """Run key recorded in an executed notebook, or ``None`` (missing, unreadable,
    failed, or not written by :func:`run_jobs`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh).get("metadata", {})
    except (OSError, ValueError):
        return None
    if meta.get("papermill", {}).get("exception"):
        return None
    return meta.get("demonoise", {}).get("run", {}).get("key")


def failed_path(output: Path) -> Path:
    """Where the notebook of a failed job is kept: ``<stem>.failed.ipynb``."""
    output = Path(output)
    return output.with_name(output.stem + ".failed.ipynb")


# ====================================================================== kernels
@dataclass(frozen=True)
class _KernelChoice:
    name: str  # spec name given to papermill / the kernel manager
    fallback: bool  # True: run sys.executable (named spec missing)
    note: str | None = None


def _choose_kernel(kernel_name: str) -> _KernelChoice:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(kernel_name)
        return _KernelChoice(kernel_name, False)
    except NoSuchKernel:
        note = (
            f"kernelspec {kernel_name!r} not found; running notebooks with the current interpreter "
            f"{sys.executable} instead. Install the named kernel with: "
            f"{sys.executable} -m ipykernel install --sys-prefix --name {kernel_name}"
        )
        return _KernelChoice(_FALLBACK_KERNEL, True, note)


def _absolute_pythonpath() -> str | None:
    """``$PYTHONPATH`` with relative entries made absolute (against this process's cwd).

    A kernel runs in the notebook's directory; a relative entry such as ``lib`` (the
    way the test suite is run: ``PYTHONPATH=lib``) would otherwise point elsewhere and
    the kernel would not import the same ``demonoise`` as the runner.
    """
    value = os.environ.get("PYTHONPATH")
    if not value:
        return None
    return os.pathsep.join(str(Path(p).resolve()) if p else p for p in value.split(os.pathsep))


def _spec_manager(choice: _KernelChoice):
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    pythonpath = _absolute_pythonpath()

    class _Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name, *args, **kwargs):
            if choice.fallback:
                spec = KernelSpec(
                    argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name=f"Python ({sys.executable})",
                    language="python",
                    resource_dir="",
                )
            else:
                spec = super().get_kernel_spec(kernel_name, *args, **kwargs)
            if pythonpath:
                spec.env = {**(spec.env or {}), "PYTHONPATH": pythonpath}
            # No input history: a batch kernel's cells are the notebook's, and IPython's
            # history is one SQLite file that every kernel of the batch would write (and
            # lock) on every cell and every namespace reset. No output cache (Out[n]):
            # flushing it makes every reset between notebooks a full garbage collection.
            spec.argv = [*spec.argv, "--HistoryManager.enabled=False", "--InteractiveShell.cache_size=0"]
            return spec

    return _Specs()


def _register_engine() -> None:
    """Register papermill engine ``demonoise``: nbclient, but with a reused kernel its
    client is kept for the next notebook (``keeper=``, a :class:`_Kernel`) or its
    channels closed (nbclient leaves them open when it does not own the kernel manager),
    and the executed notebook is written once at the end instead of after every cell."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.log import logger
    from papermill.utils import merge_kwargs, remove_args

    if _ENGINE in papermill_engines._engines:
        return

    class ReusingEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(
            cls,
            nb_man,
            kernel_name,
            log_output=False,
            stdout_file=None,
            stderr_file=None,
            start_timeout=60,
            execution_timeout=None,
            **kwargs,
        ):
            keeper = kwargs.pop("keeper", None)  # the _Kernel that keeps its client between notebooks
            kwargs = remove_args(["input_path"], **kwargs)
            safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
            final_kwargs = merge_kwargs(
                safe_kwargs,
                timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
                startup_timeout=start_timeout,
                kernel_name=kernel_name,
                log=logger,
                log_output=log_output,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
            )
            client = PapermillNotebookClient(nb_man, **final_kwargs)
            if keeper is not None:
                # a kept client skips nbclient's new-client handshake (its IOPub flush
                # waits 0.2 s); messages of earlier runs are told apart by their parent
                client.kc = keeper.take_client()
            # papermill writes the whole notebook after every cell's start and end (two
            # validations and writes per cell, the outputs growing): here it is written
            # once, by notebook_complete, after the last cell or the failing one.
            output_path, nb_man.output_path = nb_man.output_path, None
            try:
                return client.execute()
            finally:
                nb_man.output_path = output_path
                if not client.owns_km and client.kc is not None:
                    if keeper is not None:
                        keeper.keep_client(client.kc)
                    else:
                        client.kc.stop_channels()
                    client.kc = None

    papermill_engines.register(_ENGINE, ReusingEngine)


class _Kernel:
    """One kernel manager; started lazily by nbclient on the first notebook."""

    def __init__(self, choice: _KernelChoice):
        from jupyter_client.manager import AsyncKernelManager

        self.choice = choice
        # IPC transport: no TCP ports to race for between parallel kernels, and no
        # "running over TCP without encryption" warning from ipykernel.
        # Absolute connection file and socket paths: papermill starts the kernel inside
        # chdir(cwd), and a relative "kernel-ipc" would be found by no other client.
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(parents=True, exist_ok=True)
        stem = runtime / f"dn-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.km = AsyncKernelManager(
            kernel_name=choice.name,
            kernel_spec_manager=_spec_manager(choice),
            transport="ipc",
            connection_file=str(stem) + ".json",
            ip=str(stem) + "-ipc",
        )
        self.runs = 0
        self._kc = None
        self._kc_thread: int | None = None

    def keep_client(self, kc) -> None:
        """Keep the kernel client a notebook ran with, for the next notebook (this thread)."""
        self._drop_client()
        self._kc, self._kc_thread = kc, threading.get_ident()

    def take_client(self):
        """The kept client, or ``None`` (none kept, or kept by another thread: its sockets
        belong to that thread's event loop)."""
        kc, self._kc = self._kc, None
        if kc is not None and self._kc_thread != threading.get_ident():
            with contextlib.suppress(Exception):
                kc.stop_channels()
            return None
        return kc

    def _drop_client(self) -> None:
        kc, self._kc = self._kc, None
        if kc is not None:
            with contextlib.suppress(Exception):
                kc.stop_channels()

    def alive(self) -> bool:
        from jupyter_core.utils import run_sync

        return bool(self.km.has_kernel and run_sync(self.km.is_alive)())

    def reset(self, cwd: Path, timeout: float = 30.0) -> None:
        """Clear the user namespace and ``cd`` to ``cwd``, through a separate client.

        Raises
        ------
        ReportError
            The kernel did not reply in time or the reset failed.
        """
        from jupyter_client.blocking import BlockingKernelClient

        kc = BlockingKernelClient()
        kc.load_connection_info(self.km.get_connection_info())  # own Session -> own identity
        code = f"__import__('os').chdir({str(cwd)!r})\nget_ipython().reset(new_session=True)"
        # Shell channel only: the execute_reply on the shell channel says the reset is
        # done; no iopub subscription (and its slow-joiner flush) is needed.
        kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            msg_id = kc.execute(code, silent=True, store_history=False)
            deadline = time.monotonic() + timeout
            while True:
                reply = kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    break
        except Exception as e:
            raise ReportError(f"kernel reset failed: {type(e).__name__}: {e}") from e
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            c = reply["content"]
            raise ReportError(f"kernel reset failed: {c.get('ename')}: {c.get('evalue')}")

    def kill(self) -> None:
        """End the kernel at once, from any thread: SIGKILL to its process group (the
        kernel leads its own session), then its connection and socket files removed."""
        self._kc = None  # its sockets go with the process; not touched from another thread
        pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.km.cleanup_connection_file()
            self.km.cleanup_ipc_files()

    def shutdown(self, now: bool = False) -> None:
        from jupyter_core.utils import run_sync

        self._drop_client()
        with contextlib.suppress(Exception):
            if self.km.has_kernel:
                run_sync(self.km.shutdown_kernel)(now=now)  # also cleans up connection files


# =============================================================== one job, anywhere
@dataclass(frozen=True)
class _Options:
    choice: _KernelChoice
    reuse_kernel: bool
    cell_timeout: float | None
    start_timeout: float
    library: str
    data_fingerprint: str
    reset: bool = True  # tests switch it off to show what the reset prevents


_state: dict[str, Any] = {"kernel": None, "run": None}


def _shutdown_worker_kernel() -> None:
    k = _state.get("kernel")
    _state["kernel"] = None
    if k is not None:
        k.shutdown(now=False)


def kill_worker_kernel() -> None:
    """End this process's kept kernel at once (a Dask worker closing: any thread)."""
    k, _state["kernel"] = _state.get("kernel"), None
    if k is not None:
        k.kill()


def cancel_run_kernels(run_id: str, closing: bool = False) -> None:
    """Cancel hook of a run (:meth:`demonoise.runtime.cluster.Cluster.on_cancel`), called on
    every worker: end the kernel if it is running a notebook of that run (the task then
    fails at once instead of waiting for a cell that may never return), or whatever it
    runs when the worker is about to be ended (``closing``)."""
    if closing or (run_id and _state.get("run") == run_id):
        kill_worker_kernel()


def _error_from(exc: BaseException) -> JobError:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        tb = exc.traceback if isinstance(exc.traceback, str) else "\n".join(exc.traceback or [])
        return JobError(
            ename=str(exc.ename),
            evalue=str(exc.evalue),
            cell_index=exc.cell_index,
            execution_count=exc.exec_count,
            cell_source=(exc.source or "")[:2000],
            traceback=_strip_ansi(tb)[-8000:],
        )
    return JobError(ename=type(exc).__name__, evalue=str(exc)[:2000])


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _stamp(nb, job: Job, key: str, options: _Options, seconds: float, reused: bool, status: str, error=None):
    nb.metadata["demonoise"] = {
        **(nb.metadata.get("demonoise") or {}),
        "run": {
            "key": key if status == "ok" else None,
            "status": status,
            "error": None if error is None else str(error),
            "library": options.library,
            "data_fingerprint": [options.data_fingerprint, job.data_fingerprint],
            "kernel": options.choice.name,
            "kernel_reused": reused,
            "seconds": round(seconds, 3),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


@dataclass(frozen=True)
class Task:
    """One notebook execution, self-contained: the notebook's bytes, its parameters, the
    bytes of the files it reads (``files``: path as named in the parameters -> bytes, or
    for a directory -> its files' names -> bytes) and
    the working directory in; the executed notebook's bytes out (:func:`execute_task`).
    A task touches no output path: the caller writes what comes back (atomically), so a
    task runs in any process -- this one, or a worker of a Dask cluster on another
    machine (the files are written to a temporary directory there and the parameters
    point to the copies; a working directory that does not exist there is replaced by
    that temporary directory)."""

    name: str
    notebook: bytes
    parameters: Mapping[str, Any]
    cwd: str
    files: Mapping[str, bytes | Mapping[str, bytes]] = field(default_factory=dict)
    run_id: str = ""
    skip_tags: tuple = ()  # cells with any of these tags are left out (Job.skip_tags)


@dataclass(frozen=True)
class TaskResult:
    ok: bool
    notebook: bytes | None  # executed (or, after a failure, partly executed) notebook
    error: JobError | None
    seconds: float
    reused: bool
    healthy: bool = True
    pid: int = 0  # the process that ran it


def _kernel_for_task(options: _Options, cwd: Path) -> tuple[_Kernel, bool]:
    """This process's kept kernel (reset for the next notebook) or a fresh one."""
    kernel: _Kernel | None = _state["kernel"] if options.reuse_kernel else None
    if kernel is not None and kernel.runs and not kernel.alive():
        kernel.shutdown(now=True)
        kernel = None
    if kernel is not None and kernel.runs and options.reset:
        try:
            kernel.reset(cwd)
        except ReportError:
            kernel.shutdown(now=True)
            kernel = None
    reused = kernel is not None and kernel.runs > 0
    if kernel is None:
        kernel = _Kernel(options.choice)
    if options.reuse_kernel:
        _state["kernel"] = kernel
    return kernel, reused


def _localised(parameters: Mapping[str, Any], files: Mapping[str, Any], where: Path) -> dict:
    """``parameters`` with every path of ``files`` replaced by a copy written under ``where``
    (a directory's files copied into a directory of the same name)."""
    copies = {}
    for i, (path, data) in enumerate(files.items()):
        copy = where / f"in{i}-{Path(path).name}"
        if isinstance(data, Mapping):
            copy.mkdir()
            for name, member in data.items():
                (copy / Path(name).name).write_bytes(member)
        else:
            copy.write_bytes(data)
        copies[path] = str(copy)

    def swap(v):
        if isinstance(v, str):
            return copies.get(v, v)
        if isinstance(v, Mapping):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [swap(x) for x in v]
        return v

    return {k: swap(v) for k, v in parameters.items()}


def execute_task(task: Task, options: _Options) -> TaskResult:
    """Execute one notebook with papermill (public API: ``execute_notebook(..., km=...)``)
    in this process's kernel; return the executed notebook's bytes."""
    import tempfile

    import nbformat
    import papermill as pm

    _register_engine()
    t0 = time.perf_counter()
    nb_in = nbformat.reads(task.notebook.decode("utf-8"), as_version=4)
    if task.skip_tags:
        skip = set(task.skip_tags)
        nb_in.cells = [c for c in nb_in.cells if not skip & set(c.get("metadata", {}).get("tags") or ())]
    with tempfile.TemporaryDirectory(prefix="dn-task-") as tmpdir:
        parameters = _localised(task.parameters, task.files, Path(tmpdir))
        cwd = task.cwd if Path(task.cwd).is_dir() else tmpdir
        kernel, reused = _kernel_for_task(options, Path(cwd))
        _state["run"] = task.run_id
        out = Path(tmpdir) / "executed.ipynb"
        error, healthy = None, True
        try:
            pm.execute_notebook(
                nb_in,
                str(out),
                parameters=parameters,
                engine_name=_ENGINE,
                kernel_name=options.choice.name,
                language="python",
                progress_bar=False,
                log_output=False,
                request_save_on_cell_execute=False,
                start_timeout=options.start_timeout,
                execution_timeout=options.cell_timeout,
                cwd=cwd,
                km=kernel.km,
                keeper=kernel if options.reuse_kernel else None,
            )
        except BaseException as exc:
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: no kernel left behind
                kernel.shutdown(now=True)
                _state["kernel"] = None
                raise
            error = _error_from(exc)
            healthy = type(exc).__name__ == "PapermillExecutionError"
        finally:
            kernel.runs += 1
            _state["run"] = None
        executed = out.read_bytes() if out.is_file() else None
    if not options.reuse_kernel or not healthy:
        kernel.shutdown(now=not healthy)
        if _state["kernel"] is kernel:
            _state["kernel"] = None
    return TaskResult(error is None, executed, error, time.perf_counter() - t0, reused, healthy, os.getpid())


def read_notebook_text(text: str):
    """``nbformat.reads(text, as_version=4)`` without the schema validation.

    nbformat's ``reads`` and ``writes`` validate the whole notebook against its JSON
    schema and only *log* what they find; for the notebooks a batch passes from stage to
    stage (papermill validated each when it wrote it) that was a third of the time of
    reading and writing them: 1.9 s of 5.8 s in the client of the default batch (14 s of
    CPU in all, cProfile). The notebook is read and converted as ``reads`` does
    (:func:`nbformat.reader.reads`, :func:`nbformat.convert`).
    """
    import nbformat
    from nbformat import reader

    return nbformat.convert(reader.reads(text), 4)


def notebook_text(nb) -> str:
    """``nbformat.writes(nb)`` without the schema validation (see
    :func:`read_notebook_text`): the same text, ending in a newline as
    ``nbformat.write`` writes it."""
    import nbformat
    from nbformat import reader

    version, _ = reader.get_version(nb)
    text = nbformat.versions[version].writes_json(nb)
    return text if text.endswith("\n") else text + "\n"


def write_notebook(nb, path: str | os.PathLike) -> Path:
    """Write ``nb`` to ``path`` atomically (:func:`notebook_text`,
    :func:`~demonoise.core.atomic.atomic_write_text`)."""
    return atomic_write_text(path, notebook_text(nb))


def _task_of(job: Job, run_id: str = "") -> Task:
    """The self-contained task of ``job`` (its notebook and the files it reads, as bytes)."""
    files = {}
    for f in job.files:
        try:
            p = Path(f)
            files[f] = (
                {m.name: m.read_bytes() for m in sorted(p.iterdir()) if m.is_file()} if p.is_dir() else p.read_bytes()
            )
        except OSError as e:
            raise ReportError(f"job {job.label}: cannot read {f}: {e.strerror or e}") from None
    return Task(job.label, job.input.read_bytes(), dict(job.parameters), str(job.workdir), files, run_id, job.skip_tags)


def _written(job: Job, key: str, options: _Options, res: TaskResult) -> JobResult:
    """Write what a task returned, atomically (a failure keeps the partly executed notebook
    as ``<stem>.failed.ipynb`` and removes any older output)."""
    fail_to = failed_path(job.output)
    kept: Path | None = None
    if res.ok:
        nb = read_notebook_text(res.notebook.decode("utf-8"))
        _stamp(nb, job, key, options, res.seconds, res.reused, "ok")
        write_notebook(nb, job.output)
        fail_to.unlink(missing_ok=True)  # a stale failure from an earlier run
    else:
        job.output.unlink(missing_ok=True)  # no older, valid-looking output for a failed job
        if res.notebook is not None:
            nb = read_notebook_text(res.notebook.decode("utf-8"))
            _stamp(nb, job, "", options, res.seconds, res.reused, "failed", res.error)
            write_notebook(nb, fail_to)
            kept = fail_to
    return JobResult(
        job=job,
        status="ok" if res.ok else "failed",
        seconds=res.seconds,
        error=res.error,
        failed_notebook=kept,
        kernel=options.choice.name,
        kernel_reused=res.reused,
        key=key if res.ok else "",
        worker_pid=res.pid,
    )


def _failed(job: Job, options: _Options, e: BaseException) -> JobResult:
    job.output.unlink(missing_ok=True)
    return JobResult(job, "failed", error=JobError(type(e).__name__, _one_line(e)), kernel=options.choice.name)


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:2000] if lines else type(e).__name__


def remote_task(task: Task, options: _Options) -> TaskResult:
    """What a Dask worker runs for a notebook: :func:`execute_task` in the worker's kept kernel."""
    return execute_task(task, options)


# ======================================================================= batch
class Notebooks:
    """The notebook runs of a batch, job by job: what :func:`run_jobs` is made of, for a
    caller that interleaves them with other tasks (:mod:`demonoise.report.batch` starts a
    country's notebooks as soon as its tables are computed).

    :meth:`start` gives a job's outcome at once (up to date: ``skipped``; unreadable
    input: ``failed``) or the task to run (:func:`remote_task` with :attr:`options`, on a
    cluster prepared by :meth:`attach`, or here); :meth:`finish` writes what the task
    returned and gives the outcome. Parameters as :func:`run_jobs`.
    """

    def __init__(
        self,
        *,
        reuse_kernel: bool = True,
        kernel_name: str = DEFAULT_KERNEL,
        data_fingerprint: str = "",
        force: bool = False,
        cell_timeout: float | None = 600.0,
        start_timeout: float = 60.0,
        _reset: bool = True,
    ):
        choice = _choose_kernel(kernel_name)
        if choice.note:
            warnings.warn(choice.note, RuntimeWarning, stacklevel=3)
        #: Why the named kernel is not used (``None`` when it is).
        self.note = choice.note
        self.force = force
        self.options = _Options(
            choice=choice,
            reuse_kernel=reuse_kernel,
            cell_timeout=cell_timeout,
            start_timeout=start_timeout,
            library=source_fingerprint(),
            data_fingerprint=data_fingerprint,
            reset=_reset,
        )

    def attach(self, cluster) -> None:
        """Prepare ``cluster``'s workers: each keeps a kernel (ended when the worker
        closes), and an interrupted run ends the kernels running its notebooks."""
        from demonoise.report.worker import KernelPlugin

        cluster.register_plugin(KernelPlugin(), name="demonoise-kernels")
        cluster.on_cancel(cancel_run_kernels)

    def start(self, job: Job, run_id: str = "") -> JobResult | tuple[Task, str]:
        """``job``'s outcome if it needs no run (up to date, or its input unreadable),
        else its self-contained task and run key."""
        options = self.options
        try:
            key = job_key(job, library=options.library, data_fingerprint=options.data_fingerprint)
        except ReportError as e:
            return JobResult(job, "failed", error=JobError(type(e).__name__, str(e)), kernel=options.choice.name)
        if not self.force and output_key(job.output) == key:
            return JobResult(job, "skipped", key=key, kernel=options.choice.name)
        try:
            return _task_of(job, run_id), key
        except ReportError as e:
            return _failed(job, options, e)

    def finish(self, job: Job, key: str, res: TaskResult | None, err: BaseException | None) -> JobResult:
        """Write what ``job``'s task returned (or record why it failed: ``err``)."""
        return _failed(job, self.options, err) if err is not None else _written(job, key, self.options, res)

    def close(self) -> None:
        """End this process's kernel, if notebooks ran here."""
        _shutdown_worker_kernel()


def run_jobs(
    jobs: Iterable[Job],
    *,
    workers: int = 2,
    reuse_kernel: bool = True,
    kernel_name: str = DEFAULT_KERNEL,
    data_fingerprint: str = "",
    force: bool = False,
    progress: bool | None = None,
    cell_timeout: float | None = 600.0,
    start_timeout: float = 60.0,
    cluster=None,
    _reset: bool = True,
) -> BatchResult:
    """Run notebook jobs; one failing notebook does not stop the others.

    Parameters
    ----------
    jobs : iterable of Job
        Output paths must be distinct.
    workers : int
        Without ``cluster``: the size of the local Dask cluster started for these jobs
        (each worker with its own kernel); ``1``, or a single job, runs in this process.
    reuse_kernel : bool
        Keep one kernel per worker and reset its namespace between notebooks;
        ``False`` starts a fresh kernel for every notebook.
    kernel_name : str
        Kernelspec to use; if missing, the current interpreter is used (with a
        ``RuntimeWarning`` and ``BatchResult.kernel_note`` saying so).
    data_fingerprint : str
        Part of every job's run key (see the module docstring).
    force : bool
        Run even the jobs whose output is up to date.
    progress : bool or None
        tqdm progress bar; ``None``: only on a terminal.
    cell_timeout : float or None
        Seconds a single cell may run (``None``: no limit).
    start_timeout : float
        Seconds to wait for a kernel to start.
    cluster : demonoise.runtime.cluster.Cluster, optional
        Where the notebooks run: each job a task on that Dask cluster (its workers keep
        a kernel each); the outputs are written here.

    Returns
    -------
    BatchResult
        One :class:`JobResult` per job, in the order given.

    Raises
    ------
    ParameterError
        Invalid arguments or duplicate output paths.
    KeyboardInterrupt
        After cancelling pending jobs, ending the kernels of running ones and removing
        their temporary files.
    """
    jobs = list(jobs)
    if workers < 1:
        raise ParameterError(f"workers must be >= 1, got {workers}")
    check_outputs(jobs)
    t0 = time.perf_counter()
    runner = Notebooks(
        reuse_kernel=reuse_kernel,
        kernel_name=kernel_name,
        data_fingerprint=data_fingerprint,
        force=force,
        cell_timeout=cell_timeout,
        start_timeout=start_timeout,
        _reset=_reset,
    )
    from tqdm import tqdm

    results: list[JobResult | None] = [None] * len(jobs)
    quiet = (not progress) if progress is not None else None
    bar = tqdm(total=len(jobs), unit="nb", desc="notebooks", disable=quiet, leave=True)
    try:
        with using(cluster, workers) as where:
            todo = []
            for i, job in enumerate(jobs):
                started = runner.start(job, where.run_id)
                if isinstance(started, JobResult):
                    results[i] = started
                    _tick(bar, started, results)
                else:
                    todo.append((i, *started))
            flow = where.flow("notebook") if where.fan_out_for(len(todo)) else Flow(where, here=True)
            if not flow.here:
                runner.attach(where)
            for i, task, key in todo:
                flow.add(remote_task, task, runner.options, tag=(i, key), name=f"{i}-{jobs[i].label}")
            try:
                for (i, key), res, err in flow:
                    results[i] = runner.finish(jobs[i], key, res, err)
                    _tick(bar, results[i], results)
            finally:
                if flow.here:
                    runner.close()
    finally:
        bar.close()
    return BatchResult(tuple(results), time.perf_counter() - t0, runner.note)  # type: ignore[arg-type]


def check_outputs(jobs: Sequence[Job]) -> None:
    """Every job is a :class:`Job` and no two write the same output.

    Raises
    ------
    ParameterError
        Naming the two jobs.
    """
    outs: dict[Path, str] = {}
    for j in jobs:
        if not isinstance(j, Job):
            raise ParameterError(f"run_jobs expects Job objects, got {type(j).__name__}")
        o = j.output.resolve()
        if o in outs:
            raise ParameterError(f"jobs {outs[o]} and {j.label} write the same output {j.output}")
        outs[o] = j.label


def _tick(bar, res: JobResult, results) -> None:
    bar.update(1)
    failed = sum(1 for r in results if r is not None and r.status == "failed")
    bar.set_postfix_str(f"{res.job.label}: {res.status}" + (f", {failed} failed" if failed else ""), refresh=False)
