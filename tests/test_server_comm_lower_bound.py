"""Unit tests of lib.server_comm_lower_bound: the chain function's analytic gradient against finite differences and
torch autograd, prog_K against a brute-force loop, Phi against its erf form, the smoothness of Psi_a and Gamma at
their junctions, the oracle and RandK's unbiasedness, the random sum's chunked simulator against a plain loop and
its exact expectation, the time formulas, the simulated-time shortcut, and the config's refusals."""
import contextlib
import io
import math

import numpy as np
import pytest
from scipy import integrate, special

import lib.server_comm_lower_bound as paper
from lib.server_comm_lower_bound import chain as C
from lib.server_comm_lower_bound import complexity as X
from lib.server_comm_lower_bound import experiments as E
from lib.server_comm_lower_bound import random_sum as S
from lib.server_comm_lower_bound import simtime as M


def _points(rng, n, T, zero_frac=0.2):
    x = rng.uniform(-1.5, 3.0, size=(n, T))
    return np.where(rng.random((n, T)) < zero_frac, 0.0, x)


# --- the one-dimensional pieces ---------------------------------------------------------------------------------
def test_phi_matches_erf_form_and_quadrature():
    x = np.linspace(-6, 6, 25)
    assert np.allclose(C.phi(x), math.sqrt(math.e * math.pi / 2) * (1 + special.erf(x / math.sqrt(2))), rtol=1e-12)
    for v in (-2.0, 0.3, 1.7):
        q, _ = integrate.quad(lambda t: math.sqrt(math.e) * math.exp(-t * t / 2), -np.inf, v)
        assert C.phi(v) == pytest.approx(q, rel=1e-9)
    h = 1e-6
    assert np.allclose((C.phi(x + h) - C.phi(x - h)) / (2 * h), C.dphi(x), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("a", [math.e, 1.25, 4.0])
def test_psi_a_smooth_at_one_half_and_carmon_at_e(a):
    # every derivative vanishes as x -> 1/2+ (flat junction with the zero branch)
    for x in (0.5 + 1e-3, 0.5 + 1e-2):
        assert C.psi_a(x, a) < 1e-12 and C.dpsi_a(x, a) < 1e-9
    assert C.psi_a(0.5, a) == 0.0 and C.psi_a(1.0, a) == pytest.approx(1.0)
    assert C.psi_a(50.0, a) < a and C.psi_a(50.0, a) == pytest.approx(a, rel=1e-3)   # sup is a
    x = np.linspace(0.52, 4.0, 60)
    h = 1e-6
    assert np.allclose((C.psi_a(x + h, a) - C.psi_a(x - h, a)) / (2 * h), C.dpsi_a(x, a), rtol=1e-5, atol=1e-9)
    assert np.all(C.psi_a(np.array([1.0, 1.5, 3.0]), a) >= 1.0 - 1e-12)   # Psi_a >= 1 on [1, inf)
    if a == math.e:
        xx = np.array([0.7, 1.0, 2.0])
        assert np.allclose(C.psi_a(xx, a), np.exp(1 - 1 / (2 * xx - 1) ** 2))


def test_psi_a_derivative_sup_scales_like_inverse_sqrt_log_a():
    x = np.linspace(0.5001, 3, 200_001)
    sups = [C.dpsi_a(x, a).max() * math.sqrt(math.log(a)) / a for a in (1.05, 1.2, math.e)]
    assert np.allclose(sups, sups[0], rtol=1e-3)     # 4 e^{-3/2} (3/2)^{3/2}, whatever a
    assert sups[0] == pytest.approx(4 * math.exp(-1.5) * 1.5 ** 1.5, rel=1e-3)


def test_gamma_smooth_at_zero_and_derivative():
    assert C.gamma_fn(0.0) == 0.0 and C.gamma_fn(1.0) == 0.0
    assert C.gamma_fn(-1e-3) < 1e-300 * 1e10 and C.dgamma_fn(-1e-3) > -1e-300 * 1e10
    x = np.linspace(-5, -0.05, 50)
    h = 1e-7
    assert np.allclose((C.gamma_fn(x + h) - C.gamma_fn(x - h)) / (2 * h), C.dgamma_fn(x), rtol=1e-5, atol=1e-10)
    assert C.gamma_fn(-1.0) == pytest.approx(1.0)            # -(-1) e^{0}
    assert np.all(np.abs(C.dgamma_fn(np.linspace(-50, -1, 50))) >= 2 - 1e-12)


# --- F, its gradient, prog_K ------------------------------------------------------------------------------------
@pytest.mark.parametrize("K", [1, 2, 4])
@pytest.mark.parametrize("a", [math.e, 1.2])
def test_grad_F_against_central_differences(K, a):
    rng = np.random.default_rng(K)
    T = 7
    x = _points(rng, 40, T)
    g = C.grad_F(x, T, K, a)
    h = 1e-6
    fd = np.stack([(C.F(x + h * np.eye(T)[j], T, K, a) - C.F(x - h * np.eye(T)[j], T, K, a)) / (2 * h)
                   for j in range(T)], -1)
    assert np.allclose(g, fd, atol=2e-6 * max(1.0, np.abs(g).max()))


def test_grad_F_against_torch_autograd():
    torch = pytest.importorskip("torch")
    T, K, a = 8, 3, 1 + 1 / 3
    rng = np.random.default_rng(5)
    x = _points(rng, 30, T)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    la = math.log(a)

    def psi(v):
        u = torch.where(v > 0.5, 2 * v - 1, torch.ones_like(v))
        return torch.where(v > 0.5, torch.exp(la * (1 - 1 / u ** 2)), torch.zeros_like(v))

    def gam(v):
        s = torch.where(v < 0, v, -torch.ones_like(v))
        return torch.where(v < 0, -s * torch.exp(1 / s + 1), torch.zeros_like(v))

    phi = math.sqrt(2 * math.pi * math.e) * 0.5 * (1 + torch.erf(xt / math.sqrt(2)))
    P = torch.cat([torch.ones(x.shape[0], K, dtype=torch.float64), psi(xt)], 1)
    Q = torch.ones_like(xt)
    for k in range(K):
        Q = Q * P[:, k:k + T]
    f = (-(Q * phi).sum(1) + gam(xt).sum(1)).sum()
    f.backward()
    assert np.allclose(C.F(x, T, K, a).sum(), f.item(), rtol=1e-12)
    assert np.allclose(C.grad_F(x, T, K, a), xt.grad.numpy(), atol=1e-10)


def _prog_loop(x, K):
    xp = [1.0] * K + list(x)
    best = 0
    for i in range(len(x) + 1):
        if all(xp[K + i - m - 1] != 0 for m in range(K)):
            best = i
    return best


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_prog_K_against_a_loop(K):
    rng = np.random.default_rng(K)
    x = _points(rng, 300, 12, zero_frac=0.3)
    got = C.prog_K(x, K)
    assert [int(v) for v in got] == [_prog_loop(r, K) for r in x]
    assert C.prog_K(np.zeros(5), K) == 0 and C.prog_K(np.ones(5), K) == 5


def test_lemma31_support_and_norm_on_random_sparse_points():
    rng = np.random.default_rng(3)
    T = 10
    for K in (1, 3):
        x = E.sample_sparse_points(rng, 300, T)
        g = C.grad_F(x, T, K, 1 + 1 / K)
        pr = C.prog_K(x, K)
        allowed = (np.arange(1, T + 1)[None, :] <= pr[:, None] + 1) | (x != 0)
        assert not ((g != 0) & ~allowed).any()
        assert np.linalg.norm(g, axis=1)[pr < T].min() > 1.0
    # a lone coordinate beyond prog + 1 sees no gradient at all (its window is zero); coordinate 1 does
    x = np.zeros(T)
    x[6] = 2.0
    g = C.grad_F(x, T, 2, math.e)
    assert g[0] == pytest.approx(-math.sqrt(math.e)) and np.all(g[1:] == 0)


def test_hessian_symmetric_and_matches_quadratic_form_direction():
    rng = np.random.default_rng(0)
    T, K, a = 5, 2, math.e
    x = _points(rng, 4, T, zero_frac=0.0)
    H = C.hessian_F(x, T, K, a)
    assert np.allclose(H, np.swapaxes(H, -1, -2))
    v = rng.standard_normal(T)
    h = 1e-4
    second = (C.F(x + h * v, T, K, a) - 2 * C.F(x, T, K, a) + C.F(x - h * v, T, K, a)) / h ** 2
    assert np.allclose(np.einsum("i,nij,j->n", v, H, v), second, rtol=1e-3, atol=1e-3)


def test_lemma32_constants():
    c = C.lemma32_constants(3, math.e)
    assert c["Delta_0"] == pytest.approx(math.sqrt(2 * math.pi * math.e) * math.e ** 3)
    assert c["ell_1"] == pytest.approx(12 * math.sqrt(2 * math.pi) * math.e ** 2.5 * 9 * math.e ** 3)
    # F(0) - F(x) <= T Delta_0 on a far diagonal point, within the padding terms (i <= K) of attaining it
    T, K, a = 6, 3, 1.3
    x = np.full(T, 40.0)
    drop = C.F(np.zeros(T), T, K, a) - C.F(x, T, K, a)
    assert 0.7 * T * C.lemma32_constants(K, a)["Delta_0"] < drop <= T * C.lemma32_constants(K, a)["Delta_0"]


# --- oracle and compressor --------------------------------------------------------------------------------------
def test_stochastic_oracle_unbiased_and_reveals_only_with_probability_p():
    rng = np.random.default_rng(1)
    T, K, a, p = 6, 2, math.e, 0.2
    x = np.array([1.5, 2.0, 1.2, 0.0, 0.0, 0.0])            # prog_2 = 3: coordinate 4 is next
    xs = np.broadcast_to(x, (200_000, T))
    g, xi = C.stochastic_grad(xs, T, K, a, p, rng)
    true = C.grad_F(x, T, K, a)
    assert true[3] != 0
    assert np.allclose(g[:, :3], true[:3]) and np.allclose(g[:, 4:], true[4:])
    assert g[:, 3].mean() == pytest.approx(true[3], rel=0.02)
    assert np.mean(g[:, 3] != 0) == pytest.approx(p, abs=0.005)
    assert g[:, 3].var() <= (np.abs(true) ** 2).max() * (1 - p) / p * 1.02


def test_randk_unbiased_and_sparse():
    rng = np.random.default_rng(2)
    v = rng.standard_normal(20)
    out = C.randk(np.broadcast_to(v, (200_000, 20)), 5, rng)
    assert np.allclose(out.mean(0), v, atol=0.03 * np.abs(v).max() + 0.02)
    assert (out != 0).mean() == pytest.approx(5 / 20, abs=0.005)
    assert np.allclose(out[out != 0] / np.broadcast_to(v, out.shape)[out != 0], 4.0)
    with pytest.raises(ValueError, match="'k'"):
        C.randk(v, 0, rng)


# --- the random sum ---------------------------------------------------------------------------------------------
def test_chunked_simulator_equals_plain_loop_on_same_draws():
    R, B, n, K, p1, p2, h, tau = 7, 3, 5, 4, 0.3, 0.2, 1.0, 0.7
    draws = S.draw(np.random.default_rng(9), R, B, n, K, p1, p2)
    ref = S.t_B_loop(draws, h, tau)
    assert np.allclose(S.t_B_from_draws(draws, h, tau), ref)
    for max_elems in (B * n * K, 2 * B * n * K + 1, 10 ** 6):   # chunks of 1, 2 and all replicates
        got = S.t_B(n, K, B, p1, p2, h, tau, R, np.random.default_rng(9), max_elems=max_elems)
        assert np.allclose(got, ref)


def test_expected_t_B_closed_form_and_monte_carlo():
    p = 0.05
    for n in (1, 3, 10):     # K = 2, h = tau: min of 2n Geometric(p) has mean 1/(1 - (1-p)^(2n))
        assert S.expected_t_B(n, 2, 4, p, p, 1.0, 1.0) == pytest.approx(4 / (1 - (1 - p) ** (2 * n)), rel=1e-9)
    rng = np.random.default_rng(4)
    ex = S.expected_t_B(3, 6, 2, 0.1, 0.04, 1.0, 0.6)
    mc = S.t_B(3, 6, 2, 0.1, 0.04, 1.0, 0.6, 40_000, rng)
    assert mc.mean() == pytest.approx(ex, rel=4 * mc.std() / math.sqrt(mc.size) / ex + 1e-3)


def test_random_sum_refuses_bad_parameters():
    with pytest.raises(ValueError, match="'K'"):
        S.t_B(4, 3, 2, 0.1, 0.1, 1.0, 1.0, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'p_sigma'"):
        S.expected_t_B(4, 2, 2, 0.0, 0.1, 1.0, 1.0)
    assert S.k_of_n(1) == 2 and S.k_of_n(1024) == 14


# --- time formulas ----------------------------------------------------------------------------------------------
def test_time_formulas_limits():
    P = X.Problem(d=100, h=2.0, s2e=50.0, lde=3.0)
    assert X.time_batch_qsgd(1, P, 0.0, 0.0) == pytest.approx(X.time_sync_sgd_free(1, P))
    assert X.time_batch_sgd(4, P, 0.1, 0.2) == pytest.approx((2 * (1 + 50 / 4) + 0.3 * 100) * 3)
    assert X.time_single_sgd(7, P) == pytest.approx(2 * 51 * 3)
    big = X.time_batch_qsgd(1e15, P, 0.1, 0.2)
    assert big == pytest.approx((2 + 0.2 + 0.1 * 100) * 3, rel=1e-6)
    low, high = X.lower_bound_band(np.array([1.0, 10.0, 1e4]), P, 0.1)
    assert np.all(low <= high + 1e-12)
    # at tau_s = tau_w the shape is within 2x of Thm 1.6's form
    ns = np.geomspace(1, 1e6, 30)
    thm16 = np.minimum(P.h * (P.s2e / ns + 1) + 0.1 * P.d, P.h * (1 + P.s2e)) * P.lde
    r = X.lower_bound_shape(ns, P, 0.1) / thm16
    assert np.all((r >= 0.5 - 1e-12) & (r <= 1 + 1e-12))


# --- simulated time ---------------------------------------------------------------------------------------------
def test_randk_average_shortcut_matches_explicit_workers():
    rng = np.random.default_rng(0)
    d, n, k, sigma = 6, 5, 2, 0.8
    g = rng.standard_normal(d)
    fast = np.stack([M.randk_average_fast(g, n, k, sigma, rng) for _ in range(40_000)])
    slow = np.stack([M.randk_average_explicit(g, n, k, sigma, rng) for _ in range(40_000)])
    assert np.allclose(fast.mean(0), g, atol=0.04) and np.allclose(slow.mean(0), g, atol=0.04)
    assert np.allclose(fast.var(0), slow.var(0), rtol=0.06)
    q = k / d
    assert np.allclose(slow.var(0), ((1 / q - 1) * g ** 2 + sigma ** 2 / d / q) / n, rtol=0.06)


def test_problem_gradient_and_time_model():
    rng = np.random.default_rng(1)
    prob = M.make_problem(rng, d=8, N=30)
    x = rng.standard_normal((3, 8))
    h = 1e-6
    fd = np.stack([(prob.f(x + h * np.eye(8)[j]) - prob.f(x - h * np.eye(8)[j])) / (2 * h) for j in range(8)], -1)
    assert np.allclose(prob.grad(x), fd, atol=1e-7)
    assert M.time_per_iter("randk", 16, 200, 1.0, 0.05, 0.05) == pytest.approx(1 + 0.05 * 13 + 0.05 * 200)
    assert M.time_per_iter("single", 64, 200, 1.0, 0.05, 0.05) == 1.0


def test_run_states_deterministic_limit_and_pruning_keeps_winner():
    rng = np.random.default_rng(2)
    prob = M.make_problem(rng, d=10, N=40)
    g0 = float((prob.grad(np.zeros((1, 10))) ** 2).sum())
    # zero noise: sync with any n equals gradient descent, the same iterations for every n
    hit = M.run_states(prob, ["sync", "sync", "randk"], [1, 8, 1], [0.5, 0.5, 0.5], 0.0, 0.01 * g0, 500,
                       np.random.default_rng(0))
    assert hit[0] == hit[1] == hit[2] <= 500
    steps = [0.05, 0.5, 2.0] * 2
    meth = ["single"] * 6
    groups = ["g"] * 6
    order = [0, 1, 2, 0, 1, 2]
    st = [steps[i] for i in order]
    full = M.run_states(prob, meth, [1] * 6, st, 0.0, 0.01 * g0, 400, np.random.default_rng(0))
    pruned = M.run_states(prob, meth, [1] * 6, st, 0.0, 0.01 * g0, 400, np.random.default_rng(0), groups=groups,
                          reps=2)
    best = lambda h: min(np.mean([h[i] for i in range(6) if st[i] == s]) for s in set(st))   # noqa: E731
    assert best(full) == best(pruned)


# --- config -----------------------------------------------------------------------------------------------------
def test_config_refuses_bad_parameters():
    with contextlib.redirect_stdout(io.StringIO()):
        cfg = paper.config(out_dir="/tmp/scl_test_cfg")
    assert cfg.R == 50 and cfg.n_max_mc == 1024 and cfg.ns5 == (1, 4, 16, 64)
    for kwargs, name in (({"R": 2}, "'R'"), ({"p": 0.9}, "'p'"), ({"eps_rel": 0.0}, "'eps_rel'"),
                         ({"n_max_mc": 4096}, "'n_max_mc'"), ({"mode": "fast"}, "'mode'"), ({"d5": 3.5}, "'d5'")):
        with pytest.raises(ValueError, match=name), contextlib.redirect_stdout(io.StringIO()):
            paper.config(out_dir="/tmp/scl_test_cfg", **kwargs)


def test_moments_t_B_against_monte_carlo_variance():
    rng = np.random.default_rng(8)
    mean, var = S.moments_t_B(4, 4, 3, 0.2, 0.1, 1.0, 0.5)
    mc = S.t_B(4, 4, 3, 0.2, 0.1, 1.0, 0.5, 60_000, rng)
    assert mc.mean() == pytest.approx(mean, rel=0.01)
    assert mc.var() == pytest.approx(var, rel=0.03)
