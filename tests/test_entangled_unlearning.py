"""Unit tests of lib.entangled_unlearning: the W2 term, the projection, the augmented Lagrangian, Stage 2's
first-order invariance, the model and optimizers, the data builders and readers, the tuning rule."""
import hashlib
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

import lib.entangled_unlearning as paper
from lib.common import data_dir
from lib.entangled_unlearning.data import best_pairing, digits_superclass, hierarchical_gmm, read_cifar100
from lib.entangled_unlearning.evaluate import svc_mia, three_way_metrics
from lib.entangled_unlearning.experiments import Budget, digits_table, select
from lib.entangled_unlearning.make_data import write_fixture
from lib.entangled_unlearning.method import (
    augmented_lagrangian,
    clipped_ce,
    project_out,
    stage1_augmented_lagrangian,
    stage2_wpgd,
    w2_sq_sorted,
)
from lib.entangled_unlearning.models import SGD, Adam, FlatMLP, pretrain

FIXTURE = data_dir("entangled_unlearning") / "cifar-100-python"


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread (see conftest)


# --- W2 ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,seed", [(2, 0), (7, 1), (50, 2), (128, 3)])
def test_sorted_w2_equals_pot_exact_1d(n, seed):
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=n), rng.gamma(2.0, size=n) * 3 - 1
    ours = float(w2_sq_sorted(torch.tensor(u), torch.tensor(v)))
    w = np.full(n, 1.0 / n)
    assert ours == pytest.approx(ot.emd2(w, w, (u[:, None] - v[None, :]) ** 2), rel=1e-9, abs=1e-12)
    assert ours == pytest.approx(ot.wasserstein_1d(u, v, p=2), rel=1e-9, abs=1e-12)


def test_w2_is_zero_iff_same_multiset_and_refuses_unequal_sizes():
    u = torch.tensor([3.0, -1.0, 2.0, 2.0])
    assert float(w2_sq_sorted(u, u[torch.randperm(4)])) == 0.0
    assert float(w2_sq_sorted(u, u + 0.5)) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        w2_sq_sorted(u, u[:3])


# --- projection --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_projection_is_orthogonal_to_both_constraint_gradients(seed):
    g = torch.Generator().manual_seed(seed)
    v, b1, b2 = (torch.randn(1000, generator=g, dtype=torch.float64) for _ in range(3))
    b2 = b2 + 0.9 * b1  # correlated constraint gradients, as g_f and g_r typically are
    p = project_out(v, b1, b2, ridge=0.0)
    assert abs(float(p @ b1)) < 1e-9 * float(v.norm() * b1.norm())
    assert abs(float(p @ b2)) < 1e-9 * float(v.norm() * b2.norm())
    # v - p lies in span{b1, b2}: projecting p again changes nothing, and a vector already orthogonal is kept
    assert torch.allclose(project_out(p, b1, b2, ridge=0.0), p, atol=1e-9)
    assert float(p.norm()) <= float(v.norm()) + 1e-12


def test_projection_accepts_lists_of_tensors_like_flat_vectors():
    g = torch.Generator().manual_seed(5)
    shapes = [(4, 3), (4,), (2, 4)]
    parts = [[torch.randn(s, generator=g) for s in shapes] for _ in range(3)]
    flat = [torch.cat([t.reshape(-1) for t in z]) for z in parts]
    out_list = project_out(*parts)
    assert [tuple(t.shape) for t in out_list] == shapes
    assert torch.allclose(torch.cat([t.reshape(-1) for t in out_list]), project_out(*flat), atol=1e-6)


# --- Stage 1 -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_augmented_lagrangian_solves_a_convex_equality_constrained_problem(seed):
    # min ||theta - a||^2  s.t.  b . theta = c   (solution: a + (c - b.a) b / ||b||^2), one gradient step per
    # multiplier update as in Stage 1 (plain gradient steps: with Adam this toy oscillates, see the notebook)
    rng = np.random.default_rng(seed)
    a, b, c = torch.tensor(rng.normal(size=5)), torch.tensor(rng.normal(size=5)), 1.5
    theta = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = SGD(theta, 0.02)
    hs = []
    augmented_lagrangian(theta, lambda t: (((theta - a) ** 2).sum(), b @ theta - c), opt, steps=3000, mu=1.0,
                         callback=lambda t, h, lam: hs.append(abs(h)))
    assert max(hs[-100:]) < 1e-3 * max(hs[:10]), "constraint residual did not shrink"
    solution = a + (c - b @ a) * b / (b @ b)
    assert torch.allclose(theta.detach(), solution, atol=5e-3)


