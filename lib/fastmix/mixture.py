"""FastMix's machinery: the uniform-sampling sampler, the alpha-weighted loss (the reparameterisation lemma), the
one-step hypergradient (head-only as in the official code, full as in the paper), n2-step unrolled hypergradients,
the alternating search, RegMix-lite, DoReMi (small form), and training/evaluating a model on a mixture. A target is
either rows (every token counts, target A) or a ``Masked`` batch (answer tokens only, target B).

Counting: every method reports ``proxy_steps`` (optimizer steps of proxy models) and ``passes`` (forward+backward
passes of a proxy, hypergradient and evaluation passes included).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F


# ---------------------------------------------------------------- sampling
class MixtureSampler:
    """Token streams per source; ``batch(counts)`` draws ``counts[i]`` windows of ``seq_len + 1`` tokens from
    source i and returns ``(x, group)`` (rows grouped by source). A source with an empty stream is random-token
    noise (uniform ids in [1, vocab))."""

    def __init__(self, streams, seq_len: int, vocab_size: int, seed: int):
        self.streams = [None if s is None or len(s) == 0 else torch.as_tensor(s, dtype=torch.long) for s in streams]
        for s in self.streams:
            if s is not None and s.numel() < seq_len + 2:
                raise ValueError(f"a source stream has {s.numel()} tokens; need more than seq_len + 1 = {seq_len + 1}")
        self.k, self.seq_len, self.vocab_size = len(streams), seq_len, vocab_size
        self.gen = torch.Generator().manual_seed(seed)

    def rows(self, i: int, n: int) -> torch.Tensor:
        L = self.seq_len + 1
        s = self.streams[i]
        if n == 0:
            return torch.zeros(0, L, dtype=torch.long)
        if s is None:
            return torch.randint(1, self.vocab_size, (n, L), generator=self.gen)
        starts = torch.randint(0, s.numel() - L, (n,), generator=self.gen)
        return s[starts[:, None] + torch.arange(L)]

    def batch(self, counts):
        counts = [int(c) for c in counts]
        if len(counts) != self.k or min(counts) < 0:
            raise ValueError(f"counts must be {self.k} non-negative integers; got {counts}")
        x = torch.cat([self.rows(i, c) for i, c in enumerate(counts)])
        group = torch.repeat_interleave(torch.arange(self.k), torch.tensor(counts))
        return x, group

    def uniform(self, per_source: int):
        return self.batch([per_source] * self.k)

    def sampled(self, alpha, n_rows: int):
        """Rows whose sources are drawn i.i.d. from Cat(alpha) (the original, sampling formulation)."""
        a = torch.as_tensor(np.asarray(alpha, dtype=float))
        src = torch.multinomial(a, n_rows, replacement=True, generator=self.gen)
        return self.batch(torch.bincount(src, minlength=self.k).tolist())


def stream_rows(stream, n: int, seq_len: int, seed: int):
    """``n`` seeded windows of ``seq_len + 1`` tokens from one stream (fixed evaluation/validation batches)."""
    s = torch.as_tensor(stream, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, s.numel() - seq_len - 1, (n,), generator=gen)
    return s[starts[:, None] + torch.arange(seq_len + 1)]


# ---------------------------------------------------------------- losses
def hidden_and_logits(model, x, params=None):
    """Final hidden states (B, T, d) and logits (B, T, V) of ``model`` on the rows' first ``seq_len`` tokens."""
    return model.forward(x[:, :-1], params)


def per_row_loss(logits, x):
    """Mean next-token cross-entropy of each row (B,)."""
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none")
    return ce.view(x.shape[0], -1).mean(1)


def weighted_lm_loss(row_loss, group, alpha):
    """Per-row weights alpha[group], normalised by their sum in the batch (as the official code). With ``b`` rows
    per source this equals sum_i alpha_i L_i (the lemma's uniform-sampling, alpha-weighted objective)."""
    w = torch.as_tensor(alpha, dtype=row_loss.dtype)[group]
    return (w * row_loss).sum() / w.sum()


class Masked(NamedTuple):
    """A target scored on some tokens only (target B: the answer tokens): rows ``x`` (B, T + 1) and ``mask`` (B, T),
    True where the predicted token ``x[:, t + 1]`` counts. A plain tensor as a target means every token counts."""

    x: torch.Tensor
    mask: torch.Tensor


