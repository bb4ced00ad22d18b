"""Algorithm 1's clipping thresholds and step sizes (refined and old), and the Monte-Carlo clipping-error estimators
of Lemma 1."""
from __future__ import annotations

import math

import numpy as np

from lib.common.heavy_tails import Method, SparseRows

MODES = ("hp", "exp", "old")


def phi_of(mode: str, p: float, d_eff: float, delta: float) -> float:
    """phi in tau* = sigma_l / phi^(1/p).

    ``hp`` (refined, high probability): max{sqrt(d_eff) ln(3/delta), d_eff 1[p < 2]};
    ``exp`` (refined, in expectation): d_eff;
    ``old`` (d_eff-agnostic, Liu & Zhou 2023 style): ln(3/delta).
    """
    if mode == "hp":
        return max(math.sqrt(d_eff) * math.log(3.0 / delta), d_eff if p < 2 else 0.0)
    if mode == "exp":
        return float(d_eff)
    if mode == "old":
        return math.log(3.0 / delta)
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def threshold(p: float, sigma_l: float, d_eff: float, T: float, G: float, delta: float, mode: str = "hp") -> float:
    """tau = max{2G, tau* T^(1/p)}, tau* = sigma_l / phi^(1/p) (convex case, known horizon T)."""
    return max(2.0 * G, sigma_l / phi_of(mode, p, d_eff, delta) ** (1.0 / p) * T ** (1.0 / p))


def stepsize_convex(D: float, T: int, G: float, sigma_l: float, tau: float, p: float, c: float = 1.0) -> float:
    """eta = c D / sqrt(T (G^2 + sigma_l^p tau^(2-p))): balances D^2/(eta T) against eta sum E||g^c||^2 (our
    reconstruction; the paper's constant was not recovered)."""
    return c * D / math.sqrt(T * (G ** 2 + sigma_l ** p * tau ** (2.0 - p)))


def convex_method(name, mode, p, sigma_l, d_eff, T, K, G, D, delta, c=1.0, clip=True, eta_mode=None) -> Method:
    """Constant tau and eta for horizon T, run for K >= T steps (read at checkpoint T). ``clip=False``: unclipped SGD
    with the step size of the threshold ``eta_mode`` (default ``mode``)."""
    tau = threshold(p, sigma_l, d_eff, T, G, delta, mode)
    tau_eta = tau if eta_mode is None else threshold(p, sigma_l, d_eff, T, G, delta, eta_mode)
    eta = stepsize_convex(D, T, G, sigma_l, tau_eta, p, c)
    return Method(name, np.full(K, eta), np.full(K, tau) if clip else None)


def strongly_convex_method(name, mode, p, sigma_l, d_eff, K, G, mu, delta, c=1.0, clip=True) -> Method:
    """eta_t = c / (mu t) and tau_t = max{2G, tau* t^(1/p)} for t = 1..K (our guess), with the t-weighted average
    sum t x_t / sum t as output (weights ``"t"``)."""
    t = np.arange(1, K + 1, dtype=float)
    tau_star = sigma_l / phi_of(mode, p, d_eff, delta) ** (1.0 / p)
    tau = np.maximum(2.0 * G, tau_star * t ** (1.0 / p))
    return Method(name, c / (mu * t), tau if clip else None, weights={"t": t})


# --------------------------------------------------------------------------------------------------------------
# Lemma 1: the clipping error d^u = g^c - E g^c (unbiased part) and d^b = E g^c - grad f (bias)
# --------------------------------------------------------------------------------------------------------------
def _batches(n: int, n_batches: int):
    edges = np.linspace(0, n, n_batches + 1).astype(int)
    return list(zip(edges[:-1], edges[1:]))


def bias_sparse(grad: np.ndarray, noise: SparseRows, taus, n_batches: int = 20) -> dict:
    """||d^b|| = ||E[clip(grad + n, tau)] - grad|| for sparse noise rows (one non-zero each), for every tau, with its
    Monte-Carlo error (norm of the per-coordinate standard errors, from ``n_batches`` batch means)."""
    grad = np.asarray(grad, dtype=float)
    j, v = noise.index, noise.value
    gj = grad[j]
    norm2 = grad @ grad + 2 * v * gj + v * v                       # ||grad + v e_j||^2
    out = {"tau": [], "bias_norm": [], "mc_error": []}
    for tau in np.atleast_1d(taus):
        c = np.minimum(1.0, tau / np.sqrt(norm2))
        means = []
        for a, b in _batches(len(v), n_batches):
            m = (c[a:b].mean() - 1.0) * grad                        # E[c] grad - grad
            m = m + np.bincount(j[a:b], weights=c[a:b] * v[a:b], minlength=noise.d) / (b - a)
            means.append(m)
        means = np.array(means)
        sizes = np.diff([a for a, _ in _batches(len(v), n_batches)] + [len(v)])
        mean = (means * sizes[:, None]).sum(axis=0) / len(v)
        se = means.std(axis=0, ddof=1) / math.sqrt(n_batches)
        out["tau"].append(float(tau))
        out["bias_norm"].append(float(np.linalg.norm(mean)))
        out["mc_error"].append(float(np.linalg.norm(se)))
    return {k: np.array(v_) for k, v_ in out.items()}


