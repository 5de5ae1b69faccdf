"""Every C++ error type arrives as its own Python exception, message intact; bad input never
crashes the interpreter."""

import subprocess
import sys
import textwrap

import pytest

import ember

HIERARCHY = {
    "ShapeError": (ValueError,), "DTypeError": (TypeError,), "DeviceError": (),
    "IndexError": (IndexError,), "OutOfMemoryError": (MemoryError,),
    "NotSupportedError": (NotImplementedError,), "ValueError": (ValueError,),
}


@pytest.mark.parametrize("name", sorted(HIERARCHY))
def test_exception_classes(name):
    cls = getattr(ember, name)
    assert issubclass(cls, ember.EmberError) and issubclass(ember.EmberError, RuntimeError)
    for base in HIERARCHY[name]:
        assert issubclass(cls, base)
    assert cls.__module__ == "ember"


def test_each_error_is_raised_with_its_message():
    with pytest.raises(ember.ShapeError, match=r"\[2, 3\]"):
        ember.zeros(2, 3) + ember.zeros(4)
    with pytest.raises(ember.DTypeError):
        ember.zeros(2, dtype="int64").requires_grad_()
    with pytest.raises(ember.IndexError):
        ember.zeros(2, 3).transpose(0, 5)
    with pytest.raises(ember.ValueError):
        ember.zeros(-1)
    with pytest.raises(ember.EmberError, match="cuda:7"):  # DeviceError, or NotSupportedError
        ember.zeros(2, device="cuda:7")  # in a build without CUDA


def test_out_of_memory_under_a_cap():
    ember.set_memory_limit("1MiB")
    try:
        with pytest.raises(ember.OutOfMemoryError, match="cap|limit"):
            ember.zeros(1 << 20)
    finally:
        ember.set_memory_limit(None)
    assert ember.zeros(1 << 20).numel() == 1 << 20


def test_bad_inputs_to_ops():
    with pytest.raises(ember.ShapeError):
        ember.zeros(2, 3) @ ember.zeros(2, 3)
    with pytest.raises(ember.ShapeError):
        ember.zeros(6).view(4, 2)
    with pytest.raises(ember.ShapeError):
        ember.cat([ember.zeros(2, 3), ember.zeros(2, 4)])
    with pytest.raises(TypeError):
        ember.relu("x")
    with pytest.raises(TypeError):
        ember.zeros(2) + "x"
    with pytest.raises(ember.DTypeError):
        ember.cross_entropy(ember.zeros(3, 4), ember.tensor([0, 1, 2], dtype=ember.int32))
    with pytest.raises(ember.IndexError):
        ember.cross_entropy(ember.zeros(3, 4), ember.tensor([0, 1, 9]))
    with pytest.raises(ember.ShapeError):
        ember.conv2d(ember.zeros(1, 3, 8, 8), ember.zeros(4, 2, 3, 3))


BAD_INPUTS = """
import ember, numpy as np
attempts = [
    lambda: ember.zeros(2, 3) + ember.zeros(4),
    lambda: ember.zeros(2, 3)[5],
    lambda: ember.zeros(2)[ember.tensor([9])],
    lambda: ember.zeros(2, 3).reshape(7),
    lambda: ember.tensor([[1], [2, 3]]),
    lambda: ember.from_dlpack(object()),
    lambda: ember.zeros(3).numpy()[None] @ ember.zeros(2),
    lambda: ember.ones(2, requires_grad=True).backward(),
    lambda: ember.gather(ember.zeros(3), 0, ember.tensor([5])),
    lambda: ember.index_select(ember.zeros(3), 0, ember.tensor([-7])),
    lambda: ember.embedding(ember.tensor([4]), ember.zeros(3, 2)),
    lambda: ember.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 7])),
    lambda: ember.zeros(2).item(),
    lambda: ember.softmax(ember.zeros(2), 3),
    lambda: ember.zeros(2, dtype="nope"),
    lambda: ember.full((2,), float("nan"), dtype=ember.int32),
    lambda: ember.max_pool2d(ember.zeros(1, 1, 2, 2), 5),
]
raised = 0
for attempt in attempts:
    try:
        attempt()
    except Exception:
        raised += 1
print("survived", raised, len(attempts))
"""


def test_bad_input_never_crashes_the_interpreter():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(BAD_INPUTS)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("survived"), out.stdout + out.stderr


# ---- messages: each names the op, the offending value, the shapes, and the fix --------------

