"""p-tables: Eurostat and R ptable reference tables, construction, files, lookup, cell keys.

Independent truths used here: Eurostat's census test tables (moments computed by hand
with plain Python from the files), the two tables written by the R package ptable
1.0.0 (tests/data/ptables, provenance in tests/data/README.md), an independent SLSQP
solution of the same maximum-entropy problem (scipy), and exact integer arithmetic for
cell keys.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from demonoise.analysis.ptables import load_ptable, read_ptable, resolve_ptable, write_ptable
from demonoise.core.errors import DataError, FormatError, ParameterError
from demonoise.io.ptable_files import embedded_ptable_path, read_transition_ptable, sniff_ptable_format
from demonoise.noise.cellkey import cell_keys, perturb_table
from demonoise.noise.ptable import PTable, VarianceNotReachedWarning, build_ptable

REF = Path(__file__).parent / "data" / "ptables"


# ------------------------------------------------------------------ plain-Python helpers
def _eurostat_by_hand(name: str) -> dict[int, dict[int, int]]:
    """{pcv: {noise: number of keys}} read with the csv module (no project code)."""
    path = embedded_ptable_path(name)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    rows = csv.reader(io.StringIO(raw.decode()), delimiter=";")
    header = next(rows)
    assert [h.strip('"') for h in header] == ["pcv", "ckey", "pvalue"]
    out: dict[int, Counter] = defaultdict(Counter)
    for pcv, _ckey, pv in rows:
        out[int(pcv)][int(pv)] += 1
    return out


def _moments_by_hand(freq: dict[int, int]) -> tuple[float, float]:
    K = sum(freq.values())
    mean = sum(v * n for v, n in freq.items()) / K
    var = sum((v - mean) ** 2 * n for v, n in freq.items()) / K
    return mean, var


def _r_reference(name: str) -> dict[int, dict[int, float]]:
    """{i: {v: p}} from an R ptable output, csv module only."""
    out: dict[int, dict[int, float]] = defaultdict(dict)
    with open(REF / name, newline="") as fh:
        for row in csv.DictReader(fh):
            out[int(row["i"])][int(row["v"])] = float(row["p"])
    return out


def _slsqp_row(i: int, D: int, V: float, js: int = 0, mono: bool = True, variance_equality: bool = False):
    """The row problem of ptable solved independently with scipy's SLSQP (as ptable uses NLopt's SLSQP)."""
    from scipy.optimize import minimize

    j = [x for x in range(max(i - D, 0), i + D + 1) if not (1 <= x <= js)]
    v = np.array([x - i for x in j], dtype=float)
    n = len(v)
    cons = [
        {"type": "eq", "fun": lambda p: p.sum() - 1, "jac": lambda p: np.ones(n)},
        {"type": "eq", "fun": lambda p: p @ v, "jac": lambda p: v},
    ]
    var_con = {"fun": lambda p: V - p @ v**2, "jac": lambda p: -(v**2)}
    cons.append({"type": "eq" if variance_equality else "ineq", **var_con})
    if mono and 0 in v:
        z = int(np.flatnonzero(v == 0)[0])
        for k in range(z):
            g = np.zeros(n)
            g[k], g[k + 1] = -1.0, 1.0
            cons.append({"type": "ineq", "fun": (lambda p, g=g: g @ p), "jac": (lambda p, g=g: g)})
    res = minimize(
        lambda p: np.sum(p * np.log(p)),
        np.full(n, 1 / n),
        jac=lambda p: np.log(p) + 1,
        bounds=[(1e-8, 1)] * n,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    p = res.x
    # SLSQP may stop with "positive directional derivative" at the optimum; accept it if feasible
    assert res.status in (0, 8), res.message
    assert abs(p.sum() - 1) < 1e-8 and abs(p @ v) < 1e-8 and p @ v**2 <= V + 1e-8
    return v, p


# ------------------------------------------------------------------ Eurostat tables
@pytest.mark.parametrize("name", ["v01", "v03", "v04"])
def test_eurostat_tables_load_with_hand_computed_moments(name):
    table = load_ptable(name)
    freq = _eurostat_by_hand(name)
    mom = table.moments()
    assert table.I == max(freq)
    assert mom.loc[0, "variance"] == 0 and mom.loc[0, "mean"] == 0  # zeros stay zero
    for pcv, f in freq.items():
        mean, var = _moments_by_hand(f)
        row = mom.set_index("i").loc[pcv]
        assert abs(row["mean"] - mean) < 1e-4
        assert abs(row["variance"] - var) < 1e-4
        K = sum(f.values())
        assert table.n_keys == K
        for v, n in f.items():  # the law itself
            tr = table.transition(pcv)
            assert tr.p[list(tr.v).index(v)] == pytest.approx(n / K, abs=1e-12)


def test_v01_is_unbiased_with_variance_one():
    mom = load_ptable("v01").moments().set_index("i")
    for n in (1, 2, 3):
        assert abs(mom.loc[n, "mean"]) < 1e-4
        assert abs(mom.loc[n, "variance"] - 1) < 1e-4
    assert load_ptable("v01").transition(250).j.min() == 247  # last row serves larger counts


@pytest.mark.parametrize("name", ["v01", "v04"])
def test_V_reached_against_a_nominal_V_given_and_the_tables_resolution(name):
    """A nominal V given to moments() replaces the table's own; the tolerance of "reached"
    is the table's probability resolution, 1/K times its largest squared noise (both read
    from the file's rows by hand)."""
    freq = _eurostat_by_hand(name)
    table = load_ptable(name)
    K = sum(next(iter(freq.values())).values())
    D = max(abs(v) for f in freq.values() for v in f)
    assert table.resolution == pytest.approx(max(1e-6, D**2 / K))
    var = {i: _moments_by_hand(f)[1] for i, f in freq.items() if i > 0}
    for V in (0.9, 1.0, 2.0):
        mom = table.moments(table.resolution, V=V).set_index("i")
        assert mom.loc[0, "V_reached"] is pd.NA and (mom["nominal_V"] == V).all()
        for i, v in var.items():
            assert mom.loc[i, "variance_minus_V"] == pytest.approx(v - V, abs=1e-4)
            if abs(v - V) > 1e-3:  # clear of the tolerance: the verdict follows the hand variance
                assert bool(mom.loc[i, "V_reached"]) == (v > V), (i, v, V)


