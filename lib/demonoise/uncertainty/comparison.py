"""Generic noise versus a real p-table: where does the study's model part from the Cell Key Method?

The reference study models noise as independent integer noise of variance ``V`` on every
published cell (:class:`~demonoise.noise.models.GenericNoise`). Real CKM publication uses a
perturbation table (:class:`~demonoise.noise.models.PTableNoise`): zeros stay zero, results are
never negative, and for counts below the table's last class ``I`` the noise has a
count-dependent variance ``V_i`` and mean ``b_i`` (docs/design.md, section "Noise models"). For every region,
sex, indicator and age this module puts the two side by side at the table's nominal
variance ``V``:

.. math::

    \\mathrm{sd}_{gen} = \\Big(\\sum_c g_c^2\\, V\\Big)^{1/2},\\qquad
    \\mathrm{sd}_{pt} = \\Big(\\sum_c g_c^2\\, V_{\\min(n_c, I)}\\Big)^{1/2},\\qquad
    \\mathrm{bias}_{pt} = \\sum_c g_c\\, b_{\\min(n_c, I)},

with ``g_c`` the first-order derivative of the indicator with respect to published cell
``c`` of count ``n_c`` (docs/design.md, section "First-order propagation";
:mod:`demonoise.uncertainty.propagation`). The two models coincide wherever every cell
the indicator depends on has ``n_c >= I`` and the table's last class has variance ``V``
and mean 0; they part where small cells -- above all zeros,
which the table leaves alone and the generic model perturbs -- carry weight. The table
reports, per row, the share of the indicator's cells below ``I`` and the share of the
generic noise variance that comes from them, so that the ratio can be read.

Optionally a noise-only Monte Carlo checks both sides exactly (no linearisation): the
p-table noise drawn through the table (:meth:`~demonoise.noise.models.PTableNoise.perturb`, zero
stays zero, never negative) and the generic noise with a zero floor ``max(0, n + e)`` --
the usual way of making generic noise publishable -- with common random numbers.

Computation layer: numpy throughout; pandas only to assemble the tidy table at the end.

References
----------
Eurostat (2025). Impact of noise-based disclosure control on demographic indicators
(reference year 2023) -- the generic model.
Giessing, S. (2016). Computational issues in the design of transition probabilities and
disclosure risk estimation for additive noise. PSD 2016, LNCS 9867 -- p-tables.
"""

# ruff: noqa: E741 -- I is the p-table's largest count class, as Eurostat and the R package ptable name it
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pandas as pd

from demonoise.core.counts import Counts
from demonoise.core.errors import ParameterError
from demonoise.noise.models import GenericNoise, PTableNoise
from demonoise.noise.ptable import PTable
from demonoise.runtime.cluster import using
from demonoise.uncertainty.montecarlo import monte_carlo, z_score
from demonoise.uncertainty.propagation import TABLES, linearise, noise_cell_moments, poisson_cell_variance

__all__ = [
    "SIZE_EDGES",
    "COMPARISON_COLUMNS",
    "size_class",
    "compare_noise",
    "summarise_comparison",
    "smallest_regions",
    "comparison_note",
]

#: Default population size classes (region population on 1 January, sex T):
#: ``< 200 000``, ``200 000 - 1 000 000``, ``>= 1 000 000``.
SIZE_EDGES: tuple[int, ...] = (200_000, 1_000_000)

#: Relative difference of the noise sds above which a row is flagged.
FLAG_AT = 0.10

COMPARISON_COLUMNS = [
    "dataset", "data_status", "granularity", "ptable", "V", "I",
    "region", "region_name", "nuts_level", "country", "population", "size_class",
    "sex", "indicator", "age", "age_group", "value", "events",
    "sd_pois", "sd_generic", "sd_ptable", "ratio", "bias_ptable", "rmse_ptable",
    "n_cells", "small_cell_share", "small_var_share", "zero_var_share", "small_ptable_var_share", "flag",
]  # fmt: skip

