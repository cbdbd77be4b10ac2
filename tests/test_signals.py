"""Every process a command starts ends with it, whatever signal ends it (local cluster).

Real process trees: ``demonoise compute --mc`` (a local Dask cluster of 2 worker
processes) and ``demonoise report`` (workers, their Jupyter kernels, multiprocessing's
resource tracker) with a notebook whose cell never returns. The command runs in its own
process group; SIGINT and SIGTERM go to the whole group (as a terminal's Ctrl-C does),
SIGKILL to the command's process only (children must notice by themselves). Every
process of the tree carries a tag in its environment, so that none escapes the check
(kernels start their own sessions). Checked: exit 130 within 5 s with one line on stderr,
nothing half-written, and no process of the tree left a few seconds later.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell

from demonoise.runtime.locate import ENV_VARS, find_dir
from process_helpers import kill_tagged, tagged, tagged_env, tmp_files, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.signals, pytest.mark.timeout(120)]

#: Seconds a command may take to stop after SIGINT or SIGTERM.
STOP = 5.0
#: Seconds the children of a SIGKILLed command get to notice (workers: parent watch, 0.5 s; kernels: poller, 1 s).
ORPHAN_GRACE = 5.0


class Tree:
    """A command in its own process group, tagged, with a temporary folder of its own
    (``TMPDIR``: :attr:`tmp`)."""

    def __init__(self, args, cwd: Path, **env):
        self.tmp = cwd / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.env, self.tag = tagged_env(TMPDIR=str(self.tmp), **env)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "demonoise.cli", *args],
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def wait_for(self, ready, timeout=90.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"command ended early ({self.proc.returncode}): {err.decode()[-2000:]}")
            assert time.monotonic() < deadline, "the command did not get under way"
            time.sleep(0.1)

    def signal(self, sig: int, group: bool = True) -> float:
        (os.killpg if group else os.kill)(self.proc.pid, sig)
        return time.monotonic()

    def finish(self, timeout: float) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cleanup()
            pytest.fail(f"no exit within {timeout} s of the signal")
        return self.proc.returncode, err.decode()

    def cleanup(self) -> None:
        kill_tagged(self.tag)


def _one_line(err: str, command: str) -> None:
    """The interruption is one line, the last; before it only the command's own progress lines."""
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith(f"demonoise {command}: interrupted"), err
    assert all(line.startswith(f"demonoise {command}: ") for line in lines), err
    assert sum("interrupted" in line for line in lines) == 1 and "Traceback" not in err, err


def _check_interrupted(tree: Tree, t0: float, command: str) -> None:
    code, err = tree.finish(timeout=30)
    took = time.monotonic() - t0
    assert code == 130, err
    assert took < STOP, f"took {took:.1f} s to stop"
    _one_line(err, command)
    left = wait_gone(tree.tag, 3)
    tree.cleanup()
    assert left == [], f"processes left: {left}"
    assert list(tree.tmp.glob("demonoise-*")) == []  # the local cluster's and kernels' scratch folders


# ------------------------------------------------------------------ compute --mc
def _compute(tmp_path: Path) -> tuple[Tree, Path]:
    out = tmp_path / "out" / "r.parquet"
    args = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "--mc", "100000", "--out", str(out)]
    tree = Tree(args, tmp_path)
    tree.wait_for(lambda: len(tagged(tree.tag)) >= 3)  # the command and its two workers
    time.sleep(2.0)  # blocks under way
    return tree, out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_compute_mc_interrupted_stops_cleanly(tmp_path, sig):
    tree, out = _compute(tmp_path)
    workers = [p for p in tagged(tree.tag) if p != tree.proc.pid]
    assert len(workers) >= 2
    t0 = tree.signal(sig)
    _check_interrupted(tree, t0, "compute")
    assert not out.exists() and tmp_files(tmp_path) == []


