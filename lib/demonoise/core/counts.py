"""The data model: published demographic counts as labelled, immutable integer arrays.

One :class:`Counts` holds, for a set of regions and one reference year ``t``:

* ``pop_start`` -- population on 1 January of ``t``      (region x sex x age)
* ``pop_end``   -- population on 1 January of ``t + 1``  (region x sex x age)
* ``deaths``    -- deaths during ``t``                    (region x sex x age)
* ``births``    -- live births during ``t`` by age of mother (region x age of mother)

Sexes are ``F, M, T``; ``T`` is a published cell of its own (Eurostat publishes it),
not necessarily ``F + M`` -- later layers noise it independently.

The age axis is the list of *published* age intervals (:class:`AgeAxis`): single ages
with an open interval (Eurostat's NUTS 2 layout ``Y_LT1, Y1..Y99, Y_OPEN, UNK``) or
5-year groups (``Y_LT5, Y5-9, ..., Y_GE85, UNK``), so that noise can be put on exactly
the cells that were published. Unknown age (``UNK``) is kept as a cell of its own; the
computation layer spreads it over known ages in proportion (see
:func:`demonoise.core.counts.spread_unknown`).

Provenance travels with the counts: which Eurostat datasets, extraction date (or
``"unknown"``), and whether each table is *real* or *modelled*.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

import numpy as np

from demonoise.core.errors import DataError, ParameterError
from demonoise.core.vocabulary import SEXES

__all__ = [
    "SEXES",
    "MEASURES",
    "AgeAxis",
    "Region",
    "TableProvenance",
    "Provenance",
    "Counts",
    "Panel",
    "spread_unknown",
    "DATA_STATUS_SEP",
    "MAX_COUNT",
    "MAX_EXACT",
    "MAX_AGE",
    "first_bad_count",
    "control_characters",
]

# SEXES (Eurostat's sex codes F, M, T) is defined in the vocabulary.
MEASURES: tuple[str, ...] = ("pop_start", "pop_end", "deaths", "births")
UNKNOWN_LABEL = "UNK"
#: Separates the label from the implications in :attr:`Provenance.data_status`.
DATA_STATUS_SEP = "; what it means: "

#: Largest count a published cell may hold. The largest cells Eurostat publishes (a
#: country's population at one age or in one 5-year group) are a few million; a cell
#: above 10^9 is a unit or typing error, and its indicators would be absurd (10^15 people
#: in a cell give a life expectancy of 10^12 years).
MAX_COUNT = 10**9
#: Integers above 2^53 have no exact float64 representation: a value read as a number
#: beyond it is not the count that was written.
MAX_EXACT = 2**53
#: Oldest plausible age, in years: age codes above it (``Y400``) and life expectancies
#: reaching beyond it are refused.
MAX_AGE = 130

# Characters that have no place in a code: C0/C1 controls (NUL, tab, ...), and the
# invisible format characters (zero-width space and joiners, bidirectional marks, BOM).
_RE_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")

_RE_SINGLE = re.compile(r"^Y(\d+)$")
_RE_RANGE = re.compile(r"^Y(\d+)-(\d+)$")
_RE_LT = re.compile(r"^Y_LT(\d+)$")
_RE_GE = re.compile(r"^Y_GE(\d+)$")


def control_characters(text: str) -> str | None:
    """The first control or invisible format character of ``text`` as ``U+XXXX``, or ``None``.

    A NUL byte or a zero-width space in a region code would otherwise make a second,
    phantom region that prints like the real one.
    """
    m = _RE_CONTROL.search(str(text))
    return None if m is None else f"U+{ord(m[0]):04X}"


_TYPO = " (a unit or typing error?)"


def first_bad_count(values) -> tuple[int, str, str] | None:
    """The first cell of ``values`` that cannot be a published count, as ``(flat index,
    kind, reason)``, or ``None`` if every cell can.

    ``kind`` is checked in this order over the whole array: ``"missing"`` (NaN),
    ``"infinite"``, ``"negative"``, ``"fraction"`` (not a whole number), ``"inexact"``
    (above ``2^53``, where a number read as text is no longer exact) and ``"large"``
    (above :data:`MAX_COUNT`). Readers call it on the values as read, before any cast to
    integers, so that an overflow never turns into a wrapped-around number.
    """
    v = np.asarray(values)
    if v.dtype.kind in "iu":  # exact integers: only the sign and the size can be wrong
        tests = (
            ("negative", lambda: v < 0, lambda x: f"negative count {x}"),
            ("large", lambda: v > MAX_COUNT, lambda x: f"count {x} is above 10^9, more than any cell holds{_TYPO}"),
        )
    else:
        v = v.astype(float, copy=False)
        tests = (
            ("missing", lambda: np.isnan(v), lambda x: "missing value"),
            ("infinite", lambda: np.isinf(v), lambda x: f"infinite count {x:g}"),
            ("negative", lambda: v < 0, lambda x: f"negative count {x:g}"),
            ("fraction", lambda: np.isfinite(v) & (v != np.round(v)), lambda x: f"non-integer count {x:g}"),
            (
                "inexact",
                lambda: np.isfinite(v) & (v > MAX_EXACT),
                lambda x: f"count {x:g} is above 2^53, beyond which a number is not held exactly",
            ),
            (
                "large",
                lambda: v > MAX_COUNT,
                lambda x: f"count {x:.10g} is above 10^9, more than any cell holds{_TYPO}",
            ),
        )
    flat = v.ravel()
    with np.errstate(invalid="ignore"):
        for kind, mask, what in tests:
            m = mask().ravel()
            if m.any():
                i = int(np.flatnonzero(m)[0])
                return i, kind, what(flat[i])
    return None


# --------------------------------------------------------------------------- ages
@dataclass(frozen=True)
class AgeAxis:
    """Published age intervals, in Eurostat's coding.

    Known intervals are ``[lower[i], upper[i])`` in completed years, contiguous and
    increasing; the last one may be open (``upper[-1] is None``). If ``unknown`` is
    true the axis ends with one more cell, ``UNK`` (age not stated).

    Parameters
    ----------
    lower : tuple of int
        Lower bounds of the known intervals.
    upper : tuple of int or None
        Exclusive upper bounds; ``None`` for an open last interval.
    unknown : bool
        Whether a trailing ``UNK`` cell is part of the axis.

    Notes
    -----
    Canonical labels are Eurostat's: ``Y_LT1`` for ``[0, 1)``, ``Yx`` for a single
    age, ``Yx-y`` for a closed group, ``Y_LTx`` for ``[0, x)`` and ``Y_GEx`` for an
    open interval. Eurostat's ``Y_OPEN`` (NUTS 2 single-age tables: 100 and over) is
    read as ``Y_GE<last + 1>``.
    """

    lower: tuple[int, ...]
    upper: tuple[int | None, ...]
    unknown: bool = True

    def __post_init__(self):
        lo, up = tuple(int(x) for x in self.lower), tuple(None if u is None else int(u) for u in self.upper)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", up)
        if len(lo) == 0 or len(lo) != len(up):
            raise ParameterError("an age axis needs at least one interval and as many upper as lower bounds")
        for i, (a, b) in enumerate(zip(lo, up, strict=True)):
            if b is None and i != len(lo) - 1:
                raise ParameterError(f"only the last age interval may be open (interval {i} starting at {a})")
            if b is not None and b <= a:
                raise ParameterError(f"empty age interval [{a}, {b})")
            if i and up[i - 1] != a:
                raise ParameterError(f"age intervals must be contiguous: gap or overlap at age {a}")

    # ---- constructors
    @classmethod
    def single(cls, last: int = 99, open_: bool = True, unknown: bool = True, first: int = 0) -> AgeAxis:
        """Single ages ``first..last`` plus, if ``open_``, the open interval ``last+1``+.

        The default is Eurostat's NUTS 2 layout: ``Y_LT1, Y1..Y99, Y_OPEN (100+), UNK``.
        """
        lo = list(range(first, last + 1))
        up: list[int | None] = [a + 1 for a in lo]
        if open_:
            lo.append(last + 1)
            up.append(None)
        return cls(tuple(lo), tuple(up), unknown)

    @classmethod
    def five_year(cls, open_at: int = 85, unknown: bool = True, infant: bool = False) -> AgeAxis:
        """5-year groups ``0-4, 5-9, ..., (open_at-5)-(open_at-1)`` and ``open_at``+.

        With ``infant=True`` age 0 is published apart: ``Y_LT1, Y1-4, Y5-9, ...``.
        """
        if open_at % 5 or open_at < 10:
            raise ParameterError(f"open_at must be a multiple of 5 and at least 10, got {open_at}")
        lo: list[int] = [0, 1] if infant else [0]
        lo += list(range(5, open_at + 1, 5))
        up: list[int | None] = lo[1:] + [None]
        return cls(tuple(lo), tuple(up), unknown)

    @classmethod
    def from_labels(cls, labels: Sequence[str], *, source: str | None = None) -> AgeAxis:
        """Parse Eurostat age codes, in any order, into an axis.

        ``TOTAL`` is not an age interval and must be removed by the caller. Raises
        :class:`DataError` (naming ``source`` and the label) for an unknown code,
        a duplicate, a gap or an overlap.
        """
        seen: set[str] = set()
        intervals: list[tuple[int, int | None, str]] = []
        unknown = False
        has_open_code = False
        for lab in labels:
            lab = str(lab).strip()
            if lab in seen:
                raise DataError("duplicated age code", file=source, age=lab)
            seen.add(lab)
            parsed = _parse_age_code(lab, source)
            if parsed == UNKNOWN_LABEL:
                unknown = True
            elif parsed == "Y_OPEN":
                has_open_code = True
            else:
                _check_interval(parsed, source)
                intervals.append(parsed)
        intervals.sort(key=lambda t: (t[0], np.inf if t[1] is None else t[1]))
        if has_open_code:
            if not intervals or intervals[-1][1] is None:
                raise DataError("Y_OPEN needs closed age intervals before it", file=source, age="Y_OPEN")
            intervals.append((intervals[-1][1], None, "Y_OPEN"))
        _check_contiguous(intervals, source)
        return cls(tuple(t[0] for t in intervals), tuple(t[1] for t in intervals), unknown)

    # ---- properties
    @property
    def n_known(self) -> int:
        """Number of known-age intervals (excluding ``UNK``)."""
        return len(self.lower)

    @property
    def size(self) -> int:
        """Number of published cells, ``UNK`` included."""
        return self.n_known + int(self.unknown)

    def __len__(self) -> int:
        return self.size

    @property
    def is_open(self) -> bool:
        return self.upper[-1] is None

    @property
    def widths(self) -> np.ndarray:
        """Interval widths ``n_x`` of the known intervals (``inf`` for an open one)."""
        return np.array(
            [np.inf if u is None else u - a for a, u in zip(self.lower, self.upper, strict=True)], dtype=float
        )

    @property
    def is_single(self) -> bool:
        """True if every closed interval is one year wide."""
        w = self.widths
        return bool(np.all(w[np.isfinite(w)] == 1))

    @property
    def labels(self) -> tuple[str, ...]:
        """Canonical Eurostat codes of every cell (``UNK`` last if present)."""
        out = []
        for a, u in zip(self.lower, self.upper, strict=True):
            if u is None:
                out.append(f"Y_GE{a}")
            elif a == 0:
                out.append(f"Y_LT{u}")
            elif u == a + 1:
                out.append(f"Y{a}")
            else:
                out.append(f"Y{a}-{u - 1}")
        if self.unknown:
            out.append(UNKNOWN_LABEL)
        return tuple(out)

    def index(self, label: str) -> int:
        """Position of an age code (``Y_OPEN`` accepted for the open interval)."""
        labels = self.labels
        if label == "Y_OPEN" and self.is_open:
            return self.n_known - 1
        try:
            return labels.index(label)
        except ValueError:
            raise DataError("age code not on this axis", age=label) from None

    def without_unknown(self) -> AgeAxis:
        return dataclasses.replace(self, unknown=False)

    def regroup_matrix(self, target: AgeAxis) -> np.ndarray:
        """0/1 matrix ``G`` (``self.size x target.size``) with ``counts @ G`` the counts on ``target``.

        Each interval of ``self`` must lie inside one interval of ``target`` (nested
        groupings); ``UNK`` maps to ``UNK``. Raises :class:`ParameterError` otherwise.
        """
        if self.unknown != target.unknown:
            raise ParameterError("cannot regroup between axes with and without an UNK cell")
        if self.lower[0] != target.lower[0] or (self.is_open != target.is_open):
            raise ParameterError("source and target age axes must cover the same age range")
        G = np.zeros((self.size, target.size), dtype=np.int64)
        t_lo = np.array(target.lower)
        for i, (a, u) in enumerate(zip(self.lower, self.upper, strict=True)):
            j = int(np.searchsorted(t_lo, a, side="right") - 1)
            tu = target.upper[j]
            if j < 0 or (tu is not None and (u is None or u > tu)):
                raise ParameterError(
                    f"age interval {self.labels[i]} does not nest inside the target axis ({', '.join(target.labels)})"
                )
            G[i, j] = 1
        if self.unknown:
            G[-1, -1] = 1
        if not np.all(G[: self.n_known].sum(axis=0)[: target.n_known] > 0):
            raise ParameterError("target age axis has intervals not covered by the source")
        return G


def _parse_age_code(lab: str, source: str | None):
    """One Eurostat age code: ``"UNK"``, ``"Y_OPEN"`` or its interval ``(lower, upper or None, code)``."""
    if lab in (UNKNOWN_LABEL, "Y_OPEN"):
        return lab
    if m := _RE_SINGLE.match(lab):
        return (int(m[1]), int(m[1]) + 1, lab)
    if m := _RE_RANGE.match(lab):
        a, b = int(m[1]), int(m[2])
        if b < a:
            raise DataError("age group with upper bound below lower bound", file=source, age=lab)
        return (a, b + 1, lab)
    if m := _RE_LT.match(lab):
        return (0, int(m[1]), lab)
    if m := _RE_GE.match(lab):
        return (int(m[1]), None, lab)
    raise DataError("unknown age code", file=source, age=lab)


def _check_contiguous(intervals: list, source: str | None) -> None:
    """Sorted intervals must exist and follow each other without gap or overlap."""
    if not intervals:
        raise DataError("no age intervals", file=source)
    for (_, b0, l0), (a1, _, l1) in pairwise(intervals):
        if b0 is None or b0 > a1:
            raise DataError(f"overlapping age intervals {l0} and {l1}", file=source, age=l1)
        if b0 < a1:
            missing = f"Y{b0}" if a1 - b0 == 1 else f"Y{b0}-{a1 - 1}"
            raise DataError(f"missing ages between {l0} and {l1}", file=source, age=missing)


def _check_interval(interval: tuple[int, int | None, str], source: str | None) -> None:
    """An age code's interval must be non-empty and start at a plausible age."""
    a, b, lab = interval
    if b is not None and b <= a:
        raise DataError("empty age interval", file=source, age=lab)
    if a > MAX_AGE or (b is not None and b - 1 > MAX_AGE):
        raise DataError(f"implausible age code: ages above {MAX_AGE} years do not occur", file=source, age=lab)


