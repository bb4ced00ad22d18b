"""Unit tests of lib.spanning_tree_map: Wilson's sampler, exact tree inference, the solvers, the MILP, the UAI I/O."""
import hashlib
import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

import lib.spanning_tree_map as paper
from lib.common import data_dir
from lib.spanning_tree_map.baselines import icm, lbp_minsum, mean_field, trw
from lib.spanning_tree_map.exact import brute_force, lp_relaxation, map_milp
from lib.spanning_tree_map.generators import er_potts, grid_potts, ising_grid, pci_like, random_tree_mrf
from lib.spanning_tree_map.io import UAIFormatError, read_uai, write_uai
from lib.spanning_tree_map.make_data import FILES, fixture_models, write_fixtures
from lib.spanning_tree_map.model import PairwiseMRF
from lib.spanning_tree_map.spt import spt_map
from lib.spanning_tree_map.trees import (
    Forest,
    edge_index,
    effective_resistance,
    laplacian,
    neighbour_lists,
    reroot,
    sample_trees,
    tree_center,
    tree_edges,
    wilson_ust,
)

DATA = data_dir("spanning_tree_map")


def _all_labellings(mrf):
    return np.array(list(itertools.product(*[range(k) for k in mrf.K])), dtype=np.int64)


# --- Wilson's algorithm and effective resistance ----------------------------------------------------------------
def test_wilson_samples_spanning_trees_uniformly():
    """Chi-square of the tree counts against the uniform law; the number of trees is the matrix-tree count."""
    g = nx.convert_node_labels_to_integers(nx.ladder_graph(3), ordering="sorted")  # 2 x 3 grid
    g.add_edge(0, 4)  # a diagonal, so that edges differ in their probabilities
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()))
    n = g.number_of_nodes()
    n_trees = round(np.linalg.det(laplacian(n, edges)[1:, 1:]))
    nbrs = neighbour_lists(n, edges)
    rng = np.random.default_rng(0)
    draws = 6000
    counts: dict = {}
    for _ in range(draws):
        p = wilson_ust(nbrs, rng)
        assert (p < 0).sum() == 1
        key = frozenset(map(tuple, np.sort(tree_edges(p), axis=1).tolist()))
        assert nx.is_tree(nx.Graph(list(key))) and len(key) == n - 1
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == n_trees
    assert chisquare(list(counts.values())).pvalue > 1e-3


def test_effective_resistance_matches_networkx_and_kirchhoff():
    rng = np.random.default_rng(1)
    mrf = er_potts(25, 4.0, 2, 1.0, "mixed", rng)
    g = mrf.to_networkx()
    rho = effective_resistance(mrf.n, mrf.edges)
    want = np.array([nx.resistance_distance(g, int(u), int(v)) for u, v in mrf.edges])
    assert np.allclose(rho, want, atol=1e-10)
    assert rho.sum() == pytest.approx(mrf.n - 1, abs=1e-8)
    # edge frequencies over Wilson trees agree with rho (Kirchhoff), within 5 binomial standard errors
    lookup = edge_index(mrf)
    counts = np.zeros(mrf.n_edges)
    nbrs = neighbour_lists(mrf.n, mrf.edges)
    m = 3000
    for _ in range(m):
        te = tree_edges(wilson_ust(nbrs, rng))
        counts[lookup(te[:, 0], te[:, 1])] += 1
    se = np.sqrt(rho * (1 - rho) / m) + 1e-9
    assert np.max(np.abs(counts / m - rho) / se) < 5.0


def test_spanning_forest_on_a_disconnected_graph():
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 4]])
    nbrs = neighbour_lists(6, edges)  # node 5 is isolated
    p = wilson_ust(nbrs, np.random.default_rng(2))
    assert (p < 0).sum() == 3
    assert effective_resistance(6, edges).sum() == pytest.approx(6 - 3)


