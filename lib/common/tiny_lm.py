"""Tiny GPT-2 language models built from a ``transformers`` config, a step-bounded training loop, and a loader.

Papers about language models are reproduced offline on a *tiny* model of the same family (GPT-2: learned
absolute positions, pre-LayerNorm blocks, GELU-tanh MLPs, causal softmax attention) trained here on the
stdlib corpus, instead of a hub checkpoint::

    from lib.common.tiny_lm import make_gpt2, train_lm, load_lm
    from lib.common.bpe import load_bpe, encode_corpus
    from lib.common.text_corpus import stdlib_corpus

    tok = load_bpe(2048)
    model = make_gpt2(vocab_size=2048, n_layer=4, n_embd=128, seed=0)          # at initialization
    stream = encode_corpus(tok, stdlib_corpus("mixed", max_files=150, seed=0))
    log = train_lm(model, stream, steps=100, seed=0)                           # log.losses, log.steps

    model, hf_tok = load_lm()                 # the same, in one call (tiny model, HF tokenizer wrapper)
    model, hf_tok = load_lm("gpt2")           # a hub model, only when asked; fails fast when offline

Everything is bounded by *steps*, never wall time, and seeded: same arguments, same weights (on CPU).
Dropout is off by default so that a model's hidden states are a deterministic function of its input.
"""
from __future__ import annotations

import os
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Optional

from .params import check_float, check_int, check_seed

TINY_MODEL_NAME = "tiny-gpt2-stdlib"
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def gpt2_config(
    vocab_size: int,
    *,
    n_layer: int = 4,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 128,
    dropout: float = 0.0,
    attn_implementation: str = "sdpa",
    **overrides,
):
    """A ``transformers.GPT2Config`` for a tiny GPT-2 (GELU-tanh, LayerNorm eps 1e-5, tied embeddings).

    ``<|endoftext|>`` (id 0 in :mod:`lib.common.bpe` tokenizers) is BOS/EOS; the model has no padding id
    (batches are never padded; the tokenizer wrapper pads with id 0). ``overrides`` go to the config (e.g.
    ``activation_function="gelu"``, ``layer_norm_epsilon=1e-6``).
    """
    from transformers import GPT2Config

    vocab_size = check_int("vocab_size", vocab_size, lo=2)
    n_layer = check_int("n_layer", n_layer, lo=1)
    n_head = check_int("n_head", n_head, lo=1)
    n_embd = check_int("n_embd", n_embd, lo=n_head)
    if n_embd % n_head:
        raise ValueError(f"parameter 'n_embd' got {n_embd}; allowed: a multiple of n_head={n_head}")
    n_positions = check_int("n_positions", n_positions, lo=1)
    dropout = check_float("dropout", dropout, lo=0.0, hi=1.0, hi_open=True)
    kwargs = dict(
        vocab_size=vocab_size, n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
        resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
        bos_token_id=0, eos_token_id=0,
    )
    kwargs.update(overrides)
    cfg = GPT2Config(**kwargs)
    cfg._attn_implementation = attn_implementation
    return cfg


