"""Where and how a run executes: the Dask cluster its work fans out to
(:mod:`.cluster`), how signals end it (:mod:`.signals`), the memory it may use
(:mod:`.resources`), the fingerprint that tells two installations apart
(:mod:`.fingerprint`) and where the notebooks, templates and params files are found
(:mod:`.locate`).

None of it is the data model (:mod:`demonoise.core`): it is the process's runtime. It sits
just above ``core`` in the layers (``pyproject.toml``, ``[tool.importlinter]``), below
``uncertainty``, whose Monte Carlo fans its blocks out on a cluster by default (a local one
when the caller gives none), so that the numerical layers can use it without the caller
having to inject a cluster.
"""
