"""Unit tests of lib/nam_explanations: export, exact pieces, interval bounds, bisection, the MILP verifier against
the additive oracle, the explainers against brute force, the CSV reader and its fixture."""
import itertools
import math

import numpy as np
import pytest
import torch

from lib.common import data_dir
from lib.common.additive import numpy_mlp
from lib.nam_explanations import config
from lib.nam_explanations import explain as ex
from lib.nam_explanations.data import load_dataset, make_additive, read_tabular
from lib.nam_explanations.make_data import FIXTURE_NAME, fixture_text
from lib.nam_explanations.model import build_nam, export_nam, torch_logits, train_nam
from lib.nam_explanations.univariate import (all_pieces, bisect_min, exact_extrema, exact_layer_bounds, ibp_bounds,
                                             ibp_layer_bounds, pwl_breakpoints)
from lib.nam_explanations.verify import AdditiveVerifier, MilpVerifier

pytestmark = pytest.mark.usefixtures("one_thread")
FIXTURE = data_dir("nam_explanations") / FIXTURE_NAME


def _random_nam(n=6, hidden=8, seed=0, bias_scale=0.8):
    """An untrained NAM with random (non-zero) biases, so components have breakpoints inside [0, 1]."""
    g = torch.Generator().manual_seed(seed)
    mlps, beta = build_nam(n, hidden, g)
    with torch.no_grad():
        for b in mlps.biases:
            b.normal_(0.0, bias_scale, generator=g)
        beta.fill_(0.3)
    X = torch.rand(50, n, generator=g).numpy()
    return export_nam(mlps, beta, X), (mlps, beta)


@pytest.fixture(scope="module")
def nam():
    return _random_nam()[0]


def test_exported_numpy_components_reproduce_torch():
    ds = load_dataset("wine", seed=0)
    nam, (mlps, beta) = train_nam(ds.X_train, ds.y_train, hidden=8, steps=20, seed=0, return_torch=True)
    assert np.allclose(nam.logit(ds.X_test), torch_logits(mlps, beta, ds.X_test), atol=1e-4)
    grid, curve = mlps.shape_curve(3, lo=0.0, hi=1.0, n=40)
    assert np.allclose(nam.component_at(np.full(40, 3), grid), curve[:, 0], atol=1e-5)
    assert np.allclose(numpy_mlp(nam.layers(3), grid[:, None])[:, 0], curve[:, 0], atol=1e-5)


def test_component_is_affine_between_breakpoints(nam):
    for i in range(nam.n_features):
        t = pwl_breakpoints(nam, i)
        assert t[0] == 0.0 and t[-1] == 1.0 and np.all(np.diff(t) > 0)
        lam = np.linspace(0, 1, 7)
        z = (t[:-1, None] * (1 - lam) + t[1:, None] * lam).ravel()
        h = nam.component_at(np.full(z.size, i), z).reshape(len(t) - 1, 7)
        interp = h[:, :1] * (1 - lam) + h[:, -1:] * lam
        assert np.allclose(h, interp, atol=1e-9), f"component {i} bends between two returned breakpoints"
    # and a breakpoint is a real kink for at least some component (the pieces are not trivially one line)
    assert max(len(pwl_breakpoints(nam, i)) for i in range(nam.n_features)) > 3


def test_interval_bounds_enclose_component_values(nam):
    rng = np.random.default_rng(1)
    for _ in range(40):
        i = int(rng.integers(nam.n_features))
        a, b = np.sort(rng.random(2))
        s = float(rng.choice([-1.0, 1.0]))
        z = np.linspace(a, b, 501)
        v = s * nam.component_at(np.full(z.size, i), z)
        lo, hi = ibp_bounds(nam, i, a, b, s)
        assert lo <= v.min() + 1e-12 and hi >= v.max() - 1e-12
        l1, u1, l2, u2 = exact_layer_bounds(nam, i, a, b)
        il1, iu1, il2, iu2 = ibp_layer_bounds(nam, i, a, b)
        p2 = np.maximum(z[:, None] * nam.W1[i] + nam.b1[i], 0) @ nam.W2[i] + nam.b2[i]
        assert np.all(l2 <= p2.min(0) + 1e-9) and np.all(u2 >= p2.max(0) - 1e-9)  # sound
        assert np.allclose(l2, p2.min(0), atol=1e-3) and np.all(il2 <= l2 + 1e-12)  # exact, tighter than IBP


