"""Sorting, running sums and products, rounding and value tests, tril/triu, roll, tile/repeat,
masked_select, scatter, nan_to_num, bincount, unique and interpolate: results against NumPy (or
brute force), gradients against float64 finite differences, on contiguous and non-contiguous
inputs and edge shapes, and the errors of bad arguments."""

import numpy as np
import pytest
from gradcheck import gradcheck

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(0)


def distinct(*shape):
    """Values without ties (so that sort's gradient is well defined), shuffled."""
    n = int(np.prod(shape))
    return RNG.permutation(np.linspace(-1.0, 1.0, n)).reshape(shape) if n else np.zeros(shape)


def noncontiguous(a):
    """A transposed view holding a's values."""
    return ember.tensor(np.ascontiguousarray(a.T)).t() if a.ndim == 2 else ember.tensor(a)


# ---- sorting ----


@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 5), 1),
                                       ((0, 3), 1), ((1,), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_numpy(shape, dim, descending):
    a = distinct(*shape)
    x = ember.tensor(a)
    values, indices = ember.sort(x, dim, descending)
    want = np.argsort(-a if descending else a, axis=dim, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, want, axis=dim))
    assert indices.dtype == ember.int64
    np.testing.assert_array_equal(x.argsort(dim, descending).numpy(), want)
    out = x.sort(dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(out.values.numpy(), values.numpy())


def test_sort_is_stable_with_ties_and_of_a_transposed_view():
    a = np.array([[3.0, 1.0, 3.0, 1.0], [2.0, 2.0, 0.0, 2.0]])
    x = noncontiguous(a)
    assert not x.is_contiguous()
    np.testing.assert_array_equal(x.sort(0, stable=True).indices.numpy(),
                                  np.argsort(a, axis=0, kind="stable"))
    np.testing.assert_array_equal(ember.tensor(a).sort(1, descending=True).indices.numpy(),
                                  [[0, 2, 1, 3], [0, 1, 3, 2]])


def test_sort_of_0d_and_its_gradients():
    values, indices = ember.sort(ember.tensor(2.5))
    assert values.shape == () and values.item() == 2.5 and indices.item() == 0
    gradcheck(lambda x: ember.sort(x, 1)[0], distinct(3, 4))
    gradcheck(lambda x: ember.sort(x.t(), -1, descending=True).values, distinct(4, 3))
    gradcheck(lambda x: ember.sort(x)[0], np.array(1.5))


def test_topk_matches_numpy_and_its_gradient():
    a = distinct(4, 6)
    for largest in (True, False):
        values, indices = ember.topk(ember.tensor(a), 3, dim=1, largest=largest)
        order = np.argsort(-a if largest else a, axis=1, kind="stable")[:, :3]
        np.testing.assert_array_equal(indices.numpy(), order)
        np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, order, axis=1))
    assert ember.tensor(a).topk(0, 0).values.shape == (0, 6)
    gradcheck(lambda x: x.topk(2, 0).values, a)
    gradcheck(lambda x: x.t().topk(3, largest=False)[0], a)
    with pytest.raises(ember.ValueError, match=r"topk.*k is 7.*size 6"):
        ember.topk(ember.tensor(a), 7)


# ---- running sums and products ----


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_and_cumprod_match_numpy(dim):
    a = RNG.standard_normal((3, 5))
    for x in (ember.tensor(a), noncontiguous(a)):
        np.testing.assert_allclose(ember.cumsum(x, dim).numpy(), np.cumsum(a, axis=dim))
        np.testing.assert_allclose(x.cumprod(dim).numpy(), np.cumprod(a, axis=dim))
    gradcheck(lambda x: ember.cumsum(x, dim), a)
    gradcheck(lambda x: ember.cumprod(x, dim), a)


def test_cumsum_dtypes_and_edges():
    i = ember.tensor([1, 2, 3], dtype=ember.int32)
    assert ember.cumsum(i, 0).dtype == ember.int64 and ember.cumsum(i, 0).tolist() == [1, 3, 6]
    assert ember.cumsum(i, 0, dtype=ember.float64).dtype == ember.float64
    assert ember.cumprod(ember.tensor([True, True, False]), 0).tolist() == [1, 1, 0]
    assert ember.cumsum(ember.tensor(2.0), 0).item() == 2.0
    assert ember.cumsum(ember.zeros(0, 3), 0).shape == (0, 3)
    with pytest.raises(ember.IndexError, match="cumsum"):
        ember.cumsum(ember.zeros(2, 3), 2)


