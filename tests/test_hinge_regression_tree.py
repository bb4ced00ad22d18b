"""Unit tests of lib.hinge_regression_tree: the node solver, HRTRegressor, the baselines and the data readers."""
import hashlib

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.tree import DecisionTreeRegressor

import lib.hinge_regression_tree as paper
from lib.common import data_dir
from lib.hinge_regression_tree.baselines import LEAF_RIDGE, LinearModelTree
from lib.hinge_regression_tree.data import hinge_function, make_kin_like, read_kin8nm
from lib.hinge_regression_tree.experiments import loglog_slope
from lib.hinge_regression_tree.make_data import write_fixtures
from lib.hinge_regression_tree.solver import (
    CONVERGED_STOPS,
    _moments,
    add_bias,
    gauss_newton_step,
    hinge_objective,
    hinge_split,
    no_descent_cause,
    penalty_matrix,
    refit_sides,
    ridge_ols,
    solve_direction,
    split_vector,
)
from lib.hinge_regression_tree.tree import HRTRegressor

DATA = data_dir("hinge_regression_tree")


def _wavy(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0] + X[:, 1]) + np.abs(X[:, 2] - 0.5 * X[:, -1]) + 0.1 * rng.normal(size=n)
    return X, y


# --- node solver -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_ridge_ols_matches_normal_equations(alpha):
    rng = np.random.default_rng(1)
    X, z = rng.normal(size=(50, 3)) * [1, 5, 0.2] + 3.0, rng.normal(size=50)
    Xt = add_bias(X)
    want = np.linalg.solve(Xt.T @ Xt + penalty_matrix(3, alpha), Xt.T @ z)
    assert np.allclose(ridge_ols(X, z, alpha), want, atol=1e-10, rtol=0)


@pytest.mark.parametrize("alpha,envelope", [(0.0, "min"), (0.0, "max"), (1.3, "min"), (1.3, "max")])
def test_gauss_newton_step_from_jacobian_equals_block_ridge_refit(alpha, envelope):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    z = np.abs(X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=80)
    th1, th2 = rng.normal(size=4), rng.normal(size=4)
    left = (add_bias(X) @ split_vector(th1, th2, envelope)) < 0
    assert 10 < left.sum() < 70
    g1, g2 = gauss_newton_step(X, z, th1, th2, left, alpha)
    r1, r2 = ridge_ols(X[left], z[left], alpha), ridge_ols(X[~left], z[~left], alpha)
    assert np.max(np.abs(g1 - r1)) < 1e-8 and np.max(np.abs(g2 - r2)) < 1e-8
    # and the solver's first full step (s = 1) lands exactly there
    res = solve_direction(X, z, th1, th2, envelope=envelope, step=1.0, ridge_alpha=alpha, max_iter=1, min_seg=4)
    assert np.max(np.abs(res.theta1 - r1)) < 1e-8 and np.max(np.abs(res.theta2 - r2)) < 1e-8


def test_damped_step_is_convex_combination():
    rng = np.random.default_rng(3)
    X, z = rng.normal(size=(60, 2)), rng.normal(size=60)
    th1, th2 = np.array([1.0, 0.0, 0.1]), np.array([-1.0, 0.0, 0.0])
    left = (add_bias(X) @ split_vector(th1, th2, "min")) < 0
    r1, r2 = ridge_ols(X[left], z[left]), ridge_ols(X[~left], z[~left])
    res = solve_direction(X, z, th1, th2, envelope="min", step=0.25, max_iter=1, min_seg=3)
    assert np.allclose(res.theta1, 0.75 * th1 + 0.25 * r1) and np.allclose(res.theta2, 0.75 * th2 + 0.25 * r2)


