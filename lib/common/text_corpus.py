"""An offline English-and-code text corpus: the Python standard library's docstrings and code lines.

Every machine that runs the suite has a Python standard library, so it is a corpus that needs no download:
prose (docstrings, often long English explanations) mixed with code (source lines), which is also the mix of
the public corpora language-model papers use (web text plus GitHub code). Files are *parsed* with :mod:`ast`,
never imported (importing ``antigravity``, ``this`` or ``turtle`` has side effects).

Typical use::

    from lib.common.text_corpus import stdlib_corpus, stdlib_docstrings, corpus_info

    texts = stdlib_corpus(kind="mixed", max_files=200, seed=0)   # docstrings and code lines, shuffled by seed
    docs = stdlib_docstrings(max_docs=500, seed=1)                # prose only
    corpus_info(texts)                                           # size, sha256 and Python version, for provenance

Determinism: for a given Python version (the stdlib's content) the same arguments give the same list, in the
same order, on every machine and run; ``seed`` chooses which files are read (when ``max_files`` is set) and the
order of the texts. Parsing the whole library takes a few seconds; per-file results are cached in the process,
and ``max_files`` reads a seeded subset for quick runs.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import os
import sys
import sysconfig
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .params import check_choice, check_int, check_seed
from .seeding import rng_for

KINDS = ("mixed", "docstrings", "code")

# Folders that are not library prose or code worth modelling: tests (deliberately odd files), installed
# packages, build data, and the codec tables of `encodings` (tens of thousands of near-identical lines).
EXCLUDED_DIRS = frozenset(
    {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__", "lib-dynload",
     "ensurepip", "pydoc_data", "turtledemo", "encodings"}
)

DOCSTRING_MIN_CHARS = 20
CODE_MIN_CHARS = 12
CODE_MAX_CHARS = 120


def stdlib_dir() -> Path:
    """The standard library folder of the running interpreter (``sysconfig.get_paths()["stdlib"]``)."""
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


@functools.lru_cache(maxsize=1)
def stdlib_files() -> tuple[str, ...]:
    """Relative POSIX paths of the stdlib's ``.py`` files, sorted (tests and installed packages excluded)."""
    return python_files(stdlib_dir())


def python_files(root: Path) -> tuple[str, ...]:
    """Relative POSIX paths of the ``.py`` files under ``root``, sorted, skipping every folder named in
    ``EXCLUDED_DIRS`` or starting with ``config-``. Excluded folders are pruned, not walked: the base interpreter's
    ``site-packages`` under the stdlib folder can hold thousands of files (walking it cost ~1.8 s of 1.9 s here)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS and not d.startswith("config-")]
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        files.extend(f if rel_dir == "." else f"{rel_dir}/{f}" for f in filenames if f.endswith(".py"))
    return tuple(sorted(files))


def _docstring_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", None)
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                yield node, body[0]


def _is_utf8(text: str) -> bool:
    try:  # lone surrogates (from escapes such as "\\udc80") cannot go to a tokenizer
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def parse_source(source: str | bytes) -> tuple[list[str], list[str]]:
    """Docstrings and code lines of one Python source text; ``([], [])`` if it does not parse.

    Docstrings are cleaned as :func:`ast.get_docstring` does (indentation removed) and kept when at least
    ``DOCSTRING_MIN_CHARS`` long. Code lines are the stripped source lines that are neither blank, comments,
    nor inside a docstring, between ``CODE_MIN_CHARS`` and ``CODE_MAX_CHARS`` characters long.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [], []
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    docs, doc_lines = [], set()
    for node, expr in _docstring_nodes(tree):
        doc = ast.get_docstring(node, clean=True)
        if doc and len(doc) >= DOCSTRING_MIN_CHARS and _is_utf8(doc):
            docs.append(doc)
        doc_lines.update(range(expr.lineno, (expr.end_lineno or expr.lineno) + 1))
    code = []
    for i, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if i in doc_lines or not s or s.startswith("#"):
            continue
        if CODE_MIN_CHARS <= len(s) <= CODE_MAX_CHARS and _is_utf8(s):
            code.append(s)
    return docs, code


