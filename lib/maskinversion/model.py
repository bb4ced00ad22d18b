"""The CLIP models: a tiny ``transformers.CLIPModel`` (ViT vision tower with eager attention, word-level text tower)
trained here with InfoNCE on scene captions, its checkpoint, and the hub path for a user who is online.

:class:`Clip` bundles a model with what the methods need from it: a text encoder for prompts, the image size and
the pixel normalisation, so that every method (MaskInversion and the baselines) runs on the same frozen model.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F

from .scenes import PIXEL_MEAN, PIXEL_STD, WORDS

TINY_NAME = "tiny-clip-scenes"
MAX_LEN = 20


class WordTokenizer:
    """Word-level tokenizer: ``<bos> w1 ... wn <eos> <pad>...``; unknown words map to ``<unk>``."""

    def __init__(self, vocab=WORDS, max_len: int = MAX_LEN):
        self.vocab = tuple(vocab)
        self.index = {w: k for k, w in enumerate(self.vocab)}
        self.max_len = int(max_len)
        self.pad, self.bos, self.unk, self.eos = (self.index[t] for t in ("<pad>", "<bos>", "<unk>", "<eos>"))

    def encode(self, text: str) -> list:
        ids = [self.index.get(w, self.unk) for w in text.lower().replace(",", " ").split()]
        return [self.bos] + ids[: self.max_len - 2] + [self.eos]

    def __call__(self, texts) -> tuple:
        rows = [self.encode(t) for t in texts]
        L = max(len(r) for r in rows)
        ids = torch.full((len(rows), L), self.pad, dtype=torch.long)
        att = torch.zeros((len(rows), L), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            att[i, : len(r)] = 1
        return ids, att


ARCHS = {
    # name: vision (hidden, layers, heads), text (hidden, layers, heads), projection
    "small": {"v": (64, 2, 4), "t": (64, 2, 4), "proj": 64},
    "base": {"v": (96, 3, 4), "t": (64, 2, 4), "proj": 64},
    "large": {"v": (192, 6, 6), "t": (96, 2, 4), "proj": 96},
}


def make_tiny_clip(arch: str = "base", image_size: int = 32, patch_size: int = 4, seed: int = 0):
    """A randomly initialised tiny ``CLIPModel`` (eager attention) of one of :data:`ARCHS`."""
    from transformers import CLIPConfig, CLIPModel

    a = ARCHS[arch]
    (vh, vl, vn), (th, tl, tn) = a["v"], a["t"]
    tok = WordTokenizer()
    cfg = CLIPConfig(
        text_config=dict(vocab_size=len(tok.vocab), hidden_size=th, intermediate_size=4 * th, num_hidden_layers=tl,
                         num_attention_heads=tn, max_position_embeddings=MAX_LEN, pad_token_id=tok.pad,
                         bos_token_id=tok.bos, eos_token_id=tok.eos, projection_dim=a["proj"]),
        vision_config=dict(hidden_size=vh, intermediate_size=4 * vh, num_hidden_layers=vl, num_attention_heads=vn,
                           image_size=image_size, patch_size=patch_size, num_channels=3, projection_dim=a["proj"]),
        projection_dim=a["proj"])
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = CLIPModel(cfg)
    model.config._attn_implementation = "eager"
    model.vision_model.config._attn_implementation = "eager"
    model.text_model.config._attn_implementation = "eager"
    return model.eval()


@dataclass
class Clip:
    """A frozen CLIP and what the methods need: ``tokenize(texts) -> (ids, attention_mask)``, the input size, the
    patch size and the normalisation that maps a [0, 1] RGB image to the model's input."""

    model: object
    tokenize: Callable
    name: str
    image_size: int
    patch_size: int
    mean: tuple = (PIXEL_MEAN,) * 3
    std: tuple = (PIXEL_STD,) * 3
    info: dict = field(default_factory=dict)

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

    @torch.no_grad()
    def text_embeddings(self, texts) -> torch.Tensor:
        """Normalised text embeddings [n, d]."""
        ids, att = self.tokenize(list(texts))
        out = self.model.text_model(input_ids=ids, attention_mask=att)
        return F.normalize(self.model.text_projection(out.pooler_output), dim=-1)

    def image_embeddings(self, pixel_values: torch.Tensor, batch: int = 256) -> torch.Tensor:
        """Unnormalised projected CLS embeddings z0 [n, d] (no gradient)."""
        outs = []
        with torch.no_grad():
            for k in range(0, len(pixel_values), batch):
                vo = self.model.vision_model(pixel_values=pixel_values[k:k + batch])
                outs.append(self.model.visual_projection(vo.pooler_output))
        return torch.cat(outs) if outs else torch.zeros(0, self.model.config.projection_dim)

    def from_unit_rgb(self, rgb: torch.Tensor) -> torch.Tensor:
        """[n, 3, H, W] in [0, 1] -> model input (resized to the model's size, normalised)."""
        if rgb.shape[-1] != self.image_size or rgb.shape[-2] != self.image_size:
            rgb = F.interpolate(rgb, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False)
        mean = torch.tensor(self.mean, dtype=rgb.dtype).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=rgb.dtype).view(1, 3, 1, 1)
        return (rgb - mean) / std


def contrastive_loss(model, pixel_values, ids, att) -> torch.Tensor:
    """Symmetric InfoNCE of CLIP (learned temperature)."""
    vo = model.vision_model(pixel_values=pixel_values)
    img = F.normalize(model.visual_projection(vo.pooler_output), dim=-1)
    to = model.text_model(input_ids=ids, attention_mask=att)
    txt = F.normalize(model.text_projection(to.pooler_output), dim=-1)
    logits = model.logit_scale.exp().clamp(max=100.0) * img @ txt.T
    target = torch.arange(len(img))
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


