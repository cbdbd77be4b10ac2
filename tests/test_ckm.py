"""Real cell key method in the analysis: p-table Monte Carlo, per-cell moments, generic vs
p-table comparison, and the ``ptable`` / ``compare`` / ``compute --ptable`` commands.

Independent truths used here:
* Monte Carlo through the p-table (every cell perturbed by a cell-key lookup, every
  indicator recomputed exactly) against the count-dependent first-order sd, judged by
  ``z = (sd_MC / sd - 1) sqrt(2N)`` (docs/design.md, "Monte Carlo and the z-score") -- on real Belgian counts;
* moments computed by hand from the rows of Eurostat's p-table files (csv module);
* finite-difference derivatives of e0 through the life table;
* the generic model (discrete Gaussian of variance exactly V, a separate code path).

Births: the dataset ``be-2023`` was not on main when this was written, so the TFR check
runs on the CSV template counts (``templates/counts_template.csv``: BE10 and BE34, real
population and deaths 2023, births modelled from Belgium's births by age of mother).
"""

# ruff: noqa: E741 -- I is the p-table's largest count class, as Eurostat and the R package ptable name it
from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _fixtures_lifetable import belgian_counts
from demonoise.analysis.compute import read_results
from demonoise.analysis.ptables import load_ptable, read_ptable, write_ptable
from demonoise.analysis.results import results_table
from demonoise.cli import main
from demonoise.core.errors import ParameterError
from demonoise.demography.indicators import life_expectancy
from demonoise.io.datasets import load
from demonoise.io.template import read_counts_csv
from demonoise.noise.models import GenericNoise, PTableNoise
from demonoise.noise.ptable import build_ptable
from demonoise.uncertainty.comparison import (
    compare_noise,
    comparison_note,
    size_class,
    smallest_regions,
    summarise_comparison,
)
from demonoise.uncertainty.montecarlo import monte_carlo, z_score
from demonoise.uncertainty.propagation import linearise, noise_cell_moments

N = 10_000
ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "counts_template.csv"
PTABLE_DIR = ROOT / "lib" / "demonoise" / "data" / "ptables"
PTABLE_FILES = {
    "v01": "eurostat_census_ptable_v01.csv.gz",
    "v03": "eurostat_census_ptable_v03.csv",
    "v04": "eurostat_census_ptable_v04.csv",
}


@pytest.fixture(scope="module")
def be(data_dir):
    return belgian_counts(data_dir)  # 11 NUTS 2 regions, real deaths 2021, populations 1 Jan 2021/2022


@pytest.fixture(scope="module")
def template():
    return read_counts_csv(TEMPLATE)


