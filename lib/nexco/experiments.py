"""The notebook's experiments: each returns plain results (DataFrames, dataclasses)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common import limit_threads

from .data import MISSet, TSPSet, load_mis, load_tsp
from .decode import DecodeResult, decode_mis, decode_tsp
from .diffusion import TrainResult, train_denoiser
from .solvers import mis_cpsat, mis_greedy, tsp_greedy_edge, two_opt
from .instances import tour_length

# Model names: the NEXCO denoiser and its ablation twins.
MODEL_LABELS = {
    "nexco": "time-agnostic denoiser (NEXCO)",
    "twin": "time-conditioned twin",
    "iid": "time-agnostic, i.i.d. masking (option A)",
    "gpnet": "one-shot heatmap net (GP)",
}
MODEL_SPECS = {  # masking mode, time conditioning
    "nexco": (None, False),  # None: cfg.masking
    "twin": (None, True),
    "iid": ("iid", False),
    "gpnet": ("full", False),
}


def drop_pct(obj, opt, sense: str = "max") -> np.ndarray:
    """Optimality drop in % per instance: (opt - obj) / opt for maximisation, (obj - opt) / opt for minimisation."""
    obj, opt = np.asarray(obj, float), np.asarray(opt, float)
    return 100.0 * ((opt - obj) if sense == "max" else (obj - opt)) / opt


def ci95(x) -> float:
    x = np.asarray(x, float)
    return float(1.96 * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


# --- data and models -------------------------------------------------------------------------------------------
@dataclass
class MISData:
    train: MISSet
    test: MISSet


def test_subset(cfg, total: int) -> np.ndarray:
    """Indices of the test graphs a run uses: all ``total`` when ``cfg.n_test`` asks for them (full mode), else a
    seeded random ``cfg.n_test`` of them, in order (quick mode: a different half of the shipped graphs per seed)."""
    if cfg.n_test >= total:
        return np.arange(total)
    return np.sort(cfg.rng("test-subset").choice(total, size=cfg.n_test, replace=False))


def load_data(cfg) -> MISData:
    """The MIS-ER50 training set and the run's ``cfg.n_test`` test graphs (:func:`test_subset`); with
    ``cfg.regenerate`` the test graphs are rebuilt by the data script, with fresh CP-SAT labels, and compared with
    the shipped file."""
    test = load_mis("mis_er50_test", regenerate=cfg.regenerate)
    train = load_mis("mis_er50_train", count=cfg.n_train)
    return MISData(train, test.subset(test_subset(cfg, len(test))))


def model_seed(cfg, name: str) -> int:
    """The training seed of model ``name`` in a run (derived from the notebook seed)."""
    return int(cfg.rng(f"train-{name}").integers(2**31))  # = checkpoints.recipe_seeds() for seed 0


def train_one(cfg, train: MISSet, name: str, steps_run: int | None = None) -> TrainResult:
    """Train model ``name`` (see ``MODEL_SPECS``) with the run's recipe (``steps_run``: only a prefix of it)."""
    mode, tc = MODEL_SPECS[name]
    return train_denoiser(train.train_data(), mode=mode or cfg.masking, time_cond=tc, hidden=cfg.hidden,
                          layers=cfg.layers, steps=cfg.train_steps, batch_size=cfg.batch_size, lr=cfg.lr,
                          seed=model_seed(cfg, name), stop_after=steps_run)


def train_models(cfg, data: MISData, which=None) -> dict:
    """The denoisers named in ``which`` (default ``cfg.models``): read from the shipped checkpoint when
    ``cfg.pretrained`` (quick mode's defaults, see :mod:`lib.nexco.checkpoints`), else trained here for
    ``cfg.train_steps`` steps each."""
    which = cfg.models if which is None else which
    if cfg.pretrained:
        from .checkpoints import load

        shipped = load(cfg)
        return {name: shipped[name] for name in which}
    return {name: train_one(cfg, data.train, name) for name in which}


def training_table(models: dict) -> pd.DataFrame:
    rows = [{"model": MODEL_LABELS[k], "parameters": r.model.n_params(), "steps": r.steps,
             "source": "shipped checkpoint" if r.loaded else "trained in this run",
             "training seconds": round(r.seconds, 1), "first loss": round(float(np.mean(r.losses[:20])), 3),
             "final loss": round(float(np.mean(r.losses[-50:])), 3)} for k, r in models.items()]
    return pd.DataFrame(rows).set_index("model")


