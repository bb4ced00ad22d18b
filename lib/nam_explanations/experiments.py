"""The notebook's experiments; each returns plain results (DataFrames, dicts)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import explain as ex
from lib.common import limit_threads

from .data import Dataset, load_dataset, pick_points
from .model import NumpyNAM, accuracy, train_nam
from .univariate import Pieces, all_pieces, bisect_min
from .verify import MilpVerifier


@dataclass
class Trained:
    ds: Dataset
    nam: NumpyNAM
    pieces: Pieces
    acc: float
    seconds: float


@limit_threads(1)
def train_models(names, cfg, seed_offset: int = 0) -> dict:
    """Train one NAM per data set name (``additive<n>``: ``cfg.n_samples_synthetic`` rows, ``cfg.steps_synthetic``
    updates); ``seed_offset`` varies the training seed (full mode's extra training seeds)."""
    out = {}
    for name in names:
        t0 = time.perf_counter()
        syn = name.startswith("additive")
        ds = load_dataset(name, seed=cfg.seed, data_path=cfg.data_path, target=cfg.target,
                          n_samples=cfg.n_samples_synthetic)
        nam = train_nam(ds.X_train, ds.y_train, hidden=cfg.hidden, steps=cfg.steps_synthetic if syn else cfg.steps,
                        lr=cfg.lr,
                        feature_dropout=cfg.feature_dropout, seed=cfg.seed + 1000 * seed_offset)
        out[name] = Trained(ds=ds, nam=nam, pieces=all_pieces(nam), acc=accuracy(nam, ds.X_test, ds.y_test),
                            seconds=time.perf_counter() - t0)
    return out


def model_table(models: dict) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": m.ds.label, "n_features": m.ds.n_features, "n_train": len(m.ds.X_train),
                          "test_accuracy": round(m.acc, 3), "pieces_per_component": round(m.pieces.n_pieces.mean(), 1),
                          "train_s": round(m.seconds, 2)} for m in models.values()])


def points_for(m: Trained, n_points: int, rng) -> np.ndarray:
    return pick_points(m.ds, n_points, rng)


# ---------------------------------------------------------------- Figure 1: sizes
@limit_threads(1)
def size_table(models: dict, cfg, eps: float, rng_name: str = "fig1", train_seed: int = 0) -> pd.DataFrame:
    """Per data set and test point: |S| of ours, heuristic- and random-order deletion, brute force (n <= 16) and
    sampling, all on the additive backend; plus each method's query count."""
    rows = []
    for name, m in models.items():
        rng = cfg.rng(f"{rng_name}/{name}")
        X = points_for(m, cfg.n_points, rng)
        insts = ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain)
        for p, inst in enumerate(insts):
            ours, st = ex.cardinal_minimal(inst)
            dele, _ = ex.deletion_minimal(inst, ex.heuristic_order(inst))
            rand = [len(ex.deletion_minimal(inst, rng.permutation(inst.n))[0]) for _ in range(cfg.n_orders)]
            samp, _ = ex.sampled_sufficient(m.nam, inst, cfg.n_samples, rng)
            row = {"dataset": m.ds.label, "key": name, "train_seed": train_seed, "point": p, "n": inst.n, "eps": eps, "ours": len(ours),
                   "deletion": len(dele), "random": float(np.mean(rand)), "random_min": min(rand),
                   "sampled": len(samp), "ours_ok": inst.margin(ours) > 0, "deletion_ok": inst.margin(dele) > 0,
                   "deletion_subset_minimal": all(inst.margin([j for j in dele if j != i]) <= 0 for i in dele),
                   "sampled_ok": inst.margin(samp) > 0, "queries_ours": st["queries"], "queries_deletion": inst.n,
                   "brute": np.nan, "queries_brute": np.nan}
            if inst.n <= cfg.brute_max_n:
                bf, bst = ex.brute_force_minimal(inst, cfg.brute_max_n)
                row["brute"], row["queries_brute"] = len(bf), bst["queries"]
            rows.append(row)
    return pd.DataFrame(rows)


