"""One function per figure, each returning plain results, and the claim computations on them.

Figures 1, 2 and 6 run GD on the paper's toys, Figure 3 sweeps the learning rate across eta_c on our logistic
problem, Figure 4 trains a small CNN with GD, SGD-momentum and Adam (the paper's Sec. 3.3), Figure 5 trains a small
MLP with MSE and weight decay by large-learning-rate GD (the Edge-of-Stability discussion).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .dynamics import (
    WINDOW,
    alignment,
    alternation_fraction,
    distances,
    gd,
    is_monotone,
    regime_threshold,
    update_cosines,
)
from .logreg import breast_cancer_logreg, spectrum_summary, sweep_regimes
from .toys import F_A, F_B, F_C, sharpness_2x2

FIG1_ETAS = (0.1, 0.42)  # paper Fig. 1: below and above eta_c = 0.4 for f_a and f_b
FIG2_ETAS = (0.1, 0.95)  # paper Fig. 2: below and above eta_c = 2/3 for f_c
FC_START = (0.05, 0.05)  # the brief's start for f_c (larger starts leave the basin at eta = 0.95)
FLOOR = 1e-10  # F2/F6 statistics stop once ||x_k - x*|| < FLOOR (the brief's protocol)


# --- toys: Figures 1, 2, 6 ------------------------------------------------------------------------------------
def toy_start(rng: np.random.Generator, radius: float = 0.3) -> np.ndarray:
    """A start at ``radius`` in a random quadrant, 15-75 degrees away from the axes (the eigen-directions): a
    generic point of the basin, not one of Theorem 1's exceptional starts on an axis."""
    theta = rng.uniform(np.radians(15), np.radians(75)) + rng.integers(4) * np.pi / 2
    return radius * np.array([np.cos(theta), np.sin(theta)])


def fc_start(rng: np.random.Generator, jitter: float = 0.01) -> np.ndarray:
    """The brief's start (0.05, 0.05) moved by a uniform draw from the disk of radius ``jitter``."""
    r, a = jitter * np.sqrt(rng.uniform()), rng.uniform(0, 2 * np.pi)
    return np.asarray(FC_START) + r * np.array([np.cos(a), np.sin(a)])


@dataclass
class ToyRun:
    toy: str
    eta: float
    regime: str  # Theorem 1's prediction: "fixed" or "oscillatory"
    X: np.ndarray  # iterates
    measures: dict  # alignment(...) inside the window
    expected_dir: str  # "v_1" or "v_n"


def _toy_run(toy, x0, eta, n_steps) -> ToyRun:
    reg = regime_threshold(toy.hess(toy.xstar))
    X = gd(toy.grad, x0, eta, n_steps)
    regime = reg.predicted(eta)
    return ToyRun(toy.name, eta, regime, X, alignment(X, toy.xstar, reg.V), "v_1" if regime == "fixed" else "v_n")


def figure1(rng: np.random.Generator, n_steps: int = 2000) -> list[ToyRun]:
    """GD on f_a and f_b at eta = 0.1 and 0.42, one generic start per function."""
    runs = []
    for toy in (F_A, F_B):
        x0 = toy_start(rng)
        runs += [_toy_run(toy, x0, eta, n_steps) for eta in FIG1_ETAS]
    return runs


@dataclass
class FcRun:
    """GD on f_c at one eta with the sharpness, loss and distance per iterate."""

    run: ToyRun
    sharp: np.ndarray
    loss: np.ndarray
    dist: np.ndarray

    @property
    def live(self) -> np.ndarray:
        """Iterates still above the floor ``||x_k - x*|| >= 1e-10``."""
        return self.dist >= FLOOR


def figure2(rng: np.random.Generator, n_steps: int = 2000) -> list[FcRun]:
    """GD on f_c at eta = 0.1 and 0.95 from one start near (0.05, 0.05)."""
    x0 = fc_start(rng)
    out = []
    for eta in FIG2_ETAS:
        run = _toy_run(F_C, x0, eta, n_steps)
        out.append(FcRun(run, sharpness_2x2(F_C.hess(run.X)), F_C.f(run.X), distances(run.X, F_C.xstar)))
    return out


