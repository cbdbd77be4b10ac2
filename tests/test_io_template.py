"""The user counts template: the shipped example, round trips, bad inputs."""

from pathlib import Path

import numpy as np
import pytest

from demonoise.core.errors import DataError, FormatError
from demonoise.io.eurostat import read_eurostat
from demonoise.io.template import read_counts_csv, write_counts_csv
from demonoise.io.tidy import counts_from_eurostat

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "counts_template.csv"


@pytest.fixture(scope="module")
def example():
    return read_counts_csv(TEMPLATE)


def _same(a, b):
    assert a.year == b.year and a.ages == b.ages and a.birth_ages == b.birth_ages
    assert a.codes == b.codes and [r.name for r in a.regions] == [r.name for r in b.regions]
    for k in ("pop_start", "pop_end", "deaths", "births"):
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None) == (y is None), k
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=k)


def test_example_template_matches_the_eurostat_files(example, data_dir):
    c = example
    assert c.year == 2023 and c.codes == ("BE10", "BE34") and c.name == "counts_template"
    assert c.provenance.population.status == "real" and c.provenance.population.source == "user-supplied"
    assert c.provenance.births.status == "modelled"
    assert c.birth_ages.labels[0] == "Y15" and c.birth_ages.labels[-1] == "UNK"
    # BE10 population and deaths are the published ones (independent path: the Eurostat fixtures)
    pop = read_eurostat(data_dir / "eurostat" / "demo_r_d2jan_BE10_2023_2024.csv.gz")
    dea = read_eurostat(data_dir / "eurostat" / "demo_r_magec_BE10_2023.csv.gz")
    ref = counts_from_eurostat(pop, dea, year=2023, name="ref")
    for k in ("pop_start", "pop_end", "deaths"):
        np.testing.assert_array_equal(getattr(c, k)[0], getattr(ref, k)[0], err_msg=k)


def test_template_roundtrip(example, tmp_path):
    for name in ("t.csv", "t.csv.gz"):
        p = write_counts_csv(example, tmp_path / name, comment="a comment\nover two lines")
        back = read_counts_csv(p)
        _same(example, back)
        assert {k: t.status for k, t in back.provenance.tables.items()} == {
            "population": "real",
            "deaths": "real",
            "births": "modelled",
        }
    first = (tmp_path / "t.csv").read_text().splitlines()[:3]
    assert first == ["# a comment", "# over two lines", "region,sex,age,year,measure,value,name,status"]


def test_eurostat_to_template_roundtrip(data_dir, tmp_path):
    pg = read_eurostat(data_dir / "eurostat" / "demo_r_pjangroup_sample.csv.gz")
    births = read_eurostat(data_dir / "eurostat" / "demo_r_fagec_sdmx_constructed.csv")
    c = counts_from_eurostat(pg, births=births, year=2023, regions=["BE10", "BE34"], name="x")
    p = write_counts_csv(c, tmp_path / "x.csv", names=False, status=False)
    back = read_counts_csv(p, status="modelled")
    c_names = c.replace(regions=back.regions)  # names come from the NUTS list in both
    _same(c_names, back)
    assert back.provenance.is_modelled and back.provenance.population.source == "user-supplied"


def test_year_inference(example, tmp_path):
    df = example.to_frame()
    p = tmp_path / "pop_only.csv"
    df[df["measure"] == "population"].to_csv(p, index=False)
    assert read_counts_csv(p).year == 2023  # two consecutive population years
    p2 = tmp_path / "three_years.csv"
    extra = df[(df["measure"] == "population") & (df["year"] == 2024)].assign(year=2025)
    import pandas as pd

    pd.concat([df[df["measure"] == "population"], extra]).to_csv(p2, index=False)
    with pytest.raises(DataError, match="cannot tell the reference year"):
        read_counts_csv(p2)
    assert read_counts_csv(p2, year=2024).year == 2024


