"""Build the responses the multi-year fetch tests serve (tests/test_fetch_panel.py).

Usage::

    PYTHONPATH=lib python tests/data/fetch/make_panel_fixtures.py

Writes, in ``statistics/``, the answers of Eurostat's statistics API to the queries
``demonoise fetch --year 2021 2022 2023 --countries BE`` sends: one query per table for
every year at once (population on 1 January 2021-2024, deaths and births 2021-2023),
JSON-stat 2.0 in the shape of :mod:`make_fetch_fixtures`, gzipped, named
``<code>_<level>_<years>.json.gz``.

Reads committed row filters of real public Eurostat extracts only (provenance in
tests/data/README.md and data-raw/README.md):

* population (demo_r_d2jan) of BE31, BE34, BE35 on 1 January 2021-2024, real:
  ``data-raw/eurostat/demo_r_d2jan_BE_2021_2022.csv.gz`` and
  ``tests/data/eurostat/demo_r_d2jan_BE_2023_2024.csv.gz``;
* deaths (demo_r_magec) 2021-2023, real: ``data-raw/eurostat/demo_r_magec_BE_2020_2022.csv.gz``
  and ``tests/data/eurostat/demo_r_magec_BE_2023.csv.gz``;
* the country rows (demo_pjan, demo_magec, BE) are the sums over the 11 Belgian NUTS 2
  regions of the same extracts (not copies of the national tables);
* births by age of mother: the national table (demo_fagec, BE) carries the real births
  2021-2023 by single age 15..49, UNK and TOTAL of demo_fordagec
  (``data-raw/eurostat/demo_fordagec_sdmx_2015_2023.csv.gz``); the residual
  ``TOTAL - sum(cells)`` is split *by construction* into ``Y_LT15`` (a third) and
  ``Y_GE50`` (the rest); the regional table (demo_r_fagec) is **constructed**: national
  births by age times the region's share of Belgian women aged 15-49 on 1 January of the
  year, rounded.

Each table carries its own illustrative ``updated`` stamp (:data:`UPDATED`): the source
extracts carry no extraction date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from make_fetch_fixtures import _ages, jsonstat, write_json_gz  # noqa: E402

from demonoise.io.eurostat import read_eurostat  # noqa: E402

HERE = Path(__file__).parent
SRC = HERE.parent / "eurostat"
RAW = HERE.parents[2] / "data-raw" / "eurostat"
REGIONS = ["BE31", "BE34", "BE35"]
YEARS = [2021, 2022, 2023]
SEX_ORDER = ["T", "M", "F"]
DIMS = ["freq", "unit", "sex", "age", "geo", "time"]
#: Eurostat's update stamp per table (illustrative: each table its own).
UPDATED = {
    "demo_r_d2jan": "2025-03-28T23:00:00+0100",
    "demo_pjan": "2025-09-30T23:00:00+0200",
    "demo_r_magec": "2025-03-14T23:00:00+0100",
    "demo_magec": "2025-10-14T23:00:00+0200",
    "demo_r_fagec": "2025-03-07T23:00:00+0100",
    "demo_fagec": "2025-10-08T23:00:00+0200",
}
LABELS = {
    "demo_r_d2jan": "Population on 1 January by age, sex and NUTS 2 region",
    "demo_pjan": "Population on 1 January by age and sex",
    "demo_r_magec": "Deaths by age, sex and NUTS 2 region",
    "demo_magec": "Deaths by age and sex",
    "demo_r_fagec": "Live births by age of mother and NUTS 2 region",
    "demo_fagec": "Live births by mother's age and newborn's sex",
}


def _tag(years) -> str:
    return "-".join(str(y) for y in years)


def _population_and_deaths() -> None:
    pop = pd.concat(
        [
            read_eurostat(RAW / "demo_r_d2jan_BE_2021_2022.csv.gz"),
            read_eurostat(SRC / "demo_r_d2jan_BE_2023_2024.csv.gz"),
        ]
    )
    dea = read_eurostat(RAW / "demo_r_magec_BE_2020_2022.csv.gz")
    dea = pd.concat([dea[dea["time"].isin(YEARS)], read_eurostat(SRC / "demo_r_magec_BE_2023.csv.gz")])
    for (rcode, ncode), df, years in (
        (("demo_r_d2jan", "demo_pjan"), pop, [*YEARS, YEARS[-1] + 1]),
        (("demo_r_magec", "demo_magec"), dea, YEARS),
    ):
        df = df.reset_index(drop=True).assign(time=lambda d: d["time"].astype(str), flag="")
        times = [str(y) for y in years]
        orders = {"freq": ["A"], "unit": ["NR"], "sex": SEX_ORDER, "age": _ages(df), "geo": REGIONS, "time": times}
        reg = df[df["geo"].isin(REGIONS)]
        write_json_gz(
            jsonstat(rcode, LABELS[rcode], reg, DIMS, orders, UPDATED[rcode]), f"{rcode}_nuts2_{_tag(years)}.json.gz"
        )
        nat = (
            df.groupby(["freq", "unit", "sex", "age", "time"], as_index=False)["value"].sum().assign(geo="BE", flag="")
        )
        ndims = ["freq", "unit", "age", "sex", "geo", "time"] if ncode == "demo_pjan" else DIMS
        write_json_gz(
            jsonstat(ncode, LABELS[ncode], nat, ndims, dict(orders, geo=["BE"]), UPDATED[ncode]),
            f"{ncode}_country_{_tag(years)}.json.gz",
        )


def _national_births(bir: pd.DataFrame, year: int) -> dict[str, int]:
    """Real cells of ``year`` (Y15..Y49, UNK, TOTAL); the residual split into Y_LT15 and Y_GE50."""
    b = bir[(bir["geo"] == "BE") & (bir["time"] == year)]
    cells = dict(zip(b["age"], b["value"].astype(int), strict=True))
    total = cells.pop("TOTAL")
    resid = total - sum(cells.values())
    assert resid >= 0, (year, resid)
    cells["Y_LT15"] = resid // 3
    cells["Y_GE50"] = resid - resid // 3
    return {"TOTAL": total, **cells}


def _births() -> None:
    bir = read_eurostat(RAW / "demo_fordagec_sdmx_2015_2023.csv.gz")
    pop = pd.concat(
        [
            read_eurostat(RAW / "demo_r_d2jan_BE_2021_2022.csv.gz"),
            read_eurostat(SRC / "demo_r_d2jan_BE_2023_2024.csv.gz"),
        ]
    )
    ages = ["TOTAL", "Y_LT15"] + [f"Y{a}" for a in range(15, 50)] + ["Y_GE50", "UNK"]
    times = [str(y) for y in YEARS]
    nat_rows, reg_rows = [], []
    for t in YEARS:
        cells = _national_births(bir, t)
        nat_rows += [("A", "NR", a, "T", "BE", str(t), cells[a], "") for a in ages]
        women = pop[(pop["sex"] == "F") & (pop["time"] == t) & pop["age"].isin([f"Y{a}" for a in range(15, 50)])]
        w = women.groupby("geo")["value"].sum()
        for g in REGIONS:
            c = {a: int(round(cells[a] * w[g] / w.sum())) for a in ages[1:]}
            reg_rows += [("A", "NR", "TOTAL", g, str(t), sum(c.values()), "")]
            reg_rows += [("A", "NR", a, g, str(t), v, "") for a, v in c.items()]
    nat = pd.DataFrame(nat_rows, columns=["freq", "unit", "age", "sex", "geo", "time", "value", "flag"])
    orders = {"freq": ["A"], "unit": ["NR"], "age": ages, "sex": ["T"], "geo": ["BE"], "time": times}
    write_json_gz(
        jsonstat(
            "demo_fagec",
            LABELS["demo_fagec"],
            nat,
            ["freq", "unit", "age", "sex", "geo", "time"],
            orders,
            UPDATED["demo_fagec"],
        ),
        f"demo_fagec_country_{_tag(YEARS)}.json.gz",
    )
    reg = pd.DataFrame(reg_rows, columns=["freq", "unit", "age", "geo", "time", "value", "flag"])
    orders = {"freq": ["A"], "unit": ["NR"], "age": ages, "geo": REGIONS, "time": times}
    write_json_gz(
        jsonstat(
            "demo_r_fagec",
            LABELS["demo_r_fagec"],
            reg,
            ["freq", "unit", "age", "geo", "time"],
            orders,
            UPDATED["demo_r_fagec"],
        ),
        f"demo_r_fagec_nuts2_{_tag(YEARS)}.json.gz",
    )


def main() -> None:
    _population_and_deaths()
    _births()


if __name__ == "__main__":
    main()
