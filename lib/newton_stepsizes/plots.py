"""Figures of the notebook (matplotlib; the suite's style is set by ``config``).

Every multi-panel figure has one legend, below its panels, so that no legend covers a curve; labels use mathtext.
"""
from __future__ import annotations

import numpy as np
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from lib.common.figures import pow10_log_axis

from .experiments import PHASE_TOL, RunSet

FLOOR = 1e-16  # gaps below this are drawn at this level (double-precision noise)
GAP_LABEL = r"$f(x_k) - f^\star$"
_STYLE = {
    "RN q=3": ("C0", "-"), "RN q=4": ("C9", "-"), "AICN": ("C1", "--"), "GRN": ("C2", "-."),
    "damped Newton": ("0.45", ":"), "GM": ("C3", "-"),
    "UN beta=0.67": ("C0", "-"), "UN beta=1": ("C9", "-"), "SUN a=0.67": ("C1", "--"), "SUN a=1": ("C3", "--"),
    "GRLS": ("C0", "-"), "greedy Newton": ("C1", "--"), "Armijo": ("C2", "-."),
}
# legend and title text uses Unicode (β, ₀, ·) rather than mathtext: matplotlib caches only 50 parsed mathtext
# strings, and every figure is drawn at three resolutions (inline, PNG, SVG), so mathtext is kept to axis labels
_NAMES = {
    "RN q=3": "RN, q = 3", "RN q=4": "RN, q = 4", "UN beta=0.67": "UN, β = 2/3", "UN beta=1": "UN, β = 1",
    "SUN a=0.67": "SUN, a = 2/3", "SUN a=1": "SUN, a = 1", "damped Newton": "damped Newton (best fixed α)",
}


def _start(s: str) -> str:
    return f"x₀ = {s}"


def _style(name: str):
    for key, st in _STYLE.items():
        if key in name:
            return st
    return (None, "-")


def _log_y(ax):
    ax.set_yscale("log")
    pow10_log_axis(ax.yaxis)


def _figure_legend(fig, handles, labels, ncol=None):
    """One legend for the whole figure, centred below the panels."""
    fig.legend(handles, labels, loc="lower center", ncol=ncol or min(len(labels), 4), frameon=False,
               bbox_to_anchor=(0.5, 0.0))


