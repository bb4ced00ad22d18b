"""Classical solvers and references: CP-SAT and brute force for MIS, min-degree greedy, CP-SAT and OR-Tools routing
for TSP, 2-opt."""
from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from .instances import COORD_SCALE, dist_matrix


# --- MIS -------------------------------------------------------------------------------------------------------
def mis_cpsat(adj: np.ndarray, time_limit: float = 30.0, workers: int = 1, deterministic_time: float | None = None):
    """Maximum independent set by OR-Tools CP-SAT (one at-most-one constraint per maximal clique).

    Returns ``(x, size, status)`` with ``x`` a 0/1 vector and status ``"OPTIMAL"``, ``"FEASIBLE"`` or ``"UNKNOWN"``
    (no solution within the limit: ``x`` is all zeros). ``deterministic_time`` (CP-SAT's own work units) makes the
    limit reproducible.
    """
    from ortools.sat.python import cp_model

    n = adj.shape[0]
    m = cp_model.CpModel()
    x = [m.NewBoolVar(f"x{i}") for i in range(n)]
    g = nx.from_numpy_array(adj.astype(np.int8))
    for c in nx.find_cliques(g):
        if len(c) >= 2:
            m.AddAtMostOne([x[i] for i in c])
    m.Maximize(sum(x))
    s = cp_model.CpSolver()
    s.parameters.num_workers = workers
    s.parameters.max_time_in_seconds = float(time_limit)
    if deterministic_time is not None:
        s.parameters.max_deterministic_time = float(deterministic_time)
    s.parameters.random_seed = 0
    st = s.Solve(m)
    name = s.StatusName(st)
    if name in ("OPTIMAL", "FEASIBLE"):
        sol = np.array([s.Value(v) for v in x], dtype=np.int8)
        return sol, int(sol.sum()), name
    return np.zeros(n, dtype=np.int8), 0, "UNKNOWN"


def mis_brute_force(adj: np.ndarray) -> int:
    """Size of a maximum independent set by enumeration (n <= ~18)."""
    n = adj.shape[0]
    nbr = [int(sum(1 << j for j in np.nonzero(adj[i])[0])) for i in range(n)]
    best = 0
    for mask in range(1 << n):
        if bin(mask).count("1") <= best:
            continue
        ok = True
        m = mask
        while m:
            i = (m & -m).bit_length() - 1
            if nbr[i] & mask:
                ok = False
                break
            m &= m - 1
        if ok:
            best = bin(mask).count("1")
    return best


def mis_greedy(adj: np.ndarray) -> np.ndarray:
    """Min-degree greedy: repeatedly add a node of least degree in the remaining graph, delete it and its
    neighbours (ties: lowest index)."""
    n = adj.shape[0]
    alive = np.ones(n, dtype=bool)
    x = np.zeros(n, dtype=np.int8)
    A = adj.astype(np.int32)
    while alive.any():
        deg = A[:, alive].sum(axis=1)
        deg[~alive] = n + 1
        i = int(np.argmin(deg))
        x[i] = 1
        alive[i] = False
        alive[adj[i]] = False
    return x


# --- TSP -------------------------------------------------------------------------------------------------------
def _int_dist(P: np.ndarray) -> np.ndarray:
    return np.rint(dist_matrix(P) * COORD_SCALE).astype(np.int64)


def tsp_cpsat(P: np.ndarray, time_limit: float = 60.0, workers: int = 1):
    """TSP by CP-SAT ``AddCircuit`` on the integer (x COORD_SCALE, rounded) distances.

    Returns ``(tour, status)``; the tour starts at node 0.
    """
    from ortools.sat.python import cp_model

    n = len(P)
    D = _int_dist(P)
    m = cp_model.CpModel()
    lit = {}
    for i in range(n):
        for j in range(n):
            if i != j:
                lit[i, j] = m.NewBoolVar(f"a{i}_{j}")
    m.AddCircuit([(i, j, v) for (i, j), v in lit.items()])
    m.Minimize(sum(int(D[i, j]) * v for (i, j), v in lit.items()))
    s = cp_model.CpSolver()
    s.parameters.num_workers = workers
    s.parameters.max_time_in_seconds = float(time_limit)
    s.parameters.random_seed = 0
    st = s.Solve(m)
    nxt = {i: j for (i, j), v in lit.items() if s.Value(v)}
    tour = [0]
    while len(tour) < n:
        tour.append(nxt[tour[-1]])
    return np.array(tour), s.StatusName(st)


def tsp_routing(P: np.ndarray, solution_limit: int = 1000):
    """TSP by OR-Tools routing: path-cheapest-arc start, guided local search, stopped after ``solution_limit``
    solutions (a work limit, not a time limit, so the result is deterministic). Returns the tour from node 0."""
    from ortools.constraint_solver import pywrapcp, routing_enums_pb2

    n = len(P)
    D = _int_dist(P)
    man = pywrapcp.RoutingIndexManager(n, 1, 0)
    r = pywrapcp.RoutingModel(man)
    cb = r.RegisterTransitMatrix(D.tolist())
    r.SetArcCostEvaluatorOfAllVehicles(cb)
    prm = pywrapcp.DefaultRoutingSearchParameters()
    prm.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    prm.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    prm.solution_limit = int(solution_limit)
    sol = r.SolveWithParameters(prm)
    i = r.Start(0)
    tour = []
    while not r.IsEnd(i):
        tour.append(man.IndexToNode(i))
        i = sol.Value(r.NextVar(i))
    return np.array(tour)


def tsp_brute_force(P: np.ndarray) -> float:
    """Optimal tour length by enumeration (n <= 9)."""
    n = len(P)
    D = dist_matrix(P)
    best = np.inf
    for perm in itertools.permutations(range(1, n)):
        t = (0,) + perm
        best = min(best, sum(D[t[i], t[(i + 1) % n]] for i in range(n)))
    return float(best)


def two_opt(tour, P: np.ndarray, max_iter: int = 1000) -> tuple[np.ndarray, int]:
    """First-improvement-free 2-opt: apply the best improving segment reversal until none improves.

    Returns ``(tour, n_moves)``; vectorised over all pairs per move.
    """
    t = np.asarray(tour).copy()
    n = len(t)
    D = dist_matrix(P)
    moves = 0
    for _ in range(max_iter):
        a, b = t, np.roll(t, -1)
        # gain of reversing t[i+1..j]: d(a_i,b_i) + d(a_j,b_j) - d(a_i,a_j) - d(b_i,b_j)
        gain = (D[a, b][:, None] + D[a, b][None, :] - D[a[:, None], a[None, :]] - D[b[:, None], b[None, :]])
        iu = np.triu(np.ones((n, n), dtype=bool), k=2)
        iu[0, n - 1] = False
        gain = np.where(iu, gain, 0.0)
        k = int(np.argmax(gain))
        i, j = divmod(k, n)
        if gain[i, j] <= 1e-10:
            break
        t[i + 1:j + 1] = t[i + 1:j + 1][::-1].copy()
        moves += 1
    return t, moves


def tsp_greedy_edge(P: np.ndarray) -> np.ndarray:
    """Greedy-edge construction (shortest feasible edges first), the classical heatmap-free reference."""
    from .decode import edges_to_tour

    n = len(P)
    D = dist_matrix(P)
    iu = np.triu_indices(n, k=1)
    order = np.argsort(D[iu], kind="stable")
    edges = np.stack([iu[0][order], iu[1][order]], axis=1)
    return edges_to_tour(n, edges, np.ones(len(edges)), P)
