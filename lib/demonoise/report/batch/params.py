"""The params of a report batch: a YAML file validated declaratively (pydantic).

The schema (``params/default.yaml`` is an example)::

    title: demonoise showcase
    datasets:                   # dataset -> its countries, or "all"
      ess-2023: [FI, FR, LU, MT]
      be-2023: [BE]
      my_counts.csv: all        # a counts file, relative to this params file (docs/csv_template.md)
    noise:                      # the settings compared side by side
      - {V: 1}                  # generic model, variance V (> 0; its sd is sqrt(V))
      - {V: 5}
      - {ptable: v01}           # an embedded p-table (v01, v03, v04) or a file
    thresholds: [0.1, 0.414]    # admixture thresholds of V_max, each in (0, 10]
    confidence: [0.95]          # levels of the error bands, each in (0, 1)
    recommend: {indicator: e0, threshold: 0.1}
    publisher: {organisation: ..., contact: ..., date: 2026-12-01}   # optional
    indicators: [asfr, tfr, asmr, life_expectancy]
    granularity: single         # single | 5y | 5y-infant
    mc: 1000                    # Monte Carlo replicates for e and TFR (0: none)
    seed: 20230101
    pdf: true
    overview: true              # or {dataset: ess-2023, mc: 0, countries: [...], sex: worst}
    extras: [teaching]          # or {whatif: {region: BE34, scale: 4}}
    scheduler: tcp://10.0.0.5:8786   # optional: run on this Dask cluster (default: a local one)

The old form ``V: [1, 5]`` with ``noise: generic`` is read as two generic settings, with a
notice showing the new form (:attr:`ReportParams.notices`). Every bad entry is one line
naming the file and the key, e.g.
``params/x.yaml: noise[2].ptable: unknown p-table 'v99'; embedded: v01, v03, v04``; the YAML
loader also rejects duplicate keys (PyYAML silently keeps the last) and a file not in UTF-8.
A counts file (in ``datasets:``, or an overview's or extra notebook's ``dataset``) is
relative to the params file, validated with them and used under its file name
(:func:`demonoise.io.datasets.as_name`: every process of the batch loads it by that name).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from demonoise.analysis.settings import NoiseSetting
from demonoise.core.errors import DemonoiseError, ParameterError
from demonoise.core.vocabulary import A_EQUAL, A_SMALL, GRANULARITIES, HEADLINES
from demonoise.noise.ptable import check_variance
from demonoise.runtime.cluster import check_address
from demonoise.uncertainty.calibration import THRESHOLD_MAX

__all__ = ["REPORT_INDICATORS", "EXTRAS", "ReportParams", "parse_params", "load_params"]

#: The indicator chapters of a report, in order, with the notebook of each.
REPORT_INDICATORS: tuple[str, ...] = ("asfr", "tfr", "asmr", "life_expectancy")
_ALIASES = {"e": "life_expectancy", "ex": "life_expectancy", "e0": "life_expectancy", "le": "life_expectancy"}
#: Extra notebooks a batch can render next to the reports, and the title of their document.
EXTRAS = {"teaching": "The variance of life expectancy, step by step", "whatif": "demonoise what-if analysis"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _setting(spec) -> NoiseSetting:
    """``{V: <variance>}`` or ``{ptable: <name or file>}`` (a file read now: a malformed one fails
    with the params) as a NoiseSetting; a bad value named by its key (``.V: ...``)."""
    from demonoise.analysis.ptables import embedded_ptable_names, resolve_ptable

    if isinstance(spec, Mapping) and (extra := [k for k in spec if k not in ("V", "ptable")]):
        raise ValueError(f".{extra[0]}: unknown key")
    if not isinstance(spec, Mapping) or (spec.get("V") is None) == (spec.get("ptable") is None):
        raise ValueError("a setting is either {V: <variance>} or {ptable: <name or file>}")
    key = "V" if spec.get("V") is not None else "ptable"
    try:
        if key == "V":
            return NoiseSetting.generic(check_variance(_number(spec["V"], "V must be a number")))
        p, names = str(spec["ptable"]).strip(), embedded_ptable_names()
        if p.lower() in names:
            return NoiseSetting.from_ptable(p.lower())
        if not Path(p).is_file():
            raise ValueError(f"unknown p-table {p!r}; embedded: {', '.join(names)}, or give a file that exists")
        with _value_error(f"the p-table file {p} cannot be read: "):
            resolve_ptable(p)
        return NoiseSetting.from_ptable(str(Path(p).resolve()))
    except ValueError as e:  # ParameterError and DataError among them
        raise ValueError(f".{key}: {e}") from None


def _number(v, what: str) -> float:
    """A number as given, or as text YAML 1.1 leaves it (``1e3``); ValueError otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"{what}, got {v!r}")
    try:
        return float(v)
    except ValueError:
        raise ValueError(f"{what}, got {v!r}") from None


