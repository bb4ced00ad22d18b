"""Numpy-vectorised copies of gymnasium's Acrobot-v1, MountainCar-v0 and toy-text tasks, step for step identical
(and a wrapper-free loop over LunarLander-v3's environments).

Gymnasium runs these tasks one Python object per copy (``SyncVectorEnv``), which costs more than the learners on
a CPU budget. The classes here advance all copies at once with the same floating-point operations, in the same
order, as gymnasium 1.x's single environments, and reproduce ``gym.make_vec(..., vectorization_mode="sync")``
around them: copy i is seeded with ``seed + i`` through ``gymnasium.utils.seeding.np_random`` and draws from its
own generator exactly what the gymnasium copy draws (reset states; one uniform per toy-text step), the
``TimeLimit`` of the registration truncates at ``elapsed >= max_episode_steps``, and the vector env's *next-step*
autoreset returns a reset observation with reward 0 and no termination on the step after an episode ended.
Observations, rewards and flags are therefore bit-for-bit gymnasium's (unit tests step both side by side).

Two details matter for exactness. Acrobot squares NumPy float64 *scalars* (``dtheta2**2``), which calls the C
library's ``pow``; NumPy arrays square with ``x * x``, which differs in the last bit for about 0.1% of inputs, so the
squares here go through ``math.pow`` element by element. Acrobot's reset state is float32, and its first
observation takes cos/sin in float32, as gymnasium does.
"""
from __future__ import annotations

import math

import numpy as np

FAST_ENVS = ("Acrobot-v1", "MountainCar-v0", "CliffWalking-v1", "Taxi-v4", "FrozenLake-v1", "LunarLander-v3")


def _pow2(x: np.ndarray) -> np.ndarray:
    """``x ** 2`` element by element as NumPy float64 scalars compute it (C library ``pow``)."""
    return np.fromiter((math.pow(v, 2.0) for v in x.tolist()), dtype=np.float64, count=len(x))


class _Base:
    """Seeding, time limit and next-step autoreset shared by the vectorised tasks (gymnasium's semantics)."""

    max_episode_steps = 0

    def __init__(self, num_envs: int, max_episode_steps: int | None = None):
        self.num_envs = int(num_envs)
        if max_episode_steps is not None:
            self.max_episode_steps = int(max_episode_steps)
        self.rngs = [None] * self.num_envs
        self.elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self.autoreset = np.zeros(self.num_envs, dtype=bool)

    def reset(self, seed: int | None = None):
        from gymnasium.utils import seeding

        for i in range(self.num_envs):
            if seed is not None:
                self.rngs[i], _ = seeding.np_random(int(seed) + i)
            elif self.rngs[i] is None:
                self.rngs[i], _ = seeding.np_random(None)
        idx = np.arange(self.num_envs)
        self._reset_idx(idx)
        self.elapsed[:] = 0
        self.autoreset[:] = False
        return self._obs(), {}

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.int64)
        res = self.autoreset.copy()
        live = np.flatnonzero(~res)
        rew = np.zeros(self.num_envs)
        term = np.zeros(self.num_envs, dtype=bool)
        if len(live):
            r, t = self._step_idx(live, actions[live])
            rew[live], term[live] = r, t
            self.elapsed[live] += 1
        if res.any():
            ridx = np.flatnonzero(res)
            self._reset_idx(ridx)
            self.elapsed[ridx] = 0
        trunc = np.zeros(self.num_envs, dtype=bool)
        trunc[live] = self.elapsed[live] >= self.max_episode_steps
        self.autoreset = term | trunc
        return self._obs(), rew, term, trunc, {}

    def close(self) -> None:
        pass


