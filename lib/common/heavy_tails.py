"""Heavy-tailed gradient noise and clipped (proximal) SGD, vectorised over independent runs.

Shared by the clipped-SGD papers of the suite (``clipped_sgd_last_iterate``, ``clipped_heavy_tails``); nothing here
is specific to one paper.

Noise generators (all take a ``numpy.random.Generator`` and return float64 arrays):

- :func:`sym_pareto`: a symmetric Pareto (Lomax) scalar, ``sign * ((1 - U)^(-1/a) - 1)``; ``E|xi|^p < inf`` iff ``p < a``
  (closed-form moment: :func:`sym_pareto_abs_moment`).
- :func:`student_t`: Student-t with ``df`` degrees of freedom.
- :func:`coordinate_pareto`: i.i.d. symmetric Pareto coordinates scaled by ``1/sqrt(d)`` (so the norm does not grow
  with ``d``).
- :func:`directional_heavy_tail`: ``s * u`` with ``s`` a symmetric Pareto scalar and ``u`` uniform on the unit sphere
  of a ``k``-dimensional coordinate subspace, so ``||n|| = |s|`` exactly: ``sigma_l`` is fixed by ``s`` and
  ``sigma_s = sigma_l * (E|u_1|^p)^(1/p)`` (:func:`sigma_s_of`, :func:`deff_of`).
- :func:`nested_sphere_noise`: the same for several k at once, from shared draws (common random numbers across k).
- :func:`spike_noise`: a one-sided, centred Pareto spike ``(P - E P) e_J`` on a uniform coordinate ``J`` among ``k``,
  stored sparsely (:class:`SparseRows`): ``d_eff = k`` exactly and the clipping bias points along the spikes.
- :func:`calibrate_scale`: the factor that gives a sampler a target ``p``-th moment of the norm (Monte Carlo).

Clipped SGD:

- :func:`clip_rows`: ``min(1, lam / ||g||) g`` row by row.
- :class:`Method` and :func:`run_clipped_sgd`: several step-size / clipping schedules advanced side by side on an
  ``(M, R, d)`` array (``M`` methods, ``R`` runs), every method seeing the *same* noise draw at each step (common
  random numbers); optional proximal step for ``r(x) = mu/2 ||x||^2``; online weighted averages of the iterates;
  ``f - f*`` of the last iterate and of each average at checkpoints.

Statistics: :func:`quantile_curves` (mean, sd, median, q95, max over runs), :func:`fit_loglog_slope`, :func:`ecdf`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

__all__ = [
    "Method",
    "RunResult",
    "SparseRows",
    "calibrate_scale",
    "centred_lomax_abs_moment",
    "clip_rows",
    "coordinate_pareto",
    "deff_of",
    "directional_heavy_tail",
    "ecdf",
    "fit_loglog_slope",
    "log_checkpoints",
    "nested_sphere_noise",
    "quantile_curves",
    "run_clipped_sgd",
    "sigma_s_of",
    "sphere_uniform",
    "spike_noise",
    "student_t",
    "sym_pareto",
    "sym_pareto_abs_moment",
]


# --------------------------------------------------------------------------------------------------------------
# scalar and vector noise
# --------------------------------------------------------------------------------------------------------------
def _check_tail(tail: float) -> float:
    tail = float(tail)
    if not tail > 0 or not math.isfinite(tail):
        raise ValueError(f"tail index must be a positive finite number, got {tail!r}")
    return tail


def _lomax(tail: float, size, rng: np.random.Generator) -> np.ndarray:
    """Lomax (Pareto II) with shape ``tail`` and scale 1: ``(1 - U)^(-1/tail) - 1``, P(X > x) = (1 + x)^(-tail)."""
    u = rng.random(size)
    return np.expm1(-np.log1p(-u) / tail)


def sym_pareto(tail: float, size, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Symmetric Pareto noise ``scale * sign * ((1 - V)^(-1/tail) - 1)``: |xi| is Lomax(tail), E|xi|^p < inf iff p < tail.

    One uniform per draw: with ``w = 2U - 1``, ``sign(w)`` and ``V = |w|`` are independent, a fair sign and a uniform.
    """
    tail = _check_tail(tail)
    w = rng.random(size)
    w *= 2.0
    w -= 1.0
    mag = np.abs(w)
    np.negative(mag, out=mag)
    np.log1p(mag, out=mag)
    mag *= -1.0 / tail
    np.expm1(mag, out=mag)
    if scale != 1.0:
        mag *= scale
    return np.copysign(mag, w, out=mag)


