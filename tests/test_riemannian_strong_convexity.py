"""Unit tests of lib.riemannian_strong_convexity: Lorentz primitives against geoopt, sphere primitives against their
defining identities, parallel transport, Riemannian Hessians against finite differences of the gradient along
geodesics, the ball projection against brute force, the LMO against brute force and a closed form, RFW's invariants,
the RSI ratio of a Euclidean ball (exactly 1/(2R) on its boundary), the fits, parameter checks and a tiny end-to-end
run of every experiment."""
import contextlib
import io

import numpy as np
import pytest

import lib.riemannian_strong_convexity as paper
from lib.riemannian_strong_convexity import experiments as E
from lib.riemannian_strong_convexity import theory as T
from lib.riemannian_strong_convexity.manifolds import Euclidean, Lorentz, Sphere
from lib.riemannian_strong_convexity.problems import Quadratic, SquaredDistance
from lib.riemannian_strong_convexity.rfw import exact_step, projected_gradient, rfw
from lib.riemannian_strong_convexity.sets import GeodesicBall


def _lorentz_point(H, rng, scale=1.0):
    v = H.random_tangent(H.origin(), rng, scale=scale)
    return H.exp(H.origin(), v)


# ------------------------------------------------------------------------------------------------ manifolds
def test_lorentz_primitives_match_geoopt():
    torch = pytest.importorskip("torch")
    geoopt = pytest.importorskip("geoopt")
    rng = np.random.default_rng(0)
    H, G = Lorentz(6), geoopt.Lorentz(k=1.0)
    for _ in range(5):
        x, y = _lorentz_point(H, rng, 0.7), _lorentz_point(H, rng, 0.7)
        v = H.random_tangent(x, rng)
        tx, ty, tv = (torch.tensor(a, dtype=torch.float64) for a in (x, y, v))
        assert np.allclose(H.exp(x, v), G.expmap(tx, tv).numpy(), atol=1e-10)
        assert np.allclose(H.log(x, y), G.logmap(tx, ty).numpy(), atol=1e-9)
        assert H.dist(x, y) == pytest.approx(float(G.dist(tx, ty)), abs=1e-9)
        assert H.inner(v, v) == pytest.approx(float(G.inner(tx, tv, tv)), rel=1e-12)
        assert np.allclose(H.proj(x, y), G.proju(tx, ty).numpy(), atol=1e-10)
        eg = rng.standard_normal(6)
        assert np.allclose(H.egrad2rgrad(x, eg), G.egrad2rgrad(tx, torch.tensor(eg)).numpy(), atol=1e-10)


def test_sphere_primitives_and_geoopt_sphere():
    torch = pytest.importorskip("torch")
    geoopt = pytest.importorskip("geoopt")
    rng = np.random.default_rng(1)
    S, G = Sphere(7), geoopt.Sphere()
    x, y = S.random_point(rng), S.random_point(rng)
    assert np.allclose(S.exp(x, S.log(x, y)), y, atol=1e-12)
    assert S.norm(S.log(x, y)) == pytest.approx(float(np.arccos(x @ y)), abs=1e-12)
    v = S.random_tangent(x, rng)
    tx, tv = torch.tensor(x), torch.tensor(v)
    assert np.allclose(S.exp(x, v), G.expmap(tx, tv).numpy(), atol=1e-10)
    assert np.allclose(S.proj(x, v * 3 + x), G.proju(tx, tv * 3 + tx).numpy(), atol=1e-12)


@pytest.mark.parametrize("cls", [Sphere, Lorentz])
def test_parallel_transport_preserves_inner_products_and_tangency(cls):
    rng = np.random.default_rng(2)
    M = cls(8)
    x, y = (M.random_point(rng), M.random_point(rng)) if cls is Sphere else (_lorentz_point(M, rng),
                                                                           _lorentz_point(M, rng))
    u, v = M.random_tangent(x, rng), M.random_tangent(x, rng)
    pu, pv = M.transp(x, y, u), M.transp(x, y, v)
    assert M.inner(y, pu) == pytest.approx(0.0, abs=1e-10)
    assert M.inner(pu, pv) == pytest.approx(M.inner(u, v), rel=1e-9)
    # transporting the geodesic's velocity gives minus the log back from y
    assert np.allclose(M.transp(x, y, M.log(x, y)), -M.log(y, x), atol=1e-9)
    # and transport is not the identity (the test could fail on a wrong formula)
    assert not np.allclose(pu, u)


def _fd_hessian(prob, x, v, h=1e-5):
    M = prob.M
    gp = M.transp(M.exp(x, h * v), x, prob.rgrad(M.exp(x, h * v)))
    gm = M.transp(M.exp(x, -h * v), x, prob.rgrad(M.exp(x, -h * v)))
    return (gp - gm) / (2 * h)


