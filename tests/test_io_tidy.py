"""Tidy Eurostat tables -> Counts: real fixtures, round trips and bad cells."""

import gzip
import warnings

import numpy as np
import pandas as pd
import pytest

from demonoise.core.counts import AgeAxis, Provenance, Region, TableProvenance
from demonoise.core.errors import DataError
from demonoise.io.eurostat import read_eurostat
from demonoise.io.tidy import TotalMismatchWarning, counts_from_eurostat, published_age_codes, total_mismatches

E = "eurostat"


@pytest.fixture(scope="module")
def be10(data_dir):
    pop = read_eurostat(data_dir / E / "demo_r_d2jan_BE10_2023_2024.csv.gz")
    dea = read_eurostat(data_dir / E / "demo_r_magec_BE10_2023.csv.gz")
    return pop, dea


@pytest.fixture(scope="module")
def pjangroup(data_dir):
    return read_eurostat(data_dir / E / "demo_r_pjangroup_sample.csv.gz")


def test_single_age_nuts2_layout(be10):
    pop, dea = be10
    c = counts_from_eurostat(pop, dea, year=2023, name="be10-2023", check_totals="raise")
    assert c.ages == AgeAxis.single(99)  # Y_LT1, Y1..Y99, Y_OPEN -> Y_GE100, UNK
    assert c.codes == ("BE10",) and c.regions[0].level == 2 and c.regions[0].name.startswith("Région de Bruxelles")
    f, m, t = (c.sexes.index(s) for s in "FMT")
    # values from the fixture lines (zcat | grep -n): 416 F Y_LT1 2023 = 7262, 417 F Y_LT1 2024 = 6773,
    # 204 T Y_OPEN 2023 = 338, 206 T UNK 2023 = 0; deaths line 3 T Y_LT1 = 36, line 309 F Y_OPEN = 127
    assert c.pop_start[0, f, 0] == 7262 and c.pop_end[0, f, 0] == 6773
    assert c.pop_start[0, t, c.ages.index("Y_OPEN")] == 338 and c.pop_start[0, t, -1] == 0
    assert c.deaths[0, t, 0] == 36 and c.deaths[0, f, c.ages.index("Y_GE100")] == 127
    # published TOTALs (lines 2 and 208 of the deaths file: T 8610, F 4517) equal the cell sums
    assert c.deaths[0, t].sum() == 8610 and c.deaths[0, f].sum() == 4517
    p = c.provenance
    assert p.population.datasets == ("demo_r_d2jan",) and p.deaths.datasets == ("demo_r_magec",)
    assert p.population.status == "real" and p.population.extracted == "unknown"


def test_roundtrip_tidy_counts_frame(be10):
    """Every published cell of the files comes back unchanged through Counts.to_frame()."""
    pop, dea = be10
    c = counts_from_eurostat(pop, dea, year=2023, name="x")
    out = c.to_frame()
    src = pd.concat([pop.assign(measure="population"), dea.assign(measure="deaths")])
    src = src[src["age"] != "TOTAL"].assign(age=lambda d: d["age"].replace({"Y_OPEN": "Y_GE100"}))
    merged = out.merge(
        src,
        left_on=["region", "sex", "age", "year", "measure"],
        right_on=["geo", "sex", "age", "time", "measure"],
        how="outer",
        indicator=True,
    )
    assert (merged["_merge"] == "both").all()
    assert len(merged) == 3 * 102 * 3
    np.testing.assert_array_equal(merged["value_x"].to_numpy(float), merged["value_y"].to_numpy(float))


def test_five_year_groups_drop_aggregates(pjangroup):
    c = counts_from_eurostat(pjangroup, year=2023, regions=["BE34", "EL30"], name="x", check_totals="raise")
    assert c.ages == AgeAxis.five_year(85)  # Y_GE75 and Y_GE80 dropped, Y_GE85 kept, UNK kept
    assert "Y_GE75, Y_GE80" in c.provenance.population.note
    f, t = c.sexes.index("F"), c.sexes.index("T")
    # fixture lines 389 (BE34 F Y_GE85 2023 = 4990), 1231 (EL30 T Y_GE85 = 125984), 408 (BE34 F Y_LT5 = 7673);
    # TOTAL F BE34 2023 (line 9) = 148513
    assert c.pop_start[0, f, -2] == 4990 and c.pop_start[1, t, -2] == 125984 and c.pop_start[0, f, 0] == 7673
    assert c.pop_start[0, f].sum() == 148513
    assert c.regions[1].name == "Attiki" and c.regions[1].country == "EL"


