"""The notebook's experiments, one function per figure; each returns plain results (DataFrames, dataclasses).

Every replicate draws its data and its projections from its own named stream (``cfg.rng(name)``), so a figure's
numbers do not move when another figure is changed, and the OPG bandwidth is tuned on replicates drawn from
streams that no claim uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from lib.common import limit_threads, progress

from .baselines import METHODS as BASELINES
from .baselines import sdr
from .data import MODELS, RegressionData, load_real, make_model
from .metrics import subspace_dist
from .rpedr import default_d, null_median, rpedr, rpedr_double

RP_METHODS = ("RPEDR", "RPEDR-double")
ALL_METHODS = RP_METHODS + BASELINES
OPG_SCALES = (0.1, 0.15, 0.2, 0.3, 0.5)  # OPG bandwidth / median pairwise distance of the standardised X
DISTS_F4 = ("norm", "cauchy", "mixed")


# --- shared pieces ---------------------------------------------------------------------------------------------
class NullCache:
    """Algorithm 2's null medians, computed once per (p, L, distribution) for a run."""

    def __init__(self, cfg):
        self.cfg, self.store = cfg, {}

    def __call__(self, p: int, L: int) -> np.ndarray:
        key = (p, L, self.cfg.dist)
        if key not in self.store:
            self.store[key] = null_median(p, L, self.cfg.n_null, self.cfg.dist, self.cfg.rng(f"null/{p}/{L}"))
        return self.store[key]


def fit_rp(cfg, X, y, rng, L=None, dist=None):
    p = X.shape[1]
    return rpedr(X, y, d=default_d(p), L=cfg.L if L is None else L, M=cfg.m_per_p * p,
                 dist=cfg.dist if dist is None else dist, base=cfg.base, rng=rng)


def all_directions(cfg, X, y, d0, rng, D_med, opg_scale):
    """Directions (p x d0) of every method, and RPEDR's first fit and d_hat."""
    fit = fit_rp(cfg, X, y, rng)
    dbl = rpedr_double(X, y, d0, fit, D_med, rng)
    out = {"RPEDR": fit.U[:, :d0], "RPEDR-double": dbl.B}
    for m in BASELINES:
        out[m] = sdr(m, X, y, d0, n_slices=cfg.n_slices, opg_scale=opg_scale)
    return out, fit, dbl


def tune_opg(cfg, model: str, n: int, p: int) -> pd.DataFrame:
    """OPG's mean subspace error over the bandwidth grid on tuning replicates (streams no claim uses)."""
    rows = []
    for r in range(cfg.n_tune):
        X, y, B0 = make_model(model, n, p, cfg.rng(f"tune/{model}/{n}x{p}/{r}"))
        for s in OPG_SCALES:
            rows.append({"model": model, "n": n, "p": p, "scale": s, "rep": r,
                         "error": subspace_dist(B0, sdr("OPG", X, y, B0.shape[1], opg_scale=s))})
    return pd.DataFrame(rows).groupby(["model", "n", "p", "scale"], as_index=False)["error"].mean()


def best_scale(tuning: pd.DataFrame) -> float:
    return float(tuning.loc[tuning["error"].idxmin(), "scale"])


# --- Figure 2 (and 3): the simulation study --------------------------------------------------------------------
@dataclass
class SimStudy:
    errors: pd.DataFrame  # model, n, p, setting, rep, method, error
    spectra: pd.DataFrame  # model, setting, rep, k, D, D_med, d_hat, d0
    opg_tuning: pd.DataFrame
    n_fits: int = 0


def setting_name(n: int, p: int) -> str:
    return f"n={n}, p={p}"


@limit_threads(1)
def simulation_study(cfg) -> SimStudy:
    nulls = NullCache(cfg)
    rows, spec, tuning, n_fits = [], [], [], 0
    jobs = [(n, p, m) for (n, p) in cfg.settings for m in cfg.models]
    for n, p, model in progress(jobs, desc="simulations"):
        d0 = MODELS[model]
        tune = tune_opg(cfg, model, n, p)
        tuning.append(tune)
        scale = best_scale(tune)
        D_med = nulls(p, cfg.L)
        for r in range(cfg.n_reps):
            X, y, B0 = make_model(model, n, p, cfg.rng(f"fig2/data/{model}/{n}x{p}/{r}"))
            dirs, fit, dbl = all_directions(cfg, X, y, d0, cfg.rng(f"fig2/rp/{model}/{n}x{p}/{r}"), D_med, scale)
            n_fits += fit.n_fits + (dbl.second.n_fits if dbl.second is not None else 0)
            for method, B in dirs.items():
                rows.append({"model": model, "n": n, "p": p, "setting": setting_name(n, p), "rep": r,
                             "method": method, "error": subspace_dist(B0, B)})
            k = min(p, 8)
            for j in range(k):
                spec.append({"model": model, "setting": setting_name(n, p), "rep": r, "k": j + 1,
                             "D": fit.D[j], "D_med": D_med[j], "d_hat": dbl.d_hat, "d0": d0})
    return SimStudy(pd.DataFrame(rows), pd.DataFrame(spec), pd.concat(tuning, ignore_index=True), n_fits)


