"""Prompt sets: spans of tokenized docstrings (real text) mixed with uniformly random token sequences, as in
the paper's collision and inversion sets; deduplicated by token sequence."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def docstring_spans(docs_ids: Sequence[Sequence[int]], n: int, *, min_len: int, max_len: int,
                    rng: np.random.Generator, exact_len: bool = False, exclude=()) -> list[tuple]:
    """Up to ``n`` distinct token spans of random length in [min_len, max_len] (or exactly ``max_len`` when
    ``exact_len``) cut at random places from random documents long enough to hold them."""
    lengths = np.array([len(d) for d in docs_ids])
    seen, out = set(map(tuple, exclude)), []
    attempts = 0
    while len(out) < n and attempts < 50 * n + 1000:
        attempts += 1
        L = int(max_len) if exact_len else int(rng.integers(min_len, max_len + 1))
        ok = np.nonzero(lengths >= L)[0]
        if len(ok) == 0:
            continue
        d = docs_ids[int(ok[rng.integers(len(ok))])]
        s = int(rng.integers(0, len(d) - L + 1))
        span = tuple(int(x) for x in d[s:s + L])
        if span not in seen:
            seen.add(span)
            out.append(span)
    return out


def random_token_prompts(n: int, *, min_len: int, max_len: int, vocab_size: int, rng: np.random.Generator,
                         exclude=(), low: int = 1) -> list[tuple]:
    """``n`` distinct uniformly random token sequences (ids in [low, vocab_size), lengths in [min_len, max_len])."""
    seen, out = set(map(tuple, exclude)), []
    while len(out) < n:
        L = int(rng.integers(min_len, max_len + 1))
        p = tuple(int(x) for x in rng.integers(low, vocab_size, L))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def mixed_prompts(docs_ids, n: int, *, min_len: int, max_len: int, vocab_size: int, random_frac: float,
                  rng: np.random.Generator, exact_len: bool = False, exclude=()) -> list[tuple]:
    """``n`` distinct prompts: a ``random_frac`` share of random token sequences, the rest docstring spans."""
    n_rand = int(round(random_frac * n))
    real = docstring_spans(docs_ids, n - n_rand, min_len=min_len, max_len=max_len, rng=rng,
                           exact_len=exact_len, exclude=exclude)
    lo = max_len if exact_len else min_len
    rand = random_token_prompts(n - len(real), min_len=lo, max_len=max_len, vocab_size=vocab_size, rng=rng,
                                exclude=list(exclude) + real)
    return real + rand


def all_prompts_up_to(vocab_size: int, max_len: int) -> list[tuple]:
    """Every prompt of length 1..max_len over a vocabulary of ``vocab_size`` tokens (|V| + |V|² + ...)."""
    out = [()]
    result = []
    for _ in range(max_len):
        out = [p + (v,) for p in out for v in range(vocab_size)]
        result.extend(out)
    return result
