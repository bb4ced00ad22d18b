"""Regenerate data/fastmix/stdlib_sources.json: the stdlib docstring families, the held-out target family and
code lines used as FastMix's offline sources. Run: ``python -m lib.fastmix.make_data``."""
from __future__ import annotations

import json
import sys

from lib.common.text_corpus import corpus_info, stdlib_corpus, stdlib_packages

from .data import CODE_PACKAGES, FAMILIES, TARGET_A, stdlib_sources_path

MAX_CODE = 2500


def build() -> dict:
    have = stdlib_packages()
    fam = {k: stdlib_corpus("docstrings", packages=[p for p in v if p in have], seed=0) for k, v in FAMILIES.items()}
    target = stdlib_corpus("docstrings", packages=[p for p in TARGET_A if p in have], seed=0)
    code = stdlib_corpus("code", packages=[p for p in CODE_PACKAGES if p in have], seed=0, max_texts=MAX_CODE)
    meta = {"python": sys.version.split()[0], "families": FAMILIES, "target_a": TARGET_A,
            "code_packages": CODE_PACKAGES, "sha256": corpus_info(target + code + sum(fam.values(), []))["sha256"]}
    return {"families": fam, "target_a": target, "code": code, "meta": meta}


FIXTURE_SETS = {
    "ArXiv": ["We study the convergence of stochastic gradient methods, with rates for convex and non-convex objectives.",
              "The proposed estimator is unbiased, and its variance decreases with the batch size."],
    "Github": ["def add(a, b):\n    return a + b", "for i in range(10):\n    print(i, i * i)"],
    "PubMed Abstracts": ["Patients were randomised to two arms, and outcomes were measured at twelve weeks.",
                         "The trial enrolled 120 adults, with a median age of 54 years."],
    "Wikipedia (en)": ["Paris is the capital of France, and its largest city.",
                       "The river flows north, through three provinces, to the sea."],
}


def write_fixture() -> None:
    """data/fastmix/tiny_pile.jsonl: 8 hand-written lines in the Pile's JSONL format (4 set names), for the reader."""
    path = stdlib_sources_path().parent / "tiny_pile.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for name, texts in FIXTURE_SETS.items():
            for t in texts:
                f.write(json.dumps({"text": t, "meta": {"pile_set_name": name}}) + "\n")
    print(f"wrote {path}")


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    write_fixture()
    if "--fixture-only" in argv:
        return
    payload = build()
    path = stdlib_sources_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=0), encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
