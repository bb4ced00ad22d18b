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
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .model import PairwiseMRF

BIG_ENERGY = 1e6  # an energy used instead of +inf for phi = 0 on existing labels (keeps every solver finite)


class UAIFormatError(ValueError):
    """A .uai file that is not a pairwise MARKOV network in the UAI format."""


def _tokens(path: Path) -> list[str]:
    text = Path(path).read_text(encoding="utf-8", errors="strict")
    return text.split()


def read_uai(path, values: str = "potential") -> PairwiseMRF:
    """Read a pairwise MARKOV .uai file into a :class:`PairwiseMRF` (energies = -log potentials)."""
    if values not in ("potential", "energy"):
        raise ValueError(f"parameter 'values' got {values!r}; allowed: 'potential', 'energy'")
    path = Path(path)
    tok = _tokens(path)
    pos = 0

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tok):
            raise UAIFormatError(f"{path.name}: file ends while reading {what}")
        pos += 1
        return tok[pos - 1]

    def take_int(what: str, lo: int = 0) -> int:
        t = take(what)
        try:
            v = int(t)
        except ValueError:
            raise UAIFormatError(f"{path.name}: expected an integer for {what}, got {t!r}") from None
        if v < lo:
            raise UAIFormatError(f"{path.name}: {what} must be >= {lo}, got {v}")
        return v

    kind = take("the network type")
    if kind.upper() != "MARKOV":
        raise UAIFormatError(f"{path.name}: network type {kind!r}; only MARKOV networks are supported")
    n = take_int("the number of variables", 1)
    K = np.array([take_int(f"the domain size of variable {i}", 1) for i in range(n)], dtype=np.int64)
    F = take_int("the number of factors")
    scopes = []
    for f in range(F):
        a = take_int(f"the arity of factor {f}")
        if a not in (1, 2):
            raise UAIFormatError(f"{path.name}: factor {f} has arity {a}; only unary and pairwise factors are "
                                 "supported")
        sc = tuple(take_int(f"variable {k} of factor {f}") for k in range(a))
        if any(v >= n for v in sc):
            raise UAIFormatError(f"{path.name}: factor {f} refers to a variable outside 0..{n - 1}")
        if a == 2 and sc[0] == sc[1]:
            raise UAIFormatError(f"{path.name}: factor {f} has the same variable twice")
        scopes.append(sc)
    Km = int(K.max())
    unary = np.zeros((n, Km))
    pair_of: dict[tuple[int, int], np.ndarray] = {}
    for f, sc in enumerate(scopes):
        size = int(np.prod(K[list(sc)]))
        m = take_int(f"the table size of factor {f}")
        if m != size:
            raise UAIFormatError(f"{path.name}: factor {f} declares {m} entries; its scope needs {size}")
        vals = []
        for _ in range(m):
            t = take(f"the table of factor {f}")
            try:
                vals.append(float(t))
            except ValueError:
                raise UAIFormatError(f"{path.name}: factor {f}: {t!r} is not a number") from None
        vals = np.asarray(vals)
        if values == "potential":
            if np.any(vals < 0) or not np.all(np.isfinite(vals)):
                raise UAIFormatError(f"{path.name}: factor {f} has a negative or non-finite potential")
            with np.errstate(divide="ignore"):
                en = -np.log(vals)
            en = np.minimum(en, BIG_ENERGY)
        else:
            if not np.all(np.isfinite(vals)):
                raise UAIFormatError(f"{path.name}: factor {f} has a non-finite energy")
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
        raise UAIFormatError(f"{path.name}: {len(tok) - pos} unexpected tokens after the last table")
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


def read_uai_folder(path, values: str = "potential") -> list[PairwiseMRF]:
    """Every ``*.uai`` file of a folder (sorted by name), or the one file ``path``."""
    path = Path(path)
    files = sorted(path.glob("*.uai")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"parameter 'data_path' got {str(path)!r}; the folder holds no .uai file")
    return [read_uai(f, values=values) for f in files]
