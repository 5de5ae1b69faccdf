"""Convolution, pooling, normalization, softmax and losses against NumPy references, with
gradients."""

import numpy as np
import pytest
from gradcheck import gradcheck
from numpy_references import conv2d_ref

import ember

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("stride, pad", [(1, 0), (2, 1)])
def test_conv2d(stride, pad):
    x, w, b = RNG.standard_normal((2, 3, 6, 6)), RNG.standard_normal((4, 3, 3, 3)), RNG.random(4)
    out = ember.conv2d(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride=stride,
                       padding=pad)
    np.testing.assert_allclose(out.numpy(), conv2d_ref(x, w, b, stride, pad), rtol=1e-5,
                               atol=1e-5)
    gradcheck(lambda x, w, b: ember.conv2d(x, w, b, stride, pad), x[:1, :, :5, :5] / 2,
              w[:2] / 2, b[:2])
    assert ember.conv2d(ember.tensor(x), ember.tensor(w), padding="same").shape == (2, 4, 6, 6)


def test_pooling():
    x = RNG.standard_normal((2, 3, 4, 6))
    t = ember.tensor(x)
    ref_max = x.reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(ember.max_pool2d(t, 2).numpy(), ref_max)
    values, indices = ember.max_pool2d(t, 2, return_indices=True)
    assert indices.dtype == ember.int64 and values.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(ember.avg_pool2d(t, 2).numpy(),
                               x.reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(ember.adaptive_avg_pool2d(t, 1).numpy(),
                               x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
    gradcheck(lambda x: ember.max_pool2d(x, 2), x[:1, :1])
    gradcheck(lambda x: ember.avg_pool2d(x, (2, 3)), x[:1, :1])


@pytest.mark.parametrize("kernel, stride, dilation",
                         [(2, None, 2), (2, 2, 2), (3, 1, 2), (2, 1, 3)])
def test_max_pool2d_with_dilation(kernel, stride, dilation):
    # Window (i, j) takes x[s*i + d*a, s*j + d*b] for a, b < kernel. 2x2 windows at stride 2 have
    # a fast path on the CPU, which must not take four neighbours when the taps are dilated.
    x = RNG.standard_normal((2, 3, 9, 10))
    s = stride or kernel
    span = dilation * (kernel - 1) + 1
    ho, wo = (9 - span) // s + 1, (10 - span) // s + 1
    taps = [x[:, :, dilation * a:dilation * a + s * (ho - 1) + 1:s,
              dilation * b:dilation * b + s * (wo - 1) + 1:s]
            for a in range(kernel) for b in range(kernel)]
    out = ember.max_pool2d(ember.tensor(x), kernel, stride, dilation=dilation)
    np.testing.assert_array_equal(out.numpy(), np.max(taps, axis=0))
    gradcheck(lambda v: ember.max_pool2d(v, kernel, stride, dilation=dilation), x[:1, :1])


def test_softmax_and_log_softmax():
    x = RNG.standard_normal((3, 5))
    e = np.exp(x - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(ember.tensor(x).softmax(1).numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(ember.log_softmax(ember.tensor(x), -1).numpy(), np.log(ref),
                               rtol=1e-6)
    gradcheck(lambda x: ember.softmax(x, 1), x)
    gradcheck(lambda x: ember.log_softmax(x, 0), x)


def test_losses():
    logits, target = RNG.standard_normal((4, 3)), np.array([0, 2, 1, 2])
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ce = ember.cross_entropy(ember.tensor(logits), ember.tensor(target))
    np.testing.assert_allclose(ce.item(), -lp[np.arange(4), target].mean(), rtol=1e-6)
    nll = ember.nll_loss(ember.tensor(lp), ember.tensor(target), reduction="sum")
    np.testing.assert_allclose(nll.item(), -lp[np.arange(4), target].sum(), rtol=1e-6)
    gradcheck(lambda x: ember.cross_entropy(x, ember.tensor(target)), logits)
    a, b = RNG.standard_normal(5), RNG.standard_normal(5)
    np.testing.assert_allclose(ember.mse_loss(ember.tensor(a), ember.tensor(b)).item(),
                               ((a - b) ** 2).mean(), rtol=1e-6)
    np.testing.assert_allclose(ember.l1_loss(ember.tensor(a), ember.tensor(b)).item(),
                               np.abs(a - b).mean(), rtol=1e-6)
    y = (b > 0).astype(np.float64)
    bce = -(y * np.log(1 / (1 + np.exp(-a))) + (1 - y) * np.log(1 - 1 / (1 + np.exp(-a))))
    np.testing.assert_allclose(
        ember.binary_cross_entropy_with_logits(ember.tensor(a), ember.tensor(y)).item(),
        bce.mean(), rtol=1e-6)
    gradcheck(lambda x, t: ember.mse_loss(x, t), a, b)


def test_layer_norm_batch_norm_dropout():
    x = RNG.standard_normal((4, 3, 5))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ember.layer_norm(ember.tensor(x), [5]).numpy(), ref, rtol=1e-5,
                               atol=1e-6)
    gradcheck(lambda x, w, b: ember.layer_norm(x, [5], w, b), x[:2], np.ones(5), np.zeros(5),
              atol=1e-5)
    mean, var = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    out = ember.batch_norm(ember.tensor(x), mean, var, training=True)
    m, v = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x - m) / np.sqrt(v + 1e-5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean.numpy(), 0.1 * x.mean((0, 2)), rtol=1e-5)
    d = ember.dropout(ember.ones(10000), 0.5)
    assert set(np.unique(d.numpy())) <= {0.0, 2.0} and abs(d.numpy().mean() - 1) < 0.1
    assert ember.dropout(ember.ones(3), 0.5, training=False).tolist() == [1.0] * 3