def sharpness_gradient(toy=F_C, h: float = 1e-6) -> np.ndarray:
    """``omega = grad lambda_n(x)`` at ``x*`` by central differences of the closed-form sharpness (§3.2's
    ``lambda_n(x) = lambda_n + omega^T (x - x*) + o(||x - x*||)``)."""
    e = np.eye(2)
    s = lambda p: float(sharpness_2x2(toy.hess(p)))  # noqa: E731
    return np.array([(s(toy.xstar + h * e[i]) - s(toy.xstar - h * e[i])) / (2 * h) for i in range(2)])


def fc_limit_directions(fc_runs: list[FcRun]) -> dict:
    """Theorem 1's limit direction per f_c run: ``v_1`` below eta_c, ``v_n`` above (keyed by eta)."""
    reg = regime_threshold(F_C.hess(F_C.xstar))
    return {fr.run.eta: (reg.v1 if fr.run.regime == "fixed" else reg.vn) for fr in fc_runs}


def figure6(fc_runs: list[FcRun], n_last: int = 50) -> pd.DataFrame:
    """``r_k = (s_k - lambda_n)/||x_k - x*||`` per step (and ``(-1)^k r_k``) for each f_c run, up to the floor."""
    lam_n = regime_threshold(F_C.hess(F_C.xstar)).lam[-1]
    rows = []
    for fr in fc_runs:
        k = np.flatnonzero(fr.live)
        r = (fr.sharp[k] - lam_n) / fr.dist[k]
        last = np.zeros(len(k), dtype=bool)
        last[-n_last:] = True
        rows.append(pd.DataFrame({"eta": fr.run.eta, "k": k, "ratio": r, "signed_ratio": r * (-1.0) ** k,
                                  "last": last}))
    return pd.concat(rows, ignore_index=True)


def ratio_spread(fig6: pd.DataFrame, eta: float) -> dict:
    """Relative spread (max - min)/|mean| of ``(-1)^k r_k`` over the last steps before the floor."""
    s = fig6[(fig6["eta"] == eta) & fig6["last"]]["signed_ratio"].to_numpy()
    return {"mean": float(np.mean(s)), "spread": float((s.max() - s.min()) / abs(np.mean(s))), "n": int(len(s))}


def toy_table(runs: list[ToyRun]) -> pd.DataFrame:
    """Per run: the predicted regime and the asymptotic alignment and cosine (the values C1 tests)."""
    rows = []
    for r in runs:
        m = r.measures
        align = m["align_v1"] if r.expected_dir == "v_1" else m["align_vn"]
        signed = m["cos"] if r.regime == "fixed" else -m["cos"]
        rows.append({"function": r.toy, "eta": r.eta, "predicted": r.regime, "direction": r.expected_dir,
                     "k (last in window)": m["k_last"], "|<u,v>|": align, "c_k": m["cos"],
                     "score": min(align, signed)})
    return pd.DataFrame(rows)


def claim1(table: pd.DataFrame) -> float:
    """C1: the worst of ``|<u_k, v_expected>|`` and ``+-c_k`` (sign of the predicted regime) over the six runs."""
    return float(table["score"].min())


