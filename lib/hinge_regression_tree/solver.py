"""The HRT node solver: fit a hinge (min or max of two affine pieces) by damped Gauss-Newton.

At a node with inputs X (n x d) and targets z, write x~ = [x; 1] and theta in R^{d+1}. The two envelopes are

    min:  y^(x) = min(theta_1' x~, theta_2' x~)        max:  y^(x) = max(theta_1' x~, theta_2' x~)

and the split objective is J(theta_1, theta_2) = (1/n) sum_i (z_i - y^(x_i))^2; we report RMSE = sqrt(J).
The split hyperplane is w = theta_1 - theta_2 (min) or theta_2 - theta_1 (max): x~'w < 0 goes left, and the
left side is the one theta_1 predicts.

Within a fixed partition (L, R) the residual is affine in (theta_1, theta_2) with the block-diagonal Jacobian
diag(X~_L, X~_R), so one Gauss-Newton step lands on the block ridge-OLS solution theta* (each side refitted on its
own points). The damped step is theta <- theta + s (theta* - theta): a fixed s, or backtracking from s = 1 that
halves s until the hinge objective (with the partition the trial theta induces) decreases.

The stopping rules and defaults follow the authors' code (github.com/Hongyi-Li-sz/Hinge-Regression-Tree, MIT); the
code here is written from the paper's definitions, not copied.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

ENVELOPES = ("min", "max")
STOP_REASONS = ("partition", "tol", "no_descent", "invalid_step", "singular", "cap")

# Backtracking constants (as in the paper's code): start at s = 1, halve, at most 10 halvings, never below 1e-4,
# accept the first s whose objective beats the current one by more than 1e-8.
BT_SHRINK = 0.5
BT_MIN_STEP = 1e-4
BT_MAX_HALVINGS = 10
BT_IMPROVE = 1e-8
RCOND = 1e-12


def add_bias(X: np.ndarray) -> np.ndarray:
    """[X, 1]: the design matrix with a trailing column of ones."""
    X = np.asarray(X, dtype=float)
    return np.hstack([X, np.ones((X.shape[0], 1))])


def penalty_matrix(n_features: int, alpha: float) -> np.ndarray:
    """alpha * I on the weights, 0 on the bias (the last coordinate)."""
    P = alpha * np.eye(n_features + 1)
    P[-1, -1] = 0.0
    return P


def ridge_ols(X: np.ndarray, z: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """theta = argmin ||z - X~ theta||^2 + alpha ||theta_{1:d}||^2, the bias unpenalised; returns [w, b].

    Equal to (X~'X~ + alpha I')^{-1} X~'z whenever that matrix is invertible. It is computed on centred data
    (the unpenalised bias absorbs the centring), which keeps deep, narrow nodes well conditioned; a singular
    system (duplicated rows, constant features, too few points) gets the minimum-norm least-squares weights.
    """
    X = np.asarray(X, dtype=float)
    z = np.asarray(z, dtype=float)
    n, d = X.shape
    if n == 0:
        return np.zeros(d + 1)
    mu = X.mean(axis=0)
    zbar = z.mean()
    Xc = X - mu
    A = Xc.T @ Xc
    if alpha > 0:
        A[np.diag_indices(d)] += alpha
    b = Xc.T @ (z - zbar)
    w = np.linalg.lstsq(A, b, rcond=RCOND)[0] if d > 0 else np.zeros(0)
    return np.concatenate([w, [zbar - mu @ w]])


def split_vector(theta1: np.ndarray, theta2: np.ndarray, envelope: str) -> np.ndarray:
    """The hyperplane w with x~'w < 0 <=> x goes left (the side theta_1 predicts)."""
    return theta1 - theta2 if envelope == "min" else theta2 - theta1


def hinge_predict(Xt: np.ndarray, theta1: np.ndarray, theta2: np.ndarray, envelope: str) -> np.ndarray:
    """The envelope min/max(X~ theta_1, X~ theta_2) on a design matrix X~ (with the bias column)."""
    p1, p2 = Xt @ theta1, Xt @ theta2
    return np.minimum(p1, p2) if envelope == "min" else np.maximum(p1, p2)


def hinge_objective(Xt, z, theta1, theta2, envelope, min_seg=1):
    """(valid, RMSE, left mask) of the hinge under (theta_1, theta_2) with the partition they induce.

    ``valid`` is False when a side holds fewer than ``min_seg`` points.
    """
    left = (Xt @ split_vector(theta1, theta2, envelope)) < 0
    n_left = int(left.sum())
    valid = min_seg <= n_left <= len(z) - min_seg
    pred = np.where(left, Xt @ theta1, Xt @ theta2)
    return valid, float(np.sqrt(np.mean((z - pred) ** 2))), left


