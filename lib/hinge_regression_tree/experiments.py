"""The notebook's experiments. Each returns plain results (DataFrames, arrays, dataclasses)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

from lib.common import limit_threads, progress

from .baselines import LinearModelTree, n_leaves
from .data import LABELS, load_dataset, make_hinge_target, make_smooth, smooth_grid, hinge_function
from .solver import ENVELOPES, initial_thetas, solve_direction
from .tree import HRTRegressor

METHODS = ("HRT", "CART", "LinearTree-lite", "Ridge", "HGB")
HRT_TUNED = "HRT, one-SE depth"  # the paper-setting tree cut at the depth the one-SE rule picks (not the protocol)
SINGLE_TREES = ("CART", "LinearTree-lite")  # the single-tree baselines HRT is compared with (M5P: see notebook)
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
# Quick mode: one validation split of the training half; CART keeps the paper's depths, the others small grids.
GRIDS_QUICK = {
    "Ridge": {"alpha": [0.1, 1.0, 10.0, 100.0]},
    "CART": {"max_depth": [3, 5, 7, 9, 11], "min_samples_leaf": [1, 4]},
    "LinearTree-lite": {"max_depth": [3, 5, 7], "min_samples_split": [40], "min_samples_leaf": [20]},
    "HGB": {},
}
# Trees are tuned by the one-standard-error rule (Breiman et al. 1984; ESL 7.10): among the grid points whose
# validation MSE is within one standard error of the best, the one with the fewest leaves. This is fixed before
# any comparison with HRT; the plain arg-min is recorded beside it. Ridge and HGB take the arg-min.
ONE_SE_METHODS = ("CART", "LinearTree-lite")


def rmse(y, p) -> float:
    return float(np.sqrt(np.mean((np.asarray(y) - np.asarray(p)) ** 2)))


def hrt_paper_params(cfg) -> dict:
    """The paper's kin8nm setting: threshold 0, max_depth 6, backtracking steps, ridge 1 (knobs from cfg)."""
    return {"threshold": 0.0, "min_points": 5, "max_depth": cfg.max_depth, "step_size": cfg.step_size,
            "ridge_alpha": cfg.ridge_alpha}


