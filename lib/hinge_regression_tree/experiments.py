"""The notebook's experiments. Each returns plain results (DataFrames, arrays, dataclasses)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

from lib.common import limit_threads, progress

from .baselines import LinearModelTree, n_leaves
from .data import LABELS, load_dataset, make_hinge_target, make_smooth, smooth_grid, hinge_function
from .solver import ENVELOPES, initial_thetas, solve_direction
from .tree import HRTRegressor

METHODS = ("HRT", "CART", "LinearTree-lite", "Ridge", "HGB")
STEP_RULES = ("auto", 0.5, 0.1)

# Grids of the paper's kin8nm script (5-fold CV on one 50/50 split, then fixed for the repetitions).
GRIDS_FULL = {
    "Ridge": {"alpha": [0.1, 1.0, 10.0, 100.0]},
    "CART": {"max_depth": [3, 5, 7, 9, 11], "min_samples_split": [2, 5, 10], "min_samples_leaf": [1, 2, 4]},
    "LinearTree-lite": {"max_depth": list(range(3, 12)), "min_samples_split": [10, 20, 40],
                        "min_samples_leaf": [10, 20, 40]},
    # XGBoost's grid in the paper; HGB has no row subsampling, so that axis is dropped.
    "HGB": {"max_iter": [50, 100, 200], "learning_rate": [0.01, 0.05, 0.1], "max_depth": [3, 5, 7]},
}
# Quick mode: one validation split of the training half, small grids.
GRIDS_QUICK = {
    "Ridge": {"alpha": [0.1, 1.0, 10.0, 100.0]},
    "CART": {"max_depth": [4, 6, 8]},
    "LinearTree-lite": {"max_depth": [3, 5, 7], "min_samples_split": [40], "min_samples_leaf": [20]},
    "HGB": {},
}


def rmse(y, p) -> float:
    return float(np.sqrt(np.mean((np.asarray(y) - np.asarray(p)) ** 2)))


def hrt_paper_params(cfg) -> dict:
    """The paper's kin8nm setting: threshold 0, max_depth 6, backtracking steps, ridge 1 (knobs from cfg)."""
    return {"threshold": 0.0, "min_points": 5, "max_depth": cfg.max_depth, "step_size": cfg.step_size,
            "ridge_alpha": cfg.ridge_alpha}


def _base_estimators(seed: int) -> dict:
    return {
        "CART": DecisionTreeRegressor(random_state=seed),
        "LinearTree-lite": LinearModelTree(),
        "Ridge": Ridge(),
        "HGB": HistGradientBoostingRegressor(random_state=seed),
    }


def _pipe(est) -> Pipeline:
    return Pipeline([("scale", StandardScaler()), ("model", est)])


def _tune(name: str, est, X, y, grid: dict, scheme: str, seed: int) -> dict:
    """Best parameters of ``est`` on (X, y): one 75/25 validation split ("holdout") or 5-fold CV ("cv5")."""
    if not grid:
        return {}
    if name == "LinearTree-lite":
        return _tune_model_tree(X, y, grid, scheme, seed)
    if scheme == "cv5":
        cv = KFold(5, shuffle=True, random_state=seed)
    else:
        tr, va = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed)
        cv = [(tr, va)]
    gs = GridSearchCV(_pipe(est), {f"model__{k}": v for k, v in grid.items()}, cv=cv,
                      scoring="neg_mean_squared_error", n_jobs=1, error_score="raise")
    gs.fit(X, y)
    return {k.replace("model__", ""): v for k, v in gs.best_params_.items()}


