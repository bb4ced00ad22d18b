"""Task B's data: scikit-learn's digits with corrupted training labels (the offline default) and MNIST's IDX files
(``data_path``, a folder holding the four files as distributed by LeCun et al., plain or gzip-compressed).

IDX format: a 4-byte magic number (two zero bytes, a type code, 0x08 for unsigned bytes, and the number of
dimensions), one big-endian uint32 per dimension, then the data in C order. MNIST's images are idx3 (n x 28 x 28),
its labels idx1 (n integers in 0..9).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.common.mnist import MNIST_EXPECTED, MNIST_FILES, read_idx, read_mnist  # noqa: F401  (re-exported)


@dataclass
class HPOData:
    """Train / validation / test splits; ``corrupted`` marks the training rows whose label was replaced."""

    name: str
    A_train: np.ndarray
    b_train: np.ndarray
    corrupted: np.ndarray
    A_val: np.ndarray
    b_val: np.ndarray
    A_test: np.ndarray
    b_test: np.ndarray
    source: str

    @property
    def n_features(self) -> int:
        return self.A_train.shape[1]


def check_mnist(path) -> dict:
    """The loader the suite and the runner call on a user's ``data_path``."""
    return read_mnist(path, parameter="data_path")


def _corrupt(b: np.ndarray, frac: float, rng: np.random.Generator, n_classes: int = 10):
    n = len(b)
    idx = rng.choice(n, int(round(frac * n)), replace=False)
    b = b.copy()
    b[idx] = (b[idx] + rng.integers(1, n_classes, len(idx))) % n_classes  # a uniformly drawn *other* label
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return b, mask


def _with_bias(A: np.ndarray) -> np.ndarray:
    return np.concatenate([A, np.ones((len(A), 1))], axis=1)


def make_hpo_data(rng: np.random.Generator, *, frac: float = 0.3, n_train: int = 1000, n_val: int = 400,
                  n_test: int = 397, data_path=None) -> HPOData:
    """Digits (pixels / 16, a bias column) split train/val/test, ``frac`` of the training labels corrupted; with
    ``data_path``, MNIST (pixels / 255): train and validation rows drawn from its training files, test rows from
    its t10k files (each split capped by what the files hold)."""
    if data_path is None:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        perm = rng.permutation(len(X))
        X, y = X[perm] / 16.0, y[perm]
        n_train = min(n_train, len(X) - 2)
        n_val = min(n_val, len(X) - n_train - 1)
        A_tr, b_tr = X[:n_train], y[:n_train]
        A_va, b_va = X[n_train:n_train + n_val], y[n_train:n_train + n_val]
        A_te, b_te = X[n_train + n_val:n_train + n_val + n_test], y[n_train + n_val:n_train + n_val + n_test]
        name, source = "digits", "sklearn.datasets.load_digits"
    else:
        m = read_mnist(data_path)
        Xtr = m["train_images"].reshape(len(m["train_images"]), -1) / 255.0
        Xte = m["test_images"].reshape(len(m["test_images"]), -1) / 255.0
        perm = rng.permutation(len(Xtr))
        n_train = min(n_train, max(1, len(Xtr) * 2 // 3))
        n_val = min(n_val, len(Xtr) - n_train)
        A_tr, b_tr = Xtr[perm[:n_train]], m["train_labels"][perm[:n_train]].astype(int)
        A_va, b_va = Xtr[perm[n_train:n_train + n_val]], m["train_labels"][perm[n_train:n_train + n_val]].astype(int)
        pt = rng.permutation(len(Xte))[:n_test]
        A_te, b_te = Xte[pt], m["test_labels"][pt].astype(int)
        name, source = "mnist", str(data_path)
    b_tr_c, mask = _corrupt(np.asarray(b_tr, dtype=int), frac, rng)
    return HPOData(name, _with_bias(A_tr), b_tr_c, mask, _with_bias(A_va), np.asarray(b_va, dtype=int),
                   _with_bias(A_te), np.asarray(b_te, dtype=int), source)
