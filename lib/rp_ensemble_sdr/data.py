"""Data of the RPEDR notebook: the simulation models, the offline real-data stand-ins and a UCI file reader.

Simulations (X ~ N(0, I_p)); only Model 1a is confirmed from the authors' code, M2-M4 are **our stand-ins** for the
paper's other models:

- ``M1a``: Y = (X1 + X2)^2 + eps/2, d0 = 1 (the authors' ``simulation_example.R``);
- ``M2``: Y = X1 / (0.5 + (X2 + 1.5)^2) + 0.2 eps, d0 = 2 (Li 1991);
- ``M3``: Y = X1 X2 + eps/2, d0 = 2;
- ``M4s`` / ``M4d``: Y = 2 sin(b'X) + b'X + 0.3 eps with b proportional to (1, 1, 0, ..., 0) (sparse) or to
  (1, ..., 1) (dense), |b| = 1, d0 = 1.

Real-data stand-ins (the paper's UCI sets cannot be downloaded here): scikit-learn's diabetes (442 x 10, d0 = 3),
statsmodels' star98 (303 x 20, response NABOVE / (NABOVE + NBELOW), d0 = 5) and ``make_friedman1`` with 30
features (500 rows, CMS = span(e1, ..., e5), d0 = 5).

:func:`read_uci` reads a UCI regression file as distributed, for a user who has one (``data_path``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from lib.common.userfiles import MISSING_MARKERS, UserFileError, read_lines

MODELS = {"M1a": 1, "M2": 2, "M3": 2, "M4s": 1, "M4d": 1}
MODEL_TEXT = {
    "M1a": r"$(X_1+X_2)^2+\varepsilon/2$",
    "M2": r"$X_1/(0.5+(X_2+1.5)^2)+0.2\varepsilon$",
    "M3": r"$X_1X_2+\varepsilon/2$",
    "M4s": r"$2\sin(\beta^\top X)+\beta^\top X+0.3\varepsilon$, sparse $\beta$",
    "M4d": r"$2\sin(\beta^\top X)+\beta^\top X+0.3\varepsilon$, dense $\beta$",
}
REAL = {"diabetes": 3, "star98": 5, "friedman1": 5}


def true_basis(name: str, p: int) -> np.ndarray:
    """A basis (p x d0) of the model's central mean subspace."""
    if name not in MODELS:
        raise ValueError(f"model {name!r}; allowed: one of {', '.join(MODELS)}")
    if name in ("M2", "M3"):
        return np.eye(p)[:, :2]
    b = np.zeros(p)
    if name == "M4d":
        b[:] = 1.0
    else:  # M1a, M4s: (1, 1, 0, ...)
        b[:2] = 1.0
    return (b / np.linalg.norm(b))[:, None]


def make_model(name: str, n: int, p: int, rng: np.random.Generator):
    """``(X, y, B0)`` for one simulation model."""
    B0 = true_basis(name, p)
    X = rng.standard_normal((n, p))
    eps = rng.standard_normal(n)
    if name == "M1a":
        y = (X[:, 0] + X[:, 1]) ** 2 + 0.5 * eps
    elif name == "M2":
        y = X[:, 0] / (0.5 + (X[:, 1] + 1.5) ** 2) + 0.2 * eps
    elif name == "M3":
        y = X[:, 0] * X[:, 1] + 0.5 * eps
    else:
        t = X @ B0[:, 0]
        y = 2 * np.sin(t) + t + 0.3 * eps
    return X, y, B0


