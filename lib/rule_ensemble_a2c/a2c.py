"""A2C with three actors on one rollout code path: an MLP, a linear-softmax policy, and a rule ensemble (NSAC).

All actors share the critic (an MLP V_φ, 2 × 64 tanh), the vectorised rollout (``n_envs`` × ``n_steps``), the
advantage estimator and the evaluation protocol. The MLP and linear actors are torch modules trained by autograd on
−E[log π(a|s) Â] − β_H E[H]; the rule actor's weights take the closed-form gradient QᵀG/B of the same objective
(``rules.RuleEnsemble.grad``), and every ``rule_every`` updates the ensemble grows by one rule chosen by OGB or
plain GB on the last ``buffer_size`` transitions, followed by ``n_refit`` corrective steps on that buffer.
All optimisers are Adam (``lib.common.optim``) with the gradient norm clipped at ``max_grad_norm``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np
import pandas as pd
import torch
from torch import nn

from lib.common.optim import SGD, Adam

from .envs import VecEnv, evaluate
from .rules import RuleEnsemble, quantile_thresholds, search_rule

ACTORS = ("mlp", "linear", "rules")


@dataclass(frozen=True)
class A2CHP:
    """Hyperparameters (SB3's A2C defaults where the paper is silent; [G] marks the brief's guesses)."""

    n_envs: int = 8
    n_steps: int = 5
    gamma: float = 0.99
    gae_lambda: float = 1.0  # 1.0: n-step returns bootstrapped at the end of the rollout (SB3 A2C)
    actor_lr: float = 3e-3
    critic_lr: float = 1e-3
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    # rule actor [G]
    k_max: int = 20
    c_max: int = 3
    beam: int = 5
    n_quantiles: int = 10
    rule_every: int = 25  # A2C updates between rule searches
    buffer_size: int = 2048  # transitions the search sees
    warmup_steps: int = 2000  # environment steps before the first rule
    min_support: float = 0.01
    eps_scale: float = 1e-3  # ε = eps_scale · √B in the OGB objective
    n_refit: int = 5  # corrective full-buffer steps on all weights after a rule is added
    objective: str = "ogb"
    rule_optimizer: str = "adam"  # "adam" or "sgd" (plain gradient ascent) for the rule weights [G]


def gae(rew, values, next_values, term, trunc, gamma: float, lam: float) -> np.ndarray:
    """GAE(λ) advantages over a [T, N] rollout; λ = 1 gives n-step advantages (bootstrapped at the rollout's end).

    δ_t = r_t + γ (1 − term_t) V(s_{t+1}) − V(s_t);  Â_t = δ_t + γλ (1 − done_t) Â_{t+1}, done = term ∨ trunc.
    ``next_values[t]`` is V of the observation returned by step t: the true last observation when the episode ended
    there, so a truncated episode bootstraps through its time limit and a terminated one does not.
    """
    rew, values, next_values = (np.asarray(a, dtype=np.float64) for a in (rew, values, next_values))
    term, trunc = np.asarray(term, dtype=bool), np.asarray(trunc, dtype=bool)
    adv = np.zeros_like(rew)
    last = np.zeros(rew.shape[1:])
    for t in range(rew.shape[0] - 1, -1, -1):
        delta = rew[t] + gamma * (~term[t]) * next_values[t] - values[t]
        last = delta + gamma * lam * (~(term[t] | trunc[t])) * last
        adv[t] = last
    return adv


def mlp(n_in: int, n_out: int, hidden: int, out_gain: float) -> nn.Sequential:
    net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                        nn.Linear(hidden, n_out))
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
            nn.init.zeros_(m.bias)
    nn.init.orthogonal_(net[-1].weight, gain=out_gain)
    return net


class Critic:
    def __init__(self, n_in: int, hp: A2CHP):
        self.net = mlp(n_in, 1, hp.hidden, 1.0)
        self.opt = Adam(self.net.parameters(), lr=hp.critic_lr, max_grad_norm=hp.max_grad_norm)
        self.vf_coef = hp.vf_coef

    def values(self, X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.net(torch.as_tensor(X, dtype=torch.float32)).squeeze(-1).double().numpy()

    def update(self, X: np.ndarray, returns: np.ndarray) -> None:
        v = self.net(torch.as_tensor(X, dtype=torch.float32)).squeeze(-1)
        loss = self.vf_coef * ((torch.as_tensor(returns, dtype=torch.float32) - v) ** 2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def sample_actions(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(probs.shape[0])
    a = (np.cumsum(probs, axis=1) < u[:, None]).sum(axis=1)
    return np.minimum(a, probs.shape[1] - 1)


class TorchActor:
    """Softmax policy over an MLP (2 × 64 tanh) or a linear map of the features."""

    def __init__(self, kind: str, n_in: int, n_actions: int, hp: A2CHP):
        self.kind = kind
        self.net = mlp(n_in, n_actions, hp.hidden, 0.01) if kind == "mlp" else nn.Linear(n_in, n_actions)
        if kind == "linear":
            nn.init.zeros_(self.net.weight)
            nn.init.zeros_(self.net.bias)
        self.opt = Adam(self.net.parameters(), lr=hp.actor_lr, max_grad_norm=hp.max_grad_norm)
        self.ent_coef = hp.ent_coef

    def logits(self, X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.net(torch.as_tensor(X, dtype=torch.float32)).double().numpy()

    def probs(self, X: np.ndarray) -> np.ndarray:
        f = self.logits(X)
        e = np.exp(f - f.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def greedy(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.logits(X), axis=1)

    def update(self, X, actions, adv) -> None:
        logp = torch.log_softmax(self.net(torch.as_tensor(X, dtype=torch.float32)), dim=-1)
        a = torch.as_tensor(actions, dtype=torch.long)
        pg = -(logp.gather(1, a[:, None]).squeeze(1) * torch.as_tensor(adv, dtype=torch.float32)).mean()
        ent = -(logp.exp() * logp).sum(-1).mean()
        loss = pg - self.ent_coef * ent
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def n_params(self) -> int:
        return int(sum(p.numel() for p in self.net.parameters()))


class RuleActor:
    """NSAC's actor: a ``RuleEnsemble`` whose weights follow the closed-form policy gradient (Adam ascent)."""

    def __init__(self, n_in: int, n_actions: int, hp: A2CHP, rng: np.random.Generator):
        self.ens = RuleEnsemble(n_in, n_actions, k_max=hp.k_max, c_max=hp.c_max)
        self.hp = hp
        self._W = torch.zeros(hp.k_max, n_actions, dtype=torch.float64, requires_grad=True)
        self._b = torch.zeros(n_actions, dtype=torch.float64, requires_grad=True)
        self.ens.W, self.ens.b = self._W.detach().numpy(), self._b.detach().numpy()  # shared memory
        opt = {"adam": Adam, "sgd": SGD}[hp.rule_optimizer]
        self.opt = opt([self._W, self._b], lr=hp.actor_lr, max_grad_norm=hp.max_grad_norm)
        self.buf_X = np.zeros((hp.buffer_size, n_in))
        self.buf_a = np.zeros(hp.buffer_size, dtype=np.int64)
        self.buf_adv = np.zeros(hp.buffer_size)
        self.buf_n, self.buf_i = 0, 0
        self.searches: list = []

    def probs(self, X):
        f = self.ens.logits(X)
        e = np.exp(f - f.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def greedy(self, X):
        return self.ens.greedy(X)

    def _step(self, X, actions, adv) -> None:
        gW, gb, _ = self.ens.grad(X, actions, adv, self.hp.ent_coef)
        self._W.grad = torch.as_tensor(-gW)  # the optimiser minimises: ascend J
        self._b.grad = torch.as_tensor(-gb)
        self.opt.step()

    def update(self, X, actions, adv) -> None:
        self._step(X, actions, adv)
        n = len(actions)
        idx = (self.buf_i + np.arange(n)) % self.hp.buffer_size
        self.buf_X[idx], self.buf_a[idx], self.buf_adv[idx] = X, actions, adv
        self.buf_i = int((self.buf_i + n) % self.hp.buffer_size)
        self.buf_n = min(self.buf_n + n, self.hp.buffer_size)

    def ready_to_grow(self, env_steps: int) -> bool:
        return (self.ens.K < self.hp.k_max and env_steps >= self.hp.warmup_steps
                and self.buf_n >= self.hp.buffer_size // 2)

    def grow(self, env_steps: int) -> Optional[str]:
        """One OGB/GB search on the buffer, then ``n_refit`` corrective steps on all weights; returns the rule."""
        n = self.buf_n
        X, a, adv = self.buf_X[:n], self.buf_a[:n], self.buf_adv[:n]
        Q = self.ens.outputs(X)[:, :self.ens.K]
        _, _, G = self.ens.grad(X, a, adv, self.hp.ent_coef)
        res = search_rule(X, G, Q, quantile_thresholds(X, self.hp.n_quantiles), max_len=self.hp.c_max,
                          beam=self.hp.beam, objective=self.hp.objective,
                          eps=self.hp.eps_scale * np.sqrt(n), min_support=self.hp.min_support)
        if res is None:
            return None
        self.ens.add_rule(res.rule, None, step=env_steps)
        for _ in range(self.hp.n_refit):
            self._step(X, a, adv)
        self.searches.append(dict(steps=env_steps, K=self.ens.K, score=res.score, support=float(res.q.mean()),
                                  length=len(res.rule), candidates=res.n_candidates))
        return res.rule


@dataclass
class RunResult:
    algo: str
    env: str
    seed: int
    curve: pd.DataFrame  # steps, return, n_rules
    final_return: float  # mean greedy return over the last ``final_evals`` evaluations
    env_steps: int
    updates: int
    train_s: float
    actor: object = None
    critic: object = None
    k_curve: Optional[pd.DataFrame] = None  # rules actor: greedy return when the ensemble holds K rules
    hp: Optional[A2CHP] = None
    diagnostics: dict = field(default_factory=dict)

    @property
    def n_rules(self) -> int:
        return self.actor.ens.K if isinstance(self.actor, RuleActor) else 0

    def greedy(self, X):
        return self.actor.greedy(X)


class Rollout:
    """The vectorised rollout state: current observations, which envs were reset last step, episode returns."""

    def __init__(self, env: VecEnv):
        self.env = env
        self.obs = env.reset()
        self.prev_done = np.zeros(env.n_envs, dtype=bool)

    def collect(self, n_steps: int, probs_fn, rng: np.random.Generator) -> dict:
        N, d = self.env.n_envs, self.env.obs_dim
        X = np.zeros((n_steps + 1, N, d))
        A = np.zeros((n_steps, N), dtype=np.int64)
        R = np.zeros((n_steps, N))
        TE = np.zeros((n_steps, N), dtype=bool)
        TR = np.zeros((n_steps, N), dtype=bool)
        valid = np.zeros((n_steps, N), dtype=bool)
        P = np.zeros((n_steps, N))
        for t in range(n_steps):
            X[t] = self.obs
            probs = probs_fn(self.obs)
            a = sample_actions(probs, rng)
            A[t], P[t] = a, probs[np.arange(N), a]
            valid[t] = ~self.prev_done
            self.obs, R[t], TE[t], TR[t] = self.env.step(a)
            self.prev_done = TE[t] | TR[t]
        X[n_steps] = self.obs
        return dict(X=X, A=A, R=R, term=TE, trunc=TR, valid=valid, prob=P)


def final_of(curve: pd.DataFrame, k: int = 3) -> float:
    return float(curve["return"].iloc[-k:].mean())


def train_a2c(env_name: str, actor: str = "rules", hp: A2CHP = A2CHP(), total_steps: int = 50_000, seed: int = 0,
              n_evals: int = 20, eval_episodes: int = 10, eval_seed: Optional[int] = None, final_evals: int = 3,
              eval_at_k: tuple = ()) -> RunResult:
    """Train one A2C agent for ``total_steps`` environment steps and evaluate its greedy policy ``n_evals`` times.

    Evaluations play ``eval_episodes`` episodes from fixed start states (``eval_seed``, default seed + 7919,
    shared by all actors of a seed). For the rule actor, ``eval_at_k`` adds an evaluation just before the
    ensemble grows past each listed size K (after ``rule_every`` updates with K rules) and at the end.
    """
    if actor not in ACTORS:
        raise ValueError(f"parameter 'actor' got {actor!r}; allowed: " + ", ".join(map(repr, ACTORS)))
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    env = VecEnv(env_name, hp.n_envs, seed)
    eval_env = VecEnv(env_name, eval_episodes, seed + 7919 if eval_seed is None else eval_seed)
    d, nA = env.obs_dim, env.n_actions
    pol = RuleActor(d, nA, hp, rng) if actor == "rules" else TorchActor(actor, d, nA, hp)
    critic = Critic(d, hp)
    ro = Rollout(env)
    batch = hp.n_envs * hp.n_steps
    n_updates = max(total_steps // batch, 1)
    eval_at = set(np.linspace(0, n_updates, n_evals + 1).round().astype(int)[1:].tolist()) if n_evals else set()
    rows, krows, seen_k = [], [], set()
    t0, eval_s = time.perf_counter(), 0.0
    for u in range(1, n_updates + 1):
        roll = ro.collect(hp.n_steps, pol.probs, rng)
        V = critic.values(roll["X"].reshape(-1, d)).reshape(hp.n_steps + 1, hp.n_envs)
        adv = gae(roll["R"], V[:-1], V[1:], roll["term"], roll["trunc"], hp.gamma, hp.gae_lambda)
        m = roll["valid"].reshape(-1)
        Xb = roll["X"][:-1].reshape(-1, d)[m]
        ab, advb = roll["A"].reshape(-1)[m], adv.reshape(-1)[m]
        if len(ab):
            pol.update(Xb, ab, advb)
            critic.update(Xb, (advb + V[:-1].reshape(-1)[m]))
        steps = u * batch
        if actor == "rules" and u % hp.rule_every == 0 and pol.ready_to_grow(steps):
            K = pol.ens.K
            if K in eval_at_k and K not in seen_k:
                te = time.perf_counter()
                krows.append(dict(K=K, steps=steps, **{"return": float(evaluate(pol.greedy, eval_env).mean())}))
                seen_k.add(K)
                eval_s += time.perf_counter() - te
            pol.grow(steps)
        if u in eval_at:
            te = time.perf_counter()
            ret = float(evaluate(pol.greedy, eval_env).mean())
            eval_s += time.perf_counter() - te
            rows.append(dict(steps=steps, **{"return": ret}, n_rules=pol.ens.K if actor == "rules" else 0))
    if actor == "rules" and pol.ens.K in eval_at_k and pol.ens.K not in seen_k:
        krows.append(dict(K=pol.ens.K, steps=n_updates * batch, **{"return": rows[-1]["return"]}))
    curve = pd.DataFrame(rows)
    algo = {"mlp": "A2C-MLP", "linear": "A2C-linear", "rules": f"NSAC-{hp.objective.upper()}"}[actor]
    env.close()
    eval_env.close()
    diag = dict(searches=pd.DataFrame(pol.searches)) if actor == "rules" else dict(n_params=pol.n_params())
    return RunResult(algo=algo, env=env_name, seed=seed, curve=curve, final_return=final_of(curve, final_evals),
                     env_steps=n_updates * batch, updates=n_updates,
                     train_s=time.perf_counter() - t0 - eval_s, actor=pol, critic=critic,
                     k_curve=pd.DataFrame(krows) if actor == "rules" else None, hp=hp, diagnostics=diag)


def with_lr(hp: A2CHP, lr: float, **kw) -> A2CHP:
    return replace(hp, actor_lr=float(lr), **kw)
