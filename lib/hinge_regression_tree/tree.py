"""HRTRegressor: the Hinge Regression Tree as a scikit-learn estimator.

Growth (top-down, depth-first): every node fits one ridge-OLS plane theta_single. It stays a leaf (predicting with
theta_single) when its depth reaches ``max_depth``, when its plane's RMSE is <= ``threshold``, when it has fewer
than max(2(d + 1), 2 min_points) points, or when the hinge split fails; otherwise the node solver
(:func:`~lib.hinge_regression_tree.solver.hinge_split`) gives an oblique hyperplane w and the node splits on
sign(x~'w). The fitted model is an oblique model tree with linear leaves.

The tree is stored as flat arrays (``tree_``), so prediction routes all rows level by level. Because growth is
greedy and each node's random stream is keyed by its position (heap index), a tree grown to depth D contains the
tree of every smaller ``max_depth``: :meth:`HRTRegressor.predict_at_depth` reads those off without refitting.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .solver import ENVELOPES, add_bias, hinge_split, ridge_ols


@dataclass
class TreeArrays:
    """A fitted tree. Node 0 is the root; ``left[i] == -1`` marks a leaf."""

    depth: np.ndarray  # (n_nodes,)
    left: np.ndarray  # child ids, -1 for leaves
    right: np.ndarray
    split: np.ndarray  # (n_nodes, d + 1): x~'w < 0 goes left; zeros at leaves
    theta: np.ndarray  # (n_nodes, d + 1): the node's own ridge-OLS plane (used when it is a leaf)
    n_samples: np.ndarray
    heap: np.ndarray  # heap index (root 1, children 2i and 2i + 1)
    stop: list  # leaf reason, or "split"

    @property
    def n_nodes(self) -> int:
        return len(self.depth)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0


def _route(tree: TreeArrays, Xt: np.ndarray, max_depth=None) -> np.ndarray:
    """Node id reached by each row (a leaf, or a node at ``max_depth`` when truncating)."""
    node = np.zeros(Xt.shape[0], dtype=int)
    limit = np.inf if max_depth is None else max_depth
    while True:
        active = (tree.left[node] >= 0) & (tree.depth[node] < limit)
        if not active.any():
            return node
        idx = np.flatnonzero(active)
        cur = node[idx]
        go_left = np.einsum("ij,ij->i", Xt[idx], tree.split[cur]) < 0
        node[idx] = np.where(go_left, tree.left[cur], tree.right[cur])


class HRTRegressor(RegressorMixin, BaseEstimator):
    """Hinge Regression Tree (oblique model tree, splits fitted by damped Gauss-Newton).

    Parameters (defaults as in the authors' ``HRTRegressor``; the paper's kin8nm runs use ``threshold=0,
    max_depth=6, step_size="auto", ridge_alpha=1`` on standardised features):

    threshold : a node whose single-plane RMSE is <= threshold becomes a leaf.
    min_points : each side of a split keeps at least max(min_points, d + 1) points.
    max_depth : depth limit (the root has depth 0).
    step_size : "auto" (backtracking line search) or a fixed damping s in (0, 1].
    ridge_alpha : ridge penalty on the weights (never on the bias) in every node and leaf fit.
    max_iter, tol : the node solver's iteration cap and step tolerance.
    random_state : seeds the small random perturbation used when the two starting pieces coincide
        (None means 0, so fits are deterministic).

    Fitted attributes: ``tree_`` (:class:`TreeArrays`), ``n_leaves_``, ``iter_counts_`` (solver iterations of the
    chosen envelope at each split node, in growth order; ``n_iter_`` is the same as an array), ``solve_log_``
    (one dict per node solve: depth, size, each envelope's iterations, stop reason and objective trace),
    ``n_features_in_``.
    """

    def __init__(
        self,
        threshold=0.03,
        min_points=5,
        max_depth=5,
        step_size=0.1,
        ridge_alpha=0.0,
        max_iter=100,
        tol=1e-6,
        random_state=None,
    ):
        self.threshold = threshold
        self.min_points = min_points
        self.max_depth = max_depth
        self.step_size = step_size
        self.ridge_alpha = ridge_alpha
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # --- parameter checks (ValueError naming the parameter and what is allowed) ---
    def _check_params(self):
        def real(name, v, lo, lo_open=False):
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)
            if not ok or (v <= lo if lo_open else v < lo):
                raise ValueError(f"parameter {name!r} got {v!r}; allowed: a number {'>' if lo_open else '>='} {lo}")

        def integer(name, v, lo):
            if not (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo):
                raise ValueError(f"parameter {name!r} got {v!r}; allowed: an integer >= {lo}")

        if self.threshold is not None:
            real("threshold", self.threshold, -np.inf)
        integer("min_points", self.min_points, 1)
        integer("max_depth", self.max_depth, 0)
        integer("max_iter", self.max_iter, 1)
        real("ridge_alpha", self.ridge_alpha, 0.0)
        real("tol", self.tol, 0.0)
        s = self.step_size
        if isinstance(s, str):
            if s != "auto":
                raise ValueError(f"parameter 'step_size' got {s!r}; allowed: 'auto' or a number in (0, 1]")
        elif not (isinstance(s, numbers.Real) and not isinstance(s, bool) and 0 < s <= 1):
            raise ValueError(f"parameter 'step_size' got {s!r}; allowed: 'auto' or a number in (0, 1]")
        rs = self.random_state
        if rs is not None and not (isinstance(rs, numbers.Integral) and not isinstance(rs, bool) and rs >= 0):
            raise ValueError(f"parameter 'random_state' got {rs!r}; allowed: None or an integer >= 0")

    def fit(self, X, y):
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        n, d = X.shape
        seed = 0 if self.random_state is None else int(self.random_state)
        min_seg = max(int(self.min_points), d + 1)
        step = self.step_size if isinstance(self.step_size, str) else float(self.step_size)
        threshold = -np.inf if self.threshold is None else float(self.threshold)

        nodes = []  # dicts, in creation order
        self.iter_counts_ = []
        self.solve_log_ = []
        stack = [(np.arange(n), 0, 1, None, None)]  # (indices, depth, heap index, parent id, side)
        while stack:
            idx, depth, heap, parent, side = stack.pop()
            node_id = len(nodes)
            if parent is not None:
                nodes[parent][side] = node_id
            Xn, yn = X[idx], y[idx]
            if len(idx) < d + 1:
                theta = np.zeros(d + 1)
                theta[-1] = yn.mean() if len(idx) else 0.0
                stop = "too_few_points_to_fit"
            else:
                theta = ridge_ols(Xn, yn, float(self.ridge_alpha))
                stop = None
            node = {"depth": depth, "left": -1, "right": -1, "split": np.zeros(d + 1), "theta": theta,
                    "n": len(idx), "heap": heap, "stop": stop}
            nodes.append(node)
            if stop is not None:
                continue
            rmse_single = float(np.sqrt(np.mean((yn - add_bias(Xn) @ theta) ** 2)))
            if depth >= self.max_depth:
                node["stop"] = "max_depth"
            elif rmse_single <= threshold:
                node["stop"] = "threshold"
            elif len(idx) < 2 * min_seg:
                node["stop"] = "too_few_points_to_split"
            if node["stop"] is not None:
                continue
            rng = np.random.default_rng([seed, heap])
            solve = hinge_split(Xn, yn, step=step, ridge_alpha=float(self.ridge_alpha), max_iter=self.max_iter,
                                tol=float(self.tol), min_points=self.min_points, rng=rng)
            self.solve_log_.append(_log_entry(node_id, depth, len(idx), solve, rmse_single))
            if solve.best is None:
                node["stop"] = "split_failed"
                continue
            best = solve.best
            self.iter_counts_.append(best.n_iter)
            node["stop"] = "split"
            node["split"] = best.w
            left_mask = best.left
            # push right first so the left subtree is grown first (depth-first, left to right)
            stack.append((idx[~left_mask], depth + 1, 2 * heap + 1, node_id, "right"))
            stack.append((idx[left_mask], depth + 1, 2 * heap, node_id, "left"))

        self.tree_ = TreeArrays(
            depth=np.array([nd["depth"] for nd in nodes]),
            left=np.array([nd["left"] for nd in nodes]),
            right=np.array([nd["right"] for nd in nodes]),
            split=np.array([nd["split"] for nd in nodes]),
            theta=np.array([nd["theta"] for nd in nodes]),
            n_samples=np.array([nd["n"] for nd in nodes]),
            heap=np.array([nd["heap"] for nd in nodes]),
            stop=[nd["stop"] for nd in nodes],
        )
        self.n_iter_ = np.asarray(self.iter_counts_, dtype=int)  # scikit-learn's spelling, per split node
        self.n_leaves_ = int(self.tree_.is_leaf.sum())
        self.depth_ = int(self.tree_.depth.max())
        return self

    # --- prediction ---
    def _design(self, X):
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return add_bias(X)

    def apply(self, X):
        """The leaf id each row lands in."""
        return _route(self.tree_, self._design(X))

    def predict(self, X):
        Xt = self._design(X)
        node = _route(self.tree_, Xt)
        return np.einsum("ij,ij->i", Xt, self.tree_.theta[node])

    def predict_at_depth(self, X, depth: int):
        """Predictions of the same tree cut at ``depth`` (= what ``max_depth=depth`` would have grown)."""
        Xt = self._design(X)
        node = _route(self.tree_, Xt, max_depth=depth)
        return np.einsum("ij,ij->i", Xt, self.tree_.theta[node])

    def predict_depths(self, X, depths) -> dict:
        """{depth: predictions of the tree cut at that depth} for several depths, routing the rows once."""
        Xt = self._design(X)
        t = self.tree_
        want = sorted(set(int(d) for d in depths))
        out = {}
        node = np.zeros(Xt.shape[0], dtype=int)
        level = 0
        while want:
            while want and want[0] <= level:
                out[want.pop(0)] = np.einsum("ij,ij->i", Xt, t.theta[node])
            idx = np.flatnonzero(t.left[node] >= 0)
            if idx.size == 0:
                for d in want:
                    out[d] = np.einsum("ij,ij->i", Xt, t.theta[node])
                break
            cur = node[idx]
            go_left = np.einsum("ij,ij->i", Xt[idx], t.split[cur]) < 0
            node[idx] = np.where(go_left, t.left[cur], t.right[cur])
            level += 1
        return out

    def n_leaves_at_depth(self, depth: int) -> int:
        check_is_fitted(self, "tree_")
        t = self.tree_
        return int(np.sum((t.is_leaf & (t.depth <= depth)) | (t.depth == depth)))

    def n_leaves(self) -> int:
        """Number of leaves (linear pieces, the paper's "segments" K)."""
        check_is_fitted(self, "tree_")
        return self.n_leaves_

    def get_n_leaves(self) -> int:
        """Same as :meth:`n_leaves` (scikit-learn's tree spelling)."""
        return self.n_leaves()

    def get_depth(self) -> int:
        check_is_fitted(self, "tree_")
        return self.depth_

    def split_hyperplanes(self):
        """(node id, w) for every split node; x~'w < 0 goes left, with x~ = [x, 1]."""
        check_is_fitted(self, "tree_")
        t = self.tree_
        return [(int(i), t.split[i].copy()) for i in np.flatnonzero(~t.is_leaf)]


def _log_entry(node_id, depth, n, solve, rmse_single) -> dict:
    """One node solve: every envelope run (with its objective trace) and which one the node kept."""
    return {
        "node": node_id,
        "depth": depth,
        "n": n,
        "rmse_single": rmse_single,
        "chosen": solve.best.envelope if solve.best is not None else None,
        "attempts": solve.attempts,
        "n_iter": solve.best.n_iter if solve.best is not None else None,
        "runs": [
            {"envelope": r.envelope, "n_iter": r.n_iter, "stop": r.stop, "trace": r.trace, "valid": r.valid,
             "steps": list(r.steps), "chosen": r is solve.best, "converged": r.converged,
             "no_descent": r.no_descent, "decrement": r.decrement, "longer_search": r.longer_search}
            for r in solve.results if r is not None
        ],
    }


__all__ = ["HRTRegressor", "TreeArrays", "ENVELOPES"]