MC_COMPARISON_COLUMNS = [
    "mc_n", "mc_sd_ptable", "mc_shift_ptable", "z_ptable", "z_bias_ptable",
    "mc_sd_generic_floor", "mc_shift_generic_floor", "mc_ratio",
]  # fmt: skip


def _fmt_pop(x: float) -> str:
    if x >= 1_000_000 and x % 1_000_000 == 0:
        return f"{x / 1_000_000:g}M"
    if x >= 1_000 and x % 1_000 == 0:
        return f"{x / 1_000:g}k"
    return f"{x:g}"


def size_class(population, edges: Sequence[float] = SIZE_EDGES) -> np.ndarray:
    """Label each population with its size class, e.g. ``"<200k"``, ``"200k-1M"``, ``">=1M"``.

    Classes are ``[0, e_1), [e_1, e_2), ..., [e_last, inf)``.
    """
    edges = [float(e) for e in edges]
    if not edges or any(b <= a for a, b in pairwise(edges)) or edges[0] <= 0:
        raise ParameterError(f"size-class edges must be positive and increasing, got {edges}")
    labels = [f"<{_fmt_pop(edges[0])}"]
    labels += [f"{_fmt_pop(a)}-{_fmt_pop(b)}" for a, b in pairwise(edges)]
    labels += [f">={_fmt_pop(edges[-1])}"]
    idx = np.searchsorted(np.asarray(edges), np.asarray(population, dtype=float), side="right")
    return np.asarray(labels, dtype=object)[idx]


def _resolve_table(ptable) -> PTable:
    if isinstance(ptable, PTableNoise):
        return ptable.table
    if isinstance(ptable, PTable):
        return ptable
    raise ParameterError(
        "ptable must be a PTable or a PTableNoise (resolve names with demonoise.analysis.ptables.resolve_ptable), got "
        f"{ptable!r}"
    )


def _nominal_V(table: PTable, V: float | None) -> tuple[float, str]:
    """The generic model's variance: given, the table's nominal ``V``, else its last class's variance."""
    if V is not None:
        V = float(V)
        if not (math.isfinite(V) and V > 0):
            raise ParameterError(f"V (noise variance) must be finite and > 0, got {V!r}")
        return V, "given"
    if table.V is not None:
        return float(table.V), "nominal"
    return float(
        table.variance()[-1]
    ), f"variance of the table's last class (i >= {table.I}); the table carries no nominal V"


