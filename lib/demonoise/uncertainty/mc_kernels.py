"""Compiled inner loops of the Monte Carlo (numba): alias sampling, Poisson alias tables,
and the replicate life tables and rates fused with the accumulation of moments.

Every array of replicate values is laid out ``(rows, columns, B)``: the ``B`` replicates of
a block are the innermost, contiguous axis, so that the life-table recurrence over ages
runs as a vectorisable loop over replicates, and an alias table is reused for the ``B``
draws of its cell while it is in cache. Rows are region x sex (or regions), columns the
*draw groups* of a table (sums of published cells, see
:mod:`demonoise.uncertainty.montecarlo`), the unknown-age cell last when the table has one.

numba (https://numba.pydata.org) compiles these functions once per machine: compiled code
is cached (``cache=True``) in the user cache, ``$NUMBA_CACHE_DIR`` if set, else
``$XDG_CACHE_HOME/demonoise/numba`` (default ``~/.cache/demonoise/numba``), not next to the
installed sources (which may be read-only). ``error_model="numpy"``: a division by zero
gives ``inf``/``nan`` as in numpy, which the Monte Carlo counts as invalid replicates.
"""

from __future__ import annotations

import os
from pathlib import Path


def _user_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "demonoise" / "numba")


os.environ.setdefault("NUMBA_CACHE_DIR", _user_cache_dir())

import numba  # noqa: E402
import numpy as np  # noqa: E402

if not numba.config.CACHE_DIR:  # numba imported earlier, without a cache directory
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]

__all__ = [
    "alias_in_place",
    "poisson_alias_tables",
    "poisson_in_place",
    "group_sums",
    "e_block",
    "ratio_block",
]

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)

#: A Poisson alias table stops where the pmf falls below this fraction of the pmf at the
#: mode; the mass left out is then below 1e-18, under the resolution (2^-53) of a uniform.
POISSON_TAIL = 1e-18


# --------------------------------------------------------------------------- sampling
#: ``Generator.random`` of PCG64: ``(next_uint64 >> 11) * 2^-53`` (numpy's ``next_double``).
_TO_UNIFORM = 1.0 / 9007199254740992.0


@_jit
def alias_in_place(raw, out, cls, offset, width, prob, value, alias_value):
    """Raw 64-bit draws ``raw`` (rows, columns, B) -> draws of the noise laws into ``out``
    (the same buffer viewed as float64 is allowed).

    ``u = (raw >> 11) 2^-53`` is exactly the uniform ``Generator.random`` makes of the same
    bits. Column ``c`` uses alias table ``cls[c]`` (entries ``offset[t] .. offset[t] +
    width[t]``); Walker's method with one uniform: ``j = floor(n u)``, and the fraction
    ``n u - j`` below ``prob[j]`` takes the column's own value, else its alias (as
    :meth:`demonoise.noise.models.GenericNoise.noise_from_uniform`)."""
    R, C, B = raw.shape
    for r in range(R):
        for c in range(C):
            t = cls[c]
            off = offset[t]
            n = width[t]
            for b in range(B):
                x = np.int64(raw[r, c, b] >> 11) * _TO_UNIFORM * n
                j = min(int(x), n - 1)
                f = x - j
                out[r, c, b] = value[off + j] if f < prob[off + j] else alias_value[off + j]


@_jit
def _poisson_bounds(lam):
    """Support ``lo..hi`` of the Poisson(lam) alias table (see :data:`POISSON_TAIL`)."""
    if lam <= 0.0:
        return 0, 0
    mode = int(np.floor(lam))
    p = 1.0
    hi = mode
    while p >= POISSON_TAIL:
        hi += 1
        p *= lam / hi
    p = 1.0
    lo = mode
    while lo > 0 and p >= POISSON_TAIL:
        p *= lo / lam
        lo -= 1
    return lo, hi