def raised(error, fn):
    """The message of the `error` that fn() raises."""
    with pytest.raises(error) as e:
        fn()
    return str(e.value)


X4 = ember.zeros(2, 3, 8, 8)


@pytest.mark.parametrize("call, parts", [
    (lambda: ember.avg_pool2d(X4, 2, stride=0), ["avg_pool2d", "stride (0, 0)", "must be >= 1"]),
    (lambda: ember.nn.AvgPool2d(2, stride=0)(X4), ["avg_pool2d", "stride (0, 0)"]),
    (lambda: ember.max_pool2d(X4, 2, stride=(1, 0)), ["max_pool2d", "stride (1, 0)"]),
    (lambda: ember.max_pool2d(X4, 2, dilation=0), ["max_pool2d", "dilation (0, 0)"]),
    (lambda: ember.max_pool2d(X4, 0), ["max_pool2d", "kernel_size (0, 0)"]),
    (lambda: ember.avg_pool2d(X4, 3, padding=-1), ["avg_pool2d", "padding (-1, -1)", ">= 0"]),
    (lambda: ember.max_pool2d(X4, 3, padding=2),
     ["max_pool2d", "padding (2, 2)", "kernel_size (3, 3)", "kernel_size // 2 = (1, 1)"]),
    (lambda: ember.conv2d(X4, ember.zeros(4, 3, 3, 3), stride=0), ["conv2d", "stride (0, 0)"]),
    (lambda: ember.conv2d(X4, ember.zeros(4, 3, 3, 3), dilation=-1), ["conv2d", "dilation"]),
    (lambda: ember.conv2d(X4, ember.zeros(4, 3, 3, 3), padding=-2), ["conv2d", "padding (-2, -2)"]),
    (lambda: ember.conv2d(X4, ember.zeros(4, 3, 3, 3), groups=0), ["conv2d", "groups (0)"]),
])
def test_bad_pooling_and_conv_parameters_raise(call, parts):
    message = raised(ember.ValueError, call)
    for part in parts:
        assert part in message, message


def test_conv2d_hints_reason_about_the_missing_or_misplaced_dim():
    conv1, conv3 = ember.nn.Conv2d(1, 4, 3), ember.nn.Conv2d(3, 4, 3)
    # A batch of 16 single-channel images lacks the channel dim, not the batch dim.
    message = raised(ember.ShapeError, lambda: conv1(ember.zeros(16, 28, 28)))
    assert "[16, 28, 28]" in message and "x.unsqueeze(1)" in message, message
    assert "unsqueeze(0)" not in message
    # One 3-channel image is unbatched input, which runs as PyTorch's does.
    assert list(conv3(ember.zeros(3, 28, 28)).shape) == [4, 26, 26]
    # NHWC: the channels are last; building Conv2d(28, ...) would be wrong.
    message = raised(ember.ShapeError, lambda: conv1(ember.zeros(16, 28, 28, 1)))
    assert "channels-last" in message and "x.permute(0, 3, 1, 2)" in message, message
    assert "Conv2d(28" not in message
    # A plain channel-count mismatch still suggests the layer that fits.
    message = raised(ember.ShapeError, lambda: conv3(ember.zeros(2, 5, 8, 8)))
    assert "expected 3 input channels" in message and "Conv2d(5, 4, ...)" in message, message


def test_an_integer_input_to_linear_is_told_to_cast_to_float():
    message = raised(ember.DTypeError, lambda: ember.nn.Linear(3, 2)(ember.tensor([[1, 2, 3]])))
    assert "int64" in message and "x.float()" in message and "ember.float32" in message, message
    assert ".to(int64)" not in message
    # The op itself names the operand to cast, in Python's spelling.
    message = raised(ember.DTypeError, lambda: ember.tensor([[1, 2]]) @ ember.ones(2, 2))
    assert "a.to(ember.float32)" in message, message


def test_python_callers_see_python_names():
    x = ember.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    message = raised(ember.EmberError, y.backward)
    assert "retain_graph=True" in message and "retain_graph=true" not in message, message
    message = raised(ember.ValueError, lambda: ember.ones(2).sum().backward())
    assert "requires_grad=True" in message and "ember.no_grad()" in message, message
    assert "NoGradGuard" not in message
    message = raised(ember.DTypeError, lambda: ember.tensor([[1, 2]]) @ ember.ones(2, 2))
    assert "DType::" not in message
    # A module called on its own is named by its type alone; a submodule by its path.
    message = raised(ember.ShapeError, lambda: ember.nn.Linear(4, 2)(ember.zeros(3)))
    assert message.startswith("Linear: input is") and "the model itself" not in message, message
    model = ember.nn.Sequential(ember.nn.Linear(4, 2), ember.nn.Linear(3, 1))
    message = raised(ember.ShapeError, lambda: model(ember.zeros(5, 4)))
    assert message.startswith("Linear '1': input is"), message


