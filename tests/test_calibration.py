"""Calibration of V: the largest noise variance keeping the admixture below thresholds.

Independent truths used here:
* the generic closed form against a numeric root of A(V) = A* found by brentq on the
  first-order variance (IndicatorLinearisation.variance) evaluated at each trial V, and against
  the results table built with the noise model GenericNoise(V*) itself;
* the p-table V* against the admixture of a table built directly at V*
  (build_ptable -> PTableNoise -> noise_cell_moments), and A(V) on a grid of built tables;
* the done-when check: a Monte Carlo at the calibrated V (N = 100 000, common random
  numbers: the Poisson draws are shared by the 'poisson' and 'total' components)
  reproduces the target admixture within 2 percentage points, on three regions of very
  different size.
"""

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq

from _fixtures_lifetable import belgian_counts
from demonoise.analysis.results import results_table
from demonoise.cli import main
from demonoise.core.errors import DataError, ParameterError
from demonoise.io.template import read_counts_csv, write_counts_csv
from demonoise.noise.models import GenericNoise, PTableNoise
from demonoise.noise.ptable import build_ptable
from demonoise.uncertainty.calibration import (
    PTableFamily,
    calibrate,
    calibrate_linearised,
    calibration_summary,
    check_thresholds,
    generic_v_max,
    invert_piecewise_linear,
)
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import TABLES, admixture, linearise, noise_cell_moments, poisson_cell_variance

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "counts_template.csv"


@pytest.fixture(scope="module")
def be(data_dir):
    return belgian_counts(data_dir)  # 11 Belgian NUTS 2 regions, real deaths 2021, population 1 Jan 2021/2022


@pytest.fixture(scope="module")
def be_csv(be, tmp_path_factory):
    """The Belgian fixture as a counts template file (what the CLI reads)."""
    return write_counts_csv(be, tmp_path_factory.mktemp("counts") / "be2021.csv.gz")


def _noise_var(lz, block, V, noised=TABLES):
    """Var_noise of a block under generic noise V, from the linearisation (no closed form)."""
    cells = lz.cells(block.female_only)
    d = {m: np.full(np.shape(cells[m]), float(V)) for m in noised if m in cells}
    if block.female_only:
        d = {m: v[:, None] for m, v in d.items()}
    return block.lin.variance(d)


# ------------------------------------------------------------------ thresholds, regions
@pytest.mark.parametrize("bad", [0, 0.0, -1, 11, 10.000001, float("nan"), float("inf"), "0.5", True, None])
def test_thresholds_outside_range_raise_parameter_error_naming_the_value(bad):
    with pytest.raises(ParameterError) as e:
        check_thresholds([0.5, bad])
    assert repr(bad) in str(e.value)


def test_thresholds_accept_the_range_and_drop_duplicates():
    assert check_thresholds([0.1, 0.5, 1.0, 10, 0.5]).tolist() == [0.1, 0.5, 1.0, 10.0]
    assert check_thresholds(1e-9).tolist() == [1e-9]
    with pytest.raises(ParameterError):
        check_thresholds([])


def test_calibrate_rejects_bad_threshold_and_unknown_region(be):
    with pytest.raises(ParameterError, match="11"):
        calibrate(be, [0.1, 11], indicators=("e",))
    with pytest.raises(DataError) as e:
        calibrate(be, regions=["BE10", "BE99"], indicators=("e",))
    assert e.value.region == "BE99" and "BE99" in str(e.value)
    with pytest.raises(ParameterError, match="family"):
        calibrate(be, family="ptable", indicators=("e",))
    with pytest.raises(ParameterError, match="D"):
        calibrate(be, family=("ptable", 0), indicators=("e",))