def compare_noise(
    counts: Counts,
    ptable,
    *,
    V: float | None = None,
    granularity: str = "single",
    indicators: Sequence[str] | None = None,
    e_ages: Sequence[int] | None = (0, 65),
    noised: Sequence[str] = TABLES,
    size_edges: Sequence[float] = SIZE_EDGES,
    flag_at: float = FLAG_AT,
    mc: int = 0,
    seed: int = 20230101,
    workers: int | None = None,
    progress=None,
    cluster=None,
    **layout_kw,
) -> pd.DataFrame:
    """Noise uncertainty of each indicator under the generic model and under a p-table.

    Parameters
    ----------
    counts : Counts
        The dataset (native published axes).
    ptable : PTable, PTableNoise or str
        The p-table (an embedded name ``"v01"``, ``"v03"``, ``"v04"`` or a file).
    V : float, optional
        Variance of the generic model. Default: the table's nominal ``V`` (for a table
        read from a file without parameters, the variance of its last class).
    granularity : {"single", "5y", "5y-infant"}
        Publication granularity of the noised cells.
    indicators : sequence of str, optional
        Any of ``"e", "tfr", "asfr", "asmr"``. Default: ``e`` and, when the dataset has
        births, ``tfr``.
    e_ages : sequence of int, optional
        Ages ``k`` of ``e_k`` (default 0 and 65; ``None``: every life-table age).
    noised : sequence of str
        Tables that carry noise (default all four).
    size_edges : sequence of float
        Population size-class edges (default ``200 000`` and ``1 000 000``).
    flag_at : float
        ``flag`` is ``|ratio - 1| > flag_at`` (default 10 %).
    mc : int
        Noise-only Monte Carlo replicates (0: analytic only). Runs the p-table and the
        generic model with a zero floor on the same uniform numbers.
    seed, workers, progress, cluster
        Passed to :func:`demonoise.uncertainty.montecarlo.monte_carlo` (both runs on one
        cluster: a local one of ``workers`` processes when none is given).
    **layout_kw
        ``open_age, a, a0, fert_min, fert_max`` (:func:`demonoise.uncertainty.propagation.linearise`).

    Returns
    -------
    pandas.DataFrame
        One row per region x sex x indicator x age, columns :data:`COMPARISON_COLUMNS`
        (and :data:`MC_COMPARISON_COLUMNS` with ``mc > 0``):

        ``sd_generic``, ``sd_ptable``
            first-order noise sd under ``GenericNoise(V)`` and under the p-table;
        ``ratio``
            ``sd_ptable / sd_generic``;
        ``bias_ptable``
            first-order bias of the indicator, ``sum_c g_c b(n_c)``;
        ``rmse_ptable``
            ``sqrt(sd_ptable^2 + bias_ptable^2)``;
        ``n_cells``, ``small_cell_share``
            number of noised published cells the indicator depends on (non-zero
            derivative) and the share of them with a count below ``I``;
        ``small_var_share``
            share of the generic noise variance coming from those small cells;
        ``zero_var_share``
            share of the generic noise variance coming from cells with count 0, which
            the table leaves alone (they add nothing to ``sd_ptable``);
        ``small_ptable_var_share``
            p-table noise variance of the cells with ``0 < n_c < I`` (count-dependent
            variance), as a share of the *generic* noise variance. With ``V_I`` the
            variance of the last class,
            ``ratio^2 = (1 - small_var_share) V_I / V + small_ptable_var_share``;
        ``flag``
            ``|ratio - 1| > flag_at``;
        ``population``, ``size_class``
            the region's population on 1 January of the reference year (sex T, all
            ages) and its size class;
        ``mc_sd_ptable``, ``mc_shift_ptable``, ``z_ptable``, ``z_bias_ptable``
            Monte Carlo sd and mean shift (mean - value) under the p-table, the z of
            the sd against ``sd_ptable`` (``(sd_MC/sd - 1) sqrt(2N)``) and of the mean
            shift against ``bias_ptable`` (``(shift - bias) sqrt(N) / sd_MC``);
        ``mc_sd_generic_floor``, ``mc_shift_generic_floor``, ``mc_ratio``
            the same for generic noise with a zero floor, and
            ``mc_sd_ptable / mc_sd_generic_floor``.

    Raises
    ------
    ParameterError
        Unknown table, indicator, granularity or table name; invalid ``V``.
    DataError
        Inconsistent counts (e.g. deaths with zero exposure).

    Notes
    -----
    The cell counts ``n_c`` are those of the cells as published at ``granularity``
    (:func:`demonoise.core.layout.publish`), the ones the table is applied to.
    """
    if indicators is None:
        indicators = ("e", "tfr") if counts.births is not None else ("e",)
    table = _resolve_table(ptable)
    V, V_source = _nominal_V(table, V)
    pt_noise = PTableNoise(table)
    gen_noise = GenericNoise(V)
    lz = linearise(
        counts,
        granularity=granularity,
        indicators=tuple(indicators),
        e_ages=None if e_ages is None else list(e_ages),
        **layout_kw,
    )
    pub = lz.counts
    I = table.I
    pop = pub.pop_start[:, 2].sum(-1).astype(float)  # sex T, every age cell (UNK included)
    sizes = size_class(pop, size_edges)
    runs = {}
    if mc:
        mc_ind = [i for i in indicators if i in ("e", "tfr", "asfr", "asmr")]
        kw = dict(
            n=int(mc),
            seed=seed,
            indicators=mc_ind,
            components=("noise",),
            noised=tuple(noised),
            quantiles=None,
            progress=progress,
        )
        with using(cluster, workers) as where:
            runs["ptable"] = monte_carlo(lz, pt_noise, floor_zero=False, cluster=where, **kw)
            runs["generic_floor"] = monte_carlo(lz, gen_noise, floor_zero=True, cluster=where, **kw)

    frames = []
    for name, block in lz.blocks.items():
        fo = block.female_only
        var_pt, bias_pt = noise_cell_moments(lz, pt_noise, fo, noised)
        var_gen, _ = noise_cell_moments(lz, gen_noise, fo, noised)
        cells = lz.cells(fo)
        if fo:
            cells = {m: v[:, None] for m, v in cells.items()}
        small_var = {m: np.where(cells[m] < I, var_gen[m], 0.0) for m in var_gen}
        zero_var = {m: np.where(cells[m] == 0, var_gen[m], 0.0) for m in var_gen}
        small_pt = {m: np.where((cells[m] > 0) & (cells[m] < I), var_pt[m], 0.0) for m in var_pt}
        lin = block.lin
        v_pt, v_gen = lin.variance(var_pt), lin.variance(var_gen)
        v_small = lin.variance(small_var)
        v_zero, v_small_pt = lin.variance(zero_var), lin.variance(small_pt)
        bias = lin.shift(bias_pt)
        v_pois = lin.variance(poisson_cell_variance(lz, fo))
        n_cells = np.zeros(lin.value.shape)
        n_small = np.zeros(lin.value.shape)
        for m in var_gen:
            if m not in lin.grads:
                continue
            dep = np.nan_to_num(lin.grads[m]) != 0  # (R, S, K, A_m)
            n_cells = n_cells + dep.sum(-1)
            n_small = n_small + (dep & (cells[m] < I)[..., None, :]).sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.sqrt(v_pt) / np.sqrt(v_gen)
            cols = {
                "value": lin.value,
                "events": block.events,
                "sd_pois": np.sqrt(v_pois),
                "sd_generic": np.sqrt(v_gen),
                "sd_ptable": np.sqrt(v_pt),
                "ratio": ratio,
                "bias_ptable": bias,
                "rmse_ptable": np.sqrt(v_pt + bias * bias),
                "n_cells": n_cells.astype(np.int64),
                "small_cell_share": np.where(n_cells > 0, n_small / np.where(n_cells > 0, n_cells, 1), np.nan),
                "small_var_share": v_small / v_gen,
                "zero_var_share": v_zero / v_gen,
                "small_ptable_var_share": v_small_pt / v_gen,
                "flag": np.abs(ratio - 1.0) > flag_at,
            }
        if mc:
            st_pt = runs["ptable"].stats.get((name, "noise"))
            st_gf = runs["generic_floor"].stats.get((name, "noise"))
            if st_pt is not None:
                nv = st_pt["n_valid"]
                with np.errstate(divide="ignore", invalid="ignore"):
                    shift_pt = st_pt["mean"] - lin.value
                    cols.update({
                        "mc_n": np.full(lin.value.shape, int(mc)),
                        "mc_sd_ptable": st_pt["sd"],
                        "mc_shift_ptable": shift_pt,
                        "z_ptable": z_score(st_pt["sd"], np.sqrt(v_pt), nv),
                        "z_bias_ptable": np.where(
                            st_pt["sd"] > 0, (shift_pt - bias) * np.sqrt(nv) / st_pt["sd"], np.nan
                        ),
                        "mc_sd_generic_floor": st_gf["sd"],
                        "mc_shift_generic_floor": st_gf["mean"] - lin.value,
                        "mc_ratio": st_pt["sd"] / st_gf["sd"],
                    })  # fmt: skip
        R, S, K = lin.value.shape
        df = pd.DataFrame({k: np.broadcast_to(v, (R, S, K)).ravel() for k, v in cols.items()})
        ridx = np.repeat(np.arange(R), S * K)
        front = {
            "region": np.array(pub.codes)[ridx],
            "region_name": np.array([r.name for r in pub.regions], dtype=object)[ridx],
            "nuts_level": np.array([r.level for r in pub.regions])[ridx],
            "country": np.array([r.country for r in pub.regions])[ridx],
            "population": pop[ridx],
            "size_class": sizes[ridx],
            "sex": np.tile(np.repeat(np.array(block.sexes), K), R),
            "indicator": name,
            "age": np.tile(block.age_lower, R * S),
            "age_group": np.tile(np.array(block.age_labels, dtype=object), R * S),
        }
        for i, (k, v) in enumerate(front.items()):
            df.insert(i, k, v)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    meta = {
        "dataset": counts.name,
        "data_status": counts.provenance.data_status,
        "granularity": granularity,
        "ptable": table.label,
        "V": V,
        "I": I,
    }
    for k, v in reversed(list(meta.items())):
        out.insert(0, k, v)
    cols = COMPARISON_COLUMNS + ([c for c in MC_COMPARISON_COLUMNS if c in out] if mc else [])
    out = out[cols]
    out.attrs["V_source"] = V_source
    return out