def test_clipped_ce_value_is_ce_and_gradient_stops_beyond_c():
    logits = torch.tensor([[8.0, 0.0], [0.0, 3.0], [0.0, 20.0]], requires_grad=True)
    y = torch.tensor([0, 0, 0])
    ce = F.cross_entropy(logits, y, reduction="none")
    out = clipped_ce(logits, y, c=10.0, reduction="none")
    assert torch.allclose(out, ce)
    (g,) = torch.autograd.grad(out.sum(), logits)
    (g_ce,) = torch.autograd.grad(ce[:2].sum(), logits)
    assert float(ce[2].detach()) > 10.0 and torch.count_nonzero(g[2]) == 0
    assert torch.allclose(g[:2], g_ce[:2])


@pytest.fixture(scope="module")
def digits_and_model():
    ds = digits_superclass("confusion", 3, seed=0)
    return ds, pretrain(ds, steps=300, generator=torch.Generator().manual_seed(0))


def test_stage1_raises_forget_loss_with_a_small_remote_residual(digits_and_model):
    ds, model = digits_and_model
    m, tr = stage1_augmented_lagrangian(model.copy(), ds.train.subset("remote"), ds.train.subset("forget"), lr=1e-3,
                                        steps=150, generator=torch.Generator().manual_seed(1))
    assert tr.info["forget_loss"] - tr.info["forget_loss0"] > 1.0
    assert abs(tr.info["residual"]) < 0.05
    assert len(tr.frame()) == 150 and {"residual", "lambda", "forget_loss"} <= set(tr.frame().columns)


# --- Stage 2 -----------------------------------------------------------------------------------------------------


def test_stage2_step_is_first_order_invariant_for_forget_objective_and_remote_loss(digits_and_model):
    ds, model = digits_and_model
    tr = ds.train
    ref, _ = stage1_augmented_lagrangian(model.copy(), tr.subset("remote"), tr.subset("forget"), lr=1e-3, steps=30,
                                         generator=torch.Generator().manual_seed(2))
    xa, ya = tr.subset("adjacent")
    xf, yf = tr.subset("forget")
    xr, yr = tr.subset("remote")

    def quantities(m):
        with torch.no_grad():
            u, u_ref = -F.cross_entropy(m(xf), yf, reduction="none"), -F.cross_entropy(ref(xf), yf, reduction="none")
            return (float(0.5 * u.mean() + 0.5 * w2_sq_sorted(u, u_ref)), float(F.cross_entropy(m(xr), yr)),
                    float(F.cross_entropy(m(xa), ya)))

    before = quantities(ref)
    # one step, full batches (so the gradients the step projects against are those of the measured quantities)
    m, _ = stage2_wpgd(ref.copy(), (xa, ya), (xf, yf), (xr, yr), lr=1e-4, epochs=1, momentum=0.0,
                       generator=torch.Generator().manual_seed(3), ref_model=ref, adj_batch=len(xa),
                       forget_batch=len(xf), rem_batch=len(xr), batch_limit=1)
    after = quantities(m)
    d_forget, d_rem, d_adj = (abs(a - b) for a, b in zip(after, before))
    assert after[2] < before[2]  # the adjacent loss goes down
    assert d_forget < 0.02 * d_adj and d_rem < 0.02 * d_adj


# --- model and optimizers ----------------------------------------------------------------------------------------


