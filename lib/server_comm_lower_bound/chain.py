"""The K-chain worst-case function F_{T,K,a} of the paper's construction, its analytic gradient, the progress measure
prog_K, the Bernoulli stochastic oracle, the RandK server compressor and Lemma 3.2's constants (numpy/scipy only).

F_{T,K,a}(x) = - sum_{i=1}^T Psi_a(x_{i-K}) ... Psi_a(x_{i-1}) Phi(x_i) + sum_{i=1}^T Gamma(x_i),
with x_0 = x_{-1} = ... = x_{-K+1} = 1 (padding), Phi(x) = sqrt(e) int_{-inf}^x e^{-t^2/2} dt (Carmon et al.),
Gamma(x) = -x e^{1/x + 1} for x < 0 and 0 for x >= 0.

**Psi_a is a reconstruction** (the paper's formula was not recovered from any source we could read):
Psi_a(x) = 0 for x <= 1/2 and a^{1 - 1/(2x-1)^2} for x > 1/2. At a = e it is Carmon et al.'s Psi; its sup is a;
sup|Psi_a'| ~ (log a)^{-1/2} and sup|Psi_a''| ~ (log a)^{-1}, the dependence on a that Lemma 3.2's constants show.

Arrays: a point is the last axis of ``x`` (shape (..., T)); everything broadcasts over leading axes.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

SQRT_E = math.sqrt(math.e)
PHI_SCALE = math.sqrt(2 * math.pi * math.e)     # Phi(+inf) = sqrt(2 pi e)


# --- the one-dimensional pieces ------------------------------------------------------------------------------
def phi(x):
    """Phi(x) = sqrt(e) * int_{-inf}^x exp(-t^2/2) dt = sqrt(2 pi e) * ndtr(x)."""
    return PHI_SCALE * special.ndtr(np.asarray(x, dtype=float))


def dphi(x):
    """Phi'(x) = sqrt(e) exp(-x^2/2)."""
    x = np.asarray(x, dtype=float)
    return SQRT_E * np.exp(-0.5 * x * x)


def _check_a(a):
    if not (np.isfinite(a) and a > 1.0):
        raise ValueError(f"parameter 'a' got {a!r}; allowed: a number > 1")
    return float(a)


def psi_a(x, a):
    """Psi_a(x): 0 for x <= 1/2, a^(1 - 1/(2x-1)^2) for x > 1/2 (reconstructed, see the module docstring)."""
    la = math.log(_check_a(a))
    x = np.asarray(x, dtype=float)
    pos = x > 0.5
    u = np.where(pos, 2.0 * x - 1.0, 1.0)
    return np.where(pos, np.exp(la * (1.0 - 1.0 / (u * u))), 0.0)


def dpsi_a(x, a):
    """Psi_a'(x) = Psi_a(x) * log(a) * 4 / (2x-1)^3 for x > 1/2, else 0."""
    la = math.log(_check_a(a))
    x = np.asarray(x, dtype=float)
    pos = x > 0.5
    u = np.where(pos, 2.0 * x - 1.0, 1.0)
    return np.where(pos, np.exp(la * (1.0 - 1.0 / (u * u))) * 4.0 * la / (u * u * u), 0.0)


def gamma_fn(x):
    """Gamma(x) = -x exp(1/x + 1) for x < 0, 0 for x >= 0 (C-infinity at 0)."""
    x = np.asarray(x, dtype=float)
    neg = x < 0
    s = np.where(neg, x, -1.0)
    return np.where(neg, -s * np.exp(1.0 / s + 1.0), 0.0)


def dgamma_fn(x):
    """Gamma'(x) = exp(1 + 1/x) (1/x - 1) for x < 0, 0 for x >= 0."""
    x = np.asarray(x, dtype=float)
    neg = x < 0
    s = np.where(neg, x, -1.0)
    return np.where(neg, np.exp(1.0 + 1.0 / s) * (1.0 / s - 1.0), 0.0)


# --- F and its gradient --------------------------------------------------------------------------------------
def _check_TK(x, T, K):
    if not (isinstance(K, (int, np.integer)) and K >= 1):
        raise ValueError(f"parameter 'K' got {K!r}; allowed: an integer >= 1")
    if x.shape[-1] != T:
        raise ValueError(f"x has {x.shape[-1]} coordinates on its last axis; T = {T} expected")


def _padded_psi(x, K, a):
    """Psi_a on (1, ..., 1 [K times], x_1, ..., x_T) (Psi_a(1) = 1), shape (..., K + T)."""
    P = psi_a(x, a)
    return np.concatenate([np.ones(x.shape[:-1] + (K,)), P], axis=-1)


def F(x, T, K, a):
    """F_{T,K,a}(x) for x of shape (..., T); returns shape (...)."""
    x = np.asarray(x, dtype=float)
    _check_TK(x, T, K)
    P = _padded_psi(x, K, a)
    Q = np.ones_like(x)
    for k in range(K):                       # Q_i = Psi(x_{i-K}) ... Psi(x_{i-1})
        Q = Q * P[..., k:k + T]
    return -(Q * phi(x)).sum(-1) + gamma_fn(x).sum(-1)


