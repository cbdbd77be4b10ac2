"""The done-when figures of the embedded datasets (the numbers quoted in the report).

Rebuilds ``be-2023`` and ``ess-2023`` in memory from ``data-raw/eurostat`` (timed), then
prints: coverage; 5-year sums vs demo_r_pjangroup; calibration errors of the expected
(pre-draw) schedules against the published e0/e65; the distribution of
``z = (e0(drawn) - e0(expected)) / sd_Poisson``; Belgium's real 2023 e0 against its
2019 target; births sums against demo_fordagec; the national TFR over graduated vs
real single-age exposure; the regional fertility rule (modelled 2023 TFR against its
target and the published 2022 TFR, Spearman correlation, Mayotte and Guyane) and the
national TFR cross-check of demo_r_find3; file sizes.

    PYTHONPATH=lib:tests .venv/bin/python benchmarks/datasets_figures.py
"""

from __future__ import annotations

import time

import numpy as np

import _fixtures_datasets as fx
from demonoise.core.counts import AgeAxis
from demonoise.core.layout import Layout
from demonoise.demography.indicators import life_expectancy, tfr
from demonoise.uncertainty.propagation import linearise, poisson_cell_variance
from demonoise_build import build as bd


def calibration_errors(parts):
    """max |e(expected schedule) - target| for e0 and e65 over modelled regions, (R, 2, 2)."""
    c = parts.counts.select(parts.codes)
    mi = np.flatnonzero(parts.modelled)
    lay = Layout.of(c)
    lt = life_expectancy(lay, parts.expected_deaths[mi], c.pop_start[mi, :2], c.pop_end[mi, :2])
    e = np.stack([lt.e[..., 0], lt.e[..., 65]], axis=-1)
    targets, how = fx.calibration_targets([parts.codes[i] for i in mi])
    return e - targets, how


def poisson_z(parts):
    """z = (e0 drawn - e0 expected) / analytic Poisson sd, (Rm, 2) for F, M."""
    c = parts.counts.select([parts.codes[i] for i in np.flatnonzero(parts.modelled)])
    lz = linearise(c, indicators=("e",), e_ages=[0])
    blk = lz.blocks["e"]
    sd = np.sqrt(blk.lin.variance(poisson_cell_variance(lz, False)))[:, :2, 0]
    e_drawn = blk.lin.value[:, :2, 0]
    lay = Layout.of(c)
    e_exp = life_expectancy(lay, parts.expected_deaths[parts.modelled], c.pop_start[:, :2], c.pop_end[:, :2]).e[..., 0]
    return (e_drawn - e_exp) / sd, sd, c.codes


def _quantiles(x, qs=(50, 90, 99, 100)) -> str:
    return " ".join(f"{q}% {v:.4f}" for q, v in zip(qs, np.percentile(x, qs), strict=True))


def regional_fertility(parts):
    """The regional fertility rule's figures: modelled 2023 TFR against its target and against
    the published 2022 TFR, the Spearman correlation with the published 2022 TFR (and the
    rule's own ceiling, that of the targets), the done-when checks."""
    from scipy.stats import spearmanr

    c = parts.counts
    f = parts.fertility
    T = tfr(Layout.of(c), c.births, c.pop_start[:, 0], c.pop_end[:, 0])
    rows = [c.region_index(k) for k in f.codes]
    mod, tgt, pub = T[rows], f.target, f.published
    n = c.births[rows].sum(axis=1)
    big = n >= 2000
    d_t, d_p = np.abs(mod - tgt), np.abs(mod - pub)
    rel = np.abs(mod / tgt - 1)
    z = d_t / (tgt / np.sqrt(n))
    print(f"{c.name}: regional TFR 2023 ({len(rows)} NUTS 2 regions; {int(big.sum())} with >= 2 000 births)")
    print(f"  |modelled - target|        quantiles {_quantiles(d_t)}")
    print(f"  |modelled - target| / target         {_quantiles(rel)}")
    print(f"  |modelled - published 2022| quantiles {_quantiles(d_p)}")
    print(
        f"  >= 2 000 births: max relative gap {100 * rel[big].max():.2f} % (bound 2 %) "
        f"at {f.codes[int(np.argmax(np.where(big, rel, 0)))]}"
        + (f"; < 2 000 births: max |z| {z[~big].max():.2f} Poisson sd (bound 3)" if (~big).any() else "")
    )
    if len(rows) > 2:
        rho = spearmanr(mod, pub).statistic
        ceiling = spearmanr(tgt, pub).statistic
        print(
            f"  Spearman(modelled 2023, published 2022) {rho:.4f}; "
            f"the rule's ceiling Spearman(target, published) {ceiling:.4f}"
        )
    for k in ("FRY1", "FRY2", "FRY3", "FRY4", "FRY5"):
        if k in f.codes:
            i = f.codes.index(k)
            print(f"  {k}: modelled {mod[i]:.3f} target {tgt[i]:.3f} published 2022 {pub[i]:.2f} ({n[i]} births)")
    print(f"  regions without a published 2022 TFR: {f.missing or 'none'}")


