"""The on-policy rollout loop and the evaluation loop that REPPO and PPO share.

``collect`` steps ``n_envs`` environments for ``n_steps`` steps. At every step it normalises the observation
(updating the running statistics), asks ``act_fn`` for an action in [-1, 1] (plus whatever the algorithm wants to
store), steps the environments, normalises the *final* observation of each transition (the true last observation
of an episode that just ended, otherwise the next observation) and passes it to ``next_fn``, which returns what the
algorithm computes from s' (REPPO: a fresh a' ~ π, Q(s', a'), the soft reward and the next embedding; PPO: V(s')).
Everything is stacked to tensors of shape [n_steps, n_envs, ...].
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pandas as pd
import torch


class EpisodeTracker:
    """Undiscounted returns of the training episodes that finish during rollouts."""

    def __init__(self, n_envs: int):
        self.running = torch.zeros(n_envs)
        self.finished: list[float] = []

    def __call__(self, r: torch.Tensor, done: torch.Tensor) -> None:
        self.running += r.detach().cpu()
        d = done.detach().cpu()
        if bool(d.any()):
            self.finished.extend(self.running[d].tolist())
            self.running[d] = 0.0


def collect(env, obs: torch.Tensor, norm, n_steps: int, act_fn: Callable, next_fn: Callable,
            tracker: Optional[EpisodeTracker] = None) -> tuple[dict, torch.Tensor]:
    """One rollout; returns ({name: tensor [n_steps, n_envs, ...]}, the observation to continue from)."""
    steps: list[dict] = []
    for _ in range(n_steps):
        obs_n = norm(obs, update=True)
        with torch.no_grad():
            act, extra = act_fn(obs_n)
        next_obs, rew, term, trunc, final = env.step(env.scale_action(act))
        fin_n = norm(final)
        with torch.no_grad():
            nxt = next_fn(fin_n, rew, term, trunc)
        if tracker is not None:
            tracker(rew, term | trunc)
        steps.append(dict(obs=obs_n, act=act, rew=rew, term=term.float(), trunc=trunc.float(), **extra, **nxt))
        obs = next_obs
    data = {k: torch.stack([s[k] for s in steps]) for k in steps[0]}
    return data, obs


@torch.no_grad()
def evaluate(policy_fn: Callable, norm, env, n_episodes: int) -> float:
    """Mean undiscounted return of the deterministic policy over ``n_episodes`` parallel episodes.

    ``env`` is a batch of ``n_episodes`` evaluation environments; it is reseeded first, so every evaluation of a run
    starts from the same states; each environment plays exactly one episode.
    """
    env.reseed()
    obs = env.reset()
    total = torch.zeros(n_episodes)
    alive = torch.ones(n_episodes, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        act = policy_fn(norm(obs))
        obs, rew, term, trunc, _ = env.step(env.scale_action(act))
        total += torch.where(alive, rew.cpu(), torch.zeros_like(total))
        alive &= ~(term | trunc).cpu()
        if not bool(alive.any()):
            break
    return float(total.mean())


def tensor_bytes(data: dict) -> int:
    """Bytes held by the tensors of a rollout or replay buffer (measured on the objects)."""
    return int(sum(t.element_size() * t.nelement() for t in data.values() if torch.is_tensor(t)))


@dataclass
class RunResult:
    """What one training run returns: the learning curve and what the figures and claims read."""

    algo: str
    env: str
    seed: int
    curve: pd.DataFrame  # columns: steps, return, wall_s
    final_return: float
    wall_s: float
    env_steps: int
    stored_transitions: int
    storage_bytes: int
    diagnostics: dict = field(default_factory=dict)
    model: Optional[dict] = None  # actor / critic / norm / last states, when asked for

    def summary(self) -> dict:
        return dict(algo=self.algo, env=self.env, seed=self.seed, final_return=self.final_return,
                    wall_s=self.wall_s, env_steps=self.env_steps, stored_transitions=self.stored_transitions,
                    storage_bytes=self.storage_bytes, **{k: v for k, v in self.diagnostics.items()
                                                         if np.isscalar(v)})


class Clock:
    """Training wall-clock that excludes evaluation time."""

    def __init__(self):
        self.total, self._t0 = 0.0, None

    def start(self):
        self._t0 = time.perf_counter()

    def stop(self):
        if self._t0 is not None:
            self.total += time.perf_counter() - self._t0
            self._t0 = None
        return self.total
