r"""Build the embedded datasets ``be-2023`` and ``ess-2023`` from the raw Eurostat extracts.

This is a *build tool*, not part of the run-time I/O path: it imports the computation
modules that model what is not published (:mod:`demonoise_build.graduation`,
:mod:`demonoise_build.mortality_model`), which the run-time registry
(:mod:`demonoise.io.datasets`) never does. It reads only the filtered raw extracts
committed under ``data-raw/eurostat/`` and writes, per dataset,

* ``<name>.csv.gz`` -- the counts in the project's CSV template layout
  (``region,sex,age,year,measure,value,status``; read back with
  :func:`demonoise.io.template.read_counts_csv`, the reader users use), integer
  values, deterministic row order, gzip with ``mtime = 0``;
* ``<name>.json`` -- metadata: provenance per table, the label, the calibration
  year, the regions carrying each fallback, calibration targets and parameters,
  seeds, the versions of numpy / scipy / pandas / zlib used, and the sha256 of every
  input and output file.

Usage::

    python -m demonoise_build [--raw DIR] [--out DIR] [--check] [NAME ...]

``--check`` rebuilds into a temporary directory and compares sha256 with the
committed files (exit status 1 on a difference, 3 if the running numpy / scipy /
pandas versions differ from the recorded ones, so that a comparison would be
meaningless).

What is real and what is modelled
---------------------------------
``be-2023`` (11 Belgian NUTS 2 regions and the country)
    Population on 1 January 2023 and 2024 (demo_r_d2jan) and deaths 2023
    (demo_r_magec) by sex and single age as published (``Y_LT1 .. Y99``, the open
    group, ``UNK``; sex ``T`` as published, which equals ``F + M`` in these
    tables). Births 2023 by age of mother: the real national births (demo_fordagec)
    after the boundary rule below; their split among the regions is *modelled*
    (multinomial, female exposure).
``ess-2023`` (every NUTS 2 region, NUTS 2021 codes, with a 2023 population in
demo_r_pjangroup, except empty ones, and the country totals)
    * Population: the real 5-year groups graduated to single ages ``0..84`` with
      :func:`demonoise_build.graduation.graduate` (``method="mono"``: monotone Hyman
      spline of the cumulative; integers by largest remainder, every group total
      kept exactly); the open group ``Y_GE85`` split into ``85..99`` and ``100+``
      by :func:`demonoise_build.mortality_model.split_open_age` from the region's
      calibrated schedule (integers, summing back exactly); ``UNK`` as published
      (0 where not published). Belgian regions: real single ages (demo_r_d2jan).
    * Deaths: *modelled*. A Brass relational logit schedule per region and sex
      (:func:`~demonoise_build.mortality_model.calibrate_brass` on a Belgian 2015-2019
      standard, :func:`~demonoise_build.mortality_model.build_standard`) reproducing the
      region's published e0 and e65 (demo_r_mlifexp) of the calibration year;
      expected deaths ``m_x E_x`` with ``E_x = (P_x(2023) + P_x(2024)) / 2``; a
      seeded Poisson draw. Belgian regions keep their real deaths (demo_r_magec).
    * Births: *modelled*. The real national births of each age of mother
      (demo_fordagec, after the boundary rule) allocated to the country's regions
      by a seeded multinomial draw in proportion to their female exposure at that
      age.

Rules common to both
--------------------
* Sex ``T = F + M`` for population and deaths (in real publications ``T`` is a
  published cell of its own; here it is the sum).
* Country rows are the sums of their NUTS 2 regions in every table, so they are
  coherent with the regions (the real national figures may differ slightly).
* Births axis ``Y_LT15, Y15 .. Y49, Y_GE50, UNK``. demo_fordagec publishes
  ``Y15 .. Y49, UNK, TOTAL``: births outside 15-49 are ``TOTAL - UNK - sum`` and
  are split between ``Y_LT15`` and ``Y_GE50`` in proportion to the births at 15 and
  at 49 (largest remainder, ties to ``Y_LT15``; an even split if both are 0). The
  TFR then counts them at 15 and 49 (:mod:`demonoise.core.layout`), so the split only
  moves a few births between the two boundary rates.
* Regional allocation of births: cell ``j`` of the country goes to its regions by
  a multinomial draw with probabilities proportional to the female exposure
  ``W_r(x) = (P^F_{r,x}(2023) + P^F_{r,x}(2024)) / 2`` at that age (``Y_LT15``:
  exposure at 15, ``Y_GE50``: at 49, ``UNK``: summed over 15-49); the regional
  cells sum exactly to the national ones.

Fallbacks (all labelled in the JSON under ``fallbacks`` and in the table notes)
------------------------------------------------------------------------------
* Population on 1 January 2024 published only under NUTS 2024 codes: ``PT17 =
  PT1A + PT1B`` (exact correspondence). ``NL31, NL33`` (successors ``NL35,
  NL36``) and ``PT16, PT18`` (successors ``PT19, PT1C, PT1D``): the union of the
  old regions equals the union of the successors, so the successors' 2024 total
  of each sex and age group is apportioned to the old regions in proportion to
  their 2023 population (largest remainder). No 2024 population at all (``AL``,
  ``MK``): the 2023 stock is carried forward (``P(2024) = P(2023)``).
* Calibration targets: a region without published e0/e65 in the calibration year
  takes the nearest earlier year that has both; else the first later year,
  shifted by its country's change between the calibration year and that year.
* Births without usable data for 2023: a country with a 2023 ``TOTAL`` but absent
  single ages gets ``TOTAL - UNK - published`` spread over the absent ages and
  the births outside 15-49 in proportion to the latest year in which all of them
  were published; a country without 2023 data takes the latest year with complete
  data unchanged.

Reproducibility
---------------
One root :class:`numpy.random.SeedSequence` (:data:`ROOT_SEED`). The stream of a
step (deaths, births) for a country is
``SeedSequence(ROOT_SEED, spawn_key=(STEPS[step], *country.encode()))`` -- the
child that ``spawn`` would give at that key -- feeding ``PCG64``; so each country's
draws depend neither on the other countries nor on the order of the build. The
numpy, scipy and pandas versions are pinned (``constraints.txt``) and recorded.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy

from demonoise.core.atomic import atomic_write_text
from demonoise.core.counts import SEXES, AgeAxis, Counts, Provenance, TableProvenance, spread_unknown
from demonoise.core.errors import DataError, ParameterError
from demonoise.io.eurostat import read_eurostat
from demonoise.io.nuts import nuts_codes, nuts_region
from demonoise.io.template import write_counts_csv
from demonoise.io.tidy import table_to_array
from demonoise_build import graduation, mortality_model

__all__ = [
    "NAMES",
    "ROOT_SEED",
    "STEPS",
    "RAW_FILES",
    "DEFAULT_CALIBRATION_YEAR",
    "POP_AXIS",
    "BIRTH_AXIS",
    "Raw",
    "read_raw",
    "national_births",
    "mortality_targets",
    "belgian_standard",
    "Parts",
    "build_parts",
    "write_dataset",
    "build",
    "check",
    "default_raw_dir",
    "default_out_dir",
    "main",
]

#: Names of the datasets this module builds.
NAMES: tuple[str, ...] = ("be-2023", "ess-2023")
#: Root of every random stream (documented constant; changing it changes the data).
ROOT_SEED: int = 20230101
#: Step identifiers in the spawn key of the random streams.
STEPS: dict[str, int] = {"deaths": 1, "births": 2}
#: Calibration year of the modelled mortality (the last pre-pandemic year).
DEFAULT_CALIBRATION_YEAR: int = 2019
YEAR: int = 2023
#: Years of the Belgian standard schedule (pooled).
STANDARD_YEARS: tuple[int, ...] = (2015, 2016, 2017, 2018, 2019)

#: Raw inputs in ``data-raw/eurostat/`` (filtered copies; provenance in data-raw/README.md).
RAW_FILES: dict[str, tuple[str, str]] = {
    "pjangroup": ("demo_r_pjangroup_NUTS2_2023_2024.csv.gz", "demo_r_pjangroup"),
    "d2jan": ("demo_r_d2jan_BE_2015_2024.csv.gz", "demo_r_d2jan"),
    "magec": ("demo_r_magec_BE_2015_2019_2023.csv.gz", "demo_r_magec"),
    "fordagec": ("demo_fordagec_sdmx_2015_2023.csv.gz", "demo_fordagec"),
    "mlifexp": ("demo_r_mlifexp_Y_LT1_Y65_FM_1990_2021.tsv.gz", "demo_r_mlifexp"),
}

#: Eurostat's NUTS 2 single-age layout: Y_LT1, Y1..Y99, the open 100+ (Y_OPEN), UNK.
POP_AXIS = AgeAxis.single(99)
#: 5-year groups of demo_r_pjangroup used: Y_LT5, Y5-9, ..., Y80-84, Y_GE85 (UNK apart).
GROUP_AXIS = AgeAxis.five_year(85, unknown=False)
#: Births by age of mother: Y_LT15, Y15..Y49, Y_GE50, UNK (the layout of demo_r_fagec).
BIRTH_AXIS = AgeAxis.from_labels(["Y_LT15"] + [f"Y{a}" for a in range(15, 50)] + ["Y_GE50", "UNK"])

#: 2024 population published only under NUTS 2024 codes: exact correspondences ...
EXACT_2024: dict[str, tuple[str, ...]] = {"PT17": ("PT1A", "PT1B")}
#: ... and unions of NUTS 2021 regions equal to unions of NUTS 2024 successors.
UNIONS_2024: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("NL31", "NL33"), ("NL35", "NL36")),
    (("PT16", "PT18"), ("PT19", "PT1C", "PT1D")),
)

LABEL_ESS = "demonstration data: population real (Eurostat), deaths and births modelled (calibration year {year})"
LABEL_BE = "population and deaths real (Eurostat); regional births modelled from national births (demo_fordagec)"

_N_SINGLE = 85  # graduated single ages 0..84
_OPEN = 85


# ----------------------------------------------------------------------------- raw inputs
def default_raw_dir() -> Path:
    """``data-raw/eurostat`` of the source tree (the build runs from a checkout)."""
    return Path(__file__).resolve().parents[2] / "data-raw" / "eurostat"


def default_out_dir() -> Path:
    """``lib/demonoise/data/datasets`` of the source tree."""
    return Path(__file__).resolve().parents[1] / "demonoise" / "data" / "datasets"


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class Raw:
    """The raw extracts as tidy tables (:func:`demonoise.io.eurostat.read_eurostat`) and
    the sha256 of each file."""

    tables: dict[str, pd.DataFrame]
    sha256: dict[str, str]
    files: dict[str, str]


def read_raw(raw_dir: str | Path | None = None) -> Raw:
    """Read the raw extracts of :data:`RAW_FILES` from ``raw_dir`` (default
    :func:`default_raw_dir`). Raises :class:`~demonoise.core.errors.DataError` naming a
    missing file."""
    raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    tables, sha, files = {}, {}, {}
    for key, (fname, code) in RAW_FILES.items():
        path = raw_dir / fname
        if not path.is_file():
            raise DataError("raw extract not found (see data-raw/README.md)", file=str(path), dataset=code)
        tables[key] = read_eurostat(path, dataset=code)
        sha[fname] = _sha256(path)
        files[key] = fname
    return Raw(tables, sha, files)


# ----------------------------------------------------------------------------- helpers
def _apportion(totals, weights) -> np.ndarray:
    """Integers ``n_k`` with ``sum_k n_k = total`` and ``n_k ~ total w_k / sum w``
    (largest remainder, ties to the first; an even split where all weights are 0).

    ``totals`` (...,), ``weights`` (..., K) -> int64 (..., K).
    """
    w = np.asarray(weights, dtype=float)
    T = np.asarray(totals, dtype=float)
    return graduation.to_integers(w, T[..., None], width=w.shape[-1])


def _stream(step: str, country: str) -> np.random.Generator:
    """The random stream of ``step`` for ``country`` (see the module notes)."""
    key = (STEPS[step], *country.encode("ascii"))
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(ROOT_SEED, spawn_key=key)))


def _versions() -> dict[str, str]:
    return {
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
    }


#: Packages whose versions decide the numbers (zlib only decides the gzip bytes).
PINNED = ("numpy", "scipy", "pandas")


# ----------------------------------------------------------------------------- population
def _regions_2023(pj: pd.DataFrame) -> tuple[list[str], list[str]]:
    """NUTS 2021 level-2 codes with a positive 2023 population (classification order),
    and the codes left out because their population is 0."""
    tot = pj[(pj["time"] == YEAR) & (pj["age"] == "TOTAL") & (pj["sex"] == "T")].set_index("geo")["value"]
    keep, empty = [], []
    for code in nuts_codes(2):
        if code in tot.index and np.isfinite(tot[code]):
            (keep if tot[code] > 0 else empty).append(code)
    return keep, empty


def _group_cube(pj: pd.DataFrame, codes: Sequence[str], year: int) -> tuple[np.ndarray, list[str]]:
    """demo_r_pjangroup cells (R, 3, 19): ``Y_LT5 .. Y80-84, Y_GE85, UNK`` by sex F, M, T.

    ``UNK`` is 0 where the table has no ``UNK`` row (returned list). Every ``TOTAL``
    is checked against the sum of the cells (raises :class:`DataError`).
    """
    df = pj[pj["geo"].isin(codes) & (pj["time"] == year)]
    known = table_to_array(df, measure="population", regions=codes, sexes=SEXES, ages=GROUP_AXIS, year=year)
    unk_rows = df[df["age"] == "UNK"]
    unk = np.zeros(known.shape[:2], dtype=np.int64)
    gi = pd.Index(codes).get_indexer(unk_rows["geo"])
    si = pd.Index(SEXES).get_indexer(unk_rows["sex"])
    vals = unk_rows["value"].to_numpy(dtype=float)
    if np.any(~np.isfinite(vals)) or np.any(vals < 0):
        raise DataError(
            "missing or negative UNK population", file=df.attrs.get("file"), measure="population", age="UNK", year=year
        )
    unk[gi, si] = vals.astype(np.int64)
    no_unk = sorted(set(codes) - set(unk_rows["geo"]))
    cube = np.concatenate([known, unk[..., None]], axis=-1)
    tot = df[df["age"] == "TOTAL"]
    t = np.full(known.shape[:2], -1.0)
    t[pd.Index(codes).get_indexer(tot["geo"]), pd.Index(SEXES).get_indexer(tot["sex"])] = tot["value"].to_numpy(
        dtype=float
    )
    bad = (t >= 0) & (t != cube.sum(-1))
    if bad.any():
        r, s = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"TOTAL {t[r, s]:g} differs from the sum of the age groups {cube[r, s].sum()}",
            file=df.attrs.get("file"),
            measure="population",
            region=codes[r],
            sex=SEXES[s],
            year=year,
        )
    return cube, no_unk


def _population_groups(pj: pd.DataFrame, codes: list[str]) -> tuple[np.ndarray, np.ndarray, dict]:
    """5-year groups of 2023 and 2024 (each (R, 3, 19)), with the 2024 fallbacks."""
    p23, no_unk = _group_cube(pj, codes, YEAR)
    have24 = set(pj.loc[(pj["time"] == YEAR + 1) & (pj["age"] == "TOTAL") & pj["value"].notna(), "geo"])
    direct = [c for c in codes if c in have24]
    p24 = np.zeros_like(p23)
    idx = {c: i for i, c in enumerate(codes)}
    d24, no_unk24 = _group_cube(pj, direct, YEAR + 1)
    p24[[idx[c] for c in direct]] = d24
    fb: dict = {
        "exact": {},
        "apportioned": {},
        "carried_forward": [],
        "unk_not_published": sorted(set(no_unk) | (set(no_unk24) & set(codes))),
    }
    missing = [c for c in codes if c not in have24]
    for old, new in EXACT_2024.items():
        if old in missing:
            p24[idx[old]] = _group_cube(pj, list(new), YEAR + 1)[0].sum(axis=0)
            fb["exact"][old] = list(new)
            missing.remove(old)
    for olds, news in UNIONS_2024:
        olds_here = [c for c in olds if c in missing]
        if not olds_here:
            continue
        if len(olds_here) != len(olds):
            raise DataError(
                "only part of a NUTS 2021 union lacks 2024 population", region=",".join(olds_here), year=YEAR + 1
            )
        u24 = _group_cube(pj, list(news), YEAR + 1)[0].sum(axis=0)  # (3, 19)
        w = p23[[idx[c] for c in olds]][:, :2]  # F, M: (k, 2, 19)
        alloc = _apportion(u24[:2], np.moveaxis(w, 0, -1))  # (2, 19, k)
        for j, c in enumerate(olds):
            p24[idx[c], :2] = alloc[..., j]
            p24[idx[c], 2] = alloc[..., j].sum(axis=0)
            fb["apportioned"][c] = list(news)
            missing.remove(c)
    for c in missing:
        p24[idx[c]] = p23[idx[c]]
        fb["carried_forward"].append(c)
    return p23, p24, fb


# ----------------------------------------------------------------------------- Belgium (real)
def _be_cube(df: pd.DataFrame, codes, year: int, *, measure: str) -> np.ndarray:
    """Real Belgian single ages on :data:`POP_AXIS`, (R, 3, 102)."""
    return table_to_array(df, measure=measure, regions=codes, sexes=SEXES, ages=POP_AXIS, year=year)


def _be_real(raw: Raw, codes: Sequence[str]) -> dict[str, np.ndarray]:
    d2, mg = raw.tables["d2jan"], raw.tables["magec"]
    out = {
        "pop_start": _be_cube(d2, codes, YEAR, measure="population"),
        "pop_end": _be_cube(d2, codes, YEAR + 1, measure="population"),
        "deaths": _be_cube(mg, codes, YEAR, measure="deaths"),
    }
    for k, v in out.items():
        if np.any(v[:, 2] != v[:, 0] + v[:, 1]):
            r, a = (int(i) for i in np.argwhere(v[:, 2] != v[:, 0] + v[:, 1])[0])
            raise DataError("published T differs from F + M", measure=k, region=codes[r], age=POP_AXIS.labels[a])
    return out


def belgian_standard(raw: Raw) -> mortality_model.Standard:
    """The Brass standard: Belgium (sum of its 11 NUTS 2 regions), 2015-2019 pooled.

    Deaths ``D_x = sum_t D_x(t)`` (demo_r_magec) and exposure
    ``E_x = sum_t (P_x(t) + P_x(t+1)) / 2`` (demo_r_d2jan), ``UNK`` spread in
    proportion (deaths of unknown age are not published for these years: 0), then
    :func:`demonoise_build.mortality_model.build_standard`.
    """
    codes = list(nuts_codes(2, "BE"))
    known = POP_AXIS.without_unknown()
    d2, mg = raw.tables["d2jan"], raw.tables["magec"]

    def cube(df, year, measure):
        sub = df[df["geo"].isin(codes) & df["sex"].isin(["F", "M"])]
        a = table_to_array(sub, measure=measure, regions=codes, sexes=("F", "M"), ages=known, year=year).sum(axis=0)
        u = sub[(sub["time"] == year) & (sub["age"] == "UNK")].groupby("sex")["value"].sum(min_count=1)
        unk = np.array([u.get(s, np.nan) for s in ("F", "M")], dtype=float)
        unk = np.where(np.isfinite(unk), unk, 0.0)
        return spread_unknown(np.concatenate([a, unk[:, None]], axis=-1), POP_AXIS)

    D = sum(cube(mg, y, "deaths") for y in STANDARD_YEARS)
    P = {y: cube(d2, y, "population") for y in (*STANDARD_YEARS, STANDARD_YEARS[-1] + 1)}
    E = sum((P[y] + P[y + 1]) / 2.0 for y in STANDARD_YEARS)
    note = (
        "Belgium (sum of its NUTS 2 regions), deaths and exposure pooled "
        f"{STANDARD_YEARS[0]}-{STANDARD_YEARS[-1]} (demo_r_magec, demo_r_d2jan)"
    )
    return mortality_model.build_standard(D, E, note=note)


# ----------------------------------------------------------------------------- mortality targets
def mortality_targets(mlifexp: pd.DataFrame, codes: Sequence[str], year: int = DEFAULT_CALIBRATION_YEAR):
    """Calibration targets e0, e65 per region and sex (F, M) from demo_r_mlifexp.

    Rule: the value of ``year`` if e0 and e65 are both published; else the nearest
    earlier year with both; else the first later year with both, shifted by the
    country's change between ``year`` and that year
    (``e_r(y) - (e_c(y) - e_c(year))``).

    Returns
    -------
    e0, e65 : ndarray (R, 2)
    source : dict
        ``{"nearest_year": {code: year}, "shifted": {code: year}}`` (per region; the
        same rule decides both sexes, each sex independently -- the dict keeps the
        year per region and sex as ``"F:2017"``-style strings when they differ).
    """
    df = mlifexp[mlifexp["sex"].isin(["F", "M"]) & mlifexp["age"].isin(["Y_LT1", "Y65"])]
    piv = df.pivot_table(index=["geo", "sex", "time"], columns="age", values="value", aggfunc="first")
    piv = piv.dropna()
    e = np.full((len(codes), 2, 2), np.nan)
    used: dict[str, dict[str, list]] = {"nearest_year": {}, "shifted": {}}

    def get(geo, sex, y):
        try:
            row = piv.loc[(geo, sex, y)]
        except KeyError:
            return None
        return np.array([row["Y_LT1"], row["Y65"]], dtype=float)

    for i, code in enumerate(codes):
        for s, sex in enumerate(("F", "M")):
            v = get(code, sex, year)
            if v is None:
                try:
                    yrs = piv.loc[(code, sex)].index.to_numpy()
                except KeyError:
                    yrs = np.array([], dtype=int)
                earlier = yrs[yrs < year]
                later = yrs[yrs > year]
                if earlier.size:
                    y = int(earlier.max())
                    v = get(code, sex, y)
                    used["nearest_year"].setdefault(code, []).append(f"{sex}:{y}")
                elif later.size:
                    y = int(later.min())
                    c0, c1 = get(code[:2], sex, year), get(code[:2], sex, y)
                    if c0 is None or c1 is None:
                        raise ParameterError(
                            f"no e0/e65 for {code} {sex} in {year}, and its country lacks {year} or {y} to shift the "
                            f"{y} value"
                        )
                    v = get(code, sex, y) - (c1 - c0)
                    used["shifted"].setdefault(code, []).append(f"{sex}:{y}")
                else:
                    raise ParameterError(f"no published e0/e65 (demo_r_mlifexp) for region {code}, sex {sex}")
            e[i, s] = v
    return e[..., 0], e[..., 1], used


# ----------------------------------------------------------------------------- births
def national_births(fordagec: pd.DataFrame, countries: Sequence[str], year: int = YEAR):
    """National births by age of mother on :data:`BIRTH_AXIS`, (C, 38) int, and fallbacks.

    The rule (module notes): ``Y15..Y49`` and ``UNK`` as published; births outside
    15-49 ``= TOTAL - UNK - sum(Y15..Y49)`` split between ``Y_LT15`` and ``Y_GE50``
    in proportion to the births at 15 and at 49. Fallbacks: absent single ages of a
    country with a ``TOTAL`` get ``TOTAL - UNK - published`` in proportion to the
    latest year in which all of them were published; a country with no ``TOTAL``
    for ``year`` takes the latest complete year unchanged.
    """
    fb = fordagec
    if "ord_brth" in fb.columns:
        fb = fb[fb["ord_brth"] == "TOTAL"]
    inner = [f"Y{a}" for a in range(15, 50)]
    out = np.zeros((len(countries), BIRTH_AXIS.size), dtype=np.int64)
    used: dict = {"latest_year": {}, "missing_ages": {}}
    file = fb.attrs.get("file")

    def series(geo, y):
        s = fb[(fb["geo"] == geo) & (fb["time"] == y)].set_index("age")["value"]
        return s[s.notna()]

    def complete(s):
        return "TOTAL" in s.index and "UNK" in s.index and all(a in s.index for a in inner)

    for i, c in enumerate(countries):
        s = series(c, year)
        if "TOTAL" not in s.index:
            years = sorted(set(fb.loc[fb["geo"] == c, "time"]), reverse=True)
            ok = [y for y in years if y < year and complete(series(c, y))]
            if not ok:
                raise DataError(
                    "no births by age of mother for this country",
                    file=file,
                    dataset="demo_fordagec",
                    region=c,
                    year=year,
                )
            used["latest_year"][c] = int(ok[0])
            s = series(c, ok[0])
        cells = np.array([s.get(a, np.nan) for a in inner], dtype=float)
        unk = float(s.get("UNK", 0.0))
        total = float(s["TOTAL"])
        absent = ~np.isfinite(cells)
        rest = total - unk - np.nansum(cells)
        if rest < 0:
            raise DataError(
                f"TOTAL {total:g} is below UNK + the single ages ({unk + np.nansum(cells):g})",
                file=file,
                dataset="demo_fordagec",
                region=c,
                year=year,
            )
        if absent.any():
            years = sorted(set(fb.loc[fb["geo"] == c, "time"]), reverse=True)
            ref = next((y for y in years if y < year and complete(series(c, y))), None)
            if ref is None:
                raise DataError(
                    "absent single ages and no complete earlier year to fill them",
                    file=file,
                    dataset="demo_fordagec",
                    region=c,
                    year=year,
                )
            r = series(c, ref)
            rc = np.array([r[a] for a in inner], dtype=float)
            r_out = float(r["TOTAL"] - r["UNK"] - rc.sum())
            w = np.concatenate([np.where(absent, rc, 0.0), [max(r_out, 0.0)]])
            fill = _apportion(np.array(rest), w)
            cells = np.where(absent, fill[:-1], cells)
            rest = float(fill[-1])
            used["missing_ages"][c] = {
                "ages": [a for a, m in zip(inner, absent, strict=True) if m],
                "reference_year": int(ref),
            }
        lt15, ge50 = _apportion(np.array(rest), np.array([cells[0], cells[-1]]))
        out[i] = np.concatenate([[lt15], cells, [ge50, unk]]).astype(np.int64)
    return out, used


def _birth_weights(W: np.ndarray) -> np.ndarray:
    """Female exposure per birth cell: (R, A_known) -> (R, 38) (see the module notes)."""
    w15_49 = W[:, 15:50]
    return np.concatenate([W[:, 15:16], w15_49, W[:, 49:50], w15_49.sum(axis=1, keepdims=True)], axis=1)


def _allocate_births(nat: np.ndarray, W: np.ndarray, country: str) -> np.ndarray:
    """Multinomial allocation of one country's births (38,) to its regions, W (R, A)."""
    w = _birth_weights(W)  # (R, 38)
    tot = w.sum(axis=0)
    if np.any(tot <= 0):
        j = int(np.argwhere(tot <= 0)[0][0])
        raise DataError(
            "no female exposure at this age of mother", region=country, age=BIRTH_AXIS.labels[j], measure="births"
        )
    p = (w / tot).T  # (38, R)
    return _stream("births", country).multinomial(nat, p).T.astype(np.int64)  # (R, 38)


