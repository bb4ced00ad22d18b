"""Figures of the NAM-explanation notebook (matplotlib, the suite's style)."""
from __future__ import annotations

import numpy as np
import pandas as pd

COLORS = {"ours": "#1f77b4", "deletion": "#ff7f0e", "random": "#d62728", "brute": "#2ca02c", "sampled": "#7f7f7f"}
NAMES = {"ours": "ours (cardinal-minimal)", "deletion": "deletion, heuristic order", "random": "deletion, random order",
         "brute": "brute force (n ≤ 16)", "sampled": "sampling (no guarantee)"}


def show_saved(fig, path):
    """Close ``fig`` and show the PNG that ``save_figure`` wrote (one render fewer than inline display)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    plt.close(fig)
    display(Image(filename=str(path)))


def fig1_sizes(sizes: pd.DataFrame, eps: float):
    """Sizes at ``eps`` (the other ε of full mode are in the summary table)."""
    import matplotlib.pyplot as plt

    data = sizes[np.isclose(sizes.eps, eps)]
    sets = list(dict.fromkeys(data.dataset))
    methods = ["ours", "deletion", "random", "brute", "sampled"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.16
    for k, meth in enumerate(methods):
        cols = [data[data.dataset == d][meth].dropna() for d in sets]
        means = np.array([c.mean() if len(c) else np.nan for c in cols])
        sems = np.array([c.std() / np.sqrt(len(c)) if len(c) > 1 else np.nan for c in cols])
        x = np.arange(len(sets)) + (k - 2) * width
        ok = np.isfinite(means)
        ax.bar(x[ok], means[ok], width, yerr=sems[ok], color=COLORS[meth], label=NAMES[meth],
               hatch="//" if meth == "sampled" else None, alpha=0.85 if meth != "sampled" else 0.5,
               error_kw={"lw": 0.8, "capsize": 2})
        for xi, mi, se in zip(x[ok], means[ok], np.nan_to_num(sems[ok])):
            ax.text(xi, mi + se + 0.1, f"{mi:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(sets)))
    ax.set_xticklabels([f"{d}\n(n = {int(data[data.dataset == d].n.iloc[0])})" for d in sets])
    ax.set_ylabel("explanation size |S| (features)")
    ax.set_title(f"Sufficient explanations: size per method (ε = {data.eps.iloc[0]:g}; mean ± s.e. over test points)")
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    return fig


def fig2_queries_time(queries: pd.DataFrame, milp: pd.DataFrame):
    import matplotlib.pyplot as plt

    from lib.common import plain_log_labels

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    ax = axes[0]
    q = queries.groupby("n").agg(ours=("queries_ours", "mean"), ours_max=("queries_ours", "max"),
                                 deletion=("queries_deletion", "mean"), bound=("bound", "first")).reset_index()
    ax.plot(q.n, q.deletion, "s-", color=COLORS["deletion"], label="deletion: n queries")
    ax.plot(q.n, q.ours, "o-", color=COLORS["ours"], label="ours (mean)")
    ax.plot(q.n, q.ours_max, "o", mfc="none", color=COLORS["ours"], label="ours (max)")
    ax.plot(q.n, q.bound, "k--", lw=1, label="⌈log₂(n + 1)⌉")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    plain_log_labels(ax)
    ax.set_xlabel("number of features n (synthetic additive NAMs)")
    ax.set_ylabel("full-network verification queries")
    ax.set_title("Queries per explanation")
    ax.legend(fontsize=7)
    ax = axes[1]
    per = milp.groupby(["dataset", "n"], sort=False).agg(ours=("ours_s", "mean"), pre=("pre_s", "mean"),
                                                          dele=("deletion_s", "mean")).reset_index()
    syn = per[per.dataset.str.startswith("additive")].sort_values("n")
    real = per[~per.dataset.str.startswith("additive")]
    if len(syn):
        ax.plot(syn.n, syn.dele, "s-", color=COLORS["deletion"], label="deletion (synthetic)")
        ax.plot(syn.n, syn.ours, "o-", color=COLORS["ours"], label="ours, preprocessing included (synthetic)")
        ax.plot(syn.n, syn.pre, ":", color=COLORS["ours"], label="ours: bisection preprocessing alone")
    for _, r in real.iterrows():
        ax.plot([r.n], [r.dele], "s", ms=9, mfc="none", color=COLORS["deletion"])
        ax.plot([r.n], [r.ours], "o", ms=9, mfc="none", color=COLORS["ours"])
        ax.annotate(f"{r.dataset}\n×{r.dele / r.ours:.1f}", (r.n, np.sqrt(r.dele * r.ours)), fontsize=7,
                    xytext=(6, 0), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain_log_labels(ax, y=False)
    ax.set_xlabel("number of features n")
    ax.set_ylabel("wall-clock per explanation (s)")
    ax.set_title("Generic MILP verifier (HiGHS): time")
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    return fig, axes[0]


def fig3_bisection(sweep: pd.DataFrame):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4))
    d = sweep.delta
    ax = axes[0]
    ax.plot(d, sweep.steps_mean, "o-", color=COLORS["ours"], label="steps (mean)")
    ax.plot(d, sweep.steps_max, "o", mfc="none", color=COLORS["ours"], label="steps (max)")
    ax.plot(d, sweep.log2_w0_over_delta_mean, "k--", lw=1, label="⌈log₂(w₀/δ)⌉ (mean)")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("precision δ")
    ax.set_ylabel("1-D verifier queries per component")
    ax.set_title("Bisection steps")
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.loglog(d, sweep.err_max, "o-", color=COLORS["brute"], label="max |m_bisect − m_exact|")
    ax.loglog(d, d, "k--", lw=1, label="δ")
    ax.invert_xaxis()
    ax.set_xlabel("precision δ")
    ax.set_ylabel("error of the bracket")
    ax.set_title("Bracket against the exact minimum")
    ax.legend(fontsize=7)
    ax = axes[2]
    bits = np.log2(1 / d)
    ax.plot(bits, sweep.nodes_per_component, "o-", color=COLORS["deletion"])
    ax.set_xlabel("log₂(1/δ)")
    ax.set_ylabel("branch-and-bound nodes per component")
    ax.set_title("1-D verifier work")
    fig.tight_layout()
    return fig


def fig4_sampling(samp_summary: pd.DataFrame, samp: pd.DataFrame, eps: float, K: int):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    ax = axes[0]
    eps_values = sorted(samp_summary.eps.unique())
    Ks = sorted(samp_summary.K.unique())
    width = 0.8 / (len(Ks) + 1)
    shades = plt.cm.Greys(np.linspace(0.35, 0.8, len(Ks)))
    for j, e in enumerate(eps_values):
        rows = samp_summary[samp_summary.eps == e]
        for k, Kk in enumerate(Ks):
            v = float(rows[rows.K == Kk].sampled_pass.iloc[0])
            ax.bar(j + (k - len(Ks) / 2) * width, 100 * v, width, color=shades[k],
                   label=f"sampling, K = {Kk}" if j == 0 else None)
        ax.bar(j + (len(Ks) / 2) * width, 100 * float(rows.ours_pass.iloc[0]), width, color=COLORS["ours"],
               label="ours" if j == 0 else None)
    ax.set_xticks(range(len(eps_values)))
    ax.set_xticklabels([f"ε = {e:g}" for e in eps_values])
    ax.set_ylabel("subsets that pass exact verification (%)")
    ax.set_ylim(0, 135)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("Sampling-certified vs provable subsets")
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    ax = axes[1]
    sub = samp[(samp.eps == eps) & (samp.K == K)]
    top = int(max(sub.sampled.max(), sub.ours.max()))
    bins = np.arange(-0.5, top + 1.5)
    ax.hist(sub.ours, bins=bins, color=COLORS["ours"], alpha=0.6, label="ours (all sufficient)")
    ax.hist(sub[~sub.sampled_ok].sampled, bins=bins, histtype="step", lw=1.8, color=COLORS["random"],
            label="sampling: not sufficient")
    ax.hist(sub[sub.sampled_ok].sampled, bins=bins, histtype="step", lw=1.8, ls="--", color=COLORS["sampled"],
            label="sampling: sufficient")
    ax.set_xlabel("explanation size |S|")
    ax.set_ylabel("test points")
    ax.set_title(f"Sizes at ε = {eps:g}, K = {K}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig5_illustration(ill: dict, n_panels: int = 8):
    import matplotlib.pyplot as plt

    inst, S = ill["inst"], set(ill["S"])
    order = np.argsort(-inst.g, kind="stable")
    show = order[:n_panels]
    fig, axes = plt.subplots(3, 3, figsize=(8.5, 6.4))
    grid, curves, s = ill["grid"], ill["curves"], inst.s
    for ax, i in zip(axes.ravel(), show):
        chosen = int(i) in S
        col = COLORS["ours"] if chosen else "0.45"
        ax.plot(grid, s * curves[:, i], color=col, lw=1.4)
        ax.axvspan(inst.A[i], inst.B_[i], color=col, alpha=0.12, lw=0)
        ax.plot([inst.x[i]], [inst.v[i]], "o", color="k", ms=4)
        ax.plot([inst.argmin[i]], [inst.m[i]], "v", color=COLORS["random"], ms=5)
        ax.vlines(inst.argmin[i], inst.m[i], inst.v[i], color=COLORS["random"], lw=1, ls=":")
        name = str(ill["names"][i])
        ax.set_title(f"{'✓ ' if chosen else ''}{name[:24]}\ng = {inst.g[i]:.2f}", fontsize=8,
                     color=COLORS["ours"] if chosen else "k", fontweight="bold" if chosen else "normal")
        ax.tick_params(labelsize=6)
        for sp in ax.spines.values():
            sp.set_edgecolor(COLORS["ours"] if chosen else "0.7")
            sp.set_linewidth(1.6 if chosen else 0.8)
    for ax in axes.ravel()[len(show):-1]:
        ax.axis("off")
    ax = axes.ravel()[-1]
    gs = inst.g[order]
    cum = inst.B + np.concatenate([[0.0], np.cumsum(gs)])
    k = len(S)
    ax.step(np.arange(len(cum)), cum, where="post", color=COLORS["ours"])
    ax.axhline(0, color="k", lw=0.8)
    ax.axvline(k, color=COLORS["random"], ls="--", lw=1)
    ax.set_xlabel("features fixed (sorted by g)", fontsize=7)
    ax.set_ylabel("worst-case margin", fontsize=7)
    ax.set_title(f"B + Σ top-k g: first > 0 at k = {k}", fontsize=8)
    ax.tick_params(labelsize=6)
    fig.suptitle(f"{ill['dataset']}, test point {ill['point']}: components s·h_i (top {len(show)} by g), "
                 f"ε-domain shaded, x_i (●), minimiser m_i (▼); chosen features in blue", fontsize=9)
    fig.tight_layout()
    return fig
