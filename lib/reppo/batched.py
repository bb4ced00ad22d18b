"""Several seeds of one REPPO or PPO configuration trained as one vectorised program (Figure 1's seed band).

``train_reppo_seeds(seeds, ...)`` returns ``[train_reppo(seed=s, ...) for s in seeds]`` and ``train_ppo_seeds``
likewise for PPO, with the same numbers (a unit test checks them bit for bit), but every network, optimiser and
environment step handles all seeds at once: the parameters of the S runs are stacked along a leading axis
([S, out, in] weights, batched matrix products), the S batches of pendulums are stepped as one, and each run keeps
its own generators (network initialisation, action noise, minibatch order, resets), drawn exactly as the single run
draws them. With 64-wide networks and minibatches of 128, a training step costs mostly per-operation overhead, so two
seeds in one program take little more than one.

Where a batched kernel would round differently from the single run's kernel (the BLAS picks kernels by shape; a
[B, 64] x [64, 1] product, for example), the layer falls back to one matrix product per seed: every shape is checked
once per process (``_bmm_matches``). Batches hold at most ``MAX_STACK`` seeds, so that per-seed scalars (log α, log β)
stay on the elementwise kernels' scalar path, as the single run's 0-d tensors do, and runs are stacked only when
their environments, evaluation episodes and minibatches are multiples of ``ALIGN`` (then every element of a run
goes through the same vectorised path alone or stacked).
Only the configurations the notebook trains on the batched Pendulum are stacked (REPPO with its KL bound, HL-Gauss
critic and pathwise gradient; PPO in either setting); anything else runs seed by seed.
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict
from typing import Optional

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .envs import BatchedPendulum, env_spec, make_env
from .hlgauss import hl_gauss_targets
from .networks import LOG_STD_MAX, Adam, LOG_STD_MIN, RunningNorm, TanhGaussianActor, gaussian_log_prob, tanh_log_det
from .ppo import PpoAgent, PpoHP, gae, train_ppo
from .reppo import Reppo, ReppoHP, _threads, soft_td_lambda, train_reppo
from .rollout import Clock, EpisodeTracker, RunResult, collect, tensor_bytes

MAX_STACK = 8
ALIGN = 32  # elementwise kernels run 2 SIMD vectors at a time (up to 32 floats) and the remainder one by one
_BMM_OK: dict = {}


# -- stacked layers ------------------------------------------------------------------------------------------------
def _linear_loop(x, w, b):
    return torch.stack([F.linear(x[s], w[s], b[s]) for s in range(x.shape[0])])


def _linear_bmm(x, w, b):
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def _bmm_matches(s: int, rows: int, d_in: int, d_out: int) -> bool:
    """Whether the batched product gives, seed by seed, exactly the single-run ``F.linear`` (forward, and the
    gradients to input, weight and bias) for this shape; decided once per shape on random numbers."""
    key = (s, rows, d_in, d_out)
    if key not in _BMM_OK:
        g = torch.Generator().manual_seed(1234)
        x, w, b = (torch.randn(shape, generator=g).requires_grad_() for shape in
                   ((s, rows, d_in), (s, d_out, d_in), (s, d_out)))
        gy = torch.randn((s, rows, d_out), generator=g)
        with torch.enable_grad():
            ya, yb = _linear_bmm(x, w, b), _linear_loop(x, w, b)
            ga = torch.autograd.grad(ya, (x, w, b), gy)
            gb = torch.autograd.grad(yb, (x, w, b), gy)
        _BMM_OK[key] = bool(torch.equal(ya, yb) and all(torch.equal(p, q) for p, q in zip(ga, gb)))
    return _BMM_OK[key]


def slinear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-seed ``F.linear``: x [S, B, in], w [S, out, in], b [S, out] -> [S, B, out]."""
    if _bmm_matches(x.shape[0], x.shape[1], w.shape[2], w.shape[1]):
        return _linear_bmm(x, w, b)
    return _linear_loop(x, w, b)


class StackedParams:
    """The parameters of S copies of one module, stacked along a new leading axis, in ``named_parameters`` order
    (the order the single run's optimiser sees them in)."""

    def __init__(self, modules: list):
        self.names = [n for n, _ in modules[0].named_parameters()]
        per = [dict(m.named_parameters()) for m in modules]
        self.p = {n: torch.stack([d[n].detach() for d in per]).requires_grad_(True) for n in self.names}

    def list(self) -> list:
        return [self.p[n] for n in self.names]

    def copy_into(self, modules: list) -> None:
        with torch.no_grad():
            for s, m in enumerate(modules):
                for n, q in m.named_parameters():
                    q.copy_(self.p[n][s])


