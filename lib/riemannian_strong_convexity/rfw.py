"""Riemannian Frank-Wolfe (the paper's Algorithm 1) and the Riemannian projected-gradient reference.

RFW, for t = 0, 1, ...::

    v_t   = argmin_{v in C} <grad f(x_t), Log_{x_t}(v)>          (the LMO of :mod:`.sets`)
    d_t   = Log_{x_t}(v_t),   gap_t = -<grad f(x_t), d_t> >= 0     (the FW gap)
    eta_t = min{1, gap_t / (L |d_t|^2)}  ("short"),  2/(t+2)  ("open"),  or argmin_{[0,1]} f(Exp_{x_t}(eta d_t))  ("exact")
    x_{t+1} = Exp_{x_t}(eta_t d_t)

The iterates stay in C because C is geodesically convex and eta_t is in [0, 1]. Exact line search minimises the
scalar function ``problem.along(x, d)`` with ``scipy.optimize.minimize_scalar`` on [0, 1] and keeps the best of
that, eta = 0 and eta = 1, so f never rises.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

STEPS = ("short", "open", "exact")


def rfw(problem, ball, x0, iters: int, step: str = "short", L: float | None = None, ngrid: int = 2048) -> dict:
    """Run ``iters`` RFW steps from ``x0``. Returns arrays over t = 0..iters of f, the FW gap (t < iters), |d_t| =
    d(x_t, v_t), eta_t, |grad f(x_t)| and d(x_t, x_c), plus the last iterate ``x`` and the LMO call count."""
    if step not in STEPS:
        raise ValueError(f"step got {step!r}; allowed: {STEPS}")
    if step == "short" and not (L is not None and L > 0):
        raise ValueError("the short step needs the smoothness constant L > 0")
    M = problem.M
    x = np.array(x0, dtype=float)
    f_hist, gap, dxv, eta_hist, gnorm, dc = [], [], [], [], [], []
    for t in range(iters + 1):
        fx, g = problem.f_and_rgrad(x)
        f_hist.append(fx)
        gnorm.append(float(M.norm(g)))
        dc.append(float(ball.dist_to_center(x)))
        if t == iters:
            break
        o = ball.lmo(x, g, ngrid=ngrid)
        d = o.d
        gp = max(-float(M.inner(g, d)), 0.0)
        nd2 = float(M.inner(d, d))
        gap.append(gp)
        dxv.append(np.sqrt(nd2))
        if step == "short":
            eta = min(1.0, gp / (L * nd2)) if nd2 > 0 else 0.0
        elif step == "open":
            eta = 2.0 / (t + 2.0)
        else:
            eta = exact_step(problem.along(x, d))
        eta_hist.append(eta)
        x = M.exp(x, eta * d)
    return {"f": np.array(f_hist), "gap": np.array(gap), "dist_xv": np.array(dxv), "eta": np.array(eta_hist),
            "grad_norm": np.array(gnorm), "dist_center": np.array(dc), "x": x, "lmo_calls": iters}


def exact_step(line) -> float:
    """argmin_{eta in [0, 1]} line(eta): bounded Brent, then the best of it and both end points."""
    res = minimize_scalar(line, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-10})
    cands = [(line(0.0), 0.0), (line(1.0), 1.0), (float(res.fun), float(res.x))]
    return min(cands)[1]


def projected_gradient(problem, ball, x0, iters: int, L: float) -> dict:
    """Riemannian projected gradient x_{k+1} = Proj_C(Exp_{x_k}(-grad f(x_k) / L)) (Proj: the geodesic clamp toward
    the centre). Returns f over k = 0..iters, |grad f| and the last iterate."""
    M = problem.M
    x = np.array(x0, dtype=float)
    f_hist, gnorm = [], []
    for k in range(iters + 1):
        fx, g = problem.f_and_rgrad(x)
        f_hist.append(fx)
        gnorm.append(float(M.norm(g)))
        if k == iters:
            break
        x = ball.project(M.exp(x, -g / L))
    return {"f": np.array(f_hist), "grad_norm": np.array(gnorm), "x": x}
