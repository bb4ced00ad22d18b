"""Unit tests of lib.single_peaked_bandits: the SP test, G and the DP against brute force, the consecutive-ones
solvers against a permutation search, Lemma 6's projection, the bandits' invariants, the slope fit, the config."""
import functools
import itertools
import math

import numpy as np
import pytest

import lib.single_peaked_bandits as paper
from lib.single_peaked_bandits.analysis import loglog_slope, second_half_slope, sqrt_tlogt_ratio
from lib.single_peaked_bandits.instances import generate_sp_matrix, is_single_peaked, permute_columns, random_costs
from lib.single_peaked_bandits.offline import (brute_force_matching, brute_force_matchings, extend, g_matrix,
                                               g_matrix_loop, matching_value, peak_plan, sp_matching,
                                               sp_matching_batch)
from lib.single_peaked_bandits.online import (emc_rounds, greedy_select, maximal_matrix, optimal_values,
                                              random_feasible, run_emc, run_mvm, run_random, run_ucb_eo,
                                              run_ucb_greedy)
from lib.single_peaked_bandits.order import (c1p_order, consecutive_masks, consecutive_sets, extract_order,
                                             project_sp, satisfies)


# --- single-peakedness ------------------------------------------------------------------------------------------
def test_generated_rows_are_single_peaked_and_permutation_hides_the_order():
    rng = np.random.default_rng(0)
    for _ in range(50):
        P = generate_sp_matrix(int(rng.integers(1, 30)), int(rng.integers(3, 15)), rng)
        assert is_single_peaked(P)
        assert P.min() >= 0.2 and P.max() <= 0.9
        Pp, perm = permute_columns(P, rng)
        assert is_single_peaked(Pp, order=np.argsort(perm))
        assert np.allclose(Pp[:, np.argsort(perm)], P)


def test_is_single_peaked_rejects_a_two_peak_row():
    assert not is_single_peaked(np.array([[0.2, 0.8, 0.3, 0.7, 0.1]]))
    assert not is_single_peaked(np.array([[0.5, 0.1, 0.6]]))  # a valley
    assert is_single_peaked(np.array([[0.1, 0.5, 0.5, 0.2]]))  # a plateau at the top is fine
    assert is_single_peaked(np.array([[0.9, 0.5, 0.1], [0.1, 0.5, 0.9]]))
    # the same row is SP in another order
    assert not is_single_peaked(np.array([[0.2, 0.8, 0.3, 0.7, 0.1]]), order=[3, 1, 0, 2, 4])
    assert is_single_peaked(np.array([[0.2, 0.8, 0.3, 0.7, 0.1]]), order=[0, 2, 1, 3, 4])


def test_random_permutation_usually_breaks_single_peakedness():
    rng = np.random.default_rng(1)
    P = generate_sp_matrix(40, 10, rng)
    Pp, _ = permute_columns(P, rng)
    assert not is_single_peaked(Pp)


# --- G and SP-Matching ------------------------------------------------------------------------------------------
def test_vectorised_G_equals_the_double_loop():
    rng = np.random.default_rng(2)
    for _ in range(60):
        U, K = int(rng.integers(1, 12)), int(rng.integers(1, 9))
        P = generate_sp_matrix(U, K, rng)
        G = g_matrix(extend(P), peak_plan(P.argmax(1), K))
        assert np.allclose(G, g_matrix_loop(P, P.argmax(1)))
    # a batch whose entries have different peaks, and arbitrary (non-SP) values
    X = rng.random((5, 13, 7))
    peaks = rng.integers(0, 7, size=(5, 13))
    G = g_matrix(extend(X), peak_plan(peaks, 7))
    for n in range(5):
        assert np.allclose(G[n], g_matrix_loop(X[n], peaks[n]))


@pytest.mark.parametrize("max_cost", [1, 3])
def test_dp_equals_brute_force_on_random_small_instances(max_cost):
    rng = np.random.default_rng(3 + max_cost)
    for _ in range(150):
        U, K = int(rng.integers(1, 7)), int(rng.integers(1, 8))
        P = generate_sp_matrix(U, K, rng)
        costs = random_costs(K, rng, max_cost)
        B = int(rng.integers(costs.min(), costs.sum() + 1))
        m, v, S = sp_matching(P, costs, B)
        bf, bs, _ = brute_force_matching(P, costs, B)
        assert v == pytest.approx(bf, abs=1e-9)
        assert costs[S].sum() <= B
        assert float(matching_value(P, m)) == pytest.approx(v, abs=1e-9)
        assert set(np.unique(m)) <= set(S.tolist())


