"""ember.cuda and the memory statistics of every device (the CPU's always, a GPU's when there)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ember

cuda = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU on this machine")


def test_cpu_memory_statistics_follow_allocations():
    ember.reset_peak_memory_stats("cpu")
    before = ember.memory_allocated("cpu")
    t = ember.zeros(1 << 18)
    assert ember.memory_allocated("cpu") >= before + t.nbytes
    assert ember.max_memory_allocated("cpu") >= before + t.nbytes
    stats = ember.memory_stats("cpu")
    assert set(stats) >= {"in_use", "peak", "reserved", "allocations", "limit"}
    del t
    assert ember.memory_allocated("cpu") == before
    ember.empty_cache("cpu")


def test_ember_log_alloc_logs_every_allocation_and_free():
    program = "import ember\nx = ember.ones(1000)\ny = x * 2\ndel x, y\n"

    def stderr_of(**env):
        base = {k: v for k, v in os.environ.items() if k != "EMBER_LOG_ALLOC"}
        run = subprocess.run([sys.executable, "-c", program], env={**base, **env},
                             capture_output=True, text=True, check=True)
        return run.stderr

    log = stderr_of(EMBER_LOG_ALLOC="1")
    address = r"0x[0-9a-f]+"
    made = re.search(rf"\[ember alloc\] alloc 4000 B \(block 4096 B, [a-z ]+\) on cpu at "
                     rf"({address}) by ones\n", log)
    assert made, log
    assert re.search(rf"alloc 4000 B \(block 4096 B, [a-z ]+\) on cpu at {address} by mul\n", log)
    assert (f"[ember alloc] free 4000 B (block 4096 B) on cpu at {made.group(1)}, allocated by "
            "ones\n") in log
    assert re.search(r"free 4000 B \(block 4096 B\) on cpu at 0x[0-9a-f]+, allocated by mul\n",
                     log)
    assert "[ember alloc]" not in stderr_of()
    assert "[ember alloc]" not in stderr_of(EMBER_LOG_ALLOC="0")


@pytest.mark.skipif(ember.cuda_is_available(), reason="a CUDA GPU is present")
def test_pin_memory_without_a_gpu_is_a_typed_error():
    x = ember.ones(2, 3)
    assert not x.is_pinned()
    error = ember.DeviceError if ember.cuda_compiled() else ember.NotSupportedError
    with pytest.raises(error, match=r"pin_memory.*\[2, 3\] float32 cpu"):
        x.pin_memory()
    with pytest.raises(ember.EmberError, match="cuda"):
        x.cuda(non_blocking=True)
    assert x.to("cpu", non_blocking=True).data_ptr() == x.data_ptr()  # no copy: itself


def test_pin_memory_of_a_tensor_that_requires_grad_says_to_detach():
    with pytest.raises(ember.ValueError, match=r"pin_memory.*detach"):
        ember.ones(2, requires_grad=True).pin_memory()


@cuda
def test_pinned_tensors_copy_to_the_gpu_without_waiting():
    x = ember.arange(12, dtype=ember.float32).reshape(3, 4).T  # not contiguous
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device == "cpu"
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    assert p.pin_memory().data_ptr() == p.data_ptr()  # pinned already: itself
    g = p.to("cuda", non_blocking=True)
    h = p.cuda(non_blocking=True)
    ember.cuda.synchronize()
    np.testing.assert_array_equal(g.cpu().numpy(), x.numpy())
    np.testing.assert_array_equal(h.cpu().numpy(), x.numpy())


def test_cuda_queries():
    assert isinstance(ember.cuda.device_count(), int)
    assert ember.cuda.is_available() == (ember.cuda.device_count() > 0)


def test_versions():
    assert set(ember.versions()) == {"bindings", "autodiff", "core"}
    assert ember.__version__ == ember.versions()["bindings"]


@cuda
def test_cuda_tensors_and_memory():
    x = ember.arange(6, dtype=ember.float32).reshape(2, 3).cuda()
    assert x.device == "cuda:0" and x.is_cuda
    ember.cuda.reset_peak_memory_stats()
    y = (x * 2).sum(1)
    ember.cuda.synchronize()
    assert y.cpu().tolist() == [6.0, 24.0]
    assert ember.cuda.memory_allocated() > 0 and ember.cuda.max_memory_allocated() > 0
    assert "in_use" in ember.cuda.memory_stats()
    w = ember.ones(3, device="cuda", requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.cpu().tolist() == [2.0, 2.0, 2.0]
    m = x[x > 2]
    assert m.cpu().tolist() == [3.0, 4.0, 5.0]
    assert ember.from_dlpack(x).device == "cuda:0"


@cuda
def test_cuda_memory_limit():
    ember.cuda.set_memory_limit("1MiB")
    try:
        with pytest.raises(ember.OutOfMemoryError):
            ember.zeros(1 << 20, device="cuda")
    finally:
        ember.cuda.set_memory_limit(None)


def test_memory_snapshot_and_summary_show_segments_blocks_and_ops():
    t = ember.ones(1 << 16)  # 256 KiB by `ones`, in a 2 MiB segment of the small pool
    segments = ember.memory_snapshot()
    blocks = [b for s in segments for b in s["blocks"]]
    mine = [b for b in blocks if b["address"] == t.data_ptr()]
    assert mine == [{"address": t.data_ptr(), "size": t.nbytes, "requested": t.nbytes,
                     "state": "allocated", "op": "ones"}]
    for s in segments:
        assert s["device"] == "cpu" and s["pool"] in ("small", "large")
        assert s["size"] == sum(b["size"] for b in s["blocks"])
    stats = ember.memory_stats()
    assert stats["reserved"] == sum(s["size"] for s in segments)
    assert stats["in_use"] == sum(b["size"] for b in blocks if b["state"] == "allocated")
    assert stats["largest_free_block"] == max(
        (b["size"] for b in blocks if b["state"] == "free"), default=0)
    summary = ember.memory_summary()
    assert "allocated" in summary and "reserved" in summary and "ones" in summary


@pytest.mark.parametrize("threads", [2, 16])
def test_digits_cnn_step_peaks_at_its_saved_values_and_largest_transient(threads):
    """The digits CNN (examples' models.small_cnn) at batch 64: what its backward holds at its
    peak, counted by hand. The forward saves only what gradient rules read: conv1's output
    (batch-norm reads it) and ReLU1's (its own rule reads it), A bytes each; the first max-pool's
    output (conv2 reads it, B) and its window offsets, one byte per output (B / 4); conv2's and
    ReLU2's outputs (C each); the logits (cross-entropy reads them). Batch-norm's outputs and the
    second max-pool's are dropped as the forward moves on. Two points of the backward hold the
    most: ReLU2's backward, where the gradient arriving from the second max-pool and the one ReLU2
    makes (C each) join all of these, and ReLU1's backward, where only conv1's and ReLU1's outputs
    are still saved and two gradients of A join them. With int64 indices (2 B) the first was the
    larger; with one-byte offsets the second is. Beside them only parameters' gradients and
    batch-norm's saved statistics (each a block rounded to 512 B) may be alive. Convolutions keep
    im2col scratch per worker thread, within the larger of their input and output however many
    threads run, so no convolution makes the peak: the count holds at 2 threads and at 16 (where
    sixteen threads' scratch once made a peak 2.1 MB, 19 %, above it)."""
    from ember import nn
    saved_threads = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        _check_digits_cnn_peak(nn)
    finally:
        ember.set_num_threads(saved_threads)


def _check_digits_cnn_peak(nn):
    n = 64
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 10))
    optimizer = ember.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    x, labels = ember.rand(n, 1, 28, 28), ember.randint(0, 10, (n,))

    def forward_backward():
        nn.CrossEntropyLoss()(model(x), labels).backward()

    for _ in range(2):  # the momentum exists and the backward graph is built
        optimizer.zero_grad()
        forward_backward()
        optimizer.step()
    optimizer.zero_grad()
    start = ember.memory_allocated()
    ember.reset_peak_memory_stats()
    forward_backward()
    peak = ember.max_memory_allocated() - start
    a, b, c = (n * 16 * 26 * 26 * 4, n * 16 * 13 * 13 * 4, n * 32 * 11 * 11 * 4)  # float32 maps
    logits = n * 10 * 4
    at_relu2 = 2 * a + b + b // 4 + 2 * c + logits + 2 * c  # saved values, then the gradients
    at_relu1 = 2 * a + 2 * a
    assert at_relu1 > at_relu2  # with int64 indices (2 * b) ReLU2's would be 11 581 952
    gradients = sum(-(-p.numel() * 4 // 512) * 512 for p in model.parameters())
    statistics = 4 * 512  # each batch-norm's mean and inverse deviation, [16] and [32]
    assert at_relu1 <= peak <= at_relu1 + gradients + statistics
