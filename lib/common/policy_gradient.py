"""Policy-gradient pieces that several RL papers share (torch).

:func:`ppo_clip_loss` is PPO's clipped surrogate (Schulman et al., 2017), used by the REPPO notebook's PPO baseline
and the rule-ensemble actor-critic notebook's PPO reference.
"""
from __future__ import annotations

import torch


def ppo_clip_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor, clip: float) -> torch.Tensor:
    """The clipped surrogate to minimise: mean of max(−Â ρ, −Â clip(ρ, 1 − ε, 1 + ε)), ρ = exp(logp_new − logp_old)."""
    ratio = torch.exp(logp_new - logp_old)
    return torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()


__all__ = ["ppo_clip_loss"]