def sequential(seq: nn.Sequential, prefix: str) -> list:
    """The layer list of ``seq`` as (kind, parameter names, extra): linear, rms (RMSNorm), silu, tanh."""
    ops = []
    for i, m in enumerate(seq):
        if isinstance(m, nn.Linear):
            ops.append(("linear", (f"{prefix}.{i}.weight", f"{prefix}.{i}.bias"), None))
        elif isinstance(m, nn.RMSNorm):
            ops.append(("rms", (f"{prefix}.{i}.weight",), (tuple(m.normalized_shape), m.eps)))
        elif isinstance(m, nn.SiLU):
            ops.append(("silu", (), None))
        elif isinstance(m, nn.Tanh):
            ops.append(("tanh", (), None))
        else:
            raise TypeError(f"no stacked form for {type(m).__name__}")
    return ops


def forward(ops: list, p: dict, x: torch.Tensor, detach: bool = False) -> torch.Tensor:
    """Apply a stacked ``sequential`` to x [S, B, in] (``detach``: without gradients to the parameters)."""
    get = (lambda n: p[n].detach()) if detach else p.__getitem__
    for kind, names, extra in ops:
        if kind == "linear":
            x = slinear(x, get(names[0]), get(names[1]))
        elif kind == "rms":  # RMSNorm(x) = rms_norm(x) * weight, as torch composes it
            x = torch.rms_norm(x, extra[0], None, extra[1]) * get(names[0]).unsqueeze(1)
        elif kind == "silu":
            x = F.silu(x)
        else:
            x = torch.tanh(x)
    return x


class StackedAdam(Adam):
    """``networks.Adam`` for stacked parameters: the gradient norm and its clipping per seed (seed s's slices of the
    stacked gradients), the moment updates on the stacked tensors (the same elementwise operations and scalars)."""

    def __init__(self, params: list, lr: float, max_grad_norm: Optional[float]):
        super().__init__(params, lr=lr, max_grad_norm=max_grad_norm)

    def _clip(self, grads: list) -> tuple[list, Optional[float]]:
        for s in range(grads[0].shape[0]):
            gs = [g[s] for g in grads]
            factor, _ = self._clip_factor(gs)
            if factor is not None:
                torch._foreach_mul_(gs, factor)  # in place on seed s's slices
        return grads, None

class StackedNorm:
    """``RunningNorm`` for S runs at once: statistics [S, 1, dim], updated from x [S, B, dim] seed by seed."""

    def __init__(self, s: int, dim: int, eps: float = 1e-8, clip: float = 10.0):
        self.mean = torch.zeros(s, 1, dim)
        self.var = torch.ones(s, 1, dim)
        self.count = torch.zeros(s, 1, 1)
        self.eps, self.clip = eps, clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        n = x.shape[1]
        bmean, bvar = x.mean(1, keepdim=True), x.var(1, unbiased=False, keepdim=True)
        tot = self.count + n
        delta = bmean - self.mean
        self.mean += delta * n / tot
        self.var = (self.var * self.count + bvar * n + delta ** 2 * self.count * n / tot) / tot
        self.count = tot

    def __call__(self, x: torch.Tensor, update: bool = False) -> torch.Tensor:
        if update:
            self.update(x)
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)

    def module(self, s: int) -> RunningNorm:
        m = RunningNorm(self.mean.shape[-1], self.eps, self.clip)
        m.mean.copy_(self.mean[s, 0])
        m.var = self.var[s, 0].clone()
        m.count = self.count[s, 0, 0].clone()
        return m


