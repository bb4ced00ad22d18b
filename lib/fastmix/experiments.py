"""One function per figure of the FastMix notebook; each returns plain results."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lib.common.threads import limit_threads

from . import mixture as mx
from .data import DOC_SOURCES, arithmetic_qa_split, build_corpora, cloze_items


@dataclass
class Setup:
    corpora: object
    tok: object
    vocab_size: int
    names: list
    streams: list
    val_x: torch.Tensor  # target validation rows (the search signal)
    test_x: torch.Tensor  # target test rows (the reported target loss), disjoint texts
    heldout_x: dict  # source -> held-out rows (None for noise)
    info: dict
    target_b: dict = None  # F7 (full mode, or target="B"): Masked "val" / "test" arithmetic QA, "cloze"; items


def _encode(tok, texts):
    from lib.common.bpe import encode_corpus

    return encode_corpus(tok, texts) if texts else None


def prepare(cfg) -> Setup:
    """Corpora, a BPE tokenizer of ``cfg.vocab_size`` tokens trained on the training texts, token streams."""
    from lib.common.bpe import train_bpe

    rng = cfg.rng("corpora")
    cor = build_corpora(cfg.sources, rng, data_path=cfg.data_path, target_set=cfg.target_set)
    texts = [t for s in cor.names for t in cor.train[s]]
    tok = train_bpe(texts, cfg.vocab_size)
    V = tok.get_vocab_size()
    streams = [_encode(tok, cor.train[s]) for s in cor.names]
    L = cfg.seq_len
    val_x = mx.stream_rows(_encode(tok, cor.target_val), cfg.n_val_rows, L, cfg.seed + 1)
    test_x = mx.stream_rows(_encode(tok, cor.target_test), cfg.n_eval_rows, L, cfg.seed + 2)
    held = {}
    for j, s in enumerate(cor.names):
        st = _encode(tok, cor.heldout[s])
        if st is None:
            held[s] = torch.randint(1, V, (cfg.n_eval_rows, L + 1), generator=torch.Generator().manual_seed(cfg.seed))
        else:
            held[s] = mx.stream_rows(st, cfg.n_eval_rows, L, cfg.seed + 3 + j)
    info = {"n_tokens": {s: (0 if st is None else int(st.numel())) for s, st in zip(cor.names, streams)},
            "vocab_size": V, **cor.info}
    setup = Setup(cor, tok, V, list(cor.names), streams, val_x, test_x, held, info)
    if cfg.mode == "full" or cfg.target == "B":  # quick mode with target A builds nothing more (and draws no RNG)
        setup.target_b = prepare_target_b(cfg, tok, cor.target_val + cor.target_test)
    return setup


def prepare_target_b(cfg, tok, cloze_docs):
    """Target B (the SFT variant): arithmetic QA rows scored on the answer tokens only, validation (the search
    signal) and test questions distinct; the transfer task, a cloze on target A's docstrings (never trained on),
    also scored on its answer word. One item per row, ``cfg.n_val_rows`` / ``cfg.n_eval_rows`` rows."""
    rng = cfg.rng("target_b")
    val, test = arithmetic_qa_split(cfg.n_val_rows, cfg.n_eval_rows, rng)
    cloze = cloze_items(cloze_docs, cfg.n_eval_rows, rng)
    return dict(val=mx.encode_items(tok, val, cfg.seq_len), test=mx.encode_items(tok, test, cfg.seq_len),
                cloze=mx.encode_items(tok, cloze, cfg.seq_len), items=dict(val=val, test=test, cloze=cloze))


def sampler(cfg, setup, name):
    return mx.MixtureSampler(setup.streams, cfg.seq_len, setup.vocab_size, int(cfg.rng(name).integers(2**31)))


def proxy(cfg, setup, name, size="proxy", n2=None):
    n_layer, n_embd = (cfg.proxy_layers, cfg.proxy_embd) if size == "proxy" else (cfg.target_layers, cfg.target_embd)
    n2 = cfg.n2 if n2 is None else n2
    return mx.make_proxy(setup.vocab_size, n_layer, n_embd, cfg.seq_len, int(cfg.rng("init/" + name).integers(2**31)),
                         attn="eager" if n2 > 1 else "sdpa")  # double backward through eager attention


@limit_threads(1)
def run_search(cfg, setup):
    """FastMix (head-only and full one-step hypergradient), RegMix-lite, uniform and (full mode) DoReMi: the mixtures
    and their costs."""
    k = len(setup.names)
    out = {"uniform": dict(alpha=np.full(k, 1 / k), proxy_steps=0, passes=0, trajectory=None)}
    for head_only, name in ((True, "FastMix (head)"), (False, "FastMix (full)")):
        res = mx.fastmix_search(proxy(cfg, setup, "fastmix"), sampler(cfg, setup, "fastmix"), setup.val_x,
                                steps=cfg.proxy_steps, n1=cfg.n1, n2=cfg.n2, lr=cfg.lr, lr_mix=cfg.lr_mix,
                                lam=cfg.lam, beta=cfg.beta, head_only=head_only, per_source=cfg.per_source)
        out[name] = dict(alpha=res.alpha, proxy_steps=res.proxy_steps, passes=res.passes, trajectory=res.trajectory,
                         outer_steps=res.outer_steps)
    extra = None if setup.target_b is None else {"B": setup.target_b["val"]}  # F7 refits on these (no new proxy)
    rm = mx.regmix_lite(lambda m: proxy(cfg, setup, f"regmix{m}"), sampler(cfg, setup, "regmix"), setup.val_x,
                        n_proxies=cfg.n_proxies, steps=cfg.proxy_steps, rng=cfg.rng("regmix"),
                        n_rows=cfg.per_source * k, seed=cfg.seed, extra_targets=extra)
    out["RegMix-lite"] = dict(alpha=rm.alpha, proxy_steps=rm.proxy_steps, passes=rm.passes, trajectory=None,
                              mixtures=rm.mixtures, losses=rm.losses, losses_b=rm.extra_losses.get("B"))
    if cfg.mode == "full":  # DoReMi in full mode only (as the issue): a reference and a proxy of proxy_steps each
        dr = mx.doremi(proxy(cfg, setup, "doremi-ref", n2=1), proxy(cfg, setup, "doremi", n2=1),
                       sampler(cfg, setup, "doremi"), steps=cfg.proxy_steps, lr=cfg.lr, per_source=cfg.per_source)
        out["DoReMi"] = dict(alpha=dr.alpha, proxy_steps=dr.proxy_steps, passes=dr.passes, trajectory=None,
                             doremi_trajectory=dr.trajectory)
    return out


@limit_threads(1)
def evaluate_mixtures(cfg, setup, search):
    """A fresh model per mixture, trained on rows sampled from Cat(alpha); loss on the target test split and on every
    source's held-out split. Returns a long DataFrame (method, domain, loss) and a summary per method."""
    rows, summ = [], []
    k = len(setup.names)
    for method, r in search.items():
        model = proxy(cfg, setup, "target", size="target")  # same init for every method
        mx.train_on_mixture(model, sampler(cfg, setup, "target"), r["alpha"], steps=cfg.target_steps, lr=cfg.lr,
                            n_rows=cfg.per_source * k)
        tl = mx.eval_loss(model, setup.test_x)
        rows.append(dict(method=method, domain="target (test)", loss=tl))
        for s in setup.names:
            rows.append(dict(method=method, domain=s, loss=mx.eval_loss(model, setup.heldout_x[s])))
        summ.append(dict(method=method, target_loss=tl, proxy_steps=r["proxy_steps"], passes=r["passes"],
                         **{f"a[{s}]": float(a) for s, a in zip(setup.names, r["alpha"])}))
    return pd.DataFrame(rows), pd.DataFrame(summ).set_index("method")


