"""A seeded template engine: sentences with known sentence-level and token-level labels.

Interpretability and fairness papers need text whose ground truth is known: which concept a sentence carries,
which words are names or occupations, which pairs differ in exactly one word. A template has slots ``{lexicon}``
(or ``{slot:lexicon}`` to use one lexicon twice); a lexicon entry is a word (or phrase) with optional attributes::

    eng = TemplateEngine(
        templates=["{name} works as a {occupation} .", "The {occupation} met {friend:name} ."],
        lexicons={"name": [("Alice", {"gender": "f"}), ("Bob", {"gender": "m"})],
                  "occupation": ["nurse", "engineer"]},
    )
    samples = eng.sample(100, rng)                 # seeded by the numpy Generator
    s = samples[0]
    s.text, s.slots, s.labels                      # "Bob works as a nurse .", {"name": "Bob", ...}, {"gender": "m", ...}
    twin = eng.swap(s, "name", "Alice")            # the same sentence with only that slot changed
    token_labels(tokenizer, samples)               # per token: the lexicon of the slot it falls in, or None

Attributes of several slots merge into ``labels`` (a slot's attributes are also kept under ``"<slot>.<attr>"``);
``labels["template"]`` is the template's index.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Entry:
    word: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Sample:
    """One rendered sentence and everything known about it."""

    text: str
    template: int
    slots: dict  # slot -> word
    lexicon_of: dict  # slot -> lexicon name
    labels: dict  # merged attributes + "template"
    spans: dict  # slot -> (start, end) character offsets in text

    def words(self) -> list[tuple[str, Optional[str]]]:
        """Whitespace words with the lexicon of the slot each lies in (None for template words)."""
        out = []
        for m in re.finditer(r"\S+", self.text):
            lex = None
            for slot, (a, b) in self.spans.items():
                if m.start() < b and m.end() > a:
                    lex = self.lexicon_of[slot]
            out.append((m.group(), lex))
        return out


def _entries(values) -> list[Entry]:
    out = []
    for v in values:
        if isinstance(v, Entry):
            out.append(v)
        elif isinstance(v, str):
            out.append(Entry(v))
        elif isinstance(v, (tuple, list)) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], Mapping):
            out.append(Entry(v[0], dict(v[1])))
        else:
            raise ValueError(f"a lexicon entry must be a word, or (word, attributes dict); got {v!r}")
    if not out:
        raise ValueError("a lexicon is empty")
    return out


class TemplateEngine:
    """Templates with lexicon slots, rendered with a seeded ``numpy.random.Generator``."""

    def __init__(self, templates: Sequence[str], lexicons: Mapping[str, Sequence]):
        if not templates:
            raise ValueError("TemplateEngine: no templates")
        self.lexicons = {name: _entries(vals) for name, vals in lexicons.items()}
        self.templates = list(templates)
        # per template: (slot, lexicon) in order of appearance; string.Formatter reads "{slot:lexicon}" as field
        # "slot" with format spec "lexicon"
        self._slots = [self._parse(t) for t in self.templates]

    def _parse(self, template: str) -> list[tuple[str, str]]:
        slots = []
        for _, field_name, spec, conv in _FORMATTER.parse(template):
            if field_name is None:
                continue
            if conv:
                raise ValueError(f"template {template!r}: no conversions (!r, !s) in slots")
            lex = spec or field_name
            if lex not in self.lexicons:
                raise ValueError(f"template {template!r}: slot {field_name!r} names lexicon {lex!r}, which is not "
                                 f"defined (lexicons: {', '.join(self.lexicons)})")
            if any(s == field_name for s, _ in slots):
                raise ValueError(f"template {template!r}: slot {field_name!r} appears twice; name the second "
                                 f"{{other:{lex}}}")
            slots.append((field_name, lex))
        return slots

    def slots(self, template: int) -> list[tuple[str, str]]:
        """``(slot, lexicon)`` pairs of a template, in order."""
        return list(self._slots[template])

    def render(self, template: int, choices: Mapping[str, str]) -> Sample:
        """Fill template ``template`` with ``choices`` (slot -> word, each from the slot's lexicon)."""
        t = self.templates[template]
        text, spans, slots, lexicon_of, labels = "", {}, {}, {}, {"template": int(template)}
        for literal, field_name, spec, _ in _FORMATTER.parse(t):
            text += literal
            if field_name is None:
                continue
            lex = spec or field_name
            word = choices[field_name]
            entry = next((e for e in self.lexicons[lex] if e.word == word), None)
            if entry is None:
                raise ValueError(f"slot {field_name!r}: {word!r} is not in lexicon {lex!r}")
            spans[field_name] = (len(text), len(text) + len(word))
            text += word
            slots[field_name], lexicon_of[field_name] = word, lex
            for k, v in entry.attributes.items():
                labels[k] = v
                labels[f"{field_name}.{k}"] = v
        return Sample(text=text, template=int(template), slots=slots, lexicon_of=lexicon_of, labels=labels,
                      spans=spans)

    def sample(self, n: int, rng: np.random.Generator, *, templates: Optional[Sequence[int]] = None,
               fixed: Optional[Mapping[str, str]] = None) -> list[Sample]:
        """``n`` sentences: a template drawn uniformly (from ``templates``, default all), each slot's word uniformly
        from its lexicon, except slots named in ``fixed`` (slot -> word)."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError("TemplateEngine.sample needs a numpy Generator (cfg.rng(name)) for seeded draws")
        pool = list(range(len(self.templates))) if templates is None else list(templates)
        fixed = dict(fixed or {})
        out = []
        for _ in range(int(n)):
            t = pool[int(rng.integers(len(pool)))]
            choices = {}
            for slot, lex in self._slots[t]:
                if slot in fixed:
                    choices[slot] = fixed[slot]
                else:
                    entries = self.lexicons[lex]
                    choices[slot] = entries[int(rng.integers(len(entries)))].word
            out.append(self.render(t, choices))
        return out

    def swap(self, sample: Sample, slot: str, word: str) -> Sample:
        """The same sentence with only ``slot`` changed to ``word`` (a counterfactual twin)."""
        if slot not in sample.slots:
            raise ValueError(f"swap: the sentence has no slot {slot!r} (slots: {', '.join(sample.slots)})")
        return self.render(sample.template, {**sample.slots, slot: word})


def token_labels(tokenizer, samples: Sequence[Sample]) -> list[tuple[list[int], list[Optional[str]]]]:
    """Per sample: token ids and, per token, the lexicon of the slot the token overlaps (None for template text).

    Works with a ``tokenizers.Tokenizer`` (the suite's BPE) or a ``transformers`` fast tokenizer (offset mapping)."""
    texts = [s.text for s in samples]
    if hasattr(tokenizer, "encode_batch"):
        encs = tokenizer.encode_batch(texts, add_special_tokens=False)
        pairs = [(e.ids, e.offsets) for e in encs]
    else:
        enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        pairs = list(zip(enc["input_ids"], enc["offset_mapping"]))
    out = []
    for s, (ids, offsets) in zip(samples, pairs):
        labs = []
        for a, b in offsets:
            lab = None
            for slot, (sa, sb) in s.spans.items():
                if a < sb and b > sa:
                    lab = s.lexicon_of[slot]
            labs.append(lab)
        out.append((list(ids), labs))
    return out
