"""Additive rule ensembles for a softmax policy, and rule growth by (orthogonal) gradient boosting, in numpy.

A *proposition* is an axis-aligned test ``x_j >= t`` or ``x_j <= t`` with ``t`` an empirical quantile of feature j
over recently visited states; a *rule* is a conjunction of at most ``c_max`` propositions, q_k(s) ∈ {0, 1}, and it
carries a weight vector w_k ∈ R^|A|. The actor's logits are f(s) = b + Σ_k q_k(s) w_k, the policy is
π(·|s) = softmax f(s), and the greedy action argmax_a f(s)_a is what the rule list explains.

Because f is linear in (b, W), the policy gradient with respect to the weights is exact and closed-form: with the
functional gradient in logit space G_t = Â_t (e_{a_t} − π(·|s_t)) + β_H ∂H/∂f(s_t), ∂H/∂f = −π ⊙ (log π + H),
∇_W J = Qᵀ G / B and ∇_b J = 1ᵀ G / B, where Q ∈ {0,1}^{B×K} holds the rule outputs on the batch.

Rule growth scores a candidate condition q ∈ {0,1}^B against the functional gradient G:
- orthogonal gradient boosting (OGB, Yang et al., AISTATS 2024): ‖g⊥ᵀ q‖₂ / (‖q⊥‖₂ + ε), with q⊥ = P⊥ q,
  g⊥ = P⊥ G, P⊥ the projector onto the orthogonal complement of the span of [1, Q] (the current rules);
- plain gradient boosting (GB): ‖Gᵀ q‖₂ / √(Σ q).
A beam search over conjunctions adds one proposition per level; a candidate true on fewer than ``min_support`` of
the buffer, or identical on the buffer to a rule already in the ensemble, is rejected.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

OPS = (">=", "<=")


def quantile_thresholds(X: np.ndarray, n_q: int) -> list:
    """Per feature, the distinct empirical quantiles at levels 1/(n_q+1), ..., n_q/(n_q+1) (``np.quantile``)."""
    X = np.asarray(X, dtype=np.float64)
    levels = np.arange(1, n_q + 1) / (n_q + 1)
    return [np.unique(np.quantile(X[:, j], levels)) for j in range(X.shape[1])]


@dataclass(frozen=True)
class Rule:
    """A conjunction of propositions ``(feature index, ">=" | "<=", threshold)``; the empty rule is always true."""

    conds: tuple = ()

    def __post_init__(self):
        for j, op, t in self.conds:
            if op not in OPS:
                raise ValueError(f"rule condition operator {op!r}; allowed: '>=', '<='")

    def evaluate(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        out = np.ones(X.shape[0], dtype=bool)
        for j, op, t in self.conds:
            out &= (X[:, j] >= t) if op == ">=" else (X[:, j] <= t)
        return out

    def to_str(self, feature_names: Optional[Sequence[str]] = None, digits: int = 3) -> str:
        if not self.conds:
            return "TRUE"
        parts = []
        for j, op, t in self.conds:
            name = feature_names[j] if feature_names is not None else f"x{j}"
            parts.append(f"{name} {op} {float(t):.{digits}g}")
        return " AND ".join(parts)

    def __len__(self) -> int:
        return len(self.conds)


def softmax(f: np.ndarray) -> np.ndarray:
    z = f - f.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def functional_gradient(logits: np.ndarray, actions: np.ndarray, adv: np.ndarray, ent_coef: float = 0.0):
    """G_t = Â_t (e_{a_t} − π_t) + β_H ∂H/∂f, the gradient of Â_t log π(a_t|s_t) + β_H H(π(·|s_t)) w.r.t. f(s_t)."""
    pi = softmax(logits)
    G = -pi * adv[:, None]
    G[np.arange(len(actions)), actions] += adv
    if ent_coef:
        logp = np.log(np.clip(pi, 1e-12, None))
        H = -(pi * logp).sum(axis=1, keepdims=True)
        G += ent_coef * (-pi * (logp + H))
    return G


class RuleEnsemble:
    """Logits b + Σ_{k<K} q_k(s) w_k with room for ``k_max`` rules (conditions stored as padded arrays)."""

    def __init__(self, n_features: int, n_actions: int, k_max: int = 20, c_max: int = 3):
        self.n_features, self.n_actions, self.k_max, self.c_max = int(n_features), int(n_actions), k_max, c_max
        self.feat = np.zeros((k_max, c_max), dtype=np.int64)
        self.thr = np.zeros((k_max, c_max))
        self.sign = np.zeros((k_max, c_max), dtype=np.int8)  # +1: >=, -1: <=, 0: unused slot
        self.W = np.zeros((k_max, n_actions))  # rows >= K stay zero
        self.b = np.zeros(n_actions)
        self.rules: list = []
        self.added_at: list = []  # environment step at which each rule was added

    @property
    def K(self) -> int:
        return len(self.rules)

    def add_rule(self, rule: Rule, w0: Optional[np.ndarray] = None, step: int = 0) -> None:
        if self.K >= self.k_max:
            raise ValueError(f"the ensemble already holds k_max = {self.k_max} rules")
        if len(rule) > self.c_max or len(rule) == 0:
            raise ValueError(f"a rule needs 1..c_max = {self.c_max} conditions; got {len(rule)}")
        k = self.K
        for c, (j, op, t) in enumerate(rule.conds):
            self.feat[k, c], self.thr[k, c], self.sign[k, c] = j, t, 1 if op == ">=" else -1
        self.W[k] = 0.0 if w0 is None else w0
        self.rules.append(rule)
        self.added_at.append(int(step))

    def outputs(self, X: np.ndarray) -> np.ndarray:
        """Q ∈ {0,1}^{B×k_max} (float): rule k's output on each state; columns of unused slots are zero."""
        X = np.asarray(X, dtype=np.float64)
        K = self.K
        Q = np.zeros((X.shape[0], self.k_max))
        if K:
            v = X[:, self.feat[:K]]  # B × K × c_max
            s, t = self.sign[:K], self.thr[:K]
            ok = np.where(s > 0, v >= t, np.where(s < 0, v <= t, True))
            Q[:, :K] = ok.all(axis=2)
        return Q

    def logits(self, X: np.ndarray, Q: Optional[np.ndarray] = None) -> np.ndarray:
        Q = self.outputs(X) if Q is None else Q
        return self.b + Q @ self.W

    def greedy(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.logits(X), axis=1)

    def grad(self, X: np.ndarray, actions: np.ndarray, adv: np.ndarray, ent_coef: float = 0.0):
        """Exact ascent direction of the A2C objective: (∇_W J, ∇_b J, G) = (QᵀG/B, 1ᵀG/B, G)."""
        Q = self.outputs(X)
        G = functional_gradient(self.logits(X, Q), actions, adv, ent_coef)
        B = max(len(actions), 1)
        return Q.T @ G / B, G.sum(axis=0) / B, G

    def condition_lengths(self) -> list:
        return [len(r) for r in self.rules]

    def table(self, feature_names=None, action_names=None, X: Optional[np.ndarray] = None) -> pd.DataFrame:
        """The rule list: IF condition THEN add w_k to the action scores (bias first); support on ``X``."""
        action_names = action_names or [f"a{i}" for i in range(self.n_actions)]
        rows = [dict(rule="(bias) TRUE", length=0, **{f"w[{a}]": w for a, w in zip(action_names, self.b)})]
        for k, r in enumerate(self.rules):
            rows.append(dict(rule=r.to_str(feature_names), length=len(r),
                             **{f"w[{a}]": w for a, w in zip(action_names, self.W[k])}))
        df = pd.DataFrame(rows)
        if X is not None:
            Q = self.outputs(X)
            df.insert(2, "support", [1.0] + [float(Q[:, k].mean()) for k in range(self.K)])
        return df


