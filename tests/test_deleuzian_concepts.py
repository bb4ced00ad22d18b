"""Unit tests of lib.deleuzian_concepts (fast: a few seconds)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lib.deleuzian_concepts import concepts as cc
from lib.deleuzian_concepts import metrics as mt
from lib.deleuzian_concepts.data import (CONLL_TASKS, make_digits, make_sentences, read_conll, sentence_engine,
                                         write_conll_fixture)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "deleuzian_concepts" / "conll_fixture.txt"


def _acts(n=300, d=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) + rng.exponential(1.0, (n, d))


def test_projection_skewness_matches_scipy():
    A = _acts()
    D = A[:5] - A[5:10]
    ref = stats.skew(D @ A.T, axis=1, bias=True)
    np.testing.assert_allclose(cc.projection_skewness(D, A, chunk=2), ref, rtol=1e-8)


def test_sign_flip_makes_skews_nonnegative_and_weights_finite():
    A = _acts()
    A[7] = A[3]  # a zero difference somewhere: skew 0 -> weight 1/0 -> must become 0
    rng = np.random.default_rng(1)
    Dm, skew, w = cc.signed_differences(A, rng)
    assert (skew >= 0).all()
    assert np.isfinite(w).all() and (w >= 0).all()
    # the flipped differences really have the positive skew (recomputed from scratch)
    assert (cc.projection_skewness(Dm, A) >= -1e-9).all()
    # each sample appears once on each side: the differences sum to zero up to the signs
    np.testing.assert_allclose(np.abs(Dm).sum(), np.abs(A - A[np.random.default_rng(1).permutation(len(A))]).sum())


def test_zero_difference_gets_zero_weight():
    A = np.vstack([np.ones((3, 4)), _acts(50, 4)])
    skew = cc.projection_skewness(np.zeros((1, 4)), A)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 1 / np.abs(skew)
    assert skew[0] == 0 and not np.isfinite(w[0])  # the case signed_differences maps to weight 0


def test_diff_concepts_centroids_are_weighted_means_of_their_clusters():
    A = _acts(200, 6)
    c = cc.diff_concepts(A, 5, seed=3)
    Dm, _, w = cc.signed_differences(A, np.random.default_rng(3))
    lab = ((Dm[:, None, :] - c.C[None]) ** 2).sum(-1).argmin(1)
    for j in range(5):  # K-means stops at a tolerance: the last centre update may still move a little
        m = (lab == j) & (w > 0)
        if m.sum() > 1:
            wmean = (w[m, None] * Dm[m]).sum(0) / w[m].sum()
            assert np.linalg.norm(c.C[j] - wmean) < 0.05 * np.linalg.norm(wmean)
            if not np.allclose(wmean, Dm[m].mean(0), atol=0.1 * np.linalg.norm(wmean)):
                assert np.linalg.norm(c.C[j] - wmean) < np.linalg.norm(c.C[j] - Dm[m].mean(0))
    np.testing.assert_allclose(c.encode(A), A @ c.C.T)


def test_probe_loss_zero_on_separating_concept_and_entropy_on_constant():
    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.3).astype(float)
    z = np.c_[np.ones(600), (2 * y - 1) * (1 + rng.random(600)), rng.standard_normal(600)]
    te, j, sign = mt.probe_losses(z[:400], z[400:], y[:400, None], y[400:, None], iters=30)
    assert j[0] == 1 and sign[0] > 0 and te[0] < 0.02
    te_c, _, _ = mt.probe_losses(z[:400, :1], z[400:, :1], y[:400, None], y[400:, None])
    p = y[:400].mean()
    h = -(y[400:] * np.log(p) + (1 - y[400:]) * np.log(1 - p)).mean()  # test CE of the training prior
    assert abs(te_c[0] - h) < 1e-4
    assert abs(mt.label_entropy(y[:400]) - (-(p * np.log(p) + (1 - p) * np.log(1 - p)))) < 1e-12


def test_probe_agrees_with_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    z = rng.standard_normal((500, 3))
    y = (z[:, 2] + 0.7 * rng.standard_normal(500) > 0.2).astype(float)
    te, j, _ = mt.probe_losses(z[:350], z[350:], y[:350, None], y[350:, None], lam=1e-6, iters=30, dtype=np.float64)
    zs = (z - z[:350].mean(0)) / z[:350].std(0)
    lr = LogisticRegression(C=1e6).fit(zs[:350, 2:3], y[:350])
    p = lr.predict_proba(zs[350:, 2:3])[:, 1]
    ref = -(y[350:] * np.log(p) + (1 - y[350:]) * np.log(1 - p)).mean()
    assert j[0] == 2 and abs(te[0] - ref) < 1e-4


def test_mppc_is_one_on_permuted_sign_flipped_copy_and_low_on_noise():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((400, 20))
    perm = rng.permutation(20)
    signs = rng.choice([-1.0, 1.0], 20)
    assert mt.mppc(Z, 3 * Z[:, perm] * signs) == pytest.approx(1.0)
    assert mt.mppc(Z, rng.standard_normal((400, 20))) < 0.3


def test_effective_rank_and_cosines():
    assert mt.effective_rank(np.eye(7)) == pytest.approx(7.0)
    assert mt.effective_rank(np.outer(np.ones(5), np.arange(1, 4))) == pytest.approx(1.0)
    assert mt.mean_max_abs_cos(np.eye(4)) == pytest.approx(0.0)


def test_steering_round_trip_and_neighbours():
    X = _acts(50, 6)
    c = np.arange(6.0)
    np.testing.assert_allclose(mt.steer(mt.steer(X, c, 2.5), c, -2.5), X, rtol=0, atol=1e-12)
    bank = np.r_[np.zeros((10, 2)), np.full((10, 2), 10.0)]
    has = np.r_[np.zeros(10), np.ones(10)]
    assert mt.neighbour_fraction(np.zeros((3, 2)), bank, has, 5) == 0.0
    assert mt.neighbour_fraction(mt.steer(np.zeros((3, 2)), np.ones(2), 10.0), bank, has, 5) == 1.0


def test_topk_sae_codes_are_sparse_and_lda_finds_planted_direction():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((400, 10))
    c = cc.train_sae(A, 16, kind="topk", topk=3, steps=20, seed=0)
    Z = c.encode(A)
    assert ((Z > 0).sum(1) <= 3).all() and c.C.shape == (16, 10)
    np.testing.assert_allclose(np.linalg.norm(c.C, axis=1), 1.0, atol=1e-5)
    y = (rng.random(400) < 0.5).astype(float)
    A[:, 4] += 3 * y
    d = cc.lda_directions(A, y[:, None]).C[0]
    assert np.argmax(np.abs(d)) == 4


def test_templated_sentences_have_consistent_labels():
    data = make_sentences(200, np.random.default_rng(0))
    assert len(data.texts) == 200 and data.labels.isna().sum().sum() == 0
    for text, row in zip(data.texts, data.labels.to_dict("records")):
        assert (" will " in f" {text} ") == (row["tense"] == "future")
        assert (" not " in f" {text} ") == (row["negation"] == "neg")
    assert set(data.labels.topic) == {"sports", "food", "weather", "music", "finance", "travel"}
    assert len(sentence_engine().templates) == 8


def test_digits_augmentation_labels():
    d = make_digits(300, np.random.default_rng(0))
    assert d.images.shape == (300, 8, 8) and 0 <= d.images.min() and d.images.max() <= 1
    assert set(d.labels["shift"]) == {"left", "none", "right"}
    thick, thin = d.images[d.labels.thick == "thick"], d.images[d.labels.thick == "thin"]
    assert thick.sum((1, 2)).mean() > thin.sum((1, 2)).mean()


def test_conll_fixture_reads(tmp_path):
    data = read_conll(FIXTURE)
    assert len(data.sentences) == 5 and data.n_tokens() == 36
    assert data.sentences[1] == ["Peter", "Blackburn"] and data.tags[1][1] == ("NNP", "I-NP", "I-PER")
    out = tmp_path / "again.txt"
    write_conll_fixture(out)
    assert out.read_bytes() == FIXTURE.read_bytes()  # the fixture is what the committed writer makes


@pytest.mark.parametrize("line, what", [
    ("Peter NNP B-NP", "3 field"), ("Peter,NNP,B-NP,B-PER", "separated by ','"), ("Peter NNP B-NP PER", "NER tag"),
    ("Peter 123 B-NP B-PER", "POS tag"), ("Peter NNP XNP O", "chunk tag"),
])
def test_conll_bad_lines_fail_clearly(tmp_path, line, what):
    text = FIXTURE.read_text().splitlines()
    text[3] = line
    bad = tmp_path / "bad.conll"
    bad.write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError) as err:
        read_conll(bad)
    msg = str(err.value)
    assert "data_path" in msg and "line 4" in msg and what in msg


def test_config_refuses_bad_parameters():
    import lib.deleuzian_concepts as paper

    with pytest.raises(ValueError, match="'k'"):
        paper.config(k=1, verbose=False)
    with pytest.raises(ValueError, match="mode"):
        paper.config(mode="fast", verbose=False)
    with pytest.raises(ValueError, match="model_name"):
        paper.config(model_name="./no/such/folder", verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        paper.config(data_path="/no/such/file.conll", verbose=False)


def test_checkpoint_script_is_deterministic_and_shipped_checkpoint_matches_its_recipe(tmp_path):
    import torch

    from lib.deleuzian_concepts.encoders import CKPT_ARCH, CKPT_TRAIN, load_checkpoint
    from lib.deleuzian_concepts.make_checkpoint import main

    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    fast = ["--steps", "2", "--n-sentences", "200", "--doc-files", "5"]
    main(fast + ["--out", str(a)])
    main(fast + ["--out", str(b)])
    sa, sb = torch.load(a, weights_only=True)["state"], torch.load(b, weights_only=True)["state"]
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    model, tok, meta = load_checkpoint()
    assert meta["arch"] == CKPT_ARCH and meta["train"] == CKPT_TRAIN
    assert meta["final_loss"] < 2.0 and tok.get_vocab_size() == CKPT_ARCH["vocab_size"]
    assert model.transformer.wte.weight.data_ptr() == model.lm_head.weight.data_ptr()  # tied head restored


def test_checkpoint_forward_matches_transformers_hidden_states():
    """The torch-only forward of the shipped checkpoint gives transformers' hidden_states at every layer."""
    import torch

    from lib.common.lm_hooks import read_states
    from lib.deleuzian_concepts.encoders import load_checkpoint, load_checkpoint_states

    hf, _, meta = load_checkpoint()
    fast, _, _ = load_checkpoint_states()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, meta["arch"]["vocab_size"], (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0  # right padding, as TextEncoder.states builds its batches
    L = meta["arch"]["n_layer"]
    ref = read_states(hf, ids, list(range(L + 1)), attention_mask=mask)
    with torch.no_grad():
        for layer in range(L + 1):
            got = fast.states(ids, layer)
            np.testing.assert_allclose(got[0].numpy(), ref[layer][0].numpy(), atol=1e-4, rtol=1e-4)
            np.testing.assert_allclose(got[1, :7].numpy(), ref[layer][1, :7].numpy(), atol=1e-4, rtol=1e-4)


def test_batched_saes_equal_saes_trained_alone_and_hand_gradients_equal_autograd():
    import torch

    rng = np.random.default_rng(0)
    A = rng.standard_normal((300, 10)) @ rng.standard_normal((10, 10))
    A[:, :2] *= 15  # a few dominant directions: latents die and the AuxK term is exercised
    B2 = rng.standard_normal((250, 10))
    specs = [dict(kind="topk", topk=3, seed=1, data=0), dict(kind="vanilla", l1=1e-2, seed=2, data=1),
             dict(kind="topk", topk=2, seed=3, on_diffs=True, data=0)]
    batch = cc.train_saes([A, B2], 12, specs, steps=40, dead_after=3)
    for sp, got in zip(specs, batch):
        alone = cc.train_sae([A, B2][sp["data"]], 12, kind=sp["kind"], topk=sp.get("topk", 8), l1=sp.get("l1", 1e-3),
                             seed=sp["seed"], on_diffs=sp.get("on_diffs", False), steps=40, dead_after=3)
        np.testing.assert_allclose(got.C, alone.C, atol=1e-5)
        np.testing.assert_allclose(got.encode(A[:20]), alone.encode(A[:20]), atol=1e-4)
    # the hand-written gradients against autograd on the same loss
    g = torch.Generator().manual_seed(0)
    Bn, n, D, k = 2, 32, 6, 8
    x = torch.randn(Bn, n, D, generator=g, dtype=torch.float64)
    params = [s * torch.randn(*shape, generator=g, dtype=torch.float64)
              for s, shape in ((1.0, (Bn, D, k)), (1.0, (Bn, k, D)), (0.1, (Bn, 1, k)), (0.1, (Bn, 1, D)))]
    params[0][:, :, :3] *= 0.01  # latents 0-2: small positive pre-activations, never in the top 3 -> dead
    params[2][:, :, :3] = 0.05
    params[2][:, :, 3:] = 10.0
    tk = torch.tensor([True, False])[:, None, None]
    dead_mask = torch.zeros(Bn, k, dtype=torch.bool)
    dead_mask[:, :3] = True
    coef = dict(aux=0.5, l1=torch.tensor([0.0, 0.3], dtype=torch.float64)[:, None, None], k_aux=torch.tensor([4, 4]))
    kth_idx = torch.tensor([2, 0])[:, None, None]
    grads, fired = cc._sae_grads(x, params, kth_idx, 3, tk, dead_mask, coef)
    P = [p.clone().requires_grad_(True) for p in params]
    W_e, W_d, b_e, b_d = P
    pre = torch.relu(torch.bmm(x - b_d, W_e) + b_e)
    kth = pre.detach().topk(3, dim=2).values.gather(2, kth_idx.expand(Bn, n, 1))
    z = torch.where(tk, pre * (pre >= kth).to(pre.dtype), pre)
    xh = torch.bmm(z, W_d) + b_d
    loss = ((xh - x) ** 2).sum(2).mean(1) + coef["l1"][:, 0, 0] * z.abs().sum(2).mean(1)
    dead = dead_mask & ~(z > 0).any(1) & tk[:, :, 0]
    pd_ = pre * dead[:, None, :].to(pre.dtype)
    nd = dead.sum(1)
    ka = torch.minimum(coef["k_aux"], nd).clamp(min=1)
    kth_a = pd_.detach().topk(int(ka.max()), dim=2).values.gather(2, (ka - 1)[:, None, None].expand(Bn, n, 1))
    za = pd_ * ((pd_ >= kth_a) & (pd_ > 0)).to(pre.dtype)
    aux = ((torch.bmm(za, W_d) - (x - xh).detach()) ** 2).sum(2).mean(1) * (nd > 0).to(x.dtype)
    (loss + coef["aux"] * aux).sum().backward()
    assert bool(nd[0] > 0)  # the AuxK branch is really exercised
    for got, p in zip(grads, P):
        np.testing.assert_allclose(got.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-10)
