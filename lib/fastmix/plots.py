"""Figures of the FastMix notebook (the suite's style is set by config())."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

COLORS = {"uniform": "0.5", "FastMix (head)": "C0", "FastMix (full)": "C2", "RegMix-lite": "C3", "DoReMi": "C4"}


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


def ablation(abl, title):
    """F5 (the paper's ablation tables): target test loss of each variant's mixture, one panel per knob; the run's own
    setting as a dashed line."""
    knobs = [k for k in ("n1", "n2", "lam", "beta") if (abl.knob == k).any()]
    base = abl[abl.knob == "base"].iloc[0]
    fig, axes = plt.subplots(1, len(knobs), figsize=(3.2 * len(knobs), 3.2), squeeze=False, sharey=True)
    for ax, k in zip(axes[0], knobs):
        d = pd.concat([abl[abl.knob == k], abl[abl.knob == "base"]]).assign(v=lambda e: e[k].astype(float))
        d = d.sort_values("v")
        ax.bar([f"{v:g}" for v in d.v], d.target_loss, color=["C0" if r.knob == k else "0.6" for r in d.itertuples()])
        ax.axhline(base.target_loss, color="k", ls="--", lw=0.8)
        ax.set_xlabel(k + (" (grey: the run's value)" if k == knobs[0] else ""))
        lo, hi = abl.target_loss.min(), abl.target_loss.max()
        ax.set_ylim(lo - 0.6 * (hi - lo + 1e-3), hi + 0.3 * (hi - lo + 1e-3))
    axes[0][0].set_ylabel("target test loss (nats/token)")
    fig.suptitle(title)
    return fig


def robustness(rob, names, title):
    """F6 (initialisation study): target test loss per run (left) and the mixtures found (right) for FastMix's random
    z-inits and RegMix-lite's seeds."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw=dict(width_ratios=[1, 2.2]))
    methods = list(dict.fromkeys(rob.method))
    for j, m in enumerate(methods):
        d = rob[rob.method == m]
        a1.scatter(np.full(len(d), j) + np.linspace(-0.12, 0.12, len(d)), d.target_loss, color=f"C{j * 3}", zorder=3)
        a1.errorbar([j + 0.3], [d.target_loss.mean()], yerr=[d.target_loss.std(ddof=1)], fmt="k_", capsize=4)
        A = np.stack(d.alpha.to_numpy())
        xs = np.arange(len(names)) + (j - 0.5) * 0.4
        a2.boxplot(A, positions=xs, widths=0.35, patch_artist=True, boxprops=dict(facecolor=f"C{j * 3}", alpha=0.5),
                   medianprops=dict(color="k"), showfliers=True)
    a1.set_xticks(range(len(methods)), [m.replace(" (", "\n(") for m in methods])
    a1.set_xlim(-0.5, len(methods) - 0.3)
    a1.set_ylabel("target test loss (nats/token)")
    a1.set_title("per run (bar: mean +- std)")
    a2.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    a2.set_ylabel("mixture weight alpha_i")
    a2.set_title("mixtures across runs")
    a2.legend([plt.Rectangle((0, 0), 1, 1, color=f"C{j * 3}", alpha=0.5) for j in range(len(methods))], methods,
              fontsize=7)
    fig.suptitle(title)
    return fig


def target_b(table, names, title):
    """F7 (the paper's SFT table): per method, the evaluation model's answer-token loss on target B's test questions
    and on the transfer cloze (left), and the mixture found with target B as the search signal (right)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw=dict(width_ratios=[1, 1.6]))
    methods = list(table.index)
    xs = np.arange(len(methods))
    for j, (col, lab) in enumerate((("qa_loss", "target B: arithmetic QA"), ("cloze_loss", "transfer: docstring cloze"))):
        a1.bar(xs + (j - 0.5) * 0.38, table[col].to_numpy(dtype=float), 0.38, label=lab, color=f"C{j}",
               edgecolor=[COLORS.get(m, "k") for m in methods], linewidth=1.5)
    a1.set_xticks(xs, [m.replace(" (", "\n(") for m in methods], fontsize=7)
    a1.set_ylabel("answer-token loss (nats/token)")
    a1.set_title("Model trained on each mixture")
    a1.legend(fontsize=7)
    w = 0.8 / len(methods)
    ys = np.arange(len(names))
    for j, m in enumerate(methods):
        a2.bar(ys + j * w, table.loc[m, [f"a[{s}]" for s in names]].to_numpy(dtype=float), w, label=m,
               color=COLORS.get(m, f"C{j + 5}"))
    a2.set_xticks(ys + 0.4 - w / 2, names, rotation=30, ha="right")
    a2.set_ylabel("mixture weight alpha_i")
    a2.set_title("Mixtures (search signal: target B)")
    a2.legend(fontsize=7)
    fig.suptitle(title)
    return fig
