"""SPT: MAP inference by merging exact inference on uniform random spanning trees (the paper's method, reconstructed).

Step 0  rho_e = R_eff(e) = P_{T ~ UST}(e in T)                            (:func:`trees.effective_resistance`)
Step 1  sample T_1..T_T i.i.d. uniform spanning trees (Wilson's algorithm); the trees stay fixed afterwards
Step 2  tree k carries the node energies and its own edges, with theta_e / rho_e when ``reweight`` (so that
        E_{T ~ UST}[sum_{e in T} theta_e / rho_e] = sum_e theta_e); without ``reweight`` the raw theta_e
Step 3  exact inference on every tree (batched, :class:`trees.Forest`)
Step 4  merge the trees' node beliefs, decode, keep the lowest-energy labelling
Step 5  feed the merged beliefs back as the trees' node terms and repeat

Two variants of steps 3-5:
``mode="minsum"`` (the brief's guessed MAP variant, the default): min-marginals M^k_i, normalised to min 0, merged by
    their mean Mbar_i; decode x_i = argmin Mbar_i; next node energies u_i = theta_i + damping * Mbar_i.
``mode="sumprod"`` (what the authors' C++ code does): sum-product on potentials exp(-beta theta); marginals
    mu^k_i merged by their arithmetic mean (``merge="mean"``, the released code) or their normalised product
    (``merge="product"``, the code's older ``updating_marginals``); decode argmax; the merged marginals *replace*
    every tree's node factor for the next iteration (the code's ``update_factor_marginals``).
``decode="sample"`` additionally draws one labelling per iteration from the merged beliefs (the code's "gibbs").
"""
from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp

from .baselines import _finite_unary
from .model import PairwiseMRF
from .result import BestTracker, SolveResult
from .trees import Forest, edge_appearance, sample_trees

MODES = ("minsum", "sumprod")
MERGES = ("mean", "product")
DECODES = ("argmax", "sample")


def _sample(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    c = np.cumsum(p, axis=1)
    u = rng.random(len(p))[:, None] * c[:, -1:]
    return np.minimum((c < u).sum(axis=1), p.shape[1] - 1)


def spt_map(mrf: PairwiseMRF, n_trees: int = 10, n_iters: int = 10, reweight: bool = True, mode: str = "minsum",
            merge: str = "mean", beta: float = 1.0, damping: float = 0.5, decode: str = "argmax",
            rng: np.random.Generator | None = None, trees: list[np.ndarray] | None = None,
            rho: np.ndarray | None = None, name: str | None = None) -> SolveResult:
    """Run SPT; returns the lowest-energy labelling decoded over the iterations (see the module docstring).

    ``trees`` (parent arrays) and ``rho`` may be passed in to share them between variants; otherwise they are
    sampled with ``rng`` and computed here (that time is included in the result's ``times``).
    """
    if mode not in MODES:
        raise ValueError(f"parameter 'mode' got {mode!r}; allowed: {', '.join(map(repr, MODES))}")
    if merge not in MERGES:
        raise ValueError(f"parameter 'merge' got {merge!r}; allowed: {', '.join(map(repr, MERGES))}")
    if mode == "minsum" and merge != "mean":
        raise ValueError("parameter 'merge' must be 'mean' with mode='minsum' (min-marginals are averaged); "
                         "'product' is the sum-product variant's alternative")
    if decode not in DECODES:
        raise ValueError(f"parameter 'decode' got {decode!r}; allowed: {', '.join(map(repr, DECODES))}")
    if n_trees < 1 or n_iters < 1:
        raise ValueError("parameters 'n_trees' and 'n_iters' must be >= 1")
    rng = rng if rng is not None else np.random.default_rng(0)
    t0 = time.perf_counter()
    if reweight and rho is None:
        rho = edge_appearance(mrf, rng)
    if trees is None:
        trees = sample_trees(mrf, n_trees, rng)
    trees = list(trees)[:n_trees]
    forest = Forest(mrf, trees, edge_scale=(1.0 / rho) if reweight else None)
    theta = _finite_unary(mrf)
    valid = mrf.label_mask
    tr = BestTracker(mrf, t0)
    u = theta.copy()
    for _ in range(n_iters):
        if mode == "minsum":
            M = forest.marginals(u, "min")
            M -= M.min(axis=2, keepdims=True)
            Mbar = np.where(valid, M.mean(axis=0), np.inf)
            x = Mbar.argmin(axis=1)
            logp = np.where(valid, -beta * Mbar, -np.inf)
            u = theta + damping * np.where(valid, Mbar, 0.0)
        else:
            M = forest.marginals(u, "soft", beta)
            logmu = -beta * M
            logmu -= logsumexp(logmu, axis=2, keepdims=True)
            if merge == "mean":
                logbar = logsumexp(logmu, axis=0) - np.log(forest.T)
            else:
                logbar = logmu.sum(axis=0)
                logbar -= logsumexp(logbar, axis=1, keepdims=True)
            logbar = np.where(valid, np.maximum(logbar, -700.0), -np.inf)
            x = logbar.argmax(axis=1)
            logp = logbar
            u = np.where(valid, -logbar / beta, theta)  # the merged marginals become every tree's node factor
        if decode == "sample":
            tr.step(x, _sample(logp, rng))
        else:
            tr.step(x)
    label = name or ("SPT" if mode == "minsum" else "SPT-sumprod") + ("" if reweight else "-noRW")
    return tr.result(label, n_trees=len(trees), n_iters=n_iters, reweight=reweight, mode=mode, merge=merge,
                     beta=beta, damping=damping, decode=decode)
