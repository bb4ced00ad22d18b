"""StocBiO (Ji, Yang, Liang 2021) on the reduced problem SBO_Phi of task A, many runs side by side.

One outer step t, for every lane (a basis, a size N and an outer step size alpha):

    repeat D times:  W <- W - beta * mean_b[ g_y(x, W Phi(xi_b), xi_b) Phi(xi_b) ],  beta = 0.5 / lambda_max(H_b)
    v = eta_N sum_{q=0}^{Q} prod_{j<=q} (I - eta_N H_j) grad_W f,   eta_N = 1 / max_j lambda_max(H_j)
    h = grad_x f - (grad^2_{xW} g) v   (grad_x f = 0 here)
    x <- clip(x - alpha h, -x_box, x_box)

with H_b = mean_b[g_yy Phi Phi^T] the minibatch Hessian of the reduced lower level, and every quantity (inner
steps, grad_W f, each Neumann term, the cross derivative) on its own minibatch of B joint samples (xi, eta). All lanes
read the same minibatches (common random numbers), so that differences between lanes are differences of methods.
The one-hot lanes are STOCBIO[N]: one lower-level copy per interval of a partition of Xi.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bases import features
from .sta import ObsTable, TwoLinkSTA


@dataclass
class Lane:
    kind: str
    N: int
    alpha: float
    rep: int = 0  # which of the runs' minibatch streams (e.g. 0: the tuning seed, 1: the claim seed)

    @property
    def name(self) -> str:
        return f"{self.kind}[{self.N}]"


@dataclass
class Streams:
    """Every minibatch of one run, drawn up front from one generator (so lanes and groups share them)."""

    xi_inner: np.ndarray  # (T, D, B)
    xi_f: np.ndarray  # (T, B)
    eta_f: np.ndarray  # (T, B) observed flows at xi_f
    xi_neu: np.ndarray  # (T, Q, B)
    xi_cross: np.ndarray  # (T, B)

    @classmethod
    def draw(cls, problem: TwoLinkSTA, table: ObsTable, T: int, D: int, Q: int, B: int, rng: np.random.Generator):
        u = rng.uniform(-1.0, 1.0, size=(T, D + Q + 2, B))
        z = rng.standard_normal((T, B))
        xi_f = u[:, D]
        return cls(u[:, :D], xi_f, table(xi_f) + problem.noise * z, u[:, D + 1:D + 1 + Q], u[:, D + 1 + Q])

    @property
    def samples_per_step(self) -> int:
        T, D, B = self.xi_inner.shape
        return (D + self.xi_neu.shape[1] + 2) * B


def _phi(lanes, Nmax, xi):
    """Features of each lane's basis at its stream's minibatch, zero-padded to Nmax: (L, B, Nmax).

    ``xi``: (R, B), one minibatch per stream; each (kind, N) is computed once for all streams."""
    cache = {}
    out = np.zeros((len(lanes), xi.shape[-1], Nmax))
    for i, ln in enumerate(lanes):
        key = (ln.kind, ln.N)
        if key not in cache:
            cache[key] = features(ln.kind, ln.N, xi)
        out[i, :, :ln.N] = cache[key][ln.rep]
    return out


def _lam_max(H, diagonal: bool):
    if diagonal:
        return np.einsum("lnn->ln", H).max(-1)
    return np.linalg.eigvalsh(H)[:, -1]


@dataclass
class History:
    lanes: list
    x: np.ndarray  # (L, T + 1): the upper-level iterate after each outer step
    samples: np.ndarray  # (T + 1,): joint samples used so far (per lane)
    W: list = field(default_factory=list)  # final lower-level variables, one per lane

    def averaged(self) -> np.ndarray:
        """The output at every step t: the average of the last half of the iterates, x_bar_t = mean(x_ceil(t/2)..x_t)."""
        T1 = self.x.shape[1]
        c = np.concatenate([np.zeros((self.x.shape[0], 1)), np.cumsum(self.x, axis=1)], axis=1)
        t = np.arange(T1)
        lo = (t + 1) // 2
        return (c[:, t + 1] - c[:, lo]) / (t + 1 - lo)


def run_group(problem: TwoLinkSTA, lanes: list, streams: list, *, x0: float, x_box: float = 2.0) -> History:
    """StocBiO for a group of lanes, vectorised: lanes of different N are zero-padded to the largest (a padded
    coordinate of W gets zero gradient and stays 0); each lane reads the stream ``streams[lane.rep]``."""
    Nmax = max(ln.N for ln in lanes)
    diagonal = all(ln.kind == "onehot" for ln in lanes)
    if Nmax > 20 and not diagonal:
        raise ValueError(f"run_group: N = {Nmax} > 20 is supported for the one-hot basis only")
    alpha = np.array([ln.alpha for ln in lanes], dtype=float)
    rep = np.array([ln.rep for ln in lanes])
    L = len(lanes)
    xi_inner = np.stack([s.xi_inner for s in streams], axis=2)  # (T, D, R, B)
    xi_f = np.stack([s.xi_f for s in streams], axis=1)  # (T, R, B)
    eta_f = np.stack([s.eta_f for s in streams], axis=1)
    xi_neu = np.stack([s.xi_neu for s in streams], axis=2)
    xi_cross = np.stack([s.xi_cross for s in streams], axis=1)
    T, D, _, B = xi_inner.shape
    Q = xi_neu.shape[1]
    x = np.full(L, float(x0))
    W = np.zeros((L, Nmax))
    xs = np.empty((L, T + 1))
    xs[:, 0] = x
    for t in range(T):
        xc = x[:, None]
        for d in range(D):
            xi = xi_inner[t, d]
            P = _phi(lanes, Nmax, xi)
            y = np.einsum("lbn,ln->lb", P, W)
            xl = xi[rep]
            gy = problem.g_y(xc, y, xl)
            gyy = problem.g_yy(xc, y, xl)
            grad = np.einsum("lb,lbn->ln", gy, P) / B
            H = np.einsum("lbn,lbm->lnm", P * gyy[..., None], P) / B
            W = W - (0.5 / _lam_max(H, diagonal))[:, None] * grad
        # grad_W f on its own minibatch
        xi = xi_f[t]
        P = _phi(lanes, Nmax, xi)
        y = np.einsum("lbn,ln->lb", P, W)
        p = np.einsum("lb,lbn->ln", y - eta_f[t][rep], P) / B
        # the Neumann series, one minibatch Hessian per term
        Hs = []
        for q in range(Q):
            xi = xi_neu[t, q]
            P = _phi(lanes, Nmax, xi)
            y = np.einsum("lbn,ln->lb", P, W)
            Hs.append(np.einsum("lbn,lbm->lnm", P * problem.g_yy(xc, y, xi[rep])[..., None], P) / B)
        eta = 1.0 / np.max([_lam_max(H, diagonal) for H in Hs], axis=0) if Hs else np.ones(L)
        v = p.copy()
        for H in Hs:
            p = p - eta[:, None] * np.einsum("lnm,lm->ln", H, p)
            v = v + p
        v = eta[:, None] * v
        # the cross derivative on its own minibatch
        xi = xi_cross[t]
        P = _phi(lanes, Nmax, xi)
        y = np.einsum("lbn,ln->lb", P, W)
        cross = np.einsum("lb,lbn->ln", problem.g_xy(xc, y, xi[rep]), P) / B
        h = -(cross * v).sum(-1)
        x = np.clip(x - alpha * h, -x_box, x_box)
        xs[:, t + 1] = x
    samples = np.arange(T + 1) * streams[0].samples_per_step
    return History(list(lanes), xs, samples, [w[:ln.N] for w, ln in zip(W, lanes)])


def run_lanes(problem: TwoLinkSTA, lanes: list, streams: list, *, x0: float, x_box: float = 2.0,
              dense_max: int = 10) -> History:
    """Every lane on its stream's minibatches: lanes with N <= dense_max run in one padded group, larger one-hot
    lanes in one group per N (a one-hot Hessian is diagonal, so lambda_max needs no eigensolver)."""
    if isinstance(streams, Streams):
        streams = [streams]
    groups: dict = {}
    for i, ln in enumerate(lanes):
        groups.setdefault(0 if ln.N <= dense_max else ln.N, []).append(i)
    T = streams[0].xi_inner.shape[0]
    xs = np.empty((len(lanes), T + 1))
    Ws = [None] * len(lanes)
    samples = None
    for _, idx in groups.items():
        hist = run_group(problem, [lanes[i] for i in idx], streams, x0=x0, x_box=x_box)
        xs[idx] = hist.x
        for j, i in enumerate(idx):
            Ws[i] = hist.W[j]
        samples = hist.samples
    return History(list(lanes), xs, samples, Ws)
