"""Task A: inverse static traffic assignment on a two-link, single-OD network (a design of the brief, not the
paper's own network, which we could not recover).

Context xi ~ U[-1, 1] sets the demand q(xi) = 2 + 0.75 (xi + 1) in [2, 3.5]. Link costs are BPR-shaped,
t_e(u) = t0_e (1 + 0.15 |u|^3 u / c_e^4) (extended monotonically to u < 0), with t0 = (1, 1.5), the capacity of
link 2 known (c_2 = 1.2) and that of link 1 unknown, c_1 = exp(x) (true value 1, x_true = 0). The lower level is
the Beckmann potential in y = the flow on link 1 plus (mu/2) y^2:

    g(x, y, xi) = int_0^y t_1 + int_0^{q - y} t_2 + (mu/2) y^2,   mu = 0.01,

strongly convex in y and analytic in (y, xi) on [0, q]. The upper level fits observed flows,
f = (y - eta)^2 / 2 with eta = y*(x_true, xi) + 0.05 N(0, 1), so F(x) - F* = E_xi (y*(x, xi) - y*(0, xi))^2 / 2.
Everything is vectorised over arrays of x, y and xi (numpy broadcasting).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bases import features, quadrature


@dataclass(frozen=True)
class TwoLinkSTA:
    t0: tuple = (1.0, 1.5)
    c2: float = 1.2
    mu: float = 0.01
    q_lo: float = 2.0
    q_slope: float = 0.75
    x_true: float = 0.0
    noise: float = 0.05

    # --- the lower level ------------------------------------------------------------------------------------------
    def demand(self, xi):
        return self.q_lo + self.q_slope * (np.asarray(xi, dtype=float) + 1.0)

    def g(self, x, y, xi):
        """The Beckmann potential plus (mu/2) y^2 (0.15 / 5 = 0.03 from integrating |u|^3 u)."""
        q, e4 = self.demand(xi), np.exp(-4.0 * np.asarray(x, dtype=float))
        z = q - y
        return (self.t0[0] * (y + 0.03 * np.abs(y) ** 5 * e4)
                + self.t0[1] * (z + 0.03 * np.abs(z) ** 5 / self.c2 ** 4) + 0.5 * self.mu * y * y)

    def g_y(self, x, y, xi):
        """dg/dy = t_1(y) - t_2(q - y) + mu y."""
        q, e4 = self.demand(xi), np.exp(-4.0 * np.asarray(x, dtype=float))
        z = q - y
        return (self.t0[0] * (1.0 + 0.15 * np.abs(y) ** 3 * y * e4)
                - self.t0[1] * (1.0 + 0.15 * np.abs(z) ** 3 * z / self.c2 ** 4) + self.mu * y)

    def g_yy(self, x, y, xi):
        q, e4 = self.demand(xi), np.exp(-4.0 * np.asarray(x, dtype=float))
        z = q - y
        return 0.6 * self.t0[0] * np.abs(y) ** 3 * e4 + 0.6 * self.t0[1] * np.abs(z) ** 3 / self.c2 ** 4 + self.mu

    def g_xy(self, x, y, xi):
        """d^2 g / dx dy (c_1 = exp(x) enters t_1 through exp(-4x))."""
        e4 = np.exp(-4.0 * np.asarray(x, dtype=float))
        return -0.6 * self.t0[0] * np.abs(y) ** 3 * y * e4 + 0.0 * np.asarray(xi, dtype=float)

    def ystar(self, x, xi, tol: float = 1e-14, max_iter: int = 100):
        """y*(x, xi): the root of dg/dy by bisection-safeguarded Newton (vectorised; dg/dy increases in y, is negative
        at y = 0, and the bracket's upper end is pushed past q until dg/dy > 0: when link 1 is cheap enough, the
        extended costs put more than q on it, a negative flow on link 2)."""
        x, xi = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(xi, dtype=float))
        lo, hi = np.zeros(x.shape), self.demand(xi) * np.ones(x.shape)
        for _ in range(60):
            low = self.g_y(x, hi, xi) <= 0
            if not low.any():
                break
            lo = np.where(low, hi, lo)
            hi = np.where(low, 2.0 * hi, hi)
        y = 0.5 * (lo + hi)
        for _ in range(max_iter):
            gy = self.g_y(x, y, xi)
            lo = np.where(gy < 0, y, lo)
            hi = np.where(gy > 0, y, hi)
            step = gy / self.g_yy(x, y, xi)
            y_new = y - step
            bad = ~((y_new > lo) & (y_new < hi))
            y_new = np.where(bad, 0.5 * (lo + hi), y_new)
            done = np.max(np.abs(y_new - y)) if y.size else 0.0
            y = y_new
            if done < tol:
                break
        return y

    def link2_positive(self, x) -> bool:
        """Whether both links carry positive flow for every demand in range (then y* is analytic in xi: the costs'
        |u|^3 u is not analytic at u = 0). For x <= 0 this always holds."""
        xi = np.linspace(-1.0, 1.0, 201)
        return bool(np.all(self.demand(xi) - self.ystar(x, xi) > 0))

    def ystar_x(self, x, xi, y=None):
        """dy*/dx = -g_xy / g_yy at y* (implicit differentiation)."""
        y = self.ystar(x, xi) if y is None else y
        return -self.g_xy(x, y, xi) / self.g_yy(x, y, xi)

    # --- the upper level, exactly on a quadrature of xi ----------------------------------------------------------
    def reference(self, n_nodes: int = 160) -> "Reference":
        nodes, w = quadrature("cheb", 1, n_nodes)
        return Reference(self, nodes, w, self.ystar(self.x_true, nodes))

    def sample_obs(self, xi, rng: np.random.Generator, table: "ObsTable"):
        """Observed flows eta = y*(x_true, xi) + noise (y* from an interpolation table, built once by Newton)."""
        return table(xi) + self.noise * rng.standard_normal(np.shape(xi))


@dataclass
class ObsTable:
    """y*(x_true, .) on a fine grid, cubic-Hermite interpolated (max error ~1e-12 on 2001 points)."""

    problem: TwoLinkSTA
    n: int = 2001

    def __post_init__(self):
        from scipy.interpolate import CubicHermiteSpline

        grid = np.linspace(-1.0, 1.0, self.n)
        y = self.problem.ystar(self.problem.x_true, grid)
        # dy*/dxi = -g_yxi / g_yy, g_yxi = dq/dxi * (t_2'(q - y)) with sign: d(g_y)/dq = -t_2'(q - y)
        t2p = 0.6 * self.problem.t0[1] * np.abs(self.problem.demand(grid) - y) ** 3 / self.problem.c2 ** 4
        dy = self.problem.q_slope * t2p / self.problem.g_yy(self.problem.x_true, y, grid)
        self._spline = CubicHermiteSpline(grid, y, dy)

    def __call__(self, xi):
        return self._spline(np.asarray(xi, dtype=float))


@dataclass
class Reference:
    """Exact F(x) - F*, the exact hypergradient and the reduced problem's W*(x), on a Gauss-Legendre rule."""

    problem: TwoLinkSTA
    nodes: np.ndarray
    weights: np.ndarray
    ybar: np.ndarray  # y*(x_true, nodes): the mean of the observations

    def gap(self, x):
        """F(x) - F* for an array of x (F* = F(x_true) = noise^2 / 2; the noise term cancels)."""
        x = np.asarray(x, dtype=float)
        y = self.problem.ystar(x[..., None], self.nodes)
        return 0.5 * ((y - self.ybar) ** 2 * self.weights).sum(-1)

    def F0(self):
        return self.problem.noise ** 2 / 2.0

    def hypergrad(self, x):
        x = np.asarray(x, dtype=float)
        y = self.problem.ystar(x[..., None], self.nodes)
        return ((y - self.ybar) * self.problem.ystar_x(x[..., None], self.nodes, y) * self.weights).sum(-1)


