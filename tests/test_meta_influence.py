"""Unit tests of lib.meta_influence: closed forms against libraries and finite differences, invariants, the reader."""
import gzip
import shutil

import numpy as np
import pytest

from lib.common import limit_threads, project_root
from lib.common.userfiles import UserFileError
from lib.meta_influence import bilevel as B
from lib.meta_influence import data as Dm
from lib.meta_influence import influence as I

FIX = project_root() / "data" / "meta_influence" / "mnist"
pytestmark = pytest.mark.usefixtures("one_thread")  # tiny matrices: one BLAS thread (14.5 s -> 0.6 s per LOTO case)


def _tiny(seed=0, T=4, mu=1.0):
    rng = np.random.default_rng(seed)
    md = Dm.make_meta_data(rng, T, 2, k_shot=3, q_shot=4)
    return md


def test_inner_solve_matches_sklearn_at_lambda_zero():
    from sklearn.linear_model import LogisticRegression

    md = _tiny()
    tk = md.clean_train.take([0])
    mu, n = 0.7, tk.Xs.shape[1]
    sol = B.inner_solve(np.zeros(tk.dim), tk, mu)
    clf = LogisticRegression(C=1.0 / (mu * n), fit_intercept=False, tol=1e-12, max_iter=10000)
    clf.fit(tk.Xs[0], tk.ys[0])
    assert np.allclose(sol.theta[0].T, clf.coef_, atol=1e-6)


def test_total_gradient_and_hessian_match_finite_differences():
    md = _tiny(1, T=2)
    tk, mu = md.train, 1.0
    rng = np.random.default_rng(3)
    lam = 0.3 * rng.standard_normal(tk.dim)
    der = B.task_derivatives(B.inner_solve(lam, tk, mu), tk, mu)

    def F(l):
        sol = B.inner_solve(l, tk, mu)
        return B.query_grad(sol.theta, tk)[0].sum()

    e = rng.standard_normal(tk.dim)
    h = 1e-5
    fd = (F(lam + h * e) - F(lam - h * e)) / (2 * h)
    assert np.isclose(fd, der.G.sum(0) @ e, rtol=1e-6, atol=1e-9)
    # the total Hessian (with the third-order term) against differences of the total gradient
    def G(l):
        return B.task_derivatives(B.inner_solve(l, tk, mu), tk, mu).G.sum(0)

    fdH = (G(lam + h * e) - G(lam - h * e)) / (2 * h)
    assert np.allclose(fdH, der.H_full.sum(0) @ e, rtol=1e-5, atol=1e-8)
    assert not np.allclose(fdH, der.H_sur.sum(0) @ e, rtol=1e-5, atol=1e-8)  # the third-order term matters


def test_third_order_term_matches_torch_func():
    torch = pytest.importorskip("torch")
    from torch.func import jvp, hessian

    md = _tiny(2, T=1)
    tk, mu = md.train, 1.0
    lam = np.zeros(tk.dim)
    sol = B.inner_solve(lam, tk, mu)
    der = B.task_derivatives(sol, tk, mu)
    X = torch.tensor(tk.Xs[0])
    y = torch.tensor(tk.ys[0])
    n, d = X.shape

    def Lsup(th):
        return torch.nn.functional.cross_entropy(X @ th.reshape(d, 5), y, reduction="mean")

    th = torch.tensor(sol.theta[0].ravel())
    u = torch.tensor(der.u[0])
    A = hessian(Lsup)(th).numpy()
    assert np.allclose(A + mu * np.eye(tk.dim), np.linalg.inv(der.Kinv[0]), atol=1e-8)
    DA = jvp(lambda t: hessian(Lsup)(t), (th,), (u,))[1].numpy()
    assert np.allclose(DA, der.DAu[0], atol=1e-8)


def test_cg_and_neumann_match_solve():
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    H = Q @ np.diag(np.linspace(0.5, 2.0, 30)) @ Q.T
    b = rng.standard_normal(30)
    x = np.linalg.solve(H, b)
    assert np.allclose(I.cg_path(H, b, 60)[-1], x, atol=1e-8)
    eta = 1 / I.power_lambda_max(H)
    assert np.allclose(I.neumann_path(H, b, 400, eta)[-1], x, atol=1e-8)
    assert abs(eta * 2.0 - 1) < 1e-2


