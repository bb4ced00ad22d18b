"""Setting A of the reconstruction: a proximal (iMAML-style) bilevel problem with a multinomial logistic head.

Each task t has support points (x_j, y_j), j < n, with weights s_j (1: present, 0: removed) and query points with
weights q_j. The head is a (d, C) matrix theta (flattened row-major, so coordinate a*C + c), d = 65 (64 pixels and
a ones column), C = 5, dimension D = d*C = 325.

    inner:  theta_t(lam) = argmin_theta  (1/n) sum_j s_j CE(theta^T x_j, y_j) + (mu/2) ||theta - lam||^2
    outer:  F(lam) = sum_t w_t (1/m) sum_j q_j CE(theta_t(lam)^T xq_j, yq_j) + (rho/2) ||lam||^2

The inner stationarity theta = lam - (1/(mu n)) X^T diag(s) (P - Y) pins theta down by the support logits Z = X theta,
so the inner problem is solved by Newton's method on the n*C residual
    R(Z) = Z - X lam + Kx diag(s) (P(Z) - Y),   Kx = X X^T / (mu n),
and products with J = mu (A + mu I)^{-1} (A the support Hessian) reuse the same n*C system (a Woodbury identity).
The per-task total-Hessian contributions J (Hval - DA[u]) J reuse the same n*C system too (Woodbury, see
:func:`task_derivatives`: one (nC x nC) inverse per task, no (D x D) inverse); explicit D x D matrices (K^{-1}, J,
Hval, DA[u]) are formed in closed form only where the instance-level influence functions need them. Everything is
batched over a leading task axis.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Counter:
    """Work counts: inner argmin solves, inner Newton and chord iterations (per task), outer (quasi-)Newton steps,
    nC x nC factorisations (inner Newton matrices) and D x D factorisations (total Hessians)."""

    inner_solves: int = 0
    inner_newton: int = 0
    inner_chord: int = 0
    outer_iters: int = 0
    big_factorisations: int = 0
    small_factorisations: int = 0

    def add(self, other: "Counter") -> None:
        self.inner_solves += other.inner_solves
        self.inner_newton += other.inner_newton
        self.inner_chord += other.inner_chord
        self.outer_iters += other.outer_iters
        self.big_factorisations += other.big_factorisations
        self.small_factorisations += other.small_factorisations

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Tasks:
    """A batch of tasks: support (Xs, ys, s) and query (Xq, yq, q) arrays with a leading task axis."""

    Xs: np.ndarray  # (T, n, d)
    ys: np.ndarray  # (T, n) int
    Xq: np.ndarray  # (T, m, d)
    yq: np.ndarray  # (T, m) int
    n_classes: int = 5
    s: np.ndarray | None = None  # (T, n) support weights
    q: np.ndarray | None = None  # (T, m) query weights
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.s is None:
            self.s = np.ones(self.ys.shape)
        if self.q is None:
            self.q = np.ones(self.yq.shape)

    def __len__(self) -> int:
        return len(self.Xs)

    @property
    def dim(self) -> int:
        return self.Xs.shape[2] * self.n_classes

    def take(self, idx) -> "Tasks":
        idx = np.asarray(idx)
        return Tasks(self.Xs[idx], self.ys[idx], self.Xq[idx], self.yq[idx], self.n_classes, self.s[idx].copy(),
                     self.q[idx].copy())

    def with_support_weights(self, s: np.ndarray) -> "Tasks":
        return Tasks(self.Xs, self.ys, self.Xq, self.yq, self.n_classes, np.asarray(s, float), self.q)


def onehot(y: np.ndarray, C: int) -> np.ndarray:
    return np.eye(C)[y]


def softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=-1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=-1, keepdims=True)


def _S(P: np.ndarray) -> np.ndarray:
    """Softmax Jacobians diag(p) - p p^T, (..., C, C)."""
    return P[..., :, None] * np.eye(P.shape[-1]) - P[..., :, None] * P[..., None, :]


def ce_loss(Z: np.ndarray, Y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted mean cross-entropy per task: (1/n) sum_j w_j CE_j (normalised by n, not by sum w)."""
    Zm = Z.max(axis=-1, keepdims=True)
    lse = (Zm + np.log(np.exp(Z - Zm).sum(axis=-1, keepdims=True)))[..., 0]
    ce = lse - (Z * Y).sum(-1)
    return (w * ce).sum(-1) / Z.shape[-2]


