"""The training family on small sizes, through the real ember package (skipped without it) and
without PyTorch: rows without a reference. The profiler-based CPU peak of PyTorch is checked
where torch is installed."""

import pytest

from families import training
from harness.bindings import EmberPython
from harness.case import Context, KernelCase
from harness.timer import TimerOptions

ember = pytest.importorskip("ember")


@pytest.fixture
def ctx():
    return Context("cpu", None, TimerOptions(1, 3, 0.0), [], python=EmberPython(ember, "cpu"))


def test_the_eager_step_is_timed_through_the_bindings(ctx):
    case = KernelCase("cnn_eager_step", {"batch": 4}, torch=training.eager_step,
                      ember=training.eager_step).on_python()
    (row,) = case.measure(ctx)
    assert (row.metric, row.reference) == ("time", "")
    assert row.value > 0


def test_an_epoch_reports_its_time_and_images_per_second(ctx):
    # 20 images in batches of 8: two full batches and a partial one of 4
    case = training.EpochCase("cnn_epoch", {"images": 20, "batch": 8}, torch=training.epoch,
                              ember=training.epoch).on_python()
    time, rate = case.measure(ctx)
    assert (time.metric, rate.metric, rate.unit) == ("time", "throughput", "images/s")
    assert rate.value == pytest.approx(20 / time.value * 1e3)


def test_the_peak_grows_with_the_batch(ctx):
    peaks = [training.PeakMemoryCase("cnn_peak_memory", {"batch": b}).measure(ctx)[0].value
             for b in (2, 16)]
    assert 0 < peaks[0] < peaks[1]


def test_the_gpt_block_peak_grows_with_the_batch(ctx):
    peaks = [training.PeakMemoryCase("gpt_block_peak_memory", {"batch": b}).measure(ctx)[0].value
             for b in (2, 8)]
    assert 0 < peaks[0] < peaks[1]


def test_every_layer_op_runs_through_the_bindings(ctx):
    cases = training.layer_cases(2)
    assert {c.op for c in cases} == {"conv2d_forward", "conv2d_backward", "batch_norm_forward",
                                     "batch_norm_backward", "relu_forward", "relu_backward"}
    for case in cases:
        assert case.params["via"] == "python"
        assert case.measure(ctx)[0].value > 0


def test_the_cpu_profiler_sees_what_torch_allocates_at_most():
    torch = pytest.importorskip("torch")

    def allocate():
        a = torch.empty(1 << 20)  # 4 MiB
        b = torch.empty(1 << 18)  # 1 MiB: the peak, both alive
        del a
        c = torch.empty(1 << 19)  # 2 MiB, after a's 4 MiB went back
        return b, c

    assert training.cpu_profiled_peak(torch, allocate) == 5 << 20
