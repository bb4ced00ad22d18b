"""Write the 3-record PhysioNet-2012-layout fixture under ``data/gman/physionet_tiny/`` (seeded, synthetic values).

    python -m lib.gman.make_data

Layout as distributed: ``Outcomes-a.txt`` (headed CSV) and ``set-a/<RecordID>.txt`` (``Time,Parameter,Value``,
times ``HH:MM`` since admission, the static descriptors at ``00:00``). Values are made up, not patient data.
"""
from __future__ import annotations

import numpy as np

from lib.common import data_dir

RECORDS = (132539, 132540, 132541)
SERIES = {"HR": (80.0, 10.0), "Na": (139.0, 3.0), "Glucose": (120.0, 25.0), "Temp": (37.0, 0.6)}


def write_fixture(folder=None, seed: int = 0):
    rng = np.random.default_rng(seed)
    root = (data_dir("gman") if folder is None else folder)
    from pathlib import Path

    root = Path(root) / "physionet_tiny" if folder is None else Path(root)
    (root / "set-a").mkdir(parents=True, exist_ok=True)
    outcome = ["RecordID,SAPS-I,SOFA,Length_of_stay,Survival,In-hospital_death"]
    for k, rid in enumerate(RECORDS):
        lines = ["Time,Parameter,Value", f"00:00,RecordID,{rid}", f"00:00,Age,{int(rng.integers(40, 85))}",
                 f"00:00,Gender,{k % 2}", "00:00,Height,-1", f"00:00,ICUType,{1 + k}",
                 f"00:00,Weight,{rng.uniform(55, 95):.1f}"]
        rows = []
        for name, (mu, sd) in SERIES.items():
            n = int(rng.integers(2, 6))
            for minute in np.sort(rng.choice(np.arange(5, 48 * 60, 7), n, replace=False)):
                rows.append((int(minute), name, mu + sd * rng.normal()))
        rows.sort()
        lines += [f"{m // 60:02d}:{m % 60:02d},{p},{v:.1f}" for m, p, v in rows]
        (root / "set-a" / f"{rid}.txt").write_text("\n".join(lines) + "\n")
        death = k == 1
        outcome.append(f"{rid},{int(rng.integers(5, 20))},{int(rng.integers(1, 12))},{int(rng.integers(3, 30))},"
                       f"{int(rng.integers(5, 60)) if death else -1},{int(death)}")
    (root / "Outcomes-a.txt").write_text("\n".join(outcome) + "\n")
    return root


if __name__ == "__main__":
    print(write_fixture())
