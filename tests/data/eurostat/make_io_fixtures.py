"""Rebuild the I/O reader fixtures of this folder from the public Eurostat extracts.

Usage::

    python tests/data/eurostat/make_io_fixtures.py SOURCE_DIR

``SOURCE_DIR`` holds the extracts named in ``tests/data/README.md`` (section "I/O
readers"). Every fixture is a *row filter* of its extract: header, column order, line
endings, value spelling and flags are kept byte for byte; gzip is rewritten with
``mtime=0`` so that rebuilding gives identical files. The JSON-stat fixture is a filtered
cube: categories of ``geo`` and ``time`` are subset and re-indexed, ``size``, ``value``
and ``status`` follow, everything else is kept.

Not used by the tests (which read the committed fixtures); kept so that the filters are
reproducible.
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


def _write_gz(path: Path, lines: list[str]) -> None:
    data = "".join(lines).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{path.name}: {len(lines) - 1} data lines, {path.stat().st_size} bytes")


def filter_csv(src: Path, dst: Path, keep) -> None:
    """Keep the header and the rows for which ``keep(dict_of_fields)`` is true."""
    lines = _gz_lines(src)
    header = lines[0].rstrip("\r\n").split(",")
    out = [lines[0]]
    for line in lines[1:]:
        fields = next(csv.reader([line.rstrip("\r\n")]))
        if keep(dict(zip(header, fields, strict=True))):
            out.append(line)
    _write_gz(dst, out)


def filter_tsv(src: Path, dst: Path, keep) -> None:
    """Eurostat TSV: keep the rows whose key (first field, comma separated) passes ``keep``."""
    lines = _gz_lines(src)
    dims = lines[0].split("\t", 1)[0].split(",")
    dims[-1] = dims[-1].split("\\")[0]
    out = [lines[0]]
    for line in lines[1:]:
        key = line.split("\t", 1)[0].split(",")
        if keep(dict(zip(dims, key, strict=True))):
            out.append(line)
    _write_gz(dst, out)


def filter_jsonstat(src: Path, dst: Path, geos: list[str], times: list[str]) -> None:
    d = json.loads(src.read_text(encoding="utf-8"))
    ids, size = d["id"], d["size"]
    old_size = list(size)
    keep_pos = []
    for k in ids:
        cat = d["dimension"][k]["category"]
        order = sorted(cat["index"], key=cat["index"].get)
        want = {"geo": geos, "time": times}.get(k)
        kept = order if want is None else [c for c in order if c in want]
        keep_pos.append([cat["index"][c] for c in kept])
        cat["index"] = {c: i for i, c in enumerate(kept)}
        if "label" in cat:
            cat["label"] = {c: cat["label"][c] for c in kept}
    new_size = [len(p) for p in keep_pos]
    d["size"] = new_size
    # old flat position of every new flat position
    grids = np.meshgrid(*[np.array(p) for p in keep_pos], indexing="ij")
    old_flat = np.ravel_multi_index([g.ravel() for g in grids], old_size)
    value = {str(k): v for k, v in d["value"].items()}
    status = {str(k): v for k, v in d.get("status", {}).items()}
    d["value"] = {str(i): value[str(o)] for i, o in enumerate(old_flat) if str(o) in value}
    d["status"] = {str(i): status[str(o)] for i, o in enumerate(old_flat) if str(o) in status}
    ext = d.get("extension", {})
    if "positions-with-no-data" in ext:
        ext["positions-with-no-data"] = {k: [] for k in ids}
    dst.write_text(json.dumps(d, ensure_ascii=False), encoding="utf-8")
    print(
        f"{dst.name}: size {new_size}, {len(d['value'])} values, {len(d['status'])} statuses, {dst.stat().st_size} "
        "bytes"
    )


def construct_fagec_sdmx(src: Path, dst: Path) -> None:
    """A demo_r_fagec-shaped SDMX-CSV 1.0 file (SDMX 2.1 API, ``format=SDMX-CSV``).

    No real demo_r_fagec extract is available offline, so the *values are constructed*:
    Belgium's 2023 live births by single age of mother 15..49 and UNK (demo_fordagec,
    real) are split between BE10 and BE34 in proportion to each region's share of the
    Belgian female population aged 15-49 on 1 January 2023 (demo_r_d2jan, real), and
    rounded; ``Y_LT15`` and ``Y_GE50`` are set to small made-up counts (the national
    extract has no such rows). ``LAST UPDATE`` is illustrative. BE34 rows carry the
    flag ``p`` to exercise flag parsing. Not Eurostat figures: use for format tests only.
    """
    import pandas as pd

    births = pd.read_csv(src / "demo_fordagec_sdmx_2015_2023.csv.gz", dtype=str, keep_default_na=False)
    births = births[(births["geo"] == "BE") & (births["TIME_PERIOD"] == "2023") & (births["age"] != "TOTAL")]
    b = dict(zip(births["age"], births["OBS_VALUE"].astype(int), strict=True))
    pop = pd.read_csv(src / "demo_r_d2jan_BE_2015_2025.csv.gz", dtype=str, keep_default_na=False)
    pop = pop[(pop["time"] == "2023") & (pop["sex"] == "F") & pop["age"].isin([f"Y{a}" for a in range(15, 50)])]
    w = pop.assign(v=pop["values"].astype(float)).groupby("geo")["v"].sum()
    share = {g: w[g] / w.sum() for g in ("BE10", "BE34")}
    extra = {"BE10": {"Y_LT15": 4, "Y_GE50": 6}, "BE34": {"Y_LT15": 0, "Y_GE50": 1}}
    ages = ["Y_LT15"] + [f"Y{a}" for a in range(15, 50)] + ["Y_GE50", "UNK"]
    lines = ["DATAFLOW,LAST UPDATE,freq,unit,age,geo,TIME_PERIOD,OBS_VALUE,OBS_FLAG,CONF_STATUS\n"]
    for geo in ("BE10", "BE34"):
        cells = {a: extra[geo].get(a, int(round(b.get(a, 0) * share[geo]))) for a in ages}
        flag = "p" if geo == "BE34" else ""
        rows = [("TOTAL", sum(cells.values()))] + [(a, cells[a]) for a in ages]
        for age, v in rows:
            lines.append(f"ESTAT:DEMO_R_FAGEC(1.0),14/10/25 23:00:00,A,NR,{age},{geo},2023,{v},{flag},\n")
    dst.write_text("".join(lines), encoding="utf-8")
    print(f"{dst.name}: {len(lines) - 1} data lines (constructed values)")


def main(src: Path) -> None:
    filter_csv(
        src / "demo_r_pjangroup_2019_2024.csv.gz",
        HERE / "demo_r_pjangroup_sample.csv.gz",
        lambda r: (
            r["geo"] in {"BE", "BE10", "BE34", "EL30", "LU00", "NL35", "EFTA"} and r["year"] in {"2022", "2023", "2024"}
        ),
    )
    filter_csv(
        src / "demo_r_d2jan_BE_2015_2025.csv.gz",
        HERE / "demo_r_d2jan_BE10_2023_2024.csv.gz",
        lambda r: r["geo"] == "BE10" and r["time"] in {"2023", "2024"},
    )
    filter_csv(
        src / "demo_r_magec_BE_2015_2023.csv.gz",
        HERE / "demo_r_magec_BE10_2023.csv.gz",
        lambda r: r["geo"] == "BE10" and r["time"] == "2023",
    )
    filter_csv(
        src / "demo_fordagec_sdmx_2015_2023.csv.gz",
        HERE / "demo_fordagec_sdmx_sample.csv.gz",
        lambda r: r["geo"] in {"BE", "EL", "EU27_2020"} and r["TIME_PERIOD"] in {"2018", "2022", "2023"},
    )
    filter_tsv(
        src / "demo_mlexpec_1960_2022.tsv.gz",
        HERE / "demo_mlexpec_sample.tsv.gz",
        lambda k: k["geo"] in {"BE", "FR", "LI", "EU27_2020"},
    )
    filter_tsv(
        src / "demo_r_mlifexp_1990_2021.tsv.gz",
        HERE / "demo_r_mlifexp_sample.tsv.gz",
        lambda k: k["geo"] in {"BE", "BE10", "BE34", "AL", "DE11"},
    )
    construct_fagec_sdmx(src, HERE / "demo_r_fagec_sdmx_constructed.csv")
    filter_jsonstat(
        src / "demo_pjan_jsonstat_EU27_DE_ES_FR_IT_PL_2015_2024.json",
        HERE / "demo_pjan_jsonstat_sample.json",
        geos=["EU27_2020", "DE", "FR"],
        times=["2020", "2023", "2024"],
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