def _jac_matrix(Kxs: np.ndarray, S: np.ndarray) -> np.ndarray:
    """I + (Kx diag(s) kron I) blockdiag(S_j) as (B, nC, nC)."""
    B, n, _ = Kxs.shape
    C = S.shape[-1]
    M = Kxs[:, :, None, :, None] * S[:, None, :, :, :].transpose(0, 1, 3, 2, 4)  # (B, j, c, k, e)
    M = M.reshape(B, n * C, n * C)
    M[:, np.arange(n * C), np.arange(n * C)] += 1.0
    return M


@dataclass
class InnerSolution:
    theta: np.ndarray  # (B, d, C)
    Z: np.ndarray  # (B, n, C) support logits
    P: np.ndarray  # (B, n, C)
    jac: np.ndarray  # (B, nC, nC) at the solution
    resid: float


def inner_solve(lam: np.ndarray, tasks: Tasks, mu: float, theta0: np.ndarray | None = None, tol: float = 1e-12,
                max_iter: int = 50, counter: Counter | None = None) -> InnerSolution:
    """theta_t(lam_t) for every task (lam: (D,) shared or (B, D) per task), Newton on the support logits."""
    Xs, s = tasks.Xs, tasks.s
    B, n, d = Xs.shape
    C = tasks.n_classes
    L = np.broadcast_to(np.asarray(lam).reshape(-1, d, C), (B, d, C))
    Y = onehot(tasks.ys, C)
    Kxs = np.einsum("bja,bka->bjk", Xs, Xs) / (mu * n) * s[:, None, :]
    Z0 = np.einsum("bja,bac->bjc", Xs, L)
    Z = Z0.copy() if theta0 is None else np.einsum("bja,bac->bjc", Xs, theta0.reshape(B, d, C))

    R = resid_sub(Z, Z0, Kxs, Y)
    it = 0
    for it in range(1, max_iter + 1):
        rn = np.abs(R).reshape(B, -1).max(1)
        if rn.max() < tol:
            it -= 1
            break
        act = rn >= tol
        P = softmax(Z[act])
        M = _jac_matrix(Kxs[act], _S(P))
        dZ = -np.linalg.solve(M, R[act].reshape(-1, n * C, 1)).reshape(-1, n, C)
        Za, Ra, step = Z[act], R[act], np.ones(act.sum())
        for _ in range(30):  # backtracking on the residual's norm (rarely used: the map is monotone)
            Zn = Za + step[:, None, None] * dZ
            Rn = resid_sub(Zn, Z0[act], Kxs[act], Y[act])
            bad = np.abs(Rn).reshape(len(Rn), -1).max(1) > np.abs(Ra).reshape(len(Ra), -1).max(1) * (1 - 1e-4 * step)
            bad &= np.abs(Ra).reshape(len(Ra), -1).max(1) > 1e-10
            if not bad.any():
                break
            step[bad] *= 0.5
        Z[act], R[act] = Zn, Rn
        if counter is not None:
            counter.inner_newton += int(act.sum())
            counter.small_factorisations += int(act.sum())
    P = softmax(Z)
    theta = L - np.einsum("bja,bjc->bac", Xs, s[:, :, None] * (P - Y)) / (mu * n)
    if counter is not None:
        counter.inner_solves += B
    return InnerSolution(theta, Z, P, _jac_matrix(Kxs, _S(P)), float(np.abs(R).max()))


def resid_sub(Z, Z0, Kxs, Y):
    return Z - Z0 + np.einsum("bjk,bkc->bjc", Kxs, softmax(Z) - Y)


def jvp_J(sol: InnerSolution, tasks: Tasks, mu: float, V: np.ndarray, counter: Counter | None = None) -> np.ndarray:
    """J_t v_t = mu (A_t + mu I)^{-1} v_t for every task (V: (B, d, C)), through the n*C system at the solution."""
    Xs, s = tasks.Xs, tasks.s
    B, n, d = Xs.shape
    C = tasks.n_classes
    rhs = np.einsum("bja,bac->bjc", Xs, V) / mu
    Zx = np.linalg.solve(sol.jac, rhs.reshape(B, n * C, 1)).reshape(B, n, C)
    if counter is not None:
        counter.small_factorisations += B
    SZ = np.einsum("bjce,bje->bjc", _S(sol.P), Zx) * s[:, :, None]
    return V - np.einsum("bja,bjc->bac", Xs, SZ) / n


def query_grad(theta: np.ndarray, tasks: Tasks):
    """Query loss per task, its gradient (B, d, C) and the query probabilities."""
    C = tasks.n_classes
    m = tasks.Xq.shape[1]
    Zq = np.einsum("bja,bac->bjc", tasks.Xq, theta)
    Pq = softmax(Zq)
    Yq = onehot(tasks.yq, C)
    loss = ce_loss(Zq, Yq, tasks.q)
    g = np.einsum("bja,bjc->bac", tasks.Xq, tasks.q[:, :, None] * (Pq - Yq)) / m
    return loss, g, Pq