def test_task_if_tends_to_first_order_as_mu_grows():
    md = _tiny(4, T=5)
    gaps = []
    for mu in (1.0, 1e3):
        res = B.outer_solve(md.train, mu, 0.1)
        tg = I.test_gradient(res.lam, md.test, mu)
        tif = I.task_if(res, tg, 0.1)
        gaps.append(np.abs(tif.full - tif.first_order).max() / np.abs(tif.first_order).max())
    assert gaps[1] < 0.01 < gaps[0]


def test_pools_disjoint_and_flip_mask_exact():
    rng = np.random.default_rng(5)
    pools = Dm.load_pools(rng)
    assert len(pools.X_train) + len(pools.X_test) == 1797
    md = _tiny(6, T=10)
    tr = md.clean_train
    for t in range(len(tr)):
        assert not set(tr.meta["support_idx"][t]) & set(tr.meta["query_idx"][t])
    assert (md.flipped == (md.train.ys != _noisy_ys(md))).all() and md.flipped.sum() > 0
    assert not md.flipped[md.noisy_tasks].any()


def _noisy_ys(md):
    ys = md.clean_train.ys.copy()
    return np.where(md.noisy_tasks[:, None], md.train.ys, ys)


def _loto_case():
    """Task 2 of 6 left out: the full solve, the edited problem's exact inverse Newton matrix and the cold re-solve."""
    md = _tiny(7, T=6)
    mu, rho = 1.0, 0.1
    res = B.outer_solve(md.train, mu, rho)
    H = I.total_hessian(res, rho)
    W = np.ones((1, 6))
    W[0, 2] = 0
    Hinv = np.linalg.inv(H - res.der.H_full[2])[None]
    cold = B.outer_solve(md.train.take([0, 1, 3, 4, 5]), mu, rho)
    return md, mu, rho, res, W, Hinv, cold


def test_retrain_loto_matches_cold_solve():
    md, mu, rho, res, W, Hinv, cold = _loto_case()
    rt = B.retrain(md.train, mu, rho, res.lam, res.sol.theta, W, Hinv)
    assert np.allclose(rt.lam[0], cold.lam, atol=1e-7)


