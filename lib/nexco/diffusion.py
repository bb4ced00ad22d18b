"""Masked diffusion between fully masked and ground-truth solutions: states, masking schedules, training.

A state is an int8 vector over the problem's variables with values 0, 1 or ``MASK`` (= 2): MIS has one variable per
node, TSP one per undirected edge of the sparse k-NN graph. The forward process masks a ground-truth solution
``x0`` at "time" t in [0, 1] (t = 1: everything masked):

* ``"iid"`` (option A, plain MDLM): every variable is masked independently with probability t;
* ``"expansion"`` (option B, solution-expansion training): a random order over the variables with x0 = 1 is drawn,
  the first ceil((1 - t) |x0|) of them are revealed, together with the zeros their constraints force (MIS: the
  neighbours of revealed nodes; TSP: edges at nodes of degree 2 and edges that would close a sub-tour); the rest
  is masked. Every such state is a feasible partial solution, like the states the decoder visits.
* ``"full"``: everything masked (the one-shot global-prediction heatmap model).

The denoiser f(G, x_t) gives p_i = P(x0_i = 1 | x_t, G) and is trained with binary cross-entropy on the masked
variables only (uniform weight over t, so the time-agnostic model loses nothing to the weighting).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from lib.common import limit_threads
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .gnn import EdgeGatedGNN
from .instances import GraphBatch

MASK = 2
MODES = ("iid", "expansion", "full")


# --- features --------------------------------------------------------------------------------------------------
def mis_features(batch: GraphBatch, state: np.ndarray, deg: np.ndarray | None = None) -> torch.Tensor:
    """Node inputs for MIS: one-hot of the state {0, 1, M} and degree / 10."""
    deg = batch.degree() if deg is None else deg
    x = np.zeros((batch.n_nodes, 4), dtype=np.float32)
    x[np.arange(batch.n_nodes), state] = 1.0
    x[:, 3] = deg / 10.0
    return torch.from_numpy(x)


def tsp_features(batch: GraphBatch, state: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Node inputs (coordinates) and directed-edge inputs (length, one-hot of the edge state) for TSP."""
    xn = torch.from_numpy(batch.coords.astype(np.float32))
    u, v = batch.edges[:, 0], batch.edges[:, 1]
    d = np.linalg.norm(batch.coords[u] - batch.coords[v], axis=1).astype(np.float32)
    xe = np.zeros((batch.n_edges, 4), dtype=np.float32)
    xe[:, 0] = d * 5.0
    xe[np.arange(batch.n_edges), 1 + state] = 1.0
    xe = np.concatenate([xe, xe])
    return xn, torch.from_numpy(xe)


def masked_fraction(batch: GraphBatch, state: np.ndarray, problem: str) -> np.ndarray:
    """Per graph, the share of its variables that are masked (the 'time' the twin is given)."""
    if problem == "mis":
        owner, counts = batch.node_graph, batch.sizes()
    else:
        owner, counts = batch.edge_graph, np.diff(batch.edge_ptr)
    m = np.bincount(owner, weights=(state == MASK), minlength=batch.n_graphs)
    return m / np.maximum(counts, 1)


def model_logits(model: EdgeGatedGNN, batch: GraphBatch, state: np.ndarray, problem: str,
                 deg: np.ndarray | None = None) -> torch.Tensor:
    """Logits of x0 = 1 for every variable of the batch in ``state``."""
    src = torch.from_numpy(batch.src)
    dst = torch.from_numpy(batch.dst)
    t = ng = None
    if model.time_cond:
        t = torch.from_numpy(masked_fraction(batch, state, problem).astype(np.float32))
        ng = torch.from_numpy(batch.node_graph)
    if problem == "mis":
        return model(mis_features(batch, state, deg), src, dst, None, t, ng)
    xn, xe = tsp_features(batch, state)
    return model(xn, src, dst, xe, t, ng)