def test_published_age_codes():
    kept, dropped = published_age_codes(["TOTAL", "Y_LT5", "Y80-84", "Y_GE75", "Y_GE80", "Y_GE85", "UNK", "Y75-79"])
    assert kept == ["Y_LT5", "Y80-84", "Y_GE85", "UNK", "Y75-79"] and dropped == ["TOTAL", "Y_GE75", "Y_GE80"]
    # demo_fasec-like: single ages next to 5-year groups and an under-15 group
    kept, dropped = published_age_codes(["Y10-14", "Y15", "Y16", "Y17", "Y18", "Y19", "Y15-19", "Y_LT20", "Y_GE50"])
    assert dropped == ["Y15-19", "Y_LT20"] and "Y10-14" in kept
    # Y_OPEN is the interval after the last closed age
    kept, dropped = published_age_codes(["Y98", "Y99", "Y_OPEN", "Y_GE95"])
    assert dropped == ["Y_GE95"]


def test_births_keep_published_axis(data_dir, pjangroup):
    births = read_eurostat(data_dir / E / "demo_r_fagec_sdmx_constructed.csv")
    c = counts_from_eurostat(
        pjangroup, births=births, year=2023, regions=["BE10", "BE34"], name="x", check_totals="raise"
    )
    assert c.birth_ages.labels[0] == "Y_LT15" and c.birth_ages.labels[-2:] == ("Y_GE50", "UNK")
    assert c.birth_ages.size == 1 + 35 + 1 + 1
    # the file's TOTAL rows (lines 2 and 41) equal the sums of the cells
    tot = births[births["age"] == "TOTAL"].set_index("geo")["value"]
    np.testing.assert_array_equal(c.births.sum(axis=1), tot[["BE10", "BE34"]].to_numpy())
    assert c.provenance.births.datasets == ("demo_r_fagec",)
    assert c.provenance.births.extracted == "2025-10-14T23:00:00"


def test_national_births_from_sdmx_with_labels_and_totals_check(data_dir):
    """demo_fordagec: ord_brth TOTAL kept; EL's TOTAL exceeds the cells (the extract has no <15/50+ rows)."""
    births = read_eurostat(data_dir / E / "demo_fordagec_sdmx_sample.csv.gz")
    bad = total_mismatches(births[births["time"] == 2023])
    # EL 2023 TOTAL 71249 vs cells 70903 (difference 346, checked with pandas on the original extract); BE agrees
    el = bad[bad["geo"] == "EL"].iloc[0]
    assert (el["total"], el["sum_of_cells"], el["difference"]) == (71249, 70903, 346)
    assert "BE" not in set(bad["geo"])
    pop = pd.DataFrame(
        {"geo": "EL", "sex": np.repeat(["F", "M", "T"], 2), "age": "Y_LT5", "time": [2023, 2024] * 3, "value": 1.0}
    )
    with pytest.warns(TotalMismatchWarning, match=r"geo EL, time 2023: TOTAL 71249 vs sum 70903"):
        counts_from_eurostat(pop, births=births, year=2023, regions=["EL"], name="x")
    with pytest.raises(DataError, match="TOTAL differs") as e:
        counts_from_eurostat(pop, births=births, year=2023, regions=["EL"], name="x", check_totals="raise")
    assert e.value.region == "EL" and e.value.measure == "births"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = counts_from_eurostat(pop, births=births, year=2023, regions=["EL"], name="x", check_totals="ignore")
    assert c.birth_ages.labels[0] == "Y15" and c.birth_ages.labels[-1] == "UNK"


def test_explicit_regions_names_and_provenance(be10):
    pop, dea = be10
    prov = Provenance(TableProvenance("modelled", note="test"))
    c = counts_from_eurostat(
        pop, year=2023, regions=[Region("BE10", "Brussels")], names=None, provenance=prov, name="x"
    )
    assert c.regions[0].name == "Brussels" and c.provenance is prov and c.deaths is None
    c = counts_from_eurostat(pop, year=2023, names={"BE10": "Bruxelles"}, name="x")
    assert c.regions[0].name == "Bruxelles"


# ------------------------------------------------------------------ bad cells
def _drop(df, **kw):
    m = np.ones(len(df), bool)
    for k, v in kw.items():
        m &= (df[k] == v).to_numpy()
    assert m.sum() == 1
    out = df[~m]
    out.attrs = dict(df.attrs)
    return out


def _set(df, value, **kw):
    out = df.copy()
    m = np.ones(len(df), bool)
    for k, v in kw.items():
        m &= (df[k] == v).to_numpy()
    assert m.sum() == 1
    out.loc[m, "value"] = value
    return out, int(df.index[m][0])


def test_missing_age_is_named(be10):
    pop, dea = be10
    bad = _drop(dea, sex="M", age="Y57")
    with pytest.raises(DataError, match="no value for this cell") as e:
        counts_from_eurostat(pop, bad, year=2023, name="x", check_totals="ignore")
    err = e.value
    assert (err.measure, err.region, err.sex, err.age, err.year) == ("deaths", "BE10", "M", "Y57", 2023)
    assert err.file.endswith("demo_r_magec_BE10_2023.csv.gz")


