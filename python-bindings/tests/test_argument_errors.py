"""Calls with arguments of the wrong kind raise ember.ArgumentTypeError (a TypeError) naming the
function and what each argument is (type and shape, never values), with the fix; never
pybind11's "incompatible function arguments" dump, which printed whole tensors."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F

x = ember.ones(2, 3)
a = np.ones((2, 3), dtype=np.float32)

WRONG_CALLS = [
    ("softmax", lambda: F.softmax(x)),
    ("log_softmax", lambda: ember.log_softmax(x)),
    ("Tensor.softmax", lambda: x.softmax()),
    ("relu", lambda: F.relu(a)),
    ("linear", lambda: F.linear(x, a)),
    ("conv2d", lambda: F.conv2d(a, ember.ones(1, 3, 1, 1))),
    ("cross_entropy", lambda: F.cross_entropy(x, [0, 1])),
    ("mse_loss", lambda: F.mse_loss(x, a)),
    ("matmul", lambda: ember.matmul(x, "w")),
    ("Tensor.unsqueeze", lambda: x.unsqueeze("0")),
    ("reshape", lambda: ember.reshape(x, "2x3")),
    ("embedding", lambda: F.embedding(a, x)),
    ("max_pool2d", lambda: F.max_pool2d(x.reshape(1, 1, 2, 3))),
    ("Tensor.transpose", lambda: x.transpose(0)),
]


@pytest.mark.parametrize("name, call", WRONG_CALLS, ids=[c[0] for c in WRONG_CALLS])
def test_wrong_calls_name_the_function_and_never_dump_pybind11s_message(name, call):
    with pytest.raises(TypeError) as info:
        call()
    message = str(info.value)
    assert "incompatible function arguments" not in message
    assert "Invoked with" not in message
    assert name.split(".")[-1] + "(" in message or name in message, message
    assert "1., 1." not in message and "1.0, 1.0" not in message  # no values


def test_a_missing_argument_is_named_with_the_signature():
    with pytest.raises(ember.ArgumentTypeError) as info:
        F.softmax(x)
    message = str(info.value)
    assert "input=Tensor [2, 3] float32 cpu" in message
    assert "missing 'dim'" in message and "dim: int" in message and "Fix: pass dim" in message


def test_a_numpy_array_says_convert_with_from_numpy_and_shows_no_values():
    big = np.full((64, 100), 0.123456, dtype=np.float32)
    with pytest.raises(ember.ArgumentTypeError) as info:
        ember.exp(big)
    message = str(info.value)
    assert "numpy.ndarray [64, 100] float32" in message and "ember.from_numpy" in message
    assert "0.123" not in message


def test_a_model_called_on_a_numpy_array_says_convert_and_prints_no_weights():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    with pytest.raises(ember.ArgumentTypeError) as info:
        model(a)
    message = str(info.value)
    assert "Sequential" in message and "numpy.ndarray [2, 3] float32" in message
    assert "ember.from_numpy" in message
    assert "Parameter" not in message and "requires_grad" not in message
    assert model(ember.from_numpy(a)).shape == (2, 4)


def test_right_calls_still_work_through_the_checks():
    assert F.softmax(x, 1).shape == (2, 3)
    assert x.softmax(dim=0).shape == (2, 3)
    assert ember.add(x, 2).tolist() == [[3.0] * 3] * 2
    assert x.sum().item() == 6.0
    # calls that need pybind11's implicit conversions (int for float) still find their overload
    assert x.clamp(0, 1).tolist() == [[1.0] * 3] * 2
    assert ember.leaky_relu(-x, 1).tolist() == [[-1.0] * 3] * 2
    assert F.softmax(input=x, dim=1).shape == (2, 3)


def test_the_explaining_overload_is_not_shown_as_a_signature():
    with pytest.raises(ember.ArgumentTypeError) as info:
        x.transpose(0)
    assert "arguments: object" not in str(info.value)
    assert "transpose(self: Tensor" in str(info.value)