@functools.lru_cache(maxsize=None)
def _parse_file(rel: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        source = (stdlib_dir() / rel).read_bytes()
    except OSError:
        return (), ()
    docs, code = parse_source(source)
    return tuple(docs), tuple(code)


def package_of(rel: str) -> str:
    """The top-level stdlib package or module a file belongs to: ``"email/mime/text.py"`` -> ``"email"``,
    ``"argparse.py"`` -> ``"argparse"``."""
    first = rel.split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def stdlib_packages() -> dict[str, int]:
    """Top-level stdlib packages/modules -> number of files (the families a corpus can be filtered by)."""
    counts: dict[str, int] = {}
    for rel in stdlib_files():
        counts[package_of(rel)] = counts.get(package_of(rel), 0) + 1
    return dict(sorted(counts.items()))


def _select_files(max_files: Optional[int], seed: int, packages: Optional[Sequence[str]] = None) -> list[str]:
    files = list(stdlib_files())
    if not files:
        raise RuntimeError(f"no Python files found under the standard library folder {stdlib_dir()}")
    if packages is not None:
        wanted = set(packages)
        unknown = sorted(wanted - {package_of(f) for f in files})
        if unknown:
            raise ValueError(f"parameter 'packages' got unknown stdlib package(s) {unknown}; see "
                             f"lib.common.text_corpus.stdlib_packages()")
        files = [f for f in files if package_of(f) in wanted]
    if max_files is None or max_files >= len(files):
        return files
    idx = rng_for(seed, "stdlib_corpus/files").choice(len(files), size=max_files, replace=False)
    return [files[i] for i in sorted(idx)]


def stdlib_corpus(
    kind: str = "mixed",
    *,
    max_files: Optional[int] = None,
    max_texts: Optional[int] = None,
    seed: int = 0,
    dedupe: bool = True,
    packages: Optional[Sequence[str]] = None,
) -> list[str]:
    """Texts from the standard library: ``kind`` = ``"mixed"`` (docstrings and code lines), ``"docstrings"`` or
    ``"code"``. ``packages`` keeps only files of those top-level packages/modules (a "family" filter:
    ``packages=["email", "json"]``; see :func:`stdlib_packages`).

    ``max_files`` reads a seeded subset of files (None: all, a few seconds the first time); ``max_texts`` keeps
    the first texts after a seeded shuffle; ``dedupe`` drops repeated texts (the stdlib repeats short
    docstrings such as "Return self==value."). Same arguments and Python version, same list.
    """
    check_choice("kind", kind, KINDS)
    seed = check_seed("seed", seed)
    if max_files is not None:
        max_files = check_int("max_files", max_files, lo=1)
    if max_texts is not None:
        max_texts = check_int("max_texts", max_texts, lo=1)
    texts: list[str] = []
    if packages is not None:
        if isinstance(packages, str) or not all(isinstance(p, str) for p in packages) or not packages:
            raise ValueError(f"parameter 'packages' got {packages!r}; allowed: None or a non-empty list of stdlib "
                             f"package names")
        packages = sorted(set(packages))
    for rel in _select_files(max_files, seed, packages):
        docs, code = _parse_file(rel)
        if kind in ("mixed", "docstrings"):
            texts.extend(docs)
        if kind in ("mixed", "code"):
            texts.extend(code)
    if dedupe:
        texts = list(dict.fromkeys(texts))
    name = f"stdlib_corpus/order/{kind}" + ("" if packages is None else "/" + ",".join(packages))
    order = rng_for(seed, name).permutation(len(texts))
    texts = [texts[i] for i in order]
    return texts[:max_texts] if max_texts is not None else texts


def stdlib_docstrings(max_docs: Optional[int] = None, *, seed: int = 0, max_files: Optional[int] = None) -> list[str]:
    """Distinct docstrings of the standard library, shuffled by ``seed`` (see :func:`stdlib_corpus`)."""
    return stdlib_corpus("docstrings", max_files=max_files, max_texts=max_docs, seed=seed)


def stdlib_code_lines(max_lines: Optional[int] = None, *, seed: int = 0, max_files: Optional[int] = None) -> list[str]:
    """Distinct stripped source lines of the standard library, shuffled by ``seed`` (see :func:`stdlib_corpus`)."""
    return stdlib_corpus("code", max_files=max_files, max_texts=max_lines, seed=seed)


def split_texts(texts: Sequence[str], fractions: Sequence[float], *, seed: int = 0) -> list[list[str]]:
    """Split ``texts`` into disjoint seeded parts of the given fractions (e.g. ``(0.9, 0.1)`` train/held-out)."""
    fr = np.asarray(fractions, dtype=float)
    if fr.ndim != 1 or len(fr) == 0 or (fr < 0).any() or fr.sum() > 1 + 1e-9:
        raise ValueError(f"parameter 'fractions' got {list(fractions)!r}; allowed: non-negative numbers summing to <= 1")
    order = rng_for(seed, "split_texts").permutation(len(texts))
    bounds = np.floor(np.cumsum(fr) * len(texts) + 1e-9).astype(int)
    parts, start = [], 0
    for stop in bounds:
        parts.append([texts[i] for i in order[start:stop]])
        start = stop
    return parts


def corpus_info(texts: Sequence[str]) -> dict:
    """Size and fingerprint of a list of texts, with the Python version whose stdlib produced it."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", errors="surrogatepass"))
        h.update(b"\x00")
    return {
        "n_texts": len(texts),
        "n_chars": int(sum(len(t) for t in texts)),
        "sha256": h.hexdigest(),
        "python": sys.version.split()[0],
        "stdlib": str(stdlib_dir()),
    }
