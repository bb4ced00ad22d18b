"""CDAS and its baselines on a causal LM: rank-1 distributed interchange interventions (DII) trained by distribution
matching, data-derived steering factors, clamping; DiffMean and Lang. (additive vectors).

Batched over concepts: each row of a batch carries its own concept's direction, so one forward pass trains or
steers every concept at once. The row-wise edits below are the formulas of :mod:`lib.common.lm_hooks`
(``interchange``, ``clamp_direction``, ``add_vector``) with one direction per row (unit tests check them against
the shared hooks row by row); they run through ``lib.common.lm_hooks.residual_hook``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from lib.common.lm_hooks import final_norm, n_layers, read_states, residual_hook, transformer_blocks
from lib.common.optim import AdamW

LOSSES = ("jsd", "ce", "fkl", "rkl")


# ----------------------------------------------------------------------------------------------------------- edits
def _unit(w):
    return w / w.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _after_bos(h):
    """[B, T, 1] mask: every position but the first (BOS). A one-position pass is a cached generation step (a new
    token, never the BOS: prompts hold at least BOS and the template), so it is edited."""
    m = torch.ones(h.shape[:2] + (1,), dtype=h.dtype, device=h.device)
    if h.shape[1] > 1:
        m[:, 0] = 0.0
    return m


def rowwise_interchange(W, source_states):
    """``h_t <- h_t + (w_b.h_s,b - w_b.h_t) w_b`` at every position after BOS, ``W``/``source_states``: [B, D]."""
    def edit(h):
        wu = _unit(W).to(h.dtype)
        s = (source_states.to(h.dtype) * wu).sum(-1)                    # [B]
        cur = torch.einsum("btd,bd->bt", h, wu)
        return h + _after_bos(h) * ((s[:, None] - cur)[..., None] * wu[:, None, :])
    return edit


def rowwise_clamp(W, values):
    """``h_t <- h_t + (v_b - w_b.h_t) w_b`` at every position after BOS (inference clamping)."""
    def edit(h):
        wu = _unit(W).to(h.dtype)
        cur = torch.einsum("btd,bd->bt", h, wu)
        v = torch.as_tensor(values, dtype=h.dtype, device=h.device)
        return h + _after_bos(h) * ((v[:, None] - cur)[..., None] * wu[:, None, :])
    return edit


def rowwise_steer(U, clamp, values, shifts):
    """Clamping and additive steering mixed in one batch (one row per method x concept x multiplier x prompt):
    ``h_t <- h_t + (k_b (v_b - u_b.h_t) + (1 - k_b) s_b) u_b`` with ``u_b`` unit, ``k_b`` 1 for a clamped row (value
    ``v_b``) and 0 for an additive row (shift ``s_b`` = multiplier x norm of the vector)."""
    def edit(h):
        uu = _unit(U).to(h.dtype)
        k = torch.as_tensor(clamp, dtype=h.dtype)[:, None]
        cur = torch.einsum("btd,bd->bt", h, uu)
        delta = k * (torch.as_tensor(values, dtype=h.dtype)[:, None] - cur) + (1 - k) * torch.as_tensor(
            shifts, dtype=h.dtype)[:, None]
        return h + _after_bos(h) * (delta[..., None] * uu[:, None, :])
    return edit


def rowwise_add(V, alphas):
    """``h_t <- h_t + a_b v_b`` at every position after BOS (additive steering)."""
    def edit(h):
        a = torch.as_tensor(alphas, dtype=h.dtype, device=h.device)
        return h + _after_bos(h) * (a[:, None, None] * V.to(h.dtype)[:, None, :])
    return edit


# ------------------------------------------------------------------------------------------------------------ data
def _pad(seqs, value=0):
    L = max(len(s) for s in seqs)
    out = torch.full((len(seqs), L), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


@dataclass
class PairSet:
    """DII training pairs, right-padded (causal attention: padding after a sequence never changes it).

    ``base``/``src`` ids [N, T]; ``bpos``/``spos`` [N, R] positions whose logits predict the response tokens
    ``resp`` [N, R] (``rmask`` marks real ones); ``src_at`` [N] the source position; ``concept`` [N] row's concept
    index; ``kind`` [N] +1 for D+ (elicitation) and -1 for D- (suppression)."""

    base: torch.Tensor
    src: torch.Tensor
    bpos: torch.Tensor
    spos: torch.Tensor
    resp: torch.Tensor
    rmask: torch.Tensor
    src_at: torch.Tensor
    concept: torch.Tensor
    kind: torch.Tensor
    src_logp: torch.Tensor = None   # [N, R, V] source next-token log-probabilities (no grad)
    src_h: torch.Tensor = None      # [N, D] source states at layer l
    tails: dict = field(default_factory=dict, repr=False)   # layer -> (model, Tail over ``base``): a cache

    def __len__(self):
        return self.base.shape[0]


def make_pairs(bb, quads: pd.DataFrame, concept_index: dict, pairs=("D+", "D-")) -> PairSet:
    """D+ : base x (+) y_c, source x_c (+) y_c;  D- : base x_c (+) y, source x (+) y (source response teacher-forced)."""
    rows = []
    for q in quads.itertuples(index=False):
        px, pc = bb.prompt_ids(q.negative_input), bb.prompt_ids(q.positive_input)
        y, yc = bb.response_ids(q.negative_output), bb.response_ids(q.positive_output)
        c = concept_index[q.concept]
        if "D+" in pairs:
            rows.append((px, pc, yc, c, +1))
        if "D-" in pairs:
            rows.append((pc, px, y, c, -1))
    R = max(len(r[2]) for r in rows)
    base, src, bpos, spos, resp, rmask = [], [], [], [], [], []
    for pb, ps, r, _, _ in rows:
        base.append(pb + r)
        src.append(ps + r)
        k = len(r)
        bpos.append([len(pb) - 1 + i if i < k else 0 for i in range(R)])
        spos.append([len(ps) - 1 + i if i < k else 0 for i in range(R)])
        resp.append(r + [0] * (R - k))
        rmask.append([1.0] * k + [0.0] * (R - k))
    return PairSet(base=_pad(base), src=_pad(src), bpos=torch.tensor(bpos), spos=torch.tensor(spos),
                   resp=torch.tensor(resp), rmask=torch.tensor(rmask),
                   src_at=torch.tensor([len(r[1]) - 1 for r in rows]), concept=torch.tensor([r[3] for r in rows]),
                   kind=torch.tensor([r[4] for r in rows]))


def _gather(logits, pos):
    return logits.gather(1, pos[..., None].expand(-1, -1, logits.shape[-1]))


@torch.no_grad()
def precompute_sources(model, ps: PairSet, layer: int, chunk: int = 256) -> PairSet:
    """Source next-token log-probs at the response positions and source states at the source position (frozen
    model, computed once)."""
    logps, hs = [], []
    for i in range(0, len(ps), chunk):
        sl = slice(i, i + chunk)
        if layer < n_layers(model):   # the layers below l once, then the tail at the response positions only
            tail = Tail(model, layer, ps.src[sl])
            h = tail.h
            logits = tail.logits(torch.arange(h.shape[0]), lambda x: x, ps.spos[sl]).float()
        else:
            states = {}

            def keep(x):
                states["h"] = x
                return x
            with residual_hook(model, layer, keep):
                logits = _gather(model(input_ids=ps.src[sl], use_cache=False).logits.float(), ps.spos[sl])
            h = states["h"]
        logps.append(torch.log_softmax(logits, -1))
        hs.append(h[torch.arange(h.shape[0]), ps.src_at[sl]].float())
    ps.src_logp, ps.src_h = torch.cat(logps), torch.cat(hs)
    return ps


def divergence(logp, logq, kind: str, q=None, qlogq=None):
    """Per-token divergence between the intervened distribution P (log-probs ``logp``) and the source's Q
    (``logq``; the source has no gradient, so ``q = exp(logq)`` and ``qlogq = sum q log q`` may be passed
    precomputed: the same value, fewer passes over the vocabulary)."""
    if kind not in LOSSES or kind == "ce":
        raise ValueError(f"loss {kind!r}; allowed: {tuple(k for k in LOSSES if k != 'ce')}")
    if kind == "rkl":   # KL(P || Q)
        return (logp.exp() * (logp - logq)).sum(-1)
    if q is None:
        q = logq.exp()
    if qlogq is None:
        qlogq = (q * logq).sum(-1)
    if kind == "fkl":   # KL(Q || P): forward KL from the counterfactual distribution
        return qlogq - (q * logp).sum(-1)
    # JSD = 1/2 KL(P || M) + 1/2 KL(Q || M), M = (P + Q) / 2, expanded: 1/2 [sum p log p + sum q log q
    #       - sum (p + q) log m]; p + q is floored at 1e-30 inside the log only (a token that both give less than
    #       1e-30 contributes < 1e-28 either way)
    p = logp.exp()
    s = p + q
    return 0.5 * ((p * logp).sum(-1) + qlogq - (s * (torch.log(s.clamp_min(1e-30)) - np.log(2.0))).sum(-1))


def _index_batch(obj, idx, n):
    if torch.is_tensor(obj):
        return obj[idx] if obj.ndim and obj.shape[0] == n and n > 1 else obj
    if isinstance(obj, tuple):
        return tuple(_index_batch(o, idx, n) for o in obj)
    return obj


class Tail:
    """The blocks from layer ``layer`` on, run from cached layer-``layer`` states (the backbone is frozen, so the
    states entering the intervened layer do not depend on w): the same logits as a full forward pass with the edit
    hooked at ``layer`` (a unit test checks it), at a fraction of the cost. The keyword arguments the model passes to
    its blocks (attention mask, rotary position embeddings) are captured once and replayed."""

    def __init__(self, model, layer: int, ids: torch.Tensor):
        from lib.common.fastgpt2 import FastGPT2

        self.model, self.layer, self.n = model, layer, ids.shape[0]
        self.fast = isinstance(model, FastGPT2)
        block = transformer_blocks(model)[layer]
        got = {}

        def pre(module, args, kwargs):
            got["h"] = (args[0] if args else kwargs["hidden_states"]).detach()
            got["kw"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            raise _Stop
        handle = block.register_forward_pre_hook(pre, with_kwargs=True)
        try:
            with torch.no_grad():
                model(input_ids=ids, use_cache=False)
        except _Stop:
            pass
        finally:
            handle.remove()
        self.h, self.kw = got["h"], got["kw"]
        self.kw.pop("use_cache", None)
        self.blocks = list(transformer_blocks(model))[layer:]
        self.norm = final_norm(model)
        self.head = model.get_output_embeddings()

    def logits(self, idx, edit, pos, valid=None):
        """Logits at positions ``pos`` [B, R] of rows ``idx`` after ``edit`` at the layer: [B, R, V], or with
        ``valid`` (a [B, R] mask) only the valid ones, packed row by row: [n valid, V]. With a
        :class:`~lib.common.fastgpt2.FastGPT2` only the tokens up to each row's last asked-for position are computed
        (causal attention) and the last block runs only at the asked-for positions."""
        if self.fast:
            h = self.h[idx]
            last = pos if valid is None else torch.where(valid.to(torch.bool), pos, torch.zeros_like(pos))
            return self.model.logits_from(self.layer, edit(h[:, :int(last.max()) + 1]), pos, valid)
        h = edit(self.h[idx])
        kw = {k: _index_batch(v, idx, self.n) for k, v in self.kw.items()}
        for blk in self.blocks:
            out = blk(h, **kw)
            h = out[0] if isinstance(out, tuple) else out
        h = self.norm(h)
        h = h.gather(1, pos[..., None].expand(-1, -1, h.shape[-1]))
        out = self.head(h)
        return out if valid is None else out[valid.to(torch.bool)]


class _Stop(Exception):
    pass


def tail_for(model, ps, layer):
    """A :class:`Tail` over the pairs' base sequences when the layer is inside the stack, else None."""
    if layer >= n_layers(model):
        return None
    got = ps.tails.get(layer)
    if got is None or got[0] is not model:   # frozen backbone: the states below the layer once per pair set
        got = ps.tails[layer] = (model, Tail(model, layer, ps.base))
    return got[1]


