"""Decoders on a trained denoiser, batched over instances, and the feasibility projections.

Every decoder starts from the fully masked state and repeats: one model call on the instances that still have
masked variables, a candidate set, a feasibility projection. They differ only in the candidate set (MIS, with
confidence max(p, 1 - p); TSP: see :func:`tsp_candidates`):

* ``gp``: global prediction, one call, then greedy decoding of the heatmap (all variables in order of p);
* ``lc``: local construction, the single most confident masked variable per call;
* ``schedule``: schedule-bound expansion (COExpander-like), ``rounds`` calls, round r commits the
  ceil(M / (rounds - r)) most confident of the M masked variables;
* ``adaptive``: NEXCO, every masked variable with confidence >= tau, at least k_min = max(1, ceil(kmin_frac * N)).

Projection, MIS (candidates in decreasing confidence): a candidate with p >= 0.5 becomes 1 if no neighbour is at 1
(its masked neighbours then become 0), one with p < 0.5 becomes 0. TSP: edges are only ever *expanded*: the
confidence of an edge is p, candidates are tried in decreasing p and become 1 if both endpoints have degree < 2 and
no sub-tour closes (LC is then the classical one-edge-per-step construction, about n calls); zeros come from the
constraints only (edges at saturated nodes or inside a path fragment). Hence every intermediate state is a feasible
partial solution.
Finally MIS adds any node left free (greedy in order of p, which only grows the set) and TSP joins the fragments
into a tour (greedy by length), optionally followed by 2-opt.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from lib.common import limit_threads

from .diffusion import MASK, model_logits, tsp_components, tsp_forced_zeros
from .instances import GraphBatch, dist_matrix

RULES = ("gp", "lc", "schedule", "adaptive")


@dataclass
class DecodeResult:
    """Per instance: the solution, the model calls and, for MIS, the set size; plus feasibility bookkeeping."""

    rule: str
    solutions: list  # MIS: 0/1 node vectors; TSP: tours
    calls: np.ndarray
    seconds: float  # wall-clock of the whole batched decode
    cpu_seconds: float = 0.0  # CPU time of this process for it (robust to other load on a shared machine)
    states_checked: int = 0
    states_infeasible: int = 0
    trajectory: list = field(default_factory=list)  # states of instance ``record`` after each call
    objective: np.ndarray | None = None


# --- candidate sets --------------------------------------------------------------------------------------------
def _rank_desc(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Rank within each group by decreasing key (ties: lower index first)."""
    order = np.lexsort((np.arange(len(key)), -key, group))
    g = group[order]
    start = np.searchsorted(g, g, side="left")
    rank = np.empty(len(key), dtype=np.int64)
    rank[order] = np.arange(len(key)) - start
    return rank


def candidate_set(rule: str, p: np.ndarray, masked: np.ndarray, owner: np.ndarray, n_groups: int,
                  calls_done: np.ndarray, *, tau: float = 0.9, kmin: np.ndarray | int = 1,
                  rounds: int = 4) -> np.ndarray:
    """Boolean mask of the variables to commit in this call (per instance ``owner``)."""
    conf = np.where(masked, np.maximum(p, 1 - p), -1.0)
    n_masked = np.bincount(owner, weights=masked, minlength=n_groups).astype(np.int64)
    rank = _rank_desc(owner, conf)
    if rule == "gp":
        return masked.copy()
    if rule == "lc":
        k = np.ones(n_groups, dtype=np.int64)
    elif rule == "schedule":
        left = np.maximum(rounds - calls_done, 1)
        k = np.ceil(n_masked / left).astype(np.int64)
    elif rule == "adaptive":
        k = np.broadcast_to(np.asarray(kmin, dtype=np.int64), (n_groups,))
        return masked & ((conf >= tau) | (rank < k[owner]))
    else:
        raise ValueError(f"decoding rule {rule!r}; allowed: {RULES}")
    return masked & (rank < k[owner])


