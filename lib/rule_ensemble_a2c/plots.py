"""The notebook's figures (matplotlib in the suite's style); each function returns the Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

COLORS = {"NSAC-OGB": "C0", "NSAC-GB": "C9", "A2C-MLP": "C1", "A2C-linear": "C2", "PPO-MLP": "C3",
          "Tree-d3 (distilled)": "C4", "Tree-d4 (distilled)": "C5", "random policy": "0.6"}


def _panels(n: int, width: float = 4.3, height: float = 3.4, ncols: int = 4):
    ncols = min(n, ncols)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def plot_learning_curves(comp):
    """Greedy-policy return against environment steps, mean ± s.e. over seeds, one panel per environment."""
    table = comp.curves
    envs = list(dict.fromkeys(table["env"]))
    fig, axes = _panels(len(envs))
    for ax, env in zip(axes, envs):
        sub = table[table["env"] == env]
        for method, d in sub.groupby("method", sort=False):
            g = d.groupby("steps")["return"]
            m, n = g.mean(), g.count()
            se = g.std().fillna(0.0) / np.sqrt(n)
            k = int(n.max())
            ax.plot(m.index, m.values, color=COLORS.get(method), label=f"{method} ({k} seed{'s' * (k > 1)})")
            ax.fill_between(m.index, m - se, m + se, color=COLORS.get(method), alpha=0.2, lw=0)
        ax.axhline(comp.random[env], color=COLORS["random policy"], ls=":", lw=1, label="random policy")
        ax.set_title(env)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("return (greedy policy, 10 episodes)")
    axes[0].legend(loc="best", fontsize=7)
    fig.suptitle("NSAC (rule-ensemble actor) vs neural and linear actors: return against environment steps", y=1.02)
    fig.tight_layout()
    return fig


def plot_final_returns(comp):
    """Final greedy return per method (bars: mean over seeds; dots: seeds), one panel per environment."""
    f = comp.finals()
    envs = list(dict.fromkeys(f["env"]))
    fig, axes = _panels(len(envs), width=4.6, height=3.6)
    for ax, env in zip(axes, envs):
        sub = f[f["env"] == env]
        names = list(dict.fromkeys(sub["method"]))
        for i, name in enumerate(names):
            vals = sub[sub["method"] == name]["final_return"].to_numpy()
            ax.bar(i, vals.mean(), color=COLORS.get(name, "0.5"), alpha=0.85)
            ax.scatter(np.full(len(vals), i), vals, color="k", s=10, zorder=3)
        ax.axhline(comp.random[env], color=COLORS["random policy"], ls=":", lw=1, label="random policy")
        ax.set_xticks(range(len(names)), [n.replace(" (distilled)", "\n(distilled)") for n in names], rotation=45,
                      ha="right", fontsize=7)
        ax.set_title(env)
        ax.set_ylabel("final return (mean of last 3 evaluations)")
    axes[0].legend(loc="best", fontsize=7)
    fig.suptitle("Final greedy return per environment and method (same budget, tuned learning rates)", y=1.02)
    fig.tight_layout()
    return fig


def plot_decision_regions(regions: dict, action_names=("left", "right")):
    """Greedy action on CartPole's (θ, θ̇) plane with x = ẋ = 0, one panel per policy."""
    fig, axes = _panels(len(regions), width=3.9, height=3.5)
    cmap = ListedColormap(["#f4a582", "#92c5de"])
    for ax, (name, (th, thd, act)) in zip(axes, regions.items()):
        ax.pcolormesh(th, thd, act, cmap=cmap, vmin=0, vmax=1, shading="auto", rasterized=True)
        ax.plot(th, -th, color="k", lw=0.8, ls="--", label="θ + θ̇ = 0")
        ax.set_ylim(thd.min(), thd.max())
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("pole angle θ (rad)")
        ax.set_ylabel("angular velocity θ̇ (rad/s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("#f4a582", "#92c5de")]
    axes[-1].legend(handles + [axes[-1].lines[0]], [f"push {a}" for a in action_names] + ["θ + θ̇ = 0"],
                    loc="lower right", fontsize=7)
    fig.suptitle("CartPole: greedy action on (θ, θ̇) with x = ẋ = 0", y=1.03)
    fig.tight_layout()
    return fig


def plot_ogb_vs_gb(kc, env: str):
    """Greedy return against the number of rules K in the ensemble: OGB vs plain GB selection (seeds as dots)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    sub = kc[kc["env"] == env]
    for method, d in sub.groupby("method", sort=False):
        m = d.groupby("K")["return"].mean()
        ax.plot(m.index, m.values, marker="o", color=COLORS.get(method), label=method)
        ax.scatter(d["K"], d["return"], color=COLORS.get(method), s=8, alpha=0.5)
    for k in (5, 10):
        ax.axvline(k, color="0.8", lw=0.8, zorder=0)
    ax.set_xlabel("rules in the ensemble K")
    ax.set_ylabel("return (greedy policy)")
    ax.set_title(f"{env}: OGB vs plain gradient-boosting rule selection")
    ax.legend()
    fig.tight_layout()
    return fig, ax
