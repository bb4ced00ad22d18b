"""Projection baselines on the last hidden layer (before the LM head), as in the bias-bench setup.

- INLP (Ravfogel et al. 2020): repeatedly fit a linear classifier of each protected attribute on the (projected)
  states and project onto the intersection of the classifiers' nullspaces.
- SentenceDebias (Liang et al. 2020): the principal directions of the representation differences of
  counterfactual (attribute-swapped) pairs span a bias subspace, which is projected out.

Both return a ``d x d`` projection ``P`` (``h <- h P``, applied through the backbone's ``final`` hook).
"""
from __future__ import annotations

import numpy as np
import torch


def rowspace_projection(W):
    """Orthogonal projection onto the row space of ``W`` (``[k, d]``)."""
    if len(W) == 0:
        return None
    q, _ = np.linalg.qr(np.asarray(W, dtype=np.float64).T)
    return q @ q.T


def inlp(X, Y, n_iter, seed=0, C=1.0):
    """INLP projection after ``n_iter`` rounds; ``Y`` is ``[n, M]`` with -1 where attribute m is unknown. One
    logistic-regression direction per attribute per round. Returns (P, accuracies per round)."""
    Ps, accs = inlp_path(X, Y, n_iter, seed=seed, C=C)
    return Ps[-1], accs


def inlp_path(X, Y, n_iter, seed=0, C=1.0):
    """INLP's projections after rounds 1..``n_iter`` (one run: round k's projection is a prefix of the run) and the
    accuracies per round: (list of P, accuracies)."""
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    P, W, accs, Ps = np.eye(d), [], [], []
    for _ in range(int(n_iter)):
        row = []
        for m in range(Y.shape[1]):
            keep = Y[:, m] >= 0
            clf = LogisticRegression(C=C, max_iter=500, random_state=seed).fit(X[keep] @ P, Y[keep, m])
            row.append(clf.score(X[keep] @ P, Y[keep, m]))
            w = clf.coef_[0]
            W.append(w / np.linalg.norm(w))
        P = np.eye(d) - rowspace_projection(W)
        Ps.append(P)
        accs.append(row)
    return Ps, np.asarray(accs)


def sentence_debias(diffs, k):
    """SentenceDebias projection removing the top-``k`` principal directions of the pair differences ``[n, d]``
    (PCA of the pair-centred vectors ``±diff/2``, i.e. the SVD of the differences)."""
    D = np.asarray(diffs, dtype=np.float64)
    _, _, vt = np.linalg.svd(D, full_matrices=False)
    V = vt[:int(k)]
    return np.eye(D.shape[1]) - V.T @ V


def projection_edit(P):
    Pt = torch.as_tensor(P, dtype=torch.float32)
    return lambda h: h @ Pt
