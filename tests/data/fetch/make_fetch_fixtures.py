"""Build the responses the fetch tests serve from a local HTTP server (tests/test_fetch.py).

Usage::

    PYTHONPATH=lib python tests/data/fetch/make_fetch_fixtures.py

Reads only committed fixtures of ``tests/data/eurostat/`` (row filters of real public
Eurostat extracts, see tests/data/README.md) and writes, in this folder, the answers of
Eurostat's dissemination API to the queries ``demonoise fetch --year 2023`` sends:

* ``statistics/<code>_<level>_<years>.json.gz`` -- JSON-stat 2.0 datasets as the
  statistics API returns them (``version, class, label, source, updated, value, status,
  id, size, dimension, extension``; sparse ``value`` keyed by flat position), gzipped;
* ``sdmx/demo_r_d2jan.tsv.gz`` -- the full-dataset TSV of the SDMX 2.1 API
  (``format=TSV&compressed=true``: header ``freq,unit,sex,age,geo\\TIME_PERIOD``, cells
  ``"<value> "``), used for the fallback when the statistics API answers 413.

Values:

* population (demo_r_d2jan) and deaths (demo_r_magec) of BE31 and BE34 are real;
  the country rows (demo_pjan, demo_magec, BE) are the sums over the 11 Belgian NUTS 2
  regions of the same real extracts (not copies of the national tables);
* births by age of mother: the national table (demo_fagec, BE) carries the real
  2023 births by single age 15..49, UNK and TOTAL of demo_fordagec; the residual
  ``TOTAL - sum(cells)`` (births to mothers under 15 or 50 and over) is split
  *by construction* into ``Y_LT15`` (a third) and ``Y_GE50`` (the rest). The regional
  table (demo_r_fagec, BE31, BE34) is **constructed**: national births by age times the
  region's share of Belgian women aged 15-49 on 1 January 2023, rounded;
* life expectancy (demo_r_mlifexp, 2021, BE NUTS 0 and 2, ages Y_LT1 and Y65) is real;
  the fertility indicators (demo_r_find2) are **constructed** numbers in the real layout.

``updated`` is illustrative (the source extracts carry no extraction date).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.io.eurostat import read_eurostat
from demonoise.io.nuts import nuts_region

HERE = Path(__file__).parent
SRC = HERE.parent / "eurostat"
UPDATED = "2025-10-14T23:00:00+0200"
REGIONS = ["BE31", "BE34"]
SEX_ORDER = ["T", "M", "F"]


def _age_label(code: str) -> str:
    if code == "TOTAL":
        return "Total"
    if code == "UNK":
        return "Unknown"
    if code == "Y_LT1":
        return "Less than 1 year"
    if code == "Y_OPEN":
        return "Open-ended age class"
    if code == "Y_LT15":
        return "Less than 15 years"
    if code == "Y_GE50":
        return "50 years or over"
    if code == "Y_GE85":
        return "85 years or over"
    n = int(code[1:])
    return f"{n} year" + ("s" if n != 1 else "")


_LABELS = {
    "freq": ("Time frequency", {"A": "Annual"}),
    "unit": ("Unit of measure", {"NR": "Number", "YR": "Year"}),
    "sex": ("Sex", {"T": "Total", "M": "Males", "F": "Females"}),
    "indic_de": (
        "Demographic indicator",
        {"TOTFERRT": "Total fertility rate", "AGEMOTH": "Mean age of women at childbirth"},
    ),
}


def jsonstat(
    code: str, label: str, frame: pd.DataFrame, dims: list[str], orders: dict[str, list[str]], updated: str = UPDATED
) -> dict:
    """A JSON-stat 2.0 dataset in the statistics API's shape from a tidy frame
    (columns ``dims`` + ``value`` [+ ``flag``]); categories in ``orders``; ``updated`` is
    Eurostat's update stamp of the dataset."""
    size = [len(orders[d]) for d in dims]
    index = {d: {c: i for i, c in enumerate(orders[d])} for d in dims}
    pos = np.zeros(len(frame), dtype=np.int64)
    for d, n in zip(dims, size, strict=True):
        pos = pos * n + frame[d].map(index[d]).to_numpy(dtype=np.int64)
    order = np.argsort(pos)
    value, status = {}, {}
    flags = frame["flag"].to_numpy(dtype=object) if "flag" in frame else np.full(len(frame), "", dtype=object)
    vals = frame["value"].to_numpy(dtype=float)
    for i in order:
        v = vals[i]
        if np.isnan(v):
            continue
        value[str(int(pos[i]))] = int(v) if v == int(v) and "YR" not in orders.get("unit", []) else float(v)
        if flags[i]:
            status[str(int(pos[i]))] = flags[i]
    dimension = {}
    for d in dims:
        if d == "age":
            lab, cats = "Age class", {c: _age_label(c) for c in orders[d]}
        elif d == "geo":
            lab, cats = "Geopolitical entity (reporting)", {c: nuts_region(c).name for c in orders[d]}
        elif d == "time":
            lab, cats = "Time", {c: c for c in orders[d]}
        else:
            lab, known = _LABELS[d]
            cats = {c: known.get(c, c) for c in orders[d]}
        dimension[d] = {"label": lab, "category": {"index": index[d], "label": cats}}
    return {
        "version": "2.0",
        "class": "dataset",
        "label": label,
        "source": "ESTAT",
        "updated": updated,
        "value": value,
        "status": status,
        "id": dims,
        "size": size,
        "dimension": dimension,
        "extension": {
            "lang": "EN",
            "id": code.upper(),
            "agencyId": "ESTAT",
            "version": "1.0",
            "datastructure": {"id": code.upper(), "agencyId": "ESTAT", "version": "1.0"},
            "status": {"label": {"p": "provisional", "e": "estimated", "b": "break in time series"}},
            "positions-with-no-data": {d: [] for d in dims},
        },
    }


