"""Type promotion with 0-d tensors (a 0-d tensor counts only by its kind beside one with dims, as
a Python number does), cat and stack across dtypes, and clamp's gradient at its bounds, as
PyTorch; gradients against float64 finite differences."""

import numpy as np
import pytest
from gradcheck import gradcheck

import ember

RNG = np.random.default_rng(1)


# ---- type promotion with 0-d tensors, cat across dtypes ----

@pytest.mark.parametrize("a_dtype, b_dtype, want", [
    ("float32", "float64", "float32"),
    ("int32", "int64", "int32"),
    ("int32", "float64", "float64"),  # a higher kind: the 0-d tensor decides
    ("bool", "int32", "int32"),
    ("float16", "float64", "float16"),
    ("uint8", "int8", "uint8"),
])
def test_a_0d_tensor_promotes_by_its_kind_like_a_scalar(a_dtype, b_dtype, want):
    a = ember.ones(3, dtype=a_dtype)
    b = ember.ones((), dtype=b_dtype)
    for y in (a + b, b * a, ember.maximum(a, b), ember.where(a > 0, a, b)):
        assert str(y.dtype) == f"ember.{want}"
    assert str((ember.ones((), dtype=a_dtype) + b).dtype) == str(
        (ember.ones(1, dtype=a_dtype) + ember.ones(1, dtype=b_dtype)).dtype
    )  # two 0-d tensors promote as tensors with dims do


def test_the_gradient_of_a_promoted_0d_operand_has_its_dtype_and_shape():
    x = ember.tensor(RNG.standard_normal(4).astype(np.float32), requires_grad=True)
    s = ember.tensor(0.5, dtype=ember.float64, requires_grad=True)
    y = x * s + s
    assert y.dtype == ember.float32
    y.sum().backward()
    assert s.grad.dtype == ember.float64 and s.grad.shape == ()
    np.testing.assert_allclose(s.grad.item(), x.detach().numpy().sum() + 4, rtol=1e-6)
    assert x.grad.dtype == ember.float32
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 0.5))


def test_cat_and_stack_promote_and_send_gradients_back_in_each_dtype():
    a = ember.tensor([1.0, 2.0], dtype=ember.float32, requires_grad=True)
    b = ember.tensor([3.0], dtype=ember.float64, requires_grad=True)
    i = ember.tensor([4], dtype=ember.int32)
    y = ember.cat([a, b, i])
    assert y.dtype == ember.float64 and y.tolist() == [1.0, 2.0, 3.0, 4.0]
    (y * ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)).sum().backward()
    assert a.grad.dtype == ember.float32 and a.grad.tolist() == [1.0, 2.0]
    assert b.grad.dtype == ember.float64 and b.grad.tolist() == [3.0]
    assert ember.stack([i, ember.tensor([1], dtype=ember.int64)]).dtype == ember.int64


# ---- clamp's gradient at its bounds ----

def test_clamp_gradient_is_zero_at_the_bounds_as_pytorch():
    # PyTorch (2.x releases of 2026) gives a number-bounded clamp the minimum-norm subgradient at
    # a bound: 0, as relu at 0. Inside the bounds 1, outside 0.
    x = ember.tensor([0.0, 1.0, 1.5, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    x.clamp(1.0, 2.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    for kwargs, want in (({"min": 1.0}, [0, 0, 1, 1, 1]), ({"max": 2.0}, [1, 1, 1, 0, 0])):
        x.grad = None
        ember.clamp(x, **kwargs).sum().backward()
        assert x.grad.tolist() == want
    gradcheck(lambda v: v.clamp(-0.5, 0.5), np.array([-1.0, -0.2, 0.3, 0.9]))
