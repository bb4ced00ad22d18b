"""Thread limits for small numerical work.

On a 2-core machine shared with other processes, BLAS/OpenMP/torch thread pools cost far more in
synchronisation than they gain on small matrices and tiny models (a threaded ``eigh`` of a 40 x 40 matrix, a
HistGradientBoosting fit, a 3-layer MLP step: 10-50x slower). ``limit_threads`` caps them for a block or a
function and restores them afterwards::

    with limit_threads(1):
        model.fit(X, y)

    @limit_threads(1)
    def train(...): ...

torch is capped whether it is loaded before the block or first imported inside it (a function that imports torch
lazily), and restored to its own default on the way out.
"""
from __future__ import annotations

import importlib.abc
import sys
from contextlib import ContextDecorator


class _CapTorchOnImport(importlib.abc.MetaPathFinder):
    """On sys.meta_path while a block runs without torch loaded: when torch is imported, caps its intra-op threads
    right after the import and remembers torch's own default (``before``) for the restore."""

    def __init__(self, n: int):
        self.n, self.before = n, None

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.before is not None:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self or not hasattr(finder, "find_spec") else finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_cap(module):
            try:
                exec_module(module)
            finally:
                del loader.exec_module  # the instance attribute set below; the class's method is back
            self.before = module.get_num_threads()
            module.set_num_threads(self.n)

        loader.exec_module = exec_and_cap
        return spec


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
        hook = None
        if self.torch and torch_mod is None:  # torch may be imported inside the block: cap it then
            hook = _CapTorchOnImport(self.n)
            sys.meta_path.insert(0, hook)
        self._stack.append((limiter, torch_mod, before, hook))
        return self

    def __exit__(self, *exc):
        limiter, torch_mod, before, hook = self._stack.pop()
        if hook is not None:
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
            torch_mod, before = sys.modules.get("torch"), hook.before
        if torch_mod is not None and before is not None and torch_mod.get_num_threads() != before:
            torch_mod.set_num_threads(before)
        if limiter is not None:
            limiter.restore_original_limits()
        return False