def _tune_model_tree(X, y, grid, scheme, seed) -> dict:
    """Grid search for LinearModelTree; trees of every depth are read off one deepest fit per fold."""
    depths = sorted(grid["max_depth"])
    if scheme == "cv5":
        folds = list(KFold(5, shuffle=True, random_state=seed).split(X))
    else:
        folds = [tuple(train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed))]
    best, best_mse = None, np.inf
    for mss in grid["min_samples_split"]:
        for msl in grid["min_samples_leaf"]:
            mse = np.zeros(len(depths))
            for tr, va in folds:
                sc = StandardScaler().fit(X[tr])
                m = LinearModelTree(max_depth=depths[-1], min_samples_split=mss, min_samples_leaf=msl)
                m.fit(sc.transform(X[tr]), y[tr])
                Xv = sc.transform(X[va])
                mse += [np.mean((m.predict_at_depth(Xv, dp) - y[va]) ** 2) for dp in depths]
            k = int(np.argmin(mse))
            if mse[k] < best_mse:
                best_mse, best = mse[k], {"max_depth": depths[k], "min_samples_split": mss, "min_samples_leaf": msl}
    return best


@dataclass
class BenchmarkResult:
    scores: pd.DataFrame  # one row per (dataset, method, rep)
    tuned: dict  # dataset -> method -> parameters
    labels: dict  # dataset -> label
    hrt_logs: list = field(default_factory=list)  # (dataset, rep, solve_log_) of the HRT fits


def run_benchmark(cfg) -> BenchmarkResult:
    """RMSE, MAE, R^2, leaves and fit time of every method on every data set, over ``n_reps`` 50/50 splits.

    Baselines are tuned once on the first split's training half (as the paper's script does), then refitted with
    those parameters on every split. HRT uses the paper's fixed setting (``hrt_paper_params``).
    """
    grids = GRIDS_FULL if cfg.tuning == "cv5" else GRIDS_QUICK
    rows, tuned, labels, logs = [], {}, {}, []
    jobs = [(name, rep) for name in cfg.datasets for rep in range(cfg.n_reps)]
    data = {}
    for name, rep in progress(jobs, desc="benchmark"):
        if name not in data:
            n = cfg.n_friedman if name.startswith("friedman") else cfg.n_samples
            X, y, label = load_dataset(name, n, cfg.rng(f"data/{name}"), cfg.data_path)
            data[name] = (X, y)
            labels[name] = label
        X, y = data[name]
        split_seed = int(cfg.rng(f"split/{name}/{rep}").integers(2**31 - 1))
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=split_seed)
        base = _base_estimators(split_seed)
        with limit_threads(1):  # 2 shared cores: one thread per fit is faster than oversubscription
            if rep == 0:
                tuned[name] = {m: _tune(m, base[m], Xtr, ytr, grids[m], cfg.tuning, split_seed) for m in base}
            models = {"HRT": HRTRegressor(**hrt_paper_params(cfg), random_state=split_seed % 10_000)}
            for m, est in base.items():
                models[m] = clone(est).set_params(**tuned[name][m])
            for m in METHODS:
                pipe = _pipe(models[m])
                t0 = time.perf_counter()
                pipe.fit(Xtr, ytr)
                fit_s = time.perf_counter() - t0
                pred = pipe.predict(Xte)
                resid = yte - pred
                rows.append({
                    "dataset": name, "method": m, "rep": rep, "rmse": rmse(yte, pred),
                    "mae": float(np.mean(np.abs(resid))),
                    "r2": float(1 - np.sum(resid**2) / np.sum((yte - yte.mean()) ** 2)),
                    "leaves": n_leaves(pipe), "fit_s": fit_s,
                })
                if m == "HRT":
                    logs.append((name, rep, pipe[-1].solve_log_))
    return BenchmarkResult(pd.DataFrame(rows), tuned, labels, logs)


def summary_table(res: BenchmarkResult) -> pd.DataFrame:
    """Mean +- sd of RMSE and leaves per data set and method (the paper's table layout)."""
    g = res.scores.groupby(["dataset", "method"], sort=False)
    out = g.agg(rmse_mean=("rmse", "mean"), rmse_sd=("rmse", "std"), r2_mean=("r2", "mean"),
                leaves_mean=("leaves", "mean"), leaves_sd=("leaves", "std"), fit_s=("fit_s", "mean")).reset_index()
    out["data set"] = out["dataset"].map(res.labels)
    out["RMSE (mean ± sd)"] = [f"{m:.4g} ± {s:.2g}" for m, s in zip(out.rmse_mean, out.rmse_sd.fillna(0))]
    out["leaves K"] = ["–" if np.isnan(m) else f"{m:.1f} ± {s:.1f}" for m, s in
                       zip(out.leaves_mean, out.leaves_sd.fillna(0))]
    return out