def _integer(v, what: str):
    """An integer as given or written with no fraction (``1e3``, ``2000.0``); others left to the field."""
    if isinstance(v, bool) or not isinstance(v, (float, str)):
        return v
    x = _number(v, what)
    if not (math.isfinite(x) and x == int(x)):
        raise ValueError(f"{what}, got {v!r}")
    return int(x)


@contextmanager
def _value_error(prefix: str = ""):
    """A library error (:class:`~demonoise.core.errors.DemonoiseError`) as a ValueError, after ``prefix``."""
    try:
        yield
    except DemonoiseError as e:
        raise ValueError(prefix + str(e)) from None


def _iso(d):
    try:  # a date YAML read, or text
        return None if d is None else date.fromisoformat(str(d).strip()).isoformat()
    except ValueError:
        raise ValueError(f"not a date: give it as YYYY-MM-DD, e.g. 2026-12-01, got {d!r}") from None


class Publisher(_Strict):
    """Who publishes the report (its cover): organisation, contact, date."""

    organisation: str = Field(min_length=1)
    contact: str = Field(min_length=1)
    date: Annotated[str | None, BeforeValidator(_iso)] = None


def _within(x, what: str, top: float, closed: bool = True) -> float:
    """``x`` if in (0, ``top``] (``closed``) or (0, ``top``); ValueError naming ``what`` otherwise."""
    if not (0 < x < top or closed and x == top):
        raise ValueError(f"{what} {x:g} outside (0, {top:g}{']' if closed else ')'}")
    return float(x)


def _levels(what: str, top: float, closed: bool, none: str):
    """Numbers each as :func:`_within`, sorted, once; ``none``: the message for an empty list."""

    def levels(v) -> tuple[float, ...]:
        xs = [_within(_number(x, "must be numbers"), what, top, closed) for x in _as_list(v)]
        if not xs:
            raise ValueError(none)
        return tuple(sorted(set(xs)))

    return Annotated[tuple[float, ...], BeforeValidator(levels)]


class Recommend(_Strict):
    """What the recommended V is for: the smallest V_max of ``indicator`` at ``threshold``."""

    indicator: Annotated[Literal[tuple(HEADLINES)], BeforeValidator(lambda i: str(i).strip().lower())] = "e0"
    threshold: Annotated[float, AfterValidator(lambda t: _within(t, "threshold", THRESHOLD_MAX))] = A_SMALL


class Selection(_Strict):
    """Countries of one dataset."""

    dataset: str
    countries: tuple[str, ...]


def _check_replicates(n: int) -> int:
    if n < 0 or n == 1:
        raise ValueError(f"Monte Carlo replicates must be 0 or an integer >= 2, got {n}")
    if n > 10**9:  # as demonoise compute --mc
        raise ValueError(f"Monte Carlo replicates must be at most 10^9 (a check needs 10^3 to 10^5), got {n}")
    return n


#: A number of Monte Carlo replicates: 0 or 2..10^9, also as written ``1e3``.
Replicates = Annotated[
    int,
    BeforeValidator(lambda n: _integer(n, "Monte Carlo replicates must be an integer")),
    AfterValidator(_check_replicates),
]


class Overview(_Strict):
    """The Europe overview: every NUTS 2 region of a dataset."""

    dataset: Annotated[str, AfterValidator(_dataset)] = "ess-2023"
    mc: Replicates = 0
    countries: tuple[str, ...] | None = None
    sex: Literal["T", "F", "M", "worst"] = "worst"  # worst: per region the worst of F, M, T (the reports' rule)

    @field_validator("countries", mode="before")
    @classmethod
    def _of_the_dataset(cls, cs, info: ValidationInfo):
        return cs if cs is None or "dataset" not in info.data else _countries(info.data["dataset"], cs, "")


# ---------------------------------------------------------------------------- validators' steps
#: The messages of pydantic's own errors, by their type (``{key}``, ``{input}`` and the error's context).
_MESSAGES = {
    "extra_forbidden": "unknown key",
    "missing": "required key missing",
    "bool_type": "true or false, got {input!r}",
    "literal_error": "unknown {key} {input!r}; choose from {expected}",
}


