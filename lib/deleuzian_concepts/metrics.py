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


def _fit_1d(z, y, lam, iters, tol=1e-6):
    """Newton on (w, b) for every concept column of ``z`` [n, c] and label column of ``y`` [n, L] at once.

    Each (concept, label) pair is a row of a ``[c L, n]`` problem; a pair whose step moved (w, b) by less than
    ``tol`` is converged and leaves the active set (the later steps would move it by less still), so the work
    follows the pairs that still move. At most ``iters`` steps, damped to 2 units per step."""
    n, c = z.shape
    L = y.shape[1]
    dt = z.dtype.type
    prior = np.clip(y.mean(0), 1e-6, 1 - 1e-6)
    zt = np.ascontiguousarray(z.T)  # [c, n]
    yt = np.ascontiguousarray(y.T, dtype=z.dtype)  # [L, n]
    ci, li = np.repeat(np.arange(c), L), np.tile(np.arange(L), c)  # pair m = (concept ci[m], label li[m])
    w = np.zeros(c * L, dtype=z.dtype)
    b = np.log(prior / (1 - prior)).astype(z.dtype)[li]
    act = np.arange(c * L)  # active pairs
    Za, Ya = zt[ci], yt[li]  # [m, n] rows of the active pairs
    Z2a = Za * Za
    inv_n, half = dt(1.0 / n), dt(0.5)
    for _ in range(iters):
        p = Za * w[act, None]
        p += b[act, None]
        p *= half
        np.tanh(p, out=p)
        p *= half
        p += half  # sigmoid(z w + b) = (1 + tanh((z w + b) / 2)) / 2
        s = p * p
        np.subtract(p, s, out=s)  # p (1 - p)
        p -= Ya  # the residual r = p - y
        wa = w[act]
        gw = np.einsum("mn,mn->m", Za, p) * inv_n + lam * wa
        gb = p.sum(1) * inv_n
        hww = np.einsum("mn,mn->m", Z2a, s) * inv_n + lam
        hwb = np.einsum("mn,mn->m", Za, s) * inv_n
        hbb = s.sum(1) * inv_n + 1e-9
        det = hww * hbb - hwb ** 2
        dw = (hbb * gw - hwb * gb) / det
        db = (hww * gb - hwb * gw) / det
        big = np.maximum(np.abs(dw), np.abs(db))
        step = np.maximum(1.0, big / 2.0)  # damped: at most 2 units per step
        w[act] = wa - dw / step
        b[act] -= db / step
        moving = big >= tol
        if not moving.any():
            break
        if moving.mean() < 0.75:  # compact the active rows
            act, Za, Ya, Z2a = act[moving], Za[moving], Ya[moving], Z2a[moving]
    return w.reshape(c, L), b.reshape(c, L)


def _ce(z, y, w, b):
    """Mean cross-entropy ``[c, L]`` of every (concept, label) probe, in the stable float32 form
    ``CE = softplus(s) - y s`` with ``softplus(s) = max(s, 0) + log1p(exp(-|s|))``."""
    s = z.T[:, :, None] * w[:, None, :]
    s += b[:, None, :]  # [c, n, L]
    sp = np.abs(s)
    np.negative(sp, out=sp)
    np.exp(sp, out=sp)
    np.log1p(sp, out=sp)
    sp += np.maximum(s, 0)
    ones = np.ones((z.shape[1], 1, z.shape[0]), dtype=z.dtype)
    yz = z.T.astype(np.float64) @ np.asarray(y, np.float64)  # [c, L]: sum_n z_n y_n, so sum_n y_n s_n = w yz + b sum y
    tot = (ones @ sp)[:, 0, :].astype(np.float64) - (w * yz + b * np.asarray(y, np.float64).sum(0))
    return tot / z.shape[0]


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
