"""The project's vocabulary: indicator codes and titles, sexes, publication granularities,
the admixture thresholds and classes, and the colours of every output.

One module, imported by the library, the charts, the command line and the notebooks, so
that a title, a threshold or the colour of a noise setting is defined once.

Indicators
----------
The library computes four indicator families, each keyed by a short code:

========  =====================================  ==========================
code      title                                  unit
========  =====================================  ==========================
``asfr``  age-specific fertility rate            births per woman-year
``tfr``   total fertility rate                   children per woman
``asmr``  age-specific mortality rate            deaths per person-year
``e``     life expectancy                        years
========  =====================================  ==========================

Scalar *headline* indicators are (code, age) pairs with their own keys: ``e0`` (life
expectancy at birth), ``e65`` and ``tfr``.

Admixture classes
-----------------
The noise admixture ``A = sqrt(1 + Var_noise / Var_pois) - 1`` is the share by which noise
widens the Poisson uncertainty. Its class boundaries are ``A_SMALL = 0.10`` (noise adds
less than a tenth) and ``A_EQUAL = sqrt(2) - 1 = 0.414`` (noise variance equals the
Poisson variance); see ``docs/design.md``, section "Admixture". A table that colours an
admixture by its class prints it with the decimals of :func:`admixture_decimals`, so that
the figure a reader sees falls in the class its colour shows (9.77 % is printed 9.8, not
10, which would read as the next class).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "INDICATORS",
    "INDICATOR_TITLES",
    "INDICATOR_SHORT",
    "INDICATOR_UNITS",
    "INDICATOR_PHRASES",
    "EVENT_WORDS",
    "HEADLINES",
    "Headline",
    "SEXES",
    "SEX_WORDS",
    "GRANULARITIES",
    "GRANULARITY_WORDS",
    "A_SMALL",
    "A_EQUAL",
    "CALIBRATION_THRESHOLDS",
    "ADMIXTURE_CLASSES",
    "AdmixtureClass",
    "admixture_class",
    "admixture_decimals",
    "SMALL_EVENTS",
    "Z_BOUND",
    "SETTING_PALETTE",
    "POISSON_COLOUR",
    "TOTAL_COLOUR",
    "NO_DATA_COLOUR",
    "setting_colour",
]

# ------------------------------------------------------------------------ indicators
#: Indicator families, in report order.
INDICATORS: tuple[str, ...] = ("asfr", "tfr", "asmr", "e")

#: Titles (lower case; capitalise at the start of a heading).
INDICATOR_TITLES: dict[str, str] = {
    "asfr": "age-specific fertility rate",
    "tfr": "total fertility rate",
    "asmr": "age-specific mortality rate",
    "e": "life expectancy",
}

#: Abbreviations as a demographer writes them.
INDICATOR_SHORT: dict[str, str] = {"asfr": "ASFR", "tfr": "TFR", "asmr": "ASMR", "e": "e_x"}

#: Units of the indicator values.
INDICATOR_UNITS: dict[str, str] = {
    "asfr": "births per woman-year",
    "tfr": "children per woman",
    "asmr": "deaths per person-year",
    "e": "years",
}

#: How indicators are named inside sentences.
INDICATOR_PHRASES: dict[str, str] = {
    "asfr": "the age-specific fertility rates",
    "tfr": "the TFR",
    "asmr": "the age-specific mortality rates",
    "e": "life expectancy",
}

#: The events an indicator rests on: (singular, plural).
EVENT_WORDS: dict[str, tuple[str, str]] = {
    "asfr": ("birth", "births"),
    "tfr": ("birth", "births"),
    "asmr": ("death", "deaths"),
    "e": ("death", "deaths"),
}


@dataclass(frozen=True)
class Headline:
    """A scalar indicator of the decision tables: ``indicator`` at ``age`` (``None`` for the TFR).

    ``label`` is how a table names it (``e0``, ``e65``, ``TFR``).
    """

    key: str
    indicator: str
    age: float | None
    title: str
    unit: str
    female_only: bool = False
    label: str = ""


#: The scalar indicators every decision view shows, by key.
HEADLINES: dict[str, Headline] = {
    "e0": Headline("e0", "e", 0.0, "life expectancy at birth (e0)", "years", label="e0"),
    "e65": Headline("e65", "e", 65.0, "life expectancy at 65 (e65)", "years", label="e65"),
    "tfr": Headline(
        "tfr", "tfr", None, "total fertility rate (TFR)", "children per woman", female_only=True, label="TFR"
    ),
}

# ------------------------------------------------------------------------ sexes, layouts
#: Sexes as Eurostat codes them; ``T`` is its own published cell, not ``F + M``.
SEXES: tuple[str, ...] = ("F", "M", "T")
SEX_WORDS: dict[str, str] = {"F": "women", "M": "men", "T": "both sexes"}

#: Publication granularities of the noised cells.
GRANULARITIES: tuple[str, ...] = ("single", "5y", "5y-infant")
GRANULARITY_WORDS: dict[str, str] = {
    "single": "single ages (Eurostat's NUTS 2 layout)",
    "5y": "5-year age groups (NUTS 3 layout)",
    "5y-infant": "5-year age groups with age 0 apart",
}

# ------------------------------------------------------------------------ thresholds
#: Admixture below which noise "adds little": a tenth of the Poisson uncertainty.
A_SMALL: float = 0.10
#: Admixture at which the noise variance equals the Poisson variance: ``sqrt(2) - 1``.
A_EQUAL: float = math.sqrt(2.0) - 1.0

#: Default admixture thresholds of a calibration (fractions): the upper bound of the
#: "small" class, noise widening the Poisson sd by half, and doubling it.
CALIBRATION_THRESHOLDS: tuple[float, ...] = (A_SMALL, 0.5, 1.0)

#: Fewer events than this: the first-order result is unreliable (``small_count``).
SMALL_EVENTS: int = 10
#: ``|z|`` above this flags a disagreement of analytic and Monte Carlo sds.
Z_BOUND: float = 5.0


@dataclass(frozen=True)
class AdmixtureClass:
    """One class of the admixture scale: ``lower <= A < upper``."""

    key: str
    label: str
    lower: float
    upper: float
    colour: str


#: The three decision classes (colours: light, amber, red; readable in grey print).
ADMIXTURE_CLASSES: tuple[AdmixtureClass, ...] = (
    AdmixtureClass("small", "below 10 %", 0.0, A_SMALL, "#d9ead3"),
    AdmixtureClass("notable", "10 % to 41 %", A_SMALL, A_EQUAL, "#f6d58e"),
    AdmixtureClass("large", "41 % or more: noise as large as Poisson", A_EQUAL, math.inf, "#e06c4f"),
)


def admixture_class(A: float) -> AdmixtureClass | None:
    """The class of one admixture value (``None`` for a missing value).

    >>> admixture_class(0.05).key, admixture_class(0.2).key, admixture_class(0.5).key
    ('small', 'notable', 'large')
    """
    if A is None or math.isnan(float(A)):
        return None
    for c in ADMIXTURE_CLASSES:
        if c.lower <= A < c.upper:
            return c
    return ADMIXTURE_CLASSES[-1]


def admixture_decimals(A: float, decimals: int, *, most: int = 6) -> int:
    """The decimals to print the admixture ``A`` (a fraction) with, in per cent.

    Parameters
    ----------
    A : float
        The admixture.
    decimals : int
        The decimals the table would use (e.g. its column's).
    most : int
        Never more decimals than this.

    Returns
    -------
    int
        ``decimals``, or more where the figure rounded to ``decimals`` would fall in
        another class than ``A`` or on a class boundary that ``A`` is not on: 9.77 % with
        0 decimals would print 10 (the next class, and the threshold itself), so 1
        (9.8); 10.24 % gives 1 (10.2); 41.43 % gives 2 (41.43, above sqrt(2) - 1 =
        41.42 %). A missing or infinite ``A`` gives ``decimals``.
    """
    if A is None or not math.isfinite(float(A)):
        return decimals
    pct = 100.0 * float(A)
    own = admixture_class(A)
    bounds = {100.0 * b for c in ADMIXTURE_CLASSES for b in (c.lower, c.upper) if math.isfinite(b) and b > 0}
    for k in range(decimals, max(decimals, most) + 1):
        shown = round(pct, k)
        on_bound = any(math.isclose(shown, b, rel_tol=1e-12) for b in bounds)
        if admixture_class(shown / 100.0) is own and (not on_bound or math.isclose(shown, pct, rel_tol=1e-12)):
            return k
    return max(decimals, most)


# ------------------------------------------------------------------------ colours
#: Ordered palette for the noise settings of a batch (first setting first): the same
#: setting has the same colour in the country reports, the overview and the what-if.
SETTING_PALETTE: tuple[str, ...] = ("#e6851e", "#b2182b", "#6a3d9a", "#1b7837", "#8c510a", "#01665e", "#555555")
#: The Poisson (statistical) uncertainty, in every chart.
POISSON_COLOUR: str = "#4c78a8"
#: The total uncertainty (Poisson and noise together).
TOTAL_COLOUR: str = "#222222"
#: Regions or cells without data.
NO_DATA_COLOUR: str = "#d9d9d9"


def setting_colour(position: int) -> str:
    """The colour of the ``position``-th noise setting of a batch (cycles after 7)."""
    return SETTING_PALETTE[int(position) % len(SETTING_PALETTE)]
