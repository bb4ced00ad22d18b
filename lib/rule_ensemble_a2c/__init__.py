"""NSAC (ICLR 2026, "Neural+Symbolic Approaches for Interpretable Actor-Critic RL"), reconstructed: A2C with a
rule-ensemble actor grown by orthogonal gradient boosting and an MLP critic, on gymnasium.

Modules: ``envs`` (vectorised gymnasium tasks as numpy features; greedy evaluation), ``fastenvs`` (numpy copies of
gymnasium's Acrobot, MountainCar and toy-text tasks, identical step for step), ``rules`` (propositions,
rules, the additive ensemble, the OGB / GB objectives and the beam search), ``a2c`` (the shared rollout, n-step /
GAE advantages, the MLP, linear and rule actors, the critic), ``ppo`` (the PPO baseline), ``distill`` (decision
trees distilled from the MLP policy by DAgger), ``experiments`` (tuning and one function per figure), ``plots``,
``tune`` (regenerates the shipped tuning grid).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config runs, so lib.common seeds torch too)

from lib.common import check_bool, check_choice, check_float, check_int, make_config

from . import plots
from .a2c import A2CHP, ACTORS, RuleActor, RunResult, TorchActor, gae, train_a2c
from .distill import TreePolicy, distill_tree
from .envs import CLASSIC, ENV_NAMES, SPECS, TOY_TEXT, VecEnv, box2d_available, evaluate, require_env
from .experiments import (
    LR_GRID,
    RL_METHODS,
    TUNING_SEEDS,
    Comparison,
    c1_ratio,
    c3_fraction,
    c4_margin,
    comparison,
    decision_regions,
    ogb_vs_gb,
    rule_table,
    run_tuning,
    select_lr,
    train_seeds,
    tuning_table,
)
from .ppo import PPOHP, ppo_clip_loss, train_ppo
from .rules import (
    Rule,
    RuleEnsemble,
    functional_gradient,
    gb_objective,
    gb_scores,
    ogb_objective,
    ogb_scores,
    quantile_thresholds,
    search_rule,
)

SLUG = "rule_ensemble_a2c"

FULL_ENVS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3", "CliffWalking-v1", "Taxi-v4",
             "FrozenLake-v1")
FULL_BUDGETS = {"CartPole-v1": 100_000, "Acrobot-v1": 200_000, "MountainCar-v0": 300_000, "LunarLander-v3": 500_000,
                "CliffWalking-v1": 100_000, "Taxi-v4": 100_000, "FrozenLake-v1": 100_000}

SIZES = {
    "quick": {
        "envs": ("CartPole-v1",),
        "total_steps": 40_000,
        "total_steps_by_env": None,
        "n_seeds": 1,
        "n_evals": 10,
        "eval_episodes": 10,
        "final_evals": 3,
        "ppo": False,
        "tree_depths": (3, 4),
        "eval_at_k": (1, 3, 5, 10, 20),
        "workers": 1,
    },
    "full": {
        "envs": FULL_ENVS,
        "total_steps": 100_000,
        "total_steps_by_env": FULL_BUDGETS,
        "n_seeds": 3,
        "n_evals": 20,
        "eval_episodes": 10,
        "final_evals": 3,
        "ppo": True,
        "tree_depths": (3, 4),
        "eval_at_k": (1, 2, 3, 5, 7, 10, 15, 20),
        "workers": 2,
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", envs=None, total_steps=None, n_seeds=None,
           n_envs=8, n_steps=5, gamma=0.99, gae_lambda=1.0, critic_lr=1e-2, ent_coef=0.0, k_max=20, c_max=3,
           beam=5, n_quantiles=10, rule_every=25, buffer_size=2048, warmup_steps=2000, min_support=0.01,
           eps_scale=1e-3, n_refit=5, rule_optimizer="sgd", retune=False, workers=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration (see the notebook's parameter cell).

    envs : gymnasium ids (None: CartPole-v1 in quick mode; seven tasks in full mode, LunarLander-v3 only when the
        optional ``box2d`` package is installed). total_steps : environment steps per run for every env (None: the
        mode's budgets). workers : processes that run the independent training runs side by side (None: 1 in
        quick mode, 2 in full mode); the numbers do not depend on it. Training runs on the CPU whatever ``device``
        says; ``device`` is recorded.
    """
    if envs is not None:
        if isinstance(envs, str) or not all(isinstance(e, str) for e in envs) or not len(envs):
            raise ValueError(f"parameter 'envs' got {envs!r}; allowed: None or a non-empty list of ids from "
                             + ", ".join(map(repr, ENV_NAMES)))
        for e in envs:
            require_env(e, "envs")
        envs = tuple(envs)
    elif mode == "full":
        envs = tuple(e for e in FULL_ENVS if e != "LunarLander-v3" or box2d_available())
        if "LunarLander-v3" not in envs:
            print("note: LunarLander-v3 left out of full mode (needs the optional package 'box2d')")
    check_int("total_steps", total_steps, lo=1_000, hi=50_000_000, allow_none=True)
    check_int("n_seeds", n_seeds, lo=1, hi=20, allow_none=True)
    check_int("n_envs", n_envs, lo=1, hi=256)
    check_int("n_steps", n_steps, lo=1, hi=2048)
    check_float("gamma", gamma, lo=0.0, hi=1.0)
    check_float("gae_lambda", gae_lambda, lo=0.0, hi=1.0)
    check_float("critic_lr", critic_lr, lo=0.0, hi=1.0, lo_open=True)
    check_float("ent_coef", ent_coef, lo=0.0, hi=1.0)
    check_int("k_max", k_max, lo=1, hi=200)
    check_int("c_max", c_max, lo=1, hi=6)
    check_int("beam", beam, lo=1, hi=100)
    check_int("n_quantiles", n_quantiles, lo=1, hi=100)
    check_int("rule_every", rule_every, lo=1, hi=100_000)
    check_int("buffer_size", buffer_size, lo=16, hi=1_000_000)
    check_int("warmup_steps", warmup_steps, lo=0, hi=50_000_000)
    check_float("min_support", min_support, lo=0.0, hi=1.0)
    check_float("eps_scale", eps_scale, lo=0.0, hi=100.0)
    check_int("n_refit", n_refit, lo=0, hi=1000)
    check_choice("rule_optimizer", rule_optimizer, ("sgd", "adam"))
    check_bool("retune", retune)
    check_int("workers", workers, lo=1, hi=64, allow_none=True)
    kw = dict(envs=envs, total_steps=total_steps, n_seeds=n_seeds, workers=workers)
    if total_steps is not None:
        kw["total_steps_by_env"] = {}  # one budget for every environment
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       n_envs=n_envs, n_steps=n_steps, gamma=float(gamma), gae_lambda=float(gae_lambda),
                       critic_lr=float(critic_lr), ent_coef=float(ent_coef), k_max=k_max, c_max=c_max, beam=beam,
                       n_quantiles=n_quantiles, rule_every=rule_every, buffer_size=buffer_size,
                       warmup_steps=warmup_steps, min_support=float(min_support), eps_scale=float(eps_scale),
                       n_refit=n_refit, rule_optimizer=rule_optimizer, retune=retune, **kw)


__all__ = [
    "SLUG", "SIZES", "FULL_ENVS", "FULL_BUDGETS", "config", "plots", "A2CHP", "ACTORS", "RuleActor", "RunResult",
    "TorchActor", "gae", "train_a2c", "TreePolicy", "distill_tree", "CLASSIC", "ENV_NAMES", "SPECS", "TOY_TEXT",
    "VecEnv", "box2d_available", "evaluate", "require_env", "LR_GRID", "RL_METHODS", "TUNING_SEEDS", "Comparison",
    "c1_ratio", "c3_fraction", "c4_margin", "comparison", "decision_regions", "ogb_vs_gb", "rule_table",
    "run_tuning", "select_lr", "train_seeds", "tuning_table", "PPOHP", "ppo_clip_loss", "train_ppo", "Rule",
    "RuleEnsemble", "functional_gradient", "gb_objective", "gb_scores", "ogb_objective", "ogb_scores",
    "quantile_thresholds", "search_rule",
]
