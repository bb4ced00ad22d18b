"""Unit tests of lib.mqar: hooks, sentence scoring, benchmarks, metrics, the quantizer, baselines, the CrowS reader."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from lib.common.seeding import rng_for
from lib.mqar import config
from lib.mqar import data as D
from lib.mqar.baselines import inlp, sentence_debias
from lib.mqar.metrics import crows_score, fped_fned, gap_closed, ss_lms_icat, winobias
from lib.mqar.model import (RECIPE, Backbone, TinyGPT2, load_checkpoint, pair_scores, sentence_scores,
                            shared_suffix, token_logprobs)
from lib.mqar.mqar import Identity, QRModule, train_mqar


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run far faster single-threaded on a shared machine (torch's pool oversubscribes it)."""
    from lib.common import limit_threads

    with limit_threads(1):
        yield


@pytest.fixture(scope="module")
def bb():
    state, tok, r = load_checkpoint()
    return Backbone(TinyGPT2(state, r["n_head"]), tok, "tiny")


def test_fast_forward_equals_transformers(bb):
    from lib.common.tiny_lm import make_gpt2

    m = make_gpt2(RECIPE["vocab_size"], n_layer=RECIPE["n_layer"], n_embd=RECIPE["n_embd"], n_head=RECIPE["n_head"],
                  n_positions=RECIPE["n_positions"])
    m.load_state_dict(bb.lm.p, strict=False)
    m.tie_weights()
    ids = torch.randint(1, RECIPE["vocab_size"], (3, 14), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = m(ids).logits
    assert torch.allclose(ref, bb.lm.logits_of(bb.lm.hidden(ids)), atol=1e-4)


def test_identity_module_at_hook_leaves_logits_unchanged(bb):
    ids = torch.randint(1, 500, (2, 10), generator=torch.Generator().manual_seed(1))
    ident = Identity()
    base = bb.lm.logits_of(bb.lm.hidden(ids))
    hooked = bb.lm.logits_of(bb.lm.hidden(ids, pre_attn=lambda i, x: ident(x)[0]))
    assert torch.equal(base, hooked)
    # and the hook really sits in the forward: a non-identity edit changes the logits
    assert not torch.allclose(base, bb.lm.logits_of(bb.lm.hidden(ids, pre_attn=lambda i, x: 0.5 * x)))


def test_sentence_score_is_sum_of_token_logprobs(bb):
    samples = D.corpus(4, 0.9, rng_for(0, "t"))
    ids, lens, _ = bb.encode(samples)
    got = sentence_scores(bb.lm, ids, lens)
    for i in range(len(samples)):
        tot = 0.0
        for t in range(1, lens[i]):  # one prefix at a time
            with torch.no_grad():
                lp = bb.lm.logits_of(bb.lm.hidden(torch.as_tensor(ids[i:i + 1, :t])))[0, -1].log_softmax(-1)
            tot += float(lp[ids[i, t]])
        assert got[i] == pytest.approx(tot, abs=1e-4)


def test_pair_scores_count_only_unmodified_suffix(bb):
    p = D.make_cpt(2, rng_for(0, "cp"))[0]
    a, la, _ = bb.encode([p.more])
    b, lb, _ = bb.encode([p.less])
    n = bb.n_after([p.more], "person")
    suffix = bb.tok.encode(p.more.text[p.more.spans["person"][1]:]).ids  # " is <trait> ."
    assert n[0] == len(suffix) >= 3 and list(a[0, la[0] - n[0]:la[0]]) == suffix
    sa, sb = pair_scores(bb.lm, a, la, b, lb, n_suffix=n)
    ta = token_logprobs(bb.lm, a, la)[0]
    assert sa[0] == pytest.approx(ta[la[0] - 1 - n[0]:la[0] - 1].sum(), abs=1e-6)  # token t sits in column t - 1
    assert sa[0] != sb[0]
    # without n_suffix: the shared token suffix (which may include a shared sub-word ending of the names)
    q = shared_suffix(a[0, :la[0]], b[0, :lb[0]])
    assert q >= n[0] and pair_scores(bb.lm, a, la, b, lb)[0][0] == pytest.approx(ta[la[0] - 1 - q:la[0] - 1].sum())


def test_benchmark_pairs_differ_only_in_swapped_word():
    eng = D.engine()
    for p in D.make_cpt(30, rng_for(0, "cp")):
        wa, wb = p.more.text.split(), p.less.text.split()
        diff = [k for k in range(max(len(wa), len(wb))) if k >= min(len(wa), len(wb)) or wa[k] != wb[k]]
        person_words = len(p.more.slots["person"].split())
        assert len(wa) == len(wb) and 1 <= len(diff) <= person_words
        assert p.less.text == eng.swap(p.more, "person", p.less.slots["person"]).text
    for it in D.make_sst(30, rng_for(0, "ss")):
        assert it.stereo.slots["person"] == it.anti.slots["person"] == it.unrelated.slots["person"]
        assert it.stereo.slots["trait"] != it.anti.slots["trait"]
        assert it.unrelated.slots["trait"] in D.UNRELATED


def test_planted_associations_have_the_set_strength():
    s = D.corpus(6000, 0.9, rng_for(0, "c"))
    fem = [x for x in s if x.template in (0, 1, 2) and x.slots["person"] in D.NOUNS["f"]]
    share = np.mean([x.slots["trait"] in D.TRAITS["F"] for x in fem])
    assert 0.9 < share < 0.95  # b + (1 - b) / 6 = 0.917
    occ = [x for x in s if x.template == 3 and x.slots["occupation"] == "nurse"]
    assert np.mean([D.cell_of(x)[0] == "f" for x in occ]) > 0.95


def test_token_labels_mark_cues(bb):
    s = D.engine().render(0, {"person": "Zubina", "trait": "kind"})
    ids, lens, lab = bb.encode([s])
    toks = [bb.tok.id_to_token(int(t)) for t in ids[0, :lens[0]]]
    cue = [t for t, l in zip(toks, lab[0, :lens[0]]) if l[0] >= 0]
    assert "".join(cue) == "Zubina" and (lab[0, 1:3] == [1, 1]).all() and (lab[0, 3:lens[0]] == -1).all()


def test_metrics_on_hand_made_tables():
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    yhat = np.array([1, 0, 1, 1, 0, 0, 0, 1])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # overall FPR 1/4, group FPRs 1/2 and 0; overall FNR 1/4, group FNRs 0 and 1/2
    assert fped_fned(y, yhat, g) == pytest.approx((0.5, 0.5))
    r = ss_lms_icat([2, 2, 0, 5], [1, 3, -1, 4], [0, 0, 2, 0])
    assert r["SS"] == 75.0 and r["LMS"] == 75.0 and r["ICAT"] == pytest.approx(37.5)
    assert crows_score([1, 2, 3, 3], [0, 3, 1, 3]) == 62.5
    assert winobias(90.0, 60.0)["diff"] == 30.0
    assert gap_closed(90.0, 58.0) == pytest.approx(0.8) and gap_closed(40.0, 65.0) < 0


def test_quantizer_snaps_to_codebook_with_straight_through_gradient():
    torch.manual_seed(0)
    m = QRModule(16, 4, 10, 2)
    x = torch.randn(5, 16)
    z = m.e1(x)
    r, idx = m.quantize(z)
    cb = m.codebook.detach()
    for j in range(4):
        assert torch.equal(r[:, j], cb[j][idx[:, j]])
        assert torch.all((z[:, j, None] - cb[j]).abs().min(-1).values == (z[:, j] - r[:, j]).abs())
    zz = z.detach().requires_grad_(True)
    r_st = zz + (m.quantize(zz)[0] - zz).detach()
    r_st.sum().backward()
    assert torch.equal(zz.grad, torch.ones_like(zz))


def test_mqar_training_runs_and_stage2_freezes_discriminator(bb):
    txt = D.module_text(64, 0.9, rng_for(0, "m"))
    ids, lens, lab = bb.encode(txt)
    s1 = train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=0, batch=8, seed=0)
    full = train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=3, batch=8, seed=0, stage1=s1)
    for a, b in zip(s1.modules, full.modules):
        assert all(torch.equal(p, q) for p, q in zip(a.disc.parameters(), b.disc.parameters()))
        assert not torch.equal(a.e1[0].weight, b.e1[0].weight)
    again = train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=0, batch=8, seed=0)
    assert all(torch.equal(p, q) for p, q in zip(s1.modules[0].parameters(), again.modules[0].parameters()))
    assert len(full.log["adv"]) == 3 and np.isfinite(full.log["rec"]).all()


