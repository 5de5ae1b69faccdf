"""nn.MultiheadAttention against a NumPy reimplementation of PyTorch's formula: batch_first and
not, unbatched input, key_padding_mask and attn_mask (bool and float, 2-D and per head),
is_causal, need_weights (averaged and per head) and the fused path giving the same output,
kdim/vdim, gradients, and dropout only in training."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn

RNG = np.random.default_rng(5)


def mha_ref(m, query, key, value, kpm=None, attn_mask=None, causal=False):
    """PyTorch's multi-head attention in float64 over [L, N, E] inputs: (output [L, N, E],
    weights [N, H, L, S]). Bool masks: True means *not* attended."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    if m.in_proj_weight is not None:
        w = m.in_proj_weight.detach().numpy()
        wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
    else:
        projections = (m.q_proj_weight, m.k_proj_weight, m.v_proj_weight)
        wq, wk, wv = (p.detach().numpy() for p in projections)
    b = m.in_proj_bias.detach().numpy() if m.in_proj_bias is not None else np.zeros(3 * e)
    L, N, _ = query.shape
    S = key.shape[0]

    def heads(x, w, bias, n):  # [n, N, *] -> [N, H, n, d]
        return (x @ w.T + bias).reshape(n, N, h, d).transpose(1, 2, 0, 3)

    q, k, v = heads(query, wq, b[:e], L), heads(key, wk, b[e:2 * e], S), heads(value, wv,
                                                                               b[2 * e:], S)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if attn_mask is not None:
        am = attn_mask.reshape(N, h, L, S) if attn_mask.ndim == 3 else attn_mask
        s = np.where(am, -np.inf, s) if am.dtype == bool else s + am
    if kpm is not None:
        km = kpm[:, None, None, :]
        s = np.where(km, -np.inf, s) if km.dtype == bool else s + km
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(2, 0, 1, 3).reshape(L, N, e)
    o = o @ m.out_proj.weight.detach().numpy().T
    if m.out_proj.bias is not None:
        o = o + m.out_proj.bias.detach().numpy()
    return o, p


def make(e=8, h=2, **kw):
    ember.manual_seed(0)
    m = nn.MultiheadAttention(e, h, dtype=ember.float64, **kw)
    with ember.no_grad():  # non-zero biases, so that they are tested too
        if m.in_proj_bias is not None:
            m.in_proj_bias.copy_(ember.tensor(RNG.standard_normal(3 * e)))
            m.out_proj.bias.copy_(ember.tensor(RNG.standard_normal(e)))
    return m


@pytest.mark.parametrize("batch_first", [False, True])
def test_matches_the_formula_with_and_without_weights(batch_first):
    m = make(batch_first=batch_first)
    L, S, N = 5, 7, 3
    q, k, v = RNG.standard_normal((L, N, 8)), RNG.standard_normal((S, N, 8)), \
        RNG.standard_normal((S, N, 8))

    def arg(x):
        return ember.tensor(x.transpose(1, 0, 2) if batch_first else x)

    want, p = mha_ref(m, q, k, v)
    out, w = m(arg(q), arg(k), arg(v))
    got = out.detach().numpy().transpose(1, 0, 2) if batch_first else out.detach().numpy()
    np.testing.assert_allclose(got, want, atol=1e-10)
    np.testing.assert_allclose(w.detach().numpy(), p.mean(1), atol=1e-12)
    out2, w2 = m(arg(q), arg(k), arg(v), need_weights=False)
    assert w2 is None
    np.testing.assert_allclose(out2.detach().numpy(), out.detach().numpy(), atol=1e-10)
    _, w3 = m(arg(q), arg(k), arg(v), average_attn_weights=False)
    np.testing.assert_allclose(w3.detach().numpy(), p, atol=1e-12)


@pytest.mark.parametrize("kind", [bool, float])
def test_masks(kind):
    m = make(batch_first=True)
    L, S, N, H = 4, 6, 2, 2
    q, k, v = (RNG.standard_normal((n, N, 8)) for n in (L, S, S))
    if kind is bool:
        kpm = np.zeros((N, S), bool)
        kpm[0, -2:] = True
        am2 = np.zeros((L, S), bool)
        am2[:, 1] = True
        am3 = RNG.random((N * H, L, S)) > 0.8
        am3[..., 0] = False  # every row keeps a key
    else:
        kpm, am2, am3 = RNG.standard_normal((N, S)), RNG.standard_normal((L, S)), \
            RNG.standard_normal((N * H, L, S))
    for am in (am2, am3):
        want, _ = mha_ref(m, q, k, v, kpm=kpm, attn_mask=am)
        for need in (True, False):
            out, _ = m(*(ember.tensor(x.transpose(1, 0, 2)) for x in (q, k, v)),
                       key_padding_mask=ember.tensor(kpm), attn_mask=ember.tensor(am),
                       need_weights=need)
            np.testing.assert_allclose(out.detach().numpy().transpose(1, 0, 2), want, atol=1e-10)


def test_causal_unbatched_and_kdim_vdim():
    m = make(kdim=3, vdim=5)
    assert m.in_proj_weight is None
    L = 6
    q, k, v = RNG.standard_normal((L, 8)), RNG.standard_normal((L, 3)), \
        RNG.standard_normal((L, 5))
    want, p = mha_ref(m, q[:, None], k[:, None], v[:, None], causal=True)
    for need in (True, False):
        out, w = m(ember.tensor(q), ember.tensor(k), ember.tensor(v), is_causal=True,
                   need_weights=need)
        assert out.shape == (L, 8)
        np.testing.assert_allclose(out.detach().numpy(), want[:, 0], atol=1e-10)
    np.testing.assert_allclose(
        m(ember.tensor(q), ember.tensor(k), ember.tensor(v), is_causal=True)[1].detach().numpy(),
        p.mean(1)[0], atol=1e-12)


def test_gradients_reach_every_parameter():
    m = make(batch_first=True)
    x = ember.tensor(RNG.standard_normal((2, 5, 8)), requires_grad=True)
    out, _ = m(x, x, x, need_weights=False, is_causal=True)
    out.sum().backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and np.abs(p.grad.detach().numpy()).sum() > 0, name
    assert x.grad is not None
    assert ember.autograd.gradcheck(
        lambda x: m(x, x, x, need_weights=False, is_causal=True)[0],
        (ember.tensor(RNG.standard_normal((1, 3, 8)), requires_grad=True),))


def test_dropout_only_in_training():
    m = make(dropout=0.5, batch_first=True)
    x = ember.tensor(RNG.standard_normal((2, 5, 8)))
    m.eval()
    a, _ = m(x, x, x, need_weights=False)
    b, _ = m(x, x, x, need_weights=False)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c, _ = m(x, x, x, need_weights=False)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_errors():
    with pytest.raises(ember.ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    m = make(batch_first=True)
    x = ember.tensor(RNG.standard_normal((2, 5, 8)))
    with pytest.raises(ember.ShapeError, match="key is"):
        m(x, ember.tensor(RNG.standard_normal((2, 5, 7))), x)
    with pytest.raises(ember.ShapeError, match="key_padding_mask"):
        m(x, x, x, key_padding_mask=ember.tensor(np.zeros((2, 4), bool)))
