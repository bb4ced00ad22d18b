"""Figures of the HRT notebook (matplotlib, the suite's style). Each ``plot_*`` function returns the figure.

One legend per figure (shared by its panels, placed where it covers no data), mathtext labels, and
:func:`show_saved` to display the PNG that ``save_figure`` wrote instead of rendering the figure a third time.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .data import LABELS, hinge_coefficients

METHOD_COLORS = {"HRT": "C0", "HRT, one-SE depth": "C9", "CART": "C1", "LinearTree-lite": "C2", "Ridge": "C7",
                 "HGB": "C4", "HRT (s=0.1)": "C2", "HRT (auto)": "C0"}
STEP_COLORS = {"0.1": "C2", "0.5": "C1", "1.0": "C7", "auto": "C0", "auto, α=0": "C9"}
STOP_COLORS = {"partition unchanged": "C2", "step < tol": "C0", "stationary": "C9",
               "no descent: ridge": "C8", "no descent: kinks": "C5", "step empties a side": "C1",
               "singular": "C7", "iteration cap": "C3"}


def show_saved(fig, path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote (one render fewer than inline display)."""
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(path), width=int(round(fig.get_figwidth() * 100))))


def _log_axis(ax, which: str = "x", base: int = 10, subs=(1.0,)) -> None:
    """Log scale with plain-number tick labels (mathtext tick labels cost most of a figure's drawing time);
    ``subs=(1, 2, 5)`` labels 1-2-5 steps for an axis that spans about one decade."""
    if which == "x":
        ax.set_xscale("log", base=base)
        axis = ax.xaxis
    else:
        ax.set_yscale("log", base=base)
        axis = ax.yaxis
    axis.set_major_locator(LogLocator(base=base, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _step_label(s) -> str:
    s = str(s)
    if s == "auto":
        return "backtracking (auto)"
    if s.startswith("auto"):
        return "backtracking, " + s.split(", ", 1)[1].replace("α", r"$\alpha$")
    return f"fixed $s = {s}$"


def plot_root_traces(rt):
    """Figure 1: root-node objective against iteration, one panel per envelope, one curve per step rule."""
    envs = ("min", "max")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9))
    for ax, env in zip(axes, envs):
        for (e, s), tr in rt.traces.items():
            if e != env:
                continue
            auto = s == "auto"
            ax.plot(np.arange(len(tr)), tr, marker="o" if auto else None, ms=3, color=STEP_COLORS[str(s)],
                    lw=1.8 if auto else 1.2, zorder=3 if auto else 2, label=_step_label(s))
        ax.set_xlabel("Gauss-Newton iteration $k$")
        ax.set_title(f"{env}-envelope $\\hat y = \\{env}(\\theta_1^\\top\\tilde x, \\theta_2^\\top\\tilde x)$")
    axes[0].set_ylabel(r"node objective $\sqrt{J(\theta_1^{(k)}, \theta_2^{(k)})}$")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, -0.07))
    fig.suptitle(f"Root node of {rt.label} ($n$ = {rt.n}): fixed damping against "
                 "backtracking line search", y=1.0, fontsize=11.5)
    fig.tight_layout()
    return fig


def plot_iterations(study):
    """Figure 2: Gauss-Newton iterations per split node (kept envelope) and why each envelope solve stopped."""
    from .experiments import STOP_LABELS

    it = study.solves
    settings = list(dict.fromkeys(it.setting))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.0), gridspec_kw={"width_ratios": [1.3, 1]})
    bins = np.unique(np.round(np.logspace(0, np.log10(101), 18)).astype(int))
    handles = []
    for s in settings:
        v = it[(it.setting == s) & it.chosen].n_iter
        ax1.hist(v, bins=bins, histtype="step", lw=1.8, color=STEP_COLORS.get(s, "k"))
        ax1.axvline(v.median(), color=STEP_COLORS.get(s, "k"), ls=":", lw=1)
        handles.append(Line2D([], [], color=STEP_COLORS.get(s, "k"), lw=1.8,
                              label=f"{_step_label(s)}: median {v.median():.0f}"))
    _log_axis(ax1, "x")
    ax1.set_xlabel("iterations at a split node (kept envelope; cap 100)")
    ax1.set_ylabel("split nodes")
    ax1.set_title("Gauss-Newton iterations per node (dotted: median)")
    reasons = [r for r in STOP_LABELS.values() if r in set(it.stop_detail.map(STOP_LABELS))]
    counts = it.assign(reason=it.stop_detail.map(STOP_LABELS)).groupby(["setting", "reason"]).size()
    frac = counts.unstack(fill_value=0).reindex(index=settings, columns=reasons, fill_value=0)
    frac = frac.div(frac.sum(axis=1), axis=0)
    left = np.zeros(len(settings))
    ylabels = [_step_label(s) for s in settings]
    for reason in reasons:
        ax2.barh(ylabels, frac[reason], left=left, color=STOP_COLORS[reason])
        left += frac[reason].to_numpy()
        handles.append(Patch(color=STOP_COLORS[reason], label=f"stop: {reason}"))
    ax2.invert_yaxis()
    ax2.set_xlim(0, 1)
    ax2.set_xlabel("share of envelope solves")
    ax2.set_title("Why each solve stopped")
    fig.legend(handles=handles, loc="upper center", ncol=4, frameon=False, bbox_to_anchor=(0.5, 0.02),
               fontsize=8)
    fig.tight_layout()
    return fig


