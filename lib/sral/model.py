"""Set encoders (element MLP phi, a pooling, a linear head) and SRAL's adversarial auxiliary objective, in torch.

Every encoder reads a padded batch ``X`` (B, n, d) with a boolean ``mask`` (B, n) (True on real elements); padding
never changes a set's code (a unit test checks a padded batch against each set alone).

SRAL as reconstructed (no code or loss is public; see the notebook's Method): element embeddings
e_i = phi(x_i) are perturbed, e_i + delta_i with ||delta_i|| <= eps, the pooled codes z^delta are pulled to their
own clean codes z^0 against the other sets of the batch (InfoNCE, temperature tau_c), delta is the worst case
found by FGSM / K-step PGD (L2 steps per element), and the model minimises L_task + beta * L_aux.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lib.common.optim import Adam

POOLS = ("mean", "sw", "settf")
AUX = ("none", "sral", "random", "input")


class ElementMLP(nn.Module):
    """phi: R^d_in -> R^h, two hidden ReLU layers."""

    def __init__(self, d_in: int, h: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h))

    def forward(self, X):
        return self.net(X)


class MeanPool(nn.Module):
    """DeepSets: z = mean_i e_i over the real elements."""

    def __init__(self, h: int):
        super().__init__()
        self.out_dim = h

    def forward(self, E, mask):
        m = mask.unsqueeze(-1).to(E.dtype)
        return (E * m).sum(1) / m.sum(1).clamp_min(1.0)


def masked_quantiles(P, mask, taus):
    """Quantiles of each column of ``P`` (B, n, L) over the real elements, numpy.quantile's 'linear' rule:
    position tau * (n_b - 1) in the sorted values, linear interpolation. Returns (B, L, M)."""
    B, n, L = P.shape
    big = torch.finfo(P.dtype).max
    Ps = torch.sort(torch.where(mask.unsqueeze(-1), P, torch.full_like(P, big)), dim=1).values  # (B, n, L)
    cnt = mask.sum(1).to(P.dtype)  # (B,)
    pos = taus.to(P.dtype)[None, :] * (cnt[:, None] - 1)  # (B, M)
    lo = pos.floor().long()
    hi = torch.minimum(lo + 1, (cnt.long() - 1)[:, None])
    frac = (pos - lo.to(P.dtype)).unsqueeze(1)  # (B, 1, M)
    Pt = Ps.transpose(1, 2)  # (B, L, n)
    g_lo = torch.gather(Pt, 2, lo.unsqueeze(1).expand(B, L, -1))
    g_hi = torch.gather(Pt, 2, hi.unsqueeze(1).expand(B, L, -1))
    return g_lo + frac * (g_hi - g_lo)


class SWPool(nn.Module):
    """PSWE-style 2-sliced-Wasserstein pooling: L unit directions theta_l (learnable), M quantile levels
    tau_m = (m - 1/2)/M; z = vec[Q_l(tau_m)] / sqrt(L M), so ||z - z'||^2 ~ SW2^2 of the element embeddings."""

    def __init__(self, h: int, n_slices: int, n_quantiles: int, generator=None, learn_slices: bool = True):
        super().__init__()
        th = torch.randn(n_slices, h, generator=generator)
        self.theta = nn.Parameter(th, requires_grad=learn_slices)
        self.register_buffer("taus", (torch.arange(n_quantiles, dtype=torch.float32) + 0.5) / n_quantiles)
        self.out_dim = n_slices * n_quantiles

    def directions(self):
        return self.theta / self.theta.norm(dim=1, keepdim=True)

    def forward(self, E, mask):
        Q = masked_quantiles(E @ self.directions().T, mask, self.taus)
        return Q.reshape(len(E), -1) / math.sqrt(self.out_dim)


