"""lib.common.fastgpt2: the torch-only GPT-2 computes transformers' GPT2LMHeadModel's function, and trains like it."""
import math

import pytest
import torch

from lib.common.fastgpt2 import FastGPT2, KVCache, from_hf, make_fast_gpt2
from lib.common.tiny_lm import make_gpt2, train_lm

V = 50


@pytest.fixture(scope="module")
def pair():
    """A transformers GPT-2 with non-trivial weights and the same network as a FastGPT2."""
    m = make_gpt2(V, n_layer=3, n_embd=32, n_head=4, n_positions=40, seed=3)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
    return m.requires_grad_(False), from_hf(m)


def _ids(B, T, seed=0):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


def test_inputs_embeds_base_model_and_loss_equal_transformers(pair):
    m, f = pair
    x = _ids(2, 9)
    a = m.base_model(input_ids=x, output_hidden_states=True, use_cache=False)
    b = f.base_model(input_ids=x, output_hidden_states=True, use_cache=False)
    assert b.logits is None and len(a.hidden_states) == len(b.hidden_states) == 4
    for u, v in zip(a.hidden_states, b.hidden_states):
        assert torch.allclose(u, v, atol=1e-5)
    E = f.get_input_embeddings().weight[x] + 0.3 * torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(1))
    he = m.base_model(inputs_embeds=E, output_hidden_states=True).hidden_states[-1]
    assert torch.allclose(he, f.base_model(inputs_embeds=E, output_hidden_states=True).hidden_states[-1], atol=1e-5)
    assert not torch.allclose(he, a.hidden_states[-1], atol=1e-3)  # the perturbed inputs do change the states
    assert float(f(input_ids=x, labels=x).loss) == pytest.approx(float(m(input_ids=x, labels=x).loss), rel=1e-5)
    with pytest.raises(ValueError, match="exactly one"):
        f(input_ids=x, inputs_embeds=E)


def test_expanded_prefix_cache_gives_the_full_forward(pair):
    _, f = pair
    prefix, cands = _ids(1, 7, seed=2), torch.arange(V)
    with torch.no_grad():
        cache = f(input_ids=prefix, use_cache=True, head=False).past_key_values
        assert isinstance(cache, KVCache) and cache.length == 7
        kv = cache.expand(V)
        out = f(input_ids=cands[:, None], past_key_values=kv, use_cache=True, output_hidden_states=True)
        full = f(input_ids=torch.cat([prefix.expand(V, -1), cands[:, None]], 1), output_hidden_states=True)
    for layer in range(4):
        assert torch.allclose(out.hidden_states[layer][:, -1], full.hidden_states[layer][:, -1], atol=1e-5)
    assert torch.allclose(out.logits[:, -1], full.logits[:, -1], atol=1e-5)
    assert all(k.shape == (V, 4, 8, 8) for k, _ in out.past_key_values)  # new tensors, one position longer
    assert all(k.shape == (V, 4, 7, 8) for k, _ in kv)  # the views are untouched
    with pytest.raises(ValueError, match="one-row"):
        f(input_ids=_ids(2, 3), use_cache=True).past_key_values.expand(4)


def test_gradients_flow_through_inputs_embeds(pair):
    m, f = pair
    e = torch.randn(1, 1, 32, generator=torch.Generator().manual_seed(5), requires_grad=True)
    ga = torch.autograd.grad(m.base_model(inputs_embeds=e, output_hidden_states=True).hidden_states[2].sum(), e)[0]
    gb = torch.autograd.grad(f.base_model(inputs_embeds=e, output_hidden_states=True).hidden_states[2].sum(), e)[0]
    assert torch.allclose(ga, gb, atol=1e-5) and float(ga.abs().max()) > 0


@pytest.mark.parametrize("sizes", [dict(vocab_size=300, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=5),
                                   dict(vocab_size=2048, n_layer=4, n_embd=128, n_head=4, n_positions=256, seed=1)])
def test_make_fast_gpt2_draws_make_gpt2s_weights(sizes):
    ref = make_gpt2(sizes["vocab_size"], **{k: v for k, v in sizes.items() if k != "vocab_size"}).state_dict()
    got = make_fast_gpt2(sizes["vocab_size"], **{k: v for k, v in sizes.items() if k != "vocab_size"}).state_dict()
    assert set(got) <= set(ref)
    for k, v in got.items():
        assert torch.equal(ref[k], v), k
    other = make_fast_gpt2(sizes["vocab_size"], **dict({k: v for k, v in sizes.items() if k != "vocab_size"}, seed=9))
    assert not torch.equal(other.transformer.wte.weight, got["transformer.wte.weight"])


def test_make_fast_gpt2_tie_dtype_and_refusals():
    a = make_fast_gpt2(300, n_layer=4, n_embd=64, n_head=4, n_positions=32, seed=7)
    assert a.lm_head.weight is a.transformer.wte.weight
    assert float(a.transformer.h[1].attn.c_proj.weight.std()) == pytest.approx(0.02 / math.sqrt(8), rel=0.05)
    d = make_fast_gpt2(300, n_layer=4, n_embd=64, n_head=4, n_positions=32, seed=7, dtype=torch.float64)
    assert d.transformer.wpe.weight.dtype == torch.float64
    assert torch.equal(d.transformer.wpe.weight.float(), a.transformer.wpe.weight)
    with pytest.raises(ValueError, match="multiple"):
        make_fast_gpt2(300, n_embd=30, n_head=4)


def test_train_lm_suite_optimizer_matches_torch_optim():
    stream = (torch.arange(2000) * 7) % 40  # a learnable sequence
    logs, models = [], []
    for opt in ("torch", "suite"):
        m = make_fast_gpt2(40, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=1)
        logs.append(train_lm(m, stream, steps=12, lr=1e-2, batch_size=4, seq_len=12, grad_clip=0.5,
                             warmup_steps=4, weight_decay=0.1, seed=2, optimizer=opt))
        models.append(m)
    assert logs[0].losses == pytest.approx(logs[1].losses, rel=1e-5)
    assert logs[0].losses[-1] < logs[0].losses[0] - 0.1  # it did train
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        # the key part of c_attn's bias has zero gradient (softmax ignores a constant per query), so Adam
        # normalises rounding noise there; everything else agrees to float rounding
        assert torch.allclose(p, q, atol=1e-4 if name.endswith("c_attn.bias") else 1e-6), name
    with pytest.raises(ValueError, match="optimizer"):
        train_lm(models[0], stream, steps=1, seq_len=8, optimizer="sgd")


def test_fastgpt2_refuses_foreign_caches(pair):
    _, f = pair
    with pytest.raises(TypeError, match="past_key_values"):
        f(input_ids=_ids(1, 2), past_key_values={"k": 1})
    assert isinstance(f, FastGPT2)
