"""Unit tests of lib.newton_stepsizes: closed forms, finite differences, the duality identity, invariants."""
import bz2
import gzip
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
    A, b = P.read_libsvm(path)
    X, y = make_data.fixture_arrays()
    assert A.shape == (40, 6) and np.array_equal(A, X) and np.array_equal(b, y)
    again = make_data.write_fixture(tmp_path / "fixture.txt")
    assert again.read_bytes() == path.read_bytes()
    prob = P.libsvm_problem(path, mu=1e-2)
    assert prob.dim == 6 and np.isfinite(prob.f(np.zeros(6)))
    gz = tmp_path / "fixture.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert np.array_equal(P.read_libsvm(gz)[0], X)  # LIBSVM sets are often shared gzipped: read as is


@pytest.mark.parametrize("content, expect", [
    (b"", "the file is empty"),
    (bytes(range(256)) * 8, "binary"),
    (b"-1.5119208e-02,0.25,1\n1,2,3\n", "line 1: fields are separated by commas"),
    (b"+1 1:0.5 3:2\n-1 2:1 1:3\n", "line 2: field 3: feature index 1 is not above"),
    (b"+1 1:0.5\n-1 abc 2:1\n", "line 2: field 2 is 'abc'"),
    (b"+1 1:0.5\n-1 2:x\n", "line 2: field 2 has the value 'x'"),
    (b"1 1:2\n2 1:3\n3 2:1\n", "found 3 label value(s) (1, 2, 3)"),
    (b"1 1:2\n1 2:3\n", "found 1 label value(s)"),
    (b"+1 1:nan\n-1 1:2\n", "sample 1 holds a non-finite feature value"),
    (bz2.compress(b"+1 1:2\n-1 2:1\n"), "bzip2-compressed: decompress it first"),
])
def test_libsvm_reader_refuses_malformed_files_naming_data_path(tmp_path, content, expect):
    path = tmp_path / "user_file.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        P.read_libsvm(path)
    msg = str(err.value)
    assert msg.startswith("parameter 'data_path'") and str(path) in msg and expect in msg, msg
    assert "LIBSVM" in msg  # what the format is


def test_libsvm_problem_subsamples_rows_with_the_seed(tmp_path):
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(300, 4)), 3)
    y = np.where(X[:, 0] > 0, 1, -1)
    path = tmp_path / "big.svm"
    path.write_text("\n".join(make_data.to_libsvm_lines(X, y)) + "\n")
    a = P.libsvm_problem(path, n_rows=50, rng=np.random.default_rng(1))
    b = P.libsvm_problem(path, n_rows=50, rng=np.random.default_rng(1))
    c = P.libsvm_problem(path, n_rows=50, rng=np.random.default_rng(2))
    w = rng.normal(size=4)
    assert a.info["rows_used"] == 50 and a.info["rows_in_file"] == 300
    assert a.f(w) == b.f(w) and a.f(w) != c.f(w)
    full = P.libsvm_problem(path)
    assert full.info["rows_used"] == 300 and full.info["m"] == 300


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
    with pytest.raises(ValueError, match="n_rows"):
        config(n_rows=3, out_dir="/tmp/newton_stepsizes_test")
    with pytest.raises(ValueError, match="n_iters"):
        config(n_iters="abc", out_dir="/tmp/newton_stepsizes_test")
    assert config(mode="full", out_dir="/tmp/newton_stepsizes_test").n_rows is None


def _composed(prob, A):
    """g(y) = f(A y): value, gradient A^T grad f(Ay) and Hessian A^T H(Ay) A (batched versions too)."""
    return P.Problem(f"{prob.name} o A", A.shape[1], lambda y: prob.f(A @ y), lambda y: A.T @ prob.grad(A @ y),
                     lambda y: A.T @ prob.hess(A @ y) @ A, lambda Y: prob.f_many(Y @ A.T),
                     lambda Y: prob.grad_many(Y @ A.T) @ A, info={})