# -- rule selection objectives ---------------------------------------------------------------------------------
def _orth_basis(Qbar: np.ndarray, tol: float = 1e-8) -> np.ndarray:
    U, s, _ = np.linalg.svd(np.asarray(Qbar, dtype=np.float64), full_matrices=False)
    return U[:, s > tol * max(s.max(initial=0.0), 1.0)]


def ogb_scores(C: np.ndarray, Qbar: np.ndarray, G: np.ndarray, eps: float) -> np.ndarray:
    """‖g⊥ᵀ q‖₂ / (‖q⊥‖₂ + ε) for every column q of the candidate matrix C (B × m)."""
    C = np.asarray(C, dtype=np.float64)
    U = _orth_basis(Qbar)
    Gp = G - U @ (U.T @ G)
    num = np.linalg.norm(Gp.T @ C, axis=0)
    qn2 = C.sum(axis=0) - ((U.T @ C) ** 2).sum(axis=0)  # qᵀP⊥q = ‖q‖² − ‖Uᵀq‖² for binary q
    return num / (np.sqrt(np.maximum(qn2, 0.0)) + eps)


def gb_scores(C: np.ndarray, G: np.ndarray) -> np.ndarray:
    """‖Gᵀ q‖₂ / √(Σ q) for every column q of C."""
    C = np.asarray(C, dtype=np.float64)
    return np.linalg.norm(G.T @ C, axis=0) / np.sqrt(np.maximum(C.sum(axis=0), 1.0))


