"""ember.autograd.gradcheck: the gradients backward computes against float64 central finite
differences, element by element of every Jacobian, as torch.autograd.gradcheck checks them."""

import contextlib

import numpy as np

from ember import _core


class GradcheckError(_core.ValueError):
    """A gradient that backward computes differs from its finite-difference estimate."""


def _as_tuple(x):
    return (x,) if isinstance(x, _core.Tensor) else tuple(x)


def _values(outputs):
    """The outputs of fn as float64 NumPy arrays (their data only)."""
    return [y.detach().cpu().numpy().astype(np.float64) for y in _as_tuple(outputs)]


def _numerical(fn, inputs, i, eps):
    """d outputs / d inputs[i] by central differences: per output, [input numel, output numel]."""
    x = inputs[i]
    base = x.detach().cpu().numpy().astype(np.float64)
    columns = []
    for index in np.ndindex(base.shape):
        shifted = []
        for delta in (eps, -eps):
            value = base.copy()
            value[index] += delta
            args = list(inputs)
            args[i] = _core.tensor(value, dtype=x.dtype, device=x.device)
            with _no_grad():
                shifted.append(_values(fn(*args)))
        columns.append([((p - m) / (2 * eps)).ravel() for p, m in zip(*shifted)])
    with _no_grad():
        sizes = [y.size for y in _values(fn(*inputs))]
    return [np.array([c[k] for c in columns]).reshape(base.size, n) for k, n in enumerate(sizes)]


def _analytical(outputs, inputs, wrt):
    """d outputs / d inputs by backward, one output element at a time: per (output, input),
    [input numel, output numel]."""
    jacobians = {}
    for k, y in enumerate(outputs):
        for i in wrt:
            jacobians[k, i] = np.zeros((inputs[i].numel(), y.numel()))
        if not y.requires_grad:
            continue
        for e in range(y.numel()):
            seed = np.zeros(y.numel())
            seed[e] = 1.0
            weight = _core.tensor(seed.reshape(tuple(y.shape)), dtype=y.dtype, device=y.device)
            grads = _core.grad([y], [inputs[i] for i in wrt], [weight], retain_graph=True,
                               allow_unused=True)
            for i, g in zip(wrt, grads):
                if g is not None:
                    jacobians[k, i][:, e] = g.detach().cpu().numpy().astype(np.float64).ravel()
    return jacobians


@contextlib.contextmanager
def _no_grad():
    previous = _core.is_grad_enabled()
    _core.set_grad_enabled(False)
    try:
        yield
    finally:
        _core.set_grad_enabled(previous)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Checks the gradients of fn at inputs: every element of every Jacobian d output / d input
    that backward computes must lie within atol + rtol * |numerical| of its central difference
    (f(x + eps) - f(x - eps)) / (2 eps).

    fn takes the inputs (a tensor or a tuple; those that require grad must be float64, for the
    differences to be accurate) and returns a tensor or a tuple of tensors. Returns True; on a
    mismatch raises GradcheckError naming the output, the input, the elements and both values,
    or returns False when raise_exception is False.
    """
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, _core.Tensor) and x.requires_grad]
    if not wrt:
        raise _core.ValueError(
            "gradcheck: no input requires grad, so there is no gradient to check; make the "
            "inputs with requires_grad=True")
    for i in wrt:
        if inputs[i].dtype != _core.float64:
            raise _core.DTypeError(
                f"gradcheck: input {i} is {inputs[i].dtype}; finite differences need float64 "
                "inputs to be accurate (pass x.double().detach().requires_grad_())")
    outputs = _as_tuple(fn(*inputs))
    analytical = _analytical(outputs, inputs, wrt)
    for i in wrt:
        numerical = _numerical(fn, inputs, i, eps)
        for k in range(len(outputs)):
            a, n = analytical[k, i], numerical[k]
            bad = np.abs(a - n) > atol + rtol * np.abs(n)
            if not bad.any():
                continue
            p, e = np.argwhere(bad)[0]
            at_in = np.unravel_index(p, tuple(inputs[i].shape))
            at_out = np.unravel_index(e, tuple(outputs[k].shape))
            message = (
                f"gradcheck: the Jacobian of output {k} with respect to input {i} differs from "
                f"its finite-difference estimate at {int(bad.sum())} of {bad.size} elements; "
                f"first at input element {tuple(int(j) for j in at_in)}, output element "
                f"{tuple(int(j) for j in at_out)}: backward gives {a[p, e]:.6g}, central "
                f"differences {n[p, e]:.6g} (allowed: atol {atol} + rtol {rtol} * |numerical|)")
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True
