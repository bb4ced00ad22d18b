"""The notebook's figures (matplotlib/seaborn in the suite's style); each function returns the Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

COLORS = {"REPPO": "C0", "PPO": "C1", "SAC (replay)": "C2", "PPO (matched updates)": "C3"}


def _panels(n: int, width: float = 4.2, height: float = 3.4):
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, axes[0]


def plot_learning_curves(curves, x: str = "steps"):
    """Deterministic-policy return against environment steps (or training seconds): mean over seeds (line) and
    the range over seeds (band, min to max); the seed counts are in the legend (one task) or in each panel's
    title (several tasks, whose seed counts differ: one shared legend names only the methods)."""
    table = curves.table
    envs = list(dict.fromkeys(table["env"]))
    fig, axes = _panels(len(envs))
    handles = {}

    def seeds(k):
        return f"{k} seed{'s' if k > 1 else ''}"

    for ax, env in zip(axes, envs):
        sub = table[table["env"] == env]
        counts = {}
        for algo, d in sub.groupby("algo", sort=False):
            c = COLORS.get(algo)
            k = counts[algo] = d["seed"].nunique()
            g = d.groupby("steps")
            m = g["return"].mean()
            xs = m.index.to_numpy() if x == "steps" else g["wall_s"].mean().to_numpy()
            (h,) = ax.plot(xs, m.values, color=c, marker="." if x != "steps" else None,
                           label=f"{algo} ({seeds(k)})" if len(envs) == 1 else algo)
            if k > 1:
                ax.fill_between(xs, g["return"].min().values, g["return"].max().values, color=c, alpha=0.18, lw=0)
            handles.setdefault(algo, h)
        if len(envs) == 1:
            ax.set_title(env)
        elif len(set(counts.values())) == 1:
            ax.set_title(f"{env} ({seeds(next(iter(counts.values())))} per method)")
        else:
            ax.set_title(f"{env} (" + ", ".join(f"{a}: {seeds(k)}" for a, k in counts.items()) + ")", fontsize=9)
        ax.set_xlabel("environment steps" if x == "steps" else "training wall-clock (s, mean over seeds; "
                      "evaluation excluded)")
        ax.set_ylabel("return (deterministic policy)")
    what = "environment steps" if x == "steps" else "wall-clock time"
    fig.suptitle(f"REPPO vs PPO: return against {what}\n(line: mean over seeds; band: min to max)", y=1.04)
    if len(envs) == 1:  # the lower right of a Pendulum panel is empty once learning starts
        axes[0].legend(handles=list(handles.values()), loc="lower right", fontsize=8)
        fig.tight_layout()
    else:
        fig.legend(handles=list(handles.values()), loc="lower center", ncol=min(len(handles), 3),
                   bbox_to_anchor=(0.5, -0.02), frameon=False)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_memory(mem):
    """Transitions stored and bytes held (ours, and the paper-scale accounting), and measured peak memory."""
    fig, axes = _panels(3, width=4.0)
    st = pd.concat([mem.storage[["stored_transitions", "storage_bytes"]], mem.paper_scale])
    colors = ["C0" if "REPPO" in m else "C1" if "PPO" in m else "C2" for m in st.index]
    hatches = ["//" if "paper" in m else "" for m in st.index]
    for ax, col, label in ((axes[0], "stored_transitions", "transitions stored"),
                           (axes[1], "storage_bytes", "bytes held (MB)")):
        vals = st[col] / (1e6 if col == "storage_bytes" else 1)
        bars = ax.barh(range(len(st)), vals, color=colors)
        for b, h in zip(bars, hatches):
            b.set_hatch(h)
        ax.set_yticks(range(len(st)), st.index)
        ax.set_xscale("log")
        ax.set_xlabel(label + " (log scale)")
        ax.invert_yaxis()
    axes[0].set_title("what each method stores")
    axes[1].set_title("hatched: paper scale (arithmetic)")
    ax = axes[2]
    if mem.peak is not None and len(mem.peak):
        p = mem.peak
        ax.bar(range(len(p)), p["increase_mb"], color=[COLORS.get(a, "C7") for a in p.index])
        ax.set_xticks(range(len(p)), p.index)
        ax.set_ylabel("peak RSS − RSS after set-up (MB)")
        ax.set_title("measured peak memory (fresh process)")
    else:
        ax.text(0.5, 0.5, "peak memory of fresh training processes:\nfull mode only", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
    fig.suptitle("Memory: on-policy rollout against a replay buffer", y=1.02)
    fig.tight_layout()
    return fig


def plot_robustness(grid: pd.DataFrame):
    """The tuning scan: area under the return curve (mean return over training) over learning rate ×
    trust-region size for REPPO (ε_KL) and PPO (clip ε), and its spread over the grid."""
    fig, axes = _panels(3, width=3.9)
    lo, hi = grid["auc"].min(), grid["auc"].max()
    for ax, algo, knob in ((axes[0], "REPPO", r"KL bound $\varepsilon_{KL}$"), (axes[1], "PPO", r"clip $\epsilon$")):
        piv = grid[grid["algo"] == algo].pivot(index="trust_region", columns="lr", values="auc")
        sns.heatmap(piv, ax=ax, annot=True, fmt=".0f", cmap="viridis", vmin=lo, vmax=hi, cbar=False,
                    annot_kws={"fontsize": 8})
        ax.set_title(f"{algo}: area under return curve")
        ax.set_xlabel("learning rate")
        ax.set_ylabel(knob)
    sns.boxplot(data=grid, x="algo", y="auc", ax=axes[2], hue="algo", palette=COLORS, legend=False,
                width=0.5, fliersize=0)
    sns.stripplot(data=grid, x="algo", y="auc", ax=axes[2], color="k", size=4)
    axes[2].set_ylabel("area under return curve (mean return)")
    axes[2].set_xlabel("")
    axes[2].set_title("spread over all settings")
    fig.suptitle("Hyperparameter sensitivity (tuning scan, tuning seeds 9000-9001)", y=1.02)
    fig.tight_layout()
    return fig


def plot_ablations(abl: pd.DataFrame):
    """Final return of REPPO and each ablation: mean (bar), seeds (dots)."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    order = list(abl["variant"].cat.categories)
    sns.stripplot(data=abl, x="variant", y="final_return", order=order, ax=ax, color="0.35", size=4, zorder=1)
    sns.pointplot(data=abl, x="variant", y="final_return", order=order, ax=ax, errorbar="sd", color="C0",
                  linestyle="none", markers="D", capsize=0.15, zorder=2)
    ax.set_xlabel("")
    ax.set_ylabel("final return")
    ax.set_title("REPPO ablations (diamond: mean ± s.d. over seeds; dots: seeds)")
    ax.tick_params(axis="x", rotation=15)
    fig.tight_layout()
    return fig


