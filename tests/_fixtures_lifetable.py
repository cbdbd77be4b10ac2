"""Tiny readers for the Belgian 2021 fixtures of the life-table tests.

Stand-ins until the project's Eurostat readers land: long CSV (``values,freq,unit,
sex,age,geo,time``) for demo_r_d2jan / demo_r_magec, and the bulk TSV of
demo_r_mlifexp (``unit,sex,age,geo\\time``, values with flags, ``:`` missing).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.counts import SEXES, AgeAxis, Counts, Provenance, Region, TableProvenance, spread_unknown
from demonoise.demography.lifetable import lifetable_lower

BE_NUTS2 = ("BE10", "BE21", "BE22", "BE23", "BE24", "BE25", "BE31", "BE32", "BE33", "BE34", "BE35")


def _long(path: Path, year: int, regions, axis: AgeAxis) -> np.ndarray:
    df = pd.read_csv(path, dtype={"age": str, "sex": str, "geo": str})
    df = df[(df["time"] == year) & df["geo"].isin(regions) & (df["age"] != "TOTAL")]
    cube = df.pivot_table(index=["geo", "sex"], columns="age", values="values", aggfunc="sum")
    cube = cube.reindex(
        index=pd.MultiIndex.from_product([regions, SEXES]),
        columns=[("Y_OPEN" if a.startswith("Y_GE") else a) for a in axis.labels],
    )
    return cube.to_numpy().reshape(len(regions), len(SEXES), axis.size)


def belgian_counts(data: Path, year: int = 2021) -> Counts:
    """Counts of the 11 Belgian NUTS 2 regions: deaths in ``year``, population 1 Jan ``year``, ``year+1``."""
    ev = data / "eurostat"
    axis = AgeAxis.single(99)  # Y_LT1, Y1..Y99, Y_OPEN, UNK: Eurostat's NUTS 2 layout
    prov = Provenance(
        population=TableProvenance("real", ("demo_r_d2jan",)), deaths=TableProvenance("real", ("demo_r_magec",))
    )
    return Counts(
        name=f"be-{year}",
        year=year,
        regions=tuple(Region(c) for c in BE_NUTS2),
        ages=axis,
        pop_start=_long(ev / "demo_r_d2jan_BE_2021_2022.csv.gz", year, BE_NUTS2, axis),
        pop_end=_long(ev / "demo_r_d2jan_BE_2021_2022.csv.gz", year + 1, BE_NUTS2, axis),
        deaths=_long(ev / "demo_r_magec_BE_2021.csv.gz", year, BE_NUTS2, axis),
        provenance=prov,
    )


def to_lifetable_axis(counts: Counts, lower: np.ndarray):
    """Deaths, exposure (average population) and 1 January population on a life-table axis.

    UNK is spread in proportion over known ages (each measure by its own
    distribution), then single ages are summed into the life-table intervals.
    """
    src = counts.ages.without_unknown()
    upper = tuple(int(u) for u in lower[1:]) + (None,)
    G = src.regroup_matrix(AgeAxis(tuple(int(x) for x in lower), upper, unknown=False))
    D, P0, P1 = (spread_unknown(v, counts.ages) @ G for v in (counts.deaths, counts.pop_start, counts.pop_end))
    return D, (P0 + P1) / 2.0, P0


def published_e(data: Path, age: str, year: int = 2021, regions=BE_NUTS2) -> np.ndarray:
    """Published life expectancy (demo_r_mlifexp) as an array (region, sex F/M/T)."""
    df = pd.read_csv(data / "eurostat" / "demo_r_mlifexp_BE_2021.tsv.gz", sep="\t", dtype=str)
    keys = df.iloc[:, 0].str.split(",", expand=True)
    keys.columns = ["unit", "sex", "age", "geo"]
    col = next(c for c in df.columns[1:] if c.strip() == str(year))
    val = df[col].str.strip().str.split(" ").str[0].replace(":", np.nan).astype(float)
    s = pd.Series(val.to_numpy(), index=pd.MultiIndex.from_frame(keys[["geo", "sex", "age"]]))
    return np.array([[s[(g, x, age)] for x in SEXES] for g in regions])


def complete_lower() -> np.ndarray:
    return lifetable_lower(85)
