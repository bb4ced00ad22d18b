"""Summary-statistics baselines (last, mean, min, max, count, slope per marker + static covariates) into logistic
regression and HistGradientBoosting, each tuned on the validation split over a small grid."""
from __future__ import annotations

import itertools

import numpy as np

LR_GRID = {"C": [0.01, 0.1, 1.0, 10.0]}
HGB_GRID = {"learning_rate": [0.05, 0.1], "max_leaf_nodes": [7, 31]}


def _make(name, params, seed):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "LR":
        return make_pipeline(SimpleImputer(strategy="median", add_indicator=True), StandardScaler(),
                             LogisticRegression(max_iter=2000, **params))
    return HistGradientBoostingClassifier(max_iter=100, early_stopping=False, random_state=seed, **params)


def fit_summary_baselines(Xtr, ytr, Xva, yva, Xte, seed: int = 0) -> dict:
    """``{name: (test probabilities, chosen params, val AUROC)}`` for LR and HGB, tuned on validation AUROC."""
    from sklearn.metrics import roc_auc_score

    from lib.common import limit_threads

    out = {}
    with limit_threads(1):
        for name, grid in (("LR", LR_GRID), ("HGB", HGB_GRID)):
            best = (-np.inf, None, None)
            for vals in itertools.product(*grid.values()):
                params = dict(zip(grid, vals))
                model = _make(name, params, seed).fit(Xtr, ytr)
                auc = roc_auc_score(yva, model.predict_proba(Xva)[:, 1])
                if auc > best[0]:
                    best = (auc, params, model)
            out[name] = (best[2].predict_proba(Xte)[:, 1], best[1], float(best[0]))
    return out
