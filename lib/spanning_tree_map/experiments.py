"""One function per figure. Each returns plain results (DataFrames, small dataclasses) for the notebook and the plots.

The energy gap of a method on an instance is E(x_method) - E_ref, where E_ref is the optimum when it is certified
(by the LP bound or by HiGHS's MILP, see :func:`solve_instance`), else the lowest energy found by the compared methods
(``ref = "best found"``). Gaps are >= 0 and comparable across methods.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common import data_dir, progress

from .baselines import icm, lbp_minsum, mean_field, trw
from .exact import lp_relaxation, map_milp
from .generators import er_potts, grid_potts, ising_grid, pci_like
from .io import read_uai_folder
from .model import PairwiseMRF
from .result import SolveResult
from .spt import RELEASED_RULE, spt_map, spt_map_many
from .trees import centered_trees, edge_appearance, edge_index, sample_trees, tree_edges

# display order and the methods of the main comparison. "SPT-released": the rule the authors' released code runs
# (sum-product, mean merge, no 1/rho_e, node factors replaced, the last sampled labelling returned), beside "SPT",
# our reconstruction (min-sum, 1/rho_e, damped node update, best decoded energy); both on the same sampled trees
MAIN_METHODS = ("SPT", "SPT-released", "LBP", "TRW", "LBP-undamped", "TRW-undamped", "MF", "ICM")
ALL_METHODS = MAIN_METHODS + ("SPT-noRW",)
TREE_COUNTS = (1, 2, 5, 10, 20)


def _sub_rng(rng: np.random.Generator) -> np.random.Generator:
    return np.random.default_rng(int(rng.integers(2**63)))


SPT_SETTINGS = {"SPT": {}, "SPT-noRW": dict(reweight=False), "SPT-released": RELEASED_RULE}


def _batched_spt(mrfs, rngs, trees, rhos, cfg, method):
    """One SPT-family method on several instances, batched per number of labels (:func:`spt.spt_map_many`)."""
    kw = dict(n_trees=cfg.n_trees, n_iters=cfg.n_iters, damping=cfg.spt_damping, recenter=False,
              **SPT_SETTINGS[method])
    if method == "SPT-released":
        kw.update(name=method, beta=cfg.spt_beta)
    out = [None] * len(mrfs)
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(mrfs):
        groups.setdefault(int(m.Kmax), []).append(i)
    for idx in groups.values():
        res = spt_map_many([mrfs[i] for i in idx], rngs=[rngs[i] for i in idx], trees=[trees[i] for i in idx],
                           rhos=[rhos[i] for i in idx], **kw)
        for i, r in zip(idx, res):
            out[i] = r
    return out


def run_methods_many(mrfs: list[PairwiseMRF], cfg, rngs: list[np.random.Generator], methods=ALL_METHODS
                     ) -> list[dict[str, SolveResult]]:
    """Every method of ``methods`` on each instance; each instance's SPT variants share its sampled trees (a
    paired comparison), and each SPT variant runs on all the instances at once (the same numbers as one by one)."""
    need_trees = any(m.startswith("SPT") for m in methods)
    need_rho = need_trees or "TRW" in methods or "TRW-undamped" in methods
    rhos = [edge_appearance(m, r) if need_rho else None for m, r in zip(mrfs, rngs)]
    trees = [centered_trees(sample_trees(m, cfg.n_trees, r)) if need_trees else None  # centred once, shared
             for m, r in zip(mrfs, rngs)]
    outs: list[dict[str, SolveResult]] = [{} for _ in mrfs]
    for m in methods:
        if m in SPT_SETTINGS:
            for out, r in zip(outs, _batched_spt(mrfs, rngs, trees, rhos, cfg, m)):
                out[m] = r
            continue
        for out, mrf, rho in zip(outs, mrfs, rhos):
            if m == "LBP":
                out[m] = lbp_minsum(mrf, iters=cfg.bp_iters, damping=0.5)
            elif m == "LBP-undamped":  # the authors' main.cpp setting for OpenGM's BP: 40 iterations, damping 0
                r = lbp_minsum(mrf, iters=40, damping=0.0)
                r.method = m
                out[m] = r
            elif m == "TRW":
                out[m] = trw(mrf, rho=rho, iters=cfg.bp_iters, damping=0.5)
            elif m == "TRW-undamped":  # the authors' TRBP setting
                r = trw(mrf, rho=rho, iters=40, damping=0.0)
                r.method = m
                out[m] = r
            elif m == "MF":
                out[m] = mean_field(mrf, iters=cfg.bp_iters, damping=0.5, beta=1.0)
            elif m == "ICM":
                out[m] = icm(mrf)
            else:
                raise ValueError(f"unknown method {m!r}")
    return outs


def run_methods(mrf: PairwiseMRF, cfg, rng: np.random.Generator, methods=ALL_METHODS) -> dict[str, SolveResult]:
    """Every method of ``methods`` on one instance (:func:`run_methods_many` with one instance)."""
    return run_methods_many([mrf], cfg, [rng], methods)[0]


@dataclass
class Solved:
    """One instance with every method's result and its reference energy."""

    mrf: PairwiseMRF
    results: dict
    ref_energy: float
    ref_kind: str
    milp_energy: float
    lp_bound: float
    milp_seconds: float
    tags: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        return [dict(**self.tags, instance=self.mrf.name, n=self.mrf.n, edges=self.mrf.n_edges,
                     avg_degree=self.mrf.average_degree(), method=m, energy=r.energy, gap=r.energy - self.ref_energy,
                     seconds=r.seconds, ref=self.ref_kind, ref_energy=self.ref_energy,
                     milp_energy=self.milp_energy, lp_bound=self.lp_bound)
                for m, r in self.results.items()]


