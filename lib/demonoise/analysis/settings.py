"""One noise setting, named the same way everywhere.

A *noise setting* is the generic model at a variance ``V`` (``sqrt(V)`` is the sd of the
noise on every published count) or a Cell Key Method p-table. :class:`NoiseSetting` is
built once -- from the report parameters, the command line or a noise model -- and
carries every form the setting takes:

=============  ==================================  ===================================
form           generic model at V = 1              p-table v01
=============  ==================================  ===================================
``key``        ``"V=1"``                           ``"v01"``   (the ``setting`` column)
``label``      ``"V = 1"``                         ``"p-table v01"``
``slug``       ``"V1"``                            ``"ptable-v01"``  (file names)
``short``      ``"V1"``                            ``"v01"``   (column headers)
``tag``        ``"V1"``                            ``"ptable_v01"`` (column suffixes)
``phrase``     ``"at V = 1"``                      ``"with p-table v01"``
``ptable``     ``""``                              ``"ptable v01"`` (the table's label)
``parameter``  ``{"V": 1.0}``                      ``{"ptable": "v01"}`` (notebooks)
=============  ==================================  ===================================

The results table (:func:`demonoise.analysis.results.results_table`) writes ``key`` in
its ``setting`` column; :meth:`NoiseSetting.mask` selects a setting's rows by that column
alone, and :func:`settings_in` lists the settings a table holds from it.

A p-table's name is the embedded table's name (``v01``) or the file's name as given
(``my_table.csv``); a table object names itself by its label (``"ptable <name>"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from demonoise.core.errors import ParameterError
from demonoise.uncertainty.propagation import TABLES, check_noised

__all__ = [
    "NoiseSetting",
    "ptable_name",
    "settings_in",
    "setting_column",
    "setting_labels",
    "in_report_order",
    "ordered_settings",
    "setting_of_label",
]


def ptable_name(source) -> str:
    """The name of a p-table as given: an embedded name (lower case, ``"v01"``), a file's
    name (``"my_table.csv"``), or a table object's own label without its ``"ptable "``."""
    table = getattr(source, "table", source)  # a PTableNoise carries its table
    label = getattr(table, "label", None)
    if label is not None:
        return str(label).removeprefix("ptable ")
    text = str(source)
    return Path(text).name if Path(text).exists() or Path(text).suffix else text.lower()


