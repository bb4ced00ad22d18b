"""Write the user-CSV *format* fixture: a tiny headed CSV of numeric features and a 0/1 target.

    python -m lib.nam_explanations.make_data        # writes data/nam_explanations/tiny_tabular.csv (60 rows, seed 0)

The rows come from :func:`lib.nam_explanations.data.make_additive` (6 features, 3 of them inert), rescaled to
made-up units and rounded to 4 decimals, so a NAM trained on the fixture has something to learn. The file exists to
test :func:`lib.nam_explanations.data.read_tabular` and the ``data_path`` route through the notebook.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .data import make_additive

FIXTURE_NAME = "tiny_tabular.csv"


def fixture_text(n: int = 60, seed: int = 0) -> str:
    X, y, shapes = make_additive(n, 6, seed=seed)
    X = X * np.array([10.0, 1.0, 250.0, 5.0, 1.0, 80.0]) + np.array([0.0, -0.5, 100.0, 0.0, 2.0, 18.0])
    names = [f"f{i}_{s}" for i, s in enumerate(shapes)] + ["target"]
    lines = [",".join(names)]
    for row, label in zip(X, y):
        lines.append(",".join(f"{v:.4f}" for v in row) + f",{int(label)}")
    return "\n".join(lines) + "\n"


def write_fixture(path: Path | None = None, n: int = 60, seed: int = 0) -> Path:
    path = Path(path) if path is not None else data_dir("nam_explanations") / FIXTURE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(fixture_text(n, seed), encoding="utf-8")
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help=f"output file (default data/nam_explanations/{FIXTURE_NAME})")
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path = write_fixture(args.out, args.rows, args.seed)
    print(f"wrote {path} ({args.rows} rows)")


if __name__ == "__main__":
    main()
