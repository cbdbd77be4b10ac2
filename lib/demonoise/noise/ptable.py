"""Perturbation tables (p-tables) of the Cell Key Method: build, read, moments, cell keys.

A p-table gives, for every original count ``i = 0..I`` (the last row standing for all
larger counts), the law of the perturbed count ``j`` -- equivalently of the noise
``v = j - i`` -- with probabilities ``p_i(v)``. Publication with the Cell Key Method (CKM)
replaces a count ``n`` by ``n + v`` where ``v`` is looked up from the row
``min(n, I)`` with the cell's *cell key*, a number in ``[0, 1)`` derived from the
records in the cell (:func:`cell_keys`): the same records always give the same key
and hence the same noise ("consistency"), but a margin perturbed on its own is not
the sum of its perturbed inner cells ("non-additivity").

Two lookups exist:

* interval tables (the R package ptable, tau-Argus): ``v`` is the entry whose
  cumulative interval ``[p_int_lb, p_int_ub)`` holds the key;
* key tables (Eurostat's census format ``pcv;ckey;pvalue``): the key selects one of
  ``K`` integer cell keys, ``ckey = floor(K * key) + 1``, and the table lists the noise
  for each ``(pcv, ckey)``.

:func:`build_ptable` reproduces the construction of the R package ptable 1.0.0
(``create_cnt_ptable(D, V, js, pstay)`` with ``optim = 1, mono = TRUE``), solving its
maximum-entropy problem to about 1e-12 with a primal-dual interior-point method.

References
----------
.. [1] Giessing, S. (2016). Computational issues in the design of transition
   probabilities and disclosure risk estimation for additive noise. In
   Domingo-Ferrer, J., Pejic-Bach, M. (eds), Privacy in Statistical Databases,
   LNCS 9867, 237-251. Springer.
.. [2] Enderle, T. ptable: Generation of perturbation tables for the cell-key method,
   R package version 1.0.0 (2023), https://github.com/sdcTools/ptable
   (``R/pt_create_pTable.R``, ``R/pt_optim_entropy.R``).
.. [3] Fraser, B., Wooton, J. (2006). A proposed method for confidentialising tabular
   output to protect against differencing. Monographs of Official Statistics, Work
   session on Statistical Data Confidentiality, Eurostat, 299-302.
.. [4] Boyd, S., Vandenberghe, L. (2004). Convex Optimization, section 11.7
   (primal-dual interior-point method). Cambridge University Press.
"""

# ruff: noqa: E741 -- I is the p-table's largest count class, as Eurostat and the R package ptable name it
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from demonoise.core.errors import DataError, ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "PTable",
    "Transition",
    "VarianceNotReachedWarning",
    "build_ptable",
    "V_MAX",
    "D_MAX",
    "check_variance",
    "check_variance_limit",
    "check_deviation_limit",
    "BUILD_D_MAX",
    "check_build_limit",
]

#: Largest noise variance accepted anywhere. A noise sd above 10^6 swamps every published
#: count (cells hold at most 10^9, and national single-age cells about 10^6), and the
#: generic noise law lives on about 18 sqrt(V) integers: 2.3 GB of arrays at V = 10^15.
V_MAX = 1e12
#: Largest maximum deviation of a built p-table: each of the D (or D + js + 1) rows is an
#: optimisation over 2D + 1 perturbed values, so memory grows like D^2 (74.5 GiB at
#: D = 10^5) and time faster still; Eurostat's tables use D <= 5.
D_MAX = 10_000


def check_deviation_limit(D: int, what: str = "D (maximum deviation)") -> None:
    """Refuse a p-table's ``D`` above :data:`D_MAX` with a message saying the limit and why."""
    if D > D_MAX:
        raise ParameterError(
            f"{what} = {D} is above the limit 10^4: building the p-table takes memory growing like D^2 "
            "(74.5 GiB at D = 10^5) and time faster still; Eurostat's tables use D <= 5"
        )


#: Largest ``D`` of a p-table *built* here. Each row's interior-point solve works on dense
#: (2D + 1)-square systems, so the build time grows like about D^3.5: 1.2 s at D = 10,
#: 4.7 s at D = 20, 18.5 s at D = 30 (``demonoise ptable build --V 1``, 2 cores shared,
#: load average about 6), hence about 20 minutes at D = 100 and days at D = 10^3.
#: Reading a table of larger D from a file is not limited by this.
BUILD_D_MAX = 100


def check_build_limit(D: int, what: str = "D (maximum deviation)") -> None:
    """Refuse building a p-table of ``D`` above :data:`BUILD_D_MAX`, saying why."""
    if D > BUILD_D_MAX:
        raise ParameterError(
            f"{what} = {D} is above the limit {BUILD_D_MAX} for building a p-table: the build time grows like "
            "D^3.5 (18.5 s at D = 30, about 20 minutes at D = 100); Eurostat's tables use D <= 5"
        )