def summarise_comparison(df: pd.DataFrame, *, by_sex: bool = True) -> pd.DataFrame:
    """Ratio p-table / generic of the noise sd by indicator, age and population size class.

    One row per ``(indicator, age_group, sex, size_class)`` (``sex`` pooled when
    ``by_sex`` is false; ``nuts_level`` added when the table holds several levels):
    ``regions``, ``ratio_median``, ``ratio_min``, ``ratio_max``,
    ``flagged`` (share of rows with ``|ratio - 1| > 10 %``), ``small_cell_share_median``,
    ``bias_over_sd_max`` (largest ``|bias_ptable| / sd_ptable``) and, when a Monte Carlo
    was run, ``mc_ratio_median`` and ``mc_ratio_max``.
    """
    keys = ["indicator", "age_group"] + (["sex"] if by_sex else [])
    if df.nuts_level.nunique() > 1:
        keys.append("nuts_level")
    keys.append("size_class")
    d = df.assign(_bias_sd=(df.bias_ptable.abs() / df.sd_ptable).where(df.sd_ptable > 0))
    agg = dict(
        regions=("region", "nunique"),
        ratio_median=("ratio", "median"),
        ratio_min=("ratio", "min"),
        ratio_max=("ratio", "max"),
        flagged=("flag", "mean"),
        small_cell_share_median=("small_cell_share", "median"),
        bias_over_sd_max=("_bias_sd", "max"),
    )
    if "mc_ratio" in df:
        agg.update(mc_ratio_median=("mc_ratio", "median"), mc_ratio_max=("mc_ratio", "max"))
    out = d.groupby(keys, sort=False, dropna=False).agg(**agg).reset_index()
    # size classes in population order, not alphabetical
    order = {c: float(df.loc[df.size_class == c, "population"].min()) for c in df.size_class.unique()}
    out["_o"] = out.size_class.map(order)
    return out.sort_values(keys[:-1] + ["_o"], kind="stable").drop(columns="_o").reset_index(drop=True)


