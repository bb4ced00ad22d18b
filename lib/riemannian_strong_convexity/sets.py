"""Geodesic balls C = B(x_c, R) = {x : d(x, x_c) <= R}: membership, the metric projection and the Riemannian
linear minimisation oracle (LMO)

    v = argmin_{z in C} <g, Log_x(z)>,        g in T_x M,

by the reduction to span{x_c, x, g} (derived in the research brief, not copied from the paper): the objective and
the ball are invariant under every isometry that fixes that 3-D span pointwise, so the (unique) minimiser lies in
it, and on the boundary (the objective is linear in Log_x(z) and Log_x(C) is convex for these balls). The boundary
circle of the ball inside the span is

    v(phi) = cos_k(R) x_c + sin_k(R) (b_1 cos phi + b_2 sin phi),

with b_1, b_2 an orthonormal basis of the projection of span{x, g} onto T_{x_c} M (cos_k, sin_k = cos, sin on the
sphere and cosh, sinh on the hyperboloid). Since <g, x> = 0, <g, Log_x v> = theta / sin_k(theta) * <g, v> with
theta = d(x, v), and both <g, v> and cos_k(theta) are trigonometric polynomials in phi with six coefficients, so
the search is a 1-D minimisation over phi: a grid, then ``scipy.optimize.minimize_scalar`` on the best grid cell
(:meth:`GeodesicBall.lmo`), or, for many queries at once, the same grid followed by vectorised zoom refinements
(:meth:`GeodesicBall.lmo_batch`). On R^n the LMO is the closed form v = x_c - R g / |g|.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from .manifolds import Euclidean, Manifold


@dataclass
class LMOResult:
    v: np.ndarray          # the minimiser (a boundary point of C)
    d: np.ndarray          # Log_x(v), the FW direction
    value: float | np.ndarray   # <g, Log_x(v)> (<= 0); minus the FW gap
    phi: float | np.ndarray | None = None


class GeodesicBall:
    """B(center, radius) on ``manifold`` (Sphere, Lorentz or Euclidean)."""

    def __init__(self, manifold: Manifold, center, radius: float):
        self.M, self.c, self.R = manifold, np.asarray(center, dtype=float), float(radius)
        if not self.R > 0:
            raise ValueError(f"radius got {radius!r}; allowed: a positive number")
        if manifold.kappa > 0 and not self.R < np.pi / 2:
            raise ValueError(f"radius got {radius!r}; allowed on the sphere: below pi/2 (a cap in a hemisphere)")

    # membership and projection --------------------------------------------------------------------------------
    def dist_to_center(self, x):
        return self.M.dist(self.c, x)

    def contains(self, x, tol=1e-9):
        return self.dist_to_center(x) <= self.R + tol

    def project(self, y):
        """Metric projection onto the ball: the geodesic clamp toward the centre (nearest point for d(y, x_c) < pi on
        the sphere, everywhere on Hadamard manifolds)."""
        y = np.asarray(y, dtype=float)
        u = self.M.log(self.c, y)
        r = self.M.norm(u)[..., None]
        outside = r > self.R
        scale = np.where(outside, self.R / np.where(r > 0, r, 1.0), 1.0)
        return np.where(outside, self.M.exp(self.c, scale * u), y)

    def project_to_boundary(self, y):
        """The point of the boundary sphere on the geodesic from the centre through y (y != centre)."""
        u = self.M.log(np.broadcast_to(self.c, np.shape(y)), y)
        return self.M.exp(np.broadcast_to(self.c, np.shape(y)), self.R * u / self.M.norm(u)[..., None])

    def random_points(self, rng, k: int, boundary_frac: float = 0.0):
        """``k`` points of the ball: directions uniform in T_{x_c}, radius R for a fraction ``boundary_frac`` of them,
        R U^(1/dim) (U uniform) for the others."""
        b = self.M.random_tangent(np.broadcast_to(self.c, (k, self.M.n)), rng)
        b /= self.M.norm(b)[:, None]
        dim = self.M.n - (0 if isinstance(self.M, Euclidean) else 1)
        r = self.R * rng.uniform(size=k) ** (1.0 / dim)
        r[: int(round(boundary_frac * k))] = self.R
        return self.M.exp(np.broadcast_to(self.c, (k, self.M.n)), r[:, None] * b)

    # the LMO ---------------------------------------------------------------------------------------------------
    def _coefficients(self, x, g):
        """b_1, b_2 and the six coefficients of <g, v(phi)> and cos_k d(x, v(phi)) (batched over leading axes)."""
        M, c = self.M, self.c
        cb = np.broadcast_to(c, np.shape(x))
        y1, y2 = M.proj(cb, x), M.proj(cb, g)
        b1 = _normalise(M, y1, cb)
        y2 = y2 - M.inner(b1, y2)[..., None] * b1
        b2 = _normalise(M, y2, cb, avoid=b1)
        CR, SR = M.cos_k(self.R), M.sin_k(self.R)
        k = M.kappa
        coef_g = np.stack([CR * M.inner(g, cb), SR * M.inner(g, b1), SR * M.inner(g, b2)], axis=-1)
        coef_x = k * np.stack([CR * M.inner(x, cb), SR * M.inner(x, b1), SR * M.inner(x, b2)], axis=-1)
        return b1, b2, coef_g, coef_x

    def _objective(self, phi, coef_g, coef_x):
        cphi, sphi = np.cos(phi), np.sin(phi)
        gv = coef_g[..., 0:1] + coef_g[..., 1:2] * cphi + coef_g[..., 2:3] * sphi
        ck = coef_x[..., 0:1] + coef_x[..., 1:2] * cphi + coef_x[..., 2:3] * sphi
        theta = self.M.dist_from_inner(ck)
        return self.M.log_factor(theta) * gv

    def _point(self, phi, b1, b2):
        phi = np.asarray(phi)[..., None]
        return self.M.cos_k(self.R) * self.c + self.M.sin_k(self.R) * (np.cos(phi) * b1 + np.sin(phi) * b2)

    def lmo(self, x, g, ngrid: int = 2048) -> LMOResult:
        """argmin_{v in C} <g, Log_x v> for one point x and one tangent vector g."""
        x, g = np.asarray(x, dtype=float), np.asarray(g, dtype=float)
        if isinstance(self.M, Euclidean):
            v = self.c - self.R * g / max(np.linalg.norm(g), 1e-300)
            d = v - x
            return LMOResult(v=v, d=d, value=float(g @ d))
        b1, b2, cg, cx = self._coefficients(x, g)
        grid = np.linspace(0.0, 2 * np.pi, ngrid, endpoint=False)
        vals = self._objective(grid, cg, cx)
        k = int(np.argmin(vals))
        h = 2 * np.pi / ngrid
        res = minimize_scalar(lambda p: float(self._objective(np.array([p]), cg, cx)[0]),
                              bounds=(grid[k] - h, grid[k] + h), method="bounded", options={"xatol": 1e-10})
        phi = float(res.x) if res.fun <= vals[k] else float(grid[k])
        v = self._point(phi, b1, b2)
        d = self.M.log(x, v)
        return LMOResult(v=v, d=d, value=float(self.M.inner(g, d)), phi=phi)

    def lmo_batch(self, X, G, ngrid: int = 512, zooms: int = 6, chunk: int = 2048) -> LMOResult:
        """The same LMO for rows X[i], G[i] at once: the grid, then ``zooms`` rounds of a 17-point grid on the best
        cell (each round shrinks the cell 8x)."""
        X, G = np.atleast_2d(np.asarray(X, dtype=float)), np.atleast_2d(np.asarray(G, dtype=float))
        if isinstance(self.M, Euclidean):
            V = self.c - self.R * G / np.maximum(np.linalg.norm(G, axis=1, keepdims=True), 1e-300)
            D = V - X
            return LMOResult(v=V, d=D, value=np.sum(G * D, axis=1))
        out_v, out_phi = np.empty_like(X), np.empty(len(X))
        grid = np.linspace(0.0, 2 * np.pi, ngrid, endpoint=False)
        for lo in range(0, len(X), chunk):
            sl = slice(lo, lo + chunk)
            b1, b2, cg, cx = self._coefficients(X[sl], G[sl])
            vals = self._objective(grid[None, :], cg, cx)
            phi = grid[np.argmin(vals, axis=1)]
            h = 2 * np.pi / ngrid
            steps = np.linspace(-1.0, 1.0, 17)
            for _ in range(zooms):
                cand = phi[:, None] + h * steps[None, :]
                vals = self._objective(cand, cg, cx)
                phi = cand[np.arange(len(cand)), np.argmin(vals, axis=1)]
                h /= 8.0
            out_phi[sl] = phi
            out_v[sl] = self._point(phi, b1, b2)
        D = self.M.log(X, out_v)
        return LMOResult(v=out_v, d=D, value=self.M.inner(G, D), phi=out_phi)


def _normalise(M, y, base, avoid=None, tol=1e-10):
    """y / |y| in T_base; rows whose y (almost) vanishes (x = x_c, or g in span{x_c, x}) get a fixed unit vector of
    T_base orthogonal to ``avoid`` instead: the objective does not depend on that direction then."""
    nrm = M.norm(y)
    out = y / np.where(nrm > tol, nrm, 1.0)[..., None]
    bad = np.atleast_1d(nrm <= tol)
    if bad.any():
        flat_out = np.atleast_2d(out)
        flat_base = np.atleast_2d(base)
        flat_avoid = None if avoid is None else np.atleast_2d(avoid)
        for i in np.flatnonzero(bad):
            for j in range(M.n):
                e = np.zeros(M.n)
                e[j] = 1.0
                z = M.proj(flat_base[i], e)
                if flat_avoid is not None:
                    z = z - M.inner(flat_avoid[i], z) * flat_avoid[i]
                nz = M.norm(z)
                if nz > 0.5:
                    flat_out[i] = z / nz
                    break
        out = flat_out.reshape(np.shape(y))
    return out