def query_accuracy(theta: np.ndarray, tasks: Tasks) -> np.ndarray:
    Zq = np.einsum("bja,bac->bjc", tasks.Xq, theta)
    return (Zq.argmax(-1) == tasks.yq).mean(-1)


def kron_hessian(X: np.ndarray, w: np.ndarray, S: np.ndarray) -> np.ndarray:
    """(1/n) sum_j w_j kron(x_j x_j^T, S_j) as (B, D, D), coordinates a*C + c (one batched matmul)."""
    B, n, d = X.shape
    C = S.shape[-1]
    F = ((w[:, :, None, None] * S)[..., None] * X[:, :, None, None, :]).reshape(B, n, C * C * d)
    H = np.matmul(X.transpose(0, 2, 1), F).reshape(B, d, C, C, d) / n  # [a, c, e, b]
    return H.transpose(0, 1, 2, 4, 3).reshape(B, d * C, d * C)


def sandwich(XL: np.ndarray, core: np.ndarray, XR: np.ndarray) -> np.ndarray:
    """Phi_L^T core Phi_R as (B, D, D) for Phi = kron(X, I_C) (rows (j, c), columns (a, e)):
    out[(a, c), (b, e)] = sum_{j, k} XL[j, a] core[(j, c), (k, e)] XR[k, b]; XL (B, nL, d), core (B, nL*C, nR*C)."""
    B, nL, d = XL.shape
    nR = XR.shape[1]
    C = core.shape[1] // nL
    Y = np.matmul(XL.transpose(0, 2, 1), core.reshape(B, nL, C * nR * C)).reshape(B, d, C, nR, C)
    Y = np.matmul(Y.transpose(0, 1, 2, 4, 3).reshape(B, d * C * C, nR), XR).reshape(B, d, C, C, d)
    return Y.transpose(0, 1, 2, 4, 3).reshape(B, d * C, d * C)


def dS_dir(P: np.ndarray, dz: np.ndarray) -> np.ndarray:
    """Directional derivative of diag(p) - p p^T along logit change dz: diag(dp) - dp p^T - p dp^T, dp = S dz."""
    dp = np.einsum("...ce,...e->...c", _S(P), dz)
    return dp[..., :, None] * np.eye(P.shape[-1]) - dp[..., :, None] * P[..., None, :] - P[..., :, None] * dp[..., None, :]


def _sqrt_S(P: np.ndarray) -> np.ndarray:
    """L with L L^T = diag(p) - p p^T: L = diag(sqrt p) - p sqrt(p)^T (uses sum p = 1)."""
    r = np.sqrt(P)
    return r[..., :, None] * np.eye(P.shape[-1]) - P[..., :, None] * r[..., None, :]


@dataclass
class TaskDerivatives:
    """Closed-form first/second/third-order pieces at the inner solutions, per task (D = d*C).

    The D x D matrices marked "explicit" are only formed when asked (``explicit=True``); the total-Hessian
    contributions H_full (and H_sur when formed) always are."""

    theta: np.ndarray  # (B, d, C)
    loss_val: np.ndarray  # (B,)
    g_val: np.ndarray  # (B, D)
    u: np.ndarray  # (B, D) K^{-1} g_val
    G: np.ndarray  # (B, D) total gradients J g_val
    H_full: np.ndarray  # (B, D, D) J (Hval - DA[u]) J
    P_s: np.ndarray  # (B, n, C)
    H_sur: np.ndarray | None = None  # (B, D, D) J Hval J (explicit)
    Kinv: np.ndarray | None = None  # (B, D, D) (A + mu I)^{-1} (explicit)
    J: np.ndarray | None = None  # (B, D, D) (explicit)
    Hval: np.ndarray | None = None  # (B, D, D) (explicit)
    DAu: np.ndarray | None = None  # (B, D, D) third-order term DA[u] (explicit)


