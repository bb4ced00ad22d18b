"""Unit tests of lib.lm_injectivity: hidden-state maps, collision statistics, controls, SipIt and HardPrompts."""
import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist, squareform

import lib.lm_injectivity as paper
from lib.common.tiny_lm import make_gpt2
from lib.lm_injectivity.collisions import (count_identical_pairs, exhaustive_continuation_states,
                                           pair_distance_stats, quantize, tie_embeddings)
from lib.lm_injectivity.prompts import all_prompts_up_to, mixed_prompts, random_token_prompts
from lib.lm_injectivity.sipit import default_eps, hardprompts_invert, observe, sipit_invert
from lib.lm_injectivity.states import (PrefixCache, embedding_matrix, last_token_states, one_step_from_embedding,
                                       one_step_states, sequence_states)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread (see conftest)


V = 64


@pytest.fixture(scope="module")
def small():
    return make_gpt2(V, n_layer=2, n_embd=32, n_head=4, n_positions=32, seed=0).requires_grad_(False)


@pytest.fixture(scope="module")
def small64(small):
    return make_gpt2(V, n_layer=2, n_embd=32, n_head=4, n_positions=32, seed=0,
                     dtype=torch.float64).requires_grad_(False)


def test_one_step_states_equal_a_plain_forward(small, small64):
    prefix, cands = [5, 9, 1, 33], torch.tensor([0, 7, 63, 12])
    for model, atol in ((small, 2e-5), (small64, 1e-12)):
        F = one_step_states(model, prefix, cands, layer=2, batch_size=3)  # two batches
        for k, v in enumerate(cands.tolist()):
            ref = sequence_states(model, prefix + [v], 2)[-1]
            torch.testing.assert_close(F[k], ref, atol=atol, rtol=0)
        # empty prefix: the first position
        F0 = one_step_states(model, [], cands, layer=1)
        torch.testing.assert_close(F0[1], sequence_states(model, [7], 1)[0], atol=atol, rtol=0)
        # a continuous input equal to a token's embedding gives that token's state
        e = embedding_matrix(model)[7]
        Fe = one_step_from_embedding(model, PrefixCache(model, prefix), e, 2)
        torch.testing.assert_close(Fe, F[1], atol=atol, rtol=0)


def test_causality_is_exact_in_float64(small64):
    g = torch.Generator().manual_seed(1)
    s = torch.randint(0, V, (10,), generator=g).tolist()
    s2 = s[:6] + torch.randint(0, V, (4,), generator=g).tolist()
    assert s2[6:] != s[6:]
    for layer in (0, 1, 2):
        a, b = sequence_states(small64, s, layer), sequence_states(small64, s2, layer)
        assert torch.equal(a[:6], b[:6])  # bitwise: the state at t ignores later tokens
        assert not torch.equal(a[6:], b[6:])


def test_last_token_states_group_by_length_without_padding(small):
    prompts = [(1, 2, 3), (4,), (5, 6, 7, 8), (9, 10, 11)]
    S = last_token_states(small, prompts, batch_size=1)
    for i, p in enumerate(prompts):
        for layer in (0, 1, 2):
            torch.testing.assert_close(S[layer, i], sequence_states(small, list(p), layer)[-1], atol=1e-5, rtol=0)


def test_all_short_prompts_are_pairwise_distinct(small, small64):
    prompts = all_prompts_up_to(V, 2)
    assert len(prompts) == V + V * V
    for model in (small, small64):
        S = last_token_states(model, prompts, layers=[1, 2])
        for layer in range(2):
            st = pair_distance_stats(S[layer])
            assert st["min"] > 1e-6 and st["n_below"] == 0
    # layer 0 (embedding + position) is *not* injective: prompts with the same last token and length collide
    S0 = last_token_states(small, prompts[:V + 2 * V], layers=[0])[0]
    assert pair_distance_stats(S0)["min"] == 0.0


