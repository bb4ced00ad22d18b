"""Figures of the GMAN notebook (matplotlib, the suite's style)."""
from __future__ import annotations

import numpy as np
import pandas as pd

COLORS = {"GMAN {B,C} grouped": "#1f77b4", "GMAN singletons": "#aec7e8", "GMAN one group": "#9467bd",
          "GNAN": "#17becf", "LR-summary": "#ff7f0e", "HGB-summary": "#d62728",
          "GRU-D-lite": "#8c564b", "GMAN": "#1f77b4", "GIN": "#2ca02c"}


def show_saved(fig, path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(path)))


def _bars(ax, results, methods, metric):
    g = results.groupby("method")[metric]
    mean, sd = g.mean(), g.std()
    for k, m in enumerate(methods):
        ax.bar(k, mean[m], yerr=0 if np.isnan(sd[m]) else sd[m], color=COLORS.get(m, "#777"), capsize=3)
        ax.text(k, mean[m] + 0.01, f"{mean[m]:.3f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(methods)))
    ax.set_xticklabels([m.replace(" ", "\n", 1) for m in methods], fontsize=7)


def fig1_accuracy(results: pd.DataFrame):
    import matplotlib.pyplot as plt

    methods = [m for m in ("GMAN {B,C} grouped", "GMAN singletons", "LR-summary", "HGB-summary", "GRU-D-lite")
               if m in set(results.method)]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, metric in zip(axes, ("auroc", "auprc")):
        _bars(ax, results, methods, metric)
        ax.set_ylabel(f"test {metric.upper()}")
        ax.set_ylim(0.0, 1.05)
    n = results.rep.nunique()
    fig.suptitle(f"GMAN against summary-feature baselines (synthetic biomarkers, {n} replicate(s), ± sd)")
    fig.tight_layout()
    return fig, axes[0]


def fig2_grouping(results: pd.DataFrame, off: pd.DataFrame | None = None):
    import matplotlib.pyplot as plt

    methods = ["GNAN", "GMAN singletons", "GMAN {B,C} grouped", "GMAN one group"]
    fig, axes = plt.subplots(1, 2 if off is not None else 1, figsize=(8 if off is not None else 5, 3.4), squeeze=False)
    _bars(axes[0, 0], results, methods, "auroc")
    axes[0, 0].set_title("XOR(B, C) in the label", fontsize=9)
    axes[0, 0].set_ylabel("test AUROC")
    axes[0, 0].set_ylim(0.0, 1.05)
    if off is not None:
        _bars(axes[0, 1], off, ["GMAN singletons", "GMAN {B,C} grouped"], "auroc")
        axes[0, 1].set_title("interaction switched off", fontsize=9)
        axes[0, 1].set_ylim(0.0, 1.05)
    fig.suptitle("Grouping ablation: which graphs share a DeepSet")
    fig.tight_layout()
    return fig


def fig3_timeline(tl: dict):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    W, tau = tl["window"], tl["tau"]
    for ax in axes:
        ax.axvspan(0, tau, color="#ffdd99", alpha=0.6, label=f"critical window (last {tau:g} days)")
        ax.invert_xaxis()
        ax.set_xlabel("days before the end of the record")
    for p, (t, c) in tl["examples"].items():
        axes[0].plot(W - t, c, "o-", ms=3, lw=0.8, label=f"patient {p}")
    axes[0].set_ylabel("node contribution of marker A (logit)")
    axes[0].set_title("a few test positives", fontsize=9)
    axes[0].legend(fontsize=6)
    e = tl["edges"]
    axes[1].scatter(tl["before"], tl["abs"], s=4, color="#999", alpha=0.4, rasterized=True)
    axes[1].step(e[:-1], tl["curve"], where="post", color="#1f77b4", lw=2, label="cohort mean |contribution|")
    axes[1].set_ylabel("|node contribution| of A")
    axes[1].set_title(f"test positives: in-window / outside = {tl['ratio']:.2f}", fontsize=9)
    axes[1].legend(fontsize=7)
    fig.suptitle("Node importance of marker A over time, against the planted critical window")
    fig.tight_layout()
    return fig


def fig4_shapes(sh: dict):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for k, name in enumerate(sh["markers"]):
        line, = axes[0].plot(sh["vgrid"], sh["f"][k], label=name, lw=2 if k < 3 else 1)
        axes[0].plot(sh["vgrid"], sh["f_early"][k], ls=":", color=line.get_color(), lw=1)
        axes[1].plot(sh["dt"], sh["rho"][k], label=name, lw=2 if k < 3 else 1)
    axes[0].set_xlabel("standardised value")
    axes[0].set_ylabel("f(value, time before end)")
    axes[0].set_title("shape functions: at the end (solid), mid-record (dotted)", fontsize=9)
    axes[1].set_xlabel("elapsed time Δt (days)")
    axes[1].set_ylabel("ρ(d(Δt))")
    axes[1].set_title("distance functions per marker", fontsize=9)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle("GMAN's learned global explanations ({B,C} grouped model)")
    fig.tight_layout()
    return fig


def fig5_importance(imp: dict):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = np.arange(len(imp["markers"]))
    cols = ["#d62728" if r > 0 else "#7f7f7f" for r in imp["relevance"]]
    ax.bar(x, imp["importance"], color=cols)
    ax.set_xticks(x)
    ax.set_xticklabels(imp["markers"])
    ax.set_ylabel("mean |subset contribution − mean| (logit)")
    ax.set_title(f"Per-marker importance (red: planted signal); Spearman {imp['spearman']:.2f}", fontsize=9)
    fig.tight_layout()
    return fig


def fig6_cascades(casc: pd.DataFrame):
    """AUROC of GMAN and the GIN on the synthetic cascades, mean ± sd over replicates, each replicate a dot."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    methods = ["GMAN", "GIN"]
    _bars(ax, casc, methods, "auroc")
    for k, m in enumerate(methods):
        v = casc.loc[casc.method == m, "auroc"].to_numpy()
        ax.scatter(np.full(len(v), k) + np.linspace(-0.15, 0.15, len(v)), v, s=10, color="k", zorder=3)
    ax.set_ylabel("test AUROC")
    ax.set_ylim(0.0, 1.05)
    ax.set_title(f"Synthetic fake-news cascades ({casc.rep.nunique()} replicate(s), ± sd)", fontsize=9)
    fig.tight_layout()
    return fig
