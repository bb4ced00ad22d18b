"""Unit tests of lib.rule_ensemble_a2c (seconds): rules, objectives, search, advantages, PPO loss, config."""
import numpy as np
import pytest
import torch

import lib.rule_ensemble_a2c as P
from lib.rule_ensemble_a2c.a2c import sample_actions
from lib.rule_ensemble_a2c.rules import propositions


# -- rules ---------------------------------------------------------------------------------------------------------
def test_rule_evaluate_and_to_str_on_hand_made_array():
    X = np.array([[0.0, 1.0], [0.5, -1.0], [1.0, 0.0], [2.0, 2.0]])
    r = P.Rule(((0, ">=", 0.5), (1, "<=", 0.0)))
    assert r.evaluate(X).tolist() == [False, True, True, False]
    assert r.to_str(["theta", "omega"]) == "theta >= 0.5 AND omega <= 0"
    assert P.Rule(((1, ">=", 1.0),)).evaluate(X).tolist() == [True, False, False, True]
    assert P.Rule().evaluate(X).all() and P.Rule().to_str() == "TRUE"
    with pytest.raises(ValueError, match="operator"):
        P.Rule(((0, ">", 1.0),))


def test_thresholds_equal_numpy_quantiles():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    th = P.quantile_thresholds(X, 7)
    levels = np.arange(1, 8) / 8
    for j in range(3):
        np.testing.assert_allclose(th[j], np.quantile(X[:, j], levels))


