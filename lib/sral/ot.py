"""Exact and sliced 2-Wasserstein distances between point sets (uniform weights), with POT."""
from __future__ import annotations

import numpy as np
import ot


def exact_w2(A: np.ndarray, B: np.ndarray) -> float:
    """W2(mu_A, mu_B) of two uniform empirical measures: sqrt of POT's exact OT cost with squared Euclidean cost."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    M = ot.dist(A, B)  # squared Euclidean
    return float(np.sqrt(max(ot.emd2(np.full(len(A), 1 / len(A)), np.full(len(B), 1 / len(B)), M), 0.0)))


def sliced_w2(A: np.ndarray, B: np.ndarray, thetas: np.ndarray) -> float:
    """SW2 over the given unit directions (rows of ``thetas``), by POT."""
    return float(ot.sliced_wasserstein_distance(np.asarray(A, float), np.asarray(B, float),
                                                projections=np.asarray(thetas, float).T, p=2))


def ground_truth_matrix(queries, db, progress=None) -> np.ndarray:
    """(len(db), len(queries)) exact W2 matrix."""
    out = np.empty((len(db), len(queries)))
    it = range(len(queries)) if progress is None else progress(range(len(queries)))
    for q in it:
        for j, S in enumerate(db):
            out[j, q] = exact_w2(queries[q], S)
    return out
