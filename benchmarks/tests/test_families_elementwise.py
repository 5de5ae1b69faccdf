"""The NumPy elementwise references write into an array allocated once (out=): each call must
return what the allocating form returns, every time (the array is reused)."""

import numpy as np
import pytest

from families import elementwise
from harness.references import NumpyReference

N = 1000


def allocating(op, a, b):
    if op == "gelu":  # the tanh form, as one expression
        c = np.float32((2 / np.pi) ** 0.5)
        return 0.5 * a * (1 + np.tanh(c * (a + np.float32(0.044715) * a * a * a)))
    return {"add": np.add, "mul": np.multiply, "relu": lambda x, _: np.maximum(x, 0)}[op](a, b)


@pytest.mark.parametrize("op,build", [("add", elementwise.binary("add")),
                                      ("mul", elementwise.binary("multiply")),
                                      ("relu", elementwise.relu_numpy),
                                      ("gelu", elementwise.gelu_numpy)])
def test_out_form_computes_the_allocating_form(op, build):
    r = NumpyReference()
    a, b = r.uniform(N), r.uniform(N)  # the inputs build draws first (relu and gelu: only a)
    call = build(NumpyReference(), {"n": N})
    first = call().copy()
    np.testing.assert_allclose(first, allocating(op, a, b), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(call(), first)
