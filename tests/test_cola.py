"""Unit tests of lib/cola: p-SHAP against brute force, couplings, C*, the oracle, proximity, data readers."""
import hashlib
import itertools
from math import factorial

import numpy as np
import pytest

from lib.cola import config
from lib.cola.data import GERMAN_ATTRIBUTES, load_dataset, load_german, make_credit_like, make_credit_like_onehot
from lib.cola.generators import dice_random, growing_spheres, nun_ce, wachter_ce
from lib.cola.make_data import FIXTURE_NAME, german_fixture_lines
from lib.cola.matching import (compose_q, greedy_coupling, identity_coupling, nn_coupling, ot_coupling,
                               random_coupling, transport_cost)
from lib.cola.models import fit_model, forest_proba
from lib.cola.pshap import pshap_exact, pshap_sampling, shap_background, shapley_matrix
from lib.cola.refine import (action_order, apply_actions, edit_mask, min_actions, oracle_min_edits,
                             per_row_prefix, proximity_violations)
from lib.common import data_dir

FIXTURE = data_dir("cola") / FIXTURE_NAME


def _game_fn(w, W2):
    """A nonlinear black box with interactions: sigmoid(w.z + z^T W2 z)."""
    return lambda Z: 1.0 / (1.0 + np.exp(-(Z @ w + np.einsum("ni,ij,nj->n", Z, W2, Z))))


def _baseline_shapley_bruteforce(f, x, r):
    """Shapley values of v(S) = f(x_S, r_rest) by averaging marginal contributions over all P! orders."""
    P = len(x)
    phi = np.zeros(P)
    for perm in itertools.permutations(range(P)):
        z = r.copy()
        prev = f(z[None])[0]
        for k in perm:
            z[k] = x[k]
            cur = f(z[None])[0]
            phi[k] += cur - prev
            prev = cur
    return phi / factorial(P)


def test_shapley_matrix_matches_subset_formula():
    A = shapley_matrix(3)
    # v = indicator of the full coalition: each player gets 1/3
    v = np.zeros(8)
    v[7] = 1.0
    np.testing.assert_allclose(v @ A, np.full(3, 1 / 3))


def test_exact_pshap_with_permutation_coupling_is_baseline_shapley_and_efficient():
    rng = np.random.default_rng(0)
    P, N = 5, 4
    f = _game_fn(rng.normal(size=P), 0.5 * rng.normal(size=(P, P)))
    X, R = rng.normal(size=(N, P)), rng.normal(size=(N, P))
    perm = rng.permutation(N)
    pi = np.zeros((N, N))
    pi[np.arange(N), perm] = 1.0 / N
    phi = pshap_exact(f, X, R, pi)
    for i in range(N):
        np.testing.assert_allclose(phi[i], _baseline_shapley_bruteforce(f, X[i], R[perm[i]]), atol=1e-12)
    # efficiency: sum_k phi_ik = f(x_i) - f(q_i)
    np.testing.assert_allclose(phi.sum(1), f(X) - f(compose_q(pi, R)), atol=1e-12)


def test_exact_pshap_with_a_spread_coupling_is_the_weighted_mixture():
    rng = np.random.default_rng(1)
    P = 4
    f = _game_fn(rng.normal(size=P), 0.3 * rng.normal(size=(P, P)))
    X, R = rng.normal(size=(1, P)), rng.normal(size=(3, P))
    pi = np.array([[0.5, 0.2, 0.3]])
    phi = pshap_exact(f, X, R, pi)[0]
    want = sum(w * _baseline_shapley_bruteforce(f, X[0], R[j]) for j, w in enumerate(pi[0]))
    np.testing.assert_allclose(phi, want, atol=1e-12)
    np.testing.assert_allclose(phi.sum(), f(X)[0] - (pi[0] * f(R)).sum(), atol=1e-12)


def test_sampled_pshap_is_efficient_and_close_to_exact():
    rng = np.random.default_rng(2)
    P, N = 6, 3
    f = _game_fn(rng.normal(size=P), 0.3 * rng.normal(size=(P, P)))
    X, R = rng.normal(size=(N, P)), rng.normal(size=(N, P))
    pi = identity_coupling(N)
    exact = pshap_exact(f, X, R, pi)
    est = pshap_sampling(f, X, R, pi, n_perm=2000, rng=np.random.default_rng(3))
    np.testing.assert_allclose(est.sum(1), f(X) - f(R), atol=1e-12)  # per-permutation efficiency
    assert np.abs(est - exact).max() < 0.02


