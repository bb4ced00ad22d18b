"""Figures of the HRT notebook (matplotlib, the suite's style). Each function returns the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap

from .data import LABELS

METHOD_COLORS = {"HRT": "C0", "CART": "C1", "LinearTree-lite": "C2", "Ridge": "C7", "HGB": "C4",
                 "HRT (s=0.1)": "C0", "HRT (auto)": "C9"}
STEP_COLORS = {"0.1": "C0", "0.5": "C1", "1.0": "C3", "auto": "C2"}


def _step_label(s) -> str:
    return "backtracking (auto)" if s == "auto" else f"fixed s = {s}"


def plot_root_traces(rt):
    """Figure 1: root-node RMSE against iteration, one panel per envelope, one curve per step rule."""
    envs = sorted({e for e, _ in rt.traces})[::-1]  # min, max
    fig, axes = plt.subplots(1, len(envs), figsize=(10, 3.8), sharey=False)
    for ax, env in zip(np.atleast_1d(axes), envs):
        for (e, s), tr in rt.traces.items():
            if e != env:
                continue
            ax.plot(np.arange(len(tr)), tr, marker="o" if s == "auto" else None, ms=3,
                    color=STEP_COLORS[str(s)], lw=1.6 if s == "auto" else 1.2,
                    label=f"{_step_label(s)} (stop: {rt.stops[(e, s)]})")
        ax.set_xlabel("Gauss-Newton iteration")
        ax.set_ylabel("node objective: hinge RMSE")
        ax.set_title(f"{env}-envelope, root of {LABELS.get(rt.dataset, rt.dataset)} (n = {rt.n})")
        ax.legend(loc="upper right", fontsize=7.5)
    fig.suptitle("Root-node objective: fixed damping vs backtracking line search", y=1.02)
    fig.tight_layout()
    return fig


def plot_iterations(it: pd.DataFrame):
    """Figure 2: histogram of iterations per node (kept envelope) and stop reasons, per step rule."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 3.8), gridspec_kw={"width_ratios": [1.5, 1]})
    steps = [s for s in ("auto", "0.5", "0.1") if s in set(it.step)]
    bins = np.unique(np.round(np.logspace(0, np.log10(101), 18)).astype(int))
    for s in steps:
        v = it[(it.step == s) & it.chosen].n_iter
        ax1.hist(v, bins=bins, histtype="step", lw=1.8, color=STEP_COLORS[s],
                 label=f"{_step_label(s)}: median {v.median():.0f}, {len(v)} nodes")
        ax1.axvline(v.median(), color=STEP_COLORS[s], ls=":", lw=1)
    ax1.set_xscale("log")
    ax1.set_xlabel("iterations at a node (kept envelope; cap = 100)")
    ax1.set_ylabel("number of split nodes")
    ax1.set_title("Newton iterations per node")
    ax1.legend(fontsize=7.5)
    order = ["partition", "tol", "no_descent", "invalid_step", "cap"]
    counts = it.groupby(["step", "stop"]).size().unstack(fill_value=0).reindex(index=steps, columns=order,
                                                                                fill_value=0)
    frac = counts.div(counts.sum(axis=1), axis=0)
    left = np.zeros(len(steps))
    colors = {"partition": "C2", "tol": "C0", "no_descent": "C8", "invalid_step": "C1", "cap": "C3"}
    labels = {"partition": "partition unchanged", "tol": "step < tol", "no_descent": "no descent found",
              "invalid_step": "step would empty a side", "cap": "iteration cap"}
    for reason in order:
        ax2.barh([_step_label(s) for s in steps], frac[reason], left=left, color=colors[reason],
                 label=labels[reason])
        left += frac[reason].to_numpy()
    ax2.set_xlabel("fraction of envelope solves")
    ax2.set_title("Why each solve stopped")
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def plot_benchmark(table: pd.DataFrame):
    """Figure 3: test RMSE (mean +- sd over splits) per method and data set, with leaf counts written on bars."""
    datasets = list(dict.fromkeys(table.dataset))
    ncol = min(3, len(datasets))
    nrow = int(np.ceil(len(datasets) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.2 * nrow), squeeze=False)
    for ax, d in zip(axes.ravel(), datasets):
        t = table[table.dataset == d]
        x = np.arange(len(t))
        ax.bar(x, t.rmse_mean, yerr=t.rmse_sd.fillna(0), capsize=3,
               color=[METHOD_COLORS.get(m, "C7") for m in t.method])
        for xi, (r, k) in enumerate(zip(t.rmse_mean, t.leaves_mean)):
            if np.isfinite(k):
                ax.text(xi, r * 1.02, f"K={k:.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x, [m.replace("LinearTree-lite", "LinTree") for m in t.method], rotation=30, fontsize=8)
        ax.set_title(t["data set"].iloc[0])
        ax.set_ylabel("test RMSE")
        ax.set_ylim(0, t.rmse_mean.max() * 1.25)
    for ax in axes.ravel()[len(datasets):]:
        ax.axis("off")
    fig.suptitle("Test RMSE (mean ± sd over 50/50 splits); K = leaves", y=1.01)
    fig.tight_layout()
    return fig


def plot_leaves_curve(lc: pd.DataFrame):
    """Figure 4: test RMSE against number of leaves (log scale) per data set."""
    datasets = list(dict.fromkeys(lc.dataset))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 3.8), squeeze=False)
    for ax, d in zip(axes.ravel(), datasets):
        t = lc[lc.dataset == d]
        for m in ("HRT", "LinearTree-lite", "CART"):
            g = t[t.method == m].sort_values("leaves")
            ax.plot(g.leaves, g.rmse, marker="o", ms=3.5, color=METHOD_COLORS[m],
                    label=f"{m} (depth {int(g.depth.min())}–{int(g.depth.max())})")
        for m, ls in (("Ridge", "--"), ("HGB", ":")):
            v = t[t.method == m].rmse
            if len(v):
                ax.axhline(float(v.iloc[0]), color=METHOD_COLORS[m], ls=ls, lw=1.2,
                           label=f"{m}{' (ensemble)' if m == 'HGB' else ''}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("number of leaves K")
        ax.set_ylabel("test RMSE")
        ax.set_title(LABELS.get(d, d))
        ax.legend(fontsize=7.5)
    fig.suptitle("Accuracy against tree size (first split)", y=1.02)
    fig.tight_layout()
    return fig


def plot_rate(ra):
    """Figure 5: log-log grid RMSE against leaves on noiseless smooth targets, with reference slopes."""
    kinds = [("sin1d", "sin(3x), x ∈ [-1, 1]", (-2.0, -1.0)), ("smooth2d", "sin(2x₁)cos(2x₂) on [-1, 1]²",
                                                                   (-1.0, -0.5))]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.0))
    for ax, (kind, title, refs) in zip(axes, kinds):
        t = ra.curves[ra.curves.kind == kind]
        lo, hi = ra.window[kind]
        for m in ("HRT (s=0.1)", "HRT (auto)", "CART"):
            g = t[t.method == m].sort_values("leaves")
            ax.plot(g.leaves, g.rmse, marker="o", ms=3.5, color=METHOD_COLORS[m],
                    label=f"{m}: slope {ra.slopes[(kind, m)]:.2f}")
        g = t[t.method == "HRT (s=0.1)"].sort_values("leaves")
        k0 = float(g.leaves.iloc[0])
        e0 = float(g.rmse.iloc[0])
        ks = np.array([k0, t.leaves.max()])
        for r, ls in zip(refs, ("--", ":")):
            ax.plot(ks, e0 * (ks / k0) ** r, color="0.35", ls=ls, lw=1,
                    label=f"reference slope {r:g}" + (" (O(δ²))" if r == refs[0] else " (O(δ))"))
        ax.axvspan(lo, hi, color="0.9", zorder=0, label=f"slope window K ∈ [{lo}, {hi}]")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("number of leaves K")
        ax.set_ylabel("RMSE on a dense grid")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.suptitle("Approximation error against leaves (noiseless targets)", y=1.02)
    fig.tight_layout()
    return fig


