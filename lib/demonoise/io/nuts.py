"""NUTS region metadata (codes, names, levels) from the embedded NUTS 2021 name list.

The list (``demonoise/data/nuts_names.csv``) is Eurostat's NUTS 2021 classification
name table, filtered to levels 0-2, in its original layout: semicolon separated,
UTF-8 with BOM, columns ``Code 2021;Country;NUTS level 1;NUTS level 2;NUTS level 3;
NUTS level;Country order;Region order`` followed by a block repeating the code with
Latin transliterations of names in non-Latin scripts (BG, EL, CY, ME, MK, RS).

Codes are Eurostat's: Greece is ``EL`` (not ISO ``GR``), the United Kingdom ``UK``.
Extra-regio codes (``BEZ``, ``BEZZ``, ...) are listed as the classification lists them.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Iterable
from importlib import resources

from demonoise.core.counts import Region
from demonoise.core.errors import DataError

__all__ = ["NUTS_FILE", "nuts_region", "nuts_regions", "nuts_codes", "is_nuts_code"]

NUTS_FILE = "nuts_names.csv"
_ALIASES = {"GR": "EL", "GB": "UK"}  # ISO 3166 codes Eurostat does not use


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, tuple[Region, str]]:
    """code -> (Region with the Latin-script name, name in the national script)."""
    text = resources.files("demonoise").joinpath("data", NUTS_FILE).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text), delimiter=";"))
    header = [h.strip() for h in rows[0]]
    if header[:6] != ["Code 2021", "Country", "NUTS level 1", "NUTS level 2", "NUTS level 3", "NUTS level"]:
        raise DataError(f"unexpected header in the embedded NUTS name list: {header[:6]}", file=NUTS_FILE, line=1)
    out: dict[str, tuple[Region, str]] = {}
    for line, r in enumerate(rows[1:], start=2):
        if not r or not r[0].strip():
            continue
        code = r[0].strip()
        try:
            level = int(r[5])
        except (ValueError, IndexError):
            raise DataError("bad NUTS level", file=NUTS_FILE, line=line, region=code) from None
        # each row carries one name, in the column of its level (columns 2-5) ...
        native = next((c.strip() for c in r[1:5] if c.strip()), "")
        # ... and, for non-Latin scripts, a block repeating the code (column 10) and
        # the transliterated name in one of the next columns
        latin = ""
        if len(r) > 10 and r[9].strip() == code:
            latin = next((c.strip() for c in r[10:] if c.strip()), "")
        out[code] = (Region(code, latin or native, level, code[:2]), native)
    return out


def is_nuts_code(code: str) -> bool:
    """Whether ``code`` is a NUTS 2021 code of level 0-2 in the embedded list."""
    return str(code).strip() in _table()


def nuts_region(code: str, *, script: str = "latin") -> Region:
    """The :class:`~demonoise.core.counts.Region` of a NUTS 2021 code (levels 0-2).

    Parameters
    ----------
    code : str
        Eurostat NUTS code, e.g. ``"BE10"``, ``"EL30"``, ``"DE"``.
    script : {"latin", "national"}
        Name in Latin script (transliterated where the official name is in Greek or
        Cyrillic script) or in the national script.

    Raises
    ------
    DataError
        Unknown code (naming it; ``GR``/``GB`` get a hint to use ``EL``/``UK``).
    """
    code = str(code).strip()
    try:
        reg, native = _table()[code]
    except KeyError:
        hint = ""
        if code[:2] in _ALIASES:
            hint = f" (Eurostat writes {code[:2]} as {_ALIASES[code[:2]]})"
        raise DataError(f"unknown NUTS 2021 code (levels 0-2){hint}", file=NUTS_FILE, region=code) from None
    if script == "national" and native:
        return Region(reg.code, native, reg.level, reg.country)
    if script not in ("latin", "national"):
        from demonoise.core.errors import ParameterError

        raise ParameterError(f"script must be 'latin' or 'national', got {script!r}")
    return reg


def nuts_regions(codes: Iterable[str], *, script: str = "latin") -> tuple[Region, ...]:
    """:func:`nuts_region` for several codes."""
    return tuple(nuts_region(c, script=script) for c in codes)


def nuts_codes(level: int | None = None, country: str | None = None, *, extra_regio: bool = False) -> tuple[str, ...]:
    """NUTS codes of the embedded list, in the classification's order.

    Parameters
    ----------
    level : int, optional
        0 (countries), 1 or 2.
    country : str, optional
        Country code (``"BE"``, ``"EL"``, ...).
    extra_regio : bool
        Include the Extra-Regio codes (``..Z``, ``..ZZ``).
    """
    out = []
    for code, (reg, _) in _table().items():
        if level is not None and reg.level != level:
            continue
        if country is not None and reg.country != country:
            continue
        if not extra_regio and reg.level > 0 and code.endswith("Z"):
            continue
        out.append(code)
    return tuple(out)