def write_json_gz(d: dict, name: str) -> None:
    path = HERE / "statistics" / name
    path.parent.mkdir(exist_ok=True)
    raw = json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path.write_bytes(gzip.compress(raw, 9, mtime=0))
    print(f"{path.relative_to(HERE)}: {len(d['value'])} values, {path.stat().st_size} bytes")


def _ages(df: pd.DataFrame) -> list[str]:
    """Eurostat's order: TOTAL, Y_LT1, Y1..Y99, Y_OPEN, UNK (as published)."""
    codes = list(dict.fromkeys(df["age"]))
    key = {"TOTAL": -2, "Y_LT1": -1, "Y_LT15": 14.5, "Y_OPEN": 1000, "Y_GE50": 999, "UNK": 1001}
    return sorted(codes, key=lambda c: key.get(c, int(c[1:]) if c[1:].isdigit() else 500))


def main() -> None:
    pop = read_eurostat(SRC / "demo_r_d2jan_BE_2023_2024.csv.gz").reset_index(drop=True)
    dea = read_eurostat(SRC / "demo_r_magec_BE_2023.csv.gz").reset_index(drop=True)
    bir = read_eurostat(SRC / "demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz").reset_index(drop=True)
    dims = ["freq", "unit", "sex", "age", "geo", "time"]

    for code, label, df, years, national in (
        ("demo_r_d2jan", "Population on 1 January by age, sex and NUTS 2 region", pop, ["2023", "2024"], "demo_pjan"),
        ("demo_r_magec", "Deaths by age, sex and NUTS 2 region", dea, ["2023"], "demo_magec"),
    ):
        df = df.assign(time=df["time"].astype(str), flag="")
        ages = _ages(df)
        reg = df[df["geo"].isin(REGIONS)]
        orders = {"freq": ["A"], "unit": ["NR"], "sex": SEX_ORDER, "age": ages, "geo": REGIONS, "time": years}
        write_json_gz(jsonstat(code, label, reg, dims, orders), f"{code}_nuts2_{'-'.join(years)}.json.gz")
        # the country: sum over the 11 regions of the same extract
        nat = (
            df.groupby(["freq", "unit", "sex", "age", "time"], as_index=False)["value"].sum().assign(geo="BE", flag="")
        )
        orders_n = dict(orders, geo=["BE"])
        nat_label = "Population on 1 January by age and sex" if national == "demo_pjan" else "Deaths by age and sex"
        ndims = ["freq", "unit", "age", "sex", "geo", "time"] if national == "demo_pjan" else dims
        write_json_gz(
            jsonstat(national, nat_label, nat, ndims, orders_n), f"{national}_country_{'-'.join(years)}.json.gz"
        )

    # births: national real cells + constructed split of the residual; regional constructed
    b = bir[(bir["geo"] == "BE") & (bir["time"] == 2023)]
    cells = dict(zip(b["age"], b["value"].astype(int), strict=True))
    total = cells.pop("TOTAL")
    resid = total - sum(cells.values())
    assert resid >= 0, resid
    cells["Y_LT15"] = resid // 3
    cells["Y_GE50"] = resid - resid // 3
    ages = ["TOTAL", "Y_LT15"] + [f"Y{a}" for a in range(15, 50)] + ["Y_GE50", "UNK"]
    nat = pd.DataFrame(
        {
            "freq": "A",
            "unit": "NR",
            "sex": "T",
            "age": ages,
            "geo": "BE",
            "time": "2023",
            "value": [total] + [cells[a] for a in ages[1:]],
            "flag": "",
        }
    )
    orders = {"freq": ["A"], "unit": ["NR"], "age": ages, "sex": ["T"], "geo": ["BE"], "time": ["2023"]}
    write_json_gz(
        jsonstat(
            "demo_fagec",
            "Live births by mother's age and newborn's sex",
            nat,
            ["freq", "unit", "age", "sex", "geo", "time"],
            orders,
        ),
        "demo_fagec_country_2023.json.gz",
    )
    women = pop[(pop["sex"] == "F") & (pop["time"] == 2023) & pop["age"].isin([f"Y{a}" for a in range(15, 50)])]
    w = women.groupby("geo")["value"].sum()
    rows = []
    for g in REGIONS:
        share = w[g] / w.sum()
        c = {a: int(round(cells[a] * share)) for a in ages[1:]}
        rows += [("A", "NR", "TOTAL", g, "2023", sum(c.values()), "")] + [
            ("A", "NR", a, g, "2023", v, "") for a, v in c.items()
        ]
    reg = pd.DataFrame(rows, columns=["freq", "unit", "age", "geo", "time", "value", "flag"])
    orders = {"freq": ["A"], "unit": ["NR"], "age": ages, "geo": REGIONS, "time": ["2023"]}
    write_json_gz(
        jsonstat(
            "demo_r_fagec",
            "Live births by age of mother and NUTS 2 region",
            reg,
            ["freq", "unit", "age", "geo", "time"],
            orders,
        ),
        "demo_r_fagec_nuts2_2023.json.gz",
    )

    # comparison tables (2021): real life expectancy, constructed fertility indicators
    le = read_eurostat(SRC / "demo_r_mlifexp_BE_2021.tsv.gz").reset_index(drop=True)
    le = le[(le["time"] == 2021) & (le["geo"].str.len().isin([2, 4]))].assign(time="2021", freq="A")
    geos = list(dict.fromkeys(le["geo"]))
    orders = {"freq": ["A"], "unit": ["YR"], "sex": SEX_ORDER, "age": ["Y_LT1", "Y65"], "geo": geos, "time": ["2021"]}
    write_json_gz(
        jsonstat("demo_r_mlifexp", "Life expectancy by age, sex and NUTS 2 region", le, dims, orders),
        "demo_r_mlifexp_country-nuts2_2021.json.gz",
    )
    fr = pd.DataFrame(
        [("A", "NR", "TOTFERRT", g, "2021", v, "") for g, v in (("BE", 1.11), ("BE31", 1.22), ("BE34", 1.33))]
        + [("A", "YR", "AGEMOTH", g, "2021", v, "") for g, v in (("BE", 30.1), ("BE31", 30.2), ("BE34", 30.3))],
        columns=["freq", "unit", "indic_de", "geo", "time", "value", "flag"],
    )
    # unit differs by indicator: keep it as a dimension the way Eurostat publishes (NR / YR)
    orders = {
        "freq": ["A"],
        "unit": ["NR", "YR"],
        "indic_de": ["TOTFERRT", "AGEMOTH"],
        "geo": ["BE", "BE31", "BE34"],
        "time": ["2021"],
    }
    d = jsonstat(
        "demo_r_find2", "Fertility indicators by NUTS 2 region", fr, ["freq", "unit", "indic_de", "geo", "time"], orders
    )
    d["value"] = {k: float(v) for k, v in d["value"].items()}
    write_json_gz(d, "demo_r_find2_country-nuts2_2021.json.gz")

    # full-dataset TSV of demo_r_d2jan (SDMX 2.1 API, format=TSV&compressed=true): BE31, BE34,
    # plus the country BE and the NUTS 1 region BE3 (both must be ignored by the NUTS 2 reader)
    p = pop.assign(time=pop["time"].astype(str))
    be = p.groupby(["freq", "unit", "sex", "age", "time"], as_index=False)["value"].sum().assign(geo="BE")
    be3 = (
        p[p["geo"].str.startswith("BE3")]
        .groupby(["freq", "unit", "sex", "age", "time"], as_index=False)["value"]
        .sum()
        .assign(geo="BE3")
    )
    allp = pd.concat([be, be3, p[p["geo"].isin(REGIONS)]])
    wide = allp.pivot_table(
        index=["freq", "unit", "sex", "age", "geo"], columns="time", values="value", aggfunc="first"
    )
    age_rank = {a: i for i, a in enumerate(_ages(p))}
    keys = sorted(wide.index, key=lambda k: (k[2], age_rank[k[3]], k[4]))
    lines = ["freq,unit,sex,age,geo\\TIME_PERIOD\t" + "\t".join(f"{t} " for t in wide.columns) + "\n"]
    for k in keys:
        lines.append(",".join(k) + "\t" + "\t".join(f"{int(v)} " for v in wide.loc[k]) + "\n")
    out = HERE / "sdmx" / "demo_r_d2jan.tsv.gz"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(gzip.compress("".join(lines).encode("utf-8"), 9, mtime=0))
    print(f"{out.relative_to(HERE)}: {len(lines) - 1} series, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
