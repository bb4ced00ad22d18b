"""Newton Method Revisited: Global Convergence Rates up to O(k^-3) for Stepsize Schedules and Linesearch
Procedures (Hanzely, Abdukhakimov, Takáč; ICLR 2026).

Modules: :mod:`.problems` (logistic regression, polytope feasibility, Rosenbrock, the LIBSVM reader),
:mod:`.newton` (the stepsize rules and one driver, :func:`.newton.run`), :mod:`.experiments` (one function per
figure and per claim), :mod:`.plots`, :mod:`.make_data` (the tiny LIBSVM fixture).
"""
from __future__ import annotations

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from . import experiments, newton, plots, problems  # noqa: F401
from .problems import LIBSVM_EXPECTED, read_libsvm

SLUG = "newton_stepsizes"

# The user-file parameter (lib.common.userfiles contract): a LIBSVM/svmlight file, as on the LIBSVM data page.
LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.newton_stepsizes.problems:read_libsvm", fixture="data/newton_stepsizes/tiny_libsvm.txt",
        expected=LIBSVM_EXPECTED,
        skip={"gzip": "the reader decompresses gzip itself (LIBSVM sets are often shared as .gz); other "
                       "compressions are refused",
              "field_missing": "LIBSVM rows are sparse: a row may omit any feature, so a row with one pair fewer "
                               "is a valid row",
              "truncated": "a last row cut short is again a valid sparse row whenever the cut ends a number "
                           "('3:1.3139' cut to '3:1'); a cut that leaves '3:' or '3' is refused"}),
}

SIZES = {
    "quick": {"n_iters": 100, "grid_points": 60, "polytope_n": 50, "rosenbrock_inits": 2, "duality_points": 2,
              "synthetic": False, "n_rows": 2000},
    "full": {"n_iters": 200, "grid_points": 400, "polytope_n": 100, "rosenbrock_inits": 5, "duality_points": 10,
             "synthetic": True, "n_rows": None},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, n_rows=None, mu=1e-3, n_iters=None,
           grid_points=None, polytope_n=None, rosenbrock_inits=None, duality_points=None, synthetic=None):
    """Validate the parameters, merge the mode's sizes, seed everything and print the configuration.

    ``data_path``: a LIBSVM file for the logistic-regression experiments (default: scikit-learn's digits,
    0-4 vs 5-9). ``n_rows``: rows of that file to use, a seeded uniform subset (None: 2000 in quick mode, every
    row in full mode). ``mu``: l2 regularisation. ``n_iters``: iteration cap of the Newton-type methods (the
    gradient method gets 20x). ``grid_points``: log-grid size of the GRLS / greedy-Newton linesearch.
    ``polytope_n``: polytope dimension (m = 2n constraints). ``rosenbrock_inits``: random starts on Rosenbrock.
    ``duality_points``: random points of the duality check. ``synthetic``: also run the synthetic 1000 x 100
    logistic set as a primary problem.
    """
    data_path = check_path("data_path", data_path)
    check_int("n_rows", n_rows, lo=10, hi=10_000_000, allow_none=True)
    mu = check_float("mu", mu, lo=0.0, lo_open=True)
    check_int("n_iters", n_iters, lo=10, hi=5000, allow_none=True)
    check_int("grid_points", grid_points, lo=10, hi=5000, allow_none=True)
    check_int("polytope_n", polytope_n, lo=2, hi=2000, allow_none=True)
    check_int("rosenbrock_inits", rosenbrock_inits, lo=1, hi=100, allow_none=True)
    check_int("duality_points", duality_points, lo=1, hi=100, allow_none=True)
    check_bool("synthetic", synthetic, allow_none=True)
    if data_path is not None:
        read_libsvm(data_path)  # fail now, with a clear message, if the file is not a usable LIBSVM file
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES,
                       data_path=data_path, n_rows=n_rows, mu=mu, n_iters=n_iters, grid_points=grid_points,
                       polytope_n=polytope_n, rosenbrock_inits=rosenbrock_inits, duality_points=duality_points,
                       synthetic=synthetic)


__all__ = ["SLUG", "SIZES", "LOADERS", "config", "read_libsvm", "experiments", "newton", "plots", "problems"]