def solve_instance(mrf: PairwiseMRF, cfg, rng: np.random.Generator, methods=ALL_METHODS, **tags) -> Solved:
    """:func:`solve_many` on one instance."""
    return solve_many([mrf], cfg, [rng], methods, [tags])[0]


def solve_many(mrfs: list[PairwiseMRF], cfg, rngs: list[np.random.Generator], methods=ALL_METHODS,
               tags: list[dict] | None = None) -> list[Solved]:
    """Run the methods (:func:`run_methods_many`), then find each reference energy with deterministic rules (same
    seed, same references):

    1. the LP relaxation (solved to the end) is a lower bound; if the best method attains it, that energy is optimal;
    2. else, if the LP gap (best energy - LP bound) is at most ``cfg.milp_gap_max`` (None: always), the MILP is solved
       with HiGHS within ``cfg.milp_time_limit`` seconds; a proven optimum is the reference;
    3. else (or if the MILP hits its time limit) the reference is the best energy the methods found.
    Only step 2's time limit can make a reference depend on the machine's speed; quick mode gates the MILP to
    instances with a small LP gap, which HiGHS closes well within the limit.
    """
    tags = tags if tags is not None else [{} for _ in mrfs]
    return [_reference(mrf, cfg, res, tg) for mrf, res, tg in zip(mrfs, run_methods_many(mrfs, cfg, rngs, methods),
                                                                  tags)]


def _reference(mrf: PairwiseMRF, cfg, res: dict, tags: dict) -> Solved:
    best = min(r.energy for r in res.values())
    lb = lp_relaxation(mrf, time_limit=600.0)
    tol = 1e-6 * max(1.0, abs(best))
    milp_energy, secs = np.nan, 0.0
    if best - lb <= tol:
        ref, kind = best, "optimal (LP)"
    elif cfg.milp_gap_max is None or best - lb <= cfg.milp_gap_max:
        ex = map_milp(mrf, time_limit=cfg.milp_time_limit, lp_bound=False)
        milp_energy, secs = ex.energy, ex.seconds
        if ex.optimal and best < ex.energy - tol:
            raise AssertionError(f"{mrf.name}: a method found energy {best} below the proven optimum {ex.energy}")
        # an unproven incumbent depends on how much CPU HiGHS got before its limit: recorded, never used
        ref, kind = (ex.energy, "optimal (MILP)") if ex.optimal else (best, "best found")
    else:
        ref, kind = best, "best found"
    return Solved(mrf, res, ref, kind, milp_energy, lb, secs, tags)


