"""Distance between subspaces: the Frobenius norm of the difference of orthogonal projectors."""
from __future__ import annotations

import numpy as np


def projector(B: np.ndarray) -> np.ndarray:
    """Orthogonal projector onto span(B) (B of shape (p, k), full column rank), via a thin QR."""
    B = np.asarray(B, dtype=float)
    if B.ndim == 1:
        B = B[:, None]
    Q, _ = np.linalg.qr(B)
    return Q @ Q.T


def subspace_dist(B0: np.ndarray, B: np.ndarray) -> float:
    """``||P_B - P_B0||_F`` (unscaled; 0 for equal spans, at most sqrt(2 k) for k-dimensional spans)."""
    return float(np.linalg.norm(projector(B) - projector(B0), "fro"))