def plot_variance(var: pd.DataFrame):
    """Trace of the gradient covariance against samples per state, pathwise vs score function."""
    fig, axes = _panels(2, width=4.4)
    ax = axes[0]
    for est, d in var.groupby("estimator", sort=False):
        ax.plot(d["n_samples"], d["trace_cov"], marker="o", label=est, color="C0" if est == "pathwise" else "C3")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("action samples per state n")
    ax.set_ylabel("trace of gradient covariance")
    ax.set_title("spread of the policy-gradient estimate")
    ax.legend()
    t = var.pivot(index="n_samples", columns="estimator", values="trace_cov")
    ax = axes[1]
    ratio = t["score"] / t["pathwise"]
    ax.bar([str(n) for n in t.index], ratio, color="C3", alpha=0.7)
    for i, r in enumerate(ratio):
        ax.text(i, r, f"{r:.1f}×", ha="center", va="bottom", fontsize=8)
    ax.axhline(3.0, color="k", ls="--", lw=1, label="3× (claim C3, n = 16)")
    ax.set_ylim(0, max(3.5, 1.15 * float(ratio.max())))
    ax.set_xlabel("action samples per state n")
    ax.set_ylabel("score / pathwise variance")
    ax.set_title("variance ratio")
    ax.legend()
    fig.suptitle("Pathwise vs score-function gradients through the same frozen critic", y=1.02)
    fig.tight_layout()
    return fig