# --- Figure 1: the MIS benchmark -------------------------------------------------------------------------------
@dataclass
class Benchmark:
    table: pd.DataFrame  # one row per decoder
    results: dict = field(default_factory=dict)  # decoder -> DecodeResult (model decoders)
    drops: dict = field(default_factory=dict)  # decoder -> per-instance drop (%)
    n: int = 0  # variables per instance
    matched_rounds: int = 0
    budget_s: float = 0.0  # CP-SAT's per-instance time limit (NEXCO's CPU time per instance)
    opt: np.ndarray | None = None


def _row(name, family, drops, calls, cpu_ms, feasible, objective, latency_ms=float("nan")):
    calls = np.asarray(calls, float)
    return {"decoder": name, "family": family, "drop %": float(np.mean(drops)), "drop CI95": ci95(drops),
            "mean calls": float(calls.mean()), "calls CV": float(calls.std() / calls.mean()) if calls.mean() else 0.0,
            "CPU ms / instance": cpu_ms, "latency ms": latency_ms, "feasible states %": feasible,
            "mean objective": float(np.mean(objective))}


def latency_ms(net, test: MISSet, decoders: dict, count: int, repeats: int = 3) -> dict:
    """CPU time (ms) to decode one instance alone (batch size 1), for several decoders measured *interleaved*.

    ``decoders`` maps a name to ``(rule, kwargs)``. For each of the first ``count`` test graphs and each of
    ``repeats`` rounds, every decoder decodes the graph once, in an order rotated between rounds; a decoder's latency
    on a graph is its fastest run (the minimum filters out interference from other processes), and the result is the
    mean over graphs. Interleaving makes the decoders share whatever the machine is doing at the time, so their
    *ratio* is stable on a loaded machine even when the absolute times drift.
    """
    count = min(count, len(test))
    names = list(decoders)
    best = {k: np.full(count, np.inf) for k in names}
    with limit_threads(1):  # set once: thread-pool calls are not part of decoding
        for g in range(count):
            b = test.batch([g])
            for rep in range(repeats):
                for k in names[rep % len(names):] + names[:rep % len(names)]:
                    rule, kw = decoders[k]
                    c0 = time.process_time()
                    decode_mis(net, b, rule, threads=None, **kw)
                    best[k][g] = min(best[k][g], time.process_time() - c0)
    return {k: 1000 * float(v.mean()) for k, v in best.items()}


