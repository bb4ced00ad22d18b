"""The experiments behind the notebook's figures: data, methods (none, MQAR and its ablations, INLP,
SentenceDebias), and their evaluation on SS-T, CP-T, WB-T and the two downstream tasks."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lib.common.threads import limit_threads

from . import data as D
from .baselines import inlp_path, projection_edit, sentence_debias
from .metrics import crows_score, fped_fned, gap_closed, ss_lms_icat, winobias
from .model import pair_scores, sentence_scores
from .mqar import train_mqar


@dataclass
class Method:
    name: str
    pre_attn: object = None
    final: object = None
    info: dict = None


def build_data(cfg):
    """Every text set of the run, each from its own seeded stream."""
    b, n = cfg.bias_strength, cfg.n_items
    return {
        "module_text": D.module_text(cfg.n_module_text, b, cfg.rng("module-text")),
        "sst": D.make_sst(n, cfg.rng("sst")), "cpt": D.make_cpt(n, cfg.rng("cpt")),
        "sst_val": D.make_sst(n // 2, cfg.rng("sst-val")), "cpt_val": D.make_cpt(n // 2, cfg.rng("cpt-val")),
        "wbt": D.make_wbt(cfg.n_task_train, n, cfg.rng("wbt")),
        "sentiment": D.make_task("sentiment", cfg.n_task_train, n, cfg.rng("sentiment")),
        "abusive": D.make_task("abusive", cfg.n_task_train, n, cfg.rng("abusive")),
    }


# ---------------------------------------------------------------- scoring
def eval_sst(bb, items, m):
    rows = []
    for grp in D.GROUPS:
        its = [i for i in items if i.group == grp]
        sc = []
        for k in ("stereo", "anti", "unrelated"):
            ids, lens, _ = bb.encode([getattr(i, k) for i in its])
            sc.append(sentence_scores(bb.lm, ids, lens, pre_attn=m.pre_attn, final=m.final))
        rows.append(dict(group=grp, **ss_lms_icat(*sc)))
    return pd.DataFrame(rows)


def eval_cpt(bb, pairs, m):
    rows = []
    for grp in D.GROUPS:
        ps = [p for p in pairs if p.group == grp]
        a, la, _ = bb.encode([p.more for p in ps])
        b, lb, _ = bb.encode([p.less for p in ps])
        sa, sb = pair_scores(bb.lm, a, la, b, lb, n_suffix=bb.n_after([p.more for p in ps], "person"),
                             pre_attn=m.pre_attn, final=m.final)
        rows.append(dict(group=grp, CP=crows_score(sa, sb)))
    return pd.DataFrame(rows)


def last_states(bb, samples, m, batch=512):
    """Final-layer state at each sentence's last token (how a causal LM classifies a sentence) ``[N, d]``."""
    ids, lens, _ = bb.encode(samples)
    out = []
    with torch.no_grad():
        for a in range(0, len(ids), batch):
            h = bb.lm.hidden(torch.as_tensor(ids[a:a + batch]), m.pre_attn, m.final)
            out.append(h[torch.arange(h.shape[0]), torch.as_tensor(lens[a:a + batch]) - 1].numpy())
    return np.concatenate(out).astype(np.float64)


def eval_wbt(bb, wbt, m, seed):
    """Coreference head (a small MLP on the last-token state, trained on WB-T's biased training set)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = last_states(bb, [s for s, _, _ in wbt["train"]], m)
    y = np.array([t for _, t, _ in wbt["train"]])
    with warnings.catch_warnings():  # 400 epochs is the head's fixed budget (its labels are noisy by design)
        warnings.simplefilter("ignore", ConvergenceWarning)
        head = make_pipeline(StandardScaler(), MLPClassifier((64,), max_iter=400, random_state=seed)).fit(X, y)
    acc = {}
    for k in ("pro", "anti"):
        Xk = last_states(bb, [s for s, _, _ in wbt[k]], m)
        acc[k] = 100.0 * head.score(Xk, np.array([t for _, t, _ in wbt[k]]))
    return winobias(acc["pro"], acc["anti"])


def eval_task(bb, task, m, name, seed):
    """Logistic-regression head on the last-token state; accuracy, AUC, FPED, FNED on the original and swapped tests."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = last_states(bb, [s for s, _, _ in task["train"]], m)
    y = np.array([t for _, t, _ in task["train"]])
    head = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, random_state=seed)).fit(X, y)
    rows = []
    for split in ("test", "swapped"):
        Xs = last_states(bb, [s for s, _, _ in task[split]], m)
        ys = np.array([t for _, t, _ in task[split]])
        cells = np.array([c for _, _, c in task[split]])
        p = head.predict_proba(Xs)[:, 1]
        yhat = (p > 0.5).astype(int)
        fped, fned = fped_fned(ys, yhat, cells)
        rows.append(dict(task=name, split=split, acc=100.0 * float(np.mean(yhat == ys)),
                         AUC=100.0 * float(roc_auc_score(ys, p)), FPED=100.0 * fped, FNED=100.0 * fned))
    return rows


