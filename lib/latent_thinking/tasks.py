"""Generated reasoning tasks with exact, single-token answers (digits 0-9).

- ``arith``   (stands in for GSM8K / SVAMP): a chain ``3+4*2-1=`` evaluated left to right modulo 10.
- ``pointer`` (stands in for GSM-Symbolic): shuffled assignments ``c=b*2,a=3,b=a+4;c=``; the answer needs
  one hop per variable (value modulo 10).
- ``count``   (stands in for CommonsenseQA, another domain; full mode): ``abcabba;a=`` asks how many times
  the queried letter occurs (modulo 10).

Every prompt ends with ``=`` and its answer is one digit. Text is tokenized one character per token with the
suite's shipped byte-level BPE (``load_bpe(2048)``): each character used here is a single-byte token of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TASKS = ("arith", "pointer", "count")
OPS = "+-*"
DIGITS = "0123456789"
VARS = "abcdefghkmnpqrstuvwxyz"


@dataclass
class TaskSet:
    """``n`` questions of one task: prompt strings, answers (ints 0-9), and the task name."""

    task: str
    prompts: list
    answers: np.ndarray


def _apply(a: int, op: str, b: int) -> int:
    return (a + b) % 10 if op == "+" else (a - b) % 10 if op == "-" else (a * b) % 10


def _arith(rng, lengths):
    k = int(rng.choice(lengths))
    nums = rng.integers(0, 10, size=k)
    ops = rng.choice(list(OPS), size=k - 1)
    val = int(nums[0])
    s = str(nums[0])
    for op, b in zip(ops, nums[1:]):
        val = _apply(val, op, int(b))
        s += f"{op}{b}"
    return s + "=", val


def _pointer(rng, lengths):
    k = int(rng.choice(lengths))  # number of variables = hops
    names = list(rng.choice(list(VARS), size=k, replace=False))
    first = int(rng.integers(0, 10))
    lines = [f"{names[0]}={first}"]
    val = first
    for j in range(1, k):
        op, b = str(rng.choice(list(OPS))), int(rng.integers(1, 10))
        lines.append(f"{names[j]}={names[j - 1]}{op}{b}")
        val = _apply(val, op, b)
    order = rng.permutation(k)
    return ",".join(lines[i] for i in order) + f";{names[-1]}=", val


def _count(rng, lengths):
    k = int(rng.choice(lengths))
    letters = rng.choice(list("abc"), size=k)
    q = str(rng.choice(list("abc")))
    return "".join(letters) + f";{q}=", int((letters == q).sum()) % 10


_GEN = {"arith": _arith, "pointer": _pointer, "count": _count}
LENGTHS = {"arith": (2, 3), "pointer": (1, 2, 3), "count": (3, 4, 5)}


def make_task(task: str, n: int, rng: np.random.Generator, lengths=None) -> TaskSet:
    """``n`` seeded questions of ``task`` (``lengths``: operand / variable / letter counts to draw from)."""
    if task not in _GEN:
        raise ValueError(f"parameter 'task' got {task!r}; allowed: {', '.join(TASKS)}")
    lengths = tuple(lengths or LENGTHS[task])
    out = [_GEN[task](rng, lengths) for _ in range(int(n))]
    return TaskSet(task, [p for p, _ in out], np.array([a for _, a in out], dtype=np.int64))


def training_texts(n: int, rng: np.random.Generator, tasks=TASKS) -> list:
    """``n`` full examples ``prompt + answer`` drawn evenly from ``tasks`` (the language model's training text)."""
    texts = []
    for i in range(int(n)):
        t = tasks[i % len(tasks)]
        p, a = _GEN[t](rng, LENGTHS[t])
        texts.append(p + str(a))
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


def evaluate(prompt: str) -> int:
    """An independent evaluator: parse a prompt of any task and return its exact answer (0-9)."""
    if not prompt.endswith("="):
        raise ValueError(f"not a task prompt (no trailing '='): {prompt!r}")
    body = prompt[:-1]
    if ";" not in body:  # arithmetic: left-to-right, modulo 10
        expr = ""
        for ch in body:
            if ch in OPS:
                expr = f"({expr}){ch}" if expr else ch
            else:
                expr += ch
        return int(eval(expr, {"__builtins__": {}})) % 10  # noqa: S307 - digits, ops and parentheses only
    head, query = body.rsplit(";", 1)
    if "=" not in head:  # counting
        return head.count(query) % 10
    defs = dict(item.split("=", 1) for item in head.split(","))
    expr = defs[query]
    while any(c.isalpha() for c in expr):  # substitute variables until only digits remain
        for name, rhs in defs.items():
            expr = expr.replace(name, f"({rhs})")
    return int(eval(expr, {"__builtins__": {}})) % 10  # noqa: S307


class CharTokenizer:
    """One token per character, ids taken from the shipped byte-level BPE ``load_bpe(2048)``."""

    ALPHABET = DIGITS + OPS + "=,;" + "".join(sorted(set(VARS + "abc")))

    def __init__(self, bpe=None):
        if bpe is None:
            from lib.common.bpe import load_bpe

            bpe = load_bpe(2048)
        self.vocab_size = int(bpe.get_vocab_size())
        self.ids = {}
        for ch in self.ALPHABET:
            enc = bpe.encode(ch).ids
            if len(enc) != 1:
                raise RuntimeError(f"character {ch!r} is not a single token of the tokenizer")
            self.ids[ch] = enc[0]
        self.chars = {v: k for k, v in self.ids.items()}
        self.digit_ids = np.array([self.ids[d] for d in DIGITS], dtype=np.int64)
        self.eos = 0

    def encode(self, text: str) -> list:
        try:
            return [self.ids[c] for c in text]
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is outside the task alphabet") from None

    def decode(self, ids) -> str:
        return "".join(self.chars.get(int(i), "?") for i in ids)

    def stream(self, texts) -> "np.ndarray":
        """Training stream: the texts joined with ``<|endoftext|>`` (id 0) between and after them."""
        out = []
        for t in texts:
            out.extend(self.encode(t))
            out.append(self.eos)
        return np.array(out, dtype=np.int64)
