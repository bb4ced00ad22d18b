"""Neural additive shape functions: one small MLP per feature group, all groups in one batched pass.

A neural additive model (NAM, Agarwal et al. 2021) scores ``f(x) = β + Σ_g f_g(x_g)``, each ``f_g`` a small MLP
on its own group of features (a single feature for the classical NAM; larger groups for GNAN/GMAN's "extended"
feature groups). :class:`GroupMLPs` holds every group's weights as stacked tensors (``[G, in, out]``) and evaluates
all groups with one ``einsum`` per layer, so a model with hundreds of shape functions costs a handful of kernels::

    mlps = GroupMLPs([1] * n_features, hidden=16, depth=2)      # a NAM's components, 1 -> 16 -> 16 -> 1
    contrib = mlps(x)                                           # [batch, n_features, 1]: f_g(x_g)
    logit = contrib.sum(dim=(1, 2)) + bias
    grid, curve = mlps.shape_curve(3, lo=0.0, hi=1.0)           # feature 3's shape function on a grid
    layers = mlps.export_numpy(3)                               # [(W1, b1), (W2, b2), (W3, b3)] for exact analysis

Groups of different sizes are zero-padded to the widest group: a padded input is always 0 and so never contributes.
Weights are Kaiming-normal (fan-in, the activation's gain) with zero biases, as GNAN's and NAM's reference code.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
from torch import nn

_ACTIVATIONS = {"relu": torch.relu, "leaky_relu": torch.nn.functional.leaky_relu, "tanh": torch.tanh,
                "gelu": torch.nn.functional.gelu}


class GroupMLPs(nn.Module):
    """``G`` independent MLPs ``in_g -> hidden -> ... -> hidden -> out_dim``, evaluated together.

    ``group_sizes``: features per group, consecutive in the input (``[1, 1, 1, 1, 5]``: four univariate groups
    and one of five features). ``depth``: hidden layers (``depth=2`` is ``in -> H -> H -> out``). ``layer_norm``:
    a per-group LayerNorm after each hidden linear layer (before the activation), as GNAN's code. ``dropout`` after
    each activation. ``generator`` seeds the initialisation.
    """

    def __init__(self, group_sizes: Sequence[int], *, hidden: int = 16, depth: int = 2, out_dim: int = 1,
                 activation: str = "relu", layer_norm: bool = False, dropout: float = 0.0,
                 generator: Optional[torch.Generator] = None):
        super().__init__()
        sizes = [int(s) for s in group_sizes]
        if not sizes or any(s < 1 for s in sizes):
            raise ValueError(f"GroupMLPs: group_sizes got {list(group_sizes)!r}; allowed: a non-empty list of "
                             f"integers >= 1")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"GroupMLPs: activation got {activation!r}; allowed: {', '.join(_ACTIVATIONS)}")
        if depth < 1 or hidden < 1 or out_dim < 1:
            raise ValueError("GroupMLPs: depth, hidden and out_dim must be >= 1")
        self.group_sizes, self.activation, self.layer_norm = sizes, activation, bool(layer_norm)
        self.hidden, self.depth, self.out_dim, self.dropout = int(hidden), int(depth), int(out_dim), float(dropout)
        G, d = len(sizes), max(sizes)
        offsets = np.cumsum([0] + sizes[:-1])
        index = torch.zeros(G, d, dtype=torch.long)
        mask = torch.zeros(G, d)
        for g, (o, s) in enumerate(zip(offsets, sizes)):
            index[g, :s] = torch.arange(o, o + s)
            mask[g, :s] = 1.0
        self.register_buffer("index", index)
        self.register_buffer("mask", mask)
        dims = [d] + [self.hidden] * self.depth + [self.out_dim]
        gain = nn.init.calculate_gain("leaky_relu" if activation == "leaky_relu" else
                                      ("tanh" if activation == "tanh" else "relu"))
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for k, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            fan_in = torch.tensor(sizes, dtype=torch.float32)[:, None, None] if k == 0 else torch.full((G, 1, 1), a)
            w = torch.randn(G, a, b, generator=generator) * (gain / torch.sqrt(fan_in))
            if k == 0:
                w = w * mask[:, :, None]  # padded inputs get zero weights too
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(G, b)))
        if self.layer_norm:
            self.ln_weight = nn.ParameterList([nn.Parameter(torch.ones(G, self.hidden)) for _ in range(self.depth)])
            self.ln_bias = nn.ParameterList([nn.Parameter(torch.zeros(G, self.hidden)) for _ in range(self.depth)])

    @property
    def n_groups(self) -> int:
        return len(self.group_sizes)

    @property
    def n_features(self) -> int:
        return int(sum(self.group_sizes))

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, n_features]`` -> ``[B, G, d_max]`` (each group's features, zero-padded)."""
        if x.shape[-1] != self.n_features:
            raise ValueError(f"GroupMLPs: input has {x.shape[-1]} features; the groups need {self.n_features}")
        return x[..., self.index] * self.mask

    def forward_groups(self, xg: torch.Tensor) -> torch.Tensor:
        """``[B, G, d_max]`` (already split) -> ``[B, G, out_dim]``."""
        act = _ACTIVATIONS[self.activation]
        h = xg
        n = len(self.weights)
        for k in range(n):
            h = torch.einsum("bgi,gio->bgo", h, self.weights[k]) + self.biases[k]
            if k < n - 1:
                if self.layer_norm:
                    h = nn.functional.layer_norm(h, (self.hidden,)) * self.ln_weight[k] + self.ln_bias[k]
                h = act(h)
                if self.dropout and self.training:
                    h = nn.functional.dropout(h, self.dropout, training=True)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Per-group contributions ``f_g(x_g)``: ``[B, n_features]`` -> ``[B, G, out_dim]``."""
        return self.forward_groups(self.split(x))

    @torch.no_grad()
    def shape_curve(self, group: int, lo: float = 0.0, hi: float = 1.0, n: int = 200, *,
                    grid: Optional[torch.Tensor] = None) -> tuple[np.ndarray, np.ndarray]:
        """A univariate group's shape function on ``n`` points of ``[lo, hi]`` (or on ``grid``): ``(grid, [n, out])``."""
        if self.group_sizes[group] != 1:
            raise ValueError(f"shape_curve: group {group} has {self.group_sizes[group]} features; curves are for "
                             f"univariate groups")
        t = torch.linspace(lo, hi, n) if grid is None else torch.as_tensor(grid, dtype=torch.float32)
        xg = torch.zeros(len(t), self.n_groups, self.index.shape[1], dtype=self.weights[0].dtype)
        xg[:, group, 0] = t.to(xg.dtype)
        was = self.training
        self.eval()
        out = self.forward_groups(xg)[:, group, :]
        self.train(was)
        return t.numpy(), out.numpy()

    def export_numpy(self, group: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """One group's layers as float64 ``(W [in, out], b [out])`` pairs (inputs unpadded). Only without
        LayerNorm (a piecewise-linear MLP for exact analysis)."""
        if self.layer_norm:
            raise ValueError("export_numpy: a LayerNorm group is not a plain MLP")
        s = self.group_sizes[group]
        out = []
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            W = w[group].detach().double().numpy()
            out.append((W[:s] if k == 0 else W, b[group].detach().double().numpy()))
        return out


def numpy_mlp(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, activation: str = "relu") -> np.ndarray:
    """Evaluate exported layers on ``x`` (``[N, in]``), in float64: the reference for exact analyses and tests."""
    acts = {"relu": lambda h: np.maximum(h, 0.0), "tanh": np.tanh,
            "leaky_relu": lambda h: np.where(h > 0, h, 0.01 * h)}
    if activation not in acts:
        raise ValueError(f"numpy_mlp: activation {activation!r}; allowed: {', '.join(acts)}")
    h = np.asarray(x, dtype=float)
    for k, (W, b) in enumerate(layers):
        h = h @ W + b
        if k < len(layers) - 1:
            h = acts[activation](h)
    return h


def n_parameters(module: nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


__all__ = ["GroupMLPs", "numpy_mlp", "n_parameters"]
