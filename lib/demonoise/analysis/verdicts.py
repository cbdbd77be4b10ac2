"""Regional verdicts over a results table: the rows of one setting, indicator, sex and
age; the population of every region; where first-order results rest on few events
(sparse regions, Monte Carlo disagreements); and the sentences that say, in numbers, how
much noise adds to the statistical (Poisson) uncertainty.

Conventions
-----------
* ``df`` is a results table (:mod:`demonoise.analysis.results`) for one dataset and one
  country (its country row and its NUTS 2 regions), holding any number of noise settings;
  every function selects the rows of the setting ``V`` it is given (any form of
  :meth:`NoiseSetting.of <demonoise.analysis.settings.NoiseSetting.of>`: a variance,
  ``{"V": v}``, ``{"ptable": name}``).
* Noise admixture ``A = sd_tot / sd_pois - 1 = sqrt(1 + Var_noise / Var_pois) - 1``
  (docs/design.md, "Admixture"): "noise adds ``A`` to the statistical (Poisson)
  uncertainty". The thresholds used in the sentences are ``A = 10 %`` (noise adds a
  tenth) and ``A = sqrt(2) - 1 = 41.4 %`` (noise as large as Poisson).
* First-order results are unreliable where a rate rests on few events: cells with
  ``small_count`` (fewer than 10 events), regions where a large share of the single-age
  cells behind an indicator are small (:func:`sparse_regions`), and cells where the Monte
  Carlo disagrees with the analytic standard deviation beyond sampling error (``z_flag``:
  ``|z| > 5`` with ``z = (sd_MC / sd_analytic - 1) sqrt(2N)``). They are flagged, never
  dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from demonoise.analysis.decision import MainPoints, headline_bands
from demonoise.analysis.settings import NoiseSetting, setting_labels
from demonoise.core.errors import ParameterError
from demonoise.core.formats import fmt_int, fmt_num, fmt_pct
from demonoise.core.vocabulary import (
    A_EQUAL,
    A_SMALL,
    ADMIXTURE_CLASSES,
    EVENT_WORDS,
    HEADLINES,
    INDICATOR_PHRASES,
    INDICATOR_UNITS,
    SEX_WORDS,
    SEXES,
)

__all__ = [
    "SPARSE_SHARE",
    "INDICATOR_NAMES",
    "region_label",
    "at",
    "drop_duplicate_country",
    "scalar_rows",
    "sex_note",
    "WORST_WORDS",
    "region_population",
    "implications_for",
    "country_name",
    "full_name",
    "flag_text",
    "age_profile_rows",
    "sparse_regions",
    "mc_flag_rows",
    "mc_summary",
    "Verdict",
    "indicator_phrase",
    "short_name",
    "few_event_ceiling",
    "one_event_ceiling",
    "scalar_verdict",
    "age_verdict",
    "index_metrics",
    "across_settings",
    "single_region",
    "NO_EVENTS",
    "row_region_labels",
    "by_population",
    "panel_rows",
    "admixture_runs",
    "flagged_rows",
    "headline_band_rows",
    "flag_rows",
    "plural",
    "upper_first",
]


#: A region is *sparse* for an indicator when more than this share of the single-age
#: cells behind it rest on fewer than 10 events.
SPARSE_SHARE = 0.5


INDICATOR_NAMES = INDICATOR_PHRASES


_UNITS = {"e": INDICATOR_UNITS["e"], "tfr": INDICATOR_UNITS["tfr"]}


_SEX_WORDS = SEX_WORDS


#: How a verdict that takes the worst sex of every region names its subject.
WORST_WORDS = "worst of women, men and both sexes"


_EVENT_WORDS = EVENT_WORDS


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def region_label(code: str, name: str, width: int = 28) -> str:
    """``"FI20 Åland"``: the code and the first part of the name (before ``/``), shortened."""
    name = (name or "").split("/")[0].strip()
    if len(name) > width:
        name = name[: width - 1].rstrip() + "\u2026"
    return f"{code} {name}".strip()


def at(
    df: pd.DataFrame, V, indicator: str | None = None, *, sex: str | None = None, age: float | None = None
) -> pd.DataFrame:
    """Rows of one noise setting ``V`` (a variance of the generic model, ``{"V": v}`` or
    ``{"ptable": name}``), optionally one indicator, sex and age."""
    m = NoiseSetting.of(V).mask(df)
    if indicator is not None:
        m &= df["indicator"] == indicator
    if sex is not None:
        m &= df["sex"] == sex
    if age is not None:
        m &= np.isclose(df["age"].astype(float), float(age))
    return df[m]


def drop_duplicate_country(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the country rows when the country has a single NUTS 2 region with the same
    values (Luxembourg, Malta, ...): charts and tables would show the same line twice."""
    regions = df.loc[df["nuts_level"] == 2, "region"].unique()
    if len(regions) != 1:
        return df
    country = df[df["nuts_level"] == 0]
    if country.empty:
        return df
    key = ["noise_model", "V", "sex", "indicator", "age_group"]
    a = country.set_index(key)["value"]
    b = df[df["region"] == regions[0]].set_index(key)["value"]
    a, b = a.align(b, join="inner")
    if len(a) and np.allclose(a.to_numpy(float), b.to_numpy(float), equal_nan=True, rtol=1e-12):
        return df[df["nuts_level"] != 0]
    return df


def scalar_rows(
    df: pd.DataFrame, V: float, indicator: str, *, sex: str | None = "T", age: float | None = None
) -> pd.DataFrame:
    """One row per region (country first, then NUTS 2 regions by falling population) for
    an indicator at one age (``e``) or without age (``tfr``). Adds ``label`` and ``population``.

    ``sex=None``: the sex rule of every verdict -- per region the row of the sex (women,
    men, both sexes) with the largest admixture (:func:`~demonoise.analysis.decision.worst_sex`,
    the decision table's rule), its ``sex`` naming it, with ``admixture_F/M/T`` beside it.
    """
    if indicator == "tfr":
        sex = "F"
    if sex is None:
        return _worst_rows(df, V, indicator, age)
    d = at(df, V, indicator, sex=sex, age=age if indicator != "tfr" else None).copy()
    if d.empty:
        return d.assign(label=pd.Series(dtype=str), population=pd.Series(dtype=float))
    d["label"] = [region_label(c, n) for c, n in zip(d["region"], d["region_name"], strict=False)]
    pop = region_population(df)
    d["population"] = d["region"].map(pop).astype(float)
    d = d.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    return d.reset_index(drop=True)


