"""NumPy and DLPack interop: memory shared both ways, kept alive by whichever side holds it."""

import gc

import numpy as np
import pytest

import ember


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 2] = -1
    assert a[1, 2] == -1
    assert t.dtype == ember.float32 and t.shape == (2, 3)


def test_from_numpy_keeps_the_array_alive_and_views_strides():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    t = ember.from_numpy(a)
    expected = a.copy()
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t.stride() == (4, 2)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(3)[::-1])
    np.testing.assert_array_equal(ember.tensor(np.arange(3)[::-1]).numpy(), [2, 1, 0])


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                   np.float16, np.float32, np.float64])
def test_numpy_round_trip_of_every_dtype(dtype):
    a = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.dtype == a.dtype
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_numpy_views_the_tensor_and_keeps_it_alive():
    t = ember.arange(6).reshape(2, 3)
    a = t.numpy()
    a[0, 1] = 9
    assert t[0, 1].item() == 9
    t.T.numpy()[0, 1] = 7  # a transposed view is a strided array
    assert t[1, 0].item() == 7
    b = ember.zeros(3).numpy()
    gc.collect()
    np.testing.assert_array_equal(b, [0, 0, 0])
    with pytest.raises(ValueError, match="detach"):
        ember.ones(2, requires_grad=True).numpy()
    np.testing.assert_array_equal(np.asarray(ember.ones(2, requires_grad=True)), [1, 1])
    assert np.asarray(ember.ones(2), dtype=np.int32).dtype == np.int32


def test_dlpack_to_numpy_and_back():
    t = ember.arange(6, dtype=ember.float64).reshape(2, 3)
    a = np.from_dlpack(t)
    a[0, 0] = 5
    assert t[0, 0].item() == 5
    assert t.__dlpack_device__() == (1, 0)
    n = np.arange(4.0)
    e = ember.from_dlpack(n)
    n[1] = 8
    assert e.tolist() == [0.0, 8.0, 2.0, 3.0]


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_dlpack_capsules_of_both_versions(max_version):
    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).T
    capsule = t.__dlpack__(max_version=max_version)
    assert ("dltensor_versioned" if max_version else "dltensor") in repr(capsule)
    u = ember.from_dlpack(capsule)
    del t
    gc.collect()
    assert u.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    with pytest.raises(ValueError):
        ember.from_dlpack(capsule)  # a capsule is consumed once


def test_an_unconsumed_capsule_frees_its_tensor():
    before = ember.memory_allocated()
    capsule = ember.zeros(1 << 16).__dlpack__()
    del capsule
    gc.collect()
    assert ember.memory_allocated() <= before


def test_dlpack_of_numpy_keeps_the_producer_alive():
    e = ember.from_dlpack(np.full(5, 3.0))
    gc.collect()
    assert e.tolist() == [3.0] * 5
