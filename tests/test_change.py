"""The change over time and pooled years under noise (docs/design.md, section "Change over time
and pooled years"): the analytic variance against finite differences of the exact
indicators, against closed forms of a hand-built case, against Monte Carlo (z-scored);
the shared stock's covariance shown to matter; pooled indicators against a direct life
table of the summed counts; the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from demonoise import cli
from demonoise.analysis.change import CHANGE_COLUMNS, change_table
from demonoise.analysis.compute import noise_settings
from demonoise.core.counts import AgeAxis, Panel, Provenance, Region, TableProvenance
from demonoise.core.errors import ParameterError
from demonoise.demography.pooled import window_keys, window_values
from demonoise.io.datasets import load_panel
from demonoise.noise.models import GenericNoise
from demonoise.runtime import budget
from demonoise.uncertainty.change import (
    cell_moments,
    change_moments,
    level_moments,
    linearise_change,
    mdc_factor,
    monte_carlo_change,
)
from demonoise.uncertainty.montecarlo import z_score
from demonoise.uncertainty.propagation import linearise, noise_cell_moments, poisson_cell_variance


@pytest.fixture(scope="module")
def be():
    return load_panel("be-2015-2023")


@pytest.fixture(scope="module")
def small(be):
    """BE34 (about 300 000 people) and BE10 (1.2 million): the report's two cases."""
    return be.select(["BE34", "BE10"])


# ------------------------------------------------------------------ helpers: exact values by key
def _value(cl, which: str, ind: str, cells: dict, e_idx=None):
    """The exact indicator of window ``which`` from keyed cells (every table as held)."""
    wl = cl.w_to if which == "to" else cl.w_from
    keys = window_keys(wl.window.years)
    if ind in ("asfr", "tfr"):
        return window_values(
            wl.layout, ind, births=[cells[k] for k in keys["births"]], stocks=[cells[k][..., 0, :] for k in keys["pop"]]
        )[..., None, :]
    return window_values(
        wl.layout, ind, deaths=[cells[k] for k in keys["deaths"]], stocks=[cells[k] for k in keys["pop"]], e_idx=e_idx
    )


def _fd_variance(cl, ind: str, V: float, region: int, *, kinds=("deaths", "births", "pop"), step=0.02):
    """``sum_c (d change / d c)^2 V`` by central finite differences over every published
    cell of region ``region`` (all cells of every key perturbed one at a time, vectorised
    over the cells of a key by a replicate axis)."""
    base = cl.cells(None)
    out = 0.0
    e_idx = None
    if ind == "e":
        e_idx = np.searchsorted(cl.w_to.layout.lt_lower, cl.w_to.blocks["e"].age_lower)
    for key, x in base.items():
        if key[0] not in kinds or (ind in ("asfr", "tfr") and key[0] == "deaths"):
            continue
        if ind in ("e", "asmr") and key[0] == "births":
            continue
        flat = np.flatnonzero(np.ones(x[region].shape, bool))
        n = flat.size
        plus = {k: np.broadcast_to(v, (n,) + v.shape).astype(float).copy() for k, v in base.items()}
        minus = {k: v.copy() for k, v in plus.items()}
        idx = np.unravel_index(flat, x[region].shape)
        plus[key][(np.arange(n), region, *idx)] += step
        minus[key][(np.arange(n), region, *idx)] -= step
        d = (_value(cl, "to", ind, plus, e_idx) - _value(cl, "from", ind, plus, e_idx)) - (
            _value(cl, "to", ind, minus, e_idx) - _value(cl, "from", ind, minus, e_idx)
        )
        g = d[:, region] / (2 * step)  # (cells, S, K)
        out = out + (g * g).sum(axis=0) * V
    return out


# ------------------------------------------------------------------ finite differences
@pytest.mark.parametrize("pool", [1, 3])
def test_change_noise_variance_equals_finite_differences(small, pool):
    """Every indicator's change (and for pool 3 two overlapping windows, 2020-2022 and
    2021-2023, which share two years of deaths and three stocks): the analytic noise
    variance against the squared finite-difference gradient over every published cell."""
    cl = linearise_change(small, 2022, 2023, pool=pool, e_ages=[0, 40, 65, 85])
    nz = GenericNoise(1.0)
    r = 0  # BE34
    for ind in ("e", "asmr", "tfr", "asfr"):
        an = change_moments(cl, ind, nz)["var_noise"][r]
        fd = _fd_variance(cl, ind, 1.0, r)
        ok = an > 0
        assert ok.sum() >= an.size // 2, ind
        rel = np.abs(an[ok] / fd[ok] - 1)
        assert rel.max() < 1e-5, (ind, pool, rel.max())