# --- exact inference on trees ----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed,n,K", [(0, 7, 3), (1, 9, 2), (2, 6, 4)])
def test_tree_minsum_and_sumprod_equal_brute_force(seed, n, K):
    rng = np.random.default_rng(seed)
    mrf = random_tree_mrf(n, K, rng)
    parent = np.r_[-1, mrf.edges[:, 0]]
    X = _all_labellings(mrf)
    E = mrf.energies(X)
    want_min = np.array([[E[X[:, i] == a].min() for a in range(K)] for i in range(n)])
    want_soft = np.array([[-logsumexp(-1.7 * E[X[:, i] == a]) / 1.7 for a in range(K)] for i in range(n)])
    for recenter in (False, True):
        f = Forest(mrf, [parent, reroot(parent, n - 1)], recenter=recenter)
        M = f.marginals(mrf.unary, "min")
        S = f.marginals(mrf.unary, "soft", beta=1.7)
        for k in range(2):
            assert np.allclose(M[k], want_min, atol=1e-10)
            assert np.allclose(S[k], want_soft, atol=1e-10)
    x, e = brute_force(mrf)
    assert M[0].min() == pytest.approx(e)


def test_forest_of_sampled_trees_matches_brute_force_on_each_tree():
    """Three Wilson trees of a 3 x 3 grid with 1/rho weights: each tree's min-marginals against brute force."""
    rng = np.random.default_rng(3)
    mrf = grid_potts(3, 3, 3, 2.0, "frustrated", rng)
    rho = effective_resistance(mrf.n, mrf.edges)
    trees = paper.sample_trees(mrf, 3, rng)
    f = Forest(mrf, trees, edge_scale=1.0 / rho)
    M = f.marginals(mrf.unary, "min")
    lookup = edge_index(mrf)
    X = _all_labellings(mrf)
    for k, p in enumerate(trees):
        te = tree_edges(p)
        eid = lookup(te[:, 0], te[:, 1])
        sub = PairwiseMRF(n=mrf.n, K=mrf.K, unary=mrf.unary, edges=mrf.edges[eid],
                          pair=mrf.pair[eid] / rho[eid][:, None, None])
        E = sub.energies(X)
        want = np.array([[E[X[:, i] == a].min() for a in range(3)] for i in range(mrf.n)])
        assert np.allclose(M[k], want, atol=1e-10)
        assert np.allclose(f.tree_energy(mrf.unary, X[17])[k], E[17])


def test_tree_center_halves_the_depth():
    p = np.r_[-1, np.arange(20)]  # a path rooted at one end: depth 20
    c = tree_center(p)
    assert c in (10, 11)
    q = reroot(p, c)
    assert (q < 0).sum() == 1 and q[c] == -1
    assert len(Forest(random_tree_mrf(21, 2, np.random.default_rng(0)).copy(edges=np.column_stack([p[1:], np.arange(1, 21)])),
                      [p]).levels) <= 11


# --- solvers ----------------------------------------------------------------------------------------------------
def _small_instances():
    rng = np.random.default_rng(4)
    return [grid_potts(3, 4, 3, 3.0, "attractive", rng), grid_potts(3, 4, 3, 2.0, "mixed", rng),
            ising_grid(4, 4, 2.0, rng), er_potts(10, 3.0, 3, 2.0, "frustrated", rng)]


@pytest.mark.parametrize("idx", range(4))
def test_every_solver_reports_the_energy_of_its_labels(idx):
    mrf = _small_instances()[idx]
    rng = np.random.default_rng(idx)
    results = [spt_map(mrf, n_trees=5, n_iters=6, rng=rng),
               spt_map(mrf, n_trees=5, n_iters=6, reweight=False, rng=rng),
               spt_map(mrf, n_trees=5, n_iters=6, mode="sumprod", rng=rng),
               spt_map(mrf, n_trees=5, n_iters=6, mode="sumprod", merge="product", rng=rng),
               spt_map(mrf, n_trees=5, n_iters=6, decode="sample", rng=rng),
               lbp_minsum(mrf, iters=20), lbp_minsum(mrf, iters=20, damping=0.0), trw(mrf, iters=20),
               icm(mrf), mean_field(mrf, iters=20)]
    x_opt, e_opt = brute_force(mrf)
    for r in results:
        assert r.energy == pytest.approx(mrf.energy(r.x), abs=1e-9), r.method
        assert r.energy >= e_opt - 1e-9
        assert np.all(np.diff(r.best_trace) <= 1e-12) and r.best_trace[-1] == pytest.approx(r.energy)
        assert np.all(np.diff(r.times) >= 0)
    ex = map_milp(mrf, time_limit=20)
    assert ex.energy == pytest.approx(mrf.energy(ex.x), abs=1e-9)


