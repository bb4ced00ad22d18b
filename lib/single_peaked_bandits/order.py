"""Order extraction (the paper's Extract-Order) and the projection onto single-peaked matrices (Lemma 6).

Extract-Order(P_hat, eps): for each user sort the arms by ``P_hat`` in descending order; wherever two consecutive
sorted values differ by more than ``2 eps`` the set of arms above the gap must be *consecutive* in the SP order
(if ``|P_hat - P| <= eps`` those arms are truly better than the rest, hence an upper level set of an SP row, hence an
interval). An order in which every collected set is consecutive is a solution of a consecutive-ones (C1P) problem.
The paper solves it with a PQ-tree (linear time); here the same instance is solved exactly with an OR-Tools CP-SAT
model: integer positions ``pos_k`` in ``0..K-1``, all different, and for every set ``S`` the span
``max pos_S - min pos_S = |S| - 1``. It returns a valid order whenever one exists; only the worst-case time differs.

Sets are handled as bit masks (bit ``k`` set: arm ``k`` in the set), ``K <= 62``.
"""
from __future__ import annotations

import itertools

import numpy as np


def _bits(K: int) -> np.ndarray:
    return np.left_shift(np.int64(1), np.arange(K, dtype=np.int64))


def gap_structure(P_hat: np.ndarray):
    """Every candidate set of Extract-Order with its gap: ``(gaps, masks)``, flat arrays over (user, size).

    ``masks[n]`` holds the top ``l`` arms of a user's row (``2 <= l <= K - 1``) and ``gaps[n]`` the drop in value just
    below them; Extract-Order at ``eps`` keeps the sets whose gap exceeds ``2 eps``.
    """
    P_hat = np.asarray(P_hat, dtype=float)
    U, K = P_hat.shape
    if K > 62:
        raise ValueError(f"order extraction handles at most 62 arms (got {K})")
    if K < 3:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    order = np.argsort(-P_hat, axis=1, kind="stable")
    vals = np.take_along_axis(P_hat, order, axis=1)
    gaps = vals[:, :-1] - vals[:, 1:]  # gaps[u, l]: the drop after the top l + 1 arms
    prefix = np.cumsum(_bits(K)[order], axis=1)  # prefix[u, l]: mask of the top l + 1 arms (distinct bits)
    return gaps[:, 1:K - 1].ravel(), prefix[:, 1:K - 1].ravel()


def consecutive_masks(P_hat: np.ndarray, eps: float, structure=None) -> np.ndarray:
    """The distinct sets (sizes ``2 .. K - 1``) above a gap ``> 2 eps`` in some user's sorted row, as bit masks."""
    gaps, masks = gap_structure(P_hat) if structure is None else structure
    return np.unique(masks[gaps > 2.0 * eps])


def masks_to_sets(masks) -> list[frozenset]:
    return [frozenset(int(k) for k in range(62) if (int(m) >> k) & 1) for m in masks]


def sets_to_masks(sets) -> np.ndarray:
    return np.unique(np.array([sum(1 << int(k) for k in s) for s in sets], dtype=np.int64)) if len(sets) else \
        np.zeros(0, dtype=np.int64)


def consecutive_sets(P_hat: np.ndarray, eps: float) -> list[frozenset]:
    """:func:`consecutive_masks` as a list of frozensets of arms."""
    return masks_to_sets(consecutive_masks(P_hat, eps))


def _members(masks: np.ndarray, K: int) -> np.ndarray:
    return (np.asarray(masks, dtype=np.int64)[:, None] >> np.arange(K, dtype=np.int64)) & 1 == 1


def satisfies(order, masks, K: int | None = None) -> bool:
    """Whether every set (bit masks, or an iterable of arm sets) is consecutive in ``order`` (all arms once)."""
    order = np.asarray(order)
    K = len(order) if K is None else K
    masks = masks if isinstance(masks, np.ndarray) else sets_to_masks(list(masks))
    if len(masks) == 0:
        return True
    mem = _members(masks, K)
    pos = np.empty(K, dtype=np.int64)
    pos[order] = np.arange(K)
    lo = np.where(mem, pos, K).min(axis=1)
    hi = np.where(mem, pos, -1).max(axis=1)
    size = mem.sum(axis=1)
    return bool(np.all((hi - lo == size - 1) | (size <= 1)))


def _c1p_brute(masks, K: int):
    """Every permutation at once (``K <= 8``): the first in lexicographic order that satisfies all sets."""
    mem = _members(masks, K)
    size = mem.sum(axis=1)
    perms = np.array(list(itertools.permutations(range(K))), dtype=np.int64)  # (K!, K)
    pos = np.empty_like(perms)
    np.put_along_axis(pos, perms, np.arange(K)[None, :], axis=1)  # pos[p, k]: position of arm k
    ok = np.ones(len(perms), dtype=bool)
    for members, sz in zip(mem, size):
        p = pos[:, members]
        ok &= p.max(axis=1) - p.min(axis=1) == sz - 1
        if not ok.any():
            return None
    return [int(k) for k in perms[np.argmax(ok)]]