def plot_partition(p2):
    """Figure 6: the 2-D hinge target, HRT's oblique leaves and CART's axis-aligned leaves."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.9))
    g = p2.grid
    ext = (g[0], g[-1], g[0], g[-1])
    im = axes[0].imshow(p2.truth, origin="lower", extent=ext, cmap="viridis", aspect="equal")
    axes[0].contour(g, g, p2.truth, levels=12, colors="w", linewidths=0.4, alpha=0.6)
    axes[0].set_title("target: max(a₁'x+b₁, a₂'x+b₂) − max(a₃'x+b₃, 0)", fontsize=9)
    fig.colorbar(im, ax=axes[0], fraction=0.046, pad=0.04)
    rng = np.random.default_rng(3)
    palette = ListedColormap(rng.permutation(plt.get_cmap("tab20")(np.linspace(0, 1, 20))))
    for ax, m in zip(axes[1:], ("HRT", "CART")):
        ids = p2.leaf_ids[m]
        _, codes = np.unique(ids, return_inverse=True)
        ax.imshow(codes.reshape(ids.shape) % 20, origin="lower", extent=ext, cmap=palette, aspect="equal",
                  interpolation="nearest", alpha=0.75)
        ax.contour(g, g, p2.preds[m], levels=12, colors="k", linewidths=0.4, alpha=0.6)
        ax.set_title(f"{m}: {p2.leaves[m]} leaves, test RMSE {p2.rmse[m]:.3f}", fontsize=9)
    for ax in axes:
        ax.grid(False)
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")
    fig.suptitle("Leaves of an oblique tree (HRT, depth 2) and of CART on a 2-D hinge target", y=1.02)
    fig.tight_layout()
    return fig
