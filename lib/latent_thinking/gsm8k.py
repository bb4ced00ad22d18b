"""Reader for GSM8K's jsonl files (the paper's main benchmark) and the fixture script.

Each line of ``train.jsonl`` / ``test.jsonl`` is a JSON object ``{"question": "...", "answer": "...#### 72"}``:
the worked solution ends with ``#### <number>``. ``read_gsm8k`` returns ``(questions, answers)`` (answers as
floats, commas removed) and refuses a malformed file with :class:`lib.common.userfiles.UserFileError` naming
``data_path``, the file, the line and what was found.

    python -m lib.latent_thinking.gsm8k --fixture    # writes data/latent_thinking/gsm8k_fixture.jsonl
"""
from __future__ import annotations

import json
import re

from lib.common.userfiles import UserFileError, read_jsonl

EXPECTED = ('GSM8K jsonl: one JSON object per line with string fields "question" and "answer", the answer '
            'ending in "#### <number>"')
_FINAL = re.compile(r"####\s*(-?[\d,]*\.?\d+)\s*$")


def read_gsm8k(path, parameter="data_path"):
    questions, answers = [], []
    for no, rec in read_jsonl(parameter, path, expected=EXPECTED):
        for key in ("question", "answer"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise UserFileError(parameter, path, f"field {key!r} is missing or not a non-empty string",
                                    expected=EXPECTED, line=no)
        m = _FINAL.search(rec["answer"].strip())
        if not m:
            tail = rec["answer"].strip()[-30:]
            raise UserFileError(parameter, path, f"the answer does not end in '#### <number>' (ends {tail!r})",
                                expected=EXPECTED, line=no)
        questions.append(rec["question"])
        answers.append(float(m.group(1).replace(",", "")))
    return questions, answers


FIXTURE = [  # written for this suite in GSM8K's format; not GSM8K items
    {"question": "Ada has 3 boxes with 4 pens each. She gives away 5 pens. How many pens are left?",
     "answer": "3 boxes hold 3*4=<<3*4=12>>12 pens.\nAfter giving 5 away, 12-5=<<12-5=7>>7 remain.\n#### 7"},
    {"question": "A train travels 60 km per hour for 2 hours and then 45 km. How far does it travel?",
     "answer": "It travels 60*2=<<60*2=120>>120 km, then 120+45=<<120+45=165>>165 km.\n#### 165"},
    {"question": "Tom buys 12 apples and eats a quarter of them. How many are left?",
     "answer": "He eats 12/4=<<12/4=3>>3 apples, so 12-3=<<12-3=9>>9 are left.\n#### 9"},
    {"question": "A shop sells 1,200 cups a week at 2 dollars each. What is the weekly revenue?",
     "answer": "1,200*2=<<1200*2=2400>>2,400 dollars.\n#### 2,400"},
]


def write_fixture(path=None):
    from lib.common import data_dir

    path = path or data_dir("latent_thinking") / "gsm8k_fixture.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in FIXTURE), encoding="utf-8")
    return path


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixture", action="store_true", help="write data/latent_thinking/gsm8k_fixture.jsonl")
    if ap.parse_args().fixture:
        print(write_fixture())
