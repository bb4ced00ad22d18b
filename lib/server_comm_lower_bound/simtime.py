"""Figure 5's simulated-time experiment: synchronised minibatch SGD, RandK-uplink SGD (k = ceil(d/n)) and
single-worker SGD on a nonconvex problem (logistic loss plus lambda sum x_j^2/(1 + x_j^2)), with the iterations to
||grad f||^2 <= eps multiplied by a per-iteration time model (never wall-clock).

The oracle is the paper's: unbiased stochastic gradients with variance sigma^2, here grad f(x) + (sigma/sqrt(d)) z,
z ~ N(0, I_d), independently at every worker. Every (method, n, step) state advances in one batched loop.
RandK is the Bernoulli form (keep each coordinate with probability q = k/d, scale by 1/q); the server's average of
n compressed noisy gradients is drawn exactly in distribution from per-coordinate counts c_j ~ Binomial(n, q):
(1/(n q)) (c_j grad_j f + sqrt(c_j) (sigma/sqrt(d)) z_j), which :func:`randk_average_explicit` checks by brute force.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lib.common import limit_threads

METHODS = ("sync", "randk", "single")
LABELS = {"sync": "synchronised minibatch SGD (uncompressed)", "randk": "RandK-uplink SGD, k = ceil(d/n)",
          "single": "single-worker SGD"}


@dataclass
class Problem:
    """f(x) = mean_i log(1 + exp(-y_i <a_i, x>)) + lam sum_j x_j^2 / (1 + x_j^2)."""

    A: np.ndarray
    y: np.ndarray
    lam: float

    @property
    def d(self) -> int:
        return self.A.shape[1]

    def f(self, X):
        m = -(X @ self.A.T) * self.y
        return np.logaddexp(0.0, m).mean(-1) + self.lam * (X * X / (1 + X * X)).sum(-1)

    def grad(self, X):
        """Gradient for a batch of points X (S, d)."""
        m = -(X @ self.A.T) * self.y                  # (S, N)
        w = 0.5 * (1.0 + np.tanh(0.5 * m))            # sigmoid(m), stable
        g = -(w * self.y) @ self.A / self.A.shape[0]
        return g + self.lam * 2 * X / (1 + X * X) ** 2


def make_problem(rng, d=200, N=400, lam=0.1, flip=0.2) -> Problem:
    """Gaussian features a_i ~ N(0, I_d), labels sign(<a_i, w*>) from a planted w* with a fraction ``flip`` flipped."""
    A = rng.standard_normal((N, d))
    w = rng.standard_normal(d)
    y = np.sign(A @ w + 1e-12)
    y[rng.random(N) < flip] *= -1
    return Problem(A=A, y=y, lam=lam)


def k_of(n, d) -> int:
    return int(math.ceil(d / n))


def time_per_iter(method, n, d, h, tau_s, tau_w) -> float:
    """Seconds per iteration: sync h + tau_w d + tau_s d; RandK h + tau_w k + tau_s d (the server broadcasts the
    dense averaged update); single-worker h (no communication)."""
    if method == "sync":
        return h + tau_w * d + tau_s * d
    if method == "randk":
        return h + tau_w * k_of(n, d) + tau_s * d
    if method == "single":
        return h
    raise ValueError(f"method {method!r}; allowed: {METHODS}")


def randk_average_explicit(g, n, k, sigma, rng):
    """Brute force: n workers each draw noise, compress grad + noise with Bernoulli RandK, the server averages."""
    d = g.shape[-1]
    noisy = g + sigma / math.sqrt(d) * rng.standard_normal((n, d))
    keep = rng.random((n, d)) < k / d
    return np.where(keep, noisy * (d / k), 0.0).mean(0)


def randk_average_fast(g, n, k, sigma, rng):
    """The same average drawn from per-coordinate counts c_j ~ Binomial(n, k/d) (exact in distribution)."""
    d = g.shape[-1]
    q = k / d
    c = rng.binomial(n, q, size=g.shape)
    return (c * g + np.sqrt(c) * (sigma / math.sqrt(d)) * rng.standard_normal(g.shape)) / (n * q)


@limit_threads(1)
def run_states(prob: Problem, methods, ns, steps, sigma, eps, max_iter, rng, groups=None, reps=1):
    """Advance every state (methods[s], ns[s], steps[s]) from x_0 = 0 until ||grad f||^2 <= eps or max_iter.
    Returns the iterations to the criterion per state (max_iter + 1 where it was never met: censored).

    Only active states are computed. With ``groups`` (one id per tuning group of ``reps`` replicates per step),
    a state still running at iteration t > reps * (best complete mean of its group) is stopped and censored: its
    step can no longer have the group's smallest mean (the tuning's pruning; it never changes which step wins)."""
    S, d = len(methods), prob.d
    methods, ns, steps = np.asarray(methods), np.asarray(ns, dtype=np.int64), np.asarray(steps, dtype=float)
    X = np.zeros((S, d))
    hit = np.full(S, max_iter + 1, dtype=np.int64)
    is_rk = methods == "randk"
    noise_scale = np.where(methods == "sync", sigma / np.sqrt(d * ns), sigma / math.sqrt(d))
    k = np.array([k_of(int(n), d) for n in ns])
    q = k / d
    active = np.arange(S)
    if groups is not None:
        groups = np.asarray(groups)
        keys = np.stack([groups, steps]).T
        _, step_id = np.unique(keys, axis=0, return_inverse=True)
        step_id = step_id.ravel()
    for t in range(max_iter + 1):
        G = prob.grad(X[active])
        done = (G * G).sum(1) <= eps
        hit[active[done]] = t
        keep = ~done
        if groups is not None and done.any():
            best = _best_complete_means(hit, groups, step_id, max_iter)
            hopeless = np.array([t >= reps * best.get(g, np.inf) for g in groups[active]])
            keep &= ~hopeless
        active, G = active[keep], G[keep]
        if active.size == 0 or t == max_iter:
            break
        Z = rng.standard_normal(G.shape)
        step = G + noise_scale[active, None] * Z
        rk = is_rk[active]
        if rk.any():
            idx = active[rk]
            c = rng.binomial(ns[idx, None], q[idx, None], size=(idx.size, d))
            step[rk] = (c * G[rk] + np.sqrt(c) * (sigma / math.sqrt(d)) * Z[rk]) / (ns[idx] * q[idx])[:, None]
        X[active] -= steps[active, None] * step
    return hit


def _best_complete_means(hit, groups, step_id, max_iter) -> dict:
    """Per group: the smallest mean iterations over the steps whose replicates have all hit."""
    best = {}
    for sid in np.unique(step_id):
        rows = step_id == sid
        if (hit[rows] <= max_iter).all():
            g = groups[rows][0]
            best[g] = min(best.get(g, np.inf), hit[rows].mean())
    return best
