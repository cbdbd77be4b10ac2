r"""Build the multi-year embedded dataset ``be-2015-2023`` from the raw Eurostat extracts.

``be-2015-2023``: the 11 Belgian NUTS 2 regions and the country, reference years
2015-2023 (a :class:`~demonoise.core.counts.Panel`):

* population on 1 January 2015-2024 (demo_r_d2jan) and deaths 2015-2023 (demo_r_magec)
  by sex and single age: **real**, as published (``Y_LT1 .. Y99``, the open group,
  ``UNK``; ``T`` as published, which equals ``F + M``); each 1 January stock is held
  once -- the end stock of one year and the start stock of the next;
* births by age of mother: the real national births of each year (demo_fordagec, the
  boundary rule of ``be-2023``), split among the regions by the regional fertility
  rule of ``be-2023`` (:mod:`demonoise_build.build`) applied year by year -- **modelled**:
  the year's national age pattern scaled to each region's published TFR
  (demo_r_find3) of the same year, of 2022 for 2023 (the latest published, as
  ``be-2023`` does), raked to the national births and rounded by seeded systematic
  sampling. The 2023 births use ``be-2023``'s random stream, so the 2023 slice of the
  panel is ``be-2023`` exactly; the other years have a stream of their own
  (``SeedSequence(ROOT_SEED, spawn_key=(births step, *country, year))``).

Written as ``be-2015-2023.csv.gz`` (the multi-year counts template, each stock once,
read back with :func:`demonoise.io.template.read_panel_csv`), ``be-2015-2023.npz``
(:func:`demonoise.io.packed.write_packed_panel`) and ``be-2015-2023.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.counts import SEXES, Panel, Provenance, TableProvenance, spread_unknown
from demonoise.core.errors import DataError, ParameterError
from demonoise.io.nuts import nuts_codes, nuts_region
from demonoise.io.packed import FORMAT_PANEL, read_packed_panel, write_packed_panel
from demonoise.io.template import read_panel_csv, write_panel_csv
from demonoise_build import build as bd

__all__ = ["PANEL_NAMES", "PANEL_YEARS", "PanelParts", "build_panel_parts", "write_panel_dataset", "build_panel"]

#: Multi-year datasets this module builds.
PANEL_NAMES: tuple[str, ...] = ("be-2015-2023",)
#: Reference years of be-2015-2023.
PANEL_YEARS: tuple[int, ...] = tuple(range(2015, 2024))

LABEL = (
    "population and deaths real (Eurostat), 2015-2023; regional births modelled per year from national births "
    "(demo_fordagec) and regional TFR (demo_r_find3)"
)
IMPLICATIONS = (
    "regional births modelled: each year's national age pattern scaled to the region's published TFR of the year "
    "(2023: of 2022) -- regional ASFR shapes are the national shape, so regional changes of ASFR follow the national "
    "ones; changes of mortality rates and life expectancy are real"
)


@dataclass
class PanelParts:
    """A built panel and its metadata (no files written)."""

    panel: Panel
    meta: dict


def _births_stream(country: str, year: int) -> np.random.Generator:
    """be-2023's births stream for 2023 (the panel's 2023 is be-2023), a stream per year otherwise."""
    if year == bd.YEAR:
        return bd._stream("births", country)
    key = (bd.STEPS["births"], *country.encode("ascii"), year)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(bd.ROOT_SEED, spawn_key=key)))


def _real_cubes(raw: bd.Raw, codes: list[str]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Real stocks (Y + 1, R, 3, A) and deaths (Y, R, 3, A), T checked against F + M, and the
    years whose deaths of unknown age are not published (UNK empty in demo_r_magec 2015-2019:
    set to 0, the value published for every region and sex in 2020-2023)."""
    d2 = pd.concat([raw.tables["d2jan"], raw.tables["d2jan_2021_2022"]], ignore_index=True)
    mg = pd.concat([raw.tables["magec"], raw.tables["magec_2020_2022"]], ignore_index=True)
    unk = (mg["age"] == "UNK") & mg["value"].isna()
    unk_years = sorted(int(t) for t in mg.loc[unk, "time"].unique())
    mg.loc[unk, "value"] = 0.0
    stocks = np.stack([bd._be_cube(d2, codes, y, measure="population") for y in (*PANEL_YEARS, PANEL_YEARS[-1] + 1)])
    deaths = np.stack([bd._be_cube(mg, codes, t, measure="deaths") for t in PANEL_YEARS])
    for what, v, years in (
        ("population", stocks, (*PANEL_YEARS, PANEL_YEARS[-1] + 1)),
        ("deaths", deaths, PANEL_YEARS),
    ):
        bad = v[:, :, 2] != v[:, :, 0] + v[:, :, 1]
        if bad.any():
            y, r, a = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(
                "published T differs from F + M",
                measure=what,
                region=codes[r],
                age=bd.POP_AXIS.labels[a],
                year=years[y],
            )
    return stocks, deaths, unk_years


