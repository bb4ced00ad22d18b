"""The constants of Theorem 5.1 and the fits that read the convergence curves.

- Riemannian scaling inequality (Def 2.4): for x in C and w in T_x M,
  ``<w, Log_x v> >= alpha |w| |Log_x v|^2`` with ``v = argmax_{z in C} <w, Log_x z>``. :func:`rsi_ratios` returns the
  ratio ``<w, Log_x v> / (|w| |Log_x v|^2)`` for sampled (x, w); its minimum is the estimate alpha-hat, an *upper*
  estimate of the true constant (a sampled infimum). For a Euclidean ball of radius R every boundary point gives
  exactly 1/(2R).
- Theorem 5.1's rate ``max{1/2, 1 - alpha c / (2 L)}`` with ``c = min_C |grad f|`` and ``L`` the smoothness constant.
- :func:`contraction`: the fitted per-iteration factor of f_t - f*; :func:`phase_fits`: R^2 of a power law
  (log-log) and of a geometric law (semilog) on a window of t.
"""
from __future__ import annotations

import numpy as np

from .sets import GeodesicBall


def rsi_ratios(ball: GeodesicBall, n_samples: int, rng, boundary_frac: float = 0.5, min_step: float = 1e-6):
    """Ratios <w, Log_x v> / (|w| |Log_x v|^2) for ``n_samples`` random x in C (a fraction ``boundary_frac`` on the
    boundary, where the Euclidean ball attains its constant) and w uniform in the directions of T_x M; pairs with
    |Log_x v| < ``min_step`` (w along the outer normal at a boundary x: 0/0) are dropped."""
    M = ball.M
    X = ball.random_points(rng, n_samples, boundary_frac=boundary_frac)
    W = M.random_tangent(X, rng)
    W /= M.norm(W)[:, None]
    o = ball.lmo_batch(X, -W)
    u2 = M.inner(o.d, o.d)
    keep = np.sqrt(u2) >= min_step
    return -o.value[keep] / u2[keep]


def predicted_rate(alpha: float, c: float, L: float) -> float:
    """Theorem 5.1: f(x_{t+1}) - f* <= (f(x_t) - f*) max{1/2, 1 - alpha c / (2 L)}."""
    return float(max(0.5, 1.0 - alpha * c / (2.0 * L)))


def first_below(gap, tol: float) -> int:
    """First t with gap_t < tol (len(gap) when none)."""
    idx = np.flatnonzero(np.asarray(gap) < tol)
    return int(idx[0]) if len(idx) else len(gap)


def contraction(gap, tol: float = 1e-10, frac: float = 0.7):
    """The fitted per-iteration factor rho of gap_t over the last ``frac`` of the iterations before gap_t < tol
    (least squares of log gap_t on t). Returns (rho, t_start, t_end, R^2)."""
    gap = np.asarray(gap, dtype=float)
    t_end = first_below(gap, tol)
    t_start = int(np.floor(t_end * (1.0 - frac)))
    if t_end - t_start < 3:
        return float("nan"), t_start, t_end, float("nan")
    t = np.arange(t_start, t_end)
    y = np.log(np.maximum(gap[t_start:t_end], 1e-300))
    slope, icpt = np.polyfit(t, y, 1)
    return float(np.exp(slope)), t_start, t_end, _r2(y, slope * t + icpt)


def _r2(y, yhat):
    ss = float(np.sum((y - np.mean(y)) ** 2))
    return 1.0 - float(np.sum((y - yhat) ** 2)) / ss if ss > 0 else float("nan")


def phase_fits(gap, t0: int, t1: int) -> dict:
    """On t in [t0, t1]: R^2 and slope of log gap against log t (power law: slope = exponent) and against t
    (geometric: exp(slope) = factor)."""
    gap = np.asarray(gap, dtype=float)
    t = np.arange(t0, t1 + 1)
    y = np.log(np.maximum(gap[t0:t1 + 1], 1e-300))
    p_pow = np.polyfit(np.log(t), y, 1)
    p_lin = np.polyfit(t, y, 1)
    return {"t0": t0, "t1": t1, "exponent": float(p_pow[0]), "r2_power": _r2(y, np.polyval(p_pow, np.log(t))),
            "factor": float(np.exp(p_lin[0])), "r2_geometric": _r2(y, np.polyval(p_lin, t))}
