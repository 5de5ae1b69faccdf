"""Elementwise, reduction and matmul ops against NumPy, operators with scalars on either side,
gradients against finite differences, and hypothesis properties over shapes and dtypes."""

import math

import numpy as np
import pytest
from gradcheck import gradcheck
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember import _core

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4,))
POS = RNG.uniform(0.5, 2.0, (3, 4))

# The plain unary ops (core-runtime's ember/ops/unary.def, every one bound from that list): NumPy's
# function of the same name on A, unless named here with another reference or input.
UNARY_REFERENCE = {
    "neg": np.negative, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)), "erf": np.vectorize(math.erf),
}
UNARY_INPUT = {"log": POS, "log1p": POS, "sqrt": POS, "rsqrt": POS, "reciprocal": POS}
UNARY = {name: (UNARY_REFERENCE.get(name) or getattr(np, name), UNARY_INPUT.get(name, A))
         for name in _core._unary_ops}
PIECEWISE_CONSTANT = {"sign", "floor", "ceil", "round", "trunc"}  # zero or no gradient


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_and_method(name):
    ref, x = UNARY[name]
    t = ember.tensor(x)
    np.testing.assert_allclose(getattr(ember, name)(t).numpy(), ref(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(getattr(t, name)().numpy(), ref(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(UNARY) - PIECEWISE_CONSTANT - {"abs", "relu"}))
def test_unary_gradients(name):
    gradcheck(getattr(ember, name), UNARY[name][1])


def test_expm1_keeps_the_digits_that_exp_minus_one_loses():
    x = np.array([1e-10, -3e-8, 0.0, 2.5], dtype=np.float64)
    np.testing.assert_allclose(ember.expm1(ember.tensor(x)).numpy(), np.expm1(x), rtol=1e-15)
    np.testing.assert_allclose(ember.tensor(x).float().expm1().numpy(),
                               np.expm1(x.astype(np.float32)), rtol=3e-7)


def test_activations_with_parameters():
    t = ember.tensor(A)
    np.testing.assert_allclose(ember.leaky_relu(t, 0.1).numpy(), np.where(A > 0, A, 0.1 * A),
                               rtol=1e-6)
    np.testing.assert_allclose(t.elu().numpy(), np.where(A > 0, A, np.exp(A) - 1), rtol=1e-5)
    np.testing.assert_allclose(ember.softplus(t).numpy(), np.log1p(np.exp(A)), rtol=1e-5)
    assert ember.gelu(t, approximate="tanh").shape == (3, 4)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasts_like_numpy(name):
    out = getattr(ember, name)(ember.tensor(A), ember.tensor(B))
    np.testing.assert_allclose(out.numpy(), BINARY[name](A, B), rtol=1e-6)
    gradcheck(getattr(ember, name), A, B)


# The plain binary ops (core-runtime's ember/ops/binary.def, every one bound from that list):
# NumPy's function of the same name, unless named here, on operands of the input named here
# (values on a grid of 0.5, so that comparisons meet ties; positive divisors and bases).
BINARY_REFERENCE = {
    "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "atan2": np.arctan2,
}
GRID = (np.round(A * 2) / 2, np.round(B * 2) / 2)
INTS = (RNG.integers(-9, 10, (3, 4)), RNG.integers(-9, 10, (4,)))
BINARY_INPUT = {"div": (A, POS[0]), "pow": (POS, B), "floor_divide": (A * 4, POS[0]),
                "remainder": (A * 4, POS[0]), "fmod": (A * 4, POS[0]),
                "atan2": (A, POS[0]), "hypot": (A, POS[0]), "bitwise_and": INTS, "bitwise_or": INTS,
                "bitwise_xor": INTS}
BINARY_SCHEMA = {name: (BINARY_REFERENCE.get(name) or getattr(np, name),
                        BINARY_INPUT.get(name, GRID)) for name in _core._binary_ops}
NO_GRADIENT = {"floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "lt",
               "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}


@pytest.mark.parametrize("name", sorted(BINARY_SCHEMA))
def test_binary_schema_function_and_method_broadcast_and_strided(name):
    ref, (a, b) = BINARY_SCHEMA[name]
    want = ref(a, b)
    for x, y in [(ember.tensor(a), ember.tensor(b)),  # broadcast
                 (ember.tensor(np.ascontiguousarray(a.T)).t(), ember.tensor(b)),  # strided
                 (ember.tensor(a), ember.tensor(np.broadcast_to(b, a.shape).copy()))]:
        for out in (getattr(ember, name)(x, y), getattr(x, name)(y)):
            assert out.shape == want.shape
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(BINARY_SCHEMA) - NO_GRADIENT))
def test_binary_schema_gradients(name):
    a, b = BINARY_SCHEMA[name][1]
    gradcheck(getattr(ember, name), A if name not in BINARY_INPUT else a, b)


@pytest.mark.parametrize("name", sorted(NO_GRADIENT - {"bitwise_and", "bitwise_or", "bitwise_xor"}))
def test_binary_schema_ops_without_gradient_give_results_without_history(name):
    a, b = BINARY_SCHEMA[name][1]
    x = ember.tensor(a, requires_grad=True)
    assert not getattr(ember, name)(x, ember.tensor(b)).requires_grad


def test_pow_and_its_gradients():
    np.testing.assert_allclose(ember.pow(ember.tensor(POS), ember.tensor(B)).numpy(),
                               POS ** B, rtol=1e-5)
    gradcheck(lambda x, y: x ** y, POS, B)
    gradcheck(lambda x: x ** 3, A)
    gradcheck(lambda x: 2 ** x, A)


def test_operators_with_scalars_on_either_side():
    t = ember.tensor(POS)
    for scalar in [2, 2.5, np.float64(2.5), np.int64(3), np.float32(0.5)]:
        s = float(scalar)
        for out, ref in [(t + scalar, POS + s), (scalar + t, s + POS), (t - scalar, POS - s),
                         (scalar - t, s - POS), (t * scalar, POS * s), (scalar * t, s * POS),
                         (t / scalar, POS / s), (scalar / t, s / POS), (t ** scalar, POS ** s),
                         (scalar ** t, s ** POS)]:
            assert isinstance(out, ember.Tensor)
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose((-t).numpy(), -POS)
    np.testing.assert_allclose(abs(ember.tensor(A)).numpy(), np.abs(A), rtol=1e-6)


def test_integer_tensors_and_python_floats_promote_as_pytorch():
    i = ember.tensor([1, 2, 3])
    assert (i + 1).dtype == ember.int64
    assert (i * 2.0).dtype == ember.float32
    assert (i / 2).dtype == ember.float32
    assert (i + ember.tensor([1.0])).dtype == ember.float32


def test_comparisons_and_logic():
    t, u = ember.tensor(A), ember.tensor(B)
    for out, ref in [(t < u, A < B), (t <= 0, A <= 0), (t > u, A > B), (t >= 0.5, A >= 0.5),
                     (t == t, A == A), (t != u, A != B), (0 < t, 0 < A)]:
        assert out.dtype == ember.bool
        np.testing.assert_array_equal(out.numpy(), ref)
    m = t > 0
    np.testing.assert_array_equal((~m).numpy(), ~(A > 0))
    np.testing.assert_array_equal((m & (u > 0)).numpy(), (A > 0) & (B > 0))
    np.testing.assert_array_equal((m | (u > 0)).numpy(), (A > 0) | (B > 0))
    np.testing.assert_array_equal((m ^ (u > 0)).numpy(), (A > 0) ^ (B > 0))


def test_floor_divide_remainder_and_bitwise_operators_match_numpy():
    a = np.array([[7, -7, 5, -5, 0, 9]], dtype=np.int64).repeat(2, axis=0)
    b = np.array([[2, 2, -3, -3, 4, 1]], dtype=np.int64).repeat(2, axis=0)
    x, y = ember.tensor(a), ember.tensor(b)
    np.testing.assert_array_equal((x // y).numpy(), a // b)  # floor, not truncation
    np.testing.assert_array_equal((x % y).numpy(), a % b)  # the divisor's sign
    np.testing.assert_array_equal((x // 3).numpy(), a // 3)
    np.testing.assert_array_equal((20 // y).numpy(), 20 // b)
    np.testing.assert_array_equal((-8 % y).numpy(), -8 % b)
    np.testing.assert_array_equal((x.T // y.T).numpy(), a.T // b.T)  # strided operands
    assert (x // 3).dtype == ember.int64
    f, g = a.astype(np.float32) + 0.5, b.astype(np.float32)
    np.testing.assert_allclose((ember.tensor(f) // ember.tensor(g)).numpy(), f // g)
    np.testing.assert_allclose((ember.tensor(f) % ember.tensor(g)).numpy(), f % g, rtol=1e-6)
    np.testing.assert_allclose((ember.tensor(f) % 2.5).numpy(), f % 2.5, rtol=1e-6)
    np.testing.assert_array_equal((x & y).numpy(), a & b)
    np.testing.assert_array_equal((x | 6).numpy(), a | 6)
    np.testing.assert_array_equal((12 ^ x).numpy(), 12 ^ a)
    np.testing.assert_array_equal((~x).numpy(), ~a)
    t = ember.tensor([7, -7])
    same = t
    t //= 2
    t %= 3
    assert t is same
    np.testing.assert_array_equal(t.numpy(), (np.array([7, -7]) // 2) % 3)
    with pytest.raises(ember.DTypeError, match="bitwise"):
        ember.tensor([1.0]) & ember.tensor([2.0])


def test_remainder_carries_history_and_floor_divide_does_not():
    # a away from 0 and 1.5 <= |b| <= 2.5: floor(a / b) is -1 or 0, with no jump within eps.
    rng = np.random.default_rng(3)
    a = rng.uniform(0.2, 1.0, (2, 3)) * rng.choice([-1.0, 1.0], (2, 3))
    b = rng.uniform(1.5, 2.5, (3,)) * np.array([1.0, -1.0, 1.0])
    gradcheck(lambda x, y: x % y, a, b)  # y broadcasts: its gradient is summed back
    gradcheck(lambda x, y: ember.remainder(x, y), a, b)
    gradcheck(lambda x, y: x.remainder(y), a.T, b[:2])  # a transposed view
    gradcheck(lambda x: x % 1.75, a)
    gradcheck(lambda x: 2.5 % x, b)
    x = ember.tensor(a, requires_grad=True)
    y = x % 1.75
    assert y.requires_grad and not y.is_leaf
    np.testing.assert_allclose(y.detach().numpy(), np.remainder(a, 1.75), rtol=1e-12)
    assert not (x // 1.75).requires_grad  # no gradient, as in PyTorch


def test_in_place_operators_keep_the_object():
    t = ember.tensor([1.0, 2.0])
    same = t
    t += 1
    t *= ember.tensor([2.0, 3.0])
    t -= 0.5
    t /= 2
    assert t is same and t.tolist() == [1.75, 4.25]
    i = ember.tensor([1, 2])
    with pytest.raises(TypeError):
        i += 0.5
    w = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="no_grad"):
        w += 1
    with ember.no_grad():
        w -= 0.5
    assert w.tolist() == [0.5] and w.requires_grad


def test_in_place_methods():
    t = ember.zeros(3)
    assert t.fill_(2).tolist() == [2.0] * 3
    assert t.zero_().tolist() == [0.0] * 3
    assert t.copy_(ember.tensor([1, 2, 3])).tolist() == [1.0, 2.0, 3.0]
    assert t.add_(1).tolist() == [2.0, 3.0, 4.0]
    assert t.clamp_(max=3).tolist() == [2.0, 3.0, 3.0]
    u = ember.zeros(1000).uniform_(-1, 1).numpy()
    assert -1 <= u.min() and u.max() < 1
    assert abs(ember.zeros(1000).normal_(5, 1).numpy().mean() - 5) < 0.2


def test_where_clamp_masked_fill():
    t = ember.tensor(A)
    np.testing.assert_allclose(ember.where(t > 0, t, 0.0).numpy(), np.where(A > 0, A, 0),
                               rtol=1e-6)
    np.testing.assert_allclose(t.clamp(-0.5, 0.5).numpy(), np.clip(A, -0.5, 0.5), rtol=1e-6)
    np.testing.assert_allclose(t.clamp(min=0).numpy(), np.maximum(A, 0), rtol=1e-6)
    np.testing.assert_allclose(t.masked_fill(t < 0, 1.0).numpy(), np.where(A < 0, 1, A),
                               rtol=1e-6)
    gradcheck(lambda x, y: ember.where(x > 0, x, y), A, A[::-1].copy())


REDUCTIONS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1)])
def test_reductions_over_dims(name, dim):
    for keepdim in [False, True]:
        out = getattr(ember.tensor(A), name)(dim=dim, keepdim=keepdim)
        ref = REDUCTIONS[name](A, axis=dim, keepdims=keepdim)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    gradcheck(lambda x: getattr(ember, name)(x, dim), A)


def test_statistics_and_norms():
    t = ember.tensor(A)
    np.testing.assert_allclose(t.var().numpy(), A.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(t.var(1, unbiased=False).numpy(), A.var(1), rtol=1e-5)
    np.testing.assert_allclose(t.std(0, correction=0).numpy(), A.std(0), rtol=1e-5)
    np.testing.assert_allclose(t.norm().numpy(), np.linalg.norm(A), rtol=1e-5)
    np.testing.assert_allclose(t.logsumexp(1).numpy(), np.log(np.exp(A).sum(1)), rtol=1e-5)
    assert bool((t > -10).all()) and not bool((t > 10).any())
    gradcheck(lambda x: x.var(1), A)
    gradcheck(lambda x: x.logsumexp(1), A)


def test_max_and_min_forms():
    t = ember.tensor(A)
    values, indices = t.max(1)
    np.testing.assert_allclose(values.numpy(), A.max(1), rtol=1e-6)
    np.testing.assert_array_equal(indices.numpy(), A.argmax(1))
    r = t.min(dim=0, keepdim=True)
    assert r.values.shape == (1, 4) and r.indices.dtype == ember.int64
    np.testing.assert_allclose(t.max().numpy(), A.max(), rtol=1e-6)
    np.testing.assert_array_equal(t.argmax(1).numpy(), A.argmax(1))
    assert t.argmin().item() == A.argmin()
    gradcheck(lambda x: x.max(1).values, A)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3, 4)), ((3,), (3, 2)),
                                    ((2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 2))])
def test_matmul_forms(shapes):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    np.testing.assert_allclose((ember.tensor(a) @ ember.tensor(b)).numpy(), a @ b, rtol=1e-5)
    gradcheck(ember.matmul, a, b)


def test_linear():
    x, w, b = RNG.standard_normal((5, 3)), RNG.standard_normal((2, 3)), RNG.standard_normal(2)
    out = ember.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(out.numpy(), x @ w.T + b, rtol=1e-5)
    gradcheck(ember.linear, x, w, b)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
floats = st.floats(-10, 10, width=32)


@settings(max_examples=40, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       st.sampled_from(["add", "sub", "mul", "maximum"]),
       st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
def test_property_binary_broadcasting(bshapes, name, dtype):
    a = np.arange(np.prod(bshapes.input_shapes[0]), dtype=dtype).reshape(bshapes.input_shapes[0])
    b = np.ones(bshapes.input_shapes[1], dtype=dtype) * 3
    out = getattr(ember, name)(ember.tensor(a), ember.tensor(b))
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum}[name]
    assert out.shape == bshapes.result_shape
    np.testing.assert_allclose(out.numpy(), ref(a, b), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, shapes, elements=floats), st.data())
def test_property_reductions(x, data):
    dims = data.draw(st.none() | st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True,
                                          min_size=1, max_size=max(x.ndim, 1)).map(tuple))
    if x.ndim == 0:
        dims = None
    keepdim = data.draw(st.booleans())
    out = ember.tensor(x).sum(dim=dims, keepdim=keepdim)
    np.testing.assert_allclose(out.numpy(), x.sum(axis=dims, keepdims=keepdim), rtol=1e-9,
                               atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.integers(0, 2))
def test_property_matmul(n, k, m, batch):
    a = RNG.standard_normal((batch, n, k) if batch else (n, k))
    b = RNG.standard_normal((k, m))
    np.testing.assert_allclose((ember.tensor(a) @ ember.tensor(b)).numpy(), a @ b, rtol=1e-9,
                               atol=1e-12)