class AcrobotVec(_Base):
    """gymnasium.envs.classic_control.acrobot.AcrobotEnv ("book" dynamics, no torque noise), vectorised."""

    max_episode_steps = 500
    dt = 0.2
    LINK_LENGTH_1 = 1.0
    LINK_MASS_1 = 1.0
    LINK_MASS_2 = 1.0
    LINK_COM_POS_1 = 0.5
    LINK_COM_POS_2 = 0.5
    LINK_MOI = 1.0
    MAX_VEL_1 = 4 * math.pi
    MAX_VEL_2 = 9 * math.pi
    AVAIL_TORQUE = np.array([-1.0, 0.0, 1.0])

    def __init__(self, num_envs: int, max_episode_steps: int | None = None):
        super().__init__(num_envs, max_episode_steps)
        self.state = np.zeros((self.num_envs, 4))
        self.fresh = np.ones(self.num_envs, dtype=bool)  # state still the float32 reset state
        self.state32 = np.zeros((self.num_envs, 4), dtype=np.float32)

    def _reset_idx(self, idx) -> None:
        for i in idx:
            s = self.rngs[i].uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32)
            self.state32[i] = s
            self.state[i] = s
        self.fresh[idx] = True

    def _dsdt(self, th1, th2, dth1, dth2, a):
        m1, m2, l1 = self.LINK_MASS_1, self.LINK_MASS_2, self.LINK_LENGTH_1
        lc1, lc2, I1, I2 = self.LINK_COM_POS_1, self.LINK_COM_POS_2, self.LINK_MOI, self.LINK_MOI
        g = 9.8
        pi = math.pi
        cos, sin = np.cos, np.sin
        dth2_sq, dth1_sq = _pow2(dth2), _pow2(dth1)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(th2)) + I1 + I2
        d2 = m2 * (lc2**2 + l1 * lc2 * cos(th2)) + I2
        phi2 = m2 * lc2 * g * cos(th1 + th2 - pi / 2.0)
        phi1 = (-m2 * l1 * lc2 * dth2_sq * sin(th2) - 2 * m2 * l1 * lc2 * dth2 * dth1 * sin(th2)
                + (m1 * lc1 + m2 * l1) * g * cos(th1 - pi / 2) + phi2)
        ddth2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dth1_sq * sin(th2) - phi2) / (m2 * lc2**2 + I2 - _pow2(d2) / d1)
        ddth1 = -(d2 * ddth2 + phi1) / d1
        return np.stack([dth1, dth2, ddth1, ddth2], axis=1)

    def _step_idx(self, idx, actions):
        y0 = self.state[idx]  # float64 (a float32 reset state converts exactly, as np.append does)
        a = self.AVAIL_TORQUE[actions]
        t = [0, self.dt]
        dt = t[1] - t[0]
        dt2 = dt / 2.0

        def f(y):
            return self._dsdt(y[:, 0], y[:, 1], y[:, 2], y[:, 3], a)

        k1 = f(y0)
        k2 = f(y0 + dt2 * k1)
        k3 = f(y0 + dt2 * k2)
        k4 = f(y0 + dt * k3)
        ns = y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        for j in (0, 1):
            x = ns[:, j]
            diff = math.pi - (-math.pi)
            while (x > math.pi).any():
                x = np.where(x > math.pi, x - diff, x)
            while (x < -math.pi).any():
                x = np.where(x < -math.pi, x + diff, x)
            ns[:, j] = x
        ns[:, 2] = np.minimum(np.maximum(ns[:, 2], -self.MAX_VEL_1), self.MAX_VEL_1)
        ns[:, 3] = np.minimum(np.maximum(ns[:, 3], -self.MAX_VEL_2), self.MAX_VEL_2)
        self.state[idx] = ns
        self.fresh[idx] = False
        term = -np.cos(ns[:, 0]) - np.cos(ns[:, 1] + ns[:, 0]) > 1.0
        return np.where(term, 0.0, -1.0), term

    def _obs(self) -> np.ndarray:
        s = self.state
        out = np.stack([np.cos(s[:, 0]), np.sin(s[:, 0]), np.cos(s[:, 1]), np.sin(s[:, 1]), s[:, 2], s[:, 3]],
                       axis=1).astype(np.float32)
        if self.fresh.any():
            f = np.flatnonzero(self.fresh)
            s32 = self.state32[f]
            out[f] = np.stack([np.cos(s32[:, 0]), np.sin(s32[:, 0]), np.cos(s32[:, 1]), np.sin(s32[:, 1]),
                               s32[:, 2], s32[:, 3]], axis=1)
        return out


class MountainCarVec(_Base):
    """gymnasium.envs.classic_control.mountain_car.MountainCarEnv, vectorised."""

    max_episode_steps = 200
    min_position, max_position, max_speed, goal_position, goal_velocity = -1.2, 0.6, 0.07, 0.5, 0
    force, gravity = 0.001, 0.0025

    def __init__(self, num_envs: int, max_episode_steps: int | None = None):
        super().__init__(num_envs, max_episode_steps)
        self.state = np.zeros((self.num_envs, 2))

    def _reset_idx(self, idx) -> None:
        for i in idx:
            self.state[i] = (self.rngs[i].uniform(low=-0.6, high=-0.4), 0.0)

    def _step_idx(self, idx, actions):
        position, velocity = self.state[idx, 0], self.state[idx, 1]
        velocity = velocity + ((actions - 1) * self.force + np.cos(3 * position) * (-self.gravity))
        velocity = np.clip(velocity, -self.max_speed, self.max_speed)
        position = position + velocity
        position = np.clip(position, self.min_position, self.max_position)
        velocity = np.where((position == self.min_position) & (velocity < 0), 0.0, velocity)
        term = (position >= self.goal_position) & (velocity >= self.goal_velocity)
        self.state[idx, 0], self.state[idx, 1] = position, velocity
        return np.full(len(idx), -1.0), term

    def _obs(self) -> np.ndarray:
        return self.state.astype(np.float32)