def test_v03_v04_are_biased_for_small_counts():
    m3 = load_ptable("v03").moments().set_index("i")
    m4 = load_ptable("v04").moments().set_index("i")
    assert m3.loc[1, "mean"] == pytest.approx(-0.25)
    assert m4.loc[1, "mean"] == pytest.approx(-0.197) and m4.loc[2, "mean"] == pytest.approx(-0.2)
    assert abs(m4.loc[3, "mean"]) < 1e-12 and abs(m4.loc[3, "variance"] - 1) < 0.01


# ------------------------------------------------------------------ R ptable references
@pytest.mark.parametrize("D,V,name", [(2, 1, "rptable_D2_V1_js0.csv"), (3, 0.5, "rptable_D3_V0.5_js0.csv")])
def test_built_tables_equal_r_ptable_output(D, V, name):
    ref = _r_reference(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VarianceNotReachedWarning)
        built = build_ptable(D, V, 0)
    assert built.I == max(ref)
    worst = 0.0
    for i, law in ref.items():
        tr = built.transition(i)
        assert sorted(law) == tr.v.tolist()
        for v, p in law.items():
            worst = max(worst, abs(tr.p[list(tr.v).index(v)] - p))
    assert worst <= 1e-6


def test_reader_on_r_reference_files_matches_csv_module():
    for name in ("rptable_D2_V1_js0.csv", "rptable_D3_V0.5_js0.csv"):
        ref = _r_reference(name)
        t = read_ptable(REF / name)
        assert sniff_ptable_format(REF / name) == "transition"
        for i, law in ref.items():
            tr = t.transition(i)
            assert dict(zip(tr.v.tolist(), tr.p.tolist(), strict=True)) == law


def test_built_D3_V1_reproduces_eurostat_v01():
    built = build_ptable(3, 1, 0)
    v01 = load_ptable("v01")
    assert built.I == v01.I
    for i in range(1, 4):
        a, b = built.transition(i), v01.transition(i)
        assert a.v.tolist() == b.v.tolist()
        assert np.max(np.abs(a.p - b.p)) < 1e-4  # v01 is at 1e-5 resolution


