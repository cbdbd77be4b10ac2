"""What a run must refuse or leave behind (hostile-use tour, reliability items 4, 5 and 7):

* ``--scheduler`` aimed at something that is not a Dask scheduler (an HTTP server, a
  silent listener, a banner, an empty string) is refused in one line naming the address
  and what answered, exit 2, within 10 s, no traceback; a scheduler lost mid-run ends the
  command in one line naming it, exit 1 (servers on 127.0.0.1 only);
* ``$DEMONOISE_NOTEBOOKS`` naming a folder that does not exist or lacks a notebook is an
  error naming what is missing, never a fall back to the bundled notebooks;
* no kernel connection or IPC file in Jupyter's runtime folder after notebooks ran, no
  ``demonoise-*`` scratch folder after a run, and the ones of killed processes removed by
  the next run.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from demonoise.core.errors import ReportError
from process_helpers import DaskCluster, tagged_env

LIB = Path(__file__).resolve().parents[1] / "lib"
COMPUTE = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "--seed", "7"]


def _cli(args, env=None, timeout=60) -> tuple[subprocess.CompletedProcess, float]:
    env = {**(env or tagged_env()[0])}
    env["PYTHONPATH"] = os.pathsep.join([str(LIB), env.get("PYTHONPATH", "")])
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "demonoise.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    return r, time.monotonic() - t0


@contextlib.contextmanager
def _server(kind: str):
    """A listener on 127.0.0.1 that is not a Dask scheduler: ``http`` (answers an HTTP
    error to Dask's binary greeting), ``silent`` (accepts, never sends) or ``banner``
    (greets with a line of text)."""
    if kind == "http":
        httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            yield f"tcp://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
        return
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                conn, _ = sock.accept()
                held.append(conn)
                if kind == "banner":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
        for c in held:
            c.close()


# ----------------------------------------------------------------- not a Dask scheduler
@pytest.mark.parametrize(
    "kind, says",
    [
        ("http", "something answers there but is not a Dask scheduler (it sent b'HTTP/1.0 "),
        ("silent", "something listens there but is not a Dask scheduler (silent for 3 s)"),
        ("banner", "something answers there but is not a Dask scheduler (it sent b'SSH-2.0-"),
    ],
)
def test_a_scheduler_address_that_is_not_dask_is_refused_in_one_line(kind, says, tmp_path):
    with _server(kind) as address:
        r, seconds = _cli([*COMPUTE, "--mc", "300", "--scheduler", address, "--out", str(tmp_path / "r.parquet")])
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"demonoise compute: error: scheduler {address}: ") and says in lines[0], lines[0]
    assert seconds < 10 and "Traceback" not in r.stderr
    assert not (tmp_path / "r.parquet").exists()


def test_an_empty_scheduler_address_is_refused_not_read_as_local(tmp_path):
    r, _ = _cli([*COMPUTE, "--mc", "300", "--scheduler", "", "--out", str(tmp_path / "r.parquet")])
    assert r.returncode == 2 and r.stderr.strip() == "demonoise compute: error: scheduler address '' is empty; " + (
        "expected tcp://HOST:PORT"
    )


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(180)
def test_a_scheduler_lost_mid_run_ends_the_command_in_one_line(tmp_path):
    cluster = DaskCluster(2)
    try:
        env = {**cluster.env, "PYTHONPATH": os.pathsep.join([str(LIB), cluster.env.get("PYTHONPATH", "")])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "demonoise.cli", *COMPUTE, "--mc", "300000", "--scheduler", cluster.address]
            + ["--out", str(tmp_path / "r.parquet")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 90
        while cluster.done().get("mc-block", 0) < 2:  # under way on the cluster
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        os.killpg(cluster.scheduler.pid, signal.SIGKILL)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 10
    finally:
        cluster.stop()
    # the Monte Carlo's estimate line comes first (the run was sized before it started); then one error line
    lines = [x for x in stderr.strip().splitlines() if "replicates over" not in x]
    assert proc.returncode == 1 and len(lines) == 1, stderr
    assert f"lost the Dask scheduler {cluster.address} mid-run" in lines[0]
    assert not (tmp_path / "r.parquet").exists()


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(240)
def test_a_scheduler_lost_while_the_report_runs_its_notebooks_ends_it_in_one_line(tmp_path):
    """The report batch on an external cluster, its TFR notebook hanging in a cell; the
    scheduler killed then: exit 1 within 10 s, one line naming the scheduler."""
    import shutil

    import yaml

    from demonoise.runtime.locate import ENV_VARS, find_dir

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for p in find_dir("notebooks", ("summary.ipynb",)).glob("*.ipynb"):
        shutil.copy(p, notebooks / p.name)
    nb = nbformat.read(notebooks / "tfr.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "summary.load_results" in c.source) + 1
    marker = tmp_path / "hang"  # the kernel runs on the cluster's worker: the path is in the cell
    hang = new_code_cell(f"open({str(marker)!r}, 'w').close()\n__import__('time').sleep(10**6)")
    hang["id"] = "never-returns"
    nb.cells.insert(at, hang)
    nbformat.write(nb, notebooks / "tfr.ipynb")
    params = tmp_path / "p.yaml"
    small = {"datasets": {"be-2023": ["BE"]}, "noise": [{"V": 1}], "indicators": ["tfr"], "mc": 0, "pdf": False}
    params.write_text(yaml.safe_dump(small), encoding="utf-8")
    cluster = DaskCluster(2)
    try:
        env = {**cluster.env, ENV_VARS["notebooks"]: str(notebooks)}
        args = ["report", "--params", str(params), "--out-dir", str(tmp_path / "out"), "--scheduler", cluster.address]
        proc = subprocess.Popen(
            [sys.executable, "-m", "demonoise.cli", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        os.killpg(cluster.scheduler.pid, signal.SIGKILL)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        cluster.stop()
    lines = stderr.decode().strip().splitlines()  # the batch's progress lines, then the error
    assert proc.returncode == 1 and took < 10, (proc.returncode, took, stderr)
    assert all(ln.startswith("demonoise report: ") for ln in lines), stderr
    assert lines[-1].startswith(f"demonoise report: error: lost the Dask scheduler {cluster.address} mid-run")
    assert sum("error" in ln for ln in lines) == 1 and "Traceback" not in stderr.decode()


# ----------------------------------------------------------------- $DEMONOISE_NOTEBOOKS
def test_a_notebooks_folder_from_the_environment_is_never_replaced(tmp_path, monkeypatch):
    from demonoise.report.batch.params import parse_params
    from demonoise.report.batch.stages import plan
    from demonoise.runtime.locate import ENV_VARS

    params = parse_params({"datasets": {"ess-2023": ["LU"]}, "noise": [{"V": 1}], "indicators": ["tfr"], "mc": 0})
    monkeypatch.setenv(ENV_VARS["notebooks"], str(tmp_path / "nowhere"))
    with pytest.raises(ReportError, match=r"\$DEMONOISE_NOTEBOOKS .*nowhere \(no such folder\)"):
        plan(params, tmp_path / "out")
    partial = tmp_path / "mine"
    partial.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), partial / "tfr.ipynb")
    monkeypatch.setenv(ENV_VARS["notebooks"], str(partial))
    with pytest.raises(ReportError, match=r"\$DEMONOISE_NOTEBOOKS .*mine \(missing summary.ipynb\)"):
        plan(params, tmp_path / "out")


# ----------------------------------------------------------------- leftovers
def _tiny(path: Path) -> Path:
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    params = new_code_cell('region = "BE10"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, new_code_cell("print(region)")]
    nbformat.write(nb, path)
    return path


_RUN = """
import sys
from pathlib import Path
from demonoise.report.batch.execute import Job, run_jobs

if __name__ == "__main__":
    nb, out, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    jobs = [Job(nb, out / f"r{i}.ipynb", {"region": f"BE{i}"}) for i in range(3)]
    assert all(r.ok for r in run_jobs(jobs, workers=workers, progress=False).values())
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_notebooks_leave_nothing_in_the_runtime_or_temporary_folder(tmp_path, workers, request):
    """The kernels' connection files and IPC sockets, the local cluster's scratch folder:
    gone after the run (here or on local workers); Jupyter's runtime folder untouched. With
    a temporary folder whose path is too long for a socket, the kernels use TCP."""
    import shutil
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="dn-t-", dir="/tmp"))  # IPC socket paths stay short
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    runtime, scratch, out = tmp_path / "runtime", short, tmp_path / "out"
    for d in (runtime, out):
        d.mkdir()
    script = tmp_path / "run.py"
    script.write_text(_RUN)
    env = {**tagged_env()[0], "JUPYTER_RUNTIME_DIR": str(runtime), "TMPDIR": str(scratch)}
    env["PYTHONPATH"] = os.pathsep.join([str(LIB), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(script), str(_tiny(tmp_path / "tiny.ipynb")), str(out), str(workers)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["r0.ipynb", "r1.ipynb", "r2.ipynb"]
    assert list(runtime.iterdir()) == [] and list(scratch.iterdir()) == []
    deep = tmp_path / ("x" * 60) / "tmp"
    deep.mkdir(parents=True)
    again = tmp_path / "again"
    again.mkdir()
    r = subprocess.run([*r.args[:-2], str(again), str(workers)], env={**env, "TMPDIR": str(deep)}, capture_output=True)
    assert r.returncode == 0 and len(list(again.iterdir())) == 3, r.stderr
    assert list(deep.iterdir()) == [] and list(runtime.iterdir()) == []


def test_scratch_folders_of_dead_processes_are_removed_at_the_next_start(tmp_path, monkeypatch):
    import tempfile

    from demonoise.runtime.cluster import scratch_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"demonoise-cluster-{int(dead.stdout)}-abc123"
    (stale / "workers.log").parent.mkdir()
    (stale / "workers.log").write_text("left by a SIGKILL")
    alive = tmp_path / f"demonoise-cluster-{os.getpid()}-def456"  # a running process's: kept
    alive.mkdir()
    other = tmp_path / f"demonoise-kernel-{int(dead.stdout)}-0"  # another kind: its own start cleans it
    other.mkdir()
    new = scratch_dir("cluster")
    assert new.parent == tmp_path and new.name.startswith(f"demonoise-cluster-{os.getpid()}-")
    assert not stale.exists() and alive.is_dir() and other.is_dir()
