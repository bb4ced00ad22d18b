"""Training (BCE with pos_weight, the symmetric magnitude penalty, clipped Adam, best-validation checkpoint) and
the metrics (AUROC, AUPRC, ECE)."""
from __future__ import annotations

import copy

import numpy as np
import torch

from lib.common import limit_threads
from lib.common.optim import Adam

from .data import Samples
from .model import GMAN, Norm, collate


def ece(y, p, n_bins: int = 10) -> float:
    """Expected calibration error: ``sum_b |B_b|/N * |mean(y in b) - mean(p in b)|`` over equal-width bins of p."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    b = np.clip((p * n_bins).astype(int), 0, n_bins - 1)
    cnt = np.bincount(b, minlength=n_bins)
    sy, sp = np.bincount(b, y, n_bins), np.bincount(b, p, n_bins)
    nz = cnt > 0
    return float(np.sum(np.abs(sy[nz] - sp[nz])) / len(y))


def metrics(y, p) -> dict:
    from sklearn.metrics import average_precision_score, roc_auc_score

    return {"auroc": float(roc_auc_score(y, p)), "auprc": float(average_precision_score(y, p)), "ece": ece(y, p)}


def magnitude_penalty(logit: torch.Tensor, cap: float = 5.0) -> torch.Tensor:
    """``0.5 * mean(softplus(|logit| - cap))``: the official code's symmetric magnitude penalty (smooth ReLU)."""
    return 0.5 * torch.nn.functional.softplus(logit.abs() - cap).mean()


def make_batches(s: Samples, norm: Norm, batch: int, rng: np.random.Generator, share: str) -> list:
    """Fixed minibatches (one shuffle, drawn once), each collated once; epochs then shuffle their order."""
    perm = rng.permutation(s.n)
    return [collate(s.take(perm[k:k + batch]), norm, share) for k in range(0, s.n, batch)]


def labels(b) -> np.ndarray:
    """The labels of a batch or of a list of batches (chunks), concatenated."""
    return np.concatenate([c["y"].numpy() for c in ([b] if isinstance(b, dict) else b)])


@torch.no_grad()
def predict(model: GMAN, b) -> np.ndarray:
    """Probabilities for a batch, or for a list of batches (chunks of one split, concatenated in order)."""
    model.eval()
    return np.concatenate([torch.sigmoid(model(c)).double().numpy() for c in ([b] if isinstance(b, dict) else b)])


def train(model: GMAN, batches: list, val, *, epochs: int, lr: float = 1e-2, wd: float = 1e-4,
          pos_weight: float | None = None, clip: float = 1.0, rng: np.random.Generator) -> dict:
    """Train ``epochs`` passes over ``batches``; keep the parameters of the epoch with the best validation AUROC.
    ``val``: one batch or a list of batches (chunks: cheaper than one large pass, which is memory-bound).
    Returns the history (loss, val AUROC per epoch, best epoch, optimizer steps)."""
    from sklearn.metrics import roc_auc_score

    with limit_threads(1):
        opt = Adam(list(model.parameters()), lr=lr, weight_decay=wd)
        pw = None if pos_weight is None else torch.tensor(float(pos_weight))
        hist = {"loss": [], "val_auroc": [], "steps": 0}
        best, best_state = -np.inf, None
        yv = labels(val)
        for ep in range(int(epochs)):
            model.train()
            tot = 0.0
            for k in rng.permutation(len(batches)):
                b = batches[k]
                opt.zero_grad()
                logit = model(b)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, b["y"], pos_weight=pw)
                loss = loss + magnitude_penalty(logit)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                opt.step()
                hist["steps"] += 1
                tot += float(loss.detach()) * b["n_samples"]
            hist["loss"].append(tot / sum(b["n_samples"] for b in batches))
            auc = float(roc_auc_score(yv, predict(model, val))) if 0 < yv.sum() < len(yv) else 0.5
            hist["val_auroc"].append(auc)
            if auc > best:
                best, best_state, hist["best_epoch"] = auc, copy.deepcopy(model.state_dict()), ep
        model.load_state_dict(best_state)
        model.eval()
        return hist


def evaluate(model: GMAN, b) -> dict:
    with limit_threads(1):
        return metrics(labels(b), predict(model, b))
