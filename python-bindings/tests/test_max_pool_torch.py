"""Max pooling against PyTorch: the int64 indices return_indices gives (Ember's backward keeps a
compact form of its own, the window offsets, and makes these from it only when asked) and the
gradients, with ties, NaN, -inf, padding, dilation, stride, ceil_mode, odd sizes, non-contiguous
input and windows past 256 elements."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# (shape, kernel, stride, padding, dilation, ceil_mode)
GEOMETRIES = [
    ((2, 3, 9, 11), 2, None, 0, 1, False),  # the usual pool, odd sizes
    ((2, 3, 9, 11), 2, 2, 1, 1, True),
    ((1, 2, 9, 8), (3, 2), (2, 1), (1, 0), 2, False),
    ((1, 2, 7, 7), 3, 1, 1, 1, True),
    ((1, 2, 21, 19), (17, 16), (2, 3), 8, 1, True),  # 272 taps: the int32 form
    ((1, 1, 16, 16), 16, 1, 0, 1, False),  # 256 taps: the last uint8 offset
]


def inputs(shape, seed):
    """Values in {0, 1, 2} (ties in most windows) with a NaN and a -inf planted."""
    x = np.floor(np.random.default_rng(seed).uniform(0, 3, shape))
    flat = x.reshape(-1)
    flat[5], flat[-3] = np.nan, -np.inf
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_indices_and_gradients_match_torch(geometry, dtype):
    shape, kernel, stride, padding, dilation, ceil_mode = geometry
    x = inputs(shape, 1).astype(dtype)
    g = np.random.default_rng(2)
    args = (kernel, stride, padding, dilation, ceil_mode)

    tx = torch.tensor(x, requires_grad=True)
    t_values, t_indices = torch.nn.functional.max_pool2d(tx, *args, return_indices=True)
    grad = g.standard_normal(tuple(t_values.shape)).astype(dtype)
    t_values.backward(torch.tensor(grad))

    ex = ember.tensor(x, requires_grad=True)
    e_values, e_indices = ember.nn.functional.max_pool2d(ex, *args, return_indices=True)
    e_values.backward(ember.tensor(grad))

    assert e_indices.dtype == ember.int64
    np.testing.assert_array_equal(e_indices.numpy(), t_indices.numpy())
    np.testing.assert_array_equal(e_values.detach().numpy(), t_values.detach().numpy())
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    # The indices returned feed max_pool2d_backward as PyTorch's do max_unpool's scatter.
    np.testing.assert_allclose(
        ember.max_pool2d_backward(ember.tensor(grad), e_indices, list(shape)).numpy(),
        tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_module_and_non_contiguous_input_match_torch():
    x = inputs((2, 7, 9, 3), 3).astype("float32")  # NHWC, seen as NCHW below
    tx = torch.tensor(x).permute(0, 3, 1, 2).requires_grad_()
    t_values, t_indices = torch.nn.MaxPool2d(3, 2, 1, return_indices=True)(tx)
    t_values.sum().backward()
    ex = ember.tensor(x).permute(0, 3, 1, 2)
    ex.requires_grad_()
    e_values, e_indices = ember.nn.MaxPool2d(3, 2, 1, return_indices=True)(ex)
    e_values.sum().backward()
    np.testing.assert_array_equal(e_indices.numpy(), t_indices.numpy())
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())
