"""Figures of the SPT notebook (matplotlib, the suite's style). Each function returns the figure (and, for the
gallery's thumbnail, :func:`plot_density` also its first panel)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection

from .experiments import MAIN_METHODS, TREE_COUNTS, VARIANTS

COLORS = {"SPT": "C0", "SPT-released": "C3", "SPT-noRW": "C9", "LBP": "C1", "TRW": "C2", "LBP-undamped": "C1",
          "TRW-undamped": "C2", "MF": "C4", "ICM": "C7"}
STYLES = {"LBP-undamped": "--", "TRW-undamped": "--", "SPT-released": "-."}
MARKERS = {"SPT": "o", "SPT-released": "v", "SPT-noRW": "o", "LBP": "s", "TRW": "^", "LBP-undamped": "s",
           "TRW-undamped": "^", "MF": "D", "ICM": "x"}
LABELS = {"SPT": "SPT (our reconstruction)", "SPT-released": "SPT, released code's rule", "SPT-noRW": "SPT without 1/ρ",
          "LBP": "LBP (damped)", "TRW": "TRW (damped)", "LBP-undamped": "LBP (undamped, authors' setting)",
          "TRW-undamped": "TRW (undamped, authors' setting)", "MF": "mean field", "ICM": "ICM"}
GAP_LABEL = r"mean energy gap $E(x)-E_\mathrm{ref}$"
LINTHRESH = 1.0  # symlog: linear below this gap
TICKS = (0, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def _line(ax, x, y, m, **kw):
    ax.plot(x, y, color=COLORS.get(m, "k"), ls=STYLES.get(m, "-"), marker=MARKERS.get(m, "o"), ms=5,
            lw=2.4 if m.startswith("SPT") else 1.4, label=LABELS.get(m, m), zorder=3 if m.startswith("SPT") else 2,
            **kw)


def _symlog(ax):
    """A symmetric-log gap axis (linear below 1) with plain-number ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_yscale("symlog", linthresh=LINTHRESH, linscale=0.6)
    hi = max(max(ax.get_ylim()[1], 1.0), max((float(np.nanmax(np.r_[ln.get_ydata(), 0.0])) for ln in ax.lines),
                                              default=1.0))
    top = next((t for t in TICKS if t >= hi), hi)
    ax.set_ylim(-0.05, top * 1.02)  # a little room below 0 so that exact methods stay visible
    ax.yaxis.set_major_locator(FixedLocator([t for t in TICKS if t <= top]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plot_grid_gaps(df: pd.DataFrame):
    """Figure 2: mean energy gap against coupling strength, one panel per grid family, one line per method."""
    fams = list(dict.fromkeys(df.family))
    fig, axes = plt.subplots(1, len(fams), figsize=(4.3 * len(fams), 3.9), sharey=True)
    axes = np.atleast_1d(axes)
    g = df.groupby(["family", "coupling", "method"]).gap.agg(["mean", "sem"]).reset_index()
    for ax, f in zip(axes, fams):
        for m in MAIN_METHODS:
            d = g[(g.family == f) & (g.method == m)].sort_values("coupling")
            _line(ax, d.coupling, d["mean"], m)
        n = df[(df.family == f) & (df.method == "SPT")]
        ax.set_title(f"{f} grids {int(np.sqrt(n.n.iloc[0]))}x{int(np.sqrt(n.n.iloc[0]))} "
                     f"({n.groupby('coupling').size().iloc[0]} per point)")
        ax.set_xlabel(r"coupling strength $c$")
        ax.set_xticks(sorted(df.coupling.unique()))
        _symlog(ax)
    axes[0].set_ylabel(GAP_LABEL + " (symlog)")
    h, lab = axes[0].get_legend_handles_labels()
    fig.suptitle("Energy gap to the optimum (or best found) on Potts grids, per method", y=1.0)
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    fig.legend(h, lab, loc="center left", bbox_to_anchor=(0.8, 0.5), fontsize=8, frameon=False)
    return fig


def plot_density(df: pd.DataFrame, summary: pd.DataFrame, slope: float):
    """Figure 3: gap against mean degree on ER graphs; right: LBP gap - SPT gap with its fitted slope.
    Returns the figure and its left panel (the gallery thumbnail; it carries the figure's one legend)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.1), gridspec_kw={"width_ratios": [1.35, 1]})
    g = df.groupby(["target_degree", "method"]).agg(gap=("gap", "mean"), deg=("avg_degree", "mean")).reset_index()
    for m in MAIN_METHODS:
        d = g[g.method == m].sort_values("deg")
        _line(a1, d.deg, d.gap, m)
    _symlog(a1)
    n_per = int(df[df.method == "SPT"].groupby("target_degree").size().min())
    a1.set_xlabel("mean degree of the ER graph")
    a1.set_ylabel(GAP_LABEL + " (symlog)")
    a1.set_title(f"Erdős–Rényi, {df.iloc[0]['instance'].split('-')[0]}, mixed Potts ({n_per} per point)")
    a1.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    x, y = summary["mean degree"].to_numpy(), summary["LBP - SPT"].to_numpy()
    a2.axhline(0, color="0.5", lw=0.8)
    a2.plot(x, y, "o-", color="C0")
    xx = np.linspace(x.min(), x.max(), 10)
    a2.plot(xx, np.polyval(np.polyfit(x, y, 1), xx), ":", color="C3")
    a2.text(0.03, 0.04, f"dotted: least-squares slope {slope:.2f} per unit degree\nabove 0: SPT better than damped LBP",
            transform=a2.transAxes, ha="left", va="bottom", fontsize=8,
            bbox=dict(facecolor="white", edgecolor="none", alpha=0.8))
    a2.set_xlabel("mean degree")
    a2.set_ylabel(r"$\mathrm{gap}_\mathrm{LBP}-\mathrm{gap}_\mathrm{SPT}$")
    a2.set_title("SPT's advantage over damped LBP against density")
    fig.tight_layout()
    return fig, a1


def plot_bars(df: pd.DataFrame):
    """Figure 4: mean gap per instance group (Ising grids, PCI-like, .uai files), bars per method."""
    groups = list(dict.fromkeys(df.group))
    t = df.pivot_table(index="group", columns="method", values="gap", aggfunc="mean").loc[groups]
    meths = [m for m in MAIN_METHODS if m in t.columns]
    fig, ax = plt.subplots(figsize=(10.5, 3.9))
    w = 0.8 / len(meths)
    x = np.arange(len(groups))
    for k, m in enumerate(meths):
        ax.bar(x + (k - (len(meths) - 1) / 2) * w, t[m], width=w, color=COLORS.get(m, "k"), label=LABELS.get(m, m),
               hatch="//" if m in STYLES else None, edgecolor="white" if m not in STYLES else "0.2", lw=0.3)
    counts = df[df.method == meths[0]].groupby("group").size().loc[groups]
    ax.set_xticks(x, [f"{g}\n({c} inst.)" for g, c in zip(groups, counts)], fontsize=8)
    _symlog(ax)
    ax.set_ylabel(GAP_LABEL + " (symlog)")
    ax.set_title("UAI-style Ising grids, PCI-like cell networks and .uai files: gap to the optimum / best found")
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_convergence(conv: dict, cells=None):
    """Figure 5: energy gap of the decoded labelling against iteration (left) and best-so-far against time (right),
    for ``cells`` (default: the strongest mixed cell, where the methods differ most; the table lists every cell)."""
    if cells is None:
        cells = [k for k in conv if k[0] == "mixed"][-1:] or list(conv)[:1]
    fig, axes = plt.subplots(len(cells), 2, figsize=(10.5, 3.3 * len(cells)), squeeze=False)
    for row, cell in zip(axes, cells):
        d = conv[cell]
        for m, r in d["traces"].items():
            kw = dict(color=COLORS.get(m, "k"), ls=STYLES.get(m, "-"), lw=2.2 if m.startswith("SPT") else 1.2,
                      label=LABELS.get(m, m))
            it = np.arange(1, len(r.trace) + 1)
            row[0].plot(it, r.trace - d["ref"], **kw)
            row[1].step(np.maximum(r.times, 1e-4), r.best_trace - d["ref"], where="post", **kw)
        for ax in row:
            _symlog(ax)
        row[0].set_xlabel("iteration (sweep for ICM)")
        row[0].set_ylabel(r"$E(x_t)-E_\mathrm{ref}$ of the decoded $x_t$")
        row[0].set_title(f"{cell[0]}, $c={cell[1]:g}$: {d['name']} ($E_\\mathrm{{ref}}$: {d['ref_kind']})")
        row[1].set_xscale("log")
        row[1].set_xlabel("wall-clock seconds (set-up included; SPT: its batch's time per instance)")
        row[1].set_ylabel("best gap so far")
        row[1].set_title("best energy so far against time")
    h, lab = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.12 / len(cells), 1, 1))
    fig.legend(h, lab, loc="lower center", ncol=4, fontsize=7.5, frameon=False)  # one legend, under the panels
    return fig


def plot_ablation(ab):
    """Figure 6: gap against the number of trees; gap per merge/update variant; best-so-far gap against iteration."""
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(13.5, 4.0), gridspec_kw={"width_ratios": [1, 1.25, 1]})
    t = ab.trees.groupby(["trees", "family"]).gap.mean().unstack()
    for f in t.columns:
        a1.plot(t.index, t[f], "o-", lw=1.2, label=f"{f} (mean)")
    a1.plot(t.index, ab.trees.groupby("trees").gap.mean(), "o-", color="k", lw=2.2, label="all")
    a1.set_xscale("log")
    a1.set_xticks(TREE_COUNTS, [str(v) for v in TREE_COUNTS])
    a1.set_xlabel(r"number of sampled trees $T$ (nested samples)")
    a1.set_ylabel(GAP_LABEL)
    a1.set_title("More trees")
    a1.legend(fontsize=7.5)
    v = ab.variants.groupby("variant").gap.mean().reindex(list(VARIANTS))
    sem = ab.variants.groupby("variant").gap.sem().reindex(list(VARIANTS))
    colours = ["C0", "C9", "C5", "C8", "C7", "C3", "C6"]
    a2.barh(np.arange(len(v)), v, xerr=sem, color=colours[:len(v)])
    a2.set_yticks(np.arange(len(v)), [s.replace(", ", ",\n", 1).replace("1/rho", r"$1/\rho_e$") for s in v.index],
                  fontsize=7.5)
    a2.invert_yaxis()
    a2.set_xlabel("mean energy gap (± s.e.m.)")
    a2.set_title(r"Merge / update rule and the $1/\rho_e$ correction")
    for k, (name, tr) in enumerate(ab.iterations.items()):
        a3.plot(np.arange(1, tr.shape[1] + 1), tr.mean(axis=0), color=colours[k], lw=2.2 if k == 0 else 1.2,
                label=name)
    _symlog(a3)
    a3.set_xlabel("outer iteration")
    a3.set_ylabel("best gap so far (mean)")
    a3.set_title("Energy against iteration (colours as in the middle)", fontsize=9.5)
    n_inst = ab.variants.instance.nunique()
    fig.suptitle(f"SPT ablations on the strongest-coupling grids ({n_inst} instances)", y=1.02)
    fig.tight_layout()
    return fig


def _grid_segments(mrf, shape, edges):
    h, w = shape
    pos = np.column_stack([np.arange(mrf.n) % w, h - 1 - np.arange(mrf.n) // w]).astype(float)
    return pos, np.stack([pos[edges[:, 0]], pos[edges[:, 1]]], axis=1)


def plot_ust(pic):
    """Figure 1: rho_e = R_eff on the grid, two sampled uniform spanning trees, empirical frequency against rho."""
    from .trees import tree_edges

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.7), gridspec_kw={"width_ratios": [1.15, 1, 1, 1.1]})
    pos, seg = _grid_segments(pic.mrf, pic.shape, pic.mrf.edges)
    lc = LineCollection(seg, array=pic.rho, cmap="viridis", linewidths=3.0)
    axes[0].add_collection(lc)
    axes[0].scatter(pos[:, 0], pos[:, 1], s=6, color="k", zorder=3)
    fig.colorbar(lc, ax=axes[0], fraction=0.046, pad=0.02, label=r"$\rho_e=R_\mathrm{eff}(e)$")
    axes[0].set_title("edge-appearance probability")
    for k, ax in enumerate(axes[1:3]):
        te = tree_edges(pic.trees[k])
        _, s2 = _grid_segments(pic.mrf, pic.shape, te)
        ax.add_collection(LineCollection(seg, colors="0.85", linewidths=1.0))
        ax.add_collection(LineCollection(s2, colors="C0", linewidths=2.2))
        root = np.flatnonzero(pic.trees[k] < 0)
        ax.scatter(pos[root, 0], pos[root, 1], s=40, color="C3", zorder=3, label="root")
        ax.set_title(f"a uniform spanning tree (Wilson), #{k + 1}")
    for ax in axes[:3]:
        ax.set_aspect("equal")
        ax.set_xlim(-0.5, pic.shape[1] - 0.5)
        ax.set_ylim(-0.5, pic.shape[0] - 0.5)
        ax.axis("off")
    ax = axes[3]
    ax.scatter(pic.rho, pic.freq, s=10, alpha=0.7, rasterized=True)
    lim = [min(pic.rho.min(), pic.freq.min()) - 0.02, max(pic.rho.max(), pic.freq.max()) + 0.02]
    ax.plot(lim, lim, "k:", lw=1, label="$y=x$ (Kirchhoff)")
    ax.set_xlabel(r"effective resistance $\rho_e$")
    ax.set_ylabel(f"frequency in {pic.n_samples} Wilson trees")
    ax.set_title(r"sampled frequency $=R_\mathrm{eff}$")
    ax.legend(fontsize=7.5)
    fig.tight_layout()
    return fig