def plot_benchmark(table: pd.DataFrame, cap: float = 2.0):
    """Figure 3: test RMSE relative to the best tuned single tree, per data set and method (K = leaves)."""
    from .experiments import SINGLE_TREES

    sets = list(dict.fromkeys(table.dataset))
    methods = list(dict.fromkeys(table.method))
    fig, ax = plt.subplots(figsize=(max(6.5, 2.0 * len(sets) + 1.5), 4.2))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        xs, rel, sds, ks = [], [], [], []
        for i, d in enumerate(sets):
            t = table[table.dataset == d].set_index("method")
            best = t.loc[[x for x in SINGLE_TREES if x in t.index], "rmse_mean"].min()
            xs.append(i + (j - (len(methods) - 1) / 2) * width)
            rel.append(t.loc[m, "rmse_mean"] / best)
            sds.append(t.loc[m, "rmse_sd"] / best if np.isfinite(t.loc[m, "rmse_sd"]) else 0.0)
            ks.append(t.loc[m, "leaves_mean"])
        shown = np.minimum(rel, cap)
        ax.bar(xs, shown, width=width * 0.92, yerr=np.where(np.array(rel) < cap, sds, 0), capsize=2,
               color=METHOD_COLORS.get(m, "C7"), label=m)
        for x, r, k in zip(xs, rel, ks):
            if r >= cap:
                ax.text(x, cap + 0.02, f"{r:.1f}↑", ha="center", va="bottom", fontsize=7)
            if np.isfinite(k):
                ax.text(x, 0.04, f"K={k:.0f}", ha="center", va="bottom", fontsize=7, rotation=90, color="white")
    ax.axhline(1.05, color="0.3", ls="--", lw=1)
    ax.text(len(sets) - 0.5, 1.06, "+5% (C3)", ha="right", va="bottom", fontsize=7.5, color="0.3")
    ax.set_xticks(range(len(sets)), [table[table.dataset == d]["data set"].iloc[0] for d in sets])
    ax.set_ylabel("test RMSE / best single tree's")
    ax.set_ylim(0, cap + 0.45)
    ax.set_title("Test RMSE relative to the best tuned single tree (mean over splits; K = leaves)")
    ax.legend(ncol=3, loc="upper left", fontsize=8, frameon=False)
    ax.grid(axis="x", visible=False)
    fig.tight_layout()
    return fig


def plot_leaves_curve(lc: pd.DataFrame, labels: dict | None = None, paper_depth: int | None = None):
    """Figure 4: test RMSE against number of leaves (log scale) per data set; one legend, in the first panel.

    ``paper_depth``: HRT's depth in the benchmark (the paper's setting), marked with a star.
    """
    datasets = list(dict.fromkeys(lc.dataset))
    labels = labels or {}
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.0), squeeze=False)
    for ax, d in zip(axes.ravel(), datasets):
        t = lc[lc.dataset == d]
        for m in ("HRT", "LinearTree-lite", "CART"):
            g = t[t.method == m].sort_values("leaves")
            ax.plot(g.leaves, g.rmse, marker="o", ms=3.5, color=METHOD_COLORS[m],
                    label=f"{m} (depth {int(g.depth.min())}–{int(g.depth.max())})")
        if paper_depth is not None:
            g = t[(t.method == "HRT") & (t.depth == paper_depth)]
            ax.plot(g.leaves, g.rmse, marker="*", ms=13, color=METHOD_COLORS["HRT"], ls="none", mec="k", mew=0.6,
                    label=f"HRT at the paper's depth {paper_depth}")
        for m, ls in (("Ridge", "--"), ("HGB", ":")):
            v = t[t.method == m].rmse
            if len(v):
                ax.axhline(float(v.iloc[0]), color=METHOD_COLORS[m], ls=ls, lw=1.2,
                           label=f"{m}{' (ensemble)' if m == 'HGB' else ''}")
        _log_axis(ax, "x", base=2)
        ax.set_xlabel("number of leaves $K$")
        ax.set_title(labels.get(d, LABELS.get(d, d)))
    axes[0, 0].set_ylabel("test RMSE")
    axes[0, 0].legend(fontsize=7.5, loc="best")
    fig.suptitle("Accuracy against tree size (first split)", y=1.0)
    fig.tight_layout()
    return fig


