"""Cell keys: record keys summed into cell keys, and a table perturbed through a p-table.

The Cell Key Method (ABS; Fraser & Wooton [1]_) gives every record a uniform random key;
a cell's key is the fractional part of the sum of its records' keys, so the same set of
records always gets the same key and therefore the same noise. The noise itself is looked
up in a perturbation table (:class:`demonoise.noise.ptable.PTable`).

References
----------
.. [1] Fraser, B., Wooton, J. (2005). A proposed method for confidentialising tabular
   output to protect against differencing. Joint UNECE/Eurostat work session on
   statistical data confidentiality, Geneva.
"""

from __future__ import annotations

import numpy as np

from demonoise.core.errors import DataError, ParameterError
from demonoise.noise.ptable import PTable

__all__ = ["cell_keys", "perturb_table"]


def cell_keys(record_keys, cell_index, n_cells: int, *, modulus: int | None = None) -> np.ndarray:
    """Cell keys from record keys: the fractional part of the sum of the cell's record keys.

    .. math::  k_c = \\Big(\\sum_{r \\in c} k_r\\Big) \\bmod 1
       \\qquad\\text{or, for integer keys,}\\qquad
       k_c = \\frac{1}{K}\\Big(\\sum_{r \\in c} k_r \\bmod K\\Big)

    (ABS / Fraser & Wooton [1]_; Eurostat census). The same set of records always
    gives the same cell key, hence the same noise. Integer record keys are summed
    exactly and so are independent of record order; float keys can differ in the last
    bits when records come in another order (a key exactly on a p-table interval
    boundary could then switch), so integer keys are preferred for production.

    Parameters
    ----------
    record_keys : array_like, shape (n_records,)
        Floats in ``[0, 1)``, or integers in ``0..K-1`` with ``modulus=K``.
    cell_index : array_like of int, shape (n_records,)
        Cell of each record, in ``0..n_cells-1``.
    n_cells : int
        Number of cells.
    modulus : int, optional
        ``K`` for integer record keys.

    Returns
    -------
    ndarray of float64, shape (n_cells,)
        Cell keys in ``[0, 1)`` (0 for empty cells, which are not perturbed).
    """
    keys = np.asarray(record_keys)
    idx = np.asarray(cell_index)
    if keys.shape != idx.shape or keys.ndim != 1:
        raise DataError("record_keys and cell_index must be 1-D arrays of the same length")
    if idx.dtype.kind not in "iu":
        raise DataError(f"cell_index must hold integers, got dtype {idx.dtype}")
    n_cells = int(n_cells)
    if idx.size and (idx.min() < 0 or idx.max() >= n_cells):
        raise DataError(f"cell_index must lie in 0..{n_cells - 1}")
    if modulus is None:
        if keys.dtype.kind != "f":
            raise ParameterError("integer record keys need modulus=K")
        if np.any(~np.isfinite(keys)) or np.any(keys < 0) or np.any(keys >= 1):
            raise DataError("float record keys must lie in [0, 1)")
        s = np.bincount(idx, weights=keys, minlength=n_cells)
        out = s - np.floor(s)
        return np.where(out >= 1.0, 0.0, out)
    K = int(modulus)
    if K < 1 or K != modulus:
        raise ParameterError(f"modulus must be a positive integer, got {modulus!r}")
    if keys.dtype.kind not in "iu":
        raise DataError("record keys must be integers when a modulus is given")
    s = np.zeros(n_cells, dtype=np.int64)
    np.add.at(s, idx, keys.astype(np.int64) % K)
    return (s % K) / K


def perturb_table(counts, cell_keys, ptable: PTable) -> np.ndarray:
    """Perturbed counts ``n + v`` with ``v = ptable.lookup(n, key)`` (see :meth:`PTable.lookup`).

    Each cell is perturbed from its own original count and cell key, so the same cell
    always gets the same noise, and a margin (perturbed from its own count and key)
    is in general not the sum of its perturbed inner cells.
    """
    noise = ptable.lookup(counts, cell_keys)  # validates the counts
    return np.asarray(counts).astype(np.int64) + noise
