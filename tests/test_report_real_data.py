"""The life expectancy section on real data (be-2015-2023, whose 2023 is be-2023: Belgian
NUTS 2 population and deaths as published by Eurostat) against the reference figures of the design notes: BE34
(Prov. Luxembourg, about 300 000 people) both sexes, single-age cells, V = 5: relative
noise sd of e0 0.327 % and admixture 45.2 % with 85+ as one cell; with 85+ carrying
its 16 published cells (the default layout) the noise sd rises by under 1 %, so the
admixture lies between 45.2 % and sqrt(1 + 1.02 x 1.1076) - 1 = 46.0 %. The population the
report shows is Eurostat's published total on 1 January 2023 (demo_r_d2jan, age TOTAL)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from demonoise.analysis.verdicts import index_metrics
from demonoise.core.formats import fmt_pct
from demonoise.core.vocabulary import SEX_WORDS
from demonoise.report.batch.params import parse_params
from demonoise.report.batch.stages import run_reports

pytestmark = pytest.mark.slow
RAW = Path(__file__).resolve().parents[1] / "data-raw" / "eurostat" / "demo_r_d2jan_BE_2015_2024.csv.gz"


def _published_total(geo: str, year: int) -> float:
    """Eurostat's published population on 1 January, both sexes, age TOTAL (demo_r_d2jan)."""
    raw = pd.read_csv(RAW)
    row = raw[(raw["geo"] == geo) & (raw["time"] == year) & (raw["sex"] == "T") & (raw["age"] == "TOTAL")]
    (value,) = row["values"].tolist()
    return float(value)


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    out = tmp_path_factory.mktemp("be")
    params = parse_params(
        {
            "datasets": {"be-2015-2023": ["BE"]},
            "noise": [{"V": 5}],
            "indicators": ["life_expectancy"],
            "mc": 0,
            "pdf": False,
        },
        source="test",
    )
    rep = run_reports(params, out, workers=2, progress=False, log=None)
    return out, rep


def test_life_expectancy_section_on_real_belgian_data(be):
    out, rep = be
    assert rep.ok, [o.error for o in rep.outcomes.values()]
    (o,) = rep.outcomes.values()
    # the figures from the results table the report's notebooks read (stored by the compute stage)
    (table,) = (out / "results" / "be-2015-2023").glob("BE-*[0-9a-f].parquet")
    df = pd.read_parquet(table)
    m = index_metrics(df, 5.0)
    assert m["regions"] == 11
    assert m["e0_worst_region"] == "BE34"
    e0 = df[(df.indicator == "e") & (df.age == 0) & (df.V == 5.0) & (df.region == "BE34")].set_index("sex")
    # both sexes as measured before the worst-sex rule; the index takes the worst of F, M and T, named
    assert 0.452 <= e0.loc["T", "admixture"] <= 0.460
    assert 0.00327 <= e0.loc["T", "rel_noise"] <= 0.00327 * 1.01
    worst = e0["admixture"].idxmax()
    assert m["e0_worst_sex"] == worst and m["e0_admixture_worst"] == e0.loc[worst, "admixture"]
    assert m["e0_rel_noise_worst"] == e0.loc[worst, "rel_noise"]
    # the population on 1 January (the sum of the published single ages and UNK) is Eurostat's total
    assert m["e0_worst_region_population"] == _published_total("BE34", 2023) == 297_654
    html = o.html.read_text(encoding="utf-8")
    # the verdict names the smallest region with its admixture, and the real-data label shows
    assert (
        "In the smallest region, BE34 Prov. Luxembourg (BE) (297\u202f654 people), it adds "
        f"{fmt_pct(m['e0_admixture_worst'])} ({SEX_WORDS[m['e0_worst_sex']]})" in html
    )
    label = "population and deaths real (Eurostat), 2015-2023; regional births modelled per year from national births"
    assert label in html
    assert "Noise is at least as large as the Poisson uncertainty (A &gt;= 41 %)" in html
    # no Monte Carlo was asked for, and the section says so instead of hiding it
    assert "No Monte Carlo check was run for life expectancy." in html


def test_every_table_shows_eurostats_population_on_1_january(be):
    """The results table's population of every Belgian region and the country (the figure of
    the decision table, the chapter tables and the index) is Eurostat's published total on
    1 January 2023, not the average population behind the rates."""
    out, _ = be
    (table,) = (out / "results" / "be-2015-2023").glob("BE-*[0-9a-f].parquet")
    df = pd.read_parquet(table)
    pop = df.drop_duplicates("region").set_index("region")["population"]
    assert len(pop) == 12
    regions = [geo for geo in pop.index if geo != "BE"]
    for geo in regions:
        assert pop[geo] == _published_total(geo, 2023), geo
    assert pop["BE"] == sum(pop[geo] for geo in regions)  # the country: its 11 regions
    e0 = df[(df["indicator"] == "e") & (df["sex"] == "T") & (df["age"] == 0)].set_index("region")
    assert (e0["exposure"] != pop.reindex(e0.index)).all()  # the exposure is another figure


def test_a_dataset_of_several_years_adds_the_change_chapter_after_the_indicators(be):
    """be-2015-2023 holds nine years: its report gains "Change since the previous year"
    (2022 -> 2023) after the indicator chapters, and its smallest detectable change of e0
    for BE34 is the change table's (the library's ``change_table`` on the same data)."""
    import demonoise as dn
    from demonoise.analysis.change import change_table

    _, rep = be
    (o,) = rep.outcomes.values()
    html = o.html.read_text(encoding="utf-8")
    assert html.index("Life expectancy") < html.index("Change since the previous year") < html.index("Method and data")
    t = change_table(dn.load_panel("be-2015-2023"), dn.noise_settings(V=[5]), year_from=2022, year_to=2023)
    row = t[(t["region"] == "BE34") & (t["sex"] == "T") & (t["age"] == 0)].iloc[0]
    assert f"{row['mdc_total']:.2f}" in html and f"{row['mdc_poisson']:.2f}" in html
