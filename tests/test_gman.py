"""Unit tests of lib.gman: the block-diagonal batch, the distance matrix, summary features, the daily grid, ECE,
the PhysioNet reader."""
import shutil

import numpy as np
import pytest
import torch

from lib.gman.data import (Samples, load_physionet2012, make_biomarker_sets, summary_features, to_grid)
from lib.gman.model import GMAN, Norm, causal_pairs, collate
from lib.gman.train import ece
from lib.gman.explain import contributions
from lib.common import project_root

FIXTURE = project_root() / "data" / "gman" / "physionet_tiny"


def _tiny():
    # patient 0: marker 0 at t = 0, 10, 10 (a tie), marker 1 at 5; patient 1: marker 1 at 3, 1 (unsorted input)
    return Samples(["A", "B"], np.array([0, 1]), np.array([[0.5, 1.0], [-0.5, 0.0]]),
                   np.array([0, 0, 0, 0, 1, 1]), np.array([0, 0, 0, 1, 1, 1]),
                   np.array([0.0, 10.0, 10.0, 5.0, 1.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 20.0)


def test_distance_matrix_of_a_three_node_graph_matches_the_formula():
    t = np.array([0.0, 2.0, 7.0])
    recv, send = causal_pairs(np.zeros(3, int), t)
    D = np.zeros((3, 3))
    D[recv, send] = 1.0 / (t[recv] - t[send] + 0.1)
    want = np.array([[10.0, 0, 0], [1 / 2.1, 10.0, 0], [1 / 7.1, 1 / 5.1, 10.0]])
    np.testing.assert_allclose(D, want)


def test_ties_and_later_nodes_are_masked():
    recv, send = causal_pairs(np.zeros(3, int), np.array([0.0, 10.0, 10.0]))
    assert sorted(zip(recv.tolist(), send.tolist())) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 2)]


def test_block_diagonal_batch_gives_each_sample_its_own_logit():
    rng = np.random.default_rng(0)
    s = make_biomarker_sets(12, 4, rng=rng)
    norm = Norm.fit(s, 30.0)
    model = GMAN(4, [[0], [1, 2], [3]], (2, 2), hidden=8, generator=torch.Generator().manual_seed(0))
    model.eval()
    with torch.no_grad():
        together = model(collate(s, norm)).numpy()
        alone = np.array([model(collate(s.take([i]), norm)).item() for i in range(s.n)])
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-4)
    # the padded per-marker ExtGNAN equals a hand loop over pairs for one graph
    b = collate(s.take([0]), norm)
    fx = model.ext.node_values(b)
    rho = model.ext.distance_values(b)
    hand = torch.zeros(4)
    for r, q, k in zip(b["recv"], b["send"], range(len(b["recv"]))):
        hand[b["marker"][r]] += float((rho[k, 0] * fx[q, 0]).detach())
    with torch.no_grad():
        np.testing.assert_allclose(model.parts(b)["hG"][0, :, 0].numpy(), hand.numpy(), rtol=1e-5, atol=1e-5)


def test_sender_contributions_sum_to_singleton_graph_contributions():
    s = make_biomarker_sets(8, 3, rng=np.random.default_rng(1))
    model = GMAN(3, [[0], [1], [2]], (2, 2), hidden=8, generator=torch.Generator().manual_seed(1))
    b = collate(s, Norm.fit(s, 30.0))
    c = contributions(model, b)
    per_graph = np.bincount(b["gid"].numpy(), c["node"], s.n * 3).reshape(s.n, 3)
    np.testing.assert_allclose(per_graph, c["graph"], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c["subset"].sum(1) + float(model.bias.detach()), c["logit"], rtol=1e-5, atol=1e-4)