def test_ensemble_outputs_logits_and_table():
    ens = P.RuleEnsemble(2, 3, k_max=4, c_max=2)
    ens.add_rule(P.Rule(((0, ">=", 0.0),)))
    ens.add_rule(P.Rule(((0, "<=", 1.0), (1, ">=", 0.5))))
    ens.W[0] = [1.0, 0.0, -1.0]
    ens.W[1] = [0.0, 2.0, 0.0]
    ens.b[:] = [0.1, 0.2, 0.3]
    X = np.array([[0.5, 1.0], [-1.0, 1.0], [2.0, 1.0]])
    Q = ens.outputs(X)
    np.testing.assert_array_equal(Q, [[1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_allclose(ens.logits(X), [[1.1, 2.2, -0.7], [0.1, 2.2, 0.3], [1.1, 0.2, -0.7]])
    assert ens.greedy(X).tolist() == [1, 1, 0]
    t = ens.table(["a", "b"], ["l", "m", "r"], X=X)
    assert t["rule"].tolist() == ["(bias) TRUE", "a >= 0", "a <= 1 AND b >= 0.5"]
    np.testing.assert_allclose(t["support"], [1.0, 2 / 3, 2 / 3])
    with pytest.raises(ValueError, match="conditions"):
        ens.add_rule(P.Rule(((0, ">=", 0.0), (1, ">=", 0.0), (0, "<=", 3.0))))


def test_closed_form_weight_gradient_matches_autograd():
    rng = np.random.default_rng(1)
    B, d, A = 64, 3, 3
    X = rng.normal(size=(B, d))
    ens = P.RuleEnsemble(d, A, k_max=5, c_max=2)
    for k in range(4):
        ens.add_rule(P.Rule(((k % d, ">=", float(rng.normal() * 0.5)),)))
    ens.W[:4] = rng.normal(size=(4, A))
    ens.b[:] = rng.normal(size=A)
    a, adv, beta = rng.integers(0, A, B), rng.normal(size=B), 0.1
    gW, gb, _ = ens.grad(X, a, adv, ent_coef=beta)
    W = torch.tensor(ens.W, requires_grad=True)
    b = torch.tensor(ens.b, requires_grad=True)
    logp = torch.log_softmax(b + torch.tensor(ens.outputs(X)) @ W, dim=1)
    J = (logp[torch.arange(B), torch.tensor(a)] * torch.tensor(adv)).mean() - beta * (logp.exp() * logp).sum(1).mean()
    J.backward()
    np.testing.assert_allclose(gW, W.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(gb, b.grad.numpy(), atol=1e-10)
    assert np.allclose(gW[4], 0.0)  # an unused slot gets no gradient


# -- objectives and search -------------------------------------------------------------------------------------------
def test_ogb_objective_matches_explicit_projector_and_gb_formula():
    rng = np.random.default_rng(2)
    B = 40
    Q = (rng.random((B, 3)) < 0.4).astype(float)
    G = rng.normal(size=(B, 2))
    q = (rng.random(B) < 0.3).astype(float)
    Qbar = np.concatenate([np.ones((B, 1)), Q], axis=1)
    Pp = np.eye(B) - Qbar @ np.linalg.pinv(Qbar)
    eps = 0.01
    want = np.linalg.norm((Pp @ G).T @ q) / (np.linalg.norm(Pp @ q) + eps)
    assert P.ogb_objective(q, Qbar, G, eps) == pytest.approx(want, rel=1e-9)
    assert P.gb_objective(q, G) == pytest.approx(np.linalg.norm(G.T @ q) / np.sqrt(q.sum()), rel=1e-12)
    # a candidate inside the span of the current rules has (almost) nothing new to offer under OGB
    assert P.ogb_objective(Q[:, 0], Qbar, G, eps) < 1e-6


def test_search_finds_planted_rule_and_rejects_unsupported_candidates():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(400, 2))
    target = (X[:, 0] >= 0.2) & (X[:, 1] <= -0.1)
    G = np.zeros((400, 2))
    G[target, 1], G[target, 0] = 1.0, -1.0
    G += 0.05 * rng.normal(size=G.shape)
    thresholds = [np.array([-0.1, 0.2]), np.array([-0.1, 0.2])]
    res = P.search_rule(X, G, np.zeros((400, 0)), thresholds, max_len=2, beam=3, objective="ogb")
    assert set(res.rule.conds) == {(0, ">=", 0.2), (1, "<=", -0.1)}
    # every candidate is true on fewer than min_support of the buffer: nothing may be selected
    Xc = np.zeros((400, 1))
    Xc[:3, 0] = 5.0  # "x >= 5" holds on 3 of 400 states (< 1%); "x <= 5" on all, but it is the empty rule's twin
    Gc = np.zeros((400, 2))
    Gc[:3, 1] = 10.0
    res = P.search_rule(Xc, Gc, np.ones((400, 1)), [np.array([5.0])], max_len=1, min_support=0.01)
    assert res is None
    res = P.search_rule(Xc, Gc, np.ones((400, 1)), [np.array([5.0])], max_len=1, min_support=0.005)
    assert res is not None and res.rule.conds == ((0, ">=", 5.0),)


def test_search_rejects_a_rule_already_in_the_ensemble():
    X = np.array([[0.0], [1.0], [2.0], [3.0]] * 25)
    hit = (X[:, 0] >= 2).astype(float)
    G = np.stack([-hit, hit], axis=1)
    props, Pm = propositions(X, [np.array([2.0])])
    assert [p[:2] for p in props] == [(0, ">="), (0, "<=")]
    fresh = P.search_rule(X, G, np.zeros((100, 0)), [np.array([2.0])], max_len=1, objective="gb")
    assert fresh.rule.conds == ((0, ">=", 2.0),)
    res = P.search_rule(X, G, hit[:, None], [np.array([2.0])], max_len=1, objective="gb")
    assert res.rule.conds == ((0, "<=", 2.0),)


# -- advantages ------------------------------------------------------------------------------------------------------
def _brute_gae(r, v, nv, term, trunc, gamma, lam):
    T = len(r)
    out = np.zeros(T)
    for t in range(T):
        total, coef = 0.0, 1.0
        for l in range(t, T):
            delta = r[l] + gamma * (0.0 if term[l] else nv[l]) - v[l]
            total += coef * delta
            if term[l] or trunc[l]:
                break
            coef *= gamma * lam
        out[t] = total
    return out


def _brute_nstep(r, v, nv, term, trunc, gamma):
    """Σ γ^l r_{t+l} up to the episode's end or the rollout's end, plus γ^n V(s_{t+n}) unless terminated."""
    T = len(r)
    out = np.zeros(T)
    for t in range(T):
        g, disc = 0.0, 1.0
        for l in range(t, T):
            g += disc * r[l]
            disc *= gamma
            if term[l]:
                break
            if trunc[l] or l == T - 1:
                g += disc * nv[l]
                break
        out[t] = g - v[t]
    return out


def test_gae_and_nstep_match_brute_force_with_termination_and_truncation():
    rng = np.random.default_rng(4)
    T = 9
    r, v, nv = rng.normal(size=T), rng.normal(size=T), rng.normal(size=T)
    term = np.zeros(T, dtype=bool)
    trunc = np.zeros(T, dtype=bool)
    term[2], trunc[5] = True, True
    # V(s_{t+1}) is the next row's V(s_t) inside an episode; at an episode's end it is V of the true last state
    nv[:-1] = np.where(term[:-1] | trunc[:-1], nv[:-1], v[1:])
    for lam in (0.0, 0.7, 0.95):
        got = P.gae(r[:, None], v[:, None], nv[:, None], term[:, None], trunc[:, None], 0.9, lam)[:, 0]
        np.testing.assert_allclose(got, _brute_gae(r, v, nv, term, trunc, 0.9, lam), atol=1e-12)
    got = P.gae(r[:, None], v[:, None], nv[:, None], term[:, None], trunc[:, None], 0.9, 1.0)[:, 0]
    np.testing.assert_allclose(got, _brute_nstep(r, v, nv, term, trunc, 0.9), atol=1e-12)


def test_ppo_clip_loss_matches_hand_computation():
    lp_new = torch.log(torch.tensor([0.6, 0.2, 0.5]))
    lp_old = torch.log(torch.tensor([0.4, 0.4, 0.5]))
    adv = torch.tensor([1.0, -2.0, 3.0])
    # ratios 1.5, 0.5, 1.0; clip 0.2: min(1.5, 1.2)·1 = 1.2; min(0.5·-2, 0.8·-2) = -1.6; 3.0 → mean of -(…)
    want = -(1.2 - 1.6 + 3.0) / 3
    assert float(P.ppo_clip_loss(lp_new, lp_old, adv, 0.2)) == pytest.approx(want, rel=1e-6)


def test_sample_actions_follows_probabilities():
    rng = np.random.default_rng(5)
    p = np.tile([[0.2, 0.5, 0.3]], (20000, 1))
    a = sample_actions(p, rng)
    np.testing.assert_allclose(np.bincount(a, minlength=3) / len(a), [0.2, 0.5, 0.3], atol=0.015)


# -- environments, training, config -------------------------------------------------------------------------------------
def test_toy_text_states_are_decoded_into_coordinates():
    env = P.VecEnv("Taxi-v4", 2, seed=0)
    X = env.reset()
    assert X.shape == (2, 4) and X[:, :2].max() <= 4 and X[:, 2].max() <= 4 and X[:, 3].max() <= 3
    env.close()


@pytest.mark.parametrize("name", ["Acrobot-v1", "MountainCar-v0", "CliffWalking-v1", "Taxi-v4", "FrozenLake-v1",
                                  "LunarLander-v3"])
def test_vectorised_envs_equal_gymnasium_step_for_step(name):
    """The numpy copies (and LunarLander's wrapper-free loop) return gymnasium's observations, rewards and flags bit
    for bit, through terminations, time-limit truncations, next-step autoresets and reseeded resets (a policy that
    reaches the goal often)."""
    if name == "LunarLander-v3" and not P.box2d_available():
        pytest.skip("LunarLander-v3 needs the optional package box2d")
    goal = {"Acrobot-v1": lambda X: np.where(X[:, 5] > 0, 2, 0),  # pump energy: terminates in ~100 steps
            "MountainCar-v0": lambda X: np.where(X[:, 1] > 0, 2, 0)}.get(name)
    a, b = P.VecEnv(name, 5, seed=17, backend="gymnasium"), P.VecEnv(name, 5, seed=17, backend="numpy")
    xa, xb = a.reset(), b.reset()
    assert xa.dtype == xb.dtype and np.array_equal(xa, xb)
    rng = np.random.default_rng(0)
    ends = terms = 0
    for t in range(1200):
        act = rng.integers(0, a.n_actions, 5)
        if goal is not None:
            act = np.where(rng.random(5) < 0.2, act, goal(xa))
        ra, rb = a.step(act), b.step(act)
        for u, v in zip(ra, rb):
            assert u.dtype == v.dtype and np.array_equal(u, v), (name, t)
        xa = ra[0]
        ends += int((ra[2] | ra[3]).sum())
        terms += int(ra[2].sum())
        if t in (400, 800):  # a reseeded reset restarts from the same states; a plain one continues the streams
            if t == 400:
                a.reseed(), b.reseed()
            xa, xb = a.reset(), b.reset()
            assert np.array_equal(xa, xb)
    assert ends >= 5 and (terms >= 3 or name in ("CliffWalking-v1", "Taxi-v4"))  # random play rarely ends these
    a.close(), b.close()
    with pytest.raises(ValueError, match="'backend'"):
        P.VecEnv(name, 2, backend="jax")


def test_runs_do_not_depend_on_the_number_of_workers():
    from lib.rule_ensemble_a2c.experiments import run_jobs

    kw = dict(mode="full", envs=["CartPole-v1"], total_steps=1200, n_seeds=1, verbose=False, out_dir="/tmp/rea2c_t")
    jobs = [("CartPole-v1", "A2C-MLP", 1e-3, 5), ("CartPole-v1", "NSAC-OGB", 0.1, 6)]
    one = run_jobs(P.config(workers=1, **kw), "train", jobs)
    two = run_jobs(P.config(workers=2, **kw), "train", jobs)
    X = np.random.default_rng(0).normal(size=(64, 4))
    for (r1, t1), (r2, t2) in zip(one, two):
        assert r1.curve.equals(r2.curve) and r1.final_return == r2.final_return
        assert np.array_equal(r1.greedy(X), r2.greedy(X))
        assert [t["final_return"] for t in t1] == [t["final_return"] for t in t2]
    assert len(one[0][1]) == 2 and not one[1][1]  # trees are distilled from the MLP run only


def test_short_training_runs_are_reproducible_and_respect_budgets():
    hp = P.A2CHP(k_max=3, rule_every=5, warmup_steps=200, buffer_size=256, actor_lr=0.1)
    a = P.train_a2c("CartPole-v1", "rules", hp, total_steps=2000, seed=3, n_evals=2, eval_episodes=3, eval_at_k=(1, 2))
    b = P.train_a2c("CartPole-v1", "rules", hp, total_steps=2000, seed=3, n_evals=2, eval_episodes=3, eval_at_k=(1, 2))
    assert a.curve.equals(b.curve) and np.array_equal(a.actor.ens.W, b.actor.ens.W)
    assert a.env_steps == 2000 and 1 <= a.n_rules <= 3 and max(a.actor.ens.condition_lengths()) <= hp.c_max
    m = P.train_a2c("CartPole-v1", "mlp", P.A2CHP(), total_steps=800, seed=0, n_evals=1, eval_episodes=2)
    assert m.env_steps == 800 and len(m.curve) == 1


def test_config_refuses_bad_parameters():
    with pytest.raises(ValueError, match="'envs'"):
        P.config(envs=["Pong-v5"], verbose=False)
    with pytest.raises(ValueError, match="'c_max'"):
        P.config(c_max=0, verbose=False)
    with pytest.raises(ValueError, match="'rule_optimizer'"):
        P.config(rule_optimizer="lbfgs", verbose=False)
    with pytest.raises(ValueError, match="'envs'"):
        P.config(envs="CartPole-v1", verbose=False)
    with pytest.raises(ValueError, match="'workers'"):
        P.config(workers=0, verbose=False)
    if not P.box2d_available():
        with pytest.raises(ValueError, match="box2d"):
            P.config(envs=["LunarLander-v3"], verbose=False)


def test_tuning_cli_resumes_and_writes_the_same_file(tmp_path, monkeypatch):
    """An interrupted grid resumes where it stopped and ends with the same file as one uninterrupted call (runs
    replaced by a deterministic stand-in; rows of other environments are kept, stale fingerprints dropped)."""
    from lib.rule_ensemble_a2c import tune

    path = tmp_path / "tuning_quick.csv"
    monkeypatch.setattr(tune, "tuning_path", lambda mode: path)
    calls = []

    def fake(cfg, kind, jobs, desc=""):
        for env, m, lr, s in jobs:
            calls.append((m, lr, s))
            yield dict(env=env, method=m, lr=lr, seed=s, final=lr * s / 7.0, auc=-s / 3.0, steps=40000,
                       key=tune.tuning_key(cfg, env))

    monkeypatch.setattr(tune, "iter_jobs", fake)
    path.write_text("env,method,lr,seed,final,auc,steps,key\nTaxi-v4,A2C-MLP,0.001,9000,1,2,3,abc\n"
                    "CartPole-v1,A2C-MLP,0.001,9000,5,5,5,stale\n")
    tune.main(["--mode", "quick"])
    full = path.read_text()
    n = len(calls)
    assert n == 32 and full.count("\n") == 34 and "Taxi-v4" in full and "stale" not in full
    lines = full.splitlines()
    path.write_text("\n".join(lines[:5] + lines[9:]) + "\n")  # drop four finished runs: only they run again
    tune.main(["--mode", "quick"])
    assert len(calls) == n + 4 and path.read_text() == full
