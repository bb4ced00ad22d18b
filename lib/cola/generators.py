"""Counterfactual generators, written here (no external CE library).

Each returns ``(R, valid)``: one counterfactual row per factual (standardised space) and whether the model
predicts the target class for it. None sparsifies its output: that is COLA's job.

* :func:`wachter_ce`: Wachter et al. (2017) gradient search, min lambda * loss(f(x'), target) + ||x' - x||^2
  with lambda doubled until the model flips (Adam on the model's or a surrogate's input gradient). Dense.
* :func:`nun_ce`: the nearest training instance the model assigns to the target class (nearest unlike
  neighbour). Dense on continuous data.
* :func:`growing_spheres`: Laugel et al. (2018): uniform samples in growing l2 shells until one is of the
  target class; the closest such sample. Its feature-selection (sparsification) step is left out. Dense.
* :func:`dice_random`: DiCE's model-agnostic "random" method, reimplemented: random values (from the training
  marginals) on a random feature subset, keep the closest valid draw. Sparse.
"""
from __future__ import annotations

import numpy as np

GENERATORS = ("wachter", "nun", "growing_spheres", "dice_random")
GENERATOR_LABELS = {"wachter": "Wachter", "nun": "NUN", "growing_spheres": "GrowingSpheres",
                    "dice_random": "DiCE-random"}
DENSE_GENERATORS = ("wachter", "nun", "growing_spheres")