def check_variance(V: float, what: str = "V") -> float:
    """``V`` if it is a finite number > 0 within :func:`check_variance_limit` (ParameterError otherwise)."""
    if not (math.isfinite(V) and V > 0):
        raise ParameterError(f"{what} is a variance and must be a finite number > 0, got {V:g}")
    check_variance_limit(V, what)
    return V


def check_variance_limit(V: float, what: str = "V (noise variance)") -> None:
    """Refuse ``V`` above :data:`V_MAX` with a message saying the limit and why."""
    if V > V_MAX:
        raise ParameterError(
            f"{what} = {V:g} is above the limit 10^12: a noise sd above 10^6 swamps every published count, "
            "and the noise law on 18 sqrt(V) integers would not fit in memory"
        )


#: Tolerance (bin fraction) when turning a key in [0, 1) into one of K integer keys:
#: keys made from integer record keys, m / K, may round just below the bin edge.
_KEY_EDGE_EPS = 1e-9
#: Largest key table (count classes x cell keys) built by :meth:`PTable.to_key_table`.
_MAX_KEY_CELLS = 10**8
#: Decimals of the cumulative interval bounds used by interval lookups.
_CUM_DECIMALS = 12


class VarianceNotReachedWarning(UserWarning):
    """A built p-table has a variance below the nominal ``V`` for some small counts."""


class Transition(NamedTuple):
    """Law of one original count: perturbed counts ``j``, noises ``v``, probabilities ``p``."""

    j: np.ndarray
    v: np.ndarray
    p: np.ndarray