def _base_estimators(seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingRegressor  # imported when a benchmark runs (0.25 s)

    return {
        "CART": DecisionTreeRegressor(random_state=seed),
        "LinearTree-lite": LinearModelTree(),
        "Ridge": Ridge(),
        "HGB": HistGradientBoostingRegressor(random_state=seed),
    }


def _pipe(est) -> Pipeline:
    return Pipeline([("scale", StandardScaler()), ("model", est)])


def _folds(n: int, scheme: str, seed: int) -> list:
    """5-fold CV ("cv5") or one 75/25 validation split ("holdout") of n training points."""
    if scheme == "cv5":
        return list(KFold(5, shuffle=True, random_state=seed).split(np.zeros(n)))
    return [tuple(train_test_split(np.arange(n), test_size=0.25, random_state=seed))]


def one_se_choice(table: pd.DataFrame) -> pd.Series:
    """The one-SE rule on a tuning table (columns mse, se, leaves): the fewest leaves within best mse + its se."""
    best = table.loc[table.mse.idxmin()]
    within = table[table.mse <= best.mse + best.se]
    return within.sort_values(["leaves", "mse"], kind="stable").iloc[0]


def _se(fold_mse: np.ndarray, sq_err: np.ndarray) -> float:
    """Standard error of a validation MSE: across folds (k > 1), or across the validation points (one split)."""
    if len(fold_mse) > 1:
        return float(np.std(fold_mse, ddof=1) / np.sqrt(len(fold_mse)))
    return float(np.std(sq_err, ddof=1) / np.sqrt(len(sq_err)))


def tuning_table(name: str, est, X, y, grid: dict, folds: list) -> pd.DataFrame:
    """One row per grid point of a tree: validation mse, its standard error and the mean number of leaves."""
    if name == "LinearTree-lite":
        return _model_tree_table(X, y, grid, folds)
    rows = []
    for params in ParameterGrid(grid):
        mses, leaves, sq = [], [], []
        for tr, va in folds:
            pipe = _pipe(clone(est).set_params(**params)).fit(X[tr], y[tr])
            e = (pipe.predict(X[va]) - y[va]) ** 2
            mses.append(e.mean())
            sq.append(e)
            leaves.append(n_leaves(pipe))
        rows.append({"params": params, "mse": float(np.mean(mses)), "se": _se(np.array(mses), sq[0]),
                     "leaves": float(np.mean(leaves))})
    return pd.DataFrame(rows)


def _model_tree_table(X, y, grid, folds) -> pd.DataFrame:
    """Tuning table of LinearModelTree; trees of every depth are read off one deepest fit per fold."""
    depths = sorted(grid["max_depth"])
    rows = []
    for mss in grid["min_samples_split"]:
        for msl in grid["min_samples_leaf"]:
            mse = np.zeros((len(folds), len(depths)))
            leaves = np.zeros_like(mse)
            sq = []
            for f, (tr, va) in enumerate(folds):
                sc = StandardScaler().fit(X[tr])
                m = LinearModelTree(max_depth=depths[-1], min_samples_split=mss, min_samples_leaf=msl)
                m.fit(sc.transform(X[tr]), y[tr])
                Xv = sc.transform(X[va])
                for k, dp in enumerate(depths):
                    e = (m.predict_at_depth(Xv, dp) - y[va]) ** 2
                    mse[f, k] = e.mean()
                    leaves[f, k] = m.n_leaves_at_depth(dp)
                    if f == 0:
                        sq.append(e)
            for k, dp in enumerate(depths):
                rows.append({"params": {"max_depth": dp, "min_samples_split": mss, "min_samples_leaf": msl},
                             "mse": float(mse[:, k].mean()), "se": _se(mse[:, k], sq[k]),
                             "leaves": float(leaves[:, k].mean())})
    return pd.DataFrame(rows)


def _tune_hrt_depth(cfg, X, y, scheme: str, seed: int) -> dict:
    """The one-SE depth of the paper-setting HRT on the same folds as the baselines (depths 1..max_depth).

    Greedy trees are nested, so one tree per fold grown to ``max_depth`` gives every smaller depth.
    """
    depths = range(1, cfg.max_depth + 1)
    folds = _folds(len(y), scheme, seed)
    mse = np.zeros((len(folds), len(depths)))
    leaves = np.zeros_like(mse)
    sq = []
    for f, (tr, va) in enumerate(folds):
        sc = StandardScaler().fit(X[tr])
        m = _hrt(cfg, seed).fit(sc.transform(X[tr]), y[tr])
        preds = m.predict_depths(sc.transform(X[va]), depths)
        for k, dp in enumerate(depths):
            e = (preds[dp] - y[va]) ** 2
            mse[f, k], leaves[f, k] = e.mean(), m.n_leaves_at_depth(dp)
            if f == 0:
                sq.append(e)
    table = pd.DataFrame([{"params": {"max_depth": dp}, "mse": float(mse[:, k].mean()), "se": _se(mse[:, k], sq[k]),
                           "leaves": float(leaves[:, k].mean())} for k, dp in enumerate(depths)])
    pick, best = one_se_choice(table), table.loc[table.mse.idxmin()]
    return {"params": dict(pick.params), "rule": "one-SE", "mse": pick.mse, "leaves": pick.leaves,
            "argmin": dict(best.params), "argmin_mse": best.mse, "argmin_se": best.se, "argmin_leaves": best.leaves,
            "grid_points": len(table)}


def _tune(name: str, est, X, y, grid: dict, scheme: str, seed: int) -> dict:
    """Tuned parameters and how they were chosen: {"params", "rule", "mse", "leaves", "argmin", ...}."""
    if not grid:
        return {"params": {}, "rule": "defaults"}
    folds = _folds(len(y), scheme, seed)
    if name in ONE_SE_METHODS:
        table = tuning_table(name, est, X, y, grid, folds)
        pick, best = one_se_choice(table), table.loc[table.mse.idxmin()]
        return {"params": dict(pick.params), "rule": "one-SE", "mse": pick.mse, "leaves": pick.leaves,
                "argmin": dict(best.params), "argmin_mse": best.mse, "argmin_se": best.se,
                "argmin_leaves": best.leaves, "grid_points": len(table)}
    gs = GridSearchCV(_pipe(est), {f"model__{k}": v for k, v in grid.items()}, cv=folds,
                      scoring="neg_mean_squared_error", n_jobs=1, error_score="raise")
    gs.fit(X, y)
    return {"params": {k.replace("model__", ""): v for k, v in gs.best_params_.items()}, "rule": "arg-min",
            "mse": -gs.best_score_}


def first_split(cfg, name: str, rep: int = 0):
    """(Xtr, Xte, ytr, yte, split_seed, label): split ``rep`` (50/50) of a benchmark data set, unscaled."""
    n = cfg.n_friedman if name.startswith("friedman") else cfg.n_samples
    X, y, label = load_dataset(name, n, cfg.rng(f"data/{name}"), cfg.data_path)
    split_seed = int(cfg.rng(f"split/{name}/{rep}").integers(2**31 - 1))
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=split_seed)
    return Xtr, Xte, ytr, yte, split_seed, label