@dataclass
class TrainResult:
    W: torch.Tensor                       # [C, D] unit directions (DII) or free vectors (Lang.)
    losses: list = field(default_factory=list)
    steps: int = 0


def _orthogonal_init(C, D, gen):
    A = torch.randn(D, max(C, 1), generator=gen)
    Q, _ = torch.linalg.qr(A)
    return Q[:, :C].T.contiguous()


def _logits(model, tail, layer, ps, idx, edit, packed=False):
    """Response-position logits (float) of base rows ``idx`` under ``edit`` at ``layer``: [B, R, V], or with
    ``packed`` only the real response tokens (``ps.rmask``), row by row: [n tokens, V]."""
    valid = ps.rmask[idx] > 0 if packed else None
    if tail is not None:
        return tail.logits(idx, edit, ps.bpos[idx], valid).float()
    with residual_hook(model, layer, edit):
        logits = model(input_ids=ps.base[idx], use_cache=False).logits
    out = _gather(logits.float(), ps.bpos[idx])
    return out if valid is None else out[valid]


def _token_rows(ps, idx):
    """For the real response tokens of rows ``idx`` (packed row by row): their row in the batch, their flat index
    into ``[N * R]`` arrays of the pair set, and each row's token count."""
    valid = ps.rmask[idx] > 0
    R = ps.rmask.shape[1]
    rows = valid.nonzero()[:, 0]
    flat = (idx[:, None] * R + torch.arange(R)[None, :])[valid]
    return rows, flat, valid.sum(1).to(torch.float32)


