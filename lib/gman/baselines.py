"""The baselines: summary statistics (last, mean, min, max, count, slope per marker + static covariates) into logistic
regression and HistGradientBoosting, each tuned on the validation split over a small grid; GRU-D-lite on the daily
carried-forward grid; a plain-torch GIN for the cascades. The neural baselines train with GMAN's loop and budget
(same epochs, batches, clipping, best-validation epoch), their learning rate chosen on the same validation split."""
from __future__ import annotations

import itertools

import numpy as np
import torch
from torch import nn

LR_GRID = {"C": [0.01, 0.1, 1.0, 10.0]}
HGB_GRID = {"learning_rate": [0.05, 0.1], "max_leaf_nodes": [7, 31]}


def _make(name, params, seed):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "LR":
        return make_pipeline(SimpleImputer(strategy="median", add_indicator=True), StandardScaler(),
                             LogisticRegression(max_iter=2000, **params))
    return HistGradientBoostingClassifier(max_iter=100, early_stopping=False, random_state=seed, **params)


def fit_summary_baselines(Xtr, ytr, Xva, yva, Xte, seed: int = 0) -> dict:
    """``{name: (test probabilities, chosen params, val AUROC)}`` for LR and HGB, tuned on validation AUROC."""
    from sklearn.metrics import roc_auc_score

    from lib.common import limit_threads

    out = {}
    with limit_threads(1):
        for name, grid in (("LR", LR_GRID), ("HGB", HGB_GRID)):
            best = (-np.inf, None, None)
            for vals in itertools.product(*grid.values()):
                params = dict(zip(grid, vals))
                model = _make(name, params, seed).fit(Xtr, ytr)
                auc = roc_auc_score(yva, model.predict_proba(Xva)[:, 1])
                if auc > best[0]:
                    best = (auc, params, model)
            out[name] = (best[2].predict_proba(Xte)[:, 1], best[1], float(best[0]))
    return out


