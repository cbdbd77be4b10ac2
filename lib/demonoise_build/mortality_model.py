r"""Modelled mortality: a real standard schedule, the Brass relational logit model,
its calibration to published e0 and e65, and Poisson-drawn deaths.

Computation layer: numpy/scipy only, no I/O. It serves the Europe-wide
demonstration dataset, whose deaths by sex and single age are *modelled*: expected
deaths from a mortality schedule per region and sex, calibrated to Eurostat's
published regional life expectancy at birth and at 65 (demo_r_mlifexp), then a
seeded Poisson draw. Every function works on arrays with any leading axes
(regions x sexes x ...) and the age axis last.

Ages are Eurostat's NUTS 2 layout: single ages ``0..99`` and the open interval
``100+`` (101 cells, :data:`N_AGES`). Internally survivorship runs on single ages
up to :data:`OMEGA` (130) so that the open interval's rate comes from the model.

Pipeline
--------
1. :func:`build_standard` -- a standard schedule from real deaths and exposure
   (Belgium, pooled over several pre-pandemic years): the raw rate at age 0, a
   Poisson Whittaker smoother at ages ``1..94``, a Kannisto logistic hazard fitted
   over ``80..99`` from age 95 up (Thatcher, Kannisto & Vaupel 1998).
2. :func:`brass_survivorship`, :func:`brass_rates` -- Brass's (1971) relational
   logit model ``Y_x = alpha + beta Y^s_x``.
3. :func:`calibrate_brass` -- ``(alpha, beta)`` per region and sex such that the
   project's life table (:mod:`demonoise.demography.lifetable`, ages ``0..84, 85+``, exactly
   Eurostat's method) of the modelled rates gives the target ``e0`` and ``e65``.
4. :func:`split_open_age` -- a population aged 85+ split into ``85..99, 100+`` in
   proportion to the model's stationary population, in integers.
5. :func:`expected_deaths`, :func:`draw_deaths` -- ``m_x E_x`` and a seeded
   Poisson draw.

Conventions
-----------
*Logit.* Brass's: ``logit(p) = 1/2 ln(p / (1 - p))`` (with the factor 1/2), and
``Y_x = logit(1 - l_x) = 1/2 ln((1 - l_x) / l_x)``. The model is
``Y_x = alpha + beta Y^s_x`` for ``x >= 1`` (``l_0 = 1``), so
``l_x = 1 / (1 + exp(2 (alpha + beta Y^s_x)))``. ``alpha > 0`` raises mortality at
every age; ``beta < 1`` raises it at young ages relative to old ages (a flatter
curve), ``beta > 1`` concentrates deaths at old ages. ``alpha = 0, beta = 1`` is the
standard.

*Rates from survivorship.* ``q_x = 1 - l_{x+1} / l_x`` and, inverting the life
table's ``q = m / (1 + (1 - a) m)``, ``m_x = q_x / (1 - (1 - a_x) q_x)`` with
``a_x = 0.5`` and ``a_0`` = :data:`~demonoise.demography.lifetable.EUROSTAT_A0` (0.2), so that
the project's life table of the modelled ``m`` reproduces the modelled ``l``
exactly. An open interval ``w+`` gets the model's stationary rate
``m_w+ = l_w / T_w`` with ``T_w = sum_{x >= w} L_x`` over the model's single ages
to :data:`OMEGA`, ``L_x = (l_x + l_{x+1}) / 2``, and beyond ``OMEGA`` a constant
hazard equal to the last single-age rate (``l_OMEGA`` is below 1e-6 for any
realistic schedule, so this tail is negligible).

*The open group 85+ and the population split.* Eurostat's table closes at 85+
with ``m_85+ = sum D / sum E`` over the *real* population aged 85+. The calibration
uses the model's stationary rate ``l_85 / T_85`` instead, which is what
``sum D / sum E`` becomes when the exposure at ages 85..99, 100+ is proportional to
the model's ``L_x`` -- exactly what :func:`split_open_age` produces. So the
dataset's expected deaths reproduce the target e0/e65 through the project's
life table only if its population 85+ is split with :func:`split_open_age` from
the same schedule (measured on the Belgian 2021 regional populations: 0.0008 y
off with the split, up to 0.6 y off with the real single-age 85+ populations,
whose age structure is younger than stationary). For the same reason the
single-age table of a schedule and Eurostat's 85+ table of the same deaths differ:
0.27 y (women) and 0.18 y (men) in e0 for Belgium 2015-2019.

References
----------
Brass, W. (1971). On the scale of mortality. In W. Brass (ed.), *Biological
Aspects of Demography*, 69-110. Taylor & Francis.
Thatcher, A. R., Kannisto, V. & Vaupel, J. W. (1998). *The Force of Mortality at
Ages 80 to 120*. Odense University Press (the logistic "Kannisto" model).
Whittaker, E. T. (1923). On a new method of graduation. *Proc. Edinburgh Math.
Soc.* 41, 63-75; Eilers, P. H. C. (2003). A perfect smoother. *Analytical
Chemistry* 75, 3631-3636; Camarda, C. G. (2012). MortalitySmooth: an R package for
smoothing Poisson counts with P-splines. *J. Stat. Softw.* 50(1) -- the Poisson
penalised likelihood with difference penalty and BIC choice of the smoothing
parameter used here (identity basis).
Moultrie, T. et al. (eds.) (2013). *Tools for Demographic Estimation*, IUSSP,
ch. "Introduction to model life tables" -- the relational logit model in practice.
"""

