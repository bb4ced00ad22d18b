"""Unit tests of lib.csbo_chebyshev: bases against numpy.polynomial, the monomial Gram matrix against its moments,
the traffic problem's derivatives and y* against finite differences and scipy, the reduced solution in closed
cases, StocBiO's lanes, torch HVPs against finite differences, and the IDX reader on good and malformed files."""
import gzip

import numpy as np
import pytest
from numpy.polynomial import chebyshev as C

from lib.csbo_chebyshev import bases, config
from lib.csbo_chebyshev.data import read_idx, read_mnist
from lib.common.mnist import idx_bytes
from lib.csbo_chebyshev.make_data import write_fixture
from lib.csbo_chebyshev.sta import ObsTable, TwoLinkSTA, reduced_solution
from lib.csbo_chebyshev.stocbio import Lane, Streams, run_lanes


def test_chebyshev_features_match_chebvander_and_recurrence():
    xi = np.linspace(-1, 1, 37)
    P = bases.features("cheb", 7, xi)
    assert np.allclose(P, C.chebvander(xi, 6))
    assert np.allclose(P[:, 3], 2 * xi * P[:, 2] - P[:, 1])
    assert np.allclose(P[:, 5], np.cos(5 * np.arccos(xi)))


def test_fourier_onehot_mono_features():
    xi = np.array([-1.0, -0.3, 0.0, 0.49, 1.0])
    F = bases.features("fourier", 5, xi)
    assert np.allclose(F[:, 0], 1) and np.allclose(F[:, 1], np.cos(np.pi * xi))
    assert np.allclose(F[:, 2], np.sin(np.pi * xi)) and np.allclose(F[:, 4], np.sin(2 * np.pi * xi))
    H = bases.features("onehot", 4, xi)
    assert np.allclose(H.sum(1), 1) and list(H.argmax(1)) == [0, 1, 2, 2, 3]
    M = bases.features("mono", 4, xi)
    assert np.allclose(M, xi[:, None] ** np.arange(4))
    with pytest.raises(ValueError, match="basis kind"):
        bases.features("legendre", 3, xi)


def test_monomial_gram_matches_moments_and_quadrature():
    G = bases.gram("mono", 6)
    assert G[0, 0] == 1 and np.isclose(G[1, 1], 1 / 3) and G[0, 1] == 0 and np.isclose(G[2, 4], 1 / 7)
    nodes, w = bases.quadrature("cheb", 1, 50)
    P = bases.features("mono", 6, nodes)
    assert np.allclose((P * w[:, None]).T @ P, G, atol=1e-14)


def test_lambda_min_monomial_accurate_route_agrees_with_eigensolver():
    for N in (2, 4, 6, 8):
        assert np.isclose(bases.lambda_min("mono", N), np.linalg.eigvalsh(bases.gram("mono", N))[0], rtol=1e-6)
    # the Hilbert-type decay: far below machine epsilon and still positive, decreasing
    lam = [bases.lambda_min("mono", N) for N in (16, 18, 20)]
    assert 0 < lam[2] < lam[1] < lam[0] < 1e-9


def test_one_hot_and_fourier_gram_closed_forms():
    assert np.allclose(bases.gram("onehot", 5), np.eye(5) / 5)
    G = bases.gram("fourier", 5)
    assert np.allclose(G, np.diag([1, 0.5, 0.5, 0.5, 0.5]), atol=1e-12)


@pytest.fixture(scope="module")
def sta():
    return TwoLinkSTA(noise=0.01)


def test_sta_derivatives_against_finite_differences(sta):
    x, y, xi, h = 0.1, np.array([0.7, 1.3, 2.1]), np.array([-0.5, 0.0, 0.8]), 1e-6
    assert np.allclose((sta.g(x, y + h, xi) - sta.g(x, y - h, xi)) / (2 * h), sta.g_y(x, y, xi), atol=1e-7)
    assert np.allclose((sta.g_y(x, y + h, xi) - sta.g_y(x, y - h, xi)) / (2 * h), sta.g_yy(x, y, xi), atol=1e-6)
    assert np.allclose((sta.g_y(x + h, y, xi) - sta.g_y(x - h, y, xi)) / (2 * h), sta.g_xy(x, y, xi), atol=1e-6)


