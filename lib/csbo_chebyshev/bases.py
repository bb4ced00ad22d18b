"""Feature maps Phi: [-1, 1] -> R^N of the reduction y_Phi(W, xi) = W Phi(xi), and their conditioning.

Bases: ``"cheb"`` (Chebyshev T_0..T_{N-1}), ``"fourier"`` (1, cos(pi xi), sin(pi xi), cos(2 pi xi), ...),
``"mono"`` (1, xi, ..., xi^{N-1}) and ``"onehot"`` (indicators of N equal intervals: the STOCBIO[N] baseline,
one independent lower-level copy per interval). The contexts are mapped affinely to [-1, 1] before.
"""
from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev as npcheb
from numpy.polynomial import legendre as npleg
from numpy.polynomial import polynomial as nppoly

KINDS = ("cheb", "fourier", "mono", "onehot")
LABELS = {"cheb": "Chebyshev", "fourier": "Fourier", "mono": "monomial", "onehot": "one-hot (STOCBIO)"}


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"basis kind {kind!r}; allowed: {', '.join(map(repr, KINDS))}")
    return kind


def features(kind: str, N: int, xi) -> np.ndarray:
    """``Phi(xi)`` as an array of shape ``xi.shape + (N,)``; ``xi`` in [-1, 1]."""
    check_kind(kind)
    if int(N) < 1:
        raise ValueError(f"number of basis functions N={N!r}; allowed: an integer >= 1")
    N = int(N)
    xi = np.asarray(xi, dtype=float)
    if kind == "cheb":
        return npcheb.chebvander(xi, N - 1)
    if kind == "mono":
        return nppoly.polyvander(xi, N - 1)
    if kind == "fourier":
        k = (np.arange(1, N) + 1) // 2  # frequencies 1, 1, 2, 2, 3, ...
        arg = np.pi * xi[..., None] * k
        out = np.where(np.arange(1, N) % 2 == 1, np.cos(arg), np.sin(arg))
        return np.concatenate([np.ones(xi.shape + (1,)), out], axis=-1)
    cell = np.clip(np.floor((xi + 1.0) * 0.5 * N).astype(int), 0, N - 1)
    return (cell[..., None] == np.arange(N)).astype(float)


def onehot_cells(N: int, xi) -> np.ndarray:
    """The interval index of each context under the one-hot partition (for sparse updates)."""
    xi = np.asarray(xi, dtype=float)
    return np.clip(np.floor((xi + 1.0) * 0.5 * N).astype(int), 0, N - 1)


def quadrature(kind: str, N: int, n_nodes: int = 160) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) of the uniform law on [-1, 1], exact to rounding for the analytic integrands
    of this paper times any basis: Gauss-Legendre, composite over the N cells for the (discontinuous) one-hot basis."""
    check_kind(kind)
    if kind != "onehot":
        t, w = npleg.leggauss(n_nodes)
        return t, w / 2.0
    per = max(8, int(np.ceil(n_nodes / N)))
    t, w = npleg.leggauss(per)
    edges = np.linspace(-1.0, 1.0, N + 1)
    half = np.diff(edges) / 2.0
    mid = (edges[:-1] + edges[1:]) / 2.0
    nodes = (mid[:, None] + half[:, None] * t[None, :]).ravel()
    weights = (half[:, None] * w[None, :]).ravel() / 2.0
    return nodes, weights


def gram(kind: str, N: int) -> np.ndarray:
    """E[Phi Phi^T] under xi ~ U[-1, 1]; for monomials the closed form E[xi^(i+j)] = 1/(i+j+1) (i+j even)."""
    if kind == "mono":
        s = np.add.outer(np.arange(N), np.arange(N))
        return np.where(s % 2 == 0, 1.0 / (s + 1.0), 0.0)
    nodes, w = quadrature(kind, N, n_nodes=max(160, 4 * N))
    P = features(kind, N, nodes)
    return (P * w[:, None]).T @ P


def lambda_min(kind: str, N: int) -> float:
    """m_Phi before the min with 1: lambda_min(E[Phi Phi^T]).

    Monomials: E[Phi Phi^T] = (L^T L)^{-1}, where the rows of L hold the monomial coefficients of the orthonormal
    Legendre polynomials sqrt(2k+1) P_k; so lambda_min = 1 / sigma_max(L)^2, which is computed to relative accuracy
    even when lambda_min is far below machine epsilon (an eigensolver on the Gram matrix is not, beyond N ~ 12)."""
    check_kind(kind)
    if kind == "mono":
        L = np.zeros((N, N))
        for k in range(N):
            c = np.zeros(k + 1)
            c[k] = np.sqrt(2 * k + 1)
            L[k, : k + 1] = npleg.leg2poly(c)
        return float(1.0 / np.linalg.norm(L, 2) ** 2)
    if kind == "onehot":
        return 1.0 / N
    return float(np.linalg.eigvalsh(gram(kind, N))[0])


def sup_norm(kind: str, N: int, n_grid: int = 4001) -> float:
    """M_Phi before the max with 1: sup over [-1, 1] of ||Phi(xi)||_2 (on a fine grid)."""
    xi = np.linspace(-1.0, 1.0, n_grid)
    return float(np.sqrt((features(kind, N, xi) ** 2).sum(-1)).max())
