"""The model (an MLP trained on super-class labels), minibatch streams and two small optimizers.

All parameters of the MLP live in ONE flat vector ``model.theta``, so a gradient is one vector: the projection of
Stage 2 is plain vector algebra and the optimizers are a few tensor operations. (The optimizers are written here
rather than taken from ``torch.optim`` because constructing the first ``torch.optim`` optimizer imports
``torch._dynamo``, about 3 s of the quick mode's budget; their updates are the textbook Adam and heavy-ball SGD.)
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from lib.common import limit_threads


# Tiny MLP: with two threads on a shared 2-core machine the OpenMP synchronisation costs 10-50x more than the
# arithmetic, so every training/evaluation loop runs single-threaded.
one_thread = limit_threads(1)


class FlatMLP(nn.Module):
    """input -> hidden -> hidden -> n_classes with ReLU; every weight and bias is a slice of ``theta``."""

    def __init__(self, in_dim: int, n_classes: int, hidden: int = 128, generator: torch.Generator | None = None):
        super().__init__()
        self.shapes = [(hidden, in_dim), (hidden,), (hidden, hidden), (hidden,), (n_classes, hidden), (n_classes,)]
        chunks = []
        for k in range(0, len(self.shapes), 2):
            out_f, in_f = self.shapes[k]
            bound = 1.0 / math.sqrt(in_f)  # PyTorch's default nn.Linear initialisation
            chunks.append(torch.empty(out_f * in_f).uniform_(-bound, bound, generator=generator))
            chunks.append(torch.empty(out_f).uniform_(-bound, bound, generator=generator))
        self.theta = nn.Parameter(torch.cat(chunks))
        self.sizes = [math.prod(s) for s in self.shapes]

    @property
    def n_params(self) -> int:
        return int(self.theta.numel())

    def forward(self, x: torch.Tensor, theta: torch.Tensor | None = None) -> torch.Tensor:
        w1, b1, w2, b2, w3, b3 = (p.view(s) for p, s in zip(torch.split(self.theta if theta is None else theta,
                                                                           self.sizes), self.shapes))
        h = F.relu(torch.addmm(b1, x, w1.t()))
        h = F.relu(torch.addmm(b2, h, w2.t()))
        return torch.addmm(b3, h, w3.t())

    def copy(self) -> "FlatMLP":
        new = FlatMLP.__new__(FlatMLP)
        nn.Module.__init__(new)
        new.shapes, new.sizes = list(self.shapes), list(self.sizes)
        new.theta = nn.Parameter(self.theta.detach().clone())
        return new


def mlp(in_dim: int, n_classes: int, hidden: int = 128, generator: torch.Generator | None = None) -> FlatMLP:
    return FlatMLP(in_dim, n_classes, hidden, generator)


class Batches:
    """Endless minibatches of ``(x, y)``: reshuffled epochs drawn from ``generator``."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, generator: torch.Generator):
        if len(x) == 0:
            raise ValueError("Batches: empty data set")
        self.x, self.y, self.bs, self.g = x, y, min(int(batch_size), len(x)), generator
        self._order, self._pos = None, len(x)

    def __len__(self) -> int:  # batches per epoch
        return -(-len(self.x) // self.bs)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._pos >= len(self.x):
            self._order, self._pos = torch.randperm(len(self.x), generator=self.g), 0
        idx = self._order[self._pos:self._pos + self.bs]
        self._pos += self.bs
        return self.x[idx], self.y[idx]

    def epoch_cat(self, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """The first ``limit`` batches of a fresh shuffled epoch, concatenated: (x, y, batch sizes). Draws the same
        permutation as :meth:`epoch`, so a loop over ``epoch(limit)`` and one call here see the same batches."""
        order = torch.randperm(len(self.x), generator=self.g)
        n = len(self.x) if limit is None else min(len(self.x), limit * self.bs)
        sizes = [min(self.bs, n - k) for k in range(0, n, self.bs)]
        idx = order[:n]
        self._pos = len(self.x)
        return self.x[idx], self.y[idx], sizes

    def epoch(self, limit: int | None = None):
        """One pass (at most ``limit`` batches) in a fresh shuffled order."""
        self._pos = len(self.x)
        for k in range(len(self)):
            if limit is not None and k >= limit:
                break
            yield self.next()
        self._pos = len(self.x)


class Adam:
    """Adam (Kingma & Ba) on one flat parameter vector."""

    def __init__(self, theta: torch.Tensor, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.theta, self.lr, (self.b1, self.b2), self.eps = theta, float(lr), betas, eps
        self.m, self.v, self.t = torch.zeros_like(theta), torch.zeros_like(theta), 0

    @torch.no_grad()
    def step(self, grad: torch.Tensor, lr: float | None = None) -> None:
        self.t += 1
        self.m.mul_(self.b1).add_(grad, alpha=1 - self.b1)
        self.v.mul_(self.b2).addcmul_(grad, grad, value=1 - self.b2)
        step = (self.lr if lr is None else lr) / (1 - self.b1 ** self.t)
        denom = (self.v / (1 - self.b2 ** self.t)).sqrt_().add_(self.eps)
        self.theta.addcdiv_(self.m, denom, value=-step)


class SGD:
    """SGD with optional heavy-ball momentum (PyTorch's convention: buf = m buf + g; theta -= lr buf)."""

    def __init__(self, theta: torch.Tensor, lr: float, momentum: float = 0.0):
        self.theta, self.lr, self.momentum, self.buf = theta, float(lr), float(momentum), None

    @torch.no_grad()
    def step(self, grad: torch.Tensor, lr: float | None = None) -> None:
        if self.momentum:
            self.buf = grad.clone() if self.buf is None else self.buf.mul_(self.momentum).add_(grad)
            grad = self.buf
        self.theta.add_(grad, alpha=-(self.lr if lr is None else lr))


def grad_of(loss: torch.Tensor, model: FlatMLP) -> torch.Tensor:
    return torch.autograd.grad(loss, model.theta)[0]


@one_thread
def fit(model: FlatMLP, x: torch.Tensor, y: torch.Tensor, *, steps: int, lr: float, batch_size: int,
        generator: torch.Generator) -> FlatMLP:
    """Minimise the mean cross-entropy with Adam for ``steps`` minibatch steps (cosine learning-rate decay)."""
    opt = Adam(model.theta, lr)
    batches = Batches(x, y, batch_size, generator)
    for t in range(steps):
        xb, yb = batches.next()
        g = grad_of(F.cross_entropy(model(xb), yb), model)
        opt.step(g, lr=lr * 0.5 * (1 + math.cos(math.pi * t / max(steps, 1))))
    return model


@one_thread
def pretrain(ds, *, steps: int, lr: float = 2e-3, batch_size: int = 64, hidden: int = 128,
             generator: torch.Generator, retain_only: bool = False) -> FlatMLP:
    """Train an MLP on the super-class labels of ``ds.train`` (all of it; or D_r only: retraining from scratch)."""
    model = mlp(ds.in_dim, ds.n_classes, hidden, generator=generator)
    x, y = ds.train.retain() if retain_only else (ds.train.x, ds.train.y)
    return fit(model, x, y, steps=steps, lr=lr, batch_size=batch_size, generator=generator)
