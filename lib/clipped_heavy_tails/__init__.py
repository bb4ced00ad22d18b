"""Clipped Gradient Methods for Nonsmooth Convex Optimization under Heavy-Tailed Noise: A Refined Analysis
(Zijian Liu; ICLR 2026).

A theory paper without experiments: the notebook checks its theorems on synthetic problems. Modules:
:mod:`.problems` (the l1-distance problem, its ridge version, the sphere-noise oracle), :mod:`.solver` (the refined and
old clipping thresholds, step sizes, Lemma 1's Monte-Carlo estimators), :mod:`.experiments`, :mod:`.plots`. The noise
generators and the clipped (proximal) SGD runner are shared with ``clipped_sgd_last_iterate`` in
:mod:`lib.common.heavy_tails`.
"""
from __future__ import annotations

import numpy as np

from lib.common import check_float, check_int, make_config

from . import experiments, plots, problems, solver  # noqa: F401

SLUG = "clipped_heavy_tails"

SIZES = {
    "quick": {"R": 100, "d": 64, "Ts": (250, 500, 1000, 2000), "T_main": 2000, "R_tune": 20, "n_mc": 4_000_000,
              "n_cov": 1_000_000, "R_delta": 200, "T_delta": 1000},
    "full": {"R": 1000, "d": 256, "Ts": (250, 500, 1000, 2000, 4000, 8000, 16000), "T_main": 2000, "R_tune": 100,
             "n_mc": 16_000_000, "n_cov": 4_000_000, "R_delta": 2000, "T_delta": 2000},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", R=None, d=None, T_main=None, R_tune=None, n_mc=None,
           n_cov=None, R_delta=None, T_delta=None, sigma_l=10.0, sigma_probe=1.0, delta=0.05, mu=0.1, c_eta=None, c_sc=1.0):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    ``R``: runs per method; ``d``: dimension (k runs over 1, 16, 64, 256 up to d); ``T_main``: horizon of Figure 2;
    ``R_tune``: tuning runs per c_eta; ``n_mc``, ``n_cov``: Monte-Carlo draws of Lemma 1 (spike, isotropic);
    ``R_delta``, ``T_delta``: Figure 5's runs and horizon; ``sigma_l``: the noise's p-th moment scale; ``delta``:
    confidence level of the thresholds; ``sigma_probe``: the noise scale sigma_l of Lemma 1's probes; ``mu``: strong convexity of P2; ``c_eta``: None tunes the step constant on
    the grid, a number fixes it for every method; ``c_sc``: the strongly convex step constant in eta_t = c/(mu t).
    """
    check_int("R", R, lo=10, hi=100_000, allow_none=True)
    check_int("d", d, lo=16, hi=4096, allow_none=True)
    check_int("T_main", T_main, lo=50, hi=1_000_000, allow_none=True)
    check_int("R_tune", R_tune, lo=5, hi=100_000, allow_none=True)
    check_int("n_mc", n_mc, lo=10_000, hi=100_000_000, allow_none=True)
    check_int("n_cov", n_cov, lo=1000, hi=10_000_000, allow_none=True)
    check_int("R_delta", R_delta, lo=10, hi=1_000_000, allow_none=True)
    check_int("T_delta", T_delta, lo=50, hi=1_000_000, allow_none=True)
    sigma_l = check_float("sigma_l", sigma_l, lo=0.0, lo_open=True)
    sigma_probe = check_float("sigma_probe", sigma_probe, lo=0.0, lo_open=True)
    delta = check_float("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    mu = check_float("mu", mu, lo=0.0, lo_open=True)
    c_eta = check_float("c_eta", c_eta, lo=0.0, lo_open=True, allow_none=True)
    c_sc = check_float("c_sc", c_sc, lo=0.0, lo_open=True)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, R=R, d=d,
                      T_main=T_main, R_tune=R_tune, n_mc=n_mc, n_cov=n_cov, R_delta=R_delta, T_delta=T_delta,
                      sigma_l=sigma_l, sigma_probe=sigma_probe, delta=delta, mu=mu, c_eta=c_eta, c_sc=c_sc)
    cfg.params["taus"] = tuple(float(t) for t in np.geomspace(10.0, 300.0, 8))
    cfg.params["deltas"] = (0.1, 0.01, 0.001)
    return cfg