def plot_rate(ra):
    """Figure 5: log-log grid RMSE against leaves on noiseless smooth targets, with reference slopes."""
    kinds = [("sin1d", r"$\sin(3x)$, $x \in [-1, 1]$", (-2.0, -1.0)),
             ("smooth2d", r"$\sin(2x_1)\cos(2x_2)$ on $[-1, 1]^2$", (-1.0, -0.5))]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.1))
    for ax, (kind, title, refs) in zip(axes, kinds):
        t = ra.curves[ra.curves.kind == kind]
        lo, hi = ra.window[kind]
        for m in ("HRT (auto)", "HRT (s=0.1)", "CART"):
            g = t[t.method == m].sort_values("leaves")
            ax.plot(g.leaves, g.rmse, marker="o", ms=3.5, color=METHOD_COLORS[m], label=m)
            ax.annotate(f"{ra.slopes[(kind, m)]:.2f}", (g.leaves.iloc[-1], g.rmse.iloc[-1]), fontsize=7.5,
                        color=METHOD_COLORS[m], xytext=(4, 0), textcoords="offset points", va="center")
        g = t[t.method == "HRT (auto)"].sort_values("leaves")
        k0, e0 = float(g.leaves.iloc[0]), float(g.rmse.iloc[0])
        ks = np.array([k0, t.leaves.max()])
        for r, ls, name in zip(refs, ("--", ":"), (r"$O(\delta^2)$", r"$O(\delta)$")):
            ax.plot(ks, e0 * (ks / k0) ** r, color="0.35", ls=ls, lw=1, label=f"{name} reference")
            ax.annotate(f"{r:g}", (ks[-1], e0 * (ks[-1] / k0) ** r), fontsize=7.5, color="0.35",
                        xytext=(4, 0), textcoords="offset points", va="center")
        ax.axvspan(lo, hi, color="0.92", zorder=0, label="slope window")
        _log_axis(ax, "x", base=2)
        _log_axis(ax, "y")
        ax.set_xlabel("number of leaves $K$")
        ax.set_title(title)
        ax.set_xlim(right=t.leaves.max() * 2.2)
    axes[0].set_ylabel("RMSE on a dense grid")
    axes[0].legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Approximation error against leaves (noiseless targets; numbers: fitted log-log slopes)", y=1.0)
    fig.tight_layout()
    return fig


def _kinks(ax, g):
    """Draw where the planted hinge target's pieces switch (its kinks) on a 2-D panel."""
    A, b = hinge_coefficients(2)
    G = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    P = G @ A.T + b
    for field in (P[:, 0] - P[:, 1], P[:, 2]):
        ax.contour(g, g, field.reshape(len(g), len(g)), levels=[0.0], colors="k", linewidths=1.3,
                   linestyles="--")


def plot_partition(p2):
    """Figure 6: HRT's oblique leaves and CART's axis-aligned leaves on the 2-D hinge target (kinks dashed)."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.3))
    g = p2.grid
    ext = (g[0], g[-1], g[0], g[-1])
    rng = np.random.default_rng(3)
    palette = ListedColormap(rng.permutation(plt.get_cmap("tab20")(np.linspace(0, 1, 20))))
    for ax, m in zip(axes, ("HRT", "CART")):
        ids = p2.leaf_ids[m]
        _, codes = np.unique(ids, return_inverse=True)
        ax.imshow(codes.reshape(ids.shape) % 20, origin="lower", extent=ext, cmap=palette, aspect="equal",
                  interpolation="nearest", alpha=0.75, rasterized=True)
        _kinks(ax, g)
        ax.set_title(f"{m}: {p2.leaves[m]} leaves, test RMSE {p2.rmse[m]:.3f}", fontsize=10)
        ax.grid(False)
        ax.set_xticks([-1, -0.5, 0, 0.5, 1])
        ax.set_yticks([-1, -0.5, 0, 0.5, 1])
        ax.set_xlabel("$x_1$")
    axes[0].set_ylabel("$x_2$")
    fig.legend(handles=[Line2D([], [], color="k", ls="--", lw=1.3, label="true kinks of the target")],
               loc="lower center", fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, -0.05))
    fig.suptitle(r"Leaves (colours) on the 2-D hinge target $\max(a_1^\top x+b_1, a_2^\top x+b_2) - "
                 r"\max(a_3^\top x+b_3, 0)$", y=1.0, fontsize=10.5)
    fig.tight_layout()
    return fig
