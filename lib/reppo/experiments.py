"""One function per figure of the notebook; each returns plain results (DataFrames, dataclasses)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np
import pandas as pd
import torch

from lib.common import limit_threads, progress
from lib.common.parallel import map_jobs, process_pool

from .batched import train_ppo_seeds, train_reppo_seeds
from .grad_variance import gradient_variance, variance_ratio
from .memory import paper_scale_storage, peak_memory, storage_table
from .ppo import PpoHP, matched_ppo_hp, train_ppo
from .reppo import ABLATIONS, ReppoHP, train_reppo
from .rollout import RunResult
from .sac import ReplayBuffer
from .envs import env_spec
from .tuning import auc, load_scan, scan_hp, summarize


# -- configurations ------------------------------------------------------------------------------------------------
PPO = "PPO"  # CleanRL's continuous-action PPO, tuned on the same grid as REPPO
MATCHED = "PPO (matched updates)"  # the authors' PPO relative to REPPO: fixed reward scale, clipped value loss


def _pendulum(env: str) -> bool:
    return env in ("BatchedPendulum", "Pendulum-v1")


def tuned(cfg) -> dict:
    """{algo: {"lr", "trust_region"}} for the Pendulum runs: the best cells of the shipped tuning scan, unless the
    notebook fixed ``lr`` / ``kl_bound`` (then REPPO and PPO both take that lr; the trust regions stay tuned)."""
    _, b = load_scan(cfg.scan_path)
    out = {a: dict(lr=b[a]["lr"], trust_region=b[a]["trust_region"]) for a in ("REPPO", "PPO")}
    if cfg.lr is not None:
        for a in out:
            out[a]["lr"] = float(cfg.lr)
    if cfg.kl_bound is not None:
        out["REPPO"]["trust_region"] = float(cfg.kl_bound)
    return out


def reppo_hp(cfg, env: Optional[str] = None, **kw) -> ReppoHP:
    """REPPO's setting for ``env``: the tuned lr and KL bound on Pendulum; on MuJoCo, untuned: lr 1e-3 (the same
    for both methods), the paper's ε_KL = 0.1, wider networks."""
    env = env or cfg.env
    if _pendulum(env):
        t = tuned(cfg)["REPPO"]
        lr, kl, hidden = t["lr"], t["trust_region"], cfg.hidden
    else:
        lr, kl, hidden = MUJOCO_LR, 0.1, cfg.hidden_big
    return replace(scan_hp("REPPO", lr, kl, _setting(cfg, hidden)), **kw)  # the tuning scan's builder


def ppo_hp(cfg, env: Optional[str] = None, matched: bool = False, **kw) -> PpoHP:
    """PPO's setting: CleanRL's continuous-action defaults (PpoHP) with the tuned lr and clip on Pendulum; on
    MuJoCo lr 1e-3 and clip 0.2, untuned. ``matched``: the authors' matched-update PPO (``matched_ppo_hp``) at
    REPPO's tuned learning rate."""
    env = env or cfg.env
    if _pendulum(env):
        t = tuned(cfg)
        lr, clip = (t["REPPO"]["lr"], 0.2) if matched else (t["PPO"]["lr"], t["PPO"]["trust_region"])
        hidden = cfg.hidden
    else:
        lr, clip, hidden = MUJOCO_LR, 0.2, cfg.hidden_big
    if matched:
        return matched_ppo_hp(n_envs=cfg.n_envs, n_steps=cfg.n_steps, lr=lr, clip=clip, hidden=hidden, **kw)
    return replace(scan_hp("PPO", lr, clip, _setting(cfg, hidden)), **kw)  # the tuning scan's builder


def _setting(cfg, hidden: int) -> dict:
    """The run's sizes in the form :func:`lib.reppo.tuning.scan_hp` takes, so that Figure 1 and the scan build
    their configurations the same way."""
    return dict(n_envs=cfg.n_envs, n_steps=cfg.n_steps, hidden=hidden, reppo_minibatches=cfg.reppo_minibatches)


