"""The time-complexity formulas the paper compares (Eqs. 2, 4, 5 and Theorem 1.6), in units of seconds, for a
problem summarised by (d, h, sigma^2/eps, L Delta/eps) and per-coordinate communication times tau_w (worker ->
server) and tau_s (server -> worker). Constants and log factors are dropped, as in the paper's Theta/Omega-tilde.

All functions broadcast over ``n`` (numpy arrays)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """d: dimension; h: seconds per stochastic gradient; s2e: sigma^2 / eps; lde: L Delta / eps (iterations scale)."""

    d: float = 1000.0
    h: float = 1.0
    s2e: float = 1000.0
    lde: float = 1.0


def time_sync_sgd_free(n, P: Problem):
    """Synchronised minibatch SGD with free communication: h (L Delta/eps + sigma^2 L Delta/(n eps^2))."""
    n = np.asarray(n, dtype=float)
    return P.h * (1.0 + P.s2e / n) * P.lde


def time_batch_sgd(n, P: Problem, tau_s, tau_w):
    """Uncompressed Batch (synchronised minibatch) SGD with communication both ways: each of L Delta/eps rounds
    costs a minibatch h (1 + sigma^2/(n eps)) per worker, an uplink tau_w d and a downlink tau_s d."""
    n = np.asarray(n, dtype=float)
    return (P.h * (1.0 + P.s2e / n) + tau_w * P.d + tau_s * P.d) * P.lde


def time_single_sgd(n, P: Problem):
    """Single-worker SGD (the other workers idle, no communication): h (L Delta/eps + sigma^2 L Delta/eps^2)."""
    n = np.asarray(n, dtype=float)
    return np.broadcast_to(P.h * (1.0 + P.s2e) * P.lde, n.shape).astype(float)


def time_batch_qsgd(n, P: Problem, tau_s, tau_w):
    """Batch QSGD / RandK uplink (Eq. 4): h (1 + sigma^2/(n eps)) L Delta/eps + tau_w (d/n + 1) L Delta/eps
    + sqrt(tau_w d h sigma^2/(n eps)) L Delta/eps + tau_s d L Delta/eps (the last term is Eq. 2's missing downlink)."""
    n = np.asarray(n, dtype=float)
    return (P.h * (1.0 + P.s2e / n) + tau_w * (P.d / n + 1.0) + np.sqrt(tau_w * P.d * P.h * P.s2e / n)
            + tau_s * P.d) * P.lde


def lower_bound_shape(n, P: Problem, tau_s, tau_w=None):
    """The lower bound's shape without log factors (Thm 4.2 / Eq. 11 with the free-communication bound):
    max{ h (1 + sigma^2/(n eps)),  min{ tau_s d,  h (1 + sigma^2/eps) } } L Delta/eps.
    At tau_s = tau_w it agrees with Thm 1.6's min{h(sigma^2/(n eps) + 1) + tau_s d, h + h sigma^2/eps} L Delta/eps
    within a factor 2. ``tau_w`` is accepted for symmetry and does not enter."""
    n = np.asarray(n, dtype=float)
    free = P.h * (1.0 + P.s2e / n)
    return np.maximum(free, np.minimum(tau_s * P.d, P.h * (1.0 + P.s2e))) * P.lde


def lower_bound_band(n, P: Problem, tau_s, tau_w=None):
    """(low, high): the shape above (high) and the same with the n-improvements the paper cannot exclude, the
    d-term divided by log^4(n+1) and the sigma^2/eps-term by log^6(n+1) (low; both factors floored at 1).
    Our reading of Thm 4.2's poly-log slack (a reconstruction: the exact log powers come from the brief)."""
    n = np.asarray(n, dtype=float)
    l4 = np.maximum(1.0, np.log(n + 1.0)) ** 4
    l6 = np.maximum(1.0, np.log(n + 1.0)) ** 6
    free = P.h * (1.0 + P.s2e / n)
    low = np.maximum(free, np.minimum(tau_s * P.d / l4, P.h * (1.0 + P.s2e / l6))) * P.lde
    return low, lower_bound_shape(n, P, tau_s, tau_w)


def landscape(ns, P: Problem, tau_s, tau_w) -> dict:
    """Every curve of Figure 4 at one (tau_s, tau_w): a dict of arrays over ``ns``."""
    ns = np.asarray(ns, dtype=float)
    low, high = lower_bound_band(ns, P, tau_s, tau_w)
    return {"n": ns, "sync_free": time_sync_sgd_free(ns, P), "batch_sgd": time_batch_sgd(ns, P, tau_s, tau_w),
            "single_sgd": time_single_sgd(ns, P), "qsgd_tau0": time_batch_qsgd(ns, P, 0.0, tau_w),
            "qsgd": time_batch_qsgd(ns, P, tau_s, tau_w), "lb_low": low, "lb_high": high}