@_jit
def poisson_alias_tables(lam):
    """Alias tables of Poisson(lam) for every entry of ``lam`` (flat, float counts).

    The pmf is built by the recurrences ``p(k+1) = p(k) lam / (k+1)`` and
    ``p(k-1) = p(k) k / lam`` from the mode and normalised over the support, whose tails
    hold less than 1e-18 of the mass; Vose's construction (Vose 1991) then gives the
    table, so that one uniform draws the Poisson law to double precision.

    Returns
    -------
    offset, width, lo : int64 arrays like ``lam``
    prob : float64 (total,)
    alias : int32 (total,)
        Index within the table of the alias value (the value is ``lo + index``).
    """
    M = lam.size
    offset = np.empty(M, np.int64)
    width = np.empty(M, np.int64)
    lo = np.empty(M, np.int64)
    total = 0
    for i in range(M):
        a, b = _poisson_bounds(lam[i])
        lo[i] = a
        width[i] = b - a + 1
        offset[i] = total
        total += b - a + 1
    prob = np.empty(total, np.float64)
    alias = np.empty(total, np.int32)
    wmax = width.max() if M else 1
    small = np.empty(wmax, np.int64)
    large = np.empty(wmax, np.int64)
    for i in range(M):
        off, n, a, L = offset[i], width[i], lo[i], lam[i]
        p = prob[off : off + n]
        if n == 1:
            p[0] = 1.0
            alias[off] = 0
            continue
        mode = int(np.floor(L)) - a
        p[mode] = 1.0
        for k in range(mode + 1, n):
            p[k] = p[k - 1] * L / (a + k)
        for k in range(mode - 1, -1, -1):
            p[k] = p[k + 1] * (a + k + 1) / L
        s = p.sum()
        ns, nl = 0, 0
        for k in range(n):
            p[k] = p[k] / s * n
            if p[k] < 1.0:
                small[ns] = k
                ns += 1
            else:
                large[nl] = k
                nl += 1
            alias[off + k] = k
        while ns > 0 and nl > 0:
            ns -= 1
            s_ = small[ns]
            nl -= 1
            l_ = large[nl]
            alias[off + s_] = l_
            p[l_] = p[l_] + p[s_] - 1.0
            if p[l_] < 1.0:
                small[ns] = l_
                ns += 1
            else:
                large[nl] = l_
                nl += 1
        while nl > 0:
            nl -= 1
            p[large[nl]] = 1.0
        while ns > 0:  # rounding leftovers
            ns -= 1
            p[small[ns]] = 1.0
    return offset, width, lo, prob, alias


@_jit
def poisson_in_place(raw, out, table, offset, width, lo, prob, alias):
    """Raw 64-bit draws (rows, columns, B) -> Poisson draws into ``out`` (the same buffer
    viewed as float64 is allowed); entry ``(r, c)`` uses table ``table[r, c]`` of
    :func:`poisson_alias_tables`, one uniform per draw as in :func:`alias_in_place`."""
    R, C, B = raw.shape
    for r in range(R):
        for c in range(C):
            t = table[r, c]
            off = offset[t]
            n = width[t]
            base = lo[t]
            for b in range(B):
                x = np.int64(raw[r, c, b] >> 11) * _TO_UNIFORM * n
                j = min(int(x), n - 1)
                f = x - j
                k = j if f < prob[off + j] else alias[off + j]
                out[r, c, b] = base + k


@_jit
def group_sums(cells, group, n_groups, out):
    """``out[r, g, b] = sum of cells[r, a, b] over the cells a of group g`` (``group[a] < 0``: unused)."""
    R, A, B = cells.shape
    out[:] = 0.0
    for r in range(R):
        for a in range(A):
            g = group[a]
            if g < 0:
                continue
            for b in range(B):
                out[r, g, b] += cells[r, a, b]


