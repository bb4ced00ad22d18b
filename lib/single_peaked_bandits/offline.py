"""The offline budgeted matching problem: SP-Matching (the paper's dynamic programme) and brute force.

Problem: choose a set ``S`` of arms with ``sum_{k in S} c_k <= B`` maximising ``V(S) = sum_u max_{k in S} P[u, k]``
(every user then takes its best arm in ``S``). With arms in an SP order ``1..K`` and a fictitious arm ``0``
(``P[:, 0] = 0``, ``c_0 = 0``)::

    G(i, j) = sum_{u : i < p_u <= j} max(P[u, i], P[u, j])            0 <= i < j <= K   (peaks p_u 1-based)
    F(0, b) = 0;   F(k, b) = max_{0 <= i < k} F(i, b - c_k) + G(i, k)     (b >= c_k, else -inf)
    V* = max_k F(k, B) + sum_{u : p_u > k} P[u, k]

Under SP a user's best selected arm is one of the two selected arms that bracket its peak, which is why ``G`` only
compares ``i`` and ``j``. Everything here is batched: ``M`` may carry leading batch dimensions (runs of a bandit).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass
class PeakPlan:
    """Users sorted by (1-based) peak, and for every arm pair ``i < j`` its block of users with ``i < p_u <= j``.

    With users sorted by peak, the users that ``G(i, j)`` sums over are one contiguous block of the sorted list,
    ``counts[i] .. counts[j] - 1`` where ``counts[k] = #{u : p_u <= k}``. The plan lists the blocks of all pairs
    (and of every batch entry, each with its own peaks) back to back, one entry per (pair, user) term, about
    ``U K^2 / 6`` per batch entry, so ``G`` is one gather and one segmented sum for the whole batch. The gather reads
    an arm-major ``(N, K + 1, U)`` array; when the users are stored sorted by peak (as the bandits store them) each
    block is a contiguous stretch of memory.
    Pairs are listed column by column, ``(0, j), (1, j), ..., (j - 1, j)`` for ``j = 1..K``, so the DP's column
    ``G(., k)`` is the contiguous slice ``off_k = k (k - 1) / 2 .. off_k + k``.
    """

    K: int
    batch: tuple  # batch shape of the peaks (and of the matrices the plan serves)
    peaks1: np.ndarray  # (..., U) 1-based peaks
    pair_i: np.ndarray  # (Q,) the pairs i < j of 0..K, column by column
    pair_j: np.ndarray
    seg_starts: np.ndarray  # starts of the non-empty (batch entry, pair) blocks in the term arrays
    seg_index: np.ndarray  # their flat (batch entry, pair) index
    flat_i: np.ndarray  # (E,) flat index of M[n, i, u] in the arm-major (N, K + 1, U) batch, per term
    flat_j: np.ndarray  # (E,) flat index of M[n, j, u]


def peak_plan(peaks: np.ndarray, K: int) -> PeakPlan:
    """Precompute the sort of users by peak (0-based ``peaks``, shape ``(..., U)``) for :func:`g_pairs`."""
    peaks1 = np.asarray(peaks, dtype=np.int64) + 1
    if peaks1.ndim == 0:
        raise ValueError("peaks must have one entry per user")
    if peaks1.size and (peaks1.min() < 1 or peaks1.max() > K):
        raise ValueError(f"peaks must lie in 0..{K - 1}")
    batch = peaks1.shape[:-1]
    U = peaks1.shape[-1]
    p = peaks1.reshape(-1, U)
    N, K1 = p.shape[0], K + 1
    order = np.argsort(p, axis=1, kind="stable")
    counts = np.cumsum((p[:, :, None] == np.arange(K1)).sum(axis=1), axis=1)  # counts[n, k] = #{u: p <= k}
    pj, pi = np.tril_indices(K1, k=-1)  # (j, i) row-major with i < j: G column by column
    Q = len(pi)
    lengths = (counts[:, pj] - counts[:, pi]).reshape(-1)  # (N * Q,)
    starts = np.cumsum(lengths) - lengths
    total = int(lengths.sum())
    rep = np.repeat(np.arange(N * Q), lengths)
    n_idx, q = np.divmod(rep, Q)
    pos = counts[n_idx, pi[q]] + (np.arange(total) - starts[rep])
    users = order[n_idx, pos]
    nonempty = lengths > 0
    return PeakPlan(K=K, batch=batch, peaks1=peaks1, pair_i=pi, pair_j=pj, seg_starts=starts[nonempty],
                    seg_index=np.flatnonzero(nonempty), flat_i=(n_idx * K1 + pi[q]) * U + users,
                    flat_j=(n_idx * K1 + pj[q]) * U + users)


def extend(M: np.ndarray) -> np.ndarray:
    """Prepend the fictitious arm 0 (value 0) as column 0 of a user-major ``(..., U, K)`` matrix."""
    pad = np.zeros(M.shape[:-1] + (1,), dtype=M.dtype)
    return np.concatenate([pad, M], axis=-1)


def _extend_am(Mt: np.ndarray) -> np.ndarray:
    """Prepend the fictitious arm 0 as row 0 of an arm-major ``(..., K, U)`` matrix."""
    pad = np.zeros(Mt.shape[:-2] + (1, Mt.shape[-1]), dtype=Mt.dtype)
    return np.concatenate([pad, Mt], axis=-2)


def _g_pairs_am(Mt_ext: np.ndarray, plan: PeakPlan) -> np.ndarray:
    batch = Mt_ext.shape[:-2]
    if tuple(batch) != tuple(plan.batch) or Mt_ext.shape[-2] != plan.K + 1:
        raise ValueError(f"matrix batch {tuple(batch)} with {Mt_ext.shape[-2] - 1} arms does not match the plan's "
                         f"{tuple(plan.batch)} with {plan.K} arms")
    flat = np.ascontiguousarray(Mt_ext).reshape(-1)
    Q = len(plan.pair_i)
    Gq = np.zeros(int(np.prod(batch, dtype=np.int64)) * Q, dtype=Mt_ext.dtype)
    if len(plan.flat_i):
        W = np.maximum(flat[plan.flat_i], flat[plan.flat_j])
        Gq[plan.seg_index] = np.add.reduceat(W, plan.seg_starts)
    return Gq.reshape(batch + (Q,))


def g_pairs(Mext: np.ndarray, plan: PeakPlan) -> np.ndarray:
    """``G(i, j)`` for the plan's pairs (column by column), vectorised over users sorted by peak: ``(..., Q)``.

    One gather of ``max(M[u, i], M[u, j])`` over every (pair, user) term, then a segmented sum per pair.
    ``Mext``: user-major ``(..., U, K + 1)`` with the fictitious arm in column 0 and the plan's batch shape.
    """
    return _g_pairs_am(np.swapaxes(Mext, -1, -2), plan)


def g_matrix(Mext: np.ndarray, plan: PeakPlan) -> np.ndarray:
    """``G(i, j)`` as a ``(..., K + 1, K + 1)`` matrix (zero for ``i >= j``)."""
    K1 = Mext.shape[-1]
    G = np.zeros(Mext.shape[:-2] + (K1, K1), dtype=Mext.dtype)
    G[..., plan.pair_i, plan.pair_j] = g_pairs(Mext, plan)
    return G


def g_matrix_loop(P: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """Reference ``G`` by the definition's double loop over arm pairs (and users); for tests."""
    U, K = P.shape
    Pe = extend(P)
    p1 = np.asarray(peaks) + 1
    G = np.zeros((K + 1, K + 1))
    for i in range(K + 1):
        for j in range(i + 1, K + 1):
            G[i, j] = sum(max(Pe[u, i], Pe[u, j]) for u in range(U) if i < p1[u] <= j)
    return G


