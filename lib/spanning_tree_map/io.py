"""Reading and writing pairwise MRFs in the UAI inference-competition format (``MARKOV`` networks).

Layout (whitespace-separated tokens; the line breaks are for readers, not required by the format)::

    MARKOV
    n
    K_0 K_1 ... K_{n-1}
    F
    <arity> <var> [<var>]          one scope per factor
    <entries> <values ...>        one table per factor, in scope order; the last variable changes fastest

The values are factor *potentials* phi >= 0 with P(x) proportional to prod phi; the MAP labelling minimises the energy
E(x) = -sum log phi. :func:`read_uai` converts to energies (phi = 0 becomes the large energy ``BIG_ENERGY``, a
forbidden label or pair that every solver still handles with finite arithmetic); several factors on
the same scope are summed. Factors of arity 0 or above 2 are refused (this notebook is about pairwise MRFs).
``values="energy"`` reads files whose tables already hold energies (the layout of the authors' converted files).
The reader follows the :mod:`lib.common.userfiles` contract: every problem is a ``ValueError`` naming ``data_path``,
the file, the line and what the format expects.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common.userfiles import UserFileError, read_text

from .model import PairwiseMRF

BIG_ENERGY = 1e6  # an energy used instead of +inf for phi = 0 on existing labels (keeps every solver finite)
UAI_EXPECTED = ("a pairwise MARKOV network in the UAI inference-competition format (.uai: the word MARKOV, the "
                "number of variables, their domain sizes, the number of factors, one scope per factor of arity 1 or "
                "2, then one table per factor, all separated by whitespace), or a folder of such files")


class UAIFormatError(UserFileError):
    """A .uai file that is not a pairwise MARKOV network in the UAI format (a ``ValueError`` naming ``data_path``)."""

    def __init__(self, path, problem: str, line: int | None = None):
        super().__init__("data_path", path, problem, expected=UAI_EXPECTED, line=line)


def _tokens(path: Path) -> tuple[list[str], list[int]]:
    """Every whitespace-separated token of the file with its line number, after :mod:`lib.common.userfiles`'s
    checks (missing, compressed, binary, empty, non-UTF-8 files and absurdly long lines are refused there)."""
    text = read_text("data_path", path, expected=UAI_EXPECTED)
    toks: list[str] = []
    lines: list[int] = []
    for k, ln in enumerate(text.splitlines(), start=1):
        for sep, name in ((",", "commas"), (";", "semicolons"), ("|", "bars")):
            if sep in ln:
                raise UAIFormatError(path, f"tokens are separated by {name}; the UAI format separates them by "
                                     "whitespace", line=k)
        parts = ln.split()
        toks += parts
        lines += [k] * len(parts)
    return toks, lines


def read_uai(path, values: str = "potential") -> PairwiseMRF:
    """Read a pairwise MARKOV .uai file into a :class:`PairwiseMRF` (energies = -log potentials).

    Every problem is a :class:`UAIFormatError` (a ``ValueError``) naming ``data_path``, the file and the line.
    """
    if values not in ("potential", "energy"):
        raise ValueError(f"parameter 'values' got {values!r}; allowed: 'potential', 'energy'")
    path = Path(path)
    tok, where = _tokens(path)
    pos = 0

    def fail(problem: str, at: int | None = None):
        at = pos - 1 if at is None else at
        line = where[at] if 0 <= at < len(where) else (where[-1] if where else None)
        raise UAIFormatError(path, problem, line=line)

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tok):
            fail(f"the file ends while reading {what}", len(tok) - 1)
        pos += 1
        return tok[pos - 1]

    def take_int(what: str, lo: int = 0) -> int:
        t = take(what)
        try:
            v = int(t)
        except ValueError:
            fail(f"expected an integer for {what}, found {t[:40]!r}")
        if v < lo:
            fail(f"{what} must be >= {lo}, found {v}")
        return v

    kind = take("the network type")
    if kind.upper() != "MARKOV":
        hint = " (a Bayesian network: convert it to MARKOV first)" if kind.upper() == "BAYES" else ""
        fail(f"network type {kind[:40]!r}; only MARKOV networks are supported{hint}")
    n = take_int("the number of variables", 1)
    K = np.array([take_int(f"the domain size of variable {i}", 1) for i in range(n)], dtype=np.int64)
    F = take_int("the number of factors")
    scopes = []
    for f in range(F):
        a = take_int(f"the arity of factor {f}")
        if a not in (1, 2):
            fail(f"factor {f} has arity {a}; only unary and pairwise factors are supported")
        sc = tuple(take_int(f"variable {k} of factor {f}") for k in range(a))
        if any(v >= n for v in sc):
            fail(f"factor {f} refers to a variable outside 0..{n - 1}")
        if a == 2 and sc[0] == sc[1]:
            fail(f"factor {f} has the same variable twice")
        scopes.append(sc)
    Km = int(K.max())
    unary = np.zeros((n, Km))
    pair_of: dict[tuple[int, int], np.ndarray] = {}
    for f, sc in enumerate(scopes):
        size = int(np.prod(K[list(sc)]))
        m = take_int(f"the table size of factor {f}")
        if m != size:
            fail(f"factor {f} declares {m} entries; its scope needs {size}")
        first = pos
        vals = []
        for _ in range(m):
            t = take(f"the table of factor {f}")
            try:
                vals.append(float(t))
            except ValueError:
                fail(f"factor {f}: {t[:40]!r} is not a number")
        vals = np.asarray(vals)
        if values == "potential":
            if np.any(vals < 0) or not np.all(np.isfinite(vals)):
                fail(f"factor {f} has a negative or non-finite potential (uai_values = 'energy' reads tables of "
                     "energies)", first)
            with np.errstate(divide="ignore"):
                en = -np.log(vals)
            en = np.minimum(en, BIG_ENERGY)
        else:
            if not np.all(np.isfinite(vals)):
                fail(f"factor {f} has a non-finite energy", first)
            en = vals
        if len(sc) == 1:
            unary[sc[0], :K[sc[0]]] += en
        else:
            u, v = sc
            tab = en.reshape(K[u], K[v])  # last variable fastest: row-major
            if u > v:
                u, v, tab = v, u, tab.T
            key = (u, v)
            pair_of[key] = pair_of.get(key, 0.0) + tab
    if pos != len(tok):
        fail(f"{len(tok) - pos} unexpected tokens after the last table", pos)
    keys = sorted(pair_of)
    edges = np.array(keys, dtype=np.int64).reshape(-1, 2)
    P = np.zeros((len(keys), Km, Km))
    for e, (u, v) in enumerate(keys):
        P[e, :K[u], :K[v]] = pair_of[(u, v)]
    mask = np.arange(Km)[None, :] < K[:, None]
    unary = np.where(mask, unary, np.inf)
    return PairwiseMRF(n=n, K=K, unary=unary, edges=edges, pair=P, name=path.stem, meta={"source": str(path)})


def write_uai(mrf: PairwiseMRF, path, digits: int = 12) -> Path:
    """Write ``mrf`` as a MARKOV .uai file: one unary factor per variable, then one pairwise factor per edge.

    Potentials are phi = exp(-theta), so :func:`read_uai` gives back the same energies (to ``digits`` significant
    digits of phi, about 1e-12 in energy).
    """
    path = Path(path)
    n, K = mrf.n, mrf.K
    lines = ["MARKOV", str(n), " ".join(str(int(k)) for k in K), str(n + mrf.n_edges)]
    lines += [f"1 {i}" for i in range(n)]
    lines += [f"2 {int(u)} {int(v)}" for u, v in mrf.edges]
    lines.append("")
    fmt = f"{{:.{digits}g}}"
    for i in range(n):
        t = mrf.unary[i, :K[i]]
        lines.append(str(len(t)))
        lines.append(" " + " ".join(fmt.format(v) for v in np.exp(-t)))
    for e, (u, v) in enumerate(mrf.edges):
        t = mrf.pair[e, :K[u], :K[v]]
        lines.append(str(t.size))
        for row in t:
            lines.append(" " + " ".join(fmt.format(v) for v in np.exp(-row)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return path


def uai_files(path) -> list[Path]:
    """The ``*.uai`` files of a folder (sorted by name), or ``[path]`` for a file; a clear error otherwise."""
    path = Path(path)
    if not path.exists():
        raise UserFileError("data_path", path, "no such file or folder", expected=UAI_EXPECTED)
    if not path.is_dir():
        return [path]
    files = sorted(path.glob("*.uai"))
    if not files:
        packed = sorted(p.name for p in path.iterdir() if p.name.endswith((".uai.gz", ".uai.bz2", ".uai.xz", ".zip",
                                                                           ".tar", ".tar.gz", ".tgz")))
        hint = f" (found {', '.join(packed[:3])}: decompress them first)" if packed else ""
        raise UserFileError("data_path", path, f"the folder holds no .uai file{hint}", expected=UAI_EXPECTED)
    return files


def read_uai_folder(path, values: str = "potential") -> list[PairwiseMRF]:
    """Every ``*.uai`` file of a folder (sorted by name), or the one file ``path``."""
    return [read_uai(f, values=values) for f in uai_files(path)]


def check_uai_data(data_path) -> list[PairwiseMRF]:
    """The ``data_path`` loader: the file or folder read for its structure (tables as energies, so that files of
    potentials and of energies both pass; ``config`` then reads them with the chosen ``uai_values``)."""
    return read_uai_folder(data_path, values="energy")