def reduced_solution(problem: TwoLinkSTA, x: float, kind: str, N: int, n_nodes: int = 160, tol: float = 1e-13,
                     max_iter: int = 60) -> dict:
    """The reduced lower level's exact solution W*(x) = argmin_W E[g(x, W Phi(xi), xi)] by damped Newton on a
    quadrature of xi (composite per cell for one-hot), and what Props 4.1/4.2 compare:

    ``approx_err`` = E|W* Phi - y*(x, .)|, ``span_err`` = the L2 best-in-span error sqrt(E (P y* - y*)^2),
    ``hypergrad`` = grad F_Phi(x) = E[(W* Phi - ybar) (dW*/dx) Phi] with dW*/dx = -H^{-1} E[g_xy Phi],
    ``hypergrad_exact`` = grad F(x) by implicit differentiation of y*, and their difference ``hg_err``."""
    nodes, w = quadrature(kind, N, n_nodes)
    P = features(kind, N, nodes)
    ys = problem.ystar(x, nodes)
    ybar = problem.ystar(problem.x_true, nodes)
    Pw = P * w[:, None]
    G = Pw.T @ P
    # start from the L2 projection of y* on the span, then Newton on the convex reduced potential
    W, *_ = np.linalg.lstsq(G, Pw.T @ ys, rcond=None)
    span_err = float(np.sqrt((((P @ W) - ys) ** 2 * w).sum()))

    def obj(W_):
        return float((problem.g(x, P @ W_, nodes) * w).sum())

    f_old = obj(W)
    for _ in range(max_iter):
        y = P @ W
        grad = Pw.T @ problem.g_y(x, y, nodes)
        H = (P * (w * problem.g_yy(x, y, nodes))[:, None]).T @ P
        step = np.linalg.lstsq(H, grad, rcond=None)[0]
        t = 1.0
        while t > 1e-8:
            W_new = W - t * step
            f_new = obj(W_new)
            if f_new <= f_old + 1e-15 * max(1.0, abs(f_old)):
                break
            t *= 0.5
        W, f_old = W_new, f_new
        if np.max(np.abs(t * step)) < tol:
            break
    y = P @ W
    H = (P * (w * problem.g_yy(x, y, nodes))[:, None]).T @ P
    dW = -np.linalg.lstsq(H, Pw.T @ problem.g_xy(x, y, nodes), rcond=None)[0]
    hg = float(((y - ybar) * (P @ dW) * w).sum())
    hg_exact = float(((ys - ybar) * problem.ystar_x(x, nodes, ys) * w).sum())
    return {"kind": kind, "N": int(N), "x": float(x), "W": W, "approx_err": float((np.abs(y - ys) * w).sum()),
            "span_err": span_err, "hypergrad": hg, "hypergrad_exact": hg_exact, "hg_err": abs(hg - hg_exact),
            "grad_norm": float(np.linalg.norm(Pw.T @ problem.g_y(x, y, nodes)))}
