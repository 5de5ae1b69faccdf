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
# # 1 · Tensors
#
# A tensor is a block of memory (its *storage*) plus the numbers that say how to read it: a
# **shape**, **strides** (how many elements to step in memory for one step along each dim), an
# **offset**, a **dtype** and a **device**. Many operations — transposing, slicing, reshaping a
# contiguous tensor — only change those numbers: they return a *view* that shares the storage.

# %%
import check
import numpy as np

import ember

device = "cuda" if ember.cuda.is_available() else "cpu"
print(ember.versions())
print("device for this tutorial:", device)

# %% [markdown]
# ## Shapes and strides
# A 3 × 4 tensor stored row by row: one step down a column skips 4 elements, one step along a
# row skips 1.

# %%
x = ember.arange(12.0).reshape(3, 4)
print(x)
print("shape", x.shape, "strides", x.stride(), "offset", x.storage_offset(), "dtype", x.dtype)

# %% [markdown]
# The transpose swaps the strides and copies nothing: it reads the same memory in another order,
# so it is no longer *contiguous* (row-major). `contiguous()` makes a copy that is.

# %%
xt = x.T
print("x.T strides", xt.stride(), "contiguous:", xt.is_contiguous())
print("same memory:", xt.data_ptr() == x.data_ptr())
xc = xt.contiguous()
print("contiguous() strides", xc.stride(), "same memory:", xc.data_ptr() == x.data_ptr())

# %% [markdown]
# ## Views share memory
# Writing through a view changes the original. Here a slice (every other column of row 1) and
# the transpose are both views of `x`.

# %%
row = x[1, ::2]  # elements (1, 0) and (1, 2)
print("slice strides", row.stride(), "offset", row.storage_offset())
row[...] = -1.0  # writes into x's storage
xt[3, 0] = 100.0  # x[0, 3]
print(x)

# %% [markdown]
# NumPy arrays and Ember tensors can share memory too: `ember.from_numpy` and `.numpy()` copy
# nothing on the CPU.

# %%
a = np.zeros(4, np.float32)
t = ember.from_numpy(a)
t[1] = 5.0
print("the NumPy array sees the write:", a)

# %% [markdown]
# ## Dtypes and promotion
# Mixing dtypes promotes to a dtype that holds both, as in NumPy and PyTorch: integer with
# float gives float; a Python number does not widen a tensor's floating dtype.

# %%
i = ember.arange(3)  # int64
f16 = ember.ones(3, dtype=ember.float16)
f32 = ember.ones(3)
for name, value in [("int64 + float32", i + f32), ("float16 + float32", f16 + f32),
                    ("float16 * 2.5", f16 * 2.5), ("int64 / 2", i / 2),
                    ("int64 < 1", i < 1)]:
    print(f"{name:18s} -> {value.dtype}")
print("a cast copies:", i.to(ember.float64), i.double().dtype)

# %% [markdown]
# ## Devices
# Every tensor knows its device; ops need their operands on one device, and `.to(device)` moves
# a tensor (a copy). On a machine without a GPU everything below runs on the CPU.

# %%
y = ember.randn(2, 3).to(device)
print(y.device, (y * 2).device)
print("back on the host:", y.cpu().numpy().shape)
try:
    ember.ones(2, device=device) + ember.ones(3, device=device)
except ember.ShapeError as e:  # errors name the op and the operands
    print("ShapeError:", e)

# %% [markdown]
# ## Memory
# Tensors are allocated from a caching allocator that keeps statistics per device.

# %%
before = ember.memory_allocated(device)
big = ember.zeros(1024, 1024, device=device)  # 4 MiB of float32
print("allocated grew by", (ember.memory_allocated(device) - before) / 2**20, "MiB")
del big
print("after del:", (ember.memory_allocated(device) - before) / 2**20, "MiB")
print(ember.memory_stats(device))

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `strides_of(shape)`: the strides, in elements, of a contiguous (row-major)
# tensor of that shape, e.g. `(12, 4, 1)` for `(2, 3, 4)`. The check compares it with
# `ember.empty(shape).stride()` for shapes of 0 to 4 dims.

# %%
def strides_of(shape):
    return tuple(1 for _ in shape)


check.tensors_1(strides_of)

# %% [markdown]
# **2.** Write `last_column(x)`: the last column of a 2-D tensor as a *view*, so that writing
# into it writes into `x`. The check writes through your result.

# %%
def last_column(x):
    return ember.tensor(x.numpy()[:, -1])


check.tensors_2(last_column)
