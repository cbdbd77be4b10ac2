"""Tiny parsers for the graduation fixtures (tests/data/eurostat/), with pandas/json.

Stand-ins until the Eurostat readers of ``demonoise.io`` land; they read only the
three filtered files named below and return plain numpy arrays:

* ``demo_r_d2jan_BE_2023_2024.csv.gz``      -- 11 Belgian NUTS 2 regions, single ages
* ``demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json`` -- countries, single ages
* ``demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz`` -- births by age of mother

Population arrays have shape (units, 3, 100): sexes in the order ``F, M, T`` and
single ages 0..99 (``Y_LT1``, ``Y1``..``Y99``); ``Y_OPEN`` and ``UNK`` are returned
apart (``UNK`` is 0 in every cell of these extracts -- checked by the tests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

EUROSTAT = Path(__file__).parent / "data" / "eurostat"
D2JAN = EUROSTAT / "demo_r_d2jan_BE_2023_2024.csv.gz"
PJAN = EUROSTAT / "demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json"
FORDAGEC = EUROSTAT / "demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz"

SEXES = ("F", "M", "T")
SINGLE = ["Y_LT1"] + [f"Y{a}" for a in range(1, 100)]
BIRTH_AGES = [f"Y{a}" for a in range(15, 50)]


@dataclass(frozen=True)
class Population:
    """Population on 1 January by unit, sex (F, M, T) and single age 0..99."""

    codes: tuple[str, ...]
    years: tuple[int, ...]
    single: np.ndarray  # (years, units, 3, 100)
    open_: np.ndarray  # (years, units, 3)  Y_OPEN (100+)
    unknown: np.ndarray  # (years, units, 3)
    total: np.ndarray  # (years, units, 3)  published TOTAL

    def year(self, y: int) -> np.ndarray:
        return self.single[self.years.index(y)]


def _cube(df: pd.DataFrame, codes, years, value: str = "value") -> Population:
    df = df.set_index(["time", "geo", "sex", "age"])[value]
    if df.index.duplicated().any():
        raise AssertionError("duplicated cells in fixture")
    ages = SINGLE + ["Y_OPEN", "UNK", "TOTAL"]
    idx = pd.MultiIndex.from_product([years, codes, SEXES, ages], names=df.index.names)
    cube = df.reindex(idx).to_numpy(dtype=float).reshape(len(years), len(codes), 3, len(ages))
    if np.isnan(cube).any():
        raise AssertionError("missing cells in fixture")
    return Population(tuple(codes), tuple(years), cube[..., :100], cube[..., 100], cube[..., 101], cube[..., 102])


def load_be_d2jan() -> Population:
    """Belgian NUTS 2 regions (demo_r_d2jan), 2023 and 2024."""
    df = pd.read_csv(D2JAN)
    codes = sorted(df["geo"].unique())
    df = df.rename(columns={"values": "value"})
    return _cube(df, codes, [2023, 2024])


def load_pjan() -> Population:
    """DE, ES, FR, IT, PL (demo_pjan, JSON-stat 2.0), 2023 and 2024."""
    d = json.loads(PJAN.read_text(encoding="utf-8"))
    ids, size = d["id"], d["size"]
    cats = []
    for dim in ids:
        idx = d["dimension"][dim]["category"]["index"]
        cats.append(sorted(idx, key=idx.get))
    flat = np.full(int(np.prod(size)), np.nan)
    for k, v in d["value"].items():
        flat[int(k)] = v
    grid = pd.MultiIndex.from_product(cats, names=ids)
    df = pd.DataFrame({"value": flat}, index=grid).reset_index()
    df["time"] = df["time"].astype(int)
    codes = cats[ids.index("geo")]
    return _cube(df, codes, [2023, 2024])


@dataclass(frozen=True)
class Births:
    codes: tuple[str, ...]
    by_age: np.ndarray  # (units, 35) ages 15..49
    unknown: np.ndarray  # (units,)
    total: np.ndarray  # (units,)

    @property
    def outside(self) -> np.ndarray:
        """Births to mothers outside 15-49: TOTAL - UNK - sum(Y15..Y49)."""
        return self.total - self.unknown - self.by_age.sum(axis=-1)


def load_fordagec(codes) -> Births:
    """Live births by single age of mother (demo_fordagec, SDMX-CSV), 2023."""
    df = pd.read_csv(FORDAGEC)
    df = df[(df["TIME_PERIOD"] == 2023) & (df["ord_brth"] == "TOTAL")]
    s = df.set_index(["geo", "age"])["OBS_VALUE"]
    idx = pd.MultiIndex.from_product([list(codes), BIRTH_AGES + ["UNK", "TOTAL"]])
    a = s.reindex(idx).to_numpy(dtype=float).reshape(len(codes), -1)
    if np.isnan(a).any():
        raise AssertionError("missing births in fixture")
    return Births(tuple(codes), a[:, :35], a[:, 35], a[:, 36])
