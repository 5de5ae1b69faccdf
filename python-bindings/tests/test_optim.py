"""ember.optim: each optimizer against a hand-written NumPy update for a few steps, parameter
groups, param_groups options, state_dict round trips (bit for bit), and option errors."""

import numpy as np
import pytest

import ember
from ember import nn, optim

rng = np.random.default_rng(1)
GRADS = [rng.standard_normal(4) for _ in range(3)]
P0 = rng.standard_normal(4)


def run(make, steps=3):
    p = nn.Parameter(ember.tensor(P0.copy()))
    opt = make([p])
    for g in GRADS[:steps]:
        p.grad = ember.tensor(g)
        opt.step()
    return p.detach().numpy()


def sgd_ref(lr, momentum=0.0, weight_decay=0.0, nesterov=False):
    p, buf = P0.copy(), None
    for g in GRADS:
        g = g + weight_decay * p
        buf = g.copy() if buf is None else momentum * buf + g
        p = p - lr * (g + momentum * buf if nesterov else buf if momentum else g)
    return p


def adam_ref(lr, b1, b2, eps, weight_decay=0.0, decoupled=False):
    p, m, v = P0.copy(), np.zeros(4), np.zeros(4)
    for step, g in enumerate(GRADS, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1**step), v / (1 - b2**step)
        p = p - lr * mhat / (np.sqrt(vhat) + eps)
    return p


def rmsprop_ref(lr, alpha, eps):
    p, sq = P0.copy(), np.zeros(4)
    for g in GRADS:
        sq = alpha * sq + (1 - alpha) * g * g
        p = p - lr * g / (np.sqrt(sq) + eps)
    return p


def test_sgd():
    np.testing.assert_allclose(run(lambda ps: optim.SGD(ps, lr=0.1)), sgd_ref(0.1), rtol=1e-12)
    np.testing.assert_allclose(
        run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)),
        sgd_ref(0.1, 0.9, 0.01), rtol=1e-12)
    np.testing.assert_allclose(
        run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
        sgd_ref(0.1, 0.9, nesterov=True), rtol=1e-12)


def test_adam_adamw_rmsprop():
    np.testing.assert_allclose(run(lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.99))),
                               adam_ref(0.01, 0.8, 0.99, 1e-8), rtol=1e-10)
    np.testing.assert_allclose(run(lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.1)),
                               adam_ref(0.01, 0.9, 0.999, 1e-8, 0.1), rtol=1e-10)
    np.testing.assert_allclose(run(lambda ps: optim.AdamW(ps, lr=0.01)),
                               adam_ref(0.01, 0.9, 0.999, 1e-8, 1e-2, True), rtol=1e-10)
    np.testing.assert_allclose(run(lambda ps: optim.RMSprop(ps, lr=0.01, alpha=0.9)),
                               rmsprop_ref(0.01, 0.9, 1e-8), rtol=1e-10)


def test_param_groups_and_lr():
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(2))
    opt = optim.SGD([{"params": a}, {"params": [b], "lr": 0.01}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.01
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["params"][0] is b
    opt.param_groups[0]["lr"] = 0.5
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[1]["lr"] == 0.01
    a.grad, b.grad = ember.ones(2), ember.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 0.5])
    np.testing.assert_allclose(b.detach().numpy(), [0.99, 0.99])
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    adam = optim.Adam([a], betas=(0.5, 0.6))
    assert adam.param_groups[0]["betas"] == (0.5, 0.6)
    adam.param_groups[0]["betas"] = (0.7, 0.8)
    assert adam.param_groups[0]["betas"] == (0.7, 0.8)
    c = nn.Parameter(ember.ones(1))
    adam.add_param_group({"params": [c], "lr": 0.5})
    assert adam.param_groups[1]["lr"] == 0.5 and adam.param_groups[1]["betas"] == (0.5, 0.6)


def test_option_errors():
    p = nn.Parameter(ember.ones(2))
    with pytest.raises(ember.ValueError, match="'lr' is -1"):
        optim.SGD([p], lr=-1)
    with pytest.raises(ember.ValueError, match="nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ember.ValueError, match="unknown option 'foo'"):
        optim.SGD([{"params": [p], "foo": 1}], lr=0.1)
    with pytest.raises(ember.ValueError, match="empty"):
        optim.Adam([])
    with pytest.raises(ember.NotSupportedError, match="amsgrad"):
        optim.Adam([p], amsgrad=True)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop])
def test_state_dict_round_trip_is_bit_exact(cls):
    kw = {"momentum": 0.9} if cls in (optim.SGD, optim.RMSprop) else {}

    def make():
        m = nn.Linear(3, 2)
        return m, cls(m.parameters(), lr=0.01, **kw)

    ember.manual_seed(0)
    m1, o1 = make()
    x = ember.randn(4, 3)
    for _ in range(2):
        o1.zero_grad()
        (m1(x) * m1(x)).sum().backward()
        o1.step()
    saved = o1.state_dict()
    assert set(saved["state"]) == {0, 1} and saved["state"][0]["step"] == 2
    ember.manual_seed(0)
    m2, o2 = make()
    m2.load_state_dict(m1.state_dict())
    o2.load_state_dict(saved)
    for m, o in ((m1, o1), (m2, o2)):
        o.zero_grad()
        (m(x) * m(x)).sum().backward()
        o.step()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())
    again = o2.state_dict()
    assert again["param_groups"] == o1.state_dict()["param_groups"]


def test_load_state_dict_errors():
    a = nn.Parameter(ember.ones(2))
    saved = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = ember.ones(2)
    saved.step()
    other = optim.SGD([nn.Parameter(ember.ones(3))], lr=0.1, momentum=0.9)
    with pytest.raises(ember.ShapeError, match="momentum_buffer"):
        other.load_state_dict(saved.state_dict())
