"""Figures of the notebook (matplotlib; the suite's style is set by ``config``). Legends and titles use plain text
(mathtext only on axis labels), and log axes get plain tick labels, so each figure draws fast."""
from __future__ import annotations

import numpy as np
import matplotlib.pyplot as plt

from lib.common import plain_log_labels

from .bases import LABELS

COLORS = {"cheb": "C0", "fourier": "C2", "mono": "C1", "onehot": "C3"}
MARKERS = {"cheb": "o", "fourier": "s", "mono": "^", "onehot": "D"}
FLOOR = 1e-18


def _kind(name: str) -> str:
    return name.split("[")[0]


def _dash(name: str) -> str:
    N = int(name.split("[")[1].rstrip("]"))
    return {1: ":", 3: ":", 5: "-", 10: "--", 50: "-.", 100: (0, (1, 1))}.get(N, "-")


def _legend_below(fig, ax, ncol=4):
    h, lab = ax.get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=ncol, frameon=False, fontsize=8)


def fig_task_a(res):
    """F1: the relative gap of the output (averaged iterate) and the capacity error vs joint samples."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for c, name in enumerate(res.names):
        k = _kind(name)
        g = np.maximum(np.median(res.gaps[:, c], axis=0), FLOOR)
        e = np.maximum(np.median(res.cap_err[:, c], axis=0), FLOOR)
        lab = f"{LABELS[k]} N = {res.configs[c][1]}"
        axes[0].plot(res.samples, g, color=COLORS[k], ls=_dash(name), lw=1.4, label=lab)
        axes[1].plot(res.samples, e, color=COLORS[k], ls=_dash(name), lw=1.4, label=lab)
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[0].set_ylabel(r"$(F(\bar x_t) - F^\star)\,/\,(F(x_0) - F^\star)$")
    axes[1].set_ylabel(r"relative capacity error $|c_1 - 1|$")
    for ax in axes:
        ax.set_xlabel("joint samples (xi, eta) drawn")
        plain_log_labels(ax, x=False)
    axes[0].set_title("Task A: optimality gap of the output")
    axes[1].set_title("Task A: capacity error")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    _legend_below(fig, axes[0])
    return fig, axes


def fig_gap_vs_N(res):
    """F2: the final gap per basis and N (filled: StocBiO's output; open: the exact reduced optimum)."""
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    fin = res.final()
    for k, grp in fin.groupby("kind", sort=False):
        grp = grp.sort_values("N")
        ax.plot(grp.N, np.maximum(grp["final rel. gap (median)"], FLOOR), color=COLORS[k], marker=MARKERS[k],
                ls="-", label=f"{LABELS[k]}: StocBiO output")
        ax.plot(grp.N, np.maximum(grp["exact reduced optimum"], FLOOR), color=COLORS[k], marker=MARKERS[k],
                mfc="none", ls=":", label=f"{LABELS[k]}: exact reduced optimum")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of basis functions N")
    ax.set_ylabel("final relative gap")
    ax.set_title(f"Task A: final gap vs N after {int(res.samples[-1]):,} samples")
    plain_log_labels(ax, y=False)
    ax.legend(fontsize=7, ncol=1, frameon=False, loc="best")
    fig.tight_layout()
    return fig, ax


def fig_conditioning(df):
    """F3: lambda_min(E[Phi Phi^T]) vs N per basis (uniform xi), and lambda_min * N."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for k, grp in df.groupby("kind", sort=False):
        axes[0].plot(grp.N, grp.lambda_min, color=COLORS[k], marker=MARKERS[k], ms=4, label=LABELS[k])
        axes[1].plot(grp.N, grp.lambda_min * grp.N, color=COLORS[k], marker=MARKERS[k], ms=4, label=LABELS[k])
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[1].axhspan(0.5, 2.0, color="0.9", zorder=0, label="band [0.5, 2]")
    axes[0].set_ylabel(r"$\lambda_{\min}(E[\Phi\Phi^\top])$")
    axes[1].set_ylabel(r"$N\,\lambda_{\min}$")
    axes[0].set_title("Conditioning of the basis (uniform xi)")
    axes[1].set_title("lambda_min times N (1/N scaling)")
    for ax in axes:
        ax.set_xlabel("number of basis functions N")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    _legend_below(fig, axes[1], ncol=5)
    return fig, axes


def fig_approximation(df):
    """F4: E|W* Phi - y*| and |grad F - grad F_Phi| vs N (Chebyshev and one-hot), at each x."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    styles = ["-", "--", ":"]
    for j, (x, gx) in enumerate(df.groupby("x")):
        for k in ("cheb", "onehot"):
            g = gx[gx.kind == k].sort_values("N")
            axes[0].plot(g.N, np.maximum(g.approx_err, FLOOR), color=COLORS[k], ls=styles[j % 3], marker=MARKERS[k],
                         ms=3, label=f"{LABELS[k]}, x = {x:.2f}")
            axes[1].plot(g.N, np.maximum(g.hg_err, FLOOR), color=COLORS[k], ls=styles[j % 3], marker=MARKERS[k], ms=3,
                         label=f"{LABELS[k]}, x = {x:.2f}")
    N = np.array([1.0, 200.0])
    axes[0].plot(N, 0.1 / N, color="0.5", lw=0.8, label="slope -1")
    axes[1].plot(N, 0.04 / N ** 2, color="0.5", lw=0.8, ls="-.", label="slope -2")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of basis functions N")
        ax.set_ylim(1e-17, 1.0)
    axes[0].set_ylabel(r"$E_\xi|W^\star(x)\Phi(\xi) - y^\star(x,\xi)|$")
    axes[1].set_ylabel(r"$|\nabla F(x) - \nabla F_\Phi(x)|$")
    axes[0].set_title("Approximation error at the reduced optimum")
    axes[1].set_title("Hypergradient error (exact)")
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    _legend_below(fig, axes[1], ncol=4)
    return fig, axes


def fig_task_b(res):
    """F5: validation CE (mean over the temperature grid) vs upper steps; test accuracy at three temperatures."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for c, name in enumerate(res.names):
        k = _kind(name)
        v = res.val[:, c].mean(0)
        axes[0].plot(res.steps, v, color=COLORS[k], ls=_dash(name), marker=MARKERS[k], ms=3,
                     label=f"{LABELS[k]} N = {res.configs[c][1]}")
    axes[0].set_xlabel("upper-level steps")
    axes[0].set_ylabel("validation cross-entropy (mean over xi grid)")
    axes[0].set_title(f"Task B ({res.data_name}, 30% corrupted labels)")
    w = 0.8 / len(res.names)
    for c, name in enumerate(res.names):
        k = _kind(name)
        axes[1].bar(np.arange(len(res.temps)) + (c - (len(res.names) - 1) / 2) * w, res.test_acc[:, c].mean(0), w,
                    color=COLORS[k], alpha=0.5 + 0.5 * (c % 2), label=name)
    axes[1].set_xticks(np.arange(len(res.temps)), [f"xi = {t:g}" for t in res.temps])
    lo = float(res.test_acc.min())
    axes[1].set_ylim(max(0.0, lo - 0.05), min(1.0, float(res.test_acc.max()) + 0.02))
    axes[1].set_ylabel("test accuracy")
    axes[1].set_title("Test accuracy at three temperatures")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    _legend_below(fig, axes[0], ncol=4)
    return fig, axes


def fig_auroc(res):
    """F6: AUROC of -x for detecting corrupted labels, and the learned weights s(x_i) by label status."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    au = res.auroc.mean(0)
    axes[0].bar(range(len(res.names)), au, color=[COLORS[_kind(n)] for n in res.names])
    for i, a in enumerate(au):
        axes[0].text(i, a + 0.01, f"{a:.3f}", ha="center", fontsize=8)
    axes[0].axhline(0.5, color="0.5", lw=0.8, ls=":")
    axes[0].set_xticks(range(len(res.names)), res.names)
    axes[0].set_ylim(0.4, 1.05)
    axes[0].set_ylabel("AUROC")
    axes[0].set_title("Corrupted labels detected by low weight")
    c = res.names.index("cheb[5]") if "cheb[5]" in res.names else 0
    s, bad = res.weights[c]
    bins = np.linspace(0.0, 1.0, 41)
    axes[1].hist(s[~bad], bins=bins, alpha=0.6, color="C0", label="clean label")
    axes[1].hist(s[bad], bins=bins, alpha=0.6, color="C3", label="corrupted label")
    axes[1].set_xlabel("learned weight s(x_i)")
    axes[1].set_ylabel("training points")
    axes[1].set_title(f"Weights learned by {res.names[c]}")
    axes[1].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig, axes


def show(fig, png_path):
    """Show a saved figure inline from its PNG and close it (each figure is drawn once per file format only)."""
    from IPython.display import Image, display

    from PIL import Image as PILImage

    plt.close(fig)
    with PILImage.open(png_path) as im:
        width = im.size[0] // 2
    display(Image(filename=str(png_path), width=width))
