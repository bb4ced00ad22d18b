"""GMAN in torch: ExtGNAN per graph, DeepSet mixing of non-singleton subsets, a logit summed over subsets.

ExtGNAN (one graph G, channel c), with the distance ``d(i, j) = 1 / ((t_i - t_j) / unit + 0.1)``::

    h_{i,c} = sum_{j in G, j = i or t_j < t_i} rho_c(d(i, j)) * sum_g f_{g,c}(x_j^(g))        (later nodes masked)
    h_{G,c} = sum_i h_{i,c}

Subsets: ``Phi(S) = h_G`` for ``S = {G}``, ``Phi(S) = rho_DS(mean_{G in S} phi_DS(h_G))`` otherwise;
``logit = bias + sum_S sum_c Phi(S)_c``.

A batch (:func:`collate`) is one flat, block-diagonal layout of all its graphs: the node table and the list of causal
pairs (i, j) inside each graph, both also sorted by *model graph* (one ExtGNAN per marker with ``share="per_graph"``,
one for all with ``share="single"``), so that every marker's shape functions f and distance function rho (the
weights of one :class:`lib.common.additive.GroupMLPs` each) run over the whole batch as one ragged pass
(:func:`ragged_forward`: one matrix product per model graph and layer on its own rows, the activations and dropout
on all rows at once). Nothing is padded: the markers' pair counts differ by a factor of ~5 (test rates 6-14 per
year, pairs ~ rate^2), and a padded ``[max pairs, markers]`` layout spent ~40% of its work on padding.
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


def node_features(s: Samples, norm: Norm) -> np.ndarray:
    """``[value (standardised per marker), time before the record's end (in units of the window), age, sex]``, or
    the samples' own per-node feature table ``s.extra["x"]`` when they carry one (the cascades)."""
    if "x" in s.extra:
        return np.asarray(s.extra["x"], np.float32)
    v = (s.value - norm.mean[s.marker]) / norm.sd[s.marker]
    return np.c_[v, (s.window - s.t) / s.window, s.static[s.sample]].astype(np.float32)


N_FEATURES = 4


def collate(s: Samples, norm: Norm, share: str = "per_graph") -> dict:
    """One batch as tensors: the block-diagonal (flat) layout of every graph of every sample in ``s``.

    Nodes keep the order of ``s`` (``t``, ``marker``, ``sample``, ``gid``); ``xs`` holds their features sorted by
    model graph (``ncnt`` rows per model, ``nsort_inv`` maps a node to its row there). Causal pairs are sorted by
    model graph (``pcnt`` per model): receiver and sender node indices ``recv``, ``send``, the distance ``d`` and the
    graph ``pair_gid`` of each pair."""
    if share not in ("per_graph", "single"):
        raise ValueError(f"collate: share {share!r}; allowed: 'per_graph', 'single'")
    m = len(s.markers)
    gid = s.sample * m + s.marker
    recv, send = causal_pairs(gid, s.t)
    mg_node = s.marker if share == "per_graph" else np.zeros_like(s.marker)
    M = m if share == "per_graph" else 1
    norder = np.argsort(mg_node, kind="stable")
    inv = np.empty(len(norder), np.int64)
    inv[norder] = np.arange(len(norder))
    porder = np.argsort(mg_node[recv], kind="stable")
    recv, send = recv[porder], send[porder]
    d = 1.0 / ((s.t[recv] - s.t[send]) / norm.time_unit + 0.1)
    x = node_features(s, norm)
    T = lambda a, dt=torch.long: torch.as_tensor(np.ascontiguousarray(a), dtype=dt)  # noqa: E731
    return {"n_samples": s.n, "n_markers": m, "gid": T(gid), "recv": T(recv), "send": T(send),
            "pair_gid": T(gid[recv]), "d": T(d, torch.float32), "xs": T(x[norder], torch.float32),
            "nsort_inv": T(inv), "ncnt": np.bincount(mg_node, minlength=M).tolist(),
            "pcnt": np.bincount(mg_node[recv], minlength=M).tolist(),
            "pairs_per_graph": T(np.maximum(np.bincount(gid[recv], minlength=s.n * m), 1), torch.float32),
            "y": T(s.y, torch.float32), "t": T(s.t, torch.float32), "marker": T(s.marker), "sample": T(s.sample)}


def collate_chunks(s: Samples, norm: Norm, size: int = 128, share: str = "per_graph") -> list:
    """``s`` as a list of batches of ``size`` samples, in order (for evaluation: a forward pass over a few thousand
    patients at once is memory-bound; chunks of ~128 run 2-4x faster and give the same predictions)."""
    return [collate(s.take(np.arange(k, min(k + size, s.n))), norm, share) for k in range(0, s.n, size)]


_ACT = {"relu": torch.relu, "leaky_relu": nn.functional.leaky_relu, "tanh": torch.tanh, "gelu": nn.functional.gelu}


def dropout(h: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout ``h * Bernoulli(1 - p) / (1 - p)``, as ``nn.functional.dropout``, with a cheaper mask: 16
    random bits per element (four per 64-bit draw of torch's global generator), kept where they fall in the top
    ``round((1 - p) 2^16)`` of the 65536 values, so the keep probability is ``1 - p`` to within ``2^-17`` (0.8 +
    3e-6 for p = 0.2). torch's ``bernoulli_`` draws one 32-bit number per element (and ``rand`` one float); this mask
    costs a quarter of the draws, and the dropout masks were the largest single cost of a training step."""
    if not training or p == 0.0:
        return h
    n = h.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, 2 ** 63 - 1)
    keep = int(round((1.0 - p) * 65536))
    mask = bits.view(torch.int16)[:n].view(h.shape).ge(32768 - keep)
    return h * mask.to(h.dtype).mul_(65536.0 / keep)


def ragged_forward(mlps: GroupMLPs, xg: torch.Tensor, counts, K: int) -> torch.Tensor:
    """Evaluate ``mlps`` (groups ``m*K .. m*K + K - 1`` belong to model ``m``) on inputs ``xg`` ``[K, n, d_max]``
    whose rows are sorted by model, ``counts[m]`` rows for model ``m``: ``[K, n, out_dim]``.

    The same function as ``mlps.forward_groups`` on each model's rows (Linear, then per-group LayerNorm when the
    groups have it, activation, dropout; a linear output layer), without padding the models to a common row count:
    one batched product per model and layer, the activation and dropout over all rows at once."""
    counts = [int(c) for c in counts]
    if len(counts) * K != mlps.n_groups or sum(counts) != xg.shape[1]:
        raise ValueError(f"ragged_forward: {len(counts)} models x {K} groups and {sum(counts)} rows do not match "
                         f"{mlps.n_groups} groups and {xg.shape[1]} rows")
    act, H, L = _ACT[mlps.activation], mlps.hidden, len(mlps.weights)
    segs = xg.split(counts, dim=1)
    for k in range(L):
        W, B = mlps.weights[k], mlps.biases[k]
        outs = []
        for m, x in enumerate(segs):
            g = slice(m * K, (m + 1) * K)
            o = torch.baddbmm(B[g].unsqueeze(1), x, W[g])
            if k < L - 1 and mlps.layer_norm:
                o = (nn.functional.layer_norm(o, (H,)) * mlps.ln_weight[k][g].unsqueeze(1)
                     + mlps.ln_bias[k][g].unsqueeze(1))
            outs.append(o)
        h = outs[0] if len(outs) == 1 else torch.cat(outs, 1)
        if k < L - 1:
            h = dropout(act(h), mlps.dropout, mlps.training)
            segs = h.split(counts, dim=1)
    return h


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

    def _check(self, counts):
        if len(counts) != self.M:
            raise ValueError(f"ExtGNAN: the batch was collated for {len(counts)} model graphs, the model has {self.M} "
                             "(collate's share must match the model's)")

    def node_values(self, b: dict) -> torch.Tensor:
        """``sum_g f_g(x_j^(g))`` for every node (in the batch's node order): ``[n_nodes, C]``."""
        self._check(b["ncnt"])
        f, K = self.f, self.K
        # model m's group k reads the same columns of the node's own features for every m: model 0's index
        xg = (b["xs"][:, f.index[:K]] * f.mask[:K]).permute(1, 0, 2)  # [K, n, d_max], rows sorted by model
        fx = ragged_forward(f, xg, b["ncnt"], K).sum(0)
        return fx[b["nsort_inv"]]

    def distance_values(self, b: dict) -> torch.Tensor:
        """``rho(d(i, j))`` for every causal pair (in the batch's pair order): ``[n_pairs, C]``."""
        self._check(b["pcnt"])
        return ragged_forward(self.rho, b["d"][None, :, None], b["pcnt"], 1)[0]

    def forward(self, b: dict):
        """Graph representations ``[n_samples * m, C]`` and the messages ``rho(d) f(x_j)`` per pair."""
        fx = self.node_values(b)
        msg = self.distance_values(b) * fx[b["send"]]
        G = b["n_samples"] * b["n_markers"]
        if self.aggregate == "mean":  # divide each message by its graph's number of causal pairs
            msg = msg / b["pairs_per_graph"][b["pair_gid"]][:, None]
        h = torch.zeros(G, self.out, dtype=msg.dtype).index_add_(0, b["pair_gid"], msg)
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