def test_sipit_accepts_the_unique_nearest_candidate(small):
    prompt = [3, 17, 17, 60, 0, 41]
    layer = 2
    H = observe(small, prompt, layer)
    res = sipit_invert(small, H, layer, **paper.experiments.GRADIENT_POLICY)
    assert res["tokens"] == prompt and not res["fallback"]
    for t in range(len(prompt)):
        d = torch.linalg.vector_norm(one_step_states(small, prompt[:t], torch.arange(V), layer) - H[t], dim=1)
        order = torch.argsort(d)
        assert int(order[0]) == res["tokens"][t]
        assert float(d[order[0]]) <= default_eps(H[t]) < float(d[order[1]])
    rnd = sipit_invert(small, H, layer, policy="random", seed=3, brute_batch=16)
    assert rnd["tokens"] == prompt
    assert all(1 <= c <= V for c in rnd["calls"])
    gd = sipit_invert(small, H, layer, **paper.experiments.PLAIN_GD_POLICY)
    assert gd["tokens"] == prompt
    with pytest.raises(ValueError, match="policy"):
        sipit_invert(small, H, layer, policy="greedy")


def test_paper_gd_protocol_verifies_one_proposal_per_step(small):
    """The paper's Alg. 3 protocol: one verifier call per gradient step (calls == steps at every position), the
    proxy projected every 50 steps, and the verifier still makes the recovery exact."""
    prompt = [3, 17, 17, 60, 0, 41]
    H = observe(small, prompt, 2)
    res = sipit_invert(small, H, 2, lr=0.1, **paper.experiments.PAPER_GD_POLICY)
    assert res["tokens"] == prompt and not res["fallback"]
    assert res["calls"] == res["steps"]
    assert all(1 <= c <= V for c in res["calls"])


def test_best_lr_takes_the_cheapest_step_size_that_recovers_every_prompt():
    import pandas as pd
    ex = paper.experiments
    t = pd.DataFrame({"lr": [0.03, 0.1, 0.3], "calls_mean": [50.0, 20.0, 30.0], "calls_median": [1.0] * 3,
                      "exact_rate": [1.0, 0.5, 1.0], "tokens": [10] * 3})
    assert ex.best_lr(t) == 0.3  # 0.1 is cheaper but missed a prompt
    assert ex.best_lr(t.assign(exact_rate=0.0)) == 0.1
    assert ex.best_lr(t.iloc[:0]) is None
    assert ex.hard_budget(20, 8192) == 40960


def test_call_ratio_compares_only_prompts_both_methods_inverted():
    import pandas as pd
    runs = pd.DataFrame({"method": ["BruteForce (random)"] * 3 + ["SipIt (paper GD)"],
                         "prompt": [0, 1, 2, 0], "calls_per_token": [100.0, 10.0, 10.0, 20.0]})
    assert paper.experiments.call_ratio(runs, "SipIt (paper GD)") == pytest.approx(5.0)
    assert np.isnan(paper.experiments.call_ratio(runs.assign(prompt=[0, 1, 2, 7]), "SipIt (paper GD)"))


def test_sipit_random_policy_counts_calls_like_a_sequential_search(small):
    prompt = [11, 2]
    H = observe(small, prompt, 1)
    res = sipit_invert(small, H, 1, policy="random", seed=5, brute_batch=7)
    rng = np.random.default_rng(5)
    for t, v in enumerate(prompt):
        order = rng.permutation(V)
        assert res["calls"][t] == int(np.nonzero(order == v)[0][0]) + 1


def test_tied_embeddings_give_distance_exactly_zero(small):
    tied = tie_embeddings(small, 5, 9)
    assert torch.equal(embedding_matrix(tied)[9], embedding_matrix(tied)[5])
    assert not torch.equal(embedding_matrix(small)[9], embedding_matrix(small)[5])  # original untouched
    p, q = [1, 5, 30, 2], [1, 9, 30, 2]
    for layer in (1, 2):
        a = last_token_states(tied, [p], layers=[layer])[0, 0]
        b = last_token_states(tied, [q], layers=[layer])[0, 0]
        assert float(torch.linalg.vector_norm(a - b)) == 0.0
        a0 = last_token_states(small, [p], layers=[layer])[0, 0]
        b0 = last_token_states(small, [q], layers=[layer])[0, 0]
        assert float(torch.linalg.vector_norm(a0 - b0)) > 1e-4


