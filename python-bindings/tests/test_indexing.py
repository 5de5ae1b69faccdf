"""NumPy indexing and indexed assignment against NumPy itself, with gradients."""

import numpy as np
import pytest
from gradcheck import gradcheck
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

X = np.arange(60, dtype=np.float64).reshape(3, 4, 5)

READS = [
    1, -1, (0, 2), (slice(None), 1), slice(1, None), slice(None, None, 2),
    (slice(None), slice(None, None, -1)), (slice(3, 0, -2),), (Ellipsis, 1), (1, Ellipsis),
    None, (None, 1, None), (slice(None), None, 2), (Ellipsis, None), [0, 2], [[0, 1], [2, 2]],
    [-1, 0], (slice(None), [1, 3]), ([0, 2], [1, 3]), ([0, 2], slice(None), [1, 3]),
    (slice(None), [0, 2], [1, 3]), (1, slice(None), [0, 4]), (Ellipsis, [0, 1]),
    ([[0], [2]], [[1, 3]]), (slice(1, 3), [2]),
]


@pytest.mark.parametrize("index", READS, ids=[repr(i) for i in READS])
def test_reads_match_numpy(index):
    np.testing.assert_array_equal(ember.tensor(X)[index].numpy(), X[index])


def test_boolean_masks_and_tensor_indices():
    t = ember.tensor(X)
    mask = X > 30
    np.testing.assert_array_equal(t[t > 30].numpy(), X[mask])
    np.testing.assert_array_equal(t[1][ember.tensor(mask[1])].numpy(), X[1][mask[1]])
    np.testing.assert_array_equal(t[:, ember.tensor([True, False, True, False])].numpy(),
                                  X[:, [True, False, True, False]])
    np.testing.assert_array_equal(t[ember.tensor([2, 0])].numpy(), X[[2, 0]])
    np.testing.assert_array_equal(t[np.array([1, 1])].numpy(), X[[1, 1]])


def test_bad_indices_are_index_errors():
    t = ember.tensor(X)
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError):
        t[ember.tensor([0.5])]
    with pytest.raises(IndexError):
        t["a"]
    with pytest.raises(IndexError):
        t[..., ...]
    with pytest.raises(IndexError):
        t[ember.tensor([7])]


WRITES = [1, (0, 2), (slice(None), 1), (Ellipsis, slice(None, None, 2)),
          (slice(None, None, -1), 0), [0, 2], (slice(None), [1, 3]), ([0, 2], [1, 3])]


@pytest.mark.parametrize("index", WRITES, ids=[repr(i) for i in WRITES])
def test_writes_match_numpy(index):
    t, ref = ember.tensor(X), X.copy()
    t[index] = -1.0
    ref[index] = -1.0
    np.testing.assert_array_equal(t.numpy(), ref)
    values = np.arange(ref[index].size, dtype=np.float64).reshape(ref[index].shape)
    t[index] = ember.tensor(values)
    ref[index] = values
    np.testing.assert_array_equal(t.numpy(), ref)


def test_mask_assignment_and_indexed_increment():
    t, ref = ember.tensor(X), X.copy()
    t[t > 30] = 0
    ref[ref > 30] = 0
    t[[0, 2, 2]] += 1
    ref[[0, 2, 2]] += 1
    t[:, 1] *= 2
    ref[:, 1] *= 2
    np.testing.assert_array_equal(t.numpy(), ref)


def test_writes_reach_the_storage_through_views():
    t = ember.zeros(3, 4)
    row = t[1]
    row[2] = 5
    t.T[0, 0] = 7
    assert t[1, 2].item() == 5 and t[0, 0].item() == 7


def test_write_to_a_tensor_that_requires_grad_needs_no_grad():
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="no_grad"):
        w[0] = 1
    with ember.no_grad():
        w[0] = 1
    assert w.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("index", [1, (slice(None), 2), (slice(None, None, -1), [0, 2]),
                                   ([0, 0, 2], slice(1, 3)), (Ellipsis, None, 1)],
                         ids=repr)
def test_read_gradients(index):
    gradcheck(lambda x: x[index], X[:, :, :2] / 10)


def test_mask_read_gradient():
    gradcheck(lambda x: x[x > 0], np.array([[-1.0, 2.0], [3.0, -4.0]]))


def test_nonzero():
    t = ember.tensor([[0, 1], [2, 0]])
    np.testing.assert_array_equal(t.nonzero().numpy(), np.argwhere(t.numpy()))
    rows, cols = t.nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


def _slices(n):
    return st.builds(slice, st.none() | st.integers(-n - 1, n + 1),
                     st.none() | st.integers(-n - 1, n + 1),
                     st.none() | st.integers(-3, 3).filter(lambda s: s != 0))


@settings(max_examples=60, deadline=None)
@given(st.tuples(_slices(3), _slices(4) | st.integers(-4, 3), _slices(5) | st.just(Ellipsis)),
       st.booleans())
def test_property_basic_indexing(index, write):
    t, ref = ember.tensor(X), X.copy()
    if write:
        t[index] = -1
        ref[index] = -1
        np.testing.assert_array_equal(t.numpy(), ref)
    else:
        np.testing.assert_array_equal(t[index].numpy(), ref[index])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 2), min_size=1, max_size=4),
       st.lists(st.integers(-5, 4), min_size=1, max_size=4), st.booleans())
def test_property_advanced_indexing(rows, cols, separated):
    n = min(len(rows), len(cols))
    rows, cols = rows[:n], cols[:n]
    index = (rows, slice(None), cols) if separated else (slice(None), rows, cols)
    x = X if separated else X.reshape(4, 3, 5)
    if not separated:
        rows = [r % 3 for r in rows]
        index = (slice(None), rows, cols)
    np.testing.assert_array_equal(ember.tensor(x)[index].numpy(), x[index])