def _worst_rows(df: pd.DataFrame, V, indicator: str, age: float | None) -> pd.DataFrame:
    """:func:`scalar_rows` of the worst sex of every region."""
    from demonoise.analysis.decision import worst_sex

    parts = [p for p in (scalar_rows(df, V, indicator, sex=s, age=age) for s in SEXES) if len(p)]
    if not parts:
        return scalar_rows(df, V, indicator, sex="T", age=age)
    w = worst_sex(pd.concat(parts, ignore_index=True))
    w = w[w["sex"] != ""]
    w = w.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    return w.reset_index(drop=True)


def sex_note(row, sex: str | None) -> str:
    """``" (women)"``: the sex a verdict's number is for, when the verdict takes the worst
    sex of every region (``sex=None``); empty for a verdict of one sex."""
    return f" ({_SEX_WORDS[row['sex']]})" if sex is None and row.get("sex") in _SEX_WORDS else ""


def region_population(df: pd.DataFrame) -> pd.Series:
    """Population on 1 January of the reference year per region (the results table's
    ``population``, the figure of the decision table and the index); for a table without
    it, the average population (exposure, both sexes, all ages) from the e0 rows, else
    the sum of the mortality exposures."""
    if "population" in df:
        return df.drop_duplicates("region").set_index("region")["population"].astype(float)
    e0 = df[(df["indicator"] == "e") & (df["sex"] == "T") & np.isclose(df["age"].astype(float), 0.0)]
    if not e0.empty:
        return e0.groupby("region")["exposure"].first()
    m = df[(df["indicator"] == "asmr") & (df["sex"] == "T")]
    if not m.empty:
        first_v = m["V"].iloc[0]
        m = m[m["V"] == first_v]
        return m.groupby("region")["exposure"].sum()
    return pd.Series(dtype=float)


def implications_for(implications, indicator: str | None = None) -> str:
    """The dataset's ``implications`` text that concerns ``indicator`` (``None``: all of it).

    ``implications`` is a text -- clauses separated by ``"; "``, each about the table it
    names first (``"regional births modelled: ...; deaths modelled (outside Belgium): ..."``)
    -- or a mapping from indicator codes (``asfr``, ``tfr``, ``asmr``, ``e``; or
    ``fertility`` / ``mortality``) to texts. The fertility chapters (``asfr``, ``tfr``) get
    the clauses about births, the mortality chapters (``asmr``, ``e``) those about deaths;
    clauses about neither (e.g. population) concern every chapter.
    """
    if not implications:
        return ""
    family = {"asfr": "fertility", "tfr": "fertility", "asmr": "mortality", "e": "mortality"}
    if isinstance(implications, Mapping):
        if indicator is None:
            return " ".join(str(v) for v in implications.values())
        return " ".join(str(implications[k]) for k in (indicator, family.get(indicator)) if k in implications)
    if indicator is None:
        return str(implications)
    want = {"fertility": "births", "mortality": "deaths"}.get(family.get(indicator, ""), "")
    keep = [c for c in _implication_clauses(str(implications)) if c[0] in (want, "")]
    return "; ".join(text for _, text in keep)


_CLAUSE_START = re.compile(r";\s+(?=(?:regional\s+)?(?:births|deaths|population)\b)", re.I)


_TABLE_WORD = re.compile(r"\b(births|deaths|population)\b", re.I)


def _implication_clauses(text: str) -> list[tuple[str, str]]:
    """``(table, clause)`` of an implications text: a clause starts where a table is named
    (births, deaths, population) after ``"; "``; its table is the first it names."""
    out = []
    for clause in _CLAUSE_START.split(text):
        m = _TABLE_WORD.search(clause)
        word = m.group(1).lower() if m else ""
        out.append(("" if word == "population" else word, clause.strip()))
    return out


def country_name(df: pd.DataFrame) -> str:
    """The country's name (first part before ``/``), from its level-0 row, else from
    the NUTS names (when :func:`drop_duplicate_country` removed the country row)."""
    c = df[df["nuts_level"] == 0]
    if len(c):
        return full_name(c["region_name"].iloc[0]) or str(c["region"].iloc[0])
    code = str(df["country"].iloc[0]) if len(df) else ""
    try:
        from demonoise.io.nuts import nuts_region

        return full_name(nuts_region(code).name) or code
    except Exception:  # an unknown code: show the code
        return code


def full_name(name) -> str:
    """A country's name in all its languages: ``"Suomi/Finland"`` -> ``"Suomi / Finland"``."""
    return " / ".join(p.strip() for p in str(name or "").split("/") if p.strip())


def flag_text(row) -> str:
    out = []
    if bool(row.get("small_count", False)):
        out.append("< 10 events")
    if bool(row.get("sparse", False)):
        out.append(f"sparse ({fmt_pct(row['small_share'], 2)})")
    if bool(row.get("z_flag", False)):
        out.append("MC |z| > 5")
    return "; ".join(out)


def _largest(cells: pd.DataFrame) -> pd.DataFrame:
    """Per region (in order of first appearance) the cell of largest admixture: its
    ``admixture`` and ``age_group`` (the first such cell where several share the largest)."""
    top = cells.sort_values("admixture", ascending=False, kind="stable", na_position="last")
    return top.drop_duplicates("region").set_index("region")[["admixture", "age_group"]]


