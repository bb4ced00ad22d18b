"""Newton Method Revisited: Global Convergence Rates up to O(k^-3) for Stepsize Schedules and Linesearch
Procedures (Hanzely, Abdukhakimov, Takáč; ICLR 2026).

Modules: :mod:`.problems` (logistic regression, polytope feasibility, Rosenbrock, LIBSVM loading),
:mod:`.newton` (the stepsize rules and one driver, :func:`.newton.run`), :mod:`.experiments` (one function per
figure and per claim), :mod:`.plots`, :mod:`.make_data` (the tiny LIBSVM fixture).
"""
from __future__ import annotations

from lib.common import check_bool, check_float, check_int, check_path, make_config

from . import experiments, newton, plots, problems  # noqa: F401

SLUG = "newton_stepsizes"

SIZES = {
    "quick": {"n_iters": 100, "grid_points": 60, "polytope_n": 50, "rosenbrock_inits": 2, "duality_points": 2,
              "synthetic": False},
    "full": {"n_iters": 200, "grid_points": 400, "polytope_n": 100, "rosenbrock_inits": 5, "duality_points": 10,
             "synthetic": True},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, mu=1e-3, n_iters=None,
           grid_points=None, polytope_n=None, rosenbrock_inits=None, duality_points=None, synthetic=None):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    ``data_path``: a LIBSVM file for the logistic-regression experiments (default: scikit-learn's breast
    cancer set). ``mu``: l2 regularisation. ``n_iters``: iterations per run. ``grid_points``: log-grid size of
    the GRLS / greedy-Newton linesearch. ``polytope_n``: polytope dimension (m = 2n constraints).
    ``rosenbrock_inits``: random starts on Rosenbrock. ``duality_points``: random points of the duality check.
    ``synthetic``: also run the synthetic 1000 x 100 logistic set.
    """
    data_path = check_path("data_path", data_path)
    mu = check_float("mu", mu, lo=0.0, lo_open=True)
    check_int("n_iters", n_iters, lo=10, hi=5000, allow_none=True)
    check_int("grid_points", grid_points, lo=10, hi=5000, allow_none=True)
    check_int("polytope_n", polytope_n, lo=2, hi=2000, allow_none=True)
    check_int("rosenbrock_inits", rosenbrock_inits, lo=1, hi=100, allow_none=True)
    check_int("duality_points", duality_points, lo=1, hi=100, allow_none=True)
    check_bool("synthetic", synthetic, allow_none=True)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES,
                       data_path=data_path, mu=mu, n_iters=n_iters, grid_points=grid_points, polytope_n=polytope_n,
                       rosenbrock_inits=rosenbrock_inits, duality_points=duality_points, synthetic=synthetic)
