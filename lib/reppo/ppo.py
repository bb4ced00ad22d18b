"""PPO for continuous actions (CleanRL's ``ppo_continuous_action``), on the same rollout and normalisation code.

Gaussian policy N(μ(s), diag σ²) with a state-independent log σ, a separate value network, GAE(λ) advantages
(normalised per minibatch), the clipped surrogate L = E[max(−A·ρ, −A·clip(ρ, 1 − ε, 1 + ε))], ρ = π/π_old and
observation normalisation. The defaults of ``PpoHP`` are CleanRL's continuous-action settings, the PPO a careful
user runs: running return-based reward scaling (gymnasium's NormalizeReward, clipped to ±10), a value target
normalised by running statistics of the returns (ValueNorm: the critic regresses (G − m)/s and its output is
de-normalised for GAE), no value clipping, 10 epochs × 8 minibatches, a linearly annealed learning rate, clip 0.2,
GAE λ 0.95, γ 0.99. ``matched_ppo_hp`` gives the second, labelled configuration: the authors' PPO relative to
REPPO (the environment's fixed reward scale, clipped value loss, 16 epochs × 2 minibatches, i.e. REPPO's number of
gradient steps per rollout, constant learning rate). Sampled actions are clipped to [-1, 1] before they reach the
environment; log-probabilities are those of the unclipped samples. At a time-limit truncation the reward gets
γ·V(s_final) added, so the advantage bootstraps through the time limit.
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
    epochs: int = 10
    minibatches: int = 8
    gamma: float = 0.99
    lam: float = 0.95
    lr: float = 3e-4
    anneal_lr: bool = True  # CleanRL: lr falls linearly to 0 over the run
    clip: float = 0.2
    value_clip: Optional[float] = None  # None: plain squared error; a number: CleanRL's clipped value loss
    value_norm: bool = True  # the critic regresses returns normalised by their running mean and sd
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    layers: int = 3
    reward_scale: Optional[float] = None  # fixed scale when reward_norm is off (None: the environment's, as REPPO)
    reward_norm: bool = True  # CleanRL's running return normalisation (clipped to ±reward_clip)
    reward_clip: float = 10.0


def matched_ppo_hp(**kw) -> PpoHP:
    """The authors' PPO relative to REPPO: fixed reward scale, value loss clipped at ``clip``, no value
    normalisation, constant lr, 16 epochs × 2 minibatches (REPPO's gradient steps per rollout at 4 × 8)."""
    base = dict(epochs=16, minibatches=2, reward_norm=False, value_norm=False, value_clip=0.2, anneal_lr=False)
    base.update(kw)
    return PpoHP(**base)


def value_loss(v: torch.Tensor, v_old: torch.Tensor, ret: torch.Tensor, clip: Optional[float] = None) -> torch.Tensor:
    """PPO's value loss ½·mean((v − G)²); with ``clip``, CleanRL's ½·mean(max((v − G)², (v_clip − G)²)) where
    v_clip = v_old + clamp(v − v_old, ±clip)."""
    sq = (v - ret) ** 2
    if clip is None:
        return 0.5 * sq.mean()
    v_clipped = v_old + (v - v_old).clamp(-clip, clip)
    return 0.5 * torch.maximum(sq, (v_clipped - ret) ** 2).mean()


class ValueNorm:
    """Running mean and variance of the value targets (Chan's parallel update), the old statistics down-weighted
    by ``decay`` per update (an effective window of about 1/(1 − decay) rollouts; 1.0: everything seen), so they
    follow the return scale as the reward normaliser and the policy change. ``normalize`` maps returns to the
    critic's scale, ``denormalize`` maps the critic's output back."""

    def __init__(self, decay: float = 0.5, eps: float = 1e-5):
        self.mean, self.var, self.count, self.decay, self.eps = 0.0, 1.0, 0.0, decay, eps

    def update(self, x: torch.Tensor) -> None:
        x = x.detach().reshape(-1).double()
        n, m, v = float(x.numel()), float(x.mean()), float(x.var(unbiased=False))
        if self.count == 0:
            self.mean, self.var, self.count = m, v, n
            return
        self.count *= self.decay
        tot = self.count + n
        d = m - self.mean
        self.mean += d * n / tot
        self.var = (self.var * self.count + v * n + d * d * self.count * n / tot) / tot
        self.count = tot

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / math.sqrt(self.var + self.eps)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * math.sqrt(self.var + self.eps) + self.mean


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
        vnorm = ValueNorm() if hp.value_norm else None

        def value(obs_n):  # V(s) in (scaled) reward units
            v = agent.value(obs_n)
            return vnorm.denormalize(v) if vnorm is not None else v
        rscale = env_spec(env_name)["reward_scale"] if hp.reward_scale is None else hp.reward_scale
        eval_env = make_env(env_name, eval_episodes, seed=10_000 + seed, device=device)

        def act(obs_n):
            mean, log_std = agent.dist(obs_n)
            a = mean + log_std.exp() * torch.randn(mean.shape, generator=g)
            return a, dict(logp=gaussian_log_prob(a, mean, log_std), value=value(obs_n))

        def next_step(fin_n, rew, term, trunc):
            if scaler is not None:
                r = scaler(rew, term | trunc).clamp(-hp.reward_clip, hp.reward_clip)
            else:
                r = rscale * rew
            boot = value(fin_n)  # V(s_final): bootstrap through time-limit truncations
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
            if hp.anneal_lr:
                opt.lr = hp.lr * (1.0 - it / n_iters)
            data, obs = collect(env, obs, norm, hp.n_steps, act, next_step, tracker)
            with torch.no_grad():
                last_v = value(norm(obs))
                next_v = torch.cat([data["value"][1:], last_v[None]])
                done = torch.clamp(data["term"] + data["trunc"], max=1.0)
                data["adv"] = gae(data["rew_train"], data["value"], next_v, done, hp.gamma, hp.lam)
                data["ret"] = data["adv"] + data["value"]
                if vnorm is not None:  # the critic regresses normalised returns; its old outputs likewise
                    vnorm.update(data["ret"])
                    data["ret"] = vnorm.normalize(data["ret"])
                    data["value"] = vnorm.normalize(data["value"])
                ret_stats = (float(data["ret"].mean()), float(data["ret"].std()))
            storage = tensor_bytes(data)
            logs = _ppo_update(agent, opt, data, hp, g)
            logs.update(critic_target_mean=ret_stats[0], critic_target_sd=ret_stats[1])
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
        shuffled = {k: v[perm] for k, v in flat.items()}  # one gather per epoch; minibatches are views of it
        for j in range(hp.minibatches):
            b = {k: v[j * mb:(j + 1) * mb] for k, v in shuffled.items()}
            mean, log_std = agent.dist(b["obs"])
            logp = gaussian_log_prob(b["act"], mean, log_std)
            adv = (b["adv"] - b["adv"].mean()) / (b["adv"].std() + 1e-8)
            pg = ppo_clip_loss(logp, b["logp"], adv, hp.clip)
            vloss = value_loss(agent.value(b["obs"]), b["value"], b["ret"], hp.value_clip)
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