# ----------------------------------------------------------------------------- assembly
@dataclass
class Parts:
    """Everything one build produces, intermediates included (tests use them)."""

    counts: Counts
    meta: dict
    codes: list[str] = field(default_factory=list)  # NUTS 2 codes, region order of the arrays below
    modelled: np.ndarray | None = None  # bool (R2,): deaths modelled
    expected_deaths: np.ndarray | None = None  # (R2, 2, 102) F, M
    targets: np.ndarray | None = None  # (R2, 2, 2): e0, e65 (nan for real-deaths regions)
    groups: tuple[np.ndarray, np.ndarray] | None = None  # 5-year groups 2023, 2024 (R2, 3, 19), after fallbacks
    national_births: np.ndarray | None = None  # (C, 38)
    countries: list[str] = field(default_factory=list)


def _with_countries(codes: list[str], arrays: dict[str, np.ndarray]):
    """Insert a country row (sum of its regions) before each country's regions."""
    countries = list(dict.fromkeys(c[:2] for c in codes))
    order, rows = [], {k: [] for k in arrays}
    for cc in countries:
        idx = [i for i, c in enumerate(codes) if c[:2] == cc]
        order += [cc] + [codes[i] for i in idx]
        for k, a in arrays.items():
            rows[k].append(a[idx].sum(axis=0, keepdims=True))
            rows[k].append(a[idx])
    return order, {k: np.concatenate(v, axis=0) for k, v in rows.items()}, countries


