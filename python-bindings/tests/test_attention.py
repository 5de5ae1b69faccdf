"""nn.functional.scaled_dot_product_attention against a float64 NumPy reference (masks of both
kinds and their broadcasts, causal with L != S, scale, odd and empty sizes, sizes around the CPU
kernel's 64-row tiles, non-contiguous inputs), gradients against finite differences (first and
second order), dropout's determinism, and the typed errors."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(24)


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None, keep=None):
    """The formula in float64: softmax(q k^T scale + bias) (times the dropout's keep factors)
    @ v, with a fully masked row giving 0."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if keep is not None:
        p = p * keep
    return p @ v


def rand(*shape):
    return RNG.standard_normal(shape)


def t(a, **kw):
    return ember.tensor(a, **kw)


def check(q, k, v, mask=None, causal=False, scale=None, dtype="float64", tol=1e-10):
    out = F.scaled_dot_product_attention(
        t(q, dtype=dtype), t(k, dtype=dtype), t(v, dtype=dtype),
        attn_mask=None if mask is None else t(mask, dtype="bool" if mask.dtype == bool else dtype),
        is_causal=causal, scale=scale)
    want = sdpa_ref(q, k, v, mask, causal, scale)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, atol=tol, rtol=tol)


@pytest.mark.parametrize("L, S", [(1, 1), (1, 9), (63, 64), (64, 65), (65, 63), (129, 130)])
def test_values_around_the_tiles(L, S):
    check(rand(2, 2, L, 8), rand(2, 2, S, 8), rand(2, 2, S, 5))


@pytest.mark.parametrize("L, S", [(5, 5), (3, 8), (8, 3), (65, 130), (130, 65)])
def test_causal_with_l_and_s_apart(L, S):
    check(rand(2, L, 4), rand(2, S, 4), rand(2, S, 3), causal=True)


def test_scale_and_float32():
    check(rand(3, 7, 16), rand(3, 9, 16), rand(3, 9, 16), scale=0.25)
    check(rand(2, 4, 70, 32), rand(2, 4, 70, 32), rand(2, 4, 70, 32), causal=True,
          dtype="float32", tol=2e-5)


@pytest.mark.parametrize("mask_shape", [(6, 9), (2, 1, 6, 9), (2, 3, 6, 9), (1, 9), (3, 1, 1)])
def test_bool_and_additive_masks_broadcast(mask_shape):
    q, k, v = rand(2, 3, 6, 4), rand(2, 3, 9, 4), rand(2, 3, 9, 2)
    bool_mask = RNG.random(mask_shape) > 0.3
    check(q, k, v, mask=bool_mask)
    check(q, k, v, mask=rand(*mask_shape))


def test_fully_masked_row_gives_zero():
    mask = np.ones((4, 5), dtype=bool)
    mask[1] = False
    q, k, v = rand(4, 3), rand(5, 3), rand(5, 2)
    out = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(mask))
    np.testing.assert_array_equal(out.numpy()[1], 0)
    check(q, k, v, mask=mask)


def test_broadcast_batch_dims_and_empty_batch():
    check(rand(2, 3, 5, 4), rand(1, 7, 4), rand(7, 6))
    out = F.scaled_dot_product_attention(t(rand(0, 2, 3, 4)), t(rand(0, 2, 5, 4)),
                                         t(rand(0, 2, 5, 6)))
    assert out.shape == (0, 2, 3, 6)
    check(rand(2, 3, 4), rand(2, 0, 4), rand(2, 0, 3))  # no keys: zeros


def test_non_contiguous_heads():
    # [B, T, H, D] viewed as [B, H, T, D], as multi-head attention makes q, k, v.
    q, k, v = rand(2, 7, 3, 4), rand(2, 9, 3, 4), rand(2, 9, 3, 5)
    tq, tk, tv = (t(a).transpose(1, 2) for a in (q, k, v))
    assert not tq.is_contiguous()
    out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    want = sdpa_ref(*(a.transpose(0, 2, 1, 3) for a in (q, k, v)), causal=True)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-10)


def test_half_types_compute_in_float():
    q, k, v = rand(2, 33, 16), rand(2, 40, 16), rand(2, 40, 16)
    for dtype, tol in (("float16", 1e-2), ("bfloat16", 6e-2)):
        rounded = [t(a, dtype=dtype).float().numpy().astype(np.float64) for a in (q, k, v)]
        out = F.scaled_dot_product_attention(*(t(a, dtype=dtype) for a in (q, k, v)),
                                             is_causal=True)
        assert out.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(out.float().numpy(), sdpa_ref(*rounded, causal=True),
                                   atol=tol, rtol=tol)


def leaves(*arrays):
    return tuple(t(a, requires_grad=True) for a in arrays)


def test_gradients_against_finite_differences():
    q, k, v = leaves(rand(2, 3, 4) / 2, rand(2, 5, 4) / 2, rand(2, 5, 3))
    assert ember.autograd.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                                    (q, k, v))
    assert ember.autograd.gradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.8),
        (q, k, v))
    mask = t(RNG.random((3, 5)) > 0.4)
    assert ember.autograd.gradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))


def test_additive_mask_gets_a_gradient():
    q, k, v, m = leaves(rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 3), rand(3, 5))
    assert ember.autograd.gradcheck(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, m))


