"""A user's own counts: a counts template file read with its provenance, or registered
by name in the user cache.

A counts file (the documented template, :mod:`demonoise.io.template`; written by
:func:`~demonoise.io.template.write_counts_csv`) answers to ``--dataset FILE`` as an
embedded dataset answers to ``--dataset NAME``. :func:`read_file` reads it with the
provenance the user gave it: the publisher from ``source=``, else from a ``# source:
TEXT`` comment line of the file, else ``user-supplied``; the extraction date from an
``# extracted: DATE`` comment line. The label shown on every report page says whose data
it is, e.g. ``"Statistical Office of Slovenia (counts file si_counts.csv): population
real, deaths real, births real"``.

:func:`register` (``demonoise datasets add NAME FILE``) validates a file once and packs
it (:mod:`demonoise.io.packed`) into ``<cache>/user/<NAME>.npz`` beside
``<NAME>.json`` (the file it came from, its sha256, the provenance, years, regions and
countries); from then on ``NAME`` loads from the packed form like an embedded dataset
(:func:`load_registered`), in every process that shares the cache (report notebooks,
Dask workers). A file of several reference years is registered as a panel.

I/O layer: the data model, the template reader and the packed form.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from demonoise.core.atomic import atomic_write_text
from demonoise.core.counts import Counts, Panel, Provenance, TableProvenance
from demonoise.core.errors import DataError, ParameterError
from demonoise.io._text import read_text
from demonoise.io.packed import read_packed, read_packed_panel, write_packed, write_packed_panel
from demonoise.io.template import SOURCE, read_panel_csv

__all__ = [
    "FILE_SUFFIXES",
    "NAME_PATTERN",
    "looks_like_file",
    "file_name",
    "read_file",
    "user_dir",
    "registered_names",
    "registration",
    "register",
    "unregister",
    "load_registered",
    "registered_provenance",
    "file_sha256",
    "year_counts",
]

#: Endings that make a ``--dataset`` value a file rather than a name.
FILE_SUFFIXES = (".csv", ".csv.gz")
#: A registered name: a letter or digit, then letters, digits, ``_``, ``.`` or ``-`` (a file name in the cache).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SCHEMA = 1


def looks_like_file(ref: str) -> bool:
    """Whether a ``--dataset`` value means a file: it ends like one, holds a path separator
    or names an existing file."""
    s = str(ref)
    return s.lower().endswith(FILE_SUFFIXES) or "/" in s or "\\" in s or Path(s).is_file()


def file_name(path: str | Path) -> str:
    """The dataset name of a counts file: its name without extension(s) (``si_counts.csv.gz`` -> ``si_counts``)."""
    return Path(path).name.split(".")[0]


def _comments(path: Path) -> dict[str, str]:
    """The ``# key: value`` comment lines before the header (keys lower case)."""
    out: dict[str, str] = {}
    for line in read_text(path).splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break
        key, sep, value = s.lstrip("#").partition(":")
        if sep and key.strip() and value.strip():
            out.setdefault(key.strip().lower(), value.strip())
    return out


def _label(prov: Provenance, source: str, file: str) -> str:
    tables = ", ".join(f"{m} {t.status}" for m, t in prov.tables.items())
    return f"{source} (counts file {file}): {tables}"


def _provenance(prov: Provenance, source: str, extracted: str, file: str) -> Provenance:
    """The reader's provenance with the user's publisher, extraction date and label."""
    tables = {
        m: replace(t, source=source, extracted=t.extracted if t.extracted != "unknown" else extracted)
        for m, t in prov.tables.items()
    }
    new = Provenance(**tables)
    return replace(new, label=_label(new, source, file))


