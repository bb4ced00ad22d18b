"""Figures of the notebook (matplotlib/seaborn in the suite's style). Each returns the figure.

Legends sit below the panels (one per figure), so that none covers data; axis labels use mathtext."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .collisions import COLLISION_THRESHOLD

_MODEL_COLORS = {"init": "C0", "trained": "C1"}


def _legend_below(fig, handles=None, labels=None, ncol=3, ax=None):
    """One legend for the whole figure, centred below its panels (outside every axes)."""
    if handles is None:
        handles, labels = [], []
        for a in ([ax] if ax is not None else fig.axes):
            for h, lab in zip(*a.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(ncol, len(labels)),
               frameon=False, fontsize=8)


def _threshold(ax, label=True):
    ax.axhline(COLLISION_THRESHOLD, ls="--", color="0.3", lw=1,
               label=f"collision threshold {COLLISION_THRESHOLD:g}" if label else None)


def min_distance_by_layer(summary: pd.DataFrame, title: str):
    """Fig 1 (paper Fig. 3 left, Figs 7–8): minimum pairwise distance per layer, log scale."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for (mname, prec), g in summary.groupby(["model", "precision"], sort=False):
        ax.plot(g.layer, g["min"], marker="o" if prec == "float32" else "x", ms=7,
                ls="-" if prec == "float32" else ":", color=_MODEL_COLORS.get(mname, "C2"),
                label=f"{mname}, {prec}")
    _threshold(ax)
    ax.set_yscale("log")
    ax.set_xticks(sorted(summary.layer.unique()))
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"$\min_{i\neq j}\,\|h_\ell(s_i)-h_\ell(s_j)\|_2$")
    ax.set_ylim(COLLISION_THRESHOLD / 10, None)
    ax.set_title(title)
    _legend_below(fig, ncol=5)
    return fig


def nn_boxplots(nn: pd.DataFrame, title: str):
    """Fig 2 (paper Fig. 3 right): per-prompt nearest-neighbour distance per layer (float32 states)."""
    d = nn[nn.precision == "float32"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    sns.boxplot(data=d, x="layer", y="nn", hue="model", palette=_MODEL_COLORS, log_scale=True, fliersize=1.5,
                ax=ax)
    _threshold(ax)
    ax.set_ylim(COLLISION_THRESHOLD / 10, None)
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"$\min_{j\neq i}\,\|h_\ell(s_i)-h_\ell(s_j)\|_2$")
    ax.set_title(title)
    ax.get_legend().remove()
    _legend_below(fig)
    return fig


def distance_vs_length(df: pd.DataFrame, title: str):
    """Fig 3 (paper Fig. 5): min / mean / max pairwise distance at the last layer vs prompt length."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for mname, g in df.groupby("model", sort=False):
        c = _MODEL_COLORS.get(mname, "C2")
        ax.fill_between(g.length, g["min"], g["max"], color=c, alpha=0.15)
        ax.plot(g.length, g["mean"], color=c, marker="o", ms=4, label=f"{mname}: mean")
        ax.plot(g.length, g["min"], color=c, ls="--", marker="v", ms=4, label=f"{mname}: min")
    _threshold(ax)
    ax.set_yscale("log")
    ax.set_xscale("log")
    ticks = sorted(df.length.unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(COLLISION_THRESHOLD / 10, None)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel(r"$\|h_L(s_i)-h_L(s_j)\|_2$ (band: min to max)")
    ax.set_title(title)
    _legend_below(fig, ncol=5)
    return fig


def exhaustive(nn: pd.DataFrame, summary: pd.DataFrame, title: str):
    """Fig 4 (paper Fig. 4): distance from each continuation state to its nearest other state, with the
    min / median / mean / max over all pairs marked."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    sns.boxplot(data=nn, x="model", y="nn", hue="model", palette=_MODEL_COLORS, log_scale=True, fliersize=1.5,
                ax=ax, legend=False)
    for i, r in enumerate(summary.itertuples()):
        for stat, mk in (("min", "v"), ("median", "s"), ("mean", "D"), ("max", "^")):
            ax.scatter(i + 0.3, getattr(r, stat), marker=mk, color="k", s=22, zorder=5,
                       label=f"{stat} over all pairs" if i == 0 else None)
    _threshold(ax)
    ax.set_ylim(COLLISION_THRESHOLD / 10, None)
    ax.set_xlabel("model")
    ax.set_ylabel(r"$\|h_L(s_i)-h_L(s_j)\|_2$")
    ax.set_title(title)
    _legend_below(fig, ncol=5)
    return fig


