"""Figures of the NEXCO notebook (matplotlib, the suite's style). Each function returns the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import networkx as nx
import numpy as np
import pandas as pd

from .diffusion import MASK

FAMILY_STYLE = {"GP": ("C1", "s"), "LC": ("C3", "v"), "schedule": ("C0", "o"), "NEXCO": ("C2", "*"),
                "classical": ("0.3", "D")}


def _plain_log(ax, axis="x"):
    """Log axis with plain tick labels (1, 2, 5, 10, ...)."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(mticker.FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))


def _family(name: str) -> str:
    if name.startswith("NEXCO"):
        return "NEXCO"
    if name.startswith("schedule"):
        return "schedule"
    if name.startswith("LC"):
        return "LC"
    if name.startswith("GP"):
        return "GP"
    return "classical"


def plot_benchmark(bench):
    """Figure 1: optimality drop against model calls per instance (left) and CPU time per instance (right)."""
    t = bench.table
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.5, 4.4))
    model = t[t.family != "classical"]
    top = 1.3 * max((model["drop %"] + model["drop CI95"]).max(), t.loc["min-degree greedy", "drop %"])
    sched_colors = plt.cm.Blues(np.linspace(0.45, 0.95, (model.family == "schedule").sum()))
    k = 0
    off = []
    for name, r in t.iterrows():
        col, mk = FAMILY_STYLE[r["family"]]
        if r["family"] == "schedule":
            col, k = sched_colors[k], k + 1
        ms = 15 if r["family"] == "NEXCO" else 7
        if r["family"] != "classical":
            for ax, x in ((ax1, r["mean calls"]), (ax2, r["CPU ms / instance"])):
                ax.errorbar(x, r["drop %"], yerr=r["drop CI95"], fmt=mk, color=col, ms=ms, capsize=3,
                            label=name if ax is ax1 else None, zorder=3)
        elif name.startswith("CP-SAT optimum"):
            for ax in (ax1, ax2):
                ax.axhline(0, color="0.3", lw=0.8)
        elif r["drop %"] <= top:
            ax1.axhline(r["drop %"], color="0.5", ls="--", lw=1)
            ax1.text(1.0, r["drop %"], f" {name}", fontsize=8, color="0.35", va="bottom")
        else:
            off.append(f"{name}: {r['drop %']:.1f}% (off scale)")
        if np.isfinite(r["latency ms"]):
            if r["drop %"] <= top:
                ax2.plot(r["latency ms"], r["drop %"], mk, color=col, ms=ms, mfc="white", mew=1.5, zorder=3)
                if r["family"] == "classical":
                    ax2.annotate(name, (r["latency ms"], r["drop %"]), textcoords="offset points", xytext=(6, 4),
                                 fontsize=8, color=col)
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        _plain_log(ax)
        ax.set_ylim(-0.3, top)
        for i, txt in enumerate(off):
            ax.text(0.98, 0.97 - 0.07 * i, txt, transform=ax.transAxes, ha="right", va="top", fontsize=8,
                    color="0.35")
    ax1.set_xlabel("model calls per instance (log)")
    ax1.set_ylabel("optimality drop (%), mean $\\pm$ 95% CI")
    ax1.set_title(f"Quality vs model calls, MIS on ER-{bench.n} ({len(bench.opt)} graphs)", fontsize=10.5)
    ax1.legend(fontsize=7.5, loc="center right")
    ax2.set_xlabel("CPU time per instance (ms, log)")
    ax2.set_ylabel("optimality drop (%)")
    ax2.set_title("Quality vs time: filled = batched, open = one instance at a time", fontsize=10.5)
    fig.tight_layout()
    return fig


