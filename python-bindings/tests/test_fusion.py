"""Fused kernels generated at run time (ember._core._fused_elementwise, a private face of the
code generator that compiled steps use): random chains of elementwise ops over random
broadcastable shapes, every dtype, non-contiguous inputs, against the same ops run eagerly one by
one: bit for bit on the CPU (the fused kernel does the library's arithmetic in the library's
order), also where the chain ends in a sum, mean or amax over its innermost dims (the kernel folds
each row in the order of the library's CPU reduction), over rows of every length that order
treats apart. Also the fallback when no compiler is there, and the generated source."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import _core

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
ANY_NUMERIC = ["neg", "abs", "relu"]
# erf and the activation backwards have no public eager op to compare with here: the C++ tests
# (autodiff-engine/tests/test_fusion_codegen.cpp) check them against the library's kernels.
FLOAT_ONLY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "gelu", "gelu_tanh",
              "silu", "reciprocal"]
ARITHMETIC = ["add", "sub", "mul", "maximum", "minimum"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]

# The eager op of each node kind, through the public API.
EAGER = {
    **{name: getattr(ember, name) for name in ANY_NUMERIC + ARITHMETIC + COMPARISONS},
    **{name: getattr(ember, name) for name in FLOAT_ONLY if hasattr(ember, name)},
    "gelu": lambda x: ember.nn.functional.gelu(x),
    "gelu_tanh": lambda x: ember.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda x: ember.nn.functional.silu(x),
    "div": ember.div,
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test compiles into a cache of its own."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))


def as_float64(t):
    return t.to(ember.float64).numpy()


def assert_same_bits(fused, eager, what):
    assert fused.shape == eager.shape and fused.dtype == eager.dtype, what
    a, b = as_float64(fused), as_float64(eager)
    same = (a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b))
    assert same.all(), f"{what}\nfused {a[~same][:5]} eager {b[~same][:5]}"


@st.composite
def strided_input(draw, shape, dtype):
    """An ember tensor that broadcasts to `shape`: leading dims dropped, some dims of size 1, and
    laid out non-contiguously (every other element of a larger tensor, or the last two dims
    transposed)."""
    s = list(shape[draw(st.integers(0, len(shape))):])
    s = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in s]
    step = draw(st.sampled_from([1, 2]))
    swap = len(s) >= 2 and draw(st.booleans())
    stored = s[:-2] + [s[-1], s[-2]] if swap else list(s)
    big = [d * step for d in stored]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype == "bool":
        values = rng.integers(0, 2, big)
    elif dtype == "uint8":
        values = rng.integers(0, 256, big)
    elif dtype in FLOATS:
        values = rng.uniform(-3, 3, big)
    else:
        values = rng.integers(-100, 101, big)
    t = ember.tensor(values.astype(np.float64)).to(getattr(ember, dtype))
    if step == 2 and stored:
        t = t[tuple(slice(None, None, 2) for _ in stored)]
    if swap:
        t = t.transpose(-1, -2)
    assert list(t.shape) == s
    return t


@st.composite
def chains(draw, exact=True):
    """(nodes, inputs, eager result): a random chain and the same ops run one by one."""
    shape = draw(st.lists(st.integers(1, 5), min_size=0, max_size=4))
    main = draw(st.sampled_from(DTYPES if exact else FLOATS))
    inputs, nodes, values = [], [], []

    def push(node, value):
        nodes.append(node)
        values.append(value)
        return len(nodes) - 1

    def as_dtype(i, dtype):
        if str(values[i].dtype) == f"ember.{dtype}":
            return i
        if values[i].dtype.is_floating_point and dtype not in FLOATS and dtype != "bool":
            i = push(("clamp", i, 0, 100), ember.clamp(values[i], 0, 100))
        return push(("cast", i, dtype), values[i].to(getattr(ember, dtype)))

    for k in range(draw(st.integers(1, 3))):
        dtype = main if k == 0 or draw(st.booleans()) else draw(st.sampled_from(DTYPES))
        t = draw(strided_input(shape, dtype))
        inputs.append(t)
        push(("input", k), t)
    last = 0
    for _ in range(draw(st.integers(1, 6))):
        dtype = str(values[last].dtype).removeprefix("ember.")
        kinds = ["unary", "binary", "where", "clamp"]  # floating stays floating
        kind = draw(st.sampled_from(kinds + (["compare", "cast"] if exact else [])))
        other = as_dtype(draw(st.integers(0, len(nodes) - 1)), dtype)
        if dtype == "bool" and kind in ("unary", "binary", "clamp"):
            kind = "compare" if draw(st.booleans()) else "cast"
        if kind == "unary":
            ops = ANY_NUMERIC + (FLOAT_ONLY if dtype in FLOATS else [])
            op = draw(st.sampled_from(ops))
            last = push((op, last), EAGER[op](values[last]))
        elif kind == "binary":
            op = draw(st.sampled_from(ARITHMETIC + (["div"] if dtype in FLOATS else [])))
            last = push((op, last, other), EAGER[op](values[last], values[other]))
        elif kind == "compare":
            op = draw(st.sampled_from(COMPARISONS))
            last = push((op, last, other), EAGER[op](values[last], values[other]))
        elif kind == "where":
            cond = as_dtype(draw(st.integers(0, len(nodes) - 1)), "bool")
            last = push(("where", cond, last, other),
                        ember.where(values[cond], values[last], values[other]))
        elif kind == "clamp":
            lo = draw(st.integers(-3, 2))
            hi = draw(st.one_of(st.none(), st.integers(lo, 4)))
            last = push(("clamp", last, lo, hi), ember.clamp(values[last], lo, hi))
        elif exact:
            last = as_dtype(last, draw(st.sampled_from(DTYPES)))
    # A group's result is its last node (an operand cast for an op not drawn in the end may come
    # after `last`), of its inputs' broadcast shape (all of them may have dropped dims).
    full = np.broadcast_shapes(*(tuple(t.shape) for t in inputs))
    result = values[-1].expand(*full) if full else values[-1]
    return nodes, inputs, result.contiguous()


@settings(max_examples=40, deadline=None)
@given(chains())
def test_random_chains_equal_eager_bit_for_bit(chain):
    nodes, inputs, eager = chain
    out, fused, reason = _core._fused_elementwise(nodes, inputs)
    assert fused, reason
    assert_same_bits(out, eager, str(nodes))
    unfused, fused_again, _ = _core._fused_elementwise(nodes, inputs, fused=False)
    assert not fused_again
    assert_same_bits(unfused, eager, str(nodes))


@settings(max_examples=25, deadline=None)
@given(chains(exact=False), st.sampled_from(["sum", "mean", "max"]), st.booleans(), st.data())
def test_random_chains_ending_in_a_reduction(chain, reduction, keepdim, data):
    nodes, inputs, eager = chain
    if eager.ndim == 0:
        return
    dims = data.draw(st.integers(1, eager.ndim))
    out, fused, reason = _core._fused_elementwise(nodes, inputs, reduction, dims, keepdim)
    assert fused, reason
    axes = list(range(eager.ndim - dims, eager.ndim))
    want = {"sum": ember.sum, "mean": ember.mean, "max": ember.amax}[reduction](
        eager, axes, keepdim)
    assert_same_bits(out, want, f"{nodes} {reduction} of {dims} dims")


# Row lengths the library's CPU reduction treats apart: empty, one, fewer than its 32 lanes, odd,
# around its blocks of 2048 floats (1024 doubles), several blocks and a tail; and (with one row)
# at least 2^16 elements, which it cuts into chunks.
ROWS = [0, 1, 7, 33, 1023, 1025, 2047, 2048, 2049, 6151]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(ROWS + [70001]), st.sampled_from([1, 3, 9]), st.sampled_from(FLOATS),
       st.sampled_from(["sum", "mean", "max"]), st.booleans(), st.data())
def test_long_rows_ending_in_a_reduction_equal_eager_bit_for_bit(n, rows, dtype, reduction,
                                                                 keepdim, data):
    if n == 0 and reduction == "max":
        reduction = "sum"  # amax of nothing has no value (the builder refuses it, as eager)
    if n == 70001:
        rows = 1
    # x of the whole shape, every other element or transposed; w broadcast or strided at random.
    if data.draw(st.booleans()):
        x = ember.randn(rows, 2 * n).to(getattr(ember, dtype))[:, ::2]
    else:
        x = ember.randn(n, rows).to(getattr(ember, dtype)).transpose(0, 1)
    w = data.draw(strided_input([rows, n], dtype))
    nodes = [("input", 0), ("input", 1), ("sub", 0, 1), ("exp", 2), ("mul", 3, 1)]
    out, fused, reason = _core._fused_elementwise(nodes, [x, w], reduction, 1, keepdim)
    assert fused, reason
    value = ((x - w).exp() * w).expand(rows, n).contiguous()
    want = {"sum": ember.sum, "mean": ember.mean, "max": ember.amax}[reduction](
        value, [-1], keepdim)
    assert_same_bits(out, want, f"{rows} rows of {n} {dtype}, {reduction}")


def test_a_large_chain_spread_over_threads():
    x = ember.randn(1 << 20)[1::2]  # non-contiguous, 2^19 elements
    b = ember.randn(1)
    nodes = [("input", 0), ("input", 1), ("mul", 0, 1), ("gelu", 2), ("add", 3, 0)]
    out, fused, reason = _core._fused_elementwise(nodes, [x, b])
    assert fused, reason
    assert_same_bits(out, ember.nn.functional.gelu(x * b) + x, "x * b -> gelu -> + x")


def test_the_source_is_c_from_the_ir_only():
    x = ember.randn(64, 128)
    nodes = [("input", 0), ("constant", 0.5, "float32"), ("mul", 0, 1), ("tanh", 2)]
    source = _core._fused_source(nodes, [x])
    assert 'extern "C" void ember_fused' in source
    assert "e_vtanh(" in source  # the library's own vectorisable tanh, as the eager kernel
    cuda = _core._fused_source(nodes, [x], target="cuda")
    assert "__global__" in cuda and "tanhf(" in cuda


def test_bad_nodes_raise_typed_errors():
    x = ember.ones(3, dtype="int32")
    with pytest.raises(TypeError, match="exp"):
        _core._fused_elementwise([("input", 0), ("exp", 0)], [x])
    with pytest.raises(ValueError, match="unknown op"):
        _core._fused_elementwise([("input", 0), ("no_such_op", 0)], [x])
    with pytest.raises(IndexError):
        _core._fused_elementwise([("input", 1)], [x])


@pytest.mark.parametrize("env", [{"EMBER_CXX": "/nonexistent"}, {"EMBER_FUSION": "0"}])
def test_without_a_compiler_the_group_runs_unfused_with_one_warning(env, tmp_path):
    """In a process of its own, so that nothing compiled earlier is reused."""
    script = (
        "import ember\nfrom ember import _core\n"
        "x = ember.arange(6.0).reshape(2, 3)\n"
        "nodes = [('input', 0), ('neg', 0), ('relu', 1)]\n"
        "for _ in range(3):\n"
        "    out, fused, reason = _core._fused_elementwise(nodes, [x])\n"
        "    assert not fused and reason, reason\n"
        "    assert out.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]\n"
        "print(reason)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, **env, "EMBER_CACHE_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("runs unfused") == 1, run.stderr
    assert list(env.values())[0] in run.stdout + run.stderr
