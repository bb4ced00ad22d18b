"""Concept extraction: the paper's method (clustering activation differences weighted by inverse skewness) and
its baselines, all returning a :class:`Concepts` (a ``k x D`` direction matrix and an encoder).

Paper's method (``diff_concepts``), for activations ``A`` (N x D):

1. a random permutation ``q``: ``d_i = a_i - a_{q(i)}`` (each sample once on each side);
2. skewness of the projections of all activations on ``d_i``: ``p_ij = d_i . a_j``,
   ``skew_i = mean_j ((p_ij - mean_j p_ij) / std_j p_ij)^3`` (population std, + 1e-20);
3. sign flip ``d_i <- sign(skew_i) d_i`` (afterwards every skew is >= 0);
4. weights ``w_i = 1 / |skew_i|`` (nan / inf -> 0);
5. weighted K-means (scikit-learn ``KMeans(...).fit(D, sample_weight=w)``), concepts = centroids (unnormalised);
6. encoding ``Z = A C^T``; steering ``x + alpha c``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from lib.common import limit_threads


@dataclass
class Concepts:
    name: str
    C: np.ndarray  # [k, D] concept directions (what steering adds; effective rank is taken of it)
    encode: Callable  # A [n, D] -> Z [n, k]
    info: dict


def _linear(C):
    return lambda A: np.asarray(A, dtype=np.float64) @ C.T


# ---------------------------------------------------------------- the paper's method
def projection_skewness(Dm: np.ndarray, A: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Skewness, over the activations ``A``, of their projections on each row of ``Dm`` (population moments)."""
    out = np.empty(len(Dm))
    for s in range(0, len(Dm), chunk):
        P = Dm[s:s + chunk] @ A.T  # [chunk, N]
        mu = P.mean(axis=1, keepdims=True)
        c = P - mu
        sd = np.sqrt((c ** 2).mean(axis=1, keepdims=True))
        out[s:s + chunk] = ((c / (sd + 1e-20)) ** 3).mean(axis=1)
    return out


def signed_differences(A: np.ndarray, rng: np.random.Generator):
    """Steps 1-4: differences over a random permutation, sign-flipped to positive skew, and their weights."""
    A = np.asarray(A, dtype=np.float64)
    q = rng.permutation(len(A))
    Dm = A - A[q]
    skew = projection_skewness(Dm, A)
    sign = np.where(skew < 0, -1.0, 1.0)
    Dm = Dm * sign[:, None]
    skew = skew * sign
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 1.0 / np.abs(skew)
    w[~np.isfinite(w)] = 0.0
    return Dm, skew, w


def _kmeans(X, k, w, seed, n_init):
    from sklearn.cluster import KMeans

    if w is not None and not np.any(w > 0):
        w = None
    km = KMeans(n_clusters=int(k), n_init=n_init, random_state=int(seed))
    with limit_threads(1):
        km.fit(X, sample_weight=w)
    return km.cluster_centers_


def diff_concepts(A, k, *, seed: int = 0, weighted: bool = True, n_init: int = 1) -> Concepts:
    """The paper's concepts: weighted K-means centroids of sign-flipped differences (``weighted=False``: the
    unweighted ablation)."""
    rng = np.random.default_rng(seed)
    Dm, skew, w = signed_differences(A, rng)
    C = _kmeans(Dm, k, w if weighted else None, seed, n_init)
    name = "ours (diffs+skew)" if weighted else "diffs+KMeans"
    return Concepts(name, C, _linear(C), {"skew": skew, "weights": w})


def kmeans_concepts(A, k, *, seed: int = 0, n_init: int = 1) -> Concepts:
    """Ablation: K-means on the activations themselves (centroids as concepts, encoding A C^T)."""
    C = _kmeans(np.asarray(A, dtype=np.float64), k, None, seed, n_init)
    return Concepts("acts+KMeans", C, _linear(C), {})


# ---------------------------------------------------------------- linear baselines
def pca_concepts(A, k, *, seed: int = 0) -> Concepts:
    from sklearn.decomposition import PCA

    k = min(int(k), A.shape[1], len(A))
    with limit_threads(1):
        pca = PCA(n_components=k, random_state=int(seed)).fit(A)
    C = pca.components_
    return Concepts("PCA", C, _linear(C), {"k_used": k})


