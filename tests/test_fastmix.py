"""Unit tests of lib.fastmix (seconds)."""
import json

import numpy as np
import pytest
import torch

from lib.fastmix import mixture as mx
from lib.fastmix.data import FAMILIES, TARGET_A, load_stdlib_sources, read_pile_jsonl


def _model(V=40, seq=8, seed=0):
    return mx.make_proxy(V, 1, 32, seq, seed)


def _sampler(V=40, seq=8, seed=0):
    g = torch.Generator().manual_seed(123)
    streams = [torch.randint(1, V, (200,), generator=g), torch.arange(1, 39).repeat(5), None]
    return mx.MixtureSampler(streams, seq, V, seed), streams


def test_sampler_returns_requested_rows_and_groups_from_each_source():
    smp, streams = _sampler()
    x, group = smp.batch([3, 0, 5])
    assert x.shape == (8, 9) and group.tolist() == [0] * 3 + [2] * 5
    s0 = streams[0].tolist()
    for row in x[:3].tolist():  # each row is a contiguous window of source 0's stream
        assert any(s0[i:i + 9] == row for i in range(len(s0) - 8))
    x, group = smp.uniform(4)
    assert torch.bincount(group).tolist() == [4, 4, 4]
    rows1 = x[group == 1]
    assert ((rows1[:, 1:] - rows1[:, :-1]) % 38 == 1).all()  # source 1 is 1,2,...,38 repeated
    xs, gs = smp.sampled([0.0, 1.0, 0.0], 10)
    assert (gs == 1).all() and len(xs) == 10
    with pytest.raises(ValueError, match="counts"):
        smp.batch([1, 2])


def test_weighted_loss_is_sum_alpha_i_L_i_under_uniform_counts():
    row = torch.tensor([1.0, 3.0, 2.0, 6.0, 10.0, 0.0])
    group = torch.tensor([0, 0, 1, 1, 2, 2])
    a = np.array([0.5, 0.3, 0.2])
    want = 0.5 * 2.0 + 0.3 * 4.0 + 0.2 * 5.0
    assert float(mx.weighted_lm_loss(row, group, a)) == pytest.approx(want)