def _hrt(cfg, split_seed: int, **overrides) -> HRTRegressor:
    return HRTRegressor(**dict(hrt_paper_params(cfg), **overrides), random_state=split_seed % 10_000)


@dataclass
class BenchmarkResult:
    scores: pd.DataFrame  # one row per (dataset, method, rep)
    tuned: dict  # dataset -> method -> {"params", "rule", "mse", "leaves", "argmin", ...} (see _tune)
    labels: dict  # dataset -> label
    hrt_logs: list = field(default_factory=list)  # (dataset, rep, solve_log_) of the HRT fits


def run_benchmark(cfg, study=None) -> BenchmarkResult:
    """RMSE, MAE, R^2, leaves and fit time of every method on every data set, over ``n_reps`` 50/50 splits.

    Baselines are tuned once on the first split's training half (as the paper's script does; trees by the
    one-SE rule), then refitted with those parameters on every split. HRT uses the paper's fixed setting
    (``hrt_paper_params``). ``study``: an :class:`IterationStudy` whose first-split HRT fits in the paper's
    setting are reused for rep 0 instead of refitting the same tree.
    """
    grids = GRIDS_FULL if cfg.tuning == "cv5" else GRIDS_QUICK
    rows, tuned, labels, logs = [], {}, {}, []
    jobs = [(name, rep) for name in cfg.datasets for rep in range(cfg.n_reps)]
    paper_setting = str(cfg.step_size)
    for name, rep in progress(jobs, desc="benchmark"):
        Xtr, Xte, ytr, yte, split_seed, labels[name] = first_split(cfg, name, rep)
        base = _base_estimators(split_seed)
        with limit_threads(1):  # 2 shared cores: one thread per fit is faster than oversubscription
            if rep == 0:
                tuned[name] = {m: _tune(m, base[m], Xtr, ytr, grids[m], cfg.tuning, split_seed) for m in base}
                tuned[name][HRT_TUNED] = _tune_hrt_depth(cfg, Xtr, ytr, cfg.tuning, split_seed)
            models = {m: _pipe(clone(est).set_params(**tuned[name][m]["params"])) for m, est in base.items()}
            models["HRT"] = _pipe(_hrt(cfg, split_seed))
            reused = study.models.get((name, paper_setting)) if (study is not None and rep == 0) else None
            for m in METHODS:
                pipe = models[m]
                if m == "HRT" and reused is not None:
                    scaler, model, fit_s = reused
                    pipe = Pipeline([("scale", scaler), ("model", model)])
                else:
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
                    dp = tuned[name][HRT_TUNED]["params"]["max_depth"]
                    cut = pipe[-1].predict_at_depth(pipe[0].transform(Xte), dp)
                    rows.append({"dataset": name, "method": HRT_TUNED, "rep": rep, "rmse": rmse(yte, cut),
                                 "mae": float(np.mean(np.abs(yte - cut))),
                                 "r2": float(1 - np.sum((yte - cut) ** 2) / np.sum((yte - yte.mean()) ** 2)),
                                 "leaves": float(pipe[-1].n_leaves_at_depth(dp)), "fit_s": np.nan})
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
    k = k[[m for m in methods if m in ("HRT", HRT_TUNED) + SINGLE_TREES]]
    return pd.concat({"test RMSE": r, "leaves K": k}, axis=1)