# ruff: noqa: E741 -- l is the life table's survivorship l_x, as demographers write it
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from demonoise.core.errors import DataError, ParameterError
from demonoise.demography.lifetable import EUROSTAT_A0, EUROSTAT_OPEN_AGE, life_table_from_rates, lifetable_lower
from demonoise_build.graduation import to_integers

__all__ = [
    "N_AGES",
    "OMEGA",
    "Standard",
    "whittaker_poisson",
    "kannisto_fit",
    "kannisto_rate",
    "build_standard",
    "brass_survivorship",
    "brass_rates",
    "rates_from_survivorship",
    "collapse_open_age",
    "model_e",
    "calibrate_brass",
    "split_open_age",
    "expected_deaths",
    "draw_deaths",
]

#: Cells of Eurostat's NUTS 2 single-age layout: ages 0..99 and the open 100+.
N_AGES: int = 101
#: Last exact age of the internal survivorship grid (single ages 0..OMEGA-1).
OMEGA: int = 130
#: Centre of the Kannisto age variable (``t = x + 1/2 - 80``), for well-conditioned fits.
_KANNISTO_CENTRE = 80.0


# --------------------------------------------------------------------------- standard
@dataclass(frozen=True, eq=False)
class Standard:
    """A standard mortality schedule on single ages, for the Brass model.

    Leading axes (e.g. sexes ``F, M``) are the caller's; every array has them.

    Attributes
    ----------
    m : ndarray, (..., 101)
        Death rates at ages ``0..99`` and the open ``100+`` (``l_100 / T_100``).
    l : ndarray, (..., OMEGA + 1)
        Survivorship at exact ages ``0..OMEGA`` (``l_0 = 1``), all strictly positive.
    Y : ndarray, (..., OMEGA)
        Brass logits ``Y^s_x = 1/2 ln((1 - l_x) / l_x)`` at ages ``x = 1..OMEGA``.
    kannisto : ndarray, (..., 2)
        Kannisto parameters ``(c, b)``: ``mu(x) = expit(c + b (x + 1/2 - 80))``.
    lam : ndarray, (...)
        Smoothing parameter chosen by BIC for ages ``1..kannisto_from - 1``
        (``nan`` if no smoothing).
    a0 : float
        ``a_0`` used to turn ``m_0`` into ``q_0`` (and back).
    kannisto_from : int
        First age whose rate is the Kannisto hazard.
    note : str
        How the schedule was built (for provenance notes).
    """

    m: np.ndarray
    l: np.ndarray  # noqa: E741 -- demographic notation
    Y: np.ndarray
    kannisto: np.ndarray
    lam: np.ndarray
    a0: float
    kannisto_from: int
    note: str = ""

    @property
    def lead_shape(self) -> tuple[int, ...]:
        return self.m.shape[:-1]


def _difference_penalty(n: int, order: int) -> np.ndarray:
    Dk = np.diff(np.eye(n), n=order, axis=0)
    return Dk.T @ Dk


def _check_counts(deaths, exposure, what: str):
    D = np.asarray(deaths, dtype=float)
    E = np.asarray(exposure, dtype=float)
    try:
        D, E = np.broadcast_arrays(D, E)
    except ValueError:
        raise DataError(f"{what}: deaths {D.shape} and exposure {E.shape} do not have matching shapes") from None
    for name, v in (("deaths", D), ("exposure", E)):
        bad = ~np.isfinite(v) | (v < 0)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise DataError(f"{what}: {name} must be finite and non-negative, got {v[idx]!r}", measure=name, key=idx)
    bad = E <= 0
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(f"{what}: zero exposure", measure="exposure", key=idx)
    return D, E