def test_compute_mc_killed_leaves_no_worker(tmp_path):
    tree, out = _compute(tmp_path)
    tree.signal(signal.SIGKILL, group=False)  # the command only: its workers must notice
    tree.finish(timeout=10)
    left = wait_gone(tree.tag, ORPHAN_GRACE)
    tree.cleanup()
    assert left == [], f"processes left after SIGKILL: {left}"
    assert not out.exists() and tmp_files(tmp_path) == []


def test_a_second_ctrl_c_leaves_no_orphan(tmp_path):
    tree, out = _compute(tmp_path)
    t0 = tree.signal(signal.SIGINT)
    time.sleep(0.05)
    tree.signal(signal.SIGINT)
    code, err = tree.finish(timeout=30)
    assert code == 130 and time.monotonic() - t0 < STOP, err
    _one_line(err, "compute")
    left = wait_gone(tree.tag, ORPHAN_GRACE)
    tree.cleanup()
    assert left == [], f"processes left: {left}"
    assert not out.exists()


def test_after_an_interrupt_the_last_moments_ignore_further_signals(tmp_path):
    """Python's finalisation puts back the default action of signals that have a Python
    handler: a second Ctrl-C then would end the process by the signal (status -2), not
    130. The command line ignores further signals once its clean-up has run."""
    out = tmp_path / "out" / "r.parquet"
    code = (
        "import signal, sys\n"
        "from demonoise.cli import main\n"
        "status = main()\n"
        "ignored = all(signal.getsignal(s) is signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))\n"
        "sys.stdout.write('ignored' if ignored else 'handled')\n"
        "sys.exit(status)\n"
    )
    args = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "--mc", "100000", "--out", str(out)]
    env, tag = tagged_env()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while len(tagged(tag)) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, "the command did not get under way"
            time.sleep(0.1)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, err = proc.communicate(timeout=30)
    finally:
        kill_tagged(tag)
    assert proc.returncode == 130, err.decode()
    assert stdout.decode() == "ignored"
    assert not out.exists()


@pytest.mark.parametrize(
    "sig, command, V",
    [
        (signal.SIGINT, "compute", "1"),
        (signal.SIGTERM, "compute", "1"),
        (signal.SIGINT, "compute", "1e12"),
        (signal.SIGTERM, "compute", "1e12"),
        (signal.SIGTERM, "compare", "1e12"),
    ],
)
def test_in_process_monte_carlo_interrupted_mid_way(tmp_path, sig, command, V):
    """``--workers 1``: the Monte Carlo blocks, the longest numeric step, run in the
    command's own process (compiled kernels; at V = 10^12 the rounded Gaussian draws of the
    k-fold laws, or, for compare's zero floor, of every cell). Signalled once its progress
    lines show blocks done, it stops within 5 s, exit 130, one line, nothing written."""
    what = ["--ptable", "v01"] if command == "compare" else []
    args = [command, "--dataset", "be-2023", *what, "--V", V, "--mc", "1000000", "--workers", "1", "--yes"]
    _signalled_mid_way(tmp_path, args, " of 1000000 replicates, ", sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_change_interrupted_in_its_monte_carlo(tmp_path, sig):
    """``demonoise change --mc``: its Monte Carlo (the longest step, in the command's own
    process) signalled once its estimate line shows it under way stops within 5 s, exit
    130, one line, nothing written."""
    args = ["change", "--dataset", "be-2015-2023", "--from", "2022", "--to", "2023", "--V", "1", "--mc", "2000000"]
    _signalled_mid_way(tmp_path, [*args, "--yes"], "Monte Carlo 1 run(s) x 2000000 replicates", sig, settle=1.0)


def _signalled_mid_way(tmp_path, args: list, under_way: str, sig, settle: float = 0.0) -> None:
    """Run ``demonoise ARGS --out FILE``, signal its session once stderr shows ``under_way``
    (and ``settle`` seconds more), and check: exit 130 within :data:`STOP` seconds, one
    line on stderr besides the progress lines, nothing written."""
    out = tmp_path / "out" / "r.parquet"
    env, tag = tagged_env()
    err_file = tmp_path / "stderr.txt"
    with open(err_file, "w") as err_out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "demonoise.cli", *args, "--out", str(out)], cwd=tmp_path, env=env,
            stdout=subprocess.DEVNULL, stderr=err_out, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while under_way not in err_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, err_file.read_text()[-2000:]
            time.sleep(0.1)
        time.sleep(settle)
        t0 = time.monotonic()
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)
        took = time.monotonic() - t0
    finally:
        kill_tagged(tag)
    assert proc.returncode == 130, err_file.read_text()[-2000:]
    assert took < STOP, f"took {took:.1f} s to stop"
    _one_line(err_file.read_text(), args[0])
    assert not out.exists() and tmp_files(tmp_path) == []