def tuned_view(res: BenchmarkResult) -> pd.DataFrame:
    """The baselines' tuned parameters per data set (depth = max_depth, mss/msl = min_samples_split/leaf); for
    trees also the validation arg-min the one-SE rule replaced (its parameters and leaves)."""
    short = {"max_depth": "depth", "min_samples_split": "mss", "min_samples_leaf": "msl", "learning_rate": "lr",
             "max_iter": "iters"}

    def fmt(p):
        return ", ".join(f"{short.get(k, k)}={v}" for k, v in p.items()) or "defaults"

    rows = {}
    for d, per in res.tuned.items():
        row = {}
        for m, t in per.items():
            row[m] = fmt(t["params"])
            if t.get("rule") == "one-SE":
                row[m] += f" ({t['leaves']:.0f} leaves)"
                row[f"{m}: arg-min"] = f"{fmt(t['argmin'])} ({t['argmin_leaves']:.0f} leaves)"
        rows[res.labels[d]] = row
    return pd.DataFrame(rows).T


def single_tree_table(res: BenchmarkResult) -> pd.DataFrame:
    """Per data set: HRT against the best tuned single tree (lowest mean test RMSE among SINGLE_TREES).

    The brief's criterion for "matches ... with more compact structures": HRT's RMSE within +5% of the best
    single tree's (C3) with at most its leaves (C4). CART's numbers are listed beside it.
    """
    s = res.scores.groupby(["dataset", "method"])[["rmse", "leaves"]].mean()
    rows = []
    for d in dict.fromkeys(res.scores.dataset):
        h = s.loc[(d, "HRT")]
        trees = {m: s.loc[(d, m)] for m in SINGLE_TREES if (d, m) in s.index}
        best = min(trees, key=lambda m: trees[m].rmse)
        b, c, t = trees[best], trees["CART"], s.loc[(d, HRT_TUNED)]
        rows.append({"dataset": d, "data set": res.labels[d], "HRT rmse": h.rmse, "HRT leaves": h.leaves,
                     "best single tree": best, "best rmse": b.rmse, "best leaves": b.leaves,
                     "rmse ratio": h.rmse / b.rmse, "leaf ratio": h.leaves / b.leaves,
                     "within 5%": bool(h.rmse <= 1.05 * b.rmse), "at most its leaves": bool(h.leaves <= b.leaves),
                     "CART rmse ratio": h.rmse / c.rmse, "CART leaf ratio": h.leaves / c.leaves,
                     "one-SE HRT rmse ratio": t.rmse / b.rmse, "one-SE HRT leaf ratio": t.leaves / b.leaves})
    return pd.DataFrame(rows).set_index("dataset")


# ---------------------------------------------------------------------------------------------------------------
# Figure 1: node objective against iteration at the root


@dataclass
class RootTraces:
    dataset: str
    label: str
    n: int
    traces: dict  # (envelope, step) -> array of RMSE values
    stops: dict  # (envelope, step) -> stop reason
    steps_taken: dict  # (envelope, step) -> list of step sizes


def root_traces(cfg, dataset="kin_like", steps=(0.1, 0.5, 1.0, "auto"), max_iter=100) -> RootTraces:
    """The root node's solve on the first split's standardised training half, for each step rule and envelope."""
    Xtr, _, ytr, _, _, label = first_split(cfg, dataset)
    Xtr = StandardScaler().fit_transform(Xtr)
    d = Xtr.shape[1]
    start = initial_thetas(Xtr, ytr, cfg.ridge_alpha, np.random.default_rng(0))
    traces, stops, taken = {}, {}, {}
    for env in ENVELOPES:
        for s in steps:
            r = solve_direction(Xtr, ytr, *start, envelope=env, step=s, ridge_alpha=cfg.ridge_alpha,
                                max_iter=max_iter, min_seg=max(5, d + 1))
            traces[(env, s)] = r.trace if r is not None else np.array([np.nan])
            stops[(env, s)] = (r.stop + (f" ({r.no_descent})" if r.no_descent else "")) if r is not None \
                else "invalid_start"
            taken[(env, s)] = r.steps if r is not None else []
    return RootTraces(dataset, label, len(ytr), traces, stops, taken)


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


@dataclass
class IterationStudy:
    solves: pd.DataFrame  # one row per envelope solve (see solve_rows), with columns dataset and setting
    models: dict  # (dataset, setting) -> (fitted StandardScaler, fitted HRTRegressor, fit seconds)
    settings: dict  # setting label -> the HRT parameters that differ from the paper's setting


SETTINGS = {"auto": {"step_size": "auto"}, "0.5": {"step_size": 0.5}, "0.1": {"step_size": 0.1},
            "auto, α=0": {"step_size": "auto", "ridge_alpha": 0.0}}


