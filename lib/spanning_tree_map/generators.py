"""Seeded instance families: Potts grids, UAI-2008-style Ising grids, Erdos-Renyi Potts graphs, PCI-like cell networks.

Every generator takes a ``numpy.random.Generator`` and returns a connected :class:`PairwiseMRF`.
Potts families share theta_i ~ U[0, 1]^K and theta_ij(a, b) = c * w_ij * 1[a != b] with
    attractive: w_ij ~ U[0, 1]      (neighbours want equal labels)
    mixed:      w_ij ~ U[-1, 1]     (some edges want different labels: frustration around cycles)
and a third family without Potts structure,
    frustrated: theta_ij(a, b) = c * g_ab, g_ab ~ U[-1, 1] per entry (a random preferred label pair per edge).
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from .model import PairwiseMRF

KINDS = ("attractive", "mixed", "frustrated")


def _relabel_largest_component(g: nx.Graph) -> nx.Graph:
    comp = max(nx.connected_components(g), key=len)
    return nx.convert_node_labels_to_integers(g.subgraph(comp).copy(), ordering="sorted")


def _edges_of(g: nx.Graph) -> np.ndarray:
    e = np.array(sorted((min(u, v), max(u, v)) for u, v in g.edges()), dtype=np.int64)
    return e.reshape(-1, 2)


def potts_tables(edges: np.ndarray, K: int, coupling: float, kind: str, rng: np.random.Generator) -> np.ndarray:
    """(E, K, K) pairwise energies of the Potts families above."""
    if kind not in KINDS:
        raise ValueError(f"parameter 'kind' got {kind!r}; allowed: {', '.join(map(repr, KINDS))}")
    E = len(edges)
    if kind == "frustrated":
        return coupling * rng.uniform(-1.0, 1.0, size=(E, K, K))
    lo = 0.0 if kind == "attractive" else -1.0
    w = rng.uniform(lo, 1.0, size=E)
    diff = 1.0 - np.eye(K)
    return coupling * w[:, None, None] * diff[None]


def potts_on_graph(g: nx.Graph, K: int, coupling: float, kind: str, rng: np.random.Generator, name: str = "",
                   **meta) -> PairwiseMRF:
    g = _relabel_largest_component(g)
    n = g.number_of_nodes()
    edges = _edges_of(g)
    unary = rng.uniform(0.0, 1.0, size=(n, K))
    pair = potts_tables(edges, K, coupling, kind, rng)
    return PairwiseMRF(n=n, K=np.full(n, K), unary=unary, edges=edges, pair=pair, name=name,
                       meta=dict(kind=kind, coupling=float(coupling), K=K, **meta))


def grid_potts(h: int, w: int, K: int, coupling: float, kind: str, rng: np.random.Generator) -> PairwiseMRF:
    """An h x w 4-neighbour grid; node (r, c) has index r * w + c."""
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(h, w), ordering="sorted")
    return potts_on_graph(g, K, coupling, kind, rng, name=f"grid{h}x{w}-{kind}-c{coupling:g}", family="grid",
                          shape=(h, w))


def er_potts(n: int, avg_degree: float, K: int, coupling: float, kind: str, rng: np.random.Generator) -> PairwiseMRF:
    """G(n, p) with p = avg_degree / (n - 1), largest connected component."""
    p = min(1.0, avg_degree / (n - 1))
    g = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)))
    return potts_on_graph(g, K, coupling, kind, rng, name=f"ER{n}-d{avg_degree:g}-{kind}-c{coupling:g}",
                          family="er", target_degree=float(avg_degree))


def ising_grid(h: int, w: int, sigma: float, rng: np.random.Generator) -> PairwiseMRF:
    """UAI-2008-style Ising grid: E(s) = -sum h_i s_i - sum J_ij s_i s_j, s in {-1, +1} (label 0 -> -1).

    Fields h_i ~ U[-1, 1], couplings J_ij ~ U[-sigma, sigma] (a spin glass: mixed signs, frustrated cycles).
    """
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(h, w), ordering="sorted")
    edges = _edges_of(g)
    n = h * w
    s = np.array([-1.0, 1.0])
    hf = rng.uniform(-1.0, 1.0, size=n)
    J = rng.uniform(-sigma, sigma, size=len(edges))
    unary = -hf[:, None] * s[None, :]
    pair = -J[:, None, None] * np.outer(s, s)[None]
    return PairwiseMRF(n=n, K=np.full(n, 2), unary=unary, edges=edges, pair=pair,
                       name=f"ising{h}x{w}-s{sigma:g}", meta=dict(family="ising", sigma=float(sigma), shape=(h, w)))


def pci_like(n: int, K: int, rng: np.random.Generator, avg_degree: float = 6.0, layout: str = "geometric",
             hex_shape: tuple[int, int] = (5, 8)) -> PairwiseMRF:
    """A physical-cell-identity (PCI) planning proxy on a cell-adjacency graph.

    Cells are points of a random geometric graph in the unit square (radius set for ``avg_degree``; ``n`` points) or
    the hexagonal cells of a regular cellular layout (``layout="hex"``: cell adjacency is the triangular lattice, six
    neighbours per interior cell, ``hex_shape`` rows and columns; ``n`` is ignored). Neighbouring cells i, j with interference weight w_ij ~ U[0.5, 1.5] pay
    theta_ij(a, b) = w_ij * (1[a = b] + 0.5 * 1[a mod 3 = b mod 3]) (collision and mod-3 confusion); each cell has a
    site cost theta_i(a) ~ U[0, 0.5] per PCI (a stand-in for planning preferences).
    """
    if layout == "geometric":
        r = np.sqrt(avg_degree / (np.pi * n))
        g = nx.random_geometric_graph(n, r, seed=int(rng.integers(2**31)))
    elif layout == "hex":
        g = nx.triangular_lattice_graph(*hex_shape)
    else:
        raise ValueError(f"parameter 'layout' got {layout!r}; allowed: 'geometric', 'hex'")
    g = _relabel_largest_component(g)
    m = g.number_of_nodes()
    edges = _edges_of(g)
    a = np.arange(K)
    base = (a[:, None] == a[None, :]).astype(float) + 0.5 * ((a[:, None] % 3) == (a[None, :] % 3))
    w = rng.uniform(0.5, 1.5, size=len(edges))
    pair = w[:, None, None] * base[None]
    unary = rng.uniform(0.0, 0.5, size=(m, K))
    return PairwiseMRF(n=m, K=np.full(m, K), unary=unary, edges=edges, pair=pair, name=f"pci{m}-K{K}-{layout}",
                       meta=dict(family="pci", K=K, layout=layout))


def random_tree_mrf(n: int, K: int, rng: np.random.Generator, scale: float = 1.0) -> PairwiseMRF:
    """A random labelled tree (random parents) with arbitrary random tables: for tests of exact tree inference."""
    parents = np.array([rng.integers(i) for i in range(1, n)], dtype=np.int64)
    edges = np.column_stack([parents, np.arange(1, n)])
    return PairwiseMRF(n=n, K=np.full(n, K), unary=rng.normal(size=(n, K)) * scale, edges=edges,
                       pair=rng.normal(size=(n - 1, K, K)) * scale, name=f"tree{n}")
