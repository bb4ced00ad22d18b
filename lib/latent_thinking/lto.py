"""Latent Thinking Optimization (Algorithm 1) and the selection baselines, all on the same N candidates.

Given N candidate trajectories z_1..z_N ~ pi_ref(.|x) with rewards r_i = r(x, z_i) in [0, 1], LTO targets

    pi_r(z_i | x)  proportional to  pi_ref(z_i | x) exp(r_i / beta)           (Theorem 1)

by acceptance-rejection (Algorithm 1): propose a candidate from pi_ref (here: uniformly from the N drawn), accept
it with probability phi_i = exp((r_i - r_max) / beta) <= 1, repeat until M are accepted. The accepted index is
distributed as softmax(r / beta) over the candidates (Theorem 2). beta -> 0 gives best-of-N, beta -> inf the
base policy. ``sweep_accept`` is the other reading of Algorithm 1 (pass over the candidates in order, accept each
with prob phi_i): it is *not* distributed as pi_r (Figure 8 shows the difference).
"""
from __future__ import annotations

import numpy as np


def phi(rewards, beta):
    r = np.asarray(rewards, dtype=float)
    return np.exp((r - r.max(axis=-1, keepdims=True)) / float(beta))


def target_probs(rewards, beta):
    """pi_r over the candidates: softmax(r / beta) (pi_ref uniform over the N drawn candidates)."""
    p = phi(rewards, beta)
    return p / p.sum(axis=-1, keepdims=True)


def accept_reject(rewards, beta, rng, M=1, block=64, max_rounds=10000):
    """Algorithm 1 for a batch of questions: ``rewards`` [Q, N] -> accepted indices [Q, M] (proposals with
    replacement from the N candidates, each accepted with prob phi_i). Also returns the number of proposals."""
    r = np.atleast_2d(np.asarray(rewards, dtype=float))
    Q, N = r.shape
    ph = phi(r, beta)
    out = np.full((Q, M), -1, dtype=np.int64)
    n_acc = np.zeros(Q, dtype=np.int64)
    n_prop = np.zeros(Q, dtype=np.int64)
    for _ in range(max_rounds):
        todo = np.flatnonzero(n_acc < M)
        if todo.size == 0:
            break
        prop = rng.integers(0, N, size=(todo.size, block))
        acc = rng.random((todo.size, block)) < ph[todo[:, None], prop]
        if M == 1:  # vectorised: the first accepted proposal of each open question
            hit = acc.any(1)
            first = acc.argmax(1)
            out[todo[hit], 0] = prop[hit, first[hit]]
            n_prop[todo] += np.where(hit, first + 1, block)
            n_acc[todo[hit]] = 1
            continue
        for j, q in enumerate(todo):
            hits = prop[j, acc[j]]
            need = M - n_acc[q]
            take = hits[:need]
            out[q, n_acc[q]:n_acc[q] + take.size] = take
            if take.size < need:
                n_prop[q] += block
            else:
                n_prop[q] += int(np.flatnonzero(acc[j])[need - 1]) + 1
            n_acc[q] += take.size
    return out, n_prop


def sweep_accept(rewards, beta, rng):
    """The sequential-sweep reading: pass over candidates 0..N-1 (repeatedly), accept each with prob phi_i."""
    r = np.atleast_2d(np.asarray(rewards, dtype=float))
    Q, N = r.shape
    ph = phi(r, beta)
    out = np.full(Q, -1, dtype=np.int64)
    while (out < 0).any():
        todo = np.flatnonzero(out < 0)
        acc = rng.random((todo.size, N)) < ph[todo]
        first = np.where(acc.any(1), acc.argmax(1), -1)
        out[todo] = first
    return out


def _vote(answers, weights, n_classes=10):
    Q, N = answers.shape
    tally = np.zeros((Q, n_classes))
    np.add.at(tally, (np.repeat(np.arange(Q), N), answers.ravel()), np.broadcast_to(weights, answers.shape).ravel())
    return tally


def vote_correct(answers, truth, weights=None, n_classes=10):
    """Expected correctness of (weighted) plurality voting, ties broken uniformly at random: [Q] in [0, 1]."""
    w = np.ones(answers.shape) if weights is None else np.asarray(weights, dtype=float)
    tally = _vote(answers, w, n_classes)
    top = np.isclose(tally, tally.max(1, keepdims=True))
    return top[np.arange(len(truth)), truth] / top.sum(1)


def select_correct(scores, correct):
    """Correctness of picking argmax(score) (ties split): [Q]."""
    top = np.isclose(scores, scores.max(1, keepdims=True))
    return (top * correct).sum(1) / top.sum(1)


def coe_score(thoughts):
    """CoE-style latent heuristic (after Wang et al.'s Chain-of-Embedding): minus the mean relative step-to-step
    change of the latent thought, ||m_t - m_{t-1}|| / ||m_{t-1}|| (a settling trajectory scores high)."""
    m = np.asarray(thoughts, dtype=float)
    d = np.linalg.norm(np.diff(m, axis=-2), axis=-1) / (np.linalg.norm(m[..., :-1, :], axis=-1) + 1e-8)
    return -d.mean(-1)


def method_table(answers, truth, rewards, thoughts, rng, beta=0.05, M=1, reps=32):
    """Per-question correctness [Q] of each method on the same N candidates (a dict name -> array)."""
    correct = (answers == truth[:, None]).astype(float)
    acc_idx = np.stack([accept_reject(rewards, beta, rng, M=M)[0] for _ in range(reps)], 1)  # [Q, reps, M]
    if M == 1:
        lto = correct[np.arange(len(truth))[:, None], acc_idx[..., 0]].mean(1)
    else:
        lto = np.mean([vote_correct(answers[np.arange(len(truth))[:, None], acc_idx[:, k]], truth)
                       for k in range(reps)], 0)
    return {
        "base": correct.mean(1),
        "majority": vote_correct(answers, truth),
        "coe": select_correct(coe_score(thoughts), correct),
        "weighted_mv": vote_correct(answers, truth, weights=rewards),
        "best_of_n": select_correct(rewards, correct),
        "lto": lto,
    }


def expected_lto(rewards, correct, beta):
    """Exact expected accuracy of LTO (M=1) per question: sum_i pi_r(i) correct_i."""
    return (target_probs(rewards, beta) * correct).sum(-1)


def paired_bootstrap(a, b, rng, n_boot=2000, level=0.95):
    """Mean of a - b over questions with a paired bootstrap percentile CI: (mean, lo, hi)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    idx = rng.integers(0, d.size, size=(n_boot, d.size))
    bs = d[idx].mean(1)
    lo, hi = np.quantile(bs, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(d.mean()), float(lo), float(hi)
