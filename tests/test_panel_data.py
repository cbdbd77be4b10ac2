"""The multi-year data model and dataset: a 1 January stock is one published cell shared by
two years; the multi-year template, the packed panel and the embedded be-2015-2023, checked
against the raw Eurostat extracts read independently."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json

import numpy as np
import pytest

import _fixtures_datasets as fx
from demonoise.core.counts import Panel
from demonoise.core.errors import DataError, ParameterError
from demonoise.io import datasets
from demonoise.io.packed import read_packed_panel, write_packed_panel
from demonoise.io.template import read_counts_csv, read_panel_csv, write_panel_csv
from demonoise_build import build as bd
from demonoise_build import panel as bp

COMMITTED = bd.default_out_dir()


@pytest.fixture(scope="module")
def panel():
    return datasets.load_panel("be-2015-2023")


def _raw_value(fname: str, geo: str, sex: str, age: str, time: int) -> float:
    """One value of a raw long CSV (``values,freq,unit,sex,age,geo,time``), read with the csv module."""
    with gzip.open(fx.RAW / fname, "rt", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if (row["geo"], row["sex"], row["age"], row["time"]) == (geo, sex, age, str(time)):
                return float(row["values"])
    raise KeyError((geo, sex, age, time))


# ------------------------------------------------------------------ the data model
def test_shared_stock_is_one_cell_and_a_disagreement_is_refused(panel):
    c22, c23 = panel.year(2022), panel.year(2023)
    assert np.array_equal(c22.pop_end, c23.pop_start)  # one cell, stored once
    assert np.array_equal(c22.pop_end, panel.stock(2023))
    bad = c23.pop_start.copy()
    r, s, a = c23.codes.index("BE34"), 0, c23.ages.index("Y40")
    bad[r, s, a] += 1
    with pytest.raises(DataError) as e:
        Panel.from_counts([c22, c23.replace(pop_start=bad)])
    msg = str(e.value)
    assert "\n" not in msg
    assert e.value.region == "BE34" and e.value.sex == "F" and e.value.age == "Y40" and e.value.year == 2023
    assert f"{int(c22.pop_end[r, s, a])} against {int(bad[r, s, a])}" in msg


def test_panel_says_which_cells_two_years_share(panel):
    assert panel.shared(2022, 2023) == (("pop", 2023),)
    assert panel.shared(2023, 2022) == (("pop", 2023),)
    assert panel.shared(2021, 2023) == ()
    assert panel.cells(2015) == (("pop", 2015), ("pop", 2016), ("deaths", 2015), ("births", 2015))


def test_panel_years_must_be_consecutive_and_alike(panel):
    with pytest.raises(DataError, match="consecutive: 2021 then 2023"):
        Panel.from_counts([panel.year(2021), panel.year(2023)])
    with pytest.raises(ParameterError, match="year 2014 is not in dataset"):
        panel.year(2014)
    w = panel.window(2021, 2023)
    assert w.years == (2021, 2022, 2023) and w.stock_years == (2021, 2022, 2023, 2024)
    assert np.array_equal(w.stock(2024), panel.stock(2024))


def test_panel_names_the_year_of_a_bad_count(panel):
    deaths = panel.deaths.copy()
    deaths[3, 5, 1, 60] = -2
    with pytest.raises(DataError) as e:
        Panel(panel.name, panel.years, panel.regions, panel.ages, panel.stocks, panel.provenance, deaths=deaths)
    assert (e.value.year, e.value.region, e.value.sex, e.value.age) == (2018, panel.codes[5], "M", "Y60")


# ------------------------------------------------------------------ files
def test_multi_year_template_round_trip(panel, tmp_path):
    w = panel.window(2021, 2023)
    path = write_panel_csv(w, tmp_path / "three.csv", names=False)
    back = read_panel_csv(path, name="three")
    assert back.years == (2021, 2022, 2023)
    for k in ("stocks", "deaths", "births"):
        assert np.array_equal(getattr(back, k), getattr(w, k))
    df = w.to_frame()
    pop = df[df.measure == "population"]
    assert sorted(pop.year.unique()) == [2021, 2022, 2023, 2024]  # each stock once
    assert not pop.duplicated(["region", "sex", "age", "year"]).any()
    one = read_counts_csv(path, year=2022)
    assert np.array_equal(one.pop_end, w.stock(2023)) and np.array_equal(one.deaths, w.deaths[1])
    with pytest.raises(DataError, match="cannot tell the reference year"):
        read_counts_csv(path)


def test_packed_panel_round_trip_and_damage(panel, tmp_path):
    p = tmp_path / "p.npz"
    write_packed_panel(panel, p, source_sha256="abc")
    back, header = read_packed_panel(p, provenance=panel.provenance)
    assert header["years"] == list(panel.years) and header["source_sha256"] == "abc"
    assert np.array_equal(back.stocks, panel.stocks) and np.array_equal(back.births, panel.births)
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(DataError):
        read_packed_panel(p, provenance=panel.provenance)


# ------------------------------------------------------------------ the embedded dataset
def test_real_cells_are_the_raw_extracts(panel):
    """Stocks and deaths of several years against the raw files parsed independently."""
    r = panel.codes.index("BE34")
    for y, sex, age in ((2015, "F", "Y40"), (2021, "M", "Y80"), (2022, "T", "Y_LT1"), (2024, "F", "Y_OPEN")):
        fname = "demo_r_d2jan_BE_2021_2022.csv.gz" if y in (2021, 2022) else "demo_r_d2jan_BE_2015_2024.csv.gz"
        got = panel.stock(y)[r, "FMT".index(sex), panel.ages.index(age)]
        assert got == _raw_value(fname, "BE34", sex, age, y)
    for t, sex, age in ((2020, "T", "Y85"), (2021, "F", "Y90"), (2016, "M", "Y70"), (2023, "F", "Y95")):
        fname = (
            "demo_r_magec_BE_2020_2022.csv.gz" if t in (2020, 2021, 2022) else "demo_r_magec_BE_2015_2019_2023.csv.gz"
        )
        got = panel.deaths[panel.index(t), r, "FMT".index(sex), panel.ages.index(age)]
        assert got == _raw_value(fname, "BE34", sex, age, t)
    country = panel.codes.index("BE")
    assert np.array_equal(panel.stocks[:, country], panel.stocks[:, country + 1 :].sum(axis=1))


def test_2023_is_be_2023_and_births_are_national(panel):
    be = datasets.load("be-2023")
    y = panel.year(2023)
    for k in ("pop_start", "pop_end", "deaths", "births"):
        assert np.array_equal(getattr(y, k), getattr(be, k)), k
    assert np.array_equal(datasets.load("be-2015-2023").deaths, y.deaths)
    meta = datasets.metadata("be-2015-2023")
    assert meta["years"] == list(range(2015, 2024)) and meta["provenance"]["births"]["status"] == "modelled"
    assert meta["fallbacks"]["deaths_unk_not_published"] == [2015, 2016, 2017, 2018, 2019]
    # regional births of each year sum to the national births of demo_fordagec
    with gzip.open(fx.RAW / "demo_fordagec_sdmx_2015_2023.csv.gz", "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(io.StringIO(f.read())))
    for t in (2015, 2019, 2022):
        total = next(
            float(r["OBS_VALUE"])
            for r in rows
            if r["geo"] == "BE"
            and r["age"] == "TOTAL"
            and r["TIME_PERIOD"] == str(t)
            and r.get("ord_brth", "TOTAL") == "TOTAL"
        )
        regions = panel.births[panel.index(t), [i for i, c in enumerate(panel.codes) if len(c) == 4]]
        assert regions.sum() == total


@pytest.mark.slow
def test_rebuild_is_identical_by_content(tmp_path):
    meta = json.loads((COMMITTED / "be-2015-2023.json").read_text(encoding="utf-8"))
    if any(meta["versions"][k] != bd._versions()[k] for k in bd.PINNED):
        pytest.skip("other numpy / scipy / pandas than recorded")
    out = bp.build_panel("be-2015-2023", tmp_path, raw=bd.read_raw(fx.RAW))
    content = hashlib.sha256(gzip.decompress(out["csv"].read_bytes())).hexdigest()
    assert content == meta["files"]["be-2015-2023.csv.gz"]["content_sha256"]
    new, h = read_packed_panel(out["npz"], provenance=datasets.load_panel("be-2015-2023").provenance)
    assert h["content_sha256"] == meta["files"]["be-2015-2023.npz"]["content_sha256"]
    for fname, sha in meta["inputs"].items():
        assert hashlib.sha256((fx.RAW / fname).read_bytes()).hexdigest() == sha


def test_multi_year_files_stay_small():
    size = sum((COMMITTED / f"be-2015-2023{e}").stat().st_size for e in (".csv.gz", ".json", ".npz"))
    assert size < 600_000, size
