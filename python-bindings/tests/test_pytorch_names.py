"""PyTorch's names composed of Ember's ops, against NumPy: isclose/allclose, meshgrid, ravel,
one-argument where, sum/mean with dtype= and axis=, as_tensor, the Tensor.new_* methods and mT,
finfo/iinfo, inference_mode and ember.accelerator."""

import warnings

import numpy as np
import pytest
from gradcheck import gradcheck

import ember

RNG = np.random.default_rng(3)


# ---- isclose / allclose ----

def test_isclose_matches_numpy_with_infinities_and_nans():
    a = np.array([1.0, 1.0 + 1e-9, 1.0 + 1e-3, np.inf, np.inf, -np.inf, np.nan, np.nan, 0.0, 5.0])
    b = np.array([1.0, 1.0, 1.0, np.inf, -np.inf, -np.inf, np.nan, 1.0, 1e-9, np.inf])
    for equal_nan in (False, True):
        got = ember.isclose(ember.tensor(a), ember.tensor(b), equal_nan=equal_nan)
        assert got.dtype == ember.bool
        np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, equal_nan=equal_nan))
    got = ember.isclose(ember.tensor(a), ember.tensor(b), rtol=1e-2, atol=0.0)
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, rtol=1e-2, atol=0.0))


def test_isclose_broadcasts_and_takes_integers():
    a = RNG.standard_normal((3, 1))
    b = a + RNG.standard_normal((1, 4)) * 1e-6
    got = ember.isclose(ember.tensor(a), ember.tensor(b), atol=1e-6)
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, atol=1e-6))
    ints = ember.tensor([1, 2, 2**62])
    np.testing.assert_array_equal(ember.isclose(ints, ember.tensor([1, 3, 2**62])).numpy(),
                                  [True, False, True])


def test_allclose_is_a_python_bool():
    a = ember.tensor([1.0, 2.0])
    assert ember.allclose(a, a + 1e-7) is True
    assert ember.allclose(a, a + 1e-3) is False
    assert ember.allclose(ember.tensor([float("nan")]), ember.tensor([float("nan")]),
                          equal_nan=True)
    assert ember.allclose(ember.zeros(0), ember.zeros(0))


def test_isclose_rejects_what_it_cannot_compare():
    with pytest.raises(ember.DTypeError, match="other is a list"):
        ember.isclose(ember.zeros(2), [0.0, 0.0])
    with pytest.raises(ember.ValueError, match="rtol=-1"):
        ember.isclose(ember.zeros(2), ember.zeros(2), rtol=-1)


# ---- meshgrid ----

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    xs = [RNG.standard_normal(n) for n in (3, 4, 2)]
    for k in (1, 2, 3):
        grids = ember.meshgrid(*[ember.tensor(x) for x in xs[:k]], indexing=indexing)
        expected = np.meshgrid(*xs[:k], indexing=indexing)
        assert len(grids) == k
        for g, e in zip(grids, expected):
            np.testing.assert_array_equal(g.numpy(), e)
    grids = ember.meshgrid([ember.tensor(xs[0]), ember.tensor(xs[1])], indexing=indexing)
    assert grids[0].shape == np.meshgrid(xs[0], xs[1], indexing=indexing)[0].shape


def test_meshgrid_warns_without_indexing_and_uses_ij():
    with pytest.warns(UserWarning, match="indexing"):
        a, b = ember.meshgrid(ember.arange(3), ember.arange(2))
    assert a.shape == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.meshgrid(ember.arange(3), indexing="ij")


def test_meshgrid_gradient_and_errors():
    gradcheck(lambda x, y: ember.meshgrid(x, y, indexing="xy")[0] * 2
              + ember.meshgrid(x, y, indexing="xy")[1], RNG.standard_normal(3),
              RNG.standard_normal(2))
    with pytest.raises(ember.ValueError, match="'ji'"):
        ember.meshgrid(ember.arange(2), indexing="ji")
    with pytest.raises(ember.ShapeError, match=r"\[2, 2\]"):
        ember.meshgrid(ember.zeros(2, 2), indexing="ij")


