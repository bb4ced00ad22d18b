"""The experiments behind each figure and the numbers behind each claim. Every function returns plain results
(dataclasses of arrays, pandas DataFrames); nothing here draws.

- :func:`sphere_experiment` (Figures 1, 2, 4): per instance and per m, the sphere problem, L-hat, the projected-
  gradient reference (which also gives f*), RFW with the three step rules, the Euclidean-ball counterpart, c-hat,
  alpha-hat at the problem's radius and Theorem 5.1's predicted factor.
- :func:`rsi_sweep` (Figure 3): alpha-hat(R) of sphere caps (and hyperbolic balls) against 1/(2R).
- :func:`hyperbolic_experiment` (Figure 5): RFW on H^(n-1) with f = 1/2 d^2(x, x*).
- :func:`lmo_validation` (Figure 6): the reduced LMO against random boundary points and against small perturbations
  of its answer in all n dimensions.
- :func:`summary`, :func:`claims`: the table of fitted factors and the values the ledger checks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common import limit_threads

from . import theory
from .manifolds import Euclidean, Lorentz, Sphere
from .problems import Quadratic, SquaredDistance
from .rfw import STEPS, projected_gradient, rfw
from .sets import GeodesicBall

TOL = 1e-10          # "converged": f_t - f* < TOL ends the window of the contraction fit (the brief's choice)
EARLY = (5, 20)      # the early ("sublinear") window of claim C2
C1_STEPS = 300       # claim C1b: f - f* <= 1e-6 (f_0 - f*) within this many short steps
SAFETY = 0.8         # alpha-hat is a sampled minimum, an over-estimate: the bound of C4 uses 0.8 alpha-hat


@dataclass
class Run:
    """One problem instance on one geometry: the RFW histories per step rule, the PG reference and the constants."""

    geometry: str            # "sphere", "euclidean" or "hyperbolic"
    label: str               # e.g. "m = 600"
    m: int | None
    instance: int
    radius: float
    f_star: float
    L: float
    c_hat: float
    alpha_hat: float
    rate: float              # Theorem 5.1's max{1/2, 1 - alpha c/(2L)} with alpha-hat, c-hat, L-hat
    rate_safe: float         # the same with SAFETY * alpha-hat (claim C4)
    runs: dict = field(default_factory=dict)   # step -> rfw history
    pg: dict = field(default_factory=dict)     # projected-gradient history (longer: it also gives f*)
    iters: int = 0
    x_hat_rel: float = float("nan")            # d(x-hat*, x_c) / R: 1 = the optimum is on the boundary
    f0: float = float("nan")
    problem: object = None
    x0: object = None
    ball: object = None

    def gap(self, step: str) -> np.ndarray:
        return np.maximum(self.runs[step]["f"] - self.f_star, 0.0)

    def pg_gap(self) -> np.ndarray:
        return np.maximum(self.pg["f"][: self.iters + 1] - self.f_star, 0.0)


# --------------------------------------------------------------------------------------------- problem builders
def sphere_problem(n: int, m: int, dist: float, radius_frac: float, rng):
    """x* and x_c uniform on S^(n-1), x_c then moved along the geodesic to d(x*, x_c) = ``dist``; R = radius_frac *
    dist; A with i.i.d. N(0, 1/m) entries. Returns (problem, ball)."""
    S = Sphere(n)
    xs, xc = S.random_point(rng), S.random_point(rng)
    u = S.log(xs, xc)
    xc = S.exp(xs, dist * u / S.norm(u))
    A = rng.standard_normal((m, n)) / np.sqrt(m)
    return Quadratic(S, A, xs), GeodesicBall(S, xc, radius_frac * dist)


def hyperbolic_problem(n: int, dist: float, radius_frac: float, rng):
    """x_c the origin of H^(n-1), x* at distance ``dist`` in a uniform direction, R = radius_frac * dist."""
    H = Lorentz(n)
    xc = H.origin()
    v = H.random_tangent(xc, rng)
    xs = H.exp(xc, dist * v / H.norm(v))
    return SquaredDistance(H, xs), GeodesicBall(H, xc, radius_frac * dist)


def estimate_L(problem, ball, rng, k: int) -> float:
    """L-hat: the largest operator norm of the Riemannian Hessian at the centre and ``k`` sampled points of C (half
    on the boundary)."""
    pts = np.vstack([ball.c[None, :], ball.random_points(rng, k, boundary_frac=0.5)])
    return float(max(problem.hess_norm(p) for p in pts))


def alpha_hat(manifold_cls, n: int, radius: float, n_samples: int, rng) -> float:
    """alpha-hat of a geodesic ball of ``radius`` (centred at the north pole / origin; the constant does not depend on
    the centre, nor on n >= 3, by symmetry)."""
    M = manifold_cls(n)
    c = np.zeros(n)
    c[0] = 1.0
    ratios = theory.rsi_ratios(GeodesicBall(M, c, radius), n_samples, rng)
    return float(ratios.min())


def _solve(problem, ball, x0, iters, n_pg, L, geometry, label, m, instance, alpha, f_star=None, c_floor=None):
    pg = projected_gradient(problem, ball, x0, max(n_pg, iters), L)
    runs = {step: rfw(problem, ball, x0, iters, step=step, L=L) for step in STEPS}
    fs = min([float(pg["f"].min())] + [float(r["f"].min()) for r in runs.values()])
    if f_star is not None:
        fs = min(fs, f_star)
    grads = [pg["grad_norm"]] + [r["grad_norm"] for r in runs.values()]
    c_hat = float(min(g.min() for g in grads))
    if c_floor is not None:
        c_hat = min(c_hat, c_floor)
    return Run(geometry=geometry, label=label, m=m, instance=instance, radius=ball.R, f_star=fs, L=L, c_hat=c_hat,
               alpha_hat=alpha, rate=theory.predicted_rate(alpha, c_hat, L),
               rate_safe=theory.predicted_rate(SAFETY * alpha, c_hat, L), runs=runs, pg=pg, iters=iters,
               x_hat_rel=float(ball.dist_to_center(pg["x"]) / ball.R), f0=float(runs["short"]["f"][0]), x0=x0,
               problem=problem, ball=ball)


def _c_samples(problem, ball, rng, k):
    pts = ball.random_points(rng, k, boundary_frac=0.5)
    return float(problem.M.norm(problem.rgrad(pts)).min())


@limit_threads(1)
def sphere_experiment(cfg) -> list[Run]:
    """Figures 1, 2 and 4: for each instance and each m = round(ratio n), the sphere run and its Euclidean
    counterpart (the same A and x*, the ball of chordal radius |x* - x_c|-scaled, centre x_c in R^n)."""
    out = []
    for i in range(cfg.n_instances):
        rng = cfg.rng(f"sphere{i}")
        alpha_s = alpha_hat(Sphere, cfg.rsi_n, cfg.radius_frac * cfg.dist, cfg.rsi_samples, cfg.rng(f"alpha{i}"))
        for ratio in cfg.m_ratios:
            m = int(round(ratio * cfg.n))
            prob, ball = sphere_problem(cfg.n, m, cfg.dist, cfg.radius_frac, rng)
            L = estimate_L(prob, ball, rng, cfg.n_points)
            c_s = _c_samples(prob, ball, rng, 4 * cfg.n_points)
            out.append(_solve(prob, ball, ball.c, cfg.iters, cfg.n_pg, L, "sphere", f"m = {m}", m, i, alpha_s,
                              c_floor=c_s))
            # the Euclidean counterpart: same A, x*, centre; radius_frac times the chordal distance |x* - x_c|
            E = Euclidean(cfg.n)
            probE = Quadratic(E, prob.A, prob.xstar)
            ballE = GeodesicBall(E, ball.c, cfg.radius_frac * float(np.linalg.norm(prob.xstar - ball.c)))
            LE = probE.hess_norm(ball.c)
            out.append(_solve(probE, ballE, ballE.c, cfg.iters, cfg.n_pg, LE, "euclidean", f"m = {m}", m, i,
                              1.0 / (2.0 * ballE.R), c_floor=_c_samples(probE, ballE, rng, 4 * cfg.n_points)))
    return out


@limit_threads(1)
def hyperbolic_experiment(cfg) -> list[Run]:
    """Figure 5: RFW on H^(n_h - 1), f = 1/2 d^2(x, x*), over B(x_c, R), from a random boundary point x_0 (from x_c
    the first FW step would land on the solution). Closed forms: f* = 1/2 (d(x*, x_c) - R)^2 (the nearest point of
    the ball lies on the geodesic to x*), c = min_C |grad f| = d(x*, x_c) - R and L = D coth D with D = d(x*, x_c) + R
    (the Hessian's largest eigenvalue d coth d grows with d = d(x, x*))."""
    out = []
    R = cfg.radius_frac * cfg.dist
    for i in range(cfg.n_instances):
        rng = cfg.rng(f"hyperbolic{i}")
        prob, ball = hyperbolic_problem(cfg.n_h, cfg.dist, cfg.radius_frac, rng)
        x0 = ball.random_points(rng, 1, boundary_frac=1.0)[0]
        alpha_h = alpha_hat(Lorentz, cfg.rsi_n, R, cfg.rsi_samples, cfg.rng(f"alpha_h{i}"))
        D = cfg.dist + R
        L = max(estimate_L(prob, ball, rng, cfg.n_points), D / np.tanh(D))
        exact_c = cfg.dist - R
        out.append(_solve(prob, ball, x0, cfg.iters_h, cfg.n_pg, L, "hyperbolic", f"n = {cfg.n_h}", None, i,
                          alpha_h, f_star=0.5 * exact_c ** 2, c_floor=exact_c))
    return out


@limit_threads(1)
def rsi_sweep(cfg) -> pd.DataFrame:
    """Figure 3: alpha-hat(R) (minimum and 1% quantile of the sampled ratios) for sphere caps and hyperbolic balls in
    dimension ``rsi_n``, with the Euclidean value 1/(2R)."""
    rows = []
    for geom, cls in (("sphere", Sphere), ("hyperbolic", Lorentz)):
        c = np.zeros(cfg.rsi_n)
        c[0] = 1.0
        for R in cfg.radii:
            ratios = theory.rsi_ratios(GeodesicBall(cls(cfg.rsi_n), c, R), cfg.rsi_samples, cfg.rng(f"rsi_{geom}_{R}"))
            a = float(ratios.min())
            rows.append({"geometry": geom, "R": R, "alpha_hat": a, "q01": float(np.quantile(ratios, 0.01)),
                         "euclidean": 1.0 / (2 * R), "alpha_hat_x_2R": a * 2 * R, "samples": len(ratios)})
    return pd.DataFrame(rows)


@limit_threads(1)
def lmo_validation(cfg, runs: list[Run], hyp: list[Run], n_queries: int = 12) -> pd.DataFrame:
    """Figure 6: for query pairs (x, g) (x in C, half on the boundary; g = grad f(x) of the instance-0 problems for
    half of them, a random tangent vector for the others), the reduced LMO's value <g, Log_x v> against (a) the best
    of ``lmo_points`` random boundary points and (b) the best of ``lmo_points`` boundary points within 0.05 of v
    (random perturbations in all n dimensions, clamped back to the boundary). Values are scaled by |g| R."""
    rng = cfg.rng("lmo")
    rows = []
    m_max = max(r.m for r in runs if r.geometry == "sphere")
    probs = [("sphere", pick(runs, "sphere", m_max).problem, pick(runs, "sphere", m_max).ball),
             ("hyperbolic", pick(hyp, "hyperbolic").problem, pick(hyp, "hyperbolic").ball)]
    for geom, prob, ball in probs:
        M = ball.M
        X = ball.random_points(rng, n_queries, boundary_frac=0.5)
        Gs = [prob.rgrad(X[q]) if q % 2 == 0 else M.random_tangent(X[q], rng) for q in range(n_queries)]
        Z = ball.random_points(rng, cfg.lmo_points, boundary_frac=1.0)
        for q in range(n_queries):
            x, g = X[q], Gs[q]
            scale = float(M.norm(g)) * ball.R
            o = ball.lmo(x, g)
            rand_best = float(_lin_values(M, x, g, Z).min())
            k = max(cfg.lmo_points // 5, 10)
            xi = M.random_tangent(np.broadcast_to(o.v, (k, M.n)), rng)
            xi *= (0.05 * rng.uniform(size=k) / M.norm(xi))[:, None]
            Y = ball.project_to_boundary(M.exp(np.broadcast_to(o.v, xi.shape), xi))
            local_best = float(_lin_values(M, x, g, Y).min())
            rows.append({"geometry": geom, "query": q, "g": "grad f" if q % 2 == 0 else "random",
                         "x_on_boundary": bool(q < n_queries // 2),
                         "lmo": o.value / scale, "random_best": rand_best / scale, "local_best": local_best / scale,
                         "lmo_minus_random": (o.value - rand_best) / scale,
                         "lmo_minus_local": (o.value - local_best) / scale})
    return pd.DataFrame(rows)


def _lin_values(M, x, g, Z):
    """<g, Log_x z> for the rows z of Z, from two matrix products: theta / sin_k(theta) <g, z> with
    cos_k(theta) = kappa <x, z> (valid because <g, x> = 0)."""
    theta = M.dist_from_inner(M.kappa * M.inner(Z, x))
    return M.log_factor(theta) * M.inner(Z, g)


# --------------------------------------------------------------------------------------------------- summaries
def summary(runs: list[Run]) -> pd.DataFrame:
    """One row per (geometry, problem, instance, step rule): the fitted contraction, the final relative gap and the
    theorem's constants."""
    rows = []
    for r in runs:
        for step in STEPS:
            gap = r.gap(step)
            rho, t0, t1, r2 = theory.contraction(gap, TOL)
            rows.append({"geometry": r.geometry, "problem": r.label, "instance": r.instance, "step": step,
                         "rho_hat": rho, "fit_window": f"[{t0}, {t1})", "fit_r2": r2,
                         "final_rel_gap": float(gap[-1] / gap[0]), "bound": r.rate, "bound_0.8": r.rate_safe,
                         "alpha_hat": r.alpha_hat, "c_hat": r.c_hat, "L_hat": r.L, "f_star": r.f_star,
                         "x_hat_on_boundary": r.x_hat_rel})
        pg_gap = r.pg_gap()
        rho, t0, t1, r2 = theory.contraction(pg_gap, TOL)
        rows.append({"geometry": r.geometry, "problem": r.label, "instance": r.instance, "step": "proj. gradient",
                     "rho_hat": rho, "fit_window": f"[{t0}, {t1})", "fit_r2": r2,
                     "final_rel_gap": float(pg_gap[-1] / pg_gap[0]), "bound": float("nan"), "bound_0.8": float("nan"),
                     "alpha_hat": r.alpha_hat, "c_hat": r.c_hat, "L_hat": r.L, "f_star": r.f_star,
                     "x_hat_on_boundary": r.x_hat_rel})
    return pd.DataFrame(rows)


def phases(runs: list[Run], step: str = "short") -> pd.DataFrame:
    """Claim C2: the power-law and geometric fits on the early window EARLY and on the late window (the contraction
    fit's window), for the sphere runs in the theorem's regime (the largest m)."""
    rows = []
    m_max = max(r.m for r in runs if r.geometry == "sphere")
    for r in runs:
        if r.geometry != "sphere" or r.m != m_max:
            continue
        gap = r.gap(step)
        _, t0, t1, _ = theory.contraction(gap, TOL)
        for name, (a, b) in (("early", EARLY), ("late", (max(t0, 1), t1 - 1))):
            fit = theory.phase_fits(gap, a, b)
            rows.append({"instance": r.instance, "window": name, **fit})
    return pd.DataFrame(rows)


def pick(runs: list[Run], geometry: str, m=None, instance: int = 0) -> Run:
    for r in runs:
        if r.geometry == geometry and r.instance == instance and (m is None or r.m == m):
            return r
    raise KeyError((geometry, m, instance))


def feasibility(runs: list[Run]) -> dict:
    """Sanity check S2: the largest d(x_t, x_c) - R over every RFW iterate, and the largest rise of f under exact
    line search (both <= 0 up to rounding when the code is right)."""
    excess = max(float(np.max(r.runs[s]["dist_center"]) - r.radius) for r in runs for s in STEPS)
    rise = max(float(np.max(np.diff(r.runs["exact"]["f"])) / max(r.f0, 1e-300)) for r in runs)
    return {"max_excess": excess, "max_rel_rise_exact": rise}


def claims(runs: list[Run] | None = None, hyp: list[Run] | None = None, sweep: pd.DataFrame | None = None,
           lmo: pd.DataFrame | None = None) -> dict:
    """The measured values of the ledger entries that the given results support (worst case over instances)."""
    out = {}
    if runs is not None:
        tab = summary(runs)
        m_max = max(r.m for r in runs if r.geometry == "sphere")
        m_min = min(r.m for r in runs if r.geometry == "sphere")
        short = tab[(tab.geometry == "sphere") & (tab.problem == f"m = {m_max}") & (tab.step == "short")]
        es = tab[(tab.geometry == "euclidean") & (tab.problem == f"m = {m_max}") & (tab.step == "short")]
        ph = phases(runs)
        early, late = ph[ph.window == "early"], ph[ph.window == "late"]
        interior = [r for r in runs if r.geometry == "sphere" and r.m == m_min]
        out.update({
            "m_max": m_max, "m_min": m_min,
            "C1": float(short.rho_hat.max()),
            "C1b": float(max(r.gap("short")[min(C1_STEPS, r.iters)] / r.gap("short")[0]
                             for r in runs if r.geometry == "sphere" and r.m == m_max)),
            "C2": float((early.r2_power - early.r2_geometric).min()),
            "C2b": [float(early.exponent.min()), float(early.exponent.max())],
            "C2c": float((late.r2_geometric - late.r2_power).min()),
            "C4": float((short.rho_hat - short["bound_0.8"]).max()),
            "C4c": float((es.rho_hat - es["bound_0.8"]).max()),
            "R250_rel": float(max(r.x_hat_rel for r in interior)),
            "R250_fstar": float(max(r.f_star / r.f0 for r in interior)),
        })
    if hyp is not None:
        hs = summary(hyp)
        hs = hs[hs.step == "short"]
        out["C4b"] = float((hs.rho_hat - hs["bound_0.8"]).max())
    if sweep is not None:
        sph = sweep[sweep.geometry == "sphere"].sort_values("R")
        out.update({"C3": float(sph.alpha_hat.min()), "C3b": float(sph.iloc[0].alpha_hat_x_2R),
                    "C3_R": float(sph.iloc[0].R), "C5": float(np.max(np.diff(sph.alpha_hat_x_2R.to_numpy())))})
    if lmo is not None:
        out["S1"] = float(max(lmo.lmo_minus_random.max(), lmo.lmo_minus_local.max()))
    if runs is not None and hyp is not None:
        feas = feasibility(runs + hyp)
        out["S2"] = float(max(feas["max_excess"], feas["max_rel_rise_exact"]))
    return out
