"""Figures F1-F5 (matplotlib, the suite's style)."""
from __future__ import annotations

import numpy as np
import pandas as pd

COLORS = {"MvM": "C0", "EMC": "C1", "EMC (oracle order)": "C2", "UCB-greedy": "C3", "random": "0.45",
          "UCB-EO": "C4", "DP": "C0", "brute force": "C3"}


def plot_offline(off):
    """F1: SP-Matching's value against brute force on small instances; running time as K grows."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.5, 4.0))
    d = off.instances
    for kind, marker, col in (("unit", "o", "C0"), ("integer 1-3", "^", "C1")):
        s = d[d.costs == kind]
        a.scatter(s.brute_force, s.dp, s=16, marker=marker, color=col, alpha=0.7, rasterized=True,
                  label=f"{kind} costs ({int(s.agree.sum())}/{len(s)} equal)")
    hi = float(max(d.brute_force.max(), d.dp.max())) * 1.05
    a.plot([0, hi], [0, hi], color="0.3", lw=1, ls="--", label="identity")
    a.set_xlabel(r"brute force optimum $\max_{c(S)\leq B} V(S)$")
    a.set_ylabel(r"SP-Matching value $V^*$")
    a.set_title(f"(a) DP = brute force on {len(d)} random small instances")
    a.legend(loc="upper left")
    t = off.timing
    b.semilogy(t.K, t.dp_s * 1e3, "o-", color=COLORS["DP"], label=r"SP-Matching DP, $O(K^2U + K^2B)$")
    b.semilogy(t.K, t.brute_force_s * 1e3, "s-", color=COLORS["brute force"],
               label=r"brute force over sets, $O(2^K\,UK)$")
    b.set_xlabel(r"number of arms $K$  ($U=%d$, $B=K/2$, unit costs)" % int(t.U.iloc[0]))
    b.set_ylabel("wall-clock time per solve [ms] (fastest of a few)")
    b.set_title("(b) running time as $K$ grows")
    b.legend(loc="upper left")
    fig.suptitle("F1: the offline problem, SP-Matching against brute force", fontsize=11)
    fig.tight_layout()
    return fig


def plot_mvm(mv, summary: dict):
    """F2: MvM's cumulative regret against t (mean and 5-95% band) with a C sqrt(t) reference; log-log view."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.5, 4.0))
    lo, hi = mv.band()
    mean = mv.mean
    C = mean[-1] / np.sqrt(mv.T)
    n = len(mv.final)
    for ax in (a, b):
        ax.fill_between(mv.t, lo, hi, color=COLORS["MvM"], alpha=0.25, lw=0, label="5-95% of runs")
        ax.plot(mv.t, mean, color=COLORS["MvM"], lw=2, label=f"MvM, mean of {n} runs")
        ax.plot(mv.t, C * np.sqrt(mv.t), color="0.2", ls="--", lw=1.2, label=r"$C\sqrt{t}$ (through the end point)")
        ax.set_xlabel("round $t$")
        ax.set_ylabel(r"cumulative regret $R(t)$")
    a.set_title("(a) cumulative regret (the paper's view)")
    a.legend(loc="upper left")
    b.set_xscale("log")
    b.set_yscale("log")
    b.axvspan(mv.T / 2, mv.T, color="0.85", alpha=0.6, lw=0, label=r"fit range $[T/2, T]$")
    b.set_title(f"(b) log-log: slope over the second half = {summary['slope_second_half']:.2f}")
    b.legend(loc="upper left")
    fig.suptitle("F2: Match-via-Maximal (known order) regret grows like $\\sqrt{t}$", fontsize=11)
    fig.tight_layout()
    return fig, a


