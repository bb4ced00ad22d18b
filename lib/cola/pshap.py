"""p-SHAP: Shapley values whose background distribution is a row of the coupling pi.

For factual x_i the game over the feature set [P] is

    v_i(S) = sum_j w_ij g(x_{i,S}, r_{j,S-bar}),      w_ij = pi_ij / sum_j' pi_ij',

(g = P(y = 1), features in S taken from x_i, the others from counterfactual r_j), and
phi_ik = sum_{S not containing k} |S|! (P-|S|-1)! / P! [v_i(S + k) - v_i(S)].
Efficiency: sum_k phi_ik = v_i([P]) - v_i({}) = g(x_i) - sum_j w_ij g(r_j). With a permutation coupling the
background is the single matched counterfactual q_i and p-SHAP is baseline Shapley with baseline q_i.

* :func:`pshap_exact` enumerates the 2^P coalitions (vectorised: one model call per chunk), P <= 12.
* :func:`pshap_sampling` averages marginal contributions over sampled permutations (antithetic pairs) with a
  background row drawn from w_i per permutation; efficiency holds per permutation.
* :func:`shap_background` is the "attribute first, then edit" baseline: the same sampler with a uniform
  background of training rows (interventional SHAP against the data, blind to the counterfactuals).
"""
from __future__ import annotations

from functools import lru_cache
from math import factorial

import numpy as np

EXACT_MAX_FEATURES = 12


@lru_cache(maxsize=16)
def coalition_masks(P: int) -> np.ndarray:
    """(2^P, P) booleans: row s holds coalition {k : bit k of s is set}."""
    s = np.arange(2**P)[:, None]
    return ((s >> np.arange(P)[None, :]) & 1).astype(bool)


@lru_cache(maxsize=16)
def shapley_matrix(P: int) -> np.ndarray:
    """(2^P, P) matrix A with phi = v @ A for any game v given on all coalitions (ordered as coalition_masks)."""
    masks = coalition_masks(P)
    size = masks.sum(1)
    w = np.array([factorial(s) * factorial(P - s - 1) / factorial(P) for s in range(P)] + [0.0])
    A = np.where(masks, w[np.maximum(size - 1, 0)][:, None], -w[size][:, None])
    return A


def _row_weights(pi: np.ndarray, tol: float):
    """Per row: indices and normalised weights of the background entries above ``tol`` x the row's maximum.

    EMD couplings are sparse, so ``tol`` changes nothing there; for entropic couplings it drops the negligible
    weights (the package instead resamples 1000 background rows from pi_i, which almost never draws them)."""
    out = []
    for row in np.asarray(pi, dtype=float):
        if row.sum() <= 0:
            raise ValueError("a row of the coupling has no mass")
        idx = np.flatnonzero(row > tol * row.max())
        out.append((idx, row[idx] / row[idx].sum()))
    return out


def pshap_exact(proba, X: np.ndarray, R: np.ndarray, pi: np.ndarray, tol: float = 1e-3,
                chunk_rows: int = 200_000) -> np.ndarray:
    """Exact p-SHAP values (N, P) of ``proba`` (a function of an (n, P) array) by coalition enumeration."""
    X, R = np.asarray(X, dtype=float), np.asarray(R, dtype=float)
    N, P = X.shape
    if P > EXACT_MAX_FEATURES:
        raise ValueError(f"pshap_exact enumerates 2^P coalitions; P={P} > {EXACT_MAX_FEATURES}, use pshap_sampling")
    masks = coalition_masks(P)
    K = len(masks)
    pairs = [(i, j, w) for i, (idx, ws) in enumerate(_row_weights(pi, tol)) for j, w in zip(idx, ws)]
    V = np.zeros((N, K))
    per_chunk = max(1, chunk_rows // K)
    for start in range(0, len(pairs), per_chunk):
        block = pairs[start:start + per_chunk]
        ii = np.array([p[0] for p in block])
        jj = np.array([p[1] for p in block])
        Z = np.where(masks[None, :, :], X[ii][:, None, :], R[jj][:, None, :])
        g = np.asarray(proba(Z.reshape(-1, P)), dtype=float).reshape(len(block), K)
        np.add.at(V, ii, np.array([p[2] for p in block])[:, None] * g)
    return V @ shapley_matrix(P)


def pshap_sampling(proba, X: np.ndarray, R: np.ndarray, pi: np.ndarray, n_perm: int = 128, rng=None,
                   tol: float = 1e-3, chunk_rows: int = 200_000) -> np.ndarray:
    """Permutation-sampling estimate of p-SHAP (N, P): ``n_perm`` permutations per row in antithetic pairs
    (sigma and its reverse share the background draw j ~ w_i)."""
    rng = np.random.default_rng(0) if rng is None else rng
    X, R = np.asarray(X, dtype=float), np.asarray(R, dtype=float)
    N, P = X.shape
    half = max(1, n_perm // 2)
    weights = _row_weights(pi, tol)
    phi = np.zeros((N, P))
    rows_per_chunk = max(1, chunk_rows // (2 * half * (P + 1)))
    for start in range(0, N, rows_per_chunk):
        rows = np.arange(start, min(N, start + rows_per_chunk))
        sig = np.argsort(rng.random((len(rows), half, P)), axis=-1)
        sig = np.concatenate([sig, sig[..., ::-1]], axis=1)  # (n, T, P), antithetic pairs
        bg = np.stack([rng.choice(weights[i][0], size=half, p=weights[i][1]) for i in rows])
        bg = np.concatenate([bg, bg], axis=1)  # (n, T)
        T = sig.shape[1]
        # rank[n, t, k] = position of feature k in permutation t; chain step s has features with rank < s from x
        rank = np.argsort(sig, axis=-1)
        steps = np.arange(P + 1)[None, None, :, None]
        from_x = rank[:, :, None, :] < steps  # (n, T, P+1, P)
        Z = np.where(from_x, X[rows][:, None, None, :], R[bg][:, :, None, :])
        g = np.asarray(proba(Z.reshape(-1, P)), dtype=float).reshape(len(rows), T, P + 1)
        contrib = np.diff(g, axis=-1)  # (n, T, P): contribution of feature sig[..., s] at step s
        by_feature = np.zeros_like(contrib)
        np.put_along_axis(by_feature, sig, contrib, axis=-1)
        phi[rows] = by_feature.mean(1)
    return phi


def pshap(proba, X, R, pi, n_perm: int = 128, rng=None, exact_max_features: int = EXACT_MAX_FEATURES):
    """Exact p-SHAP when P <= ``exact_max_features``, else permutation sampling. Returns (phi, method)."""
    P = np.asarray(X).shape[1]
    if P <= exact_max_features:
        return pshap_exact(proba, X, R, pi), "exact"
    return pshap_sampling(proba, X, R, pi, n_perm=n_perm, rng=rng), f"sampling ({n_perm} permutations)"


def shap_background(proba, X: np.ndarray, X_bg: np.ndarray, n_perm: int = 128, rng=None) -> np.ndarray:
    """Decoupled ("FA then CE") Shapley values of ``proba`` at X against a uniform training background."""
    X_bg = np.asarray(X_bg, dtype=float)
    pi = np.full((len(X), len(X_bg)), 1.0 / (len(X) * len(X_bg)))
    return pshap_sampling(proba, X, X_bg, pi, n_perm=n_perm, rng=rng)
