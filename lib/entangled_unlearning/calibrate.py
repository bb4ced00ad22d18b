"""Reprint the scan behind :data:`lib.entangled_unlearning.experiments.BASE_LR` (not used at run time).

    python -m lib.entangled_unlearning.calibrate [digits|gmm]               # base learning rates (BASE_LR)
    python -m lib.entangled_unlearning.calibrate [digits|gmm] --secondary   # baselines' secondary hyperparameters

For a calibration seed that no report uses (100), every method is run on a wide log grid of learning rates
(1e-4 ... 3e-1 in x~3 steps; ours: every Stage-1 x Stage-2 pair) with the run-time budget, and the run-time tuning
rule (:func:`~lib.entangled_unlearning.experiments.select`) picks one rate per method. Those are the base rates;
each run re-tunes around them on its own seed. Takes about a minute per task on one core.
"""
from __future__ import annotations

import sys

import pandas as pd

from .data import digits_superclass, hierarchical_gmm
from .evaluate import three_way_metrics
from .experiments import (BASE_LR, BUDGETS, GRIDS, SECONDARY, SECONDARY_GRID, Budget, _gen, run_baseline, run_ours,
                          select)
from .baselines import BASELINES
from .models import pretrain

WIDE = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
CALIBRATION_SEED = 100


def scan(task: str = "digits", seed: int = CALIBRATION_SEED) -> tuple[pd.DataFrame, dict]:
    budget: Budget = BUDGETS[task]
    if task == "digits":
        ds = digits_superclass("confusion", 3, seed)
    else:
        ds = hierarchical_gmm(delta=1.0, n_per=100, seed=seed)
    original = pretrain(ds, steps=budget.pretrain_steps, generator=_gen(seed, "pretrain"))
    retrain = pretrain(ds, steps=budget.pretrain_steps, generator=_gen(seed, "retrain"), retain_only=True)
    reference = three_way_metrics(retrain, ds)
    if task != "digits":
        reference["acc_train_forget"] = 100.0 / ds.n_classes
    target = reference["acc_train_forget"] + 5.0
    rows = []
    for name in BASELINES:
        for lr in WIDE:
            m, _ = run_baseline(name, original, ds, lr, budget, seed, tag=f"{lr:g}")
            rows.append({"method": name, "lr": lr, **three_way_metrics(m, ds)})
    for lr1 in WIDE:
        for lr2 in WIDE:
            run = run_ours(original, ds, lr1, lr2, budget, seed, tag=f"{lr1:g}-{lr2:g}")
            rows.append({"method": "ours", "lr": (lr1, lr2), **three_way_metrics(run["stage2"][0.5], ds)})
    df = pd.DataFrame(rows)
    picks = {name: select(grp, reference, target)["lr"] for name, grp in df.groupby("method", sort=False)}
    return df, picks


def _setup(task: str, seed: int):
    budget: Budget = BUDGETS[task]
    ds = digits_superclass("confusion", 3, seed) if task == "digits" else hierarchical_gmm(delta=1.0, n_per=100, seed=seed)
    original = pretrain(ds, steps=budget.pretrain_steps, generator=_gen(seed, "pretrain"))
    retrain = pretrain(ds, steps=budget.pretrain_steps, generator=_gen(seed, "retrain"), retain_only=True)
    reference = three_way_metrics(retrain, ds)
    if task != "digits":
        reference["acc_train_forget"] = 100.0 / ds.n_classes
    return budget, ds, original, reference, reference["acc_train_forget"] + 5.0


def scan_secondary(task: str = "digits", seed: int = CALIBRATION_SEED) -> tuple[pd.DataFrame, dict]:
    """Every combination of :data:`SECONDARY_GRID` for l1-sparse, SCRUB and NegGrad+, each on the run-time grid of
    learning-rate multipliers (quick mode's x1/3, x1, x3) around its base rate, on the calibration seed; the run-time
    rule picks one (rate, secondary) point per method and its secondary values are reported."""
    import itertools

    budget, ds, original, reference, target = _setup(task, seed)
    rows = []
    for name, grid in SECONDARY_GRID.items():
        keys = list(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            params = dict(zip(keys, values))
            for mult in GRIDS["quick"]:
                lr = BASE_LR[task][name] * mult
                m, _ = run_baseline(name, original, ds, lr, budget, seed, tag=f"{mult:g}", target=target, params=params)
                rows.append({"method": name, "lr": lr, "params": params, **three_way_metrics(m, ds)})
    df = pd.DataFrame(rows)
    picks = {name: select(grp.reset_index(drop=True), reference, target)["params"]
             for name, grp in df.groupby("method", sort=False)}
    return df, picks


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    task = args[0] if args else "digits"
    if "--secondary" in sys.argv[1:]:
        df, picks = scan_secondary(task)
        cols = ["method", "lr", "params", "acc_train_forget", "acc_val_adjacent", "acc_val_remote"]
        with pd.option_context("display.max_rows", 500, "display.width", 200, "display.max_colwidth", 60):
            print(df[cols].round(1).to_string())
        print("selected secondary hyperparameters:", picks)
        print("in use:                            ", SECONDARY[task])
        return
    df, picks = scan(task)
    cols = ["method", "lr", "acc_train_forget", "acc_val_adjacent", "acc_val_remote"]
    with pd.option_context("display.max_rows", 500, "display.width", 200):
        print(df[cols].round(1).to_string())
    print("selected base rates:", picks)
    print("in use:             ", BASE_LR[task])


if __name__ == "__main__":
    main()
