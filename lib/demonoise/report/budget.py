"""How big a report batch is, and refusing one that is too big without ``--yes``.

A params file with 1 000 V's is valid YAML and a valid schema, and it queues 5 000
notebook executions. :func:`estimate_batch` sizes a planned batch from the plan alone
(no data loaded, nothing run) and :func:`check_batch_size` refuses, in one line with the
size and the time estimate, a batch above :data:`MAX_NOTEBOOKS` notebook executions or
:data:`MAX_SECONDS` of estimated wall time unless the caller says yes (``demonoise report
--yes``). Nothing ever prompts: a batch runs under CI, without a terminal.

The estimate, in seconds of wall time on ``workers`` processes (the work of each kind
spread over the workers: the countries' steps overlap, :class:`demonoise.report.batch.Countries`)::

    compute   = sum over reports of [ C_report + C_region r
                                      + (mc > 0) s (C_mc + mc (C_rep + C_region_rep r)) ] / workers
    notebooks = n_notebooks C_notebook / workers
    render    = pages C_page / workers,   pages = sum over reports of (15 + i s + r)

with ``r`` the regions of the country (the country and its NUTS 2 regions), ``s`` the
noise settings and ``i`` the indicator chapters. The constants come from the full
ess-2023 batch (36 countries, three settings, mc 1 000; work measured inside the tasks,
``benchmarks/bench_reports.py``): 470 notebooks 285 s, 1 352 pages (LU 28, FR 55; the page
formula's 29 and 55) 358 s of HTML and PDF, the compute 102.5 s; each set about 1.5 times
higher, as a host shared with other work runs them (the same batch took 393 s to 683 s
of wall time on one kind of host).
The overview and the extras count as one notebook each.
"""

from __future__ import annotations

from dataclasses import dataclass

from demonoise.core.errors import ParameterError

__all__ = [
    "MAX_NOTEBOOKS",
    "MAX_SECONDS",
    "NOTEBOOK_SECONDS",
    "PAGE_SECONDS_PDF",
    "PAGE_SECONDS_HTML",
    "BatchEstimate",
    "estimate_batch",
    "check_batch_size",
]

#: Notebook executions a batch may queue without ``--yes``.
MAX_NOTEBOOKS = 200
#: Estimated wall time a batch may take without ``--yes`` (30 minutes).
MAX_SECONDS = 1800.0
#: Seconds of work per notebook execution (kernel reused; 0.61 s measured).
NOTEBOOK_SECONDS = 1.0
#: Seconds of work per report page, HTML and PDF (0.27 s measured).
PAGE_SECONDS_PDF = 0.45
#: Seconds of work per report page, HTML only (0.022 s measured).
PAGE_SECONDS_HTML = 0.05
#: Compute per report (results, calibration, comparisons): fixed and per region.
COMPUTE_SECONDS = 1.0
COMPUTE_SECONDS_PER_REGION = 0.05
#: Monte Carlo per report and setting: start-up, per replicate, per region and replicate.
MC_START_SECONDS = 0.2
MC_REPLICATE_SECONDS = 1.0e-4
MC_REGION_REPLICATE_SECONDS = 6.0e-5
#: Pages of a report: fixed, per chapter section (indicator x setting), per region.
PAGES_FIXED, PAGES_PER_SECTION, PAGES_PER_REGION = 15.0, 1.0, 1.0


@dataclass(frozen=True)
class BatchEstimate:
    """Size and estimated wall time (seconds) of a planned batch, by stage."""

    reports: int
    notebooks: int
    pages: int
    compute: float
    execute: float
    render: float

    @property
    def seconds(self) -> float:
        return self.compute + self.execute + self.render

    def describe(self) -> str:
        return (
            f"{self.reports} reports, {self.notebooks} notebook executions, about {self.pages} pages; "
            f"estimated {_duration(self.seconds)} (compute {_duration(self.compute)}, notebooks "
            f"{_duration(self.execute)}, rendering {_duration(self.render)})"
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _regions(dataset: str, country: str) -> int:
    """The country and its NUTS 2 regions (NUTS 2021 code list; no data loaded)."""
    from demonoise.io.nuts import nuts_codes

    return 1 + len(nuts_codes(level=2, country=country))


def estimate_batch(plan, *, workers: int = 2, pdf: bool = True) -> BatchEstimate:
    """Size and time of the batch ``plan`` (a :class:`demonoise.report.batch.Plan`)."""
    params = plan.params
    s, i, mc = len(params.settings), len(params.indicators), params.mc
    compute = pages = 0.0
    for rep in plan.reports:
        r = _regions(rep.dataset, rep.country)
        compute += COMPUTE_SECONDS + COMPUTE_SECONDS_PER_REGION * r
        if mc:
            compute += s * (MC_START_SECONDS + mc * (MC_REPLICATE_SECONDS + MC_REGION_REPLICATE_SECONDS * r))
        pages += PAGES_FIXED + PAGES_PER_SECTION * i * s + PAGES_PER_REGION * r
    notebooks = len(plan.runs) + len(params.extras) + (params.overview is not None)
    page_cost = PAGE_SECONDS_PDF if pdf else PAGE_SECONDS_HTML
    return BatchEstimate(
        len(plan.reports),
        notebooks,
        round(pages),
        compute / workers,
        notebooks * NOTEBOOK_SECONDS / workers,
        pages * page_cost / workers,
    )


def check_batch_size(estimate: BatchEstimate, *, yes: bool) -> None:
    """Refuse a batch above :data:`MAX_NOTEBOOKS` executions or :data:`MAX_SECONDS`
    unless ``yes``.

    Raises
    ------
    ParameterError
        One line: the batch's size and time estimate, the limits, and what to do.
    """
    if yes or (estimate.notebooks <= MAX_NOTEBOOKS and estimate.seconds <= MAX_SECONDS):
        return
    raise ParameterError(
        f"the batch is large: {estimate.describe()}; without --yes a batch may run at most {MAX_NOTEBOOKS} "
        f"notebook executions and an estimated {MAX_SECONDS / 60:.0f} minutes -- pass --yes to run it, or give "
        "fewer countries, noise settings, indicators or Monte Carlo replicates"
    )
