"""Spanning trees of the MRF's graph: effective resistances, Wilson's uniform sampler, exact inference on many trees.

* :func:`effective_resistance` gives rho_e = P_{T ~ UST}(e in T) = R_eff(u, v) (Kirchhoff), from the pseudo-inverse of
  the Laplacian, computed as (L + J/n)^{-1} (as in the authors' ``get_prob_mat``).
* :func:`wilson_ust` samples a uniform spanning tree by loop-erased random walks (Wilson 1996) and returns it as a
  parent array (the root has parent -1).
* :class:`Forest` stacks T trees of the same graph and runs exact two-pass message passing on all of them at once,
  level by level (all nodes at one depth, in every tree, in one numpy operation): min-sum gives min-marginals,
  sum-product at inverse temperature beta gives (log-)marginals.
"""
from __future__ import annotations

import numpy as np

from .model import PairwiseMRF


def laplacian(n: int, edges: np.ndarray) -> np.ndarray:
    L = np.zeros((n, n))
    u, v = edges[:, 0], edges[:, 1]
    np.add.at(L, (u, v), -1.0)
    np.add.at(L, (v, u), -1.0)
    L[np.diag_indices(n)] = -L.sum(axis=1)
    return L


def effective_resistance(n: int, edges: np.ndarray) -> np.ndarray:
    """R_eff across every edge: the UST edge-appearance probabilities (they sum to n - #components).

    Per connected component, R_eff(u, v) = (e_u - e_v)^T L^+ (e_u - e_v) with L^+ from (L + J/n_c)^{-1}.
    """
    from scipy.sparse.csgraph import connected_components
    import scipy.sparse as sp

    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    r = np.zeros(len(edges))
    if not len(edges):
        return r
    A = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    ncomp, lab = connected_components(A, directed=False)
    for c in range(ncomp):
        nodes = np.flatnonzero(lab == c)
        sel = lab[edges[:, 0]] == c
        if not sel.any():
            continue
        loc = np.full(n, -1)
        loc[nodes] = np.arange(len(nodes))
        e = loc[edges[sel]]
        Lp = np.linalg.inv(laplacian(len(nodes), e) + 1.0 / len(nodes))
        u, v = e[:, 0], e[:, 1]
        r[sel] = Lp[u, u] + Lp[v, v] - 2.0 * Lp[u, v]
    return np.clip(r, 1e-12, 1.0)


def neighbour_lists(n: int, edges: np.ndarray) -> list[list[int]]:
    nb: list[list[int]] = [[] for _ in range(n)]
    for u, v in np.asarray(edges).tolist():
        nb[u].append(v)
        nb[v].append(u)
    return nb


def wilson_ust(nbrs: list[list[int]], rng: np.random.Generator, root: int | None = None) -> np.ndarray:
    """One uniform spanning tree (a spanning forest, one tree per connected component) as a parent array.

    Wilson's algorithm: the root starts the tree; for every other vertex in turn, walk at random (uniform neighbour)
    until the tree is hit, remembering only the last exit from each vertex (this erases the loops), then add the
    path. The result is uniform over spanning trees whatever the root and the order of the vertices. On a graph with
    several components every component gets its own (random) root; roots have parent -1.
    """
    n = len(nbrs)
    comp = _components(nbrs)
    roots = []
    for c in range(max(comp) + 1):
        members = [i for i in range(n) if comp[i] == c]
        roots.append(members[int(rng.integers(len(members)))])
    if root is not None:
        roots[comp[root]] = int(root)
    in_tree = [False] * n
    nxt = [-1] * n
    for r in roots:
        in_tree[r] = True
    buf = rng.random(4096).tolist()
    k = 0
    for start in rng.permutation(n).tolist():
        u = start
        while not in_tree[u]:
            if k == len(buf):
                buf = rng.random(4096).tolist()
                k = 0
            nb = nbrs[u]
            nxt[u] = nb[int(buf[k] * len(nb))]
            k += 1
            u = nxt[u]
        u = start
        while not in_tree[u]:
            in_tree[u] = True
            u = nxt[u]
    parent = np.array(nxt, dtype=np.int64)
    parent[roots] = -1
    return parent


