"""The general-LLM variant (paper Table 2): LTO on a standard, non-recurrent GPT-2.

The paper applies its LRM and LTO to general LLMs (OLMo, Llama, ...) whose "latent thinking steps" are the hidden
states across layers. Here a tiny ``GPT2LMHeadModel`` (:func:`lib.common.tiny_lm.make_gpt2`) is trained with
:func:`lib.common.tiny_lm.train_lm` (the ordinary next-token loss over the whole stream) on the same task strings as
the depth-recurrent model. Candidates: for each question, ``N`` answers drawn at ``temperature`` from the model's
next-token distribution restricted to the ten digit tokens (the recurrent model's answers are read from the same
ten tokens). Latent thought of a candidate: the hidden states of ``prompt + answer`` at the answer token, one per
layer (embedding output, every block, ``output_hidden_states`` of the model), an ``(n_layer + 1) x d`` matrix that
the LRM reads as a sequence over layers. The hidden states of the last *prompt* token (the brief's wording) are the
same for every candidate of a question, so they cannot tell candidates apart; the answer token is the first
position at which candidates differ.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from lib.common import limit_threads

from . import lrm as L
from . import lto
from .tasks import CharTokenizer, make_task, training_texts

#: the general LLM's recipe in full mode (the notebook's ``cfg.general``); quick mode skips the variant
GENERAL_FULL = {"n_layer": 4, "n_embd": 64, "n_head": 4, "n_positions": 64, "n_texts": 200000, "steps": 3000,
                "lr": 3e-3, "batch_size": 32, "seq_len": 48, "warmup_steps": 100, "temperature": 1.0}


def train_general_lm(recipe: dict, tasks, seed: int, rng: np.random.Generator, tokenizer=None):
    """A GPT-2 of ``recipe``'s size trained on ``recipe['n_texts']`` task strings of ``tasks`` (drawn from
    ``rng``) for ``recipe['steps']`` AdamW steps. Returns (model in eval mode, its TrainLog, tokenizer)."""
    from lib.common.tiny_lm import make_gpt2, train_lm

    tok = tokenizer or CharTokenizer()
    model = make_gpt2(tok.vocab_size, n_layer=recipe["n_layer"], n_embd=recipe["n_embd"], n_head=recipe["n_head"],
                      n_positions=recipe["n_positions"], seed=seed)
    stream = torch.as_tensor(tok.stream(training_texts(recipe["n_texts"], rng, tasks=tuple(tasks))))
    log = train_lm(model, stream, steps=recipe["steps"], lr=recipe["lr"], batch_size=recipe["batch_size"],
                   seq_len=recipe["seq_len"], seed=seed, warmup_steps=recipe.get("warmup_steps", 0))
    return model.eval(), log, tok


@torch.no_grad()
def sample_general(model, tokenizer, prompts, *, n_samples: int, seed: int, temperature: float = 1.0,
                   batch: int = 256):
    """``n_samples`` digit answers per prompt and their latent thoughts.

    Returns numpy arrays ``answers`` [Q, N] (0-9), ``thoughts`` [Q, N, n_layer + 1, d] (hidden states at the
    answer token, every layer) and ``p_digit`` [Q] (the probability mass the model puts on the ten digits). One
    generator seeded by ``seed`` draws every answer: the same call gives the same candidates. Prompts are batched
    by token length (no padding)."""
    if temperature <= 0:
        raise ValueError(f"parameter 'temperature' got {temperature}; allowed: > 0")
    model.eval()
    digit_ids = torch.as_tensor(tokenizer.digit_ids)
    enc = [tokenizer.encode(p) for p in prompts]
    Q, N = len(enc), int(n_samples)
    n_states, d = model.config.n_layer + 1, model.config.n_embd
    answers = np.zeros((Q, N), dtype=np.int64)
    thoughts = np.zeros((Q, N, n_states, d), dtype=np.float32)
    p_digit = np.zeros(Q)
    gen = torch.Generator().manual_seed(int(seed))
    by_len = {}
    for i, ids in enumerate(enc):
        by_len.setdefault(len(ids), []).append(i)
    for length in sorted(by_len):
        idx = by_len[length]
        for c in range(0, len(idx), batch):
            chunk = idx[c:c + batch]
            ids = torch.as_tensor([enc[i] for i in chunk])
            probs = torch.softmax(model(input_ids=ids).logits[:, -1].double(), -1)
            p_digit[chunk] = probs[:, digit_ids].sum(-1).numpy()
            w = torch.softmax(torch.log(probs[:, digit_ids]) / float(temperature), -1)
            pick = torch.multinomial(w, N, replacement=True, generator=gen)  # [B, N] indices into the digits
            answers[chunk] = pick.numpy()
            full = torch.cat([ids.repeat_interleave(N, 0), digit_ids[pick.reshape(-1)][:, None]], 1)
            hs = model(input_ids=full, output_hidden_states=True).hidden_states  # n_layer + 1 of [B*N, length+1, d]
            st = torch.stack([h[:, -1] for h in hs], 1)  # [B*N, n_layer + 1, d]
            thoughts[chunk] = st.view(len(chunk), N, n_states, d).numpy()
    return {"answers": answers, "thoughts": thoughts, "p_digit": p_digit}


def general_llm(cfg, model=None, tokenizer=None):
    """Table 2: the general LLM's candidates on every task of ``cfg.tasks`` (``cfg.n_train`` training questions to
    fit one LRM per task, ``cfg.n_test`` held-out ones), each method of Table 1 on the same N candidates.

    Returns None when ``cfg.general`` is None (quick mode); else a dict: ``per_q`` (task -> method -> per-question
    correctness, as :func:`lib.latent_thinking.experiments.method_accuracy`), ``summary`` (per task: base accuracy,
    pass@N, distinct answers, AUC of the LRM on held-out questions, digit mass), ``log`` (the training log) and
    ``name``. ``model``/``tokenizer`` skip the training (tests)."""
    recipe = cfg.params.get("general")
    if recipe is None:
        return None
    with limit_threads(1):
        log = None
        if model is None:
            model, log, tokenizer = train_general_lm(recipe, cfg.tasks, cfg.seed, cfg.rng("general-lm-texts"))
        tokenizer = tokenizer or CharTokenizer()
        per_q, rows = {}, []
        for task in cfg.tasks:
            split = {}
            for part, n in (("train", cfg.n_train), ("test", cfg.n_test)):
                ts = make_task(task, n, cfg.rng(f"general-{task}-{part}"))
                s = sample_general(model, tokenizer, ts.prompts, n_samples=cfg.n_samples,
                                   seed=int(cfg.rng(f"general-noise-{task}-{part}").integers(2**31)),
                                   temperature=recipe.get("temperature", 1.0))
                s["truth"] = ts.answers
                s["correct"] = s["answers"] == ts.answers[:, None]
                split[part] = s
            tr, te = split["train"], split["test"]
            m = L.train_lrm(tr["thoughts"], tr["correct"], steps=cfg.lrm_steps, seed=cfg.seed)
            rewards = m.reward(te["thoughts"])
            per_q[task] = lto.method_table(te["answers"], te["truth"], rewards, te["thoughts"],
                                           cfg.rng(f"general-lto-{task}"), beta=cfg.beta, M=cfg.M, reps=cfg.reps)
            rows.append({"task": task, "base accuracy": te["correct"].mean(),
                         "any correct (pass@N)": te["correct"].any(1).mean(),
                         "mean distinct answers": np.mean([len(set(a)) for a in te["answers"]]),
                         "LRM AUC (held-out)": L.auc(te["correct"], rewards),
                         "digit mass": te["p_digit"].mean()})
    name = (f"GPT-2 {model.config.n_layer}x{model.config.n_embd}"
            + (f", trained here ({len(log.losses)} steps, loss {log.losses[0]:.2f} -> {log.losses[-1]:.2f})"
               if log is not None else ""))
    return {"per_q": per_q, "summary": pd.DataFrame(rows).set_index("task"), "log": log, "name": name}
