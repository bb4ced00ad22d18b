"""Metrics: accuracy and mean loss on D_f, D_r^adj and D_r^rem (train and val), gaps to retraining, SVC-MIA."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from .data import SUBSETS
from .models import one_thread


@one_thread
@torch.no_grad()
def three_way_metrics(model, ds) -> dict:
    """{"acc_<split>_<subset>": %, "loss_<split>_<subset>": nats} for split in train/val, subset in
    forget/adjacent/remote."""
    out = {}
    for split in ("train", "val"):
        s = getattr(ds, split)
        logits = model(s.x)
        ce = F.cross_entropy(logits, s.y, reduction="none").numpy()
        correct = (logits.argmax(1) == s.y).numpy()
        for k, sub in enumerate(SUBSETS):
            m = s.part == k
            out[f"acc_{split}_{sub}"] = 100.0 * float(correct[m].mean()) if m.any() else float("nan")
            out[f"loss_{split}_{sub}"] = float(ce[m].mean()) if m.any() else float("nan")
    return out


@torch.no_grad()
def per_sample_loss(model, x, y) -> np.ndarray:
    return F.cross_entropy(model(x), y, reduction="none").numpy()


@torch.no_grad()
def confidence_features(model, x) -> np.ndarray:
    """[prediction entropy, max-probability] per sample: the SVC-MIA features."""
    p = F.softmax(model(x), 1)
    ent = -(p * torch.log(p.clamp_min(1e-12))).sum(1)
    return torch.stack([ent, p.max(1).values], 1).numpy()


@one_thread
def svc_mia(model, ds, rng: np.random.Generator, target: str = "forget") -> float:
    """SVC membership-inference attack: an RBF SVC trained on confidence features of retain-train samples (members)
    against retain-val samples (non-members), equal numbers of each; returns the fraction of the ``target`` train
    subset the attack calls a member (the unlearning literature's 'MIA-efficacy' reads 1 - this)."""
    from sklearn.svm import SVC

    xm, _ = ds.train.retain()
    xn, _ = ds.val.retain()
    n = min(len(xm), len(xn))
    im, inn = rng.choice(len(xm), n, replace=False), rng.choice(len(xn), n, replace=False)
    feats = np.concatenate([confidence_features(model, xm[im]), confidence_features(model, xn[inn])])
    labels = np.r_[np.ones(n), np.zeros(n)]
    clf = SVC(C=3.0, gamma="auto", kernel="rbf", random_state=0).fit(feats, labels)
    xt, _ = ds.train.subset(target)
    return float(clf.predict(confidence_features(model, xt)).mean())


def metrics_frame(rows: dict) -> pd.DataFrame:
    """{method: metrics dict} -> a DataFrame (one row per method)."""
    return pd.DataFrame.from_dict(rows, orient="index")
