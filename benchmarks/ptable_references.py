"""Deviations of the noise models and p-table builder from their references.

Run: PYTHONPATH=lib:tests .venv/bin/python benchmarks/ptable_references.py

Prints the largest per-probability deviation of ``build_ptable`` from the R package
ptable's outputs (tests/data/ptables) and from Eurostat's census table v01, the agreement
with an independent SLSQP solution, the constraint residuals of unrounded tables, the
exact-variance error of ``GenericNoise``, and timings.
"""

from __future__ import annotations

import csv
import time
import warnings
from pathlib import Path

import numpy as np

from demonoise.analysis.ptables import load_ptable
from demonoise.noise.models import GenericNoise
from demonoise.noise.ptable import VarianceNotReachedWarning, build_ptable
from test_ptable import _slsqp_row

ROOT = Path(__file__).resolve().parents[1]

warnings.simplefilter("ignore", VarianceNotReachedWarning)


def r_ref(name):
    out = {}
    with open(ROOT / "tests" / "data" / "ptables" / name, newline="") as fh:
        for row in csv.DictReader(fh):
            out[(int(row["i"]), int(row["v"]))] = float(row["p"])
    return out


def max_dev(table, ref):
    d = 0.0
    for (i, v), p in ref.items():
        tr = table.transition(i)
        d = max(d, abs(float(tr.p[list(tr.v).index(v)]) - p))
    return d


for D, V, name in ((2, 1, "rptable_D2_V1_js0.csv"), (3, 0.5, "rptable_D3_V0.5_js0.csv")):
    ref = r_ref(name)
    print(
        f"R ptable D={D} V={V}: max |dp| rounded {max_dev(build_ptable(D, V), ref):.3g}, "
        f"unrounded {max_dev(build_ptable(D, V, ndigits=None), ref):.3g}"
    )

v01 = load_ptable("v01")
ref = {(int(i), int(v)): float(p) for i, v, p in zip(v01.i, v01.v, v01.p, strict=True) if i > 0}
print(f"Eurostat v01 vs build_ptable(3, 1): max |dp| {max_dev(build_ptable(3, 1), ref):.3g}")

worst_slsqp = worst_con = 0.0
for D, V, js in ((2, 1, 0), (3, 0.5, 0), (3, 1, 0), (4, 2, 0), (3, 1.08, 1), (5, 3, 2), (8, 2, 0)):
    t = build_ptable(D, V, js, ndigits=None)
    for i in range(1, t.I + 1):
        tr = t.transition(i)
        v = tr.v.astype(float)
        worst_con = max(worst_con, abs(tr.p.sum() - 1), abs(tr.p @ v), max(0.0, tr.p @ v**2 - V))
        if (D, V, js) != (8, 2, 0):
            _, p = _slsqp_row(i, D, V, js)
            worst_slsqp = max(worst_slsqp, float(np.max(np.abs(p - tr.p))))
print(
    f"independent SLSQP vs interior point: max |dp| {worst_slsqp:.3g}; constraint residual (unrounded) {worst_con:.3g}"
)

errs = [abs(GenericNoise(V, D).exact_variance() - V) for V in (0.1, 0.25, 0.5, 1, 2, 3, 5, 10) for D in (None, 6)]
print(f"GenericNoise |exact variance - V| max over V in 0.1..10, D in (None, 6): {max(errs):.3g}")

t0 = time.perf_counter()
for _ in range(5):
    build_ptable(5, 3, 2)
print(f"build_ptable(5, 3, 2): {(time.perf_counter() - t0) / 5 * 1000:.0f} ms")
t0 = time.perf_counter()
load_ptable("v01")
print(f"load_ptable('v01'): {(time.perf_counter() - t0) * 1000:.0f} ms")
