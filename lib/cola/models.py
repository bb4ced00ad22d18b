"""The classifiers COLA explains: six scikit-learn model families behind one small interface.

:class:`Classifier` exposes ``proba(X)`` (probability of class 1) and ``predict(X)`` (``proba >= 0.5``), so
every model's label is the thresholded probability that p-SHAP attributes. Gradients for the Wachter
generator come from the model itself when it is differentiable (logistic regression, MLP: exact input
gradients) and otherwise from an MLP surrogate distilled on the model's own training-set labels.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

MODELS = ("lr", "mlp", "rf", "gb", "svm", "knn")
MODEL_LABELS = {"lr": "LogReg", "mlp": "MLP", "rf": "RandomForest", "gb": "HistGB", "svm": "RBF-SVM", "knn": "kNN-15"}


def make_estimator(name: str, seed: int = 0):
    """An unfitted scikit-learn estimator for ``name`` (one of :data:`MODELS`)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    if name == "lr":
        return LogisticRegression(max_iter=2000)
    if name == "mlp":
        return MLPClassifier(hidden_layer_sizes=(32, 16), alpha=1e-3, max_iter=800, random_state=seed)
    if name == "rf":
        return RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1)
    if name == "gb":
        return HistGradientBoostingClassifier(max_iter=100, random_state=seed)
    if name == "svm":  # Platt-scaled RBF SVM (sklearn's replacement for SVC(probability=True))
        return CalibratedClassifierCV(SVC(kernel="rbf", C=1.0, gamma="scale", random_state=seed),
                                      method="sigmoid", ensemble=False)
    if name == "knn":
        return KNeighborsClassifier(n_neighbors=15)
    raise ValueError(f"unknown model {name!r}; allowed: {', '.join(MODELS)}")


def mlp_proba_and_grad(mlp, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(class 1) of a fitted binary ``sklearn.neural_network.MLPClassifier`` and its input gradient."""
    acts = {
        "relu": (lambda z: np.maximum(z, 0.0), lambda z, a: (z > 0).astype(float)),
        "tanh": (np.tanh, lambda z, a: 1.0 - a**2),
        "logistic": (lambda z: 1.0 / (1.0 + np.exp(-z)), lambda z, a: a * (1.0 - a)),
        "identity": (lambda z: z, lambda z, a: np.ones_like(z)),
    }
    f, df = acts[mlp.activation]
    a = np.asarray(X, dtype=float)
    zs, As = [], []
    for W, b in zip(mlp.coefs_[:-1], mlp.intercepts_[:-1]):
        z = a @ W + b
        a = f(z)
        zs.append(z)
        As.append(a)
    logit = (a @ mlp.coefs_[-1] + mlp.intercepts_[-1])[:, 0]
    p = 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))
    # dp/d(last hidden activation), then back through the hidden layers: (delta * f'(z_l)) @ W_l^T
    delta = (p * (1 - p))[:, None] * mlp.coefs_[-1][:, 0][None, :]
    for layer in range(len(zs) - 1, -1, -1):
        delta = (delta * df(zs[layer], As[layer])) @ mlp.coefs_[layer].T
    return p, delta


def forest_proba(forest, X: np.ndarray, cls: int = 1) -> np.ndarray:
    """P(y = ``cls``) of a fitted ``RandomForestClassifier``, equal bit for bit to ``predict_proba(X)[:, k]``.

    The same sum over trees in the same order (each tree's leaf class fractions on float32 inputs, divided by
    the number of trees) without the per-call validation and joblib dispatch of every tree, which cost about
    0.15 ms per tree: COLA calls the model thousands of times on small batches (Wachter's validity checks,
    the prefix scans), where that overhead is 90% of the time.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != forest.n_features_in_:
        raise ValueError(f"forest_proba: X has shape {X.shape}; the forest expects (n, {forest.n_features_in_})")
    k = int(np.flatnonzero(forest.classes_ == cls)[0])
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    out = np.zeros(len(X32))
    for tree in forest.estimators_:
        out += tree.tree_.predict(X32)[:, k]
    return out / len(forest.estimators_)


@dataclass
class Classifier:
    """A fitted binary model: ``proba`` is P(y = 1), ``predict`` is ``proba >= 0.5``."""

    name: str
    estimator: Any
    surrogate: Optional[Any] = None  # an MLPClassifier mimicking a non-differentiable model (Wachter)

    def proba(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if self.name == "rf":
            return forest_proba(self.estimator, X)
        return self.estimator.predict_proba(X)[:, 1]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.proba(X) >= 0.5).astype(int)

    def linear(self):
        """``(w, b)`` when the model predicts 1 iff w.z + b >= 0 (logistic regression), else None."""
        if self.name == "lr":
            return self.estimator.coef_[0].copy(), float(self.estimator.intercept_[0])
        return None

    def proba_and_grad(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P(y = 1) and its gradient w.r.t. the input, exact for ``lr``/``mlp``, else the surrogate's."""
        X = np.asarray(X, dtype=float)
        if self.name == "lr":
            p = self.proba(X)
            return p, (p * (1 - p))[:, None] * self.estimator.coef_[0][None, :]
        model = self.estimator if self.name == "mlp" else self.surrogate
        if model is None:
            raise ValueError(f"model {self.name!r} has no gradient and no surrogate; fit it with fit_model()")
        return mlp_proba_and_grad(model, X)


def fit_model(name: str, X: np.ndarray, y: np.ndarray, seed: int = 0) -> Classifier:
    """Fit model ``name`` on (X, y); non-differentiable models also get a distilled MLP surrogate."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    est = make_estimator(name, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
        clf = Classifier(name, est)
        if name not in ("lr", "mlp"):
            labels = clf.predict(X)
            if labels.min() == labels.max():
                raise ValueError(f"model {name!r} predicts a single class on the training data")
            clf.surrogate = MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-3, max_iter=500,
                                          random_state=seed).fit(X, labels)
    return clf