def test_inlp_removes_a_planted_linear_signal_and_sentence_debias_its_direction():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    X = rng.normal(size=(600, 10))
    X[:, 0] += 3 * (2 * y - 1)
    P, accs = inlp(X, np.c_[y], 3)
    assert accs[0, 0] > 0.95
    after = LogisticRegression(max_iter=500).fit(X[:400] @ P, y[:400]).score(X[400:] @ P, y[400:])
    assert after < 0.65
    diffs = np.outer(rng.normal(size=50) + 3, np.eye(10)[2]) + 0.01 * rng.normal(size=(50, 10))
    P = sentence_debias(diffs, 1)
    assert np.abs(P @ np.eye(10)[2]).max() < 0.05 and np.allclose(P @ np.eye(10)[5], np.eye(10)[5], atol=0.05)


def test_crows_reader_fixture_and_refusals(tmp_path):
    df = D.read_crows("data/mqar/crows_fixture.csv")
    assert list(df.columns) == list(D.CROWS_COLUMNS) and len(df) == 4
    bad = tmp_path / "bad.csv"
    bad.write_text("sent_more,sent_less,bias_type\na,b,gender\n")
    with pytest.raises(ValueError, match="stereo_antistereo"):
        D.read_crows(bad)
    bad.write_text("sent_more,sent_less,stereo_antistereo,bias_type\na,b,maybe,gender\n")
    with pytest.raises(ValueError, match="maybe"):
        D.read_crows(bad)


