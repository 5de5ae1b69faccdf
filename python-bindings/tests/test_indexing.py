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


def test_write_to_a_leaf_that_requires_grad_needs_no_grad():
    w = ember.zeros(3, requires_grad=True)
    for write in (lambda: w.__setitem__(0, 1), lambda: w.__setitem__([0, 2], 1),
                  lambda: w.__iadd__(1), lambda: w.index_put_((ember.tensor([1]),), 2.0)):
        with pytest.raises(ember.ValueError, match="leaf.*no_grad"):
            write()
    with ember.no_grad():
        w[0] = 1
        w[[1, 1]] += 2
    assert w.tolist() == [1.0, 2.0, 0.0]


# Indexed assignment (index_put, or a view for basic indices) against NumPy: every kind of index,
# repeated positions, broadcast values, and x as a non-contiguous view of a larger tensor.
SETS = WRITES + [
    -1, (slice(None, None, -2),), (slice(3, 0, -2), slice(None), 1), (None, 1),
    (Ellipsis, None, 2), [[0, 1], [2, 2]], [2, 0, 2], ([0, 2], slice(None), [1, 3]),
    (1, slice(None), [0, 4]), (slice(None), [0, 2], [1, 3]), ([[0], [2]], [[1, 3]]),
    (slice(1, 3), [2]), ([0, 2], None, [1, 3]), (slice(None, None, -1), [0, 2]),
    ([-1, 0], slice(1, None, 2), slice(None, None, -2)), X > 30, (1, X[1] > 30),
    (slice(None), np.array([True, False, True, True])), (Ellipsis, [4, 0, 4]),
]


def _layouts():
    """X as a contiguous tensor, a permuted view and a step-sliced view of larger tensors, each
    with a check that the rest of the larger tensor was left alone."""
    permuted = ember.tensor(np.ascontiguousarray(X.transpose(2, 1, 0)))
    sliced = ember.tensor(np.repeat(X, 2, 1))
    return [(ember.tensor(X), lambda: None), (permuted.permute(2, 1, 0), lambda: None),
            (sliced[:, ::2],
             lambda: np.testing.assert_array_equal(sliced[:, 1::2].numpy(), X))]


@pytest.mark.parametrize("index", SETS, ids=[f"set{k}" for k in range(len(SETS))])
def test_assignment_matches_numpy(index):
    region = X[index].shape
    rng = np.random.default_rng(len(region))
    values = [-1.0, rng.standard_normal(region), rng.standard_normal(region[-1:])]
    parts = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(p, np.ndarray) and p.dtype == bool for p in parts):
        values.append(rng.standard_normal((1, 1) + region))  # NumPy refuses this beside a mask
    for value in values:
        for t, rest_unchanged in _layouts():
            ref = X.copy()
            ref[index] = value
            t[index] = ember.tensor(value) if isinstance(value, np.ndarray) else value
            np.testing.assert_array_equal(t.numpy(), ref)
            rest_unchanged()


@pytest.mark.parametrize("index", SETS, ids=[f"set{k}" for k in range(len(SETS))])
def test_indexed_increment_matches_numpy(index):
    ref = X.copy()
    t = ember.tensor(ref)
    ref[index] += 2.5  # a read, an add and a write: a repeated position gets it once
    t[index] += 2.5
    np.testing.assert_array_equal(t.numpy(), ref)


def test_repeated_positions_keep_the_last_write():
    t, ref = ember.tensor(X), X.copy()
    values = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5)
    t[[0, 2, 2]] = ember.tensor(values)
    ref[[0, 2, 2]] = values
    np.testing.assert_array_equal(t.numpy(), ref)


def test_basic_assignment_writes_through_a_view_without_copying():
    t = ember.zeros(4, 6)
    row, ptr = t[1], t.data_ptr()
    values = ember.ones(6)
    before = ember.memory_stats("cpu")["allocations"]
    t[1:3] = values
    t[1, ::2] = 5.0
    t[..., -1] = 7
    assert ember.memory_stats("cpu")["allocations"] == before
    assert t.data_ptr() == ptr and row.tolist() == [5.0, 1.0, 5.0, 1.0, 5.0, 7.0]