# ---- ravel, where(cond), mT ----

def test_ravel_of_contiguous_and_strided_tensors():
    a = RNG.standard_normal((3, 4))
    t = ember.tensor(a)
    np.testing.assert_array_equal(ember.ravel(t).numpy(), a.ravel())
    np.testing.assert_array_equal(t.T.ravel().numpy(), a.T.ravel())
    assert ember.ravel(ember.tensor(2.0)).shape == (1,)
    gradcheck(lambda x: x.T.ravel(), a)


def test_where_with_one_argument_gives_indices_per_dim():
    a = RNG.standard_normal((3, 4)) > 0
    got = ember.where(ember.tensor(a))
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, np.where(a)):
        np.testing.assert_array_equal(g.numpy(), e)
    assert all(g.dtype == ember.int64 for g in got)
    empty = ember.where(ember.zeros(5, dtype=ember.bool))
    assert len(empty) == 1 and empty[0].shape == (0,)


def test_where_with_three_arguments_is_unchanged():
    c = ember.tensor([True, False, True])
    np.testing.assert_array_equal(ember.where(c, 1.0, ember.zeros(3)).numpy(), [1.0, 0.0, 1.0])
    with pytest.raises(ember.ValueError, match="both"):
        ember.where(c, 1.0)


def test_mT_swaps_the_last_two_dims():
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(ember.tensor(a).mT.numpy(), np.swapaxes(a, -1, -2))
    gradcheck(lambda x: x.mT, a)
    with pytest.raises(ember.ShapeError, match=r"\[3\]"):
        ember.zeros(3).mT


# ---- sum / mean with dtype= and axis= ----

def test_sum_and_mean_take_axis_and_dtype():
    a = RNG.standard_normal((3, 4, 5))
    t = ember.tensor(a)
    np.testing.assert_allclose(ember.sum(t, axis=1).numpy(), a.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(t.mean(axis=(0, 2), keepdim=True).numpy(),
                               a.mean(axis=(0, 2), keepdims=True), rtol=1e-12)
    small = ember.tensor(np.full(300, 100, dtype=np.int8))
    assert small.sum(dtype=ember.int64).item() == 30000
    assert small.sum(dtype="int64").dtype == ember.int64
    assert t.float().sum(dtype=ember.float64).dtype == ember.float64
    assert ember.mean(ember.arange(4), dtype=ember.float32).item() == 1.5
    with pytest.raises(ember.ValueError, match="both dim and axis"):
        t.sum(0, axis=1)


def test_sum_with_dtype_is_differentiable():
    gradcheck(lambda x: ember.mean(x, axis=0, dtype=ember.float64), RNG.standard_normal((2, 3)))
    x = ember.tensor(RNG.standard_normal((2, 3)), dtype=ember.float32, requires_grad=True)
    w = RNG.standard_normal(2)
    x.sum(1, dtype=ember.float64).backward(ember.tensor(w))
    assert x.grad.dtype == ember.float32
    np.testing.assert_allclose(x.grad.numpy(), np.repeat(w[:, None], 3, 1), rtol=1e-6)


# ---- as_tensor ----

def test_as_tensor_shares_numpy_memory_when_it_can():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.as_tensor(a)
    a[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    same = ember.as_tensor(a, dtype=ember.float32, device="cpu")
    a[0, 1] = 7.0
    assert same[0, 1].item() == 7.0
    cast = ember.as_tensor(a, dtype=ember.float64)
    a[0, 2] = -1.0
    assert cast.dtype == ember.float64 and cast[0, 2].item() == 2.0


def test_as_tensor_of_tensors_and_lists():
    t = ember.ones(3)
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(t, dtype=ember.float64).dtype == ember.float64
    assert ember.as_tensor([1, 2]).dtype == ember.int64
    read_only = np.ones(3)
    read_only.flags.writeable = False
    np.testing.assert_array_equal(ember.as_tensor(read_only).numpy(), read_only)
    strided = np.arange(10.0)[::3]
    np.testing.assert_array_equal(ember.as_tensor(strided).numpy(), strided)


# ---- Tensor.new_* ----

def test_new_methods_take_dtype_and_device_from_the_tensor():
    t = ember.zeros(2, dtype=ember.float64)
    for made, fill in [(t.new_zeros(2, 3), 0.0), (t.new_ones((2, 3)), 1.0),
                       (t.new_full((2, 3), 2.5), 2.5), (t.new_full([2, 3], 2.5), 2.5)]:
        assert made.shape == (2, 3) and made.dtype == ember.float64 and made.device == t.device
        np.testing.assert_array_equal(made.numpy(), np.full((2, 3), fill))
    assert t.new_empty(4).shape == (4,) and t.new_empty(4).dtype == ember.float64
    assert t.new_zeros(2, dtype=ember.int32).dtype == ember.int32
    assert t.new_ones(1, requires_grad=True).requires_grad
    assert t.new_zeros(()).shape == ()


def test_new_tensor_copies():
    t = ember.zeros(1, dtype=ember.float16)
    a = np.array([1.0, 2.0])
    made = t.new_tensor(a)
    a[0] = 9.0
    assert made.dtype == ember.float16 and made.tolist() == [1.0, 2.0]
    src = ember.ones(2, requires_grad=True)
    copy = src.new_tensor(src)
    assert not copy.requires_grad and copy.data_ptr() != src.data_ptr()
    assert t.new_tensor([1, 2], dtype=ember.int64).dtype == ember.int64


# ---- finfo / iinfo ----

@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64, "float64"])
def test_finfo_matches_numpy(dtype):
    info, ref = ember.finfo(dtype), np.finfo(str(ember.dtype(dtype)).replace("ember.", ""))
    assert (info.bits, info.eps, info.max, info.min) == (ref.bits, ref.eps, ref.max, ref.min)
    assert info.tiny == info.smallest_normal == ref.smallest_normal
    assert info.resolution == 10.0**-ref.precision  # 0.001 for float16, as PyTorch's
    assert info.dtype == ember.dtype(dtype).name


