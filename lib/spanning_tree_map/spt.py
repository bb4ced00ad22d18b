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
``report="best"`` (the default, like every solver here) returns the lowest-energy labelling decoded over the
iterations; ``report="last_sample"`` returns the labelling sampled at the last iteration, which is what the released
``new_SPT_infer`` returns (``X = gibs_sampling(...)`` after the loop).

:data:`RELEASED_RULE` is the rule the released code runs: sum-product, mean merge, no 1/rho_e correction (the
weight is stored but unused), node factors replaced by the merged marginals, last sampled labelling returned.
"""
from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp

from .baselines import _finite_unary
from .model import PairwiseMRF
from .result import BestTracker, SolveResult
from .trees import Forest, ForestUnion, edge_appearance, sample_trees

MODES = ("minsum", "sumprod")
MERGES = ("mean", "product")
DECODES = ("argmax", "sample")
REPORTS = ("best", "last_sample")
RELEASED_RULE = dict(mode="sumprod", merge="mean", reweight=False, decode="sample", report="last_sample")  # beta = 1


def _sample(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    c = np.cumsum(p, axis=1)
    u = rng.random(len(p))[:, None] * c[:, -1:]
    return np.minimum((c < u).sum(axis=1), p.shape[1] - 1)


def _check(mode, merge, decode, report, n_trees, n_iters):
    if mode not in MODES:
        raise ValueError(f"parameter 'mode' got {mode!r}; allowed: {', '.join(map(repr, MODES))}")
    if merge not in MERGES:
        raise ValueError(f"parameter 'merge' got {merge!r}; allowed: {', '.join(map(repr, MERGES))}")
    if mode == "minsum" and merge != "mean":
        raise ValueError("parameter 'merge' must be 'mean' with mode='minsum' (min-marginals are averaged); "
                         "'product' is the sum-product variant's alternative")
    if decode not in DECODES:
        raise ValueError(f"parameter 'decode' got {decode!r}; allowed: {', '.join(map(repr, DECODES))}")
    if report not in REPORTS:
        raise ValueError(f"parameter 'report' got {report!r}; allowed: {', '.join(map(repr, REPORTS))}")
    if report == "last_sample" and decode != "sample":
        raise ValueError("parameter 'report' = 'last_sample' needs decode='sample'")
    if n_trees < 1 or n_iters < 1:
        raise ValueError("parameters 'n_trees' and 'n_iters' must be >= 1")


def spt_map(mrf: PairwiseMRF, n_trees: int = 10, n_iters: int = 10, reweight: bool = True, mode: str = "minsum",
            merge: str = "mean", beta: float = 1.0, damping: float = 0.5, decode: str = "argmax",
            rng: np.random.Generator | None = None, trees: list[np.ndarray] | None = None,
            rho: np.ndarray | None = None, name: str | None = None, report: str = "best",
            recenter: bool = True) -> SolveResult:
    """Run SPT; returns the lowest-energy labelling decoded over the iterations, or with ``report="last_sample"``
    the labelling sampled at the last iteration (see the module docstring).

    ``trees`` (parent arrays) and ``rho`` may be passed in to share them between variants; otherwise they are
    sampled with ``rng`` and computed here (that time is included in the result's ``times``). ``recenter=False``:
    the trees are already rooted at their centres (:func:`trees.centered_trees`).
    """
    return spt_map_many([mrf], n_trees=n_trees, n_iters=n_iters, reweight=reweight, mode=mode, merge=merge,
                        beta=beta, damping=damping, decode=decode, rngs=[rng], trees=[trees], rhos=[rho], name=name,
                        report=report, recenter=recenter)[0]


def spt_map_many(mrfs: list[PairwiseMRF], n_trees: int = 10, n_iters: int = 10, reweight: bool = True,
                 mode: str = "minsum", merge: str = "mean", beta: float = 1.0, damping: float = 0.5,
                 decode: str = "argmax", rngs=None, trees=None, rhos=None, name: str | None = None,
                 report: str = "best", recenter: bool = True) -> list[SolveResult]:
    """:func:`spt_map` on several instances at once, with the same settings: one batched exact pass per iteration
    over the trees of every instance (:class:`trees.ForestUnion`; fewer, larger numpy calls), the rest per
    instance. Each instance's numbers are those of its own :func:`spt_map` run (same rows, same order of
    operations, its own ``rngs[i]``). The times are the batch's elapsed time divided by the number of instances
    (the amortised cost per instance)."""
    _check(mode, merge, decode, report, n_trees, n_iters)
    I = len(mrfs)
    rngs = list(rngs) if rngs is not None else [None] * I
    rngs = [r if r is not None else np.random.default_rng(0) for r in rngs]
    trees = list(trees) if trees is not None else [None] * I
    rhos = list(rhos) if rhos is not None else [None] * I
    t0 = time.perf_counter()
    forests = []
    for i, mrf in enumerate(mrfs):
        if reweight and rhos[i] is None:
            rhos[i] = edge_appearance(mrf, rngs[i])
        if trees[i] is None:
            trees[i] = sample_trees(mrf, n_trees, rngs[i])
        trees[i] = list(trees[i])[:n_trees]
        forests.append(Forest(mrf, trees[i], edge_scale=(1.0 / rhos[i]) if reweight else None, recenter=recenter))
    union = ForestUnion(forests)
    thetas = [_finite_unary(m) for m in mrfs]
    valids = [m.label_mask for m in mrfs]
    trs = [BestTracker(m, t0, time_scale=1.0 / I) for m in mrfs]
    us = [th.copy() for th in thetas]
    xs = [None] * I
    for _ in range(n_iters):
        Ms = union.marginals(us, "min" if mode == "minsum" else "soft", beta)
        for i in range(I):
            M, valid, theta, T = Ms[i], valids[i], thetas[i], forests[i].T
            if mode == "minsum":
                M -= M.min(axis=2, keepdims=True)
                Mbar = np.where(valid, M.mean(axis=0), np.inf)
                x = Mbar.argmin(axis=1)
                logp = np.where(valid, -beta * Mbar, -np.inf)
                us[i] = theta + damping * np.where(valid, Mbar, 0.0)
            else:
                logmu = -beta * M
                logmu -= logsumexp(logmu, axis=2, keepdims=True)
                if merge == "mean":
                    logbar = logsumexp(logmu, axis=0) - np.log(T)
                else:
                    logbar = logmu.sum(axis=0)
                    logbar -= logsumexp(logbar, axis=1, keepdims=True)
                logbar = np.where(valid, np.maximum(logbar, -700.0), -np.inf)
                x = logbar.argmax(axis=1)
                logp = logbar
                us[i] = np.where(valid, -logbar / beta, theta)  # the merged marginals become every tree's node factor
            if decode == "sample":
                xs[i] = _sample(logp, rngs[i])
                if report == "last_sample":  # the trace follows the samples, the labelling the code would return
                    trs[i].step(xs[i], x)
                else:
                    trs[i].step(x, xs[i])
            else:
                trs[i].step(x)
    label = name or ("SPT" if mode == "minsum" else "SPT-sumprod") + ("" if reweight else "-noRW")
    out = []
    for i, mrf in enumerate(mrfs):
        res = trs[i].result(label, n_trees=len(trees[i]), n_iters=n_iters, reweight=reweight, mode=mode, merge=merge,
                            beta=beta, damping=damping, decode=decode, report=report, batch=I)
        if report == "last_sample":
            res.x, res.energy = xs[i].copy(), float(mrf.energy(xs[i]))
        out.append(res)
    return out
