"""The machine's speed, measured with the same fixed work as ``../shared/tools/speed_probe.py``.

Runtimes from different machines (or days) compare as ratios to these numbers. The runner measures once per
invocation (about 2-3 s, most of it importing torch) and stores the result in every ``run.json``::

    "speed_probe": {"python_s": 0.42, "numpy_s": 0.14, "torch_s": 0.61, "line": "python 0.42s  numpy 0.14s ..."}
"""
from __future__ import annotations

import time
from functools import lru_cache


def measure() -> dict:
    """Seconds for a pure-Python loop, 30 NumPy 400x400 matmuls and 300 Adam steps of a small MLP (one thread)."""
    t = time.perf_counter()
    s = 0
    for i in range(3_000_000):
        s += i * i
    py = time.perf_counter() - t

    import numpy as np

    a = np.random.default_rng(0).standard_normal((400, 400))
    t = time.perf_counter()
    for _ in range(30):
        a @ a
    npt = time.perf_counter() - t

    try:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            gen = torch.Generator().manual_seed(0)
            m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
            opt = torch.optim.Adam(m.parameters())
            x = torch.randn(256, 64, generator=gen)
            t = time.perf_counter()
            for _ in range(300):
                opt.zero_grad()
                loss = (m(x) - x).pow(2).mean()
                loss.backward()
                opt.step()
            tt = time.perf_counter() - t
        finally:
            torch.set_num_threads(before)
    except ImportError:  # pragma: no cover - torch is a dependency
        tt = float("nan")
    return {"python_s": round(py, 3), "numpy_s": round(npt, 3), "torch_s": round(tt, 3),
            "line": f"python {py:.2f}s  numpy {npt:.2f}s  torch {tt:.2f}s"}


@lru_cache(maxsize=1)
def cached() -> dict:
    """:func:`measure`, once per process."""
    return measure()


def ratio(duration_s: float, probe: dict | None) -> float | None:
    """A runtime in units of the probe's total (python + numpy + torch seconds): comparable across machines."""
    if not probe:
        return None
    total = sum(float(probe.get(k) or 0.0) for k in ("python_s", "numpy_s", "torch_s"))
    return round(float(duration_s) / total, 1) if total > 0 else None
