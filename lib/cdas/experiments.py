"""The notebook's experiments: build the backbone and data, train CDAS and the baselines, steer and judge."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from lib.common.threads import limit_threads

from . import steering as st
from .world import CONCEPTS, TOPICS, World, judge

METHOD_LOSS = {"CDAS": "jsd", "DAS (CE)": "ce", "KLDAS (fwd KL)": "fkl", "KLDAS (rev KL)": "rkl"}
MAIN_METHODS = ("CDAS", "DiffMean", "Lang.")


@dataclass
class Lab:
    cfg: object
    bb: object
    layer: int
    concepts: list
    train: pd.DataFrame
    evalq: pd.DataFrame
    pairs: object
    h_pos: torch.Tensor
    c_pos: torch.Tensor
    h_neg: torch.Tensor
    c_neg: torch.Tensor
    methods: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    train_steps: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)


def load_backbone(cfg, arch=None):
    """The shipped checkpoint (quick), a model trained here (full, or pretrained=False) or a hub model."""
    from .model import load_checkpoint, load_hub_backbone, train_backbone

    if cfg.model_name:
        return load_hub_backbone(cfg.model_name, device=cfg.device)
    with limit_threads(1):   # the tiny GPT-2 runs on the CPU whatever cfg.device says (its batches are CPU tensors)
        if cfg.pretrained and arch is None:
            return load_checkpoint(device="cpu")
        bb, log, _ = train_backbone(arch or "base", seed=cfg.seed, device="cpu",
                                    backdoor=bool(getattr(cfg, "backdoor", False)))
    return bb


def backbone_report(cfg, bb, concepts, n_per=None) -> pd.DataFrame:
    """Unsteered responses to held-out concept prompts x_c and neutral prompts x: concept-word rate per sentence,
    share of responses with a concept word in every sentence, and the judge's instruction/fluency scores."""
    rows, prompts = [], []
    for c in concepts:
        for t in TOPICS:
            for kind, instr in (("x_c", f"write about the {t} and mention {c} ."), ("x", f"write about the {t} .")):
                prompts.append(instr)
                rows.append(dict(concept=c, topic=t, prompt=kind))
    with limit_threads(1):
        texts, trunc = st.generate(bb, prompts, 0, None, max_new=cfg.max_new)
    for r, t, tr in zip(rows, texts, trunc):
        j = judge(t, r["topic"], r["concept"], truncated=tr)
        r.update(rate=j["rate"], all_sentences=float(j["rate"] >= 1.0), instruction=j["instruction"],
                 fluency=j["fluency"], text=t)
    return pd.DataFrame(rows)


def method_lr(cfg, name):
    """The learning rate of a trained method: ``cfg.lr`` when set, else the one tuned on seed 9000."""
    if cfg.lr is not None or name == "DiffMean":
        return cfg.lr
    from .tune import load_tuning

    return float(load_tuning()["best_lr"][name])


