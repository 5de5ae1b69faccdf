"""Adadelta, Adagrad, Adamax, NAdam and RAdam against their published update rules written out
here in NumPy float64 over several steps (weight decay, maximize, strided parameters, groups),
their defaults, state round trips and option errors; OneCycleLR and ReduceLROnPlateau step by
step against PyTorch's documented rules."""

import math

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler

STEPS = 8
P0 = np.random.default_rng(3).standard_normal((3, 4))


def grad_at(p, t):
    """The gradient at step t: a quadratic bowl with a drifting tilt."""
    return (1 + 0.25 * np.arange(p.size).reshape(p.shape)) * p + 0.2 * math.cos(t + 1)


def run(make, steps=STEPS):
    """steps steps over a float64 parameter that is a transposed (non-contiguous) view."""
    p = ember.tensor(P0.T.copy()).t().detach().requires_grad_()
    assert not p.is_contiguous()
    opt = make([p])
    for t in range(steps):
        p.grad = ember.tensor(grad_at(p.detach().numpy(), t))
        opt.step()
    return p.detach().numpy()


def reference(update, steps=STEPS, **options):
    """Runs update(p, g, state, t, **options) -> p for steps steps from P0 (t from 1)."""
    p, state = P0.copy(), {}
    for t in range(1, steps + 1):
        p = update(p, grad_at(p, t - 1), state, t, **options)
    return p


def decayed(p, g, weight_decay, maximize):
    return (-g if maximize else g) + weight_decay * p


def adadelta(p, g, s, t, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    g = decayed(p, g, weight_decay, maximize)
    s["v"] = rho * s.get("v", 0) + (1 - rho) * g**2
    delta = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
    s["u"] = rho * s.get("u", 0) + (1 - rho) * delta**2
    return p - lr * delta


def adagrad(p, g, s, t, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
            eps=1e-10, maximize=False):
    g = decayed(p, g, weight_decay, maximize)
    s["sum"] = s.get("sum", initial_accumulator_value) + g**2
    return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s["sum"]) + eps)


def adamax(p, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    g = decayed(p, g, weight_decay, maximize)
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + eps)
    return p - lr / (1 - b1**t) * s["m"] / s["u"]


def adam_decay(p, g, lr, weight_decay, decoupled, maximize):
    """The weight decay of NAdam and RAdam: on p (decoupled) or added to g."""
    g = -g if maximize else g
    return (p * (1 - lr * weight_decay), g) if decoupled else (p, g + weight_decay * p)