def plot_adaptivity(df: pd.DataFrame, bench):
    """Figure 2: histogram of adaptive step counts, and steps against the instance's optimum."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.9))
    c = df["adaptive calls"].to_numpy()
    bins = np.arange(c.min() - 0.5, c.max() + 1.5)
    ax1.hist(c, bins=bins, color="C2", alpha=0.8, label=f"NEXCO adaptive: mean {c.mean():.1f}, CV {c.std() / c.mean():.2f}")
    for D in sorted({int(i.split("D=")[1].split()[0]) for i in bench.table.index if i.startswith("schedule")}):
        ax1.axvline(D, color="C0", ls=":", lw=1.2)
        ax1.text(D, ax1.get_ylim()[1] * 0.6, f"schedule D={D} ", color="C0", fontsize=7.5, va="top", ha="right",
                 rotation=90)
    ax1.axvline(bench.n / 4, color="k", ls="--", lw=1, label=f"N/4 = {bench.n / 4:g}")
    ax1.set_xlabel("model calls (expansion steps) per instance")
    ax1.set_ylabel("test graphs")
    ax1.set_title(f"Adaptive step counts (LC needs {df['LC calls'].mean():.1f} on average)")
    ax1.legend(fontsize=8, loc="upper right")
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.15, 0.15, len(df))
    sc = ax2.scatter(df["edges"], df["adaptive calls"] + jitter, c=df["adaptive drop %"], cmap="viridis_r", s=22,
                     vmin=0)
    fig.colorbar(sc, ax=ax2, label="drop of this instance (%)")
    ax2.set_xlabel("edges of the graph $|E|$")
    ax2.set_ylabel("adaptive model calls (jittered)")
    ax2.set_title("Steps follow the instance, not a schedule")
    fig.tight_layout()
    return fig


def plot_trajectory(traj, seed: int = 0):
    """Figure 3: one ER graph at four intermediate expansion states (1 red, 0 grey, masked white)."""
    G = nx.from_numpy_array(traj.adj.astype(np.int8))
    pos = nx.spring_layout(G, seed=seed)
    fig, axes = plt.subplots(1, len(traj.shown), figsize=(3.2 * len(traj.shown), 3.5))
    for ax, i in zip(np.atleast_1d(axes), traj.shown):
        s = traj.states[i]
        colors = np.where(s == 1, "#d62728", np.where(s == 0, "#bbbbbb", "white"))
        nx.draw_networkx_edges(G, pos, ax=ax, edge_color="0.8", width=0.5)
        nx.draw_networkx_nodes(G, pos, ax=ax, node_color=list(colors), node_size=55, edgecolors="k",
                               linewidths=0.6)
        final = i == len(traj.states) - 1
        label = f"final (after {traj.calls} calls)" if final else f"after call {i}"
        ax.set_title(f"{label}\n|S| = {int((s == 1).sum())}, masked = {int((s == MASK).sum())}, "
                     f"independent: {'yes' if traj.feasible[i] else 'NO'}", fontsize=9)
        ax.axis("off")
    fig.suptitle(f"NEXCO adaptive expansion on one ER graph (optimum {traj.opt}); red = 1, grey = 0, white = masked",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_ablations(abl: pd.DataFrame, bench):
    """Figure 4: denoiser variants (left) and the confidence threshold against schedule-bound rounds (right)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    den = abl[abl.study == "denoiser"].reset_index(drop=True)
    x = np.arange(len(den))
    ax1.bar(x, den["drop %"], yerr=den["drop CI95"], color=[f"C{i + 2}" for i in range(len(den))], capsize=4,
            alpha=0.85)
    for i, r in den.iterrows():
        ax1.text(i, r["drop %"] + r["drop CI95"] + 0.03, f"{r['mean calls']:.1f} calls", ha="center", fontsize=8)
    ax1.set_xticks(x, [v.replace(" (", "\n(").replace(", ", ",\n") for v in den["variant"]], fontsize=8)
    ax1.set_ylabel("optimality drop (%), adaptive decoding")
    ax1.set_title(f"Denoiser ablation ($\\tau$ = {den['tau'].iloc[0]:g})")
    th = abl[abl.study == "threshold"]
    ax2.errorbar(th["mean calls"], th["drop %"], yerr=th["drop CI95"], fmt="-*", color="C2", ms=10, capsize=3,
                 label="NEXCO adaptive, $\\tau$ varied")
    for _, r in th.iterrows():
        ax2.annotate(r["variant"].replace("tau", "$\\tau$"), (r["mean calls"], r["drop %"]),
                     textcoords="offset points", xytext=(5, 5),
                     fontsize=7.5, color="C2")
    sch = bench.table[bench.table.family == "schedule"].sort_values("mean calls")
    ax2.errorbar(sch["mean calls"], sch["drop %"], yerr=sch["drop CI95"], fmt="-o", color="C0", capsize=3,
                 label="schedule-bound, $D$ varied")
    ax2.set_xscale("log")
    _plain_log(ax2)
    ax2.set_xlabel("model calls per instance (log)")
    ax2.set_ylabel("optimality drop (%)")
    ax2.set_title("Quality-calls trade-off: threshold vs fixed schedule")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_scale(table: pd.DataFrame):
    """Figure 5 (full mode): drop against model calls for ER-100 MIS and TSP-20/50 (with and without 2-opt)."""
    probs = list(dict.fromkeys(table["problem"]))
    fig, axes = plt.subplots(1, len(probs), figsize=(5 * len(probs), 4.2))
    for ax, prob in zip(np.atleast_1d(axes), probs):
        t = table[table.problem == prob]
        for _, r in t.iterrows():
            fam = _family(r["decoder"])
            col, mk = FAMILY_STYLE[fam]
            if fam == "classical":
                ax.axhline(r["drop %"], color="0.5", ls=":" if "2-opt" in r["decoder"] else "--", lw=1)
                ax.text(1.05, r["drop %"], f" {r['decoder']}", fontsize=7, color="0.35", va="bottom")
                continue
            opt2 = "2-opt" in r["decoder"]
            ax.errorbar(r["mean calls"], r["drop %"], yerr=r["drop CI95"], fmt=mk, color=col,
                        ms=(13 if fam == "NEXCO" else 7), capsize=3, mfc="white" if opt2 else col)
            if not opt2:
                lab = r["decoder"].split(":")[0].replace("schedule-bound ", "").split(" (tau")[0]
                ax.annotate(lab, (r["mean calls"], r["drop %"]), textcoords="offset points", xytext=(5, 3),
                            fontsize=7, color=col)
        ax.set_xscale("log")
        _plain_log(ax)
        ax.set_xlabel("model calls per instance (log)")
        ax.set_ylabel("optimality drop (%)")
        ax.set_title(prob + (" (open markers: + 2-opt)" if prob.startswith("TSP") else ""))
    fig.tight_layout()
    return fig