def plot_emc(emc_mean: pd.DataFrame, slopes: pd.DataFrame, upper: np.ndarray):
    """F3: EMC's final regret against T (log-log), fitted slope, and slope-2/3 and slope-1/2 references."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    for method, marker in (("EMC", "o"), ("EMC (oracle order)", "x")):
        d = emc_mean[emc_mean.method == method].sort_values("T")
        col = COLORS[method]
        ax.fill_between(d["T"], d.q05, d.q95, color=col, alpha=0.15, lw=0)
        ax.plot(d["T"], d["mean"], marker=marker, color=col, lw=1.6 if method == "EMC" else 1.0,
                label=f"{method}: slope {slopes.loc[method, 'slope_upper_half']:.2f} over the upper half")
    d = emc_mean[emc_mean.method == "EMC"].sort_values("T")
    up = d[d["T"].isin(upper)]
    s = slopes.loc["EMC", "slope_upper_half"]
    Tm, Rm = float(up["T"].iloc[-1]), float(up["mean"].iloc[-1])
    Tg = np.geomspace(float(up["T"].iloc[0]), Tm, 20)
    ax.plot(Tg, Rm * (Tg / Tm) ** s, color="k", lw=1, label=f"fit over $T\\geq${int(up['T'].iloc[0]):,}")
    Tall = np.geomspace(float(d["T"].min()), Tm, 20)
    ax.plot(Tall, Rm * (Tall / Tm) ** (2 / 3), color="0.35", ls="--", lw=1, label=r"slope $2/3$ reference")
    ax.plot(Tall, Rm * (Tall / Tm) ** 0.5, color="0.35", ls=":", lw=1.2, label=r"slope $1/2$ reference")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("horizon $T$ [rounds]")
    ax.set_ylabel(r"final regret $R(T)$ (closed form)")
    ax.set_title("F3: Explore-then-commit with order extraction, regret against $T$ (mean, 5-95%)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def plot_extraction(table: pd.DataFrame, exact: pd.DataFrame, K: int):
    """F4: Extract-Order's success rate and the projection error ||P_sp - P||_inf / eps against T."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.5, 3.9))
    a.plot(table.index, table.success, "o-", color=COLORS["EMC"], label=r"EMC's $\hat P$, $\varepsilon=\sqrt{2\ln T/N}$")
    a.axhline(0.9, color="0.4", ls=":", lw=1, label="90% (claim C4b)")
    a.axhline(float(exact.single_peaked.mean()), color=COLORS["EMC (oracle order)"], ls="--", lw=1.2,
              label=f"exact permuted $P$, $\\varepsilon=0$ ({int(exact.single_peaked.sum())}/{len(exact)})")
    a.set_xscale("log")
    a.set_ylim(-0.03, 1.08)
    a.set_xlabel("horizon $T$ [rounds]")
    a.set_ylabel("share of runs with an order")
    a.set_title("(a) Extract-Order succeeds")
    a.legend(loc="lower right")
    b.plot(table.index, table["err/eps max"], "o-", color=COLORS["EMC"], label="max over runs")
    b.plot(table.index, table["err/eps mean"], "o--", color=COLORS["EMC"], alpha=0.6, label="mean over runs")
    b.axhline(2 * K + 1, color="C3", lw=1.2, label=f"Lemma 6 bound $2K+1 = {2 * K + 1}$")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("horizon $T$ [rounds]")
    b.set_ylabel(r"$\|P_{sp} - P\|_\infty \,/\, \varepsilon$")
    b.set_title("(b) the SP projection stays within $(2K+1)\\varepsilon$")
    b.legend(loc="center right")
    fig.suptitle("F4: order approximation (consecutive-ones / PQ-tree step and Lemma 6)", fontsize=11)
    fig.tight_layout()
    return fig


def _method_color(m: str) -> str:
    for key in ("MvM", "UCB-greedy", "EMC (oracle order)", "EMC", "random"):
        if m.startswith(key):
            return COLORS[key]
    return "0.5"


def plot_summary(cmp, eo):
    """F5: every method's final regret at one horizon; UCB-EO beside MvM and EMC at its own horizon."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11.5, 4.3), gridspec_kw={"width_ratios": [1.25, 1]})
    f = cmp.finals
    methods = list(dict.fromkeys(f.method))
    means = f.groupby("method").final_regret.mean().reindex(methods)
    y = np.arange(len(methods))
    a.barh(y, means.values, color=[_method_color(m) for m in methods], alpha=0.75)
    for k, m in enumerate(methods):
        v = f[f.method == m].final_regret.values
        a.scatter(v, np.full(len(v), k), s=10, color="k", zorder=3, rasterized=True)
    a.set_yticks(y, methods)
    a.invert_yaxis()
    a.set_xscale("log")
    a.set_xlabel(f"final regret $R(T)$ at $T$ = {cmp.T:,} (bars: mean; dots: runs)")
    a.set_title("(a) all methods on the same instances")
    for name, res, col in (("UCB-EO (unknown order)", eo.ucb_eo, COLORS["UCB-EO"]),
                           ("MvM (known order)", eo.mvm, COLORS["MvM"])):
        lo, hi = res.band()
        b.fill_between(res.t, lo, hi, color=col, alpha=0.2, lw=0)
        b.plot(res.t, res.mean, color=col, lw=1.8, label=name)
    b.scatter([eo.T], [eo.emc_final.mean()], marker="D", color=COLORS["EMC"], zorder=3,
              label="EMC at $T$ (closed form)")
    b.set_xlabel("round $t$")
    b.set_ylabel("cumulative regret $R(t)$")
    b.set_title(f"(b) UCB-EO at $T$ = {eo.T:,} ({len(eo.ucb_eo.final)} runs)")
    b.legend(loc="upper left")
    fig.suptitle("F5: summary, structure-aware learners against structure-blind baselines", fontsize=11)
    fig.tight_layout()
    return fig
