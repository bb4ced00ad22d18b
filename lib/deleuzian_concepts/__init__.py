"""The Deleuzian Representation Hypothesis (Cornet, Besançon, Le Borgne, ICLR 2026): concepts as clusters of
activation differences, weighted by inverse skewness.

Notebook: ``notebooks/deleuzian_concepts.ipynb``. Modules: :mod:`.data` (templated sentences, augmented digits,
CoNLL-2003 reader), :mod:`.encoders` (tiny GPT-2 and digit CNN), :mod:`.concepts` (the method and baselines),
:mod:`.metrics` (probe loss, effective rank, MPPC, steering), :mod:`.experiments`, :mod:`.plots`,
:mod:`.make_checkpoint` (the shipped tiny GPT-2).
"""
from __future__ import annotations

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader, check_user_file

from .data import CONLL_EXPECTED

SLUG = "deleuzian_concepts"

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.deleuzian_concepts.data:read_conll",
                                fixture="data/deleuzian_concepts/conll_fixture.txt", expected=CONLL_EXPECTED),
}

SIZES = {
    "quick": dict(
        pretrained=True, lm_width=128, lm_layers=3, lm_steps=1500, lm_sentences=20000, lm_doc_files=60,
        n_sentences=2000, n_token_sentences=120, conll_sentences=300, n_digits=3000, cnn_width=128, cnn_steps=200,
        k=64, k_grid=[16, 32, 64], sae_steps=200, sae_lr=1e-3, topk_grid=[8, 16], l1_grid=[1e-3, 1e-2],
        mppc_seeds=3, alphas=[0.0, 0.5, 1.0, 2.0, 4.0], steer_queries=100, train_frac=0.7, max_len=64,
        tune_all_sets=False, mppc_methods=["ours (diffs+skew)", "TopK-SAE", "Vanilla SAE"],
    ),
    "full": dict(
        pretrained=False, lm_width=256, lm_layers=4, lm_steps=4000, lm_sentences=40000, lm_doc_files=200,
        n_sentences=20000, n_token_sentences=2000, conll_sentences=3000, n_digits=10000, cnn_width=256,
        cnn_steps=2000, k=512, k_grid=[16, 32, 64, 128, 256, 512, 1024], sae_steps=3000, sae_lr=1e-3,
        topk_grid=[8, 16, 32], l1_grid=[1e-4, 1e-3, 1e-2], mppc_seeds=3, alphas=[0.0, 0.5, 1.0, 2.0, 4.0],
        steer_queries=300, train_frac=0.7, max_len=64,
        tune_all_sets=True, mppc_methods=["ours (diffs+skew)", "TopK-SAE", "Vanilla SAE", "FastICA"],
    ),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", model_name=None, data_path=None, layer=None,
           pretrained=None, k=None, n_sentences=None, n_digits=None, sae_steps=None, verbose=True):
    """Validate the parameters and return the run's configuration.

    ``model_name``: None (the tiny GPT-2) or a hub causal LM id (online users; offline it must be cached).
    ``data_path``: None (templated token tasks) or a CoNLL-2003 file for the token probe tasks. ``layer``: the
    residual-stream layer read (None: the last, ``hidden_states[L]``). ``pretrained``: None (quick: the shipped
    checkpoint; full: train here), True / False to force. ``k``, ``n_sentences``, ``n_digits``, ``sae_steps``
    override the mode's sizes.
    """
    from lib.common.tiny_lm import check_model_name

    check_model_name(model_name)
    check_int("layer", layer, lo=0, hi=64, allow_none=True)
    check_bool("pretrained", pretrained, allow_none=True)
    check_int("k", k, lo=2, hi=4096, allow_none=True)
    check_int("n_sentences", n_sentences, lo=200, allow_none=True)
    check_int("n_digits", n_digits, lo=200, allow_none=True)
    check_int("sae_steps", sae_steps, lo=1, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        check_user_file(LOADERS["data_path"], data_path)  # a malformed file is refused before any work
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                      model_name=model_name, data_path=data_path, layer=layer, pretrained=pretrained, k=k,
                      n_sentences=n_sentences, n_digits=n_digits, sae_steps=sae_steps)
    if cfg.k not in cfg.k_grid:
        cfg.params["k_grid"] = sorted(set(cfg.k_grid) | {cfg.k})
    return cfg


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