def run_sizes(models: dict, cfg) -> pd.DataFrame:
    """:func:`size_table` at every ε of ``cfg.eps_sizes``, for the given models and ``cfg.train_seeds - 1`` more
    training seeds (full mode: 3 NAMs per data set)."""
    frames = [size_table(models, cfg, e) for e in cfg.eps_sizes]
    for k in range(1, cfg.train_seeds):
        more = train_models(list(models), cfg, seed_offset=k)
        frames += [size_table(more, cfg, e, train_seed=k) for e in cfg.eps_sizes]
    return pd.concat(frames, ignore_index=True)


def size_summary(sizes: pd.DataFrame) -> pd.DataFrame:
    cols = ["ours", "deletion", "random", "brute", "sampled"]
    g = sizes.groupby(["dataset", "eps"], sort=False)
    out = g[cols].mean().round(2)
    out.columns = [f"{c} mean" for c in cols]
    out["n"] = g["n"].first()
    out["points"] = g.size()
    return out.reset_index()


def size_checks(sizes: pd.DataFrame, main_key: str = "breast_cancer", eps: float = 0.1) -> dict:
    """Violations over every row; reductions on the main data set at ``eps``."""
    bc = sizes[(sizes.key == main_key) & np.isclose(sizes.eps, eps)]
    bf = sizes.dropna(subset=["brute"])
    return {
        "violations_vs_deletion": int((sizes.ours > sizes.deletion).sum() + (sizes.ours > sizes.random_min).sum()),
        "brute_mismatch": int((bf.ours != bf.brute).sum()),
        "brute_points": int(len(bf)),
        "not_sufficient_ours": int((~sizes.ours_ok).sum()),
        "not_subset_minimal_deletion": int((~sizes.deletion_subset_minimal).sum() + (~sizes.deletion_ok).sum()),
        "reduction_vs_random": float(1 - bc.ours.mean() / bc.random.mean()),
        "reduction_vs_deletion": float(1 - bc.ours.mean() / bc.deletion.mean()),
        "share_strictly_smaller_vs_deletion": float((bc.ours < bc.deletion).mean()),
    }


# ---------------------------------------------------------------- Figure 2: queries and time
@limit_threads(1)
def query_scaling(models: dict, cfg, eps: float) -> pd.DataFrame:
    """Full-network queries per explanation (counted on the additive verifier) for the synthetic NAMs."""
    rows = []
    for name, m in models.items():
        X = points_for(m, cfg.n_points_synthetic, cfg.rng(f"fig2q/{name}"))
        for inst in ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain):
            _, st = ex.cardinal_minimal(inst)
            _, sd = ex.deletion_minimal(inst, ex.heuristic_order(inst))
            rows.append({"n": inst.n, "queries_ours": st["queries"], "queries_deletion": sd["queries"],
                         "bound": math.ceil(math.log2(inst.n + 1))})
    return pd.DataFrame(rows)


@limit_threads(1)
def run_milp(models: dict, synthetic: dict, cfg, main_key: str = "breast_cancer") -> pd.DataFrame:
    """:func:`milp_comparison` on ``cfg.milp_points`` points of the main model and ``cfg.milp_points_synthetic``
    points of each synthetic NAM in ``cfg.milp_synthetic_sizes``."""
    frames = [milp_comparison(models[main_key], cfg, cfg.eps, cfg.milp_points, models[main_key].ds.label, "fig2m")]
    frames += [milp_comparison(synthetic[f"additive{n}"], cfg, cfg.eps, cfg.milp_points_synthetic, f"additive {n}",
                               f"fig2m/{n}") for n in cfg.milp_synthetic_sizes]
    return pd.concat(frames, ignore_index=True)


def milp_checks(runs: pd.DataFrame, min_n: int = 30) -> dict:
    summ = milp_summary(runs)
    big = summ[summ.n >= min_n]
    return {"min_ratio_n_ge": float(big.time_ratio.min()), "ratio_main": float(summ.time_ratio.iloc[0]),
            "timeouts": int(summ.timeouts.sum() + summ.timeouts_deletion.sum()),
            "spurious": int(runs.ours_spurious.sum() + runs.deletion_spurious.sum()),
            "size_mismatch": int((runs.ours != runs.ours_exact).sum() + (runs.deletion != runs.deletion_exact).sum()),
            "queries_over_bound": int((runs.ours_queries > np.ceil(np.log2(runs.n + 1))).sum())}


