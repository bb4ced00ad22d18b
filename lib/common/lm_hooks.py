"""Reading and editing a causal LM's residual stream: the shared hooks of the suite's interpretability papers.

Layer ``ℓ`` means what ``model(..., output_hidden_states=True).hidden_states[ℓ]`` holds (a unit test checks it):
``ℓ = 0`` the embeddings, ``0 < ℓ < L`` the residual stream entering block ``ℓ`` (the output of block ``ℓ - 1``),
``ℓ = L`` the final normalised state that feeds the LM head. Works for GPT-2 (the suite's tiny models) and the
usual hub families (Llama/Mistral/Qwen ``model.layers``, GPT-NeoX, OPT, GPT-J).

    with residual_hook(model, 2, add_vector(v, alpha=4.0)):       # steer: h <- h + 4 v at every position
        ids = greedy_generate(model, prompt_ids, max_new_tokens=20)
    with residual_hook(model, 2, clamp_direction(w, value=3.0)):  # clamp: h <- h + (3 - w.h) w
        ...
    states = read_states(model, ids, layers=[1, 2])              # {1: [B, T, D], 2: [B, T, D]}
    lp = sequence_logprob(model, ids, attention_mask=mask)        # sum of log p(x_t | x_<t) per sequence

An edit function takes the hidden states ``[B, T, D]`` (and the position offset of this forward pass, for cached
generation) and returns new states of the same shape. ``positions`` (a ``[B, T]`` boolean mask, or None for all)
limits an edit to some positions.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterable, Optional, Sequence

import torch

Edit = Callable[[torch.Tensor], torch.Tensor]


def _first(obj, *paths):
    for path in paths:
        cur = obj
        ok = True
        for part in path.split("."):
            if not hasattr(cur, part):
                ok = False
                break
            cur = getattr(cur, part)
        if ok:
            return cur
    return None


def transformer_blocks(model) -> torch.nn.ModuleList:
    """The model's list of transformer blocks."""
    blocks = _first(model, "transformer.h", "model.layers", "gpt_neox.layers", "model.decoder.layers",
                    "transformer.layers", "layers", "h")
    if blocks is None:
        raise ValueError(f"{type(model).__name__}: cannot find its transformer blocks (GPT-2, Llama-like, GPT-NeoX, "
                         f"OPT and GPT-J layouts are known)")
    return blocks


def final_norm(model) -> Optional[torch.nn.Module]:
    """The normalisation after the last block (GPT-2 ``ln_f``, Llama ``norm``, ...), or None."""
    return _first(model, "transformer.ln_f", "model.norm", "gpt_neox.final_layer_norm", "model.decoder.final_layer_norm",
                  "transformer.norm", "norm", "ln_f")


def n_layers(model) -> int:
    return len(transformer_blocks(model))


def _check_layer(model, layer: int) -> int:
    L = n_layers(model)
    if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer <= L:
        raise ValueError(f"layer got {layer!r}; allowed: an integer in [0, {L}] (0: embeddings, {L}: final state)")
    return layer


@contextlib.contextmanager
def residual_hook(model, layer: int, edit: Edit):
    """Apply ``edit`` to the residual stream at ``layer`` for every forward pass inside the block.

    ``layer < L``: a pre-hook on block ``layer`` rewrites its input; ``layer = L``: a hook on the final norm rewrites
    its output. Hooks nest (several layers, or several edits at one layer, applied in order of entry).
    """
    layer = _check_layer(model, layer)
    L = n_layers(model)
    if layer < L:
        block = transformer_blocks(model)[layer]

        def pre(module, args, kwargs):
            if args:
                return (edit(args[0]),) + tuple(args[1:]), kwargs
            key = "hidden_states"
            kwargs = dict(kwargs)
            kwargs[key] = edit(kwargs[key])
            return args, kwargs

        handle = block.register_forward_pre_hook(pre, with_kwargs=True)
    else:
        norm = final_norm(model)
        if norm is None:
            raise ValueError(f"{type(model).__name__}: no final norm to hook at layer {L}")

        def post(module, args, output):
            return edit(output)

        handle = norm.register_forward_hook(post)
    try:
        yield
    finally:
        handle.remove()


def _masked(h: torch.Tensor, new: torch.Tensor, positions: Optional[torch.Tensor]) -> torch.Tensor:
    if positions is None:
        return new
    mask = positions
    if mask.shape != h.shape[:2]:
        # cached generation sees only the newest positions: use the mask's last columns
        mask = mask[:, -h.shape[1]:]
    return torch.where(mask[..., None].to(torch.bool), new, h)