def _c1p_cpsat(masks, K: int, time_limit: float = 60.0):
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    pos = [model.NewIntVar(0, K - 1, f"pos{k}") for k in range(K)]
    model.AddAllDifferent(pos)
    for n, members in enumerate(_members(masks, K)):
        idx = np.flatnonzero(members)
        lo = model.NewIntVar(0, K - 1, f"lo{n}")
        hi = model.NewIntVar(0, K - 1, f"hi{n}")
        model.AddMinEquality(lo, [pos[k] for k in idx])
        model.AddMaxEquality(hi, [pos[k] for k in idx])
        model.Add(hi - lo == len(idx) - 1)
    model.Add(pos[0] < pos[1])  # an order and its reverse are equivalent: keep one
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.random_seed = 0
    status = solver.Solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        p = [solver.Value(v) for v in pos]
        return [int(k) for k in np.argsort(p)]
    if status == cp_model.INFEASIBLE:
        return None
    raise RuntimeError(f"CP-SAT stopped without an answer on a C1P instance (status {solver.StatusName(status)})")


class _NodeLimit(Exception):
    pass


def _c1p_dfs(masks, K: int, node_limit: int | None = None):
    """Exact depth-first search over orders, left to right, with memoised dead states.

    Placing arms left to right, every set that is *open* (started, not finished) must continue with the next arm,
    so the candidates for the next position are the intersection of the open sets' unplaced arms; a state is the
    pair (placed arms, last arm), and states that failed once are never re-entered. Exponential in the worst case,
    usually a few dozen states on Extract-Order's families. Raises ``_NodeLimit`` after ``node_limit`` states.
    """
    masks = [int(m) for m in masks]
    full = (1 << K) - 1
    contain = [[m for m in masks if (m >> x) & 1] for x in range(K)]
    weight = [len(c) for c in contain]
    dead: set = set()
    order: list = []
    nodes = 0

    def rec(placed: int, last: int) -> bool:
        nonlocal nodes
        if placed == full:
            return True
        if (placed, last) in dead:
            return False
        nodes += 1
        if node_limit is not None and nodes > node_limit:
            raise _NodeLimit
        free = full & ~placed
        cand = free
        if last >= 0:
            for S in contain[last]:
                rest = S & free
                if rest:
                    cand &= rest
                    if not cand:
                        break
        for x in sorted((x for x in range(K) if (cand >> x) & 1), key=weight.__getitem__):
            order.append(x)
            if rec(placed | (1 << x), x):
                return True
            order.pop()
        dead.add((placed, last))
        return False

    return list(order) if rec(0, -1) else None


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _insert(blocks: list, S: int) -> bool:
    """Add set ``S`` to a component's arrangement (a sequence of disjoint blocks); ``S`` overlaps a placed set.

    ``S`` must cover a contiguous run of blocks, full inside; the two boundary blocks may be split, and arms of
    ``S`` that are new to the component go at the end of the run, which must then be an end of the sequence.
    Returns False when no arrangement exists.
    """
    W = 0
    for b in blocks:
        W |= b
    new = S & ~W
    inter = [b & S for b in blocks]
    idx = [i for i, x in enumerate(inter) if x]
    a, z = idx[0], idx[-1]
    if z - a + 1 != len(idx):
        return False
    full = [inter[i] == blocks[i] for i in range(len(blocks))]
    if not all(full[a + 1:z]):
        return False
    t = len(blocks)
    if not new:
        if a == z:  # S inside one block: impossible for a set that overlaps a placed one
            raise AssertionError("C1P: a set inside one block reached the overlap-component insertion")
        right = [] if full[z] else [blocks[z] & ~S]
        blocks[z:z + 1] = [inter[z]] + right
        left = [] if full[a] else [blocks[a] & ~S]
        blocks[a:a + 1] = left + [inter[a]]
        return True
    suffix = z == t - 1 and (a == z or full[z])
    prefix = a == 0 and (a == z or full[a]) and t > 1
    if suffix:
        left = [] if full[a] else [blocks[a] & ~S]
        blocks[a:a + 1] = left + [inter[a]]
        blocks.append(new)
        return True
    if prefix:
        right = [] if full[z] else [blocks[z] & ~S]
        blocks[z:z + 1] = [inter[z]] + right
        blocks.insert(0, new)
        return True
    return False


