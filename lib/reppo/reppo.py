"""REPPO: on-policy soft Q learning with an HL-Gauss critic, pathwise policy updates under a KL trust region.

One iteration (as ``src/torchrl/reppo.py`` of the authors' code):

1. roll out ``n_envs × n_steps`` transitions with π; at every s' draw a' ~ π(·|s'), store Q(s', a'), the critic
   embedding h(s', a') and the soft reward r̃ = r − γ α log π(a'|s');
2. soft TD(λ) targets, backwards in time: y_t = r̃_t + γ [Q'_t if truncated_t else (1 − done_t)(λ y_{t+1} +
   (1 − λ) Q'_t)], with the last step of the rollout forced to bootstrap;
3. ``epochs`` passes over ``minibatches`` shuffled minibatches; each gets one critic step (HL-Gauss cross-entropy
   + aux_mult × self-prediction MSE) and one actor step (pathwise α log π(ã|s) − Q(s, ã) with ã = tanh(μ + σε),
   replaced by β·KL where the sampled KL(π_old‖π) exceeds ``kl_bound``; plus the temperature and KL-multiplier
   losses); π_old is the policy at the start of the iteration.

Ablations: ``kl_mode="none"`` (no trust region), ``critic="mse"``, ``aux_mult=0``, ``fixed_alpha=True``,
``grad="score"`` (score-function gradient through the same Q with a leave-one-out baseline over
``score_samples`` actions).
"""
from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np
import pandas as pd
import torch

from lib.common import limit_threads

from .envs import env_spec, make_env
from .networks import Adam, Critic, RunningNorm, TanhGaussianActor
from .rollout import Clock, EpisodeTracker, RunResult, collect, evaluate, tensor_bytes


@dataclass(frozen=True)
class ReppoHP:
    n_envs: int = 64
    n_steps: int = 32
    epochs: int = 4
    minibatches: int = 8
    gamma: float = 0.99
    lam: float = 0.95
    lr: float = 3e-4
    max_grad_norm: float = 0.5
    kl_bound: float = 0.1
    kl_mode: str = "clipped"  # "clipped" (REPPO) | "none" (ablation)
    kl_samples: int = 16
    ent_start: float = 0.01
    kl_start: float = 0.01
    ent_target_mult: float = 0.5  # target entropy −0.5 |A|
    fixed_alpha: bool = False
    aux_mult: float = 1.0
    critic: str = "hlgauss"  # "hlgauss" | "mse"
    grad: str = "pathwise"  # "pathwise" | "score"
    score_samples: int = 4
    n_bins: int = 101
    hidden: int = 64
    actor_layers: int = 3
    critic_layers: int = 2
    vmin: Optional[float] = None  # None: the environment's support (envs.env_spec), in scaled reward units
    vmax: Optional[float] = None
    reward_scale: Optional[float] = None  # None: the environment's (envs.env_spec); returns are reported unscaled


ABLATIONS = {
    "REPPO": {},
    "no KL bound": {"kl_mode": "none"},
    "MSE critic": {"critic": "mse"},
    "no aux loss": {"aux_mult": 0.0},
    "fixed α": {"fixed_alpha": True},
    "score-function Q": {"grad": "score"},
}


def soft_td_lambda(soft_rewards: torch.Tensor, dones: torch.Tensor, truncs: torch.Tensor, next_values: torch.Tensor,
                   gamma: float, lam: float) -> torch.Tensor:
    """Soft TD(λ) targets [T, N] (REPPO's ``compute_gve``); the last step is treated as truncated."""
    truncs = truncs.clone()
    truncs[-1] = 1.0
    out = torch.zeros_like(soft_rewards)
    nxt = torch.zeros_like(soft_rewards[0])
    for t in range(soft_rewards.shape[0] - 1, -1, -1):
        mix = lam * nxt + (1 - lam) * next_values[t]
        boot = torch.where(truncs[t].bool(), next_values[t], (1 - dones[t]) * mix)
        nxt = soft_rewards[t] + gamma * boot
        out[t] = nxt
    return out


