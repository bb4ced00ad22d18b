"""Pairwise discrete MRFs: E(x) = sum_i theta_i(x_i) + sum_(i,j) theta_ij(x_i, x_j), minimised over labellings x.

Every node's label set is {0, ..., K_i - 1}. The tables are stored padded to K = max_i K_i so that solvers can work on
whole arrays: ``unary`` is (n, K) with ``+inf`` on the labels a node does not have, ``pair`` is (E, K, K) with
``pair[e, a, b] = theta_{u_e v_e}(a, b)`` for the edge ``edges[e] = (u_e, v_e)`` (padded entries are 0, never used).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


@dataclass
class PairwiseMRF:
    """A pairwise MRF in energy form (lower is better). ``name`` and ``meta`` are for bookkeeping only."""

    n: int
    K: np.ndarray  # (n,) label counts
    unary: np.ndarray  # (n, Kmax) energies, +inf where label >= K_i
    edges: np.ndarray  # (E, 2) int, u != v, no duplicate pairs
    pair: np.ndarray  # (E, Kmax, Kmax) energies
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.K = np.asarray(self.K, dtype=np.int64).reshape(-1)
        self.unary = np.asarray(self.unary, dtype=float)
        self.edges = np.asarray(self.edges, dtype=np.int64).reshape(-1, 2)
        self.pair = np.asarray(self.pair, dtype=float).reshape(len(self.edges), self.unary.shape[1],
                                                               self.unary.shape[1])
        if self.K.shape != (self.n,) or self.unary.shape[0] != self.n:
            raise ValueError(f"PairwiseMRF: K has shape {self.K.shape} and unary {self.unary.shape}; need n = {self.n}")
        if self.K.min() < 1 or self.K.max() != self.unary.shape[1]:
            raise ValueError("PairwiseMRF: label counts must be >= 1 and the tables padded to max(K)")
        if len(self.edges):
            if self.edges.min() < 0 or self.edges.max() >= self.n:
                raise ValueError("PairwiseMRF: an edge refers to a node outside 0..n-1")
            if np.any(self.edges[:, 0] == self.edges[:, 1]):
                raise ValueError("PairwiseMRF: self-loops are not pairwise factors")
            key = np.sort(self.edges, axis=1)
            if len(np.unique(key, axis=0)) != len(key):
                raise ValueError("PairwiseMRF: duplicate edges (merge their tables first)")
        mask = np.arange(self.Kmax)[None, :] < self.K[:, None]
        self.unary = np.where(mask, self.unary, np.inf)
        if not np.all(np.isfinite(self.unary[mask])) or not np.all(np.isfinite(self.pair_valid_entries())):
            raise ValueError("PairwiseMRF: energies of existing labels must be finite")

    # --- sizes and structure -------------------------------------------------------------------------------------
    @property
    def Kmax(self) -> int:
        return int(self.unary.shape[1])

    @property
    def n_edges(self) -> int:
        return int(len(self.edges))

    @property
    def label_mask(self) -> np.ndarray:
        return np.arange(self.Kmax)[None, :] < self.K[:, None]

    def pair_valid_entries(self) -> np.ndarray:
        if not len(self.edges):
            return np.zeros(0)
        a = np.arange(self.Kmax)
        m = (a[None, :, None] < self.K[self.edges[:, 0]][:, None, None]) & \
            (a[None, None, :] < self.K[self.edges[:, 1]][:, None, None])
        return self.pair[m]

    def degrees(self) -> np.ndarray:
        return np.bincount(self.edges.ravel(), minlength=self.n)

    def average_degree(self) -> float:
        return 2.0 * self.n_edges / self.n

    def adjacency(self) -> sp.csr_matrix:
        E = self.n_edges
        A = sp.coo_matrix((np.ones(2 * E), (np.r_[self.edges[:, 0], self.edges[:, 1]],
                                             np.r_[self.edges[:, 1], self.edges[:, 0]])), shape=(self.n, self.n))
        return A.tocsr()

    def directed(self):
        """Both orientations of every edge: (src, dst, table[x_src, x_dst], reverse index, edge index)."""
        E = self.n_edges
        src = np.r_[self.edges[:, 0], self.edges[:, 1]]
        dst = np.r_[self.edges[:, 1], self.edges[:, 0]]
        tab = np.concatenate([self.pair, self.pair.transpose(0, 2, 1)], axis=0)
        rev = np.r_[np.arange(E, 2 * E), np.arange(E)]
        eid = np.r_[np.arange(E), np.arange(E)]
        return src, dst, tab, rev, eid

    def to_networkx(self):
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(map(tuple, self.edges.tolist()))
        return g

    def is_connected(self) -> bool:
        from scipy.sparse.csgraph import connected_components

        return connected_components(self.adjacency(), directed=False)[0] == 1

    # --- energies ------------------------------------------------------------------------------------------------
    def check_labels(self, x) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (self.n,) or not np.issubdtype(x.dtype, np.integer):
            raise ValueError(f"labelling must be an integer array of shape ({self.n},), got {x.dtype} {x.shape}")
        if np.any(x < 0) or np.any(x >= self.K):
            raise ValueError("labelling has a label outside a node's label set")
        return x.astype(np.int64)

    def energy(self, x) -> float:
        """E(x) = sum_i theta_i(x_i) + sum_e theta_e(x_u, x_v)."""
        x = self.check_labels(x)
        e = self.unary[np.arange(self.n), x].sum()
        if self.n_edges:
            e += self.pair[np.arange(self.n_edges), x[self.edges[:, 0]], x[self.edges[:, 1]]].sum()
        return float(e)

    def energies(self, X) -> np.ndarray:
        """Energies of many labellings at once: X is (m, n) -> (m,)."""
        X = np.asarray(X, dtype=np.int64)
        e = self.unary[np.arange(self.n)[None, :], X].sum(axis=1)
        if self.n_edges:
            e = e + self.pair[np.arange(self.n_edges)[None, :], X[:, self.edges[:, 0]], X[:, self.edges[:, 1]]].sum(1)
        return e

    def copy(self, **changes) -> "PairwiseMRF":
        kw = dict(n=self.n, K=self.K.copy(), unary=self.unary.copy(), edges=self.edges.copy(), pair=self.pair.copy(),
                  name=self.name, meta=dict(self.meta))
        kw.update(changes)
        return PairwiseMRF(**kw)

    def __repr__(self) -> str:
        return (f"PairwiseMRF({self.name or 'unnamed'}: n={self.n}, |E|={self.n_edges}, "
                f"K={int(self.K.min())}..{self.Kmax}, mean degree {self.average_degree():.2f})")


def from_tables(n, K, unary_tables, edges, pair_tables, name="", meta=None) -> PairwiseMRF:
    """Build a padded PairwiseMRF from per-node (K_i,) and per-edge (K_u, K_v) tables."""
    K = np.asarray(K, dtype=np.int64)
    Km = int(K.max())
    U = np.full((n, Km), np.inf)
    for i, t in enumerate(unary_tables):
        U[i, :K[i]] = t
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    P = np.zeros((len(edges), Km, Km))
    for e, t in enumerate(pair_tables):
        u, v = edges[e]
        P[e, :K[u], :K[v]] = t
    return PairwiseMRF(n=n, K=K, unary=U, edges=edges, pair=P, name=name, meta=dict(meta or {}))