class TabularVec(_Base):
    """A gymnasium toy-text task (its transition table ``P`` and start distribution), vectorised.

    Each step draws one uniform per copy from that copy's generator and picks the transition with gymnasium's
    ``categorical_sample`` rule (the first index whose cumulative probability exceeds it; index 0 if none).
    """

    def __init__(self, name: str, num_envs: int, max_episode_steps: int | None = None):
        import gymnasium as gym

        base = gym.make(name)
        u = base.unwrapped
        spec_steps = base.spec.max_episode_steps if base.spec is not None else None
        super().__init__(num_envs, max_episode_steps if max_episode_steps is not None else spec_steps)
        if getattr(u, "fickle_passenger", False):
            raise ValueError("TabularVec does not support Taxi's fickle passenger")
        nS, nA = u.observation_space.n, u.action_space.n
        kmax = max(len(u.P[s][a]) for s in range(nS) for a in range(nA))
        self.cs = np.full((nS, nA, kmax), -np.inf)  # padding never exceeds a uniform
        self.nxt = np.zeros((nS, nA, kmax), dtype=np.int64)
        self.rew = np.zeros((nS, nA, kmax))
        self.term = np.zeros((nS, nA, kmax), dtype=bool)
        for s in range(nS):
            for a in range(nA):
                tr = u.P[s][a]
                k = len(tr)
                self.cs[s, a, :k] = np.cumsum(np.asarray([t[0] for t in tr]))
                self.nxt[s, a, :k] = [t[1] for t in tr]
                self.rew[s, a, :k] = [t[2] for t in tr]
                self.term[s, a, :k] = [t[3] for t in tr]
        self.init_cs = np.cumsum(np.asarray(u.initial_state_distrib))
        base.close()
        self.s = np.zeros(self.num_envs, dtype=np.int64)

    def _reset_idx(self, idx) -> None:
        for i in idx:
            self.s[i] = int(np.argmax(self.init_cs > self.rngs[i].random()))

    def _step_idx(self, idx, actions):
        u = np.array([self.rngs[i].random() for i in idx])
        s = self.s[idx]
        k = np.argmax(self.cs[s, actions] > u[:, None], axis=1)
        ns = self.nxt[s, actions, k]
        self.s[idx] = ns
        return self.rew[s, actions, k], self.term[s, actions, k]

    def _obs(self) -> np.ndarray:
        return self.s.copy()


class SerialVec:
    """``num_envs`` unwrapped gymnasium environments stepped in a loop, with the registration's ``TimeLimit`` and
    the vector env's next-step autoreset done here: the same calls on the same environment objects as
    ``gym.make_vec(name, vectorization_mode="sync")``, without the per-step cost of its wrappers and info
    dictionaries (used for LunarLander-v3, whose Box2D physics cannot be batched)."""

    def __init__(self, name: str, num_envs: int, max_episode_steps: int | None = None):
        import gymnasium as gym

        self.num_envs = int(num_envs)
        made = [gym.make(name) for _ in range(self.num_envs)]
        spec_steps = made[0].spec.max_episode_steps if made[0].spec is not None else None
        self.max_episode_steps = int(max_episode_steps if max_episode_steps is not None else spec_steps)
        self.envs = [e.unwrapped for e in made]
        self.elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self.autoreset = np.zeros(self.num_envs, dtype=bool)
        self._obs = None

    def reset(self, seed: int | None = None):
        obs = [e.reset(seed=None if seed is None else int(seed) + i)[0] for i, e in enumerate(self.envs)]
        self._obs = np.stack(obs)
        self.elapsed[:] = 0
        self.autoreset[:] = False
        return self._obs.copy(), {}

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.int64)
        rew = np.zeros(self.num_envs)
        term = np.zeros(self.num_envs, dtype=bool)
        trunc = np.zeros(self.num_envs, dtype=bool)
        for i, (a, e) in enumerate(zip(actions, self.envs)):
            if self.autoreset[i]:
                self._obs[i], _ = e.reset()
                self.elapsed[i] = 0
            else:
                self._obs[i], rew[i], term[i], _, _ = e.step(a)
                self.elapsed[i] += 1
                trunc[i] = self.elapsed[i] >= self.max_episode_steps
        self.autoreset = term | trunc
        return self._obs.copy(), rew, term, trunc, {}

    def close(self) -> None:
        for e in self.envs:
            e.close()


def make_fast_vec(name: str, num_envs: int, max_episode_steps: int | None = None):
    """The vectorised copy of gymnasium task ``name`` (one of ``FAST_ENVS``)."""
    if name == "LunarLander-v3":
        return SerialVec(name, num_envs, max_episode_steps)
    if name == "Acrobot-v1":
        return AcrobotVec(num_envs, max_episode_steps)
    if name == "MountainCar-v0":
        return MountainCarVec(num_envs, max_episode_steps)
    if name in ("CliffWalking-v1", "Taxi-v4", "FrozenLake-v1"):
        return TabularVec(name, num_envs, max_episode_steps)
    raise ValueError(f"no vectorised copy of {name!r}; allowed: " + ", ".join(map(repr, FAST_ENVS)))