def evaluate(bb, data, m, seed, val=False):
    """All metrics of one method: dict of DataFrames ("bias": per group SS/LMS/ICAT/CP; "wb"; "tasks")."""
    if val:
        bias = eval_sst(bb, data["sst_val"], m).merge(eval_cpt(bb, data["cpt_val"], m), on="group")
        return {"bias": bias}
    bias = eval_sst(bb, data["sst"], m).merge(eval_cpt(bb, data["cpt"], m), on="group")
    wb = pd.DataFrame([eval_wbt(bb, data["wbt"], m, seed)])
    tasks = pd.DataFrame(eval_task(bb, data["sentiment"], m, "sentiment", seed)
                         + eval_task(bb, data["abusive"], m, "abusive", seed))
    return {"bias": bias, "wb": wb, "tasks": tasks}


def bias_gap(bias):
    """Mean distance from 50 of SS and CP over the attribute groups (the bias summary)."""
    return float(np.mean(np.abs(np.r_[bias["SS"].to_numpy(), bias["CP"].to_numpy()] - 50.0)))


# ---------------------------------------------------------------- baselines' training data
def _cue_positions(labels, lens):
    """Per sentence: token positions after its last cue token and that cue's labels (rows of INLP's data)."""
    rows, labs = [], []
    for i in range(len(labels)):
        cues = np.flatnonzero((labels[i, :lens[i], 0] >= 0))
        if len(cues) == 0:
            continue
        c = cues[-1]
        for t in range(c + 1, lens[i]):
            rows.append((i, t))
            labs.append(labels[i, c])
    return np.array(rows), np.array(labs)


def final_states(bb, ids):
    with torch.no_grad():
        return bb.lm.hidden(torch.as_tensor(ids)).numpy().astype(np.float64)


def inlp_data(bb, text, rng, max_rows=4000):
    ids, lens, labels = bb.encode(text)
    rows, labs = _cue_positions(labels, lens)
    keep = rng.permutation(len(rows))[:max_rows]
    H = final_states(bb, ids)
    return H[rows[keep, 0], rows[keep, 1]], labs[keep]


def sd_diffs(bb, text, rng):
    """Differences of the mean final state over the unmodified suffix, for gender- and group-swapped twins."""
    eng, A, B = D.engine(), [], []
    for s in text:
        if "person" not in s.slots:
            continue
        g, h = D.cell_of(s)
        attr = "gender" if (h is None or rng.random() < .5) else "group"
        g2, h2 = D._mirror(attr, g, h)
        A.append(s)
        B.append(eng.swap(s, "person", D._person(rng, g2, h2)[0]))
    ia, la, _ = bb.encode(A)
    ib, lb, _ = bb.encode(B)
    Ha, Hb = final_states(bb, ia), final_states(bb, ib)
    diffs = []
    for i in range(len(A)):
        q = 0
        while q < min(la[i], lb[i]) - 2 and ia[i, la[i] - 1 - q] == ib[i, lb[i] - 1 - q]:
            q += 1
        if q == 0:
            continue
        diffs.append(Ha[i, la[i] - 1 - q:la[i] - 1].mean(0) - Hb[i, lb[i] - 1 - q:lb[i] - 1].mean(0))
    return np.array(diffs)


def tune(bb, data, base_lms, candidates):
    """Pick the candidate (name, Method) with the smallest validation bias gap among those whose validation LMS
    drops by at most 5 points (else the one with the highest LMS). Returns (choice, table)."""
    rows = []
    for key, m in candidates:
        b = evaluate(bb, data, m, 0, val=True)["bias"]
        rows.append(dict(setting=key, gap=bias_gap(b), LMS=float(b["LMS"].mean())))
    tab = pd.DataFrame(rows)
    ok = tab[tab["LMS"] >= base_lms - 5.0]
    pick = ok.sort_values(["gap", "setting"]).iloc[0] if len(ok) else tab.sort_values("LMS").iloc[-1]
    return dict(candidates)[pick["setting"]], tab