def test_pair_distance_stats_match_brute_force():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(257, 12, generator=g) * 3 + 50  # large offset: cancellation in the Gram identity
    X[10] = X[200] + 1e-7  # a near collision (below 1e-6)
    X[11] = X[12]  # an exact one
    for dtype in (torch.float32, torch.float64):
        st = pair_distance_stats(X.to(dtype), chunk=50, exact_median_max_pairs=10**9)
        D = squareform(pdist(X.to(dtype).double().numpy()))
        iu = np.triu_indices(len(X), 1)
        np.fill_diagonal(D, np.inf)
        assert st["min"] == pytest.approx(D.min(), abs=1e-9)
        assert st["n_below"] == int((D[iu] < 1e-6).sum()) == 2
        np.testing.assert_allclose(st["nn"], D.min(1), atol=1e-9)
        assert st["mean"] == pytest.approx(D[iu].mean(), rel=1e-5)
        assert st["max"] == pytest.approx(D[iu].max(), rel=1e-5)
        assert st["median"] == pytest.approx(np.median(D[iu]), rel=1e-4)
    sampled = pair_distance_stats(X, chunk=64, exact_median_max_pairs=10, median_sample=20000)
    assert sampled["median_sampled"] and sampled["median"] == pytest.approx(np.median(D[iu]), rel=0.03)


def test_quantization_collides_and_counts_pairs():
    X = torch.tensor([[0.0, 1.0], [0.01, 0.99], [1.0, 0.0], [0.02, 1.0], [0.5, 0.5]])
    assert count_identical_pairs(quantize(X, 2)) == 3  # rows 0, 1, 3 share a code
    assert count_identical_pairs(quantize(X, 16)) == 0
    assert int(quantize(X, 3).max()) == 7 and int(quantize(X, 3).min()) == 0
    with pytest.raises(ValueError, match="bits"):
        quantize(X, 0)


def test_exhaustive_states_cover_every_continuation(small):
    base = [[1, 2], [3]]
    X = exhaustive_continuation_states(small, base, 2, batch_size=20)
    assert X.shape == (2 * V, 32)
    torch.testing.assert_close(X[V + 7], sequence_states(small, [3, 7], 2)[-1], atol=2e-5, rtol=0)


def test_hardprompts_baseline_runs_and_keeps_the_best_projection(small):
    prompt = [4, 8, 15, 16]
    H = observe(small, prompt, 2)
    r = hardprompts_invert(small, H, 2, steps=20, seed=0)
    assert len(r["tokens"]) == 4 and 1 <= r["steps"] <= 20 and r["loss"] >= 0
    assert all(0 <= t < V for t in r["tokens"])


def test_prompt_sets_are_distinct_and_sized():
    rng = np.random.default_rng(0)
    docs = [list(range(i, i + 30)) for i in range(0, 300, 7)] + [[1, 2, 3]] * 5
    ps = mixed_prompts(docs, 200, min_len=4, max_len=12, vocab_size=500, random_frac=0.1, rng=rng)
    assert len(ps) == len(set(ps)) == 200
    assert all(4 <= len(p) <= 12 for p in ps)
    exact = mixed_prompts(docs, 20, min_len=8, max_len=8, vocab_size=500, random_frac=0.5, rng=rng, exact_len=True)
    assert {len(p) for p in exact} == {8}
    r = random_token_prompts(30, min_len=2, max_len=3, vocab_size=5, rng=rng)
    assert len(set(r)) == 30 and all(1 <= t < 5 for p in r for t in p)


def test_config_validates_parameters(tmp_path):
    cfg = paper.config(out_dir=str(tmp_path), verbose=False)
    assert cfg.vocab_size == 2048 and cfg.n_prompts == 2000 and cfg.model_name is None
    full = paper.config(mode="full", out_dir=str(tmp_path), verbose=False, n_prompts=500)
    assert full.vocab_size == 8192 and full.n_prompts == 500
    with pytest.raises(ValueError, match="n_prompts"):
        paper.config(n_prompts=3, out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="model_name"):
        paper.config(model_name="", out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="mode"):
        paper.config(mode="fast", out_dir=str(tmp_path), verbose=False)
