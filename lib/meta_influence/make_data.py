"""Regenerate the tiny MNIST-format fixture under ``data/meta_influence/mnist/``.

    python -m lib.meta_influence.make_data

The images are seeded random bytes, not MNIST: the four files only reproduce MNIST's IDX layout (idx3 images of
28 x 28 unsigned bytes, idx1 labels in 0..9; 20 training and 10 test images), so that the reader and the 8x8
downsampling are tested offline. Written plain (MNIST's site serves them gzip-compressed; the reader takes either).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common import data_dir
from lib.common.mnist import write_mnist

SEED = 2226
N_TRAIN, N_TEST, SIDE = 20, 10, 28


def write_fixture(folder: Path | None = None) -> dict:
    folder = Path(folder) if folder is not None else data_dir("meta_influence") / "mnist"
    rng = np.random.default_rng(SEED)
    arrays = {"train_images": rng.integers(0, 256, (N_TRAIN, SIDE, SIDE), dtype=np.uint8),
              "train_labels": (np.arange(N_TRAIN) % 10).astype(np.uint8),
              "test_images": rng.integers(0, 256, (N_TEST, SIDE, SIDE), dtype=np.uint8),
              "test_labels": (np.arange(N_TEST) % 10).astype(np.uint8)}
    return write_mnist(folder, arrays)


def main() -> None:
    folder = data_dir("meta_influence") / "mnist"
    for name, digest in write_fixture(folder).items():
        path = folder / name
        print(f"{path.relative_to(folder.parents[1]).as_posix()}  {path.stat().st_size} bytes  sha256 {digest}")


if __name__ == "__main__":
    main()
