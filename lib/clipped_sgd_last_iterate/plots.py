"""Figures of the notebook (matplotlib; the suite's style is set by ``config``)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from lib.common import heavy_tails as H
from lib.common.figures import plain_log_labels as log_labels

from .solver import rate_exponent

_STYLE = {  # (output or method) -> colour, line style
    ("clip", "last"): ("C0", "-"), ("clip", "uniform"): ("C1", "--"), ("clip", "gamma"): ("C2", "-."),
    ("sgd", "last"): ("0.45", ":"),
}


def _style(clip: bool, output: str):
    return _STYLE[("clip" if clip else "sgd", output)]


def fig_last_vs_average(curves, title: str, letter: str = ""):
    """Two panels: q95 (a) and mean +- sd (b) of f(x_k) - f* against k, log-log, for the clipped last iterate, its
    uniform and gamma-weighted averages, and unclipped SGD's last iterate."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.9), sharey=True)
    for (series, clip, output), df in curves.groupby(["series", "clip", "output"], sort=False):
        color, ls = _style(clip, output)
        axes[0].loglog(df["k"], df["q95"], ls, color=color, lw=1.7, label=series)
        axes[1].loglog(df["k"], df["mean"], ls, color=color, lw=1.7)
        lo = np.maximum(df["mean"] - df["sd"], df["mean"] * 0.05)
        axes[1].fill_between(df["k"], lo, df["mean"] + df["sd"], color=color, alpha=0.15, lw=0)
    axes[0].set_title("(a) 0.95-quantile over runs", fontsize=10)
    axes[1].set_title("(b) mean $\\pm$ sd over runs (band floored at mean/20)", fontsize=10)
    for ax in axes:
        ax.set_xlabel("iteration $k$")
        log_labels(ax)
    axes[0].set_ylabel("$f(x_k) - f^*$")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.935))
    fig.suptitle(f"{letter}{title}: last vs average iterate of Clipped-SGD (same $\\gamma_k$)", fontsize=11, y=0.99)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


def fig_rate(runs, table, kmin: int):
    """Figure 4: q95 of the last-iterate gap on P4 against K, clipped and unclipped, with fitted slopes over
    [kmin, K] and Theorem 1's K^(-(2 alpha - 2)/(3 alpha)) drawn through the clipped curve at kmin."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.3))
    for ax, key in zip(axes, ("P4", "P4a15")):
        r = runs[key]
        k = r.result.checkpoints
        alpha = r.setting.alpha
        slopes = {}
        for clip in (True, False):
            q = np.quantile(r.values(clip, "last"), 0.95, axis=1)
            name = "Clipped-SGD" if clip else "SGD"
            slopes[name] = table[(table["setting"] == key) & (table["method"] == name)].iloc[0]["slope q95"]
            color, ls = _style(clip, "last")
            ax.loglog(k, q, ls, color=color, lw=1.8, marker="o", ms=2.5,
                      label="Clipped-SGD" if clip else "SGD (unclipped), same $\\gamma_k$")
            fit = k >= kmin
            s_, b = H.fit_loglog_slope(k, q, kmin=kmin)
            ax.loglog(k[fit], np.exp(b) * k[fit] ** s_, "-", color=color, lw=0.8, alpha=0.7,
                      label=f"least-squares fits over $K \\geq$ {kmin}" if clip else None)
            if clip:
                q0 = np.interp(np.log(kmin), np.log(k), np.log(q))
                ax.loglog(k[fit], np.exp(q0) * (k[fit] / kmin) ** (-rate_exponent(alpha)), "k--", lw=1.1,
                          label="Theorem 1's $K^{-(2\\alpha-2)/(3\\alpha)}$ through the clipped curve at $K$ = "
                                f"{kmin}")
        ax.axvline(kmin, color="0.7", lw=0.8)
        log_labels(ax)
        ax.set_xlabel("iteration $K$")
        ax.set_ylabel("0.95-quantile of $f(x_K) - f^*$")
        ax.set_title(f"$\\alpha$ = {alpha:g} (tail {r.setting.tail}), $\\gamma_0$ = {r.g0:g}: slopes clipped "
                     f"{slopes['Clipped-SGD']:.2f}, SGD {slopes['SGD']:.2f}, theory {-rate_exponent(alpha):.3f}",
                     fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.935))
    fig.suptitle("P4 ($\\lambda_i = i^{-2}$, d = 50): the last iterate's high-probability rate", fontsize=11, y=0.99)
    fig.tight_layout(rect=(0, 0, 1, 0.87))
    return fig


def fig_tails(samples: dict):
    """Figure 5: ECDFs of the final gaps over runs at alpha = 1.5, Clipped-SGD vs unclipped SGD."""
    fig, axes = plt.subplots(1, len(samples), figsize=(10.5, 3.9), squeeze=False)
    styles = {"Clipped-SGD": ("C0", "-"), "SGD, same $\\gamma_k$": ("C3", "-"),
              "SGD, own tuned $\\gamma_0$": ("C3", "--")}
    for ax, (key, d) in zip(axes[0], samples.items()):
        for name, (color, ls) in styles.items():
            x, p = H.ecdf(d[name])
            ax.step(x, p, where="post", color=color, ls=ls, lw=1.6, label=name)
        ax.axhline(0.95, color="0.6", lw=0.8, ls=":")
        ax.set_xscale("log")
        log_labels(ax, y=False)
        ax.set_xlabel("final gap $f(x_K) - f^*$ (log scale)")
        ax.set_ylabel("fraction of runs $\\leq$ gap")
        ax.set_title(d["title"], fontsize=9.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.935))
    fig.suptitle("Heavy tails at $\\alpha$ = 1.5: empirical CDF of the final last-iterate gap over runs "
                 "(dotted line: the 0.95 level)", fontsize=11, y=0.99)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


def fig_delta(table, K: int, title: str):
    """Figure 6: q95 (and mean) of the final gap against ln(1/delta), with the ln^2(1/delta) envelope through
    delta = 0.1 that claim C4 allows."""
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    x = table["ln(1/delta)"]
    ax.plot(x, table["q95"], "o-", color="C0", lw=1.8, label="0.95-quantile")
    ax.plot(x, table["mean"], "s--", color="C1", lw=1.4, label="mean")
    q01 = float(table.set_index("delta").loc[0.1, "q95"])
    grid = np.linspace(np.log(10), x.max(), 50)
    ax.plot(grid, q01 * (grid / np.log(10)) ** 2, "k:", lw=1.2,
            label="$q_{95}(\\delta=0.1)\\,(\\ln(1/\\delta)/\\ln 10)^2$ (the C4 allowance)")
    ax.set_yscale("log")
    log_labels(ax, x=False)
    ax.set_xlabel("$\\ln(1/\\delta)$")
    ax.set_ylabel(f"$f(x_K) - f^*$ at $K$ = {K}")
    ax.set_title(f"{title}: dependence on the confidence level $\\delta$ (through $\\lambda_k$)", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig
