"""Figures of the notebook (matplotlib; the suite's style is set by ``config``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from lib.common import heavy_tails as H
from lib.common.figures import plain_log_labels as log_labels

from .experiments import LABELS

_VAR = {"refined": ("C0", "o"), "old": ("C3", "s"), "sgd": ("0.45", "^")}
_K = {1: "C1", 16: "C2", 64: "C0", 256: "C4"}


def _legend_top(fig, axes, ncol, title, rect_top=0.86):
    handles, labels = [], []
    for ax in np.atleast_1d(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="upper center", ncol=ncol, fontsize=8.3, frameon=False,
               bbox_to_anchor=(0.5, 0.935))
    fig.suptitle(title, fontsize=11, y=0.99)
    fig.tight_layout(rect=(0, 0, 1, rect_top))


def fig_rate(rates, slopes, pred_of, title, ylabel="$F(\\bar x_T) - F^*$", series_label="refined"):
    """Mean (solid) and q95 (dashed) of the error against T, per p and k, with the fitted slope of the mean and the
    reference T^pred drawn through the k = 1 mean at the smallest T."""
    ps = sorted(rates["p"].unique())
    fig, axes = plt.subplots(1, len(ps), figsize=(10.5, 4.1), squeeze=False)
    for ax, p in zip(axes[0], ps):
        g = rates[rates["p"] == p]
        for k, gk in g.groupby("k"):
            sl = slopes[(slopes["p"] == p) & (slopes["k"] == k)]["slope mean"].iloc[0]
            ax.loglog(gk["T"], gk["mean"], "-o", color=_K[k], ms=3.5, lw=1.7)
            ax.loglog(gk["T"], gk["q95"], "--", color=_K[k], lw=1.1)
            ax.annotate(f"k = {k}: slope {sl:.2f}", (gk["T"].iloc[-1], gk["mean"].iloc[-1]), textcoords="offset points",
                        xytext=(-4, -12), ha="right", fontsize=8, color=_K[k])
        T = np.sort(g["T"].unique())
        m0 = g[(g["k"] == g["k"].min()) & (g["T"] == T[0])]["mean"].iloc[0]
        ax.loglog(T, m0 * (T / T[0]) ** pred_of(p), "k:", lw=1.3)
        ax.set_title(f"p = {p:g}: reference slope {pred_of(p):.3f}", fontsize=10)
        ax.set_xlabel("horizon $T$")
        ax.set_ylabel(ylabel)
        log_labels(ax)
    ax = axes[0][0]
    ax.plot([], [], "-o", color="0.3", ms=3.5, label=f"mean over runs ({series_label})")
    ax.plot([], [], "--", color="0.3", label="0.95-quantile")
    ax.plot([], [], "k:", label="theory's rate through the k = 1 mean at the smallest T")
    for k in sorted(rates["k"].unique()):
        ax.plot([], [], "-", color=_K[k], label=f"k = {k}")
    _legend_top(fig, axes[0][:1], 5, title, rect_top=0.89)
    return fig


def fig_deff(deff, T: int):
    """Mean error at T_main against d_eff for the refined and old thresholds and unclipped SGD, per p, with the
    reference d_eff^(-(2-p)/(2p)) drawn through the refined k = 1 value."""
    ps = sorted(deff["p"].unique())
    fig, axes = plt.subplots(1, len(ps), figsize=(10.5, 4.1), squeeze=False)
    for ax, p in zip(axes[0], ps):
        g = deff[deff["p"] == p]
        for v, gv in g.groupby("variant"):
            color, marker = _VAR[v]
            gv = gv.sort_values("d_eff")
            ax.loglog(gv["d_eff"], gv["mean"], "-", marker=marker, color=color, lw=1.7, label=f"{LABELS[v]}: mean")
            ax.loglog(gv["d_eff"], gv["q95"], "--", marker=marker, color=color, lw=1.0, ms=3, mfc="none")
        ref = g[g["variant"] == "refined"].sort_values("d_eff")
        x = ref["d_eff"].to_numpy()
        ax.loglog(x, ref["mean"].iloc[0] * x ** (-(2 - p) / (2 * p)), "k:", lw=1.3,
                  label="$d_{eff}^{-(2-p)/(2p)}$ through the refined $k = 1$ mean")
        for _, r in ref.iterrows():
            ax.annotate(f"k={int(r['k'])}", (r["d_eff"], r["mean"]), textcoords="offset points", xytext=(3, 5),
                        fontsize=7.5, color="C0")
        ax.set_xlabel("generalised effective dimension $d_{eff}$ (noise in $k$ coordinates)")
        ax.set_ylabel(f"$F(\\bar x_T) - F^*$ at $T$ = {T}")
        ax.set_title(f"p = {p:g} (Pareto tail {p + 0.1:g}); dashed: 0.95-quantile", fontsize=10)
        log_labels(ax)
    _legend_top(fig, axes[0], 2, "The $d_{eff}$ speed-up at fixed $\\sigma_l$ and $T$: refined vs old clipping threshold "
                "(each $c_\\eta$ tuned)", rect_top=0.84)
    return fig


def fig_lemma1(L: dict):
    """Lemma 1 by Monte Carlo: (a) bias under the one-sided spike with MC error bars and the refined prefactor
    sigma_s sigma_l^(p-1) tau^(1-p) per k vs the old sigma_l^p tau^(1-p); (b) ||Cov d^u||_op and (c) Tr Cov d^u under the
    isotropic noise, with reference slopes."""
    p, sig = L["p"], L["sigma_l"]
    fig, axes = plt.subplots(1, 3, figsize=(12.5, 4.0))
    sp, iso = L["spike"], L["iso"]
    tau = np.sort(sp["tau"].unique())
    a1 = sp[(sp["k"] == 1)].sort_values("tau")
    const = a1["bias_norm"].iloc[0] / (sig ** p * tau[0] ** (1 - p))     # anchors the bound shapes at k = 1, tau_min
    for k, g in sp.groupby("k"):
        g = g.sort_values("tau")
        ok = g["bias_norm"] > 3 * g["mc_error"]
        axes[0].errorbar(g["tau"][ok], g["bias_norm"][ok], yerr=g["mc_error"][ok], fmt="o-", color=_K[k], ms=3.5,
                         lw=1.5, capsize=2, label=f"k = {k}")
        axes[0].plot(g["tau"][~ok], g["bias_norm"][~ok], "o", color=_K[k], mfc="none", ms=4)
        ss = H.sigma_s_of(k, p, kind="spike") * sig
        axes[0].loglog(tau, const * ss * sig ** (p - 1) * tau ** (1 - p), ":", color=_K[k], lw=1.1)
    axes[0].loglog(tau, const * sig ** p * tau ** (1 - p), "k--", lw=1.0, label="old bound shape $\\sigma_l^p\\tau^{1-p}$")
    axes[0].plot([], [], "k:", label="refined $\\sigma_s\\sigma_l^{p-1}\\tau^{1-p}$ (per k)")
    axes[0].set_title("(a) bias $\\|d^b\\|$, one-sided spike\n(open: within 3 MC errors)", fontsize=9.5)
    axes[0].set_ylabel("$\\|E[g^c] - \\nabla f\\|$")
    for k, g in iso.groupby("k"):
        g = g.sort_values("tau")
        axes[1].loglog(g["tau"], g["cov_op"], "o-", color=_K[k], ms=3.5, lw=1.5)
        axes[2].loglog(g["tau"], g["cov_trace"], "o-", color=_K[k], ms=3.5, lw=1.5)
    for ax, col, name in ((axes[1], "cov_op", "(b) $\\|\\mathrm{Cov}\\,d^u\\|_{op}$, isotropic noise"),
                          (axes[2], "cov_trace", "(c) $\\mathrm{Tr\\,Cov}\\,d^u = E\\|d^u\\|^2$, isotropic noise")):
        g1 = iso[iso["k"] == 1].sort_values("tau")
        ax.loglog(tau, g1[col].iloc[-1] * (tau / tau[-1]) ** (2 - p), "k:", lw=1.1)
        ax.set_title(name, fontsize=9.5)
    axes[1].plot([], [], "k:", label="(b, c) slope $2-p$ through k = 1 at the largest $\\tau$")
    for ax in axes:
        ax.set_xlabel("clipping threshold $\\tau$")
        log_labels(ax)
    _legend_top(fig, axes, 5, f"Lemma 1 by Monte Carlo: p = {p:g}, Pareto tail {L['tail']:g}, $\\sigma_l$ = {sig:g}, "
                "$\\|\\nabla f\\| = G/2$", rect_top=0.84)
    return fig


def fig_delta(t, p=1.5):
    """(1 - delta)-quantile against ln(1/delta), refined vs old, with the shapes ln^(1-1/p) and ln through delta = 0.1."""
    fig, ax = plt.subplots(figsize=(6.4, 4.1))
    for v, g in t.groupby("variant"):
        g = g.sort_values("delta", ascending=False)
        color, marker = _VAR[v]
        ax.plot(g["ln(1/delta)"], g["quantile 1-delta"], "-", marker=marker, color=color, lw=1.7, label=LABELS[v])
        x = np.linspace(g["ln(1/delta)"].min(), g["ln(1/delta)"].max(), 30)
        expo = 1 - 1 / p if v == "refined" else 1.0
        ax.plot(x, g["quantile 1-delta"].iloc[0] * (x / x[0]) ** expo, ":", color=color, lw=1.1,
                label=f"$\\ln^{{{expo:.2g}}}(1/\\delta)$ shape through $\\delta$ = 0.1")
    ax.set_yscale("log")
    log_labels(ax, x=False)
    ax.set_xlabel("$\\ln(1/\\delta)$ (each method built with this $\\delta$)")
    ax.set_ylabel("$(1-\\delta)$-quantile of $F(\\bar x_T) - F^*$")
    ax.set_title(f"p = {p:g}, largest k: the high-probability dependence on $\\delta$", fontsize=10)
    ax.legend(fontsize=7.8, loc="best")
    fig.tight_layout()
    return fig
