"""Networks and normalisation shared by REPPO, PPO and SAC.

* ``RunningNorm``: running mean/variance of observations (Welford/Chan merge), applied to actor and critic inputs.
* ``RewardScaler``: divides rewards by the running std of the discounted return (PPO's usual reward scaling).
* ``mlp``: Linear → RMSNorm → SiLU blocks, a plain Linear output (REPPO's ``FCNN``); ``tanh_mlp`` for PPO.
* ``TanhGaussianActor``: π(a|s) = tanh(N(μ(s), σ(s))) with the tanh log-det correction, and REPPO's two learned
  multipliers log α (entropy temperature) and log β (KL Lagrange multiplier).
* ``Critic``: REPPO's Q network: encoder h(s, a), a categorical head over the HL-Gauss support (or a scalar head for
  the MSE ablation) and a self-prediction head ĥ' = pred(h(s, a)) for the auxiliary loss.

Every random draw takes an explicit ``torch.Generator``.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from .hlgauss import decode, hl_gauss_targets, support

LOG2 = math.log(2.0)
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class RunningNorm(nn.Module):
    """Observation normalisation (x − mean) / sqrt(var + eps) with running statistics over all seen batches."""

    def __init__(self, dim: int, eps: float = 1e-8, clip: float = 10.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(0.0))
        self.eps, self.clip = eps, clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1]).float()
        n = x.shape[0]
        bmean, bvar = x.mean(0), x.var(0, unbiased=False)
        tot = self.count + n
        delta = bmean - self.mean
        self.mean += delta * n / tot
        self.var = (self.var * self.count + bvar * n + delta ** 2 * self.count * n / tot) / tot
        self.count = tot

    def forward(self, x: torch.Tensor, update: bool = False) -> torch.Tensor:
        if update:
            self.update(x)
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)


class RewardScaler:
    """Scale rewards by 1/std of the running discounted return (as gymnasium's NormalizeReward)."""

    def __init__(self, n_envs: int, gamma: float, eps: float = 1e-8):
        self.ret = torch.zeros(n_envs)
        self.norm = RunningNorm(1)
        self.gamma, self.eps = gamma, eps

    def __call__(self, r: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        self.ret = self.ret * self.gamma + r
        self.norm.update(self.ret.unsqueeze(-1))
        self.ret = torch.where(done, torch.zeros_like(self.ret), self.ret)
        return r / torch.sqrt(self.norm.var[0] + self.eps)


def mlp(in_dim: int, out_dim: int, hidden: int, layers: int, norm: bool = True, input_act: bool = False):
    """``layers`` linear maps; the hidden ones followed by RMSNorm (if ``norm``) and SiLU (REPPO's FCNN)."""
    mods: list[nn.Module] = [nn.SiLU()] if input_act else []
    d = in_dim
    for _ in range(layers - 1):
        mods += [nn.Linear(d, hidden)] + ([nn.RMSNorm(hidden)] if norm else []) + [nn.SiLU()]
        d = hidden
    mods.append(nn.Linear(d, out_dim))
    return nn.Sequential(*mods)


def tanh_mlp(in_dim: int, out_dim: int, hidden: int, layers: int, out_gain: float = 1.0):
    """PPO's network (CleanRL): tanh activations, orthogonal init (√2 hidden, ``out_gain`` output)."""
    mods: list[nn.Module] = []
    d = in_dim
    for _ in range(layers - 1):
        lin = nn.Linear(d, hidden)
        nn.init.orthogonal_(lin.weight, math.sqrt(2))
        nn.init.zeros_(lin.bias)
        mods += [lin, nn.Tanh()]
        d = hidden
    out = nn.Linear(d, out_dim)
    nn.init.orthogonal_(out.weight, out_gain)
    nn.init.zeros_(out.bias)
    mods.append(out)
    return nn.Sequential(*mods)


def tanh_log_det(u: torch.Tensor) -> torch.Tensor:
    """log |d tanh(u)/du| = 2 (log 2 − u − softplus(−2u)), numerically stable."""
    return 2.0 * (LOG2 - u - nn.functional.softplus(-2.0 * u))


def gaussian_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    return (-0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


class TanhGaussianActor(nn.Module):
    """REPPO's policy: a = tanh(u), u ~ N(μ(s), σ(s)); learned log α and log β."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 64, layers: int = 3, ent_start: float = 0.01,
                 kl_start: float = 0.01, norm: bool = True):
        super().__init__()
        self.net = mlp(obs_dim, 2 * act_dim, hidden, layers, norm=norm)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(ent_start)))
        self.log_beta = nn.Parameter(torch.tensor(math.log(kl_start)))
        self.act_dim = act_dim

    def dist(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    @staticmethod
    def log_prob_u(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """log π(tanh(u)) for pre-tanh samples ``u`` (sums over action dimensions)."""
        return gaussian_log_prob(u, mean, log_std) - tanh_log_det(u).sum(-1)

    @classmethod
    def log_prob_a(cls, a: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, eps: float = 1e-6):
        """log π(a) for actions in (-1, 1) (clipped to ±(1 − eps) before atanh, as in the reference)."""
        u = torch.atanh(a.clamp(-1 + eps, 1 - eps))
        return cls.log_prob_u(u, mean, log_std)

    def rsample(self, obs: torch.Tensor, generator: Optional[torch.Generator], n: Optional[int] = None):
        """Reparameterised sample(s): returns (a, log π(a), mean, log_std); ``n`` adds a leading sample axis."""
        mean, log_std = self.dist(obs)
        shape = mean.shape if n is None else (n,) + tuple(mean.shape)
        eps = torch.randn(shape, generator=generator, device=mean.device)
        u = mean + log_std.exp() * eps
        return torch.tanh(u), self.log_prob_u(u, mean, log_std), mean, log_std

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dist(obs)[0])

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.exp()

    @property
    def beta(self) -> torch.Tensor:
        return self.log_beta.exp()


class Critic(nn.Module):
    """Q(s, a) with encoder h = enc([s, a]), value head, and self-prediction head pred(h).

    ``kind="hlgauss"``: the head gives ``n_bins`` logits plus a learnable offset initialised at
    40.9 · HLGauss(0) (so Q starts near 0, as in the reference); Q = softmax(logits) · centres.
    ``kind="mse"``: the head gives one number, Q = centre + half_range · head (so a unit output spans the support).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 64, n_bins: int = 101, vmin: float = -1650.0,
                 vmax: float = 0.0, kind: str = "hlgauss", enc_layers: int = 2, head_layers: int = 2,
                 pred_layers: int = 2, norm: bool = True):
        super().__init__()
        if kind not in ("hlgauss", "mse"):
            raise ValueError(f"parameter 'critic' got {kind!r}; allowed: 'hlgauss', 'mse'")
        self.kind, self.vmin, self.vmax, self.n_bins = kind, float(vmin), float(vmax), int(n_bins)
        self.encoder = mlp(obs_dim + act_dim, hidden, hidden, enc_layers, norm=norm)
        out = self.n_bins if kind == "hlgauss" else 1
        self.head = mlp(hidden, out, hidden, head_layers, norm=norm, input_act=True)
        self.pred = mlp(hidden, hidden, hidden, pred_layers, norm=norm, input_act=True)
        self.register_buffer("centres", support(vmin, vmax, self.n_bins))
        if kind == "hlgauss":
            self.zero_logits = nn.Parameter(40.9 * hl_gauss_targets(torch.zeros(()), vmin, vmax, self.n_bins))

    def embed(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """The encoder's embedding h(s, a)."""
        return self.encoder(torch.cat([obs, act], dim=-1))

    def value(self, h: torch.Tensor, need_q: bool = True):
        """(Q, head output) from an embedding; the head output is the logits (HL-Gauss) or the raw scalar (MSE)."""
        out = self.head(h)
        if self.kind == "hlgauss":
            out = out + self.zero_logits
            return (decode(out, self.centres) if need_q else None), out
        return 0.5 * (self.vmin + self.vmax) + 0.5 * (self.vmax - self.vmin) * out.squeeze(-1), out

    def q(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.value(self.embed(obs, act))[0]

    def forward(self, obs: torch.Tensor, act: torch.Tensor):
        """Returns (Q, head output, predicted next embedding, embedding)."""
        h = self.embed(obs, act)
        q, out = self.value(h)
        return q, out, self.pred(h), h

    def value_loss(self, out: torch.Tensor, q, y: torch.Tensor) -> torch.Tensor:
        """Per-sample critic loss: HL-Gauss cross-entropy, or squared error in units of the half range."""
        if self.kind == "hlgauss":
            target = hl_gauss_targets(y, self.vmin, self.vmax, self.n_bins)
            return -(target * torch.log_softmax(out, dim=-1)).sum(-1)
        scale = 0.5 * (self.vmax - self.vmin)
        return ((q - y) / scale) ** 2


class Adam:
    """Adam (Kingma & Ba) with torch.optim.Adam's defaults and update rule, plus grad-norm clipping.

    The suite's own few lines instead of ``torch.optim.Adam``: constructing a torch optimiser imports
    ``torch._dynamo`` (about 2.5 s, a twentieth of the quick-mode budget). A unit test checks that both give the
    same parameters step for step.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 max_grad_norm: Optional[float] = None):
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.b1, self.b2), self.eps, self.max_grad_norm = lr, betas, eps, max_grad_norm
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _clip_factor(self, grads: list) -> tuple[Optional[float], float]:
        """(the factor that clips the global norm of ``grads`` at ``max_grad_norm``, or None; the norm)."""
        norm = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
        if self.max_grad_norm is not None and norm > self.max_grad_norm:
            return self.max_grad_norm / (norm + 1e-6), norm
        return None, norm

    def _clip(self, grads: list) -> tuple[list, Optional[float]]:
        """Clip the global gradient norm at ``max_grad_norm``; returns (gradients, norm before clipping)."""
        factor, norm = self._clip_factor(grads)
        return (grads if factor is None else torch._foreach_mul(grads, factor)), norm

    @torch.no_grad()
    def step(self) -> float:
        """One update; returns the gradient norm before clipping."""
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        grads, norm = self._clip(grads)
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        torch._foreach_mul_(self.m, self.b1)
        torch._foreach_add_(self.m, grads, alpha=1 - self.b1)
        torch._foreach_mul_(self.v, self.b2)
        torch._foreach_addcmul_(self.v, grads, grads, value=1 - self.b2)
        denom = torch._foreach_div(self.v, c2)
        torch._foreach_sqrt_(denom)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(self.params, self.m, denom, value=-self.lr / c1)
        return norm


def flat_params(module: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])
