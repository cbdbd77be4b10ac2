"""The contract between a report notebook and whoever runs it -- checked, never assumed.

papermill injects a run's parameters in a new cell right after the cell tagged
``parameters``. Without that tag it injects them at the *top* of the notebook, where the
notebook's own default assignments then overwrite them: the Belgian report's chapter
silently showed the defaults' country. And papermill only warns about a parameter the
notebook does not define. Three checks close both doors:

* before any work (the batch's plan stage, ``demonoise notebook``):
  :func:`check_contract` -- the notebook has a cell tagged ``parameters`` that assigns
  every parameter the batch injects; :func:`check_known` -- every parameter a user gives
  is one the notebook defines (an unknown one is an error listing the known ones). Both
  read the parameters with :func:`papermill.inspect_notebook` (papermill's own reading of
  the cell it injects after); nothing is executed.
* after execution (the render stage): :func:`check_shown` -- each section shows the
  dataset, country and setting it was asked for. The report notebooks read their table
  with :func:`demonoise.report.content.summary.load_results`, which records what the rows it
  returns hold (a metrics output under :data:`SHOWN`, :func:`shown_record`); the render
  stage compares that record with the run's request and fails the report, naming the
  notebook, on any difference or when the record is missing.
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
    """Names the cell tagged ``parameters`` of the notebook at ``path`` assigns, in order,
    as papermill reads them: :meth:`papermill.translators.PythonTranslator.inspect`, what
    :func:`papermill.inspect_notebook` runs for a Python notebook, without its need of a
    kernelspec in the notebook's metadata (the batch runs every notebook as Python).

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
    """Check that the notebook's parameters cell assigns every name in ``injected``.

    Returns
    -------
    tuple of str
        The notebook's parameter names.

    Raises
    ------
    ReportError
        No tagged parameters cell, or names the batch injects that the cell does not
        define (papermill would add them next to the notebook's own, unused) -- naming
        the notebook and the names.
    """
    names = parameter_names(path)
    missing = [n for n in injected if n not in names]
    if missing:
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
    unknown = [k for k in given if k not in names]
    if unknown:
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
        The run's dataset and country: the section's rows must hold exactly these.
    setting : str, optional
        Label of the run's setting (``"V = 1"``, ``"p-table v01"``): the section's.
    settings : iterable of str
        Labels every one of which the section's rows must hold (the summary's).

    Raises
    ------
    ReportError
        The record is missing (the notebook did not read its table with
        :func:`~demonoise.report.content.summary.load_results`) or differs, naming the notebook.
    """
    from demonoise.report.document.assemble import read_metrics

    got = read_metrics(path).get(SHOWN)
    if not isinstance(got, Mapping):
        raise ReportError(
            f"{path}: the notebook did not record what it shows (summary.load_results records it); "
            "not rendered, so that no section can show other data than asked"
        )
    wrong = []
    if got.get("dataset") != [dataset]:
        wrong.append(f"dataset {', '.join(got.get('dataset') or ['none'])} instead of {dataset}")
    if got.get("country") != [country]:
        wrong.append(f"country {', '.join(got.get('country') or ['none'])} instead of {country}")
    if setting is not None and got.get("setting") != setting:
        wrong.append(f"setting {got.get('setting')} instead of {setting}")
    absent = [s for s in settings if s not in (got.get("settings") or [])]
    if absent:
        wrong.append(f"no rows for {', '.join(absent)}")
    if wrong:
        raise ReportError(f"{path} shows {'; '.join(wrong)}: the section is not what the batch asked for")
