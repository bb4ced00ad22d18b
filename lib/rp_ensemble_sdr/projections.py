"""Random projections of RPEDR: M blocks of p x d matrices with unit-norm columns.

``dist`` follows the authors' ``generate_random_matrix``:

- ``"norm"``: every entry N(0, 1);
- ``"cauchy"``: every entry standard Cauchy (t with one degree of freedom);
- ``"mixed"``: each *block* (one p x d projection) is wholly Gaussian with probability 1/2, else wholly Cauchy.

Every column is then scaled to unit Euclidean norm. Columns are **not** orthogonalised, so ``A @ A.T`` is not an
orthogonal projector (its trace is d).
"""
from __future__ import annotations

import numpy as np

DISTS = ("mixed", "norm", "cauchy")


def draw_projections(p: int, d: int, M: int, dist: str = "mixed", rng: np.random.Generator | None = None,
                     return_kind: bool = False):
    """``M`` random projections as an array of shape ``(M, p, d)`` with unit-norm columns.

    ``return_kind``: also return a boolean array ``(M,)``, True where the block was drawn Gaussian.
    """
    if dist not in DISTS:
        raise ValueError(f"parameter 'dist' got {dist!r}; allowed: one of {', '.join(map(repr, DISTS))}")
    rng = rng if rng is not None else np.random.default_rng(0)
    if dist == "norm":
        gauss = np.ones(M, dtype=bool)
        A = rng.standard_normal((M, p, d))
    elif dist == "cauchy":
        gauss = np.zeros(M, dtype=bool)
        A = rng.standard_cauchy((M, p, d))
    else:
        gauss = rng.random(M) > 0.5
        A = np.where(gauss[:, None, None], rng.standard_normal((M, p, d)), rng.standard_cauchy((M, p, d)))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    return (A, gauss) if return_kind else A