def test_pooled_window_of_one_year_is_the_single_year_indicator(be):
    """k = 1: the window machinery gives the single-year values and variances of
    :func:`demonoise.uncertainty.propagation.linearise` (an independent code path)."""
    c = be.year(2023).select(["BE34", "BE10", "BE25"])
    lz = linearise(c, e_ages=[0, 65])
    cl = linearise_change(be.select(["BE34", "BE10", "BE25"]), 2022, 2023, e_ages=[0, 65])
    nz = GenericNoise(5.0)
    for ind in ("e", "asmr", "tfr", "asfr"):
        blk = lz.blocks[ind]
        lv = level_moments(cl.w_to, ind, nz)
        vn, _ = noise_cell_moments(lz, nz, blk.female_only)
        np.testing.assert_allclose(lv["value"], blk.lin.value, rtol=1e-13, atol=0)
        np.testing.assert_allclose(lv["var_noise"], blk.lin.variance(vn), rtol=1e-10)
        np.testing.assert_allclose(
            lv["var_pois"], blk.lin.variance(poisson_cell_variance(lz, blk.female_only)), rtol=1e-10
        )


# ------------------------------------------------------------------ a hand-built two-year case
def _hand_panel():
    """One region, 5-year published ages with an UNK cell; two years; counts chosen by hand."""
    ages = AgeAxis.five_year(85, unknown=True)
    births_ax = AgeAxis.from_labels(["Y15-19", "Y20-24", "Y25-29", "Y30-34", "Y35-39", "Y40-44", "Y45-49", "UNK"])
    A = ages.size
    base = np.array([500, 520, 540, 560, 600, 650, 700, 720, 700, 680, 650, 600, 550, 480, 400, 320, 220, 150, 3])
    assert base.size == A
    P = np.stack([base, base + 7, 2 * base + 5])  # F, M, T (T its own cell)
    stocks = np.stack([P, P + np.arange(A) % 5, P + 2 * (np.arange(A) % 3)])[:, None]
    m = 0.0008 * np.exp(0.33 * np.arange(A))
    d1 = np.round(np.stack([m * base, 1.2 * m * base, 2.2 * m * base])).astype(int)
    d1[:, -1] = 1
    d2 = d1 + (np.arange(A) % 2)[None]
    b = np.array([[30, 120, 210, 190, 80, 15, 1, 2]])
    prov = Provenance(TableProvenance("modelled"))
    return Panel(
        "hand",
        (2020, 2021),
        (Region("XX01"),),
        ages,
        stocks,
        prov,
        deaths=np.stack([d1[None], d2[None]]),
        births=np.stack([b, b + 3]),
        birth_ages=births_ax,
    )


