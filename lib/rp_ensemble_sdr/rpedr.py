"""RPEDR (Algorithm 1), its dimension estimate (Algorithm 2) and RPEDR-double (Algorithm 3).

Exact to the authors' R code (``RPEDR.R``, ``RPEDR_dim_est.R``, ``RPEDR_double.R``) except for the base regression
(the quadratic "poly" option instead of MARS, see :mod:`.base`):

1. for each of ``L`` independent groups, draw ``M`` projections ``A_{l,m}`` (p x d, unit-norm columns), draw one
   validation subset of ``floor(n/3)`` rows for the group, fit the base regression of Y on ``X A_{l,m}`` on the
   other rows and keep the projection with the smallest validation MSE;
2. ``P* = (1/L) sum_l A_{l,*} A_{l,*}^T`` and its SVD ``P* = U D U^T`` (``P*`` is symmetric PSD, so the SVD is an
   eigendecomposition); the estimated basis of the central mean subspace is ``U[:, :d0]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .base import BASES, batched_val_mse
from .projections import DISTS, draw_projections


def default_d(p: int) -> int:
    """The authors' projection dimension ``ceil(sqrt(p))``."""
    return int(math.ceil(math.sqrt(p)))


@dataclass
class RPEDRFit:
    """Output of Algorithm 1, plus what the figures need (the selected projection of every group)."""

    U: np.ndarray  # (p, p) left singular vectors of P*, by decreasing singular value
    D: np.ndarray  # (p,) singular values of P*
    selected: np.ndarray  # (L, p, d) the projection kept in each group
    val_mse: np.ndarray  # (L,) its validation MSE
    gaussian: np.ndarray  # (L,) whether the kept block was drawn Gaussian
    d: int
    L: int
    M: int
    dist: str
    base: str
    n_fits: int = 0  # base-regression fits made (L * M)
    extra: dict = field(default_factory=dict)

    def P(self, L: Optional[int] = None) -> np.ndarray:
        """``P*`` from the first ``L`` groups (all by default)."""
        A = self.selected if L is None else self.selected[:L]
        return np.einsum("lpd,lqd->pq", A, A) / A.shape[0]

    def basis(self, d0: int, L: Optional[int] = None) -> np.ndarray:
        """The top-``d0`` directions of ``P*`` (from the first ``L`` groups)."""
        if L is None:
            return self.U[:, :d0]
        U, _ = svd_sym(self.P(L))
        return U[:, :d0]


def svd_sym(P: np.ndarray):
    """SVD of a symmetric PSD matrix: (U, D) with D decreasing (eigh, clipped at 0)."""
    w, V = np.linalg.eigh((P + P.T) / 2)
    order = np.argsort(w)[::-1]
    return V[:, order], np.clip(w[order], 0.0, None)


