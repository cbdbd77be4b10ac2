"""The dataset registry: the datasets available by name, with their provenance.

Two kinds of dataset answer to ``--dataset NAME``:

* **embedded** -- shipped with the package in ``demonoise/data/datasets/``:
  ``<name>.csv.gz`` in the project's counts template layout (the documented exchange
  format, read with :func:`demonoise.io.template.read_counts_csv`, the reader users
  use for their own files), ``<name>.json`` with the metadata (provenance per table,
  label and its implications, calibration year, fallbacks, seeds, versions, input and
  output hashes) and ``<name>.npz``, the same counts packed for fast loading
  (:mod:`demonoise.io.packed`). They are built by :mod:`demonoise_build.build` from
  the raw extracts in ``data-raw/``:

  ``be-2023``
      Belgium, 11 NUTS 2 regions and the country: population and deaths real
      (Eurostat), regional births modelled from the real national births and the
      regions' published 2022 TFR.
  ``ess-2023``
      292 NUTS 2 regions (NUTS 2021) and 36 countries: *demonstration data* --
      population real (Eurostat; 5-year groups graduated to single ages), deaths and
      births modelled.

* **cached** -- downloaded from Eurostat's API and kept in the local cache
  (:mod:`demonoise.io.fetch`, wired in where marked below).

Loading an embedded dataset
---------------------------
:func:`load` reads the packed ``<name>.npz`` (tens of milliseconds instead of the
seconds the CSV reader's parsing and cell-by-cell checks take) after checking that it
is the one the build derived from the CSV: its arrays match the digest recorded in
``<name>.json``, and the sha256 of the CSV it was derived from (in its header) is the
sha256 of the installed ``<name>.csv.gz``. A missing, damaged or stale packed file is
never used: the counts are read from the CSV with full validation, packed again into
the user cache (``<cache>/embedded/<name>-<csv sha256>.npz``, never into the installed
package) and one line on stderr says so; later loads use that copy after the same
checks (again with one line).

I/O layer: imports only the data model and the other I/O modules (never the
computation modules).

Examples
--------
>>> from demonoise.io.datasets import available, load
>>> [d.name for d in available() if d.kind == "embedded"]   # doctest: +SKIP
['be-2023', 'ess-2023']
>>> load("be-2023").provenance.label                         # doctest: +SKIP
'population and deaths real (Eurostat); regional births modelled from national births (demo_fordagec) and ...'
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from demonoise.core.counts import Counts, Panel, Provenance, TableProvenance
from demonoise.core.errors import DataError, OutputError, ParameterError
from demonoise.io.packed import read_packed, read_packed_panel, write_packed, write_packed_panel
from demonoise.io.template import read_counts_csv, read_panel_csv

__all__ = [
    "DatasetInfo",
    "EMBEDDED_DIR",
    "available",
    "embedded_names",
    "metadata",
    "load",
    "load_panel",
    "dataset_years",
    "fingerprint",
    "clear_cache",
]

#: Folder of the embedded datasets inside the package.
EMBEDDED_DIR = ("data", "datasets")


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as listed by ``demonoise datasets``.

    Attributes
    ----------
    name : str
        The name ``--dataset`` takes.
    kind : {"embedded", "cached"}
    year : int
        Reference year ``t`` (deaths and births of ``t``, population on 1 January of
        ``t`` and ``t + 1``).
    regions : int
        Number of regions, countries included.
    label : str
        The provenance label shown on every report page that uses the data.
    details : list of str
        Provenance lines: one per table (status, Eurostat datasets, extraction date,
        note), the calibration year, the fallbacks, seeds and versions.
    implications : str
        What the data's status means for reading results (``""`` if the data do not
        say); also ``load(name).provenance.implications``.
    """

    name: str
    kind: str
    year: int
    regions: int
    label: str
    details: list[str] = field(default_factory=list)
    implications: str = ""


def _folder():
    return resources.files("demonoise").joinpath(*EMBEDDED_DIR)