def smallest_regions(
    df: pd.DataFrame, k: int = 5, *, indicator: str = "e", age: float | None = 0, sex: str = "T"
) -> pd.DataFrame:
    """The ``k`` smallest regions (by population) for one indicator row: ratio, bias, shares."""
    sel = df[(df.indicator == indicator) & (df.sex == sex)]
    if age is not None and indicator in ("e", "asmr", "asfr"):
        sel = sel[sel.age == age]
    cols = [
        "region",
        "region_name",
        "population",
        "value",
        "sd_pois",
        "sd_generic",
        "sd_ptable",
        "ratio",
        "bias_ptable",
        "small_cell_share",
        "small_var_share",
    ]
    cols += [c for c in ("mc_sd_ptable", "mc_sd_generic_floor", "mc_ratio") if c in sel]
    return sel.nsmallest(k, "population")[cols].reset_index(drop=True)


def _most_detailed(df: pd.DataFrame, level: int | None) -> tuple[pd.DataFrame, str]:
    """Rows of one NUTS level: ``level``, or the most detailed one present."""
    levels = sorted(df.nuts_level.dropna().unique().tolist())
    if level is None:
        if len(levels) <= 1:
            return df, ""
        level = int(levels[-1])
    sel = df[df.nuts_level == level]
    if sel.empty:
        raise ParameterError(f"no region of NUTS level {level} in the comparison (levels present: {levels})")
    what = "countries" if level == 0 else f"NUTS {level} regions"
    return sel, f"{what} only (the table also holds levels {', '.join(str(int(x)) for x in levels if x != level)})"