class SetTransformerLite(nn.Module):
    """One self-attention block (SAB, ``heads`` heads, masked keys) and pooling by multi-head attention (PMA, one
    learnable seed)."""

    def __init__(self, h: int, heads: int = 4, generator=None):
        super().__init__()
        if h % heads:
            raise ValueError(f"SetTransformerLite: h = {h} must be a multiple of heads = {heads}")
        self.h, self.heads = h, heads
        self.qkv = nn.Linear(h, 3 * h)
        self.o1 = nn.Linear(h, h)
        self.ff = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h))
        self.seed = nn.Parameter(torch.randn(1, 1, h, generator=generator) / math.sqrt(h))
        self.kv2 = nn.Linear(h, 2 * h)
        self.o2 = nn.Linear(h, h)
        self.out_dim = h

    def _attend(self, q, k, v, mask):
        B, nq, _ = q.shape
        sh = lambda t: t.reshape(B, t.shape[1], self.heads, -1).transpose(1, 2)  # noqa: E731
        att = sh(q) @ sh(k).transpose(-1, -2) / math.sqrt(self.h // self.heads)
        att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
        return (att @ sh(v)).transpose(1, 2).reshape(B, nq, self.h)

    def forward(self, E, mask):
        q, k, v = self.qkv(E).chunk(3, -1)
        H = E + self.o1(self._attend(q, k, v, mask))
        H = H + self.ff(H)
        k2, v2 = self.kv2(H).chunk(2, -1)
        s = self.seed.expand(len(E), 1, self.h)
        return (s + self.o2(self._attend(s, k2, v2, mask))).squeeze(1)


class SetEncoder(nn.Module):
    """phi -> pooling -> linear head. ``code`` gives z (the set representation), ``forward`` (z, v = W z + b)."""

    def __init__(self, d_in: int, h: int, pool: str, d_out: int, n_slices: int = 16, n_quantiles: int = 8,
                 generator=None):
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"pool {pool!r}; allowed: {', '.join(POOLS)}")
        self.phi = ElementMLP(d_in, h)
        self.pool = (MeanPool(h) if pool == "mean" else SWPool(h, n_slices, n_quantiles, generator) if pool == "sw"
                     else SetTransformerLite(h, 4, generator))
        self.head = nn.Linear(self.pool.out_dim, d_out)

    def elements(self, X, delta_in=None):
        return self.phi(X if delta_in is None else X + delta_in)

    def code(self, X, mask, delta=None, delta_in=None):
        E = self.elements(X, delta_in)
        return self.pool(E if delta is None else E + delta, mask)

    def forward(self, X, mask, delta=None, delta_in=None):
        z = self.code(X, mask, delta, delta_in)
        return z, self.head(z)


def info_nce(a, b, tau: float):
    """InfoNCE of a[i] against its positive b[i] and negatives b[j], j != i (cosine similarity / tau)."""
    logits = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T / tau
    return F.cross_entropy(logits, torch.arange(len(a), device=a.device))


def _project_ball(delta, radius, mask):
    """Each element's delta_i projected onto ||delta_i|| <= radius (radius per set, (B, 1, 1)); zero on padding."""
    nrm = delta.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return delta * torch.clamp(radius / nrm, max=1.0) * mask.unsqueeze(-1)


def _unit(g, mask):
    return g / g.norm(dim=-1, keepdim=True).clamp_min(1e-12) * mask.unsqueeze(-1)


def worst_delta(model: SetEncoder, X, mask, z0, eps_rel: float, tau: float, steps: int = 1, target: str = "element",
                generator=None):
    """The perturbation of the auxiliary loss and its radius per set.

    target 'element' (SRAL: on the element embeddings phi(x_i)), 'input' (on the raw elements x_i) or 'random'
    (random directions on the element embeddings, no inner max). The radius is eps_rel x the batch's mean norm of
    the perturbed quantity (detached). K = ``steps`` L2 steps of size radius / K (FGSM for K = 1), each followed by
    the projection onto the ball; the ascent maximises InfoNCE(z^delta, z^0 | other sets), z^0 held fixed."""
    with torch.no_grad():
        base = X if target == "input" else model.elements(X)
        nrm = base.norm(dim=-1)
        radius = (eps_rel * (nrm * mask).sum() / mask.sum()).reshape(1, 1, 1)
    if target == "random":
        g = torch.randn(base.shape, generator=generator)
        return _unit(g, mask) * radius, radius
    if target not in ("element", "input"):
        raise ValueError(f"target {target!r}; allowed: 'element', 'input', 'random'")
    z0 = z0.detach()
    with torch.no_grad():
        E0 = None if target == "input" else model.elements(X)
    delta = torch.zeros_like(base)
    for _ in range(steps):
        delta.requires_grad_(True)
        if target == "input":
            zd = model.code(X, mask, delta_in=delta)
        else:
            zd = model.pool(E0 + delta, mask)
        (g,) = torch.autograd.grad(info_nce(zd, z0, tau), delta)
        delta = _project_ball(delta.detach() + radius / steps * _unit(g, mask), radius, mask)
    return delta.detach(), radius


@dataclass
class TrainSpec:
    """How one encoder is trained (the same for every baseline except ``pool``/``aux``)."""

    pool: str = "sw"
    aux: str = "none"
    h: int = 32
    n_slices: int = 16
    n_quantiles: int = 8
    d_out: int = 32
    epochs: int = 5
    batch: int = 64
    lr: float = 3e-3
    beta: float = 0.5
    eps: float = 0.1
    pgd_steps: int = 1
    tau: float = 0.1
    tau_c: float = 0.1

    def __post_init__(self):
        if self.pool not in POOLS:
            raise ValueError(f"pool {self.pool!r}; allowed: {', '.join(POOLS)}")
        if self.aux not in AUX:
            raise ValueError(f"aux {self.aux!r}; allowed: {', '.join(AUX)}")