def _c1p_overlap(masks, K: int):
    """Exact polynomial C1P test by overlap components (the structure a PQ-tree encodes).

    Sets that overlap (intersect, neither containing the other) form components; within a component, adding the
    sets in breadth-first order of the overlap graph fixes the arrangement of its blocks up to reversal (a PQ-tree's
    Q-node), so a failed insertion proves that no order exists. Different components nest: a component's union lies
    inside one block of a larger component or is disjoint from it, so the blocks are emitted recursively (a P-node's
    free order for the rest). ``O(m^2 + m K)`` for ``m`` sets.
    """
    masks = [int(x) for x in masks]
    m = len(masks)
    arr = np.array(masks, dtype=np.int64)
    both = arr[:, None] & arr[None, :]
    ov = (both != 0) & (both != arr[:, None]) & (both != arr[None, :])
    comps = []
    seen = np.zeros(m, dtype=bool)
    for i in range(m):
        if seen[i]:
            continue
        seen[i] = True
        queue, head = [i], 0
        blocks = [masks[i]]
        while head < len(queue):  # breadth-first over the overlap graph: each set overlaps an earlier one
            for j in np.flatnonzero(ov[queue[head]] & ~seen):
                seen[j] = True
                queue.append(int(j))
                if not _insert(blocks, masks[j]):
                    return None
            head += 1
        union = 0
        for b in blocks:
            union |= b
        comps.append((union, blocks))
    # nest components: larger unions first (a one-set component before a larger component of the same union)
    comps.sort(key=lambda c: (-_popcount(c[0]), len(c[1])))
    children: dict = {("root", 0): []}
    placed = []  # (component index, block index, block mask)
    for ci, (union, blocks) in enumerate(comps):
        parent, best = ("root", 0), None
        for (cj, bj, bmask) in placed:
            if union & ~bmask == 0:
                size = _popcount(bmask)
                if best is None or size <= best:
                    parent, best = (cj, bj), size
        children[parent].append(ci)
        for bj, b in enumerate(blocks):
            placed.append((ci, bj, b))
            children[(ci, bj)] = []

    def emit(region: int, kids: list) -> list:
        out, covered = [], 0
        for ci in kids:
            union, blocks = comps[ci]
            covered |= union
            for bj, b in enumerate(blocks):
                out.extend(emit(b, children[(ci, bj)]))
        out.extend(k for k in range(K) if (region >> k) & 1 and not (covered >> k) & 1)
        return out

    return emit((1 << K) - 1, children[("root", 0)])


SOLVERS = ("cpsat", "overlap", "dfs", "brute")


def c1p_order(sets, K: int, solver: str = "cpsat", hints=()):
    """An order of ``0..K-1`` in which every set is consecutive, or ``None`` if there is none.

    ``sets``: bit masks (``np.ndarray`` of int64) or an iterable of arm sets. ``solver``: ``"cpsat"`` (exact,
    OR-Tools), ``"overlap"`` (overlap components, exact and polynomial, :func:`_c1p_overlap`), ``"dfs"`` (exact
    memoised search, exponential in the worst case, :func:`_c1p_dfs`) or ``"brute"`` (every permutation; ``K <= 8``).
    ``hints``: candidate orders checked first (a cheap shortcut when the answer for a similar instance is known).
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver {solver!r}; allowed: {', '.join(map(repr, SOLVERS))}")
    masks = sets if isinstance(sets, np.ndarray) else sets_to_masks(list(sets))
    if len(masks):
        sizes = _members(masks, K).sum(axis=1)
        masks = np.unique(masks[(sizes >= 2) & (sizes < K)])
    if len(masks) == 0:
        return list(range(K))
    for h in hints:
        if h is not None and satisfies(h, masks, K):
            return [int(k) for k in h]
    if solver == "brute":
        if K > 8:
            raise ValueError(f"solver='brute' enumerates K! orders; K = {K} is too large (at most 8)")
        return _c1p_brute(masks, K)
    if solver == "dfs":
        return _c1p_dfs(masks, K)
    if solver == "overlap":
        return _c1p_overlap(masks, K)
    return _c1p_cpsat(masks, K)


def extract_order(P_hat: np.ndarray, eps: float, solver: str = "cpsat", hints=()):
    """Extract-Order: an order of the arms under which ``P_hat`` is ``eps``-approximately SP, or ``None``."""
    return c1p_order(consecutive_masks(P_hat, eps), P_hat.shape[1], solver=solver, hints=hints)


def project_sp(P_ordered: np.ndarray) -> np.ndarray:
    """Lemma 6's SP projection of a matrix whose columns are already in the extracted order.

    With ``p_u`` the row's argmax: ``P_sp[u, k] = max_{i <= k} P[u, i]`` for ``k <= p_u`` and
    ``max_{i >= k} P[u, i]`` for ``k > p_u``; the result is SP with the same peaks, and entrywise ``>= P_ordered``.
    """
    P = np.asarray(P_ordered, dtype=float)
    left = np.maximum.accumulate(P, axis=-1)
    right = np.maximum.accumulate(P[..., ::-1], axis=-1)[..., ::-1]
    peaks = np.argmax(P, axis=-1)
    k = np.arange(P.shape[-1])
    return np.where(k <= peaks[..., None], left, right)
