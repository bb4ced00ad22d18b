"""The random sum of Eq. 13: the time a zero-respecting method with a RandK server compressor needs to discover B
blocks of the K-chain,

    t_B = sum_{b=1}^B min_{i in [n]} min{ h sum_{k=1}^{K/2} eta_{b,i,k},  tau_s sum_{k=1}^{K/2} mu_{b,i,k} },

eta ~ Geometric(p_sigma) (oracle calls until the Bernoulli oracle reveals the next coordinate) and mu ~
Geometric(p_K) (server rounds until RandK lets it through), all independent, on {1, 2, ...}. The brute-force
simulator draws every eta and mu (in chunks of replicates); :func:`expected_t_B` gives E[t_B] exactly from the
survival function of the minimum (scipy's negative binomial), for any n.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats


def _check(n, K, B, p_sigma, p_K, h, tau_s):
    for name, v in (("n", n), ("B", B)):
        if not (isinstance(v, (int, np.integer)) and v >= 1):
            raise ValueError(f"parameter {name!r} got {v!r}; allowed: an integer >= 1")
    if not (isinstance(K, (int, np.integer)) and K >= 2 and K % 2 == 0):
        raise ValueError(f"parameter 'K' got {K!r}; allowed: an even integer >= 2 (K/2 terms per sum)")
    for name, v in (("p_sigma", p_sigma), ("p_K", p_K)):
        if not (0.0 < v <= 1.0):
            raise ValueError(f"parameter {name!r} got {v!r}; allowed: 0 < {name} <= 1")
    for name, v in (("h", h), ("tau_s", tau_s)):
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"parameter {name!r} got {v!r}; allowed: a number > 0")


def k_of_n(n) -> int:
    """The paper's choice K = Theta(log n), here K = 2 * ceil(ln(n + 1)) (even, >= 2)."""
    return int(2 * math.ceil(math.log(n + 1)))


def normaliser(K, B, p_sigma, p_K, h, tau_s) -> float:
    """B (K/2) min{h/p_sigma, tau_s/p_K}: E[t_B] of one worker racing one sum (no min over n or over the two)."""
    return B * (K / 2) * min(h / p_sigma, tau_s / p_K)


def draw(rng, R, B, n, K, p_sigma, p_K):
    """All draws of R replicates, shape (R, B, n, 2, K/2): [..., 0, :] are eta ~ Geom(p_sigma), [..., 1, :] mu ~
    Geom(p_K). Drawn in C order, so drawing R1 then R2 replicates equals drawing R1 + R2 at once."""
    p = np.array([[p_sigma], [p_K]])
    return rng.geometric(p, size=(R, B, n, 2, K // 2))


def t_B_from_draws(draws, h, tau_s):
    """t_B of each replicate from its draws (shape (R, B, n, 2, K/2)), vectorised: returns shape (R,)."""
    sums = draws.sum(axis=-1).astype(float)                      # (R, B, n, 2)
    times = np.minimum(h * sums[..., 0], tau_s * sums[..., 1])   # (R, B, n)
    return times.min(axis=-1).sum(axis=-1)


def t_B_loop(draws, h, tau_s):
    """The same as :func:`t_B_from_draws` with plain Python loops (the unit tests' reference)."""
    R, B, n, _, m = draws.shape
    out = []
    for r in range(R):
        total = 0.0
        for b in range(B):
            best = math.inf
            for i in range(n):
                s_eta = sum(int(draws[r, b, i, 0, k]) for k in range(m))
                s_mu = sum(int(draws[r, b, i, 1, k]) for k in range(m))
                best = min(best, h * s_eta, tau_s * s_mu)
            total += best
        out.append(total)
    return np.array(out)


def t_B(n, K, B, p_sigma, p_K, h, tau_s, R, rng, max_elems=4_000_000):
    """R samples of t_B by brute force, drawing at most ``max_elems`` geometric variables at a time (chunks of
    replicates; the same draws, hence the same numbers, whatever the chunk size)."""
    _check(n, K, B, p_sigma, p_K, h, tau_s)
    per = B * n * K
    chunk = max(1, max_elems // per)
    out = []
    for start in range(0, R, chunk):
        c = min(chunk, R - start)
        out.append(t_B_from_draws(draw(rng, c, B, n, K, p_sigma, p_K), h, tau_s))
    return np.concatenate(out)


def moments_t_B(n, K, B, p_sigma, p_K, h, tau_s, tail=1e-13):
    """(E[t_B], Var[t_B]) exactly (up to a truncated tail of probability ``tail``). t_B is a sum of B independent
    copies of M, the minimum over n workers of min(h S_eta, tau_s S_mu), S ~ negative binomial (trials to K/2
    successes). From the survival function over the sorted support {h s} U {tau_s s}:
    E[M] = sum_j (t_{j+1} - t_j) P(M > t_j) and E[M^2] = sum_j (t_{j+1}^2 - t_j^2) P(M > t_j)."""
    _check(n, K, B, p_sigma, p_K, h, tau_s)
    m = K // 2
    s1 = m + int(stats.nbinom.ppf(1 - tail, m, p_sigma))
    s2 = m + int(stats.nbinom.ppf(1 - tail, m, p_K))
    tmax = min(h * s1, tau_s * s2)
    t = np.unique(np.concatenate([h * np.arange(m, int(tmax / h) + 2), tau_s * np.arange(m, int(tmax / tau_s) + 2)]))
    t = np.concatenate([[0.0], t])
    # P(S > y) for real y: S integer >= m, P(S > y) = P(F > floor(y) - m), F failures ~ nbinom(m, p)
    eps = 1e-9
    sf1 = stats.nbinom.sf(np.floor(t / h + eps) - m, m, p_sigma)
    sf2 = stats.nbinom.sf(np.floor(t / tau_s + eps) - m, m, p_K)
    surv = (sf1 * sf2) ** n
    mean = float(np.sum(np.diff(t) * surv[:-1]))
    second = float(np.sum(np.diff(t ** 2) * surv[:-1]))
    return B * mean, B * max(second - mean ** 2, 0.0)


def expected_t_B(n, K, B, p_sigma, p_K, h, tau_s, tail=1e-13):
    """E[t_B] exactly (see :func:`moments_t_B`)."""
    return moments_t_B(n, K, B, p_sigma, p_K, h, tau_s, tail)[0]