def claim2(fc_runs: list[FcRun], fig6: pd.DataFrame, k_from: int = 20) -> pd.DataFrame:
    """C2's six conditions on f_c (paper Fig. 2 and §3.2), one row each."""
    small, large = fc_runs
    lam_n = regime_threshold(F_C.hess(F_C.xstar)).lam[-1]
    s_small = small.sharp[small.live][k_from:]
    s_large = large.sharp[large.live]
    spread = ratio_spread(fig6, large.run.eta)
    rows = [
        ("eta=0.1: s_k monotone for k >= 20", bool(is_monotone(s_small)), "monotone"),
        ("eta=0.1: max s_k <= 2/eta", float(small.sharp.max()), f"<= {2 / small.run.eta:.4g}"),
        ("eta=0.95: sign(s_k - lambda_n) alternates (fraction of steps)", alternation_fraction(s_large - lam_n),
         "== 1"),
        ("eta=0.95: steps with s_k > 2/eta", int(np.sum(large.sharp > 2 / large.run.eta)), ">= 1"),
        ("eta=0.95: loss monotone", bool(is_monotone(large.loss[large.live])), "monotone"),
        ("eta=0.95: spread of (-1)^k (s_k - lambda_n)/||x_k - x*|| (last 50 steps)", spread["spread"], "<= 0.05"),
    ]
    holds = [rows[0][1], rows[1][1] <= 2 / small.run.eta, rows[2][1] == 1.0, rows[3][1] >= 1, rows[4][1],
             rows[5][1] <= 0.05]
    return pd.DataFrame([{"condition": c, "measured": m, "test": t, "holds": bool(h)}
                         for (c, m, t), h in zip(rows, holds)])


# --- logistic regression: Figure 3 ----------------------------------------------------------------------------
@dataclass
class Sweep:
    spectrum: dict
    runs: pd.DataFrame  # one row per (eta, start)
    summary: pd.DataFrame  # one row per eta: medians over the starts


def figure3(rng: np.random.Generator, ratios, *, mu: float = 1.0, n_starts: int = 5, n_steps: int = 20000) -> Sweep:
    """The sweep ``eta/eta_c`` over ``ratios`` with ``n_starts`` random starts each (at distance 1 from ``w*``)."""
    prob = breast_cancer_logreg(mu)
    runs = []
    for s in range(n_starts):
        df = sweep_regimes(prob, ratios, rng, n_steps=n_steps)
        df.insert(0, "start", s)
        runs.append(df)
    runs = pd.concat(runs, ignore_index=True)
    cols = ["cos", "align_v1", "align_vn", "align_bottom"]
    summary = runs.groupby("eta/eta_c", as_index=False).agg(
        eta=("eta", "first"), predicted=("predicted", "first"), converged=("converged", "all"),
        **{f"{c}": (c, "median") for c in cols}, cos_min=("cos", "min"), cos_max=("cos", "max"))
    return Sweep({"mu": mu, **spectrum_summary(prob)}, runs, summary)


def claim3(sweep: Sweep) -> dict:
    """C3: the number of sweep points (medians over the starts) that break the brief's conditions; also the
    number of single starts that would break them."""
    def bad(df):
        r = df["eta/eta_c"]
        v = ((r <= 0.98) & ~(df["cos"] > 0)) | ((r >= 1.02) & ~(df["cos"] < 0)) | \
            ((r >= 1.05) & ~(df["align_vn"] >= 0.98)) | ~df["converged"]
        return int(v.sum())
    return {"violations": bad(sweep.summary), "single_start_violations": bad(sweep.runs),
            "n_points": len(sweep.summary), "n_runs": len(sweep.runs)}


def claim3b(sweep: Sweep) -> float:
    """C3b: the smallest median ``|<u, v_1>|`` over the sweep points with 0.7 <= eta/eta_c <= 0.98."""
    s = sweep.summary
    sel = s[(s["eta/eta_c"] >= 0.7) & (s["eta/eta_c"] <= 0.98)]
    return float(sel["align_v1"].min())


# --- networks: Figures 4 and 5 ---------------------------------------------------------------------------------
@dataclass
class NetRuns:
    """Figure 4's training runs: per optimiser and seed, the update cosines and the loss per log."""

    data: str
    n_train: int
    n_params: int
    lrs: dict
    curves: pd.DataFrame  # optimiser, seed, t (step or epoch), c, loss
    late: pd.DataFrame  # optimiser, seed, late mean c (last 10% of the logs), final loss
    gd_sharpness: pd.DataFrame = field(default_factory=pd.DataFrame)  # per seed: final lambda_max vs 2/eta (GD)