def test_brute_force_over_sets_equals_brute_force_over_matchings():
    rng = np.random.default_rng(4)
    for _ in range(40):
        U, K = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        P = generate_sp_matrix(U, K, rng)
        costs = random_costs(K, rng, 2)
        B = int(rng.integers(costs.min(), costs.sum() + 1))
        assert brute_force_matching(P, costs, B)[0] == pytest.approx(brute_force_matchings(P, costs, B), abs=1e-12)


def test_dp_can_beat_greedy_and_fails_without_single_peakedness():
    # the DP is exact under SP; on a non-SP matrix it may be wrong (it only compares the two bracketing arms)
    rng = np.random.default_rng(5)
    wrong = 0
    for _ in range(200):
        X = rng.random((4, 5))
        v = sp_matching(X, np.ones(5, int), 2, peaks=X.argmax(1))[1]
        wrong += v < brute_force_matching(X, np.ones(5, int), 2)[0] - 1e-9
    assert wrong > 0


def test_batched_dp_matches_single_calls_and_refuses_a_budget_below_every_cost():
    rng = np.random.default_rng(6)
    Ps = np.stack([generate_sp_matrix(25, 9, rng) for _ in range(5)])
    costs = np.ones(9, int)
    sel, v = sp_matching_batch(Ps, costs, 3, peak_plan(Ps.argmax(-1), 9))
    for n in range(5):
        m, vn, S = sp_matching(Ps[n], costs, 3)
        assert v[n] == pytest.approx(vn)
        assert sel[n].sum() <= 3
    with pytest.raises(ValueError, match="budget"):
        sp_matching(Ps[0], np.full(9, 2), 1)


# --- consecutive ones -------------------------------------------------------------------------------------------
def _families(rng, K, n):
    for t in range(n):
        m = int(rng.integers(1, 9))
        if t % 2:  # planted: intervals of a hidden order (feasible)
            perm = rng.permutation(K)
            sets = []
            for _ in range(m):
                a = int(rng.integers(0, K))
                b = int(rng.integers(a, K))
                sets.append(frozenset(perm[a:b + 1].tolist()))
        else:  # arbitrary sets (often infeasible)
            sets = [frozenset(np.flatnonzero(rng.random(K) < rng.uniform(0.2, 0.8)).tolist()) for _ in range(m)]
        yield sets


@functools.lru_cache(maxsize=None)
def _positions(K):
    """pos[p, k]: the position of arm k in the p-th of all K! permutations."""
    return np.argsort(np.array(list(itertools.permutations(range(K)))), axis=1)


def _brute_checker(sets, K):
    """Whether some permutation of the K arms makes every set consecutive (all K! permutations, vectorised)."""
    pos = _positions(K)
    ok = np.ones(len(pos), dtype=bool)
    for s in sets:
        if len(s) >= 2:
            p = pos[:, sorted(s)]
            ok &= p.max(axis=1) - p.min(axis=1) == len(s) - 1
    return bool(ok.any())


@pytest.mark.parametrize("solver", ["cpsat", "overlap", "dfs"])
def test_c1p_solvers_agree_with_a_brute_force_permutation_checker(solver):
    rng = np.random.default_rng(7)
    infeasible = 0
    for K in range(3, 9):
        for sets in _families(rng, K, 40 if solver == "cpsat" else 80):
            o = c1p_order(sets, K, solver=solver)
            assert (o is not None) == _brute_checker(sets, K)
            if o is not None:
                assert sorted(o) == list(range(K)) and satisfies(o, sets, K)
            infeasible += o is None
    assert infeasible > 20  # the test families do exercise the "no order" answer


def test_c1p_solvers_agree_at_paper_size_and_exact_extraction_recovers_an_sp_order():
    rng = np.random.default_rng(8)
    for _ in range(6):
        P = generate_sp_matrix(100, 20, rng)
        Pp, perm = permute_columns(P, rng)
        for solver in ("cpsat", "overlap"):
            o = extract_order(Pp, 0.0, solver=solver)
            assert o is not None and is_single_peaked(Pp, order=o)
        n = rng.integers(1, 40, size=P.shape)
        noisy = rng.binomial(n, Pp) / n + np.sqrt(2 * np.log(1e4) / n)  # a UCB-like matrix
        for eps in (0.02, 0.1, 0.3):
            m = consecutive_masks(noisy, eps)
            a, b = c1p_order(m, 20, "cpsat"), c1p_order(m, 20, "overlap")
            assert (a is None) == (b is None)