class StackedPendulum:
    """S ``BatchedPendulum`` batches stepped as one ([S, N] states); each batch resets from its own generator."""

    def __init__(self, envs: list):
        self.envs = envs
        self.s, self.n = len(envs), envs[0].n_envs
        self.obs_dim, self.act_dim, self.max_episode_steps = envs[0].obs_dim, envs[0].act_dim, envs[0].max_episode_steps
        self.proto = envs[0]
        self.th = torch.zeros(self.s * self.n, dtype=torch.float64)
        self.thdot = torch.zeros_like(self.th)
        self.steps = torch.zeros(self.s * self.n, dtype=torch.long)

    def reseed(self) -> None:
        for e in self.envs:
            e.reseed()

    def reset(self) -> torch.Tensor:
        draws = [e._draw(e.n_envs) for e in self.envs]
        self.th = torch.cat([d[0] for d in draws])
        self.thdot = torch.cat([d[1] for d in draws])
        self.steps.zero_()
        return self.obs()

    def obs(self) -> torch.Tensor:
        o = torch.stack([torch.cos(self.th), torch.sin(self.th), self.thdot], dim=-1).float()
        return o.reshape(self.s, self.n, 3)

    def step(self, actions: torch.Tensor):
        u = actions.reshape(self.s * self.n, -1)[:, 0].float()
        self.th, self.thdot, costs = self.proto.dynamics(self.th, self.thdot, u)  # on all S x N pendulums
        self.steps += 1
        reward = (-costs).float().reshape(self.s, self.n)
        truncated = self.steps >= self.max_episode_steps
        terminated = torch.zeros(self.s, self.n, dtype=torch.bool)
        final_obs = self.obs()
        obs = final_obs
        if bool(truncated.any()):
            self.th, self.thdot = self.th.clone(), self.thdot.clone()
            for s, env in enumerate(self.envs):
                idx = truncated[s * self.n:(s + 1) * self.n].nonzero(as_tuple=True)[0]
                if len(idx):
                    th0, thdot0 = env._draw(len(idx))
                    self.th[s * self.n + idx], self.thdot[s * self.n + idx] = th0, thdot0
            self.steps[truncated] = 0
            obs = self.obs()
        return obs, reward, terminated, truncated.reshape(self.s, self.n), final_obs

    def scale_action(self, a: torch.Tensor) -> torch.Tensor:
        return self.proto.scale_action(a)


def _collect(env, obs, norm, n_steps, act_fn, next_fn, trackers):
    """``rollout.collect`` for S runs (each run's episodes go to its own tracker): tensors [S, n_steps, n_envs, ...]."""
    def track(rew, done):
        for s, tr in enumerate(trackers):
            tr(rew[s], done[s])

    data, obs = collect(env, obs, norm, n_steps, act_fn, next_fn, track)
    return {k: v.transpose(0, 1).contiguous() for k, v in data.items()}, obs