def late_mean(c: np.ndarray, frac: float = 0.1) -> float:
    """Mean of the last ``frac`` of a cosine series (at least one value; NaNs dropped)."""
    c = np.asarray(c, dtype=float)
    n = max(1, int(round(frac * len(c))))
    tail = c[-n:]
    return float(np.nanmean(tail)) if np.isfinite(tail).any() else float("nan")


def figure4(cfg, images) -> NetRuns:
    """Train the small CNN with full-batch GD (``gd_steps`` steps, logged per step) and SGD-momentum and Adam
    (``cnn_epochs`` epochs, logged per epoch), on ``cnn_seeds`` seeds (``cfg.seed``, ``cfg.seed + 1``, ...)."""
    import torch

    from lib.common import limit_threads, torch_generator

    from .nets import FlatModel, make_objective, sharpness, small_cnn, train

    X = torch.from_numpy(images.X)
    Y = torch.from_numpy(images.y)
    lrs = {"gd": cfg.gd_lr, "sgdm": cfg.sgd_lr, "adam": cfg.adam_lr}
    curves, late, sharp = [], [], []
    n_params = 0
    with limit_threads(1):
        for s in range(cfg.seed, cfg.seed + cfg.cnn_seeds):
            model = FlatModel(small_cnn(in_channels=images.X.shape[1], n_classes=images.n_classes))
            n_params = model.n_params
            theta0 = model.init(torch_generator(s, "fig4-init"))  # one initialisation shared by the optimisers
            for opt in ("gd", "sgdm", "adam"):
                h = train(model, X, Y, opt=opt, lr=lrs[opt], generator=torch_generator(s, f"fig4-{opt}"),
                          epochs=cfg.cnn_epochs, steps=cfg.gd_steps, batch=cfg.batch, loss="ce", theta0=theta0)
                c = update_cosines(h.thetas)
                t = np.arange(1, len(c) + 1)
                curves.append(pd.DataFrame({"optimiser": opt, "seed": s, "t": t, "c": c, "loss": h.loss[1:len(c) + 1]}))
                late.append({"optimiser": opt, "seed": s, "late mean c": late_mean(c), "final loss": h.loss[-1],
                             "diverged": h.diverged, "logged per": h.log_unit, "logs": len(h.loss) - 1})
                if opt == "gd" and cfg.power_iters:
                    lam, _ = sharpness(make_objective(model, "ce"), h.theta_final, X, Y, iters=cfg.power_iters,
                                       generator=torch_generator(s, "fig4-power"))
                    sharp.append({"seed": s, "final sharpness": lam, "2/eta": 2 / lrs["gd"]})
    return NetRuns(images.name, len(images.y), n_params, lrs, pd.concat(curves, ignore_index=True),
                   pd.DataFrame(late), pd.DataFrame(sharp))


C4_THRESHOLDS = {"gd": 0.9, "sgdm": 0.5, "adam": 0.5}


def claim4(runs: NetRuns, mode: str = "full") -> float | None:
    """C4: the smallest margin ``late mean c - threshold`` over optimisers and seeds (>= 0: every one holds).

    None in quick mode: its few hundred steps end while the loss is still 1.0-2.0, far from the converged regime
    the claim is about, so a quick value would "hold" vacuously (every optimiser still drifts in one direction)."""
    if mode == "quick":
        return None
    late = runs.late
    return float(min(row["late mean c"] - C4_THRESHOLDS[row["optimiser"]] for _, row in late.iterrows()))


