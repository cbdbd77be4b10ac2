"""Publication layouts: which cells are published, and how indicators are built from them.

The noise of the Cell Key Method sits on every *published* cell, before any
aggregation (docs/design.md, section "Noise models"). How cells are published -- single ages as in
Eurostat's NUTS 2 tables, or 5-year groups as in its NUTS 3 tables -- therefore
changes the noise an indicator carries: the life table's open group 85+ built from
16 published single-age cells carries 16 V of death noise, one built from a single
published ``Y_GE85`` cell carries V.

:func:`publish` re-publishes counts at a chosen granularity (a what-if on the same
data); :class:`Layout` holds the matrices that map the published cells to the
life-table age groups and to the fertility age groups. Pure numpy, no I/O.

Conventions (stated once, used everywhere)
------------------------------------------
* Unknown ages (``UNK``) are spread over the known ages in proportion to the known
  cells of the same table, region and sex (:func:`demonoise.core.counts.spread_unknown`),
  *after* noise has been put on every published cell, ``UNK`` included.
* Life table: the published intervals below ``open_age`` (default 85) are kept, the
  cells from ``open_age`` up (e.g. Y85..Y99 and Y_GE100) are summed into the open
  group. Single-age publication gives the complete table 0..84, 85+; 5-year
  publication the abridged table 0-4, 5-9, ..., 80-84, 85+ (or 0, 1-4, ... when age 0
  is published apart).
* Fertility ages are ``fert_min..fert_max`` (default 15..49). Births to mothers
  younger than ``fert_min`` are counted at the first fertility age, births to mothers
  older than ``fert_max`` at the last, births of unknown age are spread in
  proportion -- so that every live birth enters the TFR. This follows Eurostat's
  practice for its fertility indicators (births under 15 with age 15, 50 and over
  with age 49).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from demonoise.core.counts import AgeAxis, Counts
from demonoise.core.errors import ParameterError
from demonoise.core.vocabulary import GRANULARITIES

# GRANULARITIES (the granularities :func:`publish` understands) is defined in the vocabulary.
__all__ = ["GRANULARITIES", "publication_axes", "publish", "Layout", "Grouping"]


def _five_year_births(native: AgeAxis, fert_min: int, fert_max: int) -> AgeAxis:
    """Birth axis with the fertility ages grouped in 5 years, the outer cells kept."""
    lo: list[int] = []
    up: list[int | None] = []
    for a, u in zip(native.lower, native.upper, strict=True):
        if u is not None and u <= fert_min:
            lo.append(a), up.append(u)
        elif a > fert_max:
            lo.append(a), up.append(u)
    inner = list(range(fert_min, fert_max + 1, 5))
    groups = [(a, min(a + 5, fert_max + 1)) for a in inner]
    pairs = sorted(list(zip(lo, up, strict=True)) + groups, key=lambda t: t[0])
    return AgeAxis(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), native.unknown)


def publication_axes(counts: Counts, granularity: str = "single", *, fert_min: int = 15, fert_max: int = 49):
    """Age axes on which ``counts`` would be published at ``granularity``.

    Parameters
    ----------
    counts : Counts
        Counts as held (native published axes).
    granularity : {"single", "5y", "5y-infant"}
        ``"single"`` keeps the native axes (Eurostat's NUTS 2 layout for single-age
        data); ``"5y"`` groups population and deaths in 0-4, ..., 80-84, 85+ and
        births by age of mother in 15-19, ..., 45-49 (Eurostat's NUTS 3 layout);
        ``"5y-infant"`` publishes age 0 apart (0, 1-4, 5-9, ...).

    Returns
    -------
    (AgeAxis, AgeAxis or None)
        Population/deaths axis and births axis.
    """
    if granularity not in GRANULARITIES:
        raise ParameterError(f"unknown granularity {granularity!r}; choose one of {', '.join(GRANULARITIES)}")
    if granularity == "single":
        if not counts.ages.is_single:
            raise ParameterError(
                f"dataset {counts.name!r} is published in age groups ({counts.ages.labels[1]}, ...): "
                "single ages cannot be recovered; use granularity '5y'"
            )
        return counts.ages, counts.birth_ages
    ages = AgeAxis.five_year(85, unknown=counts.ages.unknown, infant=(granularity == "5y-infant"))
    births = None
    if counts.birth_ages is not None:
        births = _five_year_births(counts.birth_ages, fert_min, fert_max)
    return ages, births


def publish(counts: Counts, granularity: str = "single", **kw) -> Counts:
    """The same counts as they would be published at ``granularity`` (cells summed).

    The result is what the noise is put on. ``publish(c, "single") is c`` when the
    counts are already single ages.
    """
    ages, births = publication_axes(counts, granularity, **kw)
    if ages == counts.ages and births == counts.birth_ages:
        return counts
    return counts.regroup(
        ages=ages if ages != counts.ages else None, birth_ages=births if births != counts.birth_ages else None
    )


def _group_matrix(src_lower, src_upper, tgt_lower, tgt_upper, *, clamp=False, what="age") -> np.ndarray:
    """0/1 matrix mapping source intervals into target intervals they nest in.

    With ``clamp``, source intervals entirely below the first target interval go to
    it and those entirely above the last go to the last (the fertility rule).
    """
    S, T = len(src_lower), len(tgt_lower)
    M = np.zeros((S, T))
    t_lo = np.asarray(tgt_lower, dtype=float)
    t_up = np.asarray([np.inf if u is None else u for u in tgt_upper], dtype=float)
    for i, (a, u) in enumerate(zip(src_lower, src_upper, strict=True)):
        uu = np.inf if u is None else u
        inside = np.nonzero((t_lo <= a) & (uu <= t_up))[0]
        if inside.size:
            M[i, inside[0]] = 1.0
        elif clamp and uu <= t_lo[0]:
            M[i, 0] = 1.0
        elif clamp and a >= t_up[-1]:
            M[i, -1] = 1.0
        elif a >= t_up[-1] or uu <= t_lo[0]:
            continue  # outside the target range (e.g. population outside fertility ages)
        else:
            raise ParameterError(f"published {what} interval starting at {a} does not nest in the target intervals")
    return M


class Grouping:
    """Sum the last axis into contiguous groups: ``x @ M`` for a 0/1 map ``M`` whose
    groups are runs of consecutive cells, computed with :func:`numpy.add.reduceat`
    (O(cells) instead of the O(cells x groups) of a dense product -- it matters for
    Monte Carlo arrays of millions of rows). Falls back to the product otherwise."""

    def __init__(self, M: np.ndarray):
        self.M = np.asarray(M, dtype=float)
        rows = np.nonzero(self.M.sum(axis=1) > 0)[0]
        grp = self.M[rows].argmax(axis=1)
        ok = (
            rows.size > 0
            and np.all(np.diff(rows) == 1)
            and np.all(np.diff(grp) >= 0)
            and np.all(self.M[rows, grp] == 1)
            and np.array_equal(np.unique(grp), np.arange(self.M.shape[1]))
            and np.all(self.M.sum(axis=1)[rows] == 1)
        )
        self.fast = bool(ok)
        self.singles = 0
        if ok:
            self.first, self.last = int(rows[0]), int(rows[-1]) + 1
            self.starts = np.searchsorted(grp, np.arange(self.M.shape[1]))
            # the common layout: single cells, then one group (0..84 single, 85+ open):
            # a copy and one sum beat reduceat on the last axis
            G = self.starts.size
            if G >= 2 and np.array_equal(self.starts, np.arange(G)):
                self.singles = G - 1

    def __call__(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if not self.fast:
            return x @ self.M
        xs = x[..., self.first : self.last]
        if self.singles:
            k = self.singles
            out = np.empty(xs.shape[:-1] + (k + 1,))
            out[..., :k] = xs[..., :k]
            xs[..., k:].sum(axis=-1, out=out[..., k])
            return out
        return np.add.reduceat(xs, self.starts, axis=-1)


@dataclass(frozen=True)
class Layout:
    """Published axes plus the maps from published cells to indicator age groups.

    Parameters
    ----------
    ages : AgeAxis
        Published population and death cells (``UNK`` last if present).
    birth_ages : AgeAxis or None
        Published birth cells by age of mother.
    open_age : int
        Start of the life table's open age group (default 85).
    fert_min, fert_max : int
        Fertility ages (default 15..49); see the module notes for the boundary rule.

    Attributes
    ----------
    lt_lower : ndarray (X,)
        Life-table interval starts, last one open.
    to_lifetable : ndarray (ages.n_known, X)
        0/1 map from known published cells to life-table intervals.
    fert_lower, fert_width : ndarray (F,)
        Fertility intervals (single ages or 5-year groups).
    births_to_fert : ndarray (birth_ages.n_known, F)
        0/1 map of known birth cells to fertility intervals (clamped at the ends).
    pop_to_fert : ndarray (ages.n_known, F)
        0/1 map of known population cells to fertility intervals.
    """

    ages: AgeAxis
    birth_ages: AgeAxis | None = None
    open_age: int = 85
    fert_min: int = 15
    fert_max: int = 49

    @classmethod
    def of(cls, counts: Counts, **kw) -> Layout:
        return cls(counts.ages, counts.birth_ages, **kw)

    def __post_init__(self):
        if self.open_age not in self.ages.lower or self.open_age == self.ages.lower[0]:
            raise ParameterError(
                f"life-table open age {self.open_age} is not a boundary of the published age intervals "
                f"({self.ages.labels[0]} .. {self.ages.labels[self.ages.n_known - 1]})"
            )
        if not self.ages.is_open and self.ages.upper[-1] <= self.open_age:
            raise ParameterError(f"published ages end at {self.ages.upper[-1]}, below the open age {self.open_age}")
        if not (0 < self.fert_min < self.fert_max):
            raise ParameterError(
                f"fertility ages must satisfy 0 < fert_min < fert_max, got {self.fert_min}..{self.fert_max}"
            )

    # ---- life table
    @cached_property
    def lt_lower(self) -> np.ndarray:
        lo = [a for a in self.ages.lower if a < self.open_age]
        return np.array(lo + [self.open_age], dtype=float)

    @cached_property
    def lt_labels(self) -> tuple[str, ...]:
        lo = self.lt_lower.astype(int)
        up = [int(u) for u in lo[1:]] + [None]
        return AgeAxis(tuple(lo), tuple(up), unknown=False).labels

    @cached_property
    def to_lifetable(self) -> np.ndarray:
        lo = self.lt_lower.astype(int)
        up = [int(u) for u in lo[1:]] + [None]
        return _group_matrix(self.ages.lower, self.ages.upper, lo, up, what="population/death age")

    @cached_property
    def lifetable_group_of_cell(self) -> np.ndarray:
        """Index of the life-table group of every known published cell, (ages.n_known,)."""
        return self.to_lifetable.argmax(axis=1)

    @cached_property
    def group_lifetable(self) -> Grouping:
        """Fast ``x @ to_lifetable``."""
        return Grouping(self.to_lifetable)

    @cached_property
    def group_births(self) -> Grouping:
        """Fast ``x @ births_to_fert``."""
        return Grouping(self.births_to_fert)

    @cached_property
    def group_pop_fert(self) -> Grouping:
        """Fast ``x @ pop_to_fert``."""
        return Grouping(self.pop_to_fert)

    # ---- fertility
    @cached_property
    def _fert(self):
        if self.birth_ages is None:
            raise ParameterError("this dataset has no births: fertility indicators are not available")
        ba = self.birth_ages
        inner = [
            (a, u)
            for a, u in zip(ba.lower, ba.upper, strict=True)
            if u is not None and a >= self.fert_min and u <= self.fert_max + 1
        ]
        if not inner or inner[0][0] != self.fert_min or inner[-1][1] != self.fert_max + 1:
            raise ParameterError(
                f"published births by age of mother ({', '.join(ba.labels)}) do not cover ages "
                f"{self.fert_min}..{self.fert_max} in closed intervals"
            )
        lower = np.array([a for a, _ in inner], dtype=float)
        upper = np.array([u for _, u in inner], dtype=float)
        return lower, upper

    @property
    def fert_lower(self) -> np.ndarray:
        return self._fert[0]

    @property
    def fert_width(self) -> np.ndarray:
        lo, up = self._fert
        return up - lo

    @cached_property
    def fert_labels(self) -> tuple[str, ...]:
        lo, up = self._fert
        return AgeAxis(tuple(int(a) for a in lo), tuple(int(u) for u in up), unknown=False).labels

    @cached_property
    def births_to_fert(self) -> np.ndarray:
        lo, up = self._fert
        return _group_matrix(
            self.birth_ages.lower, self.birth_ages.upper, lo.astype(int), up.astype(int), clamp=True, what="birth age"
        )

    @cached_property
    def pop_to_fert(self) -> np.ndarray:
        lo, up = self._fert
        M = _group_matrix(self.ages.lower, self.ages.upper, lo.astype(int), up.astype(int), what="population age")
        if not np.all(M.sum(axis=0) > 0):
            raise ParameterError("published population cells are coarser than the fertility age groups")
        return M