def sym_pareto_abs_moment(tail: float, p: float) -> float:
    """``E|xi|^p`` of :func:`sym_pareto` with scale 1: ``Gamma(p+1) Gamma(tail-p) / Gamma(tail)`` (inf when p >= tail)."""
    tail, p = _check_tail(tail), float(p)
    if p >= tail:
        return math.inf
    return math.exp(math.lgamma(p + 1) + math.lgamma(tail - p) - math.lgamma(tail))


def centred_lomax_abs_moment(tail: float, p: float) -> float:
    """``E|X - E X|^p`` for X ~ Lomax(tail) (tail > 1), by quadrature of the density ``tail (1+x)^(-tail-1)``."""
    from scipy import integrate

    tail, p = _check_tail(tail), float(p)
    if tail <= 1:
        raise ValueError(f"the centred spike needs a finite mean: tail > 1, got {tail}")
    if p >= tail:
        return math.inf
    m = 1.0 / (tail - 1.0)

    def dens(x):
        return tail * (1.0 + x) ** (-tail - 1.0)

    below, _ = integrate.quad(lambda x: (m - x) ** p * dens(x), 0.0, m)
    # above the mean substitute x = m + y; the integrand decays like y^(p - tail - 1)
    above, _ = integrate.quad(lambda y: y ** p * dens(m + y), 0.0, np.inf, limit=400)
    return below + above