def test_mono_constraint_is_what_reproduces_v01():
    """docs/design.md (Noise models): plain max entropy with exact variance gives P(-1) = 0.381
    at count 1, ptable 0.370."""
    v, p_plain = _slsqp_row(1, 3, 1.0, mono=False, variance_equality=True)
    assert p_plain[list(v).index(-1)] == pytest.approx(0.381, abs=1e-3)
    built = build_ptable(3, 1).transition(1)
    assert built.p[list(built.v).index(-1)] == pytest.approx(0.370, abs=1e-3)


@pytest.mark.parametrize("D,V,js", [(2, 1, 0), (3, 0.5, 0), (3, 1, 0), (4, 2, 0), (3, 1.08, 1), (5, 3, 2)])
def test_builder_agrees_with_independent_slsqp(D, V, js):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VarianceNotReachedWarning)
        built = build_ptable(D, V, js, ndigits=None)
    for i in range(1, built.I + 1):
        v, p = _slsqp_row(i, D, V, js)
        tr = built.transition(i)
        assert tr.v.tolist() == v.astype(int).tolist()
        # SLSQP is the less accurate of the two: compare entropies, then probabilities
        ent = lambda q: -np.sum(q * np.log(q))  # noqa: E731
        assert ent(tr.p) >= ent(p) - 1e-9
        assert np.max(np.abs(tr.p - p)) < 1e-5


# ------------------------------------------------------------------ constraints before rounding
@pytest.mark.parametrize(
    "D,V,js,pstay",
    [
        (2, 1, 0, None),
        (3, 0.5, 0, None),
        (3, 1, 0, None),
        (5, 3, 2, None),
        (3, 1.08, 1, None),
        (4, 0.25, 0, None),
        (3, 1, 0, 0.45),
        (8, 2, 0, None),
    ],
)
def test_unrounded_tables_meet_their_constraints(D, V, js, pstay):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VarianceNotReachedWarning)
        t = build_ptable(D, V, js, pstay, ndigits=None)
    assert t.I == (D if js == 0 else D + js + 1)
    for i in range(1, t.I + 1):
        tr = t.transition(i)
        v, p, j = tr.v.astype(float), tr.p, tr.j
        assert np.all(np.abs(v) <= D) and np.all(j >= 0)
        assert not np.any((j >= 1) & (j <= js))
        assert abs(p.sum() - 1) < 1e-9
        assert abs(p @ v) < 1e-9
        var = p @ v**2
        assert var <= V + 1e-9
        reached = var >= V - 1e-9
        if not reached:  # only where the entropy maximum lies inside the variance bound
            assert t.build_info.set_index("i").loc[i, "variance_unrounded"] == pytest.approx(var)
        assert np.all(p >= 1e-8 - 1e-15) or (np.count_nonzero(p) == 1 and p[v == 0][0] == 1)
        if 0 in v:
            z = int(np.flatnonzero(v == 0)[0])
            assert np.all(np.diff(p[: z + 1]) >= -1e-12)  # mono: non-decreasing towards v = 0
            if pstay is not None:
                assert p[z] >= t.build_info.set_index("i").loc[i, "pstay_bound"] - 1e-12


def test_rounding_follows_ptable():
    raw = build_ptable(3, 0.5, ndigits=None)
    rounded = build_ptable(3, 0.5)
    for i in range(1, 4):
        cum = np.cumsum(raw.transition(i).p)
        ub = np.round(cum, 8)
        lb = np.round(cum - raw.transition(i).p, 8)
        assert np.allclose(rounded.transition(i).p, ub - lb, atol=1e-15, rtol=0)
        assert ub[-1] == 1.0


def test_variance_below_V_warns_and_is_recorded():
    with pytest.warns(VarianceNotReachedWarning, match=r"count 1: 0\.93"):
        t = build_ptable(2, 1)
    mom = t.moments().set_index("i")
    assert mom.loc[1, "variance"] == pytest.approx(0.932, abs=5e-4)
    assert not mom.loc[1, "V_reached"] and mom.loc[2, "V_reached"]
    info = t.build_info.set_index("i")
    assert info.loc[1, "variance_unrounded"] == pytest.approx(0.932, abs=5e-4)
    # V = 1 was attainable under the same constraints (p(-1) = p(0) = 0.4, p(2) = 0.2): 1.2
    assert info.loc[1, "max_variance"] == pytest.approx(1.2, abs=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VarianceNotReachedWarning)
        build_ptable(3, 1)  # every row reaches V: no warning


