"""Figures of the RPEDR notebook (matplotlib/seaborn, the suite's style). Each function returns the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from .data import MODEL_TEXT
from .experiments import ALL_METHODS, Convergence, SimStudy

COLORS = {"RPEDR": "C0", "RPEDR-double": "C9", "SIR": "C1", "SAVE": "C2", "pHd": "C3", "DR": "C4", "OPG": "C5",
          "all features": "0.55"}
DIST_LABEL = {"norm": "Gaussian", "cauchy": "Cauchy", "mixed": "mixed (50/50)"}
ERR = r"$\|\hat P-P_0\|_F$"


def _log_label(v, _pos=None) -> str:
    """Plain labels on a log axis at 1, 2, 3 and 5 times a power of ten (none elsewhere)."""
    if v <= 0:
        return ""
    e = np.floor(np.log10(v))
    return f"{v:g}" if int(round(v / 10 ** e)) in (1, 2, 3, 5) else ""


def plot_error_vs_L(conv: Convergence):
    """Figure 1: mean error (+/- sd over replicates) against L, log-log, with an L^{-1/2} reference line."""
    tab = conv.table
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    for k, (model, g) in enumerate(tab.groupby("model", sort=False)):
        g = g.sort_values("L")
        ax.errorbar(g["L"], g["mean"], yerr=g["std"], marker="o", ms=5, capsize=3, lw=2 if model == conv.model else 1.2,
                    color=f"C{k}", label=f"{model} (mean $\\pm$ sd)")
    one = tab[tab["model"] == conv.model].sort_values("L")
    L = one["L"].to_numpy(float)
    ax.plot(L, one["mean"].iloc[0] * np.sqrt(L[0] / L), "k--", lw=1, label=r"$\propto L^{-1/2}$ (theorem's rate)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(L)
    ax.set_xticklabels([f"{int(v)}" for v in L])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(_log_label))
    ax.yaxis.set_minor_formatter(FuncFormatter(_log_label))
    ax.set_xlabel(r"$L$ (groups of projections)")
    ax.set_ylabel(ERR + " (top-$d_0$ directions)")
    ax.set_title(f"RPEDR error against the number of groups; slope on {conv.model}: {conv.slope:.2f}")
    ax.legend(loc="lower left", frameon=False)
    fig.tight_layout()
    return fig


def plot_simulation(sim: SimStudy):
    """Figure 2: boxplots of the error per method, one panel per (n, p) setting and model."""
    import seaborn as sns

    df = sim.errors
    settings = list(dict.fromkeys(df["setting"]))
    models = list(dict.fromkeys(df["model"]))
    fig, axes = plt.subplots(len(settings), len(models), figsize=(2.9 * len(models), 3.1 * len(settings)),
                             squeeze=False, sharey=True)
    for i, s in enumerate(settings):
        for j, m in enumerate(models):
            ax = axes[i, j]
            d = df[(df["setting"] == s) & (df["model"] == m)]
            sns.boxplot(data=d, x="method", y="error", hue="method", order=list(ALL_METHODS), palette=COLORS,
                        ax=ax, width=0.6, fliersize=2, legend=False)
            ax.set_title(f"{m}: {MODEL_TEXT[m]}\n{s}, {d['rep'].nunique()} reps", fontsize=9)
            ax.set_xlabel("")
            ax.set_ylabel(ERR if j == 0 else "")
            ax.tick_params(labelleft=True)
            ax.set_xticks(range(len(ALL_METHODS)))
            ax.set_xticklabels(ALL_METHODS, rotation=50, ha="right", rotation_mode="anchor", fontsize=8)
    fig.suptitle("Estimation error of the central mean subspace (lower is better)", y=1.0)
    fig.tight_layout()
    return fig, axes


def plot_spectra(sim: SimStudy, setting=None):
    """Figure 3: RPEDR's singular values against the null median (Algorithm 2), with d_hat marked."""
    sp = sim.spectra
    setting = setting or sp["setting"].iloc[0]
    sp = sp[sp["setting"] == setting]
    models = list(dict.fromkeys(sp["model"]))
    ncol = min(3, len(models))
    nrow = -(-len(models) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.1 * nrow + 0.3), squeeze=False, sharey=True)
    for ax in axes.ravel()[len(models):]:
        ax.set_visible(False)
    for ax, m in zip(axes.ravel(), models):
        d = sp[sp["model"] == m]
        for r, g in d.groupby("rep"):
            ax.plot(g["k"], g["D"], "o-", color="C0", alpha=0.9 if r == 0 else 0.25, ms=4 if r == 0 else 3,
                    lw=1.4 if r == 0 else 0.8, label=r"$D_k$ of $P^*$ (rep 0 bold)" if r == 0 else None)
        g0 = d[d["rep"] == d["rep"].min()]
        ax.plot(g0["k"], g0["D_med"], "k--", lw=1.2, label=r"null median $D_{\mathrm{med},k}$")
        dh, d0 = int(g0["d_hat"].iloc[0]), int(g0["d0"].iloc[0])
        ax.axvline(dh + 0.5, color="C3", ls=":", lw=1.5, label=r"$\hat d$ (rep 0)")
        counts = d.drop_duplicates("rep")["d_hat"].value_counts().sort_index()
        ax.set_title(f"{m} ($d_0={d0}$): " + r"$\hat d$ " + ", ".join(f"{k}: {v}x" for k, v in counts.items()),
                     fontsize=9)
        ax.set_xlabel(r"index $k$")
        ax.set_xticks(sorted(d["k"].unique()))
    for ax in axes[:, 0]:
        ax.set_ylabel(r"singular value $D_k$")
    axes[0, 0].legend(loc="upper right", frameon=False, fontsize=8)  # the decayed tail leaves this corner empty
    fig.suptitle(f"Singular values of $P^*$ against unselected projections' null median ({setting})", y=1.0)
    fig.tight_layout()
    return fig