def age_profile_rows(df: pd.DataFrame, V, indicator: str) -> pd.DataFrame:
    """A by-age indicator (ASFR, ASMR) at ``V`` summarised per region over its cells with
    events (one row per region, the country first, then by falling population): the median
    admixture of each sex (``A_median_F/M/T``; ASFR: women), and of both sexes (ASFR:
    women) the median relative total uncertainty and the largest admixture (and its age),
    overall and among cells with at least 10 events."""
    sex = "F" if indicator == "asfr" else "T"
    d = at(df, V, indicator)
    d = d[np.isfinite(d["value"]) & (d["var_pois"] > 0)]
    sexes = [x for x in ("F", "M", "T") if (d["sex"] == x).any()]
    pop = region_population(df)
    d = d[["region", "region_name", "nuts_level", "sex", "age_group", "admixture", "rel_tot", "small_count"]]
    own = d[d["sex"] == sex]
    regions = pd.unique(own["region"])
    if len(regions) == 0:
        return pd.DataFrame()
    first = d.drop_duplicates("region").set_index("region")
    top = _largest(own)
    big = _largest(own[~own["small_count"].astype(bool)]).reindex(regions)
    frame = pd.DataFrame(
        {
            "region": regions,
            "label": [region_label(r, first.at[r, "region_name"]) for r in regions],
            "nuts_level": first.loc[regions, "nuts_level"].astype(int).to_numpy(),
            "population": pop.reindex(regions).astype(float).to_numpy(),
            "rel_tot_median": own.groupby("region")["rel_tot"].median().reindex(regions).to_numpy(dtype=float),
            "A_max": top.loc[regions, "admixture"].to_numpy(dtype=float),
            "A_max_age": top.loc[regions, "age_group"].astype(str).to_numpy(),
            "A_max_reliable": big["admixture"].to_numpy(dtype=float),
            "A_max_reliable_age": big["age_group"].fillna("").astype(str).to_numpy(),
        }
    )
    for x in sexes:
        med = d[d["sex"] == x].groupby("region")["admixture"].median()
        frame[f"A_median_{x}"] = med.reindex(regions).to_numpy(dtype=float)
    frame = frame.sort_values(["nuts_level", "population"], ascending=[True, False], kind="stable")
    return frame.reset_index(drop=True)


def sparse_regions(df: pd.DataFrame, V: float, indicator: str) -> pd.DataFrame:
    """Cells behind ``indicator`` resting on fewer than 10 events, per region and sex, from
    the one definition of every count (:func:`demonoise.analysis.decision.small_cell_counts`):
    ``cells`` every age cell of the rate (deaths by age behind ``e`` and ``asmr``, births
    by age of mother behind ``tfr`` and ``asfr``), ``small`` those with fewer than 10
    events, ``small_share = small / cells``; ``sparse`` where the share exceeds
    :data:`SPARSE_SHARE`; ``text`` the sentence every table prints. The counts do not
    depend on the noise setting ``V``."""
    from demonoise.analysis.decision import small_cell_counts

    base = {"e": "asmr", "asmr": "asmr", "tfr": "asfr", "asfr": "asfr"}[indicator]
    cols = ["region", "sex", "cells", "small", "small_share", "sparse", "text"]
    # a section asks for the same table's counts several times (its verdict, its tables,
    # its flags): counted once per table object (kept alive with its counts, so that its
    # id cannot be reused while it is cached)
    key = (id(df), len(df), base)
    hit = _SPARSE.get(key)
    if hit is not None and hit[0] is df:
        return hit[1].copy()
    if not (df["indicator"] == base).any():
        return pd.DataFrame(columns=cols)
    c = small_cell_counts(df[df["indicator"] == base], sparse_share=SPARSE_SHARE)
    out = pd.DataFrame(
        {
            "region": c["region"].to_numpy(),
            "sex": c["sex"].to_numpy(),
            "cells": c["age_cells"].to_numpy(),
            "small": c["age_cells_under_10_events"].to_numpy(),
            "small_share": c["share_under_10_of_age_cells"].to_numpy(),
            "sparse": c["flag_sparse"].to_numpy(dtype=bool),
            "text": c["text"].to_numpy(),
        }
    )
    while len(_SPARSE) >= 4:
        _SPARSE.pop(next(iter(_SPARSE)))
    _SPARSE[key] = (df, out)
    return out.copy()


_SPARSE: dict = {}


def mc_flag_rows(d: pd.DataFrame, label: str | None) -> list[dict]:
    rows = []
    if "z_flag" not in d:
        return rows
    for _, r in d[d["z_flag"].fillna(False).astype(bool)].iterrows():
        zs = ", ".join(f"{c[2:]} {r[c]:+.1f}" for c in ("z_noise", "z_pois", "z_tot") if np.isfinite(r[c]))
        row = {
            "region": region_label(r["region"], r["region_name"]),
            "sex": r["sex"],
            "where": r["age_group"] or "\u2014",
            "why": f"Monte Carlo sd differs from the analytic sd beyond sampling error (z: {zs})",
        }
        if label is not None:
            row = {"setting": label, **row}
        rows.append(row)
    return rows


def _in_all(cells: int) -> str:
    """``"in all 12 cells compared"``, ``"in the one cell compared"``."""
    return "in the one cell compared" if cells == 1 else f"in all {fmt_int(cells)} cells compared"


