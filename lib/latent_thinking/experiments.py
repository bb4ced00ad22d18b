"""What each figure runs. Every function returns plain results (dicts of arrays, DataFrames)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.common import limit_threads

from . import lrm as L
from . import lto
from .model import sample
from .tasks import LENGTHS, CharTokenizer, make_task

METHODS = ("base", "majority", "coe", "weighted_mv", "best_of_n", "lto")
LABELS = {"base": "Base", "majority": "Majority voting", "coe": "CoE-style heuristic",
          "weighted_mv": "Weighted MV w. LRM", "best_of_n": "Best-of-N w. LRM", "lto": "LTO w. LRM"}


def load_model(cfg):
    """The depth-recurrent LM: the shipped checkpoint (``cfg.pretrained``) or trained here with the run's seed."""
    from .make_checkpoint import RECIPE, checkpoint_path, train_recipe
    from .model import load_checkpoint

    if cfg.pretrained:
        return load_checkpoint(checkpoint_path(), RECIPE), CharTokenizer()
    extra = dict(cfg.full_recipe)
    arch = dict(RECIPE["arch"], **{k: extra.pop(k) for k in list(extra) if k in RECIPE["arch"]})
    recipe = dict(RECIPE, arch=arch, **extra)
    with limit_threads(1):
        model, _, tok = train_recipe(recipe, seed=cfg.seed, verbose=True)
    return model, tok


def _split(cfg, task, steps, decode_at=None, n_train=None, n_test=None):
    model, tok = cfg._model
    out = {}
    for part, n in (("train", n_train or cfg.n_train), ("test", n_test or cfg.n_test)):
        ts = make_task(task, n, cfg.rng(f"{task}-{part}-{steps}"))
        s = sample(model, tok, ts.prompts, n_samples=cfg.n_samples, steps=steps, sigma=cfg.sigma,
                   step_noise=cfg.step_noise,
                   seed=int(cfg.rng(f"noise-{task}-{part}-{steps}").integers(2**31)), decode_at=decode_at)
        s["truth"] = ts.answers
        s["prompts"] = ts.prompts
        s["correct"] = s["answers"] == ts.answers[:, None]
        out[part] = s
    return out


@limit_threads(1)
def collect(cfg, model, tok):
    """Trajectories of every task (train and test questions, N samples each, T steps) and one LRM per task."""
    cfg.params["_model"] = (model, tok)
    data = {}
    for task in cfg.tasks:
        d = _split(cfg, task, cfg.steps)
        tr = d["train"]
        d["lrm"] = L.train_lrm(tr["thoughts"], tr["correct"], steps=cfg.lrm_steps, seed=cfg.seed)
        d["rewards"] = d["lrm"].reward(d["test"]["thoughts"])
        data[task] = d
    return data


def summary(data):
    rows = []
    for task, d in data.items():
        te = d["test"]
        n_unique = np.array([len(set(a)) for a in te["answers"]])
        rows.append({"task": task, "base accuracy": te["correct"].mean(),
                     "any correct (pass@N)": te["correct"].any(1).mean(),
                     "mean distinct answers": n_unique.mean(), "questions with >1 answer": (n_unique > 1).mean()})
    return pd.DataFrame(rows).set_index("task")


def pca_trajectories(data, task, n_questions=3):
    """Figure 1: 2-D PCA of the per-step thoughts of questions that have correct and incorrect samples."""
    from sklearn.decomposition import PCA

    te = data[task]["test"]
    c = te["correct"]
    mixed = np.flatnonzero((c.mean(1) > 0.15) & (c.mean(1) < 0.85))
    qs = mixed[:n_questions] if mixed.size else np.arange(n_questions)
    out = []
    for q in qs:
        X = te["thoughts"][q]  # [N, T, d]
        pca = PCA(n_components=2, random_state=0).fit(X.reshape(-1, X.shape[-1]))
        out.append({"question": te["prompts"][q], "truth": int(te["truth"][q]), "xy": pca.transform(
            X.reshape(-1, X.shape[-1])).reshape(X.shape[0], X.shape[1], 2), "correct": c[q],
            "answers": te["answers"][q]})
    return out


