"""Layer 3, demography: the period life table with its closed-form derivatives
(:mod:`~demonoise.demography.lifetable`) and the indicators -- ASFR, TFR, ASMR, e_x -- with
their exact gradients with respect to every published cell
(:mod:`~demonoise.demography.indicators`). numpy only: no I/O, no noise, no plotting.
"""
