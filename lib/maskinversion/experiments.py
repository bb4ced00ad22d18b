"""One function per figure; each returns plain results (DataFrames, dicts of arrays)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from lib.common import limit_threads

from . import baselines as bl
from .inversion import mask_inversion
from .legrad import ImageState, attention_jacobian, legrad_maps
from .scenes import CLASSES, box_masks, class_prompt, dilate, erode, make_context_scenes, make_scenes, random_masks


# ---- model and data ----------------------------------------------------------------------------------------------

@limit_threads(1)
def load_model(cfg):
    """The CLIP of the run: the shipped tiny checkpoint (quick), a tiny CLIP trained here (full, or
    ``pretrained=False``), or a hub CLIP (``model_name``)."""
    from .model import load_checkpoint, load_hub_clip, make_tiny_clip, tiny_clip, train_clip
    from .train_checkpoint import RECIPE, checkpoint_path

    if cfg.model_name:
        return load_hub_clip(cfg.model_name)
    if cfg.pretrained:
        model, recipe = load_checkpoint(checkpoint_path(), "base")
        clip = tiny_clip(model)
        clip.info = {"source": "checkpoint", "recipe": recipe}
        return clip
    return train_arch(cfg, "base")


def train_arch(cfg, arch: str):
    from .model import make_tiny_clip, tiny_clip, train_clip
    from .train_checkpoint import RECIPE

    seed = int(cfg.rng(f"train-{arch}").integers(2**31))
    model = make_tiny_clip(arch, image_size=RECIPE["image_size"], patch_size=RECIPE["patch_size"], seed=seed)
    log = train_clip(model, cfg.train_steps, seed, n_train=RECIPE["n_train"], batch=RECIPE["batch"], lr=RECIPE["lr"])
    clip = tiny_clip(model)
    clip.info = {"source": "trained here", "arch": arch, "steps": cfg.train_steps, "seconds": log["seconds"],
                 "final_loss": float(np.mean(log["losses"][-50:]))}
    return clip


@dataclass
class RegionData:
    """Regions for retrieval: images [B, 3, S, S] (model input), per region its image, class and mask."""

    pixel_values: torch.Tensor
    img_idx: np.ndarray
    cls: np.ndarray
    masks: np.ndarray
    class_names: tuple
    prompts: list
    source: str
    sizes: np.ndarray = None  # object width in px (box), for the size bins

    def __len__(self):
        return len(self.cls)


def scene_regions(scenes, source: str) -> RegionData:
    idx, cls, masks = scenes.masks()
    widths = np.array([o["box"][2] - o["box"][0] for objs in scenes.objects for o in objs])
    return RegionData(torch.from_numpy(scenes.images), idx, cls, masks, CLASSES,
                      [class_prompt(k) for k in range(len(CLASSES))], source, widths)


def voc_regions(clip, path, max_images: int = None) -> RegionData:
    """PASCAL VOC regions resized to the model's input (masks by nearest neighbour)."""
    import torch.nn.functional as F

    from .voc import read_voc

    r = read_voc(path, max_images=max_images)
    S = clip.image_size
    px = torch.cat([clip.from_unit_rgb(torch.from_numpy(im.transpose(2, 0, 1).copy())[None]) for im in r.images])
    masks = np.stack([F.interpolate(torch.from_numpy(m[None, None].astype(np.float32)), size=(S, S),
                                    mode="nearest")[0, 0].numpy() > 0.5 for m in r.masks])
    keep = masks.reshape(len(masks), -1).any(1)
    return RegionData(px, r.img_idx[keep], r.cls[keep], masks[keep], r.class_names,
                      [f"a photo of a {c}" for c in r.class_names], f"VOC ({path})", None)


def make_data(cfg, clip):
    """Test regions (generated scenes, or VOC from ``data_path``), the validation regions that tune the baselines
    (a separate stream of scenes), and the context scenes of the referring task."""
    S = clip.image_size if not cfg.model_name else 32
    test = scene_regions(make_scenes(cfg.n_test, cfg.rng("test"), size=S), "generated scenes")
    val = scene_regions(make_scenes(cfg.n_val, cfg.rng("val"), size=S), "generated scenes (validation)")
    if cfg.data_path is not None:
        test = voc_regions(clip, cfg.data_path, max_images=cfg.max_images)
        val = test  # no separate split is read: baselines are then tuned on the evaluated regions (stated)
    ctx = make_context_scenes(cfg.n_context, cfg.rng("context"), size=S)
    return test, val, ctx


# ---- Figure 1: region retrieval --------------------------------------------------------------------------------

