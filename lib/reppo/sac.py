"""SAC with a replay buffer: the off-policy reference for memory (and, in full mode, sample efficiency).

Standard SAC (Haarnoja et al. 2018, with learned temperature and target entropy −|A|): a tanh-Gaussian actor,
twin Q networks with Polyak-averaged targets, a preallocated replay buffer of ``buffer_size`` transitions, a batch
of ``batch_size`` per gradient step and ``updates_per_step`` gradient steps per vector step of ``n_envs``
environments (FastTD3-style many-env collection). Observations are normalised with the same ``RunningNorm``,
stored raw and normalised when sampled.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import torch
from torch import nn

from .envs import make_env
from .networks import Adam, RunningNorm, TanhGaussianActor, mlp
from .reppo import _threads
from .rollout import Clock, EpisodeTracker, RunResult, evaluate, tensor_bytes


@dataclass(frozen=True)
class SacHP:
    n_envs: int = 8
    buffer_size: int = 1_000_000
    batch_size: int = 256
    updates_per_step: int = 2
    learning_starts: int = 2_000
    gamma: float = 0.99
    tau: float = 0.005
    lr: float = 3e-4
    hidden: int = 128
    layers: int = 3


class ReplayBuffer:
    """A ring buffer of preallocated float32 tensors (the memory a replay method must hold)."""

    def __init__(self, capacity: int, obs_dim: int, act_dim: int):
        self.capacity, self.size, self.pos = int(capacity), 0, 0
        self.data = dict(obs=torch.empty(self.capacity, obs_dim), act=torch.empty(self.capacity, act_dim),
                         rew=torch.empty(self.capacity), next_obs=torch.empty(self.capacity, obs_dim),
                         term=torch.empty(self.capacity))
        for t in self.data.values():
            t.zero_()  # touch every page: the buffer's memory is really held, as it is after it has filled

    def add(self, **batch) -> None:
        n = len(batch["rew"])
        idx = (torch.arange(n) + self.pos) % self.capacity
        for k, v in batch.items():
            self.data[k][idx] = v.reshape(n, *self.data[k].shape[1:]).float()
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, generator: torch.Generator) -> dict:
        idx = torch.randint(0, self.size, (n,), generator=generator)
        return {k: v[idx] for k, v in self.data.items()}

    @property
    def nbytes(self) -> int:
        return tensor_bytes(self.data)


def train_sac(env_name: str = "BatchedPendulum", total_steps: int = 30_000, hp: SacHP = SacHP(), seed: int = 0,
              eval_every: int = 10_000, eval_episodes: int = 32, device: str = "cpu", threads: Optional[int] = 1,
              label: str = "SAC (replay)") -> RunResult:
    with _threads(threads):
        g = torch.Generator()
        g.manual_seed(int(seed) + 104_729)
        torch.manual_seed(int(seed) + 104_729)
        env = make_env(env_name, hp.n_envs, seed=seed, device=device)
        od, ad = env.obs_dim, env.act_dim
        actor = TanhGaussianActor(od, ad, hp.hidden, hp.layers, ent_start=1.0, norm=False)
        actor.log_beta.requires_grad_(False)
        qs = nn.ModuleList([mlp(od + ad, 1, hp.hidden, hp.layers, norm=False) for _ in range(2)])
        q_targ = copy.deepcopy(qs).requires_grad_(False)
        a_opt = Adam(actor.parameters(), lr=hp.lr)
        q_opt = Adam(qs.parameters(), lr=hp.lr)
        norm = RunningNorm(od)
        buf = ReplayBuffer(hp.buffer_size, od, ad)
        eval_env = make_env(env_name, eval_episodes, seed=10_000 + seed, device=device)
        target_entropy = -float(ad)
        tracker, clock = EpisodeTracker(hp.n_envs), Clock()
        rows = [dict(steps=0, ret=evaluate(actor.deterministic, norm, eval_env, eval_episodes), wall_s=0.0)]
        obs = env.reset()
        n_iters = math.ceil(total_steps / hp.n_envs)
        next_eval = eval_every
        for it in range(n_iters):
            clock.start()
            norm.update(obs)
            with torch.no_grad():
                if it * hp.n_envs < hp.learning_starts:
                    a = torch.rand((hp.n_envs, ad), generator=g) * 2 - 1
                else:
                    a = actor.rsample(norm(obs), g)[0]
            nxt, rew, term, trunc, final = env.step(env.scale_action(a))
            tracker(rew, term | trunc)
            buf.add(obs=obs, act=a, rew=rew, next_obs=final, term=term.float())
            obs = nxt
            if (it + 1) * hp.n_envs >= hp.learning_starts:
                for _ in range(hp.updates_per_step):
                    _sac_update(actor, qs, q_targ, a_opt, q_opt, buf.sample(hp.batch_size, g), norm, hp,
                                target_entropy, g)
            wall = clock.stop()
            steps = (it + 1) * hp.n_envs
            if steps >= next_eval or it == n_iters - 1:
                rows.append(dict(steps=steps, ret=evaluate(actor.deterministic, norm, eval_env, eval_episodes),
                                 wall_s=wall))
                next_eval += eval_every
        for e in (env, eval_env):
            if hasattr(e, "close"):
                e.close()
        curve = pd.DataFrame(rows).rename(columns={"ret": "return"})
        diag = dict(alpha=float(actor.alpha.detach()), buffer_filled=buf.size,
                    train_return_last=float(np.mean(tracker.finished[-hp.n_envs:])) if tracker.finished else math.nan)
        return RunResult(label, env_name, seed, curve, float(curve["return"].iloc[-1]), clock.total,
                         n_iters * hp.n_envs, buf.capacity, buf.nbytes, diag)


def _sac_update(actor, qs, q_targ, a_opt, q_opt, b, norm, hp, target_entropy, g) -> None:
    o, o2 = norm(b["obs"]), norm(b["next_obs"])
    alpha = actor.alpha.detach()
    with torch.no_grad():
        a2, logp2, _, _ = actor.rsample(o2, g)
        x2 = torch.cat([o2, a2], -1)
        q2 = torch.minimum(q_targ[0](x2), q_targ[1](x2)).squeeze(-1) - alpha * logp2
        y = b["rew"] + hp.gamma * (1 - b["term"]) * q2
    x = torch.cat([o, b["act"]], -1)
    q_loss = sum(((q(x).squeeze(-1) - y) ** 2).mean() for q in qs)
    q_opt.zero_grad()
    q_loss.backward()
    q_opt.step()
    qs.requires_grad_(False)
    a, logp, _, _ = actor.rsample(o, g)
    xa = torch.cat([o, a], -1)
    pi_loss = (alpha * logp - torch.minimum(qs[0](xa), qs[1](xa)).squeeze(-1)).mean()
    ent_loss = -(actor.log_alpha * (logp.detach() + target_entropy)).mean()
    qs.requires_grad_(True)
    a_opt.zero_grad()
    (pi_loss + ent_loss).backward()
    a_opt.step()
    with torch.no_grad():
        for p, pt in zip(qs.parameters(), q_targ.parameters()):
            pt.lerp_(p, hp.tau)