def read_file(path: str | Path, *, name: str | None = None, source: str | None = None) -> Panel:
    """Read a counts template file (one or several reference years) with the user's provenance.

    Parameters
    ----------
    path : str or Path
        The counts file (:mod:`demonoise.io.template`).
    name : str, optional
        Dataset name; default :func:`file_name`.
    source : str, optional
        Who published the counts; default the file's ``# source:`` comment, else
        ``"user-supplied"``.

    Returns
    -------
    Panel
        Every reference year of the file (one for a single-year file).

    Raises
    ------
    DataError
        The file does not exist; or as :func:`~demonoise.io.template.read_counts_csv`
        (naming the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError("counts file not found", file=str(path))
    notes = _comments(path)
    src = source or notes.get("source") or SOURCE
    panel = read_panel_csv(path, name=name or file_name(path), source=src)
    prov = _provenance(panel.provenance, src, notes.get("extracted", "unknown"), path.name)
    return replace(panel, provenance=prov)


# ----------------------------------------------------------------------------- the user registry
def user_dir() -> Path:
    """``<cache>/user``: the registered datasets (:func:`demonoise.io.options.cache_root`)."""
    from demonoise.io.options import cache_root

    return cache_root() / "user"


def registered_names() -> list[str]:
    """Names registered in the user cache (those with both their JSON and their packed file)."""
    d = user_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json") if p.with_suffix(".npz").is_file())


def registration(name: str) -> dict:
    """The JSON of a registered dataset (file, sha256, provenance, years, regions, countries, label).

    Raises
    ------
    DataError
        Unreadable registration, naming its file.
    """
    path = user_dir() / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise DataError(
            f"cannot read the registration of dataset {name!r} ({e}); register it again with "
            f"`demonoise datasets add {name} FILE`",
            file=str(path),
        ) from None


def _check_new_name(name: str, taken: list[str]) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise ParameterError(
            f"dataset name {name!r} is not allowed: use letters, digits, '_', '.' or '-' "
            "(first a letter or digit, at most 64)"
        )
    if name in taken or name.startswith("eurostat-"):
        raise ParameterError(
            f"dataset name {name!r} is taken by a dataset shipped with demonoise or fetched from Eurostat; "
            "choose another name"
        )


def register(
    name: str, path: str | Path, *, source: str | None = None, taken: list[str] = (), origin: str = ""
) -> dict:
    """Validate a counts file once and register it as ``name`` (packed, in :func:`user_dir`).

    Parameters
    ----------
    name : str
        The name ``--dataset`` will take (:data:`NAME_PATTERN`).
    path : str or Path
        The counts file.
    source : str, optional
        Who published the counts (as :func:`read_file`).
    taken : list of str
        Names it must not take (the embedded and fetched datasets).
    origin : str
        How it was registered (``"demonoise datasets add"``, or the params file that named it).

    Returns
    -------
    dict
        The registration (:func:`registration`).

    Raises
    ------
    ParameterError
        A name not allowed or taken.
    DataError, FormatError
        The file fails validation (naming file and line).
    """
    _check_new_name(name, list(taken))
    path = Path(path).resolve()
    file_sha = file_sha256(path)
    panel = read_file(path, name=name, source=source)
    d = user_dir()
    npz = d / f"{name}.npz"
    if len(panel.years) > 1:
        digest = write_packed_panel(panel, npz, source_sha256=file_sha)
    else:
        digest = write_packed(panel.year(panel.years[0]), npz, source_sha256=file_sha)
    prov = panel.provenance
    meta = {
        "schema": _SCHEMA,
        "name": name,
        "file": str(path),
        "file_sha256": file_sha,
        "content_sha256": digest,
        "origin": origin,
        "added": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "year": int(panel.years[-1]),
        "years": [int(y) for y in panel.years],
        "regions": len(panel.regions),
        "countries": list(dict.fromkeys(r.country for r in panel.regions)),
        "label": prov.label,
        "provenance": {
            m: {
                "status": t.status,
                "datasets": list(t.datasets),
                "extracted": t.extracted,
                "source": t.source,
                "note": t.note,
            }
            for m, t in prov.tables.items()
        },  # fmt: skip
    }
    atomic_write_text(d / f"{name}.json", json.dumps(meta, indent=1) + "\n")
    return meta


def unregister(name: str) -> None:
    """Remove a registered dataset from the user cache.

    Raises
    ------
    ParameterError
        ``name`` is not registered (listing the registered names).
    """
    if name not in registered_names():
        have = ", ".join(registered_names()) or "none"
        raise ParameterError(f"no registered dataset {name!r}; registered: {have} (see `demonoise datasets`)")
    (user_dir() / f"{name}.json").unlink()
    (user_dir() / f"{name}.npz").unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (a missing or unreadable file raises DataError naming it)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        raise DataError("counts file not found", file=str(path)) from None
    except OSError as e:
        raise DataError(f"cannot read the counts file: {e.strerror or e}", file=str(path)) from None


def registered_provenance(meta: dict) -> Provenance:
    """The provenance a registration records."""
    tables = {
        m: TableProvenance(p["status"], tuple(p.get("datasets", ())), p.get("extracted", "unknown"), p["source"],
                           p.get("note", ""))
        for m, p in meta["provenance"].items()
    }  # fmt: skip
    return replace(Provenance(**tables), label=meta.get("label", ""))


def load_registered(name: str) -> Panel:
    """The counts of a registered dataset, read from its packed form (every year, as a panel).

    Raises
    ------
    DataError
        The packed file is damaged or is not the one the registration recorded (naming
        the file; register the dataset again).
    """
    meta = registration(name)
    npz = user_dir() / f"{name}.npz"
    prov = registered_provenance(meta)
    if len(meta.get("years") or ()) > 1:
        held, header = read_packed_panel(npz, provenance=prov, name=name)
    else:
        counts, header = read_packed(npz, provenance=prov, name=name)
        held = Panel.from_counts([counts], name=name)
    if header.get("content_sha256") != meta.get("content_sha256"):
        raise DataError(
            f"the packed counts of dataset {name!r} are not the ones registered; register it again with "
            f"`demonoise datasets add {name} FILE`",
            file=str(npz),
        )
    return held


def year_counts(panel: Panel) -> Counts:
    """The counts of a panel's last reference year (a single-year dataset's only year)."""
    return panel.year(panel.years[-1])
