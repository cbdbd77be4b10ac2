"""Re-make the filtered raw Eurostat extracts of ``data-raw/eurostat/`` from the public extracts.

Usage::

    python data-raw/make_raw.py SOURCE_DIR

``SOURCE_DIR`` holds the public extracts named in ``data-raw/README.md``. Every file
written here is a *row filter* of its extract: header, column order, line endings,
value spelling and flags are kept byte for byte (each kept line is the original line);
gzip is written with ``mtime=0`` and no file name, so re-making gives identical bytes.

The build of the embedded datasets (``python -m demonoise_build``) reads
only the filtered files; this script documents (and reproduces) the filters. It is
not used at run time or by the tests.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "eurostat"

# Country codes of the ESS countries with NUTS 2 population in 2023 (the ess-2023 scope).
COUNTRIES = {
    "AL",
    "AT",
    "BE",
    "BG",
    "CH",
    "CY",
    "CZ",
    "DE",
    "DK",
    "EE",
    "EL",
    "ES",
    "FI",
    "FR",
    "HR",
    "HU",
    "IE",
    "IS",
    "IT",
    "LI",
    "LT",
    "LU",
    "LV",
    "ME",
    "MK",
    "MT",
    "NL",
    "NO",
    "PL",
    "PT",
    "RO",
    "RS",
    "SE",
    "SI",
    "SK",
    "TR",
}


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


def _lines(path: Path) -> list[str]:
    """The lines of a text extract, gzipped (``.gz``) or plain, line endings kept."""
    if path.name.endswith(".gz"):
        return _gz_lines(path)
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


def _write(path: Path, lines: list[str]) -> None:
    """Write the kept lines: gzip (``mtime = 0``, no file name) for a ``.gz`` name, else plain."""
    data = "".join(lines).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0) if path.name.endswith(".gz") else data)
    print(f"{path.name}: {len(lines) - 1} data lines, {path.stat().st_size} bytes")


def filter_csv(src: Path, dst: Path, keep) -> None:
    """Keep the header and the rows for which ``keep(dict_of_fields)`` is true."""
    lines = _lines(src)
    header = next(csv.reader([lines[0].rstrip("\r\n")]))
    out = [lines[0]]
    for line in lines[1:]:
        fields = next(csv.reader([line.rstrip("\r\n")]))
        if keep(dict(zip(header, fields, strict=True))):
            out.append(line)
    _write(dst, out)


def filter_tsv(src: Path, dst: Path, keep) -> None:
    """Eurostat TSV: keep the rows whose key (first field, comma separated) passes ``keep``."""
    lines = _lines(src)
    dims = lines[0].split("\t", 1)[0].split(",")
    dims[-1] = dims[-1].split("\\")[0]
    out = [lines[0]]
    for line in lines[1:]:
        key = line.split("\t", 1)[0].split(",")
        if keep(dict(zip(dims, key, strict=True))):
            out.append(line)
    _write(dst, out)


def main(src: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    # NUTS 2 population by 5-year group, 1 January 2023 and 2024 (all NUTS 2 codes of the
    # extract: NUTS 2021 codes and the NUTS 2024 codes carrying 2024 values).
    filter_csv(
        src / "demo_r_pjangroup_2019_2024.csv.gz",
        OUT / "demo_r_pjangroup_NUTS2_2023_2024.csv.gz",
        lambda r: r["year"] in ("2023", "2024") and len(r["geo"]) == 4 and r["geo"] != "EFTA",
    )
    # Belgian NUTS 2 single-age population: 2015-2020 (standard schedule), 2023-2024 (data).
    filter_csv(
        src / "demo_r_d2jan_BE_2015_2025.csv.gz",
        OUT / "demo_r_d2jan_BE_2015_2024.csv.gz",
        lambda r: r["time"] in {str(y) for y in (*range(2015, 2021), 2023, 2024)},
    )
    # Belgian NUTS 2 deaths: 2015-2019 (standard schedule), 2023 (data).
    filter_csv(
        src / "demo_r_magec_BE_2015_2023.csv.gz",
        OUT / "demo_r_magec_BE_2015_2019_2023.csv.gz",
        lambda r: r["time"] in {str(y) for y in (*range(2015, 2020), 2023)},
    )
    # Belgian NUTS 2 single-age population 2021-2022 and deaths 2020-2022: the years the
    # multi-year dataset be-2015-2023 needs beyond the files above (kept apart so that
    # the inputs of be-2023 stay byte for byte what they were).
    filter_csv(
        src / "demo_r_d2jan_BE_2015_2025.csv.gz",
        OUT / "demo_r_d2jan_BE_2021_2022.csv.gz",
        lambda r: r["time"] in ("2021", "2022"),
    )
    filter_csv(
        src / "demo_r_magec_BE_2015_2023.csv.gz",
        OUT / "demo_r_magec_BE_2020_2022.csv.gz",
        lambda r: r["time"] in ("2020", "2021", "2022"),
    )
    # National births by single age of mother: the ess-2023 countries, all years.
    filter_csv(
        src / "demo_fordagec_sdmx_2015_2023.csv.gz",
        OUT / "demo_fordagec_sdmx_2015_2023.csv.gz",
        lambda r: r["geo"] in COUNTRIES,
    )
    # Life expectancy at birth (Y_LT1) and at 65 (Y65), women and men, countries and
    # NUTS 2 regions, every year column 1990-2021.
    filter_tsv(
        src / "demo_r_mlifexp_1990_2021.tsv.gz",
        OUT / "demo_r_mlifexp_Y_LT1_Y65_FM_1990_2021.tsv.gz",
        lambda k: k["age"] in ("Y_LT1", "Y65") and k["sex"] in ("F", "M") and len(k["geo"]) in (2, 4),
    )
    # Total fertility rate 2013-2022 of the ess-2023 countries and their NUTS 2 regions
    # (the extract holds only TOTFERRT rows of NUTS 0 and NUTS 2; this drops the UK row).
    filter_tsv(
        src / "demo_r_find3_TFR_nuts0_nuts2_2013_2022.tsv",
        OUT / "demo_r_find3_TFR_NUTS0_NUTS2_2013_2022.tsv",
        lambda k: k["geo"][:2] in COUNTRIES,
    )
    # Female population of the ess-2023 countries (NUTS 0) on 1 January 2019-2023, 5-year
    # groups: the exposure of the national TFR cross-check of demo_r_find3 (2022, and the
    # years before it for context).
    filter_csv(
        src / "demo_r_pjangroup_2019_2024.csv.gz",
        OUT / "demo_r_pjangroup_NUTS0_F_2019_2023.csv.gz",
        lambda r: r["year"] in {str(y) for y in range(2019, 2024)} and r["geo"] in COUNTRIES and r["sex"] == "F",
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