# =============================================================================== PTable
def _checked_entries(i, v, p, table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A p-table's entries ``(i, v, p)`` checked and sorted by count then noise, with row 0
    added when absent; DataError naming what is wrong (integers, no negative result,
    probabilities in [0, 1] summing to 1 per count, no duplicate, classes 0..I without
    gaps, zeros left unchanged)."""
    i, v, p = np.asarray(i), np.asarray(v), np.asarray(p, dtype=np.float64)
    if not (i.shape == v.shape == p.shape) or i.ndim != 1 or i.size == 0:
        raise DataError("p-table entries i, v, p must be 1-D arrays of equal, non-zero length", table=table)
    for name, a in (("i", i), ("v", v)):
        if a.dtype.kind == "f" and np.any(a != np.round(a)):
            raise DataError(f"p-table column {name} must hold integers", table=table)
    i, v = i.astype(np.int64), v.astype(np.int64)
    if np.any(i < 0) or np.any(i + v < 0):
        k = int(np.argmax((i < 0) | (i + v < 0)))
        raise DataError(f"p-table entry i={i[k]}, v={v[k]} gives a negative count", table=table)
    if np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise DataError("p-table probabilities must lie in [0, 1]", table=table)
    order = np.lexsort((v, i))
    i, v, p = i[order], v[order], p[order]
    if np.any((np.diff(i) == 0) & (np.diff(v) == 0)):
        k = int(np.argmax((np.diff(i) == 0) & (np.diff(v) == 0)))
        raise DataError(f"duplicated p-table entry i={i[k]}, v={v[k]}", table=table)
    if i[0] != 0:
        i, v, p = np.r_[0, i], np.r_[0, v], np.r_[1.0, p]
    _check_rows(i, v, p, table)
    return i, v, p


def _check_rows(i: np.ndarray, v: np.ndarray, p: np.ndarray, table) -> None:
    """Classes 0..I without gaps, zeros unchanged, each row's probabilities summing to 1."""
    I = int(i[-1])
    if len(np.unique(i)) != I + 1:
        raise DataError(f"p-table classes must run over 0..{I} without gaps", table=table)
    row0 = i == 0
    if not (row0.sum() == 1 and v[row0][0] == 0 and p[row0][0] == 1.0):
        raise DataError("p-table row for count 0 must leave zeros unchanged (v = 0 with p = 1)", table=table)
    starts = np.flatnonzero(np.r_[True, np.diff(i) != 0])
    sums = np.add.reduceat(p, starts)
    if np.any(np.abs(sums - 1) > 1e-6):
        r = int(np.argmax(np.abs(sums - 1)))
        raise DataError(f"p-table probabilities for count {r} sum to {sums[r]!r}, not 1", table=table)


@dataclass(frozen=True, eq=False)
class PTable:
    """An immutable perturbation table for count data.

    Parameters
    ----------
    i, v : array_like of int
        Original-count class and noise of each entry. Classes run over ``0..I``; the
        last class stands for every count ``>= I``. Row ``i = 0`` is added as the
        identity (zeros stay zero) when absent and must be the identity when present.
    p : array_like of float
        Probability of each entry; per class they sum to 1 (within 1e-6).
    D, V, js, pstay : optional
        Construction parameters (maximum deviation, nominal variance, blocked results
        ``1..js``, preset probability of no change), when known.
    source, label : str
        Where the table comes from, and a short name used in results tables.
    key_table : ndarray of int, shape (I + 1, K), optional
        Noise per class and integer cell key (Eurostat format). With it,
        :meth:`lookup` uses the key table; without it, cumulative intervals.
    build_info : pandas.DataFrame, optional
        Per-class diagnostics of :func:`build_ptable` (unrounded variance, largest
        variance the constraints allow, effective ``pstay`` bound, solver residual).

    Raises
    ------
    DataError
        Inconsistent entries (negative perturbed count, probabilities outside [0, 1]
        or not summing to 1, gaps in the classes, non-identity row 0).
    """

    i: np.ndarray
    v: np.ndarray
    p: np.ndarray
    D: int | None = None
    V: float | None = None
    js: int = 0
    pstay: tuple[float, ...] | None = None
    source: str = ""
    label: str = ""
    key_table: np.ndarray | None = None
    build_info: pd.DataFrame | None = None
    _vals: np.ndarray = field(init=False, repr=False)
    _cum: np.ndarray = field(init=False, repr=False)
    _mean: np.ndarray = field(init=False, repr=False)
    _var: np.ndarray = field(init=False, repr=False)
    _m2: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        i, v, p = _checked_entries(self.i, self.v, self.p, self.source or None)
        I = int(i[-1])
        starts = np.flatnonzero(np.r_[True, np.diff(i) != 0])
        counts = np.diff(np.r_[starts, len(i)])
        W = int(counts.max())
        vals = np.zeros((I + 1, W), dtype=np.int64)
        cum = np.full((I + 1, W), np.inf)
        col = np.arange(len(i)) - np.repeat(starts, counts)
        vals[i, col] = v
        # pad with the row's last noise so that an index can never leave the row
        last = v[starts + counts - 1]
        for r in np.flatnonzero(counts < W):
            vals[r, counts[r] :] = last[r]
        # cumulative bounds, rounded to 12 decimals so that decimal bounds (p_int_ub in
        # files, ptable's 8-decimal rounding) are reproduced exactly: 0.1 + 0.2 -> 0.3
        cs = np.round(
            np.concatenate([np.cumsum(p[s : s + c]) for s, c in zip(starts, counts, strict=True)]), _CUM_DECIMALS
        )
        cum[i, col] = cs
        cum[np.arange(I + 1), counts - 1] = np.inf  # last interval closes the row
        mean = np.bincount(i, weights=p * v, minlength=I + 1)
        m2 = np.bincount(i, weights=p * v.astype(float) ** 2, minlength=I + 1)
        var = np.bincount(i, weights=p * (v - mean[i]) ** 2, minlength=I + 1)
        kt = self.key_table
        if kt is not None:
            kt = np.asarray(kt, dtype=np.int64)
            if kt.ndim != 2 or kt.shape[0] != I + 1:
                raise DataError(f"key table must have {I + 1} rows (counts 0..{I})", table=self.source or None)
            kt = kt.copy()
            kt.setflags(write=False)
        for a in (i, v, p, vals, cum, mean, var, m2):
            a.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "i", i)
        set_(self, "v", v)
        set_(self, "p", p)
        set_(self, "key_table", kt)
        set_(self, "_vals", vals)
        set_(self, "_cum", cum)
        set_(self, "_mean", mean)
        set_(self, "_var", var)
        set_(self, "_m2", m2)
        if self.pstay is not None:
            set_(self, "pstay", tuple(float(x) for x in np.atleast_1d(self.pstay)))
        if not self.label:
            set_(self, "label", _default_label(self.D, self.V, self.js))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_data(cls, data, **meta) -> PTable:
        """Build from parsed file contents: any object with ``i``, ``v``, ``p``, ``key_table``
        and ``source`` (as :class:`demonoise.io.ptable_files.PTableData` has)."""
        return cls(i=data.i, v=data.v, p=data.p, key_table=data.key_table, source=data.source, **meta)

    # ------------------------------------------------------------------ properties
    @property
    def I(self) -> int:  # noqa: E743 (the p-table literature's name)
        """Largest original-count class (it stands for every count ``>= I``)."""
        return int(self.i[-1])

    @property
    def j(self) -> np.ndarray:
        """Perturbed count ``i + v`` of each entry."""
        return self.i + self.v

    @property
    def max_deviation(self) -> int:
        """Largest ``|v|`` in the table."""
        return int(np.abs(self.v).max())

    @property
    def n_keys(self) -> int | None:
        """Number ``K`` of integer cell keys (key tables), else ``None``."""
        return None if self.key_table is None else int(self.key_table.shape[1])

    def mean(self, counts=None) -> np.ndarray:
        """Per-class noise mean (bias) ``sum_v p_i(v) v``; with ``counts``, per cell."""
        return self._mean.copy() if counts is None else self._mean[self._rows(counts)]

    def variance(self, counts=None) -> np.ndarray:
        """Per-class noise variance ``sum_v p_i(v) (v - mean_i)^2``; with ``counts``, per cell."""
        return self._var.copy() if counts is None else self._var[self._rows(counts)]

    # ------------------------------------------------------------------ summaries
    @property
    def resolution(self) -> float:
        """Tolerance of "V reached": the probability resolution of the table times its largest
        squared noise (key tables: 1/K; built or transition tables: 1e-8), at least 1e-6."""
        step = 1.0 / self.n_keys if self.n_keys else 1e-8
        return max(1e-6, step * self.max_deviation**2)

    def moments(self, tol: float = 1e-6, V: float | None = None):
        """Exact per-count moments of the noise.

        Parameters
        ----------
        tol : float
            Tolerance of ``V_reached`` (:attr:`resolution` is the table's own).
        V : float, optional
            The nominal variance to check (default: the table's own, :attr:`V`).

        Returns
        -------
        pandas.DataFrame
            One row per class ``i``: ``mean`` (the bias ``E v``), ``variance``
            (``E (v - E v)^2``), ``second_moment`` (``E v^2``, the mean squared error),
            ``p_stay`` (``P(v = 0)``), ``nominal_V``, ``variance_minus_V`` and
            ``V_reached`` (``variance >= V - tol``; missing for ``i = 0``, whose zeros
            stay zero by design, or when ``V`` is unknown).
        """
        import pandas as pd

        I = self.I
        stay = np.zeros(I + 1)
        z = self.v == 0
        stay[self.i[z]] = self.p[z]
        df = pd.DataFrame(
            {
                "i": np.arange(I + 1),
                "mean": self._mean,
                "variance": self._var,
                "second_moment": self._m2,
                "p_stay": stay,
            }
        )
        V = self.V if V is None else V
        nominal = np.nan if V is None else float(V)
        df["nominal_V"] = nominal
        df["variance_minus_V"] = df["variance"] - nominal
        reached = pd.array(self._var >= nominal - tol, dtype="boolean")
        if V is None:
            reached[:] = pd.NA
        reached[0] = pd.NA
        df["V_reached"] = reached
        return df

    def transition(self, n: int) -> Transition:
        """Law of the perturbed count for an original count ``n`` (``n > I`` uses row ``I``)."""
        n = int(n)
        if n < 0:
            raise DataError(f"negative count {n}")
        r = min(n, self.I)
        sel = self.i == r
        v = self.v[sel].copy()
        return Transition(j=n + v, v=v, p=self.p[sel].copy())

    def matrix(self) -> np.ndarray:
        """Transition matrix ``P[i, j]`` for ``i = 0..I``, ``j = 0..max j``."""
        P = np.zeros((self.I + 1, int(self.j.max()) + 1))
        P[self.i, self.j] = self.p
        return P

    # ------------------------------------------------------------------ lookup
    def _rows(self, counts) -> np.ndarray:
        c = np.asarray(counts)
        if c.dtype.kind == "f":
            if np.any(~np.isfinite(c)) or np.any(c != np.round(c)):
                raise DataError("counts must be finite integers")
            c = np.round(c).astype(np.int64)
        elif c.dtype.kind not in "iub":
            raise DataError(f"counts must be integers, got dtype {c.dtype}")
        if np.any(c < 0):
            idx = tuple(int(x) for x in np.argwhere(c < 0)[0])
            raise DataError(f"negative count {int(c[idx])} at index {idx}")
        return np.minimum(c, self.I).astype(np.intp)

    def lookup(self, counts, cell_keys) -> np.ndarray:
        """Noise for each cell given its original count and cell key.

        Parameters
        ----------
        counts : array_like of int
            Original counts (>= 0); broadcast against ``cell_keys``.
        cell_keys : array_like of float
            Cell keys in ``[0, 1)``.

        Returns
        -------
        ndarray of int64
            The noise ``v``: for key tables ``key_table[min(n, I), floor(K key)]``
            (with a 1e-9 bin tolerance so that keys ``m / K`` from integer record keys
            select key ``m + 1``); otherwise the entry whose cumulative interval
            ``[P_{k-1}, P_k)`` of row ``min(n, I)`` holds the key, with the bounds
            ``P_k`` rounded to 12 decimals (so that decimal bounds such as ptable's
            ``p_int_ub`` are met exactly). Zero counts get 0.
        """
        rows = self._rows(counts)
        keys = np.asarray(cell_keys, dtype=np.float64)
        if np.any(~np.isfinite(keys)) or np.any(keys < 0) or np.any(keys >= 1):
            raise DataError("cell keys must lie in [0, 1)")
        rows, keys = np.broadcast_arrays(rows, keys)
        if self.key_table is not None:
            K = self.key_table.shape[1]
            col = np.floor(keys * K + _KEY_EDGE_EPS).astype(np.int64) % K
            return self.key_table[rows, col]
        k = np.zeros(rows.shape, dtype=np.intp)
        for c in range(self._cum.shape[1] - 1):
            k += keys >= self._cum[rows, c]
        return self._vals[rows, k]

    def to_key_table(self, K: int) -> np.ndarray:
        """Quantise to ``K`` integer cell keys: key ``c`` (1..K) gets the noise at ``(c - 1/2) / K``.

        For a table that already has a key table with ``K`` columns, that table is
        returned unchanged.
        """
        K = int(K)
        if K < 1:
            raise ParameterError(f"number of cell keys K must be >= 1, got {K}")
        if (self.I + 1) * K > _MAX_KEY_CELLS:
            raise ParameterError(
                f"a key table of {self.I + 1} count classes x K = {K} keys has more than 10^8 entries "
                "(800 MB); use fewer keys (Eurostat's tables use 10^5)"
            )
        if self.key_table is not None and self.key_table.shape[1] == K:
            return np.array(self.key_table)
        u = (np.arange(K) + 0.5) / K
        rows = np.repeat(np.arange(self.I + 1), K)
        return self._interval_view().lookup(rows, np.tile(u, self.I + 1)).reshape(self.I + 1, K)

    def _interval_view(self) -> PTable:
        if self.key_table is None:
            return self
        return PTable(self.i, self.v, self.p, D=self.D, V=self.V, js=self.js, source=self.source, label=self.label)

    def __repr__(self) -> str:
        k = f", K={self.n_keys}" if self.key_table is not None else ""
        return f"PTable({self.label!r}, classes 0..{self.I}, max |v| {self.max_deviation}{k}, source {self.source!r})"


