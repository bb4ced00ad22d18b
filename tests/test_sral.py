"""Unit tests of lib.sral: exact W2, quantile pooling, masking, metrics, the eps-ball, the OFF reader."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from lib.sral import LOADERS, config
from lib.sral import data as D
from lib.sral.metrics import graded_relevance, map_at_k, ndcg_at_k, spearman_rows
from lib.sral.model import SetEncoder, TrainSpec, info_nce, masked_quantiles, train_pairs, worst_delta
from lib.sral.ot import exact_w2, sliced_w2

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "data" / "sral" / "modelnet_tiny"


def test_exact_w2_equals_brute_force_over_permutations():
    rng = np.random.default_rng(0)
    for n in (3, 4, 5):
        A, B = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
        brute = min(((A - B[list(p)]) ** 2).sum(1).mean() for p in itertools.permutations(range(n)))
        assert exact_w2(A, B) == pytest.approx(np.sqrt(brute), rel=1e-9)


def test_exact_w2_unequal_sizes_and_translation():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 3))
    assert exact_w2(A, A + np.array([1.0, 2.0, 2.0])) == pytest.approx(3.0, rel=1e-9)  # W2 of a shift = its norm
    B = rng.normal(size=(5, 3))
    # 1-D: W2 between uniform measures of equal size is the sorted matching
    a, b = rng.normal(size=6), rng.normal(size=6)
    assert exact_w2(a[:, None], b[:, None]) == pytest.approx(np.sqrt(((np.sort(a) - np.sort(b)) ** 2).mean()))


def test_masked_quantiles_match_numpy_quantile():
    rng = np.random.default_rng(2)
    sizes = [5, 17, 30]
    X, mask = D.pad_sets([rng.normal(size=(n, 3)).astype(np.float32) for n in sizes])
    taus = (torch.arange(8) + 0.5) / 8
    Q = masked_quantiles(torch.as_tensor(X), torch.as_tensor(mask), taus).numpy()
    for b, n in enumerate(sizes):
        ref = np.quantile(X[b, :n], taus.numpy(), axis=0).T  # (L, M)
        np.testing.assert_allclose(Q[b], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pool", ["mean", "sw", "settf"])
def test_padded_batch_gives_each_sets_code_alone(pool):
    rng = np.random.default_rng(3)
    sets = [rng.normal(size=(n, 4)).astype(np.float32) for n in (16, 31, 48)]
    model = SetEncoder(4, 16, pool, 8, 8, 4, torch.Generator().manual_seed(0))
    X, mask = D.pad_sets(sets, 48)
    X[~mask] = 123.0  # garbage in the padding must not matter
    z = model.code(torch.as_tensor(X), torch.as_tensor(mask)).detach().numpy()
    for b, s in enumerate(sets):
        alone = model.code(torch.as_tensor(s[None]), torch.ones(1, len(s), dtype=torch.bool)).detach().numpy()[0]
        np.testing.assert_allclose(z[b], alone, rtol=1e-4, atol=1e-5)
    perm = rng.permutation(len(sets[1]))  # permutation invariance
    zp = model.code(torch.as_tensor(sets[1][perm][None]), torch.ones(1, len(sets[1]), dtype=torch.bool))
    np.testing.assert_allclose(zp.detach().numpy()[0], z[1], rtol=1e-4, atol=1e-5)


def test_sw_code_distance_approximates_sliced_w2():
    """With phi = identity-like codes replaced by raw points, ||z - z'||^2 -> mean_l W2^2 of the projections."""
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(400, 2)).astype(np.float32), rng.normal(1.0, 2.0, size=(400, 2)).astype(np.float32)
    from lib.sral.model import SWPool

    pool = SWPool(2, 6, 200, torch.Generator().manual_seed(1))
    zA = pool(torch.as_tensor(A[None]), torch.ones(1, 400, dtype=torch.bool))
    zB = pool(torch.as_tensor(B[None]), torch.ones(1, 400, dtype=torch.bool))
    th = pool.directions().detach().numpy()
    ref = sliced_w2(A.astype(float), B.astype(float), th) ** 2
    assert float(((zA - zB) ** 2).sum().detach()) == pytest.approx(ref, rel=0.05)