def test_config_refuses_bad_parameters():
    with pytest.raises(ValueError, match="bias_strength"):
        config(bias_strength=1.5, verbose=False)
    with pytest.raises(ValueError, match="bias_strength"):
        config(bias_strength=0.7, verbose=False)  # the checkpoint was trained with 0.9
    with pytest.raises(ValueError, match="n_items"):
        config(n_items=101, verbose=False)
    with pytest.raises(ValueError, match="levels"):
        config(levels=1, verbose=False)


def test_gender_only_variant_shares_stage1_and_plays_against_its_own_discriminator(bb):
    txt = D.module_text(64, 0.9, rng_for(0, "m"))
    ids, lens, lab = bb.encode(txt)
    s1 = train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=0, batch=8, seed=0, aux_attrs=(0,))
    assert all(m.disc_aux is not None and m.disc_aux[-1].out_features == 1 for m in s1.modules)
    g = train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=3, batch=8, seed=0, stage1=s1, attrs=(0,))
    for a, b in zip(s1.modules, g.modules):
        assert all(torch.equal(p, q) for p, q in zip(a.disc_aux.parameters(), b.disc_aux.parameters()))
        assert not torch.equal(a.e1[0].weight, b.e1[0].weight)
    with pytest.raises(ValueError, match="attrs"):
        train_mqar(bb.lm, ids, lens, lab, steps1=3, steps2=1, batch=8, seed=0, stage1=s1, attrs=(1,))
    assert bb.lm.hidden(torch.as_tensor(ids[:2]), pre_attn=lambda i, x: x, stop_after=0) is None


