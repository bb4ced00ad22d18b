"""One function per figure: train GMAN's variants and the baselines over seeds, then read the explanations."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from lib.common import limit_threads
from lib.common.parallel import map_jobs

from .baselines import GIN, GRUDLite, fit_nn_baseline, fit_summary_baselines, gin_batch, grid_batch
from .data import CASCADE_EMB, make_biomarker_sets, make_cascades, summary_features, train_val_test, load_physionet2012
from .explain import contributions, distance_function, marker_importance, shape_functions
from .model import GMAN, Norm, collate, collate_chunks
from .train import evaluate, make_batches, metrics, train


def variants(m: int) -> dict:
    """The paper's variants: name -> (subsets, feature groups)."""
    single = [[g] for g in range(m)]
    return {"GMAN singletons": (single, (2, 2)),
            "GMAN {B,C} grouped": ([[0], [1, 2]] + [[g] for g in range(3, m)], (2, 2)),
            "GMAN one group": ([list(range(m))], (2, 2)),
            "GNAN": (single, (1, 1, 1, 1))}


def make_data(cfg, rep: int, interaction: bool = True):
    rng = cfg.rng(f"data{rep}{'' if interaction else '-off'}")
    if cfg.data_path is not None:
        s = load_physionet2012(cfg.data_path)
        if s.n < 10:
            raise ValueError(f"parameter 'data_path': {s.n} records are too few to train and test (need >= 10)")
    else:
        s = make_biomarker_sets(cfg.n_patients, cfg.n_markers, window=cfg.window, tau=cfg.tau,
                                interaction=interaction, rng=rng)
    tr, va, te = train_val_test(s.n, rng=rng)
    return s.take(tr), s.take(va), s.take(te)


def _prepare(cfg, rep: int, interaction: bool = True):
    """Replicate ``rep``'s splits, the value standardisation and the positive-class weight (deterministic: every
    worker process rebuilds the same from ``cfg``)."""
    tr, va, te = make_data(cfg, rep, interaction)
    norm = Norm.fit(tr, cfg.time_unit if cfg.data_path is None else 1.0)
    pos_w = float((1 - tr.y.mean()) / max(tr.y.mean(), 1e-6))
    return tr, va, te, norm, pos_w


def train_variant(cfg, rep: int, name: str, interaction: bool = True, keep_model: bool = False) -> tuple:
    """One GMAN variant on replicate ``rep``: its test metrics row (and the trained model when ``keep_model``).
    Seeds: the initialisation, the batches, the epoch order and the dropout masks each from their own named stream,
    so the result does not depend on what ran before or in which process."""
    tr, va, te, norm, pos_w = _prepare(cfg, rep, interaction)
    subsets, groups = variants(len(tr.markers))[name]
    gen = cfg.torch_generator(f"init{rep}-{name}")
    model = GMAN(len(tr.markers), subsets, groups, hidden=cfg.hidden, generator=gen)
    torch.manual_seed(cfg.seed * 1000 + rep)  # dropout masks
    batches = make_batches(tr, norm, cfg.batch, cfg.rng(f"batches{rep}"), "per_graph")
    hist = train(model, batches, collate_chunks(va, norm), epochs=cfg.epochs, lr=cfg.lr, pos_weight=pos_w,
                 rng=cfg.rng(f"order{rep}-{name}"))
    row = {"rep": rep, "method": name, **evaluate(model, collate_chunks(te, norm)), "steps": hist["steps"],
           "best_epoch": hist["best_epoch"]}
    return row, (model if keep_model else None)


def summary_rows(cfg, rep: int) -> list:
    """LR and HGB on the summary features of replicate ``rep``, each tuned on the validation split."""
    tr, va, te, _, _ = _prepare(cfg, rep)
    X = [summary_features(x) for x in (tr, va, te)]
    return [{"rep": rep, "method": f"{name}-summary", **metrics(te.y, p), "params": str(params)}
            for name, (p, params, _) in fit_summary_baselines(X[0], tr.y, X[1], va.y, X[2], seed=cfg.seed).items()]


