"""lib.common.lm_hooks on a tiny GPT-2: states equal output_hidden_states, edits do what they say."""
import pytest
import torch

from lib.common.lm_hooks import (
    add_vector,
    capture,
    clamp_direction,
    greedy_generate,
    interchange,
    n_layers,
    read_states,
    replace_states,
    residual_hook,
    sequence_logprob,
    token_logprobs,
)
from lib.common.tiny_lm import make_gpt2

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def model():
    return make_gpt2(64, n_layer=3, n_embd=32, n_head=4, n_positions=32, seed=0).eval()


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 64, (3, 7), generator=torch.Generator().manual_seed(1))


def test_states_equal_output_hidden_states(model, ids):
    with torch.no_grad():
        ref = model(input_ids=ids, output_hidden_states=True).hidden_states
    L = n_layers(model)
    states = read_states(model, ids, layers=list(range(L + 1)))
    for layer in range(L + 1):
        assert torch.allclose(states[layer], ref[layer], atol=1e-6), layer


def test_identity_edit_leaves_logits_unchanged_and_a_real_edit_changes_them(model, ids):
    with torch.no_grad():
        base = model(input_ids=ids).logits
        with residual_hook(model, 1, lambda h: h):
            same = model(input_ids=ids).logits
        with residual_hook(model, 1, add_vector(torch.ones(32), alpha=2.0)):
            moved = model(input_ids=ids).logits
        after = model(input_ids=ids).logits
    assert torch.equal(base, same) and torch.equal(base, after)  # the hook is gone after the block
    assert not torch.allclose(base, moved)


def test_clamp_sets_the_component_and_keeps_the_rest(model, ids):
    w = torch.randn(32, generator=torch.Generator().manual_seed(2))
    wu = w / w.norm()
    with capture(model, [2]) as before:
        with torch.no_grad():
            model(input_ids=ids)
    with residual_hook(model, 2, clamp_direction(w, 3.0)), capture(model, [2]) as after:
        with torch.no_grad():
            model(input_ids=ids)
    h0, h1 = before[2][0], after[2][0]  # capture entered after the clamp: sees the edited state
    assert torch.allclose(h1 @ wu, torch.full(h1.shape[:2], 3.0), atol=1e-5)
    perp0 = h0 - (h0 @ wu)[..., None] * wu
    perp1 = h1 - (h1 @ wu)[..., None] * wu
    assert torch.allclose(perp0, perp1, atol=1e-5)


def test_interchange_with_own_state_is_identity_and_positions_mask(model, ids):
    w = torch.randn(32, generator=torch.Generator().manual_seed(3))
    h = read_states(model, ids, [1])[1]
    with torch.no_grad():
        base = model(input_ids=ids).logits
        with residual_hook(model, 1, interchange(w, h)):
            same = model(input_ids=ids).logits
    assert torch.allclose(base, same, atol=1e-5)
    pos = torch.zeros(3, 7, dtype=torch.bool)
    pos[:, -1] = True
    with torch.no_grad(), residual_hook(model, 1, replace_states(torch.zeros(3, 32), positions=pos)):
        edited = model(input_ids=ids).logits
    assert torch.allclose(edited[:, :-1], base[:, :-1], atol=1e-6)  # causal: earlier positions untouched
    assert not torch.allclose(edited[:, -1], base[:, -1])


def test_sequence_logprob_is_a_token_by_token_sum(model, ids):
    with torch.no_grad():
        lp = sequence_logprob(model, ids)
        manual = torch.zeros(3)
        for t in range(1, ids.shape[1]):
            logits = model(input_ids=ids[:, :t]).logits[:, -1]
            manual += torch.log_softmax(logits, -1).gather(1, ids[:, t:t + 1]).squeeze(1)
    assert torch.allclose(lp, manual, atol=1e-4)
    mask = torch.ones_like(ids)
    mask[:, -2:] = 0
    with torch.no_grad():
        assert torch.allclose(token_logprobs(model, ids, mask)[:, -2:], torch.zeros(3, 2))


def test_greedy_generation_under_a_hook_equals_a_manual_loop(model, ids):
    v = torch.randn(32, generator=torch.Generator().manual_seed(4))
    with residual_hook(model, 2, add_vector(v, 3.0)):
        out = greedy_generate(model, ids[:, :3], max_new_tokens=4)
        seq = ids[:, :3]
        with torch.no_grad():
            for _ in range(4):
                nxt = model(input_ids=seq).logits[:, -1].argmax(-1)
                seq = torch.cat([seq, nxt[:, None]], 1)
    assert torch.equal(out, seq)


def test_bad_layer_is_refused(model):
    with pytest.raises(ValueError, match="layer got 9"):
        with residual_hook(model, 9, lambda h: h):
            pass