# --------------------------------------------------------------------------- spreading
@_jit
def _spread_into(base, extra, use_extra, r, ng, has_unk, gmap, gsize, n_known, weight, out, S, fac):
    """``out[gmap[g], b] += weight * spread(base[r] + extra[r])[g, b]`` (cleared by the caller).

    ``base`` is (rows, columns, B) or (rows, columns, 1) (the same for every replicate);
    ``extra`` (rows, columns, B) is added when ``use_extra``. Proportional spread of the
    unknown-age column (last, when ``has_unk``) over the ``ng`` known draw groups: every
    known cell is multiplied by ``1 + u / S`` (``S`` the known total), so the spread of a
    group is its sum times that factor; uniform spread (``u`` times the group's share of
    the known cells) where ``S <= 0`` (:func:`demonoise.core.counts.spread_unknown`)."""
    bb = base.shape[2] > 1
    all_pos = True
    if has_unk:
        _known_totals(base, extra, use_extra, r, ng, bb, S)
        all_pos = _unknown_factors(base, extra, use_extra, r, ng, bb, weight, S, fac)
    else:
        fac[:] = weight
    _add_groups(base, extra, use_extra, r, ng, bb, gmap, out, fac)
    if not all_pos:
        _add_uniform(ng, gmap, gsize, n_known, weight, out, S)


@_jit
def _known_totals(base, extra, use_extra, r, ng, bb, S):
    """``S[b]``: the known total of row ``r`` in replicate ``b`` (``base`` + ``extra``)."""
    B = S.shape[0]
    S[:] = 0.0
    for g in range(ng):
        if bb:
            for b in range(B):
                S[b] += base[r, g, b]
        else:
            v0 = base[r, g, 0]
            for b in range(B):
                S[b] += v0
        if use_extra:
            for b in range(B):
                S[b] += extra[r, g, b]


@_jit
def _unknown_factors(base, extra, use_extra, r, ng, bb, weight, S, fac):
    """``fac[b] = weight (1 + u / S[b])`` where the known total is positive (``S[b]`` then
    cleared); else ``fac[b] = weight`` and ``S[b] = u``, spread uniformly by
    :func:`_add_uniform`. Returns whether every known total was positive."""
    all_pos = True
    for b in range(S.shape[0]):
        u = base[r, ng, b if bb else 0]
        if use_extra:
            u += extra[r, ng, b]
        if S[b] > 0:
            fac[b] = weight * (1.0 + u / S[b])
            S[b] = 0.0
        else:
            fac[b] = weight
            S[b] = u
            all_pos = False
    return all_pos


@_jit
def _add_groups(base, extra, use_extra, r, ng, bb, gmap, out, fac):
    """``out[gmap[g], b] += (base + extra)[r, g, b] * fac[b]`` over the known groups."""
    B = out.shape[1]
    for g in range(ng):
        x = gmap[g]
        if x < 0:
            continue
        if bb:
            for b in range(B):
                out[x, b] += base[r, g, b] * fac[b]
        else:
            v0 = base[r, g, 0]
            for b in range(B):
                out[x, b] += v0 * fac[b]
        if use_extra:
            for b in range(B):
                out[x, b] += extra[r, g, b] * fac[b]


@_jit
def _add_uniform(ng, gmap, gsize, n_known, weight, out, S):
    """The uniform spread of ``S[b]`` (the unknown cell where the known total is not
    positive): each group gets its share of the known cells."""
    B = out.shape[1]
    for g in range(ng):
        x = gmap[g]
        if x < 0:
            continue
        share = weight * gsize[g] / n_known
        for b in range(B):
            out[x, b] += S[b] * share


@_jit
def _accumulate(vals, ref, row, n_out, s1_out, s2_out, store, keep, b0):
    """Moments of ``vals`` (K, B) about ``ref[row]``; finite values only; stored in
    ``store[b0 + b, row]`` if ``keep`` (non-finite ones as nan)."""
    K, B = vals.shape
    for k in range(K):
        n = 0
        s1 = 0.0
        s2 = 0.0
        rk = ref[row, k]
        for b in range(B):
            v = vals[k, b]
            if np.isfinite(v):
                d = v - rk
                n += 1
                s1 += d
                s2 += d * d
                if keep:
                    store[b0 + b, row, k] = v
            elif keep:
                store[b0 + b, row, k] = np.nan
        n_out[row, k] += n
        s1_out[row, k] += s1
        s2_out[row, k] += s2


