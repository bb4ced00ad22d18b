"""The notebook's experiments: the problem settings, the gamma0 tuning, one vectorised run per setting, and the
numbers behind each figure and claim. Every function returns plain results (dicts, DataFrames, arrays)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from lib.common import heavy_tails as H
from lib.common import limit_threads

from . import problems as P
from .solver import clipped_method, rate_exponent

TAILS = {2.0: 2.001, 1.5: 1.55}  # Pareto tail index used for "alpha": the paper's 2.001 for alpha = 2; 1.55 for 1.5
GRID = (0.03, 0.1, 0.3, 1.0, 3.0)  # gamma0 grid, tuned once per setting for the last iterate of Clipped-SGD
DELTAS = (0.5, 0.1, 0.01, 0.001)  # Figure 6
OUTPUTS = {"last": "last iterate $x_K$", "uniform": r"uniform average $\bar x_K$",
           "gamma": r"$\gamma$-weighted average"}


@dataclass
class Setting:
    """One problem with its noise: ``oracle``/``draw`` feed the runner, ``alpha`` sets beta and the tail."""

    key: str
    title: str
    problem: Any
    alpha: float
    tail: float
    oracle: Callable
    draw: Callable


def settings(cfg) -> dict:
    """The six settings: P1, P2, P3 (the paper's Exps. 1-3 at alpha = 2), P2 at alpha = 1.5, and P4 at both alphas.
    Problem data (a, start directions, the P3 pool) come from the stream ``problems``."""
    rng = cfg.rng("problems")
    p1 = P.make_p1(rng, d=cfg.d)
    p2 = P.make_p2(rng, d=cfg.d)
    p3 = P.make_p3(rng, d=cfg.d_p3, n_pool=cfg.n_pool)
    p4 = P.make_p4(d=cfg.d_p4)
    out = {}
    for key, prob, alpha in (("P1", p1, 2.0), ("P2", p2, 2.0), ("P2a15", p2, 1.5), ("P4", p4, 2.0),
                             ("P4a15", p4, 1.5)):
        noise = P.AdditiveNoise(prob, TAILS[alpha], cfg.noise_scale)
        title = f"{prob.name}, Pareto tail {TAILS[alpha]} ($\\alpha$ = {alpha:g})"
        out[key] = Setting(key, title, prob, alpha, TAILS[alpha], noise.oracle, noise.draw)
    out["P3"] = Setting("P3", f"{p3.name}, Student-t(2.001) features", p3, 2.0, 2.001, p3.oracle, p3.draw)
    return {k: out[k] for k in ("P1", "P2", "P3", "P2a15", "P4", "P4a15")}


def describe(sets: dict) -> pd.DataFrame:
    rows = [{"setting": s.key, "problem": s.problem.name, "d": s.problem.d, "alpha": s.alpha, "tail": s.tail,
             "L": s.problem.L, "R0": s.problem.R0, "f(x0) - f*": float(s.problem.gap(s.problem.x0))}
            for s in sets.values()]
    return pd.DataFrame(rows).set_index("setting")


def _name(clip: bool, g0: float, delta=None) -> str:
    base = f"{'clipped' if clip else 'unclipped'} g0={g0:g}"
    return base if delta is None else f"{base} delta={delta:g}"


def _method(s: Setting, cfg, g0, clip=True, delta=None, name=None, average=None):
    """Averages are tracked for the clipped method at the base delta only (the baselines of Figures 1-3)."""
    average = (clip and delta is None and name is None) if average is None else average
    return clipped_method(name or _name(clip, g0, delta), s.alpha, s.problem, cfg.delta if delta is None else delta,
                          g0, cfg.K, cfg.clip_const, cfg.log_power, clip=clip, average=average)


@limit_threads(1)
def _run(s: Setting, methods, R, rng, checkpoints):
    return H.run_clipped_sgd(s.oracle, s.draw, s.problem.x0, methods, R, rng, checkpoints=checkpoints,
                             value=s.problem.gap)


def tune(s: Setting, cfg) -> dict:
    """Clipped and unclipped SGD for every gamma0 of ``GRID`` on ``cfg.R_tune`` tuning runs (stream ``tune/<key>``,
    apart from the claim runs). ``shared``: the gamma0 whose *clipped last iterate* has the smallest q95 at K (the
    paper's protocol: every output and baseline then uses it); ``own``: each output's own best gamma0 (the fair
    variant). ``cfg.gamma0`` set: no grid, that gamma0 for every output and method (one short run fills the table)."""
    grid = GRID if cfg.gamma0 is None else (cfg.gamma0,)
    methods = [_method(s, cfg, g, clip) for clip in (True, False) for g in grid]
    res = _run(s, methods, cfg.R_tune if len(grid) > 1 else 2, cfg.rng(f"tune/{s.key}"), [cfg.K])
    rows = []
    for clip in (True, False):
        for g in grid:
            for out in (("last", "uniform", "gamma") if clip else ("last",)):
                v = res.at(_name(clip, g), out)
                rows.append({"method": "clipped" if clip else "unclipped", "output": out, "gamma0": g,
                             "q95": float(np.quantile(v, 0.95)), "mean": float(np.mean(v))})
    table = pd.DataFrame(rows)
    best = table.loc[table.groupby(["method", "output"])["q95"].idxmin()].set_index(["method", "output"])["gamma0"]
    return {"shared": float(best[("clipped", "last")]), "own": {k: float(v) for k, v in best.items()},
            "table": table}


@dataclass
class SettingRun:
    """The claim run of one setting: the result of the runner and the gamma0 choices behind it."""

    setting: Setting
    tuned: dict
    result: H.RunResult
    extra: dict = field(default_factory=dict)

    @property
    def g0(self) -> float:
        return self.tuned["shared"]

    def values(self, clip=True, output="last", g0=None, delta=None):
        return self.result.values[_name(clip, self.g0 if g0 is None else g0, delta)][output]

    def final(self, clip=True, output="last", g0=None, delta=None):
        return self.values(clip, output, g0, delta)[-1]

    def own(self, clip, output):
        return self.tuned["own"][("clipped" if clip else "unclipped", output)]


def run_setting(s: Setting, cfg, tuned: dict, deltas=(), horizons=()) -> SettingRun:
    """R = ``cfg.R`` claim runs (stream ``run/<key>``) of: clipped and unclipped SGD at the shared gamma0 and at every
    output's own gamma0 (fair variant); optionally clipped SGD at other deltas (Figure 6) and with delta = 1/K_j^3 for
    each horizon K_j (claim C5). All methods see the same noise draws."""
    own = tuned["own"]
    wanted = [(True, tuned["shared"]), (False, tuned["shared"]), (True, own[("clipped", "uniform")]),
              (True, own[("clipped", "gamma")]), (False, own[("unclipped", "last")])]
    methods = [_method(s, cfg, g, clip) for clip, g in dict.fromkeys(wanted)]
    methods.sort(key=lambda m: not m.average)  # the averaged methods as one block: a view, no copy per step
    extra = {"deltas": [], "horizons": []}
    for dl in deltas:
        if dl != cfg.delta:
            methods.append(_method(s, cfg, tuned["shared"], True, delta=dl))
        extra["deltas"].append(dl)
    for Kj in horizons:
        methods.append(_method(s, cfg, tuned["shared"], True, delta=float(Kj) ** -3, name=f"horizon K={Kj}"))
        extra["horizons"].append(int(Kj))
    ckpts = np.union1d(H.log_checkpoints(cfg.K, cfg.n_checkpoints), np.asarray(horizons, dtype=int))
    res = _run(s, methods, cfg.R, cfg.rng(f"run/{s.key}"), ckpts)
    return SettingRun(s, tuned, res, extra)


def run_all(cfg, sets: dict) -> dict:
    """Tune and run every setting (P4 at alpha = 2 also carries Figure 6's deltas; both P4s carry C5's horizons)."""
    runs = {}
    for key, s in sets.items():
        tuned = tune(s, cfg)
        deltas = DELTAS if key == "P4" else ()
        horizons = cfg.horizons if key.startswith("P4") else ()
        runs[key] = run_setting(s, cfg, tuned, deltas=deltas, horizons=horizons)
    return runs


def tuning_table(runs: dict) -> pd.DataFrame:
    rows = []
    for key, r in runs.items():
        row = {"setting": key, "shared gamma0 (clipped, last)": r.g0}
        for (m, o), g in r.tuned["own"].items():
            row[f"own: {m}, {o}"] = g
        rows.append(row)
    return pd.DataFrame(rows).set_index("setting")


# --------------------------------------------------------------------------------------------------------------
# Figures 1-3 and claim C1: last vs average iterate
# --------------------------------------------------------------------------------------------------------------
def curves(r: SettingRun) -> pd.DataFrame:
    """Long table of summaries over runs (mean, sd, median, q95, max) per checkpoint for the clipped outputs and the
    unclipped last iterate, at the shared gamma0."""
    parts = []
    for clip, outs in ((True, ("last", "uniform", "gamma")), (False, ("last",))):
        for o in outs:
            df = H.quantile_curves(r.values(clip, o), r.result.checkpoints)
            df["series"] = ("Clipped-SGD, " if clip else "SGD (unclipped), ") + OUTPUTS[o]
            df["clip"], df["output"] = clip, o
            parts.append(df)
    return pd.concat(parts, ignore_index=True)


def last_vs_average(runs: dict, keys=("P1", "P2", "P3")) -> pd.DataFrame:
    """At K: q95 and mean of the clipped last iterate against each average, under the paper's protocol (shared
    gamma0) and with each average at its own tuned gamma0. Ratios last / average (<= 1: the last iterate wins)."""
    rows = []
    for key in keys:
        r = runs[key]
        last = r.final(True, "last")
        for o in ("uniform", "gamma"):
            for protocol, g in (("shared gamma0 (paper)", r.g0), ("own gamma0 (fair)", r.own(True, o))):
                avg = r.final(True, o, g0=g)
                rows.append({"setting": key, "average": o, "protocol": protocol, "gamma0 of average": g,
                             "q95 last": np.quantile(last, 0.95), "q95 average": np.quantile(avg, 0.95),
                             "mean last": last.mean(), "mean average": avg.mean(),
                             "q95 ratio": np.quantile(last, 0.95) / np.quantile(avg, 0.95),
                             "mean ratio": last.mean() / avg.mean()})
    return pd.DataFrame(rows)


def claim1(table: pd.DataFrame) -> float:
    """Worst ratio last/average (q95 and mean) over P1-P3 and both averages, paper protocol."""
    t = table[table["protocol"].str.startswith("shared")]
    return float(max(t["q95 ratio"].max(), t["mean ratio"].max()))


# --------------------------------------------------------------------------------------------------------------
# Figure 4 and claim C2: the rate on P4
# --------------------------------------------------------------------------------------------------------------
def rate_table(runs: dict, kmin: int) -> pd.DataFrame:
    """Fitted log-log slopes of q95 (and of the mean) of the last-iterate gap over K in [kmin, K], clipped and
    unclipped (shared gamma0), against Theorem 1's exponent."""
    rows = []
    for key in ("P4", "P4a15"):
        r = runs[key]
        k = r.result.checkpoints
        for clip in (True, False):
            v = r.values(clip, "last")
            rows.append({"setting": key, "alpha": r.setting.alpha, "method": "Clipped-SGD" if clip else "SGD",
                         "predicted": -rate_exponent(r.setting.alpha),
                         "slope q95": H.fit_loglog_slope(k, np.quantile(v, 0.95, axis=1), kmin=kmin)[0],
                         "slope mean": H.fit_loglog_slope(k, v.mean(axis=1), kmin=kmin)[0]})
    return pd.DataFrame(rows)


def claim2(table: pd.DataFrame) -> float:
    """Worst (largest) excess of the clipped q95 slope over the prediction, over alpha in {2, 1.5}."""
    t = table[table["method"] == "Clipped-SGD"]
    return float((t["slope q95"] - t["predicted"]).max())


# --------------------------------------------------------------------------------------------------------------
# Figure 5 and claim C3: clipping tames the heavy tail
# --------------------------------------------------------------------------------------------------------------
def tails_table(runs: dict, keys=("P2a15", "P4a15")) -> pd.DataFrame:
    """Final last-iterate gaps at alpha = 1.5: q95 and max over runs, unclipped / clipped, at the shared gamma0 (the
    paper's protocol) and with the unclipped SGD at its own tuned gamma0 (fair variant)."""
    rows = []
    for key in keys:
        r = runs[key]
        c = r.final(True, "last")
        for protocol, g in (("shared gamma0 (paper)", r.g0), ("own gamma0 (fair)", r.own(False, "last"))):
            u = r.final(False, "last", g0=g)
            rows.append({"setting": key, "protocol": protocol, "gamma0 unclipped": g,
                         "q95 clipped": np.quantile(c, 0.95), "q95 unclipped": np.quantile(u, 0.95),
                         "max clipped": c.max(), "max unclipped": u.max(),
                         "q95 ratio": np.quantile(u, 0.95) / np.quantile(c, 0.95), "max ratio": u.max() / c.max()})
    return pd.DataFrame(rows)


def claim3(table: pd.DataFrame) -> float:
    """min over P2, P4 of min(q95 ratio / 2, max ratio / 5) under the paper protocol: >= 1 when both gains hold."""
    t = table[table["protocol"].str.startswith("shared")]
    return float(np.minimum(t["q95 ratio"] / 2.0, t["max ratio"] / 5.0).min())


def final_gaps(runs: dict, keys=("P4a15", "P2a15")) -> dict:
    """Figure 5's samples: final gaps of the clipped and unclipped last iterates (shared and own gamma0)."""
    out = {}
    for key in keys:
        r = runs[key]
        out[key] = {"title": r.setting.title, "Clipped-SGD": r.final(True, "last"),
                    "SGD, same $\\gamma_k$": r.final(False, "last"),
                    "SGD, own tuned $\\gamma_0$": r.final(False, "last", g0=r.own(False, "last"))}
    return out


# --------------------------------------------------------------------------------------------------------------
# Figure 6 and claim C4: the delta dependence
# --------------------------------------------------------------------------------------------------------------
def delta_table(r: SettingRun, base_delta: float) -> pd.DataFrame:
    rows = []
    for dl in r.extra["deltas"]:
        v = r.final(True, "last", delta=None if dl == base_delta else dl)
        rows.append({"delta": dl, "ln(1/delta)": np.log(1 / dl), "q95": np.quantile(v, 0.95), "mean": v.mean(),
                     "median": np.median(v)})
    return pd.DataFrame(rows).sort_values("delta", ascending=False, ignore_index=True)


def claim4(table: pd.DataFrame) -> tuple[float, bool]:
    """q95(delta = 1e-3) / q95(delta = 0.1), and whether q95 is monotone in delta over the whole sweep."""
    q = table.set_index("delta")["q95"]
    diffs = np.diff(table["q95"].to_numpy())
    return float(q[0.001] / q[0.1]), bool(np.all(diffs >= 0) or np.all(diffs <= 0))


# --------------------------------------------------------------------------------------------------------------
# claim C5: in expectation, delta = 1 / K^3
# --------------------------------------------------------------------------------------------------------------
def expectation_table(runs: dict) -> pd.DataFrame:
    rows = []
    for key in ("P4", "P4a15"):
        r = runs[key]
        ks = r.extra["horizons"]
        means = [float(r.result.at(f"horizon K={Kj}", "last", Kj).mean()) for Kj in ks]
        slope = H.fit_loglog_slope(ks, means)[0] if len(ks) >= 2 else float("nan")
        for Kj, m in zip(ks, means):
            rows.append({"setting": key, "alpha": r.setting.alpha, "K": Kj, "delta": float(Kj) ** -3,
                         "mean gap": m, "fitted slope": slope, "predicted": -rate_exponent(r.setting.alpha)})
    return pd.DataFrame(rows)


def claim5(table: pd.DataFrame) -> float:
    t = table.groupby("setting").first()
    return float((t["fitted slope"] - t["predicted"]).max())