def _tp(d: TableProvenance) -> dict:
    return {
        "status": d.status,
        "datasets": list(d.datasets),
        "extracted": d.extracted,
        "source": d.source,
        "note": d.note,
    }


def build_parts(name: str, raw: Raw | None = None, *, calibration_year: int = DEFAULT_CALIBRATION_YEAR) -> Parts:
    """Build one dataset in memory (no files written).

    Parameters
    ----------
    name : {"be-2023", "ess-2023"}
    raw : Raw, optional
        The raw extracts (:func:`read_raw`); read from :func:`default_raw_dir` if omitted.
    calibration_year : int
        Year of the published e0/e65 the modelled mortality is calibrated to (ess-2023).
    """
    if name not in NAMES:
        raise ParameterError(f"unknown dataset {name!r}; this build makes {', '.join(NAMES)}")
    raw = raw if raw is not None else read_raw()
    be_codes = list(nuts_codes(2, "BE"))
    if name == "be-2023":
        codes = be_codes
        modelled = np.zeros(len(codes), bool)
    else:
        codes, empty = _regions_2023(raw.tables["pjangroup"])
        modelled = np.array([c[:2] != "BE" for c in codes])
    R = len(codes)
    A = POP_AXIS.size
    pop = {"pop_start": np.zeros((R, 3, A), np.int64), "pop_end": np.zeros((R, 3, A), np.int64)}
    deaths = np.zeros((R, 3, A), np.int64)
    expected = np.full((R, 2, A), np.nan)
    targets = np.full((R, 2, 2), np.nan)
    fallbacks: dict = {}
    meta_cal: dict = {}
    groups = None

    # --- Belgian regions: real
    be_idx = [i for i, c in enumerate(codes) if c[:2] == "BE"]
    be = _be_real(raw, [codes[i] for i in be_idx])
    for k in ("pop_start", "pop_end"):
        pop[k][be_idx] = be[k]
    deaths[be_idx] = be["deaths"]

    # --- other regions: graduated population, modelled deaths
    if modelled.any():
        mi = np.flatnonzero(modelled)
        mcodes = [codes[i] for i in mi]
        p23, p24, fb_pop = _population_groups(raw.tables["pjangroup"], codes)
        groups = (p23, p24)
        fallbacks["population_2024_exact"] = fb_pop["exact"]
        fallbacks["population_2024_apportioned"] = fb_pop["apportioned"]
        fallbacks["population_2024_carried_forward"] = fb_pop["carried_forward"]
        fallbacks["population_unk_not_published"] = fb_pop["unk_not_published"]
        fallbacks["excluded_empty_regions"] = empty
        std = belgian_standard(raw)
        e0, e65, used = mortality_targets(raw.tables["mlifexp"], mcodes, calibration_year)
        fallbacks["mortality_target_nearest_year"] = used["nearest_year"]
        fallbacks["mortality_target_shifted"] = used["shifted"]
        alpha, beta = mortality_model.calibrate_brass(std, e0, e65, regions=mcodes, sexes=("F", "M"))
        m = mortality_model.brass_rates(std, alpha, beta)  # (Rm, 2, 101)
        lower = np.arange(0, 90, 5)
        for key, g in (("pop_start", p23), ("pop_end", p24)):
            gr = graduation.graduate(g[mi, :2, :18], lower, method="mono", open_last=True, integer=True)  # (Rm, 2, 86)
            old = mortality_model.split_open_age(gr[..., -1], m)  # (Rm, 2, 16)
            single = np.concatenate([gr[..., :_N_SINGLE], old, g[mi, :2, 18:19]], axis=-1)  # + UNK
            pop[key][mi, :2] = single
        E = (
            spread_unknown(pop["pop_start"][mi, :2], POP_AXIS) + spread_unknown(pop["pop_end"][mi, :2], POP_AXIS)
        ) / 2.0
        exp_d = mortality_model.expected_deaths(m, E)  # (Rm, 2, 101)
        expected[mi, :, :-1] = exp_d
        expected[mi, :, -1] = 0.0
        targets[mi, :, 0], targets[mi, :, 1] = e0, e65
        drawn = np.zeros(exp_d.shape, np.int64)
        for cc in dict.fromkeys(c[:2] for c in mcodes):
            rows = [j for j, c in enumerate(mcodes) if c[:2] == cc]
            drawn[rows] = mortality_model.draw_deaths(exp_d[rows], _stream("deaths", cc))
        deaths[mi, :2, :-1] = drawn
        std_note = std.note
        meta_cal = {
            "year": calibration_year,
            "standard": std_note,
            "model": "Brass relational logit Y_x = alpha + beta Y^s_x (logit with factor 1/2), "
            "calibrated per region and sex "
            "so that the project's life table (ages 0..84, 85+; Eurostat's method) of the model rates gives the target "
            "e0 and e65",
            "targets": {
                c: {s: [round(float(e0[j, k]), 4), round(float(e65[j, k]), 4)] for k, s in enumerate(("F", "M"))}
                for j, c in enumerate(mcodes)
            },
            "alpha_beta": {
                c: {s: [round(float(alpha[j, k]), 6), round(float(beta[j, k]), 6)] for k, s in enumerate(("F", "M"))}
                for j, c in enumerate(mcodes)
            },
        }
    for k in ("pop_start", "pop_end"):
        pop[k][:, 2] = pop[k][:, 0] + pop[k][:, 1]
    deaths[:, 2] = deaths[:, 0] + deaths[:, 1]

    # --- births
    countries = list(dict.fromkeys(c[:2] for c in codes))
    nat, used_b = national_births(raw.tables["fordagec"], countries)
    fallbacks["births_latest_year"] = used_b["latest_year"]
    fallbacks["births_missing_ages"] = used_b["missing_ages"]
    W = (spread_unknown(pop["pop_start"][:, 0], POP_AXIS) + spread_unknown(pop["pop_end"][:, 0], POP_AXIS)) / 2.0
    births = np.zeros((R, BIRTH_AXIS.size), np.int64)
    for ci, cc in enumerate(countries):
        rows = [i for i, c in enumerate(codes) if c[:2] == cc]
        births[rows] = _allocate_births(nat[ci], W[rows], cc)

    order, arr, _ = _with_countries(codes, {**pop, "deaths": deaths, "births": births})
    regions = tuple(nuts_region(c) for c in order)
    meta, prov = _metadata(name, raw, codes, countries, fallbacks, meta_cal, calibration_year)
    counts = Counts(
        name,
        YEAR,
        regions,
        POP_AXIS,
        arr["pop_start"],
        arr["pop_end"],
        prov,
        deaths=arr["deaths"],
        births=arr["births"],
        birth_ages=BIRTH_AXIS,
    )
    return Parts(counts, meta, codes, modelled, expected, targets, groups, nat, countries)


