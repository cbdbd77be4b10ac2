"""I/O layer: Eurostat formats in, tidy tables out; tidy tables -> :class:`~demonoise.counts.Counts`;
NUTS region metadata; the user CSV template.

Imports only the data model (:mod:`demonoise.counts`, :mod:`demonoise.errors`).

* :mod:`demonoise.io.eurostat` -- :func:`read_eurostat` (TSV, SDMX-CSV, JSON-stat, long CSV)
* :mod:`demonoise.io.tidy` -- :func:`counts_from_eurostat`
* :mod:`demonoise.io.nuts` -- :func:`nuts_region`, :func:`nuts_codes`
* :mod:`demonoise.io.template` -- :func:`read_counts_csv`, :func:`write_counts_csv`
* :mod:`demonoise.io.datasets` -- the dataset registry (``available``, ``load``) of the
  embedded datasets ``be-2023`` and ``ess-2023``
* :mod:`demonoise.io.build_datasets` -- the *build tool* of the embedded datasets (imports
  computation modules; never imported at run time)
"""

from .eurostat import read_eurostat
from .nuts import nuts_codes, nuts_region
from .template import read_counts_csv, write_counts_csv
from .tidy import counts_from_eurostat

__all__ = ["read_eurostat", "counts_from_eurostat", "nuts_region", "nuts_codes", "read_counts_csv", "write_counts_csv"]
