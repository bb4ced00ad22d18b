"""The synthetic problems: P1 f(x) = ||x - x*||_1 / sqrt(d) (convex, G-Lipschitz with G = 1), P2 = P1 + (mu/2)||x||^2
(strongly convex, F* in closed form), and the noisy oracle g = df(x) + n with n heavy-tailed and controllable d_eff."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lib.common import heavy_tails as H


@dataclass
class L1Distance:
    """f(x) = ||x - x*||_1 / sqrt(d) + (mu/2) ||x||^2 (mu = 0: P1; mu > 0: P2, whose r = (mu/2)||x||^2 is handled by
    the proximal step). The subgradient of the nonsmooth part, sign(x - x*) / sqrt(d), has norm <= G = 1."""

    xstar: np.ndarray
    mu: float = 0.0

    def __post_init__(self):
        self.xstar = np.asarray(self.xstar, dtype=float)
        self.d = len(self.xstar)
        self.G = 1.0
        self.c = 1.0 / np.sqrt(self.d)
        if self.mu > 0:  # separable: minimise c|x_i - x*_i| + (mu/2) x_i^2 per coordinate -> clip x* to [-c/mu, c/mu]
            self.xmin = np.clip(self.xstar, -self.c / self.mu, self.c / self.mu)
        else:
            self.xmin = self.xstar.copy()
        self.Fstar = float(self.F(self.xmin))

    def F(self, X):
        X = np.asarray(X, dtype=float)
        val = self.c * np.abs(X - self.xstar).sum(axis=-1)
        if self.mu > 0:
            val = val + 0.5 * self.mu * np.einsum("...i,...i->...", X, X)
        return val

    def gap(self, X):
        return self.F(X) - self.Fstar

    def subgrad(self, X):
        """A subgradient of the nonsmooth part f only (r is proximal): c sign(x - x*), with +-c where x_i = x*_i
        (any value in [-c, c] is a subgradient there; np.copysign is 5x faster than np.sign)."""
        out = np.subtract(np.asarray(X, dtype=float), self.xstar)
        np.copysign(self.c, out, out=out)
        return out


def make_problem(rng, d: int, mu: float = 0.0) -> L1Distance:
    """x* ~ N(0, I_d); the start is x_1 = 0, so D = ||x*||."""
    return L1Distance(rng.standard_normal(d), mu=mu)


@dataclass
class SphereNoiseOracle:
    """g = df(x) + n_k with n_k = s u_k (:func:`lib.common.heavy_tails.nested_sphere_noise`): each method m uses the
    subspace size ``k_of[m]``, and all methods share one draw (s, z) per step (common random numbers across k)."""

    problem: L1Distance
    ks: Sequence[int]
    k_of: Sequence[int]
    tail: float
    sigma_l: float
    p: float

    def __post_init__(self):
        self.ks = tuple(sorted(set(int(k) for k in self.ks)))
        self._slot = np.array([self.ks.index(int(k)) for k in self.k_of])

    def draw(self, rng, R):
        return H.nested_sphere_noise(self.ks, self.problem.d, self.tail, R, rng, sigma_l=self.sigma_l, p=self.p)

    def oracle(self, X, noise):
        out = self.problem.subgrad(X)
        for m, slot in enumerate(self._slot):    # in place, one (R, d) block per method
            out[m] += noise[slot]
        return out
