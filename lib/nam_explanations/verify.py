"""Full-network sufficiency verifiers: the additive oracle and a generic whole-NAM MILP (``scipy.optimize.milp``).

A subset ``S`` is sufficient for ``x`` (predicted class ``ŷ``, sign ``s = +1`` for ``ŷ = 1`` and ``-1`` for ``ŷ = 0``)
iff ``min { s·f(x') : x'_S = x_S, x'_i in D_i(x) for i not in S } > 0``.

* ``additive``: the minimum is ``s·β + Σ_{i in S} s·h_i(x_i) + Σ_{i not in S} m_i`` with the exact component minima
  ``m_i`` (exact for a NAM; the oracle of the tests).
* ``milp``: a generic verifier that does not use additivity. It encodes the whole network (every free component's
  two ReLU layers with big-M constraints and IBP pre-activation bounds; a stable neuron needs no binary, a fixed
  feature is a constant) and asks HiGHS for a counterexample ``s·f <= 0`` (or minimises ``s·f``). Pre-activation
  bounds are exact per neuron (``bounds="exact"``: the one-dimensional input of each component split at the
  first layer's switches, as a verifier with input splitting gets them) or IBP (``bounds="ibp"``). It answers "sufficient" only when HiGHS's proven dual
  bound is positive; a query that hits the time cap counts as a time-out (and "not proven sufficient").
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .model import NumpyNAM
from .univariate import exact_layer_bounds, ibp_layer_bounds


STABLE_TOL = 1e-6
COUNTEREXAMPLE_TOL = 1e-6


@dataclass
class MilpStats:
    queries: int = 0
    timeouts: int = 0
    spurious: int = 0  # counterexamples HiGHS reported that the network does not confirm (then re-solved)
    seconds: float = 0.0
    binaries: list = field(default_factory=list)


@dataclass
class _Block:
    """One free component's MILP rows: variables ``[z, y1 (H1), y2 (H2), d1 (u1), d2 (u2)]``."""

    n_var: int
    lb: np.ndarray
    ub: np.ndarray
    integrality: np.ndarray
    rows: list  # (cols, coefs, lo, hi) per constraint
    obj: np.ndarray  # objective coefficients of this block's variables (s · W3 on y2)
    const: float  # s · b3


