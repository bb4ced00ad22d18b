"""One function per figure. Each returns plain results (DataFrames, small dataclasses) for the notebook and the plots.

The energy gap of a method on an instance is E(x_method) - E_ref, where E_ref is the optimum when it is certified
(by the LP bound or by HiGHS's MILP, see :func:`solve_instance`), else the lowest energy found by the compared methods
(``ref = "best found"``). Gaps are >= 0 and comparable across methods.
"""
from __future__ import annotations

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
from .spt import spt_map
from .trees import edge_appearance, edge_index, sample_trees, tree_edges

# display order and the methods of the main comparison
MAIN_METHODS = ("SPT", "LBP", "TRW", "LBP-undamped", "TRW-undamped", "MF", "ICM")
ALL_METHODS = MAIN_METHODS + ("SPT-noRW",)
TREE_COUNTS = (1, 2, 5, 10, 20)


def _sub_rng(rng: np.random.Generator) -> np.random.Generator:
    return np.random.default_rng(int(rng.integers(2**63)))


def run_methods(mrf: PairwiseMRF, cfg, rng: np.random.Generator, methods=ALL_METHODS) -> dict[str, SolveResult]:
    """Every method of ``methods`` on one instance. SPT and SPT-noRW share their trees (a paired comparison)."""
    out: dict[str, SolveResult] = {}
    need_trees = any(m.startswith("SPT") for m in methods)
    rho = edge_appearance(mrf, rng) if need_trees or "TRW" in methods or "TRW-undamped" in methods else None
    trees = sample_trees(mrf, cfg.n_trees, rng) if need_trees else None
    spt_kw = dict(n_trees=cfg.n_trees, n_iters=cfg.n_iters, damping=cfg.spt_damping, trees=trees, rho=rho)
    for m in methods:
        if m == "SPT":
            out[m] = spt_map(mrf, rng=rng, **spt_kw)
        elif m == "SPT-noRW":
            out[m] = spt_map(mrf, rng=rng, reweight=False, **spt_kw)
        elif m == "LBP":
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
    return out


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
    """Run the methods, then find the reference energy with deterministic rules (same seed, same references):

    1. the LP relaxation (solved to the end) is a lower bound; if the best method attains it, that energy is optimal;
    2. else, if the LP gap (best energy - LP bound) is at most ``cfg.milp_gap_max`` (None: always), the MILP is solved
       with HiGHS within ``cfg.milp_time_limit`` seconds; a proven optimum is the reference;
    3. else (or if the MILP hits its time limit) the reference is the best energy the methods found.
    Only step 2's time limit can make a reference depend on the machine's speed; quick mode gates the MILP to
    instances with a small LP gap, which HiGHS closes well within the limit.
    """
    res = run_methods(mrf, cfg, rng, methods)
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
        for i in range(cfg.n_instances):
            mrf = grid_potts(cfg.grid_size, cfg.grid_size, cfg.n_labels, c, kind, rng)
            mrf.name = f"{mrf.name}-{i}"
            solved.append(solve_instance(mrf, cfg, _sub_rng(rng), family=kind, coupling=c))
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
        for i in range(cfg.n_er):
            mrf = er_potts(cfg.er_n, d, cfg.er_labels, cfg.er_coupling, cfg.er_kind, rng)
            mrf.name = f"{mrf.name}-{i}"
            solved.append(solve_instance(mrf, cfg, _sub_rng(rng), methods=MAIN_METHODS, target_degree=float(d)))
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
        jobs.append((m, ".uai files" if cfg.data_path is None else "your .uai files"))
    solved = [solve_instance(m, cfg, _sub_rng(rng), methods=MAIN_METHODS, group=g)
              for m, g in progress(jobs, desc="UAI/PCI")]
    return _table(solved)


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
    "released code (sum-product, mean, no 1/rho)": dict(mode="sumprod", merge="mean", reweight=False),
    "SPT + sampled decoding": dict(mode="minsum", reweight=True, decode="sample"),
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
    for s in progress(inst, desc="ablation"):
        mrf = s.mrf
        r = _sub_rng(rng)
        rho = edge_appearance(mrf, r)
        pool = sample_trees(mrf, max(TREE_COUNTS), r)
        pool = pool + sample_trees(mrf, max(0, cfg.n_trees - len(pool)), r)
        res_v = {name: spt_map(mrf, n_trees=cfg.n_trees, n_iters=cfg.n_iters, damping=cfg.spt_damping,
                               beta=cfg.spt_beta, trees=pool[:cfg.n_trees], rho=rho, rng=r, **kw)
                 for name, kw in VARIANTS.items()}
        first = next(iter(VARIANTS))  # the default SPT: reuse it for T = n_trees
        res_t = {T: res_v[first] if T == cfg.n_trees else
                 spt_map(mrf, n_trees=T, n_iters=cfg.n_iters, damping=cfg.spt_damping, trees=pool[:T], rho=rho, rng=r)
                 for T in TREE_COUNTS}
        ref = min([s.ref_energy] + [x.energy for x in res_t.values()] + [x.energy for x in res_v.values()])
        for T, x in res_t.items():
            t_rows.append(dict(family=s.tags["family"], instance=mrf.name, trees=T, gap=x.energy - ref))
        for name, x in res_v.items():
            v_rows.append(dict(family=s.tags["family"], instance=mrf.name, variant=name, gap=x.energy - ref))
            traces.setdefault(name, []).append(x.best_trace - ref)
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