def encode_items(tok, items, seq_len: int) -> Masked:
    """(prompt, answer) items -> one row each: [0] + prompt ids + answer ids, right-padded with 0 (``<|endoftext|>``,
    also the documents' separator in the training streams); prompt and answer are encoded apart, so the mask covers
    exactly the answer's tokens. A prompt too long for ``seq_len + 1`` tokens loses its first tokens."""
    from lib.common.bpe import encode_texts

    L = seq_len + 1
    P, A = encode_texts(tok, [p for p, _ in items]), encode_texts(tok, [a for _, a in items])
    x, mask = torch.zeros(len(items), L, dtype=torch.long), torch.zeros(len(items), seq_len, dtype=torch.bool)
    for r, (pi, ai) in enumerate(zip(P, A)):
        if not ai or len(ai) > L - 2:
            raise ValueError(f"item {r}: answer {items[r][1]!r} has {len(ai)} tokens; allowed 1..{L - 2}")
        ids = [0] + pi[len(pi) - min(len(pi), L - 1 - len(ai)):] + ai
        x[r, :len(ids)] = torch.tensor(ids)
        mask[r, len(ids) - len(ai) - 1:len(ids) - 1] = True
    return Masked(x, mask)


def masked_loss(logits, x, mask):
    """Mean next-token cross-entropy over the masked target positions (target B's answer-token loss)."""
    m = mask.to(logits.dtype)
    return (per_token_loss(logits, x) * m).sum() / m.sum()


def target_loss(model, target, params=None):
    """The target's loss: the mean over all tokens for rows, over the masked tokens for a :class:`Masked`."""
    if isinstance(target, Masked):
        return masked_loss(hidden_and_logits(model, target.x, params)[1], target.x, target.mask)
    return per_row_loss(hidden_and_logits(model, target, params)[1], target).mean()


def source_means(row_loss, group, k):
    return torch.zeros(k, dtype=row_loss.dtype).index_add(0, group, row_loss) / torch.bincount(group, minlength=k)


# ---------------------------------------------------------------- gradients
def head_grad_rows(h, logits, x):
    """Per-row gradient of the row's mean CE w.r.t. the LM-head weight (V x d), hidden states held fixed: (B, V, d)."""
    p = torch.softmax(logits.detach(), -1)
    p = p - F.one_hot(x[:, 1:], p.shape[-1]).to(p.dtype)
    return torch.einsum("btv,btd->bvd", p, h.detach()) / p.shape[1]


def head_grads_by_source(h, logits, x, group, k):
    """Gradient of each source's mean loss w.r.t. the LM head, (k, V*d), from one forward pass."""
    g = head_grad_rows(h, logits, x).flatten(1)
    return torch.zeros(k, g.shape[1], dtype=g.dtype).index_add(0, group, g) / torch.bincount(group, minlength=k)[:, None]


def full_grads(model, losses, params):
    """Flattened gradients of each scalar in ``losses`` w.r.t. ``params`` (one backward pass each)."""
    out = []
    for j, L in enumerate(losses):
        gs = torch.autograd.grad(L, params, retain_graph=j < len(losses) - 1, allow_unused=True)
        out.append(torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(gs, params)]))
    return torch.stack(out)


def one_step_hypergrad(model, train_x, group, val_x, k, *, eta, beta=0.0, head_only=True):
    """g_i = d l_target(w - eta sum_j alpha_j grad L_j) / d alpha_i at first order
    = -eta (grad l_val + beta grad L_bar) . grad L_i, both gradients at the current w (as the official code).
    Returns (g (k,), passes)."""
    if head_only:
        with torch.no_grad():
            h, lg = hidden_and_logits(model, train_x)
            G = head_grads_by_source(h, lg, train_x, group, k)
            if isinstance(val_x, Masked):  # the LM-head gradient of the answer-token loss
                hv, lv = hidden_and_logits(model, val_x.x)
                p = torch.softmax(lv, -1) - F.one_hot(val_x.x[:, 1:], lv.shape[-1]).to(lv.dtype)
                m = val_x.mask.to(lv.dtype)[..., None]
                gv = (torch.einsum("btv,btd->vd", p * m, hv) / m.sum()).flatten()
            else:
                hv, lv = hidden_and_logits(model, val_x)
                gv = head_grad_rows(hv, lv, val_x).mean(0).flatten()
        passes = 2  # one forward each; the head gradients are closed-form
    else:
        params = [p for p in model.parameters() if p.requires_grad]
        # source i's mean loss depends only on its own rows: one forward/backward on each source's rows gives all
        # k gradients for the cost of one pass over the batch
        G = torch.cat([full_grads(model, [per_row_loss(hidden_and_logits(model, train_x[group == i])[1],
                                                       train_x[group == i]).mean()], params) for i in range(k)])
        if isinstance(val_x, Masked):
            gv = full_grads(model, [target_loss(model, val_x)], params)[0]
        else:
            hv, lv = hidden_and_logits(model, val_x)
            gv = full_grads(model, [per_row_loss(lv, val_x).mean()], params)[0]
        passes = 2  # one forward+backward over the training rows (split by source), one over the validation rows
    direction = gv + beta * G.mean(0)
    return (-eta * (G @ direction)).double().numpy(), passes


