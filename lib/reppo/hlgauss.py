"""HL-Gauss: a scalar regression target as a categorical distribution over a fixed value support.

A target y is clamped to [v_min, v_max] and smeared by N(y, σ²), σ = ``sigma_ratio`` × bin width; bin i receives the
Gaussian mass between its edges (centres ± half a bin width), renormalised over the support. The critic is trained
by cross-entropy to these probabilities and decodes Q as the mean of softmax(logits) over the bin centres.
"""
from __future__ import annotations

import math

import torch


def support(vmin: float, vmax: float, n_bins: int, device=None) -> torch.Tensor:
    """Bin centres: ``n_bins`` equally spaced values from ``vmin`` to ``vmax``."""
    return torch.linspace(float(vmin), float(vmax), int(n_bins), device=device)


def hl_gauss_targets(y: torch.Tensor, vmin: float, vmax: float, n_bins: int, sigma_ratio: float = 0.75) -> torch.Tensor:
    """Probabilities of shape ``y.shape + (n_bins,)`` that sum to one; their mean over the centres is ≈ y."""
    width = (vmax - vmin) / (n_bins - 1)
    sigma = sigma_ratio * width
    edges = torch.linspace(vmin - width / 2, vmax + width / 2, n_bins + 1, device=y.device, dtype=y.dtype)
    yc = y.clamp(vmin, vmax).unsqueeze(-1)
    cdf = torch.erf((edges - yc) / (sigma * math.sqrt(2.0)))
    probs = cdf[..., 1:] - cdf[..., :-1]
    return probs / (cdf[..., -1:] - cdf[..., :1])


def decode(logits: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """Q = Σ_i softmax(logits)_i · centre_i."""
    return torch.softmax(logits, dim=-1) @ centres


def hl_gauss_loss(logits: torch.Tensor, y: torch.Tensor, vmin: float, vmax: float, sigma_ratio: float = 0.75):
    """Per-sample cross-entropy between the HL-Gauss target of ``y`` and softmax(``logits``)."""
    target = hl_gauss_targets(y, vmin, vmax, logits.shape[-1], sigma_ratio)
    return -(target * torch.log_softmax(logits, dim=-1)).sum(-1)
