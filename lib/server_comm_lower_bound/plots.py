"""Figures of the notebook (matplotlib; the suite's style is set by ``config``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from lib.common.figures import plain_log_labels as log_labels

from .simtime import LABELS as SIM_LABELS

_RULE = {"K = 2": ("C3", "s"), "K = 2 ceil(ln(n+1))": ("C0", "o")}
_A = {"e": ("C3", "s"), "1 + 1/K": ("C0", "o")}


def fig_random_sum(df, mode_note=""):
    """(a) normalised E[t_B] vs n for both K rules (markers: Monte Carlo +- 2 SE; lines: exact); (b) the rescaled
    E[t_B] n^(2/K) with the claim's band [0.4, 0.6]."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for rule, g in df.groupby("rule", sort=False):
        color, marker = _RULE[rule]
        mc = g.dropna(subset=["mc"])
        for ax, col, ecol in ((axes[0], "mc", "exact"), (axes[1], "mc_rescaled", "exact_rescaled")):
            scale = 1.0 if col == "mc" else mc["scale"]
            ax.errorbar(mc["n"], mc[col], yerr=2 * mc["se"] * scale, fmt=marker, color=color, ms=4.5, capsize=2,
                        label=f"{rule}: Monte Carlo (+- 2 SE)")
            ax.plot(g["n"], g[ecol], "-", color=color, lw=1.3, label=f"{rule}: exact")
    n = np.array(sorted(df["n"].unique()), dtype=float)
    axes[0].plot(n, 0.5 / n, "k:", lw=1.2, label="1/(2n): the classical 1/n speed-up")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("E[$t_B$] / (B (K/2) min{h/$p_\\sigma$, $\\tau_s$/$p_K$})")
    axes[0].set_title("(a) normalised expected discovery time")
    axes[1].axhspan(0.4, 0.6, color="0.85", zorder=0, label="claim C1's band [0.4, 0.6]")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("normalised E[$t_B$] $\\cdot\\, n^{2/K}$")
    axes[1].set_title("(b) rescaled by $n^{2/K}$: flat means the min over n costs only $n^{2/K}$")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("number of workers n")
        log_labels(ax)
    axes[0].legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Eq. 13: time to discover B blocks of the K-chain, K = 2 (classical) vs K = 2 ceil(ln(n+1))"
                 + mode_note, fontsize=11)
    fig.tight_layout()
    return fig


def fig_lemma31(pts, summary):
    """||grad F|| against prog_K at random sparse points, one panel per K, both a; the line ||grad F|| = 1."""
    Ks = sorted(pts["K"].unique())
    fig, axes = plt.subplots(1, len(Ks), figsize=(11, 3.9), sharey=True)
    rng = np.random.default_rng(0)          # jitter only (drawing), not data
    for ax, K in zip(axes, Ks):
        for a_name, g in pts[pts["K"] == K].groupby("a"):
            color, marker = _A[a_name]
            off = -0.17 if a_name == "e" else 0.17
            ax.scatter(g["prog"] + off + rng.uniform(-0.08, 0.08, len(g)), g["grad_norm"], s=7, alpha=0.45,
                       color=color, marker=marker, label=f"a = {a_name}", rasterized=True)
        ax.axhline(1.0, color="k", lw=1.0, ls="--", label="$\\|\\nabla F\\| = 1$")
        s = summary[summary["K"] == K]
        ax.set_title(f"K = {K}: support violations {int(s['support violations'].sum())}, "
                     f"min $\\|\\nabla F\\|$ (prog < T) {s['min ||grad F|| (prog < T)'].min():.2f}", fontsize=9)
        ax.set_xlabel("prog$_K(x)$")
        ax.set_xticks(range(0, int(pts["prog"].max()) + 1, 2))
        ax.set_yscale("log")
        log_labels(ax, x=False)
    axes[0].set_ylabel("$\\|\\nabla F_{T,K,a}(x)\\|$")
    axes[0].legend(fontsize=8, loc="upper right")
    fig.suptitle("Lemma 3.1 on random sparse points (T = 12): the gradient stays above 1 until the chain is complete",
                 fontsize=11)
    fig.tight_layout()
    return fig