def mc_summary(
    df: pd.DataFrame, V: float, indicator: str, *, ages: Sequence[float] | None = None, z_bound: float = 5.0
) -> dict:
    """Agreement of the Monte Carlo and analytic standard deviations at ``V``.

    Returns a dict with ``n`` (replicates, 0 if no Monte Carlo), ``cells`` compared
    (finite z), ``beyond`` (cells with ``|z| > z_bound`` in any component), ``max_abs_z``
    and ``rse`` (relative standard error of an sd from ``n`` replicates,
    ``1 / sqrt(2 n)``), and ``text``: one sentence.
    """
    d = at(df, V, indicator)
    if ages is not None and indicator == "e":
        d = d[np.isin(d["age"].astype(float), np.asarray(ages, float))]
    if "mc_n" not in d or d["mc_n"].isna().all():
        return {
            "n": 0,
            "cells": 0,
            "beyond": 0,
            "max_abs_z": float("nan"),
            "rse": float("nan"),
            "text": f"No Monte Carlo check was run for {INDICATOR_NAMES[indicator]}.",
        }
    n = int(d["mc_n"].dropna().iloc[0])
    z = d[["z_noise", "z_pois", "z_tot"]].abs()
    finite = np.isfinite(z).any(axis=1)
    cells = int(finite.sum())
    beyond = int((z > z_bound).any(axis=1).sum())
    zmax = float(np.nanmax(z.to_numpy())) if cells else float("nan")
    rse = 1.0 / math.sqrt(2.0 * n)
    if beyond == 0:
        text = (
            f"The Monte Carlo check ({fmt_int(n)} replicates) agrees with the analytic standard deviations "
            f"within sampling error {_in_all(cells)}: |z| <= {z_bound:g} everywhere "
            f"(largest |z| = {zmax:.1f}; the relative standard error of a simulated sd is 1/sqrt(2N) = {fmt_pct(rse)})."
        )
    else:
        text = (
            f"The Monte Carlo check ({fmt_int(n)} replicates) disagrees with the analytic standard deviation "
            f"beyond sampling error (|z| > {z_bound:g}) in {plural(beyond, 'cell', 'cells')} of {fmt_int(cells)} "
            f"(largest |z| = {zmax:.1f}); the first-order result is not reliable there (see the flags)."
        )
    return {"n": n, "cells": cells, "beyond": beyond, "max_abs_z": zmax, "rse": rse, "text": text}


@dataclass
class Verdict(MainPoints):
    """Plain-language verdict: sentences with numbers, and the numbers themselves (shown
    as a bullet list, like the report's main points)."""


def indicator_phrase(indicator: str, age: float | None, sex: str) -> str:
    if indicator == "e":
        a = int(age or 0)
        name = "life expectancy at birth (e0)" if a == 0 else f"life expectancy at {a} (e{a})"
    elif indicator == "tfr":
        return "the total fertility rate (TFR)"
    else:
        name = INDICATOR_NAMES[indicator]
    return f"{name}, {_SEX_WORDS.get(sex, sex)}"


def short_name(indicator: str, age: float | None) -> str:
    if indicator == "e":
        return f"e{int(age or 0)}"
    return indicator.upper()


def scalar_verdict(
    df: pd.DataFrame, V: float, indicator: str, *, sex: str | None = None, age: float | None = None
) -> Verdict:
    """Verdict for one number per region (``e`` at ``age``, or ``tfr``) at ``V``.

    Sentences (with the numbers): in how many NUTS 2 regions noise adds less than 10 %
    to the Poisson uncertainty; the smallest region's admixture with both standard
    deviations; the regions where noise reaches the Poisson uncertainty (``A >= 41 %``);
    the country as a whole; regions flagged as sparse.

    ``sex=None`` (default): every region's worst sex (the decision table's and the main
    points' rule, :func:`scalar_rows`), named beside each number; ``"F"``, ``"M"``,
    ``"T"``: that sex alone. The TFR is always women's.
    """
    if indicator == "tfr":
        sex = "F"
    d = scalar_rows(df, V, indicator, sex=sex, age=age)
    short = short_name(indicator, age)
    unit = _UNITS.get(indicator, "")
    u = f" {unit}" if unit else ""
    reg = d[d["nuts_level"] == 2]
    cty = d[d["nuts_level"] == 0]
    v = Verdict()
    if d.empty:
        v.sentences.append(f"No results for {short} {NoiseSetting.of(V).phrase}.")
        return v
    n = len(reg)
    if n:
        low = int((reg["admixture"] < A_SMALL).sum())
        subject = f"{short} ({_SEX_WORDS.get(sex, WORST_WORDS)})" if indicator != "tfr" else short
        if n == 1:
            verb = "adds less than 10 %" if low == 1 else "adds 10 % or more"
            where = "in the country's only NUTS 2 region"
        elif low == 0:
            verb = "adds 10 % or more"
            where = f"in all {n} NUTS 2 regions"
        else:
            verb = "adds less than 10 %"
            where = f"in all {n} NUTS 2 regions" if low == n else f"in {low} of {n} NUTS 2 regions"
        v.sentences.append(
            f"{upper_first(NoiseSetting.of(V).phrase)}, noise {verb} to the statistical (Poisson) uncertainty of "
            f"{subject} {where}."
        )
        small = reg.sort_values("population").iloc[0]
        large = reg.sort_values("population").iloc[-1]
        lead = "In the smallest region" if n > 1 else "In"
        v.sentences.append(
            f"{lead}{',' if n > 1 else ''} {small['label']} ({fmt_int(small['population'])} people), it adds "
            f"{fmt_pct(small['admixture'])}{sex_note(small, sex)}: noise sd {fmt_num(small['sd_noise'], 2)}{u} "
            "against a Poisson sd of "
            f"{fmt_num(small['sd_pois'], 2)}{u} (relative total uncertainty {fmt_pct(small['rel_tot'])})."
        )
        if n > 2:
            v.sentences.append(
                f"In the largest, {large['label']} ({fmt_int(large['population'])} people), it adds "
                f"{fmt_pct(large['admixture'])}{sex_note(large, sex)}."
            )
        worst = reg.loc[reg["admixture"].idxmax()]
        if n > 1 and worst["region"] != small["region"]:
            v.sentences.append(
                f"The largest admixture is in {worst['label']} ({fmt_int(worst['population'])} people): "
                f"{fmt_pct(worst['admixture'])}{sex_note(worst, sex)} "
                f"(noise sd {fmt_num(worst['sd_noise'], 2)}{u}, Poisson sd "
                f"{fmt_num(worst['sd_pois'], 2)}{u})."
            )
        big = reg[reg["admixture"] >= A_EQUAL]
        if len(big):
            names = ", ".join(f"{r['region']}{sex_note(r, sex)}" for _, r in big.sort_values("population").iterrows())
            v.sentences.append(
                "Noise is at least as large as the Poisson uncertainty (A >= 41 %) in "
                f"{plural(len(big), 'region', 'regions')}: {names}."
            )
        v.numbers.update(
            regions=n,
            regions_below_10=low,
            regions_at_least_41=int(len(big)),
            smallest=str(small["region"]),
            smallest_population=float(small["population"]),
            smallest_admixture=float(small["admixture"]),
            smallest_sex=str(small["sex"]),
            worst=str(reg.loc[reg["admixture"].idxmax(), "region"]),
            worst_admixture=float(reg["admixture"].max()),
            worst_sex=str(reg.loc[reg["admixture"].idxmax(), "sex"]),
            worst_rel_noise=float(reg["rel_noise"].max()),
            worst_sd_noise=float(reg.loc[reg["admixture"].idxmax(), "sd_noise"]),
            median_admixture=float(reg["admixture"].median()),
        )
    if len(cty):
        c = cty.iloc[0]
        v.sentences.append(
            f"For {full_name(c['region_name'])} as a whole, noise adds {fmt_pct(c['admixture'])}{sex_note(c, sex)} "
            f"(noise sd {fmt_num(c['sd_noise'], 2)}{u}, Poisson sd {fmt_num(c['sd_pois'], 2)}{u})."
        )
        v.numbers.update(
            country_admixture=float(c["admixture"]), country_sd_noise=float(c["sd_noise"]), country_sex=str(c["sex"])
        )
    sp = sparse_regions(df, V, indicator)
    shown = set(zip(d["region"], d["sex"], strict=True))
    keep = np.array([(r, x) in shown for r, x in zip(sp["region"], sp["sex"], strict=True)], dtype=bool)
    sp = sp[keep & sp["sparse"].to_numpy(dtype=bool)] if len(sp) else sp
    if len(sp):
        v.sentences.append(
            f"First-order results may be unreliable in {plural(len(sp), 'region', 'regions')} where more than "
            "half of the "
            f"single-age cells rest on fewer than 10 events: {', '.join(sp['region'])} (flagged; see the Monte "
            "Carlo check)."
        )
    v.numbers["sparse_regions"] = sp["region"].tolist()
    return v