def student_t(df: float, size, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Student-t noise with ``df`` degrees of freedom (E|t|^p < inf iff p < df)."""
    df = _check_tail(df)
    return scale * rng.standard_t(df, size=size)


def coordinate_pareto(d: int, tail: float, size: int, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """``(size, d)`` noise with i.i.d. symmetric Pareto coordinates, scaled by ``scale / sqrt(d)``."""
    return sym_pareto(tail, (int(size), int(d)), rng, scale=scale / math.sqrt(d))


def sphere_uniform(k: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``(size, k)`` points uniform on the unit sphere S^(k-1) (normalised Gaussians; k = 1 gives random signs)."""
    z = rng.standard_normal((int(size), int(k)))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def sphere_abs_moment(k: int, p: float) -> float:
    """``E|u_1|^p`` for u uniform on S^(k-1): ``Gamma(k/2) Gamma((p+1)/2) / (sqrt(pi) Gamma((k+p)/2))``."""
    k, p = int(k), float(p)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return math.exp(math.lgamma(k / 2) + math.lgamma((p + 1) / 2) - 0.5 * math.log(math.pi) - math.lgamma((k + p) / 2))


def sigma_s_of(k: int, p: float, kind: str = "sphere") -> float:
    """``sigma_s / sigma_l`` of the k-dimensional noise ``kind``.

    ``sigma_s^p = sup_{||e|| = 1} E|<e, n>|^p`` and ``sigma_l^p = E||n||^p``. For ``"sphere"`` (``s * u``,
    :func:`directional_heavy_tail`) the sup is attained by any unit vector of the subspace: ``(E|u_1|^p)^(1/p)``.
    For ``"spike"`` (:func:`spike_noise`, p <= 2) ``E|<e, n>|^p = sigma_l^p / k * sum_j |e_j|^p`` is largest at the
    uniform direction: ``k^(-1/2)``.
    """
    if kind == "sphere":
        return sphere_abs_moment(k, p) ** (1.0 / p)
    if kind == "spike":
        if not 1.0 <= p <= 2.0:
            raise ValueError(f"sigma_s_of(kind='spike') holds for p in [1, 2], got {p}")
        return float(k) ** -0.5
    raise ValueError(f"kind must be 'sphere' or 'spike', got {kind!r}")


def deff_of(k: int, p: float, kind: str = "sphere") -> float:
    """Generalised effective dimension ``d_eff = sigma_l^2 / sigma_s^2`` of the k-dimensional noise ``kind``
    (``k`` exactly for p = 2 on the sphere and for every p on the spike)."""
    return sigma_s_of(k, p, kind) ** -2.0


def _scale_for(sigma_l: Optional[float], p: Optional[float], moment: Callable[[], float]) -> float:
    if sigma_l is None:
        return 1.0
    if p is None:
        raise ValueError("sigma_l needs p (the moment that sigma_l bounds)")
    return float(sigma_l) / moment() ** (1.0 / float(p))


def directional_heavy_tail(k: int, d: int, tail: float, size: int, rng: np.random.Generator,
                           sigma_l: Optional[float] = None, p: Optional[float] = None,
                           coords: Optional[Sequence[int]] = None) -> np.ndarray:
    """``(size, d)`` noise ``s * u``: u uniform on the unit sphere of the coordinates ``coords`` (default the first k),
    s symmetric Pareto(tail), scaled so that ``E||n||^p = E|s|^p = sigma_l^p`` exactly (when sigma_l and p are given)."""
    k, d = int(k), int(d)
    if not 1 <= k <= d:
        raise ValueError(f"need 1 <= k <= d, got k={k}, d={d}")
    idx = np.arange(k) if coords is None else np.asarray(coords, dtype=int)
    if idx.shape != (k,):
        raise ValueError(f"coords must list k={k} coordinates")
    scale = _scale_for(sigma_l, p, lambda: sym_pareto_abs_moment(tail, p))
    s = sym_pareto(tail, int(size), rng, scale=scale)
    out = np.zeros((int(size), d))
    out[:, idx] = s[:, None] * sphere_uniform(k, size, rng)
    return out


def nested_sphere_noise(ks: Sequence[int], d: int, tail: float, size: int, rng: np.random.Generator,
                        sigma_l: Optional[float] = None, p: Optional[float] = None) -> np.ndarray:
    """``(len(ks), size, d)``: :func:`directional_heavy_tail` for several subspace sizes k from the *same* draws
    (common random numbers): one Pareto scalar s and one Gaussian z per row, ``u_k = z[:k] / ||z[:k]||``. Every slice
    has the law of ``directional_heavy_tail(k, ...)``, and ``||n_k|| = |s|`` is the same for all k."""
    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1 or max(ks) > int(d):
        raise ValueError(f"need 1 <= k <= d for every k, got ks={ks}, d={d}")
    scale = _scale_for(sigma_l, p, lambda: sym_pareto_abs_moment(tail, p))
    s = sym_pareto(tail, int(size), rng, scale=scale)
    z = rng.standard_normal((int(size), max(ks)))
    out = np.zeros((len(ks), int(size), int(d)))
    for i, k in enumerate(ks):
        zk = z[:, :k]
        out[i, :, :k] = (s / np.linalg.norm(zk, axis=1))[:, None] * zk
    return out


@dataclass
class SparseRows:
    """``n`` rows with one non-zero each: row i is ``value[i] * e_{index[i]}`` in R^d."""

    index: np.ndarray
    value: np.ndarray
    d: int

    def __len__(self) -> int:
        return len(self.value)

    def dense(self) -> np.ndarray:
        out = np.zeros((len(self.value), self.d))
        out[np.arange(len(self.value)), self.index] = self.value
        return out

    def norms(self) -> np.ndarray:
        return np.abs(self.value)


def spike_noise(k: int, d: int, tail: float, size: int, rng: np.random.Generator,
                sigma_l: Optional[float] = None, p: Optional[float] = None, sparse: bool = True):
    """One-sided centred Pareto spike ``c * (P - E P) e_J``, P ~ Lomax(tail) (tail > 1), J uniform on {0..k-1}.

    ``c`` makes ``E||n||^p = sigma_l^p`` (by quadrature, :func:`centred_lomax_abs_moment`). Mean zero, d_eff = k
    (:func:`deff_of` with ``kind="spike"``). Returned as :class:`SparseRows` (``sparse=True``: 10^6 draws cost two
    vectors) or as a dense ``(size, d)`` array.
    """
    k, d = int(k), int(d)
    if not 1 <= k <= d:
        raise ValueError(f"need 1 <= k <= d, got k={k}, d={d}")
    tail = _check_tail(tail)
    if tail <= 1:
        raise ValueError(f"the centred spike needs a finite mean: tail > 1, got {tail}")
    scale = _scale_for(sigma_l, p, lambda: centred_lomax_abs_moment(tail, p))
    value = scale * (_lomax(tail, int(size), rng) - 1.0 / (tail - 1.0))
    index = rng.integers(0, k, size=int(size))
    rows = SparseRows(index=index, value=value, d=d)
    return rows if sparse else rows.dense()


def calibrate_scale(sampler: Callable[[int, np.random.Generator], np.ndarray], p: float, sigma: float,
                    n: int = 200_000, rng: Optional[np.random.Generator] = None) -> float:
    """The factor c with ``E||c X||^p = sigma^p`` for ``X = sampler(n, rng)`` (rows are vectors; 1-D: scalars), by
    Monte Carlo over n draws. Heavy tails make the estimate noisy when p is close to the tail index: prefer the closed
    forms (:func:`sym_pareto_abs_moment`, :func:`centred_lomax_abs_moment`) where they exist."""
    rng = np.random.default_rng(0) if rng is None else rng
    x = np.asarray(sampler(int(n), rng), dtype=float)
    norms = np.abs(x) if x.ndim == 1 else np.linalg.norm(x.reshape(len(x), -1), axis=1)
    moment = float(np.mean(norms ** p))
    if not moment > 0:
        raise ValueError("calibrate_scale: the sampler's p-th moment is zero")
    return float(sigma) / moment ** (1.0 / p)


# --------------------------------------------------------------------------------------------------------------
# clipped SGD
# --------------------------------------------------------------------------------------------------------------
def clip_rows(G: np.ndarray, lam, return_mask: bool = False):
    """``min(1, lam / ||g||) g`` for each row g of ``G`` (norm over the last axis); ``lam`` broadcasts against
    ``G.shape[:-1]`` (``np.inf``: no clipping). Zero rows stay zero."""
    G = np.asarray(G, dtype=float)
    lam = np.asarray(lam, dtype=float)
    norms = np.sqrt(np.einsum("...i,...i->...", G, G))
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0, lam / norms)  # a zero row or lam = inf gives inf: factor 1, no clipping
    out = G * factor[..., None]
    return (out, norms > lam) if return_mask else out