def _components(nbrs: list[list[int]]) -> list[int]:
    n = len(nbrs)
    comp = [-1] * n
    c = 0
    for s in range(n):
        if comp[s] >= 0:
            continue
        comp[s] = c
        stack = [s]
        while stack:
            u = stack.pop()
            for v in nbrs[u]:
                if comp[v] < 0:
                    comp[v] = c
                    stack.append(v)
        c += 1
    return comp


def sample_trees(mrf: PairwiseMRF, n_trees: int, rng: np.random.Generator) -> list[np.ndarray]:
    nbrs = neighbour_lists(mrf.n, mrf.edges)
    return [wilson_ust(nbrs, rng) for _ in range(n_trees)]


def centered_trees(trees: list[np.ndarray]) -> list[np.ndarray]:
    """The trees rerooted at their centres, as :class:`Forest` would (pass them with ``recenter=False``): done once
    when several solvers share the same sampled trees."""
    out = []
    for p in trees:
        p = np.asarray(p, dtype=np.int64)
        out.append(reroot(p, tree_center(p)) if len(p) > 2 and int((p < 0).sum()) == 1 else p)
    return out


def tree_edges(parent: np.ndarray) -> np.ndarray:
    """(n - 1, 2) edges (child, parent) of a parent array."""
    c = np.flatnonzero(parent >= 0)
    return np.column_stack([c, parent[c]])


