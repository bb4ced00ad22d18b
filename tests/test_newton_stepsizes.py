"""Unit tests of lib.newton_stepsizes: closed forms, finite differences, the duality identity, invariants."""
import math

import numpy as np
import pytest

from lib.newton_stepsizes import config
from lib.newton_stepsizes import experiments as E
from lib.newton_stepsizes import make_data
from lib.newton_stepsizes import newton as N
from lib.newton_stepsizes import problems as P


def _spd(d, rng, cond=50.0):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (Q * np.geomspace(1.0, cond, d)) @ Q.T


@pytest.fixture(scope="module")
def quad():
    rng = np.random.default_rng(0)
    Q = _spd(8, rng)
    return P.quadratic(Q, rng.normal(size=8)), rng.normal(size=8) * 3


def _fd_grad(f, x, h=1e-6):
    e = np.eye(len(x))
    return np.array([(f(x + h * e[i]) - f(x - h * e[i])) / (2 * h) for i in range(len(x))])


def _fd_hess(grad, x, h=1e-6):
    e = np.eye(len(x))
    H = np.array([(grad(x + h * e[i]) - grad(x - h * e[i])) / (2 * h) for i in range(len(x))])
    return 0.5 * (H + H.T)


@pytest.mark.parametrize("name", ["logistic", "polytope", "rosenbrock"])
def test_gradient_and_hessian_match_finite_differences(name):
    rng = np.random.default_rng(1)
    if name == "logistic":
        prob = P.logistic(rng.normal(size=(30, 5)), rng.integers(0, 2, size=30), mu=1e-2)
        x = rng.normal(size=5)
    elif name == "polytope":
        prob = P.polytope_feasibility(rng.uniform(-1, 1, size=(12, 5)), rng.uniform(-1, 1, size=12), p=3)
        x = rng.normal(size=5)
    else:
        prob = P.rosenbrock(6)
        x = rng.normal(size=6)
    g = prob.grad(x)
    assert np.allclose(g, _fd_grad(prob.f, x), rtol=1e-5, atol=1e-6 * max(1, np.abs(g).max()))
    H = prob.hess(x)
    assert np.allclose(H, _fd_hess(prob.grad, x), rtol=1e-5, atol=1e-5 * max(1, np.abs(H).max()))
    X = np.stack([x, 2 * x, -x])
    assert np.allclose(prob.f_many(X), [prob.f(r) for r in X])
    assert np.allclose(prob.grad_many(X), [prob.grad(r) for r in X])


def test_rosenbrock_minimum_and_breast_cancer_shape():
    r = P.rosenbrock(40)
    assert r.f(np.ones(40)) == 0.0 and not np.any(r.grad(np.ones(40)))
    A, b = P.breast_cancer_data()
    assert A.shape == (569, 30) and set(np.unique(b)) == {-1.0, 1.0}
    assert np.allclose(np.linalg.norm(A, axis=1), 1.0)


def test_closed_form_stepsizes():
    # q = 2: constant step 1/(1 + 9M); q = 3: 1/(1 + 3 sqrt(M g))
    assert N.rn_step(5.0, 2.0, 0.3) == pytest.approx(1 / (1 + 2.7))
    assert N.rn_step(0.7, 3.0, 0.2) == pytest.approx(1 / (1 + 3 * math.sqrt(0.2 * 0.7)))
    L, g = 2.0, 0.3
    assert N.aicn_step(g, L) == pytest.approx((math.sqrt(1 + 2 * L * g) - 1) / (L * g))
    assert N.aicn_step(1e-15, 1.0) == 1.0
    with pytest.raises(ValueError):
        N.rn_step(1.0, 5.0, 1.0)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_regularized_stepsize_root_and_monotonicity(beta):
    g_grid, s_grid = np.logspace(-2, 2, 9), np.logspace(-2, 2, 9)
    A = np.array([[N.regularized_stepsize(g, s, beta) for g in g_grid] for s in s_grid])
    assert np.all((A > 0) & (A <= 1))
    assert np.all(np.diff(A, axis=0) < 0) and np.all(np.diff(A, axis=1) < 0)
    for s in s_grid:
        for g in g_grid:
            a = N.regularized_stepsize(g, s, beta)
            assert abs(1 - a - s * g**beta * a ** (1 + beta)) < 1e-12
            # RN's closed form is the conservative approximation of the same root
            assert N.rn_as_regularization(g, s, beta) <= a + 1e-15


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_duality_model_minimiser_is_on_newton_ray(beta):
    """The minimiser of the (2+beta)-regularised local model, found over all of R^d from a random start,
    equals x - alpha n with alpha the root of P[alpha] = 0."""
    rng = np.random.default_rng(2)
    prob = P.logistic(rng.normal(size=(40, 6)), rng.integers(0, 2, size=40), mu=1e-2)
    for sigma in (0.05, 1.0, 20.0):
        x = rng.normal(size=6)
        gx = prob.grad(x)
        n = np.linalg.solve(prob.hess(x), gx)
        g = math.sqrt(gx @ n)
        y = N.regularized_model_argmin(x, prob, sigma, beta, h0=rng.normal(size=6))
        alpha = N.regularized_stepsize(g, sigma, beta)
        assert np.linalg.norm((y - x) + alpha * n) <= 1e-6 * np.linalg.norm(alpha * n)


