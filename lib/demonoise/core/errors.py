"""Typed errors that say *where* a problem is.

Every error raised on bad input derives from :class:`DemonoiseError`, so a caller
(the CLI, the report batch) can catch one type. Data errors carry the location of
the offending value -- file, line, dataset, measure, region, sex, age, year -- and
print it, so that a statistical office can find the cell in its own tables.

Examples
--------
>>> raise DataError("negative count -3", file="deaths.csv", line=12,
...                 region="BE10", sex="F", age="Y5")
Traceback (most recent call last):
...
demonoise.core.errors.DataError: negative count -3 [file deaths.csv, line 12, region BE10, sex F, age Y5]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "DemonoiseError",
    "ParameterError",
    "DataError",
    "FormatError",
    "FetchError",
    "ReportError",
    "OutputError",
]

# Order in which location fields are printed.
_LOCATION_FIELDS = ("file", "line", "dataset", "table", "measure", "region", "sex", "age", "year", "key")


class DemonoiseError(Exception):
    """Base class of every error demonoise raises on purpose."""


class ParameterError(DemonoiseError, ValueError):
    """An analysis parameter is invalid (V <= 0, unreachable V for a maximum deviation D,
    unknown dataset, country, indicator or granularity, ...)."""


class OutputError(ParameterError):
    """An output path cannot be written: its directory is not writable or cannot be
    created, the path is a directory, a device or another non-regular file, or writing
    failed (a full disk). The message names the path the user gave."""


class DataError(DemonoiseError, ValueError):
    """Input data violate the data model: negative or non-integer counts, missing or
    duplicated ages, inconsistent axes, deaths with zero exposure, unknown region codes.

    Parameters
    ----------
    message : str
        What is wrong.
    **location
        Any of ``file, line, dataset, table, measure, region, sex, age, year, key``;
        ``None`` values are ignored. They are kept as attributes (``err.location``)
        and appended to the message.
    """

    def __init__(self, message: str, **location: Any):
        unknown = set(location) - set(_LOCATION_FIELDS)
        if unknown:  # a programming error, not a data error
            raise TypeError(f"unknown location field(s): {sorted(unknown)}")
        self.reason = message
        self.location = {k: location[k] for k in _LOCATION_FIELDS if location.get(k) is not None}
        for k in _LOCATION_FIELDS:
            setattr(self, k, location.get(k))
        super().__init__(self._format())

    def _format(self) -> str:
        if not self.location:
            return self.reason
        parts = []
        for k, v in self.location.items():
            if isinstance(v, Path):
                v = str(v)
            parts.append(f"{k} {v}")
        return f"{self.reason} [{', '.join(parts)}]"

    def __reduce__(self):  # keep picklable across process pools
        return (_rebuild, (type(self), self.reason, self.location))


def _rebuild(cls, reason, location):
    return cls(reason, **location)


class FormatError(DataError):
    """A file is not in the format it claims: truncated, wrong header, non-numeric
    value, duplicated key, unknown flag."""


class FetchError(DemonoiseError):
    """Downloading from Eurostat failed (HTTP error, stalled or truncated response).
    No partial cache entry is left behind."""


class ReportError(DemonoiseError):
    """A report could not be produced (a notebook failed, rendering failed)."""
