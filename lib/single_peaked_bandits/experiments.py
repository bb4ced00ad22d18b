"""One function per figure; each returns plain results (DataFrames, arrays in small dataclasses).

Instances follow the paper's generator (:mod:`.instances`); every run is seeded from the configuration's named
streams (``cfg.rng(name)``), so the same seed gives the same numbers whatever else ran.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.common import progress

from .analysis import curve_points, loglog_slope, second_half_slope, sqrt_tlogt_ratio
from .instances import generate_sp_matrix, is_single_peaked, permute_columns, random_costs
from .offline import brute_force_matching, matching_value, peak_plan, sp_matching
from .online import (emc_rounds, optimal_values, run_emc, run_mvm, run_random, run_ucb_eo, run_ucb_greedy)
from .order import extract_order


# --- instances --------------------------------------------------------------------------------------------------
@dataclass
class Instances:
    """Bandit instances: ``P`` in the SP order (``(I, U, K)``) and the same matrices with hidden column orders."""

    P: np.ndarray
    P_perm: np.ndarray  # P_perm[i] = P[i][:, perm[i]]
    perm: np.ndarray
    sp_order: np.ndarray  # an SP order of P_perm's columns (argsort of perm): P_perm[i][:, sp_order[i]] = P[i]
    costs: np.ndarray
    budget: int
    v_star: np.ndarray  # (I,)

    @property
    def n(self) -> int:
        return self.P.shape[0]

    def batch(self, runs: int, instances=None):
        """Each instance repeated ``runs`` times: ``(P, peaks, v_star, instance index, run index)``."""
        idx = np.arange(self.n) if instances is None else np.asarray(instances)
        inst = np.repeat(idx, runs)
        run = np.tile(np.arange(runs), len(idx))
        P = self.P[inst]
        return P, P.argmax(axis=-1), self.v_star[inst], inst, run


def make_instances(cfg, name: str = "instances", n: int | None = None) -> Instances:
    rng = cfg.rng(name)
    n = cfg.n_instances if n is None else n
    U, K = cfg.n_users, cfg.n_arms
    P = np.stack([generate_sp_matrix(U, K, rng) for _ in range(n)])
    perms = [permute_columns(p, rng) for p in P]
    P_perm = np.stack([pp for pp, _ in perms])
    perm = np.stack([pe for _, pe in perms])
    costs = random_costs(K, rng, cfg.max_cost)
    v = optimal_values(P, costs, cfg.budget)
    return Instances(P, P_perm, perm, np.argsort(perm, axis=1), costs, cfg.budget, v)


# --- Figure 1: offline ------------------------------------------------------------------------------------------
@dataclass
class OfflineResult:
    instances: pd.DataFrame  # one row per random small instance
    timing: pd.DataFrame  # DP and brute force as K grows


def _best_time(fn, budget_s: float = 0.2, max_reps: int = 7):
    """The fastest of a few calls (robust to other jobs on the machine), and the call's result."""
    best, out, spent, reps = np.inf, None, 0.0, 0
    while reps < max_reps and (reps < 2 or spent < budget_s):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best, spent, reps = min(best, dt), spent + dt, reps + 1
        if dt > budget_s:
            break
    return best, out


