"""One function per figure; each returns plain results (DataFrames, dataclasses).

Protocol. Every method trains for the same number of environment steps on the same vectorised rollout code; every
``budget // n_evals`` steps its greedy policy plays ``eval_episodes`` episodes from fixed start states (shared by
all methods of a training seed); a run's *final return* is the mean of its last ``final_evals`` evaluations. Each
method's actor learning rate is chosen beforehand on a small grid (``LR_GRID``, four values each) at the same
budget on the tuning seeds ``TUNING_SEEDS``, which are kept apart from every claim seed; the shipped table
``data/rule_ensemble_a2c/tuning_<mode>.csv`` holds that grid run (regenerate it with
``python -m lib.rule_ensemble_a2c.tune --mode quick``), and a configuration that does not match it is tuned live.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from lib.common import data_dir, limit_threads
from lib.common.parallel import map_jobs

from .a2c import A2CHP, RuleActor, RunResult, train_a2c
from .distill import distill_tree
from .envs import SPECS, VecEnv, evaluate
from .ppo import PPOHP, train_ppo

SLUG = "rule_ensemble_a2c"
TUNING_SEEDS = (9000, 9001)
# actor learning rates (Adam for the torch actors, plain gradient ascent for the rule weights by default)
LR_GRID = {
    "A2C-MLP": (3e-4, 1e-3, 3e-3, 1e-2),
    "A2C-linear": (1e-3, 3e-3, 1e-2, 3e-2),
    "NSAC-OGB": (0.01, 0.03, 0.1, 0.3),
    "NSAC-GB": (0.01, 0.03, 0.1, 0.3),
    "PPO-MLP": (1e-4, 3e-4, 1e-3, 3e-3),
}
RL_METHODS = ("NSAC-OGB", "NSAC-GB", "A2C-MLP", "A2C-linear", "PPO-MLP")
TREES = "Tree-d{depth} (distilled)"


# -- configurations ------------------------------------------------------------------------------------------------
HP_KNOBS = ("n_envs", "n_steps", "gamma", "gae_lambda", "critic_lr", "ent_coef", "k_max", "c_max", "beam",
            "n_quantiles", "rule_every", "buffer_size", "warmup_steps", "min_support", "eps_scale", "n_refit",
            "rule_optimizer")


def base_hp(cfg) -> A2CHP:
    return A2CHP(**{k: getattr(cfg, k) for k in HP_KNOBS})


def hp_for(cfg, method: str, lr: float):
    base = base_hp(cfg)
    if method == "PPO-MLP":
        return PPOHP(n_envs=base.n_envs, gamma=base.gamma, critic_lr=base.critic_lr, ent_coef=base.ent_coef,
                     actor_lr=float(lr))
    obj = {"NSAC-OGB": "ogb", "NSAC-GB": "gb"}.get(method, "ogb")
    return replace(base, actor_lr=float(lr), objective=obj)


def budget(cfg, env: str) -> int:
    return int(cfg.total_steps) if cfg.total_steps_by_env is None else int(cfg.total_steps_by_env.get(
        env, cfg.total_steps))


def methods(cfg) -> tuple:
    return tuple(m for m in RL_METHODS if m != "PPO-MLP" or cfg.ppo)


def train_seeds(cfg) -> list:
    """Claim seeds of this run: seed, seed + 1000, ... (never a tuning seed)."""
    return [int(cfg.seed) + 1000 * k for k in range(cfg.n_seeds)]


def run_method(cfg, method: str, env: str, lr: float, seed: int) -> RunResult:
    kw = dict(total_steps=budget(cfg, env), seed=seed, n_evals=cfg.n_evals, eval_episodes=cfg.eval_episodes,
              final_evals=cfg.final_evals)
    with limit_threads(1):
        if method == "PPO-MLP":
            return train_ppo(env, hp_for(cfg, method, lr), **kw)
        actor = {"A2C-MLP": "mlp", "A2C-linear": "linear"}.get(method, "rules")
        return train_a2c(env, actor, hp_for(cfg, method, lr), eval_at_k=tuple(cfg.eval_at_k), **kw)


# -- tuning --------------------------------------------------------------------------------------------------------
def tuning_key(cfg, env: str) -> str:
    """Fingerprint of everything a tuning run depends on except the learning rate and the seed."""
    text = repr((env, budget(cfg, env), cfg.n_evals, cfg.eval_episodes, cfg.final_evals, asdict(base_hp(cfg)),
                 {m: LR_GRID[m] for m in methods(cfg)}, TUNING_SEEDS))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def tuning_path(mode: str) -> Path:
    return data_dir(SLUG) / f"tuning_{mode}.csv"


def _job(job):
    """One independent run (it seeds its own generators from its arguments, so it does not matter which process
    runs it): ``("tune", ...)`` returns a tuning row, ``("train", ...)`` the run and, for A2C-MLP, its trees."""
    kind, cfg, (env, m, lr, s) = job
    r = run_method(cfg, m, env, lr, s)
    if kind == "tune":
        return dict(env=env, method=m, lr=lr, seed=s, final=r.final_return, auc=float(r.curve["return"].mean()),
                    steps=r.env_steps, key=tuning_key(cfg, env))
    trees = []
    if m == "A2C-MLP":
        for depth in cfg.tree_depths:
            with limit_threads(1):
                tree = distill_tree(r.greedy, env, depth, seed=s + 17)
            trees.append(dict(env=env, method=TREES.format(depth=depth), seed=s, n_rules=tree.n_leaves,
                              final_return=evaluate_policy(tree.greedy, env, cfg.eval_episodes, s), tree=tree))
    return r, trees


def iter_jobs(cfg, kind: str, jobs: list, desc: str = ""):
    """``_job(j)`` for each of ``jobs``, yielded in order, in ``cfg.workers`` worker processes when
    ``cfg.workers > 1``.

    Every run seeds NumPy, torch and its environments from its own seed, so the results are the same whatever the
    number of workers (a unit test checks it). Workers are forked from a fresh server process that imported this
    module once (``forkserver``), not from the kernel."""
    items = [(kind, cfg, j) for j in jobs]
    yield from map_jobs(_job, items, getattr(cfg, "workers", 1), preload=[__name__], desc=desc)


def run_jobs(cfg, kind: str, jobs: list, desc: str = "") -> list:
    """``[_job(j) for j in jobs]`` (see :func:`iter_jobs`)."""
    return list(iter_jobs(cfg, kind, jobs, desc))


def tuning_jobs(cfg, envs: Optional[tuple] = None) -> list:
    """The grid's runs, in order: (env, method, learning rate, tuning seed)."""
    return [(env, m, lr, s) for env in (envs or cfg.envs) for m in methods(cfg) for lr in LR_GRID[m]
            for s in TUNING_SEEDS]


