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

* **user** -- a user's counts file registered by name with :func:`add` (``demonoise
  datasets add NAME FILE``): validated once, packed into the user cache, listed with the
  provenance the user gave it (:mod:`demonoise.io.userdata`).

A counts template file answers wherever a name does: every function here that takes a
dataset takes ``NAME|FILE`` (a value that ends in ``.csv``/``.csv.gz``, holds a path
separator or names an existing file is a file; a relative path is relative to the
working directory, or to ``base`` in :func:`resolve`). Its dataset name is the file name
without extension (:func:`name_of`), its provenance the user's (:func:`demonoise.io.userdata.read_file`).

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
from demonoise.io import userdata
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
    "fingerprint",
    "clear_cache",
    "add",
    "remove",
    "resolve",
    "name_of",
    "years",
    "use_file",
    "as_name",
    "provenance_dict",
    "provenance_fields",
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
    kind : {"embedded", "cached", "user"}
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
    """Every dataset ``--dataset`` accepts by name: the embedded ones, the registered
    ones (:func:`add`), then the cached ones."""
    out = [_embedded_info(n) for n in embedded_names()]
    out += [_user_info(n) for n in userdata.registered_names() if n not in embedded_names()]
    out += [
        DatasetInfo(d["name"], "cached", int(d["year"]), int(d["regions"]), d["label"], list(d.get("details", [])))
        for d in _cached()
        if d["name"] not in embedded_names()
    ]
    return out


def _user_info(name: str) -> DatasetInfo:
    m = userdata.registration(name)
    origin = f"; {m['origin']}" if m.get("origin") else ""
    details = [
        f"registered {m.get('added', '?')} from {m.get('file', '?')} (sha256 {m.get('file_sha256', '')[:16]}){origin}"
    ]
    details += [
        f"{t}: {p['status']} ({p.get('source', '')}; extracted {p.get('extracted', 'unknown')})"
        for t, p in m.get("provenance", {}).items()
    ]
    years = m.get("years") or [m["year"]]
    if len(years) > 1:
        details.append(f"years {years[0]}-{years[-1]}")
    return DatasetInfo(name, "user", int(m["year"]), int(m["regions"]), m.get("label", ""), details)


def _cached() -> list[dict]:
    """Complete fetches of real Eurostat tables in the local cache (:mod:`demonoise.io.fetch`)."""
    from demonoise.io.fetch import cached_datasets

    return cached_datasets()


def _check_name(name: str) -> str:
    """``"embedded"``, ``"user"``, ``"cached"`` or ``"file"``; unknown names raise, listing
    what is available."""
    names = embedded_names()
    if name in names:
        return "embedded"
    user = userdata.registered_names()
    if name in user:
        return "user"
    cached = [d["name"] for d in _cached()]
    if name in cached:
        return "cached"
    if userdata.looks_like_file(name):
        return "file"
    hint = " -- real Eurostat data: run `demonoise fetch --year YEAR` first" if name.startswith("eurostat-") else ""
    raise ParameterError(
        f"unknown dataset {name!r}; available: {', '.join(list(names) + user + cached) or 'none'}, "
        f"or a counts file (see `demonoise datasets`){hint}"
    )


_lock = threading.Lock()
_loaded: dict[str, Counts] = {}


def load(name: str) -> Counts:
    """The :class:`~demonoise.core.counts.Counts` of dataset ``name`` (memoised per process):
    a name, or a counts file (its last reference year; module notes).

    Embedded datasets are read from their packed form (checked against the CSV and
    the JSON; the module notes say what happens when it does not check out), which
    holds the counts :func:`~demonoise.io.template.read_counts_csv` reads from the
    CSV, and carry the provenance of their metadata (per-table status, Eurostat
    dataset codes, notes; ``provenance.label`` is the label to show on every page,
    ``provenance.implications`` what it means for reading results). A registered
    dataset is read from its packed form in the user cache, a counts file with its
    provenance (:func:`demonoise.io.userdata.read_file`); both are the last reference
    year of what they hold.

    Raises
    ------
    ParameterError
        Unknown name (the message lists the available names).
    DataError, FormatError
        A counts file that does not exist or fails validation (naming file and line), a
        damaged registration.
    """
    with _lock:  # embedded and cached datasets only (a user's are memoised by content)
        if name in _loaded:
            return _loaded[name]
    kind = _check_name(name)
    if kind in ("user", "file"):
        return userdata.year_counts(_user_panel(name, kind))
    if kind == "cached":
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
    if kind in ("user", "file"):
        return _user_panel(name, kind)
    if kind == "embedded" and _meta(name).get("years"):
        panel = _load_embedded(name, panel=True)
    elif kind == "cached":
        from demonoise.io.fetch import load_cached_panel

        panel = load_cached_panel(name)
    else:
        panel = Panel.from_counts([load(name)])
    with _lock:
        return _loaded_panels.setdefault(name, panel)