def _table(solved: list[Solved]) -> pd.DataFrame:
    return pd.DataFrame([r for s in solved for r in s.rows()])


# --- Figure 1: grids across coupling strength ---------------------------------------------------------------------
@dataclass
class GridBench:
    df: pd.DataFrame
    solved: list  # every Solved instance (kept for Figures 4 and 5)


def grid_benchmark(cfg) -> GridBench:
    rng = cfg.rng("grid")
    solved = []
    cells = [(k, c) for k in cfg.grid_families for c in cfg.couplings]
    for kind, c in progress(cells, desc="grids"):
        mrfs, rngs = [], []
        for i in range(cfg.n_instances):  # the same draws, in the same order, as solving them one by one
            mrf = grid_potts(cfg.grid_size, cfg.grid_size, cfg.n_labels, c, kind, rng)
            mrf.name = f"{mrf.name}-{i}"
            mrfs.append(mrf)
            rngs.append(_sub_rng(rng))
        solved += solve_many(mrfs, cfg, rngs, tags=[dict(family=kind, coupling=c)] * len(mrfs))
    return GridBench(_table(solved), solved)


def gap_table(df: pd.DataFrame, by=("family", "coupling"), methods=MAIN_METHODS + ("SPT-noRW",)) -> pd.DataFrame:
    """Mean energy gap per cell and method (columns in display order), with the number of instances."""
    by = list(by)
    t = df.pivot_table(index=by, columns="method", values="gap", aggfunc="mean")
    t = t[[m for m in methods if m in t.columns]]
    t.insert(0, "instances", df[df.method == "SPT"].groupby(by).size())
    return t


def win_table(df: pd.DataFrame, a: str = "SPT", b: str = "LBP", by=("family", "coupling")) -> pd.DataFrame:
    """Per cell: mean gaps of a and b, and the share of instances where a's energy <= b's (ties count)."""
    by = list(by)
    w = df.pivot_table(index=by + ["instance"], columns="method", values="energy")
    g = df.pivot_table(index=by, columns="method", values="gap", aggfunc="mean")
    out = pd.DataFrame({f"{a} gap": g[a], f"{b} gap": g[b]})
    out[f"{a} <= {b} (share)"] = (w[a] <= w[b] + 1e-9).groupby(level=list(range(len(by)))).mean()
    out["exact refs"] = df[df.method == a].assign(o=lambda d: d.ref.str.startswith("optimal")).groupby(by).o.mean()
    return out


# --- Figure 2: Erdos-Renyi density sweep ----------------------------------------------------------------------------
def er_density(cfg) -> pd.DataFrame:
    rng = cfg.rng("er")
    solved = []
    for d in progress(cfg.er_degrees, desc="ER"):
        mrfs, rngs = [], []
        for i in range(cfg.n_er):
            mrf = er_potts(cfg.er_n, d, cfg.er_labels, cfg.er_coupling, cfg.er_kind, rng)
            mrf.name = f"{mrf.name}-{i}"
            mrfs.append(mrf)
            rngs.append(_sub_rng(rng))
        solved += solve_many(mrfs, cfg, rngs, methods=MAIN_METHODS, tags=[dict(target_degree=float(d))] * len(mrfs))
    return _table(solved)


