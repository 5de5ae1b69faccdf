"""A measured figure (Measurement), what a case measures with (Context), and the timed kernel
case most families are made of (KernelCase)."""

from dataclasses import dataclass
from typing import Callable

from harness.ember import Program
from harness.timer import TimerOptions, time_calls


@dataclass
class Context:
    device: str           # "cpu" or "cuda"
    ember: Program        # Ember's side
    timer: TimerOptions   # the reference side's timer, the same options ember_bench gets
    references: list      # harness.references objects for this device, preferred first


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


def params_text(params: dict, sep: str) -> str:
    return sep.join(f"{k}={v}" for k, v in params.items())


@dataclass
class KernelCase:
    """One op (or an op's forward and backward) at one size, timed on both sides.

    op names the entry in benchmarks/cpp/kernel_cases.cpp and is the CSV's case column. numpy and
    torch build the reference's inputs from (r, params) and return the call to time; r is a
    harness.references object. Every reference of the run that the case has gives its own rows
    (no reference at all: rows without one). bytes (read + written per call) adds a bandwidth
    row, flops a throughput row, both derived from the median time."""
    op: str
    params: dict
    numpy: Callable | None = None
    torch: Callable | None = None
    bytes: int = 0
    flops: int = 0
    quick: bool = False  # part of the quick CI subset

    def measure(self, ctx: Context) -> list[Measurement]:
        ember = ctx.ember.time(f"{self.op}:{params_text(self.params, ',')}")
        timed = [(r.name, time_calls(getattr(self, r.name)(r, self.params), r.sync, ctx.timer))
                 for r in ctx.references if getattr(self, r.name) is not None]
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
