"""The Monte Carlo of ``compute`` and ``compare`` sized before it runs and followed while
it runs (issue: work bounded in time): an estimate from a probe block, a refusal in one
line above the limit without ``--yes``, a progress line every few seconds on a stderr that
is not a terminal; and the probe leaves the results as they are."""

from __future__ import annotations

import re

import numpy as np

from demonoise import cli
from demonoise.io.datasets import load
from demonoise.noise.models import GenericNoise
from demonoise.runtime import budget
from demonoise.uncertainty.montecarlo import PROBE_FROM_BLOCKS, monte_carlo
from demonoise.uncertainty.propagation import linearise

COMPUTE = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "--workers", "1"]


def test_a_large_monte_carlo_is_refused_in_one_line_without_yes(tmp_path, capsys, monkeypatch):
    """The limit lowered to a millisecond: refused before any block runs (exit 2, one line
    with the settings, replicates, regions, the estimate and --yes), nothing written;
    --yes runs it."""
    monkeypatch.setattr(budget, "MAX_SECONDS", 1e-3)
    out = tmp_path / "r.csv"
    assert cli.main([*COMPUTE, "--V", "1", "5", "--mc", "2000", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("demonoise compute: error: the Monte Carlo is large: "), err
    assert re.search(r"2 noise setting\(s\) x 2000 replicates over 12 regions, estimated \d+ s on 1 process", err[0])
    assert "pass --yes to run it" in err[0] and not out.exists() and list(tmp_path.iterdir()) == []
    assert cli.main([*COMPUTE, "--mc", "2000", "--yes", "--out", str(out)]) == 0
    assert out.stat().st_size > 0


def test_compare_is_sized_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(budget, "MAX_SECONDS", 1e-3)
    args = ["compare", "--dataset", "be-2023", "--ptable", "v01", "--mc", "1000", "--workers", "1"]
    assert cli.main([*args, "--out", str(tmp_path / "c.csv")]) == 2
    err = capsys.readouterr().err
    assert "2 noise setting(s) x 1000 replicates over 12 regions" in err and "--yes" in err


def test_progress_lines_without_a_terminal(tmp_path, capsys, monkeypatch):
    """stderr captured (not a terminal): the estimate, then one line per block when the
    interval is 0, each naming the run, replicates done and time; the last says all done."""
    monkeypatch.setattr(budget, "EVERY", 0.0)
    assert cli.main([*COMPUTE, "--mc", "2000", "--out", str(tmp_path / "r.csv")]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("demonoise compute: Monte Carlo 1 of 1 (generic V=1): ") for line in lines), lines
    assert re.search(r": 2000 replicates over 12 regions, estimated \d+ s on 1 process", lines[0]), lines[0]
    done = [int(m.group(1)) for line in lines[1:] if (m := re.search(r": (\d+) of 2000 replicates, ", line))]
    assert len(done) >= 2 and done == sorted(done) and done[-1] == 2000
    assert "left" in lines[2] and "left" not in lines[-1]  # the rate is measured from the first block on


def test_the_probe_leaves_the_results_unchanged(data_dir):
    """A progress object with start() makes monte_carlo probe first; every statistic is the
    same as without it (the probe has seeds of its own)."""
    lz = linearise(load("be-2023").select(["BE10", "BE34"]), indicators=("e",), e_ages=[0])
    kw = dict(n=400, seed=3, indicators=("e",), quantiles=None, workers=1, memory_limit=4e5)
    calls = []

    class Probe:
        def start(self, n, seconds):
            calls.append((n, seconds))

        def __call__(self, done):
            calls.append(done)

    a = monte_carlo(lz, GenericNoise(1.0), progress=Probe(), **kw)
    b = monte_carlo(lz, GenericNoise(1.0), **kw)
    assert a.block * PROBE_FROM_BLOCKS <= 400
    assert calls[0][0] == 400 and calls[0][1] > 0 and calls[-1] == 400
    for key in a.stats:
        np.testing.assert_array_equal(a.stats[key]["sd"], b.stats[key]["sd"])


def test_workers_above_the_cores_warn_and_are_bounded_by_memory(tmp_path, capsys, monkeypatch):
    """--workers 64 on 2 cores: one warning line, and the run goes on; with 1 GB of memory
    left the local cluster gets 4 workers (250 MB each), said in one line."""
    import os

    from demonoise.runtime import resources

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert cli.main([*COMPUTE[:-2], "--workers", "64", "--out", str(tmp_path / "r.csv")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "demonoise compute: warning: --workers 64 is more than the 2 cores of this machine: the workers share them, "
        "which makes the run slower, not faster (use at most 2)"
    ]
    monkeypatch.setattr(resources, "available_memory", lambda: (1.0e9, "left by the test"))
    assert budget.local_workers(64, "demonoise compute") == 4 and budget.local_workers(2, "demonoise compute") == 2
    err = capsys.readouterr().err
    said = "--workers 64 lowered to 4: 1.0 GB of memory is left by the test, and a worker is counted for 250.0 MB"
    assert said in err
