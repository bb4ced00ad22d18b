"""MaskInversion (ICLR 2026): localized embeddings by optimising a token until its LeGrad explainability map
matches a query mask.

Modules: ``scenes`` (generated scenes with exact masks, the context variant, mask variants), ``model`` (the tiny
``transformers`` CLIP, its word tokenizer, InfoNCE training, checkpoint, hub path), ``legrad`` (LeGrad maps by
double backprop and by the gradient decomposition), ``inversion`` (soft Dice, the MaskInversion loop),
``baselines`` (global, masked crop, masked blur, MaskCLIP-style patch pooling), ``voc`` (PASCAL VOC 2012 reader
and its fixture), ``experiments`` (one function per figure), ``plots``, ``train_checkpoint`` (regenerates
``data/maskinversion/tiny_clip.npz``).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so that lib.common's seeding also seeds torch)

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader, check_user_file

from .voc import VOC_EXPECTED

SLUG = "maskinversion"

LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.maskinversion.voc:read_voc", fixture="data/maskinversion/voc_fixture", kind="folder",
        target="ImageSets/Segmentation/val.txt", expected=VOC_EXPECTED,
        skip={"wrong_delimiter": "one image id per line: there is no delimiter to get wrong",
              "field_missing": "one field per line: dropping it leaves a blank line, which the list format skips"}),
}

SIZES = {
    "quick": {
        "n_test": 75,  # test scenes (about 150 regions)
        "n_val": 30,  # validation scenes that tune the baselines (another random stream)
        "n_context": 30,  # context scenes (60 referring masks)
        "timing_masks": (1, 10, 50),
        "timing_reps": 3,
        "train_steps": 1200,  # only when the model is trained here (pretrained=False)
        "backbones": (),  # Figure 6 trains two sizes: full mode only
    },
    "full": {
        "n_test": 1000,  # about 2000 regions
        "n_val": 200,
        "n_context": 300,
        "timing_masks": (1, 5, 10, 50, 100),
        "timing_reps": 5,
        "train_steps": 1200,
        "backbones": ("small", "base"),
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", pretrained=None, model_name=None, data_path=None,
           max_images=None, n_test=None, steps=10, lr=0.1, alphas=(0.0, 1.0, 5.0), blur_sigmas=(1.0, 2.0, 4.0),
           verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    pretrained : None (quick: load the shipped tiny CLIP ``data/maskinversion/tiny_clip.npz``; full: train it
        here, with this seed), True (load it) or False (train here).
    model_name : None (the tiny CLIP) or a hub id such as ``"openai/clip-vit-base-patch16"`` (loaded from the
        local Hugging Face cache only; offline and not cached it fails at once).
    data_path : None (generated scenes) or a PASCAL VOC 2012 folder (region retrieval on its val list; meaningful
        with a real CLIP, ``model_name``); ``max_images`` caps the images read from it.
    steps, lr : MaskInversion's optimisation (paper: 10 steps of AdamW, lr 0.1); alphas : the context weights of
        Figure 2; blur_sigmas : the masked-blur grid tuned on the validation scenes.
    """
    check_bool("pretrained", pretrained, allow_none=True)
    if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
        raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny local CLIP) or a "
                         f"Hugging Face hub id such as 'openai/clip-vit-base-patch16'")
    check_int("max_images", max_images, lo=1, allow_none=True)
    check_int("n_test", n_test, lo=4, hi=20000, allow_none=True)
    check_int("steps", steps, lo=1, hi=500)
    check_float("lr", lr, lo=0.0, lo_open=True, hi=10.0)
    for name, grid, lo in (("alphas", alphas, 0.0), ("blur_sigmas", blur_sigmas, 0.1)):
        if not isinstance(grid, (list, tuple)) or not grid:
            raise ValueError(f"parameter {name!r} got {grid!r}; allowed: a non-empty list of numbers >= {lo}")
        for v in grid:
            check_float(name, v, lo=lo, hi=100.0)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        check_user_file(LOADERS["data_path"], data_path)  # a malformed folder is refused before any work
    if pretrained and model_name:
        raise ValueError("parameter 'pretrained' got True together with model_name; the shipped checkpoint is the "
                         "tiny CLIP: set pretrained = None with a hub model")
    use_ckpt = (mode == "quick") if pretrained is None else bool(pretrained)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       pretrained=use_ckpt and not model_name, model_name=model_name, data_path=data_path,
                       max_images=max_images, n_test=n_test, steps=int(steps), lr=float(lr),
                       alphas=tuple(float(a) for a in alphas), blur_sigmas=tuple(float(s) for s in blur_sigmas))


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
