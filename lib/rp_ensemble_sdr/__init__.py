"""Random-Projection Ensemble Dimension Reduction (Zhou & Cannings; ICLR 2026), in numpy.

Modules: ``projections`` (random p x d projections with unit-norm columns), ``base`` (the quadratic and linear base
regressions, batched over a group's M projections), ``rpedr`` (Algorithms 1-3), ``baselines`` (SIR, SAVE, pHd, DR,
OPG), ``metrics`` (projector distance), ``data`` (simulation models, real-data stand-ins, the UCI reader),
``experiments`` (one function per figure), ``plots``, ``make_data`` (regenerates the reader's fixtures).
"""
from __future__ import annotations

from lib.common import check_choice, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .base import BASES, quad_features
from .baselines import METHODS as BASELINES
from .baselines import dr, opg, phd, save, sdr, sir
from .data import MISSING_RULES, MODELS, UCI_EXPECTED, load_real, make_model, read_uci
from .experiments import (
    ALL_METHODS,
    convergence,
    dim_share,
    dim_table,
    distribution_checks,
    error_table,
    error_vs_L,
    monotone_ratio,
    projection_study,
    ranking,
    real_data_study,
    rmse_table,
    simulation_study,
    sir_gap,
)
from .metrics import subspace_dist
from .projections import DISTS, draw_projections
from .rpedr import null_median, rpedr, rpedr_dim_est, rpedr_double

SLUG = "rp_ensemble_sdr"

SIZES = {
    "quick": {
        "n_reps": 3,  # replicates per (model, n, p) in Figure 2
        "L": 50,  # groups of projections
        "m_per_p": 5,  # M = m_per_p * p projections per group (100 at p = 20)
        "n_null": 200,  # R, Algorithm 2's null draws
        "settings": ((200, 20),),
        "models": ("M1a", "M2", "M3"),
        "f1_models": ("M2",),
        "f1_L": (10, 25, 50),
        "f1_reps": 10,
        "f4_reps": 2,
        "f5_datasets": ("diabetes",),
        "f5_splits": 2,
        "n_tune": 2,  # OPG tuning replicates per setting
    },
    "full": {
        "n_reps": 50,
        "L": 200,
        "m_per_p": 10,
        "n_null": 2000,
        "settings": ((200, 20), (400, 30)),
        "models": ("M1a", "M2", "M3", "M4s", "M4d"),
        "f1_models": ("M1a", "M2", "M3"),
        "f1_L": (10, 25, 50, 100, 200, 400),
        "f1_reps": 10,
        "f4_reps": 20,
        "f5_datasets": ("diabetes", "star98", "friedman1"),
        "f5_splits": 10,
        "n_tune": 5,
    },
}

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.rp_ensemble_sdr.data:read_uci",
                                fixture="data/rp_ensemble_sdr/communities_like.data", expected=UCI_EXPECTED),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", n_reps=None, L=None, m_per_p=None, dist="mixed",
           base="quad", n_null=None, n_slices=10, data_path=None, target=None, drop_columns=None, missing="rows",
           data_d0=10, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    n_reps : Figure 2's replicates per model and (n, p) (None: 3 quick, 50 full).
    L, m_per_p : groups, and projections per group as a multiple of p (None: 50 and 5 quick; 200 and 10 full,
        the authors' L = 200, M = 10 p).
    dist : projection distribution, "mixed" (the authors' default), "norm" or "cauchy".
    base : base regression, "quad" (the authors' "poly") or "linear".
    n_null : Algorithm 2's null draws R (None: 200 quick, 2000 full; the authors use 10 000).
    n_slices : slices of SIR, SAVE and DR.
    data_path, target, drop_columns, missing, data_d0 : a UCI regression file for Figure 5 (see ``read_uci``).
    """
    check_int("n_reps", n_reps, lo=1, hi=500, allow_none=True)
    check_int("L", L, lo=2, hi=5000, allow_none=True)
    check_int("m_per_p", m_per_p, lo=1, hi=100, allow_none=True)
    check_choice("dist", dist, DISTS)
    check_choice("base", base, BASES)
    check_int("n_null", n_null, lo=10, hi=100_000, allow_none=True)
    check_int("n_slices", n_slices, lo=2, hi=100)
    check_choice("missing", missing, MISSING_RULES)
    check_int("data_d0", data_d0, lo=1, hi=100)
    if target is not None and not isinstance(target, str):
        raise ValueError(f"parameter 'target' got {target!r}; allowed: None (the last column) or a column name (str)")
    if drop_columns is not None and (not isinstance(drop_columns, (list, tuple))
                                     or not all(isinstance(c, str) for c in drop_columns)):
        raise ValueError(f"parameter 'drop_columns' got {drop_columns!r}; allowed: None or a list of column names")
    data_path = check_path("data_path", data_path)
    if data_path is None and (target is not None or drop_columns):
        raise ValueError("parameters 'target' and 'drop_columns' apply to a data_path file; data_path is None")
    if data_path is not None:
        ds = read_uci(data_path, target=target, drop_columns=drop_columns, missing=missing)  # fail now if unreadable
        if data_d0 >= ds.X.shape[1]:
            raise ValueError(f"parameter 'data_d0' got {data_d0}; allowed: fewer than the file's {ds.X.shape[1]} "
                             f"usable feature columns")
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       n_reps=n_reps, L=L, m_per_p=m_per_p, dist=dist, base=base, n_null=n_null, n_slices=n_slices,
                       data_path=data_path, target=target,
                       drop_columns=list(drop_columns) if drop_columns else None, missing=missing, data_d0=data_d0)


def user_data(cfg):
    """The user's UCI file as a RegressionData with d0 = cfg.data_d0 (None without a data_path)."""
    if cfg.data_path is None:
        return None
    ds = read_uci(cfg.data_path, target=cfg.target, drop_columns=cfg.drop_columns, missing=cfg.missing)
    ds.d0 = cfg.data_d0
    return ds


__all__ = [
    "SLUG", "SIZES", "LOADERS", "config", "user_data", "ALL_METHODS", "BASELINES", "MODELS",
    "draw_projections", "quad_features", "rpedr", "rpedr_dim_est", "rpedr_double", "null_median",
    "sdr", "sir", "save", "phd", "dr", "opg", "subspace_dist", "make_model", "load_real", "read_uci",
    "simulation_study", "error_table", "ranking", "sir_gap", "dim_table", "dim_share", "error_vs_L", "convergence", "monotone_ratio",
    "projection_study", "distribution_checks", "real_data_study", "rmse_table",
]