def _births(raw: bd.Raw, codes: list[str], stocks: np.ndarray) -> tuple[np.ndarray, dict]:
    """Modelled regional births (Y, R, 38) by the rule of be-2023, year by year, and the rule's figures."""
    out, figures = [], {}
    for i, t in enumerate(PANEL_YEARS):
        nat, used = bd.national_births(raw.tables["fordagec"], ["BE"], year=t)
        if used["latest_year"] or used["missing_ages"]:
            raise DataError("national births by age of mother incomplete", dataset="demo_fordagec", region="BE", year=t)
        W = (spread_unknown(stocks[i][:, 0], bd.POP_AXIS) + spread_unknown(stocks[i + 1][:, 0], bd.POP_AXIS)) / 2.0
        tfr_year = min(t, bd.TFR_YEAR)
        fert = bd.fertility_rule(raw.tables["find3"], codes, nat, W, tfr_year=tfr_year)
        if fert.missing:
            raise DataError(f"no published {tfr_year} TFR for {', '.join(fert.missing)}", dataset="demo_r_find3")
        out.append(bd._allocate_births(nat[0], W, fert.scale, "BE", rng=_births_stream("BE", t)))
        figures[str(t)] = {
            "tfr_published_year": tfr_year,
            "tfr_national": bd._num(fert.tfr_national[0], 4),
            f"tfr_BE_published_{tfr_year}": bd._num(fert.published_national[0]),
            "regions": {
                c: {"tfr_published": bd._num(fert.published[k]), "target": bd._num(fert.target[k], 4)}
                for k, c in enumerate(codes)
            },
        }
    return np.stack(out), figures