@dataclass
class Method:
    """One schedule of the runner: step sizes ``gamma[k]`` and clipping levels ``lam[k]`` for k = 0..K-1
    (``lam=None``: unclipped SGD). ``weights``: extra averaging weights by name (arrays of length K) on top of the
    runner's ``uniform`` and ``gamma`` averages. ``average``: True tracks the runner's averages and the method's own
    weights, False the last iterate only (saves the averages' work), a tuple of names just those averages."""

    name: str
    gamma: np.ndarray
    lam: Optional[np.ndarray] = None
    weights: Mapping[str, np.ndarray] = field(default_factory=dict)
    average: Any = True

    def tracks(self, name: str, runner_averages: Sequence[str]) -> bool:
        """Whether the runner tracks the average ``name`` for this method."""
        if self.average is True:
            return name in runner_averages or name in self.weights
        if self.average is False or self.average is None:
            return False
        return name in tuple(self.average)

    def __post_init__(self):
        self.gamma = np.asarray(self.gamma, dtype=float)
        if self.gamma.ndim != 1 or not np.all(np.isfinite(self.gamma)) or np.any(self.gamma < 0):
            raise ValueError(f"method {self.name!r}: gamma must be a 1-D array of finite steps >= 0")
        if self.lam is not None:
            self.lam = np.broadcast_to(np.asarray(self.lam, dtype=float), self.gamma.shape).copy()
            if np.any(~(self.lam > 0)):
                raise ValueError(f"method {self.name!r}: clipping levels must be > 0 (np.inf: no clipping)")


