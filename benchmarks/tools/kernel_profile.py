"""Which GPU kernels one step runs, and for how long: a workload run under Nsight Compute.

    ncu --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file K.csv \\
        python3 benchmarks/tools/kernel_profile.py WORKLOAD
    python3 benchmarks/tools/kernel_profile.py --summarise K.csv [--top N]
    python3 benchmarks/tools/kernel_profile.py --cupti WORKLOAD [SIZE] [--top N]

The first form warms WORKLOAD up (three calls: traces, plans, CUDA-graph captures and cuBLAS's
workspaces happen there), then runs it once more between cudaProfilerStart and cudaProfilerStop,
so ncu times exactly one step's kernels (a CUDA graph's kernels are timed node by node); before
that it prints the wall time per call of ten calls and how much of it the host spent issuing them
(under ncu, an indication only). The
second form turns ncu's CSV into one line per kernel name (calls, total microseconds, share)
and the step's total GPU time: where a step's time goes on the card, Ember's and PyTorch's
alike, which is what explains a step slower than its reference. The third form gives the same
summary without Nsight Compute: torch.profiler times one step's kernels as they ran (seconds for
a step of a thousand kernels, which ncu replays one by one).

Workloads (all on cuda:0; PyTorch's run in its own process as Ember's do):
  cnn-ember-eager B | cnn-ember-compiled B | cnn-torch-eager B | cnn-torch-graphed B
      the digits CNN's training step at batch B (benchmarks/families/training.py's model, SGD);
      graphed: captured once with torch.cuda.graph and replayed (the compiled family's reference)
  sdpa-ember T | sdpa-torch T
      causal scaled-dot-product attention forward + backward, bfloat16, batch 8, 4 heads, head
      dim 64, length T (the attention family's sdpa_ladder case)
  gpt2-ember B | gpt2-torch B
      the transformer family's GPT-2 small step (124M parameters, T 1024, bf16 autocast, AdamW)
      at batch B
  chain8-fused N | chain8-copy N
      the fusion family's 8-op chain as one generated kernel on N floats, and PyTorch's copy of
      as many floats (the bandwidth reference)
"""

import argparse
import csv
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def cnn(xp, batch, compiled):
    from types import SimpleNamespace

    from families.compiled import trainer
    step = trainer(SimpleNamespace(xp=xp, device="cuda"), compiled=compiled)[2]
    x = xp.rand(batch, 1, 28, 28, device="cuda")
    labels = xp.randint(0, 10, (batch,), device="cuda")
    return lambda: step(x, labels), (step.explain if compiled else None)


def cnn_graphed(torch, batch):
    from families.compiled import torch_cuda_graph_step
    from harness.references import TorchReference
    return torch_cuda_graph_step(TorchReference(torch, "cuda"), {"batch": batch}), None


