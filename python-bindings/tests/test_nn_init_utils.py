"""nn.init (the bound C++ initialisers) and nn.utils gradient clipping, against NumPy."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init


def test_fills_and_gain():
    w = ember.empty(3, 4)
    np.testing.assert_array_equal(init.constant_(w, 2.5).numpy(), np.full((3, 4), 2.5))
    np.testing.assert_array_equal(init.zeros_(w).numpy(), 0)
    np.testing.assert_array_equal(init.ones_(w).numpy(), 1)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init._calculate_fan_in_and_fan_out(ember.empty(8, 3, 5, 5)) == (75, 200)


def test_random_initialisers_are_seeded_and_in_range():
    w = ember.empty(200, 300)
    ember.manual_seed(3)
    a = init.kaiming_uniform_(w, a=0, nonlinearity="relu").numpy().copy()
    bound = math.sqrt(2) * math.sqrt(3 / 300)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    ember.manual_seed(3)
    np.testing.assert_array_equal(init.kaiming_uniform_(w, nonlinearity="relu").numpy(), a)
    assert init.kaiming_normal_(w).numpy().std() == pytest.approx(math.sqrt(2 / 300), rel=0.05)
    assert init.xavier_normal_(w).numpy().std() == pytest.approx(math.sqrt(2 / 500), rel=0.05)
    assert np.abs(init.xavier_uniform_(w).numpy()).max() <= math.sqrt(6 / 500)
    u = init.uniform_(w, -2, -1).numpy()
    assert u.min() >= -2 and u.max() < -1
    assert init.normal_(w, 5, 0.1).numpy().mean() == pytest.approx(5, abs=0.01)
    q = init.orthogonal_(ember.empty(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)


def test_initialising_a_parameter_keeps_it_a_leaf():
    p = nn.Parameter(ember.empty(3, 3))
    init.ones_(p)
    assert p.is_leaf and p.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), 1)


def grads(*values):
    ps = [nn.Parameter(ember.zeros(len(v), dtype=ember.float64)) for v in values]
    for p, v in zip(ps, values):
        p.grad = ember.tensor(np.asarray(v, np.float64))
    return ps


def test_clip_grad_norm():
    ps = grads([3.0, 0.0], [0.0, 4.0])
    total = nn.utils.clip_grad_norm_(ps, max_norm=1.0)
    assert float(total) == pytest.approx(5.0)
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(ps[0].grad.numpy(), [3 * scale, 0], rtol=1e-12)
    ps = grads([3.0, -7.0])
    assert float(nn.utils.clip_grad_norm_(ps, 10.0, norm_type=float("inf"))) == 7.0
    np.testing.assert_array_equal(ps[0].grad.numpy(), [3.0, -7.0])  # under max_norm: unchanged
    with pytest.raises(ember.ValueError):
        nn.utils.clip_grad_norm_(grads([float("nan")]), 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    ps = grads([3.0, -0.5, -7.0])
    nn.utils.clip_grad_value_(ps, 1.0)
    np.testing.assert_array_equal(ps[0].grad.numpy(), [1.0, -0.5, -1.0])
