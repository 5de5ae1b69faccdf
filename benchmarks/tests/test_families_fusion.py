"""The fusion family: its cases, the fused calls computing what the eager ones compute, and its
cases measured through the real ember package (skipped without it), without PyTorch."""

import os

import numpy as np
import pytest

from families import fusion
from harness.bindings import EmberPython
from harness.case import Context
from harness.timer import TimerOptions


def test_the_cases_are_the_cpu_chain_layer_norm_and_compile():
    names = {(c.op, c.params.get("impl"), c.params["via"]) for c in fusion.cases("cpu")}
    assert names == {("chain8", "fused", "python"), ("chain8", "eager", "python"),
                     ("ln_gelu_residual", "fused", "python"),
                     ("ln_gelu_residual", "eager", "python"), ("exp_mul_sum", "fused", "python"),
                     ("exp_mul_sum", "eager", "python"), ("compile", None, "python"),
                     ("ln_gelu_residual", "compiled", "python"),
                     ("gpt_block_step", "compiled", "python"), ("step_compile", None, "python")}
    # CUDA runs the same cases (NVRTC's kernels).
    assert {(c.op, c.params.get("impl")) for c in fusion.cases("cuda")} == \
        {(op, impl) for op, impl, _ in names}


def test_the_fused_calls_compute_the_eager_results():
    ember = pytest.importorskip("ember")
    x = ember.rand(1000) * 4 - 2
    np.testing.assert_allclose(fusion.chain8_fused(ember, x)().numpy(),
                               fusion.chain8_eager(ember, x).numpy(), rtol=1e-6, atol=1e-6)
    x = ember.randn(4, fusion.COLS)
    w, b = ember.rand(fusion.COLS) + 0.5, ember.rand(fusion.COLS) - 0.5
    np.testing.assert_allclose(fusion.ln_gelu_fused(ember, x, w, b)().numpy(),
                               fusion.ln_gelu_eager(ember, x, w, b).numpy(), rtol=1e-4,
                               atol=1e-4)


def test_the_fused_reduction_equals_eager_bit_for_bit():
    ember = pytest.importorskip("ember")
    x, c, w = ember.randn(4, 3000), ember.randn(4, 1), ember.rand(3000)
    fused = fusion.exp_mul_sum_fused(ember, x, c, w)().numpy()
    eager = fusion.exp_mul_sum_eager(x, c, w).numpy()
    assert fused.shape == (4,)
    np.testing.assert_array_equal(fused, eager)  # the library's summation order


def test_the_compile_case_reports_cold_and_warm(monkeypatch, tmp_path):
    ember = pytest.importorskip("ember")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    ctx = Context("cpu", None, TimerOptions(1, 3, 0.0), [], python=EmberPython(ember, "cpu"))
    rows = fusion.CompileCase("compile", {"kernel": "chain8", "via": "python"}).measure(ctx)
    assert [r.metric for r in rows] == ["compile_cold", "compile_warm"]
    assert all(r.value > 0 for r in rows)
    assert os.environ["EMBER_CACHE_DIR"] == str(tmp_path)  # given back


def test_the_step_compile_case_builds_the_gpt_blocks_groups(monkeypatch, tmp_path):
    ember = pytest.importorskip("ember")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    for name, value in (("GPT_VOCAB", 11), ("GPT_WIDTH", 8), ("GPT_CONTEXT", 4),
                        ("GPT_BATCH", 2)):
        monkeypatch.setattr(fusion, name, value)
    ctx = Context("cpu", None, TimerOptions(1, 3, 0.0), [], python=EmberPython(ember, "cpu"))
    rows = fusion.StepCompileCase("step_compile", {"model": "gpt", "via": "python"}).measure(ctx)
    assert [r.metric for r in rows] == ["compile_cold", "compile_warm", "fused_groups"]
    assert rows[2].value >= 2  # the masked scores forward and backward, the qkv gradient's sum
    assert all(r.value > 0 for r in rows)
