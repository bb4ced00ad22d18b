"""Test problems of the paper: l2-regularised logistic regression, polytope feasibility, Rosenbrock.

Every problem is a :class:`Problem` with value, gradient and Hessian oracles, plus batched versions
(``f_many``/``grad_many`` take a ``(G, d)`` array of points) so that a linesearch can evaluate a whole grid
of stepsizes in one numpy call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
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
    "breast_cancer_data",
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


def logistic(A: np.ndarray, b: np.ndarray, mu: float = 1e-3, name: str = "logistic") -> Problem:
    """f(w) = (1/m) sum_i log(1 + exp(-b_i a_i^T w)) + (mu/2) ||w||^2 with labels b_i in {-1, +1}."""
    A = np.asarray(A, dtype=float)
    b = _as_pm1(b)
    m, d = A.shape
    if mu < 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    BA = A * b[:, None]  # rows b_i a_i

    def f(w):
        z = BA @ w
        return float(np.mean(np.logaddexp(0.0, -z)) + 0.5 * mu * w @ w)

    def grad(w):
        z = BA @ w
        return -(BA.T @ expit(-z)) / m + mu * w

    def hess(w):
        z = BA @ w
        s = expit(z) * expit(-z)
        return (A.T * s) @ A / m + mu * np.eye(d)

    def f_many(W):
        Z = W @ BA.T  # (G, m)
        return np.mean(np.logaddexp(0.0, -Z), axis=1) + 0.5 * mu * np.einsum("gi,gi->g", W, W)

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


def load_libsvm(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a LIBSVM/svmlight file (e.g. a9a, w8a, breast-cancer from the LIBSVM page) -> dense (A, b in {-1,+1})."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(Path(path)))
    return np.asarray(X.toarray(), dtype=float), _as_pm1(y)


def breast_cancer_data() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's breast-cancer set (569 x 30), columns standardised, rows scaled to unit norm."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    return normalize_rows(StandardScaler().fit_transform(X)), _as_pm1(y)


def breast_cancer_problem(mu: float = 1e-3) -> Problem:
    A, b = breast_cancer_data()
    return logistic(A, b, mu, name="logistic, breast_cancer (569 x 30)")


def synthetic_logreg(m: int = 1000, d: int = 100, noise: float = 0.1, seed: int = 0, mu: float = 1e-3) -> Problem:
    """An 'a9a-like' set from ``make_classification`` (label noise ``noise``), rows scaled to unit norm."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=m, n_features=d, n_informative=max(2, d // 5), n_redundant=max(0, d // 10),
        flip_y=noise, class_sep=1.0, random_state=seed,
    )
    return logistic(normalize_rows(X), y, mu, name=f"logistic, synthetic ({m} x {d})")


def libsvm_problem(path, mu: float = 1e-3, name: Optional[str] = None) -> Problem:
    """Logistic regression on a user-supplied LIBSVM file (rows scaled to unit norm)."""
    A, b = load_libsvm(path)
    A = normalize_rows(A)
    return logistic(A, b, mu, name=name or f"logistic, {Path(path).name} ({A.shape[0]} x {A.shape[1]})")