def trajectories(setup, search):
    """Long DataFrame of softmax(z) vs inner step for the FastMix runs."""
    rows = []
    for method, r in search.items():
        if r.get("trajectory") is None:
            continue
        for t, a in zip(r["outer_steps"], r["trajectory"]):
            rows += [dict(method=method, step=t, source=s, alpha=float(v)) for s, v in zip(setup.names, a)]
    return pd.DataFrame(rows)


@limit_threads(1)
def lemma_check(cfg, setup, alpha=None, n_batches=10_000, pool=None, checkpoints=(10, 100, 1000, 10_000)):
    """Reparameterisation lemma (Eq. 2) at a fixed w: mean gradient of the alpha-sampled batch loss vs the uniform-
    sampled, alpha-weighted batch loss, over ``n_batches`` Monte-Carlo batches drawn from a pool of ``pool`` rows per
    source (head gradients per row computed once; each batch's gradient is a weighted sum of them).
    Returns a DataFrame: n_batches, rel_diff (sampled vs weighted), rel_err of each to the exact sum_i alpha_i g_i."""
    k = len(setup.names)
    pool = pool or cfg.lemma_pool
    rng = cfg.rng("lemma")
    alpha = np.asarray(alpha if alpha is not None else rng.dirichlet(np.ones(k)), dtype=float)
    model = proxy(cfg, setup, "lemma")
    smp = sampler(cfg, setup, "lemma")
    mx.train_on_mixture(model, smp, np.full(k, 1 / k), steps=cfg.lemma_warm_steps, lr=cfg.lr, n_rows=cfg.per_source * k)
    x, group = smp.uniform(pool)
    with torch.no_grad():
        gr = torch.cat([mx.head_grad_rows(*mx.hidden_and_logits(model, x[i:i + 64]), x[i:i + 64]).flatten(1)
                        for i in range(0, len(x), 64)]).double().numpy()  # (k*pool, V*d)
    exact = sum(alpha[i] * gr[group.numpy() == i].mean(0) for i in range(k))
    B, b = cfg.lemma_per_source * k, cfg.lemma_per_source  # the brief's batch of k x 8 rows
    # alpha-sampled: each row picks source ~ Cat(alpha), then a pool row uniformly; batch loss = mean over B rows.
    src = rng.choice(k, size=(n_batches, B), p=alpha)
    idx_s = src * pool + rng.integers(0, pool, size=(n_batches, B))
    # uniform-sampled, alpha-weighted: b rows of every source, row weight alpha_i / sum of weights in the batch (= b).
    idx_w = (np.arange(k).repeat(b)[None, :] * pool + rng.integers(0, pool, size=(n_batches, B)))
    w_row = np.tile(alpha.repeat(b) / b, (n_batches, 1))
    out = []
    nrm = np.linalg.norm(exact)
    for n in checkpoints:
        cs = np.bincount(idx_s[:n].ravel(), minlength=k * pool) / (n * B)
        cw = np.bincount(idx_w[:n].ravel(), weights=w_row[:n].ravel(), minlength=k * pool) / n
        gs, gw = cs @ gr, cw @ gr
        out.append(dict(n_batches=n, rel_diff=float(np.linalg.norm(gs - gw) / nrm),
                        err_sampled=float(np.linalg.norm(gs - exact) / nrm),
                        err_weighted=float(np.linalg.norm(gw - exact) / nrm)))
    # per-batch variance (trace of the covariance of one batch's gradient), exact from the pool statistics
    mu = [gr[group.numpy() == i].mean(0) for i in range(k)]
    var_i = [float(((gr[group.numpy() == i] - mu[i]) ** 2).sum(1).mean()) for i in range(k)]
    second = sum(alpha[i] * (var_i[i] + float(mu[i] @ mu[i])) for i in range(k))
    var_sampled = (second - float(exact @ exact)) / B
    var_weighted = sum((alpha[i] ** 2) * var_i[i] / b for i in range(k))
    df = pd.DataFrame(out)
    df.attrs.update(alpha=alpha, var_sampled=var_sampled, var_weighted=var_weighted, dim=gr.shape[1])
    return df


