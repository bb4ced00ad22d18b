"""Write the German Credit *format* fixture: synthetic rows in the layout of UCI's ``german.data``.

    python -m lib.cola.make_data            # writes data/cola/german_fixture.data (120 rows, seed 0)

The rows are not the real data: each attribute is drawn from its documented code set or range, and the
class (1 = good, 2 = bad, about 30 % bad) follows a planted logistic rule on checking status, duration,
credit history, savings and age, so a model trained on the fixture has something to learn. The file
exists to test :func:`lib.cola.data.load_german` and the ``data_path`` route through the notebook.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .data import GERMAN_ATTRIBUTES, GERMAN_LEVELS

FIXTURE_NAME = "german_fixture.data"
NUMERIC_RANGES = {2: (4, 72), 5: (250, 18424), 8: (1, 4), 11: (1, 4), 13: (19, 75), 16: (1, 4), 18: (1, 2)}


def german_fixture_lines(n: int = 120, seed: int = 0) -> list[str]:
    """``n`` synthetic lines in the ``german.data`` format (20 attributes + class), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    cols = {}
    for k, (name, kind) in enumerate(GERMAN_ATTRIBUTES, start=1):
        if kind == "cat":
            cols[k] = rng.choice(GERMAN_LEVELS[k], size=n)
        elif k == 5:  # credit amount: log-normal, clipped to the documented range
            cols[k] = np.clip(np.round(np.exp(rng.normal(7.9, 0.75, n))), *NUMERIC_RANGES[5]).astype(int)
        elif k == 2:
            cols[k] = np.clip(np.round(rng.normal(21, 12, n)), *NUMERIC_RANGES[2]).astype(int)
        elif k == 13:
            cols[k] = np.clip(np.round(rng.normal(35.5, 11, n)), *NUMERIC_RANGES[13]).astype(int)
        else:
            lo, hi = NUMERIC_RANGES[k]
            cols[k] = rng.integers(lo, hi + 1, size=n)
    score = (0.9 * (cols[1] - 2.5) + 0.5 * (cols[3] - 2) + 0.35 * (cols[6] - 3) - 0.05 * (cols[2] - 21)
             + 0.02 * (cols[13] - 35) + 1.0 + rng.normal(0, 0.5, n))
    good = rng.random(n) < 1 / (1 + np.exp(-score))
    lines = []
    for r in range(n):
        fields = [f"A{k}{cols[k][r]}" if kind == "cat" else str(int(cols[k][r]))
                  for k, (_, kind) in enumerate(GERMAN_ATTRIBUTES, start=1)]
        lines.append(" ".join(fields + ["1" if good[r] else "2"]))
    return lines


def write_german_fixture(path: Path | None = None, n: int = 120, seed: int = 0) -> Path:
    path = Path(path) if path is not None else data_dir("cola") / FIXTURE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(german_fixture_lines(n, seed)) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="output file (default data/cola/german_fixture.data)")
    ap.add_argument("--rows", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path = write_german_fixture(args.out, args.rows, args.seed)
    print(f"wrote {path} ({args.rows} rows)")


if __name__ == "__main__":
    main()