@pytest.mark.parametrize("a", [
    [2.0, 0.0, 3.0, 4.0],            # one zero
    [0.0, 2.0, 0.0, 5.0],            # two zeros, the first at the start
    [1.5, -2.0, 3.0, 0.0],           # a zero at the end
    [[0.5, 0.0], [0.0, 0.0], [3.0, 2.0]],
])
def test_cumprod_gradient_with_zeros(a):
    a = np.array(a)
    gradcheck(lambda x: ember.cumprod(x, 0), a)
    if a.ndim == 2:
        gradcheck(lambda x: ember.cumprod(x, 1), a)


def test_cumprod_second_order():
    a = np.array([[0.5, -1.5, 2.0], [1.2, 0.7, -0.4]])
    x = ember.tensor(a, requires_grad=True)
    (g,) = ember.autograd.grad(ember.cumprod(x, 1).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad((g * g).sum(), [x])
    eps = 1e-6

    def first(v):
        t = ember.tensor(v, requires_grad=True)
        (d,) = ember.autograd.grad(ember.cumprod(t, 1).sum(), [t])
        return float((d.numpy() ** 2).sum())

    numeric = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        p, m = a.copy(), a.copy()
        p[i] += eps
        m[i] -= eps
        numeric[i] = (first(p) - first(m)) / (2 * eps)
    np.testing.assert_allclose(gg.numpy(), numeric, rtol=1e-4, atol=1e-6)


# ---- rounding, reciprocal, square, value tests, nan_to_num ----


def test_rounding_matches_numpy_and_has_zero_gradient():
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.2345, -7.77, 0.0])
    x = ember.tensor(a)
    for name, ref in (("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
                      ("trunc", np.trunc)):
        np.testing.assert_array_equal(getattr(ember, name)(x).numpy(), ref(a))
        np.testing.assert_array_equal(getattr(x, name)().numpy(), ref(a))
        t = ember.tensor(a, requires_grad=True)
        getattr(ember, name)(t).sum().backward()
        np.testing.assert_array_equal(t.grad.numpy(), np.zeros_like(a))
    np.testing.assert_allclose(ember.round(x, decimals=2).numpy(), np.round(a, 2))
    np.testing.assert_allclose(x.round(decimals=-1).numpy(), np.round(a, -1))
    assert ember.floor(ember.tensor([3, -2])).tolist() == [3, -2]
    with pytest.raises(ember.DTypeError, match="floor"):
        ember.floor(ember.tensor([True]))


def test_reciprocal_and_square():
    a = np.array([[0.5, -2.0, 4.0], [1.5, -0.25, 3.0]])
    np.testing.assert_allclose(ember.reciprocal(ember.tensor(a)).numpy(), 1 / a)
    np.testing.assert_allclose(noncontiguous(a).square().numpy(), a * a)
    assert ember.reciprocal(ember.tensor([2, 4])).dtype == ember.float32
    gradcheck(ember.reciprocal, a)
    gradcheck(ember.square, a)
    gradcheck(lambda x: x.t().reciprocal(), a)


def test_value_tests():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    x = ember.tensor(a)
    for name in ("isnan", "isinf", "isfinite"):
        got = getattr(ember, name)(x)
        assert got.dtype == ember.bool
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a))
    assert ember.isfinite(ember.tensor([1, 2])).tolist() == [True, True]
    t = ember.tensor(a, requires_grad=True)
    assert not ember.isnan(t).requires_grad


def test_nan_to_num():
    a = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.nan_to_num(x).numpy(), np.nan_to_num(a))
    np.testing.assert_array_equal(x.nan_to_num(nan=1.5, posinf=9.0, neginf=-9.0).numpy(),
                                  np.nan_to_num(a, nan=1.5, posinf=9.0, neginf=-9.0))
    t = ember.tensor(a, requires_grad=True)
    (ember.nan_to_num(t) * ember.tensor([1.0, 2, 3, 4, 5])).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 0, 0, 0, 5])
    gradcheck(ember.nan_to_num, RNG.standard_normal((2, 3)))


