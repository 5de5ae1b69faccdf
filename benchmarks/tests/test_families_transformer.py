"""The transformer family on a small GPT, through the real ember package (skipped without it):
the step is timed, the peak memory is measured, and, where torch is installed, Ember's losses
under bfloat16 autocast stay within bfloat16's tolerance of PyTorch's over 10 steps from the
same weights and batches (the CSV records the full-size figures)."""

import pytest

from families import transformer
from harness.bindings import EmberPython
from harness.case import Context, KernelCase
from harness.timer import TimerOptions

ember = pytest.importorskip("ember")

SMALL = dict(layers=1, channels=32, heads=2, block=16, vocab=transformer.VOCAB)


@pytest.fixture
def small(monkeypatch):
    """The family's model shrunk (1 block, d 32, T 16) so that the tests take seconds."""
    monkeypatch.setattr(transformer, "BLOCK", 16)
    monkeypatch.setattr(transformer, "BATCH", 4)
    full = transformer.gpt
    monkeypatch.setattr(transformer, "gpt", lambda xp: full(xp, **SMALL))


@pytest.fixture
def ctx():
    return Context("cpu", None, TimerOptions(1, 3, 0.0), [], python=EmberPython(ember, "cpu"))


@pytest.mark.parametrize("autocast", ["none", "bf16"])
def test_the_step_is_timed_through_the_bindings(small, ctx, autocast):
    case = KernelCase("gpt_step", {"autocast": autocast}, torch=transformer.gpt_step,
                      ember=transformer.gpt_step).on_python()
    (row,) = case.measure(ctx)
    assert row.metric == "time" and row.value > 0


def test_the_peak_memory_is_measured(small, ctx):
    (row,) = transformer.PeakMemoryCase("gpt_peak_memory", {"autocast": "none"}).measure(ctx)
    assert row.metric == "peak_bytes" and row.value > 0


def test_the_cases_cover_both_precisions_and_ten_loss_steps():
    cases = transformer.cases("cpu")
    assert {(c.op, c.params["autocast"]) for c in cases if c.op != "gpt_autocast_loss"} == {
        ("gpt_step", "none"), ("gpt_step", "bf16"), ("gpt_peak_memory", "none"),
        ("gpt_peak_memory", "bf16")}
    assert [c.params["step"] for c in cases if c.op == "gpt_autocast_loss"] == list(range(1, 11))


def test_autocast_losses_follow_pytorch_within_bfloat16_tolerance(small):
    torch = pytest.importorskip("torch")
    from harness.references import TorchReference

    theirs_side = TorchReference(torch, "cpu")
    ours, theirs = transformer.paired_losses(EmberPython(ember, "cpu"), theirs_side, 10, "bf16")
    # float32 from the same weights agrees to float32 rounding; bfloat16 keeps 8 bits (a
    # relative step of 2^-8 = 0.4 %), and ten steps of AdamW compound the rounding differences
    f32_ours, f32_theirs = transformer.paired_losses(EmberPython(ember, "cpu"), theirs_side, 10,
                                                     "none")
    assert f32_ours == pytest.approx(f32_theirs, rel=1e-4)
    assert ours == pytest.approx(theirs, rel=2e-2)
    assert ours[-1] < ours[0]