# --- masking ---------------------------------------------------------------------------------------------------
def _rank_within(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Rank (0 = smallest key) of each element within its group."""
    order = np.lexsort((key, group))
    g_sorted = group[order]
    start = np.searchsorted(g_sorted, g_sorted, side="left")
    rank = np.empty(len(group), dtype=np.int64)
    rank[order] = np.arange(len(group)) - start
    return rank


def mis_forced_zeros(batch: GraphBatch, state: np.ndarray) -> np.ndarray:
    """Masked nodes that have a neighbour at 1 (they must be 0)."""
    s, d = batch.src, batch.dst
    hit = np.zeros(batch.n_nodes, dtype=bool)
    hit[d[state[s] == 1]] = True
    return hit & (state == MASK)


def tsp_components(batch: GraphBatch, state: np.ndarray) -> np.ndarray:
    on = state == 1
    e = batch.edges[on]
    A = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(batch.n_nodes, batch.n_nodes))
    return connected_components(A, directed=False)[1]


def tsp_forced_zeros(batch: GraphBatch, state: np.ndarray) -> np.ndarray:
    """Masked edges that can no longer be in a tour: an endpoint has degree 2, or both endpoints are in one path
    fragment (closing a sub-tour), except the edge that closes a Hamiltonian path into the tour."""
    on = state == 1
    deg = np.bincount(batch.edges[on].ravel(), minlength=batch.n_nodes)
    comp = tsp_components(batch, state)
    u, v = batch.edges[:, 0], batch.edges[:, 1]
    n_on = np.bincount(batch.edge_graph, weights=on, minlength=batch.n_graphs)
    closing = n_on[batch.edge_graph] == batch.sizes()[batch.edge_graph] - 1
    bad = (deg[u] >= 2) | (deg[v] >= 2) | ((comp[u] == comp[v]) & ~closing)
    return bad & (state == MASK)


def mask_states(batch: GraphBatch, x0: np.ndarray, t: np.ndarray, mode: str, rng: np.random.Generator,
                problem: str = "mis") -> np.ndarray:
    """Noised states x_t of the ground truth ``x0`` at per-graph times ``t`` (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"masking mode {mode!r}; allowed: {MODES}")
    owner = batch.node_graph if problem == "mis" else batch.edge_graph
    tv = t[owner]
    x0 = x0.astype(np.int8)
    if mode == "full":
        return np.full(len(x0), MASK, dtype=np.int8)
    if mode == "iid":
        return np.where(rng.random(len(x0)) < tv, MASK, x0).astype(np.int8)
    ones = x0 == 1
    k = np.ceil((1.0 - t) * np.bincount(owner, weights=ones, minlength=batch.n_graphs)).astype(np.int64)
    key = np.where(ones, rng.random(len(x0)), 2.0)  # ones in random order, zeros last
    rank = _rank_within(owner, key)
    state = np.full(len(x0), MASK, dtype=np.int8)
    state[ones & (rank < k[owner])] = 1
    forced = mis_forced_zeros(batch, state) if problem == "mis" else tsp_forced_zeros(batch, state)
    state[forced & (x0 == 0)] = 0
    return state


def masking_keeps_ground_truth(x0: np.ndarray, state: np.ndarray) -> bool:
    """Every revealed variable equals the ground truth."""
    rev = state != MASK
    return bool(np.all(state[rev] == x0[rev]))


# --- training --------------------------------------------------------------------------------------------------
@dataclass
class TrainData:
    """Training graphs as per-graph pieces (so batches are cheap to assemble)."""

    problem: str
    n_nodes: list
    edges: list  # per graph (m, 2), local ids
    labels: list  # per graph: node (MIS) or edge (TSP) 0/1 labels
    coords: list | None = None

    def __len__(self):
        return len(self.n_nodes)

    def batch(self, idx) -> tuple[GraphBatch, np.ndarray]:
        b = GraphBatch.from_edge_lists([self.n_nodes[i] for i in idx], [self.edges[i] for i in idx],
                                       None if self.coords is None else [self.coords[i] for i in idx])
        return b, np.concatenate([self.labels[i] for i in idx])


@dataclass
class TrainResult:
    model: EdgeGatedGNN
    losses: list = field(default_factory=list)
    seconds: float = 0.0
    steps: int = 0
    loaded: bool = False  # True: read from the shipped checkpoint (``seconds`` is then the time it took to train)


def cosine_lr(lr: float, step: int, steps: int) -> float:
    """The learning rate of step ``step`` (0-based): cosine decay from ``lr`` to 10% of it over ``steps``."""
    return lr * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * min(step, steps) / steps)))


def train_denoiser(data: TrainData, *, mode: str = "expansion", time_cond: bool = False, hidden: int = 64,
                   layers: int = 4, steps: int = 400, batch_size: int = 32, lr: float = 2e-3, seed: int = 0,
                   threads: int | None = 1, edge_state: bool | None = None,
                   stop_after: int | None = None) -> TrainResult:
    """Train a denoiser on ``data`` for a fixed number of steps (Adam, gradient norm clipped to 1, cosine decay to
    10% of ``lr``).

    mode: "expansion" (option B), "iid" (option A) or "full" (the one-shot heatmap model, t = 1 always).
    ``stop_after``: stop after this many steps of the ``steps``-step schedule (a prefix of the same run).
    Deterministic for a given seed and thread count.
    """
    from lib.common.optim import Adam

    if mode not in MODES:
        raise ValueError(f"parameter 'mode' got {mode!r}; allowed: {MODES}")
    with limit_threads(threads or torch.get_num_threads()):
        rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        problem = data.problem
        model = EdgeGatedGNN(4 if problem == "mis" else 2, 0 if problem == "mis" else 4, hidden, layers, time_cond,
                             task=problem, edge_state=edge_state)
        opt = Adam(model.parameters(), lr=lr, max_grad_norm=1.0)
        res = TrainResult(model)
        t0 = time.perf_counter()
        model.train()
        run = steps if stop_after is None else min(steps, int(stop_after))
        done = 0  # optimiser steps taken (a draw with nothing masked is skipped and does not advance the schedule)
        for step in range(run):
            idx = rng.choice(len(data), size=min(batch_size, len(data)), replace=False)
            batch, x0 = data.batch(idx)
            t = np.ones(batch.n_graphs) if mode == "full" else rng.random(batch.n_graphs)
            state = mask_states(batch, x0, t, mode, rng, problem)
            masked = torch.from_numpy(state == MASK)
            if not bool(masked.any()):
                continue
            logits = model_logits(model, batch, state, problem)
            target = torch.from_numpy(x0.astype(np.float32))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[masked], target[masked])
            opt.zero_grad()
            loss.backward()
            opt.lr = cosine_lr(lr, done, steps)
            opt.step()
            done += 1
            res.losses.append(float(loss.detach()))
        res.seconds = time.perf_counter() - t0
        res.steps = run
        model.eval()
        return res