def test_finfo_of_bfloat16_and_the_default():
    info = ember.finfo(ember.bfloat16)
    assert info.bits == 16 and info.eps == 2**-7 and info.tiny == 2**-126
    assert info.max == float.fromhex("0x1.fep127") and info.min == -info.max
    assert info.resolution == 0.01 and info.dtype == "bfloat16"
    # The largest bfloat16 is a float32 with the low 16 bits zero.
    assert np.float32(info.max).view(np.uint32) & 0xFFFF == 0
    assert ember.finfo().dtype == "float32"


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_numpy(dtype):
    info, ref = ember.iinfo(getattr(ember, dtype)), np.iinfo(dtype)
    assert (info.bits, info.min, info.max, info.dtype) == (ref.bits, ref.min, ref.max, dtype)


def test_finfo_and_iinfo_reject_the_other_kind():
    with pytest.raises(ember.DTypeError, match="iinfo takes"):
        ember.finfo(ember.int32)
    with pytest.raises(ember.DTypeError, match="finfo takes"):
        ember.iinfo(ember.float32)
    with pytest.raises(ember.DTypeError):
        ember.iinfo(ember.bool)


# ---- inference_mode ----

def test_inference_mode_as_context_and_decorator():
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad

    @ember.inference_mode()
    def called(t):
        return t * 2

    @ember.inference_mode
    def bare(t):
        return t * 2

    assert not called(x).requires_grad and not bare(x).requires_grad
    assert bare.__name__ == "bare" and ember.is_grad_enabled()
    with ember.no_grad(), ember.inference_mode(False):
        assert not ember.is_grad_enabled()


# ---- accelerator ----

def test_accelerator_agrees_with_cuda():
    available = ember.cuda.is_available()
    assert ember.accelerator.is_available() == available
    current = ember.accelerator.current_accelerator()
    if available:
        assert current == ember.device("cuda") and current.type == "cuda"
        assert ember.accelerator.device_count() == ember.cuda.device_count() >= 1
    else:
        assert current is None and ember.accelerator.device_count() == 0
