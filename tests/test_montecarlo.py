"""Analytic first-order propagation against Monte Carlo, on real Belgian counts.

Independent truth: the Monte Carlo recomputes every indicator exactly from perturbed
published cells; the analytic side is the delta method. Agreement is judged against
sampling error, z = (sd_MC / sd_analytic - 1) sqrt(2N) (docs/design.md, section "Monte Carlo and the z-score").
"""

import numpy as np
import pytest

from _fixtures_lifetable import belgian_counts
from demonoise.analysis.results import results_table
from demonoise.core.errors import DataError, ParameterError
from demonoise.noise.models import GenericNoise
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import linearise

N = 10_000


@pytest.fixture(scope="module")
def be(data_dir):
    return belgian_counts(data_dir)  # 11 NUTS 2 regions, real deaths 2021 and populations 2021/2022


@pytest.fixture(scope="module")
def mc_table(be):
    lz = linearise(be, indicators=("e", "asmr"), e_ages=[0, 65])
    g = GenericNoise(5.0)
    mc = monte_carlo(lz, g, n=N, seed=7, indicators=("e", "asmr"), quantiles=(0.025, 0.975))
    return results_table(lz, [g], mc={0: mc})


@pytest.mark.slow
def test_e0_analytic_matches_monte_carlo(mc_table, be):
    df = mc_table
    pop = be.pop_start.sum(-1)  # every Belgian region has > 100 000 inhabitants
    assert pop.min() > 100_000
    e0 = df[(df.indicator == "e") & (df.age == 0)]
    assert len(e0) == 33
    worst = e0[["z_noise", "z_pois", "z_tot"]].abs().max()
    print("largest |z| for e0 (noise, Poisson, total):", worst.round(2).to_dict())
    assert (worst < 5).all()
    # the MC 95 % interval is centred on the value and about +-1.96 sd wide
    width = (e0.mc_q_hi - e0.mc_q_lo) / (2 * 1.96 * e0.sd_tot)
    assert width.between(0.93, 1.07).all()


@pytest.mark.slow
def test_asmr_cells_with_20_events_match(mc_table):
    df = mc_table
    cells = df[(df.indicator == "asmr") & (df.events >= 20)]
    assert len(cells) > 1500
    worst = cells[["z_noise", "z_pois", "z_tot"]].abs().max()
    print(f"largest |z| over {len(cells)} ASMR cells with >= 20 deaths:", worst.round(2).to_dict())
    assert (worst < 5).all()
    # the results table flags exactly the rows outside the bound
    assert df.z_flag.sum() == (df[["z_noise", "z_pois", "z_tot"]].abs() > 5).any(axis=1).sum()


@pytest.mark.slow
def test_first_order_breaks_down_for_tiny_counts_and_is_flagged(mc_table):
    """Rates from zero or a handful of deaths: the first-order result is not trusted
    (small_count), and the results table shows why (MC and analytic disagree)."""
    df = mc_table
    small = df[(df.indicator == "asmr") & (df.events < 10)]
    assert small.small_count.all() and len(small) > 100
    zero = df[(df.indicator == "asmr") & (df.events == 0)]
    # no Poisson variance at a zero cell, so the admixture is undefined there
    assert zero.var_pois.eq(0).all() and zero.admixture.isna().all()


def test_granularity_changes_noise_as_the_formula_says(be):
    """5-year publication: fewer, larger cells carry the noise. The analytic ratio of
    noise sds (single / 5-year) is reproduced by Monte Carlo on one region."""
    region = be.select(["BE34"])
    g = GenericNoise(5.0)
    sd = {}
    for gran in ("single", "5y"):
        lz = linearise(region, granularity=gran, indicators=("e",), e_ages=[0])
        mc = monte_carlo(lz, g, n=N, seed=11, indicators=("e",), components=("noise",), quantiles=None, workers=1)
        ana = np.sqrt(
            lz.blocks["e"].lin.variance(
                {
                    m: np.full(getattr(lz.counts, m).shape, g.exact_variance())
                    for m in ("deaths", "pop_start", "pop_end")
                }
            )
        )
        sd[gran] = (ana[..., 0], mc.stats[("e", "noise")]["sd"][..., 0])
    ratio_ana = sd["single"][0] / sd["5y"][0]
    ratio_mc = sd["single"][1] / sd["5y"][1]
    # relative standard error of a ratio of two independent sds: sqrt(2 / (2N))
    z = (ratio_mc / ratio_ana - 1) / np.sqrt(2 / (2 * N))
    print("noise sd of e0, single/5-year: analytic", ratio_ana.round(3), "MC", ratio_mc.round(3))
    assert np.all(ratio_ana > 1.8)  # single ages carry clearly more noise (design notes: variance ~5x)
    assert np.all(np.abs(z) < 5)


