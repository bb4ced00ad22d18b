"""PPO (clipped surrogate, GAE(λ)) with an MLP actor, on the same rollout, critic and evaluation code as A2C.

Per rollout of ``n_envs`` × ``n_steps`` transitions: ``epochs`` passes over ``minibatches`` shuffled minibatches,
advantages normalised per minibatch, loss −E[min(ρÂ, clip(ρ, 1 − ε, 1 + ε)Â)] − β_H H for the actor and
vf_coef · (R̂ − V)² for the critic (separate Adam optimisers, gradient norms clipped at 0.5).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import torch


from lib.common.policy_gradient import ppo_clip_loss  # noqa: F401  (re-exported)

from .a2c import A2CHP, Critic, Rollout, RunResult, TorchActor, final_of, gae
from .envs import VecEnv, evaluate


@dataclass(frozen=True)
class PPOHP:
    n_envs: int = 8
    n_steps: int = 64
    epochs: int = 4
    minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    actor_lr: float = 3e-4
    critic_lr: float = 1e-2
    clip: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64


def train_ppo(env_name: str, hp: PPOHP = PPOHP(), total_steps: int = 100_000, seed: int = 0, n_evals: int = 20,
              eval_episodes: int = 10, eval_seed: Optional[int] = None, final_evals: int = 3) -> RunResult:
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    env = VecEnv(env_name, hp.n_envs, seed)
    eval_env = VecEnv(env_name, eval_episodes, seed + 7919 if eval_seed is None else eval_seed)
    d = env.obs_dim
    shared = A2CHP(actor_lr=hp.actor_lr, critic_lr=hp.critic_lr, ent_coef=hp.ent_coef, vf_coef=hp.vf_coef,
                   max_grad_norm=hp.max_grad_norm, hidden=hp.hidden)
    actor, critic = TorchActor("mlp", d, env.n_actions, shared), Critic(d, shared)
    ro = Rollout(env)
    batch = hp.n_envs * hp.n_steps
    n_updates = max(total_steps // batch, 1)
    eval_at = set(np.linspace(0, n_updates, n_evals + 1).round().astype(int)[1:].tolist())
    rows, t0, eval_s = [], time.perf_counter(), 0.0
    for u in range(1, n_updates + 1):
        roll = ro.collect(hp.n_steps, actor.probs, rng)
        V = critic.values(roll["X"].reshape(-1, d)).reshape(hp.n_steps + 1, hp.n_envs)
        adv = gae(roll["R"], V[:-1], V[1:], roll["term"], roll["trunc"], hp.gamma, hp.gae_lambda)
        m = roll["valid"].reshape(-1)
        X = torch.as_tensor(roll["X"][:-1].reshape(-1, d)[m], dtype=torch.float32)
        a = torch.as_tensor(roll["A"].reshape(-1)[m], dtype=torch.long)
        A_ = torch.as_tensor(adv.reshape(-1)[m], dtype=torch.float32)
        ret = A_ + torch.as_tensor(V[:-1].reshape(-1)[m], dtype=torch.float32)
        logp_old = torch.log(torch.as_tensor(roll["prob"].reshape(-1)[m], dtype=torch.float32).clamp_min(1e-12))
        n = len(a)
        for _ in range(hp.epochs):
            perm = torch.as_tensor(rng.permutation(n))
            for idx in torch.tensor_split(perm, hp.minibatches):
                if len(idx) < 2:
                    continue
                logp_all = torch.log_softmax(actor.net(X[idx]), dim=-1)
                logp = logp_all.gather(1, a[idx, None]).squeeze(1)
                adv_mb = A_[idx]
                adv_mb = (adv_mb - adv_mb.mean()) / (adv_mb.std() + 1e-8)
                ent = -(logp_all.exp() * logp_all).sum(-1).mean()
                loss = ppo_clip_loss(logp, logp_old[idx], adv_mb, hp.clip) - hp.ent_coef * ent
                actor.opt.zero_grad()
                loss.backward()
                actor.opt.step()
                critic.update(X[idx].numpy(), ret[idx].numpy())
        if u in eval_at:
            te = time.perf_counter()
            rows.append(dict(steps=u * batch, **{"return": float(evaluate(actor.greedy, eval_env).mean())},
                             n_rules=0))
            eval_s += time.perf_counter() - te
    env.close()
    eval_env.close()
    curve = pd.DataFrame(rows)
    return RunResult(algo="PPO-MLP", env=env_name, seed=seed, curve=curve, final_return=final_of(curve, final_evals),
                     env_steps=n_updates * batch, updates=n_updates * hp.epochs * hp.minibatches,
                     train_s=time.perf_counter() - t0 - eval_s, actor=actor, critic=critic, hp=None,
                     diagnostics=dict(n_params=actor.n_params()))
