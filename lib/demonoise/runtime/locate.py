"""Where the notebooks, the nbconvert template and the params files are found.

They live at the top of the repository (``notebooks/``, ``templates/``, ``params/``), not
inside the package. In this order:

1. an explicitly given directory -- and *only* that one: if it does not hold what is asked
   for, that is an error (an explicit choice is never silently replaced);
2. the environment variable (``DEMONOISE_NOTEBOOKS``, ``DEMONOISE_TEMPLATES``);
   ``DEMONOISE_NOTEBOOKS`` is an explicit choice too (the user's own notebooks): a folder
   that does not exist or lacks a notebook is an error naming what is missing, never a
   fall back to the bundled notebooks, which would run instead without a word;
3. ``<repository>/<kind>``, found from the package location (a checkout, ``pip install -e .``
   or ``PYTHONPATH=lib``);
4. ``<sys.prefix>/share/demonoise/<kind>`` (a wheel install: pyproject's data-files).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from demonoise.core.errors import ParameterError, ReportError

__all__ = ["ENV_VARS", "candidates", "find_dir", "find_notebook"]

Kind = Literal["notebooks", "templates", "params"]
ENV_VARS = {"notebooks": "DEMONOISE_NOTEBOOKS", "templates": "DEMONOISE_TEMPLATES", "params": "DEMONOISE_PARAMS"}


def candidates(kind: Kind, directory: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    """The directories to look in, each with where it came from (an explicit one alone)."""
    if directory is not None:
        return [("given directory", Path(directory))]
    env = os.environ.get(ENV_VARS[kind])
    if env and kind == "notebooks":
        return [(f"${ENV_VARS[kind]}", Path(env))]
    out = [(f"${ENV_VARS[kind]}", Path(env))] if env else []
    package = Path(__file__).resolve().parents[1]  # .../lib/demonoise
    out.append(("repository checkout", package.parents[1] / kind))
    out.append(("installed data files", Path(sys.prefix) / "share" / "demonoise" / kind))
    return out


def find_dir(kind: Kind, must_hold: tuple[str, ...], directory: str | os.PathLike | None = None) -> Path:
    """The first candidate directory holding every file of ``must_hold``.

    Raises
    ------
    ReportError
        None does; the message lists each place tried and what was missing there.
    """
    tried = []
    for origin, d in candidates(kind, directory):
        missing = [f for f in must_hold if not (d / f).is_file()]
        if not missing:
            return d.resolve()
        tried.append(f"{origin} {d} ({'missing ' + ', '.join(missing) if d.is_dir() else 'no such folder'})")
    raise ReportError(f"{kind} not found; tried: " + "; ".join(tried) + f". Set {ENV_VARS[kind]}.")


def find_notebook(name: str, directory: str | os.PathLike | None = None) -> Path:
    """Path of ``<name>.ipynb`` (``name`` a plain name such as ``"whatif"``).

    Raises
    ------
    ParameterError
        ``name`` is not a plain name, or no candidate holds it (an explicit ``directory``
        without it is an error, not a fallback).
    """
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ParameterError(f"notebook name must be a plain name such as 'whatif', got {name!r}")
    stem = name.removesuffix(".ipynb")
    try:
        return find_dir("notebooks", (f"{stem}.ipynb",), directory) / f"{stem}.ipynb"
    except ReportError as e:
        raise ParameterError(f"notebook {stem!r} not found; " + str(e).split("; ", 1)[1]) from None