def table_view(table: pd.DataFrame) -> pd.DataFrame:
    """The benchmark table as the paper lays it out: data sets as rows, RMSE and leaves per method as columns."""
    methods = list(dict.fromkeys(table.method))
    sets = list(dict.fromkeys(table["data set"]))
    r = table.pivot(index="data set", columns="method", values="RMSE (mean ± sd)")
    r = r.reindex(index=sets, columns=methods)
    k = table.pivot(index="data set", columns="method", values="leaves K").reindex(index=sets, columns=methods)
    k = k[[m for m in methods if m in ("HRT", "CART", "LinearTree-lite")]]
    return pd.concat({"test RMSE": r, "leaves K": k}, axis=1)


def tuned_view(res: BenchmarkResult) -> pd.DataFrame:
    """The baselines' tuned parameters, one row per data set."""
    return pd.DataFrame({d: {m: ", ".join(f"{k}={v}" for k, v in p.items()) or "defaults" for m, p in per.items()}
                         for d, per in res.tuned.items()}).T


def hrt_vs_cart(res: BenchmarkResult, datasets=("kin_like", "hinge")) -> pd.DataFrame:
    """Per data set: mean RMSE and leaves of HRT and CART and their ratios (claims C3, C4)."""
    s = res.scores.groupby(["dataset", "method"])[["rmse", "leaves"]].mean()
    rows = []
    for d in datasets:
        if (d, "HRT") not in s.index:
            continue
        h, c = s.loc[(d, "HRT")], s.loc[(d, "CART")]
        rows.append({"dataset": d, "HRT rmse": h.rmse, "CART rmse": c.rmse, "rmse ratio": h.rmse / c.rmse,
                     "HRT leaves": h.leaves, "CART leaves": c.leaves, "leaf ratio": h.leaves / c.leaves})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------------
# Figure 1: node objective against iteration at the root


@dataclass
class RootTraces:
    dataset: str
    n: int
    traces: dict  # (envelope, step) -> array of RMSE values
    stops: dict  # (envelope, step) -> stop reason
    steps_taken: dict  # (envelope, step) -> list of step sizes


def root_traces(cfg, dataset="kin_like", steps=(0.1, 0.5, 1.0, "auto"), max_iter=100) -> RootTraces:
    """The root node's solve on the first split's standardised training half, for each step rule and envelope."""
    n = cfg.n_samples
    X, y, _ = load_dataset(dataset, n, cfg.rng(f"data/{dataset}"), cfg.data_path)
    split_seed = int(cfg.rng(f"split/{dataset}/0").integers(2**31 - 1))
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.5, random_state=split_seed)
    Xtr = StandardScaler().fit_transform(Xtr)
    d = Xtr.shape[1]
    start = initial_thetas(Xtr, ytr, cfg.ridge_alpha, np.random.default_rng(0))
    traces, stops, taken = {}, {}, {}
    for env in ENVELOPES:
        for s in steps:
            r = solve_direction(Xtr, ytr, *start, envelope=env, step=s, ridge_alpha=cfg.ridge_alpha,
                                max_iter=max_iter, min_seg=max(5, d + 1))
            traces[(env, s)] = r.trace if r is not None else np.array([np.nan])
            stops[(env, s)] = r.stop if r is not None else "invalid_start"
            taken[(env, s)] = r.steps if r is not None else []
    return RootTraces(dataset, len(ytr), traces, stops, taken)


