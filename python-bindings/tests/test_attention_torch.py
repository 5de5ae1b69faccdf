"""scaled_dot_product_attention and nn.MultiheadAttention against PyTorch itself where it is
installed (skipped otherwise): the same numbers for causal masks with L != S, a bool mask with a
fully masked row, an additive mask with a scale, MultiheadAttention with the same weights,
both masks, is_causal and need_weights, and a GPT's strided q, k, v (forward and gradients)."""

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



def gpt_attention(xp, x, g, H, mask=None, causal=False, shared_k=False):
    """A GPT's attention in either library (xp: ember or torch) on float arrays: q, k, v split
    from one [B, T, 3C] leaf x and transposed to [B, H, T, D] (strided views); with shared_k,
    head 0's keys expanded over the heads (stride 0). Returns the output and x's gradient for
    grad_out g [B, T, H, D] (passed transposed, strided as well)."""
    B, T, C3 = x.shape
    D = C3 // 3 // H
    qkv = xp.tensor(x).requires_grad_()
    q, k, v = (p.view(B, T, H, D).transpose(1, 2) for p in qkv.split(C3 // 3, dim=2))
    if shared_k:
        k = k[:, :1].expand(B, H, T, D)
    out = xp.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=None if mask is None else xp.tensor(mask), is_causal=causal)
    out.backward(xp.tensor(g).transpose(1, 2))
    return out.detach().numpy(), qkv.grad.numpy()


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 2e-5)])
@pytest.mark.parametrize("T", [65, 130])
def test_gpt_layout_forward_and_gradients_as_pytorch(dtype, tol, T):
    B, H, D = 2, 3, 8
    x = RNG.standard_normal((B, T, 3 * H * D)).astype(dtype)
    g = RNG.standard_normal((B, T, H, D)).astype(dtype)
    mask = RNG.standard_normal((B, 1, T, T)).astype(dtype)
    for kw in ({"causal": True}, {"causal": True, "shared_k": True}, {"mask": mask}):
        got, want = gpt_attention(ember, x, g, H, **kw), gpt_attention(torch, x, g, H, **kw)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, atol=tol, rtol=tol)