def test_concatenated_epoch_sees_the_same_batches_as_the_loop():
    from lib.entangled_unlearning.models import Batches

    x, y = torch.arange(23.0).unsqueeze(1), torch.arange(23)
    a, b = Batches(x, y, 5, torch.Generator().manual_seed(7)), Batches(x, y, 5, torch.Generator().manual_seed(7))
    for limit in (None, 2, 10):
        loop = list(a.epoch(limit))
        xc, yc, sizes = b.epoch_cat(limit)
        assert sizes == [len(yb) for _, yb in loop]
        assert torch.equal(torch.cat([yb for _, yb in loop]), yc)


def test_flat_mlp_matches_nn_sequential_with_the_same_weights():
    m = FlatMLP(6, 3, hidden=5, generator=torch.Generator().manual_seed(0))
    seq = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 5), torch.nn.ReLU(),
                              torch.nn.Linear(5, 3))
    with torch.no_grad():
        params = torch.split(m.theta, m.sizes)
        for layer, (w, b) in zip([seq[0], seq[2], seq[4]], zip(params[::2], params[1::2])):
            layer.weight.copy_(w.view_as(layer.weight))
            layer.bias.copy_(b)
    x = torch.randn(11, 6)
    assert torch.allclose(m(x), seq(x), atol=1e-6)
    assert m.n_params == sum(p.numel() for p in seq.parameters())


@pytest.mark.parametrize("kind", ["adam", "sgd_momentum"])
def test_optimizers_follow_torch_optim(kind):
    torch.manual_seed(0)
    target = torch.randn(20)
    a = torch.randn(20, requires_grad=True)
    b = a.detach().clone().requires_grad_(True)
    ours = Adam(a, 0.05) if kind == "adam" else SGD(a, 0.01, momentum=0.9)
    ref = torch.optim.Adam([b], lr=0.05) if kind == "adam" else torch.optim.SGD([b], lr=0.01, momentum=0.9)
    w = torch.linspace(0.5, 2.0, 20)
    for _ in range(25):
        ours.step(torch.autograd.grad((w * (a - target) ** 2).sum() + a.abs().sum(), a)[0])
        ref.zero_grad()
        ((w * (b - target) ** 2).sum() + b.abs().sum()).backward()
        ref.step()
    assert torch.allclose(a, b, atol=1e-5)


# --- data --------------------------------------------------------------------------------------------------------


def test_best_pairing_is_the_brute_force_optimum():
    rng = np.random.default_rng(3)
    w = rng.random((6, 6))
    pairs = best_pairing(w)
    sym = w + w.T
    assert sorted(i for p in pairs for i in p) == list(range(6))
    best = max(sym[0, a] + sym[b, c] + sym[d, e]
               for a in range(1, 6) for (b, c, d, e) in
               [tuple(x) for x in [sorted(set(range(1, 6)) - {a})]]
               for (b, c, d, e) in [(b, c, d, e), (b, d, c, e), (b, e, c, d)])
    assert sum(sym[p] for p in pairs) == pytest.approx(best)


def test_digit_pairs_constant_is_what_the_confusion_pairing_computes():
    pairs, cm = paper.confusion_pairs()
    assert sorted(tuple(sorted(p)) for p in pairs) == sorted(paper.DIGIT_PAIRS)
    assert cm.shape == (10, 10) and np.all(np.diag(cm) == 0)


def test_digits_three_way_split():
    ds = digits_superclass([[3, 8], [4, 9], [1, 7], [5, 6], [0, 2]], forget_digit=3, seed=1)
    for split in (ds.train, ds.val):
        assert set(split.fine[split.part == 0]) == {3} and set(split.fine[split.part == 1]) == {8}
        assert not set(split.fine[split.part == 2]) & {3, 8}
        assert torch.all(split.y[torch.as_tensor(split.part <= 1)] == 0)  # forget super-class first
    n = len(ds.train.y) + len(ds.val.y)
    assert n == 1797 and abs(len(ds.val.y) / n - 0.3) < 0.01
    with pytest.raises(ValueError, match="pairs"):
        digits_superclass([[3, 8], [4, 9]], 3, 0)


