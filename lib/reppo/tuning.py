"""The tuning scan: the same small grid for REPPO and PPO at the same budget, on tuning seeds kept apart from the
claim's seeds (the notebook's training seeds are 0..119 and +1000 offsets; tuning uses 9000, 9001).

Grid: Adam learning rate × trust-region size (REPPO's KL bound ε_KL, PPO's clip ε); score: the area under the
deterministic-policy return curve per environment step (``auc``: the trapezoid over the evaluations, divided by the
run's steps, i.e. the mean return over training), averaged over the tuning seeds. The best cell of each method sets
its learning rate and trust region for Figure 1. ``python -m lib.reppo.tune`` regenerates
``data/reppo/tuning_scan.json``; the notebook reads that file (both modes) and draws it as Figure 4.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pandas as pd

from lib.common import data_dir

from .ppo import PpoHP, train_ppo
from .reppo import ReppoHP, train_reppo

GRID_LR = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
GRID_KL = (0.03, 0.1, 0.3)
GRID_CLIP = (0.1, 0.2, 0.3)
TUNING_SEEDS = (9000, 9001)
SCAN = dict(env="BatchedPendulum", total_steps=40_960, n_envs=32, n_steps=32, hidden=64, reppo_minibatches=8,
            n_evals=8, eval_episodes=32)
SCAN_FILE = "tuning_scan.json"


def auc(steps, returns) -> float:
    """Area under the return curve per environment step: ∫ return d(steps) / (last − first step)."""
    s, r = np.asarray(steps, float), np.asarray(returns, float)
    if len(s) < 2 or s[-1] <= s[0]:
        raise ValueError("auc needs at least two evaluations at increasing steps")
    return float(np.sum(0.5 * (r[1:] + r[:-1]) * np.diff(s)) / (s[-1] - s[0]))


def scan_hp(algo: str, lr: float, knob: float, setting: dict = SCAN):
    """The configuration of one grid cell (the notebook's Figure 1 uses the same builder)."""
    if algo == "REPPO":
        return ReppoHP(n_envs=setting["n_envs"], n_steps=setting["n_steps"], epochs=4,
                       minibatches=setting["reppo_minibatches"], hidden=setting["hidden"], lr=lr, kl_bound=knob)
    if algo == "PPO":
        return PpoHP(n_envs=setting["n_envs"], n_steps=setting["n_steps"], hidden=setting["hidden"], lr=lr,
                     clip=knob)
    raise ValueError(f"algo must be 'REPPO' or 'PPO', got {algo!r}")


def run_scan(lrs=GRID_LR, kls=GRID_KL, clips=GRID_CLIP, seeds=TUNING_SEEDS, setting: dict = SCAN,
             log: Optional[Callable[[str], None]] = print) -> pd.DataFrame:
    """Train every cell of the grid on every tuning seed; one row per (algo, lr, trust_region, seed)."""
    rows = []
    steps = setting["total_steps"]
    for algo, knobs in (("REPPO", kls), ("PPO", clips)):
        fn = train_reppo if algo == "REPPO" else train_ppo
        for lr in lrs:
            for k in knobs:
                for s in seeds:
                    t0 = time.perf_counter()
                    res = fn(env_name=setting["env"], total_steps=steps, hp=scan_hp(algo, lr, k, setting), seed=s,
                             eval_every=max(steps // setting["n_evals"], 1), eval_episodes=setting["eval_episodes"])
                    row = dict(algo=algo, lr=lr, trust_region=k, seed=s,
                               auc=auc(res.curve["steps"], res.curve["return"]), final_return=res.final_return,
                               wall_s=time.perf_counter() - t0)
                    rows.append(row)
                    if log:
                        log(f"{algo:5s} lr={lr:g} tr={k:g} seed={s}: auc {row['auc']:.0f} final "
                            f"{row['final_return']:.0f} ({row['wall_s']:.1f} s)")
    return pd.DataFrame(rows)


def summarize(scan: pd.DataFrame) -> pd.DataFrame:
    """Mean AUC and final return per cell over the tuning seeds."""
    return (scan.groupby(["algo", "lr", "trust_region"], sort=False)[["auc", "final_return"]].mean()
            .reset_index())


def best(scan: pd.DataFrame) -> dict:
    """{algo: {"lr", "trust_region", "auc"}}: the cell with the highest mean AUC of each method."""
    s = summarize(scan)
    out = {}
    for algo, d in s.groupby("algo", sort=False):
        r = d.loc[d["auc"].idxmax()]
        out[algo] = dict(lr=float(r["lr"]), trust_region=float(r["trust_region"]), auc=float(r["auc"]))
    return out


def write_scan(scan: pd.DataFrame, path, setting: dict = SCAN) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = dict(description="REPPO/PPO tuning scan (lib/reppo/tuning.py): lr x trust region, AUC of the return "
                           "curve per step, tuning seeds apart from the claim's seeds",
               setting=setting, seeds=sorted({int(s) for s in scan["seed"]}), best=best(scan),
               rows=[{k: (float(v) if k not in ("algo", "seed") else (int(v) if k == "seed" else v))
                      for k, v in r.items() if k != "wall_s"} for r in scan.to_dict("records")])
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load_scan(path=None) -> tuple[pd.DataFrame, dict]:
    """The shipped scan (``data/reppo/tuning_scan.json`` unless ``path``): its rows and the best cells."""
    path = Path(path) if path is not None else data_dir("reppo") / SCAN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"tuning scan {path} is missing; regenerate it with `python -m lib.reppo.tune`")
    doc = json.loads(path.read_text())
    need = {"algo", "lr", "trust_region", "seed", "auc", "final_return"}
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not rows or not all(isinstance(r, dict) and need <= set(r) for r in rows):
        raise ValueError(f"tuning scan {path} is malformed: expected 'rows' with keys {sorted(need)}")
    scan = pd.DataFrame(rows)
    return scan, best(scan)



def read_scan(path):
    """``scan_path``'s loader: :func:`load_scan` on a user's file, every failure a ValueError naming the parameter."""
    from lib.common.userfiles import UserFileError

    expected = "the JSON written by `python -m lib.reppo.tune` ({'rows': [{'algo', 'lr', 'trust_region', 'seed', " \
               "'auc', 'final_return'}, ...]})"
    try:
        return load_scan(path)
    except (ValueError, OSError, TypeError, KeyError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise UserFileError("scan_path", path, f"could not be read ({type(exc).__name__}: {exc})",
                            expected=expected) from exc

__all__ = ["GRID_LR", "GRID_KL", "GRID_CLIP", "TUNING_SEEDS", "SCAN", "auc", "scan_hp", "run_scan", "summarize",
           "best", "write_scan", "load_scan", "read_scan"]