def task_derivatives(sol: InnerSolution, tasks: Tasks, mu: float, counter: Counter | None = None,
                     explicit: bool = True) -> TaskDerivatives:
    """Per-task derivatives at the inner solutions, through the (nC x nC) inner Newton matrix M at the solution.

    With Phi = kron(X_s, I_C) (the support design, nC x D) and Bs = blockdiag(s_j S_j) (softmax Jacobians),
    A = Phi^T Bs Phi / n and the Woodbury identity give  J = mu (A + mu I)^{-1} = I - Phi^T Q Phi  with
    Q = Bs M^{-1} / (mu n),  M = I + Phi Phi^T Bs / (mu n)  (one nC-dim inverse per task instead of a D-dim one).
    Then  Psi J = Psi - (Psi Phi^T) Q Phi  (Psi the query design), so  J Hval J = N^T N / m  with
    N = Lq^T Psi J (Lq Lq^T = blockdiag(q_j Sq_j)), and  J DA[u] J = Phi^T (R^T dBs R) Phi / n  with
    R = I - (Phi Phi^T) Q  (since Phi J = R Phi)."""
    Xs, Xq, s, q = tasks.Xs, tasks.Xq, tasks.s, tasks.q
    B, n, d = Xs.shape
    m = Xq.shape[1]
    C = tasks.n_classes
    D, nC = d * C, n * C
    Minv = np.linalg.inv(sol.jac)
    if counter is not None:
        counter.small_factorisations += B
    Ss = _S(sol.P) * s[:, :, None, None]  # (B, n, C, C)
    Q = np.matmul(Ss, Minv.reshape(B, n, C, nC)).reshape(B, nC, nC) / (mu * n)
    Gss = np.matmul(Xs, Xs.transpose(0, 2, 1))  # (B, n, n)
    loss, g, Pq = query_grad(sol.theta, tasks)
    # G = J g = g - Phi^T Q Phi g
    w = np.matmul(Q, np.matmul(Xs, g).reshape(B, nC, 1)).reshape(B, n, C)
    G = (g - np.matmul(Xs.transpose(0, 2, 1), w)).reshape(B, D)
    u = G / mu
    # J Hval J = N^T N / m
    E = np.matmul(np.matmul(Xq, Xs.transpose(0, 2, 1)), Q.reshape(B, n, C * nC)).reshape(B, m * C, n, C)
    PsiJ = -np.matmul(E.transpose(0, 1, 3, 2).reshape(B, m * C * C, n), Xs).reshape(B, m, C, C, d)  # [i, c, e, b]
    PsiJ = PsiJ.transpose(0, 1, 2, 4, 3)  # [i, c, b, e]
    for c in range(C):
        PsiJ[:, :, c, :, c] += Xq
    Lq = _sqrt_S(Pq) * np.sqrt(q)[:, :, None, None]  # (B, m, C, C)
    N = np.matmul(Lq.transpose(0, 1, 3, 2), PsiJ.reshape(B, m, C, D)).reshape(B, m * C, D)
    H_sur = np.matmul(N.transpose(0, 2, 1), N) / m
    # J DA[u] J = Phi^T R^T dBs R Phi / n
    R = -np.matmul(Gss, Q.reshape(B, n, C * nC)).reshape(B, nC, nC)
    R[:, np.arange(nC), np.arange(nC)] += 1.0
    dz = np.matmul(Xs, u.reshape(B, d, C))
    dS = dS_dir(sol.P, dz)
    dBs = dS * s[:, :, None, None]
    core = np.matmul(R.transpose(0, 2, 1), np.matmul(dBs, R.reshape(B, n, C, nC)).reshape(B, nC, nC))
    H_full = H_sur - sandwich(Xs, core, Xs) / n
    out = TaskDerivatives(sol.theta, loss, g.reshape(B, D), u, G, H_full, sol.P)
    if explicit:
        J = -sandwich(Xs, Q, Xs)
        J[:, np.arange(D), np.arange(D)] += 1.0
        out.H_sur, out.J, out.Kinv = H_sur, J, J / mu
        out.Hval = kron_hessian(Xq, q, _S(Pq))
        out.DAu = kron_hessian(Xs, s, dS)
    return out


def task_derivatives_dense(sol: InnerSolution, tasks: Tasks, mu: float) -> TaskDerivatives:
    """Reference: the same pieces by explicit D x D inverses and products (for the tests)."""
    B, n, d = tasks.Xs.shape
    C = tasks.n_classes
    D = d * C
    A = kron_hessian(tasks.Xs, tasks.s, _S(sol.P))
    Kinv = np.linalg.inv(A + mu * np.eye(D))
    J = mu * Kinv
    loss, g, Pq = query_grad(sol.theta, tasks)
    g = g.reshape(B, D)
    Hval = kron_hessian(tasks.Xq, tasks.q, _S(Pq))
    u = np.einsum("bij,bj->bi", Kinv, g)
    dz = np.einsum("bja,bac->bjc", tasks.Xs, u.reshape(B, d, C))
    DAu = kron_hessian(tasks.Xs, tasks.s, dS_dir(sol.P, dz))
    H_sur = J @ Hval @ J
    return TaskDerivatives(sol.theta, loss, g, u, np.einsum("bij,bj->bi", J, g), H_sur - J @ DAu @ J, sol.P,
                           H_sur, Kinv, J, Hval, DAu)