def mis_benchmark(cfg, data: MISData, models: dict, model: str = "nexco") -> Benchmark:
    """Every decoder on the same trained denoiser, plus the classical references, on the test graphs."""
    test = data.test
    batch = test.batch()
    net = models[model].model
    n = int(test.adjs[0].shape[0])
    bench = Benchmark(pd.DataFrame(), n=n, opt=test.opt)
    rows = []

    timed = {}  # decoders whose batch-size-1 latency is measured (interleaved, after the batched runs)

    def run(name, family, rule, latency=False, **kw):
        r = decode_mis(net, batch, rule, kmin_frac=cfg.kmin_frac, **kw)
        d = drop_pct(r.objective, test.opt)
        bench.results[name], bench.drops[name] = r, d
        if latency:
            timed[name] = (rule, dict(kmin_frac=cfg.kmin_frac, **kw))
        rows.append(_row(name, family, d, r.calls, 1000 * r.cpu_seconds / len(test),
                         100 * (1 - r.states_infeasible / r.states_checked), r.objective))
        return r

    run("GP: one call + greedy", "GP", "gp", latency=True)
    run("LC: one variable per call", "LC", "lc", latency=True)
    ada = run(f"NEXCO adaptive (tau={cfg.tau:g})", "NEXCO", "adaptive", latency=True, tau=cfg.tau)
    bench.matched_rounds = max(1, int(round(ada.calls.mean())))
    for D in sorted(set(cfg.schedule_rounds) | {bench.matched_rounds}):
        tag = " (matched)" if D == bench.matched_rounds else ""
        run(f"schedule-bound D={D}{tag}", "schedule", "schedule", latency=bool(tag), rounds=D)
    lat = latency_ms(net, test, timed, cfg.n_latency)
    for row in rows:
        row["latency ms"] = lat.get(row["decoder"], float("nan"))
    if "gpnet" in models:
        r = decode_mis(models["gpnet"].model, batch, "gp")
        d = drop_pct(r.objective, test.opt)
        bench.results["GP net + greedy"], bench.drops["GP net + greedy"] = r, d
        rows.append(_row("GP net + greedy", "GP", d, r.calls, 1000 * r.cpu_seconds / len(test),
                         100 * (1 - r.states_infeasible / r.states_checked), r.objective))
    # classical references
    c0 = time.process_time()
    g = np.array([mis_greedy(a).sum() for a in test.adjs], float)
    d = drop_pct(g, test.opt)
    bench.drops["min-degree greedy"] = d
    ms = 1000 * (time.process_time() - c0) / len(test)
    rows.append(_row("min-degree greedy", "classical", d, np.zeros(len(g)), ms, 100.0, g, ms))
    bench.budget_s = ada.cpu_seconds / len(test)
    c0 = time.process_time()
    w0 = time.perf_counter()
    cs = np.array([mis_cpsat(a, time_limit=bench.budget_s)[1] for a in test.adjs], float)
    d = drop_pct(cs, test.opt)
    bench.drops["CP-SAT, same time"] = d
    ms = 1000 * (time.perf_counter() - w0) / len(test)
    rows.append(_row("CP-SAT, same time", "classical", d, np.zeros(len(cs)), ms, 100.0, cs, ms))
    rows.append(_row("CP-SAT optimum (reference)", "classical", np.zeros(len(test)), np.zeros(len(test)),
                     float("nan"), 100.0, test.opt))
    bench.table = pd.DataFrame(rows).set_index("decoder")
    return bench


def benchmark_view(bench: Benchmark) -> pd.DataFrame:
    t = bench.table.copy()
    t["drop %"] = [f"{m:.2f} ± {c:.2f}" for m, c in zip(t["drop %"], t["drop CI95"])]
    t = t.drop(columns=["drop CI95"])
    return t.round({"mean calls": 1, "calls CV": 2, "CPU ms / instance": 2, "latency ms": 2, "feasible states %": 1,
                    "mean objective": 2})


def claims_values(bench: Benchmark, tau: float) -> dict:
    """The numbers the ledger checks (Figures 1 and 2), and the descriptive timing ratios beside them."""
    t = bench.table
    ada = f"NEXCO adaptive (tau={tau:g})"
    gp, lc = "GP: one call + greedy", "LC: one variable per call"
    matched = next(i for i in t.index if i.endswith("(matched)"))
    paired = bench.drops[ada] - bench.drops[matched]  # per test graph, pp
    return {
        "drop_ratio_vs_gp": t.loc[ada, "drop %"] / t.loc[gp, "drop %"],
        "calls": t.loc[ada, "mean calls"],
        "calls_limit": bench.n / 4,
        "drop_gap_vs_lc": t.loc[ada, "drop %"] - t.loc[lc, "drop %"],
        "call_ratio_vs_lc": t.loc[lc, "mean calls"] / t.loc[ada, "mean calls"],
        "speedup_vs_lc": t.loc[lc, "latency ms"] / t.loc[ada, "latency ms"],
        "speedup_vs_lc_batched": t.loc[lc, "CPU ms / instance"] / t.loc[ada, "CPU ms / instance"],
        "calls_cv": t.loc[ada, "calls CV"],
        "matched_calls": t.loc[matched, "mean calls"],
        "drop_gap_vs_matched": float(paired.mean()),
        "drop_gap_vs_matched_ci": ci95(paired),
        "feasible_fraction": 1.0 - sum(r.states_infeasible for r in bench.results.values())
        / sum(r.states_checked for r in bench.results.values()),
        "states_checked": int(sum(r.states_checked for r in bench.results.values())),
    }


