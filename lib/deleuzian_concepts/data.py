"""Data with known concepts: templated sentences (sentence and token labels), augmented digits, CoNLL-2003 files.

- :func:`sentence_engine` / :func:`make_sentences`: seeded templated English sentences built with
  :class:`lib.common.templates.TemplateEngine`; every sentence carries 7 attributes (topic, sentiment, tense,
  negation, grammatical number, subject type, time of day: 19 one-vs-rest binary labels) and every word a word
  class (subject / verb / object / time / function word), the offline stand-in for the paper's IMDB / CoNLL tasks.
- :func:`make_digits`: scikit-learn's 8x8 digits, augmented by shifts, thickening and rotation, with the digit's
  own attributes (digit, parity, >= 5, has a loop) and the augmentation's (shift, thickness, rotation): the
  stand-in for the paper's image tasks (ImageNet / WikiArt attributes the model was not trained on).
- :func:`read_conll`: a CoNLL-2003 file (``word POS chunk NER`` per line, blank line between sentences,
  ``-DOCSTART-`` lines skipped) as token-level probe tasks (POS, chunk, NER).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common.userfiles import UserFileError, read_text

# ---------------------------------------------------------------- templated sentences
TOPICS = {
    "sports": ["the football match", "the tennis final", "the marathon", "the basketball game", "the ski race"],
    "food": ["the pasta", "the vegetable soup", "the chocolate cake", "the pizza", "the fresh bread"],
    "weather": ["the heavy rain", "the sunny weather", "the snowstorm", "the cold wind", "the summer heat"],
    "music": ["the concert", "the new album", "the jazz band", "the piano recital", "the opera"],
    "finance": ["the stock market", "the bank loan", "the tax report", "the interest rates", "the budget"],
    "travel": ["the flight", "the train trip", "the hotel", "the beach holiday", "the museum tour"],
}
SUBJECTS = {  # (singular, plural) per subject type
    "person": [("the teacher", "the teachers"), ("my sister", "my sisters"), ("the doctor", "the doctors"),
               ("our neighbour", "our neighbours")],
    "animal": [("the dog", "the dogs"), ("my cat", "my cats"), ("the old horse", "the old horses"),
               ("the parrot", "the parrots")],
    "group": [("the company", "the companies"), ("the local club", "the local clubs"), ("the city council",
              "the city councils"), ("the school", "the schools")],
}
VERBS = {"pos": [("enjoy", "enjoyed"), ("love", "loved"), ("praise", "praised"), ("like", "liked")],
         "neg": [("hate", "hated"), ("dislike", "disliked"), ("criticize", "criticized"), ("fear", "feared")]}
TIMES = {"morning": ["this morning", "at breakfast", "at dawn"],
         "evening": ["this evening", "after dinner", "at sunset"],
         "night": ["at night", "at midnight", "late at night"]}
FRAMES = ["{subject} {verb} {object} {time} .", "{time} , {subject} {verb} {object} .",
          "{subject} really {verb} {object} {time} .", "everyone says that {subject} {verb} {object} {time} ."]
SENTENCE_TASKS = ["topic", "sentiment", "tense", "negation", "number", "subject", "time"]
WORD_CLASSES = ["subject", "verb", "object", "time", "function"]


def _verb_form(base: str, past: str, tense: str, number: str, neg: bool) -> str:
    if tense == "past":
        return f"did not {base}" if neg else past
    if tense == "future":
        return f"will not {base}" if neg else f"will {base}"
    if number == "sing":
        return f"does not {base}" if neg else (base + "s" if not base.endswith("e") else base + "s")
    return f"do not {base}" if neg else base


def sentence_engine():
    """The template engine: one template per frame and grammatical number, lexicons with attributes."""
    from lib.common.templates import TemplateEngine

    lex = {"object": [], "time": [], "subject_sing": [], "subject_plur": [], "verb_sing": [], "verb_plur": []}
    for topic, words in TOPICS.items():
        lex["object"] += [(w, {"topic": topic}) for w in words]
    for tod, words in TIMES.items():
        lex["time"] += [(w, {"time": tod}) for w in words]
    for stype, pairs in SUBJECTS.items():
        lex["subject_sing"] += [(s, {"subject": stype, "number": "sing"}) for s, _ in pairs]
        lex["subject_plur"] += [(p, {"subject": stype, "number": "plur"}) for _, p in pairs]
    for sent, verbs in VERBS.items():
        for base, past in verbs:
            for tense in ("past", "present", "future"):
                for neg in (False, True):
                    for number in ("sing", "plur"):
                        lex[f"verb_{number}"].append((_verb_form(base, past, tense, number, neg),
                                                      {"sentiment": sent, "tense": tense,
                                                       "negation": "neg" if neg else "affirm"}))
    templates = []
    for frame in FRAMES:
        for number in ("sing", "plur"):
            templates.append(frame.replace("{subject}", f"{{subject:subject_{number}}}")
                             .replace("{verb}", f"{{verb:verb_{number}}}"))
    return TemplateEngine(templates, lex)


@dataclass
class TextData:
    texts: list
    labels: pd.DataFrame  # one column per sentence task (string values)
    samples: list = field(default_factory=list, repr=False)


def make_sentences(n: int, rng: np.random.Generator) -> TextData:
    """``n`` seeded templated sentences and their 7 sentence attributes."""
    samples = sentence_engine().sample(int(n), rng)
    labels = pd.DataFrame([{t: s.labels[t] for t in SENTENCE_TASKS} for s in samples])
    return TextData(texts=[s.text for s in samples], labels=labels, samples=samples)


def word_class_of(lexicon):
    """Word class of a token from the lexicon name of the slot it falls in (None: a template word)."""
    if lexicon is None:
        return "function"
    return lexicon.split("_")[0]


# ---------------------------------------------------------------- digits
LOOP_DIGITS = (0, 6, 8, 9)
DIGIT_TASKS = ["digit", "parity", "ge5", "loop", "shift", "thick", "rotation"]


@dataclass
class DigitData:
    images: np.ndarray  # [n, 8, 8] in [0, 1]
    labels: pd.DataFrame


def make_digits(n: int, rng: np.random.Generator) -> DigitData:
    """``n`` augmented digits: a random digit of sklearn's set, shifted left/right by one pixel or not, thickened
    (grey dilation) or not, rotated by -20, 0 or +20 degrees; labels of the digit and of the augmentation."""
    from scipy import ndimage
    from sklearn.datasets import load_digits

    base = load_digits()
    X0, y0 = base.images / 16.0, base.target
    idx = rng.integers(0, len(y0), size=int(n))
    shift = rng.integers(-1, 2, size=int(n))
    thick = rng.integers(0, 2, size=int(n))
    rot = rng.integers(-1, 2, size=int(n))
    out = X0[idx].copy()
    for r in (-1, 1):  # whole stacks at once: one ndimage call per augmentation value
        sel = rot == r
        out[sel] = ndimage.rotate(out[sel], 20.0 * r, axes=(2, 1), reshape=False, order=1, mode="constant")
    sel = thick == 1
    out[sel] = ndimage.grey_dilation(out[sel], size=(1, 2, 2))
    for s in (-1, 1):
        sel = shift == s
        out[sel] = ndimage.shift(out[sel], (0, 0, s), order=0, mode="constant")
    out = np.clip(out, 0.0, 1.0)
    y = y0[idx]
    labels = pd.DataFrame({
        "digit": y.astype(str), "parity": np.where(y % 2 == 0, "even", "odd"),
        "ge5": np.where(y >= 5, "ge5", "lt5"), "loop": np.where(np.isin(y, LOOP_DIGITS), "loop", "open"),
        "shift": np.array(["left", "none", "right"])[shift + 1], "thick": np.where(thick == 1, "thick", "thin"),
        "rotation": np.array(["ccw", "upright", "cw"])[rot + 1],
    })
    return DigitData(images=out, labels=labels)


# ---------------------------------------------------------------- CoNLL-2003
CONLL_EXPECTED = ("a CoNLL-2003 file: one token per line as 'word POS chunk NER' (4 fields separated by spaces or "
                  "tabs, tags such as NNP, I-NP, B-PER/O), a blank line between sentences, -DOCSTART- lines allowed")
CONLL_TASKS = ["pos", "chunk", "ner"]


@dataclass
class ConllData:
    sentences: list  # list of lists of words
    tags: list  # per sentence: list of (pos, chunk, ner)

    def n_tokens(self) -> int:
        return sum(len(s) for s in self.sentences)


def _check_tag(tag: str, which: str, parameter, path, line) -> None:
    if which in ("chunk", "ner"):
        if tag != "O" and not (len(tag) > 2 and tag[0] in "BIES" and tag[1] == "-" and tag[2:].isalpha()):
            raise UserFileError(parameter, path, f"the {which.upper() if which == 'ner' else which} tag {tag!r} is not 'O' or a B-/I- tag such as "
                                f"'B-PER'", expected=CONLL_EXPECTED, line=line)
    elif not (re.fullmatch(r"[A-Z$|-]{1,8}", tag) or re.fullmatch(r"[.,:;`'\"()#$]{1,2}", tag)):
        raise UserFileError(parameter, path, f"the POS tag {tag!r} is not a Penn-Treebank-style tag (e.g. NNP, "
                            f"VBD, ',')", expected=CONLL_EXPECTED, line=line)


def read_conll(path, *, parameter: str = "data_path", max_sentences=None) -> ConllData:
    """Read a CoNLL-2003 file; every malformed line is refused with a :class:`UserFileError` naming it."""
    text = read_text(parameter, path, expected=CONLL_EXPECTED)
    lines = text.splitlines()
    sentences, tags, words, wtags = [], [], [], []
    for k, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            if words:
                sentences.append(words)
                tags.append(wtags)
                words, wtags = [], []
            continue
        fields = line.split()
        if fields[0] == "-DOCSTART-":
            continue
        if len(fields) != 4:
            delim = next((d for d in (",", ";", "|") if d in line and len(line.split(d)) >= 4), None)
            hint = f" (fields separated by {delim!r}? use spaces or tabs)" if delim else ""
            raise UserFileError(parameter, path, f"{len(fields)} field(s) {line[:60]!r}{hint}",
                                expected=CONLL_EXPECTED, line=k)
        word, pos, chunk, ner = fields
        _check_tag(pos, "pos", parameter, path, k)
        _check_tag(chunk, "chunk", parameter, path, k)
        _check_tag(ner, "ner", parameter, path, k)
        words.append(word)
        wtags.append((pos, chunk, ner))
    if words:
        sentences.append(words)
        tags.append(wtags)
    if not text.endswith("\n") and lines and lines[-1].strip():
        raise UserFileError(parameter, path, "the last line does not end with a newline (a truncated file?)",
                            expected=CONLL_EXPECTED, line=len(lines))
    if not sentences:
        raise UserFileError(parameter, path, "no token lines (only -DOCSTART- or blank lines)",
                            expected=CONLL_EXPECTED)
    if max_sentences is not None:
        sentences, tags = sentences[:int(max_sentences)], tags[:int(max_sentences)]
    return ConllData(sentences=sentences, tags=tags)


def write_conll_fixture(path) -> None:
    """The tiny fixture ``data/deleuzian_concepts/conll_fixture.txt`` (hand-written sentences in CoNLL-2003 style)."""
    rows = [
        [("EU", "NNP", "B-NP", "B-ORG"), ("rejects", "VBZ", "B-VP", "O"), ("German", "JJ", "B-NP", "B-MISC"),
         ("call", "NN", "I-NP", "O"), ("to", "TO", "B-VP", "O"), ("boycott", "VB", "I-VP", "O"),
         ("British", "JJ", "B-NP", "B-MISC"), ("lamb", "NN", "I-NP", "O"), (".", ".", "O", "O")],
        [("Peter", "NNP", "B-NP", "B-PER"), ("Blackburn", "NNP", "I-NP", "I-PER")],
        [("BRUSSELS", "NNP", "B-NP", "B-LOC"), ("1996-08-22", "CD", "I-NP", "O")],
        [("The", "DT", "B-NP", "O"), ("European", "NNP", "I-NP", "B-ORG"), ("Commission", "NNP", "I-NP", "I-ORG"),
         ("said", "VBD", "B-VP", "O"), ("on", "IN", "B-PP", "O"), ("Thursday", "NNP", "B-NP", "O"),
         ("it", "PRP", "B-NP", "O"), ("disagreed", "VBD", "B-VP", "O"), ("with", "IN", "B-PP", "O"),
         ("German", "JJ", "B-NP", "B-MISC"), ("advice", "NN", "I-NP", "O"), (".", ".", "O", "O")],
        [("Germany", "NNP", "B-NP", "B-LOC"), ("'s", "POS", "B-NP", "O"), ("representative", "NN", "I-NP", "O"),
         ("to", "TO", "B-PP", "O"), ("the", "DT", "B-NP", "O"), ("European", "NNP", "I-NP", "B-ORG"),
         ("Union", "NNP", "I-NP", "I-ORG"), ("said", "VBD", "B-VP", "O"), ("Werner", "NNP", "B-NP", "B-PER"),
         ("Zwingmann", "NNP", "I-NP", "I-PER"), (".", ".", "O", "O")],
    ]
    out = ["-DOCSTART- -X- -X- O", ""]
    for sent in rows:
        out += [" ".join(t) for t in sent] + [""]
    from pathlib import Path

    Path(path).write_text("\n".join(out), encoding="utf-8")