def age_verdict(df: pd.DataFrame, V: float, indicator: str, *, sex: str | None = None) -> Verdict:
    """Verdict for a by-age indicator (``asfr`` or ``asmr``) at ``V``, over the cells of
    the NUTS 2 regions (the country if it has none): how many cells noise adds less than
    10 % to, the median admixture, the largest admixture overall and among cells with at
    least 10 events, and the cells resting on fewer than 10 events.

    ``sex=None`` (default): the worst sex -- of women, men and both sexes the one whose
    cells have the largest median admixture (ties: women, men, both sexes), named in the
    sentences (``numbers["sex"]``); the ASFR are always women's."""
    who = "" if sex or indicator == "asfr" else f", the {WORST_WORDS}"
    sex = "F" if indicator == "asfr" else sex or _worst_cells_sex(df, V, indicator)
    d = _age_cells(df, V, indicator, sex)
    reg = d[d["nuts_level"] == 2]
    if reg.empty:
        reg = d
    v = Verdict()
    if reg.empty:
        v.sentences.append(f"No results for {INDICATOR_NAMES[indicator]} {NoiseSetting.of(V).phrase}.")
        return v
    one, many = _EVENT_WORDS[indicator]
    n_reg = reg["region"].nunique()
    n_age = reg["age_group"].nunique()
    cells = len(reg)
    low = int((reg["admixture"] < A_SMALL).sum())
    v.sentences.append(
        f"{upper_first(NoiseSetting.of(V).phrase)}, across the {n_age} single-age rates of "
        f"{plural(n_reg, 'region', 'regions')} "
        f"({fmt_int(cells)} cells with {many}, {_SEX_WORDS[sex]}{who}), noise adds less than 10 % to the Poisson "
        "uncertainty in "
        f"{fmt_int(low)} cells ({fmt_pct(low / cells)}); the median admixture is {fmt_pct(reg['admixture'].median())}."
    )
    i = reg["admixture"].idxmax()
    r = reg.loc[i]
    ev = r["events"]
    v.sentences.append(
        f"It is largest at {r['age_group']} in {region_label(r['region'], r['region_name'])}: A = "
        f"{fmt_pct(r['admixture'])}, "
        f"on {fmt_num(ev, 2)} {one if round(ev) == 1 else many}"
        + (" (fewer than 10 events: the first-order result is unreliable there)." if r["small_count"] else ".")
    )
    ceiling = few_event_ceiling(V, ev, float(r["value"]), one, many)
    if ceiling and bool(r["small_count"]):
        v.sentences.append(ceiling)
    big = reg[~reg["small_count"].astype(bool)]
    if len(big) and bool(r["small_count"]):
        j = big["admixture"].idxmax()
        b = big.loc[j]
        v.sentences.append(
            f"Among cells with at least 10 {many}, the largest admixture is {fmt_pct(b['admixture'])} "
            f"({b['age_group']}, {region_label(b['region'], b['region_name'])})."
        )
    small = reg[reg["small_count"].astype(bool)]
    if len(small):
        v.sentences.append(
            f"Of these {fmt_int(cells)} cells with {many}, {fmt_int(len(small))} cells ({fmt_pct(len(small) / cells)}) "
            f"rest on fewer than 10 {many} (1 to 9): their relative total uncertainty has a median of "
            f"{fmt_pct(small['rel_tot'].median())}; the first-order result is unreliable there (open circles in the "
            "charts; the counts of every age cell"
            + (", for women, men and both sexes," if indicator == "asmr" else "")
            + " are in the table of cells resting on few events in Method and data)."
        )
    v.numbers.update(
        cells=cells,
        cells_below_10=low,
        median_admixture=float(reg["admixture"].median()),
        max_admixture=float(r["admixture"]),
        max_admixture_region=str(r["region"]),
        max_admixture_age=str(r["age_group"]),
        max_admixture_reliable=float(big["admixture"].max()) if len(big) else float("nan"),
        small_cells=int(len(small)),
        sex=sex,
    )
    return v