@pytest.mark.parametrize("method, opts", [("rn", {"q": 3.0, "M": 0.1}), ("rn", {"q": 4.0, "M": 1.0}),
                                          ("aicn", {"L": 1.0})])
def test_rn_and_aicn_are_affine_invariant(method, opts):
    """The iterates of f(Ax) map to those of f under A (the paper's motivation for local norms), to 1e-8."""
    rng = np.random.default_rng(7)
    prob = P.logistic(P.normalize_rows(rng.normal(size=(200, 6))), rng.integers(0, 2, size=200), mu=1e-3)
    A = rng.normal(size=(6, 6)) + 3 * np.eye(6)  # invertible, condition number ~10
    y0 = 3.0 * np.ones(6)
    hx = N.run(prob, A @ y0, method, 12, keep_iterates=True, **opts)
    hy = N.run(_composed(prob, A), y0, method, 12, keep_iterates=True, **opts)
    scale = np.abs(hx["xs"]).max()
    assert np.abs(hy["xs"] @ A.T - hx["xs"]).max() <= 1e-8 * scale
    assert np.allclose(hy["alpha"], hx["alpha"], rtol=1e-8)
    # the runs move (a standstill would be trivially invariant)
    assert np.linalg.norm(hx["xs"][-1] - hx["xs"][0]) > 0.1 * np.linalg.norm(hx["xs"][0])


def test_grn_is_not_affine_invariant():
    """The same check fails for GRN (its regulariser lambda I is Euclidean): the test above can tell."""
    rng = np.random.default_rng(7)
    prob = P.logistic(P.normalize_rows(rng.normal(size=(200, 6))), rng.integers(0, 2, size=200), mu=1e-3)
    A = rng.normal(size=(6, 6)) + 3 * np.eye(6)
    y0 = 3.0 * np.ones(6)
    hx = N.run(prob, A @ y0, "grn", 5, keep_iterates=True, L=1.0)
    hy = N.run(_composed(prob, A), y0, "grn", 5, keep_iterates=True, L=1.0)
    assert np.abs(hy["xs"] @ A.T - hx["xs"]).max() > 1e-3


def test_cholesky_path_matches_the_eigendecomposition():
    rng = np.random.default_rng(8)
    prob = P.logistic(rng.normal(size=(50, 5)), rng.integers(0, 2, size=50), mu=1e-3)
    H = prob.hess(rng.normal(size=5))
    ch, eig = N.factorize(prob, H), N.HessianEig(H)
    assert isinstance(ch, N.HessianChol)
    v, V = rng.normal(size=5), rng.normal(size=(4, 5))
    assert np.allclose(ch.solve(v), eig.solve(v)) and np.isclose(ch.dual_norm2(v), eig.dual_norm2(v))
    assert np.allclose(ch.dual_norm2(V), eig.dual_norm2(V)) and np.isclose(ch.local_norm2(v), eig.local_norm2(v))
    assert np.allclose(ch.shifted_solve(v, 0.3), eig.shifted_solve(v, 0.3))
    poly = P.polytope_feasibility(rng.uniform(-1, 1, size=(8, 5)), rng.uniform(-1, 1, size=8))
    assert isinstance(N.factorize(poly, poly.hess(rng.normal(size=5))), N.HessianEig)  # singular: pseudo-inverse


def test_logistic_value_is_stable_for_large_margins():
    A = np.array([[1.0, 0.0], [0.0, 1.0]])
    prob = P.logistic(A, np.array([1, -1]), mu=0.0)
    w = np.array([800.0, 800.0])  # z = +800 and -800
    assert prob.f(w) == pytest.approx(np.mean(np.logaddexp(0.0, -np.array([800.0, -800.0]))))
    assert np.isfinite(prob.f_many(np.stack([w, -w]))).all()


