"""Figures F1-F5 of the COLA notebook (matplotlib/seaborn, the suite's style)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .data import LABELS
from .experiments import POLICIES, POLICY_LABELS
from .generators import GENERATOR_LABELS
from .matching import COUPLING_LABELS
from .models import MODEL_LABELS

POLICY_COLORS = {"cola": "C0", "cola_greedy": "C2", "decoupled": "C1", "random": "0.5"}


def _cell_label(d, g):
    return f"{LABELS.get(d, d)}\n{GENERATOR_LABELS.get(g, g)}"


def fig1_ratio_heatmap(cells: pd.DataFrame, paper_range=(0.26, 0.45)):
    """F1: C*/|E| per data set x generator (rows) and model (columns), sampled and greedy order."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    c = cells.dropna(subset=["C_cola"]).copy()
    c["row"] = [_cell_label(d, g) for d, g in zip(c.dataset, c.generator)]
    c["col"] = c.model.map(MODEL_LABELS)
    rows = list(dict.fromkeys(c.row))
    cols = [MODEL_LABELS[m] for m in dict.fromkeys(c.model)]
    fig, axes = plt.subplots(1, 2, figsize=(3.2 + 1.1 * 2 * len(cols), 0.9 + 0.55 * len(rows)), sharey=True)
    for ax, (key, title) in zip(axes, [("ratio_cola", "sampled order (paper/package default)"),
                                       ("ratio_cola_greedy", "greedy order")]):
        piv = c.pivot_table(index="row", columns="col", values=key).reindex(index=rows, columns=cols)
        sns.heatmap(piv, ax=ax, vmin=0, vmax=1, cmap="viridis_r", annot=True, fmt=".2f", cbar=ax is axes[-1],
                    cbar_kws={"label": "C* / |E|  (needed / original edits)"}, linewidths=0.5)
        ax.set_title(title)
        ax.set_xlabel("model")
        ax.set_ylabel("")
    fig.suptitle(f"F1: fraction of the original edits COLA needs (paper: {paper_range[0]:.0%}-{paper_range[1]:.0%})",
                 fontsize=11)
    fig.tight_layout()
    return fig


def _mean_curve(curve: np.ndarray, grid: np.ndarray) -> np.ndarray:
    n = len(curve) - 1
    return curve[np.minimum(np.floor(grid * n + 1e-9).astype(int), n)]


def fig2_actions_curves(curves: dict, cells: pd.DataFrame, policies=POLICIES):
    """F2: fraction of rows at the target label against C/|E|, mean over data set x model, per generator."""
    import matplotlib.pyplot as plt

    gens = list(dict.fromkeys(cells.generator))
    fig, axes = plt.subplots(1, len(gens), figsize=(3.6 * len(gens) + 0.6, 3.4), sharey=True, squeeze=False)
    u = np.linspace(0, 1, 201)
    for ax, g in zip(axes[0], gens):
        for p in policies:
            ys = [_mean_curve(v, u) for (d, m, gg, pp), v in curves.items() if gg == g and pp == p]
            if ys:
                ax.plot(u, np.mean(ys, 0), color=POLICY_COLORS[p], label=POLICY_LABELS[p], lw=1.8)
        ax.set_title(f"{GENERATOR_LABELS.get(g, g)} counterfactuals")
        ax.set_xlabel("actions taken C / |E|")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("fraction of rows at target label")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle("F2: target reached against actions (mean over data sets x models)", fontsize=11)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False, fontsize=8)
    return fig


def fig3_oracle(oracle: pd.DataFrame, threshold_greedy=1.5, threshold_sample=2.0):
    """F3: C*(COLA) / C*(oracle) per model x generator on the small benchmark."""
    import matplotlib.pyplot as plt

    o = oracle.copy()
    labels = [f"{MODEL_LABELS.get(m, m)}\n{GENERATOR_LABELS.get(g, g)}" for m, g in zip(o.model, o.generator)]
    x = np.arange(len(o))
    many = len(o) > 8
    fig, ax = plt.subplots(figsize=(min(1.1 * len(o) + 2.5, 15.0), 3.9 if many else 3.6))
    ax.bar(x - 0.2, o.gap_greedy, 0.4, color=POLICY_COLORS["cola_greedy"], label="COLA, greedy order")
    ax.bar(x + 0.2, o.gap_sample, 0.4, color=POLICY_COLORS["cola"], label="COLA, sampled order")
    ax.axhline(1.0, color="k", lw=1, label="oracle (exact per-row minimum)")
    ax.axhline(threshold_greedy, color=POLICY_COLORS["cola_greedy"], ls="--", lw=1, label=f"claim: mean greedy <= {threshold_greedy}")
    ax.axhline(threshold_sample, color=POLICY_COLORS["cola"], ls=":", lw=1, label=f"claim: mean sampled <= {threshold_sample}")
    ax.set_xticks(x, labels, rotation=90 if many else 0, fontsize=7 if many else 9)
    ax.set_ylabel("C*(COLA) / C*(oracle)")
    ax.set_ylim(0, max(2.6, float(o[["gap_greedy", "gap_sample"]].max().max()) * 1.35))
    n = int(o.n.iloc[0]) if len(o) else 0
    ax.set_title(f"F3: COLA against the brute-force optimum ({LABELS.get(o.dataset.iloc[0], '')}, N = {n})")
    ax.legend(fontsize=7.5, ncol=2, loc="upper left")
    fig.tight_layout()
    return fig


