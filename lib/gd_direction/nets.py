"""Small networks for the paper's practical-optimiser experiment (Sec. 3.3) and the Edge-of-Stability discussion.

A network is trained as a function of one flat parameter vector ``theta`` (``torch.func.functional_call``), so that
the quantities of Theorem 1 are plain vector operations: the update ``dx_k = theta_{k+1} - theta_k``, the
Hessian-vector product ``H v`` (forward-over-reverse, ``torch.func.jvp`` of ``torch.func.grad``), the sharpness
``lambda_max(H)`` by power iteration on ``H v``, and, for small models, the full Hessian (``torch.func.hessian``).

Optimisers: full-batch GD, SGD with heavy-ball momentum and Adam (``lib.common.optim``, torch.optim's update rules).
Weight decay enters the objective itself, ``L(theta) + (wd/2)||theta||^2``, so the measured Hessian is the Hessian
of what GD minimises.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch
from torch import nn

OPTIMISERS = ("gd", "sgdm", "adam")
LOSSES = ("ce", "mse")


class BlockMean(nn.Module):
    """Average pooling to a ``k x k`` grid by a reshape (the input's height and width must be multiples of ``k``)."""

    def __init__(self, k: int = 2):
        super().__init__()
        self.k = k

    def forward(self, x):
        n, c, h, w = x.shape
        k = self.k
        return x.reshape(n, c, k, h // k, k, w // k).mean((3, 5))


def small_cnn(in_channels: int = 1, n_classes: int = 10, widths=(12, 24)) -> nn.Module:
    """Two 3x3 convolutions with ReLU (the first with stride 2), an average pool to 2 x 2 and a linear read-out:
    3706 parameters on 8x8 digits; the same module takes CIFAR's 3 x 32 x 32 images (3922 parameters)."""
    c1, c2 = widths
    return nn.Sequential(
        nn.Conv2d(in_channels, c1, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), BlockMean(2),
        nn.Flatten(), nn.Linear(4 * c2, n_classes),
    )


def small_mlp(d_in: int, width: int, d_out: int) -> nn.Module:
    """One tanh hidden layer."""
    return nn.Sequential(nn.Linear(d_in, width), nn.Tanh(), nn.Linear(width, d_out))


class FlatModel:
    """A module evaluated at a flat parameter vector; ``init`` draws torch's default initialisation from a generator.

    Every layer gets ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` weights and biases, the bounds of torch's default
    (kaiming-uniform with a = sqrt(5)) initialisation, drawn from ``generator`` so that one seed fixes the network.
    """

    def __init__(self, module: nn.Module, dtype=torch.float32):
        self.module = module.to(dtype)
        self.dtype = dtype
        self.names = [n for n, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        self.sizes = [int(p.numel()) for _, p in module.named_parameters()]
        self.n_params = sum(self.sizes)
        for p in self.module.parameters():
            p.requires_grad_(False)

    def init(self, generator: torch.Generator) -> torch.Tensor:
        parts = []
        fan_in = None
        for name, shape in zip(self.names, self.shapes):
            if name.endswith("weight"):
                fan_in = int(np.prod(shape[1:]))
            bound = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(shape, generator=generator, dtype=self.dtype) * 2 - 1).reshape(-1) * bound)
        return torch.cat(parts)

    def params(self, theta: torch.Tensor) -> dict:
        return {n: t.view(s) for n, t, s in zip(self.names, torch.split(theta, self.sizes), self.shapes)}

    def __call__(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(self.module, self.params(theta), (x,))


def make_objective(model: FlatModel, loss: str = "ce", wd: float = 0.0) -> Callable:
    """``objective(theta, x, y)``: mean cross-entropy (``y`` class indices) or ``0.5 * mean_i ||out_i - onehot_i||^2``
    (MSE), plus ``(wd/2)||theta||^2``."""
    if loss not in LOSSES:
        raise ValueError(f"loss got {loss!r}; allowed: {', '.join(map(repr, LOSSES))}")

    def objective(theta, x, y):
        out = model(theta, x)
        if loss == "ce":
            val = nn.functional.cross_entropy(out, y)
        else:
            target = nn.functional.one_hot(y, out.shape[-1]).to(out.dtype)
            val = 0.5 * ((out - target) ** 2).sum(-1).mean()
        if wd:
            val = val + 0.5 * wd * (theta * theta).sum()
        return val

    return objective


def hvp(objective: Callable, theta: torch.Tensor, v: torch.Tensor, x, y) -> torch.Tensor:
    """``H(theta) v`` by forward-over-reverse differentiation."""
    g = torch.func.grad(lambda t: objective(t, x, y))
    return torch.func.jvp(g, (theta,), (v,))[1]


def sharpness(objective: Callable, theta: torch.Tensor, x, y, *, iters: int = 20, v0: Optional[torch.Tensor] = None,
              generator: Optional[torch.Generator] = None) -> tuple[float, torch.Tensor]:
    """``lambda_max`` of the Hessian by ``iters`` power iterations on HVPs (warm-started from ``v0``); returns the
    Rayleigh quotient and the last vector (pass it back as ``v0`` next time)."""
    v = v0 if v0 is not None else torch.randn(theta.shape, generator=generator, dtype=theta.dtype)
    v = v / v.norm()
    lam = float("nan")
    for _ in range(iters):
        hv = hvp(objective, theta, v, x, y)
        lam = float(v @ hv)
        n = hv.norm()
        if not torch.isfinite(n) or n == 0:
            break
        v = hv / n
    return lam, v


def full_hessian(objective: Callable, theta: torch.Tensor, x, y) -> np.ndarray:
    """The full Hessian (small models only: ``n_params^2`` entries), symmetrised, as float64 numpy."""
    H = torch.func.hessian(lambda t: objective(t, x, y))(theta).detach().to(torch.float64).numpy()
    return 0.5 * (H + H.T)


@dataclass
class History:
    """What one training run logged: parameters, full-data loss and (optionally) sharpness at the logged points."""

    optimiser: str
    lr: float
    log_unit: str  # "step" (one full-batch GD step) or "epoch"
    thetas: np.ndarray  # (n_logs, n_params): theta at log 0 (the init), 1, 2, ...
    loss: np.ndarray  # full-data objective at each logged theta
    sharp_at: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int))  # log indices with a sharpness
    sharpness: np.ndarray = field(default_factory=lambda: np.empty(0))  # lambda_max at those logs
    lam_min: np.ndarray = field(default_factory=lambda: np.empty(0))  # lambda_min there (method "eigh" only)
    diverged: bool = False
    theta_final: Optional[torch.Tensor] = None