def ogb_objective(q: np.ndarray, Qbar: np.ndarray, G: np.ndarray, eps: float) -> float:
    return float(ogb_scores(np.asarray(q)[:, None], Qbar, G, eps)[0])


def gb_objective(q: np.ndarray, G: np.ndarray) -> float:
    return float(gb_scores(np.asarray(q)[:, None], G)[0])


@dataclass
class SearchResult:
    rule: Rule
    score: float
    q: np.ndarray
    n_candidates: int


def propositions(X: np.ndarray, thresholds: list) -> tuple:
    """All propositions (j, op, t) over the thresholds and their truth matrix P (B × n_props, bool)."""
    props, cols = [], []
    for j, ts in enumerate(thresholds):
        for t in ts:
            for op in OPS:
                props.append((j, op, float(t)))
                cols.append(X[:, j] >= t if op == ">=" else X[:, j] <= t)
    P = np.stack(cols, axis=1) if cols else np.zeros((X.shape[0], 0), dtype=bool)
    return props, P


def search_rule(X: np.ndarray, G: np.ndarray, Q: np.ndarray, thresholds: list, max_len: int = 3, beam: int = 5,
                objective: str = "ogb", eps: Optional[float] = None, min_support: float = 0.01) -> Optional[SearchResult]:
    """Beam search for the conjunction with the best objective; ``Q`` (B × K) are the current rules' outputs.

    Level 1 scores every proposition; level l extends each of the ``beam`` best conjunctions of level l − 1 by one
    proposition on a feature/direction it does not test yet. A candidate is rejected (score −∞) when it is true on
    fewer than ``ceil(min_support · B)`` states or coincides on the buffer with a current rule. Ties keep the
    shorter rule. Returns None when no candidate survives.
    """
    if objective not in ("ogb", "gb"):
        raise ValueError(f"parameter 'objective' got {objective!r}; allowed: 'ogb', 'gb'")
    X = np.asarray(X, dtype=np.float64)
    B = X.shape[0]
    eps = 1e-3 * math.sqrt(B) if eps is None else eps
    Q = np.asarray(Q, dtype=np.float64).reshape(B, -1)
    Qbar = np.concatenate([np.ones((B, 1)), Q], axis=1)
    n_min = max(int(math.ceil(min_support * B)), 1)
    props, P = propositions(X, thresholds)
    if not props:
        return None
    supp_rules = Q.sum(axis=0)

    def score(C: np.ndarray) -> np.ndarray:
        s = ogb_scores(C, Qbar, G, eps) if objective == "ogb" else gb_scores(C, G)
        supp = C.sum(axis=0)
        bad = supp < n_min
        if Q.shape[1]:
            overlap = C.T.astype(np.float64) @ Q
            bad |= ((overlap == supp[:, None]) & (overlap == supp_rules[None, :])).any(axis=1)
        return np.where(bad, -np.inf, s)

    best: Optional[SearchResult] = None
    frontier = [((), np.ones(B, dtype=bool))]
    n_cand = 0
    for _level in range(max_len):
        cands = {}
        for conds, v in frontier:
            used = {(j, op) for j, op, _ in conds}
            keep = [i for i, (j, op, _) in enumerate(props) if (j, op) not in used]
            if not keep:
                continue
            C = v[:, None] & P[:, keep]
            s = score(C)
            n_cand += len(keep)
            for idx, i in enumerate(keep):
                if np.isfinite(s[idx]):
                    key = tuple(sorted(conds + (props[i],)))
                    if key not in cands:
                        cands[key] = (s[idx], C[:, idx])
        if not cands:
            break
        ranked = sorted(cands.items(), key=lambda kv: (-kv[1][0], len(kv[0]), kv[0]))[:beam]
        top_key, (top_s, top_q) = ranked[0]
        if best is None or top_s > best.score:
            best = SearchResult(Rule(top_key), float(top_s), top_q, 0)
        frontier = [(k, q) for k, (_, q) in ranked]
    if best is not None:
        best.n_candidates = n_cand
    return best