# ---- tril / triu, roll, tile / repeat ----


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu(k):
    a = RNG.standard_normal((2, 3, 4))
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.tril(x, k).numpy(), np.tril(a, k))
    np.testing.assert_array_equal(x.triu(diagonal=k).numpy(), np.triu(a, k))
    b = RNG.standard_normal((5, 3))
    np.testing.assert_array_equal(noncontiguous(b).tril(k).numpy(), np.tril(b, k))
    gradcheck(lambda t: ember.tril(t, k), a)
    gradcheck(lambda t: t.t().triu(k), b)
    with pytest.raises(ember.ShapeError, match="tril"):
        ember.tril(ember.zeros(3))


def test_roll():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.roll(x, 1).numpy(), np.roll(a, 1))
    np.testing.assert_array_equal(x.roll(-2, 2).numpy(), np.roll(a, -2, 2))
    np.testing.assert_array_equal(x.roll((1, 5), (0, -1)).numpy(), np.roll(a, (1, 5), (0, -1)))
    b = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(noncontiguous(b).roll(1, 0).numpy(), np.roll(b, 1, 0))
    gradcheck(lambda t: ember.roll(t, (1, -1), (0, 1)), b)
    gradcheck(lambda t: t.t().roll(2), b)
    with pytest.raises(ember.ValueError, match="roll"):
        ember.roll(x, (1, 2), 0)


def test_tile_and_repeat():
    a = RNG.standard_normal((2, 3))
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.tile(x, (2,)).numpy(), np.tile(a, (2,)))
    np.testing.assert_array_equal(x.tile(2, 1, 2).numpy(), np.tile(a, (2, 1, 2)))
    np.testing.assert_array_equal(x.repeat(2, 2).numpy(), np.tile(a, (2, 2)))
    np.testing.assert_array_equal(x.repeat((3, 1, 2)).numpy(), np.tile(a, (3, 1, 2)))
    np.testing.assert_array_equal(noncontiguous(a).repeat(1, 3).numpy(), np.tile(a, (1, 3)))
    assert ember.tensor(5.0).repeat(2).tolist() == [5.0, 5.0]
    assert x.repeat(0, 2).shape == (0, 6)
    gradcheck(lambda t: t.repeat(2, 1, 3), a)
    gradcheck(lambda t: ember.tile(t.t(), (2,)), a)
    with pytest.raises(ember.ShapeError, match="repeat"):
        x.repeat(2)
    with pytest.raises(ember.ValueError, match="repeat.*-1"):
        x.repeat(-1, 2)


# ---- masked_select, scatter, masked_fill_ ----


def test_masked_select():
    a = RNG.standard_normal((3, 4))
    mask = a > 0
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.masked_select(x, ember.tensor(mask)).numpy(), a[mask])
    row = np.array([True, False, True, True])
    np.testing.assert_array_equal(x.masked_select(ember.tensor(row)).numpy(),
                                  a[np.broadcast_to(row, a.shape)])
    np.testing.assert_array_equal(noncontiguous(a).masked_select(ember.tensor(mask)).numpy(),
                                  a[mask])
    assert ember.masked_select(x, ember.zeros(3, 4, dtype=ember.bool)).shape == (0,)
    gradcheck(lambda t: t.masked_select(ember.tensor(mask)), a)
    gradcheck(lambda t: ember.masked_select(t, ember.tensor(row)), a[:1])
    with pytest.raises(ember.DTypeError, match="masked_select.*bool"):
        x.masked_select(ember.ones(3, 4))


def scatter_reference(a, dim, index, src):
    out = a.copy()
    for i in np.ndindex(index.shape):
        at = list(i)
        at[dim] = index[i]
        out[tuple(at)] = src[i] if np.ndim(src) else src
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_matches_brute_force(dim):
    a = RNG.standard_normal((3, 4))
    index = np.array([[2, 0, 1], [0, 1, 2]]) if dim == 0 else np.array([[3, 0], [1, 2], [0, 3]])
    src = RNG.standard_normal((3, 4))
    got = ember.scatter(ember.tensor(a), dim, ember.tensor(index), ember.tensor(src))
    np.testing.assert_array_equal(got.numpy(), scatter_reference(a, dim, index, src))
    got = ember.tensor(a).scatter(dim, ember.tensor(index), 7.5)
    np.testing.assert_array_equal(got.numpy(), scatter_reference(a, dim, index, 7.5))
    got = ember.tensor(a).scatter(dim, ember.tensor(index), value=-1.0)
    np.testing.assert_array_equal(got.numpy(), scatter_reference(a, dim, index, -1.0))
    gradcheck(lambda x, s: ember.scatter(x, dim, ember.tensor(index), s), a, src)
    gradcheck(lambda x: x.t().scatter(dim, ember.tensor(index.T.copy()), 0.5), a.T.copy())