# ------------------------------------------------------------------ generic: closed form
def test_generic_closed_form_equals_numeric_root(be):
    """V* = ((1+A*)^2 - 1) Var_pois / S against brentq on A(V) = A*, where A(V) is
    evaluated from the linearisation at each trial V (cell variances V, not S)."""
    lz = linearise(be, indicators=("e", "asmr"), e_ages=[0, 65])
    thr = [0.1, 0.5, 1.0]
    df = calibrate_linearised(lz, thr)
    rng = np.random.default_rng(3)
    checked = 0
    for ind, block in lz.blocks.items():
        vp = block.lin.variance(poisson_cell_variance(lz, False))
        R, S, K = vp.shape
        for _ in range(12):
            r, s, k = rng.integers(R), rng.integers(S), rng.integers(K)
            if not vp[r, s, k] > 0:
                continue
            for a in thr:

                def f(V, block=block, cell=(r, s, k), var_pois=vp[r, s, k], a=a):
                    return admixture(var_pois, _noise_var(lz, block, V)[cell]) - a

                hi = 1.0
                while f(hi) < 0:
                    hi *= 4
                root = brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-13)
                row = df[
                    (df.indicator == ind)
                    & (df.region == be.codes[r])
                    & (df.sex == "FMT"[s])
                    & (df.age == block.age_lower[k])
                    & (df.threshold == a)
                ]
                assert len(row) == 1 and row.status.iloc[0] == "ok"
                assert row.V_max.iloc[0] == pytest.approx(root, rel=1e-9)
                checked += 1
    assert checked >= 40


def test_generic_v_star_gives_the_target_in_the_results_table(be):
    """At V* the results table (GenericNoise(V*), exact variance of the discrete
    Gaussian law) shows admixture = A*."""
    lz = linearise(be.select(["BE10", "BE34"]), indicators=("e",), e_ages=[0, 65])
    df = calibrate_linearised(lz, [0.1, 1.0])
    for _, row in df[df.age == 0].iloc[::3].iterrows():
        res = results_table(lz, [GenericNoise(row.V_max)])
        hit = res[(res.region == row.region) & (res.sex == row.sex) & (res.age == row.age)]
        assert hit.admixture.iloc[0] == pytest.approx(row.threshold, rel=1e-9)
    # A at V = 1 and 5 (context columns) equals the results table's
    res = results_table(lz, [GenericNoise(1.0), GenericNoise(5.0)])
    for V in (1.0, 5.0):
        a = res[res.V == V].set_index(["region", "sex", "age"]).admixture
        b = df[df.threshold == 0.1].set_index(["region", "sex", "age"])[f"admixture_V{V:g}"]
        assert np.allclose(a.loc[b.index], b, rtol=1e-10)


def test_generic_fertility_and_edge_cases():
    """Female-only blocks (ASFR, TFR on the counts template); Var_pois = 0 -> V* = 0,
    S = 0 -> inf, both -> nan."""
    c = read_counts_csv(TEMPLATE)
    lz = linearise(c, indicators=("asfr", "tfr"))
    df = calibrate_linearised(lz, [0.5])
    for ind in ("asfr", "tfr"):
        block = lz.blocks[ind]
        vp = block.lin.variance(poisson_cell_variance(lz, True))
        vn1 = _noise_var(lz, block, 1.0)
        expect = (1.5**2 - 1) * vp / vn1
        got = df[df.indicator == ind].V_max.to_numpy().reshape(vp.shape)
        pos = vp > 0
        assert pos.any() and np.allclose(got[pos], expect[pos], rtol=1e-12)
    tfr = df[df.indicator == "tfr"]
    assert (tfr.sex == "F").all() and len(tfr) == 2
    out = generic_v_max(np.array([0.0, 2.0, 0.0, np.nan]), np.array([3.0, 0.0, 0.0, 1.0]), [0.5])
    assert out[0, 0] == 0.0 and np.isinf(out[1, 0]) and np.isnan(out[2, 0]) and np.isnan(out[3, 0])


def test_zero_death_rates_are_no_events_for_generic_noise(be):
    df = calibrate(be.select(["BE34"]), [0.5], indicators=("asmr",))
    zero = df[df.events == 0]
    assert len(zero) > 0 and (zero.status == "no_events").all() and (zero.V_max == 0).all()


def test_invert_piecewise_linear_is_the_largest_v_meeting_the_bound():
    nodes = np.array([0.0, 1.0, 2.0, 3.0])
    F = np.array([[0.0, 1.0, 3.0, 3.0], [0.0, 2.0, 1.0, 4.0]])  # second: not monotone
    got = invert_piecewise_linear(nodes, F, np.array([[0.5, 2.0, 3.0], [1.5, 1.5, 5.0]]))
    assert got[0].tolist() == [0.5, 1.5, math.inf]
    # largest V with F <= 1.5: in [2, 3] where F goes 1 -> 4: 2 + 0.5/3
    assert got[1, 0] == pytest.approx(2 + 0.5 / 3) and np.isinf(got[1, 2])
    assert np.isnan(invert_piecewise_linear(nodes[1:], F[:, 1:], np.array([[0.5], [0.5]]))).all()


