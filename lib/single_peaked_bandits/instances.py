"""Random single-peaked instances as in the paper's generator, and the single-peakedness test.

A row ``P[u]`` is single-peaked (SP) with respect to an order of the arms when, read in that order, it does not
decrease up to the user's peak and does not increase after it. The paper's generator draws ``K`` values from
``U(0.2, 0.9)`` per user, puts the largest at a uniformly random peak, fills the left side with a random subset of the
rest sorted ascending and the right side with the remainder sorted descending. Unknown-order experiments permute the
columns afterwards.
"""
from __future__ import annotations

import numpy as np

LOW, HIGH = 0.2, 0.9  # the generator's value range (Bernoulli means)


def generate_sp_matrix(U: int, K: int, rng: np.random.Generator, low: float = LOW, high: float = HIGH) -> np.ndarray:
    """A ``U x K`` matrix whose rows are SP in the identity order, with uniformly random peaks."""
    vals = rng.uniform(low, high, size=(U, K))
    vals.sort(axis=1)
    peaks = rng.integers(0, K, size=U)
    P = np.empty((U, K))
    for u in range(U):
        rest = vals[u, :-1].copy()
        rng.shuffle(rest)
        p = peaks[u]
        P[u, p] = vals[u, -1]
        P[u, :p] = np.sort(rest[:p])
        P[u, p + 1:] = np.sort(rest[p:])[::-1]
    return P


def permute_columns(P: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(P[:, perm], perm)``: the arms in a hidden random order (column ``j`` of the result is arm ``perm[j]``)."""
    perm = rng.permutation(P.shape[1])
    return P[:, perm], perm


def sp_peaks(P: np.ndarray) -> np.ndarray:
    """Each row's peak (first argmax), 0-based."""
    return np.argmax(P, axis=-1)


def is_single_peaked(P: np.ndarray, order=None, tol: float = 1e-12) -> bool:
    """Whether every row of ``P`` (columns read in ``order``, default the identity) is single-peaked."""
    P = np.asarray(P, dtype=float)
    if P.ndim == 1:
        P = P[None, :]
    if order is not None:
        P = P[:, np.asarray(order)]
    K = P.shape[1]
    if K <= 2:
        return True
    d = np.diff(P, axis=1)  # d[:, k] = P[:, k + 1] - P[:, k]
    peaks = sp_peaks(P)
    k = np.arange(K - 1)[None, :]
    left = k < peaks[:, None]  # steps that lead up to the peak must not go down
    ok_left = np.all((d >= -tol) | ~left)
    ok_right = np.all((d <= tol) | left)
    return bool(ok_left and ok_right)


def random_costs(K: int, rng: np.random.Generator, max_cost: int = 1) -> np.ndarray:
    """Integer arm costs in ``1..max_cost`` (``max_cost = 1``: unit costs, the paper's experiments)."""
    if max_cost <= 1:
        return np.ones(K, dtype=np.int64)
    return rng.integers(1, max_cost + 1, size=K).astype(np.int64)
