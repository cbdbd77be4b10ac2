"""demonoise: how much noise-based disclosure control degrades demographic indicators.

The public API, importable from the top level (loaded on first use, so that
``import demonoise`` stays cheap)::

    import demonoise as dn

    counts = dn.load("be-2023")                            # an embedded dataset
    df = dn.compute(counts, dn.noise_settings(V=[1, 5]))   # the tidy results table
    dn.what_if(counts, "BE34", scale=4, V=[1, 5])          # one region, scaled
    panel = dn.load_panel("be-2015-2023")                  # several years
    dn.change_table(panel, dn.noise_settings(V=[1]), year_from=2022, year_to=2023)

Everything else lives in its layer's module (e.g. :mod:`demonoise.core.vocabulary` for
indicator titles, thresholds and colours); the flat modules of 0.1 (``demonoise.counts``,
``demonoise.lifetable``, ...) are gone -- the README's "Upgrading from 0.1" maps them.

Layers, lowest first; each imports only those below it (an import-linter contract in
``pyproject.toml`` keeps it so; ``docs/design.md`` explains why):

1. :mod:`demonoise.core`        -- counts, publication layout, errors, atomic writes, vocabulary
2. :mod:`demonoise.io`          -- Eurostat formats, the dataset registry, fetch + cache, p-table files
3. :mod:`demonoise.demography`  -- life table, indicators and their exact gradients
4. :mod:`demonoise.noise`       -- generic noise, Poisson, p-tables, cell keys
   :mod:`demonoise.uncertainty` -- propagation, Monte Carlo, calibration, comparison
5. :mod:`demonoise.analysis`    -- compute, results table, p-tables by name, what-if, teaching
6. :mod:`demonoise.report`, :mod:`demonoise.cli` -- reports and the command line
"""

from __future__ import annotations

import importlib

from demonoise.core.version import __version__

#: Public name -> module that defines it. Nothing is imported until a name is used.
_PUBLIC = {
    # data model and errors
    "Counts": "demonoise.core.counts",
    "Panel": "demonoise.core.counts",
    "AgeAxis": "demonoise.core.counts",
    "Region": "demonoise.core.counts",
    "Provenance": "demonoise.core.counts",
    "publish": "demonoise.core.layout",
    "DemonoiseError": "demonoise.core.errors",
    "DataError": "demonoise.core.errors",
    "FormatError": "demonoise.core.errors",
    "ParameterError": "demonoise.core.errors",
    # data in
    "load": "demonoise.io.datasets",
    "load_panel": "demonoise.io.datasets",
    "available": "demonoise.io.datasets",
    "read_counts_csv": "demonoise.io.template",
    "write_counts_csv": "demonoise.io.template",
    "read_panel_csv": "demonoise.io.template",
    "write_panel_csv": "demonoise.io.template",
    "read_eurostat": "demonoise.io.eurostat",
    # demography
    "life_table": "demonoise.demography.lifetable",
    "e_derivative": "demonoise.demography.lifetable",
    "asfr": "demonoise.demography.indicators",
    "tfr": "demonoise.demography.indicators",
    "asmr": "demonoise.demography.indicators",
    "life_expectancy": "demonoise.demography.indicators",
    # noise
    "GenericNoise": "demonoise.noise.models",
    "PoissonNoise": "demonoise.noise.models",
    "PTableNoise": "demonoise.noise.models",
    "PTable": "demonoise.noise.ptable",
    "build_ptable": "demonoise.noise.ptable",
    "cell_keys": "demonoise.noise.cellkey",
    "perturb_table": "demonoise.noise.cellkey",
    # uncertainty
    "linearise": "demonoise.uncertainty.propagation",
    "admixture": "demonoise.uncertainty.propagation",
    "monte_carlo": "demonoise.uncertainty.montecarlo",
    "calibrate": "demonoise.uncertainty.calibration",
    "calibration_summary": "demonoise.uncertainty.calibration",
    "compare_noise": "demonoise.uncertainty.comparison",
    "linearise_change": "demonoise.uncertainty.change",
    "monte_carlo_change": "demonoise.uncertainty.change",
    "mdc_factor": "demonoise.uncertainty.change",
    # application
    "compute": "demonoise.analysis.compute",
    "noise_settings": "demonoise.analysis.compute",
    "read_results": "demonoise.analysis.compute",
    "write_results": "demonoise.analysis.compute",
    "results_table": "demonoise.analysis.results",
    "load_ptable": "demonoise.analysis.ptables",
    "read_ptable": "demonoise.analysis.ptables",
    "write_ptable": "demonoise.analysis.ptables",
    "what_if": "demonoise.analysis.whatif",
    "change_table": "demonoise.analysis.change",
    "change_chapter": "demonoise.analysis.change",
    "what_if_change": "demonoise.analysis.whatif",
    "decision_report": "demonoise.analysis.decision",
    "sensitivity": "demonoise.analysis.whatif",
    "scale_counts": "demonoise.analysis.whatif",
    "headline": "demonoise.analysis.whatif",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'demonoise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