@dataclass
class History:
    loss: list = field(default_factory=list)
    aux: list = field(default_factory=list)
    steps: int = 0
    max_delta_ratio: float = 0.0  # max_i ||delta_i|| / radius over training (<= 1 + 1e-5: the ball is respected)


def _aux_loss(model, spec, X, mask, z0, gen):
    target = {"sral": "element", "random": "random", "input": "input"}[spec.aux]
    delta, radius = worst_delta(model, X, mask, z0, spec.eps, spec.tau_c, spec.pgd_steps, target, gen)
    ratio = float((delta.norm(dim=-1) / radius.reshape(())).max())
    zd = model.code(X, mask, delta_in=delta) if target == "input" else model.code(X, mask, delta=delta)
    return info_nce(zd, z0, spec.tau_c), ratio


def train_pairs(spec: TrainSpec, X, mask, labels, sets_per_dist: int, seed: int, d_in: int | None = None):
    """Train on a pool of sets with weak labels (the source distribution): each step draws batch/2 sources and two
    of their sets; L_task = symmetric InfoNCE between the two views' head outputs v (cosine / tau). Sets must be
    stored source-major (set index = label * sets_per_dist + k)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    Xt, Mt = torch.as_tensor(X), torch.as_tensor(mask)
    n_src = int(labels.max()) + 1
    model = SetEncoder(d_in or X.shape[-1], spec.h, spec.pool, spec.d_out, spec.n_slices, spec.n_quantiles, gen)
    opt = Adam(model.parameters(), lr=spec.lr)
    hist = History()
    P = spec.batch // 2
    steps_per_epoch = max(1, len(X) // spec.batch)
    for _ in range(spec.epochs * steps_per_epoch):
        src = rng.choice(n_src, P, replace=False)
        k1 = rng.integers(0, sets_per_dist, P)
        k2 = (k1 + rng.integers(1, sets_per_dist, P)) % sets_per_dist
        idx = torch.as_tensor(np.concatenate([src * sets_per_dist + k1, src * sets_per_dist + k2]))
        xb, mb = Xt[idx], Mt[idx]
        z, v = model(xb, mb)
        loss = 0.5 * (info_nce(v[:P], v[P:], spec.tau) + info_nce(v[P:], v[:P], spec.tau))
        if spec.aux != "none":
            la, r = _aux_loss(model, spec, xb, mb, z, gen)
            hist.aux.append(float(la.detach()))
            hist.max_delta_ratio = max(hist.max_delta_ratio, r)
            loss = loss + spec.beta * la
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.loss.append(float(loss.detach()))
        hist.steps += 1
    return model, hist


def train_classifier(spec: TrainSpec, X, y, n_classes: int, seed: int):
    """Train on fixed-size point clouds X (N, n, d) with labels y: L_task = cross-entropy of v = W z + b."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y).long()
    Mt = torch.ones(X.shape[:2], dtype=torch.bool)
    model = SetEncoder(X.shape[-1], spec.h, spec.pool, n_classes, spec.n_slices, spec.n_quantiles, gen)
    opt = Adam(model.parameters(), lr=spec.lr)
    hist = History()
    for _ in range(spec.epochs):
        perm = torch.as_tensor(rng.permutation(len(X)))
        for s in range(0, len(X) - spec.batch + 1, spec.batch):
            idx = perm[s: s + spec.batch]
            xb, mb = Xt[idx], Mt[idx]
            z, v = model(xb, mb)
            loss = F.cross_entropy(v, yt[idx])
            if spec.aux != "none":
                la, r = _aux_loss(model, spec, xb, mb, z, gen)
                hist.max_delta_ratio = max(hist.max_delta_ratio, r)
                loss = loss + spec.beta * la
            opt.zero_grad()
            loss.backward()
            opt.step()
            hist.loss.append(float(loss.detach()))
            hist.steps += 1
    return model, hist


@torch.no_grad()
def encode(model: SetEncoder, X, mask, batch: int = 512, head: bool = False) -> np.ndarray:
    """Codes z (or head outputs v) of a padded array of sets, in batches."""
    out = []
    for s in range(0, len(X), batch):
        z, v = model(torch.as_tensor(X[s: s + batch]), torch.as_tensor(mask[s: s + batch]))
        out.append((v if head else z).numpy())
    return np.concatenate(out)
