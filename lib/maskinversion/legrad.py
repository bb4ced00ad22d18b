"""LeGrad explainability maps of a CLIP vision tower for an embedding, by double backprop and by the gradient
decomposition.

For the last block L (MaskInversion's default ``layer_index = -1``), with post-softmax attention ``A`` [h, N, N]:

    f(A) = normalize(proj(LN_post(mean over the N tokens of block L's output)))          (LeGrad's CLIP read-out)
    s    = ê . f(A),   ê = e / ||e||
    R    = mean over heads and query rows of ReLU(ds/dA), patch columns only -> sqrt(N-1) x sqrt(N-1) grid
    E    = min-max( bilinear upsampling of R by the patch size )

Block L's input ``x`` does not depend on ``e``, so it is computed once per image (:func:`last_block_input`); ``A``
is a leaf of the graph and ``f`` is re-evaluated from it. The *naive* map differentiates ``s`` with respect to ``A``
with ``create_graph=True`` (the loss of MaskInversion then backpropagates through that gradient). The
*decomposition* uses ds/dA = J(A)^T ê with ``J = df/dA`` [d, h, N, N], computed once per image
(:func:`attention_jacobian`, ``torch.func.jacrev``, kept factored as ``J = (df/do) v^T`` since A enters f only
through o = A v); every map for every mask and step is then a contraction.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _vision(model):
    return model.vision_model


def last_block_input(model, pixel_values: torch.Tensor) -> torch.Tensor:
    """The hidden states entering the last encoder block [B, N, D] (no gradient)."""
    vm = _vision(model)
    with torch.no_grad():
        h = vm.pre_layrnorm(vm.embeddings(pixel_values))
        for layer in vm.encoder.layers[:-1]:
            h = layer(h, None)
    return h


def last_block_attention(model, x: torch.Tensor) -> tuple:
    """``(A [B, h, N, N], V [B, h, N, hd])`` of the last block for its input ``x`` (eager softmax attention)."""
    layer = _vision(model).encoder.layers[-1]
    att = layer.self_attn
    B, N, D = x.shape
    hn = att.num_heads
    hd = D // hn
    z = layer.layer_norm1(x)
    q = att.q_proj(z).view(B, N, hn, hd).transpose(1, 2)
    k = att.k_proj(z).view(B, N, hn, hd).transpose(1, 2)
    v = att.v_proj(z).view(B, N, hn, hd).transpose(1, 2)
    A = torch.softmax((q @ k.transpose(-1, -2)) * att.scale, dim=-1)
    return A, v


def last_block_output(model, x: torch.Tensor, A: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Block L's output tokens [B, N, D] for given attention probabilities ``A`` (residual + MLP)."""
    layer = _vision(model).encoder.layers[-1]
    B, N, D = x.shape
    o = (A @ v).transpose(1, 2).reshape(B, N, D)
    h = x + layer.self_attn.out_proj(o)
    return h + layer.mlp(layer.layer_norm2(h))


def readout(model, tokens: torch.Tensor) -> torch.Tensor:
    """LeGrad's CLIP read-out of a block's tokens: normalize(proj(LN_post(mean over tokens)))."""
    return F.normalize(model.visual_projection(_vision(model).post_layernorm(tokens.mean(dim=-2))), dim=-1)


def f_of_attention(model, x, A, v) -> torch.Tensor:
    return readout(model, last_block_output(model, x, A, v))


class ImageState:
    """What one batch of images contributes to every map: block L's input, its attention and values (no grad)."""

    def __init__(self, model, pixel_values: torch.Tensor):
        self.model = model
        self.x = last_block_input(model, pixel_values)
        with torch.no_grad():
            self.A, self.v = last_block_attention(model, self.x)
        self.n_tokens = self.x.shape[1]
        self.grid = int(round((self.n_tokens - 1) ** 0.5))


def relevance_to_map(R: torch.Tensor, grid: int, patch: int, out_size=None) -> torch.Tensor:
    """[M, N-1] patch relevances -> min-max normalised [M, H, W] maps (bilinear upsampling by ``patch``)."""
    M = R.shape[0]
    E = F.interpolate(R.reshape(M, 1, grid, grid), scale_factor=patch, mode="bilinear", align_corners=False)
    if out_size is not None and tuple(E.shape[-2:]) != tuple(out_size):
        E = F.interpolate(E, size=tuple(out_size), mode="bilinear", align_corners=False)
    E = E.reshape(M, -1)
    lo, hi = E.min(dim=1, keepdim=True).values, E.max(dim=1, keepdim=True).values
    E = (E - lo) / (hi - lo + 1e-12)
    return E.reshape(M, *((grid * patch,) * 2 if out_size is None else tuple(out_size)))


def naive_relevance(state: ImageState, img_idx: torch.Tensor, emb: torch.Tensor, create_graph: bool = True):
    """Patch relevances [M, N-1] by double backprop: one copy of each mask's image state, s = Σ_m ê_m . f(A_m),
    G = ds/dA (``create_graph`` keeps it differentiable in ``emb``)."""
    x, v = state.x[img_idx], state.v[img_idx]
    A = state.A[img_idx].detach().clone().requires_grad_(True)
    with torch.enable_grad():
        f = f_of_attention(state.model, x, A, v)
        s = (F.normalize(emb, dim=-1) * f).sum()
        (G,) = torch.autograd.grad(s, A, create_graph=create_graph)
    return torch.relu(G).mean(dim=(1, 2))[:, 1:]