def test_missing_year_t_plus_1(be10):
    pop, dea = be10
    with pytest.raises(DataError, match="1 January 2024 is not in the table") as e:
        counts_from_eurostat(pop[pop["time"] == 2023], dea, year=2023, name="x")
    assert e.value.measure == "population" and e.value.file.endswith("d2jan_BE10_2023_2024.csv.gz")


@pytest.mark.parametrize(
    "value, message",
    [(np.nan, "missing value"), (-3.0, "negative count -3"), (12.5, "non-integer count 12.5")],
)
def test_bad_values_are_named(be10, value, message):
    pop, dea = be10
    bad, line = _set(pop, value, sex="F", age="Y40", time=2024)
    with pytest.raises(DataError, match=message) as e:
        counts_from_eurostat(bad, dea, year=2023, name="x", check_totals="ignore")
    err = e.value
    assert (err.measure, err.region, err.sex, err.age, err.year, err.line) == (
        "population",
        "BE10",
        "F",
        "Y40",
        2024,
        line,
    )
    assert "d2jan_BE10_2023_2024.csv.gz" in str(err)


def test_missing_value_read_from_file(data_dir, tmp_path):
    """':' / empty value in the file -> DataError naming the line of the file."""
    raw = gzip.decompress((data_dir / E / "demo_r_magec_BE10_2023.csv.gz").read_bytes()).decode()
    lines = raw.splitlines(keepends=True)
    assert lines[2] == "36.0,A,NR,T,Y_LT1,BE10,2023\n"
    lines[2] = ",A,NR,T,Y_LT1,BE10,2023\n"
    p = tmp_path / "demo_r_magec_x.csv"
    p.write_text("".join(lines))
    pop = read_eurostat(data_dir / E / "demo_r_d2jan_BE10_2023_2024.csv.gz")
    with pytest.raises(DataError, match="missing value") as e:
        counts_from_eurostat(pop, read_eurostat(p), year=2023, name="x", check_totals="ignore")
    err = e.value
    assert (err.file, err.line, err.sex, err.age, err.measure) == (str(p), 3, "T", "Y_LT1", "deaths")


def test_duplicated_cell_in_a_tidy_frame(be10):
    pop, dea = be10
    dup = pd.concat([dea, dea[(dea["sex"] == "F") & (dea["age"] == "Y3")]])
    dup.attrs = dict(dea.attrs)
    with pytest.raises(DataError, match="duplicated cell") as e:
        counts_from_eurostat(pop, dup, year=2023, name="x", check_totals="ignore")
    assert (e.value.region, e.value.sex, e.value.age, e.value.measure) == ("BE10", "F", "Y3", "deaths")


@pytest.mark.parametrize("code, hint", [("BE99", "not a NUTS 2021 code"), ("GR30", "Greece as EL"), ("BE21", "")])
def test_unknown_region_code(pjangroup, code, hint):
    with pytest.raises(DataError, match="unknown region code: not in the population table") as e:
        counts_from_eurostat(pjangroup, year=2023, regions=["BE10", code], name="x")
    assert e.value.region == code and e.value.file.endswith("demo_r_pjangroup_sample.csv.gz")
    assert hint in str(e.value)


def test_region_without_values_for_the_year(pjangroup):
    # NL35 is a NUTS 2024 code with 2024 values only: population on 1 January 2023 is absent
    with pytest.raises(DataError, match="no population on 1 January 2023 for this region") as e:
        counts_from_eurostat(pjangroup, year=2023, regions=["NL35"], name="x")
    assert (e.value.region, e.value.year) == ("NL35", 2023)


def test_deaths_on_another_axis(be10, pjangroup):
    pop, dea = be10
    with pytest.raises(DataError, match="another age axis") as e:
        counts_from_eurostat(pjangroup, dea, year=2023, regions=["BE10"], name="x")
    assert e.value.measure == "deaths"


def test_missing_sex_and_several_units(be10):
    pop, dea = be10
    with pytest.raises(DataError, match="sex M is not in the deaths table") as e:
        counts_from_eurostat(pop, dea[dea["sex"] != "M"], year=2023, name="x")
    assert e.value.sex == "M"
    two = pd.concat([dea, dea.assign(unit="PC", value=dea["value"] / 10)])
    c = counts_from_eurostat(pop, two, year=2023, name="x")  # NR is picked
    assert c.deaths[0, 2].sum() == 8610
    three = pd.concat([dea.assign(unit="PC"), dea.assign(unit="THS")])
    with pytest.raises(DataError, match="dimension 'unit' has several categories"):
        counts_from_eurostat(pop, three, year=2023, name="x")