def test_sphere_hessian_matches_finite_differences_and_norm():
    rng = np.random.default_rng(3)
    S = Sphere(9)
    for m in (5, 12):
        A = rng.standard_normal((m, 9)) / np.sqrt(m)
        prob = Quadratic(S, A, S.random_point(rng))
        x, v = S.random_point(rng), None
        v = S.random_tangent(x, rng)
        assert np.allclose(prob.rhess(x, v), _fd_hessian(prob, x, v), atol=1e-7)
        # operator norm on T_x against an explicit tangent basis
        Q = np.linalg.qr(np.column_stack([x, rng.standard_normal((9, 8))]))[0][:, 1:]
        H = np.column_stack([Q.T @ prob.rhess(x, Q[:, j]) for j in range(8)])
        assert prob.hess_norm(x) == pytest.approx(np.max(np.abs(np.linalg.eigvalsh((H + H.T) / 2))), rel=1e-9)
        # the gradient against finite differences of f along geodesics
        h = 1e-6
        fd = (prob.f(S.exp(x, h * v)) - prob.f(S.exp(x, -h * v))) / (2 * h)
        assert fd == pytest.approx(S.inner(prob.rgrad(x), v), rel=1e-6, abs=1e-9)


def test_hyperbolic_hessian_matches_finite_differences():
    rng = np.random.default_rng(4)
    H = Lorentz(6)
    prob = SquaredDistance(H, _lorentz_point(H, rng))
    x = _lorentz_point(H, rng)
    v = H.random_tangent(x, rng)
    assert np.allclose(prob.rhess(x, v), _fd_hessian(prob, x, v), atol=1e-6)
    d = H.dist(x, prob.xstar)
    assert prob.hess_norm(x) == pytest.approx(d / np.tanh(d))


# ------------------------------------------------------------------------------------------------ sets
@pytest.mark.parametrize("cls", [Sphere, Lorentz])
def test_projection_is_the_nearest_point_of_the_ball(cls):
    rng = np.random.default_rng(5)
    M = cls(4)
    c = np.zeros(4)
    c[0] = 1.0
    ball = GeodesicBall(M, c, 0.7)
    inside = ball.random_points(rng, 20000)
    for _ in range(3):
        y = M.exp(c, 1.3 * (lambda v: v / M.norm(v))(M.random_tangent(c, rng)))
        p = ball.project(y)
        assert ball.dist_to_center(p) == pytest.approx(0.7)
        assert M.dist(y, p) <= M.dist(y, inside).min() + 1e-12
    z = inside[0]
    assert np.allclose(ball.project(z), z)


@pytest.mark.parametrize("cls", [Sphere, Lorentz])
def test_lmo_beats_brute_force_on_the_boundary(cls):
    rng = np.random.default_rng(6)
    M = cls(3)  # in 3 ambient dimensions the boundary is a circle: brute force is exhaustive
    c = np.zeros(3)
    c[0] = 1.0
    ball = GeodesicBall(M, c, 0.9)
    phi = np.linspace(0, 2 * np.pi, 200001)
    B = np.stack([np.zeros_like(phi), np.cos(phi), np.sin(phi)], axis=1)
    Z = M.exp(np.broadcast_to(c, B.shape), 0.9 * B)
    X = ball.random_points(rng, 6, boundary_frac=0.5)
    for x in X:
        g = M.random_tangent(x, rng)
        o = ball.lmo(x, g)
        brute = M.inner(g, M.log(np.broadcast_to(x, Z.shape), Z)).min()
        assert o.value == pytest.approx(brute, abs=1e-9)
        assert o.value <= brute + 1e-12
        assert ball.dist_to_center(o.v) == pytest.approx(0.9)


def test_lmo_batch_agrees_with_single_and_handles_the_centre():
    rng = np.random.default_rng(7)
    S = Sphere(12)
    ball = GeodesicBall(S, S.random_point(rng), 1.0)
    X = ball.random_points(rng, 30, boundary_frac=0.3)
    G = S.random_tangent(X, rng)
    ob = ball.lmo_batch(X, G)
    single = np.array([ball.lmo(x, g).value for x, g in zip(X, G)])
    assert np.allclose(ob.value, single, atol=1e-10)
    # at the centre the span is 2-D: the answer is the boundary point in the direction -g
    g = S.random_tangent(ball.c, rng)
    o = ball.lmo(ball.c, g)
    assert np.allclose(o.v, S.exp(ball.c, -1.0 * g / S.norm(g)), atol=1e-8)


def test_euclidean_lmo_closed_form_and_rsi_constant():
    rng = np.random.default_rng(8)
    E_ = Euclidean(5)
    ball = GeodesicBall(E_, np.zeros(5), 2.0)
    x, g = ball.random_points(rng, 1)[0], rng.standard_normal(5)
    o = ball.lmo(x, g)
    assert np.allclose(o.v, -2.0 * g / np.linalg.norm(g))
    r = T.rsi_ratios(ball, 400, rng, boundary_frac=1.0)
    assert np.allclose(r, 1 / 4.0, rtol=1e-9)  # every boundary point of a ball: exactly 1/(2R)
    assert T.rsi_ratios(ball, 400, rng, boundary_frac=0.0).min() > 1 / 4.0


