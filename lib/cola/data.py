"""Tabular data sets for the COLA reproduction.

The paper uses German Credit, COMPAS, HELOC and Hotel Bookings, none of which ships inside a well-known
package. The offline stand-ins are

* ``breast_cancer10``: scikit-learn's breast cancer data restricted to its ten ``mean *`` features, so that
  exact Shapley values (2^10 coalitions) and the brute-force oracle are cheap;
* ``fair``: statsmodels' ``fair`` survey (6366 rows, 8 socio-economic features; label ``affairs > 0``);
* ``credit_like``: :func:`make_credit_like`, a seeded generator with German Credit's shape (1000 rows,
  30 % "bad", mixed ordinal / integer / amount features);
* ``german``: the real German Credit file in its public format (``german.data``: 20 space-separated
  attributes and the class 1 = good / 2 = bad), read by :func:`load_german` when ``data_path`` is given.

Every data set is split 70/30 (stratified, seeded) and standardised with the training mean and standard
deviation; models, generators and COLA all work in the standardised space, and :class:`Dataset` keeps the
scaler so tables can be shown in the original units.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

DATASETS = ("breast_cancer10", "fair", "credit_like", "german")
LABELS = {
    "breast_cancer10": "breast-cancer-10",
    "fair": "fair (statsmodels)",
    "credit_like": "credit-like (synthetic)",
    "german": "German Credit (file)",
}

# German Credit (UCI Statlog) attributes, in file order. Categorical attributes are coded "A<k><level>";
# numeric ones are integers. Names follow the UCI documentation, shortened.
GERMAN_ATTRIBUTES = (
    ("checking_status", "cat"), ("duration", "num"), ("credit_history", "cat"), ("purpose", "cat"),
    ("credit_amount", "num"), ("savings", "cat"), ("employment", "cat"), ("installment_rate", "num"),
    ("personal_status", "cat"), ("other_debtors", "cat"), ("residence_since", "num"), ("property", "cat"),
    ("age", "num"), ("other_installment_plans", "cat"), ("housing", "cat"), ("existing_credits", "num"),
    ("job", "cat"), ("people_liable", "num"), ("telephone", "cat"), ("foreign_worker", "cat"),
)
# The level codes each categorical attribute takes in the public file (attribute k uses "A<k><level>").
GERMAN_LEVELS = {
    1: (1, 2, 3, 4), 3: (0, 1, 2, 3, 4), 4: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 6: (1, 2, 3, 4, 5),
    7: (1, 2, 3, 4, 5), 9: (1, 2, 3, 4, 5), 10: (1, 2, 3), 12: (1, 2, 3, 4), 14: (1, 2, 3), 15: (1, 2, 3),
    17: (1, 2, 3, 4), 19: (1, 2), 20: (1, 2),
}

# The credit-like generator's feature kinds, cycled when p > 12: (name, kind, argument).
#   ordinal: quantile-binned into `argument` levels 1..L;   integer: round(loc + scale * z) clipped;
#   amount: a log-normal amount rounded to 50.
_CREDIT_SPEC = (
    ("checking_status", "ordinal", 4), ("duration_months", "integer", (21.0, 12.0, 4, 72)),
    ("credit_history", "ordinal", 5), ("credit_amount", "amount", (7.9, 0.75)),
    ("savings", "ordinal", 5), ("employment_years", "ordinal", 5),
    ("installment_rate", "ordinal", 4), ("residence_years", "ordinal", 4),
    ("age", "integer", (35.5, 11.0, 19, 75)), ("existing_credits", "ordinal", 4),
    ("job", "ordinal", 4), ("dependents", "ordinal", 2),
)


@dataclass
class Dataset:
    """A standardised train/test split. ``X_*`` are standardised; ``to_original`` undoes it."""

    name: str
    feature_names: list
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    mean: np.ndarray
    scale: np.ndarray

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    def to_original(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X) * self.scale + self.mean

    def frame(self, X: np.ndarray, original_units: bool = True) -> pd.DataFrame:
        X = self.to_original(X) if original_units else np.asarray(X)
        return pd.DataFrame(X, columns=self.feature_names)


def load_breast_cancer10() -> tuple[pd.DataFrame, np.ndarray]:
    """scikit-learn's breast cancer data, the ten ``mean *`` features; y = 1 benign, 0 malignant."""
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    cols = [i for i, n in enumerate(d.feature_names) if n.startswith("mean ")]
    X = pd.DataFrame(d.data[:, cols], columns=[d.feature_names[i].replace(" ", "_") for i in cols])
    return X, d.target.astype(int)


def load_fair() -> tuple[pd.DataFrame, np.ndarray]:
    """statsmodels' ``fair`` data (shipped with statsmodels): 8 features, y = 1 when ``affairs > 0``."""
    import statsmodels.api as sm

    df = sm.datasets.fair.load_pandas().data
    y = (df["affairs"] > 0).astype(int).to_numpy()
    return df.drop(columns=["affairs"]).astype(float), y


