"""Regenerate the tiny CIFAR-10-format fixture under ``data/gd_direction/cifar-10-batches-py/``.

    python -m lib.gd_direction.make_data

The images are seeded random bytes, not CIFAR-10: the files only reproduce the layout of CIFAR-10's python version
(pickled dicts with b'batch_label', b'labels', b'data' (n x 3072 uint8) and b'filenames'; ``batches.meta`` with
b'label_names', b'num_cases_per_batch' and b'num_vis'), so that ``read_cifar10`` is tested offline.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lib.common import data_dir
from lib.common.userfiles import write_pickles

SEED = 2026
N_PER_BATCH = 2
LABEL_NAMES = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]


def _batch(rng: np.random.Generator, label: bytes, n: int) -> dict:
    return {b"batch_label": label, b"labels": [int(v) for v in rng.integers(0, 10, n)],
            b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
            b"filenames": [f"fixture_{k}.png".encode() for k in range(n)]}


def write_fixture(folder: Path | None = None) -> dict:
    folder = Path(folder) if folder is not None else data_dir("gd_direction") / "cifar-10-batches-py"
    rng = np.random.default_rng(SEED)
    payloads = {f"data_batch_{k}": _batch(rng, f"training batch {k} of 5 (fixture)".encode(), N_PER_BATCH)
                for k in range(1, 6)}
    payloads["test_batch"] = _batch(rng, b"testing batch 1 of 1 (fixture)", N_PER_BATCH)
    payloads["batches.meta"] = {b"label_names": LABEL_NAMES, b"num_cases_per_batch": N_PER_BATCH, b"num_vis": 3072}
    return write_pickles(folder, payloads)


def main() -> None:
    folder = data_dir("gd_direction") / "cifar-10-batches-py"
    for name, digest in write_fixture(folder).items():
        path = folder / name
        print(f"{path.relative_to(folder.parents[1]).as_posix()}  {path.stat().st_size} bytes  sha256 {digest}")


if __name__ == "__main__":
    main()
