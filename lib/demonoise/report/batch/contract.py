"""The contract between a report notebook and whoever runs it -- checked, never assumed.

papermill injects a run's parameters after the cell tagged ``parameters``; without that tag
it injects them at the top, where the notebook's defaults then overwrite them, and it only
warns about a parameter the notebook does not define. Before any work,
:func:`check_contract` (the tagged cell assigns every parameter the batch injects) and
:func:`check_known` (every parameter a user gives is defined) read the cell as papermill
does; after execution, :func:`check_shown` compares what each section recorded it shows
(:func:`shown_record`, under :data:`SHOWN`) with what its run asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.content.notebook import SHOWN, shown_record

__all__ = ["PARAMETERS_TAG", "SHOWN", "parameter_names", "check_contract", "check_known", "shown_record", "check_shown"]

#: papermill's tag of the cell after which it injects the parameters.
PARAMETERS_TAG = "parameters"


def parameter_names(path: str | os.PathLike) -> tuple[str, ...]:
    """Names the cell tagged ``parameters`` assigns, in order, read as
    :func:`papermill.inspect_notebook` reads a Python notebook (without its need of a
    kernelspec in the metadata).

    Raises
    ------
    ReportError
        The notebook cannot be read or has no cell tagged ``parameters`` -- naming it.
    """
    import nbformat
    from papermill.translators import PythonTranslator

    try:
        nb = nbformat.read(Path(path), as_version=4)
    except FileNotFoundError:
        raise ReportError(f"notebook not found: {path}") from None
    except Exception as e:
        raise ReportError(f"cannot read notebook {path}: {type(e).__name__}: {e}") from None
    cell = next(
        (c for c in nb.cells if c.get("cell_type") == "code" and PARAMETERS_TAG in (c.metadata.get("tags") or [])),
        None,
    )
    if cell is None:
        raise ReportError(
            f"notebook {path} has no code cell tagged '{PARAMETERS_TAG}': papermill would inject the run's values "
            "above the notebook's own defaults, which then overwrite them (the report would show the defaults' "
            "country and setting); tag the cell that assigns the parameters"
        )
    return tuple(dict.fromkeys(p.name for p in PythonTranslator.inspect(cell)))


def check_contract(path: str | os.PathLike, injected: Iterable[str]) -> tuple[str, ...]:
    """The notebook's parameter names, after checking its parameters cell assigns every
    name in ``injected``.

    Raises
    ------
    ReportError
        No tagged parameters cell, or injected names it does not define -- naming them.
    """
    names = parameter_names(path)
    if missing := [n for n in injected if n not in names]:
        raise ReportError(
            f"notebook {path}: its '{PARAMETERS_TAG}' cell does not define {', '.join(missing)}, which the batch "
            f"injects; it defines {', '.join(names) or 'nothing'}"
        )
    return names


def check_known(path: str | os.PathLike, given: Mapping[str, Any], what: str) -> None:
    """Refuse a parameter the notebook does not define.

    Raises
    ------
    ParameterError
        ``unknown parameter 'regoin' for notebook whatif; its parameters: dataset, region, ...``
    ReportError
        The notebook has no tagged parameters cell (:func:`parameter_names`).
    """
    names = parameter_names(path)
    if unknown := [k for k in given if k not in names]:
        s = "s" if len(unknown) > 1 else ""
        raise ParameterError(
            f"unknown parameter{s} {', '.join(map(repr, unknown))} for notebook {what}; "
            f"its parameters: {', '.join(names)}"
        )


# ----------------------------------------------------------------------- what was shown
def check_shown(
    path: str | os.PathLike, *, dataset: str, country: str, setting: str | None = None, settings=()
) -> None:
    """Compare what the executed notebook at ``path`` recorded with what it was asked for.

    Parameters
    ----------
    dataset, country : str
        The section's rows must hold exactly these.
    setting : str, optional
        Label of the run's setting (``"V = 1"``, ``"p-table v01"``).
    settings : iterable of str
        Labels the section's rows must all hold (the summary's).

    Raises
    ------
    ReportError
        The record is missing or differs, naming the notebook.
    """
    from demonoise.report.document.assemble import read_metrics

    got = read_metrics(path).get(SHOWN)
    if not isinstance(got, Mapping):
        raise ReportError(
            f"{path}: the notebook did not record what it shows (summary.load_results records it); "
            "not rendered, so that no section can show other data than asked"
        )
    asked = {"dataset": [dataset], "country": [country], **({} if setting is None else {"setting": setting})}
    words = lambda v: v if isinstance(v, str) else ", ".join(v or ["none"])  # noqa: E731
    wrong = [f"{k} {words(got.get(k))} instead of {words(v)}" for k, v in asked.items() if got.get(k) != v]
    if absent := [s for s in settings if s not in (got.get("settings") or [])]:
        wrong.append(f"no rows for {', '.join(absent)}")
    if wrong:
        raise ReportError(f"{path} shows {'; '.join(wrong)}: the section is not what the batch asked for")
