"""Tune the learning rate of every trained method (CDAS, DAS, KLDAS, Lang.) on the same grid and budget, on a
tuning seed kept apart from the claims' seeds, and write ``data/cdas/tuning.json``.

    python -m lib.cdas.tune            # about 5 min on one loaded CPU core

For each method and each lr of :data:`LR_GRID`: train on seed :data:`TUNE_SEED`'s world quadruples (quick sizes,
the shipped backbone), steer its held-out prompts over the multiplier grid and take the tuned steering score (the
same protocol as Figure 1). The notebook then trains each method with its best lr (``lr=None``).
"""
from __future__ import annotations

import json
import time

import torch

from lib.common import data_dir

TUNE_SEED = 9000
LR_GRID = (0.04, 0.2, 1.0)
METHODS = ("CDAS", "Lang.", "DAS (CE)", "KLDAS (fwd KL)", "KLDAS (rev KL)")
FILE = "tuning.json"


def load_tuning(path=None) -> dict:
    path = path or (data_dir("cdas") / FILE)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; regenerate it with `python -m lib.cdas.tune`")
    return json.loads(path.read_text())


def main(argv=None) -> None:
    import lib.cdas as paper
    from lib.cdas import experiments as ex
    from lib.cdas.model import load_checkpoint

    torch.set_num_threads(1)
    bb = load_checkpoint()
    rows = []
    t0 = time.perf_counter()
    for lr in LR_GRID:
        cfg = paper.config(mode="quick", seed=TUNE_SEED, lr=lr, out_dir="/tmp/cdas_tune", verbose=False)
        lab = ex.build(cfg, bb, methods=METHODS)
        tab = ex.score_table(ex.steer_and_judge(lab, list(METHODS), cfg.mults))
        for r in tab.itertuples(index=False):
            rows.append(dict(method=r.method, lr=lr, tuned=round(float(r.tuned), 4), unit=round(float(r.unit), 4)))
            print(rows[-1], flush=True)
    best = {}
    for m in METHODS:
        cand = [r for r in rows if r["method"] == m]
        best[m] = max(cand, key=lambda r: (r["tuned"], -r["lr"]))["lr"]
    out = dict(seed=TUNE_SEED, lr_grid=list(LR_GRID), criterion="tuned steering score (Figure 1 protocol), quick sizes",
               epochs=paper.SIZES["quick"]["epochs"], scan=rows, best_lr=best, seconds=round(time.perf_counter() - t0, 1),
               command="python -m lib.cdas.tune")
    path = data_dir("cdas") / FILE
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}: {best}")


if __name__ == "__main__":
    main()