def _one_line(e: ValidationError) -> str:
    """The first error of a pydantic validation as ``key.path: message``; a message that
    starts with ``.`` or ``[`` continues the path (a validator naming a key below its own)."""
    err = e.errors()[0]
    loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err["loc"]).replace(".[", "[")
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] in _MESSAGES:
        msg = _MESSAGES[err["type"]].format(key=err["loc"][-1], input=err.get("input"), **err.get("ctx", {}))
    if msg.startswith((".", "[")):
        return (loc + msg).lstrip(".")
    return f"{loc}: {msg}" if loc else msg


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _dataset(ref, info: ValidationInfo, resolve: bool = False):
    """A dataset name, or a counts file relative to the params file (the context's ``source``):
    its absolute path (``resolve``: an extra notebook's) or its name (:func:`~demonoise.io.datasets.as_name`)."""
    from demonoise.io import datasets as reg

    source = (info.context or {}).get("source")
    base = Path(source).parent if source else None
    with _value_error():
        if resolve:
            return reg.resolve(str(ref), base) if ref else ref
        return reg.as_name(str(ref), base, origin=f"params {source or 'params'}")


def _selections(ds, info: ValidationInfo) -> list[dict]:
    """Datasets (names or counts files) and countries, checked against the registry (names the bad one)."""
    if not ds or not isinstance(ds, Mapping):
        raise ValueError("map each dataset to its countries, e.g. {ess-2023: [FI, LU]} or {ess-2023: all}")
    return [{"dataset": (n := _dataset(ref, info)), "countries": _countries(n, cs)} for ref, cs in ds.items()]


def _countries(name: str, countries, at: str | None = None) -> tuple[str, ...]:
    """Dataset ``name``'s countries chosen (``all``: every one), each known, none twice; errors after ``at``."""
    from demonoise.io import datasets as reg

    at = f".{name}: " if at is None else at
    embedded = name in reg.embedded_names()  # their metadata lists the countries: no counts loaded
    have = tuple(reg.metadata(name)["countries"] if embedded else reg.load(name).countries)
    chosen = list(have) if countries in ("all", "ALL", None) else [str(c).strip().upper() for c in _as_list(countries)]
    bad = [c for c in chosen if c not in have]
    if bad:
        raise ValueError(
            f"{at}unknown countr{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)} for dataset "
            f"{name!r}; it has {', '.join(have)}"
        )
    twice = sorted({c for c in chosen if chosen.count(c) > 1})
    if twice or not chosen:
        raise ValueError(at + (f"{', '.join(twice)} listed twice" if twice else "no countries"))
    return tuple(chosen)


def _indicators(values) -> tuple[str, ...]:
    keys = []
    for i in _as_list(values):
        key = _ALIASES.get(str(i).strip().lower(), str(i).strip().lower())
        if key not in REPORT_INDICATORS:
            raise ValueError(f"unknown indicator {i!r}; choose from {', '.join(REPORT_INDICATORS)}")
        keys.append(key)
    if not keys:
        raise ValueError("none given")
    return tuple(i for i in REPORT_INDICATORS if i in keys)


def _overview(ov):
    if ov is not None and not isinstance(ov, (bool, Mapping)):
        raise ValueError(f"must be true, false or a mapping (dataset, mc, countries, sex), got {ov!r}")
    return {} if ov is True else None if ov in (False, None) else ov


def _extras(ex, info: ValidationInfo) -> tuple:
    items = list(ex.items()) if isinstance(ex, Mapping) else [(e, {}) for e in _as_list(ex or [])]
    out = []
    for name, opts in items:
        if str(name) not in EXTRAS:
            raise ValueError(f"unknown extra notebook {name!r}; choose from {', '.join(EXTRAS)}")
        if not isinstance(opts or {}, Mapping):
            raise ValueError(f".{name}: its parameters must be a mapping, got {opts!r}")
        # the parameters naming a dataset: a counts file among them is relative to the params file
        opts = {
            k: _dataset(v, info, True) if k in ("dataset", "change_dataset") else v for k, v in (opts or {}).items()
        }
        frozen = tuple(sorted((str(k), tuple(v) if isinstance(v, list) else v) for k, v in opts.items()))
        out.append((str(name), frozen))
    return tuple(out)


def _distinct(ss):
    if not ss:
        raise ValueError("give at least one noise setting, e.g. noise: [{V: 1}]")
    labels = [s.label for s in ss]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise ValueError(f"setting {', '.join(twice)} listed twice")
    return ss