def sp_matching_batch(M: np.ndarray, costs: np.ndarray, budget: int, plan: PeakPlan, arm_major: bool = False):
    """SP-Matching on a batch of SP matrices that share ``costs`` (arms in SP order).

    ``M``: ``(..., U, K)``, or ``(..., K, U)`` with ``arm_major=True`` (the bandits' layout). ``plan`` holds each
    row's peak (a column where the row attains its maximum). Returns ``(selected, value)``: a boolean ``(..., K)``
    mask of the chosen arms and the DP value ``V*`` under ``M``.
    """
    Mt = np.asarray(M) if arm_major else np.swapaxes(np.asarray(M, dtype=float), -1, -2)
    if Mt.dtype not in (np.float32, np.float64):
        Mt = Mt.astype(float)
    batch = Mt.shape[:-2]
    K = Mt.shape[-2]
    costs = np.asarray(costs, dtype=np.int64)
    B = int(budget)
    Me = _extend_am(Mt)
    Gq = _g_pairs_am(Me, plan).astype(np.float64)
    # tail[k] = sum_{u : p_u > k} M[u, k]: users right of the last selected arm k take it
    right = plan.peaks1[..., None, :] > np.arange(K + 1)[:, None]  # (..., K + 1, U)
    tail = np.where(right, Me, 0.0).sum(axis=-1, dtype=np.float64)
    F = np.full(batch + (K + 1, B + 1), -np.inf)
    F[..., 0, :] = 0.0
    for k in range(1, K + 1):
        c = int(costs[k - 1])
        if c > B:
            continue
        off = k * (k - 1) // 2
        F[..., k, c:] = (F[..., :k, : B + 1 - c] + Gq[..., off:off + k, None]).max(axis=-2)
    final = F[..., 1:, B] + tail[..., 1:]
    best = final.argmax(axis=-1)
    value = np.take_along_axis(final, best[..., None], axis=-1)[..., 0]
    # backtrack: at (k, b) the predecessor is the i < k that attains F(k, b) = F(i, b - c_k) + G(i, k)
    n = int(np.prod(batch, dtype=np.int64))
    Ff = F.reshape(n, K + 1, B + 1)
    G = np.full((n, K + 1, K + 1), -np.inf)
    G[:, plan.pair_i, plan.pair_j] = Gq.reshape(n, -1)
    k = best.reshape(-1) + 1
    b = np.full(n, B, dtype=np.int64)
    sel = np.zeros((n, K + 1), dtype=bool)
    rows = np.arange(n)
    ext_costs = np.concatenate([[0], costs])
    for _ in range(K + 1):
        active = k > 0
        if not active.any():
            break
        r, ka = rows[active], k[active]
        sel[r, ka] = True
        bb = b[active] - ext_costs[ka]
        prev = (Ff[r, :, bb] + G[r, :, ka]).argmax(axis=1)
        b[active] = bb
        k[active] = prev
    selected = sel[:, 1:].reshape(batch + (K,))
    return selected, value