def test_pstay_is_lowered_like_ptable_until_V_is_reached():
    # count 3, D = 3, V = 1: with p(0) >= b the entropy maximum spreads 1 - b evenly over
    # the six other values (variance 28/6 (1 - b)) until the bound V binds: b <= 0.7857.
    # ptable lowers b by 0.05 from 0.9 while the variance is below V: 0.9, 0.85, 0.8 -> 0.75.
    t = build_ptable(3, 1, pstay=0.9, ndigits=None)
    info = t.build_info.set_index("i")
    assert info.loc[3, "pstay_bound"] == pytest.approx(0.75)
    assert t.moments().set_index("i").loc[3, "variance"] == pytest.approx(1, abs=1e-9)
    assert t.transition(3).p[3] >= 0.75 - 1e-12


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(D=3, V=0.5, js=1), r"variance <= V.*count 1"),
        (dict(D=1, V=1, js=2), r"mean 0.*count 1"),
        (dict(D=2, V=1, js=2), r"variance <= V.*count 1.*variance 2"),
        (dict(D=0, V=1), r"D \(maximum deviation\)"),
        (dict(D=2, V=0), r"V \(noise variance\)"),
        (dict(D=2, V=float("nan")), r"V \(noise variance\)"),
        (dict(D=2, V=1, js=-1), r"js"),
        (dict(D=2, V=1, pstay=1.5), r"pstay"),
        (dict(D=2, V=1, pstay=[0.5, 0.5, 0.5]), r"pstay"),
    ],
)
def test_infeasible_or_invalid_parameters_raise_naming_the_constraint(kw, match):
    with pytest.raises(ParameterError, match=match):
        build_ptable(**kw)


# ------------------------------------------------------------------ files
TAU_ARGUS_STYLE = """i;j;p;v;p_int_ub
0;0;1;0;1
1;0;0.25;-1;0.25
1;1;0.5;0;0.75
1;2;0.25;1;1
2;0;0.1;-2;0.1
2;1;0.2;-1;0.3
2;2;0.4;0;0.7
2;3;0.2;1;0.9
2;4;0.1;2;1
"""


def test_transition_reader_on_a_file_written_from_the_specification(tmp_path):
    f = tmp_path / "tau.csv"
    f.write_text(TAU_ARGUS_STYLE)
    t = read_ptable(f, D=2, V=1.2)
    assert t.I == 2 and t.label == "ptable D2 V1.2"
    mom = t.moments().set_index("i")
    assert mom.loc[1, "variance"] == pytest.approx(0.5) and mom.loc[2, "variance"] == pytest.approx(1.2)
    # interval lookup: [0, .25) -> -1, [.25, .75) -> 0, [.75, 1) -> +1
    keys = np.array([0.0, 0.2499999, 0.25, 0.7499, 0.75, 0.999999])
    assert t.lookup(np.full(6, 1), keys).tolist() == [-1, -1, 0, 0, 1, 1]
    # row 2 (and every larger count): [0, .1) -2, [.1, .3) -1, [.3, .7) 0, [.7, .9) +1, [.9, 1) +2
    assert t.lookup(np.full(6, 40), keys).tolist() == [-2, -1, -1, 1, 1, 2]
    assert t.lookup(np.full(3, 2), [0.3, 0.6999, 0.9]).tolist() == [0, 0, 2]
    assert t.lookup(np.zeros(6, int), keys).tolist() == [0] * 6


@pytest.mark.parametrize(
    "text,match,line",
    [
        ("i,j,p,v\n0,0,1,0\n1,0,0.5,-1\n1,2,0.5,0\n", "v must equal j - i", 4),
        ("i,j,p,v\n0,0,1,0\n1,0,0.5,-1\n1,2,0.4,1\n", "sum to", 3),
        ("i,j,p,v\n0,0,1,0\n1,0,x,-1\n1,2,0.5,1\n", "non-numeric", 3),
        ("i,j,p,v\n0,0,1,0\n1,0,0.5,-1\n1,0,0.5,-1\n", "duplicated", 4),
        ("i,j,p\n0,0,1\n", "lacks column", 1),
        ("i,j,p,v,type\n0,0,1,0,even\n", "type", 2),
        ("i,j,p,v\n0,0,1,0\n\n1,0,0.5,-1\n1,2,0.5,1,7\n", "expected 4 fields", 5),
    ],
)
def test_transition_reader_rejects_bad_files_naming_the_line(tmp_path, text, match, line):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(FormatError, match=match) as ei:
        read_transition_ptable(f)
    assert ei.value.file == str(f) and ei.value.line == line