def _default_label(D, V, js) -> str:
    if D is None and V is None:
        return "ptable"
    parts = []
    if D is not None:
        parts.append(f"D{D}")
    if V is not None:
        parts.append(f"V{V:g}")
    if js:
        parts.append(f"js{js}")
    return "ptable " + " ".join(parts)


# =============================================================================== building
class _Infeasible(Exception):
    def __init__(self, constraint: str, detail: str):
        super().__init__(f"{constraint}: {detail}")
        self.constraint, self.detail = constraint, detail


def _row_problem(v: np.ndarray, V: float, lb: np.ndarray, mono: bool):
    """Constraint matrices of one row: A x = b (sum, mean), G x <= h (variance, mono, bounds)."""
    n = len(v)
    A = np.vstack([np.ones(n), v])
    b = np.array([1.0, 0.0])
    G = [v**2]
    h = [float(V)]
    names = ["variance"]
    if mono and np.any(v == 0):
        z = int(np.flatnonzero(v == 0)[0])
        for k in range(z):  # p(v_k) <= p(v_{k+1}) up to v = 0 (R: eval_g_mono)
            g = np.zeros(n)
            g[k], g[k + 1] = 1.0, -1.0
            G.append(g)
            h.append(0.0)
            names.append("mono")
    for k in range(n):  # p >= lower bound (epsilon, or pstay at v = 0)
        g = np.zeros(n)
        g[k] = -1.0
        G.append(g)
        h.append(-float(lb[k]))
        names.append("lower bound")
    return A, b, np.array(G), np.array(h), names