def test_spt_and_lbp_are_exact_on_a_tree():
    """On a tree every spanning tree is the graph and rho = 1: SPT's first min-marginals are exact; so is min-sum BP."""
    rng = np.random.default_rng(5)
    mrf = random_tree_mrf(9, 3, rng)
    _, e = brute_force(mrf)
    assert spt_map(mrf, n_trees=2, n_iters=1, rng=rng).energy == pytest.approx(e)
    assert lbp_minsum(mrf, iters=30, damping=0.0).energy == pytest.approx(e)
    assert effective_resistance(mrf.n, mrf.edges) == pytest.approx(np.ones(mrf.n_edges))


def test_spt_rejects_bad_options():
    mrf = _small_instances()[0]
    with pytest.raises(ValueError, match="merge"):
        spt_map(mrf, merge="product")  # min-sum averages its min-marginals
    with pytest.raises(ValueError, match="mode"):
        spt_map(mrf, mode="maxprod")


# --- exact MAP -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("idx", range(4))
def test_milp_optimum_equals_brute_force_and_lp_is_a_lower_bound(idx):
    mrf = _small_instances()[idx]
    x, e = brute_force(mrf)
    ex = map_milp(mrf, time_limit=30, lp_bound=True)
    assert ex.optimal
    assert ex.energy == pytest.approx(e, abs=1e-7)
    assert ex.lp_bound <= e + 1e-7
    assert lp_relaxation(mrf) == pytest.approx(ex.lp_bound, abs=1e-7)


def test_milp_and_brute_force_on_mixed_domain_sizes():
    mrf = read_uai(DATA / "mixed_domains_3x3.uai")
    x, e = brute_force(mrf)
    assert np.all(x < mrf.K)
    assert map_milp(mrf, time_limit=30).energy == pytest.approx(e, abs=1e-7)


# --- UAI reader and writer -------------------------------------------------------------------------------------
def test_uai_round_trip(tmp_path):
    rng = np.random.default_rng(6)
    for mrf in (grid_potts(3, 3, 4, 2.0, "frustrated", rng), ising_grid(3, 3, 3.0, rng), pci_like(15, 6, rng)):
        path = write_uai(mrf, tmp_path / f"{mrf.name}.uai")
        back = read_uai(path)
        assert back.n == mrf.n and np.array_equal(back.K, mrf.K)
        X = rng.integers(0, mrf.K, size=(50, mrf.n))
        assert np.allclose(back.energies(X), mrf.energies(X), atol=1e-8)


def _independent_energy(path, x):
    """Energy of x straight from the file's tokens: -sum log phi over the factors (no reordering, no merging)."""
    tok = path.read_text().split()
    n = int(tok[1])
    K = list(map(int, tok[2:2 + n]))
    pos = 2 + n
    F = int(tok[pos]); pos += 1
    scopes = []
    for _ in range(F):
        a = int(tok[pos]); scopes.append([int(t) for t in tok[pos + 1:pos + 1 + a]]); pos += 1 + a
    e = 0.0
    for sc in scopes:
        m = int(tok[pos]); vals = [float(t) for t in tok[pos + 1:pos + 1 + m]]; pos += 1 + m
        idx = 0
        for v in sc:
            idx = idx * K[v] + x[v]
        e += -np.log(vals[idx]) if vals[idx] > 0 else 1e6
    return e


