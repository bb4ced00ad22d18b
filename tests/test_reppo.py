"""Unit tests of lib.reppo: the batched Pendulum, HL-Gauss, soft TD(λ), PPO's pieces, the policy, Adam, training."""
import math
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import lib.reppo as paper
from lib.reppo.envs import BatchedPendulum, GymnasiumBatch
from lib.reppo.grad_variance import gradient_variance
from lib.reppo.hlgauss import decode, hl_gauss_targets, support
from lib.reppo.networks import Adam, Critic, TanhGaussianActor
from lib.reppo.ppo import PpoHP, ValueNorm, gae, matched_ppo_hp, ppo_clip_loss, train_ppo, value_loss
from lib.reppo.reppo import ReppoHP, soft_td_lambda, train_reppo
from lib.reppo.sac import ReplayBuffer


# --- the torch-batched Pendulum against gymnasium's Pendulum-v1 -------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_batched_pendulum_matches_gymnasium_step_for_step(seed):
    n = 3
    gyms = [gym.make("Pendulum-v1") for _ in range(n)]
    first = [e.reset(seed=seed * 10 + i)[0] for i, e in enumerate(gyms)]
    states = np.array([e.unwrapped.state for e in gyms])
    env = BatchedPendulum(n)
    obs = env.set_state(states[:, 0], states[:, 1])
    assert np.allclose(obs.numpy(), np.array(first), atol=1e-6)
    rng = np.random.default_rng(seed)
    for t in range(1, 201):
        acts = rng.uniform(-3.0, 3.0, size=(n, 1)).astype(np.float32)  # includes torques gymnasium clips
        out = [e.step(a) for e, a in zip(gyms, acts)]
        nobs, rew, term, trunc, final = env.step(torch.as_tensor(acts))
        g_obs = np.array([o[0] for o in out])
        g_rew = np.array([o[1] for o in out])
        assert np.allclose(final.numpy(), g_obs, atol=1e-5, rtol=0), t
        assert np.allclose(rew.numpy(), g_rew, atol=1e-4, rtol=1e-6), t
        assert not term.any() and not any(o[2] for o in out)
        assert [bool(x) for x in trunc] == [bool(o[3]) for o in out], t
        assert bool(trunc.all()) == (t == 200)
        if t < 200:
            assert torch.equal(nobs, final)
            # the internal float64 state follows gymnasium's to rounding
            g_state = np.array([e.unwrapped.state for e in gyms])
            assert np.allclose(env.th.numpy(), g_state[:, 0], atol=1e-9)
            assert np.allclose(env.thdot.numpy(), g_state[:, 1], atol=1e-9)
    # after the time limit every pendulum was reset: new observations, step counters back to zero
    assert not torch.allclose(nobs, final) and int(env.steps.max()) == 0


def test_batched_pendulum_reset_distribution_and_action_scaling():
    g = torch.Generator().manual_seed(0)
    env = BatchedPendulum(4096, generator=g)
    env.reset()
    assert float(env.th.abs().max()) <= math.pi and float(env.thdot.abs().max()) <= 1.0
    assert abs(float(env.th.mean())) < 0.1 and abs(float(env.thdot.std()) - 1 / math.sqrt(3)) < 0.02
    assert torch.allclose(env.scale_action(torch.tensor([[-1.0], [0.0], [1.0], [3.0]])),
                          torch.tensor([[-2.0], [0.0], [2.0], [2.0]]))


def test_gymnasium_batch_autoresets_with_final_observation():
    env = GymnasiumBatch("Pendulum-v1", 2, seed=3)
    obs = env.reset()
    assert obs.shape == (2, 3) and env.max_episode_steps == 200
    for t in range(200):
        obs, rew, term, trunc, final = env.step(torch.zeros(2, 1))
    assert bool(trunc.all()) and not bool(term.any())
    assert not torch.allclose(obs, final)  # obs: first of the next episode; final: last of the old one
    env.close()


