"""What every solver returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SolveResult:
    """The best labelling a solver found, its energy, and per-iteration traces.

    ``trace[t]`` is the energy of the labelling decoded at iteration t, ``best_trace[t]`` the lowest energy seen up
    to t, ``times[t]`` the wall-clock seconds since the solver started (set-up included).
    """

    method: str
    x: np.ndarray
    energy: float
    trace: np.ndarray = field(default_factory=lambda: np.zeros(0))
    best_trace: np.ndarray = field(default_factory=lambda: np.zeros(0))
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    info: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return float(self.times[-1]) if len(self.times) else float("nan")


class BestTracker:
    """Keeps the lowest-energy labelling seen and the traces."""

    def __init__(self, mrf, t0: float, time_scale: float = 1.0):
        import time

        self.mrf, self.t0, self._time, self.time_scale = mrf, t0, time.perf_counter, time_scale
        self.best_x, self.best_e = None, np.inf
        self.trace, self.best, self.times = [], [], []

    def offer(self, x: np.ndarray) -> float:
        e = self.mrf.energy(x)
        if e < self.best_e:
            self.best_e, self.best_x = e, x.copy()
        return e

    def step(self, *labellings: np.ndarray) -> None:
        """Record one iteration: every labelling offered; the trace keeps the first one's energy."""
        es = [self.offer(x) for x in labellings]
        self.trace.append(es[0])
        self.best.append(self.best_e)
        self.times.append((self._time() - self.t0) * self.time_scale)

    def result(self, method: str, **info) -> SolveResult:
        return SolveResult(method, self.best_x, float(self.best_e), np.array(self.trace), np.array(self.best),
                           np.array(self.times), info)