def claim_values(cfg, setup, search, summary, lemma):
    """The numbers behind C1, C2, C4."""
    k = len(setup.names)
    u = summary.loc["uniform", "target_loss"]
    head = summary.loc["FastMix (head)"]
    noise, top, relevant = c4_values(setup, head[[f"a[{s}]" for s in setup.names]].to_numpy(dtype=float))
    steps_ratio = head["proxy_steps"] / summary.loc["RegMix-lite", "proxy_steps"]
    return dict(c1=float(lemma.rel_diff.iloc[-1]), c2_ratio=float(head["target_loss"] / u), c2_steps=float(steps_ratio),
                c2_ok=float(head["target_loss"] / u <= 0.95 and steps_ratio <= 1 / cfg.n_proxies + 1e-12),
                c2_full_ratio=float(summary.loc["FastMix (full)", "target_loss"] / u),
                c3_ratio=float(head["target_loss"] / summary.loc["RegMix-lite", "target_loss"]),
                c4_noise=noise, c4_top=top, c4_ok=float(noise < 1 / (2 * k) and relevant))


def c4_values(setup, alpha):
    """alpha(noise) and whether the largest weight sits on a docstring family (target-relevant)."""
    names = setup.names
    a = np.asarray(alpha)
    noise = float(a[names.index("noise")]) if "noise" in names else float("nan")
    top = names[int(np.argmax(a))]
    return noise, top, top in DOC_SOURCES