def test_index_put_accumulates_repeated_positions():
    ref = X.copy()
    rows, cols = np.array([0, 2, 0, 0]), np.array([1, 1, 1, 3])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    np.add.at(ref, (rows, cols), values[:, None])
    t = ember.tensor(X)
    got = t.index_put((ember.tensor(rows), ember.tensor(cols)), ember.tensor(values[:, None]),
                      accumulate=True)
    np.testing.assert_array_equal(got.numpy(), ref)
    np.testing.assert_array_equal(t.numpy(), X)  # out of place
    same = t.index_put_((ember.tensor(rows), ember.tensor(cols)), ember.tensor(values[:, None]),
                        accumulate=True)
    assert same is t
    np.testing.assert_array_equal(t.numpy(), ref)
    mask = X > 50
    np.testing.assert_array_equal(ember.index_put(ember.tensor(X), (ember.tensor(mask),),
                                                  ember.tensor(0.0)).numpy(),
                                  np.where(mask, 0.0, X))


def test_bad_assignments_are_typed_errors():
    t = ember.tensor(X)
    with pytest.raises(ember.ShapeError, match=r"__setitem__.*\[4, 5\].*\[3\] float64"):
        t[0] = ember.ones(3, dtype="float64")
    with pytest.raises(ember.ShapeError, match=r"__setitem__.*\[2, 5\]"):
        t[0, [1, 2]] = ember.ones(3, 5)
    with pytest.raises(ember.IndexError, match=r"__setitem__: index 7 .*dim 0 \(size 3\)"):
        t[[7]] = 1.0
    with pytest.raises(ember.IndexError):
        t[ember.tensor([0.5])] = 1.0
    with pytest.raises(ember.IndexError, match="index_put"):
        t.index_put((ember.tensor([0.5]),), 1.0)
    assert np.array_equal(t.numpy(), X)  # nothing was written


def _written(index, increment=False, strided=False):
    """x -> a copy of x (or its view x[:, ::2]) with [index] = v (or += v), with history."""
    def f(x, v):
        y = x[:, ::2] if strided else x * 1.0
        if increment:
            y[index] += v
        else:
            y[index] = v
        return y
    return f


GRAD_SETS = [
    (1, (4, 5)), ((slice(None), 1), (5,)), ((Ellipsis, slice(None, None, -2)), (3, 4, 3)),
    ([0, 2], (2, 4, 5)), ((slice(None), [1, 3]), (3, 2, 5)),
    (([0, 2], slice(None), [1, 3]), (2, 4)),
    ((1, slice(None), [0, 4]), (2, 4)), ((slice(1, 3), [2], None), (2, 1, 1, 5)),
    (X > 40, (19,)), ((None, 0, 1), (1, 5)), ((0, 0, 0), ()),
]


@pytest.mark.parametrize("index,shape", GRAD_SETS, ids=[f"grad{k}" for k in range(len(GRAD_SETS))])
def test_assignment_gradients(index, shape):
    x = X / 60
    v = np.random.default_rng(7).standard_normal(shape)
    gradcheck(_written(index), x, v)
    gradcheck(_written(index, increment=True), x, v)
    gradcheck(_written(index, strided=True), np.repeat(x, 2, 1), v)  # a non-contiguous view


def test_assignment_gradient_of_a_broadcast_value_and_into_a_tensor_without_grad():
    gradcheck(_written((slice(None), [1, 3])), X / 60, np.array([0.5, -1.0, 2.0, 0.1, 0.3]))

    def build(v):
        out = ember.zeros(3, 4, dtype="float64")
        out[[2, 0]] = v
        out[1, 1:] += v[0, :3] * v[1, :3]
        return out
    gradcheck(build, np.random.default_rng(8).standard_normal((2, 4)))


def test_index_put_gradients_with_and_without_accumulate():
    rows, cols = ember.tensor([0, 2, 0]), ember.tensor([1, 1, 3])
    gradcheck(lambda x, v: x.index_put((rows, cols), v), X[:, :, 0] / 60, np.array([1.0, 2.0, 3.0]))
    rows = ember.tensor([0, 2, 0, 0])
    gradcheck(lambda x, v: ember.index_put(x, (rows,), v, accumulate=True), X[:, :, 0] / 60,
              np.arange(4.0).reshape(4, 1))


def test_a_recorded_write_gives_the_tensor_new_storage():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    before = y[0:2]  # a view of y's storage
    same = y
    y[1] = x[0] * 5
    assert y is same and y.tolist() == [2.0, 5.0, 2.0]
    assert before.tolist() == [2.0, 2.0]  # the view keeps the values it had
    y.sum().backward()
    assert x.grad.tolist() == [2.0 + 5.0, 0.0, 2.0]


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
    t, ref = ember.tensor(x), x.copy()
    values = np.arange(ref[index].size, dtype=np.float64).reshape(ref[index].shape)
    t[index] = ember.tensor(values)
    ref[index] = values
    np.testing.assert_array_equal(t.numpy(), ref)