class AttentionJacobian:
    """J = df/dA of a batch of images, kept factored.

    ``A`` enters ``f`` only through the heads' outputs ``o_h = A_h v_h``, so by the chain rule (exactly)
    ``J[:, h, i, j] = sum_c Jo[:, i, h, c] v[h, j, c]`` with ``Jo = df/do`` [B, d, N, D] (D = h x head size).
    Storing ``Jo`` and ``v`` instead of ``J`` [B, d, h, N, N] is the same decomposition with 2.7x less memory
    to read per contraction; :meth:`full` rebuilds ``J`` (for tests and inspection)."""

    def __init__(self, Jo: torch.Tensor, v: torch.Tensor):
        self.Jo, self.v = Jo, v  # [B, d, N, D], [B, h, N, hd]

    def __len__(self):
        return self.Jo.shape[0]

    @property
    def shape(self) -> tuple:
        B, d, N, _ = self.Jo.shape
        return (B, d, self.v.shape[1], N, N)

    def __getitem__(self, idx) -> "AttentionJacobian":
        return AttentionJacobian(self.Jo[idx], self.v[idx])

    def full(self) -> torch.Tensor:
        B, d, h, N, _ = self.shape
        return torch.einsum("bdihc,bhjc->bdhij", self.Jo.reshape(B, d, N, h, -1), self.v)


def attention_jacobian(state: ImageState, chunk: int = 2) -> AttentionJacobian:
    """J = df/dA per image (factored, see :class:`AttentionJacobian`): ``Jo = df/do`` by ``torch.func.jacrev``
    (d backward passes per image, vmapped over ``chunk`` images at a time)."""
    from torch.func import jacrev, vmap

    model = state.model
    layer = _vision(model).encoder.layers[-1]

    def f_single(o1, x1):
        h = x1 + layer.self_attn.out_proj(o1)
        return readout(model, h + layer.mlp(layer.layer_norm2(h)))

    B, N, D = state.x.shape
    jac = vmap(jacrev(f_single), in_dims=(0, 0))
    outs = []
    with torch.no_grad():
        o = (state.A @ state.v).transpose(1, 2).reshape(B, N, D)
        for k in range(0, B, chunk):
            outs.append(jac(o[k:k + chunk], state.x[k:k + chunk]))
    return AttentionJacobian(torch.cat(outs), state.v)


class DecomposedMaps:
    """Patch relevances from the Jacobians: R_m = mean over heads and query rows of ReLU(J_img(m)^T ê_m).

    The layout is prepared once for a set of masks: the Jacobians of their images and each mask's slot among its
    image's masks, so that one batched matmul per call contracts every image's ``Jo`` with all of its masks'
    embeddings (``g = Jo^T ê``, the gradient with respect to the heads' outputs), and a second one gives
    ``ds/dA_h = g_h v_h^T``."""

    def __init__(self, J: AttentionJacobian, img_idx):
        img_idx = torch.as_tensor(img_idx, dtype=torch.long)
        B, d, h, N, _ = J.shape
        used, local = torch.unique(img_idx, return_inverse=True)
        sub = J if len(used) == B and bool((used == torch.arange(B)).all()) else J[used]
        self.Jo = sub.Jo.reshape(len(used), d, -1)
        self.vT = sub.v.transpose(-1, -2)[:, None]  # [B', 1, h, hd, N]
        self.h, self.N = h, N
        slot = torch.zeros_like(local)
        seen: dict = {}
        for k, b in enumerate(local.tolist()):
            slot[k] = seen.get(b, 0)
            seen[b] = int(slot[k]) + 1
        self.local, self.slot, self.K = local, slot, int(slot.max()) + 1 if len(slot) else 0

    def __call__(self, emb: torch.Tensor) -> torch.Tensor:
        e = F.normalize(emb, dim=-1)
        Bp = self.Jo.shape[0]
        E = e.new_zeros((Bp, self.K, e.shape[1])).index_put((self.local, self.slot), e)
        g = torch.bmm(E, self.Jo).reshape(Bp, self.K, self.N, self.h, -1).transpose(2, 3)  # [B', K, h, N, hd]
        G = torch.relu(g @ self.vT)  # [B', K, h, N, N]
        R = G.mean(dim=(2, 3))[..., 1:]
        return R[self.local, self.slot]


def decomposed_relevance(J: AttentionJacobian, img_idx, emb: torch.Tensor) -> torch.Tensor:
    """Patch relevances [M, N-1] of embeddings ``emb`` [M, d] on images ``img_idx`` from the Jacobians ``J``."""
    return DecomposedMaps(J, img_idx)(emb)


def legrad_maps(model, pixel_values: torch.Tensor, emb: torch.Tensor, img_idx=None, decomposed: bool = True,
                out_size=None, state: ImageState = None, J: AttentionJacobian = None) -> torch.Tensor:
    """LeGrad maps [M, H, W] of embeddings ``emb`` [M, d] on images ``pixel_values[img_idx]`` (no gradient);
    ``state``/``J`` of these images may be passed to reuse them."""
    state = ImageState(model, pixel_values) if state is None else state
    img_idx = torch.arange(len(emb)) if img_idx is None else torch.as_tensor(img_idx)
    patch = _vision(model).config.patch_size
    if decomposed:
        R = decomposed_relevance(attention_jacobian(state) if J is None else J, img_idx, emb)
    else:
        R = naive_relevance(state, img_idx, emb, create_graph=False)
    return relevance_to_map(R.detach(), state.grid, patch, out_size)