# ---------------------------------------------------------------- the run
def mqar_kwargs(cfg):
    """MQAR's training knobs of the run (for :func:`lib.mqar.mqar.train_mqar`)."""
    return dict(steps1=cfg.stage1_steps, steps2=cfg.stage2_steps, beta=cfg.beta, lr=cfg.lr, batch=cfg.batch,
                latent=cfg.latent, levels=cfg.levels, seed=cfg.seed)


def run_all(cfg, bb, data):
    """Train every method and evaluate it. Returns dict: methods (name -> Method), results (name -> metrics),
    tuning tables, MQAR training logs, timings."""
    out = {"timings": {}}
    with limit_threads(1), bb.lm.caching():
        none = Method("none")
        ids, lens, labels = bb.encode(data["module_text"])
        kw = mqar_kwargs(cfg)
        t0 = time.perf_counter()
        # stage 1 (with the gender-only discriminator trained beside the multi-hot one), shared by three variants
        s1 = train_mqar(bb.lm, ids, lens, labels, aux_attrs=(0,), **dict(kw, steps2=0))
        full = train_mqar(bb.lm, ids, lens, labels, stage1=s1, **kw)
        nodisc = train_mqar(bb.lm, ids, lens, labels, stage1=s1, discriminator=False, **kw)
        gonly = train_mqar(bb.lm, ids, lens, labels, stage1=s1, attrs=(0,), **kw)
        nodec = train_mqar(bb.lm, ids, lens, labels, decoders=False, **kw)
        out["timings"]["mqar_train_s"] = time.perf_counter() - t0
        out["mqar"] = {"MQAR": full, "w/o decoders": nodec, "w/o discriminator": nodisc, "gender-only": gonly}
        methods = [none, Method("MQAR", full.pre_attn), Method("MQAR w/o decoders", nodec.pre_attn),
                   Method("MQAR w/o discriminator", nodisc.pre_attn), Method("MQAR gender-only", gonly.pre_attn)]
        # baselines: fitted on the same text, their one knob tuned on the validation split
        base_val = evaluate(bb, data, none, cfg.seed, val=True)["bias"]
        X, Y = inlp_data(bb, data["module_text"], cfg.rng("inlp"))
        Ps, _ = inlp_path(X, Y, max(cfg.inlp_grid), seed=cfg.seed)
        cands = []
        for k in cfg.inlp_grid:
            P = Ps[k - 1]
            cands.append((f"INLP {k} it.", Method("INLP", final=projection_edit(P), info={"n_iter": k})))
        m_inlp, tab_i = tune(bb, data, float(base_val["LMS"].mean()), cands)
        diffs = sd_diffs(bb, data["module_text"], cfg.rng("sentdebias"))
        cands = [(f"SentDebias k={k}", Method("SentenceDebias", final=projection_edit(sentence_debias(diffs, k)),
                                              info={"k": k})) for k in cfg.sd_grid]
        m_sd, tab_s = tune(bb, data, float(base_val["LMS"].mean()), cands)
        out["tuning"] = pd.concat([tab_i.assign(method="INLP"), tab_s.assign(method="SentenceDebias")])
        methods += [m_inlp, m_sd]
        out["methods"] = {m.name: m for m in methods}
        t0 = time.perf_counter()
        out["results"] = {m.name: evaluate(bb, data, m, cfg.seed) for m in methods}
        out["timings"]["eval_s"] = time.perf_counter() - t0
    return out


def tables(res):
    """Tidy tables of the run: bias (method x group), wb (method), tasks (method x task x split)."""
    bias = pd.concat([r["bias"].assign(method=k) for k, r in res["results"].items()], ignore_index=True)
    wb = pd.concat([r["wb"].assign(method=k) for k, r in res["results"].items()], ignore_index=True)
    tasks = pd.concat([r["tasks"].assign(method=k) for k, r in res["results"].items()], ignore_index=True)
    return bias, wb, tasks


