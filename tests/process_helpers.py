"""Processes for the lifetime tests: a real Dask cluster on 127.0.0.1, and the processes a
command left behind, found by a tag in their environment (Linux ``/proc``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import cloudpickle

# the functions run on the scheduler travel by value (the scheduler cannot import this module)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

LIB = Path(__file__).resolve().parents[1] / "lib"
TAG = "DEMONOISE_TEST_PROCESS_TAG"


def tagged_env(**extra) -> tuple[dict, str]:
    """An environment marking every process started with it (and their children)."""
    tag = uuid.uuid4().hex
    env = dict(os.environ, **{TAG: tag}, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(LIB), os.environ.get("PYTHONPATH", "")) if p)
    return env, tag


def tagged(tag: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``tag``."""
    want = f"{TAG}={tag}".encode()
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
            env = (p / "environ").read_bytes()
        except OSError:
            continue
        if state != "Z" and want in env.split(b"\0"):
            found.append(int(p.name))
    return found


def wait_gone(tag: str, seconds: float) -> list[int]:
    """The tagged processes still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = tagged(tag)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def kill_tagged(tag: str) -> None:
    for pid in tagged(tag):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _prefix_counts(dask_scheduler) -> dict[str, int]:
    return {k: sum(p.state_counts.values()) for k, p in dask_scheduler.task_prefixes.items()}


def _prefix_done(dask_scheduler) -> dict[str, int]:
    done = ("memory", "released", "forgotten", "erred")
    return {k: sum(p.state_counts.get(s, 0) for s in done) for k, p in dask_scheduler.task_prefixes.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tmp_files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if ".dn-tmp-" in p.name)


class DaskCluster:
    """``dask scheduler`` and ``n`` separate ``dask worker`` processes (one worker process
    each) on 127.0.0.1, each in its own process group; :meth:`stop` ends them all."""

    def __init__(self, n: int = 2):
        self.env, self.tag = tagged_env()
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen] = []
        self.scheduler = self._start(
            ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"]
        )
        for _ in range(n):
            self.add_worker()
        self.wait_for_workers(n)

    def _start(self, args) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def add_worker(self) -> subprocess.Popen:
        w = self._start(
            ["distributed.cli.dask_worker", self.address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
        )
        self.workers.append(w)
        return w

    def client(self, timeout: float = 30.0):
        from distributed import Client

        return Client(self.address, timeout=timeout, set_as_default=False)

    def wait_for_workers(self, n: int, timeout: float = 90.0) -> None:
        with self.client() as c:
            c.wait_for_workers(n, timeout=timeout)

    def n_workers(self) -> int:
        with self.client() as c:
            return len(c.scheduler_info()["workers"])

    def prefixes(self) -> dict[str, int]:
        """Tasks the scheduler has seen, by key prefix (``mc-block``, ``notebook``, ...)."""
        with self.client() as c:
            return c.run_on_scheduler(_prefix_counts)

    def done(self) -> dict[str, int]:
        """Tasks finished (or gone after finishing), by key prefix."""
        with self.client() as c:
            return c.run_on_scheduler(_prefix_done)

    def kill_worker(self, w: subprocess.Popen) -> None:
        """SIGKILL a whole ``dask worker`` process group (nanny and worker): a lost worker."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(w.pid, signal.SIGKILL)
        w.wait(10)
        self.workers.remove(w)

    def stop(self) -> None:
        for p in [*self.workers, self.scheduler]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in [*self.workers, self.scheduler]:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        kill_tagged(self.tag)