def test_gmm_delta_moves_only_the_sub_class_centres():
    a, b = hierarchical_gmm(delta=0.1, n_per=20, seed=4), hierarchical_gmm(delta=3.0, n_per=20, seed=4)
    assert np.array_equal(a.train.part, b.train.part) and torch.equal(a.train.y, b.train.y)
    assert a.train.sizes() == {"forget": 14, "adjacent": 56, "remote": 630}

    def spread(ds):  # mean distance of the forget sub-class's mean to its siblings' mean
        x = ds.train.x.numpy()
        return np.linalg.norm(x[ds.train.part == 0].mean(0) - x[ds.train.part == 1].mean(0))

    assert spread(b) > 3 * spread(a)


def test_cifar100_reader_on_fixture_and_refusals(tmp_path):
    ds = read_cifar100(FIXTURE, seed=0)
    assert ds.n_classes == 20 and ds.in_dim == 3072
    assert ds.train.sizes() == {"forget": 4, "adjacent": 16, "remote": 40}
    assert ds.info["adjacent"] == [32, 67, 73, 91] and ds.info["super_class"] == 1
    assert abs(float(ds.train.x.mean())) < 1e-4  # standardised with the training statistics
    assert read_cifar100(FIXTURE.parent, seed=0).train.sizes() == ds.train.sizes()  # the parent folder works too
    with pytest.raises(ValueError, match="data_path"):
        read_cifar100(tmp_path)
    (tmp_path / "train").write_bytes(b"not a pickle")
    (tmp_path / "test").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="data_path.*not a pickle"):
        read_cifar100(tmp_path)


def test_cifar100_loader_refuses_foreign_and_inconsistent_pickles(tmp_path):
    import pickle
    import shutil

    from lib.entangled_unlearning.data import check_cifar100

    assert check_cifar100(FIXTURE.parent) == FIXTURE
    folder = tmp_path / "cifar-100-python"
    shutil.copytree(FIXTURE, folder)
    (folder / "train").write_bytes(pickle.dumps(print, protocol=2))  # a pickle naming a global: never loaded
    with pytest.raises(ValueError, match="data_path.*foreign pickle"):
        check_cifar100(tmp_path)
    with open(FIXTURE / "train", "rb") as fh:
        d = pickle.load(fh, encoding="bytes")
    d[b"fine_labels"] = list(d[b"fine_labels"])[:-1]  # one label short
    (folder / "train").write_bytes(pickle.dumps(d, protocol=2))
    with pytest.raises(ValueError, match="data_path.*fine_labels"):
        check_cifar100(folder)
    with open(FIXTURE / "train", "rb") as fh:
        d = pickle.load(fh, encoding="bytes")
    d[b"coarse_labels"] = [(c + 1) % 20 for c in d[b"coarse_labels"]]  # the fine classes change super-class
    (folder / "train").write_bytes(pickle.dumps(d, protocol=2))
    with pytest.raises(ValueError, match="two super-classes"):
        check_cifar100(folder)


def test_gradient_ascent_stops_at_the_forgetting_target(digits_and_model):
    from lib.entangled_unlearning.baselines import gradient_ascent

    ds, model = digits_and_model
    xf, yf = ds.train.subset("forget")
    acc = lambda m: 100.0 * float((m(xf).argmax(1) == yf).float().mean())  # noqa: E731
    free = gradient_ascent(model.copy(), ds, lr=3e-3, steps=200, generator=torch.Generator().manual_seed(2))
    stop = gradient_ascent(model.copy(), ds, lr=3e-3, steps=200, generator=torch.Generator().manual_seed(2),
                           stop_at=20.0)
    assert acc(stop) <= 20.0 < acc(model)
    # it stopped early: nearer the original than the 200-step run (which here diverges: a NaN distance)
    near, far = float((stop.theta - model.theta).norm()), float((free.theta - model.theta).norm())
    assert np.isfinite(near) and not far <= near