def test_scatter_reduce_add_in_place_and_errors():
    a = np.zeros((2, 3), dtype=np.float32)
    index = ember.tensor([[0, 0, 1]])
    got = ember.tensor(a).scatter(1, index, ember.tensor([[1.0, 2.0, 3.0]]), reduce="add")
    assert got.tolist() == [[3.0, 3.0, 0.0], [0.0, 0.0, 0.0]]
    x = ember.tensor(a)
    assert x.scatter_(0, ember.tensor([[1, 0, 1]]), 4.0) is x
    assert x.tolist() == [[0.0, 4.0, 0.0], [4.0, 0.0, 4.0]]
    with pytest.raises(ember.IndexError, match=r"scatter.*index 3.*size 3"):
        ember.tensor(a).scatter(1, ember.tensor([[3]]), 1.0)
    with pytest.raises(ember.IndexError, match=r"scatter.*index -1"):
        ember.tensor(a).scatter(1, ember.tensor([[-1]]), 1.0)
    with pytest.raises(ember.DTypeError, match="scatter"):
        ember.tensor(a).scatter(1, ember.tensor([[0]]), ember.tensor([[1]]))
    with pytest.raises(ember.ShapeError, match=r"scatter.*index must have x's number of dims"):
        ember.tensor(a).scatter(1, ember.tensor([0]), 1.0)
    with pytest.raises(ember.NotSupportedError, match="multiply"):
        ember.tensor(a).scatter(1, index, 2.0, reduce="multiply")
    # scatter_ on a non-leaf that requires grad is recorded: the gradient flows through.
    w = ember.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    y = w * 2
    y.scatter_(1, ember.tensor([[0], [2]]), 0.0)
    y.sum().backward()
    assert w.grad.tolist() == [[0.0, 2.0, 2.0], [2.0, 2.0, 0.0]]


def test_masked_fill_in_place():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.masked_fill_(ember.tensor([True, False]), -1.0) is x
    assert x.tolist() == [[-1.0, 2.0], [-1.0, 4.0]]
    w = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w * 3
    y.masked_fill_(ember.tensor([False, True, False]), 0.0)
    y.sum().backward()
    assert w.grad.tolist() == [3.0, 0.0, 3.0]
    with pytest.raises(ember.ValueError, match="masked_fill_"):
        w.masked_fill_(ember.tensor([True, False, False]), 0.0)


# ---- bincount and unique ----


def test_bincount():
    a = np.array([1, 4, 1, 0, 4, 4])
    np.testing.assert_array_equal(ember.bincount(ember.tensor(a)).numpy(), np.bincount(a))
    np.testing.assert_array_equal(ember.tensor(a).bincount(minlength=8).numpy(),
                                  np.bincount(a, minlength=8))
    w = RNG.standard_normal(6)
    got = ember.bincount(ember.tensor(a), ember.tensor(w))
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), np.bincount(a, w))
    assert ember.bincount(ember.tensor(a), ember.tensor(w, dtype=ember.float32)).dtype == \
        ember.float32
    assert ember.bincount(ember.tensor([], dtype=ember.int64), minlength=3).tolist() == [0, 0, 0]
    with pytest.raises(ember.ValueError, match=r"bincount.*-2"):
        ember.bincount(ember.tensor([1, -2]))
    with pytest.raises(ember.DTypeError, match="bincount"):
        ember.bincount(ember.tensor([1.0]))


def test_unique():
    a = np.array([[3, 1, 3], [2, 1, 7]])
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.unique(x).numpy(), np.unique(a))
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    want, want_inverse, want_counts = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), want)
    np.testing.assert_array_equal(inverse.numpy(), want_inverse.reshape(a.shape))
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    f = RNG.standard_normal(7).round(0)
    np.testing.assert_array_equal(noncontiguous(f.reshape(1, 7)).unique().numpy(), np.unique(f))
    empty = ember.unique(ember.zeros(0), return_counts=True)
    assert empty[0].shape == (0,) and empty[1].shape == (0,)
    assert ember.unique(ember.tensor(5)).tolist() == [5]
    with pytest.raises(ember.NotSupportedError, match=r"unique.*dim=0.*dim=None"):
        ember.unique(x, dim=0)