def assign_users(M: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """Each user's best arm (under ``M``) among the selected ones: ``(..., U)`` arm indices."""
    masked = np.where(selected[..., None, :], M, -np.inf)
    return masked.argmax(axis=-1)


def sp_matching(P: np.ndarray, costs, budget: int, peaks=None):
    """SP-Matching on one SP matrix (arms in SP order). Returns ``(matching, value, selected_arms)``.

    ``peaks`` (0-based) defaults to each row's argmax.
    """
    P = np.asarray(P, dtype=float)
    K = P.shape[1]
    costs = np.asarray(costs, dtype=np.int64)
    if int(budget) < int(costs.min()):
        raise ValueError(f"budget {budget} is below the cheapest arm's cost {int(costs.min())}: no feasible matching")
    plan = peak_plan(np.argmax(P, axis=1) if peaks is None else np.asarray(peaks), K)
    selected, value = sp_matching_batch(P, costs, budget, plan)
    return assign_users(P, selected), float(value), np.flatnonzero(selected)


def matching_value(P: np.ndarray, matching: np.ndarray) -> np.ndarray:
    """``sum_u P[u, m(u)]`` (batched over leading dimensions of ``matching``)."""
    return np.take_along_axis(np.broadcast_to(P, matching.shape + P.shape[-1:]), matching[..., None],
                              axis=-1)[..., 0].sum(axis=-1)


def set_value(P: np.ndarray, arms) -> float:
    """``V(S) = sum_u max_{k in S} P[u, k]``."""
    return float(P[:, list(arms)].max(axis=1).sum())


def brute_force_matching(P: np.ndarray, costs, budget: int, chunk: int | None = None):
    """Exact optimum by enumerating every arm set ``S`` with ``c(S) <= B``: ``(value, S, n_sets)``.

    Enumerating sets is equivalent to enumerating matchings (``K^U`` of them): given ``S`` the best matching sends
    each user to its best arm in ``S``, and a matching that uses fewer arms is a matching of a smaller set.
    No structure is assumed: this is the exponential algorithm SP-Matching replaces.
    """
    P = np.asarray(P, dtype=float)
    U, K = P.shape
    costs = np.asarray(costs, dtype=np.int64)
    if chunk is None:  # about 4M values per chunk of the (sets, users, arms) array
        chunk = int(max(256, min(1 << 14, (1 << 22) // max(1, U * K))))
    best_v, best_s, n_sets = -np.inf, None, 0
    bits = 1 << np.arange(K)
    for start in range(1, 1 << K, chunk):
        codes = np.arange(start, min(start + chunk, 1 << K))
        masks = (codes[:, None] & bits) > 0  # (n, K)
        feasible = (masks * costs).sum(axis=1) <= budget
        masks = masks[feasible]
        if len(masks) == 0:
            continue
        n_sets += len(masks)
        vals = np.where(masks[:, None, :], P[None], -np.inf).max(axis=2).sum(axis=1)
        i = int(vals.argmax())
        if vals[i] > best_v:
            best_v, best_s = float(vals[i]), np.flatnonzero(masks[i])
    return best_v, best_s, n_sets


def brute_force_matchings(P: np.ndarray, costs, budget: int) -> float:
    """The official code's brute force: every matching ``m : [U] -> [K]`` (``K^U``); tiny instances only."""
    P = np.asarray(P, dtype=float)
    U, K = P.shape
    best = -np.inf
    for m in itertools.product(range(K), repeat=U):
        if sum(int(costs[k]) for k in set(m)) <= budget:
            best = max(best, float(P[np.arange(U), m].sum()))
    return best
