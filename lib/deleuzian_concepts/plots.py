"""Figures 1-6 (matplotlib, the suite's style)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

METHODS = ["ours (diffs+skew)", "TopK-SAE", "Vanilla SAE", "FastICA", "PCA", "random", "LDA (supervised)"]
# seaborn's "colorblind" palette, its 10 colours written out (no seaborn import needed here)
_PAL = ["#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9"]
COLORS = {"ours (diffs+skew)": _PAL[3], "TopK-SAE": _PAL[0], "Vanilla SAE": _PAL[9], "FastICA": _PAL[2],
          "PCA": _PAL[4], "random": "0.6", "LDA (supervised)": "0.2", "acts+KMeans": _PAL[1],
          "acts+TopK-SAE": _PAL[0], "diffs+KMeans": _PAL[8], "diffs+TopK-SAE": _PAL[5]}


def fig1_main(df, avg_rank):
    sets = list(dict.fromkeys(df.set))
    rows = [(s, t) for s in sets for t in dict.fromkeys(df[df.set == s].task)]
    fig, ax = plt.subplots(figsize=(11, 3.9))
    w = 0.8 / len(METHODS)
    x = np.arange(len(rows))
    for j, m in enumerate(METHODS):
        vals = [float(df[(df.set == s) & (df.task == t) & (df.method == m)].probe_loss.iloc[0]) for s, t in rows]
        lab = m if m not in avg_rank else f"{m} (avg rank {avg_rank[m]:.2f})"
        ax.bar(x + (j - (len(METHODS) - 1) / 2) * w, vals, w, color=COLORS[m], label=lab,
               hatch="//" if m.startswith("LDA") else None, edgecolor="white", linewidth=0.3)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{t}\n({s.split(':')[0]})" for s, t in rows], fontsize=7.5)
    ax.set_ylabel("best one-concept probe loss\n(test cross-entropy, nats)")
    ax.set_title("Probe loss per task, same k for every unsupervised method (lower is better; LDA is supervised)")
    ax.legend(ncol=4, fontsize=7.5, loc="upper left", bbox_to_anchor=(0, -0.2))
    return fig, ax


def fig2_ablation(abl):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    sets = list(dict.fromkeys(abl.set))
    configs = list(dict.fromkeys(abl.method))
    w = 0.8 / len(configs)
    for ax, col, lab in ((axes[0], "probe_loss", "mean probe loss (nats)"), (axes[1], "eff_rank", "effective rank")):
        for j, m in enumerate(configs):
            vals = [float(abl[(abl.set == s) & (abl.method == m)][col].iloc[0]) for s in sets]
            ax.bar(np.arange(len(sets)) + (j - (len(configs) - 1) / 2) * w, vals, w, color=COLORS[m], label=m)
        ax.set_xticks(np.arange(len(sets)))
        ax.set_xticklabels(sets, fontsize=8)
        ax.set_ylabel(lab)
    axes[0].set_title("Quality: {acts, diffs} x {KMeans, TopK-SAE} (+ skew)")
    axes[1].set_title("Diversity of the concept matrix")
    axes[1].legend(fontsize=7.5)
    fig.tight_layout()
    return fig


def fig3_kcurve(kc, set_name):
    fig, ax = plt.subplots(figsize=(6.2, 3.6))
    for m in [m for m in dict.fromkeys(kc.method) if not m.startswith("LDA")]:
        d = kc[kc.method == m]
        ax.plot(d.k, d.probe_loss, "o-", color=COLORS[m], label=m)
    lda = kc[kc.method.str.startswith("LDA")]
    if len(lda):
        ax.axhline(float(lda.probe_loss.iloc[0]), color=COLORS["LDA (supervised)"], ls="--", label="LDA (supervised)")
    ax.set_xscale("log", base=2)
    ks = sorted(kc.k.dropna().unique())
    ax.set_xticks(ks)
    ax.set_xticklabels([str(int(k)) for k in ks])
    ax.set_xlabel("number of concepts k")
    ax.set_ylabel("mean probe loss (nats)")
    ax.set_title(f"Probe loss vs number of concepts ({set_name})")
    ax.legend(fontsize=8)
    return fig, ax


def fig4_mppc(mp):
    fig, ax = plt.subplots(figsize=(6.2, 3.4))
    g = mp.groupby("method", sort=False).mppc
    means, lo, hi = g.mean(), g.min(), g.max()
    x = np.arange(len(means))
    ax.bar(x, means, color=[COLORS[m] for m in means.index])
    ax.errorbar(x, means, yerr=[means - lo, hi - means], fmt="none", ecolor="k", capsize=4, lw=0.8)
    for i, v in enumerate(means):
        ax.text(i, v + 0.02, f"{v:.2f}", ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels(means.index, fontsize=8)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("MPPC (mean max |Pearson r|)")
    ax.set_title("Consistency across seeds (pairs of runs; bars: min-max over pairs)")
    return fig, ax


def fig5_steering(st):
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for side, ls, col in (("add to other topics", "-", COLORS["ours (diffs+skew)"]),
                          ("subtract from the topic", "--", COLORS["TopK-SAE"])):
        d = st[st.side == side]
        for _, dt in d.groupby("topic"):
            ax.plot(dt.alpha, 100 * dt.fraction, ls, color=col, alpha=0.25, lw=0.8)
        m = d.groupby("alpha").fraction.mean()
        ax.plot(m.index, 100 * m.values, ls + "o", color=col, lw=2,
                label=("+α c on sentences of other topics" if side.startswith("add") else "−α c on sentences of the topic"))
    ax.set_xlabel("steering strength α (x + α c, c = the topic's concept)")
    ax.set_ylabel("10 nearest neighbours with the topic (%)")
    ax.set_ylim(-3, 103)
    ax.set_title("Steering with a concept vector (thin lines: the 6 topics)")
    ax.legend(fontsize=8)
    return fig, ax


def fig6_examples(text_ex, digit_ex, max_chars: int = 60):
    n_t, n_d = len(text_ex), len(digit_ex)
    n_img = len(digit_ex[0]["items"]) if n_d else 0
    fig = plt.figure(figsize=(12, 0.9 + 1.1 * max(n_t, n_d)))
    gs = fig.add_gridspec(max(n_t, n_d), 2 + n_img, width_ratios=[5.2, 0.3] + [0.55] * n_img)
    for r, ex in enumerate(text_ex):
        ax = fig.add_subplot(gs[r, 0])
        ax.axis("off")
        lines = [f"concept {ex['concept']} (probe's pick for {ex['label']}):"] + \
                [f"  {i + 1}. {t[:max_chars]}" for i, t in enumerate(ex["items"])]
        ax.text(0, 1, "\n".join(lines), va="top", ha="left", fontsize=7.5, family="monospace",
                transform=ax.transAxes)
    for r, ex in enumerate(digit_ex):  # one axes per row: the images side by side, one pixel column apart
        imgs = [np.asarray(img, float) for img in ex["items"]]
        h = imgs[0].shape[0]
        gap = np.full((h, 1), np.nan)
        row = np.concatenate([x for img in imgs for x in (img, gap)][:-1], axis=1)
        ax = fig.add_subplot(gs[r, 2:])
        ax.imshow(np.ma.masked_invalid(row), cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_ylabel(f"c{ex['concept']}\n{ex['label']}", fontsize=7)
        for spine in ax.spines.values():
            spine.set_visible(False)
    fig.suptitle("Top-activating test examples of concepts found by the method (text: tiny GPT-2; images: digit CNN)",
                 fontsize=10)
    return fig