def unrolled_hypergrad(model, sampler, val_x, alpha, *, n2, eta, per_source, beta=0.0, head_only=True):
    """d l_target(w_{n2}) / d alpha by autograd through n2 SGD steps w_{j+1} = w_j - eta grad sum_i alpha_i L_i
    (the proxy's parameters swapped for the unrolled ones; head_only unrolls only the LM head, the body held fixed). Returns (g, passes)."""
    a = torch.tensor(np.asarray(alpha, dtype=float), dtype=torch.float32, requires_grad=True)
    names = ["lm_head.weight"] if head_only else [n for n, p in model.named_parameters() if p.requires_grad]
    base = dict(model.named_parameters())
    w = {n: base[n].detach().clone().requires_grad_(True) for n in names}
    fixed = {n: p.detach() for n, p in base.items() if n not in w}
    k = sampler.k
    for _ in range(n2):
        x, group = sampler.uniform(per_source)
        lg = hidden_and_logits(model, x, {**fixed, **w})[1]
        L = weighted_lm_loss(per_row_loss(lg, x), group, a)
        gs = torch.autograd.grad(L, list(w.values()), create_graph=True)
        w = {n: p - eta * g for (n, p), g in zip(w.items(), gs)}
    if isinstance(val_x, Masked):
        target = target_loss(model, val_x, {**fixed, **w})
    else:
        lv = hidden_and_logits(model, val_x, {**fixed, **w})[1]
        target = per_row_loss(lv, val_x).mean()
    if beta:
        x, group = sampler.uniform(per_source)
        lt = hidden_and_logits(model, x, {**fixed, **w})[1]
        target = target + beta * source_means(per_row_loss(lt, x), group, k).mean()
    (g,) = torch.autograd.grad(target, a)
    return g.double().numpy(), 2 * n2 + 1 + (1 if beta else 0)


def entropy_grad(alpha, lam):
    """d/d alpha of lam * sum_i alpha_i log alpha_i."""
    return lam * (np.log(np.maximum(alpha, 1e-12)) + 1.0)


def softmax_chain(alpha, g):
    """d/dz_j = alpha_j (g_j - sum_i alpha_i g_i) for alpha = softmax(z)."""
    return alpha * (g - float(alpha @ g))


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


class AdamZ:
    """AdamW on the mixture logits z (numpy; torch.optim.AdamW's update rule, weight decay 0 by default)."""

    def __init__(self, z, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0):
        self.z, self.lr, self.b1, self.b2, self.eps, self.wd = np.array(z, dtype=float), lr, *betas, eps, weight_decay
        self.m, self.v, self.t = np.zeros_like(self.z), np.zeros_like(self.z), 0

    def step(self, grad):
        self.t += 1
        self.z *= 1 - self.lr * self.wd
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad**2
        mh, vh = self.m / (1 - self.b1**self.t), self.v / (1 - self.b2**self.t)
        self.z -= self.lr * mh / (np.sqrt(vh) + self.eps)
        return self.z