def test_mujoco_task_without_mujoco_names_the_parameter(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # as if the optional package were not installed
    with pytest.raises(ValueError, match="'gym_envs'.*mujoco"):
        paper.config(mode="quick", gym_envs=["HalfCheetah-v5"], out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="'env'.*mujoco"):
        paper.config(mode="quick", env="Hopper-v5", out_dir=str(tmp_path), verbose=False)
    with pytest.raises(ValueError, match="'env'.*mujoco"):
        paper.make_env("Hopper-v5", 2, parameter="env")


def test_evaluation_restarts_from_the_same_states():
    from lib.reppo.networks import RunningNorm
    from lib.reppo.rollout import evaluate

    env = paper.make_env("BatchedPendulum", 8, seed=4)
    policy = lambda obs: torch.tanh(obs[:, 2:3])  # noqa: E731
    first = evaluate(policy, RunningNorm(3), env, 8)
    assert evaluate(policy, RunningNorm(3), env, 8) == first


def test_config_rejects_bad_parameters():
    with pytest.raises(ValueError, match="'env'"):
        paper.config(env="CartPole-v1", out_dir="/tmp/reppo_test", verbose=False)
    with pytest.raises(ValueError, match="'lr'"):
        paper.config(lr=-1.0, out_dir="/tmp/reppo_test", verbose=False)
    with pytest.raises(ValueError, match="'gym_envs'"):
        paper.config(gym_envs="Pendulum-v1", out_dir="/tmp/reppo_test", verbose=False)


# --- HL-Gauss -----------------------------------------------------------------------------------------------------
def test_hl_gauss_targets_are_probabilities_whose_mean_decodes_to_the_target():
    vmin, vmax, n = -165.0, 0.0, 101
    width = (vmax - vmin) / (n - 1)
    y = torch.linspace(vmin + 3 * width, vmax - 3 * width, 257, dtype=torch.float64)
    p = hl_gauss_targets(y, vmin, vmax, n)
    assert p.shape == (257, n) and bool((p >= 0).all())
    assert torch.allclose(p.sum(-1), torch.ones(257, dtype=torch.float64), atol=1e-12)
    mean = p @ support(vmin, vmax, n).double()
    assert float((mean - y).abs().max()) < 1e-3 * width  # Poisson summation: error ~ exp(-2 pi^2 0.75^2) bins
    # decoding the log-probabilities as logits returns the target too
    assert torch.allclose(decode(torch.log(p.float()), support(vmin, vmax, n)), y.float(), atol=1e-2 * width)
    # targets outside the support are clamped to its edge
    q = hl_gauss_targets(torch.tensor([vmax + 50.0, vmax]), vmin, vmax, n)
    assert torch.allclose(q[0], q[1]) and int(q[0].argmax()) == n - 1


def test_critic_starts_near_zero_value():
    torch.manual_seed(0)
    c = Critic(3, 1, hidden=32, n_bins=101, vmin=-165.0, vmax=0.0)
    q = c.q(torch.randn(64, 3), torch.rand(64, 1) * 2 - 1)
    assert float(q.detach().abs().max()) < 0.05 * 165


# --- soft TD(λ) ---------------------------------------------------------------------------------------------------
def _brute_force_soft_td(r, done, trunc, nq, gamma, lam):
    """λ-returns as weighted sums of n-step returns, written out scalar by scalar."""
    T, N = r.shape
    trunc = trunc.clone()
    trunc[-1] = 1.0
    out = torch.zeros(T, N, dtype=torch.float64)
    for e in range(N):
        for t in range(T):
            # G(n): n rewards then a bootstrap with Q'_{t+n-1}, unless the episode ended before
            def g(n):
                tot = 0.0
                for k in range(n):
                    tot += gamma ** k * float(r[t + k, e])
                    if done[t + k, e]:
                        return tot
                return tot + gamma ** n * float(nq[t + n - 1, e])

            end = t
            while not (done[end, e] or trunc[end, e]):
                end += 1
            m = end - t + 1  # the longest n-step return available (ends in a terminal or a bootstrap)
            out[t, e] = sum((1 - lam) * lam ** (n - 1) * g(n) for n in range(1, m)) + lam ** (m - 1) * g(m)
    return out


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
def test_soft_td_lambda_equals_brute_force(lam):
    g = torch.Generator().manual_seed(5)
    T, N, gamma = 7, 4, 0.9
    r = torch.randn(T, N, generator=g, dtype=torch.float64)
    nq = torch.randn(T, N, generator=g, dtype=torch.float64) * 3
    done = torch.zeros(T, N, dtype=torch.float64)
    trunc = torch.zeros(T, N, dtype=torch.float64)
    done[2, 0] = 1.0
    done[5, 1] = 1.0
    trunc[3, 2] = 1.0
    done[0, 3], trunc[4, 3] = 1.0, 1.0
    got = soft_td_lambda(r, done, trunc, nq, gamma, lam)
    want = _brute_force_soft_td(r, done, trunc, nq, gamma, lam)
    assert torch.allclose(got, want, atol=1e-10)
    if lam == 0.0:  # one-step soft TD target
        assert torch.allclose(got, r + gamma * torch.where(trunc.bool() | (torch.arange(T)[:, None] == T - 1),
                                                           nq, (1 - done) * nq), atol=1e-12)


# --- PPO ----------------------------------------------------------------------------------------------------------
def test_ppo_clipped_loss_matches_hand_computation():
    ratio = torch.tensor([1.5, 0.5, 1.1, 0.7, 1.0])
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 2.0])
    logp_old = torch.tensor([-1.0, -0.3, -2.0, -0.5, -1.2])
    logp_new = (logp_old + torch.log(ratio)).requires_grad_(True)
    loss = ppo_clip_loss(logp_new, logp_old, adv, clip=0.2)
    # per sample max(-A r, -A clip(r)): -1.2, -0.5, 1.1, 0.8, -2.0
    assert abs(float(loss.detach()) - (-1.2 - 0.5 + 1.1 + 0.8 - 2.0) / 5) < 1e-6
    loss.backward()
    # clipped samples (r = 1.5 with A > 0, r = 0.7 with A < 0) get no gradient; the others -A r / 5
    want = torch.tensor([0.0, -0.5, 1.1, 0.0, -2.0]) / 5
    assert torch.allclose(logp_new.grad, want, atol=1e-6)


