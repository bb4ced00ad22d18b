"""Image data for the network experiments: scikit-learn's digits (the offline default) and CIFAR-10's python
version (``data_path``).

CIFAR-10 "python version" (``cifar-10-python.tar.gz`` unpacked) is a folder ``cifar-10-batches-py`` holding
``data_batch_1`` ... ``data_batch_5``, ``test_batch`` and ``batches.meta``: pickled dicts (written by Python 2) with
``b'data'`` (a 10000 x 3072 uint8 array, each row the red, green and blue 32 x 32 planes), ``b'labels'`` (10000
integers in 0..9) and, in ``batches.meta``, ``b'label_names'``. The reader unpickles with a restricted unpickler that
builds only plain containers and NumPy arrays (a pickle can run code; these files never need to), and checks every
field, so a wrong or damaged file gets a message naming the parameter, the file and what was expected.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.common.userfiles import UserFileError, check_folder, read_pickle

CIFAR_BATCHES = tuple(f"data_batch_{k}" for k in range(1, 6))
CIFAR_FILES = CIFAR_BATCHES + ("test_batch", "batches.meta")
CIFAR_EXPECTED = ("the CIFAR-10 python version: a folder (cifar-10-batches-py) holding the pickled data_batch_1..5, "
                  "test_batch and batches.meta, each batch a dict with b'data' (n x 3072 uint8) and b'labels' "
                  "(n integers in 0..9)")


@dataclass
class ImageData:
    """Images as float32 ``(n, channels, h, w)``, standardised; integer labels; where they came from."""

    name: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    source: str

    @property
    def shape(self) -> tuple:
        return tuple(self.X.shape[1:])


def load_digits_images(n: int | None = None, rng: np.random.Generator | None = None) -> ImageData:
    """scikit-learn's 1797 8 x 8 digits, pixels / 16 standardised with the global mean and s.d.; ``n`` images (a
    random subset drawn from ``rng``) or all."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    if n is not None and n < len(X):
        idx = np.sort((rng or np.random.default_rng(0)).choice(len(X), n, replace=False))
        X, y = X[idx], y[idx]
    X = X / 16.0
    X = (X - X.mean()) / X.std()
    return ImageData("digits", X.reshape(-1, 1, 8, 8).astype(np.float32), y.astype(np.int64), 10,
                     "sklearn.datasets.load_digits")


# --- CIFAR-10 ---------------------------------------------------------------------------------------------------
def _unpickle(parameter: str, path: Path, expected: str):
    obj = read_pickle(parameter, path, expected=expected,
                      unpack_hint="unpack the CIFAR-10 archive first (tar xzf cifar-10-python.tar.gz)")
    return {(k.decode("latin1") if isinstance(k, bytes) else str(k)): v for k, v in obj.items()}


def _read_batch(parameter: str, path: Path) -> tuple[np.ndarray, np.ndarray]:
    d = _unpickle(parameter, path, CIFAR_EXPECTED)
    missing = [k for k in ("data", "labels") if k not in d]
    if missing:
        raise UserFileError(parameter, path, f"the dict has no {', '.join(repr(m) for m in missing)} (keys: "
                            f"{', '.join(sorted(d)[:8])})", expected=CIFAR_EXPECTED)
    data, labels = d["data"], d["labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        found = (f"an array of shape {data.shape} and dtype {data.dtype}" if isinstance(data, np.ndarray)
                 else f"a {type(data).__name__}")
        raise UserFileError(parameter, path, f"b'data' is {found}", expected="b'data' a uint8 array of shape (n, 3072)")
    try:
        lab = np.asarray(labels)
    except Exception:  # noqa: BLE001
        lab = np.asarray([])
    if lab.ndim != 1 or lab.dtype.kind not in "iu" or len(lab) != len(data):
        raise UserFileError(parameter, path, f"b'labels' holds {len(lab) if lab.ndim == 1 else '?'} entries of kind "
                            f"{lab.dtype}, for {len(data)} images", expected="one integer label in 0..9 per image")
    if len(lab) and (lab.min() < 0 or lab.max() > 9):
        raise UserFileError(parameter, path, f"b'labels' holds values outside 0..9 ({lab.min()}..{lab.max()})",
                            expected="one integer label in 0..9 per image")
    return data, lab.astype(np.int64)


def find_cifar10_folder(parameter: str, path) -> Path:
    """The folder holding the batches: ``path`` itself or its ``cifar-10-batches-py`` sub-folder."""
    p = Path(path).expanduser()
    if p.is_dir() and not (p / "data_batch_1").exists() and (p / "cifar-10-batches-py").is_dir():
        p = p / "cifar-10-batches-py"
    return check_folder(parameter, p, expected=CIFAR_EXPECTED, must_contain=CIFAR_FILES)


def read_cifar10(path, *, parameter: str = "data_path", n: int | None = None,
                 rng: np.random.Generator | None = None) -> ImageData:
    """CIFAR-10's training batches as standardised float32 images ``(n, 3, 32, 32)`` (per-channel mean and s.d.);
    ``n`` images (a random subset drawn from ``rng``) or all. ``test_batch`` and ``batches.meta`` are checked too."""
    folder = find_cifar10_folder(parameter, path)
    xs, ys = [], []
    for name in CIFAR_BATCHES:
        x, y = _read_batch(parameter, folder / name)
        xs.append(x)
        ys.append(y)
    _read_batch(parameter, folder / "test_batch")
    meta = _unpickle(parameter, folder / "batches.meta", "batches.meta: a dict with b'label_names' (10 names)")
    names = meta.get("label_names")
    if not isinstance(names, list) or len(names) != 10:
        raise UserFileError(parameter, folder / "batches.meta", "b'label_names' is not a list of 10 names",
                            expected="batches.meta: a dict with b'label_names' (10 names)")
    X, y = np.concatenate(xs), np.concatenate(ys)
    if n is not None and n < len(X):
        idx = np.sort((rng or np.random.default_rng(0)).choice(len(X), n, replace=False))
        X, y = X[idx], y[idx]
    X = X.reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
    mu = X.mean(axis=(0, 2, 3), keepdims=True)
    sd = X.std(axis=(0, 2, 3), keepdims=True) + 1e-6
    return ImageData("cifar10", ((X - mu) / sd).astype(np.float32), y, 10, str(folder))


def check_cifar10(path) -> ImageData:
    """The loader the suite and the runner call on a user's ``data_path`` (reads and checks every file)."""
    return read_cifar10(path, parameter="data_path", n=8)
