"""Baselines, all vectorised over the directed edges: min-sum loopy BP, tree-reweighted BP (TRW-T), ICM, mean field.

Messages live on directed edges s -> t as (2E, K) arrays; ``S`` sums the messages arriving at each node.
    LBP:  m_st(b) = min_a [ theta_s(a) + sum_{v in N(s)} m_vs(a) - m_ts(a) + theta_st(a, b) ]
    TRW:  m_st(b) = min_a [ theta_s(a) + sum_{v in N(s)} rho_vs m_vs(a) - m_ts(a) + theta_st(a, b) / rho_st ]
          (Wainwright, Jaakkola and Willsky 2005; rho_e = edge-appearance probabilities, here the UST's R_eff)
    Both are synchronous with damping m <- (1 - d) m_new + d m_old and decode x_i = argmin of the node belief.
    ICM: coordinate descent x_i <- argmin_a theta_i(a) + sum_j theta_ij(a, x_j), a colour class at a time.
    Mean field: q_i(a) proportional to exp(-beta [theta_i(a) + sum_j sum_b theta_ij(a, b) q_j(b)]), damped.
Every solver tracks the lowest-energy labelling it decodes.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .model import PairwiseMRF
from .result import BestTracker, SolveResult
from .trees import edge_appearance


class _Directed:
    def __init__(self, mrf: PairwiseMRF):
        self.src, self.dst, self.tab, self.rev, self.eid = mrf.directed()
        D = len(self.src)
        self.S_dst = sp.csr_matrix((np.ones(D), (self.dst, np.arange(D))), shape=(mrf.n, D))
        self.S_src = sp.csr_matrix((np.ones(D), (self.src, np.arange(D))), shape=(mrf.n, D))


def _finite_unary(mrf: PairwiseMRF) -> np.ndarray:
    """Unary energies with +inf replaced by a large finite value (keeps message arithmetic free of inf - inf)."""
    U = mrf.unary.copy()
    big = 1e6 + np.abs(U[np.isfinite(U)]).max(initial=0.0) + np.abs(mrf.pair).sum(axis=(1, 2)).max(initial=0.0)
    U[~np.isfinite(U)] = big
    return U


def _message_passing(mrf: PairwiseMRF, rho: np.ndarray | None, iters: int, damping: float, name: str) -> SolveResult:
    t0 = time.perf_counter()
    g = _Directed(mrf)
    U = _finite_unary(mrf)
    D, K = len(g.src), mrf.Kmax
    r = np.ones(D) if rho is None else rho[g.eid]
    tab = g.tab / r[:, None, None]
    M = np.zeros((D, K))
    tr = BestTracker(mrf, t0)
    for _ in range(iters):
        B = U + g.S_dst @ (r[:, None] * M)  # node beliefs
        H = B[g.src] - M[g.rev]
        new = (H[:, :, None] + tab).min(axis=1)
        new -= new.min(axis=1, keepdims=True)
        M = (1.0 - damping) * new + damping * M
        B = U + g.S_dst @ (r[:, None] * M)
        tr.step(B.argmin(axis=1))
    return tr.result(name, iters=iters, damping=damping)


def lbp_minsum(mrf: PairwiseMRF, iters: int = 50, damping: float = 0.5) -> SolveResult:
    """Loopy min-sum belief propagation (max-product in the log domain), damped, best decoded energy."""
    return _message_passing(mrf, None, iters, damping, "LBP")


def trw(mrf: PairwiseMRF, rho: np.ndarray | None = None, iters: int = 50, damping: float = 0.5) -> SolveResult:
    """TRW-T (tree-reweighted max-product) with edge-appearance probabilities rho (default: the UST's R_eff)."""
    if rho is None:
        rho = edge_appearance(mrf)
    return _message_passing(mrf, np.asarray(rho, dtype=float), iters, damping, "TRW")


def greedy_colouring(mrf: PairwiseMRF) -> list[np.ndarray]:
    """Colour classes (independent sets) of the graph, largest-first greedy colouring (networkx)."""
    import networkx as nx

    col = nx.greedy_color(mrf.to_networkx(), strategy="largest_first")
    c = np.array([col[i] for i in range(mrf.n)])
    return [np.flatnonzero(c == k) for k in range(c.max() + 1)]


def local_energies(mrf: PairwiseMRF, x: np.ndarray, g: _Directed | None = None, U: np.ndarray | None = None):
    """(n, K): theta_i(a) + sum_j theta_ij(a, x_j) for every node and label, the others fixed at x."""
    g = g or _Directed(mrf)
    U = mrf.unary if U is None else U
    contrib = g.tab[np.arange(len(g.src)), :, x[g.dst]]  # (D, K): table[a, x_dst] for every a of src
    return U + g.S_src @ contrib


def icm(mrf: PairwiseMRF, x0: np.ndarray | None = None, sweeps: int = 50) -> SolveResult:
    """Iterated conditional modes from ``x0`` (default: the unary argmin), one colour class at a time."""
    t0 = time.perf_counter()
    g = _Directed(mrf)
    classes = greedy_colouring(mrf)
    x = mrf.unary.argmin(axis=1) if x0 is None else mrf.check_labels(x0).copy()
    tr = BestTracker(mrf, t0)
    for _ in range(sweeps):
        changed = False
        for cls in classes:
            loc = local_energies(mrf, x, g)[cls]
            cur = loc[np.arange(len(cls)), x[cls]]
            best = loc.argmin(axis=1)
            move = loc[np.arange(len(cls)), best] < cur - 1e-12
            if move.any():
                x[cls[move]] = best[move]
                changed = True
        tr.step(x)
        if not changed:
            break
    return tr.result("ICM", sweeps=len(tr.trace))


def mean_field(mrf: PairwiseMRF, iters: int = 50, damping: float = 0.5, beta: float = 1.0) -> SolveResult:
    """Naive mean field at inverse temperature beta (parallel damped updates), decoded by argmax q_i."""
    t0 = time.perf_counter()
    g = _Directed(mrf)
    valid = mrf.label_mask
    U = np.where(valid, mrf.unary, 0.0)
    logits = np.where(valid, -beta * U, -np.inf)
    q = np.exp(logits - logits.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    tr = BestTracker(mrf, t0)
    for _ in range(iters):
        contrib = np.einsum("dab,db->da", g.tab, q[g.dst])
        field = U + g.S_src @ contrib
        logits = np.where(valid, -beta * field, -np.inf)
        new = np.exp(logits - logits.max(axis=1, keepdims=True))
        new /= new.sum(axis=1, keepdims=True)
        q = (1.0 - damping) * new + damping * q
        tr.step(np.where(valid, q, -1.0).argmax(axis=1))
    return tr.result("MF", iters=iters, damping=damping, beta=beta)