def test_hinge_objective_is_the_envelope():
    rng = np.random.default_rng(4)
    X, z = rng.normal(size=(40, 2)), rng.normal(size=40)
    Xt = add_bias(X)
    t1, t2 = rng.normal(size=3), rng.normal(size=3)
    for env, f in (("min", np.minimum), ("max", np.maximum)):
        _, r, _ = hinge_objective(Xt, z, t1, t2, env)
        assert r == pytest.approx(np.sqrt(np.mean((z - f(Xt @ t1, Xt @ t2)) ** 2)), abs=1e-12)


def test_backtracking_objective_never_increases_and_fixed_steps_can():
    X, y = _wavy(600, 5, seed=5)
    auto = HRTRegressor(threshold=0.0, max_depth=4, step_size="auto", ridge_alpha=1.0).fit(X, y)
    runs = [r for e in auto.solve_log_ for r in e["runs"]]
    assert len(runs) > 10
    for r in runs:
        d = np.diff(r["trace"])
        assert np.all(d < -1e-8 + 1e-15), r["trace"]  # every accepted step lowers the RMSE by > 1e-8
        assert r["stop"] != "cap"
    # a full Gauss-Newton step (s = 1) is not a descent method: on this data it raises the objective somewhere
    full = HRTRegressor(threshold=0.0, max_depth=4, step_size=1.0, ridge_alpha=1.0).fit(X, y)
    assert max(np.max(np.diff(r["trace"]), initial=0) for e in full.solve_log_ for r in e["runs"]) > 1e-6


def test_hinge_split_picks_the_right_envelope():
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(300, 2))
    concave = np.minimum(X[:, 0] + 0.2, -X[:, 0] + 0.5 * X[:, 1])
    assert hinge_split(X, concave, step="auto").best.envelope == "min"
    assert hinge_split(X, -concave, step="auto").best.envelope == "max"


# --- HRTRegressor --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["max", "min"])
def test_depth1_tree_recovers_a_noiseless_hinge(shape):
    rng = np.random.default_rng(7)
    d = 3
    a1, a2 = np.array([1.0, 2.0, -1.0, 0.3]), np.array([-1.0, 0.5, 1.0, -0.2])
    f = np.maximum if shape == "max" else np.minimum
    X, Xte = rng.uniform(-1, 1, size=(500, d)), rng.uniform(-1, 1, size=(5000, d))
    y = f(add_bias(X) @ a1, add_bias(X) @ a2)
    yte = f(add_bias(Xte) @ a1, add_bias(Xte) @ a2)
    m = HRTRegressor(threshold=0.0, max_depth=1, step_size="auto", ridge_alpha=0.0).fit(X, y)
    assert m.n_leaves() == 2
    assert np.sqrt(np.mean((m.predict(Xte) - yte) ** 2)) < 1e-6
    w, true = m.tree_.split[0], a1 - a2
    assert abs(w @ true) / (np.linalg.norm(w) * np.linalg.norm(true)) > 0.999


def test_predict_at_depth_equals_a_shallower_fit():
    X, y = _wavy(500, 3, seed=8)
    deep = HRTRegressor(threshold=0.0, max_depth=5, step_size="auto", ridge_alpha=0.5, random_state=3).fit(X, y)
    for k in (1, 2, 4):
        shallow = HRTRegressor(threshold=0.0, max_depth=k, step_size="auto", ridge_alpha=0.5, random_state=3)
        shallow.fit(X, y)
        assert np.allclose(deep.predict_at_depth(X, k), shallow.predict(X), atol=1e-12)
        assert deep.n_leaves_at_depth(k) == shallow.n_leaves_
    assert np.allclose(deep.predict_at_depth(X, 5), deep.predict(X))


def test_leaves_and_iteration_counts_are_consistent():
    X, y = _wavy(500, 4, seed=9)
    m = HRTRegressor(threshold=0.0, max_depth=4, step_size="auto", ridge_alpha=1.0).fit(X, y)
    n_split = int(np.sum(~m.tree_.is_leaf))
    assert m.n_leaves() == m.n_leaves_ == m.get_n_leaves() == n_split + 1
    assert len(m.iter_counts_) == n_split and all(1 <= k <= 100 for k in m.iter_counts_)
    assert len(np.unique(m.apply(X))) <= m.n_leaves_
    assert m.tree_.n_samples[m.tree_.is_leaf].sum() == len(y)