@pytest.mark.parametrize(
    "text,match",
    [
        ('"pcv";"ckey";"pvalue"\n1;1;0\n1;3;1\n', "lacks cell key 2"),
        # a stray huge cell key: a clear error, not a table of 10^10 keys in memory
        ('"pcv";"ckey";"pvalue"\n1;1;0\n1;10000000000;1\n', "pcv 1 lacks cell key 2"),
        ('"pcv";"ckey";"pvalue"\n1;1;0\n1;2;0\n2;1;0\n', "pcv 2 lacks cell key 2"),
        ('"pcv";"ckey";"pvalue"\n1;1;-2\n1;2;1\n', "negative"),
        ('"pcv";"ckey";"pvalue"\n1;1;0\n1;1;0\n', "duplicated"),
        ('"pcv";"ckey";"pvalue"\n2;1;0\n2;2;0\n', "class 1 is missing"),
        ('"pcv";"key";"pvalue"\n1;1;0\n', "unrecognised"),
    ],
)
def test_eurostat_reader_rejects_bad_files(tmp_path, text, match):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(FormatError, match=match):
        read_ptable(f)


def test_round_trips(tmp_path):
    built = build_ptable(3, 0.5, ndigits=None)
    for name in ("t.csv", "t.csv.gz"):
        back = read_ptable(write_ptable(built, tmp_path / name, "transition"))
        assert np.array_equal(back.i, built.i) and np.array_equal(back.v, built.v)
        assert np.array_equal(back.p, built.p)  # full-precision repr
    v01 = load_ptable("v01")
    back = read_ptable(write_ptable(v01, tmp_path / "v01.csv.gz", "eurostat"))
    assert np.array_equal(back.key_table, v01.key_table)
    q = read_ptable(write_ptable(built, tmp_path / "q.csv", "eurostat", K=1000))
    assert q.n_keys == 1000
    for i in range(1, 4):  # quantised to 1/K (a tail below 1/K may vanish)
        a = dict(zip(q.transition(i).v.tolist(), q.transition(i).p, strict=True))
        b = dict(zip(built.transition(i).v.tolist(), built.transition(i).p, strict=True))
        assert set(a) <= set(b)
        assert max(abs(a.get(v, 0.0) - p) for v, p in b.items()) <= 1 / 1000


def test_a_table_is_read_once_until_its_file_changes(tmp_path):
    """resolve_ptable serves the same (immutable) table again; a file written anew is read anew."""
    assert resolve_ptable("v01") is resolve_ptable("V01") is load_ptable("eurostat_v01")
    with pytest.raises(ParameterError, match="unknown embedded p-table 'v09'"):
        load_ptable("v09")
    f = tmp_path / "t.csv"
    write_ptable(build_ptable(3, 0.5, ndigits=None), f, "transition")
    first = resolve_ptable(f)
    assert resolve_ptable(str(f)) is first and not first.p.flags.writeable
    write_ptable(build_ptable(3, 1.0, ndigits=None), f, "transition")
    second = resolve_ptable(f)
    assert second is not first and second.variance(3) == pytest.approx(1.0, abs=1e-6)
    assert first.variance(3) == pytest.approx(0.5, abs=1e-6)


def test_eurostat_key_lookup_matches_the_file():
    v04 = load_ptable("v04")
    raw = embedded_ptable_path("v04").read_text().splitlines()[1:]
    noise = {(int(a), int(b)): int(c) for a, b, c in (ln.split(";") for ln in raw)}
    K = 1000
    counts = np.array([1, 2, 3, 3, 17, 2, 1])
    ckeys = np.array([1, 500, 1000, 37, 999, 2, 1000])
    keys = (ckeys - 1) / K  # keys on the bin edges, as integer record keys give them
    expect = [noise[(min(n, 3), c)] for n, c in zip(counts, ckeys, strict=True)]
    assert v04.lookup(counts, keys).tolist() == expect
    assert v04.lookup(counts, keys + 0.5 / K).tolist() == expect