def training_data(n: int, seed: int, image_size: int = 32, context_share: float = 0.2):
    """The training pool: plain scenes (a third of the 2-object ones with a relational caption) and context scenes."""
    from .scenes import make_context_scenes, make_scenes

    rng = np.random.default_rng([seed, 7])
    n_ctx = int(round(context_share * n))
    plain = make_scenes(n - n_ctx, rng, size=image_size, relational=0.35)
    ctx = make_context_scenes(n_ctx, rng, size=image_size)
    images = np.concatenate([plain.images, ctx.images])
    objects = plain.objects + ctx.objects
    return images, objects, plain.captions + ctx.captions


def train_clip(model, steps: int, seed: int, n_train: int = 20000, batch: int = 128, lr: float = 1e-3,
               warmup: int = 100, log_every: int = 100, verbose: bool = False) -> dict:
    """InfoNCE training of a tiny CLIP on generated scenes; captions re-drawn (random object order) every step.
    Returns ``{"losses": [...], "seconds": ...}``."""
    from .scenes import _list_caption

    images, objects, captions = training_data(n_train, seed, image_size=model.config.vision_config.image_size)
    images = torch.from_numpy(images)
    rng = np.random.default_rng([seed, 11])
    tok = WordTokenizer()
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: min(1.0, (t + 1) / warmup) * 0.5 * (1 + np.cos(np.pi * min(t, steps) / steps)))
    model.train()
    losses, t0 = [], time.perf_counter()
    for step in range(steps):
        idx = rng.choice(len(images), size=batch, replace=False)
        caps = []
        for i in idx:
            c = captions[i]
            caps.append(c if c.startswith("the ") else _list_caption([o["cls"] for o in objects[i]], rng))
        ids, att = tok(caps)
        loss = contrastive_loss(model, images[idx], ids, att)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if verbose and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:5d}  loss {np.mean(losses[-log_every:]):.3f}  {time.perf_counter() - t0:.0f} s",
                  flush=True)
    model.eval()
    return {"losses": losses, "seconds": time.perf_counter() - t0}


# ---- checkpoint -------------------------------------------------------------------------------------------------

def save_checkpoint(models: dict, file: Path, recipe: dict) -> dict:
    """Write ``{arch: model}`` as float16 arrays (``<arch>/<param>``) plus the recipe (JSON) into one ``.npz``."""
    arrays = {"_recipe": np.array(json.dumps(recipe, sort_keys=True))}
    for arch, m in models.items():
        for k, v in m.state_dict().items():
            if v.dtype.is_floating_point:
                arrays[f"{arch}/{k}"] = v.detach().cpu().numpy().astype(np.float16)
            else:
                arrays[f"{arch}/{k}"] = v.detach().cpu().numpy()
    file = Path(file)
    file.parent.mkdir(parents=True, exist_ok=True)
    with open(file, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    return {"file": file.name, "bytes": file.stat().st_size, "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}


def load_checkpoint(file: Path, arch: str = "base") -> tuple:
    """``(model, recipe)`` for one architecture stored in the checkpoint (float16 weights cast to float32)."""
    file = Path(file)
    if not file.exists():
        raise FileNotFoundError(f"{file} is missing; run `python -m lib.maskinversion.train_checkpoint` (a few "
                                f"minutes), or set pretrained = False to train the model here")
    with np.load(file, allow_pickle=False) as a:
        recipe = json.loads(str(a["_recipe"]))
        if arch not in recipe["archs"]:
            raise ValueError(f"{file.name} holds the architectures {recipe['archs']}, not {arch!r}")
        model = make_tiny_clip(arch, image_size=recipe["image_size"], patch_size=recipe["patch_size"])
        state = {k.split("/", 1)[1]: torch.from_numpy(a[k].astype(np.float32) if a[k].dtype == np.float16 else a[k])
                 for k in a.files if k.startswith(arch + "/")}
    model.load_state_dict(state)
    return model.eval(), recipe


def tiny_clip(model) -> Clip:
    vc = model.config.vision_config
    return Clip(model, WordTokenizer(), TINY_NAME, vc.image_size, vc.patch_size)


def load_hub_clip(model_name: str) -> Clip:
    """A hub CLIP by name (``openai/clip-vit-base-patch16``), only for a user who asks for it; offline and not
    cached, it fails at once with a clear error."""
    from transformers import CLIPModel, CLIPTokenizer

    try:
        model = CLIPModel.from_pretrained(model_name, attn_implementation="eager")
        hub_tok = CLIPTokenizer.from_pretrained(model_name)
    except Exception as exc:  # noqa: BLE001  (OSError offline, ValueError for a bad id, ...)
        raise RuntimeError(f"parameter 'model_name' = {model_name!r}: could not load it from the local Hugging Face "
                           f"cache ({type(exc).__name__}: {str(exc)[:200]}). The suite runs offline "
                           f"(HF_HUB_OFFLINE=1); download the model once while online, or use model_name = None "
                           f"for the tiny local CLIP") from exc

    def tokenize(texts):
        enc = hub_tok(list(texts), padding=True, return_tensors="pt")
        return enc["input_ids"], enc["attention_mask"]

    vc = model.config.vision_config
    return Clip(model.eval(), tokenize, model_name, vc.image_size, vc.patch_size,
                mean=(0.48145466, 0.4578275, 0.40821073), std=(0.26862954, 0.26130258, 0.27577711))