def test_sphere_cap_rsi_tends_to_the_euclidean_value_and_falls_with_r():
    rng = np.random.default_rng(9)
    S = Sphere(6)
    c = np.zeros(6)
    c[0] = 1.0
    small = T.rsi_ratios(GeodesicBall(S, c, 0.05), 300, rng).min() * 0.1
    big = T.rsi_ratios(GeodesicBall(S, c, 1.4), 300, rng).min() * 2.8
    assert small == pytest.approx(1.0, abs=0.01)
    assert big < 0.95


# ------------------------------------------------------------------------------------------------ RFW
def _small_sphere_problem(seed=10, n=30, m=40):
    rng = np.random.default_rng(seed)
    return E.sphere_problem(n, m, 1.2, 0.9, rng)


@pytest.mark.parametrize("step", ["short", "open", "exact"])
def test_rfw_stays_in_the_ball_and_exact_line_search_never_rises(step):
    prob, ball = _small_sphere_problem()
    L = E.estimate_L(prob, ball, np.random.default_rng(0), 8)
    h = rfw(prob, ball, ball.c, 60, step=step, L=L)
    assert np.all(h["dist_center"] <= ball.R + 1e-9)
    assert np.all(h["gap"] >= 0)
    if step == "exact":
        assert np.all(np.diff(h["f"]) <= 1e-14)
    if step == "short":  # with an L from the Hessian the short step is a descent step
        assert np.all(np.diff(h["f"]) <= 1e-12)
    pg = projected_gradient(prob, ball, ball.c, 3000, L)
    assert h["f"][-1] >= pg["f"].min() - 1e-12  # PG (long) reaches the optimum; RFW cannot go below it
    assert ball.dist_to_center(pg["x"]) == pytest.approx(ball.R)  # optimum on the boundary (m > n)


def test_exact_step_and_along_match_direct_evaluation():
    prob, ball = _small_sphere_problem()
    x = ball.random_points(np.random.default_rng(1), 1)[0]
    o = ball.lmo(x, prob.rgrad(x))
    line = prob.along(x, o.d)
    for eta in (0.0, 0.3, 1.0):
        assert line(eta) == pytest.approx(float(prob.f(prob.M.exp(x, eta * o.d))), rel=1e-12)
    eta = exact_step(line)
    grid = np.linspace(0, 1, 2001)
    assert line(eta) <= min(line(e) for e in grid) + 1e-12


def test_fits_recover_known_rates():
    t = np.arange(200)
    rho, t0, t1, r2 = T.contraction(0.9 ** t, tol=1e-10)
    assert rho == pytest.approx(0.9) and r2 == pytest.approx(1.0)
    fit = T.phase_fits(np.r_[1.0, 1.0 / np.arange(1, 101) ** 1.5], 5, 20)  # gap[t] = t^-1.5
    assert fit["exponent"] == pytest.approx(-1.5, abs=1e-9) and fit["r2_power"] > fit["r2_geometric"]
    assert T.predicted_rate(0.5, 0.1, 1.0) == pytest.approx(0.975)
    assert T.predicted_rate(10.0, 10.0, 1.0) == 0.5


# ------------------------------------------------------------------------------------------------ config and end to end
def _quiet(**kw):
    with contextlib.redirect_stdout(io.StringIO()):
        return paper.config(**kw)


@pytest.mark.parametrize("kw", [{"n": 2}, {"dist": 2.0}, {"radius_frac": 1.0}, {"m_small": 1.5, "m_large": 1.2},
                                {"iters": 5}, {"rsi_samples": "many"}, {"mode": "slow"}])
def test_config_refuses_bad_parameters(kw, tmp_path):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name if name != "m_small" else "m_small"):
        _quiet(out_dir=str(tmp_path), **kw)


def test_tiny_end_to_end(tmp_path):
    cfg = _quiet(out_dir=str(tmp_path), n=40, iters=60, n_pg=400, rsi_samples=40, rsi_n=6, n_h=8, iters_h=40,
                 n_points=3, lmo_points=200)
    runs, hyp = E.sphere_experiment(cfg), E.hyperbolic_experiment(cfg)
    sweep, lmo = E.rsi_sweep(cfg), E.lmo_validation(cfg, runs, hyp, n_queries=4)
    c = E.claims(runs, hyp, sweep, lmo)
    assert c["S1"] <= 1e-9 and c["S2"] <= 1e-9
    assert set(sweep.geometry) == {"sphere", "hyperbolic"} and len(sweep) == 10
    assert (E.summary(runs + hyp).geometry.value_counts() > 0).all()
    # same seed, same numbers
    cfg2 = _quiet(out_dir=str(tmp_path), n=40, iters=60, n_pg=400, rsi_samples=40, rsi_n=6, n_h=8, iters_h=40,
                  n_points=3, lmo_points=200)
    again = E.sphere_experiment(cfg2)
    assert np.array_equal(again[0].runs["short"]["f"], runs[0].runs["short"]["f"])
    import matplotlib
    matplotlib.use("Agg")
    from lib.riemannian_strong_convexity import plots
    for fig in (plots.fig_convergence(runs), plots.fig_phases(runs), plots.fig_rsi(sweep),
                plots.fig_convergence(runs, "euclidean"), plots.fig_hyperbolic(hyp), plots.fig_lmo(lmo)):
        assert fig.axes
        matplotlib.pyplot.close(fig)
