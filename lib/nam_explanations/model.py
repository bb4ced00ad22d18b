"""The neural additive model: trained in torch (``lib.common.additive.GroupMLPs``), analysed in numpy.

``f(x) = β + Σ_i h_i(x_i)``, each ``h_i`` a univariate ReLU MLP ``1 -> H -> H -> 1``. :func:`train_nam` fits it
full-batch with BCE and Adam (``lib.common.optim``), with feature dropout (each contribution ``h_i(x_i)`` dropped
with probability ``feature_dropout`` during training, as in Agarwal et al.'s NAM). :func:`export_nam` turns the
torch model into a :class:`NumpyNAM`: the same weights stacked per component in float64, which every verifier in
this package reads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NumpyNAM:
    """A NAM's weights stacked over its ``n`` univariate components (float64).

    ``W1 [n, H1]`` (the single input row of each first layer), ``b1 [n, H1]``, ``W2 [n, H1, H2]``, ``b2 [n, H2]``,
    ``W3 [n, H2]`` (the single output column), ``b3 [n]``, and the global bias ``beta``. Only depth-2 components
    (two hidden layers) are supported: the paper's architecture family and the brief's.
    """

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    W3: np.ndarray
    b3: np.ndarray
    beta: float
    mean_contrib: np.ndarray  # E_train[h_i(x_i)], for centred contribution plots and the heuristic order

    @property
    def n_features(self) -> int:
        return int(self.W1.shape[0])

    @property
    def hidden(self) -> int:
        return int(self.W1.shape[1])

    def components(self, Z: np.ndarray) -> np.ndarray:
        """``h_i(Z[:, i])`` for every row and component: ``[N, n] -> [N, n]``."""
        Z = np.asarray(Z, dtype=float)
        h1 = np.maximum(Z[..., None] * self.W1 + self.b1, 0.0)
        h2 = np.maximum(np.einsum("...ih,ihk->...ik", h1, self.W2) + self.b2, 0.0)
        return np.einsum("...ik,ik->...i", h2, self.W3) + self.b3

    def logit(self, X: np.ndarray) -> np.ndarray:
        return self.components(X).sum(-1) + self.beta

    def component_at(self, comp: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``h_{comp[k]}(z[k])`` for paired arrays of component ids and inputs (any shape, same shape)."""
        comp = np.asarray(comp)
        z = np.asarray(z, dtype=float)
        h1 = np.maximum(z[..., None] * self.W1[comp] + self.b1[comp], 0.0)
        h2 = np.maximum(np.einsum("...h,...hk->...k", h1, self.W2[comp]) + self.b2[comp], 0.0)
        return np.einsum("...k,...k->...", h2, self.W3[comp]) + self.b3[comp]

    def layers(self, i: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Component ``i`` as ``[(W [in, out], b [out]), ...]`` (the format of ``lib.common.additive.numpy_mlp``)."""
        return [(self.W1[i][None, :], self.b1[i]), (self.W2[i], self.b2[i]), (self.W3[i][:, None], self.b3[i:i + 1])]

    def lipschitz(self) -> np.ndarray:
        """A Lipschitz bound per component: the product of the layers' spectral norms."""
        n2 = np.linalg.norm(self.W2, ord=2, axis=(1, 2))
        return np.linalg.norm(self.W1, axis=-1) * n2 * np.linalg.norm(self.W3, axis=-1)


def build_nam(n_features: int, hidden: int = 16, generator=None):
    """``(GroupMLPs, bias parameter)``: a NAM's torch modules (one 1 -> H -> H -> 1 MLP per feature)."""
    import torch

    from lib.common.additive import GroupMLPs

    mlps = GroupMLPs([1] * n_features, hidden=hidden, depth=2, generator=generator)
    return mlps, torch.nn.Parameter(torch.zeros(()))


def train_nam(X: np.ndarray, y: np.ndarray, *, hidden: int = 16, steps: int = 300, lr: float = 1e-2,
              feature_dropout: float = 0.1, weight_decay: float = 1e-5, seed: int = 0, return_torch: bool = False):
    """Fit a NAM on ``(X, y)`` full-batch (BCE on the logit, Adam, ``steps`` updates, one thread) and export it.

    Feature dropout zeroes each contribution ``h_i(x_i)`` of each row with probability ``feature_dropout`` and
    rescales the rest (inverted dropout), which spreads the decision over many shape functions, as in NAM.
    Returns the :class:`NumpyNAM` (and the torch ``(GroupMLPs, beta)`` too with ``return_torch=True``).
    """
    import torch

    from lib.common import limit_threads, torch_generator
    from lib.common.optim import Adam

    with limit_threads(1):
        gen = torch_generator(seed, "nam_init")
        mlps, beta = build_nam(X.shape[1], hidden, gen)
        Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
        yt = torch.as_tensor(np.asarray(y), dtype=torch.float32)
        with torch.no_grad():
            p = float(yt.mean().clamp(0.01, 0.99))
            beta.fill_(float(np.log(p / (1 - p))))
        opt = Adam(list(mlps.parameters()) + [beta], lr=lr, weight_decay=weight_decay)
        drop_gen = torch_generator(seed, "nam_dropout")
        mlps.train()
        for _ in range(int(steps)):
            opt.zero_grad()
            contrib = mlps(Xt)[..., 0]
            if feature_dropout > 0:
                keep = (torch.rand(contrib.shape, generator=drop_gen) >= feature_dropout).float()
                contrib = contrib * keep / (1 - feature_dropout)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(contrib.sum(-1) + beta, yt)
            loss.backward()
            opt.step()
        mlps.eval()
        nam = export_nam(mlps, beta, X)
        return (nam, (mlps, beta)) if return_torch else nam


def export_nam(mlps, beta, X_train: np.ndarray) -> NumpyNAM:
    """Stack ``GroupMLPs.export_numpy(g)`` over the components into a :class:`NumpyNAM`."""
    layers = [mlps.export_numpy(g) for g in range(mlps.n_groups)]
    if any(len(L) != 3 for L in layers):
        raise ValueError("export_nam: only components with two hidden layers (depth=2) are supported")
    nam = NumpyNAM(
        W1=np.stack([L[0][0][0] for L in layers]), b1=np.stack([L[0][1] for L in layers]),
        W2=np.stack([L[1][0] for L in layers]), b2=np.stack([L[1][1] for L in layers]),
        W3=np.stack([L[2][0][:, 0] for L in layers]), b3=np.array([L[2][1][0] for L in layers]),
        beta=float(beta.detach()), mean_contrib=np.zeros(len(layers)))
    nam.mean_contrib = nam.components(X_train).mean(0)
    return nam


def torch_logits(mlps, beta, X: np.ndarray) -> np.ndarray:
    """The torch model's logits (eval mode), to compare with the export."""
    import torch

    with torch.no_grad():
        mlps.eval()
        return (mlps(torch.as_tensor(X, dtype=torch.float32))[..., 0].sum(-1) + beta).double().numpy()


def accuracy(nam: NumpyNAM, X: np.ndarray, y: np.ndarray) -> float:
    return float(((nam.logit(X) > 0).astype(int) == np.asarray(y)).mean())