def _component_block(nam: NumpyNAM, i: int, a: float, b: float, s: float, bounds: str = "exact") -> _Block:
    H1, H2 = nam.W2[i].shape
    l1, u1, l2, u2 = (exact_layer_bounds if bounds == "exact" else ibp_layer_bounds)(nam, i, a, b)
    # a neuron whose range crosses zero by less than STABLE_TOL is encoded as stable (inactive if u <= tol,
    # active if l >= -tol): big-M rows with coefficients ~1e-8 make HiGHS return wrong optima (seen on a
    # breast-cancer component: MILP optimum 0.52, LP relaxation and the exact minimum -1.79); the error this
    # introduces is at most tol · |weights| per neuron
    tol = STABLE_TOL
    u1, u2 = np.where(u1 <= tol, np.minimum(u1, 0.0), u1), np.where(u2 <= tol, np.minimum(u2, 0.0), u2)
    l1, l2 = np.where((l1 >= -tol) & (u1 > 0), np.maximum(l1, 0.0), l1), np.where((l2 >= -tol) & (u2 > 0),
                                                                                   np.maximum(l2, 0.0), l2)
    unst1 = np.flatnonzero((l1 < 0) & (u1 > 0))
    unst2 = np.flatnonzero((l2 < 0) & (u2 > 0))
    iz, iy1, iy2 = 0, 1, 1 + H1
    id1 = 1 + H1 + H2
    id2 = id1 + unst1.size
    n_var = id2 + unst2.size
    lb, ub = np.zeros(n_var), np.zeros(n_var)
    lb[iz], ub[iz] = a, b
    ub[iy1:iy1 + H1] = np.maximum(u1, 0.0)
    ub[iy2:iy2 + H2] = np.maximum(u2, 0.0)
    ub[id1:] = 1.0
    integ = np.zeros(n_var)
    integ[id1:] = 1
    rows = []
    d1 = {j: id1 + k for k, j in enumerate(unst1)}
    d2 = {j: id2 + k for k, j in enumerate(unst2)}
    # layer 1: pre = w z + b1
    for j in range(H1):
        w, bj = nam.W1[i, j], nam.b1[i, j]
        y = iy1 + j
        if u1[j] <= 0:
            continue  # y fixed at 0 by its bounds
        if l1[j] >= 0:
            rows.append(([y, iz], [1.0, -w], bj, bj))
            continue
        rows.append(([y, iz], [1.0, -w], bj, np.inf))  # y >= pre
        rows.append(([y, iz, d1[j]], [1.0, -w, -l1[j]], -np.inf, bj - l1[j]))  # y <= pre - l (1 - d)
        rows.append(([y, d1[j]], [1.0, -u1[j]], -np.inf, 0.0))  # y <= u d
    # layer 2: pre = y1 @ W2[:, k] + b2
    W2 = nam.W2[i]
    y1_cols = list(range(iy1, iy1 + H1))
    for k in range(H2):
        y = iy2 + k
        bk = nam.b2[i, k]
        if u2[k] <= 0:
            continue
        coef = list(-W2[:, k])
        if l2[k] >= 0:
            rows.append(([y] + y1_cols, [1.0] + coef, bk, bk))
            continue
        rows.append(([y] + y1_cols, [1.0] + coef, bk, np.inf))
        rows.append(([y] + y1_cols + [d2[k]], [1.0] + coef + [-l2[k]], -np.inf, bk - l2[k]))
        rows.append(([y, d2[k]], [1.0, -u2[k]], -np.inf, 0.0))
    obj = np.zeros(n_var)
    obj[iy2:iy2 + H2] = s * nam.W3[i]
    return _Block(n_var=n_var, lb=lb, ub=ub, integrality=integ, rows=rows, obj=obj, const=float(s * nam.b3[i]))