@limit_threads(1)
def rep_metrics(cfg, task="arith", n_questions=None):
    """Figure 2: per-step entropy, effective rank, anisotropy (token-state matrices) and TwoNN dimension (of the
    cloud of per-step thoughts), averaged separately over correct and incorrect trajectories."""
    model, tok = cfg._model
    n_questions = n_questions or cfg.f2_questions
    ts = make_task(task, n_questions, cfg.rng(f"f2-{task}"), lengths=(max(LENGTHS[task]),))  # one prompt length
    s = sample(model, tok, ts.prompts, n_samples=cfg.n_samples, steps=cfg.steps, sigma=cfg.sigma,
               step_noise=cfg.step_noise, seed=int(cfg.rng("f2-noise").integers(2**31)), keep_tokens=n_questions)
    correct = s["answers"] == ts.answers[:, None]
    H, er, an = L.spectrum_metrics(s["tokens"])  # [Q, N, T]
    rows = []
    m = s["thoughts"]
    rng = cfg.rng("f2-twonn")
    n_min = int(min(correct.sum(), (~correct).sum()))
    for t in range(cfg.steps):
        for lab, mask in (("correct", correct), ("incorrect", ~correct)):
            X = m[..., t, :][mask]
            X = X[rng.permutation(len(X))[:n_min]]
            rows.append({"step": t + 1, "group": lab, "entropy": H[..., t][mask].mean(),
                         "effective rank": er[..., t][mask].mean(), "anisotropy": an[..., t][mask].mean(),
                         "TwoNN dimension": L.twonn_dimension(X) if len(X) > 3 else np.nan})
    return pd.DataFrame(rows)


def auc_curves(data):
    """Figure 3: held-out-question ROC-AUC of the LRM read after k = 1..T steps."""
    rows = []
    for task, d in data.items():
        te = d["test"]
        a = L.auc_vs_steps(d["lrm"], te["thoughts"], te["correct"])
        rows += [{"task": task, "steps used": k + 1, "AUC": v} for k, v in enumerate(a)]
    return pd.DataFrame(rows)


def method_accuracy(cfg, data):
    """Figure 4 (Table 1): per-question correctness of every method on the same N candidates, per task."""
    out = {}
    for task, d in data.items():
        te = d["test"]
        out[task] = lto.method_table(te["answers"], te["truth"], d["rewards"], te["thoughts"],
                                     cfg.rng(f"lto-{task}"), beta=cfg.beta, M=cfg.M, reps=cfg.reps)
    return out


