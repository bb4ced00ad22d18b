"""Unit tests of lib.clipped_sgd_last_iterate: gradients vs finite differences, minimisers vs scipy.optimize, the
schedule's formulas, parameter checks, and a tiny end-to-end run of every experiment."""
import contextlib
import io

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

import lib.clipped_sgd_last_iterate as paper
from lib.clipped_sgd_last_iterate import experiments as E
from lib.clipped_sgd_last_iterate import problems as P
from lib.clipped_sgd_last_iterate import solver as S


def _fd_grad(f, x, h=1e-6):
    e = np.eye(len(x))
    return np.array([(f(x + h * e[i]) - f(x - h * e[i])) / (2 * h) for i in range(len(x))])


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(0)
    return {"P1": P.make_p1(rng, d=12), "P2": P.make_p2(rng, d=7), "P3": P.make_p3(rng, d=5, n_pool=400),
            "P4": P.make_p4(d=9)}


@pytest.mark.parametrize("name", ["P1", "P2", "P3", "P4"])
def test_gradients_match_finite_differences_and_vectorise(problems, name):
    prob = problems[name]
    rng = np.random.default_rng(1)
    x = rng.normal(size=prob.d)
    f = (lambda z: float(prob.f(z, exact=True))) if name == "P3" else (lambda z: float(prob.f(z)))
    assert np.allclose(prob.grad(x), _fd_grad(f, x), rtol=1e-5, atol=1e-7)
    X = rng.normal(size=(2, 3, prob.d))
    assert prob.f(X).shape == (2, 3) and prob.grad(X).shape == X.shape
    assert np.allclose(prob.grad(X)[1, 2], prob.grad(X[1, 2]))
    assert np.allclose(prob.f(X)[0, 1], prob.f(X[0, 1]), rtol=1e-6)


@pytest.mark.parametrize("name", ["P1", "P3"])
def test_minimiser_matches_scipy(problems, name):
    prob = problems[name]
    f = (lambda z: float(prob.f(z, exact=True))) if name == "P3" else (lambda z: float(prob.f(z)))
    res = optimize.minimize(f, np.zeros(prob.d), jac=lambda z: prob.grad(z), method="BFGS",
                            options={"gtol": 1e-11, "maxiter": 10_000})
    assert prob.fstar == pytest.approx(res.fun, abs=1e-10)
    assert prob.fstar <= res.fun + 1e-12                       # Newton/closed form is at least as good as BFGS
    assert np.allclose(prob.xstar, res.x, atol=1e-4)
    assert np.linalg.norm(prob.grad(prob.xstar)) < 1e-8
    assert abs(prob.gap(prob.xstar)) < 1e-6                   # the float32 fast path agrees at x*


def test_p3_oracle_is_unbiased_over_the_pool_and_smoothness(problems):
    prob = problems["P3"]
    x = np.random.default_rng(2).normal(size=prob.d)
    idx = np.arange(len(prob.Y))
    G = prob.oracle(np.broadcast_to(x, (1, len(idx), prob.d)), idx)[0]
    assert np.allclose(G.mean(axis=0), prob.grad(x))
    assert np.linalg.eigvalsh(prob.hess(x))[-1] <= prob.L + 1e-12


def test_additive_noise_oracle(problems):
    prob = problems["P1"]
    noise = P.AdditiveNoise(prob, 2.001, 1.0)
    n = noise.draw(np.random.default_rng(3), 4)
    X = np.zeros((2, 4, prob.d))
    assert n.shape == (4, prob.d)
    assert np.allclose(noise.oracle(X, n), prob.grad(X) + n)


def test_p4_gd_bias_decays_like_one_over_sum_of_steps():
    prob = P.make_p4(d=400)
    x = prob.x0.copy()
    gaps, sums, s = [], [], 0.0
    for k in range(3000):
        g = 0.5 / (k + 1) ** (2 / 3)
        x = x - g * prob.grad(x)
        s += g
        if k + 1 in (300, 3000):
            gaps.append(float(prob.gap(x)))
            sums.append(s)
    slope = np.log(gaps[1] / gaps[0]) / np.log(sums[1] / sums[0])
    assert slope == pytest.approx(-1.0, abs=0.1)


