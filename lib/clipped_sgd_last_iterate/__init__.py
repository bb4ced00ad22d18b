"""High-Probability Bounds for the Last Iterate of Clipped SGD (Chezhegov, Parletta, Paudice, Gorbunov; ICLR 2026).

Modules: :mod:`.problems` (P1 logistic + ridge, P2 and P4 quadratics, P3 statistical logistic regression),
:mod:`.solver` (the horizon-free step sizes and clipping levels), :mod:`.experiments` (tuning, the vectorised runs,
one function per figure and claim), :mod:`.plots`. The noise generators and the clipped-SGD runner are shared with
``clipped_heavy_tails`` in :mod:`lib.common.heavy_tails`.
"""
from __future__ import annotations

from lib.common import check_choice, check_float, check_int, make_config

from . import experiments, plots, problems, solver  # noqa: F401

SLUG = "clipped_sgd_last_iterate"

SIZES = {
    "quick": {"R": 100, "K": 3000, "R_tune": 30, "n_pool": 5000, "n_checkpoints": 20,
              "horizons": (300, 1000, 3000)},
    "full": {"R": 1000, "K": 20000, "R_tune": 200, "n_pool": 20000, "n_checkpoints": 30,
             "horizons": (300, 1000, 3000, 10000, 20000)},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", R=None, K=None, R_tune=None, n_pool=None,
           n_checkpoints=None, d=100, d_p3=10, d_p4=50, delta=0.05, clip_const=80.0, log_power=0, noise_scale=1.0,
           kmin=100, gamma0=None):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    ``R``: claim runs per setting; ``K``: iterations; ``R_tune``: tuning runs per gamma0 (separate stream);
    ``n_pool``: samples of P3's data pool; ``n_checkpoints``: log-spaced checkpoints; ``d``: dimension of P1/P2;
    ``d_p3``, ``d_p4``: of P3 and P4; ``delta``: confidence level in lambda_k; ``clip_const``: the constant of
    lambda_k (paper: 80); ``log_power``: 0 or 1, the optional ln^3 factor of gamma_k; ``noise_scale``: scale of the
    Pareto noise before the 1/sqrt(d) factor; ``kmin``: start of the slope fits; ``gamma0``: None tunes gamma0 on
    the grid for every setting (the paper's protocol), a number fixes it for every setting and method.
    """
    check_int("R", R, lo=10, hi=100_000, allow_none=True)
    check_int("K", K, lo=100, hi=1_000_000, allow_none=True)
    check_int("R_tune", R_tune, lo=5, hi=100_000, allow_none=True)
    check_int("n_pool", n_pool, lo=100, hi=10_000_000, allow_none=True)
    check_int("n_checkpoints", n_checkpoints, lo=5, hi=200, allow_none=True)
    d = check_int("d", d, lo=2, hi=10_000)
    d_p3 = check_int("d_p3", d_p3, lo=2, hi=1000)
    d_p4 = check_int("d_p4", d_p4, lo=2, hi=10_000)
    delta = check_float("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    clip_const = check_float("clip_const", clip_const, lo=0.0, lo_open=True)
    log_power = check_choice("log_power", log_power, (0, 1))
    noise_scale = check_float("noise_scale", noise_scale, lo=0.0, lo_open=True)
    kmin = check_int("kmin", kmin, lo=1)
    gamma0 = check_float("gamma0", gamma0, lo=0.0, lo_open=True, allow_none=True)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, R=R, K=K,
                      R_tune=R_tune, n_pool=n_pool, n_checkpoints=n_checkpoints, d=d, d_p3=d_p3, d_p4=d_p4,
                      delta=delta, clip_const=clip_const, log_power=log_power, noise_scale=noise_scale, kmin=kmin,
                      gamma0=gamma0)
    if kmin * 4 > cfg.K:
        raise ValueError(f"parameter 'kmin' got {kmin}; allowed: at most K/4 = {cfg.K // 4} (the slope fits need "
                         f"a range)")
    horizons = tuple(k for k in cfg.horizons if k <= cfg.K)
    if len(horizons) < 2:  # a K below the mode's horizons: three horizons up to K for claim C5's fit
        horizons = tuple(sorted({max(10, cfg.K // 10), cfg.K // 3, cfg.K}))
    cfg.params["horizons"] = horizons
    return cfg
