"""The batch links the Europe overview and the extra notebooks from the index; a failing
extra is recorded there and makes the batch fail, the rest stands."""

from __future__ import annotations

import re

import pytest

from demonoise.report.batch import parse_params, run_reports


@pytest.mark.slow
def test_overview_and_extras_in_the_index(tmp_path):
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
