"""Layer 4b, uncertainty: first-order propagation of noise and Poisson variance
(:mod:`~demonoise.uncertainty.propagation`), the Monte Carlo check
(:mod:`~demonoise.uncertainty.montecarlo`), calibration of the largest acceptable ``V``
(:mod:`~demonoise.uncertainty.calibration`) and the generic model against a p-table
(:mod:`~demonoise.uncertainty.comparison`). numpy and pandas; no I/O, no plotting.
"""
