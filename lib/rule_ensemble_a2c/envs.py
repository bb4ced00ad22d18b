"""Vectorised gymnasium environments with discrete actions, as numpy batches of real-valued features.

Every environment behaves as a ``gymnasium`` vector env. CartPole uses gymnasium's own numpy-vectorised
implementation (``vectorization_mode="vector_entry_point"``); the others run ``n_envs`` copies as a
``SyncVectorEnv`` would, by default on the numpy-vectorised copies of ``fastenvs`` (Acrobot, MountainCar, toy
text; LunarLander as a loop over unwrapped environments), which return gymnasium's numbers bit for bit. All use
gymnasium 1.x's default *next-step* autoreset: the step on which an episode ends returns its true last
observation (so a time-limit truncation can bootstrap from it), and the *next* call to ``step`` resets that
environment and returns the first observation of the new episode with reward 0 (its action is ignored). The
rollout code masks those reset transitions (``valid = not done_previous_step``).

The toy-text tasks have an integer state; it is decoded into its coordinates (CliffWalking and FrozenLake:
row, column; Taxi: taxi row, taxi column, passenger location, destination), so that an axis-aligned rule reads
"IF row >= 3 AND col <= 10 THEN ...". CliffWalking has no time limit in gymnasium; it gets 200 steps here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fastenvs import FAST_ENVS, make_fast_vec

CLASSIC = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3")
TOY_TEXT = ("CliffWalking-v1", "Taxi-v4", "FrozenLake-v1")
ENV_NAMES = CLASSIC + TOY_TEXT


@dataclass(frozen=True)
class EnvSpec:
    name: str
    feature_names: tuple
    n_actions: int
    max_steps: int
    action_names: tuple
    solved: float  # the return a good policy reaches (for plots only)
    random_return: float  # rough return of the uniform random policy (for plots only)


SPECS = {
    "CartPole-v1": EnvSpec("CartPole-v1", ("x", "x_dot", "theta", "theta_dot"), 2, 500, ("left", "right"),
                           500.0, 22.0),
    "Acrobot-v1": EnvSpec("Acrobot-v1", ("cos1", "sin1", "cos2", "sin2", "omega1", "omega2"), 3, 500,
                          ("torque -1", "torque 0", "torque +1"), -80.0, -500.0),
    "MountainCar-v0": EnvSpec("MountainCar-v0", ("position", "velocity"), 3, 200, ("left", "none", "right"),
                              -110.0, -200.0),
    "LunarLander-v3": EnvSpec("LunarLander-v3", ("x", "y", "vx", "vy", "angle", "ang_vel", "leg_left",
                                                 "leg_right"), 4, 1000, ("noop", "left", "main", "right"),
                              200.0, -180.0),
    "CliffWalking-v1": EnvSpec("CliffWalking-v1", ("row", "col"), 4, 200, ("up", "right", "down", "left"),
                               -13.0, -2000.0),
    "Taxi-v4": EnvSpec("Taxi-v4", ("taxi_row", "taxi_col", "passenger", "destination"), 6, 200,
                       ("south", "north", "east", "west", "pickup", "dropoff"), 8.0, -770.0),
    "FrozenLake-v1": EnvSpec("FrozenLake-v1", ("row", "col"), 4, 100, ("left", "down", "right", "up"),
                             0.74, 0.015),
}


def box2d_available() -> bool:
    try:
        import Box2D  # noqa: F401
    except ImportError:
        return False
    return True


def require_env(name: str, parameter: str = "env") -> None:
    """Refuse an unknown environment, or LunarLander without its ``box2d`` extra, before any work."""
    if name not in SPECS:
        raise ValueError(f"parameter {parameter!r} got {name!r}; allowed: one of " + ", ".join(map(repr, ENV_NAMES)))
    if name == "LunarLander-v3" and not box2d_available():
        raise ValueError(f"parameter {parameter!r} asks for 'LunarLander-v3', which needs the optional package "
                         f"'box2d' (pip install 'gymnasium[box2d]'); install it or leave it out of {parameter!r}")


def _decode(name: str, s: np.ndarray) -> np.ndarray:
    if name not in TOY_TEXT:
        return np.asarray(s, dtype=np.float32)
    s = np.asarray(s, dtype=np.int64)
    if name == "CliffWalking-v1":
        return np.stack([s // 12, s % 12], axis=-1).astype(np.float32)
    if name == "FrozenLake-v1":
        return np.stack([s // 4, s % 4], axis=-1).astype(np.float32)
    if name == "Taxi-v4":  # ((row * 5 + col) * 5 + passenger) * 4 + destination
        return np.stack([s // 100, (s // 20) % 5, (s // 4) % 5, s % 4], axis=-1).astype(np.float32)
    raise ValueError(f"no decoder for {name!r}")


class VecEnv:
    """``n_envs`` copies of one task: ``reset() -> X``, ``step(a) -> (X, r, terminated, truncated)``; numpy only.

    ``backend="numpy"`` (default) runs Acrobot, MountainCar and the toy-text tasks on the vectorised copies of
    ``fastenvs`` and LunarLander on its wrapper-free loop (identical to gymnasium's, step for step);
    ``"gymnasium"`` runs gymnasium's ``SyncVectorEnv``. CartPole always runs gymnasium's ``CartPoleVectorEnv``.

    Seeding: the first ``reset`` seeds the batch with ``seed`` (gymnasium gives copy i the seed ``seed + i``);
    ``reseed()`` makes the next ``reset`` start from the same states again.
    """

    def __init__(self, name: str, n_envs: int, seed: int = 0, backend: str = "numpy"):
        import gymnasium as gym

        require_env(name)
        if backend not in ("numpy", "gymnasium"):
            raise ValueError(f"parameter 'backend' got {backend!r}; allowed: 'numpy', 'gymnasium'")
        self.name, self.n_envs, self.seed = name, int(n_envs), int(seed)
        self.spec = SPECS[name]
        if name == "CartPole-v1":
            self.env = gym.make_vec(name, num_envs=self.n_envs, vectorization_mode="vector_entry_point")
        elif name in FAST_ENVS and backend == "numpy":
            self.env = make_fast_vec(name, self.n_envs, self.spec.max_steps)
        else:
            kw = {"max_episode_steps": self.spec.max_steps} if name == "CliffWalking-v1" else {}
            self.env = gym.make_vec(name, num_envs=self.n_envs, vectorization_mode="sync", **kw)
        self.obs_dim = len(self.spec.feature_names)
        self.n_actions = self.spec.n_actions
        self.max_steps = self.spec.max_steps
        self._seeded = False

    def reseed(self) -> None:
        self._seeded = False

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=None if self._seeded else self.seed)
        self._seeded = True
        return _decode(self.name, obs)

    def step(self, actions: np.ndarray):
        obs, rew, term, trunc, _ = self.env.step(np.asarray(actions, dtype=np.int64))
        return (_decode(self.name, obs), np.asarray(rew, dtype=np.float64), np.asarray(term, dtype=bool),
                np.asarray(trunc, dtype=bool))

    def close(self) -> None:
        self.env.close()


def evaluate(policy, env: VecEnv) -> np.ndarray:
    """Undiscounted returns of the deterministic ``policy`` (states -> actions), one episode per environment of
    ``env``, always from the same start states (the env is reseeded first)."""
    env.reseed()
    X = env.reset()
    total = np.zeros(env.n_envs)
    alive = np.ones(env.n_envs, dtype=bool)
    for _ in range(env.max_steps):
        X, r, term, trunc = env.step(policy(X))
        total += np.where(alive, r, 0.0)
        alive &= ~(term | trunc)
        if not alive.any():
            break
    return total
