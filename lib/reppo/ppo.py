"""PPO for continuous actions (CleanRL's ``ppo_continuous_action``), on the same rollout and normalisation code.

Gaussian policy N(μ(s), diag σ²) with a state-independent log σ, a separate value network, GAE(λ) advantages
(normalised per minibatch), the clipped surrogate L = E[max(−A·ρ, −A·clip(ρ, 1 − ε, 1 + ε))], ρ = π/π_old, a
clipped value loss, observation normalisation and the environment's fixed reward scale (as REPPO, and as the
authors' PPO baseline; ``reward_norm=True`` switches to CleanRL's running return normalisation).
Defaults mirror the authors' PPO config relative to REPPO's: 16 epochs of 2 minibatches (theirs: 16 × 32) against
REPPO's 4 × 8 (theirs: 4 × 128), i.e. the same number of gradient steps per rollout for both algorithms. Sampled actions are clipped to [-1, 1] before they
reach the environment; log-probabilities are those of the unclipped samples. At a time-limit truncation the
reward gets γ·V(s_final) added, so the advantage bootstraps through the time limit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import torch
from torch import nn


from lib.common.policy_gradient import ppo_clip_loss  # noqa: F401  (re-exported)

from .envs import env_spec, make_env
from .networks import Adam, RewardScaler, RunningNorm, gaussian_log_prob, tanh_mlp
from .reppo import _threads
from .rollout import Clock, EpisodeTracker, RunResult, collect, evaluate, tensor_bytes


@dataclass(frozen=True)
class PpoHP:
    n_envs: int = 64
    n_steps: int = 32
    epochs: int = 16
    minibatches: int = 2
    gamma: float = 0.99
    lam: float = 0.95
    lr: float = 3e-4
    clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    layers: int = 3
    reward_scale: Optional[float] = None  # None: the environment's fixed scale (envs.env_spec), as REPPO
    reward_norm: bool = False  # CleanRL's running return normalisation instead of the fixed scale


def gae(rewards, values, next_values, dones, gamma: float, lam: float) -> torch.Tensor:
    """GAE(λ) advantages [T, N]; ``next_values[t]`` = V(s_{t+1}), ``dones`` cut the recursion."""
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * nonterminal * next_values[t] - values[t]
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
    return adv


class PpoAgent(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hp: PpoHP):
        super().__init__()
        self.actor_mean = tanh_mlp(obs_dim, act_dim, hp.hidden, hp.layers, out_gain=0.01)
        self.actor_logstd = nn.Parameter(torch.zeros(act_dim))
        self.critic = tanh_mlp(obs_dim, 1, hp.hidden, hp.layers, out_gain=1.0)

    def value(self, obs):
        return self.critic(obs).squeeze(-1)

    def dist(self, obs):
        mean = self.actor_mean(obs)
        return mean, self.actor_logstd.expand_as(mean)

    def deterministic(self, obs):
        return self.actor_mean(obs).clamp(-1, 1)


def train_ppo(env_name: str = "BatchedPendulum", total_steps: int = 60_000, hp: PpoHP = PpoHP(), seed: int = 0,
              eval_every: int = 10_000, eval_episodes: int = 32, device: str = "cpu", threads: Optional[int] = 1,
              label: str = "PPO") -> RunResult:
    """Train PPO for ``total_steps`` environment steps (whole rollouts); evaluate the mean action every
    ``eval_every`` steps."""
    with _threads(threads):
        g = torch.Generator()
        g.manual_seed(int(seed) + 7_919)
        torch.manual_seed(int(seed) + 7_919)
        env = make_env(env_name, hp.n_envs, seed=seed, device=device)
        agent = PpoAgent(env.obs_dim, env.act_dim, hp)
        opt = Adam(agent.parameters(), lr=hp.lr, max_grad_norm=hp.max_grad_norm)
        norm = RunningNorm(env.obs_dim)
        scaler = RewardScaler(hp.n_envs, hp.gamma) if hp.reward_norm else None
        rscale = env_spec(env_name)["reward_scale"] if hp.reward_scale is None else hp.reward_scale
        eval_env = make_env(env_name, eval_episodes, seed=10_000 + seed, device=device)

        def act(obs_n):
            mean, log_std = agent.dist(obs_n)
            a = mean + log_std.exp() * torch.randn(mean.shape, generator=g)
            return a, dict(logp=gaussian_log_prob(a, mean, log_std), value=agent.value(obs_n))

        def next_step(fin_n, rew, term, trunc):
            r = scaler(rew, term | trunc) if scaler is not None else rscale * rew
            boot = agent.value(fin_n)  # V(s_final): bootstrap through time-limit truncations
            return dict(rew_train=r + hp.gamma * boot * trunc.float())

        per_iter = hp.n_envs * hp.n_steps
        n_iters = math.ceil(total_steps / per_iter)
        tracker, clock = EpisodeTracker(hp.n_envs), Clock()
        rows = [dict(steps=0, ret=evaluate(agent.deterministic, norm, eval_env, eval_episodes), wall_s=0.0)]
        obs = env.reset()
        next_eval, storage = eval_every, 0
        logs: dict = {}
        for it in range(n_iters):
            clock.start()
            data, obs = collect(env, obs, norm, hp.n_steps, act, next_step, tracker)
            with torch.no_grad():
                last_v = agent.value(norm(obs))
                next_v = torch.cat([data["value"][1:], last_v[None]])
                done = torch.clamp(data["term"] + data["trunc"], max=1.0)
                data["adv"] = gae(data["rew_train"], data["value"], next_v, done, hp.gamma, hp.lam)
                data["ret"] = data["adv"] + data["value"]
            storage = tensor_bytes(data)
            logs = _ppo_update(agent, opt, data, hp, g)
            wall = clock.stop()
            steps = (it + 1) * per_iter
            if steps >= next_eval or it == n_iters - 1:
                rows.append(dict(steps=steps, ret=evaluate(agent.deterministic, norm, eval_env, eval_episodes),
                                 wall_s=wall))
                next_eval += eval_every
        for e in (env, eval_env):
            if hasattr(e, "close"):
                e.close()
        curve = pd.DataFrame(rows).rename(columns={"ret": "return"})
        diag = dict(train_episodes=len(tracker.finished), log_std=float(agent.actor_logstd.detach().mean()),
                    train_return_last=float(np.mean(tracker.finished[-hp.n_envs:])) if tracker.finished else math.nan,
                    **logs)
        return RunResult(label, env_name, seed, curve, float(curve["return"].iloc[-1]), clock.total,
                         n_iters * per_iter, per_iter, storage, diag)


def _ppo_update(agent: PpoAgent, opt: Adam, data: dict, hp: PpoHP, g: torch.Generator) -> dict:
    n = data["obs"].shape[0] * data["obs"].shape[1]
    flat = {k: v.reshape(n, *v.shape[2:]) for k, v in data.items()}
    mb = n // hp.minibatches
    sums = torch.zeros(3)
    for _ in range(hp.epochs):
        perm = torch.randperm(n, generator=g)
        for j in range(hp.minibatches):
            b = {k: v[perm[j * mb:(j + 1) * mb]] for k, v in flat.items()}
            mean, log_std = agent.dist(b["obs"])
            logp = gaussian_log_prob(b["act"], mean, log_std)
            adv = (b["adv"] - b["adv"].mean()) / (b["adv"].std() + 1e-8)
            pg = ppo_clip_loss(logp, b["logp"], adv, hp.clip)
            v = agent.value(b["obs"])
            v_clipped = b["value"] + (v - b["value"]).clamp(-hp.clip, hp.clip)
            vloss = 0.5 * torch.maximum((v - b["ret"]) ** 2, (v_clipped - b["ret"]) ** 2).mean()
            entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum(-1).mean()
            loss = pg + hp.vf_coef * vloss - hp.ent_coef * entropy
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                frac = ((torch.exp(logp - b["logp"]) - 1).abs() > hp.clip).float().mean()
            sums += torch.stack([pg.detach(), vloss.detach(), frac])
    avg = (sums / (hp.epochs * hp.minibatches)).tolist()
    return dict(zip(("policy_loss", "value_loss", "clip_frac"), avg))