# --------------------------------------------------------------------------- life table
@_jit
def _life_e(D, E, nw, nb, na, kpos, out, lx, L):  # lx: survivors l_x
    """``e_k`` (K, B) from deaths ``D`` and exposure ``E`` (X, B) on the life-table groups.

    Eurostat's table as :func:`demonoise.demography.lifetable.e_only`: ``m = D / E``
    (``m = 0`` where ``D = E = 0``), ``t = 1 + n b m``, ``L_x = n l_x / t``,
    ``l_{x+n} = l_x (1 - n a m) / t``, ``L_w = l_w / m_w``, ``e_k = sum_{y >= k} L_y / l_k``;
    ``kpos[x]`` is the output row of interval ``x`` (``-1``: not reported)."""
    X, B = D.shape
    for b in range(B):
        lx[0, b] = 1.0
    for x in range(X - 1):
        for b in range(B):
            d = D[x, b]
            e = E[x, b]
            m = 0.0 if (d == 0.0 and e == 0.0) else d / e
            it = 1.0 / (1.0 + nb[x] * m)
            li = lx[x, b] * it
            L[x, b] = li * nw[x]
            lx[x + 1, b] = li * (1.0 - na[x] * m)
    w = X - 1
    for b in range(B):
        d = D[w, b]
        e = E[w, b]
        m = 0.0 if (d == 0.0 and e == 0.0) else d / e
        L[w, b] = lx[w, b] / m
    for x in range(X - 2, -1, -1):  # reversed cumulative sum in place: L becomes T
        for b in range(B):
            L[x, b] += L[x + 1, b]
    for x in range(X):
        k = kpos[x]
        if k < 0:
            continue
        for b in range(B):
            out[k, b] = L[x, b] / lx[x, b]


@_jit
def _exposure(p0, p0_eps, p1, p1_eps, noisy, r, ng, has_unk, gmap, gsize, n_known, E, S, fac):
    """Exposure ``(spread(P(t)) + spread(P(t+1))) / 2`` of row ``r`` on the groups of ``gmap``."""
    E[:] = 0.0
    _spread_into(p0, p0_eps, noisy, r, ng, has_unk, gmap, gsize, n_known, 0.5, E, S, fac)
    _spread_into(p1, p1_eps, noisy, r, ng, has_unk, gmap, gsize, n_known, 0.5, E, S, fac)


@_jit
def _fill_rows(e_orig, r, E):
    """``E[x, b] = e_orig[r, x]`` for every replicate (the exposure without noise)."""
    X, B = E.shape
    for x in range(X):
        v = e_orig[r, x]
        for b in range(B):
            E[x, b] = v