def test_softmax_chain_matches_autograd():
    z = torch.tensor([0.3, -1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    g = np.array([1.0, -2.0, 0.5, 3.0])
    (torch.softmax(z, 0) @ torch.tensor(g)).backward()
    a = mx.softmax(z.detach().numpy())
    assert np.allclose(mx.softmax_chain(a, g), z.grad.numpy())
    lam = 0.7  # entropy term: d/dz of lam * sum a log a
    z2 = z.detach().clone().requires_grad_(True)
    p = torch.softmax(z2, 0)
    (lam * (p * p.log()).sum()).backward()
    assert np.allclose(mx.softmax_chain(a, mx.entropy_grad(a, lam)), z2.grad.numpy())


def test_head_only_and_full_hypergradients_agree_when_only_the_head_trains():
    model = _model()
    for n, p in model.named_parameters():
        p.requires_grad_(n == "lm_head.weight")
    smp, _ = _sampler()
    x, group = smp.uniform(4)
    val = mx.stream_rows(torch.randint(1, 40, (100,), generator=torch.Generator().manual_seed(5)), 6, 8, 0)
    gh, _ = mx.one_step_hypergrad(model, x, group, val, 3, eta=0.1, beta=0.3, head_only=True)
    gf, _ = mx.one_step_hypergrad(model, x, group, val, 3, eta=0.1, beta=0.3, head_only=False)
    assert np.allclose(gh, gf, rtol=1e-4, atol=1e-9) and np.abs(gh).max() > 0
    # with the body trainable too, the full hypergradient differs (the head-only one is an approximation)
    for p in model.parameters():
        p.requires_grad_(True)
    gf2, _ = mx.one_step_hypergrad(model, x, group, val, 3, eta=0.1, beta=0.3, head_only=False)
    assert not np.allclose(gh, gf2, rtol=1e-3)


def test_unrolled_one_step_matches_closed_form_for_small_eta():
    model = _model()
    val = mx.stream_rows(torch.randint(1, 40, (100,), generator=torch.Generator().manual_seed(5)), 6, 8, 0)
    a = np.array([0.2, 0.5, 0.3])
    smp_a, _ = _sampler(seed=9)
    smp_b, _ = _sampler(seed=9)
    x, group = smp_b.uniform(4)  # the same batch the unrolled step draws
    g1, _ = mx.one_step_hypergrad(model, x, group, val, 3, eta=1e-4, head_only=True)
    g2, _ = mx.unrolled_hypergrad(model, smp_a, val, a, n2=1, eta=1e-4, per_source=4, head_only=True)
    # unrolled: d/d alpha_i of sum_j alpha_j L_j / sum alpha = (L_i - L) - closed form uses dL/dalpha_i = L_i; the
    # normalisation adds a term common to all i, so compare after centring
    assert np.allclose(g1 - g1.mean(), g2 - g2.mean(), rtol=2e-2, atol=1e-10)


def test_regmix_candidates_lie_on_the_simplex():
    c = mx.dirichlet_candidates(6, 1000, np.random.default_rng(0))
    assert c.shape == (1000, 6) and (c >= 0).all() and np.allclose(c.sum(1), 1)


def test_adamz_matches_torch_adamw():
    z = torch.zeros(4, requires_grad=True)
    opt = torch.optim.AdamW([z], lr=0.05, betas=(0.9, 0.95), weight_decay=0.0)
    mine = mx.AdamZ(np.zeros(4), 0.05)
    rng = np.random.default_rng(0)
    for _ in range(5):
        g = rng.normal(size=4)
        z.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
        mine.step(g)
    assert np.allclose(mine.z, z.detach().numpy(), atol=1e-5)


def test_shipped_families_are_disjoint_from_the_held_out_target():
    d = load_stdlib_sources()
    assert set(d["families"]) == set(FAMILIES) and d["meta"]["target_a"] == TARGET_A
    target = set(d["target_a"])
    assert len(target) > 20
    for name, docs in d["families"].items():
        assert docs and not (set(docs) & target), name


def test_pile_jsonl_reader_fixture_and_bad_lines(tmp_path):
    from lib.fastmix import LOADERS

    sets = read_pile_jsonl(LOADERS["data_path"].fixture_path())
    assert list(sets) == sorted(sets) and len(sets) == 4 and all(len(v) == 2 for v in sets.values())
    good = json.dumps({"text": "a b", "meta": {"pile_set_name": "A"}})
    cases = {
        "not valid JSON": good + "\n{\"text\": \"x\",\n",
        "field 'text'": good + "\n" + json.dumps({"meta": {"pile_set_name": "B"}}) + "\n",
        "pile_set_name": good + "\n" + json.dumps({"text": "x", "meta": {}}) + "\n",
        "not an object": good + "\n[1, 2]\n",
        "distinct pile_set_name": good + "\n" + good + "\n",
    }
    for msg, text in cases.items():
        p = tmp_path / "bad.jsonl"
        p.write_text(text)
        with pytest.raises(ValueError, match="data_path") as e:
            read_pile_jsonl(p)
        assert msg in str(e.value)
        if msg != "distinct pile_set_name":
            assert "line 2" in str(e.value)


def test_config_refuses_bad_parameters_by_name():
    import lib.fastmix as paper

    for kw, name in [({"n1": 0}, "n1"), ({"target": "C"}, "target"), ({"k": 7}, "k"), ({"lr_mix": -1}, "lr_mix"),
                     ({"model_name": "gpt2"}, "model_name"), ({"target_set": "x"}, "target_set"),
                     ({"proxy_embd": 48}, "proxy_embd"), ({"mode": "full", "n_proxies": 4}, "n_proxies")]:
        with pytest.raises(ValueError, match=name):
            paper.config(verbose=False, out_dir="/tmp/fastmix_test", **kw)


def test_tinygpt_forward_equals_the_transformers_gpt2_it_is_built_from():
    from lib.common.tiny_lm import make_gpt2

    hf = make_gpt2(50, n_layer=2, n_embd=64, n_head=2, n_positions=12, seed=3, tie_word_embeddings=False)
    x = torch.randint(0, 50, (5, 12), generator=torch.Generator().manual_seed(0))
    ref = hf(x).logits
    for eager in (False, True):
        m = mx.TinyGPT(hf, eager=eager)
        assert torch.allclose(m.forward(x)[1], ref, atol=1e-5)
    m = mx.make_proxy(50, 2, 64, 12, 3)
    assert torch.allclose(m.forward(x)[1], ref, atol=1e-5)  # make_proxy: the same seeded init
    with pytest.raises(ValueError, match="attn"):
        mx.make_proxy(50, 2, 64, 12, 3, attn="flash")


def test_regmix_fit_recovers_the_minimiser_of_a_known_loss_and_stays_on_the_simplex():
    rng = np.random.default_rng(0)
    star = np.array([0.6, 0.3, 0.1])
    mixes = mx.dirichlet_candidates(3, 300, rng)
    losses = ((mixes - star) ** 2).sum(1)
    a = mx.regmix_fit(mixes, losses, np.random.default_rng(1), n_candidates=20_000)
    assert a.shape == (3,) and (a >= 0).all() and np.isclose(a.sum(), 1)
    assert np.abs(a - star).sum() < 0.15
    with pytest.raises(ValueError, match="regmix_fit"):
        mx.regmix_fit(mixes[:1], losses[:1], rng)


def test_fastmix_search_starts_from_z0():
    smp, _ = _sampler()
    val = mx.stream_rows(torch.randint(1, 40, (100,), generator=torch.Generator().manual_seed(5)), 6, 8, 0)
    z0 = np.array([1.0, -1.0, 0.5])
    res = mx.fastmix_search(_model(), smp, val, steps=6, n1=3, lr_mix=0.1, per_source=2, z0=z0)
    assert np.allclose(res.trajectory[0], mx.softmax(z0)) and res.outer_steps == [0, 3, 6]
    assert not np.allclose(res.trajectory[-1], res.trajectory[0])


def _tiny_full():
    """A full-mode config at toy sizes and a 3-source Setup of random streams (no corpus, no tokenizer)."""
    import lib.fastmix as paper
    from lib.fastmix import experiments as ex

    cfg = paper.config(mode="full", verbose=False, out_dir="/tmp/fastmix_test", seq_len=8, per_source=2,
                       proxy_steps=10, n1=5, proxy_layers=1, proxy_embd=32, n_proxies=10, target_steps=10)
    g = torch.Generator().manual_seed(0)
    V = 40
    streams = [torch.randint(1, V, (300,), generator=g), torch.arange(1, 39).repeat(8), None]
    val = mx.stream_rows(torch.arange(1, 39).repeat(4), 6, 8, 1)
    test = mx.stream_rows(torch.arange(1, 39).repeat(4), 6, 8, 2)
    setup = ex.Setup(None, None, V, ["doc_a", "code", "noise"], streams, val, test, {}, {})
    rng = np.random.default_rng(0)
    search = {"RegMix-lite": dict(mixtures=mx.dirichlet_candidates(3, 10, rng), losses=rng.uniform(3, 4, 10))}
    return cfg, setup, search


def test_ablation_changes_one_knob_at_a_time_and_counts_outer_steps():
    from lib.fastmix import experiments as ex

    cfg, setup, _ = _tiny_full()
    abl = ex.ablation(cfg, setup, variants=(("n1", 1), ("n1", 5), ("n1", 10), ("n2", 2), ("lam", 1.0)))
    assert list(abl.knob) == ["base", "n1", "n1", "n2", "lam"]  # n1 = 5 is the run's own value: not repeated
    assert (abl.outer_steps == cfg.proxy_steps // abl.n1).all() and (abl.proxy_steps == cfg.proxy_steps).all()
    other = abl[abl.knob != "base"]
    for r in other.itertuples():  # exactly the named knob differs from the base row
        diff = [k for k in ("n1", "n2", "lam", "beta") if getattr(r, k) != abl.loc[0, k]]
        assert diff == [r.knob]
    assert abl.loc[abl.knob == "n2", "passes"].iloc[0] > abl.loc[0, "passes"]  # unrolled: more passes per z step
    assert np.isfinite(abl.target_loss).all()
    with pytest.raises(ValueError, match="knob"):
        ex.ablation(cfg, setup, variants=(("lr", 1.0),))
    quick = __import__("lib.fastmix", fromlist=["config"]).config(verbose=False, out_dir="/tmp/fastmix_test")
    assert ex.ablation(quick, setup) is None and ex.robustness(quick, setup, {}) is None  # full-mode figures


def test_robustness_uses_disjoint_regmix_blocks_and_distinct_z_inits():
    from lib.fastmix import experiments as ex

    cfg, setup, search = _tiny_full()
    rob = ex.robustness(cfg, setup, search, n_runs=3)
    fm, rm = rob[rob.method == "FastMix (head)"], rob[rob.method != "FastMix (head)"]
    assert len(fm) == 3 and len(rm) == 3 and rm.method.iloc[0] == "RegMix-lite (m = 3)"
    assert (rm.proxy_steps == 3 * cfg.proxy_steps).all() and (fm.proxy_steps == cfg.proxy_steps).all()
    z = np.stack(fm.z0_alpha.to_numpy())
    assert not np.allclose(z[0], z[1])
    for a in rob.alpha:
        assert np.isclose(a.sum(), 1) and (a >= 0).all()
    # block j refits exactly proxies 3j..3j+2
    want = mx.regmix_fit(search["RegMix-lite"]["mixtures"][3:6], search["RegMix-lite"]["losses"][3:6],
                         cfg.rng("regmix-seed1"), seed=cfg.seed + 1)
    assert np.allclose(rm.alpha.iloc[1], want)
    with pytest.raises(ValueError, match="proxies per seed"):
        ex.robustness(cfg, setup, search, n_runs=6)


def test_c5_values_read_the_right_rows():
    import pandas as pd
    from lib.fastmix import experiments as ex

    abl = pd.DataFrame(dict(knob=["base", "n1", "n1", "n1", "n2", "lam"], n1=[10, 1, 20, 50, 10, 10],
                            n2=[1, 1, 1, 1, 5, 1], lam=[0, 0, 0, 0, 0, 1.0], beta=[0.0] * 6,
                            target_loss=[3.0, 3.3, 2.9, 3.2, 3.1, 2.0]))
    rob = pd.DataFrame(dict(method=["FastMix (head)"] * 3 + ["RegMix-lite (m = 12)"] * 3,
                            target_loss=[3.0, 3.1, 3.2, 3.0, 3.2, 3.4]))
    v = ex.c5_values(abl, rob)
    assert v["c5a"] == pytest.approx(3.0 / 3.1) and v["c5b"] == pytest.approx(2.9 / 3.2)  # lam row ignored
    assert v["c5c"] == pytest.approx(0.5)


def test_doremi_update_is_exponentiated_gradient_with_smoothing():
    a = np.array([0.5, 0.3, 0.2])
    exc = np.array([0.0, 1.0, 2.0])
    raw = a * np.exp(0.7 * exc)
    want = 0.9 * raw / raw.sum() + 0.1 / 3
    assert np.allclose(mx.doremi_update(a, exc, 0.7, 0.1), want)
    assert np.allclose(mx.doremi_update(a, exc, 0.0, 0.0), a)  # eta = 0: weights unchanged


def test_doremi_weights_stay_on_the_simplex_and_up_weight_the_domain_with_excess_loss():
    smp, _ = _sampler()
    ref = _model(seed=1)
    res = mx.doremi(ref, _model(seed=2), smp, steps=8, ref_steps=30, lr=1e-2, eta=1.0, smoothing=1e-3, per_source=3)
    assert res.trajectory.shape == (8, 3) and res.proxy_steps == 38 and res.passes == 46
    assert np.allclose(res.trajectory.sum(1), 1) and (res.trajectory >= 1e-3 / 3 - 1e-12).all()
    assert np.allclose(res.alpha, res.trajectory.mean(0))
    # source 1 (a fixed cycle) is learnt by the 30-step reference, so a fresh proxy's excess loss there is largest
    assert int(np.argmax(res.alpha)) == 1 and res.alpha[1] > 1 / 3
    flat = mx.doremi(_model(seed=1), _model(seed=2), _sampler()[0], steps=4, ref_steps=2, eta=0.0, smoothing=0.0,
                     per_source=2)
    assert np.allclose(flat.trajectory, 1 / 3)


def test_run_search_adds_doremi_in_full_mode_only_and_counts_its_steps():
    from lib.fastmix import experiments as ex

    cfg, setup, _ = _tiny_full()
    out = ex.run_search(cfg, setup)
    assert list(out) == ["uniform", "FastMix (head)", "FastMix (full)", "RegMix-lite", "DoReMi"]
    assert out["DoReMi"]["proxy_steps"] == 2 * cfg.proxy_steps  # reference + Group-DRO proxy
    assert out["RegMix-lite"]["proxy_steps"] == cfg.n_proxies * cfg.proxy_steps == 10 * out["FastMix (head)"]["proxy_steps"]
    assert np.isclose(out["DoReMi"]["alpha"].sum(), 1)


class _CharTok:
    """A stand-in tokenizer (one id per character) with the ``encode_batch`` interface of ``tokenizers``."""

    def encode_batch(self, texts, add_special_tokens=False):
        return [type("E", (), {"ids": [ord(c) % 50 + 1 for c in t]})() for t in texts]


def test_answer_token_mask_covers_exactly_the_answer_tokens():
    tok, seq = _CharTok(), 12
    items = [("q: 1+2 a:", " 3"), ("q: 45+67 a:", " 112"), ("a long prompt that must be cut", " 99")]
    t = mx.encode_items(tok, items, seq)
    assert t.x.shape == (3, seq + 1) and t.mask.shape == (3, seq)
    for r, (p, a) in enumerate(items):
        pid, aid = [e.ids for e in tok.encode_batch([p, a])]
        row, m = t.x[r].tolist(), t.mask[r]
        pos = torch.nonzero(m).flatten().tolist()
        assert [row[j + 1] for j in pos] == aid  # the masked targets are the answer's tokens, in order
        assert pos == list(range(pos[0], pos[0] + len(aid)))  # contiguous
        assert row[0] == 0 and all(v == 0 for v in row[pos[-1] + 2:])  # separator first, padding after
        before = row[1:pos[0] + 1]  # the prompt (its tail when cut)
        assert before == pid[len(pid) - len(before):] and (len(before) == len(pid) or len(row) == pos[-1] + 2)
    assert t.mask[2].sum() == 3 and t.x[2, -1] != 0  # the long prompt was cut from the left; the answer kept whole
    with pytest.raises(ValueError, match="answer"):
        mx.encode_items(tok, [("q", " " + "9" * 12)], seq)


def test_target_b_loss_equals_a_hand_computation():
    import math

    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 3.0], [1.0, 1.0, 1.0]]])
    x = torch.tensor([[0, 1, 2], [0, 2, 0]])  # targets (1, 2) and (2, 0)
    mask = torch.tensor([[False, True], [True, True]])

    def ce(z, y):
        return -(z[y] - math.log(sum(math.exp(v) for v in z)))

    want = (ce([0.0, 1.0, 0.0], 2) + ce([0.0, 0.0, 3.0], 2) + ce([1.0, 1.0, 1.0], 0)) / 3
    assert float(mx.masked_loss(logits, x, mask)) == pytest.approx(want, rel=1e-6)
    # eval_loss on a Masked target: chunks are combined by token counts, not by chunk means
    model = _model()
    g = torch.Generator().manual_seed(1)
    t = mx.Masked(torch.randint(1, 40, (5, 9), generator=g), torch.rand(5, 8, generator=g) < 0.3)
    t.mask[0, 0] = True
    with torch.no_grad():
        whole = float(mx.masked_loss(model.forward(t.x[:, :-1])[1], t.x, t.mask))
    assert mx.eval_loss(model, t, chunk=2) == pytest.approx(whole, rel=1e-5)
    # head-only and full hypergradients of the answer-token target agree when only the head trains
    for n, p in model.named_parameters():
        p.requires_grad_(n == "lm_head.weight")
    smp, _ = _sampler()
    xb, group = smp.uniform(3)
    gh, _ = mx.one_step_hypergrad(model, xb, group, t, 3, eta=0.1, head_only=True)
    gf, _ = mx.one_step_hypergrad(model, xb, group, t, 3, eta=0.1, head_only=False)
    assert np.allclose(gh, gf, rtol=1e-4, atol=1e-9) and np.abs(gh).max() > 0


