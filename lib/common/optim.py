"""Adam, AdamW and SGD with torch.optim's update rules, without torch.optim's start-up cost.

Constructing the first ``torch.optim`` optimiser imports ``torch._dynamo``: measured 1.4-1.5 s on this suite's
2-core machines (``import torch`` itself 1.2-1.5 s), a twentieth of a quick run's budget, paid by every paper
that trains a small model and does not import ``transformers`` (which imports ``torch._dynamo`` anyway). These
classes update exactly as ``torch.optim.Adam`` / ``AdamW`` / ``SGD`` with their default flags (a unit test checks
it step for step) and use torch's multi-tensor ``_foreach`` kernels::

    opt = Adam(model.parameters(), lr=1e-3, max_grad_norm=1.0)
    for step in range(steps):
        opt.zero_grad()
        loss = ...
        loss.backward()
        opt.step()          # returns the gradient norm before clipping
        opt.lr = schedule(step)   # a learning-rate schedule is a plain attribute

Papers that import ``transformers`` may use ``torch.optim`` directly; the cost is paid already.
"""
from __future__ import annotations

from typing import Iterable, Optional

import torch


def _params(params: Iterable) -> list:
    out = [p for p in params if getattr(p, "requires_grad", False)]
    if not out:
        raise ValueError("optimizer got no parameters that require gradients")
    return out


class _Optimizer:
    def __init__(self, params, lr: float, max_grad_norm: Optional[float]):
        if not (isinstance(lr, (int, float)) and lr >= 0):
            raise ValueError(f"optimizer: lr got {lr!r}; allowed: a number >= 0")
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"optimizer: max_grad_norm got {max_grad_norm!r}; allowed: None or a number > 0")
        self.params = _params(params)
        self.lr = float(lr)
        self.max_grad_norm = max_grad_norm
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _grads(self) -> tuple[list, float]:
        """The gradients (zeros where a parameter got none), clipped to ``max_grad_norm``; and their norm before."""
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        norm = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
        if self.max_grad_norm is not None and norm > self.max_grad_norm:
            # the same factor as torch.nn.utils.clip_grad_norm_
            grads = torch._foreach_mul(grads, self.max_grad_norm / (norm + 1e-6))
        return grads, norm


class Adam(_Optimizer):
    """``torch.optim.Adam`` (L2 ``weight_decay`` added to the gradient, no amsgrad), plus optional grad-norm clipping."""

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 max_grad_norm: Optional[float] = None):
        super().__init__(params, lr, max_grad_norm)
        (self.b1, self.b2), self.eps, self.weight_decay = betas, float(eps), float(weight_decay)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self) -> float:
        """One update; returns the gradient norm before clipping."""
        grads, norm = self._grads()
        if self.weight_decay:
            if self.decoupled:
                torch._foreach_mul_(self.params, 1 - self.lr * self.weight_decay)
            else:
                grads = torch._foreach_add(grads, self.params, alpha=self.weight_decay)
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        torch._foreach_mul_(self.m, self.b1)
        torch._foreach_add_(self.m, grads, alpha=1 - self.b1)
        torch._foreach_mul_(self.v, self.b2)
        torch._foreach_addcmul_(self.v, grads, grads, value=1 - self.b2)
        denom = torch._foreach_sqrt(self.v)
        torch._foreach_div_(denom, c2 ** 0.5)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(self.params, self.m, denom, value=-self.lr / c1)
        return norm


class AdamW(Adam):
    """``torch.optim.AdamW``: decoupled weight decay (default 1e-2, as torch's)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 max_grad_norm: Optional[float] = None):
        super().__init__(params, lr, betas, eps, weight_decay, max_grad_norm)


class SGD(_Optimizer):
    """``torch.optim.SGD`` (momentum with dampening 0, optional Nesterov, L2 weight decay), plus grad-norm clipping."""

    def __init__(self, params, lr: float = 1e-2, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, max_grad_norm: Optional[float] = None):
        super().__init__(params, lr, max_grad_norm)
        if nesterov and momentum <= 0:
            raise ValueError("SGD: nesterov needs momentum > 0")
        self.momentum, self.weight_decay, self.nesterov = float(momentum), float(weight_decay), bool(nesterov)
        self.buf: Optional[list] = None

    @torch.no_grad()
    def step(self) -> float:
        grads, norm = self._grads()
        if self.weight_decay:
            grads = torch._foreach_add(grads, self.params, alpha=self.weight_decay)
        if self.momentum:
            if self.buf is None:
                self.buf = [g.clone() for g in grads]
            else:
                torch._foreach_mul_(self.buf, self.momentum)
                torch._foreach_add_(self.buf, grads)
            grads = torch._foreach_add(grads, self.buf, alpha=self.momentum) if self.nesterov else self.buf
        self.t += 1
        torch._foreach_add_(self.params, grads, alpha=-self.lr)
        return norm
