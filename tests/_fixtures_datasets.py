"""Independent readings of the raw Eurostat extracts (``data-raw/eurostat``) and the checks
of the embedded datasets, shared by ``tests/test_datasets*.py`` and
``benchmarks/datasets_figures.py``.

The raw files are parsed here with plain pandas (not with the build's code), and the
rules of the issue (calibration-target fallbacks, births outside 15-49, the regional
fertility rule, the national TFR cross-check) are re-implemented from their statement,
so that the tests compare the datasets with an independent truth.
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
FIND3 = RAW / "demo_r_find3_TFR_NUTS0_NUTS2_2013_2022.tsv"
PJANGROUP0 = RAW / "demo_r_pjangroup_NUTS0_F_2019_2023.csv.gz"
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


# ------------------------------------------------------------------ regional fertility
@functools.cache
def find3() -> pd.DataFrame:
    """Bulk TSV (freq,indic_de,unit,geo\\TIME_PERIOD; values like '2.10 p', ':') -> geo, year, value."""
    df = pd.read_csv(FIND3, sep="\t", dtype=str)
    keys = df.iloc[:, 0].str.split(",", expand=True)
    long = []
    for col in df.columns[1:]:
        v = pd.to_numeric(df[col].str.strip().str.split(" ").str[0], errors="coerce")
        long.append(pd.DataFrame({"geo": keys[3], "indic": keys[1], "year": int(col.strip()), "value": v}))
    out = pd.concat(long, ignore_index=True).dropna(subset=["value"])
    return out[out["indic"] == "TOTFERRT"]


def published_tfr(codes, year: int = 2022) -> np.ndarray:
    """Published TFR of ``codes`` in ``year`` (NaN where not published)."""
    df = find3()
    s = df[df["year"] == year].set_index("geo")["value"]
    return s.reindex(list(codes)).to_numpy(dtype=float)


@functools.cache
def pjangroup0() -> pd.DataFrame:
    """NUTS 0 female population by 5-year group (long CSV) -> geo, age, year, value."""
    df = pd.read_csv(PJANGROUP0, dtype={"geo": str, "sex": str, "age": str})
    return df.rename(columns={"values": "value"})[["geo", "sex", "age", "year", "value"]]


def births_5y(country: str, year: int) -> np.ndarray | None:
    """Births of ``year`` in 15-19, ..., 45-49 (under 15 in 15-19, 50+ in 45-49, UNK spread in
    proportion), by the stated rule: absent single ages and the births outside 15-49 share
    ``TOTAL - UNK - published`` in proportion to the latest complete earlier year; the births
    outside 15-49 split in proportion to the births at 15 and 49. None without a TOTAL (or
    without a complete earlier year to fill absent ages from)."""
    df = fordagec()
    s = df[(df["geo"] == country) & (df["year"] == year)].set_index("age")["value"]
    if "TOTAL" not in s.index:
        return None
    cells = s.reindex(INNER).to_numpy(dtype=float)
    unk = float(s.get("UNK", 0.0))
    rest = float(s["TOTAL"]) - unk - np.nansum(cells)
    absent = np.isnan(cells)
    out = rest
    if absent.any():
        ref = None
        for y in range(year - 1, 2000, -1):
            r = df[(df["geo"] == country) & (df["year"] == y)].set_index("age")["value"]
            if "TOTAL" in r.index and "UNK" in r.index and all(a in r.index for a in INNER):
                ref = r
                break
        if ref is None:
            return None
        rc = ref[INNER].to_numpy(dtype=float)
        r_out = float(ref["TOTAL"] - ref["UNK"] - rc.sum())
        w = np.where(absent, rc, 0.0)
        cells = np.where(absent, rest * w / (w.sum() + r_out), cells)
        out = rest * r_out / (w.sum() + r_out)
    b15, b49 = cells[0], cells[-1]
    low = b15 / (b15 + b49) if b15 + b49 > 0 else 0.5
    cells[0] += out * low
    cells[-1] += out * (1.0 - low)
    cells *= (cells.sum() + unk) / cells.sum()
    return cells.reshape(7, 5).sum(axis=1)


def tfr_5y(country: str, year: int) -> float | None:
    """National TFR ``5 sum_g B_g / E_g`` over 15-19..45-49 from demo_fordagec and the NUTS 0
    female population of 1 January ``year`` and ``year + 1`` (UNK spread in proportion)."""
    B = births_5y(country, year)
    if B is None:
        return None
    pj = pjangroup0()
    E = []
    for y in (year, year + 1):
        s = pj[(pj["geo"] == country) & (pj["year"] == y) & (pj["sex"] == "F")].set_index("age")["value"]
        known = s.reindex(GROUPS).to_numpy(dtype=float)
        known = known * (known.sum() + float(s.get("UNK", 0.0))) / known.sum()
        E.append(known[3:10])
    return float(5.0 * (B / ((E[0] + E[1]) / 2.0)).sum())


def female_exposure(counts) -> np.ndarray:
    """``W = (P^F(t) + P^F(t+1)) / 2`` by known single age, UNK spread in proportion, (R, A - 1)."""

    def spread(p):
        known = p[:, :-1].astype(float)
        tot = known.sum(axis=1, keepdims=True)
        return known + p[:, -1:] * known / np.where(tot > 0, tot, 1.0)

    return (spread(counts.pop_start[:, 0]) + spread(counts.pop_end[:, 0])) / 2.0


def expected_regional_births(nat: np.ndarray, W: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The rule's expected births of one country's regions, (R, 38): ``B_j s_r W_r(j) / sum_q
    s_q W_q(j)`` (Y_LT15 at 15, Y_GE50 at 49), UNK in proportion to the expected known births."""
    w = np.concatenate([W[:, 15:16], W[:, 15:50], W[:, 49:50]], axis=1) * scale[:, None]
    e = nat[:37] * w / w.sum(axis=0)
    known = e.sum(axis=1)
    return np.concatenate([e, (nat[37] * known / known.sum())[:, None]], axis=1)
