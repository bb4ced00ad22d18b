"""Stepsized Newton methods of the paper and its baselines, all driven by one loop (:func:`run`).

Every second-order method moves along the Newton direction n_k = [H_k]^+ grad f(x_k),
x_{k+1} = x_k - alpha_k n_k, and differs only in how alpha_k is chosen. One eigendecomposition of the
Hessian per iteration (:class:`HessianEig`) serves everything the iteration needs: the direction, the
Newton decrement g_k = ||grad f(x_k)||*_{x_k}, the dual norms of trial gradients (GRLS, UN) and the
regularised solves (GRN, SUN).

Method names for :func:`run`:

===========  =====================================================================================
``rn``       root-Newton schedule, alpha = 1/(1 + theta), theta = (9 M)^{1/(q-1)} g^{(q-2)/(q-1)}
``aicn``     AICN (Hanzely et al. 2022), alpha = (sqrt(1 + 2 L g) - 1)/(L g)
``grn``      gradient-regularised Newton, x+ = x - (H + lambda I)^{-1} grad, lambda = (6 L g^{q-2})^{1/(q-1)}
``damped``   fixed stepsize alpha
``gm``       gradient method with Nesterov's backtracking on L
``un``       universal Newton (backtracking on sigma, unknown constants)
``sun``      super-universal Newton (Doikov et al. 2024)
``grls``     gradient-regulated linesearch on the Newton ray
``gn``       greedy Newton (exact linesearch of f on the Newton ray)
``armijo``   Armijo backtracking on the Newton ray
===========  =====================================================================================
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.optimize import brentq, minimize, minimize_scalar

from lib.common import limit_threads

from .problems import Problem

METHODS = ("rn", "aicn", "grn", "damped", "gm", "un", "sun", "grls", "gn", "armijo")
RCOND = 1e-10  # relative eigenvalue cut-off of the Hessian pseudo-inverse (as in the paper's code)


class HessianEig:
    """One eigendecomposition H = V diag(w) V^T, reused for H^+ v, dual norms and (H + lam I)^{-1} v.

    Eigenvalues with |w_i| <= rcond * max|w| are treated as zero (pseudo-inverse), which is what the
    degenerate polytope problem needs. ``absolute=True`` replaces H by |H| (same eigenvectors, |eigenvalues|),
    an option for nonconvex problems where the raw Newton direction may point uphill.
    """

    def __init__(self, H: np.ndarray, rcond: float = RCOND, absolute: bool = False):
        H = 0.5 * (H + H.T)
        self.w, self.V = np.linalg.eigh(H)
        if absolute:  # |H| = V |diag(w)| V^T: the "saddle-free" metric for nonconvex problems
            self.w = np.abs(self.w)
        scale = float(np.max(np.abs(self.w))) if self.w.size else 0.0
        self.keep = np.abs(self.w) > rcond * scale if scale > 0 else np.zeros_like(self.w, dtype=bool)
        self.winv = np.zeros_like(self.w)
        self.winv[self.keep] = 1.0 / self.w[self.keep]

    def solve(self, v: np.ndarray) -> np.ndarray:
        """H^+ v for v of shape (d,) or (d, G)."""
        c = self.V.T @ v
        return self.V @ (self.winv[:, None] * c if c.ndim == 2 else self.winv * c)

    def dual_norm2(self, v: np.ndarray) -> np.ndarray:
        """v^T H^+ v (the squared local dual norm); v of shape (d,) or (G, d) -> scalar or (G,)."""
        if v.ndim == 1:
            c = self.V.T @ v
            return np.float64(np.sum(self.winv * c * c))  # numpy scalar: x / 0 gives inf, not an exception
        c = v @ self.V  # (G, d)
        return np.sum(self.winv * c * c, axis=1)

    def local_norm2(self, h: np.ndarray) -> float:
        """h^T H h."""
        c = self.V.T @ h
        return float(np.sum(self.w * c * c))

    def shifted_solve(self, v: np.ndarray, lam: float) -> np.ndarray:
        """(H + lam I)^{-1} v."""
        return self.V @ ((self.V.T @ v) / (self.w + lam))


class HessianChol:
    """The same interface as :class:`HessianEig` from a Cholesky factor H = L L^T, for a Hessian that is
    positive definite by construction (l2-regularised logistic regression): about 6x cheaper than an
    eigendecomposition at d = 64 (direction included), and equal to it up to rounding when the eigenvalues are far above the cut-off."""

    def __init__(self, H: np.ndarray, L: np.ndarray):
        self.H, self.L = H, L

    def solve(self, v: np.ndarray) -> np.ndarray:
        return cho_solve((self.L, True), v, check_finite=False)

    def dual_norm2(self, v: np.ndarray) -> np.ndarray:
        if v.ndim == 1:
            c = solve_triangular(self.L, v, lower=True, check_finite=False)
            return np.float64(c @ c)
        c = solve_triangular(self.L, v.T, lower=True, check_finite=False)  # (d, G)
        return np.einsum("ig,ig->g", c, c)

    def local_norm2(self, h: np.ndarray) -> float:
        return float(h @ self.H @ h)

    def shifted_solve(self, v: np.ndarray, lam: float) -> np.ndarray:
        Hs = self.H.copy()
        Hs[np.diag_indices_from(Hs)] += lam
        return cho_solve(cho_factor(Hs, lower=True, check_finite=False), v, check_finite=False)


def factorize(problem: Problem, H: np.ndarray, rcond: float = RCOND, absolute: bool = False):
    """:class:`HessianChol` when ``problem`` is strongly convex by construction (``info["mu"] > 0``, i.e. every
    eigenvalue >= mu, far above the pseudo-inverse cut-off), else :class:`HessianEig` (pseudo-inverse)."""
    mu = problem.info.get("mu", 0.0)
    if not absolute and mu and mu > 0:
        H = 0.5 * (H + H.T)
        scale = float(np.max(np.abs(np.diag(H))))
        if mu > 1e3 * rcond * scale:
            try:
                return HessianChol(H, np.linalg.cholesky(H))
            except np.linalg.LinAlgError:
                pass
    return HessianEig(H, rcond, absolute)


def newton_direction(H: np.ndarray, g: np.ndarray, rcond: float = RCOND):
    """Newton direction n = H^+ g from an eigendecomposition; returns ``(n, solve_fn)``, solve_fn(v) = H^+ v."""
    eig = HessianEig(H, rcond)
    return eig.solve(g), eig.solve


# ----------------------------------------------------------------------------- closed-form stepsizes
def rn_step(g_local: float, q: float, M: float) -> float:
    """Root-Newton stepsize alpha = 1/(1 + (9M)^{1/(q-1)} g^{(q-2)/(q-1)}), q in [2, 4], M > 0."""
    if not 2.0 <= q <= 4.0:
        raise ValueError(f"q must be in [2, 4], got {q}")
    if M <= 0:
        raise ValueError(f"M must be > 0, got {M}")
    theta = (9.0 * M) ** (1.0 / (q - 1.0)) * max(g_local, 0.0) ** ((q - 2.0) / (q - 1.0))
    return 1.0 / (1.0 + theta)


def aicn_step(g_local: float, L: float) -> float:
    """AICN stepsize (sqrt(1 + 2 L g) - 1)/(L g) (-> 1 as L g -> 0)."""
    if L <= 0:
        raise ValueError(f"L must be > 0, got {L}")
    t = L * max(g_local, 0.0)
    if t < 1e-12:
        return 1.0
    return (math.sqrt(1.0 + 2.0 * t) - 1.0) / t


def regularized_stepsize(g_local: float, sigma: float, beta: float) -> float:
    """The root in (0, 1] of P[alpha] = 1 - alpha - sigma g^beta alpha^{1+beta}.

    By the stepsize-regularisation duality, x - alpha n minimises the local model
    f(x) + <grad, h> + ||h||_x^2/2 + sigma/(2+beta) ||h||_x^{2+beta}.
    """
    c = sigma * max(g_local, 0.0) ** beta
    if c <= 0:
        return 1.0
    return brentq(lambda a: 1.0 - a - c * a ** (1.0 + beta), 0.0, 1.0, xtol=1e-16, rtol=4 * np.finfo(float).eps)


def rn_as_regularization(g_local: float, sigma: float, beta: float) -> float:
    """RN's closed form for the same model: theta = (sigma g^beta)^{1/(1+beta)}, i.e. q = 2 + beta, 9M = sigma.

    It solves the root equation with (1 + theta)^beta replaced by theta^beta, so it never exceeds
    :func:`regularized_stepsize` and agrees with it as theta -> 0 or infinity.
    """
    return rn_step(g_local, 2.0 + beta, sigma / 9.0)


def regularized_model_argmin(x: np.ndarray, problem: Problem, sigma: float, beta: float,
                             h0: Optional[np.ndarray] = None) -> np.ndarray:
    """Numerically minimise the (2+beta)-regularised local model around x over all of R^d (no ray assumed).

    Phi(h) = <grad f(x), h> + h^T H h / 2 + sigma/(2+beta) (h^T H h)^{(2+beta)/2}; returns y = x + h*.
    Uses scipy's trust-region 'trust-exact' with exact gradient and Hessian.
    """
    g = problem.grad(x)
    H = problem.hess(x)
    H = 0.5 * (H + H.T)
    if h0 is None:
        h0 = -0.5 * np.linalg.lstsq(H, g, rcond=None)[0]

    def phi(h):
        Hh = H @ h
        r2 = max(h @ Hh, 0.0)
        return g @ h + 0.5 * r2 + sigma / (2.0 + beta) * r2 ** (1.0 + beta / 2.0)

    def dphi(h):
        Hh = H @ h
        r2 = max(h @ Hh, 0.0)
        return g + Hh + sigma * r2 ** (beta / 2.0) * Hh

    def d2phi(h):
        Hh = H @ h
        r2 = max(h @ Hh, 1e-300)
        return H * (1.0 + sigma * r2 ** (beta / 2.0)) + sigma * beta * r2 ** (beta / 2.0 - 1.0) * np.outer(Hh, Hh)

    res = minimize(phi, h0, jac=dphi, hess=d2phi, method="trust-exact", options={"gtol": 1e-13, "maxiter": 500})
    return x + res.x


# ----------------------------------------------------------------------------- linesearch helpers
def _log_grid(points: int, lo: float = 1e-10) -> np.ndarray:
    return np.geomspace(lo, 1.0, int(points))


def _ray_search(objective_many: Callable[[np.ndarray], np.ndarray], objective_one: Callable[[float], float],
                grid: np.ndarray, refine: bool, value_at_zero: float) -> tuple[float, float, int]:
    """Minimise an objective of alpha over {0} and the log grid, then refine by bounded Brent search on log(alpha).

    alpha = 0 (no move, objective ``value_at_zero``) wins only when no grid point improves on it, as in the
    paper's code; on a convex problem away from the optimum it never does. Returns (alpha, value, evaluations).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        vals = objective_many(grid)
    vals = np.where(np.isfinite(vals), vals, np.inf)
    i = int(np.argmin(vals))
    best_a, best_v, evals = float(grid[i]), float(vals[i]), len(grid)
    if not best_v < value_at_zero:
        return 0.0, float(value_at_zero), evals
    if refine and len(grid) > 2:
        lo, hi = np.log(grid[max(i - 1, 0)]), np.log(grid[min(i + 1, len(grid) - 1)])
        counter = [0]

        def fun(t):
            counter[0] += 1
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                v = objective_one(float(np.exp(t)))
            return v if np.isfinite(v) else np.inf

        res = minimize_scalar(fun, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
        evals += counter[0]
        if res.fun < best_v:
            best_a, best_v = float(np.exp(res.x)), float(res.fun)
    return best_a, best_v, evals


def gn_alpha(problem: Problem, x: np.ndarray, fx: float, n: np.ndarray, grid: np.ndarray,
             refine: bool = True) -> tuple[float, int]:
    """Greedy Newton: argmin over alpha in {0} U grid (then refined) of f(x - alpha n). Returns (alpha, evaluations)."""
    alpha, _, ev = _ray_search(lambda a: problem.f_many(x[None, :] - a[:, None] * n[None, :]),
                               lambda a: problem.f(x - a * n), grid, refine, fx)
    return alpha, ev


def grls_alpha(problem: Problem, x: np.ndarray, fx: float, n: np.ndarray, eig: "HessianEig", grid: np.ndarray,
               refine: bool = True) -> tuple[float, int]:
    """GRLS: argmin of [f(x - alpha n) - f(x)] / ||grad f(x - alpha n)||*_x^2, the dual norm taken with the Hessian
    at x (the same eigendecomposition as the direction). Returns (alpha, evaluations of f and of grad each)."""

    def many(a):
        Y = x[None, :] - a[:, None] * n[None, :]
        return (problem.f_many(Y) - fx) / eig.dual_norm2(problem.grad_many(Y))

    def one(a):
        y = x - a * n
        return (problem.f(y) - fx) / eig.dual_norm2(problem.grad(y))

    alpha, _, ev = _ray_search(many, one, grid, refine, 0.0)
    return alpha, ev


def linesearch_stepsizes(problem: Problem, x: np.ndarray, grid_points: int = 60, refine: bool = True,
                         curvature: str = "raw") -> tuple[float, float]:
    """(alpha_GN, alpha_GRLS) that the two linesearches would take at the same point x."""
    with limit_threads(1):  # small matrices: single-threaded BLAS is far faster
        eig = factorize(problem, problem.hess(x), RCOND, curvature == "abs")
        gx = problem.grad(x)
        n = eig.solve(gx)
        fx = problem.f(x)
        grid = _log_grid(grid_points)
        return gn_alpha(problem, x, fx, n, grid, refine)[0], grls_alpha(problem, x, fx, n, eig, grid, refine)[0]


# ----------------------------------------------------------------------------- the driver
_DEFAULTS = {
    "rn": {"q": 3.0, "M": 1.0},
    "aicn": {"L": 1.0},
    "grn": {"q": 3.0, "L": 1.0},
    "damped": {"alpha": 1.0},
    "gm": {"L0": 1.0, "L_min": 1e-5},
    "un": {"beta": 1.0, "sigma0": 1.0, "c": 2.0, "max_backtracks": 100},
    "sun": {"a": 1.0, "H0": 1.0, "H_min": 1e-5, "max_backtracks": 40},
    "grls": {"grid_points": 60, "refine": True},
    "gn": {"grid_points": 60, "refine": True},
    "armijo": {"gamma": 0.5, "tau": 0.5, "max_backtracks": 60},
}
_COMMON = {"rcond": RCOND, "curvature": "raw", "keep_iterates": False, "f_stop": None}
_NEEDS_DECREMENT = ("rn", "aicn", "grn", "un")


def method_options(method: str, **kw) -> dict:
    """The options of ``method`` with its defaults filled in (unknown options raise)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} unknown; allowed: {', '.join(METHODS)}")
    opts = dict(_DEFAULTS[method])
    opts.update(_COMMON)
    unknown = set(kw) - set(opts)
    if unknown:
        raise ValueError(f"method {method!r} got unknown option(s) {sorted(unknown)}; allowed: {sorted(opts)}")
    opts.update(kw)
    if opts["curvature"] not in ("raw", "abs"):
        raise ValueError(f"option 'curvature' got {opts['curvature']!r}; allowed: 'raw', 'abs'")
    return opts


def threads_for(problem: Problem):
    """The BLAS thread cap for ``problem``'s linear algebra: one thread, whatever the size.

    Measured on the suite's shared 2-core machine (load 4-5) with a 48842 x 123 LIBSVM file: the Hessian
    X^T diag(w) X / m (numpy's syrk for B^T B) takes 0.07-0.10 s on one thread and 0.4-1.3 s on two, a root-Newton
    iteration 0.14-0.17 s against 1.2-2.0 s; small problems (d = 30-100) gain even more from one thread. One thread
    also keeps the rounding, hence every number, independent of the machine's load.
    """
    return limit_threads(1)


def run(problem: Problem, x0: np.ndarray, method: str, iters: int, **kw) -> dict:
    """Run ``method`` for at most ``iters`` iterations from ``x0`` (see :func:`_run`)."""
    with threads_for(problem):
        return _run(problem, x0, method, iters, **kw)


_STATEFUL = ("un", "sun", "gm")  # methods whose next step may differ at the same point (sigma, H or L moved)


def _run(problem: Problem, x0: np.ndarray, method: str, iters: int, **kw) -> dict:
    """Run ``method`` for at most ``iters`` iterations from ``x0``.

    ``f_stop`` (option): stop as soon as f(x_k) <= f_stop (pass f* plus a tolerance far below the claims' 1e-8);
    the run then ends early and its arrays are shorter. A run also ends early when its iterate stops moving (a
    stall that would repeat forever, e.g. greedy Newton on an uphill direction) or becomes non-finite. A run that
    ends by ``iters`` has ``stop = "budget"``: it did not converge, whatever its last gap.

    Returns a dict with ``f`` (K+1 values, K <= iters the iterations made), ``alpha`` (K stepsizes; NaN where the
    method is not a stepsize on the Newton ray), ``g_local`` (Newton decrements), ``n_f``/``n_g`` (cumulative
    function / gradient evaluations, Hessians not counted), ``backtracks`` (inner trials per iteration,
    UN/SUN/GM/Armijo), ``sigma`` (UN's sigma_k / SUN's H_k / GM's L_k per iteration), ``x`` (final point),
    ``stop`` ("target", "budget", "stalled" or "diverged"), ``method``, ``options``, and with
    ``keep_iterates=True`` also ``xs`` (all iterates, (K+1, d)). ``curvature="abs"`` uses |H|.
    """
    opts = method_options(method, **kw)
    f_stop = opts["f_stop"]
    stop = "budget"
    rcond, absolute = opts["rcond"], opts["curvature"] == "abs"
    x = np.array(x0, dtype=float)
    fs, alphas, gls, nf, ng, backs, sig, xs = [], [], [], [], [], [], [], []
    n_f = n_g = 0
    state = {"sigma": opts.get("sigma0"), "H": opts.get("H0"), "L": opts.get("L0")}
    grid = _log_grid(opts["grid_points"]) if method in ("grls", "gn") else None

    fx = problem.f(x)
    n_f += 1
    for _k in range(iters):
        if f_stop is not None and fx <= f_stop:
            stop = "target"
            break
        fs.append(fx)
        if opts["keep_iterates"]:
            xs.append(x.copy())
        gx = problem.grad(x)
        n_g += 1
        alpha, back, g_loc = np.nan, 0, np.nan
        if not np.all(np.isfinite(gx)) or not np.isfinite(fx):
            x_new = x  # diverged: freeze
        elif method == "gm":
            L = state["L"]
            for back in range(60):
                T = x - gx / L
                fT = problem.f(T)
                n_f += 1
                d = T - x
                if fT <= fx + gx @ d + 0.5 * L * d @ d:
                    break
                L *= 2.0
            state["L"] = max(L * 0.5, opts["L_min"])
            x_new, alpha, back = T, 1.0 / L, back + 1
        else:
            eig = factorize(problem, problem.hess(x), rcond, absolute)
            n = eig.solve(gx)
            g2 = float(gx @ n)
            g_loc = math.sqrt(g2) if g2 > 0 else 0.0
            if not np.any(n) or not np.all(np.isfinite(n)):
                x_new, alpha = x, 0.0  # stationary for the model: nothing to do
            elif g2 <= 0 and method in _NEEDS_DECREMENT:
                x_new, alpha = x, 0.0  # the Newton decrement is undefined (indefinite Hessian): stall
            elif method == "rn":
                alpha = rn_step(g_loc, opts["q"], opts["M"])
                x_new = x - alpha * n
            elif method == "aicn":
                alpha = aicn_step(g_loc, opts["L"])
                x_new = x - alpha * n
            elif method == "damped":
                alpha = float(opts["alpha"])
                x_new = x - alpha * n
            elif method == "grn":
                q = opts["q"]
                lam = (6.0 * opts["L"] * g_loc ** (q - 2.0)) ** (1.0 / (q - 1.0))
                s = eig.shifted_solve(gx, lam)
                x_new = x - s
            elif method == "un":
                beta, c, sigma = opts["beta"], opts["c"], state["sigma"]
                for j in range(opts["max_backtracks"] + 1):
                    theta = c**j * sigma * g_loc**beta
                    alpha = 1.0 / (1.0 + theta)
                    y = x - alpha * n
                    gy = problem.grad(y)
                    n_g += 1
                    if 2.0 * alpha * theta * float(gy @ n) >= eig.dual_norm2(gy):
                        break
                state["sigma"] = sigma * c ** (j - 1)
                x_new, back = y, j + 1
            elif method == "sun":
                gnorm = float(np.linalg.norm(gx))
                H = state["H"]
                for i in range(opts["max_backtracks"] + 1):
                    lam = 4.0**i * H * gnorm ** opts["a"]
                    s = eig.shifted_solve(gx, lam)
                    gy = problem.grad(x - s)
                    n_g += 1
                    if float(gy @ s) >= float(gy @ gy) / (4.0 * lam):
                        break
                state["H"] = max(4.0**i * H * 0.25, opts["H_min"])
                x_new, back = x - s, i + 1
            elif method == "gn":
                alpha, ev = gn_alpha(problem, x, fx, n, grid, opts["refine"])
                n_f += ev
                x_new = x - alpha * n
            elif method == "grls":
                alpha, ev = grls_alpha(problem, x, fx, n, eig, grid, opts["refine"])
                n_f += ev
                n_g += ev
                x_new = x - alpha * n
            elif method == "armijo":
                gamma, tau = opts["gamma"], opts["tau"]
                for j in range(opts["max_backtracks"] + 1):
                    alpha = gamma**j
                    fy = problem.f(x - alpha * n)
                    n_f += 1
                    if fy <= fx - tau * alpha * g2:
                        break
                x_new, back = x - alpha * n, j + 1
            else:  # pragma: no cover - guarded by method_options
                raise AssertionError(method)
        moved = not np.array_equal(x_new, x)
        x = x_new
        fx = problem.f(x)
        n_f += 1
        alphas.append(alpha)
        gls.append(g_loc)
        nf.append(n_f)
        ng.append(n_g)
        backs.append(back)
        sig.append(state["sigma"] if method == "un" else state["H"] if method == "sun"
                   else state["L"] if method == "gm" else np.nan)
        if not np.isfinite(fx) or not np.all(np.isfinite(x)):
            stop = "diverged"
            break
        if not moved and method not in _STATEFUL:
            stop = "stalled"
            break
    else:
        if f_stop is not None and fx <= f_stop:
            stop = "target"
    fs.append(fx)
    out_x = {"xs": np.array(xs + [x])} if opts["keep_iterates"] else {}
    return {**out_x,
        "method": method,
        "options": opts,
        "f": np.array(fs),
        "alpha": np.array(alphas, dtype=float),
        "g_local": np.array(gls, dtype=float),
        "n_f": np.array(nf),
        "n_g": np.array(ng),
        "backtracks": np.array(backs),
        "sigma": np.array(sig, dtype=float),
        "x": x,
        "stop": stop,
    }