# ---------------------------------------------------------------- training
class TinyGPT:
    """A GPT-2 from ``lib.common.tiny_lm.make_gpt2`` (its seeded init, its architecture: learned positions, pre-LN
    blocks, GELU-tanh MLP, LayerNorm eps 1e-5, untied LM head, no dropout) run as a plain torch function of its
    parameter dict. Same numbers as the transformers forward (unit-tested); about 30% less CPU per training step
    at this size (no module dispatch, one matrix product per projection), and the parameters can be swapped
    (``params=``) for the unrolled n2 > 1 hypergradient. ``eager=True`` computes attention by hand, which supports
    the double backward that the CPU's fused attention kernel lacks."""

    def __init__(self, hf_model, eager=False):
        cfg = hf_model.config
        if cfg.tie_word_embeddings or cfg.activation_function != "gelu_new" or cfg.layer_norm_epsilon != 1e-5:
            raise ValueError("TinyGPT mirrors an untied GPT-2 with gelu_new and LayerNorm eps 1e-5")
        self.n_layer, self.n_head, self.n_embd, self.eager = cfg.n_layer, cfg.n_head, cfg.n_embd, eager
        self.params = {n: p.detach().clone().requires_grad_(True) for n, p in hf_model.named_parameters()}

    def parameters(self):
        return list(self.params.values())

    def named_parameters(self):
        return list(self.params.items())

    def train(self):  # no dropout: kept for the nn.Module-like call sites
        return self

    eval = train

    def forward(self, x, params=None):
        """x (B, T) token ids -> (hidden (B, T, d), logits (B, T, V))."""
        p = self.params if params is None else params
        B, T = x.shape
        d, H = self.n_embd, self.n_head
        hd = d // H
        h = (p["transformer.wte.weight"][x] + p["transformer.wpe.weight"][:T]).reshape(B * T, d)
        for i in range(self.n_layer):
            q = f"transformer.h.{i}."
            a = F.layer_norm(h, (d,), p[q + "ln_1.weight"], p[q + "ln_1.bias"], 1e-5)
            qkv = torch.addmm(p[q + "attn.c_attn.bias"], a, p[q + "attn.c_attn.weight"])
            qq, kk, vv = qkv.view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
            if self.eager:
                s = (qq @ kk.transpose(-1, -2)) / hd**0.5
                s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
                o = torch.softmax(s, -1) @ vv
            else:
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
            h = h + torch.addmm(p[q + "attn.c_proj.bias"], o.transpose(1, 2).reshape(B * T, d),
                                p[q + "attn.c_proj.weight"])
            a = F.layer_norm(h, (d,), p[q + "ln_2.weight"], p[q + "ln_2.bias"], 1e-5)
            a = F.gelu(torch.addmm(p[q + "mlp.c_fc.bias"], a, p[q + "mlp.c_fc.weight"]), approximate="tanh")
            h = h + torch.addmm(p[q + "mlp.c_proj.bias"], a, p[q + "mlp.c_proj.weight"])
        h = F.layer_norm(h, (d,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], 1e-5)
        return h.view(B, T, d), (h @ p["lm_head.weight"].t()).view(B, T, -1)


def make_proxy(vocab_size, n_layer, n_embd, seq_len, seed, attn="sdpa"):
    """A tiny GPT-2 (``make_gpt2``'s seeded init) with an untied LM head (as lit_gpt's tinyllama proxy), so
    "head-only" is a separate matrix; run as :class:`TinyGPT`. ``attn="eager"`` for double backward (n2 > 1)."""
    from lib.common.tiny_lm import make_gpt2

    if attn not in ("sdpa", "eager"):
        raise ValueError(f"attn got {attn!r}; allowed: 'sdpa', 'eager'")
    hf = make_gpt2(vocab_size, n_layer=n_layer, n_embd=n_embd, n_head=max(1, n_embd // 32), n_positions=seq_len,
                   seed=seed, tie_word_embeddings=False)
    return TinyGPT(hf, eager=attn == "eager")


def _opt(model, lr):
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0, foreach=True)


def _step(model, opt, loss):
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
    opt.step()


@dataclass
class SearchResult:
    alpha: np.ndarray
    trajectory: np.ndarray  # (n_outer + 1, k): softmax(z) after each outer step (row 0: init)
    outer_steps: list
    proxy_steps: int
    passes: int
    train_losses: list = field(default_factory=list)


