"""Couplings between factuals X (N rows) and counterfactuals R (M rows), and the composed counterfactual q.

A coupling is a nonnegative N x M matrix pi; the ones in Pi(a, b) have row sums a = 1/N and column sums
b = 1/M. COLA's default is the optimal-transport coupling (exact EMD with squared-euclidean cost, POT);
the ablation compares it with a nearest-neighbour matching that respects capacities (a greedy coupling
in Pi(a, b)), the identity (each factual with its own counterfactual, N = M) and a random coupling.
"""
from __future__ import annotations

import os
import sys

import numpy as np

COUPLINGS = ("ot", "nn", "identity", "random")
COUPLING_LABELS = {"ot": "OT (EMD)", "nn": "NN (greedy, capacity)", "nn_free": "NN (no capacity)",
                   "identity": "identity (ECT)", "random": "random"}


_POT_BACKEND_SWITCHES = ("POT_BACKEND_DISABLE_PYTORCH", "POT_BACKEND_DISABLE_JAX", "POT_BACKEND_DISABLE_CUPY",
                         "POT_BACKEND_DISABLE_TENSORFLOW")


def _ot():
    """POT, imported without its torch/JAX/CuPy/TensorFlow backends unless the process already has them.

    Everything here is numpy; POT's documented ``POT_BACKEND_DISABLE_*`` switches keep ``import ot`` from
    importing torch (about 2 s of a 25 s notebook). The switches are set only for the import and then removed,
    so nothing else in the process sees them; where torch is already imported, POT keeps its torch backend.
    """
    if "ot" in sys.modules:
        return sys.modules["ot"]
    added = [k for k in _POT_BACKEND_SWITCHES if k not in os.environ
             and not (k.endswith("PYTORCH") and "torch" in sys.modules)]
    for k in added:
        os.environ[k] = "1"
    try:
        import ot
    finally:
        for k in added:
            os.environ.pop(k, None)
    return ot


def cost_matrix(X: np.ndarray, R: np.ndarray) -> np.ndarray:
    """C_ij = ||x_i - r_j||_2^2 (POT's ``ot.dist`` default)."""
    ot = _ot()

    return ot.dist(np.asarray(X, dtype=float), np.asarray(R, dtype=float))


def ot_coupling(X: np.ndarray, R: np.ndarray, reg: float = 0.0) -> np.ndarray:
    """The OT coupling with uniform marginals: exact ``ot.emd`` when ``reg == 0``, else ``ot.sinkhorn(reg)``
    (on the cost divided by its maximum, so ``reg`` is scale-free). Normalised to sum 1."""
    ot = _ot()

    N, M = len(X), len(R)
    a, b = np.full(N, 1.0 / N), np.full(M, 1.0 / M)
    C = cost_matrix(X, R)
    if reg and reg > 0:
        pi = ot.sinkhorn(a, b, C / max(C.max(), 1e-300), reg, method="sinkhorn_log", numItermax=20000)
    else:
        pi = ot.emd(a, b, C)
    return pi / pi.sum()


def greedy_coupling(C: np.ndarray) -> np.ndarray:
    """A coupling in Pi(1/N, 1/M) that ships mass greedily along the cheapest remaining pairs of ``C``."""
    N, M = C.shape
    a, b = np.full(N, 1.0 / N), np.full(M, 1.0 / M)
    pi = np.zeros((N, M))
    for flat in np.argsort(C, axis=None, kind="stable"):
        i, j = divmod(int(flat), M)
        m = min(a[i], b[j])
        if m > 1e-15:
            pi[i, j] += m
            a[i] -= m
            b[j] -= m
        if a.max() <= 1e-15:
            break
    return pi / pi.sum()


def nn_coupling(X: np.ndarray, R: np.ndarray, capacity: bool = True) -> np.ndarray:
    """Nearest-neighbour matching. ``capacity=True``: the greedy coupling in Pi(a, b) (each counterfactual
    used once when N = M); ``capacity=False``: every factual to its nearest counterfactual (xai-cola's NN
    matcher; not in Pi(a, b) when two factuals share a counterfactual)."""
    C = cost_matrix(X, R)
    if capacity:
        return greedy_coupling(C)
    pi = np.zeros_like(C)
    pi[np.arange(len(C)), C.argmin(1)] = 1.0 / len(C)
    return pi


def identity_coupling(N: int, M: int | None = None) -> np.ndarray:
    """Each factual with its own counterfactual (xai-cola's exact matching, ECT); needs N = M."""
    if M is not None and M != N:
        raise ValueError(f"the identity coupling needs as many counterfactuals as factuals, got N={N}, M={M}")
    return np.eye(N) / N


def random_coupling(N: int, M: int, rng) -> np.ndarray:
    """A random coupling in Pi(1/N, 1/M): the greedy coupling of a random cost (a random permutation if N = M)."""
    return greedy_coupling(rng.random((N, M)))


def make_coupling(name: str, X: np.ndarray, R: np.ndarray, rng=None, reg: float = 0.0) -> np.ndarray:
    if name == "ot":
        return ot_coupling(X, R, reg=reg)
    if name == "nn":
        return nn_coupling(X, R, capacity=True)
    if name == "nn_free":
        return nn_coupling(X, R, capacity=False)
    if name == "identity":
        return identity_coupling(len(X), len(R))
    if name == "random":
        return random_coupling(len(X), len(R), np.random.default_rng(0) if rng is None else rng)
    raise ValueError(f"unknown coupling {name!r}; allowed: {', '.join(COUPLINGS)}, 'nn_free'")


def transport_cost(pi: np.ndarray, X: np.ndarray, R: np.ndarray) -> float:
    """sum_ij pi_ij ||x_i - r_j||^2: the objective OT minimises over Pi(a, b)."""
    return float((pi * cost_matrix(X, R)).sum())


def compose_q(pi: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The composed counterfactual ("A-values", max method): q_i = r_{argmax_j pi_ij}."""
    return np.asarray(R, dtype=float)[np.asarray(pi).argmax(1)].copy()
