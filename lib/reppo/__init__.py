"""REPPO (Voelcker, Brunnbauer et al.; ICLR 2026): Relative Entropy Pathwise Policy Optimization, in torch.

Modules: ``envs`` (``BatchedPendulum``, a torch-batched Pendulum-v1, and a gymnasium wrapper), ``hlgauss`` (the
categorical critic's targets), ``networks`` (actor, critic, normalisation, Adam), ``rollout`` (the on-policy rollout
and evaluation loops REPPO and PPO share), ``reppo`` (the algorithm, soft TD(λ), ablations), ``ppo`` (the PPO
baseline), ``sac`` (a replay-buffer reference), ``grad_variance``, ``memory``, ``experiments`` (one function per
figure) and ``plots``.
"""
from __future__ import annotations

import os

import torch  # noqa: F401  (imported before config runs, so lib.common seeds torch too)

from lib.common import check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .envs import ENV_NAMES, GYM_TASKS, MUJOCO_TASKS, BatchedPendulum, GymnasiumBatch, env_spec, make_env
from .experiments import (
    Curves,
    Memory,
    MATCHED,
    PPO,
    ablation_claim,
    ablation_study,
    start_ablations,
    ablation_summary,
    learning_curves,
    memory_study,
    ppo_hp,
    reppo_hp,
    robustness_grid,
    robustness_summary,
    train_seeds,
    tuned,
    variance_ratio,
    variance_study,
)
from .hlgauss import decode, hl_gauss_targets
from .ppo import PpoHP, ValueNorm, gae, matched_ppo_hp, ppo_clip_loss, train_ppo, value_loss
from .tuning import auc, load_scan
from .reppo import ABLATIONS, ReppoHP, soft_td_lambda, train_reppo
from .sac import SacHP, train_sac

SLUG = "reppo"


