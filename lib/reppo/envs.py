"""Environments as batches of torch tensors.

``BatchedPendulum`` re-implements gymnasium's ``Pendulum-v1`` (dynamics, reward, observation, 200-step time limit)
for ``n_envs`` pendulums at once, so 64 or more environments cost one vectorised torch step. A unit test checks it
against gymnasium step for step. ``GymnasiumBatch`` wraps ``n_envs`` copies of any gymnasium task (``Pendulum-v1``,
``HalfCheetah-v5``, ``Hopper-v5``) behind the same interface.

Both step with *same-step* auto-reset: ``step(actions)`` returns ``(obs, reward, terminated, truncated, final_obs)``
where ``obs`` is already the first observation of the next episode for environments that just ended and
``final_obs`` is the true last observation of the finished episode (equal to ``obs`` elsewhere). Actions are in the
environment's units; ``scale_action`` maps the agents' [-1, 1] outputs there.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

MUJOCO_TASKS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "InvertedPendulum-v5", "Ant-v5")
GYM_TASKS = ("Pendulum-v1",) + MUJOCO_TASKS
ENV_NAMES = ("BatchedPendulum",) + GYM_TASKS


class BatchedPendulum:
    """``n_envs`` copies of gymnasium's Pendulum-v1 stepped together in torch (float64 state, float32 output).

    State (θ, θ̇); observation (cos θ, sin θ, θ̇); action: torque u ∈ [-2, 2];
    reward −(angle_normalize(θ)² + 0.1 θ̇² + 0.001 u²); θ̇ ← clip(θ̇ + (3g/(2l) sin θ + 3/(ml²) u) dt, ±8),
    θ ← θ + θ̇ dt with g = 10, m = l = 1, dt = 0.05; episodes are truncated after 200 steps; resets draw
    θ ~ U[-π, π], θ̇ ~ U[-1, 1] from ``generator``.
    """

    name = "BatchedPendulum"
    obs_dim = 3
    act_dim = 1
    max_episode_steps = 200
    g, m, l, dt, max_speed, max_torque = 10.0, 1.0, 1.0, 0.05, 8.0, 2.0

    def __init__(self, n_envs: int, generator: Optional[torch.Generator] = None, device: str = "cpu"):
        self.n_envs = int(n_envs)
        self.device = torch.device(device)
        self.generator = generator
        self._initial_rng = generator.get_state() if generator is not None else None
        self.action_low = torch.full((1,), -self.max_torque, device=self.device)
        self.action_high = torch.full((1,), self.max_torque, device=self.device)
        self.th = torch.zeros(self.n_envs, dtype=torch.float64, device=self.device)
        self.thdot = torch.zeros_like(self.th)
        self.steps = torch.zeros(self.n_envs, dtype=torch.long, device=self.device)

    # -- state --------------------------------------------------------------------------------------------------
    def _draw(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.rand((n, 2), generator=self.generator, dtype=torch.float64)
        u = u.to(self.device)
        return (2 * u[:, 0] - 1) * math.pi, 2 * u[:, 1] - 1

    def set_state(self, th, thdot) -> torch.Tensor:
        """Put every pendulum in the given state (arrays of length ``n_envs``); returns the observations."""
        self.th = torch.as_tensor(np.asarray(th, dtype=np.float64), device=self.device).reshape(self.n_envs).clone()
        self.thdot = torch.as_tensor(np.asarray(thdot, dtype=np.float64), device=self.device).reshape(
            self.n_envs).clone()
        self.steps.zero_()
        return self.obs()

    def reseed(self) -> None:
        """Rewind the reset generator: the next ``reset()`` draws the same start states as the first one."""
        if self.generator is not None:
            self.generator.set_state(self._initial_rng)

    def reset(self) -> torch.Tensor:
        self.th, self.thdot = self._draw(self.n_envs)
        self.steps.zero_()
        return self.obs()

    def obs(self) -> torch.Tensor:
        return torch.stack([torch.cos(self.th), torch.sin(self.th), self.thdot], dim=-1).float()

    # -- dynamics -----------------------------------------------------------------------------------------------
    def dynamics(self, th: torch.Tensor, thdot: torch.Tensor, u: torch.Tensor):
        """One Euler step of gymnasium's Pendulum for any number of pendulums: float32 torques ``u`` (clipped here),
        float64 states; returns (new theta, new theta-dot, the step's costs)."""
        u = u.clamp(-self.max_torque, self.max_torque)
        ang = torch.remainder(th + math.pi, 2 * math.pi) - math.pi
        costs = ang ** 2 + 0.1 * thdot ** 2 + (0.001 * u ** 2).double()
        torque = (3.0 / (self.m * self.l ** 2) * u).double()
        newthdot = thdot + (3 * self.g / (2 * self.l) * torch.sin(th) + torque) * self.dt
        newthdot = newthdot.clamp(-self.max_speed, self.max_speed)
        return th + newthdot * self.dt, newthdot, costs

    def step(self, actions: torch.Tensor):
        # gymnasium receives float32 actions: the torque terms are computed in float32, the state in float64
        u = torch.as_tensor(actions, device=self.device).reshape(self.n_envs, -1)[:, 0].float()
        self.th, self.thdot, costs = self.dynamics(self.th, self.thdot, u)
        self.steps += 1
        reward = (-costs).float()
        terminated = torch.zeros(self.n_envs, dtype=torch.bool, device=self.device)
        truncated = self.steps >= self.max_episode_steps
        final_obs = self.obs()
        obs = final_obs
        if bool(truncated.any()):
            idx = truncated.nonzero(as_tuple=True)[0]
            th0, thdot0 = self._draw(len(idx))
            self.th = self.th.clone()
            self.thdot = self.thdot.clone()
            self.th[idx], self.thdot[idx] = th0, thdot0
            self.steps[idx] = 0
            obs = self.obs()
        return obs, reward, terminated, truncated, final_obs

    def scale_action(self, a: torch.Tensor) -> torch.Tensor:
        """Map actions in [-1, 1] to the torque range."""
        return self.action_low + (a.clamp(-1, 1) + 1) * 0.5 * (self.action_high - self.action_low)

    def storage_note(self) -> str:
        return f"{self.n_envs} x BatchedPendulum (torch)"


_MUJOCO_SEEN: set = set()


def _make_quietly(gym, env_id: str):
    """``gym.make`` with MuJoCo's model-compiler warnings (a deprecation note in gymnasium's XML, repeated for
    every copy) printed once per message instead of once per environment."""
    if env_id not in MUJOCO_TASKS:
        return gym.make(env_id)
    import mujoco

    seen: list = []
    old = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(seen.append)
    try:
        env = gym.make(env_id)
    finally:
        mujoco.set_mju_user_warning(old)
    for msg in seen:
        if msg not in _MUJOCO_SEEN:
            _MUJOCO_SEEN.add(msg)
            print(f"MuJoCo warning (shown once): {msg}")
    return env


def _require_mujoco(env_id: str, parameter: str) -> None:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        raise ValueError(
            f"parameter {parameter!r} asks for {env_id!r}, which needs the optional package 'mujoco' "
            f"(pip install 'gymnasium[mujoco]'); install it or leave {env_id!r} out of {parameter!r}"
        ) from None


class GymnasiumBatch:
    """``n_envs`` gymnasium environments behind BatchedPendulum's interface (numpy in, torch out).

    Each environment is seeded with ``seed + i`` at its first reset; later resets continue its own stream. MuJoCo
    is imported lazily: asking for a MuJoCo task without ``mujoco`` installed raises a ValueError naming
    ``parameter``.
    """

    def __init__(self, env_id: str, n_envs: int, seed: int = 0, device: str = "cpu", parameter: str = "env"):
        import gymnasium as gym

        if env_id in MUJOCO_TASKS:
            _require_mujoco(env_id, parameter)
        self.name = env_id
        self.n_envs = int(n_envs)
        self.device = torch.device(device)
        self.envs = [_make_quietly(gym, env_id) for _ in range(self.n_envs)]
        space = self.envs[0].action_space
        self.obs_dim = int(np.prod(self.envs[0].observation_space.shape))
        self.act_dim = int(np.prod(space.shape))
        self.max_episode_steps = int(self.envs[0].spec.max_episode_steps or 1000)
        self.action_low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
        self.action_high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)
        self.seed = int(seed)
        self._seeded = False

    def reseed(self) -> None:
        """The next ``reset()`` seeds every environment again with ``seed + i`` (same start states)."""
        self._seeded = False

    def _t(self, x) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x, dtype=np.float32), device=self.device)

    def reset(self) -> torch.Tensor:
        obs = []
        for i, e in enumerate(self.envs):
            o, _ = e.reset(seed=None if self._seeded else self.seed + i)
            obs.append(o)
        self._seeded = True
        return self._t(obs)

    def step(self, actions: torch.Tensor):
        acts = actions.detach().cpu().numpy().astype(np.float32)
        obs, fin, rew, term, trunc = [], [], [], [], []
        for e, a in zip(self.envs, acts):
            o, r, te, tr, _ = e.step(a)
            fin.append(o)
            if te or tr:
                o, _ = e.reset()
            obs.append(o)
            rew.append(r)
            term.append(te)
            trunc.append(tr and not te)
        return (self._t(obs), self._t(rew), torch.as_tensor(term, device=self.device),
                torch.as_tensor(trunc, device=self.device), self._t(fin))

    def scale_action(self, a: torch.Tensor) -> torch.Tensor:
        return self.action_low + (a.clamp(-1, 1) + 1) * 0.5 * (self.action_high - self.action_low)

    def close(self) -> None:
        for e in self.envs:
            e.close()


