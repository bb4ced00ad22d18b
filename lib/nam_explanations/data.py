"""Data sets for the NAM-explanation reproduction, all min-max scaled to [0, 1].

The paper's benchmarks are not known (its body was not readable) and would need downloads; the stand-ins are

* ``breast_cancer``: scikit-learn's breast cancer data (30 features, y = 1 benign);
* ``wine``: scikit-learn's wine data, class 0 against the rest (13 features; small enough for brute force);
* ``digits38``: scikit-learn's 8x8 digits, 3 against 8 (64 pixel features, a larger n);
* ``additive<n>``: :func:`make_additive`, a seeded additive generator with known shape functions (sin, step,
  quadratic, linear, and zero for half the features), for the query-count scaling in n;
* ``user``: a headed CSV of numeric features and a 0/1 target column (``data_path`` and ``target``), read by
  :func:`read_tabular`.

Every set is split 70/30 (stratified, seeded) and scaled with the *training* minima and maxima, then clipped to
[0, 1], so the feature domain of every explanation is the box [0, 1]^n.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

DATASETS = ("breast_cancer", "wine", "digits38")
ADDITIVE_SIZES = (8, 16, 32, 64, 128, 256)
LABELS = {"breast_cancer": "breast cancer", "wine": "wine (0 vs rest)", "digits38": "digits 3 vs 8",
          "user": "user CSV"}

CSV_EXPECTED = ("a headed CSV (comma-separated): one row per example, numeric feature columns and a target column "
                "(named by the 'target' parameter) holding 0/1 labels; at least 20 rows and both classes")


@dataclass
class Dataset:
    """A [0, 1]-scaled train/test split."""

    name: str
    feature_names: list
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def label(self) -> str:
        if self.name.startswith("additive"):
            return f"additive, n = {self.n_features}"
        return LABELS.get(self.name, self.name)


def additive_shapes(n_features: int) -> list[str]:
    """The planted shape of each feature: a cycle of sin / step / quadratic / linear on the first half, zero after."""
    kinds = ("sin", "step", "quad", "linear")
    half = max(1, n_features // 2)
    return [kinds[i % len(kinds)] if i < half else "zero" for i in range(n_features)]


def make_additive(n_samples: int, n_features: int, seed: int = 0, noise: float = 0.3):
    """``(X in [0, 1]^{n x p}, y, shapes)``: y ~ Bernoulli(sigmoid(Σ_i s_i · f_kind(x_i))), half the features inert.

    Each active feature gets a random sign and a scale ~ 3/sqrt(#active), so the logit's spread does not grow
    with n; ``noise`` is a Gaussian logit noise.
    """
    if n_features < 2 or n_samples < 20:
        raise ValueError(f"make_additive needs n_features >= 2 and n_samples >= 20, got {n_features}, {n_samples}")
    rng = np.random.default_rng(seed)
    X = rng.random((n_samples, n_features))
    shapes = additive_shapes(n_features)
    active = sum(s != "zero" for s in shapes)
    amp = rng.choice([-1.0, 1.0], n_features) * rng.uniform(0.6, 1.4, n_features) * 3.0 / np.sqrt(active)
    f = {"sin": lambda t: np.sin(2 * np.pi * t), "step": lambda t: np.where(t > 0.5, 1.0, -1.0),
         "quad": lambda t: 4 * (t - 0.5) ** 2 - 0.33, "linear": lambda t: 2 * t - 1, "zero": lambda t: 0 * t}
    logit = sum(amp[i] * f[s](X[:, i]) for i, s in enumerate(shapes))
    logit = logit - np.median(logit) + rng.normal(0, noise, n_samples)
    y = (rng.random(n_samples) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y, shapes


def _user_problem(path, problem, line=None):
    from lib.common.userfiles import UserFileError

    return UserFileError("data_path", path, problem, expected=CSV_EXPECTED, line=line)


def read_tabular(data_path, target: str = "target"):
    """Read a user CSV (the ``data_path`` loader): ``(X [rows, features] float, y int 0/1, feature names)``.

    Built on :func:`lib.common.userfiles.read_csv_frame` (missing, compressed, binary, empty files, ragged rows,
    non-numeric or missing fields, other delimiters are refused there, naming the line and column); on top: the
    ``target`` column exists, holds only 0 and 1 with both present, at least one feature column, at least 20 rows,
    and no constant-only data set.
    """
    from lib.common.userfiles import read_csv_frame

    frame = read_csv_frame("data_path", data_path, expected=CSV_EXPECTED, delimiter=",")
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _user_problem(data_path, f"the header repeats column name(s) {', '.join(map(repr, dup))}")
    if target not in names:
        raise _user_problem(data_path, f"no target column {target!r} in the header (found "
                            f"{', '.join(map(repr, names[:12]))}{', ...' if len(names) > 12 else ''}); set the "
                            f"'target' parameter to the label column's name")
    if len(names) < 2:
        raise _user_problem(data_path, "the file has a target column but no feature column")
    yv = frame[target].to_numpy(dtype=float)
    bad = np.flatnonzero((yv != 0) & (yv != 1))
    if bad.size:
        raise _user_problem(data_path, f"target column {target!r} holds {yv[bad[0]]:g} in data row {bad[0] + 1}; "
                            f"a binary target of 0/1 labels is needed")
    if len(yv) < 20:
        raise _user_problem(data_path, f"the file has {len(yv)} data rows; at least 20 are needed to split it")
    if yv.min() == yv.max():
        raise _user_problem(data_path, f"every row has target {int(yv[0])}; both classes 0 and 1 are needed")
    features = [n for n in names if n != target]
    X = frame[features].to_numpy(dtype=float)
    return X, yv.astype(int), features


def _load_raw(name: str, seed: int, data_path=None, target: str = "target", n_samples: int = 600):
    from sklearn import datasets as skd

    if name == "breast_cancer":
        d = skd.load_breast_cancer()
        return d.data, d.target.astype(int), [str(f) for f in d.feature_names]
    if name == "wine":
        d = skd.load_wine()
        return d.data, (d.target == 0).astype(int), [str(f) for f in d.feature_names]
    if name == "digits38":
        d = skd.load_digits()
        keep = np.isin(d.target, (3, 8))
        return d.data[keep], (d.target[keep] == 8).astype(int), [f"pixel_{i // 8}_{i % 8}" for i in range(64)]
    if name.startswith("additive"):
        p = int(name[len("additive"):])
        X, y, shapes = make_additive(n_samples, p, seed=seed)
        return X, y, [f"x{i}_{s}" for i, s in enumerate(shapes)]
    if name == "user":
        if data_path is None:
            raise ValueError("data set 'user' needs data_path (a headed CSV with a target column)")
        return read_tabular(data_path, target)
    raise ValueError(f"unknown data set {name!r}; allowed: {', '.join(DATASETS)}, additive<n>, user")


def load_dataset(name: str, seed: int = 0, data_path=None, target: str = "target", test_size: float = 0.3,
                 n_samples: int = 600) -> Dataset:
    """Load ``name``, split it (stratified, ``random_state=seed``) and min-max scale to [0, 1] on the training part."""
    from sklearn.model_selection import train_test_split

    X, y, names = _load_raw(name, seed, data_path, target, n_samples)
    Xtr, Xte, ytr, yte = train_test_split(np.asarray(X, float), y, test_size=test_size, stratify=y,
                                          random_state=seed)
    lo, hi = Xtr.min(0), Xtr.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    scale = lambda A: np.clip((A - lo) / span, 0.0, 1.0)  # noqa: E731
    return Dataset(name=name, feature_names=list(names), X_train=scale(Xtr), y_train=np.asarray(ytr, int),
                   X_test=scale(Xte), y_test=np.asarray(yte, int))


def pick_points(ds: Dataset, n_points: int, rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """``n_points`` test rows (a seeded random subset, or all of them when there are fewer)."""
    n = len(ds.X_test)
    idx = np.arange(n) if rng is None else rng.permutation(n)
    return ds.X_test[np.sort(idx[:min(n_points, n)])]