def test_zero_floor_is_a_different_noise_model(be):
    """Flooring noisy counts at zero removes negative deaths: on a small region the MC sd
    of e0 falls below the (unfloored) analytic figure; the table says which model ran."""
    small = be.select(["BE34"])
    lz = linearise(small, indicators=("e",), e_ages=[0])
    g = GenericNoise(5.0)
    plain = monte_carlo(lz, g, n=4000, seed=3, indicators=("e",), components=("noise",), quantiles=None)
    floor = monte_carlo(
        lz, g, n=4000, seed=3, indicators=("e",), components=("noise",), quantiles=None, floor_zero=True
    )
    sd_p, sd_f = plain.stats[("e", "noise")]["sd"], floor.stats[("e", "noise")]["sd"]
    assert np.all(sd_f < sd_p)
    df = results_table(lz, [g], mc={0: floor}, zero_floor=True)
    assert df.zero_floor.all()


def test_reproducible_and_independent_of_workers(be):
    lz = linearise(be.select(["BE10", "BE34"]), indicators=("e",), e_ages=[0])
    g = GenericNoise(1.0)
    a = monte_carlo(lz, g, n=300, seed=5, indicators=("e",), workers=1)
    b = monte_carlo(lz, g, n=300, seed=5, indicators=("e",), workers=2)
    for key in a.stats:
        np.testing.assert_array_equal(a.stats[key]["sd"], b.stats[key]["sd"])
    c = monte_carlo(lz, g, n=300, seed=6, indicators=("e",), workers=1)
    assert not np.array_equal(a.stats[("e", "noise")]["sd"], c.stats[("e", "noise")]["sd"])


def test_bad_parameters(be):
    lz = linearise(be.select(["BE10"]), indicators=("e",), e_ages=[0])
    with pytest.raises(ParameterError, match="at least 2"):
        monte_carlo(lz, GenericNoise(1.0), n=1)
    with pytest.raises(ParameterError, match="not linearised"):
        monte_carlo(lz, GenericNoise(1.0), n=10, indicators=("tfr",))
    with pytest.raises(ParameterError, match="variance"):
        GenericNoise(0.0)
    with pytest.raises(ParameterError):
        GenericNoise(5.0, D=3)  # D = 3 carries at most 4


def test_zero_exposure_with_deaths_and_empty_open_group(be):
    c = be.select(["BE10"])
    d = np.array(c.deaths)
    p0, p1 = np.array(c.pop_start), np.array(c.pop_end)
    p0[0, 0, 40] = p1[0, 0, 40] = 0
    with pytest.raises(DataError) as e:
        linearise(c.replace(pop_start=p0, pop_end=p1), indicators=("e",))
    assert (e.value.region, e.value.sex, e.value.age) == ("BE10", "F", "Y40")
    d[0, 1, 85:] = 0
    with pytest.raises(DataError, match="open age group") as e:
        linearise(c.replace(deaths=d), indicators=("e",))
    assert (e.value.region, e.value.sex, e.value.age) == ("BE10", "M", "Y_GE85")


def test_tfr_and_asfr_analytic_match_monte_carlo():
    """TFR in every region (all Belgian regions exceed 100 000 inhabitants) and every
    ASFR cell with at least 20 births, on be-2023 (real population; regional births
    modelled from the real national births), V = 5, N = 10 000."""
    from demonoise.io.datasets import load

    be = load("be-2023")
    lz = linearise(be, indicators=("asfr", "tfr"))
    g = GenericNoise(5.0)
    mc = monte_carlo(lz, g, n=N, seed=13, indicators=("asfr", "tfr"), quantiles=None)
    df = results_table(lz, [g], mc={0: mc})
    tfr = df[df.indicator == "tfr"]
    assert len(tfr) == 12
    cells = df[(df.indicator == "asfr") & (df.events >= 20)]
    assert len(cells) > 300
    for name, part in (("TFR", tfr), (f"{len(cells)} ASFR cells with >= 20 births", cells)):
        worst = part[["z_noise", "z_pois", "z_tot"]].abs().max()
        print(f"largest |z| for {name}:", worst.round(2).to_dict())
        assert (worst < 5).all()
