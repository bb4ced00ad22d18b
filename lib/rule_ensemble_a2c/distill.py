"""The symbolic baseline: a depth-limited decision tree distilled from a trained policy (VIPER-style DAgger).

Round 0 rolls out the expert's greedy policy and labels every visited state with the expert's action; each later
round rolls out the current tree, labels the states *it* visits with the expert's action, aggregates all rounds
and refits (DAgger, Ross et al. 2011, as VIPER uses it; VIPER's Q-gap sample weights are not used). The tree is a
``sklearn.tree.DecisionTreeClassifier``; as a policy it acts with ``predict``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.tree import DecisionTreeClassifier, export_text

from .envs import VecEnv


@dataclass
class TreePolicy:
    tree: DecisionTreeClassifier
    depth: int
    n_samples: int

    def greedy(self, X: np.ndarray) -> np.ndarray:
        return self.tree.predict(np.asarray(X, dtype=np.float64)).astype(np.int64)

    @property
    def n_leaves(self) -> int:
        return int(self.tree.get_n_leaves())

    def to_text(self, feature_names) -> str:
        return export_text(self.tree, feature_names=list(feature_names))


def _visit(policy, env: VecEnv, n_steps: int) -> np.ndarray:
    X = env.reset()
    out = []
    for _ in range(n_steps):
        out.append(X)
        X, _, _, _ = env.step(policy(X))
    return np.concatenate(out)


def distill_tree(expert, env_name: str, depth: int, n_envs: int = 16, n_steps: int = 250, rounds: int = 3,
                 seed: int = 0) -> TreePolicy:
    """Fit a depth-``depth`` tree to ``expert`` (states -> greedy actions) by ``rounds`` rounds of DAgger."""
    env = VecEnv(env_name, n_envs, seed)
    X = _visit(expert, env, n_steps)
    y = expert(X)
    tree = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y)
    for _ in range(1, rounds):
        Xn = _visit(lambda S: tree.predict(np.asarray(S, dtype=np.float64)).astype(np.int64), env, n_steps)
        X, y = np.concatenate([X, Xn]), np.concatenate([y, expert(Xn)])
        tree = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y)
    env.close()
    return TreePolicy(tree=tree, depth=depth, n_samples=len(y))
