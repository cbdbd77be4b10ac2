"""The garbage collector during one large task (demonoise.core.collector): raised thresholds
inside, the previous ones back afterwards, and fewer full collections -- counted by the
interpreter itself (gc.callbacks) -- while a large graph of long-lived objects is built;
the compute task runs under them (the PDF, typeset by Typst, no longer needs them)."""

from __future__ import annotations

import gc

import pytest

from demonoise.core.collector import TASK_THRESHOLDS, fewer_collections


def _full_collections_while_building(n: int) -> int:
    """Build ``n`` small container objects kept to the end, as a layout engine keeps its
    boxes; return how many generation-2 collections the interpreter ran meanwhile."""
    full = []

    def count(phase, info):
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    kept = []
    gc.callbacks.append(count)
    try:
        for i in range(n):
            kept.append({"box": i, "children": []})
    finally:
        gc.callbacks.remove(count)
    return len(full)


def test_thresholds_raised_inside_and_restored_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(ZeroDivisionError):
        with fewer_collections():
            assert gc.get_threshold() == TASK_THRESHOLDS
            raise ZeroDivisionError("inside the task")
    assert gc.get_threshold() == before


def test_a_switched_off_collector_stays_off():
    gc.disable()
    try:
        with fewer_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_no_full_collection_while_a_large_graph_is_built():
    previous = gc.get_threshold()
    gc.collect()
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    try:
        ordinary = _full_collections_while_building(400_000)
        gc.collect()
        with fewer_collections():
            fewer = _full_collections_while_building(400_000)
    finally:
        gc.set_threshold(*previous)
    assert ordinary >= 1, "the default thresholds should have run full collections"
    assert fewer == 0


def _record_threshold(monkeypatch, owner, name, seen):
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        seen.append(gc.get_threshold())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)


def test_compute_task_runs_under_the_raised_thresholds(monkeypatch):
    from demonoise.report import batch as B

    seen = []

    def stop(*args, **kwargs):
        seen.append(gc.get_threshold())
        raise RuntimeError("stopped here")

    monkeypatch.setattr(B, "_compute_one", stop)
    before = gc.get_threshold()
    with pytest.raises(RuntimeError, match="stopped here"):
        B.compute_task(B.Report("ess-2023", "LU"), None)
    assert seen == [TASK_THRESHOLDS]
    assert gc.get_threshold() == before
