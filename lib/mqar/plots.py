"""Figures of the MQAR notebook (the suite's style; saved through lib.common.save_figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .data import GROUPS

COLORS = {"none": "#999999", "MQAR": "#e6550d", "MQAR w/o decoders": "#fdae6b", "MQAR w/o discriminator": "#fdd0a2",
          "MQAR gender-only": "#a63603", "INLP": "#3182bd", "SentenceDebias": "#31a354"}
MAIN = ["none", "INLP", "SentenceDebias", "MQAR"]


def _c(m):
    return COLORS.get(m, "#636363")


def fig1_bias(bias, wb, title):
    """SS-T, ICAT-T, CP-T per attribute group (grouped bars per method) and WB-T |Diff| per method."""
    fig, axes = plt.subplots(1, 4, figsize=(13.5, 3.3), gridspec_kw={"width_ratios": [3, 3, 3, 2]})
    methods = [m for m in MAIN if m in set(bias.method)]
    x, w = np.arange(len(GROUPS)), 0.8 / len(methods)
    for ax, col, lab in zip(axes[:3], ("SS", "ICAT", "CP"), ("SS-T (50 ideal)", "ICAT-T (100 ideal)",
                                                           "CP-T (50 ideal)")):
        for k, m in enumerate(methods):
            v = bias[bias.method == m].set_index("group").loc[list(GROUPS), col]
            ax.bar(x + (k - (len(methods) - 1) / 2) * w, v, w, color=_c(m), edgecolor="k", lw=0.4, label=m)
        if col != "ICAT":
            ax.axhline(50, color="k", ls="--", lw=0.8)
        ax.set_xticks(x)
        ax.set_xticklabels(GROUPS, fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel(f"{lab} (%)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(methods), fontsize=8,
               frameon=False)
    wm = wb.set_index("method").loc[methods]
    axes[3].bar(np.arange(len(methods)), wm["diff"], color=[_c(m) for m in methods], edgecolor="k", lw=0.4)
    axes[3].set_xticks(np.arange(len(methods)))
    axes[3].set_xticklabels(methods, rotation=30, fontsize=7, ha="right")
    axes[3].set_ylabel("WB-T |pro - anti| (acc. points)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig, axes[0]


def fig2_utility(tasks, title):
    """Task accuracy on the clean test sets per method, with the change against the undebiased model."""
    t = tasks[tasks.split == "test"].pivot(index="method", columns="task", values="acc")
    order = [m for m in COLORS if m in t.index]
    t = t.loc[order]
    fig, ax = plt.subplots(figsize=(8.5, 3.3))
    x, w = np.arange(len(order)), 0.38
    for k, task in enumerate(["sentiment", "abusive"]):
        v = t[task].to_numpy()
        ax.bar(x + (k - .5) * w, v, w, color=[_c(m) for m in order], edgecolor="k", lw=0.4,
               hatch=None if k == 0 else "//", alpha=1 if k == 0 else .6)
        for i, val in enumerate(v):
            ax.text(x[i] + (k - .5) * w, val + 1, f"{val - t.loc['none', task]:+.1f}", ha="center", fontsize=6.5)
    ax.set_xticks(x)
    ax.set_xticklabels(order, rotation=20, fontsize=7.5, ha="right")
    ax.set_ylim(0, 112)
    ax.set_ylabel("test accuracy (%); label: change vs none")
    ax.set_title(title + "  (plain: sentiment, hatched: abusive)", fontsize=9)
    fig.tight_layout()
    return fig


def fig3_ablation(tasks, title):
    """AUC, FPED and FNED of the abusive-language head for the ablations, original and identity-swapped tests."""
    order = ["none", "MQAR", "MQAR w/o decoders", "MQAR w/o discriminator", "MQAR gender-only"]
    t = tasks[(tasks.task == "abusive")].set_index(["method", "split"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    x, w = np.arange(len(order)), 0.38
    for ax, col in zip(axes, ("AUC", "FPED", "FNED")):
        for k, split in enumerate(["test", "swapped"]):
            v = [t.loc[(m, split), col] for m in order]
            ax.bar(x + (k - .5) * w, v, w, color=[_c(m) for m in order], edgecolor="k", lw=0.4,
                   hatch=None if k == 0 else "//", alpha=1 if k == 0 else .6)
        ax.set_xticks(x)
        ax.set_xticklabels([m.replace("MQAR ", "") for m in order], rotation=25, fontsize=7.5, ha="right")
        ax.set_ylabel(f"{col} (%)" if col == "AUC" else f"{col} (sum of rate gaps, % points)")
    axes[0].set_title("plain: original test, hatched: identity-swapped", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fig4_attention(maps, title):
    """Attention of the last layer (mean over heads) for a gender-swapped pair, undebiased vs MQAR, and the
    difference between the twins."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.6))
    for row, m in zip(axes, ["none", "MQAR"]):
        d = maps[m]
        vmax = max(d["A"].max(), d["B"].max())
        for ax, M, toks, lab in ((row[0], d["A"], d["toks_a"], "sentence a"), (row[1], d["B"], d["toks_b"],
                                                                              "sentence b (swapped)")):
            ax.imshow(M, vmin=0, vmax=vmax, cmap="viridis", rasterized=True)
            ax.set_title(f"{m}: {lab}", fontsize=8)
            ax.set_xticks(range(len(toks)))
            ax.set_xticklabels([t.replace("Ġ", "") for t in toks], rotation=90, fontsize=6)
            ax.set_yticks(range(len(toks)))
            ax.set_yticklabels([t.replace("Ġ", "") for t in toks], fontsize=6)
        im = row[2].imshow(np.abs(d["A"] - d["B"]), cmap="magma", vmin=0, vmax=0.5, rasterized=True)
        row[2].set_title(f"{m}: |a - b|; mean ||A - B||_F over {d['n_pairs']} pairs = {d['diff_norm']:.3f}",
                         fontsize=7.5)
        fig.colorbar(im, ax=row[2], fraction=0.046)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fig5_efficiency(eff, title):
    """Parameters and interleaved latency of the backbone with and without MQAR's modules."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3))
    a1.bar(["backbone", "+ MQAR (inference)", "+ MQAR (training, with d1, D)"],
           [eff["backbone_params"], eff["backbone_params"] + eff["module_params"],
            eff["backbone_params"] + eff["module_train_params"]], color=["#999999", "#e6550d", "#fdae6b"])
    a1.set_ylabel("parameters")
    a1.tick_params(axis="x", labelsize=7)
    a1.set_title(f"+{eff['param_overhead']:.1f}% parameters at inference", fontsize=9)
    a2.bar(["backbone", "+ MQAR"], [eff["latency_base_ms"], eff["latency_mqar_ms"]], color=["#999999", "#e6550d"])
    a2.set_ylabel(f"forward latency (ms, batch {eff['batch']}, CPU)")
    a2.set_title(f"ratio {eff['latency_ratio']:.2f} (median of {eff['repeats']} interleaved)", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
