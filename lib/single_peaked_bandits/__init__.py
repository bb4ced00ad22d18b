"""Bandits with Single-Peaked Preferences and Limited Resources (Keinan, Torkan, Ben-Porat; ICLR 2026).

Modules: :mod:`.instances` (the paper's random single-peaked instances, the SP test), :mod:`.offline` (SP-Matching,
the dynamic programme, and brute force), :mod:`.order` (Extract-Order: consecutive sets, the consecutive-ones
problem solved exactly with OR-Tools CP-SAT or by overlap components; Lemma 6's SP projection), :mod:`.online`
(MvM, EMC with closed-form regret, UCB-EO, UCB-greedy and random baselines, batched over runs),
:mod:`.analysis` (log-log slopes), :mod:`.experiments` (one function per figure), :mod:`.plots`.
No user file is read: the paper's data are its own random instances.
"""
from __future__ import annotations

from lib.common import check_choice, check_int, make_config

from .analysis import loglog_slope
from .experiments import (c5_share, compare_methods, emc_experiment, emc_mean, emc_slopes, extraction_table,
                          make_instances, mvm_experiment, mvm_summary, offline_check, tune_scales,
                          ucb_eo_experiment, upper_half)
from .instances import generate_sp_matrix, is_single_peaked, permute_columns
from .offline import brute_force_matching, sp_matching
from .online import run_emc, run_mvm, run_random, run_ucb_eo, run_ucb_greedy
from .order import c1p_order, consecutive_sets, extract_order, project_sp

SLUG = "single_peaked_bandits"

SIZES = {
    "quick": {
        "n_users": 20, "n_arms": 8, "n_instances": 2, "n_runs": 2, "horizon": 3000,
        "emc_horizons": (10_000, 30_000, 100_000, 300_000, 1_000_000), "emc_runs": 3,
        "n_offline": 200, "offline_max_users": 5, "offline_max_arms": 6,
        "timing_arms": (4, 6, 8, 10, 12, 14), "timing_users": 20,
        "n_exact": 50, "ucb_scales": (0.1, 0.3, 1.0), "n_tune_instances": 3, "n_tune_runs": 2, "c5_runs": 2,
        "eo_horizon": 1000, "eo_instances": 1, "eo_runs": 2,
    },
    "full": {
        "n_users": 100, "n_arms": 20, "n_instances": 10, "n_runs": 10, "horizon": 100_000,
        "emc_horizons": (10_000, 30_000) + tuple(i * 100_000 for i in range(1, 11)), "emc_runs": 10,
        "n_offline": 400, "offline_max_users": 5, "offline_max_arms": 6,
        "timing_arms": (4, 6, 8, 10, 12, 14, 16, 18, 20), "timing_users": 100,
        "n_exact": 200, "ucb_scales": (0.1, 0.3, 1.0), "n_tune_instances": 3, "n_tune_runs": 2, "c5_runs": 2,
        "eo_horizon": 20_000, "eo_instances": 2, "eo_runs": 2,
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", n_users=None, n_arms=None, budget=None,
           n_instances=None, n_runs=None, horizon=None, max_cost=1, c1p_solver="cpsat", verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    n_users, n_arms : U and K (None: 20 and 8 quick, 100 and 20 full, the paper's size).
    budget : B (None: K // 2, as in the paper's experiments).
    n_instances, n_runs : random instances, and runs per instance (None: 2 x 2 quick, 10 x 10 full).
    horizon : T of the MvM experiment and of the comparison (None: 3000 quick, 100000 full).
    max_cost : arm costs are drawn from 1..max_cost (1: unit costs, the paper's experiments). Figure 1 always
        includes integer costs.
    c1p_solver : the consecutive-ones solver of Extract-Order in EMC: "cpsat" (OR-Tools, default) or "overlap"
        (overlap components, exact and polynomial; UCB-EO always uses it for its many small instances).
    """
    check_choice("mode", mode, ("quick", "full"))
    check_int("n_users", n_users, lo=1, hi=2000, allow_none=True)
    check_int("n_arms", n_arms, lo=3, hi=40, allow_none=True)
    check_int("n_instances", n_instances, lo=1, hi=1000, allow_none=True)
    check_int("n_runs", n_runs, lo=1, hi=1000, allow_none=True)
    check_int("horizon", horizon, lo=200, hi=10_000_000, allow_none=True)
    check_int("max_cost", max_cost, lo=1, hi=10)
    check_choice("c1p_solver", c1p_solver, ("cpsat", "overlap"))
    K = n_arms if n_arms is not None else SIZES[mode]["n_arms"]
    check_int("budget", budget, lo=max_cost, hi=K * max_cost, allow_none=True)
    if budget is None:
        budget = max(max_cost, K // 2)
    T = horizon if horizon is not None else SIZES[mode]["horizon"]
    if T < 2 * K:
        raise ValueError(f"parameter 'horizon' got {T}; allowed: at least 2 * n_arms = {2 * K} rounds")
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       n_users=n_users, n_arms=n_arms, budget=budget, n_instances=n_instances, n_runs=n_runs,
                       horizon=horizon, max_cost=max_cost, c1p_solver=c1p_solver)


__all__ = [
    "SLUG", "SIZES", "config", "generate_sp_matrix", "permute_columns", "is_single_peaked", "sp_matching",
    "brute_force_matching", "consecutive_sets", "c1p_order", "extract_order", "project_sp", "run_mvm", "run_emc",
    "run_ucb_eo", "run_ucb_greedy", "run_random", "loglog_slope", "make_instances", "offline_check",
    "mvm_experiment", "mvm_summary", "emc_experiment", "emc_mean", "emc_slopes", "extraction_table",
    "tune_scales", "compare_methods", "c5_share", "ucb_eo_experiment", "upper_half",
]