def trace_table(rt: RootTraces) -> pd.DataFrame:
    """One row per (envelope, step rule): iterations, first and final RMSE, largest rise, stop reason."""
    rows = []
    for (env, s), tr in rt.traces.items():
        d = np.diff(tr)
        rows.append({"envelope": env, "step": str(s), "steps taken": len(tr) - 1, "RMSE start": tr[0],
                     "RMSE end": tr[-1], "min RMSE": np.nanmin(tr),
                     "largest rise": float(d.max()) if d.size else 0.0, "stop": rt.stops[(env, s)]})
    return pd.DataFrame(rows).set_index(["envelope", "step"])


# ---------------------------------------------------------------------------------------------------------------
# Figure 2: iterations per node


def iteration_study(cfg, step_rules=STEP_RULES) -> pd.DataFrame:
    """Grow paper-mode HRTs with each step rule on the first split of every data set; one row per node solve.

    Columns: dataset, step, node, depth, n, chosen (bool: the envelope the node kept), envelope, n_iter, stop,
    max_increase (largest rise of the node RMSE between consecutive iterations), frac_nonincreasing.
    """
    rows = []
    jobs = [(name, s) for name in cfg.datasets for s in step_rules]
    cache = {}
    for name, s in progress(jobs, desc="iterations"):
        if name not in cache:
            n = cfg.n_friedman if name.startswith("friedman") else cfg.n_samples
            X, y, _ = load_dataset(name, n, cfg.rng(f"data/{name}"), cfg.data_path)
            split_seed = int(cfg.rng(f"split/{name}/0").integers(2**31 - 1))
            Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.5, random_state=split_seed)
            cache[name] = (StandardScaler().fit_transform(Xtr), ytr, split_seed)
        Xtr, ytr, split_seed = cache[name]
        params = dict(hrt_paper_params(cfg), step_size=s)
        m = HRTRegressor(**params, random_state=split_seed % 10_000).fit(Xtr, ytr)
        rows.extend(solve_rows(m.solve_log_, dataset=name, step=str(s)))
    return pd.DataFrame(rows)


def convergence_summary(it: pd.DataFrame) -> pd.DataFrame:
    """Per step rule: iterations per split node (kept envelope) and, over all envelope solves, the share stopped
    by the cap, the largest single-iteration rise of the node RMSE and the share of non-increasing iterations."""
    rows = []
    for s, g in it.groupby("step", sort=False):
        kept = g[g.chosen]
        rows.append({"step": s, "split nodes": len(kept), "median iterations": float(kept.n_iter.median()),
                     "90th pct iterations": float(kept.n_iter.quantile(0.9)),
                     "max iterations": int(kept.n_iter.max()),
                     "solves": len(g), "share stopped by cap": float(np.mean(g.stop == "cap")),
                     "largest rise": float(g.max_increase.max()),
                     "share non-increasing iterations": float(g.n_nonincreasing.sum() / max(g.n_steps.sum(), 1))})
    return pd.DataFrame(rows).set_index("step")


def solve_rows(solve_log, **extra) -> list:
    """Flatten an HRT ``solve_log_`` into one dict per envelope run."""
    out = []
    for entry in solve_log:
        for run in entry["runs"]:
            diffs = np.diff(np.asarray(run["trace"]))
            out.append({
                **extra, "node": entry["node"], "depth": entry["depth"], "n": entry["n"],
                "envelope": run["envelope"], "chosen": bool(run["chosen"]), "n_iter": run["n_iter"],
                "stop": run["stop"],
                "max_increase": float(diffs.max()) if diffs.size else 0.0,
                "n_steps": int(diffs.size), "n_nonincreasing": int(np.sum(diffs <= 1e-10)),
            })
    return out


# ---------------------------------------------------------------------------------------------------------------
# Figure 4: RMSE against number of leaves