# --- GRU-D-lite (Che et al. 2018, input decay only) on the daily carried-forward grid ---------------------------
def _init_uniform_(module, generator):
    """torch's default init (U(-1/sqrt(fan), 1/sqrt(fan)) for GRU weights) drawn from ``generator``."""
    with torch.no_grad():
        for p in module.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1] if p.dim() > 1 else max(p.shape[0] // 3, 1))
            p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


def grid_batch(s, norm, n_steps: int, step: float = 1.0) -> dict:
    """GRU-D's inputs for the samples ``s``: per-marker standardised values carried forward on a grid of ``n_steps``
    cells (0 = the training mean before the first observation), masks, and Δt since the last observation (in the
    model's time unit). Shapes ``[N, n_steps, m]``; plus the static covariates and labels."""
    from .data import Samples, to_grid

    z = (s.value - norm.mean[s.marker]) / norm.sd[s.marker]
    zs = Samples(s.markers, s.y, s.static, s.sample, s.marker, s.t, z, s.window)
    x, mask, delta = to_grid(zs, n_steps, step)
    T = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    return {"n_samples": s.n, "x": T(x), "mask": T(mask), "delta": T(delta / norm.time_unit),
            "static": T(s.static), "y": T(s.y)}


class GRUDLite(nn.Module):
    """GRU-D's input decay without its hidden-state decay (hence "lite"), so that the recurrence is torch's
    fused ``nn.GRU``: ``gamma = exp(-max(0, w * delta + b))`` per marker, the imputed input
    ``x_hat = m x + (1 - m) (gamma x_last + (1 - gamma) x_mean)`` (``x_mean = 0`` after standardisation), the
    GRU reads ``[x_hat, m, log(1 + delta)]`` per step; the logit is a linear read-out of the last hidden state
    and the static covariates."""

    def __init__(self, n_markers: int, n_static: int = 2, hidden: int = 32, dropout: float = 0.2,
                 generator=None):
        super().__init__()
        self.w = nn.Parameter(torch.full((n_markers,), 0.1))
        self.b = nn.Parameter(torch.zeros(n_markers))
        self.gru = nn.GRU(3 * n_markers, hidden, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden + n_static, 1)
        _init_uniform_(self.gru, generator)
        _init_uniform_(self.head, generator)

    def impute(self, b: dict) -> torch.Tensor:
        gamma = torch.exp(-torch.relu(self.w * b["delta"] + self.b))
        return b["mask"] * b["x"] + (1 - b["mask"]) * gamma * b["x"]

    def forward(self, b: dict) -> torch.Tensor:
        inp = torch.cat([self.impute(b), b["mask"], torch.log1p(b["delta"])], -1)
        _, h = self.gru(inp)
        return self.head(torch.cat([self.drop(h[-1]), b["static"]], -1))[:, 0]


# --- GIN (Xu et al. 2019), plain torch (torch-geometric is not needed) -----------------------------------------
def gin_batch(s) -> dict:
    """A block-diagonal batch of cascades for the GIN: node features, undirected tree edges, graph index."""
    from .data import cascade_edges

    e = cascade_edges(s)
    und = np.concatenate([e, e[::-1]], axis=1)
    T = lambda a, dt=torch.long: torch.as_tensor(np.ascontiguousarray(a), dtype=dt)  # noqa: E731
    return {"n_samples": s.n, "x": T(s.extra["x"], torch.float32), "src": T(und[0]), "dst": T(und[1]),
            "graph": T(s.sample), "y": T(s.y, torch.float32)}


class GIN(nn.Module):
    """``h^(k+1)_v = MLP_k((1 + eps_k) h^(k)_v + sum_{u in N(v)} h^(k)_u)``, 2-layer ReLU MLPs, and the GIN
    paper's read-out: the sum over nodes of every layer's ``h^(k)`` (k = 0..K), concatenated, into a linear
    logit."""

    def __init__(self, in_dim: int, hidden: int = 32, n_layers: int = 3, dropout: float = 0.2,
                 generator=None):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(n_layers))
        dims = [in_dim] + [hidden] * n_layers
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(a, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                                nn.ReLU()) for a in dims[:-1])
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(sum(dims), 1)
        with torch.no_grad():
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    mod.weight.copy_(torch.randn(mod.weight.shape, generator=generator)
                                     * np.sqrt(2.0 / mod.in_features))
                    mod.bias.zero_()

    @staticmethod
    def pool(z: torch.Tensor, b: dict) -> torch.Tensor:
        """Sum over each graph's nodes: ``[n_graphs, width]``."""
        return torch.zeros(b["n_samples"], z.shape[1], dtype=z.dtype).index_add_(0, b["graph"], z)

    def layer(self, k: int, h: torch.Tensor, b: dict) -> torch.Tensor:
        agg = torch.zeros_like(h).index_add_(0, b["dst"], h[b["src"]])
        return self.mlps[k]((1 + self.eps[k]) * h + agg)

    def forward(self, b: dict) -> torch.Tensor:
        h = b["x"]
        reps = [self.pool(h, b)]
        for k in range(len(self.mlps)):
            h = self.layer(k, h, b)
            reps.append(self.pool(h, b))
        return self.head(self.drop(torch.cat(reps, 1)))[:, 0]


NN_LR_GRID = (1e-2, 3e-3)  # the neural baselines' learning rates, chosen on validation AUROC (same epochs as GMAN)


def fit_nn_baseline(build, train_batches, val, test, *, epochs: int, pos_weight: float, seed_fn, rng_fn,
                    lrs=NN_LR_GRID) -> dict:
    """Train ``build(generator)`` once per learning rate with GMAN's loop (clipped Adam, BCE with pos_weight, the
    magnitude penalty, best-validation epoch), keep the learning rate with the best validation AUROC and return its
    test metrics, chosen lr, validation AUROC and optimizer steps."""
    from .train import evaluate, train

    best = None
    for lr in lrs:
        model = build(seed_fn(f"lr{lr}"))
        torch.manual_seed(int(seed_fn(f"drop{lr}").initial_seed()) % (2 ** 31))
        hist = train(model, train_batches, val, epochs=epochs, lr=lr, pos_weight=pos_weight, rng=rng_fn(f"lr{lr}"))
        v = max(hist["val_auroc"])
        if best is None or v > best[0]:
            best = (v, lr, model, hist["steps"])
    return {**evaluate(best[2], test), "params": str({"lr": best[1]}), "val_auroc": best[0], "steps": best[3]}
