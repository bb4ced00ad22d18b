"""Explanations of one prediction: ours (cardinal-minimal), deletion (subset-minimal), brute force, sampling.

For a point ``x`` with sign ``s`` (``+1`` if ``f(x) > 0``), values ``v_i = s·h_i(x_i)`` and component minima
``m_i = min_{D_i(x)} s·h_i``, the importance of fixing feature ``i`` is ``g_i = v_i - m_i >= 0`` and the all-free
worst case is ``B = s·β + Σ_i m_i``. ``S`` is sufficient iff ``B + Σ_{i in S} g_i > 0``, so the shortest prefix of
the features sorted by ``g`` (descending) that passes is a smallest sufficient set (exchange argument).

* :func:`cardinal_minimal`: sort by ``g`` (exact or interval midpoints from bisection), then binary search over the
  prefix length ``k in {0, ..., n}`` with a *full-network* verifier: at most ``⌈log₂(n + 1)⌉`` queries (``S_n``,
  every feature fixed, is sufficient without asking).
* :func:`deletion_minimal`: start from all features and drop each in turn (heuristic order: ascending |centred
  contribution| ``|h_i(x_i) - E h_i|``, a NAM user's first guess; or a random order) if the rest stays
  sufficient: ``n`` queries, a subset-minimal set.
* :func:`brute_force_minimal`: subsets by increasing size until one is sufficient (the ground truth, n <= 16).
* :func:`sampled_sufficient`: the shortest prefix of the top-|contribution| order with no prediction flip among
  ``K`` uniform perturbations of the free features (no guarantee).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Callable, Optional

import numpy as np

from .model import NumpyNAM
from .univariate import Pieces, exact_extrema


@dataclass
class Instance:
    """Everything the explainers need about one point ``x`` (exact component minima from the pieces)."""

    x: np.ndarray
    A: np.ndarray  # lower ends of the free domains D_i(x)
    B_: np.ndarray  # upper ends
    s: float
    v: np.ndarray  # s·h_i(x_i)
    m: np.ndarray  # min over D_i(x) of s·h_i (exact)
    argmin: np.ndarray  # where it is attained
    contrib: np.ndarray  # h_i(x_i) - E_train h_i (centred contribution, unsigned)
    s_beta: float

    @property
    def n(self) -> int:
        return int(self.x.size)

    @property
    def g(self) -> np.ndarray:
        return self.v - self.m

    @property
    def B(self) -> float:
        return self.s_beta + float(self.m.sum())

    def margin(self, S) -> float:
        return self.B + float(self.g[list(S)].sum())


def domains(X: np.ndarray, eps: float, domain: str = "ball", lo: float = 0.0, hi: float = 1.0):
    """``(A, B)``: per-feature free domains, ``[x - ε, x + ε] ∩ [lo, hi]`` (``"ball"``) or ``[lo, hi]`` (``"full"``)."""
    X = np.atleast_2d(X)
    if domain == "full":
        return np.full(X.shape, lo), np.full(X.shape, hi)
    return np.clip(X - eps, lo, hi), np.clip(X + eps, lo, hi)


def make_instances(nam: NumpyNAM, pieces: Pieces, X: np.ndarray, eps: float, domain: str = "ball") -> list:
    """One :class:`Instance` per row of ``X`` (points with ``f(x) = 0`` exactly are given sign +1)."""
    X = np.atleast_2d(X)
    A, B = domains(X, eps, domain)
    H = nam.components(X)
    f = H.sum(1) + nam.beta
    s = np.where(f > 0, 1.0, -1.0)
    mins, amin, maxs, amax = exact_extrema(nam, pieces, A, B)
    out = []
    for p in range(len(X)):
        m = mins[p] if s[p] > 0 else -maxs[p]
        where = amin[p] if s[p] > 0 else amax[p]
        out.append(Instance(x=X[p], A=A[p], B_=B[p], s=float(s[p]), v=s[p] * H[p], m=m, argmin=where,
                            contrib=H[p] - nam.mean_contrib, s_beta=float(s[p] * nam.beta)))
    return out


def binary_search_prefix(order: np.ndarray, sufficient: Callable) -> tuple[list, int]:
    """Smallest ``k`` with ``order[:k]`` sufficient, by binary search (``k = n`` is sufficient without a query)."""
    lo, hi, queries = 0, len(order), 0
    while lo < hi:
        mid = (lo + hi) // 2
        queries += 1
        if sufficient(order[:mid]):
            hi = mid
        else:
            lo = mid + 1
    return sorted(int(i) for i in order[:lo]), queries


def cardinal_minimal(inst: Instance, sufficient: Optional[Callable] = None, g_interval=None) -> tuple[list, dict]:
    """Our explanation: sort by importance, binary-search the prefix length with a full-network verifier.

    ``g_interval``: ``(g_lo, g_hi)`` from bisection (then the order uses the midpoints and ``stats`` counts the
    adjacent pairs whose intervals overlap, i.e. orders decided only up to the precision); ``None``: exact ``g``.
    ``sufficient``: the verifier (default: the additive oracle).
    """
    if g_interval is None:
        key = inst.g
        overlaps = 0
    else:
        g_lo, g_hi = g_interval
        key = 0.5 * (g_lo + g_hi)
        o = np.argsort(-key, kind="stable")
        overlaps = int((g_lo[o][:-1] < g_hi[o][1:]).sum())
    order = np.argsort(-key, kind="stable")
    verify = sufficient if sufficient is not None else (lambda S: inst.margin(S) > 0)
    S, q = binary_search_prefix(order, verify)
    return S, {"queries": q, "overlaps": overlaps, "bound": math.ceil(math.log2(inst.n + 1))}


def heuristic_order(inst: Instance) -> np.ndarray:
    """Deletion's heuristic order: ascending |centred contribution| (least important first)."""
    return np.argsort(np.abs(inst.contrib), kind="stable")


