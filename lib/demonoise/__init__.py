"""demonoise: how much noise-based disclosure control degrades demographic indicators.

Layers, lowest first (each imports only those below it):

1. data model   -- :mod:`demonoise.counts` (labelled count arrays), :mod:`demonoise.errors`
2. I/O          -- :mod:`demonoise.io` (Eurostat formats, user CSV template, embedded datasets)
3. computation  -- life table, indicators, noise models, propagation, Monte Carlo
4. presentation -- :mod:`demonoise.report`, :mod:`demonoise.cli`
"""

__version__ = "0.1.0"
