r"""Build the embedded datasets ``be-2023``, ``ess-2023`` (and, through
:mod:`demonoise_build.panel`, the multi-year ``be-2015-2023``) from the raw Eurostat extracts.

This is a *build tool*, not part of the run-time I/O path: it imports the computation
modules that model what is not published (:mod:`demonoise_build.graduation`,
:mod:`demonoise_build.mortality_model`), which the run-time registry
(:mod:`demonoise.io.datasets`) never does. It reads only the filtered raw extracts
committed under ``data-raw/eurostat/`` and writes, per dataset,

* ``<name>.csv.gz`` -- the counts in the project's CSV template layout
  (``region,sex,age,year,measure,value,status``; read back with
  :func:`demonoise.io.template.read_counts_csv`, the reader users use), integer
  values, deterministic row order, gzip with ``mtime = 0``;
* ``<name>.npz`` -- the same counts packed for fast loading
  (:mod:`demonoise.io.packed`), made from the CSV as read back by the users' reader
  and checked equal to it; the registry verifies it against the CSV and the JSON
  before use;
* ``<name>.json`` -- metadata: provenance per table, the label and its
  ``implications`` (what the modelled parts mean for reading results), the
  calibration year, the regions carrying each fallback, calibration targets and
  parameters, the regional fertility targets and the national TFR cross-check, seeds,
  the versions of numpy / scipy / pandas / zlib used, and the sha256 of every input
  and output file.

Usage::

    python -m demonoise_build [--raw DIR] [--out DIR] [--check] [NAME ...]

``--check`` rebuilds into a temporary directory and compares sha256 with the
committed files, the packed ``.npz`` by content (exit status 1 on a difference, 3
if the running numpy / scipy / pandas versions differ from the recorded ones, so
that a comparison would be meaningless). A build prints the national TFR
cross-check of demo_r_find3 per country (:func:`cross_check_lines`).

What is real and what is modelled
---------------------------------
``be-2023`` (11 Belgian NUTS 2 regions and the country)
    Population on 1 January 2023 and 2024 (demo_r_d2jan) and deaths 2023
    (demo_r_magec) by sex and single age as published (``Y_LT1 .. Y99``, the open
    group, ``UNK``; sex ``T`` as published, which equals ``F + M`` in these
    tables). Births 2023 by age of mother: the real national births (demo_fordagec)
    after the boundary rule below; their split among the regions is *modelled* by the
    regional fertility rule below.
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
      by the regional fertility rule below.

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
* Regional fertility rule (:func:`fertility_rule`, :func:`expected_births`,
  :func:`round_births`): each region's target TFR is its published 2022 TFR
  (demo_r_find3) times its country's ratio ``TFR_c(2023) / TFR_c(2022)``, with
  ``TFR_c(2023)`` the TFR of the real national births over the dataset's exposure and
  ``TFR_c(2022)`` the published national value. The region's births follow the
  national 2023 age pattern scaled to that target, raked to the national births of
  each age: ``e_{r,x} = B_x s_r W_r(x) / sum_q s_q W_q(x)`` with ``s_r = TFR_r(2022)
  / TFR_c(2022)`` and the female exposure ``W_r(x) = (P^F_{r,x}(2023) +
  P^F_{r,x}(2024)) / 2`` (``Y_LT15``: exposure at 15, ``Y_GE50``: at 49; ``UNK`` in
  proportion to the region's expected births of known age). Integers by a seeded
  randomised (systematic) rounding per cell, so the regional cells sum exactly to the
  national ones and each is within one birth of ``e`` (a multinomial draw would add
  noise of Poisson size, sd 2.2 % of the TFR at 2 000 births, to every region). The
  2022 national TFR of the
  file is cross-checked against demo_fordagec and demo_r_pjangroup
  (:func:`tfr_cross_check`; the build fails on a country outside
  :data:`TFR_CHECK_TOL` without a stated reason in :data:`TFR_CHECK_EXCEPTIONS`).

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
* Regions without a published 2022 TFR (or whose country has none) keep the national
  fertility (``s_r = 1``: births in proportion to female exposure); they are listed
  under ``births_regional_tfr_missing`` (none in these datasets).
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

import gzip
import hashlib
import json
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
from demonoise.io.datasets import fallback_notes
from demonoise.io.eurostat import read_eurostat
from demonoise.io.nuts import nuts_codes, nuts_region
from demonoise.io.packed import FORMAT as PACKED_FORMAT
from demonoise.io.packed import read_packed, write_packed
from demonoise.io.template import read_counts_csv, write_counts_csv
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
    "national_tfr",
    "published_tfr",
    "Fertility",
    "fertility_rule",
    "expected_births",
    "round_births",
    "tfr_cross_check",
    "check_tfr_file",
    "cross_check_lines",
    "write_files",
    "default_raw_dir",
    "default_out_dir",
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
    "d2jan_2021_2022": ("demo_r_d2jan_BE_2021_2022.csv.gz", "demo_r_d2jan"),
    "magec": ("demo_r_magec_BE_2015_2019_2023.csv.gz", "demo_r_magec"),
    "magec_2020_2022": ("demo_r_magec_BE_2020_2022.csv.gz", "demo_r_magec"),
    "fordagec": ("demo_fordagec_sdmx_2015_2023.csv.gz", "demo_fordagec"),
    "mlifexp": ("demo_r_mlifexp_Y_LT1_Y65_FM_1990_2021.tsv.gz", "demo_r_mlifexp"),
    "find3": ("demo_r_find3_TFR_NUTS0_NUTS2_2013_2022.tsv", "demo_r_find3"),
    "pjangroup0": ("demo_r_pjangroup_NUTS0_F_2019_2023.csv.gz", "demo_r_pjangroup"),
}
#: Raw inputs of each dataset (recorded with their sha256 in its JSON).
INPUTS: dict[str, tuple[str, ...]] = {
    "be-2023": ("d2jan", "magec", "fordagec", "find3", "pjangroup0"),
    "ess-2023": tuple(k for k in RAW_FILES if k not in ("d2jan_2021_2022", "magec_2020_2022")),
    "be-2015-2023": ("d2jan", "d2jan_2021_2022", "magec", "magec_2020_2022", "fordagec", "find3"),
}

#: Year of the published regional TFR (demo_r_find3) that sets the regional fertility levels.
TFR_YEAR: int = 2022
#: Years of the national cross-check of demo_r_find3 (the rule uses TFR_YEAR; the others give context).
TFR_CHECK_YEARS: tuple[int, ...] = (2019, 2020, 2021, 2022)
#: Largest accepted |computed - published| national TFR of TFR_YEAR in the cross-check.
TFR_CHECK_TOL: float = 0.03
#: Countries outside TFR_CHECK_TOL in TFR_YEAR, with the reason (the build fails on any other).
TFR_CHECK_EXCEPTIONS: dict[str, str] = {
    "BG": (
        "the published 2022 TFR (1.65, down from 1.79 in 2021) falls 8 % while the births fall 3.5 % and the women "
        "aged 15-49 of demo_r_pjangroup 1.7 %; the computed value agrees within 0.006 in 2019-2021, so the 2022 "
        "value rests on other population figures than this extract's (a post-census revision is the likely cause). "
        "The rule takes from the file only each region's ratio to the national value, which a level shift common "
        "to the regions leaves unchanged"
    ),
    "CY": (
        "one region (CY00 = CY); the computed value agrees within 0.005 in 2019-2021 but exceeds the published 2022 "
        "value (1.38) by 0.036: the 2022 value rests on other population figures than this extract's. The rule "
        "gives CY00 the national 2023 TFR of the dataset whatever the 2022 level"
    ),
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
LABEL_BE = (
    "population and deaths real (Eurostat); regional births modelled from national births (demo_fordagec) "
    "and regional 2022 TFR (demo_r_find3)"
)

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
        f"Belgium (sum of its NUTS 2 regions), deaths and exposure pooled {STANDARD_YEARS[0]}-{STANDARD_YEARS[-1]} "
        "(demo_r_magec, demo_r_d2jan)"
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
                            f"no e0/e65 for {code} {sex} in {year}, and its country lacks {year} or {y} "
                            f"to shift the {y} value"
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


def national_tfr(births: np.ndarray, W: np.ndarray) -> np.ndarray:
    r"""TFR of births on :data:`BIRTH_AXIS` over the female exposure ``W`` (single ages).

    ``TFR = sum_{x=15}^{49} B*_x / W_x``, where ``B*`` counts the births under 15 at 15
    and those of 50 and over at 49, and spreads the births of unknown age in proportion
    to the known ones -- the convention of :mod:`demonoise.core.layout` (Eurostat's).

    ``births`` (..., 38), ``W`` (..., >= 50) -> (...,).
    """
    b = np.asarray(births, dtype=float)
    inner = b[..., 1:36].copy()
    inner[..., 0] += b[..., 0]
    inner[..., -1] += b[..., 36]
    known = inner.sum(axis=-1, keepdims=True)
    inner *= np.where(known > 0, (known + b[..., 37:38]) / np.where(known > 0, known, 1.0), 1.0)
    return (inner / np.asarray(W, dtype=float)[..., 15:50]).sum(axis=-1)


def published_tfr(find3: pd.DataFrame, codes: Sequence[str], year: int = TFR_YEAR) -> np.ndarray:
    """The published total fertility rate (demo_r_find3, ``indic_de = TOTFERRT``) of
    ``codes`` in ``year``; NaN where not published."""
    df = find3
    if "indic_de" in df.columns:
        df = df[df["indic_de"] == "TOTFERRT"]
    s = df[df["time"] == year].drop_duplicates("geo").set_index("geo")["value"]
    return s.reindex(list(codes)).to_numpy(dtype=float)


@dataclass
class Fertility:
    r"""The regional fertility rule of one dataset (module notes).

    ``scale[r] = TFR_r(2022) / TFR_c(2022)`` (published, demo_r_find3; 1 where either
    is not published: the region keeps the national fertility), the target
    ``target[r] = TFR_r(2022) * ratio[c]`` with ``ratio[c] = TFR_c(2023) / TFR_c(2022)``,
    ``TFR_c(2023)`` the TFR of the dataset's national births over its exposure.
    """

    codes: list[str]
    countries: list[str]
    published: np.ndarray  # (R,) published regional TFR of TFR_YEAR (nan: not published)
    published_national: np.ndarray  # (C,)
    tfr_national: np.ndarray  # (C,) TFR of YEAR from the dataset's national births and exposure
    scale: np.ndarray  # (R,)
    target: np.ndarray  # (R,)
    missing: list[str]  # regions that keep the national fertility (no published value)

    @property
    def ratio(self) -> np.ndarray:
        """``TFR_c(2023) / TFR_c(2022)`` per country (nan where the 2022 value is missing)."""
        return self.tfr_national / self.published_national


def fertility_rule(
    find3: pd.DataFrame, codes: Sequence[str], nat: np.ndarray, W: np.ndarray, *, tfr_year: int = TFR_YEAR
) -> Fertility:
    """Regional fertility scales and targets (:class:`Fertility`).

    Parameters
    ----------
    find3 : DataFrame
        demo_r_find3 as read by :func:`demonoise.io.eurostat.read_eurostat`.
    codes : sequence of str
        NUTS 2 codes of the dataset (countries are their first two letters).
    nat : ndarray (C, 38)
        National births of :data:`YEAR` (:func:`national_births`), countries in order of
        first appearance in ``codes``.
    W : ndarray (R, A_known)
        Female exposure ``(P(t) + P(t+1)) / 2`` by single age, per region.
    tfr_year : int
        Year of the published TFR that sets the regional levels (default :data:`TFR_YEAR`).
    """
    codes = list(codes)
    countries = list(dict.fromkeys(c[:2] for c in codes))
    ci = np.array([countries.index(c[:2]) for c in codes])
    pub_r = published_tfr(find3, codes, tfr_year)
    pub_c = published_tfr(find3, countries, tfr_year)
    W_c = np.stack([W[ci == k].sum(axis=0) for k in range(len(countries))])
    t23 = national_tfr(nat, W_c)
    ok = np.isfinite(pub_r) & np.isfinite(pub_c[ci]) & (pub_r > 0) & (pub_c[ci] > 0)
    scale = np.where(ok, pub_r / np.where(ok, pub_c[ci], 1.0), 1.0)
    target = scale * t23[ci]
    missing = [c for c, k in zip(codes, ok, strict=True) if not k]
    return Fertility(codes, countries, pub_r, pub_c, t23, scale, target, missing)


def expected_births(nat: np.ndarray, W: np.ndarray, scale: np.ndarray, *, country: str = "") -> np.ndarray:
    r"""Expected regional births of one country, raked to its national births.

    The national age pattern scaled to each region's level, ``e_{r,j} \propto s_r
    f_j W_{r,j}``, raked so that ``sum_r e_{r,j} = B_j`` for every cell ``j``:

    .. math:: e_{r,j} = B_j \frac{s_r W_{r,j}}{\sum_q s_q W_{q,j}}

    (the national rate ``f_j`` cancels); ``W_{r,j}`` is the female exposure at age
    ``j`` (``Y_LT15``: at 15, ``Y_GE50``: at 49). Births of unknown age go in
    proportion to each region's expected births of known age. With ``s = 1`` this is
    allocation in proportion to female exposure (the rule for regions without a
    published TFR).

    ``nat`` (38,), ``W`` (R, A_known), ``scale`` (R,) -> float (R, 38).
    """
    w = _birth_weights(W)[:, :-1] * np.asarray(scale, dtype=float)[:, None]  # (R, 37)
    tot = w.sum(axis=0)
    need = (tot <= 0) & (nat[:-1] > 0)
    if need.any():
        j = int(np.flatnonzero(need)[0])
        raise DataError(
            "no female exposure at this age of mother", region=country, age=BIRTH_AXIS.labels[j], measure="births"
        )
    e = nat[:-1] * w / np.where(tot > 0, tot, 1.0)
    known = e.sum(axis=1)
    share = known / known.sum() if known.sum() > 0 else np.full(len(known), 1.0 / len(known))
    return np.concatenate([e, (nat[-1] * share)[:, None]], axis=1)


def round_births(expected: np.ndarray, nat: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Integer births with exact national totals: randomised (systematic) rounding per cell.

    For each cell ``j``, with cumulative expected births ``C_r = sum_{q<=r} e_{q,j}``
    (``C_R = B_j``) and one uniform random start ``u_j`` in ``[0, 1)``,

    .. math:: n_{r,j} = \lfloor C_r + u_j \rfloor - \lfloor C_{r-1} + u_j \rfloor,

    systematic sampling with a random start (Madow 1949, *Ann. Math. Statist.* 20,
    333-354). Then ``sum_r n_{r,j} = B_j`` exactly, each ``n_{r,j}`` is
    ``floor(e_{r,j})`` or ``ceil(e_{r,j})`` and ``E[n_{r,j}] = e_{r,j}`` (unbiased). A
    multinomial draw would keep the totals too, but add a noise of Poisson size to
    every region (sd 2 % of the TFR at 2 000 births), hiding the published levels the
    rule transfers; the rounding adds at most one birth per cell.

    ``expected`` (R, J), ``nat`` (J,) integers -> int64 (R, J).
    """
    C = np.cumsum(np.asarray(expected, dtype=float), axis=0)
    C[-1] = nat  # exact: no floating-point shortfall at the end
    u = rng.random(C.shape[1])
    F = np.floor(C + u).astype(np.int64)
    return np.diff(F, axis=0, prepend=np.zeros((1, C.shape[1]), np.int64))


def _allocate_births(nat: np.ndarray, W: np.ndarray, scale: np.ndarray, country: str, rng=None) -> np.ndarray:
    """One country's births (38,) to its regions: :func:`expected_births` then :func:`round_births`
    (with the stream ``rng``, default the births stream of ``country``)."""
    e = expected_births(nat, W, scale, country=country)
    return round_births(e, nat, rng if rng is not None else _stream("births", country))


def tfr_cross_check(raw: Raw, countries: Sequence[str], years: Sequence[int] = (TFR_YEAR,)) -> dict:
    r"""The national TFR of demo_r_find3 against the one computed from the real tables.

    Per country and year ``y``: ``TFR = 5 sum_g B_g / E_g`` over the 5-year groups
    ``g = 15-19, ..., 45-49``, with ``B`` the births of ``y`` by age of mother
    (demo_fordagec, after :func:`national_births`; under 15 counted in 15-19, 50 and
    over in 45-49, unknown age spread in proportion) and ``E_g = (P_g(y) + P_g(y+1)) /
    2`` the female population on 1 January (NUTS 0 rows of demo_r_pjangroup, ``UNK``
    spread in proportion).

    Returns
    -------
    dict
        ``{country: {year: {"computed", "published", "diff"}}}`` (rounded to 4 decimals;
        ``None`` where an input is missing).
    """
    pj = raw.tables["pjangroup0"]
    axis = AgeAxis.five_year(85)
    out: dict = {c: {} for c in countries}
    for y in years:
        B, notes = _births_5y(raw.tables["fordagec"], countries, y)
        P = [_female_groups(pj, countries, t, axis) for t in (y, y + 1)]
        E = (spread_unknown(P[0], axis) + spread_unknown(P[1], axis))[:, 3:10] / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            computed = 5.0 * (B / E).sum(axis=1)
        published = published_tfr(raw.tables["find3"], countries, y)
        for c, t, p in zip(countries, computed, published, strict=True):
            entry = {
                "computed": _num(t, 4),
                "published": _num(p),
                "diff": _num(t - p, 4),
            }
            if c in notes:
                entry["births"] = notes[c]
            out[c][str(y)] = entry
    return out


def _births_5y(fordagec: pd.DataFrame, countries: Sequence[str], year: int) -> tuple[np.ndarray, dict[str, str]]:
    """Births of ``year`` in the groups 15-19..45-49 (under 15 in 15-19, 50+ in 45-49, UNK
    spread in proportion), (C, 7); NaN for a country without births of ``year``. The notes
    name the countries whose absent single ages were filled (:func:`national_births`)."""
    out = np.full((len(countries), 7), np.nan)
    notes = {}
    for i, c in enumerate(countries):
        try:
            nat, used = national_births(fordagec, [c], year)
        except DataError:
            notes[c] = f"no births by age of mother for {year}"
            continue
        if used["latest_year"]:
            notes[c] = f"no births by age of mother for {year}"
            continue
        if used["missing_ages"]:
            m = used["missing_ages"][c]
            notes[c] = f"absent ages {', '.join(m['ages'])} filled in proportion to {m['reference_year']}"
        b = nat[0]
        inner = b[1:36].astype(float)
        inner[0] += b[0]
        inner[-1] += b[36]
        inner *= (inner.sum() + b[37]) / inner.sum()
        out[i] = inner.reshape(7, 5).sum(axis=-1)
    return out, notes


def _female_groups(pj: pd.DataFrame, countries: Sequence[str], year: int, axis: AgeAxis) -> np.ndarray:
    """Female population by 5-year group (``axis``, ``UNK`` 0 where not published), (C, 19)."""
    df = pj[pj["geo"].isin(countries) & (pj["time"] == year) & (pj["sex"] == "F")]
    known = table_to_array(
        df, measure="population", regions=countries, sexes=("F",), ages=axis.without_unknown(), year=year
    )[:, 0]
    unk = df[df["age"] == "UNK"].set_index("geo")["value"].reindex(list(countries)).fillna(0.0)
    return np.concatenate([known, unk.to_numpy(dtype=float)[:, None]], axis=1)


def check_tfr_file(cross: dict, year: int = TFR_YEAR) -> dict[str, str]:
    """Countries whose computed and published TFR of ``year`` differ by more than
    :data:`TFR_CHECK_TOL`, with their reason (:data:`TFR_CHECK_EXCEPTIONS`).

    Raises :class:`~demonoise.core.errors.DataError` for a country outside the tolerance
    without a stated reason, or one with a stated reason that is within it (the list is
    kept exact), or a country the check cannot compute.
    """
    out = {}
    for c, by_year in cross.items():
        d = by_year[str(year)]["diff"]
        if d is None:
            raise DataError("national TFR cross-check not computable", dataset="demo_r_find3", region=c, year=year)
        outside = abs(d) > TFR_CHECK_TOL
        if outside and c not in TFR_CHECK_EXCEPTIONS:
            raise DataError(
                f"published TFR {by_year[str(year)]['published']} differs from the computed "
                f"{by_year[str(year)]['computed']} by {d:+.3f} (tolerance {TFR_CHECK_TOL}); state the reason in "
                "TFR_CHECK_EXCEPTIONS",
                dataset="demo_r_find3",
                region=c,
                year=year,
            )
        if not outside and c in TFR_CHECK_EXCEPTIONS:
            raise DataError(
                f"listed as an exception but within {TFR_CHECK_TOL} ({d:+.3f}); remove it from TFR_CHECK_EXCEPTIONS",
                dataset="demo_r_find3",
                region=c,
                year=year,
            )
        if outside:
            out[c] = TFR_CHECK_EXCEPTIONS[c]
    return out


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
    fertility: Fertility | None = None  # the regional fertility rule (scales, targets)
    tfr_cross_check: dict | None = None  # tfr_cross_check() of the dataset's countries


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
            "model": "Brass relational logit Y_x = alpha + beta Y^s_x (logit with factor 1/2), calibrated per region "
            "and sex so that the project's life table (ages 0..84, 85+; Eurostat's method) of the model rates gives "
            "the target e0 and e65",
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
    fert = fertility_rule(raw.tables["find3"], codes, nat, W)
    fallbacks["births_regional_tfr_missing"] = fert.missing
    births = np.zeros((R, BIRTH_AXIS.size), np.int64)
    for ci, cc in enumerate(countries):
        rows = [i for i, c in enumerate(codes) if c[:2] == cc]
        births[rows] = _allocate_births(nat[ci], W[rows], fert.scale[rows], cc)
    cross = tfr_cross_check(raw, countries, TFR_CHECK_YEARS)
    meta_fert = _fertility_meta(fert, cross)

    order, arr, _ = _with_countries(codes, {**pop, "deaths": deaths, "births": births})
    regions = tuple(nuts_region(c) for c in order)
    meta, prov = _metadata(name, raw, codes, countries, fallbacks, meta_cal, meta_fert, calibration_year)
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
    return Parts(counts, meta, codes, modelled, expected, targets, groups, nat, countries, fert, cross)


BIRTH_RULE = (
    "births outside 15-49 = TOTAL - UNK - sum(Y15..Y49), split between Y_LT15 and Y_GE50 in proportion to the births "
    "at 15 and at 49 (the TFR counts them at 15 and 49)"
)
ALLOC_RULE = (
    "each region's births follow the national 2023 age pattern scaled to its level: the national births of each age "
    "of mother shared among the country's NUTS 2 regions in proportion to s_r W_r(x), with W_r(x) = (P(2023) + "
    "P(2024)) / 2 the female exposure at that age (Y_LT15: at 15; Y_GE50: at 49) and s_r = TFR_r(2022) / TFR_c(2022) "
    "the region's published 2022 TFR over its country's (demo_r_find3), so that each region's TFR is its target "
    "TFR_r(2022) x TFR_c(2023) / TFR_c(2022) and the regional births of each age sum exactly to the national ones "
    "(raking); UNK in proportion to each region's births of known age; integers by a seeded randomised rounding "
    "(systematic sampling with a random start per age: every cell the floor or ceiling of its expected value, "
    "unbiased, national totals exact)"
)
#: What the modelled parts mean for reading results (the JSON's ``implications``; short: it
#: travels in the ``data_status`` of every results row).
IMPLICATIONS_BIRTHS = (
    "regional births modelled: the national 2023 age pattern scaled to each region's published 2022 TFR -- "
    "regional ASFR shapes are the national shape; regional TFR levels are real to within the 2022-2023 change"
)
IMPLICATIONS = {
    "be-2023": IMPLICATIONS_BIRTHS,
    "ess-2023": IMPLICATIONS_BIRTHS
    + "; deaths modelled (outside Belgium): a Belgian age pattern fitted to each region's published "
    "{year} e0 and e65 -- regional mortality levels are those of {year}, the age shapes Belgium's",
}
COUNTRY_RULE = "country rows are the sums of their NUTS 2 regions (coherent with the regions)"
T_RULE = "T = F + M (in real publications T is a published cell of its own)"


def _fertility_meta(fert: Fertility, cross: dict) -> dict:
    """The ``fertility`` section of the JSON: the rule's inputs and targets, the cross-check."""
    ratio = fert.ratio
    return {
        "rule": ALLOC_RULE,
        "published_year": TFR_YEAR,
        "countries": {
            c: {
                f"tfr_{TFR_YEAR}_published": _num(fert.published_national[k]),
                f"tfr_{YEAR}": _num(fert.tfr_national[k], 4),
                "ratio": _num(ratio[k], 6),
            }
            for k, c in enumerate(fert.countries)
        },
        "regions": {
            c: {f"tfr_{TFR_YEAR}_published": _num(fert.published[i]), f"target_{YEAR}": _num(fert.target[i], 4)}
            for i, c in enumerate(fert.codes)
        },
        "regions_without_published_tfr": fert.missing,
        "cross_check": {
            "method": "national TFR = 5 sum_g B_g / E_g over 15-19..45-49: births of the year (demo_fordagec, under 15 "
            "in 15-19, 50+ in 45-49, UNK spread) over the mean female population of 1 January of the year and the next "
            "(NUTS 0 rows of demo_r_pjangroup, UNK spread), against the published national TFR of demo_r_find3",
            "year": TFR_YEAR,
            "tolerance": TFR_CHECK_TOL,
            "outside_tolerance": check_tfr_file(cross),
            "countries": cross,
        },
    }


def _num(x, digits: int | None = None):
    """A JSON number (``None`` for NaN), rounded to ``digits`` if given."""
    x = float(x)
    if not np.isfinite(x):
        return None
    return round(x, digits) if digits is not None else x


def _metadata(name, raw, codes, countries, fallbacks, cal, fert, calibration_year):
    notes = fallback_notes(fallbacks)
    ext = "unknown"
    if name == "be-2023":
        label = LABEL_BE
        title = "Belgium, NUTS 2 regions and country, 2023 (real population and deaths)"
        p = TableProvenance(
            "real",
            ("demo_r_d2jan",),
            ext,
            "Eurostat",
            "population on 1 January 2023 and 2024 by sex and single age as published (Y_LT1..Y99, Y_OPEN as "
            f"Y_GE100, UNK); published T equals F + M; {COUNTRY_RULE}",
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
            ("demo_fordagec", "demo_r_find3", "demo_r_d2jan"),
            ext,
            "Eurostat",
            f"national births 2023 by single age of mother real (demo_fordagec); {BIRTH_RULE}; "
            f"regional births modelled: {ALLOC_RULE}; the country row is the national figure",
        )
    else:
        label = LABEL_ESS.format(year=calibration_year)
        title = (
            f"Europe-wide demonstration set: {len(codes)} NUTS 2 regions (NUTS 2021) and "
            f"{len(countries)} countries, 2023"
        )
        p = TableProvenance(
            "real",
            ("demo_r_pjangroup", "demo_r_d2jan"),
            ext,
            "Eurostat",
            "real 5-year groups (demo_r_pjangroup, NUTS 2021 codes) graduated to single ages 0-84 (monotone Hyman "
            "spline of the cumulative, integers by largest remainder; every group total kept exactly); Y_GE85 split "
            "into 85-99 and 100+ in proportion to the stationary population of the region's calibrated mortality "
            "schedule (sums back exactly); "
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
            f"{calibration_year} (demo_r_mlifexp), then a seeded Poisson draw; Belgian regions: real deaths "
            f"(demo_r_magec); {T_RULE}; {COUNTRY_RULE}"
            + (f"; fallbacks: {notes['deaths']}" if notes["deaths"] else ""),
        )
        b = TableProvenance(
            "modelled",
            ("demo_fordagec", "demo_r_find3", "demo_r_pjangroup", "demo_r_d2jan"),
            ext,
            "Eurostat",
            f"national births 2023 by single age of mother real (demo_fordagec); {BIRTH_RULE}; {ALLOC_RULE}; "
            f"{COUNTRY_RULE}" + (f"; fallbacks: {notes['births']}" if notes["births"] else ""),
        )
    implications = IMPLICATIONS[name].format(year=calibration_year)
    prov = Provenance(population=p, deaths=d, births=b, label=label, implications=implications)
    meta = {
        "name": name,
        "title": title,
        "year": YEAR,
        "label": label,
        "implications": implications,
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
        "fertility": fert,
        "seeds": {
            "root": ROOT_SEED,
            "bit_generator": "PCG64",
            "streams": "SeedSequence(root, spawn_key=(step, *country_code_ascii)) per step and country",
            "steps": STEPS,
        },
        "versions": _versions(),
        "inputs": {raw.files[k]: raw.sha256[raw.files[k]] for k in INPUTS[name]},
        "build": "python -m demonoise_build",
    }
    return meta, prov


def _comment(meta: dict) -> str:
    return (
        f"demonoise embedded dataset {meta['name']}: {meta['title']}\n"
        f"{meta['label']}\n"
        f"Source: Eurostat ({', '.join(dict.fromkeys(d for t in meta['provenance'].values() for d in t['datasets']))}"
        "); "
        f"provenance, fallbacks, seeds and versions in {meta['name']}.json\n"
        "Rebuild: python -m demonoise_build. Columns: region,sex,age,year,measure,value,status (docs/csv_template.md)"
    )


def write_dataset(parts: Parts, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write a built dataset (:func:`build_parts`) as ``<name>.csv.gz``, ``<name>.npz`` and
    ``<name>.json``.

    The CSV is :func:`demonoise.io.template.write_counts_csv` (no region names --
    :mod:`demonoise.io.nuts` supplies them on reading -- and the ``status`` column),
    integer values, rows in the order of :meth:`~demonoise.core.counts.Counts.to_frame`,
    gzip level 9 with ``mtime = 0``. It is read back with
    :func:`~demonoise.io.template.read_counts_csv` (the users' reader, full validation)
    and checked equal to the built counts; the packed form (:mod:`demonoise.io.packed`)
    is made from what was read back, read again and checked equal. The JSON records the
    sha256 of the gzip file and of its content, and the content digest of the packed
    form (what the loader checks; its bytes also depend on the zip writer).
    """
    counts = parts.counts
    return write_files(
        counts,
        parts.meta,
        out_dir,
        write_csv=lambda path: write_counts_csv(counts, path, names=False, status=True, comment=_comment(parts.meta)),
        read_csv=lambda path: read_counts_csv(path, name=counts.name, year=counts.year),
        write_npz=write_packed,
        read_npz=read_packed,
        same=_check_same,
        fmt=PACKED_FORMAT,
    )


def write_files(built, meta: dict, out_dir, *, write_csv, read_csv, write_npz, read_npz, same, fmt) -> dict[str, Path]:
    """The steps every embedded dataset is written by (:func:`write_dataset`, one year;
    :func:`demonoise_build.panel.write_panel_dataset`, several): the gzip CSV written,
    read back with the users' reader and checked ``same`` as ``built``; the packed form
    made from what was read back, read again and checked; the JSON ``meta`` with the
    files' digests. ``fmt`` is the packed form's format name."""
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    name, meta = built.name, dict(meta)
    csv_path = out_dir / f"{name}.csv.gz"
    write_csv(csv_path)
    data = csv_path.read_bytes()
    csv_sha = hashlib.sha256(data).hexdigest()
    read_back = read_csv(csv_path)
    same(built, read_back, f"{csv_path.name} read back")
    npz_path = out_dir / f"{name}.npz"
    digest = write_npz(read_back, npz_path, source_sha256=csv_sha)
    unpacked, _ = read_npz(npz_path, provenance=read_back.provenance, name=name)
    same(read_back, unpacked, f"{npz_path.name} read back")
    meta["files"] = {
        csv_path.name: {
            "sha256": csv_sha,
            "content_sha256": hashlib.sha256(gzip.decompress(data)).hexdigest(),
            "bytes": len(data),
        },
        npz_path.name: {"content_sha256": digest, "format": fmt, "source": csv_path.name},
    }
    json_path = out_dir / f"{name}.json"
    atomic_write_text(json_path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return {"csv": csv_path, "npz": npz_path, "json": json_path}


def _check_same(a: Counts, b: Counts, what: str) -> None:
    """Raise :class:`DataError` unless ``a`` and ``b`` hold the same regions, axes and counts."""
    same = (
        a.codes == b.codes
        and a.year == b.year
        and a.ages == b.ages
        and a.birth_ages == b.birth_ages
        and all(
            (getattr(a, k) is None and getattr(b, k) is None)
            or (
                getattr(a, k) is not None and getattr(b, k) is not None and np.array_equal(getattr(a, k), getattr(b, k))
            )
            for k in ("pop_start", "pop_end", "deaths", "births")
        )
    )
    if not same:
        raise DataError(f"{what} differs from the built counts", dataset=a.name)


# ----------------------------------------------------------------------------- check


def cross_check_lines(cross: dict) -> list[str]:
    """The national TFR cross-check (the JSON's ``fertility.cross_check``) as printed lines:
    one per country (computed, published, difference in the rule's year; the other
    years' differences in brackets), then the countries outside the tolerance with their reason."""
    year, tol = str(cross["year"]), cross["tolerance"]
    out = [f"national TFR {year}: computed from demo_fordagec and demo_r_pjangroup (NUTS 0) vs demo_r_find3"]
    for c, by_year in cross["countries"].items():
        e = by_year[year]
        other = ", ".join(
            f"{y} {v['diff']:+.3f}" if v["diff"] is not None else f"{y} n/a" for y, v in by_year.items() if y != year
        )
        mark = "  OUTSIDE" if abs(e["diff"]) > tol else ""
        note = f"; births: {e['births']}" if e.get("births") else ""
        out.append(
            f"{c}: computed {e['computed']:.3f} published {e['published']:.2f} diff {e['diff']:+.3f}{mark}  "
            f"[{other}]{note}"
        )
    outside = cross["outside_tolerance"]
    out.append(
        f"within {tol}: {len(cross['countries']) - len(outside)} of {len(cross['countries'])} countries"
        + (f"; outside: {', '.join(outside)}" if outside else "")
    )
    out += [f"{c}: {why}" for c, why in outside.items()]
    return out
