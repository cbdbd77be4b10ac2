"""A small hand-made results frame: one country (XX) and three NUTS 2 regions with chosen
variances (Var_noise / Var_pois = 0.21 gives A = 10 %% exactly, 3 gives A = 100 %%), for the
tests of the verdicts and of the report tables."""

from __future__ import annotations

import math

import pandas as pd

E0_RATIO = {"XX": 0.0201, "XX01": 0.0201, "XX02": 0.21 * 0.25, "XX03": 3.0}  # A: 1 %, 1 %, ~2.6 %, 100 %


def results_row(region, indicator, sex, age, value, events, exposure, var_pois, var_noise, **fields) -> dict:
    """One row of a results table (the columns ``compute`` writes) from its variances: the
    sds, relative sds and admixture derived as the library defines them; ``fields``
    override any column (name, level, country, dataset, V, ...)."""
    var_tot = var_pois + var_noise
    r = {
        "dataset": "hand-made",
        "data_status": "demonstration data: invented for a test",
        "noise_model": "generic",
        "ptable": "",
        "zero_floor": False,
        "granularity": "single",
        "V": 1.0,
        "region": region,
        "region_name": region,
        "nuts_level": 2,
        "country": region[:2],
        "sex": sex,
        "indicator": indicator,
        "age": age,
        "age_group": "" if age is None or (isinstance(age, float) and math.isnan(age)) else f"Y{int(age)}",
        "value": value,
        "events": events,
        "exposure": exposure,
        "var_pois": var_pois,
        "var_noise": var_noise,
        "var_tot": var_tot,
        "sd_pois": math.sqrt(var_pois),
        "sd_noise": math.sqrt(var_noise),
        "sd_tot": math.sqrt(var_tot),
        "rel_pois": math.sqrt(var_pois) / value,
        "rel_noise": math.sqrt(var_noise) / value,
        "rel_tot": math.sqrt(var_tot) / value,
        "admixture": math.sqrt(1 + var_noise / var_pois) - 1 if var_pois > 0 else math.inf,
        "bias_noise": 0.0,
        "small_count": events < 10,
    }
    return r | fields


def _row(region, name, level, indicator, sex, age, value, events, exposure, var_pois, ratio, V=1.0, **extra):
    # the admixture from the ratio itself, so that 0.21 gives exactly A = sqrt(1.21) - 1
    fields = {"region_name": name, "nuts_level": level, "country": "XX", "V": V, "admixture": math.sqrt(1 + ratio) - 1}
    return results_row(
        region, indicator, sex, age, value, events, exposure, var_pois, var_pois * ratio, **fields, **extra
    )


REGIONS = [  # code, name, level, population
    ("XX", "Testland", 0, 3_000_000.0),
    ("XX01", "Big/Grand", 2, 2_000_000.0),
    ("XX02", "Middle", 2, 900_000.0),
    ("XX03", "Tiny", 2, 100_000.0),
]


def frame(mc: bool = False) -> pd.DataFrame:
    rows = []
    for code, name, level, pop in REGIONS:
        extra = {}
        if mc:
            # z beyond 5 only in the tiny region
            z = 7.0 if code == "XX03" else 1.0
            extra = {"mc_n": 1000, "mc_sd_tot": 0.0, "z_noise": z, "z_pois": 0.5, "z_tot": -0.5, "z_flag": abs(z) > 5}
        rows.append(_row(code, name, level, "e", "T", 0.0, 80.0, pop / 100, pop, 0.01, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "e", "F", 0.0, 83.0, pop / 200, pop / 2, 0.02, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "e", "M", 0.0, 78.0, pop / 200, pop / 2, 0.02, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "tfr", "F", float("nan"), 1.5, pop / 90, pop / 4, 1e-4, 0.0201, **extra))
        # mortality rates: 4 ages; the tiny region has 3 of 4 cells below 10 deaths
        for age, ev in enumerate([200.0, 50.0, 12.0, 900.0] if code != "XX03" else [2.0, 1.0, 5.0, 40.0]):
            rows.append(
                _row(
                    code,
                    name,
                    level,
                    "asmr",
                    "T",
                    float(age),
                    ev / pop,
                    ev,
                    pop,
                    (ev / pop) ** 2 / ev,
                    0.21 if ev >= 10 else 3.0,
                )
            )
    df = pd.DataFrame(rows)
    if mc:
        df["z_flag"] = df["z_flag"].fillna(False).astype(bool)
    return df
