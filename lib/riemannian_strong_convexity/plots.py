"""Figures of the notebook (matplotlib; the suite's style is set by ``config``). Each function returns a Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from lib.common.figures import pow10_log_axis

from . import theory
from .experiments import EARLY, TOL, Run, pick
from .rfw import STEPS

FLOOR = 1e-16
_STEP_STYLE = {"short": ("C0", "-", "RFW, short step"), "open": ("C1", "--", "RFW, 2/(t+2)"),
               "exact": ("C2", "-.", "RFW, exact line search"), "pg": ("0.45", ":", "projected gradient")}


def _log_y(ax, numticks=6):
    ax.set_yscale("log")
    pow10_log_axis(ax.yaxis, numticks)


def _curves(ax, r: Run, rate_line=True):
    t = np.arange(r.iters + 1)
    for step in STEPS:
        color, ls, label = _STEP_STYLE[step]
        ax.plot(t, np.maximum(r.gap(step), FLOOR), ls, color=color, lw=1.6, label=label)
    color, ls, label = _STEP_STYLE["pg"]
    ax.plot(t, np.maximum(r.pg_gap(), FLOOR), ls, color=color, lw=1.6, label=label + " (reference)")
    rho, t0, t1, _ = theory.contraction(r.gap("short"), TOL)
    if rate_line and np.isfinite(rho):
        g0 = max(r.gap("short")[t0], FLOOR)
        tt = np.arange(t0, r.iters + 1)
        ax.plot(tt, g0 * r.rate_safe ** (tt - t0), color="C3", lw=1.2, ls=(0, (4, 2)),
                label=f"Thm 5.1 factor {r.rate_safe:.4f} (0.8 α̂)")
    _log_y(ax)
    ax.set_xlabel("iteration t")
    ax.set_ylabel("f(x_t) − f*")
    return rho


def fig_convergence(runs, geometry: str = "sphere", instance: int = 0, title: str | None = None):
    """Figures 1 and 4: f(x_t) - f* against t for the two values of m (one panel each)."""
    ms = sorted({r.m for r in runs if r.geometry == geometry})
    fig, axes = plt.subplots(1, len(ms), figsize=(5.2 * len(ms), 4.0), squeeze=False)
    for ax, m in zip(axes[0], ms):
        r = pick(runs, geometry, m, instance)
        rho = _curves(ax, r)
        regime = ("optimum on the boundary (Thm 5.1)" if r.x_hat_rel > 0.999
                  else f"interior optimum, d(x̂*, x_c)/R = {r.x_hat_rel:.2f}")
        ax.set_title(f"{r.label}: {regime}\nshort step: fitted ρ̂ = {rho:.3f}", fontsize=9.5)
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title or f"RFW on a {geometry} ball: f − f* per iteration", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def fig_phases(runs, instance: int = 0):
    """Figure 2: the theorem-regime sphere run (largest m): (a) f - f* in log-log with the early power-law fit and
    the late geometric fit, (b) the FW gap, (c) d(x_t, v_t) and d(x_t, x_c)/R."""
    m = max(r.m for r in runs if r.geometry == "sphere")
    r = pick(runs, "sphere", m, instance)
    fig, axes = plt.subplots(1, 3, figsize=(14.5, 4.0))
    t = np.arange(r.iters + 1)
    gap = np.maximum(r.gap("short"), FLOOR)
    _, t0, t1, _ = theory.contraction(r.gap("short"), TOL)
    early = theory.phase_fits(r.gap("short"), *EARLY)
    late = theory.phase_fits(r.gap("short"), max(t0, 1), t1 - 1)
    ax = axes[0]
    ax.loglog(t[1:], gap[1:], color="C0", lw=1.6, label="RFW, short step")
    te = np.arange(EARLY[0], EARLY[1] + 1)
    c_pow = np.log(gap[te]).mean() - early["exponent"] * np.log(te).mean()
    ax.loglog(te, np.exp(c_pow) * te ** early["exponent"], color="C3", lw=2.2, alpha=0.8,
              label=f"power law on {list(EARLY)}: t^{early['exponent']:.2f} (R² {early['r2_power']:.3f}; "
                    f"geometric R² {early['r2_geometric']:.3f})")
    tl = np.arange(max(t0, 1), t1)
    c_lin = np.log(gap[tl]).mean() - np.log(late["factor"]) * tl.mean()
    ax.loglog(tl, np.exp(c_lin) * late["factor"] ** tl, color="C4", lw=2.2, alpha=0.8,
              label=f"geometric on [{max(t0, 1)}, {t1}): {late['factor']:.3f}^t (R² {late['r2_geometric']:.3f}; "
                    f"power R² {late['r2_power']:.3f})")
    pow10_log_axis(ax.yaxis, locate=False)
    ax.set_xlabel("iteration t (log)")
    ax.set_ylabel("f(x_t) − f*")
    ax.set_title("(a) two phases? fits on the early and late windows", fontsize=9.5)
    ax.legend(fontsize=7, loc="lower left")
    for ax, key, ylabel, title in ((axes[1], "gap", "FW gap −⟨grad f(x_t), Log(v_t)⟩", "(b) FW gap"),
                                   (axes[2], "dist_xv", "d(x_t, v_t)", "(c) d(x_t, v_t) and d(x_t, x_c)/R")):
        for step in ("short", "exact"):
            color, ls, label = _STEP_STYLE[step]
            ax.plot(np.arange(r.iters), np.maximum(r.runs[step][key], FLOOR), ls, color=color, lw=1.3, label=label)
        ax.axvspan(t0, t1, color="C4", alpha=0.08, lw=0, label="late (local-linear) fit window")
        ax.axvspan(*EARLY, color="C3", alpha=0.12, lw=0, label="early window")
        ax.set_xlabel("iteration t")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9.5)
        if key == "gap":
            _log_y(ax)
        else:
            ax.plot(t, r.runs["short"]["dist_center"] / r.radius, color="0.3", lw=1.0, ls=":",
                    label="d(x_t, x_c)/R (short step)")
    axes[2].legend(fontsize=7.5, loc="upper right")
    fig.suptitle(f"Sphere, {r.label} (optimum on the boundary): burn-in, then local linear convergence (Thm 5.2)",
                 fontsize=11)
    fig.tight_layout()
    return fig


def fig_rsi(sweep):
    """Figure 3: alpha-hat(R) against R for sphere caps and hyperbolic balls, with the Euclidean value 1/(2R)."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.9))
    R = np.sort(sweep.R.unique())
    grid = np.linspace(R.min() * 0.9, R.max() * 1.05, 100)
    axes[0].plot(grid, 1 / (2 * grid), color="0.3", lw=1.2, ls="--", label="Euclidean ball: 1/(2R)")
    for geom, color, marker in (("sphere", "C0", "o"), ("hyperbolic", "C2", "s")):
        d = sweep[sweep.geometry == geom].sort_values("R")
        axes[0].plot(d.R, d.alpha_hat, marker=marker, color=color, lw=1.5, label=f"{geom}: α̂(R) (sampled minimum)")
        axes[1].plot(d.R, d.alpha_hat_x_2R, marker=marker, color=color, lw=1.5, label=geom)
    axes[1].axhline(1.0, color="0.3", lw=1.2, ls="--", label="Euclidean: 1")
    axes[1].axhspan(0.95, 1.05, color="0.5", alpha=0.12, lw=0, label="±5% (claim C3 at R = 0.3)")
    axes[0].set_ylabel("RSI constant α̂")
    axes[1].set_ylabel("α̂(R) · 2R")
    axes[0].set_title("(a) α̂(R) of geodesic balls", fontsize=9.5)
    axes[1].set_title("(b) ratio to the Euclidean constant", fontsize=9.5)
    for ax in axes:
        ax.set_xlabel("radius R")
        ax.legend(fontsize=8)
    n_s = int(sweep.samples.min())
    fig.suptitle(f"Riemannian scaling inequality of geodesic balls (≥ {n_s} sampled (x, w) per R)", fontsize=11)
    fig.tight_layout()
    return fig


