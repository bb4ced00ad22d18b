"""Unit tests of lib.latent_thinking (seconds)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lib.common.userfiles import UserFileError
from lib.latent_thinking import lto
from lib.latent_thinking.gsm8k import read_gsm8k
from lib.latent_thinking.lrm import spectrum_metrics, twonn_dimension, train_lrm, auc
from lib.latent_thinking.model import RecurrentDepthLM, sample
from lib.latent_thinking.tasks import TASKS, CharTokenizer, evaluate, make_task, training_texts


@pytest.fixture(scope="module")
def tok():
    return CharTokenizer()


@pytest.fixture(scope="module")
def tiny(tok):
    return RecurrentDepthLM(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_positions=32, sigma=1.0, seed=3)


@pytest.mark.parametrize("task", TASKS)
def test_answers_match_independent_evaluator_and_are_one_token(task, tok):
    ts = make_task(task, 300, np.random.default_rng(1))
    for p, a in zip(ts.prompts, ts.answers):
        assert evaluate(p) == a
        ids = tok.encode(p + str(a))
        assert len(ids) == len(p) + 1 and ids[-1] in tok.digit_ids  # the answer is exactly one token
        assert tok.decode(ids) == p + str(a)


def test_evaluator_known_cases():
    assert evaluate("3+4*2-1=") == 3  # ((3+4)*2-1) % 10 = 13 % 10
    assert evaluate("c=b*2,a=3,b=a+4;c=") == 4  # (3+4)*2 = 14
    assert evaluate("abcabba;a=") == 3
    with pytest.raises(ValueError):
        evaluate("3+4")


def test_training_texts_cover_tasks():
    texts = training_texts(30, np.random.default_rng(0))
    assert len(texts) == 30 and all(evaluate(t[:-1]) == int(t[-1]) for t in texts)


def test_trajectory_equals_hand_unroll(tiny, tok):
    prompts = ["3+4*2=", "7-1+5="]
    T = 5
    gen = torch.Generator().manual_seed(11)
    out = sample(tiny, tok, prompts, n_samples=3, steps=T, seed=11, keep_tokens=2)
    with torch.no_grad():
        ids = torch.as_tensor([tok.encode(p) for p in prompts])
        e = tiny.embed(ids).repeat_interleave(3, dim=0)
        s = tiny.sigma * torch.randn(e.shape, generator=gen)
        states = []
        for _ in range(T):
            h = tiny.adapter(torch.cat([s, e], -1))
            for b in tiny.core:
                h = b(h)
            s = tiny.ln_s(h)
            states.append(s)
        logits = tiny.ln_f(tiny.coda[0](s)) @ tiny.wte.weight.T
    st = torch.stack(states, 1).view(2, 3, T, ids.shape[1], -1).numpy()
    np.testing.assert_allclose(out["tokens"], st, atol=1e-5)
    np.testing.assert_allclose(out["thoughts"], st.mean(3), atol=1e-5)
    ans = logits[:, -1, torch.as_tensor(tok.digit_ids)].argmax(-1).view(2, 3).numpy()
    np.testing.assert_array_equal(out["answers"], ans)


def test_fixed_noise_seed_repeats_and_other_seed_differs(tiny, tok):
    prompts = ["1+2+3=", "a=2,b=a*3;b="]
    a = sample(tiny, tok, prompts, n_samples=4, steps=4, seed=5)
    b = sample(tiny, tok, prompts, n_samples=4, steps=4, seed=5)
    c = sample(tiny, tok, prompts, n_samples=4, steps=4, seed=6)
    np.testing.assert_array_equal(a["thoughts"], b["thoughts"])
    assert not np.allclose(a["thoughts"], c["thoughts"])


def test_decode_at_matches_shorter_run(tiny, tok):
    prompts = ["5*5-2="]
    long = sample(tiny, tok, prompts, n_samples=6, steps=6, seed=2, decode_at=[3])
    short = sample(tiny, tok, prompts, n_samples=6, steps=3, seed=2)
    np.testing.assert_array_equal(long["answers_at"][3], short["answers"])
    np.testing.assert_allclose(long["thoughts"][..., :3, :], short["thoughts"], atol=1e-6)


def test_train_forward_uses_random_depth(tiny, tok):
    ids = torch.as_tensor([tok.encode("1+2=3")])
    tiny.train()
    out = tiny(input_ids=ids, labels=ids)
    tiny.eval()
    assert out.loss is not None and torch.isfinite(out.loss)


def test_accept_reject_matches_target_distribution():
    rng = np.random.default_rng(0)
    r = np.tile([0.9, 0.5, 0.4, 0.1], (20000, 1))
    idx, n_prop = lto.accept_reject(r, 0.2, rng)
    f = np.bincount(idx[:, 0], minlength=4) / len(idx)
    np.testing.assert_allclose(f, lto.target_probs(r[0], 0.2), atol=0.015)
    # expected proposals: N / sum(phi)
    assert abs(n_prop.mean() - 4 / lto.phi(r[0], 0.2).sum()) < 0.08
    sw = np.bincount(lto.sweep_accept(r, 0.2, rng), minlength=4) / len(r)
    assert np.abs(sw - lto.target_probs(r[0], 0.2)).sum() > 0.05  # the sweep reading is biased


def test_beta_limits_and_votes():
    r = np.array([[0.2, 0.9, 0.5], [0.7, 0.1, 0.3]])
    c = np.array([[0, 1, 0], [0, 1, 1]], float)
    np.testing.assert_allclose(lto.expected_lto(r, c, 1e-4), lto.select_correct(r, c))
    np.testing.assert_allclose(lto.expected_lto(r, c, 1e6), c.mean(1), atol=1e-5)
    ans = np.array([[1, 2, 2, 3], [4, 4, 5, 5]])
    np.testing.assert_allclose(lto.vote_correct(ans, np.array([2, 5])), [1.0, 0.5])
    np.testing.assert_allclose(lto.vote_correct(ans, np.array([1, 5]), weights=np.array([[3, 1, 1, 0], [1, 1, 1, 2]])),
                               [1.0, 1.0])


def test_paired_bootstrap_and_coe():
    rng = np.random.default_rng(0)
    m, lo, hi = lto.paired_bootstrap(np.ones(50), np.zeros(50), rng)
    assert m == lo == hi == 1.0
    still = np.ones((1, 1, 4, 3))
    moving = np.cumsum(np.ones((1, 1, 4, 3)), axis=2)
    assert lto.coe_score(still)[0, 0] > lto.coe_score(moving)[0, 0]


def test_metrics_closed_forms():
    S = np.eye(4)[:, :4]  # 4 orthogonal tokens: flat spectrum, erank 4, anisotropy 0
    H, er, an = spectrum_metrics(S)
    assert np.isclose(er, 4.0) and np.isclose(an, 0.0)
    S1 = np.ones((5, 3))
    H1, er1, an1 = spectrum_metrics(S1)
    assert np.isclose(er1, 1.0) and np.isclose(an1, 1.0)
    X = np.random.default_rng(0).normal(size=(2000, 3))
    assert 2.5 < twonn_dimension(X) < 3.5
    Y = np.c_[X[:, :2], np.zeros(2000)]
    assert 1.6 < twonn_dimension(Y) < 2.4


def test_lrm_learns_a_planted_signal():
    rng = np.random.default_rng(0)
    y = rng.random(600) < 0.5
    x = rng.normal(size=(600, 5, 8)).astype(np.float32)
    x[:, 2:, 0] += 1.5 * y[:, None]  # signal appears from step 3 on
    m = train_lrm(x[:400], y[:400], steps=120, seed=0)
    ps = m.prefix_scores(x[400:])
    assert auc(y[400:], ps[:, -1]) > 0.8 and auc(y[400:], ps[:, 0]) < 0.65


def test_gsm8k_reader_good_fixture(tmp_path):
    from lib.latent_thinking.gsm8k import FIXTURE, write_fixture

    p = write_fixture(tmp_path / "g.jsonl")
    q, a = read_gsm8k(p)
    assert len(q) == len(FIXTURE) and a == [7.0, 165.0, 9.0, 2400.0]


@pytest.mark.parametrize("line, msg", [
    ('{"question": "q", "answer": "no marker"}', "####"),
    ('{"question": "q"}', "answer"),
    ('["q", "a #### 3"]', "not an object"),
    ('{"question": "q", "answer": "x #### 3"', "JSON"),
    ('{"question": "", "answer": "x #### 3"}', "question"),
])
def test_gsm8k_reader_bad_lines(tmp_path, line, msg):
    good = json.dumps({"question": "a", "answer": "b #### 1"})
    p = tmp_path / "bad.jsonl"
    p.write_text(good + "\n" + line + "\n")
    with pytest.raises(UserFileError) as ei:
        read_gsm8k(p)
    assert "data_path" in str(ei.value) and msg in str(ei.value) and "line 2" in str(ei.value)


def test_shipped_fixture_is_current():
    from lib.common import data_dir
    from lib.latent_thinking.gsm8k import FIXTURE

    text = (data_dir("latent_thinking") / "gsm8k_fixture.jsonl").read_text()
    assert text == "".join(json.dumps(r) + "\n" for r in FIXTURE)


def test_config_refuses_bad_parameters():
    from lib.latent_thinking import config

    with pytest.raises(ValueError, match="beta"):
        config(beta=0.0, verbose=False)
    with pytest.raises(ValueError, match="M"):
        config(M=30, verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        config(data_path="/nonexistent/file.jsonl", verbose=False)


def test_checkpoint_recipe_is_deterministic_and_roundtrips(tmp_path):
    from lib.latent_thinking.make_checkpoint import RECIPE, train_recipe
    from lib.latent_thinking.model import load_checkpoint, save_checkpoint

    tiny = dict(RECIPE, arch=dict(RECIPE["arch"], n_embd=16, n_head=2), n_texts=200, steps=3, warmup_steps=1)
    m1, log1, _ = train_recipe(tiny)
    m2, log2, _ = train_recipe(tiny)
    assert log1.losses == log2.losses
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)
    f = tmp_path / "ck.npz"
    save_checkpoint(m1, f, tiny)
    m3 = load_checkpoint(f, tiny)
    for a, b in zip(m1.state_dict().values(), m3.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-2 * max(1.0, float(a.abs().max())))
    with pytest.raises(ValueError, match="recipe"):
        load_checkpoint(f, dict(tiny, steps=4))


def test_training_windows_see_examples_from_position_zero():
    m = RecurrentDepthLM(vocab_size=64, n_embd=16, n_head=2, n_positions=16)
    ids = torch.tensor([[5, 6, 7, 0, 8, 9, 0]])
    pos, mask = m.documents(ids)
    assert pos.tolist() == [[0, 1, 2, 3, 0, 1, 2]]
    allowed = torch.isfinite(mask[0, 0])
    assert allowed[5, 4] and not allowed[4, 3] and not allowed[2, 3]


def test_accept_reject_m_greater_than_one():
    rng = np.random.default_rng(1)
    r = np.array([[0.9, 0.1, 0.8], [0.2, 0.3, 0.25]])
    idx, n_prop = lto.accept_reject(r, 0.1, rng, M=3)
    assert idx.shape == (2, 3) and (idx >= 0).all() and (n_prop >= 3).all()


def test_answer_loss_is_the_cross_entropy_of_the_answer_tokens():
    m = RecurrentDepthLM(vocab_size=64, n_embd=16, n_head=2, n_positions=16, seed=2).train()
    ids = torch.tensor([[7, 5, 6, 3, 0, 8, 9, 4, 0, 5]])  # answers 3 and 4 (each right before an EOS)
    out = m(ids, labels=ids, num_steps=2)
    lp = torch.log_softmax(out.logits[0], -1)
    want = -(lp[2, 3] + lp[6, 4]) / 2  # the logits at the token before each answer predict it
    assert torch.allclose(out.loss, want, atol=1e-5)


def test_answer_position_sees_the_whole_question(tok):
    m = RecurrentDepthLM(vocab_size=tok.vocab_size, n_embd=16, n_head=2, n_positions=16, seed=2)
    a = sample(m, tok, ["1+2=", "9+2="], n_samples=1, steps=3, seed=0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        lg = [m.decode(m.core_step(m.initial_state((1, 4, 16), generator=g), m.embed(torch.tensor([tok.encode(p)]))))
              [0, -1] for p in ("1+2=", "9+2=")]
    assert not torch.allclose(lg[0], lg[1])  # the first digit reaches the answer position
    assert a["thoughts"].shape == (2, 1, 3, 16)


def test_pipeline_learns_a_trivial_task(tok):
    """Sanity check of the training path (masking, positions, loss targets, truncated BPTT): answer = first digit."""
    from lib.latent_thinking.model import train

    rng = np.random.default_rng(0)
    texts = [f"{a}+{b}={a}" for a, b in rng.integers(0, 10, size=(3000, 2))]
    m = RecurrentDepthLM(vocab_size=tok.vocab_size, n_embd=32, n_head=2, n_positions=32, max_rec=3, bptt=2, seed=0)
    from lib.common import limit_threads

    with limit_threads(1):
        train(m, texts, tok, steps=150, lr=3e-3, batch_size=16, seq_len=30, warmup_steps=10)
    prompts = [f"{a}+{b}=" for a, b in rng.integers(0, 10, size=(50, 2))]
    out = sample(m, tok, prompts, n_samples=2, steps=3, seed=0)
    assert (out["answers"] == np.array([int(p[0]) for p in prompts])[:, None]).mean() > 0.9


# --- the general-LLM variant (Table 2) -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_gpt2(tok):
    from lib.common.tiny_lm import make_gpt2

    return make_gpt2(tok.vocab_size, n_layer=2, n_embd=32, n_head=4, n_positions=64, seed=0)


def test_general_thoughts_are_the_answer_token_states_across_layers(tiny_gpt2, tok):
    from lib.latent_thinking.general import sample_general

    ts = make_task("arith", 5, np.random.default_rng(0))
    s = sample_general(tiny_gpt2, tok, ts.prompts, n_samples=4, seed=3)
    assert s["answers"].shape == (5, 4) and s["thoughts"].shape == (5, 4, 3, 32)
    assert s["answers"].min() >= 0 and s["answers"].max() <= 9
    q, j = 2, 1  # one candidate, recomputed by hand: prompt + its digit, states at the last position
    ids = torch.as_tensor([tok.encode(ts.prompts[q]) + [int(tok.digit_ids[s["answers"][q, j]])]])
    with torch.no_grad():
        hs = tiny_gpt2(input_ids=ids, output_hidden_states=True).hidden_states
    want = torch.stack([h[0, -1] for h in hs]).numpy()
    np.testing.assert_allclose(s["thoughts"][q, j], want, atol=1e-5)
    # the same seed repeats the candidates, another seed draws others
    again = sample_general(tiny_gpt2, tok, ts.prompts, n_samples=4, seed=3)
    np.testing.assert_array_equal(again["answers"], s["answers"])
    other = sample_general(tiny_gpt2, tok, ts.prompts, n_samples=4, seed=4)
    assert not np.array_equal(other["answers"], s["answers"])
    assert np.all((s["p_digit"] > 0) & (s["p_digit"] <= 1 + 1e-9))


def test_general_sampling_follows_the_digit_distribution(tiny_gpt2, tok):
    from lib.latent_thinking.general import sample_general

    prompt = make_task("arith", 1, np.random.default_rng(1)).prompts[0]
    with torch.no_grad():
        p = torch.softmax(tiny_gpt2(input_ids=torch.as_tensor([tok.encode(prompt)])).logits[0, -1].double(), -1)
    p = (p[torch.as_tensor(tok.digit_ids)] / p[torch.as_tensor(tok.digit_ids)].sum()).numpy()
    s = sample_general(tiny_gpt2, tok, [prompt], n_samples=20000, seed=0)
    freq = np.bincount(s["answers"][0], minlength=10) / 20000
    assert 0.5 * np.abs(freq - p).sum() < 0.02
    with pytest.raises(ValueError, match="temperature"):
        sample_general(tiny_gpt2, tok, [prompt], n_samples=2, seed=0, temperature=0.0)


def test_general_llm_runs_only_when_configured(tiny_gpt2, tok, tmp_path):
    import lib.latent_thinking as paper
    from lib.latent_thinking.general import general_llm

    cfg = paper.config(mode="quick", seed=0, out_dir=tmp_path, verbose=False)
    assert general_llm(cfg, tiny_gpt2, tok) is None  # quick mode: the variant is full-mode only
    cfg.params.update(general={"temperature": 1.0}, n_train=20, n_test=20, n_samples=4, lrm_steps=5, reps=2)
    res = general_llm(cfg, tiny_gpt2, tok)
    assert set(res["per_q"]) == set(cfg.tasks)
    for per in res["per_q"].values():
        assert set(per) == {"base", "majority", "coe", "weighted_mv", "best_of_n", "lto"}
        assert all(v.shape == (20,) and np.all((v >= 0) & (v <= 1)) for v in per.values())
    assert list(res["summary"].index) == list(cfg.tasks)
