"""lib.common.additive: batched per-group MLPs against a per-group loop, independence, export, shape curves."""
import numpy as np
import pytest
import torch

from lib.common.additive import GroupMLPs, numpy_mlp

pytestmark = pytest.mark.usefixtures("one_thread")


def _loop(m: GroupMLPs, x: torch.Tensor) -> torch.Tensor:
    """The same model, one group at a time with plain torch ops."""
    outs = []
    offsets = np.cumsum([0] + m.group_sizes[:-1])
    for g, (o, s) in enumerate(zip(offsets, m.group_sizes)):
        h = x[:, o:o + s]
        for k, (w, b) in enumerate(zip(m.weights, m.biases)):
            W = w[g][:s] if k == 0 else w[g]
            h = h @ W + b[g]
            if k < len(m.weights) - 1:
                if m.layer_norm:
                    h = torch.nn.functional.layer_norm(h, (m.hidden,), m.ln_weight[k][g], m.ln_bias[k][g])
                h = torch.relu(h)
        outs.append(h)
    return torch.stack(outs, dim=1)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_batched_pass_equals_a_loop_over_groups(layer_norm):
    g = torch.Generator().manual_seed(0)
    m = GroupMLPs([1, 1, 3, 1, 5], hidden=8, depth=2, out_dim=2, layer_norm=layer_norm, generator=g)
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        if layer_norm:
            for p in list(m.ln_weight) + list(m.ln_bias):
                p.normal_(generator=g)
        for b in m.biases:
            b.normal_(generator=g)
    x = torch.randn(7, 11, generator=g)
    assert m(x).shape == (7, 5, 2)
    assert torch.allclose(m(x), _loop(m, x), atol=1e-5)


def test_each_group_sees_only_its_own_features():
    m = GroupMLPs([2, 1, 3], hidden=6, generator=torch.Generator().manual_seed(1))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(2))
    base = m(x).detach()
    x2 = x.clone()
    x2[:, 2] += 5.0  # feature 2 belongs to group 1 only
    diff = (m(x2).detach() - base).abs().amax(dim=(0, 2))
    assert diff[1] > 1e-4 and diff[0] == 0 and diff[2] == 0


def test_export_numpy_and_shape_curve_reproduce_torch():
    m = GroupMLPs([1] * 4, hidden=16, depth=2, generator=torch.Generator().manual_seed(3))
    grid, curve = m.shape_curve(2, lo=-1, hi=1, n=50)
    x = torch.zeros(50, 4)
    x[:, 2] = torch.as_tensor(grid)
    assert np.allclose(curve[:, 0], m(x)[:, 2, 0].detach().numpy(), atol=1e-6)
    layers = m.export_numpy(2)
    assert [W.shape for W, _ in layers] == [(1, 16), (16, 16), (16, 1)]
    assert np.allclose(numpy_mlp(layers, grid[:, None])[:, 0], curve[:, 0], atol=1e-5)


def test_init_and_bad_arguments():
    m = GroupMLPs([1, 3], hidden=64, generator=torch.Generator().manual_seed(0))
    assert float(m.weights[0][0, 1:].abs().sum()) == 0.0  # padded inputs of the 1-feature group have no weight
    assert all(float(b.abs().sum()) == 0.0 for b in m.biases)
    with pytest.raises(ValueError, match="group_sizes"):
        GroupMLPs([])
    with pytest.raises(ValueError, match="activation"):
        GroupMLPs([1], activation="swish")
    with pytest.raises(ValueError, match="features"):
        m(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="univariate"):
        m.shape_curve(1)
