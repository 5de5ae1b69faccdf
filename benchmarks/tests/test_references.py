"""The references compute what Ember's cases compute, so a ratio against them compares equal
work: the hand-written NumPy references what PyTorch computes, the direct ATen calls of the
PyTorch references what its autograd computes, its out= forms what its allocating ones return.
Skipped where PyTorch is not installed."""

import numpy as np
import pytest

from families import conv_pool, elementwise, normalization, softmax_loss, training
from harness import machine
from harness.references import NumpyReference, TorchReference

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
    assert_close(conv_pool.conv2d_fwd_bwd_numpy(NumpyReference(), p)(),
                 grads_of(F.conv2d, [x, w, b], g))


def test_max_pool2d_forward_and_backward():
    p = dict(n=2, c=3, h=9, w=8, kernel=2)
    x, g = inputs((2, 3, 9, 8), (2, 3, 4, 4))
    assert_close(conv_pool.max_pool2d_fwd_bwd_numpy(NumpyReference(), p)(),
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
    loss, grad = softmax_loss.cross_entropy_fwd_bwd_numpy(NumpyReference(),
                                                          dict(batch=5, classes=4))()
    t = torch.tensor(logits, requires_grad=True)
    expected = F.cross_entropy(t, torch.tensor(target))
    expected.backward()
    np.testing.assert_allclose(loss, expected.item(), atol=1e-6)
    np.testing.assert_allclose(grad, t.grad.numpy(), atol=1e-6)


def test_numpy_gelu_is_torch_tanh_gelu():
    (x,) = inputs((1000,))
    ours = elementwise.gelu_numpy(NumpyReference(), {"n": 1000})()
    np.testing.assert_allclose(ours, F.gelu(torch.tensor(x), approximate="tanh").numpy(),
                               atol=1e-6)


# The PyTorch references call ATen's forward and backward ops directly; each must compute what
# F.op(...).backward(grad_out) computes, on every device at hand.
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def torch_inputs(device, *shapes):
    """The tensors a PyTorch reference builds first, from the same seeded generator."""
    r = TorchReference(torch, device)
    return [r.uniform(*s) for s in shapes]


def autograd(fn, tensors, grad_out):
    """fn's output and the gradients of `tensors` through loss.backward(), on copies."""
    leaves = [t.clone().requires_grad_() for t in tensors]
    y = fn(*leaves)
    y.backward(grad_out)
    return [y.detach()] + [t.grad for t in leaves]


def assert_same(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_aten_matches_autograd(device):
    p = dict(n=2, c=3, h=9, w=8, o=4, kernel=3)
    x, w, b, g = torch_inputs(device, (2, 3, 9, 8), (4, 3, 3, 3), (4,), (2, 4, 7, 6))
    assert_same(conv_pool.conv2d_fwd_bwd_torch(TorchReference(torch, device), p)(),
                autograd(F.conv2d, [x, w, b], g))


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool2d_aten_matches_autograd(device):
    p = dict(n=2, c=3, h=9, w=8, kernel=2)
    x, g = torch_inputs(device, (2, 3, 9, 8), (2, 3, 4, 4))
    assert_same(conv_pool.max_pool2d_fwd_bwd_torch(TorchReference(torch, device), p)(),
                autograd(lambda t: F.max_pool2d(t, 2), [x], g))


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_aten_matches_autograd(device):
    p = dict(n=4, c=3, h=5, w=5)
    x, w, b, mean, var, g = torch_inputs(device, (4, 3, 5, 5), (3,), (3,), (3,), (3,),
                                         (4, 3, 5, 5))
    running = [mean, var.abs()]
    ours = normalization.batch_norm_torch(TorchReference(torch, device), p)()
    assert_same(ours, autograd(lambda *t: F.batch_norm(t[0], *running, t[1], t[2], training=True),
                               [x, w, b], g))


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_aten_matches_autograd(device):
    p = dict(rows=6, cols=7)
    x, w, b, g = torch_inputs(device, (6, 7), (7,), (7,), (6, 7))
    assert_same(normalization.layer_norm_torch(TorchReference(torch, device), p)(),
                autograd(lambda *t: F.layer_norm(t[0], (7,), t[1], t[2]), [x, w, b], g))


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_aten_matches_autograd(device):
    r = TorchReference(torch, device)
    logits, target = r.uniform(5, 4), r.randint(4, 5)
    loss, grad = softmax_loss.cross_entropy_fwd_bwd_torch(TorchReference(torch, device),
                                                          dict(batch=5, classes=4))()
    assert_same([loss, grad], autograd(lambda t: F.cross_entropy(t, target), [logits], None))


@pytest.mark.parametrize("build,allocating", [
    (elementwise.binary("add"), torch.add),
    (elementwise.binary("multiply"), torch.mul),
    (elementwise.relu_torch, lambda a, b: torch.relu(a)),
    (elementwise.gelu_torch, lambda a, b: F.gelu(a, approximate="tanh")),
])
@pytest.mark.parametrize("device", DEVICES)
def test_torch_elementwise_with_out_computes_the_allocating_form(build, allocating, device):
    a, b = torch_inputs(device, (100,), (100,))  # relu and gelu draw only a
    call = build(TorchReference(torch, device), {"n": 100, "approximate": "tanh"})
    assert_same([call(), call()], [allocating(a, b)] * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_training_layer_ops_match_autograd(device):
    conv = dict(n=2, c=3, h=9, w=8, o=4, kernel=3)
    x, w, b, g = torch_inputs(device, (2, 3, 9, 8), (4, 3, 3, 3), (4,), (2, 4, 7, 6))
    expected = autograd(F.conv2d, [x, w, b], g)
    r = TorchReference(torch, device)
    assert_same([training.conv2d_forward_torch(r, conv)()], expected[:1])
    assert_same(training.conv2d_backward_torch(TorchReference(torch, device), conv)(),
                expected[1:])
    act = dict(n=2, c=3, h=5, w=5)
    x, g = torch_inputs(device, (2, 3, 5, 5), (2, 3, 5, 5))
    y, grad_x = autograd(torch.relu, [x], g)
    assert_same([training.relu_forward_torch(TorchReference(torch, device), act)()], [y])
    relu_backward = training.relu_backward_torch(TorchReference(torch, device), act)
    assert_same([relu_backward(), relu_backward()], [grad_x] * 2)  # out= reused


def test_settings_name_what_the_torch_figures_depend_on():
    assert machine.torch_settings("cpu", torch) == f"torch.threads={torch.get_num_threads()}"
    flags = dict(kv.split("=") for kv in machine.torch_settings("cuda", torch).split())
    assert flags.keys() == {"matmul.tf32", "cudnn.tf32", "cudnn.benchmark"}
    assert flags["cudnn.benchmark"] == ("on" if torch.backends.cudnn.benchmark else "off")
    assert machine.torch_settings("cpu", None) == ""