def test_hand_built_shared_stock_covariance():
    """ASMR change of a 5-year cell: the covariance through the shared stock P(2021) against
    the closed form ``sum_x (d m(t2)/d P_x)(d m(t1)/d P_x) V`` with the spread of UNK written
    out by hand, and the change's variance against ``Var1 + Var2 - 2 Cov``."""
    p = _hand_panel()
    cl = linearise_change(p, 2020, 2021, granularity="5y", indicators=("asmr",))
    V = 3.0
    nz = GenericNoise(V)
    mo = change_moments(cl, "asmr", nz)
    stocks = [p.stock(y).astype(float) for y in (2020, 2021, 2022)]
    d = [p.deaths[0].astype(float), p.deaths[1].astype(float)]

    def spread(x):  # known + UNK in proportion
        k, u = x[..., :-1], x[..., -1:]
        return k * (1 + u / k.sum(-1, keepdims=True))

    E1 = (spread(stocks[0]) + spread(stocks[1])) / 2
    E2 = (spread(stocks[1]) + spread(stocks[2])) / 2
    m1, m2 = spread(d[0]) / E1, spread(d[1]) / E2
    # d m_x / d P_b of the shared stock: through E (weight 1/2) and the spread of P(2021)
    P = stocks[1]
    k, u = P[..., :-1], P[..., -1]
    S = k.sum(-1)
    n = k.shape[-1]
    J = np.zeros(P.shape[:-1] + (n, n + 1))  # d spread_a / d P_b
    for s in range(P.shape[1]):
        J[0, s, :, :n] = np.eye(n) * (1 + u[0, s] / S[0, s]) - np.outer(k[0, s], np.ones(n)) * u[0, s] / S[0, s] ** 2
        J[0, s, :, n] = k[0, s] / S[0, s]
    g1 = (-m1 / E1 / 2)[..., :, None] * J
    g2 = (-m2 / E2 / 2)[..., :, None] * J
    cov = (g1 * g2).sum(-1) * V
    np.testing.assert_allclose(mo["cov_noise"], cov, rtol=1e-12)
    lv1 = level_moments(cl.w_from, "asmr", nz)["var_noise"]
    lv2 = level_moments(cl.w_to, "asmr", nz)["var_noise"]
    np.testing.assert_allclose(mo["var_noise"], lv1 + lv2 - 2 * cov, rtol=1e-12)
    # with noise on the stocks alone the covariance is a quarter of the two levels' variance
    pop = ("pop_start", "pop_end")
    mp = change_moments(cl, "asmr", nz, pop)
    np.testing.assert_allclose(mp["cov_noise"], cov, rtol=1e-12)
    lp1 = level_moments(cl.w_from, "asmr", nz, pop)["var_noise"]
    lp2 = level_moments(cl.w_to, "asmr", nz, pop)["var_noise"]
    assert (cov[..., 1:] / (lp1 + lp2)[..., 1:]).min() > 0.2  # (the first age group has no deaths in 2020)
    np.testing.assert_allclose(mp["var_noise"], lp1 + lp2 - 2 * cov, rtol=1e-12)
    # Poisson: events of different years independent, stocks none
    np.testing.assert_allclose(
        mo["var_pois"],
        level_moments(cl.w_from, "asmr", nz)["var_pois"] + level_moments(cl.w_to, "asmr", nz)["var_pois"],
        rtol=1e-12,
    )


# ------------------------------------------------------------------ pooled against a direct life table
def _direct_e(D, E, a0=0.2):
    """Eurostat's life table by a plain loop (ages 0..84, 85+), a_0 = 0.2, a_x = 0.5."""
    m = D / E
    alive, person_years = 1.0, []
    for x in range(85):
        a = a0 if x == 0 else 0.5
        q = m[x] / (1 + (1 - a) * m[x])
        person_years.append(alive / (1 + (1 - a) * m[x]))
        alive = alive * (1 - q)
    person_years.append(alive / m[85])
    return float(np.sum(person_years))


def test_pooled_indicators_are_those_of_the_summed_counts(be):
    """3-year pooled e0 and TFR of 2021-2023 against a direct computation from the summed
    deaths, births and person-years (deaths and stocks: UNK is 0 in these years; births:
    each year's UNK spread over its known ages)."""
    cl = linearise_change(be, 2020, 2023, pool=3, e_ages=[0])
    yrs = [2021, 2022, 2023]
    for r, code in enumerate(be.codes):
        for s in range(3):
            D = sum(be.deaths[be.index(t), r, s, :-1] for t in yrs).astype(float)
            E = sum((be.stock(t)[r, s, :-1] + be.stock(t + 1)[r, s, :-1]) / 2 for t in yrs)
            D = np.concatenate([D[:85], [D[85:].sum()]])
            E = np.concatenate([E[:85], [E[85:].sum()]])
            assert cl.w_to.blocks["e"].lin.value[r, s, 0] == pytest.approx(_direct_e(D, E), rel=1e-12), code
        # each year's births of unknown age of mother spread in proportion to its known ones
        B = sum(
            be.births[be.index(t), r, :-1] * (1 + be.births[be.index(t), r, -1] / be.births[be.index(t), r, :-1].sum())
            for t in yrs
        )
        W = sum((be.stock(t)[r, 0, :-1] + be.stock(t + 1)[r, 0, :-1]) / 2 for t in yrs)
        b = B[1:36].copy()  # Y15..Y49; Y_LT15 counted at 15, Y_GE50 at 49
        b[0] += B[0]
        b[-1] += B[36]
        assert cl.w_to.blocks["tfr"].lin.value[r, 0, 0] == pytest.approx((b / W[15:50]).sum(), rel=1e-12)


