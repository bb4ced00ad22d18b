"""Setting B (full mode): the same proximal bilevel problem with an MLP 64-32-5 (tanh) as the inner model.

theta, lam in R^P, P = 64*32 + 32 + 32*5 + 5 = 2245. Everything is matrix-free in torch (float64): the T tasks'
parameters are a (T, P) tensor and every loss is a sum over tasks, so ``torch.func.grad`` / ``jvp`` of that sum give
each task's own gradient / Hessian-vector product at once (the tasks do not interact).

- inner: theta_i = argmin L(theta; D_i^tr) + mu/2 ||theta - lam||^2, Newton-CG (batched CG on K_i = hess L^tr + mu I,
  Levenberg-Marquardt damped where it meets negative curvature) with a backtracking line search, to
  max_i ||grad g_i|| < tol;
- total gradient G_i = mu K_i^{-1} grad L^val_i; total Hessian-vector product (exact, third-order term included):
  H v = sum_i w_i mu K_i^{-1} (hess L^val_i - D(hess L^tr_i)[dtheta_i] u_i) dtheta_i... written out in
  :func:`total_hvp`; the surrogate drops the third-order term; first-order IF sets J = I;
- task-IF_k = grad phi^T H^{-1} G_k with ONE CG solve s = H^{-1} grad phi (H symmetric), scipy's ``cg``;
- LOTO ground truth: inexact Newton-CG re-solves of the outer problem without task k (truncated CG on the exact total
  Hessian), warm-started at (lam*, theta*), to ||grad F|| < tol_outer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, cg
from torch.func import grad, jvp

D_IN, HID = 64, 32
DTYPE = torch.float64


def n_params(n_classes: int = 5, d_in: int = D_IN, hid: int = HID) -> int:
    return d_in * hid + hid + hid * n_classes + n_classes


@dataclass
class MLPTasks:
    """Tasks as torch tensors: support (Xs, Ys one-hot), query (Xq, Yq one-hot); X without the ones column."""

    Xs: torch.Tensor  # (T, n, d)
    Ys: torch.Tensor  # (T, n, C)
    Xq: torch.Tensor
    Yq: torch.Tensor
    hid: int = HID

    @property
    def n_classes(self) -> int:
        return self.Ys.shape[2]

    @property
    def dim(self) -> int:
        return n_params(self.n_classes, self.Xs.shape[2], self.hid)

    def __len__(self) -> int:
        return self.Xs.shape[0]

    def take(self, idx) -> "MLPTasks":
        idx = torch.as_tensor(np.asarray(idx))
        return MLPTasks(self.Xs[idx], self.Ys[idx], self.Xq[idx], self.Yq[idx], self.hid)


def from_tasks(tasks, hid: int = HID) -> MLPTasks:
    """Setting A's Tasks (standardised pixels with a trailing ones column) -> MLPTasks: the ones column dropped (the
    MLP has its own biases) and the 64 standardised pixels divided by sqrt(64), so that ||x|| ~ 1. Without that
    scaling the support-loss Hessian of the MLP has eigenvalues down to about -6 (the W1-W2 cross term grows with
    ||x||), and with mu = 1 the inner problem would have no strict argmin; with it they stay above about -0.25."""
    C = tasks.n_classes
    eye = np.eye(C)
    d = tasks.Xs.shape[2] - 1
    t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=DTYPE)  # noqa: E731
    return MLPTasks(t(tasks.Xs[..., :-1] / np.sqrt(d)), t(eye[tasks.ys]), t(tasks.Xq[..., :-1] / np.sqrt(d)),
                    t(eye[tasks.yq]), hid)


@dataclass
class SineTasks:
    """Sinusoid regression tasks (the MAML benchmark): y = A sin(x - phase), x uniform in x_range; ``tasks`` holds the
    regression targets as one output column and the inputs divided by x_scale (so that |x| <= 1, as for the digits)."""

    tasks: MLPTasks
    amp: np.ndarray  # (T,)
    phase: np.ndarray  # (T,)
    x_scale: float


def make_sine_tasks(rng: np.random.Generator, n_tasks: int, k_shot: int = 10, q_shot: int = 10,
                    amp_range=(0.1, 5.0), phase_range=(0.0, np.pi), x_range=(-5.0, 5.0), hid: int = 40) -> SineTasks:
    """n_tasks sinusoids with amplitude and phase uniform in their ranges (the brief: [0.1, 5] and [0, pi]), K = k_shot
    support and q_shot query points per task, drawn independently and uniformly in x_range."""
    if n_tasks < 1 or k_shot < 1 or q_shot < 1:
        raise ValueError(f"make_sine_tasks: n_tasks, k_shot, q_shot must be >= 1, got {n_tasks}, {k_shot}, {q_shot}")
    amp = rng.uniform(*amp_range, size=n_tasks)
    phase = rng.uniform(*phase_range, size=n_tasks)
    xs = rng.uniform(*x_range, size=(n_tasks, k_shot))
    xq = rng.uniform(*x_range, size=(n_tasks, q_shot))
    scale = float(max(abs(x_range[0]), abs(x_range[1])))

    def t(a):
        return torch.as_tensor(np.ascontiguousarray(a)[..., None], dtype=DTYPE)

    def y(x):
        return amp[:, None] * np.sin(x - phase[:, None])

    return SineTasks(MLPTasks(t(xs / scale), t(y(xs)), t(xq / scale), t(y(xq)), hid), amp, phase, scale)


def _unpack(th: torch.Tensor, d: int, hid: int, C: int):
    T = th.shape[0]
    i = d * hid
    W1 = th[:, :i].reshape(T, d, hid)
    b1 = th[:, i:i + hid]
    i += hid
    W2 = th[:, i:i + hid * C].reshape(T, hid, C)
    b2 = th[:, i + hid * C:]
    return W1, b1, W2, b2


def logits(th: torch.Tensor, X: torch.Tensor, hid: int = HID, C: int = 5) -> torch.Tensor:
    W1, b1, W2, b2 = _unpack(th, X.shape[2], hid, C)
    h = torch.tanh(torch.einsum("tnd,tdh->tnh", X, W1) + b1[:, None])
    return torch.einsum("tnh,thc->tnc", h, W2) + b2[:, None]


def task_losses(th, X, Y, hid=HID):
    """(T,) mean cross-entropy of each task (Y one-hot); with one output column (Y of shape (T, n, 1): regression, as
    for the sinusoids) half the mean squared error."""
    Z = logits(th, X, hid, Y.shape[2])
    if Y.shape[2] == 1:
        return 0.5 * ((Z - Y) ** 2).sum(-1).mean(-1)
    return -(Y * torch.log_softmax(Z, dim=-1)).sum(-1).mean(-1)


def _sum_loss(th, X, Y, hid):
    return task_losses(th, X, Y, hid).sum()


def grad_loss(th, X, Y, hid=HID):
    return grad(_sum_loss)(th, X, Y, hid)


def hvp_loss(th, V, X, Y, hid=HID):
    """Per-task Hessian-vector products of the mean loss: (T, P)."""
    return jvp(lambda t: grad_loss(t, X, Y, hid), (th,), (V,))[1]


def third_loss(th, U, V, X, Y, hid=HID):
    """Per-task D(hess L)[V] U: the derivative of hess L(theta) U along V (a symmetric bilinear map of U, V)."""
    return jvp(lambda t: hvp_loss(t, U, X, Y, hid), (th,), (V,))[1]


def batched_cg(matvec, B: torch.Tensor, tol: float = 1e-11, max_iter: int = 200, truncate: bool = False,
               return_neg: bool = False):
    """Solve A_t x_t = b_t for every row t (A_t SPD, applied together by ``matvec``). Returns (X, iterations), and
    with ``return_neg`` also the mask of rows that met negative curvature.
    truncate=True (Newton steps far from a solution): a row meeting negative curvature stops there (Steihaug), and
    keeps b_t itself when it stopped at once; otherwise negative curvature raises."""
    X = torch.zeros_like(B)
    R = B.clone()
    Pd = R.clone()
    rs = (R * R).sum(1)
    bn = torch.sqrt((B * B).sum(1)).clamp_min(1e-300)
    stopped = torch.zeros(B.shape[0], dtype=torch.bool)
    for it in range(max_iter):
        active = (torch.sqrt(rs) > tol * bn) & ~stopped
        if not bool(active.any()):
            break
        AP = matvec(Pd)
        pap = (Pd * AP).sum(1)
        neg = active & (pap <= 0)
        if bool(neg.any()):
            if not truncate:
                raise FloatingPointError("batched_cg: the inner Newton matrix hess L + mu I is not positive definite")
            first = neg & (it == 0)
            X = torch.where(first[:, None], B, X)
            stopped = stopped | neg
            active = active & ~neg
        a = torch.where(active, rs / torch.where(active, pap, torch.ones_like(pap)), torch.zeros_like(rs))
        X = X + a[:, None] * Pd
        R = R - a[:, None] * AP
        rs_new = (R * R).sum(1)
        beta = torch.where(active, rs_new / rs.clamp_min(1e-300), torch.zeros_like(rs))
        Pd = R + beta[:, None] * Pd
        rs = torch.where(active, rs_new, rs)
    return (X, it, stopped) if return_neg else (X, it)


@dataclass
class Inner:
    theta: torch.Tensor  # (T, P)
    newton: int
    cg: int


def inner_solve(lam: torch.Tensor, tasks: MLPTasks, mu: float, theta0: torch.Tensor | None = None,
                tol: float = 1e-11, max_iter: int = 200) -> Inner:
    """Newton-CG on g_i(theta) = L^tr_i(theta) + mu/2 ||theta - lam||^2 for all tasks at once, to
    max ||grad g|| < tol * max(1, rms(lam)) (float64 rounding of mu (theta - lam) grows with lam: at the trial points
    of an outer line search far out, rms(lam) ~ 1e3, an absolute 1e-11 is below it; near lam* rms(lam) ~ 1).

    Far from a minimum (large lam, where the tanh MLP's support loss is strongly non-convex) plain Newton-CG stalls:
    a task whose CG met negative curvature, or whose step needed backtracking to a quarter or less, gets an extra
    Levenberg-Marquardt shift delta_i (the next Newton matrix is hess L + (mu + delta_i) I); each full step accepted
    divides delta_i by 4, and below 1e-8 mu it is 0 again, so the last steps are exact Newton steps (quadratic
    convergence to the tolerance)."""
    X, Y, h = tasks.Xs, tasks.Ys, tasks.hid
    T = len(tasks)
    lam_b = lam.expand(T, -1) if lam.dim() == 1 else lam
    th = lam_b.clone() if theta0 is None else theta0.clone()

    def gval(t):
        return task_losses(t, X, Y, h) + 0.5 * mu * ((t - lam_b) ** 2).sum(1)

    n_cg = 0
    delta = torch.zeros(T, dtype=th.dtype)
    tol = tol * max(1.0, float(torch.sqrt((lam_b * lam_b).mean())))
    for it in range(max_iter):
        g = grad_loss(th, X, Y, h) + mu * (th - lam_b)
        gn = torch.sqrt((g * g).sum(1))
        if float(gn.max()) < tol:
            return Inner(th, it, n_cg)
        forcing = min(0.1, float(gn.max()) ** 0.5)  # inexact Newton (Eisenstat-Walker forcing term)
        shift = (mu + delta)[:, None]
        step, k, neg = batched_cg(lambda V: hvp_loss(th, V, X, Y, h) + shift * V, -g, tol=forcing, truncate=True,
                                  return_neg=True)
        n_cg += k
        f0 = gval(th)
        a = torch.ones(T, dtype=th.dtype)
        for _ in range(30):  # per-task backtracking (Armijo)
            cand = th + a[:, None] * step
            bad = gval(cand) > f0 + 1e-4 * a * (g * step).sum(1) + 1e-14 * f0.abs()
            if not bool(bad.any()):
                break
            a = torch.where(bad, a * 0.5, a)
        th = th + a[:, None] * step
        worse = neg | (a <= 0.25)
        delta = torch.where(worse, torch.clamp(4.0 * delta, min=mu), torch.where(a == 1.0, delta / 4.0, delta))
        delta = torch.where(delta < 1e-8 * mu, torch.zeros_like(delta), delta)
    g = grad_loss(th, X, Y, h) + mu * (th - lam_b)
    raise RuntimeError(f"mlp.inner_solve: max ||grad g|| = {float(torch.sqrt((g * g).sum(1)).max()):.2e} after "
                       f"{max_iter} Newton steps (tol {tol:.0e})")


def kinv(th, tasks: MLPTasks, mu: float, B: torch.Tensor):
    """K_i^{-1} b_i with K_i = hess L^tr_i(theta_i) + mu I (batched CG)."""
    return batched_cg(lambda V: hvp_loss(th, V, tasks.Xs, tasks.Ys, tasks.hid) + mu * V, B)[0]


@dataclass
class Point:
    """Everything at one lam: the inner solutions, u_i = K_i^{-1} grad L^val_i, G_i = mu u_i, per-task query loss."""

    lam: torch.Tensor
    theta: torch.Tensor
    u: torch.Tensor
    G: torch.Tensor  # (T, P)
    loss_val: torch.Tensor  # (T,)
    g_val: torch.Tensor  # (T, P) grad L^val at theta_i (first-order IF's "gradient")


def at(lam, tasks: MLPTasks, mu, theta0=None) -> Point:
    inn = inner_solve(lam, tasks, mu, theta0)
    gv = grad_loss(inn.theta, tasks.Xq, tasks.Yq, tasks.hid)
    u = kinv(inn.theta, tasks, mu, gv)
    lv = task_losses(inn.theta, tasks.Xq, tasks.Yq, tasks.hid)
    return Point(lam, inn.theta, u, mu * u, lv, gv)


def outer_grad(pt: Point, w: torch.Tensor, rho: float) -> torch.Tensor:
    return (w[:, None] * pt.G).sum(0) + rho * pt.lam


def total_hvp(pt: Point, tasks: MLPTasks, mu: float, rho: float, w: torch.Tensor, v: torch.Tensor,
              kind: str = "full") -> torch.Tensor:
    """H v for the weighted outer objective: kind "full" (third-order term included, the exact Hessian of F),
    "surrogate" (without it) or "first_order" (J = I: sum_i w_i hess L^val_i v + rho v)."""
    T = len(tasks)
    V = v.expand(T, -1)
    h = tasks.hid
    if kind == "first_order":
        return (w[:, None] * hvp_loss(pt.theta, V, tasks.Xq, tasks.Yq, h)).sum(0) + rho * v
    dth = mu * kinv(pt.theta, tasks, mu, V)
    a = hvp_loss(pt.theta, dth, tasks.Xq, tasks.Yq, h)
    if kind == "full":
        a = a - third_loss(pt.theta, pt.u, dth, tasks.Xs, tasks.Ys, h)
    return (w[:, None] * mu * kinv(pt.theta, tasks, mu, a)).sum(0) + rho * v


def hess_solve(pt, tasks, mu, rho, w, b: torch.Tensor, kind="full", rtol=1e-10, maxiter=500):
    """H^{-1} b by scipy's conjugate gradients on the matrix-free total Hessian. Returns (x, matvecs)."""
    P = b.shape[0]
    count = [0]

    def mv(x):
        count[0] += 1
        return total_hvp(pt, tasks, mu, rho, w, torch.as_tensor(np.asarray(x).ravel(), dtype=DTYPE), kind).numpy()

    op = LinearOperator((P, P), matvec=mv, dtype=float)
    x, info = cg(op, b.numpy(), rtol=rtol, atol=0.0, maxiter=maxiter)
    return torch.as_tensor(x, dtype=DTYPE), count[0], info


def init_lam(tasks: MLPTasks, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    d, h, C = tasks.Xs.shape[2], tasks.hid, tasks.n_classes
    W1 = torch.randn(d, h, generator=gen, dtype=DTYPE) * scale  # inputs have ||x|| ~ 1 (see from_tasks)
    W2 = torch.randn(h, C, generator=gen, dtype=DTYPE) * scale / np.sqrt(h)
    return torch.cat([W1.ravel(), torch.zeros(h, dtype=DTYPE), W2.ravel(), torch.zeros(C, dtype=DTYPE)])


@dataclass
class OuterB:
    lam: torch.Tensor
    pt: Point
    grad_norm: float
    newton: int
    matvecs: int


def newton_step(pt: Point, tasks, mu, rho, w, g: torch.Tensor, rtol: float, maxiter: int = 500):
    """Inexact Newton step on the outer problem: truncated CG (Steihaug) on H s = -g, H the exact total Hessian, to
    ||H s + g|| <= rtol ||g||; a direction of negative curvature stops CG there (the steepest-descent direction -g
    when met at once). Returns (s, matvecs, met negative curvature)."""
    def mv(V):
        return total_hvp(pt, tasks, mu, rho, w, V[0])[None]

    S, k, neg = batched_cg(mv, -g[None], tol=rtol, max_iter=maxiter, truncate=True, return_neg=True)
    return S[0], k, bool(neg[0])


def newton_outer(tasks, mu, rho, w, lam0, theta0=None, tol=1e-9, max_iter=40) -> OuterB:
    """Inexact Newton-CG on the outer objective to ||grad F|| < tol: each step solves H s = -g (exact total Hessian,
    truncated CG) only to the forcing tolerance min(0.1, sqrt(||grad F||)) (Eisenstat-Walker: superlinear
    convergence, far fewer Hessian-vector products than solving every step to 1e-8), then backtracks until F
    decreases (Armijo) or ||grad F|| halves. A trial point where the inner solve stalls is rejected like one that
    fails Armijo (the step is halved); an accepted point always has converged inner problems."""
    lam = lam0.clone()
    pt = at(lam, tasks, mu, theta0)
    mvs = 0

    def Fval(p):
        return float((w * p.loss_val).sum() + 0.5 * rho * (p.lam ** 2).sum())

    for it in range(max_iter):
        g = outer_grad(pt, w, rho)
        gn = float(torch.linalg.vector_norm(g))
        if gn < tol:
            return OuterB(lam, pt, gn, it, mvs)
        step, k, _ = newton_step(pt, tasks, mu, rho, w, g, rtol=max(1e-12, min(0.1, gn ** 0.5)))
        mvs += k
        f0, a, cand, a_c = Fval(pt), 1.0, None, 0.0
        for _ in range(40):
            try:
                c = at(lam + a * step, tasks, mu, pt.theta)
            except (RuntimeError, FloatingPointError):
                a *= 0.5
                continue
            cand, a_c = c, a
            gc = float(torch.linalg.vector_norm(outer_grad(c, w, rho)))
            if Fval(c) <= f0 + 1e-4 * a * float(g @ step) + 1e-12 * abs(f0) or gc < 0.5 * gn:
                break
            a *= 0.5
        if cand is None:
            raise RuntimeError(f"mlp.newton_outer: no trial point along the Newton step had a converged inner "
                               f"problem (||grad F|| = {gn:.2e})")
        lam, pt = lam + a_c * step, cand
    gn = float(torch.linalg.vector_norm(outer_grad(pt, w, rho)))
    return OuterB(lam, pt, gn, max_iter, mvs)


def outer_solve(tasks, mu, rho, lam0, tol=1e-9) -> OuterB:
    """L-BFGS (scipy) from lam0 to ||grad F|| ~ 1e-5, then Newton-CG with the exact total Hessian to tol."""
    from scipy.optimize import minimize

    w = torch.ones(len(tasks), dtype=DTYPE)
    cache = {"theta": None}

    def fg(x):
        lam = torch.as_tensor(x, dtype=DTYPE)
        p = at(lam, tasks, mu, cache["theta"])
        cache["theta"] = p.theta
        return (float((p.loss_val).sum() + 0.5 * rho * (lam ** 2).sum()), outer_grad(p, w, rho).numpy())

    r = minimize(fg, lam0.numpy(), jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-5})
    return newton_outer(tasks, mu, rho, w, torch.as_tensor(r.x, dtype=DTYPE), cache["theta"], tol=tol)


def phi_grad(lam, test: MLPTasks, mu, theta0=None):
    """phi(lam) = mean post-adaptation query loss over the meta-test tasks, its gradient (and first-order gradient)."""
    p = at(lam, test, mu, theta0)
    return float(p.loss_val.mean()), p.G.mean(0), p.g_val.mean(0), p


@dataclass
class TaskIFB:
    full: np.ndarray
    surrogate: np.ndarray
    first_order: np.ndarray
    tracin: np.ndarray
    dlam: np.ndarray | None
    matvecs: dict
    seconds: float


def task_if_b(res: OuterB, tasks, test, mu, rho) -> TaskIFB:
    """All-task IF in setting B: one CG solve per Hessian variant, s = H^{-1} grad phi, scores G_k^T s."""
    t0 = time.perf_counter()
    w = torch.ones(len(tasks), dtype=DTYPE)
    _, gphi, gphi_fo, _ = phi_grad(res.lam, test, mu)
    mvs = {}
    s_full, mvs["full"], _ = hess_solve(res.pt, tasks, mu, rho, w, gphi, "full")
    secs = time.perf_counter() - t0
    s_sur, mvs["surrogate"], _ = hess_solve(res.pt, tasks, mu, rho, w, gphi, "surrogate")
    s_fo, mvs["first_order"], _ = hess_solve(res.pt, tasks, mu, rho, w, gphi_fo, "first_order")
    G = res.pt.G
    return TaskIFB((G @ s_full).numpy(), (G @ s_sur).numpy(), (res.pt.g_val @ s_fo).numpy(), (G @ gphi).numpy(),
                   None, mvs, secs)
