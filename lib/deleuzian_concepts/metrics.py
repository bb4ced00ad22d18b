"""Metrics of a concept set: best one-concept probe loss, effective rank, max |cos|, MPPC, steering.

Probe loss (the paper's ``probes.py`` protocol): for each binary label and each concept ``j`` a 1-D logistic
regression ``p = sigma(w z_j + b)`` is fitted on the training activations of that concept; the concept with the
lowest *training* cross-entropy is kept and its *test* cross-entropy reported. A multi-class attribute scores
the median over its one-vs-rest labels. All ``k x L`` regressions are fitted at once by damped Newton steps on
standardised concept activations (L2 penalty ``lam`` on ``w``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

EPS = 1e-12


def binary_labels(labels: pd.DataFrame, tasks):
    """One-vs-rest 0/1 matrix ``[n, L]`` and, per column, its task; a two-valued task gives one column."""
    cols, owner, names = [], [], []
    for t in tasks:
        values = sorted(pd.unique(labels[t].astype(str)))
        use = values[:1] if len(values) == 2 else values
        for v in use:
            cols.append((labels[t].astype(str).to_numpy() == v).astype(np.float64))
            owner.append(t)
            names.append(f"{t}={v}")
    return np.stack(cols, axis=1), owner, names


def _standardise(Ztr, Zte):
    mu, sd = Ztr.mean(0), Ztr.std(0)
    ok = sd > 1e-12
    sd = np.where(ok, sd, 1.0)
    return np.where(ok, (Ztr - mu) / sd, 0.0), np.where(ok, (Zte - mu) / sd, 0.0)


def _fit_1d(z, y, lam, iters):
    """Newton on (w, b) for every concept column of ``z`` [n, c] and label column of ``y`` [n, L] at once."""
    n, c = z.shape
    L = y.shape[1]
    prior = np.clip(y.mean(0), 1e-6, 1 - 1e-6)
    w = np.zeros((c, L), dtype=z.dtype)
    b = np.broadcast_to(np.log(prior / (1 - prior)), (c, L)).astype(z.dtype)
    zz = z[:, :, None]
    for _ in range(iters):
        with np.errstate(over="ignore"):
            p = 1.0 / (1.0 + np.exp(-(zz * w + b)))  # [n, c, L]
        r = p - y[:, None, :]
        gw = (zz * r).mean(0) + lam * w
        gb = r.mean(0)
        s = p * (1 - p)
        hww = (zz ** 2 * s).mean(0) + lam
        hwb = (zz * s).mean(0)
        hbb = s.mean(0) + 1e-9
        det = hww * hbb - hwb ** 2
        dw = (hbb * gw - hwb * gb) / det
        db = (hww * gb - hwb * gw) / det
        step = np.maximum(1.0, np.maximum(np.abs(dw), np.abs(db)) / 2.0)  # damped: at most 2 units per step
        w -= dw / step
        b -= db / step
    return w, b


def _ce(z, y, w, b):
    # log-sigmoid form, stable in float32: CE = softplus(s) - y s
    s = z[:, :, None] * w + b
    return (np.logaddexp(0, s) - y[:, None, :] * s).mean(0, dtype=np.float64)  # [c, L]


def probe_losses(Ztr, Zte, Ytr, Yte, *, lam: float = 1e-3, iters: int = 12, budget: int = 2_000_000,
                 dtype=np.float32):
    """Per label: (test CE of the best-on-train concept, index of that concept, sign of its weight)."""
    Ztr, Zte = _standardise(np.asarray(Ztr, float), np.asarray(Zte, float))
    Ztr, Zte = Ztr.astype(dtype), Zte.astype(dtype)
    Ytr, Yte = np.asarray(Ytr, dtype), np.asarray(Yte, dtype)
    n, k = Ztr.shape
    L = Ytr.shape[1]
    chunk = max(1, budget // max(1, n * L))
    best_tr = np.full(L, np.inf)
    best_te = np.full(L, np.nan)
    best_j = np.zeros(L, dtype=int)
    best_sign = np.ones(L)
    for s in range(0, k, chunk):
        zt, ze = Ztr[:, s:s + chunk], Zte[:, s:s + chunk]
        w, b = _fit_1d(zt, Ytr, lam, iters)
        tr = _ce(zt, Ytr, w, b)
        te = _ce(ze, Yte, w, b)
        j = tr.argmin(0)
        cols = np.arange(L)
        better = tr[j, cols] < best_tr
        best_tr = np.where(better, tr[j, cols], best_tr)
        best_te = np.where(better, te[j, cols], best_te)
        best_j = np.where(better, j + s, best_j)
        best_sign = np.where(better, np.sign(w[j, cols]) + (w[j, cols] == 0), best_sign)
    return best_te, best_j, best_sign


def task_scores(losses, owner) -> dict:
    """Median of the label losses of each task (binary task: its one label)."""
    out = {}
    for t in dict.fromkeys(owner):
        out[t] = float(np.median([l for l, o in zip(losses, owner) if o == t]))
    return out


def label_entropy(y) -> float:
    p = float(np.clip(np.mean(y), EPS, 1 - EPS))
    return float(-(p * np.log(p) + (1 - p) * np.log(1 - p)))


def effective_rank(C) -> float:
    """exp(entropy of the normalised singular values) of the concept matrix (Roy & Vetterli)."""
    s = np.linalg.svd(np.asarray(C, float), compute_uv=False)
    s = s[s > 0]
    p = s / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def mean_max_abs_cos(C) -> float:
    C = np.asarray(C, float)
    U = C / (np.linalg.norm(C, axis=1, keepdims=True) + EPS)
    G = np.abs(U @ U.T)
    np.fill_diagonal(G, 0.0)
    return float(G.max(1).mean())


def mppc(Z1, Z2) -> float:
    """Mean over the concepts of set 2 of the max |Pearson correlation| with a concept of set 1 (same samples)."""
    def z(X):
        X = np.asarray(X, float)
        sd = X.std(0)
        return np.where(sd > 1e-12, (X - X.mean(0)) / np.where(sd > 1e-12, sd, 1.0), 0.0)

    R = z(Z1).T @ z(Z2) / len(Z1)
    return float(np.abs(R).max(0).mean())


def steer(X, c, alpha):
    """x + alpha c (the paper's steering: add a concept vector to the representation)."""
    return np.asarray(X, float) + float(alpha) * np.asarray(c, float)


def neighbour_fraction(Q, bank, bank_has, n_neighbours: int = 10) -> float:
    """Share of the ``n_neighbours`` nearest ``bank`` rows (Euclidean) of each query that have the attribute."""
    d2 = (Q ** 2).sum(1)[:, None] - 2 * Q @ bank.T + (bank ** 2).sum(1)[None, :]
    nn = np.argpartition(d2, n_neighbours, axis=1)[:, :n_neighbours]
    return float(np.asarray(bank_has)[nn].mean())
