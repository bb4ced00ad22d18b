"""Classical sufficient-dimension-reduction baselines, in numpy: SIR, SAVE, pHd, DR and OPG.

Every method standardises X (``Z = (X - mean) Sigma^{-1/2}``), builds its p x p candidate matrix in the Z scale,
takes the top ``d0`` eigenvectors ``eta`` and returns the directions in the original X scale,
``B = Sigma^{-1/2} eta`` (p x d0). Slicing methods use ``n_slices`` slices of (nearly) equal counts of the sorted
response, as the R package ``dr`` does.

- SIR (Li 1991): ``sum_h p_h m_h m_h^T`` with ``m_h`` the slice means of Z.
- SAVE (Cook & Weisberg 1991): ``sum_h p_h (I - V_h)^2`` with ``V_h`` the slice covariances.
- pHd, residual-based (Li 1992; Cook 1998): ``E[e Z Z^T]`` with ``e`` the OLS residual; eigenvectors ordered by
  the absolute eigenvalue.
- DR, directional regression (Li & Wang 2007):
  ``2 sum_h p_h S_h^2 + 2 (sum_h p_h m_h m_h^T)^2 + 2 (sum_h p_h m_h^T m_h)(sum_h p_h m_h m_h^T) - 2 I`` with
  ``S_h = E[Z Z^T | h]``.
- OPG, the outer product of gradients (Xia et al. 2002), MAVE's initialiser: a local linear fit at every point
  with Gaussian weights of bandwidth ``h`` gives a gradient ``b_j``; the candidate matrix is ``(1/n) sum_j b_j b_j^T``.
"""
from __future__ import annotations

import numpy as np

METHODS = ("SIR", "SAVE", "pHd", "DR", "OPG")


def standardise(X: np.ndarray):
    """``(Z, Sigma^{-1/2})`` with ``Z = (X - mean) Sigma^{-1/2}``; refuses a singular covariance."""
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    if n <= p:
        raise ValueError(f"the SIR family needs more rows than columns; got n={n}, p={p}")
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / n
    w, V = np.linalg.eigh(S)
    if w[0] <= 1e-10 * max(w[-1], 1e-300):
        raise ValueError("the covariance of X is singular (a constant or collinear column): drop it first")
    root_inv = (V / np.sqrt(w)) @ V.T
    return Xc @ root_inv, root_inv


def slices(y: np.ndarray, n_slices: int = 10) -> list[np.ndarray]:
    """Indices of ``n_slices`` groups of (nearly) equal size along the sorted response."""
    order = np.argsort(np.asarray(y), kind="stable")
    return [s for s in np.array_split(order, min(n_slices, len(order))) if len(s)]


def _top(K: np.ndarray, d0: int, by_abs: bool = False) -> np.ndarray:
    w, V = np.linalg.eigh((K + K.T) / 2)
    order = np.argsort(np.abs(w) if by_abs else w)[::-1]
    return V[:, order[:d0]]


def _slice_moments(Z, y, n_slices):
    n = Z.shape[0]
    out = []
    for s in slices(y, n_slices):
        Zs = Z[s]
        m = Zs.mean(axis=0)
        out.append((len(s) / n, m, (Zs - m).T @ (Zs - m) / len(s)))
    return out


def sir_matrix(Z, y, n_slices=10):
    return sum(ph * np.outer(m, m) for ph, m, _ in _slice_moments(Z, y, n_slices))


def save_matrix(Z, y, n_slices=10):
    I = np.eye(Z.shape[1])
    return sum(ph * (I - V) @ (I - V) for ph, _, V in _slice_moments(Z, y, n_slices))


def phd_matrix(Z, y):
    yc = np.asarray(y, dtype=float) - np.mean(y)
    beta = np.linalg.lstsq(Z, yc, rcond=None)[0]
    e = yc - Z @ beta
    return (Z * e[:, None]).T @ Z / Z.shape[0]


