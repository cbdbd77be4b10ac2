"""Execute notebooks with papermill, each process keeping one kernel.

A :class:`Job` is (input notebook, parameters, output path). :func:`run_jobs` skips it
when up to date, else sends its task (the notebook and the files it reads, as bytes) to
:func:`execute_task` (on a Dask worker, or here) and writes what comes back atomically (a
failure kept as ``<stem>.failed.ipynb``).

Kernel reuse is papermill's public engine API: ``execute_notebook(..., km=km)`` with the
process's kept kernel manager, its namespace reset before each later notebook; a kernel
that died or timed out is replaced, and :func:`end_kernels` ends them when a batch ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sys
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.document.assemble import load_notebook, read_notebook_text, write_notebook
from demonoise.runtime.cluster import Cluster, scratch_dir
from demonoise.runtime.fingerprint import digest, source_fingerprint

__all__ = ["Job", "JobResult", "Options", "running", "run_jobs", "job_key", "failed_path", "check_defined"]

DEFAULT_KERNEL = "demonoise"
_FALLBACK_KERNEL = "demonoise-current-interpreter"
#: Seconds a cell may run, and a kernel may take to start.
CELL_TIMEOUT, START_TIMEOUT = 600.0, 60.0


# =========================================================================== jobs
@dataclass(frozen=True)
class Job:
    """One notebook execution: ``input`` (with a cell tagged ``parameters``) run with
    ``parameters`` (JSON) into ``output``, in the input's folder where it exists (else in a
    temporary one). ``data_fingerprint`` is part of the run key; ``files`` (paths named in
    the parameters) travel with the task as bytes; cells tagged ``skip_tags`` are left out."""

    input: Path
    output: Path
    parameters: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    data_fingerprint: str = ""
    files: tuple = ()
    skip_tags: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "input", Path(self.input))
        object.__setattr__(self, "output", Path(self.output))
        object.__setattr__(self, "files", tuple(str(f) for f in self.files))
        tags = (self.skip_tags,) if isinstance(self.skip_tags, str) else self.skip_tags
        object.__setattr__(self, "skip_tags", tuple(str(t) for t in tags))
        for k, v in self.parameters.items():
            if not isinstance(k, str) or not k.isidentifier():
                raise ParameterError(f"job {self.label}: parameter name {k!r} is not a Python identifier")
            try:
                json.dumps(v, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ParameterError(f"job {self.label}: parameter {k}={v!r} is not JSON-serialisable ({e})") from None
        if self.output.resolve() == self.input.resolve():
            raise ParameterError(f"job {self.label}: output would overwrite the input notebook {self.input}")

    @property
    def label(self) -> str:
        return self.name or self.output.name


@dataclass(frozen=True)
class JobResult:
    """Outcome of one job: ``status`` ``"ok"``, ``"failed"`` or ``"skipped"`` (up to date);
    ``error``, why it failed (:func:`_error_from`); ``notebook``, the executed notebook's
    bytes, only on its way back from a worker."""

    job: Job
    status: str
    seconds: float = 0.0
    error: str | None = None
    failed_notebook: Path | None = None
    kernel_reused: bool = False
    key: str = ""
    worker_pid: int = 0
    notebook: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "skipped")


# ================================================================ keys
def job_key(job: Job, *, library: str) -> str:
    """Run key of ``job``: sha256 over input bytes, parameters, library and data fingerprints."""
    try:
        nb_bytes = job.input.read_bytes()
    except OSError as e:
        raise ReportError(f"job {job.label}: cannot read input notebook {job.input}: {e}") from None
    payload = {
        "input_sha256": hashlib.sha256(nb_bytes).hexdigest(),
        "parameters": job.parameters,
        "library": library,
        "data": job.data_fingerprint,
    }
    if job.skip_tags:
        payload["skip_tags"] = sorted(job.skip_tags)
    return digest(payload)


def output_key(path: Path) -> str | None:
    """Run key recorded in an executed notebook, or ``None`` (missing, unreadable; a failure's is ``None``)."""
    try:
        return json.loads(path.read_bytes()).get("metadata", {}).get("demonoise", {}).get("run", {}).get("key")
    except (OSError, ValueError):
        return None


def failed_path(output: Path) -> Path:
    """Where the notebook of a failed job is kept: ``<stem>.failed.ipynb``."""
    return output.with_name(output.stem + ".failed.ipynb")


# ============================================================ the parameters cell
def check_defined(path: str | os.PathLike, names: Iterable[str] = (), what: str | None = None) -> tuple[str, ...]:
    """The names the notebook's cell tagged ``parameters`` assigns, in order (as papermill reads
    them), after checking it defines every one of ``names``: those the batch injects, or
    (``what``, the notebook's name) those a user gives it -- papermill itself only warns.

    Raises
    ------
    ReportError
        The notebook cannot be read, has no tagged parameters cell, or does not define names
        the batch injects -- naming them.
    ParameterError
        ``unknown parameter 'regoin' for notebook whatif; its parameters: dataset, region, ...``
    """
    from papermill.translators import PythonTranslator

    nb = load_notebook(Path(path))[0]
    cell = next((c for c in nb.cells if c.get("cell_type") == "code" and "parameters" in _tags(c)), None)
    if cell is None:
        raise ReportError(
            f"notebook {path} has no code cell tagged 'parameters': papermill would inject the run's values "
            "above the notebook's own defaults, which then overwrite them (the report would show the defaults' "
            "country and setting); tag the cell that assigns the parameters"
        )
    defined = tuple(dict.fromkeys(p.name for p in PythonTranslator.inspect(cell)))
    missing = [n for n in names if n not in defined]
    if missing and what is None:
        raise ReportError(
            f"notebook {path}: its 'parameters' cell does not define {', '.join(missing)}, which the batch "
            f"injects; it defines {', '.join(defined) or 'nothing'}"
        )
    if missing:
        raise ParameterError(
            f"unknown parameter{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} for notebook "
            f"{what}; its parameters: {', '.join(defined)}"
        )
    return defined


# ====================================================================== options
@dataclass(frozen=True)
class Options:
    """How the tasks of a run execute (sent with every task): the kernelspec ``kernel``, one
    per worker and reset between notebooks (``reset``: tests switch it off to show what it
    prevents), and the run. A missing kernelspec gives a ``RuntimeWarning`` and the current
    interpreter as kernel (``note`` says so)."""

    kernel: str = DEFAULT_KERNEL
    reset: bool = True
    run_id: str = ""
    library: str = field(default_factory=source_fingerprint)
    note: str | None = None

    def __post_init__(self):
        from jupyter_client.kernelspec import NoSuchKernel

        try:
            _spec(self)
        except NoSuchKernel:
            note = (
                f"kernelspec {self.kernel!r} not found; running notebooks with the current interpreter "
                f"{sys.executable} instead. Install the named kernel with: "
                f"{sys.executable} -m ipykernel install --sys-prefix --name {self.kernel}"
            )
            warnings.warn(note, RuntimeWarning, stacklevel=4)
            object.__setattr__(self, "kernel", _FALLBACK_KERNEL)
            object.__setattr__(self, "note", note)


# ====================================================================== kernels
def _spec(opts: Options):
    """The kernelspec (the current interpreter for the fallback kernel) with ``$PYTHONPATH``
    made absolute (papermill runs a notebook in its folder), no input history (one SQLite
    file every kernel would lock) and no output cache (its flush makes every reset a full
    garbage collection)."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    if opts.kernel == _FALLBACK_KERNEL:
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec = KernelSpec(argv=argv, display_name=sys.executable, language="python", resource_dir="")
    else:
        spec = KernelSpecManager().get_kernel_spec(opts.kernel)
    if path := os.environ.get("PYTHONPATH"):
        absolute = os.pathsep.join(str(Path(p).resolve()) if p else p for p in path.split(os.pathsep))
        spec.env = {**(spec.env or {}), "PYTHONPATH": absolute}
    spec.argv = [*spec.argv, "--HistoryManager.enabled=False", "--InteractiveShell.cache_size=0"]
    return spec


def _new_kernel(opts: Options):
    """This process's kernel manager (nbclient starts its kernel on the first notebook),
    whose :meth:`client` is always the same ``KeptClient``; connection file and IPC sockets
    in a scratch directory of this process."""
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager

    class KeptClient(AsyncKernelClient):
        """The one client of a kept kernel: nbclient starts its channels and waits for the
        kernel once (the handshake's IOPub flush waits 0.2 s); later notebooks find it ready.
        Their messages are told apart from earlier ones by their parent message."""

        _ready = False

        def start_channels(self, *args, **kwargs) -> None:
            if not self.channels_running:
                super().start_channels(*args, **kwargs)

        async def wait_for_ready(self, timeout=None) -> None:
            if not self._ready:
                await self._async_wait_for_ready(timeout=timeout)
                self._ready = True

    class Kernel(AsyncKernelManager):
        runs, run_id, kept, kernel_spec = 0, "", None, _spec(opts)

        def client(self, **kwargs):
            if self.kept is None:
                self.kept = super().client(**kwargs)
            return self.kept

        def kill(self) -> None:
            """End the kernel at once, from any thread (SIGKILL to its process group: the
            kernel leads its own session), and remove its files. Its client's sockets are
            not touched (they belong to the thread that ran the notebooks)."""
            pid = getattr(self.provisioner, "pid", None)
            if pid:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
            shutil.rmtree(scratch, ignore_errors=True)

    scratch = scratch_dir("kernel")
    # IPC: no TCP ports to race for between parallel kernels -- unless the temporary folder's
    # path is too long for a Unix socket's (``sun_path``: 104 bytes on macOS)
    ipc = len(str(scratch / "ipc-00000")) < 100
    return Kernel(
        kernel_name=opts.kernel,
        transport="ipc" if ipc else "tcp",
        connection_file=str(scratch / "kernel.json"),
        ip=str(scratch / "ipc") if ipc else "127.0.0.1",
        client_factory=KeptClient,
    )


_state: dict[str, Any] = {"kernel": None}


def _kernel_for(opts: Options):
    """The kept kernel if it is alive, else a fresh one."""
    from jupyter_core.utils import run_sync

    if _state["kernel"] is not None and not run_sync(_state["kernel"].is_alive)():  # died since its last task
        end_kernels()
    kernel = _state["kernel"] = _state["kernel"] or _new_kernel(opts)
    kernel.run_id = opts.run_id
    return kernel


@contextlib.contextmanager
def running(cluster: Cluster | None, workers: int, address: str | None = None):
    """The cluster of a run: ``cluster``, else one of ``address`` (without one, a local
    cluster of ``workers`` processes) for the block; the kernels the run used end with the
    block, on every worker, however it ends."""
    with contextlib.nullcontext(cluster) if cluster is not None else Cluster(address, workers=workers) as where:
        try:
            yield where
        finally:
            where.on_workers(end_kernels, where.run_id)
            end_kernels(where.run_id)


def end_kernels(run_id: str = "") -> None:
    """End this process's kept kernel if it last ran a notebook of ``run_id`` (any run when
    ``run_id`` is empty): called on every worker when a batch ends, however it ends, so
    that no kernel outlives its run on an external cluster (another run's kernel is left)."""
    kernel = _state.get("kernel")
    if kernel is not None and (not run_id or kernel.run_id == run_id):
        _state["kernel"] = None
        kernel.kill()


# =============================================================== one task, anywhere
def _localised(parameters: Mapping[str, Any], files: Mapping[str, Any], where: Path) -> dict:
    """``parameters`` with each path of ``files`` replaced by a copy written under ``where``."""
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
    return {k: copies.get(v, v) if isinstance(v, str) else v for k, v in parameters.items()}


def _tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags") or ())


def execute_task(job: Job, task: Mapping, opts: Options) -> JobResult:
    """Execute ``job`` from ``task`` (:func:`_task_of`), without the cells it skips, with
    papermill in this process's kept kernel (a new one starts in the task's folder; a kept
    one changes to it and resets its namespace first); the result carries the executed
    notebook's bytes. A ``KeyboardInterrupt`` kills the kernel before it goes on."""
    import tempfile

    import papermill as pm
    from jupyter_core.utils import run_sync

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dn-task-") as tmp:
        parameters = _localised(job.parameters, task["files"], Path(tmp))
        cwd = task["cwd"] if Path(task["cwd"]).is_dir() else tmp
        nb = read_notebook_text(task["notebook"].decode("utf-8"))
        nb.cells = [c for c in nb.cells if not set(job.skip_tags) & _tags(c)]
        kernel = _kernel_for(opts)
        reused, error, out = kernel.runs > 0, None, Path(tmp) / "executed.ipynb"
        try:
            if reused:
                reset = "\nget_ipython().reset(new_session=True)" if opts.reset else ""
                code = f"__import__('os').chdir({cwd!r}){reset}"
                run_sync(kernel.kept.execute_interactive)(code, store_history=False, timeout=START_TIMEOUT)
            pm.execute_notebook(
                nb,
                str(out),
                parameters=parameters,
                kernel_name=opts.kernel,
                language="python",
                progress_bar=False,
                request_save_on_cell_execute=False,
                start_timeout=START_TIMEOUT,
                execution_timeout=CELL_TIMEOUT,
                cwd=cwd,
                km=kernel,
            )
        except Exception as exc:
            error = _error_from(exc)
            if type(exc).__name__ != "PapermillExecutionError":  # dead or timed out: a fresh kernel next
                end_kernels()
        except BaseException:  # KeyboardInterrupt, SystemExit: no kernel left behind
            end_kernels()
            raise
        finally:
            kernel.runs += 1
        executed = out.read_bytes() if out.is_file() else None
    status, seconds = "ok" if error is None else "failed", time.perf_counter() - t0
    return JobResult(job, status, seconds, error, None, reused, "", os.getpid(), executed)


def _error_from(exc: BaseException) -> str:
    """Why a task failed: papermill's cell error, its cell counted in the executed notebook
    (``ValueError: ... (cell 3, In [2])``), else the exception's first line."""
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        n = "" if exc.exec_count is None else f", In [{exc.exec_count}]"
        return f"{exc.ename}: {exc.evalue} (cell {exc.cell_index}{n})"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:2000] if lines else type(exc).__name__}"


