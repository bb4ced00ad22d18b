"""Figures of the SRAL notebook (matplotlib, the suite's style)."""
from __future__ import annotations

import numpy as np
import pandas as pd

COLORS = {"DeepSets": "#ff7f0e", "SetTransformer-lite": "#9467bd", "PSWE": "#2ca02c", "PSWE + random δ": "#8c564b",
          "PSWE + input δ": "#e377c2", "SRAL (PSWE)": "#1f77b4", "SRAL (DeepSets)": "#d62728"}


def show(fig, png_path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(png_path), width=760))


def _bars(ax, df: pd.DataFrame, metric: str, names, ylabel: str):
    g = df.groupby("encoder")[metric]
    mean, sd = g.mean(), g.std()
    x = np.arange(len(names))
    ax.bar(x, [mean[n] for n in names], yerr=[np.nan_to_num(sd.get(n, np.nan)) for n in names],
           color=[COLORS[n] for n in names], capsize=3, error_kw={"lw": 0.8})
    for xi, n in zip(x, names):
        ax.text(xi, mean[n], f"{mean[n]:.3f}", ha="center", va="bottom", fontsize=7)
    lo = min(mean[n] for n in names)
    ax.set_ylim(max(0.0, lo - 0.1), min(1.0, max(mean[n] for n in names) + 0.05))
    ax.set_xticks(x)
    ax.set_xticklabels([n.replace(" (", "\n(").replace(" + ", "\n+ ") for n in names], fontsize=7)
    ax.set_ylabel(ylabel)


def fig1_retrieval(table: pd.DataFrame):
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(table.encoder))
    n_seeds = table.seed.nunique()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    _bars(axes[0], table, "NDCG@10", names, "NDCG@10 vs the exact-W₂ ranking")
    _bars(axes[1], table, "Spearman", names, "Spearman ρ(embedding dist., W₂)")
    axes[0].set_title("Task R retrieval: top-10 quality")
    axes[1].set_title("Task R: whole-ranking agreement")
    fig.suptitle(f"Inter-set retrieval on 200 queries x 1000 sets (mean ± s.d. over {n_seeds} seed(s))", fontsize=10)
    fig.tight_layout()
    return fig, axes


def fig2_geometry(dists: dict, w2: np.ndarray, names=("DeepSets", "PSWE", "SRAL (PSWE)"), n_show: int = 4000,
                  seed: int = 0):
    import matplotlib.pyplot as plt
    from scipy.stats import spearmanr

    names = [n for n in names if n in dists]
    rng = np.random.default_rng(seed)
    idx = rng.choice(w2.size, min(n_show, w2.size), replace=False)
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 3.2), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, n in zip(axes, names):
        d = dists[n].ravel()[idx]
        ax.scatter(w2.ravel()[idx], d / np.median(d), s=3, alpha=0.3, color=COLORS[n], rasterized=True)
        rho = spearmanr(w2.ravel(), dists[n].ravel())[0]
        ax.set_title(f"{n}: pooled ρ = {rho:.3f}", fontsize=9)
        ax.set_xlabel("exact W₂(query, set)")
    axes[0].set_ylabel("embedding distance / its median")
    fig.suptitle("Embedding distance vs exact W₂ (first seed; 4000 random query-set pairs)", fontsize=10)
    fig.tight_layout()
    return fig, axes


def fig3_clouds(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(df.encoder))
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    _bars(ax, df, "accuracy", names, "test accuracy")
    ax.set_title(f"Point-cloud classification ({df.data.iloc[0]}; {df.seed.nunique()} seed(s))", fontsize=9)
    fig.tight_layout()
    return fig, ax


def fig4_ablations(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(13, 3.3))
    for ax, grp, xl in zip(axes[:2], ("ε", "β"), ("ε (relative to mean ||φ(x)||)", "β (weight of L_aux)")):
        d = df[df.ablation == grp]
        ax.plot(d.value.astype(float), d["NDCG@10"], "o-", color=COLORS["SRAL (PSWE)"])
        ax.set_xlabel(xl)
        ax.set_title(f"SRAL: NDCG@10 vs {grp}", fontsize=9)
    axes[0].set_ylabel("NDCG@10")
    d = df[df.ablation == "target"]
    axes[2].bar(np.arange(len(d)), d["NDCG@10"], color=[COLORS[n] for n in d.encoder])
    axes[2].set_xticks(np.arange(len(d)))
    axes[2].set_xticklabels([v.replace(" (", "\n(") for v in d.value], fontsize=7)
    axes[2].set_ylim(d["NDCG@10"].min() - 0.05, d["NDCG@10"].max() + 0.02)
    axes[2].set_title("perturbation target", fontsize=9)
    d = df[df.ablation == "L"]
    for n in ("PSWE", "SRAL (PSWE)"):
        e = d[d.encoder == n]
        axes[3].plot(e.value.astype(float), e["NDCG@10"], "o-", color=COLORS[n], label=n)
    axes[3].set_xscale("log", base=2)
    axes[3].set_xlabel("L (slices)")
    axes[3].legend(fontsize=7)
    axes[3].set_title("number of slices", fontsize=9)
    fig.suptitle("Ablations on task R (notebook seed)", fontsize=10)
    fig.tight_layout()
    return fig, axes


def fig5_expansion(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(df.encoder))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    _bars(ax, df, "MAP@50", names, "MAP@50")
    ax.set_title(f"Topic set expansion (2000 words, 50 topics; {df.seed.nunique()} seed(s))", fontsize=9)
    fig.tight_layout()
    return fig, ax