def _fallback_note(fb: dict) -> dict[str, str]:
    """Human-readable fallback sentences per table."""
    pop, dea, bir = [], [], []
    if fb.get("population_2024_exact"):
        pop.append(
            "1 January 2024 population published under NUTS 2024 codes only: "
            + "; ".join(f"{k} = {' + '.join(v)}" for k, v in fb["population_2024_exact"].items())
            + " (exact)"
        )
    if fb.get("population_2024_apportioned"):
        groups: dict = {}
        for k, v in fb["population_2024_apportioned"].items():
            groups.setdefault(tuple(v), []).append(k)
        pop.append(
            "1 January 2024 population apportioned from the NUTS 2024 successors (their total of each sex and age "
            "group, "
            "shared in proportion to the 2023 population): "
            + "; ".join(f"{' + '.join(o)} from {' + '.join(n)}" for n, o in groups.items())
        )
    if fb.get("population_2024_carried_forward"):
        pop.append(
            "no 2024 population published: 2023 stock carried forward for "
            + ", ".join(fb["population_2024_carried_forward"])
        )
    if fb.get("population_unk_not_published"):
        pop.append("UNK not published (set to 0) for " + ", ".join(fb["population_unk_not_published"]))
    if fb.get("excluded_empty_regions"):
        pop.append("regions with zero population left out: " + ", ".join(fb["excluded_empty_regions"]))
    if fb.get("mortality_target_nearest_year"):
        dea.append(
            "e0/e65 target from the nearest earlier year: "
            + ", ".join(f"{k} ({'/'.join(v)})" for k, v in fb["mortality_target_nearest_year"].items())
        )
    if fb.get("mortality_target_shifted"):
        dea.append(
            "e0/e65 target = later regional value shifted by the country's change since the calibration year: "
            + ", ".join(f"{k} ({'/'.join(v)})" for k, v in fb["mortality_target_shifted"].items())
        )
    if fb.get("births_latest_year"):
        bir.append(
            "no 2023 births by age of mother: latest complete year used unchanged for "
            + ", ".join(f"{k} ({v})" for k, v in fb["births_latest_year"].items())
        )
    if fb.get("births_missing_ages"):
        bir.append(
            "absent single ages filled (TOTAL - UNK - published, in proportion to the reference year) for "
            + "; ".join(
                f"{k}: {', '.join(v['ages'])} (reference {v['reference_year']})"
                for k, v in fb["births_missing_ages"].items()
            )
        )
    return {"population": "; ".join(pop), "deaths": "; ".join(dea), "births": "; ".join(bir)}


