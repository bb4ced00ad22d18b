"""The denoiser: an anisotropic edge-gated GNN (the DIFUSCO/COExpander backbone) in plain torch.

Layer l (h: node features, e: edge features, both of width H; j -> i runs over the directed edges)::

    ê_ij = C e_ij + A h_i + B h_j
    h_i <- h_i + ReLU(LN(U h_i + sum_j sigmoid(ê_ij) * V h_j / (sum_j sigmoid(ê_ij) + eps)))
    e_ij <- e_ij + ReLU(LN(ê_ij))

Message passing is an ``index_add_`` over the edge list of a block-diagonal batch (no torch-geometric needed).
The time-agnostic denoiser (NEXCO) has no time input; ``time_cond=True`` builds the time-conditioned twin,
which adds a projection of a sinusoidal embedding of t to every node and edge feature in each layer.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def sinusoidal(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of t in [0, 1] (shape (..., dim))."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    ang = 1000.0 * t[..., None] * freqs
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)


class GatedLayer(nn.Module):
    def __init__(self, hidden: int, time_cond: bool, edge_state: bool = True):
        super().__init__()
        self.hidden = hidden
        self.edge_state = edge_state
        self.UVAB = nn.Linear(hidden, 4 * hidden)  # U, V, A, B fused
        self.C = nn.Linear(hidden, hidden) if edge_state else None
        self.ln_h = nn.LayerNorm(hidden)
        self.ln_e = nn.LayerNorm(hidden) if edge_state else None
        self.t_h = nn.Linear(hidden, hidden) if time_cond else None
        self.t_e = nn.Linear(hidden, hidden) if time_cond else None

    def forward(self, h, e, src, dst, temb_node=None, temb_edge=None):
        if self.t_h is not None:
            h = h + self.t_h(temb_node)
            if e is not None:
                e = e + self.t_e(temb_edge)
        Uh, Vh, Ah, Bh = self.UVAB(h).split(self.hidden, dim=1)
        e_hat = Ah.index_select(0, dst) + Bh.index_select(0, src)
        if self.edge_state:
            e_hat = e_hat + self.C(e)
        gate = torch.sigmoid(e_hat)
        msg = gate * Vh.index_select(0, src)
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        norm = torch.zeros_like(h).index_add_(0, dst, gate)
        h = h + torch.relu(self.ln_h(Uh + agg / (norm + 1e-6)))
        if self.edge_state:
            e = e + torch.relu(self.ln_e(e_hat))
        return h, e


class EdgeGatedGNN(nn.Module):
    """``forward(x_nodes, src, dst, x_edges=None, t=None, node_graph=None)``.

    x_nodes (N, node_in); src/dst (2m,) directed edges (first the m edges u->v, then v->u); x_edges (2m, edge_in).
    ``task="mis"`` returns node logits (N,); ``task="tsp"`` returns edge logits (m,), the mean of both directions.
    ``edge_state=False`` (used for MIS, whose edges carry no features) computes the gates from the node states
    only and keeps no edge memory, which halves the cost on a CPU. ``t`` (n_graphs,) is used only by the
    time-conditioned twin (``node_graph`` maps nodes to graphs).
    """

    def __init__(self, node_in: int, edge_in: int, hidden: int = 64, layers: int = 4, time_cond: bool = False,
                 task: str = "mis", edge_state: bool | None = None):
        super().__init__()
        if task not in ("mis", "tsp"):
            raise ValueError(f"task {task!r}; allowed: 'mis', 'tsp'")
        edge_state = (task == "tsp") if edge_state is None else bool(edge_state)
        if task == "tsp" and not edge_state:
            raise ValueError("the TSP denoiser predicts edges and needs edge_state=True")
        self.config = dict(node_in=node_in, edge_in=edge_in, hidden=hidden, layers=layers, time_cond=time_cond,
                           task=task, edge_state=edge_state)
        self.task, self.time_cond, self.edge_state = task, time_cond, edge_state
        self.node_embed = nn.Linear(node_in, hidden)
        self.edge_embed = nn.Linear(edge_in, hidden) if (edge_state and edge_in > 0) else None
        self.edge_const = nn.Parameter(torch.zeros(hidden)) if (edge_state and edge_in == 0) else None
        self.time_embed = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()) if time_cond else None
        self.layers = nn.ModuleList([GatedLayer(hidden, time_cond, edge_state) for _ in range(layers)])
        self.out = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x_nodes, src, dst, x_edges=None, t=None, node_graph=None):
        h = self.node_embed(x_nodes)
        e = None
        if self.edge_embed is not None:
            e = self.edge_embed(x_edges)
        elif self.edge_const is not None:
            e = self.edge_const.expand(len(src), -1)
        temb_node = temb_edge = None
        if self.time_cond:
            if t is None or node_graph is None:
                raise ValueError("the time-conditioned denoiser needs t and node_graph")
            temb_node = self.time_embed(sinusoidal(t.to(h.dtype), h.shape[1]))[node_graph]
            temb_edge = temb_node.index_select(0, src) if e is not None else None
        for layer in self.layers:
            h, e = layer(h, e, src, dst, temb_node, temb_edge)
        if self.task == "mis":
            return self.out(h).squeeze(-1)
        el = self.out(e).squeeze(-1)
        m = len(src) // 2
        return 0.5 * (el[:m] + el[m:])

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