def study_settings(cfg) -> dict:
    """The node-solver settings of Figure 2 for this mode (``cfg.study_settings``): the paper's backtracking (ridge
    from cfg), fixed steps 0.5 and 0.1, and backtracking without ridge (where the line search measures the
    objective the refit minimises); quick mode runs the first and the estimator's default fixed step 0.1."""
    out = {k: SETTINGS[k] for k in cfg.study_settings}
    if cfg.ridge_alpha == 0:
        out.pop("auto, α=0", None)  # the same as "auto"
    return out


def iteration_study(cfg, settings=None) -> IterationStudy:
    """Grow paper-mode HRTs with each node-solver setting on the first split of every data set.

    One row per envelope solve; the kept envelope of each split node has ``chosen=True``.
    """
    settings = study_settings(cfg) if settings is None else settings
    rows, models = [], {}
    jobs = [(name, label) for name in cfg.datasets for label in settings]
    cache = {}
    for name, label in progress(jobs, desc="iterations"):
        if name not in cache:
            Xtr, _, ytr, _, split_seed, _ = first_split(cfg, name)
            scaler = StandardScaler().fit(Xtr)
            cache[name] = (scaler, scaler.transform(Xtr), ytr, split_seed)
        scaler, Xs, ytr, split_seed = cache[name]
        with limit_threads(1):
            t0 = time.perf_counter()
            m = _hrt(cfg, split_seed, **settings[label]).fit(Xs, ytr)
            models[(name, label)] = (scaler, m, time.perf_counter() - t0)
        rows.extend(solve_rows(m.solve_log_, dataset=name, setting=label))
    return IterationStudy(pd.DataFrame(rows), models, settings)


def converged_share(solves: pd.DataFrame) -> float:
    """Share of envelope solves that stopped converged (unchanged partition, step < tol, stationary point)."""
    return float(solves.converged.mean()) if len(solves) else float("nan")


def convergence_summary(study: IterationStudy) -> pd.DataFrame:
    """Per setting: Gauss-Newton iterations per split node (kept envelope) and, over all envelope solves, how they
    stopped, the largest single-iteration rise of the node RMSE and the share of non-increasing iterations.

    "iterations" are loop passes as the paper's code counts them (``iter_counts_``: the last pass detects the stop);
    "GN steps" are the damped steps actually taken.
    """
    rows = []
    for label, g in study.solves.groupby("setting", sort=False):
        kept = g[g.chosen]
        rows.append({"setting": label, "split nodes": len(kept),
                     "median iterations": float(kept.n_iter.median()),
                     "median GN steps": float(kept.n_steps.median()),
                     "share ≤ 1 GN step": float(np.mean(kept.n_steps <= 1)),
                     "max iterations": int(kept.n_iter.max()),
                     "solves": len(g), "share converged": converged_share(g),
                     "share no descent": float(np.mean(g.stop == "no_descent")),
                     "share stopped by cap": float(np.mean(g.stop == "cap")),
                     "largest rise": float(g.max_increase.max()),
                     "share non-increasing iterations": float(g.n_nonincreasing.sum() / max(g.n_steps.sum(), 1))})
    return pd.DataFrame(rows).set_index("setting")


STOP_LABELS = {"partition": "partition unchanged", "tol": "step < tol", "no_descent:stationary": "stationary",
               "no_descent:ridge": "no descent: ridge", "no_descent:kinks": "no descent: kinks",
               "invalid_step": "step empties a side", "singular": "singular", "cap": "iteration cap"}


def stop_table(study: IterationStudy) -> pd.DataFrame:
    """Counts of stop reasons per data set and setting (all envelope solves); no-descent stops split by cause."""
    g = study.solves.assign(reason=study.solves.stop_detail.map(STOP_LABELS))
    t = g.groupby(["setting", "dataset"], sort=False).reason.value_counts().unstack(fill_value=0)
    cols = [c for c in STOP_LABELS.values() if c in t.columns]
    t = t[cols]
    t["solves"] = t.sum(axis=1)
    by = g.groupby(["setting", "dataset"], sort=False)
    t["share converged"] = by.converged.mean()
    nd = g[g.stop == "no_descent"].groupby(["setting", "dataset"], sort=False).longer_search
    t["no descent: longer search finds a step"] = nd.mean().reindex(t.index)
    return t


