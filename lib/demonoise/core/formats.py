"""Numbers as the reports print them: percentages, significant digits, fixed decimals,
rounded counts with narrow-space thousands (``30 123``), never e-notation; ``—`` for a
missing value. One set of helpers for the sentences of :mod:`demonoise.analysis` and the
tables of :mod:`demonoise.report.content`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fmt_pct", "fmt_num", "fmt_fixed", "fmt_signed", "fmt_int"]


def fmt_pct(x: float, digits: int = 2) -> str:
    """A proportion as a percentage with ``digits`` significant digits (``0.0123`` -> ``"1.2 %"``)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    v = 100.0 * float(x)
    if v == 0:
        return "0 %"
    if abs(v) >= 10**digits:
        return f"{v:,.0f} %"
    return f"{float(f'{v:.{digits}g}'):g} %"


def fmt_num(x: float, digits: int = 3) -> str:
    """A number with ``digits`` significant digits, positional (no exponent), thousands
    separated by a narrow space (``0.0000153`` -> ``"0.000015"`` at 2 digits)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    x = float(x)
    if x != 0 and abs(x) >= 10**digits:
        return fmt_int(x)
    if x == 0:
        return "0"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


def fmt_fixed(x: float, decimals: int) -> str:
    """A number with a fixed number of decimals and narrow-space thousands."""
    if x is None or not np.isfinite(x):
        return "\u2014" if x is None or not np.isinf(x) else ("> range" if x > 0 else "\u2014")
    return f"{float(x):,.{int(decimals)}f}".replace(",", "\u202f")


def fmt_signed(x: float, decimals: int) -> str:
    """:func:`fmt_fixed` with its sign, ``+`` too (``"+0.12"``, ``"-0.12"``; ``"\u2014"`` unsigned)."""
    s = fmt_fixed(x, decimals)
    return s if s.startswith(("-", "\u2014")) else "+" + s


def fmt_int(x: float) -> str:
    """A rounded count with thin-space thousands (``30123.4`` -> ``"30 123"``)."""
    if x is None or not np.isfinite(x):
        return "\u2014"
    return f"{int(round(float(x))):,}".replace(",", "\u202f")