class Reppo:
    """REPPO's networks, optimisers and update steps (the training loop is :func:`train_reppo`)."""

    def __init__(self, obs_dim: int, act_dim: int, hp: ReppoHP, vmin: float, vmax: float,
                 generator: torch.Generator, reward_scale: float = 1.0):
        self.hp, self.g, self.act_dim, self.reward_scale = hp, generator, act_dim, float(reward_scale)
        self.actor = TanhGaussianActor(obs_dim, act_dim, hp.hidden, hp.actor_layers, hp.ent_start, hp.kl_start)
        self.old_actor = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic = Critic(obs_dim, act_dim, hp.hidden, hp.n_bins, vmin, vmax, hp.critic,
                             hp.critic_layers, hp.critic_layers, hp.critic_layers)
        self.norm = RunningNorm(obs_dim)
        if hp.fixed_alpha:
            self.actor.log_alpha.requires_grad_(False)
        if hp.kl_mode == "none":
            self.actor.log_beta.requires_grad_(False)
        self.actor_opt = Adam(self.actor.parameters(), lr=hp.lr, max_grad_norm=hp.max_grad_norm)
        self.critic_opt = Adam(self.critic.parameters(), lr=hp.lr, max_grad_norm=hp.max_grad_norm)
        self.alpha_now = float(self.actor.alpha.detach())

    # -- rollout hooks ------------------------------------------------------------------------------------------
    def act(self, obs_n):
        a, _, _, _ = self.actor.rsample(obs_n, self.g)
        return a, {}

    def next_step(self, fin_n, rew, term, trunc):
        a2, logp2, _, _ = self.actor.rsample(fin_n, self.g)
        h2 = self.critic.embed(fin_n, a2)
        q2 = self.critic.value(h2)[0]
        soft = self.reward_scale * rew - self.hp.gamma * self.alpha_now * logp2
        return dict(soft_rew=soft, next_q=q2, next_emb=h2)

    # -- losses -------------------------------------------------------------------------------------------------
    def critic_loss(self, b: dict):
        """HL-Gauss cross-entropy (or MSE) to the soft TD(λ) target + aux_mult × self-prediction error."""
        h = self.critic.embed(b["obs"], b["act"])
        q, out = self.critic.value(h, need_q=self.critic.kind != "hlgauss")
        vloss = self.critic.value_loss(out, q, b["target"])
        aux = ((self.critic.pred(h) - b["next_emb"]) ** 2).mean(-1) * (1 - b["term"])
        return (vloss + self.hp.aux_mult * aux).mean(), vloss.detach().mean(), aux.detach().mean()

    def policy_objective(self, obs: torch.Tensor):
        """Per-state actor objective (to minimise) before the KL switch, and the entropy estimate.

        pathwise: α log π(ã|s) − Q(s, ã), ã = tanh(μ + σ ε), gradients flow through Q into ã;
        score: α log π(ã|s) − log π(ã_k|s) · (Q(s, ã_k) − mean of the other samples' Q), over ``score_samples``
        actions, the Q term without gradient (the entropy term stays pathwise, as in the reference).
        The critic's parameters must not require gradients here (the caller switches them off).
        """
        hp = self.hp
        alpha = self.actor.alpha.detach()
        mean, log_std = self.actor.dist(obs)
        if hp.grad == "pathwise":
            eps = torch.randn(mean.shape, generator=self.g)
            u = mean + log_std.exp() * eps
            logp = self.actor.log_prob_u(u, mean, log_std)
            q = self.critic.q(obs, torch.tanh(u))
            return alpha * logp - q, -logp.detach(), mean, log_std
        k = hp.score_samples
        eps = torch.randn((k,) + tuple(mean.shape), generator=self.g)
        u = mean + log_std.exp() * eps
        logp_path = self.actor.log_prob_u(u, mean, log_std)
        logp_score = self.actor.log_prob_u(u.detach(), mean, log_std)
        with torch.no_grad():
            q = self.critic.q(obs.expand(k, *obs.shape), torch.tanh(u))
            adv = q - (q.sum(0, keepdim=True) - q) / (k - 1)
        per = (alpha * logp_path - logp_score * adv).mean(0)
        return per, -logp_path.detach().mean(0), mean, log_std

    def actor_loss(self, obs: torch.Tensor):
        """Policy loss with the KL switch, plus the temperature and KL-multiplier losses."""
        hp = self.hp
        self.critic.requires_grad_(False)
        try:
            per, entropy, mean, log_std = self.policy_objective(obs)
        finally:
            self.critic.requires_grad_(True)
        with torch.no_grad():
            om, ols = self.old_actor.dist(obs)
            eps = torch.randn((hp.kl_samples,) + tuple(om.shape), generator=self.g)
            a_old = torch.tanh(om + ols.exp() * eps).clamp(-1 + 1e-6, 1 - 1e-6)
            lp_old = self.actor.log_prob_a(a_old, om, ols)
        kl = (lp_old - self.actor.log_prob_a(a_old, mean, log_std)).mean(0)
        if hp.kl_mode == "clipped":
            beta = self.actor.beta
            loss = torch.where(kl < hp.kl_bound, per, beta.detach() * kl).mean()
            loss = loss - beta * (kl.mean() - hp.kl_bound).detach()
        else:
            loss = per.mean()
        if not hp.fixed_alpha:
            loss = loss + self.actor.alpha * (hp.ent_target_mult * self.act_dim + entropy).mean()
        return loss, kl.detach(), entropy

    def update(self, data: dict) -> dict:
        """``epochs`` passes of ``minibatches`` critic + actor steps; then π_old ← π.

        The critic and actor losses of a minibatch share one backward pass (the actor's path through Q does not
        reach the critic's parameters), so the actor sees the critic from before this minibatch's critic step.
        """
        hp = self.hp
        n = data["obs"].shape[0] * data["obs"].shape[1]
        flat = {k: v.reshape(n, *v.shape[2:]) for k, v in data.items()}
        mb = n // hp.minibatches
        sums = torch.zeros(5)
        for _ in range(hp.epochs):
            perm = torch.randperm(n, generator=self.g)
            shuffled = {k: v[perm] for k, v in flat.items()}  # one gather per epoch; minibatches are views of it
            for j in range(hp.minibatches):
                b = {k: v[j * mb:(j + 1) * mb] for k, v in shuffled.items()}
                closs, vloss, aux = self.critic_loss(b)
                aloss, kl, entropy = self.actor_loss(b["obs"])
                self.critic_opt.zero_grad()
                self.actor_opt.zero_grad()
                (closs + aloss).backward()
                self.critic_opt.step()
                self.actor_opt.step()
                sums += torch.stack([vloss, aux, kl.mean(), entropy.mean(), (kl >= hp.kl_bound).float().mean()])
        self.old_actor.load_state_dict(self.actor.state_dict())
        self.alpha_now = float(self.actor.alpha.detach())
        avg = (sums / (hp.epochs * hp.minibatches)).tolist()
        return dict(zip(("critic_loss", "aux_loss", "kl", "entropy", "kl_violated"), avg))