def test_reader_handles_domains_scope_order_duplicates_and_zeros():
    path = DATA / "mixed_domains_3x3.uai"
    mrf = read_uai(path)
    assert list(mrf.K) == [2, 3, 2, 3, 2, 3, 2, 3, 2] and mrf.n_edges == 12  # (0, 1) given twice, merged
    assert np.all(mrf.unary[4, :2] == 0.0)  # no unary factor on variable 4
    rng = np.random.default_rng(7)
    for _ in range(40):
        x = rng.integers(0, mrf.K)
        assert mrf.energy(x) == pytest.approx(_independent_energy(path, x), abs=1e-9)


def test_reader_refuses_malformed_files(tmp_path):
    with pytest.raises(UAIFormatError, match="arity 3"):
        read_uai(DATA / "malformed" / "arity3.uai")
    bad = tmp_path / "short.uai"
    bad.write_text("MARKOV\n2\n2 2\n1\n2 0 1\n\n4\n 1 2 3\n")
    with pytest.raises(UAIFormatError, match="ends"):
        read_uai(bad)
    bayes = tmp_path / "bayes.uai"
    bayes.write_text("BAYES\n1\n2\n1\n1 0\n\n2\n 0.5 0.5\n")
    with pytest.raises(UAIFormatError, match="MARKOV"):
        read_uai(bayes)


def test_reader_messages_name_data_path_the_line_and_the_format(tmp_path):
    import gzip

    from lib.spanning_tree_map import LOADERS

    src = DATA / "mixed_domains_3x3.uai"
    gz = tmp_path / "m.uai.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    with pytest.raises(ValueError, match=r"parameter 'data_path'.*gzip-compressed: decompress it first"):
        read_uai(gz)
    comma = tmp_path / "comma.uai"
    comma.write_text("\n".join(",".join(ln.split()) for ln in src.read_text().splitlines()))
    with pytest.raises(ValueError, match=r"data_path.*line 3: tokens are separated by commas"):
        read_uai(comma)
    text = tmp_path / "text.uai"
    text.write_text(src.read_text().replace("MARKOV\n9\n2 3", "MARKOV\n9\n2 abc", 1))
    with pytest.raises(ValueError, match=r"line 3: expected an integer for the domain size of variable 1, found 'abc'"):
        read_uai(text)
    neg = tmp_path / "energies.uai"
    neg.write_text("MARKOV\n1\n2\n1\n1 0\n\n2\n -0.5 0.5\n")
    with pytest.raises(ValueError, match=r"line 8: factor 0 has a negative.*uai_values = 'energy'"):
        read_uai(neg)
    assert read_uai(neg, values="energy").unary[0].tolist() == [-0.5, 0.5]
    assert len(LOADERS["data_path"](neg)) == 1  # the structural check accepts energies and potentials
    folder = tmp_path / "packed"
    folder.mkdir()
    (folder / "a.uai.gz").write_bytes(gz.read_bytes())
    with pytest.raises(ValueError, match=r"data_path.*no \.uai file \(found a\.uai\.gz: decompress them first\)"):
        LOADERS["data_path"](folder)


def test_fixtures_match_their_generator_and_regenerate_byte_for_byte(tmp_path):
    for name, mrf in fixture_models().items():
        back = read_uai(DATA / name)
        X = np.random.default_rng(8).integers(0, mrf.K, size=(30, mrf.n))
        assert np.allclose(back.energies(X), mrf.energies(X), atol=1e-7)
    digests = write_fixtures(tmp_path)
    for name in FILES:
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digests[name], name