def test_runs_stop_at_the_target_and_report_why():
    A, b = P.breast_cancer_data()
    prob = P.logistic(A, b, 1e-3)
    x0 = 3.0 * np.ones(30)
    f_star = E.reference_f_star(prob, x0)
    h = N.run(prob, x0, "rn", 100, q=3.0, M=0.1, f_stop=E.f_stop(f_star))
    assert h["stop"] == "target" and len(h["f"]) < 30 and h["f"][-1] <= E.f_stop(f_star)
    assert len(h["alpha"]) == len(h["f"]) - 1
    capped = N.run(prob, x0, "gm", 10)
    assert capped["stop"] == "budget" and len(capped["f"]) == 11


def test_a_capped_run_is_not_converged_and_fails_its_comparisons():
    """GM stopped by its cap must never be scored with the cap as its iteration count (the 0.1 x 100 = 10 case)."""
    def fake(gaps, stop):
        f = np.asarray(gaps, dtype=float)
        return {"f": f, "stop": stop, "n_f": np.arange(1, len(f)), "n_g": np.arange(1, len(f))}

    rs = E.RunSet("toy", "3·1", 0.0)
    fast = [1.0] + [10.0 ** -(2 * k) for k in range(1, 8)]  # reaches 1e-8 at k = 4
    for lab in ("RN q=3", "AICN", "GRN"):
        rs.runs[lab] = fake(fast, "target")
    rs.runs["GM"] = fake(np.geomspace(1.0, 1e-5, 101), "budget")  # 100 iterations, never at 1e-8
    rs.budgets["GM"] = 100
    rs.tuned = {k: k for k in ("RN q=3", "AICN", "GRN", "GM")}
    worst, comp = E.claim1(rs)
    assert math.isinf(worst) and not comp.loc["max(RN, AICN) <= 0.1 GM", "holds"]
    assert comp.loc["max(RN, AICN) <= 0.1 GM", "right"] == "not converged"
    assert comp.loc["RN <= 1.5 AICN + 2", "holds"] and comp.loc["RN <= 1.2 GRN", "holds"]
    assert rs.status("GM").startswith("not converged (cap of 100")
    rs.runs["GM"] = fake(np.geomspace(1.0, 1e-9, 101), "target")  # now it converges, at k = 89
    comp = E.claim1(rs)[1]
    assert comp.loc["max(RN, AICN) <= 0.1 GM", "ratio"] == pytest.approx(4 / (0.1 * 89))
    assert comp.loc["max(RN, AICN) <= 0.1 GM", "holds"]


def test_pruned_tuning_finds_the_same_value_as_full_runs():
    A, b = P.breast_cancer_data()
    prob = P.logistic(A, b, 1e-3)
    x0 = 3.0 * np.ones(30)
    f_star = E.reference_f_star(prob, x0)
    specs = [(f"RN (M={c:g})", "rn", {"q": 3.0, "M": c}) for c in E.GRID]
    rs = E.RunSet("bc", "3·1", f_star)
    best = E.tune(rs, prob, x0, 100, specs)
    full = E.RunSet("bc", "3·1", f_star)
    for lab, m, kw in specs:
        full.add(lab, prob, x0, m, 100, **kw)
    assert best == E._pick_best(full, [lab for lab, _, _ in specs])
    assert rs.iters_to(best) == full.iters_to(best) and math.isfinite(rs.iters_to(best))
    assert rs.pruned and all(not math.isfinite(rs.iters_to(lab)) for lab in rs.pruned)


def test_claim2_compares_the_rules_at_the_same_points(quad):
    prob, x0 = quad
    rs = E.linesearch(prob, x0, "x0", 5, float(prob.f(np.linalg.solve(prob.hess(x0), -prob.grad(np.zeros(8))))), 60)
    worst, comp = E.claim2([rs])
    assert worst == pytest.approx(0.0, abs=1e-3)  # on a quadratic both rules take alpha = 1 at every point
    assert len(rs.runs["GRLS"]["alpha_gn_same_point"]) == len(rs.runs["GRLS"]["alpha"])
