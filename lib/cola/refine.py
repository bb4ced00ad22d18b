"""COLA's refinement: action policy, action orders, minimum number of actions, the oracle, proximity.

An *action* (i, k) sets x'_ik <- q_ik. Only actions in the edit set E = {(i, k) : x_ik != q_ik} change
anything, so every order here is an order of E (the package draws all N*P actions, but with exact
Shapley values the no-op actions have phi = 0 and come last anyway). For a budget C the refined
counterfactual takes the first C actions; C* is the smallest C at which every row gets its target label
y*_i = f(q_i). The reported ratio is C* / |E|.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import comb
from typing import Optional

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


@lru_cache(maxsize=256)
def _subsets_of_size(e: int, k: int) -> np.ndarray:
    """All C(e, k) subsets of size k of e items as a (C(e, k), e) boolean array."""
    out = np.zeros((comb(e, k), e), dtype=bool)
    for r, idx in enumerate(combinations(range(e), k)):
        out[r, list(idx)] = True
    return out


def oracle_min_edits(predict, X: np.ndarray, q: np.ndarray, y_star: np.ndarray,
                     max_states: Optional[int] = None, linear=None) -> np.ndarray:
    """Per row, the exact minimum number of edits (a subset of E_i moved to q_i) that gives f = y*_i.

    Rows decouple once q is fixed, so the sum over rows is a lower bound on C* for any action order. Subsets are
    tried by increasing size k = 0, 1, 2, ... (all rows of one size in one model call), so a row stops at its
    first size that works. ``max_states``: at most this many states evaluated per row; a row that needs more
    gets -1 (unknown). ``None``: no budget, but rows with more than 20 edits are refused.

    ``linear=(w, b)``: the model predicts y = 1 iff w.z + b >= 0 (logistic regression at p = 0.5). Then the
    minimum is exact by sorting: the k edits with the largest gains w_k (q_k - x_k) give the largest score any k
    edits can give. The result is checked with ``predict`` (the first size it accepts, from there up).
    """
    X, q = np.asarray(X, dtype=float), np.asarray(q, dtype=float)
    y_star = np.asarray(y_star)
    if linear is not None:
        return _linear_min_edits(predict, X, q, y_star, *linear)
    N = len(X)
    edits = [np.flatnonzero(X[i] != q[i]) for i in range(N)]
    if max_states is None and max(len(e) for e in edits) > 20:
        raise ValueError(f"oracle_min_edits: a row has {max(len(e) for e in edits)} edits; brute force without "
                         "max_states is limited to 20")
    best = np.full(N, -1, dtype=int)
    used = np.zeros(N, dtype=np.int64)
    open_rows = list(range(N))
    k = 0
    while open_rows:
        blocks, owners = [], []
        still = []
        for i in open_rows:
            e = edits[i]
            if k > len(e):
                raise RuntimeError(f"oracle_min_edits: row {i} never reaches its target; is y_star = f(q)?")
            n_k = comb(len(e), k)
            if max_states is not None and used[i] + n_k > max_states:
                continue  # over budget: unknown (-1)
            used[i] += n_k
            masks = _subsets_of_size(len(e), k)
            Z = np.repeat(X[i][None, :], len(masks), axis=0)
            Z[:, e] = np.where(masks, q[i, e][None, :], X[i, e][None, :])
            blocks.append(Z)
            owners.append(np.full(len(masks), i))
            still.append(i)
        if not blocks:
            break
        owner = np.concatenate(owners)
        ok = np.asarray(predict(np.vstack(blocks))) == y_star[owner]
        solved = set(np.unique(owner[ok]).tolist())
        for i in solved:
            best[i] = k
        open_rows = [i for i in still if i not in solved]
        k += 1
    return best


def _linear_min_edits(predict, X, q, y_star, w, b):
    w = np.asarray(w, dtype=float).ravel()
    N = len(X)
    best = np.empty(N, dtype=int)
    for i in range(N):
        e = np.flatnonzero(X[i] != q[i])
        sign = 1.0 if y_star[i] == 1 else -1.0
        gain = sign * w[e] * (q[i, e] - X[i, e])
        order = e[np.argsort(-gain, kind="stable")]
        Z = np.repeat(X[i][None, :], len(order) + 1, axis=0)
        for t in range(1, len(order) + 1):  # state t: the t largest gains applied
            Z[t:, order[t - 1]] = q[i, order[t - 1]]
        ok = np.flatnonzero(np.asarray(predict(Z)) == y_star[i])
        if not len(ok):
            raise RuntimeError(f"oracle_min_edits: row {i} never reaches its target; is y_star = f(q)?")
        best[i] = int(ok[0])
    return best


def per_row_prefix(predict, X: np.ndarray, q: np.ndarray, y_star: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Per row, the edits its *own* descending-|phi| order needs to reach y*_i (COLA's ranking without the one
    global order): an upper bound on the row's optimum, a lower one for no order."""
    X, q = np.asarray(X, dtype=float), np.asarray(q, dtype=float)
    blocks, owners, steps = [], [], []
    for i in range(len(X)):
        e = np.flatnonzero(X[i] != q[i])
        order = e[np.argsort(-np.abs(np.asarray(phi)[i, e]), kind="stable")]
        Z = np.repeat(X[i][None, :], len(order) + 1, axis=0)
        for t in range(1, len(order) + 1):
            Z[t:, order[t - 1]] = q[i, order[t - 1]]
        blocks.append(Z)
        owners.append(np.full(len(Z), i))
        steps.append(np.arange(len(Z)))
    owner, step = np.concatenate(owners), np.concatenate(steps)
    ok = np.asarray(predict(np.vstack(blocks))) == np.asarray(y_star)[owner]
    best = np.full(len(X), -1, dtype=int)
    for i in range(len(X)):
        hit = step[(owner == i) & ok]
        if not len(hit):
            raise RuntimeError(f"per_row_prefix: row {i} never reaches its target; is y_star = f(q)?")
        best[i] = int(hit.min())
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
