"""Sources and targets of the FastMix stand-in: stdlib docstring families, code, templated English, arithmetic,
random-token noise (k = 6); full mode adds a near-duplicate source and three more families (k = 10).

The stdlib texts are extracted once by :mod:`lib.fastmix.make_data` into ``data/fastmix/stdlib_sources.json``
(parsing the library takes ~10 s; the shipped file keeps runs fast and the same across Python versions).
``read_pile_jsonl`` reads a Pile-style JSONL shard (``{"text": ..., "meta": {"pile_set_name": ...}}``), one source
per set name.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lib.common.paths import data_dir
from lib.common.userfiles import UserFileError, read_jsonl

# Package families (top-level stdlib packages). TARGET_A is held out: never a training source.
FAMILIES = {
    "doc_files": ["os", "io", "pathlib", "shutil", "glob", "tempfile", "fnmatch"],
    "doc_func": ["collections", "functools", "operator", "heapq", "bisect"],
    "doc_text": ["re", "string", "textwrap", "difflib"],
    "doc_num": ["decimal", "fractions", "statistics", "random"],
    "doc_web": ["email", "http", "urllib", "html"],
}
TARGET_A = ["json", "csv", "configparser"]
CODE_PACKAGES = ["argparse", "logging", "unittest", "dataclasses", "enum", "typing", "ast", "inspect"]
SOURCES_QUICK = ["doc_files", "doc_func", "code", "english", "arithmetic", "noise"]
SOURCES_FULL = ["doc_files", "doc_func", "doc_text", "doc_num", "doc_web", "code", "english", "arithmetic",
                "noise", "duplicate"]
DOC_SOURCES = tuple(FAMILIES)
SHIPPED = "stdlib_sources.json"
PILE_EXPECTED = ('a Pile-style JSONL shard: one JSON object per line, {"text": "<non-empty string>", '
                 '"meta": {"pile_set_name": "<name>"}}, with at least 3 distinct set names')


def stdlib_sources_path() -> Path:
    return data_dir("fastmix") / SHIPPED


def load_stdlib_sources() -> dict:
    """The shipped stdlib texts: {"families": {name: [docstrings]}, "target_a": [...], "code": [...], "meta": {...}}."""
    path = stdlib_sources_path()
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; regenerate it with `python -m lib.fastmix.make_data`")
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- synthetic sources
_ENGLISH_TEMPLATES = [
    "{name} walked to the {place} and bought {n} {thing} .",
    "After lunch , {name} told {friend:name} a story about the {place} .",
    "The {thing} in the {place} was old , so {name} painted it {colour} .",
    "{name} and {friend:name} played in the {place} until the sky turned {colour} .",
    "Every morning {name} feeds the {animal} near the {place} .",
    "Once upon a time a {colour} {animal} lived behind the {place} .",
]
_LEXICONS = {
    "name": ["Alice", "Bob", "Carol", "Dan", "Eve", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Oscar"],
    "place": ["market", "park", "school", "river", "garden", "library", "station", "harbour", "forest", "bakery"],
    "thing": ["apples", "books", "chairs", "lamps", "kites", "shoes", "boxes", "cups", "maps", "hats"],
    "n": ["two", "three", "four", "five", "six", "seven", "ten", "many"],
    "colour": ["red", "blue", "green", "yellow", "purple", "grey", "golden"],
    "animal": ["cat", "dog", "horse", "goose", "fox", "rabbit", "owl", "goat"],
}


def templated_english(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` short stories of 3-6 templated sentences (lib.common.templates.TemplateEngine)."""
    from lib.common.templates import TemplateEngine

    eng = TemplateEngine(_ENGLISH_TEMPLATES, _LEXICONS)
    lens = rng.integers(3, 7, size=n)
    sents = eng.sample(int(lens.sum()), rng)
    out, i = [], 0
    for m in lens:
        out.append(" ".join(s.text for s in sents[i:i + m]))
        i += m
    return out