@dataclass
class EosRun:
    """Figure 5: large-learning-rate GD on the MLP with MSE and weight decay."""

    lr: float
    wd: float
    n_samples: int
    n_params: int
    steps: np.ndarray  # logged steps
    loss: np.ndarray
    c: np.ndarray  # c_k per step
    sharp_at: np.ndarray
    sharpness: np.ndarray
    lam_min: np.ndarray
    final: dict  # lambda_1, lambda_n, grad norm, window, c at the end


def figure5(cfg, rng: np.random.Generator) -> EosRun:
    """GD at ``mlp_lr`` on ``mlp_samples`` digits, one tanh hidden layer of ``mlp_width``; exact Hessian (eigh)
    every ``sharp_every`` steps and at the end."""
    import torch

    from lib.common import limit_threads, torch_generator

    from .data import load_digits_images
    from .nets import FlatModel, full_hessian, make_objective, small_mlp, train

    data = load_digits_images(cfg.mlp_samples, rng)
    X = torch.from_numpy(data.X.reshape(len(data.y), -1).astype(np.float64))
    Y = torch.from_numpy(data.y)
    with limit_threads(1):
        model = FlatModel(small_mlp(X.shape[1], cfg.mlp_width, 10), dtype=torch.float64)
        h = train(model, X, Y, opt="gd", lr=cfg.mlp_lr, steps=cfg.mlp_steps, loss="mse", wd=cfg.mlp_wd,
                  generator=torch_generator(cfg.seed, "fig5-init"), sharpness_every=cfg.sharp_every,
                  sharpness_method="eigh")
        objective = make_objective(model, "mse", cfg.mlp_wd)
        lam = np.linalg.eigvalsh(full_hessian(objective, h.theta_final, X, Y))
        theta = h.theta_final.clone().requires_grad_(True)
        objective(theta, X, Y).backward()
        gnorm = float(theta.grad.norm())
    c = update_cosines(h.thetas)
    lam1, lamn = float(lam[0]), float(lam[-1])
    lo = 2.0 / (lam1 + lamn) if lam1 + lamn > 0 else float("inf")
    hi = 2.0 / lamn
    width = (hi - lo) / cfg.mlp_lr if np.isfinite(lo) else float("-inf")
    final = {"lambda_1": lam1, "lambda_n": lamn, "2/eta": 2.0 / cfg.mlp_lr, "grad norm": gnorm,
             "window lo = 2/(lambda_1+lambda_n)": lo, "window hi = 2/lambda_n": hi, "window width / eta": width,
             "eta in window": bool(lo < cfg.mlp_lr < hi), "late mean c": late_mean(c), "final loss": float(h.loss[-1]),
             "diverged": h.diverged}
    return EosRun(cfg.mlp_lr, cfg.mlp_wd, len(data.y), model.n_params, np.arange(len(h.loss)), h.loss, c,
                  h.sharp_at, h.sharpness, h.lam_min, final)


def claim5(run: EosRun, min_width: float = 0.01) -> tuple:
    """C5 (exploratory): the late mean ``c_k`` when Theorem 1's oscillatory window at the end point is testable
    (lambda_1 > 0, the window at least ``min_width`` of eta wide and holding eta), else None with the reason."""
    f = run.final
    if not f["lambda_1"] > 0:
        return None, f"not testable: lambda_1 = {f['lambda_1']:.3g} <= 0 at the end point (not a strict minimum)"
    if not f["window width / eta"] >= min_width:
        return None, f"window too narrow to test: {100 * f['window width / eta']:.2g}% of eta (< 1%)"
    if not f["eta in window"]:
        return None, "not testable: eta lies outside the window (2/(lambda_1+lambda_n), 2/lambda_n)"
    return f["late mean c"], "testable"


__all__ = [
    "FIG1_ETAS", "FIG2_ETAS", "WINDOW", "figure1", "figure2", "figure3", "figure4", "figure5", "figure6",
    "toy_table", "fc_limit_directions", "claim1", "claim2", "claim3", "claim3b", "claim4", "claim5",
    "sharpness_gradient", "ratio_spread", "late_mean", "C4_THRESHOLDS",
]