def test_consecutive_sets_are_the_top_sets_above_wide_gaps():
    P = np.array([[0.9, 0.5, 0.45, 0.1]])
    # sorted gaps: 0.4 below {0} (a single arm: trivially consecutive), 0.05 below {0, 1}, 0.35 below {0, 1, 2}
    assert consecutive_sets(P, 0.0) == [frozenset({0, 1}), frozenset({0, 1, 2})]
    assert consecutive_sets(P, 0.03) == [frozenset({0, 1, 2})]  # 0.05 is not above 2 eps = 0.06
    assert consecutive_sets(P, 0.17) == [frozenset({0, 1, 2})]
    assert consecutive_sets(P, 0.2) == []


def test_brute_solver_refuses_large_K_and_unknown_solver():
    with pytest.raises(ValueError, match="brute"):
        c1p_order([{0, 1}], 9, solver="brute")
    with pytest.raises(ValueError, match="solver"):
        c1p_order([{0, 1}], 5, solver="pq")


# --- Lemma 6's projection ---------------------------------------------------------------------------------------
def test_projection_is_sp_above_its_input_and_within_lemma6_bound():
    rng = np.random.default_rng(9)
    for _ in range(30):
        U, K = 30, int(rng.integers(4, 12))
        P = generate_sp_matrix(U, K, rng)
        Pp, perm = permute_columns(P, rng)
        eps = float(rng.uniform(0.005, 0.05))
        P_hat = Pp + rng.uniform(-eps, eps, size=Pp.shape)  # the concentration event |P_hat - P| <= eps
        o = extract_order(P_hat, eps, solver="overlap")
        assert o is not None  # the true order is consistent with every collected set
        P_sp = project_sp(P_hat[:, o])
        assert is_single_peaked(P_sp)
        assert np.all(P_sp >= P_hat[:, o] - 1e-15)
        assert np.abs(P_sp - Pp[:, o]).max() <= (2 * K + 1) * eps


# --- the bandits ------------------------------------------------------------------------------------------------
def test_maximal_matrix_is_the_definition_and_single_peaked_below_ucb():
    rng = np.random.default_rng(10)
    X = rng.random((3, 6, 7))
    p = rng.integers(0, 7, size=(3, 6))
    M = maximal_matrix(X, p)
    for n, u, k in itertools.product(range(3), range(6), range(7)):
        pp = p[n, u]
        ref = X[n, u, k:pp + 1].min() if k <= pp else X[n, u, pp:k + 1].min()
        assert M[n, u, k] == pytest.approx(ref)
    assert np.all(M <= X + 1e-15)
    for n in range(3):
        assert is_single_peaked(M[n])


def _instances(seed, N=2, U=8, K=5):
    rng = np.random.default_rng(seed)
    P = np.stack([generate_sp_matrix(U, K, rng) for _ in range(N)])
    costs = np.ones(K, int)
    return rng, P, costs, optimal_values(P, costs, 2)


def test_every_learner_has_nonnegative_per_round_regret_and_is_reproducible():
    rng, P, costs, v = _instances(11)
    T = 150
    outs = {
        "mvm": run_mvm(P, P.argmax(-1), costs, 2, T, np.random.default_rng(0), v),
        "greedy": run_ucb_greedy(P, costs, 2, T, np.random.default_rng(0), v),
        "random": run_random(P, costs, 2, T, np.random.default_rng(0), v),
        "ucb_eo": run_ucb_eo(P, costs, 2, T, np.random.default_rng(0), v),
    }
    for name, reg in outs.items():
        assert reg.shape == (2, T)
        assert reg.min() >= -1e-5, name  # float32 storage
    again = run_mvm(P, P.argmax(-1), costs, 2, T, np.random.default_rng(0), v)
    assert np.array_equal(again, outs["mvm"])


