"""The paper's synthetic problems (P1-P3) and our rate-check quadratic (P4), vectorised over leading axes.

Every problem has ``f(X)`` and ``grad(X)`` for ``X`` of shape ``(..., d)``, the minimiser ``xstar``, ``fstar``, the
smoothness constant ``L``, a start ``x0`` and ``R0 = ||x0 - x*||``; ``gap(X) = f(X) - f*``. The stochastic part is
separate: ``draw(rng, R)`` gives one step's randomness for R runs and ``oracle(X, sample)`` the stochastic gradients.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy import optimize, special

from lib.common import heavy_tails as H


def _softplus(t):
    """ln(1 + e^t), stable (4x faster than np.logaddexp)."""
    return np.maximum(t, 0.0) + np.log1p(np.exp(-np.abs(t)))


@dataclass
class Problem:
    name: str
    d: int
    x0: np.ndarray
    xstar: np.ndarray
    fstar: float
    L: float

    @property
    def R0(self) -> float:
        return float(np.linalg.norm(self.x0 - self.xstar))

    def gap(self, X):
        return self.f(X) - self.fstar


@dataclass
class AdditiveNoise:
    """``grad f(x) + n`` with n i.i.d. symmetric Pareto(tail) coordinates scaled by ``scale / sqrt(d)``."""

    problem: Problem
    tail: float
    scale: float = 1.0

    def draw(self, rng, R):
        return H.coordinate_pareto(self.problem.d, self.tail, R, rng, scale=self.scale)

    def oracle(self, X, noise):
        g = self.problem.grad(X)
        g += noise
        return g


class LogisticRidge(Problem):
    """P1: f(x) = ln(1 + exp(<x, a>)) + (lam/2) ||x||^2 (paper's Exp. 1). x* = -(s/lam) a with s = sigmoid(<x*, a>),
    found from the scalar equation t + ||a||^2 sigmoid(t) / lam = 0."""

    def __init__(self, a, lam, x0):
        self.a, self.lam = np.asarray(a, float), float(lam)
        na2 = float(self.a @ self.a)
        t = optimize.brentq(lambda t: t + na2 * special.expit(t) / self.lam, -na2 / self.lam - 1.0, 0.0, xtol=1e-15)
        xstar = -(special.expit(t) / self.lam) * self.a
        super().__init__("P1 logistic + ridge", len(self.a), np.asarray(x0, float), xstar, 0.0, na2 / 4 + self.lam)
        self.fstar = float(self.f(xstar))

    def f(self, X):
        X = np.asarray(X, float)
        return _softplus(X @ self.a) + 0.5 * self.lam * np.einsum("...i,...i->...", X, X)

    def grad(self, X):
        X = np.asarray(X, float)
        return special.expit(X @ self.a)[..., None] * self.a + self.lam * X


class Quadratic(Problem):
    """f(x) = 1/2 sum_i lams_i x_i^2: P2 (all lams = 1, the paper's Exp. 2) and P4 (lams_i = i^-2, our rate check)."""

    def __init__(self, lams, x0, name):
        self.lams = np.asarray(lams, float)
        super().__init__(name, len(self.lams), np.asarray(x0, float), np.zeros(len(self.lams)), 0.0,
                         float(self.lams.max()))

    def f(self, X):
        X = np.asarray(X, float)
        return 0.5 * np.einsum("...i,i,...i->...", X, self.lams, X)

    def grad(self, X):
        return self.lams * np.asarray(X, float)


class StatLogistic(Problem):
    """P3 (paper's Exp. 3): logistic loss E ln(1 + exp(-Y <x, Z>)) over a finite pool of (Z, Y) pairs drawn fresh
    from the data model (Student-t features, labels of a planted direction with flips). SGD samples the pool with
    replacement, so f and f* (full-batch Newton on the pool) are exact for the objective that SGD minimises."""

    def __init__(self, Z, Y, x0):
        self.Z, self.Y = np.asarray(Z, float), np.asarray(Y, float)
        self.YZ = self.Y[:, None] * self.Z
        self._YZ32 = self.YZ.astype(np.float32)
        N, d = self.Z.shape
        L = float(np.linalg.eigvalsh(self.Z.T @ self.Z / N)[-1]) / 4.0
        xstar = self.newton(np.zeros(d))
        super().__init__("P3 statistical logistic", d, np.asarray(x0, float), xstar, 0.0, L)
        self.fstar = float(self.f(xstar, exact=True))
        self._fstar_fast = float(self.f(xstar))

    def f(self, X, exact=False):
        """The pool's mean loss; ``exact=False`` computes the margins and ln(1 + e^t) in float32 (4x faster, error
        ~1e-7, far below the gaps measured) and averages in float64; ``gap`` uses the same path for f and f*."""
        X = np.asarray(X, float)
        flat = X.reshape(-1, X.shape[-1])
        out = np.empty(len(flat))
        dt = np.float64 if exact else np.float32
        YZ = self.YZ if exact else self._YZ32
        for i in range(0, len(flat), 256):  # chunks keep the (rows x N) margin matrix small
            out[i:i + 256] = _softplus(-(flat[i:i + 256].astype(dt) @ YZ.T)).mean(axis=1, dtype=np.float64)
        return out.reshape(X.shape[:-1])

    def gap(self, X):
        return self.f(X) - self._fstar_fast

    def grad(self, X):
        X = np.asarray(X, float)
        flat = X.reshape(-1, X.shape[-1])
        s = special.expit(-(flat @ self.YZ.T))
        return (-(s @ self.YZ) / len(self.Y)).reshape(X.shape)

    def hess(self, x):
        s = special.expit(-(self.YZ @ x))
        w = s * (1 - s)
        return (self.Z * w[:, None]).T @ self.Z / len(self.Y)

    def newton(self, x, tol=1e-13, max_iter=100):
        """Full-batch Newton with backtracking on the pool's loss."""
        fx = float(self.f(x, exact=True))
        for _ in range(max_iter):
            g = self.grad(x)
            step = np.linalg.solve(self.hess(x), g)
            t = 1.0
            while t > 1e-10:
                xn = x - t * step
                fn = float(self.f(xn, exact=True))
                if fn <= fx - 1e-4 * t * float(g @ step):
                    break
                t *= 0.5
            x, fx = xn, fn
            if float(g @ step) < tol:
                break
        return x

    def draw(self, rng, R):
        return rng.integers(0, len(self.Y), size=R)

    def oracle(self, X, idx):
        yz = self.YZ[idx]                                   # (R, d)
        s = special.expit(-np.einsum("...rd,rd->...r", X, yz))
        return -s[..., None] * yz


def make_p1(rng, d=100, lam=0.1, r0=3.0):
    """P1: a uniform random unit vector a, ridge lam = 0.1, start x0 = x* + r0 u (u a random unit vector)."""
    a = H.sphere_uniform(d, 1, rng)[0]
    u = H.sphere_uniform(d, 1, rng)[0]
    tmp = LogisticRidge(a, lam, np.zeros(d))
    return LogisticRidge(a, lam, tmp.xstar + r0 * u)


def make_p2(rng, d=100, r0=3.0):
    """P2: f = 1/2 ||x||^2, start at distance r0 in a random direction."""
    return Quadratic(np.ones(d), r0 * H.sphere_uniform(d, 1, rng)[0], "P2 quadratic")


def make_p4(d=50):
    """P4: lams_i = i^-2, x0_i = i^-1/2 (the deterministic part decays like 1/sum gamma)."""
    i = np.arange(1, d + 1, dtype=float)
    return Quadratic(i ** -2.0, i ** -0.5, "P4 ill-conditioned quadratic")


def make_p3(rng, d=10, n_pool=5000, df=2.001, flip=0.1):
    """P3: Z ~ i.i.d. Student-t(df) in d dims, Y = sign(<x_true, Z>) flipped with probability ``flip``, x_true a random
    unit vector; start x0 = 0."""
    x_true = H.sphere_uniform(d, 1, rng)[0]
    Z = H.student_t(df, (n_pool, d), rng)
    Y = np.sign(Z @ x_true)
    Y[Y == 0] = 1.0
    Y[rng.random(n_pool) < flip] *= -1.0
    return StatLogistic(Z, Y, np.zeros(d))
