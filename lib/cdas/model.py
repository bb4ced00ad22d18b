"""The backbone: a small byte-level BPE trained on the world's transcripts and a tiny GPT-2 trained on them.

The quick-mode model is shipped as ``data/cdas/tiny_gpt2.npz`` (float16 weights + the tokenizer JSON + the recipe),
written by ``python -m lib.cdas.make_checkpoint``; full mode retrains (two sizes) with the run's seed. Training uses
``transformers``' ``GPT2LMHeadModel`` (``lib.common.tiny_lm``); steering runs the same weights through the torch-only
:class:`lib.common.fastgpt2.FastGPT2` (same function, unit-tested; loading the checkpoint never imports
``transformers``).
"""
from __future__ import annotations

import time

import numpy as np
import torch

from lib.common import data_dir
from lib.common.bpe import EOS_TOKEN, encode_corpus, train_bpe
from lib.common.tiny_lm import make_gpt2, read_npz_checkpoint, save_npz_checkpoint, train_lm

from lib.common.fastgpt2 import from_hf, from_state
from .world import MODEL, USER, World, all_words, prompt_text

SLUG = "cdas"
CKPT_NAME = "tiny_gpt2.npz"
SPECIALS = (EOS_TOKEN, USER, MODEL)
ARCHS = {"small": dict(n_layer=2, n_embd=64, n_head=4), "base": dict(n_layer=4, n_embd=128, n_head=4),
         "large": dict(n_layer=6, n_embd=256, n_head=8)}
RECIPE = {"arch": "base", "vocab_size": 1024, "n_positions": 64, "n_transcripts": 40000, "steps": 1500,
          "batch_size": 32, "seq_len": 64, "lr": 3e-3, "warmup_steps": 50, "seed": 0}
# A backbone trained with the world's backdoor class (full mode) records ``"backdoor": True`` in its recipe; a recipe
# without the key (the shipped checkpoint's, and :data:`RECIPE`) has no backdoor class in its training data.


def build_tokenizer(seed: int = 0, vocab_size: int = 1024, backdoor: bool = False):
    """BPE (``lib.common.bpe.train_bpe``) on 4,000 world transcripts plus the word list; specials ``<|endoftext|>``
    (id 0), ``<user>``, ``<model>``. ``backdoor``: the transcripts and word list include the backdoor class."""
    texts = World(seed).transcripts(4000, backdoor=backdoor) + [" " + " ".join(all_words(backdoor))] * 5
    return train_bpe(texts, vocab_size, special_tokens=SPECIALS)


class Backbone:
    """A model, its tokenizer and helpers to encode chat turns (``ids`` include the leading ``<|endoftext|>``)."""

    def __init__(self, model, tok, name="tiny", hub_tokenizer=False, backdoor=False):
        self.model, self.tok, self.name, self.hub = model, tok, name, hub_tokenizer
        self.backdoor = bool(backdoor)   # trained with the world's backdoor class (the backdoor case needs it)
        self.bos = 0 if not hub_tokenizer else (tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id)
        self.eos = 0 if not hub_tokenizer else tok.eos_token_id
        self.n_layer = model.config.n_layer if hasattr(model.config, "n_layer") else model.config.num_hidden_layers

    def encode(self, text: str) -> list:
        if self.hub:
            return list(self.tok(text, add_special_tokens=False)["input_ids"])
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        ids = [int(i) for i in ids]
        if self.eos in ids:
            ids = ids[:ids.index(self.eos)]
        return self.tok.decode(ids) if not self.hub else self.tok.decode(ids, skip_special_tokens=True)

    def prompt_ids(self, instr: str) -> list:
        return [self.bos] + self.encode(prompt_text(instr))

    def response_ids(self, resp: str) -> list:
        return self.encode(" " + resp) + [self.eos]


def save_checkpoint(model, tok, path, recipe, extra=None) -> dict:
    return save_npz_checkpoint(model, tok, path, recipe, extra)


def load_checkpoint(path=None, device="cpu") -> Backbone:
    state, tok, recipe = read_npz_checkpoint(path or (data_dir(SLUG) / CKPT_NAME), RECIPE, "lib.cdas.make_checkpoint")
    try:
        model = from_state(state, vocab_size=recipe["vocab_size"], n_positions=recipe["n_positions"],
                           **ARCHS[recipe["arch"]])
    except RuntimeError as err:
        raise RuntimeError(f"{path}: checkpoint does not match the model ({err})") from None
    return Backbone(model.to(device).eval(), tok, name=f"tiny GPT-2 {recipe['arch']} (shipped)")


def train_backbone(arch="base", seed=0, steps=None, n_transcripts=None, device="cpu", verbose=False, backdoor=False):
    """Train a tiny GPT-2 on the world's transcripts (the recipe of :data:`RECIPE`, with ``arch``/``seed``).
    ``backdoor``: the transcripts (and the tokenizer's) include the world's backdoor class, recorded in the returned
    recipe as ``"backdoor": True`` (without it the recipe, corpus and model are exactly those of before the flag)."""
    r = dict(RECIPE, arch=arch, seed=seed)
    if steps is not None:
        r["steps"] = int(steps)
    if n_transcripts is not None:
        r["n_transcripts"] = int(n_transcripts)
    if backdoor:
        r["backdoor"] = True
    bd = bool(r.get("backdoor", False))
    tok = build_tokenizer(0, r["vocab_size"], backdoor=bd)
    stream = encode_corpus(tok, World(seed).transcripts(r["n_transcripts"], backdoor=bd), separator=0)
    model = make_gpt2(r["vocab_size"], n_positions=r["n_positions"], seed=seed, device=device, **ARCHS[arch])
    t0 = time.perf_counter()
    log = train_lm(model, stream, steps=r["steps"], lr=r["lr"], batch_size=r["batch_size"], seq_len=r["seq_len"],
                   warmup_steps=r["warmup_steps"], seed=seed)
    if verbose:
        print(f"trained {arch} for {r['steps']} steps in {time.perf_counter() - t0:.1f} s; loss "
              f"{log.losses[0]:.2f} -> {np.mean(log.losses[-50:]):.3f}")
    name = f"tiny GPT-2 {arch} (trained here, seed {seed}{', with the backdoor class' if bd else ''})"
    return Backbone(from_hf(model).to(device), tok, name=name, backdoor=bd), log, r


def load_hub_backbone(model_name, device="cpu") -> Backbone:
    """A hub chat model (only when a user asks; offline it must be in the local cache)."""
    from lib.common.tiny_lm import load_hub_lm

    model, tok = load_hub_lm(model_name, device=device)
    return Backbone(model, tok, name=model_name, hub_tokenizer=True)
