"""Hinge Regression Tree (Li, Lin, Xu; ICLR 2026): oblique regression-tree splits by damped Gauss-Newton.

Modules: ``solver`` (the node solver), ``tree`` (``HRTRegressor``), ``baselines`` (``LinearModelTree``),
``data`` (generators and the kin8nm reader), ``experiments`` (one function per figure), ``plots``,
``make_data`` (regenerates the small fixtures under ``data/hinge_regression_tree/``).
"""
from __future__ import annotations

from lib.common import check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .baselines import LinearModelTree
from .data import DATASETS, KIN8NM_EXPECTED, read_kin8nm
from .experiments import (
    approximation_rate,
    converged_share,
    convergence_summary,
    curve_view,
    iteration_study,
    leaves_curve,
    partition_2d,
    root_traces,
    run_benchmark,
    single_tree_table,
    slope_table,
    stop_table,
    summary_table,
    table_view,
    trace_table,
    tuned_view,
)
from .solver import gauss_newton_step, hinge_split, ridge_ols
from .tree import HRTRegressor

SLUG = "hinge_regression_tree"

# The user-file parameters (lib.common.userfiles contract): kin8nm as DELVE or the HRT repository distributes it.
LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.hinge_regression_tree.data:read_kin8nm",
                                fixture="data/hinge_regression_tree/kin8nm_delve_sample.data",
                                expected=KIN8NM_EXPECTED,
                                skip={"gzip": "DELVE distributes kin8nm as Dataset.data.gz; the reader decompresses "
                                              "gzip itself (other compressions are refused)"}),
}

SIZES = {
    "quick": {
        "n_samples": 2000,  # kin-like and hinge data (half for training)
        "n_friedman": 1000,
        "n_reps": 2,
        "datasets": ("kin_like", "friedman1", "diabetes", "hinge"),
        "tuning": "holdout",  # baselines tuned on one validation split of the training half, small grids
        "curve_hrt_depth": 7,
        "curve_lmt_depth": 8,
        "curve_cart_depth": 12,
        "rate_n1": 2000,
        "rate_depth1": 6,
        "rate_n2": 3000,
        "rate_depth2": 7,
        "n_2d": 1500,
        "study_settings": ("auto", "0.1"),  # node-solver settings of Figure 2 (see experiments.study_settings)
    },
    "full": {
        "n_samples": 8192,
        "n_friedman": 2000,
        "n_reps": 5,
        "datasets": DATASETS,
        "tuning": "cv5",  # the paper's grids, 5-fold CV on the first split's training half
        "curve_hrt_depth": 8,
        "curve_lmt_depth": 10,
        "curve_cart_depth": 14,
        "rate_n1": 8000,
        "rate_depth1": 8,
        "rate_n2": 16000,
        "rate_depth2": 10,
        "n_2d": 3000,
        "study_settings": ("auto", "0.5", "0.1", "auto, α=0"),
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, n_samples=None, n_reps=None,
           max_depth=6, step_size="auto", ridge_alpha=1.0, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (the kin-like generator) or the paper's kin8nm file (DELVE whitespace or HRT comma format).
    n_samples : size of the kin-like and hinge data sets (None: 2000 quick, 8192 full).
    n_reps : number of 50/50 splits (None: 2 quick, 5 full).
    max_depth, step_size, ridge_alpha : HRT's setting (the paper's kin8nm run: 6, "auto", 1.0).
    """
    check_int("n_samples", n_samples, lo=200, hi=200_000, allow_none=True)
    check_int("n_reps", n_reps, lo=1, hi=50, allow_none=True)
    check_int("max_depth", max_depth, lo=1, hi=12)
    if isinstance(step_size, str):
        check_choice("step_size", step_size, ["auto"])
    else:
        try:
            check_float("step_size", step_size, lo=0.0, hi=1.0, lo_open=True)
        except ValueError:
            raise ValueError(f"parameter 'step_size' got {step_size!r}; allowed: 'auto' or a number in (0, 1]") \
                from None
    check_float("ridge_alpha", ridge_alpha, lo=0.0)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        read_kin8nm(data_path)  # fail now, with a clear message, if the file is not kin8nm as distributed
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, n_samples=n_samples, n_reps=n_reps, max_depth=max_depth,
                       step_size=step_size, ridge_alpha=float(ridge_alpha))


__all__ = [
    "SLUG", "SIZES", "config", "HRTRegressor", "LinearModelTree", "hinge_split", "gauss_newton_step", "ridge_ols",
    "read_kin8nm", "run_benchmark", "summary_table", "single_tree_table", "root_traces", "iteration_study",
    "leaves_curve", "approximation_rate", "slope_table", "partition_2d", "convergence_summary", "stop_table",
    "converged_share", "table_view", "trace_table", "tuned_view", "curve_view", "LOADERS",
]