def run_tuning(cfg, envs: Optional[tuple] = None) -> pd.DataFrame:
    """The grid: every method × learning rate × tuning seed at the claim budget (one row per run)."""
    return pd.DataFrame(run_jobs(cfg, "tune", tuning_jobs(cfg, envs), desc="tuning"))


def tuning_table(cfg, retune: bool = False) -> pd.DataFrame:
    """The shipped grid for this mode where its fingerprint matches the configuration, else a live run."""
    path = tuning_path(cfg.mode)
    shipped = pd.read_csv(path) if path.exists() and not retune else None
    parts = []
    for env in cfg.envs:
        key = tuning_key(cfg, env)
        sub = shipped[(shipped["env"] == env) & (shipped["key"] == key)] if shipped is not None else None
        if sub is not None and set(sub["method"]) >= set(methods(cfg)):
            parts.append(sub.assign(source=f"shipped {path.name}"))
        else:
            print(f"tuning {env} live (no shipped grid for this configuration, fingerprint {key})")
            parts.append(run_tuning(cfg, (env,)).assign(source="live"))
    return pd.concat(parts, ignore_index=True)


def select_lr(tuning: pd.DataFrame) -> pd.DataFrame:
    """Per (env, method): the learning rate with the best mean final return over tuning seeds (ties: mean AUC)."""
    g = tuning.groupby(["env", "method", "lr"], sort=False)[["final", "auc"]].mean().reset_index()
    g = g.sort_values(["env", "method", "final", "auc"], ascending=[True, True, False, False])
    return g.groupby(["env", "method"], sort=False).head(1).set_index(["env", "method"])


