"""Baselines: a linear model tree (axis-aligned splits, linear leaves) and the tuned scikit-learn references.

``LinearModelTree`` is a small model tree in the spirit of the ``linear-tree`` package the paper compares with
(LinearTree): each node tries, for every feature, thresholds at up to ``max_bins`` quantiles, fits a least-squares
plane on each side and keeps the split with the smallest summed squared error. Side fits use running sums of
x~x~' and x~z over the sorted feature, so all candidate thresholds of a feature are scored with one batched solve.
Leaves hold their node's least-squares plane. (The ``linear-tree`` package itself dates from 2022 and is not a
dependency here.)
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .solver import add_bias, ridge_ols

LEAF_RIDGE = 1e-6  # a whisker of ridge keeps tiny or collinear sides solvable


def _side_sse(A: np.ndarray, b: np.ndarray, c: np.ndarray, ridge: float) -> np.ndarray:
    """SSE of the (ridge) least-squares plane for batched sufficient statistics A = X~'X~, b = X~'z, c = z'z."""
    p = A.shape[-1]
    reg = np.full(p, ridge)
    reg[-1] = 0.0
    M = A + np.diag(reg)
    try:
        theta = np.linalg.solve(M, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        theta = np.einsum("kij,kj->ki", np.linalg.pinv(M), b)
    fit = np.einsum("ki,ki->k", theta, b) * 2 - np.einsum("ki,kij,kj->k", theta, A, theta)
    return np.maximum(c - fit, 0.0)


class LinearModelTree(RegressorMixin, BaseEstimator):
    """Axis-aligned model tree with linear leaves ("LinearTree-lite").

    max_depth : depth limit (root at depth 0).
    min_samples_split : a node with fewer points is a leaf.
    min_samples_leaf : each side of a split keeps at least this many points.
    max_bins : candidate thresholds per feature (quantiles of the node's values).
    """

    def __init__(self, max_depth=5, min_samples_split=20, min_samples_leaf=10, max_bins=32):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins

    def _check_params(self):
        for name, lo in (("max_depth", 0), ("min_samples_split", 2), ("min_samples_leaf", 1), ("max_bins", 2)):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo):
                raise ValueError(f"parameter {name!r} got {v!r}; allowed: an integer >= {lo}")

    def _best_split(self, X, z):
        n, d = X.shape
        mu = X.mean(axis=0)
        Xt = add_bias(X - mu)  # centring per node keeps the running sums well conditioned
        zc = z - z.mean()
        outer = np.einsum("ni,nj->nij", Xt, Xt)
        A_all, b_all, c_all = outer.sum(0), Xt.T @ zc, zc @ zc
        leaf = self.min_samples_leaf
        best = (np.inf, None, None)
        for j in range(d):
            order = np.argsort(X[:, j], kind="stable")
            xs = X[order, j]
            if xs[0] == xs[-1]:
                continue
            qs = np.unique(np.quantile(xs, np.linspace(0, 1, self.max_bins + 1)[1:-1]))
            cut = np.searchsorted(xs, qs, side="right")  # points with x <= q go left
            cut = np.unique(cut[(cut >= leaf) & (cut <= n - leaf)])
            if cut.size == 0:
                continue
            A_cum = np.cumsum(outer[order], axis=0)[cut - 1]
            b_cum = np.cumsum(Xt[order] * zc[order, None], axis=0)[cut - 1]
            c_cum = np.cumsum(zc[order] ** 2)[cut - 1]
            sse = _side_sse(A_cum, b_cum, c_cum, LEAF_RIDGE) + _side_sse(
                A_all - A_cum, b_all - b_cum, c_all - c_cum, LEAF_RIDGE)
            k = int(np.argmin(sse))
            if sse[k] < best[0]:
                lo, hi = xs[cut[k] - 1], xs[cut[k]]
                best = (float(sse[k]), j, 0.5 * (lo + hi))
        return best

    def fit(self, X, y):
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        n, d = X.shape
        feats, thrs, lefts, rights, depths, thetas = [], [], [], [], [], []
        stack = [(np.arange(n), 0, None, None)]
        while stack:
            idx, depth, parent, side = stack.pop()
            node = len(feats)
            if parent is not None:
                (lefts if side == "left" else rights)[parent] = node
            Xn, yn = X[idx], y[idx]
            theta = ridge_ols(Xn, yn, LEAF_RIDGE) if len(idx) > d else np.r_[np.zeros(d), yn.mean()]
            feats.append(-1), thrs.append(0.0), lefts.append(-1), rights.append(-1)
            depths.append(depth), thetas.append(theta)
            if depth >= self.max_depth or len(idx) < max(self.min_samples_split, 2 * self.min_samples_leaf):
                continue
            sse_parent = float(np.sum((yn - add_bias(Xn) @ theta) ** 2))
            sse, j, t = self._best_split(Xn, yn)
            if j is None or not sse < sse_parent * (1 - 1e-12):
                continue
            feats[node], thrs[node] = j, t
            go = Xn[:, j] <= t
            stack.append((idx[~go], depth + 1, node, "right"))
            stack.append((idx[go], depth + 1, node, "left"))
        self.feature_ = np.array(feats)
        self.threshold_ = np.array(thrs)
        self.children_left_ = np.array(lefts)
        self.children_right_ = np.array(rights)
        self.node_depth_ = np.array(depths)
        self.theta_ = np.array(thetas)
        self.n_leaves_ = int(np.sum(self.children_left_ < 0))
        return self

    def _route(self, X, max_depth=None):
        node = np.zeros(X.shape[0], dtype=int)
        limit = np.inf if max_depth is None else max_depth
        while True:
            active = (self.children_left_[node] >= 0) & (self.node_depth_[node] < limit)
            if not active.any():
                return node
            idx = np.flatnonzero(active)
            cur = node[idx]
            go = X[idx, self.feature_[cur]] <= self.threshold_[cur]
            node[idx] = np.where(go, self.children_left_[cur], self.children_right_[cur])

    def _predict(self, X, max_depth=None):
        check_is_fitted(self, "theta_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        node = self._route(X, max_depth)
        return np.einsum("ij,ij->i", add_bias(X), self.theta_[node])

    def predict(self, X):
        return self._predict(X)

    def predict_at_depth(self, X, depth: int):
        """Predictions of the same tree cut at ``depth`` (= what ``max_depth=depth`` would have grown)."""
        return self._predict(X, depth)

    def n_leaves_at_depth(self, depth: int) -> int:
        check_is_fitted(self, "theta_")
        leaf = self.children_left_ < 0
        return int(np.sum((leaf & (self.node_depth_ <= depth)) | (self.node_depth_ == depth)))

    def get_n_leaves(self) -> int:
        check_is_fitted(self, "theta_")
        return self.n_leaves_


def n_leaves(model) -> float:
    """Leaves of a fitted model (the last step of a pipeline); NaN for models without leaves."""
    est = model[-1] if hasattr(model, "steps") else model
    if hasattr(est, "get_n_leaves"):
        return float(est.get_n_leaves())
    return float("nan")
