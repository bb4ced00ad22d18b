"""The frozen backbone: a BPE trained on the world's corpus and a tiny GPT-2 trained on it (``lib.common`` LM stack),
a torch-only forward of it with a hook before every attention layer, sentence scoring, and the hub path.

The quick-mode backbone is shipped as ``data/mqar/tiny_gpt2.npz`` (float16 weights, tokenizer, recipe), written by
``python -m lib.mqar.make_checkpoint``; full mode retrains it with the run's seed.

Hook points (the place MQAR's modules sit): ``pre_attn(layer, x)`` receives the LayerNorm-ed input of block
``layer``'s attention (GPT-2's ``ln_1`` output, ``[B, T, d]``) and returns what Q, K and V are computed from; the
residual stream is left as it was. ``final(h)`` edits the last normalised state before the LM head (where INLP and
SentenceDebias project).
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F

from lib.common import data_dir
from lib.common.bpe import encode_corpus, train_bpe
from lib.common.tiny_lm import read_npz_checkpoint, save_npz_checkpoint

from .data import corpus, encode_labeled

SLUG = "mqar"
CKPT_NAME = "tiny_gpt2.npz"
RECIPE = {"vocab_size": 512, "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "n_sentences": 30000,
          "bias_strength": 0.9, "steps": 1500, "batch_size": 32, "seq_len": 32, "lr": 3e-3, "warmup_steps": 50,
          "seed": 0}


def build_tokenizer(texts, vocab_size):
    return train_bpe(texts, vocab_size)


def train_backbone(recipe=None, seed=None, verbose=False):
    """Tokenizer + tiny GPT-2 trained on ``recipe["n_sentences"]`` corpus sentences (seeded). Returns
    (model, tokenizer, TrainLog, recipe)."""
    from lib.common.seeding import rng_for
    from lib.common.tiny_lm import make_gpt2, train_lm

    r = dict(RECIPE if recipe is None else recipe)
    if seed is not None:
        r["seed"] = int(seed)
    texts = [s.text for s in corpus(r["n_sentences"], r["bias_strength"], rng_for(r["seed"], "mqar-corpus"))]
    tok = build_tokenizer(texts, r["vocab_size"])
    stream = encode_corpus(tok, texts, separator=0)
    model = make_gpt2(r["vocab_size"], n_layer=r["n_layer"], n_embd=r["n_embd"], n_head=r["n_head"],
                      n_positions=r["n_positions"], seed=r["seed"])
    t0 = time.perf_counter()
    log = train_lm(model, stream, steps=r["steps"], lr=r["lr"], batch_size=r["batch_size"], seq_len=r["seq_len"],
                   warmup_steps=r["warmup_steps"], seed=r["seed"])
    if verbose:
        print(f"trained for {r['steps']} steps in {time.perf_counter() - t0:.1f} s; loss {log.losses[0]:.2f} -> "
              f"{np.mean(log.losses[-50:]):.3f}")
    return model.eval(), tok, log, r


def save_checkpoint(model, tok, path, recipe) -> dict:
    return save_npz_checkpoint(model, tok, path, recipe)


def load_checkpoint(path=None):
    """(state dict of float32 tensors, tokenizer, recipe) of the shipped backbone."""
    return read_npz_checkpoint(path or (data_dir(SLUG) / CKPT_NAME), RECIPE, "lib.mqar.make_checkpoint")


def _ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


class TinyGPT2:
    """A torch-only forward of a GPT-2 state dict (``transformers`` layout), frozen, with the hook points above.

    Equal to ``GPT2LMHeadModel`` at every output (a unit test checks it); about 10x cheaper per call for a model of
    this size, which is what lets MQAR train and every method be scored within quick mode's budget."""

    hub = False

    def __init__(self, state, n_head, name="tiny GPT-2"):
        self.p = {k: v.detach().float() for k, v in state.items()}
        self.n_layer = 1 + max(int(k.split(".")[2]) for k in self.p if k.startswith("transformer.h."))
        self.n_head, self.d = int(n_head), self.p["transformer.wte.weight"].shape[1]
        self.name = name
        self._cache = None

    @contextmanager
    def caching(self):
        """Within the block, the unhooked forward (no ``pre_attn``) of a batch of ids is computed once: methods that
        edit only the final state (none, INLP, SentenceDebias and their tuning candidates) share it (``final`` hooks
        must return a new tensor, never edit their input in place)."""
        outer, self._cache = self._cache, ({} if self._cache is None else self._cache)
        try:
            yield self
        finally:
            self._cache = outer

    @classmethod
    def from_hf(cls, model, name="tiny GPT-2"):
        return cls(model.state_dict(), model.config.n_head, name=name)

    def n_params(self):
        return int(sum(v.numel() for k, v in self.p.items() if not k.endswith("attn.bias")
                       and not k.endswith("masked_bias") and k != "lm_head.weight"))

    def hidden(self, ids, pre_attn=None, final=None, stop_after=None):
        """The final normalised states ``[B, T, d]`` (after ``final``); with ``stop_after = i``, the forward stops
        right after ``pre_attn(i, .)`` and returns None (MQAR's training needs nothing beyond it)."""
        if pre_attn is None and stop_after is None and self._cache is not None:
            key = (tuple(ids.shape), ids.numpy().tobytes())
            if key not in self._cache:
                self._cache[key] = self._forward(ids, None, None)
            hf = self._cache[key]
            return final(hf) if final is not None else hf
        return self._forward(ids, pre_attn, stop_after, final)

    def _forward(self, ids, pre_attn, stop_after, final=None):
        p, B, T = self.p, ids.shape[0], ids.shape[1]
        h = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][:T]
        nh, hd = self.n_head, self.d // self.n_head
        for i in range(self.n_layer):
            q = f"transformer.h.{i}."
            x = _ln(h, p[q + "ln_1.weight"], p[q + "ln_1.bias"])
            if pre_attn is not None:
                x = pre_attn(i, x)
            if stop_after is not None and i == stop_after:
                return None
            qkv = x @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"]
            qq, kk, vv = (t.view(B, T, nh, hd).transpose(1, 2) for t in qkv.split(self.d, dim=-1))
            a = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True).transpose(1, 2).reshape(B, T, self.d)
            h = h + a @ p[q + "attn.c_proj.weight"] + p[q + "attn.c_proj.bias"]
            x2 = _ln(h, p[q + "ln_2.weight"], p[q + "ln_2.bias"])
            m = F.gelu(x2 @ p[q + "mlp.c_fc.weight"] + p[q + "mlp.c_fc.bias"], approximate="tanh")
            h = h + m @ p[q + "mlp.c_proj.weight"] + p[q + "mlp.c_proj.bias"]
        hf = _ln(h, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"])
        return final(hf) if final is not None else hf

    def logits_of(self, hf):
        return hf @ self.p["transformer.wte.weight"].T

    def attention(self, ids, layer, pre_attn=None):
        """Attention probabilities ``[B, heads, T, T]`` of block ``layer`` (for the motivating figure)."""
        out = {}
        p, B, T = self.p, ids.shape[0], ids.shape[1]
        nh, hd = self.n_head, self.d // self.n_head

        def grab(i, x):
            x = pre_attn(i, x) if pre_attn is not None else x
            if i == layer:
                q = f"transformer.h.{i}."
                qkv = x @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"]
                qq, kk, _ = (t.view(B, T, nh, hd).transpose(1, 2) for t in qkv.split(self.d, dim=-1))
                s = qq @ kk.transpose(-1, -2) / hd ** 0.5
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
                out["a"] = s.softmax(-1)
            return x

        self.hidden(ids, pre_attn=grab)
        return out["a"]


class _Stop(Exception):
    """Raised by a hook to end a hub model's forward early."""


class HubLM:
    """The same interface over a hub causal LM (GPT-2-family blocks with ``ln_1``, or Llama-family
    ``input_layernorm``): hooks on the attention's LayerNorm and on the final norm."""

    hub = True

    def __init__(self, model, name):
        from lib.common.lm_hooks import final_norm, transformer_blocks

        self.model, self.name = model.eval(), name
        self.blocks = list(transformer_blocks(model))
        self.norms = [getattr(b, "ln_1", None) or getattr(b, "input_layernorm", None) for b in self.blocks]
        if any(n is None for n in self.norms):
            raise ValueError(f"model_name {name!r}: no pre-attention LayerNorm (ln_1 / input_layernorm) found in its "
                             f"blocks; MQAR's hook needs one")
        self.fnorm = final_norm(model)
        self.n_layer, self.d = len(self.blocks), model.get_input_embeddings().weight.shape[1]
        for q in model.parameters():
            q.requires_grad_(False)

    def n_params(self):
        return int(sum(q.numel() for q in self.model.parameters()))

    @contextmanager
    def caching(self):
        """No cache for hub models (their states are large): every call runs the forward."""
        yield self

    def hidden(self, ids, pre_attn=None, final=None, stop_after=None):
        hs = []

        def at(i, out):
            new = pre_attn(i, out)
            if stop_after is not None and i == stop_after:
                raise _Stop
            return new

        if pre_attn is not None:
            for i, n in enumerate(self.norms):
                hs.append(n.register_forward_hook(lambda mod, inp, out, i=i: at(i, out)))
        if final is not None and self.fnorm is not None:
            hs.append(self.fnorm.register_forward_hook(lambda mod, inp, out: final(out)))
        try:
            out = self.model(input_ids=ids, output_hidden_states=True)
        except _Stop:
            return None
        finally:
            for h in hs:
                h.remove()
        return out.hidden_states[-1]

    def logits_of(self, hf):
        return self.model.get_output_embeddings()(hf)

    def attention(self, ids, layer, pre_attn=None):
        raise NotImplementedError("attention maps are drawn for the tiny GPT-2 only")


class Backbone:
    """A frozen LM + its ``tokenizers`` tokenizer: encoding of templated samples and sentence scoring."""

    def __init__(self, lm, tok, name):
        self.lm, self.tok, self.name = lm, tok, name
        self._enc = {}

    @staticmethod
    def _key(samples):
        return tuple((s.text, s.template, tuple(sorted(s.spans.items()))) for s in samples)

    def encode(self, samples, max_len=32):
        """(ids, lens, labels) of :func:`lib.mqar.data.encode_labeled`, computed once per list of samples (every
        method is scored on the same sets); the arrays are shared between calls: do not modify them."""
        key = ("encode", max_len, self._key(samples))
        if key not in self._enc:
            self._enc[key] = encode_labeled(self.tok, samples, max_len=max_len)
        return self._enc[key]

    def n_after(self, samples, slot):
        """Per sample, the number of tokens after slot ``slot``'s word (the byte-level pre-tokenizer splits at
        spaces, so the text after the word encodes to the same tokens alone)."""
        key = ("n_after", slot, self._key(samples))
        if key not in self._enc:
            encs = self.tok.encode_batch([s.text[s.spans[slot][1]:] for s in samples], add_special_tokens=False)
            self._enc[key] = np.array([len(e.ids) for e in encs])
        return self._enc[key]

    def encode_texts(self, texts, max_len=64):
        if hasattr(self.tok, "encode_batch"):
            encs = [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]
        else:
            encs = [self.tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        T = min(max_len, 1 + max(len(e) for e in encs))
        ids = np.zeros((len(encs), T), dtype=np.int64)
        lens = np.zeros(len(encs), dtype=np.int64)
        for i, e in enumerate(encs):
            L = min(T - 1, len(e))
            ids[i, 1:L + 1] = e[:L]
            lens[i] = L + 1
        return ids, lens


def token_logprobs(lm, ids, lens, pre_attn=None, final=None, batch=512):
    """``log p(x_t | x_<t)`` for t = 1..T-1 as ``[N, T-1]`` (0 beyond each row's length)."""
    out = []
    with torch.no_grad():
        for a in range(0, len(ids), batch):
            x = torch.as_tensor(ids[a:a + batch])
            lp = lm.logits_of(lm.hidden(x, pre_attn, final)).log_softmax(-1)[:, :-1]
            tl = lp.gather(-1, x[:, 1:, None])[..., 0]
            mask = torch.arange(1, x.shape[1])[None] < torch.as_tensor(lens[a:a + batch])[:, None]
            out.append((tl * mask).numpy())
    return np.concatenate(out).astype(np.float64)


def sentence_scores(lm, ids, lens, **kw):
    """Sentence log-likelihood ``Σ_t log p(x_t | x_<t)`` (the leading <|endoftext|> is context, not scored)."""
    return token_logprobs(lm, ids, lens, **kw).sum(1)


def shared_suffix(a, b):
    """Tokens the two id sequences share at their end, never overlapping their shared prefix."""
    q = 0
    while q < min(len(a), len(b)) - 1 and a[len(a) - 1 - q] == b[len(b) - 1 - q]:
        q += 1
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    return min(q, len(a) - pre, len(b) - pre)


def pair_scores(lm, ids_a, lens_a, ids_b, lens_b, n_suffix=None, **kw):
    """Minimal-pair scores of the *unmodified* tokens (CrowS-Pairs' protocol, causal form): the tokens after the
    span where the two sentences differ. Tokens before it have identical contexts in both and are left out; the
    swapped tokens themselves are never scored. ``n_suffix`` (per pair) gives the number of tokens after the
    swapped word when it is known (templated pairs: a shared sub-word ending of two names is part of the swapped
    word); otherwise the shared token suffix is used. Returns (score_a, score_b)."""
    ta, tb = token_logprobs(lm, ids_a, lens_a, **kw), token_logprobs(lm, ids_b, lens_b, **kw)
    sa, sb = np.zeros(len(ta)), np.zeros(len(tb))
    for i in range(len(ta)):
        a, b = ids_a[i, :lens_a[i]], ids_b[i, :lens_b[i]]
        q = shared_suffix(a, b) if n_suffix is None else int(n_suffix[i])
        # token t (t >= 1) sits in column t - 1 of the log-prob table
        sa[i] = ta[i, len(a) - 1 - q:len(a) - 1].sum() if q else 0.0
        sb[i] = tb[i, len(b) - 1 - q:len(b) - 1].sum() if q else 0.0
    return sa, sb


def load_backbone(cfg):
    """The run's backbone: the shipped checkpoint (quick), trained here with the seed (full), or a hub model."""
    if cfg.model_name:
        from lib.common.tiny_lm import load_hub_lm

        model, tok = load_hub_lm(cfg.model_name)
        return Backbone(HubLM(model, cfg.model_name), tok, cfg.model_name)
    if cfg.pretrained:
        state, tok, r = load_checkpoint()
        return Backbone(TinyGPT2(state, r["n_head"], "tiny GPT-2 (shipped)"), tok, "tiny GPT-2 (shipped, seed 0)")
    r = dict(RECIPE, n_layer=cfg.lm_layers, n_embd=cfg.lm_width, steps=cfg.lm_steps,
             bias_strength=cfg.bias_strength, n_sentences=cfg.lm_sentences)
    model, tok, _, r = train_backbone(r, seed=cfg.seed, verbose=True)
    return Backbone(TinyGPT2.from_hf(model), tok, f"tiny GPT-2 (trained here, seed {cfg.seed})")
