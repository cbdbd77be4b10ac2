"""Analytic (first-order) error propagation: Poisson, noise and total variance, admixture.

For an indicator ``f`` of independent published cells ``c`` (docs/design.md, section "First-order propagation")::

    Var_noise f = sum_c (df/dc)^2 V_c          (V_c: noise variance of cell c)
    Var_pois  f = sum_{event cells} (df/dc)^2 c  (events Poisson with lambda = observed count)
    Var_tot     = Var_pois + Var_noise
    A           = sqrt(1 + Var_noise / Var_pois) - 1   (noise admixture)

``A = 0.41`` when noise equals Poisson. Noise sits on every published cell of the
tables in ``noised`` (default: deaths, births and both 1 January stocks); the
Poisson baseline only on events (deaths, births); stocks carry no intrinsic
variance. For count-dependent noise (p-tables) ``V_c`` is the exact variance of the
perturbation of cell ``c``'s count, and the first-order noise bias
``sum_c (df/dc) E(noise_c)`` is reported separately.

References
----------
Chiang, C. L. (1984). *The Life Table and its Applications*. Krieger.
Eurostat (2025). Impact of noise-based disclosure control on demographic indicators
(reference year 2023). -- the generic noise model and the admixture measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from demonoise.core.counts import Counts
from demonoise.core.errors import DataError, ParameterError
from demonoise.core.layout import Layout, publish
from demonoise.demography.indicators import (
    INDICATORS,
    IndicatorLinearisation,
    linearise_asfr,
    linearise_asmr,
    linearise_e,
    linearise_tfr,
)

__all__ = [
    "TABLES",
    "IndicatorBlock",
    "Linearised",
    "linearise",
    "check_noised",
    "noise_cell_moments",
    "poisson_cell_variance",
    "admixture",
]

#: Published tables noise can sit on.
TABLES = ("deaths", "births", "pop_start", "pop_end")


@dataclass(frozen=True)
class IndicatorBlock:
    """One indicator family over regions x sexes x ages, linearised.

    Attributes
    ----------
    indicator : str
        ``"asfr"``, ``"tfr"``, ``"asmr"`` or ``"e"``.
    sexes : tuple of str
        ``("F", "M", "T")`` for mortality, ``("F",)`` for fertility.
    age_lower : ndarray (K,)
        Lower bound of each age (interval start; ``nan`` for TFR).
    age_labels : tuple of str
        Eurostat-style labels (``"Y_LT1"``, ``"Y65"``, ``"Y15-19"``; ``""`` for TFR).
    lin : IndicatorLinearisation
        Values (R, S, K) and gradients.
    events : ndarray (R, S, K)
        Events behind each value: deaths of the interval (ASMR), deaths at ages >= k
        (e_k), births of the interval (ASFR), all births (TFR).
    exposure : ndarray (R, S, K)
        Exposure behind each value, likewise.
    female_only : bool
        Fertility: gradients are with respect to the female population cells.
    """

    indicator: str
    sexes: tuple
    age_lower: np.ndarray
    age_labels: tuple
    lin: IndicatorLinearisation
    events: np.ndarray
    exposure: np.ndarray
    female_only: bool = False


@dataclass(frozen=True)
class Linearised:
    """All requested indicators of one dataset at one publication granularity."""

    counts: Counts  # as published (after :func:`~demonoise.core.layout.publish`)
    layout: Layout
    granularity: str
    blocks: dict = field(default_factory=dict)
    lifetable_kw: dict = field(default_factory=dict)  # a, a0 of the life table

    def cells(self, female_only: bool) -> dict:
        """Published cells per table, shaped like the gradients' trailing axes."""
        c = self.counts
        out = {}
        if c.deaths is not None:
            out["deaths"] = c.deaths
        if c.births is not None:
            out["births"] = c.births
        out["pop_start"] = c.pop_start[:, 0] if female_only else c.pop_start
        out["pop_end"] = c.pop_end[:, 0] if female_only else c.pop_end
        return out


def _check_exposure(counts: Counts, layout: Layout):
    """Deaths with zero exposure in a life-table group: a typed error naming the cell."""
    from demonoise.demography.indicators import lifetable_inputs

    D, E = lifetable_inputs(layout, counts.deaths, counts.pop_start, counts.pop_end)
    bad = (E <= 0) & (D > 0)
    if bad.any():
        r, s, x = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"{D[r, s, x]:g} deaths with zero exposure",
            dataset=counts.name,
            region=counts.codes[r],
            sex=counts.sexes[s],
            age=layout.lt_labels[x],
        )
    empty = D[..., -1] <= 0
    if empty.any():
        r, s = (int(i) for i in np.argwhere(empty)[0])
        raise DataError(
            "no deaths in the open age group: the life table's last interval is undefined (L = l / m); "
            "choose a lower open_age or check the data",
            dataset=counts.name,
            region=counts.codes[r],
            sex=counts.sexes[s],
            age=layout.lt_labels[-1],
        )