BIRTH_RULE = (
    "births outside 15-49 = TOTAL - UNK - sum(Y15..Y49), split between Y_LT15 and Y_GE50 in proportion to the births "
    "at 15 and at 49 (the TFR counts them at 15 and 49)"
)
ALLOC_RULE = (
    "each national cell allocated to the country's NUTS 2 regions by a seeded multinomial draw in proportion to the "
    "female exposure (P(2023) + P(2024)) / 2 at that age (Y_LT15: at 15; Y_GE50: at 49; UNK: 15-49)"
)
COUNTRY_RULE = "country rows are the sums of their NUTS 2 regions (coherent with the regions)"
T_RULE = "T = F + M (in real publications T is a published cell of its own)"


def _metadata(name, raw, codes, countries, fallbacks, cal, calibration_year):
    notes = _fallback_note(fallbacks)
    ext = "unknown"
    if name == "be-2023":
        label = LABEL_BE
        title = "Belgium, NUTS 2 regions and country, 2023 (real population and deaths)"
        p = TableProvenance(
            "real",
            ("demo_r_d2jan",),
            ext,
            "Eurostat",
            "population on 1 January 2023 and 2024 by sex and single age as published (Y_LT1..Y99, Y_OPEN as Y_GE100, "
            "UNK); "
            f"published T equals F + M; {COUNTRY_RULE}",
        )
        d = TableProvenance(
            "real",
            ("demo_r_magec",),
            ext,
            "Eurostat",
            f"deaths 2023 by sex and single age as published; published T equals F + M; {COUNTRY_RULE}",
        )
        b = TableProvenance(
            "modelled",
            ("demo_fordagec", "demo_r_d2jan"),
            ext,
            "Eurostat",
            f"national births 2023 by single age of mother real (demo_fordagec); {BIRTH_RULE}; regional births "
            "modelled: "
            f"{ALLOC_RULE}; the country row is the national figure",
        )
        used = [raw.files[k] for k in ("d2jan", "magec", "fordagec")]
    else:
        label = LABEL_ESS.format(year=calibration_year)
        title = (
            f"Europe-wide demonstration set: {len(codes)} NUTS 2 regions (NUTS 2021) "
            f"and {len(countries)} countries, 2023"
        )
        p = TableProvenance(
            "real",
            ("demo_r_pjangroup", "demo_r_d2jan"),
            ext,
            "Eurostat",
            "real 5-year groups (demo_r_pjangroup, NUTS 2021 codes) graduated to single ages 0-84 (monotone Hyman "
            "spline of the "
            "cumulative, integers by largest remainder; every group total kept exactly); Y_GE85 split into 85-99 and "
            "100+ "
            "in proportion to the stationary population of the region's calibrated mortality schedule (sums back "
            "exactly); "
            f"Belgian regions: real single ages (demo_r_d2jan); {T_RULE}; {COUNTRY_RULE}"
            + (f"; fallbacks: {notes['population']}" if notes["population"] else ""),
        )
        d = TableProvenance(
            "modelled",
            ("demo_r_mlifexp", "demo_r_magec", "demo_r_d2jan"),
            ext,
            "Eurostat",
            f"expected deaths m_x E_x from a Brass relational logit schedule per region and sex on a Belgian standard "
            f"({STANDARD_YEARS[0]}-{STANDARD_YEARS[-1]}), calibrated to the region's published e0 and e65 of "
            f"{calibration_year} "
            f"(demo_r_mlifexp), then a seeded Poisson draw; Belgian regions: real deaths (demo_r_magec); {T_RULE}; "
            f"{COUNTRY_RULE}" + (f"; fallbacks: {notes['deaths']}" if notes["deaths"] else ""),
        )
        b = TableProvenance(
            "modelled",
            ("demo_fordagec", "demo_r_pjangroup", "demo_r_d2jan"),
            ext,
            "Eurostat",
            f"national births 2023 by single age of mother real (demo_fordagec); {BIRTH_RULE}; {ALLOC_RULE}; "
            f"{COUNTRY_RULE}" + (f"; fallbacks: {notes['births']}" if notes["births"] else ""),
        )
        used = [raw.files[k] for k in RAW_FILES]
    prov = Provenance(population=p, deaths=d, births=b, label=label)
    meta = {
        "name": name,
        "title": title,
        "year": YEAR,
        "label": label,
        "calibration_year": calibration_year if name == "ess-2023" else None,
        "regions": len(codes) + len(countries),
        "nuts2_regions": len(codes),
        "countries": countries,
        "age_axis": "Y_LT1, Y1..Y99, Y_GE100 (Eurostat's Y_OPEN), UNK",
        "birth_age_axis": "Y_LT15, Y15..Y49, Y_GE50, UNK",
        "provenance": {"population": _tp(p), "deaths": _tp(d), "births": _tp(b)},
        "rules": {
            "sex_total": T_RULE if name == "ess-2023" else "T as published (it equals F + M in these tables)",
            "country_rows": COUNTRY_RULE,
            "births_outside_15_49": BIRTH_RULE,
            "births_regions": ALLOC_RULE,
        },
        "fallbacks": {**fallbacks, "note": "; ".join(v for v in notes.values() if v)},
        "calibration": cal or None,
        "seeds": {
            "root": ROOT_SEED,
            "bit_generator": "PCG64",
            "streams": "SeedSequence(root, spawn_key=(step, *country_code_ascii)) per step and country",
            "steps": STEPS,
        },
        "versions": _versions(),
        "inputs": {f: raw.sha256[f] for f in used},
        "build": "python -m demonoise_build",
    }
    return meta, prov


