"""A Huginn-shaped depth-recurrent language model built from ``transformers`` GPT-2 blocks.

    e   = P(E x)                              prelude: embedding + n_prelude causal blocks
    s_0 ~ N(0, sigma^2 I)                     noisy initial latent state (one per token position)
    s_t = LN( R( A [s_{t-1}; e] ) ),  t=1..T  shared core R (n_core blocks) iterated T times, A the adapter
    p(. | x) = softmax( W C(s_T) )            coda C (n_coda blocks) + the tied LM head

The latent trajectory of a prompt is (s_1, ..., s_T), each a (length x d) matrix; its *latent thoughts* are
the per-step means over token positions (a T x d matrix), as in the paper's pooling over all tokens.
Training (``train``): :func:`lib.common.tiny_lm.train_lm` on the task stream; in train mode every forward
draws its own depth T ~ U{1..max_rec} and back-propagates through the last ``bptt`` iterations only
(Huginn's truncated backprop; Huginn draws T from a log-normal Poisson instead). The loss is the cross-entropy
of the answer tokens (the token before each ``<|endoftext|>``): the operands of a generated question are random.
"""
from __future__ import annotations

import hashlib
import io
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn


class RecurrentDepthLM(nn.Module):
    def __init__(self, vocab_size=2048, n_embd=64, n_head=4, n_positions=64, n_prelude=1, n_core=2, n_coda=1,
                 sigma=1.0, max_rec=16, bptt=4, seed=0):
        super().__init__()
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        from lib.common.tiny_lm import gpt2_config

        self.config = gpt2_config(vocab_size, n_layer=n_prelude + n_core + n_coda, n_embd=n_embd, n_head=n_head,
                                  n_positions=n_positions)
        self.sigma, self.max_rec, self.bptt = float(sigma), int(max_rec), int(bptt)
        self.arch = dict(vocab_size=vocab_size, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
                         n_prelude=n_prelude, n_core=n_core, n_coda=n_coda, sigma=sigma, max_rec=max_rec, bptt=bptt)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(n_positions, n_embd)
            nn.init.normal_(self.wte.weight, std=0.02)
            nn.init.normal_(self.wpe.weight, std=0.01)
            self.prelude = nn.ModuleList([GPT2Block(self.config) for _ in range(n_prelude)])
            self.ln_e = nn.LayerNorm(n_embd)
            self.adapter = nn.Linear(2 * n_embd, n_embd)
            self.core = nn.ModuleList([GPT2Block(self.config) for _ in range(n_core)])
            self.ln_s = nn.LayerNorm(n_embd)
            self.coda = nn.ModuleList([GPT2Block(self.config) for _ in range(n_coda)])
            self.ln_f = nn.LayerNorm(n_embd)
        self._depth_gen = torch.Generator().manual_seed(seed + 1)
        self.eval()

    # --- the three parts -------------------------------------------------------------------------------------
    @staticmethod
    def documents(ids):
        """Positions counted from the start of each example (after each EOS) and the additive attention mask that
        keeps attention causal and inside one example: a window of the training stream behaves like separate
        prompts, each starting at position 0 as at test time."""
        eos = ids == 0
        doc = torch.cumsum(eos.long(), 1) - eos.long()  # an EOS closes its own example
        L = ids.shape[1]
        idx = torch.arange(L, device=ids.device).expand_as(ids)
        start = torch.cummax(torch.where(torch.cat([torch.ones_like(eos[:, :1]), eos[:, :-1]], 1), idx,
                                         torch.zeros_like(idx)), 1).values
        causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=ids.device))
        allowed = causal[None] & (doc[:, :, None] == doc[:, None, :])
        mask = torch.zeros(allowed.shape, device=ids.device).masked_fill(~allowed, float("-inf"))[:, None]
        return idx - start, mask

    def embed(self, ids, pos=None, mask=None):
        if pos is None:
            pos = torch.arange(ids.shape[1], device=ids.device)[None]
        h = self.wte(ids) + self.wpe(pos)
        for b in self.prelude:
            h = b(h, attention_mask=mask)
        return self.ln_e(h)

    def core_step(self, s, e, noise=0.0, generator=None, mask=None):
        h = self.adapter(torch.cat([s, e], dim=-1))
        for b in self.core:
            h = b(h, attention_mask=mask)
        if noise:
            h = h + float(noise) * torch.randn(h.shape, generator=generator, device=h.device)
        return self.ln_s(h)

    def decode(self, s, mask=None):
        h = s
        for b in self.coda:
            h = b(h, attention_mask=mask)
        return self.ln_f(h) @ self.wte.weight.T

    def initial_state(self, shape, generator=None, sigma=None, device="cpu"):
        sigma = self.sigma if sigma is None else float(sigma)
        return sigma * torch.randn(shape, generator=generator, device=device)

    # --- training forward (what train_lm calls) -------------------------------------------------------------
    def forward(self, input_ids, labels=None, num_steps=None, generator=None):
        if num_steps is None:
            num_steps = (int(torch.randint(1, self.max_rec + 1, (1,), generator=self._depth_gen))
                         if self.training else self.max_rec // 2)
        pos, mask = self.documents(input_ids) if bool((input_ids == 0).any()) else (None, None)
        e = self.embed(input_ids, pos, mask)
        s = self.initial_state(e.shape, generator=generator if not self.training else self._depth_gen,
                               device=e.device)
        n_free = max(0, num_steps - self.bptt) if self.training else 0
        with torch.no_grad():
            for _ in range(n_free):
                s = self.core_step(s, e, mask=mask)
        for _ in range(num_steps - n_free):
            s = self.core_step(s, e, mask=mask)
        logits = self.decode(s, mask)
        loss = None
        if labels is not None:  # answer-token cross-entropy: the targets are the tokens right before an EOS
            tgt = labels[:, 1:-1]
            mask = (labels[:, 2:] == 0) & (tgt != 0)
            lg = logits[:, :-2][mask]
            loss = (nn.functional.cross_entropy(lg, tgt[mask]) if mask.any()
                    else logits.sum() * 0.0)
        return SimpleNamespace(loss=loss, logits=logits)


def build(arch: dict, seed: int = 0) -> RecurrentDepthLM:
    return RecurrentDepthLM(**arch, seed=seed)


def train(model, texts, tokenizer, *, steps, lr=2e-3, batch_size=32, seq_len=48, seed=0, warmup_steps=100,
          callback=None, callback_every=0):
    """Train with :func:`lib.common.tiny_lm.train_lm` on the task stream (random depth per step, see above)."""
    from lib.common.tiny_lm import train_lm

    stream = torch.as_tensor(tokenizer.stream(texts))
    return train_lm(model, stream, steps=steps, lr=lr, batch_size=batch_size, seq_len=seq_len, seed=seed,
                    warmup_steps=warmup_steps, weight_decay=0.0, callback=callback, callback_every=callback_every)


# --- sampling latent trajectories ---------------------------------------------------------------------------
@torch.no_grad()
def sample(model, tokenizer, prompts, *, n_samples, steps, seed, sigma=None, step_noise=0.0, decode_at=None,
           keep_tokens=0, batch=2048, device="cpu"):
    """Run every prompt ``n_samples`` times with independent initial noise for ``steps`` core iterations.

    Returns a dict of numpy arrays: ``thoughts`` [Q, N, T, d] (per-step means over token positions),
    ``answers`` [Q, N] (the greedy digit decoded by the coda from s_T), ``answers_at`` {t: [Q, N]} for every
    t in ``decode_at``, ``tokens`` [keep_tokens, N, T, L, d] (full states of the first ``keep_tokens`` prompts,
    for Figure 2; only when they share one length). Prompts are batched by token length (no padding).
    ``step_noise`` > 0 adds N(0, step_noise^2) to the core's output before its LayerNorm at every step (a
    stochastic latent policy; 0 is Huginn's: noise only in s_0). Noise comes from one generator seeded by
    ``seed``: the same call gives the same trajectories.
    """
    model.eval()
    decode_at = sorted(set(decode_at or []))
    if decode_at and (min(decode_at) < 1 or max(decode_at) > steps):
        raise ValueError(f"decode_at must lie in 1..{steps}; got {decode_at}")
    digit_ids = torch.as_tensor(tokenizer.digit_ids, device=device)
    enc = [tokenizer.encode(p) for p in prompts]
    Q, N, d = len(enc), int(n_samples), model.arch["n_embd"]
    thoughts = np.zeros((Q, N, steps, d), dtype=np.float32)
    answers = np.zeros((Q, N), dtype=np.int64)
    answers_at = {t: np.zeros((Q, N), dtype=np.int64) for t in decode_at}
    tokens = None
    gen = torch.Generator(device=device).manual_seed(int(seed))
    by_len = {}
    for i, ids in enumerate(enc):
        by_len.setdefault(len(ids), []).append(i)
    keep_idx = list(range(min(keep_tokens, Q)))
    if keep_idx and len({len(enc[i]) for i in keep_idx}) == 1:
        tokens = np.zeros((len(keep_idx), N, steps, len(enc[0]), d), dtype=np.float32)
    for L in sorted(by_len):
        idx = by_len[L]
        per = max(1, batch // N)
        for c in range(0, len(idx), per):
            chunk = idx[c:c + per]
            ids = torch.as_tensor([enc[i] for i in chunk], device=device)
            e = model.embed(ids).repeat_interleave(N, dim=0)  # the prelude is deterministic: once per prompt
            s = model.initial_state(e.shape, generator=gen, sigma=sigma, device=device)
            traj = []
            for t in range(1, steps + 1):
                s = model.core_step(s, e, noise=step_noise, generator=gen)
                traj.append(s)
                if t in answers_at:
                    lg = model.decode(s)[:, -1, digit_ids]
                    answers_at[t][chunk] = lg.argmax(-1).view(len(chunk), N).cpu().numpy()
            lg = model.decode(s)[:, -1, digit_ids]
            answers[chunk] = lg.argmax(-1).view(len(chunk), N).cpu().numpy()
            st = torch.stack(traj, dim=1)  # [B*N, T, L, d]
            thoughts[chunk] = st.mean(2).view(len(chunk), N, steps, d).cpu().numpy()
            if tokens is not None:
                for j, q in enumerate(chunk):
                    if q in keep_idx:
                        tokens[q] = st.view(len(chunk), N, steps, L, d)[j].cpu().numpy()
    return {"thoughts": thoughts, "answers": answers, "answers_at": answers_at, "tokens": tokens}


# --- checkpoint --------------------------------------------------------------------------------------------
def state_bytes(model) -> bytes:
    arrays = {k: v.detach().cpu().numpy().astype(np.float16) for k, v in model.state_dict().items()}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def save_checkpoint(model, path, recipe: dict) -> dict:
    import json

    raw = state_bytes(model)
    buf = io.BytesIO(raw)
    arrays = dict(np.load(buf))
    arrays["__recipe__"] = np.frombuffer(json.dumps(recipe, sort_keys=True).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    path.write_bytes(out.getvalue())
    data = path.read_bytes()
    return {"file": path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def load_checkpoint(path, recipe: dict = None) -> RecurrentDepthLM:
    import json

    with np.load(path) as z:
        stored = json.loads(bytes(z["__recipe__"]).decode())
        if recipe is not None and stored != recipe:
            raise ValueError(f"checkpoint {path} was made with recipe {stored}, not {recipe}: rerun "
                             f"python -m lib.latent_thinking.make_checkpoint")
        model = build(stored["arch"], seed=stored["seed"])
        sd = {k: torch.as_tensor(z[k].astype(np.float32)) for k in z.files if k != "__recipe__"}
    model.load_state_dict(sd)
    return model.eval()