def main():
    t0 = time.perf_counter()
    raw = bd.read_raw()
    t1 = time.perf_counter()
    parts = {n: bd.build_parts(n, raw) for n in bd.NAMES}
    t2 = time.perf_counter()
    print(f"read raw {t1 - t0:.1f} s, build both in memory {t2 - t1:.1f} s")
    ess = parts["ess-2023"]
    c = ess.counts
    print(
        f"ess-2023: {len(ess.codes)} NUTS 2 regions, {len(ess.countries)} countries, {len(c.regions)} rows of regions"
    )

    # 5-year sums
    g5 = c.select(ess.codes).regroup(ages=AgeAxis.five_year(85))
    real = fx.pjangroup_cube(ess.codes, 2023)
    print("5-year sums 2023 vs demo_r_pjangroup: max |diff| =", np.nanmax(np.abs(g5.pop_start - real)))
    print(
        "T = F + M everywhere:",
        all(np.array_equal(a[:, 2], a[:, 0] + a[:, 1]) for a in (c.pop_start, c.pop_end, c.deaths)),
    )

    # calibration
    err, how = calibration_errors(ess)
    print(
        "calibration (expected schedule vs target), "
        f"max |e0 err| F {np.abs(err[:, 0, 0]).max():.4f} M {np.abs(err[:, 1, 0]).max():.4f}; "
        f"max |e65 err| F {np.abs(err[:, 0, 1]).max():.4f} M {np.abs(err[:, 1, 1]).max():.4f}  (targets: {how})"
    )

    # Poisson coverage
    z, sd, codes = poisson_z(ess)
    a = np.abs(z)
    print(
        f"Poisson check e0 (drawn vs expected), {z.size} region-sexes: "
        f"within 3 sd {100 * np.mean(a < 3):.2f} %, within 2 sd "
        f"{100 * np.mean(a < 2):.2f} %, within 1 sd {100 * np.mean(a < 1):.2f} % (normal: 99.73 / 95.45 / 68.27)"
    )
    print(
        "  z quantiles 1/5/25/50/75/95/99 %:",
        " ".join(f"{q:+.2f}" for q in np.percentile(z, [1, 5, 25, 50, 75, 95, 99])),
        f"mean {z.mean():+.3f} sd {z.std():.3f}; "
        f"max |z| {a.max():.2f} at {codes[np.unravel_index(a.argmax(), a.shape)[0]]}",
    )
    print(f"  Poisson sd of e0: median {np.median(sd):.3f} y, range {sd.min():.3f}..{sd.max():.3f} y")

    # Belgium: real 2023 vs 2019 targets
    be = parts["be-2023"].counts
    lay = Layout.of(be)
    e = life_expectancy(lay, be.deaths, be.pop_start, be.pop_end).e
    tgt, _ = fx.calibration_targets(be.codes[1:])
    print("Belgium real 2023 e0 (from the embedded deaths) vs 2019 published (demo_r_mlifexp):")
    for i, code in enumerate(be.codes[1:], start=1):
        print(
            f"  {code}: F {e[i, 0, 0]:.2f} vs {tgt[i - 1, 0, 0]:.1f} ({e[i, 0, 0] - tgt[i - 1, 0, 0]:+.2f}); "
            f"M {e[i, 1, 0]:.2f} vs {tgt[i - 1, 1, 0]:.1f} ({e[i, 1, 0] - tgt[i - 1, 1, 0]:+.2f})"
        )

    # births
    print("births: regional sums vs demo_fordagec 2023 after the rule:")
    bad = []
    for cc in ess.countries:
        rule = fx.national_births_rule(cc)
        regs = [i for i, code in enumerate(c.codes) if code[:2] == cc and len(code) == 4]
        s = c.births[regs].sum(axis=0)
        if rule is None:
            print(f"  {cc}: no complete 2023 data (fallback) -> total {s.sum()}")
        elif not np.array_equal(s, rule):
            bad.append(cc)
    print(f"  countries with complete 2023 data and a mismatch: {bad or 'none'}")

    # TFR
    print("national TFR 2023: graduated exposure (ess-2023 country rows) vs real single-age exposure")
    pj = fx.pjan_national()
    lay_e = Layout.of(c)
    for cc in ("BE", "DE", "ES", "FR", "IT", "PL"):
        i = c.region_index(cc)
        t_g = tfr(lay_e, c.births[i], c.pop_start[i, 0], c.pop_end[i, 0])
        if cc == "BE":
            ri = fx.long_be(fx.D2JAN, 2023, be.codes[1:], ("F",)).sum(0)[0]
            re = fx.long_be(fx.D2JAN, 2024, be.codes[1:], ("F",)).sum(0)[0]
            t_r = tfr(Layout.of(be), c.births[i], ri, re)
        else:
            j = pj.region_index(cc)
            t_r = tfr(Layout(pj.ages, c.birth_ages), c.births[i], pj.pop_start[j, 0], pj.pop_end[j, 0])
        print(f"  {cc}: graduated {t_g:.4f}  real {t_r:.4f}  diff {t_g - t_r:+.5f}")

    # regional fertility
    for name in ("ess-2023", "be-2023"):
        regional_fertility(parts[name])
    print("\n".join(bd.cross_check_lines(ess.meta["fertility"]["cross_check"])))

    # sizes and full build time
    out = bd.default_out_dir()
    for n in bd.NAMES:
        for ext in (".csv.gz", ".npz", ".json"):
            p = out / f"{n}{ext}"
            print(f"  {p.name}: {p.stat().st_size} bytes")
    print(
        f"  total {sum((out / f'{n}{e}').stat().st_size for n in bd.NAMES for e in ('.csv.gz', '.npz', '.json'))} bytes"
    )


if __name__ == "__main__":
    main()
