"""The Dask engine on a real cluster: a ``dask scheduler`` and two ``dask worker`` processes
on 127.0.0.1 (a free port, each in its own process group, ended in a finalizer).

* ``compute --mc 2000 --scheduler ...`` gives exactly the Monte Carlo columns of the local
  run with the same seed (blocks are seeded by ``SeedSequence.spawn``, summed in order);
* a ``report`` batch runs through it (its notebooks and renderings are tasks there);
* a worker killed mid-run: the run completes, its blocks retried elsewhere, with the same
  numbers -- never a hang;
* an interrupted client (SIGINT, SIGTERM) cancels its tasks and ends the kernel running
  its notebook; the cluster stays up and runs the next client's tasks;
* a worker running another demonoise is refused in one line; bad addresses fail fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from demonoise.cli import main
from process_helpers import DaskCluster, tagged, tagged_env, tmp_files, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.dask, pytest.mark.timeout(240)]

MC_ARGS = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "tfr", "--seed", "7"]


@pytest.fixture(scope="module")
def cluster():
    c = DaskCluster(2)
    yield c
    c.stop()


def _cli(args, env=None, timeout=180, **kw) -> subprocess.CompletedProcess:
    env = env or tagged_env()[0]
    return subprocess.run(
        [sys.executable, "-m", "demonoise.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def _mc_columns(path: Path) -> pd.DataFrame:
    df = pd.read_parquet(path)
    cols = [c for c in df.columns if c.startswith(("mc_", "z_"))]
    assert "mc_sd_tot" in cols and df["mc_sd_tot"].notna().sum() > 100
    return df[cols]


@pytest.fixture(scope="module")
def local_mc(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("local") / "local.parquet"
    assert main([*MC_ARGS, "--mc", "2000", "--workers", "1", "--out", str(out)]) == 0
    return _mc_columns(out)


def test_compute_mc_on_the_cluster_equals_the_local_run(cluster, local_mc, tmp_path):
    before = cluster.prefixes().get("mc-block", 0)
    out = tmp_path / "cluster.parquet"
    r = _cli([*MC_ARGS, "--mc", "2000", "--scheduler", cluster.address, "--out", str(out)])
    assert r.returncode == 0, r.stderr
    pd.testing.assert_frame_equal(_mc_columns(out), local_mc)  # exactly: same seed, same blocks
    assert cluster.prefixes().get("mc-block", 0) > before  # the blocks ran as tasks there


def test_a_worker_killed_mid_run_leaves_the_run_completing(cluster, tmp_path):
    n = ["--mc", "6000"]
    ref = tmp_path / "ref.parquet"
    assert main([*MC_ARGS, *n, "--indicators", "e", "--workers", "1", "--out", str(ref)]) == 0
    out = tmp_path / "killed.parquet"
    before = cluster.done().get("mc-block", 0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "demonoise.cli", *MC_ARGS, *n, "--indicators", "e", "--scheduler", cluster.address]
        + ["--out", str(out)],
        env=tagged_env()[0],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while cluster.done().get("mc-block", 0) < before + 2:  # the run is under way on both workers
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no block finished"
        time.sleep(0.05)
    cluster.kill_worker(cluster.workers[0])
    try:
        stdout, stderr = proc.communicate(timeout=120)  # never a hang
    finally:
        cluster.add_worker()
        cluster.wait_for_workers(2)
    assert proc.returncode == 0, stderr
    pd.testing.assert_frame_equal(_mc_columns(out), _mc_columns(ref))  # retried blocks: the same numbers
    assert "Traceback" not in stderr


SMALL = {"datasets": {"be-2023": ["BE"]}, "noise": [{"V": 1}], "indicators": ["tfr"], "mc": 200, "pdf": False}


def test_a_report_batch_runs_on_the_cluster(cluster, tmp_path):
    import yaml

    params = tmp_path / "small.yaml"
    params.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    before = cluster.prefixes()
    out = tmp_path / "out"
    r = _cli(["report", "--params", str(params), "--output", str(out), "--scheduler", cluster.address])
    assert r.returncode == 0, r.stderr
    assert "1 reports: 1 rendered" in r.stdout
    assert (out / "reports" / "be-2023" / "BE.html").is_file() and (out / "index.html").is_file()
    assert f"on Dask cluster at {cluster.address}" in r.stderr
    after = cluster.prefixes()
    for prefix, n in (("mc-block", 1), ("notebook", 2), ("render", 1)):
        assert after.get(prefix, 0) - before.get(prefix, 0) >= n, (prefix, before, after)
    assert tmp_files(out) == []
    # the kernels the batch started on the workers ended with it (the cluster is not ours,
    # it stays up; an idle kernel kept ~300 MB on each worker)
    deadline = time.monotonic() + 10
    while _kernels(cluster.tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _kernels(cluster.tag) == [] and cluster.n_workers() == 2


def _kernels(tag: str) -> list[int]:
    """Jupyter kernels among the processes of the cluster (started with its tag)."""
    return [p for p in tagged(tag) if b"ipykernel" in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# ------------------------------------------------------------------ an interrupted client
_CLIENT = """
import sys
from pathlib import Path
from demonoise.runtime.cluster import Cluster
from demonoise.runtime.signals import interruptible
from demonoise.report.batch.execute import Job, run_jobs