def test_sweep_claim_takes_the_most_entangled_delta_and_matched_baselines_only():
    from lib.entangled_unlearning.experiments import sweep_claim

    rows = []
    for seed in (0, 1):
        for delta in (0.25, 1.0):
            for m, adj, matched in (("GA", 5.0, True), ("FT", 50.0, False), ("l1-sparse", 8.0, True),
                                    ("SCRUB", 9.0 + seed, True), ("NegGrad+", 1.0, True),
                                    ("ours (no W2)", 30.0, True), ("ours", 20.0 + 10 * delta, True)):
                rows.append({"seed": seed, "delta": delta, "method": m, "acc_val_adjacent": adj, "matched": matched})
    out = sweep_claim(pd.DataFrame(rows))
    assert out["delta"] == 0.25 and out["n_seeds"] == 2
    assert out["per_seed"]["best_matched_baseline_adj"].tolist() == [9.0, 10.0]  # FT is not matched
    assert out["c6"] == pytest.approx(((22.5 - 9) + (22.5 - 10)) / 2)
    assert out["vs_no_w2"] == pytest.approx(22.5 - 30.0)


def test_fixture_is_reproducible(tmp_path):
    digests = write_fixture(tmp_path)
    for name, digest in digests.items():
        assert hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest() == digest


# --- protocol, metrics, config -----------------------------------------------------------------------------------


def test_select_prefers_matched_points_then_smallest_gap_then_larger_rate():
    ref = {"acc_train_forget": 5.0, "acc_val_adjacent": 100.0, "acc_val_remote": 98.0}
    rows = pd.DataFrame({"multiplier": [0.3, 1.0, 3.0],
                         "acc_train_forget": [90.0, 8.0, 0.0], "acc_val_adjacent": [100.0, 95.0, 0.0],
                         "acc_val_remote": [98.0, 97.0, 30.0]})
    assert select(rows, ref, target=10.0)["multiplier"] == 1.0  # 0.3 is closer on average but does not forget
    assert select(rows, ref, target=1.0)["multiplier"] == 3.0  # only the collapsed point is matched
    tied = rows.assign(acc_train_forget=[95.0, 95.2, 99.0], acc_val_adjacent=100.0, acc_val_remote=98.0)
    assert select(tied, ref, target=10.0)["multiplier"] == 1.0  # no match: smallest gap, ties to the larger rate


def test_metrics_and_attack_are_well_formed(digits_and_model):
    ds, model = digits_and_model
    m = three_way_metrics(model, ds)
    assert set(m) == {f"{k}_{sp}_{s}" for k in ("acc", "loss") for sp in ("train", "val")
                      for s in ("forget", "adjacent", "remote")}
    assert m["acc_train_remote"] > 90
    a = svc_mia(model, ds, np.random.default_rng(0))
    assert 0.0 <= a <= 1.0 and a == svc_mia(model, ds, np.random.default_rng(0))


def test_config_rejects_bad_parameters():
    for kw, name in [({"forget_digit": 11}, "forget_digit"), ({"alpha": 1.5}, "alpha"), ({"pairs": "random"}, "pairs"),
                     ({"deltas": [0.5, -1]}, "deltas"), ({"n_per": 5}, "n_per"), ({"data_path": "/no/such"},
                                                                                   "data_path")]:
        with pytest.raises(ValueError, match=name):
            paper.config(verbose=False, **kw)


def test_the_cifar_path_runs_end_to_end_on_the_fixture():
    budget = Budget(pretrain_steps=20, steps=4, steps_stage1=4, epochs_stage2=1, stage2_batches=2)
    run = digits_table(0, budget, grid=(1.0,), data_path=str(FIXTURE))
    assert list(run.table.index) == paper.METHOD_ORDER
    assert run.table[[c for c in run.table.columns if c.startswith("acc_")]].notna().all().all()
    assert math.isfinite(run.stage1_info["residual"])


def test_secondary_hyperparameters_are_grid_points_and_real_arguments():
    """The calibrated secondary hyperparameters come from their grid and name real arguments of the baselines."""
    import inspect

    from lib.entangled_unlearning.baselines import BASELINES
    from lib.entangled_unlearning.experiments import SECONDARY, SECONDARY_GRID

    for task, table in SECONDARY.items():
        assert set(table) == set(SECONDARY_GRID), task
        for name, params in table.items():
            sig = inspect.signature(BASELINES[name]).parameters
            for key, value in params.items():
                assert key in sig, (task, name, key)
                assert value in SECONDARY_GRID[name][key], (task, name, key, value)
