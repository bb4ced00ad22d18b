"""MaskInversion: optimise one localized embedding token (LET) per mask so that its LeGrad map matches the mask.

    L(LET) = L_Dice(E(LET), m) + α (1 - cos(LET, z0)),
    L_Dice = 1 - (2 Σ E m + 1) / (Σ E + Σ m + 1)                       (soft Dice, smoothing 1)

AdamW (lr 0.1, weight decay 0) on the tokens only, K = 10 steps, LET initialised at the global embedding z0; the
CLIP stays frozen. All masks are optimised in one batch; Adam's update is elementwise, so each token follows its
own optimisation exactly as if it ran alone.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .legrad import DecomposedMaps, ImageState, attention_jacobian, naive_relevance, relevance_to_map


def dice_loss(E: torch.Tensor, m: torch.Tensor, smooth: float = 1.0) -> torch.Tensor:
    """Soft Dice loss per map: 1 - (2 Σ E m + s) / (Σ E + Σ m + s); ``E``, ``m`` [M, H, W] -> [M]."""
    E, m = E.reshape(len(E), -1), m.reshape(len(m), -1).to(E.dtype)
    return 1.0 - (2.0 * (E * m).sum(1) + smooth) / (E.sum(1) + m.sum(1) + smooth)


@dataclass
class InversionResult:
    let: torch.Tensor  # [M, d] final tokens (unnormalised)
    loss: np.ndarray  # [steps + 1, M] total loss at each step (before the update of that step)
    dice: np.ndarray  # [steps + 1, M] soft Dice coefficient 1 - L_Dice of the map at each step
    maps: dict = field(default_factory=dict)  # step -> [M, H, W] maps (the steps asked for in keep_maps)
    seconds: float = 0.0
    jacobian_seconds: float = 0.0


def mask_inversion(model, pixel_values: torch.Tensor, img_idx, masks, z0=None, alpha: float = 0.0, lr: float = 0.1,
                   steps: int = 10, decomposed: bool = True, keep_maps=(), state: ImageState = None,
                   J: torch.Tensor = None, patch_size: int = None) -> InversionResult:
    """MaskInversion for ``masks`` [M, H, W] (bool or float) on images ``pixel_values[img_idx]``.

    ``z0``: the global embeddings of the images [B, d] (computed when None); ``state``/``J``: an
    :class:`ImageState` and its Jacobians to reuse across calls on the same images (the decomposition computes J
    once per image; a second call with other masks on the same images reuses it)."""
    t0 = time.perf_counter()
    img_idx = torch.as_tensor(np.asarray(img_idx), dtype=torch.long)
    m = torch.as_tensor(np.asarray(masks), dtype=torch.float32)
    if state is None:
        state = ImageState(model, pixel_values)
    patch = patch_size or model.vision_model.config.patch_size
    if z0 is None:
        with torch.no_grad():
            z0 = model.visual_projection(model.vision_model(pixel_values=pixel_values).pooler_output)
    tj = time.perf_counter()
    if decomposed and J is None:
        J = attention_jacobian(state)
    tj = time.perf_counter() - tj
    dec = DecomposedMaps(J, img_idx) if decomposed else None
    z0m = z0[img_idx].detach()
    let = z0m.clone().requires_grad_(True)
    opt = torch.optim.AdamW([let], lr=lr, weight_decay=0.0)
    losses, dices, maps = [], [], {}
    out_size = tuple(m.shape[-2:])
    for t in range(steps + 1):
        with torch.enable_grad():
            if decomposed:
                R = dec(let)
            else:
                R = naive_relevance(state, img_idx, let, create_graph=True)
            E = relevance_to_map(R, state.grid, patch, out_size)
            dl = dice_loss(E, m)
            loss = dl + alpha * (1.0 - F.cosine_similarity(let, z0m, dim=-1)) if alpha else dl
        losses.append(loss.detach().numpy().copy())
        dices.append((1.0 - dl).detach().numpy().copy())
        if t in keep_maps:
            maps[t] = E.detach().clone()
        if t == steps:
            break
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
    return InversionResult(let.detach(), np.asarray(losses), np.asarray(dices), maps, time.perf_counter() - t0, tj)