def test_newton_direction_is_pseudo_inverse_on_singular_hessian():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(6, 3))
    H = B @ B.T  # rank 3
    g = rng.normal(size=6)
    n, solve = N.newton_direction(H, g)
    assert np.allclose(n, np.linalg.pinv(H, rcond=1e-10) @ g)
    v = rng.normal(size=6)
    assert np.allclose(solve(v), np.linalg.pinv(H, rcond=1e-10) @ v)
    eig = N.HessianEig(H)
    assert eig.dual_norm2(g) == pytest.approx(g @ np.linalg.pinv(H) @ g)
    assert np.allclose(eig.dual_norm2(np.stack([g, v])), [eig.dual_norm2(g), eig.dual_norm2(v)])
    assert np.allclose(eig.shifted_solve(g, 0.5), np.linalg.solve(H + 0.5 * np.eye(6), g))


def test_grls_and_greedy_newton_agree_on_quadratic(quad):
    prob, x0 = quad
    x_star = np.linalg.solve(prob.hess(x0), -prob.grad(np.zeros(8)))
    a_gn, a_grls = N.linesearch_stepsizes(prob, x0, grid_points=60)
    assert a_gn == pytest.approx(1.0, abs=1e-3) and a_grls == pytest.approx(1.0, abs=1e-3)
    for m in ("gn", "grls"):
        h = N.run(prob, x0, m, 1)
        assert np.allclose(h["x"], x_star, atol=1e-3 * np.linalg.norm(x0 - x_star))


def test_grls_and_greedy_newton_agree_on_logistic_steps():
    """Away from quadratics the two rules give different but close stepsizes on a mildly nonlinear problem."""
    A, b = P.breast_cancer_data()
    prob = P.logistic(A, b, 1e-3)
    a_gn, a_grls = N.linesearch_stepsizes(prob, 3.0 * np.ones(30), grid_points=60)
    assert 0 < a_gn < 1 and abs(math.log(a_grls / a_gn)) < math.log(1.5)


@pytest.mark.parametrize("method", N.METHODS)
def test_every_method_decreases_f_on_strongly_convex_quadratic(quad, method):
    prob, x0 = quad
    Q, c = prob.hess(x0), -prob.grad(np.zeros(8))
    f_star = -0.5 * c @ np.linalg.solve(Q, c)
    h = N.run(prob, x0, method, 8)
    f = h["f"]
    assert f[-1] - f_star <= 0.9 * (f[0] - f_star)  # real progress
    assert E.is_monotone(f, rtol=1e-10)  # and every step decreases f


def test_un_backtracking_count_identity():
    """sigma_{k+1} = sigma_k c^{j_k - 1} implies N_K = 2K + log_c(sigma_K / sigma_0) (Lemma 3's count)."""
    A, b = P.breast_cancer_data()
    prob = P.logistic(A, b, 1e-3)
    h = N.run(prob, 5.0 * np.ones(30), "un", 12, beta=1.0, c=2.0, sigma0=1.0)
    K = len(h["backtracks"])
    assert h["backtracks"].sum() == pytest.approx(2 * K + math.log2(h["sigma"][-1] / 1.0))


def test_unknown_method_and_option_raise(quad):
    prob, x0 = quad
    with pytest.raises(ValueError, match="method"):
        N.run(prob, x0, "newtonish", 2)
    with pytest.raises(ValueError, match="unknown option"):
        N.run(prob, x0, "rn", 2, L=1.0)


def test_polytope_feasibility_check():
    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    feas = P.polytope_feasibility(A, np.array([1.0, 1.0]), 3)
    feas.info.update(A=A, b=np.array([1.0, 1.0]))
    assert E.polytope_is_feasible(feas) and E.reference_f_star(feas, np.ones(2)) == 0.0
    A2 = np.array([[1.0], [-1.0]])
    infeas = P.polytope_feasibility(A2, np.array([-1.0, -1.0]), 3)  # x <= -1 and x >= 1
    infeas.info.update(A=A2, b=np.array([-1.0, -1.0]))
    assert not E.polytope_is_feasible(infeas)
    assert E.reference_f_star(infeas, np.array([3.0])) == pytest.approx(2.0, rel=1e-8)  # at x = 0: 1 + 1


def test_libsvm_fixture_loads_and_regenerates(tmp_path):
    path = make_data.data_dir("newton_stepsizes") / make_data.FIXTURE_NAME
    A, b = P.load_libsvm(path)
    X, y = make_data.fixture_arrays()
    assert A.shape == (40, 6) and np.array_equal(A, X) and np.array_equal(b, y)
    again = make_data.write_fixture(tmp_path / "fixture.txt")
    assert again.read_bytes() == path.read_bytes()
    prob = P.libsvm_problem(path, mu=1e-2)
    assert prob.dim == 6 and np.isfinite(prob.f(np.zeros(6)))


def test_config_validates_parameters():
    cfg = config(seed=1, n_iters=20, out_dir="/tmp/newton_stepsizes_test")
    assert cfg.n_iters == 20 and cfg.grid_points == 60 and cfg.synthetic is False
    with pytest.raises(ValueError, match="n_iters"):
        config(n_iters=3, out_dir="/tmp/newton_stepsizes_test")
    with pytest.raises(ValueError, match="mu"):
        config(mu=-1.0, out_dir="/tmp/newton_stepsizes_test")
    with pytest.raises(ValueError, match="data_path"):
        config(data_path="/no/such/file.svm", out_dir="/tmp/newton_stepsizes_test")
    with pytest.raises(ValueError, match="mode"):
        config(mode="fast", out_dir="/tmp/newton_stepsizes_test")