# ------------------------------------------------------------------ p-table family
@pytest.fixture(scope="module")
def lz_e(be):
    return linearise(be, indicators=("e",), e_ages=[0, 65])


@pytest.fixture(scope="module")
def pt3(lz_e):
    return calibrate_linearised(lz_e, [0.05, 0.1, 0.3], family=("ptable", 3, 0))


def _ptable_admixture(lz, table):
    """A of every e_k under a p-table, through the noise model (not the calibration's weights)."""
    block = lz.blocks["e"]
    var_n, _ = noise_cell_moments(lz, PTableNoise(table), False)
    vp = block.lin.variance(poisson_cell_variance(lz, False))
    return admixture(vp, block.lin.variance(var_n))


def test_ptable_v_star_gives_the_target_with_a_table_built_there(lz_e, pt3, be):
    ok = pt3[pt3.status == "ok"]
    assert len(ok) >= 10
    assert pt3.attrs["monotone"] and pt3.attrs["v_lo"] == 0 and pt3.attrs["v_top"] == 9
    assert pt3.attrs["v_sat"] == pytest.approx(4.0, abs=1e-5)  # uniform law on -3..3: D(D+1)/3
    pick = ok.sort_values("V_max").iloc[np.linspace(0, len(ok) - 1, 5).astype(int)]
    for _, row in pick.iterrows():
        A = _ptable_admixture(lz_e, build_ptable(3, row.V_max, 0, warn=False))
        r, s = be.codes.index(row.region), "FMT".index(row.sex)
        k = list(lz_e.blocks["e"].age_lower).index(row.age)
        assert A[r, s, k] == pytest.approx(row.threshold, abs=1e-6), (row.region, row.sex, row.age, row.V_max)
    # saturated items: even the largest table of the family stays below the threshold
    sat = pt3[pt3.status == "saturates"]
    assert len(sat) > 0 and np.isinf(sat.V_max).all()
    A_top = _ptable_admixture(lz_e, build_ptable(3, 9.0, 0, warn=False))
    for _, row in sat.iterrows():
        r, s = be.codes.index(row.region), "FMT".index(row.sex)
        k = list(lz_e.blocks["e"].age_lower).index(row.age)
        assert A_top[r, s, k] <= row.threshold


def test_ptable_admixture_is_monotone_in_v_on_a_grid(lz_e, pt3, be):
    """A(V) from tables built on a grid: non-decreasing for every region, sex and age,
    flat once the tables stop changing (V >= 4 for D = 3); the calibrated V* sits where
    the grid values cross the threshold."""
    grid = [0.05, 0.2, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 7.0, 9.0]
    A = np.stack([_ptable_admixture(lz_e, build_ptable(3, V, 0, warn=False)) for V in grid])
    # beyond V = 4 the largest row is the uniform law up to the solver's ~3e-7 in its
    # variance, i.e. a few 1e-9 in A: "flat" within 1e-7
    assert np.all(np.diff(A, axis=0) >= -1e-7)
    assert np.all(np.diff(A[: grid.index(4.0) + 1], axis=0) > 0)
    assert np.allclose(A[grid.index(4.0) :], A[-1], rtol=1e-6, atol=0)
    e0 = pt3[(pt3.age == 0) & (pt3.status == "ok")]
    for _, row in e0.iterrows():
        r, s = be.codes.index(row.region), "FMT".index(row.sex)
        a = A[:, r, s, 0]
        below = [V for V, x in zip(grid, a, strict=True) if x <= row.threshold]
        above = [V for V, x in zip(grid, a, strict=True) if x > row.threshold]
        assert max(below) <= row.V_max <= min(above)


def test_ptable_variance_curve_interpolates_built_tables():
    """The tabulated row variances agree with tables built at V off the grid, and follow
    min(V, u_i) with u_i the row's variance when the bound is slack (V = D^2)."""
    fam = PTableFamily(3, 0)
    curve = fam.curve()
    assert curve.monotone and curve.nodes[0] == 0 and curve.nodes[-1] == 9 and curve.builds < 60
    u = fam.row_variance(9.0)
    assert u[0] == 0 and u[-1] == pytest.approx(4.0, abs=1e-5)  # zeros stay zero; uniform law on -3..3
    for V in np.random.default_rng(5).uniform(0.01, 9.0, 6):
        built = fam.row_variance(V)
        assert np.allclose(curve.at(V), built, rtol=0, atol=2e-6), V
        assert np.allclose(built, np.minimum(V, u), rtol=0, atol=2e-6), V


