"""SipIt (paper Alg. 1): exact prompt recovery from hidden states, with the random (Alg. 2) and gradient
(Alg. 3) policies, and the HardPrompts (PEZ-style) baseline.

Given the observed layer-ℓ states Ĥ = (ĥ_1, …, ĥ_T) of an unknown prompt s, SipIt recovers s one position at
a time: with the prefix π = ŝ_{<t} already recovered, it proposes candidate tokens v and *verifies* each one,
accepting v when ‖ĥ_t − F(v; π, t)‖₂ ≤ ε, where F(v; π, t) = h_t(π ⊕ v) is the one-step map. Injectivity of
F in v (almost sure, Thm 2.2 applied to prompts that differ only at position t) makes the accepted token
the true one, and at most |V| verifier calls are needed per position (Thm 3.1).

The policies only decide the *order* of proposals:

- random (``policy="random"``, = BruteForce): a uniformly random permutation of V;
- gradient (``policy="gradient"``): a continuous proxy e ∈ R^d is moved by gradient descent on
  ½‖F(e; π, t) − ĥ_t‖² (F evaluated with e in place of the token embedding), and the untried tokens are
  proposed by distance ‖E_v − e‖; every ``project_every`` proposals e is projected onto its nearest token
  embedding. Each gradient step verifies the ``batch_verify`` best untried candidates in one batched call.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np
import torch

from lib.common.optim import AdamW

from .states import (PrefixCache, embedding_matrix, model_dtype, one_step_from_embedding, one_step_states,
                     sequence_states)

POLICIES = ("gradient", "random")


def default_eps(h: torch.Tensor) -> float:
    """Verifier radius ε for an observed state h: 1e-5·(1+‖h‖) in float32, 1e-10·(1+‖h‖) in float64.

    Well above the rounding difference between a cached one-step forward and a full forward (~1e-6
    relative in float32) and far below the distance between different candidates (the collision tests).
    """
    rel = 1e-10 if h.dtype == torch.float64 else 1e-5
    return rel * (1.0 + float(torch.linalg.vector_norm(h.to(torch.float64))))


UPDATES = ("gd", "gauss-newton")


def sipit_invert(
    model,
    H_obs: torch.Tensor,
    layer: int,
    *,
    policy: str = "gradient",
    update: str = "gd",
    eps: Optional[float] = None,
    lr: float = 0.1,
    damping: float = 0.1,
    project_every: int = 50,
    batch_verify: int = 8,
    batch_growth: float = 1.0,
    brute_batch: int = 512,
    seed: int = 0,
) -> dict:
    """Recover the prompt whose layer-``layer`` states are ``H_obs`` (``[T, d]``).

    ``policy="random"``: BruteForce. ``policy="gradient"``: Alg. 3 with the update rule ``update``:

    - ``"gd"`` (the paper): e ← e − lr·g, g = ∇_e ½‖F(e; π, t) − ĥ_t‖²;
    - ``"gauss-newton"``: the same gradient g = Jᵀr preconditioned by the Gauss–Newton curvature,
      e ← e − (JᵀJ + λI)⁻¹ g with λ = ``damping``·mean(diag JᵀJ) (Levenberg–Marquardt); J, the d×d Jacobian of
      F at e, comes from forward differences in one batched forward (d one-token continuations).

    Each step verifies the ``batch_verify`` best untried tokens by distance to e (the batch grows by
    ``batch_growth`` after each unsuccessful step, which caps the number of steps per token); every
    ``project_every`` proposals e is projected onto its nearest token embedding.

    Returns ``tokens`` (list), ``calls`` (verifier calls per position), ``steps`` (policy updates per position),
    ``time`` (s), ``fallback`` (positions where no candidate verified and the nearest one was taken: none
    expected) and ``dist`` (accepted distance per position). For the random policy, ``calls`` counts the
    proposals a sequential run makes up to the accepted one (batches only speed it up); for the gradient
    policy every verified candidate counts.
    """
    if policy not in POLICIES:
        raise ValueError(f"parameter 'policy' got {policy!r}; allowed: one of {POLICIES}")
    if update not in UPDATES:
        raise ValueError(f"parameter 'update' got {update!r}; allowed: one of {UPDATES}")
    t0 = time.perf_counter()
    E = embedding_matrix(model).detach()
    V = E.shape[0]
    H_obs = H_obs.detach().to(model_dtype(model))
    rng = np.random.default_rng(seed)
    tokens, calls, steps, fallback, dists = [], [], [], [], []
    for t in range(H_obs.shape[0]):
        h = H_obs[t]
        tol = default_eps(h) if eps is None else float(eps)
        pc = PrefixCache(model, tokens)
        if policy == "random":
            v, n, k, d, fb = _random_position(model, tokens, h, layer, tol, pc, rng.permutation(V), brute_batch)
        else:
            v, n, k, d, fb = _gradient_position(model, tokens, h, layer, tol, pc, E, update, lr, damping,
                                                project_every, batch_verify, batch_growth)
        tokens.append(v)
        calls.append(n)
        steps.append(k)
        dists.append(d)
        if fb:
            fallback.append(t)
    return {"tokens": tokens, "calls": calls, "steps": steps, "time": time.perf_counter() - t0,
            "fallback": fallback, "dist": dists}


def _random_position(model, prefix, h, layer, tol, pc, order, batch):
    best_v, best_d = -1, float("inf")
    for s in range(0, len(order), batch):
        cand = torch.as_tensor(order[s:s + batch], dtype=torch.long)
        d = torch.linalg.vector_norm(one_step_states(model, prefix, cand, layer, prefix_cache=pc) - h, dim=1)
        ok = torch.nonzero(d <= tol).reshape(-1)
        if ok.numel():
            j = int(ok[0])  # the first verified proposal in the policy's order
            return int(cand[j]), s + j + 1, s // batch + 1, float(d[j]), False
        j = int(torch.argmin(d))
        if float(d[j]) < best_d:
            best_v, best_d = int(cand[j]), float(d[j])
    return best_v, len(order), -(-len(order) // batch), best_d, True


def _gd_step(model, pc, e, h, layer, lr):
    e = e.detach().requires_grad_(True)
    f = one_step_from_embedding(model, pc, e, layer)
    (g,) = torch.autograd.grad(0.5 * ((f - h) ** 2).sum(), e)
    return (e - lr * g).detach()


@torch.no_grad()
def _gauss_newton_step(model, pc, e, h, layer, damping):
    d = e.numel()
    fd = (1e-6 if e.dtype == torch.float64 else 1e-3) * max(1.0, float(torch.linalg.vector_norm(e)))
    X = torch.cat([e[None, :], e[None, :] + fd * torch.eye(d, dtype=e.dtype, device=e.device)])
    F = one_step_from_embedding(model, pc, X, layer)
    r = F[0] - h
    J = (F[1:] - F[0]).T / fd  # [d_out, d]
    g = J.T @ r  # the gradient of ½‖F(e) − ĥ‖²
    A = J.T @ J
    lam = damping * float(A.diagonal().mean()) + 1e-12
    delta = torch.linalg.solve(A + lam * torch.eye(d, dtype=e.dtype, device=e.device), g)
    return e - delta


def _gradient_position(model, prefix, h, layer, tol, pc, E, update, lr, damping, project_every, batch_verify,
                       batch_growth):
    V = E.shape[0]
    tried = torch.zeros(V, dtype=torch.bool, device=E.device)
    e = E.mean(0).clone()
    n, since_proj, k, batch = 0, 0, 0, float(batch_verify)
    best_v, best_d = -1, float("inf")
    while n < V:
        if update == "gd":
            e = _gd_step(model, pc, e, h, layer, lr)
        else:
            e = _gauss_newton_step(model, pc, e, h, layer, damping)
        k += 1
        de = torch.linalg.vector_norm(E - e, dim=1).masked_fill(tried, float("inf"))
        b = min(int(batch), V - n)
        cand = torch.topk(de, b, largest=False).indices
        d = torch.linalg.vector_norm(one_step_states(model, prefix, cand, layer, prefix_cache=pc) - h, dim=1)
        tried[cand] = True
        n += b
        since_proj += b
        j = int(torch.argmin(d))
        if float(d[j]) <= tol:
            return int(cand[j]), n, k, float(d[j]), False
        if float(d[j]) < best_d:
            best_v, best_d = int(cand[j]), float(d[j])
        batch *= batch_growth
        if project_every and since_proj >= project_every:
            e = E[torch.argmin(torch.linalg.vector_norm(E - e, dim=1))].clone()  # no gradient through this
            since_proj = 0
    return best_v, n, k, best_d, True


def hardprompts_invert(
    model,
    H_obs: torch.Tensor,
    layer: int,
    *,
    steps: int,
    lr: float = 0.1,
    weight_decay: float = 0.1,
    eps: Optional[float] = None,
    seed: int = 0,
) -> dict:
    """HardPrompts baseline (Wen et al. 2023, PEZ, adapted as in the paper's App. E.1).

    A continuous prompt P ∈ R^{T×d} is optimized for ``steps`` steps; each step projects P onto the nearest
    token embeddings, evaluates ½‖H_ℓ(proj P) − Ĥ‖² / T on the projected prompt and applies that gradient to
    P (straight-through), with PEZ's AdamW optimizer. Returns the projected prompt with the lowest loss
    (``tokens``), ``steps`` used, ``time`` and ``loss``; stops early once the projected prompt reproduces Ĥ.
    """
    t0 = time.perf_counter()
    E = embedding_matrix(model).detach()
    V = E.shape[0]
    H_obs = H_obs.detach().to(model_dtype(model))
    T = H_obs.shape[0]
    gen = torch.Generator().manual_seed(int(seed))
    P = E[torch.randint(0, V, (T,), generator=gen).to(E.device)].clone().requires_grad_(True)
    opt = AdamW([P], lr=lr, weight_decay=weight_decay)  # torch.optim.AdamW's update (lib.common.optim)
    tol = max(default_eps(h) for h in H_obs) if eps is None else float(eps)
    best_tokens, best_loss, used = None, float("inf"), 0
    for step in range(1, int(steps) + 1):
        with torch.no_grad():
            idx = torch.cdist(P.detach(), E).argmin(1)
        Pp = E[idx].clone().requires_grad_(True)
        H = model.base_model(inputs_embeds=Pp[None], output_hidden_states=True,
                             use_cache=False).hidden_states[layer][0]
        loss = 0.5 * ((H - H_obs) ** 2).sum() / T
        (g,) = torch.autograd.grad(loss, Pp)
        opt.zero_grad()
        P.grad = g
        opt.step()
        used = step
        lv = float(loss.detach())
        if lv < best_loss:
            best_loss, best_tokens = lv, idx.tolist()
        if float(torch.linalg.vector_norm(H.detach() - H_obs, dim=1).max()) <= tol:
            break
    return {"tokens": best_tokens, "steps": used, "time": time.perf_counter() - t0, "loss": best_loss}


def observe(model, prompt: Sequence[int], layer: int) -> torch.Tensor:
    """The observation SipIt inverts: all positions' states of ``prompt`` at ``layer`` (a plain forward)."""
    return sequence_states(model, prompt, layer)