def ica_concepts(A, k, *, seed: int = 0, max_iter: int = 200) -> Concepts:
    """FastICA sources (at most D of them: ICA cannot give more components than dimensions)."""
    import warnings

    from sklearn.decomposition import FastICA

    k = min(int(k), A.shape[1])
    ica = FastICA(n_components=k, random_state=int(seed), max_iter=max_iter, whiten="unit-variance")
    with limit_threads(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ica.fit(A)
    W, mean = ica.components_, ica.mean_
    return Concepts("FastICA", W, lambda X: (np.asarray(X) - mean) @ W.T, {"k_used": k})


def random_concepts(A, k, *, seed: int = 0) -> Concepts:
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((int(k), A.shape[1]))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    return Concepts("random", C, _linear(C), {})


def lda_directions(A, Y: np.ndarray, *, ridge: float = 1e-2) -> Concepts:
    """Supervised reference: one Fisher direction per binary label (one-vs-rest),
    ``w = (S_pos + S_neg + ridge * tr(S)/D I)^{-1} (mu_pos - mu_neg)``."""
    A = np.asarray(A, dtype=np.float64)
    rows = []
    D = A.shape[1]
    for j in range(Y.shape[1]):
        pos, neg = A[Y[:, j] == 1], A[Y[:, j] == 0]
        if len(pos) == 0 or len(neg) == 0:  # a label without positives (tiny user files): no direction
            rows.append(np.zeros(D))
            continue
        S = sum(np.cov(g, rowvar=False) for g in (pos, neg) if len(g) > 1) + np.zeros((D, D))
        S = S + ridge * max(np.trace(S) / D, 1e-12) * np.eye(D)
        rows.append(np.linalg.solve(S, pos.mean(0) - neg.mean(0)))
    C = np.array(rows)
    return Concepts("LDA (supervised)", C, _linear(C), {})


# ---------------------------------------------------------------- sparse autoencoders
def train_sae(A, k, *, kind: str = "topk", topk: int = 8, l1: float = 1e-3, steps: int = 300, lr: float = 1e-3,
              batch_size: int = 256, aux_coef: float = 1 / 32, dead_after: int = 100, seed: int = 0,
              on_diffs: bool = False) -> Concepts:
    """A TopK SAE (``z = TopK(ReLU(W_e (x - b_d) + b_e))``, AuxK loss on dead latents) or a vanilla ReLU SAE with an
    L1 penalty; decoder rows kept at unit norm; Adam, ``steps`` minibatches. Inputs are centred and scaled to unit
    mean squared norm. The concepts are the decoder rows; the encoding is the SAE's latent code.
    ``on_diffs``: train on sign-free activation differences instead (the paper's diffs+TopK-SAE ablation)."""
    import torch

    from lib.common.optim import Adam

    X = np.asarray(A, dtype=np.float64)
    rng = np.random.default_rng(seed)
    if on_diffs:
        X = X - X[rng.permutation(len(X))]
    mu = X.mean(0)
    scale = float(np.sqrt(((X - mu) ** 2).sum(1).mean())) + 1e-12
    Xt = torch.as_tensor((X - mu) / scale, dtype=torch.float32)
    n, D = Xt.shape
    g = torch.Generator().manual_seed(int(seed))
    W_dec = torch.randn(int(k), D, generator=g)
    W_dec = W_dec / W_dec.norm(dim=1, keepdim=True)
    W_enc = W_dec.T.clone().requires_grad_(True)
    W_dec.requires_grad_(True)
    b_enc = torch.zeros(int(k), requires_grad=True)
    b_dec = torch.zeros(D, requires_grad=True)
    opt = Adam([W_enc, W_dec, b_enc, b_dec], lr=lr)
    last_fired = torch.zeros(int(k))
    topk = min(int(topk), int(k))
    k_aux = min(2 * topk, int(k))

    def codes(x):
        pre = torch.relu((x - b_dec) @ W_enc + b_enc)
        if kind == "topk":  # keep the topk largest per row (ties at the k-th value are kept too)
            kth = pre.detach().topk(topk, dim=1).values[:, -1:]
            return pre * (pre >= kth).to(pre.dtype), pre
        return pre, pre

    with limit_threads(1):
        for step in range(int(steps)):
            idx = torch.randint(0, n, (batch_size,), generator=g)
            x = Xt[idx]
            z, pre = codes(x)
            xh = z @ W_dec + b_dec
            loss = ((xh - x) ** 2).sum(1).mean()
            fired = (z > 0).any(0)
            last_fired = torch.where(fired, torch.zeros_like(last_fired), last_fired + 1)
            if kind == "topk":
                dead = last_fired > dead_after
                if dead.any():
                    pre_dead = pre * dead.to(pre.dtype)
                    kth = pre_dead.detach().topk(min(k_aux, int(dead.sum())), dim=1).values[:, -1:]
                    za = pre_dead * ((pre_dead >= kth) & (pre_dead > 0)).to(pre.dtype)
                    resid = (x - xh).detach()
                    loss = loss + aux_coef * ((za @ W_dec - resid) ** 2).sum(1).mean()
            else:
                loss = loss + l1 * z.abs().sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                W_dec /= W_dec.norm(dim=1, keepdim=True) + 1e-12
        W_e, b_e, b_d, Wd = (t.detach() for t in (W_enc, b_enc, b_dec, W_dec))
    C = Wd.double().numpy()

    def encode(Anew):
        x = torch.as_tensor((np.asarray(Anew, dtype=np.float64) - mu) / scale, dtype=torch.float32)
        with torch.no_grad(), limit_threads(1):
            pre = torch.relu((x - b_d) @ W_e + b_e)
            if kind == "topk":
                kth = pre.topk(topk, dim=1).values[:, -1:]
                pre = pre * (pre >= kth).to(pre.dtype)
        return pre.double().numpy()

    with torch.no_grad():
        z, _ = codes(Xt)
        mse = float(((z @ W_dec + b_dec - Xt) ** 2).sum(1).mean())
    name = ("TopK-SAE" if kind == "topk" else "Vanilla SAE") + (" on diffs" if on_diffs else "")
    return Concepts(name, C, encode, {"fvu": mse, "kind": kind, "topk": topk, "l1": l1, "lr": lr, "steps": steps})