def _per_pair_mean(tok, rows, counts):
    """Mean over each pair's response tokens of the packed per-token losses ``tok``, averaged over the pairs."""
    return (torch.zeros(len(counts), dtype=tok.dtype).index_add(0, rows, tok) / counts).mean()


def train_dii(model, ps: PairSet, layer: int, n_concepts: int, *, loss="jsd", epochs=3, lr=0.04, batch=8,
              grad_clip=1.0, seed=0, use_tail=True) -> TrainResult:
    """Train one rank-1 DII direction per concept (backbone frozen): ``loss`` "jsd" (CDAS), "ce" (DAS), "fkl"/"rkl"
    (KLDAS). AdamW (wd 0), linear decay to 0, no warm-up, gradient clipping, unit norm after every step."""
    if loss not in LOSSES:
        raise ValueError(f"parameter 'loss' got {loss!r}; allowed: {LOSSES}")
    gen = torch.Generator().manual_seed(seed)
    D = ps.src_h.shape[1]
    W = torch.nn.Parameter(_orthogonal_init(n_concepts, D, gen))
    opt = AdamW([W], lr=lr, weight_decay=0.0, max_grad_norm=grad_clip)
    by_c = [torch.nonzero(ps.concept == c).flatten() for c in range(n_concepts)]
    per = min(len(b) for b in by_c)
    n_batches = max(1, int(np.ceil(per / batch)))
    total = n_batches * epochs
    res = TrainResult(W=None)
    for p in model.parameters():
        p.requires_grad_(False)
    tail = tail_for(model, ps, layer) if use_tail else None
    V = ps.src_logp.shape[-1]
    src_logp = ps.src_logp.reshape(-1, V)
    src_p = src_logp.exp()
    src_qlogq = (src_p * src_logp).sum(-1)
    step = 0
    for _ in range(epochs):
        perms = [b[torch.randperm(len(b), generator=gen)] for b in by_c]
        for j in range(n_batches):
            idx = torch.cat([pm[j * batch:(j + 1) * batch] for pm in perms])
            Wrow = W[ps.concept[idx]]
            rows, flat, counts = _token_rows(ps, idx)
            logp = torch.log_softmax(_logits(model, tail, layer, ps, idx, rowwise_interchange(Wrow, ps.src_h[idx]),
                                             packed=True), -1)                     # [n tokens, V]
            if loss == "ce":
                tok = -logp.gather(-1, ps.resp.flatten()[flat][:, None]).squeeze(-1)
            else:
                tok = divergence(logp, src_logp[flat], loss, q=src_p[flat], qlogq=src_qlogq[flat])
            L = _per_pair_mean(tok, rows, counts)
            opt.zero_grad()
            L.backward()
            opt.lr = lr * (1.0 - step / total)
            opt.step()
            with torch.no_grad():
                W.data = _unit(W.data)
            res.losses.append(float(L.detach()))
            step += 1
    res.W, res.steps = W.detach().clone(), step
    return res