def fastmix_search(model, sampler, val_x, *, steps, n1=10, n2=1, lr=3e-3, lr_mix=0.01, lam=0.0, beta=0.0,
                   head_only=True, per_source=8, z0=None):
    """Algorithm 1: n1 AdamW steps on w with sum_i alpha_i L_i (uniform sampling), then one AdamW step on z by the
    hypergradient (n2 = 1: closed form; n2 > 1: unrolled), repeated until ``steps`` inner steps. Read-out: final
    alpha = softmax(z)."""
    k = sampler.k
    z = np.zeros(k) if z0 is None else np.asarray(z0, dtype=float).copy()
    zopt, opt = AdamZ(z, lr_mix), _opt(model, lr)
    traj, outer, losses, passes = [softmax(z)], [0], [], 0
    for t in range(1, steps + 1):
        alpha = softmax(zopt.z)
        model.train()
        x, group = sampler.uniform(per_source)
        loss = weighted_lm_loss(per_row_loss(hidden_and_logits(model, x)[1], x), group, alpha)
        _step(model, opt, loss)
        passes += 1
        losses.append(float(loss.detach()))
        if t % n1 == 0:
            model.eval()
            if n2 == 1:
                g, p = one_step_hypergrad(model, x, group, val_x, k, eta=lr, beta=beta, head_only=head_only)
            else:
                g, p = unrolled_hypergrad(model, sampler, val_x, alpha, n2=n2, eta=lr, per_source=per_source,
                                          beta=beta, head_only=head_only)
            passes += p
            zopt.step(softmax_chain(alpha, g + entropy_grad(alpha, lam)))
            traj.append(softmax(zopt.z))
            outer.append(t)
    model.eval()
    return SearchResult(softmax(zopt.z), np.array(traj), outer, steps, passes, losses)


def train_on_mixture(model, sampler, alpha, *, steps, lr=3e-3, n_rows=48):
    """Train ``model`` for ``steps`` AdamW steps on batches whose rows are sampled from Cat(alpha)."""
    opt = _opt(model, lr)
    model.train()
    for _ in range(steps):
        x, _g = sampler.sampled(alpha, n_rows)
        _step(model, opt, per_row_loss(hidden_and_logits(model, x)[1], x).mean())
    model.eval()
    return model


@torch.no_grad()
def eval_loss(model, x, chunk=64):
    model.eval()
    if isinstance(x, Masked):  # answer-token loss: the sum over masked tokens of all chunks / their count
        tot = sum(float((per_token_loss(hidden_and_logits(model, x.x[i:i + chunk])[1], x.x[i:i + chunk])
                         * x.mask[i:i + chunk]).sum()) for i in range(0, len(x.x), chunk))
        return tot / float(x.mask.sum())
    out = [per_row_loss(hidden_and_logits(model, x[i:i + chunk])[1], x[i:i + chunk]) for i in range(0, len(x), chunk)]
    return float(torch.cat(out).mean())


def dirichlet_candidates(k, n, rng, conc=1.0):
    """``n`` points of the simplex Delta_k, Dirichlet(conc)."""
    return rng.dirichlet(np.full(k, conc), size=n)


@dataclass
class RegMixResult:
    alpha: np.ndarray
    mixtures: np.ndarray  # (M, k)
    losses: np.ndarray  # (M,) target validation loss of each proxy
    proxy_steps: int
    passes: int
    extra_losses: dict = field(default_factory=dict)  # name -> (M,) loss of each proxy on another target


def regmix_lite(proxy_factory, sampler, val_x, *, n_proxies, steps, rng, lr=3e-3, n_rows=48, n_candidates=100_000,
                top=10, seed=0, extra_targets=None):
    """RegMix-lite: M proxies on Dirichlet mixtures, a GradientBoostingRegressor mixture -> target loss, the mean of
    the top-``top`` predicted mixtures among ``n_candidates`` random simplex points (:func:`regmix_fit`)."""
    k = sampler.k
    mixes = dirichlet_candidates(k, n_proxies, rng)
    losses, extra = [], {name: [] for name in (extra_targets or {})}
    for m in range(n_proxies):
        model = train_on_mixture(proxy_factory(m), sampler, mixes[m], steps=steps, lr=lr, n_rows=n_rows)
        losses.append(eval_loss(model, val_x))
        for name, t in (extra_targets or {}).items():  # the same proxies scored on another target (no RNG drawn)
            extra[name].append(eval_loss(model, t))
    losses = np.array(losses)
    alpha = regmix_fit(mixes, losses, rng, n_candidates=n_candidates, top=top, seed=seed)
    return RegMixResult(alpha, mixes, losses, n_proxies * steps, n_proxies * (steps + 1),
                        {name: np.array(v) for name, v in extra.items()})