def test_decoupled_shap_differs_from_pshap_and_sums_to_the_background_gap():
    rng = np.random.default_rng(4)
    P = 4
    f = _game_fn(rng.normal(size=P), 0.3 * rng.normal(size=(P, P)))
    X, bg = rng.normal(size=(2, P)), rng.normal(size=(50, P))
    phi = shap_background(f, X, bg, n_perm=400, rng=np.random.default_rng(5))
    # efficiency holds for the average background draw; with 200 pairs it is close to f(x) - mean f(bg)
    assert np.abs(phi.sum(1) - (f(X) - f(bg).mean())).max() < 0.08


def test_emd_with_equal_sizes_is_a_permutation_and_cheapest():
    rng = np.random.default_rng(6)
    N = 12
    X, R = rng.normal(size=(N, 4)), rng.normal(size=(N, 4)) + 1.0
    pi = ot_coupling(X, R)
    assert np.all((np.abs(pi) < 1e-12) | (np.abs(pi - 1 / N) < 1e-12))
    assert np.all((pi > 1e-12).sum(0) == 1) and np.all((pi > 1e-12).sum(1) == 1)
    # brute force over all permutations is too big at N = 12; compare with every other coupling we build
    c_ot = transport_cost(pi, X, R)
    for other in (nn_coupling(X, R), identity_coupling(N), random_coupling(N, N, rng)):
        np.testing.assert_allclose(other.sum(0), 1 / N)
        np.testing.assert_allclose(other.sum(1), 1 / N)
        assert c_ot <= transport_cost(other, X, R) + 1e-12
    # and with the exact optimum over permutations on a small instance
    Xs, Rs = X[:6], R[:6]
    best = min(sum(((Xs[i] - Rs[p[i]]) ** 2).sum() for i in range(6)) / 6 for p in itertools.permutations(range(6)))
    np.testing.assert_allclose(transport_cost(ot_coupling(Xs, Rs), Xs, Rs), best, rtol=1e-10)


def test_unequal_sizes_keep_the_marginals_and_sinkhorn_is_close():
    rng = np.random.default_rng(7)
    X, R = rng.normal(size=(5, 3)), rng.normal(size=(8, 3))
    for pi in (ot_coupling(X, R), greedy_coupling(rng.random((5, 8))), ot_coupling(X, R, reg=0.01)):
        np.testing.assert_allclose(pi.sum(1), 1 / 5, atol=1e-6)
        np.testing.assert_allclose(pi.sum(0), 1 / 8, atol=1e-6)
    assert transport_cost(ot_coupling(X, R, reg=0.01), X, R) >= transport_cost(ot_coupling(X, R), X, R) - 1e-9
    free = nn_coupling(X, R, capacity=False)
    assert np.all(compose_q(free, R) == R[((X[:, None] - R[None]) ** 2).sum(-1).argmin(1)])


def _threshold_model(weights, t):
    """predict = 1 when w.z >= t (a linear rule whose per-row minimum edits are known)."""
    return lambda Z: (np.asarray(Z) @ weights >= t).astype(int)


def test_min_actions_scans_prefixes_exactly():
    predict = _threshold_model(np.array([1.0, 1.0, 1.0]), 2.0)
    X = np.zeros((2, 3))
    q = np.ones((2, 3))
    y_star = predict(q)
    order = np.array([0, 3, 1, 2, 4, 5])  # row0 f0, row1 f0, row0 f1, row0 f2, row1 f1, row1 f2
    res = min_actions(predict, X, q, y_star, order)
    # row 0 reaches 2 edits after 3 actions, row 1 after 5
    assert res.c_star == 5 and res.n_edits == 6
    np.testing.assert_allclose(res.curve, [0, 0, 0, 0.5, 0.5, 1.0, 1.0])


