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
    """Skewness, over the activations ``A``, of their projections on each row of ``Dm`` (population moments).

    ``mean_j ((p_ij - pbar_i) / (sd_i + 1e-20))^3`` computed as ``m3_i / (sd_i + 1e-20)^3`` from the centred
    projections ``Dm (A - mean A)^T`` (the same quantity, without a float power per entry)."""
    Dm = np.asarray(Dm, dtype=np.float64)
    Ac = np.asarray(A, dtype=np.float64)
    Ac = Ac - Ac.mean(axis=0)
    out = np.empty(len(Dm))
    for s in range(0, len(Dm), chunk):
        c = Dm[s:s + chunk] @ Ac.T  # [chunk, N] centred projections (p_ij - mean_j p_ij)
        c2 = c * c
        m2 = c2.mean(axis=1)
        m3 = (c2 * c).mean(axis=1)
        out[s:s + chunk] = m3 / (np.sqrt(m2) + 1e-20) ** 3
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
    A = A - A.mean(0)  # covariances and mean differences do not depend on the origin; better conditioned Gram sums
    G_all = A.T @ A
    for j in range(Y.shape[1]):
        m = Y[:, j] == 1
        pos, neg = A[m], A[Y[:, j] == 0]
        if len(pos) == 0 or len(neg) == 0:  # a label without positives (tiny user files): no direction
            rows.append(np.zeros(D))
            continue
        G_pos = pos.T @ pos
        S = np.zeros((D, D))
        for g, G in ((pos, G_pos), (neg, G_all - G_pos if len(neg) == len(A) - len(pos) else neg.T @ neg)):
            if len(g) > 1:  # the sample covariance (n - 1), from the Gram matrix of the group
                mu = g.mean(0)
                S += (G - len(g) * np.outer(mu, mu)) / (len(g) - 1)
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
    ``on_diffs``: train on sign-free activation differences instead (the paper's diffs+TopK-SAE ablation).
    One SAE of :func:`train_saes`."""
    spec = dict(kind=kind, topk=topk, l1=l1, seed=seed, on_diffs=on_diffs)
    return train_saes([A], k, [spec], steps=steps, lr=lr, batch_size=batch_size, aux_coef=aux_coef,
                      dead_after=dead_after)[0]


def train_saes(As, k, specs, *, steps: int = 300, lr: float = 1e-3, batch_size: int = 256, aux_coef: float = 1 / 32,
               dead_after: int = 100) -> list:
    """Several SAEs with ``k`` latents trained side by side as one batched program (each its own parameters, Adam
    state, generator, minibatches and loss: SAE ``b`` gives what :func:`train_sae` alone gives it, up to float
    rounding). ``specs[b]``: dict(kind, topk, l1, seed, on_diffs, data) with ``data`` an index into ``As`` (default
    ``b``, or 0 when one array is given); every array must have the same width D."""
    import torch

    from lib.common.optim import Adam

    k, B = int(k), len(specs)
    Xs, mus, scales, gens, inits = [], [], [], [], []
    for b, sp in enumerate(specs):
        X = np.asarray(As[sp.get("data", b if len(As) > 1 else 0)], dtype=np.float64)
        rng = np.random.default_rng(sp["seed"])
        if sp.get("on_diffs"):
            X = X - X[rng.permutation(len(X))]
        mu = X.mean(0)
        scale = float(np.sqrt(((X - mu) ** 2).sum(1).mean())) + 1e-12
        Xs.append(torch.as_tensor((X - mu) / scale, dtype=torch.float32))
        mus.append(mu)
        scales.append(scale)
        g = torch.Generator().manual_seed(int(sp["seed"]))
        W = torch.randn(k, Xs[-1].shape[1], generator=g)
        inits.append(W / W.norm(dim=1, keepdim=True))
        gens.append(g)
    D = Xs[0].shape[1]
    if any(x.shape[1] != D for x in Xs):
        raise ValueError("train_saes: every activation array must have the same width")
    is_topk = torch.tensor([sp["kind"] == "topk" for sp in specs])
    topks = [min(int(sp.get("topk", 8)), k) for sp in specs]
    k_auxs = [min(2 * t, k) for t in topks]
    l1s = torch.tensor([0.0 if sp["kind"] == "topk" else float(sp.get("l1", 1e-3)) for sp in specs])
    W_dec = torch.stack(inits)  # [B, k, D]
    W_enc = W_dec.transpose(1, 2).clone()  # [B, D, k]
    b_enc = torch.zeros(B, 1, k)
    b_dec = torch.zeros(B, 1, D)
    params = [t.requires_grad_(True) for t in (W_enc, W_dec, b_enc, b_dec)]  # gradients set by hand below
    opt = Adam(params, lr=lr)
    last_fired = torch.zeros(B, k)
    kth_idx = torch.tensor(topks)[:, None, None] - 1  # [B, 1, 1]
    t_max = max(topks)
    tk = is_topk[:, None, None]
    coef = dict(aux=aux_coef, l1=l1s[:, None, None], k_aux=torch.tensor(k_auxs))
    # every SAE's minibatch indices for all steps, drawn at once from its generator (the same numbers as one draw
    # per step), as rows of the stacked data
    offsets = np.cumsum([0] + [len(X) for X in Xs])[:-1]
    Xcat = torch.cat(Xs)
    gidx = torch.stack([torch.randint(0, len(X), (int(steps), batch_size), generator=g) + int(o)
                        for X, g, o in zip(Xs, gens, offsets)], dim=1)  # [steps, B, batch]
    with limit_threads(1), torch.no_grad():
        for step in range(int(steps)):
            x = Xcat[gidx[step]]  # [B, batch, D]
            grads, fired = _sae_grads(x, params, kth_idx, t_max, tk, last_fired + 1 > dead_after, coef)
            last_fired = torch.where(fired, torch.zeros_like(last_fired), last_fired + 1)
            for prm, g in zip(params, grads):
                prm.grad = g
            opt.step()
            W_dec /= W_dec.norm(dim=2, keepdim=True) + 1e-12
        W_e, b_e, b_d, Wd = (t.detach() for t in (W_enc, b_enc, b_dec, W_dec))
        fvu = [float(((torch.bmm(zb, Wd[b:b + 1]) + b_d[b:b + 1] - Xs[b][None]) ** 2).sum(2).mean())
               for b in range(B)
               for zb in [_sae_codes(Xs[b][None], W_e[b:b + 1], b_e[b:b + 1], b_d[b:b + 1],
                                     topks[b] if specs[b]["kind"] == "topk" else None)]]
    out = []
    for b, sp in enumerate(specs):
        kind = sp["kind"]
        enc = _sae_encoder(W_e[b:b + 1], b_e[b:b + 1], b_d[b:b + 1], mus[b], scales[b],
                           topks[b] if kind == "topk" else None)
        name = ("TopK-SAE" if kind == "topk" else "Vanilla SAE") + (" on diffs" if sp.get("on_diffs") else "")
        out.append(Concepts(name, Wd[b].double().numpy(), enc,
                            {"fvu": fvu[b], "kind": kind, "topk": topks[b], "l1": sp.get("l1", 1e-3), "lr": lr,
                             "steps": steps}))
    return out


def _sae_grads(x, params, kth_idx, t_max, tk, dead_after_mask, coef):
    """Gradients of the batched SAE losses (each SAE's own loss; they share no parameter), written out by hand:
    reconstruction ``mean_n |x_hat - x|^2``, plus for TopK SAEs the AuxK term ``aux * mean_n |e_aux - (x - x_hat)|^2``
    (the ``min(k_aux, #dead)`` largest pre-activations of the latents dead for ``dead_after`` steps, when there are
    any; the residual is a constant), plus for vanilla SAEs ``l1 * mean_n sum |z|``. The same gradients as autograd
    on that loss (a unit test checks it). Returns ``([dW_enc, dW_dec, db_enc, db_dec], fired [B, k])``; the latents
    to count as dead are those of ``dead_after_mask`` whose SAE is a TopK one and which did not fire in this batch."""
    import torch

    W_enc, W_dec, b_enc, b_dec = params
    B, n, _ = x.shape
    xc = x - b_dec
    u = torch.bmm(xc, W_enc) + b_enc
    pre = torch.relu(u)
    kth = pre.topk(t_max, dim=2).values.gather(2, kth_idx.expand(B, n, 1))
    keep = torch.where(tk, (pre >= kth).to(pre.dtype), torch.ones_like(pre))  # TopK keeps ties at the k-th value
    z = pre * keep
    xh = torch.bmm(z, W_dec) + b_dec
    fired = (z > 0).any(1)
    G = (xh - x) * (2.0 / n)  # d loss / d x_hat
    dW_dec = torch.bmm(z.transpose(1, 2), G)
    dz = torch.bmm(G, W_dec.transpose(1, 2)) + coef["l1"] * (z > 0).to(z.dtype) / n  # d |z| = sign(z), z >= 0
    dpre = dz * keep
    last = torch.where(fired, torch.zeros_like(dead_after_mask), dead_after_mask)  # dead now (did not fire either)
    dead = last & tk[:, :, 0]
    n_dead = dead.sum(1)
    if bool(n_dead.any()):
        ka = torch.minimum(coef["k_aux"], n_dead).clamp(min=1)
        deadf = dead[:, None, :].to(pre.dtype)
        pre_dead = pre * deadf
        vals = pre_dead.topk(int(ka.max()), dim=2).values
        kth_a = vals.gather(2, (ka - 1)[:, None, None].expand(B, n, 1))
        m2 = ((pre_dead >= kth_a) & (pre_dead > 0)).to(pre.dtype)
        za = pre_dead * m2
        Ga = (torch.bmm(za, W_dec) - (x - xh)) * (2.0 * coef["aux"] / n) * (n_dead > 0).to(x.dtype)[:, None, None]
        dW_dec = dW_dec + torch.bmm(za.transpose(1, 2), Ga)
        dpre = dpre + torch.bmm(Ga, W_dec.transpose(1, 2)) * m2 * deadf
    du = dpre * (u > 0).to(u.dtype)
    dW_enc = torch.bmm(xc.transpose(1, 2), du)
    db_enc = du.sum(1, keepdim=True)
    db_dec = G.sum(1, keepdim=True) - torch.bmm(du, W_enc.transpose(1, 2)).sum(1, keepdim=True)
    return [dW_enc, dW_dec, db_enc, db_dec], fired


def _sae_codes(x, W_e, b_e, b_d, topk):
    import torch

    pre = torch.relu(torch.bmm(x - b_d, W_e) + b_e)
    if topk is not None:
        kth = pre.topk(topk, dim=2).values[..., -1:]
        pre = pre * (pre >= kth).to(pre.dtype)
    return pre


def _sae_encoder(W_e, b_e, b_d, mu, scale, topk):
    def encode(Anew):
        import torch

        x = torch.as_tensor((np.asarray(Anew, dtype=np.float64) - mu) / scale, dtype=torch.float32)[None]
        with torch.no_grad(), limit_threads(1):
            return _sae_codes(x, W_e, b_e, b_d, topk)[0].double().numpy()

    return encode