def fig4_coupling_ablation(ablation: pd.DataFrame):
    """F4: C*/|E| and transport cost (relative to OT) for each coupling, one point per cell."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    ab = ablation.copy()
    key = ["dataset", "model", "generator"]
    ot = ab[ab.coupling == "ot"].set_index(key).cost
    ab["cost_rel"] = ab.cost.to_numpy() / ot.reindex(pd.MultiIndex.from_frame(ab[key])).to_numpy()
    ab["coupling_label"] = ab.coupling.map(lambda c: COUPLING_LABELS[c].replace(" (", "\n("))
    order = list(dict.fromkeys(ab.coupling_label))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (col, ylabel) in zip(axes, [("ratio", "C* / |E|  (sampled order)"),
                                        ("cost_rel", "transport cost / OT cost")]):
        sns.boxplot(data=ab, x="coupling_label", y=col, order=order, ax=ax, color="0.85", showfliers=False)
        sns.stripplot(data=ab, x="coupling_label", y=col, order=order, ax=ax, hue="generator", dodge=False,
                      size=5, jitter=0.15, legend=ax is axes[1])
        ax.set_xlabel("coupling")
        ax.set_ylabel(ylabel)
    axes[1].axhline(1.0, color="k", lw=1)
    axes[0].set_title("edits needed")
    axes[1].set_title("sum pi_ij ||x_i - r_j||^2 (OT is the minimum)")
    if axes[1].get_legend() is not None:
        axes[1].legend(title="generator", fontsize=7.5, title_fontsize=8, loc="upper left")
    fig.suptitle("F4: coupling ablation, p-SHAP with OT / NN / identity / random coupling", fontsize=11)
    fig.tight_layout()
    return fig


def fig5_example_table(example: dict, digits: int = 4):
    """F5: factual / original counterfactual / refined counterfactual for a few rows, changed cells coloured."""
    import matplotlib.pyplot as plt

    feats = example["features"]
    F, Q, Rf = example["factual"], example["counterfactual"], example["refined"]
    fmt = lambda v: f"{v:.{digits}g}"  # noqa: E731
    cell_text, colours, row_labels = [], [], []
    for i in range(len(F)):
        for name, vals, colour in (("factual", F[i], None), ("counterfactual q", Q[i], "#f4a582"),
                                   ("COLA refined", Rf[i], "#92c5de")):
            changed = vals != F[i]
            cell_text.append([fmt(v) for v in vals])
            colours.append([colour if (colour and c) else "white" for c in changed])
            row_labels.append(f"row {i + 1}: {name} ({int(changed.sum())} edits)")
    fig, ax = plt.subplots(figsize=(1.0 + 0.95 * len(feats) + 2.4, 0.3 * len(cell_text) + 0.9))
    ax.axis("off")
    table = ax.table(cellText=cell_text, cellColours=colours, rowLabels=row_labels,
                     colLabels=[f.replace("_", "\n", 1) for f in feats], loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(7.5)
    table.scale(1.0, 1.35)
    ax.set_title(f"F5: {LABELS.get(example['dataset'], example['dataset'])}, {MODEL_LABELS.get(example['model'])}, "
                 f"{GENERATOR_LABELS.get(example['generator'])} counterfactuals: orange = edited by the CE, "
                 f"blue = kept by COLA\n(C* = {example['C_star']} of |E| = {example['n_edits']} edits over "
                 f"{example['n_rows']} rows; values in original units)", fontsize=9)
    fig.tight_layout()
    return fig


def show_saved(fig, path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote (one render fewer than inline display)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(path)))