_user_panels: dict[tuple, Panel] = {}


def _user_key(ref: str, kind: str) -> tuple:
    """What a user dataset's memo is keyed by: the registration's content digest, or the
    file's path, size and modification time (an edited file is read again)."""
    if kind == "user":
        return ("user", ref, userdata.registration(ref).get("content_sha256"))
    path = Path(ref).resolve()
    try:
        st = path.stat()
    except OSError:
        raise DataError("counts file not found", file=str(ref)) from None
    return ("file", str(path), st.st_size, st.st_mtime_ns)


def _user_panel(ref: str, kind: str) -> Panel:
    """A registered dataset (from its packed form) or a counts file (read and validated), memoised."""
    key = _user_key(ref, kind)
    with _lock:
        if key in _user_panels:
            return _user_panels[key]
    panel = userdata.load_registered(ref) if kind == "user" else userdata.read_file(ref)
    with _lock:
        return _user_panels.setdefault(key, panel)


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
    kind = _check_name(name)
    if kind == "user":
        return str(userdata.registration(name)["content_sha256"])[:16]
    if kind == "file":
        return hashlib.sha256(Path(name).read_bytes()).hexdigest()[:16]
    if kind == "cached":
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
        _user_panels.clear()
    _meta.cache_clear()


# ----------------------------------------------------------------------------- own data
def name_of(ref: str) -> str:
    """The dataset name of ``NAME|FILE``: the name itself, or a file's name without extension
    (never raises: an unknown name is returned as it is)."""
    ref = str(ref)
    known = ref in embedded_names() or ref in userdata.registered_names()
    return userdata.file_name(ref) if not known and userdata.looks_like_file(ref) else ref


def resolve(ref: str, base: str | Path | None = None) -> str:
    """``NAME|FILE`` as it can be passed to another process: a known name unchanged, a
    counts file as its absolute path (a relative one taken relative to ``base``, default
    the working directory).

    Raises
    ------
    ParameterError
        Neither a known name nor a file (listing the available names).
    DataError
        A file that does not exist (naming it).
    """
    ref = str(ref)
    if _check_name(ref) != "file":
        return ref
    path = Path(ref).expanduser()
    if not path.is_absolute() and base is not None:
        path = Path(base) / path
    if not path.is_file():
        raise DataError("counts file not found", file=str(path))
    return str(path.resolve())


def years(ref: str) -> tuple[int, ...]:
    """The reference years of ``NAME|FILE`` (an embedded one's from its metadata, without loading it)."""
    kind = _check_name(ref)
    if kind == "embedded":
        m = _meta(ref)
        return tuple(int(y) for y in (m.get("years") or [m["year"]]))
    if kind == "user":
        m = userdata.registration(ref)
        return tuple(int(y) for y in (m.get("years") or [m["year"]]))
    if kind == "cached":
        d = next(d for d in _cached() if d["name"] == ref)
        return tuple(int(y) for y in d.get("years") or [d["year"]])
    return tuple(load_panel(ref).years)


