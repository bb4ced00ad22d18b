"""Claims C1, C2, C4 over many seeds without the notebook: ``python -m lib.fastmix.seeds 100 119``."""
from __future__ import annotations

import sys
import time

import lib.fastmix as paper
from lib.fastmix import experiments as ex


def one(seed, **kw):
    cfg = paper.config(seed=seed, verbose=False, out_dir="/tmp/fastmix_seeds", **kw)
    st = ex.prepare(cfg)
    s = ex.run_search(cfg, st)
    _long, summ = ex.evaluate_mixtures(cfg, st, s)
    lem = ex.lemma_check(cfg, st)
    return ex.claim_values(cfg, st, s, summ, lem)


if __name__ == "__main__":
    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    for seed in range(lo, hi + 1):
        t = time.time()
        v = one(seed)
        print(seed, f"{time.time() - t:.0f}s", {k: (round(x, 4) if isinstance(x, float) else x) for k, x in v.items()},
              flush=True)
