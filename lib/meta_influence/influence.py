"""task-IF and instance-IF (our reconstruction of the paper's closed forms), their cheaper variants and baselines.

Removing training task k (weight 1 -> 0) moves the meta-parameters by  d lam ~ H^{-1} G_k  (H the total Hessian,
G_k = J_k^T grad L^val_k the total gradient), so the evaluation functional phi(lam) (mean post-adaptation query
loss over the meta-test tasks) changes by  I_task(k) = grad phi^T H^{-1} G_k.

A support point z of task k enters its inner objective with weight 1/n; its removal (epsilon = -1/n) changes
    lam by      (1/n) H^{-1} dG_k/deps,
                dG_k/deps = -J_k [ (Hval_k - DA_k[u_k]) K_k^{-1} grad l_z + grad^2 l_z u_k ],  u_k = K_k^{-1} g^val_k
    theta_k by  (1/n) [ K_k^{-1} grad l_z  -  J_k H^{-1} dG_k/deps ]       (direct path, indirect path via lam)
and the first-order pieces give the predicted change of phi and of task k's own query loss.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, lu_factor, lu_solve

from .bilevel import Counter, OuterResult, Tasks, _S, inner_solve, jvp_J, query_grad, softmax, task_derivatives


@dataclass
class TestGrad:
    phi: float
    grad_full: np.ndarray  # (D,) mean_j J_j g_j over the meta-test tasks
    grad_fo: np.ndarray  # (D,) mean_j g_j (J = I)
    theta: np.ndarray | None = None  # (T_test, d, C) the test tasks' inner solutions at lam


def test_gradient(lam: np.ndarray, test: Tasks, mu: float, counter=None) -> TestGrad:
    sol = inner_solve(lam, test, mu, counter=counter)
    loss, g, _ = query_grad(sol.theta, test)
    G = jvp_J(sol, test, mu, g, counter).reshape(len(test), -1)
    return TestGrad(float(loss.mean()), G.mean(0), g.reshape(len(test), -1).mean(0), sol.theta)


def total_hessian(res: OuterResult, rho: float, kind: str = "full") -> np.ndarray:
    """'full' (with the third-order term), 'surrogate' (Gauss-Newton-like, J Hval J) or 'first_order' (J = I)."""
    D = res.lam.size
    der = res.der
    parts = {"full": der.H_full, "surrogate": der.H_sur, "first_order": der.Hval}[kind]
    return parts.sum(0) + rho * np.eye(D)


def power_lambda_max(H: np.ndarray, iters: int = 100, seed: int = 0) -> float:
    v = np.random.default_rng(seed).standard_normal(len(H))
    lam = 0.0
    for _ in range(iters):
        w = H @ v
        lam = float(np.linalg.norm(w))
        v = w / lam
    return float(v @ H @ v)


def neumann_path(H: np.ndarray, b: np.ndarray, n_terms: int, eta: float) -> np.ndarray:
    """Iterates x_J = eta sum_{j<=J} (I - eta H)^j b for J = 0..n_terms-1, as (n_terms, D)."""
    out = np.empty((n_terms, len(b)))
    term = eta * b
    x = term.copy()
    out[0] = x
    for j in range(1, n_terms):
        term = term - eta * (H @ term)
        x = x + term
        out[j] = x
    return out


def cg_path(H: np.ndarray, b: np.ndarray, n_iter: int) -> np.ndarray:
    """scipy.sparse.linalg.cg iterates x_1..x_n_iter (padded with the last one if cg stops earlier)."""
    from scipy.sparse.linalg import cg

    xs = []
    cg(H, b, x0=np.zeros_like(b), rtol=1e-300, atol=0.0, maxiter=n_iter, callback=lambda xk: xs.append(xk.copy()))
    while len(xs) < n_iter:
        xs.append(xs[-1] if xs else np.zeros_like(b))
    return np.array(xs[:n_iter])


@dataclass
class TaskIF:
    full: np.ndarray  # (T,) predicted change of phi when task k is removed
    surrogate: np.ndarray
    first_order: np.ndarray
    tracin: np.ndarray  # G_k^T grad phi (no Hessian)
    v_full: np.ndarray  # H^{-1} grad phi
    H: np.ndarray
    seconds: float
    solves: int


def task_if(res: OuterResult, tg: TestGrad, rho: float) -> TaskIF:
    """All-task influence: one factorisation of each total Hessian and one solve per variant (H is symmetric, so
    grad phi^T H^{-1} G_k = (H^{-1} grad phi)^T G_k for every k)."""
    t0 = time.perf_counter()
    der = res.der
    H = total_hessian(res, rho, "full")
    v_full = np.linalg.solve(H, tg.grad_full)
    v_sur = np.linalg.solve(total_hessian(res, rho, "surrogate"), tg.grad_full)
    v_fo = np.linalg.solve(total_hessian(res, rho, "first_order"), tg.grad_fo)
    out = TaskIF(der.G @ v_full, der.G @ v_sur, der.g_val @ v_fo, der.G @ tg.grad_full, v_full, H,
                 time.perf_counter() - t0, 3)
    return out


@dataclass
class AllTaskIF:
    """task-IF of every training task from (lam*, theta*(lam*)) alone, as an IF user would compute it."""

    scores: np.ndarray  # (T,) predicted change of phi on removing task k: grad phi^T H^{-1} G_k
    dlam: np.ndarray  # (T, D) predicted change of lam on removing task k: H^{-1} G_k
    counter: Counter
    factorisation: str  # "cholesky" or "lu" (when H is not positive definite)


def all_task_if(lam: np.ndarray, theta: np.ndarray, train: Tasks, test: Tasks, mu: float, rho: float) -> AllTaskIF:
    """The full task-IF for all T tasks at once: the inner solutions at lam* (polished from theta*, which also gives
    each task's nC x nC inner Newton matrix, factorised once and reused for G_k, u_k, J_k), the per-task total-Hessian
    contributions (through those factorisations, see :func:`task_derivatives`), grad phi from the meta-test tasks,
    ONE Cholesky factorisation of the D x D total Hessian and ONE batched triangular solve for [grad phi, G_1..G_T]."""
    c = Counter()
    sol = inner_solve(lam, train, mu, theta0=theta, counter=c)
    der = task_derivatives(sol, train, mu, c, explicit=False)
    tg = test_gradient(lam, test, mu, counter=c)
    H = der.H_full.sum(0)
    H[np.diag_indices_from(H)] += rho
    rhs = np.column_stack([tg.grad_full, der.G.T])
    try:
        X, kind = cho_solve(cho_factor(H, lower=True, check_finite=False), rhs, check_finite=False), "cholesky"
    except LinAlgError:  # not positive definite (not a strict local minimum): LU instead
        X, kind = lu_solve(lu_factor(H, check_finite=False), rhs, check_finite=False), "lu"
    c.big_factorisations += 1
    dlam = X[:, 1:].T
    return AllTaskIF(dlam @ tg.grad_full, dlam, c, kind)


def ihvp_study(H: np.ndarray, b: np.ndarray, G: np.ndarray, cg_iters: int, neumann_terms: int):
    """task-IF from CG / Neumann IHVPs against the exact solve: Pearson r and relative error per iteration."""
    exact = G @ np.linalg.solve(H, b)
    lam_max = power_lambda_max(H)
    eta = 1.0 / lam_max
    out = {}
    for name, path in (("cg", cg_path(H, b, cg_iters)), ("neumann", neumann_path(H, b, neumann_terms, eta))):
        est = path @ G.T  # (iters, T)
        r = np.array([np.corrcoef(e, exact)[0, 1] if np.std(e) > 0 else 0.0 for e in est])
        rel = np.linalg.norm(est - exact, axis=1) / np.linalg.norm(exact)
        out[name] = {"iters": np.arange(1, len(est) + 1), "pearson": r, "rel_err": rel}
    out["eta"], out["lam_max"] = eta, lam_max
    out["eig_min"] = float(np.linalg.eigvalsh(H)[0])
    return out


@dataclass
class InstanceIF:
    """Per support point (T, n): predicted changes on removal (epsilon = -1/n)."""

    dphi: np.ndarray  # change of phi (meta-test loss), through lam
    dphi_surrogate: np.ndarray  # same without third-order terms (DA[u], grad^2 l_z)
    own_direct: np.ndarray  # change of task k's own query loss through theta_k at fixed lam
    own_indirect: np.ndarray  # ... through lam (J_k d lam)
    own_first_order: np.ndarray  # J = I: direct path with K replaced by mu I, no meta path
    tracin: np.ndarray  # (1/n) g_val . grad l_z (gradient dot product)
    loss: np.ndarray  # support cross-entropy of the point at theta_k

    @property
    def own(self) -> np.ndarray:
        return self.own_direct + self.own_indirect


def _point_grads(tasks: Tasks, P: np.ndarray):
    """grad l_z as (T, n, d, C) factors: x_z and (p_z - y_z)."""
    Y = np.eye(tasks.n_classes)[tasks.ys]
    return tasks.Xs, P - Y


def instance_if(res: OuterResult, tasks: Tasks, tg: TestGrad, H: np.ndarray, mu: float) -> InstanceIF:
    der = res.der
    T, n, d = tasks.Xs.shape
    C = tasks.n_classes
    D = d * C
    X, R = _point_grads(tasks, der.P_s)  # grad l_z = x_z r_z^T
    S = _S(der.P_s)  # (T, n, C, C): grad^2 l_z = kron(x x^T, S_z)
    M = der.Hval - der.DAu  # (T, D, D)
    Hinv_phi = np.linalg.solve(H, tg.grad_full)
    A_k = np.linalg.solve(H, der.G.T).T  # (T, D) H^{-1} G_k

    def path(vecs, with_third=True):
        """-(1/n)-free pieces: returns vec^T dG_k/deps for each point, vecs (T, D) in lam-space."""
        w = np.einsum("tij,tj->ti", der.J, vecs)
        MM = M if with_third else der.Hval
        r = np.einsum("tij,tj->ti", der.Kinv, np.einsum("tij,tj->ti", MM, w)).reshape(T, d, C)
        first = np.einsum("tja,tac,tjc->tj", X, r, R)  # r^T grad l_z
        if not with_third:
            return -first
        Wm, Um = w.reshape(T, d, C), der.u.reshape(T, d, C)
        wx = np.einsum("tja,tac->tjc", X, Wm)
        ux = np.einsum("tja,tac->tjc", X, Um)
        second = np.einsum("tjc,tjce,tje->tj", wx, S, ux)  # w^T grad^2 l_z u
        return -(first + second)

    vphi = np.broadcast_to(Hinv_phi, (T, D))
    dphi = path(vphi) / n
    # surrogate: H_sur and no third-order terms
    Hs = der.H_sur.sum(0) + (H - der.H_full.sum(0))
    vs = np.broadcast_to(np.linalg.solve(Hs, tg.grad_full), (T, D))
    dphi_sur = path(vs, with_third=False) / n
    u = der.u.reshape(T, d, C)
    own_direct = np.einsum("tja,tac,tjc->tj", X, u, R) / n  # u^T grad l_z
    own_indirect = path(A_k) / n  # G_k^T H^{-1} dG_k/deps
    g = der.g_val.reshape(T, d, C)
    own_fo = np.einsum("tja,tac,tjc->tj", X, g, R) / (mu * n)
    tracin = own_fo * mu
    Z = np.einsum("tja,tac->tjc", X, der.theta)
    P = softmax(Z)
    loss = -np.log(np.take_along_axis(P, tasks.ys[..., None], -1)[..., 0])
    return InstanceIF(dphi, dphi_sur, own_direct, own_indirect, own_fo, tracin, loss)


def edit_vectors(res: OuterResult, tasks: Tasks, H: np.ndarray, points, mu: float):
    """The IF-predicted removal of several support points at once: (delta lam (D,), delta theta (T, D)),
    summing the single-point first-order changes. points: list of (task, index)."""
    der = res.der
    T, n, d = tasks.Xs.shape
    C = tasks.n_classes
    D = d * C
    Y = np.eye(C)[tasks.ys]
    dG = np.zeros(D)
    dtheta = np.zeros((T, D))
    for k, j in points:
        x, r = tasks.Xs[k, j], der.P_s[k, j] - Y[k, j]
        gl = np.outer(x, r).ravel()
        Sz = _S(der.P_s[k, j])
        ux = der.u[k].reshape(d, C).T @ x
        h2u = np.outer(x, Sz @ ux).ravel()
        dGk = -der.J[k] @ ((der.Hval[k] - der.DAu[k]) @ (der.Kinv[k] @ gl) + h2u)
        dG += dGk / n
        dtheta[k] += der.Kinv[k] @ gl / n  # direct: theta_k moves by (1/n) K^{-1} grad l_z on removal
    dlam = np.linalg.solve(H, dG)
    dtheta += np.einsum("tij,j->ti", der.J, dlam)
    return dlam, dtheta
