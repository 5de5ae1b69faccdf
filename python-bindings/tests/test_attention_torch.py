"""scaled_dot_product_attention and nn.MultiheadAttention against PyTorch itself where it is
installed (skipped otherwise): the same numbers for causal masks with L != S, a bool mask with a
fully masked row, an additive mask with a scale, and MultiheadAttention with the same weights,
both masks, is_causal and need_weights."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(3)


def both(fn_torch, fn_ember, *arrays, **kw):
    """fn on torch tensors and on ember tensors of the same float64 arrays."""
    got = fn_ember(*(ember.tensor(a) for a in arrays), **{k: ember.tensor(v) if isinstance(
        v, np.ndarray) else v for k, v in kw.items()})
    want = fn_torch(*(torch.tensor(a) for a in arrays), **{k: torch.tensor(v) if isinstance(
        v, np.ndarray) else v for k, v in kw.items()})
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("L", [5, 7, 9])
def test_causal_as_pytorch(L):
    q, k, v = RNG.standard_normal((2, 3, L, 4)), RNG.standard_normal((2, 3, 7, 4)), \
        RNG.standard_normal((2, 3, 7, 6))
    both(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, q, k, v,
         is_causal=True)


def test_masks_as_pytorch():
    q, k, v = RNG.standard_normal((2, 3, 5, 4)), RNG.standard_normal((2, 3, 7, 4)), \
        RNG.standard_normal((2, 3, 7, 6))
    mask = RNG.random((5, 7)) > 0.5
    mask[2] = False  # a fully masked row: 0, as PyTorch's safe softmax
    both(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, q, k, v,
         attn_mask=mask)
    both(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, q, k, v,
         attn_mask=RNG.standard_normal((2, 1, 5, 7)), scale=0.3)


def test_multihead_attention_as_pytorch():
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    ours = ember.nn.MultiheadAttention(8, 2, batch_first=True, dtype=ember.float64)
    with torch.no_grad():
        theirs.in_proj_bias.copy_(torch.tensor(RNG.standard_normal(24)))
        theirs.out_proj.bias.copy_(torch.tensor(RNG.standard_normal(8)))
    with ember.no_grad():
        for name, p in theirs.named_parameters():
            dict(ours.named_parameters())[name].copy_(ember.tensor(p.detach().numpy()))
    x = RNG.standard_normal((2, 5, 8))
    padding = np.zeros((2, 5), bool)
    padding[0, 3:] = True
    future = np.triu(np.ones((5, 5), bool), 1)
    for need in (True, False):
        a, wa = theirs(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(padding),
                       attn_mask=torch.tensor(future), need_weights=need)
        b, wb = ours(*(ember.tensor(x),) * 3, key_padding_mask=ember.tensor(padding),
                     attn_mask=ember.tensor(future), need_weights=need)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
        if need:
            np.testing.assert_allclose(wb.detach().numpy(), wa.detach().numpy(), atol=1e-12)
    a, _ = theirs(*(torch.tensor(x),) * 3, attn_mask=torch.tensor(future), is_causal=True,
                  need_weights=False)
    b, _ = ours(*(ember.tensor(x),) * 3, is_causal=True, need_weights=False)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