if __name__ == "__main__":
    nb, out, address = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    jobs = [Job(nb, out / f"slow{i}.ipynb", {"marker": str(out / f"started{i}.json")}) for i in range(2)]
    try:
        with interruptible(), Cluster(address) as cluster:
            run_jobs(jobs, cluster=cluster, progress=False)
    except KeyboardInterrupt:  # interruptible() wrote the one line
        sys.exit(130)
    print("finished without interruption")
"""


def _slow_notebook(path: Path) -> Path:
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    params = new_code_cell('marker = "unused"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        new_code_cell(
            "import json, os, time\n"
            "json.dump({'pid': os.getpid()}, open(marker + '.part', 'w'))\n"
            "os.replace(marker + '.part', marker)\n"
            "time.sleep(100000)"
        ),
    ]
    nbformat.write(nb, path)
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_client_cancels_its_tasks_and_the_cluster_stays_up(cluster, tmp_path, sig):
    nb = _slow_notebook(tmp_path / "slow.ipynb")
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "client.py"
    script.write_text(_CLIENT)
    env, tag = tagged_env()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(nb), str(out), cluster.address],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    markers = [out / f"started{i}.json" for i in range(2)]
    deadline = time.monotonic() + 90
    while not all(m.exists() for m in markers):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "notebooks did not start on the cluster"
        time.sleep(0.1)
    kernels = [json.loads(m.read_text())["pid"] for m in markers]
    assert all(_alive(p) for p in kernels)
    t0 = time.monotonic()
    os.killpg(proc.pid, sig)  # the client's process group, as a terminal does
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 5, "the client took more than 5 s to stop"
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == 130 and len(lines) == 1 and lines[0].startswith("interrupted"), stderr
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in kernels) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in kernels), "a kernel of the cancelled run is still running"
    assert not any(out.glob("slow*.ipynb")) and tmp_files(out) == []
    assert wait_gone(tag, 5) == []  # the client left nothing on this side
    # the cluster is still up: both workers there, and they run the next client's tasks
    assert cluster.n_workers() == 2
    with cluster.client() as c:
        assert c.submit(sum, [1, 2, 3], pure=False).result(timeout=30) == 6


# ------------------------------------------------------------------ refusals
def test_a_worker_with_another_demonoise_is_refused(cluster, monkeypatch, capsys, tmp_path):
    from demonoise.runtime import fingerprint

    # this client "runs" another demonoise than the workers
    monkeypatch.setattr(fingerprint, "source_fingerprint", lambda **kw: "demonoise 0.0.0+000000000000")
    code = main([*MC_ARGS, "--mc", "300", "--scheduler", cluster.address, "--out", str(tmp_path / "r.parquet")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"of Dask cluster at {cluster.address} runs demonoise " in err and "install the same demonoise" in err
    assert not (tmp_path / "r.parquet").exists()


@pytest.mark.parametrize(
    "address, message",
    [
        ("tcp://127.0.0.1:1", "is not reachable"),
        ("tcp://127.0.0.1:notaport", "is not a number in 1..65535"),
        ("udp://127.0.0.1:8786", "unknown scheme 'udp'"),
        ("tcp://:8786", "expected tcp://HOST:PORT"),
        ("127.0.0.1:70000", "is not a number in 1..65535"),
    ],
)
def test_a_bad_scheduler_address_fails_fast_naming_it(address, message, tmp_path):
    t0 = time.monotonic()
    r = _cli([*MC_ARGS, "--mc", "300", "--scheduler", address, "--out", str(tmp_path / "r.parquet")], timeout=30)
    assert time.monotonic() - t0 < 12  # within 10 s of the command's own start-up
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "demonoise compute: error:" in lines[0], r.stderr
    assert not (tmp_path / "r.parquet").exists()
