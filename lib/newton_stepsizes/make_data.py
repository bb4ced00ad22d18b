"""Write the tiny LIBSVM fixture that tests the ``data_path`` loading path.

Run ``python -m lib.newton_stepsizes.make_data`` from the project root; it rewrites
``data/newton_stepsizes/tiny_libsvm.txt`` (40 rows, 6 features, labels +1/-1, 1-based feature indices, zeros
omitted as in LIBSVM files). The content depends only on the fixed seed below.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common import data_dir

FIXTURE_NAME = "tiny_libsvm.txt"
SEED = 20260
ROWS, COLS = 40, 6


def fixture_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The fixture's dense features (rounded to 4 decimals, about a third set to zero) and labels in {-1, +1}."""
    rng = np.random.default_rng(SEED)
    X = np.round(rng.normal(size=(ROWS, COLS)), 4)
    X[rng.random(size=X.shape) < 0.35] = 0.0
    w = np.array([1.5, -2.0, 0.5, 0.0, 1.0, -0.5])
    y = np.where(X @ w + 0.3 * rng.normal(size=ROWS) > 0, 1, -1)
    return X, y


def to_libsvm_lines(X: np.ndarray, y: np.ndarray) -> list[str]:
    """LIBSVM text: ``label index:value ...`` with 1-based indices, zeros left out."""
    lines = []
    for row, label in zip(X, y):
        feats = " ".join(f"{j + 1}:{v:.4f}".rstrip("0").rstrip(".") for j, v in enumerate(row) if v != 0.0)
        lines.append(f"{int(label):+d} {feats}".rstrip())
    return lines


def write_fixture(path: Path | None = None) -> Path:
    path = Path(path) if path is not None else data_dir("newton_stepsizes") / FIXTURE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    X, y = fixture_arrays()
    path.write_text("\n".join(to_libsvm_lines(X, y)) + "\n", encoding="ascii")
    return path


if __name__ == "__main__":
    print(write_fixture())
