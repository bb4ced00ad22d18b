"""Regenerate the small kin8nm-format fixtures under ``data/hinge_regression_tree/``.

    python -m lib.hinge_regression_tree.make_data

The rows come from this package's kin-like generator (seeded), not from kin8nm: the files only reproduce the two
layouts in which kin8nm is distributed (DELVE: whitespace-separated; HRT repository: comma-separated; 8 inputs
then the target, no header), plus three malformed files the reader must refuse.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .data import make_kin_like

N_ROWS = 64
SEED = 8192

FILES = {
    "kin8nm_delve_sample.data": "DELVE layout: whitespace-separated, right-aligned fixed-width fields",
    "kin8nm_hrt_sample.data": "HRT repository layout: comma-separated",
    "kin8nm_bad_columns.data": "malformed: 8 fields per row (the target is missing)",
    "kin8nm_bad_header.data": "malformed: a header row before comma-separated rows",
    "kin8nm_bad_semicolon.data": "malformed: semicolon-separated",
}


def sample_rows(n: int = N_ROWS) -> np.ndarray:
    X, y = make_kin_like(n, np.random.default_rng(SEED))
    return np.column_stack([X, y])


def write_fixtures(folder: Path | None = None) -> dict:
    """Write every fixture; returns {name: sha256}."""
    folder = Path(folder) if folder is not None else data_dir("hinge_regression_tree")
    folder.mkdir(parents=True, exist_ok=True)
    rows = sample_rows()
    texts = {
        "kin8nm_delve_sample.data": "".join(" " + " ".join(f"{v:14.6e}" for v in r) + "\n" for r in rows),
        "kin8nm_hrt_sample.data": "".join(",".join(f"{v:.6f}" for v in r) + "\n" for r in rows),
        "kin8nm_bad_columns.data": "".join(" ".join(f"{v:.6f}" for v in r[:-1]) + "\n" for r in rows[:8]),
        "kin8nm_bad_header.data": ",".join([f"theta{k}" for k in range(1, 9)] + ["y"]) + "\n"
        + "".join(",".join(f"{v:.6f}" for v in r) + "\n" for r in rows[:8]),
        "kin8nm_bad_semicolon.data": "".join(";".join(f"{v:.6f}" for v in r) + "\n" for r in rows[:8]),
    }
    out = {}
    for name, text in texts.items():
        path = folder / name
        path.write_text(text, encoding="utf-8", newline="\n")
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def main() -> None:
    folder = data_dir("hinge_regression_tree")
    for name, digest in write_fixtures(folder).items():
        size = (folder / name).stat().st_size
        print(f"{folder / name}  {size} bytes  sha256 {digest}  ({FILES[name]})")


if __name__ == "__main__":
    main()
