"""lib.common.optim against torch.optim, step for step."""
import pytest
import torch

from lib.common.optim import SGD, Adam, AdamW


def _model(seed=0):
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return net


def _run(make_opt, steps=25, clip=None, seed=0):
    net = _model(seed)
    opt = make_opt(net.parameters())
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randn(16, 5, generator=g), torch.randn(16, 3, generator=g)
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
        opt.step()
    return torch.cat([p.detach().flatten() for p in net.parameters()])


@pytest.mark.parametrize("kwargs", [{}, {"lr": 3e-2, "betas": (0.8, 0.99), "eps": 1e-6}, {"weight_decay": 0.1}])
def test_adam_matches_torch(kwargs):
    ours = _run(lambda p: Adam(p, **kwargs))
    ref = _run(lambda p: torch.optim.Adam(p, **kwargs))
    assert torch.allclose(ours, ref, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(ours, _run(lambda p: Adam(p, lr=0.5)))  # the comparison can fail


@pytest.mark.parametrize("kwargs", [{}, {"lr": 1e-2, "weight_decay": 0.3}])
def test_adamw_matches_torch(kwargs):
    assert torch.allclose(_run(lambda p: AdamW(p, **kwargs)), _run(lambda p: torch.optim.AdamW(p, **kwargs)),
                          atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{"lr": 0.05}, {"lr": 0.05, "momentum": 0.9}, {"lr": 0.02, "momentum": 0.9,
                                    "nesterov": True, "weight_decay": 1e-2}])
def test_sgd_matches_torch(kwargs):
    assert torch.allclose(_run(lambda p: SGD(p, **kwargs)), _run(lambda p: torch.optim.SGD(p, **kwargs)),
                          atol=1e-6, rtol=1e-5)


def test_grad_clipping_matches_clip_grad_norm():
    ours = _run(lambda p: Adam(p, lr=1e-2, max_grad_norm=0.5))
    ref = _run(lambda p: torch.optim.Adam(p, lr=1e-2), clip=0.5)
    assert torch.allclose(ours, ref, atol=1e-6, rtol=1e-5)


def test_step_returns_norm_and_lr_is_settable():
    net = _model()
    opt = Adam(net.parameters(), lr=1e-2)
    net(torch.ones(2, 5)).sum().backward()
    expected = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in net.parameters()]))
    assert opt.step() == pytest.approx(float(expected), rel=1e-5)
    opt.lr = 0.0
    before = [p.detach().clone() for p in net.parameters()]
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(torch.ones(2, 5)).sum().backward()
    opt.step()
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="lr"):
        Adam(_model().parameters(), lr=-1)
    with pytest.raises(ValueError, match="no parameters"):
        Adam([])
    with pytest.raises(ValueError, match="nesterov"):
        SGD(_model().parameters(), nesterov=True)
