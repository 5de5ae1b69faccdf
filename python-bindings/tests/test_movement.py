"""Views and data movement against NumPy, with gradients."""

import numpy as np
import pytest
from gradcheck import gradcheck

import ember

X = np.arange(24, dtype=np.float64).reshape(2, 3, 4)


def test_reshape_and_view_forms():
    t = ember.tensor(X)
    for shape in [(6, 4), (4, -1), (24,)]:
        np.testing.assert_array_equal(t.reshape(*shape).numpy(), X.reshape(shape))
        np.testing.assert_array_equal(t.reshape(shape).numpy(), X.reshape(shape))
        np.testing.assert_array_equal(t.view(shape).numpy(), X.reshape(shape))
    assert t.view(6, 4).data_ptr() == t.data_ptr()
    with pytest.raises(ember.ShapeError):
        t.transpose(0, 2).view(24)
    np.testing.assert_array_equal(t.transpose(0, 2).reshape(24).numpy(),
                                  X.transpose(2, 1, 0).reshape(24))
    gradcheck(lambda x: x.reshape(4, 6), X)


def test_transpose_permute_squeeze_unsqueeze_flatten():
    t = ember.tensor(X)
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), X.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), X.transpose(2, 0, 1))
    np.testing.assert_array_equal(ember.permute(t, (1, 0, 2)).numpy(), X.transpose(1, 0, 2))
    np.testing.assert_array_equal(t.T.numpy(), X.T)
    assert t[0].t().shape == (4, 3)
    u = t.unsqueeze(1)
    assert u.shape == (2, 1, 3, 4) and u.squeeze().shape == (2, 3, 4)
    assert u.squeeze(1).shape == (2, 3, 4) and u.unsqueeze(-1).squeeze((1, 4)).shape == (2, 3, 4)
    assert t.flatten().shape == (24,) and t.flatten(1).shape == (2, 12)
    np.testing.assert_array_equal(t.flip(1).numpy(), X[:, ::-1])
    np.testing.assert_array_equal(t.narrow(2, 1, 2).numpy(), X[:, :, 1:3])
    np.testing.assert_array_equal(t.select(1, -1).numpy(), X[:, -1])
    gradcheck(lambda x: x.permute(2, 0, 1).flip((0,)), X)


def test_expand_and_broadcast_to():
    t = ember.tensor([[1.0], [2.0]])
    assert t.expand(2, 3).tolist() == [[1.0] * 3, [2.0] * 3]
    assert t.expand(4, -1, 3).shape == (4, 2, 3)
    assert ember.broadcast_to(t, (2, 2)).tolist() == [[1.0, 1.0], [2.0, 2.0]]
    gradcheck(lambda x: x.expand(2, 3, 5), np.ones((3, 1)))


def test_cat_stack_split_chunk_unbind():
    a, b = np.ones((2, 3)), np.zeros((1, 3))
    np.testing.assert_array_equal(ember.cat([ember.tensor(a), ember.tensor(b)]).numpy(),
                                  np.concatenate([a, b]))
    np.testing.assert_array_equal(ember.stack([ember.tensor(a)] * 2, 1).numpy(),
                                  np.stack([a, a], 1))
    t = ember.tensor(X)
    assert [p.shape for p in t.split(2, 2)] == [(2, 3, 2), (2, 3, 2)]
    assert [p.shape for p in t.split([1, 3], 2)] == [(2, 3, 1), (2, 3, 3)]
    assert [p.shape for p in t.chunk(3, 1)] == [(2, 1, 4)] * 3
    assert [p.shape for p in t.unbind(1)] == [(2, 4)] * 3
    gradcheck(lambda x, y: ember.cat([x, y], 0), a, b)
    gradcheck(lambda x: ember.stack(x.split(1, 0), 2), a)


def test_pad_gather_scatter_index_ops():
    t = ember.tensor(X[0])
    np.testing.assert_array_equal(ember.pad(t, (1, 2)).numpy(), np.pad(X[0], ((0, 0), (1, 2))))
    idx = ember.tensor([[0, 2], [1, 0], [3, 3]])
    np.testing.assert_array_equal(t.gather(1, idx).numpy(),
                                  np.take_along_axis(X[0], idx.numpy(), 1))
    np.testing.assert_array_equal(t.index_select(1, ember.tensor([3, 0])).numpy(), X[0][:, [3, 0]])
    added = ember.zeros(3, 4, dtype=ember.float64).index_add(0, ember.tensor([0, 0]),
                                                             ember.ones(2, 4, dtype=ember.float64))
    assert added[0].tolist() == [2.0] * 4
    sc = ember.zeros(3, 4, dtype=ember.float64).scatter_add(1, idx, ember.ones(3, 2,
                                                                               dtype=ember.float64))
    assert sc.sum().item() == 6
    emb = ember.embedding(ember.tensor([2, 0]), t)
    np.testing.assert_array_equal(emb.numpy(), X[0][[2, 0]])
    assert ember.one_hot(ember.tensor([1, 0]), 3).tolist() == [[0, 1, 0], [1, 0, 0]]
    gradcheck(lambda x: x.gather(1, idx), X[0])
    gradcheck(lambda x: ember.pad(x, (1, 1), mode="reflect"), X[0])
