"""Tabular data sets for the COLA reproduction.

The paper uses German Credit, COMPAS, HELOC and Hotel Bookings, none of which ships inside a well-known
package. The offline stand-ins are

* ``breast_cancer10``: scikit-learn's breast cancer data restricted to its ten ``mean *`` features, so that
  exact Shapley values (2^10 coalitions) and the brute-force oracle are cheap;
* ``fair``: statsmodels' ``fair`` survey (6366 rows, 8 socio-economic features; label ``affairs > 0``);
* ``credit_like``: :func:`make_credit_like`, a seeded generator with German Credit's shape (1000 rows,
  30 % "bad", mixed ordinal / integer / amount features);
* ``credit_like_onehot``: the same rows with the ordinal features one-hot encoded (40 columns), the
  high-dimensional cell of quick mode (p-SHAP by permutation sampling);
* ``german`` / ``german_onehot``: the real German Credit file in its public format (``german.data``: 20
  space-separated attributes and the class 1 = good / 2 = bad), read by :func:`load_german` when
  ``data_path`` is given, with ordinal codes (20 columns) or one-hot encoded (about 61 columns, the paper's).

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

DATASETS = ("breast_cancer10", "fair", "credit_like", "credit_like_onehot", "german", "german_onehot")
USER_DATASETS = ("german", "german_onehot")  # read from data_path
LABELS = {
    "breast_cancer10": "breast-cancer-10",
    "fair": "fair (statsmodels)",
    "credit_like": "credit-like (synthetic)",
    "credit_like_onehot": "credit-like, one-hot",
    "german": "German Credit (file, ordinal)",
    "german_onehot": "German Credit (file, one-hot)",
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


GERMAN_EXPECTED = ("UCI Statlog German Credit as distributed (german.data): one applicant per line, 20 attributes "
                   "and the class (1 = good, 2 = bad) separated by spaces, categorical codes like A11")
ENCODINGS = ("onehot", "ordinal")


def _german_problem(path, lineno, problem):
    from lib.common.userfiles import UserFileError

    return UserFileError("data_path", path, problem, expected=GERMAN_EXPECTED, line=lineno)


def _parse_german_line(path, lineno: int, line: str) -> tuple[list, int]:
    """The 20 attribute tokens (categorical level as int, numeric as float) and the class of one line."""
    for sep, name in ((",", "commas"), (";", "semicolons"), ("|", "bars")):
        if sep in line:
            raise _german_problem(path, lineno, f"fields are separated by {name} (a CSV export such as Kaggle's "
                                  "german_credit_data.csv?)")
    tokens = line.split()
    if len(tokens) != 21:
        hint = ""
        if len(tokens) == 25 and all(t.lstrip("-").isdigit() for t in tokens):
            hint = " (25 integers: this is german.data-numeric, the 24-attribute recoding; give german.data)"
        raise _german_problem(path, lineno, f"the line has {len(tokens)} fields, not 21{hint}")
    values = []
    for k, (tok, (name, kind)) in enumerate(zip(tokens[:20], GERMAN_ATTRIBUTES), start=1):
        if kind == "cat":
            prefix = f"A{k}"
            level = tok[len(prefix):]
            if not tok.startswith(prefix) or not level.isdigit() or int(level) not in GERMAN_LEVELS[k]:
                codes = ", ".join(f"{prefix}{v}" for v in GERMAN_LEVELS[k])
                raise _german_problem(path, lineno, f"attribute {k} ({name}) is {tok[:40]!r}, not one of its "
                                      f"codes {codes}")
            values.append(int(level))
        else:
            try:
                v = float(tok)
            except ValueError:
                v = float("nan")
            if not np.isfinite(v):
                raise _german_problem(path, lineno, f"attribute {k} ({name}) is {tok[:40]!r}, not a number")
            values.append(v)
    if tokens[20] not in ("1", "2"):
        raise _german_problem(path, lineno, f"the class (field 21) is {tokens[20][:40]!r}, not 1 (good) or 2 (bad)")
    return values, 1 if tokens[20] == "1" else 0


def read_german(data_path) -> tuple[list, np.ndarray]:
    """Parse ``german.data`` (the ``data_path`` loader): rows of 20 attributes (categorical level codes as
    integers) and y (1 = good, 0 = bad).

    Built on :mod:`lib.common.userfiles` (missing, compressed, binary, empty or non-UTF-8 files and absurd
    lines are refused there) plus the format's own checks: 21 space-separated fields, every categorical code
    one of its attribute's documented codes, numbers where the attribute is numeric, class 1 or 2, at least
    20 rows and both classes. Every failure is a :class:`~lib.common.userfiles.UserFileError` (a
    ``ValueError``) naming ``data_path``, the file and the line.
    """
    from lib.common.userfiles import read_lines

    rows, labels = [], []
    for lineno, line in read_lines("data_path", data_path, expected=GERMAN_EXPECTED, comments=("#",)):
        values, label = _parse_german_line(data_path, lineno, line)
        rows.append(values)
        labels.append(label)
    if len(rows) < 20:
        raise _german_problem(data_path, None, f"the file has {len(rows)} rows; at least 20 are needed to split it")
    y = np.asarray(labels, dtype=int)
    if y.min() == y.max():
        raise _german_problem(data_path, None, f"every row has class {2 - y[0]}; both classes are needed")
    return rows, y


def load_german(path, encoding: str = "ordinal") -> tuple[pd.DataFrame, np.ndarray]:
    """German Credit from its public file (see :func:`read_german`) as features and y (1 = good, 0 = bad).

    ``encoding="ordinal"``: the 20 attributes, a categorical code ``A<k><level>`` as the integer level (as many
    CE papers code it for tree and linear models alike). ``encoding="onehot"``: each categorical attribute
    becomes one 0/1 column per documented level that occurs in the file (``checking_status=A11``, ...), the 7
    numeric attributes stay as they are, in file order: about 61 columns on the real file, the encoding the
    paper's experiments use.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding {encoding!r}; allowed: {', '.join(map(repr, ENCODINGS))}")
    rows, y = read_german(path)
    X = pd.DataFrame(rows, columns=[n for n, _ in GERMAN_ATTRIBUTES]).astype(float)
    if encoding == "ordinal":
        return X, y
    levels = {name: [f"A{k}{v}" for v in GERMAN_LEVELS[k]]
              for k, (name, kind) in enumerate(GERMAN_ATTRIBUTES, start=1) if kind == "cat"}
    return one_hot(X, {name: list(GERMAN_LEVELS[k]) for k, (name, kind) in enumerate(GERMAN_ATTRIBUTES, start=1)
                       if kind == "cat"}, labels=levels), y