def test_second_order_gradients():
    q, k, v = leaves(rand(1, 3, 2) / 2, rand(1, 4, 2) / 2, rand(1, 4, 2))
    w = t(rand(1, 3, 2))

    def first_grads(*inputs):
        # gradcheck's finite differences call this under no_grad, with inputs that need none.
        with ember.enable_grad():
            leaves = [x if x.requires_grad else x.detach().requires_grad_() for x in inputs]
            out = F.scaled_dot_product_attention(*leaves, is_causal=True)
            return ember.autograd.grad((out * w).sum(), leaves, create_graph=True)

    assert ember.autograd.gradcheck(first_grads, (q, k, v))


def test_dropout_is_deterministic_under_a_seed():
    q, k, v = (t(a) for a in (rand(2, 6, 4), rand(2, 70, 4), rand(2, 70, 3)))
    ember.manual_seed(7)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    ember.manual_seed(7)
    c = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    no_drop = sdpa_ref(*(x.numpy() for x in (q, k, v)))
    assert not np.allclose(a, no_drop)
    # Zero probability drops nothing and draws nothing.
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, dropout_p=0.0).numpy(),
                               no_drop, atol=1e-12)


def test_dropout_backward_drops_the_same_weights():
    q, k, v = leaves(rand(2, 3, 2), rand(2, 6, 2), rand(2, 6, 2))

    def fn(q, k, v):
        ember.manual_seed(3)  # every evaluation sees the same mask
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    assert ember.autograd.gradcheck(fn, (q, k, v))


def test_errors_are_typed_and_name_the_op():
    q, k, v = t(rand(2, 3, 4)), t(rand(2, 5, 4)), t(rand(2, 5, 6))
    with pytest.raises(ember.ShapeError, match="scaled_dot_product_attention.*embedding size"):
        F.scaled_dot_product_attention(q, t(rand(2, 5, 3)), v)
    with pytest.raises(ember.ShapeError, match="number of keys"):
        F.scaled_dot_product_attention(q, k, t(rand(2, 4, 6)))
    with pytest.raises(ember.DTypeError, match="one dtype"):
        F.scaled_dot_product_attention(q, k.float(), v)
    with pytest.raises(ember.ValueError, match="not both"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=t(np.ones((3, 5), bool)),
                                       is_causal=True)
    with pytest.raises(ember.DTypeError, match="attn_mask must be bool"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=t(np.ones((3, 5), np.int64)))
    with pytest.raises(ember.ShapeError, match="broadcast"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=t(np.ones((3, 4), bool)))
    with pytest.raises(ember.ValueError, match="dropout_p is 1.5"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(ember.ShapeError, match="at least 2 dims"):
        F.scaled_dot_product_attention(t(rand(4)), k, v)


def gpt_qkv(B, T, H, D, dtype):
    """q, k, v as a GPT makes them: one [B, T, 3C] projection (a leaf) split along its last dim,
    each part viewed [B, T, H, D] and transposed to [B, H, T, D]: strided, not contiguous."""
    qkv = t(rand(B, T, 3 * H * D), dtype=dtype, requires_grad=True)
    parts = [p.view(B, T, H, D).transpose(1, 2) for p in qkv.split(H * D, dim=2)]
    return qkv, parts


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("T", [63, 65, 130])
def test_gpt_layout_equals_contiguous_copies_bit_for_bit(dtype, T):
    # The CPU kernels read the strided views in place; the same products in the same order as
    # on contiguous copies, so the same bits, forward and backward (grad_out strided as well).
    B, H, D = 2, 3, 8
    qkv, (q, k, v) = gpt_qkv(B, T, H, D, dtype)
    g = t(rand(B, T, H, D), dtype=dtype).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(g)
    copies = [a.detach().contiguous().requires_grad_() for a in (q, k, v)]
    assert all(c.is_contiguous() for c in copies) and not q.is_contiguous()
    want = F.scaled_dot_product_attention(*copies, is_causal=True)
    want.backward(g.contiguous())

    def arr(x):
        return np.ascontiguousarray(x.detach().to(ember.float64).numpy())

    assert arr(out).tobytes() == arr(want).tobytes()
    got = arr(qkv.grad).reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    for a, c in zip(got, copies):
        assert np.ascontiguousarray(a).tobytes() == arr(c.grad).tobytes()
    ref = sdpa_ref(*(arr(c) for c in copies), causal=True)
    tol = {"float64": 1e-10, "float32": 2e-5, "bfloat16": 6e-2}[dtype]
    np.testing.assert_allclose(arr(out), ref, atol=tol, rtol=tol)


def test_gpt_layout_makes_no_copy_of_q_k_v():
    # Peak memory of the forward on the strided views: the output and logsumexp, and no copy
    # of q, k, v (each as large as the output here).
    B, T, H, D = 2, 128, 4, 32
    _, (q, k, v) = gpt_qkv(B, T, H, D, "float32")
    with ember.no_grad():
        before = ember.memory_allocated()
        ember.reset_peak_memory_stats()
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        peak = ember.max_memory_allocated() - before
    one = B * T * H * D * 4
    assert out.shape == (B, H, T, D)
    assert one <= peak < 2 * one