# ------------------------------------------------------------------ regions, provenance
@dataclass(frozen=True)
class Region:
    """A territorial unit: NUTS code, name, NUTS level (0 = country) and country code."""

    code: str
    name: str = ""
    level: int | None = None
    country: str = ""

    def __post_init__(self):
        code = str(self.code).strip()
        object.__setattr__(self, "code", code)
        if not code:
            raise DataError("empty region code")
        bad = control_characters(code)
        if bad:
            raise DataError(f"control character {bad} in region code", region=code.encode("unicode_escape").decode())
        if not self.country:
            object.__setattr__(self, "country", code[:2])
        if self.level is None:
            object.__setattr__(self, "level", max(len(code) - 2, 0))


@dataclass(frozen=True)
class TableProvenance:
    """Where one table comes from.

    Parameters
    ----------
    status : {"real", "modelled"}
        Real published values, or values produced by a model (say which in ``note``).
    datasets : tuple of str
        Eurostat dataset codes (``demo_r_d2jan``, ...) the values come from.
    extracted : str
        Extraction date/time (ISO 8601) or ``"unknown"``.
    source : str
        Publisher, e.g. ``"Eurostat"``.
    note : str
        Free text: the model used, derived cells, fallbacks.
    updated : tuple of (str, str), optional
        The publisher's own update stamp of each dataset code the values were read from,
        ``(("demo_r_d2jan", "2025-03-28T23:00:00+0100"), ...)`` (Eurostat's ``updated``
        of a JSON-stat answer); a mapping is accepted. Empty when not known.
    """

    status: Literal["real", "modelled"]
    datasets: tuple[str, ...] = ()
    extracted: str = "unknown"
    source: str = "Eurostat"
    note: str = ""
    updated: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.status not in ("real", "modelled"):
            raise ParameterError(f"provenance status must be 'real' or 'modelled', got {self.status!r}")
        object.__setattr__(self, "datasets", tuple(self.datasets))
        pairs = self.updated.items() if isinstance(self.updated, Mapping) else self.updated
        object.__setattr__(self, "updated", tuple((str(k), str(v)) for k, v in pairs))