def make_gpt2(
    vocab_size: int,
    *,
    n_layer: int = 4,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 128,
    seed: int = 0,
    device: str = "cpu",
    dtype=None,
    **config_kwargs,
):
    """A freshly initialized ``GPT2LMHeadModel`` (eval mode), seeded by ``seed`` without touching global RNGs.

    ``dtype`` (e.g. ``torch.float64``) converts the weights after initialization, so the same ``seed`` gives
    the same network in every precision. Other keyword arguments go to :func:`gpt2_config`.
    """
    import torch
    from transformers import GPT2LMHeadModel

    seed = check_seed("seed", seed)
    cfg = gpt2_config(vocab_size, n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
                      **config_kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
    model.loss_type = "ForCausalLM"  # the class name does not say so; avoids transformers' fallback warning
    if dtype is not None:
        model = model.to(dtype=dtype)
    return model.to(device).eval()


def max_positions(model) -> int:
    """The longest input the model accepts (``n_positions`` for GPT-2, ``max_position_embeddings`` else)."""
    cfg = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        if getattr(cfg, name, None):
            return int(getattr(cfg, name))
    return 2**31 - 1


def n_parameters(model) -> int:
    """Number of distinct parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())


@dataclass
class TrainLog:
    """What :func:`train_lm` did: the loss after each step, and whatever the callback returned."""

    steps: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    callbacks: list = field(default_factory=list)  # (step, callback's return value)
    tokens_seen: int = 0


def sample_windows(stream, batch_size: int, seq_len: int, generator):
    """``batch_size`` random windows of ``seq_len`` tokens from a 1-D token stream (a LongTensor)."""
    import torch

    n = stream.numel()
    if n < seq_len + 1:
        raise ValueError(f"the token stream has {n} tokens; training windows need more than seq_len={seq_len}")
    starts = torch.randint(0, n - seq_len, (batch_size,), generator=generator)
    return torch.stack([stream[s:s + seq_len] for s in starts.tolist()])


def train_lm(
    model,
    stream,
    *,
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 32,
    seq_len: int = 64,
    weight_decay: float = 0.0,
    betas: tuple = (0.9, 0.95),
    grad_clip: Optional[float] = 1.0,
    warmup_steps: int = 0,
    seed: int = 0,
    callback: Optional[Callable] = None,
    callback_every: int = 0,
    optimizer: str = "torch",
) -> TrainLog:
    """Train ``model`` (in place) for exactly ``steps`` AdamW steps of next-token prediction on ``stream``.

    ``stream`` is a 1-D LongTensor of token ids (see :func:`lib.common.bpe.encode_corpus`); each step uses
    ``batch_size`` random windows of ``seq_len`` tokens drawn from a generator seeded by ``seed``. The learning
    rate rises linearly over ``warmup_steps`` and then stays at ``lr``. ``callback(step, model)`` runs before
    the first step (step 0), every ``callback_every`` steps and after the last one; its return values are
    kept in ``log.callbacks``. The model is left in eval mode.

    ``optimizer``: ``"torch"`` (``torch.optim.AdamW`` with ``clip_grad_norm_``) or ``"suite"``
    (:class:`lib.common.optim.AdamW`, the same update and clipping without torch.optim's start-up import of
    ``torch._dynamo``: for models that do not import ``transformers``, such as :mod:`lib.common.fastgpt2`'s).
    """
    import torch

    steps = check_int("steps", steps, lo=0)
    lr = check_float("lr", lr, lo=0.0, lo_open=True)
    batch_size = check_int("batch_size", batch_size, lo=1)
    seq_len = check_int("seq_len", seq_len, lo=1, hi=max_positions(model))
    callback_every = check_int("callback_every", callback_every, lo=0)
    warmup_steps = check_int("warmup_steps", warmup_steps, lo=0)
    seed = check_seed("seed", seed)
    device = next(model.parameters()).device
    stream = torch.as_tensor(stream, dtype=torch.long).reshape(-1).cpu()
    if int(stream.max()) >= model.config.vocab_size or int(stream.min()) < 0:
        raise ValueError(f"token ids must lie in [0, {model.config.vocab_size}); got [{int(stream.min())}, "
                         f"{int(stream.max())}]")
    if optimizer not in ("torch", "suite"):
        raise ValueError(f"parameter 'optimizer' got {optimizer!r}; allowed: 'torch' or 'suite'")
    gen = torch.Generator().manual_seed(seed)

    def factor(s):
        return min(1.0, (s + 1) / warmup_steps) if warmup_steps else 1.0

    if optimizer == "torch":
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    else:
        from .optim import AdamW

        opt = AdamW(model.parameters(), lr=lr * factor(0), betas=betas, weight_decay=weight_decay,
                    max_grad_norm=grad_clip)
    log = TrainLog()

    def _call(step):
        if callback is not None:
            model.eval()
            with torch.no_grad():
                log.callbacks.append((step, callback(step, model)))

    _call(0)
    for step in range(1, steps + 1):
        model.train()
        x = sample_windows(stream, batch_size, seq_len, gen).to(device)
        loss = model(input_ids=x, labels=x).loss
        if optimizer == "torch":
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            opt.step()
            sched.step()
        else:
            opt.zero_grad()
            loss.backward()
            opt.step()  # clips to max_grad_norm = grad_clip first
            opt.lr = lr * factor(step)
        log.steps.append(step)
        log.losses.append(float(loss.detach()))
        log.tokens_seen += x.numel()
        if callback_every and step % callback_every == 0 and step != steps:
            _call(step)
    if steps:
        _call(steps)
    model.eval()
    return log


def evaluate_lm(model, stream, *, batch_size: int = 32, seq_len: int = 64, n_batches: int = 4, seed: int = 0) -> float:
    """Mean next-token cross-entropy (nats) of ``model`` on ``n_batches`` seeded random windows of ``stream``."""
    import torch

    gen = torch.Generator().manual_seed(check_seed("seed", seed))
    stream = torch.as_tensor(stream, dtype=torch.long).reshape(-1).cpu()
    device = next(model.parameters()).device
    model.eval()
    losses = []
    with torch.no_grad():
        for _ in range(check_int("n_batches", n_batches, lo=1)):
            x = sample_windows(stream, batch_size, seq_len, gen).to(device)
            losses.append(float(model(input_ids=x, labels=x).loss))
    return float(sum(losses) / len(losses))


def hub_offline() -> bool:
    """Whether the Hugging Face hub is switched off (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in _OFFLINE_VARS)


def check_model_name(model_name, *, parameter: str = "model_name") -> None:
    """Refuse, before any work, a ``model_name`` that cannot load here (``ValueError`` naming the parameter).

    ``None`` / the tiny model's name pass; a local folder must exist and hold a ``config.json``; a hub id must be
    in the local Hugging Face cache while the hub is offline (as the suite always runs). Cheap: no model is read.
    """
    if model_name is None or model_name == TINY_MODEL_NAME:
        return
    allowed = f"None (the tiny local model, {TINY_MODEL_NAME!r}), a local model folder, or a Hugging Face hub id"
    if not isinstance(model_name, str) or not model_name.strip():
        raise ValueError(f"parameter {parameter!r} got {model_name!r}; allowed: {allowed}")
    local = Path(model_name).expanduser()
    looks_local = model_name.startswith((".", "/", "~")) or os.sep in model_name.strip("/").replace("/", "", 1)
    if local.exists():
        if not local.is_dir() or not (local / "config.json").exists():
            raise ValueError(f"parameter {parameter!r} got {model_name!r}: a local path, but not a model folder "
                             f"(no config.json in it); allowed: {allowed}")
        return
    if looks_local:
        raise ValueError(f"parameter {parameter!r} got {model_name!r}: no such local folder; allowed: {allowed}")
    if hub_offline():
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # pragma: no cover - a dependency of transformers
            return
        cached = try_to_load_from_cache(model_name, "config.json")
        if not isinstance(cached, str):
            raise ValueError(
                f"parameter {parameter!r} got {model_name!r}: not in the local Hugging Face cache, and the hub is "
                f"offline (HF_HUB_OFFLINE=1: the suite never downloads at run time). Use None for the tiny local "
                f"model, pass a local model folder, or download the model beforehand (online, e.g. "
                f"`huggingface-cli download {model_name}`) and run again.")


def load_hub_lm(model_name: str, *, device: str = "cpu", dtype=None, cache_dir=None, **kwargs):
    """``AutoModelForCausalLM`` + ``AutoTokenizer`` from the hub (or the local HF cache when offline).

    Offline (``HF_HUB_OFFLINE=1``, which :mod:`lib.common` sets), only the local cache is read
    (``local_files_only=True``), so a missing model fails at once with a ``RuntimeError`` that says what to do.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    offline = hub_offline()
    common = dict(local_files_only=offline, cache_dir=None if cache_dir is None else str(cache_dir))
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_name, **common)
        model_kwargs = dict(common, **kwargs)
        if dtype is not None:
            model_kwargs["dtype"] = dtype
        model = AutoModelForCausalLM.from_pretrained(model_name, **model_kwargs)
    except Exception as exc:  # OSError, HF hub errors, ValueError for unknown architectures
        if offline:
            raise RuntimeError(
                f"model_name={model_name!r} is not in the local Hugging Face cache and the hub is offline "
                f"(HF_HUB_OFFLINE=1, set by lib.common: the suite never downloads at run time). Use "
                f"model_name=None for the tiny local model, or download the model beforehand and run with "
                f"HF_HUB_OFFLINE=0. ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from exc
        raise RuntimeError(f"could not load model_name={model_name!r} from the Hugging Face hub: "
                           f"{type(exc).__name__}: {exc}") from exc
    return model.to(device).eval(), tokenizer


def load_lm(
    model_name: Optional[str] = None,
    *,
    vocab_size: int = 2048,
    n_layer: int = 4,
    n_embd: int = 128,
    n_head: int = 4,
    n_positions: int = 128,
    train_steps: int = 0,
    corpus_max_files: Optional[int] = None,
    seed: int = 0,
    device: str = "cpu",
    dtype=None,
    cache_dir=None,
    train_kwargs: Optional[dict] = None,
):
    """A causal language model and its tokenizer: ``(model, tokenizer)``.

    - ``model_name=None`` (or ``"tiny-gpt2-stdlib"``): the tiny local GPT-2 of :func:`make_gpt2` with the
      stdlib BPE tokenizer of ``vocab_size`` tokens (wrapped as a ``PreTrainedTokenizerFast``), trained for
      ``train_steps`` steps (0: at initialization) on the stdlib corpus (``corpus_max_files`` files, None: all)
      with :func:`train_lm` (``train_kwargs`` passed on). Nothing is downloaded.
    - any other string: a hub id (``"gpt2"``, ``"roneneldan/TinyStories-33M"``, ...) passed to
      ``from_pretrained``; only for a user who asks for it. Offline, a model missing from the local cache
      raises ``RuntimeError`` immediately (see :func:`load_hub_lm`).
    """
    if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
        raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny local model, "
                         f"{TINY_MODEL_NAME!r}) or a Hugging Face hub id such as 'gpt2'")
    if model_name is not None and model_name != TINY_MODEL_NAME:
        return load_hub_lm(model_name, device=device, dtype=dtype, cache_dir=cache_dir)

    from .bpe import as_hf_tokenizer, encode_corpus, load_bpe
    from .text_corpus import stdlib_corpus

    tok = load_bpe(vocab_size)
    model = make_gpt2(vocab_size, n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions,
                      seed=seed, device=device)
    if check_int("train_steps", train_steps, lo=0) > 0:
        stream = encode_corpus(tok, stdlib_corpus("mixed", max_files=corpus_max_files, seed=seed))
        train_lm(model, stream, steps=train_steps, seed=seed, **(train_kwargs or {}))
    if dtype is not None:
        model = model.to(dtype=dtype)
    model.config.name_or_path = TINY_MODEL_NAME
    return model.eval(), as_hf_tokenizer(tok, model_max_length=n_positions)


# -------------------------------------------------------------------------------- shipped npz checkpoints
_SKIP_KEYS = (".attn.bias", "masked_bias")


def save_npz_checkpoint(model, tok, path, recipe: dict, extra: Optional[dict] = None) -> dict:
    """Write a tiny GPT-2 as a compressed npz: float16 weights (causal-mask buffers and the tied LM head left out),
    the tokenizer's JSON (``__tokenizer__``) and the recipe that made it (``__recipe__``). Returns the file's
    record: name, bytes, sha256 (and ``extra``)."""
    import hashlib
    import io
    import json

    import numpy as np
    import torch

    arrays = {k: v.detach().cpu().to(torch.float16).numpy() for k, v in model.state_dict().items()
              if not k.endswith(_SKIP_KEYS) and k != "lm_head.weight"}
    arrays["__tokenizer__"] = np.frombuffer(tok.to_str().encode("utf-8"), dtype=np.uint8)
    arrays["__recipe__"] = np.frombuffer(json.dumps(recipe, sort_keys=True).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    data = buf.getvalue()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return dict(file=path.name, bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), **(extra or {}))


def read_npz_checkpoint(path, recipe: dict, script: str):
    """``(state dict of float32 tensors, tokenizer, recipe)`` of a file written by :func:`save_npz_checkpoint`.

    A missing file, or one made with another recipe than ``recipe``, is refused with the command that remakes it
    (``python -m <script>``)."""
    import json

    import numpy as np
    import torch
    from tokenizers import Tokenizer

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; regenerate it with `python -m {script}`")
    z = np.load(path)
    made = json.loads(bytes(z["__recipe__"]).decode())
    if made != recipe:
        raise RuntimeError(f"{path} was made with recipe {made}, not the current recipe {recipe}; regenerate it "
                           f"with `python -m {script}`")
    tok = Tokenizer.from_str(bytes(z["__tokenizer__"]).decode("utf-8"))
    state = {k: torch.from_numpy(z[k].astype(np.float32)) for k in z.files if not k.startswith("__")}
    return state, tok, made


def checkpoint_provenance(entry: dict, recipe: dict, *, command: str, losses, train_seconds: float) -> dict:
    """The provenance record of a shipped checkpoint made by a data script: the file's record from
    :func:`save_npz_checkpoint`, the recipe, the command that remakes it, torch and Python versions, training
    time, the mean loss of the last 50 steps and the loss every 100 steps (``losses``: one loss per step)."""
    import platform

    import numpy as np
    import torch

    losses = [float(x) for x in losses]
    if not losses:
        raise ValueError("checkpoint_provenance needs the training losses (one per step); got none")
    return dict(entry, recipe=recipe, command=command, torch=torch.__version__, python=platform.python_version(),
                train_seconds=round(float(train_seconds), 1), final_loss=round(float(np.mean(losses[-50:])), 4),
                loss_every_100=[round(x, 4) for x in losses[::100]])


def resolve_pretrained(mode: str, pretrained, model_name) -> bool:
    """Whether a run loads the paper's shipped tiny checkpoint: ``pretrained=None`` means yes in quick mode and no
    (train it here with the run's seed) in full mode; a hub ``model_name`` never uses it, and ``pretrained=True``
    together with a hub model is refused (``ValueError`` naming both parameters)."""
    if pretrained and model_name:
        raise ValueError("parameter 'pretrained' got True together with model_name; the shipped checkpoint is the "
                         "tiny GPT-2: set pretrained = None with a hub model")
    use = (mode == "quick") if pretrained is None else bool(pretrained)
    return use and not model_name
