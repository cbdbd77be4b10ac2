"""The batch links the Europe overview and the extra notebooks from the index; a failing
extra is recorded there and makes the batch fail, the rest stands. Their notebooks run in
the execute stage with the countries' (first, the overview's being the longest), and
their documents render in the render stage with the countries' reports."""

from __future__ import annotations

import re

import pytest

from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import run_reports


@pytest.mark.slow
def test_overview_and_extras_in_the_index(tmp_path, monkeypatch):
    from demonoise.runtime import cluster as C

    taken = []  # what the batch fans out to the workers, stage by stage: (label, task names)
    real_run_each = C.Cluster.run_each

    def recording_run_each(self, fn, items, *, names=None, label="task", **kw):
        taken.append((label, names))  # read at the end: the render stage names its documents as it goes
        return real_run_each(self, fn, items, names=names, label=label, **kw)

    monkeypatch.setattr(C.Cluster, "run_each", recording_run_each)
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
    # the execute stage: the overview's and the extras' notebooks first, then the country's;
    # the render stage: the documents of all three (the what-if's notebook failed)
    stages = {label: list(names) for label, names in taken}
    assert [label for label, _ in taken] == ["notebook", "render"], taken
    assert stages["notebook"][:3] == ["overview", "teaching-mc200", "whatif-XX99"], stages
    assert len(stages["notebook"]) == 5 and stages["notebook"][3].startswith("be-2023/BE/")
    assert sorted(stages["render"]) == sorted(["BE (be-2023)", "Europe overview: be-2023", "teaching notebook"])
    # run again: every document is up to date (its stamp) and links the same files; the what-if still fails
    again = run_reports(params, tmp_path, log=None, progress=False)
    assert [o.status for o in again.outcomes.values()] == ["skipped"]
    assert [o.files for o in again.outcomes.values()] == [o.files for o in rep.outcomes.values()]
    assert {r.name: r.status for r in again.further} == {**{n: "skipped" for n in rows}, "whatif notebook": "failed"}
