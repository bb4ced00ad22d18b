"""Unit tests of lib.rp_ensemble_sdr: projections, the batched base, Algorithms 1-3, the baselines, the metric and
the UCI reader."""
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import PolynomialFeatures

import lib.rp_ensemble_sdr as paper
from lib.common import data_dir
from lib.common.userfiles import UserFileError
from lib.rp_ensemble_sdr import base, baselines
from lib.rp_ensemble_sdr.data import make_model, read_uci, true_basis
from lib.rp_ensemble_sdr.experiments import convergence
from lib.rp_ensemble_sdr.make_data import communities_text, superconductivity_text
from lib.rp_ensemble_sdr.metrics import projector, subspace_dist
from lib.rp_ensemble_sdr.projections import draw_projections
from lib.rp_ensemble_sdr.rpedr import (dim_from_singular_values, null_singular_values, rpedr, rpedr_dim_est,
                                       rpedr_double, svd_sym)

DATA = data_dir("rp_ensemble_sdr")


# --- projections -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dist", ["mixed", "norm", "cauchy"])
def test_projection_columns_have_unit_norm_and_are_not_orthogonalised(dist):
    A = draw_projections(15, 4, 200, dist, np.random.default_rng(1))
    assert A.shape == (200, 15, 4)
    np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0, atol=1e-12)
    gram = A.transpose(0, 2, 1) @ A
    off = np.abs(gram[:, ~np.eye(4, dtype=bool)])
    assert off.max() > 0.3  # columns are not orthogonal (an orthogonalised draw would have ~0 here)
    np.testing.assert_allclose(np.trace(A @ A.transpose(0, 2, 1), axis1=1, axis2=2), 4.0)


def test_mixed_blocks_are_wholly_gaussian_or_wholly_cauchy():
    # p = 400: a Gaussian unit column has max |a| about 0.18; a Cauchy one is dominated by its largest entry.
    A, gauss = draw_projections(400, 12, 300, "mixed", np.random.default_rng(7), return_kind=True)
    peak = np.abs(A).max(axis=1)  # (M, d): largest entry of each unit column
    assert 0.4 < gauss.mean() < 0.6
    assert peak[gauss].max() < 0.35  # no Cauchy column inside a Gaussian block
    assert np.median(peak[~gauss], axis=1).min() > 0.35  # every Cauchy block is Cauchy-like column by column
    assert (peak[~gauss] > 0.35).mean() > 0.8
    _, g_only = draw_projections(10, 2, 50, "norm", np.random.default_rng(0), return_kind=True)
    _, c_only = draw_projections(10, 2, 50, "cauchy", np.random.default_rng(0), return_kind=True)
    assert g_only.all() and not c_only.any()


def test_bad_distribution_is_refused():
    with pytest.raises(ValueError, match="dist"):
        draw_projections(5, 2, 3, "uniform")


# --- the batched base regression --------------------------------------------------------------------------------
def test_quadratic_design_matches_polynomialfeatures():
    Z = np.random.default_rng(2).standard_normal((6, 30, 4))
    F = base.quad_features(Z)
    ref = PolynomialFeatures(degree=2).fit_transform(Z[3])
    assert F.shape == (6, 30, base.n_features(4)) == (6, 30, 15)
    np.testing.assert_allclose(F[3], ref, atol=1e-12)
    # and it spans the same column space (projector onto the columns agrees)
    np.testing.assert_allclose(projector(F[3]), projector(ref), atol=1e-8)


@pytest.mark.parametrize("kind", ["quad", "linear"])
def test_batched_validation_mse_matches_sklearn(kind):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((90, 7))
    y = X[:, 0] ** 2 - X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(90)
    A = draw_projections(7, 3, 5, "mixed", rng)
    mse = base.batched_val_mse(X[:60], y[:60], X[60:], y[60:], A, kind=kind)
    for m in range(5):
        Ztr, Zva = X[:60] @ A[m], X[60:] @ A[m]
        if kind == "quad":
            pf = PolynomialFeatures(degree=2, include_bias=False)
            Ztr, Zva = pf.fit_transform(Ztr), pf.transform(Zva)
        pred = LinearRegression().fit(Ztr, y[:60]).predict(Zva)
        assert mse[m] == pytest.approx(np.mean((pred - y[60:]) ** 2), rel=1e-6)


