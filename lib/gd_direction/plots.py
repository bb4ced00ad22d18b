"""The figures, in the suite's style (one legend per multi-panel figure, mathtext labels)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .dynamics import WINDOW, directions, distances
from .toys import TOYS

C_FIXED, C_OSC = "#0072B2", "#D55E00"
C_LIMIT = "#B2182B"  # the stability line 2/eta (and 2/lambda_n)
OPT_NAMES = {"gd": "GD (full batch)", "sgdm": "SGD + momentum", "adam": "Adam"}
OPT_COLORS = {"gd": "#0072B2", "sgdm": "#009E73", "adam": "#CC79A7"}


def _contours(ax, toy, lim):
    g = np.linspace(-lim, lim, 81)
    P = np.stack(np.meshgrid(g, g), -1)
    F = toy.f(P)
    levels = np.quantile(F[F > 0], np.linspace(0.02, 0.9, 9))
    ax.contour(g, g, F, levels=np.unique(levels), colors="0.75", linewidths=0.6)


def fig_toys(runs):
    """Figure 1: trajectories on f_a and f_b (rows) at eta = 0.1 and 0.42 (columns), with the normalised directions
    u_k of the iterates in the measurement window drawn as arrows from x*."""
    etas = sorted({r.eta for r in runs})
    names = list(dict.fromkeys(r.toy for r in runs))
    fig, axes = plt.subplots(len(names), len(etas), figsize=(7.4, 7.0), squeeze=False)
    for r in runs:
        ax = axes[names.index(r.toy), etas.index(r.eta)]
        toy = TOYS[r.toy]
        lim = 1.15 * np.abs(r.X[0]).max()
        _contours(ax, toy, lim)
        color = C_FIXED if r.regime == "fixed" else C_OSC
        n = min(len(r.X), 60)
        ax.plot(r.X[:n, 0], r.X[:n, 1], "-o", color=color, ms=2.5, lw=0.8, label="GD iterates $x_k$")
        ax.plot(*r.X[0], "k^", ms=6, label="start $x_0$")
        d = distances(r.X, toy.xstar)
        inside = np.flatnonzero((d > WINDOW[0]) & (d < WINDOW[1]))
        if inside.size:
            step = max(1, inside.size // 12) | 1  # odd, so an alternating u_k shows both of its signs
            U = directions(r.X[inside[::step]], toy.xstar)
            ax.quiver(np.zeros(len(U)), np.zeros(len(U)), U[:, 0], U[:, 1], color="k", angles="xy", scale_units="xy",
                      scale=1.6 / lim, width=0.008, zorder=5, label=r"$u_k$ in the window (arrows from $x^*$)")
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        m = r.measures
        ax.set_title(f"{r.toy}, η = {r.eta:g}: {r.regime}\n|<u,e_x>| = {m['align_v1']:.4f}, "
                     f"|<u,e_y>| = {m['align_vn']:.4f}, c = {m['cos']:+.4f}", fontsize=9)
        ax.set_xlabel("$x$")
        ax.set_ylabel("$y$")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("GD on the paper's Fig. 1 toys: a fixed direction (e_x) below η_c = 0.4,\n"
                 "oscillation along e_y above it", fontsize=11)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.86, wspace=0.35, hspace=0.45)
    return fig


def fig_fc(fc_runs):
    """Figure 2: f_c at eta = 0.1 and 0.95: sharpness with lambda_n and 2/eta, loss, trajectory."""
    fig, axes = plt.subplots(len(fc_runs), 3, figsize=(11.5, 3.3 * len(fc_runs)))
    for i, fr in enumerate(fc_runs):
        r = fr.run
        color = C_FIXED if r.regime == "fixed" else C_OSC
        k = np.arange(len(r.X))
        n = min(int(np.flatnonzero(fr.live)[-1]) + 1, 120) if fr.live.any() else len(k)
        a, b, c = axes[i]
        a.plot(k[:n], fr.sharp[:n], "-", color=color, lw=1, marker=".", ms=3, label=r"sharpness $s_k$")
        a.axhline(2.0, color="k", lw=0.9, label=r"$\lambda_n = 2$")
        a.axhline(2 / r.eta, color=C_LIMIT, ls="--", lw=1, label=r"$2/\eta$")
        top = max(fr.sharp[:n].max(), 2 / r.eta if 2 / r.eta < 3 else fr.sharp[:n].max())
        a.set_ylim(min(fr.sharp[:n].min(), 2.0) - 0.05, top + 0.05)
        a.set_xlabel("step $k$")
        a.set_ylabel(r"$\lambda_{\max}(\nabla^2 f(x_k))$")
        a.set_title(f"η = {r.eta:g}: sharpness ({r.regime})", fontsize=10)
        if 2 / r.eta > 3:
            a.text(0.98, 0.95, f"2/η = {2 / r.eta:g} (off scale)", transform=a.transAxes, ha="right",
                   va="top", fontsize=8, color=C_LIMIT)
        b.plot(k[:n], np.log10(np.maximum(fr.loss[:n], 1e-300)), color=color, lw=1.2)
        b.set_xlabel("step $k$")
        b.set_ylabel(r"$\log_{10} f(x_k)$")
        b.set_title(f"η = {r.eta:g}: loss", fontsize=10)
        lim = 1.3 * np.abs(r.X[0]).max()
        _contours(c, TOYS["f_c"], lim)
        m = min(n, 60)
        c.plot(r.X[:m, 0], r.X[:m, 1], "-o", color=color, ms=2.5, lw=0.8)
        c.plot(*r.X[0], "k^", ms=6)
        c.set_xlim(-lim, lim)
        c.set_ylim(-lim, lim)
        c.set_aspect("equal")
        c.set_xlabel("$x$")
        c.set_ylabel("$y$")
        c.set_title(f"η = {r.eta:g}: trajectory", fontsize=10)
    handles, labels = axes[-1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.01))
    fig.suptitle("f_c (paper Fig. 2): the sharpness converges monotonically at η = 0.1; at η = 0.95 it oscillates "
                 "around λ_n and crosses 2/η", fontsize=11)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.9, wspace=0.33, hspace=0.45)
    return fig


def fig_regimes(sweep):
    """Figure 3: the asymptotic c_k and alignments against eta/eta_c on the logistic problem; returns the figure
    and the c_k panel (the gallery thumbnail)."""
    runs, summ, spec = sweep.runs, sweep.summary, sweep.spectrum
    limit = 2.0 / spec["lambda_n"] / spec["eta_c"]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharex=True)
    panels = [("cos", r"asymptotic $c_k$", (-1.08, 1.08)), ("align_v1", r"$|\langle u_k, v_1\rangle|$", (-0.03, 1.03)),
              ("align_vn", r"$|\langle u_k, v_n\rangle|$", (-0.03, 1.03))]
    for ax, (col, label, ylim) in zip(axes, panels):
        ax.scatter(runs["eta/eta_c"], runs[col], s=10, color="0.55", alpha=0.6, label="one start", zorder=2)
        colors = np.where(summ["eta/eta_c"] < 1, C_FIXED, C_OSC)
        ax.plot(summ["eta/eta_c"], summ[col], "-", color="0.3", lw=0.8, zorder=3)
        ax.scatter(summ["eta/eta_c"], summ[col], s=28, c=colors, zorder=4, label="median over starts")
        if col == "align_v1":
            ax.plot(summ["eta/eta_c"], summ["align_bottom"], ":", color="#009E73", lw=1.4,
                    label=r"norm on the eigenvectors with $\lambda \leq 1.01\lambda_1$")
        ax.axvline(1.0, color="k", lw=0.9, label=r"$\eta_c = 2/(\lambda_1+\lambda_n)$")
        ax.axvline(limit, color=C_LIMIT, ls="--", lw=0.9, label=r"$2/\lambda_n$")
        ax.set_ylim(*ylim)
        ax.set_xlabel(r"$\eta/\eta_c$")
        ax.set_ylabel(label)
    axes[0].axhline(0, color="0.5", lw=0.6)
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=5, frameon=False, bbox_to_anchor=(0.5, -0.02), fontsize=8)
    fig.suptitle(f"Logistic regression on breast cancer (μ = {sweep.spectrum.get('mu', 1.0):g}, "
                 f"λ_1/λ_n = {spec['lambda_1/lambda_n']:.2f}): the regime flips at η_c", fontsize=11)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.27, top=0.88, wspace=0.3)
    return fig, axes[0]


def fig_networks(runs):
    """Figure 4: c_k of successive updates (per step for GD, per epoch for SGD-momentum and Adam) and the loss."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    twins = []
    for ax, opt in zip(axes, ("gd", "sgdm", "adam")):
        df = runs.curves[runs.curves["optimiser"] == opt]
        g = df.groupby("t")
        t = np.asarray(sorted(df["t"].unique()))
        mc, sc = g["c"].mean().to_numpy(), g["c"].std().fillna(0).to_numpy()
        ml = g["loss"].mean().to_numpy()
        ax.plot(t, mc, color=OPT_COLORS[opt], lw=1.4, label=r"$c_k$ (mean over seeds)")
        if df["seed"].nunique() > 1:
            ax.fill_between(t, mc - sc, mc + sc, color=OPT_COLORS[opt], alpha=0.25, lw=0, label=r"$\pm$ 1 s.d.")
        ax.axhline(1.0, color="0.6", lw=0.6)
        ax.axhline(0.0, color="0.6", lw=0.6)
        ax.set_ylim(-1.05, 1.05)
        unit = "step" if opt == "gd" else "epoch"
        ax.set_xlabel(f"{unit} (Δx per {unit})")
        ax.set_ylabel(r"$\cos\angle(\Delta x_{k+1}, \Delta x_k)$")
        ax.set_title(f"{OPT_NAMES[opt]}, lr = {runs.lrs[opt]:g}", fontsize=10)
        tx = ax.twinx()
        tx.plot(t, ml, color="k", ls="--", lw=1, label="training loss (CE, right axis)")
        tx.set_ylim(0, None)
        tx.set_ylabel("training loss")
        tx.grid(False)
        twins.append(tx)
    h1, l1 = axes[0].get_legend_handles_labels()
    h2, l2 = twins[0].get_legend_handles_labels()
    fig.legend(h1 + h2, l1 + l2, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"Small CNN on {runs.data} ({runs.n_train} images, {runs.n_params} parameters): "
                 "successive updates align (paper Sec. 3.3)", fontsize=11)
    fig.subplots_adjust(left=0.06, right=0.94, bottom=0.25, top=0.86, wspace=0.55)
    return fig


