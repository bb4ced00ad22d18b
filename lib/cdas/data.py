"""Reader of the official contrastive data (``colored-dye/concept500_contrastive``: parquet, or the same rows as JSON
lines): one quadruple per row in the columns ``negative_input`` (x), ``negative_output`` (y), ``positive_input``
(x_c), ``positive_output`` (y_c); an optional concept column (``output_concept`` or ``concept``) groups the rows.

    python -m lib.cdas.data --fixture     # writes data/cdas/tiny_contrastive.jsonl from the synthetic world
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lib.common.userfiles import UserFileError, check_file, read_jsonl

COLUMNS = ("negative_input", "negative_output", "positive_input", "positive_output")
CONCEPT_COLUMNS = ("output_concept", "concept")
CONTRAST_EXPECTED = ("a parquet file or JSON lines (one object per line) with non-empty string fields "
                     "negative_input, negative_output, positive_input, positive_output (optional output_concept)")


def _check_frame(df: pd.DataFrame, path, where=None) -> pd.DataFrame:
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise UserFileError("data_path", path, f"missing column(s) {', '.join(missing)} (found: "
                            f"{', '.join(map(str, df.columns)) or 'none'})", expected=CONTRAST_EXPECTED)
    for c in COLUMNS:
        bad = [i for i, v in enumerate(df[c]) if not isinstance(v, str) or not v.strip()]
        if bad:
            raise UserFileError("data_path", path, f"column {c!r} must hold non-empty text; got "
                                f"{df[c].iloc[bad[0]]!r}", expected=CONTRAST_EXPECTED,
                                line=(bad[0] + 1) if where == "jsonl" else None,
                                record=None if where == "jsonl" else f"row {bad[0]}")
    concept = next((c for c in CONCEPT_COLUMNS if c in df.columns), None)
    out = df[list(COLUMNS)].copy()
    out["concept"] = df[concept].astype(str) if concept else "concept"
    return out.reset_index(drop=True)


def read_contrastive(path) -> pd.DataFrame:
    """Quadruples from ``path`` (``.parquet`` needs pyarrow; anything else is read as JSON lines)."""
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq"):
        check_file("data_path", p, expected=CONTRAST_EXPECTED)
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserFileError("data_path", path, "reading parquet needs pyarrow (`pip install pyarrow`), or "
                                "convert the file to JSON lines", expected=CONTRAST_EXPECTED) from None
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises its own error types
            raise UserFileError("data_path", path, f"not a readable parquet file ({type(exc).__name__}: {exc})",
                                expected=CONTRAST_EXPECTED) from None
        return _check_frame(df, path)
    rows = []
    for no, obj in read_jsonl("data_path", p, expected=CONTRAST_EXPECTED):
        missing = [c for c in COLUMNS if c not in obj]
        if missing:
            raise UserFileError("data_path", path, f"missing field(s) {', '.join(missing)}",
                                expected=CONTRAST_EXPECTED, line=no)
        rows.append(obj)
    return _check_frame(pd.DataFrame(rows), path, where="jsonl")


def write_fixture(path=None, n=6) -> Path:
    from lib.common import data_dir

    from .world import World

    path = Path(path) if path else data_dir("cdas") / "tiny_contrastive.jsonl"
    w = World(0)
    df = pd.concat([w.quadruples("ocean", n // 2, "fixture"), w.quadruples("space", n - n // 2, "fixture")])
    with open(path, "w", encoding="utf-8") as fh:
        for r in df.itertuples(index=False):
            fh.write(json.dumps({c: getattr(r, c) for c in COLUMNS} | {"output_concept": r.concept}) + "\n")
    return path


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="write the tiny contrastive fixture")
    ap.add_argument("--fixture", action="store_true", required=True)
    ap.parse_args()
    print(write_fixture())