# ----------------------------------------------------------------- bad inputs
def _edit(tmp_path, lines, name="bad.csv"):
    p = tmp_path / name
    p.write_text("".join(lines), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def lines():
    return TEMPLATE.read_text(encoding="utf-8").splitlines(keepends=True)


def _find(lines, prefix):
    i = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    return i, i + 1  # list index, file line


def test_wrong_header(tmp_path, lines):
    i, _ = _find(lines, "region,")
    bad = lines.copy()
    bad[i] = bad[i].replace("measure", "what")
    p = _edit(tmp_path, bad)
    with pytest.raises(FormatError, match=r"missing column\(s\) \['measure'\]; unknown column\(s\) \['what'\]") as e:
        read_counts_csv(p)
    assert e.value.file == str(p) and e.value.line == 1


@pytest.mark.parametrize(
    "prefix, old, new, exc, message, where",
    [
        (
            "BE34,M,Y40,2023,population,",
            ",population,",
            ",populatoin,",
            DataError,
            "unknown measure 'populatoin'",
            ("BE34", "M", "Y40"),
        ),
        ("BE10,T,Y30,2023,births,", ",T,Y30,", ",F,Y30,", DataError, "births must have sex T", ("BE10", "F", "Y30")),
        (
            "BE34,F,Y12,2024,population,",
            ",population,",
            ",population,x",
            FormatError,
            "non-numeric value",
            ("BE34", "F", "Y12"),
        ),
        (
            "BE34,F,Y12,2024,population,",
            ",population,",
            ",population,-",
            DataError,
            "negative count",
            ("BE34", "F", "Y12"),
        ),
        ("BE10,M,Y70,2023,deaths,", ",deaths,", ",deaths,0.5", DataError, "non-integer count", ("BE10", "M", "Y70")),
    ],
)
def test_bad_cell(tmp_path, lines, prefix, old, new, exc, message, where):
    i, line = _find(lines, prefix)
    bad = lines.copy()
    bad[i] = bad[i].replace(old, new, 1)
    p = _edit(tmp_path, bad)
    with pytest.raises(exc, match=message) as e:
        read_counts_csv(p, check_totals="ignore")
    err = e.value
    assert (err.file, err.line, err.region, err.sex, err.age) == (str(p), line, *where)


def test_missing_age_and_missing_region(tmp_path, lines):
    i, _ = _find(lines, "BE34,F,Y57,2023,deaths,")
    p = _edit(tmp_path, lines[:i] + lines[i + 1 :])
    with pytest.raises(DataError, match="no value for this cell") as e:
        read_counts_csv(p)
    assert (e.value.measure, e.value.region, e.value.sex, e.value.age, e.value.year) == (
        "deaths",
        "BE34",
        "F",
        "Y57",
        2023,
    )
    assert e.value.file == str(p)
    # a region with population but no deaths rows at all
    keep = [line for line in lines if not (line.startswith("BE34,") and ",deaths," in line)]
    p = _edit(tmp_path, keep, "no_deaths.csv")
    with pytest.raises(DataError, match="unknown region code: not in the deaths table") as e:
        read_counts_csv(p)
    assert e.value.region == "BE34"


def test_duplicated_row(tmp_path, lines):
    i, line = _find(lines, "BE10,F,Y33,2024,population,")
    p = _edit(tmp_path, lines + [lines[i]])
    with pytest.raises(DataError, match=f"duplicated cell \\(lines {line} and {len(lines) + 1}\\)") as e:
        read_counts_csv(p)
    assert (e.value.region, e.value.sex, e.value.age, e.value.year) == ("BE10", "F", "Y33", 2024)


def test_mixed_status_and_total_rows(tmp_path, lines):
    i, line = _find(lines, "BE10,T,Y31,2023,births,")
    bad = lines.copy()
    bad[i] = bad[i].replace(",modelled", ",real")
    with pytest.raises(DataError, match="mixed status"):
        read_counts_csv(_edit(tmp_path, bad))
    # a TOTAL row that does not add up is rejected by default, accepted when it does
    tot = "BE10,T,TOTAL,2023,deaths,8611,,real\n"
    with pytest.raises(DataError, match="TOTAL 8611 vs sum 8610"):
        read_counts_csv(_edit(tmp_path, lines + [tot], "tot.csv"))
    c = read_counts_csv(_edit(tmp_path, lines + [tot.replace("8611", "8610")], "tot2.csv"))
    assert c.deaths[0, 2].sum() == 8610


def test_unknown_age_code_names_the_line(tmp_path, lines):
    i, line = _find(lines, "BE34,F,Y12,2023,population,")
    bad = lines.copy()
    bad[i] = bad[i].replace(",Y12,", ",Y12x,")
    p = _edit(tmp_path, bad)
    with pytest.raises(DataError, match="unknown age code") as e:
        read_counts_csv(p)
    err = e.value
    assert (err.file, err.line, err.region, err.sex, err.age, err.measure) == (
        str(p),
        line,
        "BE34",
        "F",
        "Y12x",
        "population",
    )