def summary(res):
    """The numbers the claims read."""
    bias, wb, tasks = tables(res)
    b = {k: g.set_index("group") for k, g in bias.groupby("method")}
    base, mq = b["none"], b["MQAR"]
    closes = {f"{col} {grp}": gap_closed(base.loc[grp, col], mq.loc[grp, col]) for grp in D.GROUPS
              for col in ("SS", "CP")}
    w = wb.set_index("method")["diff"]
    acc = tasks[tasks["split"] == "test"].groupby("method")["acc"].mean()
    lms = bias.groupby("method")["LMS"].mean()
    gap = {k: bias_gap(g) for k, g in bias.groupby("method")}
    icat = {k: g.set_index("group")["ICAT"] for k, g in bias.groupby("method")}
    wins = int(sum(icat["MQAR"][g] >= max(icat["INLP"][g], icat["SentenceDebias"][g]) for g in D.GROUPS))
    return dict(closes=closes, min_close=min(closes.values()),
                wb_reduction=float(1 - w["MQAR"] / w["none"]) if w["none"] > 0 else float("nan"),
                wb_diff=w.to_dict(), acc=acc.to_dict(), acc_drop=float(acc["none"] - acc["MQAR"]),
                acc_drop_nodec=float(acc["none"] - acc["MQAR w/o decoders"]), lms=lms.to_dict(),
                lms_drop=float(lms["none"] - lms["MQAR"]), gap=gap,
                nodisc_ratio=float(gap["MQAR w/o discriminator"] / gap["none"]), icat_wins=wins)