def time_agnostic_gap(abl: pd.DataFrame) -> float:
    """Drop of the time-agnostic denoiser minus the time-conditioned twin's (pp), adaptive decoding."""
    den = abl[abl.study == "denoiser"].set_index("variant")["drop %"]
    return float(den[MODEL_LABELS["nexco"]] - den[MODEL_LABELS["twin"]])


# --- Figure 2: adaptivity --------------------------------------------------------------------------------------
def adaptivity(bench: Benchmark, data: MISData, tau: float) -> pd.DataFrame:
    """Per test graph: adaptive calls, edges, optimum, and LC's calls."""
    ada = bench.results[f"NEXCO adaptive (tau={tau:g})"]
    lc = bench.results["LC: one variable per call"]
    return pd.DataFrame({"adaptive calls": ada.calls, "LC calls": lc.calls,
                         "edges": [int(a.sum() // 2) for a in data.test.adjs], "optimum": data.test.opt,
                         "adaptive drop %": bench.drops[f"NEXCO adaptive (tau={tau:g})"]})


# --- Figure 3: a trajectory ------------------------------------------------------------------------------------
@dataclass
class Trajectory:
    adj: np.ndarray
    states: list  # after each call (the first is all masked)
    shown: list  # indices of the four states drawn
    feasible: list
    calls: int
    opt: int


def trajectory(cfg, data: MISData, models: dict, bench: Benchmark) -> Trajectory:
    """The adaptive decode of one test graph (the first with the median number of calls), state by state."""
    from .instances import is_independent

    ada = bench.results[f"NEXCO adaptive (tau={cfg.tau:g})"]
    med = int(np.median(ada.calls))
    g = int(np.nonzero(ada.calls == med)[0][0]) if (ada.calls == med).any() else int(np.argmin(abs(ada.calls - med)))
    r = decode_mis(models["nexco"].model, data.test.batch([g]), "adaptive", tau=cfg.tau, kmin_frac=cfg.kmin_frac,
                   record=0, fill=False)
    states = r.trajectory + [r.solutions[0]]
    k = len(r.trajectory) - 1  # calls
    shown = sorted(set([1, max(1, round(k / 3)), max(1, round(2 * k / 3)), len(states) - 1]))
    while len(shown) < 4 and len(shown) < len(states):
        extra = [i for i in range(len(states)) if i not in shown]
        shown = sorted(shown + extra[:1])
    adj = data.test.adjs[g]
    return Trajectory(adj, states, shown, [is_independent(adj, s) for s in states], k, int(data.test.opt[g]))


# --- Figure 4: ablations ---------------------------------------------------------------------------------------
def ablations(cfg, data: MISData, models: dict, bench: Benchmark) -> pd.DataFrame:
    """Adaptive decoding with each trained denoiser, and the confidence threshold tau swept on NEXCO's."""
    batch = data.test.batch()
    rows = []
    for name, tr in models.items():
        if name == "gpnet":
            continue
        if name == "nexco":
            r = bench.results[f"NEXCO adaptive (tau={cfg.tau:g})"]
        else:
            r = decode_mis(tr.model, batch, "adaptive", tau=cfg.tau, kmin_frac=cfg.kmin_frac)
        d = drop_pct(r.objective, data.test.opt)
        rows.append({"study": "denoiser", "variant": MODEL_LABELS[name], "tau": cfg.tau, "drop %": d.mean(),
                     "drop CI95": ci95(d), "mean calls": r.calls.mean()})
    for tau in cfg.tau_grid:
        if abs(tau - cfg.tau) < 1e-12:
            r = bench.results[f"NEXCO adaptive (tau={cfg.tau:g})"]
        else:
            r = decode_mis(models["nexco"].model, batch, "adaptive", tau=tau, kmin_frac=cfg.kmin_frac)
        d = drop_pct(r.objective, data.test.opt)
        rows.append({"study": "threshold", "variant": f"tau = {tau:g}", "tau": tau, "drop %": d.mean(),
                     "drop CI95": ci95(d), "mean calls": r.calls.mean()})
    return pd.DataFrame(rows)


# --- Figure 5 (full mode): larger graphs and TSP ---------------------------------------------------------------
@dataclass
class ScaleStudy:
    table: pd.DataFrame
    train: dict = field(default_factory=dict)  # problem -> TrainResult


def _decode_rows(problem, net, batch, opt, sense, cfg, two_opt_variants=False, extra_refs=None):
    rows = []
    rules = [("GP: one call + greedy", "gp", {}), ("LC: one variable per call", "lc", {}),
             (f"NEXCO adaptive (tau={cfg.tau:g})", "adaptive", {"tau": cfg.tau})]
    rules += [(f"schedule-bound D={D}", "schedule", {"rounds": D}) for D in cfg.schedule_rounds]
    for name, rule, kw in rules:
        variants = [False, True] if two_opt_variants else [False]
        for t2 in variants:
            if problem == "mis":
                r = decode_mis(net, batch, rule, kmin_frac=cfg.kmin_frac, **kw)
            else:
                r = decode_tsp(net, batch, rule, kmin_frac=cfg.kmin_frac, two_opt_after=t2, **kw)
            d = drop_pct(r.objective, opt, sense)
            rows.append({"problem": problem, "decoder": name + (" + 2-opt" if t2 else ""), "drop %": d.mean(),
                         "drop CI95": ci95(d), "mean calls": r.calls.mean(),
                         "CPU ms / instance": 1000 * r.cpu_seconds / batch.n_graphs,
                         "feasible states %": 100 * (1 - r.states_infeasible / r.states_checked)})
    for name, obj, ms in (extra_refs or []):
        d = drop_pct(obj, opt, sense)
        rows.append({"problem": problem, "decoder": name, "drop %": d.mean(), "drop CI95": ci95(d),
                     "mean calls": 0.0, "CPU ms / instance": ms, "feasible states %": 100.0})
    return rows


def scale_study(cfg) -> ScaleStudy:
    """Full mode: MIS on ER-100 (denoiser trained on ER-75), TSP-20 and TSP-50 (each its own denoiser)."""
    out = ScaleStudy(pd.DataFrame())
    rows = []
    s = cfg.scale
    # MIS, larger graphs
    tr = load_mis("mis_er75_train")
    res = train_denoiser(tr.train_data(), mode=cfg.masking, hidden=cfg.hidden, layers=cfg.layers,
                         steps=s["mis_steps"], batch_size=cfg.batch_size, lr=cfg.lr,
                         seed=int(cfg.rng("train-er75").integers(2**31)))
    out.train["MIS ER-100 (trained on ER-75)"] = res
    te = load_mis("mis_er100_test")
    c0 = time.process_time()
    g = np.array([mis_greedy(a).sum() for a in te.adjs], float)
    refs = [("min-degree greedy", g, 1000 * (time.process_time() - c0) / len(te))]
    rows += [dict(r, problem="MIS ER-100") for r in
             _decode_rows("mis", res.model, te.batch(), te.opt, "max", cfg, extra_refs=refs)]
    # TSP
    for n, steps in ((20, s["tsp20_steps"]), (50, s["tsp50_steps"])):
        tr = load_tsp(f"tsp{n}_train", k=s["knn"])
        res = train_denoiser(tr.train_data(), mode=cfg.masking, hidden=s["tsp_hidden"], layers=s["tsp_layers"],
                             steps=steps, batch_size=cfg.batch_size, lr=cfg.lr,
                             seed=int(cfg.rng(f"train-tsp{n}").integers(2**31)))
        out.train[f"TSP-{n}"] = res
        te = load_tsp(f"tsp{n}_test", k=s["knn"])
        c0 = time.process_time()
        ge = [tsp_greedy_edge(P) for P in te.coords]
        ge_len = np.array([tour_length(t, P) for t, P in zip(ge, te.coords)])
        ms = 1000 * (time.process_time() - c0) / len(te)
        c0 = time.process_time()
        ge2 = np.array([tour_length(two_opt(t, P)[0], P) for t, P in zip(ge, te.coords)])
        ms2 = ms + 1000 * (time.process_time() - c0) / len(te)
        refs = [("greedy edge", ge_len, ms), ("greedy edge + 2-opt", ge2, ms2)]
        rows += [dict(r, problem=f"TSP-{n}") for r in
                 _decode_rows("tsp", res.model, te.batch(), te.length, "min", cfg, two_opt_variants=True,
                              extra_refs=refs)]
    out.table = pd.DataFrame(rows)
    return out