def train_lang(model, ps: PairSet, layer: int, n_concepts: int, *, epochs=3, lr=0.04, batch=8, grad_clip=1.0,
               seed=0, use_tail=True) -> TrainResult:
    """Lang. (AxBench): an additive vector ``h <- h + v`` at every position after BOS, trained by the LM loss
    (cross-entropy) of the concept response y_c given the neutral prompt x (the D+ pairs only)."""
    gen = torch.Generator().manual_seed(seed)
    D = ps.src_h.shape[1]
    V = torch.nn.Parameter(0.01 * torch.randn(n_concepts, D, generator=gen))
    opt = AdamW([V], lr=lr, weight_decay=0.0, max_grad_norm=grad_clip)
    by_c = [torch.nonzero((ps.concept == c) & (ps.kind > 0)).flatten() for c in range(n_concepts)]
    # the same number of optimizer steps as the DII methods (which also see the D- pairs): D+ batches, cycled
    n_rows = min(int((ps.concept == c).sum()) for c in range(n_concepts))
    total = max(1, int(np.ceil(n_rows / batch))) * epochs
    res = TrainResult(W=None)
    for p in model.parameters():
        p.requires_grad_(False)
    tail = tail_for(model, ps, layer) if use_tail else None
    queues = [[] for _ in by_c]
    for step in range(total):
        parts = []
        for k, b in enumerate(by_c):
            if len(queues[k]) < min(batch, len(b)):
                queues[k] = queues[k] + b[torch.randperm(len(b), generator=gen)].tolist()
            parts.append(queues[k][:batch])
            queues[k] = queues[k][batch:]
        idx = torch.tensor(sum(parts, []))
        rows, flat, counts = _token_rows(ps, idx)
        logp = torch.log_softmax(_logits(model, tail, layer, ps, idx, rowwise_add(V[ps.concept[idx]],
                                                                                  torch.ones(len(idx))), packed=True), -1)
        tok = -logp.gather(-1, ps.resp.flatten()[flat][:, None]).squeeze(-1)
        L = _per_pair_mean(tok, rows, counts)
        opt.zero_grad()
        L.backward()
        opt.lr = lr * (1.0 - step / total)
        opt.step()
        res.losses.append(float(L.detach()))
    step = total
    res.W, res.steps = V.detach().clone(), step
    return res