def test_oracle_matches_known_minimum_and_never_exceeds_any_order():
    rng = np.random.default_rng(8)
    w = np.array([3.0, 1.0, 1.0, 0.5, 0.2])
    predict = _threshold_model(w, 3.0)
    X = np.zeros((1, 5))
    q = np.ones((1, 5))
    assert oracle_min_edits(predict, X, q, predict(q))[0] == 1  # feature 0 alone reaches 3
    # random instances: for every order, C* >= sum of per-row minima
    for trial in range(20):
        P, N = 6, 5
        w = rng.normal(size=P)
        X = rng.normal(size=(N, P))
        q = X + rng.normal(size=(N, P)) * 2
        predict = _threshold_model(w, 0.0)
        y_star = predict(q)
        oracle = oracle_min_edits(predict, X, q, y_star).sum()
        E = edit_mask(X, q)
        for mode in ("greedy", "sample", "random"):
            order = action_order(rng.normal(size=(N, P)), E, mode, np.random.default_rng(trial))
            assert min_actions(predict, X, q, y_star, order).c_star >= oracle


def _brute_force_min(predict, x, q, y):
    e = np.flatnonzero(x != q)
    for k in range(len(e) + 1):
        for S in itertools.combinations(e, k):
            z = x.copy()
            z[list(S)] = q[list(S)]
            if predict(z[None])[0] == y:
                return k
    raise AssertionError("unreachable target")


def test_oracle_search_by_size_linear_shortcut_and_budget_agree_with_brute_force():
    rng = np.random.default_rng(11)
    for trial in range(10):
        N, P = 6, 7
        w, b = rng.normal(size=P), rng.normal()
        predict = lambda Z, w=w, b=b: (np.asarray(Z) @ w + b >= 0).astype(int)  # noqa: E731
        X = rng.normal(size=(N, P))
        q = np.where(rng.random(X.shape) < 0.2, X, X + 3 * rng.normal(size=X.shape))
        y = predict(q)  # the target is f(q), whatever it is (0 edits where f(x) already equals it)
        want = np.array([_brute_force_min(predict, X[i], q[i], y[i]) for i in range(len(X))])
        np.testing.assert_array_equal(oracle_min_edits(predict, X, q, y), want)
        np.testing.assert_array_equal(oracle_min_edits(predict, X, q, y, linear=(w, b)), want)
        np.testing.assert_array_equal(oracle_min_edits(predict, X, q, y, max_states=2**P), want)
        small = oracle_min_edits(predict, X, q, y, max_states=1 + P)  # sizes 0 and 1 only
        assert np.all((small == want) | ((small == -1) & (want > 1)))
        phi = rng.normal(size=X.shape)
        assert np.all(per_row_prefix(predict, X, q, y, phi) >= want)
        # the per-row prefix of the gains' order is the linear optimum
        gains = np.where(y[:, None] == 1, 1.0, -1.0) * w[None, :] * (q - X)
        np.testing.assert_array_equal(per_row_prefix(predict, X, q, y, np.maximum(gains, 0) + 1e-9), want)


