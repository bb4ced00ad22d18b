"""Figures of the MaskInversion notebook (the suite's style; saving through lib.common.save_figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .scenes import PIXEL_MEAN, PIXEL_STD

ORDER = ["global", "patch pooling", "masked blur", "masked crop", "MaskInversion", "MaskInversion, random mask"]
COLORS = {"global": "#999999", "patch pooling": "#8c6bb1", "masked blur": "#74a9cf", "masked crop": "#2b8cbe",
          "MaskInversion": "#e6550d", "MaskInversion, random mask": "#fdae6b"}


def _rgb(img):
    return np.clip(img.transpose(1, 2, 0) * PIXEL_STD + PIXEL_MEAN, 0, 1)


def fig1_region(table, title_extra=""):
    t = table.set_index("method").reindex([m for m in ORDER if m in set(table.method)])
    cols = [c for c in t.columns if c.startswith("acc")]
    fig, ax = plt.subplots(figsize=(8.5, 3.6))
    w = 0.8 / len(cols)
    x = np.arange(len(t))
    for j, c in enumerate(cols):
        ax.bar(x + (j - (len(cols) - 1) / 2) * w, t[c], w, label="all regions" if c == "acc" else c[4:],
               color=[COLORS[m] for m in t.index], alpha=1.0 - 0.3 * j, edgecolor="k", linewidth=0.4)
    for k, v in enumerate(t["acc"]):
        ax.text(x[k] - (len(cols) - 1) / 2 * w, v + 1, f"{v:.0f}", ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([m.replace(", ", ",\n") for m in t.index], fontsize=8)
    ax.set_ylabel("region Acc@1 (%)")
    ax.set_ylim(0, 105)
    ax.axhline(100 / 20, color="k", lw=0.6, ls=":")
    ax.set_title(f"Region category retrieval, 20 classes{title_extra} (bars: all / small / large objects)")
    return fig, ax


def fig2_referring(df):
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    inv = df[df.alpha.notna()]
    ax.plot(inv.alpha, inv.acc, "o-", color=COLORS["MaskInversion"], label="MaskInversion")
    for name, ls in (("masked crop", "--"), ("patch pooling", "-."), ("global", ":")):
        v = float(df.loc[df.method == name, "acc"].iloc[0])
        ax.axhline(v, ls=ls, color=COLORS[name], label=f"{name} ({v:.0f})")
    ax.set_xlabel("context weight α")
    ax.set_ylabel("referring Acc@1 (%), 2 candidates")
    ax.set_ylim(0, 105)
    ax.set_xticks(list(inv.alpha))
    ax.set_title("Context variant: which twin? (left/right of the anchor)")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def fig3_steps(ex):
    steps = sorted(ex["maps"])
    n = len(ex["pick"])
    fig = plt.figure(figsize=(2.0 * (len(steps) + 1) + 3.6, 2.0 * n))
    gs = fig.add_gridspec(n, len(steps) + 2, width_ratios=[1] * (len(steps) + 1) + [1.9])
    for r in range(n):
        ax = fig.add_subplot(gs[r, 0])
        ax.imshow(_rgb(ex["images"][r]))
        ax.contour(ex["masks"][r], levels=[0.5], colors="w", linewidths=0.8)
        ax.set_axis_off()
        if r == 0:
            ax.set_title("image + mask", fontsize=8)
        for c, s in enumerate(steps):
            ax = fig.add_subplot(gs[r, c + 1])
            ax.imshow(ex["maps"][s][r], cmap="jet", vmin=0, vmax=1, rasterized=True)
            ax.contour(ex["masks"][r], levels=[0.5], colors="w", linewidths=0.8)
            ax.set_axis_off()
            if r == 0:
                ax.set_title("z0 (step 0)" if s == 0 else f"step {s}", fontsize=8)
    ax = fig.add_subplot(gs[:, -1])
    k = np.arange(len(ex["dice_curve"]))
    ax.plot(k, ex["dice_curve"], "o-", color=COLORS["MaskInversion"], label="mean soft Dice")
    ax.fill_between(k, ex["dice_q"][0], ex["dice_q"][1], color=COLORS["MaskInversion"], alpha=0.2, label="25-75%")
    ax.set_xlabel("optimisation step")
    ax.set_ylabel("soft Dice(E, mask)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.set_title("map vs mask over the steps", fontsize=9)
    fig.suptitle("LeGrad map of the token during MaskInversion (white: query mask)", fontsize=10)
    return fig, ax


def fig4_mask_quality(df):
    fig, ax = plt.subplots(figsize=(6.5, 3.3))
    x = np.arange(len(df))
    ax.bar(x - 0.2, df["MaskInversion"], 0.4, color=COLORS["MaskInversion"], label="MaskInversion")
    ax.bar(x + 0.2, df["masked crop"], 0.4, color=COLORS["masked crop"], label="masked crop")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{m}\n(area x{a:.2f})" for m, a in zip(df["mask"], df["area / GT area"])], fontsize=8)
    ax.set_ylabel("region Acc@1 (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    ax.set_title("Mask quality: GT vs eroded / dilated / box masks")
    return fig


def fig5_timing(summary, max_diff):
    med = summary["median"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.3))
    a1.plot(med.index, med["naive_s"], "o-", color="#555555", label="naive double backprop")
    a1.plot(med.index, med["decomposed_s"], "o-", color=COLORS["MaskInversion"], label="gradient decomposition")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("masks per image")
    a1.set_ylabel("wall time of 10 steps (s)")
    a1.legend(fontsize=8)
    a1.set_title(f"Time per image (max map difference {max_diff:.1e})", fontsize=9)
    a2.plot(med.index, med["ratio"], "o-", color=COLORS["MaskInversion"])
    a2.axhline(1.0, color="k", lw=0.6, ls=":")
    a2.set_xscale("log")
    a2.set_xlabel("masks per image")
    a2.set_ylabel("decomposed / naive (median of paired runs)")
    a2.set_title("Paired time ratio", fontsize=9)
    from lib.common import plain_log_labels

    plain_log_labels(a1)
    plain_log_labels(a2, y=False)
    return fig


def fig6_backbones(df):
    fig, ax = plt.subplots(figsize=(6.5, 3.3))
    for m in ("MaskInversion", "patch pooling", "masked crop", "global"):
        ax.plot(df["vision params"], df[m], "o-", color=COLORS[m], label=m)
    ax.set_xscale("log")
    ax.set_xlabel("vision tower parameters")
    ax.set_ylabel("region Acc@1 (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    ax.set_title("Backbone size (tiny CLIPs trained here)")
    return fig