def deletion_minimal(inst: Instance, order: np.ndarray, sufficient: Optional[Callable] = None) -> tuple[list, dict]:
    """Linear traversal from the full set: drop ``i`` (in ``order``) if the rest stays sufficient. ``n`` queries."""
    verify = sufficient if sufficient is not None else (lambda S: inst.margin(S) > 0)
    S = set(range(inst.n))
    q = 0
    for i in order:
        q += 1
        if verify(sorted(S - {int(i)})):
            S.discard(int(i))
    return sorted(S), {"queries": q}


def brute_force_minimal(inst: Instance, max_n: int = 16) -> tuple[list, dict]:
    """The first sufficient subset in order of size (exhaustive; ``n <= max_n``): a cardinal-minimal set."""
    if inst.n > max_n:
        raise ValueError(f"brute force: n = {inst.n} features > max_n = {max_n}")
    g, q = inst.g, 1
    if inst.B > 0:
        return [], {"queries": 1}
    for k in range(1, inst.n + 1):
        combos = _combos(inst.n, k)
        ok = inst.B + g[combos].sum(1) > 0
        if ok.any():
            first = int(np.argmax(ok))
            return sorted(int(i) for i in combos[first]), {"queries": q + first + 1}
        q += len(combos)
    raise AssertionError("brute force: the full set must be sufficient")


@lru_cache(maxsize=64)
def _combos(n: int, k: int) -> np.ndarray:
    return np.array(list(combinations(range(n), k)), dtype=np.int64)


def sampled_sufficient(nam: NumpyNAM, inst: Instance, n_samples: int = 200,
                       rng: Optional[np.random.Generator] = None) -> tuple[list, dict]:
    """Shortest top-|contribution| prefix whose ``n_samples`` uniform perturbations never flip the prediction.

    The same perturbations serve every prefix (features outside the prefix take the sampled values).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    Z = inst.A + (inst.B_ - inst.A) * rng.random((n_samples, inst.n))
    sH = inst.s * nam.components(Z)  # [K, n]
    order = np.argsort(-np.abs(inst.contrib), kind="stable")
    fixed_part = np.concatenate([[0.0], np.cumsum(inst.v[order])])  # Σ of the first k fixed values
    free_rev = np.concatenate([np.cumsum(sH[:, order][:, ::-1], axis=1)[:, ::-1], np.zeros((n_samples, 1))], axis=1)
    totals = inst.s_beta + fixed_part[None, :] + free_rev  # [K, n + 1]: prefix length k = column
    ok = (totals > 0).all(0)
    k = int(np.argmax(ok))  # k = n always passes (no free feature)
    return sorted(int(i) for i in order[:k]), {"queries": n_samples * (k + 1)}