# ---------------------------------------------------------------------------------------------- factors, vectors
@torch.no_grad()
def prompt_states(bb, prompts, layer: int) -> torch.Tensor:
    """Layer-``layer`` states at the source position (the last template token) of each prompt: [N, D] (each
    distinct prompt is run once)."""
    uniq = list(dict.fromkeys(prompts))
    where = {p: k for k, p in enumerate(uniq)}
    ids = [bb.prompt_ids(p) for p in uniq]
    out = torch.zeros(len(ids), bb.model.config.n_embd if hasattr(bb.model.config, "n_embd")
                      else bb.model.config.hidden_size)
    for L in sorted({len(i) for i in ids}):
        rows = [k for k, i in enumerate(ids) if len(i) == L]
        h = read_states(bb.model, torch.tensor([ids[k] for k in rows]), [layer])[layer]
        out[rows] = h[:, -1].float()
    return out[torch.tensor([where[p] for p in prompts], dtype=torch.long)]


def gather_factors(W, h_pos, c_pos, h_neg, c_neg, n_concepts):
    """f+ = mean w_c.h over the concept's positive (x_c) prompts, f- = mean over its negative (x) prompts."""
    Wu = _unit(W)
    fp = torch.stack([(h_pos[c_pos == c] @ Wu[c]).mean() for c in range(n_concepts)])
    fn = torch.stack([(h_neg[c_neg == c] @ Wu[c]).mean() for c in range(n_concepts)])
    return fp, fn


def diffmean(h_pos, c_pos, h_neg, c_neg, n_concepts):
    """DiffMean: mean source-position state of positive prompts minus that of negative prompts, per concept."""
    return torch.stack([h_pos[c_pos == c].mean(0) - h_neg[c_neg == c].mean(0) for c in range(n_concepts)])