@dataclass
class OuterResult:
    lam: np.ndarray
    sol: InnerSolution
    der: TaskDerivatives
    F: float
    grad_norm: float
    iters: int
    counter: Counter


def outer_value_grad(lam, tasks, mu, rho, theta0=None, counter=None):
    """F(lam), its gradient sum_t G_t + rho lam (sample-space J products only) and the inner solution."""
    sol = inner_solve(lam, tasks, mu, theta0=theta0, counter=counter)
    loss, g, _ = query_grad(sol.theta, tasks)
    G = jvp_J(sol, tasks, mu, g, counter).reshape(len(tasks), -1)
    return float(loss.sum() + 0.5 * rho * lam @ lam), G.sum(0) + rho * lam, sol


def outer_solve(tasks: Tasks, mu: float, rho: float, lam0: np.ndarray | None = None, tol: float = 1e-10,
                max_iter: int = 30, third_order: bool = True, switch_tol: float = 1e-6, max_newton: int = 50,
                verbose: bool = False) -> OuterResult:
    """lam*: damped Newton with the exact total Hessian (third-order term included by default) until
    ||grad F|| < switch_tol, then chord-Newton steps with the last Hessian until ||grad F|| < tol."""
    counter = Counter()
    D = tasks.dim
    lam = np.zeros(D) if lam0 is None else np.asarray(lam0, float).copy()
    F, grad, sol = outer_value_grad(lam, tasks, mu, rho, counter=counter)
    n_newton = 0
    for n_newton in range(1, max_newton + 1):  # damped Newton with the exact total Hessian
        der = task_derivatives(sol, tasks, mu, counter, explicit=not third_order)
        H = (der.H_full if third_order else der.H_sur).sum(0) + rho * np.eye(D)
        evals, evecs = np.linalg.eigh(H)
        counter.big_factorisations += 1
        floor = 1e-8 * evals.max()
        Hinv = (evecs / np.maximum(np.abs(evals), floor)) @ evecs.T  # |H|^{-1}: a descent step when H is indefinite
        step = -Hinv @ grad
        t = 1.0
        for _ in range(40):
            Fn, gn_, soln = outer_value_grad(lam + t * step, tasks, mu, rho, theta0=sol.theta, counter=counter)
            if Fn <= F + 1e-4 * t * grad @ step:
                break
            t *= 0.5
        lam, F, grad, sol = lam + t * step, Fn, gn_, soln
        counter.outer_iters += 1
        if verbose:
            print(f"newton {n_newton}: F {F:.10f} |grad| {np.linalg.norm(grad):.2e} step {t:g} min eig {evals.min():.2e}")
        if np.linalg.norm(grad) < switch_tol:
            break
    it = 0
    for it in range(1, max_iter + 1):
        F, grad, sol = outer_value_grad(lam, tasks, mu, rho, theta0=sol.theta, counter=counter)
        if np.linalg.norm(grad) < tol:
            it -= 1
            break
        lam = lam - Hinv @ grad
        counter.outer_iters += 1
    der = task_derivatives(sol, tasks, mu, counter)
    grad = der.G.sum(0) + rho * lam
    F = float(der.loss_val.sum() + 0.5 * rho * lam @ lam)
    return OuterResult(lam, sol, der, F, float(np.linalg.norm(grad)), n_newton + it, counter)


@dataclass
class RetrainResult:
    lam: np.ndarray  # (P, D)
    theta: np.ndarray  # (P, T, d, C)
    grad_norm: np.ndarray  # (P,)
    iters: int
    counter: Counter