def offline_check(cfg) -> OfflineResult:
    """SP-Matching against brute force on small random instances (unit and integer costs), and their times."""
    rng = cfg.rng("offline")
    rows = []
    for i in range(cfg.n_offline):
        U = int(rng.integers(1, cfg.offline_max_users + 1))
        K = int(rng.integers(1, cfg.offline_max_arms + 1))
        integer = i % 2 == 1
        costs = random_costs(K, rng, 3 if integer else 1)
        B = int(rng.integers(costs.min(), costs.sum() + 1))
        P = generate_sp_matrix(U, K, rng)
        m, v, S = sp_matching(P, costs, B)
        bf, bs, n_sets = brute_force_matching(P, costs, B)
        rows.append(dict(U=U, K=K, B=B, costs="integer 1-3" if integer else "unit", dp=v, brute_force=bf,
                         dp_feasible=bool(costs[S].sum() <= B),
                         dp_consistent=bool(abs(float(matching_value(P, m)) - v) <= 1e-9),
                         agree=bool(abs(v - bf) <= 1e-9)))
    timing = []
    for K in cfg.timing_arms:
        P = generate_sp_matrix(cfg.timing_users, K, rng)
        costs = np.ones(K, dtype=np.int64)
        B = max(1, K // 2)
        t_dp, v = _best_time(lambda: sp_matching(P, costs, B)[1])
        t_bf, (bf, _, n_sets) = _best_time(lambda: brute_force_matching(P, costs, B))
        terms = len(peak_plan(P.argmax(axis=1), K).flat_i)
        timing.append(dict(K=K, U=cfg.timing_users, B=B, dp_s=t_dp, brute_force_s=t_bf, sets_evaluated=n_sets,
                           dp_terms=terms + K * K * (B + 1), agree=bool(abs(v - bf) <= 1e-9)))
    return OfflineResult(pd.DataFrame(rows), pd.DataFrame(timing))


# --- Figure 2: MvM ----------------------------------------------------------------------------------------------
@dataclass
class CurveResult:
    t: np.ndarray  # rounds at which the curves are stored
    cum: np.ndarray  # (N, len(t)) cumulative regret of each run
    final: np.ndarray  # (N,)
    instance: np.ndarray
    run: np.ndarray
    T: int

    @property
    def mean(self) -> np.ndarray:
        return self.cum.mean(axis=0)

    def band(self, lo=5, hi=95):
        return np.percentile(self.cum, lo, axis=0), np.percentile(self.cum, hi, axis=0)


def _curves(regret: np.ndarray, inst, run, T) -> CurveResult:
    t = curve_points(T)
    cum = np.cumsum(regret, axis=1, dtype=np.float64)
    return CurveResult(t, cum[:, t - 1], cum[:, -1], inst, run, T)


def mvm_experiment(cfg, inst: Instances, scale: float = 1.0, runs: int | None = None, name: str = "mvm") -> CurveResult:
    """MvM (known order and peaks) on every instance, ``n_runs`` runs each, horizon ``cfg.horizon``."""
    P, peaks, v, ii, rr = inst.batch(cfg.n_runs if runs is None else runs)
    reg = run_mvm(P, peaks, inst.costs, inst.budget, cfg.horizon, cfg.rng(name), v, scale=scale)
    return _curves(reg, ii, rr, cfg.horizon)


def mvm_summary(res: CurveResult) -> dict:
    """Slope of the mean curve over ``[T/2, T]`` (claim C2a) and over every round as the official code fits it
    (``polyfit`` of log R against log t on t = 1..T, here 2000 evenly spaced rounds); ``q = R/sqrt(t ln t)`` at
    ``T/4`` and ``T`` and its change (claim C2b)."""
    slope = second_half_slope(res.t, res.mean, res.T)
    even = np.unique(np.linspace(2, res.T, 2000).astype(int))
    slope_all = loglog_slope(even, np.interp(even, res.t, res.mean))[0]
    q0, q1, change = sqrt_tlogt_ratio(res.t, res.mean, res.T)
    return dict(slope_second_half=slope, slope_all_rounds=slope_all, q_quarter=q0, q_end=q1, q_change=change,
                final_mean=float(res.final.mean()), runs=len(res.final))


# --- Figure 3 / 4: EMC ------------------------------------------------------------------------------------------
@dataclass
class EMCExperiment:
    runs: pd.DataFrame  # one row per (instance, run, T, method)
    exact: pd.DataFrame  # Extract-Order on exact permuted matrices (eps = 0)
    grid: tuple


def emc_experiment(cfg, inst: Instances) -> EMCExperiment:
    """EMC (extracted order) and oracle-order EMC on every instance, ``emc_runs`` runs, every ``T`` of the grid."""
    rng = cfg.rng("emc")
    rows = []
    K = inst.P.shape[2]
    for i in progress(range(inst.n), desc="EMC instances"):
        for r in range(cfg.emc_runs):
            for T in cfg.emc_horizons:
                T = int(T)
                for method, oracle in (("EMC", None), ("EMC (oracle order)", inst.sp_order[i])):
                    e = run_emc(inst.P_perm[i], inst.costs[inst.perm[i]], inst.budget, T, rng, inst.v_star[i],
                                oracle_order=oracle, solver=cfg.c1p_solver)
                    rows.append(dict(instance=i, run=r, T=T, method=method, regret=e.regret,
                                     explore_regret=e.explore_regret, commit_gap=e.commit_gap, N=e.N, eps=e.eps,
                                     explored_all=e.explored_all, extracted=e.extracted,
                                     err_over_eps=e.err_over_eps, within_bound=e.within_bound,
                                     bound_over_eps=2 * K + 1))
    ex_rng = cfg.rng("exact-extraction")
    exact = []
    for j in range(cfg.n_exact):
        P = generate_sp_matrix(cfg.n_users, cfg.n_arms, ex_rng)
        Pp, _ = permute_columns(P, ex_rng)
        o = extract_order(Pp, 0.0, solver=cfg.c1p_solver)
        exact.append(dict(instance=j, extracted=o is not None, single_peaked=o is not None and is_single_peaked(Pp, o)))
    return EMCExperiment(pd.DataFrame(rows), pd.DataFrame(exact), tuple(int(T) for T in cfg.emc_horizons))


def emc_mean(emc: EMCExperiment) -> pd.DataFrame:
    """Mean, 5% and 95% of the final regret per (method, T) over instances and runs."""
    g = emc.runs.groupby(["method", "T"]).regret
    return pd.DataFrame({"mean": g.mean(), "q05": g.quantile(0.05), "q95": g.quantile(0.95)}).reset_index()


def upper_half(grid) -> np.ndarray:
    """The upper half of a horizon grid: the horizons at or above its median."""
    g = np.sort(np.asarray(grid, dtype=float))
    return g[g >= np.median(g)]


def emc_slopes(emc: EMCExperiment) -> pd.DataFrame:
    """Fitted log-log slopes of the mean final regret: over the upper half of the grid, and over the paper's
    protocol (every T in [1e5, 1e6], as in the official code)."""
    m = emc_mean(emc)
    out = []
    for method, d in m.groupby("method"):
        up = d[d["T"].isin(upper_half(emc.grid))]
        paper = d[(d["T"] >= 1e5) & (d["T"] <= 1e6)]
        row = dict(method=method, slope_upper_half=loglog_slope(up["T"], up["mean"])[0],
                   T_range_upper=f"{int(up['T'].min()):,}-{int(up['T'].max()):,}")
        row["slope_paper_range"] = loglog_slope(paper["T"], paper["mean"])[0] if len(paper) >= 2 else np.nan
        out.append(row)
    return pd.DataFrame(out).set_index("method")


def extraction_table(emc: EMCExperiment) -> pd.DataFrame:
    """Per T: how often Extract-Order succeeded, and ||P_sp - P||_inf / eps (max and mean) when it did."""
    d = emc.runs[(emc.runs.method == "EMC") & emc.runs.explored_all]
    g = d.groupby("T")
    ok = d[d.extracted]
    t = pd.DataFrame({"runs": g.size(), "success": g.extracted.mean()})
    t["err/eps max"] = ok.groupby("T").err_over_eps.max()
    t["err/eps mean"] = ok.groupby("T").err_over_eps.mean()
    t["within (2K+1) eps"] = ok.groupby("T").within_bound.mean()
    t["eps"] = g.eps.first()
    t["N per arm"] = g.N.first()
    return t


# --- Figure 5: all methods at one horizon -----------------------------------------------------------------------
@dataclass
class Tuning:
    table: pd.DataFrame  # mean final regret per (method, scale) on the tuning instances
    best: dict  # method -> scale with the lowest mean final regret there


@dataclass
class Comparison:
    finals: pd.DataFrame  # one row per (method, instance, run) on the claim instances
    tuning: Tuning
    T: int


def tune_scales(cfg) -> Tuning:
    """The UCB bonus scale ``c`` of MvM and of UCB-greedy, each tuned on the same grid (``ucb_scales``) and budget
    (horizon, runs) on separate tuning instances (their own random stream, ``n_tune_instances`` x ``n_tune_runs``):
    each method takes the scale with its lowest mean final regret there."""
    T = cfg.horizon
    tinst = make_instances(cfg, name="tuning", n=cfg.n_tune_instances)
    P, peaks, v, _, _ = tinst.batch(cfg.n_tune_runs)
    scales = np.asarray(cfg.ucb_scales, dtype=float)
    S = len(scales)
    bP, bpk, bv = np.tile(P, (S, 1, 1)), np.tile(peaks, (S, 1)), np.tile(v, S)
    bs = np.repeat(scales, len(P))
    finals = {
        "MvM": run_mvm(bP, bpk, tinst.costs, tinst.budget, T, cfg.rng("tune-mvm"), bv, scale=bs),
        "UCB-greedy": run_ucb_greedy(bP, tinst.costs, tinst.budget, T, cfg.rng("tune-greedy"), bv, scale=bs),
    }
    rows, best = [], {}
    for method, reg in finals.items():
        f = reg.sum(axis=1, dtype=np.float64)
        means = [float(f[bs == sc].mean()) for sc in scales]
        rows += [dict(method=method, scale=float(sc), mean_final_regret=m, runs=int((bs == sc).sum()))
                 for sc, m in zip(scales, means)]
        best[method] = float(scales[int(np.argmin(means))])
    return Tuning(pd.DataFrame(rows), best)


def compare_methods(cfg, inst: Instances, mvm: CurveResult, tuning: Tuning | None = None) -> Comparison:
    """Every method's final regret at ``T = horizon`` on the same instances (the first ``c5_runs`` runs of each):
    MvM and UCB-greedy with their tuned bonus scale (:func:`tune_scales`), MvM with the paper's bonus (Figure 2's
    runs) and UCB-greedy with it, uniform random feasible matchings, EMC and oracle-order EMC (closed form)."""
    T = cfg.horizon
    R = cfg.c5_runs
    tuning = tune_scales(cfg) if tuning is None else tuning
    sm, sg = tuning.best["MvM"], tuning.best["UCB-greedy"]
    P, peaks, v, ii, rr = inst.batch(R)
    n = len(P)
    out = []

    def add(method, values):
        for i, r, f in zip(ii, rr, values):
            out.append(dict(method=method, instance=int(i), run=int(r), final_regret=float(f)))

    add("MvM (paper bonus)", mvm.final[mvm.run < R])
    add(f"MvM (tuned, c={sm:g})", run_mvm(P, peaks, inst.costs, inst.budget, T, cfg.rng("cmp-mvm"), v,
                                         scale=sm).sum(axis=1, dtype=np.float64))
    g = run_ucb_greedy(np.concatenate([P, P]), inst.costs, inst.budget, T, cfg.rng("cmp-greedy"),
                       np.concatenate([v, v]), scale=np.repeat([sg, 1.0], n)).sum(axis=1, dtype=np.float64)
    add(f"UCB-greedy (tuned, c={sg:g})", g[:n])
    add("UCB-greedy (paper bonus)", g[n:])
    add("random feasible", run_random(P, inst.costs, inst.budget, T, cfg.rng("cmp-random"), v).sum(axis=1,
                                                                                                     dtype=np.float64))
    rng = cfg.rng("cmp-emc")
    for label, oracle in (("EMC", False), ("EMC (oracle order)", True)):
        f = [run_emc(inst.P_perm[i], inst.costs[inst.perm[i]], inst.budget, T, rng, inst.v_star[i],
                     oracle_order=inst.sp_order[i] if oracle else None, solver=cfg.c1p_solver).regret for i in ii]
        add(label, f)
    return Comparison(pd.DataFrame(out), tuning, T)


def c5_share(cmp: Comparison) -> float:
    """Share of (instance, run) pairs where tuned MvM's regret is below both tuned UCB-greedy's and random's."""
    w = cmp.finals.pivot_table(index=["instance", "run"], columns="method", values="final_regret")
    mvm = w[[c for c in w.columns if c.startswith("MvM (tuned")][0]]
    greedy = w[[c for c in w.columns if c.startswith("UCB-greedy (tuned")][0]]
    return float(((mvm < greedy) & (mvm < w["random feasible"])).mean())


@dataclass
class EOResult:
    ucb_eo: CurveResult
    mvm: CurveResult
    emc_final: np.ndarray
    solver_calls: int
    lookups: int
    T: int


def ucb_eo_experiment(cfg, inst: Instances) -> EOResult:
    """UCB-Extract-Order (unknown order) beside MvM (known order) and EMC at horizon ``eo_horizon``."""
    T = cfg.eo_horizon
    idx = np.arange(min(cfg.eo_instances, inst.n))
    P, peaks, v, ii, rr = inst.batch(cfg.eo_runs, instances=idx)
    Pp = inst.P_perm[ii]
    costs_perm = inst.costs[inst.perm[ii]]  # (runs, K): each run's columns are in its instance's hidden order
    stats: dict = {}
    eo = run_ucb_eo(Pp, costs_perm, inst.budget, T, cfg.rng("ucb-eo"), v, stats_out=stats)
    mv = run_mvm(P, peaks, inst.costs, inst.budget, T, cfg.rng("ucb-eo-mvm"), v)
    rng = cfg.rng("ucb-eo-emc")
    emc = np.array([run_emc(inst.P_perm[i], inst.costs[inst.perm[i]], inst.budget, T, rng, inst.v_star[i],
                            solver=cfg.c1p_solver).regret for i in ii])
    return EOResult(_curves(eo, ii, rr, T), _curves(mv, ii, rr, T), emc, stats.get("solver_calls", 0),
                    stats.get("lookups", 0), T)


def emc_explore_share(T: int, K: int) -> float:
    """Fraction of the horizon EMC spends exploring, ``min(1, K N / T)``."""
    return min(1.0, K * emc_rounds(T) / T)