def error_table(errors: pd.DataFrame) -> pd.DataFrame:
    """Mean (sd) error per setting x model (rows) and method (columns)."""
    g = errors.groupby(["setting", "model", "method"])["error"]
    mean = g.mean().unstack("method")[list(ALL_METHODS)]
    return mean


def ranking(errors: pd.DataFrame) -> pd.DataFrame:
    """Per setting x model: the better RPEDR variant's rank among it and the five baselines (1 = lowest mean)."""
    mean = error_table(errors)
    rp = mean[list(RP_METHODS)].min(axis=1)
    others = mean[list(BASELINES)]
    rank = 1 + (others.lt(rp, axis=0)).sum(axis=1)
    best_base = others.idxmin(axis=1)
    return pd.DataFrame({"best RPEDR": rp, "best baseline": best_base, "its error": others.min(axis=1),
                         "rank": rank})


def sir_gap(errors: pd.DataFrame, models=("M1a", "M3")) -> float:
    """The smallest (over settings and ``models``) mean SIR error minus mean RPEDR error."""
    mean = error_table(errors)
    sel = mean[mean.index.get_level_values("model").isin(models)]
    return float((sel["SIR"] - sel["RPEDR"]).min())


def dim_table(spectra: pd.DataFrame) -> pd.DataFrame:
    """Per setting x model: share of replicates with d_hat >= d0, and the d_hat counts."""
    per = spectra.drop_duplicates(["model", "setting", "rep"])
    out = per.groupby(["setting", "model"]).agg(d0=("d0", "first"), reps=("rep", "size"))
    out["share_ge_d0"] = per.assign(ok=per["d_hat"] >= per["d0"]).groupby(["setting", "model"])["ok"].mean()
    counts = per.groupby(["setting", "model"])["d_hat"].value_counts().unstack(fill_value=0)
    out["d_hat counts"] = [", ".join(f"{k}: {v}" for k, v in row.items() if v) for _, row in counts.iterrows()]
    return out


# --- Figure 1: error against L ---------------------------------------------------------------------------------
@limit_threads(1)
def error_vs_L(cfg) -> pd.DataFrame:
    """Error of U[:, :d0] from the first L groups of one fit with max(L) groups (nested), per model and rep."""
    n, p = cfg.settings[0]
    Ls = list(cfg.f1_L)
    rows = []
    jobs = [(m, r) for m in cfg.f1_models for r in range(cfg.f1_reps)]
    for model, r in progress(jobs, desc="error vs L"):
        X, y, B0 = make_model(model, n, p, cfg.rng(f"fig1/data/{model}/{r}"))
        fit = fit_rp(cfg, X, y, cfg.rng(f"fig1/rp/{model}/{r}"), L=max(Ls))
        for L in Ls:
            rows.append({"model": model, "rep": r, "L": L, "error": subspace_dist(B0, fit.basis(B0.shape[1], L))})
    return pd.DataFrame(rows)


@dataclass
class Convergence:
    table: pd.DataFrame  # model, L, mean, sd
    slope: float  # log-log slope of the mean error over L <= slope_L_max (claim model)
    ratio: float  # mean error at max L / at the smallest L
    non_monotone: int  # steps where the mean error rises
    model: str


def convergence(df: pd.DataFrame, model: str = "M2", slope_L_max: int = 200) -> Convergence:
    tab = df.groupby(["model", "L"])["error"].agg(["mean", "std"]).reset_index()
    one = tab[tab["model"] == model].sort_values("L")
    fit_part = one[one["L"] <= slope_L_max]
    slope = float(np.polyfit(np.log(fit_part["L"]), np.log(fit_part["mean"]), 1)[0])
    m = one["mean"].to_numpy()
    return Convergence(tab, slope, float(m[-1] / m[0]), int(np.sum(np.diff(m) > 0)), model)


def monotone_ratio(conv: Convergence, allowed: int) -> float:
    """``conv.ratio`` when the mean curve has at most ``allowed`` rising steps, else NaN (the claim then fails)."""
    return conv.ratio if conv.non_monotone <= allowed else float("nan")


def dim_share(dims: pd.DataFrame, models=("M2", "M3")) -> float:
    """The smallest share of replicates with d_hat >= d0 over ``models`` and settings."""
    return float(dims.loc[dims.index.get_level_values("model").isin(models), "share_ge_d0"].min())


# --- Figure 4: the projection distribution ---------------------------------------------------------------------
@limit_threads(1)
def projection_study(cfg) -> pd.DataFrame:
    """M4 with sparse and dense beta: RPEDR's error for Gaussian, Cauchy and mixed projections (same data)."""
    n, p = cfg.settings[0]
    rows = []
    jobs = [(m, r) for m in ("M4s", "M4d") for r in range(cfg.f4_reps)]
    for model, r in progress(jobs, desc="projection distributions"):
        X, y, B0 = make_model(model, n, p, cfg.rng(f"fig4/data/{model}/{r}"))
        for dist in DISTS_F4:
            fit = fit_rp(cfg, X, y, cfg.rng(f"fig4/rp/{model}/{r}/{dist}"), dist=dist)
            rows.append({"beta": "sparse" if model == "M4s" else "dense", "dist": dist, "rep": r,
                         "error": subspace_dist(B0, fit.U[:, :1])})
    return pd.DataFrame(rows)