@dataclass
class RunResult:
    """What :func:`run_clipped_sgd` returns.

    ``values[name][output]``: ``(C, R)`` array of ``value(x)`` (e.g. f - f*) at the checkpoints, for the outputs
    ``"last"`` and each average; ``clip_fraction[name]``: share of the K*R steps whose gradient was clipped;
    ``final[name]``: the last iterates ``(R, d)``; ``trajectory``: ``(K+1, M, R, d)`` when asked for.
    """

    checkpoints: np.ndarray
    values: dict
    clip_fraction: dict
    final: dict
    methods: list
    trajectory: Optional[np.ndarray] = None

    def curve(self, name: str, output: str = "last") -> np.ndarray:
        return self.values[name][output]

    def at(self, name: str, output: str = "last", k: Optional[int] = None) -> np.ndarray:
        """The R values of ``output`` of method ``name`` at checkpoint ``k`` (default: the last checkpoint)."""
        i = len(self.checkpoints) - 1 if k is None else int(np.flatnonzero(self.checkpoints == k)[0])
        return self.values[name][output][i]


def log_checkpoints(K: int, n: int = 25, start: int = 1) -> np.ndarray:
    """About ``n`` distinct integers log-spaced from ``start`` to ``K`` (K included)."""
    pts = np.unique(np.round(np.geomspace(max(1, start), K, n)).astype(int))
    return pts