def embedded_names() -> list[str]:
    """Names of the embedded datasets (those with both ``<name>.json`` and ``<name>.csv.gz``)."""
    folder = _folder()
    if not folder.is_dir():
        return []
    names = {p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json")}
    return sorted(n for n in names if folder.joinpath(f"{n}.csv.gz").is_file())


@functools.cache
def _meta(name: str) -> dict:
    path = _folder().joinpath(f"{name}.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: nested too deeply
        raise DataError(
            f"cannot read the metadata of embedded dataset {name!r}: {e}", file=str(path), dataset=name
        ) from None


def metadata(name: str) -> dict:
    """The metadata of an embedded dataset (the parsed ``<name>.json``; a copy)."""
    _check_name(name)
    return json.loads(json.dumps(_meta(name)))


def _table_provenance(d: dict) -> TableProvenance:
    return TableProvenance(
        d["status"],
        tuple(d.get("datasets", ())),
        d.get("extracted", "unknown"),
        d.get("source", "Eurostat"),
        d.get("note", ""),
    )


def _provenance(meta: dict) -> Provenance:
    p = meta["provenance"]
    return Provenance(
        population=_table_provenance(p["population"]),
        deaths=_table_provenance(p["deaths"]) if p.get("deaths") else None,
        births=_table_provenance(p["births"]) if p.get("births") else None,
        label=meta.get("label", ""),
        implications=meta.get("implications", ""),
    )


def _details(meta: dict) -> list[str]:
    out = []
    for table, d in meta["provenance"].items():
        if not d:
            continue
        out.append(
            f"{table}: {d['status']} ({d.get('source', '')} {', '.join(d.get('datasets', []))}; "
            f"extracted {d.get('extracted', 'unknown')})"
        )
    if meta.get("calibration_year"):
        out.append(f"mortality calibrated to published e0/e65 of {meta['calibration_year']}")
    note = (meta.get("fallbacks") or {}).get("note")
    if note:
        out.append(f"fallbacks: {note}")
    for table, d in meta["provenance"].items():
        if d and d.get("note"):
            out.append(f"{table} note: {d['note']}")
    seeds = meta.get("seeds") or {}
    v = meta.get("versions") or {}
    if seeds or v:
        out.append(
            "built by "
            + meta.get("build", "?")
            + (f" with seed {seeds['root']}" if "root" in seeds else "")
            + (", " + ", ".join(f"{k} {x}" for k, x in v.items()) if v else "")
        )
    return out


def _embedded_info(name: str) -> DatasetInfo:
    m = _meta(name)
    return DatasetInfo(
        name=name,
        kind="embedded",
        year=int(m["year"]),
        regions=int(m["regions"]),
        label=m["label"],
        details=_details(m),
        implications=m.get("implications", ""),
    )


def available() -> list[DatasetInfo]:
    """Every dataset ``--dataset`` accepts: the embedded ones, then the cached ones."""
    out = [_embedded_info(n) for n in embedded_names()]
    out += [
        DatasetInfo(d["name"], "cached", int(d["year"]), int(d["regions"]), d["label"], list(d.get("details", [])))
        for d in _cached()
        if d["name"] not in embedded_names()
    ]
    return out


def _cached() -> list[dict]:
    """Complete fetches of real Eurostat tables in the local cache (:mod:`demonoise.io.fetch`)."""
    from demonoise.io.fetch import cached_datasets

    return cached_datasets()


def _check_name(name: str) -> str:
    """``"embedded"`` or ``"cached"``; unknown names raise, listing what is available."""
    names = embedded_names()
    if name in names:
        return "embedded"
    cached = [d["name"] for d in _cached()]
    if name in cached:
        return "cached"
    hint = " -- real Eurostat data: run `demonoise fetch --year YEAR` first" if name.startswith("eurostat-") else ""
    raise ParameterError(
        f"unknown dataset {name!r}; available: {', '.join(list(names) + cached) or 'none'} "
        f"(see `demonoise datasets`){hint}"
    )


_lock = threading.Lock()
_loaded: dict[str, Counts] = {}


def load(name: str) -> Counts:
    """The :class:`~demonoise.core.counts.Counts` of dataset ``name`` (memoised per process).

    Embedded datasets are read from their packed form (checked against the CSV and
    the JSON; the module notes say what happens when it does not check out), which
    holds the counts :func:`~demonoise.io.template.read_counts_csv` reads from the
    CSV, and carry the provenance of their metadata (per-table status, Eurostat
    dataset codes, notes; ``provenance.label`` is the label to show on every page,
    ``provenance.implications`` what it means for reading results).

    Raises
    ------
    ParameterError
        Unknown name (the message lists the available names).
    """
    with _lock:
        if name in _loaded:
            return _loaded[name]
    if _check_name(name) == "cached":
        from demonoise.io.fetch import load_cached

        counts = load_cached(name)
        with _lock:
            return _loaded.setdefault(name, counts)
    meta = _meta(name)
    if meta.get("years"):  # a multi-year dataset: its reference year's counts
        counts = load_panel(name).year(int(meta["year"]))
    else:
        counts = _load_embedded(name)
    with _lock:
        _loaded.setdefault(name, counts)
        return _loaded[name]


_loaded_panels: dict[str, Panel] = {}


def load_panel(name: str) -> Panel:
    """The counts of dataset ``name`` as a :class:`~demonoise.core.counts.Panel` of
    consecutive years (memoised per process).

    A multi-year embedded dataset (``be-2015-2023``; its JSON lists ``years``) is read
    from its packed form, checked as :func:`load` checks a single-year one, else from
    its multi-year CSV (:func:`~demonoise.io.template.read_panel_csv`); a multi-year
    fetch (``eurostat-2021-2023``) is rebuilt from the cache; a single-year dataset is a
    panel of one year.

    Raises
    ------
    ParameterError
        Unknown name.
    """
    with _lock:
        if name in _loaded_panels:
            return _loaded_panels[name]
    kind = _check_name(name)
    if kind == "embedded" and _meta(name).get("years"):
        panel = _load_embedded(name, panel=True)
    elif kind == "cached":
        from demonoise.io.fetch import load_cached_panel

        panel = load_cached_panel(name)
    else:
        panel = Panel.from_counts([load(name)])
    with _lock:
        return _loaded_panels.setdefault(name, panel)


def dataset_years(name: str) -> tuple[int, ...]:
    """The reference years dataset ``name`` holds (one for a single-year dataset), from its
    metadata or manifest, without loading it. ParameterError for an unknown name."""
    if _check_name(name) == "embedded":
        m = _meta(name)
        return tuple(int(y) for y in m.get("years") or [m["year"]])
    d = next(d for d in _cached() if d["name"] == name)
    return tuple(d["years"])


def _say(name: str, msg: str) -> None:
    print(f"demonoise: embedded dataset {name}: {msg}", file=sys.stderr, flush=True)


def _load_embedded(name: str, *, panel: bool = False) -> Counts | Panel:
    """The packed form if it checks out against the JSON and the CSV, else the CSV
    (module notes: packed again into the user cache, one line on stderr); ``panel``:
    a multi-year dataset, read as a :class:`~demonoise.core.counts.Panel`."""
    meta = _meta(name)
    prov = _provenance(meta)
    folder = _folder()
    csv_name, npz_name = f"{name}.csv.gz", f"{name}.npz"
    csv_sha = hashlib.sha256(folder.joinpath(csv_name).read_bytes()).hexdigest()
    recorded = (meta.get("files") or {}).get(npz_name, {}).get("content_sha256")
    resource = folder.joinpath(npz_name)
    if not resource.is_file():
        problem = "missing"
    else:
        with resources.as_file(resource) as path:
            counts, problem = _checked_packed(path, name, prov, csv_sha, recorded, panel)
        if problem is None:
            return counts
    cached = _packed_cache_path(name, csv_sha)
    if cached.is_file():
        counts, cache_problem = _checked_packed(cached, name, prov, csv_sha, None, panel)
        if cache_problem is None:
            _say(name, f"{npz_name} in the package is {problem}; using the copy rebuilt from {csv_name} in {cached}")
            return counts
    with resources.as_file(folder.joinpath(csv_name)) as path:
        if panel:
            counts = read_panel_csv(path, name=name)
        else:
            counts = read_counts_csv(path, name=name, year=int(meta["year"]))
    counts = dataclasses.replace(counts, provenance=prov)
    try:
        (write_packed_panel if panel else write_packed)(counts, cached, source_sha256=csv_sha)
        _say(name, f"{npz_name} in the package is {problem}; read {csv_name} and rebuilt the packed form into {cached}")
    except (OSError, OutputError) as e:  # an unwritable cache: the CSV is read every time
        _say(name, f"{npz_name} in the package is {problem}; read {csv_name} (could not write {cached}: {e})")
    return counts


def _checked_packed(path, name: str, prov: Provenance, csv_sha: str, recorded: str | None, panel: bool = False):
    """``(counts, None)`` if the packed file at ``path`` is intact and derived from the CSV
    of sha256 ``csv_sha`` (and has the content digest ``recorded``, if given), else
    ``(None, what is wrong)``."""
    try:
        counts, header = (read_packed_panel if panel else read_packed)(path, provenance=prov, name=name)
    except DataError as e:
        return None, f"damaged ({e.args[0] if e.args else e})"
    if header.get("source_sha256") != csv_sha:
        return None, f"stale (derived from another {name}.csv.gz)"
    if recorded is not None and header.get("content_sha256") != recorded:
        return None, f"stale (its content is not the one recorded in {name}.json)"
    return counts, None


def _packed_cache_path(name: str, csv_sha: str) -> Path:
    """Where a packed form rebuilt from the CSV is kept: the user cache, keyed by the CSV's sha256."""
    from demonoise.io.options import cache_root

    return cache_root() / "embedded" / f"{name}-{csv_sha[:16]}.npz"


def fingerprint(name: str) -> str:
    """A short hash that changes when the dataset's content changes (sha256 of the
    embedded file, or of a cached fetch's manifest) -- for up-to-date checks of outputs."""
    import hashlib

    if _check_name(name) == "cached":
        from demonoise.io.fetch import cache_root

        path = cache_root() / "datasets" / f"{name}.json"
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    data = _folder().joinpath(f"{name}.csv.gz").read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def clear_cache() -> None:
    """Forget loaded datasets and metadata (after a rebuild in the same process)."""
    with _lock:
        _loaded.clear()
        _loaded_panels.clear()
    _meta.cache_clear()
