"""The tutorials' exercises: each check of tutorials/check.py accepts its answer in
tutorials/solutions.py and rejects a wrong one, and each notebook ends with exercises that call
checks that exist."""

import math
import re
import sys

import numpy as np
import pytest
from test_tutorials import TUTORIAL_DIR, TUTORIALS

import ember

sys.path.insert(0, str(TUTORIAL_DIR))
import check  # noqa: E402 (found beside the notebooks)
import solutions  # noqa: E402

CHECKS = sorted(name for name, fn in vars(check).items()
                if callable(fn) and re.fullmatch(r"[a-z]+_\d", name))


class WrongTanh(solutions.Value):
    """tanh's derivative taken as 1 - tanh instead of 1 - tanh²."""

    def tanh(self):
        t = math.tanh(self.data)
        return self._make(t, (self,), (1 - t,))


def rmsprop_without_sqrt(w, grad_fn, steps, lr=0.01, alpha=0.99, eps=1e-8):
    w, square = np.array(w, dtype=np.float64), np.zeros(len(w))
    for _ in range(steps):
        g = grad_fn(w)
        square = alpha * square + (1 - alpha) * g * g
        w = w - lr * g / (square + eps)
    return w


def first_derivative(f, x):
    import ember

    t = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    f(t).backward()
    return t.grad.item()


def without_the_half(f, x, h):
    return 2 * solutions.autodiff_2(f, x, h)


def accumulate_without_dividing(model, loss_fn, x, y, micro):
    for xb, yb in zip(x.split(micro), y.split(micro)):
        loss_fn(model(xb), yb).backward()


class _NoZeroGrad:
    """An optimizer whose zero_grad forgets to clear: gradients pile up over the steps."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def zero_grad(self):
        pass

    def step(self):
        self.optimizer.step()


# A plausible mistake for every check: each must be rejected.
WRONG = {
    "tensors_1": lambda shape: tuple(reversed(solutions.tensors_1(tuple(reversed(shape))))),
    "tensors_2": lambda x: x[:, -1].clone(),
    "backprop_1": WrongTanh,
    "backprop_2": rmsprop_without_sqrt,
    "autodiff_1": first_derivative,
    "autodiff_2": without_the_half,
    "autodiff_3": lambda text: re.findall(r"^(?:param|buffer) %\d+:\S+  (\S+)$", text,
                                          flags=re.MULTILINE),
    "kernels_1": lambda m, k, n, size=4: 2 * m * k * n / (size * (m * k + k * n)),
    "kernels_2": lambda intensity, bandwidth, peak: np.maximum(bandwidth * intensity, peak),
    "mlp_1": lambda logits, labels: (logits.argmin(1) == labels).float().mean().item(),
    "mlp_2": lambda true, predicted, classes: solutions.mlp_2(predicted, true, classes),
    "cnn_1": lambda size, kernel, stride, padding, dilation: solutions.cnn_1(  # no dilation
        size, kernel, stride, padding),
    "cnn_2": lambda x, k: x[:, :, :x.shape[2] // k * k:k, :x.shape[3] // k * k:k],  # corners
    "memory_1": lambda snapshot: (sum(s["size"] for s in snapshot), 0),
    "memory_2": accumulate_without_dividing,
    "compiled_1": lambda buffers: max((size for size, _, _ in buffers), default=0),
    "compiled_2": lambda model, optimizer, loss_fn: solutions.compiled_2(  # no zero_grad
        model, _NoZeroGrad(optimizer), loss_fn),
    "attention_1": lambda L, S: ember.tril(ember.ones(L, S), -1).bool(),  # not itself
    "attention_2": lambda q, k, v: (q @ k.transpose(-2, -1)).softmax(-1) @ v,  # unscaled
}


def test_every_check_has_a_solution_and_a_wrong_answer():
    assert len(CHECKS) >= 14
    for name in CHECKS:
        assert hasattr(solutions, name), f"solutions.py has no {name}"
        assert name in WRONG, f"no wrong answer tried against check.{name}"


@pytest.mark.parametrize("name", CHECKS)
def test_the_solution_passes(name):
    assert getattr(check, name)(getattr(solutions, name), strict=True)


@pytest.mark.parametrize("name", CHECKS)
def test_a_wrong_answer_is_rejected(name, capsys):
    with pytest.raises(AssertionError):
        getattr(check, name)(WRONG[name], strict=True)
    # In a notebook (not strict) the check says what is wrong instead of raising.
    assert getattr(check, name)(WRONG[name]) is False
    assert capsys.readouterr().out.startswith(f"✗ {name}: ")


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_each_notebook_ends_with_checked_exercises(script):
    text = script.read_text()
    assert "## Exercises" in text, f"{script.name} has no exercises"
    exercises = text[text.index("## Exercises"):]
    called = re.findall(r"^check\.(\w+)\(", exercises, flags=re.MULTILINE)
    assert 2 <= len(called) <= 3, f"{script.name}: {called}"
    for name in called:
        assert name in CHECKS, f"{script.name} calls check.{name}, which does not exist"
