"""A measured figure (Measurement), what a case measures with (Context), and the timed kernel
case most families are made of (KernelCase)."""

from dataclasses import dataclass
from typing import Callable

from harness.ember import Program
from harness.timer import TimerOptions, TimeStats, time_calls


@dataclass
class Context:
    device: str           # "cpu" or "cuda"
    ember: Program        # Ember's side
    timer: TimerOptions   # the reference side's timer, the same options ember_bench gets
    references: list      # harness.references objects for this device
    rounds: int = 1       # timed cases: measure both sides this many times, keep each's fastest


@dataclass
class Measurement:
    """One metric of one case: a row of the CSV without the run's shared columns."""
    metric: str
    unit: str
    better: str  # "lower" or "higher"
    value: float
    spread: float = 0.0
    reference: str = ""
    reference_value: float | None = None
    reference_spread: float | None = None

    @property
    def ratio(self) -> float | None:
        if not self.reference_value:
            return None
        return self.value / self.reference_value


def fastest(a: TimeStats | None, b: TimeStats) -> TimeStats:
    return b if a is None or b.median_ms < a.median_ms else a


def params_text(params: dict, sep: str) -> str:
    return sep.join(f"{k}={v}" for k, v in params.items())


@dataclass
class KernelCase:
    """One op (or an op's forward and backward) at one size, timed on both sides.

    op names the entry in benchmarks/cpp/kernel_cases.cpp and is the CSV's case column. numpy and
    torch build the reference's inputs from (r, params) and return the call to time; r is a
    harness.references object. Every reference of the run that the case has gives its own rows
    (no reference at all: rows without one). bytes (read + written per call) adds a bandwidth
    row, flops a throughput row, both derived from the median time.

    With ctx.rounds > 1, Ember and the references are measured in turn that many times and each
    side keeps its fastest median: a slow kernel is slow every round, a round disturbed by the
    rest of the machine is not kept."""
    op: str
    params: dict
    numpy: Callable | None = None
    torch: Callable | None = None
    bytes: int = 0
    flops: int = 0
    quick: bool = False  # part of the quick CI subset

    def measure(self, ctx: Context) -> list[Measurement]:
        refs = [r for r in ctx.references if getattr(self, r.name) is not None]
        calls = [getattr(self, r.name)(r, self.params) for r in refs]  # inputs built once
        ember, theirs = None, [None] * len(refs)
        for _ in range(ctx.rounds):
            ember = fastest(ember, ctx.ember.time(f"{self.op}:{params_text(self.params, ',')}"))
            theirs = [fastest(t, time_calls(call, r.sync, ctx.timer))
                      for t, call, r in zip(theirs, calls, refs)]
        timed = [(r.name, t) for r, t in zip(refs, theirs)]
        metrics = [("time", "ms", "lower", lambda ms: ms)]
        if self.bytes:
            metrics.append(("bandwidth", "GB/s", "higher", lambda ms: self.bytes / ms / 1e6))
        if self.flops:
            metrics.append(("throughput", "GFLOP/s", "higher", lambda ms: self.flops / ms / 1e6))
        return [Measurement(metric, unit, better, per_ms(ember.median_ms), ember.spread, name,
                            per_ms(theirs.median_ms) if theirs else None,
                            theirs.spread if theirs else None)
                for name, theirs in timed or [("", None)]
                for metric, unit, better, per_ms in metrics]