@dataclass
class Steerer:
    """One method's steering for every concept: ``kind`` "clamp" (DII methods: value m f) or "add" (h +- m v)."""

    name: str
    kind: str
    W: torch.Tensor
    f_pos: torch.Tensor = None
    f_neg: torch.Tensor = None

    def edit(self, concept_idx, mult, direction: str):
        c = torch.as_tensor(concept_idx)
        m = torch.as_tensor(mult, dtype=torch.float32)
        if self.kind == "clamp":
            f = self.f_pos if direction == "elicit" else self.f_neg
            return rowwise_clamp(self.W[c], m * f[c])
        sign = 1.0 if direction == "elicit" else -1.0
        return rowwise_add(self.W[c], sign * m)


# --------------------------------------------------------------------------------------------------- generation
def _cache_kw(model):
    """The keyword that passes the KV cache back: ``past_key_values`` (FastGPT2, older transformers) or ``cache``."""
    from lib.common.fastgpt2 import FastGPT2

    if isinstance(model, FastGPT2):
        return "past_key_values"
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def _cache_of(out):
    c = getattr(out, "cache", None)
    return c if c is not None else out.past_key_values


@torch.no_grad()
def cached_greedy(model, input_ids, max_new_tokens, eos_token_id):
    """Greedy decoding with the KV cache (equal rows' lengths, no padding). Position-wise edits (clamp, add) give
    the same tokens as :func:`lib.common.lm_hooks.greedy_generate`, which recomputes every position (a unit test
    checks it); returns [B, T + new], rows that emitted EOS keep emitting it."""
    kw = _cache_kw(model)
    out = model(input_ids=input_ids, use_cache=True)
    past, ids = _cache_of(out), input_ids
    done = torch.zeros(ids.shape[0], dtype=torch.bool)
    for step in range(int(max_new_tokens)):
        nxt = out.logits[:, -1].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
        done = done | (nxt == eos_token_id)
        ids = torch.cat([ids, nxt[:, None]], 1)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        out = model(input_ids=nxt[:, None], use_cache=True, **{kw: past})
        past = _cache_of(out)
    return ids


@torch.no_grad()
def generate(bb, prompts, layer, edit_fn=None, max_new=26):
    """Greedy responses to ``prompts`` (grouped by token length, no padding) under an optional row-wise edit
    ``edit_fn(rows) -> edit`` applied at ``layer``. Returns (texts, truncated flags)."""
    ids = [bb.prompt_ids(p) for p in prompts]
    texts, trunc = [None] * len(ids), [False] * len(ids)
    for L in sorted({len(i) for i in ids}):
        rows = [k for k, i in enumerate(ids) if len(i) == L]
        x = torch.tensor([ids[k] for k in rows])
        if edit_fn is None:
            out = cached_greedy(bb.model, x, max_new, bb.eos)
        else:
            with residual_hook(bb.model, layer, edit_fn(rows)):
                out = cached_greedy(bb.model, x, max_new, bb.eos)
        for r, k in enumerate(rows):
            new = out[r, L:].tolist()
            trunc[k] = bb.eos not in new
            texts[k] = bb.decode(new)
    return texts, trunc


@torch.no_grad()
def kl_to_unsteered(bb, ps: PairSet, layer, edit_fn, rows, tail=None, base_logp=None) -> np.ndarray:
    """Mean over response tokens of KL(p_unsteered || p_steered) on teacher-forced transcripts (``ps.base`` rows
    ``rows``), per row: the fidelity of an intervention on text it should leave alone. ``tail`` (a :class:`Tail`
    over ``ps.base``) and ``base_logp`` (the unsteered log-probs) make repeated calls cheap."""
    if base_logp is None:
        base_logp = torch.log_softmax(_logits(bb.model, tail, layer, ps, rows, lambda h: h), -1)
    lp1 = torch.log_softmax(_logits(bb.model, tail, layer, ps, rows, edit_fn), -1)
    kl = (base_logp.exp() * (base_logp - lp1)).sum(-1)
    m = ps.rmask[rows]
    return ((kl * m).sum(1) / m.sum(1)).numpy()