def _located(err: DataError, counts: Counts) -> DataError:
    """The same error with a ``key`` of (region index, sex index) -- how the life table
    names a cell of its leading axes -- replaced by the region code and the sex."""
    key = err.location.get("key")
    if not (isinstance(key, tuple) and len(key) == 2):
        return err
    r, s = key
    loc = {k: v for k, v in err.location.items() if k != "key"}
    loc.update(dataset=counts.name, region=counts.codes[r], sex=counts.sexes[s])
    return type(err)(err.reason, **loc)


def _check_asmr_defined(counts: Counts, layout: Layout) -> None:
    """Deaths in a published age interval of zero exposure: ``m_x = D_x / 0`` is undefined."""
    from demonoise.core.counts import spread_unknown
    from demonoise.demography.indicators import exposure

    D = spread_unknown(counts.deaths, layout.ages)
    E = exposure(counts.pop_start, counts.pop_end, layout.ages)
    bad = (E <= 0) & (D > 0)
    if bad.any():
        r, s, x = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"{D[r, s, x]:g} deaths with zero exposure: the mortality rate is undefined",
            dataset=counts.name,
            region=counts.codes[r],
            sex=counts.sexes[s],
            age=layout.ages.labels[x],
        )


def _check_fertility_defined(counts: Counts, layout: Layout, births, women) -> None:
    """Zero female exposure at a fertility age: ``f_x = b_x / 0`` is undefined, and so is
    the TFR that sums it (with or without births there)."""
    bad = women <= 0
    if bad.any():
        r, x = (int(i) for i in np.argwhere(bad)[0])
        what = f"{births[r, x]:.6g} births with" if births[r, x] > 0 else "no births and"
        raise DataError(
            f"{what} zero female exposure: the fertility rate of this age, and the TFR, are undefined",
            dataset=counts.name,
            region=counts.codes[r],
            sex="F",
            age=layout.fert_labels[x],
        )


def _check_life_expectancy(counts: Counts, lin, lower) -> None:
    """A life expectancy ``e_k`` that is negative, or reaches past :data:`MAX_AGE`
    (``k + e_k``), comes from counts that cannot be right (e.g. 10^15 people in a cell
    give ``e_0 = 4 x 10^12`` years)."""
    from demonoise.core.counts import MAX_AGE

    e = lin.value
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(e) | (e < 0) | (lower + e > MAX_AGE)
    if bad.any():
        r, s, k = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"life expectancy at age {lower[k]:g} of {e[r, s, k]:.4g} years is outside 0-{MAX_AGE - lower[k]:g} "
            f"(no one lives past {MAX_AGE}): check this region's deaths and population",
            dataset=counts.name,
            region=counts.codes[r],
            sex=counts.sexes[s],
        )