def test_gae_special_cases():
    g = torch.Generator().manual_seed(1)
    r, v, last = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g), torch.randn(2, generator=g)
    nv = torch.cat([v[1:], last[None]])  # V(s_{t+1}) of the same rollout
    done = torch.zeros(6, 2)
    done[3, 1] = 1.0
    td = r + 0.9 * (1 - done) * nv - v
    assert torch.allclose(gae(r, v, nv, done, 0.9, 0.0), td, atol=1e-6)
    a = gae(r, v, nv, done, 1.0, 1.0)  # λ = γ = 1: Monte Carlo return to the cut, minus V
    want0 = r[:, 0].flip(0).cumsum(0).flip(0) + nv[-1, 0] - v[:, 0]
    assert torch.allclose(a[:, 0], want0, atol=1e-5)
    assert torch.allclose(a[3, 1], r[3, 1] - v[3, 1], atol=1e-6)


# --- policy, optimiser, estimators --------------------------------------------------------------------------------
def test_ppo_value_loss_without_clipping_is_plain_mse():
    g = torch.Generator().manual_seed(2)
    v = torch.randn(64, generator=g).requires_grad_(True)
    v_old, ret = torch.randn(64, generator=g), 30.0 * torch.randn(64, generator=g)
    loss = value_loss(v, v_old, ret, clip=None)
    want = 0.5 * torch.nn.functional.mse_loss(v, ret)
    assert torch.allclose(loss, want)
    (gl,) = torch.autograd.grad(loss, v)
    (gw,) = torch.autograd.grad(want, v)
    assert torch.allclose(gl, gw)
    # CleanRL's clipped loss is larger when targets are far from the old values and the clip is small
    assert float(value_loss(v, v_old, ret, clip=0.2).detach()) > float(loss) + 1.0
    assert torch.allclose(value_loss(v, v_old, ret, clip=1e9), loss)
    assert PpoHP().value_clip is None and matched_ppo_hp().value_clip == 0.2


def test_value_norm_matches_the_statistics_of_everything_seen():
    g = torch.Generator().manual_seed(4)
    chunks = [5.0 + 40.0 * torch.randn(n, generator=g) for n in (100, 37, 250)]
    vn = ValueNorm(decay=1.0)
    for c in chunks:
        vn.update(c)
    allx = torch.cat(chunks).double()
    assert abs(vn.mean - float(allx.mean())) < 1e-6
    assert abs(vn.var - float(allx.var(unbiased=False))) < 1e-4
    x = torch.randn(10, generator=g)
    assert torch.allclose(vn.denormalize(vn.normalize(x)), x, atol=1e-5)


