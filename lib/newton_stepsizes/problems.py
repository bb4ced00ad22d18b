"""Test problems of the paper: l2-regularised logistic regression, polytope feasibility, Rosenbrock.

Every problem is a :class:`Problem` with value, gradient and Hessian oracles, plus batched versions
(``f_many``/``grad_many`` take a ``(G, d)`` array of points) so that a linesearch can evaluate a whole grid
of stepsizes in one numpy call.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from scipy.special import expit

__all__ = [
    "Problem",
    "logistic",
    "polytope_feasibility",
    "random_polytope",
    "rosenbrock",
    "quadratic",
    "load_libsvm",
    "read_libsvm",
    "LIBSVM_EXPECTED",
    "breast_cancer_data",
    "digits_data",
    "digits_problem",
    "breast_cancer_problem",
    "synthetic_logreg",
    "libsvm_problem",
    "normalize_rows",
]


@dataclass
class Problem:
    """A smooth objective with first- and second-order oracles.

    ``f(x) -> float``, ``grad(x) -> (d,)``, ``hess(x) -> (d, d)``; ``f_many(X)`` and ``grad_many(X)`` evaluate
    the rows of ``X`` (shape ``(G, d)``) at once. ``convex`` tells plots and methods whether the Hessian is
    positive semidefinite everywhere.
    """

    name: str
    dim: int
    f: Callable[[np.ndarray], float]
    grad: Callable[[np.ndarray], np.ndarray]
    hess: Callable[[np.ndarray], np.ndarray]
    f_many: Callable[[np.ndarray], np.ndarray]
    grad_many: Callable[[np.ndarray], np.ndarray]
    convex: bool = True
    info: dict = field(default_factory=dict)


def _as_pm1(y: np.ndarray) -> np.ndarray:
    """Binary labels in any two-valued coding ({0,1}, {1,2}, {-1,1}) -> {-1, +1}."""
    y = np.asarray(y).ravel()
    values = np.unique(y)
    if len(values) != 2:
        raise ValueError(f"logistic regression needs exactly two label values, got {values.tolist()[:10]}")
    return np.where(y == values.max(), 1.0, -1.0)


def normalize_rows(A: np.ndarray) -> np.ndarray:
    """Scale every row to unit Euclidean norm (the usual LIBSVM preprocessing); zero rows stay zero."""
    A = np.asarray(A, dtype=float)
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return A / np.where(norms > 0, norms, 1.0)


def _softplus_neg(z: np.ndarray) -> np.ndarray:
    """log(1 + exp(-z)), stable for any z (as np.logaddexp(0, -z), about 3x faster)."""
    return np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def logistic(A: np.ndarray, b: np.ndarray, mu: float = 1e-3, name: str = "logistic") -> Problem:
    """f(w) = (1/m) sum_i log(1 + exp(-b_i a_i^T w)) + (mu/2) ||w||^2 with labels b_i in {-1, +1}."""
    A = np.asarray(A, dtype=float)
    b = _as_pm1(b)
    m, d = A.shape
    if mu < 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    BA = A * b[:, None]  # rows b_i a_i

    def f(w):
        return float(np.mean(_softplus_neg(BA @ w)) + 0.5 * mu * w @ w)

    def grad(w):
        z = BA @ w
        return -(BA.T @ expit(-z)) / m + mu * w

    def hess(w):
        z = BA @ w
        B = A * np.sqrt(expit(z) * expit(-z) / m)[:, None]  # rows sqrt(s_i / m) a_i
        H = B.T @ B  # X^T diag(s) X / m through BLAS (numpy uses syrk for B.T @ B)
        H[np.diag_indices(d)] += mu
        return H

    def f_many(W):
        Z = W @ BA.T  # (G, m)
        return np.mean(_softplus_neg(Z), axis=1) + 0.5 * mu * np.einsum("gi,gi->g", W, W)

    def grad_many(W):
        Z = W @ BA.T
        return -(expit(-Z) @ BA) / m + mu * W

    return Problem(name, d, f, grad, hess, f_many, grad_many, convex=True, info={"m": m, "mu": mu})


def polytope_feasibility(A: np.ndarray, b: np.ndarray, p: float = 3.0, name: str = "polytope") -> Problem:
    """f(x) = sum_i (<a_i, x> - b_i)_+^p (Doikov et al.'s polytope-feasibility test function), p >= 2."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if p < 2:
        raise ValueError(f"p must be >= 2, got {p}")
    m, d = A.shape

    def f(x):
        r = np.maximum(A @ x - b, 0.0)
        return float(np.sum(r**p))

    def grad(x):
        r = np.maximum(A @ x - b, 0.0)
        return p * (A.T @ r ** (p - 1))

    def hess(x):
        r = np.maximum(A @ x - b, 0.0)
        w = (r > 0).astype(float) if p == 2 else r ** (p - 2)
        return p * (p - 1) * (A.T * w) @ A

    def f_many(X):
        R = np.maximum(X @ A.T - b, 0.0)
        return np.sum(R**p, axis=1)

    def grad_many(X):
        R = np.maximum(X @ A.T - b, 0.0)
        return p * (R ** (p - 1)) @ A

    return Problem(name, d, f, grad, hess, f_many, grad_many, convex=True, info={"m": m, "p": p})


def random_polytope(n: int, m: int, rng: np.random.Generator, p: float = 3.0) -> Problem:
    """The super-newton instance: A, b ~ U[-1, 1] entrywise (start it from x0 = 1)."""
    A = rng.uniform(-1.0, 1.0, size=(m, n))
    b = rng.uniform(-1.0, 1.0, size=m)
    prob = polytope_feasibility(A, b, p, name=f"polytope (n={n}, m={m}, p={p:g})")
    prob.info.update(A=A, b=b)
    return prob


def rosenbrock(d: int = 40) -> Problem:
    """Chained Rosenbrock, sum_{i<d} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2; minimum 0 at x = 1 (nonconvex)."""
    if d < 2:
        raise ValueError(f"d must be >= 2, got {d}")

    def f_many(X):
        u, v = X[:, :-1], X[:, 1:]
        return np.sum(100.0 * (v - u**2) ** 2 + (1.0 - u) ** 2, axis=1)

    def grad_many(X):
        u, v = X[:, :-1], X[:, 1:]
        r = v - u**2
        G = np.zeros_like(X)
        G[:, :-1] += -400.0 * u * r - 2.0 * (1.0 - u)
        G[:, 1:] += 200.0 * r
        return G

    def hess(x):
        u, v = x[:-1], x[1:]
        H = np.zeros((d, d))
        diag = np.zeros(d)
        diag[:-1] += 1200.0 * u**2 - 400.0 * v + 2.0
        diag[1:] += 200.0
        off = -400.0 * u
        H[np.arange(d), np.arange(d)] = diag
        H[np.arange(d - 1), np.arange(1, d)] = off
        H[np.arange(1, d), np.arange(d - 1)] = off
        return H

    return Problem(
        f"rosenbrock (d={d})",
        d,
        lambda x: float(f_many(x[None, :])[0]),
        lambda x: grad_many(x[None, :])[0],
        hess,
        f_many,
        grad_many,
        convex=False,
        info={"f_star": 0.0},
    )


def quadratic(Q: np.ndarray, c: np.ndarray, name: str = "quadratic") -> Problem:
    """f(x) = x^T Q x / 2 - c^T x (Q symmetric); used by the unit tests."""
    Q = np.asarray(Q, dtype=float)
    c = np.asarray(c, dtype=float)
    d = len(c)
    return Problem(
        name,
        d,
        lambda x: float(0.5 * x @ Q @ x - c @ x),
        lambda x: Q @ x - c,
        lambda x: Q.copy(),
        lambda X: 0.5 * np.einsum("gi,ij,gj->g", X, Q, X) - X @ c,
        lambda X: X @ Q - c,
        convex=bool(np.all(np.linalg.eigvalsh(Q) >= 0)),
    )


LIBSVM_EXPECTED = ("a LIBSVM/svmlight text file (as on the LIBSVM data page, e.g. a9a or w8a; plain or .gz): one "
                   "sample per line, 'label index:value index:value ...' separated by spaces, feature indices "
                   "ascending integers, exactly two label values (e.g. +1/-1 or 0/1)")


MAX_FEATURES = 4000  # dense Hessians (d x d) and their eigendecomposition per iteration


def read_libsvm(data_path) -> tuple[np.ndarray, np.ndarray]:
    """Read a LIBSVM/svmlight file (a9a, w8a, breast-cancer, ... from the LIBSVM page) -> dense (A, b in {-1, +1}).

    A gzip-compressed file (``a9a.gz``) is read as is. Built on :mod:`lib.common.userfiles`: a missing, otherwise
    compressed (bzip2: decompress it first), binary, empty or undecodable file, a comma- or
    semicolon-separated table, a field that is not ``index:value``, a non-numeric or non-finite value, unsorted
    indices and anything but two label values raise :class:`~lib.common.userfiles.UserFileError` (a
    ``ValueError``) naming ``data_path``, the line and what a LIBSVM file looks like. Rows may omit any feature
    (the format is sparse). Parsing is scikit-learn's ``load_svmlight_file``; our own line check runs only to
    explain a file it refuses. Repeated reads of an unchanged file are served from memory.
    """
    from lib.common.userfiles import check_file

    path = check_file("data_path", data_path, expected=LIBSVM_EXPECTED)
    st = path.stat()
    A, b = _read_libsvm_cached(str(path.resolve()), st.st_mtime_ns, st.st_size, str(data_path))
    return A.copy(), b.copy()


def load_libsvm(path) -> tuple[np.ndarray, np.ndarray]:
    """Alias of :func:`read_libsvm` (the name used by earlier versions)."""
    return read_libsvm(path)


def _libsvm_line_problem(line: str) -> Optional[str]:
    """What is wrong with one LIBSVM data line (comment already removed), or None when it is a valid row."""
    fields = line.split()
    for sep, name in ((",", "commas"), (";", "semicolons"), ("|", "bars")):
        if sep in line:
            return f"fields are separated by {name}, not by spaces (a CSV table? LIBSVM rows are sparse " \
                   f"'index:value' pairs)"
    label = fields[0]
    if ":" in label:
        return f"the line starts with {label[:30]!r}, not with a label"
    try:
        float(label)
    except ValueError:
        return f"the label {label[:30]!r} is not a number"
    last = -1
    for j, tok in enumerate(fields[1:], start=2):
        idx, sep, val = tok.partition(":")
        if not sep:
            return f"field {j} is {tok[:30]!r}, not 'index:value'"
        if idx == "qid":
            continue
        try:
            i = int(idx)
        except ValueError:
            return f"field {j} has the feature index {idx[:30]!r}, not an integer"
        try:
            v = float(val)
        except ValueError:
            return f"field {j} has the value {val[:30]!r}, not a number"
        if not math.isfinite(v):
            return f"field {j} holds a non-finite value ({tok[:30]!r})"
        if i < 0 or i <= last:
            return f"field {j}: feature index {i} is not above the previous one ({last}); indices must be " \
                   f"ascending and non-negative"
        last = i
    return None


@lru_cache(maxsize=4)
def _read_libsvm_cached(resolved: str, mtime_ns: int, size: int, shown: str):
    import io

    from sklearn.datasets import load_svmlight_file

    from lib.common.userfiles import UserFileError, read_text

    text = read_text("data_path", shown, expected=LIBSVM_EXPECTED, allow_gzip=True)
    try:
        X, y = load_svmlight_file(io.BytesIO(text.encode("utf-8")), dtype=np.float64)
        error = None
    except (ValueError, IndexError, TypeError, OverflowError) as exc:
        X = y = None
        error = f"{type(exc).__name__}: {exc}"
    if error is not None:  # scikit-learn refused the file: find the first bad line to say what and where
        for k, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            problem = _libsvm_line_problem(line) if line else None
            if problem:
                raise UserFileError("data_path", shown, problem, expected=LIBSVM_EXPECTED, line=k)
        raise UserFileError("data_path", shown, f"not readable as LIBSVM ({error})", expected=LIBSVM_EXPECTED)
    if X.shape[0] < 2:
        raise UserFileError("data_path", shown, f"the file holds {X.shape[0]} sample(s); logistic regression needs "
                            f"at least 2", expected=LIBSVM_EXPECTED)
    if not np.all(np.isfinite(X.data)):
        bad = int(np.flatnonzero(~np.isfinite(X.data))[0])
        row = int(np.searchsorted(X.indptr, bad, side="right") - 1)
        raise UserFileError("data_path", shown, f"sample {row + 1} holds a non-finite feature value",
                            expected=LIBSVM_EXPECTED, record=f"sample {row + 1}")
    labels = np.unique(y)
    if len(labels) != 2:
        shown_labels = ", ".join(f"{v:g}" for v in labels[:10]) + (" ..." if len(labels) > 10 else "")
        raise UserFileError("data_path", shown, f"found {len(labels)} label value(s) ({shown_labels}); binary "
                            f"logistic regression needs exactly two", expected=LIBSVM_EXPECTED)
    if X.shape[1] > MAX_FEATURES:
        raise UserFileError("data_path", shown, f"{X.shape[1]} features: the Newton methods here form dense d x d "
                            f"Hessians and eigendecompose them, which is practical up to {MAX_FEATURES} features",
                            expected=LIBSVM_EXPECTED)
    A = np.asarray(X.toarray(), dtype=float)
    b = _as_pm1(y)
    A.setflags(write=False)
    b.setflags(write=False)
    return A, b


def breast_cancer_data() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's breast-cancer set (569 x 30), columns standardised, rows scaled to unit norm."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    return normalize_rows(StandardScaler().fit_transform(X)), _as_pm1(y)


def breast_cancer_problem(mu: float = 1e-3) -> Problem:
    A, b = breast_cancer_data()
    return logistic(A, b, mu, name="breast cancer (569 x 30)")


def digits_data() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (1797 x 64) as a binary task, 0-4 (label -1) against 5-9 (+1); columns
    standardised (the constant border pixels stay 0), rows scaled to unit norm."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    return normalize_rows(StandardScaler().fit_transform(X)), np.where(y >= 5, 1.0, -1.0)


def digits_problem(mu: float = 1e-3) -> Problem:
    A, b = digits_data()
    return logistic(A, b, mu, name="digits 0-4 vs 5-9 (1797 x 64)")


def synthetic_logreg(m: int = 1000, d: int = 100, noise: float = 0.1, seed: int = 0, mu: float = 1e-3) -> Problem:
    """An 'a9a-like' set from ``make_classification`` (label noise ``noise``), rows scaled to unit norm."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=m, n_features=d, n_informative=max(2, d // 5), n_redundant=max(0, d // 10),
        flip_y=noise, class_sep=1.0, random_state=seed,
    )
    return logistic(normalize_rows(X), y, mu, name=f"synthetic ({m} x {d})")


def libsvm_problem(path, mu: float = 1e-3, name: Optional[str] = None, n_rows: Optional[int] = None,
                   rng: Optional[np.random.Generator] = None) -> Problem:
    """Logistic regression on a user-supplied LIBSVM file (rows scaled to unit norm).

    ``n_rows``: use a uniformly drawn subset of that many rows (drawn with ``rng``; all rows when ``None`` or
    when the file has no more). ``problem.info`` records ``rows_in_file`` and ``rows_used``.
    """
    A, b = read_libsvm(path)
    total = A.shape[0]
    if n_rows is not None and n_rows < total:
        if rng is None:
            raise ValueError("libsvm_problem: subsampling needs a seeded rng")
        keep = np.sort(rng.choice(total, size=int(n_rows), replace=False))
        A, b = A[keep], b[keep]
        if len(np.unique(b)) < 2:
            raise ValueError(f"parameter 'n_rows' ({n_rows}): the subsample of {path} holds one class only; "
                             f"use more rows")
    A = normalize_rows(A)
    prob = logistic(A, b, mu, name=name or f"{Path(path).name} ({A.shape[0]} x {A.shape[1]})")
    prob.info.update(rows_in_file=total, rows_used=A.shape[0])
    return prob
