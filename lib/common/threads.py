"""Thread limits for small numerical work.

On a 2-core machine shared with other processes, BLAS/OpenMP/torch thread pools cost far more in
synchronisation than they gain on small matrices and tiny models (a threaded ``eigh`` of a 40 x 40 matrix, a
HistGradientBoosting fit, a 3-layer MLP step: 10-50x slower). ``limit_threads`` caps them for a block or a
function and restores them afterwards::

    with limit_threads(1):
        model.fit(X, y)

    @limit_threads(1)
    def train(...): ...
"""
from __future__ import annotations

import sys
from contextlib import ContextDecorator


class limit_threads(ContextDecorator):
    """Cap BLAS and OpenMP pools (through threadpoolctl) and, when torch is loaded, torch's intra-op threads."""

    def __init__(self, n: int = 1, *, blas: bool = True, openmp: bool = True, torch: bool = True):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"limit_threads: n got {n!r}; allowed: an integer >= 1")
        self.n, self.blas, self.openmp, self.torch = n, blas, openmp, torch
        self._stack: list = []

    def __enter__(self):
        from threadpoolctl import threadpool_limits

        apis = [api for api, on in (("blas", self.blas), ("openmp", self.openmp)) if on]
        limiter = threadpool_limits(limits=self.n, user_api=apis[0]) if len(apis) == 1 else (
            threadpool_limits(limits=self.n) if apis else None)
        torch_mod = sys.modules.get("torch") if self.torch else None
        before = torch_mod.get_num_threads() if torch_mod is not None else None
        if torch_mod is not None and before != self.n:
            torch_mod.set_num_threads(self.n)
        self._stack.append((limiter, torch_mod, before))
        return self

    def __exit__(self, *exc):
        limiter, torch_mod, before = self._stack.pop()
        if torch_mod is not None and before is not None and torch_mod.get_num_threads() != before:
            torch_mod.set_num_threads(before)
        if limiter is not None:
            limiter.restore_original_limits()
        return False