def make_env(name: str, n_envs: int, seed: int = 0, device: str = "cpu", parameter: str = "env"):
    """``BatchedPendulum`` (torch) or ``n_envs`` copies of a gymnasium task."""
    if name == "BatchedPendulum":
        g = torch.Generator()
        g.manual_seed(int(seed))
        return BatchedPendulum(n_envs, generator=g, device=device)
    if name in GYM_TASKS:
        return GymnasiumBatch(name, n_envs, seed=seed, device=device, parameter=parameter)
    raise ValueError(f"parameter {parameter!r} got {name!r}; allowed: one of " + ", ".join(map(repr, ENV_NAMES)))


def env_spec(name: str) -> dict:
    """Static facts of a task (no simulator needed): dimensions, episode length, and REPPO's reward scale and value
    support [vmin, vmax] (in scaled reward units), following the authors' per-environment configs (brax
    locomotion: reward_scaling 0.1, support [0, 150]).

    Pendulum: r ∈ [-16.27, 0]; scaled by 0.1 the discounted return at γ = 0.99 lies in [-163, 0].
    """
    specs = {
        "BatchedPendulum": dict(obs_dim=3, act_dim=1, horizon=200, reward_scale=0.1, vmin=-165.0, vmax=0.0),
        "Pendulum-v1": dict(obs_dim=3, act_dim=1, horizon=200, reward_scale=0.1, vmin=-165.0, vmax=0.0),
        "HalfCheetah-v5": dict(obs_dim=17, act_dim=6, horizon=1000, reward_scale=0.1, vmin=-30.0, vmax=150.0),
        "Hopper-v5": dict(obs_dim=11, act_dim=3, horizon=1000, reward_scale=0.1, vmin=0.0, vmax=150.0),
        "Walker2d-v5": dict(obs_dim=17, act_dim=6, horizon=1000, reward_scale=0.1, vmin=0.0, vmax=150.0),
        "InvertedPendulum-v5": dict(obs_dim=4, act_dim=1, horizon=1000, reward_scale=0.1, vmin=0.0, vmax=15.0),
        "Ant-v5": dict(obs_dim=105, act_dim=8, horizon=1000, reward_scale=0.1, vmin=-30.0, vmax=150.0),
    }
    if name not in specs:
        raise ValueError(f"unknown environment {name!r}; allowed: one of " + ", ".join(map(repr, ENV_NAMES)))
    return specs[name]
