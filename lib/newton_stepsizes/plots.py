"""Figures of the notebook (matplotlib, the suite's style is set by ``config``)."""
from __future__ import annotations

import numpy as np
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from .experiments import GRID, PHASE_TOL, RunSet

FLOOR = 1e-16  # gaps below this are drawn at this level (double-precision noise)
_STYLE = {
    "RN q=3": ("C0", "-"), "RN q=4": ("C9", "-"), "AICN": ("C1", "--"), "GRN": ("C2", "-."),
    "damped Newton": ("0.45", ":"), "GM": ("C3", "-"),
    "UN beta=0.67": ("C0", "-"), "UN beta=1": ("C9", "-"), "SUN a=0.67": ("C1", "--"), "SUN a=1": ("C3", "--"),
    "GRLS": ("C0", "-"), "greedy Newton": ("C1", "--"), "Armijo": ("C2", "-."),
}


def _style(name: str):
    for key, st in _STYLE.items():
        if key in name:
            return st
    return (None, "-")


def plot_gaps(rs: RunSet, labels, ax, names=None, title=None):
    """f(x_k) - f* against k (log scale) for the runs ``labels`` of one RunSet."""
    names = names or labels
    last = 0
    for lab, name in zip(labels, names):
        gap = np.maximum(rs.gap(lab), FLOOR)
        gap = np.where(np.isfinite(gap), gap, np.nan)
        color, ls = _style(name)
        ax.semilogy(np.arange(len(gap)), gap, ls, color=color, lw=1.6, label=name)
        moving = np.flatnonzero(gap > 100 * FLOOR * max(1.0, abs(rs.f_star)))
        last = max(last, int(moving[-1]) + 1 if moving.size else 0)
    ax.set_xlim(-0.5, min(len(gap) - 1, max(10, int(1.15 * last) + 2)) + 0.5)  # stop where every curve has flattened
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration k")
    ax.set_ylabel("f(x_k) - f*")
    ax.set_title(title or f"{rs.problem}\nx0 = {rs.start}", fontsize=9)
    ax.set_ylim(bottom=FLOOR / 3)
    return ax


def plot_steps(rs: RunSet, ax, labels=("GRLS", "greedy Newton"), same_point=True):
    """alpha_k of GRLS and greedy Newton along their own trajectories (paper Figs 2c/3c), until f - f* < 1e-10."""
    for lab in labels:
        a = rs.runs[lab]["alpha"]
        k = np.flatnonzero(rs.gap(lab)[:-1] >= PHASE_TOL)
        color, ls = _style(lab)
        ax.semilogy(k, np.maximum(a[k], 1e-10), ls, marker="o", ms=3, color=color, lw=1.4, label=f"{lab}")
    if same_point and "alpha_grls_same_point" in rs.runs["greedy Newton"]:
        a = rs.runs["greedy Newton"]["alpha_grls_same_point"]
        k = np.flatnonzero(rs.gap("greedy Newton")[:-1] >= PHASE_TOL)
        ax.semilogy(k, np.maximum(a[k], 1e-10), "x", color="C0", ms=5, label="GRLS rule at GN's iterates")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration k")
    ax.set_ylabel("stepsize alpha_k")
    return ax


def fig_no_linesearch(sets):
    fams = ["RN q=3", "RN q=4", "AICN", "GRN", "damped Newton", "GM"]
    fig, axes = plt.subplots(1, len(sets), figsize=(4.6 * len(sets), 3.9), squeeze=False)
    for rs, ax in zip(sets, axes[0]):
        labels = [rs.tuned[f] for f in fams]
        plot_gaps(rs, labels, ax, names=[lab if lab.startswith(f) else f"{f}: {lab}" for f, lab in zip(fams, labels)])
    for ax in axes[0]:
        ax.legend(loc="best", fontsize=6.5, framealpha=0.85)
    fig.suptitle("No linesearch: stepsize schedules with constants tuned on the grid "
                 f"{list(GRID)} (damped Newton: best fixed alpha)", fontsize=10)
    fig.tight_layout()
    return fig


