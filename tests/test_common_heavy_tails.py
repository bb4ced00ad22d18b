"""Tests of lib.common.heavy_tails: the samplers against scipy.stats, the closed-form moments against quadrature, the
vectorised runner against a per-run loop on the same draws, and the statistics helpers."""
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from lib.common import heavy_tails as H


# --- samplers ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tail", [1.55, 2.001, 3.0])
def test_sym_pareto_magnitude_is_lomax_and_sign_is_fair(tail):
    x = H.sym_pareto(tail, 20_000, np.random.default_rng(1))
    assert stats.kstest(np.abs(x), stats.lomax(c=tail).cdf).pvalue > 1e-3
    # the test has power: a 15% wrong tail index is rejected
    assert stats.kstest(np.abs(x), stats.lomax(c=tail * 1.15).cdf).pvalue < 1e-3
    assert stats.binomtest(int((x > 0).sum()), len(x)).pvalue > 1e-3
    # sign independent of magnitude: same law above and below zero
    assert stats.ks_2samp(x[x > 0], -x[x < 0]).pvalue > 1e-3


def test_sym_pareto_scale_and_moment_closed_form():
    rng = np.random.default_rng(2)
    x = H.sym_pareto(4.0, 200_000, rng, scale=2.5)
    assert stats.kstest(np.abs(x) / 2.5, stats.lomax(c=4.0).cdf).pvalue > 1e-3
    for tail, p in ((4.0, 1.5), (2.001, 1.5), (1.55, 1.2)):
        exact = stats.lomax(c=tail).expect(lambda t: t ** p)
        assert H.sym_pareto_abs_moment(tail, p) == pytest.approx(exact, rel=1e-6)
    assert H.sym_pareto_abs_moment(1.55, 1.6) == math.inf
    with pytest.raises(ValueError):
        H.sym_pareto(-1.0, 5, rng)


def test_student_t_matches_scipy():
    x = H.student_t(2.001, 20_000, np.random.default_rng(3))
    assert stats.kstest(x, stats.t(df=2.001).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.norm.cdf).pvalue < 1e-6