# ---------------------------------------------------------------- full-mode figures F5 (ablation), F6 (robustness)
# one knob changed at a time from the run's (n1, n2, lam, beta), as the paper's ablation tables
ABLATION = (("n1", 1), ("n1", 5), ("n1", 10), ("n1", 20), ("n1", 50), ("n2", 5), ("lam", 1e-5), ("lam", 1.0),
            ("beta", 0.1), ("beta", 0.3))


def score_mixture(cfg, setup, alpha):
    """The read-out of F5 and F6: a fresh proxy-size model (the same init and batch stream for every mixture: common
    random numbers) trained ``cfg.proxy_steps`` steps on rows sampled from Cat(alpha); its target test loss."""
    model = proxy(cfg, setup, "score", n2=1)
    mx.train_on_mixture(model, sampler(cfg, setup, "score"), alpha, steps=cfg.proxy_steps, lr=cfg.lr,
                        n_rows=cfg.per_source * len(setup.names))
    return mx.eval_loss(model, setup.test_x)


def _search(cfg, setup, name, *, n1, n2, lam, beta, z0=None):
    return mx.fastmix_search(proxy(cfg, setup, name, n2=n2), sampler(cfg, setup, name), setup.val_x,
                             steps=cfg.proxy_steps, n1=n1, n2=n2, lr=cfg.lr, lr_mix=cfg.lr_mix, lam=lam, beta=beta,
                             head_only=True, per_source=cfg.per_source, z0=z0)


