"""Language Models are Injective and Hence Invertible (Nikolaou et al., ICLR 2026): collision tests and SipIt.

Notebook: ``notebooks/lm_injectivity.ipynb``. Modules: :mod:`.states` (hidden states, one-step map),
:mod:`.collisions` (pairwise distances, exhaustive test, negative controls), :mod:`.sipit` (SipIt, its
policies, HardPrompts), :mod:`.prompts`, :mod:`.experiments` (what each figure runs), :mod:`.plots`.
"""
from __future__ import annotations

from lib.common import check_int, make_config

from .experiments import (best_lr, build_models, collision_tests, distance_vs_length, exhaustive_test,
                          inversion_table, load_data, negative_controls, table1, time_vs_layer, tune_paper_gd)

SLUG = "lm_injectivity"

SIZES = {
    "quick": dict(
        vocab_size=2048, n_layer=4, n_embd=128, n_head=4, n_positions=256,
        corpus_files=50, train_steps=100, batch_size=16, seq_len=32, lr=3e-3,
        n_prompts=2000, min_len=4, max_len=40, random_frac=0.1, fp64_prompts=300,
        curve_every=25, curve_prompts=150,
        length_grid=[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40], per_length=100,
        n_exhaustive=10, exhaustive_models=["trained"],
        sipit_prompts=4, sipit_len=10, brute_prompts=2, hard_prompts=1, hard_steps=150,
        paper_gd_prompts=0, gd_tune_prompts=0, gd_tune_len=10, gd_lr_grid=[0.03, 0.1, 0.3, 1.0],
        layer_lengths=[4], layer_prompts=1,
        quant_prompts=500, quant_bits=[2, 4, 6, 8, 16],
    ),
    "full": dict(
        vocab_size=8192, n_layer=4, n_embd=128, n_head=4, n_positions=256,
        corpus_files=None, train_steps=2000, batch_size=16, seq_len=64, lr=3e-3,
        n_prompts=20000, min_len=4, max_len=40, random_frac=0.1, fp64_prompts=None,
        curve_every=100, curve_prompts=2000,
        length_grid=[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128], per_length=1000,
        n_exhaustive=10, exhaustive_models=["init", "trained"],
        sipit_prompts=100, sipit_len=20, brute_prompts=20, hard_prompts=3, hard_steps=None,
        paper_gd_prompts=5, gd_tune_prompts=2, gd_tune_len=10, gd_lr_grid=[0.03, 0.1, 0.3, 1.0],
        layer_lengths=[20, 50, 100], layer_prompts=1,
        quant_prompts=2000, quant_bits=[2, 4, 6, 8, 16],
    ),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", model_name=None, vocab_size=None,
           train_steps=None, n_prompts=None, sipit_layer=None, cpu_threads=1, verbose=True):
    """Validate the parameters and return the run's configuration (sizes of the mode, seeded).

    ``model_name``: None for the tiny GPT-2 trained here (default), or a Hugging Face hub id (online users
    only; offline it fails at once). ``vocab_size`` (tiny model only: 2048 or 8192 are shipped, others are
    trained on the fly), ``train_steps``, ``n_prompts``: override the mode's sizes. ``sipit_layer``: the layer
    SipIt inverts in Table 2 (None: the last layer L). ``cpu_threads``: torch threads used by the experiments
    on the CPU (1: the tiny model gains little from more, and shared cores make thread barriers costly;
    None: torch's default).
    """
    if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
        raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny local GPT-2) or a "
                         f"Hugging Face hub id such as 'gpt2'")
    check_int("vocab_size", vocab_size, lo=300, hi=65536, allow_none=True)
    check_int("train_steps", train_steps, lo=0, allow_none=True)
    check_int("n_prompts", n_prompts, lo=50, allow_none=True)
    check_int("sipit_layer", sipit_layer, lo=1, allow_none=True)
    check_int("cpu_threads", cpu_threads, lo=1, allow_none=True)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES,
                       verbose=verbose, model_name=model_name, vocab_size=vocab_size, train_steps=train_steps,
                       n_prompts=n_prompts, sipit_layer=sipit_layer, cpu_threads=cpu_threads)


__all__ = ["SIZES", "SLUG", "best_lr", "tune_paper_gd", "build_models", "collision_tests", "config", "distance_vs_length", "exhaustive_test",
           "inversion_table", "load_data", "negative_controls", "table1", "time_vs_layer"]