def test_pooling_lowers_both_variances_alike(be):
    """Three pooled years: the level's Poisson and noise sd fall by about 1/sqrt(3) and the
    admixture changes little (BE34, e0, V = 5)."""
    df = change_table(
        be.select(["BE34"]),
        [GenericNoise(5.0)],
        year_from=2020,
        year_to=2023,
        pools=(1, 3),
        indicators=("e",),
        e_ages=[0],
    )
    one = df[(df.pool == 1) & (df.sex == "T")].iloc[0]
    three = df[(df.pool == 3) & (df.sex == "T")].iloc[0]
    assert 0.45 < three.sd_poisson_to / one.sd_poisson_to < 0.7
    assert 0.45 < three.sd_noise_to / one.sd_noise_to < 0.7
    assert abs(three.admixture_to - one.admixture_to) < 0.1


# ------------------------------------------------------------------ Monte Carlo
def _z_all(cl, mc, nz, n, inds, noised=("deaths", "births", "pop_start", "pop_end")):
    out = {}
    for ind in inds:
        m = change_moments(cl, ind, nz, noised)
        lv = level_moments(cl.w_to, ind, nz, noised)
        for what, vn, vp in (("change", m["var_noise"], m["var_pois"]), ("to", lv["var_noise"], lv["var_pois"])):
            for comp, v in (("noise", vn), ("poisson", vp), ("total", vn + vp)):
                out[(ind, what, comp)] = z_score(mc[(ind, what, comp)]["sd"], np.sqrt(v), n)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("pool", [1, 3])
def test_change_and_pooled_sd_against_monte_carlo(small, pool):
    """The change's and the later window's noise, Poisson and total sd of e0, e65 and the
    TFR against a Monte Carlo of N = 4000 (every published cell drawn once), V = 5."""
    n = 4000
    cl = linearise_change(small, 2020 if pool == 3 else 2022, 2023, pool=pool, e_ages=[0, 65], indicators=("e", "tfr"))
    nz = GenericNoise(5.0)
    mc = monte_carlo_change(cl, nz, n=n, seed=7, indicators=("e", "tfr"))
    z = _z_all(cl, mc, nz, n, ("e", "tfr"))
    worst = max(float(np.nanmax(np.abs(v))) for v in z.values())
    assert worst < 5, {k: np.round(v, 1) for k, v in z.items()}


@pytest.mark.slow
def test_shared_stock_covariance_matters_when_exposure_noise_is_large(small):
    """Noise on the stocks only (V = 5): the ASMR change at old ages and e0 depend on the
    shared stock P(2023) through both years, with gradients of opposite sign that nearly
    cancel. The analytic sd with the covariance agrees with the Monte Carlo; the sum of the
    two years' variances (the covariance left out) is far off."""
    n = 4000
    noised = ("pop_start", "pop_end")
    cl = linearise_change(small, 2022, 2023, e_ages=[0], indicators=("e", "asmr"))
    nz = GenericNoise(5.0)
    mc = monte_carlo_change(cl, nz, n=n, seed=11, indicators=("e", "asmr"), noised=noised)
    var, _, _ = cell_moments(cl.cells(False), nz, noised)
    for ind, sel in (("e", np.s_[:, :, 0]), ("asmr", np.s_[:, :, 60:85])):
        d = cl.diffs[ind]
        right = np.sqrt(d.variance(var))[sel]
        wrong = np.sqrt(d.variance(var, ignore_shared=True))[sel]
        sd = mc[(ind, "change", "noise")]["sd"][sel]
        z_right, z_wrong = z_score(sd, right, n), z_score(sd, wrong, n)
        assert np.abs(z_right).max() < 5, (ind, np.round(z_right, 1))
        assert np.abs(z_wrong).min() > 10, (ind, np.round(z_wrong, 1))
        assert (wrong / right).min() > 1.2


# ------------------------------------------------------------------ decisions and the command line
def test_mdc_and_z():
    assert mdc_factor() == pytest.approx(1.959963984540054 + 0.8416212335729143, abs=1e-12)
    assert mdc_factor(0.01, 0.9) == pytest.approx(2.5758293035489 + 1.2815515655446004, abs=1e-9)
    with pytest.raises(ParameterError):
        mdc_factor(1.5)