def test_ystar_against_brentq_and_implicit_derivative(sta):
    from scipy.optimize import brentq

    for x, xi in ((0.0, -0.7), (-0.6, 0.3), (0.9, 1.0)):  # x = 0.9: the root lies beyond q (negative link-2 flow)
        y = sta.ystar(x, xi)
        ref = brentq(lambda v: sta.g_y(x, v, xi), 0.0, 10.0, xtol=1e-14)
        assert abs(float(y) - ref) < 1e-10
        h = 1e-6
        fd = (sta.ystar(x + h, xi) - sta.ystar(x - h, xi)) / (2 * h)
        assert np.isclose(sta.ystar_x(x, xi), fd, rtol=1e-5)
    assert sta.link2_positive(0.0) and not sta.link2_positive(0.9)


def test_exact_gap_and_hypergradient(sta):
    ref = sta.reference()
    assert ref.gap(0.0) < 1e-28 and ref.gap(-0.5) > 0.05
    h = 1e-6
    for x in (-0.5, 0.2):
        assert np.isclose(ref.hypergrad(x), (ref.gap(x + h) - ref.gap(x - h)) / (2 * h), rtol=1e-6)


def test_obs_table_interpolates_ystar(sta):
    xi = np.random.default_rng(0).uniform(-1, 1, 50)
    assert np.max(np.abs(ObsTable(sta)(xi) - sta.ystar(0.0, xi))) < 1e-10


def test_reduced_solution_one_basis_and_convergence(sta):
    # N = 1 (a constant) is identical for every basis; span errors fall as the basis grows
    r1 = [reduced_solution(sta, -0.3, k, 1) for k in bases.KINDS]
    assert np.allclose([r["hypergrad"] for r in r1], r1[0]["hypergrad"])
    assert reduced_solution(sta, -0.3, "cheb", 12)["hg_err"] < 1e-10
    r = reduced_solution(sta, -0.3, "cheb", 4)
    h = 1e-5
    Fp = reduced_solution(sta, -0.3 + h, "cheb", 4)
    Fm = reduced_solution(sta, -0.3 - h, "cheb", 4)
    # grad F_Phi against a finite difference of F_Phi(x) = E[(W*(x) Phi - ybar)^2] / 2 on the same rule
    nodes, w = bases.quadrature("cheb", 4)
    P = bases.features("cheb", 4, nodes)
    ybar = sta.ystar(0.0, nodes)
    F = lambda rr: 0.5 * (((P @ rr["W"]) - ybar) ** 2 * w).sum()  # noqa: E731
    assert np.isclose(r["hypergrad"], (F(Fp) - F(Fm)) / (2 * h), rtol=1e-5)


def test_stocbio_lanes_common_random_numbers_and_padding(sta):
    table = ObsTable(sta)
    s = Streams.draw(sta, table, 5, 3, 3, 16, np.random.default_rng(1))
    alone = run_lanes(sta, [Lane("cheb", 3, 0.5)], [s], x0=-0.5)
    mixed = run_lanes(sta, [Lane("cheb", 3, 0.5), Lane("mono", 6, 0.5), Lane("onehot", 30, 0.5)], [s], x0=-0.5)
    assert np.allclose(alone.x[0], mixed.x[0], atol=1e-12)  # zero-padding to N = 6 changes nothing
    assert mixed.samples[-1] == 5 * (3 + 3 + 2) * 16
    again = run_lanes(sta, [Lane("cheb", 3, 0.5)], [s], x0=-0.5)
    assert np.array_equal(alone.x, again.x)
    av = alone.averaged()
    assert np.isclose(av[0, 4], alone.x[0, 2:5].mean())


def test_stocbio_converges_on_task_a(sta):
    ref, table = sta.reference(), ObsTable(sta)
    s = Streams.draw(sta, table, 60, 10, 10, 32, np.random.default_rng(3))
    h = run_lanes(sta, [Lane("cheb", 5, 0.5)], [s], x0=-np.log(2))
    assert ref.gap(h.averaged()[0, -1]) < 1e-4 * ref.gap(-np.log(2))


