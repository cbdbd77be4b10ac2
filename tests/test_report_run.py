"""The papermill batch runner: kernel reuse without leaks, parameters and metrics read
back, failure isolation, atomic outputs, up-to-date skipping, kernelspec fallback,
Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.batch.execute import Job, Options, failed_path, run_jobs
from demonoise.report.document.assemble import assemble, read_metrics
from report_helpers import BROKEN, GOOD, no_tmp_files

LIB = Path(__file__).resolve().parents[1] / "lib"


def _is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            state = next(line for line in fh if line.startswith("State:"))
    except (FileNotFoundError, StopIteration):
        return False
    return " Z " not in state and "zombie" not in state


# ------------------------------------------------------------------- kernel reuse
@pytest.mark.slow
def test_reused_kernel_reads_back_parameters_and_metrics_without_leaks(tmp_path):
    p1 = {"region": "BE10", "V": 1.0, "set_probe": True}
    p2 = {"region": "BE34", "V": 5.0, "set_probe": False}
    jobs = [Job(GOOD, tmp_path / "run1.ipynb", p1), Job(GOOD, tmp_path / "run2.ipynb", p2)]
    batch = run_jobs(jobs, workers=1, progress=False)

    assert [r.status for r in batch.values()] == ["ok", "ok"], [str(r.error) for r in batch.values()]
    # the second notebook ran in the first one's kernel ...
    assert batch[1].kernel_reused and not batch[0].kernel_reused
    m1, m2 = read_metrics(tmp_path / "run1.ipynb"), read_metrics(tmp_path / "run2.ipynb")
    assert m1["kernel_pid"] == m2["kernel_pid"]
    # ... and did not see the variable the first one defined
    assert m1["probe_was_defined"] is False
    assert m2["probe_was_defined"] is False

    # parameters and metrics come back as injected / computed (sd = sqrt(V))
    assert nbformat.read(tmp_path / "run1.ipynb", 4).metadata.papermill.parameters == p1
    assert nbformat.read(tmp_path / "run2.ipynb", 4).metadata.papermill.parameters == p2
    assert (m1["region"], m2["region"]) == ("BE10", "BE34")
    assert m2["sd"] == pytest.approx(math.sqrt(5.0), rel=1e-15)
    assert m1["not_finite"] is None  # NaN cannot travel as JSON: null
    # the run key is stamped into the output
    meta = nbformat.read(tmp_path / "run2.ipynb", as_version=4).metadata["demonoise"]["run"]
    assert meta["key"] == batch[1].key and meta["status"] == "ok" and meta["kernel_reused"] is True
    assert no_tmp_files(tmp_path) == []


@pytest.mark.slow
def test_a_reused_kernel_keeps_its_client_and_a_broken_notebook_does_not_break_it(tmp_path, monkeypatch):
    """The notebooks of a reused kernel run through one kernel client (nbclient's
    handshake for a new client waits 0.2 s each time): one ``wait_for_ready`` for three
    notebooks; the failure of the middle one stays its own, and the third one's outputs
    are its own (its parameters, not the second's error)."""
    from jupyter_client.asynchronous.client import AsyncKernelClient

    ready = []
    real = AsyncKernelClient._async_wait_for_ready

    async def counting(self, *a, **kw):  # the handshake itself
        ready.append(1)
        return await real(self, *a, **kw)

    monkeypatch.setattr(AsyncKernelClient, "_async_wait_for_ready", counting)
    p1 = {"region": "BE10", "V": 1.0, "set_probe": True}
    p3 = {"region": "BE34", "V": 5.0, "set_probe": False}
    jobs = [
        Job(GOOD, tmp_path / "run1.ipynb", p1),
        Job(BROKEN, tmp_path / "run2.ipynb", {}),
        Job(GOOD, tmp_path / "run3.ipynb", p3),
    ]
    batch = run_jobs(jobs, workers=1, progress=False)
    assert [r.status for r in batch.values()] == ["ok", "failed", "ok"]
    assert batch[2].kernel_reused
    assert len(ready) == 1
    m3 = read_metrics(tmp_path / "run3.ipynb")
    assert m3["region"] == "BE34" and m3["sd"] == pytest.approx(math.sqrt(5.0), rel=1e-15)
    assert m3["probe_was_defined"] is False


@pytest.mark.slow
def test_without_the_reset_the_probe_does_leak(tmp_path):
    """Control for the test above: the reset is what keeps runs apart."""
    jobs = [
        Job(GOOD, tmp_path / "a.ipynb", {"set_probe": True}),
        Job(GOOD, tmp_path / "b.ipynb", {"set_probe": False}),
    ]
    batch = run_jobs(jobs, workers=1, progress=False, options=Options(reset=False))
    assert [r.status for r in batch.values()] == ["ok", "ok"]
    assert read_metrics(tmp_path / "b.ipynb")["probe_was_defined"] is True


# --------------------------------------------------------- failures, pool, atomicity
@pytest.mark.slow
def test_a_broken_notebook_is_isolated_in_a_pool_of_two(tmp_path):
    out_broken = tmp_path / "broken.ipynb"
    # An older, valid-looking output of the broken job must not survive the failure.
    nbformat.write(new_notebook(cells=[new_code_cell("1")]), out_broken)
    jobs = [
        Job(GOOD, tmp_path / "good_a.ipynb", {"region": "AT13", "V": 2.0}),
        Job(BROKEN, out_broken, {"region": "XX99"}),
        Job(GOOD, tmp_path / "good_b.ipynb", {"region": "FR10", "V": 3.0}),
    ]
    batch = run_jobs(jobs, workers=2, progress=False)

    assert [r.status for r in batch.values()] == ["ok", "failed", "ok"]
    assert [r.ok for r in batch.values()] == [True, False, True]
    pids = {r.worker_pid for r in batch.values()}
    assert pids - {0} and len(pids) == 2  # two workers
    # cells: markdown, parameters, injected parameters, the raising cell
    assert batch[1].error == "ValueError: deliberate fixture failure for XX99 (cell 3, In [3])"

    assert not out_broken.exists()
    kept = failed_path(out_broken)
    assert kept == tmp_path / "broken.failed.ipynb" and batch[1].failed_notebook == kept
    failed_nb = nbformat.read(kept, as_version=4)
    assert "raise ValueError" in next(c.source for c in failed_nb.cells if c.get("execution_count") == 3)
    assert failed_nb.metadata["papermill"]["exception"] is True
    assert failed_nb.metadata["demonoise"]["run"]["key"] is None
    with pytest.raises(ReportError, match="broken.failed.ipynb.*failed during execution.*ValueError"):
        assemble([kept], title="x")

    assert read_metrics(tmp_path / "good_a.ipynb")["V"] == 2.0
    assert read_metrics(tmp_path / "good_b.ipynb")["region"] == "FR10"
    assert no_tmp_files(tmp_path) == []


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A notebook that only echoes its parameter (fast: no imports)."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    params = new_code_cell('region = "BE10"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, new_code_cell("print(region)")]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


def test_up_to_date_outputs_are_skipped(tmp_path, tiny):
    job = Job(tiny, tmp_path / "x.ipynb", {"region": "BE10"}, data_fingerprint="data-v1")
    first = run_jobs([job], workers=1, progress=False)
    mtime = job.output.stat().st_mtime_ns
    again = run_jobs([job], workers=1, progress=False)
    assert first[0].status == "ok" and again[0].status == "skipped"
    assert again[0].key == first[0].key and job.output.stat().st_mtime_ns == mtime

    new_data = run_jobs([replace(job, data_fingerprint="data-v2")], workers=1, progress=False)
    assert new_data[0].status == "ok" and new_data[0].key != first[0].key
    changed = Job(tiny, tmp_path / "x.ipynb", {"region": "BE21"}, data_fingerprint="data-v2")
    assert run_jobs([changed], workers=1, progress=False)[0].status == "ok"
    assert nbformat.read(job.output, 4).metadata.papermill.parameters == {"region": "BE21"}


def test_missing_kernelspec_falls_back_to_the_current_interpreter(tmp_path):
    with pytest.warns(RuntimeWarning, match="kernelspec 'dn-no-such-kernel' not found") as caught:
        batch = run_jobs(
            [Job(GOOD, tmp_path / "fb.ipynb", {"V": 4.0})],
            workers=1,
            progress=False,
            options=Options("dn-no-such-kernel"),
        )
    assert batch[0].status == "ok"
    note = next(str(w.message) for w in caught if "dn-no-such-kernel" in str(w.message))
    assert sys.executable in note and "ipykernel install --sys-prefix --name dn-no-such-kernel" in note
    assert read_metrics(tmp_path / "fb.ipynb")["sd"] == pytest.approx(2.0)


def test_job_validation(tmp_path):
    with pytest.raises(ParameterError, match="not JSON-serialisable"):
        Job(GOOD, tmp_path / "a.ipynb", {"when": object()})
    with pytest.raises(ParameterError, match="identifier"):
        Job(GOOD, tmp_path / "a.ipynb", {"not valid": 1})
    with pytest.raises(ParameterError, match="overwrite the input"):
        Job(GOOD, GOOD)
    with pytest.raises(ParameterError, match="same output"):
        run_jobs([Job(GOOD, tmp_path / "a.ipynb"), Job(BROKEN, tmp_path / "a.ipynb")], progress=False)
    missing = run_jobs([Job(tmp_path / "nope.ipynb", tmp_path / "o.ipynb")], workers=1, progress=False)
    assert missing[0].status == "failed" and "cannot read input notebook" in missing[0].error


# ---------------------------------------------------------------------- Ctrl-C
_INTERRUPT_SCRIPT = textwrap.dedent(
    """
    import signal
    import sys
    from pathlib import Path
    from demonoise.report.batch.execute import Job, run_jobs

    if __name__ == "__main__":
        # Ctrl-C as in a terminal: a test run started in the background of a script (`make
        # test &`) has SIGINT and SIGQUIT ignored, and its children would inherit that
        signal.signal(signal.SIGINT, signal.default_int_handler)
        nb, out, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
        jobs = [Job(nb, out / f"slow{i}.ipynb", {"marker": str(out / f"started{i}.json")})
                for i in range(workers)]
        run_jobs(jobs, workers=workers, progress=False)
        print("finished without interruption")
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_leaves_no_partial_output_and_no_kernel(tmp_path, workers):
    slow = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    params = new_code_cell('marker = "unused"')
    params.metadata["tags"] = ["parameters"]
    slow.cells = [
        params,
        new_code_cell(
            "import json, os, time\n"
            "json.dump({'pid': os.getpid()}, open(marker + '.part', 'w'))\n"
            "os.replace(marker + '.part', marker)\n"
            "time.sleep(120)"
        ),
    ]
    nb_path = tmp_path / "slow.ipynb"
    nbformat.write(slow, nb_path)
    out = tmp_path / "out"
    out.mkdir()
    previous = out / "slow0.ipynb"
    previous.write_text("previous output\n")
    script = tmp_path / "interrupt_me.py"
    script.write_text(_INTERRUPT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(LIB), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(nb_path), str(out), str(workers)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    markers = [out / f"started{i}.json" for i in range(workers)]
    deadline = time.monotonic() + 60
    while not all(m.exists() for m in markers):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "notebooks did not start"
        time.sleep(0.1)
    kernel_pids = [json.loads(m.read_text())["pid"] for m in markers]
    assert all(_is_running(p) for p in kernel_pids)

    status = Path(f"/proc/{proc.pid}/status")
    signals = {
        k: v.strip() for k, v in (ln.split(":", 1) for ln in status.read_text().splitlines()) if k.startswith("Sig")
    }
    proc.send_signal(signal.SIGINT)  # to the runner process only, as a terminal would
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # say what the runner did with SIGINT, leave nothing running
        proc.kill()
        for p in kernel_pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        pytest.fail(f"the runner did not stop within 60 s of SIGINT; its signal masks before it: {signals}")
    assert proc.returncode != 0, stdout
    assert b"KeyboardInterrupt" in stderr
    assert b"finished without interruption" not in stdout
    assert previous.read_text() == "previous output\n"  # untouched
    assert not (out / "slow1.ipynb").exists()
    assert no_tmp_files(out) == []
    deadline = time.monotonic() + 10
    while any(_is_running(p) for p in kernel_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_is_running(p) for p in kernel_pids), "a kernel survived the interrupt"


def test_a_task_carries_a_directory_it_reads_and_the_notebook_reads_the_copy(tmp_path):
    """A notebook that reads a file and a directory of tables (the decision tables of a
    report): the task carries both as bytes; where it runs, the parameters point to copies
    with the same contents, not to this machine's paths."""
    from demonoise.report.batch.execute import _localised, _task_of

    table = tmp_path / "results.parquet"
    table.write_bytes(b"table bytes")
    tables = tmp_path / "decision"
    tables.mkdir()
    (tables / "report.json").write_text('{"a": 1}', encoding="utf-8")
    (tables / "decision.parquet").write_bytes(b"\x00\x01 decision")
    nb = tmp_path / "in.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), nb)
    job = Job(
        nb,
        tmp_path / "out.ipynb",
        {"results_path": str(table), "decision_path": str(tables), "country": "BE"},
        files=(table, tables),
    )
    task = _task_of(job)
    assert task["files"][str(tables)] == {"decision.parquet": b"\x00\x01 decision", "report.json": b'{"a": 1}'}
    elsewhere = tmp_path / "worker"
    elsewhere.mkdir()
    p = _localised(job.parameters, task["files"], elsewhere)
    assert p["country"] == "BE"
    assert Path(p["results_path"]).parent == elsewhere and Path(p["results_path"]).read_bytes() == b"table bytes"
    copy = Path(p["decision_path"])
    assert copy.parent == elsewhere and copy.is_dir() and copy != tables
    assert {m.name: m.read_bytes() for m in copy.iterdir()} == task["files"][str(tables)]


def test_cells_with_a_skipped_tag_are_neither_run_nor_kept(tmp_path, tiny):
    """The runs of an indicator notebook after the first setting's leave out its
    chapter-only cells: a cell tagged ``chapter`` that would fail is not run, the other
    cells are, and the run key tells the two kinds of run apart."""
    nb = nbformat.read(tiny, as_version=4)
    bad = new_code_cell('raise RuntimeError("a chapter cell ran")')
    bad.metadata["tags"] = ["chapter"]
    nb.cells.insert(1, bad)
    src = tmp_path / "chaptered.ipynb"
    nbformat.write(nb, src)

    every = run_jobs([Job(src, tmp_path / "all.ipynb", {"region": "BE10"})], workers=1, progress=False)
    assert every[0].status == "failed" and "a chapter cell ran" in str(every[0].error)

    job = Job(src, tmp_path / "later.ipynb", {"region": "BE10"}, skip_tags=("chapter",))
    res = run_jobs([job], workers=1, progress=False)
    assert res[0].status == "ok", res[0].error
    out = nbformat.read(job.output, as_version=4)
    assert not [c for c in out.cells if "chapter" in c.metadata.get("tags", [])]
    printed = [o.get("text", "") for c in out.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert "BE10\n" in printed
    from demonoise.report.batch.execute import job_key

    assert job_key(job, library="x") != job_key(Job(src, tmp_path / "later.ipynb", {"region": "BE10"}), library="x")
    # one tag given as a bare string is that tag, not its letters
    assert Job(src, tmp_path / "one.ipynb", skip_tags="chapter").skip_tags == ("chapter",)