# --- MIS projection --------------------------------------------------------------------------------------------
def greedy_add_mis(state: np.ndarray, want: np.ndarray, prio: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    """Add the ``want`` nodes in decreasing ``prio`` whenever no neighbour is (or has just become) 1; masked
    neighbours of added nodes become 0. In place.

    Sequential greedy by priority equals repeatedly adding every wanted node that beats all its still-wanted
    neighbours (the lexicographically-first independent set), which is what runs here, vectorised.
    """
    n = len(state)
    key = np.empty(n)
    key[np.lexsort((-np.arange(n), prio))] = np.arange(n)  # unique priorities, ties: lower index first
    blocked = np.zeros(n, dtype=bool)
    blocked[dst[state[src] == 1]] = True
    alive = want & ~blocked & (state != 1)
    while alive.any():
        e = alive[src] & alive[dst]
        best_nb = np.full(n, -1.0)
        np.maximum.at(best_nb, dst[e], key[src[e]])
        win = alive & (key > best_nb)
        state[win] = 1
        hit = np.zeros(n, dtype=bool)
        hit[dst[win[src]]] = True
        state[hit & (state == MASK)] = 0
        alive &= ~win & ~hit


def project_mis(state: np.ndarray, p: np.ndarray, cand: np.ndarray, src: np.ndarray, dst: np.ndarray,
                greedy_all: bool = False) -> None:
    """Commit the candidate nodes of a MIS state in place (see the module docstring).

    ``greedy_all``: every candidate is tried as a 1 in order of p (global-prediction greedy decoding).
    """
    want = cand & (state == MASK) & ((p >= 0.5) | greedy_all)
    greedy_add_mis(state, want, p, src, dst)
    state[cand & (state == MASK)] = 0  # p < 0.5 candidates, and GP's leftovers (all blocked)


def mis_feasible(state: np.ndarray, src: np.ndarray, dst: np.ndarray, owner_edge: np.ndarray, n_groups: int):
    """Per instance: whether no edge joins two nodes at 1."""
    bad = (state[src] == 1) & (state[dst] == 1)
    return np.bincount(owner_edge[bad], minlength=n_groups) == 0


def _sub(batch: GraphBatch, active: np.ndarray):
    """Node and edge index maps of the sub-batch of ``active`` graphs (and the sub-batch itself)."""
    node_sel = np.nonzero(active[batch.node_graph])[0]
    edge_sel = np.nonzero(active[batch.edge_graph])[0]
    new_id = np.full(batch.n_nodes, -1, dtype=np.int64)
    new_id[node_sel] = np.arange(len(node_sel))
    graphs = np.nonzero(active)[0]
    gmap = np.full(batch.n_graphs, -1, dtype=np.int64)
    gmap[graphs] = np.arange(len(graphs))
    sizes = batch.sizes()[graphs]
    m = np.diff(batch.edge_ptr)[graphs]
    sub = GraphBatch(len(graphs), gmap[batch.node_graph[node_sel]], np.concatenate([[0], np.cumsum(sizes)]),
                     new_id[batch.edges[edge_sel]], gmap[batch.edge_graph[edge_sel]],
                     np.concatenate([[0], np.cumsum(m)]),
                     None if batch.coords is None else batch.coords[node_sel])
    return sub, node_sel, edge_sel


@torch.no_grad()
def _probs(model, sub: GraphBatch, state: np.ndarray, problem: str, deg=None) -> np.ndarray:
    return torch.sigmoid(model_logits(model, sub, state, problem, deg)).double().numpy()


def decode_mis(model, batch: GraphBatch, rule: str = "adaptive", *, tau: float = 0.9, kmin_frac: float = 0.02,
               rounds: int = 4, fill: bool = True, record: int | None = None, threads: int | None = 1,
               max_calls: int | None = None) -> DecodeResult:
    """Decode every graph of ``batch`` with the rule's candidate sets; returns a :class:`DecodeResult`.

    ``threads``: torch/BLAS threads while decoding (None: leave the current setting).
    ``record``: index of one instance whose state after every call is kept (for the trajectory figure).
    """
    if rule not in RULES:
        raise ValueError(f"decoding rule {rule!r}; allowed: {RULES}")
    with (limit_threads(threads) if threads else nullcontext()):
        t0, c0 = time.perf_counter(), time.process_time()
        G = batch.n_graphs
        state = np.full(batch.n_nodes, MASK, dtype=np.int8)
        last_p = np.zeros(batch.n_nodes)
        calls = np.zeros(G, dtype=np.int64)
        kmin = np.maximum(1, np.ceil(kmin_frac * batch.sizes())).astype(np.int64)
        deg = batch.degree()
        res = DecodeResult(rule, [], calls, 0.0)
        if record is not None:
            res.trajectory.append(state[batch.node_ptr[record]:batch.node_ptr[record + 1]].copy())
        cap = max_calls or (batch.sizes().max() + 1)
        while True:
            masked_per = np.bincount(batch.node_graph, weights=(state == MASK), minlength=G)
            active = masked_per > 0
            if not active.any() or calls.max() >= cap:
                break
            sub, nsel, esel = _sub(batch, active)
            s_state = state[nsel]
            p = _probs(model, sub, s_state, "mis", deg[nsel])
            last_p[nsel] = p
            gidx = np.nonzero(active)[0]
            cand = candidate_set(rule, p, s_state == MASK, sub.node_graph, sub.n_graphs, calls[gidx], tau=tau,
                                 kmin=kmin[gidx], rounds=rounds)
            project_mis(s_state, p, cand, sub.src, sub.dst, greedy_all=(rule == "gp"))
            state[nsel] = s_state
            calls[gidx] += 1
            ok = mis_feasible(s_state, sub.src, sub.dst, np.concatenate([sub.edge_graph, sub.edge_graph]),
                              sub.n_graphs)
            res.states_checked += len(ok)
            res.states_infeasible += int((~ok).sum())
            if record is not None and active[record]:
                res.trajectory.append(state[batch.node_ptr[record]:batch.node_ptr[record + 1]].copy())
        state[state == MASK] = 0  # only reached through max_calls
        if fill:
            greedy_add_mis(state, state == 0, last_p, batch.src, batch.dst)
        res.seconds = time.perf_counter() - t0
        res.cpu_seconds = time.process_time() - c0
        res.solutions = [state[batch.node_ptr[g]:batch.node_ptr[g + 1]].copy() for g in range(G)]
        res.objective = np.array([s.sum() for s in res.solutions], dtype=float)
        final_ok = mis_feasible(state, batch.src, batch.dst, np.concatenate([batch.edge_graph, batch.edge_graph]), G)
        res.states_checked += G
        res.states_infeasible += int((~final_ok).sum())
        return res


# --- TSP -------------------------------------------------------------------------------------------------------
class _DSU:
    def __init__(self, n):
        self.p = list(range(n))

    def find(self, a):
        while self.p[a] != a:
            self.p[a] = self.p[self.p[a]]
            a = self.p[a]
        return a

    def union(self, a, b):
        self.p[self.find(a)] = self.find(b)


def edges_to_tour(n: int, edges: np.ndarray, scores: np.ndarray, P: np.ndarray,
                  committed: np.ndarray | None = None) -> np.ndarray:
    """A tour from ``committed`` edges (kept as they are) plus ``edges`` added greedily by decreasing ``scores``
    when feasible, then fragments joined greedily by length (shortest feasible endpoint pair first)."""
    deg = np.zeros(n, dtype=np.int64)
    dsu = _DSU(n)
    adj = [[] for _ in range(n)]
    count = 0

    def add(u, v):
        nonlocal count
        deg[u] += 1
        deg[v] += 1
        dsu.union(u, v)
        adj[u].append(v)
        adj[v].append(u)
        count += 1

    def ok(u, v):
        return u != v and deg[u] < 2 and deg[v] < 2 and (dsu.find(u) != dsu.find(v) or count == n - 1)

    if committed is not None:
        for u, v in committed:
            add(int(u), int(v))
    for k in np.argsort(-np.asarray(scores), kind="stable"):
        u, v = int(edges[k, 0]), int(edges[k, 1])
        if count < n and ok(u, v):
            add(u, v)
    if count < n:
        D = dist_matrix(P)
        iu = np.triu_indices(n, k=1)
        for k in np.argsort(D[iu], kind="stable"):
            u, v = int(iu[0][k]), int(iu[1][k])
            if count >= n:
                break
            if ok(u, v):
                add(u, v)
        if count < n:  # n <= 2 or a single remaining closure
            ends = [i for i in range(n) if deg[i] < 2]
            if len(ends) == 2:
                add(ends[0], ends[1])
    tour = [0]
    prev = -1
    while len(tour) < n:
        cur = tour[-1]
        nxt = adj[cur][0] if adj[cur][0] != prev else adj[cur][1]
        prev = cur
        tour.append(nxt)
    return np.array(tour)


def project_tsp_graph(n: int, edges: np.ndarray, state: np.ndarray, p: np.ndarray, cand: np.ndarray) -> None:
    """Commit one instance's candidate edges in place: in decreasing p, an edge becomes 1 when both endpoints have
    degree < 2 and it closes no sub-tour (except the edge that completes the tour); a candidate that has become
    infeasible is set to 0."""
    on = state == 1
    deg = np.bincount(edges[on].ravel(), minlength=n)
    dsu = _DSU(n)
    for u, v in edges[on]:
        dsu.union(int(u), int(v))
    count = int(on.sum())
    idx = np.nonzero(cand & (state == MASK))[0]
    for k in idx[np.argsort(-p[idx], kind="stable")]:
        u, v = int(edges[k, 0]), int(edges[k, 1])
        closes = dsu.find(u) == dsu.find(v)
        if deg[u] < 2 and deg[v] < 2 and (not closes or count == n - 1):
            state[k] = 1
            deg[u] += 1
            deg[v] += 1
            dsu.union(u, v)
            count += 1
    state[cand & (state == MASK)] = 0


def tsp_candidates(rule: str, p: np.ndarray, masked: np.ndarray, owner: np.ndarray, n_groups: int,
                   calls_done: np.ndarray, need: np.ndarray, *, tau: float, kmin: np.ndarray, rounds: int):
    """TSP candidate sets. An edge variable is *expanded* (set to 1), never guessed 0: its confidence is p, and
    zeros come only from the constraints (forced zeros). GP: every edge (greedy in p). LC: the most probable edge.
    Schedule-bound: round r tries the ceil(need / (D - r)) most probable edges, the last round everything
    (greedy in p), so exactly D calls. Adaptive: every edge with p >= tau, at least the k_min most probable."""
    score = np.where(masked, p, -1.0)
    rank = _rank_desc(owner, score)
    if rule == "gp":
        return masked.copy()
    if rule == "lc":
        return masked & (rank < 1)
    if rule == "schedule":
        left = rounds - calls_done
        k = np.ceil(need / np.maximum(left, 1)).astype(np.int64)
        k = np.where(left <= 1, np.iinfo(np.int64).max, np.maximum(k, 1))
        return masked & (rank < k[owner])
    if rule == "adaptive":
        return masked & ((p >= tau) | (rank < kmin[owner]))
    raise ValueError(f"decoding rule {rule!r}; allowed: {RULES}")


def tsp_partial_feasible(batch: GraphBatch, state: np.ndarray) -> np.ndarray:
    """Per instance: committed edges have degree <= 2 everywhere and form paths (or the one full tour)."""
    on = state == 1
    deg = np.bincount(batch.edges[on].ravel(), minlength=batch.n_nodes)
    deg_ok = np.bincount(batch.node_graph[deg > 2], minlength=batch.n_graphs) == 0
    comp = tsp_components(batch, state)
    n_comp = np.array([len(np.unique(comp[batch.node_ptr[g]:batch.node_ptr[g + 1]])) for g in range(batch.n_graphs)])
    m = np.bincount(batch.edge_graph, weights=on, minlength=batch.n_graphs)
    n = batch.sizes()
    forest = m == n - n_comp
    full_tour = (m == n) & (n_comp == 1) & deg_ok
    return deg_ok & (forest | full_tour)


def decode_tsp(model, batch: GraphBatch, rule: str = "adaptive", *, tau: float = 0.9, kmin_frac: float = 0.02,
               rounds: int = 4, two_opt_after: bool = False, record: int | None = None,
               threads: int | None = 1) -> DecodeResult:
    """Decode every TSP instance of ``batch`` (edge variables on its sparse graph); tours in ``solutions``."""
    from .solvers import two_opt

    if rule not in RULES:
        raise ValueError(f"decoding rule {rule!r}; allowed: {RULES}")
    with limit_threads(threads or torch.get_num_threads()):
        t0, c0 = time.perf_counter(), time.process_time()
        G = batch.n_graphs
        state = np.full(batch.n_edges, MASK, dtype=np.int8)
        last_p = np.zeros(batch.n_edges)
        calls = np.zeros(G, dtype=np.int64)
        n_var = np.diff(batch.edge_ptr)
        kmin = np.maximum(1, np.ceil(kmin_frac * n_var)).astype(np.int64)
        res = DecodeResult(rule, [], calls, 0.0)
        if record is not None:
            res.trajectory.append(state[batch.edge_ptr[record]:batch.edge_ptr[record + 1]].copy())
        while True:
            active = np.bincount(batch.edge_graph, weights=(state == MASK), minlength=G) > 0
            if not active.any():
                break
            sub, nsel, esel = _sub(batch, active)
            s_state = state[esel]
            p = _probs(model, sub, s_state, "tsp")
            last_p[esel] = p
            gidx = np.nonzero(active)[0]
            need = sub.sizes() - np.bincount(sub.edge_graph, weights=(s_state == 1), minlength=sub.n_graphs)
            cand = tsp_candidates(rule, p, s_state == MASK, sub.edge_graph, sub.n_graphs, calls[gidx], need,
                                  tau=tau, kmin=kmin[gidx], rounds=rounds)
            for j in range(sub.n_graphs):
                a, b = sub.edge_ptr[j], sub.edge_ptr[j + 1]
                st = s_state[a:b]
                project_tsp_graph(int(sub.sizes()[j]), sub.edges[a:b] - sub.node_ptr[j], st, p[a:b], cand[a:b])
                s_state[a:b] = st
            s_state[tsp_forced_zeros(sub, s_state)] = 0
            state[esel] = s_state
            calls[gidx] += 1
            ok = tsp_partial_feasible(sub, s_state)
            res.states_checked += len(ok)
            res.states_infeasible += int((~ok).sum())
            if record is not None and active[record]:
                res.trajectory.append(state[batch.edge_ptr[record]:batch.edge_ptr[record + 1]].copy())
        tours = []
        for g in range(G):
            a, b = batch.edge_ptr[g], batch.edge_ptr[g + 1]
            P = batch.coords[batch.node_ptr[g]:batch.node_ptr[g + 1]]
            e = batch.edges[a:b] - batch.node_ptr[g]
            tour = edges_to_tour(len(P), e, np.zeros(0), P, committed=e[state[a:b] == 1])
            if two_opt_after:
                tour, _ = two_opt(tour, P)
            tours.append(tour)
        res.seconds = time.perf_counter() - t0
        res.cpu_seconds = time.process_time() - c0
        res.solutions = tours
        from .instances import tour_length

        res.objective = np.array([tour_length(t, batch.coords[batch.node_ptr[g]:batch.node_ptr[g + 1]])
                                  for g, t in enumerate(tours)])
        return res