@dataclass(frozen=True)
class NoiseSetting:
    """A noise setting and every name it goes by.

    Attributes
    ----------
    kind : {"generic", "ptable"}
    V : float
        The variance of the generic model; a p-table's nominal variance (nan when not known).
    name : str
        The p-table's name (:func:`ptable_name`), ``""`` for the generic model.
    source : optional
        What :func:`demonoise.analysis.ptables.resolve_ptable` resolves (an embedded name,
        a file path, a table); not compared.
    model : optional
        The noise model, once built (:meth:`from_model`); not compared.
    noised : tuple
        The tables the noise is applied to (:data:`demonoise.uncertainty.propagation.TABLES`).
    """

    kind: str
    V: float = float("nan")
    name: str = ""
    source: object = field(default=None, compare=False, repr=False)
    model: object = field(default=None, compare=False, repr=False)
    noised: tuple = field(default=TABLES, compare=False, repr=False)

    # --------------------------------------------------------------- construction
    @classmethod
    def generic(cls, V: float, *, model=None, noised=TABLES) -> NoiseSetting:
        """The generic model at variance ``V``."""
        try:
            v = float(V)
        except (TypeError, ValueError):
            raise ParameterError(f"noise setting: V must be a number, got {V!r}") from None
        return cls("generic", v, model=model, noised=check_noised(noised))

    @classmethod
    def from_ptable(cls, source, *, V: float = float("nan"), model=None, noised=TABLES) -> NoiseSetting:
        """A p-table: an embedded name, a file, a table (its name from :func:`ptable_name`)."""
        return cls("ptable", float(V), ptable_name(source), source, model, check_noised(noised))

    @classmethod
    def from_model(cls, model, noised=TABLES, *, source=None) -> NoiseSetting:
        """The setting of a noise model (:class:`~demonoise.noise.models.GenericNoise` or
        :class:`~demonoise.noise.models.PTableNoise`), carrying the model."""
        V = getattr(model, "nominal_variance", None)
        V = float("nan") if V is None else float(V)
        table = getattr(model, "table", None)
        if table is None:
            return cls.generic(V, model=model, noised=noised)
        src = table if source is None else source
        return cls("ptable", V, ptable_name(table if source is None else source), src, model, check_noised(noised))

    @classmethod
    def of(cls, spec) -> NoiseSetting:
        """A setting from any of its forms: a :class:`NoiseSetting`, ``{"V": v}`` or
        ``{"ptable": name}`` (the notebook parameter), an object with ``V`` / ``ptable``
        attributes (the other one None), a number (a variance) or a key
        (``"V=1"``, ``"v01"``).

        Raises
        ------
        ParameterError
            A form that is none of these.
        """
        if isinstance(spec, NoiseSetting):
            return spec
        if isinstance(spec, Mapping):
            v, p = spec.get("V"), spec.get("ptable")
            if set(spec) - {"V", "ptable"} or (v is None) == (p is None):
                raise ParameterError(
                    f"noise setting {dict(spec)!r}: write {{V: <variance>}} or {{ptable: <name or file>}}"
                )
            return cls.generic(v) if v is not None else cls.from_ptable(p)
        if hasattr(spec, "ptable") and hasattr(spec, "V"):
            return cls.generic(spec.V) if getattr(spec, "ptable", None) is None else cls.from_ptable(spec.ptable)
        if isinstance(spec, (int, float, np.floating, np.integer)) and not isinstance(spec, bool):
            return cls.generic(spec)
        if isinstance(spec, str) and spec:
            return cls.generic(spec[2:]) if spec.startswith("V=") else cls.from_ptable(spec)
        raise ParameterError(
            f"noise setting {spec!r}: write {{V: <variance>}} or {{ptable: <name or file>}} (or pass a NoiseSetting)"
        )

    # ---------------------------------------------------------------------- forms
    @property
    def is_generic(self) -> bool:
        return self.kind == "generic"

    @property
    def key(self) -> str:
        """``"V=1"`` or ``"v01"``: the ``setting`` column of every table."""
        return f"V={self.V:g}" if self.is_generic else self.name

    @property
    def label(self) -> str:
        """``"V = 1"`` or ``"p-table v01"``: how every output names the setting."""
        return f"V = {self.V:g}" if self.is_generic else f"p-table {self.name}"

    @property
    def slug(self) -> str:
        """``"V1"`` or ``"ptable-v01"``: the setting in file names."""
        return f"V{self.V:g}" if self.is_generic else f"ptable-{Path(self.name).stem}"

    @property
    def short(self) -> str:
        """``"V1"`` or ``"v01"``: the setting in a column header."""
        return f"V{self.V:g}" if self.is_generic else self.name

    @property
    def tag(self) -> str:
        """``"V1"`` or ``"ptable_v01"``: the setting as a column suffix (``admixture_V1``)."""
        return f"V{self.V:g}" if self.is_generic else f"ptable_{self.name}"

    @property
    def phrase(self) -> str:
        """``"at V = 1"`` or ``"with p-table v01"``: inside a sentence."""
        return ("at " if self.is_generic else "with ") + self.label

    @property
    def ptable(self) -> str:
        """The results table's ``ptable`` column: ``"ptable v01"``, ``""`` for the generic model."""
        return "" if self.is_generic else f"ptable {self.name}"

    @property
    def table_source(self):
        """What :func:`demonoise.analysis.ptables.resolve_ptable` resolves: the source, else the name."""
        return self.name if self.source is None else self.source

    @property
    def words(self) -> str:
        """One line describing the noise (the reports' status box and parameters)."""
        if self.is_generic:
            return f"Noise: generic model, variance V = {self.V:g} (sd {math.sqrt(self.V):.3g}) on every published cell"
        return (
            f"Noise: Cell Key Method with p-table {self.name} (count-dependent noise: zeros stay zero, small counts "
            "have their own noise variance and bias)"
        )

    def as_parameter(self) -> dict:
        """The notebook parameter (JSON): ``{"V": 1.0}`` or ``{"ptable": "v01"}`` (a file: its path)."""
        if self.is_generic:
            return {"V": self.V}
        src = self.source if isinstance(self.source, (str, Path)) else self.name
        return {"ptable": str(src)}

    def mask(self, df: pd.DataFrame) -> pd.Series:
        """The rows of ``df`` (a results, decision or change table) of this setting."""
        return setting_column(df) == self.key

    def __str__(self) -> str:
        return self.label


