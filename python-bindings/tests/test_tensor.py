"""ember.Tensor: construction, creation functions, attributes, conversions and printing."""

import numpy as np
import pytest

import ember


def test_tensor_from_lists_infers_dtypes_as_pytorch():
    assert ember.tensor([1.0, 2.0]).dtype == ember.float32
    assert ember.tensor([[1, 2], [3, 4]]).dtype == ember.int64
    assert ember.tensor([True, False]).dtype == ember.bool
    assert ember.tensor([1, 2.5]).dtype == ember.float32
    assert ember.tensor(3).shape == ()
    assert ember.tensor([]).shape == (0,)
    assert ember.tensor(np.arange(3, dtype=np.int16)).dtype == ember.int16
    assert ember.tensor(np.float32(1.5)).item() == 1.5


def test_tensor_values_and_dtype_argument():
    t = ember.tensor([[1, 2], [3, 4]], dtype="float64")
    assert t.dtype == ember.float64 and t.dtype == np.float64 and t.dtype == "float64"
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert ember.tensor(t).tolist() == t.tolist()


def test_ragged_lists_are_a_value_error():
    with pytest.raises(ValueError, match="ragged"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor(["a"])


@pytest.mark.parametrize("name, ref", [("zeros", np.zeros), ("ones", np.ones)])
def test_constant_creation(name, ref):
    fn = getattr(ember, name)
    np.testing.assert_array_equal(fn(2, 3).numpy(), ref((2, 3)))
    np.testing.assert_array_equal(fn((2, 3)).numpy(), ref((2, 3)))
    assert fn(2, dtype=ember.int32).dtype == ember.int32
    assert fn(2, requires_grad=True).requires_grad


def test_creation_functions_match_numpy():
    np.testing.assert_array_equal(ember.full((2, 2), 7).numpy(), np.full((2, 2), 7))
    assert ember.full((2,), 7).dtype == ember.int64
    assert ember.full((2,), 7.0).dtype == ember.float32
    np.testing.assert_array_equal(ember.arange(5).numpy(), np.arange(5))
    assert ember.arange(5).dtype == ember.int64 and ember.arange(5.0).dtype == ember.float32
    np.testing.assert_allclose(ember.arange(1, 2, 0.25).numpy(), np.arange(1, 2, 0.25))
    np.testing.assert_allclose(ember.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(ember.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ember.eye(2, 3).numpy(), np.eye(2, 3))
    x = ember.ones(2, 3, dtype=ember.float64)
    for name in ["zeros_like", "ones_like", "rand_like", "randn_like", "empty_like"]:
        y = getattr(ember, name)(x)
        assert y.shape == (2, 3) and y.dtype == ember.float64
    assert ember.full_like(x, 3).tolist() == [[3.0] * 3] * 2
    assert ember.empty(4).shape == (4,)


def test_random_functions_are_seeded():
    ember.manual_seed(1)
    a = ember.rand(100)
    ember.manual_seed(1)
    np.testing.assert_array_equal(a.numpy(), ember.rand(100).numpy())
    assert 0 <= a.numpy().min() and a.numpy().max() < 1
    assert abs(float(ember.randn(10000).numpy().mean())) < 0.05
    r = ember.randint(3, 7, (1000,))
    assert r.dtype == ember.int64 and r.numpy().min() >= 3 and r.numpy().max() < 7
    assert ember.randint(5, (3,)).numpy().max() < 5
    assert sorted(ember.randperm(6).tolist()) == list(range(6))


def test_attributes():
    x = ember.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24 and len(x) == 2
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12
    assert x.is_contiguous() and x.device == ember.device("cpu") and x.device == "cpu"
    assert x.T.shape == (4, 3, 2)
    assert not x.transpose(0, 1).is_contiguous()
    assert x.transpose(0, 1).contiguous().is_contiguous()


def test_conversions():
    x = ember.tensor([1.5, -2.0])
    assert x.double().dtype == ember.float64
    assert x.half().dtype == ember.float16
    assert x.long().tolist() == [1, -2]
    assert x.int().dtype == ember.int32
    assert x.bool().tolist() == [True, True]
    assert x.to(ember.float64).dtype == ember.float64
    assert x.to("float64").dtype == ember.float64
    assert x.to("cpu") is not None and x.cpu().device == "cpu"
    assert x.to(dtype=ember.int64).dtype == ember.int64
    assert ember.tensor(2.5).item() == 2.5 and float(ember.tensor(2.5)) == 2.5
    assert int(ember.tensor(3)) == 3 and [10, 20][ember.tensor(1)] == 20
    assert bool(ember.tensor([1])) and not bool(ember.tensor(0.0))
    with pytest.raises(ValueError):
        bool(ember.tensor([1, 2]))
    with pytest.raises(ValueError):
        ember.tensor([1, 2]).item()


def test_iteration_and_clone():
    x = ember.tensor([[1, 2], [3, 4]])
    assert [row.tolist() for row in x] == [[1, 2], [3, 4]]
    y = x.clone()
    y += 1
    assert x.tolist() == [[1, 2], [3, 4]]


def test_printing_like_pytorch():
    assert repr(ember.tensor([[1.0, 2.0]])) == "tensor([[1., 2.]])"
    assert repr(ember.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor([True])) == "tensor([True])"
    assert repr(ember.tensor(3.0)) == "tensor(3.)"
    assert repr(ember.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(ember.tensor([1.0], dtype=ember.float64)) == "tensor([1.], dtype=ember.float64)"
    assert repr(ember.zeros(0)) == "tensor([])"
    assert repr(ember.zeros(2, 2)) == "tensor([[0., 0.],\n        [0., 0.]])"
    assert "..." in repr(ember.zeros(2000))
    y = ember.tensor([1.0], requires_grad=True) * 2
    assert "grad_fn=<mul_scalar>" in repr(y)


def test_dtype_and_device_objects():
    assert str(ember.float32) == "ember.float32" and ember.float32.itemsize == 4
    assert ember.dtype("int64") == ember.int64 and ember.dtype(np.int64) == ember.int64
    assert ember.float32.is_floating_point and not ember.int8.is_floating_point
    assert ember.float == ember.float32 and ember.long == ember.int64
    d = ember.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert ember.device("cpu") == "cpu"
    assert len({ember.float32, ember.dtype("float32")}) == 1
    with pytest.raises(TypeError):
        ember.zeros(2, dtype=object)