def _lp(c, A_ub, b_ub, A_eq, b_eq, bounds):
    from scipy.optimize import linprog

    return linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")


def _variance_range(A, b, G, h) -> tuple[float | None, float | None]:
    """Smallest and largest ``sum v^2 p`` under all constraints but the variance bound (LP)."""
    g_var = G[0]
    out = []
    for sign in (1.0, -1.0):
        res = _lp(sign * g_var, G[1:], h[1:], A, b, [(None, None)] * len(g_var))
        out.append(sign * res.fun if res.status == 0 else None)
    return out[0], out[1]


def _fixed_row(v: np.ndarray, V: float, lb: np.ndarray):
    """``(p, info)`` of a row whose law the constraints fix -- noises on one side of 0 and
    0 (a point mass at 0), or two noises (sum and mean fix it) --, None for any other row;
    raises :class:`_Infeasible` when there is no law."""
    if v.min() > 0 or v.max() < 0:
        raise _Infeasible("mean 0", "every allowed perturbed value lies on one side of the original count")
    if v.min() == 0 or v.max() == 0:
        # only v = 0 and values on one side: mean 0 forces a point mass at v = 0 (the
        # other entries get probability 0; ptable's solver returns epsilon there)
        p = (v == 0).astype(np.float64)
        return p, {"iterations": 0, "residual": 0.0, "note": "point mass (one-sided support)"}
    if len(v) != 2:
        return None
    a, c = -v[0], v[1]
    p = np.array([c / (a + c), a / (a + c)])
    if p @ v**2 > V * (1 + 1e-12):
        raise _Infeasible(
            "variance <= V", f"the only law with mean 0 on noises {v.tolist()} has variance {p @ v**2:.6g}"
        )
    if np.any(p < lb):
        raise _Infeasible("lower bound", f"the only law with mean 0 on noises {v.tolist()} violates the lower bounds")
    return p, {"iterations": 0, "residual": 0.0}


