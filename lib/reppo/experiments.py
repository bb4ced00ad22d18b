"""One function per figure of the notebook; each returns plain results (DataFrames, dataclasses)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd
import torch

from lib.common import progress

from .grad_variance import gradient_variance, variance_ratio
from .memory import paper_scale_storage, peak_memory, storage_table
from .ppo import PpoHP, train_ppo
from .reppo import ABLATIONS, ReppoHP, train_reppo
from .rollout import RunResult
from .sac import ReplayBuffer, SacHP, train_sac
from .envs import env_spec


# -- configurations ------------------------------------------------------------------------------------------------
def reppo_hp(cfg, env: Optional[str] = None, **kw) -> ReppoHP:
    """REPPO's setting for ``env`` in this run (rollout size, network width, learning rate, KL bound)."""
    big = (env or cfg.env) not in ("BatchedPendulum", "Pendulum-v1")
    base = dict(n_envs=cfg.n_envs, n_steps=cfg.n_steps, epochs=4, minibatches=cfg.reppo_minibatches, lr=cfg.lr,
                kl_bound=cfg.kl_bound, hidden=cfg.hidden_big if big else cfg.hidden)
    base.update(kw)
    return ReppoHP(**base)


def ppo_hp(cfg, env: Optional[str] = None, **kw) -> PpoHP:
    """PPO's setting: the same rollout and learning rate, 16 epochs of minibatches four times larger than
    REPPO's (the authors' 16 × 32 against 4 × 128), so both take the same number of gradient steps."""
    big = (env or cfg.env) not in ("BatchedPendulum", "Pendulum-v1")
    base = dict(n_envs=cfg.n_envs, n_steps=cfg.n_steps, epochs=16, minibatches=max(cfg.reppo_minibatches // 4, 1),
                lr=cfg.lr, hidden=cfg.hidden_big if big else cfg.hidden)
    base.update(kw)
    return PpoHP(**base)


CLEANRL = "PPO (CleanRL-style)"
CLEANRL_CHANGES = dict(epochs=10, minibatches=8, reward_norm=True)  # 2.5x the gradient steps, return normalisation


def train_seeds(cfg) -> list[int]:
    """The training seeds of this run: derived from the notebook's seed (seed, seed + 1000, ...)."""
    return [int(cfg.seed) + 1000 * k for k in range(cfg.n_train_seeds)]


def steps_to(res: RunResult, level: float) -> float:
    """Environment steps until an evaluation of a Pendulum run first reaches ``level`` (NaN: never; other tasks)."""
    if "Pendulum" not in res.env:
        return float("nan")
    hit = res.curve[res.curve["return"] >= level]
    return float(hit["steps"].iloc[0]) if len(hit) else float("nan")


def _curve_rows(res: RunResult) -> pd.DataFrame:
    df = res.curve.copy()
    df.insert(0, "seed", res.seed)
    df.insert(0, "env", res.env)
    df.insert(0, "algo", res.algo)
    return df


# -- Figure 1 and 2: learning curves -------------------------------------------------------------------------------
@dataclass
class Curves:
    runs: list = field(default_factory=list)  # RunResult
    envs: tuple = ()

    @property
    def table(self) -> pd.DataFrame:
        return pd.concat([_curve_rows(r) for r in self.runs], ignore_index=True)

    def final(self) -> pd.DataFrame:
        """Final deterministic return per (env, algorithm): mean, standard error over seeds, n, wall-clock, and
        (Pendulum) the mean number of steps until an evaluation first reaches −400 (NaN: never within the run)."""
        rows = pd.DataFrame([dict(r.summary(), steps_to_m400=steps_to(r, -400.0)) for r in self.runs])
        g = rows.groupby(["env", "algo"], sort=False)
        out = g["final_return"].agg(["mean", "std", "count"])
        out["se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
        out["env_steps"] = g["env_steps"].first()
        out["train_s"] = g["wall_s"].mean()
        out["steps_to_-400"] = g["steps_to_m400"].agg(lambda v: v.mean() if v.notna().all() else np.nan)
        return out[["mean", "se", "count", "env_steps", "train_s", "steps_to_-400"]].rename(
            columns={"count": "seeds"})

    def get(self, algo: str, env: str) -> list:
        return [r for r in self.runs if r.algo == algo and r.env == env]

    def margin(self, env: str) -> float:
        """Mean final return of REPPO minus that of PPO on ``env`` (same steps, same seeds)."""
        f = self.final()
        return float(f.loc[(env, "REPPO"), "mean"] - f.loc[(env, "PPO"), "mean"])

    def reppo_model(self) -> dict:
        return next(r.model for r in self.runs if r.algo == "REPPO" and r.model is not None)


def learning_curves(cfg) -> Curves:
    """REPPO and PPO on the main task, ``n_train_seeds`` seeds each (full mode adds SAC, and a CleanRL-style PPO
    for ``cleanrl_seeds`` seeds), then every task of ``gym_envs`` (one seed) through gymnasium."""
    out = Curves(envs=(cfg.env,) + tuple(cfg.gym_envs))
    seeds = train_seeds(cfg)
    jobs = []
    for k, s in enumerate(seeds):
        jobs.append(("REPPO", cfg.env, s, cfg.total_steps))
        jobs.append(("PPO", cfg.env, s, cfg.total_steps))
        if k < cfg.cleanrl_seeds:
            jobs.append((CLEANRL, cfg.env, s, cfg.total_steps))
        if cfg.sac_steps:
            jobs.append(("SAC (replay)", cfg.env, s, cfg.sac_steps))
    for env in cfg.gym_envs:
        steps = cfg.gym_pendulum_steps if env == "Pendulum-v1" else cfg.mujoco_steps
        jobs += [("REPPO", env, seeds[0], steps), ("PPO", env, seeds[0], steps)]
    for algo, env, s, steps in progress(jobs, desc="training"):
        kw = dict(env_name=env, total_steps=steps, seed=s, eval_every=max(steps // cfg.n_evals, 1),
                  eval_episodes=cfg.eval_episodes if env_spec(env)["horizon"] <= 200 else cfg.eval_episodes_mujoco)
        if algo == "REPPO":
            out.runs.append(train_reppo(hp=reppo_hp(cfg, env), keep_model=(env == cfg.env and s == seeds[0]), **kw))
        elif algo == "PPO":
            out.runs.append(train_ppo(hp=ppo_hp(cfg, env), **kw))
        elif algo == CLEANRL:
            out.runs.append(train_ppo(hp=ppo_hp(cfg, env, **CLEANRL_CHANGES), label=CLEANRL, **kw))
        else:
            out.runs.append(train_sac(hp=SacHP(hidden=cfg.hidden * 2, lr=cfg.lr), **kw))
    return out


# -- Figure 3: memory ----------------------------------------------------------------------------------------------
@dataclass
class Memory:
    storage: pd.DataFrame
    paper_scale: pd.DataFrame
    peak: Optional[pd.DataFrame] = None

    def ratio(self) -> float:
        """Replay-buffer bytes over REPPO's rollout bytes (measured on the tensors)."""
        return float(self.storage.loc["SAC (replay)", "storage_bytes"] / self.storage.loc["REPPO", "storage_bytes"])


def memory_study(cfg, curves: Curves) -> Memory:
    """Transitions and bytes each method holds (REPPO's and PPO's rollouts from Figure 1, a replay buffer of
    ``replay_size`` transitions allocated here); in full mode also peak memory of fresh training processes."""
    spec = env_spec(cfg.env)
    runs = {"REPPO": curves.get("REPPO", cfg.env)[0], "PPO": curves.get("PPO", cfg.env)[0]}
    buf = ReplayBuffer(cfg.replay_size, spec["obs_dim"], spec["act_dim"])
    storage = storage_table(runs, buf)
    del buf
    paper = paper_scale_storage(spec["obs_dim"], spec["act_dim"])
    peak = None
    if cfg.peak_memory_steps:
        steps = cfg.peak_memory_steps
        recs = []
        for algo, hp in progress([("REPPO", reppo_hp(cfg).__dict__), ("PPO", ppo_hp(cfg).__dict__),
                                  ("SAC (replay)", dict(hidden=cfg.hidden * 2, buffer_size=cfg.replay_size))],
                                 desc="peak memory"):
            recs.append(peak_memory(algo, env_name=cfg.env, total_steps=steps, seed=cfg.seed, hp=hp,
                                    eval_every=10 * steps, eval_episodes=4))
        peak = pd.DataFrame(recs).set_index("algo")
    return Memory(storage, paper, peak)


# -- Figure 4: hyperparameter robustness ---------------------------------------------------------------------------
def robustness_grid(cfg) -> pd.DataFrame:
    """Final return over learning rate × trust-region size: REPPO's KL bound ε_KL, PPO's clip ε."""
    rows = []
    jobs = [(algo, lr, k) for algo, knobs in (("REPPO", cfg.grid_kl), ("PPO", cfg.grid_clip))
            for lr in cfg.grid_lr for k in knobs]
    for algo, lr, k in progress(jobs, desc="grid"):
        kw = dict(env_name=cfg.env, total_steps=cfg.grid_steps, seed=cfg.seed, eval_every=cfg.grid_steps,
                  eval_episodes=cfg.eval_episodes)
        if algo == "REPPO":
            res = train_reppo(hp=reppo_hp(cfg, lr=lr, kl_bound=k), **kw)
        else:
            res = train_ppo(hp=ppo_hp(cfg, lr=lr, clip=k), **kw)
        rows.append(dict(algo=algo, lr=lr, trust_region=k, final_return=res.final_return, wall_s=res.wall_s))
    return pd.DataFrame(rows)


def robustness_summary(grid: pd.DataFrame) -> pd.DataFrame:
    g = grid.groupby("algo", sort=False)["final_return"]
    return pd.DataFrame({"median": g.median(), "worst": g.min(), "best": g.max(), "settings": g.count()})


# -- Figure 5: ablations -------------------------------------------------------------------------------------------
def ablation_study(cfg, curves: Optional[Curves] = None) -> pd.DataFrame:
    """Final return of REPPO and its five ablations, ``ablation_seeds`` seeds each. Full REPPO runs of Figure 1
    are reused when they have the same steps and seeds."""
    seeds = train_seeds(cfg)[:cfg.ablation_seeds] if cfg.ablation_seeds <= cfg.n_train_seeds else \
        [int(cfg.seed) + 1000 * k for k in range(cfg.ablation_seeds)]
    rows, jobs = [], []
    reuse = {}
    if curves is not None and cfg.ablation_steps == cfg.total_steps:
        reuse = {r.seed: r for r in curves.get("REPPO", cfg.env)}
    for name, change in ABLATIONS.items():
        for s in seeds:
            if name == "REPPO" and s in reuse:
                rows.append(dict(variant=name, seed=s, final_return=reuse[s].final_return, wall_s=reuse[s].wall_s))
            else:
                jobs.append((name, change, s))
    for name, change, s in progress(jobs, desc="ablations"):
        res = train_reppo(env_name=cfg.env, total_steps=cfg.ablation_steps, hp=reppo_hp(cfg, **change), seed=s,
                          eval_every=cfg.ablation_steps, eval_episodes=cfg.eval_episodes, label=name)
        rows.append(dict(variant=name, seed=s, final_return=res.final_return, wall_s=res.wall_s))
    df = pd.DataFrame(rows)
    df["variant"] = pd.Categorical(df["variant"], categories=list(ABLATIONS), ordered=True)
    return df.sort_values(["variant", "seed"]).reset_index(drop=True)


def ablation_summary(abl: pd.DataFrame) -> pd.DataFrame:
    g = abl.groupby("variant", observed=True)["final_return"]
    out = pd.DataFrame({"mean": g.mean(), "std": g.std(), "seeds": g.count()})
    out["vs REPPO"] = out["mean"] - out.loc["REPPO", "mean"]
    return out


def ablation_claim(abl: pd.DataFrame) -> float:
    """max(noKL − REPPO − 50, MSE − REPPO) over the seed means: ≤ 0 when both pre-registered ablation claims hold
    (no KL bound is not better than REPPO by more than 50; the MSE critic is not better at all)."""
    s = ablation_summary(abl)["vs REPPO"]
    return float(max(s["no KL bound"] - 50.0, s["MSE critic"]))


# -- Figure 6: gradient variance -----------------------------------------------------------------------------------
def variance_study(cfg, curves: Curves) -> pd.DataFrame:
    """Pathwise against score-function gradient spread on the trained REPPO actor and frozen critic of Figure 1,
    at ``var_states`` states from its last rollout."""
    model = curves.reppo_model()
    g = cfg.torch_generator("fig6")
    states = model["states"]
    idx = torch.randperm(states.shape[0], generator=g)[:cfg.var_states]
    return gradient_variance(model["actor"], model["critic"], states[idx], cfg.var_samples, cfg.var_repeats, g)


__all__ = ["Curves", "Memory", "learning_curves", "memory_study", "robustness_grid", "robustness_summary",
           "ablation_study", "ablation_summary", "ablation_claim", "variance_study", "variance_ratio", "reppo_hp",
           "ppo_hp", "train_seeds"]