def test_ptable_validation_errors():
    with pytest.raises(DataError, match="sum to"):
        PTable(i=[0, 1, 1], v=[0, -1, 0], p=[1, 0.5, 0.4])
    with pytest.raises(DataError, match="negative count"):
        PTable(i=[0, 1, 1], v=[0, -2, 0], p=[1, 0.5, 0.5])
    with pytest.raises(DataError, match="without gaps"):
        PTable(i=[0, 2, 2], v=[0, -1, 1], p=[1, 0.5, 0.5])
    t = build_ptable(3, 1)
    with pytest.raises(DataError, match="negative count"):
        t.lookup([1, -1], [0.2, 0.3])
    with pytest.raises(DataError, match=r"\[0, 1\)"):
        t.lookup([1, 1], [0.2, 1.0])
    assert np.allclose(t.matrix().sum(axis=1), 1)


# ------------------------------------------------------------------ cell keys
def test_cell_keys_float_and_integer():
    rng = np.random.default_rng(3)
    n, cells = 5000, 40
    idx = rng.integers(0, cells, n)
    fk = rng.random(n)
    got = cell_keys(fk, idx, cells)
    for c in range(cells):
        s = math.fsum(fk[idx == c])
        assert got[c] == pytest.approx(s - math.floor(s), abs=1e-9)
    K = 100_000
    ik = rng.integers(0, K, n)
    got = cell_keys(ik, idx, cells, modulus=K)
    for c in range(cells):
        assert got[c] * K == pytest.approx(int(ik[idx == c].sum()) % K, abs=1e-6)
    with pytest.raises(ParameterError):
        cell_keys(ik, idx, cells)
    with pytest.raises(DataError):
        cell_keys(fk + 1, idx, cells)


def test_same_cell_always_gets_the_same_noise():
    """Consistency: a cell's perturbation depends only on its own records."""
    rng = np.random.default_rng(11)
    K = 100_000
    table = load_ptable("v01")
    n = 3000
    rkeys = rng.integers(0, K, n)
    age = rng.integers(0, 20, n)
    sex = rng.integers(0, 2, n)
    cell_a = age * 2 + sex  # age x sex table
    counts_a = np.bincount(cell_a, minlength=40)
    out_a = perturb_table(counts_a, cell_keys(rkeys, cell_a, 40, modulus=K), table)
    # the same records in another order give the same published table
    perm = rng.permutation(n)
    out_b = perturb_table(counts_a, cell_keys(rkeys[perm], cell_a[perm], 40, modulus=K), table)
    assert np.array_equal(out_a, out_b)
    # the same cell (age 5, sex 1) inside a different table (age x sex x other) margin
    other = rng.integers(0, 3, n)
    sel = (age == 5) & (sex == 1)
    cell_c = np.where(sel, 0, 1 + other)  # cell 0 holds exactly the records of (5, 1)
    counts_c = np.bincount(cell_c, minlength=4)
    out_c = perturb_table(counts_c, cell_keys(rkeys, cell_c, 4, modulus=K), table)
    assert out_c[0] == out_a[5 * 2 + 1]


def test_margins_are_not_additive():
    """A margin perturbed on its own differs from the sum of its perturbed inner cells;
    its noise has variance V, the sum of inner noises 2V (v01, counts >= 3)."""
    rng = np.random.default_rng(5)
    table = load_ptable("v01")
    T = 20_000
    n1 = rng.integers(3, 60, T)
    n2 = rng.integers(3, 60, T)
    # float record keys: sums of uniform keys per cell (generated by cell to stay vectorised)
    k1 = np.array([rng.random(a).sum() % 1 for a in n1])
    k2 = np.array([rng.random(b).sum() % 1 for b in n2])
    km = (k1 + k2) % 1  # the margin's records are those of both cells
    p1, p2 = perturb_table(n1, k1, table), perturb_table(n2, k2, table)
    pm = perturb_table(n1 + n2, km, table)
    differ = np.mean(pm != p1 + p2)
    assert differ > 0.5
    e_margin = pm - (n1 + n2)
    e_sum = (p1 + p2) - (n1 + n2)
    se = lambda x: np.sqrt(np.var((x - x.mean()) ** 2) / x.size)  # noqa: E731 (SE of a variance)
    assert abs(e_margin.var() - 1.0) < 5 * se(e_margin)
    assert abs(e_sum.var() - 2.0) < 5 * se(e_sum)
