"""The caching allocator: peak, reserved and system allocations of op sequences; the cap.

The sequences are allocation churn and reuse after free; the cap case allocates until refused.
References: NumPy's peak through tracemalloc on the CPU (NumPy has no cache, so no reserved
bytes); PyTorch's caching-allocator statistics on CUDA."""

import tracemalloc
from dataclasses import dataclass
from typing import Callable

from harness.case import Context, Measurement, params_text

# metric -> unit; lower is better for all of them
METRICS = {"peak_bytes": "B", "reserved_bytes": "B", "system_allocations": "count"}


def numpy_memory(r, sequence) -> dict:
    """NumPy reports its array buffers to tracemalloc; the peak includes a few hundred bytes of
    Python objects, negligible beside the megabytes these sequences allocate."""
    tracemalloc.start()
    sequence()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"peak_bytes": peak}


def torch_memory(r, sequence) -> dict:
    cuda = r.xp.cuda
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    before = cuda.memory_stats()
    sequence()
    r.sync()
    after = cuda.memory_stats()
    grown = {stat: after[stat] - before[stat] for stat in
             ("reserved_bytes.all.current", "segment.all.allocated")}
    return {
        "peak_bytes": after["allocated_bytes.all.peak"] - before["allocated_bytes.all.current"],
        "reserved_bytes": grown["reserved_bytes.all.current"],
        "system_allocations": grown["segment.all.allocated"],  # cudaMalloc calls
    }


def churn(r, p):
    """Allocation churn: each step allocates the same three temporaries and frees them."""
    x = r.uniform(p["n"])
    relu = r.xp.relu if r.name == "torch" else (lambda z: r.xp.maximum(z, 0))

    def step():
        y = x * x
        z = y + x
        return relu(z)

    def sequence():
        for _ in range(p["steps"]):
            step()

    return sequence


def shrinking(r, p):
    """Reuse after free: each step frees its tensor and asks for a slightly smaller one."""
    n, steps = p["n"], p["steps"]
    placement = {"device": r.device} if r.name == "torch" else {}

    def sequence():
        for s in range(steps):
            r.xp.ones(n - n * s // (2 * steps), dtype=r.xp.float32, **placement)

    return sequence


@dataclass
class SequenceCase:
    """An op sequence (memory_cases.cpp), run once on each side for its allocator figures."""
    op: str
    params: dict
    reference: Callable  # (r, params) -> the sequence as a call
    quick: bool = False
    deterministic = True  # allocator figures: the same every run (gate.py measures them once)

    def measure(self, ctx: Context) -> list[Measurement]:
        ours = ctx.ember.run(f"{self.op}:{params_text(self.params, ',')}")
        ref = ctx.references[0] if ctx.references else None  # numpy on the CPU, torch on CUDA
        theirs = {}
        if ref is not None:
            sequence = self.reference(ref, self.params)
            theirs = (torch_memory if ref.name == "torch" else numpy_memory)(ref, sequence)
        return [Measurement(m, unit, "lower", ours[m], reference=ref.name if m in theirs else "",
                            reference_value=theirs.get(m))
                for m, unit in METRICS.items()]


@dataclass
class CapCase:
    """The cap: allocate until refused; the cap itself is the reference, and the closer the
    bytes in use at refusal come to it (never above), the better."""
    op: str
    params: dict
    quick: bool = False
    deterministic = True

    def measure(self, ctx: Context) -> list[Measurement]:
        ours = ctx.ember.run(f"{self.op}:{params_text(self.params, ',')}")
        return [Measurement("bytes_at_refusal", "B", "higher", ours["bytes_at_refusal"],
                            reference="limit", reference_value=ours["limit"])]


def cases(device):
    big = {"cpu": 1 << 24, "cuda": 1 << 26}[device]
    return [
        SequenceCase("churn", {"n": 1 << 20, "steps": 100}, churn, quick=True),
        SequenceCase("churn", {"n": big, "steps": 20}, churn),
        SequenceCase("shrinking", {"n": 1 << 20, "steps": 64}, shrinking, quick=True),
        CapCase("cap", {"limit": 64 << 20, "block": 3_000_000}, quick=True),
    ]