@limit_threads(1)
def ablation(cfg, setup, variants=ABLATION, force=False):
    """F5 (the paper's ablation tables): FastMix (head-only) with one of n1, n2, lam, beta changed at a time from the
    run's values (row knob "base": the run's own), every search on the same proxy init and batch stream, each mixture
    scored by :func:`score_mixture`. A full-mode figure: returns None in quick mode unless ``force``."""
    if cfg.mode == "quick" and not force:
        return None
    base = dict(n1=cfg.n1, n2=cfg.n2, lam=cfg.lam, beta=cfg.beta)
    rows, seen = [], set()
    for knob, value in (("base", None),) + tuple(variants):
        if knob not in ("base", *base):
            raise ValueError(f"ablation knob {knob!r}; allowed: {list(base)}")
        kw = dict(base) if knob == "base" else {**base, knob: value}
        key = tuple(kw.values())
        if key in seen:  # a variant equal to the run's own setting
            continue
        seen.add(key)
        res = _search(cfg, setup, "fastmix", **kw)
        rows.append(dict(knob=knob, value=float(kw[knob]) if knob != "base" else float("nan"), **kw,
                         target_loss=score_mixture(cfg, setup, res.alpha), proxy_steps=res.proxy_steps,
                         passes=res.passes, outer_steps=len(res.outer_steps) - 1,
                         **{f"a[{s}]": float(a) for s, a in zip(setup.names, res.alpha)}))
    return pd.DataFrame(rows)


@limit_threads(1)
def robustness(cfg, setup, search, n_runs=5, z_scale=1.0, force=False):
    """F6 (the paper's initialisation study): ``n_runs`` FastMix (head-only) searches from random z0 ~ N(0, z_scale^2)
    (each with its own proxy init and batch stream) vs ``n_runs`` RegMix-lite seeds. The RegMix-lite seeds are
    disjoint blocks of m = M // n_runs of the run's M proxies (each proxy has its own Dirichlet mixture and init, so
    the blocks are independent RegMix-lite runs with m proxies), each refitted with its own regressor seed and
    candidates. Every mixture is scored by :func:`score_mixture`. Returns None in quick mode unless ``force``."""
    if cfg.mode == "quick" and not force:
        return None
    rm = search["RegMix-lite"]
    M = len(rm["losses"])
    m = M // n_runs
    if m < 2:
        raise ValueError(f"robustness needs >= 2 RegMix-lite proxies per seed; have {M} proxies for {n_runs} runs")
    k, rng, rows = len(setup.names), cfg.rng("zinit"), []
    for j in range(n_runs):
        z0 = rng.normal(0.0, z_scale, size=k)
        res = _search(cfg, setup, f"fastmix-init{j}", n1=cfg.n1, n2=cfg.n2, lam=cfg.lam, beta=cfg.beta, z0=z0)
        rows.append(dict(method="FastMix (head)", run=j, proxy_steps=res.proxy_steps, alpha=res.alpha,
                         z0_alpha=mx.softmax(z0)))
    for j in range(n_runs):
        idx = np.arange(j * m, (j + 1) * m)
        alpha = mx.regmix_fit(rm["mixtures"][idx], rm["losses"][idx], cfg.rng(f"regmix-seed{j}"), seed=cfg.seed + j)
        rows.append(dict(method=f"RegMix-lite (m = {m})", run=j, proxy_steps=m * cfg.proxy_steps, alpha=alpha,
                         z0_alpha=None))
    for r in rows:
        r["target_loss"] = score_mixture(cfg, setup, r["alpha"])
    df = pd.DataFrame(rows)
    df.attrs["names"] = list(setup.names)
    return df


def c5_values(abl, rob):
    """The numbers behind C5: (a) loss at n2 = 1 / loss at n2 = 5, (b) best loss at n1 in {10, 20} / best at n1 in
    {1, 50}, (c) std of the target loss over FastMix's z-inits / over RegMix-lite's seeds (each <= its threshold when
    the paper's direction holds). NaN where the run lacks the rows (e.g. a base n2 other than 1)."""
    base = abl[abl.knob == "base"].iloc[0]
    n1_rows = abl[abl.knob.isin(["base", "n1"])]  # n2, lam, beta at the run's values

    def best(rows):
        return float(rows.target_loss.min()) if len(rows) else float("nan")

    n2_5 = best(abl[(abl.knob == "n2") & (abl.n2 == 5)])
    fm = rob[rob.method == "FastMix (head)"].target_loss
    rm = rob[rob.method != "FastMix (head)"].target_loss
    return dict(c5a=(float(base.target_loss) if base.n2 == 1 else float("nan")) / n2_5,
                c5b=best(n1_rows[n1_rows.n1.isin([10, 20])]) / best(n1_rows[n1_rows.n1.isin([1, 50])]),
                c5c=float(fm.std(ddof=1) / rm.std(ddof=1)), std_fastmix=float(fm.std(ddof=1)),
                std_regmix=float(rm.std(ddof=1)), mean_fastmix=float(fm.mean()), mean_regmix=float(rm.mean()))