def setting_column(df: pd.DataFrame) -> pd.Series:
    """The ``setting`` key of every row: the column itself, or -- a table written before
    the column existed -- made once from its ``noise_model``, ``V`` and ``ptable`` columns."""
    if "setting" in df:
        return df["setting"]
    cols = df[["noise_model", "V", "ptable"]].fillna({"ptable": ""})
    keys = {}
    for model, v, p in cols.drop_duplicates().itertuples(index=False):
        s = (
            NoiseSetting.generic(v)
            if model == "generic"
            else NoiseSetting("ptable", float(v), ptable_name(_Labelled(p)))
        )
        keys[(model, v, p)] = s.key
    idx = pd.MultiIndex.from_frame(cols)
    return pd.Series(idx.map(keys.get), index=df.index, dtype=object)


@dataclass(frozen=True)
class _Labelled:
    """A table known only by its label (the ``ptable`` column of an older table)."""

    label: str


def settings_in(df: pd.DataFrame) -> list[NoiseSetting]:
    """The settings of a table, in order of appearance."""
    keys = setting_column(df)
    first = ~keys.duplicated().to_numpy()
    rows = zip(keys[first], df["noise_model"][first], df["V"][first], strict=True)
    return [NoiseSetting.generic(v) if m == "generic" else NoiseSetting("ptable", float(v), k) for k, m, v in rows]


def setting_labels(df: pd.DataFrame, *, detailed: bool = False) -> pd.Series:
    """The label of every row's setting (``"V = 1"``, ``"p-table v01"``); ``detailed``: with
    the granularity and the scale appended where they vary within ``df`` (a what-if table)."""
    labels = {s.key: s.label for s in settings_in(df)}
    lab = setting_column(df).map(labels)
    if detailed and "granularity" in df and df["granularity"].nunique() > 1:
        lab = lab + ", " + df["granularity"].astype(str)
    if detailed and "scale" in df and df["scale"].nunique() > 1:
        lab = lab + ", x" + df["scale"].map(lambda s: f"{s:g}")
    return lab


def in_report_order(settings) -> list[NoiseSetting]:
    """The generic model's V's ascending, then the p-tables in the order given: the
    reports' order of settings (and of their colours)."""
    return sorted(settings, key=lambda s: (0, s.V) if s.is_generic else (1, 0.0))


def ordered_settings(df: pd.DataFrame) -> list[NoiseSetting]:
    """The noise settings of a results table in the reports' order (:func:`in_report_order`)."""
    return in_report_order(settings_in(df))


def setting_of_label(label: str) -> NoiseSetting:
    """The setting a label names (``"V = 1"``, ``"p-table v01"``)."""
    if label.startswith("V = "):
        return NoiseSetting.generic(float(label[4:]))
    return NoiseSetting("ptable", float("nan"), label.removeprefix("p-table "))
