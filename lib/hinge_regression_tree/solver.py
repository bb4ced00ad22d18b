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
CONVERGED_STOPS = ("partition", "tol")
# Why backtracking found no step (recorded at every "no_descent" stop):
#   stationary: the full Gauss-Newton step would lower the objective it minimises (the ridge-penalised SSE of the
#       fixed partition) by at most BT_IMPROVE in RMSE units: the pieces are at a stationary point;
#   ridge: that step would lower the penalised objective, but not the plain RMSE that the line search compares
#       (with ridge_alpha > 0 the refit minimises another objective than the one the acceptance test measures);
#   kinks: the step would lower the plain RMSE on the fixed partition, but every trial step moves points across
#       the hinge and raises it (the trial steps stop at 2^-9, BT_MAX_HALVINGS halvings).
# Each no-descent stop also records whether a longer search (steps 2^-10 ... 2^-30) would have found a step.
NO_DESCENT_CAUSES = ("stationary", "ridge", "kinks")

# Backtracking constants (as in the paper's code): start at s = 1, halve, at most 10 halvings, never below 1e-4,
# accept the first s whose objective beats the current one by more than 1e-8.
BT_SHRINK = 0.5
BT_MIN_STEP = 1e-4
BT_MAX_HALVINGS = 10
BT_IMPROVE = 1e-8
RCOND = 1e-12
CENTRING_TOL = 1e-11  # relative rounding level of a variance computed from raw moments


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

    Equal to (X~'X~ + alpha I')^{-1} X~'z whenever that matrix is invertible. It is computed on centred
    moments (the unpenalised bias absorbs the centring). With alpha > 0 the centred system is positive definite
    and solved directly; with alpha = 0 a singular system (duplicated rows, constant features, too few points)
    gets the minimum-norm least-squares weights (zero weights for duplicated rows: the mean).
    """
    X = np.asarray(X, dtype=float)
    z = np.asarray(z, dtype=float)
    return _fit_from_moments([_moments(X, z)], alpha)[0]


def _moments(X: np.ndarray, z: np.ndarray) -> tuple:
    """(n, sum x, sum xx', sum z, sum x z): the sufficient statistics of a least-squares fit."""
    return len(z), X.sum(axis=0), X.T @ X, z.sum(), X.T @ z


def _fit_from_moments(moments: list, alpha: float) -> list:
    """:func:`ridge_ols` of several point sets from their sufficient statistics, in one batched solve.

    Centred inside (the bias unpenalised). alpha > 0: the centred systems are positive definite, solved
    directly; alpha = 0: minimum-norm least squares through a symmetric pseudo-inverse (singular systems from
    constant features or too few points included). An empty set gets zeros.
    """
    d = len(moments[0][1])
    n = np.array([m[0] for m in moments], dtype=float)
    safe = np.maximum(n, 1.0)
    mu = np.array([m[1] for m in moments]) / safe[:, None]
    zbar = np.array([m[3] for m in moments]) / safe
    A = np.array([m[2] for m in moments]) - n[:, None, None] * mu[:, :, None] * mu[:, None, :]
    b = np.array([m[4] for m in moments]) - mu * (zbar * n)[:, None]
    if d == 0:
        w = np.zeros((len(moments), 0))
    elif alpha > 0:
        A[:, np.arange(d), np.arange(d)] += alpha
        w = np.linalg.solve(A, b[..., None])[..., 0]
    else:  # symmetric pseudo-inverse: eigenvalues below RCOND times the largest, or at the rounding level of
        # the centring (sum xx' - n mu mu'), count as zero
        lam, V = np.linalg.eigh(A)
        raw = np.einsum("kii->k", np.array([m[2] for m in moments]))[:, None]
        keep = (lam > RCOND * np.maximum(lam[:, -1:], 0.0)) & (lam > CENTRING_TOL * raw)
        inv = np.divide(1.0, lam, out=np.zeros_like(lam), where=keep & (lam > 0))
        w = np.einsum("kij,kj->ki", V, inv * np.einsum("kji,kj->ki", V, b))
    theta = np.concatenate([w, (zbar - np.einsum("ki,ki->k", mu, w))[:, None]], axis=1)
    theta[n == 0] = 0.0
    return list(theta)


def refit_sides(X: np.ndarray, z: np.ndarray, left: np.ndarray, alpha: float, total: tuple) -> tuple:
    """(theta_L, theta_R): ridge-OLS on each side of a partition, the Gauss-Newton target.

    ``total`` = :func:`_moments` of all points; the smaller side's moments are summed directly and the larger
    side's taken as the difference, so one refit costs O(min(n_L, n_R) d^2). Equal to ``ridge_ols`` on each side
    up to rounding (a unit test checks it).
    """
    n_left = int(np.count_nonzero(left))
    small = left if 2 * n_left <= len(z) else ~left
    ms = _moments(X[small], z[small])
    mb = tuple(t - u for t, u in zip(total, ms))
    a, b = _fit_from_moments([ms, mb], alpha)
    return (a, b) if small is left else (b, a)


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
    no_descent: str = ""  # for stop == "no_descent": one of NO_DESCENT_CAUSES (see :func:`no_descent_cause`)
    decrement: float = float("nan")  # for stop == "no_descent": the Gauss-Newton decrement at the stop
    longer_search: bool = False  # for stop == "no_descent": a step below 2^-9 would have been accepted

    @property
    def converged(self) -> bool:
        """Stopped at an unchanged partition, a step below tol, or a stationary point (see CONVERGED_STOPS)."""
        return self.stop in CONVERGED_STOPS or (self.stop == "no_descent" and self.no_descent == "stationary")


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


def _envelope_rmse(a: np.ndarray, b: np.ndarray, z: np.ndarray, envelope: str, min_seg: int):
    """(valid, RMSE, left) of the hinge from the two pieces' predictions a = X~theta_1, b = X~theta_2.

    The side theta_1 predicts (left) is where a < b (min) or a > b (max), so the prediction is min(a, b) or
    max(a, b); equal to :func:`hinge_objective` up to rounding.
    """
    if envelope == "min":
        left, pred = a < b, np.minimum(a, b)
    else:
        left, pred = a > b, np.maximum(a, b)
    n_left = int(np.count_nonzero(left))
    r = z - pred
    return min_seg <= n_left <= len(z) - min_seg, float(np.sqrt(r @ r / len(z))), left


def no_descent_cause(z, left, p1, p2, q1, q2, th1, th2, t1, t2, ridge_alpha, envelope, min_seg) -> tuple:
    """(cause, decrement, longer_search) at a stop where backtracking found no step; see NO_DESCENT_CAUSES.

    p = the current pieces' predictions, q = the Gauss-Newton target's (t1, t2 refitted on the fixed partition
    ``left``). The decrement is sqrt(J_pen(theta)) - sqrt(J_pen(theta*)) with J_pen = (SSE + alpha (||w_1||^2 +
    ||w_2||^2)) / n on that partition: what the full step would gain on the objective it minimises.
    ``longer_search``: whether one of the steps 2^-10, ..., 2^-30 (beyond the paper's 10 halvings) would have
    passed the acceptance test.
    """
    n = len(z)

    def pen(a, b, u1, u2):
        r = z - np.where(left, a, b)
        return (r @ r + ridge_alpha * (u1[:-1] @ u1[:-1] + u2[:-1] @ u2[:-1])) / n

    r_now = z - np.where(left, p1, p2)
    rmse = float(np.sqrt(r_now @ r_now / n))
    longer = False
    for k in range(BT_MAX_HALVINGS, 31):
        s = 2.0 ** -k
        ok, r_try, _ = _envelope_rmse(p1 + s * (q1 - p1), p2 + s * (q2 - p2), z, envelope, min_seg)
        if ok and r_try < rmse - BT_IMPROVE:
            longer = True
            break
    decrement = float(np.sqrt(pen(p1, p2, th1, th2)) - np.sqrt(pen(q1, q2, t1, t2)))
    if decrement <= BT_IMPROVE:
        return "stationary", decrement, longer
    r_target = z - np.where(left, q1, q2)
    gain = rmse - float(np.sqrt(r_target @ r_target / n))
    return ("ridge" if gain <= BT_IMPROVE else "kinks"), decrement, longer


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
    that lowers the objective by more than 1e-8 (stop if none does, recording why: :func:`no_descent_cause`);
    (d) stop when both pieces move less than ``tol``. A fixed step that leaves a side with fewer than ``min_seg``
    points is undone and stops the solve.

    The pieces' predictions are carried along (a trial step's predictions are p + s (q - p)), so a trial costs
    O(n) instead of a matrix-vector product.
    """
    if envelope not in ENVELOPES:
        raise ValueError(f"envelope must be one of {ENVELOPES}, got {envelope!r}")
    auto = isinstance(step, str)
    if auto and step != "auto":
        raise ValueError(f"step must be 'auto' or a number in (0, 1], got {step!r}")
    X = np.asarray(X, dtype=float)
    z = np.asarray(z, dtype=float)
    Xt = add_bias(X)
    n = len(z)
    th1, th2 = np.array(theta1, dtype=float), np.array(theta2, dtype=float)
    p1, p2 = Xt @ th1, Xt @ th2
    total = _moments(X, z)
    valid, rmse, left = _envelope_rmse(p1, p2, z, envelope, min_seg)
    if not valid:
        return None
    trace, steps = [rmse], []
    prev = None
    stop, n_iter, cause, decrement, longer = "cap", 0, "", float("nan"), False
    for it in range(1, max_iter + 1):
        n_iter = it
        if partition_stop and prev is not None and np.array_equal(left, prev):
            stop = "partition"
            break
        prev = left
        n_left = int(np.count_nonzero(left))
        if n_left < min_seg or n - n_left < min_seg:  # cannot happen after a valid start; kept as a guard
            stop = "invalid_step"
            break
        t1, t2 = refit_sides(X, z, left, ridge_alpha, total)
        if not (np.all(np.isfinite(t1)) and np.all(np.isfinite(t2))):
            stop = "singular"
            break
        q1, q2 = Xt @ t1, Xt @ t2
        if auto:
            s, accepted = 1.0, False
            for _ in range(BT_MAX_HALVINGS):
                if s < BT_MIN_STEP:
                    break
                a, b = p1 + s * (q1 - p1), p2 + s * (q2 - p2)
                ok, r_try, new_left = _envelope_rmse(a, b, z, envelope, min_seg)
                if ok and r_try < rmse - BT_IMPROVE:
                    accepted = True
                    break
                s *= BT_SHRINK
            if not accepted:
                stop = "no_descent"
                cause, decrement, longer = no_descent_cause(z, left, p1, p2, q1, q2, th1, th2, t1, t2,
                                                            ridge_alpha, envelope, min_seg)
                break
        else:
            s = float(step)
            a, b = p1 + s * (q1 - p1), p2 + s * (q2 - p2)
            ok, r_try, new_left = _envelope_rmse(a, b, z, envelope, min_seg)
            if not ok:
                stop = "invalid_step"
                break
        c1, c2 = th1 + s * (t1 - th1), th2 + s * (t2 - th2)
        moved1, moved2 = np.linalg.norm(c1 - th1), np.linalg.norm(c2 - th2)
        th1, th2, p1, p2, rmse, left = c1, c2, a, b, r_try, new_left
        trace.append(rmse)
        steps.append(s)
        if moved1 < tol and moved2 < tol:
            stop = "tol"
            break
    w = split_vector(th1, th2, envelope)
    valid, rmse, left = hinge_objective(Xt, z, th1, th2, envelope, min_seg)
    return SplitResult(envelope, th1, th2, w, left, rmse, n_iter, stop, np.array(trace), steps, valid, cause,
                       decrement, longer)


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