# ---------------------------------------------------------------- F7: target B (the paper's SFT table)
@limit_threads(1)
def run_target_b(cfg, setup, search):
    """F7: the mixture search with target B (arithmetic QA, answer-token loss) as the signal. FastMix (head-only and
    full) runs a new proxy search on target B's validation rows; RegMix-lite refits its regressor on the answer-token
    losses of the *same* M proxies as the target-A search (scored on both targets when trained; charged their full
    proxy steps again); DoReMi never sees a target, so its mixture is the target-A run's; "FastMix (target A)" is the
    target-A mixture, for contrast. Each mixture trains a fresh evaluation model (the same init and batch stream for
    all) scored on target B's test questions, on the transfer cloze (both answer tokens only) and on target A's test
    split. Returns (table, searches), or None when the run has no target B (quick mode with target="A")."""
    tb = setup.target_b
    if tb is None:
        return None
    k = len(setup.names)
    out = {"uniform": dict(alpha=np.full(k, 1 / k), proxy_steps=0)}
    for head_only, name in ((True, "FastMix (head)"), (False, "FastMix (full)")):
        res = mx.fastmix_search(proxy(cfg, setup, "fastmix-b"), sampler(cfg, setup, "fastmix-b"), tb["val"],
                                steps=cfg.proxy_steps, n1=cfg.n1, n2=cfg.n2, lr=cfg.lr, lr_mix=cfg.lr_mix,
                                lam=cfg.lam, beta=cfg.beta, head_only=head_only, per_source=cfg.per_source)
        out[name] = dict(alpha=res.alpha, proxy_steps=res.proxy_steps, trajectory=res.trajectory)
    rm = search["RegMix-lite"]
    out["RegMix-lite"] = dict(alpha=mx.regmix_fit(rm["mixtures"], rm["losses_b"], cfg.rng("regmix-b"), seed=cfg.seed),
                              proxy_steps=rm["proxy_steps"])
    if "DoReMi" in search:
        out["DoReMi"] = dict(alpha=search["DoReMi"]["alpha"], proxy_steps=search["DoReMi"]["proxy_steps"])
    out["FastMix (target A)"] = dict(alpha=search["FastMix (head)"]["alpha"],
                                     proxy_steps=search["FastMix (head)"]["proxy_steps"])
    rows = []
    for method, r in out.items():
        model = proxy(cfg, setup, "target-b", size="target")
        mx.train_on_mixture(model, sampler(cfg, setup, "target-b"), r["alpha"], steps=cfg.target_steps, lr=cfg.lr,
                            n_rows=cfg.per_source * k)
        rows.append(dict(method=method, qa_loss=mx.eval_loss(model, tb["test"]), cloze_loss=mx.eval_loss(model, tb["cloze"]),
                         target_a_loss=mx.eval_loss(model, setup.test_x), proxy_steps=r["proxy_steps"],
                         **{f"a[{s}]": float(a) for s, a in zip(setup.names, r["alpha"])}))
    return pd.DataFrame(rows).set_index("method"), out


def c6_value(table):
    """C6: FastMix (head)'s target-B test loss / the best of the baselines' (uniform, RegMix-lite, DoReMi where run)."""
    base = table.loc[[m for m in ("uniform", "RegMix-lite", "DoReMi") if m in table.index], "qa_loss"]
    return float(table.loc["FastMix (head)", "qa_loss"] / base.min())