def run_clipped_sgd(oracle: Callable[[np.ndarray, Any], np.ndarray], draw: Callable[[np.random.Generator, int], Any],
                    x0: np.ndarray, methods: Sequence[Method], R: int, rng: np.random.Generator, *,
                    checkpoints: Optional[Sequence[int]] = None, value: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                    mu=0.0, averages: Sequence[str] = ("uniform", "gamma"), value_rows: bool = False,
                    store_trajectory: bool = False) -> RunResult:
    """Clipped (proximal) SGD for every method in ``methods`` on R independent runs, vectorised as ``(M, R, d)``.

    Step k (k = 0..K-1), for each method m and run r:
    ``g = oracle(X, draw(rng, R))``, ``x_{k+1} = (x_k - gamma_k clip(g, lam_k)) / (1 + gamma_k mu)``
    (the proximal step of ``r(x) = mu/2 ||x||^2``; mu = 0 is plain clipped SGD; ``mu`` may also give one value per
    method).

    - ``draw(rng, R)`` returns the step's randomness for the R runs (an array or a tuple of arrays); it is drawn once per
      step and shared by all methods (common random numbers).
    - ``oracle(X, sample)`` maps iterates ``X`` of shape ``(M, R, d)`` (rows in the order of ``methods``) and that
      sample to stochastic gradients of the same shape.
    - ``value(X)`` maps ``(M, R, d)`` to ``(M, R)`` (e.g. f - f*), evaluated at the checkpoints (k in 0..K; default
      25 log-spaced) for the last iterate x_k and, for methods with ``average=True``, for the averages of
      x_0..x_{k-1} with weights ``"uniform"`` (1), ``"gamma"`` (gamma_j) and the methods' own ``weights`` (the same
      names for every averaged method). ``value_rows=True``: ``value(Y, rows=...)`` also gets the indices (into
      ``methods``) of Y's rows, for methods that measure different objectives.
    """
    methods = list(methods)
    if not methods:
        raise ValueError("run_clipped_sgd needs at least one method")
    K = len(methods[0].gamma)
    if any(len(m.gamma) != K for m in methods):
        raise ValueError("every method needs the same number of steps K (len(gamma))")
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise ValueError(f"method names must be unique, got {names}")
    ms = methods
    M, R = len(ms), int(R)
    x0 = np.asarray(x0, dtype=float)
    d = x0.shape[-1]
    X = np.broadcast_to(x0, (M, R, d)).astype(float, copy=True)
    ckpts = log_checkpoints(K) if checkpoints is None else np.unique(np.asarray(checkpoints, dtype=int))
    if ckpts.size == 0 or ckpts[0] < 0 or ckpts[-1] > K:
        raise ValueError(f"checkpoints must lie in [0, K={K}]")
    gam = np.stack([m.gamma for m in ms])                                  # (M, K)
    avg_names = list(dict.fromkeys(list(averages) + sorted({a for m in ms for a in m.weights})))
    # each average is tracked for the methods that ask for it (Method.average: True = the runner's averages and the
    # method's own weights, False = none, or a tuple of names); a contiguous block of them is a view of X
    idx, sel, W = {}, {}, {}
    for a in avg_names:
        rows = [j for j, m in enumerate(ms) if m.tracks(a, averages)]
        if not rows:
            continue
        for j in rows:
            if a not in ("uniform", "gamma") and a not in ms[j].weights:
                raise ValueError(f"method {ms[j].name!r} tracks the average {a!r} but has no weights for it")
        idx[a] = np.asarray(rows)
        sel[a] = slice(rows[0], rows[-1] + 1) if rows[-1] - rows[0] + 1 == len(rows) else idx[a]
        if a == "uniform":
            W[a] = np.ones((len(rows), K))
        elif a == "gamma":
            W[a] = gam[idx[a]]
        else:
            W[a] = np.stack([np.asarray(ms[j].weights[a], dtype=float) for j in rows])
            if W[a].shape != (len(rows), K) or np.any(W[a] < 0):
                raise ValueError(f"averaging weights {a!r} must be K non-negative numbers per method")
    avg_names = [a for a in avg_names if a in idx]
    lam = np.stack([m.lam if m.lam is not None else np.full(K, np.inf) for m in ms])  # (M, K)
    clipped_any = np.isfinite(lam).any()
    S = {a: np.zeros((len(idx[a]), R, d)) for a in avg_names}
    Wsum = {a: np.zeros(len(idx[a])) for a in avg_names}
    tmp = {a: np.empty((len(idx[a]), R, d)) for a in avg_names}
    unit = {a: bool(np.all(W[a] == 1.0)) for a in avg_names}
    value = value or (lambda Y, rows=None: np.zeros(Y.shape[:-1]))
    vals = {"last": np.empty((len(ckpts), M, R))}
    vals.update({a: np.empty((len(ckpts), len(idx[a]), R)) for a in avg_names})
    n_clipped = np.zeros(M)
    traj = np.empty((K + 1, M, R, d)) if store_trajectory else None
    if traj is not None:
        traj[0] = X

    def record(i):
        vals["last"][i] = value(X, rows=np.arange(M)) if value_rows else value(X)
        for a in avg_names:
            ok = Wsum[a] > 0
            A = np.where(ok[:, None, None], S[a] / np.where(ok, Wsum[a], 1.0)[:, None, None], X[sel[a]])
            vals[a][i] = value(A, rows=idx[a]) if value_rows else value(A)

    ci = 0
    if ckpts[0] == 0:
        record(0)
        ci = 1
    mu = np.broadcast_to(np.asarray(mu, dtype=float), (M,))
    if np.any(mu < 0):
        raise ValueError("mu must be >= 0")
    shrink = 1.0 / (1.0 + gam * mu[:, None]) if np.any(mu > 0) else None
    for k in range(K):
        for a in avg_names:  # the averages collect the points where gradients are queried: x_0..x_{K-1}
            Xa = X[sel[a]]
            if unit[a]:
                S[a] += Xa
            else:
                np.multiply(Xa, W[a][:, k][:, None, None], out=tmp[a])
                S[a] += tmp[a]
            Wsum[a] += W[a][:, k]
        G = np.asarray(oracle(X, draw(rng, R)), dtype=float)
        if G.base is not None or not G.flags.writeable:  # scaled in place below: never write into the oracle's data
            G = G.copy()
        if clipped_any:
            norms = np.sqrt(np.einsum("mri,mri->mr", G, G))
            lk = lam[:, k][:, None]
            n_clipped += (norms > lk).sum(axis=1)
            with np.errstate(divide="ignore"):
                factor = np.minimum(1.0, lk / norms)
            factor *= gam[:, k][:, None]
        else:
            factor = np.broadcast_to(gam[:, k][:, None], (M, R))
        G *= factor[..., None]
        X -= G
        if shrink is not None:
            X *= shrink[:, k][:, None, None]
        if traj is not None:
            traj[k + 1] = X
        while ci < len(ckpts) and ckpts[ci] == k + 1:
            record(ci)
            ci += 1
    values = {m.name: {"last": vals["last"][:, j, :]} for j, m in enumerate(ms)}
    for a in avg_names:
        for pos, j in enumerate(idx[a]):
            values[ms[j].name][a] = vals[a][:, pos, :]
    return RunResult(checkpoints=ckpts, values=values,
                     clip_fraction={m.name: float(n_clipped[j] / (K * R)) for j, m in enumerate(ms)},
                     final={m.name: X[j].copy() for j, m in enumerate(ms)}, methods=methods, trajectory=traj)