def _threads(n: Optional[int]):
    """``limit_threads(n)`` for the training loops, or no limit when ``n`` is None/0."""
    return limit_threads(n) if n else contextlib.nullcontext()


def train_reppo(env_name: str = "BatchedPendulum", total_steps: int = 60_000, hp: ReppoHP = ReppoHP(), seed: int = 0,
                eval_every: int = 10_000, eval_episodes: int = 32, device: str = "cpu", keep_model: bool = False,
                threads: Optional[int] = 1, label: str = "REPPO") -> RunResult:
    """Train REPPO for ``total_steps`` environment steps (rounded up to whole rollouts); evaluate the
    deterministic policy tanh(μ) every ``eval_every`` steps on ``eval_episodes`` episodes."""
    with _threads(threads):
        spec = env_spec(env_name)
        vmin = spec["vmin"] if hp.vmin is None else hp.vmin
        vmax = spec["vmax"] if hp.vmax is None else hp.vmax
        rscale = spec["reward_scale"] if hp.reward_scale is None else hp.reward_scale
        g = torch.Generator()
        g.manual_seed(int(seed))
        torch.manual_seed(int(seed))  # network initialisation
        env = make_env(env_name, hp.n_envs, seed=seed, device=device)
        agent = Reppo(env.obs_dim, env.act_dim, hp, vmin, vmax, g, rscale)
        eval_env = make_env(env_name, eval_episodes, seed=10_000 + seed, device=device)
        policy = agent.actor.deterministic
        per_iter = hp.n_envs * hp.n_steps
        n_iters = math.ceil(total_steps / per_iter)
        tracker, clock = EpisodeTracker(hp.n_envs), Clock()
        rows = [dict(steps=0, ret=evaluate(policy, agent.norm, eval_env, eval_episodes), wall_s=0.0)]
        obs = env.reset()
        next_eval, logs, tmin, tmax = eval_every, {}, math.inf, -math.inf
        storage = 0
        for it in range(n_iters):
            clock.start()
            data, obs = collect(env, obs, agent.norm, hp.n_steps, agent.act, agent.next_step, tracker)
            with torch.no_grad():
                data["target"] = soft_td_lambda(data["soft_rew"], data["term"], data["trunc"], data["next_q"],
                                                hp.gamma, hp.lam)
            storage = tensor_bytes(data)
            tmin, tmax = min(tmin, float(data["target"].min())), max(tmax, float(data["target"].max()))
            logs = agent.update(data)
            wall = clock.stop()
            steps = (it + 1) * per_iter
            if steps >= next_eval or it == n_iters - 1:
                rows.append(dict(steps=steps, ret=evaluate(policy, agent.norm, eval_env, eval_episodes),
                                 wall_s=wall))
                next_eval += eval_every
        for e in (env, eval_env):
            if hasattr(e, "close"):
                e.close()
        curve = pd.DataFrame(rows).rename(columns={"ret": "return"})
        diag = dict(target_min=tmin, target_max=tmax, alpha=float(agent.actor.alpha.detach()), beta=float(agent.actor.beta.detach()),
                    vmin=vmin, vmax=vmax, reward_scale=rscale, train_episodes=len(tracker.finished),
                    train_return_last=float(np.mean(tracker.finished[-hp.n_envs:])) if tracker.finished else math.nan,
                    **{k: v for k, v in logs.items()})
        model = None
        if keep_model:
            model = dict(actor=agent.actor, critic=agent.critic, norm=agent.norm, states=data["obs"].reshape(
                -1, env.obs_dim), hp=asdict(hp))
        return RunResult(label, env_name, seed, curve, float(curve["return"].iloc[-1]), clock.total,
                         n_iters * per_iter, per_iter, storage, diag, model)
