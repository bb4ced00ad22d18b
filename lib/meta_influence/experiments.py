"""One function per figure: each returns plain results (DataFrames, dicts) for the notebook and the claims."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import roc_auc_score, roc_curve

from lib.common import limit_threads

from . import bilevel as B
from . import influence as I
from .data import MetaData, make_meta_data


@dataclass
class Base:
    """The trained setting-A model: data, lam*, the derivatives at the inner solutions, grad phi."""

    md: MetaData
    res: B.OuterResult
    tg: I.TestGrad
    mu: float
    rho: float
    train_seconds: float
    test_acc: float


@limit_threads(1)
def train_base(cfg) -> Base:
    rng = cfg.rng("data")
    md = make_meta_data(rng, cfg.n_tasks, cfg.n_test_tasks, n_way=cfg.n_way, k_shot=cfg.k_shot, q_shot=cfg.q_shot,
                        task_noise=cfg.task_noise, instance_noise=cfg.instance_noise, data_path=cfg.data_path)
    t0 = time.perf_counter()
    res = B.outer_solve(md.train, cfg.mu, cfg.rho)
    secs = time.perf_counter() - t0
    tg = I.test_gradient(res.lam, md.test, cfg.mu)
    _, acc = B.adapt_and_eval(res.lam, md.test, cfg.mu)
    return Base(md, res, tg, cfg.mu, cfg.rho, secs, float(acc[0]))


def _loto(base: Base, ks: np.ndarray):
    """LOTO retraining of the tasks ks as its best user would run it, from (lam*, theta*(lam*)) alone: the per-task
    total-Hessian contributions at lam* (same code as the IF's), the inverse Newton matrix H - H_k of each edited
    problem, warm-started Broyden quasi-Newton re-solves to ||grad F|| < 1e-10 (inner problems by chord steps with the
    inner Newton matrices at theta*), then the meta-test loss at each retrained lam (test tasks warm-started)."""
    md, mu, rho = base.md, base.mu, base.rho
    c = B.Counter()
    sol = B.inner_solve(base.res.lam, md.train, mu, theta0=base.res.sol.theta, counter=c)
    der = B.task_derivatives(sol, md.train, mu, c, explicit=False)
    H = der.H_full.sum(0) + rho * np.eye(md.train.dim)
    W = np.ones((len(ks), len(md.train)))
    W[np.arange(len(ks)), ks] = 0.0
    Hc_inv = np.linalg.inv(H[None] - der.H_full[ks])
    c.big_factorisations += len(ks)
    rt = B.retrain(md.train, mu, rho, base.res.lam, sol.theta, W, Hc_inv)
    c.add(rt.counter)
    test_sol = B.inner_solve(base.res.lam, md.test, mu, counter=c)
    phi0 = float(B.query_grad(test_sol.theta, md.test)[0].mean())
    warm = B.WarmInner(md.test, mu, test_sol.theta, counter=c)
    phi, acc = B.adapt_and_eval(rt.lam, md.test, mu, counter=c, warm=warm)
    return phi - phi0, acc, rt, c


@limit_threads(1)
def task_if_vs_loto(cfg, base: Base) -> dict:
    """Figure 1 + 2: task-IF (full, surrogate, first-order, TracIn) against LOTO retraining, with the costs.

    Both timed computations start from (lam*, theta*(lam*)) and compute everything they use (see :func:`_loto` and
    :func:`influence.all_task_if`). Timing is interleaved: all-task IF, LOTO, all-task IF (IF's time is the mean of
    its two runs). The surrogate / first-order / TracIn variants are computed afterwards, untimed."""
    T = len(base.md.train)
    ks = np.arange(T) if cfg.n_loto >= T else np.sort(cfg.rng("loto").choice(T, cfg.n_loto, replace=False))
    tif_runs = []
    for rep in range(2):
        if rep == 1:
            t0 = time.perf_counter()
            actual, acc, rt, loto_count = _loto(base, ks)
            loto_secs = time.perf_counter() - t0
        t0 = time.perf_counter()
        ati = I.all_task_if(base.res.lam, base.res.sol.theta, base.md.train, base.md.test, base.mu, base.rho)
        tif_runs.append(time.perf_counter() - t0)
    tif = I.task_if(base.res, base.tg, base.rho)
    df = pd.DataFrame({"task": ks, "actual": actual, "full": ati.scores[ks], "surrogate": tif.surrogate[ks],
                       "first_order": tif.first_order[ks], "tracin": tif.tracin[ks],
                       "noisy": base.md.noisy_tasks[ks], "acc_after": acc})
    stats = {}
    for col in ("full", "surrogate", "first_order", "tracin"):
        stats[col] = {"pearson": float(pearsonr(df[col], df.actual)[0]),
                      "spearman": float(spearmanr(df[col], df.actual)[0])}
    dl_act = rt.lam - base.res.lam
    dl_pred = ati.dlam[ks]
    cos = np.einsum("pd,pd->p", dl_act, dl_pred) / (np.linalg.norm(dl_act, axis=1) * np.linalg.norm(dl_pred, axis=1))
    if_secs = float(np.mean(tif_runs))
    ic, lc = ati.counter, loto_count
    cost = {"if_seconds": if_secs, "if_seconds_runs": tif_runs, "loto_seconds": loto_secs,
            "time_ratio": if_secs / loto_secs, "solve_ratio": ic.inner_solves / lc.inner_solves,
            "n_loto": len(ks), "if_factorisation": ati.factorisation,
            "loto_max_grad": float(rt.grad_norm.max()), "dlam_cosine_min": float(cos.min()),
            "if_vs_reference_rel": float(np.abs(ati.scores - tif.full).max() / np.abs(tif.full).max())}
    counts = pd.DataFrame({"all-task IF": ic.as_dict(), "LOTO": lc.as_dict()})
    counts.loc["seconds (interleaved)"] = [if_secs, loto_secs]
    counts = counts.rename(index={"inner_solves": "inner argmin solves", "inner_newton": "inner Newton steps",
                                  "inner_chord": "inner chord steps (stored inverse)",
                                  "outer_iters": "outer quasi-Newton steps",
                                  "small_factorisations": "nC x nC factorisations (nC = 125)",
                                  "big_factorisations": "D x D factorisations (D = 325)"})
    return {"df": df, "stats": stats, "cost": cost, "counts": counts, "tif": tif, "ati": ati,
            "max_grad": float(rt.grad_norm.max())}


@limit_threads(1)
def ihvp_efficiency(cfg, base: Base, tif: I.TaskIF) -> dict:
    """Figure 6: task-IF through CG and Neumann IHVPs against the exact solve."""
    out = I.ihvp_study(tif.H, base.tg.grad_full, base.res.der.G, cfg.cg_iters, cfg.neumann_terms)
    at = {"cg": min(cfg.cg_check, cfg.cg_iters), "neumann": min(cfg.neumann_check, cfg.neumann_terms)}
    out["check"] = {k: float(out[k]["pearson"][at[k] - 1]) for k in ("cg", "neumann")}
    out["at"] = at
    return out


def _removed_tasks_eval(base: Base, sets: list[np.ndarray]):
    T = len(base.md.train)
    W = np.ones((len(sets), T))
    H = I.total_hessian(base.res, base.rho, "full")
    Hc = np.repeat(H[None], len(sets), axis=0)
    for p, sset in enumerate(sets):
        W[p, sset] = 0.0
        Hc[p] -= base.res.der.H_full[sset].sum(0)
    rt = B.retrain(base.md.train, base.mu, base.rho, base.res.lam, base.res.sol.theta, W, np.linalg.inv(Hc))
    loss, acc = B.adapt_and_eval(rt.lam, base.md.test, base.mu, warm=B.WarmInner(base.md.test, base.mu, base.tg.theta))
    return loss, acc, rt


@limit_threads(1)
def task_cleaning(cfg, base: Base, tif: I.TaskIF) -> dict:
    """Figure 3: meta-test loss/accuracy after removing the m most harmful tasks (by each score) vs random."""
    T = len(base.md.train)
    budgets = sorted({max(1, int(round(f * T))) for f in cfg.clean_fracs})
    der = base.res.der
    scores = {"task-IF": tif.full, "first-order IF": tif.first_order, "TracIn": tif.tracin,
              "highest loss": -der.loss_val}  # ascending = remove first (most negative predicted change)
    sets, labels = [], []
    for name, sc in scores.items():
        order = np.argsort(sc)
        for m in budgets:
            sets.append(order[:m])
            labels.append((name, m, 0))
    rng = cfg.rng("clean")
    for r in range(cfg.n_random):
        for m in budgets:
            sets.append(rng.choice(T, m, replace=False))
            labels.append(("random", m, r))
    loss, acc, rt = _removed_tasks_eval(base, sets)
    rows = [{"method": n, "m": m, "draw": r, "test_loss": l, "test_acc": a,
             "noisy_recall": base.md.noisy_tasks[s].sum() / max(1, base.md.noisy_tasks.sum())}
            for (n, m, r), l, a, s in zip(labels, loss, acc, sets)]
    df = pd.DataFrame(rows)
    base_row = {"test_loss": base.tg.phi, "test_acc": base.test_acc}
    m10 = max(1, int(round(0.1 * T)))
    m20 = max(1, int(round(0.2 * T)))
    order = np.argsort(tif.full)
    rec = {f"recall@{m}": float(base.md.noisy_tasks[order[:m]].sum() / max(1, base.md.noisy_tasks.sum()))
           for m in (m10, m20)}
    out = {"df": df, "base": base_row, "budgets": budgets, "recall": rec, "m10": m10, "m20": m20,
           "max_grad": float(rt.grad_norm.max())}
    if m10 in budgets:
        rnd = df[(df.method == "random") & (df.m == m10)].test_loss
        tif_loss = float(df[(df.method == "task-IF") & (df.m == m10)].test_loss.iloc[0])
        out["c3_margin_sd"] = float((rnd.mean() - tif_loss) / max(rnd.std(ddof=1), 1e-12))
    return out


@limit_threads(1)
def instance_cleaning(cfg, base: Base, tif: I.TaskIF) -> dict:
    """Figure 4: flipped-label detection by instance-IF and baselines; instance-LOO on a sample."""
    tasks = base.md.train
    T, n = tasks.ys.shape
    iif = I.instance_if(base.res, tasks, base.tg, tif.H, base.mu)
    clean_tasks = ~base.md.noisy_tasks
    y = base.md.flipped[clean_tasks].ravel()
    scores = {"instance-IF": -iif.own[clean_tasks].ravel(),  # harmful: removal lowers the task's query loss
              "first-order IF": -iif.own_first_order[clean_tasks].ravel(),
              "TracIn": -iif.tracin[clean_tasks].ravel(),
              "support loss": iif.loss[clean_tasks].ravel(),
              "instance-IF (meta-test phi)": -iif.dphi[clean_tasks].ravel()}
    k = int(y.sum())
    metrics, rocs = {}, {}
    for name, sc in scores.items():
        fpr, tpr, _ = roc_curve(y, sc)
        rocs[name] = (fpr, tpr)
        top = np.argsort(-sc)[:k]
        ks = np.arange(1, len(sc) + 1)
        prec_curve = np.cumsum(y[np.argsort(-sc)]) / ks
        metrics[name] = {"auroc": float(roc_auc_score(y, sc)), "precision@k": float(y[top].mean()),
                         "prec_curve": prec_curve}
    # instance-LOO ground truth on a sample: half flipped, half clean points of clean-label tasks
    rng = cfg.rng("iloo")
    cand_f = np.argwhere(base.md.flipped & clean_tasks[:, None])
    cand_c = np.argwhere(~base.md.flipped & clean_tasks[:, None])
    nf = min(len(cand_f), cfg.n_loo // 2)
    pts = np.concatenate([cand_f[rng.choice(len(cand_f), nf, replace=False)],
                          cand_c[rng.choice(len(cand_c), cfg.n_loo - nf, replace=False)]])
    S = np.repeat(tasks.s[None], len(pts), axis=0)
    S[np.arange(len(pts)), pts[:, 0], pts[:, 1]] = 0.0
    Hc_inv = np.repeat(np.linalg.inv(tif.H)[None], len(pts), axis=0)
    W = np.ones((len(pts), T))
    rt = B.retrain(tasks, base.mu, base.rho, base.res.lam, base.res.sol.theta, W, Hc_inv, S=S)
    phi, _ = B.adapt_and_eval(rt.lam, base.md.test, base.mu, warm=B.WarmInner(base.md.test, base.mu, base.tg.theta))
    own_after = np.array([B.query_grad(rt.theta[p, pts[p, 0]][None], tasks.take([pts[p, 0]]))[0][0]
                          for p in range(len(pts))])
    own_before = base.res.der.loss_val[pts[:, 0]]
    loo = pd.DataFrame({"task": pts[:, 0], "point": pts[:, 1], "flipped": base.md.flipped[pts[:, 0], pts[:, 1]],
                        "actual_own": own_after - own_before, "pred_own": iif.own[pts[:, 0], pts[:, 1]],
                        "pred_direct": iif.own_direct[pts[:, 0], pts[:, 1]],
                        "actual_phi": phi - base.tg.phi, "pred_phi": iif.dphi[pts[:, 0], pts[:, 1]]})
    corr = {"own_pearson": float(pearsonr(loo.pred_own, loo.actual_own)[0]),
            "phi_pearson": float(pearsonr(loo.pred_phi, loo.actual_phi)[0]),
            "indirect_share": float(np.abs(iif.own_indirect).sum() / np.abs(iif.own).sum())}
    return {"iif": iif, "metrics": metrics, "rocs": rocs, "k": k, "loo": loo, "loo_corr": corr,
            "max_grad": float(rt.grad_norm.max())}


@limit_threads(1)
def model_editing(cfg, base: Base, tif: I.TaskIF, inst: dict) -> pd.DataFrame:
    """Figure 5: remove the top-m harmful support points (m = number flipped) by lam* + delta lam (IF) vs retraining
    without them vs no edit; meta-train query accuracy (clean-label tasks, edited theta_k) and meta-test accuracy."""
    tasks = base.md.train
    T, n = tasks.ys.shape
    iif = inst["iif"]
    clean_tasks = ~base.md.noisy_tasks
    sc = np.where(clean_tasks[:, None], -iif.own, -np.inf).ravel()
    m = inst["k"]
    top = np.argsort(-sc)[:m]
    pts = [(int(i // n), int(i % n)) for i in top]
    dlam, dtheta = I.edit_vectors(base.res, tasks, tif.H, pts, base.mu)
    S = tasks.s.copy()
    for k, j in pts:
        S[k, j] = 0.0
    rt = B.retrain(tasks, base.mu, base.rho, base.res.lam, base.res.sol.theta, np.ones((1, T)),
                   np.linalg.inv(tif.H)[None], S=S[None])
    theta0 = base.res.sol.theta
    thetas = {"no edit": theta0, "IF edit": theta0 + dtheta.reshape(theta0.shape), "retrain": rt.theta[0]}
    lams = {"no edit": base.res.lam, "IF edit": base.res.lam + dlam, "retrain": rt.lam[0]}
    clean = tasks.take(np.flatnonzero(clean_tasks))
    rows = []
    for name in ("no edit", "IF edit", "retrain"):
        tr_acc = float(B.query_accuracy(thetas[name][clean_tasks], clean).mean())
        tr_loss = float(B.query_grad(thetas[name][clean_tasks], clean)[0].mean())
        te_loss, te_acc = B.adapt_and_eval(lams[name], base.md.test, base.mu)
        rows.append({"model": name, "train_query_acc": tr_acc, "train_query_loss": tr_loss,
                     "test_acc": float(te_acc[0]), "test_loss": float(te_loss[0])})
    df = pd.DataFrame(rows).set_index("model")
    df.attrs["m"] = m
    df.attrs["precision"] = float(base.md.flipped.ravel()[top].mean())
    df.attrs["lam_rel_err"] = float(np.linalg.norm(dlam - (rt.lam[0] - base.res.lam))
                                    / np.linalg.norm(rt.lam[0] - base.res.lam))
    return df


def _mlp_task_if_vs_loto(cfg, tr, te, noisy: np.ndarray, n_loto: int, stream: str) -> dict:
    """Task-IF (full, surrogate, first-order, TracIn) vs LOTO for an MLP inner model (:mod:`.mlp`): lam* by L-BFGS
    then Newton-CG to ||grad F|| < 1e-9 from an initialisation drawn from stream "init_<stream>"; task-IF by one CG
    solve per Hessian variant; LOTO on n_loto tasks (stream "loto_<stream>") by warm-started inexact Newton-CG."""
    import torch

    from . import mlp as M

    T = len(tr)
    gen = torch.Generator().manual_seed(int(cfg.rng(f"init_{stream}").integers(2**31)))
    t0 = time.perf_counter()
    res = M.outer_solve(tr, cfg.mu, cfg.rho, M.init_lam(tr, gen))
    train_secs = time.perf_counter() - t0
    phi0, _, _, test_pt = M.phi_grad(res.lam, te, cfg.mu)
    t0 = time.perf_counter()
    tif = M.task_if_b(res, tr, te, cfg.mu, cfg.rho)
    if_secs = time.perf_counter() - t0
    ks = np.sort(cfg.rng(f"loto_{stream}").choice(T, n_loto, replace=False))
    actual, grads, loto_mv = [], [], 0
    t0 = time.perf_counter()
    for k in ks:
        w = torch.ones(T, dtype=M.DTYPE)
        w[k] = 0.0
        r = M.newton_outer(tr, cfg.mu, cfg.rho, w, res.lam, res.pt.theta)
        actual.append(M.phi_grad(r.lam, te, cfg.mu, test_pt.theta)[0] - phi0)
        grads.append(r.grad_norm)
        loto_mv += r.matvecs
    loto_secs = time.perf_counter() - t0
    df = pd.DataFrame({"task": ks, "actual": actual, "full": tif.full[ks], "surrogate": tif.surrogate[ks],
                       "first_order": tif.first_order[ks], "tracin": tif.tracin[ks], "noisy": noisy[ks]})
    stats = {col: {"pearson": float(pearsonr(df[col], df.actual)[0]),
                   "spearman": float(spearmanr(df[col], df.actual)[0])}
             for col in ("full", "surrogate", "first_order", "tracin")}
    return {"df": df, "stats": stats, "max_grad": float(max(grads)), "lam_grad": res.grad_norm, "dim": tr.dim,
            "T": T, "n_test": len(te), "n_loto": n_loto, "phi": phi0, "train_seconds": train_secs,
            "if_seconds": if_secs, "loto_seconds": loto_secs, "if_matvecs": tif.matvecs, "loto_matvecs": loto_mv}


@limit_threads(1)
def setting_b(cfg, n_tasks: int | None = None, n_test_tasks: int | None = None, n_loto: int | None = None):
    """Figure 1, panel B (full mode only; returns None in quick mode): task-IF (full, surrogate, first-order, TracIn)
    against LOTO retraining for the MLP 64-32-5 inner model (:mod:`.mlp`), on tasks drawn like setting A's (own
    stream "data_b"). lam* by L-BFGS then Newton-CG to ||grad F|| < 1e-9; task-IF by one CG solve on the exact total
    Hessian (HVPs by torch.func); LOTO on n_loto sampled tasks by
    warm-started inexact Newton-CG (:func:`.mlp.newton_outer`) to ||grad F|| < 1e-9."""
    if cfg.mode != "full" and n_tasks is None:
        return None
    from . import mlp as M

    T = n_tasks or cfg.b_tasks
    Tt = n_test_tasks or cfg.b_test_tasks
    nl = min(n_loto or cfg.b_loto, T)
    md = make_meta_data(cfg.rng("data_b"), T, Tt, n_way=cfg.n_way, k_shot=cfg.k_shot, q_shot=cfg.q_shot,
                        task_noise=cfg.task_noise, instance_noise=cfg.instance_noise, data_path=cfg.data_path)
    return _mlp_task_if_vs_loto(cfg, M.from_tasks(md.train), M.from_tasks(md.test), md.noisy_tasks, nl, "b")


@limit_threads(1)
def sinusoids(cfg, n_tasks: int | None = None, n_test_tasks: int | None = None, n_loto: int | None = None,
              k_shot: int = 10, hid: int = 40):
    """Figure 1c (full mode only; returns None in quick mode unless n_tasks is given): task-IF vs LOTO on the sinusoid
    regression benchmark (amplitude in [0.1, 5], phase in [0, pi], K = k_shot support and 10 query points per task;
    inner model an MLP 1-hid(tanh)-1 with half squared error), with setting B's machinery
    (:func:`_mlp_task_if_vs_loto`; streams "data_sine_*", "init_sine", "loto_sine"). Sizes (None): cfg.sine_tasks,
    cfg.sine_test_tasks, cfg.sine_loto (50 / 20 / 25 in full mode)."""
    if cfg.mode != "full" and n_tasks is None:
        return None
    from . import mlp as M

    T = n_tasks or cfg.sine_tasks
    Tt = n_test_tasks or cfg.sine_test_tasks
    nl = min(n_loto or cfg.sine_loto, T)
    tr = M.make_sine_tasks(cfg.rng("data_sine_train"), T, k_shot=k_shot, hid=hid)
    te = M.make_sine_tasks(cfg.rng("data_sine_test"), Tt, k_shot=k_shot, hid=hid)
    out = _mlp_task_if_vs_loto(cfg, tr.tasks, te.tasks, np.zeros(T, dtype=bool), nl, "sine")
    out["amp"], out["phase"] = tr.amp, tr.phase
    return out