def one_event_ceiling(V: float) -> float:
    """``sqrt(1 + V) - 1``: the admixture of a small rate resting on one event under
    generic noise of variance ``V`` (:func:`few_event_ceiling`); 145 % at ``V = 5``."""
    return math.sqrt(1.0 + float(V)) - 1.0


def few_event_ceiling(V, events: float, rate: float = 0.0, one: str = "event", many: str = "events") -> str:
    """Why the admixture of a cell resting on few events tops out where it does (generic
    noise of variance ``V`` only; ``""`` for a p-table or a cell without events).

    A rate ``m = D / E`` from ``D`` events has the Poisson variance ``D / E^2``; noise of
    variance ``V`` on the count adds ``V / E^2`` and the noise of the population (``E``,
    the mean of two noised stocks: variance ``V / 2``) ``m^2 V / (2 E^2)``. So
    ``A = sqrt(1 + V (1 + m^2 / 2) / D) - 1``, close to ``sqrt(1 + V / D) - 1`` for a
    small rate: for one event at ``V = 5``, ``sqrt(6) - 1 = 145 %``, the ceiling of the
    one-event cells in the charts (a little more where the rate itself is large).
    """
    setting = NoiseSetting.of(V)
    if not setting.is_generic or not np.isfinite(events) or events <= 0:
        return ""
    v, d = float(setting.V), float(events)
    m = float(rate) if np.isfinite(rate) else 0.0
    here = math.sqrt(1.0 + v * (1.0 + m * m / 2.0) / d) - 1.0
    return (
        f"For a rate m from D {many} with noise of variance V on every count, A = \u221a(1 + V (1 + m\u00b2/2) / D) "
        f"\u2212 1, close to \u221a(1 + V / D) \u2212 1 for a small rate: here {fmt_pct(here)} (D = {fmt_num(d, 2)}, "
        f"m = {fmt_num(m, 3)}); cells resting on one {one} top out near \u221a(1 + {fmt_num(v, 3)}) \u2212 1 = "
        f"{fmt_pct(one_event_ceiling(v))}, the ceiling of the admixture in the charts."
    )


def _age_cells(df: pd.DataFrame, V, indicator: str, sex: str) -> pd.DataFrame:
    """The finite cells with a Poisson variance of one sex at ``V``."""
    d = at(df, V, indicator, sex=sex)
    return d[np.isfinite(d["value"]) & (d["var_pois"] > 0)]


def _worst_cells_sex(df: pd.DataFrame, V, indicator: str) -> str:
    """Of F, M, T the sex whose NUTS 2 cells (all cells without them) have the largest
    median admixture; ``"T"`` when no sex has cells."""
    best, top = "T", -np.inf
    for x in SEXES:
        d = _age_cells(df, V, indicator, x)
        reg = d[d["nuts_level"] == 2] if (d["nuts_level"] == 2).any() else d
        med = float(reg["admixture"].median()) if len(reg) else -np.inf
        if med > top:
            best, top = x, med
    return best


def index_metrics(df: pd.DataFrame, V: float, indicator: str = "e") -> dict:
    """The numbers the index page shows for one (country, V), from one section.

    ``indicator="e"`` (life expectancy section): number of NUTS 2 regions, the worst
    region for e0 (largest admixture of every region's worst sex, :func:`scalar_rows`
    with ``sex=None``) with its population, that sex, relative noise sd, noise sd
    (years) and admixture, and the median admixture of e0 over regions.
    ``indicator="tfr"``: the largest relative noise sd and admixture of the TFR over
    NUTS 2 regions and where the admixture is largest. Keys are distinct between the
    two, so the payloads of both sections merge.
    """
    out: dict[str, Any] = {}
    if indicator == "e":
        reg = scalar_rows(df, V, "e", sex=None, age=0)
        nuts2 = reg[reg["nuts_level"] == 2]
        out["regions"] = int(len(nuts2))
        if len(nuts2):
            w = nuts2.loc[nuts2["admixture"].idxmax()]
            out.update(
                e0_worst_region=str(w["region"]),
                e0_worst_region_population=float(w["population"]),
                e0_worst_sex=str(w["sex"]),
                e0_rel_noise_worst=float(w["rel_noise"]),
                e0_sd_noise_worst=float(w["sd_noise"]),
                e0_admixture_worst=float(w["admixture"]),
                e0_admixture_median=float(nuts2["admixture"].median()),
            )
    elif indicator == "tfr":
        t = scalar_rows(df, V, "tfr")
        t2 = t[t["nuts_level"] == 2]
        if len(t2):
            out.update(
                tfr_rel_noise_worst=float(t2["rel_noise"].max()),
                tfr_admixture_worst=float(t2["admixture"].max()),
                tfr_worst_region=str(t2.loc[t2["admixture"].idxmax(), "region"]),
            )
    else:
        raise ParameterError(f"index metrics exist for 'e' and 'tfr', not {indicator!r}")
    return out


def across_settings(
    df: pd.DataFrame, indicator: str, *, sex: str = "T", age: float | None = None, nuts_level: int | None = 2
) -> pd.DataFrame:
    """Rows of one indicator (one sex, one age) for every noise setting of the table, with
    their ``setting`` label: what :func:`demonoise.report.content.charts.uncertainty_vs_population` draws."""
    if indicator in ("tfr", "asfr"):
        sex = "F"
    m = (df["indicator"] == indicator) & (df["sex"] == sex)
    if age is not None:
        m &= np.isclose(df["age"].astype(float), float(age))
    if nuts_level is not None and (df["nuts_level"] == nuts_level).any():
        m &= df["nuts_level"] == nuts_level
    out = df[m].copy()
    out["setting"] = setting_labels(out)
    return out


def single_region(df: pd.DataFrame) -> bool:
    """Whether the results are of a country that is one NUTS 2 region (LU, MT): its tables
    have one row per setting and are shown once across the settings."""
    return "nuts_level" in df and df.loc[df["nuts_level"] == 2, "region"].nunique() <= 1


#: The class of a cell without events (no Poisson variance: the admixture is undefined).
NO_EVENTS = "no events"