class ReportParams(_Strict):
    """Validated parameters of a report batch (the module notes give the YAML): build it
    with :func:`parse_params` (the keys as in the file: ``datasets``, ``noise``)."""

    selections: Annotated[tuple[Selection, ...], BeforeValidator(_selections)] = Field(validation_alias="datasets")
    settings: Annotated[tuple[Annotated[NoiseSetting, PlainValidator(_setting)], ...], AfterValidator(_distinct)] = (
        Field(validation_alias="noise")
    )
    indicators: Annotated[tuple[str, ...], BeforeValidator(_indicators)] = REPORT_INDICATORS
    granularity: Literal[GRANULARITIES] = "single"
    mc: Replicates = 2000
    seed: Annotated[int, BeforeValidator(lambda n: _integer(n, "seed must be an integer")), Field(ge=0)] = 20230101
    title: str = "demonoise quality reports"
    pdf: StrictBool = True
    thresholds: _levels("threshold", THRESHOLD_MAX, True, "give at least one threshold") = (A_SMALL, A_EQUAL)
    confidence: _levels("confidence", 1.0, False, "give at least one confidence level") = (0.95,)
    recommend: Recommend = Recommend()
    publisher: Publisher | None = None
    overview: Annotated[Overview | None, BeforeValidator(_overview)] = None
    extras: Annotated[tuple[tuple[str, tuple], ...], BeforeValidator(_extras)] = ()
    scheduler: Annotated[str, AfterValidator(check_address)] | None = None
    notices: tuple[str, ...] = Field((), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, data):
        """The file's mapping, the old form ``V: [1, 5]`` (with ``noise: generic``) read as
        settings with a notice; ``notices`` is not a key of the file."""
        if not isinstance(data, Mapping):
            raise ValueError(f"the params file must be a mapping of keys to values, got {type(data).__name__}")
        data, notices = {str(k): v for k, v in data.items()}, ()
        if "notices" in data:
            raise ValueError(".notices: unknown key")
        if "V" in data:
            if data.get("noise", "generic") not in ("generic", None):
                raise ValueError(
                    f"noise: {data['noise']!r} next to V: the old form knows only noise: generic; "
                    "give the settings as noise: [{V: 1}, {ptable: v01}]"
                )
            V = data.pop("V")
            data["noise"] = [{"V": v} for v in _as_list(V)]
            new = "noise: [" + ", ".join(f"{{V: {v}}}" for v in _as_list(V)) + "]"
            notices = (f"the old form `V: {V}` with `noise: generic` is read as `{new}`; write that instead",)
        if not isinstance(data.setdefault("noise", []), (list, tuple)):
            raise ValueError(".noise: a list of settings, e.g. [{V: 1}, {V: 5}, {ptable: v01}]")
        return {**data, "notices": notices}

    @property
    def V(self) -> tuple[float, ...]:
        """The variances of the generic settings."""
        return tuple(s.V for s in self.settings if s.is_generic)

    @property
    def ptables(self) -> tuple[str, ...]:
        """The p-tables: embedded names and files' absolute paths."""
        return tuple(s.table_source for s in self.settings if not s.is_generic)


def parse_params(data: Mapping[str, Any], *, source: str = "") -> ReportParams:
    """Validate a parsed params mapping into :class:`ReportParams` (pydantic alone).

    Raises
    ------
    ParameterError
        One line: the file (``source``), the key and what is wrong with it.
    """
    try:
        return ReportParams.model_validate(data, context={"source": source})
    except ValidationError as e:
        raise ParameterError((f"{source}: " if source else "") + _one_line(e)) from None


# ---------------------------------------------------------------------------- YAML
def load_params(path: str | os.PathLike) -> ReportParams:
    """Read a YAML params file (PyYAML's safe loader, rejecting duplicate keys) and validate
    it (:func:`parse_params`).

    Raises
    ------
    ParameterError
        Missing or unreadable file, a file that is not UTF-8, invalid YAML (with the line),
        a key given twice (with both lines), a bad entry -- one line, naming the file.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ParameterError(f"cannot read params file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ParameterError(
            f"{path}: not UTF-8 text (byte {e.start}: {e.object[e.start]:#04x}); save it as UTF-8"
        ) from None

    class _Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ParameterError(
                        f"{path}: key {key!r} given twice (lines {seen[key] + 1} and {key_node.start_mark.line + 1})"
                    )
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ParameterError(f"{path}: not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    if data is None:
        raise ParameterError(f"{path}: the params file is empty")
    return parse_params(data, source=str(path))