# ---- interpolate ----


def test_interpolate_nearest_and_bilinear():
    a = RNG.standard_normal((1, 2, 3, 4))
    x = ember.tensor(a)
    got = F.interpolate(x, scale_factor=2)
    np.testing.assert_array_equal(got.numpy(), a.repeat(2, axis=2).repeat(2, axis=3))
    assert F.interpolate(x, size=(5, 7), mode="bilinear").shape == (1, 2, 5, 7)
    same = F.interpolate(x, size=(3, 4), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(same.numpy(), a)
    # align_corners: the corners of the output are the corners of the input
    c = F.interpolate(x, size=6, mode="bilinear", align_corners=True).numpy()
    np.testing.assert_allclose(c[..., [0, -1], :][..., [0, -1]], a[..., [0, -1], :][..., [0, -1]])
    gradcheck(lambda t: F.interpolate(t, size=(5, 3), mode="bilinear"), a)
    gradcheck(lambda t: F.interpolate(t, scale_factor=(1.5, 0.5)), a)
    with pytest.raises(ember.ValueError, match="align_corners"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(ember.NotSupportedError, match="interpolate.*4-D"):
        F.interpolate(ember.zeros(1, 2, 3), size=4)
    with pytest.raises(ember.ValueError, match="interpolate.*exactly one"):
        F.interpolate(x)


# ---- edge shapes: empty, 0-d, size 1 ----


def test_empty_and_0d_inputs_and_their_gradients():
    empty = np.zeros((0, 3))
    for fn in (lambda x: ember.cumsum(x, 0), lambda x: ember.cumprod(x, 1),
               lambda x: ember.sort(x, 0).values, lambda x: ember.tril(x),
               lambda x: ember.roll(x, 1, 1), lambda x: x.repeat(2, 1),
               lambda x: x.masked_select(x > 0), lambda x: ember.nan_to_num(x).reciprocal()):
        t = ember.tensor(empty, requires_grad=True)
        y = fn(t)
        assert y.numel() == 0
        y.sum().backward()
        assert t.grad.shape == (0, 3)
    scalar = np.array(0.7)
    for fn in (lambda x: ember.cumprod(x, 0), lambda x: ember.cumsum(x, -1),
               lambda x: ember.topk(x, 1).values, lambda x: ember.roll(x, 3),
               lambda x: x.repeat(3), lambda x: x.masked_select(ember.tensor(True)),
               ember.square, ember.reciprocal):
        gradcheck(fn, scalar)
    gradcheck(lambda x: ember.cumprod(x, 0), np.array([0.0]))
    x = ember.zeros(2, 3)
    assert x.scatter(0, ember.zeros(0, 3, dtype=ember.int64), 1.0).tolist() == x.tolist()
    assert ember.unique(ember.tensor([4, 4, 4]), return_counts=True)[1].tolist() == [3]


def test_bool_and_integer_inputs():
    b = ember.tensor([True, False, True])
    assert ember.sort(b, descending=True).values.tolist() == [True, True, False]
    assert ember.cumsum(b, 0).tolist() == [1, 1, 2]
    assert ember.unique(b).tolist() == [False, True]
    i = ember.tensor([[3, 1], [2, 5]])
    assert ember.tril(i).tolist() == [[3, 0], [2, 5]]
    assert i.masked_select(i > 2).tolist() == [3, 5]
    assert i.scatter(1, ember.tensor([[1], [0]]), 9).tolist() == [[3, 9], [9, 5]]
    assert ember.nan_to_num(i).tolist() == [[3, 1], [2, 5]]


def test_graph_of_a_sort_prints_its_ops():
    x = ember.tensor([3.0, 1.0, 2.0], requires_grad=True)
    y = ember.cumsum(ember.sort(x, descending=True).values, 0)
    text = str(y.graph())
    assert "sort(%0) {dim=-1, descending=1, stable=0}" in text
    assert "scatter_add" in text and "cumsum" in text