def gauss_newton_step(X, z, theta1, theta2, left, alpha=0.0):
    """One (ridge-regularised) Gauss-Newton step from the explicit Jacobian, for a fixed partition ``left``.

    The residual r(theta) = z - J theta with J = [[X~_L, 0], [0, X~_R]] (rows in data order). The step solves
    (J'J + alpha P) delta = J'r - alpha P theta, i.e. it minimises ||z - J(theta + delta)||^2 +
    alpha ||P^{1/2}(theta + delta)||^2. Returns theta + delta split into its two blocks. This is the textbook
    form; the solver uses the equivalent block refit :func:`ridge_ols` on each side.
    """
    Xt = add_bias(X)
    n, p = Xt.shape
    left = np.asarray(left, dtype=bool)
    J = np.zeros((n, 2 * p))
    J[left, :p] = Xt[left]
    J[~left, p:] = Xt[~left]
    theta = np.concatenate([theta1, theta2])
    r = np.asarray(z, dtype=float) - J @ theta
    P = np.zeros((2 * p, 2 * p))
    P[:p, :p] = penalty_matrix(p - 1, alpha)
    P[p:, p:] = penalty_matrix(p - 1, alpha)
    delta = np.linalg.solve(J.T @ J + P, J.T @ r - P @ theta)
    new = theta + delta
    return new[:p], new[p:]


@dataclass
class SplitResult:
    """One envelope direction's solve at a node."""

    envelope: str
    theta1: np.ndarray
    theta2: np.ndarray
    w: np.ndarray  # split hyperplane on [x, 1]: x~'w < 0 goes left
    left: np.ndarray  # boolean mask over the node's points
    rmse: float  # final hinge RMSE (the node objective)
    n_iter: int  # loop passes (each evaluates the partition and, unless stopping, takes one damped GN step)
    stop: str  # why it stopped: one of STOP_REASONS
    trace: np.ndarray  # node RMSE before the first step and after each accepted step
    steps: list = field(default_factory=list)  # the step size s taken at each accepted step
    valid: bool = True  # False when the final partition leaves a side with too few points


def initial_thetas(X, z, alpha, rng: np.random.Generator, attempt: int = 0):
    """Starting pieces (theta_1, theta_2) for attempt 0, 1, 2, ...; None when every feature is constant.

    Attempt 0 is the paper's start: split at the median of the first non-constant feature and OLS-fit each half
    (falling back to the global fit +- U(0, 0.005) when a half has fewer than d + 1 points, and perturbing two
    nearly identical pieces the same way). Its two planes need not cross inside the data (on an odd target such
    as sin(3x) they are parallel), and then both envelopes start from a partition with an empty side. Attempt 1
    therefore starts from the global fit tilted by +-eps along that median split, theta_{1,2} = theta_g +- eps w
    with x~'w = x_j - median: both envelopes then start from the median partition itself. Attempts 2, 3, ...
    repeat the paper's start on the next non-constant features.
    """
    n, d = X.shape
    varying = np.flatnonzero(X.max(axis=0) > X.min(axis=0))
    if n < d + 1 or varying.size == 0:
        return None
    j = varying[0] if attempt <= 1 else varying[(attempt - 1) % varying.size]
    med = np.median(X[:, j])
    lower = X[:, j] < med
    if attempt == 1:
        base = ridge_ols(X, z, alpha)
        w = np.zeros(d + 1)
        w[j], w[-1] = 1.0, -med
        w /= X[:, j].std()
        eps = 1e-3 * (z.std() + 1e-12)
        return base + eps * w, base - eps * w
    if lower.sum() < d + 1 or (~lower).sum() < d + 1:
        base = ridge_ols(X, z, alpha)
        eps = rng.random(d + 1) * 0.005
        t1, t2 = base + eps, base - eps
    else:
        t1, t2 = ridge_ols(X[lower], z[lower], alpha), ridge_ols(X[~lower], z[~lower], alpha)
        if np.allclose(t1, t2, atol=1e-6):
            eps = rng.random(d + 1) * 0.005
            t1, t2 = t1 + eps, t2 - eps
    if np.allclose(t1, t2, atol=1e-9) and d > 0:
        t1 = t1.copy()
        t1[0] += 1e-3
    return t1, t2


