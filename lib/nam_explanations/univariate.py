"""Analysis of the univariate components ``h_i``: exact pieces, interval bounds, and bisection with a 1-D verifier.

* :func:`pwl_breakpoints` (backend ``exact_pwl``): a ReLU MLP of one input is piecewise linear; propagating the
  pieces layer by layer on ``[lo, hi]`` gives every breakpoint exactly (a first-layer neuron switches at
  ``-b/w``; a second-layer neuron's pre-activation is affine between first-layer breakpoints, so its zeros are
  found by linear interpolation). The minimum over an interval lies at a breakpoint inside it or at an end.
* :func:`ibp_bounds`: interval bound propagation of ``s · h_i`` over ``[a, b]`` (sound, loose).
* :func:`bisect_min` (backend ``bisect``, the paper's preprocessing as we reconstruct it): ``m_i`` is bracketed by
  bisection on a level ``c``, each step one query "is there ``z in [a, b]`` with ``s·h_i(z) <= c``?" to a 1-D
  branch-and-bound verifier on IBP bounds. All components (and all points) step together: the parallel
  preprocessing. Each query either finds a witness (the upper end drops to its value) or proves the level
  infeasible (the lower end rises to ``c``), so after ``⌈log₂(w₀/δ)⌉`` steps (``w₀`` the initial bracket) the
  bracket is narrower than ``δ``. Leaves narrower than ``δ / (4 L_i)`` (``L_i`` a Lipschitz bound) are closed with
  the Lipschitz bound, which keeps each query finite; the bracket then rises by at least ``c - δ/8``. A node on
  which every neuron is provably stable (IBP) is affine: its minimum is read off its ends, exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import NumpyNAM


def pwl_breakpoints(nam: NumpyNAM, i: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """Sorted points ``lo = t_0 < ... < t_K = hi`` between which ``h_i`` is affine (exact up to float rounding)."""
    w, b = nam.W1[i], nam.b1[i]
    nz = np.abs(w) > 1e-300
    r1 = -b[nz] / w[nz]
    t = np.unique(np.concatenate([[lo, hi], r1[(r1 > lo) & (r1 < hi)]]))
    h1 = np.maximum(t[:, None] * w + b, 0.0)
    p2 = h1 @ nam.W2[i] + nam.b2[i]  # [T, H2], affine between consecutive t
    p0, p1 = p2[:-1], p2[1:]
    cross = (p0 * p1) < 0
    if cross.any():
        k, j = np.nonzero(cross)
        frac = p0[k, j] / (p0[k, j] - p1[k, j])
        roots = t[k] + (t[k + 1] - t[k]) * frac
        t = np.unique(np.concatenate([t, roots]))
    return t


@dataclass
class Pieces:
    """Every component's breakpoints on ``[lo, hi]`` and the values there (the ``exact_pwl`` backend's table)."""

    points: list
    values: list

    @property
    def n_pieces(self) -> np.ndarray:
        return np.array([len(p) - 1 for p in self.points])


def all_pieces(nam: NumpyNAM, lo: float = 0.0, hi: float = 1.0) -> Pieces:
    pts = [pwl_breakpoints(nam, i, lo, hi) for i in range(nam.n_features)]
    vals = [nam.component_at(np.full(len(p), i), p) for i, p in enumerate(pts)]
    return Pieces(points=pts, values=vals)


def exact_extrema(nam: NumpyNAM, pieces: Pieces, A: np.ndarray, B: np.ndarray):
    """Exact ``min`` / ``max`` of every ``h_i`` over ``[A[p, i], B[p, i]]`` for ``P`` points: ``(mins, argmins,
    maxs, argmaxs)``, each ``[P, n]``."""
    A, B = np.atleast_2d(A), np.atleast_2d(B)
    P, n = A.shape
    mins, maxs = np.empty((P, n)), np.empty((P, n))
    amin, amax = np.empty((P, n)), np.empty((P, n))
    ends_a = nam.components(A)
    ends_b = nam.components(B)
    for i in range(n):
        t, v = pieces.points[i], pieces.values[i]
        inside = (t[None, :] > A[:, i:i + 1]) & (t[None, :] < B[:, i:i + 1])
        cand = np.concatenate([ends_a[:, i:i + 1], ends_b[:, i:i + 1], np.broadcast_to(v, (P, len(t)))], axis=1)
        locs = np.concatenate([A[:, i:i + 1], B[:, i:i + 1], np.broadcast_to(t, (P, len(t)))], axis=1)
        ok = np.concatenate([np.ones((P, 2), bool), inside], axis=1)
        lo_c = np.where(ok, cand, np.inf)
        hi_c = np.where(ok, cand, -np.inf)
        k1, k2 = lo_c.argmin(1), hi_c.argmax(1)
        rows = np.arange(P)
        mins[:, i], amin[:, i] = cand[rows, k1], locs[rows, k1]
        maxs[:, i], amax[:, i] = cand[rows, k2], locs[rows, k2]
    return mins, amin, maxs, amax


def ibp_bounds(nam: NumpyNAM, comp, a, b, sign=1.0, with_affine: bool = False):
    """Interval bounds ``(lo, hi)`` of ``sign · h_comp`` over ``[a, b]`` (arrays of one shape; sound, not tight).

    ``with_affine=True`` also returns a flag per interval: every neuron provably stable there (no first-layer
    switch inside, second-layer IBP bounds of one sign), so the component is affine on the interval and its
    extrema sit at the ends.
    """
    comp = np.asarray(comp)
    a, b = np.asarray(a, float), np.asarray(b, float)
    W1, b1 = nam.W1[comp], nam.b1[comp]
    pa, pb = a[..., None] * W1 + b1, b[..., None] * W1 + b1
    p_lo, p_hi = np.minimum(pa, pb), np.maximum(pa, pb)
    l1, u1 = np.maximum(p_lo, 0.0), np.maximum(p_hi, 0.0)
    W2 = nam.W2[comp]
    W2p, W2n = np.maximum(W2, 0.0), np.minimum(W2, 0.0)
    b2 = nam.b2[comp]
    q_lo = np.einsum("...h,...hk->...k", l1, W2p) + np.einsum("...h,...hk->...k", u1, W2n) + b2
    q_hi = np.einsum("...h,...hk->...k", u1, W2p) + np.einsum("...h,...hk->...k", l1, W2n) + b2
    l2, u2 = np.maximum(q_lo, 0.0), np.maximum(q_hi, 0.0)
    W3 = nam.W3[comp] * np.asarray(sign, float)[..., None]
    b3 = nam.b3[comp] * np.asarray(sign, float)
    W3p, W3n = np.maximum(W3, 0.0), np.minimum(W3, 0.0)
    lo = (l2 * W3p).sum(-1) + (u2 * W3n).sum(-1) + b3
    hi = (u2 * W3p).sum(-1) + (l2 * W3n).sum(-1) + b3
    if not with_affine:
        return lo, hi
    affine = (((p_lo >= 0) | (p_hi <= 0)).all(-1)) & (((q_lo >= 0) | (q_hi <= 0)).all(-1))
    return lo, hi, affine


def ibp_layer_bounds(nam: NumpyNAM, i: int, a: float, b: float):
    """Pre-activation bounds of both hidden layers of component ``i`` over ``[a, b]`` (for the MILP encoding)."""
    w, bb = nam.W1[i], nam.b1[i]
    pa, pb = a * w + bb, b * w + bb
    l1, u1 = np.minimum(pa, pb), np.maximum(pa, pb)
    r_l, r_u = np.maximum(l1, 0.0), np.maximum(u1, 0.0)
    W2 = nam.W2[i]
    W2p, W2n = np.maximum(W2, 0.0), np.minimum(W2, 0.0)
    l2 = r_l @ W2p + r_u @ W2n + nam.b2[i]
    u2 = r_u @ W2p + r_l @ W2n + nam.b2[i]
    return l1, u1, l2, u2


def exact_layer_bounds(nam: NumpyNAM, i: int, a: float, b: float):
    """Exact pre-activation ranges of both hidden layers of component ``i`` over ``[a, b]``: the first layer is
    affine in ``z``; the second is affine between first-layer switches, so its extremes sit at those or the ends
    (the bounds a verifier gets by splitting the one-dimensional input; tighter than IBP)."""
    w, bb = nam.W1[i], nam.b1[i]
    nz = np.abs(w) > 1e-300
    r = -bb[nz] / w[nz]
    t = np.concatenate([[a, b], r[(r > a) & (r < b)]])
    p1 = t[:, None] * w + bb
    p2 = np.maximum(p1, 0.0) @ nam.W2[i] + nam.b2[i]
    return p1.min(0), p1.max(0), p2.min(0), p2.max(0)


@dataclass
class BisectResult:
    m_lo: np.ndarray  # proven lower bound on min s·h over the interval
    m_hi: np.ndarray  # a value attained there (an upper bound on the min)
    steps: np.ndarray  # bisection steps = 1-D verifier queries per component
    width0: np.ndarray  # the initial bracket's width (IBP lower bound to the best of h(a), h(mid), h(b))
    nodes: int  # branch-and-bound nodes evaluated over all queries (the verifier's work)
    witness: np.ndarray  # where m_hi is attained


def bisect_min(nam: NumpyNAM, comp, a, b, sign=1.0, delta: float = 1e-4, max_steps: int = 200) -> BisectResult:
    """Bracket ``min_{z in [a, b]} sign·h_comp(z)`` to width ``<= delta`` by bisection with a 1-D verifier.

    ``comp``, ``a``, ``b``, ``sign``: flat arrays of ``Q`` queries (a component id and an interval each); all run in
    lock-step, one bisection step per round for every unfinished query.
    """
    comp = np.asarray(comp).ravel()
    a = np.asarray(a, float).ravel()
    b = np.asarray(b, float).ravel()
    s = np.broadcast_to(np.asarray(sign, float), comp.shape).ravel().copy()
    Q = comp.size
    F = lambda c, z, sg: sg * nam.component_at(c, z)  # noqa: E731
    lo, _ = ibp_bounds(nam, comp, a, b, s)
    cands = np.stack([a, 0.5 * (a + b), b])
    vals = np.stack([F(comp, z, s) for z in cands])
    k = vals.argmin(0)
    hi = vals[k, np.arange(Q)]
    wit = cands[k, np.arange(Q)]
    lo = np.minimum(lo, hi)
    width0 = hi - lo
    leaf = delta / (4.0 * np.maximum(nam.lipschitz()[comp], 1e-12))
    steps = np.zeros(Q, int)
    nodes_total = 0
    for _ in range(max_steps):
        act = np.flatnonzero(hi - lo > delta)
        if act.size == 0:
            break
        c = 0.5 * (lo[act] + hi[act])
        found, fval, fz, lb, n_nodes = _verify_level(nam, comp[act], a[act], b[act], s[act], c, leaf[act])
        nodes_total += n_nodes
        steps[act] += 1
        hi_new = np.where(found, fval, hi[act])
        wit[act] = np.where(found, fz, wit[act])
        lo[act] = np.where(found, lo[act], np.maximum(lo[act], np.minimum(c, lb)))
        hi[act] = hi_new
    return BisectResult(m_lo=lo, m_hi=hi, steps=steps, width0=width0, nodes=nodes_total, witness=wit)


def _verify_level(nam, comp, a, b, s, c, leaf, max_nodes: int = 200_000):
    """Batched 1-D verifier: for each query ``q``, is there ``z in [a_q, b_q]`` with ``s_q·h(z) <= c_q``?

    Returns ``found`` (a witness exists), its value and location, ``lb`` (for queries without a witness: a proven
    lower bound over the interval, ``>= c - δ/8`` when leaves were closed by the Lipschitz bound, else ``c``) and
    the number of nodes evaluated.
    """
    Q = comp.size
    found = np.zeros(Q, bool)
    fval = np.full(Q, np.inf)
    fz = np.zeros(Q)
    lb = c.copy()
    qid = np.arange(Q)
    na, nb = a.copy(), b.copy()
    lip = nam.lipschitz()
    evaluated = 0
    while qid.size:
        evaluated += qid.size
        mid = 0.5 * (na + nb)
        cq = comp[qid]
        fm = s[qid] * nam.component_at(cq, mid)
        hit = fm <= c[qid]
        if hit.any():
            # the smallest witness value per query among this round's hits
            order = np.argsort(fm[hit])
            hq, hv, hz = qid[hit][order], fm[hit][order], mid[hit][order]
            first = np.unique(hq, return_index=True)[1]
            new = hv[first] < fval[hq[first]]
            fval[hq[first][new]] = hv[first][new]
            fz[hq[first][new]] = hz[first][new]
            found[hq] = True
        keep = ~found[qid]
        qid, na, nb, mid, fm = qid[keep], na[keep], nb[keep], mid[keep], fm[keep]
        if not qid.size:
            break
        low, _, affine = ibp_bounds(nam, comp[qid], na, nb, s[qid], with_affine=True)
        low = np.maximum(low, fm - lip[comp[qid]] * 0.5 * (nb - na))
        if affine.any():  # affine on the node: the minimum is at an end, evaluated exactly
            ends = np.minimum(s[qid][affine] * nam.component_at(comp[qid][affine], na[affine]),
                              s[qid][affine] * nam.component_at(comp[qid][affine], nb[affine]))
            evaluated += 2 * int(affine.sum())
            hit_end = ends <= c[qid][affine]
            if hit_end.any():
                hq = qid[affine][hit_end]
                ev = ends[hit_end]
                ez = np.where(s[qid][affine][hit_end] * nam.component_at(comp[hq], na[affine][hit_end]) <= ev,
                              na[affine][hit_end], nb[affine][hit_end])
                better = ev < fval[hq]
                fval[hq[better]], fz[hq[better]] = ev[better], ez[better]
                found[hq] = True
            low = low.copy()
            low[affine] = ends
        keep = ~found[qid]
        qid, na, nb, mid, low = qid[keep], na[keep], nb[keep], mid[keep], low[keep]
        alive = low <= c[qid]
        is_leaf = alive & ((nb - na) <= leaf[qid])
        if is_leaf.any():
            np.minimum.at(lb, qid[is_leaf], low[is_leaf])
        split = alive & ~is_leaf
        qid, na, nb, mid = qid[split], na[split], nb[split], mid[split]
        qid = np.concatenate([qid, qid])
        na, nb = np.concatenate([na, mid]), np.concatenate([mid, nb])
        if evaluated > max_nodes:
            raise RuntimeError("1-D verifier: node budget exhausted (a Lipschitz bound of 0?)")
    return found, fval, fz, lb, evaluated