def regmix_fit(mixes, losses, rng, *, n_candidates=100_000, top=10, seed=0):
    """RegMix-lite's read-out from (mixture, target loss) pairs: a GradientBoostingRegressor mixture -> loss, then
    the mean of the ``top`` best-predicted of ``n_candidates`` Dirichlet(1) points of the simplex."""
    from sklearn.ensemble import GradientBoostingRegressor

    mixes, losses = np.asarray(mixes, dtype=float), np.asarray(losses, dtype=float)
    if mixes.ndim != 2 or len(mixes) != len(losses) or len(mixes) < 2:
        raise ValueError(f"regmix_fit needs >= 2 (mixture, loss) pairs; got mixtures {mixes.shape}, losses "
                         f"{losses.shape}")
    reg = GradientBoostingRegressor(n_estimators=100, max_depth=2, learning_rate=0.1, random_state=seed)
    reg.fit(mixes, losses)
    cand = dirichlet_candidates(mixes.shape[1], n_candidates, rng)
    best = np.argsort(reg.predict(cand))[:top]
    alpha = cand[best].mean(0)
    return alpha / alpha.sum()


# ---------------------------------------------------------------- DoReMi (Xie et al., 2023), small form
def per_token_loss(logits, x):
    """Next-token cross-entropy of every position (B, T)."""
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none")
    return ce.view(x.shape[0], -1)


def doremi_update(alpha, excess, eta, smoothing):
    """One exponentiated-gradient step of DoReMi's domain weights: alpha' ∝ alpha * exp(eta * excess), then mixed
    with uniform: (1 - smoothing) alpha' + smoothing / k."""
    a = np.asarray(alpha, dtype=float) * np.exp(eta * (np.asarray(excess, dtype=float) - np.max(excess)))
    a /= a.sum()
    return (1 - smoothing) * a + smoothing / len(a)


@dataclass
class DoReMiResult:
    alpha: np.ndarray  # the average of the per-step domain weights (DoReMi's read-out)
    trajectory: np.ndarray  # (steps, k)
    proxy_steps: int  # reference steps + proxy steps
    passes: int


def doremi(ref_model, proxy_model, sampler, *, steps, ref_steps=None, lr=3e-3, eta=1.0, smoothing=1e-3,
           per_source=8):
    """DoReMi: a reference model trained ``ref_steps`` steps on the uniform mixture; then a proxy trained by Group DRO
    on uniformly sampled batches: each step, the per-domain excess loss lambda_i (token losses minus the reference's,
    clipped at 0, averaged over domain i's tokens) moves the domain weights by ``doremi_update``, and the proxy takes
    an AdamW step on sum_i alpha_i lambda_i. The mixture is the average weight over the steps. It never sees the
    target: DoReMi optimises the worst-case excess loss over the training domains."""
    k = sampler.k
    ref_steps = steps if ref_steps is None else ref_steps
    opt = _opt(ref_model, lr)
    for _ in range(ref_steps):
        x, _g = sampler.uniform(per_source)
        _step(ref_model, opt, per_row_loss(hidden_and_logits(ref_model, x)[1], x).mean())
    ref_model.eval()
    alpha, traj, opt = np.full(k, 1 / k), [], _opt(proxy_model, lr)
    for _ in range(steps):
        x, group = sampler.uniform(per_source)
        tok = per_token_loss(hidden_and_logits(proxy_model, x)[1], x)
        with torch.no_grad():
            ref_tok = per_token_loss(hidden_and_logits(ref_model, x)[1], x)
        exc = (tok - ref_tok).clamp_min(0.0).mean(1)  # rows of one source have equal length: row means suffice
        lam = source_means(exc.detach(), group, k)
        alpha = doremi_update(alpha, lam.double().numpy(), eta, smoothing)
        traj.append(alpha)
        w = torch.as_tensor(alpha, dtype=exc.dtype)
        _step(proxy_model, opt, (w * source_means(exc, group, k)).sum())
    proxy_model.eval()
    traj = np.array(traj)
    return DoReMiResult(traj.mean(0), traj, ref_steps + steps, ref_steps + 2 * steps)