def fig_hyperbolic(hyp, instance: int = 0):
    """Figure 5: RFW on the hyperboloid."""
    r = pick(hyp, "hyperbolic", None, instance)
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    rho = _curves(ax, r)
    ax.set_title(f"Hyperbolic space H^{r.problem.M.n - 1}, f = ½ d²(x, x*), ball of radius {r.radius:.2f}\n"
                 f"short step: fitted ρ̂ = {rho:.3f}", fontsize=9.5)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def fig_lmo(lmo):
    """Figure 6: the reduced LMO's value against the best random boundary point and the best nearby boundary point."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.9), sharey=False)
    for ax, geom in zip(axes, ("sphere", "hyperbolic")):
        d = lmo[lmo.geometry == geom]
        q = np.arange(len(d))
        ax.plot(q, d.random_best, "o", color="0.55", ms=5, label="best of random boundary points")
        ax.plot(q, d.local_best, "s", mfc="none", color="C1", ms=8, label="best of perturbations of v (all n dims)")
        ax.plot(q, d.lmo, "x", color="C0", ms=7, mew=2, label="reduced LMO (3-D span + 1-D search)")
        worst = float(max(d.lmo_minus_random.max(), d.lmo_minus_local.max()))
        ax.set_title(f"{geom}: LMO minus best competitor ≤ {worst:.1e}", fontsize=9.5)
        ax.set_xlabel("query (x, g)")
        ax.set_ylabel("⟨g, Log_x z⟩ / (|g| R)  (lower is better)")
    axes[0].legend(fontsize=8)
    fig.suptitle("The linear minimisation oracle over a geodesic ball is never beaten\n(queries: even g = grad f, odd g "
                 "random; the first half with x on the boundary)", fontsize=10.5)
    fig.tight_layout()
    return fig