def test_cloze_and_qa_items_are_well_formed():
    from lib.fastmix.data import arithmetic_qa_split, cloze_items

    docs = load_stdlib_sources()["target_a"]
    items = cloze_items(docs, 50, np.random.default_rng(0))
    flat = [" ".join(d.split()) for d in docs]
    assert len(items) == 50 and len(set(items)) > 40
    for p, a in items:
        assert a.startswith(" ") and a[1:].isalpha() and len(a) >= 4  # one word of >= 3 letters
        assert 3 <= len(p.split()) <= 12 and any((p + a) in f for f in flat)  # a contiguous span of a docstring
    with pytest.raises(ValueError, match="cloze_items"):
        cloze_items(["too short here"], 1, np.random.default_rng(0))
    val, test = arithmetic_qa_split(300, 300, np.random.default_rng(0))
    assert not {p for p, _ in val} & {p for p, _ in test}
    for p, a in val + test:
        x, y = p[len("q: "):-len(" a:")].split("+")
        assert p == f"q: {x}+{y} a:" and a == f" {int(x) + int(y)}" and 0 <= int(x) < 100 and 0 <= int(y) < 100


def test_run_target_b_searches_on_the_masked_target_and_reuses_target_agnostic_mixtures():
    from lib.fastmix import experiments as ex

    cfg, setup, search = _tiny_full()
    g = torch.Generator().manual_seed(3)
    qa = mx.Masked(mx.stream_rows(torch.arange(1, 39).repeat(4), 6, 8, 4), torch.rand(6, 8, generator=g) < 0.4)
    qa.mask[:, -1] = True
    setup.target_b = dict(val=qa, test=qa, cloze=qa)
    setup.test_x = setup.val_x
    rm = search["RegMix-lite"]
    rm.update(losses_b=rm["losses"][::-1].copy(), proxy_steps=10 * cfg.proxy_steps)
    search["FastMix (head)"] = dict(alpha=np.array([0.7, 0.2, 0.1]), proxy_steps=cfg.proxy_steps)
    search["DoReMi"] = dict(alpha=np.array([0.2, 0.2, 0.6]), proxy_steps=2 * cfg.proxy_steps)
    table, out = ex.run_target_b(cfg, setup, search)
    assert list(table.index) == ["uniform", "FastMix (head)", "FastMix (full)", "RegMix-lite", "DoReMi",
                                 "FastMix (target A)"]
    assert np.allclose(out["RegMix-lite"]["alpha"], mx.regmix_fit(rm["mixtures"], rm["losses_b"],
                                                                  cfg.rng("regmix-b"), seed=cfg.seed))
    assert np.allclose(out["DoReMi"]["alpha"], [0.2, 0.2, 0.6]) and np.allclose(out["FastMix (target A)"]["alpha"],
                                                                                   [0.7, 0.2, 0.1])
    assert not np.allclose(out["FastMix (head)"]["alpha"], 1 / 3)  # the search moved on the answer-token signal
    assert list(table.proxy_steps) == [0, 10, 10, 100, 20, 10] and np.isfinite(table.qa_loss).all()
    assert ex.c6_value(table) == pytest.approx(table.qa_loss["FastMix (head)"]
                                               / table.qa_loss[["uniform", "RegMix-lite", "DoReMi"]].min())
    setup.target_b = None
    assert ex.run_target_b(cfg, setup, search) is None