def _interior_start(A, b, G, h, V: float):
    """Phase I: the point of largest slack, ``max tau`` s.t. ``G x + tau <= h``, ``A x = b``,
    ``tau <= 1`` (a linear programme); raises :class:`_Infeasible` naming the constraint
    that leaves no interior (a lower bound, the variance bound, or none strictly)."""
    m, n = G.shape
    c = np.zeros(n + 1)
    c[-1] = -1.0
    res = _lp(
        c, np.hstack([G, np.ones((m, 1))]), h, np.hstack([A, np.zeros((2, 1))]), b, [(None, None)] * n + [(None, 1.0)]
    )
    tau = res.x[-1] if res.status == 0 else -np.inf
    if tau > 1e-11:
        return res
    vmin, _ = _variance_range(A, b, G, h)
    if vmin is None:
        raise _Infeasible(
            "lower bound", "no law with mean 0 satisfies the lower bounds (epsilon / pstay) and monotonicity"
        )
    if vmin >= V - 1e-11:
        why = " (just above V: every probability must be at least epsilon)" if vmin - V < 1e-6 else ""
        raise _Infeasible("variance <= V", f"the smallest variance the other constraints allow is {vmin:.10g}{why}")
    raise _Infeasible("strict feasibility", "the constraints leave no interior (degenerate parameter set)")


def _max_entropy_row(v: np.ndarray, V: float, lb: np.ndarray, mono: bool, tol: float = 1e-12, maxiter: int = 200):
    """Maximum entropy law on the noises ``v`` under ptable's constraints.

    Solves ``min sum_k p_k log p_k`` subject to ``sum p = 1``, ``sum v p = 0``,
    ``sum v^2 p <= V``, ``p_k <= p_{k+1}`` for the entries below ``v = 0`` (mono),
    ``p >= lb``, by a primal-dual interior-point method [4] started from the point of
    largest constraint slack (a linear programme, which also detects infeasibility).

    Returns ``(p, info)`` with ``info`` holding the iteration count and the KKT
    residual. Raises :class:`_Infeasible` naming the violated constraint.
    """
    n = len(v)
    fixed = _fixed_row(v, V, lb)
    if fixed is not None:
        return fixed
    A, b, G, h, _names = _row_problem(v, V, lb, mono)
    m = len(h)
    res = _interior_start(A, b, G, h, V)
    x = res.x[:n].copy()
    lam = np.ones(m)
    nu = np.zeros(2)
    mu = 10.0

    def residuals(x, lam, nu, t):
        fx = G @ x - h
        rd = np.log(x) + 1.0 + G.T @ lam + A.T @ nu
        rc = -lam * fx - 1.0 / t
        rp = A @ x - b
        return rd, rc, rp

    iterations = 0
    for _ in range(maxiter):
        iterations += 1
        fx = G @ x - h
        eta = -fx @ lam
        t = mu * m / eta
        rd, rc, rp = residuals(x, lam, nu, t)
        if max(np.abs(rd).max(), np.abs(rp).max()) <= tol and eta <= tol:
            break
        K = np.zeros((n + m + 2, n + m + 2))
        K[:n, :n] = np.diag(1.0 / x)
        K[:n, n : n + m] = G.T
        K[:n, n + m :] = A.T
        K[n : n + m, :n] = -lam[:, None] * G
        K[n : n + m, n : n + m] = -np.diag(fx)
        K[n + m :, :n] = A
        d = np.linalg.solve(K, -np.concatenate([rd, rc, rp]))
        dx, dl, dn = d[:n], d[n : n + m], d[n + m :]
        neg = dl < 0
        s = min(1.0, 0.99 * float(np.min(-lam[neg] / dl[neg]))) if neg.any() else 1.0
        while s > 1e-16 and (np.any(G @ (x + s * dx) - h >= 0) or np.any(x + s * dx <= 0)):
            s *= 0.5
        r0 = np.linalg.norm(np.concatenate([rd, rc, rp]))
        while s > 1e-16:
            r1 = np.linalg.norm(np.concatenate(residuals(x + s * dx, lam + s * dl, nu + s * dn, t)))
            if r1 <= (1 - 0.01 * s) * r0:
                break
            s *= 0.5
        if s <= 1e-16:
            break
        x, lam, nu = x + s * dx, lam + s * dl, nu + s * dn
    fx = G @ x - h
    rd = np.log(x) + 1.0 + G.T @ lam + A.T @ nu
    resid = float(max(np.abs(rd).max(), np.abs(A @ x - b).max(), -fx @ lam))
    return x, {"iterations": iterations, "residual": resid}