def whittaker_poisson(deaths, exposure, *, order: int = 3, lambdas=None, max_iter: int = 100):
    r"""Poisson Whittaker smoother of death rates, smoothing parameter chosen by BIC.

    Maximises the penalised Poisson log-likelihood of ``eta_x = ln m_x``::

        l(eta) = sum_x [D_x eta_x - E_x exp(eta_x)] - (lambda / 2) |Delta^k eta|^2

    (``Delta^k``: ``k``-th order differences, default ``k = 3``) by iteratively
    reweighted least squares, ``(W + lambda P) eta_new = W z`` with
    ``W = diag(E exp(eta))``, ``z = eta + (D - mu) / mu``, ``P = Delta^k' Delta^k``,
    and picks ``lambda`` per schedule on a grid by
    ``BIC = deviance + ln(n) ED``, ``ED = tr((W + lambda P)^{-1} W)``
    (Whittaker 1923; Eilers 2003; Camarda 2012, identity basis). With
    ``k = 3`` polynomials of degree 2 in age are not penalised, so the fit keeps
    ``sum D``, ``sum x D`` and ``sum x^2 D`` of the data (at convergence).

    Parameters
    ----------
    deaths, exposure : array_like, (..., n)
        Deaths and exposure on consecutive single ages; exposure > 0.
    order : int
        Order ``k`` of the difference penalty.
    lambdas : array_like, optional
        Grid of smoothing parameters (default ``10**(0, 0.25, ..., 8)``).

    Returns
    -------
    m : ndarray, (..., n)
        Smoothed rates ``exp(eta)``.
    lam : ndarray, (...)
        Chosen smoothing parameter per schedule.
    """
    D, E = _check_counts(deaths, exposure, "whittaker_poisson")
    n = D.shape[-1]
    if n <= order:
        raise ParameterError(f"need more than order={order} ages to smooth, got {n}")
    grid = np.asarray(10.0 ** np.arange(0.0, 8.01, 0.25) if lambdas is None else lambdas, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or np.any(grid <= 0):
        raise ParameterError("lambdas must be a non-empty 1-D grid of positive numbers")
    P = _difference_penalty(n, order)
    eye = np.eye(n)
    best_bic = np.full(D.shape[:-1], np.inf)
    best_eta = np.zeros(D.shape)
    best_lam = np.full(D.shape[:-1], np.nan)
    eta = np.log((D + 0.5) / E)
    for lam in grid:
        for _ in range(max_iter):
            mu = E * np.exp(eta)
            A = mu[..., :, None] * eye + lam * P
            new = np.linalg.solve(A, (mu * eta + D - mu)[..., None])[..., 0]
            done = np.max(np.abs(new - eta)) < 1e-10
            eta = new
            if done:
                break
        mu = E * np.exp(eta)
        A = mu[..., :, None] * eye + lam * P
        ed = np.trace(np.linalg.solve(A, mu[..., :, None] * eye), axis1=-2, axis2=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = 2.0 * np.sum(np.where(D > 0, D * np.log(D / mu), 0.0) - (D - mu), axis=-1)
        bic = dev + np.log(n) * ed
        better = bic < best_bic
        best_bic = np.where(better, bic, best_bic)
        best_eta = np.where(better[..., None], eta, best_eta)
        best_lam = np.where(better, lam, best_lam)
    return np.exp(best_eta), best_lam


def kannisto_rate(params, ages) -> np.ndarray:
    r"""Kannisto hazard at mid-age: ``m_x = expit(c + b (x + 1/2 - 80))``.

    Parameters
    ----------
    params : array_like, (..., 2)
        ``(c, b)`` from :func:`kannisto_fit`.
    ages : array_like of int, (n,)
        Single ages ``x`` (the rate of ``[x, x+1)`` is the hazard at ``x + 1/2``).

    Returns
    -------
    ndarray, (..., n)
    """
    p = np.asarray(params, dtype=float)
    t = np.asarray(ages, dtype=float) + 0.5 - _KANNISTO_CENTRE
    return expit(p[..., 0:1] + p[..., 1:2] * t)


def kannisto_fit(deaths, exposure, ages, *, max_iter: int = 100) -> np.ndarray:
    r"""Poisson maximum-likelihood fit of the Kannisto logistic hazard.

    Model (Thatcher, Kannisto & Vaupel 1998): ``mu(x) = a e^{b x} / (1 + a e^{b x})``,
    written ``mu = expit(c + b t)`` with ``t = x + 1/2 - 80``; deaths
    ``D_x ~ Poisson(E_x mu(x + 1/2))``. Fisher scoring on ``(c, b)`` with score
    ``sum_x (1 - mu_x)(D_x - E_x mu_x) (1, t_x)`` and information
    ``sum_x E_x mu_x (1 - mu_x)^2 (1, t_x)(1, t_x)'``, started from the
    death-weighted least-squares fit of ``logit m_x`` on ``t``. Vectorised over
    leading axes.

    Parameters
    ----------
    deaths, exposure : array_like, (..., n)
        Deaths and exposure at the single ages ``ages`` (e.g. 80..99).
    ages : array_like of int, (n,)

    Returns
    -------
    ndarray, (..., 2)
        ``(c, b)``; use :func:`kannisto_rate` to evaluate.
    """
    D, E = _check_counts(deaths, exposure, "kannisto_fit")
    ages = np.asarray(ages, dtype=float)
    if ages.ndim != 1 or ages.size != D.shape[-1] or ages.size < 2:
        raise ParameterError(f"ages must be a 1-D array of {D.shape[-1]} (>= 2) single ages")
    m = D / E
    if np.any(m <= 0) or np.any(m >= 1):
        raise DataError("kannisto_fit: every rate in the fit range must lie strictly between 0 and 1", measure="deaths")
    t = ages + 0.5 - _KANNISTO_CENTRE
    X = np.stack([np.ones_like(t), t], axis=-1)  # (n, 2)
    y = np.log(m / (1.0 - m))
    A = np.einsum("...i,ij,ik->...jk", D, X, X)
    th = np.linalg.solve(A, np.einsum("...i,...i,ij->...j", D, y, X)[..., None])[..., 0]
    for _ in range(max_iter):
        mu = expit(th[..., 0:1] + th[..., 1:2] * t)
        score = np.einsum("...i,ij->...j", (1.0 - mu) * (D - E * mu), X)
        info = np.einsum("...i,ij,ik->...jk", E * mu * (1.0 - mu) ** 2, X, X)
        step = np.linalg.solve(info, score[..., None])[..., 0]
        th = th + step
        if np.max(np.abs(step)) < 1e-12:
            break
    return th


def _l_from_m(m_single: np.ndarray, a0: float) -> np.ndarray:
    """Survivorship at exact ages 0..n from single-age rates 0..n-1 (a = 0.5, a_0 = a0)."""
    a = np.full(m_single.shape[-1], 0.5)
    a[0] = a0
    q = m_single / (1.0 + (1.0 - a) * m_single)
    lead = m_single.shape[:-1]
    return np.concatenate([np.ones(lead + (1,)), np.cumprod(1.0 - q, axis=-1)], axis=-1)


def rates_from_survivorship(l, *, a0: float = EUROSTAT_A0, last: int = 99) -> np.ndarray:
    r"""Single-age death rates ``0..last`` and the open ``(last+1)+`` rate from survivorship.

    Parameters
    ----------
    l : array_like, (..., OMEGA + 1)
        Survivorship at exact ages ``0..OMEGA`` (``l_0 = 1``), decreasing, positive
        at least through age ``last + 1``.
    a0 : float
        ``a_0`` of the life table (default Eurostat's 0.2); ``a_x = 0.5`` otherwise.
    last : int
        Last closed single age (99: Eurostat's NUTS 2 layout, open 100+).

    Returns
    -------
    ndarray, (..., last + 2)

    Notes
    -----
    ``q_x = 1 - l_{x+1} / l_x``, ``m_x = q_x / (1 - (1 - a_x) q_x)`` -- the exact
    inverse of the life table's ``q = m / (1 + (1 - a) m)``, so that
    :func:`demonoise.demography.lifetable.life_table_from_rates` of the result reproduces
    ``l_0..l_{last+1}`` to rounding. Open interval ``w = last + 1``:
    ``m_w = l_w / T_w``, ``T_w = sum_{w <= x < OMEGA} (l_x + l_{x+1}) / 2 + l_OMEGA / m_{OMEGA-1}``
    (constant hazard beyond ``OMEGA``).
    """
    l = np.asarray(l, dtype=float)  # noqa: E741
    K = l.shape[-1] - 1
    if not (0 < last + 1 < K):
        raise ParameterError(f"last={last} must lie below the survivorship grid's last age {K} - 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        q = 1.0 - l[..., 1:] / l[..., :-1]
        a = np.full(K, 0.5)
        a[0] = a0
        m = q / (1.0 - (1.0 - a) * q)
        w = last + 1
        T_w = 0.5 * np.sum(l[..., w:-1] + l[..., w + 1 :], axis=-1) + l[..., -1] / m[..., -1]
        m_open = l[..., w] / T_w
    return np.concatenate([m[..., :w], m_open[..., None]], axis=-1)


def build_standard(
    deaths,
    exposure,
    *,
    a0: float = EUROSTAT_A0,
    smooth: bool = True,
    order: int = 3,
    kannisto_ages: tuple[int, int] = (80, 99),
    kannisto_from: int = 95,
    note: str = "",
) -> Standard:
    r"""A standard single-age schedule from real (pooled) deaths and exposure.

    Parameters
    ----------
    deaths, exposure : array_like, (..., 101)
        Deaths and exposure at ages ``0..99`` and ``100+`` (Eurostat's NUTS 2
        layout, unknown ages already spread), pooled over several years: ``D_x``
        summed over the years, ``E_x`` the sum over the years ``t`` of
        ``(P_x(t) + P_x(t+1)) / 2``. Leading axes (e.g. sexes) are kept.
    a0 : float
        ``a_0`` of the life table (Eurostat's 0.2).
    smooth : bool
        Smooth ages ``1..kannisto_from - 1`` with :func:`whittaker_poisson`
        (default). ``False`` keeps the raw rates there.
    order : int
        Difference order of the smoother (3).
    kannisto_ages : (int, int)
        Inclusive age range of the Kannisto fit (80..99: the rates are plentiful
        there, the fit then extrapolates to 100+).
    kannisto_from : int
        First age whose rate is the fitted Kannisto hazard (95: pooled national rates
        are still precise below, thinner above). Ages ``100..OMEGA-1`` always come
        from the Kannisto hazard; the observed ``100+`` cell is not used.
    note : str
        Provenance text kept on the result.

    Returns
    -------
    Standard

    Notes
    -----
    The schedule is ``m_0 = D_0 / E_0`` (raw: plentiful, and a smoother would
    blur the infant drop), ``m_x`` smoothed for ``1 <= x < kannisto_from``, and
    ``m_x = expit(c + b (x + 1/2 - 80))`` for ``kannisto_from <= x < OMEGA``. Then
    ``q_x = m_x / (1 + (1 - a_x) m_x)``, ``l_{x+1} = l_x (1 - q_x)`` on ``0..OMEGA``,
    and the 101 rates are :func:`rates_from_survivorship` of that ``l`` (the open
    ``100+`` is the model's ``l_100 / T_100``).
    """
    D, E = _check_counts(deaths, exposure, "build_standard")
    if D.shape[-1] != N_AGES:
        raise DataError(
            f"build_standard: need ages 0..99 and 100+ ({N_AGES} cells) on the last axis, got {D.shape[-1]}"
        )
    k0, k1 = (int(a) for a in kannisto_ages)
    if not (1 <= k0 < k1 <= 99) or not (1 < kannisto_from < OMEGA) or kannisto_from > 100:
        raise ParameterError(f"bad Kannisto ages {kannisto_ages} / kannisto_from={kannisto_from}")
    if not (0.0 <= a0 <= 1.0):
        raise ParameterError(f"a0 must lie in [0, 1], got {a0}")
    if np.any(D[..., 0] <= 0):
        raise DataError("build_standard: no infant deaths", measure="deaths", age="Y_LT1")
    kpar = kannisto_fit(D[..., k0 : k1 + 1], E[..., k0 : k1 + 1], np.arange(k0, k1 + 1))
    lead = D.shape[:-1]
    inner = slice(1, kannisto_from)
    if smooth:
        m_inner, lam = whittaker_poisson(D[..., inner], E[..., inner], order=order)
    else:
        m_inner, lam = D[..., inner] / E[..., inner], np.full(lead, np.nan)
        if np.any(m_inner <= 0):
            raise DataError(
                "build_standard: a zero rate below the Kannisto ages makes the standard's logit undefined; use "
                "smooth=True",
                measure="deaths",
            )
    m_ext = np.concatenate(
        [D[..., :1] / E[..., :1], m_inner, kannisto_rate(kpar, np.arange(kannisto_from, OMEGA))], axis=-1
    )
    l = _l_from_m(m_ext, a0)  # noqa: E741
    if np.any(l[..., -1] <= 0) or np.any(np.diff(l, axis=-1) >= 0):
        raise DataError("build_standard: survivorship is not strictly decreasing and positive up to OMEGA")
    Y = 0.5 * np.log((1.0 - l[..., 1:]) / l[..., 1:])
    m = rates_from_survivorship(l, a0=a0)
    for arr in (m, l, Y, kpar, lam):
        arr.setflags(write=False)
    return Standard(
        m=m, l=l, Y=Y, kannisto=kpar, lam=np.asarray(lam), a0=float(a0), kannisto_from=int(kannisto_from), note=note
    )


# --------------------------------------------------------------------------- Brass model
def _params(standard: Standard, alpha, beta):
    al = np.asarray(alpha, dtype=float)
    be = np.asarray(beta, dtype=float)
    try:
        shape = np.broadcast_shapes(al.shape, be.shape, standard.lead_shape)
    except ValueError:
        raise ParameterError(
            f"alpha {al.shape}, beta {be.shape} and the standard's leading shape {standard.lead_shape} do not broadcast"
        ) from None
    if np.any(~np.isfinite(al)) or np.any(~np.isfinite(be)) or np.any(be <= 0):
        raise ParameterError(
            "alpha must be finite and beta finite and > 0 (beta <= 0 makes survivorship non-decreasing)"
        )
    return np.broadcast_to(al, shape), np.broadcast_to(be, shape)


def brass_survivorship(standard: Standard, alpha, beta) -> np.ndarray:
    r"""Survivorship of the Brass relational logit model, exact ages ``0..OMEGA``.

    ``Y_x = alpha + beta Y^s_x`` with ``Y = 1/2 ln((1 - l) / l)`` (Brass 1971), i.e.
    ``l_x = 1 / (1 + exp(2 (alpha + beta Y^s_x)))`` for ``x >= 1`` and ``l_0 = 1``.

    Parameters
    ----------
    standard : Standard
    alpha, beta : array_like
        Broadcast with each other and with the standard's leading shape
        (e.g. ``(R, S)`` against a standard for ``S`` sexes). ``beta > 0``.

    Returns
    -------
    ndarray, (..., OMEGA + 1)
    """
    al, be = _params(standard, alpha, beta)
    l = expit(-2.0 * (al[..., None] + be[..., None] * standard.Y))  # noqa: E741
    return np.concatenate([np.ones(l.shape[:-1] + (1,)), l], axis=-1)


def brass_rates(standard: Standard, alpha, beta, *, last: int = 99) -> np.ndarray:
    """Death rates of the Brass model at ages ``0..last`` and ``(last+1)+``.

    :func:`brass_survivorship` then :func:`rates_from_survivorship` (exact inversion
    with ``a = 0.5``, ``a_0`` of the standard; open rate ``l_w / T_w`` of the model).
    ``alpha = 0, beta = 1`` returns the standard's rates.

    Returns
    -------
    ndarray, (..., last + 2)
    """
    l = brass_survivorship(standard, alpha, beta)  # noqa: E741
    if np.any(l[..., last + 1] <= 0):
        raise ParameterError(f"the Brass model leaves nobody alive at age {last + 1}: alpha/beta are extreme")
    return rates_from_survivorship(l, a0=standard.a0, last=last)


def collapse_open_age(m, *, open_age: int = EUROSTAT_OPEN_AGE, a0: float = EUROSTAT_A0) -> np.ndarray:
    r"""Rates ``0..open_age-1`` and ``open_age+`` from single-age rates with an open last cell.

    The open group's rate is the stationary (life-table) one,
    ``m_{w+} = sum_{x >= w} d_x / sum_{x >= w} L_x = l_w / T_w``, from the life table
    of ``m`` (:func:`demonoise.demography.lifetable.life_table_from_rates`). It equals
    ``sum D_x / sum E_x`` of deaths ``D_x = m_x E_x`` whenever the exposure above
    ``w`` is proportional to ``L_x`` -- which is how :func:`split_open_age` splits a
    population 85+. So the project's 85+ life table of these rates has the same
    ``e_0..e_w`` as the single-age table.

    Parameters
    ----------
    m : array_like, (..., N)
        Rates at single ages ``0..N-2`` and an open ``(N-1)+``.
    open_age : int
        Start of the open group of the result (Eurostat: 85).

    Returns
    -------
    ndarray, (..., open_age + 1)
    """
    m = np.asarray(m, dtype=float)
    N = m.shape[-1]
    if not (0 < open_age < N - 1):
        raise ParameterError(f"open_age={open_age} must lie inside the single ages 1..{N - 2}")
    lt = life_table_from_rates(m, lifetable_lower(N - 1), a0=a0)
    m_open = lt.l[..., open_age] / lt.T[..., open_age]
    return np.concatenate([m[..., :open_age], m_open[..., None]], axis=-1)


def model_e(
    standard: Standard, alpha, beta, *, ages: Sequence[int] = (0, 65), open_age: int = EUROSTAT_OPEN_AGE
) -> np.ndarray:
    """Life expectancy of the Brass model with the project's (Eurostat's) life table.

    Rates :func:`brass_rates`, collapsed to ``0..open_age-1, open_age+``
    (:func:`collapse_open_age`), then :func:`demonoise.demography.lifetable.life_table_from_rates`.

    Returns
    -------
    ndarray, (..., len(ages))
        ``e_x`` at the requested ages.
    """
    m = collapse_open_age(brass_rates(standard, alpha, beta), open_age=open_age, a0=standard.a0)
    lt = life_table_from_rates(m, lifetable_lower(open_age), a0=standard.a0)
    return np.stack([lt.e[..., lt.index(a)] for a in ages], axis=-1)


def _e0_e65_and_jacobian(standard: Standard, al, be, age_k: int):
    """e_0, e_k and d/d(alpha, beta) from the model's survivorship (weights linear in l).

    ``T_k = sum_{x>=k} L_x`` with ``L_0 = a0 + (1 - a0) l_1``, ``L_x = (l_x + l_{x+1})/2``
    and the tail ``l_OMEGA / m_{OMEGA-1}`` (its dependence through ``m_{OMEGA-1}`` is
    neglected in the Jacobian: it is below 1e-6 y).
    """
    Y = standard.Y  # (..., OMEGA): ages 1..OMEGA
    lx = expit(-2.0 * (al[..., None] + be[..., None] * Y))  # l_1..l_OMEGA
    g = -2.0 * lx * (1.0 - lx)  # d l / d alpha
    a0 = standard.a0
    # weights of l_1..l_OMEGA in T_k (k >= 1): 1/2 at x = k, 1 in between, 1/2 + tail at OMEGA
    with np.errstate(divide="ignore", invalid="ignore"):
        q_last = 1.0 - lx[..., -1] / lx[..., -2]
        m_last = q_last / (1.0 - 0.5 * q_last)
        tail_w = 1.0 / m_last
    n = Y.shape[-1]
    ages = np.arange(1, n + 1)
    w_k = np.where(ages > age_k, 1.0, np.where(ages == age_k, 0.5, 0.0))
    w_k = np.broadcast_to(w_k, lx.shape).copy()
    w_k[..., -1] = 0.5 + tail_w
    w_0 = np.broadcast_to(np.ones(n), lx.shape).copy()
    w_0[..., 0] = 0.5 + (1.0 - a0)  # l_1 enters L_0 with (1 - a0) and L_1 with 1/2
    w_0[..., -1] = 0.5 + tail_w
    e0 = a0 + np.sum(w_0 * lx, axis=-1)  # L_0 = a0 + (1 - a0) l_1
    T_k = np.sum(w_k * lx, axis=-1)
    l_k = lx[..., age_k - 1]
    e_k = T_k / l_k
    de0 = np.stack([np.sum(w_0 * g, -1), np.sum(w_0 * g * Y, -1)], axis=-1)
    dT = np.stack([np.sum(w_k * g, -1), np.sum(w_k * g * Y, -1)], axis=-1)
    dl = np.stack([g[..., age_k - 1], g[..., age_k - 1] * Y[..., age_k - 1]], axis=-1)
    dek = (dT - e_k[..., None] * dl) / l_k[..., None]
    return e0, e_k, de0, dek


def _name(idx: tuple[int, ...], shape, regions, sexes) -> str:
    parts = []
    if regions is not None and len(idx) >= 1:
        parts.append(f"region {regions[idx[0]]}")
    if sexes is not None and len(idx) >= 1:
        parts.append(f"sex {sexes[idx[-1]]}")
    if not parts:
        parts.append(f"index {idx}")
    return ", ".join(parts)


def calibrate_brass(
    standard: Standard,
    e0_target,
    e65_target,
    *,
    regions: Sequence[str] | None = None,
    sexes: Sequence[str] | None = None,
    tol: float = 1e-8,
    max_iter: int = 60,
    check_tol: float = 1e-4,
    beta_range: tuple[float, float] | None = (0.25, 4.0),
):
    r"""Brass parameters ``(alpha, beta)`` that reproduce target ``e0`` and ``e65``.

    Solves ``e_0(alpha, beta) = e0_target``, ``e_65(alpha, beta) = e65_target`` where
    ``e_x`` is the project's (Eurostat's) life table at ages ``0..84, 85+`` of the
    modelled rates (:func:`model_e`). Vectorised over every leading axis: damped
    Newton on the two unknowns with the analytic Jacobian. With the rates inverted
    exactly from the model's ``l`` and the 85+ rate ``l_85 / T_85``, both life
    expectancies are linear in ``l``::

        e_0  = a_0 + (1 - a_0) l_1 + sum_{x=1}^{OMEGA-1} (l_x + l_{x+1}) / 2 + tail
        e_65 = [sum_{x=65}^{OMEGA-1} (l_x + l_{x+1}) / 2 + tail] / l_65,
        tail = l_OMEGA / m_{OMEGA-1}

    and ``d l_x / d alpha = -2 l_x (1 - l_x)``, ``d l_x / d beta = -2 Y^s_x l_x (1 - l_x)``.
    Each Newton step is halved until the residual norm falls and ``beta > 0``.
    Start: ``alpha = 0, beta = 1`` (the standard).

    Parameters
    ----------
    standard : Standard
        Leading shape broadcasts with the targets (e.g. standard ``(S,)`` for
        sexes, targets ``(R, S)``).
    e0_target, e65_target : array_like
        Target life expectancy at birth and at 65, in years.
    regions, sexes : sequence of str, optional
        Labels of the first and of the last leading axis, used to name a failing
        region and sex in the error.
    tol : float
        Convergence: ``max |e - target| < tol`` years on both.
    max_iter : int
        Newton iterations.
    check_tol : float
        After convergence the result is re-checked with :func:`model_e` (the
        project's life table); a larger discrepancy raises.
    beta_range : (float, float) or None
        Plausible slopes. The model reaches almost any pair with
        ``e0 <= 65 + e65`` (e.g. ``e0 = 86, e65 = 60`` with ``beta = 0.06``), so
        a solution outside this range flags a bad target (swapped or mistyped
        values) and raises. Calibrating every NUTS 2 region's 2019 e0/e65 on the
        Belgian 2015-2019 standard gives ``beta`` in 0.75..1.34. ``None`` accepts
        any ``beta > 0``.

    Returns
    -------
    alpha, beta : ndarray
        Broadcast shape of the targets and the standard's leading shape.

    Raises
    ------
    ParameterError
        Non-finite or non-positive targets; ``e0 > 65 + e65`` (impossible for any
        life table: ``e_0 <= 65 + e_65``); a target the two-parameter model cannot
        reach from this standard (no convergence) or reaches only with ``beta``
        outside ``beta_range``. The message names the region and sex (from
        ``regions``/``sexes``) and the targets.
    """
    t0 = np.asarray(e0_target, dtype=float)
    t65 = np.asarray(e65_target, dtype=float)
    try:
        shape = np.broadcast_shapes(t0.shape, t65.shape, standard.lead_shape)
    except ValueError:
        raise ParameterError(
            f"targets {t0.shape}, {t65.shape} and the standard's leading shape {standard.lead_shape} do not broadcast"
        ) from None
    t0, t65 = np.broadcast_to(t0, shape), np.broadcast_to(t65, shape)

    def fail(mask, why):
        idx = tuple(int(i) for i in np.argwhere(mask)[0]) if mask.ndim else ()
        raise ParameterError(
            f"unreachable target e0={t0[idx]:.3f}, e65={t65[idx]:.3f} for {_name(idx, shape, regions, sexes)}: {why}"
        )

    bad = ~np.isfinite(t0) | ~np.isfinite(t65) | (t0 <= 0) | (t65 <= 0)
    if bad.any():
        fail(bad, "targets must be finite positive numbers of years")
    bad = t0 > 65.0 + t65
    if bad.any():
        fail(bad, "e0 > 65 + e65 is impossible for any life table (e0 <= 65 + e65)")
    al = np.zeros(shape)
    be = np.ones(shape)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):

        def resid(al, be):
            e0, e65, j0, j65 = _e0_e65_and_jacobian(standard, al, be, 65)
            return np.stack([e0 - t0, e65 - t65], axis=-1), j0, j65

        F, j0, j65 = resid(al, be)
        stuck = np.zeros(shape, dtype=bool)  # no step along the Newton direction reduces the residual
        for _ in range(max_iter):
            norm = np.max(np.abs(F), axis=-1)
            todo = ~(norm < tol) & ~stuck
            if not todo.any():
                break
            det = j0[..., 0] * j65[..., 1] - j0[..., 1] * j65[..., 0]
            d_al = -(j65[..., 1] * F[..., 0] - j0[..., 1] * F[..., 1]) / det
            d_be = -(-j65[..., 0] * F[..., 0] + j0[..., 0] * F[..., 1]) / det
            d_al = np.where(np.isfinite(d_al), d_al, 0.0)
            d_be = np.where(np.isfinite(d_be), d_be, 0.0)
            step = np.ones(shape)
            accepted = ~todo
            new = [al, be, F, j0, j65]
            for _h in range(40):  # step halving, per element
                c_al = al + step * d_al
                c_be = be + step * d_be
                ok_b = c_be > 0
                c_F, c_j0, c_j65 = resid(c_al, np.where(ok_b, c_be, 1.0))
                c_norm = np.max(np.abs(c_F), axis=-1)
                good = ~accepted & ok_b & np.isfinite(c_norm) & (c_norm < norm)
                for i, c in enumerate((c_al, c_be, c_F, c_j0, c_j65)):
                    g = good if c.ndim == len(shape) else good[..., None]
                    new[i] = np.where(g, c, new[i])
                accepted = accepted | good
                if accepted.all():
                    break
                step = step * 0.5
            al, be, F, j0, j65 = new
            stuck = stuck | ~accepted
    norm = np.max(np.abs(F), axis=-1)
    bad = ~(norm < tol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        fail(
            bad,
            f"the Brass model on this standard gets no closer than {norm[idx]:.3g} y "
            f"(alpha={al[idx]:.3f}, beta={be[idx]:.3f})",
        )
    if beta_range is not None:
        lo, hi = beta_range
        bad = (be < lo) | (be > hi)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
            fail(bad, f"it needs beta={be[idx]:.3f}, outside the plausible range {lo}..{hi} (beta_range)")
    e = model_e(standard, al, be)
    err = np.maximum(np.abs(e[..., 0] - t0), np.abs(e[..., 1] - t65))
    bad = ~(err < check_tol)
    if bad.any():
        fail(bad, f"the life table of the calibrated rates misses the target by {np.max(err):.3g} y")
    return al, be


# --------------------------------------------------------------------------- population and deaths
def split_open_age(pop_open, m_model, *, open_age: int = EUROSTAT_OPEN_AGE, a0: float = EUROSTAT_A0) -> np.ndarray:
    r"""Split a population aged ``open_age+`` into single ages and the model's open group.

    In proportion to the model's stationary population ``L_x`` (life table of
    ``m_model``; ``L_{100+} = l_100 / m_{100+}``), in integers summing exactly to the
    input by the largest-remainder rule (Hamilton's method)::

        quota_x = P * L_x / sum_{y >= open_age} L_y
        n_x = floor(quota_x) + [x among the P - sum floor(quota) largest remainders]

    Ties in the remainder go to the younger age. Cohort-size differences within
    85+ are not modelled.

    Parameters
    ----------
    pop_open : array_like of int, (...)
        Population aged ``open_age`` and over (non-negative integers).
    m_model : array_like, (..., N)
        Model rates at single ages ``0..N-2`` and the open ``(N-1)+``
        (:func:`brass_rates`); broadcasts with ``pop_open``.
    open_age : int
        85 (Eurostat's life-table open age, the last published 5-year group Y_GE85).

    Returns
    -------
    ndarray of int64, (..., N - open_age)
        Counts at ages ``open_age..N-2`` and ``(N-1)+``.
    """
    P = np.asarray(pop_open)
    if P.dtype.kind == "f":
        if np.any(~np.isfinite(P)) or np.any(P != np.round(P)):
            raise DataError(
                "split_open_age: population must be whole numbers", measure="population", age=f"Y_GE{open_age}"
            )
        P = P.astype(np.int64)
    elif P.dtype.kind not in "iu":
        raise DataError(f"split_open_age: population must be numbers, got dtype {P.dtype}", measure="population")
    if np.any(P < 0):
        idx = tuple(int(i) for i in np.argwhere(P < 0)[0])
        raise DataError(
            f"split_open_age: negative population {int(P[idx])}", measure="population", age=f"Y_GE{open_age}", key=idx
        )
    m = np.asarray(m_model, dtype=float)
    N = m.shape[-1]
    if not (0 < open_age < N - 1):
        raise ParameterError(f"open_age={open_age} must lie inside the single ages 1..{N - 2}")
    lt = life_table_from_rates(m, lifetable_lower(N - 1), a0=a0)
    L = lt.L[..., open_age:]
    lead = np.broadcast_shapes(P.shape, L.shape[:-1])
    # largest-remainder apportionment of P in proportion to L (one group of all the ages)
    return to_integers(np.broadcast_to(L, lead + L.shape[-1:]), np.broadcast_to(P, lead)[..., None])


def expected_deaths(m_model, exposure) -> np.ndarray:
    r"""Expected deaths ``D_x = m_x E_x`` (float, broadcast over leading axes).

    Parameters
    ----------
    m_model, exposure : array_like, (..., A)
        Model rates and exposure on the same age axis (e.g. ages 0..99, 100+ with
        ``E_x = (P_x(t) + P_x(t+1)) / 2``).
    """
    m = np.asarray(m_model, dtype=float)
    E = np.asarray(exposure, dtype=float)
    try:
        out = m * E
    except ValueError:
        raise DataError(f"rates {m.shape} and exposure {E.shape} do not broadcast") from None
    bad = ~np.isfinite(out) | (out < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(f"expected deaths must be finite and non-negative, got {out[idx]!r}", measure="deaths", key=idx)
    return out


def draw_deaths(expected, rng: np.random.Generator) -> np.ndarray:
    r"""Poisson draw of deaths, ``D_x ~ Poisson(expected_x)``, independently per cell.

    Parameters
    ----------
    expected : array_like of float
        Expected deaths (:func:`expected_deaths`), finite and non-negative.
    rng : numpy.random.Generator
        Seeded generator (``numpy.random.default_rng(seed)``).

    Returns
    -------
    ndarray of int64, same shape.

    Notes
    -----
    Uses ``rng.poisson`` once on the whole array (C order). For a given seed the
    result is reproducible bit for bit with the same numpy version and bit generator
    (PCG64 by default). numpy's policy (NEP 19) allows ``Generator`` streams to
    change between versions, so a dataset built from a seed records the numpy
    version it was built with (the project pins it).
    """
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(
            f"rng must be a numpy.random.Generator (numpy.random.default_rng(seed)), got {type(rng).__name__}"
        )
    lam = np.asarray(expected, dtype=float)
    bad = ~np.isfinite(lam) | (lam < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(f"expected deaths must be finite and non-negative, got {lam[idx]!r}", measure="deaths", key=idx)
    return rng.poisson(lam).astype(np.int64)
