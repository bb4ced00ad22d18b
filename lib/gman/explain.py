"""GMAN's explanations, read off its additive structure: node (sender-based), graph and subset contributions, and
the learned shape functions f(value) and distance functions rho."""
from __future__ import annotations

import numpy as np
import torch

from .model import GMAN


@torch.no_grad()
def contributions(model: GMAN, b: dict) -> dict:
    """``node`` ``[n_nodes]``: node j's outgoing contribution ``sum_c sum_{i >= j} rho_c(d(i,j)) f_c(x_j)`` (exact
    logit shares for markers in singleton subsets: they sum to the graph's contribution); ``graph`` ``[B, m]``:
    ``sum_c h_G,c``; ``subset`` ``[B, k]``: ``sum_c Phi_S,c``; ``logit`` ``[B]``."""
    model.eval()
    p = model.parts(b)
    node = torch.zeros(len(b["t"]), dtype=p["msg"].dtype).index_add_(0, b["send"], p["msg"].sum(1))
    return {"node": node.double().numpy(), "graph": p["hG"].sum(2).double().numpy(),
            "subset": p["phi"].sum(2).double().numpy(), "logit": p["logit"].double().numpy()}


def marker_importance(model: GMAN, contrib: dict) -> np.ndarray:
    """Per marker: mean over patients of |contribution - its cohort mean| of the marker's singleton subset; a marker
    inside a mixed subset gets its subset's value (GMAN is exact only at the subset level there)."""
    sub = contrib["subset"]
    dev = np.abs(sub - sub.mean(0)).mean(0)
    imp = np.zeros(model.m)
    for k, S in enumerate(model.subsets):
        imp[S] = dev[k]
    return imp


@torch.no_grad()
def shape_functions(model: GMAN, grid: np.ndarray, time_before_end: float = 0.0) -> np.ndarray:
    """f of each marker's first feature group on a value ``grid``: ``[m, len(grid)]`` (channel sum). A bivariate
    {value, time before end} group is sliced at ``time_before_end`` (a fraction of the window).

    Local workaround: ``GroupMLPs.shape_curve`` draws univariate groups only, so a bivariate group's slice is
    evaluated here through ``forward_groups`` (requested upstream: a ``fixed=`` argument for the other inputs)."""
    f, K = model.ext.f, model.ext.K
    grid = torch.as_tensor(grid, dtype=torch.float32)
    out = []
    was = f.training
    f.eval()
    for g in range(model.ext.M):
        grp = g * K
        xg = torch.zeros(len(grid), f.n_groups, f.index.shape[1])
        xg[:, grp, 0] = grid
        if f.group_sizes[grp] > 1:
            xg[:, grp, 1] = float(time_before_end)
        out.append(f.forward_groups(xg)[:, grp, :].sum(1).numpy())
    f.train(was)
    return np.array(out)


@torch.no_grad()
def distance_function(model: GMAN, dt_grid: np.ndarray, time_unit: float) -> np.ndarray:
    """rho(d(dt)) of each model graph on elapsed times ``dt_grid`` (data units): ``[M, len(grid)]``."""
    d = 1.0 / (np.asarray(dt_grid, float) / time_unit + 0.1)
    out = []
    for g in range(model.ext.M):
        _, c = model.ext.rho.shape_curve(g, grid=torch.as_tensor(d, dtype=torch.float32))
        out.append(c.sum(1))
    return np.array(out)