@dataclass
class Region:
    table: pd.DataFrame  # one row per method: acc, acc by size bin, n
    per_mask: pd.DataFrame  # one row per mask: class, size, predictions per method
    tuned: dict  # the baselines' validation choices and their validation accuracies
    inversion: object  # InversionResult of MaskInversion on the GT masks (alpha 0)
    state: object = None
    J: torch.Tensor = None
    seconds: dict = field(default_factory=dict)


def _tune(fn, grid, val, text):
    scores = {g: bl.accuracy(fn(g), text, val.cls) for g in grid}
    best = max(grid, key=lambda g: (scores[g], -grid.index(g)))
    return best, scores


def tune_baselines(clip, val: RegionData, text_val, sigmas) -> dict:
    """Each baseline's free choice, picked by Acc@1 on the validation regions."""
    crop, crop_s = _tune(lambda v: bl.masked_crop_embed(clip, val.pixel_values, val.img_idx, val.masks, v),
                         ["inplace", "crop"], val, text_val)
    sig, sig_s = _tune(lambda s: bl.masked_blur_embed(clip, val.pixel_values, val.img_idx, val.masks, s),
                       list(sigmas), val, text_val)
    pool, pool_s = _tune(lambda v: bl.patch_pool_embed(clip, val.pixel_values, val.img_idx, val.masks, v),
                         ["value", "value_res"], val, text_val)
    return {"crop_variant": crop, "crop_val": crop_s, "blur_sigma": sig, "blur_val": sig_s, "pool_variant": pool,
            "pool_val": pool_s}


