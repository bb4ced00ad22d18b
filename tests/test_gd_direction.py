"""Unit tests of lib.gd_direction: derivatives, the windowed measurements, the logistic minimiser, torch.func HVPs,
the training loop and the CIFAR-10 reader."""
import pickle

import numpy as np
import pytest
import torch

import lib.gd_direction as paper
from lib.common import project_root
from lib.common.userfiles import UserFileError
from lib.gd_direction import data, dynamics, experiments, logreg, nets, toys
from lib.gd_direction.make_data import write_fixture

pytestmark = pytest.mark.usefixtures("one_thread")

FIXTURE = project_root() / "data" / "gd_direction" / "cifar-10-batches-py"


# --- toys -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("toy", list(toys.TOYS.values()), ids=list(toys.TOYS))
def test_toy_gradients_and_hessians_match_finite_differences(toy):
    rng = np.random.default_rng(0)
    h = 1e-6
    for p in rng.uniform(-0.7, 0.7, size=(5, 2)):
        fd_grad = np.array([(toy.f(p + h * e) - toy.f(p - h * e)) / (2 * h) for e in np.eye(2)])
        np.testing.assert_allclose(toy.grad(p), fd_grad, rtol=1e-6, atol=1e-8)
        fd_hess = np.array([(toy.grad(p + h * e) - toy.grad(p - h * e)) / (2 * h) for e in np.eye(2)]).T
        np.testing.assert_allclose(toy.hess(p), fd_hess, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(toy.hess(p), toy.hess(p).T)
    assert np.allclose(toy.grad(toy.xstar), 0.0)


def test_toy_functions_vectorise_over_batches():
    P = np.random.default_rng(1).normal(size=(4, 3, 2))
    for toy in toys.TOYS.values():
        assert toy.f(P).shape == (4, 3) and toy.grad(P).shape == (4, 3, 2) and toy.hess(P).shape == (4, 3, 2, 2)
        np.testing.assert_allclose(toy.grad(P)[2, 1], toy.grad(P[2, 1]))


def test_sharpness_2x2_matches_eigh():
    H = toys.F_C.hess(np.random.default_rng(2).normal(scale=0.5, size=(50, 2)))
    np.testing.assert_allclose(toys.sharpness_2x2(H), np.linalg.eigvalsh(H)[:, -1], rtol=1e-13)


def test_thresholds_of_the_paper_toys():
    ra = dynamics.regime_threshold(toys.F_A.hess(toys.F_A.xstar))
    rc = dynamics.regime_threshold(toys.F_C.hess(toys.F_C.xstar))
    assert ra.eta_c == pytest.approx(0.4) and ra.eta_max == pytest.approx(0.5)
    assert rc.eta_c == pytest.approx(2 / 3) and rc.eta_max == pytest.approx(1.0)
    assert abs(ra.v1 @ [1, 0]) == pytest.approx(1) and abs(rc.v1 @ [0, 1]) == pytest.approx(1)
    assert [ra.predicted(e) for e in (0.1, 0.42, 0.6)] == ["fixed", "oscillatory", "unstable"]
    with pytest.raises(ValueError, match="positive definite"):
        dynamics.regime_threshold(np.diag([-1.0, 2.0]))


def test_sharpness_gradient_of_fc_is_6_2():
    np.testing.assert_allclose(experiments.sharpness_gradient(), [6.0, 2.0], atol=1e-6)


# --- dynamics -------------------------------------------------------------------------------------------------
def test_update_cosines_straight_zigzag_and_degenerate():
    line = np.outer(0.5 ** np.arange(8), [1.0, 2.0])  # geometric steps along one ray
    np.testing.assert_allclose(dynamics.update_cosines(line), 1.0)
    zig = np.outer((-0.5) ** np.arange(8), [3.0, -1.0])  # alternating around 0 along one line
    np.testing.assert_allclose(dynamics.update_cosines(zig), -1.0)
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)  # right-angle turns
    np.testing.assert_allclose(dynamics.update_cosines(square), 0.0, atol=1e-15)
    stall = np.array([[0, 0], [1, 0], [1, 0], [2, 0]], dtype=float)
    assert np.isnan(dynamics.update_cosines(stall)).all()
    assert dynamics.update_cosines(np.zeros((2, 3))).size == 0


def test_gd_on_a_quadratic_follows_theorem_1():
    H = np.diag([1.0, 4.0])
    grad = lambda x: H @ x  # noqa: E731
    x0 = np.array([0.3, 0.2])
    for eta, want in ((0.1, 0), (0.42, 1)):
        X = dynamics.gd(grad, x0, eta, 400)
        m = dynamics.alignment(X, np.zeros(2), np.eye(2))
        assert m["n_window"] > 5
        assert (m["align_v1"], m["align_vn"])[want] > 0.9999
        assert m["cos"] == pytest.approx(1.0 if want == 0 else -1.0, abs=1e-4)
        assert m["alternation"] == (0.0 if want == 0 else 1.0)
    # exact linear map: x_k = (I - eta H)^k x0
    X = dynamics.gd(grad, x0, 0.1, 5)
    np.testing.assert_allclose(X[5], np.linalg.matrix_power(np.eye(2) - 0.1 * H, 5) @ x0)


