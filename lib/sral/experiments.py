"""One function per figure and claim of the SRAL notebook; each returns plain results (DataFrames, arrays)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from lib.common import data_dir, limit_threads

from . import data as D
from .metrics import graded_relevance, map_at_k, ndcg_at_k, pairwise_dist, spearman_rows
from .model import TrainSpec, encode, train_classifier, train_pairs

# name -> (pool, aux): the encoders compared (same phi, head, optimiser, epochs and learning-rate grid)
ENCODERS = {
    "DeepSets": ("mean", "none"),
    "SetTransformer-lite": ("settf", "none"),
    "PSWE": ("sw", "none"),
    "PSWE + random δ": ("sw", "random"),
    "PSWE + input δ": ("sw", "input"),
    "SRAL (PSWE)": ("sw", "sral"),
    "SRAL (DeepSets)": ("mean", "sral"),
}
QUICK_ENCODERS = ["DeepSets", "PSWE", "SRAL (PSWE)"]


@dataclass
class TaskR:
    db_X: np.ndarray
    db_mask: np.ndarray
    q_X: np.ndarray
    q_mask: np.ndarray
    w2: np.ndarray  # (n_queries, n_db) exact W2
    relevance: np.ndarray
    db_sets: list
    q_sets: list


def load_task_r(path=None) -> TaskR:
    """The committed evaluation sets (regenerated from their seed) and their exact W2 from ``data/sral/``."""
    path = data_dir("sral") / "task_r_w2.npz" if path is None else path
    z = np.load(path)
    db, _, queries, _ = D.task_r_eval_sets(int(z["seed"]))
    if str(z["fingerprint"]) != D.fingerprint(db + queries):
        raise RuntimeError(f"{path}: its fingerprint does not match the regenerated sets (numpy changed the "
                           "generator?): rerun python -m lib.sral.make_data")
    w2 = z["w2"].astype(float).T
    dbX, dbm = D.pad_sets(db, D.N_RANGE[1])
    qX, qm = D.pad_sets(queries, D.N_RANGE[1])
    return TaskR(dbX, dbm, qX, qm, w2, graded_relevance(w2, 10), db, queries)


def train_pool(cfg_seed: int, n_dists: int, sets_per_dist: int = 4):
    """Task R's training pool for one seed (mixtures never used by the evaluation sets)."""
    rng = np.random.default_rng([cfg_seed, 11])
    sets, labels, _ = D.gmm_set_pool(n_dists, sets_per_dist, rng)
    X, m = D.pad_sets(sets, D.N_RANGE[1])
    return X, m, labels


def spec_for(name: str, base: TrainSpec) -> TrainSpec:
    pool, aux = ENCODERS[name]
    return replace(base, pool=pool, aux=aux)


@limit_threads(1)
def eval_retrieval(model, task: TaskR):
    zq, zd = encode(model, task.q_X, task.q_mask), encode(model, task.db_X, task.db_mask)
    dist = pairwise_dist(zq, zd)
    return {"NDCG@10": float(ndcg_at_k(task.relevance, -dist, 10).mean()),
            "Spearman": float(np.nanmean(spearman_rows(dist, task.w2))),
            "Recall@10": float(np.mean([len(set(np.argsort(d)[:10]) & set(np.argsort(w)[:10])) / 10
                                        for d, w in zip(dist, task.w2)]))}, dist


@limit_threads(1)
def run_task_r(names, base: TrainSpec, seed: int, task: TaskR, n_dists: int, keep_dist: bool = False):
    """Train each encoder on the seed's pool; evaluate against the exact-W2 ranking. (DataFrame, {name: dist})."""
    X, m, lab = train_pool(seed, n_dists)
    rows, dists = [], {}
    for name in names:
        model, hist = train_pairs(spec_for(name, base), X, m, lab, 4, seed)
        res, dist = eval_retrieval(model, task)
        rows.append({"encoder": name, "seed": seed, **res, "steps": hist.steps,
                     "max |δ|/ε": hist.max_delta_ratio if ENCODERS[name][1] != "none" else np.nan})
        if keep_dist:
            dists[name] = dist
    return pd.DataFrame(rows), dists