def dr_matrix(Z, y, n_slices=10):
    p = Z.shape[1]
    mom = _slice_moments(Z, y, n_slices)
    A = sum(ph * (V + np.outer(m, m)) @ (V + np.outer(m, m)) for ph, m, V in mom)
    Bm = sum(ph * np.outer(m, m) for ph, m, _ in mom)
    c = sum(ph * float(m @ m) for ph, m, _ in mom)
    return 2 * A + 2 * Bm @ Bm + 2 * c * Bm - 2 * np.eye(p)


def opg_matrix(Z, y, h: float, ridge: float = 1e-3):
    """``(1/n) sum_j b_j b_j^T`` from local linear fits with weights ``exp(-|z_i - z_j|^2 / (2 h^2))``.

    The local normal equations are assembled from weighted moments (one BLAS product each), so no n x n x p array
    is formed. ``ridge`` (relative to the local weight sum) keeps a fit with few effective neighbours solvable.
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = Z.shape
    sq = np.sum(Z ** 2, axis=1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0.0)
    W = np.exp(-D2 / (2 * h * h))  # W[j, i]: weight of point i in the fit at point j (symmetric)
    S0 = W.sum(axis=1)  # (n,)
    S1 = W @ Z  # (n, p)
    S2 = (W @ (Z[:, :, None] * Z[:, None, :]).reshape(n, p * p)).reshape(n, p, p)
    T0 = W @ y
    T1 = W @ (Z * y[:, None])
    # design [1, z_i - z_j]: blocks of sum_i w_ij [1, u][1, u]^T and sum_i w_ij y_i [1, u] with u = z_i - z_j
    Su = S1 - S0[:, None] * Z
    Suu = (S2 - S1[:, :, None] * Z[:, None, :] - Z[:, :, None] * S1[:, None, :]
           + S0[:, None, None] * Z[:, :, None] * Z[:, None, :])
    G = np.empty((n, p + 1, p + 1))
    G[:, 0, 0] = S0
    G[:, 0, 1:] = Su
    G[:, 1:, 0] = Su
    G[:, 1:, 1:] = Suu + ridge * S0[:, None, None] * np.eye(p)
    rhs = np.concatenate([T0[:, None], T1 - T0[:, None] * Z], axis=1)
    b = np.linalg.solve(G, rhs[..., None])[:, 1:, 0]  # (n, p) local gradients
    return b.T @ b / n


def median_distance(Z: np.ndarray) -> float:
    sq = np.sum(Z ** 2, axis=1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0.0)
    return float(np.sqrt(np.median(D2[np.triu_indices(len(Z), 1)])))


def sdr(method: str, X: np.ndarray, y: np.ndarray, d0: int, n_slices: int = 10, opg_scale: float = 0.5) -> np.ndarray:
    """Directions (p x d0) of one baseline. ``opg_scale``: OPG's bandwidth as a multiple of the median pairwise
    distance of the standardised X."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}; allowed: one of {', '.join(METHODS)}")
    Z, root_inv = standardise(X)
    if method == "SIR":
        eta = _top(sir_matrix(Z, y, n_slices), d0)
    elif method == "SAVE":
        eta = _top(save_matrix(Z, y, n_slices), d0)
    elif method == "pHd":
        eta = _top(phd_matrix(Z, y), d0, by_abs=True)
    elif method == "DR":
        eta = _top(dr_matrix(Z, y, n_slices), d0)
    else:
        eta = _top(opg_matrix(Z, y, h=opg_scale * median_distance(Z)), d0)
    return root_inv @ eta


def sir(X, y, d0, n_slices=10):
    return sdr("SIR", X, y, d0, n_slices)


def save(X, y, d0, n_slices=10):
    return sdr("SAVE", X, y, d0, n_slices)


def phd(X, y, d0, n_slices=10):
    return sdr("pHd", X, y, d0, n_slices)


def dr(X, y, d0, n_slices=10):
    return sdr("DR", X, y, d0, n_slices)


def opg(X, y, d0, n_slices=10, opg_scale=0.5):
    return sdr("OPG", X, y, d0, n_slices, opg_scale)