@limit_threads(1)
def region_retrieval(cfg, clip, test: RegionData, val: RegionData) -> Region:
    t = {}
    t0 = time.perf_counter()
    text = clip.text_embeddings(test.prompts)
    text_val = clip.text_embeddings(val.prompts)
    tuned = tune_baselines(clip, val, text_val, cfg.blur_sigmas)
    t["tuning"] = time.perf_counter() - t0
    px, idx, masks = test.pixel_values, test.img_idx, test.masks
    emb = {}
    t0 = time.perf_counter()
    z0 = clip.image_embeddings(px)
    emb["global"] = z0[torch.as_tensor(idx)]
    emb["masked crop"] = bl.masked_crop_embed(clip, px, idx, masks, tuned["crop_variant"])
    emb["masked blur"] = bl.masked_blur_embed(clip, px, idx, masks, tuned["blur_sigma"])
    emb["patch pooling"] = bl.patch_pool_embed(clip, px, idx, masks, tuned["pool_variant"])
    t["baselines"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = ImageState(clip.model, px)
    J = attention_jacobian(state)
    t["jacobian"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    inv = mask_inversion(clip.model, px, idx, masks, z0=z0, alpha=0.0, lr=cfg.lr, steps=cfg.steps, state=state, J=J)
    emb["MaskInversion"] = inv.let
    rnd = random_masks(masks, cfg.rng("random-masks"))
    emb["MaskInversion, random mask"] = mask_inversion(clip.model, px, idx, rnd, z0=z0, lr=cfg.lr, steps=cfg.steps,
                                                       state=state, J=J).let
    t["inversion"] = time.perf_counter() - t0
    per = pd.DataFrame({"image": idx, "cls": test.cls})
    if test.sizes is not None:
        per["size"] = test.sizes
    rows = []
    for name, e in emb.items():
        per[name] = bl.predictions(e, text)
        row = {"method": name, "acc": 100.0 * float(np.mean(per[name] == per.cls)), "n": len(per)}
        if test.sizes is not None:
            small = per["size"] <= 10
            row["acc small (<= 10 px)"] = 100.0 * float(np.mean(per[name][small] == per.cls[small]))
            row["acc large (> 10 px)"] = 100.0 * float(np.mean(per[name][~small] == per.cls[~small]))
        rows.append(row)
    return Region(pd.DataFrame(rows), per, tuned, inv, state, J, t)


def region_summary(reg: Region) -> dict:
    acc = reg.table.set_index("method")["acc"]
    inv = reg.inversion
    return {"acc": acc.to_dict(), "gain_vs_global": acc["MaskInversion"] - acc["global"],
            "gain_vs_pool": acc["MaskInversion"] - acc["patch pooling"],
            "gain_vs_crop": acc["MaskInversion"] - acc["masked crop"],
            "dice0": float(inv.dice[0].mean()), "dice_end": float(inv.dice[-1].mean()),
            "dice_gain": float(inv.dice[-1].mean() - inv.dice[0].mean()),
            "frac_loss_fell": float(np.mean(inv.loss[-1] < inv.loss[0])),
            "frac_monotone": float(np.mean(np.all(np.diff(inv.loss, axis=0) <= 1e-7, axis=0)))}


# ---- Figure 2: referring expressions with context ---------------------------------------------------------------

@limit_threads(1)
def referring(cfg, clip, ctx, crop_variant: str, pool_variant: str) -> pd.DataFrame:
    """Mask of one twin -> its expression among the image's two ("... left of ..." / "... right of ..."):
    Acc@1 of MaskInversion at each alpha, of masked crop, patch pooling and the global embedding."""
    idx, cls, masks, exprs, cands = [], [], [], [], []
    for i, (objs, refs) in enumerate(zip(ctx.objects, ctx.refs)):
        for k in (0, 1):
            idx.append(i)
            masks.append(objs[k]["mask"])
            exprs.append(k)
            cands.append(refs[:2])
    idx, masks, exprs = np.asarray(idx), np.asarray(masks), np.asarray(exprs)
    flat = [c for pair in cands[::2] for c in pair]  # two expressions per image, in image order
    T = clip.text_embeddings(flat).reshape(len(ctx), 2, -1)
    px = torch.from_numpy(ctx.images)
    z0 = clip.image_embeddings(px)
    state = ImageState(clip.model, px)
    J = attention_jacobian(state)

    def acc(e):
        s = torch.einsum("md,mkd->mk", torch.nn.functional.normalize(e, dim=-1), T[torch.as_tensor(idx)])
        return 100.0 * float(np.mean(s.argmax(1).numpy() == exprs))

    rows = []
    for a in cfg.alphas:
        inv = mask_inversion(clip.model, px, idx, masks, z0=z0, alpha=float(a), lr=cfg.lr, steps=cfg.steps,
                             state=state, J=J)
        rows.append({"method": f"MaskInversion α={a:g}", "alpha": float(a), "acc": acc(inv.let),
                     "dice": float(inv.dice[-1].mean())})
    rows.append({"method": "masked crop", "alpha": np.nan,
                 "acc": acc(bl.masked_crop_embed(clip, px, idx, masks, crop_variant)), "dice": np.nan})
    rows.append({"method": "patch pooling", "alpha": np.nan,
                 "acc": acc(bl.patch_pool_embed(clip, px, idx, masks, pool_variant)), "dice": np.nan})
    rows.append({"method": "global", "alpha": np.nan, "acc": acc(z0[torch.as_tensor(idx)]), "dice": np.nan})
    return pd.DataFrame(rows)


# ---- Figure 3: the map over the optimisation steps -------------------------------------------------------------

@limit_threads(1)
def steps_examples(cfg, clip, test: RegionData, reg: Region, n: int = 4, keep=(0, 1, 3, 10)) -> dict:
    """Maps at steps ``keep`` for the first masks of ``n`` multi-object images, and Dice vs step over all masks."""
    counts = np.bincount(test.img_idx)
    multi = [k for k in range(len(test)) if counts[test.img_idx[k]] > 1]
    pick = np.asarray((multi or list(range(len(test))))[: 2 * n: 2][:n])
    keep = tuple(k for k in keep if k <= cfg.steps)
    inv = mask_inversion(clip.model, test.pixel_values, test.img_idx[pick], test.masks[pick], lr=cfg.lr,
                         steps=cfg.steps, keep_maps=keep, state=reg.state, J=reg.J)
    return {"pick": pick, "images": test.pixel_values[torch.as_tensor(test.img_idx[pick])].numpy(),
            "masks": test.masks[pick], "maps": {k: v.numpy() for k, v in inv.maps.items()},
            "dice_curve": reg.inversion.dice.mean(1), "dice_q": np.percentile(reg.inversion.dice, [25, 75], axis=1),
            "loss_curve": reg.inversion.loss.mean(1)}


# ---- Figure 4: mask quality --------------------------------------------------------------------------------------

@limit_threads(1)
def mask_quality(cfg, clip, test: RegionData, reg: Region) -> pd.DataFrame:
    """Acc@1 of MaskInversion (and masked crop) with GT, eroded (1 px), dilated (2 px) and box masks."""
    text = clip.text_embeddings(test.prompts)
    variants = {"GT": test.masks, "eroded 1 px": erode(test.masks, 1), "dilated 2 px": dilate(test.masks, 2),
                "box": box_masks(test.masks)}
    rows = []
    for name, m in variants.items():
        let = reg.inversion.let if name == "GT" else mask_inversion(
            clip.model, test.pixel_values, test.img_idx, m, lr=cfg.lr, steps=cfg.steps, state=reg.state, J=reg.J).let
        crop = bl.masked_crop_embed(clip, test.pixel_values, test.img_idx, m, reg.tuned["crop_variant"])
        rows.append({"mask": name, "MaskInversion": bl.accuracy(let, text, test.cls),
                     "masked crop": bl.accuracy(crop, text, test.cls),
                     "area / GT area": float(m.sum() / max(1, test.masks.sum()))})
    return pd.DataFrame(rows)


# ---- Figure 5: naive double backprop vs gradient decomposition ---------------------------------------------------

def timing_masks(S: int, n: int, rng) -> np.ndarray:
    """``n`` random box masks (4-16 px sides) on an ``S x S`` image."""
    out = np.zeros((n, S, S), dtype=bool)
    for k in range(n):
        h, w = (int(v) for v in rng.integers(4, 17, size=2))
        y, x = int(rng.integers(0, S - h + 1)), int(rng.integers(0, S - w + 1))
        out[k, y:y + h, x:x + w] = True
    return out


@limit_threads(1)
def timing(cfg, clip, test: RegionData) -> dict:
    """Wall time of a full MaskInversion (state, [J,] 10 steps) for M masks on one image, naive vs decomposed,
    alternating the two in every repetition; the paired ratio decomposed/naive per repetition, and the largest
    map difference between the two computations (on the same embeddings)."""
    px = test.pixel_values[:1]
    rng = cfg.rng("timing")
    M_max = max(cfg.timing_masks)
    all_masks = timing_masks(px.shape[-1], M_max, rng)
    rows = []
    for M in cfg.timing_masks:
        idx = np.zeros(M, dtype=np.int64)
        for rep in range(cfg.timing_reps):
            order = ("naive", "decomposed") if rep % 2 == 0 else ("decomposed", "naive")
            t = {}
            for kind in order:
                t0 = time.perf_counter()
                mask_inversion(clip.model, px, idx, all_masks[:M], lr=cfg.lr, steps=cfg.steps,
                               decomposed=(kind == "decomposed"))
                t[kind] = time.perf_counter() - t0
            rows.append({"masks": M, "rep": rep, "naive_s": t["naive"], "decomposed_s": t["decomposed"],
                         "ratio": t["decomposed"] / t["naive"]})
    df = pd.DataFrame(rows)
    # agreement: maps of random embeddings and of the optimised tokens, both ways, on several test images
    g = cfg.torch_generator("timing-emb")
    k = min(8, len(test))
    n_img = int(test.img_idx[k - 1]) + 1
    pxa = test.pixel_values[:n_img]
    d = clip.model.config.projection_dim
    emb = torch.randn(k, d, generator=g)
    state = ImageState(clip.model, pxa)
    J = attention_jacobian(state)  # one Jacobian per image serves every decomposed map below
    inv = mask_inversion(clip.model, pxa, test.img_idx[:k], test.masks[:k], lr=cfg.lr, steps=cfg.steps,
                         state=state, J=J)
    inv_naive = mask_inversion(clip.model, pxa, test.img_idx[:k], test.masks[:k], lr=cfg.lr, steps=cfg.steps,
                               decomposed=False, state=state)
    diffs = []
    for e in (emb, inv.let):
        a = legrad_maps(clip.model, pxa, e, test.img_idx[:k], decomposed=True, state=state, J=J)
        b = legrad_maps(clip.model, pxa, e, test.img_idx[:k], decomposed=False, state=state)
        diffs.append(float((a - b).abs().max()))
    return {"table": df, "max_map_diff": max(diffs), "let_rel_diff": float(
        ((inv.let - inv_naive.let).norm(dim=1) / inv.let.norm(dim=1)).max()),
        "dice_diff": float(np.abs(inv.dice - inv_naive.dice).max())}


def timing_summary(tm: dict, at: int) -> dict:
    df = tm["table"]
    med = df.groupby("masks")[["naive_s", "decomposed_s", "ratio"]].median()
    cross = [int(m) for m in med.index if med.loc[m, "ratio"] < 1.0]
    return {"median": med, "ratio_at": float(med.loc[at, "ratio"]), "crossover": min(cross) if cross else None}


# ---- Figure 6: backbone size (full mode) -------------------------------------------------------------------------

@limit_threads(1)
def backbone_trend(cfg, test: RegionData, val: RegionData, base_clip=None) -> pd.DataFrame:
    """Acc@1 of MaskInversion, patch pooling, masked crop and global for each tiny-CLIP size trained here."""
    rows = []
    for arch in cfg.backbones:
        clip = base_clip if (arch == "base" and base_clip is not None) else train_arch(cfg, arch)
        reg = region_retrieval(cfg, clip, test, val)
        acc = reg.table.set_index("method")["acc"]
        n_par = sum(p.numel() for p in clip.model.vision_model.parameters())
        rows.append({"backbone": arch, "vision params": n_par, **{m: acc[m] for m in
                     ("MaskInversion", "patch pooling", "masked crop", "global")}})
    return pd.DataFrame(rows)
