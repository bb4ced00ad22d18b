"""Task B: hyperparameter optimisation with a temperature context (torch; autograd for every second derivative).

Upper variable x in R^n: one weight logit per training point, s_i = sigmoid(x_i), initialised at 2. Context
xi ~ U[0.5, 2] (a softmax temperature), mapped to [-1, 1] for the basis. Lower level, for every xi,

    Y*(x, xi) = argmin_Y  sum_i s(x_i) CE(softmax(a_i^T Y / xi), b_i) / n + (lambda / 2) ||Y||^2,

a linear classifier Y (features + bias, 10 classes), strongly convex and analytic in (Y, xi). Upper level: the
validation cross-entropy at the same temperature. Reduced: Y(xi) = sum_k W_k Phi_k(xi) (Chebyshev, or one-hot
over N temperature intervals = STOCBIO[N]). One StocBiO run advances many lanes at once (bases padded to the
largest N, outer step sizes, replicas with their own data); lanes never interact (every loss is a sum over lanes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .bases import features

XI_LO, XI_HI = 0.5, 2.0


def xi_to_unit(xi):
    return (np.asarray(xi, dtype=float) - (XI_LO + XI_HI) / 2) / ((XI_HI - XI_LO) / 2)


@dataclass
class HPOLane:
    kind: str
    N: int
    alpha: float
    rep: int = 0

    @property
    def name(self) -> str:
        return f"{self.kind}[{self.N}]"


class LaneProblem:
    """The lower and upper losses of every lane, as torch functions of (x, W) with x (L, n), W (L, Nmax, d, C)."""

    def __init__(self, datas: list, lanes: list, lam: float = 1e-2, dtype=torch.float32):
        n = {len(d.b_train) for d in datas}
        if len(n) != 1:
            raise ValueError("LaneProblem: replicas must have the same number of training rows")
        self.lanes, self.lam, self.dtype = lanes, lam, dtype
        self.Nmax = max(ln.N for ln in lanes)
        rep = [ln.rep for ln in lanes]
        self.A = torch.tensor(np.stack([datas[r].A_train for r in rep]), dtype=dtype)  # (L, n, d)
        self.b = torch.tensor(np.stack([datas[r].b_train for r in rep]), dtype=torch.long)  # (L, n)
        self.Av = torch.tensor(np.stack([datas[r].A_val for r in rep]), dtype=dtype)
        self.bv = torch.tensor(np.stack([datas[r].b_val for r in rep]), dtype=torch.long)
        self.n, self.d = self.A.shape[1], self.A.shape[2]
        self.C = 10
        # lambda_max(A^T A / n) per lane: the curvature bound of the CE part (Hessian of CE in the logits <= I/2)
        self.lam_A = torch.linalg.eigvalsh(self.A.transpose(1, 2) @ self.A / self.n)[:, -1]

    def phi(self, xi: np.ndarray) -> torch.Tensor:
        """(L, B, Nmax) features of each lane's basis at the shared temperatures xi (B,)."""
        u = xi_to_unit(xi)
        out = np.zeros((len(self.lanes), len(xi), self.Nmax))
        cache = {}
        for i, ln in enumerate(self.lanes):
            key = (ln.kind, ln.N)
            if key not in cache:
                cache[key] = features(ln.kind, ln.N, u)
            out[i, :, :ln.N] = cache[key]
        return torch.tensor(out, dtype=self.dtype)

    @staticmethod
    def _logits_w(A, W, P):
        """sum_k P[l, b, k] A_l W_lk: (L, B, n, C), with A W_k for every k in one batched matmul."""
        L, N, d, C = W.shape
        Z = torch.bmm(A, W.permute(0, 2, 1, 3).reshape(L, d, N * C)).reshape(L, -1, N, C)  # (L, n, N, C)
        return torch.einsum("lbk,lnkc->lbnc", P, Z)

    @staticmethod
    def _ce(logits, b):
        """Cross-entropy of (L, B, n, C) logits against labels b (L, n): logsumexp minus the label's logit."""
        idx = b[:, None, :, None].expand(-1, logits.shape[1], -1, 1)
        return torch.logsumexp(logits, dim=-1) - torch.gather(logits, -1, idx).squeeze(-1)

    def Y(self, W, P):
        return torch.einsum("lbk,lkdc->lbdc", P, W)  # (L, B, d, C)

    def lower(self, x, W, P, xi):
        """Sum over lanes of E_xi[ sum_i s_i CE_i / n + lam/2 ||Y(xi)||^2 ] on the temperatures xi."""
        Y = self.Y(W, P)
        T = torch.tensor(xi, dtype=self.dtype)
        logits = self._logits_w(self.A, W, P / T[None, :, None])
        ce = self._ce(logits, self.b)
        s = torch.sigmoid(x)[:, None, :]
        return ((s * ce).sum(-1) / self.n).mean(-1).sum() + 0.5 * self.lam * (Y ** 2).sum((2, 3)).mean(-1).sum()

    def upper(self, W, P, xi, A=None, b=None):
        """Validation CE (or CE on rows A, labels b) of every lane at each temperature: (L, B)."""
        A = self.Av if A is None else A
        b = self.bv if b is None else b
        T = torch.tensor(xi, dtype=self.dtype)
        logits = self._logits_w(A, W, P / T[None, :, None])
        ce = self._ce(logits, b)
        return ce.mean(-1)  # (L, B)

    def curvature(self, x, P, xi):
        """Per lane, an upper bound on lambda_max of the reduced lower level's Hessian on this minibatch:
        lambda_max(mean_b Phi_b Phi_b^T (max_i s_i lam_A / (2 xi_b^2) + lam))."""
        smax = torch.sigmoid(x).max(-1).values  # (L,)
        T = torch.tensor(xi, dtype=self.dtype)
        wgt = smax[:, None] * self.lam_A[:, None] / (2 * T[None, :] ** 2) + self.lam  # (L, B)
        M = torch.einsum("lb,lbk,lbm->lkm", wgt, P, P) / len(xi)
        return torch.linalg.eigvalsh(M)[:, -1]


