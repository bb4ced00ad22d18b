"""Gradient descent and the measurements of Theorem 1.

For GD ``x_{k+1} = x_k - eta grad f(x_k)`` converging to an isolated minimiser ``x*`` whose Hessian has eigenvalues
``0 < lambda_1 < ... < lambda_n`` (eigenvectors ``v_1 ... v_n``):

- ``u_k = (x_k - x*)/||x_k - x*||`` tends to ``+-v_1`` when ``eta < eta_c = 2/(lambda_1 + lambda_n)`` and
  ``(-1)^k u_k`` tends to ``+-v_n`` when ``eta_c < eta < 2/lambda_n``;
- the cosine of successive updates ``c_k = <dx_{k+1}, dx_k>/(||dx_{k+1}|| ||dx_k||)``, ``dx_k = x_{k+1} - x_k``,
  tends to +1 in the first regime and to -1 in the second.

Everything asymptotic is measured inside a window of distances to ``x*`` (default ``1e-12 < ||x_k - x*|| < 1e-4``):
far away the iterates still carry the transient, and near machine precision the directions are rounding noise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

WINDOW = (1e-12, 1e-4)


def gd(grad: Callable, x0, eta: float, n_steps: int, *, xstar=None, stop_below: Optional[float] = None,
       blowup: float = 1e6) -> np.ndarray:
    """GD iterates ``X[0] = x0, ..., X[K]`` (``K <= n_steps``), shape ``(K + 1, d)``.

    Stops early when ``||x_k - xstar|| < stop_below`` (needs ``xstar``) or when an iterate is not finite or leaves
    the ball of radius ``blowup`` (divergence: the last row is then that iterate).
    """
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"gd: eta got {eta!r}; allowed: a number > 0")
    x = np.array(x0, dtype=float)
    out = np.empty((n_steps + 1, x.size))
    out[0] = x
    xs = None if xstar is None else np.asarray(xstar, dtype=float)
    for k in range(n_steps):
        x = x - eta * np.asarray(grad(x), dtype=float)
        out[k + 1] = x
        if not np.all(np.isfinite(x)) or np.abs(x).max() > blowup:
            return out[: k + 2]
        if stop_below is not None and xs is not None and np.linalg.norm(x - xs) < stop_below:
            return out[: k + 2]
    return out


def distances(X, xstar) -> np.ndarray:
    return np.linalg.norm(np.asarray(X) - np.asarray(xstar), axis=-1)


def directions(X, xstar) -> np.ndarray:
    """``u_k = (x_k - x*)/||x_k - x*||`` (rows of zeros where ``x_k = x*`` exactly)."""
    E = np.asarray(X, dtype=float) - np.asarray(xstar, dtype=float)
    n = np.linalg.norm(E, axis=-1, keepdims=True)
    return np.divide(E, n, out=np.zeros_like(E), where=n > 0)


def update_cosines(X) -> np.ndarray:
    """``c_k = cos(dx_{k+1}, dx_k)`` for ``k = 0..K-2`` with ``dx_k = x_{k+1} - x_k`` (NaN where an update is 0)."""
    D = np.diff(np.asarray(X, dtype=float), axis=0)
    if len(D) < 2:
        return np.empty(0)
    num = np.sum(D[1:] * D[:-1], axis=-1)
    den = np.linalg.norm(D[1:], axis=-1) * np.linalg.norm(D[:-1], axis=-1)
    return np.divide(num, den, out=np.full_like(num, np.nan), where=den > 0)


@dataclass(frozen=True)
class Regime:
    """Eigen-structure of the Hessian at ``x*`` and the thresholds of Theorem 1."""

    lam: np.ndarray  # eigenvalues, ascending
    V: np.ndarray  # eigenvectors as columns
    eta_c: float  # 2/(lambda_1 + lambda_n): fixed direction below, oscillation above
    eta_max: float  # 2/lambda_n: the stability limit

    @property
    def v1(self) -> np.ndarray:
        return self.V[:, 0]

    @property
    def vn(self) -> np.ndarray:
        return self.V[:, -1]

    def predicted(self, eta: float) -> str:
        if eta < self.eta_c:
            return "fixed"
        if eta < self.eta_max:
            return "oscillatory"
        return "unstable"


def regime_threshold(H) -> Regime:
    """``eta_c = 2/(lambda_1 + lambda_n)`` and ``2/lambda_n`` from the Hessian at the minimiser (must be PD)."""
    H = np.asarray(H, dtype=float)
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    if lam[0] <= 0:
        raise ValueError(f"regime_threshold: the Hessian is not positive definite (lambda_1 = {lam[0]:.3g})")
    return Regime(lam=lam, V=V, eta_c=2.0 / (lam[0] + lam[-1]), eta_max=2.0 / lam[-1])


def alignment(X, xstar, V, window=WINDOW) -> dict:
    """The asymptotic measurements of one GD run, taken inside ``window`` on ``||x_k - x*||``.

    ``V`` holds the reference directions as columns (``v_1`` first, ``v_n`` last). Returns the last index ``k`` in the
    window, ``|<u_k, v_1>|`` and ``|<u_k, v_n>|`` there, the cosine ``c`` of the last update pair inside the window,
    the fraction of in-window steps whose ``<u_k, v_n>`` changes sign, and the number of in-window iterates. Values are
    NaN when the run never enters the window.
    """
    X = np.asarray(X, dtype=float)
    V = np.asarray(V, dtype=float)
    dist = distances(X, xstar)
    lo, hi = window
    inside = np.flatnonzero((dist > lo) & (dist < hi))
    nan = float("nan")
    out = {"k_last": -1, "n_window": int(inside.size), "align_v1": nan, "align_vn": nan, "cos": nan,
           "alternation": nan, "dist_final": float(dist[-1])}
    if inside.size == 0:
        return out
    k = int(inside[-1])
    u = directions(X[k:k + 1], xstar)[0]
    out.update(k_last=k, align_v1=float(abs(u @ V[:, 0])), align_vn=float(abs(u @ V[:, -1])))
    # the last pair of updates dx_{j+1}, dx_j with x_j, x_{j+1}, x_{j+2} all inside the window
    ok = [j for j in inside if j + 2 < len(X) and dist[j + 1] > lo and dist[j + 2] > lo]
    if ok:
        j = ok[-1]
        out["cos"] = float(update_cosines(X[j:j + 3])[0])
    proj = directions(X[inside], xstar) @ V[:, -1]
    if proj.size > 1:
        out["alternation"] = float(np.mean(np.sign(proj[1:]) != np.sign(proj[:-1])))
    return out


def alternation_fraction(values) -> float:
    """Fraction of consecutive pairs with opposite (nonzero) signs."""
    s = np.sign(np.asarray(values, dtype=float))
    if s.size < 2:
        return float("nan")
    return float(np.mean(s[1:] * s[:-1] < 0))


def is_monotone(values, *, strict: bool = False) -> bool:
    """Whether ``values`` never increases or never decreases."""
    d = np.diff(np.asarray(values, dtype=float))
    if strict:
        return bool(np.all(d < 0) or np.all(d > 0))
    return bool(np.all(d <= 0) or np.all(d >= 0))