def test_refined_counterfactuals_are_never_farther_than_q():
    rng = np.random.default_rng(9)
    for _ in range(50):
        N, P = 7, 5
        X = rng.normal(size=(N, P))
        q = np.where(rng.random((N, P)) < 0.2, X, rng.normal(size=(N, P)) * 3)
        E = edit_mask(X, q)
        order = action_order(rng.normal(size=(N, P)), E, "sample", rng)
        for C in (0, int(E.sum()) // 3, int(E.sum())):
            v = proximity_violations(X, q, apply_actions(X, q, order, C))
            assert v == {"L0": 0, "L1": 0, "L2": 0}
    # and the check does detect a row that moved farther
    X, q = np.zeros((1, 2)), np.ones((1, 2))
    assert proximity_violations(X, q, np.array([[3.0, 0.0]])) == {"L0": 0, "L1": 1, "L2": 1}


def test_action_orders_cover_the_edit_set_and_greedy_is_descending():
    rng = np.random.default_rng(10)
    phi = rng.normal(size=(4, 3))
    E = rng.random((4, 3)) < 0.7
    for mode in ("greedy", "sample", "random"):
        order = action_order(phi, E, mode, np.random.default_rng(0))
        assert sorted(order.tolist()) == np.flatnonzero(E.ravel()).tolist()
    g = action_order(phi, E, "greedy")
    assert np.all(np.diff(np.abs(phi.ravel()[g])) <= 0)
    with pytest.raises(ValueError, match="action order"):
        action_order(phi, E, "best")


def test_generators_return_valid_counterfactuals():
    ds = load_dataset("breast_cancer10", seed=0)
    clf = fit_model("lr", ds.X_train, ds.y_train, seed=0)
    X = ds.X_test[clf.predict(ds.X_test) == 0][:8]
    for R, valid in (wachter_ce(clf, X), nun_ce(clf, ds.X_train, X),
                     growing_spheres(clf, X, rng=np.random.default_rng(0)),
                     dice_random(clf, X, ds.X_train, rng=np.random.default_rng(0))):
        assert valid.mean() >= 0.75
        assert np.all(clf.predict(R[valid]) == 1)
    R, _ = nun_ce(clf, ds.X_train, X)
    assert all(any(np.array_equal(r, t) for t in ds.X_train) for r in R)  # NUN rows are training rows


def test_mlp_input_gradient_matches_finite_differences():
    ds = load_dataset("breast_cancer10", seed=0)
    clf = fit_model("mlp", ds.X_train, ds.y_train, seed=0)
    x = ds.X_test[:3]
    p, g = clf.proba_and_grad(x)
    np.testing.assert_allclose(p, clf.proba(x), rtol=1e-10)
    e = 1e-6
    fd = np.stack([(clf.proba(x + e * np.eye(10)[k]) - clf.proba(x - e * np.eye(10)[k])) / (2 * e) for k in range(10)], 1)
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_credit_like_has_german_credit_shape():
    X, y = make_credit_like(1000, 12, seed=0)
    assert X.shape == (1000, 12) and abs((y == 0).mean() - 0.3) < 0.05
    assert np.all(X["installment_rate"].isin([1, 2, 3, 4])) and X["age"].between(19, 75).all()
    X2, y2 = make_credit_like(1000, 12, seed=0)
    assert X.equals(X2) and np.array_equal(y, y2)


def test_german_reader_on_fixture_and_fixture_is_regenerable(tmp_path):
    X, y = load_german(FIXTURE)
    assert X.shape == (120, 20) and set(np.unique(y)) == {0, 1}
    assert X["purpose"].max() <= 10 and X["checking_status"].between(1, 4).all()
    regenerated = ("\n".join(german_fixture_lines(120, 0)) + "\n").encode()
    assert hashlib.sha256(regenerated).hexdigest() == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    bad = tmp_path / "german.data"
    bad.write_text("A11 6 A34\n")
    with pytest.raises(ValueError, match="data_path.*line 1: the line has 3 fields, not 21"):
        load_german(bad)
    bad.write_text(FIXTURE.read_text().replace("A14", "B14", 1))
    with pytest.raises(ValueError, match="data_path.*line 1: attribute 1 \\(checking_status\\) is 'B14'"):
        load_german(bad)
    bad.write_text(FIXTURE.read_text().replace("A30", "A39", 1))  # a code outside the attribute's documented set
    with pytest.raises(ValueError, match="attribute 3 \\(credit_history\\) is 'A39'"):
        load_german(bad)


def test_german_reader_messages_for_common_mistakes(tmp_path):
    import gzip

    gz = tmp_path / "german.data.gz"
    gz.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    with pytest.raises(ValueError, match=r"parameter 'data_path'.*gzip-compressed: decompress it first"):
        load_german(gz)
    csv = tmp_path / "german.csv"
    csv.write_text(FIXTURE.read_text().replace(" ", ","))
    with pytest.raises(ValueError, match=r"line 1: fields are separated by commas"):
        load_german(csv)
    numeric = tmp_path / "german.data-numeric"
    numeric.write_text("\n".join(" ".join(["1"] * 25) for _ in range(30)) + "\n")
    with pytest.raises(ValueError, match=r"german.data-numeric"):
        load_german(numeric)
    few = tmp_path / "few.data"
    few.write_text("\n".join(FIXTURE.read_text().splitlines()[:5]) + "\n")
    with pytest.raises(ValueError, match=r"5 rows; at least 20"):
        load_german(few)
    with pytest.raises(ValueError, match="encoding"):
        load_german(FIXTURE, encoding="binary")


def test_german_onehot_encoding_keeps_the_information():
    Xo, y = load_german(FIXTURE)
    X1, y1 = load_german(FIXTURE, encoding="onehot")
    assert np.array_equal(y, y1)
    cat = [(k, name) for k, (name, kind) in enumerate(GERMAN_ATTRIBUTES, start=1) if kind == "cat"]
    assert X1.shape[1] == 7 + sum(Xo[name].nunique() for _, name in cat)  # one column per level present
    for k, name in cat:
        block = X1[[c for c in X1.columns if c.startswith(name + "=")]]
        assert np.all(block.sum(axis=1) == 1) and set(np.unique(block)) <= {0.0, 1.0}
        levels = np.array([int(c.split("=")[1][len(f"A{k}"):]) for c in block.columns])
        np.testing.assert_array_equal(levels[block.to_numpy().argmax(1)], Xo[name].to_numpy())
    np.testing.assert_array_equal(X1["credit_amount"], Xo["credit_amount"])
    ds = load_dataset("german_onehot", seed=0, data_path=FIXTURE)
    assert ds.n_features == X1.shape[1] and ds.label.endswith("one-hot)")


def test_credit_like_onehot_is_the_ordinal_set_encoded():
    Xo, y = make_credit_like(1000, 12, seed=3)
    X1, y1 = make_credit_like_onehot(1000, 12, seed=3)
    assert X1.shape == (1000, 40) and np.array_equal(y, y1)
    for name in ("checking_status", "savings", "dependents"):
        block = X1[[c for c in X1.columns if c.startswith(name + "=")]].to_numpy()
        assert np.all(block.sum(1) == 1)
        np.testing.assert_array_equal(block.argmax(1) + 1, Xo[name].to_numpy())
    np.testing.assert_array_equal(X1["age"], Xo["age"])


def test_fast_forest_probability_is_sklearns_bit_for_bit():
    ds = load_dataset("credit_like", seed=0)
    clf = fit_model("rf", ds.X_train, ds.y_train, seed=0)
    Z = np.random.default_rng(0).normal(size=(500, ds.n_features))
    np.testing.assert_array_equal(clf.proba(Z), clf.estimator.predict_proba(Z)[:, 1])
    np.testing.assert_array_equal(forest_proba(clf.estimator, Z, cls=0), clf.estimator.predict_proba(Z)[:, 0])
    with pytest.raises(ValueError, match="expects"):
        forest_proba(clf.estimator, Z[:, :3])


def test_pot_is_imported_without_leaving_its_backend_switches():
    import os

    from lib.cola.matching import _ot

    assert hasattr(_ot(), "emd")
    assert not any(k.startswith("POT_BACKEND_DISABLE") for k in os.environ)


def test_p_above_12_uses_sampling_end_to_end_on_the_fixture():
    from lib.cola.pshap import pshap

    ds = load_dataset("german", seed=0, data_path=FIXTURE)
    clf = fit_model("lr", ds.X_train, ds.y_train, seed=0)
    X = ds.X_test[clf.predict(ds.X_test) == 0][:5]
    R, valid = nun_ce(clf, ds.X_train, X)
    X, R = X[valid], R[valid]
    pi = ot_coupling(X, R)
    phi, method = pshap(clf.proba, X, R, pi, n_perm=32, rng=np.random.default_rng(0))
    assert method.startswith("sampling") and phi.shape == X.shape
    q = compose_q(pi, R)
    res = min_actions(clf.predict, X, q, clf.predict(q), action_order(phi, edit_mask(X, q), "greedy"))
    assert 0 < res.c_star <= res.n_edits


def test_config_validates_parameters(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="models"):
        config(models=["xgboost"], out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="n_factuals"):
        config(n_factuals=2, out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        config(data_path=str(tmp_path / "missing.data"), out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="mode"):
        config(mode="fast", out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="encoding"):
        config(encoding="dummy", out_dir=str(tmp_path), verbose=False)
    cfg = config(data_path=str(FIXTURE), out_dir=str(tmp_path), verbose=False)
    assert cfg.datasets == ["breast_cancer10", "german_onehot"] and cfg.n_factuals == 30
    assert cfg.dataset_models["german_onehot"] == ["lr", "mlp"]
    cfg = config(data_path=str(FIXTURE), encoding="ordinal", models=["lr"], out_dir=str(tmp_path), verbose=False)
    assert cfg.datasets == ["breast_cancer10", "german"] and cfg.dataset_models == {}
    broken = tmp_path / "german.data"
    broken.write_text(FIXTURE.read_text().replace(" ", ";"))
    with pytest.raises(ValueError, match="data_path.*semicolons"):  # refused before any work
        config(data_path=str(broken), out_dir=str(tmp_path), verbose=False)
    monkeypatch.chdir(tmp_path)  # notebooks run in notebooks/: a path from the project root is accepted too
    cfg = config(data_path="data/cola/" + FIXTURE_NAME, out_dir=str(tmp_path), verbose=False)
    assert cfg.data_path.resolve() == FIXTURE.resolve()
