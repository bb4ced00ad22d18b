"""Problem instances: Erdős-Rényi graphs for MIS, uniform points for TSP, and their compact storage.

A MIS data set is a dict with ``n`` (nodes per graph), ``p``, ``adj_bits`` (each graph's upper-triangle
adjacency, bit-packed, one row per graph), ``labels`` (an optimal independent set per graph, bit-packed),
``opt`` (its size) and ``optimal`` (whether CP-SAT proved it). A TSP data set holds ``coords`` (quantised to a
1/``COORD_SCALE`` grid, uint16), ``tours`` (a reference tour per instance), ``length`` and ``solver``.

Graph batches (block-diagonal, the form every model and decoder takes) are built by :class:`GraphBatch`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

COORD_SCALE = 10000  # TSP coordinates live on the grid {0, 1/COORD_SCALE, ..., 1}


# --- Erdős-Rényi graphs ----------------------------------------------------------------------------------------
def er_graph(n: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """One G(n, p) graph as a symmetric boolean adjacency matrix (no self-loops)."""
    upper = np.triu(rng.random((n, n)) < p, k=1)
    return upper | upper.T


def er_graphs(n: int, p: float, count: int, seed: int) -> list[np.ndarray]:
    """``count`` G(n, p) graphs from one seeded stream."""
    rng = np.random.default_rng(seed)
    return [er_graph(n, p, rng) for _ in range(count)]


def pack_adjacency(adjs: list[np.ndarray]) -> np.ndarray:
    """Bit-pack the strict upper triangles of equally sized adjacency matrices: (count, ceil(n(n-1)/16))."""
    n = adjs[0].shape[0]
    iu = np.triu_indices(n, k=1)
    return np.stack([np.packbits(a[iu]) for a in adjs])


def unpack_adjacency(bits: np.ndarray, n: int) -> list[np.ndarray]:
    iu = np.triu_indices(n, k=1)
    m = len(iu[0])
    out = []
    for row in bits:
        a = np.zeros((n, n), dtype=bool)
        a[iu] = np.unpackbits(row, count=m).astype(bool)
        out.append(a | a.T)
    return out


def edges_of(adj: np.ndarray) -> np.ndarray:
    """Undirected edge list (m, 2) with u < v."""
    u, v = np.nonzero(np.triu(adj, k=1))
    return np.stack([u, v], axis=1)


def is_independent(adj: np.ndarray, x) -> bool:
    """Whether the nodes with ``x == 1`` are pairwise non-adjacent (masked entries, 2, are ignored)."""
    s = np.asarray(x) == 1
    return not bool(adj[np.ix_(s, s)].any())


# --- TSP -------------------------------------------------------------------------------------------------------
def tsp_uniform(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` instances of ``n`` points uniform on the unit square, quantised to the storage grid: (count, n, 2)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, COORD_SCALE + 1, size=(count, n, 2))
    return q.astype(np.float64) / COORD_SCALE


def dist_matrix(P: np.ndarray) -> np.ndarray:
    return np.linalg.norm(P[:, None, :] - P[None, :, :], axis=-1)


def tour_length(tour, P: np.ndarray) -> float:
    t = np.asarray(tour)
    return float(np.linalg.norm(P[t] - P[np.roll(t, -1)], axis=1).sum())


def is_tour(tour, n: int) -> bool:
    t = np.asarray(tour)
    return len(t) == n and np.array_equal(np.sort(t), np.arange(n))


def knn_edges(P: np.ndarray, k: int) -> np.ndarray:
    """Undirected edges (u < v) of the symmetrised k-nearest-neighbour graph of the points ``P``."""
    n = len(P)
    k = min(k, n - 1)
    D = dist_matrix(P)
    np.fill_diagonal(D, np.inf)
    nn = np.argsort(D, axis=1, kind="stable")[:, :k]
    u = np.repeat(np.arange(n), k)
    v = nn.ravel()
    e = np.unique(np.stack([np.minimum(u, v), np.maximum(u, v)], axis=1), axis=0)
    return e


def tour_edge_labels(tour, edges: np.ndarray) -> np.ndarray:
    """1 for the undirected edges of ``edges`` that the closed ``tour`` uses, else 0."""
    t = np.asarray(tour)
    a, b = t, np.roll(t, -1)
    used = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    return np.array([(int(u), int(v)) in used for u, v in edges], dtype=np.int8)


# --- storage ---------------------------------------------------------------------------------------------------
def save_npz(path: Path, **arrays) -> None:
    """Like ``np.savez_compressed``, but byte-for-byte reproducible (fixed zip timestamps, sorted keys), so the
    same arrays always give the same file and the same sha256."""
    import io
    import zipfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)


def load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


# --- batches ---------------------------------------------------------------------------------------------------
@dataclass
class GraphBatch:
    """Block-diagonal batch of graphs. Nodes are concatenated; ``node_graph[i]`` is node i's graph.

    ``edges`` (m, 2) are undirected variable edges (u < v, global node ids) with ``edge_graph``; message passing
    uses both directions (``src``, ``dst`` of length 2m: first u->v for every edge, then v->u).
    ``coords`` is set for TSP batches.
    """

    n_graphs: int
    node_graph: np.ndarray
    node_ptr: np.ndarray  # (n_graphs + 1,) offsets of each graph's nodes
    edges: np.ndarray
    edge_graph: np.ndarray
    edge_ptr: np.ndarray  # (n_graphs + 1,) offsets of each graph's edges
    coords: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.node_graph)

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    @property
    def src(self) -> np.ndarray:
        return np.concatenate([self.edges[:, 0], self.edges[:, 1]])

    @property
    def dst(self) -> np.ndarray:
        return np.concatenate([self.edges[:, 1], self.edges[:, 0]])

    def degree(self) -> np.ndarray:
        return np.bincount(self.edges.ravel(), minlength=self.n_nodes)

    def sizes(self) -> np.ndarray:
        return np.diff(self.node_ptr)

    @staticmethod
    def from_edge_lists(n_per_graph, edge_lists, coords=None) -> "GraphBatch":
        n_per_graph = np.asarray(n_per_graph, dtype=np.int64)
        node_ptr = np.concatenate([[0], np.cumsum(n_per_graph)])
        node_graph = np.repeat(np.arange(len(n_per_graph)), n_per_graph)
        m = np.array([len(e) for e in edge_lists], dtype=np.int64)
        edge_ptr = np.concatenate([[0], np.cumsum(m)])
        edges = np.concatenate([np.asarray(e, dtype=np.int64).reshape(-1, 2) + node_ptr[g]
                                for g, e in enumerate(edge_lists)]) if len(edge_lists) else np.zeros((0, 2), int)
        edge_graph = np.repeat(np.arange(len(edge_lists)), m)
        c = None if coords is None else np.concatenate([np.asarray(x, dtype=np.float64) for x in coords])
        return GraphBatch(len(n_per_graph), node_graph, node_ptr, edges.astype(np.int64), edge_graph, edge_ptr, c)

    @staticmethod
    def from_adjacency(adjs) -> "GraphBatch":
        return GraphBatch.from_edge_lists([a.shape[0] for a in adjs], [edges_of(a) for a in adjs])
