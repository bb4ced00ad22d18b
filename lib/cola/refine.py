"""COLA's refinement: action policy, action orders, minimum number of actions, the oracle, proximity.

An *action* (i, k) sets x'_ik <- q_ik. Only actions in the edit set E = {(i, k) : x_ik != q_ik} change
anything, so every order here is an order of E (the package draws all N*P actions, but with exact
Shapley values the no-op actions have phi = 0 and come last anyway). For a budget C the refined
counterfactual takes the first C actions; C* is the smallest C at which every row gets its target label
y*_i = f(q_i). The reported ratio is C* / |E|.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ORDERS = ("sample", "greedy", "random")


def edit_mask(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    """E as an (N, P) boolean mask: the features where the factual and its composed counterfactual differ."""
    return np.asarray(X) != np.asarray(q)


def action_policy(phi: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """varpi = |phi| / sum |phi| (plus ``eps``, renormalised): a probability over the N*P actions."""
    w = np.abs(np.asarray(phi, dtype=float)) + eps
    return w / w.sum()


def action_order(phi: np.ndarray, E: np.ndarray, mode: str = "sample", rng=None, eps: float = 1e-12) -> np.ndarray:
    """An order of the edit set E as flat indices i*P + k.

    ``sample`` (xai-cola's default): draw all actions without replacement with probabilities varpi;
    ``greedy``: descending varpi (ties by index); ``random``: uniform (the random-actions baseline; phi unused).
    """
    idx = np.flatnonzero(np.asarray(E).ravel())
    if mode == "random":
        return (np.random.default_rng(0) if rng is None else rng).permutation(idx)
    w = action_policy(phi, eps).ravel()[idx]
    if mode == "greedy":
        return idx[np.argsort(-w, kind="stable")]
    if mode == "sample":
        if idx.size == 0:
            return idx
        rng = np.random.default_rng(42) if rng is None else rng
        return rng.choice(idx, size=idx.size, replace=False, p=w / w.sum())
    raise ValueError(f"unknown action order {mode!r}; allowed: {', '.join(ORDERS)}")


def apply_actions(X: np.ndarray, q: np.ndarray, order: np.ndarray, C: int) -> np.ndarray:
    """x' = x with the first C actions of ``order`` applied."""
    Xr = np.array(X, dtype=float, copy=True)
    P = Xr.shape[1]
    sel = np.asarray(order[:C], dtype=int)
    Xr[sel // P, sel % P] = np.asarray(q)[sel // P, sel % P]
    return Xr


@dataclass
class MinActions:
    c_star: int           # smallest C with every row at its target label
    curve: np.ndarray     # curve[C] = fraction of rows at target after C actions, C = 0..|E|
    n_edits: int          # |E|

    @property
    def ratio(self) -> float:
        return self.c_star / self.n_edits if self.n_edits else 0.0


def min_actions(predict, X: np.ndarray, q: np.ndarray, y_star: np.ndarray, order: np.ndarray) -> MinActions:
    """Exact scan of every prefix of ``order``: one model call on the N + |order| intermediate row states."""
    X = np.asarray(X, dtype=float)
    N, P = X.shape
    order = np.asarray(order, dtype=int)
    rows, cols = order // P, order % P
    cur = X.copy()
    states = np.empty((len(order), P))
    for t, (i, k) in enumerate(zip(rows, cols)):
        cur[i, k] = q[i, k]
        states[t] = cur[i]
    ok = np.asarray(predict(np.vstack([X, states]))) == np.concatenate([y_star, np.asarray(y_star)[rows]])
    status = ok[:N].copy()
    count = int(status.sum())
    curve = np.empty(len(order) + 1)
    curve[0] = count / N
    c_star = 0 if count == N else None
    for t in range(len(order)):
        i = rows[t]
        count += int(ok[N + t]) - int(status[i])
        status[i] = ok[N + t]
        curve[t + 1] = count / N
        if c_star is None and count == N:
            c_star = t + 1
    if c_star is None:
        raise RuntimeError("min_actions: applying every action does not reach the target; is y_star = f(q)?")
    return MinActions(int(c_star), curve, len(order))


def oracle_min_edits(predict, X: np.ndarray, q: np.ndarray, y_star: np.ndarray) -> np.ndarray:
    """Per row, the exact minimum number of edits (a subset of E_i moved to q_i) that gives f = y*_i.

    Brute force over the 2^|E_i| subsets of each row (rows decouple once q is fixed); the sum over rows is
    a lower bound on C* for any action order.
    """
    from .pshap import coalition_masks

    X, q = np.asarray(X, dtype=float), np.asarray(q, dtype=float)
    best = np.empty(len(X), dtype=int)
    for i in range(len(X)):
        e = np.flatnonzero(X[i] != q[i])
        if len(e) > 20:
            raise ValueError(f"oracle_min_edits: row {i} has {len(e)} edits; brute force is limited to 20")
        masks = coalition_masks(len(e)) if len(e) else np.zeros((1, 0), dtype=bool)
        Z = np.repeat(X[i][None, :], len(masks), axis=0)
        Z[:, e] = np.where(masks, q[i, e][None, :], X[i, e][None, :])
        ok = np.asarray(predict(Z)) == y_star[i]
        sizes = masks.sum(1)
        if not ok.any():
            raise RuntimeError(f"oracle_min_edits: row {i} never reaches its target; is y_star = f(q)?")
        best[i] = sizes[ok].min()
    return best


def proximity_violations(X: np.ndarray, q: np.ndarray, X_ref: np.ndarray) -> dict:
    """Rows where the refined x' is farther from x than q is, in L0, L1 and L2 (exact comparisons)."""
    X, q, X_ref = (np.asarray(a, dtype=float) for a in (X, q, X_ref))
    dr, dq = np.abs(X_ref - X), np.abs(q - X)
    return {
        "L0": int(((dr > 0).sum(1) > (dq > 0).sum(1)).sum()),
        "L1": int((dr.sum(1) > dq.sum(1)).sum()),
        "L2": int((np.sqrt((dr**2).sum(1)) > np.sqrt((dq**2).sum(1))).sum()),
    }
