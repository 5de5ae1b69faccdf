"""Scaled dot-product attention, forward + backward, float32: Ember's fused op beside PyTorch's
F.scaled_dot_product_attention in the same process, and the peak memory of the fused op against
the same computation written with primitive ops.

Every case is batch 8, heads 4, head dim 64, causal (a GPT's attention), at T = 256 and 1024:

  sdpa_fwd_bwd       out = sdpa(q, k, v, is_causal=True), then the gradients of q, k and v for
                     a fixed grad_out (out.backward(grad_out) on both sides). threads=default and
                     threads=1 (both libraries held to the count, families.threads.HeldThreads).
                     References: PyTorch (when installed); at T = 256 also NumPy, which computes
                     the same thing with the formula (the T x T scores and probabilities, batched
                     matmuls, the softmax's backward written out). At T = 1024 NumPy's call
                     takes half a minute on the 2-core machine, so it is left out there.
  sdpa_peak_memory   Ember's peak allocated bytes over one forward + backward (max_memory_allocated
                     after reset_peak_memory_stats), fused (reference value: the same step with
                     primitive ops, matmul + masked_fill + softmax + matmul). The fused op keeps
                     O(T) per head; the primitives keep the [T, T] scores and probabilities.

On CUDA also:

  sdpa_ladder        bfloat16, T = 1024 and 4096, forward + backward as sdpa_fwd_bwd, for each
                     version of Ember's CUDA kernel ladder (EMBER_ATTENTION_VERSION 1..4: see
                     core-runtime/src/cuda/attention_ladder.cu) against PyTorch's
                     F.scaled_dot_product_attention (its flash kernel on bfloat16)

All via=python: attention is not among ember_bench's C++ cases."""

import gc
import math
import os
from dataclasses import dataclass

from families.threads import HeldThreads
from harness.case import Context, KernelCase, Measurement, PythonCase, python_side

B, H, D = 8, 4, 64
LENGTHS = (256, 1024)
LADDER_LENGTHS, LADDER_VERSIONS = (1024, 4096), (1, 2, 3, 4)


def qkv_grad(r, t):
    return [r.uniform(B, H, t, D) for _ in range(4)]


def fused(r, p):
    """F.scaled_dot_product_attention forward + backward, of Ember or PyTorch alike (r.xp), in
    bfloat16 where p["dtype"] says so."""
    q, k, v, g = qkv_grad(r, p["T"])
    if p.get("dtype") == "bf16":
        q, k, v, g = (t.to(r.xp.bfloat16) for t in (q, k, v, g))
    for x in (q, k, v):
        x.requires_grad_()
    F = r.xp.nn.functional

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)

    return step


def ember_primitives(r, p):
    """The same step from matmul, masked_fill, softmax, matmul: the [T, T] scores are held."""
    q, k, v, g = qkv_grad(r, p["T"])
    for x in (q, k, v):
        x.requires_grad_()
    t = p["T"]
    future = r.xp.ones(t, t, dtype=r.xp.bool, device=r.device).triu(1)

    def step():
        s = (q @ k.transpose(-2, -1) * (1 / math.sqrt(D))).masked_fill(future, -math.inf)
        (r.xp.nn.functional.softmax(s, -1) @ v).backward(g)

    return step


def numpy_formula(r, p):
    np, t = r.xp, p["T"]
    q, k, v, g = qkv_grad(r, t)
    future = np.triu(np.ones((t, t), dtype=bool), 1)

    def step():
        s = np.where(future, -np.inf, q @ k.swapaxes(-1, -2) * np.float32(1 / math.sqrt(D)))
        e = np.exp(s - s.max(-1, keepdims=True))
        prob = e / e.sum(-1, keepdims=True)
        out = prob @ v
        dv = prob.swapaxes(-1, -2) @ g
        dp = g @ v.swapaxes(-1, -2)
        ds = prob * (dp - (dp * prob).sum(-1, keepdims=True)) * np.float32(1 / math.sqrt(D))
        return out, ds @ k, ds.swapaxes(-1, -2) @ q, dv

    return step


@dataclass
class HeldThreadsCase(KernelCase):
    """A via=python KernelCase timed with both libraries at params["threads"]."""

    def measure(self, ctx: Context) -> list[Measurement]:
        with HeldThreads(ctx, self.params["threads"]):
            return super().measure(ctx)


@dataclass
class LadderCase(KernelCase):
    """A via=python KernelCase whose Ember side runs version params["version"] of the CUDA
    attention ladder (EMBER_ATTENTION_VERSION, read at every call) while it is measured."""

    def measure(self, ctx: Context) -> list[Measurement]:
        saved = os.environ.get("EMBER_ATTENTION_VERSION")
        os.environ["EMBER_ATTENTION_VERSION"] = str(self.params["version"])
        try:
            return super().measure(ctx)
        finally:
            if saved is None:
                os.environ.pop("EMBER_ATTENTION_VERSION")
            else:
                os.environ["EMBER_ATTENTION_VERSION"] = saved


@dataclass
class PeakMemoryCase(PythonCase):
    """Ember's peak allocated bytes over one step, fused, with the primitives' as reference."""
    deterministic = True  # allocator figures: the same every run

    def measure(self, ctx: Context) -> list[Measurement]:
        gc.collect()  # the previous cases' tensors, freed now rather than during this one
        r = python_side(ctx)
        peaks = []
        for build in (fused, ember_primitives):
            step = build(r, self.params)
            step()  # the first call's allocations (gradients) are the same on both sides
            r.sync()
            r.xp.reset_peak_memory_stats(r.device)
            before = r.xp.memory_allocated(r.device)
            step()
            r.sync()
            peaks.append(r.xp.max_memory_allocated(r.device) - before)
        return [Measurement("peak_bytes", "B", "lower", float(peaks[0]), 0.0, "ember_primitives",
                            float(peaks[1]), 0.0)]


def cases(device):
    out = []
    for t in LENGTHS:
        for threads in ("default", "1"):
            params = {"B": B, "H": H, "T": t, "D": D, "causal": 1, "threads": threads}
            numpy = numpy_formula if t <= 256 else None
            case = HeldThreadsCase("sdpa_fwd_bwd", params, numpy=numpy, torch=fused,
                                   ember=fused).on_python()
            out.append(case)
        out.append(PeakMemoryCase("sdpa_peak_memory",
                                  {"B": B, "H": H, "T": t, "D": D, "causal": 1, "via": "python"}))
    if device == "cuda":
        out += [LadderCase("sdpa_ladder", {"B": B, "H": H, "T": t, "D": D, "causal": 1,
                                           "dtype": "bf16", "version": v},
                           torch=fused, ember=fused).on_python()
                for t in LADDER_LENGTHS for v in LADDER_VERSIONS]
    return out
