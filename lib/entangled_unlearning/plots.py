"""Figures of the notebook (matplotlib/seaborn in the suite's style); each function returns the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator
import pandas as pd
import seaborn as sns

SUBSET_COLUMNS = [("acc_train_forget", r"$D_f$ (train)"), ("acc_val_adjacent", r"$D_r^{adj}$ (val)"),
                  ("acc_val_remote", r"$D_r^{rem}$ (val)")]
UNLEARNERS = ["FT", "GA", "l1-sparse", "SCRUB", "NegGrad+", "stage-1 only", "ours (no W2)", "ours"]


def _pal(n=3):
    return sns.color_palette("colorblind", n)


def _plain_log(axis, subs=(1.0,), numticks=12):
    """Log ticks with plain-text labels (mathtext tick labels are slow to lay out) and no minor ticks."""
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=numticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def plot_three_bars(summary: pd.DataFrame, trials: pd.DataFrame, target: float, n_seeds: int):
    """(a) accuracy on D_f / D_r^adj / D_r^rem per method with the retrain level; (b) the forget/adjacent trade-off
    over every learning rate of every grid."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.3), gridspec_kw={"width_ratios": [1.7, 1]})
    methods = ["original"] + UNLEARNERS
    x, w, cols = np.arange(len(methods)), 0.27, _pal()
    for k, (col, label) in enumerate(SUBSET_COLUMNS):
        vals = summary.loc[methods, col].to_numpy()
        ax.bar(x + (k - 1) * w, vals, w, color=cols[k], label=label)
        for xi, v in zip(x + (k - 1) * w, vals):  # a bar at 0% is invisible: mark it
            if v < 0.5:
                ax.text(xi, 1.0, "0", ha="center", va="bottom", fontsize=7, color=cols[k], fontweight="bold")
        ax.hlines(summary.loc["retrain", col], x[0] - 0.5, x[-1] + 0.5, colors=[cols[k]], linestyles="--", lw=1)
    for i, m in enumerate(methods):
        if m != "original" and summary.loc[m, "matched"] < 1:
            ax.text(x[i], 103, "not matched" if summary.loc[m, "matched"] == 0 else "matched on some seeds",
                    ha="center", fontsize=6.5, color="0.35")
    ax.set_xticks(x, methods, rotation=25, ha="right")
    ax.set_ylim(0, 110)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy after unlearning (dashed: retrain from scratch)" + (f", mean of {n_seeds} seeds"
                                                                             if n_seeds > 1 else ""))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    pal = dict(zip(UNLEARNERS, sns.color_palette("tab10", len(UNLEARNERS))))
    for m, grp in trials[trials["seed"] == trials["seed"].min()].groupby("method", sort=False):
        # grid points are separate settings, not a path: markers only (a line through them zig-zags)
        bx.plot(grp["acc_train_forget"], grp["acc_val_adjacent"], "o", ms=4, alpha=0.8, color=pal[m], label=m)
        ch = grp[grp["chosen"]]
        bx.plot(ch["acc_train_forget"], ch["acc_val_adjacent"], "*", ms=13, color=pal[m], mec="k", mew=0.6)
    bx.axvspan(-2, target, color="0.85", alpha=0.6, lw=0)
    bx.text(target + 1, 4, "matched forgetting:\n$D_f \\leq$ retrain + 5 pp", fontsize=7, color="0.3")
    bx.set_xlim(-2, 102)
    bx.set_ylim(-2, 104)
    bx.set_xlabel(r"$D_f$ train accuracy (%)  (lower = more forgetting)")
    bx.set_ylabel(r"$D_r^{adj}$ val accuracy (%)")
    bx.set_title("Every grid point, first seed (star: tuned)")
    bx.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    return fig


