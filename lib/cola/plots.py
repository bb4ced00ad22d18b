"""Figures F1-F4 and Table 1 of the COLA notebook (matplotlib, the suite's style)."""
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
    """F1: C*/|E| per data set x generator (rows) and model (columns): COLA with the sampled and the greedy global
    order, and the per-row optimum sum_i k_i*/|E| (no global order; "n/a" where the exact search was over budget,
    blank where the cell did not run)."""
    import matplotlib.pyplot as plt

    c = cells.dropna(subset=["C_cola"]).copy()
    c["row"] = [_cell_label(d, g).replace("\n", ", ") for d, g in zip(c.dataset, c.generator)]
    rows = list(dict.fromkeys(c.row))
    models = list(dict.fromkeys(c.model))
    panels = [("ratio_cola", "COLA, sampled order\n(paper/package default)"), ("ratio_cola_greedy", "COLA, greedy order"),
              ("ratio_oracle", "per-row optimum " r"$\sum_i k_i^\star/|E|$" "\n(no global order)")]
    fig, axes = plt.subplots(1, 3, figsize=(3.4 + 0.75 * 3 * len(models), 1.3 + 0.38 * len(rows)), sharey=True,
                             layout="constrained")
    cmap = plt.get_cmap("viridis_r")
    for ax, (key, title) in zip(axes, panels):
        piv = c.pivot_table(index="row", columns="model", values=key, dropna=False).reindex(index=rows, columns=models)
        ran = c.pivot_table(index="row", columns="model", values="C_cola").reindex(index=rows, columns=models).notna()
        M = piv.to_numpy(dtype=float)
        im = ax.imshow(np.ma.masked_invalid(M), cmap=cmap, vmin=0, vmax=1, aspect="auto", rasterized=True)
        for (i, j), v in np.ndenumerate(M):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7.5, color="w" if v > 0.6 else "k")
            else:
                ax.text(j, i, "n/a" if ran.iat[i, j] else "not run", ha="center", va="center", fontsize=7,
                        color="0.45")
        ax.set_xticks(range(len(models)), [MODEL_LABELS.get(m, m) for m in models], fontsize=8)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ax.grid(False)
        ax.set_title(title, fontsize=9.5)
        ax.set_xlabel("model")
    fig.colorbar(im, ax=list(axes), label=r"$C^\star/|E|$ (needed / original edits)", shrink=0.9, pad=0.02)
    fig.suptitle(r"F1: share of the original edits COLA needs, $C^\star/|E|$ "
                 f"(paper: {paper_range[0]:.0%}-{paper_range[1]:.0%})", fontsize=10.5)
    return fig


def _mean_curve(curve: np.ndarray, grid: np.ndarray) -> np.ndarray:
    n = len(curve) - 1
    return curve[np.minimum(np.floor(grid * n + 1e-9).astype(int), n)]


SHORT_LABELS = {"cola": "COLA, sampled order", "cola_greedy": "COLA, greedy order",
                "decoupled": "decoupled SHAP (FA, then CE)", "random": "random actions"}


def fig2_actions_curves(curves: dict, cells: pd.DataFrame, policies=POLICIES):
    """F2: fraction of rows at the target label against C/|E|, mean over data set x model, per generator.
    Returns the figure and its first panel (the gallery thumbnail; it carries the figure's one legend)."""
    import matplotlib.pyplot as plt

    gens = list(dict.fromkeys(cells.generator))
    fig, axes = plt.subplots(1, len(gens), figsize=(3.7 * len(gens) + 0.5, 3.5), sharey=True, squeeze=False)
    u = np.linspace(0, 1, 201)
    for ax, g in zip(axes[0], gens):
        for p in policies:
            ys = [_mean_curve(v, u) for (d, m, gg, pp), v in curves.items() if gg == g and pp == p]
            if ys:
                ax.plot(u, np.mean(ys, 0), color=POLICY_COLORS[p], label=SHORT_LABELS[p], lw=1.8)
        n = len({(d, m) for (d, m, gg, pp) in curves if gg == g})
        ax.set_title(f"{GENERATOR_LABELS.get(g, g)} counterfactuals ({n} cell{'s' if n != 1 else ''})")
        ax.set_xlabel(r"actions taken, $C/|E|$")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("share of rows at their target label")
    # the figure's one legend, under the first panel (so the gallery's crop of that panel carries it)
    axes[0][0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)
    fig.suptitle("F2: target reached against actions taken (mean over data sets x models)", fontsize=11)
    fig.tight_layout()
    return fig, axes[0][0]


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
    ax.axhline(threshold_greedy, color=POLICY_COLORS["cola_greedy"], ls="--", lw=1,
               label=f"C3: mean greedy $\\leq$ {threshold_greedy}")
    ax.axhline(threshold_sample, color=POLICY_COLORS["cola"], ls=":", lw=1,
               label=f"C3: mean sampled $\\leq$ {threshold_sample}")
    ax.set_xticks(x, labels, rotation=90 if many else 0, fontsize=7 if many else 9)
    ax.set_ylabel(r"$C^\star_\mathrm{COLA}\,/\,\sum_i k_i^\star$")
    top = float(o[["gap_greedy", "gap_sample"]].max().max()) if len(o) else 2.0
    ax.set_ylim(0, max(2.6, top) * 1.45)  # headroom: the legend sits above the bars
    n = int(o.n.iloc[0]) if len(o) else 0
    names = ", ".join(LABELS.get(d, d) for d in dict.fromkeys(o.dataset))
    ax.set_title(f"F3: COLA against the exact per-row optimum ({names}, N = {n} rows per cell)")
    ax.legend(fontsize=7.5, ncol=3, loc="upper center")
    fig.tight_layout()
    return fig


