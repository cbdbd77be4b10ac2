"""Layer 1, the data model: labelled count arrays (:mod:`~demonoise.core.counts`), the
publication layout (:mod:`~demonoise.core.layout`), typed errors
(:mod:`~demonoise.core.errors`), atomic writes (:mod:`~demonoise.core.atomic`) and the
project's vocabulary (:mod:`~demonoise.core.vocabulary`). Imports nothing else of demonoise. The
runtime (cluster, signals, memory, fingerprint) is :mod:`demonoise.runtime`, the layer above.
"""