def grud_row(cfg, rep: int) -> dict:
    tr, va, te, norm, pos_w = _prepare(cfg, rep)
    return {"rep": rep, "method": "GRU-D-lite", **run_grud(cfg, rep, tr, va, te, norm, pos_w)}


def _job(job):
    """One independent piece of work (a picklable top-level function, so that worker processes can run it)."""
    kind, cfg, args = job
    with limit_threads(1):
        return {"gman": train_variant, "summary": summary_rows, "grud": grud_row,
                "cascade-gman": cascade_gman_row, "cascade-gin": cascade_gin_row}[kind](cfg, *args)


def run_jobs(cfg, jobs: list, desc: str = "") -> list:
    """``[_job(j) for j in jobs]``, in ``cfg.workers`` worker processes when ``cfg.workers > 1``.

    Every job rebuilds its data and seeds its own generators from ``cfg`` and its arguments, so the results do not
    depend on ``workers`` (a unit test checks it). The workers are forked from a fresh server process that imported
    this module once (``forkserver``: no fork of a kernel that holds threads and sockets)."""
    items = [(kind, cfg, args) for kind, args in jobs]
    return list(map_jobs(_job, items, cfg.workers, preload=[__name__], desc=desc))


def run_seed(cfg, rep: int, names=None, interaction: bool = True) -> tuple[list, dict]:
    """Train every variant (or ``names``) and the baselines on replicate ``rep``; rows of test metrics + models."""
    return run_replicates(cfg, [rep], names, interaction)


def run_replicates(cfg, reps, names=None, interaction: bool = True) -> tuple[list, dict]:
    """Every variant (or ``names``) and, unless ``names`` is given, the baselines on the replicates ``reps``, as
    independent jobs (:func:`run_jobs`). Returns the rows (per replicate: variants, LR, HGB, GRU-D-lite) and the
    first replicate's models, test batch, test samples and standardisation."""
    jobs, first = [], reps[0]
    for rep in reps:
        for name in variants(3):  # the names (the same for any number of markers)
            if names is None or name in names:
                jobs.append(("gman", (rep, name, interaction, rep == first)))
        if names is None:
            jobs.append(("summary", (rep,)))
            if cfg.grud:
                jobs.append(("grud", (rep,)))
    out = run_jobs(cfg, jobs, desc="training")
    rows, models = [], {}
    for (kind, args), res in zip(jobs, out):
        if kind == "gman":
            rows.append(res[0])
            if res[1] is not None:
                models[args[1]] = res[1]
        elif kind == "summary":
            rows += res
        else:
            rows.append(res)
    _, _, te, norm, _ = _prepare(cfg, first, interaction)
    return rows, {"models": models, "test": collate(te, norm), "test_samples": te, "norm": norm}


def run_grud(cfg, rep, tr, va, te, norm, pos_w) -> dict:
    """The GRU-D-lite baseline on a regular carried-forward grid (one cell per week for the 365-day records, so 53
    GRU steps; one per hour for PhysioNet's 48 h), GMAN's budget (epochs, batch size, loop)."""
    step = 7.0 if cfg.data_path is None else 1.0
    n_steps = int(np.ceil(tr.window / step))
    perm = cfg.rng(f"grud-batches{rep}").permutation(tr.n)
    batches = [grid_batch(tr.take(perm[k:k + cfg.batch]), norm, n_steps, step) for k in range(0, tr.n, cfg.batch)]
    m = len(tr.markers)
    return fit_nn_baseline(lambda g: GRUDLite(m, tr.static.shape[1], hidden=cfg.hidden, generator=g), batches,
                           grid_batch(va, norm, n_steps, step), grid_batch(te, norm, n_steps, step), epochs=cfg.epochs,
                           pos_weight=pos_w, seed_fn=lambda k: cfg.torch_generator(f"grud{rep}-{k}"),
                           rng_fn=lambda k: cfg.rng(f"grud-order{rep}-{k}"))


