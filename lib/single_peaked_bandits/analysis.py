"""Slopes on log-log axes and the regret summaries the claims read."""
from __future__ import annotations

import numpy as np
from scipy.stats import linregress


def loglog_slope(T, R) -> tuple[float, float]:
    """Least-squares slope and intercept of ``log R`` against ``log T`` (``scipy.stats.linregress``)."""
    T = np.asarray(T, dtype=float)
    R = np.asarray(R, dtype=float)
    if len(T) < 2 or np.any(T <= 0) or np.any(R <= 0):
        raise ValueError("loglog_slope needs at least two points with T > 0 and R > 0")
    fit = linregress(np.log(T), np.log(R))
    return float(fit.slope), float(fit.intercept)


def curve_points(T: int, n: int = 400) -> np.ndarray:
    """About ``n`` distinct rounds ``1..T``, log-spaced at first and linear later (for drawing and fitting)."""
    pts = np.unique(np.concatenate([np.geomspace(1, T, n // 2), np.linspace(1, T, n // 2)]).astype(int))
    return pts[(pts >= 1) & (pts <= T)]


def second_half_slope(t: np.ndarray, cum: np.ndarray, T: int) -> float:
    """Slope of the mean cumulative regret on log-log axes over ``t in [T/2, T]`` (50 log-spaced rounds)."""
    grid = np.unique(np.geomspace(T // 2, T, 50).astype(int))
    return loglog_slope(grid, np.interp(grid, t, cum))[0]


def sqrt_tlogt_ratio(t: np.ndarray, cum: np.ndarray, T: int) -> tuple[float, float, float]:
    """``q(t) = R(t) / sqrt(t ln t)`` at ``T/4`` and ``T``, and how much it changes: ``max(q1/q0, q0/q1)``."""
    q = lambda s: float(np.interp(s, t, cum)) / np.sqrt(s * np.log(s))  # noqa: E731
    q0, q1 = q(T // 4), q(T)
    return q0, q1, max(q1 / q0, q0 / q1)
