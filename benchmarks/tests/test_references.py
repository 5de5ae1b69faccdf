"""The hand-written NumPy references compute what PyTorch computes (so a ratio against them
compares equal work). Skipped where PyTorch is not installed."""

import numpy as np
import pytest

from families import conv_pool, normalization, softmax_loss
from harness.references import NumpyReference

torch = pytest.importorskip("torch")
F = torch.nn.functional


def inputs(*shapes):
    """The arrays a reference builds first, from the same seeded generator."""
    r = NumpyReference()
    return [r.uniform(*s) for s in shapes]


def grads_of(fn, arrays, grad_out):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*ts)
    y.backward(torch.tensor(grad_out))
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts]


def assert_close(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_conv2d_forward_and_backward():
    p = dict(n=2, c=3, h=9, w=8, o=4, kernel=3)
    x, w, b, g = inputs((2, 3, 9, 8), (4, 3, 3, 3), (4,), (2, 4, 7, 6))
    assert_close(conv_pool.conv2d_fwd_bwd(NumpyReference(), p)(),
                 grads_of(F.conv2d, [x, w, b], g))


def test_max_pool2d_forward_and_backward():
    p = dict(n=2, c=3, h=9, w=8, kernel=2)
    x, g = inputs((2, 3, 9, 8), (2, 3, 4, 4))
    assert_close(conv_pool.max_pool2d_fwd_bwd(NumpyReference(), p)(),
                 grads_of(lambda t: F.max_pool2d(t, 2), [x], g))


def test_batch_norm_and_layer_norm():
    p = dict(n=4, c=3, h=5, w=5)
    x, w, b, g = inputs((4, 3, 5, 5), (3,), (3,), (4, 3, 5, 5))
    assert_close(normalization.batch_norm_numpy(NumpyReference(), p)(),
                 grads_of(lambda *t: F.batch_norm(t[0], None, None, t[1], t[2], training=True),
                          [x, w, b], g))
    p = dict(rows=6, cols=7)
    x, w, b, g = inputs((6, 7), (7,), (7,), (6, 7))
    assert_close(normalization.layer_norm_numpy(NumpyReference(), p)(),
                 grads_of(lambda *t: F.layer_norm(t[0], (7,), t[1], t[2]), [x, w, b], g))


def test_softmax_and_cross_entropy():
    (x,) = inputs((5, 4))
    r = NumpyReference()
    ours = softmax_loss.softmax(r, dict(rows=5, cols=4))()
    np.testing.assert_allclose(ours, F.softmax(torch.tensor(x), -1).numpy(), atol=1e-6)
    r = NumpyReference()
    logits, target = r.uniform(5, 4), r.randint(4, 5)
    loss, grad = softmax_loss.cross_entropy_fwd_bwd(NumpyReference(), dict(batch=5, classes=4))()
    t = torch.tensor(logits, requires_grad=True)
    expected = F.cross_entropy(t, torch.tensor(target))
    expected.backward()
    np.testing.assert_allclose(loss, expected.item(), atol=1e-6)
    np.testing.assert_allclose(grad, t.grad.numpy(), atol=1e-6)
