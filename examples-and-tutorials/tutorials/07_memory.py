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
# # 7 · Memory
#
# Every device has a caching allocator: freed blocks are kept for reuse instead of being given
# back at once, and it counts what it does. This tutorial reads those statistics, measures how
# the peak memory of a training step grows with the batch size, caps the memory to see a clear
# `OutOfMemoryError`, and trains with a large batch that does not fit by *accumulating*
# gradients over small ones.

# %%
import check
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

import ember
from ember import nn

device = "cuda" if ember.cuda.is_available() else "cpu"
ember.manual_seed(0)
MiB = 2**20

# %% [markdown]
# ## The allocator's statistics
# Two numbers matter, and they are not the same:
#
# - **allocated** (`in_use`, `ember.memory_allocated`): the bytes of the blocks that live
#   tensors hold now; `peak` is the most it has been since the last reset.
# - **reserved** (`ember.memory_reserved`): the bytes the allocator has obtained from the
#   system, in *segments* of 2 MiB or more. A segment is cut into blocks for tensors; when a
#   tensor dies its block is not given back but kept, *cached*, for the next tensor.
#
# So reserved = allocated + cached, always at least allocated. The cached part is free for
# Ember's next tensors but not for other programs (`ember.empty_cache()` returns the segments
# that are wholly free). A memory cap (below) bounds *allocated*, what your tensors need; the
# reserve follows it by whole segments.

# %%
ember.reset_peak_memory_stats(device)
start = ember.memory_stats(device)
a = ember.empty(256, 1024, device=device)  # 1 MiB
b = ember.empty(512, 1024, device=device)  # 2 MiB
del a
after = ember.memory_stats(device)
for key in ("in_use", "peak", "reserved"):
    print(f"{key:9s} {(after[key] - start[key]) / MiB:+.2f} MiB")
cached = after["reserved"] - after["in_use"]
print(f"now: allocated {after['in_use'] / MiB:.2f} MiB, reserved {after['reserved'] / MiB:.2f} "
      f"MiB, of which cached (free, kept for reuse) {cached / MiB:.2f} MiB")
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
# ## A picture of the allocator
# `ember.memory_snapshot()` lists every segment with its blocks: size, state (allocated or
# free) and the op that allocated it. Drawn below, each segment is a bar (its length its size)
# cut into its blocks: coloured blocks are allocated, grey ones cached. On the left, in the
# middle of a step (the forward has run: its activations are alive for the backward); on the
# right, after the step, when they have been freed: the segments stay, their blocks cached.

# %%
def draw_snapshot(ax, snapshot, title, colours):
    """Each segment a bar of its blocks: allocated ones coloured by op (colours: op -> colour,
    shared by the panels), free ones grey."""
    for row, segment in enumerate(sorted(snapshot, key=lambda s: -s["size"])):
        for block in segment["blocks"]:
            start = (block["address"] - segment["address"]) / MiB
            if block["state"] == "allocated":
                colour = colours.setdefault(block["op"] or "?", f"C{len(colours) % 10}")
            else:
                colour = "0.85"
            ax.barh(row, block["size"] / MiB, left=start, color=colour, edgecolor="white",
                    linewidth=0.5)
    allocated = sum(b["size"] for s in snapshot for b in s["blocks"]
                    if b["state"] == "allocated")
    reserved = sum(s["size"] for s in snapshot)
    ax.set(title=f"{title}\nallocated {allocated / MiB:.1f} of {reserved / MiB:.1f} MiB "
                 "reserved", xlabel="MiB from the segment's start", ylabel="segment")
    ax.invert_yaxis()


model = small_cnn()
x = ember.randn(128, 1, 28, 28, device=device)
y = ember.randint(0, 10, (128,), device=device)
loss = nn.CrossEntropyLoss()(model(x), y)
during = ember.memory_snapshot(device)
loss.backward()
del loss
model.zero_grad()
after_step = ember.memory_snapshot(device)

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), sharex=True)
colours = {}
draw_snapshot(left, during, "after the forward", colours)
draw_snapshot(right, after_step, "after the step", colours)
handles = [Patch(color=c, label=op) for op, c in colours.items()]
handles.append(Patch(color="0.85", label="cached (free)"))
fig.legend(handles=handles, loc="center right", fontsize=8)
fig.subplots_adjust(right=0.82)
plt.show()
print(ember.memory_summary(device))

# %% [markdown]
# ## A memory cap
# `ember.set_memory_limit` caps the bytes allocated on a device (not the reserve): "fits on a
# 2 GiB card" becomes something any machine can check. Past the cap an allocation raises
# `ember.OutOfMemoryError` (a `MemoryError`) that says what was asked for and what is in use;
# the device stays usable.

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

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `allocated_and_cached(snapshot)`: from a list like `ember.memory_snapshot()`'s,
# the bytes of its allocated blocks and the bytes of its free (cached) blocks, as a pair.

# %%
def allocated_and_cached(snapshot):
    reserved = sum(segment["size"] for segment in snapshot)
    return reserved, 0


check.memory_1(allocated_and_cached)

# %% [markdown]
# **2.** Write `accumulate(model, loss_fn, x, y, micro)`: run `backward()` over micro-batches
# of `micro` examples of the batch `(x, y)` so that each parameter's `.grad` ends up equal to
# the gradient of the whole batch's mean loss (the batch size is a multiple of `micro`).

# %%
def accumulate(model, loss_fn, x, y, micro):
    for xb, yb in zip(x.split(micro), y.split(micro)):
        loss_fn(model(xb), yb).backward()


check.memory_2(accumulate)
