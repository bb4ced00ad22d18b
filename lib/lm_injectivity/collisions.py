"""Collision tests: pairwise distances between last-token states, the exhaustive continuation test, and the
negative controls (tied embeddings, quantized states) that must collide.

A *collision* is a pair of distinct prompts whose states are closer than ``COLLISION_THRESHOLD`` = 1e-6 in
L2 (the paper's threshold).

Distances are computed blockwise. The bulk (mean, median, max) uses the Gram-matrix identity
‖x−y‖² = ‖x‖² + ‖y‖² − 2⟨x,y⟩ on centred vectors; small distances suffer cancellation there, so every point's
``refine_k`` nearest candidates are recomputed exactly as ‖x−y‖ in float64, and the minimum and the
nearest-neighbour distances come from those exact values.
"""
from __future__ import annotations

import copy
import math
from typing import Optional, Sequence

import numpy as np
import torch

from .states import embedding_matrix, one_step_states

COLLISION_THRESHOLD = 1e-6


def _row_smallest(D: torch.Tensor, k: int, *, restore: bool) -> tuple:
    """The ``k`` smallest entries of each row of ``D`` and their column indices (ascending), by ``k`` passes of
    ``min`` (much faster than ``topk`` for k = 1, 2 on a CPU). The entries found are set to +inf in between and
    put back afterwards when ``restore``."""
    rows = torch.arange(D.shape[0], device=D.device)
    vals, idx = [], []
    for r in range(k):
        v, i = D.min(1)
        vals.append(v)
        idx.append(i)
        if r + 1 < k:
            D[rows, i] = math.inf
    if restore and k > 1:
        for v, i in zip(vals[:-1], idx[:-1]):
            D[rows, i] = v
    return torch.stack(vals, 1), torch.stack(idx, 1)


def pair_distance_stats(
    X: torch.Tensor,
    *,
    chunk: int = 1024,
    refine_k: int = 2,
    threshold: float = COLLISION_THRESHOLD,
    exact_median_max_pairs: int = 5_000_000,
    median_sample: int = 500_000,
    seed: int = 0,
) -> dict:
    """Statistics of all N(N−1)/2 pairwise L2 distances of the rows of ``X`` (``[N, d]``).

    Returns ``min`` (exact), ``argmin`` (i, j), ``mean`` and ``max`` (over all pairs), ``median`` (exact up
    to ``exact_median_max_pairs`` pairs, else from ``median_sample`` random pairs, flagged by
    ``median_sampled``), ``nn`` (each row's exact nearest-neighbour distance, a float64 numpy array),
    ``n_below`` (pairs found with exact distance < ``threshold``) and ``n_pairs``.

    The pairs are visited in ``chunk`` × ``chunk`` blocks of the upper triangle (small enough to stay in the CPU
    cache); block sums add row sums (in the block's precision) in float64; each block's ``refine_k`` nearest candidates per row and per column are kept and merged once at the end.
    """
    X = X.detach()
    N = X.shape[0]
    if N < 2:
        raise ValueError("pair_distance_stats needs at least two points")
    work = torch.float64 if X.dtype == torch.float64 else torch.float32
    X64 = X.to(torch.float64)
    Xc = (X64 - X64.mean(0, keepdim=True)).to(work)
    sq = (Xc * Xc).sum(1)
    k = max(1, min(refine_k, N - 1))
    n_pairs = N * (N - 1) // 2
    keep_all = n_pairs <= exact_median_max_pairs
    kept, total, dmax = [], 0.0, 0.0
    starts = list(range(0, N, chunk))
    cand_v = [[] for _ in starts]  # per row block: the nearest candidates of its rows in each column block
    cand_i = [[] for _ in starts]

    def top(D2, offset, rows_of, restore):
        vals, idx = _row_smallest(D2, min(k, D2.shape[1]), restore=restore)
        cand_v[rows_of].append(vals)
        cand_i[rows_of].append(idx + offset)

    for ia, a in enumerate(starts):
        ra = slice(a, min(a + chunk, N))
        for ib in range(ia, len(starts)):  # the upper triangle of blocks covers every pair once
            b = starts[ib]
            rb = slice(b, min(b + chunk, N))
            # ‖x‖² + ‖y‖² − 2⟨x, y⟩ on centred vectors (approximate for tiny distances: refined below)
            D2 = torch.addmm(sq[None, rb], Xc[ra], Xc[rb].T, beta=1.0, alpha=-2.0).add_(sq[ra, None]).clamp_min_(0.0)
            if ia == ib:
                D2.fill_diagonal_(math.inf)
            top(D2, b, ia, restore=True)  # nearest candidates of the block's rows ...
            if ia != ib:
                top(D2.T.contiguous(), a, ib, restore=False)  # ... and of its columns
            D = D2.sqrt_()
            if ia == ib:  # a symmetric block: every pair twice, and the diagonal (set to 0 here)
                D.fill_diagonal_(0.0)
                total += 0.5 * float(D.sum(1).sum(dtype=torch.float64))
                if keep_all:
                    iu = torch.triu_indices(D.shape[0], D.shape[1], offset=1)
                    kept.append(D[iu[0], iu[1]].float())
            else:
                total += float(D.sum(1).sum(dtype=torch.float64))
                if keep_all:
                    kept.append(D.reshape(-1).float())
            dmax = max(dmax, float(D.max()))
    # merge each row's candidates from every block, then refine them exactly
    best_i = torch.cat([torch.gather(torch.cat(ci, 1), 1, torch.topk(torch.cat(cv, 1), k, dim=1, largest=False).indices)
                        for cv, ci in zip(cand_v, cand_i)])
    cand = best_i
    exact = torch.linalg.vector_norm(X64[:, None, :] - X64[cand], dim=-1)
    nn, pos = exact.min(1)
    i_min = int(torch.argmin(nn))
    j_min = int(cand[i_min, pos[i_min]])
    below = set()
    for r, c in torch.nonzero(exact < threshold).tolist():
        j = int(cand[r, c])
        below.add((min(r, j), max(r, j)))
    if keep_all:
        median, sampled = float(torch.cat(kept).median()), False
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, N, median_sample)
        j = (i + rng.integers(1, N, median_sample)) % N
        Xn, step = X64.cpu().numpy(), 4096  # gathered in cache-sized slices: no [median_sample, d] float64 copies
        d = np.concatenate([np.linalg.norm(np.take(Xn, i[s:s + step], axis=0) - np.take(Xn, j[s:s + step], axis=0),
                                           axis=1) for s in range(0, median_sample, step)])
        median, sampled = float(np.median(d)), True
    return {
        "min": float(nn[i_min]),
        "argmin": (min(i_min, j_min), max(i_min, j_min)),
        "mean": total / n_pairs,
        "median": median,
        "median_sampled": sampled,
        "max": dmax,
        "nn": nn.cpu().numpy(),
        "n_below": len(below),
        "n_pairs": n_pairs,
    }


