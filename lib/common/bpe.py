"""A byte-level BPE tokenizer (GPT-2 style) trained offline with Hugging Face ``tokenizers``.

GPT-2's own tokenizer needs the model hub, so the suite trains its own on the offline stdlib corpus
(:mod:`lib.common.text_corpus`) and ships the result, a small JSON file, under ``data/common/``::

    from lib.common.bpe import load_bpe, as_hf_tokenizer, encode_texts

    tok = load_bpe(2048)                 # tokenizers.Tokenizer, shipped (trained on the fly for other sizes)
    ids = tok.encode("Return the sum.").ids
    tok.decode(ids)                      # "Return the sum." (byte-level: any text round-trips exactly)
    hf_tok = as_hf_tokenizer(tok)        # transformers.PreTrainedTokenizerFast with the same vocabulary

Design: GPT-2's byte-level pre-tokenizer and decoder (every byte is a token, so nothing is ever unknown and
``decode(encode(text)) == text`` for every string), one special token ``<|endoftext|>`` with id 0 (used as
document separator, BOS/EOS and padding), no post-processor (no token is added to an encoding).

Cached files: ``data/common/bpe_stdlib_<V>.json`` (the tokenizer) and ``bpe_stdlib_<V>.meta.json``
(provenance: corpus fingerprint, Python and ``tokenizers`` versions, the regeneration command). Regenerate them with
``python -m lib.common.bpe --vocab-sizes 2048 8192`` (a few seconds each; the Python version changes the
stdlib and hence the merges, so the shipped files stay the reference).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable, Optional, Sequence

from .params import check_int
from .paths import data_dir

EOS_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (EOS_TOKEN,)
SHIPPED_VOCAB_SIZES = (2048, 8192)
_N_BYTES = 256


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    *,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = SPECIAL_TOKENS,
):
    """Train a byte-level BPE tokenizer with ``vocab_size`` tokens (bytes + merges + ``special_tokens``).

    Deterministic for the same texts in the same order. Returns a ``tokenizers.Tokenizer``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    special_tokens = list(special_tokens)
    vocab_size = check_int("vocab_size", vocab_size, lo=_N_BYTES + len(special_tokens))
    texts = list(texts)
    if not texts:
        raise ValueError("parameter 'texts' is empty; a tokenizer needs text to train on")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


def cached_tokenizer_path(vocab_size: int, name: str = "bpe_stdlib") -> Path:
    """Where the tokenizer ``<name>_<vocab_size>.json`` lives: ``data/common/``."""
    return data_dir("common") / f"{name}_{int(vocab_size)}.json"


def build_stdlib_bpe(vocab_size: int, *, save: bool = True):
    """Train the suite's tokenizer on the whole stdlib corpus (docstrings and code lines) and cache it."""
    import tokenizers

    from .text_corpus import corpus_info, stdlib_corpus

    texts = stdlib_corpus("mixed", seed=0)
    tok = train_bpe(texts, vocab_size)
    if save:
        path = cached_tokenizer_path(vocab_size)
        path.parent.mkdir(parents=True, exist_ok=True)
        tok.save(str(path))
        meta = {
            "file": path.name,
            "what": f"byte-level BPE tokenizer, {vocab_size} tokens, special token {EOS_TOKEN!r} = id 0",
            "corpus": "lib.common.text_corpus.stdlib_corpus('mixed', seed=0): stdlib docstrings and code lines",
            "corpus_info": {k: v for k, v in corpus_info(texts).items() if k != "stdlib"},
            "tokenizers": tokenizers.__version__,
            "command": f"python -m lib.common.bpe --vocab-sizes {vocab_size}",
        }
        path.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return tok


def load_bpe(vocab_size: int = 2048, *, retrain: bool = False, save: bool = False):
    """The suite's stdlib BPE tokenizer with ``vocab_size`` tokens (a ``tokenizers.Tokenizer``).

    Loads ``data/common/bpe_stdlib_<vocab_size>.json``; if it is missing (a size that is not shipped:
    shipped sizes are 2048 and 8192) or ``retrain`` is set, trains it on the whole stdlib corpus (a few
    seconds) and, only with ``save``, writes it there (shipped files are listed in ``data/README.md``).
    """
    from tokenizers import Tokenizer

    vocab_size = check_int("vocab_size", vocab_size, lo=_N_BYTES + len(SPECIAL_TOKENS))
    path = cached_tokenizer_path(vocab_size)
    if path.exists() and not retrain:
        tok = Tokenizer.from_file(str(path))
    else:
        tok = build_stdlib_bpe(vocab_size, save=save)
    if tok.get_vocab_size() != vocab_size:
        raise RuntimeError(f"{path} holds {tok.get_vocab_size()} tokens, not {vocab_size}; regenerate it "
                           f"with `python -m lib.common.bpe --vocab-sizes {vocab_size}`")
    return tok


def as_hf_tokenizer(tok, model_max_length: Optional[int] = None):
    """Wrap a ``tokenizers.Tokenizer`` as a ``transformers.PreTrainedTokenizerFast`` (same ids).

    ``<|endoftext|>`` serves as BOS, EOS, UNK and padding token, as in GPT-2. Spaces are never "cleaned up"
    on decoding, so ``decode(encode(text))`` returns ``text``.
    """
    from transformers import PreTrainedTokenizerFast

    kwargs = {} if model_max_length is None else {"model_max_length": int(model_max_length)}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=EOS_TOKEN,
        pad_token=EOS_TOKEN,
        clean_up_tokenization_spaces=False,
        **kwargs,
    )


def encode_texts(tok, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text (batched, no special tokens added). Works with both tokenizer kinds."""
    if hasattr(tok, "encode_batch"):
        return [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=False)]
    return [list(ids) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]


def encode_corpus(tok, texts: Sequence[str], *, separator: Optional[int] = 0):
    """All ``texts`` as one 1-D ``torch.LongTensor`` stream, documents separated by token ``separator``
    (``<|endoftext|>`` = 0 by default; None: no separator): the input of language-model training."""
    import numpy as np
    import torch

    pieces = []
    for ids in encode_texts(tok, texts):
        pieces.append(np.asarray(ids, dtype=np.int64))
        if separator is not None:
            pieces.append(np.asarray([separator], dtype=np.int64))
    stream = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    return torch.from_numpy(stream)


def main(argv: Optional[Sequence[str]] = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Train and cache the suite's stdlib BPE tokenizers under data/common/")
    ap.add_argument("--vocab-sizes", type=int, nargs="+", default=list(SHIPPED_VOCAB_SIZES))
    args = ap.parse_args(argv)
    for v in args.vocab_sizes:
        t0 = time.perf_counter()
        build_stdlib_bpe(v, save=True)
        print(f"{cached_tokenizer_path(v)}: {v} tokens in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