def test_torch_hvp_and_gradients_against_finite_differences():
    import torch

    from lib.csbo_chebyshev.data import make_hpo_data
    from lib.csbo_chebyshev.hpo import HPOLane, LaneProblem

    d = make_hpo_data(np.random.default_rng(0), n_train=40, n_val=20, n_test=20)
    prob = LaneProblem([d], [HPOLane("cheb", 3, 1.0)], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    xi = np.array([0.6, 1.7])
    P = prob.phi(xi)
    W = (0.1 * torch.randn((1, 3, prob.d, 10), generator=g, dtype=torch.float64)).requires_grad_(True)
    x = torch.randn((1, prob.n), generator=g, dtype=torch.float64).requires_grad_(True)
    V = torch.randn(W.shape, generator=g, dtype=torch.float64)
    (gw,) = torch.autograd.grad(prob.lower(x, W, P, xi), W, create_graph=True)
    (hvp,) = torch.autograd.grad((gw * V).sum(), W, retain_graph=True)
    eps = 1e-6
    with torch.no_grad():
        fd = (prob.lower(x, W + eps * V, P, xi) - prob.lower(x, W - eps * V, P, xi)) / (2 * eps)
    assert torch.isclose((gw * V).sum(), fd, rtol=1e-6)
    Wp, Wm = (W + eps * V).detach().requires_grad_(True), (W - eps * V).detach().requires_grad_(True)
    (gp,) = torch.autograd.grad(prob.lower(x, Wp, P, xi), Wp)
    (gm,) = torch.autograd.grad(prob.lower(x, Wm, P, xi), Wm)
    assert torch.allclose(hvp, (gp - gm) / (2 * eps), atol=1e-7)
    # the curvature bound really bounds the Hessian along V
    assert float((hvp * V).sum() / (V * V).sum()) <= float(prob.curvature(x.detach(), P, xi)[0]) + 1e-9
    # the cross derivative d/dx <grad_W g, V> against a finite difference in x
    (cross,) = torch.autograd.grad((gw * V).sum(), x)
    e = torch.zeros_like(x)
    e[0, 3] = 1.0
    xp, xm = (x + eps * e).detach(), (x - eps * e).detach()
    Wd = W.detach().requires_grad_(True)
    (gp,) = torch.autograd.grad(prob.lower(xp, Wd, P, xi), Wd)
    (gm,) = torch.autograd.grad(prob.lower(xm, Wd, P, xi), Wd)
    assert torch.isclose(cross[0, 3], ((gp - gm) * V).sum() / (2 * eps), rtol=1e-5, atol=1e-10)


def test_corrupted_digits_split():
    from lib.csbo_chebyshev.data import make_hpo_data

    d = make_hpo_data(np.random.default_rng(5))
    assert d.A_train.shape == (1000, 65) and d.A_val.shape == (400, 65) and d.A_test.shape == (397, 65)
    assert d.corrupted.sum() == 300 and np.allclose(d.A_train[:, -1], 1)
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    # a corrupted label always differs from the true one: recover the true labels by matching rows
    lookup = {tuple(r): t for r, t in zip(X / 16.0, y)}
    true = np.array([lookup[tuple(r)] for r in d.A_train[:, :-1]])
    assert np.all((true != d.b_train) == d.corrupted)


def test_idx_reader_roundtrip_gzip_and_fixture(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    (tmp_path / "a").write_bytes(idx_bytes(arr))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(arr)))
    assert np.array_equal(read_idx(tmp_path / "a"), arr) and np.array_equal(read_idx(tmp_path / "a.gz"), arr)
    m = read_mnist("data/csbo_chebyshev/mnist")
    assert m["train_images"].shape == (12, 28, 28) and m["test_labels"].shape == (6,)
    fresh = tmp_path / "fresh"
    digests = write_fixture(fresh)  # the committed fixture regenerates byte for byte
    from lib.common import data_dir

    for name in digests:
        assert (fresh / name).read_bytes() == (data_dir("csbo_chebyshev") / "mnist" / name).read_bytes()


def test_config_validates_parameters(tmp_path):
    with pytest.raises(ValueError, match="obs_noise"):
        config(obs_noise=-1.0, verbose=False, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="T_a"):
        config(T_a=3, verbose=False, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="data_path"):
        config(data_path=str(tmp_path / "nope"), verbose=False, out_dir=str(tmp_path))
    cfg = config(verbose=False, out_dir=str(tmp_path), data_path="data/csbo_chebyshev/mnist")
    assert cfg.T_a == 200 and cfg.data_path.endswith("mnist")