def exhaustive_continuation_states(model, base_prompts: Sequence[Sequence[int]], layer: int, *,
                                   vocab: Optional[Sequence[int]] = None, batch_size: int = 512) -> torch.Tensor:
    """States h(p ⊕ v) at ``layer`` for every base prompt p and every token v: ``[len(base)·|V|, d]``."""
    V = embedding_matrix(model).shape[0]
    vocab = torch.arange(V) if vocab is None else torch.as_tensor(vocab, dtype=torch.long)
    out = [one_step_states(model, p, vocab, layer, batch_size=batch_size) for p in base_prompts]
    return torch.cat(out)


def quantize(X: torch.Tensor, bits: int, lo: Optional[float] = None, hi: Optional[float] = None) -> torch.Tensor:
    """Uniform ``bits``-bit quantization of every coordinate over ``[lo, hi]`` (default: X's range):
    the integer codes 0 .. 2^bits − 1 (a non-analytic, many-to-one map)."""
    if not 1 <= int(bits) <= 32:
        raise ValueError(f"parameter 'bits' got {bits!r}; allowed: an integer in 1..32")
    X = X.detach().to(torch.float64)
    lo = float(X.min()) if lo is None else float(lo)
    hi = float(X.max()) if hi is None else float(hi)
    levels = 2 ** int(bits) - 1
    scale = (hi - lo) if hi > lo else 1.0
    return torch.round((X.clamp(lo, hi) - lo) / scale * levels).to(torch.int64)


def count_identical_pairs(codes: torch.Tensor) -> int:
    """Number of pairs of rows that are exactly equal (collisions of a discrete code)."""
    _, counts = torch.unique(codes, dim=0, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def tie_embeddings(model, v1: int, v2: int):
    """A copy of ``model`` whose token v2 has exactly the embedding row of v1 (E[v2] = E[v1]).

    Prompts that differ only by v1 ↔ v2 then have identical inputs, hence identical states: the paper's
    engineered failure case of injectivity.
    """
    tied = copy.deepcopy(model)
    with torch.no_grad():
        E = embedding_matrix(tied)
        E[int(v2)] = E[int(v1)]
    return tied