def edge_index(mrf: PairwiseMRF):
    """A lookup (u, v) -> edge id for either orientation."""
    import scipy.sparse as sp

    E = mrf.n_edges
    ids = np.arange(1, E + 1, dtype=np.int64)
    M = sp.coo_matrix((np.r_[ids, ids], (np.r_[mrf.edges[:, 0], mrf.edges[:, 1]],
                                          np.r_[mrf.edges[:, 1], mrf.edges[:, 0]])), shape=(mrf.n, mrf.n)).tocsr()

    def lookup(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.asarray(M[a, b]).ravel().astype(np.int64) - 1
        if np.any(out < 0):
            raise ValueError("a tree edge is not an edge of the graph")
        return out

    return lookup


def _softmin(a: np.ndarray, axis: int, beta: float) -> np.ndarray:
    """-1/beta log sum exp(-beta a) along ``axis`` (a stable, low-overhead logsumexp)."""
    m = a.min(axis=axis, keepdims=True)
    finite = np.isfinite(m)
    if finite.all():  # the common case: no fully forbidden state, no masking needed
        return np.squeeze(m - np.log(np.exp(-beta * (a - m)).sum(axis=axis, keepdims=True)) / beta, axis=axis)
    with np.errstate(invalid="ignore"):
        z = np.exp(-beta * (a - m))
    z = np.where(finite, z, 0.0)
    out = m - np.log(z.sum(axis=axis, keepdims=True)) / beta
    return np.squeeze(np.where(finite, out, m), axis=axis)


def reroot(parent: np.ndarray, new_root: int) -> np.ndarray:
    """The same tree with its edges pointing towards ``new_root``."""
    p = parent.copy()
    prev, u = -1, int(new_root)
    while u != -1:
        nxt = int(parent[u])
        p[u] = prev
        prev, u = u, nxt
    return p


def tree_center(parent: np.ndarray) -> int:
    """A centre of the tree (middle of a longest path): rooting there halves the number of levels."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order

    n = len(parent)
    c = np.flatnonzero(parent >= 0)
    A = coo_matrix((np.ones(len(c)), (c, parent[c])), shape=(n, n)).tocsr()

    def farthest(src):
        order, pred = breadth_first_order(A, src, directed=False, return_predecessors=True)
        return int(order[-1]), pred

    a, _ = farthest(int(c[0]) if len(c) else 0)
    b, pred = farthest(a)
    path = [b]
    while path[-1] != a:
        path.append(int(pred[path[-1]]))
    return path[len(path) // 2]


class Forest:
    """T spanning trees of ``mrf`` with their (possibly reweighted) pairwise tables, ready for batched passes.

    ``edge_scale`` multiplies each graph edge's table (1 / rho_e for the effective-resistance correction).
    """

    def __init__(self, mrf: PairwiseMRF, parents: list[np.ndarray], edge_scale: np.ndarray | None = None,
                 recenter: bool = True):
        self.mrf = mrf
        n, T = mrf.n, len(parents)
        self.T, self.n = T, n
        P = np.stack([np.asarray(p, dtype=np.int64) for p in parents])  # (T, n)
        if P.shape != (T, n) or np.any((P < 0).sum(axis=1) < 1):
            raise ValueError("Forest: every parent array needs n entries and at least one root (-1)")
        self.n_roots = int((P[0] < 0).sum())
        if n > 2 and recenter and self.n_roots == 1:  # fewer levels, same exact marginals
            P = np.stack([reroot(p, tree_center(p)) for p in P])
        offs = (np.arange(T) * n)[:, None]
        flat_parent = np.where(P >= 0, P + offs, -1).ravel()
        self.parent = flat_parent
        child = np.flatnonzero(flat_parent >= 0)
        ci, pi = child % n, flat_parent[child] % n
        eid = edge_index(mrf)(ci, pi)
        scale = np.ones(mrf.n_edges) if edge_scale is None else np.asarray(edge_scale, dtype=float)
        tab = mrf.pair[eid] * scale[eid][:, None, None]
        flip = mrf.edges[eid, 0] != ci  # stored as [x_u, x_v]; we need [x_child, x_parent]
        tab[flip] = tab[flip].transpose(0, 2, 1)
        self.W = np.zeros((T * n, mrf.Kmax, mrf.Kmax))
        self.W[child] = tab
        self.tree_edge_ids = eid.reshape(T, -1)
        # depth of every node, then the levels (non-root nodes grouped by depth)
        depth = np.zeros(T * n, dtype=np.int64)
        has_p = flat_parent >= 0
        for _ in range(n):
            new = np.where(has_p, depth[np.maximum(flat_parent, 0)] + 1, 0)
            if np.array_equal(new, depth):
                break
            depth = new
        else:
            raise ValueError("Forest: a parent array has a cycle")
        self.depth = depth
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, depth.max() + 2))
        self.levels = [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]

    def marginals(self, unary: np.ndarray, kind: str = "min", beta: float = 1.0) -> np.ndarray:
        """Exact (soft-)min-marginals of every tree: (T, n, K).

        ``unary`` is (n, K) (the same node energies in every tree) or (T, n, K). ``kind="min"``: min-sum, M_i(a) =
        min over tree labellings with x_i = a of the tree energy. ``kind="soft"``: sum-product at inverse temperature
        beta in the energy domain, M_i(a) = -1/beta log sum_{x: x_i = a} exp(-beta E_tree(x)), so that the tree
        marginal is p_i(a) proportional to exp(-beta M_i(a)). Messages are not normalised, so both are exact (energies
        stay of the order of the tree's total energy; the soft-min is computed with logsumexp).
        """
        T, n, K = self.T, self.n, self.mrf.Kmax
        U = np.broadcast_to(unary, (T, n, K)).reshape(T * n, K)
        if getattr(self, "_plan_cache", None) is None:
            self._plan_cache = _plan(self.levels, self.parent, self.W)
        return _two_pass(self._plan_cache, U, kind, beta).reshape(T, n, K)

    def tree_energy(self, unary: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Energy of labelling x in every tree (unary + its reweighted tree edges): (T,)."""
        T, n = self.T, self.n
        U = np.broadcast_to(unary, (T, n, unary.shape[-1]))
        e = U[:, np.arange(n), x].sum(axis=1)
        child = np.flatnonzero(self.parent >= 0)
        xc, xp = x[child % n], x[self.parent[child] % n]
        pe = self.W[child, xc, xp]
        return e + np.bincount(child // n, weights=pe, minlength=T)


def _plan(levels, par: np.ndarray, W: np.ndarray) -> list:
    """Per level, what does not depend on the node terms: the level's nodes, their parents, their tables, and the
    parents as distinct ids with each child's position among them (for per-parent sums)."""
    plan = []
    for idx in levels:
        p = par[idx]
        uniq, inv = np.unique(p, return_inverse=True)
        plan.append((idx, p, W[idx], uniq, inv.ravel()))
    return plan


def _two_pass(plan: list, U: np.ndarray, kind: str, beta: float) -> np.ndarray:
    """The exact upward and downward passes over flattened forests: (rows, K) node terms in, (soft-)min-marginals
    out. Rows are independent except through their parent pointers, so a union of forests gives each forest's
    own numbers."""
    if kind == "min":
        red = lambda a, ax: a.min(axis=ax)  # noqa: E731
    elif kind == "soft":
        red = lambda a, ax: _softmin(a, ax, beta)  # noqa: E731
    else:
        raise ValueError(f"parameter 'kind' got {kind!r}; allowed: 'min', 'soft'")
    rows, K = U.shape
    inbox = np.zeros((rows, K))
    up = np.zeros((rows, K))
    for idx, _, Wl, uniq, inv in reversed(plan):
        h = U[idx] + inbox[idx]
        msg = red(h[:, :, None] + Wl, 1)
        up[idx] = msg
        # every child of a parent sits in this level, so the parent's inbox is still 0: sum its children in level
        # order (bincount adds sequentially from 0, as np.add.at would, so the sums are the same to the bit)
        for k in range(K):
            inbox[uniq, k] = np.bincount(inv, weights=msg[:, k], minlength=len(uniq))
    down = np.zeros((rows, K))
    for idx, p, Wl, _, _ in plan:
        hp = U[p] + inbox[p] + down[p] - up[idx]
        down[idx] = red(hp[:, None, :] + Wl, 2)
    return U + inbox + down


class ForestUnion:
    """Several :class:`Forest` objects (of different MRFs with the same number of labels) as one: the same
    levels, parents and tables with row offsets, so one batched pass serves them all."""

    def __init__(self, forests: list[Forest]):
        if not forests:
            raise ValueError("ForestUnion needs at least one forest")
        K = {f.mrf.Kmax for f in forests}
        if len(K) != 1:
            raise ValueError(f"ForestUnion: the forests have different label counts {sorted(K)}")
        self.forests, self.K = list(forests), K.pop()
        sizes = [f.T * f.n for f in forests]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        if len(forests) == 1:
            f = forests[0]
            self.parent, self.W, self.levels = f.parent, f.W, f.levels
            self.plan = _plan(self.levels, self.parent, self.W)
            return
        self.parent = np.concatenate([np.where(f.parent >= 0, f.parent + o, -1)
                                      for f, o in zip(forests, self.offsets)])
        self.W = np.concatenate([f.W for f in forests])
        depth = max(len(f.levels) for f in forests)
        self.levels = [np.concatenate([f.levels[d] + o for f, o in zip(forests, self.offsets) if d < len(f.levels)])
                       for d in range(depth)]
        self.plan = _plan(self.levels, self.parent, self.W)

    def marginals(self, unaries: list[np.ndarray], kind: str = "min", beta: float = 1.0) -> list[np.ndarray]:
        """:meth:`Forest.marginals` of every forest, with node terms ``unaries[i]`` ((n_i, K) each)."""
        U = np.concatenate([np.broadcast_to(u, (f.T, f.n, self.K)).reshape(f.T * f.n, self.K)
                            for u, f in zip(unaries, self.forests)])
        M = _two_pass(self.plan, U, kind, beta)
        return [M[a:b].reshape(f.T, f.n, self.K) for a, b, f in zip(self.offsets[:-1], self.offsets[1:], self.forests)]


def edge_appearance(mrf: PairwiseMRF, rng: np.random.Generator | None = None, exact_max_n: int = 3000,
                    n_samples: int = 200) -> np.ndarray:
    """rho_e: exact effective resistances up to ``exact_max_n`` nodes (O(n^3)), else the edge frequencies over
    ``n_samples`` Wilson trees (floored at 1 / n_samples so that 1 / rho stays finite)."""
    if mrf.n <= exact_max_n:
        return effective_resistance(mrf.n, mrf.edges)
    rng = rng if rng is not None else np.random.default_rng(0)
    lookup = edge_index(mrf)
    counts = np.zeros(mrf.n_edges)
    for p in sample_trees(mrf, n_samples, rng):
        te = tree_edges(p)
        counts[lookup(te[:, 0], te[:, 1])] += 1
    return np.maximum(counts / n_samples, 1.0 / n_samples)