def milp_comparison(m: Trained, cfg, eps: float, n_points: int, label: str, rng_name: str) -> pd.DataFrame:
    """Ours (bisection preprocessing + binary search) against heuristic-order deletion, both answered by the
    generic MILP verifier, interleaved point by point (which method runs first alternates)."""
    X = points_for(m, n_points, cfg.rng(rng_name))
    insts = ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain)
    rows = []
    for p, inst in enumerate(insts):
        res = {}
        for method in (("ours", "deletion") if p % 2 == 0 else ("deletion", "ours")):
            V = MilpVerifier(m.nam, inst.x, inst.A, inst.B_, inst.s, time_limit=cfg.milp_time_limit)
            t0 = time.perf_counter()
            if method == "ours":
                br = bisect_min(m.nam, np.arange(inst.n), inst.A, inst.B_, inst.s, delta=cfg.delta)
                t_pre = time.perf_counter() - t0
                g_int = (inst.v - br.m_hi, inst.v - br.m_lo)
                S, st = ex.cardinal_minimal(inst, V.sufficient, g_interval=g_int)
                res.update(ours=len(S), ours_exact=len(ex.cardinal_minimal(inst)[0]), pre_s=t_pre,
                           pre_queries=int(br.steps.sum()), pre_rounds=int(br.steps.max()), overlaps=st["overlaps"])
            else:
                S, st = ex.deletion_minimal(inst, ex.heuristic_order(inst), V.sufficient)
                res.update(deletion=len(S), deletion_exact=len(ex.deletion_minimal(inst, ex.heuristic_order(inst))[0]))
            res[f"{method}_s"] = time.perf_counter() - t0
            res[f"{method}_queries"] = V.stats.queries
            res[f"{method}_timeouts"] = V.stats.timeouts
            res[f"{method}_spurious"] = V.stats.spurious
            res[f"{method}_max_binaries"] = max(V.stats.binaries, default=0)
        rows.append({"dataset": label, "n": inst.n, "point": p, **res})
    return pd.DataFrame(rows)


def milp_summary(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby(["dataset", "n"], sort=False)
    out = g.agg(points=("point", "size"), ours_queries=("ours_queries", "mean"),
                deletion_queries=("deletion_queries", "mean"), ours_s=("ours_s", "sum"), pre_s=("pre_s", "sum"),
                deletion_s=("deletion_s", "sum"), timeouts=("ours_timeouts", "sum"),
                timeouts_deletion=("deletion_timeouts", "sum")).reset_index()
    out["time_ratio"] = out.deletion_s / out.ours_s
    return out


# ---------------------------------------------------------------- Figure 3: bisection precision
@limit_threads(1)
def bisection_sweep(m: Trained, cfg, eps: float) -> pd.DataFrame:
    """For each δ: bisection on every component of ``n_points_bisect`` points; steps against ⌈log₂(w₀/δ)⌉, error
    against the exact minimum, the 1-D verifier's nodes."""
    X = points_for(m, cfg.n_points_bisect, cfg.rng("fig3"))
    insts = ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain)
    n = m.nam.n_features
    comp = np.tile(np.arange(n), len(insts))
    A = np.concatenate([i.A for i in insts])
    B = np.concatenate([i.B_ for i in insts])
    s = np.repeat([i.s for i in insts], n)
    m_exact = np.concatenate([i.m for i in insts])
    rows = []
    for delta in cfg.deltas:
        t0 = time.perf_counter()
        r = bisect_min(m.nam, comp, A, B, s, delta=delta)
        secs = time.perf_counter() - t0
        pred = np.ceil(np.log2(np.maximum(r.width0, 1e-300) / delta)).clip(0)
        err = np.maximum(r.m_hi - m_exact, m_exact - r.m_lo)
        rows.append({"delta": delta, "steps_mean": r.steps.mean(), "steps_max": int(r.steps.max()),
                     "log2_w0_over_delta_mean": pred.mean(), "excess_max": int((r.steps - pred).max()),
                     "deficit_max": int((pred - r.steps).max()), "share_exact_count": float((r.steps == pred).mean()),
                     "err_max": float(err.max()), "err_over_delta": float(err.max() / delta),
                     "bracket_sound": bool((r.m_lo <= m_exact + 1e-12).all() and (r.m_hi >= m_exact - 1e-12).all()),
                     "nodes_per_component": r.nodes / comp.size, "seconds": secs, "components": comp.size})
    return pd.DataFrame(rows)