def test_summary_features_match_hand_computation():
    s = _tiny().take([0, 1])
    X = summary_features(s)
    # patient 0, marker A: values 1, 2, 3 at t = 0, 10, 10
    np.testing.assert_allclose(X[0, :6], [3.0, 2.0, 1.0, 3.0, 3.0, np.polyfit([0, 10, 10], [1, 2, 3], 1)[0]])
    # patient 1, marker A: no measurement; marker B: values 5 at t=1, 6 at t=3 (sorted by time)
    assert np.isnan(X[1, 0]) and X[1, 4] == 0
    np.testing.assert_allclose(X[1, 6:12], [6.0, 5.5, 5.0, 6.0, 2.0, 0.5])
    np.testing.assert_allclose(X[:, 12:], s.static)


def test_daily_grid_carries_the_last_observation_forward():
    s = _tiny().take([0, 1])
    vals, mask, delta = to_grid(s, 6, step=2.0)
    # patient 1, marker B: observed at t=1 (cell 0) and t=3 (cell 1)
    np.testing.assert_allclose(vals[1, :, 1], [5, 6, 6, 6, 6, 6])
    np.testing.assert_allclose(mask[1, :, 1], [1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(delta[1, :, 1], [1, 1, 3, 5, 7, 9])
    # patient 0, marker B: first observed at t=5 (cell 2): zeros before
    np.testing.assert_allclose(vals[0, :, 1], [0, 0, 4, 4, 4, 4])
    np.testing.assert_allclose(delta[0, :2, 1], [0, 0])


def test_ece_matches_hand_computation():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.05, 0.15, 0.95, 0.85])
    # bins: [0, .1): p .05 y 0 -> .05; [.1, .2): .15 vs 1 -> .85; [.8, .9): .85 vs 0; [.9, 1]: .95 vs 1 -> .05
    assert ece(y, p) == pytest.approx((0.05 + 0.85 + 0.85 + 0.05) / 4)


def test_generator_plants_its_ground_truth():
    s = make_biomarker_sets(400, 6, rng=np.random.default_rng(0))
    assert 0.25 < s.y.mean() < 0.35
    X = summary_features(s)
    # the XOR term drives the label; A's last value is higher for positives (the drift)
    assert s.y[s.meta["xor"] == 1].mean() > s.y[s.meta["xor"] == 0].mean() + 0.3
    assert X[s.y == 1, 0].mean() > X[s.y == 0, 0].mean() + 0.3
    off = make_biomarker_sets(400, 6, interaction=False, rng=np.random.default_rng(0))
    assert abs(off.y[off.meta["xor"] == 1].mean() - off.y[off.meta["xor"] == 0].mean()) < 0.15


def test_reader_round_trips_the_fixture():
    s = load_physionet2012(FIXTURE)
    assert s.n == 3 and s.markers == ["Glucose", "HR", "Na", "Temp"]
    assert s.y.tolist() == [0, 1, 0]
    assert s.window == 48.0 and (s.t >= 0).all() and (s.t <= 48).all()
    text = (FIXTURE / "set-a" / "132539.txt").read_text().splitlines()
    rows = [ln.split(",") for ln in text[1:] if not ln.startswith("00:00,")]
    assert len(s.t[s.sample == 0]) == len(rows)


@pytest.mark.parametrize("bad, fragment", [
    ("Time;Parameter;Value", "header"), ("Time,Param,Value", "header"), ("7.5,HR,80", "HH:MM"),
    ("07:5,HR,80", "HH:MM"), ("07:05,Heart,80", "parameter name"), ("07:05,HR,high", "not a number"),
])
def test_reader_rejects_malformed_records(tmp_path, bad, fragment):
    dst = tmp_path / "p12"
    shutil.copytree(FIXTURE, dst)
    f = dst / "set-a" / "132540.txt"
    lines = f.read_text().splitlines()
    if bad.startswith("Time"):
        lines[0] = bad
    else:
        lines.insert(8, bad)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="data_path") as exc:
        load_physionet2012(dst)
    assert fragment in str(exc.value)


