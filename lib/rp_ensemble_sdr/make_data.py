"""Regenerate the small fixtures under ``data/rp_ensemble_sdr/``: ``python -m lib.rp_ensemble_sdr.make_data``.

They are synthetic (seed 2410) and only mimic the *layout* of the paper's UCI files, for the reader's tests:

- ``communities_like.data``: headerless, comma-separated, 12 columns, '?' for missing values (Communities and
  Crime's layout: an id column first, missing county/community codes, the target last);
- ``superconductivity_like.csv``: a header line of names, then numbers; the target ``critical_temp`` last
  (Superconductivity ``train.csv``'s layout).
"""
from __future__ import annotations

import numpy as np

from lib.common import data_dir

SEED = 2410


def communities_text(rng: np.random.Generator, n: int = 40) -> str:
    lines = []
    for i in range(n):
        x = rng.uniform(0, 1, 8).round(2)
        y = float(np.clip(0.5 * x[0] + 0.3 * x[1] * x[2] + 0.05 * rng.standard_normal(), 0, 1))
        county = "?" if rng.random() < 0.2 else str(int(rng.integers(1, 200)))
        community = "?" if rng.random() < 0.2 else str(int(rng.integers(1, 9000)))
        feats = [f"{v:.2f}" for v in x]
        if i == 7:
            feats[3] = "?"
        lines.append(",".join([str(int(rng.integers(1, 57))), county, community] + feats + [f"{y:.2f}"]))
    return "\n".join(lines) + "\n"


def superconductivity_text(rng: np.random.Generator, n: int = 30) -> str:
    names = ["number_of_elements", "mean_atomic_mass", "wtd_mean_atomic_mass", "mean_fie", "wtd_mean_fie",
             "range_ThermalConductivity", "mean_Valence", "critical_temp"]
    lines = [",".join(names)]
    for _ in range(n):
        ne = int(rng.integers(1, 9))
        mass = rng.uniform(20, 200)
        fie = rng.uniform(400, 1200)
        row = [ne, mass, mass * rng.uniform(0.8, 1.2), fie, fie * rng.uniform(0.8, 1.2), rng.uniform(0, 400),
               rng.uniform(1, 7)]
        tc = max(0.0, 0.1 * row[1] - 0.02 * row[3] + 5 * ne + rng.normal(0, 3))
        lines.append(",".join([str(ne)] + [f"{v:.4f}" for v in row[1:]] + [f"{tc:.3f}"]))
    return "\n".join(lines) + "\n"


def write_fixtures(folder=None) -> list:
    folder = data_dir("rp_ensemble_sdr") if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    out = []
    for name, text in (("communities_like.data", communities_text(rng)),
                       ("superconductivity_like.csv", superconductivity_text(rng))):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover
    import hashlib

    for p in write_fixtures():
        print(f"| `rp_ensemble_sdr/{p.name}` | {p.stat().st_size} | `{hashlib.sha256(p.read_bytes()).hexdigest()}` |")
