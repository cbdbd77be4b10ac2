"""Layer 4a, noise models: the generic model (integer noise of variance exactly ``V``), the
Poisson baseline (:mod:`~demonoise.noise.models`), perturbation tables and their
construction (:mod:`~demonoise.noise.ptable`) and cell keys (:mod:`~demonoise.noise.cellkey`).
Works on :class:`~demonoise.noise.ptable.PTable` objects; reading p-table files and
resolving names belong to :mod:`demonoise.io.ptable_files` and :mod:`demonoise.analysis.ptables`.
"""

from demonoise.noise.models import GenericNoise, NoiseModel, PoissonNoise, PTableNoise
from demonoise.noise.ptable import PTable, build_ptable

__all__ = ["NoiseModel", "GenericNoise", "PoissonNoise", "PTableNoise", "PTable", "build_ptable"]