def test_reader_rejects_a_missing_outcomes_file(tmp_path):
    dst = tmp_path / "p12"
    shutil.copytree(FIXTURE, dst)
    (dst / "Outcomes-a.txt").unlink()
    with pytest.raises(ValueError, match="Outcomes-a.txt"):
        load_physionet2012(dst)


def test_config_refuses_bad_parameters():
    import lib.gman as paper

    with pytest.raises(ValueError, match="n_markers"):
        paper.config(n_markers=2, verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        paper.config(data_path="/nonexistent/folder", verbose=False)


# --- the neural baselines and the cascades ------------------------------------------------------------------
def test_grud_lite_input_decay_matches_the_formula():
    from lib.gman.baselines import GRUDLite, grid_batch

    s = _tiny().take([0, 1])
    norm = Norm(np.array([2.0, 5.0]), np.array([1.0, 0.5]), 1.0)
    b = grid_batch(s, norm, 6, step=2.0)
    model = GRUDLite(2, hidden=4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.w.copy_(torch.tensor([0.3, 0.2]))
        model.b.copy_(torch.tensor([-0.1, 0.1]))
        xh = model.impute(b).numpy()
    # patient 1, marker B: standardised values (5-5)/.5 = 0 at t=1, (6-5)/.5 = 2 at t=3; deltas 1,1,3,5,7,9
    z = np.array([0.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    m = np.array([1, 1, 0, 0, 0, 0.0])
    gamma = np.exp(-np.maximum(0, 0.2 * np.array([1, 1, 3, 5, 7, 9.0]) + 0.1))
    np.testing.assert_allclose(xh[1, :, 1], m * z + (1 - m) * gamma * z, rtol=1e-5)
    # patient 0, marker A: values 1, 2, 3 at t = 0, 10, 10 -> cells 0 and 5 (the last tie wins), mean 2
    np.testing.assert_allclose(b["x"][0, :, 0].numpy(), [-1, -1, -1, -1, -1, 1])


def test_grud_lite_gives_each_sample_its_own_logit_and_learns_a_last_value_rule():
    from lib.gman.baselines import GRUDLite, fit_nn_baseline, grid_batch

    rng = np.random.default_rng(3)
    s = make_biomarker_sets(240, 3, rng=rng)
    last = summary_features(s)[:, 0]
    s.y = (np.nan_to_num(last, nan=0.0) > np.nanmedian(last)).astype(np.int64)  # label: A's last value is high
    norm = Norm.fit(s, 30.0)
    model = GRUDLite(3, hidden=8, generator=torch.Generator().manual_seed(0)).eval()
    with torch.no_grad():
        together = model(grid_batch(s.take(np.arange(6)), norm, 27, 14.0)).numpy()
        alone = [model(grid_batch(s.take([i]), norm, 27, 14.0)).item() for i in range(6)]
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-5)
    tr, va, te = s.take(np.arange(160)), s.take(np.arange(160, 200)), s.take(np.arange(200, 240))
    batches = [grid_batch(tr.take(np.arange(k, k + 32)), norm, 27, 14.0) for k in range(0, 160, 32)]
    res = fit_nn_baseline(lambda g: GRUDLite(3, hidden=8, generator=g), batches, grid_batch(va, norm, 27, 14.0),
                          grid_batch(te, norm, 27, 14.0), epochs=25, pos_weight=1.0,
                          seed_fn=lambda k: torch.Generator().manual_seed(len(k)),
                          rng_fn=lambda k: np.random.default_rng(len(k)), lrs=(1e-2,))
    assert res["auroc"] > 0.85 and res["steps"] == 25 * 5


def test_cascades_are_trees_and_fake_ones_grow_deeper():
    from lib.gman.data import cascade_edges, make_cascades

    s = make_cascades(300, rng=np.random.default_rng(0))
    e = cascade_edges(s)
    assert e.shape[1] == len(s.t) - s.n  # a tree per cascade
    assert (s.sample[e[0]] == s.sample[e[1]]).all() and (s.t[e[0]] > s.t[e[1]]).all()
    assert (s.marker[s.extra["parent_id"] < 0] == 0).all() and np.bincount(s.sample[s.marker == 0]).max() == 1
    assert s.meta["depth"][s.y == 1].mean() > s.meta["depth"][s.y == 0].mean() + 1
    sub = s.take([5, 2, 9])  # re-indexing keeps the per-node arrays aligned
    assert cascade_edges(sub).shape[1] == len(sub.t) - 3
    np.testing.assert_allclose(sub.extra["x"][sub.sample == 0], s.extra["x"][s.sample == 5])


def test_gin_layer_matches_the_dense_formula_and_batches_independently():
    import networkx as nx

    from lib.gman.baselines import GIN, gin_batch
    from lib.gman.data import cascade_edges, make_cascades

    s = make_cascades(5, rng=np.random.default_rng(1), max_nodes=8)
    b = gin_batch(s)
    model = GIN(18, hidden=6, generator=torch.Generator().manual_seed(0)).eval()
    with torch.no_grad():
        model.eps.copy_(torch.tensor([0.5, -0.2, 0.1]))
        g = nx.Graph()
        g.add_nodes_from(range(len(s.t)))
        g.add_edges_from(cascade_edges(s).T.tolist())
        A = torch.as_tensor(nx.to_numpy_array(g, nodelist=range(len(s.t))), dtype=torch.float32)
        h = b["x"]
        want = model.mlps[0](1.5 * h + A @ h)
        np.testing.assert_allclose(model.layer(0, h, b).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        together = model(b).numpy()
        alone = [model(gin_batch(s.take([i]))).item() for i in range(s.n)]
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-4)


def test_gman_takes_the_cascades_own_node_features():
    from lib.gman.data import make_cascades

    s = make_cascades(6, rng=np.random.default_rng(2))
    norm = Norm.fit(s, 1.0)
    model = GMAN(2, [[0], [1]], (1,) * 18, hidden=8, generator=torch.Generator().manual_seed(0), n_features=18)
    b = collate(s, norm)
    assert b["xs"].shape[1] == 18 and model(b).shape == (6,)
    with pytest.raises(ValueError, match="18 node features"):
        GMAN(2, [[0], [1]], (2, 2), n_features=18)


# --- the ragged (unpadded) batch path and the parallel jobs ---------------------------------------------------
def _padded_reference(model, b):
    """The padded path: every model graph's slot of one GroupMLPs pass (``forward_groups``), one row per node / pair,
    the other models' slots zero; read off the row's own model's groups."""
    ext = model.ext
    F, K, M = b["xs"].shape[1], ext.K, ext.M
    x = b["xs"][b["nsort_inv"]]  # the node table in the batch's node order
    own = b["marker"] if M > 1 else torch.zeros_like(b["marker"])
    flat = torch.zeros(len(x), M * F)
    for j in range(len(x)):
        flat[j, own[j] * F:(own[j] + 1) * F] = x[j]
    out = ext.f.forward_groups(ext.f.split(flat))  # [n, M * K, C]
    fx = torch.stack([out[j, own[j] * K:(own[j] + 1) * K].sum(0) for j in range(len(x))])
    pown = own[b["recv"]]
    dpad = torch.zeros(len(b["d"]), M, 1)
    dpad[torch.arange(len(b["d"])), pown, 0] = b["d"]
    r = ext.rho.forward_groups(dpad)[torch.arange(len(b["d"])), pown]
    return fx, r


@pytest.mark.parametrize("share, groups", [("per_graph", (2, 2)), ("per_graph", (1, 1, 1, 1)), ("single", (2, 2))])
def test_ragged_path_equals_the_padded_group_mlps_path(share, groups):
    s = make_biomarker_sets(5, 4, rng=np.random.default_rng(4))
    s = s.take([0, 1, 2])
    keep = ~((s.sample == 1) & (s.marker == 2)) & (s.marker != 3)  # marker D absent: a model graph with no rows
    s = Samples(s.markers, s.y, s.static, s.sample[keep], s.marker[keep], s.t[keep], s.value[keep], s.window)
    model = GMAN(4, [[0], [1, 2], [3]], groups, share=share, hidden=6, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        for p in model.ext.parameters():  # non-trivial LayerNorm affines and biases
            p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    model.eval()
    b = collate(s, Norm.fit(s, 30.0), share)
    assert b["pcnt"][3 if share == "per_graph" else 0] == (0 if share == "per_graph" else len(b["d"]))
    with torch.no_grad():
        fx_ref, r_ref = _padded_reference(model, b)
        np.testing.assert_allclose(model.ext.node_values(b).numpy(), fx_ref.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(model.ext.distance_values(b).numpy(), r_ref.numpy(), rtol=1e-5, atol=1e-6)
    # the pairs are the causal pairs of each graph, sorted by model graph, with their distances
    want = set(zip(*causal_pairs(s.sample * 4 + s.marker, s.t)))
    assert set(zip(b["recv"].tolist(), b["send"].tolist())) == want and len(b["recv"]) == len(want)
    t = b["t"].double().numpy()
    np.testing.assert_allclose(b["d"].numpy(), 1 / ((t[b["recv"]] - t[b["send"]]) / 30.0 + 0.1), rtol=1e-5)
    with pytest.raises(ValueError, match="collated for"):
        GMAN(4, [[0], [1], [2], [3]], share="single" if share == "per_graph" else "per_graph")(b)


def test_dropout_keeps_one_minus_p_and_preserves_the_mean():
    from lib.gman.model import dropout

    torch.manual_seed(0)
    h = torch.ones(400, 1000)
    out = dropout(h, 0.2, True)
    kept = (out > 0).float().mean().item()
    assert abs(kept - 0.8) < 0.003 and abs(out.mean().item() - 1.0) < 0.004
    vals = torch.unique(out).tolist()
    assert len(vals) == 2 and vals[0] == 0.0 and vals[1] == pytest.approx(65536 / 52429)
    rows = (out > 0).float().mean(1)  # no structure along rows or columns (four masks per 64-bit draw)
    assert rows.std() < 0.04 and (out > 0).float().mean(0).std() < 0.07
    assert torch.equal(dropout(h, 0.2, False), h) and torch.equal(dropout(h, 0.0, True), h)
    h.requires_grad_(True)
    dropout(h, 0.5, True).sum().backward()
    assert set(torch.unique(h.grad).tolist()) <= {0.0, 2.0}


def test_chunked_prediction_equals_one_batch():
    from lib.gman.model import collate_chunks
    from lib.gman.train import labels, predict

    s = make_biomarker_sets(30, 3, rng=np.random.default_rng(5))
    norm = Norm.fit(s, 30.0)
    model = GMAN(3, [[0], [1, 2]], (2, 2), hidden=8, generator=torch.Generator().manual_seed(3))
    chunks = collate_chunks(s, norm, size=7)
    assert len(chunks) == 5 and np.array_equal(labels(chunks), s.y)
    np.testing.assert_allclose(predict(model, chunks), predict(model, collate(s, norm)), rtol=1e-5, atol=1e-6)


def test_results_do_not_depend_on_the_number_of_worker_processes():
    import pandas as pd

    import lib.gman as paper
    from lib.gman import experiments as ex

    kw = dict(mode="full", n_patients=120, n_markers=3, hidden=4, epochs=1, n_seeds=1, verbose=False)
    one = ex.run_main(paper.config(workers=1, **kw))[0]
    two = ex.run_main(paper.config(workers=2, **kw))[0]
    assert len(one) == 7 and list(one.method[:4]) == list(ex.variants(3))
    pd.testing.assert_frame_equal(one, two)