def _round_row(p: np.ndarray, ndigits: int) -> np.ndarray:
    """ptable's final step: round the cumulative bounds, take p as their differences."""
    ub = np.cumsum(p)
    lb = ub - p
    return np.round(ub, ndigits) - np.round(lb, ndigits)


def _build_arguments(D, V, js, epsilon) -> tuple[int, float, int]:
    """``(D, V, js)`` of :func:`build_ptable` checked (ParameterError naming the one at fault)."""
    try:
        D_int = int(D)
    except (TypeError, ValueError):
        raise ParameterError(f"D must be a positive integer, got {D!r}") from None
    if D_int != D or D_int < 1:
        raise ParameterError(f"D (maximum deviation) must be a positive integer, got {D!r}")
    check_deviation_limit(D_int)
    check_build_limit(D_int)
    if not (isinstance(V, (int, float, np.floating, np.integer)) and np.isfinite(V) and V > 0):
        raise ParameterError(f"V (noise variance) must be a finite number > 0, got {V!r}")
    check_variance_limit(float(V))
    if int(js) != js or js < 0:
        raise ParameterError(f"js must be a non-negative integer, got {js!r}")
    if not (0 < epsilon < 1e-2):
        raise ParameterError(f"epsilon must lie in (0, 0.01), got {epsilon!r}")
    return D_int, float(V), int(js)


def _pstay_rows(pstay, ncat: int) -> list:
    """``pstay`` per count 1..ncat (None: no preset), checked."""
    if pstay is None:
        return [None] * ncat
    arr = np.atleast_1d(np.asarray(pstay, dtype=float))
    if arr.size == 1:
        arr = np.repeat(arr, ncat)
    if arr.size != ncat:
        raise ParameterError(f"pstay must be a scalar or have {ncat} values (one per count 1..{ncat}), got {arr.size}")
    if np.any(~((arr > 0) & (arr < 1))):
        raise ParameterError(f"pstay must lie strictly between 0 and 1, got {arr.tolist()}")
    return arr.tolist()


def _solve_row(v: np.ndarray, V: float, pstay, epsilon: float, mono: bool, blocked: bool):
    """The maximum-entropy law of one row, ptable's way: with a ``pstay``, its lower bound
    on ``p(v = 0)`` is lowered by 0.05 (at most 19 times) while the variance rounded to 3
    decimals differs from ``V`` or no law exists. Returns ``(p, info, bound of p(0), lower
    bounds)``; raises :class:`_Infeasible` for the last failure."""
    lb0 = epsilon if pstay is None else max(pstay, epsilon)
    for it in range(20):
        if it > 0:
            lb0 = max(lb0 - 0.05, epsilon)
        lb = np.full(len(v), epsilon)
        lb[v == 0] = lb0
        try:
            p, sinfo = _max_entropy_row(v, V, lb, mono)
        except _Infeasible as e:
            if pstay is None or lb0 <= epsilon or e.constraint == "mean 0" or it == 19:
                raise
            continue
        if blocked or round(float(p @ v**2), 3) == V or pstay is None:
            break
    return p, sinfo, lb0, lb


def _row_info(i: int, p, v, V: float, lb, mono: bool, sinfo: dict, pstay_bound: float, short: list) -> dict:
    """The ``build_info`` row of count ``i``; a row short of ``V`` is appended to ``short``
    with the largest variance the other constraints allow."""
    var = float(p @ v**2)
    vmax = np.nan
    if var < V - 1e-9:  # record how far the constraints would have allowed
        A, b, G, h, _ = _row_problem(v, V, lb, mono)
        vmax = _variance_range(A, b, G, h)[1] if len(v) > 2 and "note" not in sinfo else var
        short.append((i, var, vmax))
    return dict(
        i=i, variance_unrounded=var, max_variance=vmax, pstay_bound=pstay_bound, iterations=sinfo["iterations"],
        residual=sinfo["residual"], note=sinfo.get("note", ""),
    )  # fmt: skip


def _warn_variance_short(short: list, D: int, V: float, js: int) -> None:
    det = "; ".join(
        f"count {i}: {var:.4g}"
        + (
            f" (the other constraints allow up to {vmax:.4g})"
            if vmax > V
            else f" (the other constraints allow at most {vmax:.4g})"
        )
        for i, var, vmax in short
    )
    warnings.warn(
        f"p-table D={D}, V={V:g}, js={js}: variance below V at small counts -- {det}. ptable's "
        "construction treats V as an upper bound and keeps the entropy maximum.",
        VarianceNotReachedWarning,
        stacklevel=3,
    )