# -- Figures 1 and 2: learning curves and final returns -------------------------------------------------------------
@dataclass
class Comparison:
    runs: list = field(default_factory=list)
    trees: list = field(default_factory=list)  # dicts: env, seed, method, final_return, n_leaves
    random: dict = field(default_factory=dict)  # env -> mean return of the uniform random policy
    lrs: Optional[pd.DataFrame] = None

    @property
    def curves(self) -> pd.DataFrame:
        parts = []
        for r in self.runs:
            parts.append(r.curve.assign(method=r.algo, env=r.env, seed=r.seed))
        return pd.concat(parts, ignore_index=True)

    def finals(self) -> pd.DataFrame:
        rows = [dict(env=r.env, method=r.algo, seed=r.seed, final_return=r.final_return, train_s=r.train_s,
                     env_steps=r.env_steps, n_rules=r.n_rules) for r in self.runs]
        rows += [dict(t, train_s=np.nan, env_steps=np.nan, n_rules=np.nan) for t in self.trees]
        return pd.DataFrame(rows)

    def table(self) -> pd.DataFrame:
        """Mean ± s.e. of the final return over seeds, per environment and method."""
        f = self.finals()
        g = f.groupby(["env", "method"], sort=False)
        out = g["final_return"].agg(["mean", "std", "count"])
        out["se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
        out["train_s"] = g["train_s"].mean()
        out["random_policy"] = [self.random.get(e, np.nan) for e, _ in out.index]
        return out[["mean", "se", "count", "train_s", "random_policy"]].rename(columns={"count": "seeds"})

    def mean_final(self, env: str, method: str) -> float:
        f = self.finals()
        return float(f[(f["env"] == env) & (f["method"] == method)]["final_return"].mean())

    def normalised(self, env: str, method: str, ref: str = "A2C-MLP") -> float:
        """(R_method − R_random) / (R_ref − R_random) on ``env``: 1 = as good as the reference."""
        r0 = self.random[env]
        den = self.mean_final(env, ref) - r0
        return float((self.mean_final(env, method) - r0) / den) if abs(den) > 1e-9 else float("nan")

    def get(self, method: str, env: str) -> list:
        return [r for r in self.runs if r.algo == method and r.env == env]


def random_return(env: str, episodes: int, seed: int) -> float:
    """Mean return of the uniform random policy on the evaluation start states of ``seed``."""
    e = VecEnv(env, episodes, seed + 7919)
    rng = np.random.default_rng(seed + 7919)
    out = float(evaluate(lambda X: rng.integers(0, e.n_actions, len(X)), e).mean())
    e.close()
    return out


def evaluate_policy(policy, env: str, episodes: int, seed: int) -> float:
    e = VecEnv(env, episodes, seed + 7919)
    out = float(evaluate(policy, e).mean())
    e.close()
    return out


def comparison(cfg, lrs: pd.DataFrame) -> Comparison:
    """Every method on every environment and claim seed with its tuned learning rate; trees distilled from each
    seed's A2C-MLP (DAgger); the random policy's return on the same evaluation states."""
    out = Comparison(lrs=lrs)
    jobs = [(env, m, float(lrs.loc[(env, m), "lr"]), s) for env in cfg.envs for s in train_seeds(cfg)
            for m in methods(cfg)]
    for r, trees in run_jobs(cfg, "train", jobs, desc="training"):
        out.runs.append(r)
        out.trees.extend(trees)
    for env in cfg.envs:
        out.random[env] = float(np.mean([random_return(env, cfg.eval_episodes, s) for s in train_seeds(cfg)]))
    return out


def c1_ratio(comp: Comparison, envs: tuple) -> float:
    """C1: the smallest normalised NSAC-OGB / A2C-MLP final return over ``envs`` (present in this run)."""
    vals = [comp.normalised(e, "NSAC-OGB") for e in envs if e in comp.random]
    return float(min(vals)) if vals else float("nan")


def c3_fraction(comp: Comparison, envs: tuple, depth: int = 3, slack: float = 0.05) -> float:
    """C3: fraction of ``envs`` where NSAC-OGB's mean final return ≥ the distilled depth-3 tree's − 5% of the tree's
    advantage over the random policy (a relative slack that also works for negative returns)."""
    ok = []
    for e in envs:
        if e not in comp.random:
            continue
        r0, nsac = comp.random[e], comp.mean_final(e, "NSAC-OGB")
        tree = comp.mean_final(e, TREES.format(depth=depth))
        ok.append(nsac >= tree - slack * abs(tree - r0))
    return float(np.mean(ok)) if ok else float("nan")


# -- Figure 3: the learned rules and CartPole's decision regions ----------------------------------------------------
def rule_table(run: RunResult) -> pd.DataFrame:
    spec = SPECS[run.env]
    X = run.actor.buf_X[:run.actor.buf_n] if isinstance(run.actor, RuleActor) else None
    df = run.actor.ens.table(spec.feature_names, spec.action_names, X=X)
    if spec.n_actions == 2:
        a0, a1 = spec.action_names
        df[f"w[{a1}] - w[{a0}]"] = df[f"w[{a1}]"] - df[f"w[{a0}]"]
    return df


def decision_regions(policies: dict, n: int = 101, theta_max: float = 0.21, theta_dot_max: float = 2.0) -> dict:
    """Greedy action of each CartPole policy on a (θ, θ̇) grid with x = ẋ = 0: {name: (θ, θ̇, actions[n, n])}."""
    th = np.linspace(-theta_max, theta_max, n)
    thd = np.linspace(-theta_dot_max, theta_dot_max, n)
    TH, THD = np.meshgrid(th, thd)
    X = np.stack([np.zeros(TH.size), np.zeros(TH.size), TH.ravel(), THD.ravel()], axis=1)
    return {name: (th, thd, np.asarray(p(X)).reshape(n, n)) for name, p in policies.items()}


# -- Figure 4: OGB vs plain GB, return against the number of rules --------------------------------------------------
def ogb_vs_gb(comp: Comparison) -> pd.DataFrame:
    """Greedy return when the ensemble holds K rules (evaluated just before rule K + 1 is searched)."""
    parts = []
    for r in comp.runs:
        if r.k_curve is not None and len(r.k_curve):
            parts.append(r.k_curve.assign(method=r.algo, env=r.env, seed=r.seed))
    return (pd.concat(parts, ignore_index=True) if parts
            else pd.DataFrame(columns=["K", "steps", "return", "method", "env", "seed"]))


def c4_margin(kc: pd.DataFrame, env: str, ks=(5, 10)) -> float:
    """C4: min over K of (mean OGB return at K − mean GB return at K) on ``env``, averaged over seeds."""
    sub = kc[kc["env"] == env]
    m = sub.groupby(["method", "K"])["return"].mean()
    vals = []
    for k in ks:
        if ("NSAC-OGB", k) in m.index and ("NSAC-GB", k) in m.index:
            vals.append(m[("NSAC-OGB", k)] - m[("NSAC-GB", k)])
    return float(min(vals)) if len(vals) == len(ks) else float("nan")
