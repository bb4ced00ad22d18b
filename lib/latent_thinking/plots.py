"""Figures of the latent-thinking notebook (matplotlib, the suite's style)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

COL = {"correct": "tab:green", "incorrect": "tab:red"}


def fig1_pca(traj):
    fig, axes = plt.subplots(1, len(traj), figsize=(4.2 * len(traj), 3.8), squeeze=False)
    for ax, q in zip(axes[0], traj):
        for xy, ok in zip(q["xy"], q["correct"]):
            c = COL["correct" if ok else "incorrect"]
            ax.plot(xy[:, 0], xy[:, 1], "-", color=c, alpha=0.6, lw=1)
            ax.plot(xy[0, 0], xy[0, 1], "o", color=c, ms=3)
            ax.plot(xy[-1, 0], xy[-1, 1], "*", color=c, ms=8)
        ax.set_title(f"{q['question']}  (answer {q['truth']})", fontsize=9)
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    axes[0][0].plot([], [], color=COL["correct"], label="correct trajectory")
    axes[0][0].plot([], [], color=COL["incorrect"], label="incorrect trajectory")
    axes[0][0].legend(fontsize=8, loc="best")
    fig.suptitle("Latent trajectories h_1..h_T (o start, * end), PCA per question")
    fig.tight_layout()
    return fig


def fig2_metrics(df):
    cols = ["entropy", "effective rank", "anisotropy", "TwoNN dimension"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    for ax, c in zip(axes, cols):
        for g, sub in df.groupby("group"):
            ax.plot(sub["step"], sub[c], "o-", color=COL[g], label=g, ms=3)
        ax.set_xlabel("latent step t")
        ax.set_title(c)
    axes[0].legend(fontsize=8)
    fig.suptitle("Representation metrics per latent step, correct vs incorrect trajectories")
    fig.tight_layout()
    return fig


def fig3_auc(df):
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for task, sub in df.groupby("task"):
        ax.plot(sub["steps used"], sub["AUC"], "o-", label=task)
    ax.axhline(0.5, color="gray", ls=":", lw=1)
    ax.set_xlabel("latent steps used by the LRM (k)")
    ax.set_ylabel("ROC-AUC on held-out questions")
    ax.set_title("Correctness is decodable from latent thoughts")
    ax.legend()
    fig.tight_layout()
    return fig, ax


def fig4_methods(df):
    tasks = list(dict.fromkeys(df["task"]))
    methods = list(dict.fromkeys(df["method"]))
    fig, ax = plt.subplots(figsize=(8.5, 3.8))
    w = 0.8 / len(methods)
    for j, m in enumerate(methods):
        sub = df[df["method"] == m].set_index("task").loc[tasks]
        x = np.arange(len(tasks)) + (j - len(methods) / 2 + 0.5) * w
        ax.bar(x, sub["accuracy"], w, yerr=[sub["accuracy"] - sub["lo"], sub["hi"] - sub["accuracy"]], label=m,
               capsize=2)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("answer accuracy")
    ax.set_title("Selection among the same N candidates (bars: 95% bootstrap CI)")
    ax.legend(fontsize=7, ncol=3, loc="lower right")
    fig.tight_layout()
    return fig


def fig5_transfer(df):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for ax, val, fmt in zip(axes, ("AUC", "LTO gain"), (".2f", "+.3f")):
        piv = df.pivot(index="LRM", columns="test task", values=val)
        im = ax.imshow(piv.values, cmap="viridis", aspect="auto")
        ax.set_xticks(range(piv.shape[1]), piv.columns)
        ax.set_yticks(range(piv.shape[0]), piv.index)
        for i in range(piv.shape[0]):
            for j in range(piv.shape[1]):
                ax.text(j, i, format(piv.values[i, j], fmt), ha="center", va="center", color="w", fontsize=9)
        ax.set_title(val + (" (LTO - base accuracy)" if val == "LTO gain" else " on the test task"))
        fig.colorbar(im, ax=ax)
    fig.suptitle("LRM transfer across tasks")
    fig.tight_layout()
    return fig


def fig6_depth(df):
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(df["T"], df["base"], "o-", label="Base")
    ax.plot(df["T"], df["majority"], "s-", label="Majority voting")
    ax.plot(df["T"], df["LTO"], "^-", label="LTO w. LRM")
    for _, r in df.iterrows():
        ax.annotate(f"gain {r['gain']:+.3f}", (r["T"], r["LTO"]), textcoords="offset points", xytext=(4, 6),
                    fontsize=8)
    ax.set_xlabel("recurrent depth T at test time")
    ax.set_ylabel("answer accuracy")
    ax.set_title("LTO gain vs thinking depth")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig7_n_beta(dn, db, ref):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for c in dn.columns[1:]:
        axes[0].plot(dn["N"], dn[c], "o-", label=c, ms=3)
    axes[0].set_xlabel("number of candidates N")
    axes[0].set_ylabel("expected accuracy")
    axes[0].set_title("Accuracy vs N")
    axes[0].legend(fontsize=8)
    axes[1].semilogx(db["beta"], db["LTO w. LRM"], "o-", label="LTO w. LRM")
    for name, ls in (("Base", ":"), ("Best-of-N w. LRM", "--"), ("Majority voting", "-.")):
        axes[1].axhline(ref[name], ls=ls, color="gray", label=name)
    axes[1].axvspan(1e-3, 1e-1, color="tab:blue", alpha=0.08, label="paper's range")
    axes[1].set_xlabel("beta")
    axes[1].set_title("Accuracy vs beta (beta->0: best-of-N, beta->inf: base)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig8_toy(res):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    N = len(res["target"])
    x = np.arange(N)
    ax.bar(x - 0.27, res["target"], 0.27, label="pi_r = softmax(r / beta)")
    ax.bar(x, res["accept_reject"], 0.27, label=f"Algorithm 1 (TV {res['tv_accept_reject']:.3f})")
    ax.bar(x + 0.27, res["sweep"], 0.27, label=f"in-order sweep (TV {res['tv_sweep']:.3f})")
    ax.set_xticks(x, [f"z{i + 1}\nr={r:.2f}" for i, r in enumerate(res["rewards"])])
    ax.set_ylabel(f"frequency over {res['runs']} runs")
    ax.set_title(f"Accepted candidate vs target (beta = {res['beta']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