def label_is_modelled(label: str) -> bool:
    """True if a provenance label (:attr:`Provenance.status_label`, as the results' ``data_status``
    carries it) says that some of its data are modelled: ``"modelled"`` or ``"demonstration"``
    in it, as the embedded datasets and the counts template write them."""
    return any(word in label.lower() for word in ("modelled", "demonstration"))


@dataclass(frozen=True)
class Provenance:
    """Provenance of a whole :class:`Counts`: one :class:`TableProvenance` per table,
    a label shown on every report page that uses the data, and ``implications``: what
    the data's status means for reading results computed from it (e.g. which regional
    patterns are modelled), shown with the label (:attr:`data_status`)."""

    population: TableProvenance
    deaths: TableProvenance | None = None
    births: TableProvenance | None = None
    label: str = ""
    implications: str = ""

    @property
    def tables(self) -> dict[str, TableProvenance]:
        return {
            k: v
            for k, v in (("population", self.population), ("deaths", self.deaths), ("births", self.births))
            if v is not None
        }

    @property
    def is_modelled(self) -> bool:
        """True if any table is modelled."""
        return any(t.status == "modelled" for t in self.tables.values())

    @property
    def status_label(self) -> str:
        """``label`` if given, else a generated one such as
        ``"population real (Eurostat), deaths real (Eurostat), births modelled"``."""
        if self.label:
            return self.label
        parts = []
        for name, t in self.tables.items():
            parts.append(f"{name} {t.status}" + (f" ({t.source})" if t.status == "real" and t.source else ""))
        return ", ".join(parts)

    @property
    def data_status(self) -> str:
        """:attr:`status_label` followed by ``implications`` (if any): the ``data_status``
        of results tables."""
        return f"{self.status_label}{DATA_STATUS_SEP}{self.implications}" if self.implications else self.status_label

    @property
    def datasets(self) -> tuple[str, ...]:
        out: list[str] = []
        for t in self.tables.values():
            out += [d for d in t.datasets if d not in out]
        return tuple(out)