@_jit
def e_block(
    comps, d_orig, d_pois, d_eps_noise, d_eps_total, d_noised, d_ng, d_unk, d_map, d_size, d_known,
    p0_orig, p0_eps, p1_orig, p1_eps, p_noised, p_ng, p_unk, p_map, p_size, p_known, e_orig,
    nw, nb, na, kpos, ref, n_out, s1_out, s2_out, store, keep, b0, B,
):  # fmt: skip
    """Life expectancies of one block of ``B`` replicates, every component, moments accumulated.

    Per row (region x sex) and component ``c`` (``comps[c]``: 0 noise, 1 Poisson, 2 total)
    the deaths of the draw groups are ``orig + eps_noise`` (noise), ``pois`` (Poisson) or
    ``pois + eps_total`` (total) -- the noise only when ``d_noised``; each stock is
    ``orig + eps`` for noise and total (when ``p_noised``) and ``orig`` for Poisson.
    Unknown ages are spread, the draw groups summed into the life-table groups
    (``*_map``), the exposure averaged, the table run.

    ``*_orig`` are (rows, columns, 1), ``e_orig`` (rows, X) the exposure without noise;
    ``n_out, s1_out, s2_out`` are (3, rows, K) and
    ``store`` (3, N, rows, K). Arrays a component does not need may be (1, 1, 1).
    """
    R = d_orig.shape[0]
    X = nw.size + 1
    K = ref.shape[1]
    D = np.empty((X, B))
    E = np.empty((X, B))
    E0 = np.empty((X, B))
    lx = np.empty((X, B))
    L = np.empty((X, B))
    out = np.empty((K, B))
    S = np.empty(B)
    fac = np.empty(B)
    for r in range(R):
        if comps[0] or comps[2]:
            _exposure(p0_orig, p0_eps, p1_orig, p1_eps, p_noised, r, p_ng, p_unk, p_map, p_size, p_known, E, S, fac)
        if comps[1]:
            _fill_rows(e_orig, r, E0)
        for c in range(3):
            if not comps[c]:
                continue
            D[:] = 0.0
            if c == 0:
                _spread_into(d_orig, d_eps_noise, d_noised, r, d_ng, d_unk, d_map, d_size, d_known, 1.0, D, S, fac)
            else:
                _spread_into(
                    d_pois, d_eps_total, d_noised and c == 2, r, d_ng, d_unk, d_map, d_size, d_known, 1.0, D, S, fac
                )
            _life_e(D, E0 if c == 1 else E, nw, nb, na, kpos, out, lx, L)
            _accumulate(out, ref, r, n_out[c], s1_out[c], s2_out[c], store[c], keep, b0)


@_jit
def ratio_block(
    comps, n_orig, n_pois, n_eps_noise, n_eps_total, n_noised, n_ng, n_unk, n_map, n_size, n_known,
    p0_orig, p0_eps, p1_orig, p1_eps, p_noised, p_row, p_ng, p_unk, p_map, p_size, p_known, e_orig,
    G, width, rates, total, ref_r, n_r, s1_r, s2_r, store_r, keep_r, ref_t, n_t, s1_t, s2_t, store_t, keep_t, b0, B,
):  # fmt: skip
    """Rates ``events / exposure`` on ``G`` groups (ASMR: deaths per known age; ASFR:
    births per fertility group) and, with ``total``, their ``width``-weighted sum (TFR),
    for one block of ``B`` replicates, every component, moments accumulated.

    Row ``r`` of the events (``n_*``) takes its exposure from row ``p_row[r]`` of the
    stocks (the women of the region for fertility). Components as in :func:`e_block`.
    Outputs ``*_r`` for the rates (``rates``), ``*_t`` for the sum (``total``).
    """
    R = n_orig.shape[0]
    num = np.empty((G, B))
    E = np.empty((G, B))
    E0 = np.empty((G, B))
    out = np.empty((G, B))
    tot = np.empty((1, B))
    S = np.empty(B)
    fac = np.empty(B)
    for r in range(R):
        pr = p_row[r]
        if comps[0] or comps[2]:
            _exposure(p0_orig, p0_eps, p1_orig, p1_eps, p_noised, pr, p_ng, p_unk, p_map, p_size, p_known, E, S, fac)
        if comps[1]:
            _fill_rows(e_orig, r, E0)
        for c in range(3):
            if not comps[c]:
                continue
            num[:] = 0.0
            if c == 0:
                _spread_into(n_orig, n_eps_noise, n_noised, r, n_ng, n_unk, n_map, n_size, n_known, 1.0, num, S, fac)
            else:
                _spread_into(
                    n_pois, n_eps_total, n_noised and c == 2, r, n_ng, n_unk, n_map, n_size, n_known, 1.0, num, S, fac
                )
            Ec = E0 if c == 1 else E
            tot[:] = 0.0
            for g in range(G):
                for b in range(B):
                    f = num[g, b] / Ec[g, b]
                    out[g, b] = f
                    tot[0, b] += width[g] * f
            if rates:
                _accumulate(out, ref_r, r, n_r[c], s1_r[c], s2_r[c], store_r[c], keep_r, b0)
            if total:
                _accumulate(tot, ref_t, r, n_t[c], s1_t[c], s2_t[c], store_t[c], keep_t, b0)