def test_change_table_columns_and_decisions(small):
    df = change_table(small, noise_settings([1, 5], ptables=["v01"]), year_from=2022, year_to=2023, pools=(1, 3))
    assert list(df.columns[1 : 1 + len(CHANGE_COLUMNS)]) == list(CHANGE_COLUMNS)
    assert set(df.pool) == {1, 3} and set(df.setting) == {"V=1", "V=5", "v01"}
    num = df.select_dtypes("number")
    e = df[df.indicator == "e"]
    assert not e[["change", "sd_noise", "sd_poisson", "sd_total", "z_total", "mdc_total"]].isna().any().any()
    np.testing.assert_allclose(df.sd_total**2, df.sd_noise**2 + df.sd_poisson**2, rtol=1e-12)
    np.testing.assert_allclose(df.mdc_total, mdc_factor() * df.sd_total, rtol=1e-12)
    ok = df.sd_poisson > 0
    np.testing.assert_allclose(df.z_total[ok], df.change[ok] / df.sd_total[ok], rtol=1e-12)
    np.testing.assert_allclose(df.z_poisson[ok], df.change[ok] / df.sd_poisson[ok], rtol=1e-12)
    assert df.z_poisson[~ok].isna().all()  # no events: no Poisson sd, z undefined (not infinite)
    # noise can only widen: |z| with noise below |z| without, the MDC above
    assert (df.mdc_total >= df.mdc_poisson - 1e-15).all()
    assert (np.abs(df.z_total[ok]) <= np.abs(df.z_poisson[ok]) + 1e-12).all()
    # the generic model is unbiased; the p-table's first-order bias is the difference of the levels'
    assert (df.loc[df.noise_model == "generic", "bias_noise"] == 0).all()
    assert np.isfinite(num.loc[e.index, "change"]).all()


