"""A measured figure (Measurement), what a case measures with (Context), and the timed kernel
case most families are made of (KernelCase), and the base of the cases timed through the
bindings alone (PythonCase)."""

from dataclasses import dataclass, replace
from typing import Callable

from harness.bindings import EmberPython
from harness.ember import Program
from harness.timer import TimerOptions, TimeStats, quantile, time_calls


@dataclass
class Context:
    device: str           # "cpu" or "cuda"
    ember: Program | None  # Ember's side from C++ (None when no selected case needs it)
    timer: TimerOptions   # the reference side's timer, the same options ember_bench gets
    references: list      # harness.references objects for this device
    rounds: int = 1       # timed cases: measure both sides this many times, in turn
    python: EmberPython | None = None  # Ember's side through its bindings (harness.bindings)
    python_missing: str = ""  # why python is None


class Skipped(Exception):
    """A case that cannot run here (the ember package not importable, say): run.py reports the
    reason and goes on; not a failure."""


def python_side(ctx: Context) -> EmberPython:
    if ctx.python is None:
        raise Skipped(ctx.python_missing or "Ember's Python side was not loaded")
    return ctx.python


def torch_reference(ctx: Context):
    """The run's PyTorch reference (a harness.references object), or None where PyTorch is not
    one of its references."""
    return next((ref for ref in ctx.references if ref.name == "torch"), None)


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


def over_rounds(rounds: list[TimeStats]) -> TimeStats:
    """One figure from several rounds of the same measurement: the median of the rounds' medians,
    and as spread the quartiles of those medians, so that the spread says how much a figure moved
    between rounds, not only within one. One round is returned as it is."""
    if len(rounds) == 1:
        return rounds[0]
    medians = sorted(r.median_ms for r in rounds)
    return TimeStats(quantile(medians, 0.5), quantile(medians, 0.25), quantile(medians, 0.75),
                     min(r.min_ms for r in rounds))


def params_text(params: dict, sep: str) -> str:
    return sep.join(f"{k}={v}" for k, v in params.items())


@dataclass
class PythonCase:
    """A case measured wholly in this process, through Ember's bindings (no ember_bench): op is
    the CSV's case column and params its parameters; a subclass writes measure(ctx). One whose
    figures are the same on every run (allocator bytes, say) sets deterministic = True, and
    gate.py then measures it once per side."""
    op: str
    params: dict
    quick: bool = False  # part of the quick CI subset
    in_process = True


@dataclass
class KernelCase:
    """One op (or an op's forward and backward) at one size, timed on both sides.

    op names the entry in benchmarks/cpp/kernel_cases.cpp and is the CSV's case column. numpy and
    torch build the reference's inputs from (r, params) and return the call to time; r is a
    harness.references object. Every reference of the run that the case has gives its own rows
    (no reference at all: rows without one). bytes (read + written per call) adds a bandwidth
    row, flops a throughput row, both derived from the median time.

    ember, when given, builds the same call for Ember through its Python bindings (r is a
    harness.bindings.EmberPython): run.py then also runs the case's on_python() variant, params
    via=python, whose Ember side is timed in this process by the references' timer instead of by
    ember_bench. Its ratio to the same reference, beside the C++ row's, is what the bindings add.

    With ctx.rounds > 1, Ember and the references are measured in turn that many times (Ember,
    references, Ember, ...) and each side reports the median of its rounds, with the spread
    across rounds (over_rounds): a figure and its reference then span the same minutes of the
    machine's life, and a ratio whose sides moved a lot between rounds shows it."""
    op: str
    params: dict
    numpy: Callable | None = None
    torch: Callable | None = None
    bytes: int = 0
    flops: int = 0
    quick: bool = False  # part of the quick CI subset
    ember: Callable | None = None  # Ember's side through its bindings, as the references'

    @property
    def in_process(self) -> bool:
        """Ember called through its bindings, here: no ember_bench needed."""
        return self.params.get("via") == "python"

    def on_python(self) -> "KernelCase":
        """This case with Ember called through its bindings; never in the quick subset (the
        gate's base would run the same installed package as its head)."""
        return replace(self, params={**self.params, "via": "python"}, quick=False)

    def ember_timer(self, ctx: Context) -> Callable[[], TimeStats]:
        """What times one round of Ember's side: ember_bench, or the bindings in this process."""
        if not self.in_process:
            spec = f"{self.op}:{params_text(self.params, ',')}"
            return lambda: ctx.ember.time(spec)
        r = python_side(ctx)
        call = self.ember(r, self.params)
        return lambda: time_calls(call, r.sync, ctx.timer)

    def measure(self, ctx: Context) -> list[Measurement]:
        time_ember = self.ember_timer(ctx)
        refs = [r for r in ctx.references if getattr(self, r.name) is not None]
        calls = [getattr(self, r.name)(r, self.params) for r in refs]  # inputs built once
        ours, theirs = [], [[] for _ in refs]
        for _ in range(ctx.rounds):
            ours.append(time_ember())
            for rounds, call, r in zip(theirs, calls, refs):
                rounds.append(time_calls(call, r.sync, ctx.timer))
        ember = over_rounds(ours)
        timed = [(r.name, over_rounds(t)) for r, t in zip(refs, theirs)]
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