def test_ppo_critic_targets_are_normalised_over_a_rollout():
    hp = PpoHP(n_envs=16, n_steps=64, epochs=1, minibatches=2, hidden=16)
    one = train_ppo(total_steps=16 * 64, hp=hp, seed=1, eval_every=10_000, eval_episodes=2)
    assert abs(one.diagnostics["critic_target_mean"]) < 1e-4
    assert abs(one.diagnostics["critic_target_sd"] - 1.0) < 0.01
    # later rollouts: running statistics (old ones down-weighted), so about, not exactly, N(0, 1); the first
    # rollouts' rewards are inflated by the reward normaliser's start-up, which the decay forgets
    later = train_ppo(total_steps=12 * 16 * 64, hp=hp, seed=1, eval_every=10_000, eval_episodes=2)
    assert abs(later.diagnostics["critic_target_mean"]) < 0.5
    assert 0.6 < later.diagnostics["critic_target_sd"] < 1.5
    # without normalisation (the matched configuration) the critic sees raw scaled returns, far from N(0, 1)
    raw = train_ppo(total_steps=16 * 64, hp=matched_ppo_hp(n_envs=16, n_steps=64, epochs=1, hidden=16), seed=1,
                    eval_every=10_000, eval_episodes=2)
    assert raw.diagnostics["critic_target_mean"] < -5.0


def test_auc_and_paired_bootstrap():
    from lib.reppo.experiments import paired_bootstrap
    from lib.reppo.tuning import auc

    assert auc([0, 10, 20], [-5, -5, -5]) == -5.0
    assert abs(auc([0, 10, 30], [0, 10, 30]) - 15.0) < 1e-12  # linear curve: its mean
    with pytest.raises(ValueError):
        auc([0], [1.0])
    lo, hi = paired_bootstrap([3.0, 3.0, 3.0])
    assert lo == hi == 3.0
    lo, hi = paired_bootstrap([-1.0, 0.0, 1.0, 2.0, 8.0])
    assert lo < 2.0 < hi


def test_tuning_scan_is_shipped_and_malformed_scans_are_refused(tmp_path):
    from lib.reppo.tuning import GRID_CLIP, GRID_KL, GRID_LR, TUNING_SEEDS, load_scan

    scan, best = load_scan()
    assert set(scan["seed"]) == set(TUNING_SEEDS) and not set(TUNING_SEEDS) & set(range(0, 5000))
    assert len(scan) == 2 * len(GRID_LR) * 3 * len(TUNING_SEEDS)
    assert best["REPPO"]["lr"] in GRID_LR and best["REPPO"]["trust_region"] in GRID_KL
    assert best["PPO"]["lr"] in GRID_LR and best["PPO"]["trust_region"] in GRID_CLIP
    bad = tmp_path / "scan.json"
    bad.write_text('{"rows": [{"algo": "PPO"}]}')
    with pytest.raises(ValueError, match="scan.json"):
        load_scan(bad)
    with pytest.raises(FileNotFoundError, match="lib.reppo.tune"):
        load_scan(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="scan_path"):
        paper.config(scan_path=str(tmp_path / "missing.json"), out_dir=str(tmp_path), verbose=False)


def test_tanh_gaussian_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    actor = TanhGaussianActor(3, 2, hidden=16, layers=2)
    obs = torch.randn(50, 3)
    a, logp, mean, log_std = actor.rsample(obs, torch.Generator().manual_seed(0))
    dist = torch.distributions.TransformedDistribution(torch.distributions.Normal(mean, log_std.exp()),
                                                       [torch.distributions.TanhTransform()])
    assert torch.allclose(logp, dist.log_prob(a).sum(-1), atol=2e-3)
    assert torch.allclose(actor.log_prob_a(a, mean, log_std), dist.log_prob(a).sum(-1), atol=2e-3)


def test_adam_matches_torch_optim_with_clipping():
    torch.manual_seed(0)
    a = [torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)]
    b = [x.detach().clone().requires_grad_(True) for x in a]
    mine, ref = Adam(a, lr=1e-2, max_grad_norm=0.5), torch.optim.Adam(b, lr=1e-2)
    for _ in range(40):
        X = torch.randn(7, 5)
        for ps, opt in ((a, mine), (b, ref)):
            opt.zero_grad()
            ((X @ ps[0] + ps[1]) ** 3).mean().backward()
            if opt is ref:
                torch.nn.utils.clip_grad_norm_(ps, 0.5)
            opt.step()
    assert max(float((x - y).detach().abs().max()) for x, y in zip(a, b)) < 1e-5