@pytest.mark.slow
def test_ptable_family_with_js_has_a_smallest_v(be):
    """js = 2, D = 3: the count-1 row (noises -1, 2, 3) has variance at least 2, so the
    family starts at V = 2; items the smallest table already pushes over the threshold
    are 'infeasible'."""
    fam = PTableFamily(3, 2)
    v_lo = fam.v_lo()
    assert v_lo == pytest.approx(2.0, rel=2e-6) and v_lo >= 2.0
    assert fam.feasible(v_lo)
    with pytest.raises(ParameterError, match="variance"):
        build_ptable(3, 2.0 * (1 - 1e-4), 2, warn=False)
    lz = linearise(be.select(["BE10", "BE34"]), indicators=("e",), e_ages=[0])
    df = calibrate_linearised(lz, [0.1, 0.5], family=fam)
    assert df.attrs["v_lo"] == v_lo and df.attrs["monotone"]
    A_lo = _ptable_admixture(lz, fam.table(v_lo))
    for _, row in df.iterrows():
        r, s = lz.counts.codes.index(row.region), "FMT".index(row.sex)
        if row.status == "infeasible":
            assert np.isnan(row.V_max) and A_lo[r, s, 0] > row.threshold
        elif row.status == "ok":
            A = _ptable_admixture(lz, build_ptable(3, row.V_max, 2, warn=False))
            assert A[r, s, 0] == pytest.approx(row.threshold, abs=1e-6)
    assert set(df.status) >= {"infeasible", "ok"}
    assert df.admixture_V1.isna().all()  # no table of this family at V = 1
    with pytest.raises(ParameterError, match="no p-table exists for any V"):
        PTableFamily(1, 2).v_lo()


def test_ptable_zero_rates_are_undefined_not_zero(be):
    """Zeros stay zero under a p-table: a rate from 0 deaths has neither Poisson nor
    noise variance."""
    df = calibrate(be.select(["BE34"]), [0.5], family=("ptable", 2, 0), indicators=("asmr",))
    zero = df[df.events == 0]
    assert len(zero) > 0 and (zero.status == "undefined").all() and zero.V_max.isna().all()


# ------------------------------------------------------------------ the done-when Monte Carlo
def _scaled(counts, f):
    r = lambda a: np.rint(a * f).astype(np.int64)  # noqa: E731
    return counts.replace(
        name=f"{counts.name} x{f:g}", pop_start=r(counts.pop_start), pop_end=r(counts.pop_end), deaths=r(counts.deaths)
    )


# Three regions of very different size (population 1 Jan 2021): BE10 total 1 226 329 and
# BE34 women 145 872, published in 5-year groups; BE34 with population and deaths scaled
# by 0.1 (integer-rounded: 29 176 people, 281 deaths), published in single ages (the
# default layout, and the hardest case for the first-order formula).
MC_CASES = [("BE10", 1.0, "T", "5y"), ("BE34", 1.0, "F", "5y"), ("BE34", 0.1, "T", "single")]


@pytest.mark.slow
@pytest.mark.parametrize("code,factor,sex,granularity", MC_CASES, ids=["BE10-T", "BE34-F", "BE34x0.1-T"])
def test_monte_carlo_at_calibrated_v_reproduces_the_target(be, code, factor, sex, granularity):
    target, n = 0.5, 100_000
    c = be.select([code])
    if factor != 1.0:
        c = _scaled(c, factor)
    lz = linearise(c, granularity=granularity, indicators=("e",), e_ages=[0])
    df = calibrate_linearised(lz, [target])
    row = df[df.sex == sex].iloc[0]
    assert row.status == "ok"
    t0 = time.perf_counter()
    mc = monte_carlo(
        lz,
        GenericNoise(row.V_max),
        n=n,
        seed=20230101,
        indicators=("e",),
        components=("poisson", "total"),
        quantiles=None,
    )
    dt = time.perf_counter() - t0
    s = "FMT".index(sex)
    sd_p = mc.stats[("e", "poisson")]["sd"][0, s, 0]
    sd_t = mc.stats[("e", "total")]["sd"][0, s, 0]
    A_mc = sd_t / sd_p - 1
    pop = int(c.pop_start[0, s, :].sum())
    print(
        f"{code} x{factor:g} {sex} ({pop} people, {granularity}): V* = {row.V_max:.4f}, "
        f"A_MC = {A_mc:.4f} (target {target}), N = {n}, {dt:.1f} s"
    )
    assert abs(A_mc - target) < 0.02


