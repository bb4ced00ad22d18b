"""MQAR (ICLR 2026): multi-feature quantized attention regularization for fair language models.

Modules: :mod:`.data` (the seeded world with planted gender / group / intersectional associations, SS-T, CP-T,
WB-T, the downstream tasks, the CrowS-Pairs CSV reader), :mod:`.model` (the frozen tiny GPT-2, its torch-only
forward with pre-attention hooks, sentence scoring, the hub path), :mod:`.mqar` (QR modules, two-stage training),
:mod:`.baselines` (INLP, SentenceDebias), :mod:`.metrics`, :mod:`.experiments`, :mod:`.plots`,
:mod:`.make_checkpoint` (writes ``data/mqar/tiny_gpt2.npz``).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so that lib.common's seeding also seeds torch)

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.tiny_lm import resolve_pretrained
from lib.common.userfiles import UserFileLoader, check_user_file

from .data import CROWS_EXPECTED

SLUG = "mqar"

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.mqar.data:read_crows", fixture="data/mqar/crows_fixture.csv",
                                expected=CROWS_EXPECTED,
                                skip={"text_field": "the altered field is sent_more, free text: any words, 'abc' "
                                                    "too, are a sentence the scorer can read"}),
}

SIZES = {
    "quick": dict(pretrained=True, n_items=100, n_module_text=2000, n_task_train=400, stage1_steps=150,
                  stage2_steps=150, inlp_grid=[1, 2, 4, 8], sd_grid=[1, 2, 4, 8], lm_layers=2, lm_width=64,
                  lm_steps=1500, lm_sentences=30000, sweep=[]),
    "full": dict(pretrained=False, n_items=1000, n_module_text=8000, n_task_train=1500, stage1_steps=600,
                 stage2_steps=600, inlp_grid=[1, 2, 4, 8, 16, 32], sd_grid=[1, 2, 4, 8, 16], lm_layers=4,
                 lm_width=128, lm_steps=3000, lm_sentences=30000, sweep=[0.6, 0.75, 0.9]),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", model_name=None, data_path=None, pretrained=None,
           bias_strength=0.9, n_items=None, stage1_steps=None, stage2_steps=None, beta=1.0, lr=1e-3, batch=32,
           latent=None, levels=10, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    model_name : None (the tiny GPT-2) or a hub causal LM id (GPT-2 / Llama-family blocks; local cache only).
    data_path : None or CrowS-Pairs' public CSV (sent_more, sent_less, stereo_antistereo, bias_type), scored in
        addition to CP-T. pretrained : None (quick: the shipped checkpoint; full: train here with the seed).
    bias_strength : planted association strength b in [0.5, 1] (the shipped checkpoint was trained with 0.9).
    MQAR (guessed sizes): latent (None: d/4), levels (K scalar codes per latent dimension), beta (adversarial
    weight of stage 2), lr, batch, stage1_steps, stage2_steps.
    """
    from lib.common.tiny_lm import check_model_name

    check_model_name(model_name)
    check_bool("pretrained", pretrained, allow_none=True)
    check_float("bias_strength", bias_strength, lo=0.5, hi=1.0)
    check_int("n_items", n_items, lo=20, hi=20000, allow_none=True)
    if n_items is not None and n_items % 2:
        raise ValueError(f"parameter 'n_items' got {n_items}; allowed: an even number (SS-T items come in mirrored "
                         f"pairs)")
    check_int("stage1_steps", stage1_steps, lo=1, hi=100000, allow_none=True)
    check_int("stage2_steps", stage2_steps, lo=0, hi=100000, allow_none=True)
    check_float("beta", beta, lo=0.0, hi=100.0)
    check_float("lr", lr, lo=0.0, lo_open=True, hi=1.0)
    check_int("batch", batch, lo=1, hi=4096)
    check_int("latent", latent, lo=1, hi=4096, allow_none=True)
    check_int("levels", levels, lo=2, hi=256)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        check_user_file(LOADERS["data_path"], data_path)
    use_ckpt = resolve_pretrained(mode, pretrained, model_name)
    if use_ckpt and float(bias_strength) != 0.9:
        raise ValueError(f"parameter 'bias_strength' got {bias_strength}; the shipped checkpoint was trained with "
                         f"0.9: use 0.9, or pretrained = False to train the backbone here with another strength")
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       model_name=model_name, data_path=data_path, pretrained=use_ckpt,
                       bias_strength=float(bias_strength), n_items=n_items, stage1_steps=stage1_steps,
                       stage2_steps=stage2_steps, beta=float(beta), lr=float(lr), batch=int(batch), latent=latent,
                       levels=int(levels))


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