def test_mnist_fixture_reads_and_downsamples(tmp_path):
    m = Dm.check_mnist(FIX)
    assert m["train_images"].shape == (20, 28, 28)
    X = Dm.downsample_8x8(m["train_images"])
    assert X.shape == (20, 64) and X.min() >= 0 and X.max() <= 16
    img = np.zeros((1, 28, 28), np.uint8)
    img[0, :2, :2] = 255  # the top-left 2x2 corner lands in block (0, 0) after 2-pixel padding
    out = Dm.downsample_8x8(img).reshape(8, 8)
    assert np.isclose(out[0, 0], 16 * 4 / 16) and out.sum() == out[0, 0]
    for f in FIX.iterdir():  # gzipped copies read the same
        with open(f, "rb") as src, gzip.open(tmp_path / (f.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    assert (Dm.check_mnist(tmp_path)["test_labels"] == m["test_labels"]).all()


def test_bad_magic_and_size_fail_clearly(tmp_path):
    for f in FIX.iterdir():
        shutil.copy(f, tmp_path / f.name)
    raw = (tmp_path / "train-images-idx3-ubyte").read_bytes()
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x01\x02" + raw[2:])
    with pytest.raises(UserFileError, match="data_path.*magic|magic.*|not an IDX"):
        Dm.check_mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(raw[:-10])
    with pytest.raises(UserFileError, match="truncated"):
        Dm.check_mnist(tmp_path)


def test_config_refuses_bad_parameters():
    import lib.meta_influence as paper

    with pytest.raises(ValueError, match="mu"):
        paper.config(mu=-1, verbose=False)
    with pytest.raises(ValueError, match="n_tasks"):
        paper.config(n_tasks=2, verbose=False)


def test_retrain_broyden_and_stall_refresh_reach_the_cold_solution():
    """Starting Newton matrices that overshoot (steps 2.5x and 8x too long) make the step-halving safeguard fire;
    the Broyden updates (and, for the 8x case, the periodic exact refresh of the default) must still reach the cold
    solve's answer. From the exact matrix, the secant updates must beat the plain chord iteration."""
    md, mu, rho, res, W, Hinv, cold = _loto_case()
    cases = [(2.5, dict(broyden=True, refresh=0)), (2.5, dict(broyden=False, refresh=0)), (2.5, {}), (8.0, {})]
    for scale, kw in cases:
        rt = B.retrain(md.train, mu, rho, res.lam, res.sol.theta, W, scale * Hinv, **kw)
        assert rt.grad_norm[0] <= 1e-10, (scale, kw, rt.grad_norm)
        assert np.allclose(rt.lam[0], cold.lam, atol=1e-8), (scale, kw)
    secant = B.retrain(md.train, mu, rho, res.lam, res.sol.theta, W, Hinv, broyden=True, refresh=0)
    chord = B.retrain(md.train, mu, rho, res.lam, res.sol.theta, W, Hinv, broyden=False, refresh=0)
    assert secant.grad_norm[0] <= 1e-10 and chord.grad_norm[0] <= 1e-10
    assert secant.iters < chord.iters, (secant.iters, chord.iters)  # measured: 20 vs 70


def test_structured_derivatives_match_dense_inverses():
    """The Woodbury route (nC x nC inner Newton matrices) against explicit D x D inverses and products, with a
    removed support point and a removed query point so that the weights enter."""
    md = _tiny(8, T=3)
    tk, mu = md.train, 1.7
    tk.s[0, 1] = 0.0
    tk.q[2, 0] = 0.0
    lam = 0.4 * np.random.default_rng(9).standard_normal(tk.dim)
    sol = B.inner_solve(lam, tk, mu)
    ref = B.task_derivatives_dense(sol, tk, mu)
    fast = B.task_derivatives(sol, tk, mu)
    lean = B.task_derivatives(sol, tk, mu, explicit=False)
    for f in ("G", "u", "H_full", "H_sur", "Kinv", "J", "Hval", "DAu"):
        a, b = getattr(ref, f), getattr(fast, f)
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12 * np.abs(a).max()), f
    assert np.allclose(lean.H_full, ref.H_full, atol=1e-12 * np.abs(ref.H_full).max()) and lean.J is None


def test_all_task_if_matches_reference_and_predicts_loto():
    """One Cholesky factorisation and one batched solve give the same task-IF as the reference solve, and its
    predicted parameter change for the left-out task points along the retrained one."""
    md, mu, rho, res, W, Hinv, cold = _loto_case()
    tg = I.test_gradient(res.lam, md.test, mu)
    ref = I.task_if(res, tg, rho)
    ati = I.all_task_if(res.lam, res.sol.theta, md.train, md.test, mu, rho)
    assert ati.factorisation == "cholesky" and ati.counter.big_factorisations == 1
    assert np.allclose(ati.scores, ref.full, rtol=1e-9, atol=1e-14)
    act = cold.lam - res.lam
    cos = act @ ati.dlam[2] / (np.linalg.norm(act) * np.linalg.norm(ati.dlam[2]))
    assert cos > 0.9, cos


# ---- setting B (MLP inner model, lib.meta_influence.mlp) on tiny sizes ----

def _tiny_mlp_tasks(T=3, n=6, m=5, d=5, C=3, hid=4, seed=0):
    import torch

    from lib.meta_influence import mlp as M

    g = torch.Generator().manual_seed(seed)
    eye = torch.eye(C, dtype=M.DTYPE)
    Xs = torch.randn(T, n, d, generator=g, dtype=M.DTYPE)
    Xq = torch.randn(T, m, d, generator=g, dtype=M.DTYPE)
    ys = torch.randint(0, C, (T, n), generator=g)
    yq = torch.randint(0, C, (T, m), generator=g)
    tasks = M.MLPTasks(Xs, eye[ys], Xq, eye[yq], hid)
    lam = torch.randn(tasks.dim, generator=g, dtype=M.DTYPE) * 0.5
    return tasks, lam


def test_mlp_hvp_equals_explicit_hessian():
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam = _tiny_mlp_tasks()
    th = lam.expand(len(tasks), -1) + 0.1 * torch.randn(len(tasks), tasks.dim, dtype=M.DTYPE,
                                                        generator=torch.Generator().manual_seed(1))
    V = torch.randn(th.shape, dtype=M.DTYPE, generator=torch.Generator().manual_seed(2))
    Hv = M.hvp_loss(th, V, tasks.Xs, tasks.Ys, tasks.hid)
    for t in range(len(tasks)):
        f = lambda p: M.task_losses(p[None], tasks.Xs[t:t + 1], tasks.Ys[t:t + 1], tasks.hid)[0]  # noqa: E731
        Hm = torch.func.hessian(f)(th[t])
        assert torch.allclose(Hm @ V[t], Hv[t], atol=1e-12, rtol=1e-10)


def test_mlp_inner_solve_converges_to_tolerance():
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam = _tiny_mlp_tasks()
    inn = M.inner_solve(lam, tasks, mu=1.0, tol=1e-11)
    g = M.grad_loss(inn.theta, tasks.Xs, tasks.Ys, tasks.hid) + 1.0 * (inn.theta - lam)
    assert float(torch.linalg.vector_norm(g, dim=1).max()) < 1e-11
    assert float((inn.theta - lam).abs().max()) > 1e-3  # the inner problem did adapt


@limit_threads(1)
def test_mlp_inner_solve_converges_far_out():
    """Far from lam* (a trial point of an outer line search, rms(lam) ~ 20 and ~ 700) and with a weak proximal term
    (mu = 0.05: hess L^tr + mu I is indefinite at theta = lam, so the damped Newton path is taken) the solve reaches
    its tolerance (scaled by rms(lam) only beyond 1) at a minimum (positive-definite Newton matrix), and it says so
    when it cannot within max_iter."""
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam0 = _tiny_mlp_tasks(T=4, seed=3)
    tasks = M.MLPTasks(3.0 * tasks.Xs, tasks.Ys, 3.0 * tasks.Xq, tasks.Yq, tasks.hid)
    for scale, mu in ((40.0, 0.05), (1400.0, 1.0)):
        lam = lam0 * scale
        inn = M.inner_solve(lam, tasks, mu=mu, tol=1e-11)
        g = M.grad_loss(inn.theta, tasks.Xs, tasks.Ys, tasks.hid) + mu * (inn.theta - lam)
        rms = float(torch.sqrt((lam * lam).mean()))
        assert rms > 10 and float(torch.linalg.vector_norm(g, dim=1).max()) < 1e-11 * rms
        V = torch.randn(inn.theta.shape, dtype=M.DTYPE, generator=torch.Generator().manual_seed(5))
        M.kinv(inn.theta, tasks, mu, V)  # raises on negative curvature of hess L + mu I at the solution
        assert inn.newton >= 2
        with pytest.raises(RuntimeError, match="Newton steps"):
            M.inner_solve(lam, tasks, mu=mu, tol=1e-11, max_iter=inn.newton - 1)


@limit_threads(1)
def test_mlp_newton_outer_rejects_trial_points_whose_inner_solve_fails(monkeypatch):
    """LOTO by inexact Newton-CG from lam* reaches ||grad F|| < tol, and when the inner solve fails at the first
    trial points of a line search (as far-out trial points did in full mode) the step is halved instead of the run
    failing; the retrained lam is the same local minimum."""
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam = _tiny_mlp_tasks(T=4, seed=1)
    mu, rho = 1.0, 1.0
    base = M.newton_outer(tasks, mu, rho, torch.ones(4, dtype=M.DTYPE), lam, tol=1e-8)
    w = torch.tensor([1.0, 1.0, 0.0, 1.0], dtype=M.DTYPE)
    ref = M.newton_outer(tasks, mu, rho, w, base.lam, base.pt.theta, tol=1e-10)
    assert ref.grad_norm < 1e-10 and float(torch.linalg.vector_norm(ref.lam - base.lam)) > 1e-3
    real_at, calls = M.at, {"n": 0, "fail": range(2, 4)}

    def flaky_at(*args, **kw):
        calls["n"] += 1
        if calls["n"] in calls["fail"]:  # the first two trial points of the first step
            raise RuntimeError("mlp.inner_solve: (simulated) stall")
        return real_at(*args, **kw)

    monkeypatch.setattr(M, "at", flaky_at)
    got = M.newton_outer(tasks, mu, rho, w, base.lam, base.pt.theta, tol=1e-10)
    assert calls["n"] > 3 and got.grad_norm < 1e-10
    assert float(torch.linalg.vector_norm(got.lam - ref.lam)) < 1e-7
    calls["n"], calls["fail"] = 0, range(2, 10**6)  # every trial point fails: a clear error, not a wrong answer
    with pytest.raises(RuntimeError, match="no trial point"):
        M.newton_outer(tasks, mu, rho, w, base.lam, base.pt.theta, tol=1e-10)


def test_mlp_total_hvp_matches_finite_difference_of_total_gradient():
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam = _tiny_mlp_tasks()
    mu, rho = 2.0, 0.5
    w = torch.tensor([1.0, 0.0, 1.0], dtype=M.DTYPE)  # a removed task must drop out
    v = torch.randn(tasks.dim, dtype=M.DTYPE, generator=torch.Generator().manual_seed(3))
    pt = M.at(lam, tasks, mu)
    eps = 1e-5
    fd = (M.outer_grad(M.at(lam + eps * v, tasks, mu), w, rho) - M.outer_grad(M.at(lam - eps * v, tasks, mu), w, rho)) / (2 * eps)
    full = M.total_hvp(pt, tasks, mu, rho, w, v, "full")
    sur = M.total_hvp(pt, tasks, mu, rho, w, v, "surrogate")
    err = float(torch.linalg.vector_norm(full - fd) / torch.linalg.vector_norm(fd))
    assert err < 1e-6
    # the third-order term is not negligible here, so the surrogate must differ from the derivative
    assert float(torch.linalg.vector_norm(sur - fd) / torch.linalg.vector_norm(fd)) > 100 * err


def test_mlp_task_if_tends_to_first_order_as_mu_grows():
    """J = mu K^{-1} -> I as mu grows, so the pieces of the full task-IF (total gradient G_k, total-Hessian products)
    must approach the first-order IF's (grad L^val_k, sum_k hess L^val_k + rho I); at mu = 1 they differ."""
    import torch

    from lib.meta_influence import mlp as M

    tasks, lam = _tiny_mlp_tasks(T=4, seed=4)
    w = torch.ones(len(tasks), dtype=M.DTYPE)
    v = torch.randn(tasks.dim, dtype=M.DTYPE, generator=torch.Generator().manual_seed(6))
    gaps = []
    for mu in (1.0, 300.0):
        pt = M.at(lam, tasks, mu)
        hv_full = M.total_hvp(pt, tasks, mu, 1.0, w, v, "full")
        hv_fo = M.total_hvp(pt, tasks, mu, 1.0, w, v, "first_order")
        gaps.append(max(float(torch.linalg.vector_norm(pt.G - pt.g_val) / torch.linalg.vector_norm(pt.g_val)),
                        float(torch.linalg.vector_norm(hv_full - hv_fo) / torch.linalg.vector_norm(hv_fo))))
    assert gaps[1] < 0.05 and gaps[1] < 0.1 * gaps[0], gaps


def test_sine_tasks_follow_the_benchmark():
    from lib.meta_influence import mlp as M

    st = M.make_sine_tasks(np.random.default_rng(4), 30, k_shot=10, q_shot=7)
    t = st.tasks
    assert t.Xs.shape == (30, 10, 1) and t.Yq.shape == (30, 7, 1) and t.dim == 40 + 40 + 40 + 1
    assert st.amp.min() >= 0.1 and st.amp.max() <= 5.0 and st.phase.min() >= 0 and st.phase.max() <= np.pi
    assert float(t.Xs.abs().max()) <= 1.0 and float(t.Xs.abs().max()) > 0.8  # x / 5, x uniform in [-5, 5]
    for X, Y in ((t.Xs, t.Ys), (t.Xq, t.Yq)):
        want = st.amp[:, None] * np.sin(X[..., 0].numpy() * st.x_scale - st.phase[:, None])
        assert np.allclose(Y[..., 0].numpy(), want, atol=1e-12)
    again = M.make_sine_tasks(np.random.default_rng(4), 30, k_shot=10, q_shot=7)
    assert np.array_equal(again.amp, st.amp) and bool((again.tasks.Xq == t.Xq).all())
    with pytest.raises(ValueError, match="k_shot"):
        M.make_sine_tasks(np.random.default_rng(0), 3, k_shot=0)


def test_mlp_regression_loss_is_half_mse_and_its_hvp_exact():
    import torch

    from lib.meta_influence import mlp as M

    st = M.make_sine_tasks(np.random.default_rng(2), 3, k_shot=6, q_shot=4, hid=5)
    t = st.tasks
    th = torch.randn(3, t.dim, dtype=M.DTYPE, generator=torch.Generator().manual_seed(0))
    d, h = 1, 5
    W1, b1 = th[:, :d * h].reshape(3, d, h), th[:, d * h:d * h + h]
    W2, b2 = th[:, d * h + h:d * h + 2 * h].reshape(3, h, 1), th[:, -1:]
    pred = torch.tanh(t.Xs @ W1 + b1[:, None]) @ W2 + b2[:, None]
    assert torch.allclose(M.task_losses(th, t.Xs, t.Ys, h), 0.5 * ((pred - t.Ys) ** 2).mean((1, 2)), atol=1e-13)
    V = torch.randn(th.shape, dtype=M.DTYPE, generator=torch.Generator().manual_seed(1))
    Hv = M.hvp_loss(th, V, t.Xs, t.Ys, h)
    for i in range(3):
        f = lambda p: M.task_losses(p[None], t.Xs[i:i + 1], t.Ys[i:i + 1], h)[0]  # noqa: E731
        assert torch.allclose(torch.func.hessian(f)(th[i]) @ V[i], Hv[i], atol=1e-12, rtol=1e-10)


@limit_threads(1)
def test_sinusoid_task_if_runs_end_to_end_on_a_tiny_problem():
    import lib.meta_influence as P
    from lib.meta_influence import experiments as E

    cfg = P.config(mode="quick", seed=0, verbose=False)
    assert E.sinusoids(cfg) is None  # full mode only unless sizes are given
    out = E.sinusoids(cfg, n_tasks=5, n_test_tasks=3, n_loto=3, k_shot=5, hid=3)
    assert out["dim"] == 3 + 3 + 3 + 1 and len(out["df"]) == 3 and out["max_grad"] < 1e-8 and out["lam_grad"] < 1e-8
    assert out["df"].actual.abs().max() > 0  # removing a task moved phi


def test_mlp_experiments_run_torch_on_one_thread_even_when_torch_was_not_loaded():
    """setting_b and sinusoids import torch lazily, inside their limit_threads(1) blocks, and a notebook imports no torch
    before them: check in a fresh interpreter that the MLP work sees one torch thread
    (with torch's default, two threads on tiny tensors made a loaded 2-core machine several times slower)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import lib.meta_influence as P\n"
        "from lib.meta_influence import experiments as E\n"
        "assert 'torch' not in sys.modules\n"
        "seen = []\n"
        "def spy(*a, **k):\n"
        "    import torch\n"
        "    seen.append(torch.get_num_threads())\n"
        "    return None\n"
        "E._mlp_task_if_vs_loto = spy\n"
        "cfg = P.config(mode='quick', seed=0, verbose=False)\n"
        "try:\n"
        "    E.setting_b(cfg, n_tasks=5, n_test_tasks=3, n_loto=2)\n"
        "    E.sinusoids(cfg, n_tasks=5, n_test_tasks=3, n_loto=2, k_shot=5, hid=3)\n"
        "except TypeError:\n"
        "    pass\n"
        "print(seen)\n"
    )
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[1, 1]", out.stdout
