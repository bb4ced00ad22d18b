"""Regenerate the shipped tuning grid: ``python -m lib.rule_ensemble_a2c.tune --mode quick``.

Runs every method × learning rate of ``experiments.LR_GRID`` on the tuning seeds ``TUNING_SEEDS`` (never a claim
seed) at the mode's budget with the notebook's default configuration, and writes
``data/rule_ensemble_a2c/tuning_<mode>.csv`` (one row per run: env, method, lr, seed, final return, mean return
over evaluations, steps, configuration fingerprint). ``--envs`` restricts the environments (rows of other
environments already in the file are kept).
"""
from __future__ import annotations

import argparse
import os

import pandas as pd

from . import config
from .experiments import run_tuning, tuning_path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("quick", "full"), default="quick")
    ap.add_argument("--envs", nargs="*", default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("ICLR26_PROGRESS", "0")
    cfg = config(mode=args.mode, envs=args.envs, verbose=False, out_dir="/tmp/rule_ensemble_a2c_tune")
    table = run_tuning(cfg)
    path = tuning_path(args.mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        old = pd.read_csv(path)
        table = pd.concat([old[~old["env"].isin(cfg.envs)], table], ignore_index=True)
    table.to_csv(path, index=False, float_format="%.6g")
    print(f"wrote {path} ({len(table)} rows)")


if __name__ == "__main__":
    main()