# --- Algorithms 1-3 ---------------------------------------------------------------------------------------------
def test_pstar_is_symmetric_psd_with_trace_d():
    X, y, _ = make_model("M3", 120, 9, np.random.default_rng(4))
    fit = rpedr(X, y, L=12, M=30, rng=np.random.default_rng(5))
    P = fit.P()
    assert fit.d == 3
    np.testing.assert_allclose(P, P.T, atol=1e-14)
    assert np.linalg.eigvalsh(P).min() > -1e-12
    assert np.trace(P) == pytest.approx(3.0)
    assert fit.D.sum() == pytest.approx(3.0)
    np.testing.assert_allclose(fit.U @ np.diag(fit.D) @ fit.U.T, P, atol=1e-12)
    assert np.all(np.diff(fit.D) <= 1e-12)
    assert fit.n_fits == 12 * 30


def test_rpedr_finds_a_planted_direction_and_is_deterministic():
    X, y, B0 = make_model("M1a", 200, 10, np.random.default_rng(6))
    a = rpedr(X, y, L=40, M=50, rng=np.random.default_rng(8))
    b = rpedr(X, y, L=40, M=50, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(a.U, b.U)
    assert subspace_dist(B0, a.U[:, :1]) < 0.5
    # a random direction in R^10 is at distance about 1.37 from B0
    assert subspace_dist(B0, np.random.default_rng(0).standard_normal((10, 1))) > 1.0


def test_nested_prefix_matches_a_shorter_mean():
    X, y, _ = make_model("M2", 100, 6, np.random.default_rng(9))
    fit = rpedr(X, y, L=10, M=20, rng=np.random.default_rng(1))
    A = fit.selected[:4]
    np.testing.assert_allclose(fit.P(4), sum(a @ a.T for a in A) / 4)


def test_dimension_rule_on_hand_made_singular_values():
    D_med = np.array([0.40, 0.35, 0.30, 0.25, 0.20])
    assert dim_from_singular_values([0.90, 0.60, 0.20, 0.20, 0.10], D_med) == 2
    assert dim_from_singular_values([0.30, 0.60, 0.50, 0.30, 0.30], D_med) == 0  # first below: none counted
    assert dim_from_singular_values([0.90, 0.35, 0.29, 0.26, 0.20], D_med) == 2  # equal is not below
    assert dim_from_singular_values([0.90, 0.50, 0.40, 0.30, 0.19], D_med) == 4
    assert dim_from_singular_values(D_med, D_med) == 5  # nothing below: all counted (R would give 0)
    assert rpedr_dim_est(np.array([0.9, 0.6, 0.2, 0.2, 0.1]), L=5, D_med=D_med) == 2


def test_null_spectra_sum_to_d_and_sit_near_d_over_p():
    S = null_singular_values(12, 4, 30, R=50, dist="mixed", rng=np.random.default_rng(2))
    np.testing.assert_allclose(S.sum(axis=1), 4.0, atol=1e-10)
    assert np.all(np.diff(S, axis=1) <= 1e-12)
    assert abs(np.median(S, axis=0).mean() - 4 / 12) < 0.01  # the medians of the order statistics average ~d/p
    assert np.median(S, axis=0)[0] > 4 / 12 > np.median(S, axis=0)[-1]


def test_double_keeps_the_first_fit_when_d_hat_is_small_and_refines_inside_its_span():
    X, y, _ = make_model("M3", 150, 8, np.random.default_rng(3))
    fit = rpedr(X, y, L=20, M=40, rng=np.random.default_rng(4))
    low = rpedr_double(X, y, 2, fit, D_med=np.full(8, 10.0))  # every D below: d_hat = 0 <= d0
    assert low.d_hat == 0 and low.second is None
    np.testing.assert_array_equal(low.B, fit.U[:, :2])
    high = rpedr_double(X, y, 1, fit, D_med=np.zeros(8) - 1, rng=np.random.default_rng(5))  # d_hat = 8
    assert high.d_hat == 8 and high.second is not None and high.second.d == 3 and high.second.M == 80
    assert high.B.shape == (8, 1)


# --- the metric ---------------------------------------------------------------------------------------------------
def test_subspace_distance_is_symmetric_basis_free_and_bounded():
    rng = np.random.default_rng(0)
    B, C = rng.standard_normal((9, 2)), rng.standard_normal((9, 2))
    R = np.array([[2.0, 1.0], [-0.5, 3.0]])
    assert subspace_dist(B, C) == pytest.approx(subspace_dist(C, B))
    assert subspace_dist(B, C) == pytest.approx(subspace_dist(B @ R, C))
    assert subspace_dist(B, B @ R) == pytest.approx(0.0, abs=1e-12)
    E = np.eye(9)
    assert subspace_dist(E[:, :2], E[:, 2:4]) == pytest.approx(2.0)  # orthogonal 2-d spans: sqrt(2 d0)
    assert subspace_dist(E[:, :2], E[:, 1:3]) == pytest.approx(np.sqrt(2.0))


# --- baselines ----------------------------------------------------------------------------------------------------
def _dr_bruteforce(Z, y, n_slices):
    """Li & Wang's E[(2I - E[(Z - Z')(Z - Z')^T | Y, Y'])^2] over independent pairs of slices."""
    p = Z.shape[1]
    mom = []
    for s in baselines.slices(y, n_slices):
        Zs = Z[s]
        mom.append((len(s) / len(y), Zs.mean(axis=0), Zs.T @ Zs / len(s)))
    out = np.zeros((p, p))
    for ph, mh, Sh in mom:
        for pk, mk, Sk in mom:
            A = 2 * np.eye(p) - (Sh + Sk - np.outer(mh, mk) - np.outer(mk, mh))
            out += ph * pk * A @ A
    return out


def test_dr_matrix_equals_the_pairwise_definition():
    rng = np.random.default_rng(1)
    X, y, _ = make_model("M2", 300, 5, rng)
    Z, _ = baselines.standardise(X)
    np.testing.assert_allclose(baselines.dr_matrix(Z, y, 7), _dr_bruteforce(Z, y, 7), atol=1e-10)


def test_opg_moments_match_local_weighted_least_squares():
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((25, 3))
    y = np.sin(Z[:, 0]) + Z[:, 1] ** 2
    h, ridge = 1.2, 1e-3
    grads = []
    for j in range(25):
        w = np.exp(-np.sum((Z - Z[j]) ** 2, axis=1) / (2 * h * h))
        D = np.c_[np.ones(25), Z - Z[j]]
        G = D.T @ (D * w[:, None]) + ridge * w.sum() * np.diag([0, 1, 1, 1])
        grads.append(np.linalg.solve(G, D.T @ (w * y))[1:])
    b = np.array(grads)
    np.testing.assert_allclose(baselines.opg_matrix(Z, y, h, ridge), b.T @ b / 25, atol=1e-10)


def test_baselines_on_textbook_cases():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 6))
    b = np.array([1.0, -1.0, 0, 0, 0, 0]) / np.sqrt(2)
    y_lin = X @ b + 0.1 * rng.standard_normal(400)
    y_sym = (X @ b) ** 2 + 0.1 * rng.standard_normal(400)
    for m in ("SIR", "DR", "OPG"):
        assert subspace_dist(b, paper.sdr(m, X, y_lin, 1, opg_scale=0.5)) < 0.2, m
    for m in ("SAVE", "pHd", "DR"):
        assert subspace_dist(b, paper.sdr(m, X, y_sym, 1)) < 0.3, m
    assert subspace_dist(b, paper.sdr("SIR", X, y_sym, 1)) > 0.8  # SIR is blind to an even link