def sdpa(xp, length):
    q, k, v, g = (xp.rand(8, 4, length, 64, device="cuda").to(xp.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    f = xp.nn.functional.scaled_dot_product_attention
    return lambda: f(q, k, v, is_causal=True).backward(g), None


def gpt2(xp, batch):
    from types import SimpleNamespace

    from families.transformer import gpt2_small_step
    return gpt2_small_step(SimpleNamespace(xp=xp, device="cuda"),
                           {"autocast": "bf16", "batch": batch}), None


def chain8(xp, n, fused):
    x = xp.rand(n, device="cuda")
    if not fused:
        out = xp.empty_like(x)
        return lambda: out.copy_(x), None
    import importlib

    from families.fusion import CHAIN8
    kernel = importlib.import_module(xp.__name__ + "._core")._fused_elementwise
    return lambda: kernel(CHAIN8, [x]), None


def build(workload, size):
    lib, _, rest = workload.partition("-")
    import torch
    xp = torch
    if "ember" in rest or rest == "fused":
        import ember
        xp = ember
    if workload == "cnn-torch-graphed":
        return cnn_graphed(torch, size), torch, xp
    if lib == "cnn":
        return cnn(xp, size, compiled=rest.endswith("compiled")), torch, xp
    if lib == "sdpa":
        return sdpa(xp, size), torch, xp
    if lib == "gpt2":
        return gpt2(xp, size), torch, xp
    return chain8(xp, size, fused=rest == "fused"), torch, xp


def run(workload, size):
    (call, explain), torch, xp = build(workload, size)
    for _ in range(3):
        call()
    sync = xp.cuda.synchronize
    sync()
    start = time.perf_counter()
    for _ in range(10):
        call()
    issued = time.perf_counter()
    sync()
    done = time.perf_counter()
    # The host's time to issue a call against the wall time: when they are equal the card waited
    # for the host (launch overhead, a synchronisation inside the step), not the other way round.
    print(f"{workload} {size}: {(done - start) / 10 * 1e3:.3f} ms a call (wall), "
          f"{(issued - start) / 10 * 1e3:.3f} ms of it issuing on the host", file=sys.stderr)
    if explain is not None:
        print(explain(), file=sys.stderr)
    torch.cuda.profiler.start()  # cudaProfilerStart: process-wide, Ember's kernels too
    call()
    sync()
    torch.cuda.profiler.stop()


def cupti(workload, size, top):
    """One step's kernels timed by torch.profiler (CUPTI sees every kernel of the process,
    Ember's too) and summed per name, as summarise() does for ncu's CSV. No replay of each
    kernel, so a step of a thousand kernels takes seconds; the times are the kernels' as they ran
    in the step."""
    (call, _), torch, xp = build(workload, size)
    for _ in range(3):
        call()
    xp.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        xp.cuda.synchronize()
    per_kernel = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            entry = per_kernel[e.name[:90]]
            entry[0] += 1
            entry[1] += e.device_time
    total = sum(us for _, us in per_kernel.values())
    print(f"{workload} {size}: {sum(c for c, _ in per_kernel.values())} kernels, "
          f"{total:.1f} us of GPU time")
    for name, (count, us) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {us:9.1f} us {100 * us / max(total, 1e-9):5.1f} %  x{count:<3d} {name}")


# ncu names its time units "nsecond" or, in newer releases, "ns".
_MICROSECONDS_PER_UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
                          "msecond": 1e3, "ms": 1e3}


def summarise(path, top):
    per_kernel = defaultdict(lambda: [0, 0.0])
    with open(path) as f:
        rows = [line for line in f if line.startswith('"')]  # ncu's own lines come first
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = _MICROSECONDS_PER_UNIT[row["Metric Unit"]]
        entry = per_kernel[row["Kernel Name"][:90]]
        entry[0] += 1
        entry[1] += float(row["Metric Value"].replace(",", "")) * scale
    total = sum(us for _, us in per_kernel.values())
    print(f"{os.path.basename(path)}: {sum(c for c, _ in per_kernel.values())} kernels, "
          f"{total:.1f} us of GPU time")
    for name, (count, us) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {us:9.1f} us {100 * us / max(total, 1e-9):5.1f} %  x{count:<3d} {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", help="e.g. cnn-ember-compiled")
    parser.add_argument("size", nargs="?", type=int, default=32,
                        help="batch, length or element count")
    parser.add_argument("--summarise", metavar="NCU_CSV", help="summarise ncu's CSV instead")
    parser.add_argument("--top", type=int, default=12, help="kernels listed by --summarise")
    parser.add_argument("--cupti", action="store_true",
                        help="time WORKLOAD's kernels with torch.profiler instead (no ncu)")
    a = parser.parse_args()
    if a.summarise:
        summarise(a.summarise, a.top)
    elif a.cupti and a.workload:
        cupti(a.workload, a.size, a.top)
    elif a.workload:
        run(a.workload, a.size)
    else:
        parser.error("name a workload or --summarise a CSV")


if __name__ == "__main__":
    main()
