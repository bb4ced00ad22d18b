"""A torch-only GPT-2 (``transformers.GPT2LMHeadModel`` with GELU-tanh, pre-LayerNorm, tied head, no dropout),
holding the same weights under the same parameter names.

Why: ``transformers`` costs seconds to import (a tenth of a quick run's budget) and runs each block through several
Python-level wrappers and GELU as five tensor operations; for the suite's tiny models that overhead is most of the
time. :class:`FastGPT2` computes the same function (unit tests check logits, hidden states, the loss, cached decoding
and ``inputs_embeds`` against ``GPT2LMHeadModel``) with fused ``F.gelu(approximate="tanh")`` and
``F.scaled_dot_product_attention``. It keeps the layout that :mod:`lib.common.lm_hooks` looks for
(``transformer.h`` blocks called with the hidden states as first argument, ``transformer.ln_f``,
``get_output_embeddings``) and the parts of the transformers interface the suite uses: ``config`` (``vocab_size``,
``n_layer``, ``n_positions``, ...), ``base_model`` (the blocks without the LM head), ``get_input_embeddings``,
``forward(input_ids=... | inputs_embeds=..., labels=..., use_cache=..., past_key_values=...,
output_hidden_states=...)``, so :func:`lib.common.tiny_lm.train_lm` trains it.

- :func:`make_fast_gpt2`: a freshly initialised model, the very weights :func:`lib.common.tiny_lm.make_gpt2`
  draws for the same seed (GPT-2's initialisation), without importing ``transformers``.
- :func:`from_hf` / :func:`from_state`: the same network as a trained ``GPT2LMHeadModel`` or its state dict.

Caches: ``use_cache=True`` returns a preallocated :class:`KVCache`; ``KVCache.expand(batch)`` gives a list of
per-layer ``(keys, values)`` views of its filled positions broadcast to ``batch`` rows, which ``past_key_values``
also accepts (each call then returns new ``(keys, values)`` tensors, leaving the views untouched), for many
continuations of one prefix. Hub models stay on ``transformers``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Output:
    logits: torch.Tensor
    past_key_values: "KVCache" = None
    hidden_states: tuple = None
    loss: torch.Tensor = None


class _Base:
    """``FastGPT2.base_model``: calls the model with ``head=False`` (not a module, so it owns no parameters)."""

    def __init__(self, model):
        self.model = model

    def forward(self, input_ids=None, past_key_values=None, use_cache=False, output_hidden_states=False,
                inputs_embeds=None, attention_mask=None):
        return self.model(input_ids=input_ids, past_key_values=past_key_values, use_cache=use_cache,
                          output_hidden_states=output_hidden_states, inputs_embeds=inputs_embeds,
                          attention_mask=attention_mask, head=False)

    __call__ = forward


class KVCache:
    """Preallocated keys and values of every block for cached decoding (``past_key_values`` of
    :class:`FastGPT2`): ``length`` positions filled, room for ``max_len``."""

    def __init__(self, n_layer, batch, n_head, head_dim, max_len, dtype=torch.float32):
        self.k = [torch.empty(batch, n_head, max_len, head_dim, dtype=dtype) for _ in range(n_layer)]
        self.v = [torch.empty(batch, n_head, max_len, head_dim, dtype=dtype) for _ in range(n_layer)]
        self.length, self.max_len = 0, max_len

    def layer(self, i):
        return _LayerCache(self, i)

    def expand(self, batch: int) -> list:
        """Per-layer ``(keys, values)`` of the filled positions, broadcast (views, no copy) from one row to
        ``batch`` rows: the ``past_key_values`` of ``batch`` continuations of a one-row prefix."""
        if self.k[0].shape[0] != 1:
            raise ValueError(f"KVCache.expand needs a one-row cache; this one has {self.k[0].shape[0]} rows")
        n = self.length
        return [(k[:, :, :n].expand(batch, -1, -1, -1), v[:, :, :n].expand(batch, -1, -1, -1))
                for k, v in zip(self.k, self.v)]


class _LayerCache:
    def __init__(self, cache, i):
        self.cache, self.i = cache, i

    def append(self, k, v):
        c, n = self.cache, k.shape[2]
        if c.length + n > c.max_len:
            raise ValueError(f"KV cache full: {c.length} + {n} positions > {c.max_len}")
        c.k[self.i][:, :, c.length:c.length + n] = k
        c.v[self.i][:, :, c.length:c.length + n] = v
        return c.k[self.i][:, :, :c.length + n], c.v[self.i][:, :, :c.length + n]


class _Affine(nn.Module):
    """GPT-2's ``Conv1D``: ``y = x W + b`` with ``W`` stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class _Attention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = _Affine(d, 3 * d)
        self.c_proj = _Affine(d, d)

    def forward(self, x, past=None):
        B, T, D = x.shape
        H = self.n_head
        q, k, v = self.c_attn(x).split(D, dim=-1)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        if isinstance(past, _LayerCache):
            k, v = past.append(k, v)
        elif past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        S = k.shape[2]
        if S == T:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif T == 1:
            a = F.scaled_dot_product_attention(q, k, v)
        else:  # several new tokens after a cache: causal with the diagonal at the end
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.c_proj(a.transpose(1, 2).reshape(B, T, D)), (past if isinstance(past, _LayerCache) else (k, v))



