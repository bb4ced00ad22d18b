"""The experiments behind the notebook's figures; each returns plain results (DataFrames, arrays, dicts).

* :func:`run_grid`: data set x model x generator cells. In each: factuals (test rows the model predicts as
  the undesired class 0), counterfactuals from the generator, the OT coupling, q, exact p-SHAP, and the
  minimum number of actions C* for COLA (sampled and greedy order), decoupled SHAP and random actions
  (F1, F2); the coupling ablation (F4); the proximity checks; the example rows (F5).
* :func:`run_oracle`: COLA against the brute-force per-row optimum on the small benchmark (F3).
* :func:`claim_values`: the numbers the claims ledger checks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common import limit_threads, progress, rng_for

from .data import load_dataset
from .generators import DENSE_GENERATORS, generate
from .matching import compose_q, make_coupling, ot_coupling, transport_cost
from .models import fit_model
from .pshap import pshap, shap_background
from .refine import (action_order, apply_actions, edit_mask, min_actions, oracle_min_edits, per_row_prefix,
                     proximity_violations)

POLICIES = ("cola", "cola_greedy", "decoupled", "random")
POLICY_LABELS = {"cola": "COLA (OT + p-SHAP, sampled order)", "cola_greedy": "COLA (greedy order)",
                 "decoupled": "decoupled SHAP (FA then CE)", "random": "random actions"}
ABLATION_COUPLINGS = ("ot", "nn", "identity", "random")
ORACLE_MAX_STATES = 4096  # per row: every subset when |E_i| <= 12; beyond, the search by size stops at this budget


@dataclass
class Grid:
    """Everything :func:`run_grid` measured."""

    cells: pd.DataFrame                           # one row per data set x model x generator
    curves: dict                                  # (dataset, model, generator, policy) -> fraction at target vs C
    ablation: pd.DataFrame                        # one row per cell x coupling
    pairs: dict = field(default_factory=dict)     # (dataset, model, generator) -> (X factuals, R counterfactuals)
    models: dict = field(default_factory=dict)    # (dataset, model) -> Classifier
    datasets: dict = field(default_factory=dict)  # name -> Dataset
    example: dict = field(default_factory=dict)   # F5: factual / q / refined rows of one cell
    proximity: dict = field(default_factory=dict) # L0/L1/L2 violation counts over every refined row
    set_level_l2: list = field(default_factory=list)  # per cell: (sum ||q - x||^2, sum ||r_own - x||^2)
    seconds: dict = field(default_factory=dict)


def _factuals(clf, ds, n: int, seed: int, name: str) -> np.ndarray:
    cand = np.flatnonzero(clf.predict(ds.X_test) == 0)
    if len(cand) < 2:
        raise RuntimeError(f"{name}: fewer than 2 test rows predicted as the undesired class")
    pick = rng_for(seed, f"factuals/{name}").choice(cand, size=min(n, len(cand)), replace=False)
    return ds.X_test[np.sort(pick)]


def _refine_all(clf, X, R, pi, phi, phi_dec, seed, key):
    """q, y*, E and C* (with curves and refined rows) of each policy, for one coupling."""
    q = compose_q(pi, R)
    y_star = clf.predict(q)
    E = edit_mask(X, q)
    orders = {
        "cola": action_order(phi, E, "sample", rng_for(seed, f"order/{key}")),
        "cola_greedy": action_order(phi, E, "greedy"),
        "random": action_order(phi, E, "random", rng_for(seed, f"random/{key}")),
    }
    if phi_dec is not None:  # same order stream as COLA's sampled order (common random numbers)
        orders["decoupled"] = action_order(phi_dec, E, "sample", rng_for(seed, f"order/{key}"))
    res = {p: min_actions(clf.predict, X, q, y_star, o) for p, o in orders.items()}
    refined = {p: apply_actions(X, q, orders[p], res[p].c_star) for p in orders}
    return q, y_star, E, res, refined


def run_grid(datasets, models, generators, n_factuals: int, seed: int, *, data_path=None, n_perm: int = 128,
             n_perm_decoupled: int = 128, n_background: int = 100, ablation_datasets=(), ot_reg: float = 0.0,
             example_rows: int = 3, threads: int = 1, dataset_models=None,
             oracle_max_states: int = ORACLE_MAX_STATES) -> Grid:
    """Run every data set x model x generator cell (see the module docstring).

    ``n_perm``: permutations of sampled p-SHAP (only when P > 12); ``n_perm_decoupled`` and ``n_background``:
    permutations and training rows of the decoupled-SHAP baseline. ``dataset_models``: data set -> the models
    it runs with (others: ``models``). ``oracle_max_states``: the per-row budget of the per-row optimum (see
    :func:`~lib.cola.refine.oracle_min_edits`; a cell with a row over it reports no optimum). ``threads`` caps
    the BLAS and OpenMP pools: every matrix here is small (an MLP's mini-batches, a few thousand coalition states),
    and on a busy 2-core machine one thread is faster (HistGradientBoosting fits 50x slower with one thread per
    core; the MLP's Adam steps 2x).
    """
    with limit_threads(threads):
        return _run_grid(datasets, models, generators, n_factuals, seed, data_path=data_path, n_perm=n_perm,
                         n_perm_decoupled=n_perm_decoupled, n_background=n_background,
                         ablation_datasets=ablation_datasets, ot_reg=ot_reg, example_rows=example_rows,
                         dataset_models=dataset_models or {}, oracle_max_states=oracle_max_states)


def _run_grid(datasets, models, generators, n_factuals, seed, *, data_path, n_perm, n_perm_decoupled, n_background,
              ablation_datasets, ot_reg, example_rows, dataset_models, oracle_max_states) -> Grid:
    t0 = time.perf_counter()
    cells, ablation, curves = [], [], {}
    grid = Grid(cells=None, curves=curves, ablation=None)
    prox = {"L0": 0, "L1": 0, "L2": 0, "rows": 0}
    jobs = [(d, m, g) for d in datasets for m in dataset_models.get(d, models) for g in generators]
    for ds_name, model_name, gen_name in progress(jobs, desc="cells"):
        t_cell = time.perf_counter()
        if ds_name not in grid.datasets:
            grid.datasets[ds_name] = load_dataset(ds_name, seed=seed, data_path=data_path)
        ds = grid.datasets[ds_name]
        if (ds_name, model_name) not in grid.models:
            grid.models[ds_name, model_name] = fit_model(model_name, ds.X_train, ds.y_train, seed=seed)
        clf = grid.models[ds_name, model_name]
        key = f"{ds_name}/{model_name}/{gen_name}"
        X0 = _factuals(clf, ds, n_factuals, seed, f"{ds_name}/{model_name}")
        R0, valid = generate(gen_name, clf, X0, ds.X_train, target=1, rng=rng_for(seed, f"gen/{key}"))
        X, R = X0[valid], R0[valid]
        row = {"dataset": ds_name, "model": model_name, "generator": gen_name, "P": ds.n_features,
               "n_factuals": len(X0), "n_valid": len(X)}
        if len(X) < 2:
            cells.append(row)
            continue
        grid.pairs[ds_name, model_name, gen_name] = (X, R)
        bg = ds.X_train[rng_for(seed, f"background/{ds_name}").choice(len(ds.X_train), size=min(n_background, len(ds.X_train)), replace=False)]
        pi = ot_coupling(X, R, reg=ot_reg)
        phi, method = pshap(clf.proba, X, R, pi, n_perm=n_perm, rng=rng_for(seed, f"pshap/{key}"))
        phi_dec = shap_background(clf.proba, X, bg, n_perm=n_perm_decoupled, rng=rng_for(seed, f"decoupled/{key}"))
        q, y_star, E, res, refined = _refine_all(clf, X, R, pi, phi, phi_dec, seed, key)
        for p, r in res.items():
            row[f"C_{p}"] = r.c_star
            row[f"ratio_{p}"] = r.ratio
            curves[ds_name, model_name, gen_name, p] = r.curve
        row.update(n_edits=int(E.sum()), pshap=method, ot_cost=transport_cost(pi, X, R))
        # the per-row optimum (no global order) and COLA's ranking applied row by row: where the gap of C1 comes from
        k_opt = oracle_min_edits(clf.predict, X, q, y_star, max_states=oracle_max_states, linear=clf.linear())
        k_row = per_row_prefix(clf.predict, X, q, y_star, phi)
        row["C_oracle"] = float(k_opt.sum()) if (k_opt >= 0).all() else np.nan
        row["ratio_oracle"] = row["C_oracle"] / max(int(E.sum()), 1)
        row["C_perrow"] = int(k_row.sum())
        row["ratio_perrow"] = row["C_perrow"] / max(int(E.sum()), 1)
        for Xr in refined.values():
            v = proximity_violations(X, q, Xr)
            for k in ("L0", "L1", "L2"):
                prox[k] += v[k]
            prox["rows"] += len(X)
        grid.set_level_l2.append((float(((q - X) ** 2).sum()), float(((R - X) ** 2).sum())))
        row["seconds"] = time.perf_counter() - t_cell
        cells.append(row)
        if not grid.example:
            grid.example = {"dataset": ds_name, "model": model_name, "generator": gen_name,
                            "factual": ds.to_original(X[:example_rows]), "counterfactual": ds.to_original(q[:example_rows]),
                            "refined": ds.to_original(refined["cola"][:example_rows]),
                            "features": list(ds.feature_names), "C_star": res["cola"].c_star,
                            "n_edits": int(E.sum()), "n_rows": len(X)}
        if ds_name in ablation_datasets:
            ablation.extend(_ablation(clf, X, R, pi, phi, res["cola"], E, seed, key, n_perm))
    grid.cells = pd.DataFrame(cells)
    grid.ablation = pd.DataFrame(ablation)
    grid.proximity = prox
    grid.seconds["grid"] = time.perf_counter() - t0
    return grid


def _ablation(clf, X, R, pi_ot, phi_ot, res_ot, E_ot, seed, key, n_perm):
    """C* (sampled order) and transport cost of COLA with each coupling of :data:`ABLATION_COUPLINGS`."""
    rows = []
    for name in ABLATION_COUPLINGS:
        if name == "ot":
            pi, res, E = pi_ot, res_ot, E_ot
        else:
            pi = make_coupling(name, X, R, rng=rng_for(seed, f"coupling/{key}"))
            if np.array_equal(pi, pi_ot):
                res, E = res_ot, E_ot
            else:
                phi, _ = pshap(clf.proba, X, R, pi, n_perm=n_perm, rng=rng_for(seed, f"pshap/{key}/{name}"))
                q = compose_q(pi, R)
                E = edit_mask(X, q)
                order = action_order(phi, E, "sample", rng_for(seed, f"order/{key}"))
                res = min_actions(clf.predict, X, q, clf.predict(q), order)
        d, m, g = key.split("/")
        rows.append({"dataset": d, "model": m, "generator": g, "coupling": name,
                     "cost": transport_cost(pi, X, R), "C_star": res.c_star, "n_edits": int(E.sum()),
                     "ratio": res.ratio, "same_as_ot": bool(np.array_equal(pi, pi_ot))})
    return rows


def benchmark_dataset(grid: Grid, max_features: int = 12):
    """The small benchmark's data set (C3): breast-cancer-10 when it ran, else the first with P <= ``max_features``."""
    names = oracle_datasets(grid, max_features)
    return "breast_cancer10" if "breast_cancer10" in names else (names[0] if names else None)


def oracle_datasets(grid: Grid, max_features: int = 12) -> list:
    """The benchmark's data sets: every data set of the grid with P <= ``max_features`` (brute force per row)."""
    return [d for d in grid.datasets if grid.datasets[d].n_features <= max_features]


def run_oracle(grid: Grid, datasets, n_rows: int, seed: int) -> pd.DataFrame:
    """COLA's C* (greedy and sampled order) against the exact minimum sum_i k_i* on the first ``n_rows``
    factual/counterfactual pairs of every (model, generator) cell of ``datasets`` (None: :func:`oracle_datasets`),
    with the coupling, q and p-SHAP computed again on those rows (a small benchmark of its own)."""
    datasets = oracle_datasets(grid) if datasets is None else ([datasets] if isinstance(datasets, str) else datasets)
    with limit_threads(1):
        rows = _oracle_rows(grid, datasets, n_rows, seed)
    cols = ["dataset", "model", "generator", "n", "n_edits", "C_greedy", "C_sample", "C_oracle", "gap_greedy",
            "gap_sample"]
    return pd.DataFrame(rows, columns=cols)


def _oracle_rows(grid, datasets, n_rows, seed):
    rows = []
    for (d, m, g), (X, R) in grid.pairs.items():
        if d not in datasets:
            continue
        X, R = X[:n_rows], R[:n_rows]
        clf = grid.models[d, m]
        pi = ot_coupling(X, R)
        q = compose_q(pi, R)
        y_star = clf.predict(q)
        phi, _ = pshap(clf.proba, X, R, pi)
        E = edit_mask(X, q)
        key = f"oracle/{d}/{m}/{g}"
        greedy = min_actions(clf.predict, X, q, y_star, action_order(phi, E, "greedy")).c_star
        sample = min_actions(clf.predict, X, q, y_star, action_order(phi, E, "sample", rng_for(seed, key))).c_star
        oracle = int(oracle_min_edits(clf.predict, X, q, y_star, linear=clf.linear()).sum())
        if min(greedy, sample) < oracle:
            raise AssertionError(f"{key}: COLA used fewer actions than the brute-force optimum ({greedy}, {sample} < {oracle})")
        rows.append({"dataset": d, "model": m, "generator": g, "n": len(X), "n_edits": int(E.sum()),
                     "C_greedy": greedy, "C_sample": sample, "C_oracle": oracle,
                     "gap_greedy": greedy / oracle if oracle else 1.0, "gap_sample": sample / oracle if oracle else 1.0})
    return rows


def bootstrap_ci(x: np.ndarray, seed: int, n_boot: int = 2000, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``x`` and a percentile bootstrap confidence interval."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    rng = rng_for(seed, "bootstrap")
    means = x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(x.mean()), float(lo), float(hi)


def _done(grid: Grid) -> pd.DataFrame:
    return grid.cells.dropna(subset=["C_cola"]) if "C_cola" in grid.cells else grid.cells.iloc[0:0]


def edit_reduction(grid: Grid) -> dict:
    """C1: median C*/|E| of COLA (sampled order) over the cells of dense generators, and per data set; beside it the
    medians of the greedy order, of COLA's ranking applied per row and of the exact per-row optimum (cells whose
    optimum was found within the search budget)."""
    c = _done(grid)
    dense = c[c.generator.isin(DENSE_GENERATORS)]
    nun_bc = c[(c.generator == "nun") & (c.dataset == "breast_cancer10")]
    med = lambda s: float(s.median()) if len(s) else float("nan")  # noqa: E731
    return {
        "median_ratio_dense": med(dense.ratio_cola),
        "median_ratio_dense_greedy": med(dense.ratio_cola_greedy),
        # the per-row optimum (exact, no global order) and COLA's ranking applied row by row, same cells
        "median_ratio_dense_oracle": med(dense.ratio_oracle.dropna()),
        "median_ratio_dense_perrow": med(dense.ratio_perrow[dense.ratio_oracle.notna()]),
        "n_dense_oracle_cells": int(dense.ratio_oracle.notna().sum()),
        "median_ratio_nun_bc10": med(nun_bc.ratio_cola),
        "median_by_dataset": {d: med(g.ratio_cola) for d, g in dense.groupby("dataset", sort=False)},
        "n_dense_cells": int(len(dense)),
    }


def policy_comparison(grid: Grid, seed: int) -> dict:
    """C2: how often COLA needs no more actions than decoupled SHAP / fewer than random, with bootstrap CIs
    of the mean ratio difference across cells."""
    c = _done(grid)
    return {
        "frac_le_decoupled": float((c.C_cola <= c.C_decoupled).mean()) if len(c) else float("nan"),
        "frac_lt_random": float((c.C_cola < c.C_random).mean()) if len(c) else float("nan"),
        "diff_vs_decoupled": bootstrap_ci((c.ratio_cola - c.ratio_decoupled).to_numpy(), seed),
        "diff_vs_random": bootstrap_ci((c.ratio_cola - c.ratio_random).to_numpy(), seed),
        "n_cells": int(len(c)),
    }


def oracle_gap(oracle: pd.DataFrame) -> dict:
    """C3: mean C*(COLA) / C*(oracle) over the benchmark's cells, greedy and sampled order."""
    ok = len(oracle) > 0
    return {"gap_greedy": float(oracle.gap_greedy.mean()) if ok else float("nan"),
            "gap_sample": float(oracle.gap_sample.mean()) if ok else float("nan"),
            "n_cells": int(len(oracle))}


def proximity_summary(grid: Grid) -> dict:
    """C4: rows (over every cell and policy) whose refined x' is farther from x than q is, in L0/L1/L2; and
    cells where the composed q is farther (sum of squared L2) than the generator's own counterfactuals."""
    p = grid.proximity
    return {"violations": int(sum(p.get(k, 0) for k in ("L0", "L1", "L2"))),
            "by_norm": {k: int(p.get(k, 0)) for k in ("L0", "L1", "L2")}, "rows": int(p.get("rows", 0)),
            "set_level_l2_violations": int(sum(a > b * (1 + 1e-12) for a, b in grid.set_level_l2))}


def coupling_summary(grid: Grid) -> dict:
    """C5: (cell, coupling) pairs in which another coupling in Pi(a, b) is cheaper than OT; and how often
    OT needs no more actions than the random coupling."""
    ab = grid.ablation
    if not len(ab):
        return {"ot_cost_beaten": float("nan"), "pairs": 0, "frac_ot_le_random": float("nan"), "cells": 0}
    key = ["dataset", "model", "generator"]
    ot_cost = ab[ab.coupling == "ot"].set_index(key).cost
    other = ab[ab.coupling != "ot"].set_index(key)
    ref = ot_cost.reindex(other.index).to_numpy()
    piv = ab.pivot_table(index=key, columns="coupling", values="C_star")
    return {"ot_cost_beaten": int((other.cost.to_numpy() < ref - 1e-9 * (1 + np.abs(ref))).sum()),
            "pairs": int(len(other)), "frac_ot_le_random": float((piv["ot"] <= piv["random"]).mean()),
            "cells": int(len(piv)),
            "mean_ratio": ab.groupby("coupling", sort=False).ratio.mean().to_dict(),
            "mean_cost_rel": (other.cost / ot_cost.reindex(other.index)).groupby(other.coupling).mean().to_dict()}


def claim_values(grid: Grid, oracle: pd.DataFrame, seed: int) -> dict:
    """All the numbers above in one dict (for scripts and tests)."""
    return {"edit_reduction": edit_reduction(grid), "policies": policy_comparison(grid, seed),
            "oracle": oracle_gap(oracle), "proximity": proximity_summary(grid), "couplings": coupling_summary(grid)}


def worst_ratio(parts) -> float:
    """One number for a claim with several thresholds: the largest of measured/threshold (for ``<=`` parts) and
    threshold/measured (for ``>=`` parts); the claim holds iff the result is <= 1. NaN parts (a data set that
    did not run) are skipped; all NaN gives NaN."""
    vals = []
    for m, op, t in parts:
        m = float(m)
        if not np.isfinite(m):
            continue
        if op == "<=":
            vals.append(m / t)
        elif op == ">=":
            vals.append(t / m if m > 0 else float("inf"))
        else:
            raise ValueError(f"worst_ratio: comparison {op!r} not in '<=', '>='")
    return max(vals) if vals else float("nan")
