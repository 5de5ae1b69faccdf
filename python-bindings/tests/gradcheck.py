"""Gradients against float64 central finite differences, for the tests."""

import numpy as np

import ember


def gradcheck(fn, *arrays, eps=1e-6, atol=1e-6, rtol=1e-4, seed=0):
    """Checks d sum(fn(*inputs) * w) / d inputs (w fixed random weights) from backward against
    central differences. arrays are NumPy arrays, made float64 tensors that require grad."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    weights = np.random.default_rng(seed).standard_normal(out.shape)
    (out * ember.tensor(weights)).sum().backward()

    def loss(values):
        with ember.no_grad():
            return float((fn(*[ember.tensor(v) for v in values]).numpy() * weights).sum())

    for k, a in enumerate(arrays):
        numeric = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[k][i] += eps
            minus[k][i] -= eps
            numeric[i] = (loss(plus) - loss(minus)) / (2 * eps)
        analytic = inputs[k].grad
        assert analytic is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(analytic.numpy(), numeric, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {k}")
