"""Our real-data test of Theorem 1: l2-regularised logistic regression on scikit-learn's breast-cancer set.

``f(w) = (1/m) sum_i log(1 + exp(-b_i a_i^T w)) + (mu/2) ||w||^2`` with standardised features and a column of ones
(the intercept, regularised like the rest), labels ``b_i in {-1, +1}``. It is smooth and strongly convex, so the
minimiser ``w*`` and its Hessian are exact (Newton's method to machine precision): the place where the theorem's
threshold ``eta_c = 2/(lambda_1 + lambda_n)`` can be tested on real data. ``mu`` sets the conditioning:
``lambda_1 ~ mu`` and ``lambda_n ~ mu + 0.25 * 13.3`` (the top eigenvalue of the standardised covariance), so
``mu = 1`` gives ``lambda_1/lambda_n ~ 0.42`` and a wide oscillatory window ``(eta_c, 2/lambda_n)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .dynamics import WINDOW, alignment, distances, gd, regime_threshold


@dataclass
class LogReg:
    """The objective, its derivatives and its exact minimiser."""

    A: np.ndarray
    b: np.ndarray
    mu: float
    xstar: np.ndarray = None

    @property
    def m(self) -> int:
        return self.A.shape[0]

    @property
    def d(self) -> int:
        return self.A.shape[1]

    def f(self, w) -> float:
        z = self.b * (self.A @ w)
        return float(np.mean(np.logaddexp(0.0, -z)) + 0.5 * self.mu * w @ w)

    def grad(self, w) -> np.ndarray:
        z = self.b * (self.A @ w)
        s = 0.5 * (1.0 - np.tanh(0.5 * z))  # sigmoid(-z), stable for large |z|
        return -(self.A.T @ (self.b * s)) / self.m + self.mu * w

    def hess(self, w) -> np.ndarray:
        z = self.b * (self.A @ w)
        s = 0.5 * (1.0 - np.tanh(0.5 * z))
        D = s * (1.0 - s)
        return (self.A.T * D) @ self.A / self.m + self.mu * np.eye(self.d)

    def solve(self, tol: float = 1e-15, max_iter: int = 100) -> np.ndarray:
        """``w*`` by Newton's method from 0 (the objective is strongly convex, full steps converge here)."""
        w = np.zeros(self.d)
        for _ in range(max_iter):
            g = self.grad(w)
            step = np.linalg.solve(self.hess(w), g)
            w = w - step
            if np.linalg.norm(step) < tol * max(1.0, np.linalg.norm(w)):
                break
        else:
            raise RuntimeError("LogReg.solve: Newton's method did not converge")
        self.xstar = w
        return w

    def sklearn_C(self) -> float:
        """The ``C`` of ``LogisticRegression(fit_intercept=False)`` on ``A`` with the same minimiser: 1/(mu m)."""
        return 1.0 / (self.mu * self.m)


def breast_cancer_logreg(mu: float = 1.0) -> LogReg:
    """The problem on ``load_breast_cancer`` (569 x 30, standardised, plus the ones column), solved."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    A = np.hstack([StandardScaler().fit_transform(X), np.ones((len(X), 1))])
    prob = LogReg(A=A, b=2.0 * y - 1.0, mu=float(mu))
    prob.solve()
    return prob


def spectrum_summary(prob: LogReg) -> dict:
    """Eigenvalues at ``w*``, the thresholds, and how close ``lambda_2`` sits to ``lambda_1``."""
    reg = regime_threshold(prob.hess(prob.xstar))
    lam = reg.lam
    return {"lambda_1": lam[0], "lambda_2": lam[1], "lambda_n-1": lam[-2], "lambda_n": lam[-1],
            "lambda_1/lambda_n": lam[0] / lam[-1], "(lambda_2 - lambda_1)/lambda_1": (lam[1] - lam[0]) / lam[0],
            "n within 1% of lambda_1": int(np.sum(lam <= 1.01 * lam[0])), "eta_c": reg.eta_c,
            "2/lambda_n": reg.eta_max, "grad norm at w*": float(np.linalg.norm(prob.grad(prob.xstar)))}


def sweep_regimes(prob: LogReg, ratios, rng: np.random.Generator, *, n_steps: int = 20000, r0: float = 1.0,
                  window=WINDOW, cap: float = 0.99) -> pd.DataFrame:
    """GD at ``eta = ratio * eta_c`` (capped at ``cap * 2/lambda_n``) from ``x* + r0 * (random unit vector)``.

    One start per run, drawn from ``rng``; each row holds the asymptotic measurements of :func:`alignment` plus
    ``align_bottom``: the norm of ``u``'s projection on the eigenvectors whose eigenvalues lie within 1% of
    ``lambda_1`` (a diagnostic for near-degenerate smallest eigenvalues).
    """
    reg = regime_threshold(prob.hess(prob.xstar))
    bottom = reg.V[:, reg.lam <= 1.01 * reg.lam[0]]
    rows = []
    for ratio in ratios:
        eta = min(float(ratio) * reg.eta_c, cap * reg.eta_max)
        d = rng.standard_normal(prob.d)
        x0 = prob.xstar + r0 * d / np.linalg.norm(d)
        X = gd(prob.grad, x0, eta, n_steps, xstar=prob.xstar, stop_below=0.1 * window[0])
        m = alignment(X, prob.xstar, reg.V, window)
        k = m["k_last"]
        u = (X[k] - prob.xstar) / np.linalg.norm(X[k] - prob.xstar) if k >= 0 else np.full(prob.d, np.nan)
        rows.append({"eta/eta_c": eta / reg.eta_c, "eta": eta, "predicted": reg.predicted(eta), "steps": len(X) - 1,
                     "converged": bool(distances(X[-1:], prob.xstar)[0] < window[0]), **m,
                     "align_bottom": float(np.linalg.norm(bottom.T @ u))})
    return pd.DataFrame(rows)
