# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4 · Inside the kernels
#
# How fast do ops run, and what limits them? An elementwise `add` does one flop per 12 bytes
# moved (two float32 reads, one write): it can go no faster than memory. A matmul of two
# n × n matrices does $2n^3$ flops on $12n^2$ bytes, so for large n it is limited by
# arithmetic instead. The *roofline* plot shows this: achieved flops per second against
# *arithmetic intensity* (flops per byte). Timings run on the CPU, and on the GPU when present.

# %%
import time

import check
import matplotlib.pyplot as plt
import numpy as np

import ember

devices = ["cpu"] + (["cuda"] if ember.cuda.is_available() else [])
print("devices:", devices)


def timed(fn, device, repeat=5):
    """The best of repeat runs of fn(), in seconds (waiting for the GPU where there is one)."""
    fn()  # warm up: the first call may allocate or pick a kernel
    best = float("inf")
    for _ in range(repeat):
        if device != "cpu":
            ember.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device != "cpu":
            ember.cuda.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best


# %% [markdown]
# ## Elementwise: bytes per second
# NumPy on the same data is the reference. Read the curve from left to right: small tensors are
# dominated by the fixed cost of a call, so the rate climbs with the size; it peaks while the
# three arrays (two read, one written) still fit in the processor's caches; past that every
# element comes from main memory, and the rate *falls* to the memory bandwidth, which is lower
# than the caches'. The largest size here (48 MiB moved per add) is well past the caches.

# %%
sizes = [2**k for k in range(10, 23, 2)]
results = {}
for device in devices:
    rates = []
    for n in sizes:
        a, b = ember.rand(n, device=device), ember.rand(n, device=device)
        rates.append(12 * n / timed(lambda: a + b, device) / 1e9)  # GB/s
    results[device] = rates
a_np, b_np = np.random.rand(2, sizes[-1]).astype(np.float32)
numpy_rates = [12 * n / timed(lambda: a_np[:n] + b_np[:n], "cpu") / 1e9 for n in sizes]
for device, rates in results.items():
    plt.loglog(sizes, rates, marker="o", label=f"ember add ({device})")
plt.loglog(sizes, numpy_rates, marker="s", linestyle="--", label="numpy add (cpu)")
plt.xlabel("elements")
plt.ylabel("GB/s moved")
plt.legend()
plt.grid(alpha=0.3, which="both")
plt.show()
best = int(np.argmax(results["cpu"]))
print(f"cpu peak: {results['cpu'][best]:.1f} GB/s at {sizes[best]} elements "
      f"({12 * sizes[best] / 2**20:.2f} MiB moved: in cache)")
print(f"largest size: ember {results['cpu'][-1]:.1f} GB/s, numpy {numpy_rates[-1]:.1f} GB/s "
      f"({12 * sizes[-1] / 2**20:.0f} MiB moved: from main memory)")

# %% [markdown]
# ## Matmul: flops per second
# n × n times n × n, against NumPy's BLAS on the CPU.

# %%
ns = [32, 64, 128, 256, 512]
flops = {}
for device in devices:
    flops[device] = []
    for n in ns:
        a, b = ember.rand(n, n, device=device), ember.rand(n, n, device=device)
        flops[device].append(2 * n**3 / timed(lambda: a @ b, device) / 1e9)  # GFLOP/s
a_np = np.random.rand(ns[-1], ns[-1]).astype(np.float32)
numpy_flops = [2 * n**3 / timed(lambda: a_np[:n, :n] @ a_np[:n, :n], "cpu") / 1e9 for n in ns]
for n, f, g in zip(ns, flops["cpu"], numpy_flops):
    print(f"n={n:4d}: ember {f:7.1f} GFLOP/s   numpy {g:7.1f} GFLOP/s")

# %% [markdown]
# ## The roofline
# Each measurement at its arithmetic intensity (add: 1/12 flop per byte; n × n matmul:
# $2n^3 / 12n^2 = n/6$). The dashed lines are the two roofs read off these measurements: the
# best bandwidth seen (a slope; the caches' bandwidth, from the peak above) and the best flop
# rate seen (a flat line). Points under the
# slope are memory-bound, points under the flat line compute-bound.

# %%
for i, device in enumerate(devices):
    bandwidth, peak = max(results[device]), max(flops[device])
    intensity = np.logspace(-2, 2.5, 100)
    plt.loglog(intensity, np.minimum(bandwidth * intensity, peak), f"C{i}--", alpha=0.6)
    plt.scatter([1 / 12] * len(sizes), np.array(results[device]) / 12, color=f"C{i}",
                marker="o", label=f"add ({device})")
    plt.scatter(np.array(ns) / 6, flops[device], color=f"C{i}", marker="^",
                label=f"matmul ({device})")
plt.xlabel("arithmetic intensity (flop / byte)")
plt.ylabel("GFLOP/s")
plt.legend()
plt.grid(alpha=0.3, which="both")
plt.show()

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `matmul_intensity(m, k, n, bytes_per_element)`: the arithmetic intensity of
# multiplying an m × k matrix by a k × n one, counting a multiply and an add per term, and the
# bytes of reading both inputs and writing the output once (the `n/6` above, for any shape).

# %%
def matmul_intensity(m, k, n, bytes_per_element=4):
    return m * k * n / (bytes_per_element * (m * k + k * n))


check.kernels_1(matmul_intensity)

# %% [markdown]
# **2.** Write `attainable(intensity, bandwidth, peak)`: the flop rate the roofline allows at
# an arithmetic intensity (a number or a NumPy array), the dashed lines of the last plot.

# %%
def attainable(intensity, bandwidth, peak):
    return bandwidth * np.asarray(intensity)


check.kernels_2(attainable)
