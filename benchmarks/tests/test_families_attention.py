"""The attention family: its cases, the NumPy reference against the formula's gradients, and its
cases measured through the real ember package (skipped without it), small, without PyTorch."""

import numpy as np
import pytest

from families import attention
from harness.bindings import EmberPython
from harness.case import Context
from harness.references import NumpyReference
from harness.timer import TimerOptions


def test_cases_at_both_lengths_and_thread_counts():
    names = {(c.op, c.params["T"], c.params.get("threads"), c.params["via"])
             for c in attention.cases("cpu")}
    assert names == {("sdpa_fwd_bwd", t, th, "python") for t in (256, 1024)
                     for th in ("default", "1")} | {("sdpa_peak_memory", t, None, "python")
                                                    for t in (256, 1024)}


def test_the_numpy_reference_computes_the_gradients(monkeypatch):
    monkeypatch.setattr(attention, "B", 1)
    monkeypatch.setattr(attention, "H", 1)
    monkeypatch.setattr(attention, "D", 2)
    ember = pytest.importorskip("ember")
    r = NumpyReference()
    out, dq, dk, dv = attention.numpy_formula(r, {"T": 3})()
    # The same inputs through ember's fused op and autograd, in float64.
    r = NumpyReference()
    q, k, v, g = (ember.tensor(a.astype(np.float64), requires_grad=True)
                  for a in attention.qkv_grad(r, 3))
    fused = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    fused.backward(g.detach())
    np.testing.assert_allclose(out, fused.detach().numpy(), atol=1e-5)
    for got, t in ((dq, q), (dk, k), (dv, v)):
        np.testing.assert_allclose(got, t.grad.numpy(), atol=1e-5)


def test_cases_measure_through_ember(monkeypatch):
    ember = pytest.importorskip("ember")
    monkeypatch.setattr(attention, "B", 1)
    monkeypatch.setattr(attention, "H", 2)
    ctx = Context("cpu", None, TimerOptions(1, 3, 0.0), [NumpyReference()],
                  python=EmberPython(ember, "cpu"))
    params = {"B": 1, "H": 2, "T": 64, "D": 64, "causal": 1, "threads": "1"}
    case = attention.HeldThreadsCase("sdpa_fwd_bwd", params, numpy=attention.numpy_formula,
                                     ember=attention.fused).on_python()
    (row,) = case.measure(ctx)
    assert row.metric == "time" and row.value > 0 and row.reference == "numpy"
    (mem,) = attention.PeakMemoryCase("sdpa_peak_memory", {"T": 256}).measure(ctx)
    # The primitives hold [B, H, T, T] scores; the fused op does not.
    assert mem.value < mem.reference_value