def _make_opt(opt: str, theta: torch.Tensor, lr: float, momentum: float):
    from lib.common.optim import SGD, Adam

    if opt in ("gd", "sgdm"):
        return SGD([theta], lr=lr, momentum=momentum if opt == "sgdm" else 0.0)
    return Adam([theta], lr=lr)


def train(model: FlatModel, X: torch.Tensor, Y: torch.Tensor, *, opt: str, lr: float, generator: torch.Generator,
          epochs: Optional[int] = None, steps: Optional[int] = None, batch: int = 128, loss: str = "ce",
          wd: float = 0.0, momentum: float = 0.9, sharpness_every: int = 0, sharpness_method: str = "power",
          power_iters: int = 20, theta0: Optional[torch.Tensor] = None) -> History:
    """Train from ``theta0`` (else a fresh init from ``generator``).

    ``opt="gd"``: ``steps`` full-batch steps, parameters logged after every step. ``"sgdm"``/``"adam"``: ``epochs``
    passes of shuffled mini-batches of ``batch`` (reshuffled from ``generator``), logged after every epoch.
    ``sharpness_every > 0`` records the sharpness every that many logs: ``sharpness_method="power"`` by
    ``power_iters`` warm-started power iterations on HVPs, ``"eigh"`` from the full Hessian (small models; it also
    records ``lambda_min``).
    """
    if sharpness_method not in ("power", "eigh"):
        raise ValueError(f"sharpness_method got {sharpness_method!r}; allowed: 'power', 'eigh'")
    if opt not in OPTIMISERS:
        raise ValueError(f"opt got {opt!r}; allowed: {', '.join(map(repr, OPTIMISERS))}")
    objective = make_objective(model, loss, wd)
    theta = (theta0.clone() if theta0 is not None else model.init(generator)).to(model.dtype).requires_grad_(True)
    optimiser = _make_opt(opt, theta, lr, momentum)
    n = X.shape[0]
    n_logs = steps if opt == "gd" else epochs
    if n_logs is None or n_logs < 1:
        raise ValueError(f"train: {'steps' if opt == 'gd' else 'epochs'} must be an integer >= 1")
    thetas = np.empty((n_logs + 1, model.n_params), dtype=np.float64)
    losses = np.empty(n_logs + 1)
    sharp_at, sharp, lam_min = [], [], []
    v = None

    def log(i, known_loss=False):
        nonlocal v
        with torch.no_grad():
            thetas[i] = theta.detach().to(torch.float64).numpy()
            if not known_loss:
                losses[i] = float(objective(theta.detach(), X, Y))
        if sharpness_every and i % sharpness_every == 0:
            if sharpness_method == "power":
                lam, v = sharpness(objective, theta.detach(), X, Y, iters=power_iters, v0=v, generator=generator)
            else:
                ev = np.linalg.eigvalsh(full_hessian(objective, theta.detach(), X, Y))
                lam = float(ev[-1])
                lam_min.append(float(ev[0]))
            sharp_at.append(i)
            sharp.append(lam)

    # full-batch GD evaluates the objective at theta_{i-1} in step i anyway: it is logged from there
    log(0, known_loss=opt == "gd")
    diverged = False
    for i in range(1, n_logs + 1):
        if opt == "gd":
            optimiser.zero_grad()
            val = objective(theta, X, Y)
            val.backward()
            losses[i - 1] = float(val.detach())
            optimiser.step()
        else:
            perm = torch.randperm(n, generator=generator)
            for j in range(0, n, batch):
                idx = perm[j:j + batch]
                optimiser.zero_grad()
                objective(theta, X[idx], Y[idx]).backward()
                optimiser.step()
        known = opt == "gd" and i < n_logs  # theta_i's loss comes with the next step's forward pass
        log(i, known_loss=known)
        check = losses[i - 1] if known else losses[i]
        if not np.isfinite(check) or check > 1e6 or not bool(torch.isfinite(theta.detach()).all()):
            diverged = True
            if known:
                with torch.no_grad():
                    losses[i] = float(objective(theta.detach(), X, Y))
            thetas, losses = thetas[: i + 1], losses[: i + 1]
            break
    return History(optimiser=opt, lr=float(lr), log_unit="step" if opt == "gd" else "epoch", thetas=thetas,
                   loss=losses, sharp_at=np.asarray(sharp_at, dtype=int), sharpness=np.asarray(sharp),
                   lam_min=np.asarray(lam_min),
                   diverged=diverged, theta_final=theta.detach().clone())
