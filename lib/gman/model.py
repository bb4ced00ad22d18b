"""GMAN in torch: ExtGNAN per graph, DeepSet mixing of non-singleton subsets, a logit summed over subsets.

ExtGNAN (one graph G, channel c), with the distance ``d(i, j) = 1 / ((t_i - t_j) / unit + 0.1)``::

    h_{i,c} = sum_{j in G, j = i or t_j < t_i} rho_c(d(i, j)) * sum_g f_{g,c}(x_j^(g))        (later nodes masked)
    h_{G,c} = sum_i h_{i,c}

Subsets: ``Phi(S) = h_G`` for ``S = {G}``, ``Phi(S) = rho_DS(mean_{G in S} phi_DS(h_G))`` otherwise;
``logit = bias + sum_S sum_c Phi(S)_c``.

A batch (:func:`collate`) is one flat, block-diagonal layout of all its graphs: the node table, the list of causal
pairs (i, j) inside each graph, and for each *model graph* (one ExtGNAN per marker with ``share="per_graph"``, one
for all with ``share="single"``) the padded positions of its nodes and pairs, so that every marker's shape functions
f and distance function rho run in one :class:`lib.common.additive.GroupMLPs` pass over the whole batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lib.common.additive import GroupMLPs

from .data import Samples

D_SELF = 10.0  # d(i, i) = 1 / 0.1


@dataclass
class Norm:
    """Per-marker value standardisation (training statistics) and the time unit of the distance."""
    mean: np.ndarray
    sd: np.ndarray
    time_unit: float

    @classmethod
    def fit(cls, s: Samples, time_unit: float) -> "Norm":
        m = len(s.markers)
        cnt = np.maximum(np.bincount(s.marker, minlength=m), 1)
        mu = np.bincount(s.marker, s.value, m) / cnt
        var = np.bincount(s.marker, (s.value - mu[s.marker]) ** 2, m) / cnt
        return cls(mu, np.sqrt(var) + 1e-6, float(time_unit))


def causal_pairs(sample_or_gid: np.ndarray, t: np.ndarray):
    """All pairs ``(i, j)`` of nodes in the same graph with ``j == i`` or ``t_j < t_i`` (nodes sorted by graph, then
    time). Returns receiver and sender index arrays."""
    gid = np.asarray(sample_or_gid)
    n = len(gid)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.r_[0, np.flatnonzero(gid[1:] != gid[:-1]) + 1]
    first = np.repeat(start, np.diff(np.r_[start, n]))  # first node of each node's graph
    rank = np.arange(n) - first
    recv = np.repeat(np.arange(n), rank + 1)
    offs = np.arange(len(recv)) - np.repeat(np.cumsum(rank + 1) - (rank + 1), rank + 1)
    send = first[recv] + offs
    keep = (send == recv) | (t[send] < t[recv])
    return recv[keep], send[keep]


def _padded_positions(owner: np.ndarray, n_owners: int):
    """For items with owner ids, the position of each inside its owner, and the padded size."""
    order = np.argsort(owner, kind="stable")
    cnt = np.bincount(owner, minlength=n_owners)
    starts = np.r_[0, np.cumsum(cnt)[:-1]]
    pos = np.empty(len(owner), np.int64)
    pos[order] = np.arange(len(owner)) - np.repeat(starts, cnt)
    return pos, int(max(cnt.max() if len(cnt) else 0, 1))


def node_features(s: Samples, norm: Norm) -> np.ndarray:
    """``[value (standardised per marker), time before the record's end (in units of the window), age, sex]``, or
    the samples' own per-node feature table ``s.extra["x"]`` when they carry one (the cascades)."""
    if "x" in s.extra:
        return np.asarray(s.extra["x"], np.float32)
    v = (s.value - norm.mean[s.marker]) / norm.sd[s.marker]
    return np.c_[v, (s.window - s.t) / s.window, s.static[s.sample]].astype(np.float32)


N_FEATURES = 4


def collate(s: Samples, norm: Norm, share: str = "per_graph") -> dict:
    """One batch as tensors: the block-diagonal (flat) layout of every graph of every sample in ``s``."""
    m = len(s.markers)
    gid = s.sample * m + s.marker
    recv, send = causal_pairs(gid, s.t)
    dt = (s.t[recv] - s.t[send]) / norm.time_unit
    d = 1.0 / (dt + 0.1)
    mg_node = s.marker if share == "per_graph" else np.zeros_like(s.marker)
    M = m if share == "per_graph" else 1
    npos, nmax = _padded_positions(mg_node, M)
    mg_pair = mg_node[recv]
    ppos, pmax = _padded_positions(mg_pair, M)
    d_pad = np.zeros((pmax, M, 1), np.float32)
    d_pad[ppos, mg_pair, 0] = d
    x = node_features(s, norm)
    x_pad = np.zeros((nmax, M, x.shape[1]), np.float32)
    x_pad[npos, mg_node] = x
    T = lambda a, dt=torch.long: torch.as_tensor(np.ascontiguousarray(a), dtype=dt)  # noqa: E731
    return {"n_samples": s.n, "n_markers": m, "gid": T(gid), "recv": T(recv), "send": T(send),
            "d": T(d, torch.float32), "x_pad": T(x_pad, torch.float32), "npos": T(npos), "mg_node": T(mg_node),
            "d_pad": T(d_pad, torch.float32), "ppos": T(ppos), "mg_pair": T(mg_pair),
            "pairs_per_graph": T(np.maximum(np.bincount(gid[recv], minlength=s.n * m), 1), torch.float32),
            "y": T(s.y, torch.float32), "t": T(s.t, torch.float32), "marker": T(s.marker), "sample": T(s.sample)}


class ExtGNAN(nn.Module):
    """``M`` ExtGNANs (one per model graph) side by side: shape functions f (one MLP per feature group: 2 hidden
    layers with LayerNorm, ReLU, dropout) and a distance function rho (LeakyReLU MLP), each as one GroupMLPs."""

    def __init__(self, n_models: int, feature_groups=(2, 2), hidden: int = 16, out: int = 1, n_layers: int = 2,
                 dropout: float = 0.2, generator=None, aggregate: str = "sum", layer_norm: bool = True,
                 n_features: int = N_FEATURES):
        super().__init__()
        if aggregate not in ("sum", "mean"):
            raise ValueError(f"ExtGNAN: aggregate {aggregate!r}; allowed: 'sum', 'mean'")
        self.aggregate = aggregate
        self.M, self.K, self.feature_groups = int(n_models), len(feature_groups), [int(g) for g in feature_groups]
        if sum(self.feature_groups) != n_features:
            raise ValueError(f"ExtGNAN: feature_groups {list(feature_groups)} must cover the {n_features} node "
                             "features")
        self.f = GroupMLPs(self.feature_groups * self.M, hidden=hidden, depth=n_layers, out_dim=out,
                           layer_norm=layer_norm, dropout=dropout, generator=generator)
        self.rho = GroupMLPs([1] * self.M, hidden=hidden, depth=n_layers, out_dim=out, activation="leaky_relu",
                             dropout=dropout, generator=generator)
        self.out = int(out)

    def node_values(self, b: dict) -> torch.Tensor:
        """``sum_g f_g(x_j^(g))`` for every node: ``[n_nodes, C]``."""
        P, M, F = b["x_pad"].shape
        # group (model m, feature group k) reads model m's slot of the padded node table
        flat = b["x_pad"].reshape(P, M * F)
        fx = self.f(flat)  # GroupMLPs' index maps groups to consecutive features: (m, k) -> slot m, group k
        fx = fx.reshape(P, M, self.K, self.out).sum(2)
        return fx[b["npos"], b["mg_node"]]

    def distance_values(self, b: dict) -> torch.Tensor:
        """``rho(d(i, j))`` for every causal pair: ``[n_pairs, C]``."""
        r = self.rho.forward_groups(b["d_pad"])
        return r[b["ppos"], b["mg_pair"]]

    def forward(self, b: dict):
        """Graph representations ``[n_samples * m, C]`` and the messages ``rho(d) f(x_j)`` per pair."""
        fx = self.node_values(b)
        msg = self.distance_values(b) * fx[b["send"]]
        G = b["n_samples"] * b["n_markers"]
        if self.aggregate == "mean":  # divide each message by its graph's number of causal pairs
            msg = msg / b["pairs_per_graph"][b["gid"][b["recv"]]][:, None]
        h = torch.zeros(G, self.out, dtype=msg.dtype).index_add_(0, b["gid"][b["recv"]], msg)
        return h, msg


class DeepSet(nn.Module):
    """``rho_DS(mean_G phi_DS(h_G))``: phi_DS = 3 x [Linear + ReLU] (C -> H -> H -> H), rho_DS = Linear(H, C)."""

    def __init__(self, in_dim: int, hidden: int, out: int, generator=None):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU())
        self.rho = nn.Linear(hidden, out)
        with torch.no_grad():
            for mod in list(self.phi) + [self.rho]:
                if isinstance(mod, nn.Linear):
                    std = np.sqrt(2.0 / mod.in_features)
                    mod.weight.copy_(torch.randn(mod.weight.shape, generator=generator) * std)
                    mod.bias.zero_()

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # [B, |S|, C] -> [B, C]
        return self.rho(self.phi(h).mean(1))