def grad_F(x, T, K, a):
    """The analytic gradient of F_{T,K,a}, shape (..., T).

    d/dx_j = -Q_j Phi'(x_j) - sum_{i = j+1}^{min(j+K, T)} [prod_{m in window(i), m != j} Psi(x_m)] Psi'(x_j) Phi(x_i)
             + Gamma'(x_j); the leave-one-out products come from prefix and suffix products (no division by Psi)."""
    x = np.asarray(x, dtype=float)
    _check_TK(x, T, K)
    P = _padded_psi(x, K, a)
    dP = np.concatenate([np.zeros(x.shape[:-1] + (K,)), dpsi_a(x, a)], axis=-1)
    win = [P[..., k:k + T] for k in range(K)]          # win[k][..., i-1] = Psi(x_{i-K+k})
    prefix = [np.ones_like(x)]
    for k in range(K - 1):
        prefix.append(prefix[-1] * win[k])
    suffix = [np.ones_like(x)] * K
    acc = np.ones_like(x)
    for k in range(K - 1, -1, -1):
        suffix[k] = acc
        acc = acc * win[k]
    Q = acc                                             # full product over the window
    ph = phi(x)
    g_pad = np.zeros(x.shape[:-1] + (K + T,))
    for k in range(K):                                  # window position k of term i sits at padded index k + i - 1
        loo = prefix[k] * suffix[k]
        g_pad[..., k:k + T] -= loo * dP[..., k:k + T] * ph
    g = g_pad[..., K:]
    return g - Q * dphi(x) + dgamma_fn(x)


def hessian_F(x, T, K, a, h=1e-5):
    """The Hessian of F by central differences of the analytic gradient (symmetrised), shape (..., T, T)."""
    x = np.asarray(x, dtype=float)
    E = np.eye(T) * h
    cols = [(grad_F(x + E[j], T, K, a) - grad_F(x - E[j], T, K, a)) / (2 * h) for j in range(T)]
    H = np.stack(cols, axis=-1)
    return 0.5 * (H + np.swapaxes(H, -1, -2))


# --- progress, oracle, compressor ----------------------------------------------------------------------------
def prog_K(x, K):
    """prog_K(x) = max{i >= 0 : x_i, x_{i-1}, ..., x_{i-K+1} all nonzero}, with x_0 = ... = x_{-K+1} = 1.
    Vectorised over leading axes (integer array)."""
    x = np.asarray(x)
    if not (isinstance(K, (int, np.integer)) and K >= 1):
        raise ValueError(f"parameter 'K' got {K!r}; allowed: an integer >= 1")
    nz = np.concatenate([np.ones(x.shape[:-1] + (K,), dtype=np.int64), (x != 0).astype(np.int64)], axis=-1)
    c = np.concatenate([np.zeros(x.shape[:-1] + (1,), dtype=np.int64), np.cumsum(nz, axis=-1)], axis=-1)
    full = (c[..., K:] - c[..., :-K]) == K          # full[..., i] : window ending at index i (i = 0..T) all nonzero
    idx = np.arange(full.shape[-1])
    return np.max(np.where(full, idx, 0), axis=-1)


def stochastic_grad(x, T, K, a, p_sigma, rng):
    """The Bernoulli oracle [g]_j = dF/dx_j * (1 + 1{j = prog_K(x)+1} (xi/p_sigma - 1)), xi ~ Bernoulli(p_sigma):
    unbiased; the next chain coordinate is revealed only with probability p_sigma. Returns (g, xi)."""
    if not (0.0 < p_sigma <= 1.0):
        raise ValueError(f"parameter 'p_sigma' got {p_sigma!r}; allowed: 0 < p_sigma <= 1")
    x = np.asarray(x, dtype=float)
    g = grad_F(x, T, K, a)
    j = prog_K(x, K)                                  # 0-based index of coordinate prog_K + 1
    xi = rng.random(x.shape[:-1]) < p_sigma
    scale = np.where(xi, 1.0 / p_sigma, 0.0)
    hit = (np.arange(T) == np.asarray(j)[..., None])
    return np.where(hit, g * scale[..., None], g), xi


def randk(v, k, rng):
    """The RandK compressor in its Bernoulli form: keep each coordinate with probability k/d, scale kept ones by
    d/k (unbiased: E C(v) = v). ``v`` of shape (..., d)."""
    v = np.asarray(v, dtype=float)
    d = v.shape[-1]
    if not (1 <= k <= d):
        raise ValueError(f"parameter 'k' got {k!r}; allowed: 1 <= k <= d = {d}")
    keep = rng.random(v.shape) < k / d
    return np.where(keep, v * (d / k), 0.0)


# --- Lemma 3.2 -----------------------------------------------------------------------------------------------
def lemma32_constants(K, a):
    """Lemma 3.2's constants (as given in the research brief): value drop per chain coordinate Delta_0, smoothness
    ell_1 and gradient bound gamma_inf. Broadcasts over K and a."""
    K = np.asarray(K, dtype=float)
    a = np.asarray(a, dtype=float)
    la = np.log(a)
    aK = a ** K
    return {"Delta_0": math.sqrt(2 * math.pi * math.e) * aK,
            "ell_1": 12 * math.sqrt(2 * math.pi) * math.e ** 2.5 * K ** 2 * aK / la,
            "gamma_inf": 6 * math.sqrt(2 * math.pi) * math.e ** 1.5 * K * aK / np.sqrt(la)}