GENERATOR_COLORS = {"wachter": "C0", "nun": "C1", "growing_spheres": "C2", "dice_random": "C3"}


def fig4_coupling_ablation(ablation: pd.DataFrame, seed: int = 0):
    """F4: C*/|E| and transport cost (relative to OT) for each coupling, one point per cell (colour: generator)."""
    import matplotlib.pyplot as plt

    ab = ablation.copy()
    key = ["dataset", "model", "generator"]
    ot = ab[ab.coupling == "ot"].set_index(key).cost
    ab["cost_rel"] = ab.cost.to_numpy() / ot.reindex(pd.MultiIndex.from_frame(ab[key])).to_numpy()
    couplings = list(dict.fromkeys(ab.coupling))
    jitter = np.random.default_rng(seed).uniform(-0.15, 0.15, len(ab))
    xpos = ab.coupling.map({c: k for k, c in enumerate(couplings)}).to_numpy() + jitter
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.7))
    for ax, (col, ylabel) in zip(axes, [("ratio", r"$C^\star/|E|$  (sampled order)"),
                                        ("cost_rel", "transport cost / OT cost")]):
        data = [ab.loc[ab.coupling == cp, col].to_numpy() for cp in couplings]
        ax.boxplot(data, positions=range(len(couplings)), widths=0.5, showfliers=False, patch_artist=True,
                   boxprops={"facecolor": "0.9", "edgecolor": "0.5"}, medianprops={"color": "k"},
                   whiskerprops={"color": "0.5"}, capprops={"color": "0.5"})
        for g in dict.fromkeys(ab.generator):
            sel = (ab.generator == g).to_numpy()
            ax.scatter(xpos[sel], ab.loc[sel, col], s=18, color=GENERATOR_COLORS.get(g, "0.3"), zorder=3,
                       label=GENERATOR_LABELS.get(g, g), rasterized=True)
        ax.set_xticks(range(len(couplings)), [COUPLING_LABELS[cp].replace(" (", "\n(") for cp in couplings])
        ax.set_xlabel("coupling")
        ax.set_ylabel(ylabel)
    axes[1].axhline(1.0, color="k", lw=1)
    axes[0].set_title("edits needed")
    axes[1].set_title(r"cost $\langle\pi, C\rangle$, $C_{ij}=\Vert x_i-r_j\Vert_2^2$ (OT is the minimum)")
    axes[1].legend(title="generator", fontsize=7.5, title_fontsize=8, loc="upper left")
    fig.suptitle("F4: coupling ablation, p-SHAP with OT / NN / identity / random coupling", fontsize=11)
    fig.tight_layout()
    return fig


def example_table(example: dict, digits: int = 4):
    """Table 1: factual / counterfactual q / COLA-refined rows for a few rows, in original units, as a pandas
    ``Styler`` (the package's ``highlight_changes`` view): orange = a value the counterfactual changed,
    blue = a change COLA keeps."""
    feats = example["features"]
    F, Q, Rf = example["factual"], example["counterfactual"], example["refined"]
    records, colours = [], []
    for i in range(len(F)):
        for name, vals, colour in (("factual", F[i], ""), ("counterfactual q", Q[i], "background-color: #f4a582"),
                                   ("COLA refined", Rf[i], "background-color: #92c5de")):
            changed = vals != F[i]
            records.append(pd.Series(vals, index=feats, name=f"row {i + 1}: {name} ({int(changed.sum())} edits)"))
            colours.append([colour if c else "" for c in changed])
    frame = pd.DataFrame(records)
    style = pd.DataFrame(colours, index=frame.index, columns=feats)
    caption = (f"Table 1: {LABELS.get(example['dataset'], example['dataset'])}, {MODEL_LABELS.get(example['model'])}, "
               f"{GENERATOR_LABELS.get(example['generator'])} counterfactuals; orange = edited by the CE, blue = kept "
               f"by COLA (C* = {example['C_star']} of |E| = {example['n_edits']} edits over {example['n_rows']} rows; "
               "values in original units)")
    return frame.style.apply(lambda _: style, axis=None).format(f"{{:.{digits}g}}").set_caption(caption)


def show_saved(fig, path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote (one render fewer than inline display)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(path)))