def min_distance_vs_step(curve: pd.DataFrame, losses, title: str):
    """Fig 5 (Thm 2.3): minimum pairwise distance per layer during training, with the training loss."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for layer, g in curve.groupby("layer"):
        ax.plot(g.step, g["min"], marker="o", ms=4, label=f"layer {layer}")
    _threshold(ax)
    ax.set_yscale("log")
    ax.set_ylim(COLLISION_THRESHOLD / 10, None)
    ax.set_xlabel("training step")
    ax.set_ylabel(r"$\min_{i\neq j}\,\|h_\ell(s_i)-h_\ell(s_j)\|_2$")
    ax2 = ax.twinx()
    if len(losses):
        ax2.plot(np.arange(1, len(losses) + 1), losses, color="0.6", lw=1, label="training loss")
    ax2.set_ylabel("training loss (nats)", color="0.5")
    ax2.grid(False)
    ax.set_title(title)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    _legend_below(fig, h1 + h2, l1 + l2, ncol=6)
    return fig


def inversion(summary: pd.DataFrame, vocab_size: int, title: str):
    """Fig 6 (paper Table 2): verifier calls per token and time per prompt of each inversion method."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    s = summary.reset_index()
    colors = sns.color_palette("colorblind", len(s))
    ax = axes[0]
    sv = s.dropna(subset=["calls_per_token"])
    ax.bar(sv.method, sv.calls_per_token, color=colors[:len(sv)])
    ax.axhline(vocab_size / 2, ls=":", color="0.4", label="|V|/2 (expected, random order)")
    ax.set_yscale("log")
    ax.set_ylim(1, 2 * vocab_size)
    ax.set_ylabel("verifier calls per token")
    ax.legend(loc="upper left", fontsize=7.5)
    ax = axes[1]
    ax.bar(s.method, s.time_s_mean, yerr=s.time_s_sd, color=colors, capsize=3)
    ax.set_yscale("log")
    ax.set_ylabel("seconds per prompt")
    for i, r in enumerate(s.itertuples()):
        top = r.time_s_mean + (r.time_s_sd if np.isfinite(r.time_s_sd) else 0.0)
        ax.text(i, top, f"acc {r.token_acc:.2f}\nexact {r.exact_rate:.2f}", ha="center", va="bottom",
                fontsize=7.5)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 2.0)  # room for the accuracy labels above the error bars
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=15, labelsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def time_vs_layer(df: pd.DataFrame, title: str):
    """Fig 7 (paper Fig. 6): SipIt (gradient) inversion time per prompt vs layer, one line per length."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    g = df.groupby(["length", "layer"], as_index=False).agg(time_s=("time_s", "mean"),
                                                            calls=("calls_per_token", "mean"))
    lengths = sorted(g.length.unique())
    for length, d in g.groupby("length"):
        axes[0].plot(d.layer, d.time_s, marker="o", label=f"{length} tokens")
        axes[1].plot(d.layer, d.calls, marker="o", label=f"{length} tokens")
    if len(lengths) == 1:
        title = f"{title} ({lengths[0]}-token prompts)"
    axes[0].set_ylabel("inversion time per prompt (s)")
    axes[1].set_ylabel("verifier calls per token")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel(r"layer $\ell$")
        ax.set_xticks(sorted(df.layer.unique()))
    axes[0].set_ylim(0, None)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    if len(lengths) > 1:
        _legend_below(fig, ax=axes[0], ncol=len(lengths))
    return fig


def negative_controls(ctrl, title: str):
    """Fig 8 (new): colliding pairs vs quantization bits per layer; tied-embedding pair distances."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    ax = axes[0]
    q = ctrl.quant
    for layer, d in q.groupby("layer"):
        ax.plot(d.bits.astype(str).where(d.bits != 32, "float32"), d.colliding_pairs, marker="o",
                label=f"{layer}")
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("bits per coordinate")
    ax.set_ylabel("colliding prompt pairs (identical codes)")
    ax.set_title("quantized states collide", fontsize=10)
    ax.legend(fontsize=7.5, title="layer", title_fontsize=7.5, loc="upper right")
    ax = axes[1]
    t = ctrl.tied
    floor = 1e-9
    ax.scatter(t.pair, t.original, label="original model", color="C0")
    ax.scatter(t.pair, np.maximum(t.tied, floor), label=f"tied E[{ctrl.v2}] = E[{ctrl.v1}] (0 drawn at {floor:g})",
               color="C3", marker="x")
    _threshold(ax)
    ax.set_yscale("log")
    ax.set_xlabel("prompt pair (differ only by v1 ↔ v2)")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel(r"$\|h_L(s_i)-h_L(s_j)\|_2$")
    ax.set_title("tied embeddings collide exactly", fontsize=10)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    _legend_below(fig, ax=axes[1], ncol=3)
    return fig
