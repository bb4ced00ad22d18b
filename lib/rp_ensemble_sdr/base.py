"""Base regressions of RPEDR, batched over all M projections of a group.

The authors' "poly" option fits ``Y ~ .^2 + I(Z_k^2)`` by OLS: an intercept, the d projected coordinates, all
pairwise products and the squares, i.e. the full quadratic with ``q = 1 + d + d(d+1)/2`` terms. Here the design is
built for all M projections at once, in scikit-learn's ``PolynomialFeatures(degree=2)`` column order, and the M
normal equations are solved in one batched ``np.linalg.solve``. ``"linear"`` is ``Y ~ .`` (``q = 1 + d``).

Internally the designs are stored transposed, ``(M, q, n)``: every feature is then a contiguous row of n numbers,
which makes building them several times faster than the ``(M, n, q)`` layout.

The paper's default base, MARS (``earth::earth(degree = 3)``), has no maintained Python implementation
(``sklearn-contrib-py-earth`` dates from 2017 and does not build on current Python), so it is not offered.
"""
from __future__ import annotations

import numpy as np

BASES = ("quad", "linear")


def n_features(d: int, kind: str = "quad") -> int:
    """Number of columns of the base design: ``1 + d`` (linear) or ``1 + d + d(d+1)/2`` (quadratic)."""
    if kind not in BASES:
        raise ValueError(f"parameter 'base' got {kind!r}; allowed: one of {', '.join(map(repr, BASES))}")
    return 1 + d + (d * (d + 1) // 2 if kind == "quad" else 0)


def design_t(Zt: np.ndarray, kind: str = "quad") -> np.ndarray:
    """Transposed design: ``Zt`` of shape ``(..., d, n)`` -> ``(..., q, n)``."""
    Zt = np.asarray(Zt, dtype=float)
    d = Zt.shape[-2]
    F = np.empty(Zt.shape[:-2] + (n_features(d, kind), Zt.shape[-1]))
    F[..., 0, :] = 1.0
    F[..., 1:d + 1, :] = Zt
    if kind == "quad":
        k = d + 1
        for i in range(d):  # z_i * (z_i, ..., z_d): the i-th row of the upper triangle
            np.multiply(Zt[..., i:i + 1, :], Zt[..., i:, :], out=F[..., k:k + d - i, :])
            k += d - i
    return F


def quad_features(Z: np.ndarray) -> np.ndarray:
    """Full quadratic design of ``Z`` (shape ``(..., n, d)``) -> ``(..., n, q)``: 1, z_i, then z_i z_j (i <= j),
    in ``PolynomialFeatures(degree=2)``'s column order."""
    return np.swapaxes(design_t(np.swapaxes(np.asarray(Z, dtype=float), -1, -2), "quad"), -1, -2)


def project_t(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``X`` (n, p) through every projection of ``A`` (M, p, d) -> ``Z^T`` of shape (M, d, n), one BLAS call."""
    M, p, d = A.shape
    return (A.transpose(0, 2, 1).reshape(M * d, p) @ X.T).reshape(M, d, X.shape[0])


def batched_fit_t(Ft: np.ndarray, y: np.ndarray, ridge: float = 1e-8) -> np.ndarray:
    """Least squares for every transposed design ``Ft`` (M, q, n) against ``y`` (n,) -> coefficients (M, q).

    ``ridge`` is relative (times the mean diagonal of each Gram matrix): 1e-8 only guards against an exactly
    singular Gram matrix, so the fit is OLS to working precision, as R's ``lm``.
    """
    G = Ft @ Ft.transpose(0, 2, 1)
    q = G.shape[-1]
    scale = np.trace(G, axis1=1, axis2=2) / q
    G[:, np.arange(q), np.arange(q)] += ridge * scale[:, None]
    b = Ft @ y
    return np.linalg.solve(G, b[..., None])[..., 0]


def batched_val_mse(X_tr: np.ndarray, y_tr: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, A: np.ndarray,
                    kind: str = "quad", ridge: float = 1e-8) -> np.ndarray:
    """Validation MSE of the base regression on ``Z = X A_m`` for every projection m of ``A`` (M, p, d) -> (M,)."""
    beta = batched_fit_t(design_t(project_t(X_tr, A), kind), np.asarray(y_tr, dtype=float), ridge)
    pred = np.einsum("mqn,mq->mn", design_t(project_t(X_val, A), kind), beta)
    return np.mean((pred - np.asarray(y_val, dtype=float)[None, :]) ** 2, axis=1)