def leaves_curve(cfg, datasets=("kin_like", "hinge")) -> pd.DataFrame:
    """Test RMSE against leaves on the first split: HRT and LinearTree-lite cut at each depth, CART per depth."""
    rows = []
    for name in datasets:
        n = cfg.n_samples
        X, y, _ = load_dataset(name, n, cfg.rng(f"data/{name}"), cfg.data_path)
        split_seed = int(cfg.rng(f"split/{name}/0").integers(2**31 - 1))
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=split_seed)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        with limit_threads(1):
            hrt = HRTRegressor(**dict(hrt_paper_params(cfg), max_depth=cfg.curve_hrt_depth),
                               random_state=split_seed % 10_000).fit(Xtr, ytr)
            for dp in range(0, cfg.curve_hrt_depth + 1):
                rows.append({"dataset": name, "method": "HRT", "depth": dp, "leaves": hrt.n_leaves_at_depth(dp),
                             "rmse": rmse(yte, hrt.predict_at_depth(Xte, dp))})
            lmt = LinearModelTree(max_depth=cfg.curve_lmt_depth, min_samples_split=40, min_samples_leaf=20)
            lmt.fit(Xtr, ytr)
            for dp in range(0, cfg.curve_lmt_depth + 1):
                rows.append({"dataset": name, "method": "LinearTree-lite", "depth": dp,
                             "leaves": lmt.n_leaves_at_depth(dp), "rmse": rmse(yte, lmt.predict_at_depth(Xte, dp))})
            for dp in range(1, cfg.curve_cart_depth + 1):
                cart = DecisionTreeRegressor(max_depth=dp, random_state=split_seed).fit(Xtr, ytr)
                rows.append({"dataset": name, "method": "CART", "depth": dp, "leaves": cart.get_n_leaves(),
                             "rmse": rmse(yte, cart.predict(Xte))})
            ridge = Ridge(alpha=1.0).fit(Xtr, ytr)
            rows.append({"dataset": name, "method": "Ridge", "depth": 0, "leaves": 1,
                         "rmse": rmse(yte, ridge.predict(Xte))})
            hgb = HistGradientBoostingRegressor(random_state=split_seed).fit(Xtr, ytr)
            rows.append({"dataset": name, "method": "HGB", "depth": np.nan, "leaves": np.nan,
                         "rmse": rmse(yte, hgb.predict(Xte))})
    return pd.DataFrame(rows)


def curve_view(lc: pd.DataFrame) -> pd.DataFrame:
    """Figure 4's numbers: "K leaves: RMSE" per depth, data set and tree method."""
    t = lc[lc.method.isin(["HRT", "LinearTree-lite", "CART"])].copy()
    t["K: RMSE"] = [f"{int(k)}: {r:.4f}" for k, r in zip(t.leaves, t.rmse)]
    return t.pivot_table(index="depth", columns=["dataset", "method"], values="K: RMSE", aggfunc="first").fillna("")


# ---------------------------------------------------------------------------------------------------------------
# Figure 5: approximation rate


@dataclass
class RateResult:
    curves: pd.DataFrame  # kind, method, depth, leaves, rmse
    slopes: dict  # (kind, method) -> fitted log-log slope of RMSE against leaves over the fit window
    window: tuple  # the leaf range of the slope fit (per kind)


def loglog_slope(leaves, err, lo, hi) -> float:
    """Least-squares slope of log(err) on log(leaves) over lo <= leaves <= hi."""
    leaves, err = np.asarray(leaves, float), np.asarray(err, float)
    keep = (leaves >= lo) & (leaves <= hi) & (err > 0)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(leaves[keep]), np.log(err[keep]), 1)[0])


RATE_METHODS = {"HRT (s=0.1)": 0.1, "HRT (auto)": "auto"}


