"""Regenerate the tiny CIFAR-100-format fixture under ``data/entangled_unlearning/``.

    python -m lib.entangled_unlearning.make_data

The images are seeded random bytes, not CIFAR-100: the files only reproduce the layout of the python version of
CIFAR-100 (pickled dicts with b'data' (n x 3072 uint8), b'fine_labels', b'coarse_labels'; a 'meta' file with the
label names) for 15 fine classes of three super-classes, so that ``read_cifar100`` is tested offline.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common import data_dir
from lib.common.userfiles import write_pickles

SEED = 2026
# (coarse label, its five fine labels) of CIFAR-100: aquatic mammals, fish, flowers
CLASSES = {0: (4, 30, 55, 72, 95), 1: (1, 32, 67, 73, 91), 2: (54, 62, 70, 82, 92)}
N_TRAIN, N_TEST = 4, 2


def _split(rng, n_per):
    fine, coarse = [], []
    for c, fs in CLASSES.items():
        for f in fs:
            fine += [f] * n_per
            coarse += [c] * n_per
    data = rng.integers(0, 256, size=(len(fine), 3072), dtype=np.uint8)
    return {b"data": data, b"fine_labels": fine, b"coarse_labels": coarse, b"filenames": [b"x.png"] * len(fine)}


def write_fixture(folder: Path | None = None) -> dict:
    folder = Path(folder) if folder is not None else data_dir("entangled_unlearning") / "cifar-100-python"
    rng = np.random.default_rng(SEED)
    payloads = {"train": _split(rng, N_TRAIN), "test": _split(rng, N_TEST),
                "meta": {b"fine_label_names": [f"fine{k}".encode() for k in range(100)],
                         b"coarse_label_names": [f"coarse{k}".encode() for k in range(20)]}}
    return write_pickles(folder, payloads)


def main() -> None:
    folder = data_dir("entangled_unlearning") / "cifar-100-python"
    for name, digest in write_fixture(folder).items():
        path = folder / name
        print(f"{path.relative_to(folder.parents[1])}  {path.stat().st_size} bytes  sha256 {digest}")


if __name__ == "__main__":
    main()