def test_gd_stops_on_divergence_and_below_the_floor():
    X = dynamics.gd(lambda x: 4 * x, np.ones(2), 0.6, 10000)  # |1 - 2.4| > 1: diverges
    assert len(X) < 10000 and np.abs(X[-1]).max() > 1e6
    X = dynamics.gd(lambda x: x, np.ones(2), 0.5, 10000, xstar=np.zeros(2), stop_below=1e-6)
    assert np.linalg.norm(X[-1]) < 1e-6 <= np.linalg.norm(X[-2])
    with pytest.raises(ValueError, match="eta"):
        dynamics.gd(lambda x: x, np.ones(2), -0.1, 5)


def test_alignment_is_nan_outside_the_window():
    X = np.array([[1.0, 0.0], [0.5, 0.0]])
    m = dynamics.alignment(X, np.zeros(2), np.eye(2))
    assert m["n_window"] == 0 and np.isnan(m["cos"]) and np.isnan(m["align_v1"])


def test_monotone_and_alternation_helpers():
    assert dynamics.is_monotone([3, 2, 2, 1]) and dynamics.is_monotone([1, 2, 3])
    assert not dynamics.is_monotone([1, 3, 2])
    assert dynamics.alternation_fraction([1, -1, 1, -1]) == 1.0
    assert dynamics.alternation_fraction([1, -1, -1, 1]) == pytest.approx(2 / 3)


# --- logistic regression --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cancer():
    return logreg.breast_cancer_logreg(1.0)


def test_logistic_minimiser_matches_scikit_learn(cancer):
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=cancer.sklearn_C(), fit_intercept=False, tol=1e-12, max_iter=10000)
    clf.fit(cancer.A, cancer.b)
    np.testing.assert_allclose(clf.coef_.ravel(), cancer.xstar, atol=1e-6)
    assert np.linalg.norm(cancer.grad(cancer.xstar)) < 1e-12


def test_logistic_derivatives_match_finite_differences(cancer):
    rng = np.random.default_rng(3)
    w = cancer.xstar + 0.3 * rng.standard_normal(cancer.d)
    v = rng.standard_normal(cancer.d)
    h = 1e-6
    assert (cancer.f(w + h * v) - cancer.f(w - h * v)) / (2 * h) == pytest.approx(cancer.grad(w) @ v, rel=1e-6)
    np.testing.assert_allclose((cancer.grad(w + h * v) - cancer.grad(w - h * v)) / (2 * h), cancer.hess(w) @ v,
                               rtol=1e-5, atol=1e-8)


def test_logistic_conditioning_is_in_the_briefs_range(cancer):
    s = logreg.spectrum_summary(cancer)
    assert 0.3 <= s["lambda_1/lambda_n"] <= 0.5
    assert s["lambda_1"] >= cancer.mu  # the data term is positive semi-definite


def test_autograd_hvp_and_hessian_match_the_closed_form_logistic_hessian(cancer):
    A = torch.from_numpy(cancer.A)
    b = torch.from_numpy(cancer.b)

    def objective(theta, x, y):
        return torch.nn.functional.softplus(-y * (x @ theta)).mean() + 0.5 * cancer.mu * (theta @ theta)

    rng = np.random.default_rng(4)
    w = cancer.xstar + 0.2 * rng.standard_normal(cancer.d)
    H = cancer.hess(w)
    theta = torch.from_numpy(w)
    v = torch.from_numpy(rng.standard_normal(cancer.d))
    np.testing.assert_allclose(nets.hvp(objective, theta, v, A, b).numpy(), H @ v.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(nets.full_hessian(objective, theta, A, b), H, rtol=1e-10, atol=1e-12)
    lam, _ = nets.sharpness(objective, theta, A, b, iters=60, generator=torch.Generator().manual_seed(0))
    assert lam == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=1e-6)


def test_sweep_flips_the_cosine_at_eta_c(cancer):
    df = logreg.sweep_regimes(cancer, [0.5, 1.2], np.random.default_rng(5))
    assert df["converged"].all()
    assert df.loc[0, "cos"] > 0.99 and df.loc[1, "cos"] < -0.99 and df.loc[1, "align_vn"] > 0.99
    assert list(df["predicted"]) == ["fixed", "oscillatory"]