def work_exponent(sweep: pd.DataFrame, from_delta: float = 1e-2) -> float:
    """Least-squares slope of log(nodes per component) against log(log₂(1/δ)) for δ <= ``from_delta``: the ``p``
    in work ~ (log 1/δ)^p (polylogarithmic work: a small p; work growing like a power of 1/δ: p rising with the
    number of bits)."""
    d = sweep[sweep.delta <= from_delta]
    x, y = np.log(np.log2(1 / d.delta.to_numpy())), np.log(d.nodes_per_component.to_numpy())
    return float(np.polyfit(x, y, 1)[0])


# ---------------------------------------------------------------- Figure 4: sampling against verification
@limit_threads(1)
def sampling_comparison(m: Trained, cfg, eps_values, sample_sizes) -> pd.DataFrame:
    """Per ε, K and point: the sampled-sufficient subset, whether it is sufficient (exact), and whether the
    verifier's counterexample (free features at their component minimisers) really flips the NAM."""
    rows = []
    for eps in eps_values:
        X = points_for(m, cfg.n_points, cfg.rng(f"fig4/{eps}"))
        insts = ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain)
        rng = cfg.rng(f"fig4/samples/{eps}")
        for p, inst in enumerate(insts):
            ours, _ = ex.cardinal_minimal(inst)
            for K in sample_sizes:
                S, _ = ex.sampled_sufficient(m.nam, inst, K, rng)
                ok = inst.margin(S) > 0
                flips = np.nan
                if not ok:
                    free = np.setdiff1d(np.arange(inst.n), S)
                    xc = inst.x.copy()
                    xc[free] = inst.argmin[free]
                    flips = float(inst.s * m.nam.logit(xc[None])[0] <= 0)
                rows.append({"eps": eps, "K": K, "point": p, "sampled": len(S), "ours": len(ours),
                             "sampled_ok": ok, "ours_ok": inst.margin(ours) > 0, "counterexample_flips": flips})
    return pd.DataFrame(rows)


def sampling_summary(samp: pd.DataFrame) -> pd.DataFrame:
    g = samp.groupby(["eps", "K"])
    out = g.agg(points=("point", "size"), sampled_pass=("sampled_ok", "mean"), ours_pass=("ours_ok", "mean"),
                sampled_size=("sampled", "mean"), ours_size=("ours", "mean")).reset_index()
    out["sampled_fail"] = 1 - out.sampled_pass
    return out


# ---------------------------------------------------------------- Figure 5: one point
def illustration(m: Trained, cfg, eps: float) -> dict:
    """The first of Figure 1's points of this model whose explanation has 2-8 features (else the first): its
    instance, our explanation and the shape curves of the components."""
    X = points_for(m, cfg.n_points, cfg.rng(f"fig1/{m.ds.name}"))
    insts = ex.make_instances(m.nam, m.pieces, X, eps, cfg.domain)
    pick = 0
    for p, inst in enumerate(insts):
        if 2 <= len(ex.cardinal_minimal(inst)[0]) <= 8:
            pick = p
            break
    inst = insts[pick]
    S, st = ex.cardinal_minimal(inst)
    grid = np.linspace(0, 1, 201)
    curves = m.nam.components(np.repeat(grid[:, None], m.nam.n_features, axis=1))
    return {"inst": inst, "S": S, "stats": st, "grid": grid, "curves": curves, "names": m.ds.feature_names,
            "point": pick, "eps": eps, "dataset": m.ds.label}