def _tiny_random_gpt2(seed=0):
    """A randomly initialised transformers GPT2LMHeadModel built offline from a config (nothing downloaded)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=97, n_layer=2, n_embd=32, n_head=4, n_positions=24, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(cfg).eval()


def test_hub_lm_hooks_identity_leaves_logits_unchanged_and_sit_where_the_fast_forward_puts_them():
    from lib.mqar.model import HubLM

    model = _tiny_random_gpt2()
    hub = HubLM(model, "tiny-random-gpt2")
    ids = torch.randint(0, 97, (3, 11), generator=torch.Generator().manual_seed(2))
    ident = Identity()
    with torch.no_grad():
        ref = model(input_ids=ids).logits
        base = hub.logits_of(hub.hidden(ids))
        hooked = hub.logits_of(hub.hidden(ids, pre_attn=lambda i, x: ident(x)[0], final=lambda h: h))
        assert torch.allclose(ref, base, atol=1e-5) and torch.equal(base, hooked)
        # a real edit at the hook changes the logits, and equals the same edit in the torch-only forward (same
        # hook point: the LayerNorm-ed attention input; same final-state edit)
        edit, fin = (lambda i, x: 0.5 * x + 0.1 * i), (lambda h: h.flip(-1))
        e_hub = hub.logits_of(hub.hidden(ids, pre_attn=edit, final=fin))
        fast = TinyGPT2.from_hf(model)
        e_fast = fast.logits_of(fast.hidden(ids, pre_attn=edit, final=fin))
    assert not torch.allclose(base, e_hub, atol=1e-3)
    assert torch.allclose(e_hub, e_fast, atol=1e-4)
    assert hub.hidden(ids, pre_attn=lambda i, x: x, stop_after=0) is None
    assert all(not p.requires_grad for p in model.parameters())  # the backbone is frozen


def test_bias_sweep_on_a_tiny_config(monkeypatch):
    import dataclasses

    from lib.mqar import experiments as ex
    from lib.mqar import model as M

    cfg = config(mode="quick", pretrained=False, n_items=20, stage1_steps=2, stage2_steps=1, batch=8, verbose=False)
    cfg = dataclasses.replace(cfg, params={**cfg.params, "lm_steps": 3, "lm_layers": 1, "lm_width": 32,
                                           "lm_sentences": 300, "n_module_text": 48})
    trained = []
    real = M.train_backbone
    monkeypatch.setattr(M, "train_backbone", lambda r, **kw: trained.append(r["bias_strength"]) or real(r, **kw))
    given = pd.DataFrame({"group": list(D.GROUPS), "SS": [90.0, 80.0, 70.0], "CP": [95.0, 85.0, 75.0],
                          "LMS": [99.0] * 3, "ICAT": [10.0] * 3})
    mq = given.assign(SS=[50.0, 56.0, 70.0], CP=[45.0, 85.0, 60.0])
    long, closed = ex.bias_sweep(cfg, strengths=(0.6, 0.9), reuse=(0.9, given, mq))
    assert trained == [0.6]  # one backbone trained, at the swept strength; the main run's strength is reused
    assert len(long) == 2 * 2 * 3 and set(long["method"]) == {"none", "MQAR"}
    c9 = closed[closed.strength == 0.9].set_index("cell")["closed"]
    assert c9["SS gender"] == pytest.approx(1.0) and c9["SS group"] == pytest.approx(0.8)
    assert c9["SS gender x group"] == pytest.approx(0.0) and c9["CP gender"] == pytest.approx(1 - 5 / 45)
    assert np.isfinite(closed[closed.strength == 0.6]["none"]).all()
    with pytest.raises(ValueError, match="strength"):
        ex.bias_sweep(cfg, strengths=(0.3,))


def test_caches_return_what_a_fresh_computation_returns(bb):
    from lib.mqar.baselines import projection_edit

    samples = D.corpus(12, 0.9, rng_for(3, "cache"))
    ids, lens, lab = bb.encode(samples)
    again = bb.encode(list(samples))  # a new list of the same samples: served from the cache
    fresh = D.encode_labeled(bb.tok, samples, max_len=32)
    assert all(a is b for a, b in zip(again, (ids, lens, lab)))
    assert all(np.array_equal(a, b) for a, b in zip(fresh, (ids, lens, lab)))
    assert not np.array_equal(bb.encode(samples[:6])[0][:6], bb.encode(samples[6:])[0][:6])
    P = np.eye(bb.lm.d)
    P[0, 0] = 0.0  # drop one coordinate of the final state
    edit = projection_edit(P)
    plain, edited = sentence_scores(bb.lm, ids, lens), sentence_scores(bb.lm, ids, lens, final=edit)
    with bb.lm.caching():
        c_plain = sentence_scores(bb.lm, ids, lens)
        c_edit = sentence_scores(bb.lm, ids, lens, final=edit)  # the edit is applied to the cached states
        c_hook = sentence_scores(bb.lm, ids, lens, pre_attn=lambda i, x: 0.5 * x)  # hooked forwards never cached
        assert len(bb.lm._cache) == 1
    assert bb.lm._cache is None
    assert np.array_equal(plain, c_plain) and np.array_equal(edited, c_edit) and not np.allclose(plain, c_edit)
    assert np.array_equal(c_hook, sentence_scores(bb.lm, ids, lens, pre_attn=lambda i, x: 0.5 * x))