# --------------------------------------------------------------------------------------------------------------
# statistics over runs
# --------------------------------------------------------------------------------------------------------------
def quantile_curves(values: np.ndarray, checkpoints: Optional[Sequence[int]] = None, q: float = 0.95):
    """Summary over runs of a ``(C, R)`` array: a DataFrame with ``k, mean, sd, median, q<100q>, max`` per checkpoint."""
    import pandas as pd

    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[None, :]
    k = np.arange(len(v)) if checkpoints is None else np.asarray(checkpoints)
    qname = f"q{int(round(100 * q))}"
    return pd.DataFrame({"k": k, "mean": v.mean(axis=1), "sd": v.std(axis=1, ddof=1) if v.shape[1] > 1 else 0.0,
                         "median": np.median(v, axis=1), qname: np.quantile(v, q, axis=1), "max": v.max(axis=1)})


def fit_loglog_slope(k, y, kmin: Optional[float] = None, kmax: Optional[float] = None) -> tuple[float, float]:
    """Least-squares fit ``log y = intercept + slope log k`` over ``kmin <= k <= kmax`` (positive y only);
    returns ``(slope, intercept)``."""
    k, y = np.asarray(k, dtype=float), np.asarray(y, dtype=float)
    ok = (k > 0) & (y > 0) & np.isfinite(y)
    if kmin is not None:
        ok &= k >= kmin
    if kmax is not None:
        ok &= k <= kmax
    if ok.sum() < 2:
        raise ValueError("fit_loglog_slope needs at least two positive points in the range")
    slope, intercept = np.polyfit(np.log(k[ok]), np.log(y[ok]), 1)
    return float(slope), float(intercept)


def ecdf(x) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and their empirical CDF levels ``i / n``."""
    x = np.sort(np.asarray(x, dtype=float).ravel())
    return x, np.arange(1, len(x) + 1) / len(x)