# ---------------------------------------------------------------- Figure 4 and Figure 5
def swapped_pairs(data, n=40):
    """Gender-swapped twin sentences of SS-T (the stereotype option after a person and after the mirror person)."""
    items = [i for i in data["sst"] if i.group == "gender"]
    return [(items[2 * k].stereo, items[2 * k + 1].anti) for k in range(min(n, len(items) // 2))]


def attention_maps(bb, pairs, methods, layer=None):
    """Per method: the mean-over-heads attention maps of the first pair, and the mean Frobenius norm of the
    attention difference between twins over all pairs of equal token count."""
    layer = bb.lm.n_layer - 1 if layer is None else layer
    ia, la, _ = bb.encode([a for a, _ in pairs])
    ib, lb, _ = bb.encode([b for _, b in pairs])
    T = max(ia.shape[1], ib.shape[1])
    ia, ib = np.pad(ia, ((0, 0), (0, T - ia.shape[1]))), np.pad(ib, ((0, 0), (0, T - ib.shape[1])))
    same = np.flatnonzero(la == lb)
    out = {}
    for m in methods:
        with torch.no_grad(), limit_threads(1):
            A = bb.lm.attention(torch.as_tensor(ia), layer, m.pre_attn).mean(1).numpy()  # causal: padding is
            B = bb.lm.attention(torch.as_tensor(ib), layer, m.pre_attn).mean(1).numpy()  # never attended to
        norms = [float(np.linalg.norm(A[i, :la[i], :la[i]] - B[i, :la[i], :la[i]])) for i in same]
        i = int(same[0])
        L = int(la[i])
        out[m.name] = dict(A=A[i, :L, :L], B=B[i, :L, :L], toks_a=[bb.tok.id_to_token(int(t)) for t in ia[i, :L]],
                           toks_b=[bb.tok.id_to_token(int(t)) for t in ib[i, :L]], diff_norm=float(np.mean(norms)),
                           n_pairs=len(norms))
    return out


def efficiency(bb, mq, data, repeats=20):
    """Parameters of the backbone and of MQAR's modules, and forward latency with / without them measured
    interleaved (ratio of medians over ``repeats`` alternating calls on one batch)."""
    ids, _, _ = bb.encode(data["module_text"][:128])
    x = torch.as_tensor(ids)
    tb, tm = [], []
    with torch.no_grad(), limit_threads(1):
        bb.lm.hidden(x)
        bb.lm.hidden(x, mq.pre_attn)
        for _ in range(int(repeats)):
            t0 = time.perf_counter()
            bb.lm.hidden(x)
            t1 = time.perf_counter()
            bb.lm.hidden(x, mq.pre_attn)
            t2 = time.perf_counter()
            tb.append(t1 - t0)
            tm.append(t2 - t1)
    n_b, n_m, n_t = bb.lm.n_params(), mq.n_params(inference=True), mq.n_params(inference=False)
    return dict(backbone_params=n_b, module_params=n_m, module_train_params=n_t, param_overhead=100.0 * n_m / n_b,
                latency_base_ms=1e3 * float(np.median(tb)), latency_mqar_ms=1e3 * float(np.median(tm)),
                latency_ratio=float(np.median(tm) / np.median(tb)), repeats=int(repeats), batch=int(x.shape[0]))


def crows_eval(bb, frame, methods):
    """A user-supplied CrowS-Pairs file scored like CP-T (causal form: the unmodified tokens after the edit):
    % of pairs whose ``sent_more`` scores higher, per method and bias type."""
    ia, la = bb.encode_texts(frame["sent_more"].astype(str).tolist())
    ib, lb = bb.encode_texts(frame["sent_less"].astype(str).tolist())
    rows = []
    with limit_threads(1):
        for m in methods:
            sa, sb = pair_scores(bb.lm, ia, la, ib, lb, pre_attn=m.pre_attn, final=m.final)
            for bt, idx in frame.groupby("bias_type").groups.items():
                idx = np.asarray(list(idx))
                rows.append(dict(method=m.name, bias_type=bt, n=len(idx), CrowS=crows_score(sa[idx], sb[idx])))
            rows.append(dict(method=m.name, bias_type="all", n=len(frame), CrowS=crows_score(sa, sb)))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- full mode: the bias-strength sweep
def bias_sweep(cfg, strengths=None, reuse=None):
    """Full mode's bias-strength sweep (brief: 0.6, 0.75, 0.9): for each planted strength b, a backbone trained here
    on the world with strength b (seeded by the run's seed), MQAR's text drawn with b, and MQAR (both stages, the run's
    knobs) against the undebiased model on SS-T and CP-T. The SS-T / CP-T items are the run's own (they do not depend
    on b), so the strengths are compared on the same items. ``reuse = (b, none_bias, mqar_bias)``: the main run's
    bias tables at its strength b, used instead of training again. Returns (long table: strength, method, group,
    SS, CP, LMS, ICAT; gap closed per strength and cell)."""
    import dataclasses

    from .model import load_backbone

    if cfg.model_name:
        raise ValueError(f"model_name {cfg.model_name!r}: the bias-strength sweep trains tiny backbones on the planted "
                         f"world; it runs with model_name = None only")
    strengths = tuple(cfg.sweep if strengths is None else strengths)
    for b in strengths:
        if not 0.5 <= float(b) <= 1.0:
            raise ValueError(f"bias-strength sweep got {b!r}; allowed: strengths in [0.5, 1]")
    rows = []
    for b in strengths:
        if reuse is not None and float(b) == float(reuse[0]):
            tabs = {"none": reuse[1], "MQAR": reuse[2]}
        else:
            c = dataclasses.replace(cfg, params={**cfg.params, "bias_strength": float(b), "pretrained": False})
            bb = load_backbone(c)
            text = D.module_text(c.n_module_text, float(b), c.rng("module-text"))
            sst, cpt = D.make_sst(c.n_items, c.rng("sst")), D.make_cpt(c.n_items, c.rng("cpt"))
            with limit_threads(1), bb.lm.caching():
                ids, lens, labels = bb.encode(text)
                mq = train_mqar(bb.lm, ids, lens, labels, **mqar_kwargs(c))
                tabs = {}
                for m in (Method("none"), Method("MQAR", mq.pre_attn)):
                    tabs[m.name] = eval_sst(bb, sst, m).merge(eval_cpt(bb, cpt, m), on="group")
        for k, t in tabs.items():
            rows += [dict(strength=float(b), method=k, **r) for r in t[["group", "SS", "CP", "LMS", "ICAT"]]
                     .to_dict("records")]
    long = pd.DataFrame(rows)
    closed = []
    for b, g in long.groupby("strength"):
        t = {k: x.set_index("group") for k, x in g.groupby("method")}
        for grp in D.GROUPS:
            for col in ("SS", "CP"):
                closed.append(dict(strength=b, cell=f"{col} {grp}", none=t["none"].loc[grp, col],
                                   MQAR=t["MQAR"].loc[grp, col],
                                   closed=gap_closed(t["none"].loc[grp, col], t["MQAR"].loc[grp, col])))
    return long, pd.DataFrame(closed)
