"""Exact MAP: brute force (tiny models) and the local-polytope integer program solved by HiGHS (scipy.optimize.milp).

Local polytope, variables mu_i(a) (one per node label) and mu_e(a, b) (one per edge label pair):
    min  sum_i sum_a theta_i(a) mu_i(a) + sum_e sum_ab theta_e(a, b) mu_e(a, b)
    s.t. sum_a mu_i(a) = 1,   sum_b mu_e(a, b) = mu_u(a),   sum_a mu_e(a, b) = mu_v(b),   mu >= 0.
With mu_i binary the edge variables are forced to the product of the node indicators, so the MILP is exact MAP; with
integrality dropped it is the LP relaxation, whose value is a lower bound on the optimum.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from .model import PairwiseMRF


@dataclass
class ExactResult:
    x: np.ndarray | None  # best labelling found (None if none)
    energy: float  # its energy (inf if none)
    optimal: bool  # proven optimal
    lp_bound: float  # LP-relaxation lower bound (nan when not computed or not finished)
    seconds: float
    status: str


def brute_force(mrf: PairwiseMRF, max_states: int = 2**22, chunk: int = 1 << 16):
    """The exact minimiser by enumerating every labelling (refuses models with more than ``max_states``)."""
    total = int(np.prod(mrf.K.astype(float)))
    if total > max_states:
        raise ValueError(f"brute_force: {total} labellings > max_states = {max_states}")
    radices = mrf.K[::-1]
    best_e, best_x = np.inf, None
    for start in range(0, total, chunk):
        idx = np.arange(start, min(total, start + chunk))
        X = np.zeros((len(idx), mrf.n), dtype=np.int64)
        rem = idx.copy()
        for j, r in enumerate(radices):  # last variable changes fastest
            X[:, mrf.n - 1 - j] = rem % r
            rem //= r
        e = mrf.energies(X)
        k = int(np.argmin(e))
        if e[k] < best_e:
            best_e, best_x = float(e[k]), X[k].copy()
    return best_x, best_e


def _local_polytope(mrf: PairwiseMRF):
    n, K, E = mrf.n, mrf.Kmax, mrf.n_edges
    nv_node, nv_edge = n * K, E * K * K
    node_var = np.arange(nv_node).reshape(n, K)
    edge_var = nv_node + np.arange(nv_edge).reshape(E, K, K)
    valid = mrf.label_mask
    c = np.concatenate([np.where(valid, mrf.unary, 0.0).ravel(), mrf.pair.ravel()])
    ub = np.concatenate([valid.astype(float).ravel(),
                         (valid[mrf.edges[:, 0]][:, :, None] & valid[mrf.edges[:, 1]][:, None, :]).astype(float).ravel()])
    rows, cols, vals = [], [], []
    # normalisation: one row per node
    rows.append(np.repeat(np.arange(n), K)); cols.append(node_var.ravel()); vals.append(np.ones(n * K))
    r0 = n
    # sum_b mu_e(a, b) - mu_u(a) = 0 : rows r0 + e*K + a
    e_i, a_i, b_i = np.meshgrid(np.arange(E), np.arange(K), np.arange(K), indexing="ij")
    rows.append(r0 + (e_i * K + a_i).ravel()); cols.append(edge_var.ravel()); vals.append(np.ones(nv_edge))
    rows.append(r0 + (np.arange(E)[:, None] * K + np.arange(K)[None, :]).ravel())
    cols.append(node_var[mrf.edges[:, 0]].ravel()); vals.append(-np.ones(E * K))
    r1 = r0 + E * K
    # sum_a mu_e(a, b) - mu_v(b) = 0 : rows r1 + e*K + b
    rows.append(r1 + (e_i * K + b_i).ravel()); cols.append(edge_var.ravel()); vals.append(np.ones(nv_edge))
    rows.append(r1 + (np.arange(E)[:, None] * K + np.arange(K)[None, :]).ravel())
    cols.append(node_var[mrf.edges[:, 1]].ravel()); vals.append(-np.ones(E * K))
    m = r1 + E * K
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(m, nv_node + nv_edge))
    rhs = np.zeros(m)
    rhs[:n] = 1.0
    return c, A, rhs, ub, nv_node


def lp_relaxation(mrf: PairwiseMRF, time_limit: float = 10.0) -> float:
    """The local-polytope LP value: a lower bound on the MAP energy (nan if HiGHS does not finish)."""
    c, A, rhs, ub, _ = _local_polytope(mrf)
    lp = milp(c, constraints=LinearConstraint(A, rhs, rhs), bounds=Bounds(np.zeros_like(ub), ub),
              integrality=np.zeros_like(c), options={"time_limit": float(time_limit)})
    return float(lp.fun) if lp.status == 0 else np.nan


def map_milp(mrf: PairwiseMRF, time_limit: float = 10.0, lp_bound: str | bool = "auto") -> ExactResult:
    """Exact MAP by HiGHS branch-and-bound on the local polytope, within ``time_limit`` seconds.

    ``optimal`` is True only when HiGHS proves optimality; otherwise ``x`` is its best incumbent (or None).
    ``lp_bound``: True always solves the LP relaxation too, "auto" only when optimality is not proven, False never.
    """
    t0 = time.perf_counter()
    c, A, rhs, ub, nv_node = _local_polytope(mrf)
    integ = np.zeros_like(c)
    integ[:nv_node] = 1
    res = milp(c, constraints=LinearConstraint(A, rhs, rhs), bounds=Bounds(np.zeros_like(ub), ub),
               integrality=integ, options={"time_limit": float(time_limit), "mip_rel_gap": 1e-9})
    optimal = res.status == 0 and res.x is not None
    x = None if res.x is None else res.x[:nv_node].reshape(mrf.n, mrf.Kmax).argmax(axis=1)
    energy = mrf.energy(x) if x is not None else np.inf
    lb = np.nan
    if lp_bound is True or (lp_bound == "auto" and not optimal):
        lb = lp_relaxation(mrf, time_limit=max(2.0, time_limit))
    secs = time.perf_counter() - t0
    return ExactResult(x, energy, bool(optimal), lb, secs, "optimal" if optimal else str(res.message))