def plot_gaps(rs: RunSet, labels, ax, families=None, title=None, symlog=False):
    """f(x_k) - f* against k (log scale) for the runs ``labels`` of one RunSet; ``families`` name the curves'
    styles (default: the labels). Returns the line handles."""
    families = families or labels
    lines, last = [], 0
    for lab, fam in zip(labels, families):
        gap = np.maximum(rs.gap(lab), FLOOR)
        gap = np.where(np.isfinite(gap), gap, np.nan)
        color, ls = _style(fam)
        (ln,) = ax.plot(np.arange(len(gap)), gap, ls, color=color, lw=1.6)
        lines.append(ln)
        last = max(last, len(gap) - 1)
    _log_y(ax)
    if symlog:  # the gradient method needs 10x more iterations: linear up to 10, logarithmic beyond
        ax.set_xscale("symlog", linthresh=10, linscale=1.0)
        ax.set_xlim(0, max(last, 10) * 1.1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xlim(-0.5, max(last, 10) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration $k$")
    ax.set_ylabel(GAP_LABEL)
    ax.set_title(title or f"{rs.problem}, {_start(rs.start)}", fontsize=9)
    ax.set_ylim(bottom=FLOOR / 3)
    return lines


def plot_steps(rs: RunSet, ax):
    """alpha_k of GRLS along its trajectory, the greedy-Newton rule at the same iterates (the claim), and greedy
    Newton along its own trajectory (the paper's overlay, Figs 2c/3c), until f - f* < 1e-10."""
    g = rs.runs["GRLS"]
    k = np.flatnonzero(rs.gap("GRLS")[:-1] >= PHASE_TOL)
    ax.plot(k, np.maximum(g["alpha"][k], 1e-10), "-o", ms=3.5, color="C0", lw=1.4)
    ax.plot(k, np.maximum(g["alpha_gn_same_point"][k], 1e-10), "x", ms=6, mew=1.4, color="C1")
    kg = np.flatnonzero(rs.gap("greedy Newton")[:-1] >= PHASE_TOL)
    ax.plot(kg, np.maximum(rs.runs["greedy Newton"]["alpha"][kg], 1e-10), "--", color="C1", lw=1.1, alpha=0.8)
    _log_y(ax)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration $k$")
    ax.set_ylabel(r"stepsize $\alpha_k$")
    return ax


_STEP_LEGEND = ([Line2D([], [], color="C0", marker="o", ms=3.5, lw=1.4),
                 Line2D([], [], color="C1", marker="x", ms=6, mew=1.4, ls="none"),
                 Line2D([], [], color="C1", ls="--", lw=1.1)],
                ["GRLS αₖ along its trajectory", "greedy-Newton rule at the same iterates",
                 "greedy Newton along its own trajectory"])


def fig_no_linesearch(sets, families=("RN q=3", "RN q=4", "AICN", "GRN", "damped Newton", "GM")):
    """Figure 1: the tuned run of each family on each problem; returns (fig, axes)."""
    n = len(sets)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.6), squeeze=False)
    for rs, ax in zip(sets, axes[0]):
        labels = [rs.tuned[f] for f in families]
        lines = plot_gaps(rs, labels, ax, families=list(families), symlog=True)
        ax.set_title(f"{rs.problem}", fontsize=8.5)
    _figure_legend(fig, lines, [_NAMES.get(f, f) for f in families], ncol=6)
    fig.suptitle("No linesearch: each method's constant tuned on the same grid (x₀ = 3·1; polytope x₀ = 1)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig, axes[0]


def fig_unknown_constants(logistic_sets, poly_set):
    sets = list(logistic_sets) + [poly_set]
    fig, axes = plt.subplots(1, len(sets), figsize=(3.3 * len(sets), 3.5), squeeze=False)
    fams = list(UN_SUN_LABELS) + ["damped Newton"]
    for rs, ax in zip(sets, axes[0]):
        labels = list(UN_SUN_LABELS) + [rs.tuned["damped Newton"]]
        lines = plot_gaps(rs, labels, ax, families=fams)
        ax.set_title(rs.problem.split(" (")[0] + f", {_start(rs.start)}", fontsize=8.5)
    _figure_legend(fig, lines, [_NAMES.get(f, f) for f in fams], ncol=5)
    fig.suptitle("Unknown constants: universal Newton (UN, c = 2, σ₀ = 1) vs super-universal Newton (SUN, H₀ = 1)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


UN_SUN_LABELS = ("UN beta=0.67", "UN beta=1", "SUN a=0.67", "SUN a=1")


def fig_linesearch(sets):
    fig, axes = plt.subplots(2, len(sets), figsize=(4.2 * len(sets), 6.4), squeeze=False)
    fams = ["GRLS", "greedy Newton", "Armijo", "damped Newton"]
    for j, rs in enumerate(sets):
        labels = fams[:3] + [rs.tuned["damped Newton"]]
        lines = plot_gaps(rs, labels, axes[0, j], families=fams)
        axes[0, j].set_title(f"(a) {rs.problem}", fontsize=8.5)
        plot_steps(rs, axes[1, j])
        axes[1, j].set_title("(b) stepsizes", fontsize=8.5)
    fig.legend(lines + _STEP_LEGEND[0], [_NAMES.get(f, f) for f in fams] + _STEP_LEGEND[1], loc="lower center",
               ncol=4, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Implicit linesearch: (a) f(xₖ) − f⋆, (b) stepsizes of GRLS and greedy Newton (paper Figs 2c/3c)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def fig_rosenbrock(res, f_star=0.0):
    fig, axes = plt.subplots(1, len(res), figsize=(5.0 * len(res), 3.7), squeeze=False, sharey=True)
    titles = {"raw": "raw Hessian pseudo-inverse (the paper's code)", "abs": "|H| instead of H (our guard)"}
    for ax, (curv, methods) in zip(axes[0], res.items()):
        lines = []
        for m, F in methods.items():
            L = np.log10(np.maximum(F - f_star, FLOOR))
            mu, sd = L.mean(axis=0), L.std(axis=0)
            k = np.arange(L.shape[1])
            color, ls = _style(m)
            (ln,) = ax.plot(k, mu, ls, color=color, lw=1.6)
            ax.fill_between(k, mu - sd, mu + sd, color=color, alpha=0.15, lw=0)
            lines.append(ln)
        ax.set_title(f"Rosenbrock d = 40, {titles.get(curv, curv)}", fontsize=9)
        ax.set_xlabel("iteration $k$")
    axes[0, 0].set_ylabel(r"$\log_{10}(f(x_k) - f^\star)$, mean $\pm$ sd over starts")
    _figure_legend(fig, lines, list(methods))
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def fig_duality(df, curves):
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2))
    ax = axes[0]
    for i, (beta, g) in enumerate(df.groupby("beta")):
        ax.loglog(g["alpha_root"], g["alpha_model"], "o", color=f"C{i}", ms=6, mfc="none")
        ax.loglog(g["alpha_root"], g["alpha_RN"], "x", color=f"C{i}", ms=5)
    lo = min(df["alpha_root"].min(), df["alpha_RN"].min()) * 0.7
    ax.plot([lo, 1], [lo, 1], "k-", lw=0.8)
    for axis in (ax.xaxis, ax.yaxis):
        pow10_log_axis(axis)
    ax.set_xlabel(r"$\alpha$ from the root of $P[\alpha] = 0$")
    ax.set_ylabel(r"$\alpha$ of the other construction")
    ax.set_title("(a) the model's minimiser lies on the Newton ray at the root", fontsize=9)
    ax = axes[1]
    for i, (beta, g) in enumerate(curves.groupby("beta")):
        ax.loglog(g["s"], g["alpha_root"], "-", color=f"C{i}")
        ax.loglog(g["s"], g["alpha_RN"], "--", color=f"C{i}")
    for axis in (ax.xaxis, ax.yaxis):
        pow10_log_axis(axis)
    ax.set_xlabel(r"$s = \sigma g^\beta$")
    ax.set_ylabel(r"stepsize $\alpha$")
    ax.set_title("(b) RN is a slightly conservative closed form of the root", fontsize=9)
    betas = sorted(df["beta"].unique())
    handles = [Line2D([], [], color=f"C{i}", lw=6, alpha=0.6) for i in range(len(betas))] + [
        Line2D([], [], color="k", marker="o", mfc="none", ls="none"), Line2D([], [], color="k", marker="x", ls="none"),
        Line2D([], [], color="k", ls="-"), Line2D([], [], color="k", ls="--")]
    labels = [f"β = {b:g}" for b in betas] + [
        "(a) numerical minimiser of the model", "(a) RN closed form", "(b) exact root; (a) y = x",
        "(b) RN: 1/(1 + s^(1/(1+β)))"]
    _figure_legend(fig, handles, labels, ncol=4)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def fig_envelope(curves, summary, k0=5):
    probs = list(dict.fromkeys(summary["problem"]))
    fig, axes = plt.subplots(1, len(probs), figsize=(4.8 * len(probs), 3.7), squeeze=False)
    for ax, prob in zip(axes[0], probs):
        sub = curves[curves["problem"] == prob]
        tuned = []
        for i, (q, g) in enumerate(sub.groupby("q")):
            ax.plot(g["k"], g["E"], "-o", ms=3, color=f"C{i}")
            tuned.append(f"M = {g['M'].iloc[0]:g} for q = {q:g}")
        ax.axvline(k0, color="0.6", lw=0.8)
        _log_y(ax)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("iteration $k$")
        ax.set_ylabel(r"$(f(x_k) - f^\star)\, k^{q-1}$")
        ax.set_title(f"{prob}\ntuned {', '.join(tuned)}", fontsize=9)
    qs = sorted(set(curves["q"]))
    handles = [Line2D([], [], color=f"C{i}", marker="o", ms=3) for i in range(len(qs))]
    _figure_legend(fig, handles, [f"RN, q = {q:g}" for q in qs], ncol=len(qs))
    fig.suptitle("Theorem 4's envelope along root Newton (an illustration: a worst-case bound, no slope is fitted)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def fig_backtracking(tables: dict):
    fig, axes = plt.subplots(1, len(tables), figsize=(4.8 * len(tables), 3.7), squeeze=False)
    for ax, (name, df) in zip(axes[0], tables.items()):
        for i, (beta, g) in enumerate(df.groupby("beta")):
            ax.plot(g["k"], g["N_k"], "-", color=f"C{i}", lw=1.8)
            ax.plot(g["k"], g["bound"], ":", color=f"C{i}", lw=1.2)
        k = np.arange(df["k"].max() + 1)
        ax.plot(k, 2 * k, "k-", lw=0.6)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("iteration $k$")
        ax.set_ylabel("trial points $N_k$ (gradient evaluations)")
        ax.set_title(name, fontsize=8.5)
    betas = sorted(next(iter(tables.values()))["beta"].unique())
    handles = [Line2D([], [], color=f"C{i}", lw=1.8) for i in range(len(betas))] + [
        Line2D([], [], color="k", ls=":"), Line2D([], [], color="k", lw=0.6)]
    labels = [f"N_k, UN β = {b:.2g}" for b in betas] + ["2k + log_c(max σ_j / σ₀)", "2k"]
    _figure_legend(fig, handles, labels)
    fig.suptitle("Universal Newton: cumulative backtracking trials against Lemma 3's 2k + const", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def show(fig, png_path):
    """Show a saved figure inline from its PNG and close it: the notebook then draws each figure once per file
    format instead of once more for the inline display (about a quarter of a figure cell's time)."""
    from IPython.display import Image, display

    from PIL import Image as PILImage

    plt.close(fig)
    with PILImage.open(png_path) as im:
        width = im.size[0] // 2  # saved at 200 dpi, shown at the notebook's 100 dpi (sharp on high-dpi screens)
    display(Image(filename=str(png_path), width=width))