def fig_eos(run):
    """Figure 5: the MLP's sharpness against 2/eta, its loss and c_k under large-learning-rate GD."""
    f = run.final
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    a, b, c = axes
    a.plot(run.sharp_at, run.sharpness, color=C_OSC, lw=1.3, label=r"$\lambda_n(x_k)$ (eigh)")
    a.axhline(2 / run.lr, color=C_LIMIT, ls="--", lw=1, label=r"$2/\eta$")
    if len(run.lam_min):
        a.plot(run.sharp_at, 2 / run.lr - run.lam_min, color="0.4", ls=":", lw=1.2,
               label=r"$2/\eta - \lambda_1(x_k)$ (Theorem 1's oscillatory band: $\lambda_n$ between this and "
                     r"$2/\eta$)")
    a.set_xlabel("step $k$")
    a.set_ylabel("eigenvalue")
    a.set_title("sharpness", fontsize=10)
    lo = min(np.nanmin(run.sharpness[1:]) if len(run.sharpness) > 1 else 0, 2 / run.lr) * 0.9
    hi = max(np.nanmax(run.sharpness), 2 / run.lr) * 1.05
    a.set_ylim(lo, hi)
    b.plot(run.steps, np.log10(run.loss), color="k", lw=1.2, label="loss (MSE + weight decay)")
    b.set_xlabel("step $k$")
    b.set_ylabel(r"$\log_{10}$ training objective")
    b.set_title("loss", fontsize=10)
    k = np.arange(1, len(run.c) + 1)
    c.plot(k, run.c, color=C_FIXED, lw=0.8, label=r"$c_k$")
    c.set_ylim(-1.05, 1.05)
    c.axhline(0, color="0.6", lw=0.6)
    c.set_xlabel("step $k$")
    c.set_ylabel(r"$\cos\angle(\Delta x_{k+1}, \Delta x_k)$")
    c.set_title(f"update cosine (last 10%: {f['late mean c']:.3f})", fontsize=10)
    handles, labels = [], []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.04))
    fig.suptitle(f"Tanh MLP ({run.n_params} parameters, {run.n_samples} digits), MSE + weight decay {run.wd:g}, "
                 f"GD at η = {run.lr:g}; at the end λ_1 = {f['lambda_1']:.3g}, λ_n = {f['lambda_n']:.4g}, "
                 f"2/η = {2 / run.lr:.4g}", fontsize=10.5)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.3, top=0.83, wspace=0.3)
    return fig


