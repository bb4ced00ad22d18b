"""Proving the Limited Scalability of Centralized Distributed Optimization via a New Lower Bound Construction
(Alexander Tyurin; ICLR 2026).

A lower-bound paper with no experiments: the notebook simulates the proof's objects and evaluates the published
time formulas. Modules: :mod:`.chain` (the K-chain function F_{T,K,a} with the reconstructed Psi_a, its gradient,
prog_K, the Bernoulli oracle, RandK, Lemma 3.2's constants), :mod:`.random_sum` (Eq. 13's random sum t_B,
brute force and exact), :mod:`.complexity` (the time formulas and the lower bound's shape), :mod:`.simtime`
(Figure 5's simulated-time SGD runs), :mod:`.experiments`, :mod:`.plots`.
"""
from __future__ import annotations

from lib.common import check_float, check_int, make_config

from . import chain, complexity, experiments, plots, random_sum, simtime  # noqa: F401

SLUG = "server_comm_lower_bound"

SIZES = {
    "quick": {"R": 50, "B": 20, "draws": 2_000_000, "n_max_mc": 1024, "n_max_exact": 1024, "n_points2": 400,
              "n_points3": 200, "d5": 200, "R_f5": 8, "R_tune": 4, "max_iter5": 600},
    "full": {"R": 500, "B": 20, "draws": 20_000_000, "n_max_mc": 8192, "n_max_exact": 100_000, "n_points2": 2000,
             "n_points3": 2000, "d5": 1000, "R_f5": 10, "R_tune": 4, "max_iter5": 1000},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", R=None, B=None, draws=None, n_max_mc=None,
           n_max_exact=None, p=0.01, n_points2=None, n_points3=None, d4=1000, s2e4=1000.0, tau_w4=0.01,
           n_max4=100_000, d5=None, R_f5=None, R_tune=None, max_iter5=None, sigma_rel=0.3, eps_rel=0.01, tau5=0.05,
           h5=1.0):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    Figure 1: ``R`` replicates of t_B at least (more where ``draws`` geometric draws per n allow), ``B`` blocks,
    MC up to ``n_max_mc`` workers, the exact E[t_B] up to ``n_max_exact``, ``p`` = p_sigma = p_K (h = tau_s = 1).
    Figure 2: ``n_points2`` random sparse points per K (T = 12). Figure 3: ``n_points3`` random points per K (T = 6).
    Figure 4: dimension ``d4``, sigma^2/eps ``s2e4``, tau_w ``tau_w4`` (h = 1, L Delta/eps = 1), n up to ``n_max4``.
    Figure 5: dimension ``d5`` (2 d5 samples), ``R_f5`` claim runs and ``R_tune`` tuning runs per (method, n),
    at most ``max_iter5`` iterations, noise variance sigma^2 = ``sigma_rel`` ||grad f(0)||^2, target
    eps = ``eps_rel`` ||grad f(0)||^2, tau_s = tau_w = ``tau5`` per coordinate, ``h5`` seconds per gradient.
    """
    check_int("R", R, lo=5, hi=100_000, allow_none=True)
    check_int("B", B, lo=1, hi=10_000, allow_none=True)
    check_int("draws", draws, lo=10_000, hi=1_000_000_000, allow_none=True)
    check_int("n_max_mc", n_max_mc, lo=16, hi=1_000_000, allow_none=True)
    check_int("n_max_exact", n_max_exact, lo=16, hi=10_000_000, allow_none=True)
    p = check_float("p", p, lo=0.0, hi=0.5, lo_open=True)
    check_int("n_points2", n_points2, lo=10, hi=1_000_000, allow_none=True)
    check_int("n_points3", n_points3, lo=10, hi=1_000_000, allow_none=True)
    check_int("d4", d4, lo=1, hi=10 ** 12)
    s2e4 = check_float("s2e4", s2e4, lo=0.0)
    tau_w4 = check_float("tau_w4", tau_w4, lo=0.0, lo_open=True)
    check_int("n_max4", n_max4, lo=10, hi=10 ** 12)
    check_int("d5", d5, lo=16, hi=20_000, allow_none=True)
    check_int("R_f5", R_f5, lo=2, hi=10_000, allow_none=True)
    check_int("R_tune", R_tune, lo=1, hi=10_000, allow_none=True)
    check_int("max_iter5", max_iter5, lo=10, hi=1_000_000, allow_none=True)
    sigma_rel = check_float("sigma_rel", sigma_rel, lo=0.0)
    eps_rel = check_float("eps_rel", eps_rel, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    tau5 = check_float("tau5", tau5, lo=0.0)
    h5 = check_float("h5", h5, lo=0.0, lo_open=True)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, R=R, B=B,
                      draws=draws, n_max_mc=n_max_mc, n_max_exact=n_max_exact, p=p, n_points2=n_points2,
                      n_points3=n_points3, d4=d4, s2e4=s2e4, tau_w4=tau_w4, n_max4=n_max4, d5=d5, R_f5=R_f5,
                      R_tune=R_tune, max_iter5=max_iter5, sigma_rel=sigma_rel, eps_rel=eps_rel, tau5=tau5, h5=h5)
    if cfg.n_max_mc > cfg.n_max_exact:
        raise ValueError(f"parameter 'n_max_mc' got {cfg.n_max_mc}; allowed: at most n_max_exact = {cfg.n_max_exact}")
    cfg.params.update(T2=12, T3=6, K3_max=6, ns5=(1, 4, 16, 64))
    return cfg