MUJOCO_LR = 1e-3


def train_seeds(cfg) -> list[int]:
    """The training seeds of this run: derived from the notebook's seed (seed, seed + 1000, ...)."""
    return [int(cfg.seed) + 1000 * k for k in range(cfg.n_train_seeds)]


def steps_to(res: RunResult, level: float) -> float:
    """Environment steps until an evaluation of a Pendulum run first reaches ``level`` (NaN: never; other tasks)."""
    if "Pendulum" not in res.env:
        return float("nan")
    hit = res.curve[res.curve["return"] >= level]
    return float(hit["steps"].iloc[0]) if len(hit) else float("nan")


def steps_to_censored(res: RunResult, level: float) -> float:
    """``steps_to``, with a run that never reaches ``level`` counted as its length plus one evaluation interval."""
    v = steps_to(res, level)
    if np.isnan(v):
        st = res.curve["steps"].to_numpy()
        v = float(st[-1] + (st[-1] - st[-2]))
    return v


def _curve_rows(res: RunResult) -> pd.DataFrame:
    df = res.curve.copy()
    df.insert(0, "seed", res.seed)
    df.insert(0, "env", res.env)
    df.insert(0, "algo", res.algo)
    return df


def paired_bootstrap(diff, n_boot: int = 10_000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of paired differences (resampling seeds with replacement)."""
    d = np.asarray(diff, float)
    if len(d) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    a = (1 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


# -- Figure 1 and 2: learning curves -------------------------------------------------------------------------------
@dataclass
class Curves:
    runs: list = field(default_factory=list)  # RunResult
    envs: tuple = ()

    @property
    def table(self) -> pd.DataFrame:
        return pd.concat([_curve_rows(r) for r in self.runs], ignore_index=True)

    def final(self) -> pd.DataFrame:
        """Per (env, algorithm): area under the return curve per step (mean, s.e. over seeds), final return, seeds,
        steps, training seconds and (Pendulum) the mean steps until an evaluation first reaches −400 (a run that
        never does counts as its length plus one evaluation interval)."""
        rows = pd.DataFrame([dict(r.summary(), auc=auc(r.curve["steps"], r.curve["return"]),
                                  steps_to_m400=steps_to_censored(r, -400.0) if "Pendulum" in r.env else np.nan)
                             for r in self.runs])
        g = rows.groupby(["env", "algo"], sort=False)
        out = g["auc"].agg(["mean", "std", "count"]).rename(columns={"mean": "auc"})
        out["auc_se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
        out["final_return"] = g["final_return"].mean()
        out["env_steps"] = g["env_steps"].first()
        out["train_s"] = g["wall_s"].mean()
        out["steps_to_-400"] = g["steps_to_m400"].mean()
        return out[["auc", "auc_se", "final_return", "count", "env_steps", "train_s", "steps_to_-400"]].rename(
            columns={"count": "seeds"})

    def get(self, algo: str, env: str) -> list:
        return [r for r in self.runs if r.algo == algo and r.env == env]

    def paired(self, env: str, other: str = PPO, metric: str = "auc") -> pd.DataFrame:
        """Per seed run by both: REPPO's and ``other``'s AUC (``metric="auc"``, higher is better) or steps to −400
        (``metric="steps"``, lower is better), and ``diff`` = REPPO's advantage (AUC: REPPO − other; steps:
        other − REPPO), so a positive diff always favours REPPO."""
        def val(r):
            return auc(r.curve["steps"], r.curve["return"]) if metric == "auc" else steps_to_censored(r, -400.0)

        a = {r.seed: val(r) for r in self.get("REPPO", env)}
        b = {r.seed: val(r) for r in self.get(other, env)}
        seeds = [s for s in a if s in b]
        df = pd.DataFrame(dict(seed=seeds, REPPO=[a[s] for s in seeds], other=[b[s] for s in seeds]))
        df["diff"] = df["REPPO"] - df["other"] if metric == "auc" else df["other"] - df["REPPO"]
        return df

    def advantage(self, env: str, other: str = PPO, metric: str = "auc") -> float:
        """Mean over seeds of the paired difference (NaN when ``other`` did not run)."""
        d = self.paired(env, other, metric)["diff"]
        return float(d.mean()) if len(d) else float("nan")

    def advantage_ci(self, env: str, other: str = PPO) -> tuple[float, float]:
        """95 % paired bootstrap CI of the mean AUC advantage of REPPO over ``other``."""
        return paired_bootstrap(self.paired(env, other)["diff"])

    def reppo_model(self) -> dict:
        return next(r.model for r in self.runs if r.algo == "REPPO" and r.model is not None)


def learning_curves(cfg) -> Curves:
    """REPPO and the tuned CleanRL PPO on the main task, ``n_train_seeds`` seeds each, plus the matched-update PPO
    for ``matched_seeds`` seeds (full mode); then every task of ``gym_envs`` for ``mujoco_seeds`` seeds."""
    out = Curves(envs=(cfg.env,) + tuple(cfg.gym_envs))
    seeds = train_seeds(cfg)
    jobs = []
    for k, s in enumerate(seeds):
        jobs += [("REPPO", cfg.env, s, cfg.total_steps), (PPO, cfg.env, s, cfg.total_steps)]
        if k < cfg.matched_seeds:
            jobs.append((MATCHED, cfg.env, s, cfg.total_steps))
    for env in cfg.gym_envs:
        steps = cfg.total_steps if _pendulum(env) else cfg.mujoco_steps
        for s in [int(cfg.seed) + 1000 * k for k in range(cfg.mujoco_seeds)]:
            jobs += [("REPPO", env, s, steps), (PPO, env, s, steps)]
    calls = []
    for algo, env, s, steps in jobs:
        n_evals = cfg.n_evals if _pendulum(env) else cfg.n_evals_mujoco
        kw = dict(env_name=env, total_steps=steps, seed=s, eval_every=max(steps // n_evals, 1),
                  eval_episodes=cfg.eval_episodes if env_spec(env)["horizon"] <= 200 else cfg.eval_episodes_mujoco)
        if algo == "REPPO":
            calls.append(("REPPO", dict(hp=reppo_hp(cfg, env), keep_model=(env == cfg.env and s == seeds[0]), **kw)))
        elif algo == PPO:
            calls.append(("PPO", dict(hp=ppo_hp(cfg, env), label=PPO, **kw)))
        else:
            calls.append(("PPO", dict(hp=ppo_hp(cfg, env, matched=True), label=MATCHED, **kw)))
    items, slots = stack_seeds(calls)
    done = run_parallel(_train_one, items, cfg.workers, desc="training")
    runs: list = [None] * len(calls)
    for idx, res in zip(slots, done):
        for i, r in zip(idx, res if isinstance(res, list) else [res]):
            runs[i] = r
    out.runs.extend(runs)
    return out


def stack_seeds(calls: list) -> tuple[list, list]:
    """Group the calls that differ only in their seed (same method, task, setting, budget) on the batched Pendulum
    into one stacked call (``batched.train_*_seeds``: the same numbers as the single runs, several seeds per
    program); returns (items for :func:`_train_one`, the indices into ``calls`` that each item answers)."""
    groups: dict = {}
    for i, (algo, kw) in enumerate(calls):
        if kw["env_name"] == "BatchedPendulum":
            key = (algo,) + tuple(sorted((k, v) for k, v in kw.items() if k not in ("seed", "keep_model")))
        else:
            key = ("single", i)
        groups.setdefault(key, []).append(i)
    items, slots = [], []
    for key, idx in groups.items():
        algo, kw = calls[idx[0]]
        if len(idx) == 1:
            items.append((algo, kw))
        else:
            common = {k: v for k, v in kw.items() if k not in ("seed", "keep_model")}
            seeds = [calls[i][1]["seed"] for i in idx]
            if algo == "REPPO":
                keep = [calls[i][1]["seed"] for i in idx if calls[i][1].get("keep_model")]
                common["keep_model_seed"] = keep[0] if keep else None
            items.append((algo + " seeds", dict(seeds=seeds, **common)))
        slots.append(idx)
    return items, slots


def _train_one(call):
    """One training run, or one stacked group of seeds (a list of runs); a picklable top-level function, so that
    worker processes can run it."""
    algo, kw = call
    fn = {"REPPO": train_reppo, "PPO": train_ppo, "REPPO seeds": train_reppo_seeds, "PPO seeds": train_ppo_seeds}
    with limit_threads(1):
        return fn[algo](**kw)


def run_parallel(fn, items: list, workers: int, desc: str = "") -> list:
    """``[fn(x) for x in items]``, in ``workers`` fresh processes when ``workers > 1``.

    Every training run seeds its own generators from its arguments, so the results do not depend on ``workers``
    (a unit test checks it); the processes only use the machine's cores at once. They are forked from a fresh
    server process that imported this module once (``forkserver``: no fork of a kernel that holds threads and
    sockets, and one import of torch, about 2-3 CPU-seconds, instead of one per worker)."""
    return list(map_jobs(fn, items, workers, preload=[__name__], desc=desc))


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
    """The tuning scan (``data/reppo/tuning_scan.json``, made by ``python -m lib.reppo.tune``): AUC and final return
    over learning rate × trust-region size (REPPO's ε_KL, PPO's clip ε), mean over the two tuning seeds."""
    scan, _ = load_scan(cfg.scan_path)
    return summarize(scan)


def robustness_summary(grid: pd.DataFrame) -> pd.DataFrame:
    g = grid.groupby("algo", sort=False)["auc"]
    return pd.DataFrame({"median AUC": g.median(), "worst": g.min(), "best": g.max(), "settings": g.count()})


# -- Figure 5: ablations -------------------------------------------------------------------------------------------
def _ablation_jobs(cfg, curves: Optional[Curves]) -> tuple[list, list, list]:
    """(rows reused from Figure 1, jobs (variant, change, seed) to train, their training calls)."""
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
    calls = [("REPPO", dict(env_name=cfg.env, total_steps=cfg.ablation_steps, hp=reppo_hp(cfg, **change), seed=s,
                            eval_every=cfg.ablation_steps, eval_episodes=cfg.eval_episodes, label=name))
             for name, change, s in jobs]
    return rows, jobs, calls


_BACKGROUND: dict = {}  # calls -> futures of the runs start_ablations launched


def start_ablations(cfg, curves: Optional[Curves] = None) -> None:
    """Start Figure 5's training runs in one background worker process, so that they use the core the notebook
    leaves idle while it draws Figures 1-4; :func:`ablation_study` then collects them (the same calls, so the same
    numbers as training them there). Nothing starts with ``workers = 1``."""
    _, _, calls = _ablation_jobs(cfg, curves)
    _BACKGROUND.clear()
    if cfg.workers <= 1 or not calls:
        return
    pool = process_pool(1, [__name__])
    _BACKGROUND["calls"], _BACKGROUND["futures"] = calls, [pool.submit(_train_one, c) for c in calls]
    pool.shutdown(wait=False)  # the submitted runs still complete; the worker exits after the last one


def ablation_study(cfg, curves: Optional[Curves] = None) -> pd.DataFrame:
    """Final return of REPPO and its five ablations, ``ablation_seeds`` seeds each. Full REPPO runs of Figure 1
    are reused when they have the same steps and seeds; runs that :func:`start_ablations` started are collected."""
    rows, jobs, calls = _ablation_jobs(cfg, curves)
    if calls and _BACKGROUND.get("calls") == calls:
        results = [f.result() for f in _BACKGROUND.pop("futures")]
    else:
        results = run_parallel(_train_one, calls, cfg.workers, desc="ablations")
    _BACKGROUND.clear()
    for (name, _, s), res in zip(jobs, results):
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
           "start_ablations", "ablation_study", "ablation_summary", "ablation_claim", "variance_study", "variance_ratio", "reppo_hp",
           "ppo_hp", "train_seeds"]