def arithmetic_strings(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` lines of 4-8 sums such as ``17+25=42``."""
    out = []
    for _ in range(n):
        m = int(rng.integers(4, 9))
        a, b = rng.integers(0, 100, size=m), rng.integers(0, 100, size=m)
        out.append(" ".join(f"{x}+{y}={x + y}" for x, y in zip(a, b)))
    return out


def near_duplicates(n: int, rng: np.random.Generator, base: str) -> list[str]:
    """``n`` copies of one paragraph with ~5% of its words replaced by others of the paragraph (low-value data)."""
    words = base.split()
    out = []
    for _ in range(n):
        w = list(words)
        for j in rng.choice(len(w), size=max(1, len(w) // 20), replace=False):
            w[j] = words[int(rng.integers(len(words)))]
        out.append(" ".join(w))
    return out


# ---------------------------------------------------------------- Pile-style JSONL
def read_pile_jsonl(path, parameter: str = "data_path") -> dict[str, list[str]]:
    """A Pile-style JSONL shard -> {pile_set_name: [texts]} (sorted by name). Bad lines raise UserFileError."""
    out: dict[str, list[str]] = {}
    for no, rec in read_jsonl(parameter, path, expected=PILE_EXPECTED):
        text, meta = rec.get("text"), rec.get("meta")
        if not isinstance(text, str) or not text.strip():
            raise UserFileError(parameter, path, f"field 'text' missing or not a non-empty string (got {text!r:.40})",
                                expected=PILE_EXPECTED, line=no)
        name = meta.get("pile_set_name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise UserFileError(parameter, path, "field 'meta.pile_set_name' missing or not a non-empty string",
                                expected=PILE_EXPECTED, line=no)
        out.setdefault(name, []).append(text)
    if len(out) < 3:
        raise UserFileError(parameter, path, f"only {len(out)} distinct pile_set_name value(s) {sorted(out)}; "
                            "FastMix needs >= 2 sources and 1 target set", expected=PILE_EXPECTED)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- assembling the corpora
@dataclass
class Corpora:
    """Texts per source (train and held-out) and the target's validation (search signal) and test texts."""

    names: list
    train: dict
    heldout: dict
    target_val: list
    target_test: list
    target_name: str
    info: dict = field(default_factory=dict)


def _split(texts, rng, frac=0.1):
    order = rng.permutation(len(texts))
    n_h = max(1, int(round(frac * len(texts))))
    return [texts[i] for i in order[n_h:]], [texts[i] for i in order[:n_h]]


def build_corpora(sources, rng: np.random.Generator, *, data_path=None, target_set=None, n_synthetic=400) -> Corpora:
    """All texts of the run. ``noise`` is token-level (made by the sampler), so it has no texts here."""
    train, held = {}, {}
    if data_path is not None:
        sets = read_pile_jsonl(data_path)
        target_set = target_set if target_set is not None else list(sets)[-1]
        if target_set not in sets:
            raise ValueError(f"parameter 'target_set' got {target_set!r}; allowed: one of {list(sets)}")
        names = [s for s in sets if s != target_set]
        for s in names:
            train[s], held[s] = _split(sets[s], rng)
        val, test = _split(sets[target_set], rng, 0.5)
        return Corpora(names, train, held, val, test, target_set, {"data_path": str(data_path)})
    shipped = load_stdlib_sources()
    for s in sources:
        if s in FAMILIES:
            texts = shipped["families"][s]
        elif s == "code":
            texts = shipped["code"]
        elif s == "english":
            texts = templated_english(n_synthetic, rng)
        elif s == "arithmetic":
            texts = arithmetic_strings(n_synthetic, rng)
        elif s == "duplicate":
            texts = near_duplicates(n_synthetic // 4, rng, shipped["families"]["doc_files"][0])
        elif s == "noise":
            train[s], held[s] = [], []
            continue
        else:
            raise ValueError(f"unknown source {s!r}")
        train[s], held[s] = _split(list(texts), rng)
    val, test = _split(list(shipped["target_a"]), rng, 0.5)
    return Corpora(list(sources), train, held, val, test, "docs{" + ",".join(TARGET_A) + "}", dict(shipped["meta"]))


# ---------------------------------------------------------------- target B: arithmetic QA and a docstring cloze
QA_PROMPT = "q: {a}+{b} a:"  # answer: " {a + b}"; the loss counts the answer's tokens only


def arithmetic_qa_split(n_val: int, n_test: int, rng: np.random.Generator):
    """Target B's items (the SFT variant's stand-in for GSM8K): (prompt, answer) pairs such as ("q: 12+30 a:",
    " 42"), operands 0-99; the validation and test questions are distinct pairs (no question in both)."""
    if n_val + n_test > 10_000:
        raise ValueError(f"arithmetic QA has 10,000 distinct questions; asked for {n_val} + {n_test}")
    pairs = rng.permutation(10_000)[:n_val + n_test]
    items = [(QA_PROMPT.format(a=int(p) // 100, b=int(p) % 100), f" {int(p) // 100 + int(p) % 100}") for p in pairs]
    return items[:n_val], items[n_val:]


def cloze_items(docs, n: int, rng: np.random.Generator, *, context_words: int = 12, min_len: int = 3):
    """The transfer task: ``n`` docstring cloze items (prompt, answer): the prompt is up to ``context_words``
    consecutive words of a docstring, the answer " <word>" the word that follows it (letters only, >= ``min_len``
    of them), so that prompt + answer is a contiguous, whitespace-normalised span of the docstring."""
    cands = []
    for d, doc in enumerate(docs):
        w = doc.split()
        cands += [(d, j) for j in range(3, len(w)) if w[j].isalpha() and len(w[j]) >= min_len]
    if len(cands) < n:
        raise ValueError(f"cloze_items: {len(cands)} candidate positions in {len(docs)} texts; need {n}")
    out = []
    for c in rng.choice(len(cands), size=n, replace=False):
        d, j = cands[int(c)]
        w = docs[d].split()
        out.append((" ".join(w[max(0, j - context_words):j]), " " + w[j]))
    return out