def build(cfg, bb=None, layer=None, methods=None, train=None, evalq=None) -> Lab:
    """Data, pairs, source caches, factors; trains every DII method and Lang. (DiffMean is closed form).
    ``train``/``evalq``: quadruples to use instead of the world's concept quadruples (refusal case, data_path)."""
    t0 = time.perf_counter()
    bb = bb or load_backbone(cfg)
    layer = cfg.layer if layer is None else layer
    world = World(cfg.seed)
    if train is None:
        concepts = list(CONCEPTS)[:cfg.n_concepts]
        train = pd.concat([world.quadruples(c, cfg.n_quads, "train") for c in concepts], ignore_index=True)
        evalq = pd.concat([world.quadruples(c, cfg.n_eval, "eval") for c in concepts], ignore_index=True)
    else:
        concepts = list(dict.fromkeys(train.concept))
    cidx = {c: i for i, c in enumerate(concepts)}
    lab = Lab(cfg=cfg, bb=bb, layer=layer, concepts=concepts, train=train, evalq=evalq, pairs=None,
              h_pos=None, c_pos=None, h_neg=None, c_neg=None)
    methods = methods or cfg.methods
    with limit_threads(1):
        ps = st.make_pairs(bb, train, cidx)
        lab.pairs = st.precompute_sources(bb.model, ps, layer)
        cc = torch.tensor([cidx[c] for c in train.concept])
        lab.h_pos, lab.c_pos = st.prompt_states(bb, list(train.positive_input), layer), cc
        lab.h_neg, lab.c_neg = st.prompt_states(bb, list(train.negative_input), layer), cc
        C = len(concepts)
        lab.timings["data"] = time.perf_counter() - t0
        for name in methods:
            t1 = time.perf_counter()
            lr = method_lr(cfg, name)
            if name in METHOD_LOSS:
                res = st.train_dii(bb.model, lab.pairs, layer, C, loss=METHOD_LOSS[name], epochs=cfg.epochs,
                                   lr=lr, batch=cfg.batch, seed=cfg.seed)
                fp, fn = st.gather_factors(res.W, lab.h_pos, lab.c_pos, lab.h_neg, lab.c_neg, C)
                lab.methods[name] = st.Steerer(name, "clamp", res.W, fp, fn)
                lab.logs[name], lab.train_steps[name] = res.losses, res.steps
            elif name == "Lang.":
                res = st.train_lang(bb.model, lab.pairs, layer, C, epochs=cfg.epochs, lr=lr, batch=cfg.batch,
                                    seed=cfg.seed)
                lab.methods[name] = st.Steerer(name, "add", res.W)
                lab.logs[name], lab.train_steps[name] = res.losses, res.steps
            elif name == "DiffMean":
                v = st.diffmean(lab.h_pos, lab.c_pos, lab.h_neg, lab.c_neg, C)
                lab.methods[name] = st.Steerer(name, "add", v)
                lab.train_steps[name] = 0
            else:
                raise ValueError(f"method {name!r}; allowed: CDAS, DAS (CE), KLDAS (fwd KL), KLDAS (rev KL), "
                                 f"DiffMean, Lang.")
            lab.timings[name] = time.perf_counter() - t1
    return lab


def _rows_for(lab, method, direction, mults, prompts_df):
    """Row specs (method, concept, multiplier, prompt) for one batched generation."""
    out = []
    for m in mults:
        for i, q in enumerate(prompts_df.itertuples(index=False)):
            out.append(dict(method=method, direction=direction, mult=float(m), target=q.concept, topic=q.topic,
                            item=i, prompt=q.negative_input if direction == "elicit" else q.positive_input))
    return out


def _edit_for(lab, specs):
    """A row-wise edit for a list of specs (rows may mix methods, concepts and multipliers)."""
    cidx = {c: i for i, c in enumerate(lab.concepts)}
    U, K, Vals, S = [], [], [], []
    for s in specs:
        meth = lab.methods[s["method"]]
        c = cidx[s["target"]]
        w = meth.W[c]
        if meth.kind == "clamp":
            f = meth.f_pos[c] if s["direction"] == "elicit" else meth.f_neg[c]
            U.append(w), K.append(1.0), Vals.append(float(s["mult"] * f)), S.append(0.0)
        else:
            sign = 1.0 if s["direction"] == "elicit" else -1.0
            U.append(w), K.append(0.0), Vals.append(0.0), S.append(sign * s["mult"] * float(w.norm()))
    return torch.stack(U), torch.tensor(K), torch.tensor(Vals), torch.tensor(S)


