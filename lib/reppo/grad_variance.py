"""Variance of pathwise and score-function policy gradients on a frozen critic (the paper's motivation).

Both estimate ∇_θ J(θ) = ∇_θ E_s E_{a∼π_θ(·|s)} [Q̂(s, a)] for a fixed batch of states and a frozen Q̂:

* pathwise (reparameterised): (1/n) Σ_i ∇_θ Q̂(s, tanh(μ_θ(s) + σ_θ(s) ε_i)), ε_i ∼ N(0, I);
* score function (REINFORCE with a leave-one-out mean-Q baseline):
  (1/n) Σ_i ∇_θ log π_θ(a_i|s) (Q̂(s, a_i) − b_i), b_i = mean of the other n − 1 samples' Q̂.

Each estimator is drawn ``repeats`` times with fresh action noise; the spread is the trace of the covariance of the
gradient vector over the actor network's parameters (log α and log β excluded). Both are unbiased for the same
gradient, so their means should agree (reported as a cosine similarity).
"""
from __future__ import annotations

import pandas as pd
import torch

from lib.common import limit_threads

from .networks import Critic, TanhGaussianActor


def _param_list(actor: TanhGaussianActor) -> list[torch.Tensor]:
    return list(actor.net.parameters())


def pg_estimate(actor: TanhGaussianActor, critic: Critic, states: torch.Tensor, n_samples: int, estimator: str,
                generator: torch.Generator) -> torch.Tensor:
    """One draw of the policy-gradient estimate (flattened over the actor network's parameters)."""
    params = _param_list(actor)
    mean, log_std = actor.dist(states)
    eps = torch.randn((n_samples,) + tuple(mean.shape), generator=generator)
    u = mean + log_std.exp() * eps
    if estimator == "pathwise":
        obj = critic.q(states.expand(n_samples, *states.shape), torch.tanh(u)).mean()
    elif estimator == "score":
        if n_samples < 2:
            raise ValueError("the score-function estimator with a leave-one-out baseline needs n_samples >= 2")
        with torch.no_grad():
            q = critic.q(states.expand(n_samples, *states.shape), torch.tanh(u))
            adv = q - (q.sum(0, keepdim=True) - q) / (n_samples - 1)
        logp = actor.log_prob_u(u.detach(), mean, log_std)
        obj = (logp * adv).mean()
    else:
        raise ValueError(f"parameter 'estimator' got {estimator!r}; allowed: 'pathwise', 'score'")
    grads = torch.autograd.grad(obj, params)
    return torch.cat([g.reshape(-1) for g in grads])


def gradient_variance(actor: TanhGaussianActor, critic: Critic, states: torch.Tensor, sample_counts=(4, 16, 64),
                      repeats: int = 32, generator: torch.Generator | None = None) -> pd.DataFrame:
    """Rows (estimator, n_samples, trace_cov, mean_norm, cos_to_other): the spread of each estimator."""
    critic.requires_grad_(False)
    rows = []
    try:
        with limit_threads(1):  # tiny tensors: one thread is fastest and fair on a shared machine
            for n in sample_counts:
                draws = {}
                for est in ("pathwise", "score"):
                    g = torch.stack([pg_estimate(actor, critic, states, n, est, generator) for _ in range(repeats)])
                    draws[est] = g
                means = {k: v.mean(0) for k, v in draws.items()}
                cos = float(torch.nn.functional.cosine_similarity(means["pathwise"], means["score"], dim=0))
                for est, g in draws.items():
                    rows.append(dict(estimator=est, n_samples=int(n), trace_cov=float(g.var(0, unbiased=True).sum()),
                                     mean_norm=float(means[est].norm()), cos_means=cos, repeats=repeats,
                                     n_states=int(states.shape[0])))
    finally:
        critic.requires_grad_(True)
    return pd.DataFrame(rows)


def variance_ratio(table: pd.DataFrame, n_samples: int) -> float:
    """trace Cov(score) / trace Cov(pathwise) at ``n_samples`` actions per state."""
    t = table.set_index(["estimator", "n_samples"])["trace_cov"]
    return float(t[("score", n_samples)] / t[("pathwise", n_samples)])