def plot_distributions(df: pd.DataFrame):
    """Figure 4: RPEDR's error with Gaussian, Cauchy and mixed projections on M4 with sparse and dense beta."""
    import seaborn as sns

    d = df.assign(projections=df["dist"].map(DIST_LABEL))
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    sns.boxplot(data=d, x="beta", y="error", hue="projections", order=["sparse", "dense"],
                hue_order=[DIST_LABEL[k] for k in ("norm", "cauchy", "mixed")], ax=ax, width=0.7, fliersize=2,
                showmeans=True, meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "k",
                                           "markersize": 4})
    ax.set_xticks([0, 1])
    ax.set_xticklabels([r"sparse $\beta\propto(1,1,0,\dots,0)$", r"dense $\beta\propto(1,\dots,1)$"])
    ax.set_xlabel("")
    ax.set_ylabel(ERR)
    ax.set_title(f"RPEDR's error on M4 by projection distribution ({df['rep'].nunique()} reps; "
                 "diamonds: means)", fontsize=10)
    ax.legend(title="projections", loc="upper left", frameon=False)
    fig.tight_layout()
    return fig


def plot_real(df: pd.DataFrame):
    """Figure 5: test RMSE of the quadratic ridge on each method's top-d0 directions, and on all features."""
    sets = list(dict.fromkeys(df["data"]))
    order = list(ALL_METHODS) + ["all features"]
    fig, axes = plt.subplots(1, len(sets), figsize=(max(5.6, 4.2 * len(sets)), 3.9), squeeze=False)
    for ax, s in zip(axes[0], sets):
        g = df[df["data"] == s].groupby("method")["rmse"].agg(["mean", "std"]).reindex(order)
        x = np.arange(len(order))
        ax.bar(x, g["mean"], yerr=g["std"].fillna(0), color=[COLORS[m] for m in order], capsize=3)
        ax.axhline(g.loc["all features", "mean"], color="0.4", ls="--", lw=1)
        lo = float((g["mean"] - g["std"].fillna(0)).min())
        ax.set_ylim(max(0.0, lo * 0.9), float((g["mean"] + g["std"].fillna(0)).max()) * 1.03)
        ax.set_xticks(x)
        ax.set_xticklabels(order, rotation=50, ha="right", rotation_mode="anchor", fontsize=8)
        ax.set_title(f"{s} ({df[df['data'] == s]['split'].nunique()} splits)", fontsize=10)
        ax.set_ylabel("test RMSE (response units)" if ax is axes[0, 0] else "")
    fig.suptitle(r"Test RMSE of a quadratic ridge on each method's top-$d_0$ directions (dashed: all features)",
                 y=1.0, fontsize=10)
    fig.tight_layout()
    return fig