class GMAN(nn.Module):
    """``subsets``: a partition of the marker indices (lists); singletons are additive, the others DeepSet-mixed.
    ``share``: ``"per_graph"`` (one ExtGNAN per marker) or ``"single"`` (one shared)."""

    def __init__(self, n_markers: int, subsets, feature_groups=(2, 2), share: str = "per_graph", hidden: int = 16,
                 out: int = 1, n_layers: int = 2, dropout: float = 0.2, generator=None, aggregate: str = "sum",
                 layer_norm: bool = True, out_scale: float = 0.02, n_features: int = N_FEATURES):
        super().__init__()
        if share not in ("per_graph", "single"):
            raise ValueError(f"GMAN: share {share!r}; allowed: 'per_graph', 'single'")
        flat = sorted(int(g) for S in subsets for g in S)
        if flat != list(range(n_markers)):
            raise ValueError(f"GMAN: subsets {subsets} must partition the markers 0..{n_markers - 1}")
        self.m, self.share, self.out = int(n_markers), share, int(out)
        self.subsets = [list(map(int, S)) for S in subsets]
        self.ext = ExtGNAN(self.m if share == "per_graph" else 1, feature_groups, hidden, out, n_layers, dropout,
                           generator, aggregate, layer_norm, n_features)
        with torch.no_grad():  # f's output layer scaled down: a sum over ~50 causal pairs per graph otherwise
            self.ext.f.weights[-1].mul_(out_scale)  # starts the logits at sd ~300 (Kaiming init), ~5 with 0.02
        self.mixers = nn.ModuleDict({str(k): DeepSet(out, hidden, out, generator)
                                     for k, S in enumerate(self.subsets) if len(S) > 1})
        self.bias = nn.Parameter(torch.zeros(()))

    def parts(self, b: dict) -> dict:
        """Everything the explanations need: graph reps ``[B, m, C]``, subset outputs ``[B, k, C]``, messages."""
        h, msg = self.ext(b)
        hG = h.reshape(b["n_samples"], self.m, self.out)
        phis = []
        for k, S in enumerate(self.subsets):
            phis.append(hG[:, S[0]] if len(S) == 1 else self.mixers[str(k)](hG[:, S]))
        phi = torch.stack(phis, 1)
        return {"hG": hG, "phi": phi, "msg": msg, "logit": phi.sum((1, 2)) + self.bias}

    def forward(self, b: dict) -> torch.Tensor:
        return self.parts(b)["logit"]