def solve_rows(solve_log, **extra) -> list:
    """Flatten an HRT ``solve_log_`` into one dict per envelope run."""
    out = []
    for entry in solve_log:
        for run in entry["runs"]:
            diffs = np.diff(np.asarray(run["trace"]))
            out.append({
                **extra, "node": entry["node"], "depth": entry["depth"], "n": entry["n"],
                "envelope": run["envelope"], "chosen": bool(run["chosen"]), "n_iter": run["n_iter"],
                "stop": run["stop"], "no_descent": run["no_descent"],
                "stop_detail": run["stop"] + (f":{run['no_descent']}" if run["no_descent"] else ""),
                "converged": bool(run["converged"]), "decrement": run["decrement"],
                "longer_search": bool(run["longer_search"]),
                "max_increase": float(diffs.max()) if diffs.size else 0.0,
                "n_steps": int(diffs.size), "n_nonincreasing": int(np.sum(diffs <= 1e-10)),
            })
    return out


# ---------------------------------------------------------------------------------------------------------------
# Figure 4: RMSE against number of leaves


def leaves_curve(cfg, bench=None, datasets=("kin_like", "hinge")) -> pd.DataFrame:
    """Test RMSE against leaves on the first split: HRT and LinearTree-lite cut at each depth, CART per depth.

    Ridge and HGB are horizontal references: their first-split test RMSE from ``bench`` (tuned as in the
    benchmark) when given, else refitted with defaults.
    """
    rows = []
    for name in datasets:
        Xtr, Xte, ytr, yte, split_seed, _ = first_split(cfg, name)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        with limit_threads(1):
            hrt = _hrt(cfg, split_seed, max_depth=cfg.curve_hrt_depth).fit(Xtr, ytr)
            preds = hrt.predict_depths(Xte, range(0, cfg.curve_hrt_depth + 1))
            for dp in range(0, cfg.curve_hrt_depth + 1):
                rows.append({"dataset": name, "method": "HRT", "depth": dp, "leaves": hrt.n_leaves_at_depth(dp),
                             "rmse": rmse(yte, preds[dp])})
            lmt = LinearModelTree(max_depth=cfg.curve_lmt_depth, min_samples_split=40, min_samples_leaf=20)
            lmt.fit(Xtr, ytr)
            for dp in range(0, cfg.curve_lmt_depth + 1):
                rows.append({"dataset": name, "method": "LinearTree-lite", "depth": dp,
                             "leaves": lmt.n_leaves_at_depth(dp), "rmse": rmse(yte, lmt.predict_at_depth(Xte, dp))})
            for dp in range(1, cfg.curve_cart_depth + 1):
                cart = DecisionTreeRegressor(max_depth=dp, random_state=split_seed).fit(Xtr, ytr)
                rows.append({"dataset": name, "method": "CART", "depth": dp, "leaves": cart.get_n_leaves(),
                             "rmse": rmse(yte, cart.predict(Xte))})
            for m in ("Ridge", "HGB"):
                if bench is not None and name in set(bench.scores.dataset):
                    sc0 = bench.scores
                    r = float(sc0[(sc0.dataset == name) & (sc0.method == m) & (sc0.rep == 0)].rmse.iloc[0])
                else:
                    est = _base_estimators(split_seed)[m].fit(Xtr, ytr)
                    r = rmse(yte, est.predict(Xte))
                rows.append({"dataset": name, "method": m, "depth": np.nan, "leaves": 1 if m == "Ridge" else np.nan,
                             "rmse": r})
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
    window: dict  # kind -> the leaf range (lo, hi) of the slope fit
    splits: pd.DataFrame  # per (kind, HRT setting): how the split nodes were solved and where they cut


def loglog_slope(leaves, err, lo, hi) -> float:
    """Least-squares slope of log(err) on log(leaves) over lo <= leaves <= hi."""
    leaves, err = np.asarray(leaves, float), np.asarray(err, float)
    keep = (leaves >= lo) & (leaves <= hi) & (err > 0)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(leaves[keep]), np.log(err[keep]), 1)[0])


RATE_METHODS = {"HRT (auto)": "auto", "HRT (s=0.1)": 0.1}
RATE_WINDOWS = {"sin1d": (2, 32), "smooth2d": (4, 256)}  # the 2-D window ends at the deepest tree's 2^depth


def split_balance(model: HRTRegressor) -> np.ndarray:
    """Share of each split node's points that go left (0.5: a median cut)."""
    t = model.tree_
    split = np.flatnonzero(~t.is_leaf)
    return t.n_samples[t.left[split]] / t.n_samples[split]