@dataclass
class RegressionData:
    """A regression data set: features, response, names and what the reader did to it."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list
    target: str
    d0: int
    B0: Optional[np.ndarray] = None  # the known CMS basis, where there is one (friedman1)
    notes: dict = field(default_factory=dict)


def load_real(name: str, rng: Optional[np.random.Generator] = None) -> RegressionData:
    """One of the offline stand-ins (``diabetes``, ``star98``, ``friedman1``)."""
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        ds = load_diabetes()
        return RegressionData("diabetes", ds.data.astype(float), ds.target.astype(float), list(ds.feature_names),
                              "disease progression", REAL[name])
    if name == "star98":
        import statsmodels.api as sm

        ds = sm.datasets.star98.load_pandas()
        y = (ds.endog["NABOVE"] / (ds.endog["NABOVE"] + ds.endog["NBELOW"])).to_numpy(float)
        return RegressionData("star98", ds.exog.to_numpy(float), y, list(ds.exog.columns),
                              "NABOVE / (NABOVE + NBELOW)", REAL[name])
    if name == "friedman1":
        from sklearn.datasets import make_friedman1

        seed = int((rng if rng is not None else np.random.default_rng(0)).integers(2**31 - 1))
        X, y = make_friedman1(n_samples=500, n_features=30, noise=1.0, random_state=seed)
        return RegressionData("friedman1", X, y, [f"x{k + 1}" for k in range(30)], "y", REAL[name],
                              B0=np.eye(30)[:, :5])
    raise ValueError(f"data set {name!r}; allowed: one of {', '.join(REAL)}")


# --- the UCI reader --------------------------------------------------------------------------------------------
UCI_EXPECTED = ("a UCI regression file as distributed: comma-separated numbers, either with a header line of "
                "column names (Superconductivity train.csv) or without one (a .data file such as Communities and "
                "Crime, columns named V1, V2, ...); '?' marks a missing value; the target is a named column "
                "(default: the last)")
MISSING_RULES = ("rows", "columns")


def _is_number(token: str) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _split(line: str, delim: Optional[str]) -> list[str]:
    return [f.strip() for f in line.split(delim)] if delim else line.split()


def read_uci(path, target: Optional[str] = None, drop_columns: Optional[Sequence[str]] = None,
             missing: str = "rows", parameter: str = "data_path", min_rows: int = 10) -> RegressionData:
    """Read a UCI regression file (see ``UCI_EXPECTED``) into a :class:`RegressionData` (d0 left at 0).

    ``target``: the response column's name (header name, or ``V<k>`` for a headerless file; None: the last
    column). ``drop_columns``: names of columns to ignore (a text column such as Communities' ``communityname``,
    V4, must be dropped). ``missing``: ``"rows"`` drops every row with a '?' in a used column (counted in
    ``notes``), ``"columns"`` drops every feature column holding a '?' as the authors' ``real_crimes.R`` does,
    then the rows whose target is missing.
    """
    if missing not in MISSING_RULES:
        raise ValueError(f"parameter 'missing' got {missing!r}; allowed: one of {', '.join(map(repr, MISSING_RULES))}")
    lines = read_lines(parameter, path, expected=UCI_EXPECTED)
    first = lines[0][1]
    for other, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
        if other in first and "," not in first:
            raise UserFileError(parameter, path, f"fields are separated by {name}", expected=UCI_EXPECTED,
                                line=lines[0][0])
    delim = "," if "," in first else None
    head = _split(first, delim)
    has_header = all(not _is_number(f) and f.lower() not in MISSING_MARKERS for f in head)
    names = [f.strip('"') for f in head] if has_header else [f"V{k + 1}" for k in range(len(head))]
    body = lines[1:] if has_header else lines
    if len(names) < 2:
        raise UserFileError(parameter, path, f"the first line has {len(names)} field(s); a target and at least one "
                            f"feature are needed", expected=UCI_EXPECTED, line=lines[0][0])
    if len(set(names)) != len(names):
        raise UserFileError(parameter, path, "the header repeats a column name", expected=UCI_EXPECTED,
                            line=lines[0][0])
    target = names[-1] if target is None else str(target)
    if target not in names:
        shown = ", ".join(map(repr, names[:12])) + (" ..." if len(names) > 12 else "")
        raise UserFileError(parameter, path, f"no column {target!r} for parameter 'target' (columns: {shown})",
                            expected=UCI_EXPECTED)
    drop = list(drop_columns or [])
    unknown = [c for c in drop if c not in names]
    if unknown:
        raise UserFileError(parameter, path, f"drop_columns names unknown column(s) {unknown}",
                            expected=UCI_EXPECTED)
    if target in drop:
        raise UserFileError(parameter, path, f"the target {target!r} is also in drop_columns", expected=UCI_EXPECTED)
    keep = [j for j, c in enumerate(names) if c not in drop]
    rows = []
    for lineno, line in body:
        if delim is None and any(c in line for c in ",;|"):
            raise UserFileError(parameter, path, "the line mixes delimiters (the file's first line uses whitespace)",
                                expected=UCI_EXPECTED, line=lineno)
        fields = _split(line, delim)
        if len(fields) != len(names):
            raise UserFileError(parameter, path, f"the line has {len(fields)} fields, not {len(names)}",
                                expected=UCI_EXPECTED, line=lineno)
        row = []
        for j in keep:
            tok = fields[j].strip().strip('"')
            if tok.lower() in MISSING_MARKERS:
                row.append(np.nan)
                continue
            try:
                v = float(tok)
            except ValueError:
                raise UserFileError(parameter, path, f"column {j + 1} ({names[j]!r}) holds text ({tok[:40]!r}); "
                                    f"only numeric columns can be used: drop it with drop_columns="
                                    f"[{names[j]!r}]", expected=UCI_EXPECTED, line=lineno) from None
            if not np.isfinite(v):
                raise UserFileError(parameter, path, f"column {j + 1} ({names[j]!r}) holds {tok!r}",
                                    expected=UCI_EXPECTED, line=lineno)
            row.append(v)
        rows.append(row)
    table = np.asarray(rows, dtype=float).reshape(len(rows), len(keep))
    cols = [names[j] for j in keep]
    t = cols.index(target)
    notes = {"rows_read": len(rows), "columns_read": len(names), "dropped_columns": list(drop)}
    miss = np.isnan(table)
    feat = [k for k in range(len(cols)) if k != t]
    if missing == "columns":
        bad = [k for k in feat if miss[:, k].any()]
        notes["dropped_columns"] += [cols[k] for k in bad]
        feat = [k for k in feat if k not in bad]
        ok = ~miss[:, t]
    else:
        ok = ~miss[:, feat + [t]].any(axis=1)
    notes["rows_dropped_missing"] = int((~ok).sum())
    X, y = table[ok][:, feat], table[ok][:, t]
    if not feat:
        raise UserFileError(parameter, path, "no feature column is left after dropping", expected=UCI_EXPECTED)
    if X.shape[0] < max(min_rows, 2):
        raise UserFileError(parameter, path, f"{X.shape[0]} complete rows are left (of {len(rows)}; "
                            f"{notes['rows_dropped_missing']} dropped for '?'), fewer than {min_rows}"
                            + ("; try missing='columns'" if missing == "rows" else ""), expected=UCI_EXPECTED)
    const = [cols[k] for k, j in zip(feat, range(X.shape[1])) if np.ptp(X[:, j]) == 0]
    if const:
        keep_j = [j for j, k in enumerate(feat) if cols[k] not in const]
        X = X[:, keep_j]
        feat = [feat[j] for j in keep_j]
        notes["dropped_columns"] += const
        notes["constant_columns"] = const
    name = str(getattr(path, "name", path)).split("/")[-1]
    return RegressionData(name, X, y, [cols[k] for k in feat], target, 0, notes=notes)
