"""Clipped-SGD's horizon-free step sizes and clipping levels (the brief's reconstruction of the paper's schedule)."""
from __future__ import annotations

import numpy as np

from lib.common.heavy_tails import Method


def beta_of(alpha: float) -> float:
    """Step-size exponent beta = (2 + alpha) / (3 alpha): 2/3 at alpha = 2, 7/9 at alpha = 1.5."""
    return (2.0 + alpha) / (3.0 * alpha)


def rate_exponent(alpha: float) -> float:
    """Theorem 1's exponent (2 alpha - 2) / (3 alpha) = 1 - beta: 1/3 at alpha = 2, 2/9 at alpha = 1.5."""
    return (2.0 * alpha - 2.0) / (3.0 * alpha)


def schedule(alpha: float, L: float, R0: float, delta: float, gamma0: float, K: int, clip_const: float = 80.0,
             log_power: int = 0):
    """``(gamma, lam, dk)`` for k = 0..K-1.

    gamma_k = gamma0 / (L ln(6 (k+1)^2 / delta)^(3 log_power) (k+1)^beta), beta = (2 + alpha) / (3 alpha);
    d_0 = 0, d_{k+1} = d_k + 2 gamma_k L;
    lam_k = R0 / (clip_const gamma_k ln^(1/2)(6 (k+1)^2 / delta)) min(1 / sqrt(d_k), 1).
    """
    k = np.arange(K, dtype=float)
    logs = np.log(6.0 * (k + 1.0) ** 2 / delta)
    gamma = gamma0 / (L * logs ** (3 * log_power) * (k + 1.0) ** beta_of(alpha))
    dk = np.concatenate([[0.0], np.cumsum(2.0 * gamma * L)[:-1]])
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0 / np.sqrt(dk), 1.0)
    lam = R0 / (clip_const * gamma * np.sqrt(logs)) * factor
    return gamma, lam, dk


def clipped_method(name, alpha, problem, delta, gamma0, K, clip_const=80.0, log_power=0, clip=True,
                   average=True) -> Method:
    """A runner :class:`~lib.common.heavy_tails.Method` with the schedule above (``clip=False``: unclipped SGD with the
    same gamma_k)."""
    gamma, lam, _ = schedule(alpha, problem.L, problem.R0, delta, gamma0, K, clip_const, log_power)
    return Method(name, gamma, lam if clip else None, average=average)