def retrain(tasks: Tasks, mu: float, rho: float, lam0: np.ndarray, theta0: np.ndarray, W: np.ndarray,
            Hc_inv: np.ndarray, S: np.ndarray | None = None, tol: float = 1e-10, max_iter: int = 100,
            chunk: int = 400, refresh: int = 25, broyden: bool = True) -> RetrainResult:
    """Re-solve P edited outer problems side by side, warm-started, by quasi-Newton steps lam -= Hc^{-1} grad F_p.

    Hc^{-1} starts from the exact total Hessian of the edited problem at lam* and is corrected by good-Broyden
    secant updates (rank one per step, O(D^2)), which turns the chord iteration's linear rate into a superlinear one
    without forming new D x D Hessians; refresh > 0 also re-forms the exact Hessian every `refresh` steps.

    W: (P, T) task weights (0 removes a task); S: (P, T, n) support weights (0 removes a point) or None;
    Hc_inv: (P, D, D) inverses of fixed Newton matrices (the total Hessian of the edited problem at lam*);
    lam0: (D,) and theta0: (T, d, C) the full problem's solution (the warm start).
    Iterates until every problem's ||grad F_p|| < tol.
    """
    counter = Counter()
    P_, T = W.shape
    B, n, d = tasks.Xs.shape
    C = tasks.n_classes
    D = d * C
    lam = np.tile(np.asarray(lam0, float), (P_, 1))
    theta = np.tile(theta0[None], (P_, 1, 1, 1))
    s_all = np.broadcast_to(tasks.s, (P_, T, n)) if S is None else S
    edited = (np.asarray(s_all) != tasks.s[None]).any(-1)  # (P, T): pairs whose support weights differ (Newton)
    warm = WarmInner(tasks, mu, theta0, counter=counter)
    gn = np.full(P_, np.inf)
    gn_acc = np.full(P_, np.inf)  # ||grad|| at the last accepted iterate
    lam_acc = lam.copy()
    g_acc = np.zeros((P_, D))
    step = np.zeros_like(lam)
    it = 0
    Hc_inv = np.array(Hc_inv, copy=True)
    grads = np.zeros((P_, D))
    active = np.ones(P_, bool)
    halvings = np.zeros(P_, int)
    forced = np.zeros(P_, bool)
    for it in range(1, max_iter + 1):
        # exact Newton matrix at the current iterate for problems whose steps stall (4 halvings in a row) and, every
        # `refresh` steps, for all problems still running; that iterate is then accepted and a fresh step taken
        stalled = active & (halvings >= 4)
        if refresh and it > 1 and it % refresh == 0:
            stalled = active.copy()
        forced[:] = False
        if it > 1 and stalled.any():
            for p in np.flatnonzero(stalled):
                sub = Tasks(tasks.Xs, tasks.ys, tasks.Xq, tasks.yq, C, np.asarray(s_all[p], float), tasks.q)
                der = task_derivatives(inner_solve(lam[p], sub, mu, theta0=theta[p], counter=counter), sub, mu,
                                       counter, explicit=False)
                Hp = (W[p][:, None, None] * der.H_full).sum(0) + rho * np.eye(D)
                Hc_inv[p] = np.linalg.inv(Hp)
                counter.big_factorisations += 1
                forced[p], halvings[p] = True, 0
        todo = np.flatnonzero(active)
        grads[todo], theta[todo] = _warm_value_grad(warm, tasks, mu, rho, lam[todo], theta[todo], W[todo],
                                                    s_all[todo], edited[todo], counter)
        gn[active] = np.linalg.norm(grads[active], axis=1)
        active = gn >= tol
        if not active.any():
            it -= 1
            break
        worse = active & (gn > gn_acc) & ~forced  # safeguard: a step that raised ||grad|| is halved and retried
        ok = active & ~worse
        halvings[worse] += 1
        halvings[ok] = 0
        if broyden and it > 1:
            # good-Broyden update of the inverse Newton matrix from the secant pair (s, y) of each problem
            upd = np.flatnonzero(active & ~forced)
            sv = lam[upd] - lam_acc[upd]
            yv = grads[upd] - g_acc[upd]
            Hy = np.einsum("pij,pj->pi", Hc_inv[upd], yv)
            sH = np.einsum("pi,pij->pj", sv, Hc_inv[upd])
            den = np.einsum("pi,pi->p", sv, Hy)
            good = np.abs(den) > 1e-12 * np.linalg.norm(sv, axis=1) * np.linalg.norm(Hy, axis=1)
            upd, sv, Hy, sH, den = upd[good], sv[good], Hy[good], sH[good], den[good]
            Hc_inv[upd] += np.einsum("pi,pj->pij", (sv - Hy) / den[:, None], sH)
        if worse.any():
            step[worse] *= 0.5
            lam[worse] = lam_acc[worse] + step[worse]
        if ok.any():
            lam_acc[ok], gn_acc[ok], g_acc[ok] = lam[ok], gn[ok], grads[ok]
            step[ok] = -np.einsum("pij,pj->pi", Hc_inv[ok], grads[ok])
            lam[ok] = lam[ok] + step[ok]
        counter.outer_iters += int(active.sum())
    return RetrainResult(lam, theta, gn, it, counter)


