"""Figures of the FastMix notebook (the suite's style is set by config())."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

COLORS = {"uniform": "0.5", "FastMix (head)": "C0", "FastMix (full)": "C2", "RegMix-lite": "C3"}


def loss_vs_cost(summary, title):
    """F1 (paper Fig. 1): target test loss of the model trained on each mixture vs its search cost."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for m, r in summary.iterrows():
        x = max(r["proxy_steps"], 1)
        ax.scatter([x], [r["target_loss"]], s=60, color=COLORS.get(m, "k"), label=f"{m} ({int(r['proxy_steps'])} steps)",
                   zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("search cost: proxy optimizer steps (log; uniform plotted at 1)")
    ax.set_ylabel("target test loss (nats/token)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def mixtures_and_losses(summary, long, names, title):
    """F2 (pre-training table): mixture per method and held-out loss per domain."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    methods = list(summary.index)
    w = 0.8 / len(methods)
    xs = np.arange(len(names))
    for j, m in enumerate(methods):
        a1.bar(xs + j * w, summary.loc[m, [f"a[{s}]" for s in names]].to_numpy(dtype=float), w, label=m,
               color=COLORS.get(m))
    a1.set_xticks(xs + 0.4 - w / 2, names, rotation=30, ha="right")
    a1.set_ylabel("mixture weight alpha_i")
    a1.set_title("Mixtures found")
    a1.legend(fontsize=7)
    piv = long.pivot(index="domain", columns="method", values="loss")[methods]
    doms = list(piv.index)
    xs = np.arange(len(doms))
    for j, m in enumerate(methods):
        a2.bar(xs + j * w, piv[m].to_numpy(), w, color=COLORS.get(m))
    a2.set_xticks(xs + 0.4 - w / 2, doms, rotation=30, ha="right")
    a2.set_ylabel("held-out loss (nats/token)")
    a2.set_title("Model trained on each mixture")
    fig.suptitle(title)
    return fig


def trajectories(traj, title):
    """F3: softmax(z) vs inner step."""
    methods = list(dict.fromkeys(traj.method))
    fig, axes = plt.subplots(1, len(methods), figsize=(5 * len(methods), 3.4), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], methods):
        d = traj[traj.method == m]
        for s in dict.fromkeys(d.source):
            e = d[d.source == s]
            ax.plot(e.step, e.alpha, marker=".", label=s)
        ax.set_title(m)
        ax.set_xlabel("inner step t")
    axes[0][0].set_ylabel("alpha_i = softmax(z)_i")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title)
    return fig


def lemma(df, title):
    """F4: relative gap between the two estimators' mean gradients vs number of Monte-Carlo batches."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.loglog(df.n_batches, df.rel_diff, "o-", label="sampled vs weighted")
    ax.loglog(df.n_batches, df.err_sampled, "s--", label="alpha-sampled vs exact")
    ax.loglog(df.n_batches, df.err_weighted, "^--", label="alpha-weighted vs exact")
    n = df.n_batches.to_numpy(dtype=float)
    ax.loglog(n, df.rel_diff.iloc[0] * np.sqrt(n[0] / n), "k:", lw=1, label="1/sqrt(n)")
    ax.axhline(0.02, color="r", lw=0.8, label="2% (claim C1)")
    ax.set_xlabel("Monte-Carlo batches")
    ax.set_ylabel("relative L2 difference of mean LM-head gradients")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return fig
