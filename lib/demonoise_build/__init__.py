"""The build tool of demonoise's embedded datasets (``be-2023``, ``ess-2023``).

Not part of the runtime: nothing in :mod:`demonoise` imports it (an import-linter contract
keeps it so). It holds the graduation of 5-year population groups to single ages
(:mod:`~demonoise_build.graduation`), the relational mortality model
(:mod:`~demonoise_build.mortality_model`) and the build itself (:mod:`~demonoise_build.build`):

    python -m demonoise_build [--check]
"""