def test_baselines_return_directions_in_the_original_scale():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((500, 4)) * np.array([1.0, 10.0, 0.1, 3.0])
    y = X[:, 1] / 10 + 0.05 * rng.standard_normal(500)
    B = paper.sdr("SIR", X, y, 1)
    # the index X B must track X_2 (distances in X's own coordinates are not scale-free, so compare indices)
    assert abs(np.corrcoef((X @ B)[:, 0], X[:, 1])[0, 1]) > 0.99



def test_standardise_refuses_a_collinear_design():
    X = np.random.default_rng(0).standard_normal((50, 3))
    with pytest.raises(ValueError, match="singular"):
        baselines.standardise(np.c_[X, X[:, 0] + X[:, 1]])


# --- models and experiment helpers --------------------------------------------------------------------------------
def test_true_bases_are_orthonormal():
    for name, d0 in paper.MODELS.items():
        B = true_basis(name, 12)
        assert B.shape == (12, d0)
        np.testing.assert_allclose(B.T @ B, np.eye(d0), atol=1e-12)


def test_convergence_summary():
    import pandas as pd

    df = pd.DataFrame({"model": "M2", "rep": 0, "L": [10, 25, 50, 100], "error": [0.8, 0.6, 0.62, 0.3]})
    c = convergence(df, "M2", slope_L_max=200)
    assert c.non_monotone == 1 and c.ratio == pytest.approx(0.3 / 0.8)
    assert c.slope < 0


