"""Objectives: f, its Riemannian gradient and Hessian, the operator norm of the Hessian (for L), and f along a
geodesic (for exact line search).

- :class:`Quadratic` ``f(x) = 1/2 |A (x - x*)|^2`` on the sphere S^{n-1} or on R^n (the paper's sphere problem and its
  Euclidean counterpart). On the sphere, ``grad f(x) = P_x A^T A (x - x*)`` and, on T_x,
  ``Hess f(x) = P_x A^T A P_x - (x^T nabla f(x)) I``.
- :class:`SquaredDistance` ``f(x) = 1/2 d^2(x, x*)`` on the hyperboloid (g-convex, unlike the ambient quadratic):
  ``grad f = -Log_x(x*)``, Hessian eigenvalues 1 (radial) and ``d coth d`` (the other directions).
"""
from __future__ import annotations

import numpy as np

from .manifolds import Euclidean, Lorentz, Sphere


class Quadratic:
    def __init__(self, manifold, A, xstar):
        if not isinstance(manifold, (Sphere, Euclidean)):
            raise ValueError("Quadratic is defined on the Sphere or on Euclidean space")
        self.M, self.A, self.xstar = manifold, np.asarray(A, dtype=float), np.asarray(xstar, dtype=float)
        self.AtA = self.A.T @ self.A
        self.Axs = self.A @ self.xstar
        self.on_sphere = isinstance(manifold, Sphere)

    def f(self, x):
        r = np.asarray(x) @ self.A.T - self.Axs
        return 0.5 * np.sum(r * r, axis=-1)

    def egrad(self, x):
        return (np.asarray(x) @ self.A.T - self.Axs) @ self.A

    def rgrad(self, x):
        return self.M.egrad2rgrad(x, self.egrad(x))

    def f_and_rgrad(self, x):
        r = x @ self.A.T - self.Axs
        eg = r @ self.A
        return 0.5 * float(r @ r), self.M.egrad2rgrad(x, eg)

    def rhess(self, x, v):
        """Hess f(x)[v] for v in T_x."""
        hv = self.M.proj(x, self.AtA @ v)
        if self.on_sphere:
            hv = hv - float(x @ self.egrad(x)) * v
        return hv

    def hess_norm(self, x):
        """Operator norm of Hess f(x) on T_x (exact: an eigen-decomposition of an at most n x n Gram matrix)."""
        m, n = self.A.shape
        if not self.on_sphere:
            return float(np.linalg.eigvalsh(self.AtA)[-1])
        s = float(x @ self.egrad(x))
        Ax = self.A @ x
        if m <= n:  # the nonzero spectrum of P A^T A P is that of A P A^T = A A^T - (Ax)(Ax)^T
            ev = np.linalg.eigvalsh(self.A @ self.A.T - np.outer(Ax, Ax))
        else:
            P = np.eye(n) - np.outer(x, x)
            ev = np.linalg.eigvalsh(P @ self.AtA @ P)
        ev = np.sort(ev)[::-1][: n - 1]
        if len(ev) < n - 1:
            ev = np.concatenate([ev, np.zeros(n - 1 - len(ev))])
        return float(np.max(np.abs(ev - s)))

    def along(self, x, d):
        """eta -> f(Exp_x(eta d)), cheap (no matrix products per evaluation)."""
        t = float(np.linalg.norm(d))
        p, r = self.A @ x, self.Axs
        if not self.on_sphere or t == 0.0:
            q = self.A @ d

            def line(eta):
                z = p + eta * q - r
                return 0.5 * float(z @ z)
            return line
        q = self.A @ (d / t)
        pp, qq, rr, pq, pr, qr = p @ p, q @ q, r @ r, p @ q, p @ r, q @ r

        def line(eta):
            c, s = np.cos(eta * t), np.sin(eta * t)
            return 0.5 * float(c * c * pp + s * s * qq + rr + 2 * c * s * pq - 2 * c * pr - 2 * s * qr)
        return line


class SquaredDistance:
    """f(x) = 1/2 d(x, x*)^2 on the hyperboloid (or any of the manifolds)."""

    def __init__(self, manifold, xstar):
        self.M, self.xstar = manifold, np.asarray(xstar, dtype=float)

    def f(self, x):
        return 0.5 * self.M.dist(x, self.xstar) ** 2

    def rgrad(self, x):
        return -self.M.log(x, self.xstar)

    def f_and_rgrad(self, x):
        return float(self.f(x)), self.rgrad(x)

    def rhess(self, x, v):
        """Hess f(x)[v] = v_par + d coth(d) v_perp on H (d = d(x, x*)); v_par is along Log_x(x*)."""
        u = self.M.log(x, self.xstar)
        dd = float(self.M.norm(u))
        if dd < 1e-12:
            return np.array(v, dtype=float)
        e = u / dd
        par = float(self.M.inner(e, v)) * e
        k = self.M.kappa
        factor = dd / np.tanh(dd) if k < 0 else (dd / np.tan(dd) if k > 0 else 1.0)
        return par + factor * (v - par)

    def hess_norm(self, x):
        dd = float(self.M.dist(x, self.xstar))
        if self.M.kappa < 0:
            return max(1.0, dd / np.tanh(dd)) if dd > 1e-12 else 1.0
        return 1.0

    def along(self, x, d):
        t = float(self.M.norm(d))
        if t == 0.0:
            return lambda eta: float(self.f(x))
        u = d / t
        if isinstance(self.M, Lorentz):
            a, b = -float(self.M.inner(x, self.xstar)), -float(self.M.inner(u, self.xstar))

            def line(eta):
                return 0.5 * float(np.arccosh(max(np.cosh(eta * t) * a + np.sinh(eta * t) * b, 1.0))) ** 2
            return line
        return lambda eta: float(self.f(self.M.exp(x, eta * d)))
