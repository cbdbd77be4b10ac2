"""Independent readings of the raw Eurostat extracts (``data-raw/eurostat``) and the checks
of the embedded datasets, shared by ``tests/test_datasets*.py`` and
``benchmarks/datasets_figures.py``.

The raw files are parsed here with plain pandas (not with the build's code), and the
rules of the issue (calibration-target fallbacks, births outside 15-49) are
re-implemented from their statement, so that the tests compare the datasets with an
independent truth.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data-raw" / "eurostat"
TEST_DATA = Path(__file__).resolve().parent / "data" / "eurostat"
PJANGROUP = RAW / "demo_r_pjangroup_NUTS2_2023_2024.csv.gz"
D2JAN = RAW / "demo_r_d2jan_BE_2015_2024.csv.gz"
MAGEC = RAW / "demo_r_magec_BE_2015_2019_2023.csv.gz"
FORDAGEC = RAW / "demo_fordagec_sdmx_2015_2023.csv.gz"
MLIFEXP = RAW / "demo_r_mlifexp_Y_LT1_Y65_FM_1990_2021.tsv.gz"
PJAN = TEST_DATA / "demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json"

GROUPS = ["Y_LT5"] + [f"Y{a}-{a + 4}" for a in range(5, 85, 5)] + ["Y_GE85"]
INNER = [f"Y{a}" for a in range(15, 50)]


# ------------------------------------------------------------------ raw tables (plain pandas)
@functools.cache
def pjangroup() -> pd.DataFrame:
    """Long CSV freq,unit,sex,age,geo,values,year -> columns geo, sex, age, year, value."""
    df = pd.read_csv(PJANGROUP, dtype={"geo": str, "sex": str, "age": str})
    return df.rename(columns={"values": "value"})[["geo", "sex", "age", "year", "value"]]


def pjangroup_cube(codes, year: int, sexes=("F", "M", "T")) -> np.ndarray:
    """(R, S, 18 groups + UNK) with UNK 0 where absent; NaN where a group is absent."""
    df = pjangroup()
    df = df[(df["year"] == year) & df["geo"].isin(codes) & df["sex"].isin(sexes)]
    piv = df.pivot_table(index=["geo", "sex"], columns="age", values="value", aggfunc="first")
    piv = piv.reindex(pd.MultiIndex.from_product([list(codes), list(sexes)]))
    if "UNK" not in piv.columns:
        piv["UNK"] = np.nan
    piv["UNK"] = piv["UNK"].fillna(0.0)
    return piv[GROUPS + ["UNK"]].to_numpy().reshape(len(codes), len(sexes), len(GROUPS) + 1)


def long_be(path: Path, year: int, codes, sexes=("F", "M", "T")) -> np.ndarray:
    """demo_r_d2jan / demo_r_magec long CSV (values,freq,unit,sex,age,geo,time) -> (R, S, 102):
    Y_LT1, Y1..Y99, Y_OPEN, UNK."""
    ages = ["Y_LT1"] + [f"Y{a}" for a in range(1, 100)] + ["Y_OPEN", "UNK"]
    df = pd.read_csv(path, dtype={"geo": str, "sex": str, "age": str})
    df = df[(df["time"] == year) & df["geo"].isin(codes) & df["sex"].isin(sexes)]
    piv = df.pivot_table(index=["geo", "sex"], columns="age", values="values", aggfunc="first")
    piv = piv.reindex(index=pd.MultiIndex.from_product([list(codes), list(sexes)]), columns=ages)
    return piv.to_numpy().reshape(len(codes), len(sexes), len(ages))


@functools.cache
def fordagec() -> pd.DataFrame:
    """SDMX-CSV -> columns geo, age, year, value (birth order TOTAL)."""
    df = pd.read_csv(FORDAGEC, dtype=str)
    df = df[df["ord_brth"] == "TOTAL"]
    out = pd.DataFrame(
        {
            "geo": df["geo"],
            "age": df["age"],
            "year": df["TIME_PERIOD"].astype(int),
            "value": pd.to_numeric(df["OBS_VALUE"], errors="coerce"),
        }
    )
    return out.dropna(subset=["value"])


def national_births_rule(country: str, year: int = 2023) -> np.ndarray | None:
    """Births on Y_LT15, Y15..Y49, Y_GE50, UNK by the stated rule, or None if ``year`` is
    incomplete for the country. Outside 15-49 = TOTAL - UNK - sum, split in proportion to
    the births at 15 and 49, largest remainder (ties to Y_LT15)."""
    df = fordagec()
    s = df[(df["geo"] == country) & (df["year"] == year)].set_index("age")["value"]
    if "TOTAL" not in s.index or not all(a in s.index for a in INNER):
        return None
    cells = s[INNER].to_numpy()
    unk = s.get("UNK", 0.0)
    out = s["TOTAL"] - unk - cells.sum()
    b15, b49 = cells[0], cells[-1]
    q = out * b15 / (b15 + b49) if b15 + b49 > 0 else out / 2
    lt15 = np.floor(q)
    ge50 = np.floor(out - q)
    if lt15 + ge50 < out:  # one unit left: larger remainder, ties to Y_LT15
        if (q - lt15) >= (out - q - ge50):
            lt15 += 1
        else:
            ge50 += 1
    return np.concatenate([[lt15], cells, [ge50, unk]]).astype(np.int64)


@functools.cache
def mlifexp() -> pd.DataFrame:
    """Bulk TSV (unit,sex,age,geo\\time; values like '79.2 e', ':') -> geo, sex, age, year, value."""
    with gzip.open(MLIFEXP, "rt", encoding="utf-8") as f:
        df = pd.read_csv(f, sep="\t", dtype=str)
    keys = df.iloc[:, 0].str.split(",", expand=True)
    long = []
    for col in df.columns[1:]:
        v = pd.to_numeric(df[col].str.strip().str.split(" ").str[0], errors="coerce")
        long.append(
            pd.DataFrame({"geo": keys[3], "sex": keys[1], "age": keys[2], "year": int(col.strip()), "value": v})
        )
    return pd.concat(long, ignore_index=True).dropna(subset=["value"])


def calibration_targets(codes, year: int = 2019) -> tuple[np.ndarray, dict]:
    """(R, 2 sexes F/M, 2: e0, e65) by the issue's rule: the value of ``year``; else the
    nearest earlier year; else the first later regional value shifted by the
    country's change since ``year``. Returns the targets and {code: how}."""
    df = mlifexp()
    s = df.set_index(["geo", "sex", "age", "year"])["value"]
    out = np.full((len(codes), 2, 2), np.nan)
    how = {}
    for i, c in enumerate(codes):
        for j, sex in enumerate("FM"):
            for k, age in enumerate(("Y_LT1", "Y65")):
                if (c, sex, age, year) in s.index:
                    out[i, j, k] = s[(c, sex, age, year)]
                    continue
                years = sorted(y for (g, sx, a, y) in s.index if g == c and sx == sex and a == age)
                early = [y for y in years if y < year]
                if early:
                    out[i, j, k] = s[(c, sex, age, early[-1])]
                    how[c] = f"nearest {early[-1]}"
                else:
                    y = min(y for y in years if y > year)
                    out[i, j, k] = s[(c, sex, age, y)] - (s[(c[:2], sex, age, y)] - s[(c[:2], sex, age, year)])
                    how[c] = f"{y} shifted"
    return out, how


def pjan_national(countries=("DE", "ES", "FR", "IT", "PL")):
    """Real national single-age population (demo_pjan JSON-stat fixture) as Counts (2023)."""
    from demonoise.io.eurostat import read_eurostat
    from demonoise.io.tidy import counts_from_eurostat

    df = read_eurostat(PJAN)
    return counts_from_eurostat(df, year=2023, regions=list(countries), name="pjan", check_totals="ignore")