def hand_moments(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the noise per class, from the rows of the Eurostat file
    (each ckey equally likely), index 0 = count 0 (no noise)."""
    path = PTABLE_DIR / PTABLE_FILES[name]
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode()
    rows: dict[int, list[int]] = {}
    for rec in csv.DictReader(io.StringIO(text), delimiter=";"):
        rows.setdefault(int(rec["pcv"]), []).append(int(rec["pvalue"]))
    I = max(rows)
    mean, var = np.zeros(I + 1), np.zeros(I + 1)
    for i, vals in rows.items():
        x = np.array(vals, dtype=float)
        mean[i] = x.mean()
        var[i] = ((x - x.mean()) ** 2).mean()
    return mean, var


# ------------------------------------------------------------------ Monte Carlo
@pytest.mark.slow
@pytest.mark.parametrize("name", ["v01", "v04"])
def test_ptable_monte_carlo_agrees_with_count_dependent_sd_for_e0(be, name):
    """Done-when criterion: noise-only MC with p-table noise vs the count-dependent
    analytic sd of e0, |z| < 5 in every region (all > 100 000 inhabitants) and sex."""
    assert be.pop_start[:, 2].sum(-1).min() > 100_000
    lz = linearise(be, indicators=("e",), e_ages=[0])
    noise = PTableNoise(load_ptable(name))
    mc = monte_carlo(lz, noise, n=N, seed=101, indicators=("e",), components=("noise",), quantiles=None)
    df = results_table(lz, [noise], mc={0: mc})
    assert len(df) == 33 and (df.noise_model == "ptable").all() and (df.ptable == f"ptable {name}").all()
    z = df.z_noise.abs()
    print(f"{name}: largest |z| of the e0 noise sd over 33 region x sex: {z.max():.2f}")
    assert z.max() < 5
    # the test discriminates: the same Monte Carlo is far from the generic model's sd
    g = results_table(lz, [GenericNoise(1.0)])
    z_gen = z_score(df.mc_sd_noise, g.sd_noise, N)
    assert np.abs(z_gen).max() > 20
    # and the MC mean shift is the p-table's first-order bias (v04 is biased for counts 1, 2)
    se = df.mc_sd_noise / np.sqrt(N)
    shift = df.mc_mean_tot - df.value
    assert ((shift - df.bias_noise).abs() / se).max() < 5
    if name == "v04":
        assert (df.bias_noise / df.sd_noise).max() > 0.3  # a bias the generic model does not have


@pytest.mark.parametrize("name", ["v01", "v04"])
def test_ptable_monte_carlo_agrees_for_tfr_on_template_counts(template, name):
    """Same criterion for the TFR, on the CSV template's two Belgian regions (births modelled)."""
    assert template.pop_start[:, 2].sum(-1).min() > 100_000
    lz = linearise(template, indicators=("tfr", "e"), e_ages=[0])
    noise = PTableNoise(load_ptable(name))
    mc = monte_carlo(
        lz, noise, n=N, seed=202, indicators=("tfr", "e"), components=("noise",), quantiles=None, workers=1
    )
    df = results_table(lz, [noise], mc={0: mc})
    tfr = df[df.indicator == "tfr"]
    assert len(tfr) == 2
    print(
        f"{name}: |z| TFR {tfr.z_noise.abs().round(2).tolist()}, e0 max "
        f"{df[df.indicator == 'e'].z_noise.abs().max():.2f}"
    )
    assert df.z_noise.abs().max() < 5


# ------------------------------------------------------------------ per-cell moments
@pytest.mark.parametrize("name", ["v01", "v03", "v04"])
def test_cell_variance_and_bias_are_the_tables_moments(be, template, name):
    """noise_cell_moments under a p-table = hand moments of row min(n, I); 0 for zeros."""
    mean, var = hand_moments(name)
    I = len(mean) - 1
    noise = PTableNoise(load_ptable(name))
    for counts, fem in ((be, False), (template, True)):
        lz = linearise(counts, indicators=("tfr",) if fem else ("e",), e_ages=None if fem else [0])
        v, b = noise_cell_moments(lz, noise, fem)
        cells = lz.cells(fem)
        assert set(v) == set(cells)
        for m, c in cells.items():
            c = c[:, None] if fem else c
            rows = np.minimum(c, I)
            np.testing.assert_allclose(v[m], var[rows], rtol=0, atol=1e-12)
            np.testing.assert_allclose(b[m], mean[rows], rtol=0, atol=1e-12)
            assert (v[m][c == 0] == 0).all() and (b[m][c == 0] == 0).all()
    # the real data do hit the small-count rows
    assert (be.deaths == 0).any() and ((be.deaths > 0) & (be.deaths < I)).any()


def test_indicator_sd_and_bias_match_finite_differences(be):
    """sd_ptable^2 = sum_c (de0/dc)^2 var(n_c), bias = sum_c (de0/dc) mean(n_c), with the
    derivatives by central differences through the life table (BE34, all sexes)."""
    one = be.select(["BE34"])
    mean, var = hand_moments("v04")
    I = len(mean) - 1
    df = compare_noise(one, load_ptable("v04"), indicators=("e",), e_ages=(0,))
    lz = linearise(one, indicators=("e",), e_ages=[0])
    lay = lz.layout
    h = 0.5
    for s, sex in enumerate(("F", "M", "T")):
        base = {m: getattr(one, m)[0, s].astype(float) for m in ("deaths", "pop_start", "pop_end")}
        A = base["deaths"].size
        tot_var = tot_bias = 0.0
        for m in base:
            batch = {k: np.repeat(v[None], 2 * A, axis=0) for k, v in base.items()}
            batch[m][np.arange(A), np.arange(A)] += h
            batch[m][A + np.arange(A), np.arange(A)] -= h
            e0 = life_expectancy(
                lay, batch["deaths"], batch["pop_start"], batch["pop_end"], check=False, **lz.lifetable_kw
            ).e[:, 0]
            g = (e0[:A] - e0[A:]) / (2 * h)
            rows = np.minimum(getattr(one, m)[0, s], I)
            tot_var += float((g * g * var[rows]).sum())
            tot_bias += float((g * mean[rows]).sum())
        row = df[(df.sex == sex) & (df.age == 0)].iloc[0]
        assert row.sd_ptable == pytest.approx(np.sqrt(tot_var), rel=1e-5)
        assert row.bias_ptable == pytest.approx(tot_bias, rel=1e-5)
    assert (df.bias_ptable > 0).all()  # v04 lowers small death counts on average -> e0 up


# ------------------------------------------------------------------ generic equivalence
def test_ptable_with_the_generic_moments_gives_the_generic_result(be):
    """build_ptable(D=3, V=1) reaches V = 1 (mean 0) at every count >= 1: cells with
    n >= I get the generic law's moments, indicators whose cells are all >= I get the
    generic sd, and with every count lifted to >= I the two models coincide everywhere."""
    table = build_ptable(3, 1.0, ndigits=None)  # unrounded: moments exact to the solver's ~1e-12
    I = table.I
    assert np.allclose(table.variance()[1:], 1.0, atol=1e-9) and np.allclose(table.mean(), 0, atol=1e-9)
    g = GenericNoise(1.0)
    counts = np.array([0, 1, 2, 3, 4, 17, 10_000])
    big = counts >= I
    np.testing.assert_allclose(PTableNoise(table).variance(counts)[big], g.variance(counts)[big], atol=1e-9)
    np.testing.assert_allclose(PTableNoise(table).bias(counts)[big], 0, atol=1e-9)

    # with an UNK cell every indicator depends on it (unknown ages are spread in
    # proportion); the fixture's UNK cells are all empty, so drop them: then e65 and the
    # ASMR of most ages depend on cells >= I only
    assert not (be.deaths[..., -1].any() or be.pop_start[..., -1].any() or be.pop_end[..., -1].any())
    known = be.replace(
        ages=be.ages.without_unknown(), **{m: getattr(be, m)[..., :-1] for m in ("deaths", "pop_start", "pop_end")}
    )
    df = compare_noise(known, table, indicators=("e", "asmr"), e_ages=(0, 65))
    clean = df[df.small_cell_share == 0]
    assert len(clean) > 1000 and (clean[clean.indicator == "e"].age == 65).all()
    np.testing.assert_allclose(clean.ratio, 1.0, atol=1e-7)
    np.testing.assert_allclose(clean.bias_ptable / clean.sd_ptable, 0, atol=1e-6)
    # where small cells matter the models part: zeros stay zero under the p-table
    e0 = df[(df.indicator == "e") & (df.age == 0)]
    assert (e0.small_cell_share > 0).all() and (e0.ratio < 0.99).all()

    lifted = be.replace(deaths=be.deaths + I, pop_start=be.pop_start + I, pop_end=be.pop_end + I)
    df2 = compare_noise(lifted, table, indicators=("e",), e_ages=(0, 65))
    assert (df2.small_cell_share == 0).all()
    np.testing.assert_allclose(df2.ratio, 1.0, atol=1e-7)
    gen = results_table(linearise(lifted, indicators=("e",), e_ages=[0, 65]), [g])
    np.testing.assert_allclose(df2.sd_ptable.to_numpy(), gen.sd_noise.to_numpy(), rtol=1e-7)


# ------------------------------------------------------------------ comparison table
def test_size_classes():
    assert size_class([5, 199_999, 200_000, 999_999, 1_000_000, 3e6]).tolist() == [
        "<200k",
        "<200k",
        "200k-1M",
        "200k-1M",
        ">=1M",
        ">=1M",
    ]
    assert size_class([50_000, 150_000], (100_000,)).tolist() == ["<100k", ">=100k"]
    with pytest.raises(ParameterError, match="increasing"):
        size_class([1], (5, 1))


def test_comparison_table_summary_and_note(be):
    df = compare_noise(be, load_ptable("v01"))
    assert len(df) == 11 * 3 * 2  # region x sex x (e0, e65); BE fixture has no births
    assert (df.V == 1.0).all() and (df.I == 3).all() and (df.ptable == "ptable v01").all()
    # columns agree with their definitions
    np.testing.assert_allclose(df.ratio, df.sd_ptable / df.sd_generic)
    np.testing.assert_allclose(df.rmse_ptable, np.hypot(df.sd_ptable, df.bias_ptable))
    assert (df.flag == ((df.ratio - 1).abs() > 0.10)).all()
    pop = dict(zip(be.codes, be.pop_start[:, 2].sum(-1), strict=True))
    assert (df.population == df.region.map(pop)).all()
    # analytic sds are those of the results table for each model
    lz = linearise(be, indicators=("e",), e_ages=[0, 65])
    res = results_table(lz, [GenericNoise(1.0), PTableNoise(load_ptable("v01"))])
    np.testing.assert_allclose(
        df.sd_generic.to_numpy(), res[res.noise_model == "generic"].sd_noise.to_numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(
        df.sd_ptable.to_numpy(), res[res.noise_model == "ptable"].sd_noise.to_numpy(), rtol=1e-12
    )
    # smaller regions part further (e0, sex T): p-table ratio rises with population
    e0 = df[(df.indicator == "e") & (df.age == 0) & (df.sex == "T")].sort_values("population")
    assert e0.ratio.iloc[:3].mean() < e0.ratio.iloc[-3:].mean()
    summ = summarise_comparison(df)
    assert set(summ.size_class) == {"200k-1M", ">=1M"}
    row = summ[
        (summ.indicator == "e") & (summ.age_group == "Y_LT1") & (summ.sex == "T") & (summ.size_class == "200k-1M")
    ].iloc[0]
    sel = e0[e0.size_class == "200k-1M"]
    assert (
        row.regions == len(sel)
        and row.ratio_median == pytest.approx(sel.ratio.median())
        and row.ratio_max == pytest.approx(sel.ratio.max())
    )
    small = smallest_regions(df, 3)
    assert small.region.tolist() == e0.region.iloc[:3].tolist()
    note = comparison_note(df, k=3)
    r = e0.iloc[0]
    assert f"{r.region} ({r.population / 1000:.0f}k) {r.ratio:.3f}" in note
    assert "e0 (sex T)" in note and f"median {e0[e0.size_class == '200k-1M'].ratio.median():.3f}" in note


def test_comparison_monte_carlo_columns(template):
    """The comparison's own Monte Carlo: p-table MC agrees with the analytic p-table sd and
    bias; generic noise with a zero floor is run on the same uniforms."""
    n = 4000
    df = compare_noise(template, load_ptable("v04"), mc=n, seed=5, workers=1)
    assert (df.mc_n == n).all()
    assert df.z_ptable.abs().max() < 5 and df.z_bias_ptable.abs().max() < 5
    np.testing.assert_allclose(df.mc_ratio, df.mc_sd_ptable / df.mc_sd_generic_floor)
    # the zero floor biases e0 downwards in the smaller region (noise on zero death counts is only upwards)
    e0 = df[(df.indicator == "e") & (df.age == 0) & (df.region == "BE34")]
    assert (e0.mc_shift_generic_floor < -5 * e0.mc_sd_generic_floor / np.sqrt(n)).all()


def test_comparison_needs_a_known_table_and_valid_V(be):
    with pytest.raises(ParameterError, match="unknown embedded p-table"):
        compare_noise(be, load_ptable("v09"))
    with pytest.raises(ParameterError, match="V"):
        compare_noise(be, load_ptable("v01"), V=-1)


# ------------------------------------------------------------------ CLI
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_ptable_build_show_round_trip(tmp_path, capsys):
    f = tmp_path / "d3v1.csv"
    code, out, err = run(capsys, "ptable", "build", "--D", 3, "--V", 1, "--js", 0, "--out", f)
    assert code == 0 and f.exists() and "WARNING" not in err
    ref = build_ptable(3, 1.0)
    back = read_ptable(f)
    np.testing.assert_array_equal(back.i, ref.i)
    np.testing.assert_array_equal(back.v, ref.v)
    np.testing.assert_array_equal(back.p, ref.p)
    np.testing.assert_array_equal(back.variance(), ref.variance())
    # the printed moments are the table's
    lines = [ln.split() for ln in out.splitlines() if re.match(r"^\s*>?=?\d+\s", ln)]
    assert [ln[0] for ln in lines] == ["0", "1", "2", ">=3"]
    np.testing.assert_allclose([float(ln[2]) for ln in lines], ref.variance(), atol=1e-6)
    # show FILE: same moments; nominal V must be passed for a file
    code, out2, err2 = run(capsys, "ptable", "show", f, "--V", 1)
    assert code == 0 and "NO" not in out2
    assert [ln.split()[2] for ln in out2.splitlines() if re.match(r"^\s*>?=?\d+\s", ln)] == [ln[2] for ln in lines]
    # Eurostat format with K keys, gzipped: re-read key table = the quantised table
    g = tmp_path / "d3v1.csv.gz"
    code, out, err = run(capsys, "ptable", "build", "--D", 3, "--V", 1, "--out", g, "--format", "eurostat", "--K", 1000)
    assert code == 0 and g.read_bytes()[:2] == b"\x1f\x8b"
    np.testing.assert_array_equal(read_ptable(g).key_table, ref.to_key_table(1000))
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
    # the same table under another name: the same bytes (no name or time in the gzip header)
    h = tmp_path / "again.csv.gz"
    code, out, err = run(capsys, "ptable", "build", "--D", 3, "--V", 1, "--out", h, "--format", "eurostat", "--K", 1000)
    assert code == 0 and h.read_bytes() == g.read_bytes()


def test_cli_ptable_show_embedded_against_hand_moments(capsys):
    for name in ("v01", "v04"):
        mean, var = hand_moments(name)
        code, out, err = run(capsys, "ptable", "show", name)
        assert code == 0
        rows = [ln.split() for ln in out.splitlines() if re.match(r"^\s*>?=?\d+\s", ln)]
        np.testing.assert_allclose([float(r[1]) for r in rows], mean, atol=5e-6)
        np.testing.assert_allclose([float(r[2]) for r in rows], var, rtol=1e-5)
    assert "above V" in out  # v04: counts 1 and 2 have variance 1.17 and 1.36 > V = 1


def test_cli_ptable_build_warns_where_V_is_not_reached(tmp_path, capsys):
    code, out, err = run(capsys, "ptable", "build", "--D", 2, "--V", 1, "--out", tmp_path / "d2.csv")
    assert code == 0
    assert re.search(r"WARNING: V = 1 is not reached at count 1: variance 0\.9318", err)
    assert re.search(r"^\s+1\s.*NO \(short by 0\.068", out, re.M)


@pytest.mark.parametrize(
    "argv,match",
    [
        (["ptable", "build", "--D", "0", "--V", "1"], r"D \(maximum deviation\)"),
        (["ptable", "build", "--D", "1", "--V", "1", "--js", "2"], r"constraint 'mean 0'.*count 1"),
        (["ptable", "build", "--D", "3", "--V", "0.5", "--js", "1"], r"constraint 'variance <= V'"),
        (["ptable", "build", "--D", "2", "--V", "1", "--pstay", "1.5"], r"pstay"),
        (["ptable", "show", "v09"], r"unknown embedded p-table 'v09'"),
        (["ptable", "show", "missing/table.csv"], r"does not exist"),
    ],
)
def test_cli_bad_parameters_exit_2_naming_the_constraint(tmp_path, capsys, argv, match):
    if argv[1] == "build":
        argv = argv + ["--out", str(tmp_path / "t.csv")]
    code, out, err = run(capsys, *argv)
    assert code == 2 and re.search(match, err), err
    assert not (tmp_path / "t.csv").exists()


def test_cli_argument_errors_exit_2(capsys):
    for argv in (
        ["ptable", "build", "--D", "2", "--V", "-1", "--out", "x.csv"],
        ["ptable", "build", "--V", "1", "--out", "x.csv"],
    ):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


def test_cli_compute_with_ptables_end_to_end(tmp_path, capsys, template):
    """compute --counts FILE --ptable v01 FILE: both tables run and label their rows."""
    f = tmp_path / "mytable.csv"
    write_ptable(build_ptable(2, 1.0, warn=False), f)
    out = tmp_path / "res.csv"
    code, text, err = run(
        capsys,
        "compute",
        "--counts",
        TEMPLATE,
        "--ptable",
        "v01",
        f,
        "--V",
        1,
        "--indicators",
        "e",
        "tfr",
        "--out",
        out,
    )
    assert code == 0, err
    df = read_results(out).fillna({"ptable": "", "age_group": ""})  # empty strings come back from CSV as missing
    assert set(df.ptable) == {"", "ptable v01", "ptable mytable.csv"}
    # the p-table rows carry the count-dependent analytic sd of the comparison
    cmp = compare_noise(template, load_ptable("v01"), e_ages=None)
    got = df[df.ptable == "ptable v01"].set_index(["region", "sex", "indicator", "age_group"]).sd_noise
    want = cmp.set_index(["region", "sex", "indicator", "age_group"]).sd_ptable
    np.testing.assert_allclose(got.loc[want.index].to_numpy(), want.to_numpy(), rtol=1e-8)  # CSV keeps 10 digits


def test_cli_compare_writes_table_and_note(tmp_path, capsys, template):
    out, note = tmp_path / "cmp.parquet", tmp_path / "note.md"
    code, text, err = run(capsys, "compare", "--counts", TEMPLATE, "--ptable", "v04", "--out", out, "--note", note)
    assert code == 0, err
    df = read_results(out)
    ref = compare_noise(load(str(TEMPLATE)), load_ptable("v04"))  # the file with the provenance --counts gives it
    pd.testing.assert_frame_equal(df.reset_index(drop=True), ref.reset_index(drop=True), check_dtype=False)
    assert df["data_status"].iloc[0].startswith("user-supplied (counts file counts_template.csv): population real")
    written = note.read_text()
    assert written.strip() == comparison_note(ref).strip() and written.strip() in text
    assert "BE34 (298k)" in written
    code, text, err = run(capsys, "compare", "--counts", TEMPLATE, "--ptable", "v09", "--out", tmp_path / "x.csv")
    assert code == 2 and "unknown embedded p-table" in err and not (tmp_path / "x.csv").exists()
    code, text, err = run(
        capsys, "compare", "--counts", TEMPLATE, "--ptable", "v01", "--level", 0, "--out", tmp_path / "x.csv"
    )
    assert code == 2 and "selection is empty" in err
    # 5-year publication: the summary still shows e0 (age group Y_LT5)
    code, text, err = run(
        capsys, "compare", "--counts", TEMPLATE, "--ptable", "v01", "--granularity", "5y", "--out", tmp_path / "y.csv"
    )
    assert code == 0 and re.search(r"^\s*e\s+Y_LT5\s+T\s", text, re.M), text