def test_coordinate_pareto_shape_and_scaling():
    n = H.coordinate_pareto(25, 3.0, 4000, np.random.default_rng(4), scale=2.0)
    assert n.shape == (4000, 25)
    assert stats.kstest(np.abs(n.ravel()) * 5 / 2.0, stats.lomax(c=3.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("k", [2, 3, 10])
def test_sphere_uniform_marginal_is_beta(k):
    u = H.sphere_uniform(k, 20_000, np.random.default_rng(k))
    assert np.allclose(np.linalg.norm(u, axis=1), 1.0)
    a = (k - 1) / 2
    assert stats.kstest((u[:, 0] + 1) / 2, stats.beta(a, a).cdf).pvalue > 1e-3


def _sphere_moment_quad(k, p):
    """E|u_1|^p from u_1's marginal density c_k (1 - t^2)^((k-3)/2) on [-1, 1]."""
    if k == 1:
        return 1.0
    c = 1.0 / special.beta(0.5, (k - 1) / 2)
    val, _ = integrate.quad(lambda t: 2 * c * t ** p * (1 - t * t) ** ((k - 3) / 2), 0, 1, limit=200)
    return val


@pytest.mark.parametrize("k", [1, 2, 3, 16, 64, 256])
@pytest.mark.parametrize("p", [1.2, 1.5, 2.0])
def test_sigma_s_of_against_quadrature(k, p):
    assert H.sigma_s_of(k, p) ** p == pytest.approx(_sphere_moment_quad(k, p), rel=1e-6)


def test_deff_of():
    for k in (1, 4, 16, 64):
        assert H.deff_of(k, 2.0) == pytest.approx(k)
        assert H.deff_of(k, 1.5, kind="spike") == pytest.approx(k)
    # for p < 2 d_eff grows with k but stays below pi k / 2 (the paper's bound sigma_l <= sqrt(pi d / 2) sigma_s)
    vals = [H.deff_of(k, 1.5) for k in (1, 4, 16, 64)]
    assert np.all(np.diff(vals) > 0) and all(v <= math.pi * k / 2 for v, k in zip(vals, (1, 4, 16, 64)))
    with pytest.raises(ValueError):
        H.deff_of(4, 1.5, kind="cube")


def test_directional_heavy_tail_norm_moment_and_support():
    rng = np.random.default_rng(5)
    n = H.directional_heavy_tail(8, 20, 4.0, 100_000, rng, sigma_l=3.0, p=1.5)
    assert n.shape == (100_000, 20) and not np.any(n[:, 8:])
    norms = np.linalg.norm(n, axis=1)
    m = np.mean(norms ** 1.5)
    se = np.std(norms ** 1.5) / math.sqrt(len(norms))
    assert abs(m - 3.0 ** 1.5) < 4 * se
    # the directional moment: E|<e, n>|^p = sigma_l^p E|u_1|^p for a unit e in the subspace
    e = np.zeros(20)
    e[:8] = H.sphere_uniform(8, 1, rng)[0]
    proj = np.abs(n @ e) ** 1.5
    assert abs(proj.mean() - (3.0 * H.sigma_s_of(8, 1.5)) ** 1.5) < 4 * proj.std() / math.sqrt(len(proj))


def test_spike_noise_sparse_centred_and_scaled():
    rng = np.random.default_rng(6)
    rows = H.spike_noise(5, 12, 4.0, 200_000, rng, sigma_l=2.0, p=1.5)
    assert isinstance(rows, H.SparseRows) and len(rows) == 200_000
    assert rows.index.min() >= 0 and rows.index.max() == 4
    v = rows.value
    assert abs(v.mean()) < 4 * v.std() / math.sqrt(len(v))                 # centred
    assert abs(np.mean(np.abs(v) ** 1.5) - 2.0 ** 1.5) < 4 * np.std(np.abs(v) ** 1.5) / math.sqrt(len(v))
    assert (v > 0).mean() < 0.5                                            # one-sided: skewed to the right
    dense = H.spike_noise(5, 12, 4.0, 1000, np.random.default_rng(7), sigma_l=2.0, p=1.5, sparse=False)
    again = H.spike_noise(5, 12, 4.0, 1000, np.random.default_rng(7), sigma_l=2.0, p=1.5)
    assert np.array_equal(dense, again.dense())
    assert np.allclose(np.linalg.norm(dense, axis=1), again.norms())


def test_centred_lomax_moment_and_calibrate_scale():
    rng = np.random.default_rng(8)
    x = stats.lomax(c=4.0).rvs(400_000, random_state=rng) - 1 / 3
    mc = np.mean(np.abs(x) ** 1.5)
    assert H.centred_lomax_abs_moment(4.0, 1.5) == pytest.approx(mc, rel=0.02)
    # calibrate_scale (Monte Carlo) agrees with the closed forms
    c = H.calibrate_scale(lambda n, r: H.sym_pareto(4.0, n, r), 1.5, 2.0, n=400_000, rng=np.random.default_rng(9))
    assert c == pytest.approx(2.0 / H.sym_pareto_abs_moment(4.0, 1.5) ** (1 / 1.5), rel=0.02)
    c = H.calibrate_scale(lambda n, r: H.directional_heavy_tail(3, 6, 4.0, n, r), 1.5, 1.0, n=200_000,
                          rng=np.random.default_rng(10))
    assert c == pytest.approx(1.0 / H.sym_pareto_abs_moment(4.0, 1.5) ** (1 / 1.5), rel=0.03)


# --- clipping and the runner ------------------------------------------------------------------------------------
def test_clip_rows():
    rng = np.random.default_rng(11)
    G = rng.normal(size=(3, 7, 4)) * rng.uniform(0.1, 10, size=(3, 7, 1))
    G[0, 0] = 0.0
    lam = np.array([[0.5], [2.0], [np.inf]])
    C, mask = H.clip_rows(G, lam, return_mask=True)
    norms, cn = np.linalg.norm(G, axis=-1), np.linalg.norm(C, axis=-1)
    assert np.all(cn <= np.minimum(norms, lam) + 1e-12)
    assert np.allclose(cn[mask], np.broadcast_to(lam, norms.shape)[mask])
    assert np.array_equal(C[~mask], G[~mask]) and not mask[2].any() and np.all(C[0, 0] == 0)
    cos = np.einsum("...i,...i->...", C, G)[norms > 0] / (cn * norms)[norms > 0]
    assert np.allclose(cos, 1.0)


def _quad_problem(d, rng):
    lams = rng.uniform(0.2, 2.0, size=d)
    return lams, (lambda X: lams * X), (lambda X: 0.5 * np.einsum("...i,i,...i->...", X, lams, X))


def _pregenerated(noise):
    it = iter(noise)
    return lambda rng, R: next(it)


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_runner_equals_per_run_loop_on_the_same_draws(mu):
    rng = np.random.default_rng(12)
    d, R, K = 3, 4, 60
    lams, grad, f = _quad_problem(d, rng)
    noise = H.coordinate_pareto(d, 1.8, K * R, rng, scale=3.0).reshape(K, R, d)
    x0 = rng.normal(size=d)
    gamma = 0.5 / np.sqrt(np.arange(1, K + 1))
    methods = [H.Method("clip", gamma, lam=np.full(K, 0.7)), H.Method("sgd", gamma * 0.5),
               H.Method("clip-decay", gamma, lam=2.0 / np.arange(1, K + 1))]
    res = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), x0, methods, R, rng,
                            checkpoints=[0, 7, K], value=f, mu=mu)
    for m in methods:
        for r in range(R):
            x = x0.copy()
            traj = [x.copy()]
            for k in range(K):
                g = lams * x + noise[k, r]
                if m.lam is not None and np.linalg.norm(g) > m.lam[k]:
                    g = g * m.lam[k] / np.linalg.norm(g)
                x = (x - m.gamma[k] * g) / (1 + m.gamma[k] * mu)
                traj.append(x.copy())
            assert np.allclose(res.final[m.name][r], x, rtol=1e-12, atol=1e-12)
            for i, kk in enumerate((0, 7, K)):
                assert res.values[m.name]["last"][i, r] == pytest.approx(f(traj[kk]), rel=1e-10)
                avg = np.mean(traj[:kk], axis=0) if kk else x0
                assert res.values[m.name]["uniform"][i, r] == pytest.approx(f(avg), rel=1e-10)