def test_split_names_the_sizes_and_the_shape():
    x = ember.zeros(10, 2)
    message = raised(ember.ShapeError, lambda: x.split([3, 4]))
    assert "[3, 4]" in message and "sum to 7" in message and "[10, 2]" in message, message
    assert "sum to 10" in message
    message = raised(ember.ValueError, lambda: x.split([12, -2]))
    assert "[12, -2]" in message and "-2 is negative" in message and "[10, 2]" in message
    message = raised(ember.ValueError, lambda: x.split(0))
    assert "split_size is 0" in message and "[10, 2]" in message, message
    message = raised(ember.ShapeError, lambda: ember.split(x, [1, 3], dim=-1))
    assert "dim 1" in message and "size 2" in message, message


def test_index_errors_name_the_value_the_dim_and_the_shape():
    x = ember.zeros(3, 4)
    message = raised(ember.IndexError, lambda: x[0, 5])
    assert "index 5" in message and "dim 1 (size 4)" in message and "[3, 4]" in message, message
    message = raised(ember.IndexError, lambda: x[-4])
    assert "index -4" in message and "dim 0 (size 3)" in message and "-3 to 2" in message
    message = raised(ember.IndexError, lambda: x[..., -5])
    assert "index -5" in message and "dim 1" in message, message
    message = raised(ember.IndexError, lambda: x[:, ember.tensor([1, -7])])
    assert "index -7" in message and "dim 1 (size 4)" in message, message
    message = raised(ember.IndexError, lambda: x[ember.tensor([True, False])])
    assert "mask is [2]" in message and "[3]" in message and "[3, 4]" in message, message
    message = raised(ember.IndexError, lambda: x[ember.ones(3, 3, dtype=ember.bool)])
    assert "mask is [3, 3]" in message and "[3, 4]" in message, message


def test_probabilities_outside_0_1_name_the_value_and_shape():
    x = ember.zeros(4, 5)
    for p in (1.5, -0.25):
        for training in (True, False):
            message = raised(ember.ValueError, lambda: ember.dropout(x, p, training))
            assert f"p is {p}" in message and "[4, 5]" in message and "[0, 1]" in message
    message = raised(ember.ValueError, lambda: ember.nn.Dropout(2.0)(x))
    assert "p is 2" in message, message
    logits, target = ember.zeros(4, 5), ember.tensor([0, 1, 2, 3])
    for eps in (1.5, -0.1):
        message = raised(ember.ValueError,
                         lambda: ember.cross_entropy(logits, target, label_smoothing=eps))
        assert f"label_smoothing is {eps}" in message and "[4,5]" in message.replace(" ", "")
        assert "[0, 1]" in message, message


def test_tensor_from_ragged_or_object_data_names_where():
    message = raised(ember.ValueError, lambda: ember.tensor([[1, 2, 3], [4, 5]]))
    assert "data[1] has length 2" in message and "length 3" in message, message
    assert "[2, 3]" in message
    message = raised(ember.ValueError, lambda: ember.tensor([[1, 2], 3]))
    assert "data[1] is a number" in message, message
    np = pytest.importorskip("numpy")
    rows = np.empty(2, dtype=object)
    rows[0], rows[1] = [1, 2], [3]
    message = raised(ember.DTypeError, lambda: ember.tensor(rows))
    assert "dtype object" in message and "(2,)" in message and "astype" in message, message


def test_functional_conv2d_hint_adds_the_missing_dim():
    weight = ember.zeros(4, 1, 3, 3)
    message = raised(ember.ShapeError, lambda: ember.conv2d(ember.zeros(16, 8, 8), weight))
    assert "[16, 8, 8]" in message and "unsqueeze(1)" in message, message
    message = raised(ember.ShapeError,
                     lambda: ember.conv2d(ember.zeros(3, 8, 8), ember.zeros(4, 3, 3, 3)))
    assert "unsqueeze(0)" in message, message
