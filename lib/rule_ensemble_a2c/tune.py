"""Regenerate the shipped tuning grid: ``python -m lib.rule_ensemble_a2c.tune --mode quick`` (or ``--mode full``).

Runs every method × learning rate of ``experiments.LR_GRID`` on the tuning seeds ``TUNING_SEEDS`` (never a claim
seed) at the mode's budget with the notebook's default configuration, and writes
``data/rule_ensemble_a2c/tuning_<mode>.csv`` (one row per run: env, method, lr, seed, final return, mean return
over evaluations, steps, configuration fingerprint). ``--envs`` restricts the environments (rows of other
environments already in the file are kept); ``--workers`` sets the processes (the rows do not depend on it).

The file is rewritten after every finished run, and a run whose row (same environment, fingerprint, method,
learning rate and seed) is already in the file is not run again: an interrupted call resumes where it stopped,
and the finished file is the same as from one uninterrupted call (rows in grid order, numbers to 6 digits).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd

from . import config
from .experiments import iter_jobs, tuning_jobs, tuning_key, tuning_path

COLUMNS = ["env", "method", "lr", "seed", "final", "auc", "steps", "key"]


def _write(path: Path, keep: pd.DataFrame, rows: list, order: list) -> None:
    """``keep`` (rows of other environments, as read) then ``rows`` in grid ``order``; atomic replace."""
    rank = {j: i for i, j in enumerate(order)}
    rows = sorted(rows, key=lambda r: rank[(r["env"], r["method"], float(r["lr"]), int(r["seed"]))])
    table = pd.concat([keep, pd.DataFrame(rows, columns=COLUMNS)], ignore_index=True)
    tmp = path.with_suffix(".tmp")
    table.to_csv(tmp, index=False, float_format="%.6g")
    os.replace(tmp, path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("quick", "full"), default="quick")
    ap.add_argument("--envs", nargs="*", default=None)
    ap.add_argument("--workers", type=int, default=None, help="processes (default: 1 quick, 2 full)")
    args = ap.parse_args(argv)
    os.environ.setdefault("ICLR26_PROGRESS", "0")
    cfg = config(mode=args.mode, envs=args.envs, verbose=False, out_dir="/tmp/rule_ensemble_a2c_tune",
                 workers=args.workers)
    path = tuning_path(args.mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=COLUMNS)
    keys = {env: tuning_key(cfg, env) for env in cfg.envs}
    mine = old["env"].isin(cfg.envs)
    keep = old[~mine]
    order = tuning_jobs(cfg)
    rows = [r for r in old[mine].to_dict("records") if r["key"] == keys[r["env"]]
            and (r["env"], r["method"], float(r["lr"]), int(r["seed"])) in set(order)]
    have = {(r["env"], r["method"], float(r["lr"]), int(r["seed"])) for r in rows}
    todo = [j for j in order if j not in have]
    if have:
        print(f"{len(have)} runs already in {path.name}; {len(todo)} to run")
    for row in iter_jobs(cfg, "tune", todo, desc="tuning"):
        rows.append(row)
        _write(path, keep, rows, order)
    _write(path, keep, rows, order)
    print(f"wrote {path} ({len(keep) + len(rows)} rows)")


if __name__ == "__main__":
    main()