def __getattr__(name):
    """``plots`` (matplotlib and seaborn, about 1.4 s) loads on first use: the worker processes that train Figure 1
    import this package too and draw nothing."""
    if name == "plots":
        import importlib

        return importlib.import_module(".plots", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

SIZES = {
    "quick": {
        "total_steps": 40_960,  # 40 rollouts of 32 envs x 32 steps, for REPPO and PPO (the tuning scan's budget)
        "n_train_seeds": 2,  # Figure 1's band: two seeds per method
        "matched_seeds": 0,  # the matched-update PPO row: full mode only
        "n_envs": 32,
        "n_steps": 32,
        "reppo_minibatches": 8,  # REPPO: 4 epochs x 8 minibatches of 128; PPO (CleanRL): 10 epochs x 8
        "hidden": 64,
        "hidden_big": 128,  # network width on MuJoCo tasks
        "n_evals": 8,  # an evaluation every 5120 steps
        "n_evals_mujoco": 6,
        "eval_episodes": 32,
        "eval_episodes_mujoco": 4,
        "gym_envs": (),
        "mujoco_steps": 0,
        "mujoco_seeds": 0,
        "replay_size": 1_000_000,
        "peak_memory_steps": 0,  # no fresh-process memory measurements in quick mode
        "ablation_steps": 2_048,
        "ablation_seeds": 1,
        "var_states": 256,
        "var_samples": (4, 16, 64),
        "var_repeats": 24,
    },
    "full": {
        "total_steps": 81_920,
        "n_train_seeds": 5,
        "matched_seeds": 5,
        "n_envs": 32,
        "n_steps": 32,
        "reppo_minibatches": 8,
        "hidden": 64,
        "hidden_big": 128,
        "n_evals": 16,  # every 5120 steps, as in quick mode
        "n_evals_mujoco": 6,
        "eval_episodes": 32,
        "eval_episodes_mujoco": 4,
        "gym_envs": ("HalfCheetah-v5", "Hopper-v5"),
        "mujoco_steps": 40_960,
        "mujoco_seeds": 3,
        "replay_size": 1_000_000,
        "peak_memory_steps": 20_480,
        "ablation_steps": 40_960,
        "ablation_seeds": 2,
        "var_states": 256,
        "var_samples": (2, 4, 16, 64),
        "var_repeats": 64,
    },
}



LOADERS = {
    "scan_path": UserFileLoader(
        "scan_path", "lib.reppo.tuning:read_scan", fixture="data/reppo/tuning_scan.json",
        skip={"truncated": "the scan's last line is a lone closing brace, so cutting it in half leaves the document "
                           "intact (a truncation inside the rows is refused)"}),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", env="BatchedPendulum", total_steps=None,
           n_train_seeds=None, lr=None, kl_bound=None, gym_envs=None, scan_path=None, workers=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    env : main task of Figures 1-6 ("BatchedPendulum", or a gymnasium id such as "Pendulum-v1").
    total_steps : environment steps per training run in Figure 1 (None: 40 960 quick, 300 032 full).
    n_train_seeds : training seeds per method in Figure 1 (None: 2 quick, 5 full).
    lr : None: each method's tuned learning rate from the tuning scan; a number: that lr for both on Pendulum.
    kl_bound : None: REPPO's tuned ε_KL from the scan (paper 0.1); a number overrides it.
    gym_envs : extra gymnasium tasks for Figure 1 (None: none in quick mode; HalfCheetah-v5 and Hopper-v5 in full
        mode). MuJoCo tasks need the optional package ``mujoco``.
    scan_path : the tuning scan JSON (None: data/reppo/tuning_scan.json, made by ``python -m lib.reppo.tune``).
    workers : processes for Figure 1's independent training runs (None: 2, or 1 on a one-core machine); the
        numbers do not depend on it, only the wall-clock does.
    Training runs on the CPU whatever ``device`` says (the networks are tiny); ``device`` is recorded.
    """
    check_choice("env", env, ENV_NAMES)
    check_int("total_steps", total_steps, lo=2_048, hi=20_000_000, allow_none=True)
    check_int("n_train_seeds", n_train_seeds, lo=1, hi=20, allow_none=True)
    check_int("workers", workers, lo=1, hi=64, allow_none=True)
    check_float("lr", lr, lo=0.0, hi=0.1, lo_open=True, allow_none=True)
    check_float("kl_bound", kl_bound, lo=0.0, lo_open=True, allow_none=True)
    scan_path = check_path("scan_path", scan_path)
    if gym_envs is not None:
        if isinstance(gym_envs, str) or not all(isinstance(e, str) for e in gym_envs):
            raise ValueError(f"parameter 'gym_envs' got {gym_envs!r}; allowed: None or a list of ids from "
                             + ", ".join(map(repr, GYM_TASKS)))
        for e in gym_envs:
            check_choice("gym_envs", e, GYM_TASKS)
        gym_envs = tuple(gym_envs)
    wanted = gym_envs if gym_envs is not None else SIZES[mode]["gym_envs"] if mode in SIZES else ()
    for e in (env,) + tuple(wanted):
        if e in MUJOCO_TASKS:
            from .envs import _require_mujoco

            _require_mujoco(e, "gym_envs" if e != env else "env")
    from .tuning import load_scan

    LOADERS["scan_path"](scan_path)  # refuse a missing or malformed scan before any training, naming the parameter
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       env=env, total_steps=total_steps, n_train_seeds=n_train_seeds,
                       lr=None if lr is None else float(lr), kl_bound=None if kl_bound is None else float(kl_bound),
                       gym_envs=gym_envs, scan_path=scan_path,
                       workers=int(workers) if workers is not None else min(2, os.cpu_count() or 1))


__all__ = [
    "LOADERS",
    "SLUG", "SIZES", "config", "plots", "BatchedPendulum", "GymnasiumBatch", "make_env", "env_spec",
    "hl_gauss_targets", "decode", "soft_td_lambda", "ReppoHP", "train_reppo", "ABLATIONS", "PpoHP", "train_ppo",
    "ppo_clip_loss", "gae", "SacHP", "train_sac", "Curves", "Memory", "learning_curves", "memory_study",
    "robustness_grid", "robustness_summary", "start_ablations", "ablation_study", "ablation_summary", "ablation_claim",
    "variance_study", "variance_ratio", "reppo_hp", "ppo_hp", "train_seeds", "tuned", "matched_ppo_hp",
    "value_loss", "ValueNorm", "auc", "load_scan", "PPO", "MATCHED",
]