# --- the UCI reader -----------------------------------------------------------------------------------------------
def test_reader_reads_the_headerless_fixture_and_counts_dropped_rows():
    ds = read_uci(DATA / "communities_like.data")
    assert ds.target == "V12" and ds.feature_names[0] == "V1" and ds.X.shape[1] == 11
    assert ds.notes["rows_read"] == 40
    assert ds.notes["rows_dropped_missing"] == 40 - ds.X.shape[0] > 0
    assert not np.isnan(ds.X).any()


def test_reader_drops_missing_columns_like_the_authors_script():
    ds = read_uci(DATA / "communities_like.data", drop_columns=["V1"], missing="columns")
    assert ds.X.shape == (40, 7)
    assert set(ds.notes["dropped_columns"]) == {"V1", "V2", "V3", "V7"} and ds.notes["rows_dropped_missing"] == 0


def test_reader_reads_the_headed_fixture_with_a_named_target():
    ds = read_uci(DATA / "superconductivity_like.csv", target="critical_temp")
    assert ds.X.shape == (30, 7) and ds.feature_names[0] == "number_of_elements"
    ds2 = read_uci(DATA / "superconductivity_like.csv", target="mean_fie")
    assert "critical_temp" in ds2.feature_names and "mean_fie" not in ds2.feature_names


def test_fixtures_are_what_make_data_writes():
    rng = np.random.default_rng(2410)
    assert (DATA / "communities_like.data").read_text() == communities_text(rng)
    assert (DATA / "superconductivity_like.csv").read_text() == superconductivity_text(rng)


def test_reader_refuses_text_columns_and_accepts_them_dropped(tmp_path):
    f = tmp_path / "communities.data"
    f.write_text("8,?,?,Lakewoodcity,1,0.19,0.33,0.20\n53,?,?,Tukwilacity,1,0.00,0.16,0.67\n" * 6)
    with pytest.raises(UserFileError, match=r"data_path.*column 4 \('V4'\) holds text.*drop_columns=\['V4'\]"):
        read_uci(f)
    ds = read_uci(f, drop_columns=["V4"], missing="columns")
    assert ds.X.shape == (12, 3) and ds.target == "V8"  # V1, V5 (constant after dropping), V6, V7 ...
    assert "V5" in ds.notes["constant_columns"]


@pytest.mark.parametrize("text, problem", [
    ("a;b;c\n1;2;3\n4;5;6\n", "semicolons"),
    ("1,2,3\n4,5\n", "2 fields, not 3"),
    ("x,y\n1,2\n", "fewer than"),
])
def test_reader_refuses_malformed_files(tmp_path, text, problem):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(UserFileError, match=problem):
        read_uci(f)


def test_reader_names_unknown_target_and_columns():
    with pytest.raises(UserFileError, match="no column 'critical'"):
        read_uci(DATA / "superconductivity_like.csv", target="critical")
    with pytest.raises(UserFileError, match="unknown column"):
        read_uci(DATA / "communities_like.data", drop_columns=["V99"])


# --- config -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, name", [({"L": 1}, "L"), ({"dist": "t"}, "dist"), ({"base": "mars"}, "base"),
                                      ({"m_per_p": 0}, "m_per_p"), ({"missing": "drop"}, "missing"),
                                      ({"target": 3}, "target"), ({"data_path": "/no/such/file"}, "data_path"),
                                      ({"target": "V12"}, "target")])
def test_config_refuses_bad_parameters(kw, name, tmp_path):
    with pytest.raises(ValueError, match=name):
        paper.config(out_dir=str(tmp_path), verbose=False, **kw)


def test_config_checks_the_user_file_and_d0(tmp_path):
    fx = str(DATA / "communities_like.data")
    cfg = paper.config(out_dir=str(tmp_path), verbose=False, data_path=fx, data_d0=3)
    ds = paper.user_data(cfg)
    assert ds.d0 == 3 and cfg.L == 50 and cfg.settings == ((200, 20),)
    with pytest.raises(ValueError, match="data_d0"):
        paper.config(out_dir=str(tmp_path), verbose=False, data_path=fx, data_d0=11)
