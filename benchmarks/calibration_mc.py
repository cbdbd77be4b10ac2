"""Monte Carlo check of the calibrated V at every threshold (the figures quoted in the report).

For three Belgian regions of very different size (real deaths 2021, population on
1 January 2021/2022: BE10 total, BE34 women, and BE34 total with population and deaths
scaled by 0.1, integer-rounded) and both publication granularities, the generic-model
V* of e0 for the thresholds 0.1, 0.5 and 1.0 is computed in closed form; a Monte Carlo
at V* with N replicates (common random numbers: the 'poisson' and 'total' components
share the Poisson draws) then gives A_MC = sd_total / sd_poisson - 1. The test suite
runs the threshold 0.5 only (tests/test_calibration.py).

    PYTHONPATH=lib:tests .venv/bin/python benchmarks/calibration_mc.py [N]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from _fixtures_lifetable import belgian_counts
from demonoise.core.vocabulary import CALIBRATION_THRESHOLDS
from demonoise.noise.models import GenericNoise
from demonoise.uncertainty.calibration import calibrate_linearised
from demonoise.uncertainty.montecarlo import monte_carlo
from demonoise.uncertainty.propagation import linearise

THRESHOLDS = CALIBRATION_THRESHOLDS
CASES = [("BE10", 1.0, "T"), ("BE34", 1.0, "F"), ("BE34", 0.1, "T")]


def _scaled(a, factor: float):
    return np.rint(a * factor).astype(np.int64)


def main(n: int = 100_000) -> None:
    be = belgian_counts(Path(__file__).resolve().parents[1] / "tests" / "data")
    print(
        f"{'region':<10} {'sex':<3} {'people':>9} {'gran':<6} {'A*':>4} {'V*':>10} {'A_MC':>7} {'diff pp':>8} {'s':>6}"
    )
    for code, factor, sex in CASES:
        c = be.select([code])
        if factor != 1.0:
            c = c.replace(
                pop_start=_scaled(c.pop_start, factor),
                pop_end=_scaled(c.pop_end, factor),
                deaths=_scaled(c.deaths, factor),
            )
        s = "FMT".index(sex)
        for gran in ("single", "5y"):
            lz = linearise(c, granularity=gran, indicators=("e",), e_ages=[0])
            df = calibrate_linearised(lz, THRESHOLDS)
            for a in THRESHOLDS:
                V = float(df[(df.sex == sex) & (df.threshold == a)].V_max.iloc[0])
                t0 = time.perf_counter()
                mc = monte_carlo(
                    lz,
                    GenericNoise(V),
                    n=n,
                    seed=20230101,
                    indicators=("e",),
                    components=("poisson", "total"),
                    quantiles=None,
                )
                dt = time.perf_counter() - t0
                A = mc.stats[("e", "total")]["sd"][0, s, 0] / mc.stats[("e", "poisson")]["sd"][0, s, 0] - 1
                name = code + ("" if factor == 1 else f"x{factor:g}")
                print(
                    f"{name:<10} {sex:<3} {int(c.pop_start[0, s].sum()):>9} {gran:<6} {a:>4g} {V:>10.4f} {A:>7.4f} "
                    f"{100 * (A - a):>+8.2f} {dt:>6.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