# --- specs from the configuration ---------------------------------------------------------------------------------
def base_spec(cfg, epochs=None) -> TrainSpec:
    return TrainSpec(h=cfg.h, n_slices=cfg.n_slices, n_quantiles=cfg.n_quantiles, epochs=epochs or cfg.epochs,
                     lr=cfg.lr_grid[0], beta=cfg.beta, eps=cfg.eps, pgd_steps=cfg.pgd_steps, tau_c=cfg.tau_c)


def claim_seeds(cfg) -> list:
    return [cfg.seed + k for k in range(cfg.seeds)]


def validation_task(seed: int, n_dists: int = 100, n_queries: int = 40) -> TaskR:
    """A small task-R evaluation split from its own mixtures (for the learning-rate grid; exact W2 on the fly)."""
    from .ot import ground_truth_matrix

    rng = np.random.default_rng([seed, 23])
    db, _, mixes = D.gmm_set_pool(n_dists, 4, rng)
    q = [D.sample_mixture(mixes[j], int(rng.integers(16, 49)), rng) for j in rng.choice(n_dists, n_queries, False)]
    w2 = ground_truth_matrix(q, db).T
    dbX, dbm = D.pad_sets(db, 48)
    qX, qm = D.pad_sets(q, 48)
    return TaskR(dbX, dbm, qX, qm, w2, graded_relevance(w2, 10), db, q)


@limit_threads(1)
def tune_lr(cfg, names, base: TrainSpec):
    """Each encoder's learning rate from ``cfg.lr_grid``: best validation NDCG@10 on a tuning seed (10000 + seed) kept
    apart from the claim seeds. With a one-point grid nothing is trained."""
    if len(cfg.lr_grid) == 1:
        return {n: cfg.lr_grid[0] for n in names}, pd.DataFrame()
    tseed = 10_000 + cfg.seed
    val = validation_task(tseed)
    X, m, lab = train_pool(tseed, cfg.n_train_dists)
    rows = []
    for n in names:
        for lr in cfg.lr_grid:
            model, _ = train_pairs(replace(spec_for(n, base), lr=lr), X, m, lab, 4, tseed)
            rows.append({"encoder": n, "lr": lr, "val NDCG@10": eval_retrieval(model, val)[0]["NDCG@10"]})
    df = pd.DataFrame(rows)
    best = df.loc[df.groupby("encoder")["val NDCG@10"].idxmax()].set_index("encoder")["lr"].to_dict()
    return best, df


# --- Figure 1 and 2: task R ---------------------------------------------------------------------------------------
@dataclass
class Fig1:
    table: pd.DataFrame  # one row per (encoder, seed)
    summary: pd.DataFrame  # mean and s.d. over seeds
    dists: dict  # embedding distances (queries x db) of the first seed, per encoder
    lrs: dict
    tuning: pd.DataFrame
    task: TaskR


def figure1(cfg) -> Fig1:
    task = load_task_r()
    base = base_spec(cfg)
    lrs, tuning = tune_lr(cfg, cfg.encoders, base)
    frames, dists = [], {}
    for k, s in enumerate(claim_seeds(cfg)):
        for n in cfg.encoders:
            df, dd = run_task_r([n], replace(base, lr=lrs[n]), s, task, cfg.n_train_dists, keep_dist=(k == 0))
            frames.append(df)
            dists.update(dd)
    table = pd.concat(frames, ignore_index=True)
    summary = table.groupby("encoder", sort=False)[["NDCG@10", "Spearman", "Recall@10"]].agg(["mean", "std"])
    return Fig1(table, summary, dists, lrs, tuning, task)


def mean_of(fig: Fig1, name: str, metric: str) -> float:
    return float(fig.table.loc[fig.table.encoder == name, metric].mean())


