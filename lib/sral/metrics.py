"""Ranking metrics: NDCG@k against a graded ground truth, per-query Spearman, MAP@k, accuracy (numpy + scipy)."""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def graded_relevance(gt_dist: np.ndarray, k: int = 10) -> np.ndarray:
    """Relevance from true distances (Q, N): the true nearest item gets k, the k-th nearest 1, the rest 0."""
    rank = rankdata(gt_dist, axis=1, method="ordinal")  # 1 = nearest
    return np.maximum(k + 1 - rank, 0).astype(float)


def ndcg_at_k(relevance: np.ndarray, scores: np.ndarray, k: int = 10) -> np.ndarray:
    """NDCG@k per query (rows), items ranked by ``scores`` descending; log2 discount (scikit-learn's ndcg_score
    without ties)."""
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    dcg = (np.take_along_axis(relevance, top, 1) * disc).sum(1)
    idcg = (-np.sort(-relevance, axis=1)[:, :k] * disc).sum(1)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0)


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho between a[q] and b[q] for every row q."""
    ra, rb = rankdata(a, axis=1), rankdata(b, axis=1)
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    return (ra * rb).sum(1) / np.sqrt((ra ** 2).sum(1) * (rb ** 2).sum(1))


def pairwise_dist(Q: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Euclidean distances (len(Q), len(D))."""
    sq = (Q ** 2).sum(1)[:, None] + (D ** 2).sum(1)[None, :] - 2 * Q @ D.T
    return np.sqrt(np.maximum(sq, 0))


def map_at_k(relevant: np.ndarray, scores: np.ndarray, k: int = 50) -> float:
    """Mean average precision at k: relevant (Q, N) booleans, items ranked by ``scores`` descending; AP@k divides by
    min(k, number of relevant items)."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    hit = np.take_along_axis(relevant, top, 1).astype(float)
    prec = hit.cumsum(1) / np.arange(1, k + 1)
    denom = np.minimum(relevant.sum(1), k)
    return float(np.mean(np.where(denom > 0, (prec * hit).sum(1) / np.maximum(denom, 1), 0.0)))