def approximation_rate(cfg) -> RateResult:
    """Noiseless sin(3x) (1-D) and sin(2x1)cos(2x2) (2-D): grid RMSE against leaves for HRT and CART.

    HRT keeps its estimator defaults (fixed step 0.1, no ridge) except threshold 0 and min_points 3, so that the
    tree keeps refining; it is also grown with backtracking steps ("auto"). Piecewise-linear cells of width
    delta approximate a C^2 function to O(delta^2): slope -2 against K in 1-D (delta ~ 1/K), -1 in 2-D
    (delta^2 ~ 1/K); piecewise constants (CART) give O(delta): -1 and -1/2.
    """
    rows, slopes = [], {}
    windows = {"sin1d": (2, 32), "smooth2d": (4, 256)}
    for kind, n, depth, grid_m in (("sin1d", cfg.rate_n1, cfg.rate_depth1, 20001),
                                   ("smooth2d", cfg.rate_n2, cfg.rate_depth2, 301)):
        X, y = make_smooth(kind, n, cfg.rng(f"rate/{kind}"))
        Xg, yg = smooth_grid(kind, grid_m)
        for label, step in RATE_METHODS.items():
            hrt = HRTRegressor(threshold=0.0, min_points=3, max_depth=depth, step_size=step, ridge_alpha=0.0)
            hrt.fit(X, y)
            for dp in range(1, depth + 1):
                rows.append({"kind": kind, "method": label, "depth": dp, "leaves": hrt.n_leaves_at_depth(dp),
                             "rmse": rmse(yg, hrt.predict_at_depth(Xg, dp))})
        for dp in range(1, depth + 1):
            cart = DecisionTreeRegressor(max_depth=dp, random_state=0).fit(X, y)
            rows.append({"kind": kind, "method": "CART", "depth": dp, "leaves": cart.get_n_leaves(),
                         "rmse": rmse(yg, cart.predict(Xg))})
    df = pd.DataFrame(rows)
    for (kind, method), g in df.groupby(["kind", "method"]):
        slopes[(kind, method)] = loglog_slope(g.leaves, g.rmse, *windows[kind])
    return RateResult(df, slopes, windows)


# ---------------------------------------------------------------------------------------------------------------
# Figure 6: 2-D partitions


@dataclass
class Partition2D:
    grid: np.ndarray  # (m,) coordinates of the square grid
    truth: np.ndarray  # (m, m) true function
    leaf_ids: dict  # method -> (m, m) leaf index per grid point
    preds: dict  # method -> (m, m)
    rmse: dict  # method -> test RMSE
    leaves: dict  # method -> number of leaves
    X: np.ndarray  # training inputs (for a faint scatter)


def partition_2d(cfg, m: int = 241) -> Partition2D:
    """Fit HRT (depth 2: at most 4 oblique pieces) and CART (depth tuned on a validation split) on a 2-D hinge."""
    rng = cfg.rng("fig6")
    X, y = make_hinge_target(cfg.n_2d, 2, rng, noise_sd=0.05)
    Xte, yte = make_hinge_target(4000, 2, rng, noise_sd=0.0)
    hrt = HRTRegressor(threshold=0.0, min_points=5, max_depth=2, step_size="auto", ridge_alpha=0.0).fit(X, y)
    tr, va = train_test_split(np.arange(len(y)), test_size=0.25, random_state=0)
    best = min(range(2, 11), key=lambda dp: rmse(
        y[va], DecisionTreeRegressor(max_depth=dp, random_state=0).fit(X[tr], y[tr]).predict(X[va])))
    cart = DecisionTreeRegressor(max_depth=best, random_state=0).fit(X, y)
    g = np.linspace(-1, 1, m)
    G = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    models = {"HRT": hrt, "CART": cart}
    return Partition2D(
        grid=g, truth=hinge_function(G).reshape(m, m),
        leaf_ids={k: mdl.apply(G).reshape(m, m) for k, mdl in models.items()},
        preds={k: mdl.predict(G).reshape(m, m) for k, mdl in models.items()},
        rmse={k: rmse(yte, mdl.predict(Xte)) for k, mdl in models.items()},
        leaves={k: int(mdl.get_n_leaves()) for k, mdl in models.items()},
        X=X,
    )


__all__ = [
    "METHODS", "STEP_RULES", "BenchmarkResult", "RootTraces", "RateResult", "Partition2D", "run_benchmark",
    "summary_table", "table_view", "tuned_view", "curve_view", "trace_table", "convergence_summary",
    "hrt_vs_cart", "root_traces", "iteration_study", "solve_rows", "leaves_curve", "approximation_rate",
    "partition_2d", "loglog_slope", "hrt_paper_params", "rmse", "LABELS",
]
