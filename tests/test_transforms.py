"""Zero-mean / MDS transforms: one implementation on stored vectors and inside a BERT forward pass."""

import numpy as np
import pytest
import torch
from tiny_checkpoints import tiny_bert

from xling.encode.transforms import layer_module, mds, mds_delta, shift, shift_layer, zero_mean, zero_mean_delta

N_LAYERS = 3


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return tiny_bert(40, hidden=32, layers=N_LAYERS, attn_implementation="sdpa").eval()


@pytest.fixture(scope="module")
def ids():
    g = torch.Generator().manual_seed(1)
    return torch.randint(5, 40, (3, 9), generator=g)


def manual_logits(model, ids, layer, delta, positions=None):
    """Unhooked: hidden_states[layer] + delta, then blocks layer+1.. and the MLM head by hand."""
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states
        h = shift(states[layer], torch.as_tensor(delta), positions)
        for block in model.bert.encoder.layer[layer:]:
            h = block(h)
        return model.cls(h)


def test_shift_on_arrays_numpy_and_torch():
    h = np.arange(12, dtype=np.float64).reshape(2, 2, 3)
    mean_src, mean_tgt = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    np.testing.assert_allclose(zero_mean(h, mean_src), h - mean_src)
    np.testing.assert_allclose(mds(h, mean_src, mean_tgt, 2.0), h + 2.0 * (mean_tgt - mean_src))
    positions = np.array([[True, False], [False, True]])
    out = mds(h, mean_src, mean_tgt, 1.0, positions)
    np.testing.assert_allclose(out[0, 1], h[0, 1])
    np.testing.assert_allclose(out[0, 0], h[0, 0] + mean_tgt - mean_src)
    t = torch.tensor(h, dtype=torch.float32)
    np.testing.assert_allclose(zero_mean(t, torch.tensor(mean_src)).numpy(), h - mean_src, rtol=1e-6)
    assert zero_mean(t, mean_src).dtype == torch.float32
    np.testing.assert_allclose(mds_delta(mean_src, mean_tgt, -1.0), mean_src - mean_tgt)
    np.testing.assert_allclose(zero_mean_delta(mean_src), -mean_src)


@pytest.mark.parametrize("layer", [0, 1, N_LAYERS])
def test_hook_equals_running_the_remaining_layers_on_shifted_states(model, ids, layer):
    g = torch.Generator().manual_seed(layer)
    mean_src, mean_tgt = torch.randn(32, generator=g), torch.randn(32, generator=g)
    delta = mds_delta(mean_src, mean_tgt, 2.0)
    with torch.no_grad(), shift_layer(model, layer, delta):
        hooked = model(input_ids=ids).logits
    torch.testing.assert_close(hooked, manual_logits(model, ids, layer, delta), atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        plain = model(input_ids=ids).logits
    assert not torch.allclose(hooked, plain, atol=1e-3)  # the shift did something


@pytest.mark.parametrize("layer", [0, 2])
def test_zero_mean_hook_with_positions(model, ids, layer):
    mean_src = torch.randn(32, generator=torch.Generator().manual_seed(5))
    positions = torch.zeros(ids.shape, dtype=torch.bool)
    positions[:, 1:-1] = True  # real pieces only: [CLS] and [SEP] positions untouched
    delta = zero_mean_delta(mean_src)
    with torch.no_grad(), shift_layer(model, layer, delta, positions):
        out = model(input_ids=ids, output_hidden_states=True)
    torch.testing.assert_close(out.logits, manual_logits(model, ids, layer, delta, positions), atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        plain = model(input_ids=ids, output_hidden_states=True).hidden_states[layer]
    # output_hidden_states reports the shifted state at the hooked layer
    torch.testing.assert_close(out.hidden_states[layer][:, 1:-1], plain[:, 1:-1] - mean_src, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.hidden_states[layer][:, 0], plain[:, 0])


def test_alpha_zero_changes_nothing_and_hook_is_removed(model, ids):
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with shift_layer(model, 1, mds_delta(torch.ones(32), torch.zeros(32), 0.0)):
            same = model(input_ids=ids).logits
        torch.testing.assert_close(same, plain)
        before = dict(layer_module(model, 1)._forward_hooks)  # transformers' own output-capturing hooks
        with shift_layer(model, 1, torch.full((32,), 3.0)):
            assert len(layer_module(model, 1)._forward_hooks) == len(before) + 1
        assert dict(layer_module(model, 1)._forward_hooks) == before
        torch.testing.assert_close(model(input_ids=ids).logits, plain)


def test_hook_removed_after_an_error(model, ids):
    before = dict(layer_module(model, 0)._forward_hooks)
    with pytest.raises(RuntimeError), shift_layer(model, 0, torch.ones(32)):
        raise RuntimeError("boom")
    assert dict(layer_module(model, 0)._forward_hooks) == before


def test_padding_does_not_change_real_positions(model):
    """A padded batch with the shift on real positions equals each sentence run alone."""
    g = torch.Generator().manual_seed(3)
    a, b = torch.randint(5, 40, (1, 8), generator=g), torch.randint(5, 40, (1, 5), generator=g)
    ids = torch.zeros((2, 8), dtype=torch.long)
    ids[0], ids[1, :5] = a[0], b[0]
    attention = torch.zeros((2, 8), dtype=torch.long)
    attention[0], attention[1, :5] = 1, 1
    delta = torch.randn(32, generator=g)
    with torch.no_grad():
        with shift_layer(model, 2, delta, attention.bool()):
            batch = model(input_ids=ids, attention_mask=attention).logits
        with shift_layer(model, 2, delta):
            alone = model(input_ids=b).logits
    torch.testing.assert_close(batch[1, :5], alone[0], atol=1e-5, rtol=1e-5)


def test_bad_layer(model):
    with pytest.raises(ValueError, match="layer must be in"):
        with shift_layer(model, N_LAYERS + 1, torch.ones(32)):
            pass
