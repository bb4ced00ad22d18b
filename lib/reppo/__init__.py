"""REPPO (Voelcker, Brunnbauer et al.; ICLR 2026): Relative Entropy Pathwise Policy Optimization, in torch.

Modules: ``envs`` (``BatchedPendulum``, a torch-batched Pendulum-v1, and a gymnasium wrapper), ``hlgauss`` (the
categorical critic's targets), ``networks`` (actor, critic, normalisation, Adam), ``rollout`` (the on-policy rollout
and evaluation loops REPPO and PPO share), ``reppo`` (the algorithm, soft TD(λ), ablations), ``ppo`` (the PPO
baseline), ``sac`` (a replay-buffer reference), ``grad_variance``, ``memory``, ``experiments`` (one function per
figure) and ``plots``.
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config runs, so lib.common seeds torch too)

from lib.common import check_choice, check_float, check_int, make_config

from . import plots
from .envs import ENV_NAMES, GYM_TASKS, MUJOCO_TASKS, BatchedPendulum, GymnasiumBatch, env_spec, make_env
from .experiments import (
    Curves,
    Memory,
    ablation_claim,
    ablation_study,
    ablation_summary,
    learning_curves,
    memory_study,
    ppo_hp,
    reppo_hp,
    robustness_grid,
    robustness_summary,
    train_seeds,
    variance_ratio,
    variance_study,
)
from .hlgauss import decode, hl_gauss_targets
from .ppo import PpoHP, gae, ppo_clip_loss, train_ppo
from .reppo import ABLATIONS, ReppoHP, soft_td_lambda, train_reppo
from .sac import SacHP, train_sac

SLUG = "reppo"

SIZES = {
    "quick": {
        "total_steps": 40_960,  # 40 rollouts of 32 envs x 32 steps, for REPPO and PPO
        "n_train_seeds": 1,
        "n_envs": 32,
        "n_steps": 32,
        "reppo_minibatches": 8,  # REPPO: 4 epochs x 8 minibatches of 128; PPO: 16 epochs x 2 of 512
        "hidden": 64,
        "hidden_big": 128,  # network width on MuJoCo tasks
        "n_evals": 8,
        "eval_episodes": 32,
        "eval_episodes_mujoco": 4,
        "sac_steps": 0,  # no replay-buffer learning curve in quick mode
        "cleanrl_seeds": 0,  # no CleanRL-style PPO curve in quick mode
        "gym_envs": (),
        "gym_pendulum_steps": 0,
        "mujoco_steps": 0,
        "replay_size": 1_000_000,
        "peak_memory_steps": 0,  # no fresh-process memory measurements in quick mode
        "grid_lr": (3e-4, 3e-3),
        "grid_kl": (0.03, 0.3),
        "grid_clip": (0.1, 0.3),
        "grid_steps": 2_048,
        "ablation_steps": 2_048,
        "ablation_seeds": 1,
        "var_states": 256,
        "var_samples": (4, 16, 64),
        "var_repeats": 24,
    },
    "full": {
        "total_steps": 300_032,
        "n_train_seeds": 3,
        "n_envs": 32,
        "n_steps": 32,
        "reppo_minibatches": 8,
        "hidden": 64,
        "hidden_big": 128,
        "n_evals": 12,
        "eval_episodes": 32,
        "eval_episodes_mujoco": 4,
        "sac_steps": 60_000,
        "cleanrl_seeds": 1,
        "gym_envs": ("Pendulum-v1", "HalfCheetah-v5", "Hopper-v5"),
        "gym_pendulum_steps": 100_352,
        "mujoco_steps": 300_032,
        "replay_size": 1_000_000,
        "peak_memory_steps": 30_720,
        "grid_lr": (3e-4, 1e-3, 3e-3),
        "grid_kl": (0.03, 0.1, 0.3),
        "grid_clip": (0.1, 0.2, 0.3),
        "grid_steps": 61_440,
        "ablation_steps": 102_400,
        "ablation_seeds": 3,
        "var_states": 256,
        "var_samples": (2, 4, 16, 64),
        "var_repeats": 64,
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", env="BatchedPendulum", total_steps=None,
           n_train_seeds=None, lr=1e-3, kl_bound=0.1, gym_envs=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    env : main task of Figures 1-6 ("BatchedPendulum", or a gymnasium id such as "Pendulum-v1").
    total_steps : environment steps per training run in Figure 1 (None: 40 960 quick, 300 032 full).
    n_train_seeds : training seeds per method in Figure 1 (None: 1 quick, 3 full).
    lr : Adam step size of both algorithms (paper: 3e-4 with ~100x more gradient steps; see the notebook).
    kl_bound : REPPO's trust region ε_KL (paper 0.1).
    gym_envs : extra gymnasium tasks for Figure 1 (None: none in quick mode; Pendulum-v1, HalfCheetah-v5 and
        Hopper-v5 in full mode). MuJoCo tasks need the optional package ``mujoco``.
    Training runs on the CPU whatever ``device`` says (the networks are tiny); ``device`` is recorded.
    """
    check_choice("env", env, ENV_NAMES)
    check_int("total_steps", total_steps, lo=2_048, hi=20_000_000, allow_none=True)
    check_int("n_train_seeds", n_train_seeds, lo=1, hi=20, allow_none=True)
    check_float("lr", lr, lo=0.0, hi=0.1, lo_open=True)
    check_float("kl_bound", kl_bound, lo=0.0, lo_open=True)
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
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       env=env, total_steps=total_steps, n_train_seeds=n_train_seeds, lr=float(lr),
                       kl_bound=float(kl_bound), gym_envs=gym_envs)


__all__ = [
    "SLUG", "SIZES", "config", "plots", "BatchedPendulum", "GymnasiumBatch", "make_env", "env_spec",
    "hl_gauss_targets", "decode", "soft_td_lambda", "ReppoHP", "train_reppo", "ABLATIONS", "PpoHP", "train_ppo",
    "ppo_clip_loss", "gae", "SacHP", "train_sac", "Curves", "Memory", "learning_curves", "memory_study",
    "robustness_grid", "robustness_summary", "ablation_study", "ablation_summary", "ablation_claim",
    "variance_study", "variance_ratio", "reppo_hp", "ppo_hp", "train_seeds",
]