def test_pathwise_and_score_estimators_agree_in_mean_and_pathwise_spreads_less():
    torch.manual_seed(0)
    actor = TanhGaussianActor(3, 1, hidden=16, layers=2)
    critic = Critic(3, 1, hidden=16, n_bins=51, vmin=-10.0, vmax=10.0)
    with torch.no_grad():  # give the critic some action dependence
        critic.head[-1].weight.mul_(20.0)
    states = torch.randn(32, 3)
    tab = gradient_variance(actor, critic, states, sample_counts=(8,), repeats=100,
                            generator=torch.Generator().manual_seed(0))
    assert float(tab["cos_means"].iloc[0]) > 0.9  # both unbiased for the same gradient
    t = tab.set_index("estimator")["trace_cov"]
    assert t["score"] > t["pathwise"]


def test_replay_buffer_holds_its_capacity_in_memory():
    buf = ReplayBuffer(1000, 3, 1)
    assert buf.nbytes == 1000 * (3 + 1 + 1 + 3 + 1) * 4
    buf.add(obs=torch.ones(4, 3), act=torch.zeros(4, 1), rew=torch.ones(4), next_obs=torch.ones(4, 3),
            term=torch.zeros(4))
    assert buf.size == 4 and buf.sample(8, torch.Generator().manual_seed(0))["obs"].shape == (8, 3)


def test_memory_readings_come_from_proc_status():
    from lib.reppo.memory import _status_mb, paper_scale_storage

    rss, hwm = _status_mb("VmRSS"), _status_mb("VmHWM")
    assert 0 < rss <= hwm
    t = paper_scale_storage(obs_dim=3, act_dim=1, emb_dim=512)
    assert t.loc["REPPO (paper scale)", "stored_transitions"] == 1024 * 128
    assert t.loc["replay buffer (paper scale)", "storage_bytes"] == 10 ** 6 * (2 * 3 + 1 + 2) * 4


# --- training -----------------------------------------------------------------------------------------------------
def test_train_reppo_is_deterministic_and_stores_one_rollout():
    hp = ReppoHP(n_envs=8, n_steps=8, epochs=1, minibatches=2, hidden=16)
    a = train_reppo(total_steps=128, hp=hp, seed=3, eval_every=64, eval_episodes=4)
    b = train_reppo(total_steps=128, hp=hp, seed=3, eval_every=64, eval_episodes=4)
    assert a.curve["return"].tolist() == b.curve["return"].tolist()
    assert a.stored_transitions == 64 and a.env_steps == 128 and list(a.curve["steps"]) == [0, 64, 128]
    assert a.diagnostics["target_min"] >= -165.0 - 1e-3 and np.isfinite(a.final_return)


def test_training_runs_in_worker_processes_give_the_same_numbers():
    """Figure 1's runs in two worker processes return exactly what they return one after the other."""
    from lib.reppo.experiments import _train_one, run_parallel

    hp = ReppoHP(n_envs=8, n_steps=8, epochs=1, minibatches=2, hidden=16)
    php = matched_ppo_hp(n_envs=8, n_steps=8, epochs=1, hidden=16)
    calls = [("REPPO", dict(hp=hp, total_steps=128, seed=s, eval_every=64, eval_episodes=4)) for s in (3, 4)]
    calls.append(("PPO", dict(hp=php, total_steps=128, seed=3, eval_every=64, eval_episodes=4, label="PPO")))
    one = run_parallel(_train_one, calls, workers=1)
    two = run_parallel(_train_one, calls, workers=2)
    assert [r.algo for r in two] == [r.algo for r in one] and [r.seed for r in two] == [r.seed for r in one]
    for a, b in zip(one, two):
        assert a.curve["return"].tolist() == b.curve["return"].tolist()