# --- networks -------------------------------------------------------------------------------------------------
def test_flat_model_matches_the_module_and_init_is_seeded():
    module = nets.small_mlp(5, 4, 3)
    model = nets.FlatModel(module, dtype=torch.float64)
    t1 = model.init(torch.Generator().manual_seed(7))
    t2 = model.init(torch.Generator().manual_seed(7))
    assert torch.equal(t1, t2) and t1.numel() == model.n_params == 5 * 4 + 4 + 4 * 3 + 3
    assert t1[:20].abs().max() <= 1 / np.sqrt(5) and t1[24:36].abs().max() <= 1 / np.sqrt(4)
    x = torch.randn(6, 5, dtype=torch.float64)
    with torch.no_grad():
        for p, t in zip(module.parameters(), model.params(t1).values()):
            p.copy_(t)
        np.testing.assert_allclose(model(t1, x).numpy(), module(x).numpy())


def test_cnn_takes_digits_and_cifar_shapes():
    for shape in ((1, 8, 8), (3, 32, 32)):
        model = nets.FlatModel(nets.small_cnn(in_channels=shape[0]))
        theta = model.init(torch.Generator().manual_seed(0))
        assert model(theta, torch.zeros(2, *shape)).shape == (2, 10)


def test_gd_training_is_plain_gradient_descent():
    model = nets.FlatModel(nets.small_mlp(4, 3, 2), dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(10, 4, dtype=torch.float64, generator=g), torch.randint(0, 2, (10,), generator=g)
    theta0 = model.init(g)
    h = nets.train(model, X, Y, opt="gd", lr=0.3, steps=3, loss="mse", wd=0.01, generator=g, theta0=theta0)
    objective = nets.make_objective(model, "mse", 0.01)
    theta = theta0.clone()
    for k in range(3):
        grad = torch.func.grad(lambda t: objective(t, X, Y))(theta)
        assert h.loss[k] == pytest.approx(float(objective(theta, X, Y)))
        theta = theta - 0.3 * grad
        np.testing.assert_allclose(h.thetas[k + 1], theta.numpy(), rtol=1e-12, atol=1e-14)
    assert h.loss[3] == pytest.approx(float(objective(theta, X, Y)))
    assert h.log_unit == "step" and not h.diverged


def test_stochastic_training_logs_per_epoch_and_divergence_is_flagged():
    model = nets.FlatModel(nets.small_mlp(4, 3, 2))
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(40, 4, generator=g), torch.randint(0, 2, (40,), generator=g)
    for opt in ("sgdm", "adam"):
        h = nets.train(model, X, Y, opt=opt, lr=0.01, epochs=4, batch=16, generator=g)
        assert h.thetas.shape == (5, model.n_params) and h.log_unit == "epoch" and np.isfinite(h.loss).all()
    h = nets.train(model, X * 100, Y, opt="gd", lr=1e4, steps=50, loss="mse", generator=g)
    assert h.diverged and len(h.loss) < 51
    with pytest.raises(ValueError, match="opt"):
        nets.train(model, X, Y, opt="lbfgs", lr=0.1, steps=2, generator=g)


def test_eigh_sharpness_tracking_matches_the_full_hessian():
    model = nets.FlatModel(nets.small_mlp(4, 3, 2), dtype=torch.float64)
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(12, 4, dtype=torch.float64, generator=g), torch.randint(0, 2, (12,), generator=g)
    h = nets.train(model, X, Y, opt="gd", lr=0.1, steps=4, loss="mse", wd=1e-3, generator=g, sharpness_every=2,
                   sharpness_method="eigh")
    assert list(h.sharp_at) == [0, 2, 4]
    objective = nets.make_objective(model, "mse", 1e-3)
    ev = np.linalg.eigvalsh(nets.full_hessian(objective, torch.from_numpy(h.thetas[4]), X, Y))
    assert h.sharpness[-1] == pytest.approx(ev[-1]) and h.lam_min[-1] == pytest.approx(ev[0])


# --- claims helpers -------------------------------------------------------------------------------------------
def test_claim5_refuses_an_untestable_window():
    run = experiments.EosRun(0.1, 0.0, 10, 5, np.arange(3), np.ones(3), np.ones(2), np.arange(1), np.ones(1),
                             np.ones(1), {"lambda_1": -0.01, "lambda_n": 19.0, "window width / eta": -0.1,
                                          "eta in window": False, "late mean c": -0.9})
    assert experiments.claim5(run)[0] is None
    run.final.update({"lambda_1": 0.001, "window width / eta": 0.0005})
    value, why = experiments.claim5(run)
    assert value is None and "too narrow" in why
    run.final.update({"lambda_1": 2.0, "window width / eta": 0.1, "eta in window": True})
    assert experiments.claim5(run)[0] == -0.9


def test_fc_claims_hold_on_a_short_run():
    fc = experiments.figure2(np.random.default_rng(0), 600)
    table = experiments.claim2(fc, experiments.figure6(fc))
    assert table["holds"].all(), table


# --- CIFAR-10 reader ------------------------------------------------------------------------------------------
def test_cifar_fixture_is_current(tmp_path):
    """The committed fixture holds what make_data writes (compared after unpickling: pickle bytes may differ between
    NumPy versions)."""
    write_fixture(tmp_path)
    names = sorted(f.name for f in tmp_path.iterdir())
    assert names == sorted(f.name for f in FIXTURE.iterdir())
    for name in names:
        new = pickle.loads((tmp_path / name).read_bytes(), encoding="bytes")
        old = pickle.loads((FIXTURE / name).read_bytes(), encoding="bytes")
        assert new.keys() == old.keys(), name
        for key in new:
            assert np.array_equal(np.asarray(new[key]), np.asarray(old[key])), (
                f"{name}: regenerate with python -m lib.gd_direction.make_data")


def test_cifar_reader_reads_the_fixture_and_its_parent():
    d = data.read_cifar10(FIXTURE)
    assert d.X.shape == (10, 3, 32, 32) and d.X.dtype == np.float32 and d.y.shape == (10,)
    np.testing.assert_allclose(d.X.mean(axis=(0, 2, 3)), 0.0, atol=1e-5)
    assert data.read_cifar10(FIXTURE.parent, n=4, rng=np.random.default_rng(0)).X.shape == (4, 3, 32, 32)
    assert paper.LOADERS["data_path"](FIXTURE).name == "cifar10"


def _copy_fixture(tmp_path):
    import shutil

    dst = tmp_path / "cifar-10-batches-py"
    shutil.copytree(FIXTURE, dst)
    return dst


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


@pytest.mark.parametrize("case, expect", [
    ("missing", "no 'test_batch'"),
    ("list", "not a dict"),
    ("no_labels", "no 'labels'"),
    ("bad_shape", "b'data' is an array of shape"),
    ("bad_labels", "outside 0..9"),
    ("few_labels", "entries"),
    ("evil", "never needs"),
    ("text", "not a pickle"),
    ("truncated", "damaged"),
    ("gzip", "gzip"),
])
def test_cifar_reader_refuses_malformed_folders_clearly(tmp_path, case, expect):
    import gzip

    folder = _copy_fixture(tmp_path)
    target = folder / "data_batch_3"
    good = pickle.loads(target.read_bytes(), encoding="bytes")
    payloads = {
        "list": [1, 2, 3],
        "no_labels": {b"data": good[b"data"]},
        "bad_shape": {b"data": good[b"data"][:, :100], b"labels": good[b"labels"]},
        "bad_labels": {b"data": good[b"data"], b"labels": [3, 12]},
        "few_labels": {b"data": good[b"data"], b"labels": [3]},
        "evil": _Evil(),
    }
    if case == "missing":
        (folder / "test_batch").unlink()
    elif case in payloads:
        target.write_bytes(pickle.dumps(payloads[case], protocol=2))
    elif case == "text":
        target.write_text("airplane 1 2 3\n")
    elif case == "truncated":
        target.write_bytes(target.read_bytes()[:4000])
    elif case == "gzip":
        target.write_bytes(gzip.compress(target.read_bytes()))
    with pytest.raises(UserFileError, match=expect) as err:
        data.read_cifar10(folder)
    assert "'data_path'" in str(err.value)


# --- config ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    ({"mu": 0.0}, "mu"), ({"n_starts": 0}, "n_starts"), ({"cnn_epochs": 1}, "cnn_epochs"),
    ({"gd_lr": -1.0}, "gd_lr"), ({"mlp_width": 0}, "mlp_width"), ({"mode": "slow"}, "mode"),
    ({"data_path": "/no/such/folder"}, "data_path"), ({"power_iters": -1}, "power_iters"),
])
def test_config_refuses_bad_parameters(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=name):
        paper.config(out_dir=str(tmp_path), verbose=False, **kwargs)


def test_config_takes_mode_sizes_and_the_fixture(tmp_path):
    q = paper.config(out_dir=str(tmp_path), verbose=False)
    f = paper.config(mode="full", out_dir=str(tmp_path), verbose=False, cnn_epochs=7)
    assert (q.cnn_epochs, q.gd_steps, q.mlp_samples, len(q.ratios)) == (15, 150, 64, 12)
    assert (f.cnn_epochs, f.cnn_seeds, f.mlp_samples) == (7, 3, 256)
    c = paper.config(out_dir=str(tmp_path), verbose=False, data_path="data/gd_direction/cifar-10-batches-py")
    assert paper.images(c).name == "cifar10"