def add_vector(v: torch.Tensor, alpha: float = 1.0, positions: Optional[torch.Tensor] = None) -> Edit:
    """``h <- h + alpha v`` (steering by addition)."""
    def edit(h):
        return _masked(h, h + alpha * v.to(h.dtype), positions)
    return edit


def clamp_direction(w: torch.Tensor, value, positions: Optional[torch.Tensor] = None) -> Edit:
    """``h <- h + (value - w.h) w`` for a unit vector ``w``: the component along ``w`` set to ``value`` (a scalar or
    a ``[B]``/``[B, T]`` tensor), the orthogonal part kept."""
    w_unit = w / w.norm()

    def edit(h):
        wu = w_unit.to(h.dtype)
        cur = h @ wu
        val = torch.as_tensor(value, dtype=h.dtype, device=h.device)
        if val.ndim == 1:
            val = val[:, None]
        return _masked(h, h + (val - cur)[..., None] * wu, positions)
    return edit


def interchange(w: torch.Tensor, source: torch.Tensor, positions: Optional[torch.Tensor] = None) -> Edit:
    """Rank-1 distributed interchange: ``h_t <- h_t + (w.h_s - w.h_t) w`` with ``h_s = source`` (``[B, D]``: one
    source state per sequence, or ``[B, T, D]``); ``w`` is normalised."""
    w_unit = w / w.norm()

    def edit(h):
        wu = w_unit.to(h.dtype)
        s = source.to(h.dtype) @ wu
        if s.ndim == 1:
            s = s[:, None]
        return _masked(h, h + (s - h @ wu)[..., None] * wu, positions)
    return edit


def replace_states(new_states: torch.Tensor, positions: Optional[torch.Tensor] = None) -> Edit:
    """``h <- new_states`` (``[B, T, D]``, or ``[B, D]`` broadcast over positions) where ``positions`` is True."""
    def edit(h):
        new = new_states.to(h.dtype)
        if new.ndim == 2:
            new = new[:, None, :].expand_as(h)
        return _masked(h, new, positions)
    return edit


@contextlib.contextmanager
def capture(model, layers: Iterable[int]):
    """Record the residual stream at ``layers`` during the forward passes inside the block: yields a dict
    ``layer -> list of [B, T, D] tensors`` (one per forward pass)."""
    layers = [_check_layer(model, layer) for layer in layers]
    store: dict[int, list] = {layer: [] for layer in layers}
    with contextlib.ExitStack() as stack:
        for layer in layers:
            def keep(h, layer=layer):
                store[layer].append(h.detach())
                return h
            stack.enter_context(residual_hook(model, layer, keep))
        yield store


def read_states(model, input_ids: torch.Tensor, layers: Sequence[int], attention_mask: Optional[torch.Tensor] = None,
                *, grad: bool = False) -> dict[int, torch.Tensor]:
    """The residual stream at ``layers`` for one forward pass: ``{layer: [B, T, D]}`` (equal to
    ``output_hidden_states[layer]``)."""
    ctx = contextlib.nullcontext() if grad else torch.no_grad()
    with ctx, capture(model, layers) as store:
        model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    return {layer: vals[-1] for layer, vals in store.items()}


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``log p(x_t | x_<t)`` for t = 1..T-1: ``[B, T-1]`` (zero where ``attention_mask`` is 0)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    out = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    if attention_mask is not None:
        out = out * attention_mask[:, 1:].to(out.dtype)
    return out


def sequence_logprob(model, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                     start: int = 1) -> torch.Tensor:
    """Per sequence, ``Σ_{t >= start} log p(x_t | x_<t)`` (``[B]``): the sentence score of likelihood benchmarks."""
    if start < 1:
        raise ValueError("sequence_logprob: start must be >= 1 (the first token has no prediction)")
    return token_logprobs(model, input_ids, attention_mask)[:, start - 1:].sum(dim=1)


@torch.no_grad()
def greedy_generate(model, input_ids: torch.Tensor, max_new_tokens: int, *, eos_token_id: Optional[int] = None,
                    attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Greedy decoding that recomputes the whole sequence each step (no KV cache), so residual edits apply at every
    position exactly as in a single forward pass. Returns ``[B, T + new]``; after ``eos_token_id`` a sequence keeps
    emitting it. Right-padded batches need ``attention_mask`` (new tokens are appended after each row's last real
    token only when rows have equal length: pad on the left for mixed lengths)."""
    ids = input_ids
    mask = attention_mask
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for _ in range(int(max_new_tokens)):
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, -1]
        nxt = logits.argmax(dim=-1)
        if eos_token_id is not None:
            nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
            done = done | (nxt == eos_token_id)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        if mask is not None:
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        if eos_token_id is not None and bool(done.all()):
            break
    return ids
