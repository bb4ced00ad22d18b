"""The online algorithms, batched over independent runs: MvM, EMC (closed-form regret), UCB-EO and the baselines.

Every round the learner plays a matching ``m_t`` whose arm set costs at most ``B``; user ``u`` gets a
Bernoulli(``P[u, m_t(u)]``) reward. Regret is the pseudo-regret ``sum_t V* - sum_u P[u, m_t(u)]`` against the offline
optimum ``V*`` (SP-Matching on the true matrix). A batch stacks ``N`` runs (several instances, several runs each):
matrices ``(N, U, K)``, one random generator, shared costs and budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .offline import assign_users, matching_value, peak_plan, sp_matching, sp_matching_batch
from .order import extract_order, gap_structure, project_sp


def optimal_values(P: np.ndarray, costs, budget: int, orders=None) -> np.ndarray:
    """``V*`` of each matrix of a batch ``(N, U, K)`` (``orders[n]``: an SP order of matrix ``n``; default identity)."""
    P = np.asarray(P, dtype=float)
    out = np.empty(P.shape[0])
    for n in range(P.shape[0]):
        o = np.arange(P.shape[2]) if orders is None else np.asarray(orders[n])
        out[n] = sp_matching(P[n][:, o], np.asarray(costs)[o], budget)[1]
    return out


def _maximal_am(UCBt: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """:func:`maximal_matrix` on arm-major ``(..., K, U)`` arrays (the bandits' layout)."""
    K = UCBt.shape[-2]
    left_side = np.arange(K)[:, None] <= np.asarray(peaks)[..., None, :]  # (..., K, U)
    left = np.where(left_side, UCBt, np.inf)
    left = np.minimum.accumulate(left[..., ::-1, :], axis=-2)[..., ::-1, :]
    right = np.where(left_side, np.inf, UCBt)
    peak_val = np.take_along_axis(UCBt, np.asarray(peaks)[..., None, :], axis=-2)
    right = np.minimum(np.minimum.accumulate(right, axis=-2), peak_val)
    return np.where(left_side, left, right)


def maximal_matrix(UCB: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """MvM's maximal SP matrix below ``UCB`` (``(..., U, K)``) with the known peaks ``(..., U)``.

    ``M[u, k] = min_{k <= j <= p_u} UCB[u, j]`` for ``k <= p_u`` and ``min_{p_u <= j <= k} UCB[u, j]`` for
    ``k >= p_u``: the largest matrix that is SP with peaks ``p_u`` and lies below ``UCB``.
    """
    return np.swapaxes(_maximal_am(np.swapaxes(np.asarray(UCB, dtype=float), -1, -2), peaks), -1, -2)


def _assign_am(Mt: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """Each user's best selected arm under an arm-major ``(N, K, U)`` matrix: ``(N, U)``."""
    return np.where(selected[..., :, None], Mt, -np.inf).argmax(axis=-2)


@dataclass
class Stats:
    """Pull counts and reward sums per (run, arm, user), arm-major."""

    n: np.ndarray
    s: np.ndarray

    @classmethod
    def zeros(cls, N, K, U):
        # float32 holds counts and reward sums exactly up to 2^24 and halves the memory traffic of every round
        return cls(np.zeros((N, K, U), dtype=np.float32), np.zeros((N, K, U), dtype=np.float32))

    def ucb(self, T: int, scale=1.0) -> np.ndarray:
        """``mean + scale * sqrt(2 ln T / n)`` (float32); never-pulled entries get a huge value (maximally optimistic)."""
        n = np.maximum(self.n, np.float32(1.0))
        bonus = np.sqrt(np.float32(2.0 * math.log(T)) / n)
        bonus *= np.asarray(scale, dtype=np.float32)
        out = self.s / n
        out += bonus
        out[self.n == 0] = np.float32(1e9)
        return out

    def update(self, matching: np.ndarray, rewards: np.ndarray) -> None:
        N, U = matching.shape
        K = self.n.shape[1]
        idx = ((np.arange(N)[:, None] * K + matching) * U + np.arange(U)).ravel()
        self.n.reshape(-1)[idx] += 1.0
        self.s.reshape(-1)[idx] += rewards.ravel().astype(np.float32)


def _play(Pt, matching, rng):
    """Bernoulli rewards of a batch of matchings (arm-major means ``(N, K, U)``) and their expected values."""
    means = np.take_along_axis(Pt, matching[:, None, :], axis=1)[:, 0, :]
    return (rng.random(means.shape) < means).astype(float), means.sum(axis=-1)


def _init_rounds(Pt, stats, costs, budget, rng, regret, v_star):
    """The first rounds: every affordable arm once, with every user on it. Returns the number of rounds used."""
    N, K, U = Pt.shape
    t = 0
    for k in range(K):
        if costs[k] > budget or t >= regret.shape[1]:
            continue
        m = np.full((N, U), k, dtype=np.int64)
        r, val = _play(Pt, m, rng)
        stats.update(m, r)
        regret[:, t] = v_star - val
        t += 1
    return t


def _scale(scale, N):
    sc = np.asarray(scale, dtype=np.float32)
    return sc if sc.ndim == 0 else sc.reshape(N, 1, 1)


def _sorted_users(P, peaks):
    """Store the users of every batch entry sorted by peak (regret is a sum over users, so nothing changes), arm-major."""
    idx = np.argsort(peaks, axis=1, kind="stable")
    P = np.take_along_axis(P, idx[:, :, None], axis=1)
    return np.ascontiguousarray(np.swapaxes(P, 1, 2)), np.take_along_axis(peaks, idx, axis=1)


def run_mvm(P: np.ndarray, peaks: np.ndarray, costs, budget: int, T: int, rng: np.random.Generator,
            v_star: np.ndarray, scale=1.0) -> np.ndarray:
    """Match-via-Maximal on a batch ``(N, U, K)`` with known SP order (identity) and peaks ``(N, U)``.

    Each round: ``UCB = mean + scale * sqrt(2 ln T / n)``, the maximal SP matrix below it, SP-Matching, play.
    ``scale`` (a number or one per run) multiplies the paper's bonus (1 in the paper). Returns the per-round
    regret ``(N, T)`` (float32).
    """
    P = np.asarray(P, dtype=float)
    N, U, K = P.shape
    costs = np.asarray(costs, dtype=np.int64)
    Pt, peaks = _sorted_users(P, np.asarray(peaks))
    plan = peak_plan(peaks, K)
    stats = Stats.zeros(N, K, U)
    sc = _scale(scale, N)
    regret = np.zeros((N, T), dtype=np.float32)
    t0 = _init_rounds(Pt, stats, costs, budget, rng, regret, v_star)
    for t in range(t0, T):
        M = _maximal_am(stats.ucb(T, sc), peaks)
        selected, _ = sp_matching_batch(M, costs, budget, plan, arm_major=True)
        m = _assign_am(M, selected)
        r, val = _play(Pt, m, rng)
        stats.update(m, r)
        regret[:, t] = v_star - val
    return regret


def greedy_select(V: np.ndarray, costs, budget: int, arm_major: bool = False) -> np.ndarray:
    """Structure-blind budgeted greedy on a batch of value matrices ``(N, U, K)`` (or ``(N, K, U)``): repeatedly add
    the affordable arm with the largest marginal gain per unit cost in ``sum_u max_{k in S} V[u, k]``.
    Returns a ``(N, K)`` mask."""
    Vt = V if arm_major else np.swapaxes(V, 1, 2)
    N, K, U = Vt.shape
    costs = np.asarray(costs, dtype=float)
    sel = np.zeros((N, K), dtype=bool)
    left = np.full(N, float(budget))
    cur = np.zeros((N, U))
    rows = np.arange(N)
    for _ in range(K):
        gain = np.maximum(Vt - cur[:, None, :], 0.0).sum(axis=2) / costs  # (N, K)
        gain[sel | (costs[None, :] > left[:, None])] = -np.inf
        k = gain.argmax(axis=1)
        act = np.isfinite(gain[rows, k])
        if not act.any():
            break
        sel[rows[act], k[act]] = True
        left[act] -= costs[k[act]]
        cur[act] = np.maximum(cur[act], Vt[rows[act], k[act], :])
    return sel


def run_ucb_greedy(P: np.ndarray, costs, budget: int, T: int, rng: np.random.Generator, v_star: np.ndarray,
                   scale=1.0) -> np.ndarray:
    """Baseline: the same UCB index, but the arm set is chosen by budgeted greedy (no SP structure used)."""
    P = np.asarray(P, dtype=float)
    N, U, K = P.shape
    costs = np.asarray(costs, dtype=np.int64)
    Pt = np.ascontiguousarray(np.swapaxes(P, 1, 2))
    stats = Stats.zeros(N, K, U)
    sc = _scale(scale, N)
    regret = np.zeros((N, T), dtype=np.float32)
    t0 = _init_rounds(Pt, stats, costs, budget, rng, regret, v_star)
    for t in range(t0, T):
        V = stats.ucb(T, sc)
        selected = greedy_select(V, costs, budget, arm_major=True)
        m = _assign_am(V, selected)
        r, val = _play(Pt, m, rng)
        stats.update(m, r)
        regret[:, t] = v_star - val
    return regret


def random_feasible(N: int, costs, budget: int, rng: np.random.Generator) -> np.ndarray:
    """A random maximal feasible arm set per run: arms in a uniformly random order, each kept if it still fits."""
    costs = np.asarray(costs, dtype=np.int64)
    K = len(costs)
    order = np.argsort(rng.random((N, K)), axis=1)
    sel = np.zeros((N, K), dtype=bool)
    left = np.full(N, int(budget))
    rows = np.arange(N)
    for j in range(K):
        k = order[:, j]
        fit = costs[k] <= left
        sel[rows[fit], k[fit]] = True
        left[fit] -= costs[k[fit]]
    return sel


def run_random(P: np.ndarray, costs, budget: int, T: int, rng: np.random.Generator, v_star: np.ndarray) -> np.ndarray:
    """Baseline: each round a random feasible matching (random maximal arm set, users spread uniformly on it)."""
    P = np.asarray(P, dtype=float)
    N, U, K = P.shape
    regret = np.zeros((N, T), dtype=np.float32)
    for t in range(T):
        sel = random_feasible(N, costs, budget, rng)
        m = assign_users(rng.random((N, U, K)), sel)
        regret[:, t] = v_star - matching_value(P, m)
    return regret


# --- Explore-then-commit with order extraction --------------------------------------------------------------------
def emc_rounds(T: int) -> int:
    """Exploration rounds per arm, ``N = ceil(T^(2/3) (ln T)^(1/3))``."""
    return int(math.ceil(T ** (2.0 / 3.0) * math.log(T) ** (1.0 / 3.0)))


@dataclass
class EMCResult:
    regret: float
    explore_regret: float
    commit_gap: float  # V* - V(commit matching) per commit round
    N: int
    eps: float
    explored_all: bool
    extracted: bool  # Extract-Order returned an order (always True for the oracle)
    err_over_eps: float  # ||P_sp - P||_inf / eps under the extracted order (nan if none)
    within_bound: bool  # ||P_sp - P||_inf <= (2K + 1) eps
    order: list = field(default_factory=list)


def run_emc(P: np.ndarray, costs, budget: int, T: int, rng: np.random.Generator, v_star: float,
            oracle_order=None, solver: str = "cpsat") -> EMCResult:
    """EMC on one matrix ``P`` (columns in the hidden order), regret in closed form.

    Explore: each arm for ``N`` rounds with every user on it (``P_hat = Binomial(N, P) / N``); exploration regret
    ``N sum_k (V* - sum_u P[u, k])``. Then ``eps = sqrt(2 ln T / N)``, Extract-Order (or ``oracle_order``), the SP
    projection, SP-Matching, and ``(T - K N)`` commit rounds of regret ``V* - V(commit)``. If extraction fails the
    commit matching sends every user to arm 0 (as the official code does).
    """
    P = np.asarray(P, dtype=float)
    U, K = P.shape
    costs = np.asarray(costs, dtype=np.int64)
    N = emc_rounds(T)
    eps = math.sqrt(2.0 * math.log(T) / N)
    arm_gap = v_star - P.sum(axis=0)  # per-round regret of exploring arm k
    explore, used = 0.0, 0
    for k in range(K):
        r = min(N, T - used)
        if r <= 0:
            break
        explore += r * arm_gap[k]
        used += r
    if used >= T:
        return EMCResult(explore, explore, float("nan"), N, eps, False, False, float("nan"), False)
    P_hat = rng.binomial(N, P) / N
    order = list(oracle_order) if oracle_order is not None else extract_order(P_hat, eps, solver=solver)
    if order is None:
        m = np.zeros(U, dtype=np.int64)
        gap = v_star - float(matching_value(P, m))
        reg = explore + (T - used) * gap
        return EMCResult(reg, explore, gap, N, eps, True, False, float("nan"), False)
    o = np.asarray(order)
    P_sp = project_sp(P_hat[:, o])
    err = float(np.abs(P_sp - P[:, o]).max())
    m_o, _, _ = sp_matching(P_sp, costs[o], budget)
    m = o[m_o]
    gap = v_star - float(matching_value(P, m))
    reg = explore + (T - used) * gap
    return EMCResult(reg, explore, gap, N, eps, True, True, err / eps, err <= (2 * K + 1) * eps, [int(x) for x in o])


# --- UCB-Extract-Order (the official code's practical variant) ---------------------------------------------------
class _OrderCache:
    """Remembers C1P answers per set family, and each run's last orders as cheap candidates."""

    def __init__(self, max_size: int = 20000):
        self.answers: dict = {}
        self.max_size = max_size
        self.solver_calls = 0
        self.lookups = 0

    def order(self, structure, K, eps, solver, hints):
        from .order import c1p_order, consecutive_masks, satisfies

        masks = consecutive_masks(None, eps, structure=structure)
        key = masks.tobytes()
        self.lookups += 1
        if key in self.answers:
            return self.answers[key]
        for h in hints:
            if h is not None and satisfies(h, masks, K):
                return list(h)
        self.solver_calls += 1
        ans = c1p_order(masks, K, solver=solver)
        if len(self.answers) < self.max_size:
            self.answers[key] = ans
        return ans


def run_ucb_eo(P: np.ndarray, costs, budget: int, T: int, rng: np.random.Generator, v_star: np.ndarray,
               solver: str = "overlap", stats_out: dict | None = None) -> np.ndarray:
    """UCB-Extract-Order on a batch ``(N, U, K)`` with unknown order (``costs``: ``(K,)`` or one row per run).

    Each round and run: the UCB matrix; a binary search (``ceil(ln T)`` steps on ``[0, 1]``) for the smallest ``eps``
    at which Extract-Order(UCB, eps) succeeds; the SP projection of the reordered UCB; SP-Matching; play.
    """
    P = np.asarray(P, dtype=float)
    N, U, K = P.shape
    costs = np.broadcast_to(np.asarray(costs, dtype=np.int64), (N, K))  # one cost vector per run (its column order)
    Pt = np.ascontiguousarray(np.swapaxes(P, 1, 2))
    steps = int(math.ceil(math.log(T)))
    stats = Stats.zeros(N, K, U)
    regret = np.zeros((N, T), dtype=np.float32)
    t0 = _init_rounds(Pt, stats, costs.max(axis=0), budget, rng, regret, v_star)
    cache = _OrderCache()
    last = [[list(range(K))] for _ in range(N)]
    for t in range(t0, T):
        UCB = np.swapaxes(stats.ucb(T), 1, 2)  # (N, U, K)
        orders = np.empty((N, K), dtype=np.int64)
        for n in range(N):
            structure = gap_structure(UCB[n])
            best = cache.order(structure, K, 1.0, solver, last[n]) or list(range(K))
            lo, hi = 0.0, 1.0
            for _ in range(steps):
                mid = 0.5 * (lo + hi)
                o = cache.order(structure, K, mid, solver, last[n])
                if o is not None:
                    best, hi = o, mid
                else:
                    lo = mid
            orders[n] = best
            if best not in last[n]:
                last[n] = [best] + last[n][:3]
        P_sp = project_sp(np.take_along_axis(UCB, orders[:, None, :], axis=2))
        plan = peak_plan(np.argmax(P_sp, axis=-1), K)
        if np.all(costs == costs[0, 0]):  # equal costs: the reordered costs are the same for every run
            selected, _ = sp_matching_batch(P_sp, costs[0], budget, plan)
        else:
            selected = np.zeros((N, K), dtype=bool)
            for n in range(N):
                selected[n, sp_matching(P_sp[n], costs[n, orders[n]], budget)[2]] = True
        m = np.take_along_axis(orders, assign_users(P_sp, selected), axis=1)
        r, val = _play(Pt, m, rng)
        stats.update(m, r)
        regret[:, t] = v_star - val
    if stats_out is not None:
        stats_out.update(solver_calls=cache.solver_calls, lookups=cache.lookups)
    return regret
