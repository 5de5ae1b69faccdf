"""ember.optim.lr_scheduler: the lr sequences of every schedule (PyTorch's numbers) and their
state_dict round trips."""

import math

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.optim import lr_scheduler as S


def make_opt(lr=1.0):
    return optim.SGD([nn.Parameter(ember.ones(1))], lr=lr)


def lrs(opt, schedule, n=8):
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    return out


@pytest.mark.parametrize("build,expected", [
    (lambda o: S.StepLR(o, step_size=2, gamma=0.5), [0.5 ** (e // 2) for e in range(8)]),
    (lambda o: S.MultiStepLR(o, [2, 5], gamma=0.1), [1, 1, .1, .1, .1, .01, .01, .01]),
    (lambda o: S.ExponentialLR(o, gamma=0.9), [0.9**e for e in range(8)]),
    (lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.1),
     [0.1 + 0.9 * (1 + math.cos(math.pi * e / 7)) / 2 for e in range(8)]),
    (lambda o: S.LinearLR(o, start_factor=0.25, total_iters=3),
     [0.25 + 0.75 * min(e, 3) / 3 for e in range(8)]),
])
def test_schedule_sequences(build, expected):
    opt = make_opt()
    schedule = build(opt)
    np.testing.assert_allclose(lrs(opt, schedule), expected, rtol=1e-12, atol=1e-15)
    assert schedule.get_last_lr() == [opt.param_groups[0]["lr"]]
    assert schedule.last_epoch == 8


def test_sequential_and_chained():
    opt = make_opt()
    warm = S.LinearLR(opt, start_factor=0.5, total_iters=2)
    decay = S.ExponentialLR(opt, gamma=0.5)
    seq = S.SequentialLR(opt, [warm, decay], milestones=[2])
    np.testing.assert_allclose(lrs(opt, seq, 5), [0.5, 0.75, 1.0, 0.5, 0.25])
    opt = make_opt()
    chain = S.ChainedScheduler([S.StepLR(opt, 2, 0.1), S.ExponentialLR(opt, 0.5)])
    np.testing.assert_allclose(lrs(opt, chain, 4), [1, 0.5, 0.025, 0.0125])


def test_state_dict_round_trip():
    opt = make_opt()
    schedule = S.CosineAnnealingLR(opt, T_max=10)
    lrs(opt, schedule, 3)
    saved_opt, saved = opt.state_dict(), schedule.state_dict()
    rest = lrs(opt, schedule, 4)
    opt2 = make_opt()
    schedule2 = S.CosineAnnealingLR(opt2, T_max=10)
    schedule2.load_state_dict(saved)
    opt2.load_state_dict(saved_opt)
    assert lrs(opt2, schedule2, 4) == rest
    with pytest.raises(ember.ValueError, match="built the same way"):
        S.SequentialLR(opt2, [S.StepLR(opt2, 1)], []).load_state_dict(saved)