def fig_lemma32(df):
    """Sup estimates (markers) against Lemma 3.2's formulas (lines), log-y vs K, for a = e and a = 1 + 1/K."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.0))
    spec = (("drop_est", "Delta_0", "(F(0) - inf F) / T  vs  $\\Delta_0$"),
            ("hess_est", "ell_1", "$\\|\\nabla^2 F\\|_{op}$  vs  $\\ell_1$"),
            ("ginf_est", "gamma_inf", "$\\|\\nabla F\\|_\\infty$  vs  $\\gamma_\\infty$"))
    for ax, (est, formula, title) in zip(axes, spec):
        for a_name, g in df.groupby("a"):
            color, marker = _A[a_name]
            ax.plot(g["K"], g[formula], "-", color=color, lw=1.6, label=f"formula, a = {a_name}")
            ax.plot(g["K"], g[est], marker, color=color, ms=5, mfc="none", label=f"sampled sup, a = {a_name}")
        ax.set_yscale("log")
        ax.set_xlabel("chain width K")
        ax.set_xticks(sorted(df["K"].unique()))
        ax.set_title(title, fontsize=10)
        log_labels(ax, x=False)
    axes[0].legend(fontsize=7.5)
    fig.suptitle("Lemma 3.2: a = e grows like $e^K$, a = 1 + 1/K polynomially; random search (T = 6) stays below "
                 "every formula", fontsize=11)
    fig.tight_layout()
    return fig


_CURVES = (("sync_free", "sync SGD, free communication", "0.6", ":"),
           ("batch_sgd", "Batch SGD (uncompressed)", "C1", "-"),
           ("single_sgd", "single-worker SGD", "C2", "-"),
           ("qsgd_tau0", "Batch QSGD, $\\tau_s$ = 0 (Eq. 2)", "C4", "--"),
           ("qsgd", "Batch QSGD with $\\tau_s$ (Eq. 4)", "C0", "-"))


def fig_landscape(L):
    """Time vs n (log-log) for both tau_s, with the lower bound's band."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), sharey=True)
    for ax, key, title in ((axes[0], "equal", "$\\tau_s = \\tau_w$"), (axes[1], "small", "$\\tau_s = \\tau_w/100$")):
        c = L[key]
        ax.fill_between(c["n"], c["lb_low"], c["lb_high"], color="0.8", alpha=0.7,
                        label="lower bound shape (band: poly-log slack)")
        for k, label, color, ls in _CURVES:
            ax.plot(c["n"], c[k], ls, color=color, lw=1.7, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of workers n")
        ax.set_title(f"{title}  (d = {L['problem'].d:g}, $\\sigma^2/\\varepsilon$ = {L['problem'].s2e:g}, "
                     f"$\\tau_w d$ = {L['tau_w'] * L['problem'].d:g} h)", fontsize=9.5)
        log_labels(ax)
    axes[0].set_ylabel("time / (L$\\Delta/\\varepsilon$)  [s]")
    axes[0].legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Thm 1.6 / Eqs. 2, 4, 5: with server-side communication, compression beats min(Batch SGD, single "
                 "SGD) by at most 2x unless $\\tau_s \\ll \\tau_w$", fontsize=10.5)
    fig.tight_layout()
    return fig


def fig_simtime(res, ns):
    """Total simulated time (mean +- sd over the claim runs) and iterations vs n for the three methods."""
    t = res["table"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"sync": "C1", "randk": "C0", "single": "C2"}
    for m in ("sync", "randk", "single"):
        g = t[t["method"] == m].sort_values("n")
        if m == "single":
            for ax, col, sd in ((axes[0], "time", "time_sd"), (axes[1], "iters", "iters_sd")):
                ax.axhline(float(g[col].iloc[0]), color=colors[m], lw=1.6, ls="--", label=SIM_LABELS[m])
            continue
        for ax, col, sd in ((axes[0], "time", "time_sd"), (axes[1], "iters", "iters_sd")):
            ax.errorbar(g["n"], g[col], yerr=g[sd], fmt="-o", color=colors[m], ms=4, capsize=2, label=SIM_LABELS[m])
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("number of workers n")
        log_labels(ax, x=False)
        ax.set_xticks(list(ns), [str(v) for v in ns])
        ax.minorticks_off()
    axes[0].set_ylabel("simulated time to $\\|\\nabla f\\|^2 \\leq \\varepsilon$  [s]")
    axes[1].set_ylabel("iterations to $\\|\\nabla f\\|^2 \\leq \\varepsilon$")
    axes[0].set_title("(a) iterations x time model ($\\tau_s = \\tau_w$)", fontsize=10)
    axes[1].set_title("(b) iterations, each method at its tuned step", fontsize=10)
    axes[0].legend(fontsize=7.5)
    fig.suptitle("An illustration, not a lower-bound instance: RandK-uplink SGD plateaus once the downlink "
                 "$\\tau_s d$ dominates", fontsize=10.5)
    fig.tight_layout()
    return fig