def wachter_ce(clf, X: np.ndarray, target: int = 1, lam0: float = 1.0, lr: float = 0.05, steps: int = 600,
               target_proba: float = 0.7, check_every: int = 10, grow_every: int = 20):
    """Wachter counterfactuals for the rows of ``X`` (batched Adam on every row at once).

    Loss per row: ``lam * (-log g(x')) + ||x' - x||_2^2``, g the probability of ``target`` from
    ``clf.proba_and_grad`` (exact for differentiable models, a distilled MLP otherwise). The log loss
    (DiCE's choice) replaces Wachter's squared loss (g - 1)^2, whose gradient vanishes where a model is
    saturated (an MLP at p = 1e-20 never moves). Every
    ``grow_every`` steps ``lam`` doubles for rows the real model does not yet give ``target_proba``
    (the xai-cola default 0.7); a row is frozen as soon as it does (checked every step for ``lr``/``mlp``,
    whose gradient model is the model itself, every ``check_every`` steps otherwise). Start: x' = x.
    """
    X = np.asarray(X, dtype=float)
    Z = X.copy()
    lam = np.full(len(X), float(lam0))
    active = np.ones(len(X), dtype=bool)
    m, v = np.zeros_like(Z), np.zeros_like(Z)
    b1, b2, eps = 0.9, 0.999, 1e-8
    sign = 1.0 if target == 1 else -1.0
    exact = clf.name in ("lr", "mlp")  # proba_and_grad is the model itself: check validity every step
    for t in range(1, steps + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        p, g = clf.proba_and_grad(Z[idx])
        pt = p if target == 1 else 1 - p
        if exact or t % check_every == 1:
            pr = pt if exact else clf.proba(Z[idx])
            pr = pr if (exact or target == 1) else 1 - pr
            done = pr >= target_proba
            active[idx[done]] = False
            idx, p, g, pt = idx[~done], p[~done], g[~done], pt[~done]
            if idx.size == 0:
                break
        grad = -lam[idx, None] * (sign * g) / np.maximum(pt, 1e-12)[:, None] + 2 * (Z[idx] - X[idx])
        m[idx] = b1 * m[idx] + (1 - b1) * grad
        v[idx] = b2 * v[idx] + (1 - b2) * grad**2
        Z[idx] -= lr * (m[idx] / (1 - b1**t)) / (np.sqrt(v[idx] / (1 - b2**t)) + eps)
        if t % grow_every == 0:
            lam[active] *= 2.0
    return Z, clf.predict(Z) == target


def nun_ce(clf, X_pool: np.ndarray, X: np.ndarray, target: int = 1):
    """Nearest unlike neighbour: for each row, the closest (l2) pool row that ``clf`` predicts as ``target``."""
    pool = np.asarray(X_pool, dtype=float)
    pool = pool[clf.predict(pool) == target]
    if len(pool) == 0:
        raise ValueError("nun_ce: no pool row is predicted as the target class")
    d = ((np.asarray(X)[:, None, :] - pool[None, :, :]) ** 2).sum(-1)
    R = pool[d.argmin(1)].copy()
    return R, clf.predict(R) == target


def _uniform_in_shell(rng, n_rows: int, n: int, d: int, a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """``n`` uniform points per row in the l2 shell a0 < r <= a1 around the origin: (n_rows, n, d)."""
    u = rng.normal(size=(n_rows, n, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    lo, hi = (a0**d)[:, None], (a1**d)[:, None]
    r = (lo + rng.random((n_rows, n)) * (hi - lo)) ** (1.0 / d)
    return u * r[..., None]


def growing_spheres(clf, X: np.ndarray, target: int = 1, eta: float = 0.5, n: int = 300, rng=None,
                    max_halvings: int = 8, max_layers: int = 60):
    """Growing Spheres (Laugel et al. 2018) without its sparsification step, batched over rows.

    First the radius ``eta`` is halved while the ball still holds a target-class sample; then shells
    (a, a + eta] grow until one does; the closest target-class sample of that shell is returned.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    X = np.asarray(X, dtype=float)
    N, d = X.shape
    radius = np.full(N, float(eta))
    for _ in range(max_halvings):  # shrink the first ball until it holds no enemy
        pts = X[:, None, :] + _uniform_in_shell(rng, N, n, d, np.zeros(N), radius)
        hit = (clf.predict(pts.reshape(-1, d)) == target).reshape(N, n).any(1)
        if not hit.any():
            break
        radius[hit] /= 2.0
    step = radius.copy()
    a0, a1 = radius.copy(), 2 * radius
    R, found = X.copy(), np.zeros(N, dtype=bool)
    for _ in range(max_layers):
        idx = np.flatnonzero(~found)
        if idx.size == 0:
            break
        pts = X[idx, None, :] + _uniform_in_shell(rng, idx.size, n, d, a0[idx], a1[idx])
        ok = (clf.predict(pts.reshape(-1, d)) == target).reshape(idx.size, n)
        dist = np.where(ok, np.linalg.norm(pts - X[idx, None, :], axis=-1), np.inf)
        best = dist.argmin(1)
        got = np.isfinite(dist[np.arange(idx.size), best])
        R[idx[got]] = pts[np.flatnonzero(got), best[got]]
        found[idx[got]] = True
        a0[idx], a1[idx] = a1[idx], a1[idx] + step[idx]
    return R, (clf.predict(R) == target) & found


def dice_random(clf, X: np.ndarray, X_train: np.ndarray, target: int = 1, n: int = 400, rng=None):
    """DiCE-style random search: per row, ``n`` candidates that redraw a random subset of features from the
    training marginals; the valid candidate with the smallest l1 distance is kept (sparse by design)."""
    rng = np.random.default_rng(0) if rng is None else rng
    X = np.asarray(X, dtype=float)
    Xt = np.asarray(X_train, dtype=float)
    N, d = X.shape
    k = rng.integers(1, d + 1, size=(N, n))  # subset size per candidate
    keys = rng.random((N, n, d))
    thresh = np.sort(keys, axis=-1)[np.arange(N)[:, None], np.arange(n)[None, :], k - 1]
    change = keys <= thresh[..., None]
    donors = Xt[rng.integers(0, len(Xt), size=(N, n, d)), np.arange(d)[None, None, :]]
    cand = np.where(change, donors, X[:, None, :])
    ok = (clf.predict(cand.reshape(-1, d)) == target).reshape(N, n)
    dist = np.where(ok, np.abs(cand - X[:, None, :]).sum(-1), np.inf)
    best = dist.argmin(1)
    R = cand[np.arange(N), best]
    valid = np.isfinite(dist[np.arange(N), best])
    R[~valid] = X[~valid]
    return R, valid & (clf.predict(R) == target)


def generate(name: str, clf, X: np.ndarray, X_train: np.ndarray, target: int = 1, rng=None):
    """Dispatch to the generator ``name`` (one of :data:`GENERATORS`)."""
    if name == "wachter":
        return wachter_ce(clf, X, target=target)
    if name == "nun":
        return nun_ce(clf, X_train, X, target=target)
    if name == "growing_spheres":
        return growing_spheres(clf, X, target=target, rng=rng)
    if name == "dice_random":
        return dice_random(clf, X, X_train, target=target, rng=rng)
    raise ValueError(f"unknown generator {name!r}; allowed: {', '.join(GENERATORS)}")