def test_prox_at_mu_zero_is_plain_and_mu_changes_the_path():
    rng = np.random.default_rng(13)
    d, R, K = 4, 5, 40
    lams, grad, f = _quad_problem(d, rng)
    noise = H.sym_pareto(2.5, (K, R, d), rng)
    m = [H.Method("clip", np.full(K, 0.2), lam=np.full(K, 1.0))]
    plain = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), np.ones(d), m, R, rng, value=f)
    prox0 = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), np.ones(d), m, R, rng, value=f, mu=0.0)
    prox1 = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), np.ones(d), m, R, rng, value=f, mu=0.5)
    assert np.array_equal(plain.final["clip"], prox0.final["clip"])
    assert not np.allclose(plain.final["clip"], prox1.final["clip"])


def test_online_averages_equal_those_of_the_stored_trajectory():
    rng = np.random.default_rng(14)
    d, R, K = 5, 6, 80
    lams, grad, _ = _quad_problem(d, rng)
    c = rng.normal(size=d)
    t_weights = np.arange(1, K + 1, dtype=float)
    methods = [H.Method("a", 0.3 / np.arange(1, K + 1) ** 0.6, lam=np.full(K, 1.5), weights={"t": t_weights}),
               H.Method("b", np.full(K, 0.05), weights={"t": t_weights})]
    res = H.run_clipped_sgd(lambda X, n: grad(X) + n, lambda r, R: H.sym_pareto(2.2, (R, d), r), rng.normal(size=d),
                            methods, R, np.random.default_rng(15), checkpoints=[1, 10, 33, K],
                            value=lambda X: X @ c, store_trajectory=True)
    traj = res.trajectory
    assert traj.shape == (K + 1, 2, R, d)
    for j, m in enumerate(methods):
        assert np.allclose(traj[-1, j], res.final[m.name])
        for i, kk in enumerate(res.checkpoints):
            pts = traj[:kk, j]                                           # x_0..x_{k-1}
            for name, w in (("uniform", np.ones(K)), ("gamma", m.gamma), ("t", t_weights)):
                avg = np.tensordot(w[:kk], pts, axes=1) / w[:kk].sum()
                assert np.allclose(res.values[m.name][name][i], avg @ c, rtol=1e-10, atol=1e-12)
            assert np.allclose(res.values[m.name]["last"][i], traj[kk, j] @ c)


def test_common_random_numbers_and_method_order():
    """A method's runs do not depend on which other methods share the call, nor on their order or average flag."""
    d, R, K = 3, 8, 50
    rng = np.random.default_rng(16)
    lams, grad, f = _quad_problem(d, rng)
    A = H.Method("A", np.full(K, 0.1), lam=np.full(K, 0.5))
    B = H.Method("B", np.full(K, 0.2), average=False)
    C = H.Method("C", np.full(K, 0.1), lam=np.full(K, 0.5))               # the same schedule as A
    args = (lambda X, n: grad(X) + n, lambda r, R: H.sym_pareto(1.7, (R, d), r), np.ones(d))
    alone = H.run_clipped_sgd(*args, [A], R, np.random.default_rng(17), value=f)
    mixed = H.run_clipped_sgd(*args, [B, A, C], R, np.random.default_rng(17), value=f)
    assert np.array_equal(alone.values["A"]["last"], mixed.values["A"]["last"])
    assert np.array_equal(alone.values["A"]["gamma"], mixed.values["A"]["gamma"])
    assert np.array_equal(mixed.values["A"]["last"], mixed.values["C"]["last"])
    assert set(mixed.values["B"]) == {"last"}
    assert 0 < mixed.clip_fraction["A"] <= 1 and mixed.clip_fraction["B"] == 0