def distribution_checks(df: pd.DataFrame) -> pd.DataFrame:
    """The three parts of the projection-distribution claim, with their values."""
    m = df.groupby(["beta", "dist"])["error"].mean().unstack("dist")
    mixed_excess = max(float(m.loc[b, "mixed"] - m.loc[b, ["norm", "cauchy"]].max()) for b in m.index)
    return pd.DataFrame([
        {"condition": "sparse beta: Cauchy < Gaussian", "value": m.loc["sparse", "cauchy"] - m.loc["sparse", "norm"],
         "holds": bool(m.loc["sparse", "cauchy"] < m.loc["sparse", "norm"])},
        {"condition": "dense beta: Gaussian < Cauchy", "value": m.loc["dense", "norm"] - m.loc["dense", "cauchy"],
         "holds": bool(m.loc["dense", "norm"] < m.loc["dense", "cauchy"])},
        {"condition": "mixed never worst by > 0.1", "value": mixed_excess, "holds": bool(mixed_excess <= 0.1)},
    ]).set_index("condition")


# --- Figure 5: real-data stand-ins -----------------------------------------------------------------------------
def quad_ridge():
    """The downstream regressor: full quadratic ridge, the penalty chosen by efficient leave-one-out (GCV-like)."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    return make_pipeline(StandardScaler(), PolynomialFeatures(degree=2), RidgeCV(alphas=np.logspace(-3, 4, 15)))


def _rmse(Ztr, ytr, Zte, yte) -> float:
    est = quad_ridge().fit(Ztr, ytr)
    return float(np.sqrt(np.mean((est.predict(Zte) - yte) ** 2)))


def _tune_opg_real(cfg, X, y, d0, rng) -> float:
    """OPG's bandwidth by an inner 2/3-1/3 validation split of the training rows (downstream ridge RMSE)."""
    n = len(y)
    idx = rng.permutation(n)
    tr, va = idx[: 2 * n // 3], idx[2 * n // 3:]
    scores = []
    for s in OPG_SCALES:
        B = sdr("OPG", X[tr], y[tr], d0, opg_scale=s)
        scores.append(_rmse(X[tr] @ B, y[tr], X[va] @ B, y[va]))
    return OPG_SCALES[int(np.argmin(scores))]


@limit_threads(1)
def real_data_study(cfg, user: Optional[RegressionData] = None) -> pd.DataFrame:
    """Test RMSE of the quadratic ridge on each method's top-d0 directions (and on all features), over splits."""
    nulls = NullCache(cfg)
    sets = [load_real(name, cfg.rng(f"fig5/load/{name}")) for name in cfg.f5_datasets]
    if user is not None:
        sets.append(user)
    rows = []
    jobs = [(ds, s) for ds in sets for s in range(cfg.f5_splits)]
    for ds, s in progress(jobs, desc="real data"):
        rng = cfg.rng(f"fig5/split/{ds.name}/{s}")
        n = len(ds.y)
        n_tr = min(2 * n // 3, 1000)  # the authors' scripts: 2/3 for training, 1000 rows for superconductivity
        idx = rng.permutation(n)
        tr, te = idx[:n_tr], idx[n_tr:]
        mu, sd = ds.X[tr].mean(axis=0), ds.X[tr].std(axis=0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (ds.X[tr] - mu) / sd, (ds.X[te] - mu) / sd
        ytr, yte = ds.y[tr], ds.y[te]
        d0 = ds.d0
        scale = _tune_opg_real(cfg, Xtr, ytr, d0, rng)
        dirs, _, dbl = all_directions(cfg, Xtr, ytr, d0, rng, nulls(Xtr.shape[1], cfg.L), scale)
        for method, B in dirs.items():
            row = {"data": ds.name, "split": s, "method": method, "rmse": _rmse(Xtr @ B, ytr, Xte @ B, yte)}
            if ds.B0 is not None:
                row["subspace error"] = subspace_dist(ds.B0, B * (1 / sd)[:, None])
            rows.append(row)
        rows.append({"data": ds.name, "split": s, "method": "all features", "rmse": _rmse(Xtr, ytr, Xte, yte)})
    return pd.DataFrame(rows)


def rmse_table(df: pd.DataFrame, value: str = "rmse") -> pd.DataFrame:
    """Mean test RMSE (or ``value``) per data set (rows) and method (columns); empty where ``value`` is absent."""
    if value not in df.columns:
        return pd.DataFrame()
    order = list(ALL_METHODS) + ["all features"]
    tab = df.dropna(subset=[value]).groupby(["data", "method"])[value].mean().unstack("method")
    return tab[[c for c in order if c in tab.columns]]