def comparison_note(df: pd.DataFrame, *, k: int = 5, level: int | None = None, flag_at: float = FLAG_AT) -> str:
    """The closing note: how far the generic model is from the p-table, with numbers.

    States, for e0 (sex T) and the TFR, the median and range of the ratio of noise sds
    p-table / generic by population size class, the figures of the ``k`` smallest
    regions, the p-table's first-order bias there and the weight of small cells, and
    how many rows part by more than ``flag_at``. With several NUTS levels in the table
    the note speaks of ``level`` (default: the most detailed level present).
    """
    if df.empty:
        return "No rows to compare."
    df, scope = _most_detailed(df, level)
    first = df.iloc[0]
    lines = [
        f"Generic noise (variance V = {first.V:g} on every published cell) against {first.ptable} "
        f"(classes 0..{first.I}; zeros stay zero), dataset {first.dataset} ({first.data_status}), "
        f"{first.granularity} ages, {df.region.nunique()} {'regions' if not scope else scope}."
    ]
    heads = []
    if ((df.indicator == "e") & (df.age == 0)).any():
        heads.append(("e", 0.0, "T", "e0 (sex T)", " y"))
    if (df.indicator == "tfr").any():
        heads.append(("tfr", None, "F", "TFR", ""))
    for ind, age, sex, label, unit in heads:
        sel = df[(df.indicator == ind) & (df.sex == sex)]
        if age is not None:
            sel = sel[sel.age == age]
        if sel.empty:
            continue
        parts = []
        for cls, g in sorted(sel.groupby("size_class"), key=lambda t: t[1].population.min()):
            parts.append(
                f"{cls}: median {g.ratio.median():.3f} (range {g.ratio.min():.3f}-{g.ratio.max():.3f}, {len(g)} "
                "regions)"
            )
        lines.append(f"{label}, noise sd p-table / generic by population: " + "; ".join(parts) + ".")
        small = sel.nsmallest(k, "population")
        has_mc = "mc_ratio" in sel and small.mc_ratio.notna().any()
        figs = ", ".join(
            f"{r.region} ({r.population / 1000:.0f}k) {r.ratio:.3f}"
            + (f" [MC vs generic with zero floor {r.mc_ratio:.3f}]" if has_mc else "")
            for r in small.itertuples()
        )
        worst = sel.loc[(sel.ratio - 1).abs().idxmax()]
        if worst.ratio < 1:
            how = f"the generic model overstates the p-table's noise sd {1 / worst.ratio:.2f}-fold"
        else:
            how = f"the generic model understates the p-table's noise sd by {(worst.ratio - 1) * 100:.1f} %"
        lines.append(
            f"  The {len(small)} smallest: {figs}. Furthest from 1: {worst.region} ({worst.population / 1000:.0f}k), "
            f"ratio {worst.ratio:.3f}: {how}."
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            bsd = float((small.bias_ptable.abs() / small.sd_ptable).max())
        lines.append(
            f"  In these regions the p-table's first-order bias reaches {small.bias_ptable.abs().max():.3g}{unit} "
            f"({bsd * 100:.0f} % of its noise sd; the generic model has none); cells below {first.I} are "
            f"{small.small_cell_share.min() * 100:.0f}-{small.small_cell_share.max() * 100:.0f} % of the cells the "
            "indicator "
            f"depends on and carry {small.small_var_share.min() * 100:.0f}-{small.small_var_share.max() * 100:.0f} % "
            f"of its generic noise variance."
        )
    flagged = df[(df.ratio - 1).abs() > flag_at]
    by = flagged.groupby("indicator").size().to_dict()
    lines.append(
        f"Rows where the two models part by more than {flag_at * 100:g} % (|ratio - 1| > {flag_at:g}): {len(flagged)} "
        f"of {len(df)}" + (f" ({', '.join(f'{a}: {b}' for a, b in by.items())})" if by else "") + "."
    )
    return "\n".join(lines)
