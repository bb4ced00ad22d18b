"""Strongly Convex Sets in Riemannian Manifolds (Scieur, Martínez-Rubio, Kerdreux, d'Aspremont, Pokutta; ICLR 2026).

Modules: :mod:`.manifolds` (sphere, hyperboloid and Euclidean space in ambient coordinates: exp, log, transport),
:mod:`.sets` (geodesic balls: projection and the reduced linear minimisation oracle), :mod:`.problems` (the sphere
quadratic and the hyperbolic squared distance, with Riemannian gradients and Hessians), :mod:`.rfw` (Riemannian
Frank-Wolfe, Algorithm 1, and projected gradient), :mod:`.theory` (the sampled RSI constant, Theorem 5.1's rate,
the curve fits), :mod:`.experiments` (one function per figure), :mod:`.plots`. numpy/scipy only.
"""
from __future__ import annotations

from lib.common import check_float, check_int, make_config

from . import experiments, manifolds, plots, problems, rfw, sets, theory  # noqa: F401

SLUG = "riemannian_strong_convexity"

SIZES = {
    "quick": {"n": 500, "iters": 300, "n_pg": 2000, "rsi_samples": 500, "n_h": 50, "iters_h": 200, "n_instances": 1,
              "n_points": 12, "lmo_points": 5000},
    "full": {"n": 2000, "iters": 2000, "n_pg": 4000, "rsi_samples": 5000, "n_h": 50, "iters_h": 500,
             "n_instances": 5, "n_points": 16, "lmo_points": 5000},
}
RADII = (0.3, 0.6, 0.9, 1.2, 1.5)


def config(mode="quick", seed=0, out_dir=None, device="auto", n=None, m_small=0.5, m_large=1.2, dist=1.2,
           radius_frac=0.9, iters=None, n_pg=None, rsi_samples=None, rsi_n=20, n_h=None, iters_h=None,
           n_instances=None, n_points=None, lmo_points=None):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    ``n``: ambient dimension of the sphere S^(n-1); ``m_small``, ``m_large``: rows of A as multiples of n (the paper's
    250/500 = 0.5, and 1.2, where the optimum is on the boundary); ``dist``: d(x*, x_c); ``radius_frac``: R / dist;
    ``iters``: RFW iterations per step rule; ``n_pg``: projected-gradient iterations (they give f*); ``rsi_samples``,
    ``rsi_n``: samples per radius and dimension of the RSI estimate; ``n_h``, ``iters_h``: ambient dimension and
    iterations of the hyperbolic run; ``n_instances``: problem instances (independent draws); ``n_points``: sampled
    points of C for L-hat; ``lmo_points``: random boundary points per LMO check.
    """
    check_int("n", n, lo=3, hi=20_000, allow_none=True)
    m_small = check_float("m_small", m_small, lo=0.01, hi=10.0)
    m_large = check_float("m_large", m_large, lo=0.01, hi=10.0)
    if not m_small < m_large:
        raise ValueError(f"parameters 'm_small' ({m_small}) and 'm_large' ({m_large}): allowed: m_small < m_large")
    dist = check_float("dist", dist, lo=0.0, hi=1.5, lo_open=True)
    radius_frac = check_float("radius_frac", radius_frac, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    check_int("iters", iters, lo=30, hi=100_000, allow_none=True)
    check_int("n_pg", n_pg, lo=100, hi=1_000_000, allow_none=True)
    check_int("rsi_samples", rsi_samples, lo=20, hi=1_000_000, allow_none=True)
    rsi_n = check_int("rsi_n", rsi_n, lo=3, hi=10_000)
    check_int("n_h", n_h, lo=3, hi=20_000, allow_none=True)
    check_int("iters_h", iters_h, lo=30, hi=100_000, allow_none=True)
    check_int("n_instances", n_instances, lo=1, hi=100, allow_none=True)
    check_int("n_points", n_points, lo=1, hi=10_000, allow_none=True)
    check_int("lmo_points", lmo_points, lo=10, hi=1_000_000, allow_none=True)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, n=n,
                      m_small=m_small, m_large=m_large, dist=dist, radius_frac=radius_frac, iters=iters, n_pg=n_pg,
                      rsi_samples=rsi_samples, rsi_n=rsi_n, n_h=n_h, iters_h=iters_h, n_instances=n_instances,
                      n_points=n_points, lmo_points=lmo_points)
    cfg.params["m_ratios"] = (m_small, m_large)
    cfg.params["radii"] = RADII
    return cfg