def row_region_labels(df: pd.DataFrame) -> np.ndarray:
    """``"FR10 Ile-de-France"`` per row (the name's first part, at most 28 characters),
    worked out once per distinct region and name (a chart's rows repeat each many times)."""
    rc, regions = pd.factorize(df["region"].astype(str))
    nc, names = pd.factorize(df["region_name"].fillna("").astype(str))
    _, first, inverse = np.unique(rc * max(len(names), 1) + nc, return_index=True, return_inverse=True)
    labels = []
    for k in first:
        c, n = regions[rc[k]], names[nc[k]].split("/")[0][:28]
        labels.append(f"{c} {n}" if n else c)
    return np.asarray(labels, dtype=object)[inverse.reshape(-1)]


def by_population(df: pd.DataFrame) -> list[str]:
    """Region labels (:func:`row_region_labels`): the country first, then regions by falling
    population.

    Population: the exposure summed over the rows' ages (ASMR, ASFR: the population,
    or the women 15-49), except for life expectancy, whose exposure at age k already
    counts everyone aged k or more (its largest value is the population)."""
    d = df[[c for c in ("region", "region_name", "nuts_level", "exposure", "indicator") if c in df]].copy()
    d["region_label"] = row_region_labels(d)
    how = "max" if "indicator" in d and (d["indicator"] == "e").all() else "sum"
    key = d.groupby("region_label").agg(
        level=("nuts_level", "first") if "nuts_level" in d else ("region", "size"), exposure=("exposure", how)
    )
    key = key.sort_values(["level", "exposure"], ascending=[True, False], kind="stable")
    return key.index.tolist()


def panel_rows(df: pd.DataFrame, most: int) -> tuple[pd.DataFrame, bool]:
    """The rows of at most ``most`` regions: the country, the largest region and the
    smallest ones (where noise weighs most); ``True`` when some were left out."""
    order = by_population(df)
    if len(order) <= most:
        return df, False
    keep = set(order[:2]) | set(order[-(most - 2) :])
    labels = pd.Series(row_region_labels(df), index=df.index)
    return df[labels.isin(keep)], True


def _with_age_ends(d: pd.DataFrame) -> pd.DataFrame:
    """Rows with a finite age, each with ``age_end``: the next age present (the last one
    extended by the last step, or by 1), so that a rectangle spans its age group."""
    ages = np.sort(d["age"].dropna().unique())
    steps = np.diff(ages)
    ends = np.append(ages[1:], ages[-1] + (steps[-1] if len(steps) else 1.0)) if len(ages) else ages
    d = d.assign(age_end=d["age"].map(dict(zip(ages, ends, strict=False))))
    return d[np.isfinite(d["age"])]


def _runs(d: pd.DataFrame, key: str) -> pd.DataFrame:
    """Runs of consecutive ages with the same ``key`` within each region: one row per run
    with its first age and the end of its last age interval (``age``, ``age_end``)."""
    d = d.sort_values(["region_label", "age"], kind="stable")
    new = (d[key] != d[key].shift()) | (d["region_label"] != d["region_label"].shift())
    g = d.groupby(new.cumsum(), sort=False)
    return pd.DataFrame(
        {
            "region_label": g["region_label"].first(),
            key: g[key].first(),
            "age": g["age"].min(),
            "age_end": g["age_end"].max(),
            "cells": g.size(),
            "A_min": g["A"].min(),
            "A_max": g["A"].max(),
        }
    ).reset_index(drop=True)


def admixture_runs(df: pd.DataFrame, settings: Sequence[str]) -> pd.DataFrame:
    """Runs of consecutive ages in one admixture class, per region and setting (in the
    order of ``settings``, labels of the ``setting`` column): ``region_label, A_class, age,
    age_end, cells, A_min, A_max, setting`` (``A`` in %). The classes are the vocabulary's
    (:data:`~demonoise.core.vocabulary.ADMIXTURE_CLASSES`, closed on the left), or
    :data:`NO_EVENTS` where the admixture is not finite."""
    d = df[[c for c in ("region", "region_name", "age", "admixture", "setting") if c in df]].copy()
    d["A"] = 100.0 * d["admixture"]
    d["region_label"] = row_region_labels(d)
    bins = [100 * c.lower for c in ADMIXTURE_CLASSES] + [np.inf]
    labels = [c.label for c in ADMIXTURE_CLASSES]
    d["A_class"] = pd.cut(d["A"], bins=bins, labels=labels, right=False).astype(str)
    d.loc[~np.isfinite(d["A"]), "A_class"] = NO_EVENTS
    d = _with_age_ends(d)
    runs = [_runs(d[d["setting"] == s], "A_class").assign(setting=s) for s in settings]
    return pd.concat(runs, ignore_index=True)


def flagged_rows(df: pd.DataFrame, V, indicator: str, *, sex: str = "T", age: float | None = None) -> pd.DataFrame:
    """:func:`scalar_rows` with the flags of the first-order result: ``small_share`` of the
    region's age cells resting on fewer than 10 events, ``sparse`` (over
    :data:`SPARSE_SHARE`), ``z_flag`` (Monte Carlo disagreement; False without one) and
    ``flag``, their text (:func:`flag_text`)."""
    d = scalar_rows(df, V, indicator, sex=sex, age=age)
    sp = sparse_regions(df, V, indicator)
    key = "F" if indicator == "tfr" else sex
    share = sp[sp["sex"] == key].set_index("region")["small_share"] if len(sp) else pd.Series(dtype=float)
    d["small_share"] = d["region"].map(share).astype(float)
    d["sparse"] = d["small_share"] > SPARSE_SHARE
    if "z_flag" not in d:
        d["z_flag"] = False
    d["flag"] = [flag_text(r) for _, r in d.iterrows()]
    return d