def test_runner_rejects_bad_input():
    K = 10
    with pytest.raises(ValueError):
        H.Method("x", np.full(K, -0.1))
    with pytest.raises(ValueError):
        H.Method("x", np.full(K, 0.1), lam=np.zeros(K))
    ms = [H.Method("x", np.full(K, 0.1)), H.Method("x", np.full(K, 0.1))]
    with pytest.raises(ValueError, match="unique"):
        H.run_clipped_sgd(lambda X, n: X, lambda r, R: None, np.zeros(2), ms, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="checkpoints"):
        H.run_clipped_sgd(lambda X, n: X, lambda r, R: None, np.zeros(2), ms[:1], 3, np.random.default_rng(0),
                          checkpoints=[K + 1])


# --- statistics -------------------------------------------------------------------------------------------------
def test_quantile_curves_and_ecdf():
    v = np.random.default_rng(18).lognormal(size=(4, 101))
    df = H.quantile_curves(v, [1, 2, 3, 4])
    assert list(df.columns) == ["k", "mean", "sd", "median", "q95", "max"]
    assert np.allclose(df["q95"], np.quantile(v, 0.95, axis=1)) and np.allclose(df["max"], v.max(axis=1))
    assert np.allclose(df["sd"], v.std(axis=1, ddof=1))
    x, p = H.ecdf(v[0])
    assert np.all(np.diff(x) >= 0) and p[-1] == 1.0 and p[0] == pytest.approx(1 / 101)


def test_fit_loglog_slope_recovers_a_power_law():
    rng = np.random.default_rng(19)
    k = np.unique(np.geomspace(1, 1e4, 40).astype(int))
    y = 3.0 * k ** -0.4 * np.exp(rng.normal(0, 0.02, size=len(k)))
    y[k < 10] = 50.0                                                      # a transient the range excludes
    s, b = H.fit_loglog_slope(k, y, kmin=10)
    assert s == pytest.approx(-0.4, abs=0.01) and math.exp(b) == pytest.approx(3.0, rel=0.1)
    assert H.fit_loglog_slope(k, y)[0] < -0.6                             # without kmin the transient bends it
    with pytest.raises(ValueError):
        H.fit_loglog_slope([1, 2], [1.0, -1.0])


def test_nested_sphere_noise_slices_have_the_directional_law():
    ks = (1, 4, 16)
    n = H.nested_sphere_noise(ks, 20, 3.0, 20_000, np.random.default_rng(20), sigma_l=2.0, p=1.5)
    assert n.shape == (3, 20_000, 20)
    norms = np.linalg.norm(n, axis=2)
    assert np.allclose(norms, norms[0])                                   # the same |s| for every k
    ref = H.directional_heavy_tail(16, 20, 3.0, 20_000, np.random.default_rng(21), sigma_l=2.0, p=1.5)
    assert stats.ks_2samp(n[2][:, 0], ref[:, 0]).pvalue > 1e-3
    assert stats.ks_2samp(norms[2], np.linalg.norm(ref, axis=1)).pvalue > 1e-3
    for i, k in enumerate(ks):
        assert not np.any(n[i][:, k:])
    a = (4 - 1) / 2                                                       # u_1 of the k = 4 slice: Beta marginal
    assert stats.kstest((n[1][:, 0] / norms[1] + 1) / 2, stats.beta(a, a).cdf).pvalue > 1e-3


def test_per_method_mu_and_row_aware_values():
    """mu may differ per method (each row gets its own proximal step), and value(Y, rows=...) learns which methods
    Y's rows belong to, for the last iterate and for the averages (non-contiguous averaged methods included)."""
    rng = np.random.default_rng(22)
    d, R, K = 3, 4, 30
    lams, grad, f = _quad_problem(d, rng)
    noise = H.sym_pareto(2.5, (K, R, d), rng)
    ms = [H.Method("a", np.full(K, 0.1), lam=np.full(K, 1.0)), H.Method("b", np.full(K, 0.1), average=False),
          H.Method("c", np.full(K, 0.1), lam=np.full(K, 1.0))]
    seen = []

    def value(Y, rows):
        seen.append(tuple(rows))
        return f(Y) + np.asarray(rows)[:, None] * 100.0          # tag each row with its method index

    res = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), np.ones(d), ms, R, rng,
                            checkpoints=[K], value=value, value_rows=True, mu=[0.0, 0.0, 0.5])
    assert (0, 1, 2) in seen and (0, 2) in seen
    assert np.all(res.values["c"]["uniform"] >= 200) and np.all(res.values["a"]["gamma"] < 100)
    one = H.run_clipped_sgd(lambda X, n: grad(X) + n, _pregenerated(noise), np.ones(d), [ms[2]], R, rng,
                            checkpoints=[K], value=f, mu=0.5)
    assert np.allclose(res.final["c"], one.final["c"])
    assert not np.allclose(res.final["a"], res.final["c"])       # same noise and schedule, different mu
