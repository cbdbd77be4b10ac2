"""Layer 5, the application: what the command line and the notebooks call. One analysis
from dataset to results table (:mod:`~demonoise.analysis.compute`,
:mod:`~demonoise.analysis.results`), p-tables by name or file
(:mod:`~demonoise.analysis.ptables`), the decision view of a country report -- decision
table, largest acceptable V, recommended V, error bands, generic against p-table, cell
counts, main points (:mod:`~demonoise.analysis.decision`) --, what-if scenarios
(:mod:`~demonoise.analysis.whatif`) and the teaching steps (:mod:`~demonoise.analysis.teaching`).
"""