# --- several seeds stacked into one program (Figure 1) -------------------------------------------------------------
def _same_run(a, b):
    assert (a.algo, a.env, a.seed, a.env_steps, a.storage_bytes) == (b.algo, b.env, b.seed, b.env_steps, b.storage_bytes)
    assert a.curve["steps"].tolist() == b.curve["steps"].tolist()
    assert a.curve["return"].tolist() == b.curve["return"].tolist()  # bit for bit, not approximately
    assert set(a.diagnostics) == set(b.diagnostics)
    for k, v in a.diagnostics.items():
        assert v == b.diagnostics[k] or (v != v and b.diagnostics[k] != b.diagnostics[k]), k


@pytest.mark.parametrize("algo", ["REPPO", "PPO", "PPO (matched updates)"])
def test_stacked_seeds_give_the_single_runs_numbers(algo):
    """Seeds trained as one stacked program return exactly what each seed returns trained alone (same generators,
    same kernels), for REPPO, the tuned PPO and the matched-update PPO."""
    from lib.reppo.batched import train_ppo_seeds, train_reppo_seeds

    kw = dict(total_steps=512, eval_every=256, eval_episodes=32)
    seeds = [5, 1005]
    if algo == "REPPO":
        hp = ReppoHP(n_envs=32, n_steps=8, epochs=2, minibatches=2, hidden=16, lr=3e-3)
        stacked = train_reppo_seeds(seeds, hp=hp, keep_model_seed=5, **kw)
        single = [train_reppo(hp=hp, seed=s, keep_model=s == 5, **kw) for s in seeds]
        for p, q in zip(stacked[0].model["actor"].parameters(), single[0].model["actor"].parameters()):
            assert torch.equal(p, q)
        assert torch.equal(stacked[0].model["states"], single[0].model["states"])
        assert torch.equal(stacked[0].model["norm"].var, single[0].model["norm"].var)
    else:
        hp = PpoHP(n_envs=32, n_steps=8, epochs=2, minibatches=2, hidden=16, lr=3e-3) if algo == "PPO" else \
            matched_ppo_hp(n_envs=32, n_steps=8, epochs=2, hidden=16, lr=3e-3)
        stacked = train_ppo_seeds(seeds, hp=hp, label=algo, **kw)
        single = [train_ppo(hp=hp, seed=s, label=algo, **kw) for s in seeds]
    assert stacked[0].curve["return"].tolist() != stacked[1].curve["return"].tolist()  # the seeds really differ
    for a, b in zip(stacked, single):
        _same_run(a, b)


def test_stacked_pendulum_steps_each_batch_as_alone():
    from lib.reppo.batched import StackedPendulum

    envs = [paper.make_env("BatchedPendulum", 32, seed=s) for s in (0, 1)]
    alone = [paper.make_env("BatchedPendulum", 32, seed=s) for s in (0, 1)]
    st = StackedPendulum(envs)
    obs = st.reset()
    ref = [e.reset() for e in alone]
    g = torch.Generator().manual_seed(0)
    for t in range(230):  # through one time-limit reset
        a = torch.rand((2, 32, 1), generator=g) * 4 - 2
        out = st.step(a)
        ref = [e.step(a[i]) for i, e in enumerate(alone)]
        for k in range(5):
            assert torch.equal(out[k], torch.stack([r[k] for r in ref])), (t, k)


def test_figure1_groups_seeds_and_keeps_the_run_order():
    from lib.reppo.experiments import stack_seeds

    hp = ReppoHP(n_envs=32, n_steps=8, epochs=1, minibatches=2, hidden=16)
    php = PpoHP(n_envs=32, n_steps=8, epochs=1, minibatches=2, hidden=16)
    base = dict(env_name="BatchedPendulum", total_steps=256, eval_every=256, eval_episodes=32)
    calls = []
    for s in (3, 1003):
        calls += [("REPPO", dict(hp=hp, seed=s, keep_model=s == 3, **base)),
                  ("PPO", dict(hp=php, seed=s, label="PPO", **base))]
    calls.append(("PPO", dict(hp=php, seed=3, label="PPO", **dict(base, env_name="Pendulum-v1"))))
    items, slots = stack_seeds(calls)
    assert slots == [[0, 2], [1, 3], [4]]
    assert items[0][0] == "REPPO seeds" and items[0][1]["seeds"] == [3, 1003] and items[0][1]["keep_model_seed"] == 3
    assert items[1][0] == "PPO seeds" and items[2] == calls[4]
