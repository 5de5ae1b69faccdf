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
# # 6 · Memory
#
# Every device has a caching allocator: freed blocks are kept for reuse instead of being given
# back at once, and it counts what it does. This tutorial reads those statistics, measures how
# the peak memory of a training step grows with the batch size, caps the memory to see a clear
# `OutOfMemoryError`, and trains with a large batch that does not fit by *accumulating*
# gradients over small ones.

# %%
import matplotlib.pyplot as plt
import numpy as np

import ember
from ember import nn

device = "cuda" if ember.cuda.is_available() else "cpu"
ember.manual_seed(0)
MiB = 2**20

# %% [markdown]
# ## The allocator's statistics
# `in_use`: bytes held by live tensors; `peak`: the most `in_use` has been since the last reset;
# `reserved`: bytes the allocator holds from the system, in use or cached.

# %%
ember.reset_peak_memory_stats(device)
start = ember.memory_stats(device)
a = ember.empty(256, 1024, device=device)  # 1 MiB
b = ember.empty(512, 1024, device=device)  # 2 MiB
del a
after = ember.memory_stats(device)
for key in ("in_use", "peak", "reserved"):
    print(f"{key:9s} {(after[key] - start[key]) / MiB:+.2f} MiB")
del b

# %% [markdown]
# ## Peak memory against batch size
# A training step keeps every activation that the backward pass needs until the backward pass
# has used it, so its peak grows linearly with the batch size; the parameters are a constant.

# %%
def small_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 10),
    ).to(device)


def step_peak(model, batch):
    """Peak bytes above the current use during one forward + backward of a batch."""
    x = ember.randn(batch, 1, 28, 28, device=device)  # [N, 1, 28, 28]
    y = ember.randint(0, 10, (batch,), device=device)
    base = ember.memory_allocated(device)
    ember.reset_peak_memory_stats(device)
    nn.CrossEntropyLoss()(model(x), y).backward()
    model.zero_grad()
    return ember.max_memory_allocated(device) - base


model = small_cnn()
sizes = [16, 32, 64, 128, 256]
peaks = [step_peak(model, n) / MiB for n in sizes]
for n, p in zip(sizes, peaks):
    print(f"batch {n:4d}: peak {p:6.1f} MiB")
slope = np.polyfit(sizes, peaks, 1)[0]
plt.plot(sizes, peaks, marker="o")
plt.xlabel("batch size")
plt.ylabel("peak memory of a step (MiB)")
plt.title(f"about {slope * 1024:.0f} KiB per image")
plt.grid(alpha=0.3)
plt.show()

# %% [markdown]
# ## A memory cap
# `ember.set_memory_limit` caps the bytes in use on a device: "fits on a 2 GiB card" becomes
# something any machine can check. Past the cap an allocation raises `ember.OutOfMemoryError`
# (a `MemoryError`) that says what was asked for and what is in use; the device stays usable.

# %%
limit = ember.memory_allocated(device) + int(peaks[1] * MiB * 1.5)  # room for batch 32
ember.set_memory_limit(limit, device)
try:
    print("batch 32 fits:", step_peak(model, 32) / MiB, "MiB")
    step_peak(model, 256)
except ember.OutOfMemoryError as e:
    print("OutOfMemoryError:", e)
finally:
    ember.set_memory_limit(None, device)

# %% [markdown]
# ## Gradient accumulation
# A batch of 256 under that cap: run 8 micro-batches of 32, each loss divided by 8, and call
# `backward()` on each — `.grad` *accumulates*, so after the 8th it holds the gradient of the
# mean loss over all 256 images — then take one optimizer step. (BatchNorm's statistics are per
# micro-batch, so with batch norm the two are close, not equal; this check uses a model without.)

# %%
mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
x = ember.randn(256, 1, 28, 28, device=device)
y = ember.randint(0, 10, (256,), device=device)
loss_fn = nn.CrossEntropyLoss()

loss_fn(mlp(x), y).backward()  # the whole batch at once
whole = [p.grad.cpu().numpy() for p in mlp.parameters()]
mlp.zero_grad()

ember.set_memory_limit(limit, device)
try:
    for xb, yb in zip(x.split(32), y.split(32)):  # 8 micro-batches of 32
        (loss_fn(mlp(xb), yb) / 8).backward()
finally:
    ember.set_memory_limit(None, device)
accumulated = [p.grad.cpu().numpy() for p in mlp.parameters()]
print("largest difference:", max(np.abs(g - h).max() for g, h in zip(whole, accumulated)))
