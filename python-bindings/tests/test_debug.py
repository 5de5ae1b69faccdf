"""ember.debug: the first parameter with a non-finite gradient, and tensor statistics."""

import numpy as np
import pytest

import ember
from ember import debug, nn


def test_check_nan_gradients_names_the_first_bad_parameter():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    m(ember.ones(1, 2)).sum().backward()
    assert debug.check_nan_gradients(m.named_parameters()) is None
    m[1].weight.grad = ember.tensor([[1.0, float("inf")]])
    m[1].bias.grad = ember.tensor([float("nan")])
    assert debug.check_nan_gradients(m.named_parameters()) == "1.weight"
    assert debug.check_nan_gradients(m.parameters()) == "param 2"


def test_tensor_stats():
    a = np.array([1.0, 2.0, 3.0, 6.0])
    s = debug.tensor_stats(ember.tensor(a))
    assert (s["min"], s["max"], s["nan_count"], s["inf_count"]) == (1.0, 6.0, 0, 0)
    assert s["mean"] == pytest.approx(3.0) and s["std"] == pytest.approx(a.std(ddof=1))
    assert s["shape"] == (4,)
    s = debug.tensor_stats(ember.tensor([1.0, float("nan"), float("-inf")]))
    assert s["nan_count"] == 1 and s["inf_count"] == 1
    assert debug.tensor_stats(ember.tensor([1, 2, 3]))["mean"] == 2.0
