"""Build the graduation test fixtures from the original Eurostat extracts.

Usage::

    python tests/data/make_graduation_fixtures.py SOURCE_DIR [DEST_DIR]

``SOURCE_DIR`` holds the original extracts (``demo_r_d2jan_BE_2015_2025.csv.gz``,
``demo_pjan_jsonstat_EU27_DE_ES_FR_IT_PL_2015_2024.json``,
``demo_fordagec_sdmx_2015_2023.csv.gz``); ``DEST_DIR`` defaults to
``tests/data/eurostat``. Rows are filtered *textually* (original lines, original
column order and number formatting); the JSON-stat file is re-indexed to the kept
categories with its structure, status flags and metadata intact. Not used by the
tests themselves (they read only the filtered copies).
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

import numpy as np


def _filter_csv_gz(src: Path, dst: Path, keep) -> int:
    with gzip.open(src, "rt", newline="") as f:
        lines = f.read().splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    out = [lines[0]]
    for line in lines[1:]:
        row = dict(zip(header, next(csv.reader([line])), strict=True))
        if keep(row):
            out.append(line)
    with open(dst, "wb") as raw:  # mtime=0: reproducible bytes
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as g:
            g.write("".join(out).encode("utf-8"))
    return len(out) - 1


def _filter_jsonstat(src: Path, dst: Path, keep: dict[str, list[str]]) -> int:
    d = json.loads(src.read_text(encoding="utf-8"))
    ids, size = d["id"], d["size"]
    kept_pos = []
    for dim, n in zip(ids, size, strict=True):
        cat = d["dimension"][dim]["category"]
        codes = sorted(cat["index"], key=cat["index"].get)
        if dim in keep:
            new = [c for c in codes if c in keep[dim]]
            cat["index"] = {c: i for i, c in enumerate(new)}
            if "label" in cat:
                cat["label"] = {c: cat["label"][c] for c in new}
            kept_pos.append([codes.index(c) for c in new])
        else:
            kept_pos.append(list(range(n)))
    new_size = [len(p) for p in kept_pos]
    old_flat = np.ravel_multi_index(np.ix_(*kept_pos), size).ravel()
    new_flat = np.arange(int(np.prod(new_size)))
    value, status = {}, {}
    for o, n in zip(old_flat.tolist(), new_flat.tolist(), strict=True):
        if str(o) in d["value"]:
            value[str(n)] = d["value"][str(o)]
        if str(o) in d.get("status", {}):
            status[str(n)] = d["status"][str(o)]
    d["value"], d["status"], d["size"] = value, status, new_size
    # the extension's positions-with-no-data refer to positions; recompute them
    ext = d.get("extension", {})
    if "positions-with-no-data" in ext:
        pwnd = {dim: [] for dim in ids}
        full = np.zeros(new_size, dtype=bool)
        full.ravel()[[int(k) for k in value]] = True
        for ax, dim in enumerate(ids):
            others = tuple(a for a in range(len(ids)) if a != ax)
            pwnd[dim] = [int(i) for i in np.flatnonzero(~full.any(axis=others))]
        ext["positions-with-no-data"] = pwnd
    dst.write_text(json.dumps(d, ensure_ascii=False), encoding="utf-8")
    return len(value)


def main(argv: list[str]) -> None:
    src = Path(argv[1])
    dst = Path(argv[2]) if len(argv) > 2 else Path(__file__).resolve().parent / "eurostat"
    dst.mkdir(parents=True, exist_ok=True)
    n = _filter_csv_gz(
        src / "demo_r_d2jan_BE_2015_2025.csv.gz",
        dst / "demo_r_d2jan_BE_2023_2024.csv.gz",
        lambda r: r["time"] in ("2023", "2024"),
    )
    print("demo_r_d2jan_BE_2023_2024.csv.gz", n, "rows")
    geos = ["BE", "DE", "ES", "FR", "IT", "PL"]
    n = _filter_csv_gz(
        src / "demo_fordagec_sdmx_2015_2023.csv.gz",
        dst / "demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz",
        lambda r: r["TIME_PERIOD"] == "2023" and r["geo"] in geos,
    )
    print("demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz", n, "rows")
    n = _filter_jsonstat(
        src / "demo_pjan_jsonstat_EU27_DE_ES_FR_IT_PL_2015_2024.json",
        dst / "demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json",
        {"geo": ["DE", "ES", "FR", "IT", "PL"], "time": ["2023", "2024"]},
    )
    print("demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json", n, "values")


if __name__ == "__main__":
    main(sys.argv)
