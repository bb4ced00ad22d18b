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
