"""Hidden states of a causal language model: last-token states per layer, and the one-step map F(v; π, t).

Conventions (Hugging Face ``output_hidden_states``): layer 0 is the embedding output (token + position),
layer ℓ = 1..L the output of block ℓ, and layer L includes the final LayerNorm. The paper's layers are 1..L.

Prompts of different lengths are never padded into one batch: :func:`last_token_states` groups prompts by
length, so no position or padding effect can fake (or hide) a collision.
"""
from __future__ import annotations

import copy
import functools
import inspect
from collections import defaultdict
from typing import Optional, Sequence

import torch


def n_layers(model) -> int:
    """Number of transformer blocks L (hidden states are indexed 0..L)."""
    cfg = model.config
    for name in ("n_layer", "num_hidden_layers"):
        if getattr(cfg, name, None) is not None:
            return int(getattr(cfg, name))
    raise ValueError(f"cannot tell the number of layers of {type(model).__name__}")


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def model_dtype(model) -> torch.dtype:
    return next(model.parameters()).dtype


def embedding_matrix(model) -> torch.Tensor:
    """The token embedding matrix E (|V| × d)."""
    return model.get_input_embeddings().weight


@functools.lru_cache(maxsize=None)
def _cache_kwarg(model_cls) -> str:
    # transformers 5 names the cache argument `cache` (`past_key_values` is deprecated); 4.x only has the latter
    return "cache" if "cache" in inspect.signature(model_cls.forward).parameters else "past_key_values"


def _forward(model, **kwargs):
    """Run the model's transformer without its LM head (every caller reads hidden states or the key/value
    cache, never logits; the head's |V|·d product per position would cost more than the blocks)."""
    base = model.base_model
    if "cache" in kwargs:
        kwargs[_cache_kwarg(type(base))] = kwargs.pop("cache")
    return base(**kwargs)


def _out_cache(out):
    c = getattr(out, "cache", None)
    return c if c is not None else out.past_key_values


@torch.no_grad()
def last_token_states(model, prompts: Sequence[Sequence[int]], *, layers: Optional[Sequence[int]] = None,
                      batch_size: int = 512) -> torch.Tensor:
    """Last-token hidden states of each prompt at each layer: a tensor ``[len(layers), N, d]``.

    ``layers`` defaults to all hidden states 0..L. Prompts are grouped by length (no padding) and run in
    batches of at most ``batch_size``; the result keeps the input order and the model's dtype.
    """
    if len(prompts) == 0:
        raise ValueError("no prompts")
    L = n_layers(model)
    layers = list(range(L + 1)) if layers is None else [int(x) for x in layers]
    if any(not 0 <= x <= L for x in layers):
        raise ValueError(f"layers must lie in 0..{L}; got {layers}")
    device = model_device(model)
    by_len = defaultdict(list)
    for i, p in enumerate(prompts):
        if len(p) == 0:
            raise ValueError(f"prompt {i} is empty")
        by_len[len(p)].append(i)
    out = None
    for length, idx in sorted(by_len.items()):
        for s in range(0, len(idx), batch_size):
            chunk = idx[s:s + batch_size]
            ids = torch.tensor([list(prompts[i]) for i in chunk], dtype=torch.long, device=device)
            hs = _forward(model, input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states
            h = torch.stack([hs[x][:, -1, :] for x in layers])
            if out is None:
                out = torch.empty(len(layers), len(prompts), h.shape[-1], dtype=h.dtype, device=device)
            out[:, chunk] = h
    return out


@torch.no_grad()
def sequence_states(model, prompt: Sequence[int], layer: int) -> torch.Tensor:
    """All positions' hidden states of one prompt at ``layer``: ``[T, d]`` (the observation SipIt inverts)."""
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model_device(model))
    return _forward(model, input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states[layer][0]


class PrefixCache:
    """The key/value cache of a fixed prefix π, reused for many one-token continuations of it."""

    def __init__(self, model, prefix: Sequence[int]):
        self.model = model
        self.prefix = [int(v) for v in prefix]
        self.cache = None
        if self.prefix:
            ids = torch.tensor([self.prefix], dtype=torch.long, device=model_device(model))
            with torch.no_grad():
                self.cache = _out_cache(_forward(model, input_ids=ids, use_cache=True))

    def expanded(self, batch: int):
        """A fresh copy of the cache for ``batch`` continuations (None for the empty prefix)."""
        if self.cache is None:
            return None
        if hasattr(self.cache, "expand"):  # lib.common.fastgpt2's KVCache: broadcast views of the prefix
            return self.cache.expand(batch)
        c = copy.deepcopy(self.cache)
        if batch > 1:
            layers = getattr(c, "layers", None)
            if layers and all(isinstance(getattr(x, "keys", None), torch.Tensor) for x in layers):
                # a broadcast view, not a copy: the model's cache update concatenates the new token's key/value
                # onto it (one copy, as with repeat_interleave; the same values)
                for x in layers:
                    x.keys = x.keys.expand(batch, *x.keys.shape[1:])
                    x.values = x.values.expand(batch, *x.values.shape[1:])
            else:
                c.batch_repeat_interleave(batch)
        return c


@torch.no_grad()
def one_step_states(model, prefix: Sequence[int], candidates, layer: int, *, batch_size: int = 512,
                    prefix_cache: Optional[PrefixCache] = None) -> torch.Tensor:
    """F(v; π, t) = h_t(π ⊕ v) at ``layer`` for every candidate token v: a tensor ``[B, d]``.

    Causality makes h_t depend only on π and v, so the prefix is run once (its key/value cache is reused)
    and each candidate costs one token. Equal to a plain forward of π ⊕ v up to float rounding.
    """
    cands = torch.as_tensor(candidates, dtype=torch.long, device=model_device(model)).reshape(-1)
    pc = prefix_cache if prefix_cache is not None else PrefixCache(model, prefix)
    outs = []
    for s in range(0, cands.numel(), batch_size):
        c = cands[s:s + batch_size]
        kwargs = dict(input_ids=c[:, None], output_hidden_states=True, use_cache=pc.cache is not None)
        if pc.cache is not None:
            kwargs["cache"] = pc.expanded(c.numel())
        outs.append(_forward(model, **kwargs).hidden_states[layer][:, -1, :])
    return torch.cat(outs)


def one_step_from_embedding(model, prefix_cache: PrefixCache, e: torch.Tensor, layer: int) -> torch.Tensor:
    """F(e; π, t) for *continuous* input vectors e ∈ R^d in place of the token embedding at position t.

    ``e`` is ``[d]`` (returns ``[d]``) or a batch ``[B, d]`` (returns ``[B, d]``). Position embeddings are
    added by the model as usual; the prefix comes from ``prefix_cache``. Differentiable in ``e`` (the
    gradient policy's proxy, paper Remark 18).
    """
    single = e.dim() == 1
    E = e.reshape(1 if single else e.shape[0], 1, -1)
    kwargs = dict(inputs_embeds=E, output_hidden_states=True, use_cache=prefix_cache.cache is not None)
    if prefix_cache.cache is not None:
        kwargs["cache"] = prefix_cache.expanded(E.shape[0])
    out = _forward(model, **kwargs).hidden_states[layer][:, -1, :]
    return out[0] if single else out