def solve_direction(
    X: np.ndarray,
    z: np.ndarray,
    theta1: np.ndarray,
    theta2: np.ndarray,
    envelope: str = "min",
    step: Union[str, float] = "auto",
    ridge_alpha: float = 0.0,
    max_iter: int = 100,
    tol: float = 1e-6,
    min_seg: int = 5,
    partition_stop: bool = True,
) -> Optional[SplitResult]:
    """Damped Gauss-Newton on one envelope from (theta1, theta2). None if the start is already invalid.

    Each pass: (a) partition by the current pieces, stop if unchanged since the last pass (``partition_stop``);
    (b) refit each side by ridge-OLS (the Gauss-Newton target theta*); (c) move theta <- theta + s (theta* - theta)
    with the fixed ``step`` s, or with ``step="auto"`` the first s in 1, 1/2, 1/4, ... (>= 1e-4, <= 10 halvings)
    that lowers the objective by more than 1e-8 (stop if none does); (d) stop when both pieces move less than
    ``tol``. A fixed step that leaves a side with fewer than ``min_seg`` points is undone and stops the solve.
    """
    if envelope not in ENVELOPES:
        raise ValueError(f"envelope must be one of {ENVELOPES}, got {envelope!r}")
    auto = isinstance(step, str)
    if auto and step != "auto":
        raise ValueError(f"step must be 'auto' or a number in (0, 1], got {step!r}")
    Xt = add_bias(X)
    n = len(z)
    th1, th2 = np.array(theta1, dtype=float), np.array(theta2, dtype=float)
    valid, rmse, _ = hinge_objective(Xt, z, th1, th2, envelope, min_seg)
    if not valid:
        return None
    trace, steps = [rmse], []
    prev = None
    stop, n_iter = "cap", 0
    for it in range(1, max_iter + 1):
        n_iter = it
        left = (Xt @ split_vector(th1, th2, envelope)) < 0
        if partition_stop and prev is not None and np.array_equal(left, prev):
            stop = "partition"
            break
        prev = left
        n_left = int(left.sum())
        if n_left < min_seg or n - n_left < min_seg:  # cannot happen after a valid start; kept as a guard
            stop = "invalid_step"
            break
        t1 = ridge_ols(X[left], z[left], ridge_alpha)
        t2 = ridge_ols(X[~left], z[~left], ridge_alpha)
        if not (np.all(np.isfinite(t1)) and np.all(np.isfinite(t2))):
            stop = "singular"
            break
        if auto:
            s, accepted = 1.0, False
            for _ in range(BT_MAX_HALVINGS):
                if s < BT_MIN_STEP:
                    break
                c1, c2 = th1 + s * (t1 - th1), th2 + s * (t2 - th2)
                ok, r_try, _ = hinge_objective(Xt, z, c1, c2, envelope, min_seg)
                if ok and r_try < rmse - BT_IMPROVE:
                    accepted = True
                    break
                s *= BT_SHRINK
            if not accepted:
                stop = "no_descent"
                break
        else:
            s = float(step)
            c1, c2 = th1 + s * (t1 - th1), th2 + s * (t2 - th2)
            ok, r_try, _ = hinge_objective(Xt, z, c1, c2, envelope, min_seg)
            if not ok:
                stop = "invalid_step"
                break
        moved1, moved2 = np.linalg.norm(c1 - th1), np.linalg.norm(c2 - th2)
        th1, th2, rmse = c1, c2, r_try
        trace.append(rmse)
        steps.append(s)
        if moved1 < tol and moved2 < tol:
            stop = "tol"
            break
    w = split_vector(th1, th2, envelope)
    valid, rmse, left = hinge_objective(Xt, z, th1, th2, envelope, min_seg)
    return SplitResult(envelope, th1, th2, w, left, rmse, n_iter, stop, np.array(trace), steps, valid)


@dataclass
class NodeSolve:
    """Everything tried at one node: the chosen split (or None) and each envelope's result."""

    best: Optional[SplitResult]
    results: list  # SplitResult or None, per (attempt, envelope)
    attempts: int


def hinge_split(
    X,
    z,
    step: Union[str, float] = "auto",
    ridge_alpha: float = 0.0,
    max_iter: int = 100,
    tol: float = 1e-6,
    min_points: int = 5,
    rng: Optional[np.random.Generator] = None,
    envelopes=ENVELOPES,
    attempts: int = 3,
    partition_stop: bool = True,
) -> NodeSolve:
    """Fit the best hinge split of (X, z): solve each envelope from the same start, keep the lower RMSE.

    Up to ``attempts`` starts are tried while no envelope yields a valid split (see :func:`initial_thetas`: the
    paper's start, then a tilted global fit, then the paper's start on other features). The authors' code
    retries the paper's start, which differs only through the random perturbation of coinciding pieces, so
    when its two planes do not cross inside the data every retry fails the same way. Each side must keep
    max(min_points, d + 1) points.
    """
    X = np.asarray(X, dtype=float)
    z = np.asarray(z, dtype=float)
    rng = rng if rng is not None else np.random.default_rng(0)
    n, d = X.shape
    min_seg = max(int(min_points), d + 1)
    results: list = []
    if n < 2 * min_seg:
        return NodeSolve(None, results, 0)
    for attempt in range(1, attempts + 1):
        start = initial_thetas(X, z, ridge_alpha, rng, attempt - 1)
        if start is None:
            return NodeSolve(None, results, attempt)
        best = None
        for env in envelopes:
            res = solve_direction(X, z, *start, envelope=env, step=step, ridge_alpha=ridge_alpha,
                                  max_iter=max_iter, tol=tol, min_seg=min_seg, partition_stop=partition_stop)
            results.append(res)
            if res is not None and res.valid and (best is None or res.rmse < best.rmse):
                best = res
        if best is not None:
            return NodeSolve(best, results, attempt)
    return NodeSolve(None, results, attempts)
