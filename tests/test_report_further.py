"""The batch links the Europe overview and the extra notebooks from the index; a failing
extra is recorded there and makes the batch fail, the rest stands. Their notebooks run in
the same flow of tasks as the countries' (first, the overview's being the longest), and
their documents render in it with the countries' reports."""

from __future__ import annotations

import re

import pytest

from demonoise.report.batch import parse_params, run_reports


@pytest.mark.slow
def test_overview_and_extras_in_the_index(tmp_path, monkeypatch):
    from demonoise.runtime import cluster as C

    taken = []  # what the batch's flow submits, in order: (kind, name)
    real_next = C.Flow._next

    def recording_next(self):
        nxt = real_next(self)
        if nxt is not None and self._label == "batch":
            kind, obj = nxt[3][0], nxt[3][1]
            taken.append((kind, getattr(obj, "name", None) or obj.label))  # a Run or Further, or a Report
        return nxt

    monkeypatch.setattr(C.Flow, "_next", recording_next)
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
    # one flow of tasks: the overview's and the extras' notebooks first, then the country's,
    # and the documents of all three rendered in it (the what-if's notebook failed)
    kinds = [k for k, _ in taken]
    assert [n for k, n in taken if k == "further"][:3] == [
        "Europe overview: be-2023",
        "teaching notebook",
        "whatif notebook",
    ]
    assert kinds[:3] == ["further"] * 3 and kinds.count("executed") == 2 and kinds[3] == "executed"
    assert sorted(n for k, n in taken if k in ("rendered", "further_rendered")) == sorted(
        ["BE (be-2023)", "Europe overview: be-2023", "teaching notebook"]
    ), taken