def w2_file_check(task: TaskR, n_pairs: int = 20, seed: int = 0) -> float:
    """Max |committed W2 - ot.emd2 recomputed| over random pairs (sanity: the file is what it says)."""
    from .ot import exact_w2

    rng = np.random.default_rng(seed)
    qs, js = rng.integers(0, len(task.q_sets), n_pairs), rng.integers(0, len(task.db_sets), n_pairs)
    return float(max(abs(exact_w2(task.q_sets[q], task.db_sets[j]) - task.w2[q, j]) for q, j in zip(qs, js)))


# --- Figure 3: task C (point-cloud classification) ---------------------------------------------------------------
C_ENCODERS = ["DeepSets", "SetTransformer-lite", "PSWE", "SRAL (PSWE)", "SRAL (DeepSets)"]


@limit_threads(1)
def figure3(cfg):
    """Test accuracy per encoder on point clouds (digits as 2-D clouds, or the user's OFF meshes); None when the
    mode does not run task C."""
    if "C" not in cfg.tasks and cfg.data_path is None:
        return None
    names = [n for n in (C_ENCODERS if cfg.mode == "full" else cfg.encoders) if n in ENCODERS]
    base = base_spec(cfg, epochs=cfg.cloud_epochs)
    rows = []
    for s in claim_seeds(cfg):
        rng = np.random.default_rng([s, 31])
        if cfg.data_path is None:
            cd = D.digits_cloud_data(cfg.cloud_points, rng)
        else:
            cd = D.read_modelnet(cfg.data_path, n_points=cfg.cloud_points, seed=s,
                                 max_per_class=cfg.cloud_max_per_class)
        for n in names:
            spec = replace(spec_for(n, base), batch=min(64, len(cd.X_train)))
            model, hist = train_classifier(spec, cd.X_train, cd.y_train, len(cd.classes), s)
            v = encode(model, cd.X_test, np.ones(cd.X_test.shape[:2], bool), head=True)
            rows.append({"encoder": n, "seed": s, "accuracy": float((v.argmax(1) == cd.y_test).mean()),
                         "steps": hist.steps, "data": cd.source})
    return pd.DataFrame(rows)


# --- Figure 4: ablations on task R --------------------------------------------------------------------------------
@limit_threads(1)
def figure4(cfg, fig1: Fig1):
    """NDCG@10 of SRAL (PSWE) over eps, beta, the perturbation target and L (with PSWE beside it), on the notebook's
    seed; None in quick mode."""
    if not cfg.eps_grid:
        return None
    task, s = fig1.task, cfg.seed
    base = replace(base_spec(cfg), lr=fig1.lrs.get("SRAL (PSWE)", cfg.lr_grid[0]))
    rows = []

    def one(group, value, name, spec):
        df, _ = run_task_r([name], spec, s, task, cfg.n_train_dists)
        rows.append({"ablation": group, "value": value, "encoder": name, "NDCG@10": float(df["NDCG@10"][0]),
                     "Spearman": float(df["Spearman"][0])})

    for e in cfg.eps_grid:
        one("ε", e, "SRAL (PSWE)", replace(base, eps=e))
    for b in cfg.beta_grid:
        one("β", b, "SRAL (PSWE)", replace(base, beta=b))
    for L in cfg.slices_grid:
        for n in ("PSWE", "SRAL (PSWE)"):
            one("L", L, n, replace(base, n_slices=L))
    t = fig1.table[fig1.table.seed == s].set_index("encoder")
    for n, lab in (("SRAL (PSWE)", "encoding (adversarial)"), ("PSWE + random δ", "encoding (random)"),
                   ("PSWE + input δ", "input (adversarial)"), ("PSWE", "none")):
        if n in t.index:
            rows.append({"ablation": "target", "value": lab, "encoder": n, "NDCG@10": float(t.loc[n, "NDCG@10"]),
                         "Spearman": float(t.loc[n, "Spearman"])})
    return pd.DataFrame(rows)


# --- Figure 5: task E (topic set expansion) -----------------------------------------------------------------------
E_ENCODERS = ["DeepSets", "PSWE", "SRAL (PSWE)", "SRAL (DeepSets)"]


