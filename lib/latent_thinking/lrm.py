"""The latent reward model (a GRU over the T latent thoughts) and the representation metrics of Figure 2.

LRM: thoughts z = (m_1, ..., m_T) (per-step mean states, standardised with the training set's statistics) go
through a one-layer GRU (32 units); a head on the hidden state after step k gives r_k(x, z) = p(O = 1 | m_1..m_k).
Training minimises the binary cross-entropy of the answer's correctness averaged over all prefixes k = 1..T
(one model then gives the AUC of every prefix length, Figure 3); the reward is r = r_T.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


class GRUReward(nn.Module):
    def __init__(self, d_in, hidden=32):
        super().__init__()
        self.gru = nn.GRU(d_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):  # x [B, T, d] -> logits [B, T] (one per prefix)
        h, _ = self.gru(x)
        return self.head(h).squeeze(-1)


@dataclass
class LRM:
    net: GRUReward
    mean: np.ndarray
    std: np.ndarray
    losses: list

    @torch.no_grad()
    def prefix_scores(self, thoughts):
        """p(correct | first k steps) for every k: [..., T]."""
        x = np.asarray(thoughts, dtype=np.float32)
        shape = x.shape[:-2]
        x = (x.reshape(-1, *x.shape[-2:]) - self.mean) / self.std
        out = torch.sigmoid(self.net(torch.as_tensor(x, dtype=torch.float32))).numpy()
        return out.reshape(*shape, x.shape[-2])

    def reward(self, thoughts):
        return self.prefix_scores(thoughts)[..., -1]


def train_lrm(thoughts, labels, *, steps=300, lr=3e-3, hidden=32, batch=128, weight_decay=1e-4, seed=0):
    """Fit the LRM on trajectories ``thoughts`` [n, T, d] with 0/1 ``labels`` [n] (correct answer or not)."""
    from lib.common import limit_threads

    with limit_threads(1):
        return _train_lrm(thoughts, labels, steps=steps, lr=lr, hidden=hidden, batch=batch,
                          weight_decay=weight_decay, seed=seed)


def _train_lrm(thoughts, labels, *, steps, lr, hidden, batch, weight_decay, seed):
    from lib.common.optim import AdamW

    x = np.asarray(thoughts, dtype=np.float32).reshape(-1, *np.shape(thoughts)[-2:])
    y = np.asarray(labels, dtype=np.float32).reshape(-1)
    mean = x.mean((0, 1), keepdims=True)[0]
    std = x.std((0, 1), keepdims=True)[0] + 1e-5
    xt = torch.as_tensor((x - mean) / std)
    yt = torch.as_tensor(y)
    g = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net = GRUReward(x.shape[-1], hidden)
    opt = AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    pos = float(y.mean()) if y.size else 0.5
    w_pos = 0.5 / max(pos, 1e-3)
    w_neg = 0.5 / max(1 - pos, 1e-3)  # balanced classes
    losses = []
    net.train()
    for _ in range(int(steps)):
        idx = torch.randint(0, xt.shape[0], (min(batch, xt.shape[0]),), generator=g)
        logits = net(xt[idx])
        yy = yt[idx][:, None].expand_as(logits)
        w = torch.where(yy > 0.5, w_pos, w_neg)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, yy, weight=w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    net.eval()
    return LRM(net, mean, std, losses)


def auc(labels, scores):
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(labels).ravel()
    if labels.min() == labels.max():
        return float("nan")
    return float(roc_auc_score(labels, np.asarray(scores).ravel()))


def auc_vs_steps(lrm, thoughts, labels):
    ps = lrm.prefix_scores(thoughts)  # [..., T]
    T = ps.shape[-1]
    return np.array([auc(labels, ps[..., k]) for k in range(T)])


# --- representation metrics (Figure 2) ---------------------------------------------------------------------
def spectrum_metrics(S):
    """Entropy of the normalised singular-value spectrum, effective rank exp(H) and anisotropy (mean pairwise
    cosine) of token-state matrices ``S`` [..., L, d]. Returns three arrays [...]."""
    S = np.asarray(S, dtype=np.float64)
    sv = np.linalg.svd(S, compute_uv=False)
    p = sv / sv.sum(-1, keepdims=True)
    H = -(p * np.log(np.clip(p, 1e-12, None))).sum(-1)
    U = S / (np.linalg.norm(S, axis=-1, keepdims=True) + 1e-12)
    G = U @ np.swapaxes(U, -1, -2)
    L = S.shape[-2]
    aniso = (G.sum((-1, -2)) - np.trace(G, axis1=-2, axis2=-1)) / (L * (L - 1))
    return H, np.exp(H), aniso


def twonn_dimension(X):
    """TwoNN intrinsic dimension (Facco et al. 2017): d = n / sum log(r2 / r1) over points X [n, d]."""
    from scipy.spatial.distance import cdist

    X = np.asarray(X, dtype=np.float64)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    D.sort(1)
    r1, r2 = D[:, 0], D[:, 1]
    ok = r1 > 0
    mu = np.log(r2[ok] / r1[ok])
    return float(ok.sum() / mu.sum()) if mu.sum() > 0 else float("nan")
