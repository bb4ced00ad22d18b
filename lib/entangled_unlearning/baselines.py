"""Baselines, each run for the same number of optimizer steps from the pretrained model.

Reimplemented from their papers' definitions and the brief's description of the authors' versions:
FT (fine-tune on the retain set), GA (gradient ascent on D_f), l1-sparse (FT with a linearly decaying l1 penalty,
Jia et al. 2023), SCRUB (Kurmanji et al. 2023: max-steps on D_f, min-steps on D_r against the original teacher),
NegGrad+ (Kurmanji et al. 2023: descent on D_r plus ascent on D_f). Retraining from scratch is
:func:`lib.entangled_unlearning.models.pretrain` with ``retain_only=True``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .models import Adam, Batches, FlatMLP, SGD, grad_of, one_thread


@one_thread
def finetune(model: FlatMLP, ds, *, lr: float, steps: int, generator, batch_size: int = 64) -> FlatMLP:
    """FT: Adam on the mean CE of D_r = D_r^rem + D_r^adj."""
    opt, rb = Adam(model.theta, lr), Batches(*ds.train.retain(), batch_size, generator)
    for _ in range(steps):
        xb, yb = rb.next()
        opt.step(grad_of(F.cross_entropy(model(xb), yb), model))
    return model


@one_thread
def gradient_ascent(model: FlatMLP, ds, *, lr: float, steps: int, generator, batch_size: int = 64,
                    stop_at: float | None = None, check_every: int = 5) -> FlatMLP:
    """GA: SGD ascent on the mean CE of D_f. ``stop_at``: early stopping at the forgetting target, as GA is used in
    practice: every ``check_every`` steps (and before the first) the D_f train accuracy (%) is measured, and the run
    stops as soon as it is <= ``stop_at`` (so "matched forgetting" does not mean a model driven far past it)."""
    xf, yf = ds.train.subset("forget")
    opt, fb = SGD(model.theta, lr), Batches(xf, yf, batch_size, generator)
    for t in range(steps):
        if stop_at is not None and t % check_every == 0:
            with torch.no_grad():
                if 100.0 * float((model(xf).argmax(1) == yf).float().mean()) <= stop_at + 1e-9:
                    break
        xb, yb = fb.next()
        opt.step(grad_of(-F.cross_entropy(model(xb), yb), model))
    return model


@one_thread
def l1_sparse(model: FlatMLP, ds, *, lr: float, steps: int, generator, batch_size: int = 64,
              l1: float = 5e-4, momentum: float = 0.9) -> FlatMLP:
    """l1-sparse: SGD (momentum 0.9) on CE(D_r) + a_t ||theta||_1 with a_t decaying linearly from ``l1`` to 0."""
    opt, rb = SGD(model.theta, lr, momentum), Batches(*ds.train.retain(), batch_size, generator)
    for t in range(steps):
        xb, yb = rb.next()
        a_t = l1 * (1 - t / steps)
        opt.step(grad_of(F.cross_entropy(model(xb), yb) + a_t * model.theta.abs().sum(), model))
    return model


def _kl_teacher_student(student_logits, teacher_logits):
    """KL(teacher || student), batch mean (PyTorch's KLDivLoss(log q_student, p_teacher))."""
    return F.kl_div(F.log_softmax(student_logits, 1), F.softmax(teacher_logits, 1), reduction="batchmean")


@one_thread
def scrub(model: FlatMLP, ds, *, lr: float, steps: int, generator, batch_size: int = 64, alpha: float = 0.1,
          gamma: float = 0.9, max_fraction: float = 0.5) -> FlatMLP:
    """SCRUB with Adam: epochs alternate a max-pass over D_f (maximise the KL to the original teacher) and a min-pass
    over D_r (alpha KL + gamma CE); max-passes only in the first ``max_fraction`` of the epochs (the authors: 10
    epochs, 5 with max-steps). The number of epochs is set so that the total number of steps is ~``steps``."""
    teacher = model.copy().requires_grad_(False)
    opt = Adam(model.theta, lr)
    fb, rb = Batches(*ds.train.subset("forget"), batch_size, generator), Batches(*ds.train.retain(), batch_size,
                                                                               generator)
    epochs = max(1, round(steps / (len(fb) * max_fraction + len(rb))))
    max_epochs = math.ceil(max_fraction * epochs)
    for e in range(epochs):
        if e < max_epochs:
            for xb, _ in fb.epoch():
                with torch.no_grad():
                    t_logits = teacher(xb)
                opt.step(grad_of(-_kl_teacher_student(model(xb), t_logits), model))
        for xb, yb in rb.epoch():
            with torch.no_grad():
                t_logits = teacher(xb)
            s_logits = model(xb)
            loss = alpha * _kl_teacher_student(s_logits, t_logits) + gamma * F.cross_entropy(s_logits, yb)
            opt.step(grad_of(loss, model))
    return model


@one_thread
def neggrad_plus(model: FlatMLP, ds, *, lr: float, steps: int, generator, batch_size: int = 64,
                 beta: float = 0.9, momentum: float = 0.9) -> FlatMLP:
    """NegGrad+: SGD (momentum 0.9) on beta CE(B_r) - (1 - beta) CE(B_f)."""
    opt = SGD(model.theta, lr, momentum)
    fb, rb = Batches(*ds.train.subset("forget"), batch_size, generator), Batches(*ds.train.retain(), batch_size,
                                                                               generator)
    for _ in range(steps):
        (xr, yr), (xf, yf) = rb.next(), fb.next()
        loss = beta * F.cross_entropy(model(xr), yr) - (1 - beta) * F.cross_entropy(model(xf), yf)
        opt.step(grad_of(loss, model))
    return model


BASELINES = {"FT": finetune, "GA": gradient_ascent, "l1-sparse": l1_sparse, "SCRUB": scrub,
             "NegGrad+": neggrad_plus}