def _cascade_data(cfg, rep: int, n: int):
    rng = cfg.rng(f"cascades{rep}")
    s = make_cascades(n, rng=rng)
    tr, va, te = (s.take(i) for i in train_val_test(s.n, rng=rng))
    return tr, va, te, float((1 - tr.y.mean()) / max(tr.y.mean(), 1e-6))


def cascade_gman_row(cfg, rep: int, n: int, epochs: int) -> dict:
    """GMAN on replicate ``rep`` of the cascades: the root and the rest as two singleton subsets, univariate
    feature groups, Δt in hours."""
    tr, va, te, pos_w = _cascade_data(cfg, rep, n)
    F = CASCADE_EMB + 2
    norm = Norm.fit(tr, 1.0)
    gen = cfg.torch_generator(f"cascade-init{rep}")
    model = GMAN(2, [[0], [1]], (1,) * F, hidden=cfg.hidden, generator=gen, n_features=F)
    torch.manual_seed(cfg.seed * 1000 + 500 + rep)
    batches = make_batches(tr, norm, cfg.batch, cfg.rng(f"cascade-batches{rep}"), "per_graph")
    hist = train(model, batches, collate_chunks(va, norm), epochs=epochs, lr=cfg.lr, pos_weight=pos_w,
                 rng=cfg.rng(f"cascade-order{rep}"))
    return {"rep": rep, "method": "GMAN", **evaluate(model, collate_chunks(te, norm)), "steps": hist["steps"]}


def cascade_gin_row(cfg, rep: int, n: int, epochs: int) -> dict:
    """The GIN on replicate ``rep`` of the cascades, its learning rate chosen on the validation split."""
    tr, va, te, pos_w = _cascade_data(cfg, rep, n)
    F = CASCADE_EMB + 2
    perm = cfg.rng(f"gin-batches{rep}").permutation(tr.n)
    gb = [gin_batch(tr.take(perm[k:k + cfg.batch])) for k in range(0, tr.n, cfg.batch)]
    return {"rep": rep, "method": "GIN", **fit_nn_baseline(
        lambda g: GIN(F, hidden=cfg.hidden, generator=g), gb, gin_batch(va), gin_batch(te), epochs=epochs,
        pos_weight=pos_w, seed_fn=lambda k: cfg.torch_generator(f"gin{rep}-{k}"),
        rng_fn=lambda k: cfg.rng(f"gin-order{rep}-{k}"))}


def run_cascades(cfg, n: int | None = None, n_seeds: int | None = None, epochs: int | None = None) -> pd.DataFrame:
    """Figure 6: GMAN (root and rest as two singleton subsets, univariate feature groups) against a GIN on the
    synthetic cascades, ``n_seeds`` replicates; the GIN's learning rate is chosen on the validation split."""
    n, n_seeds, epochs = n or cfg.n_cascades, n_seeds or cfg.n_seeds, epochs or cfg.epochs
    jobs = [(kind, (rep, n, epochs)) for rep in range(n_seeds) for kind in ("cascade-gman", "cascade-gin")]
    return pd.DataFrame(run_jobs(cfg, jobs, desc="cascades"))


def run_main(cfg) -> tuple[pd.DataFrame, dict]:
    """Figures 1-2: every method on ``cfg.n_seeds`` replicates. Returns the metrics and replicate 0's models."""
    rows, first = run_replicates(cfg, list(range(cfg.n_seeds)))
    return pd.DataFrame(rows), first


def run_interaction_off(cfg) -> pd.DataFrame:
    """C3's control: singletons against {B,C} grouped with the XOR term removed from the label."""
    rows, _ = run_replicates(cfg, list(range(cfg.n_seeds)), names=("GMAN singletons", "GMAN {B,C} grouped"),
                             interaction=False)
    return pd.DataFrame(rows)


def summary(results: pd.DataFrame) -> pd.DataFrame:
    return results.groupby("method", sort=False)[["auroc", "auprc", "ece"]].agg(["mean", "std"]).round(3)