def build_ptable(
    D: int,
    V: float,
    js: int = 0,
    pstay: float | Sequence[float] | None = None,
    *,
    mono: bool = True,
    epsilon: float = 1e-8,
    ndigits: int | None = 8,
    label: str = "",
    warn: bool = True,
) -> PTable:
    """Build a count p-table as the R package ptable does (``create_cnt_ptable``).

    For every original count ``i = 1..I`` (``I = D`` if ``js = 0``, else ``D + js + 1``;
    the last row serves all larger counts) the law ``p`` of the noise ``v`` solves [1]_, [2]_

    .. math::

        \\max_p -\\sum_v p_v \\log p_v \\quad \\text{s.t.}\\quad \\sum_v p_v = 1,\\;
        \\sum_v v\\, p_v = 0,\\; \\sum_v v^2 p_v \\le V,\\;
        p_{v} \\le p_{v'} \\ (v < v' \\le 0 \\text{ adjacent}),\\; p_v \\ge \\epsilon,

    over ``v = j - i`` for ``j`` in ``max(0, i - D)..i + D`` without ``1..js`` (no
    negative results, no small positive results). ``mono`` is the monotonicity on the
    negative side; ``pstay`` (scalar or one value per row) is a lower bound on
    ``p(v = 0)`` that, as in ptable, is lowered by 0.05 (at most 19 times) while the
    variance rounded to 3 decimals differs from ``V``. Zeros stay zero (row 0).
    Finally the cumulative probabilities are rounded to ``ndigits`` decimals and ``p``
    is taken as their differences (``ndigits=None`` keeps the solver's values).

    Parameters
    ----------
    D : int
        Maximum deviation (>= 1).
    V : float
        Variance bound (> 0). It is an *inequality*: where the entropy maximum of the
        other constraints already has a smaller variance, the row keeps it (ptable does
        so silently; here a :class:`VarianceNotReachedWarning` is issued and the
        achieved variance is in :meth:`PTable.moments` and ``build_info``).
    js : int
        Perturbed values ``1..js`` are not allowed.
    pstay : float or sequence of float, optional
        Preset probability of no perturbation (``0 < pstay < 1``).
    mono : bool
        Monotonicity constraint (ptable default ``TRUE``).
    epsilon : float
        Lower bound of every probability (ptable: ``1e-8``).
    ndigits : int or None
        Rounding of the cumulative probabilities (ptable: 8).

    Returns
    -------
    PTable
        With ``build_info`` (per row: unrounded variance, largest variance the other
        constraints allow, effective ``pstay`` bound, iterations, KKT residual).

    Raises
    ------
    ParameterError
        Invalid parameters, or no table exists; the message names the violated
        constraint (``mean 0``, ``variance <= V``, ``lower bound``) and the count.

    Notes
    -----
    The problem of each row is strictly convex with linear constraints; it is solved
    to a KKT residual of about 1e-12 by a primal-dual interior-point method [4]_
    (ptable uses NLopt's SLSQP with ``xtol_rel = 1e-7``). Its output agrees with the
    package's to about 1e-8 per probability on the reference tables in ``tests/data``.
    """
    D_int, V, js = _build_arguments(D, V, js, epsilon)
    ncat = D_int if js == 0 else D_int + js + 1
    pst = _pstay_rows(pstay, ncat)
    blocking = set(range(1, js + 1))
    ii, vv, pp = [np.array([0])], [np.array([0])], [np.array([1.0])]
    info_rows = [
        dict(i=0, variance_unrounded=0.0, max_variance=0.0, pstay_bound=np.nan, iterations=0, residual=0.0,
             note="zeros stay zero")
    ]  # fmt: skip
    short = []
    for i in range(1, ncat + 1):
        j = np.arange(max(i - D_int, 0), i + D_int + 1)
        j = j[~np.isin(j, list(blocking))]
        v = (j - i).astype(np.float64)
        try:
            p, sinfo, lb0, lb = _solve_row(v, V, pst[i - 1], epsilon, mono, i in blocking)
        except _Infeasible as e:
            raise ParameterError(
                f"no p-table for D={D_int}, V={V:g}, js={js}"
                + (f", pstay={pst[i - 1]:g}" if pst[i - 1] is not None else "")
                + f": constraint '{e.constraint}' cannot hold at original count {i} "
                f"(perturbed values {j.tolist()}): {e.detail}"
            ) from None
        info_rows.append(_row_info(i, p, v, V, lb, mono, sinfo, lb0 if pst[i - 1] is not None else np.nan, short))
        ii.append(np.full(len(v), i))
        vv.append(v.astype(np.int64))
        pp.append(p if ndigits is None else _round_row(p, ndigits))
    if short and warn:
        _warn_variance_short(short, D_int, V, js)
    import pandas as pd

    return PTable(
        i=np.concatenate(ii),
        v=np.concatenate(vv),
        p=np.concatenate(pp),
        D=D_int,
        V=V,
        js=js,
        pstay=None if pstay is None else tuple(x for x in pst),
        source=f"build_ptable(D={D_int}, V={V:g}, js={js}"
        + (f", pstay={pstay}" if pstay is not None else "")
        + f", mono={mono}, epsilon={epsilon:g}, ndigits={ndigits})",
        label=label,
        build_info=pd.DataFrame(info_rows),
    )