def run_hpo(datas: list, lanes: list, *, T: int, D: int, Q: int, B: int, rng: np.random.Generator,
            eval_every: int = 5, xi_grid=None, lam: float = 1e-2, x_init: float = 2.0) -> dict:
    """StocBiO on task B for every lane; returns the validation-loss curves on ``xi_grid``, the final x and W."""
    from lib.common.optim import SGD

    prob = LaneProblem(datas, lanes, lam=lam)
    L = len(lanes)
    xi_grid = np.linspace(XI_LO, XI_HI, 7) if xi_grid is None else np.asarray(xi_grid, dtype=float)
    P_grid = prob.phi(xi_grid)
    x = torch.full((L, prob.n), float(x_init), dtype=prob.dtype, requires_grad=True)
    W = torch.zeros((L, prob.Nmax, prob.d, prob.C), dtype=prob.dtype)
    alpha = torch.tensor([ln.alpha for ln in lanes], dtype=prob.dtype)
    opt = SGD([x], lr=1.0)  # the per-lane step sizes are folded into the gradient
    draws = rng.uniform(XI_LO, XI_HI, size=(T, D + Q + 2, B))
    steps, val_curves = [], []

    def evaluate(t):
        with torch.no_grad():
            steps.append(t)
            val_curves.append(prob.upper(W, P_grid, xi_grid).numpy())

    evaluate(0)
    for t in range(T):
        xd = x.detach()
        for k in range(D):
            xi = draws[t, k]
            P = prob.phi(xi)
            Wv = W.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(prob.lower(xd, Wv, P, xi), Wv)
            beta = 1.0 / prob.curvature(xd, P, xi)
            W = (Wv - beta[:, None, None, None] * g).detach()
        # grad_W f on its own minibatch
        xi = draws[t, D]
        P = prob.phi(xi)
        Wv = W.detach().requires_grad_(True)
        (p,) = torch.autograd.grad(prob.upper(Wv, P, xi).mean(-1).sum(), Wv)
        # Neumann series with Hessian-vector products, one minibatch per term
        etas, v = [], p.clone()
        mats = []
        for q in range(Q):
            xi = draws[t, D + 1 + q]
            P = prob.phi(xi)
            mats.append((P, xi))
            etas.append(prob.curvature(xd, P, xi))
        eta = 1.0 / torch.stack(etas).max(0).values if etas else torch.ones(L, dtype=prob.dtype)
        for P, xi in mats:
            Wv = W.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(prob.lower(xd, Wv, P, xi), Wv, create_graph=True)
            (hvp,) = torch.autograd.grad((g * p).sum(), Wv)
            p = p - eta[:, None, None, None] * hvp
            v = v + p
        v = (eta[:, None, None, None] * v).detach()
        # the cross derivative: h = -d/dx <grad_W g(x, W), v>
        xi = draws[t, D + 1 + Q]
        P = prob.phi(xi)
        Wv = W.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(prob.lower(x, Wv, P, xi), Wv, create_graph=True)
        (cross,) = torch.autograd.grad((g * v).sum(), x)
        opt.zero_grad()
        x.grad = -(alpha[:, None] * cross)
        opt.step()
        if (t + 1) % eval_every == 0 or t + 1 == T:
            evaluate(t + 1)
    return {"lanes": lanes, "steps": np.array(steps), "val": np.stack(val_curves), "xi_grid": xi_grid,
            "x": x.detach().numpy(), "W": W, "prob": prob, "samples_per_step": (D + Q + 2) * B}


def test_metrics(res: dict, datas: list, temps=(0.5, 1.0, 2.0)) -> dict:
    """Per lane: test accuracy and test CE at the temperatures ``temps``, and the AUROC of -x for the corrupted rows."""
    from sklearn.metrics import roc_auc_score

    prob, lanes, W = res["prob"], res["lanes"], res["W"]
    temps = np.asarray(temps, dtype=float)
    P = prob.phi(temps)
    At = torch.tensor(np.stack([datas[ln.rep].A_test for ln in lanes]), dtype=prob.dtype)
    bt = np.stack([datas[ln.rep].b_test for ln in lanes])
    with torch.no_grad():
        logits = torch.einsum("lnd,lbdc->lbnc", At, prob.Y(W, P)).numpy()
        test_ce = prob.upper(W, P, temps, A=At, b=torch.tensor(bt, dtype=torch.long)).numpy()
    acc = (logits.argmax(-1) == bt[:, None, :]).mean(-1)
    auroc = np.array([roc_auc_score(datas[ln.rep].corrupted, -res["x"][i]) for i, ln in enumerate(lanes)])
    return {"temps": temps, "test_acc": acc, "test_ce": test_ce, "auroc": auroc}