def density_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per target degree: measured degree, mean gaps of SPT and LBP, their difference (LBP - SPT) and the ratio."""
    g = df.pivot_table(index="target_degree", columns="method", values="gap", aggfunc="mean")
    deg = df[df.method == "SPT"].groupby("target_degree").avg_degree.mean()
    out = pd.DataFrame({"mean degree": deg, "SPT gap": g["SPT"], "LBP gap": g["LBP"]})
    out["LBP - SPT"] = out["LBP gap"] - out["SPT gap"]
    out["SPT / LBP"] = out["SPT gap"] / out["LBP gap"].replace(0.0, np.nan)
    out["exact refs"] = (df[df.method == "SPT"].assign(o=lambda d: d.ref.str.startswith("optimal"))
                         .groupby("target_degree").o.mean())
    return out


def density_slope(summary: pd.DataFrame) -> float:
    """Least-squares slope of (LBP gap - SPT gap) against the measured mean degree."""
    x, y = summary["mean degree"].to_numpy(), summary["LBP - SPT"].to_numpy()
    return float(np.polyfit(x, y, 1)[0])


# --- Figure 3: UAI-style Ising grids, PCI-like networks, .uai files -------------------------------------------------
def uai_pci(cfg) -> pd.DataFrame:
    rng = cfg.rng("uai_pci")
    jobs = []
    for s in cfg.ising_sigmas:
        for i in range(cfg.n_ising):
            m = ising_grid(cfg.ising_size, cfg.ising_size, s, rng)
            m.name = f"{m.name}-{i}"
            jobs.append((m, f"Ising grid {cfg.ising_size}x{cfg.ising_size}, sigma={s:g}"))
    for n in cfg.pci_sizes:
        for i in range(cfg.n_pci):
            m = pci_like(n, cfg.pci_labels, rng)
            m.name = f"{m.name}-{i}"
            jobs.append((m, f"PCI-like, {n} cells"))
    folder = cfg.data_path if cfg.data_path is not None else data_dir("spanning_tree_map")
    for m in read_uai_folder(folder, values=cfg.uai_values):
        jobs.append((m, USER_GROUP if cfg.data_path is not None else FILE_GROUP))
    rngs = [_sub_rng(rng) for _ in jobs]
    tags = [dict(group=g, family=uai_family(m.name) if g in (USER_GROUP, FILE_GROUP) else g) for m, g in jobs]
    return _table(solve_many([m for m, _ in jobs], cfg, rngs, methods=MAIN_METHODS, tags=tags))


FILE_GROUP, USER_GROUP = ".uai files", "your .uai files"


def uai_family(name: str) -> str:
    """The instance family of a .uai file: its name up to the first '.', without a trailing '-<k>' or '_<k>' instance
    number (``grid10x10.f5`` and ``grid10x10.f10`` are family ``grid10x10``; ``pci_3`` is ``pci``)."""
    base = str(name).split(".")[0]
    return re.sub(r"[-_]\d+$", "", base) or base


def instance_table(df: pd.DataFrame, group: str | None = None, methods=MAIN_METHODS) -> pd.DataFrame:
    """One row per instance (of ``group``, default all): size, mean degree, reference, LP bound and each method's
    energy (not the gap: the energies are what a user compares against other solvers' outputs)."""
    d = df if group is None else df[df.group == group]
    e = d.pivot_table(index="instance", columns="method", values="energy", aggfunc="first")
    e = e[[m for m in methods if m in e.columns]]
    info = d.groupby("instance").agg(family=("family", "first"), nodes=("n", "first"), edges=("edges", "first"),
                                     mean_degree=("avg_degree", "first"), reference=("ref", "first"),
                                     E_ref=("ref_energy", "first"), LP_bound=("lp_bound", "first"))
    return info.join(e).loc[list(dict.fromkeys(d.instance))]


def family_comparison(df: pd.DataFrame, group: str | None = None, a: str = "SPT", b: str = "LBP") -> pd.DataFrame:
    """Per instance family (of ``group``): instances, mean gaps of a and b, their difference a - b (< 0: a better)
    and the share of instances where a's energy <= b's."""
    d = df if group is None else df[df.group == group]
    g = d.pivot_table(index=["family", "instance"], columns="method", values="gap", aggfunc="first")
    out = pd.DataFrame({"instances": g.groupby(level=0).size(), f"{a} gap": g[a].groupby(level=0).mean(),
                        f"{b} gap": g[b].groupby(level=0).mean()})
    out[f"{a} - {b}"] = out[f"{a} gap"] - out[f"{b} gap"]
    out[f"{a} <= {b} (share)"] = (g[a] <= g[b] + 1e-9).groupby(level=0).mean()
    return out.loc[list(dict.fromkeys(d.family))]


# --- Figure 4: energy against iterations and time ---------------------------------------------------------------
def convergence(gb: GridBench, cells=None) -> dict:
    """Traces of the first instance of each requested (family, coupling) cell (default: strongest coupling)."""
    if cells is None:
        cmax = max(s.tags["coupling"] for s in gb.solved)
        cells = [(f, cmax) for f in dict.fromkeys(s.tags["family"] for s in gb.solved)]
    out = {}
    for f, c in cells:
        s = next(s for s in gb.solved if s.tags["family"] == f and s.tags["coupling"] == c)
        out[(f, c)] = dict(ref=s.ref_energy, ref_kind=s.ref_kind, name=s.mrf.name,
                           traces={m: s.results[m] for m in MAIN_METHODS if m in s.results})
    return out


def convergence_table(conv: dict) -> pd.DataFrame:
    rows = []
    for (f, c), d in conv.items():
        for m, r in d["traces"].items():
            rows.append(dict(family=f, coupling=c, method=m, iterations=len(r.trace), final_gap=r.trace[-1] - d["ref"],
                             best_gap=r.energy - d["ref"], seconds=r.seconds))
    return pd.DataFrame(rows).set_index(["family", "coupling", "method"])


# --- Figure 5: ablations ----------------------------------------------------------------------------------------
VARIANTS = {
    "SPT (min-sum, 1/rho)": dict(mode="minsum", reweight=True),
    "SPT-noRW (min-sum)": dict(mode="minsum", reweight=False),
    "sum-product, mean merge, 1/rho": dict(mode="sumprod", merge="mean", reweight=True),
    "sum-product, product merge, 1/rho": dict(mode="sumprod", merge="product", reweight=True),
    "released rule, best energy (sum-product, mean, no 1/rho)": dict(mode="sumprod", merge="mean", reweight=False),
    "SPT + sampled decoding": dict(mode="minsum", reweight=True, decode="sample"),
    "released rule as released (last sample)": dict(RELEASED_RULE),
}


@dataclass
class Ablation:
    trees: pd.DataFrame  # gap against the number of trees
    variants: pd.DataFrame  # gap per variant
    iterations: dict  # variant -> (instances, iterations) best-so-far gaps


def ablation(cfg, gb: GridBench) -> Ablation:
    """On the strongest-coupling grid instances: T sweep (nested trees), merge/update variants, traces."""
    cmax = max(s.tags["coupling"] for s in gb.solved)
    inst = []
    for f in dict.fromkeys(s.tags["family"] for s in gb.solved):
        inst += [s for s in gb.solved if s.tags["coupling"] == cmax and s.tags["family"] == f][:cfg.ablation_instances]
    rng = cfg.rng("ablation")
    t_rows, v_rows, traces = [], [], {}
    mrfs, rngs, rhos, pools = [], [], [], []
    for s in inst:  # the same draws, in the same order, as one instance at a time
        r = _sub_rng(rng)
        rho = edge_appearance(s.mrf, r)
        pool = sample_trees(s.mrf, max(TREE_COUNTS), r)
        pools.append(centered_trees(pool + sample_trees(s.mrf, max(0, cfg.n_trees - len(pool)), r)))
        mrfs.append(s.mrf)
        rngs.append(r)
        rhos.append(rho)
    base = dict(n_iters=cfg.n_iters, damping=cfg.spt_damping, rngs=rngs, rhos=rhos, recenter=False)
    res_v = {name: spt_map_many(mrfs, n_trees=cfg.n_trees, beta=cfg.spt_beta, trees=[p[:cfg.n_trees] for p in pools],
                                **base, **kw)
             for name, kw in progress(VARIANTS.items(), desc="ablation")}
    first = next(iter(VARIANTS))  # the default SPT: reuse it for T = n_trees
    res_t = {T: res_v[first] if T == cfg.n_trees else spt_map_many(mrfs, n_trees=T, trees=[p[:T] for p in pools], **base)
             for T in TREE_COUNTS}
    for k, s in enumerate(inst):
        mrf = s.mrf
        ref = min([s.ref_energy] + [x[k].energy for x in res_t.values()] + [x[k].energy for x in res_v.values()])
        for T, x in res_t.items():
            t_rows.append(dict(family=s.tags["family"], instance=mrf.name, trees=T, gap=x[k].energy - ref))
        for name, x in res_v.items():
            v_rows.append(dict(family=s.tags["family"], instance=mrf.name, variant=name, gap=x[k].energy - ref))
            traces.setdefault(name, []).append(x[k].best_trace - ref)
    its = {k: np.array(v) for k, v in traces.items()}
    return Ablation(pd.DataFrame(t_rows), pd.DataFrame(v_rows), its)


def tree_count_table(ab: Ablation) -> pd.DataFrame:
    t = ab.trees.pivot_table(index="trees", columns="family", values="gap", aggfunc="mean")
    t["all"] = ab.trees.groupby("trees").gap.mean()
    return t


def variant_table(ab: Ablation) -> pd.DataFrame:
    t = ab.variants.pivot_table(index="variant", columns="family", values="gap", aggfunc="mean")
    t["all"] = ab.variants.groupby("variant").gap.mean()
    return t.loc[list(VARIANTS)]


# --- Figure 6: the uniform spanning tree on a grid ----------------------------------------------------------------
@dataclass
class USTPicture:
    mrf: PairwiseMRF
    shape: tuple
    rho: np.ndarray
    trees: list
    freq: np.ndarray  # empirical edge frequency over n_samples trees
    n_samples: int


def ust_picture(cfg) -> USTPicture:
    rng = cfg.rng("ust")
    h = w = cfg.grid_size
    mrf = grid_potts(h, w, 2, 1.0, "attractive", rng)
    rho = edge_appearance(mrf)
    trees = sample_trees(mrf, cfg.ust_samples, rng)
    lookup = edge_index(mrf)
    counts = np.zeros(mrf.n_edges)
    for p in trees:
        te = tree_edges(p)
        counts[lookup(te[:, 0], te[:, 1])] += 1
    return USTPicture(mrf, (h, w), rho, trees[:3], counts / len(trees), len(trees))


# --- claims helpers -------------------------------------------------------------------------------------------
def pooled_ratio(df: pd.DataFrame, a: str, b) -> float:
    """Mean gap of method a over the mean gap of b (or of the best of several b) on the same instances."""
    ga = df[df.method == a].gap.mean()
    bs = [b] if isinstance(b, str) else list(b)
    gb = min(df[df.method == m].gap.mean() for m in bs)
    return float(ga / gb) if gb > 0 else float("inf") if ga > 0 else 1.0


def cells_won(df: pd.DataFrame, a: str = "SPT", b: str = "LBP", by=("family", "coupling")) -> float:
    """Share of cells in which a's mean gap <= b's."""
    g = df.pivot_table(index=list(by), columns="method", values="gap", aggfunc="mean")
    return float((g[a] <= g[b] + 1e-9).mean())