def nadam(p, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    p, g = adam_decay(p, g, lr, weight_decay, decoupled_weight_decay, maximize)
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    s["prod"] = s.get("prod", 1.0) * mu
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g**2
    denom = np.sqrt(s["v"] / (1 - b2**t)) + eps
    return (p - lr * (1 - mu) / (1 - s["prod"]) * g / denom
            - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / denom)


def radam(p, g, s, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    p, g = adam_decay(p, g, lr, weight_decay, decoupled_weight_decay, maximize)
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g**2
    m_hat = s["m"] / (1 - b1**t)
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
    if rho <= 5:
        return p - lr * m_hat
    r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
    return p - lr * r * m_hat * math.sqrt(1 - b2**t) / (np.sqrt(s["v"]) + eps)


CASES = [
    (optim.Adadelta, adadelta, {}),
    (optim.Adadelta, adadelta, {"lr": 0.5, "rho": 0.7, "eps": 1e-4, "weight_decay": 0.1}),
    (optim.Adadelta, adadelta, {"maximize": True}),
    (optim.Adagrad, adagrad, {}),
    (optim.Adagrad, adagrad, {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.05,
                              "initial_accumulator_value": 0.5, "maximize": True}),
    (optim.Adamax, adamax, {}),
    (optim.Adamax, adamax, {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1,
                            "maximize": True}),
    (optim.NAdam, nadam, {}),
    (optim.NAdam, nadam, {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.05}),
    (optim.NAdam, nadam, {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1,
                          "decoupled_weight_decay": True, "maximize": True}),
    (optim.RAdam, radam, {}),  # rho_t <= 5 in these steps: the un-rectified branch
    (optim.RAdam, radam, {"lr": 0.05, "betas": (0.9, 0.9)}),  # rectified from step 6
    (optim.RAdam, radam, {"lr": 0.05, "betas": (0.9, 0.9), "weight_decay": 0.1}),
    (optim.RAdam, radam, {"lr": 0.05, "betas": (0.9, 0.9), "weight_decay": 0.1,
                          "decoupled_weight_decay": True, "maximize": True}),
]


@pytest.mark.parametrize("cls, update, options", CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_update_rule(cls, update, options):
    got = run(lambda ps: cls(ps, **options))
    np.testing.assert_allclose(got, reference(update, **options), rtol=1e-12, atol=1e-14)
    assert not np.allclose(got, P0)


def test_radam_branches_are_both_taken():
    b2 = 0.9
    rho_inf = 2 / (1 - b2) - 1
    rhos = [rho_inf - 2 * t * b2**t / (1 - b2**t) for t in range(1, STEPS + 1)]
    assert min(rhos) <= 5 < max(rhos)


DEFAULTS = {
    optim.Adadelta: {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.0, "maximize": False},
    optim.Adagrad: {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0,
                    "initial_accumulator_value": 0.0, "eps": 1e-10, "maximize": False},
    optim.Adamax: {"lr": 2e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                   "maximize": False},
    optim.NAdam: {"lr": 2e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                  "momentum_decay": 4e-3, "decoupled_weight_decay": False, "maximize": False},
    optim.RAdam: {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                  "decoupled_weight_decay": False, "maximize": False},
}


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_defaults_are_pytorchs(cls):
    opt = cls([ember.zeros(2, requires_grad=True)])
    group = dict(opt.param_groups[0])
    group.pop("params")
    assert group.pop("master_weights") is False  # Ember's own option, off by default
    assert group == DEFAULTS[cls]


def test_groups_and_float32():
    """Each group keeps its own options; float32 parameters follow the float64 rule closely."""
    a = ember.tensor(P0, dtype=ember.float32, requires_grad=True)
    b = ember.tensor(P0, dtype=ember.float32, requires_grad=True)
    opt = optim.Adamax([{"params": [a]}, {"params": b, "lr": 0.0}], lr=0.05)
    assert opt.param_groups[1]["lr"] == 0.0 and opt.param_groups[0]["lr"] == 0.05
    for t in range(STEPS):
        for p in (a, b):
            p.grad = ember.tensor(grad_at(p.detach().numpy().astype(np.float64), t),
                                  dtype=ember.float32)
        opt.step()
    np.testing.assert_allclose(a.detach().numpy(), reference(adamax, lr=0.05), atol=1e-5)
    np.testing.assert_array_equal(b.detach().numpy(), P0.astype(np.float32))
    assert a.grad is not None  # the update reads the grad, never changes it


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_state_dict_round_trip_is_bit_exact(cls):
    options = {"lr": 0.05} if cls is not optim.Adadelta else {}

    def steps(opt, p, ts):
        for t in ts:
            p.grad = ember.tensor(grad_at(p.detach().numpy(), t))
            opt.step()

    a = ember.tensor(P0, requires_grad=True)
    reference_opt = cls([a], **options)
    steps(reference_opt, a, range(6))
    b = ember.tensor(P0, requires_grad=True)
    first = cls([b], **options)
    steps(first, b, range(3))
    saved = first.state_dict()
    steps(first, b, range(3, 5))  # later steps leave the saved state alone
    c = ember.tensor(P0, requires_grad=True)
    resumed = cls([c], **options)
    resumed.load_state_dict(saved)
    with ember.no_grad():
        c.copy_(ember.tensor(reference_state_params(cls, options)))
    steps(resumed, c, range(3, 6))
    np.testing.assert_array_equal(c.detach().numpy(), a.detach().numpy())
    if cls is optim.NAdam:
        assert isinstance(saved["state"][0]["mu_product"], float)


def reference_state_params(cls, options):
    """The parameter after 3 steps of cls from P0 (what a checkpoint would hold)."""
    p = ember.tensor(P0, requires_grad=True)
    opt = cls([p], **options)
    for t in range(3):
        p.grad = ember.tensor(grad_at(p.detach().numpy(), t))
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("cls, option, value", [
    (optim.Adadelta, "rho", 1.5), (optim.Adagrad, "lr_decay", -1.0),
    (optim.Adagrad, "initial_accumulator_value", -0.5), (optim.Adamax, "betas", (0.9, 1.0)),
    (optim.NAdam, "momentum_decay", -1.0), (optim.RAdam, "eps", -1.0),
    (optim.RAdam, "lr", -0.1),
])
def test_option_errors_name_the_option(cls, option, value):
    with pytest.raises(ember.ValueError, match=f"{cls.__name__}.*'{option.rstrip('s')}"):
        cls([ember.zeros(2, requires_grad=True)], **{option: value})


# ---- OneCycleLR ----

def one_cycle_reference(step, total, max_lr, pct, strategy, three_phase, div=25.0,
                        final_div=1e4, base_m=0.85, max_m=0.95):
    """PyTorch's OneCycleLR.get_lr for one group: (lr, momentum) at a step."""
    initial, lo = max_lr / div, max_lr / div / final_div
    if three_phase:
        phases = [(pct * total - 1, initial, max_lr, max_m, base_m),
                  (2 * pct * total - 2, max_lr, initial, base_m, max_m),
                  (total - 1, initial, lo, max_m, max_m)]
    else:
        phases = [(pct * total - 1, initial, max_lr, max_m, base_m),
                  (total - 1, max_lr, lo, base_m, max_m)]

    def anneal(a, b, x):
        return b + (a - b) / 2 * (math.cos(math.pi * x) + 1) if strategy == "cos" else \
            (b - a) * x + a

    start = 0.0
    for i, (end, lr0, lr1, m0, m1) in enumerate(phases):
        if step <= end or i == len(phases) - 1:
            x = min((step - start) / (end - start), 1.0)  # ember holds the end past the last
            return anneal(lr0, lr1, x), anneal(m0, m1, x)
        start = end
    raise AssertionError


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_sgd_momentum(strategy, three_phase):
    opt = optim.SGD([ember.zeros(2, requires_grad=True)], lr=0.5, momentum=0.9)
    s = lr_scheduler.OneCycleLR(opt, max_lr=0.4, epochs=5, steps_per_epoch=8, pct_start=0.25,
                                anneal_strategy=strategy, three_phase=three_phase)
    assert s.total_steps == 40
    for step in range(41):
        if step:
            s.step()
        lr, momentum = one_cycle_reference(step, 40, 0.4, 0.25, strategy, three_phase)
        assert s.get_last_lr()[0] == pytest.approx(lr, rel=1e-12, abs=1e-15)
        assert opt.param_groups[0]["lr"] == pytest.approx(lr, rel=1e-12, abs=1e-15)
        assert opt.param_groups[0]["momentum"] == pytest.approx(momentum, rel=1e-12)
    with pytest.raises(ember.ValueError, match="stepped 41 times but total_steps is 40"):
        s.step()


def test_one_cycle_adam_beta1_two_groups():
    opt = optim.Adam([ember.zeros(2, requires_grad=True)], betas=(0.9, 0.99))
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    s = lr_scheduler.OneCycleLR(opt, max_lr=[0.01, 0.1], total_steps=20, div_factor=10,
                                final_div_factor=100, base_momentum=0.8, max_momentum=0.9)
    for step in range(20):
        if step:
            s.step()
        for g, max_lr in enumerate((0.01, 0.1)):
            lr, m = one_cycle_reference(step, 20, max_lr, 0.3, "cos", False, 10, 100, 0.8, 0.9)
            assert opt.param_groups[g]["lr"] == pytest.approx(lr, rel=1e-12)
            assert opt.param_groups[g]["betas"] == pytest.approx((m, 0.99), rel=1e-12)
    assert s.base_lrs == pytest.approx([0.001, 0.01])


def test_one_cycle_without_momentum_cycling_and_errors():
    opt = optim.Adagrad([ember.zeros(2, requires_grad=True)])
    with pytest.raises(ember.ValueError, match="cycle_momentum"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    s = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, cycle_momentum=False)
    assert s.get_last_lr() == pytest.approx([0.004])
    with pytest.raises(ember.ValueError, match="epochs and steps_per_epoch"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ember.ValueError, match="anneal_strategy"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="exp",
                                cycle_momentum=False)
    with pytest.raises(ember.ValueError, match="pct_start"):
        lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10, pct_start=1.5,
                                cycle_momentum=False)
    with pytest.raises(ember.ValueError, match="max_lr has 2 values for 1"):
        lr_scheduler.OneCycleLR(opt, max_lr=[0.1, 0.2], total_steps=10, cycle_momentum=False)


# ---- ReduceLROnPlateau ----

class PlateauReference:
    """PyTorch's ReduceLROnPlateau.step, written out for a list of lrs."""

    def __init__(self, lrs, mode, factor, patience, threshold, threshold_mode, cooldown, min_lrs,
                 eps=1e-8):
        self.lrs, self.mode, self.factor, self.patience = list(lrs), mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown = threshold, threshold_mode, cooldown
        self.min_lrs, self.eps = min_lrs, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.bad = self.cooldown_counter = 0

    def better(self, a):
        rel, t, best = self.threshold_mode == "rel", self.threshold, self.best
        if self.mode == "min":
            return a < best * (1 - t) if rel else a < best - t
        return a > best * (1 + t) if rel else a > best + t

    def step(self, metric):
        if self.better(metric):
            self.best, self.bad = metric, 0
        else:
            self.bad += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.bad = 0
        if self.bad > self.patience:
            for i, lr in enumerate(self.lrs):
                new = max(lr * self.factor, self.min_lrs[i])
                if lr - new > self.eps:
                    self.lrs[i] = new
            self.cooldown_counter, self.bad = self.cooldown, 0


@pytest.mark.parametrize("mode, threshold_mode, threshold", [
    ("min", "rel", 1e-2), ("min", "abs", 0.05), ("max", "rel", 1e-2), ("max", "abs", 0.05)])
def test_plateau_against_pytorchs_rule(mode, threshold_mode, threshold):
    metrics = np.concatenate([np.linspace(1, 0.5, 6), np.full(12, 0.5) + 0.01 *
                              np.sin(np.arange(12)), np.linspace(0.5, 0.2, 5), np.full(14, 0.2)])
    if mode == "max":
        metrics = -metrics
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 0.3})
    s = lr_scheduler.ReduceLROnPlateau(opt, mode, factor=0.5, patience=2, threshold=threshold,
                                       threshold_mode=threshold_mode, cooldown=2,
                                       min_lr=[0.6, 0.0])
    ref = PlateauReference([1.0, 0.3], mode, 0.5, 2, threshold, threshold_mode, 2, [0.6, 0.0])
    for e, m in enumerate(metrics):
        # A number or a one-element tensor.
        s.step(ember.tensor(m, dtype=ember.float64) if e % 2 else float(m))
        ref.step(float(m))
        assert s.get_last_lr() == ref.lrs, e
        assert [g["lr"] for g in opt.param_groups] == ref.lrs
        assert s.num_bad_epochs == ref.bad
        assert s.best == ref.best
    assert ref.lrs[0] == 0.6 and ref.lrs[1] < 0.3  # reductions happened, the floor held
    assert s.last_epoch == len(metrics)


