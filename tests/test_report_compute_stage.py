"""The batch's compute stage: a country computed as a task on a worker (its tables
returned as bytes and stored here) equals the same country computed in this process,
and a stored country is reused."""

from __future__ import annotations

import pandas as pd

from demonoise.analysis.stored import read_decision
from demonoise.report.batch import stages as B
from demonoise.report.batch.params import parse_params

PARAMS = {
    "datasets": {"ess-2023": ["LU"]},
    "noise": [{"V": 1}, {"ptable": "v01"}],
    "mc": 40,
    "seed": 7,
}


def _same_decision(a, b):
    for name in ("decision", "calibration", "error_bands", "recommended"):
        x, y = getattr(read_decision(a), name), getattr(read_decision(b), name)
        pd.testing.assert_frame_equal(x, y)


def test_a_country_computed_as_a_task_equals_one_computed_here(tmp_path):
    params = parse_params(PARAMS)
    report = B.Report("ess-2023", "LU")
    here = B._tables(report, params, tmp_path / "here", workers=1)
    stored = B._store_computed(B.compute_task(report, params), tmp_path / "there")
    assert stored.results.name == here.results.name and stored.decision.name == here.decision.name
    pd.testing.assert_frame_equal(pd.read_parquet(stored.results), pd.read_parquet(here.results))
    _same_decision(stored.decision, here.decision)
    # nothing half-written is left beside the stored tables
    assert sorted(p.name for p in stored.results.parent.iterdir()) == sorted(
        [stored.results.name, stored.results.with_suffix(".json").name, stored.decision.name]
    )
    again = B._tables(report, params, tmp_path / "there", stored=True)
    assert again is not None and again.results == stored.results and again.decision == stored.decision
    assert B._tables(report, parse_params({**PARAMS, "seed": 8}), tmp_path / "there", stored=True) is None