def accuracy_checks(results: pd.DataFrame, method: str = "GMAN {B,C} grouped") -> dict:
    mean = results.groupby("method")["auroc"].mean()
    nn_base = {k: float(mean[k]) for k in ("GRU-D-lite",) if k in mean}
    best_base = max(mean["LR-summary"], mean["HGB-summary"])
    piv = results.pivot(index="rep", columns="method", values="auroc")
    diff = piv["GMAN {B,C} grouped"] - piv["GMAN singletons"]
    half = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.nan
    return {"gman": float(mean[method]), "best_baseline": float(best_base), "margin": float(mean[method] - best_base),
            "group_lift": float(diff.mean()), "group_lift_ci": (float(diff.mean() - half), float(diff.mean() + half)),
            "nn_baselines": nn_base}


def node_timeline(objs, cfg, marker: int = 0) -> dict:
    """Figure 3: marker A's node contributions of the test positives against days before the window's end."""
    model, te = objs["models"]["GMAN {B,C} grouped"], objs["test_samples"]
    c = contributions(model, objs["test"])["node"]
    sel = (te.marker == marker) & (te.y[te.sample] == 1)
    before = te.window - te.t[sel]
    a = np.abs(c[sel])
    inside = before <= cfg.tau
    edges = np.linspace(0, te.window, 13)
    k = np.clip(np.digitize(before, edges) - 1, 0, len(edges) - 2)
    curve = np.bincount(k, a, len(edges) - 1) / np.maximum(np.bincount(k, minlength=len(edges) - 1), 1)
    pos_ids = np.unique(te.sample[sel])[:4]
    examples = {int(p): (te.t[sel][te.sample[sel] == p], c[sel][te.sample[sel] == p]) for p in pos_ids}
    ratio = float(a[inside].mean() / max(a[~inside].mean(), 1e-12)) if inside.any() and (~inside).any() else np.nan
    return {"before": before, "abs": a, "edges": edges, "curve": curve, "ratio": ratio, "examples": examples,
            "window": te.window, "tau": cfg.tau, "argmax_in_window": bool(edges[np.argmax(curve)] < cfg.tau)}


def shapes(objs, cfg) -> dict:
    model = objs["models"]["GMAN {B,C} grouped"]
    vgrid = np.linspace(-3, 3, 121)
    dt = np.linspace(0, 180 if cfg.data_path is None else 48, 121)
    return {"vgrid": vgrid, "f": shape_functions(model, vgrid, 0.0), "f_early": shape_functions(model, vgrid, 0.5),
            "dt": dt,
            "rho": distance_function(model, dt, objs["norm"].time_unit), "markers": objs["test_samples"].markers}


def additivity_gap(objs) -> float:
    """Sanity: max |sum of a singleton graph's sender contributions - its graph contribution| (exact by design)."""
    model, b = objs["models"]["GMAN {B,C} grouped"], objs["test"]
    c = contributions(model, b)
    m = model.m
    per_graph = np.bincount(b["gid"].numpy(), c["node"], b["n_samples"] * m).reshape(-1, m)
    single = [S[0] for S in model.subsets if len(S) == 1]
    gap = np.abs(per_graph[:, single] - c["graph"][:, single]).max()
    logit_gap = np.abs(c["subset"].sum(1) + float(model.bias.detach()) - c["logit"]).max()
    return float(max(gap, logit_gap))


def importance(objs) -> dict:
    from scipy.stats import spearmanr

    model, te = objs["models"]["GMAN {B,C} grouped"], objs["test_samples"]
    imp = marker_importance(model, contributions(model, objs["test"]))
    rel = te.meta.get("relevance", np.zeros(len(imp)))
    top3 = set(np.argsort(-imp, kind="stable")[:3].tolist())
    rho = float(spearmanr(imp, rel).statistic) if rel.std() > 0 else np.nan
    return {"importance": imp, "relevance": rel, "markers": te.markers, "spearman": rho,
            "top3_ok": bool(0 in top3 and (1 in top3 or 2 in top3)), "top3": sorted(top3)}