def add(
    name: str, file: str | Path, *, source: str | None = None, origin: str = "demonoise datasets add"
) -> DatasetInfo:
    """Register a counts file as dataset ``name`` in the user cache (validated once, packed;
    :func:`demonoise.io.userdata.register`); ``name`` then loads like an embedded dataset.

    Raises
    ------
    ParameterError
        A name not allowed, or one of an embedded or fetched dataset.
    DataError, FormatError
        The file does not exist or fails validation (naming file and line).
    """
    userdata.register(name, file, source=source, taken=embedded_names() + [d["name"] for d in _cached()], origin=origin)
    return _user_info(name)


def remove(name: str) -> None:
    """Remove a dataset registered with :func:`add` (an embedded one cannot be removed).

    Raises
    ------
    ParameterError
        ``name`` is embedded, fetched, or not registered.
    """
    if name in embedded_names():
        raise ParameterError(f"dataset {name!r} is shipped with demonoise and cannot be removed")
    userdata.unregister(name)


#: How :func:`use_file` marks the registrations it makes (they may be replaced; those of :func:`add` not).
USED_BY = "used by "


def use_file(path: str | Path, *, origin: str) -> str:
    """The name under which a counts file given to a report or the overview is used: its
    :func:`name_of`, registered (:func:`add`) unless already registered from the same file
    with the same content -- so that every process of the batch (notebooks, Dask workers)
    loads it by name, and its results are stored under that name.

    Parameters
    ----------
    path : str or Path
        The counts file.
    origin : str
        What uses it (recorded in the registration: ``used by <origin>``).

    Raises
    ------
    ParameterError
        The file's name is that of an embedded or fetched dataset, or of a dataset
        registered with ``demonoise datasets add`` from another file (rename the file, or
        name the registered dataset).
    DataError, FormatError
        As :func:`add`.
    """
    path = Path(path).resolve()
    name = userdata.file_name(path)
    if name in userdata.registered_names():
        m = userdata.registration(name)
        same = m.get("file") == str(path)
        if not same and not str(m.get("origin", "")).startswith(USED_BY):
            raise ParameterError(
                f"counts file {path}: its name {name!r} is a dataset registered from {m.get('file')}; "
                f"rename the file, or write {name} to use the registered one"
            )
        if same and m.get("file_sha256") == userdata.file_sha256(path):
            return name
    add(name, path, origin=USED_BY + origin)
    return name


def as_name(ref: str, base: str | Path | None = None, *, origin: str) -> str:
    """``NAME|FILE`` as a dataset name: a name unchanged, a counts file (relative to
    ``base``, default the working directory) registered under its file name
    (:func:`use_file`). What the report batch and the overview store their results under.

    Raises
    ------
    As :func:`resolve` and :func:`use_file`.
    """
    ref = resolve(ref, base)
    return use_file(ref, origin=origin) if _check_name(ref) == "file" else ref


def fallback_notes(fallbacks: dict, country: str | None = None) -> dict[str, str]:
    """The fallbacks of a build (its ``fallbacks`` block) as a sentence per table.

    Parameters
    ----------
    fallbacks : dict
        Region (or country) codes per fallback kind, as the build records them.
    country : str, optional
        Keep only the codes of this country (a code starting with it): a country's report
        names its own fallbacks, not those of the other countries of the dataset.

    Returns
    -------
    dict
        ``population``, ``deaths`` and ``births``: the sentences (``""`` when none).
    """
    fb = _fallbacks_of(fallbacks, country) if country else fallbacks
    out: dict[str, list[str]] = {"population": [], "deaths": [], "births": []}
    for kind, table, words in _FALLBACK_WORDS:
        if fb.get(kind):
            out[table].append(words(fb[kind]))
    return {table: "; ".join(v) for table, v in out.items()}


def _codes(v) -> str:
    return ", ".join(v)


def _codes_with(v: dict) -> str:
    return ", ".join(f"{k} ({'/'.join(x) if isinstance(x, list) else x})" for k, x in v.items())


def _apportioned(v: dict) -> str:
    groups: dict = {}
    for k, successors in v.items():
        groups.setdefault(tuple(successors), []).append(k)
    return "; ".join(f"{' + '.join(old)} from {' + '.join(new)}" for new, old in groups.items())