def test_ucb_eo_and_mvm_handle_integer_costs():
    rng = np.random.default_rng(15)
    P = np.stack([generate_sp_matrix(6, 5, rng) for _ in range(2)])
    costs = np.array([1, 2, 1, 3, 2])
    v = optimal_values(P, costs, 3)
    assert np.all(run_mvm(P, P.argmax(-1), costs, 3, 60, rng, v) >= -1e-5)
    perms = np.stack([rng.permutation(5) for _ in range(2)])
    Pp = np.stack([P[n][:, perms[n]] for n in range(2)])
    assert np.all(run_ucb_eo(Pp, costs[perms], 3, 60, rng, v) >= -1e-5)


def test_mvm_learns_on_an_easy_instance():
    rng, P, costs, v = _instances(12, N=2, U=6, K=4)
    reg = run_mvm(P, P.argmax(-1), costs, 2, 3000, rng, v, scale=0.3)
    assert reg[:, -500:].mean() < 0.2 * reg[:, 4:200].mean()


def test_greedy_and_random_sets_are_feasible_and_random_sets_maximal():
    rng = np.random.default_rng(13)
    costs = np.array([1, 2, 3, 1, 2])
    sel = random_feasible(200, costs, 4, rng)
    spent = (sel * costs).sum(1)
    assert np.all(spent <= 4)
    assert np.all([(costs[~s] > 4 - c).all() for s, c in zip(sel, spent)])  # nothing else fits
    g = greedy_select(rng.random((20, 6, 5)), costs, 4)
    assert np.all((g * costs).sum(1) <= 4)


def test_emc_closed_form_regret():
    rng, P, costs, v = _instances(14, N=1, U=10, K=5)
    P0, v0 = P[0], float(v[0])
    T = 20000
    N = emc_rounds(T)
    assert N == math.ceil(T ** (2 / 3) * math.log(T) ** (1 / 3))
    e = run_emc(P0, costs, 2, T, rng, v0, oracle_order=np.arange(5))
    assert e.explore_regret == pytest.approx(N * (v0 - P0.sum(0)).sum())
    assert e.regret == pytest.approx(e.explore_regret + (T - 5 * N) * e.commit_gap)
    assert e.commit_gap >= -1e-12 and e.within_bound
    short = run_emc(P0, costs, 2, 100, rng, v0)  # the horizon ends during exploration
    assert not short.explored_all and short.regret == pytest.approx(short.explore_regret)


# --- analysis and config ----------------------------------------------------------------------------------------
def test_loglog_slope_recovers_an_exact_power_law():
    T = np.geomspace(1e3, 1e6, 9)
    s, c = loglog_slope(T, 3.5 * T ** (2 / 3))
    assert s == pytest.approx(2 / 3, abs=1e-12) and c == pytest.approx(np.log(3.5), abs=1e-10)
    t = np.arange(1, 10001)
    assert second_half_slope(t, 2.0 * np.sqrt(t), 10000) == pytest.approx(0.5, abs=1e-6)
    q0, q1, ch = sqrt_tlogt_ratio(t, np.sqrt(t * np.log(t)), 10000)
    assert ch == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError):
        loglog_slope([1.0], [1.0])


@pytest.mark.parametrize("kw, name", [
    (dict(mode="fast"), "mode"), (dict(n_arms=2), "n_arms"), (dict(n_users=0), "n_users"),
    (dict(budget=0), "budget"), (dict(n_arms=8, budget=9), "budget"), (dict(horizon=10), "horizon"),
    (dict(c1p_solver="pq"), "c1p_solver"), (dict(max_cost=0), "max_cost"), (dict(n_runs=1.5), "n_runs"),
    (dict(seed=-1), "seed"),
])
def test_config_refuses_bad_parameters_naming_them(kw, name, tmp_path):
    with pytest.raises(ValueError, match=name):
        paper.config(out_dir=str(tmp_path), verbose=False, **kw)


def test_config_defaults_follow_the_paper(tmp_path):
    q = paper.config(out_dir=str(tmp_path), verbose=False)
    assert (q.n_users, q.n_arms, q.budget, q.horizon) == (20, 8, 4, 3000)
    f = paper.config(mode="full", out_dir=str(tmp_path), verbose=False)
    assert (f.n_users, f.n_arms, f.budget, f.n_instances, f.n_runs, f.horizon) == (100, 20, 10, 10, 10, 100_000)
    assert paper.config(n_arms=12, out_dir=str(tmp_path), verbose=False).budget == 6
