"""The notebook's figures (matplotlib, the suite's style)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def show(fig, paths=None):
    plt.show()
    return paths


def fig_task_if(f1: dict):
    df, st = f1["df"], f1["stats"]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, col, name in zip(axes, ("full", "surrogate", "first_order"),
                             ("task-IF (full total Hessian)", "task-IF (surrogate, no 3rd order)", "first-order IF (J = I)")):
        c = np.where(df.noisy, "tab:red", "tab:blue")
        ax.scatter(df.actual, df[col], c=c, s=18)
        lo, hi = df.actual.min(), df.actual.max()
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_xlabel("actual change of meta-test loss (LOTO)")
        ax.set_ylabel("predicted change")
        ax.set_title(f"{name}\nPearson {st[col]['pearson']:.3f}, Spearman {st[col]['spearman']:.3f}", fontsize=9)
    if df.noisy.any():  # the sinusoid tasks have no label noise
        axes[0].scatter([], [], c="tab:red", s=18, label="label-shuffled task")
        axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig, axes


def fig_cost(f1: dict):
    """Left: interleaved wall-clock of all-task IF and LOTO; right: their counted work (log scale)."""
    c, counts = f1["cost"], f1["counts"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [1, 2.6]})
    secs = [c["if_seconds"], c["loto_seconds"]]
    axes[0].bar(["all-task IF", "LOTO"], secs, color=["tab:blue", "tab:gray"])
    for xi, v in enumerate(secs):
        axes[0].text(xi, v, f"{v:.2f} s", ha="center", va="bottom", fontsize=7)
    axes[0].set_ylabel("wall-clock (s), interleaved")
    axes[0].set_title(f"time ratio {c['time_ratio']:.3f}", fontsize=9)
    rows = [r for r in counts.index if not r.startswith("seconds")]
    x = np.arange(len(rows))
    for off, col, color in ((-0.2, "all-task IF", "tab:blue"), (0.2, "LOTO", "tab:gray")):
        vals = counts.loc[rows, col].astype(float).values
        axes[1].bar(x + off, np.maximum(vals, 0.5), 0.4, color=color, label=col)
        for xi, v in zip(x + off, vals):
            axes[1].text(xi, max(v, 0.5) * 1.15, f"{int(v)}", ha="center", fontsize=6)
    axes[1].set_xticks(x, [r.replace(" (", "\n(") for r in rows], fontsize=6)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("count (0 drawn at 0.5)")
    axes[1].legend(fontsize=8)
    axes[1].set_title(f"counted work; inner-solve ratio {c['solve_ratio']:.4f}", fontsize=9)
    fig.tight_layout()
    return fig, axes


def fig_cleaning(f3: dict):
    df = f3["df"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, lab in zip(axes, ("test_loss", "test_acc"), ("meta-test query loss", "meta-test accuracy")):
        for name, g in df.groupby("method"):
            agg = g.groupby("m")[col].agg(["mean", "std"]).reset_index()
            xs = np.concatenate([[0], agg.m])
            ys = np.concatenate([[f3["base"][col]], agg["mean"]])
            ax.plot(xs, ys, marker="o", label=name)
            if name == "random":
                sd = np.concatenate([[0], agg["std"].fillna(0)])
                ax.fill_between(xs, ys - sd, ys + sd, alpha=0.2)
        ax.set_xlabel("tasks removed")
        ax.set_ylabel(lab)
    axes[0].legend(fontsize=8)
    axes[0].set_title("harmful-task removal (retrained, warm-started)", fontsize=9)
    fig.tight_layout()
    return fig, axes


def fig_instance(f4: dict):
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for name, (fpr, tpr) in f4["rocs"].items():
        axes[0].plot(fpr, tpr, label=f"{name} ({f4['metrics'][name]['auroc']:.2f})")
        pc = f4["metrics"][name]["prec_curve"]
        axes[1].plot(np.arange(1, len(pc) + 1), pc, label=name)
    axes[0].plot([0, 1], [0, 1], "k:", lw=0.8)
    axes[0].set_xlabel("false-positive rate")
    axes[0].set_ylabel("true-positive rate")
    axes[0].legend(fontsize=7)
    axes[0].set_title("ROC, flipped support labels (AUROC)", fontsize=9)
    axes[1].axvline(f4["k"], color="k", ls=":", lw=0.8)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("k (points inspected)")
    axes[1].set_ylabel("precision@k")
    loo = f4["loo"]
    axes[2].scatter(loo.actual_own, loo.pred_own, c=np.where(loo.flipped, "tab:red", "tab:blue"), s=18)
    lo, hi = loo.actual_own.min(), loo.actual_own.max()
    axes[2].plot([lo, hi], [lo, hi], "k--", lw=0.8)
    axes[2].set_xlabel("actual change of own query loss (instance-LOO)")
    axes[2].set_ylabel("instance-IF prediction")
    axes[2].set_title(f"instance-LOO, Pearson {f4['loo_corr']['own_pearson']:.3f} (red: flipped)", fontsize=9)
    fig.tight_layout()
    return fig, axes


def fig_editing(f5):
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    names = list(f5.index)
    for ax, col, lab in zip(axes, ("train_query_acc", "test_acc"), ("meta-train query acc (clean tasks)", "meta-test acc")):
        vals = f5[col].values
        ax.bar(names, vals, color=["tab:gray", "tab:blue", "tab:green"])
        ax.set_ylim(vals.min() - 0.03, vals.max() + 0.02)
        ax.set_ylabel(lab)
    axes[0].set_title(f"remove top-{f5.attrs['m']} harmful points", fontsize=9)
    fig.tight_layout()
    return fig, axes


def fig_ihvp(f6: dict):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name in ("cg", "neumann"):
        d = f6[name]
        axes[0].plot(d["iters"], d["rel_err"], label=name.upper() if name == "cg" else "Neumann")
        axes[1].plot(d["iters"], d["pearson"], label=name.upper() if name == "cg" else "Neumann")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("iterations / Neumann terms")
        ax.legend(fontsize=8)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("relative error of task-IF vector")
    axes[1].set_ylabel("Pearson r with exact task-IF")
    axes[1].axhline(0.99, color="k", ls=":", lw=0.8)
    axes[1].set_title(f"eta = 1/lambda_max = {f6['eta']:.3g}, lambda_min = {f6['eig_min']:.3g}", fontsize=9)
    fig.tight_layout()
    return fig, axes
