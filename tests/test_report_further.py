"""The batch links the Europe overview and the extra notebooks from the index; a failing
extra is recorded there and makes the batch fail, the rest stands. Their notebooks run in
the same fan-out as the countries' (first, the overview's being the longest), and their
documents render in the same fan-out as the countries' reports."""

from __future__ import annotations

import re

import pytest

from demonoise.report.batch import parse_params, run_reports


@pytest.mark.slow
def test_overview_and_extras_in_the_index(tmp_path, monkeypatch):
    from demonoise.core import cluster as C
    from demonoise.report import run as R

    runs, renders = [], []
    run_jobs, each = R.run_jobs, C.Cluster.each

    def recording_run_jobs(jobs, **kw):
        jobs = list(jobs)
        runs.append([j.name for j in jobs])
        return run_jobs(jobs, **kw)

    def recording_each(self, fn, items, *a, **kw):
        if kw.get("label") == "render":
            renders.append(list(kw.get("names") or []))
        return each(self, fn, items, *a, **kw)

    monkeypatch.setattr(R, "run_jobs", recording_run_jobs)
    monkeypatch.setattr(C.Cluster, "each", recording_each)
    params = parse_params(
        {
            "datasets": {"be-2023": ["BE"]},
            "noise": [{"V": 1}],
            "mc": 0,
            "indicators": ["tfr"],
            "pdf": False,
            "overview": {"dataset": "be-2023"},
            "extras": {"teaching": {"mc": 200}, "whatif": {"region": "XX99"}},
        }
    )
    rep = run_reports(params, tmp_path, log=None, progress=False)
    rows = {r.name: r for r in rep.further}
    assert rows["Europe overview: be-2023"].status == "ok" and rows["Europe overview: be-2023"].html.is_file()
    assert rows["teaching notebook"].status == "ok" and rows["teaching notebook"].html.is_file()
    assert rows["whatif notebook"].status == "failed" and "XX99" in rows["whatif notebook"].error
    assert not rep.ok and all(o.status == "ok" for o in rep.outcomes.values())
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert 'href="overview.html"' in index and 'href="extras/teaching-mc200.html"' in index
    assert re.search(r"whatif notebook.*failed", index, re.S)
    assert not list(tmp_path.rglob("*.part")) and not list(tmp_path.rglob(".*dn-tmp*"))
    # one fan-out of notebooks: the overview's and the extras' first, then the country's
    assert len(runs) == 1, runs
    assert runs[0][:3] == ["overview", "teaching-mc200", "whatif-XX99"]
    assert any("tfr" in n for n in runs[0][3:]) and any("summary" in n for n in runs[0][3:]), runs
    # one fan-out of renderings: the country's report with the overview and teaching documents
    assert len(renders) == 1 and sorted(renders[0]) == sorted(
        ["BE (be-2023)", "Europe overview: be-2023", "teaching notebook"]
    )