def test_released_rule_returns_its_last_sample():
    from lib.spanning_tree_map.spt import RELEASED_RULE

    rng = np.random.default_rng(3)
    mrf = grid_potts(4, 4, 3, 2.0, "mixed", rng)
    trees = sample_trees(mrf, 5, np.random.default_rng(0))
    rel = spt_map(mrf, n_iters=6, trees=trees, rng=np.random.default_rng(1), **RELEASED_RULE)
    best = spt_map(mrf, n_iters=6, trees=trees, rng=np.random.default_rng(1),
                   **{**RELEASED_RULE, "report": "best"})
    assert rel.energy == pytest.approx(mrf.energy(rel.x)) and rel.energy == pytest.approx(rel.trace[-1])
    assert best.energy <= rel.energy + 1e-12 and best.energy == pytest.approx(min(best.best_trace))
    with pytest.raises(ValueError, match="report"):
        spt_map(mrf, n_iters=2, trees=trees, report="last_sample")  # needs decode="sample"


def test_instance_families_and_per_instance_table():
    import pandas as pd

    from lib.spanning_tree_map.experiments import family_comparison, instance_table, uai_family

    assert uai_family("grid10x10.f10") == "grid10x10" and uai_family("pci_3") == "pci"
    assert uai_family("ising_grid_6x6") == "ising_grid_6x6"
    rows = [dict(group="g", family=f, instance=i, n=4, edges=4, avg_degree=2.0, ref="optimal (LP)", ref_energy=0.0,
                 lp_bound=0.0, method=m, energy=e, gap=e)
            for f, i, m, e in [("a", "a_1", "SPT", 1.0), ("a", "a_1", "LBP", 2.0), ("a", "a_2", "SPT", 3.0),
                               ("a", "a_2", "LBP", 2.0), ("b", "b", "SPT", 0.0), ("b", "b", "LBP", 0.0)]]
    df = pd.DataFrame(rows)
    fam = family_comparison(df)
    assert fam.loc["a", "instances"] == 2 and fam.loc["a", "SPT - LBP"] == pytest.approx(0.0)
    assert fam.loc["a", "SPT <= LBP (share)"] == 0.5 and fam.loc["b", "SPT <= LBP (share)"] == 1.0
    t = instance_table(df)
    assert list(t.index) == ["a_1", "a_2", "b"] and t.loc["a_2", "SPT"] == 3.0 and t.loc["b", "nodes"] == 4


# --- configuration ---------------------------------------------------------------------------------------------
def test_config_rejects_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="n_trees"):
        paper.config(n_trees=0, out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="spt_damping"):
        paper.config(spt_damping=1.0, out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="uai_values"):
        paper.config(uai_values="probability", out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        paper.config(data_path=str(tmp_path / "missing.uai"), out_dir=str(tmp_path), verbose=False)
    with pytest.raises(UAIFormatError):
        paper.config(data_path=str(DATA / "malformed"), out_dir=str(tmp_path), verbose=False)
    cfg = paper.config(data_path=str(DATA / "ising_grid_6x6.uai"), out_dir=str(tmp_path), verbose=False)
    assert cfg.n_trees == 20 and cfg.grid_size == 8


def test_reference_energies_are_certified_optima_or_the_best_found():
    from types import SimpleNamespace

    from lib.spanning_tree_map.experiments import solve_instance

    cfg = SimpleNamespace(n_trees=6, n_iters=8, spt_damping=0.5, spt_beta=1.0, bp_iters=20, milp_time_limit=30.0,
                          milp_gap_max=None)
    for idx, mrf in enumerate(_small_instances()):
        s = solve_instance(mrf, cfg, np.random.default_rng(idx))
        _, e = brute_force(mrf)
        assert s.ref_kind.startswith("optimal") and s.ref_energy == pytest.approx(e, abs=1e-7)
        assert s.lp_bound <= e + 1e-7
        assert all(r["gap"] >= -1e-9 for r in s.rows())
    gated = SimpleNamespace(**{**vars(cfg), "milp_gap_max": -1.0})  # never run the MILP
    s = solve_instance(_small_instances()[1], gated, np.random.default_rng(0))
    assert s.ref_energy == pytest.approx(min(r.energy for r in s.results.values()))
    assert np.isnan(s.milp_energy)
