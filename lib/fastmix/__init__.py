"""FastMix: Fast Data Mixture Optimization via Gradient Descent (Tan et al., ICLR 2026), on an offline stand-in.

Modules: ``data`` (stdlib docstring families, code, templated English, arithmetic, noise; the Pile-style JSONL
reader), ``mixture`` (sampler, alpha-weighted loss, one-step and unrolled hypergradients, the FastMix search,
RegMix-lite, DoReMi, training on a mixture), ``experiments`` (one function per figure), ``plots``, ``make_data`` (regenerates
the shipped stdlib texts).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so lib.common's seeding also seeds torch)

from lib.common import check_bool, check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import PILE_EXPECTED, SOURCES_FULL, SOURCES_QUICK, read_pile_jsonl

SLUG = "fastmix"

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.fastmix.data:read_pile_jsonl", fixture="data/fastmix/tiny_pile.jsonl",
                                expected=PILE_EXPECTED),
}

SIZES = {
    "quick": dict(k=6, seq_len=32, per_source=4, n1=4, proxy_steps=80, n_proxies=4, target_steps=50,
                  target_layers=2, target_embd=64, n_val_rows=32, n_eval_rows=64, lemma_pool=24, lemma_warm_steps=20,
                  lemma_per_source=8),
    # full: sized from per-step CPU times (58 ms per proxy step, 240 ms per 4x128 step at seq_len 32) to about an
    # hour in all (64 RegMix-lite proxies x 400 steps: ~25 min; 5 evaluation models x 800 steps: ~16 min; F5, F6)
    "full": dict(k=10, seq_len=32, per_source=8, n1=10, proxy_steps=400, n_proxies=64, target_steps=800,
                 target_layers=4, target_embd=128,
                 n_val_rows=64, n_eval_rows=256, lemma_pool=128, lemma_warm_steps=200,
                 lemma_per_source=8),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, target_set=None, target="A",
           model_name=None, vocab_size=512, seq_len=None, per_source=None, proxy_layers=2, proxy_embd=64, lr=3e-3,
           n1=None, n2=1, lr_mix=0.1, lam=0.0, beta=0.0, k=None, proxy_steps=None, n_proxies=None, target_steps=None,
           verbose=True):
    """Validate the notebook's parameters and build the run configuration (see the notebook's parameters cell)."""
    # "A": F1-F6 on the held-out docstring family, F7 (target B) in full mode only; "B": F7 in quick mode too
    check_choice("target", target, ["A", "B"])
    if model_name is not None:
        raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny GPT-2 proxy trained "
                         "here). A hub model would need the paper's tinyllama proxy and the RegMix data, not available "
                         "offline; this notebook does not load one")
    check_int("vocab_size", vocab_size, lo=300, hi=8192)
    check_int("seq_len", seq_len, lo=8, hi=256, allow_none=True)
    check_int("per_source", per_source, lo=1, hi=64, allow_none=True)
    check_int("proxy_layers", proxy_layers, lo=1, hi=8)
    check_int("proxy_embd", proxy_embd, lo=32, hi=512)
    if proxy_embd % 32:
        raise ValueError(f"parameter 'proxy_embd' got {proxy_embd}; allowed: a multiple of 32")
    check_float("lr", lr, lo=0.0, lo_open=True, hi=1.0)
    check_int("n1", n1, lo=1, hi=1000, allow_none=True)
    check_int("n2", n2, lo=1, hi=20)
    check_float("lr_mix", lr_mix, lo=0.0, lo_open=True, hi=10.0)
    check_float("lam", lam, lo=0.0)
    check_float("beta", beta, lo=0.0)
    check_int("k", k, lo=6, hi=10, allow_none=True)
    if k is not None and k not in (6, 10):
        raise ValueError(f"parameter 'k' got {k}; allowed: None (the mode's), 6 or 10")
    check_int("proxy_steps", proxy_steps, lo=10, allow_none=True)
    check_int("n_proxies", n_proxies, lo=2, allow_none=True)
    if mode == "full" and n_proxies is not None and n_proxies < 10:
        raise ValueError(f"parameter 'n_proxies' got {n_proxies}; allowed in full mode: >= 10 (Figure 6 splits the "
                         "RegMix-lite proxies into 5 seeds of >= 2)")
    check_int("target_steps", target_steps, lo=10, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        sets = read_pile_jsonl(data_path)  # fail now, before any work
        if target_set is not None and target_set not in sets:
            raise ValueError(f"parameter 'target_set' got {target_set!r}; allowed: one of {list(sets)}")
        data_path = str(data_path)
    elif target_set is not None:
        raise ValueError("parameter 'target_set' is only used with data_path; got "
                         f"{target_set!r} with data_path=None")
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=False,
                      data_path=data_path, target_set=target_set, target=target, model_name=model_name,
                      vocab_size=vocab_size, seq_len=seq_len, per_source=per_source, proxy_layers=proxy_layers,
                      proxy_embd=proxy_embd, lr=float(lr), n1=n1, n2=n2, lr_mix=float(lr_mix), lam=float(lam),
                      beta=float(beta), k=k, proxy_steps=proxy_steps, n_proxies=n_proxies, target_steps=target_steps)
    cfg.params["sources"] = list(SOURCES_QUICK if cfg.k == 6 else SOURCES_FULL)
    if verbose:
        print(cfg.describe())
    return cfg


__all__ = ["SLUG", "SIZES", "LOADERS", "config", "read_pile_jsonl", "SOURCES_QUICK", "SOURCES_FULL"]
