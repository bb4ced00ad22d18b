"""Three model spaces in ambient coordinates, numpy only, batched over leading axes (the last axis is the point).

- :class:`Sphere` ``S^{n-1} = {x in R^n : |x| = 1}`` (curvature +1),
- :class:`Lorentz` ``H^{n-1} = {x in R^n : <x, x>_L = -1, x_0 > 0}`` with ``<u, v>_L = -u_0 v_0 + sum_i u_i v_i``
  (the hyperboloid model, curvature -1),
- :class:`Euclidean` ``R^n`` (curvature 0; Frank-Wolfe on it is the classical method).

All three share one API: ``inner``, ``norm``, ``exp``, ``log``, ``dist``, ``proj`` (onto the tangent space),
``egrad2rgrad``, ``transp`` (parallel transport along the minimising geodesic), ``random_tangent``,
and the generalised trigonometric functions ``cos_k``/``sin_k`` of the curvature, which the LMO over a geodesic
ball uses (:mod:`.sets`). ``kappa`` is the sectional curvature.
"""
from __future__ import annotations

import numpy as np


def _ratio_sin(theta):
    """theta / sin(theta), equal to 1 + theta^2/6 + ... near 0 (safe at theta = 0)."""
    theta = np.asarray(theta, dtype=float)
    return 1.0 / np.sinc(theta / np.pi)


def _ratio_sinh(theta):
    """theta / sinh(theta), safe at theta = 0."""
    theta = np.asarray(theta, dtype=float)
    small = np.abs(theta) < 1e-6
    safe = np.where(small, 1.0, theta)
    return np.where(small, 1.0 - theta ** 2 / 6.0, safe / np.sinh(safe))


def _sinc_h(t):
    """sinh(t) / t, safe at t = 0."""
    t = np.asarray(t, dtype=float)
    small = np.abs(t) < 1e-6
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 + t ** 2 / 6.0, np.sinh(safe) / safe)


class Manifold:
    kappa = 0.0
    name = "manifold"

    def __init__(self, n: int):
        if int(n) < 2:
            raise ValueError(f"ambient dimension n got {n!r}; allowed: an integer >= 2")
        self.n = int(n)

    # metric -----------------------------------------------------------------------------------------------
    def inner(self, u, v):
        return np.sum(u * v, axis=-1)

    def norm(self, u):
        return np.sqrt(np.maximum(self.inner(u, u), 0.0))

    def random_tangent(self, x, rng, scale=1.0):
        """A Gaussian tangent vector at ``x`` (ambient N(0, scale^2 I), projected)."""
        return self.proj(x, scale * rng.standard_normal(np.shape(x)))

    def egrad2rgrad(self, x, egrad):
        return self.proj(x, egrad)


class Euclidean(Manifold):
    kappa = 0.0
    name = "Euclidean"

    def exp(self, x, v):
        return x + v

    def log(self, x, y):
        return y - x

    def dist(self, x, y):
        return np.linalg.norm(y - x, axis=-1)

    def proj(self, x, u):
        return np.array(u, dtype=float, copy=True)

    def transp(self, x, y, v):
        return np.array(v, dtype=float, copy=True)

    @staticmethod
    def cos_k(t):
        return np.ones_like(np.asarray(t, dtype=float))

    @staticmethod
    def sin_k(t):
        return np.asarray(t, dtype=float)


class Sphere(Manifold):
    """The unit sphere S^{n-1} in R^n."""

    kappa = 1.0
    name = "sphere"

    def exp(self, x, v):
        t = self.norm(v)[..., None]
        return np.cos(t) * x + np.sinc(t / np.pi) * v

    def log(self, x, y):
        c = np.clip(self.inner(x, y), -1.0, 1.0)[..., None]
        u = y - c * x
        theta = np.arctan2(np.linalg.norm(u, axis=-1)[..., None], c)
        return _ratio_sin(theta) * u

    def dist(self, x, y):
        return 2.0 * np.arcsin(np.clip(np.linalg.norm(x - y, axis=-1) / 2.0, 0.0, 1.0))

    def proj(self, x, u):
        return u - self.inner(x, u)[..., None] * x

    def transp(self, x, y, v):
        """Parallel transport of v in T_x along the minimising geodesic to y (x != -y)."""
        return v - (self.inner(y, v) / (1.0 + self.inner(x, y)))[..., None] * (x + y)

    def random_point(self, rng, size=()):
        z = rng.standard_normal(tuple(np.atleast_1d(size)) + (self.n,) if size != () else (self.n,))
        return z / np.linalg.norm(z, axis=-1, keepdims=True)

    def check_point(self, x, tol=1e-9):
        return np.abs(np.linalg.norm(x, axis=-1) - 1.0) <= tol

    @staticmethod
    def cos_k(t):
        return np.cos(t)

    @staticmethod
    def sin_k(t):
        return np.sin(t)

    @staticmethod
    def dist_from_inner(c):
        """The distance of two points whose ambient inner product is ``c``."""
        return np.arccos(np.clip(c, -1.0, 1.0))

    @staticmethod
    def log_factor(theta):
        """Log_x(y) = log_factor(theta) * (y - cos_k(theta) x)."""
        return _ratio_sin(theta)


class Lorentz(Manifold):
    """The hyperboloid H^{n-1} = {x : <x, x>_L = -1, x_0 > 0} in R^n (curvature -1)."""

    kappa = -1.0
    name = "hyperbolic (Lorentz)"

    def inner(self, u, v):
        return np.sum(u * v, axis=-1) - 2.0 * u[..., 0] * v[..., 0]

    def origin(self):
        o = np.zeros(self.n)
        o[0] = 1.0
        return o

    def exp(self, x, v):
        t = self.norm(v)[..., None]
        return np.cosh(t) * x + _sinc_h(t) * v

    def log(self, x, y):
        c = np.maximum(-self.inner(x, y), 1.0)[..., None]
        u = y - c * x
        theta = np.arcsinh(self.norm(u))[..., None]
        return _ratio_sinh(theta) * u

    def dist(self, x, y):
        c = np.maximum(-self.inner(x, y), 1.0)
        u = y - c[..., None] * x
        return np.arcsinh(self.norm(u))

    def proj(self, x, u):
        return u + self.inner(x, u)[..., None] * x

    def egrad2rgrad(self, x, egrad):
        g = np.array(egrad, dtype=float, copy=True)
        g[..., 0] *= -1.0
        return self.proj(x, g)

    def transp(self, x, y, v):
        return v + (self.inner(y, v) / (1.0 - self.inner(x, y)))[..., None] * (x + y)

    def check_point(self, x, tol=1e-8):
        return (np.abs(self.inner(x, x) + 1.0) <= tol * np.maximum(1.0, x[..., 0] ** 2)) & (x[..., 0] > 0)

    @staticmethod
    def cos_k(t):
        return np.cosh(t)

    @staticmethod
    def sin_k(t):
        return np.sinh(t)

    @staticmethod
    def dist_from_inner(c):
        """The distance of two points with <x, y>_L = -c, given c = -<x, y>_L >= 1."""
        return np.arccosh(np.maximum(c, 1.0))

    @staticmethod
    def log_factor(theta):
        return _ratio_sinh(theta)