def rpedr(X: np.ndarray, y: np.ndarray, d: Optional[int] = None, L: int = 200, M: Optional[int] = None,
          dist: str = "mixed", base: str = "quad", rng: Optional[np.random.Generator] = None) -> RPEDRFit:
    """Algorithm 1. Defaults as the authors': ``d = ceil(sqrt(p))``, ``L = 200``, ``M = 10 p``, ``dist="mixed"``."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).ravel()
    n, p = X.shape
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]}")
    d = default_d(p) if d is None else int(d)
    M = 10 * p if M is None else int(M)
    if not 1 <= d <= p:
        raise ValueError(f"parameter 'd' got {d}; allowed: an integer in [1, p={p}]")
    if dist not in DISTS:
        raise ValueError(f"parameter 'dist' got {dist!r}; allowed: one of {', '.join(map(repr, DISTS))}")
    if base not in BASES:
        raise ValueError(f"parameter 'base' got {base!r}; allowed: one of {', '.join(map(repr, BASES))}")
    rng = rng if rng is not None else np.random.default_rng(0)
    n_val = n // 3
    selected = np.empty((L, p, d))
    best = np.empty(L)
    gaussian = np.empty(L, dtype=bool)
    for l in range(L):
        A, kind = draw_projections(p, d, M, dist, rng, return_kind=True)
        val = np.zeros(n, dtype=bool)
        val[rng.choice(n, n_val, replace=False)] = True
        mse = batched_val_mse(X[~val], y[~val], X[val], y[val], A, kind=base)
        m = int(np.argmin(mse))
        selected[l], best[l], gaussian[l] = A[m], mse[m], kind[m]
    fit = RPEDRFit(U=np.empty((p, p)), D=np.empty(p), selected=selected, val_mse=best, gaussian=gaussian, d=d, L=L,
                   M=M, dist=dist, base=base, n_fits=L * M)
    fit.U, fit.D = svd_sym(fit.P())
    return fit


def null_singular_values(p: int, d: int, L: int, R: int = 1000, dist: str = "mixed",
                         rng: Optional[np.random.Generator] = None, chunk_floats: int = 4_000_000) -> np.ndarray:
    """Singular values of ``(1/L) sum_l A_l A_l^T`` for ``R`` draws of ``L`` *unselected* projections -> (R, p)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    out = np.empty((R, p))
    per = max(1, chunk_floats // (L * p * d))
    for start in range(0, R, per):
        r = min(per, R - start)
        A = draw_projections(p, d, r * L, dist, rng).reshape(r, L, p, d)
        B = A.transpose(0, 2, 1, 3).reshape(r, p, L * d)
        S = B @ B.transpose(0, 2, 1) / L
        out[start:start + r] = np.clip(np.linalg.eigvalsh(S)[:, ::-1], 0.0, None)
    return out


def null_median(p: int, L: int, R: int = 1000, dist: str = "mixed", rng: Optional[np.random.Generator] = None,
                d: Optional[int] = None) -> np.ndarray:
    """Elementwise median of :func:`null_singular_values` (Algorithm 2 uses ``d = ceil(sqrt(p))``)."""
    return np.median(null_singular_values(p, default_d(p) if d is None else d, L, R, dist, rng), axis=0)


def dim_from_singular_values(D: np.ndarray, D_med: np.ndarray) -> int:
    """Algorithm 2's rule: the number of leading singular values before the first one below the null median.

    (The R code's ``which.max(D < D.median) - 1``; where no value is below the median, all p are counted, whereas R
    would return 0. Since both spectra sum to d, that can only happen when ``D`` equals the median.)
    """
    below = np.flatnonzero(np.asarray(D) < np.asarray(D_med))
    return int(below[0]) if below.size else int(len(D))


def rpedr_dim_est(D: np.ndarray, L: int, R: int = 1000, dist: str = "mixed",
                  rng: Optional[np.random.Generator] = None, D_med: Optional[np.ndarray] = None) -> int:
    """Algorithm 2: ``d_hat`` from RPEDR's singular values ``D`` (pass ``D_med`` to reuse a null reference)."""
    p = len(D)
    if D_med is None:
        D_med = null_median(p, L, R, dist, rng)
    return dim_from_singular_values(D, D_med)


@dataclass
class DoubleFit:
    B: np.ndarray  # (p, d0) directions
    d_hat: int
    second: Optional[RPEDRFit]  # the fit on X U[:, :d_hat] (None when d_hat <= d0)


def rpedr_double(X: np.ndarray, y: np.ndarray, d0: int, first: RPEDRFit, D_med: np.ndarray,
                 rng: Optional[np.random.Generator] = None) -> DoubleFit:
    """Algorithm 3 from a finished first fit: if ``d_hat > d0``, rerun Algorithm 1 on ``X' = X U[:, :d_hat]``
    with ``p' = d_hat``, ``M' = 10 d_hat``, ``d' = ceil(sqrt(d_hat))`` (same L, distribution and base) and return
    ``U[:, :d_hat] U'[:, :d0]``; otherwise ``U[:, :d0]``."""
    d_hat = dim_from_singular_values(first.D, D_med)
    if d_hat <= d0:
        return DoubleFit(B=first.U[:, :d0], d_hat=d_hat, second=None)
    Ud = first.U[:, :d_hat]
    second = rpedr(np.asarray(X) @ Ud, y, d=default_d(d_hat), L=first.L, M=10 * d_hat, dist=first.dist,
                   base=first.base, rng=rng)
    return DoubleFit(B=Ud @ second.U[:, :d0], d_hat=d_hat, second=second)