def make_credit_like(n: int = 1000, p: int = 12, seed: int = 0, bad_rate: float = 0.3
                     ) -> tuple[pd.DataFrame, np.ndarray]:
    """A seeded data set shaped like German Credit: ``n`` rows, ``p`` mixed features, ``bad_rate`` of y = 0.

    Built from :func:`sklearn.datasets.make_classification` (5 informative, 2 redundant latent columns),
    whose latent columns are then turned into ordinal levels (quantile bins), bounded integers (months,
    years) and rounded amounts, as in the credit file. y = 1 is "good", y = 0 is "bad".
    """
    from sklearn.datasets import make_classification

    if p < 2 or n < 50:
        raise ValueError(f"make_credit_like needs n >= 50 and p >= 2, got n={n}, p={p}")
    Z, y = make_classification(n_samples=n, n_features=p, n_informative=min(5, p), n_redundant=min(2, p - min(5, p)),
                               n_clusters_per_class=2, weights=[bad_rate, 1 - bad_rate], flip_y=0.03,
                               class_sep=1.0, random_state=seed)
    cols = {}
    for k in range(p):
        name, kind, arg = _CREDIT_SPEC[k % len(_CREDIT_SPEC)]
        name = name if k < len(_CREDIT_SPEC) else f"{name}_{k // len(_CREDIT_SPEC) + 1}"
        z = (Z[:, k] - Z[:, k].mean()) / Z[:, k].std()
        if kind == "ordinal":
            edges = np.quantile(z, np.linspace(0, 1, arg + 1)[1:-1])
            cols[name] = 1.0 + np.searchsorted(edges, z)
        elif kind == "integer":
            loc, scale, lo, hi = arg
            cols[name] = np.clip(np.round(loc + scale * z), lo, hi)
        else:
            mu, sigma = arg
            cols[name] = np.round(np.exp(mu + sigma * z) / 50.0) * 50.0
    return pd.DataFrame(cols), y.astype(int)


def load_german(path) -> tuple[pd.DataFrame, np.ndarray]:
    """Read German Credit in its public format (``german.data``): 20 space-separated attributes + class.

    Categorical codes ``A<k><level>`` become the integer level (ordinal coding, as many CE papers do for
    tree and linear models alike); the class becomes y = 1 for 1 (good) and y = 0 for 2 (bad).
    Raises ``ValueError`` naming ``data_path`` and the line when the file does not have that format.
    """
    path = Path(path)
    rows, labels = [], []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != 21:
            raise ValueError(f"parameter 'data_path' ({path}): line {lineno} has {len(tokens)} fields; "
                             "german.data has 20 attributes and the class (1 = good, 2 = bad)")
        values = []
        for k, (tok, (name, kind)) in enumerate(zip(tokens[:20], GERMAN_ATTRIBUTES), start=1):
            if kind == "cat":
                prefix = f"A{k}"
                level = tok[len(prefix):]
                if not tok.startswith(prefix) or not level.isdigit():
                    raise ValueError(f"parameter 'data_path' ({path}): line {lineno}, attribute {k} ({name}) "
                                     f"is {tok!r}; expected a code like {prefix}{GERMAN_LEVELS[k][0]}")
                values.append(float(level))
            else:
                try:
                    values.append(float(tok))
                except ValueError:
                    raise ValueError(f"parameter 'data_path' ({path}): line {lineno}, attribute {k} ({name}) "
                                     f"is {tok!r}; expected a number") from None
        if tokens[20] not in ("1", "2"):
            raise ValueError(f"parameter 'data_path' ({path}): line {lineno} has class {tokens[20]!r}; expected 1 or 2")
        rows.append(values)
        labels.append(1 if tokens[20] == "1" else 0)
    if len(rows) < 20:
        raise ValueError(f"parameter 'data_path' ({path}): {len(rows)} rows; need at least 20")
    y = np.asarray(labels, dtype=int)
    if y.min() == y.max():
        raise ValueError(f"parameter 'data_path' ({path}): only one class present")
    return pd.DataFrame(rows, columns=[n for n, _ in GERMAN_ATTRIBUTES]), y


def load_dataset(name: str, seed: int = 0, data_path: Optional[Path] = None, test_size: float = 0.3) -> Dataset:
    """Load ``name``, split it (stratified, ``random_state=seed``) and standardise with training statistics."""
    from sklearn.model_selection import train_test_split

    if name == "breast_cancer10":
        X, y = load_breast_cancer10()
    elif name == "fair":
        X, y = load_fair()
    elif name == "credit_like":
        X, y = make_credit_like(1000, 12, seed=seed)
    elif name == "german":
        if data_path is None:
            raise ValueError("data set 'german' needs data_path (the german.data file)")
        X, y = load_german(data_path)
    else:
        raise ValueError(f"unknown data set {name!r}; allowed: {', '.join(DATASETS)}")
    Xa = X.to_numpy(dtype=float)
    Xtr, Xte, ytr, yte = train_test_split(Xa, y, test_size=test_size, stratify=y, random_state=seed)
    mean, scale = Xtr.mean(0), Xtr.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    return Dataset(name=name, feature_names=list(X.columns), X_train=(Xtr - mean) / scale, y_train=ytr,
                   X_test=(Xte - mean) / scale, y_test=yte, mean=mean, scale=scale)