class _MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = _Affine(d, 4 * d)
        self.c_proj = _Affine(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """One pre-LN block; ``forward(h, past=None) -> (h, (k, v))`` (the hidden states are the first argument, where
    the shared pre-hook edits them)."""

    def __init__(self, d, n_head, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = _Attention(d, n_head)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = _MLP(d)

    def forward(self, h, past=None):
        a, present = self.attn(self.ln_1(h), past)
        h = h + a
        return h + self.mlp(self.ln_2(h)), present

    def _qkv_full(self, hp, keep, B, T, which=slice(None)):
        """The attention projections of the packed tokens ``hp`` [N, D] (flat positions ``keep`` of a [B, T] grid),
        scattered back to [B, heads, T, head dim] (zeros at the positions not kept)."""
        D, H = hp.shape[-1], self.attn.n_head
        w, b = self.attn.c_attn.weight[:, which], self.attn.c_attn.bias[which]
        x = torch.addmm(b, self.ln_1(hp), w)
        n = x.shape[-1] // D
        full = x.new_zeros(B * T, n * D).index_copy(0, keep, x).view(B, T, n, H, D // H)
        return [full[:, :, i].transpose(1, 2) for i in range(n)]

    def forward_packed(self, hp, keep, B, T):
        """The block on the packed tokens ``hp`` [N, D] kept from a right-padded [B, T] grid (``keep``: their flat
        positions, a prefix of every row): attention runs on the grid (causal, so a kept position never sees a
        dropped one), everything position-wise on the kept tokens only."""
        q, k, v = self._qkv_full(hp, keep, B, T)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(B * T, -1).index_select(0, keep)
        g = hp + self.attn.c_proj(a)
        return g + self.mlp(self.ln_2(g))

    def forward_packed_at(self, hp, keep, B, T, pos, valid):
        """The block's output only at the positions ``pos[valid]`` ([B, R] and its mask) of rows of the grid:
        keys and values from every kept token, queries, projection and MLP only there. Returns [n valid, D]."""
        D = hp.shape[-1]
        H = self.attn.n_head
        k, v = self._qkv_full(hp, keep, B, T, slice(D, 3 * D))
        at = torch.searchsorted(keep, (torch.arange(B)[:, None] * T + pos).flatten()).clamp_max(len(keep) - 1)
        x = self.ln_1(hp.index_select(0, at))
        q = torch.addmm(self.attn.c_attn.bias[:D], x, self.attn.c_attn.weight[:, :D])
        q = q.view(B, -1, H, D // H).transpose(1, 2)                                       # [B, H, R, hd]
        mask = (torch.arange(T)[None, None, :] <= pos[..., None])[:, None]                # [B, 1, R, T]
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(-1, D)
        sel = valid.flatten().nonzero().squeeze(1)
        g = hp.index_select(0, at.index_select(0, sel)) + self.attn.c_proj(a.index_select(0, sel))
        return g + self.mlp(self.ln_2(g))


class FastGPT2(nn.Module):
    """``GPT2LMHeadModel``'s function (eval mode, no dropout) in plain torch. ``forward(input_ids, use_cache,
    past_key_values, output_hidden_states)`` returns an object with ``logits``, ``past_key_values`` (a
    :class:`KVCache`, preallocated for ``n_positions``, when ``use_cache``) and ``hidden_states`` (the embeddings, each block's output, the final norm: as transformers)."""

    def __init__(self, vocab_size, n_positions, n_layer, n_embd, n_head, layer_norm_epsilon=1e-5):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=vocab_size, n_positions=n_positions, n_layer=n_layer, n_embd=n_embd,
                                      n_head=n_head, layer_norm_epsilon=layer_norm_epsilon, hidden_size=n_embd,
                                      num_hidden_layers=n_layer, model_type="gpt2-torch")
        t = nn.Module()
        t.wte = nn.Embedding(vocab_size, n_embd)
        t.wpe = nn.Embedding(n_positions, n_embd)
        t.h = nn.ModuleList([Block(n_embd, n_head, layer_norm_epsilon) for _ in range(n_layer)])
        t.ln_f = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.transformer = t
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = t.wte.weight  # tied, as GPT-2

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids=None, use_cache=False, past_key_values=None, output_hidden_states=False,
                attention_mask=None, inputs_embeds=None, labels=None, head=True, **_):
        """As ``GPT2LMHeadModel.forward``: token ids [B, T] or ``inputs_embeds`` [B, T, D] (positions are added
        here), an optional cache (a :class:`KVCache` this model returned, or a list of per-layer ``(keys, values)``,
        see :meth:`KVCache.expand`), ``labels`` [B, T] for the mean next-token cross-entropy (``-100`` ignored).
        ``head=False`` skips the LM head (``logits`` is None)."""
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("FastGPT2 takes unpadded (or right-padded, mask-free) batches; got an attention_mask "
                             "with zeros")
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("FastGPT2: pass exactly one of input_ids and inputs_embeds")
        t, c = self.transformer, self.config
        B, T = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
        cache = past_key_values
        listed = isinstance(cache, (list, tuple))
        if use_cache and cache is None:
            cache = KVCache(c.n_layer, B, c.n_head, c.n_embd // c.n_head, c.n_positions, t.wte.weight.dtype)
        if cache is not None and not (listed or isinstance(cache, KVCache)):
            raise TypeError("FastGPT2: past_key_values must be the KVCache a previous call returned or a list of "
                            "per-layer (keys, values)")
        start = 0 if cache is None else (cache[0][0].shape[2] if listed else cache.length)
        if start + T > c.n_positions:
            raise ValueError(f"sequence of {start + T} tokens; the model has {c.n_positions} positions")
        x = t.wte(input_ids) if inputs_embeds is None else inputs_embeds
        h = x + t.wpe(torch.arange(start, start + T, device=x.device))
        hidden = [h] if output_hidden_states else None
        presents = []
        for i, blk in enumerate(t.h):
            h, present = blk(h, None if cache is None else (cache[i] if listed else cache.layer(i)))
            presents.append(present)
            if output_hidden_states and i < len(t.h) - 1:
                hidden.append(h)
        if cache is not None and not listed:
            cache.length += T
        h = t.ln_f(h)
        if output_hidden_states:
            hidden.append(h)
        logits = self.lm_head(h) if head or labels is not None else None
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        out_cache = (presents if listed else cache) if use_cache else None
        return Output(logits=logits if head else None, past_key_values=out_cache,
                      hidden_states=tuple(hidden) if output_hidden_states else None, loss=loss)

    @property
    def base_model(self):
        """The transformer without the LM head (as ``GPT2LMHeadModel.base_model``): same call, ``logits`` None."""
        return _Base(self)

    def get_input_embeddings(self):
        return self.transformer.wte

    def logits_from(self, layer: int, h, pos, valid=None):
        """Logits at positions ``pos`` [B, R] from the residual stream ``h`` [B, T, D] (right-padded rows) entering
        block ``layer``: what ``forward`` computes with that stream at ``layer``, [B, R, V]; with ``valid`` (a [B, R]
        mask) only at the valid positions, packed row by row: [n valid, V]. Only the tokens up to each row's last
        asked-for position are computed (causal attention), and the last block runs its queries, MLP and the head
        only at the asked-for positions."""
        blocks = self.transformer.h
        if not 0 <= layer < len(blocks):
            raise ValueError(f"layer {layer}: allowed 0..{len(blocks) - 1}")
        B, T, D = h.shape
        packed = valid is not None
        valid = torch.ones(pos.shape, dtype=torch.bool) if valid is None else valid.to(torch.bool)
        need = torch.where(valid, pos, torch.zeros_like(pos)).max(1).values + 1           # [B]
        keep = (torch.arange(T)[None, :] < need[:, None]).flatten().nonzero().squeeze(1)
        hp = h.reshape(B * T, D).index_select(0, keep)
        for blk in blocks[layer:-1]:
            hp = blk.forward_packed(hp, keep, B, T)
        out = self.lm_head(self.transformer.ln_f(blocks[-1].forward_packed_at(hp, keep, B, T, pos, valid)))
        return out if packed else out.view(B, pos.shape[1], -1)


def from_state(state: dict, *, vocab_size, n_positions, n_layer, n_embd, n_head, layer_norm_epsilon=1e-5):
    """A :class:`FastGPT2` (eval mode) holding a ``GPT2LMHeadModel`` state dict (mask buffers and the tied head may
    be absent)."""
    m = FastGPT2(vocab_size, n_positions, n_layer, n_embd, n_head, layer_norm_epsilon)
    own = m.state_dict()
    keep = {k: v for k, v in state.items() if k in own}
    missing = sorted(set(own) - set(keep) - {"lm_head.weight"})
    unexpected = sorted(k for k in state if k not in own and not (k.endswith(".attn.bias")
                                                                  or k.endswith(".attn.masked_bias")))
    if missing or unexpected:
        raise RuntimeError(f"state dict does not match a GPT-2 of this size (missing {missing}, unexpected "
                           f"{unexpected})")
    m.load_state_dict(keep, strict=False)
    for p in m.parameters():
        p.requires_grad_(False)
    return m.eval()


def from_hf(model) -> FastGPT2:
    """The same network as a trained ``GPT2LMHeadModel`` (GELU-tanh ``gelu_new``, tied head, no dropout at eval)."""
    c = model.config
    if getattr(c, "activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"activation {c.activation_function!r}: FastGPT2 implements GELU-tanh only")
    if getattr(c, "scale_attn_by_inverse_layer_idx", False) or getattr(c, "reorder_and_upcast_attn", False):
        raise ValueError("FastGPT2 implements GPT-2's default attention scaling only")
    state = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    return from_state(state, vocab_size=c.vocab_size, n_positions=c.n_positions, n_layer=c.n_layer,
                      n_embd=c.n_embd, n_head=c.n_head, layer_norm_epsilon=c.layer_norm_epsilon)


def make_fast_gpt2(vocab_size: int, *, n_layer: int = 4, n_embd: int = 128, n_head: int = 4, n_positions: int = 128,
                   seed: int = 0, device: str = "cpu", dtype=None, layer_norm_epsilon: float = 1e-5) -> FastGPT2:
    """A freshly initialised :class:`FastGPT2` (eval mode) holding the very weights that
    :func:`lib.common.tiny_lm.make_gpt2` gives for the same sizes and ``seed`` (``transformers``' GPT-2
    initialisation: weights and embeddings normal(0, 0.02), residual projections ``attn.c_proj`` and ``mlp.c_proj``
    normal(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorms 1 and 0), without importing ``transformers``.

    It draws from a generator seeded by ``seed`` (global random state untouched) in the order ``transformers`` 5
    consumes the stream: the modules' own initialisation at construction (embeddings normal(0, 1), every ``Conv1D``
    normal(0, 0.02)), then ``post_init``'s draws, which are the ones kept, then the LM head's (discarded: the head is
    tied to ``wte``). A unit test checks the equality, so a ``transformers`` release that changes the order shows
    there. ``dtype`` converts after initialisation, so a seed gives the same network in every precision."""
    import math

    from .params import check_int, check_seed

    for name, v in (("vocab_size", vocab_size), ("n_layer", n_layer), ("n_embd", n_embd), ("n_head", n_head),
                    ("n_positions", n_positions)):
        check_int(name, v, lo=1)
    if n_embd % n_head:
        raise ValueError(f"n_embd={n_embd} must be a multiple of n_head={n_head}")
    gen = torch.Generator().manual_seed(check_seed("seed", seed))
    V, P, d = vocab_size, n_positions, n_embd

    def normal(shape, std):
        return torch.empty(shape).normal_(0.0, std, generator=gen)

    normal((V, d), 1.0), normal((P, d), 1.0)  # construction (overwritten by post_init)
    for _ in range(n_layer):
        for shape in ((d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)):
            normal(shape, 0.02)
    m = FastGPT2(vocab_size, n_positions, n_layer, n_embd, n_head, layer_norm_epsilon)
    t, resid = m.transformer, 0.02 / math.sqrt(2 * n_layer)
    with torch.no_grad():
        t.wte.weight.copy_(normal((V, d), 0.02))
        t.wpe.weight.copy_(normal((P, d), 0.02))
        for blk in t.h:
            blk.attn.c_attn.weight.copy_(normal((d, 3 * d), 0.02))
            normal((d, d), 0.02)  # c_proj as a Conv1D, then again with the residual scale
            blk.attn.c_proj.weight.copy_(normal((d, d), resid))
            blk.mlp.c_fc.weight.copy_(normal((d, 4 * d), 0.02))
            normal((4 * d, d), 0.02)
            blk.mlp.c_proj.weight.copy_(normal((4 * d, d), resid))
            for ln in (blk.ln_1, blk.ln_2):
                ln.weight.fill_(1.0), ln.bias.zero_()
            for a in (blk.attn.c_attn, blk.attn.c_proj, blk.mlp.c_fc, blk.mlp.c_proj):
                a.bias.zero_()
        t.ln_f.weight.fill_(1.0), t.ln_f.bias.zero_()
    if dtype is not None:
        m = m.to(dtype=dtype)
    return m.to(device).eval()