def linearise(
    counts: Counts,
    *,
    granularity: str = "single",
    indicators=INDICATORS,
    e_ages=None,
    open_age: int = 85,
    a=0.5,
    a0=None,
    fert_min: int = 15,
    fert_max: int = 49,
) -> Linearised:
    """Linearise every requested indicator of ``counts`` published at ``granularity``.

    Parameters
    ----------
    counts : Counts
        Counts as held (native published axes).
    granularity : {"single", "5y", "5y-infant"}
        Publication granularity: noise sits on the cells published at this
        granularity (:func:`demonoise.core.layout.publish`).
    indicators : iterable of str
        Subset of ``("asfr", "tfr", "asmr", "e")``.
    e_ages : sequence of int, optional
        Ages ``k`` of ``e_k`` to report (must be life-table interval starts);
        default all.
    open_age, a, a0, fert_min, fert_max
        Life-table and fertility conventions (:mod:`demonoise.core.layout`,
        :func:`demonoise.demography.lifetable.life_table`).

    Returns
    -------
    Linearised
    """
    unknown = set(indicators) - set(INDICATORS)
    if unknown:
        raise ParameterError(f"unknown indicator(s) {sorted(unknown)}; choose from {', '.join(INDICATORS)}")
    pub = publish(counts, granularity, fert_min=fert_min, fert_max=fert_max)
    layout = Layout.of(pub, open_age=open_age, fert_min=fert_min, fert_max=fert_max)
    blocks = {}
    mort = [i for i in indicators if i in ("asmr", "e")]
    fert = [i for i in indicators if i in ("asfr", "tfr")]
    if mort and pub.deaths is None:
        raise ParameterError(f"dataset {counts.name!r} has no deaths: {', '.join(mort)} not available")
    if fert and pub.births is None:
        raise ParameterError(f"dataset {counts.name!r} has no births: {', '.join(fert)} not available")
    from demonoise.core.counts import spread_unknown
    from demonoise.demography.indicators import exposure as _exposure
    from demonoise.demography.indicators import lifetable_inputs

    if "asmr" in indicators:
        _check_asmr_defined(pub, layout)
        lin = linearise_asmr(layout, pub.deaths, pub.pop_start, pub.pop_end)
        ax = pub.ages
        blocks["asmr"] = IndicatorBlock(
            "asmr",
            pub.sexes,
            np.array(ax.lower, dtype=float),
            ax.labels[: ax.n_known],
            lin,
            spread_unknown(pub.deaths, ax),
            _exposure(pub.pop_start, pub.pop_end, ax),
        )
    if "e" in indicators:
        _check_exposure(pub, layout)
        lower = layout.lt_lower
        if e_ages is None:
            idx = np.arange(lower.size)
        else:
            idx = []
            for k in e_ages:
                hit = np.nonzero(lower == k)[0]
                if not hit.size:
                    raise ParameterError(
                        f"e_{k}: age {k} is not a life-table interval start ({', '.join(str(int(x)) for x in lower)})"
                    )
                idx.append(int(hit[0]))
            idx = np.array(idx)
        try:
            lin = linearise_e(layout, pub.deaths, pub.pop_start, pub.pop_end, ages=idx, a=a, a0=a0)
        except DataError as e:
            raise _located(e, pub) from None
        _check_life_expectancy(pub, lin, lower[idx])
        D, E = lifetable_inputs(layout, pub.deaths, pub.pop_start, pub.pop_end)
        Dk = np.flip(np.cumsum(np.flip(D, -1), -1), -1)[..., idx]
        Ek = np.flip(np.cumsum(np.flip(E, -1), -1), -1)[..., idx]
        blocks["e"] = IndicatorBlock("e", pub.sexes, lower[idx], tuple(layout.lt_labels[i] for i in idx), lin, Dk, Ek)
    if fert:
        pf0, pf1 = pub.pop_start[:, 0], pub.pop_end[:, 0]
        b = spread_unknown(pub.births, pub.birth_ages) @ layout.births_to_fert
        W = _exposure(pf0, pf1, pub.ages) @ layout.pop_to_fert
        _check_fertility_defined(pub, layout, b, W)
        if "asfr" in fert:
            lin = linearise_asfr(layout, pub.births, pf0, pf1)
            lin = _add_sex_axis(lin)
            blocks["asfr"] = IndicatorBlock(
                "asfr", ("F",), layout.fert_lower, layout.fert_labels, lin, b[:, None], W[:, None], True
            )
        if "tfr" in fert:
            lin = _add_sex_axis(linearise_tfr(layout, pub.births, pf0, pf1))
            blocks["tfr"] = IndicatorBlock(
                "tfr", ("F",), np.array([np.nan]), ("",), lin, b.sum(-1)[:, None, None], W.sum(-1)[:, None, None], True
            )
    return Linearised(pub, layout, granularity, blocks, {"a": a, "a0": a0})


def _add_sex_axis(lin: IndicatorLinearisation) -> IndicatorLinearisation:
    """Fertility results get a sex axis of length 1 (women) so that every block is (R, S, K)."""
    return lin.with_axis(1)


def poisson_cell_variance(lz: Linearised, female_only: bool) -> dict:
    """Poisson baseline: ``Var(c) = c`` for event cells (deaths, births), 0 for stocks."""
    cells = lz.cells(female_only)
    out = {m: cells[m].astype(float) for m in ("deaths", "births") if m in cells}
    return _with_sex_axis(out, female_only)


def check_noised(noised) -> tuple:
    """The tables that receive noise, checked against :data:`TABLES`."""
    bad = set(noised) - set(TABLES)
    if bad:
        raise ParameterError(f"unknown table(s) {sorted(bad)} in noised; choose from {', '.join(TABLES)}")
    return tuple(noised)


def noise_cell_moments(lz: Linearised, noise, female_only: bool, noised=TABLES) -> tuple[dict, dict]:
    """Per-cell noise variance and bias of the published cells of ``noised`` tables."""
    check_noised(noised)
    cells = lz.cells(female_only)
    var, bias = {}, {}
    for m in noised:
        if m in cells:
            var[m] = np.asarray(noise.variance(cells[m]), dtype=float)
            bias[m] = np.asarray(noise.bias(cells[m]), dtype=float)
    return _with_sex_axis(var, female_only), _with_sex_axis(bias, female_only)


def _with_sex_axis(d: dict, female_only: bool) -> dict:
    if not female_only:
        return d
    # births (R, B) and female stocks (R, A) -> (R, 1, .) to match (R, 1, K, A) gradients
    return {m: v[:, None] for m, v in d.items()}


def admixture(var_pois, var_noise):
    """Noise admixture ``A = sqrt(1 + Var_noise / Var_pois) - 1`` (nan where Var_pois = 0)."""
    var_pois = np.asarray(var_pois, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            var_pois > 0, np.sqrt(1.0 + np.asarray(var_noise) / np.where(var_pois > 0, var_pois, 1.0)) - 1.0, np.nan
        )
