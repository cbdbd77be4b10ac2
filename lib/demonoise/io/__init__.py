"""I/O layer: Eurostat formats in, tidy tables out; tidy tables -> :class:`~demonoise.core.counts.Counts`;
NUTS region metadata; the user CSV template.

Layer 2. Imports only the data model (:mod:`demonoise.core`).

* :mod:`demonoise.io.eurostat` -- :func:`read_eurostat` (TSV, SDMX-CSV, JSON-stat, long CSV)
* :mod:`demonoise.io.tidy` -- :func:`counts_from_eurostat`
* :mod:`demonoise.io.nuts` -- :func:`nuts_region`, :func:`nuts_codes`
* :mod:`demonoise.io.template` -- :func:`read_counts_csv`, :func:`write_counts_csv`
* :mod:`demonoise.io.datasets` -- the dataset registry (``available``, ``load``) of the
  embedded datasets ``be-2023`` and ``ess-2023``, the fetched ones and the user's; every
  function takes ``NAME|FILE``
* :mod:`demonoise.io.userdata` -- a user's counts file read with its provenance, or registered
  by name (packed in the user cache: ``demonoise datasets add NAME FILE``)
* :mod:`demonoise.io.ptable_files` -- p-table files (Eurostat's census format, R ptable's layout)
* :mod:`demonoise.io.fetch` -- ``fetch_counts``: real Eurostat counts for a year, in named steps over
  :mod:`~demonoise.io.options` (``FetchOptions``), :mod:`~demonoise.io.http` (the client),
  :mod:`~demonoise.io.cache` (entries and manifests), :mod:`~demonoise.io.eurostat_api` (queries,
  one table, reading it back) and :mod:`~demonoise.io.assemble` (tidy tables -> ``eurostat-<t>``)

The embedded datasets are built by the separate tool :mod:`demonoise_build`.
"""

from demonoise.io.eurostat import read_eurostat
from demonoise.io.nuts import nuts_codes, nuts_region
from demonoise.io.template import read_counts_csv, write_counts_csv
from demonoise.io.tidy import counts_from_eurostat

__all__ = ["read_eurostat", "counts_from_eurostat", "nuts_region", "nuts_codes", "read_counts_csv", "write_counts_csv"]
