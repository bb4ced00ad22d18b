"""Machine Unlearning under Retain-Forget Entanglement (Cheng, Liu, Li, Zhang; ICLR 2026), reimplemented in torch
on small hierarchical-label tasks.

Modules: ``data`` (digits super-classes, the hierarchical Gaussian mixture, the CIFAR-100 reader), ``models``
(the flat-parameter MLP, minibatch streams, Adam/SGD), ``method`` (Stage 1 augmented Lagrangian, Stage 2
W2-regularised projected descent), ``baselines`` (FT, GA, l1-sparse, SCRUB, NegGrad+), ``evaluate`` (three-way
metrics, SVC-MIA), ``experiments`` (one function per figure, the tuning protocol, the claims), ``plots``,
``calibrate`` (reprints the scan behind the base learning rates), ``make_data`` (the CIFAR-format fixture).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so lib.common's seeding also seeds torch)

from lib.common import check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .baselines import BASELINES
from .data import DIGIT_PAIRS, confusion_pairs, digits_superclass, hierarchical_gmm, read_cifar100
from .experiments import (
    BASE_LR,
    BUDGETS,
    GRIDS,
    METHOD_ORDER,
    all_trials,
    claim_values,
    digits_runs,
    gap_table,
    run_sweep,
    summary_table,
    sweep_claim,
    sweep_summary,
    sweep_view,
    table_view,
)
from .method import clipped_ce, project_out, stage1_augmented_lagrangian, stage2_wpgd, w2_sq_sorted

SLUG = "entangled_unlearning"

LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.entangled_unlearning.data:check_cifar100",
        fixture="data/entangled_unlearning/cifar-100-python", kind="folder", target="train",
        expected="the python version of CIFAR-100: cifar-100-python with the pickled dicts train and test "
                 "(b'data' n x 3072 uint8, b'fine_labels', b'coarse_labels')"),
}

SIZES = {
    "quick": {"n_seeds": 1, "grid": "quick", "deltas": (0.25, 1.0, 4.0), "n_per": 60},
    "full": {"n_seeds": 3, "grid": "full", "deltas": (0.25, 0.5, 1.0, 2.0, 4.0), "n_per": 300},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, forget_digit=3, pairs="confusion",
           alpha=0.5, n_seeds=None, deltas=None, n_per=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (digits) or the CIFAR-100 python folder, replacing digits in Figures 1, 3, 4 and 5.
    forget_digit : the digit to forget (its partner in the confusion pairing is the adjacent set).
    pairs : "confusion" or five digit pairs, e.g. [[3, 8], [4, 9], [1, 7], [5, 6], [0, 2]].
    alpha : the W2 weight of Stage 2 (the paper: 0.5); the ablation always uses 0.
    n_seeds : seeds per experiment (None: 1 quick, 3 full); deltas, n_per : the mixture sweep.
    """
    check_int("forget_digit", forget_digit, lo=0, hi=9)
    if isinstance(pairs, str):
        check_choice("pairs", pairs, ["confusion"])
    else:
        digits_superclass(pairs, forget_digit, 0)  # raises a ValueError naming 'pairs' if they are not 5 pairs
        pairs = [tuple(int(v) for v in p) for p in pairs]
    check_float("alpha", alpha, lo=0.0, hi=1.0)
    check_int("n_seeds", n_seeds, lo=1, hi=10, allow_none=True)
    if deltas is not None:
        if not isinstance(deltas, (list, tuple)) or not deltas:
            raise ValueError(f"parameter 'deltas' got {deltas!r}; allowed: None or a non-empty list of numbers > 0")
        deltas = tuple(check_float("deltas", d, lo=0.0, lo_open=True) for d in deltas)
    check_int("n_per", n_per, lo=20, hi=2000, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        read_cifar100(data_path, n_train_per_class=1, n_val_per_class=1)  # fail now if it is not CIFAR-100
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, forget_digit=forget_digit, pairs=pairs, alpha=float(alpha),
                       n_seeds=n_seeds, deltas=deltas, n_per=n_per)


__all__ = [
    "SLUG", "SIZES", "LOADERS", "config", "BASELINES", "BASE_LR", "BUDGETS", "GRIDS", "METHOD_ORDER", "DIGIT_PAIRS",
    "confusion_pairs", "digits_superclass", "hierarchical_gmm", "read_cifar100", "clipped_ce", "project_out",
    "stage1_augmented_lagrangian", "stage2_wpgd", "w2_sq_sorted", "digits_runs", "run_sweep", "summary_table",
    "gap_table", "sweep_claim", "sweep_summary", "claim_values", "all_trials", "table_view", "sweep_view",
]
