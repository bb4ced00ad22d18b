"""Baselines that turn (image, mask) into an embedding with the same frozen CLIP.

- global: the image's projected CLS embedding z0, whatever the mask;
- masked crop (paper's "Masked Crop"): pixels outside the mask set to grey (the normalised 0), re-encoded; variant
  ``"inplace"`` keeps the object where it is, ``"crop"`` cuts the mask's box (plus a margin) and resizes it to the
  input size; the variant is chosen on a validation split;
- masked blur (FGVP-like visual prompting): outside the mask, a Gaussian blur of the image (σ on a validation grid);
- patch pooling (MaskCLIP-style, training-free): the last block's value path (v -> out_proj, no query/key mixing),
  patch tokens averaged with weights = share of each patch covered by the mask, then LN_post and the projection.
  Variant ``"value"`` (MaskCLIP: value path only) or ``"value_res"`` (residual + MLP kept), chosen on validation.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage


def global_embed(clip, pixel_values, img_idx) -> torch.Tensor:
    return clip.image_embeddings(pixel_values)[torch.as_tensor(img_idx)]


def _crop_resize(img: torch.Tensor, mask: np.ndarray, margin: float) -> torch.Tensor:
    ys, xs = np.nonzero(mask)
    S = img.shape[-1]
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    side = max(y1 - y0, x1 - x0) * (1 + 2 * margin)
    cy, cx = (y0 + y1) / 2, (x0 + x1) / 2
    half = max(side / 2, 2.0)
    a0, a1 = int(np.floor(cy - half)), int(np.ceil(cy + half))
    b0, b1 = int(np.floor(cx - half)), int(np.ceil(cx + half))
    pad = max(0, -a0, -b0, a1 - S, b1 - S)
    im = F.pad(img, (pad, pad, pad, pad)) if pad else img
    patch = im[:, a0 + pad:a1 + pad, b0 + pad:b1 + pad]
    return F.interpolate(patch[None], size=(S, S), mode="bilinear", align_corners=False)[0]


def masked_images(pixel_values, img_idx, masks, variant: str = "inplace", margin: float = 0.2) -> torch.Tensor:
    """The masked-crop inputs [M, 3, S, S]: outside the mask set to 0 (grey after normalisation)."""
    img_idx = np.asarray(img_idx)
    m = torch.as_tensor(np.asarray(masks), dtype=pixel_values.dtype)[:, None]
    out = pixel_values[torch.as_tensor(img_idx)] * m
    if variant == "crop":
        out = torch.stack([_crop_resize(out[k], np.asarray(masks[k]), margin) for k in range(len(out))])
    elif variant != "inplace":
        raise ValueError(f"masked crop variant {variant!r}; allowed: 'inplace', 'crop'")
    return out


def masked_crop_embed(clip, pixel_values, img_idx, masks, variant: str = "inplace") -> torch.Tensor:
    return clip.image_embeddings(masked_images(pixel_values, img_idx, masks, variant))


def blurred_images(pixel_values, img_idx, masks, sigma: float) -> torch.Tensor:
    """Outside the mask: the image blurred with a Gaussian of ``sigma`` px; inside: the image."""
    img_idx = np.asarray(img_idx)
    px = pixel_values.numpy()
    uniq = np.unique(img_idx)
    blurred = {int(i): ndimage.gaussian_filter(px[i], sigma=(0, sigma, sigma), mode="nearest") for i in uniq}
    m = np.asarray(masks, dtype=np.float32)[:, None]
    out = np.stack([px[i] * m[k] + blurred[int(i)] * (1 - m[k]) for k, i in enumerate(img_idx)])
    return torch.from_numpy(out.astype(np.float32))


def masked_blur_embed(clip, pixel_values, img_idx, masks, sigma: float) -> torch.Tensor:
    return clip.image_embeddings(blurred_images(pixel_values, img_idx, masks, sigma))


def patch_weights(masks, grid: int) -> torch.Tensor:
    """Share of each patch's pixels inside the mask: [M, grid*grid]."""
    m = torch.as_tensor(np.asarray(masks), dtype=torch.float32)[:, None]
    return F.adaptive_avg_pool2d(m, grid).flatten(1)


def patch_pool_embed(clip, pixel_values, img_idx, masks, variant: str = "value") -> torch.Tensor:
    """MaskCLIP-style dense features pooled inside the mask, projected like the CLS token."""
    from .legrad import last_block_input

    model = clip.model
    vm = model.vision_model
    layer = vm.encoder.layers[-1]
    with torch.no_grad():
        x = last_block_input(model, pixel_values)
        v = layer.self_attn.out_proj(layer.self_attn.v_proj(layer.layer_norm1(x)))
        if variant == "value":
            tok = v
        elif variant == "value_res":
            h = x + v
            tok = h + layer.mlp(layer.layer_norm2(h))
        else:
            raise ValueError(f"patch pooling variant {variant!r}; allowed: 'value', 'value_res'")
        tok = tok[:, 1:]  # patches
        w = patch_weights(masks, clip.grid)
        w = w / w.sum(1, keepdim=True).clamp_min(1e-8)
        pooled = torch.einsum("mp,mpd->md", w, tok[torch.as_tensor(np.asarray(img_idx))])
        return model.visual_projection(vm.post_layernorm(pooled))


def accuracy(emb: torch.Tensor, text_emb: torch.Tensor, target) -> float:
    """Acc@1 (in %) of cosine retrieval of ``target`` among the rows of ``text_emb``."""
    pred = (F.normalize(emb, dim=-1) @ text_emb.T).argmax(1).numpy()
    return float(100.0 * np.mean(pred == np.asarray(target))) if len(pred) else float("nan")


def predictions(emb: torch.Tensor, text_emb: torch.Tensor) -> np.ndarray:
    return (F.normalize(emb, dim=-1) @ text_emb.T).argmax(1).numpy()