def test_threshold_makes_a_linear_target_one_leaf():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -2.0, 0.5] + 3.0
    m = HRTRegressor(threshold=1e-6, max_depth=5).fit(X, y)
    assert m.n_leaves_ == 1 and np.allclose(m.predict(X), y)


@pytest.mark.parametrize("case", ["all_constant", "one_constant", "duplicated_rows", "few_distinct", "too_few",
                                  "just_below_split_size"])
def test_degenerate_data_gives_leaves_never_nan(case):
    rng = np.random.default_rng(11)
    y = rng.normal(size=60)
    if case == "all_constant":
        X = np.ones((60, 3))
    elif case == "one_constant":
        X = rng.normal(size=(60, 3))
        X[:, 1] = 2.5
    elif case == "duplicated_rows":
        X = np.tile(rng.normal(size=(1, 3)), (60, 1))
    elif case == "few_distinct":
        X = np.repeat(rng.normal(size=(3, 4)), 20, axis=0)
    elif case == "too_few":
        X, y = rng.normal(size=(3, 5)), y[:3]
    else:  # one point fewer than two sides of max(min_points, d + 1) = 5 points
        X, y = rng.normal(size=(9, 3)), y[:9]
    for step in ("auto", 0.1):
        m = HRTRegressor(threshold=0.0, max_depth=4, step_size=step, ridge_alpha=0.0).fit(X, y)
        p = m.predict(X)
        assert np.all(np.isfinite(p)) and np.all(np.isfinite(m.tree_.theta))
        if case in ("all_constant", "duplicated_rows", "too_few", "just_below_split_size"):
            assert m.n_leaves_ == 1
        if case in ("all_constant", "duplicated_rows"):
            assert np.allclose(p, y.mean())