def test_exact_extrema_match_a_dense_grid(nam):
    rng = np.random.default_rng(2)
    A = rng.random((5, nam.n_features)) * 0.6
    B = A + 0.4 * rng.random((5, nam.n_features))
    mins, amin, maxs, _ = exact_extrema(nam, all_pieces(nam), A, B)
    for p in range(5):
        for i in range(nam.n_features):
            z = np.linspace(A[p, i], B[p, i], 4001)
            v = nam.component_at(np.full(z.size, i), z)
            assert mins[p, i] <= v.min() + 1e-12 and mins[p, i] >= v.min() - 1e-3
            assert maxs[p, i] >= v.max() - 1e-12
            assert A[p, i] <= amin[p, i] <= B[p, i]
            assert math.isclose(nam.component_at(i, amin[p, i]), mins[p, i], abs_tol=1e-9)


@pytest.mark.parametrize("delta", [1e-2, 1e-5])
def test_bisection_brackets_the_exact_minimum(nam, delta):
    rng = np.random.default_rng(3)
    Q = 30
    comp = rng.integers(nam.n_features, size=Q)
    a = rng.random(Q) * 0.8
    b = a + 0.2
    s = rng.choice([-1.0, 1.0], Q)
    r = bisect_min(nam, comp, a, b, s, delta=delta)
    exact = np.array([(s[q] * nam.component_at(np.full(20001, comp[q]), np.linspace(a[q], b[q], 20001))).min()
                      for q in range(Q)])
    assert np.all(r.m_hi - r.m_lo <= delta)
    assert np.all(r.m_lo <= exact + 1e-12) and np.all(r.m_hi >= exact - 1e-4 * delta - 1e-12)
    assert np.allclose(s * nam.component_at(comp, r.witness), r.m_hi)  # the upper end is attained
    bound = np.ceil(np.log2(np.maximum(r.width0, 1e-300) / delta)).clip(0)
    assert np.all(r.steps <= bound + 1)


def _instances(nam, n_points=6, eps=0.15, seed=4):
    X = np.random.default_rng(seed).random((n_points, nam.n_features))
    return ex.make_instances(nam, all_pieces(nam), X, eps)


@pytest.mark.parametrize("bounds", ["exact", "ibp"])
def test_milp_verifier_agrees_with_the_additive_oracle(nam, bounds):
    rng = np.random.default_rng(5)
    for inst in _instances(nam):
        V = MilpVerifier(nam, inst.x, inst.A, inst.B_, inst.s, bounds=bounds)
        for _ in range(4):
            S = sorted(rng.choice(inst.n, size=int(rng.integers(0, inst.n)), replace=False).tolist())
            value, timed_out = V.min_logit(S)
            assert not timed_out
            assert math.isclose(value, inst.margin(S), abs_tol=1e-6)
            if abs(inst.margin(S)) > 1e-6:
                assert V.sufficient(S) == (inst.margin(S) > 0)


def test_explainers_sizes_and_minimality():
    nam = _random_nam(n=9, hidden=6, seed=7, bias_scale=1.0)[0]
    for inst in _instances(nam, n_points=12, eps=0.3, seed=8):
        ours, st = ex.cardinal_minimal(inst)
        assert inst.margin(ours) > 0 and st["queries"] <= math.ceil(math.log2(inst.n + 1))
        bf, _ = ex.brute_force_minimal(inst)
        # brute force by hand: no smaller sufficient subset exists
        smaller = [S for k in range(len(ours)) for S in itertools.combinations(range(inst.n), k)
                   if inst.margin(S) > 0]
        assert not smaller and len(bf) == len(ours)
        for order in (ex.heuristic_order(inst), np.random.default_rng(9).permutation(inst.n)):
            dele, sd = ex.deletion_minimal(inst, order)
            assert sd["queries"] == inst.n and inst.margin(dele) > 0
            assert all(inst.margin([j for j in dele if j != i]) <= 0 for i in dele), "deletion not subset-minimal"
            assert len(ours) <= len(dele)