def accuracy_frame(per_q, rng):
    rows = []
    for task, res in per_q.items():
        for m in METHODS:
            _, lo, hi = lto.paired_bootstrap(res[m], np.zeros_like(res[m]), rng, n_boot=1000)
            rows.append({"task": task, "method": LABELS[m], "accuracy": res[m].mean(), "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


@limit_threads(1)
def transfer(cfg, data):
    """Figure 5: LRM trained on task A (or on all tasks: 'general') scored on task B's test trajectories."""
    general = L.train_lrm(np.concatenate([d["train"]["thoughts"].reshape(-1, *d["train"]["thoughts"].shape[-2:])
                                          for d in data.values()]),
                          np.concatenate([d["train"]["correct"].ravel() for d in data.values()]),
                          steps=cfg.lrm_steps, seed=cfg.seed)
    lrms = {f"LRM({a})": d["lrm"] for a, d in data.items()}
    lrms["general LRM"] = general
    rows = []
    for name, model in lrms.items():
        for b, d in data.items():
            te = d["test"]
            r = model.reward(te["thoughts"])
            gain = lto.expected_lto(r, te["correct"], cfg.beta).mean() - te["correct"].mean()
            rows.append({"LRM": name, "test task": b, "AUC": L.auc(te["correct"], r), "LTO gain": gain})
    return pd.DataFrame(rows)


@limit_threads(1)
def depth_gain(cfg, task="arith"):
    """Figure 6 (Table A3): one depth-max(T) run decoded at each T of ``cfg.depths``; an LRM per T on the first T
    steps; accuracy of base and LTO (expected over Algorithm 1's randomness) at each T."""
    tmax = max(cfg.depths)
    d = _split(cfg, task, tmax, decode_at=list(cfg.depths), n_train=cfg.depth_n, n_test=cfg.depth_n)
    rows = []
    for T in cfg.depths:
        ytr = d["train"]["answers_at"][T] == d["train"]["truth"][:, None]
        yte = d["test"]["answers_at"][T] == d["test"]["truth"][:, None]
        m = L.train_lrm(d["train"]["thoughts"][..., :T, :], ytr, steps=cfg.lrm_steps, seed=cfg.seed)
        r = m.reward(d["test"]["thoughts"][..., :T, :])
        base = yte.mean()
        lt = lto.expected_lto(r, yte, cfg.beta).mean()
        rows.append({"T": T, "base": base, "majority": lto.vote_correct(d["test"]["answers_at"][T],
                                                                         d["test"]["truth"]).mean(),
                     "LTO": lt, "gain": lt - base, "AUC": L.auc(yte, r),
                     "distinct answers": np.mean([len(set(a)) for a in d["test"]["answers_at"][T]])})
    return pd.DataFrame(rows)


def n_beta_sweep(cfg, data):
    """Figure 7 (Figs A4/A5): expected accuracy vs the number of candidates N and vs beta (pooled over tasks)."""
    rows_n, rows_b = [], []
    ans = np.concatenate([d["test"]["answers"] for d in data.values()])
    truth = np.concatenate([d["test"]["truth"] for d in data.values()])
    rew = np.concatenate([d["rewards"] for d in data.values()])
    corr = (ans == truth[:, None]).astype(float)
    for n in range(1, ans.shape[1] + 1):
        a, r, c = ans[:, :n], rew[:, :n], corr[:, :n]
        rows_n.append({"N": n, "Base": c.mean(), "Majority voting": lto.vote_correct(a, truth).mean(),
                       "Best-of-N w. LRM": lto.select_correct(r, c).mean(),
                       "LTO w. LRM": lto.expected_lto(r, c, cfg.beta).mean()})
    for b in cfg.betas:
        rows_b.append({"beta": b, "LTO w. LRM": lto.expected_lto(rew, corr, b).mean()})
    ref = {"Base": corr.mean(), "Best-of-N w. LRM": lto.select_correct(rew, corr).mean(),
           "Majority voting": lto.vote_correct(ans, truth).mean()}
    return pd.DataFrame(rows_n), pd.DataFrame(rows_b), ref


def theorem2_toy(cfg, rewards=(0.95, 0.8, 0.6, 0.6, 0.3, 0.1), beta=0.2, runs=20000):
    """Figure 8: frequencies of the accepted index of Algorithm 1 (and of the in-order sweep) vs pi_r."""
    rng = cfg.rng("toy")
    r = np.tile(np.asarray(rewards, float), (runs, 1))
    idx, n_prop = lto.accept_reject(r, beta, rng)
    sweep = lto.sweep_accept(r, beta, rng)
    N = len(rewards)
    target = lto.target_probs(np.asarray(rewards, float), beta)
    f_ar = np.bincount(idx[:, 0], minlength=N) / runs
    f_sw = np.bincount(sweep, minlength=N) / runs
    return {"rewards": np.asarray(rewards), "beta": beta, "target": target, "accept_reject": f_ar, "sweep": f_sw,
            "tv_accept_reject": 0.5 * np.abs(f_ar - target).sum(), "tv_sweep": 0.5 * np.abs(f_sw - target).sum(),
            "mean_proposals": float(n_prop.mean()), "runs": runs}


def c3_stats(per_q, rng):
    """Claim 3 on the pooled test questions of all tasks: LTO - base, LTO - MV, and the paired bootstrap CI."""
    lt = np.concatenate([r["lto"] for r in per_q.values()])
    base = np.concatenate([r["base"] for r in per_q.values()])
    mv = np.concatenate([r["majority"] for r in per_q.values()])
    m1, lo1, hi1 = lto.paired_bootstrap(lt, base, rng)
    m2, lo2, hi2 = lto.paired_bootstrap(lt, mv, rng)
    return {"lto_minus_base": m1, "lto_minus_base_lo": lo1, "lto_minus_base_hi": hi1,
            "lto_minus_mv": m2, "lto_minus_mv_lo": lo2, "lto_minus_mv_hi": hi2}


def diversity(data):
    """Fraction of test questions (all tasks) whose N candidates give more than one distinct answer."""
    return float(np.mean(np.concatenate([[len(set(a)) > 1 for a in d["test"]["answers"]] for d in data.values()])))


def c4_stats(db, ref, data, min_diversity=0.05):
    """Claim 4's numbers. Without answer diversity every selector equals base and C4a would hold vacuously: its
    measured value is then NaN (untestable, so the check fails) instead of 0."""
    b = db.set_index("beta")["LTO w. LRM"]
    in_range = b[(b.index >= 1e-3) & (b.index <= 1e-1)]
    testable = diversity(data) >= min_diversity
    return {"min_gain_in_range": float(in_range.min() - ref["Base"]) if testable else float("nan"),
            "gap_bon": float(abs(b.loc[1e-3] - ref["Best-of-N w. LRM"])),
            "gap_base": float(max(abs(b.loc[x] - ref["Base"]) for x in b.index if x >= 10))}


def online_note(cfg):
    """What the online path does with a user's GSM8K file / hub model (read and checked; not run here)."""
    parts = []
    if cfg.data_path is not None:
        from .gsm8k import read_gsm8k

        q, a = read_gsm8k(cfg.data_path)
        parts.append(f"data_path: {len(q)} GSM8K questions read (first answer {a[0]:g}); the tiny model cannot "
                     f"answer them, so the figures below use the generated tasks")
    if cfg.model_name is not None:
        parts.append(f"model_name={cfg.model_name!r} is in the local cache; running its latent trajectories "
                     f"(num_steps, remote code) is not implemented in this notebook: the tiny model is used")
    return "\n".join(parts)
