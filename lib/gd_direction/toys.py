"""The paper's two-dimensional test functions with closed-form gradients and Hessians.

- ``f_a(x, y) = x^2/2 + 2 y^2``: Hessian diag(1, 4) everywhere; lambda_1 = 1 along the x-axis, lambda_n = 4 along
  the y-axis, so eta_c = 2/(1 + 4) = 0.4 and the stability limit is 2/4 = 0.5 (paper Fig. 1).
- ``f_b = f_a + x y^2 + y^3``: the same Hessian at the minimiser 0, plus cubic terms (paper Fig. 1).
- ``f_c(x, y) = x^2 + y^2/2 + x^2 y + x^3``: Hessian diag(2, 1) at 0, so lambda_1 = 1 along the y-axis and
  lambda_n = 2 along the x-axis; eta_c = 2/3, 2/lambda_n = 1 (paper Fig. 2).

Each is a :class:`Toy` whose ``f``, ``grad`` and ``hess`` take one point of shape ``(2,)`` or a batch ``(..., 2)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Toy:
    """A smooth test function with its gradient, Hessian and isolated minimiser ``xstar``."""

    name: str
    formula: str
    f: Callable
    grad: Callable
    hess: Callable
    xstar: np.ndarray

    def __repr__(self) -> str:  # short, for tables
        return f"Toy({self.name}: {self.formula})"


def _xy(p):
    p = np.asarray(p, dtype=float)
    return p[..., 0], p[..., 1]


def _fa(p):
    x, y = _xy(p)
    return 0.5 * x**2 + 2.0 * y**2


def _ga(p):
    x, y = _xy(p)
    return np.stack([x, 4.0 * y], axis=-1)


def _ha(p):
    x, y = _xy(p)
    one = np.ones_like(x)
    return np.stack([np.stack([one, 0 * one], -1), np.stack([0 * one, 4.0 * one], -1)], -2)


def _fb(p):
    x, y = _xy(p)
    return 0.5 * x**2 + 2.0 * y**2 + x * y**2 + y**3


def _gb(p):
    x, y = _xy(p)
    return np.stack([x + y**2, 4.0 * y + 2.0 * x * y + 3.0 * y**2], axis=-1)


def _hb(p):
    x, y = _xy(p)
    return np.stack([np.stack([np.ones_like(x), 2.0 * y], -1),
                     np.stack([2.0 * y, 4.0 + 2.0 * x + 6.0 * y], -1)], -2)


def _fc(p):
    x, y = _xy(p)
    return x**2 + 0.5 * y**2 + x**2 * y + x**3


def _gc(p):
    x, y = _xy(p)
    return np.stack([2.0 * x + 2.0 * x * y + 3.0 * x**2, y + x**2], axis=-1)


def _hc(p):
    x, y = _xy(p)
    return np.stack([np.stack([2.0 + 2.0 * y + 6.0 * x, 2.0 * x], -1),
                     np.stack([2.0 * x, np.ones_like(x)], -1)], -2)


F_A = Toy("f_a", r"$x^2/2 + 2y^2$", _fa, _ga, _ha, np.zeros(2))
F_B = Toy("f_b", r"$x^2/2 + 2y^2 + xy^2 + y^3$", _fb, _gb, _hb, np.zeros(2))
F_C = Toy("f_c", r"$x^2 + y^2/2 + x^2y + x^3$", _fc, _gc, _hc, np.zeros(2))
TOYS = {"f_a": F_A, "f_b": F_B, "f_c": F_C}


def sharpness_2x2(H) -> np.ndarray:
    """Largest eigenvalue of symmetric 2 x 2 matrices ``H[..., 2, 2]`` in closed form (exact to rounding)."""
    H = np.asarray(H, dtype=float)
    a, b, d = H[..., 0, 0], H[..., 0, 1], H[..., 1, 1]
    return 0.5 * (a + d) + np.hypot(0.5 * (a - d), b)
