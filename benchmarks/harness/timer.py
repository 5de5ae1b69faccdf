"""The reference side's timer: the same algorithm as benchmarks/cpp/timer.h, so both figures of a
ratio are measured alike.

Warm-up calls come first; during them `inner` grows until one sample (inner back-to-back calls)
lasts at least min_sample_ms. Then `repeat` samples are timed and reported per call as the median,
with the quartiles as spread. sync() runs before the clock starts and before it stops
(torch.cuda.synchronize on CUDA), so queued GPU work is counted.
"""

import time
from dataclasses import dataclass


@dataclass
class TimerOptions:
    warmup: int = 3
    repeat: int = 20
    min_sample_ms: float = 1.0


@dataclass
class TimeStats:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median: 0.05 means the middle half of the samples
        lie within 5 % of the median's size."""
        return (self.q3_ms - self.q1_ms) / self.median_ms if self.median_ms else 0.0


def quantile(sorted_values: list[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values, interpolated linearly as numpy.quantile does."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])


def relative_iqr(values: list[float]) -> float:
    """The interquartile range of values divided by their median, as TimeStats.spread."""
    v = sorted(values)
    median = quantile(v, 0.5)
    return (quantile(v, 0.75) - quantile(v, 0.25)) / median if median else 0.0


def time_calls(fn, sync, opt: TimerOptions) -> TimeStats:
    def sample_ms(inner: int) -> float:
        sync()
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        return (time.perf_counter() - start) * 1e3

    inner = 1
    for _ in range(opt.warmup):
        ms = sample_ms(inner)
        if ms < opt.min_sample_ms:  # aim for twice the minimum, leaving room for noise
            inner = max(inner + 1, int(inner * 2 * opt.min_sample_ms / max(ms, 1e-6)))
    per_call = sorted(sample_ms(inner) / inner for _ in range(opt.repeat))
    return TimeStats(quantile(per_call, 0.5), quantile(per_call, 0.25), quantile(per_call, 0.75),
                     per_call[0])