def headline_band_rows(
    df: pd.DataFrame, bands: pd.DataFrame, V, headline: str
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """A headline's rows at one setting (both sexes; the TFR: women) with their error bands.

    Returns
    -------
    DataFrame
        Per region its :func:`flagged_rows` (without ``data_status``) joined with its error
        bands (:func:`demonoise.analysis.decision.headline_bands`) at their first level: ``level``,
        ``z``, the half-widths, the noise interval and, when run, the Monte Carlo's quantiles.
    DataFrame
        Those error bands, every column, indexed by region in the same order.
    float
        That level (0.95 without error bands).
    """
    hl = HEADLINES[headline]
    d = flagged_rows(df, V, hl.indicator, sex="F" if hl.female_only else "T", age=hl.age)
    b = headline_bands(bands, headline, V)
    level = float(b["level"].min()) if len(b) else 0.95
    b = b[b["level"] == level].drop_duplicates("region").set_index("region").reindex(d["region"])
    cols = ["region", "level", "z", "half_pois", "half_noise", "half_tot", "lo_noise", "hi_noise"]
    if "mc_n" in b and b["mc_n"].notna().any():
        cols += ["mc_n", "mc_lo_noise", "mc_hi_noise", "mc_lo_tot", "mc_hi_tot"]
    rows = d.drop(columns=["data_status"], errors="ignore").merge(b.reset_index()[cols], on="region", how="left")
    return rows, b, level


def flag_rows(
    df: pd.DataFrame, V, indicator: str, *, ages: Sequence[float] | None = None, settings: Sequence | None = None
) -> pd.DataFrame:
    """Where the first-order result of ``indicator`` is unreliable, one row per flag:
    sparse regions (``where`` "all ages"; the counts do not depend on the setting) and
    cells whose Monte Carlo sd disagrees with the analytic one at ``V`` -- or, with
    ``settings``, at every setting (a ``setting`` column, the sparse rows "every
    setting"). Columns ``[setting,] region, sex, where, why``."""
    every = settings is not None
    rows = []
    sp = sparse_regions(df, V, indicator)
    names = df.drop_duplicates("region").set_index("region")["region_name"]
    for _, r in sp[sp["sparse"]].iterrows():
        row = {
            "region": region_label(r["region"], names.get(r["region"], "")),
            "sex": r["sex"],
            "where": "all ages",
            "why": r["text"].split(": ", 1)[-1],
        }
        rows.append({"setting": "every setting", **row} if every else row)
    for x in settings if every else [V]:
        d = at(df, x, indicator)
        if ages is not None and indicator in ("e",):
            d = d[np.isin(d["age"].astype(float), np.asarray(ages, float))]
        rows += mc_flag_rows(d, NoiseSetting.of(x).label if every else None)
    cols = (["setting"] if every else []) + ["region", "sex", "where", "why"]
    return pd.DataFrame(rows, columns=cols)


def mc_settings(df: pd.DataFrame, settings: Sequence, indicator: str, *, ages: Sequence[float] | None = None) -> str:
    """The Monte Carlo check of every setting in one place (Markdown): one sentence when it
    agrees with the analytic standard deviations at every setting, else each setting's
    sentence (:func:`mc_summary`)."""
    sets = [NoiseSetting.of(s) for s in settings]
    checks = [mc_summary(df, s, indicator, ages=ages) for s in sets]
    if all(c["n"] == 0 for c in checks):
        return checks[0]["text"]
    if not all(c["n"] > 0 and c["beyond"] == 0 for c in checks):
        return "\n".join(f"- **{s.label}**: {c['text']}" for s, c in zip(sets, checks, strict=True))
    cells = {c["cells"] for c in checks}
    n = cells.pop() if len(cells) == 1 else 0
    each = "the one cell compared" if n == 1 else f"all {fmt_int(n)} cells compared" if n else "every cell compared"
    return (
        f"At every setting the Monte Carlo check ({fmt_int(checks[0]['n'])} replicates) agrees with the analytic "
        f"standard deviations within sampling error in {each}: |z| <= 5 everywhere (largest |z| = "
        f"{max(c['max_abs_z'] for c in checks):.1f}; the relative standard error of a simulated sd is 1/sqrt(2N) = "
        f"{fmt_pct(checks[0]['rse'])})."
    )


def age_verdict_shown(v: Verdict, *, first: bool, one_region: bool) -> Verdict:
    """A by-age verdict (:func:`age_verdict`) as a setting's subsection shows it: what
    differs between the settings. The sentence on the cells resting on fewer than 10 events
    (the same cells at every setting, last) only in the first setting's subsection; for a
    country of one region only the first sentence (the largest admixtures are in the table
    of every setting)."""
    said = list(v.sentences)
    tail = [said.pop()] if v.numbers.get("small_cells", 0) and len(said) > 1 else []
    return Verdict(said[: 1 if one_region else None] + (tail if first else []), dict(v.numbers))


#: Sentences of a one-number verdict a setting's subsection leaves out: the largest region
#: (its figures are in the table of every setting) and, after the first setting, the regions
#: resting on few events (the same at every setting).
_IN_THE_TABLE, _SAID_ONCE = ("In the largest, ",), ("First-order results may be unreliable",)


def scalar_verdict_shown(v: Verdict, *, first: bool) -> Verdict:
    """A one-number verdict (:func:`scalar_verdict`) as a setting's subsection shows it:
    what differs between the settings (see :data:`_SAID_ONCE`, :data:`_IN_THE_TABLE`)."""
    drop = _IN_THE_TABLE + (() if first else _SAID_ONCE)
    return Verdict([x for x in v.sentences if not x.startswith(drop)], dict(v.numbers))


def age_words(code: str, indicator: str) -> str:
    """An age group's code in words: ``Y_LT1`` -> "under 1", ``Y_GE85`` -> "85 and over",
    ``Y40`` -> "age 40"; for life expectancy the indicator at that age: "e0 (at birth)",
    "e65". Other text is returned as it is."""
    if code == "Y_LT1":
        return "e0 (at birth)" if indicator == "e" else "under 1"
    m = re.fullmatch(r"Y_GE(\d+)|Y_OPEN|Y(\d+)", str(code))
    if not m:
        return code
    if m.group(2):
        return f"e{m.group(2)}" if indicator == "e" else f"age {m.group(2)}"
    return f"{m.group(1)} and over" if m.group(1) else "the open age group"