def _warm_value_grad(warm, tasks, mu, rho, lam, theta, W, S, edited, counter):
    """grad F_p for P problems (lam (P, D), theta (P, T, d, C) the inner warm starts, W (P, T), S (P, T, n)):
    warm chord solves for the pairs with the base's support weights, exact Newton for the others and any pair that
    does not contract. Returns (grads (P, D), theta (P, T, d, C))."""
    P_, T, d, C = theta.shape
    th0 = np.ascontiguousarray(theta.transpose(1, 2, 3, 0))
    skip = edited.T
    th, Pm, failed = warm.solve(lam, th0, skip=skip, counter=counter)
    _, g, _ = warm.query(th)
    G, jfail = warm.jvp(Pm, g, skip=skip | failed, counter=counter)
    need = skip | failed | jfail
    if need.any():
        ti, pi = np.nonzero(need)
        sub = Tasks(tasks.Xs[ti], tasks.ys[ti], tasks.Xq[ti], tasks.yq[ti], C, np.asarray(S[pi, ti], float),
                    tasks.q[ti])
        sol = inner_solve(lam[pi], sub, mu, theta0=th0[ti, :, :, pi], counter=counter)
        _, gx, _ = query_grad(sol.theta, sub)
        th[ti, :, :, pi] = sol.theta
        G[ti, :, :, pi] = jvp_J(sol, sub, mu, gx, counter)
    grads = np.einsum("pt,tdp->pd", W, G.reshape(T, d * C, P_)) + rho * lam
    return grads, th.transpose(3, 0, 1, 2)


def adapt_and_eval(lam: np.ndarray, tasks: Tasks, mu: float, counter: Counter | None = None,
                   warm: WarmInner | None = None):
    """Adapt to every task from each of P meta-parameters (lam: (P, D)); mean query loss and accuracy per lam.
    warm: a WarmInner on these tasks (chord solves from its base; pairs that do not contract are solved cold)."""
    lam = np.atleast_2d(lam)
    if warm is not None:
        th, Pm, failed = warm.solve(lam, counter=counter)
        if failed.any():
            ti, pi = np.nonzero(failed)
            sol = inner_solve(lam[pi], tasks.take(ti), mu, counter=counter)
            th[ti, :, :, pi] = sol.theta
        loss, _, acc = warm.query(th)
        return loss.mean(0), acc.mean(0)
    P_, T = len(lam), len(tasks)
    big = Tasks(np.tile(tasks.Xs, (P_, 1, 1)), np.tile(tasks.ys, (P_, 1)), np.tile(tasks.Xq, (P_, 1, 1)),
                np.tile(tasks.yq, (P_, 1)), tasks.n_classes, np.tile(tasks.s, (P_, 1)), np.tile(tasks.q, (P_, 1)))
    sol = inner_solve(np.repeat(lam, T, axis=0), big, mu, counter=counter)
    loss, _, _ = query_grad(sol.theta, big)
    acc = query_accuracy(sol.theta, big)
    return loss.reshape(P_, T).mean(1), acc.reshape(P_, T).mean(1)