@torch.no_grad()
def _evaluate(policy_fn, norm, env, n_episodes: int) -> list:
    """``rollout.evaluate`` for S runs: one mean return per run."""
    env.reseed()
    obs = env.reset()
    total = torch.zeros(env.s, n_episodes)
    alive = torch.ones(env.s, n_episodes, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        act = policy_fn(norm(obs))
        obs, rew, term, trunc, _ = env.step(env.scale_action(act))
        total += torch.where(alive, rew, torch.zeros_like(total))
        alive &= ~(term | trunc)
        if not bool(alive.any()):
            break
    return [float(total[s].mean()) for s in range(env.s)]


def _randn(gens: list, shape: tuple, dim: int = 0) -> torch.Tensor:
    """One draw of ``shape`` from each run's generator, stacked along ``dim``."""
    return torch.stack([torch.randn(shape, generator=g) for g in gens], dim=dim)


def _shuffle(flat: dict, gens: list, n: int) -> dict:
    perms = torch.stack([torch.randperm(n, generator=g) for g in gens])
    rows = torch.arange(len(gens)).unsqueeze(1)
    return {k: v[rows, perms] for k, v in flat.items()}


def _pendulum_envs(env_name: str, n: int, seeds: list, offset: int = 0) -> StackedPendulum:
    return StackedPendulum([make_env(env_name, n, seed=offset + s) for s in seeds])


def _chunks(fn, seeds: list, **kw) -> list:
    out = []
    for i in range(0, len(seeds), MAX_STACK):
        out += fn(seeds[i:i + MAX_STACK], **kw)
    return out


# -- REPPO ---------------------------------------------------------------------------------------------------------
def _aligned(hp, eval_episodes: int) -> bool:
    """Whether every per-run batch (environments, evaluation episodes, minibatch) is a multiple of ``ALIGN``
    elements, so that stacking runs leaves each run's numbers on the same (vectorised) elementwise code path."""
    mb = hp.n_envs * hp.n_steps // hp.minibatches
    return all(k % ALIGN == 0 for k in (hp.n_envs, eval_episodes, mb))


def stackable_reppo(env_name: str, hp: ReppoHP, eval_episodes: int = 32) -> bool:
    return (env_name == "BatchedPendulum" and hp.kl_mode == "clipped" and hp.critic == "hlgauss"
            and hp.grad == "pathwise" and not hp.fixed_alpha and _aligned(hp, eval_episodes))


def stackable_ppo(env_name: str, hp: PpoHP, eval_episodes: int = 32) -> bool:
    return env_name == "BatchedPendulum" and _aligned(hp, eval_episodes)


def train_reppo_seeds(seeds, env_name: str = "BatchedPendulum", total_steps: int = 60_000, hp: ReppoHP = ReppoHP(),
                      eval_every: int = 10_000, eval_episodes: int = 32, keep_model_seed: Optional[int] = None,
                      threads: Optional[int] = 1, label: str = "REPPO") -> list:
    """``[train_reppo(seed=s, keep_model=(s == keep_model_seed), ...) for s in seeds]``, stacked."""
    seeds = [int(s) for s in seeds]
    if not stackable_reppo(env_name, hp, eval_episodes) or len(seeds) < 2:
        return [train_reppo(env_name, total_steps, hp, s, eval_every, eval_episodes, keep_model=s == keep_model_seed,
                            threads=threads, label=label) for s in seeds]
    with _threads(threads):
        return _chunks(_reppo_stack, seeds, env_name=env_name, total_steps=total_steps, hp=hp,
                       eval_every=eval_every, eval_episodes=eval_episodes, keep_model_seed=keep_model_seed,
                       label=label)


class _StackedReppo:
    """REPPO's networks and update (``reppo.Reppo``) for S runs."""

    def __init__(self, agents: list, hp: ReppoHP, gens: list, reward_scale: float):
        self.agents, self.hp, self.gens, self.reward_scale = agents, hp, gens, float(reward_scale)
        self.s, self.act_dim = len(agents), agents[0].act_dim
        self.actor = StackedParams([a.actor for a in agents])
        self.critic = StackedParams([a.critic for a in agents])
        self.old = {n: v.detach().clone() for n, v in self.actor.p.items()}
        self.a_net = sequential(agents[0].actor.net, "net")
        self.enc = sequential(agents[0].critic.encoder, "encoder")
        self.head = sequential(agents[0].critic.head, "head")
        self.pred = sequential(agents[0].critic.pred, "pred")
        self.centres = agents[0].critic.centres
        c = agents[0].critic
        self.vmin, self.vmax, self.n_bins = c.vmin, c.vmax, c.n_bins
        self.actor_opt = StackedAdam(self.actor.list(), hp.lr, hp.max_grad_norm)
        self.critic_opt = StackedAdam(self.critic.list(), hp.lr, hp.max_grad_norm)
        self.alpha_now = torch.stack([a.actor.alpha.detach() for a in agents]).unsqueeze(1)  # [S, 1]

    # networks
    def dist(self, obs, p=None):
        mean, log_std = forward(self.a_net, self.actor.p if p is None else p, obs).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def deterministic(self, obs):
        return torch.tanh(self.dist(obs)[0])

    def embed(self, obs, act, detach=False):
        return forward(self.enc, self.critic.p, torch.cat([obs, act], dim=-1), detach)

    def logits(self, h, detach=False):
        z = self.critic.p["zero_logits"]
        return forward(self.head, self.critic.p, h, detach) + (z.detach() if detach else z).unsqueeze(1)

    def decode(self, logits):
        return torch.softmax(logits, dim=-1) @ self.centres

    # rollout hooks
    def act(self, obs_n):
        mean, log_std = self.dist(obs_n)
        u = mean + log_std.exp() * _randn(self.gens, tuple(mean.shape[1:]))
        return torch.tanh(u), {}

    def next_step(self, fin_n, rew, term, trunc):
        mean, log_std = self.dist(fin_n)
        u = mean + log_std.exp() * _randn(self.gens, tuple(mean.shape[1:]))
        a2, logp2 = torch.tanh(u), TanhGaussianActor.log_prob_u(u, mean, log_std)
        h2 = self.embed(fin_n, a2)
        q2 = self.decode(self.logits(h2))
        soft = self.reward_scale * rew - self._gamma_alpha * logp2
        return dict(soft_rew=soft, next_q=q2, next_emb=h2)

    @property
    def _gamma_alpha(self):  # the single run's float(gamma * alpha_now), rounded to float32 as the scalar is
        return torch.tensor([[self.hp.gamma * a] for a in self.alpha_now[:, 0].tolist()])

    # losses
    def critic_loss(self, b):
        h = self.embed(b["obs"], b["act"])
        out = self.logits(h)
        target = hl_gauss_targets(b["target"], self.vmin, self.vmax, self.n_bins)
        vloss = -(target * torch.log_softmax(out, dim=-1)).sum(-1)
        aux = ((forward(self.pred, self.critic.p, h) - b["next_emb"]) ** 2).mean(-1) * (1 - b["term"])
        return (vloss + self.hp.aux_mult * aux).mean(-1), vloss.detach().mean(-1), aux.detach().mean(-1)

    def actor_loss(self, obs):
        hp, p = self.hp, self.actor.p
        alpha = p["log_alpha"].exp().detach().unsqueeze(1)
        mean, log_std = self.dist(obs)
        u = mean + log_std.exp() * _randn(self.gens, tuple(mean.shape[1:]))
        logp = TanhGaussianActor.log_prob_u(u, mean, log_std)
        q = self.decode(self.logits(self.embed(obs, torch.tanh(u), detach=True), detach=True))
        per, entropy = alpha * logp - q, -logp.detach()
        with torch.no_grad():
            om, ols = self.dist(obs, self.old)
            eps = _randn(self.gens, (hp.kl_samples,) + tuple(om.shape[1:]), dim=1)
            a_old = torch.tanh(om + ols.exp() * eps).clamp(-1 + 1e-6, 1 - 1e-6)
            lp_old = TanhGaussianActor.log_prob_a(a_old, om, ols)
        kl = (lp_old - TanhGaussianActor.log_prob_a(a_old, mean, log_std)).mean(0)
        beta = p["log_beta"].exp().unsqueeze(1)
        loss = torch.where(kl < hp.kl_bound, per, beta.detach() * kl).mean(-1, keepdim=True)
        loss = loss - beta * (kl.mean(-1, keepdim=True) - hp.kl_bound).detach()
        loss = loss + p["log_alpha"].exp().unsqueeze(1) * (hp.ent_target_mult * self.act_dim + entropy).mean(
            -1, keepdim=True)
        return loss[:, 0], kl.detach(), entropy

    def update(self, data: dict) -> list:
        hp = self.hp
        n = data["obs"].shape[1] * data["obs"].shape[2]
        flat = {k: v.reshape(self.s, n, *v.shape[3:]) for k, v in data.items()}
        mb = n // hp.minibatches
        sums = torch.zeros(self.s, 5)
        for _ in range(hp.epochs):
            shuffled = _shuffle(flat, self.gens, n)
            for j in range(hp.minibatches):
                b = {k: v[:, j * mb:(j + 1) * mb] for k, v in shuffled.items()}
                closs, vloss, aux = self.critic_loss(b)
                aloss, kl, entropy = self.actor_loss(b["obs"])
                self.critic_opt.zero_grad()
                self.actor_opt.zero_grad()
                (closs + aloss).sum().backward()
                self.critic_opt.step()
                self.actor_opt.step()
                sums += torch.stack([vloss, aux, kl.mean(-1), entropy.mean(-1),
                                     (kl >= hp.kl_bound).float().mean(-1)], dim=-1)
        self.old = {k: v.detach().clone() for k, v in self.actor.p.items()}
        self.alpha_now = self.actor.p["log_alpha"].detach().exp().unsqueeze(1)
        avg = (sums / (hp.epochs * hp.minibatches)).tolist()
        return [dict(zip(("critic_loss", "aux_loss", "kl", "entropy", "kl_violated"), a)) for a in avg]


def _reppo_stack(seeds, env_name, total_steps, hp, eval_every, eval_episodes, keep_model_seed, label):
    spec = env_spec(env_name)
    vmin = spec["vmin"] if hp.vmin is None else hp.vmin
    vmax = spec["vmax"] if hp.vmax is None else hp.vmax
    rscale = spec["reward_scale"] if hp.reward_scale is None else hp.reward_scale
    gens, agents = [], []
    for s in seeds:  # the single run's initialisation, seed by seed
        g = torch.Generator()
        g.manual_seed(s)
        torch.manual_seed(s)
        gens.append(g)
        agents.append(Reppo(spec["obs_dim"], spec["act_dim"], hp, vmin, vmax, g, rscale))
    S = len(seeds)
    env = _pendulum_envs(env_name, hp.n_envs, seeds)
    eval_env = _pendulum_envs(env_name, eval_episodes, seeds, offset=10_000)
    agent = _StackedReppo(agents, hp, gens, rscale)
    norm = StackedNorm(S, env.obs_dim)
    per_iter = hp.n_envs * hp.n_steps
    n_iters = math.ceil(total_steps / per_iter)
    trackers, clock = [EpisodeTracker(hp.n_envs) for _ in seeds], Clock()
    rows = [[dict(steps=0, ret=r, wall_s=0.0)] for r in _evaluate(agent.deterministic, norm, eval_env,
                                                                  eval_episodes)]
    obs = env.reset()
    next_eval, logs = eval_every, [{} for _ in seeds]
    tmin, tmax, storage = [math.inf] * S, [-math.inf] * S, [0] * S
    data = None
    for it in range(n_iters):
        clock.start()
        data, obs = _collect(env, obs, norm, hp.n_steps, agent.act, agent.next_step, trackers)
        with torch.no_grad():  # soft TD(λ) over the time axis, all runs and environments at once
            tr = [data[k].transpose(0, 1) for k in ("soft_rew", "term", "trunc", "next_q")]
            data["target"] = soft_td_lambda(*tr, hp.gamma, hp.lam).transpose(0, 1)
        for s in range(S):
            storage[s] = tensor_bytes({k: v[s] for k, v in data.items()})
            tmin[s] = min(tmin[s], float(data["target"][s].min()))
            tmax[s] = max(tmax[s], float(data["target"][s].max()))
        logs = agent.update(data)
        wall = clock.stop()
        steps = (it + 1) * per_iter
        if steps >= next_eval or it == n_iters - 1:
            for s, r in enumerate(_evaluate(agent.deterministic, norm, eval_env, eval_episodes)):
                rows[s].append(dict(steps=steps, ret=r, wall_s=wall))
            next_eval += eval_every
    agent.actor.copy_into([a.actor for a in agents])
    agent.critic.copy_into([a.critic for a in agents])
    out = []
    for s, seed in enumerate(seeds):
        a = agents[s]
        curve = pd.DataFrame(rows[s]).rename(columns={"ret": "return"})
        fin = trackers[s].finished
        diag = dict(target_min=tmin[s], target_max=tmax[s], alpha=float(a.actor.alpha.detach()),
                    beta=float(a.actor.beta.detach()), vmin=vmin, vmax=vmax, reward_scale=rscale,
                    train_episodes=len(fin), train_return_last=float(np.mean(fin[-hp.n_envs:])) if fin else math.nan,
                    **logs[s])
        model = None
        if seed == keep_model_seed:
            model = dict(actor=a.actor, critic=a.critic, norm=norm.module(s),
                         states=data["obs"][s].reshape(-1, env.obs_dim), hp=asdict(hp))
        out.append(RunResult(label, env_name, seed, curve, float(curve["return"].iloc[-1]), clock.total,
                             n_iters * per_iter, per_iter, storage[s], diag, model))
    return out


# -- PPO -----------------------------------------------------------------------------------------------------------
def train_ppo_seeds(seeds, env_name: str = "BatchedPendulum", total_steps: int = 60_000, hp: PpoHP = PpoHP(),
                    eval_every: int = 10_000, eval_episodes: int = 32, threads: Optional[int] = 1,
                    label: str = "PPO") -> list:
    """``[train_ppo(seed=s, ...) for s in seeds]``, stacked."""
    seeds = [int(s) for s in seeds]
    if not stackable_ppo(env_name, hp, eval_episodes) or len(seeds) < 2:
        return [train_ppo(env_name, total_steps, hp, s, eval_every, eval_episodes, threads=threads, label=label)
                for s in seeds]
    with _threads(threads):
        return _chunks(_ppo_stack, seeds, env_name=env_name, total_steps=total_steps, hp=hp,
                       eval_every=eval_every, eval_episodes=eval_episodes, label=label)


def _scalars(vals) -> torch.Tensor:
    """Per-run Python floats as a float32 column [S, 1] (as a scalar operand is rounded)."""
    return torch.tensor([[float(v)] for v in vals])


class _StackedValueNorm:
    """``ppo.ValueNorm`` for S runs (each keeps its own double-precision statistics)."""

    def __init__(self, s: int):
        from .ppo import ValueNorm

        self.norms = [ValueNorm() for _ in range(s)]

    def update(self, x):
        for s, v in enumerate(self.norms):
            v.update(x[s])

    def normalize(self, x):
        return torch.stack([(x[s] - v.mean) / math.sqrt(v.var + v.eps) for s, v in enumerate(self.norms)])

    def denormalize(self, x):
        sd = _scalars(math.sqrt(v.var + v.eps) for v in self.norms)
        m = _scalars(v.mean for v in self.norms)
        return x * sd.reshape(sd.shape + (1,) * (x.dim() - 2)) + m.reshape(m.shape + (1,) * (x.dim() - 2))


def _ppo_stack(seeds, env_name, total_steps, hp, eval_every, eval_episodes, label):
    spec = env_spec(env_name)
    gens, agents = [], []
    for s in seeds:
        g = torch.Generator()
        g.manual_seed(s + 7_919)
        torch.manual_seed(s + 7_919)
        gens.append(g)
        agents.append(PpoAgent(spec["obs_dim"], spec["act_dim"], hp))
    S = len(seeds)
    env = _pendulum_envs(env_name, hp.n_envs, seeds)
    P = StackedParams(agents)
    opt = StackedAdam(P.list(), hp.lr, hp.max_grad_norm)
    a_ops, v_ops = sequential(agents[0].actor_mean, "actor_mean"), sequential(agents[0].critic, "critic")
    norm = StackedNorm(S, env.obs_dim)
    rnorm = StackedNorm(S, 1) if hp.reward_norm else None
    ret_acc = torch.zeros(S, hp.n_envs)
    vnorm = _StackedValueNorm(S) if hp.value_norm else None
    rscale = spec["reward_scale"] if hp.reward_scale is None else hp.reward_scale
    eval_env = _pendulum_envs(env_name, eval_episodes, seeds, offset=10_000)

    def dist(obs):
        mean = forward(a_ops, P.p, obs)
        return mean, P.p["actor_logstd"].unsqueeze(1).expand_as(mean)

    def raw_value(obs_n):  # the critic's output (normalised units when value_norm)
        return forward(v_ops, P.p, obs_n).squeeze(-1)

    def value(obs_n):  # V(s) in (scaled) reward units
        v = raw_value(obs_n)
        return vnorm.denormalize(v) if vnorm is not None else v

    def deterministic(obs):
        return forward(a_ops, P.p, obs).clamp(-1, 1)

    def act(obs_n):
        mean, log_std = dist(obs_n)
        a = mean + log_std.exp() * _randn(gens, tuple(mean.shape[1:]))
        return a, dict(logp=gaussian_log_prob(a, mean, log_std), value=value(obs_n))

    def next_step(fin_n, rew, term, trunc):
        nonlocal ret_acc
        if rnorm is not None:  # RewardScaler, per run
            ret_acc = ret_acc * hp.gamma + rew
            rnorm.update(ret_acc.unsqueeze(-1))
            ret_acc = torch.where(term | trunc, torch.zeros_like(ret_acc), ret_acc)
            r = (rew / torch.sqrt(rnorm.var[:, :, 0] + 1e-8)).clamp(-hp.reward_clip, hp.reward_clip)
        else:
            r = rscale * rew
        boot = value(fin_n)
        return dict(rew_train=r + hp.gamma * boot * trunc.float())

    per_iter = hp.n_envs * hp.n_steps
    n_iters = math.ceil(total_steps / per_iter)
    trackers, clock = [EpisodeTracker(hp.n_envs) for _ in seeds], Clock()
    rows = [[dict(steps=0, ret=r, wall_s=0.0)] for r in _evaluate(deterministic, norm, eval_env, eval_episodes)]
    obs = env.reset()
    next_eval, storage, logs = eval_every, [0] * S, [{} for _ in seeds]
    for it in range(n_iters):
        clock.start()
        if hp.anneal_lr:
            opt.lr = hp.lr * (1.0 - it / n_iters)
        data, obs = _collect(env, obs, norm, hp.n_steps, act, next_step, trackers)
        with torch.no_grad():
            last_v = value(norm(obs))
            next_v = torch.cat([data["value"][:, 1:], last_v[:, None]], dim=1)
            done = torch.clamp(data["term"] + data["trunc"], max=1.0)
            tr = [t.transpose(0, 1) for t in (data["rew_train"], data["value"], next_v, done)]
            data["adv"] = gae(*tr, hp.gamma, hp.lam).transpose(0, 1)
            data["ret"] = data["adv"] + data["value"]
            if vnorm is not None:
                vnorm.update(data["ret"])
                data["ret"] = vnorm.normalize(data["ret"])
                data["value"] = vnorm.normalize(data["value"])
            ret_stats = [(float(data["ret"][s].mean()), float(data["ret"][s].std())) for s in range(S)]
        for s in range(S):
            storage[s] = tensor_bytes({k: v[s] for k, v in data.items()})
        logs = _ppo_update(dist, raw_value, opt, data, hp, gens)
        for s in range(S):
            logs[s].update(critic_target_mean=ret_stats[s][0], critic_target_sd=ret_stats[s][1])
        wall = clock.stop()
        steps = (it + 1) * per_iter
        if steps >= next_eval or it == n_iters - 1:
            for s, r in enumerate(_evaluate(deterministic, norm, eval_env, eval_episodes)):
                rows[s].append(dict(steps=steps, ret=r, wall_s=wall))
            next_eval += eval_every
    P.copy_into(agents)
    out = []
    for s, seed in enumerate(seeds):
        curve = pd.DataFrame(rows[s]).rename(columns={"ret": "return"})
        fin = trackers[s].finished
        diag = dict(train_episodes=len(fin), log_std=float(agents[s].actor_logstd.detach().mean()),
                    train_return_last=float(np.mean(fin[-hp.n_envs:])) if fin else math.nan, **logs[s])
        out.append(RunResult(label, env_name, seed, curve, float(curve["return"].iloc[-1]), clock.total,
                             n_iters * per_iter, per_iter, storage[s], diag))
    return out


def _ppo_update(dist, value, opt, data, hp: PpoHP, gens) -> list:
    S = len(gens)
    n = data["obs"].shape[1] * data["obs"].shape[2]
    flat = {k: v.reshape(S, n, *v.shape[3:]) for k, v in data.items()}
    mb = n // hp.minibatches
    sums = torch.zeros(S, 3)
    for _ in range(hp.epochs):
        shuffled = _shuffle(flat, gens, n)
        for j in range(hp.minibatches):
            b = {k: v[:, j * mb:(j + 1) * mb] for k, v in shuffled.items()}
            mean, log_std = dist(b["obs"])
            logp = gaussian_log_prob(b["act"], mean, log_std)
            adv = (b["adv"] - b["adv"].mean(-1, keepdim=True)) / (b["adv"].std(-1, keepdim=True) + 1e-8)
            ratio = torch.exp(logp - b["logp"])  # ppo_clip_loss, per run
            pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - hp.clip, 1 + hp.clip)).mean(-1)
            v, ret = value(b["obs"]), b["ret"]
            sq = (v - ret) ** 2
            if hp.value_clip is None:
                vloss = 0.5 * sq.mean(-1)
            else:
                v_clipped = b["value"] + (v - b["value"]).clamp(-hp.value_clip, hp.value_clip)
                vloss = 0.5 * torch.maximum(sq, (v_clipped - ret) ** 2).mean(-1)
            entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum(-1).mean(-1)
            loss = pg + hp.vf_coef * vloss - hp.ent_coef * entropy
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
            with torch.no_grad():
                frac = ((torch.exp(logp - b["logp"]) - 1).abs() > hp.clip).float().mean(-1)
            sums += torch.stack([pg.detach(), vloss.detach(), frac], dim=-1)
    avg = (sums / (hp.epochs * hp.minibatches)).tolist()
    return [dict(zip(("policy_loss", "value_loss", "clip_frac"), a)) for a in avg]


__all__ = ["train_reppo_seeds", "train_ppo_seeds", "stackable_reppo", "stackable_ppo", "StackedPendulum",
           "StackedAdam", "slinear", "MAX_STACK", "ALIGN"]
