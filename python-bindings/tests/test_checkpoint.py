"""ember.utils.checkpoint in eager mode: the region's intermediates are not kept (the memory
shows it), its forward runs again in backward, and results and gradients equal the unchecked
step's bit for bit, with dropout drawing the same mask (the generator's state is saved and put
back, as PyTorch does) and batch norm's running statistics updated once."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.utils import checkpoint


def grads_of(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


def step(model, x, checkpointed, seed=0):
    """One forward and backward; the model's parameter grads, the input's grad, the loss."""
    ember.manual_seed(seed)
    model.zero_grad()
    x = x.detach()
    x.requires_grad_(True)
    y = checkpoint(model, x) if checkpointed else model(x)
    loss = (y * y).mean()
    loss.backward()
    return grads_of(model), x.grad.numpy().copy(), loss.item()


def assert_same(a, b):
    grads_a, dx_a, loss_a = a
    grads_b, dx_b, loss_b = b
    assert loss_a == loss_b
    np.testing.assert_array_equal(dx_a, dx_b)
    for ga, gb in zip(grads_a, grads_b):
        np.testing.assert_array_equal(ga, gb)


def test_gradients_equal_the_unchecked_step():
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 8), nn.GELU())
    x = ember.randn(5, 16)
    assert_same(step(model, x, False), step(model, x, True))


def test_dropout_draws_the_same_mask_in_the_recomputation():
    ember.manual_seed(2)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 4))
    model.train()
    x = ember.randn(8, 32)
    plain = step(model, x, False, seed=7)
    after_plain = ember.get_rng_state()
    checked = step(model, x, True, seed=7)
    assert_same(plain, checked)
    # The recomputation leaves the generator where the unchecked step leaves it.
    assert ember.get_rng_state() == after_plain


def test_without_preserving_the_generator_the_mask_differs():
    ember.manual_seed(3)
    drop = nn.Dropout(0.5)
    x = ember.randn(256, requires_grad=True)
    y = checkpoint(drop, x, preserve_rng_state=False)
    y.sum().backward()
    # The gradient is the recomputation's mask (scaled), not the one forward used.
    used = (y.detach().numpy() != 0)
    assert not np.array_equal(used, x.grad.numpy() != 0)


def test_batch_norm_uses_batch_statistics_and_updates_running_ones_once():
    ember.manual_seed(4)
    model = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 3))
    model.train()
    x = ember.randn(10, 6)
    bn = model[1]
    start_mean = bn.running_mean.numpy().copy()
    start_var = bn.running_var.numpy().copy()
    plain = step(model, x, False)
    plain_stats = bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()
    with ember.no_grad():
        bn.running_mean.copy_(ember.tensor(start_mean))
        bn.running_var.copy_(ember.tensor(start_var))
    checked = step(model, x, True)
    assert_same(plain, checked)
    np.testing.assert_array_equal(bn.running_mean.numpy(), plain_stats[0])
    np.testing.assert_array_equal(bn.running_var.numpy(), plain_stats[1])


def test_the_regions_intermediates_are_not_kept():
    ember.manual_seed(5)
    block = nn.Sequential(*[nn.Linear(256, 256) if k % 2 == 0 else nn.ReLU() for k in range(16)])
    x = ember.randn(256, 256, requires_grad=True)

    def held(checkpointed):
        before = ember.memory_stats()["in_use"]
        y = checkpoint(block, x) if checkpointed else block(x)
        kept = ember.memory_stats()["in_use"] - before
        y.sum().backward()
        return kept

    plain, checked = held(False), held(True)
    # Unchecked: every layer's activation is kept for backward (8 linear outputs and more);
    # checkpointed: the output alone.
    assert checked <= 256 * 256 * 4 * 2
    assert plain >= 4 * checked


def test_several_outputs_and_non_tensor_arguments():
    ember.manual_seed(6)
    w = ember.randn(4, 4, requires_grad=True)

    def region(a, scale, b):
        h = (a @ w).tanh() * scale
        return h + b, h.exp()

    a = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(3, 4, requires_grad=True)

    def run(checkpointed):
        for t in (w, a, b):
            t.grad = None
        u, v = checkpoint(region, a, 2.0, b) if checkpointed else region(a, 2.0, b)
        (u.sum() + (v * v).sum()).backward()
        return [t.grad.numpy().copy() for t in (w, a, b)]

    for g1, g2 in zip(run(False), run(True)):
        np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-7)


def test_checkpoint_is_also_reachable_as_in_pytorch():
    assert ember.utils.checkpoint.checkpoint is checkpoint


def test_a_non_callable_is_a_value_error():
    with pytest.raises(ember.ValueError, match="checkpoint"):
        checkpoint(3, ember.randn(2))
