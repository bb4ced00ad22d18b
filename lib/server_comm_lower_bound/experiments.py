"""The notebook's experiments, one function per figure; each returns plain results (DataFrames, dicts) and the
numbers its ledger checks read."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lib.common import limit_threads

from . import chain as C
from . import complexity as X
from . import random_sum as S
from . import simtime as M


# --- Figure 1: the random sum of Eq. 13 ------------------------------------------------------------------------
def n_grid(n_max):
    """1, 2, 4, ... up to n_max (n_max itself appended when it is not a power of 2)."""
    ns = [1]
    while ns[-1] * 2 <= n_max:
        ns.append(ns[-1] * 2)
    if ns[-1] != n_max:
        ns.append(int(n_max))
    return ns


def fig1_random_sum(cfg) -> pd.DataFrame:
    """E[t_B] normalised by B (K/2) min{h/p_sigma, tau_s/p_K}, for K = 2 and K = 2 ceil(ln(n+1)): Monte Carlo
    (mean and its standard error over the replicates) for n <= n_max_mc, exact for every n <= n_max_exact, and the
    z-score of the Monte Carlo mean against the exact mean with the exact standard deviation of t_B.
    Replicates at n: max(R, draws // (B n K)): at least R, more where draws are cheap."""
    rng = cfg.rng("fig1")
    rows = []
    p, h, tau, B = cfg.p, 1.0, 1.0, cfg.B
    for n in n_grid(cfg.n_max_exact):
        for rule in ("K = 2", "K = 2 ceil(ln(n+1))"):
            K = 2 if rule == "K = 2" else S.k_of_n(n)
            norm = S.normaliser(K, B, p, p, h, tau)
            mean, var = S.moments_t_B(n, K, B, p, p, h, tau)
            row = {"rule": rule, "n": n, "K": K, "exact": mean / norm, "exact_sd": math.sqrt(var) / norm}
            if n <= cfg.n_max_mc:
                reps = int(min(20_000, max(cfg.R, cfg.draws // (B * n * K))))
                t = S.t_B(n, K, B, p, p, h, tau, reps, rng) / norm
                row.update(mc=t.mean(), se=t.std(ddof=1) / math.sqrt(reps), reps=reps,
                           z_mc_vs_exact=(t.mean() - row["exact"]) / (row["exact_sd"] / math.sqrt(reps)))
            else:
                row.update(mc=np.nan, se=np.nan, reps=0)
            rows.append(row)
    df = pd.DataFrame(rows)
    df["scale"] = df["n"] ** (2.0 / df["K"])
    df["mc_rescaled"] = df["mc"] * df["scale"]
    df["exact_rescaled"] = df["exact"] * df["scale"]
    return df


def worst_in_band(values, lo, hi):
    """The value farthest outside [lo, hi], or (all inside) the one closest to an edge."""
    v = np.asarray(values, dtype=float)
    mid = 0.5 * (lo + hi)
    return float(v[np.argmax(np.abs(v - mid))])


def claim1(df, n_max=1024):
    mc = df[df["n"] <= n_max].dropna(subset=["mc"])
    logk = mc[mc["rule"] != "K = 2"]
    k2 = mc[(mc["rule"] == "K = 2")]
    return {"C1": worst_in_band(logk["mc_rescaled"], 0.4, 0.6),
            "C1b": worst_in_band(k2[k2["n"] <= 16]["mc_rescaled"], 0.4, 0.6),
            "C1c": float(logk["mc"].min()),
            "C1d": float(k2[k2["n"] == k2["n"].max()]["mc"].iloc[0] * k2["n"].max()),
            "k2_at_64": float(k2[k2["n"] == 64]["mc"].iloc[0]) if (k2["n"] == 64).any() else np.nan,
            "max_abs_z": float(np.nanmax(np.abs(mc["z_mc_vs_exact"])))}


# --- Figure 2: Lemma 3.1 ---------------------------------------------------------------------------------------
def sample_sparse_points(rng, n_points, T):
    """Random sparse points with a spread of prog_K: a random prefix length p in 0..T is nonzero, coordinate p+1
    is zero, the rest are zero with probability 1/2; nonzero values are uniform on [-2, 3], with one in five
    snapped to +-1 or +-1/2 (the edges of Psi_a's and Gamma's behaviour)."""
    x = rng.uniform(-2.0, 3.0, size=(n_points, T))
    snap = rng.random((n_points, T)) < 0.2
    x = np.where(snap, rng.choice([-1.0, -0.5, 0.5, 1.0], size=(n_points, T)), x)
    p = rng.integers(0, T + 1, size=n_points)
    j = np.arange(T)
    zero = (j[None, :] == p[:, None]) | ((j[None, :] > p[:, None]) & (rng.random((n_points, T)) < 0.5))
    return np.where(zero, 0.0, x)


def fig2_lemma31(cfg) -> tuple[pd.DataFrame, pd.DataFrame]:
    """||grad F|| and prog_K at random sparse points (T = 12), per K in {1, 3, 5} and a in {e, 1 + 1/K}; and the
    support-violation counts: coordinates j with dF/dx_j != 0 outside {1..prog_K(x)+1} U supp(x)."""
    rng = cfg.rng("fig2")
    T = cfg.T2
    pts, summary = [], []
    for K in (1, 3, 5):
        x = sample_sparse_points(rng, cfg.n_points2, T)
        for a_name, a in (("e", math.e), ("1 + 1/K", 1 + 1 / K)):
            g = C.grad_F(x, T, K, a)
            pr = C.prog_K(x, K)
            allowed = (np.arange(1, T + 1)[None, :] <= pr[:, None] + 1) | (x != 0)
            viol = int(((g != 0) & ~allowed).sum())
            norm = np.linalg.norm(g, axis=1)
            below = pr < T
            pts.append(pd.DataFrame({"K": K, "a": a_name, "prog": pr, "grad_norm": norm}))
            summary.append({"K": K, "a": a_name, "a_value": a, "points": len(x), "prog < T": int(below.sum()),
                            "support violations": viol,
                            "min ||grad F|| (prog < T)": float(norm[below].min()) if below.any() else np.nan})
    return pd.concat(pts, ignore_index=True), pd.DataFrame(summary)


# --- Figure 3: Lemma 3.2 ---------------------------------------------------------------------------------------
def fig3_lemma32(cfg) -> pd.DataFrame:
    """Sup estimates over random points (uniform on [-1, 4]^T) plus the diagonal ray x = c (1, ..., 1),
    c in [-1, 6], of (F(0) - F(x))/T, ||Hessian||_op and ||grad F||_inf, against Lemma 3.2's Delta_0, ell_1 and
    gamma_inf, for K = 1..6 and a in {e, 1 + 1/K} (T = 6)."""
    rng = cfg.rng("fig3")
    T = cfg.T3
    rows = []
    with limit_threads(1):
        for K in range(1, cfg.K3_max + 1):
            x = np.concatenate([rng.uniform(-1.0, 4.0, size=(cfg.n_points3, T)),
                                np.linspace(-1.0, 6.0, 71)[:, None] * np.ones(T)])
            for a_name, a in (("e", math.e), ("1 + 1/K", 1 + 1 / K)):
                f0 = C.F(np.zeros(T), T, K, a)
                drop = (f0 - C.F(x, T, K, a)).max() / T
                ginf = np.abs(C.grad_F(x, T, K, a)).max()
                H = C.hessian_F(x, T, K, a)
                hop = np.abs(np.linalg.eigvalsh(H)).max()
                const = C.lemma32_constants(K, a)
                rows.append({"K": K, "a": a_name, "a_value": a, "drop_est": drop, "Delta_0": float(const["Delta_0"]),
                             "hess_est": hop, "ell_1": float(const["ell_1"]), "ginf_est": ginf,
                             "gamma_inf": float(const["gamma_inf"])})
    df = pd.DataFrame(rows)
    df["max ratio"] = np.maximum.reduce([df["drop_est"] / df["Delta_0"], df["hess_est"] / df["ell_1"],
                                         df["ginf_est"] / df["gamma_inf"]])
    return df


def loglog_slope(K, y):
    return float(np.polyfit(np.log(K), np.log(y), 1)[0])


def claim3(df3):
    Ks = np.arange(2, 13)
    ell_small = C.lemma32_constants(Ks, 1 + 1 / Ks)["ell_1"]
    ell_e = C.lemma32_constants(Ks, math.e)["ell_1"]
    return {"C3": loglog_slope(Ks, ell_small), "slope_e": loglog_slope(Ks, ell_e),
            "ratio_at_12": float(ell_e[-1] / ell_small[-1]), "C3b": float(df3["max ratio"].max())}


# --- Figure 4: the time landscape ------------------------------------------------------------------------------
def fig4_landscape(cfg) -> dict:
    """Every formula of Figure 4 over n in [1, n_max4] at tau_s = tau_w and tau_s = tau_w / 100."""
    P = X.Problem(d=cfg.d4, h=1.0, s2e=cfg.s2e4, lde=1.0)
    ns = np.unique(np.round(np.geomspace(1, cfg.n_max4, 61)))
    return {"problem": P, "tau_w": cfg.tau_w4,
            "equal": X.landscape(ns, P, cfg.tau_w4, cfg.tau_w4),
            "small": X.landscape(ns, P, cfg.tau_w4 / 100, cfg.tau_w4)}


def claim4(L):
    eq, sm = L["equal"], L["small"]
    P = L["problem"]
    ratio_eq = np.minimum(eq["batch_sgd"], eq["single_sgd"]) / eq["qsgd"]
    ratio_sm = np.minimum(sm["batch_sgd"], sm["single_sgd"]) / sm["qsgd"]
    wins = sm["n"][ratio_sm > 1]
    limit = X.time_batch_qsgd(1e12, P, L["tau_w"], L["tau_w"])
    below = min(float((eq[k] / eq["lb_low"]).min()) for k in ("batch_sgd", "single_sgd", "qsgd"))
    below = min(below, min(float((sm[k] / sm["lb_low"]).min()) for k in ("batch_sgd", "single_sgd", "qsgd")))
    return {"C4": float(ratio_eq.max()), "C4b": float(limit / (L["tau_w"] * P.d * P.lde)),
            "C4c": float(ratio_sm.max()), "wins_from": float(wins.min()) if wins.size else np.nan,
            "wins_to": float(wins.max()) if wins.size else np.nan, "C4d": below}


# --- Figure 5: simulated time ----------------------------------------------------------------------------------
STEP_GRID = (1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)


def _configs(ns):
    return [(m, n) for m in ("sync", "randk") for n in ns] + [("single", 1)]


def fig5_simtime(cfg) -> dict:
    """Tune each (method, n) on the step grid (R_tune runs on the stream ``fig5_tune``), then R_f5 claim runs at
    the tuned step (stream ``fig5_claim``); iterations to ||grad f||^2 <= eps times the per-iteration time model."""
    prob = M.make_problem(cfg.rng("fig5_problem"), d=cfg.d5, N=2 * cfg.d5)
    g0 = float((prob.grad(np.zeros((1, cfg.d5))) ** 2).sum())
    sigma, eps = math.sqrt(cfg.sigma_rel * g0), cfg.eps_rel * g0
    ns = list(cfg.ns5)
    confs = _configs(ns)
    meth, nn, st, gr = [], [], [], []
    for m, n in confs:
        for s in STEP_GRID:
            for _ in range(cfg.R_tune):
                meth.append(m), nn.append(n), st.append(s), gr.append(f"{m}{n}")
    hit = M.run_states(prob, meth, nn, st, sigma, eps, cfg.max_iter5, cfg.rng("fig5_tune"), groups=gr,
                       reps=cfg.R_tune)
    tune = pd.DataFrame({"method": meth, "n": nn, "step": st, "iters": hit})
    means = tune.groupby(["method", "n", "step"], as_index=False)["iters"].mean()
    best = means.loc[means.groupby(["method", "n"])["iters"].idxmin()].set_index(["method", "n"])["step"]
    meth, nn, st = [], [], []
    for m, n in confs:
        for _ in range(cfg.R_f5):
            meth.append(m), nn.append(n), st.append(float(best[(m, n)]))
    hit = M.run_states(prob, meth, nn, st, sigma, eps, cfg.max_iter5, cfg.rng("fig5_claim"))
    runs = pd.DataFrame({"method": meth, "n": nn, "step": st, "iters": hit})
    runs["censored"] = runs["iters"] > cfg.max_iter5
    runs["time"] = [it * M.time_per_iter(m, n, cfg.d5, cfg.h5, cfg.tau5, cfg.tau5)
                    for m, n, it in zip(runs["method"], runs["n"], runs["iters"])]
    table = runs.groupby(["method", "n"], as_index=False).agg(step=("step", "first"), iters=("iters", "mean"),
                                                               iters_sd=("iters", "std"), time=("time", "mean"),
                                                               time_sd=("time", "std"), censored=("censored", "sum"))
    table["time per iter"] = [M.time_per_iter(m, n, cfg.d5, cfg.h5, cfg.tau5, cfg.tau5)
                              for m, n in zip(table["method"], table["n"])]
    return {"table": table, "runs": runs, "tuning": means, "sigma2": sigma ** 2, "eps": eps, "g0": g0}


def claim5(res, ns):
    t = res["table"].set_index(["method", "n"])["time"]
    n_lo, n_hi = min(x for x in ns if x >= 16), max(ns)
    return {"C5": float(t[("randk", 4)] / t[("randk", 1)]),
            "C5b": float(abs(t[("randk", n_hi)] / t[("randk", n_lo)] - 1)),
            "censored": int(res["table"]["censored"].sum())}


# --- where eta and mu come from --------------------------------------------------------------------------------
def oracle_and_compressor_rates(cfg, draws=50_000):
    """The two rare events behind eta and mu, measured: how often the Bernoulli oracle reveals coordinate
    prog_K + 1 (expected p_sigma = p) at a point with prog_2 = 3 (T = 8), and how often RandK lets one given
    coordinate through (d = 100, k = 1: expected p_K = 0.01), each over ``draws`` independent calls; plus the
    oracle's largest relative bias over the coordinates."""
    rng = cfg.rng("oracle")
    T, K, a = 8, 2, math.e
    x = np.array([1.5, 2.0, 1.2, 0.0, 0.0, 0.0, 0.0, 0.0])
    g, xi = C.stochastic_grad(np.broadcast_to(x, (draws, T)), T, K, a, cfg.p, rng)
    true = C.grad_F(x, T, K, a)
    bias = np.abs(g.mean(0) - true)[true != 0] / np.abs(true[true != 0])
    reveal = float(np.mean(g[:, 3] != 0))
    v = np.zeros(100)
    v[7] = 1.0
    passed = float(np.mean(C.randk(np.broadcast_to(v, (draws, 100)), 1, rng)[:, 7] != 0))
    return {"reveal rate": reveal, "p_sigma": cfg.p, "RandK pass rate": passed, "k/d": 0.01,
            "max relative bias": float(bias.max()),
            "S2": max(abs(reveal / cfg.p - 1), abs(passed / 0.01 - 1))}
