"""CDAS (ICLR 2026): faithful bi-directional model steering by distribution matching and rank-1 distributed
interchange interventions.

Modules: ``world`` (the synthetic chat world: topics, concept lexicons, contrastive quadruples, refusal requests, the
exact judge), ``model`` (BPE + tiny GPT-2 backbone, checkpoint, hub path), the shared
:mod:`lib.common.fastgpt2` (the same GPT-2 as a torch-only forward: cached tail, packed response tokens, preallocated KV
cache), ``steering`` (row-wise DII / clamp / add
edits, JSD/CE/KL objectives, CDAS training, factors, DiffMean, Lang., cached greedy generation), ``data`` (reader of
the official contrastive parquet/JSONL files), ``experiments`` (one function per figure), ``plots``,
``make_checkpoint`` (regenerates ``data/cdas/tiny_gpt2.npz``).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so that lib.common's seeding also seeds torch)

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader, check_user_file
from lib.common.tiny_lm import resolve_pretrained

from .data import CONTRAST_EXPECTED

SLUG = "cdas"

LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.cdas.data:read_contrastive", fixture="data/cdas/tiny_contrastive.jsonl",
        expected=CONTRAST_EXPECTED),
}

ALL_METHODS = ("CDAS", "DiffMean", "Lang.", "DAS (CE)", "KLDAS (fwd KL)", "KLDAS (rev KL)")

SIZES = {
    "quick": {
        "n_concepts": 4,  # concepts steered (of the world's 10)
        "n_quads": 64,  # training quadruples per concept
        "n_eval": 8,  # held-out prompts per concept (half tune the multiplier, half report)
        "epochs": 6,
        "mults": (0.5, 1.0, 2.0, 4.0, 8.0, 16.0),  # steering multipliers (tuned per concept on the tune half)
        "methods": ("CDAS", "DiffMean", "Lang.", "DAS (CE)"),
        "layers": (),  # layer sweep (Figure 1b, C5): full mode
        "archs": (),  # scale (Figure 7): full mode
        "refusal": False,  # refusal case (Figure 5, C3): full mode
        "backdoor": False,  # backdoor class in the backbone's training data and the backdoor case (Figure 6, C6)
    },
    "full": {
        "n_concepts": 10,
        "n_quads": 64,
        "n_eval": 16,
        "epochs": 18,
        "mults": (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0),
        "methods": ALL_METHODS,
        "layers": (1, 2, 3),
        "archs": ("small", "large"),
        "refusal": True,
        "backdoor": True,
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", model_name=None, data_path=None, pretrained=None,
           layer=2, n_concepts=None, n_quads=None, n_eval=None, epochs=None, lr=None, batch=8, max_new=26,
           verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    pretrained : None (quick: the shipped tiny GPT-2 ``data/cdas/tiny_gpt2.npz``; full: train it here with this
        seed), True (load it) or False (train here). model_name : None or a hub chat model id (local cache only).
    data_path : None or the official contrastive file (parquet or JSONL with ``negative_input``, ``positive_input``,
        ``negative_output``, ``positive_output``): its quadruples train CDAS on ``model_name``.
    layer : residual-stream layer l (hidden_states[l]) of the interventions; batch, epochs : training of the
        directions (paper: AdamW, batch 8, linear decay); lr : None (each method's lr tuned on seed 9000,
        ``data/cdas/tuning.json``) or one lr for every method (paper: 0.04); max_new : generated tokens per response.
    """
    check_bool("pretrained", pretrained, allow_none=True)
    if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
        raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny local GPT-2) or a "
                         f"Hugging Face hub id such as 'google/gemma-2-2b-it'")
    check_int("layer", layer, lo=1, hi=64)
    if model_name is None and layer > 3:
        raise ValueError(f"parameter 'layer' got {layer}; allowed with the tiny 4-block GPT-2: 1, 2 or 3")
    check_int("n_concepts", n_concepts, lo=1, hi=10, allow_none=True)
    check_int("n_quads", n_quads, lo=8, hi=4096, allow_none=True)
    check_int("n_eval", n_eval, lo=2, hi=512, allow_none=True)
    if n_eval is not None and n_eval % 2:
        raise ValueError(f"parameter 'n_eval' got {n_eval}; allowed: an even number (half tune, half report)")
    check_int("epochs", epochs, lo=1, hi=100, allow_none=True)
    check_float("lr", lr, lo=0.0, lo_open=True, hi=10.0, allow_none=True)
    check_int("batch", batch, lo=1, hi=1024)
    check_int("max_new", max_new, lo=4, hi=128)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        check_user_file(LOADERS["data_path"], data_path)
    use_ckpt = resolve_pretrained(mode, pretrained, model_name)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       model_name=model_name, data_path=data_path, pretrained=use_ckpt,
                       layer=int(layer), n_concepts=n_concepts, n_quads=n_quads, n_eval=n_eval, epochs=epochs,
                       lr=None if lr is None else float(lr), batch=int(batch), max_new=int(max_new))


__all__ = ["SLUG", "SIZES", "LOADERS", "ALL_METHODS", "config"]
