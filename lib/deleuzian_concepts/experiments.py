"""What each figure runs: activation sets, concept sets for every method, probe tables, ablation, k curve, MPPC,
steering and top examples. Every function returns plain results (DataFrames, dicts of arrays)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lib.common import limit_threads

from . import concepts as cc
from . import metrics as mt
from .data import (CONLL_TASKS, DIGIT_TASKS, SENTENCE_TASKS, make_digits, make_sentences, read_conll,
                   sentence_engine, word_class_of)

UNSUPERVISED = ["ours (diffs+skew)", "TopK-SAE", "Vanilla SAE", "FastICA", "PCA", "random"]
ABLATION = ["acts+KMeans", "acts+TopK-SAE", "diffs+KMeans", "diffs+TopK-SAE", "ours (diffs+skew)"]


@dataclass
class ActSet:
    """Activations of one network on one data set, with probe labels and a train/test split."""
    name: str
    A: np.ndarray
    labels: pd.DataFrame
    tasks: list
    train: np.ndarray  # indices
    test: np.ndarray
    items: list = field(default_factory=list, repr=False)  # texts or images, for Figure 6
    info: dict = field(default_factory=dict)

    def Y(self):
        Y, owner, names = mt.binary_labels(self.labels, self.tasks)
        return Y, owner, names


# ---------------------------------------------------------------- models and activation sets
def load_text_encoder(cfg):
    from .encoders import CKPT_ARCH, TextEncoder, load_checkpoint_states, train_gpt2

    if cfg.model_name:
        from lib.common.tiny_lm import load_hub_lm

        model, tok = load_hub_lm(cfg.model_name)
        return TextEncoder(model, tok, cfg.model_name, cfg.layer, max_len=cfg.max_len), {"source": "hub"}
    if cfg.pretrained:
        model, tok, meta = load_checkpoint_states()  # torch-only forward of the same weights (see CheckpointGPT2)
        info = {"source": "data/deleuzian_concepts/tiny_gpt2.pt", **meta["arch"], "train_steps": meta["train"]["steps"],
                "final_loss": meta["final_loss"]}
    else:
        arch = dict(CKPT_ARCH, n_embd=cfg.lm_width, n_layer=cfg.lm_layers)
        train = dict(steps=cfg.lm_steps, batch_size=32, seq_len=48, lr=3e-3, warmup_steps=50,
                     n_sentences=cfg.lm_sentences, doc_files=cfg.lm_doc_files, seed=cfg.seed)
        model, tok, log = train_gpt2(arch, train)
        info = {"source": f"trained here (seed {cfg.seed})", **arch, "train_steps": train["steps"],
                "final_loss": float(np.mean(log.losses[-20:]))}
    return TextEncoder(model, tok, "tiny GPT-2", cfg.layer, max_len=cfg.max_len), info


def _split(n, frac, rng, groups=None):
    if groups is None:
        perm = rng.permutation(n)
        cut = int(round(frac * n))
        return np.sort(perm[:cut]), np.sort(perm[cut:])
    ug = np.unique(groups)
    perm = rng.permutation(ug)
    tr_g = set(perm[: int(round(frac * len(ug)))].tolist())
    mask = np.array([g in tr_g for g in groups])
    return np.flatnonzero(mask), np.flatnonzero(~mask)


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def sentence_set(cfg, enc) -> ActSet:
    data = make_sentences(cfg.n_sentences, cfg.rng("sentences"))
    A = enc.pooled(data.texts)
    tr, te = _split(len(A), cfg.train_frac, cfg.rng("split-sentences"))
    return ActSet("text: sentences", A, data.labels, list(SENTENCE_TASKS), tr, te, items=data.texts)


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def token_set(cfg, enc) -> ActSet:
    """Per-token states with word-class labels (templated), or CoNLL-2003 POS / chunk / NER when data_path is set."""
    if cfg.data_path is not None:
        return conll_set(cfg, enc)
    from lib.common.templates import token_labels

    samples = sentence_engine().sample(cfg.n_token_sentences, cfg.rng("tokens"))
    pairs = token_labels(enc.tok, samples)
    ids = [p[0][: enc.max_len] for p in pairs]
    states = enc.states(ids)
    A, lab, grp, items = [], [], [], []
    for s, ((tid, labs), h) in enumerate(zip(pairs, states)):
        for t in range(len(h)):
            A.append(h[t])
            lab.append(word_class_of(labs[t]))
            grp.append(s)
            items.append(samples[s].text)
    labels = pd.DataFrame({"word class": lab})
    tr, te = _split(len(A), cfg.train_frac, cfg.rng("split-tokens"), np.array(grp))
    return ActSet("text: tokens", np.array(A), labels, ["word class"], tr, te, items=items)


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def conll_set(cfg, enc) -> ActSet:
    data = read_conll(cfg.data_path, max_sentences=cfg.conll_sentences)
    A, rows, grp, items = [], [], [], []
    enc_ids = [_ids_words(enc.tok, words) for words in data.sentences]
    keep = [s for s, (ids, _) in enumerate(enc_ids) if ids]
    states = enc.states([enc_ids[s][0][: enc.max_len] for s in keep])  # one batched pass
    for s, h in zip(keep, states):
        words, tags = data.sentences[s], data.tags[s]
        for t, j in enumerate(enc_ids[s][1][: enc.max_len]):
            if j is None:
                continue
            A.append(h[t])
            rows.append(dict(zip(CONLL_TASKS, tags[j])))
            grp.append(s)
            items.append(" ".join(words))
    labels = pd.DataFrame(rows)
    for t in CONLL_TASKS:  # rare tags (under 2% of tokens) join one "other" class, so every label has positives
        share = labels[t].value_counts(normalize=True)
        labels[t] = labels[t].where(labels[t].isin(share[share >= 0.02].index), "other")
    tr, te = _split(len(A), cfg.train_frac, cfg.rng("split-tokens"), np.array(grp))
    return ActSet("text: CoNLL tokens", np.array(A), labels, list(CONLL_TASKS), tr, te, items=items)


def _ids_words(tok, words):
    text, spans = "", []
    for w in words:
        text += " " if text else ""
        spans.append((len(text), len(text) + len(w)))
        text += w
    if hasattr(tok, "encode_batch"):
        e = tok.encode(text, add_special_tokens=False)
        ids, offs = list(e.ids), list(e.offsets)
    else:
        e = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offs = list(e["input_ids"]), list(e["offset_mapping"])
    which = [next((k for k, (sa, sb) in enumerate(spans) if a < sb and b > sa), None) for a, b in offs]
    return ids, which


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def digit_set(cfg) -> ActSet:
    from .encoders import digit_activations, train_digit_cnn

    data = make_digits(cfg.n_digits, cfg.rng("digits"))
    tr, te = _split(len(data.images), cfg.train_frac, cfg.rng("split-digits"))
    y = data.labels["digit"].astype(int).to_numpy()
    net, acc = train_digit_cnn(data.images[tr], y[tr], width=cfg.cnn_width, steps=cfg.cnn_steps, seed=cfg.seed)
    A = digit_activations(net, data.images)
    return ActSet("digits: CNN", A, data.labels, list(DIGIT_TASKS), tr, te, items=list(data.images),
                  info={"cnn_train_acc": acc})


# ---------------------------------------------------------------- methods
SAE_METHODS = ("TopK-SAE", "acts+TopK-SAE", "diffs+TopK-SAE", "Vanilla SAE")


def _sae_spec(name, seed, sae):
    if name in ("TopK-SAE", "acts+TopK-SAE", "diffs+TopK-SAE"):
        return dict(kind="topk", topk=sae.get("topk", 8), seed=seed, on_diffs=name == "diffs+TopK-SAE")
    return dict(kind="vanilla", l1=sae.get("l1", 1e-3), seed=seed)


def _wrap_sae(name, c):
    if name == "diffs+TopK-SAE":  # directions of differences: A C^T
        return cc.Concepts("diffs+TopK-SAE", c.C, cc._linear(c.C), c.info)
    return c


def fit_saes(jobs, k, cfg):
    """Several SAE fits at the same k as one batched program: ``jobs`` = [(method, A, seed, sae choice)]; returns
    the same Concepts that :func:`fit_method` gives for each job."""
    if not jobs:
        return []
    specs = [dict(_sae_spec(m, seed, sae or {}), data=b) for b, (m, _, seed, sae) in enumerate(jobs)]
    out = cc.train_saes([A for _, A, _, _ in jobs], k, specs, steps=cfg.sae_steps, lr=cfg.sae_lr)
    return [_wrap_sae(m, c) for (m, _, _, _), c in zip(jobs, out)]


def fit_method(name, A, k, cfg, seed, Y=None, sae=None):
    sae = sae or {}
    if name in SAE_METHODS:
        return fit_saes([(name, A, seed, sae)], k, cfg)[0]
    if name == "ours (diffs+skew)":
        return cc.diff_concepts(A, k, seed=seed, weighted=True)
    if name == "diffs+KMeans":
        return cc.diff_concepts(A, k, seed=seed, weighted=False)
    if name == "acts+KMeans":
        return cc.kmeans_concepts(A, k, seed=seed)
    if name == "FastICA":
        return cc.ica_concepts(A, k, seed=seed)
    if name == "PCA":
        return cc.pca_concepts(A, k, seed=seed)
    if name == "random":
        return cc.random_concepts(A, k, seed=seed)
    if name == "LDA (supervised)":
        return cc.lda_directions(A, Y)
    raise ValueError(f"unknown method {name!r}")


def evaluate(concepts, S: ActSet):
    """Probe losses per label and per task, effective rank and mean max |cos| of one concept set on a set."""
    Y, owner, names = S.Y()
    Z = concepts.encode(S.A)
    losses, best_j, sign = mt.probe_losses(Z[S.train], Z[S.test], Y[S.train], Y[S.test])
    return {"tasks": mt.task_scores(losses, owner), "labels": dict(zip(names, losses)), "best": dict(zip(names, best_j)),
            "sign": dict(zip(names, sign)), "eff_rank": mt.effective_rank(concepts.C),
            "max_cos": mt.mean_max_abs_cos(concepts.C)}


def _tune_split(S: ActSet, cfg):
    rng = cfg.rng(f"tune-{S.name}")
    a, b = _split(len(S.train), 0.5, rng)
    sub = ActSet(S.name, S.A[S.train], S.labels.iloc[S.train].reset_index(drop=True), S.tasks, a, b)
    return sub, a


def tune_saes_many(sets, cfg):
    """SAE sparsity picked on a validation split of the *training* part (SAE fitted on one half, probes selected on
    it and scored on the other half); the test part is never seen. Same k and step budget as in the comparison.
    All candidate SAEs of all the given sets are trained as one batch; returns [(choice, validation scores)]."""
    subs = [_tune_split(S, cfg) for S in sets]
    grids = (("topk", cfg.topk_grid, "TopK-SAE"), ("l1", cfg.l1_grid, "Vanilla SAE"))
    jobs = [(kind, sub.A[a], cfg.seed + 1000, {key: v}) for sub, a in subs for key, grid, kind in grids for v in grid]
    fits = iter(fit_saes(jobs, cfg.k, cfg))
    results = []
    for sub, _ in subs:
        out, scores = {}, {}
        for key, grid, kind in grids:
            res = {v: float(np.mean(list(evaluate(next(fits), sub)["tasks"].values()))) for v in grid}
            out[key] = min(res, key=res.get)
            scores[key] = res
        results.append((out, scores))
    return results


def tune_saes(S: ActSet, cfg):
    """:func:`tune_saes_many` for one set: (choice, validation scores)."""
    return tune_saes_many([S], cfg)[0]


MAIN_METHODS = UNSUPERVISED + ["acts+KMeans", "diffs+KMeans", "diffs+TopK-SAE", "LDA (supervised)"]


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def main_table(sets, cfg):
    """Figure 1: probe loss per task for every method at the same k (plus supervised LDA), ranks, eff. ranks.
    The SAEs of every set are trained as one batch (after the tuning, which is batched too)."""
    rows, fitted, tuned = [], {}, {}
    tune_on = list(range(len(sets))) if cfg.tune_all_sets else [0]
    tuned_res = dict(zip(tune_on, tune_saes_many([sets[i] for i in tune_on], cfg)))
    choice = {}
    for i, S in enumerate(sets):
        src = i if i in tuned_res else 0
        choice[i] = tuned_res[src][0]
        tuned[S.name] = {"choice": tuned_res[src][0], "validation": tuned_res[src][1], "tuned_on": sets[src].name}
    jobs = [(m, S.A[S.train], cfg.seed, choice[i]) for i, S in enumerate(sets) for m in MAIN_METHODS
            if m in SAE_METHODS]
    saes = iter(fit_saes(jobs, cfg.k, cfg))
    for i, S in enumerate(sets):
        Y, _, _ = S.Y()
        for m in MAIN_METHODS:
            c = next(saes) if m in SAE_METHODS else fit_method(m, S.A[S.train], cfg.k, cfg, seed=cfg.seed,
                                                                 Y=Y[S.train], sae=choice[i])
            ev = evaluate(c, S)
            fitted[(S.name, m)] = (c, ev)
            for t, v in ev["tasks"].items():
                rows.append({"set": S.name, "task": t, "method": m, "probe_loss": v, "eff_rank": ev["eff_rank"],
                             "max_cos": ev["max_cos"]})
    df = pd.DataFrame(rows)
    return df, fitted, tuned


def ranks(df, methods=UNSUPERVISED):
    """Rank (1 = lowest probe loss) of each unsupervised method on each task, and the average rank."""
    wide = df[df.method.isin(methods)].pivot_table(index=["set", "task"], columns="method", values="probe_loss")
    wide = wide[list(methods)]
    r = wide.rank(axis=1, method="average")
    return wide, r, r.mean().rename("average rank")


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def k_curve(S: ActSet, cfg, sae, fitted=None):
    """Figure 3: mean probe loss over the set's tasks vs the number of concepts k (fits at k = cfg.k are reused
    from the main table)."""
    fitted = fitted or {}
    rows = []
    for k in [k for k in cfg.k_grid if k <= len(S.train) // 2]:  # K-means needs fewer clusters than samples
        for m in ["ours (diffs+skew)", "TopK-SAE", "acts+KMeans"]:
            if k == cfg.k and (S.name, m) in fitted:
                ev = fitted[(S.name, m)][1]
            else:
                ev = evaluate(fit_method(m, S.A[S.train], k, cfg, seed=cfg.seed, sae=sae), S)
            rows.append({"k": k, "method": m, "probe_loss": float(np.mean(list(ev["tasks"].values())))})
    ev = fitted.get((S.name, "LDA (supervised)"))
    if ev is None:
        Y, _, _ = S.Y()
        ev = (None, evaluate(fit_method("LDA (supervised)", S.A[S.train], None, cfg, seed=cfg.seed, Y=Y[S.train]), S))
    rows.append({"k": np.nan, "method": "LDA (supervised)", "probe_loss": float(np.mean(list(ev[1]["tasks"].values())))})
    return pd.DataFrame(rows)


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def consistency(S: ActSet, cfg, sae, fitted=None):
    """Figure 4: MPPC between concept sets fitted with different seeds (all pairs of cfg.mppc_seeds runs: the
    main table's run and runs seeded seed + 17 r), correlations of their activations on the test part."""
    fitted = fitted or {}
    rows, todo = [], []
    for m in cfg.mppc_methods:
        runs = [fitted[(S.name, m)][0] if r == 0 and (S.name, m) in fitted else
                (m, cfg.seed + 17 * r) for r in range(cfg.mppc_seeds)]
        todo.append((m, runs))
    jobs = [(m, S.A[S.train], r[1], sae) for m, runs in todo for r in runs if isinstance(r, tuple) and m in SAE_METHODS]
    saes = iter(fit_saes(jobs, cfg.k, cfg))  # the SAE reruns of all methods as one batch
    for m, runs in todo:
        runs = [(next(saes) if m in SAE_METHODS else fit_method(m, S.A[S.train], cfg.k, cfg, seed=r[1], sae=sae))
                if isinstance(r, tuple) else r for r in runs]
        Zs = [c.encode(S.A[S.test]) for c in runs]
        for i in range(len(Zs)):
            for j in range(i + 1, len(Zs)):
                rows.append({"method": m, "pair": f"{i}-{j}", "mppc": mt.mppc(Zs[i], Zs[j])})
    return pd.DataFrame(rows)


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def steering(S: ActSet, concepts, ev, cfg):
    """Figure 5: steer test sentences with the concept the probe picked for each topic, x + alpha c, and measure the
    share of their 10 nearest training sentences that have the topic. alpha > 0 on sentences of other topics,
    alpha < 0 on sentences of the topic. Also the round trip (x + alpha c) - alpha c vs x."""
    bank = S.A[S.train]
    topics = S.labels["topic"].astype(str).to_numpy()
    rows, roundtrip = [], 0.0
    for t in sorted(np.unique(topics)):
        key = f"topic={t}"
        j, sgn = int(ev["best"][key]), float(ev["sign"][key])
        c = sgn * concepts.C[j]
        has = topics[S.train] == t
        q_out = S.A[S.test][topics[S.test] != t][: cfg.steer_queries]
        q_in = S.A[S.test][topics[S.test] == t][: cfg.steer_queries]
        for a in cfg.alphas:
            for side, Q, alpha in (("add to other topics", q_out, a), ("subtract from the topic", q_in, -a)):
                X = mt.steer(Q, c, alpha)
                rows.append({"topic": t, "alpha": a, "side": side, "fraction": mt.neighbour_fraction(X, bank, has)})
                back = mt.steer(X, c, -alpha)
                roundtrip = max(roundtrip, float(np.abs(back - Q).max() / (np.abs(Q).max() + 1e-30)))
    return pd.DataFrame(rows), roundtrip


@limit_threads(1)  # small matrices: one BLAS / torch thread is faster and spins no idle core
def top_examples(S: ActSet, concepts, ev, labels_to_show, n_top: int):
    """Figure 6: for the concept the probe picked for each label, its top-activating test items."""
    Z = concepts.encode(S.A[S.test])
    out = []
    for key in labels_to_show:
        j, sgn = int(ev["best"][key]), float(ev["sign"][key])
        order = np.argsort(-sgn * Z[:, j])[:n_top]
        out.append({"label": key, "concept": j, "items": [S.items[S.test[i]] for i in order],
                    "labels": S.labels.iloc[S.test[order]].to_dict("records")})
    return out


def ablation_table(df):
    """Figure 2: mean probe loss over each set's tasks and effective rank of the five ablation configurations."""
    d = df.copy()
    d.loc[d.method == "TopK-SAE", "method"] = "acts+TopK-SAE"
    d = d[d.method.isin(ABLATION)]
    out = d.groupby(["set", "method"], sort=False).agg(probe_loss=("probe_loss", "mean"), eff_rank=("eff_rank", "first"),
                                                      max_cos=("max_cos", "first")).reset_index()
    out["method"] = pd.Categorical(out.method, ABLATION, ordered=True)
    return out.sort_values(["set", "method"]).reset_index(drop=True).assign(method=lambda x: x.method.astype(str))


def claim_numbers(df):
    """The measured quantities of claims C1-C3 from the main table."""
    w = df.pivot_table(index=["set", "task"], columns="method", values="probe_loss")
    ours, acts, unw = w["ours (diffs+skew)"], w["acts+KMeans"], w["diffs+KMeans"]
    er = df.groupby(["set", "method"]).eff_rank.first().unstack()
    _, _, avg = ranks(df)
    best_sae = w[["TopK-SAE", "Vanilla SAE"]].min(axis=1)
    lda = w["LDA (supervised)"]
    return {
        "c1_frac": float((ours < acts).mean()), "c1_gain": float(((acts - ours) / acts).mean()),
        "c1_frac_unweighted": float((unw < acts).mean()), "c1_gain_unweighted": float(((acts - unw) / acts).mean()),
        "c2_rank_ratio_min": float((er["ours (diffs+skew)"] / er["diffs+KMeans"]).min()),
        "c2_rank_ratios": (er["ours (diffs+skew)"] / er["diffs+KMeans"]).round(3).to_dict(),
        "c2_loss_ratio": float(ours.mean() / unw.mean()),
        "c3_rank_gap": float(avg["ours (diffs+skew)"] - min(avg["TopK-SAE"], avg["Vanilla SAE"])),
        "c3_lda_frac": float(((ours - lda).abs() < (best_sae - lda).abs()).mean()),
        "avg_rank": avg.round(3).to_dict(), "n_tasks": int(len(w)),
    }