#: Per kind of fallback the build records: its table and its sentence.
_FALLBACK_WORDS = (
    (
        "population_2024_exact",
        "population",
        lambda v: (
            "1 January 2024 population published under NUTS 2024 codes only: "
            + "; ".join(f"{k} = {' + '.join(x)}" for k, x in v.items())
            + " (exact)"
        ),
    ),
    (
        "population_2024_apportioned",
        "population",
        lambda v: (
            "1 January 2024 population apportioned from the NUTS 2024 successors (their total of each sex and "
            "age group, shared in proportion to the 2023 population): " + _apportioned(v)
        ),
    ),
    (
        "population_2024_carried_forward",
        "population",
        lambda v: "no 2024 population published: 2023 stock carried forward for " + _codes(v),
    ),
    ("population_unk_not_published", "population", lambda v: "UNK not published (set to 0) for " + _codes(v)),
    ("excluded_empty_regions", "population", lambda v: "regions with zero population left out: " + _codes(v)),
    (
        "mortality_target_nearest_year",
        "deaths",
        lambda v: "e0/e65 target from the nearest earlier year: " + _codes_with(v),
    ),
    (
        "mortality_target_shifted",
        "deaths",
        lambda v: (
            "e0/e65 target = later regional value shifted by the country's change since the calibration "
            "year: " + _codes_with(v)
        ),
    ),
    (
        "births_latest_year",
        "births",
        lambda v: "no 2023 births by age of mother: latest complete year used unchanged for " + _codes_with(v),
    ),
    (
        "births_missing_ages",
        "births",
        lambda v: (
            "absent single ages filled (TOTAL - UNK - published, in proportion to the reference year) for "
            + "; ".join(f"{k}: {', '.join(x['ages'])} (reference {x['reference_year']})" for k, x in v.items())
        ),
    ),
    (
        "births_regional_tfr_missing",
        "births",
        lambda v: (
            "no published 2022 TFR (demo_r_find3): births in proportion to female exposure (national "
            "fertility) for " + _codes(v)
        ),
    ),
)


def _fallbacks_of(fallbacks: dict, country: str) -> dict:
    """The entries of ``fallbacks`` whose code belongs to ``country``."""

    def mine(code) -> bool:
        return str(code).startswith(country)

    out = {}
    for kind, v in fallbacks.items():
        if isinstance(v, dict):
            out[kind] = {k: x for k, x in v.items() if mine(k)}
        elif isinstance(v, list):
            out[kind] = [x for x in v if mine(x)]
    return out


def provenance_dict(dataset: str) -> dict:
    """Per table of ``dataset``: status, Eurostat dataset codes, extraction date, source,
    note and Eurostat's update stamp per code (``updated``; ``{}`` when not known)."""
    if dataset in embedded_names():
        prov = metadata(dataset)["provenance"]
        keys = ("status", "datasets", "extracted", "source", "note")
        return {
            t: {k: p.get(k, "") for k in keys} | {"updated": dict(p.get("updated") or {})} for t, p in prov.items() if p
        }
    return provenance_fields(load(dataset).provenance)


def provenance_fields(provenance) -> dict:
    """:func:`provenance_dict`'s fields of a :class:`~demonoise.core.counts.Provenance`."""
    return {
        name: {
            "status": t.status,
            "datasets": list(t.datasets),
            "extracted": t.extracted,
            "source": t.source,
            "note": t.note,
            "updated": dict(t.updated),
        }
        for name, t in provenance.tables.items()
    }


def country_provenance(provenance: dict, dataset: str, country: str) -> dict:
    """:func:`provenance_dict`'s tables of an embedded
    ``dataset`` with each note's fallbacks narrowed to ``country`` (the dataset-wide list
    names every country's); other datasets unchanged."""
    if dataset not in embedded_names():
        return provenance
    notes = fallback_notes(metadata(dataset).get("fallbacks") or {}, country)
    out = {}
    for table, p in provenance.items():
        rule = str(p.get("note", "")).split(FALLBACKS_SEP)[0]
        mine = notes.get(table, "")
        out[table] = {**p, "note": rule + (FALLBACKS_SEP + mine if mine else "")}
    return out


#: How a table's note introduces the fallbacks of the build.
FALLBACKS_SEP = "; fallbacks: "