def expansion_pool(rng, E, topic, n_sets_per_topic: int = 40, n_range=(5, 15)):
    n_topics = int(topic.max()) + 1
    sets, labels = [], []
    for t in range(n_topics):
        words = np.flatnonzero(topic == t)
        for _ in range(n_sets_per_topic):
            sets.append(E[rng.choice(words, int(rng.integers(n_range[0], n_range[1] + 1)), replace=False)])
            labels.append(t)
    X, m = D.pad_sets(sets, n_range[1])
    return X, m, np.asarray(labels)


@limit_threads(1)
def expansion_map(model, E, topic, rng, n_queries: int = 100, seed_size: int = 5, k: int = 50) -> float:
    """MAP@k of ranking every other word w by -||z(seed + {w}) - z(seed)|| (relevant: the seed's topic)."""
    n_topics = int(topic.max()) + 1
    rel, scores = [], []
    for qi in range(n_queries):
        t = qi % n_topics
        seed_idx = rng.choice(np.flatnonzero(topic == t), seed_size, replace=False)
        cand = np.setdiff1d(np.arange(len(E)), seed_idx)
        Xs = np.concatenate([np.broadcast_to(E[seed_idx], (len(cand), seed_size, E.shape[1])),
                             E[cand][:, None, :]], 1)
        zs = encode(model, Xs, np.ones(Xs.shape[:2], bool), batch=4096)
        z0 = encode(model, E[seed_idx][None], np.ones((1, seed_size), bool))
        sc = np.full(len(E), -np.inf)
        sc[cand] = -np.linalg.norm(zs - z0, axis=1)
        r = topic == t
        r[seed_idx] = False
        rel.append(r)
        scores.append(sc)
    return map_at_k(np.array(rel), np.array(scores), k)


@limit_threads(1)
def figure5(cfg):
    if "E" not in cfg.tasks:
        return None
    base = replace(base_spec(cfg, epochs=cfg.e_epochs), d_out=32)
    rows = []
    for s in claim_seeds(cfg):
        rng = np.random.default_rng([s, 41])
        Ev, topic = D.topic_vocab(rng)
        X, m, lab = expansion_pool(rng, Ev, topic)
        for n in E_ENCODERS:
            model, hist = train_pairs(spec_for(n, base), X, m, lab, 40, s)
            rows.append({"encoder": n, "seed": s, "MAP@50": expansion_map(model, Ev, topic,
                                                                          np.random.default_rng([s, 43])),
                         "steps": hist.steps})
    return pd.DataFrame(rows)


# --- claims -------------------------------------------------------------------------------------------------------
def claims(cfg, fig1: Fig1, fig3=None, fig4=None) -> dict:
    m = lambda n, k: mean_of(fig1, n, k) if n in set(fig1.table.encoder) else np.nan  # noqa: E731
    out = {"c1": m("SRAL (PSWE)", "NDCG@10") - m("DeepSets", "NDCG@10"),
           "c1b": m("SRAL (PSWE)", "NDCG@10") - m("PSWE", "NDCG@10"),
           "c2": m("SRAL (PSWE)", "Spearman") - m("DeepSets", "Spearman"),
           "c2b": min(m("SRAL (PSWE)", "Spearman") - m("PSWE", "Spearman"),
                      m("PSWE", "Spearman") - m("DeepSets", "Spearman")),
           "c4": min(m("SRAL (PSWE)", "NDCG@10") - m("PSWE + random δ", "NDCG@10"),
                     m("SRAL (PSWE)", "NDCG@10") - m("PSWE + input δ", "NDCG@10")),
           "c5": m("SRAL (DeepSets)", "NDCG@10") - m("DeepSets", "NDCG@10"),
           "max_delta_ratio": float(np.nanmax(fig1.table["max |δ|/ε"])),
           "w2_file": w2_file_check(fig1.task)}
    if fig3 is not None:
        a = fig3.groupby("encoder")["accuracy"].mean()
        out["c3"] = float(a.get("SRAL (PSWE)", np.nan) - a.get("PSWE", np.nan))
    else:
        out["c3"] = np.nan
    return {k: (float(v) if v is not None else np.nan) for k, v in out.items()}