def _with_country(codes: list[str], arr: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Insert the country row (sum of its regions) before the regions, on axis 1 (axis 0: years)."""
    order, stacked = None, []
    for a in arr:
        order, d, _ = bd._with_countries(codes, {"x": a})
        stacked.append(d["x"])
    return order, np.stack(stacked)


def _unk_note(unk_years: list[int]) -> str:
    if not unk_years:
        return ""
    return (
        f"; deaths of unknown age (UNK) not published for {unk_years[0]}-{unk_years[-1]} (empty in demo_r_magec): set "
        "to 0, the value published for every region and sex in the other years"
    )


def _provenance(unk_years: list[int]) -> Provenance:
    ext = "unknown"
    p = TableProvenance(
        "real",
        ("demo_r_d2jan",),
        ext,
        "Eurostat",
        "population on 1 January 2015-2024 by sex and single age as published (Y_LT1..Y99, Y_OPEN as Y_GE100, UNK); "
        "each stock held once (the end of one year, the start of the next); published T equals F + M; "
        f"{bd.COUNTRY_RULE}",
    )
    d = TableProvenance(
        "real",
        ("demo_r_magec",),
        ext,
        "Eurostat",
        f"deaths 2015-2023 by sex and single age as published; published T equals F + M; {bd.COUNTRY_RULE}"
        + _unk_note(unk_years),
    )
    b = TableProvenance(
        "modelled",
        ("demo_fordagec", "demo_r_find3", "demo_r_d2jan"),
        ext,
        "Eurostat",
        f"national births 2015-2023 by single age of mother real (demo_fordagec); {bd.BIRTH_RULE}; regional births "
        "modelled by the rule of be-2023 applied year by year, with the region's published TFR of the year (2023: of "
        "2022); the 2023 births are those of be-2023; the country row is the national figure",
    )
    return Provenance(population=p, deaths=d, births=b, label=LABEL, implications=IMPLICATIONS)


def build_panel_parts(name: str = "be-2015-2023", raw: bd.Raw | None = None) -> PanelParts:
    """Build ``be-2015-2023`` in memory."""
    if name not in PANEL_NAMES:
        raise ParameterError(f"unknown multi-year dataset {name!r}; this build makes {', '.join(PANEL_NAMES)}")
    raw = raw if raw is not None else bd.read_raw()
    codes = list(nuts_codes(2, "BE"))
    stocks, deaths, unk_years = _real_cubes(raw, codes)
    births, figures = _births(raw, codes, stocks)
    order, stocks = _with_country(codes, stocks)
    _, deaths = _with_country(codes, deaths)
    _, births = _with_country(codes, births)
    prov = _provenance(unk_years)
    panel = Panel(
        name,
        PANEL_YEARS,
        tuple(nuts_region(c) for c in order),
        bd.POP_AXIS,
        stocks,
        prov,
        deaths=deaths,
        births=births,
        birth_ages=bd.BIRTH_AXIS,
    )
    meta = {
        "name": name,
        "title": "Belgium, NUTS 2 regions and country, 2015-2023 (real population and deaths; several years)",
        "year": PANEL_YEARS[-1],
        "years": list(PANEL_YEARS),
        "label": LABEL,
        "implications": IMPLICATIONS,
        "calibration_year": None,
        "regions": len(order),
        "nuts2_regions": len(codes),
        "countries": ["BE"],
        "sexes": list(SEXES),
        "age_axis": "Y_LT1, Y1..Y99, Y_GE100 (Eurostat's Y_OPEN), UNK",
        "birth_age_axis": "Y_LT15, Y15..Y49, Y_GE50, UNK",
        "provenance": {k: bd._tp(v) for k, v in prov.tables.items()},
        "rules": {
            "sex_total": "T as published (it equals F + M in these tables)",
            "country_rows": bd.COUNTRY_RULE,
            "shared_stocks": "the population on 1 January of t + 1 is one published cell: year t's end stock and year "
            "t + 1's start stock",
            "births_outside_15_49": bd.BIRTH_RULE,
            "births_regions": bd.ALLOC_RULE.replace("2023", "year t").replace("2022", "year t (2023: 2022)"),
        },
        "fallbacks": {"deaths_unk_not_published": unk_years, "note": _unk_note(unk_years).lstrip("; ")},
        "fertility": {"years": figures},
        "seeds": {
            "root": bd.ROOT_SEED,
            "bit_generator": "PCG64",
            "streams": "births of 2023: be-2023's stream SeedSequence(root, spawn_key=(2, *b'BE')); other years "
            "SeedSequence(root, spawn_key=(2, *b'BE', year))",
        },
        "versions": bd._versions(),
        "inputs": {raw.files[k]: raw.sha256[raw.files[k]] for k in bd.INPUTS[name]},
        "build": "python -m demonoise_build",
    }
    return PanelParts(panel, meta)


def _same(a: Panel, b: Panel, what: str) -> None:
    same = (
        a.codes == b.codes
        and a.years == b.years
        and a.ages == b.ages
        and a.birth_ages == b.birth_ages
        and all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("stocks", "deaths", "births"))
    )
    if not same:
        raise DataError(f"{what} differs from the built panel", dataset=a.name)


def write_panel_dataset(parts: PanelParts, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write ``<name>.csv.gz`` (read back and checked), ``<name>.npz`` (from what was read back,
    read again and checked) and ``<name>.json``, by :func:`demonoise_build.build.write_files`."""
    panel = parts.panel
    return bd.write_files(
        panel,
        parts.meta,
        out_dir,
        write_csv=lambda path: write_panel_csv(panel, path, names=False, status=True, comment=bd._comment(parts.meta)),
        read_csv=lambda path: read_panel_csv(path, name=panel.name),
        write_npz=write_packed_panel,
        read_npz=read_packed_panel,
        same=_same,
        fmt=FORMAT_PANEL,
    )


def build_panel(name: str, out_dir=None, raw_dir=None, *, raw: bd.Raw | None = None) -> dict[str, Path]:
    """Build the multi-year dataset ``name`` and write its three files to ``out_dir``."""
    return write_panel_dataset(build_panel_parts(name, raw if raw is not None else bd.read_raw(raw_dir)), out_dir)