def steer_and_judge(lab, methods, mults, direction="elicit", chunk=512) -> pd.DataFrame:
    """Greedy generations on the held-out prompts for every method x multiplier x concept x prompt, judged.
    ``direction`` "elicit" steers neutral prompts x with f+ (or +v), "suppress" concept prompts x_c with f- (-v);
    ``method`` "none" is the unsteered model. Items are split in two halves: "tune" and "report"."""
    specs = []
    for meth in methods:
        specs += _rows_for(lab, meth, direction, [0.0] if meth == "none" else mults, lab.evalq)
    steered = [s for s in specs if s["method"] != "none"]
    plain = [s for s in specs if s["method"] == "none"]
    with limit_threads(1):
        for group in (steered, plain):
            for i in range(0, len(group), chunk):
                part = group[i:i + chunk]
                if part and part[0]["method"] == "none":
                    texts, trunc = st.generate(lab.bb, [s["prompt"] for s in part], lab.layer, None, lab.cfg.max_new)
                else:
                    U, K, V, S = _edit_for(lab, part)
                    texts, trunc = st.generate(
                        lab.bb, [s["prompt"] for s in part], lab.layer,
                        lambda rows, U=U, K=K, V=V, S=S: st.rowwise_steer(U[rows], K[rows], V[rows], S[rows]),
                        lab.cfg.max_new)
                for s, t, tr in zip(part, texts, trunc):
                    s.update(judge(t, s["topic"], s["target"], truncated=tr), text=t)
    df = pd.DataFrame(steered + plain)
    n_items = lab.cfg.n_eval
    df["half"] = np.where((df["item"] % n_items) < n_items // 2, "tune", "report")
    return df


def score_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Steering score per method on the report half: unit factor (m = 1) and tuned factor (per concept, the
    multiplier with the best mean score on the tune half)."""
    rows = []
    for meth, g in sweep[sweep.method != "none"].groupby("method", sort=False):
        per = g.groupby(["target", "mult", "half"])["score"].mean().unstack("half")
        best = per["tune"].groupby(level="target").idxmax()
        tuned = [per.loc[b, "report"] for b in best]
        unit = per.xs(1.0, level="mult")["report"]
        rows.append(dict(method=meth, tuned=float(np.mean(tuned)), unit=float(unit.mean()),
                         tuned_mult=", ".join(f"{b[1]:g}" for b in best)))
    return pd.DataFrame(rows)


def curves(sweep: pd.DataFrame) -> pd.DataFrame:
    """Concept, instruction, fluency and score vs multiplier (all items), per method."""
    s = sweep[sweep.method != "none"]
    return s.groupby(["method", "mult"], sort=False)[["concept", "instruction", "fluency", "score", "rate"]].mean() \
        .reset_index()


def bidirectional(lab, methods, elicit: pd.DataFrame) -> pd.DataFrame:
    """One vector, both directions at m = 1 (no retuning): concept score on neutral prompts (elicitation) and the
    drop of the concept-word rate on concept prompts (suppression), with the unsteered values."""
    sup = steer_and_judge(lab, list(methods) + ["none"], [1.0], direction="suppress")
    base_rate = sup[sup.method == "none"]["rate"].mean()
    base_el = steer_and_judge(lab, ["none"], [1.0], direction="elicit")
    rows = [dict(method="unsteered", elicit_concept=base_el["concept"].mean(), elicit_fluency=base_el["fluency"].mean(),
                 suppress_rate=base_rate, rate_drop=0.0, suppress_fluency=sup[sup.method == "none"]["fluency"].mean(),
                 suppress_instruction=sup[sup.method == "none"]["instruction"].mean())]
    for m in methods:
        e = elicit[(elicit.method == m) & (elicit.mult == 1.0)]
        s = sup[sup.method == m]
        rows.append(dict(method=m, elicit_concept=e["concept"].mean(), elicit_fluency=e["fluency"].mean(),
                         suppress_rate=s["rate"].mean(), rate_drop=1.0 - s["rate"].mean() / max(base_rate, 1e-9),
                         suppress_fluency=s["fluency"].mean(), suppress_instruction=s["instruction"].mean()))
    return pd.DataFrame(rows), sup


def fidelity(lab, methods, mults) -> pd.DataFrame:
    """KL(unsteered || steered) on teacher-forced held-out neutral transcripts x (+) y, per method x multiplier."""
    cidx = {c: i for i, c in enumerate(lab.concepts)}
    # D- pairs have base x_c (+) y: with x_c replaced by x they are the neutral transcripts x (+) y
    ps_n = st.make_pairs(lab.bb, lab.evalq.assign(positive_input=lab.evalq.negative_input), cidx, pairs=("D-",))
    rows = []
    with limit_threads(1):
        allr = torch.arange(len(ps_n))
        tail = st.tail_for(lab.bb.model, ps_n, lab.layer)
        lp0 = torch.log_softmax(st._logits(lab.bb.model, tail, lab.layer, ps_n, allr, lambda h: h), -1)
        for meth in methods:
            for m in mults:
                specs = [dict(method=meth, target=c, mult=m, direction="elicit") for c in lab.evalq.concept]
                U, K, V, S = _edit_for(lab, specs)
                kl = st.kl_to_unsteered(lab.bb, ps_n, lab.layer, st.rowwise_steer(U, K, V, S), allr, tail=tail,
                                        base_logp=lp0)
                rows.append(dict(method=meth, mult=float(m), kl=float(np.mean(kl))))
    return pd.DataFrame(rows)


def kl_at_concept(curve: pd.DataFrame, fid: pd.DataFrame, method: str, level: float = 1.0) -> float:
    """KL of ``method`` at the (linearly interpolated, along its multiplier grid) point where its mean concept score
    first reaches ``level``; NaN when it never does."""
    c = curve[curve.method == method].sort_values("mult")
    k = fid[fid.method == method].set_index("mult").loc[c.mult, "kl"].to_numpy()
    x = c.concept.to_numpy()
    for i in range(len(x)):
        if x[i] >= level:
            if i == 0:
                return float(k[0])
            t = (level - x[i - 1]) / max(x[i] - x[i - 1], 1e-9)
            return float(np.exp((1 - t) * np.log(max(k[i - 1], 1e-12)) + t * np.log(max(k[i], 1e-12))))
    return float("nan")


def loss_ablation(sweep: pd.DataFrame, methods) -> pd.DataFrame:
    """Figure 4: tuned / unit steering score and fluency at m = 1 of the DII objectives."""
    tab = score_table(sweep[sweep.method.isin(methods)])
    flu = sweep[(sweep.method.isin(methods)) & (sweep.mult == 1.0)].groupby("method")[["fluency", "concept"]].mean()
    return tab.merge(flu, left_on="method", right_index=True)


def fmt(df: pd.DataFrame, digits=3):
    return df.round(digits)


def training_summary(lab) -> pd.DataFrame:
    rows = []
    for name in lab.methods:
        losses = lab.logs.get(name, [])
        rows.append(dict(method=name, kind=lab.methods[name].kind, steps=lab.train_steps.get(name, 0),
                         first_loss=losses[0] if losses else np.nan,
                         last_loss=float(np.mean(losses[-5:])) if losses else np.nan,
                         seconds=lab.timings.get(name, np.nan)))
    return pd.DataFrame(rows)


def layer_sweep(cfg, bb, lab, sweep) -> pd.DataFrame:
    """Tuned/unit steering score of CDAS, DiffMean and Lang. at every layer of ``cfg.layers`` (full mode; quick
    mode: only the notebook's layer, from its sweep)."""
    out = []
    for layer in (cfg.layers or (lab.layer,)):
        if layer == lab.layer:
            t = score_table(sweep[sweep.method.isin(MAIN_METHODS + ("none",))])
        else:
            other = build(cfg, bb, layer=layer, methods=MAIN_METHODS)
            t = score_table(steer_and_judge(other, list(MAIN_METHODS), cfg.mults))
        out.append(t.assign(layer=layer))
    return pd.concat(out, ignore_index=True)


@torch.no_grad()
def _generate_specs(lab, specs):
    U, K, V, S = _edit_for(lab, specs)
    return st.generate(lab.bb, [s["prompt"] for s in specs], lab.layer,
                       lambda rows: st.rowwise_steer(U[rows], K[rows], V[rows], S[rows]), lab.cfg.max_new)


def utility(texts, trunc, topics) -> float:
    """The world's utility (points, 0-100): the share of responses to clean topic prompts that are on the instructed
    topic and grammatical in every sentence (judge instruction = fluency = 2)."""
    js = [judge(t, tp, "ocean", truncated=tr) for t, tr, tp in zip(texts, trunc, topics)]
    return 100.0 * float(np.mean([j["instruction"] == 2.0 and j["fluency"] == 2.0 for j in js]))


def refusal_case(cfg, bb):
    """Safety case 1 on the world's refusal class (full mode; quick: None). Refusal is the concept: D+ from benign
    how-to requests to harmful ones (the refusal), D- the other way. With f- (m = 1), per method: the share of
    held-out harmful requests no longer refused, KL(unsteered || steered) on benign how-to transcripts, and the
    utility drop: points lost in the share of neutral topic prompts answered on topic and grammatically."""
    if not cfg.refusal:
        return None
    from .world import World, is_refusal

    w = World(cfg.seed)
    train, evalq = w.refusal_quadruples(cfg.n_quads, "train"), w.refusal_quadruples(cfg.n_eval, "eval")
    lab = build(cfg, bb, methods=MAIN_METHODS, train=train, evalq=evalq)
    harmful = list(evalq.positive_input)
    topics = list(TOPICS)
    neutral = [f"write about the {topics[i % len(topics)]} ." for i in range(cfg.n_eval)]
    with limit_threads(1):
        base_txt, _ = st.generate(bb, harmful, lab.layer, None, cfg.max_new)
        base_ref = np.mean([is_refusal(t) for t in base_txt])
        neu_txt, neu_tr = st.generate(bb, neutral, lab.layer, None, cfg.max_new)
        cidx = {"refusal": 0}
        ps_b = st.make_pairs(bb, evalq.assign(positive_input=evalq.negative_input), cidx, pairs=("D-",))

        def util(texts, trunc):
            return utility(texts, trunc, [topics[i % len(topics)] for i in range(len(texts))])
        u0 = util(neu_txt, neu_tr)
        rows = [dict(method="unsteered", refused=base_ref, suppression=0.0, kl=np.nan, utility=u0, utility_drop=0.0)]
        for m in MAIN_METHODS:
            spec = [dict(method=m, target="refusal", mult=1.0, direction="suppress", prompt=p) for p in harmful]
            txt, _ = _generate_specs(lab, spec)
            spec_n = [dict(method=m, target="refusal", mult=1.0, direction="suppress", prompt=p) for p in neutral]
            ntxt, ntr = _generate_specs(lab, spec_n)
            U, K, V, S = _edit_for(lab, [dict(method=m, target="refusal", mult=1.0, direction="suppress")] * len(ps_b))
            kl = st.kl_to_unsteered(bb, ps_b, lab.layer, st.rowwise_steer(U, K, V, S), torch.arange(len(ps_b)),
                                    tail=st.tail_for(bb.model, ps_b, lab.layer))
            u = util(ntxt, ntr)
            rows.append(dict(method=m, refused=np.mean([is_refusal(t) for t in txt]),
                             suppression=1.0 - np.mean([is_refusal(t) for t in txt]), kl=float(np.mean(kl)),
                             utility=u, utility_drop=u0 - u))
    return pd.DataFrame(rows)


BACKDOOR_METHODS = ("CDAS", "DiffMean", "Lang.", "DAS (CE)")


def backdoor_case(cfg, bb):
    """Safety case 2 on the world's backdoor class (full mode, on a backbone trained with it; else None). The backdoor
    behaviour is the concept: D+ from a clean ordinary instruction to the same instruction with the trigger word (and
    the hostile completion), D- the other way. With f- (m = 1; DiffMean/Lang.: minus the vector once), per method:
    on held-out triggered prompts (instruction/trigger-position combinations the training quadruples never hold) the
    backdoor rate (share of hostile completions), the share of the unsteered model's backdoor removed
    (``suppressed``) and the share answered on topic and grammatically (``answered``); KL(unsteered || steered) on
    teacher-forced clean transcripts x (+) y; the utility (:func:`utility`) on every ordinary instruction of the world
    (8 neutral, 80 concept) under the same intervention, its drop from the unsteered model's, and the share of those
    clean prompts answered with the hostile phrase (``false_trigger``)."""
    if not getattr(cfg, "backdoor", False):
        return None
    if not getattr(bb, "backdoor", False):
        print(f"backdoor case skipped: {bb.name} was not trained with the world's backdoor class "
              f"(full mode trains it so; pretrained=True and model_name load backbones without it)")
        return None
    from .world import World, instruction, is_hostile

    w = World(cfg.seed)
    train, evalq = w.backdoor_quadruples(cfg.n_quads, "train"), w.backdoor_quadruples(cfg.n_eval, "eval")
    lab = build(cfg, bb, methods=BACKDOOR_METHODS, train=train, evalq=evalq)
    trig, trig_topics = list(evalq.positive_input), list(evalq.topic)
    clean = [(t, instruction(t, c)) for t in TOPICS for c in (None, *CONCEPTS)]
    clean_topics, clean_prompts = [t for t, _ in clean], [p for _, p in clean]
    cidx = {"backdoor": 0}
    ps_c = st.make_pairs(bb, evalq.assign(positive_input=evalq.negative_input), cidx, pairs=("D-",))

    def measure(texts, trunc, ctexts, ctrunc):
        hostile = float(np.mean([is_hostile(t) for t in texts]))
        return dict(backdoor_rate=hostile, answered=utility(texts, trunc, trig_topics) / 100.0,
                    utility=utility(ctexts, ctrunc, clean_topics),
                    false_trigger=float(np.mean([is_hostile(t) for t in ctexts])))

    with limit_threads(1):
        b_txt, b_tr = st.generate(bb, trig, lab.layer, None, cfg.max_new)
        c_txt, c_tr = st.generate(bb, clean_prompts, lab.layer, None, cfg.max_new)
        base = measure(b_txt, b_tr, c_txt, c_tr)
        rows = [dict(method="unsteered", **base, suppressed=0.0, kl=np.nan, utility_drop=0.0)]
        tail = st.tail_for(bb.model, ps_c, lab.layer)
        for m in BACKDOOR_METHODS:
            def spec(prompts):
                return [dict(method=m, target="backdoor", mult=1.0, direction="suppress", prompt=p) for p in prompts]
            txt, tr = _generate_specs(lab, spec(trig))
            ctxt, ctr = _generate_specs(lab, spec(clean_prompts))
            U, K, V, S = _edit_for(lab, spec([None] * len(ps_c)))
            kl = st.kl_to_unsteered(bb, ps_c, lab.layer, st.rowwise_steer(U, K, V, S), torch.arange(len(ps_c)),
                                    tail=tail)
            r = measure(txt, tr, ctxt, ctr)
            r.update(method=m, suppressed=1.0 - r["backdoor_rate"] / max(base["backdoor_rate"], 1e-9),
                     kl=float(np.mean(kl)), utility_drop=base["utility"] - r["utility"])
            rows.append(r)
    cols = ["method", "backdoor_rate", "suppressed", "answered", "kl", "utility", "utility_drop", "false_trigger"]
    return pd.DataFrame(rows)[cols]


def scale_study(cfg, lab, table=None) -> pd.DataFrame:
    """CDAS - Lang. tuned steering score for the backbone sizes of ``cfg.archs`` (trained here) and the notebook's
    backbone (full mode; quick: empty). Exploratory: three tiny sizes."""
    if not cfg.archs:
        return pd.DataFrame(columns=["arch", "params", "cdas", "lang", "gap"])
    from .model import train_backbone

    rows = []
    sizes = [(a, None) for a in cfg.archs] + [("base (notebook)", lab)]
    for arch, other in sizes:
        if other is None:
            with limit_threads(1):
                bb, _, _ = train_backbone(arch, seed=cfg.seed, backdoor=bool(getattr(cfg, "backdoor", False)))
            other = build(cfg, bb, layer=max(1, min(bb.n_layer - 1, round(cfg.layer * bb.n_layer / 4))),
                          methods=("CDAS", "Lang."))
        t = score_table(steer_and_judge(other, ["CDAS", "Lang."], cfg.mults)).set_index("method")
        rows.append(dict(arch=arch, params=sum(p.numel() for p in other.bb.model.parameters()),
                         cdas=t.loc["CDAS", "tuned"], lang=t.loc["Lang.", "tuned"],
                         gap=t.loc["CDAS", "tuned"] - t.loc["Lang.", "tuned"]))
    return pd.DataFrame(rows).sort_values("params").reset_index(drop=True)


def user_data(cfg, bb):
    """With ``data_path``: CDAS trained on the file's quadruples (per concept, at most ``n_quads`` each) on the
    notebook's backbone; returns the training summary and each concept's factors f+ and f- (None without a file)."""
    if cfg.data_path is None:
        return None
    from .data import read_contrastive

    quads = read_contrastive(cfg.data_path)
    quads = quads.groupby("concept", sort=False).head(cfg.n_quads).reset_index(drop=True)
    quads["topic"] = "user"
    lab = build(cfg, bb, methods=("CDAS",), train=quads, evalq=quads.iloc[:0])
    s = lab.methods["CDAS"]
    factors = pd.DataFrame(dict(concept=lab.concepts, f_pos=s.f_pos.numpy(), f_neg=s.f_neg.numpy(),
                                n_quads=quads.groupby("concept", sort=False).size().to_numpy()))
    return training_summary(lab), factors
