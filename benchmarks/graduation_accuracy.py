"""Graduation accuracy on real single-age data (the numbers quoted in the report).

Aggregates real single-age population (Eurostat demo_r_d2jan: 11 Belgian NUTS 2
regions; demo_pjan: DE, ES, FR, IT, PL; 1 January 2023) to 5-year groups 0-4..80-84,
graduates them back to single ages 0..84 with every method, rounds to integers
(group totals kept), and reports the mean absolute percentage error over ages 5-79
(MAPE, %) against the real single ages. Then the national TFR 2023 check on real,
graduated and uniformly split female exposure.

    PYTHONPATH=lib:tests .venv/bin/python benchmarks/graduation_accuracy.py
"""

from __future__ import annotations

import numpy as np

from _fixtures_graduation import load_be_d2jan, load_fordagec, load_pjan
from demonoise_build.graduation import METHODS, graduate, group_sums

LOWER = np.arange(0, 85, 5)
AGES = slice(5, 80)


def mape(est, real):
    return 100 * np.mean(np.abs(est[..., AGES] - real[..., AGES]) / real[..., AGES], axis=-1)


def grad(pop85, method):
    return graduate(group_sums(pop85), LOWER, method=method, integer=True)


def tfr(births, unk, W):
    """TFR = sum_{x=15}^{49} b_x / W_x, UNK spread over 15-49 in proportion; births
    outside 15-49 (TOTAL - UNK - sum) left out."""
    b = births * (1 + unk[:, None] / births.sum(-1, keepdims=True))
    return np.sum(b / W, axis=-1)


def main():
    be, cc = load_be_d2jan(), load_pjan()
    print("MAPE (%) ages 5-79, integer graduation of 2023 population, sexes F M T")
    hdr = f"{'case':10s} {'sex':3s} " + " ".join(f"{m:>8s}" for m in METHODS)
    print(hdr)
    for s, sex in enumerate("FMT"):
        real = be.year(2023)[:, s, :85]
        res = {}
        for m in METHODS:
            res[m] = mape(grad(real, m), real)
        print(f"{'BE pooled':10s} {sex:3s} " + " ".join(f"{res[m].mean():8.3f}" for m in METHODS))
        print(f"{'BE worst':10s} {sex:3s} " + " ".join(f"{res[m].max():8.3f}" for m in METHODS))
    for s, sex in enumerate("FMT"):
        real = cc.year(2023)[:, s, :85]
        res = {m: mape(grad(real, m), real) for m in METHODS}
        for i, c in enumerate(cc.codes):
            print(f"{c:10s} {sex:3s} " + " ".join(f"{res[m][i]:8.3f}" for m in METHODS))
    # per-region BE detail for the default and uniform
    print("\nBE per region (2023), MAPE %: mono / sprague / uniform")
    for s, sex in enumerate("FMT"):
        real = be.year(2023)[:, s, :85]
        a, b, u = (mape(grad(real, m), real) for m in ("mono", "sprague", "uniform"))
        print(sex, " ".join(f"{c}:{x:.2f}/{y:.2f}/{z:.2f}" for c, x, y, z in zip(be.codes, a, b, u, strict=True)))

    print("\nTFR 2023 on real vs graduated female exposure W_x = (P_x(2023)+P_x(2024))/2, ages 15-49")
    codes = ("BE",) + cc.codes
    bi = load_fordagec(codes)
    realW, gradW = {}, {m: {} for m in METHODS}
    # BE: sum of the 11 regions; graduate each region then sum (as the dataset would)
    for y in (2023, 2024):
        fb = be.year(y)[:, 0, :85]
        fc = cc.year(y)[:, 0, :85]
        realW[y] = np.vstack([fb.sum(0, keepdims=True), fc])
        for m in METHODS:
            gradW[m][y] = np.vstack([grad(fb, m).sum(0, keepdims=True), grad(fc, m)])
    Wr = (realW[2023] + realW[2024])[:, 15:50] / 2
    t_real = tfr(bi.by_age, bi.unknown, Wr)
    print(
        f"{'geo':4s} {'outside':>7s} {'real':>8s} "
        + " ".join(f"{m:>9s}" for m in METHODS)
        + "   (difference to real x1000)"
    )
    for i, c in enumerate(codes):
        row = []
        for m in METHODS:
            Wg = (gradW[m][2023] + gradW[m][2024])[:, 15:50] / 2
            t = tfr(bi.by_age, bi.unknown, Wg)
            row.append(f"{t[i]:.4f}({1000 * (t[i] - t_real[i]):+5.2f})")
        print(f"{c:4s} {int(bi.outside[i]):7d} {t_real[i]:8.4f} " + " ".join(row))
    # BE graduated nationally instead of per region
    Wn = sum(grad(be.year(y)[:, 0, :85].sum(0, keepdims=True), "mono") for y in (2023, 2024))[:, 15:50] / 2
    print("BE graduated at national level (mono):", f"{tfr(bi.by_age[:1], bi.unknown[:1], Wn)[0]:.4f}")


if __name__ == "__main__":
    main()