class MilpVerifier:
    """The generic whole-NAM verifier for one point ``x`` with box ``[A, B]`` (per-feature domains) and sign ``s``.

    The per-component encodings (IBP bounds, big-M rows) are built once per point and reused by every query, as a
    verifier with cached bounds would; each query assembles the free components' blocks and calls HiGHS.
    """

    def __init__(self, nam: NumpyNAM, x: np.ndarray, A: np.ndarray, B: np.ndarray, s: float,
                 time_limit: float = 2.0, feasibility: bool = True, bounds: str = "exact"):
        if bounds not in ("exact", "ibp"):
            raise ValueError(f"MilpVerifier: bounds {bounds!r}; allowed: 'exact', 'ibp'")
        self.feasibility = bool(feasibility)
        self.nam, self.x, self.s, self.time_limit = nam, np.asarray(x, float), float(s), float(time_limit)
        self.fixed_val = s * nam.components(self.x[None])[0]
        self.blocks = [_component_block(nam, i, float(A[i]), float(B[i]), s, bounds) for i in range(nam.n_features)]
        self.stats = MilpStats()

    def min_logit(self, S, feasibility: bool = False) -> tuple[float, bool]:
        """``(proven lower bound on min s·f with x_S fixed, timed_out)``.

        ``feasibility=True`` asks the verifier's usual question instead, "is there a counterexample ``s·f <= 0``?"
        (zero objective, the row ``s·f <= 0``): it returns ``+inf`` when HiGHS proves none exists and the value of
        the counterexample it found otherwise; HiGHS stops at the first counterexample.
        """
        from scipy.optimize import LinearConstraint, milp
        from scipy.sparse import coo_matrix

        n = self.nam.n_features
        fixed = np.zeros(n, bool)
        fixed[list(S)] = True
        const = self.s * self.nam.beta + float(self.fixed_val[fixed].sum())
        free = np.flatnonzero(~fixed)
        t0 = time.perf_counter()
        if free.size == 0:
            self.stats.queries += 1
            self.stats.seconds += time.perf_counter() - t0
            return const, False
        offs, c, lbs, ubs, integ, z_cols = 0, [], [], [], [], []
        r_i, r_j, r_v, r_lo, r_hi = [], [], [], [], []
        n_rows = 0
        for i in free:
            blk = self.blocks[i]
            for cols, coefs, lo, hi in blk.rows:
                r_i.extend([n_rows] * len(cols))
                r_j.extend(offs + np.asarray(cols))
                r_v.extend(coefs)
                r_lo.append(lo)
                r_hi.append(hi)
                n_rows += 1
            c.append(blk.obj)
            lbs.append(blk.lb)
            ubs.append(blk.ub)
            integ.append(blk.integrality)
            const += blk.const
            z_cols.append(offs)  # each block's first variable is its input z
            offs += blk.n_var
        c, integ = np.concatenate(c), np.concatenate(integ)
        if feasibility:
            r_i.extend([n_rows] * offs)
            r_j.extend(range(offs))
            r_v.extend(c)
            r_lo.append(-np.inf)
            r_hi.append(-const)
            n_rows += 1
            obj_c = c
            c = np.zeros_like(c)
        cons = []
        if n_rows:
            A = coo_matrix((r_v, (r_i, r_j)), shape=(n_rows, offs)).tocsr()
            cons = [LinearConstraint(A, np.asarray(r_lo), np.asarray(r_hi))]
        from scipy.optimize import Bounds

        res = milp(c, integrality=integ, bounds=Bounds(np.concatenate(lbs), np.concatenate(ubs)), constraints=cons,
                   options={"time_limit": self.time_limit, "disp": False, "mip_rel_gap": 1e-7})
        self.stats.queries += 1
        self.stats.binaries.append(int(integ.sum()))
        self.stats.seconds += time.perf_counter() - t0
        timed_out = res.status == 1
        self.stats.timeouts += int(timed_out)
        if feasibility:
            if res.status == 2:  # infeasible: no counterexample
                return np.inf, False
            if res.x is None:
                return -np.inf, timed_out
            # validate the counterexample on the network itself, as verifiers do: HiGHS accepts rows violated by
            # its feasibility tolerance, so near the decision boundary a "counterexample" can be spurious
            xc = self.x.copy()
            xc[free] = res.x[np.asarray(z_cols)]
            value = float(self.s * self.nam.logit(xc[None])[0])
            if value <= COUNTEREXAMPLE_TOL or timed_out:
                # HiGHS puts the counterexample on the row's boundary s·f = 0 (within 1e-9); accepting values up to
                # the tolerance avoids re-solving those (a true minimum in (0, 1e-6] would be misjudged)
                return min(value, 0.0), timed_out
            self.stats.spurious += 1
            self.stats.queries -= 1  # the same query, answered again by minimising s·f (HiGHS's dual bound)
            return self.min_logit(S, feasibility=False)
        if res.status not in (0, 1):
            raise RuntimeError(f"MILP verifier: HiGHS returned status {res.status} ({res.message})")
        bound = getattr(res, "mip_dual_bound", None)
        if bound is None or not np.isfinite(bound):
            bound = res.fun if (res.status == 0 and res.fun is not None) else -np.inf
        return float(const + bound), timed_out

    def sufficient(self, S) -> bool:
        value, timed_out = self.min_logit(S, feasibility=self.feasibility)
        return (not timed_out) and value > 1e-9


class AdditiveVerifier:
    """The exact additive oracle for one point: sufficient iff ``B + Σ_{i in S} g_i > 0``; counts its queries."""

    def __init__(self, B: float, g: np.ndarray):
        self.B, self.g, self.queries = float(B), np.asarray(g, float), 0

    def margin(self, S) -> float:
        return self.B + float(self.g[list(S)].sum())

    def sufficient(self, S) -> bool:
        self.queries += 1
        return self.margin(S) > 0