def plot_sweep(summary: pd.DataFrame, chance: float):
    """D_f train accuracy and D_r^adj val accuracy after unlearning against delta (filled: matched forgetting)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    methods = [m for m in ["retrain", "GA", "FT", "l1-sparse", "SCRUB", "NegGrad+", "ours (no W2)", "ours"]
               if m in summary.index.get_level_values(0)]
    pal = dict(zip(methods, ["0.4"] + list(sns.color_palette("colorblind", len(methods) - 1))))
    cols = [("acc_train_forget", r"$D_f$ train accuracy (%)"), ("acc_val_adjacent", r"$D_r^{adj}$ val accuracy (%)"),
            ("acc_val_remote", r"$D_r^{rem}$ val accuracy (%)")]
    for ax, (col, label) in zip(axes, cols):
        for m in methods:
            d = summary.loc[m]
            ls = "--" if m == "retrain" else (":" if m == "ours (no W2)" else "-")
            ax.plot(d.index, d[col], ls, color=pal[m], lw=1.2, label=m)
            if m != "retrain":
                full = d["matched"] >= 0.5
                ax.plot(d.index[full], d.loc[full, col], "o", color=pal[m], ms=6)
                ax.plot(d.index[~full], d.loc[~full, col], "o", mfc="white", color=pal[m], ms=6)
        ax.set_xscale("log")
        ax.set_xticks(list(summary.loc["ours"].index))
        ax.set_xticklabels([f"{v:g}" for v in summary.loc["ours"].index])
        ax.minorticks_off()
        ax.set_xlabel(r"$\delta$ (sub-class spread; small = entangled)")
        ax.set_ylabel(label)
        ax.set_ylim(-3, 103)
    axes[0].axhline(chance + 5, color="0.5", lw=0.8, ls=":")
    axes[0].set_title("Forgetting (dotted: matched level)")
    axes[1].set_title("Adjacent retention")
    axes[2].set_title("Remote retention")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=len(methods), frameon=False,
               title="filled marker: matched forgetting; open: the method reached no matched point", title_fontsize=8)
    return fig


def plot_dynamics(stage1: pd.DataFrame, stage2: dict, info: dict, alpha: float):
    """Stage 1: forget loss, remote residual h and multiplier lambda; Stage 2: accuracies for alpha and alpha = 0."""
    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(13.5, 3.9))
    ax.plot(stage1["step"], stage1["forget_loss"], color="C3")
    ax.axhline(info["forget_loss0"], color="C3", ls=":", lw=0.8)
    ax.set_yscale("log")
    _plain_log(ax.yaxis, subs=(1.0, 2.0, 5.0))
    ax.set_xlabel("Stage-1 step")
    ax.set_ylabel(r"$L_f$: mean CE on $D_f$ train (nats, log)")
    ax.set_title("Stage 1: forget loss (dotted: before)")
    h = stage1["residual"]
    lim = 0.1
    bx.plot(stage1["step"], h.clip(-lim, lim), color="C0", label="h = L_rem - L_rem(theta_0)")
    bx.axhspan(-0.05, 0.05, color="C0", alpha=0.08, lw=0)
    bx.axhline(0, color="C0", lw=0.6, ls=":")
    bx.set_ylim(-1.05 * lim, 1.05 * lim)
    bx.set_xlabel("Stage-1 step")
    bx.set_ylabel(r"remote residual $h$ (nats; band: $\pm$0.05)", color="C0")
    if float(h.abs().max()) > lim:
        bx.text(0.98, 0.04, f"clipped: |h| reaches {float(h.abs().max()):.2g} in the first steps",
                transform=bx.transAxes, ha="right", fontsize=7, color="C0")
    b2 = bx.twinx()
    b2.plot(stage1["step"], stage1["lambda"], color="C2")
    b2.set_ylabel(r"multiplier $\lambda$", color="C2")
    b2.grid(False)
    bx.set_title(f"Stage 1: $h$ pinned, $\\lambda$ by dual ascent (end: $h$ = {info['residual']:+.3f})")
    pal = _pal()
    for k, (name, label) in enumerate([("forget", "D_f train"), ("adjacent", "D_r^adj val"),
                                       ("remote", "D_r^rem val")]):
        for a, ls in ((alpha, "-"), (0.0, "--")):
            d = stage2[a]
            cx.plot(d["step"], 100 * d[f"acc_{name}"], ls, color=pal[k], label=f"{label}, alpha={a:g}")
    cx.set_xlabel("Stage-2 step")
    cx.set_ylabel("accuracy (%)")
    cx.set_ylim(-3, 103)
    cx.set_title("Stage 2: adjacent recovers, D_f stays forgotten")
    cx.legend(fontsize=7, ncol=1, loc="center right")
    fig.tight_layout()
    return fig


def plot_loss_histograms(losses: dict, alpha: float):
    """Per-sample D_f train losses (log scale) for original, retrain, Stage 1, Stage 2 with and without W2."""
    names = [("original", "original"), ("retrain", "retrain"), ("stage-1 only", "after Stage 1"),
             ("ours (no W2)", "Stage 2, alpha = 0"), ("ours", f"Stage 2, alpha = {alpha:g}")]
    fig, axes = plt.subplots(1, len(names), figsize=(14, 3.3), sharex=True, sharey=True)
    allv = np.concatenate([np.asarray(losses[k]) for k, _ in names])
    bins = np.logspace(np.log10(max(allv.min(), 1e-6)), np.log10(allv.max() + 1e-6), 30)
    for ax, (k, label), c in zip(axes, names, sns.color_palette("colorblind", len(names))):
        v = np.maximum(np.asarray(losses[k]), bins[0])
        ax.hist(v, bins=bins, color=c)
        ax.axvline(np.log(2), color="0.3", lw=0.8, ls=":")
        ax.set_xscale("log")
        _plain_log(ax.xaxis, numticks=5)
        ax.set_title(f"{label}\nmedian {np.median(v):.2g}, 10th pct {np.quantile(v, 0.1):.2g} nats\n"
                     f"{np.mean(v < np.log(2)):.0%} below ln 2", fontsize=8.5)
        ax.set_xlabel(r"per-sample CE on $D_f$ (nats)")
    axes[0].set_ylabel(r"$D_f$ training samples")
    fig.tight_layout()
    return fig


def plot_mia(summary: pd.DataFrame):
    methods = ["original", "retrain"] + UNLEARNERS
    fig, ax = plt.subplots(figsize=(8.5, 3.6))
    vals = summary.loc[methods, "mia_forget"]
    ax.bar(range(len(methods)), vals, color=["0.6", "0.3"] + list(sns.color_palette("colorblind", len(UNLEARNERS))))
    ax.axhline(summary.loc["retrain", "mia_forget"], color="0.3", ls="--", lw=1, label="retrain")
    ax.set_xticks(range(len(methods)), methods, rotation=25, ha="right")
    ax.set_ylabel(r"$D_f$ predicted 'member' (%)")
    ax.set_ylim(0, 105)
    ax.set_title(r"SVC membership-inference attack on $D_f$ (closer to retrain is better)")
    ax.legend()
    fig.tight_layout()
    return fig