def test_ndcg_and_spearman_agree_with_sklearn_and_scipy():
    from scipy.stats import spearmanr
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(5)
    gt = rng.random((6, 40))
    rel = graded_relevance(gt, 10)
    sc = rng.random((6, 40))
    np.testing.assert_allclose(ndcg_at_k(rel, sc, 10).mean(), ndcg_score(rel, sc, k=10), rtol=1e-10)
    a, b = rng.random((6, 40)), rng.random((6, 40))
    np.testing.assert_allclose(spearman_rows(a, b), [spearmanr(x, y)[0] for x, y in zip(a, b)], rtol=1e-10)
    assert ndcg_at_k(rel, -gt, 10).min() == pytest.approx(1.0)  # the true ranking is perfect


def test_map_at_k_closed_form():
    rel = np.array([[True, False, True, False]])
    sc = np.array([[4.0, 3.0, 2.0, 1.0]])  # hits at ranks 1 and 3: AP = (1 + 2/3) / 2
    assert map_at_k(rel, sc, 4) == pytest.approx((1 + 2 / 3) / 2)


@pytest.mark.parametrize("target", ["element", "input", "random"])
def test_delta_stays_in_the_eps_ball_and_raises_the_loss(target):
    rng = np.random.default_rng(6)
    X, mask = D.pad_sets([rng.normal(size=(n, 4)).astype(np.float32) for n in (10, 20, 30, 40)], 48)
    Xt, Mt = torch.as_tensor(X), torch.as_tensor(mask)
    model = SetEncoder(4, 16, "sw", 8, 8, 4, torch.Generator().manual_seed(0))
    z0 = model.code(Xt, Mt)
    delta, radius = worst_delta(model, Xt, Mt, z0, 0.2, 0.1, steps=3, target=target,
                                generator=torch.Generator().manual_seed(0))
    nrm = delta.norm(dim=-1)
    assert float(nrm.max()) <= float(radius) * (1 + 1e-5)
    assert float(nrm[~Mt].abs().max()) == 0.0
    if target == "element":
        with torch.no_grad():
            l0 = info_nce(z0, z0, 0.1)
            ld = info_nce(model.code(Xt, Mt, delta=delta), z0, 0.1)
        assert float(ld) > float(l0)  # the ascent found a worse perturbation


def test_training_is_deterministic_and_counts_steps():
    rng = np.random.default_rng(7)
    sets, lab, _ = D.gmm_set_pool(20, 4, rng)
    X, m = D.pad_sets(sets, 48)
    spec = TrainSpec(aux="sral", epochs=1, batch=16, h=8, n_slices=4, n_quantiles=4)
    m1, h1 = train_pairs(spec, X, m, lab, 4, 0)
    m2, h2 = train_pairs(spec, X, m, lab, 4, 0)
    assert h1.steps == 5 and h1.loss == h2.loss
    assert h1.max_delta_ratio <= 1 + 1e-5


def test_off_reader_good_fixture_and_glued_header(tmp_path):
    cd = LOADERS["data_path"](FIXTURE)
    assert cd.classes == ["cube", "pyramid"] and len(cd.y_train) == 4 and len(cd.y_test) == 2
    assert np.abs(np.linalg.norm(cd.X_train, axis=-1)).max() <= 1 + 1e-6
    glued = FIXTURE / "cube" / "train" / "cube_train_0001.off"
    assert glued.read_text().startswith("OFF8 6 0")
    V, F = D.read_off(glued)
    assert V.shape == (8, 3) and len(F) == 6


@pytest.mark.parametrize("text, msg", [
    ("PLY\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", "not 'OFF'"),
    ("OFF\n3 one 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", "counts line"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n3 0 1 2\n", "promises"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n", "names vertex 5"),
    ("OFF\n3 1 0\n0 0 0\n1 0\n0 1 0\n3 0 1 2\n", "2 fields, not 3"),
    ("OFF\n3 1 0\n0 0 0\n1 x 0\n0 1 0\n3 0 1 2\n", "three numbers"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", "k >= 3"),
])
def test_off_reader_refuses_malformed_files(tmp_path, text, msg):
    p = tmp_path / "bad.off"
    p.write_text(text)
    with pytest.raises(ValueError, match=msg) as e:
        D.read_off(p)
    assert "data_path" in str(e.value)


def test_config_refuses_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="eps"):
        config(eps=-1, verbose=False)
    with pytest.raises(ValueError, match="'h'"):
        config(h=30, verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        config(data_path=tmp_path, verbose=False)  # an empty folder: no <class>/train/*.off


def test_committed_w2_matches_its_sets():
    from lib.sral.experiments import load_task_r, w2_file_check

    task = load_task_r()
    assert task.w2.shape == (200, 1000)
    assert w2_file_check(task, n_pairs=5) < 1e-4