def test_schedule_formulas():
    assert S.beta_of(2.0) == pytest.approx(2 / 3) and S.beta_of(1.5) == pytest.approx(7 / 9)
    for a in (1.2, 1.5, 2.0):
        assert S.rate_exponent(a) == pytest.approx(1 - S.beta_of(a))
    gamma, lam, dk = S.schedule(2.0, L=2.0, R0=3.0, delta=0.05, gamma0=0.5, K=50, clip_const=80.0)
    k = np.arange(50)
    assert np.allclose(gamma, 0.5 / (2.0 * (k + 1) ** (2 / 3)))
    assert dk[0] == 0 and np.allclose(np.diff(dk), 2 * gamma[:-1] * 2.0)
    logs = np.log(6 * (k + 1) ** 2 / 0.05)
    assert lam[0] == pytest.approx(3.0 / (80 * gamma[0] * np.sqrt(logs[0])))
    big = dk > 1
    assert np.allclose((gamma * lam)[big], 3.0 / (80 * np.sqrt(logs[big]) * np.sqrt(dk[big])))
    g1, lam1, _ = S.schedule(2.0, 2.0, 3.0, 0.05, 0.5, 50, log_power=1)
    assert np.allclose(g1, gamma / logs ** 3)
    _, lam_small, _ = S.schedule(2.0, 2.0, 3.0, 1e-3, 0.5, 50)
    assert np.all(lam_small < lam)                            # a smaller delta clips harder


def test_config_validates_parameters():
    quiet = contextlib.redirect_stdout(io.StringIO())
    for kwargs, name in (({"R": 3}, "R"), ({"delta": 1.5}, "delta"), ({"log_power": 2}, "log_power"),
                         ({"clip_const": 0}, "clip_const"), ({"mode": "fast"}, "mode"), ({"K": 100, "kmin": 50}, "kmin"),
                         ({"noise_scale": -1.0}, "noise_scale"), ({"gamma0": 0.0}, "gamma0")):
        with quiet, pytest.raises(ValueError, match=name):
            paper.config(**kwargs)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    with contextlib.redirect_stdout(io.StringIO()):
        cfg = paper.config(seed=3, out_dir=str(tmp_path_factory.mktemp("csli")), R=12, K=200, R_tune=6, d=8, d_p3=4,
                           d_p4=6, n_pool=300, n_checkpoints=8, kmin=20)
    sets = E.settings(cfg)
    return cfg, sets, E.run_all(cfg, sets)


def test_tiny_end_to_end(tiny):
    cfg, sets, runs = tiny
    assert set(runs) == {"P1", "P2", "P3", "P2a15", "P4", "P4a15"}
    for key, r in runs.items():
        assert r.g0 in E.GRID
        table = r.tuned["table"]
        best = table[(table["method"] == "clipped") & (table["output"] == "last")].sort_values("q95").iloc[0]
        assert best["gamma0"] == r.g0                          # the shared gamma0 is the clipped last iterate's argmin
        assert r.values(True, "last").shape == (len(r.result.checkpoints), cfg.R)
        assert np.all(r.values(True, "uniform") >= -1e-6)
    t1 = E.last_vs_average(runs)
    assert len(t1) == 12 and np.isfinite(E.claim1(t1))
    t2 = E.rate_table(runs, cfg.kmin)
    assert len(t2) == 4 and np.isfinite(E.claim2(t2))
    t3 = E.tails_table(runs)
    assert np.isfinite(E.claim3(t3))
    t4 = E.delta_table(runs["P4"], cfg.delta)
    assert list(t4["delta"]) == list(E.DELTAS)
    ratio, mono = E.claim4(t4)
    assert ratio > 0 and isinstance(mono, bool)
    t5 = E.expectation_table(runs)
    assert set(t5["K"]) == set(cfg.horizons) and np.isfinite(E.claim5(t5))
    assert set(E.curves(runs["P1"])["series"].unique()) >= {"Clipped-SGD, last iterate $x_K$"}


def test_same_seed_same_numbers(tiny):
    cfg, sets, runs = tiny
    again = E.run_setting(sets["P4"], cfg, runs["P4"].tuned, deltas=E.DELTAS, horizons=cfg.horizons)
    assert np.array_equal(again.values(True, "last"), runs["P4"].values(True, "last"))


def test_claim_helpers_on_hand_made_tables():
    t = pd.DataFrame({"delta": [0.5, 0.1, 0.01, 0.001], "ln(1/delta)": 0, "q95": [1.0, 1.1, 1.2, 2.2],
                      "mean": 0, "median": 0})
    assert E.claim4(t) == (pytest.approx(2.0), True)
    t.loc[2, "q95"] = 0.9
    assert E.claim4(t)[1] is False
    t3 = pd.DataFrame({"protocol": ["shared gamma0 (paper)", "own gamma0 (fair)"], "q95 ratio": [3.0, 1.0],
                       "max ratio": [8.0, 1.0]})
    assert E.claim3(t3) == pytest.approx(1.5)                 # min(3 / 2, 8 / 5); the fair row is not judged


def test_fixed_gamma0_skips_the_grid(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        cfg = paper.config(seed=3, out_dir=str(tmp_path), R=10, K=120, R_tune=6, d=6, d_p3=3, d_p4=5, n_pool=200,
                           n_checkpoints=6, kmin=20, gamma0=0.2)
    s = E.settings(cfg)["P4"]
    tuned = E.tune(s, cfg)
    assert tuned["shared"] == 0.2 and set(tuned["own"].values()) == {0.2} and set(tuned["table"]["gamma0"]) == {0.2}