def test_cardinal_minimal_with_bisection_intervals_and_milp(nam):
    for inst in _instances(nam, n_points=4):
        br = bisect_min(nam, np.arange(inst.n), inst.A, inst.B_, inst.s, delta=1e-6)
        V = MilpVerifier(nam, inst.x, inst.A, inst.B_, inst.s)
        S, st = ex.cardinal_minimal(inst, V.sufficient, g_interval=(inst.v - br.m_hi, inst.v - br.m_lo))
        assert len(S) == len(ex.cardinal_minimal(inst)[0]) and inst.margin(S) > 0
        assert V.stats.queries == st["queries"] <= math.ceil(math.log2(inst.n + 1))
        av = AdditiveVerifier(inst.B, inst.g)
        assert ex.cardinal_minimal(inst, av.sufficient)[0] == ex.cardinal_minimal(inst)[0]


def test_sampled_subset_survives_its_own_samples(nam):
    for inst in _instances(nam, n_points=5, eps=0.3):
        rng = np.random.default_rng(10)
        S, _ = ex.sampled_sufficient(nam, inst, 100, rng)
        Z = inst.A + (inst.B_ - inst.A) * np.random.default_rng(10).random((100, inst.n))
        Z[:, S] = inst.x[S]
        assert np.all(inst.s * nam.logit(Z) > 0)


def test_make_additive_planted_structure():
    X, y, shapes = make_additive(400, 8, seed=0)
    assert X.shape == (400, 8) and X.min() >= 0 and X.max() <= 1 and set(np.unique(y)) == {0, 1}
    assert shapes[4:] == ["zero"] * 4
    X2, y2, _ = make_additive(400, 8, seed=0)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)


def test_csv_reader_and_fixture(tmp_path):
    assert FIXTURE.read_text(encoding="utf-8") == fixture_text(), "rerun python -m lib.nam_explanations.make_data"
    X, y, names = read_tabular(FIXTURE)
    assert X.shape == (60, 6) and set(np.unique(y)) == {0, 1} and "target" not in names
    text = FIXTURE.read_text(encoding="utf-8")
    header, *rows = text.splitlines()
    cases = {
        "no target column": (text.replace(",target", ",label", 1), "target"),
        "holds 2": ("\n".join([header] + [r[:-1] + "2" if k == 3 else r for k, r in enumerate(rows)]) + "\n",
                    "binary"),
        "both classes": ("\n".join([header] + [r[:-1] + "1" for r in rows]) + "\n", "both classes"),
        "20 rows": ("\n".join([header] + rows[:10]) + "\n", "at least 20"),
        "semicolons": (text.replace(",", ";"), "semicolon"),
        "repeats": (text.replace("f1_step", "f0_sin", 1), "repeats"),
    }
    for name, (content, needle) in cases.items():
        p = tmp_path / f"{name.replace(' ', '_')}.csv"
        p.write_text(content, encoding="utf-8")
        with pytest.raises(ValueError, match=needle) as info:
            read_tabular(p)
        assert "'data_path'" in str(info.value)
    p = tmp_path / "label.csv"
    p.write_text(text.replace(",target", ",label", 1), encoding="utf-8")
    assert read_tabular(p, target="label")[0].shape == (60, 6)


def test_user_dataset_is_scaled_to_the_unit_box():
    ds = load_dataset("user", seed=0, data_path=FIXTURE)
    assert ds.X_train.min() == 0.0 and ds.X_train.max() == 1.0
    assert ds.X_test.min() >= 0.0 and ds.X_test.max() <= 1.0 and ds.n_features == 6


def test_config_refuses_bad_parameters(tmp_path):
    for kwargs, needle in [({"eps": 0.0}, "eps"), ({"eps": 2}, "eps"), ({"domain": "box"}, "domain"),
                           ({"delta": 0}, "delta"), ({"target": ""}, "target"), ({"n_points": 1}, "n_points"),
                           ({"data_path": tmp_path / "missing.csv"}, "data_path"),
                           ({"data_path": FIXTURE, "target": "nope"}, "target")]:
        with pytest.raises(ValueError, match=needle):
            config(verbose=False, out_dir=str(tmp_path), **kwargs)
    cfg = config(verbose=False, out_dir=str(tmp_path), data_path=str(FIXTURE))
    assert cfg.datasets[-1] == "user" and cfg.n_points == 30 and cfg.hidden == 16