# ------------------------------------------------------------------ report, a cell that never returns
@pytest.fixture(scope="module")
def hanging_notebooks(tmp_path_factory) -> Path:
    """The real notebooks, the TFR one with a cell that never returns (after writing its pid)."""
    d = tmp_path_factory.mktemp("notebooks")
    for p in find_dir("notebooks", ("summary.ipynb",)).glob("*.ipynb"):
        shutil.copy(p, d / p.name)
    nb = nbformat.read(d / "tfr.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "summary.load_results" in c.source) + 1
    cell = new_code_cell(
        "import json as _j, os as _o, time as _t\n"
        "_j.dump({'pid': _o.getpid()}, open(_o.environ['HANG_MARKER'] + '.part', 'w'))\n"
        "_o.replace(_o.environ['HANG_MARKER'] + '.part', _o.environ['HANG_MARKER'])\n"
        "_t.sleep(10**6)"
    )
    cell["id"] = "never-returns"
    nb.cells.insert(at, cell)
    nbformat.write(nb, d / "tfr.ipynb")
    return d


def _report(tmp_path: Path, notebooks: Path) -> tuple[Tree, Path, Path]:
    params = tmp_path / "p.yaml"
    small = {"datasets": {"be-2023": ["BE"]}, "noise": [{"V": 1}], "indicators": ["tfr"], "mc": 0, "pdf": False}
    params.write_text(yaml.safe_dump(small), encoding="utf-8")
    out, marker = tmp_path / "out", tmp_path / "hang.json"
    env = {ENV_VARS["notebooks"]: str(notebooks), "HANG_MARKER": str(marker)}
    tree = Tree(["report", "--params", str(params), "--output", str(out), "--workers", "2"], tmp_path, **env)
    tree.wait_for(marker.exists)
    kernel = json.loads(marker.read_text())["pid"]
    assert kernel in tagged(tree.tag)  # the kernel is part of the tree (and of the check)
    return tree, out, marker


def _no_report(out: Path) -> None:
    assert not (out / "index.html").exists() and not list(out.glob("reports/*/*.html"))
    assert not list(out.glob("build/*/*/tfr-*.ipynb")) and tmp_files(out) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_report_interrupted_in_a_cell_that_never_returns(tmp_path, hanging_notebooks, sig):
    tree, out, _ = _report(tmp_path, hanging_notebooks)
    t0 = tree.signal(sig)
    _check_interrupted(tree, t0, "report")
    _no_report(out)


def test_report_killed_in_a_cell_that_never_returns_leaves_no_process(tmp_path, hanging_notebooks):
    tree, out, _ = _report(tmp_path, hanging_notebooks)
    tree.signal(signal.SIGKILL, group=False)
    tree.finish(timeout=10)
    left = wait_gone(tree.tag, ORPHAN_GRACE)  # workers: their parent watch; kernels: their parent poller
    tree.cleanup()
    assert left == [], f"processes left after SIGKILL: {left}"
    _no_report(out)
    # its scratch folder could not be removed; the next run that needs one removes it
    assert list(tree.tmp.glob("demonoise-cluster-*"))
    code = "from demonoise.runtime.cluster import scratch_dir; import shutil; shutil.rmtree(scratch_dir('cluster'))"
    subprocess.run([sys.executable, "-c", code], env=tree.env, check=True, timeout=60)
    assert list(tree.tmp.glob("demonoise-*")) == []
