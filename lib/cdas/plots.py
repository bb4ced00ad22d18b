"""Figures of the CDAS notebook (the suite's style; saving through lib.common.save_figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

COLORS = {"CDAS": "#e6550d", "DiffMean": "#756bb1", "Lang.": "#3182bd", "DAS (CE)": "#31a354",
          "KLDAS (fwd KL)": "#fdae6b", "KLDAS (rev KL)": "#a1d99b", "unsteered": "#999999"}


def _c(m):
    return COLORS.get(m, "#636363")


def fig1_scores(table, title):
    """Grouped bars: steering score (report half) with tuned and unit factor, per method."""
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    x = np.arange(len(table))
    ax.bar(x - 0.2, table.tuned, 0.4, color=[_c(m) for m in table.method], edgecolor="k", lw=0.4,
           label="tuned factor")
    ax.bar(x + 0.2, table.unit, 0.4, color=[_c(m) for m in table.method], edgecolor="k", lw=0.4, alpha=0.45,
           hatch="//", label="unit factor (m = 1)")
    for k, (a, b) in enumerate(zip(table.tuned, table.unit)):
        ax.text(k - 0.2, a + 0.03, f"{a:.2f}", ha="center", fontsize=8)
        ax.text(k + 0.2, b + 0.03, f"{b:.2f}", ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels(table.method, fontsize=9)
    ax.set_ylim(0, 2.15)
    ax.set_ylabel("steering score (harmonic mean, 0-2)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    return fig, ax


def fig2_curves(curve, methods, title):
    """Concept, instruction, fluency and aggregate score vs multiplier."""
    keys = ("concept", "instruction", "fluency", "score")
    fig, axes = plt.subplots(1, 4, figsize=(12.5, 3.0), sharex=True)
    for ax, k in zip(axes, keys):
        for m in methods:
            c = curve[curve.method == m]
            ax.plot(c.mult, c[k], "o-", color=_c(m), label=m, ms=4)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("steering multiplier m")
        ax.set_title(k if k != "score" else "steering score")
        ax.set_ylim(-0.05, 2.05)
    axes[0].set_ylabel("judge score (0-2)")
    axes[-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fig3_bidirectional(bi, title):
    """Left: concept score on neutral prompts (elicitation, m = 1); right: concept-word rate on concept prompts
    (suppression, m = 1)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.2))
    x = np.arange(len(bi))
    cols = [_c(m) for m in bi.method]
    a1.bar(x, bi.elicit_concept, color=cols, edgecolor="k", lw=0.4)
    a1.axhline(1.0, ls="--", color="k", lw=0.7)
    a1.set_ylabel("concept score on x (0-2)")
    a1.set_title("elicitation with f+ (neutral prompts)")
    a2.bar(x, bi.suppress_rate, color=cols, edgecolor="k", lw=0.4)
    base = float(bi.suppress_rate.iloc[0])
    a2.axhline(0.5 * base, ls="--", color="k", lw=0.7)
    a2.set_ylabel("concept words per sentence on x_c")
    a2.set_ylim(0, 1.15)
    a1.set_ylim(0, 2.2)
    a2.set_title("suppression with f- (concept prompts)")
    for k, (r, f) in enumerate(zip(bi.suppress_rate, bi.suppress_fluency)):
        a2.text(k, r + 0.02, f"fluency {f:.2f}", ha="center", fontsize=7)
    for k, (r, f) in enumerate(zip(bi.elicit_concept, bi.elicit_fluency)):
        a1.text(k, r + 0.03, f"fluency {f:.2f}", ha="center", fontsize=7)
    for a in (a1, a2):
        a.set_xticks(x)
        a.set_xticklabels(bi.method, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig, a1


def fig4_losses(abl, title):
    fig, ax = plt.subplots(figsize=(7.0, 3.2))
    x = np.arange(len(abl))
    w = 0.27
    ax.bar(x - w, abl.tuned, w, color=[_c(m) for m in abl.method], edgecolor="k", lw=0.4, label="score, tuned m")
    ax.bar(x, abl.unit, w, color=[_c(m) for m in abl.method], edgecolor="k", lw=0.4, alpha=0.5, hatch="//",
           label="score, m = 1")
    ax.bar(x + w, abl.fluency, w, color="white", edgecolor=[_c(m) for m in abl.method], lw=1.2,
           label="fluency, m = 1")
    ax.set_xticks(x)
    ax.set_xticklabels(abl.method, fontsize=9)
    ax.set_ylim(0, 2.15)
    ax.set_ylabel("judge score (0-2)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def fig_kl(curve, fid, methods, title):
    """Concept score vs KL(unsteered || steered) along the multiplier grid (fidelity, C2)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for m in methods:
        c = curve[curve.method == m].sort_values("mult")
        k = fid[fid.method == m].set_index("mult").loc[c.mult, "kl"]
        ax.plot(k, c.concept, "o-", color=_c(m), label=m)
    ax.set_xscale("log")
    ax.axhline(1.0, ls="--", color="k", lw=0.7)
    ax.set_xlabel("KL(unsteered || steered), nats per token")
    ax.set_ylabel("concept score (0-2)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def fig_layers(df, title):
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    for m, g in df.groupby("method", sort=False):
        ax.plot(g.layer, g.tuned, "o-", color=_c(m), label=m)
    ax.set_xlabel("layer l")
    ax.set_ylabel("steering score, tuned")
    ax.set_ylim(0, 2.05)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def fig_refusal(ref, title):
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for r in ref.itertuples(index=False):
        ax.scatter(r.kl, 100 * r.suppression, s=60, color=_c(r.method), edgecolor="k", label=r.method)
    ax.set_xlabel("KL(unsteered || steered) on benign transcripts")
    ax.set_ylabel("refusals suppressed (%)")
    ax.set_xscale("log")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def fig_scale(df, title):
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.plot(df.params, df.gap, "o-", color=COLORS["CDAS"])
    for r in df.itertuples(index=False):
        ax.annotate(r.arch, (r.params, r.gap), fontsize=8)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("backbone parameters")
    ax.set_ylabel("CDAS - Lang. steering score")
    ax.set_title(title)
    return fig


def fig_backdoor(bd, title):
    """Left: backdoor rate (share of hostile completions on held-out triggered prompts) per method, unsteered first;
    right: utility drop on clean prompts vs KL(unsteered || steered) on clean transcripts (f-, m = 1)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.0, 3.4))
    x = np.arange(len(bd))
    a1.bar(x, 100 * bd.backdoor_rate, color=[_c(m) for m in bd.method], edgecolor="k", lw=0.4)
    for k, (r, a) in enumerate(zip(bd.backdoor_rate, bd.answered)):
        a1.text(k, 100 * r + 2, f"answered {100 * a:.0f}%", ha="center", fontsize=7)
    a1.set_xticks(x)
    a1.set_xticklabels(bd.method, fontsize=8)
    a1.set_ylim(0, 112)
    a1.set_ylabel("hostile completions on triggered prompts (%)")
    a1.set_title("backdoor rate under f- (m = 1)")
    for r in bd[bd.method != "unsteered"].itertuples(index=False):
        a2.scatter(max(r.kl, 1e-6), r.utility_drop, s=60, color=_c(r.method), edgecolor="k", label=r.method)
    a2.axhline(0, color="k", lw=0.6)
    a2.set_xscale("log")
    a2.set_xlabel("KL(unsteered || steered) on clean transcripts, nats per token")
    a2.set_ylabel("utility drop on clean prompts (points)")
    a2.set_title("fidelity and utility")
    a2.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig, a1