def covariance_dense(grad: np.ndarray, noise: np.ndarray, taus) -> dict:
    """||Cov(g^c)||_op, Tr Cov(g^c) = E||d^u||^2 and ||d^b|| for dense noise rows ``noise`` (n, d), every tau."""
    grad = np.asarray(grad, dtype=float)
    g = grad + np.asarray(noise, dtype=float)
    norms = np.linalg.norm(g, axis=1)
    out = {"tau": [], "cov_op": [], "cov_trace": [], "bias_norm": []}
    for tau in np.atleast_1d(taus):
        gc = g * np.minimum(1.0, tau / norms)[:, None]
        mean = gc.mean(axis=0)
        cov = np.cov(gc, rowvar=False, bias=True)
        out["tau"].append(float(tau))
        out["cov_op"].append(float(np.linalg.eigvalsh(cov)[-1]))
        out["cov_trace"].append(float(np.trace(cov)))
        out["bias_norm"].append(float(np.linalg.norm(mean - grad)))
    return {k: np.array(v_) for k, v_ in out.items()}


def haar_orthogonal(k: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random k x k orthogonal matrix (QR of a Gaussian matrix with the signs of R's diagonal fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((k, k)))
    return q * np.sign(np.diag(r))


def covariance_sphere(grad: np.ndarray, k: int, s: np.ndarray, taus, rng: np.random.Generator,
                      batch: int = 64) -> dict:
    """Clipping error of ``g = grad + s u``, u uniform on the unit sphere of the first k coordinates, for the scalar
    draws ``s`` (e.g. symmetric Pareto). Returns, per tau, ||Cov(g^c)||_op, Tr Cov(g^c) = E||d^u||^2 and the bias
    ||E g^c - grad||.

    Stratified over the directions, unbiased: a draw with |s| <= tau - ||grad|| is never clipped, whatever u, and its
    average over u is exact (mean grad, second moment grad grad^T + s^2 I_k / k); the other draws, in batches of
    ``batch``, are paired with all k directions O e_j of one Haar-random orthonormal frame O per batch (each direction
    marginally uniform on the sphere). Works in the (k+1)-dimensional span of the first k coordinates and grad's
    remaining component, where g^c lives."""
    grad = np.asarray(grad, dtype=float)
    a = grad[:k]
    base = np.concatenate([a, [float(np.linalg.norm(grad[k:]))]])    # grad in the reduced basis
    gn = float(np.linalg.norm(base))
    s = np.asarray(s, dtype=float)
    n = len(s)
    taus = np.atleast_1d(np.asarray(taus, dtype=float))
    out = {"tau": taus.copy(), "cov_op": np.empty(len(taus)), "cov_trace": np.empty(len(taus)),
           "bias_norm": np.empty(len(taus))}
    Ik = np.zeros((k + 1, k + 1))
    Ik[:k, :k] = np.eye(k)
    for j, tau in enumerate(taus):
        small = np.abs(s) <= tau - gn
        n_small = int(small.sum())
        S1 = n_small * base
        S2 = n_small * np.outer(base, base) + (s[small] ** 2).sum() / k * Ik
        big = s[~small]
        for i in range(0, len(big), batch):
            sb = big[i:i + batch]
            O = haar_orthogonal(k, rng)                               # columns: the frame's directions
            proj = a @ O                                              # <grad_k, O e_j>
            norm2 = gn ** 2 + 2 * sb[:, None] * proj[None, :] + sb[:, None] ** 2
            c2 = np.minimum(1.0, tau ** 2 / norm2)                    # squared clip factors (B, k)
            c = np.sqrt(c2)
            # each scalar draw has weight 1, spread as 1/k over its frame's k directions:
            # first moment sum_ij c_ij (base + s_i O e_j) / k, second sum_ij c_ij^2 (base + s_i O e_j)(...)^T / k
            S1 = S1 + c.sum() / k * base
            S1[:k] += O @ (c * sb[:, None]).sum(axis=0) / k
            cross = np.zeros(k + 1)
            cross[:k] = O @ (c2 * sb[:, None]).sum(axis=0) / k
            S2 = S2 + c2.sum() / k * np.outer(base, base) + np.outer(base, cross) + np.outer(cross, base)
            S2[:k, :k] += (O * ((c2 * sb[:, None] ** 2).sum(axis=0) / k)) @ O.T
        mean = S1 / n
        cov = S2 / n - np.outer(mean, mean)
        out["cov_op"][j] = np.linalg.eigvalsh(cov)[-1]
        out["cov_trace"][j] = np.trace(cov)
        out["bias_norm"][j] = np.linalg.norm(mean - base)
    return out