def one_hot(X: pd.DataFrame, categorical: dict, labels: Optional[dict] = None) -> pd.DataFrame:
    """Replace each column named in ``categorical`` (name -> its level values) by one 0/1 column per level that
    occurs, named ``name=<label>`` (``labels[name][k]`` for level k, else the value), in place of the column."""
    cols = {}
    for name in X.columns:
        if name not in categorical:
            cols[name] = X[name].to_numpy(dtype=float)
            continue
        values = X[name].to_numpy()
        for k, level in enumerate(categorical[name]):
            hit = values == level
            if hit.any():
                tag = labels[name][k] if labels and name in labels else f"{level:g}"
                cols[f"{name}={tag}"] = hit.astype(float)
    return pd.DataFrame(cols)


def make_credit_like_onehot(n: int = 1000, p: int = 12, seed: int = 0, bad_rate: float = 0.3
                            ) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`make_credit_like` with its ordinal features one-hot encoded (one 0/1 column per level), as German
    Credit's categorical attributes are in the paper: 40 columns for the default 12 features (9 ordinal with
    2-5 levels, 3 integer/amount features kept as they are)."""
    X, y = make_credit_like(n, p, seed=seed, bad_rate=bad_rate)
    kinds = {(name if k < len(_CREDIT_SPEC) else f"{name}_{k // len(_CREDIT_SPEC) + 1}"): (kind, arg)
             for k, (name, kind, arg) in ((k, _CREDIT_SPEC[k % len(_CREDIT_SPEC)]) for k in range(p))}
    cat = {name: [float(v) for v in range(1, arg + 1)] for name, (kind, arg) in kinds.items() if kind == "ordinal"}
    return one_hot(X, cat), y


def load_dataset(name: str, seed: int = 0, data_path: Optional[Path] = None, test_size: float = 0.3) -> Dataset:
    """Load ``name``, split it (stratified, ``random_state=seed``) and standardise with training statistics."""
    from sklearn.model_selection import train_test_split

    if name == "breast_cancer10":
        X, y = load_breast_cancer10()
    elif name == "fair":
        X, y = load_fair()
    elif name == "credit_like":
        X, y = make_credit_like(1000, 12, seed=seed)
    elif name == "credit_like_onehot":
        X, y = make_credit_like_onehot(1000, 12, seed=seed)
    elif name in ("german", "german_onehot"):
        if data_path is None:
            raise ValueError(f"data set {name!r} needs data_path (the german.data file)")
        X, y = load_german(data_path, encoding="onehot" if name == "german_onehot" else "ordinal")
    else:
        raise ValueError(f"unknown data set {name!r}; allowed: {', '.join(DATASETS)}")
    Xa = X.to_numpy(dtype=float)
    Xtr, Xte, ytr, yte = train_test_split(Xa, y, test_size=test_size, stratify=y, random_state=seed)
    mean, scale = Xtr.mean(0), Xtr.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    return Dataset(name=name, feature_names=list(X.columns), X_train=(Xtr - mean) / scale, y_train=ytr,
                   X_test=(Xte - mean) / scale, y_test=yte, mean=mean, scale=scale)
