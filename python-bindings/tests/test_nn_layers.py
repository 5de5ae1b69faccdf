"""Every layer and loss of ember.nn against NumPy (forward), and the gradients of the layers'
parameters against float64 central differences."""

import math

import numpy as np
import pytest
from numpy_references import conv2d_ref

import ember
from ember import nn
from ember.nn import functional as F

rng = np.random.default_rng(0)


def t(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def n(x):
    return x.detach().numpy()


def check_param_grads(module, x, eps=1e-6, tol=1e-5):
    """d sum(module(x) * w) / d p for every parameter p, from backward vs central differences."""
    module.double()
    out = module(x)
    w = ember.tensor(rng.standard_normal(out.shape))
    (out * w).sum().backward()
    for name, p in module.named_parameters():
        values = p.detach().numpy()  # shares p's memory
        numeric = np.zeros_like(values)
        for i in np.ndindex(values.shape):
            old = values[i]
            values[i] = old + eps
            with ember.no_grad():
                plus = float((module(x) * w).sum())
            values[i] = old - eps
            with ember.no_grad():
                minus = float((module(x) * w).sum())
            values[i] = old
            numeric[i] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(n(p.grad), numeric, rtol=tol, atol=tol, err_msg=name)


def test_linear():
    m = nn.Linear(4, 3)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    ref = x @ n(m.weight).T + n(m.bias)
    np.testing.assert_allclose(n(m(t(x))), ref, rtol=1e-5, atol=1e-6)
    assert nn.Linear(4, 3, bias=False).bias is None
    check_param_grads(m, t(rng.standard_normal((2, 4))))


def test_default_init_bounds():
    ember.manual_seed(0)
    m = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)  # kaiming_uniform(a=sqrt(5)) gives the same bound as the bias
    assert np.abs(n(m.weight)).max() <= bound and np.abs(n(m.weight)).max() > 0.9 * bound
    assert np.abs(n(m.bias)).max() <= bound
    c = nn.Conv2d(3, 8, 3)
    assert np.abs(n(c.weight)).max() <= 1 / math.sqrt(27)


def test_conv2d():
    m = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    x = rng.standard_normal((2, 2, 7, 7)).astype(np.float32)
    ref = conv2d_ref(x, n(m.weight), n(m.bias), stride=2, pad=1)
    np.testing.assert_allclose(n(m(t(x))), ref, rtol=1e-4, atol=1e-5)
    check_param_grads(nn.Conv2d(2, 2, 2), t(rng.standard_normal((1, 2, 3, 3))))


def test_batchnorm_training_eval_and_running_stats():
    m = nn.BatchNorm2d(3, momentum=0.2)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32) * 2 + 1
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(n(m(t(x))), ref, rtol=1e-4, atol=1e-5)
    unbiased = x.var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(n(m.running_mean), 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n(m.running_var), 0.8 + 0.2 * unbiased, rtol=1e-5)
    assert int(m.num_batches_tracked) == 1
    m.eval()
    rm, rv = n(m.running_mean), n(m.running_var)
    ref = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(n(m(t(x))), ref, rtol=1e-4, atol=1e-5)
    assert int(m.num_batches_tracked) == 1
    b1 = nn.BatchNorm1d(3)
    x1 = rng.standard_normal((6, 3)).astype(np.float32)
    ref1 = (x1 - x1.mean(0)) / np.sqrt(x1.var(0) + 1e-5)
    np.testing.assert_allclose(n(b1(t(x1))), ref1, rtol=1e-4, atol=1e-5)
    check_param_grads(nn.BatchNorm1d(2), t(rng.standard_normal((4, 2))))


def test_layernorm():
    m = nn.LayerNorm(4)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(n(m(t(x))), ref, rtol=1e-4, atol=1e-5)
    check_param_grads(nn.LayerNorm(3), t(rng.standard_normal((2, 3))))


def test_pooling_flatten():
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    blocks = x.reshape(2, 3, 2, 2, 2, 2)
    np.testing.assert_allclose(n(nn.MaxPool2d(2)(t(x))), blocks.max(axis=(3, 5)))
    np.testing.assert_allclose(n(nn.AvgPool2d(2)(t(x))), blocks.mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(n(nn.AdaptiveAvgPool2d(1)(t(x))), x.mean(axis=(2, 3),
                               keepdims=True), rtol=1e-5, atol=1e-6)
    assert nn.Flatten()(t(x)).shape == (2, 48)
    assert F.flatten(t(x), 1).shape == (2, 48)


def test_dropout():
    x = ember.ones(1000)
    m = nn.Dropout(0.25)
    y = n(m(x))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)} and 0.6 < (y > 0).mean() < 0.9
    m.eval()
    np.testing.assert_array_equal(n(m(x)), np.ones(1000))
    np.testing.assert_array_equal(n(F.dropout(x, 0.5, training=False)), np.ones(1000))


def test_embedding():
    m = nn.Embedding(5, 3)
    idx = np.array([[0, 4], [2, 2]])
    np.testing.assert_array_equal(n(m(t(idx))), n(m.weight)[idx])
    m.double()
    out = m(t(idx))
    out.sum().backward()
    expected = np.zeros((5, 3))
    np.add.at(expected, idx.ravel(), 1.0)
    np.testing.assert_array_equal(n(m.weight.grad), expected)


@pytest.mark.parametrize("module,ref", [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.GELU(), lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (nn.LogSoftmax(dim=1), lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
    (nn.Identity(), lambda x: x),
])
def test_activations(module, ref):
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(n(module(t(x))), ref(x), rtol=1e-6, atol=1e-7)


def test_losses():
    logits = rng.standard_normal((4, 3))
    target = np.array([0, 2, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ce = -logp[np.arange(4), target].mean()
    np.testing.assert_allclose(float(nn.CrossEntropyLoss()(t(logits), t(target))), ce, rtol=1e-6)
    np.testing.assert_allclose(float(F.cross_entropy(t(logits), t(target))), ce, rtol=1e-6)
    np.testing.assert_allclose(float(nn.NLLLoss()(t(logp), t(target))), ce, rtol=1e-6)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(float(nn.MSELoss()(t(a), t(b))), ((a - b) ** 2).mean())
    np.testing.assert_allclose(float(nn.L1Loss(reduction="sum")(t(a), t(b))), np.abs(a - b).sum())
    y = (rng.random((3, 2)) > 0.5).astype(np.float64)
    bce = np.mean(np.log1p(np.exp(-a)) + (1 - y) * a)
    np.testing.assert_allclose(float(nn.BCEWithLogitsLoss()(t(a), t(y))), bce, rtol=1e-6)


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and len(seq[:2]) == 2
    seq.append(nn.Sigmoid())
    assert seq(ember.zeros(4, 2)).shape == (4, 1)
    lst = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(lst) == 3 and len(list(lst.parameters())) == 6
    d = nn.ModuleDict({"a": nn.Linear(1, 1)})
    d["b"] = nn.ReLU()
    assert list(d.keys()) == ["a", "b"] and "b" in d
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias"]