def test_plateau_state_dict_and_errors():
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    s = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    s.step(1.0)
    s.step(2.0)  # worse: reduced at once
    saved = s.state_dict()
    assert saved == {"last_epoch": 2, "best": 1.0, "num_bad_epochs": 0, "cooldown_counter": 0,
                     "_last_lr": [0.1]}
    s.step(0.5)
    s.load_state_dict(saved)
    assert s.best == 1.0 and s.last_epoch == 2
    assert isinstance(s, lr_scheduler.LRScheduler)
    for kwargs, part in [({"mode": "lowest"}, "mode"), ({"factor": 1.0}, "factor"),
                         ({"threshold_mode": "relative"}, "threshold_mode"),
                         ({"min_lr": [0.1, 0.2]}, "min_lr has 2 values")]:
        with pytest.raises(ember.ValueError, match=part):
            lr_scheduler.ReduceLROnPlateau(opt, **kwargs)

RULES = {optim.Adadelta: adadelta, optim.Adagrad: adagrad, optim.Adamax: adamax,
         optim.NAdam: nadam, optim.RAdam: radam}


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_edge_sizes_and_half_precision(cls):
    """0-d, empty and one-element parameters step like any other; float16 state is float16."""
    values = [0.75, -1.25]
    ps = [ember.tensor(values[0], dtype=ember.float64, requires_grad=True),
          ember.zeros(0, dtype=ember.float64, requires_grad=True),
          ember.tensor([values[1]], dtype=ember.float64, requires_grad=True)]
    opt = cls(ps, lr=0.1)
    for t in range(3):
        for p in ps:
            p.grad = ember.tensor(grad_at(p.detach().numpy(), t), dtype=ember.float64)
        opt.step()
    options = {"lr": 0.1}
    for p, v in zip((ps[0], ps[2]), values):
        state, q = {}, np.array(v)
        for t in range(1, 4):
            q = RULES[cls](q, grad_at(q, t - 1), state, t, **options)
        np.testing.assert_allclose(p.detach().numpy().reshape(()), q, rtol=1e-12)
    assert ps[1].shape == (0,)
    h = ember.ones(3, dtype=ember.float16, requires_grad=True)
    h.grad = ember.ones(3, dtype=ember.float16)
    half = cls([h], lr=0.1)
    half.step()
    assert all(v.dtype == ember.float16 for v in half.state_dict()["state"][0].values()
               if isinstance(v, ember.Tensor))
    assert np.isfinite(h.detach().float().numpy()).all()