def test_sklearn_api_round_trips():
    m = HRTRegressor(max_depth=3, step_size="auto", ridge_alpha=0.5, random_state=4)
    params = m.get_params()
    assert params["max_depth"] == 3 and params["step_size"] == "auto"
    c = clone(m)
    assert c.get_params() == params and c is not m
    c.set_params(max_depth=2, step_size=0.2)
    assert c.max_depth == 2 and m.max_depth == 3
    X, y = _wavy(200, 3, seed=12)
    a, b = clone(m).fit(X, y), clone(m).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))
    assert a.score(X, y) > 0.5
    with pytest.raises(ValueError, match="step_size"):
        HRTRegressor(step_size="fast").fit(X, y)
    with pytest.raises(ValueError, match="max_depth"):
        HRTRegressor(max_depth=-1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        a.predict(X[:, :2])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
@pytest.mark.parametrize("est", [HRTRegressor(), HRTRegressor(step_size="auto", ridge_alpha=1.0, threshold=0.0),
                                 LinearModelTree()])
def test_sklearn_check_estimator(est):
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(est)


# --- baselines -----------------------------------------------------------------------------------------------------


def test_linear_model_tree_root_split_is_the_brute_force_best():
    rng = np.random.default_rng(13)
    X = rng.uniform(-1, 1, size=(120, 3))
    y = np.where(X[:, 1] > 0.2, 2 * X[:, 0], -X[:, 2]) + 0.01 * rng.normal(size=120)
    m = LinearModelTree(max_depth=1, min_samples_leaf=10, min_samples_split=20, max_bins=16).fit(X, y)
    best = (np.inf, None, None)
    for j in range(3):
        xs = np.sort(X[:, j])
        for q in np.unique(np.quantile(xs, np.linspace(0, 1, 17)[1:-1])):
            go = X[:, j] <= q
            if go.sum() < 10 or (~go).sum() < 10:
                continue
            sse = sum(np.sum((y[s] - add_bias(X[s]) @ ridge_ols(X[s], y[s], LEAF_RIDGE)) ** 2) for s in (go, ~go))
            if sse < best[0]:
                best = (sse, j, go)
    assert m.feature_[0] == best[1] == 1
    assert np.array_equal(X[:, 1] <= m.threshold_[0], best[2])


def test_linear_model_tree_truncation_and_linear_target():
    rng = np.random.default_rng(14)
    X = rng.normal(size=(300, 3))
    y = np.abs(X[:, 0]) + X[:, 1]
    deep = LinearModelTree(max_depth=4, min_samples_leaf=10).fit(X, y)
    for k in (1, 2, 3):
        assert np.allclose(deep.predict_at_depth(X, k), LinearModelTree(max_depth=k, min_samples_leaf=10).fit(
            X, y).predict(X))
    lin = LinearModelTree(max_depth=4).fit(X, X @ [1.0, 2.0, -1.0] + 0.5)
    assert np.allclose(lin.predict(X), X @ [1.0, 2.0, -1.0] + 0.5, atol=1e-5)


def test_hrt_beats_cart_on_an_oblique_hinge_with_fewer_leaves():
    rng = np.random.default_rng(15)
    X, Xte = rng.uniform(-1, 1, size=(800, 4)), rng.uniform(-1, 1, size=(2000, 4))
    y = hinge_function(X) + 0.05 * rng.normal(size=800)
    hrt = HRTRegressor(threshold=0.0, max_depth=3, step_size="auto", ridge_alpha=0.0).fit(X, y)
    cart = DecisionTreeRegressor(max_depth=8, random_state=0).fit(X, y)
    e_h = np.sqrt(np.mean((hrt.predict(Xte) - hinge_function(Xte)) ** 2))
    e_c = np.sqrt(np.mean((cart.predict(Xte) - hinge_function(Xte)) ** 2))
    assert e_h < 0.5 * e_c and hrt.n_leaves_ < cart.get_n_leaves() / 4


# --- data ----------------------------------------------------------------------------------------------------------


def test_kin8nm_reader_accepts_both_distributed_layouts():
    Xw, yw = read_kin8nm(DATA / "kin8nm_delve_sample.data")
    Xc, yc = read_kin8nm(DATA / "kin8nm_hrt_sample.data")
    assert Xw.shape == Xc.shape == (64, 8) and yw.shape == (64,)
    assert np.allclose(Xw, Xc, atol=1e-6) and np.allclose(yw, yc, atol=1e-6)


@pytest.mark.parametrize("name,msg", [("kin8nm_bad_columns.data", "8 fields, not 9"),
                                      ("kin8nm_bad_header.data", "a header row?"),
                                      ("kin8nm_bad_semicolon.data", "separated by semicolons")])
def test_kin8nm_reader_rejects_other_files(name, msg):
    with pytest.raises(ValueError, match="data_path") as err:
        read_kin8nm(DATA / name)
    assert msg in str(err.value)
    with pytest.raises(ValueError, match="data_path"):
        paper.config(data_path=str(DATA / name), out_dir=None, verbose=False)


def test_kin8nm_reader_rejects_mixed_and_missing(tmp_path):
    p = tmp_path / "mixed.data"
    p.write_text("1,2,3,4,5,6,7,8,9\n1 2 3 4 5 6 7 8 9\n")
    with pytest.raises(ValueError, match="line 2: the line has no commas"):
        read_kin8nm(p)
    p.write_text("1 2 3 4 5 6 7 8 9\n1,2,3,4,5,6,7,8,9\n")
    with pytest.raises(ValueError, match="line 2: fields are separated by commas"):
        read_kin8nm(p)
    p.write_text("1,2,3,4,5,6,7,8,9\n1,2,3,4,5,6,7,8,nan\n")
    with pytest.raises(ValueError, match="missing value"):
        read_kin8nm(p)
    p.write_text("1,2,3,4,5,6,7,8,9\n1,2,3,4,5,6,7,8,inf\n")
    with pytest.raises(ValueError, match="non-finite"):
        read_kin8nm(p)
    p.write_text("1,2,3,4,5,6,7,8,9\n2,3,4,5,6,7,8,9,9\n")
    with pytest.raises(ValueError, match="target column"):
        read_kin8nm(p)
    p.write_text("\n\n")
    with pytest.raises(ValueError, match="blank"):
        read_kin8nm(p)


@pytest.mark.parametrize("content,msg", [(b"", "empty"), (b"\x00\x01\x02" * 50, "binary"),
                                         ("bz2", "bzip2-compressed: decompress")])
def test_kin8nm_reader_names_the_parameter_for_non_text_files(tmp_path, content, msg):
    import bz2

    p = tmp_path / "kin8nm.data"
    p.write_bytes(bz2.compress((DATA / "kin8nm_hrt_sample.data").read_bytes()) if content == "bz2" else content)
    with pytest.raises(ValueError, match=msg) as err:
        read_kin8nm(p)
    assert "'data_path'" in str(err.value) and "kin8nm as distributed" in str(err.value)


def test_kin8nm_reader_reads_delve_gzip(tmp_path):
    import gzip

    p = tmp_path / "Dataset.data.gz"
    p.write_bytes(gzip.compress((DATA / "kin8nm_delve_sample.data").read_bytes()))
    X, y = read_kin8nm(p)
    Xw, yw = read_kin8nm(DATA / "kin8nm_delve_sample.data")
    assert np.array_equal(X, Xw) and np.array_equal(y, yw)
    p.write_bytes(gzip.compress(b"1 2 3\n4 5 6\n"))
    with pytest.raises(ValueError, match="3 fields, not 9"):
        read_kin8nm(p)


def test_loaders_declare_the_kin8nm_reader():
    loader = paper.LOADERS["data_path"]
    X, y = loader(loader.fixture_path())
    assert X.shape == (64, 8) and y.shape == (64,)


def test_shipped_fixtures_are_what_make_data_writes(tmp_path):
    digests = write_fixtures(tmp_path)
    for name, digest in digests.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


def test_data_path_replaces_the_kin_like_stand_in(tmp_path):
    from lib.hinge_regression_tree.data import load_dataset

    X, y, label = load_dataset("kin_like", 32, np.random.default_rng(0), DATA / "kin8nm_hrt_sample.data")
    assert X.shape == (32, 8) and "kin8nm" in label


def test_kin_like_noise_level():
    X, y0 = make_kin_like(4000, np.random.default_rng(16), noise="none")
    _, y1 = make_kin_like(4000, np.random.default_rng(16), noise="medium")
    assert X.shape == (4000, 8) and np.all(np.abs(X) <= np.pi / 4)
    assert np.var(y1 - y0) / np.var(y0) == pytest.approx(0.1, rel=0.1)


def test_config_validates_parameters():
    with pytest.raises(ValueError, match="'mode'"):
        paper.config(mode="fast", verbose=False)
    with pytest.raises(ValueError, match="'step_size'"):
        paper.config(step_size=1.5, verbose=False)
    with pytest.raises(ValueError, match="'n_samples'"):
        paper.config(n_samples=5, verbose=False)
    with pytest.raises(ValueError, match="'data_path'"):
        paper.config(data_path="/no/such/kin8nm.data", verbose=False)


def test_loglog_slope_recovers_a_power_law():
    k = np.array([2, 4, 8, 16, 32, 64])
    assert loglog_slope(k, 3.0 * k**-2.0, 2, 32) == pytest.approx(-2.0)
    assert np.isnan(loglog_slope(k, k**-1.0, 100, 200))


def test_benchmark_runs_on_a_kin8nm_file(tmp_path):
    from lib.hinge_regression_tree.experiments import run_benchmark

    cfg = paper.config(data_path=str(DATA / "kin8nm_delve_sample.data"), n_reps=1, out_dir=str(tmp_path),
                       verbose=False)
    cfg.params["datasets"] = ("kin_like",)
    res = run_benchmark(cfg)
    assert res.labels["kin_like"] == "kin8nm (file)"
    assert set(res.scores.method) == set(paper.experiments.METHODS) | {paper.experiments.HRT_TUNED}
    assert np.all(np.isfinite(res.scores.rmse)) and len(res.scores) == 6
    for m in ("CART", "LinearTree-lite", paper.experiments.HRT_TUNED):
        assert res.tuned["kin_like"][m]["rule"] == "one-SE"
    table = paper.single_tree_table(res)
    assert table.loc["kin_like", "data set"] == "kin8nm (file)"


# --- solver internals added for speed and diagnosis -----------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_refit_sides_equals_ridge_ols_on_each_side(alpha):
    rng = np.random.default_rng(20)
    X, z = rng.normal(size=(90, 3)) + [0.0, 4.0, -2.0], rng.normal(size=90)
    for frac in (0.2, 0.5, 0.8):
        left = rng.random(90) < frac
        a, b = refit_sides(X, z, left, alpha, _moments(X, z))
        assert np.allclose(a, ridge_ols(X[left], z[left], alpha), atol=1e-9)
        assert np.allclose(b, ridge_ols(X[~left], z[~left], alpha), atol=1e-9)


def test_ridge_ols_minimum_norm_on_singular_data():
    rng = np.random.default_rng(21)
    X = np.tile(rng.normal(size=(1, 3)), (12, 1))
    z = rng.normal(size=12)
    assert np.allclose(ridge_ols(X, z, 0.0), np.r_[0.0, 0.0, 0.0, z.mean()], atol=1e-12)
    X = rng.normal(size=(40, 3))
    X[:, 2] = 2 * X[:, 0]  # collinear columns: the minimum-norm solution, as lstsq gives it
    z = X @ [1.0, -1.0, 0.5] + 0.3
    Xc = X - X.mean(axis=0)
    want = np.linalg.lstsq(Xc, z - z.mean(), rcond=None)[0]
    assert np.allclose(ridge_ols(X, z, 0.0)[:3], want, atol=1e-8)


def test_no_descent_cause_classifies_the_three_cases():
    rng = np.random.default_rng(22)
    X = rng.normal(size=(200, 2))
    z = np.maximum(X[:, 0], -X[:, 1]) + 0.1 * rng.normal(size=200)
    Xt = add_bias(X)
    left = X[:, 0] < 0.1
    ols = [ridge_ols(X[m], z[m], 0.0) for m in (left, ~left)]
    rid = [ridge_ols(X[m], z[m], 5.0) for m in (left, ~left)]
    p = [Xt @ t for t in ols]
    # the pieces already are the refit of their partition: stationary
    cause, dec, _ = no_descent_cause(z, left, *p, *p, *ols, *ols, 0.0, "max", 5)
    assert cause == "stationary" and abs(dec) < 1e-12
    # OLS pieces, ridge target: the target lowers the penalised objective but raises the plain RMSE
    cause, dec, _ = no_descent_cause(z, left, *p, *(Xt @ t for t in rid), *ols, *rid, 5.0, "max", 5)
    assert cause == "ridge" and dec > 1e-8
    # pieces off their refit: the target lowers the plain RMSE on the fixed partition
    off = [t + 0.3 for t in ols]
    cause, dec, _ = no_descent_cause(z, left, *(Xt @ t for t in off), *p, *off, *ols, 0.0, "max", 5)
    assert cause == "kinks" and dec > 1e-8


def test_solver_reports_its_final_objective_and_convergence():
    X, y = _wavy(500, 3, seed=23)
    m = HRTRegressor(threshold=0.0, max_depth=3, step_size="auto", ridge_alpha=1.0).fit(X, y)
    for e in m.solve_log_:
        for r in e["runs"]:
            assert r["converged"] == (r["stop"] in CONVERGED_STOPS or r["no_descent"] == "stationary")
            assert (r["no_descent"] != "") == (r["stop"] == "no_descent")
    Xs = X[:200]
    res = hinge_split(Xs, y[:200], step="auto", ridge_alpha=1.0).best
    valid, rmse, left = hinge_objective(add_bias(Xs), y[:200], res.theta1, res.theta2, res.envelope, 5)
    assert valid and rmse == pytest.approx(res.rmse, abs=1e-12) and np.array_equal(left, res.left)
    assert res.trace[-1] == pytest.approx(res.rmse, abs=1e-9)


def test_predict_depths_matches_predict_at_depth():
    X, y = _wavy(400, 3, seed=24)
    m = HRTRegressor(threshold=0.0, max_depth=4, step_size="auto").fit(X, y)
    P = m.predict_depths(X, range(0, 6))
    for d in range(0, 6):
        assert np.allclose(P[d], m.predict_at_depth(X, d))
    assert np.allclose(P[5], m.predict(X))


# --- tuning and comparison ------------------------------------------------------------------------------------------


def test_one_se_rule_takes_the_most_compact_point_within_one_se():
    import pandas as pd
    from lib.hinge_regression_tree.experiments import one_se_choice

    t = pd.DataFrame({"params": [{"d": 3}, {"d": 5}, {"d": 7}, {"d": 9}], "mse": [1.30, 1.08, 1.00, 1.01],
                      "se": [0.05, 0.05, 0.05, 0.05], "leaves": [8, 32, 110, 300]})
    assert one_se_choice(t).params == {"d": 7}  # 1.08 > 1.00 + 0.05
    t.loc[1, "mse"] = 1.04
    assert one_se_choice(t).params == {"d": 5}
    t.loc[:, "se"] = 0.5
    assert one_se_choice(t).params == {"d": 3}


def test_single_tree_table_compares_with_the_best_single_tree():
    import pandas as pd
    from lib.hinge_regression_tree.experiments import HRT_TUNED, BenchmarkResult

    rows = []
    for m, r, k in (("HRT", 1.0, 40), (HRT_TUNED, 0.9, 8), ("CART", 1.2, 100), ("LinearTree-lite", 0.95, 10),
                    ("Ridge", 1.5, np.nan), ("HGB", 0.9, np.nan)):
        rows += [{"dataset": "a", "method": m, "rep": rep, "rmse": r, "leaves": k} for rep in (0, 1)]
    res = BenchmarkResult(pd.DataFrame(rows), {}, {"a": "set a"})
    t = paper.single_tree_table(res)
    assert t.loc["a", "best single tree"] == "LinearTree-lite"  # HGB is an ensemble, not a single tree
    assert t.loc["a", "rmse ratio"] == pytest.approx(1.0 / 0.95) and t.loc["a", "leaf ratio"] == pytest.approx(4.0)
    assert not t.loc["a", "within 5%"] and not t.loc["a", "at most its leaves"]
    assert t.loc["a", "CART leaf ratio"] == pytest.approx(0.4)
    assert t.loc["a", "one-SE HRT leaf ratio"] == pytest.approx(0.8)


def test_split_balance_of_a_median_split():
    from lib.hinge_regression_tree.experiments import split_balance

    X = np.linspace(-1, 1, 401).reshape(-1, 1)
    y = np.abs(X[:, 0])
    m = HRTRegressor(threshold=0.0, max_depth=1, step_size="auto", ridge_alpha=0.0).fit(X, y)
    assert split_balance(m) == pytest.approx([0.5], abs=0.01)


def test_study_settings_follow_the_mode():
    from lib.hinge_regression_tree.experiments import study_settings

    assert list(study_settings(paper.config(verbose=False))) == ["auto", "0.1"]
    assert list(study_settings(paper.config(mode="full", verbose=False))) == ["auto", "0.5", "0.1", "auto, α=0"]
    assert "auto, α=0" not in study_settings(paper.config(mode="full", ridge_alpha=0.0, verbose=False))