class WarmInner:
    """Inner solutions of the T tasks for many meta-parameters at once (layout: pairs (t, p), p last), near a base
    solution theta0: chord-Newton steps with the inverse inner Newton matrices at the base (one (nC x nC) inverse per
    task, shared by all P problems), iterated to the same residual tolerance as :func:`inner_solve`; the J products
    are solved the same way (iterative refinement with the base inverse against the exact Newton matrix at the
    solution). A pair that does not contract is left to the caller's exact Newton solve (``failed``)."""

    def __init__(self, tasks: Tasks, mu: float, theta0: np.ndarray, tol: float = 1e-12, max_iter: int = 40,
                 counter: Counter | None = None):
        self.tasks, self.mu, self.tol, self.max_iter = tasks, mu, tol, max_iter
        T, n, d = tasks.Xs.shape
        C = tasks.n_classes
        self.shape = (T, n, d, C)
        self.Y = onehot(tasks.ys, C)[..., None]
        self.Yq = onehot(tasks.yq, C)[..., None]
        self.Kx = np.einsum("tja,tka->tjk", tasks.Xs, tasks.Xs) / (mu * n)
        self.Kxs = self.Kx * tasks.s[:, None, :]
        self.XsT = np.ascontiguousarray(tasks.Xs.transpose(0, 2, 1))
        self.XqT = np.ascontiguousarray(tasks.Xq.transpose(0, 2, 1))
        self.theta0 = np.asarray(theta0, float).reshape(T, d, C)
        P0 = softmax(np.einsum("tja,tac->tjc", tasks.Xs, self.theta0))
        self.Minv = np.linalg.inv(_jac_matrix(self.Kxs, _S(P0)))
        if counter is not None:
            counter.small_factorisations += T

    def _mm(self, A, V):
        """(T, a, b) @ V (T, b, ..., P) over the trailing axes."""
        sh = V.shape
        return np.matmul(A, V.reshape(sh[0], sh[1], -1)).reshape((sh[0], A.shape[1]) + sh[2:])

    def _resid(self, Z, Z0):
        return Z - Z0 + self._mm(self.Kxs, softmax_axis(Z, 2) - self.Y)

    def _minv(self, R):
        T, n, C, P_ = R.shape
        return np.matmul(self.Minv, R.reshape(T, n * C, P_)).reshape(T, n, C, P_)

    def solve(self, lam: np.ndarray, theta_init: np.ndarray | None = None, skip: np.ndarray | None = None,
              counter: Counter | None = None):
        """lam: (P, D); theta_init: (T, d, C, P) or None (the base); skip: (T, P) pairs not to iterate.
        Returns (theta (T, d, C, P), probabilities (T, n, C, P), failed (T, P))."""
        T, n, d, C = self.shape
        lam = np.atleast_2d(lam)
        P_ = len(lam)
        L = lam.reshape(P_, d, C).transpose(1, 2, 0)  # (d, C, P)
        Z0 = np.matmul(self.tasks.Xs, L.reshape(d, C * P_)).reshape(T, n, C, P_)
        th = np.repeat(self.theta0[..., None], P_, axis=3) if theta_init is None else theta_init
        Z = self._mm(self.tasks.Xs, th)
        R = self._resid(Z, Z0)
        skip = np.zeros((T, P_), bool) if skip is None else skip
        failed = np.zeros((T, P_), bool)
        rn_prev = np.full((T, P_), np.inf)
        for _ in range(self.max_iter):
            rn = np.abs(R).max(axis=(1, 2))
            failed |= (rn > rn_prev) & (rn >= self.tol)  # not contracting: left to the exact Newton solve
            act = (rn >= self.tol) & ~skip & ~failed
            if not act.any():
                break
            Z = Z - self._minv(R) * act[:, None, None, :]
            R = self._resid(Z, Z0)
            rn_prev = np.where(act, rn, rn_prev)
            if counter is not None:
                counter.inner_chord += int(act.sum())
        rn = np.abs(R).max(axis=(1, 2))
        failed |= (rn >= self.tol) & ~skip
        Pm = softmax_axis(Z, 2)
        theta = L[None] - self._mm(self.XsT, self.tasks.s[:, :, None, None] * (Pm - self.Y)) / (self.mu * n)
        if counter is not None:
            counter.inner_solves += int((~skip).sum())
        return theta, Pm, failed

    def jvp(self, Pm: np.ndarray, V: np.ndarray, skip: np.ndarray | None = None, max_iter: int = 40,
            counter: Counter | None = None):
        """J v for every pair (V: (T, d, C, P)) at the solutions with probabilities Pm. Returns (JV, failed)."""
        T, n, d, C = self.shape
        s = self.tasks.s[:, :, None, None]
        rhs = self._mm(self.tasks.Xs, V) / self.mu

        def Sx(x):
            return s * (Pm * x - Pm * (Pm * x).sum(2, keepdims=True))

        x = self._minv(rhs)
        scale = np.abs(rhs).max(axis=(1, 2)) + 1e-300
        skip = np.zeros(scale.shape, bool) if skip is None else skip
        ok = np.zeros(scale.shape, bool)
        for _ in range(max_iter):
            r = rhs - x - self._mm(self.Kx, Sx(x))  # the exact Newton matrix at the solution times x
            ok = np.abs(r).max(axis=(1, 2)) <= 1e-14 * scale
            if (ok | skip).all():
                break
            x = x + self._minv(r) * (~ok)[:, None, None, :]
            if counter is not None:
                counter.inner_chord += int((~ok & ~skip).sum())
        return V - self._mm(self.XsT, Sx(x)) / n, ~ok & ~skip

    def query(self, theta: np.ndarray):
        """Query loss (T, P), gradient (T, d, C, P) and accuracy (T, P)."""
        m = self.tasks.Xq.shape[1]
        Zq = self._mm(self.tasks.Xq, theta)
        Pq = softmax_axis(Zq, 2)
        q = self.tasks.q[:, :, None, None]
        Zm = Zq.max(2, keepdims=True)
        lse = (Zm + np.log(np.exp(Zq - Zm).sum(2, keepdims=True)))[:, :, 0]
        ce = lse - (Zq * self.Yq).sum(2)
        loss = (q[:, :, 0] * ce).sum(1) / m
        g = self._mm(self.XqT, q * (Pq - self.Yq)) / m
        acc = (Zq.argmax(2) == self.tasks.yq[:, :, None]).mean(1)
        return loss, g, acc


def softmax_axis(Z: np.ndarray, axis: int) -> np.ndarray:
    E = np.exp(Z - Z.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)
