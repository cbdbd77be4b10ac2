"""The local cluster is started only for work that fans out, and gives the numbers of a
run in one process.

* an analytic ``compute`` (no ``--mc``) starts no cluster, whatever ``--workers`` says;
* ``compute --mc`` on a local cluster of 2 workers gives exactly the Monte Carlo columns
  of ``--workers 1`` (everything in this process) with the same seed: blocks are seeded
  by ``SeedSequence.spawn`` and summed in block order, whoever runs them;
* the local cluster's processes end with the command (none left after it returns);
* its workers run without the nanny's malloc trim threshold and the statistical profiler.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import dask
import pandas as pd
import pytest

from demonoise.cli import main
from demonoise.runtime import cluster as cluster_mod
from process_helpers import children_of

ARGS = ["compute", "--dataset", "be-2023", "--V", "1", "--indicators", "e", "tfr", "--seed", "11"]


@pytest.mark.slow
def test_an_analytic_compute_starts_no_cluster(monkeypatch, tmp_path):
    def refuse(self):
        raise AssertionError("a cluster was started for an analytic run")

    monkeypatch.setattr(cluster_mod.Cluster, "_start_local", refuse)
    out = tmp_path / "r.parquet"
    before = set(children_of(os.getpid()))
    assert main([*ARGS, "--workers", "2", "--out", str(out)]) == 0
    df = pd.read_parquet(out)
    assert len(df) > 1000 and not any(c.startswith("mc_") for c in df.columns)
    assert set(children_of(os.getpid())) <= before


def _mc(path: Path) -> pd.DataFrame:
    df = pd.read_parquet(path)
    cols = [c for c in df.columns if c.startswith(("mc_", "z_"))]
    assert "mc_sd_tot" in cols and df["mc_sd_tot"].notna().sum() > 100
    return df[cols]


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(180)
def test_the_local_cluster_gives_the_numbers_of_one_process(monkeypatch, tmp_path):
    started = []
    real = cluster_mod.Cluster._start_local

    def spy(self):
        started.append(self.workers)
        return real(self)

    monkeypatch.setattr(cluster_mod.Cluster, "_start_local", spy)
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    before = set(children_of(os.getpid()))
    assert main([*ARGS, "--mc", "1500", "--workers", "1", "--out", str(one)]) == 0
    assert started == []  # --workers 1: no cluster
    assert main([*ARGS, "--mc", "1500", "--workers", "2", "--out", str(two)]) == 0
    assert started == [2]
    pd.testing.assert_frame_equal(_mc(two), _mc(one))
    assert set(children_of(os.getpid())) <= before  # the workers ended with the run


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(180)
def test_a_fan_out_takes_its_items_lazily_with_a_bounded_window():
    """Items are pulled from a generator as tasks complete, never more than the window
    ahead of the results (a Monte Carlo of 10^9 replicates is not submitted at once)."""
    import operator

    pulled, most_ahead, got = [0], [0], []

    def items():
        for i in range(60):
            pulled[0] += 1
            yield (i,)

    with cluster_mod.Cluster(workers=2) as c:
        window = c.window()
        # the local workers run without the nanny's malloc trim threshold (it made every
        # array above 128 kB a fresh mmap) and without the statistical profiler
        client = c.client()
        assert set(client.run(os.getenv, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
        profiling = functools.partial(dask.config.get, "distributed.worker.profile.enabled")
        assert set(client.run(profiling).values()) == {False}
        # Dask's loggers here stay silent, also after distributed's import configured them (an
        # interrupted command printed a worker's closed connection about one time in ten)
        assert all(logging.getLogger(n).getEffectiveLevel() > logging.CRITICAL for n in ("distributed", "tornado"))
        for i, value, err in c.run_each(operator.neg, items(), label="lazy"):  # importable on a worker
            assert err is None
            got.append((i, value))
            most_ahead[0] = max(most_ahead[0], pulled[0] - len(got))
    assert sorted(got) == [(i, -i) for i in range(60)]
    assert window == 2 * cluster_mod.WINDOW_PER_WORKER
    assert 0 < most_ahead[0] <= window


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(180)
def test_successive_fan_outs_on_one_cluster_never_share_inputs_or_tasks():
    """Each fan-out (the Monte Carlo of one noise setting) gets its own inputs and tasks.
    Its shared inputs are a dict (``{"plan": ...}``), which ``scatter`` sent value by value
    under the dict's own keys: every setting's plan was the key "plan", so the release of
    one setting's plan dropped the next one's ("cancelled for reason: lost dependencies",
    about two report runs in three with three settings and one block each) or let it run
    on the previous plan. Every fan-out numbers its tasks from 0: their keys differ still."""
    import operator

    with cluster_mod.Cluster(workers=2) as c:
        scheduler = c.client().cluster.scheduler
        for k in range(40):
            got = list(c.run_each(operator.getitem, [("plan",)], shared={"plan": k}, label="mc-block"))
            assert got == [(0, k, None)]
        assert "plan" not in scheduler.tasks


@pytest.mark.slow
@pytest.mark.dask
@pytest.mark.timeout(240)
def test_three_settings_of_one_block_each_on_a_started_cluster_complete_every_time():
    """The report's failing configuration (LU of ess-2023, V = 1, V = 5 and p-table v01,
    100 replicates: one Monte Carlo block per setting on the batch's started cluster), five
    times, each equal to the same computation in this process; then a stress variant:
    several countries, six settings of one small block each."""
    import demonoise as dn

    ess = dn.load("ess-2023")
    lu = ess.select(country="LU")
    settings = dn.noise_settings(V=[1, 5], ptables=["v01"])
    kw = {"indicators": ("e", "tfr"), "seed": 1}
    alone = _mc_frame(dn.compute(lu, settings, mc=100, workers=1, **kw))
    with cluster_mod.Cluster(workers=2) as c:
        c.client()  # started, as in a report batch: a single block then goes to it too
        for _ in range(5):
            pd.testing.assert_frame_equal(_mc_frame(dn.compute(lu, settings, mc=100, cluster=c, **kw)), alone)
        many = dn.noise_settings(V=[0.5, 1, 2, 5], ptables=["v01", "v03"])
        for country in ("MT", "EE", "CY"):
            table = dn.compute(ess.select(country=country), many, mc=12, cluster=c, **kw)
            assert table["mc_sd_tot"].notna().sum() > 0


def _mc_frame(df: pd.DataFrame) -> pd.DataFrame:
    return df[[c for c in df.columns if c.startswith("mc_")]].reset_index(drop=True)