# ------------------------------------------------------------------ CLI
def test_cli_calibrate_writes_the_table_and_a_summary(be, be_csv, tmp_path, capsys):
    out = tmp_path / "calib.csv"
    rc = main(
        [
            "calibrate",
            "--dataset",
            str(be_csv),
            "--thresholds",
            "0.1",
            "0.5",
            "--indicators",
            "e",
            "--regions",
            "BE10",
            "BE34",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    got = pd.read_csv(out)
    ref = calibrate(be, [0.1, 0.5], indicators=("e",), regions=["BE10", "BE34"])
    assert len(got) == len(ref) == 2 * 3 * 2 * 2
    assert np.allclose(got.V_max, ref.V_max, rtol=1e-9)
    assert list(got.columns[:4]) == ["dataset", "data_status", "family", "granularity"]
    text = capsys.readouterr().out
    e0 = ref[ref.age == 0]
    smallest = e0[e0.threshold == 0.1].sort_values("V_max").iloc[0]
    assert "e0: smallest V_max" in text and f"{smallest.V_max:.4g} ({smallest.region} {smallest.sex})" in text
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left


def test_cli_calibrate_ptable_family(be_csv, tmp_path, capsys):
    out = tmp_path / "calib.parquet"
    rc = main(
        [
            "calibrate",
            "--dataset",
            str(be_csv),
            "--ptable-D",
            "2",
            "--indicators",
            "e",
            "--e-ages",
            "0",
            "--regions",
            "BE34",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    df = pd.read_parquet(out)
    assert (df.family == "ptable D=2 js=0").all() and len(df) == 9
    assert "family V range [0, 4]" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--thresholds", "0"], "threshold 0.0"),
        (["--thresholds", "-1"], "threshold -1.0"),
        (["--thresholds", "0.5", "11"], "threshold 11.0"),
        (["--thresholds", "nan"], "threshold nan"),
        (["--regions", "BE10", "XX99"], "region XX99"),
        (["--countries", "NL"], "region NL"),
        (["--family", "ptable"], "--ptable-D"),
        (["--ptable-D", "0"], "D (maximum deviation)"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(be_csv, tmp_path, capsys, args, needle):
    out = tmp_path / "calib.csv"
    rc = main(["calibrate", "--dataset", str(be_csv), "--indicators", "e", *args, "--out", str(out)])
    assert rc == 2
    assert needle in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_cli_unknown_dataset_and_bad_extension_exit_2(tmp_path, be_csv):
    assert main(["calibrate", "--dataset", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "x.csv")]) == 2
    assert main(["calibrate", "--dataset", str(be_csv), "--out", str(tmp_path / "x.xlsx")]) == 2
    with pytest.raises(SystemExit) as e:  # not a number: argparse's own exit status 2
        main(["calibrate", "--dataset", str(be_csv), "--thresholds", "ten", "--out", str(tmp_path / "x.csv")])
    assert e.value.code == 2
    assert list(tmp_path.iterdir()) == []


def test_cli_output_is_atomic(be_csv, tmp_path, monkeypatch):
    """A writer that fails half-way leaves neither a partial file nor a temporary one,
    and an existing output stays as it was."""
    out = tmp_path / "calib.parquet"

    def broken(self, path, *a, **k):
        Path(path).write_bytes(b"PAR1 partial")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    argv = ["calibrate", "--dataset", str(be_csv), "--indicators", "e", "--regions", "BE34", "--out", str(out)]
    assert main(argv) == 1  # a one-line "error: disk full", no traceback
    assert list(tmp_path.iterdir()) == []
    out.write_bytes(b"previous results")
    assert main(argv) == 1
    assert out.read_bytes() == b"previous results" and list(tmp_path.iterdir()) == [out]


def test_summary_names_the_smallest_v_and_infeasible_items(be):
    lz = linearise(be.select(["BE10", "BE34"]), indicators=("e",), e_ages=[0])
    df = calibrate_linearised(lz, [0.1, 0.5], family=("ptable", 3, 2))
    s = calibration_summary(df)
    assert list(s.indicator) == ["e0", "e0"]
    for _, r in s.iterrows():
        g = df[df.threshold == r.threshold]
        assert r.infeasible == (g.status == "infeasible").sum()
        fin = g[g.V_max.notna()]
        if len(fin):
            assert r.V_max_min == fin.V_max.min()