def fig_ratio(fig6, omega, v_by_eta):
    """Figure 6: (s_k - lambda_n)/||x_k - x*|| on f_c against k, signed by (-1)^k, with <omega, v> predicted."""
    etas = sorted(fig6["eta"].unique())
    fig, axes = plt.subplots(1, len(etas), figsize=(5.2 * len(etas), 3.6))
    axes = np.atleast_1d(axes)
    for ax, eta in zip(axes, etas):
        df = fig6[fig6["eta"] == eta]
        osc = eta > 2 / 3
        if osc:
            ax.plot(df["k"], df["ratio"], ".", ms=3, color="0.6", label=r"$r_k = (s_k-\lambda_n)/\|x_k-x^*\|$")
            ax.plot(df["k"], df["signed_ratio"], "-", lw=1.2, color=C_OSC, label=r"$(-1)^k r_k$ (oscillatory run)")
        else:
            ax.plot(df["k"], df["ratio"], "-", lw=1.2, color=C_FIXED, label=r"$r_k$ (fixed-direction run)")
        pred = abs(float(omega @ v_by_eta[eta]))
        ax.axhline(pred, color="k", ls="--", lw=0.9, label=r"$\pm|\langle\omega, v\rangle|$ (predicted)")
        ax.axhline(-pred, color="k", ls="--", lw=0.9)
        last = df[df["last"]]
        if len(last):
            ax.axvspan(last["k"].min(), last["k"].max(), color="0.9", zorder=0, label="last 50 steps")
        ax.set_xlabel("step $k$")
        ax.set_ylabel(r"$r_k$")
        ax.set_title(f"η = {eta:g} ({'oscillatory' if osc else 'fixed'})", fontsize=10)
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("f_c: λ_n(x_k) = λ_n + (±1)^k C_η ||x_k − x*|| + o(·) (paper Sec. 3.2)", fontsize=11)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.3, top=0.86, wspace=0.25)
    return fig
