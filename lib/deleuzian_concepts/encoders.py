"""The networks whose activations are explained: a tiny GPT-2 (text) and a small CNN (digits).

Text: a tiny GPT-2 from :mod:`lib.common.tiny_lm` with the suite's stdlib BPE, trained (step-bounded) on the
templated sentences plus stdlib docstrings. Quick mode loads the float16 checkpoint
``data/deleuzian_concepts/tiny_gpt2.pt`` made by ``python -m lib.deleuzian_concepts.make_checkpoint``; full mode
trains a wider model here. ``model_name`` loads a hub causal LM instead (online users only).
Activations: the residual stream at one layer (``hidden_states[layer]``), mean-pooled over a sentence's tokens
(sentence tasks) or per token (word-class / CoNLL token tasks).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common import data_dir, limit_threads

CHECKPOINT = "tiny_gpt2.pt"
CKPT_ARCH = dict(vocab_size=2048, n_layer=3, n_embd=128, n_head=4, n_positions=64)
CKPT_TRAIN = dict(steps=1500, batch_size=32, seq_len=48, lr=3e-3, warmup_steps=50, n_sentences=20000,
                  doc_files=60, seed=0)


def lm_corpus(n_sentences: int, doc_files: int, seed: int):
    """Training texts: templated sentences (a stream named 'lm', apart from every probe set) and docstrings."""
    from lib.common.text_corpus import stdlib_corpus
    from lib.common.seeding import rng_for

    from .data import make_sentences

    texts = make_sentences(n_sentences, rng_for(seed, "lm-corpus")).texts
    docs = stdlib_corpus("docstrings", max_files=doc_files, seed=seed)
    return texts + list(docs)


def train_gpt2(arch: dict, train: dict, *, progress_every: int = 0):
    """A tiny GPT-2 trained for ``train['steps']`` steps on :func:`lm_corpus`; returns (model, tokenizer, log)."""
    from lib.common.bpe import encode_corpus, load_bpe
    from lib.common.tiny_lm import make_gpt2, train_lm

    tok = load_bpe(arch["vocab_size"])
    rng = np.random.default_rng(train["seed"])
    texts = lm_corpus(train["n_sentences"], train["doc_files"], train["seed"])
    texts = [texts[i] for i in rng.permutation(len(texts))]
    stream = encode_corpus(tok, texts)
    model = make_gpt2(arch["vocab_size"], n_layer=arch["n_layer"], n_embd=arch["n_embd"], n_head=arch["n_head"],
                      n_positions=arch["n_positions"], seed=train["seed"])
    cb = (lambda step, m: print(f"step {step}", flush=True)) if progress_every else None
    with limit_threads(1):
        log = train_lm(model, stream, steps=train["steps"], batch_size=train["batch_size"], seq_len=train["seq_len"],
                       lr=train["lr"], warmup_steps=train["warmup_steps"], seed=train["seed"], callback=cb,
                       callback_every=progress_every)
    return model, tok, log


def save_checkpoint(model, path, meta: dict) -> None:
    import torch

    state = {k: v.detach().to(torch.float16).clone() for k, v in model.state_dict().items()
             if k != "lm_head.weight" and v.is_floating_point()}
    torch.save({"state": state, "meta": meta}, path)


def _read_checkpoint(path=None):
    """``(path, {"state": float16 tensors, "meta": ...})`` of the shipped checkpoint (or ``path``), loaded
    ``weights_only``; a missing file names the script that makes it."""
    import torch

    path = Path(path) if path is not None else data_dir("deleuzian_concepts") / CHECKPOINT
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; make it with `python -m lib.deleuzian_concepts.make_checkpoint`")
    return path, torch.load(path, map_location="cpu", weights_only=True)


def load_checkpoint(path=None):
    """The shipped tiny GPT-2 (float32) and its BPE tokenizer, plus the checkpoint's metadata."""
    from lib.common.bpe import load_bpe
    from lib.common.tiny_lm import make_gpt2

    path, blob = _read_checkpoint(path)
    arch = blob["meta"]["arch"]
    model = make_gpt2(arch["vocab_size"], n_layer=arch["n_layer"], n_embd=arch["n_embd"], n_head=arch["n_head"],
                      n_positions=arch["n_positions"], seed=0)
    state = {k: v.float() for k, v in blob["state"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    bad = [m for m in missing if m != "lm_head.weight" and not m.endswith(("attn.bias", "attn.masked_bias"))]
    if bad or unexpected:
        raise RuntimeError(f"{path}: checkpoint does not match the architecture (missing {bad}, unexpected "
                           f"{unexpected})")
    model.tie_weights()
    return model.eval(), load_bpe(arch["vocab_size"]), blob["meta"]


class CheckpointGPT2:
    """The shipped GPT-2 checkpoint's forward pass written with torch only (no transformers import: it costs several
    CPU-seconds in quick mode). ``states(ids, layer)`` equals ``output_hidden_states[layer]`` of the same weights in
    :func:`lib.common.tiny_lm.make_gpt2` (a unit test checks it) for right-padded batches: layer ``l < L`` is the
    input of block ``l``, layer ``L`` the final LayerNorm's output. Causal attention, learned positions
    ``0..T-1``, GELU (tanh), LayerNorm eps 1e-5, as in GPT-2."""

    def __init__(self, state: dict, arch: dict):
        self.w = state
        self.n_layer, self.n_head, self.d = int(arch["n_layer"]), int(arch["n_head"]), int(arch["n_embd"])

    def _ln(self, x, name):
        import torch

        return torch.nn.functional.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"], 1e-5)

    def states(self, ids, layer: int):
        import torch
        from torch.nn import functional as F

        w, H = self.w, self.n_head
        B, T = ids.shape
        x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:T][None]
        for i in range(self.n_layer):
            if i == layer:
                return x
            p = f"transformer.h.{i}."
            qkv = self._ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (t.reshape(B, T, H, -1).transpose(1, 2) for t in qkv.split(self.d, dim=2))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, self.d)
            x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            m = F.gelu(self._ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        return self._ln(x, "transformer.ln_f")


def load_checkpoint_states(path=None):
    """The shipped checkpoint as a :class:`CheckpointGPT2` (float32, torch only), its tokenizer and metadata."""
    from lib.common.bpe import load_bpe

    path, blob = _read_checkpoint(path)
    arch = blob["meta"]["arch"]
    state = {k: v.float() for k, v in blob["state"].items()}
    need = ["transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight"] + [
        f"transformer.h.{i}.{n}.weight" for i in range(arch["n_layer"])
        for n in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj")]
    missing = [k for k in need if k not in state]
    if missing:
        raise RuntimeError(f"{path}: checkpoint does not match the architecture (missing {missing})")
    return CheckpointGPT2(state, arch), load_bpe(arch["vocab_size"]), blob["meta"]


class TextEncoder:
    """A causal LM with its tokenizer; reads pooled or per-token states at one layer."""

    def __init__(self, model, tokenizer, name: str, layer: int, max_len: int = 64):
        self.model, self.tok, self.name = model, tokenizer, name
        if isinstance(model, CheckpointGPT2):
            L = model.n_layer
        else:
            from lib.common.lm_hooks import n_layers

            L = n_layers(model)
        self.layer = L if layer is None else int(layer)
        if not 0 <= self.layer <= L:
            raise ValueError(f"parameter 'layer' got {layer!r}; allowed: an integer in [0, {L}] or None (the last)")
        self.max_len = max_len

    def ids(self, texts):
        from lib.common.bpe import encode_texts

        return [ids[: self.max_len] for ids in encode_texts(self.tok, texts)]

    def states(self, id_lists, batch_size: int = 128):
        """Per text: its ``[T, D]`` state matrix at ``self.layer`` (numpy float64)."""
        import torch

        fast = isinstance(self.model, CheckpointGPT2)
        if not fast:
            from lib.common.lm_hooks import read_states
        order = np.argsort([len(x) for x in id_lists])  # similar lengths together: little padding
        res = [None] * len(id_lists)
        with limit_threads(1), torch.no_grad():
            for s in range(0, len(order), batch_size):
                chunk = order[s:s + batch_size]
                T = max(1, max(len(id_lists[i]) for i in chunk))
                ids = torch.zeros((len(chunk), T), dtype=torch.long)
                mask = torch.zeros((len(chunk), T), dtype=torch.long)
                for r, i in enumerate(chunk):
                    x = id_lists[i]
                    ids[r, :len(x)] = torch.as_tensor(x)
                    mask[r, :len(x)] = 1
                if fast:  # right padding: causal attention never looks at the pad positions of a real token
                    h = self.model.states(ids, self.layer).double().numpy()
                else:
                    h = read_states(self.model, ids, [self.layer], attention_mask=mask)[self.layer].double().numpy()
                for r, i in enumerate(chunk):
                    res[i] = h[r, :len(id_lists[i])]
        return res

    def pooled(self, texts) -> np.ndarray:
        return np.stack([h.mean(axis=0) for h in self.states(self.ids(texts))])


def token_ids_and_words(tok, words):
    """BPE ids of a sentence given as words (joined by spaces) and, per token, the index of its word."""
    text, starts = "", []
    for w in words:
        if text:
            text += " "
        starts.append((len(text), len(text) + len(w)))
        text += w
    enc = tok.encode(text, add_special_tokens=False)  # a tokenizers.Tokenizer (the suite's BPE)
    ids, offsets = list(enc.ids), list(enc.offsets)
    which = []
    for a, b in offsets:
        j = next((k for k, (sa, sb) in enumerate(starts) if a < sb and b > sa), None)
        which.append(j)
    return ids, which


# ---------------------------------------------------------------- digits CNN
def train_digit_cnn(images: np.ndarray, digits: np.ndarray, *, width: int, steps: int, seed: int, lr: float = 3e-3,
                    batch_size: int = 128):
    """A small CNN (two 3x3 convolutions, max-pool, a ``width``-unit hidden layer) trained on the digit only.

    Returns ``(model, train accuracy)``; its concepts-to-explain are the hidden layer's pre-activations."""
    import torch
    from torch import nn

    from lib.common.optim import Adam

    g = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 16, width), nn.ReLU(), nn.Linear(width, 10))
    X = torch.as_tensor(images, dtype=torch.float32)[:, None]
    y = torch.as_tensor(digits, dtype=torch.long)
    opt = Adam(net.parameters(), lr=lr)
    with limit_threads(1):
        for _ in range(int(steps)):
            idx = torch.randint(0, len(y), (batch_size,), generator=g)
            loss = nn.functional.cross_entropy(net(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            acc = float((net(X).argmax(1) == y).float().mean())
    return net, acc


def digit_activations(net, images: np.ndarray) -> np.ndarray:
    """Pre-activations of the CNN's hidden layer (the input of its last ReLU), ``[n, width]`` float64."""
    import torch

    with limit_threads(1), torch.no_grad():
        h = net[:-2](torch.as_tensor(images, dtype=torch.float32)[:, None])
    return h.double().numpy()
