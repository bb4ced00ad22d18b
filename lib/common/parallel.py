"""Independent jobs over worker processes: the one pool the papers share (REPPO's seeds, GMAN's trainings,
rule_ensemble_a2c's runs).

Workers are forked from a fresh server process (``forkserver``; ``spawn`` where it is missing), never from the
kernel, which holds threads and sockets. ``preload`` names modules that the server imports once, so that each worker
does not pay the import of torch and the paper's package again. A job must be a picklable top-level function of a
picklable item, and seed itself from its item, so that its result does not depend on the number of workers.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, Sequence

from .progress import progress


def process_pool(workers: int, preload: Sequence[str] = ()):
    """A ``ProcessPoolExecutor`` of ``workers`` processes forked from a forkserver that imported ``preload``."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    if ctx.get_start_method() == "forkserver" and preload:
        ctx.set_forkserver_preload(list(preload))
    return ProcessPoolExecutor(max_workers=int(workers), mp_context=ctx)


def map_jobs(fn: Callable, items: Iterable, workers: int, *, preload: Sequence[str] = (), desc: str = "") -> Iterator:
    """Yield ``fn(item)`` for every item, in order: in this process when ``workers <= 1`` or there is one item,
    else over ``min(workers, len(items))`` worker processes (:func:`process_pool`)."""
    items = list(items)
    workers = min(int(workers or 1), len(items))
    if workers <= 1:
        for x in progress(items, desc=desc):
            yield fn(x)
        return
    with process_pool(workers, preload) as pool:
        yield from progress(pool.map(fn, items), total=len(items), desc=desc)


__all__ = ["process_pool", "map_jobs"]
