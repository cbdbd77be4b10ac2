"""The fast subset of the hostile-case replay (benchmarks/hostile.py), and checks that its
runner does catch what it claims to: a traceback, a hang, a leftover process (even one
that left the session), a leftover temporary file, a half-written output."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_hostile():
    spec = importlib.util.spec_from_file_location("hostile_cases", ROOT / "benchmarks" / "hostile.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return mod


hostile = _load_hostile()


def test_table_has_the_classes_and_a_fast_subset():
    cases = hostile.select()
    assert len(cases) >= 60
    assert {c.cls for c in cases} >= {
        "counts",
        "exposure",
        "codes",
        "files",
        "json",
        "options",
        "limits",
        "outputs",
        "contract",
        "control",
    }
    fast = hostile.select(fast=True)
    assert 12 <= len(fast) <= 20 and len({c.cls for c in fast}) >= 7


@pytest.mark.slow
def test_fast_hostile_cases_end_cleanly():
    outcomes = hostile.run_all(hostile.select(fast=True), jobs=2)
    failed = [f"{o.case.id}: {'; '.join(o.problems)} | {o.stderr.strip()[-300:]}" for o in outcomes if not o.ok]
    assert not failed, "\n".join(failed)


def _one(case, tmp_path):
    return hostile.run_case(case, tmp_path)


@pytest.mark.parametrize(
    "python,needle",
    [
        ("raise KeyError(0)", "traceback"),
        ("import time\ntime.sleep(30)", "hang"),
        (
            "import subprocess, sys\nsubprocess.Popen(['sleep', '20'], start_new_session=True)\nprint('done')",
            "left behind",
        ),
        ("open('{dir}/.r.csv.dn-tmp-x.csv', 'w').write('x')\nprint('done')", "temporary file"),
        ("open('{out}/r.csv', 'w').write('half')\nraise SystemExit(2)", "output left after a failure"),
        ("import sys\nsys.exit(1)", "exit 1 (allowed"),
    ],
)
def test_runner_catches_what_it_claims_to(tmp_path, python, needle):
    case = hostile.Case("probe", "runner", 0, "done", python=python, timeout=3.0)
    t0 = time.monotonic()
    o = _one(case, tmp_path)
    assert any(needle in p for p in o.problems), o.problems
    assert time.monotonic() - t0 < 20
    assert hostile._wait_gone(o.token, 5.0) == []  # whatever the case left was ended (SIGKILL lands asynchronously)