def test_cli_change_writes_the_table(tmp_path, capsys):
    out = tmp_path / "change.csv"
    rc = cli.main(
        [
            "change",
            "--dataset",
            "be-2015-2023",
            "--from",
            "2022",
            "--to",
            "2023",
            "--V",
            "1",
            "5",
            "--ptable",
            "v01",
            "--pool",
            "1",
            "3",
            "--regions",
            "BE34",
            "--indicators",
            "e",
            "tfr",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    df = pd.read_csv(out)
    assert set(CHANGE_COLUMNS) <= set(df.columns) and set(df.pool) == {1, 3}
    text = capsys.readouterr().out
    assert "BE34" in text and "mdc_total" in text
    rc = cli.main(
        ["change", "--dataset", "be-2015-2023", "--from", "2023", "--to", "2022", "--V", "1", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--to (2022) must be after --from (2023)" in err
    rc = cli.main(
        [
            "change",
            "--dataset",
            "be-2015-2023",
            "--from",
            "2013",
            "--to",
            "2022",
            "--pool",
            "1",
            "--V",
            "1",
            "--out",
            str(out),
        ]
    )
    assert rc == 2 and "year 2013 is not in dataset 'be-2015-2023'" in capsys.readouterr().err


@pytest.mark.slow
def test_ptable_bias_of_the_change_against_monte_carlo(small):
    """Under the p-table v04 (biased for counts 1 and 2) the ASMR change of BE34 and BE10 has a
    first-order noise bias ``sum_c (g_to - g_from) b_c``; the Monte Carlo's mean shift agrees
    (z-scored by its standard error), where the bias is many standard errors away from 0."""
    from demonoise.analysis.ptables import resolve_ptable
    from demonoise.noise.models import PTableNoise

    nz = PTableNoise(resolve_ptable("v04"))
    n = 4000
    cl = linearise_change(small, 2022, 2023, indicators=("asmr",))
    bias = change_moments(cl, "asmr", nz)["bias"]
    mc = monte_carlo_change(cl, nz, n=n, seed=5, indicators=("asmr",))
    res = mc[("asmr", "change", "noise")]
    se = res["sd"] / np.sqrt(res["n_valid"])
    big = np.abs(bias) > 10 * se
    assert big.sum() >= 5
    z = (res["mean"][big] - bias[big]) / se[big]
    assert np.abs(z).max() < 5, np.round(z, 1)


def test_design_figures_are_the_change_table():
    """The table of docs/design.md, section "Change over time and pooled years", is what
    `demonoise change` computes (to the three decimals it shows)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "design.md").read_text(encoding="utf-8")
    sec = text.split("## Change over time and pooled years", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| (BE\d\d) ([TFM]) \| ([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|$", sec, re.M
    )
    assert len(rows) == 4
    be = load_panel("be-2015-2023").select(["BE34", "BE10"])
    df = change_table(
        be, noise_settings([1, 5], ptables=["v01"]), year_from=2022, year_to=2023, indicators=("e",), e_ages=[0]
    )
    for region, sex, change, sd_p, sd_n, z_p, z_t, mdc_p, mdc_t in rows:
        sub = df[(df.region == region) & (df.sex == sex)].set_index("setting").loc[["V=1", "V=5", "v01"]]
        nums = lambda s: [float(x) for x in s.replace("+", "").split("/")]  # noqa: E731
        assert nums(change) == pytest.approx([round(sub.change.iloc[0], 3)], abs=1e-9)
        assert nums(sd_p) == pytest.approx([round(sub.sd_poisson.iloc[0], 3)], abs=1e-9)
        assert nums(sd_n) == pytest.approx(list(sub.sd_noise.round(3)), abs=1e-9)
        assert nums(z_p) == pytest.approx([round(sub.z_poisson.iloc[0], 2)], abs=1e-9)
        assert nums(z_t) == pytest.approx(list(sub.z_total.round(2)), abs=1e-9)
        assert nums(mdc_p) == pytest.approx([round(sub.mdc_poisson.iloc[0], 2)], abs=1e-9)
        assert nums(mdc_t) == pytest.approx(list(sub.mdc_total.round(2)), abs=1e-9)


def test_design_pooled_figures_are_computed():
    """The 3-year pooling sentence of docs/design.md is what the change table gives for BE34:
    the year-on-year change 2022 -> 2023 against the 3-year windows 2018-2020 -> 2021-2023."""
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "design.md").read_text(encoding="utf-8").split())
    be = load_panel("be-2015-2023").select(["BE34"])
    kw = dict(indicators=("e",), e_ages=[0])
    yoy = change_table(be, [GenericNoise(5.0)], year_from=2022, year_to=2023, **kw)
    pooled = change_table(be, [GenericNoise(5.0)], year_from=2020, year_to=2023, pools=(3,), **kw)
    one, three = (d[d.sex == "T"].iloc[0] for d in (yoy, pooled))
    for phrase in (
        f"from {one.mdc_poisson:.2f} years (2022 -> 2023) to {three.mdc_poisson:.2f} without noise",
        f"from {one.mdc_total:.2f} to {three.mdc_total:.2f} at V = 5",
        f"({one.sd_poisson_to:.3f} -> {three.sd_poisson_to:.3f} and {one.sd_noise_to:.3f} -> {three.sd_noise_to:.3f}",
        f"({one.admixture_to:.3f} -> {three.admixture_to:.3f})",
    ):
        assert phrase in text, phrase


def test_cli_change_reads_a_multi_year_template(be, tmp_path):
    """`--counts FILE`: a user's multi-year counts template gives the table the dataset gives."""
    from demonoise.io.template import write_panel_csv

    path = write_panel_csv(be.select(["BE34"]).window(2021, 2023), tmp_path / "mine.csv")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    common = ["--from", "2022", "--to", "2023", "--V", "5", "--indicators", "e", "--out"]
    assert cli.main(["change", "--counts", str(path), *common, str(a)]) == 0
    assert cli.main(["change", "--dataset", "be-2015-2023", "--regions", "BE34", *common, str(b)]) == 0
    da, db = pd.read_csv(a), pd.read_csv(b)
    cols = ["change", "sd_noise", "sd_poisson", "mdc_total"]
    np.testing.assert_allclose(da[cols].to_numpy(), db[cols].to_numpy(), rtol=1e-12)


def test_a_change_monte_carlo_is_sized_before_it_runs(tmp_path, capsys, monkeypatch):
    """``change --mc`` times a probe block first: 10^8 replicates are refused in one line
    with the estimate (nothing written), unless ``--yes``; a small run says its estimate,
    then its progress (here at every block)."""
    monkeypatch.setattr(budget, "EVERY", 0.0)
    out = tmp_path / "c.csv"
    args = ["change", "--dataset", "be-2015-2023", "--from", "2022", "--to", "2023", "--V", "1", "--regions", "BE34"]
    assert cli.main([*args, "--mc", "100000000", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the Monte Carlo is large" in err[0] and "pass --yes" in err[0], err
    assert not out.exists()
    assert cli.main([*args, "--mc", "500", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Monte Carlo 1 run(s) x 500 replicates over 1 regions, estimated" in err
    assert "Monte Carlo 250 of 500 replicates" in err and "Monte Carlo 500 of 500 replicates" in err
    assert pd.read_csv(out)["sd_total"].notna().all()


def test_chapter_rows_pick_one_headline_and_sex_per_setting_in_region_order():
    """A hand-made chapter: the rows of e0 (T) per setting, regions country first then by
    code (a region without rows: NaN), and the CSV rows per region and setting."""
    from types import SimpleNamespace

    from demonoise.analysis.change import chapter_rows

    rows = [
        (r, lvl, h, x, s, m, v, z)
        for r, lvl, z in (("BE2", 2, 2.0), ("BE", 0, 3.0), ("BE1", 2, 1.0))
        for h, x in (("e0", "T"), ("e0", "F"), ("TFR", "F"))
        for s, m, v in (("V=1", "generic", 1.0), ("V=5", "generic", 5.0))
    ]
    cols = ["region", "nuts_level", "headline", "sex", "setting", "noise_model", "V", "z_total"]
    verdicts = pd.DataFrame(rows, columns=cols)
    verdicts["z_total"] *= np.where(verdicts["setting"] == "V=5", 0.5, 1.0)
    ch = SimpleNamespace(verdicts=verdicts, detectable=verdicts[verdicts["region"] != "BE2"])
    per, frame = chapter_rows(ch, "verdicts", "e0", "T", columns=["z_total"])
    assert [s.key for s in per] == ["V=1", "V=5"]
    assert [list(g.index) for g in per.values()] == [["BE", "BE1", "BE2"]] * 2
    assert list(per[next(iter(per))]["z_total"]) == [3.0, 1.0, 2.0]
    assert frame.to_dict("records")[:2] == [
        {"region": "BE", "sex": "T", "headline": "e0", "setting": "V=1", "z_total": 3.0},
        {"region": "BE", "sex": "T", "headline": "e0", "setting": "V=5", "z_total": 1.5},
    ]
    per, _ = chapter_rows(ch, "detectable", "e0", "T", settings=["V=5"], columns=["z_total"])
    (g,) = per.values()
    assert list(g.index) == ["BE", "BE1", "BE2"] and np.isnan(g.loc["BE2", "z_total"])
    assert g.loc["BE1", "z_total"] == 0.5


def test_verdict_view_says_significance_without_noise_from_z_poisson():
    """A hand-made chapter of three regions and two settings: the column "signif." without
    noise is yes / no by |z_poisson| against 1.96 (a dash without events), also where the
    first setting takes the significance away ("lost" in that setting's column)."""
    from types import SimpleNamespace

    from demonoise.analysis.change import change_verdicts
    from demonoise.report.content.change import verdict_view

    zp = {"BE": 3.0, "BE1": 1.0, "BE2": np.nan}  # significant, not significant, no events
    rows = [
        (r, lvl, f"Region {r}", "e", 0.0, "T", s, m, v, 70.0, 70.0 + zp[r], zp[r], 1.0, f, f, zp[r], zp[r] / f)
        for r, lvl in (("BE", 0), ("BE1", 2), ("BE2", 2))
        for s, m, v, f in (("V=1", "generic", 1.0, 2.0), ("V=5", "generic", 5.0, 1.0))
    ]  # sd_poisson 1, sd_total 2 (V = 1: BE loses its significance) or 1 (V = 5)
    cols = ["region", "nuts_level", "region_name", "indicator", "age", "sex", "setting", "noise_model", "V"]
    cols += ["value_from", "value_to", "change", "sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total"]
    table = pd.DataFrame(rows, columns=cols)
    verdicts = change_verdicts(table, headlines=("e0",), alpha=0.05)
    ch = SimpleNamespace(verdicts=verdicts, year_from=2022, year_to=2023, z_crit=1.96, alpha=0.05, table_status={})
    shown = verdict_view(ch, "e0", "T").shown
    assert list(shown.iloc[:, 5]) == ["yes", "no", "\u2014"]  # without noise
    assert list(shown.iloc[:, 7]) == ["lost", "no", "\u2014"] and list(shown.iloc[:, 9]) == ["yes", "no", "\u2014"]