def approximation_rate(cfg) -> RateResult:
    """Noiseless sin(3x) (1-D) and sin(2x1)cos(2x2) (2-D): grid RMSE against leaves for HRT and CART.

    HRT uses threshold 0 and min_points 3, so that the tree keeps refining, no ridge, and the paper's
    backtracking steps ("auto", the variant its theory is about); it is also grown with the estimator's default
    fixed step 0.1. Piecewise-linear cells of width delta approximate a C^2 function to O(delta^2): slope -2
    against K in 1-D (delta ~ 1/K), -1 in 2-D (delta^2 ~ 1/K); piecewise constants (CART) give O(delta): -1 and -1/2.
    """
    rows, slopes, splits = [], {}, []
    for kind, n, depth, grid_m in (("sin1d", cfg.rate_n1, cfg.rate_depth1, 20001),
                                   ("smooth2d", cfg.rate_n2, cfg.rate_depth2, 301)):
        X, y = make_smooth(kind, n, cfg.rng(f"rate/{kind}"))
        Xg, yg = smooth_grid(kind, grid_m)
        for label, step in RATE_METHODS.items():
            hrt = HRTRegressor(threshold=0.0, min_points=3, max_depth=depth, step_size=step, ridge_alpha=0.0)
            hrt.fit(X, y)
            preds = hrt.predict_depths(Xg, range(1, depth + 1))
            for dp in range(1, depth + 1):
                rows.append({"kind": kind, "method": label, "depth": dp, "leaves": hrt.n_leaves_at_depth(dp),
                             "rmse": rmse(yg, preds[dp])})
            kept = pd.DataFrame([r for r in solve_rows(hrt.solve_log_) if r["chosen"]])
            bal = np.abs(split_balance(hrt) - 0.5)
            splits.append({"kind": kind, "method": label, "split nodes": len(kept),
                           "median GN steps": float(kept.n_steps.median()),
                           "share ≤ 1 GN step": float(np.mean(kept.n_steps <= 1)),
                           "share stopped on partition": float(np.mean(kept.stop == "partition")),
                           "median |left share − ½|": float(np.median(bal)),
                           "share of median cuts (|left share − ½| ≤ 0.02)": float(np.mean(bal <= 0.02))})
        for dp in range(1, depth + 1):
            cart = DecisionTreeRegressor(max_depth=dp, random_state=0).fit(X, y)
            rows.append({"kind": kind, "method": "CART", "depth": dp, "leaves": cart.get_n_leaves(),
                         "rmse": rmse(yg, cart.predict(Xg))})
    df = pd.DataFrame(rows)
    windows = {"sin1d": RATE_WINDOWS["sin1d"],
               "smooth2d": (RATE_WINDOWS["smooth2d"][0], min(RATE_WINDOWS["smooth2d"][1], 2 ** cfg.rate_depth2))}
    for (kind, method), g in df.groupby(["kind", "method"]):
        slopes[(kind, method)] = loglog_slope(g.leaves, g.rmse, *windows[kind])
    return RateResult(df, slopes, windows, pd.DataFrame(splits).set_index(["kind", "method"]))


def slope_table(ra: RateResult) -> pd.DataFrame:
    """Fitted log-log slopes per target and method, with the O(delta^2) and O(delta) references."""
    ref = {"sin1d": (-2.0, -1.0), "smooth2d": (-1.0, -0.5)}
    rows = [{"target": k, "method": m, "slope": v, "O(δ²) reference": ref[k][0], "O(δ) reference": ref[k][1],
             "window K": f"[{ra.window[k][0]}, {ra.window[k][1]}]"} for (k, m), v in ra.slopes.items()]
    return pd.DataFrame(rows).set_index(["target", "method"])


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
    "METHODS", "HRT_TUNED", "SINGLE_TREES", "STEP_RULES", "BenchmarkResult", "IterationStudy", "RootTraces",
    "RateResult", "Partition2D", "run_benchmark", "summary_table", "table_view", "tuned_view", "single_tree_table", "curve_view",
    "trace_table", "convergence_summary", "stop_table", "converged_share", "root_traces", "iteration_study",
    "study_settings", "SETTINGS", "solve_rows", "leaves_curve", "approximation_rate", "slope_table", "split_balance",
    "partition_2d", "loglog_slope", "one_se_choice", "tuning_table", "first_split", "hrt_paper_params", "rmse",
    "LABELS",
]
