"""Rebuild ``templates/counts_template.csv`` from Eurostat files.

Usage::

    python templates/build_counts_template.py POPULATION DEATHS NATIONAL_BIRTHS [OUT]

* ``POPULATION``: demo_r_d2jan (population on 1 January by single age, sex, NUTS 2)
  covering **all** Belgian NUTS 2 regions for 2023 and 2024, any format
  :func:`demonoise.io.eurostat.read_eurostat` reads;
* ``DEATHS``: demo_r_magec (deaths by single age, sex, NUTS 2) for BE10 and BE34, 2023;
* ``NATIONAL_BIRTHS``: demo_fordagec (live births by single age of mother, countries)
  with Belgium 2023.

Population and deaths of BE10 and BE34 are copied as published (``status`` real).
Births by age of mother are not available offline for NUTS 2 regions, so the example
**models** them (``status`` modelled): Belgium's births at age ``x`` are shared out in
proportion to each region's female exposure at ``x``,

``b_r(x) = round(b_BE(x) * W_r(x) / sum_{r'} W_r'(x))``,  ``W = (P_F(2023) + P_F(2024)) / 2``

summing over the 11 Belgian NUTS 2 regions; births of unknown age (``UNK``) are shared
in proportion to the female exposure aged 15-49. The published age-of-mother axis of
the national table (``Y15 .. Y49, UNK``) is kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))

from demonoise.core.counts import AgeAxis, Provenance, TableProvenance  # noqa: E402
from demonoise.io.eurostat import read_eurostat  # noqa: E402
from demonoise.io.nuts import nuts_codes  # noqa: E402
from demonoise.io.template import write_counts_csv  # noqa: E402
from demonoise.io.tidy import counts_from_eurostat, table_to_array  # noqa: E402

REGIONS = ("BE10", "BE34")
YEAR = 2023

COMMENT = (
    "demonoise counts template -- example for Belgian NUTS 2 regions BE10 (Brussels) and BE34 (Luxembourg), "
    "reference year 2023.\n"
    "population (1 January 2023 and 2024) and deaths (2023): real values, Source: Eurostat "
    "(demo_r_d2jan, demo_r_magec; extraction date unknown).\n"
    "births (2023, by age of mother): MODELLED (status column) -- Belgium's 2023 births by age of mother "
    "(Eurostat demo_fordagec)\n"
    "shared out by each region's female exposure at that age; not published figures.\n"
    "Columns region,sex,age,year,measure,value[,name][,status]: see docs/csv_template.md. "
    "Lines starting with # are comments."
)


def main(pop_file: str, deaths_file: str, births_file: str, out: str) -> None:
    pop = read_eurostat(pop_file)
    deaths = read_eurostat(deaths_file)
    nat = read_eurostat(births_file)
    be = list(nuts_codes(2, "BE"))
    allbe = counts_from_eurostat(pop, year=YEAR, regions=be, name="be-all", check_totals="raise")
    # national births, published axis
    nat = nat[(nat["geo"] == "BE") & (nat["time"] == YEAR)]
    nat = nat[nat["ord_brth"] == "TOTAL"] if "ord_brth" in nat.columns else nat
    kept = [a for a in nat["age"] if a != "TOTAL"]
    bax = AgeAxis.from_labels(kept)
    b_be = table_to_array(nat, measure="births", regions=["BE"], sexes=None, ages=bax, year=YEAR)[0].astype(float)
    # female exposure at each age of mother, per region
    f = allbe.sexes.index("F")
    W = allbe.exposure[:, f, :]  # regions x population ages
    Wx = np.zeros((len(be), bax.size))
    for j, lab in enumerate(bax.labels):
        if lab == "UNK":
            lo, hi = allbe.ages.index("Y15"), allbe.ages.index("Y49")
            Wx[:, j] = W[:, lo : hi + 1].sum(axis=1)
        else:
            Wx[:, j] = W[:, allbe.ages.index(lab)]
    share = Wx / Wx.sum(axis=0, keepdims=True)
    births = np.round(b_be[None, :] * share).astype(np.int64)
    idx = [be.index(r) for r in REGIONS]
    real = counts_from_eurostat(
        pop, deaths, year=YEAR, regions=list(REGIONS), name="counts_template", check_totals="raise"
    )
    prov = Provenance(
        population=TableProvenance("real", ("demo_r_d2jan",), "unknown", "Eurostat"),
        deaths=TableProvenance("real", ("demo_r_magec",), "unknown", "Eurostat"),
        births=TableProvenance(
            "modelled",
            ("demo_fordagec", "demo_r_d2jan"),
            "unknown",
            "Eurostat",
            "national births by age of mother shared out by regional female exposure",
        ),
    )
    example = real.replace(births=births[idx], birth_ages=bax, provenance=prov)
    write_counts_csv(example, out, comment=COMMENT)
    print(f"wrote {out}: {example}")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(*sys.argv[1:4], sys.argv[4] if len(sys.argv) == 5 else str(HERE / "counts_template.csv"))