# ========================================================== before and after a task
def _task_of(job: Job) -> dict:
    """What ``job`` reads, as bytes (a directory: ``{name: bytes}``), and its folder ``cwd``."""
    files = {}
    for f in job.files:
        try:
            p = Path(f)
            files[f] = (
                {m.name: m.read_bytes() for m in sorted(p.iterdir()) if m.is_file()} if p.is_dir() else p.read_bytes()
            )
        except OSError as e:
            raise ReportError(f"job {job.label}: cannot read {f}: {e.strerror or e}") from None
    return {"notebook": job.input.read_bytes(), "files": files, "cwd": str(job.input.parent.resolve())}


def _finish(job: Job, key: str, opts: Options, res: JobResult) -> JobResult:
    """Write the executed notebook ``res`` carries, atomically and stamped with the run (a
    failure's as ``<stem>.failed.ipynb``, removing an older, valid-looking output)."""
    to, stale = (job.output, failed_path(job.output)) if res.ok else (failed_path(job.output), job.output)
    stale.unlink(missing_ok=True)
    if res.notebook is None:
        return replace(res, job=job, key=key)
    nb = read_notebook_text(res.notebook.decode("utf-8"))
    nb.metadata["demonoise"] = {
        **(nb.metadata.get("demonoise") or {}),
        "run": {
            "key": key if res.ok else None,
            "status": "ok" if res.ok else "failed",
            "error": res.error,
            "library": opts.library,
            "data_fingerprint": job.data_fingerprint,
            "kernel": opts.kernel,
            "kernel_reused": res.kernel_reused,
            "seconds": round(res.seconds, 3),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }
    kept = write_notebook(nb, to)
    return replace(res, job=job, failed_notebook=None if res.ok else kept, key=key, notebook=None)


# ======================================================================= batch
def run_jobs(
    jobs: Mapping[Any, Job] | Iterable[Job],
    *,
    workers: int = 2,
    force: bool = False,
    progress: bool | None = None,
    cluster: Cluster | None = None,
    options: Options | None = None,
) -> dict:
    """Run notebook jobs (distinct outputs), each written here as it comes back; one failing
    notebook does not stop the others.

    Parameters
    ----------
    jobs : mapping or iterable of Job
        ``{key: Job}``; an iterable is keyed by position.
    workers : int
        Without ``cluster``: the size of the local Dask cluster (``1``: this process).
    force : bool
        Run even the jobs whose output is up to date.
    progress : bool or None
        tqdm progress bar; ``None``: only on a terminal.
    options : Options, optional
        Kernel and its reset (default: :class:`Options`).

    Returns
    -------
    dict
        ``{key: JobResult}``, in the order of ``jobs``.

    Raises
    ------
    ParameterError
        Invalid arguments or duplicate output paths.
    KeyboardInterrupt
        After cancelling pending jobs and ending the kernels of this run.
    """
    from tqdm import tqdm

    jobs = dict(jobs if isinstance(jobs, Mapping) else enumerate(jobs))
    if workers < 1:
        raise ParameterError(f"workers must be >= 1, got {workers}")
    seen: dict[Path, Job] = {}
    for j in jobs.values():
        if (first := seen.setdefault(j.output.resolve(), j)) is not j:
            raise ParameterError(f"jobs {first.label} and {j.label} write the same output {j.output}")
    with running(cluster, workers) as where:
        opts = replace(options or Options(), run_id=where.run_id)
        out, todo = {}, []
        for name, job in jobs.items():
            try:
                key = job_key(job, library=opts.library)
                if force or output_key(job.output) != key:
                    todo.append((name, key, _task_of(job)))
                else:
                    out[name] = JobResult(job, "skipped", key=key)
            except ReportError as e:
                out[name] = _finish(job, "", opts, JobResult(job, "failed", error=_error_from(e)))
        items = [(jobs[name], task, opts) for name, _, task in todo]
        bar = tqdm(total=len(items), unit="nb", desc="notebooks", disable=None if progress is None else not progress)
        with bar:
            for i, res, err in where.each(execute_task, items, label="notebook", names=[j.label for j, _, _ in items]):
                name, key, _ = todo[i]
                res = res if err is None else JobResult(jobs[name], "failed", error=_error_from(err))
                out[name] = _finish(jobs[name], key, opts, res)
                bar.update(1)
    return {k: out[k] for k in jobs}  # in the order given