def fig_unknown_constants(logistic_sets, poly_set):
    sets = list(logistic_sets) + [poly_set]
    fig, axes = plt.subplots(1, len(sets), figsize=(4.0 * len(sets), 3.8), squeeze=False)
    for rs, ax in zip(sets, axes[0]):
        labels = ["UN beta=0.67", "UN beta=1", "SUN a=0.67", "SUN a=1", rs.tuned["damped Newton"]]
        plot_gaps(rs, labels, ax, names=labels[:4] + [f"tuned {labels[4]}"])
    axes[0, 0].legend(loc="best", fontsize=6.5, framealpha=0.85)
    fig.suptitle("Unknown constants: universal Newton (UN, c = 2, sigma_0 = 1) vs super-universal Newton (SUN, H_0 = 1)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def fig_linesearch(sets):
    fig, axes = plt.subplots(2, len(sets), figsize=(4.6 * len(sets), 7.0), squeeze=False)
    for j, rs in enumerate(sets):
        labels = ["GRLS", "greedy Newton", "Armijo", rs.tuned["damped Newton"]]
        plot_gaps(rs, labels, axes[0, j], names=labels[:3] + [f"tuned {labels[3]}"])
        plot_steps(rs, axes[1, j])
        axes[1, j].set_title("stepsizes along each method's own trajectory", fontsize=9)
    axes[0, 0].legend(loc="best", fontsize=6.5, framealpha=0.85)
    axes[1, 0].legend(loc="best", fontsize=6.5, framealpha=0.85)
    fig.suptitle("Implicit linesearch: (a) f - f*, (b) stepsizes of GRLS and greedy Newton (paper Figs 2c/3c)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def fig_rosenbrock(res, f_star=0.0):
    fig, axes = plt.subplots(1, len(res), figsize=(5.4 * len(res), 3.9), squeeze=False, sharey=True)
    titles = {"raw": "raw Hessian pseudo-inverse (the paper's code)", "abs": "|H| instead of H (our guard)"}
    for ax, (curv, methods) in zip(axes[0], res.items()):
        for m, F in methods.items():
            L = np.log10(np.maximum(F - f_star, FLOOR))
            mu, sd = L.mean(axis=0), L.std(axis=0)
            k = np.arange(L.shape[1])
            color, ls = _style(m)
            ax.plot(k, mu, ls, color=color, lw=1.6, label=m)
            ax.fill_between(k, mu - sd, mu + sd, color=color, alpha=0.15)
        ax.set_title(f"Rosenbrock d=40, {titles.get(curv, curv)}", fontsize=9)
        ax.set_xlabel("iteration k")
    axes[0, 0].set_ylabel("log10(f - f*): mean ± sd over starts")
    axes[0, 0].legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    return fig


def fig_duality(df, curves):
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.0))
    ax = axes[0]
    for i, (beta, g) in enumerate(df.groupby("beta")):
        ax.loglog(g["alpha_root"], g["alpha_model"], "o", color=f"C{i}", ms=6, mfc="none",
                  label=f"numerical model minimiser, beta={beta:g}")
        ax.loglog(g["alpha_root"], g["alpha_RN"], "x", color=f"C{i}", ms=5, label=f"RN closed form, beta={beta:g}")
    lo = min(df["alpha_root"].min(), df["alpha_RN"].min()) * 0.7
    ax.plot([lo, 1], [lo, 1], "k-", lw=0.8, label="y = x")
    ax.set_xlabel("alpha from the root of P[alpha] = 0")
    ax.set_ylabel("alpha of the other construction")
    ax.set_title("(a) the model minimiser lies on the Newton ray at the root", fontsize=9)
    ax.legend(fontsize=6.5)
    ax = axes[1]
    for i, (beta, g) in enumerate(curves.groupby("beta")):
        ax.loglog(g["s"], g["alpha_root"], "-", color=f"C{i}", label=f"exact root, beta={beta:g}")
        ax.loglog(g["s"], g["alpha_RN"], "--", color=f"C{i}", label=f"RN: 1/(1+s^(1/(1+beta))), beta={beta:g}")
    ax.set_xlabel("s = sigma g^beta")
    ax.set_ylabel("stepsize alpha")
    ax.set_title("(b) RN is a slightly conservative closed form of the root", fontsize=9)
    ax.legend(fontsize=6.5)
    fig.tight_layout()
    return fig


def fig_envelope(curves, summary, k0=5, factor=10.0):
    probs = list(dict.fromkeys(summary["problem"]))
    fig, axes = plt.subplots(1, len(probs), figsize=(5.2 * len(probs), 3.9), squeeze=False)
    for ax, prob in zip(axes[0], probs):
        sub = curves[curves["problem"] == prob]
        for i, (q, g) in enumerate(sub.groupby("q")):
            M = g["M"].iloc[0]
            ax.semilogy(g["k"], g["E/E_k0"], "-o", ms=3, color=f"C{i}", label=f"q={q:g} (M={M:g})")
        ax.axhline(factor, color="k", ls=":", lw=1, label=f"{factor:g} x value at k={k0}")
        ax.axvline(k0, color="0.6", lw=0.8)
        ax.set_xlabel("iteration k")
        ax.set_ylabel(f"(f_k - f*) k^(q-1) / value at k={k0}")
        ax.set_title(prob, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("Envelope check of Theorem 4 (a worst-case bound: it may only stay flat or fall, no slope is fitted)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def fig_backtracking(tables: dict):
    fig, axes = plt.subplots(1, len(tables), figsize=(5.0 * len(tables), 3.8), squeeze=False)
    for ax, (name, df) in zip(axes[0], tables.items()):
        for i, (beta, g) in enumerate(df.groupby("beta")):
            ax.plot(g["k"], g["N_k"], "-", color=f"C{i}", lw=1.8, label=f"N_k, UN beta={beta:.2g}")
            ax.plot(g["k"], g["bound"], ":", color=f"C{i}", lw=1.2, label="2k + log_c(max sigma / sigma_0)")
        k = df["k"].unique()
        ax.plot(k, 2 * k, "k-", lw=0.6, label="2k")
        ax.set_xlabel("iteration k")
        ax.set_ylabel("gradient evaluations in the backtracking")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=6.5)
    fig.suptitle("Universal Newton: cumulative backtracking trials against Lemma 3's 2k + const", fontsize=10)
    fig.tight_layout()
    return fig