def _comment(meta: dict) -> str:
    return (
        f"demonoise embedded dataset {meta['name']}: {meta['title']}\n"
        f"{meta['label']}\n"
        "Source: Eurostat "
        f"({', '.join(dict.fromkeys(d for t in meta['provenance'].values() for d in t['datasets']))}); "
        f"provenance, fallbacks, seeds and versions in {meta['name']}.json\n"
        "Rebuild: python -m demonoise_build. Columns: region,sex,age,year,measure,value,status (docs/csv_template.md)"
    )


def build(
    name: str,
    out_dir: str | Path | None = None,
    raw_dir: str | Path | None = None,
    *,
    calibration_year: int = DEFAULT_CALIBRATION_YEAR,
    raw: Raw | None = None,
) -> dict[str, Path]:
    """Build dataset ``name`` and write ``<name>.csv.gz`` and ``<name>.json`` to ``out_dir``.

    Parameters
    ----------
    name : {"be-2023", "ess-2023"}
    out_dir : path, optional
        Default :func:`default_out_dir` (the package's ``data/datasets``).
    raw_dir : path, optional
        Default :func:`default_raw_dir` (``data-raw/eurostat``).
    calibration_year : int
        Calibration year of the modelled mortality (ess-2023; default 2019).
    raw : Raw, optional
        Already read raw extracts (saves reading them twice when building both).

    Returns
    -------
    dict
        ``{"csv": path, "json": path}``.
    """
    parts = build_parts(name, raw if raw is not None else read_raw(raw_dir), calibration_year=calibration_year)
    return write_dataset(parts, out_dir)