# --------------------------------------------------------------------------- counts
def _as_count_array(arr, name: str, shape: tuple[int, ...], axes_labels, dataset: str | None) -> np.ndarray:
    """Validate and freeze one count array; errors name region/sex/age of the first bad cell."""
    a = np.asarray(arr)
    if a.shape != shape:
        raise DataError(f"{name} has shape {a.shape}, expected {shape}", dataset=dataset, measure=name)

    def where(idx) -> dict:
        loc = {}
        for lab, i in zip(axes_labels, idx, strict=True):
            loc[lab[0]] = lab[1][i]
        return loc

    if a.dtype.kind not in "fiu":
        raise DataError(f"{name} must hold numbers, got dtype {a.dtype}", dataset=dataset, measure=name)
    bad = first_bad_count(a)  # before the cast: a value beyond int64 must not wrap around
    if bad is not None:
        idx = tuple(int(i) for i in np.unravel_index(bad[0], a.shape))
        raise DataError(bad[2], dataset=dataset, measure=name, **where(idx))
    a = np.round(a).astype(np.int64) if a.dtype.kind == "f" else a.astype(np.int64)
    a = a.copy()
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Counts:
    """Published counts for a set of regions and one reference year.

    Parameters
    ----------
    name : str
        Dataset name (``"be-2023"``, ``"ess-2023"``, ...).
    year : int
        Reference year ``t``.
    regions : sequence of Region
        Regions (countries are regions of NUTS level 0); codes must be unique.
    ages : AgeAxis
        Published age intervals of population and deaths.
    pop_start, pop_end : array_like of int, shape (R, 3, A)
        Population on 1 January of ``t`` and ``t + 1`` by region, sex (F, M, T), age.
    deaths : array_like of int, shape (R, 3, A), optional
        Deaths during ``t``.
    births : array_like of int, shape (R, B), optional
        Live births during ``t`` by age of mother (``birth_ages``).
    birth_ages : AgeAxis, optional
        Published age-of-mother intervals; required with ``births``.
    provenance : Provenance

    Raises
    ------
    DataError
        Wrong shapes, missing (NaN), non-integer or negative counts, duplicated region
        codes -- naming the measure, region, sex and age of the first offending cell.

    Notes
    -----
    Arrays are stored as read-only ``int64``. The exposure used by the life table and
    the fertility rates is the average population,
    ``E_x = (P_x(t) + P_x(t+1)) / 2`` (:attr:`exposure`), Eurostat's convention.
    """

    name: str
    year: int
    regions: tuple[Region, ...]
    ages: AgeAxis
    pop_start: np.ndarray
    pop_end: np.ndarray
    provenance: Provenance
    deaths: np.ndarray | None = None
    births: np.ndarray | None = None
    birth_ages: AgeAxis | None = None
    sexes: tuple[str, ...] = field(default=SEXES, init=False)

    def __post_init__(self):
        regions = tuple(r if isinstance(r, Region) else Region(str(r)) for r in self.regions)
        object.__setattr__(self, "regions", regions)
        codes = [r.code for r in regions]
        if len(set(codes)) != len(codes):
            dup = next(c for c in codes if codes.count(c) > 1)
            raise DataError("duplicated region code", dataset=self.name, region=dup)
        if not regions:
            raise DataError("a dataset needs at least one region", dataset=self.name)
        R, S, A = len(regions), len(SEXES), self.ages.size
        ax = [("region", codes), ("sex", SEXES), ("age", self.ages.labels)]
        for nm in ("pop_start", "pop_end", "deaths"):
            v = getattr(self, nm)
            if v is None:
                if nm == "deaths":
                    continue
                raise DataError(f"{nm} is required", dataset=self.name, measure=nm)
            object.__setattr__(self, nm, _as_count_array(v, nm, (R, S, A), ax, self.name))
        if self.births is not None:
            if self.birth_ages is None:
                raise DataError("births need a birth_ages axis", dataset=self.name, measure="births")
            bx = [("region", codes), ("age", self.birth_ages.labels)]
            object.__setattr__(
                self, "births", _as_count_array(self.births, "births", (R, self.birth_ages.size), bx, self.name)
            )
        object.__setattr__(self, "year", int(self.year))

    # ---- labels and lookup
    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(r.code for r in self.regions)

    @property
    def countries(self) -> tuple[str, ...]:
        """Country codes present, in order of first appearance."""
        return tuple(dict.fromkeys(r.country for r in self.regions))

    def region(self, code: str) -> Region:
        return self.regions[self.region_index(code)]

    def region_index(self, code: str) -> int:
        try:
            return self.codes.index(code)
        except ValueError:
            raise DataError("unknown region code", dataset=self.name, region=code) from None

    def select(
        self, codes: Iterable[str] | None = None, *, country: str | None = None, level: int | None = None
    ) -> Counts:
        """A new :class:`Counts` restricted to some regions (by code, country, NUTS level)."""
        if codes is not None:
            idx = [self.region_index(c) for c in codes]
        else:
            idx = list(range(len(self.regions)))
        if country is not None:
            idx = [i for i in idx if self.regions[i].country == country]
            if not idx:
                raise DataError("no region of this country in the dataset", dataset=self.name, region=country)
        if level is not None:
            idx = [i for i in idx if self.regions[i].level == level]
        if not idx:
            raise DataError("selection is empty", dataset=self.name)
        return dataclasses.replace(
            self,
            regions=tuple(self.regions[i] for i in idx),
            pop_start=self.pop_start[idx],
            pop_end=self.pop_end[idx],
            deaths=None if self.deaths is None else self.deaths[idx],
            births=None if self.births is None else self.births[idx],
        )

    # ---- derived quantities
    @property
    def exposure(self) -> np.ndarray:
        """Average population ``(P(t) + P(t+1)) / 2``, float, shape (R, 3, A)."""
        return (self.pop_start + self.pop_end) / 2.0

    @property
    def population(self) -> np.ndarray:
        """Population on 1 January of ``t``, ``P = sum_a P_a(t)`` over every published age
        cell (``UNK`` included), per region and sex (F, M, T; ``T`` its own published
        cell), int64, shape (R, 3): the population every report table shows."""
        return self.pop_start.sum(-1)

    def regroup(self, ages: AgeAxis | None = None, birth_ages: AgeAxis | None = None) -> Counts:
        """Aggregate to coarser published intervals (e.g. single ages -> 5-year groups).

        Used to ask "what if the same counts had been published in 5-year groups?".
        """
        kw: dict = {}
        if ages is not None:
            G = self.ages.regroup_matrix(ages)
            kw.update(ages=ages, pop_start=self.pop_start @ G, pop_end=self.pop_end @ G)
            if self.deaths is not None:
                kw["deaths"] = self.deaths @ G
        if birth_ages is not None:
            if self.births is None or self.birth_ages is None:
                raise ParameterError("this dataset has no births to regroup")
            kw.update(birth_ages=birth_ages, births=self.births @ self.birth_ages.regroup_matrix(birth_ages))
        return dataclasses.replace(self, **kw)

    def replace(self, **changes) -> Counts:
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)

    # ---- tidy conversion
    def to_frame(self):
        """Tidy table: ``region, sex, age, year, measure, value`` (the CSV template layout).

        Population on 1 January of ``t + 1`` is the measure ``population`` with
        ``year = t + 1``; births have ``sex = "T"`` (all live births, by age of mother).
        """
        import pandas as pd

        codes = np.array(self.codes)
        frames = []
        R, S, A = self.pop_start.shape
        reg = np.repeat(codes, S * A)
        sex = np.tile(np.repeat(np.array(SEXES), A), R)
        age = np.tile(np.array(self.ages.labels), R * S)
        for measure, arr, year in (
            ("population", self.pop_start, self.year),
            ("population", self.pop_end, self.year + 1),
            ("deaths", self.deaths, self.year),
        ):
            if arr is None:
                continue
            frames.append(
                pd.DataFrame(
                    {"region": reg, "sex": sex, "age": age, "year": year, "measure": measure, "value": arr.ravel()}
                )
            )
        if self.births is not None:
            B = self.birth_ages.size
            frames.append(
                pd.DataFrame(
                    {
                        "region": np.repeat(codes, B),
                        "sex": "T",
                        "age": np.tile(np.array(self.birth_ages.labels), len(codes)),
                        "year": self.year,
                        "measure": "births",
                        "value": self.births.ravel(),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)

    def __repr__(self) -> str:
        parts = [
            f"Counts({self.name!r}, year={self.year}, regions={len(self.regions)}",
            f"ages={self.ages.labels[0]}..{self.ages.labels[-1]} ({self.ages.size} cells)",
        ]
        parts.append("deaths" if self.deaths is not None else "no deaths")
        parts.append("births" if self.births is not None else "no births")
        parts.append(self.provenance.status_label)
        return ", ".join(parts) + ")"


# ------------------------------------------------------------------------- panels
@dataclass(frozen=True, eq=False)
class Panel:
    """Published counts of consecutive years for one set of regions (a multi-year dataset).

    The population on 1 January of ``t + 1`` is the end stock of year ``t`` and the start
    stock of year ``t + 1``: *one* published cell, which receives *one* noise draw. A panel
    therefore holds the stocks once, on 1 January of every year from ``years[0]`` to
    ``years[-1] + 1``, and the events (deaths, births) of every year ``t`` in ``years``;
    :meth:`year` gives the single-year :class:`Counts` of ``t`` (``pop_start`` and
    ``pop_end`` the stocks of ``t`` and ``t + 1``), :meth:`from_counts` assembles a panel
    from single-year counts and refuses two years whose shared stock disagrees.

    Parameters
    ----------
    name : str
    years : sequence of int
        Consecutive reference years ``t``.
    regions : sequence of Region
    ages : AgeAxis
        Published age intervals of population and deaths.
    stocks : array_like of int, shape (Y + 1, R, 3, A)
        Population on 1 January of ``years[0] .. years[-1] + 1``.
    provenance : Provenance
    deaths : array_like of int, shape (Y, R, 3, A), optional
    births : array_like of int, shape (Y, R, B), optional
    birth_ages : AgeAxis, optional

    Raises
    ------
    DataError
        Years not consecutive, wrong shapes, a bad count (naming the year, measure,
        region, sex and age of the first bad cell), duplicated region codes.
    """

    name: str
    years: tuple[int, ...]
    regions: tuple[Region, ...]
    ages: AgeAxis
    stocks: np.ndarray
    provenance: Provenance
    deaths: np.ndarray | None = None
    births: np.ndarray | None = None
    birth_ages: AgeAxis | None = None
    sexes: tuple[str, ...] = field(default=SEXES, init=False)

    def __post_init__(self):
        years = tuple(int(y) for y in self.years)
        object.__setattr__(self, "years", years)
        if not years or any(b != a + 1 for a, b in pairwise(years)):
            raise DataError(f"the years of a panel must be consecutive, got {list(years)}", dataset=self.name)
        # each year's counts go through the single-year checks (shapes, counts, regions)
        years_counts = [self._counts_of(i, check=True) for i in range(len(years))]
        object.__setattr__(self, "regions", years_counts[0].regions)
        object.__setattr__(
            self, "stocks", _frozen_stack([c.pop_start for c in years_counts] + [years_counts[-1].pop_end])
        )
        for nm in ("deaths", "births"):
            if getattr(self, nm) is not None:
                object.__setattr__(self, nm, _frozen_stack([getattr(c, nm) for c in years_counts]))

    def _raw(self, nm: str, i: int):
        v = getattr(self, nm)
        return None if v is None else np.asarray(v)[i]

    def _counts_of(self, i: int, *, check: bool = False) -> Counts:
        stocks = np.asarray(self.stocks)
        if stocks.ndim != 4 or stocks.shape[0] != len(self.years) + 1:
            raise DataError(
                f"stocks have shape {stocks.shape}, expected ({len(self.years) + 1}, regions, 3, ages): the population "
                f"on 1 January of {self.years[0]}..{self.years[-1] + 1}",
                dataset=self.name,
                measure="population",
            )
        for nm in ("deaths", "births"):
            v = getattr(self, nm)
            if v is not None and len(np.asarray(v)) != len(self.years):
                raise DataError(f"{nm} hold {len(np.asarray(v))} years, expected {len(self.years)}", dataset=self.name)
        try:
            return Counts(
                self.name,
                self.years[i],
                self.regions,
                self.ages,
                stocks[i],
                stocks[i + 1],
                self.provenance,
                deaths=self._raw("deaths", i),
                births=self._raw("births", i),
                birth_ages=self.birth_ages,
            )
        except DataError as e:
            if not check or e.location.get("year") is not None:
                raise
            raise DataError(e.reason, **{**e.location, "year": self.years[i]}) from None

    # ---- constructors
    @classmethod
    def from_counts(cls, counts: Sequence[Counts], *, name: str | None = None) -> Panel:
        """A panel from single-year counts of consecutive years.

        Year ``t``'s ``pop_end`` and year ``t + 1``'s ``pop_start`` are the same published
        cells (the population on 1 January of ``t + 1``): they must agree cell by cell.

        Raises
        ------
        DataError
            Years not consecutive, other regions or age axes between years, or a shared
            stock that disagrees -- naming region, sex, age and the year of the stock.
        """
        counts = sorted(counts, key=lambda c: c.year)
        if not counts:
            raise DataError("a panel needs at least one year")
        c0 = counts[0]
        for a, b in pairwise(counts):
            if b.year != a.year + 1:
                raise DataError(f"the years of a panel must be consecutive: {a.year} then {b.year}", dataset=c0.name)
            if a.codes != b.codes or a.ages != b.ages or a.birth_ages != b.birth_ages:
                raise DataError("the years of a panel need the same regions and age axes", dataset=c0.name, year=b.year)
            _check_shared_stock(a, b)
        return cls(
            name or c0.name,
            tuple(c.year for c in counts),
            c0.regions,
            c0.ages,
            np.stack([c.pop_start for c in counts] + [counts[-1].pop_end]),
            c0.provenance,
            deaths=None if c0.deaths is None else np.stack([c.deaths for c in counts]),
            births=None if c0.births is None else np.stack([c.births for c in counts]),
            birth_ages=c0.birth_ages,
        )

    # ---- lookup
    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(r.code for r in self.regions)

    @property
    def stock_years(self) -> tuple[int, ...]:
        """The years of the 1 January stocks, ``years[0] .. years[-1] + 1``."""
        return (*self.years, self.years[-1] + 1)

    def index(self, year: int) -> int:
        """Position of reference year ``year`` (a :class:`ParameterError` lists the years held)."""
        try:
            return self.years.index(int(year))
        except ValueError:
            raise ParameterError(
                f"year {year} is not in dataset {self.name!r} (it holds {self.years[0]}-{self.years[-1]})"
            ) from None

    def year(self, year: int) -> Counts:
        """The single-year :class:`Counts` of reference year ``year``."""
        return self._counts_of(self.index(year))

    def stock(self, year: int) -> np.ndarray:
        """The population on 1 January of ``year`` (R, 3, A)."""
        if year not in self.stock_years:
            raise ParameterError(f"no population on 1 January {year} in dataset {self.name!r}")
        return self.stocks[self.stock_years.index(year)]

    def cells(self, year: int) -> tuple[tuple[str, int], ...]:
        """The published cells (tables) year ``year`` uses, as keys: ``("pop", year)``,
        ``("pop", year + 1)`` (its start and end stocks), ``("deaths", year)``, ``("births", year)``."""
        self.index(year)
        keys = [("pop", year), ("pop", year + 1)]
        keys += [(m, year) for m in ("deaths", "births") if getattr(self, m) is not None]
        return tuple(keys)

    def shared(self, year_a: int, year_b: int) -> tuple[tuple[str, int], ...]:
        """The published cells two years both use: the stock of 1 January ``max + 1`` of
        consecutive years (one cell, one noise draw), nothing otherwise."""
        a = set(self.cells(year_a))
        return tuple(k for k in self.cells(year_b) if k in a)

    def select(self, codes: Iterable[str] | None = None, *, country: str | None = None) -> Panel:
        """A panel restricted to some regions (as :meth:`Counts.select`)."""
        sel = self.year(self.years[0]).select(codes, country=country)
        idx = [self.codes.index(c) for c in sel.codes]
        return dataclasses.replace(
            self,
            regions=sel.regions,
            stocks=self.stocks[:, idx],
            deaths=None if self.deaths is None else self.deaths[:, idx],
            births=None if self.births is None else self.births[:, idx],
        )

    def window(self, first: int, last: int) -> Panel:
        """The panel of the years ``first .. last``."""
        i, j = self.index(first), self.index(last)
        if j < i:
            raise ParameterError(f"empty window {first}-{last}")
        return dataclasses.replace(
            self,
            years=self.years[i : j + 1],
            stocks=self.stocks[i : j + 2],
            deaths=None if self.deaths is None else self.deaths[i : j + 1],
            births=None if self.births is None else self.births[i : j + 1],
        )

    def to_frame(self):
        """Tidy table ``region, sex, age, year, measure, value``: each 1 January stock once,
        the deaths and births of every year (the multi-year counts template layout)."""
        import pandas as pd

        frames = []
        for i, t in enumerate(self.years):
            f = self.year(t).to_frame()
            keep = (f["measure"] != "population") | (f["year"] == t)
            if i == len(self.years) - 1:
                keep |= f["measure"] == "population"
            frames.append(f[keep])
        df = pd.concat(frames, ignore_index=True)
        order = {"population": 0, "deaths": 1, "births": 2}
        df["_m"] = df["measure"].map(order)
        df = df.sort_values(["_m", "year"], kind="stable").drop(columns="_m")
        return df.reset_index(drop=True)

    def __repr__(self) -> str:
        return (
            f"Panel({self.name!r}, years={self.years[0]}-{self.years[-1]}, regions={len(self.regions)}, "
            f"{self.provenance.status_label})"
        )


def _frozen_stack(arrays) -> np.ndarray:
    out = np.stack(arrays)
    out.setflags(write=False)
    return out


def _check_shared_stock(a: Counts, b: Counts) -> None:
    """Year ``a``'s end stock and year ``b``'s start stock are one published cell: refuse a disagreement."""
    diff = a.pop_end != b.pop_start
    if diff.any():
        r, s, x = (int(i) for i in np.argwhere(diff)[0])
        raise DataError(
            f"the population on 1 January {b.year} is one published cell, the end stock of {a.year} and the start "
            f"stock of {b.year}, but the two years disagree: {a.pop_end[r, s, x]} against {b.pop_start[r, s, x]}",
            dataset=a.name,
            measure="population",
            region=a.codes[r],
            sex=a.sexes[s],
            age=a.ages.labels[x],
            year=b.year,
        )


def spread_unknown(values: np.ndarray, axis: AgeAxis, weights: np.ndarray | None = None) -> np.ndarray:
    """Spread the ``UNK`` cell over the known ages in proportion.

    Implements ``x'_a = x_a + x_UNK * w_a / sum_b w_b`` over known ages ``a``, with
    ``w = x`` (the cell's own distribution) unless ``weights`` is given. Where all
    weights are zero the unknowns are spread uniformly. The result has the known ages
    only (last axis of length ``axis.n_known``) and is float. This is Eurostat's
    practice for indicators; the noise is applied to the published cells *before*
    the spreading, so ``UNK`` carries its own noise.

    Works on any leading axes (regions, sexes, replicates).
    """
    values = np.asarray(values, dtype=float)
    if not axis.unknown:
        return values.copy()
    known, unk = values[..., :-1], values[..., -1:]
    w = known if weights is None else np.asarray(weights, dtype=float)[..., : axis.n_known]
    tot = w.sum(axis=-1, keepdims=True)
    n = axis.n_known
    share = np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), 1.0 / n)
    return known + unk * share
