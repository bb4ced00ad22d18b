"""The paper's two-phase method (Alg. 1): Stage 1, an augmented Lagrangian that raises the forget loss while the
remote-retain loss is held at its original value; Stage 2, projected gradient descent on the adjacent-retain loss,
orthogonal to the gradients of the W2-regularised forget objective and of the remote loss.

Written from the paper's equations and the brief's description of the authors' code (reference only, no licence).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .models import Adam, Batches, FlatMLP, SGD, grad_of, one_thread


def clipped_ce(logits: torch.Tensor, y: torch.Tensor, c: float = 10.0, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy whose forward value is the true CE but whose gradient vanishes once a sample's CE exceeds c."""
    ce = F.cross_entropy(logits, y, reduction="none")
    out = torch.where(ce < c, ce, c + (ce - c).detach())
    return out.mean() if reduction == "mean" else out


def w2_sq_sorted(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Squared Wasserstein-2 distance between the empirical distributions of two equal-size 1-D samples:
    the mean squared difference of the sorted values (the monotone coupling is optimal in 1-D)."""
    if u.shape != v.shape or u.dim() != 1:
        raise ValueError(f"w2_sq_sorted needs two 1-D samples of equal size, got {tuple(u.shape)}, {tuple(v.shape)}")
    return ((torch.sort(u).values - torch.sort(v).values) ** 2).mean()


def project_out(v, b1, b2, ridge: float = 1e-8):
    """Remove from ``v`` its component in span{b1, b2}: v - a1 b1 - a2 b2 with (a1, a2) solving the 2x2 Gram system
    [[b1.b1 + r, b1.b2], [b2.b1, b2.b2 + r]] a = (v.b1, v.b2). Accepts flat tensors or lists of tensors."""
    if isinstance(v, (list, tuple)):
        flat = [torch.cat([t.reshape(-1) for t in z]) for z in (v, b1, b2)]
        out = project_out(*flat, ridge=ridge)
        parts, k = [], 0
        for t in v:
            parts.append(out[k:k + t.numel()].view_as(t))
            k += t.numel()
        return parts
    V, B1, B2 = (z.double() for z in (v, b1, b2))
    gram = torch.stack([torch.stack([B1 @ B1 + ridge, B1 @ B2]), torch.stack([B2 @ B1, B2 @ B2 + ridge])])
    a = torch.linalg.solve(gram, torch.stack([V @ B1, V @ B2]))
    return (V - a[0] * B1 - a[1] * B2).to(v.dtype)


@torch.no_grad()
def mean_loss(model: FlatMLP, x: torch.Tensor, y: torch.Tensor) -> float:
    return float(F.cross_entropy(model(x), y))


@torch.no_grad()
def accuracy(model: FlatMLP, x: torch.Tensor, y: torch.Tensor) -> float:
    return float((model(x).argmax(1) == y).float().mean())


@dataclass
class Trace:
    """Per-step records of a run (lists of equal length) plus scalars."""

    rows: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)


def augmented_lagrangian(theta: torch.Tensor, objective_and_residual, opt, *, steps: int, mu: float = 10.0,
                         lam0: float = 0.0, callback=None) -> float:
    """Minimise f(theta) s.t. h(theta) = 0 by the augmented Lagrangian with one primal step per dual update:
    a step of ``opt`` on f + lam h + mu/2 h^2, then lam <- lam + mu h (h at the pre-step point, as in the paper).
    ``objective_and_residual(t)`` returns the tensors (f, h) for step t (minibatch estimates are fine);
    ``callback(t, h, lam)`` runs after each step. Returns the final multiplier."""
    lam = float(lam0)
    for t in range(steps):
        f, h = objective_and_residual(t)
        loss = f + lam * h + 0.5 * mu * h ** 2
        opt.step(torch.autograd.grad(loss, theta)[0])
        h_val = float(h.detach())
        lam += mu * h_val
        if callback is not None:
            callback(t, h_val, lam)
    return lam


@one_thread
def stage1_augmented_lagrangian(model: FlatMLP, rem, forget, *, lr: float, steps: int, generator: torch.Generator,
                                mu: float = 10.0, gamma: float = 1.0, c: float = 10.0, lam0: float = 0.0,
                                rem_batch: int = 128, forget_batch: int = 16, record: bool = True):
    """Stage 1: min_theta -gamma * L~_f(theta) s.t. h(theta) = L_rem(theta) - L_rem(theta_0) = 0, by the augmented
    Lagrangian (:func:`augmented_lagrangian` with Adam). Per step, on a remote batch B_r and a cycled forget batch
    B_f: h = L_{B_r}(theta) - L_rem(theta_0), loss = -gamma L~_{B_f} + lam h + mu/2 h^2, Adam step, lam += mu h.
    ``rem``/``forget`` are (x, y) pairs of the *training* sets. D_r^adj is not used. Returns (model, Trace)."""
    xr, yr = rem
    xf, yf = forget
    pinned = mean_loss(model, xr, yr)  # L_rem(theta_0) over the whole remote training set
    lf0 = mean_loss(model, xf, yf)
    rb, fb = Batches(xr, yr, rem_batch, generator), Batches(xf, yf, forget_batch, generator)
    trace = Trace(info={"pinned": pinned, "forget_loss0": lf0})

    def objective_and_residual(t):
        (xb, yb), (xfb, yfb) = rb.next(), fb.next()
        return -gamma * clipped_ce(model(xfb), yfb, c), F.cross_entropy(model(xb), yb) - pinned

    def record_step(t, h, lam):
        trace.rows.append({"step": t + 1, "h_batch": h, "lambda": lam, "residual": mean_loss(model, xr, yr) - pinned,
                           "forget_loss": mean_loss(model, xf, yf)})

    lam = augmented_lagrangian(model.theta, objective_and_residual, Adam(model.theta, lr), steps=steps, mu=mu,
                               lam0=lam0, callback=record_step if record else None)
    trace.info.update(residual=mean_loss(model, xr, yr) - pinned, forget_loss=mean_loss(model, xf, yf), lam=lam)
    return model, trace


def _forget_objective_grad(model, ref_model, batches: Batches, alpha: float, limit: int):
    """Sum over <= ``limit`` forget batches of grad of (1-alpha) mean_j u_j + alpha W2^2(P_u(theta), P_u(ref)),
    with u_j = -CE_j (the per-sample negative losses); W2 is taken within each batch. One forward pass over the
    concatenated batches (the sum of per-batch objectives has the same gradient as a loop over batches)."""
    x, y, sizes = batches.epoch_cat(limit)
    u = -F.cross_entropy(model(x), y, reduction="none")
    with torch.no_grad():
        u_ref = -F.cross_entropy(ref_model(x), y, reduction="none")
    obj = 0.0
    for ub, rb in zip(torch.split(u, sizes), torch.split(u_ref, sizes)):
        obj = obj + (1 - alpha) * ub.mean() + (alpha * w2_sq_sorted(ub, rb) if alpha > 0 else 0.0)
    return grad_of(obj, model)


def _remote_grad(model, batches: Batches, limit: int):
    """Sum over <= ``limit`` remote batches of grad(-mean CE of the batch), in one forward pass."""
    x, y, sizes = batches.epoch_cat(limit)
    ce = F.cross_entropy(model(x), y, reduction="none")
    weights = torch.cat([torch.full((s,), 1.0 / s) for s in sizes])
    return grad_of(-(weights * ce).sum(), model)


@one_thread
def stage2_wpgd(model: FlatMLP, adj, forget, rem, *, lr: float, epochs: int, generator: torch.Generator,
                ref_model: FlatMLP | None = None, alpha: float = 0.5, momentum: float = 0.9, batch_limit: int = 10,
                adj_batch: int = 128, forget_batch: int = 128, rem_batch: int = 512, record_on=None):
    """Stage 2, W2-guided projected gradient descent. ``ref_model`` (default: a frozen copy of ``model``) is the
    post-Stage-1 reference theta-bar. Per adjacent batch: v <- m v + grad L_{B_a}; project v off span{g_f, g_r}
    (g_f: gradient of the W2-regularised forget objective, g_r: gradient of -L_rem, each summed over <= batch_limit
    batches); the projected v is both the SGD direction and the new velocity.

    ``record_on``: optional dict name -> (x, y) evaluated (accuracy, mean loss) after every step."""
    ref = (ref_model or model).copy().requires_grad_(False)
    ab = Batches(*adj, adj_batch, generator)
    fb, rb = Batches(*forget, forget_batch, generator), Batches(*rem, rem_batch, generator)
    opt, v, trace, step = SGD(model.theta, lr), torch.zeros_like(model.theta), Trace(), 0
    for _ in range(epochs):
        for xa, ya in ab.epoch():
            g_a = grad_of(F.cross_entropy(model(xa), ya), model)
            g_f = _forget_objective_grad(model, ref, fb, alpha, batch_limit)
            g_r = _remote_grad(model, rb, batch_limit)
            v = project_out(momentum * v + g_a, g_f, g_r)
            opt.step(v)
            step += 1
            if record_on:
                row = {"step": step}
                with torch.no_grad():
                    for name, (x, y) in record_on.items():
                        logits = model(x)
                        row[f"acc_{name}"] = float((logits.argmax(1) == y).float().mean())
                        row[f"loss_{name}"] = float(F.cross_entropy(logits, y))
                trace.rows.append(row)
    with torch.no_grad():
        xf, yf = forget
        trace.info["w2_to_ref"] = float(w2_sq_sorted(-F.cross_entropy(model(xf), yf, reduction="none"),
                                                     -F.cross_entropy(ref(xf), yf, reduction="none")))
    return model, trace


def two_stage(model: FlatMLP, ds, *, lr1: float, steps1: int, lr2: float, epochs2: int, generator, alpha=0.5,
              stage1_kw=None, stage2_kw=None):
    """The whole method on a :class:`~.data.Dataset3`: Stage 1 then Stage 2 (reference = the Stage-1 model)."""
    tr = ds.train
    m1, t1 = stage1_augmented_lagrangian(model, tr.subset("remote"), tr.subset("forget"), lr=lr1, steps=steps1,
                                         generator=generator, **(stage1_kw or {}))
    ref = m1.copy()
    m2, t2 = stage2_wpgd(m1, tr.subset("adjacent"), tr.subset("forget"), tr.subset("remote"), lr=lr2,
                         epochs=epochs2, generator=generator, ref_model=ref, alpha=alpha, **(stage2_kw or {}))
    return m2, (t1, t2)


__all__ = ["clipped_ce", "w2_sq_sorted", "project_out", "augmented_lagrangian", "stage1_augmented_lagrangian", "stage2_wpgd", "two_stage",
           "accuracy", "mean_loss", "Trace"]