def write_dataset(parts: Parts, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write a built dataset (:func:`build_parts`) as ``<name>.csv.gz`` and ``<name>.json``.

    The CSV is :func:`demonoise.io.template.write_counts_csv` (no region names --
    :mod:`demonoise.io.nuts` supplies them on reading -- and the ``status`` column),
    integer values, rows in the order of :meth:`~demonoise.core.counts.Counts.to_frame`,
    gzip level 9 with ``mtime = 0``. The JSON records the sha256 of the gzip file and
    of its content.
    """
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    name = parts.counts.name
    meta = dict(parts.meta)
    csv_path = out_dir / f"{name}.csv.gz"
    write_counts_csv(parts.counts, csv_path, names=False, status=True, comment=_comment(meta))
    packed = csv_path.read_bytes()
    meta["files"] = {
        csv_path.name: {
            "sha256": hashlib.sha256(packed).hexdigest(),
            "content_sha256": hashlib.sha256(gzip.decompress(packed)).hexdigest(),
            "bytes": len(packed),
        }
    }
    json_path = out_dir / f"{name}.json"
    atomic_write_text(json_path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return {"csv": csv_path, "json": json_path}


# ----------------------------------------------------------------------------- check
def check(
    names: Sequence[str] = NAMES, *, out_dir: str | Path | None = None, raw_dir: str | Path | None = None
) -> tuple[int, list[str]]:
    """Rebuild ``names`` into a temporary directory and compare with ``out_dir``.

    Returns
    -------
    status, messages : int, list of str
        0 identical; 1 a difference; 3 not comparable (the running numpy / scipy /
        pandas differ from the versions recorded in the committed JSON).
    """
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
    msgs, status = [], 0
    raw = read_raw(raw_dir)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            committed = out_dir / f"{name}.json"
            if not committed.is_file():
                msgs.append(f"{name}: no committed {committed}")
                status = max(status, 1)
                continue
            rec = json.loads(committed.read_text(encoding="utf-8"))["versions"]
            now = _versions()
            diff = [f"{k} {rec.get(k)} (recorded) vs {now[k]} (running)" for k in PINNED if rec.get(k) != now[k]]
            if diff:
                msgs.append(f"{name}: not comparable, versions differ: {'; '.join(diff)} (install constraints.txt)")
                status = max(status, 3)
                continue
            new = build(
                name,
                tmp,
                raw=raw,
                calibration_year=json.loads(committed.read_text())["calibration_year"] or DEFAULT_CALIBRATION_YEAR,
            )
            for path in new.values():
                old = out_dir / path.name
                if not old.is_file() or _sha256(old) != _sha256(path):
                    msgs.append(f"{name}: {path.name} differs from the committed file")
                    status = max(status, 1)
                else:
                    msgs.append(f"{name}: {path.name} identical (sha256 {_sha256(path)[:16]}...)")
    return status, msgs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m demonoise_build", description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", default=list(NAMES), help=f"datasets to build (default: {' '.join(NAMES)})")
    p.add_argument("--raw", type=Path, default=None, help="folder of the raw extracts (default data-raw/eurostat)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default lib/demonoise/data/datasets)")
    p.add_argument("--calibration-year", type=int, default=DEFAULT_CALIBRATION_YEAR)
    p.add_argument(
        "--check",
        action="store_true",
        help="rebuild into a temporary folder and compare sha256 with the committed files",
    )
    a = p.parse_args(argv)
    bad = [n for n in a.names if n not in NAMES]
    if bad:
        p.error(f"unknown dataset(s) {bad}; choose from {', '.join(NAMES)}")
    if a.check:
        status, msgs = check(a.names, out_dir=a.out, raw_dir=a.raw)
        print("\n".join(msgs))
        return status
    raw = read_raw(a.raw)
    for n in a.names:
        t0 = time.perf_counter()
        out = build(n, a.out, raw=raw, calibration_year=a.calibration_year)
        print(
            f"{n}: {out['csv']} ({out['csv'].stat().st_size} bytes), {out['json'].name}  "
            f"[{time.perf_counter() - t0:.1f} s]"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
